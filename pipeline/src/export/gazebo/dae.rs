//! COLLADA 1.4.1 (`.dae`), the mesh format every Gazebo reads (classic 11 through Ogre and its own loader,
//! gz-sim through Assimp): [`write`] writes one triangle mesh with positions and normals, in metres, Z up;
//! [`counts`] reads back the vertex and triangle counts of a file [`write`] wrote.
//!
//! Written by hand: the subset a mesh needs is about forty lines of XML around two float arrays and an index
//! list, and the Rust COLLADA crates read rather than write (or pull a whole scene graph in). The subset:
//! `asset` (`unit meter="1"`, `Z_UP`, fixed dates so the same mesh gives the same bytes), one `effect` and
//! `material` (a matte grey, so that a renderer that wants a material gets one), one `geometry` whose `mesh` has
//! a positions and a normals `source` and one `triangles` element indexing both with the same index (one normal
//! per vertex), and one `visual_scene` node instancing it.

use std::io::{self, Write};
use std::path::Path;

use super::super::surface::Surface;
use crate::{Error, Result};

/// Writes `surface` as a COLLADA document named `name` (an XML id: letters, digits, `_`, `-`, `.`).
pub(super) fn write(w: &mut impl Write, surface: &Surface<'_>, name: &str) -> io::Result<()> {
    let (n, t) = (surface.positions.len(), surface.triangles.len());
    write!(
        w,
        r##"<?xml version="1.0" encoding="utf-8"?>
<COLLADA xmlns="http://www.collada.org/2005/11/COLLADASchema" version="1.4.1">
  <asset>
    <contributor><authoring_tool>Aerie</authoring_tool></contributor>
    <created>1970-01-01T00:00:00Z</created>
    <modified>1970-01-01T00:00:00Z</modified>
    <unit name="meter" meter="1"/>
    <up_axis>Z_UP</up_axis>
  </asset>
  <library_effects>
    <effect id="surface-effect">
      <profile_COMMON>
        <technique sid="common">
          <lambert><diffuse><color sid="diffuse">0.7 0.7 0.7 1</color></diffuse></lambert>
        </technique>
      </profile_COMMON>
    </effect>
  </library_effects>
  <library_materials>
    <material id="surface-material" name="surface"><instance_effect url="#surface-effect"/></material>
  </library_materials>
  <library_geometries>
    <geometry id="{name}-mesh" name="{name}">
      <mesh>
        <source id="{name}-positions">
          <float_array id="{name}-positions-array" count="{c}">"##,
        c = 3 * n
    )?;
    floats(w, &surface.positions)?;
    write!(
        w,
        r##"</float_array>
          <technique_common>
            <accessor source="#{name}-positions-array" count="{n}" stride="3">
              <param name="X" type="float"/><param name="Y" type="float"/><param name="Z" type="float"/>
            </accessor>
          </technique_common>
        </source>
        <source id="{name}-normals">
          <float_array id="{name}-normals-array" count="{c}">"##,
        c = 3 * n
    )?;
    floats(w, &surface.normals)?;
    write!(
        w,
        r##"</float_array>
          <technique_common>
            <accessor source="#{name}-normals-array" count="{n}" stride="3">
              <param name="X" type="float"/><param name="Y" type="float"/><param name="Z" type="float"/>
            </accessor>
          </technique_common>
        </source>
        <vertices id="{name}-vertices">
          <input semantic="POSITION" source="#{name}-positions"/>
        </vertices>
        <triangles count="{t}" material="surface">
          <input semantic="VERTEX" source="#{name}-vertices" offset="0"/>
          <input semantic="NORMAL" source="#{name}-normals" offset="0"/>
          <p>"##
    )?;
    for (i, tri) in surface.triangles.iter().enumerate() {
        let sep = if i == 0 { "" } else { " " };
        write!(w, "{sep}{} {} {}", tri[0], tri[1], tri[2])?;
    }
    write!(
        w,
        r##"</p>
        </triangles>
      </mesh>
    </geometry>
  </library_geometries>
  <library_visual_scenes>
    <visual_scene id="scene" name="scene">
      <node id="{name}" name="{name}">
        <instance_geometry url="#{name}-mesh">
          <bind_material>
            <technique_common>
              <instance_material symbol="surface" target="#surface-material"/>
            </technique_common>
          </bind_material>
        </instance_geometry>
      </node>
    </visual_scene>
  </library_visual_scenes>
  <scene>
    <instance_visual_scene url="#scene"/>
  </scene>
</COLLADA>
"##
    )
}

/// Writes `values` as COLLADA's space-separated floats (each the shortest text that reads back to the same
/// 32-bit float).
fn floats(w: &mut impl Write, values: &[[f32; 3]]) -> io::Result<()> {
    for (i, v) in values.iter().enumerate() {
        let sep = if i == 0 { "" } else { " " };
        write!(w, "{sep}{} {} {}", v[0], v[1], v[2])?;
    }
    Ok(())
}

/// The vertex and triangle counts of the COLLADA file at `path`, as [`write`] wrote it: its positions array's
/// `count` over 3, and the sum of its `triangles` elements' `count`.
pub fn counts(path: &Path) -> Result<(u64, u64)> {
    let text = std::fs::read_to_string(path).map_err(|e| Error::io(path, e))?;
    if !text.contains("<COLLADA") {
        return Err(Error::format(path, "start", "not a COLLADA document"));
    }
    let floats = text
        .split("<float_array ")
        .skip(1)
        .find(|tag| tag.contains("-positions-array\""))
        .and_then(|tag| attribute(tag, "count"))
        .ok_or_else(|| {
            Error::format(
                path,
                "<float_array>",
                "no positions array with a count (a mesh Aerie did not write?)",
            )
        })?;
    let triangles = text
        .split("<triangles ")
        .skip(1)
        .map(|tag| attribute(tag, "count").unwrap_or(0))
        .sum();
    if !text.trim_end().ends_with("</COLLADA>") {
        return Err(Error::format(
            path,
            "end",
            "the document does not end with </COLLADA>: the file is truncated",
        ));
    }
    Ok((floats / 3, triangles))
}

/// The number in the attribute `name="..."` of the tag that starts `tag`.
fn attribute(tag: &str, name: &str) -> Option<u64> {
    let tag = &tag[..tag.find('>')?];
    let at = tag.find(&format!("{name}=\""))? + name.len() + 2;
    let end = at + tag[at..].find('"')?;
    tag[at..end].parse().ok()
}
