//! What the mesh exports (Gazebo, Isaac Sim) share: the two meshes they write, made from a map or given, and a
//! mesh as its writers take it ([`Surface`]: positions in the export's frame, a normal per vertex, checked).

use std::path::Path;

use super::ExportError;
use crate::mesh::{self, Mesh, MeshOptions};
use crate::{Cloud, NoProgress};

/// The collision mesh's triangle budget when the export makes its meshes from a map: a physics engine tests
/// contacts against every triangle, so the collision mesh is the full mesh simplified to this many (Gazebo's
/// and Isaac's own guides keep collision meshes to tens of thousands of triangles).
pub const COLLISION_TRIANGLES: usize = 50_000;

/// The full mesh of a map and its simplified copy for collision ([`COLLISION_TRIANGLES`]); `path` names the
/// output in errors.
pub(super) fn meshes_of(cloud: &Cloud, path: &Path) -> Result<(Mesh, Mesh), ExportError> {
    if cloud.is_empty() {
        return Err(ExportError::EmptyMap {
            path: path.to_path_buf(),
        });
    }
    let options = MeshOptions::default();
    let visual =
        mesh::reconstruct(cloud, &options, &NoProgress).map_err(|source| ExportError::Mesh {
            path: path.to_path_buf(),
            source,
        })?;
    let collision = mesh::simplify(&visual, COLLISION_TRIANGLES);
    Ok((visual, collision))
}

/// A mesh as a writer takes it: vertex positions moved into the export's frame (as 32-bit floats, what the
/// readers hold), a unit normal per vertex, and the triangles.
pub(super) struct Surface<'a> {
    /// Vertex positions, metres, in the export's frame.
    pub positions: Vec<[f32; 3]>,
    /// A unit normal per vertex: the mesh's own, or the area-weighted mean of its triangles' normals.
    pub normals: Vec<[f32; 3]>,
    /// Counter-clockwise triangles, seen from the side they face.
    pub triangles: &'a [[u32; 3]],
}

impl<'a> Surface<'a> {
    /// `mesh` in the frame of the map minus `shift`; an empty mesh or a vertex that is not finite is refused
    /// ([`ExportError::EmptyMesh`], [`ExportError::BadMesh`]), naming `path`.
    pub fn new(mesh: &'a Mesh, shift: [f64; 3], path: &Path) -> Result<Surface<'a>, ExportError> {
        if mesh.is_empty() {
            return Err(ExportError::EmptyMesh {
                path: path.to_path_buf(),
            });
        }
        let base: [f64; 3] = std::array::from_fn(|k| mesh.origin()[k] - shift[k]);
        let positions: Vec<[f32; 3]> = mesh
            .vertices()
            .iter()
            .map(|v| std::array::from_fn(|k| (base[k] + f64::from(v[k])) as f32))
            .collect();
        if let Some(i) = positions
            .iter()
            .position(|p| p.iter().any(|c| !c.is_finite()))
        {
            return Err(ExportError::BadMesh {
                path: path.to_path_buf(),
                reason: format!("vertex {i} is not a finite number of metres"),
            });
        }
        let normals = match mesh.normals() {
            Some(n) => n.iter().map(|&v| unit(v)).collect(),
            None => vertex_normals(&positions, mesh.triangles()),
        };
        Ok(Surface {
            positions,
            normals,
            triangles: mesh.triangles(),
        })
    }

    /// The lowest and highest corner of the vertices.
    pub fn bounds(&self) -> ([f32; 3], [f32; 3]) {
        let mut lo = [f32::INFINITY; 3];
        let mut hi = [f32::NEG_INFINITY; 3];
        for p in &self.positions {
            for k in 0..3 {
                lo[k] = lo[k].min(p[k]);
                hi[k] = hi[k].max(p[k]);
            }
        }
        (lo, hi)
    }
}

/// Per-vertex normals of a mesh without them: the sum of the normals of the triangles around each vertex,
/// weighted by their areas (the cross product's length), made unit; `+z` for a vertex no triangle uses.
fn vertex_normals(positions: &[[f32; 3]], triangles: &[[u32; 3]]) -> Vec<[f32; 3]> {
    let mut sums = vec![[0.0f64; 3]; positions.len()];
    for t in triangles {
        let [a, b, c] = t.map(|i| positions[i as usize].map(f64::from));
        let u = [b[0] - a[0], b[1] - a[1], b[2] - a[2]];
        let v = [c[0] - a[0], c[1] - a[1], c[2] - a[2]];
        let n = [
            u[1] * v[2] - u[2] * v[1],
            u[2] * v[0] - u[0] * v[2],
            u[0] * v[1] - u[1] * v[0],
        ];
        for &i in t {
            for k in 0..3 {
                sums[i as usize][k] += n[k];
            }
        }
    }
    sums.into_iter()
        .map(|s| unit(s.map(|c| c as f32)))
        .collect()
}

/// `v` scaled to length 1; `+z` for a zero or non-finite vector (a writer must not write NaN).
fn unit(v: [f32; 3]) -> [f32; 3] {
    let len = (v[0] * v[0] + v[1] * v[1] + v[2] * v[2]).sqrt();
    if len.is_finite() && len > 0.0 {
        v.map(|c| c / len)
    } else {
        [0.0, 0.0, 1.0]
    }
}

/// A hand-made scene for the mesh exports' tests: a floor grid and a box standing on it, every face outward.
#[cfg(test)]
pub(super) mod fixture {
    use crate::mesh::Mesh;

