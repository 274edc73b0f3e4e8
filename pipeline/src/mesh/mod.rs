//! Triangle meshes made from a prepared map: what Gazebo, Isaac Sim and other mesh consumers load.
//!
//! [`Mesh`] is the one mesh type: vertices as f32 offsets from an f64 origin (as [`Cloud`] holds points, so a
//! map far from 0 keeps its millimetres), counter-clockwise triangles seen from outside (their normal points
//! away from the surface, toward where the scanner stood), and optional per-vertex normals. Its constructor
//! checks every index once, so writers never meet a triangle that names a missing vertex.
//!
//! [`reconstruct`] turns a map with normals into a mesh: a signed distance from the oriented points on a sparse
//! voxel grid ([`sdf`]), then surface nets over it ([`nets`]) only where the map has points, so holes stay open
//! (docs/algorithms.md, section 36). [`simplify`] brings a mesh down to a triangle budget with meshoptimizer.
//! [`io`] writes and reads PLY, OBJ and glTF binary (.glb).

pub mod io;
mod nets;
mod sdf;
#[cfg(test)]
mod tests;

use crate::cloud::Cloud;
use crate::features::normals::SURFACE_OFFSET;
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

    /// The world bounds of the vertices (min, max), `None` without vertices.
    pub fn bounds(&self) -> Option<([f64; 3], [f64; 3])> {
        let first = self.vertices.first()?;
        let (mut lo, mut hi) = (*first, *first);
        for v in &self.vertices {
            for a in 0..3 {
                lo[a] = lo[a].min(v[a]);
                hi[a] = hi[a].max(v[a]);
            }
        }
        let world = |p: [f32; 3]| [0, 1, 2].map(|a| self.origin[a] + f64::from(p[a]));
        Some((world(lo), world(hi)))
    }

    /// The unit normal of each triangle (its vertices' order, counter-clockwise, gives the side).
    pub fn face_normals(&self) -> Vec<[f32; 3]> {
        self.triangles
            .iter()
            .map(|t| {
                let [a, b, c] = t.map(|i| self.vertices[i as usize]);
                let u = [b[0] - a[0], b[1] - a[1], b[2] - a[2]];
                let v = [c[0] - a[0], c[1] - a[1], c[2] - a[2]];
                let n = [
                    u[1] * v[2] - u[2] * v[1],
                    u[2] * v[0] - u[0] * v[2],
                    u[0] * v[1] - u[1] * v[0],
                ];
                let len = sdf::dot(n, n).sqrt();
                if len > 0.0 { n.map(|x| x / len) } else { n }
            })
            .collect()
    }

    /// How many edges belong to one triangle only: the length of the mesh's open borders, in edges (0 for a
    /// closed surface).
    pub fn border_edges(&self) -> usize {
        let mut edges: Vec<(u32, u32)> = self
            .triangles
            .iter()
            .flat_map(|t| [(t[0], t[1]), (t[1], t[2]), (t[2], t[0])])
            .map(|(a, b)| (a.min(b), a.max(b)))
            .collect();
        edges.sort_unstable();
        let mut border = 0;
        let mut i = 0;
        while i < edges.len() {
            let mut j = i + 1;
            while j < edges.len() && edges[j] == edges[i] {
                j += 1;
            }
            border += usize::from(j - i == 1);
            i = j;
        }
        border
    }
}

/// How a mesh is made from a map.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct MeshOptions {
    /// At most this many triangles (simplified down to it); `None`: as reconstructed.
    pub max_triangles: Option<usize>,
    /// The voxel edge of the reconstruction, metres ([`RESOLUTION_RANGE`]); `None`: the median spacing of the
    /// map's points (a prepared map's is its resolution).
    pub resolution_m: Option<f64>,
}

/// The resolutions [`reconstruct`] accepts, metres.
pub const RESOLUTION_RANGE: std::ops::RangeInclusive<f64> = 0.005..=10.0;

/// The distance is defined this many voxels around the samples (Gaussian width one voxel).
const SUPPORT_VOXELS: f32 = 2.0;

/// A vertex is kept within this many voxels of a sample.
const TRIM_VOXELS: f32 = 1.0;

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

/// A surface mesh of `map` (a prepared map with normals): triangles facing the side the normals point to (the
/// scanner's), only where the map has points. Deterministic: the same map and options give the same mesh
/// whatever the number of threads.
pub fn reconstruct(
    map: &Cloud,
    options: &MeshOptions,
    progress: &dyn Progress,
) -> Result<Mesh, MeshError> {
    let surfels = surfels(map)?;
    let h = resolution(map, options)? as f32;
    check_extent(&surfels.q, h)?;
    let k = sdf::Kernel {
        support: SUPPORT_VOXELS * h,
        sigma: h,
    };
    let grid = sdf::PointGrid::new(&surfels.q, k.support);
    let net = nets::extract(&surfels, &grid, h, k, TRIM_VOXELS * h, progress)?;
    let mesh = Mesh::new(map.origin, net.vertices, Some(net.normals), net.triangles)?;
    Ok(match options.max_triangles {
        Some(max) if mesh.triangles.len() > max => simplify(&mesh, max),
        _ => mesh,
    })
}

