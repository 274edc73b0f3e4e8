//! Mesh files: PLY (binary little endian), Wavefront OBJ and glTF 2.0 binary (.glb), written through a temporary
//! file renamed into place (never half a file) and read back for `aerie info`.
//!
//! Coordinates are metres. PLY and OBJ are written in the mesh's frame, Z up, as every robotics tool and
//! Gazebo read them; glTF is Y up by its specification, so the .glb holds `(x, z, -y)` (a rotation: the
//! triangles keep their winding) and glTF viewers and Isaac Sim's importer show it upright. A mesh far from 0
//! (a coordinate beyond [`LOCAL_LIMIT`]) is written around its origin, which the file keeps: a PLY comment
//! `aerie_origin X Y Z`, an OBJ comment `# aerie_origin X Y Z`, the glTF node's translation (f64 in its JSON).
//! Written by hand, each a few dozen lines, as the formats are simple and the crates for them either read only
//! (ply-rs reads any PLY but writes through a generic property map) or bring a larger dependency tree.

mod glb;
mod obj;
mod ply;

use std::path::Path;

use super::Mesh;
use crate::{Error, Result};

/// Beyond this many metres from 0 a coordinate loses millimetres in f32: the mesh is written around its origin.
pub const LOCAL_LIMIT: f64 = 10_000.0;

/// A mesh file format.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum MeshFormat {
    /// Stanford PLY: binary little endian, float x y z and nx ny nz, faces as `uchar`-counted `int` lists.
    Ply,
    /// Wavefront OBJ: `v`, `vn` and `f a//a b//b c//c` lines.
    Obj,
    /// glTF 2.0 binary: one mesh, positions, normals and 32-bit indices, Y up.
    Glb,
}

impl MeshFormat {
    /// The format named by `path`'s extension (.ply, .obj, .glb), case-insensitive.
    pub fn from_path(path: &Path) -> Option<MeshFormat> {
        let ext = path.extension()?.to_str()?.to_ascii_lowercase();
        match ext.as_str() {
            "ply" => Some(MeshFormat::Ply),
            "obj" => Some(MeshFormat::Obj),
            "glb" => Some(MeshFormat::Glb),
            _ => None,
        }
    }

    /// The format's name as a user reads it.
    pub fn name(self) -> &'static str {
        match self {
            MeshFormat::Ply => "PLY",
            MeshFormat::Obj => "OBJ",
            MeshFormat::Glb => "glTF binary",
        }
    }
}

/// Writes `mesh` to `path` in the format its extension names.
pub fn write(mesh: &Mesh, path: &Path) -> Result<()> {
    let Some(format) = MeshFormat::from_path(path) else {
        return Err(Error::unsupported(
            path,
            "a mesh is written as .ply, .obj or .glb (from the output's extension)",
        ));
    };
    let offset = written_offset(mesh);
    crate::io::atomic::write_atomic_buffered(path, |w| {
        let r = match format {
            MeshFormat::Ply => ply::write(mesh, offset, w),
            MeshFormat::Obj => obj::write(mesh, offset, w),
            MeshFormat::Glb => glb::write(mesh, offset, w),
        };
        r.map_err(|e| Error::io(path, e))
    })
}

/// Reads a mesh file (.ply, .obj, .glb, by extension).
pub fn read(path: &Path) -> Result<Mesh> {
    let Some(format) = MeshFormat::from_path(path) else {
        return Err(Error::unsupported(
            path,
            "a mesh is read from .ply, .obj or .glb",
        ));
    };
    let data = std::fs::read(path).map_err(|e| Error::io(path, e))?;
    match format {
        MeshFormat::Ply => ply::read(path, &data),
        MeshFormat::Obj => obj::read(path, &data),
        MeshFormat::Glb => glb::read(path, &data),
    }
}

/// Whether `path` holds a mesh rather than a point cloud: an .obj or .glb file, or a PLY whose header declares
/// at least one face.
pub fn is_mesh_file(path: &Path) -> bool {
    match MeshFormat::from_path(path) {
        Some(MeshFormat::Obj | MeshFormat::Glb) => true,
        Some(MeshFormat::Ply) => ply::has_faces(path),
        None => false,
    }
}

