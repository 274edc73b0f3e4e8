//! The text USD subset Aerie writes ([`write`]) and reads back ([`summarise`]).
//!
//! Written: the `#usda 1.0` line; stage metadata (`defaultPrim`, `doc`, `metersPerUnit`, `upAxis`); `def` blocks
//! of the schema types `Xform`, `Mesh` and `Points`, a prim's metadata (`prepend apiSchemas`) in parentheses after
//! its name; attributes of the types `float3[]`, `point3f[]`, `normal3f[]`, `int[]`, `float[]`, `uniform token`
//! and `bool`, each array on one line, an attribute's metadata (`interpolation`) in parentheses after its value.
//! Numbers are Rust's shortest text for the 32-bit float, which USD's parser reads back to the same float.
//! Read back: the same, line by line; it is not a general USD parser (a stage written by another tool may be
//! summarised in part).

use std::collections::BTreeMap;
use std::io::{self, Write};
use std::path::Path;

use super::super::surface::Surface;
use super::{GeometrySummary, MAGIC, StageSummary};
use crate::{Error, Result};

/// What one stage holds: two meshes and the points.
pub(super) struct Stage<'a> {
    /// The full mesh, `/World/Map`.
    pub visual: &'a Surface<'a>,
    /// The simplified mesh with collision, `/World/Collision`.
    pub collision: &'a Surface<'a>,
    /// The map's points, `/World/Points`.
    pub points: &'a [[f32; 3]],
    /// The points' width, metres.
    pub point_width: f32,
}

/// Writes `stage` as text USD.
pub(super) fn write(w: &mut impl Write, stage: &Stage<'_>) -> io::Result<()> {
    writeln!(
        w,
        "{MAGIC}\n(\n    defaultPrim = \"World\"\n    doc = \"A prepared LiDAR map, written by Aerie: /World/Map \
         is the mesh seen, /World/Collision the simplified mesh collided with, /World/Points the map's points\"\n    \
         metersPerUnit = 1\n    upAxis = \"Z\"\n)\n\ndef Xform \"World\"\n{{"
    )?;
    mesh(w, "Map", stage.visual, false)?;
    writeln!(w)?;
    mesh(w, "Collision", stage.collision, true)?;
    writeln!(w, "\n    def Points \"Points\"\n    {{")?;
    if !stage.points.is_empty() {
        extent(w, stage.points)?;
    }
    vectors(w, "point3f[] points", stage.points, "\n")?;
    writeln!(
        w,
        "        float[] widths = [{}] (\n            interpolation = \"constant\"\n        )\n    }}\n}}",
        stage.point_width
    )
}

/// Writes one `Mesh` prim, with UsdPhysics' collision when `collides` (and then not rendered: purpose guide).
fn mesh(w: &mut impl Write, name: &str, s: &Surface<'_>, collides: bool) -> io::Result<()> {
    if collides {
        writeln!(
            w,
            "    def Mesh \"{name}\" (\n        prepend apiSchemas = [\"PhysicsCollisionAPI\", \
             \"PhysicsMeshCollisionAPI\"]\n    )\n    {{"
        )?;
    } else {
        writeln!(w, "    def Mesh \"{name}\"\n    {{")?;
    }
    extent(w, &s.positions)?;
    write!(w, "        int[] faceVertexCounts = [")?;
    for i in 0..s.triangles.len() {
        w.write_all(if i == 0 { b"3" } else { b", 3" })?;
    }
    write!(w, "]\n        int[] faceVertexIndices = [")?;
    for (i, t) in s.triangles.iter().enumerate() {
        let sep = if i == 0 { "" } else { ", " };
        write!(w, "{sep}{}, {}, {}", t[0], t[1], t[2])?;
    }
    writeln!(w, "]")?;
    vectors(
        w,
        "normal3f[] normals",
        &s.normals,
        " (\n            interpolation = \"vertex\"\n        )\n",
    )?;
    writeln!(w, "        uniform token orientation = \"rightHanded\"")?;
    vectors(w, "point3f[] points", &s.positions, "\n")?;
    writeln!(w, "        uniform token subdivisionScheme = \"none\"")?;
    if collides {
        writeln!(
            w,
            "        uniform token physics:approximation = \"none\"\n        bool physics:collisionEnabled = 1\n        \
             uniform token purpose = \"guide\""
        )?;
    }
    writeln!(w, "    }}")
}

