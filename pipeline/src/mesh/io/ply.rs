//! PLY meshes: written binary little endian (float x y z, float nx ny nz, `list uchar int vertex_indices`);
//! read in ASCII or binary little endian with any scalar types, any other elements skipped row by row, and
//! polygons split into fans.

use std::io::{Read, Write};
use std::path::Path;

use super::{Mesh, assemble, parse_origin, shifted};
use crate::io::fields::read_scalar;
use crate::io::ply::kind_of;
use crate::{Error, Result, ScalarKind};

/// Writes the binary PLY of `mesh`, coordinates relative to `offset`.
pub(super) fn write(mesh: &Mesh, offset: [f64; 3], w: &mut impl Write) -> std::io::Result<()> {
    let normals = mesh.normals();
    writeln!(
        w,
        "ply\nformat binary_little_endian 1.0\ncomment made by Aerie: metres, Z up"
    )?;
    if offset != [0.0; 3] {
        writeln!(
            w,
            "comment aerie_origin {} {} {}",
            offset[0], offset[1], offset[2]
        )?;
    }
    writeln!(w, "element vertex {}", mesh.vertices().len())?;
    writeln!(w, "property float x\nproperty float y\nproperty float z")?;
    if normals.is_some() {
        writeln!(w, "property float nx\nproperty float ny\nproperty float nz")?;
    }
    writeln!(w, "element face {}", mesh.triangles().len())?;
    writeln!(w, "property list uchar int vertex_indices\nend_header")?;
    for (i, v) in shifted(mesh, offset).iter().enumerate() {
        w.write_all(bytemuck::cast_slice(v))?;
        if let Some(n) = normals {
            w.write_all(bytemuck::cast_slice(&n[i]))?;
        }
    }
    for t in mesh.triangles() {
        w.write_all(&[3])?;
        w.write_all(bytemuck::cast_slice(&t.map(|i| i as i32)))?;
    }
    Ok(())
}

/// Whether the PLY at `path` declares a face element with at least one face.
pub(super) fn has_faces(path: &Path) -> bool {
    let mut head = Vec::new();
    let read = std::fs::File::open(path).and_then(|f| f.take(1 << 16).read_to_end(&mut head));
    if read.is_err() {
        return false;
    }
    let text = String::from_utf8_lossy(&head);
    text.lines()
        .take_while(|l| l.trim() != "end_header")
        .any(|l| {
            let w: Vec<&str> = l.split_whitespace().collect();
            w.len() == 3
                && w[0] == "element"
                && w[1] == "face"
                && w[2].parse::<u64>().is_ok_and(|n| n > 0)
        })
}

/// One property of an element: a scalar, or a list with its count's type.
#[derive(Clone, Debug)]
struct Property {
    name: String,
    ty: ScalarKind,
    list: Option<ScalarKind>,
}

/// An element of the header: name, row count, properties.
#[derive(Clone, Debug)]
struct Element {
    name: String,
    count: usize,
    properties: Vec<Property>,
}

/// The header: whether the body is ASCII, the elements, the origin comment, and where the body starts.
struct Header {
    ascii: bool,
    elements: Vec<Element>,
    origin: [f64; 3],
    body: usize,
}

fn header(path: &Path, data: &[u8]) -> Result<Header> {
    let bad = |place: &str, msg: &str| Error::format(path, place, msg);
    let end = find(data, b"end_header")
        .ok_or_else(|| bad("header", "no end_header line: not a PLY file"))?;
    let mut body = end + b"end_header".len();
    body += match data.get(body..) {
        Some([b'\r', b'\n', ..]) => 2,
        Some([b'\n', ..]) => 1,
        _ => return Err(bad("header", "end_header must end its line")),
    };
    let text = String::from_utf8_lossy(&data[..end]);
    if !text.starts_with("ply") {
        return Err(bad("line 1", "expected `ply`"));
    }
    let mut h = Header {
        ascii: false,
        elements: Vec::new(),
        origin: [0.0; 3],
        body,
    };
    for (n, line) in text.lines().enumerate().skip(1) {
        let place = format!("header line {}", n + 1);
        let w: Vec<&str> = line.split_whitespace().collect();
        match w.as_slice() {
            ["format", "ascii", _] => h.ascii = true,
            ["format", "binary_little_endian", _] => h.ascii = false,
            ["format", other, ..] => {
                return Err(Error::unsupported(
                    path,
                    format!("PLY format {other} (ascii and binary_little_endian are read)"),
                ));
            }
            ["comment", rest @ ..] => {
                if let Some(o) = parse_origin(rest.iter().copied()) {
                    h.origin = o;
                }
            }
            ["element", name, count] => h.elements.push(Element {
                name: (*name).to_string(),
                count: count
                    .parse()
                    .map_err(|_| bad(&place, "expected a row count"))?,
                properties: Vec::new(),
            }),
            ["property", "list", count, ty, name] => {
                let e = h
                    .elements
                    .last_mut()
                    .ok_or_else(|| bad(&place, "property before any element"))?;
                let (Some(c), Some(t)) = (kind_of(count), kind_of(ty)) else {
                    return Err(bad(&place, "unknown list types"));
                };
                e.properties.push(Property {
                    name: (*name).to_string(),
                    ty: t,
                    list: Some(c),
                });
            }
            ["property", ty, name] => {
                let e = h
                    .elements
                    .last_mut()
                    .ok_or_else(|| bad(&place, "property before any element"))?;
                let t = kind_of(ty).ok_or_else(|| bad(&place, "unknown property type"))?;
                e.properties.push(Property {
                    name: (*name).to_string(),
                    ty: t,
                    list: None,
                });
            }
            ["obj_info", ..] | [] => {}
            _ => return Err(bad(&place, "expected format, comment, element or property")),
        }
    }
    Ok(h)
}

