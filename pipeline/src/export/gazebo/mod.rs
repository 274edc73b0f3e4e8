//! A Gazebo model folder of a map's mesh: [`write_model`] writes one, [`read_model`] reads it back with its
//! [`ModelSummary`] (what `aerie info` shows).
//!
//! The folder is what both Gazebos load (classic 11 and gz-sim, through `GAZEBO_MODEL_PATH` or
//! `GZ_SIM_RESOURCE_PATH`):
//!
//! ```text
//! NAME/model.config          the model's name and its SDF file
//! NAME/model.sdf             SDF 1.7: one static model, one link, its visual the full mesh, its collision the
//!                            simplified one
//! NAME/meshes/visual.dae     COLLADA in metres, Z up (dae.rs)
//! NAME/meshes/collision.dae
//! NAME/world.sdf             a world including model://NAME, with a ground plane below it and a sun
//! NAME/README.txt            how to load it
//! ```
//!
//! SDF 1.7 is the newest version Gazebo 11 reads; later Gazebos read it too. The meshes are named by
//! `model://NAME/meshes/...` URIs, which every Gazebo resolves through its model path, so the model's name is its
//! folder's name, which must therefore be a plain one. The folder is written whole in a hidden folder beside its
//! place and renamed into it, so a failed export leaves nothing; an existing folder is taken only when empty.

mod dae;

pub use dae::counts as dae_counts;

use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};

use serde::Serialize;

use super::ExportError;
use super::Target;
use super::surface::Surface;
use crate::io::{Format, atomic};
use crate::mesh::Mesh;
use crate::{Error, Result};

/// The SDF version written: the newest Gazebo 11 (classic) reads.
pub const SDF_VERSION: &str = "1.7";

/// How far below the mesh's lowest point the world's ground plane lies, metres: below the map's floor (so the
/// two do not fight in the renderer), catching what falls through a hole the scan left.
const GROUND_BELOW_M: f32 = 0.05;

/// The model's name for the folder `dir`: its last component, which must be a plain name (letters, digits,
/// `_`, `-`, `.`), since Gazebo finds the model by it (`model://NAME`). A name that is not gets an error naming
/// the plain one to use instead.
pub fn model_name(dir: &Path) -> std::result::Result<String, ExportError> {
    let not_a_folder = |reason: String| ExportError::NotAFolder {
        path: dir.to_path_buf(),
        target: Target::Gazebo,
        reason,
    };
    let Some(name) = dir.file_name().and_then(|n| n.to_str()) else {
        return Err(not_a_folder(
            "name the model's folder (e.g. `hall_model`), not `..` or the root".into(),
        ));
    };
    let plain: String = name
        .trim_start_matches('.')
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || "_-.".contains(c) {
                c
            } else {
                '_'
            }
        })
        .collect();
    let plain = if plain.is_empty() {
        "map_model".into()
    } else {
        plain
    };
    let ext = dir.extension().and_then(|e| e.to_str()).unwrap_or("");
    let file_like = Format::from_path(dir).is_some()
        || [
            "usda", "usdc", "usd", "bt", "dae", "sdf", "world", "obj", "glb", "amap",
        ]
        .iter()
        .any(|e| e.eq_ignore_ascii_case(ext));
    if file_like {
        let stem = dir.file_stem().and_then(|s| s.to_str()).unwrap_or("map");
        return Err(not_a_folder(format!(
            "name it without a file's extension, e.g. `{stem}_model`"
        )));
    }
    if plain != name {
        return Err(not_a_folder(format!(
            "Gazebo finds a model by its folder's name (`model://NAME`), which takes letters, digits, `_`, `-` and \
             `.`: name it `{plain}`"
        )));
    }
    Ok(plain)
}

/// Refuses an output `dir` that exists and is a file, or a folder that holds anything.
pub fn check_folder(dir: &Path) -> std::result::Result<(), ExportError> {
    if dir.exists() && !dir.is_dir() {
        return Err(ExportError::NotAFolder {
            path: dir.to_path_buf(),
            target: Target::Gazebo,
            reason: "a file of that name exists: name a new folder".into(),
        });
    }
    let holds_something = std::fs::read_dir(dir).is_ok_and(|mut d| d.next().is_some());
    if holds_something {
        return Err(ExportError::FolderNotEmpty {
            path: dir.to_path_buf(),
            target: Target::Gazebo,
        });
    }
    Ok(())
}