/// What `aerie info` shows of a mesh file.
#[derive(Clone, Debug, PartialEq, serde::Serialize)]
pub struct MeshSummary {
    /// The file.
    pub source: std::path::PathBuf,
    /// Its format.
    pub format: String,
    /// Vertex count.
    pub vertices: usize,
    /// Triangle count.
    pub triangles: usize,
    /// Whether it has vertex normals.
    pub normals: bool,
    /// World bounds (min, max), metres, Z up.
    pub bounds: Option<([f64; 3], [f64; 3])>,
    /// Edges of one triangle only (open borders; 0 for a closed surface).
    pub border_edges: usize,
}

impl MeshSummary {
    /// The summary of `mesh`, read from `path`.
    pub fn of(mesh: &Mesh, path: &Path) -> MeshSummary {
        MeshSummary {
            source: path.to_path_buf(),
            format: MeshFormat::from_path(path)
                .map_or("mesh", MeshFormat::name)
                .to_string(),
            vertices: mesh.vertices().len(),
            triangles: mesh.triangles().len(),
            normals: mesh.normals().is_some(),
            bounds: mesh.bounds(),
            border_edges: mesh.border_edges(),
        }
    }
}

impl std::fmt::Display for MeshSummary {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        writeln!(f, "{}", self.source.display())?;
        writeln!(f, "  format      {} mesh", self.format)?;
        writeln!(f, "  vertices    {}", self.vertices)?;
        writeln!(f, "  triangles   {}", self.triangles)?;
        writeln!(
            f,
            "  normals     {}",
            if self.normals { "yes" } else { "no" }
        )?;
        writeln!(f, "  open edges  {}", self.border_edges)?;
        if let Some((lo, hi)) = self.bounds {
            writeln!(
                f,
                "  bounds      x {:.3}..{:.3}  y {:.3}..{:.3}  z {:.3}..{:.3} m (Z up)",
                lo[0], hi[0], lo[1], hi[1], lo[2], hi[2]
            )?;
        }
        Ok(())
    }
}

/// What the written coordinates are relative to: 0 when the whole mesh lies within [`LOCAL_LIMIT`], else its
/// origin.
fn written_offset(mesh: &Mesh) -> [f64; 3] {
    match mesh.bounds() {
        Some((lo, hi)) if lo.iter().chain(&hi).all(|v| v.abs() <= LOCAL_LIMIT) => [0.0; 3],
        Some(_) => mesh.origin(),
        None => [0.0; 3],
    }
}

/// The vertices relative to `offset`, in f32.
fn shifted(mesh: &Mesh, offset: [f64; 3]) -> Vec<[f32; 3]> {
    let o = mesh.origin();
    let d = [0, 1, 2].map(|a| o[a] - offset[a]);
    mesh.vertices()
        .iter()
        .map(|v| [0, 1, 2].map(|a| (f64::from(v[a]) + d[a]) as f32))
        .collect()
}

/// A mesh read from `path`, its errors as the file's.
fn assemble(
    path: &Path,
    origin: [f64; 3],
    vertices: Vec<[f32; 3]>,
    normals: Option<Vec<[f32; 3]>>,
    triangles: Vec<[u32; 3]>,
) -> Result<Mesh> {
    Mesh::new(origin, vertices, normals, triangles)
        .map_err(|e| Error::format(path, "faces", e.to_string()))
}

/// `[x, y, z]` from an `aerie_origin X Y Z` comment's words, when they are three finite numbers.
fn parse_origin<'a>(mut words: impl Iterator<Item = &'a str>) -> Option<[f64; 3]> {
    if words.next()? != "aerie_origin" {
        return None;
    }
    let mut o = [0.0; 3];
    for v in &mut o {
        *v = words.next()?.parse().ok().filter(|x: &f64| x.is_finite())?;
    }
    Some(o)
}