    /// A floor of `n` x `n` squares of 1 m from (-n/2, -n/2, 0), facing up, and a box 1 m x 1 m x 1 m on it at
    /// (0.5, 0.5, 0) without its bottom, facing out, 4 vertices per face (sharp edges): `(n + 1)^2 + 20`
    /// vertices and `2 n^2 + 10` triangles, around `origin`.
    pub fn floor_and_box(n: u32, origin: [f64; 3]) -> Mesh {
        let mut vertices = Vec::new();
        let mut triangles = Vec::new();
        let half = n as f32 / 2.0;
        for j in 0..=n {
            for i in 0..=n {
                vertices.push([i as f32 - half, j as f32 - half, 0.0]);
            }
        }
        for j in 0..n {
            for i in 0..n {
                let a = j * (n + 1) + i;
                let (b, c, d) = (a + 1, a + n + 2, a + n + 1);
                triangles.extend([[a, b, c], [a, c, d]]);
            }
        }
        let (lo, hi) = ([0.5f32, 0.5, 0.0], [1.5f32, 1.5, 1.0]);
        let corner = |x: bool, y: bool, z: bool| {
            [
                if x { hi[0] } else { lo[0] },
                if y { hi[1] } else { lo[1] },
                if z { hi[2] } else { lo[2] },
            ]
        };
        let faces: [([[f32; 3]; 4], [f32; 3]); 5] = [
            (
                [
                    corner(false, false, true),
                    corner(true, false, true),
                    corner(true, true, true),
                    corner(false, true, true),
                ],
                [0.0, 0.0, 1.0],
            ),
            (
                [
                    corner(false, false, false),
                    corner(true, false, false),
                    corner(true, false, true),
                    corner(false, false, true),
                ],
                [0.0, -1.0, 0.0],
            ),
            (
                [
                    corner(true, false, false),
                    corner(true, true, false),
                    corner(true, true, true),
                    corner(true, false, true),
                ],
                [1.0, 0.0, 0.0],
            ),
            (
                [
                    corner(true, true, false),
                    corner(false, true, false),
                    corner(false, true, true),
                    corner(true, true, true),
                ],
                [0.0, 1.0, 0.0],
            ),
            (
                [
                    corner(false, true, false),
                    corner(false, false, false),
                    corner(false, false, true),
                    corner(false, true, true),
                ],
                [-1.0, 0.0, 0.0],
            ),
        ];
        let mut normals = vec![[0.0, 0.0, 1.0]; vertices.len()];
        for (quad, normal) in faces {
            let a = vertices.len() as u32;
            vertices.extend(quad);
            normals.extend([normal; 4]);
            triangles.extend([[a, a + 1, a + 2], [a, a + 2, a + 3]]);
        }
        Mesh::new(origin, vertices, Some(normals), triangles).unwrap()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A mesh without normals gets its triangles' (counter-clockwise: toward the viewer); a shift moves it.
    #[test]
    fn normals_follow_the_winding_and_the_shift_moves_the_vertices() {
        let mesh = Mesh::new(
            [100.0, 0.0, 0.0],
            vec![[0.0, 0.0, 0.0], [1.0, 0.0, 0.0], [0.0, 1.0, 0.0]],
            None,
            vec![[0, 1, 2]],
        )
        .unwrap();
        let s = Surface::new(&mesh, [100.0, 0.0, 0.0], Path::new("m")).unwrap();
        assert_eq!(s.normals, vec![[0.0, 0.0, 1.0]; 3]);
        assert_eq!(s.positions[1], [1.0, 0.0, 0.0]);
        assert_eq!(s.bounds(), ([0.0; 3], [1.0, 1.0, 0.0]));
        // The fixture's triangles turn counter-clockwise around its normals (they face out).
        let scene = fixture::floor_and_box(2, [0.0; 3]);
        let s = Surface::new(&scene, [0.0; 3], Path::new("m")).unwrap();
        let given = scene.normals().unwrap();
        let computed = vertex_normals(&s.positions, scene.triangles());
        for t in scene.triangles() {
            for &i in t {
                let dot: f32 = (0..3)
                    .map(|k| given[i as usize][k] * computed[i as usize][k])
                    .sum();
                assert!(dot > 0.0, "triangle {t:?} faces in");
            }
        }
        let empty = Mesh::new([0.0; 3], vec![], None, vec![]).unwrap();
        assert!(matches!(
            Surface::new(&empty, [0.0; 3], Path::new("m")),
            Err(ExportError::EmptyMesh { .. })
        ));
    }
}
