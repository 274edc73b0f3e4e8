//! A USD stage of a map for Isaac Sim (and any USD reader): [`write_stage`] writes one as text (`.usda`),
//! [`read_stage`] reads it back with its [`StageSummary`] (what `aerie info` shows).
//!
//! The stage (metres, Z up, `defaultPrim` `/World`, so that it can be opened or referenced as it is):
//!
//! ```text
//! /World               Xform
//! /World/Map           Mesh: the full mesh, what cameras and RTX LiDARs see
//! /World/Collision     Mesh, purpose "guide" (not rendered): the simplified mesh, with UsdPhysics'
//!                      CollisionAPI and MeshCollisionAPI (approximation "none": the triangles as they are, which
//!                      PhysX takes for a static collider)
//! /World/Points        Points: the map's points, one width (the map's resolution), for viewing
//! ```
//!
//! Written by hand (usda.rs): there is no USD writer in Rust, and the text format of this subset is small: a
//! header of stage metadata, `def` blocks with typed attributes, one array per line. `.usdc` (the binary crate
//! format) is not written; USD and Isaac read the text as they read the binary.

mod usda;

use std::io::Write;
use std::path::Path;

use serde::Serialize;

use super::ExportError;
use super::surface::Surface;
use crate::io::atomic;
use crate::mesh::Mesh;
use crate::{Cloud, Error, Result};

/// The first line of every text USD file, by which USD recognises one.
pub const MAGIC: &str = "#usda 1.0";

/// Writes the stage of `visual` (the mesh seen), `collision` (the simplified mesh collided with) and the points
/// of `cloud` (drawn `point_width_m` wide) to `path`, in the map's frame minus `shift` (metres). Nothing is left
/// at `path` on error.
pub fn write_stage(
    visual: &Mesh,
    collision: &Mesh,
    cloud: &Cloud,
    point_width_m: f64,
    path: &Path,
    shift: [f64; 3],
) -> std::result::Result<(), ExportError> {
    let visual = Surface::new(visual, shift, path)?;
    let collision = Surface::new(collision, shift, path)?;
    let base: [f64; 3] = std::array::from_fn(|k| cloud.origin[k] - shift[k]);
    let points: Vec<[f32; 3]> = cloud
        .positions()
        .iter()
        .map(|p| std::array::from_fn(|k| (base[k] + f64::from(p[k])) as f32))
        .collect();
    let stage = usda::Stage {
        visual: &visual,
        collision: &collision,
        points: &points,
        point_width: point_width_m as f32,
    };
    atomic::write_atomic_buffered(path, |w| {
        usda::write(w, &stage)
            .and_then(|()| w.flush())
            .map_err(|e| Error::io(path, e))
    })
    .map_err(|source| ExportError::Write {
        path: path.to_path_buf(),
        source,
    })
}

/// What a `.usda` stage holds, as `aerie info` shows it.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct StageSummary {
    /// The stage's default prim.
    pub default_prim: Option<String>,
    /// Metres per unit of the stage.
    pub meters_per_unit: Option<f64>,
    /// The stage's up axis (`Z`).
    pub up_axis: Option<String>,
    /// Each prim type defined and how many prims of it, sorted by type.
    pub prims: Vec<(String, u64)>,
    /// Each mesh and points prim with its counts, in the file's order.
    pub geometry: Vec<GeometrySummary>,
}

/// One mesh or points prim read back.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct GeometrySummary {
    /// Its type (`Mesh`, `Points`).
    pub kind: String,
    /// Its name.
    pub name: String,
    /// Its points (a mesh's vertices).
    pub points: u64,
    /// A mesh's faces (`faceVertexCounts`); 0 for points.
    pub faces: u64,
    /// The API schemas applied to it (`PhysicsCollisionAPI`).
    pub api_schemas: Vec<String>,
}

impl std::fmt::Display for StageSummary {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        writeln!(f, "  format      USD stage (text, .usda)")?;
        let or_none = |v: Option<String>| v.unwrap_or_else(|| "not set".into());
        writeln!(
            f,
            "  stage       defaultPrim {}, metersPerUnit {}, upAxis {}",
            or_none(self.default_prim.clone()),
            or_none(self.meters_per_unit.map(|m| m.to_string())),
            or_none(self.up_axis.clone())
        )?;
        let prims: Vec<String> = self.prims.iter().map(|(t, n)| format!("{n} {t}")).collect();
        writeln!(f, "  prims       {}", prims.join(", "))?;
        for g in &self.geometry {
            let faces = if g.kind == "Mesh" {
                format!(", {} faces", g.faces)
            } else {
                String::new()
            };
            let apis = if g.api_schemas.is_empty() {
                String::new()
            } else {
                format!(" [{}]", g.api_schemas.join(", "))
            };
            writeln!(
                f,
                "  {:<11} {}: {} points{faces}{apis}",
                g.kind.to_ascii_lowercase(),
                g.name,
                g.points
            )?;
        }
        Ok(())
    }
}

/// Whether the file at `path` starts with the line of a text USD file (false when it cannot be read).
pub fn is_usda_file(path: &Path) -> bool {
    use std::io::Read;
    let mut head = [0u8; MAGIC.len()];
    std::fs::File::open(path)
        .and_then(|mut f| f.read_exact(&mut head))
        .is_ok_and(|()| head == MAGIC.as_bytes())
}

/// Reads the text USD stage at `path` as [`write_stage`] writes it (one attribute per line): its metadata, its
/// prims by type, and the counts of its meshes and points. A file that is not text USD, or is truncated (a
/// block left open), is an [`Error::Format`].
pub fn read_stage(path: &Path) -> Result<StageSummary> {
    let text = std::fs::read_to_string(path).map_err(|e| Error::io(path, e))?;
    usda::summarise(&text, path)
}

#[cfg(test)]
mod tests;