/// Writes the Gazebo model folder `dir` of `visual` (the mesh seen) and `collision` (the mesh collided with, a
/// simplified one), in the map's frame minus `shift` (metres). Nothing is left at `dir` on error.
pub fn write_model(
    visual: &Mesh,
    collision: &Mesh,
    dir: &Path,
    shift: [f64; 3],
) -> std::result::Result<(), ExportError> {
    let name = model_name(dir)?;
    check_folder(dir)?;
    let visual = Surface::new(visual, shift, dir)?;
    let collision = Surface::new(collision, shift, dir)?;
    let floor = visual.bounds().0[2].min(collision.bounds().0[2]) - GROUND_BELOW_M;
    let files: [(&str, Contents<'_>); 6] = [
        ("model.config", Contents::Text(model_config(&name))),
        ("model.sdf", Contents::Text(model_sdf(&name))),
        ("world.sdf", Contents::Text(world_sdf(&name, floor))),
        ("README.txt", Contents::Text(readme(&name))),
        ("meshes/visual.dae", Contents::Mesh(&visual)),
        ("meshes/collision.dae", Contents::Mesh(&collision)),
    ];
    write_folder(dir, &files).map_err(|source| ExportError::Write {
        path: dir.to_path_buf(),
        source,
    })
}

/// A file of the model folder: text, or a mesh written as COLLADA.
enum Contents<'a> {
    Text(String),
    Mesh(&'a Surface<'a>),
}

/// Writes `files` (paths relative to the folder) into a hidden folder beside `dir`, then renames it to `dir`
/// (an empty folder there is replaced); on error the hidden folder is removed.
fn write_folder(dir: &Path, files: &[(&str, Contents<'_>)]) -> Result<()> {
    let parent = match dir.parent() {
        Some(p) if !p.as_os_str().is_empty() => p,
        _ => Path::new("."),
    };
    std::fs::create_dir_all(parent).map_err(|e| Error::io(parent, e))?;
    let tmp = tempfile::Builder::new()
        .prefix(".aerie-tmp-")
        .tempdir_in(parent)
        .map_err(|e| Error::io(dir, e))?;
    // Listed for the program's signal handler, which removes it if the export is interrupted.
    let _pending = atomic::Pending::new(tmp.path());
    std::fs::create_dir(tmp.path().join("meshes")).map_err(|e| Error::io(dir, e))?;
    for (file, contents) in files {
        let at = tmp.path().join(file);
        let shown = dir.join(file);
        let f = std::fs::File::create(&at).map_err(|e| Error::io(&shown, e))?;
        let mut w = BufWriter::with_capacity(1 << 20, f);
        match contents {
            Contents::Text(text) => w.write_all(text.as_bytes()),
            Contents::Mesh(surface) => dae::write(&mut w, surface, "map"),
        }
        .and_then(|()| w.flush())
        .map_err(|e| Error::io(&shown, e))?;
    }
    // A temporary folder is private (0700); a model folder gets the usual permissions.
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        for d in [tmp.path().to_path_buf(), tmp.path().join("meshes")] {
            std::fs::set_permissions(&d, std::fs::Permissions::from_mode(0o755))
                .map_err(|e| Error::io(dir, e))?;
        }
    }
    std::fs::rename(tmp.path(), dir).map_err(|e| Error::io(dir, e))?;
    // Renamed away: nothing is left for the guard to remove.
    let _ = tmp.keep();
    Ok(())
}

/// model.config: the model's name and its SDF file, as Gazebo's model database lists it.
fn model_config(name: &str) -> String {
    format!(
        r#"<?xml version="1.0"?>
<model>
  <name>{name}</name>
  <version>1.0</version>
  <sdf version="{SDF_VERSION}">model.sdf</sdf>
  <author>
    <name>Aerie</name>
  </author>
  <description>A prepared LiDAR map as a static mesh: the full mesh to see, a simplified one to collide with.</description>
</model>
"#
    )
}

/// model.sdf: one static model with one link, its visual the full mesh, its collision the simplified one.
fn model_sdf(name: &str) -> String {
    format!(
        r#"<?xml version="1.0"?>
<sdf version="{SDF_VERSION}">
  <model name="{name}">
    <static>true</static>
    <link name="map">
      <visual name="visual">
        <geometry>
          <mesh>
            <uri>model://{name}/meshes/visual.dae</uri>
          </mesh>
        </geometry>
      </visual>
      <collision name="collision">
        <geometry>
          <mesh>
            <uri>model://{name}/meshes/collision.dae</uri>
          </mesh>
        </geometry>
      </collision>
    </link>
  </model>
</sdf>
"#
    )
}

/// world.sdf: the model, a ground plane `floor` metres up (below the mesh) and a sun.
fn world_sdf(name: &str, floor: f32) -> String {
    format!(
        r#"<?xml version="1.0"?>
<sdf version="{SDF_VERSION}">
  <world name="{name}_world">
    <gravity>0 0 -9.8</gravity>
    <light type="directional" name="sun">
      <cast_shadows>true</cast_shadows>
      <pose>0 0 10 0 0 0</pose>
      <diffuse>0.8 0.8 0.8 1</diffuse>
      <specular>0.2 0.2 0.2 1</specular>
      <direction>-0.5 0.1 -0.9</direction>
    </light>
    <model name="ground_plane">
      <static>true</static>
      <pose>0 0 {floor} 0 0 0</pose>
      <link name="link">
        <collision name="collision">
          <geometry>
            <plane>
              <normal>0 0 1</normal>
              <size>1000 1000</size>
            </plane>
          </geometry>
        </collision>
        <visual name="visual">
          <geometry>
            <plane>
              <normal>0 0 1</normal>
              <size>1000 1000</size>
            </plane>
          </geometry>
        </visual>
      </link>
    </model>
    <include>
      <uri>model://{name}</uri>
    </include>
  </world>
</sdf>
"#
    )
}

/// README.txt: how to load the model and its world.
fn readme(name: &str) -> String {
    format!(
        "A Gazebo model of a map, written by Aerie (SDF {SDF_VERSION}; meshes are COLLADA in metres, Z up).\n\n\
         Gazebo finds it by its folder's name through the model path: add the folder that holds this one.\n\n\
         Gazebo 11 (classic):   GAZEBO_MODEL_PATH=/path/to/parent:$GAZEBO_MODEL_PATH gazebo {name}/world.sdf\n\
         Gazebo (gz-sim):       GZ_SIM_RESOURCE_PATH=/path/to/parent:$GZ_SIM_RESOURCE_PATH gz sim {name}/world.sdf\n\
         Ignition (Fortress):   IGN_GAZEBO_RESOURCE_PATH=/path/to/parent:$IGN_GAZEBO_RESOURCE_PATH ign gazebo {name}/world.sdf\n\
         Checking the SDF:      SDF_PATH=/path/to/parent ign sdf -k {name}/world.sdf\n\n\
         meshes/visual.dae is the full mesh (what cameras and GPU LiDARs see), meshes/collision.dae a simplified \
         one (what physics collides with). Both face outward: their triangles' front faces look toward where the \
         scanner stood.\n"
    )
}

/// What a Gazebo model folder holds, as `aerie info` shows it.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct ModelSummary {
    /// The model's name, as model.config gives it.
    pub name: String,
    /// The SDF version of model.sdf.
    pub sdf_version: String,
    /// Whether the folder has a world.sdf.
    pub world: bool,
    /// Each mesh model.sdf names, in its order.
    pub meshes: Vec<MeshSummary>,
}