/// The map's points that have a normal, moved by their surface offset (when the map has one) onto the middle
/// of the surface layer.
fn surfels(map: &Cloud) -> Result<sdf::Surfels, MeshError> {
    if map.is_empty() {
        return Err(MeshError::Input("the map has no points".into()));
    }
    let Some(normals) = map.normals() else {
        return Err(MeshError::Input(
            "the map's points have no normals, which a mesh is made from: prepare it with normals \
             (`aerie prepare` computes them by default)"
                .into(),
        ));
    };
    let offset = map.extra(SURFACE_OFFSET).map(|d| &d.values);
    let (q, n): (Vec<[f32; 3]>, Vec<[f32; 3]>) = map
        .positions()
        .iter()
        .zip(normals)
        .enumerate()
        .filter(|(_, (p, n))| sdf::dot(**n, **n) > 0.5 && p.iter().all(|v| v.is_finite()))
        .map(|(i, (p, n))| {
            let s = offset.and_then(|o| o.get(i)).unwrap_or(0.0) as f32;
            let s = if s.is_finite() { s } else { 0.0 };
            ([p[0] + s * n[0], p[1] + s * n[1], p[2] + s * n[2]], *n)
        })
        .unzip();
    if q.is_empty() {
        return Err(MeshError::Input(
            "no point of the map has a normal (all are [0, 0, 0]: no plane fits their neighbours); prepare it \
             with a larger normal radius or resolution"
                .into(),
        ));
    }
    Ok(sdf::Surfels { q, n })
}

/// The voxel edge: the option's, checked, or the median spacing of the map's points.
fn resolution(map: &Cloud, options: &MeshOptions) -> Result<f64, MeshError> {
    let r = match options.resolution_m {
        Some(r) => r,
        None => {
            let spacing = match map.extra(crate::features::spacing::EXTRA_NAME) {
                Some(d) => d.values.to_f64().into_iter().map(|v| v as f32).collect(),
                None => crate::features::spacing::spacing_all(map.positions())
                    .map_err(|e| MeshError::Input(e.to_string()))?,
            };
            match crate::features::spacing::surface_median(&spacing) {
                Some((median, _)) => f64::from(median),
                None => {
                    return Err(MeshError::Input(
                        "the map's points lie on no surface to measure their spacing: give a resolution".into(),
                    ));
                }
            }
        }
    };
    if !RESOLUTION_RANGE.contains(&r) {
        return Err(MeshError::Input(format!(
            "resolution {r} m is out of range: expected {} to {} m",
            RESOLUTION_RANGE.start(),
            RESOLUTION_RANGE.end()
        )));
    }
    Ok(r)
}

/// Fails when the map spans more voxels than the grid's keys hold.
fn check_extent(q: &[[f32; 3]], h: f32) -> Result<(), MeshError> {
    let far = q
        .iter()
        .fold(0.0f32, |m, p| p.iter().fold(m, |m, v| m.max(v.abs())));
    if sdf::packable(sdf::cell_of([far; 3], h)) {
        Ok(())
    } else {
        Err(MeshError::Input(format!(
            "the map reaches {far:.0} m from its origin, more than {} voxels of {h} m: give a larger resolution",
            1 << 20
        )))
    }
}

/// `mesh` with at most `max_triangles` triangles, keeping its shape as closely as the budget allows (what a
/// collision mesh uses). meshoptimizer's edge-collapse simplifier [R44] with the border locked first, so that
/// holes keep their outline; when that cannot reach the budget, the border may move along itself (holes stay
/// open: a border edge only ever collapses into its border), and last its sloppy simplifier.
pub fn simplify(mesh: &Mesh, max_triangles: usize) -> Mesh {
    if mesh.triangles.len() <= max_triangles {
        return mesh.clone();
    }
    let indices: Vec<u32> = mesh.triangles.iter().flatten().copied().collect();
    let bytes: &[u8] = bytemuck::cast_slice(&mesh.vertices);
    let Ok(adapter) = meshopt::VertexDataAdapter::new(bytes, 12, 0) else {
        return mesh.clone();
    };
    let target = max_triangles * 3;
    let mut out = meshopt::simplify(
        &indices,
        &adapter,
        target,
        1.0,
        meshopt::SimplifyOptions::LockBorder,
        None,
    );
    if out.len() > target {
        out = meshopt::simplify(
            &out,
            &adapter,
            target,
            1.0,
            meshopt::SimplifyOptions::None,
            None,
        );
    }
    if out.len() > target {
        out = meshopt::simplify_sloppy(&out, &adapter, target, 1.0, None);
    }
    let triangles: Vec<[u32; 3]> = out
        .chunks_exact(3)
        .map(|t| [t[0], t[1], t[2]])
        .filter(|t| t[0] != t[1] && t[1] != t[2] && t[0] != t[2])
        .collect();
    keep_used(mesh, &triangles)
}

/// The vertices (and normals) of `mesh` that `triangles` use, renumbered in their order, with `triangles`.
fn keep_used(mesh: &Mesh, triangles: &[[u32; 3]]) -> Mesh {
    let mut map = vec![u32::MAX; mesh.vertices.len()];
    triangles
        .iter()
        .flatten()
        .for_each(|&i| map[i as usize] = 0);
    let mut vertices = Vec::new();
    let mut normals = mesh.normals.as_ref().map(|_| Vec::new());
    for (i, m) in map.iter_mut().enumerate() {
        if *m == 0 {
            *m = vertices.len() as u32;
            vertices.push(mesh.vertices[i]);
            if let (Some(out), Some(n)) = (normals.as_mut(), mesh.normals.as_ref()) {
                out.push(n[i]);
            }
        }
    }
    Mesh {
        origin: mesh.origin,
        vertices,
        normals,
        triangles: triangles
            .iter()
            .map(|t| t.map(|i| map[i as usize]))
            .collect(),
    }
}