fn find(hay: &[u8], needle: &[u8]) -> Option<usize> {
    hay.windows(needle.len()).position(|w| w == needle)
}

/// Reads values from a PLY body, binary or ASCII.
enum Body<'a> {
    Binary(&'a [u8], usize),
    Ascii(std::str::SplitAsciiWhitespace<'a>),
}

impl Body<'_> {
    fn value(&mut self, ty: ScalarKind) -> Option<f64> {
        match self {
            Body::Ascii(words) => words.next()?.parse().ok(),
            Body::Binary(data, at) => {
                let v = read_scalar(data.get(*at..)?, ty, false)?;
                *at += ty.size();
                Some(v)
            }
        }
    }
}

/// Reads a PLY mesh from its bytes.
pub(super) fn read(path: &Path, data: &[u8]) -> Result<Mesh> {
    let h = header(path, data)?;
    let mut body = if h.ascii {
        let text = std::str::from_utf8(&data[h.body..])
            .map_err(|_| Error::format(path, "body", "an ASCII PLY body must be text"))?;
        Body::Ascii(text.split_ascii_whitespace())
    } else {
        Body::Binary(data, h.body)
    };
    let (mut vertices, mut normals, mut triangles) = (Vec::new(), Vec::new(), Vec::new());
    for e in &h.elements {
        let at = |p: &str| {
            e.properties
                .iter()
                .position(|q| q.name == p && q.list.is_none())
        };
        let xyz = [at("x"), at("y"), at("z")];
        let nxyz = [at("nx"), at("ny"), at("nz")];
        let face = e.properties.iter().position(|q| {
            q.list.is_some() && (q.name == "vertex_indices" || q.name == "vertex_index")
        });
        let mut row = vec![0.0f64; e.properties.len()];
        let mut list = Vec::new();
        for r in 0..e.count {
            let short = || {
                Error::format(
                    path,
                    format!("{} {r}", e.name),
                    "the file ends inside this row",
                )
            };
            for (k, p) in e.properties.iter().enumerate() {
                match p.list {
                    None => row[k] = body.value(p.ty).ok_or_else(short)?,
                    Some(count_ty) => {
                        let n = body.value(count_ty).ok_or_else(short)? as usize;
                        let keep = Some(k) == face;
                        list.clear();
                        for _ in 0..n {
                            let v = body.value(p.ty).ok_or_else(short)?;
                            if keep {
                                list.push(v);
                            }
                        }
                    }
                }
            }
            if e.name == "vertex" {
                let get = |i: Option<usize>| i.map(|i| row[i] as f32);
                let (Some(x), Some(y), Some(z)) = (get(xyz[0]), get(xyz[1]), get(xyz[2])) else {
                    return Err(Error::format(
                        path,
                        "element vertex",
                        "expected properties x, y and z",
                    ));
                };
                vertices.push([x, y, z]);
                if let (Some(a), Some(b), Some(c)) = (get(nxyz[0]), get(nxyz[1]), get(nxyz[2])) {
                    normals.push([a, b, c]);
                }
            } else if e.name == "face" && face.is_some() {
                fan(&list, &mut triangles, path, r)?;
            }
        }
    }
    let normals = (!normals.is_empty()).then_some(normals);
    assemble(path, h.origin, vertices, normals, triangles)
}

/// The triangles of a polygon (a fan from its first vertex), repeated vertices skipped.
fn fan(list: &[f64], out: &mut Vec<[u32; 3]>, path: &Path, row: usize) -> Result<()> {
    let mut ids = Vec::with_capacity(list.len());
    for &v in list {
        if !(0.0..=f64::from(u32::MAX)).contains(&v) {
            return Err(Error::format(
                path,
                format!("face {row}"),
                format!("vertex index {v}"),
            ));
        }
        ids.push(v as u32);
    }
    for i in 1..ids.len().saturating_sub(1) {
        let t = [ids[0], ids[i], ids[i + 1]];
        if t[0] != t[1] && t[1] != t[2] && t[0] != t[2] {
            out.push(t);
        }
    }
    Ok(())
}