/// One mesh of a model, read back.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct MeshSummary {
    /// Its path in the folder (`meshes/visual.dae`).
    pub file: String,
    /// Vertices.
    pub vertices: u64,
    /// Triangles.
    pub triangles: u64,
}

impl std::fmt::Display for ModelSummary {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        writeln!(f, "  format      Gazebo model (SDF {})", self.sdf_version)?;
        writeln!(f, "  model       {}", self.name)?;
        let world = if self.world { "world.sdf" } else { "none" };
        writeln!(f, "  world       {world}")?;
        for m in &self.meshes {
            writeln!(
                f,
                "  mesh        {}: {} vertices, {} triangles",
                m.file, m.vertices, m.triangles
            )?;
        }
        Ok(())
    }
}

/// Whether `path` is a Gazebo model folder: a folder holding a model.config.
pub fn is_model_dir(path: &Path) -> bool {
    path.is_dir() && path.join("model.config").is_file()
}

/// Reads the model folder `dir`: the name in model.config, the SDF version of model.sdf, and each mesh it
/// names (`model://NAME/...`, found in the folder) with its counts.
pub fn read_model(dir: &Path) -> Result<ModelSummary> {
    let config_path = dir.join("model.config");
    let config = std::fs::read_to_string(&config_path).map_err(|e| Error::io(&config_path, e))?;
    let name = between(&config, "<name>", "</name>")
        .ok_or_else(|| Error::format(&config_path, "<name>", "model.config names no model"))?
        .trim()
        .to_string();
    let sdf_path = dir.join("model.sdf");
    let sdf = std::fs::read_to_string(&sdf_path).map_err(|e| Error::io(&sdf_path, e))?;
    let sdf_version = between(&sdf, "<sdf version=\"", "\"")
        .ok_or_else(|| Error::format(&sdf_path, "<sdf>", "no <sdf version=\"...\"> element"))?
        .to_string();
    let mut meshes = Vec::new();
    for uri in sdf
        .split("<uri>")
        .skip(1)
        .filter_map(|s| s.split_once("</uri>"))
    {
        let file = mesh_file(uri.0, &name)
            .ok_or_else(|| Error::format(&sdf_path, uri.0, "a mesh outside the model's folder"))?;
        let (vertices, triangles) = dae::counts(&dir.join(&file))?;
        meshes.push(MeshSummary {
            file: file.display().to_string(),
            vertices,
            triangles,
        });
    }
    Ok(ModelSummary {
        name,
        sdf_version,
        world: dir.join("world.sdf").is_file(),
        meshes,
    })
}

/// The file in the model's folder that `uri` (`model://NAME/meshes/visual.dae`) names.
fn mesh_file(uri: &str, name: &str) -> Option<PathBuf> {
    let rest = uri.trim().strip_prefix(&format!("model://{name}/"))?;
    let file = PathBuf::from(rest);
    file.components()
        .all(|c| matches!(c, std::path::Component::Normal(_)))
        .then_some(file)
}

/// The text of `s` between the first `open` and the `close` after it.
fn between<'a>(s: &'a str, open: &str, close: &str) -> Option<&'a str> {
    let at = s.find(open)? + open.len();
    let end = at + s[at..].find(close)?;
    Some(&s[at..end])
}

#[cfg(test)]
mod tests;
