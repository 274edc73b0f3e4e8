//! Wavefront OBJ meshes: `v x y z`, `vn x y z` and `f a//a b//b c//c` lines (1-based; the normal of a vertex
//! has its index). Read back: `v`, `vn` and `f` in any of their index forms (`a`, `a/t`, `a//n`, `a/t/n`,
//! negative = from the end), polygons split into fans; other lines are skipped.

use std::io::Write;
use std::path::Path;

use super::{Mesh, assemble, parse_origin, shifted};
use crate::{Error, Result};

/// Writes the OBJ of `mesh`, coordinates relative to `offset`.
pub(super) fn write(mesh: &Mesh, offset: [f64; 3], w: &mut impl Write) -> std::io::Result<()> {
    writeln!(w, "# made by Aerie: metres, Z up")?;
    if offset != [0.0; 3] {
        writeln!(
            w,
            "# aerie_origin {} {} {}",
            offset[0], offset[1], offset[2]
        )?;
    }
    for v in shifted(mesh, offset) {
        writeln!(w, "v {} {} {}", v[0], v[1], v[2])?;
    }
    let normals = mesh.normals();
    if let Some(n) = normals {
        for n in n {
            writeln!(w, "vn {} {} {}", n[0], n[1], n[2])?;
        }
    }
    for t in mesh.triangles() {
        let [a, b, c] = t.map(|i| i + 1);
        if normals.is_some() {
            writeln!(w, "f {a}//{a} {b}//{b} {c}//{c}")?;
        } else {
            writeln!(w, "f {a} {b} {c}")?;
        }
    }
    Ok(())
}

/// Reads an OBJ mesh from its bytes.
pub(super) fn read(path: &Path, data: &[u8]) -> Result<Mesh> {
    let text = std::str::from_utf8(data).map_err(|e| {
        Error::format(
            path,
            format!("byte {}", e.valid_up_to()),
            "an OBJ file is text (UTF-8)",
        )
    })?;
    let (mut vertices, mut normals, mut triangles) = (Vec::new(), Vec::new(), Vec::new());
    let mut origin = [0.0; 3];
    let mut ids = Vec::new();
    for (n, line) in text.lines().enumerate() {
        let place = || format!("line {}", n + 1);
        let mut words = line.split_whitespace();
        match words.next() {
            Some("#") => {
                if let Some(o) = parse_origin(words) {
                    origin = o;
                }
            }
            Some(kind @ ("v" | "vn")) => {
                let mut p = [0.0f32; 3];
                for v in &mut p {
                    *v = words
                        .next()
                        .and_then(|w| w.parse().ok())
                        .ok_or_else(|| Error::format(path, place(), "expected three numbers"))?;
                }
                if kind == "v" {
                    vertices.push(p);
                } else {
                    normals.push(p);
                }
            }
            Some("f") => {
                ids.clear();
                for w in words {
                    ids.push(index(w, vertices.len()).ok_or_else(|| {
                        Error::format(path, place(), format!("bad vertex reference {w:?}"))
                    })?);
                }
                for i in 1..ids.len().saturating_sub(1) {
                    let t = [ids[0], ids[i], ids[i + 1]];
                    if t[0] != t[1] && t[1] != t[2] && t[0] != t[2] {
                        triangles.push(t);
                    }
                }
            }
            _ => {}
        }
    }
    let normals = (normals.len() == vertices.len() && !normals.is_empty()).then_some(normals);
    assemble(path, origin, vertices, normals, triangles)
}

/// The 0-based vertex index of a face word (`a`, `a/t`, `a//n`, `a/t/n`), with `count` vertices read so far.
fn index(word: &str, count: usize) -> Option<u32> {
    let v: i64 = word.split('/').next()?.parse().ok()?;
    let i = if v < 0 { count as i64 + v } else { v - 1 };
    u32::try_from(i).ok()
}