/// Writes the `extent` of `points`: their lowest and highest corner.
fn extent(w: &mut impl Write, points: &[[f32; 3]]) -> io::Result<()> {
    let mut lo = [f32::INFINITY; 3];
    let mut hi = [f32::NEG_INFINITY; 3];
    for p in points {
        for k in 0..3 {
            lo[k] = lo[k].min(p[k]);
            hi[k] = hi[k].max(p[k]);
        }
    }
    vectors(w, "float3[] extent", &[lo, hi], "\n")
}

/// Writes the attribute `declaration = [(x, y, z), ...]` on one line, ended by `tail` (a newline, or the
/// attribute's metadata).
fn vectors(
    w: &mut impl Write,
    declaration: &str,
    values: &[[f32; 3]],
    tail: &str,
) -> io::Result<()> {
    write!(w, "        {declaration} = [")?;
    for (i, v) in values.iter().enumerate() {
        let sep = if i == 0 { "" } else { ", " };
        write!(w, "{sep}({}, {}, {})", v[0], v[1], v[2])?;
    }
    write!(w, "]{tail}")
}

/// The summary of a text USD stage `text` (read from `path`), read line by line as [`write`] writes it.
pub(super) fn summarise(text: &str, path: &Path) -> Result<StageSummary> {
    if !text.starts_with(MAGIC) {
        return Err(Error::format(
            path,
            "line 1",
            format!("not a text USD file: it does not start with `{MAGIC}`"),
        ));
    }
    let mut summary = StageSummary {
        default_prim: None,
        meters_per_unit: None,
        up_axis: None,
        prims: Vec::new(),
        geometry: Vec::new(),
    };
    let mut types: BTreeMap<String, u64> = BTreeMap::new();
    let mut depth: i64 = 0;
    for line in text.lines().map(str::trim) {
        match line {
            "{" => depth += 1,
            "}" => depth -= 1,
            _ => {}
        }
        if depth == 0 {
            let value = |key: &str| line.strip_prefix(key).map(|v| v.trim().trim_matches('"'));
            if let Some(v) = value("defaultPrim =") {
                summary.default_prim = Some(v.to_string());
            } else if let Some(v) = value("metersPerUnit =") {
                summary.meters_per_unit = v.parse().ok();
            } else if let Some(v) = value("upAxis =") {
                summary.up_axis = Some(v.to_string());
            }
        }
        if let Some(def) = line.strip_prefix("def ") {
            let mut words = def.split_whitespace();
            let kind = words.next().unwrap_or("").to_string();
            let name = words.next().unwrap_or("").trim_matches('"').to_string();
            *types.entry(kind.clone()).or_default() += 1;
            if kind == "Mesh" || kind == "Points" {
                summary.geometry.push(GeometrySummary {
                    kind,
                    name,
                    points: 0,
                    faces: 0,
                    api_schemas: Vec::new(),
                });
            }
        } else if let Some(g) = summary.geometry.last_mut() {
            read_attribute(line, g);
        }
    }
    if depth != 0 {
        return Err(Error::format(
            path,
            "end",
            format!("{depth} prim block(s) left open: the file is truncated"),
        ));
    }
    summary.prims = types.into_iter().collect();
    Ok(summary)
}

/// The items of the array that `line` holds (`... = [a, b]`), without the brackets.
fn array(line: &str) -> Option<&str> {
    line.split_once('[')
        .map(|(_, a)| a.trim_end().trim_end_matches(']'))
}

/// Reads the counts and API schemas of a geometry prim from one of its lines.
fn read_attribute(line: &str, g: &mut GeometrySummary) {
    if line.starts_with("point3f[] points =") {
        g.points = array(line).map_or(0, |a| a.matches('(').count() as u64);
    } else if line.starts_with("int[] faceVertexCounts =") {
        g.faces = array(line).map_or(0, |a| {
            a.split(',').filter(|v| !v.trim().is_empty()).count() as u64
        });
    } else if line.contains("apiSchemas =") {
        g.api_schemas = array(line)
            .unwrap_or("")
            .split(',')
            .map(|s| s.trim().trim_matches('"').to_string())
            .filter(|s| !s.is_empty())
            .collect();
    }
}
