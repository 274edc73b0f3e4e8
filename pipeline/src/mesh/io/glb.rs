//! glTF 2.0 binary (.glb): a 12-byte header, a JSON chunk and a BIN chunk (the glTF 2.0 specification,
//! "GLB File Format Specification"). One scene, one node, one mesh, one triangle primitive: POSITION and
//! NORMAL (float VEC3) and 32-bit indices. glTF is Y up: a Z-up point (x, y, z) is written (x, z, -y); the node's
//! translation holds the written offset (in the same axes). Read back: every triangle primitive of the first
//! mesh, indices of any width, positions in any stride, the first node's translation; axes turned back to Z up.

use std::io::Write;
use std::path::Path;

use serde_json::{Value, json};

use super::{Mesh, assemble, shifted};
use crate::{Error, Result};

const MAGIC: u32 = 0x4654_6C67; // "glTF"
const JSON_CHUNK: u32 = 0x4E4F_534A; // "JSON"
const BIN_CHUNK: u32 = 0x004E_4942; // "BIN\0"
const FLOAT: u32 = 5126;
const UINT: u32 = 5125;

/// Z up to glTF's Y up.
fn to_y_up(p: [f32; 3]) -> [f32; 3] {
    [p[0], p[2], -p[1]]
}

/// glTF's Y up to Z up.
fn to_z_up(p: [f32; 3]) -> [f32; 3] {
    [p[0], -p[2], p[1]]
}

/// Writes the GLB of `mesh`, coordinates relative to `offset`.
pub(super) fn write(mesh: &Mesh, offset: [f64; 3], w: &mut impl Write) -> std::io::Result<()> {
    let positions: Vec<[f32; 3]> = shifted(mesh, offset).into_iter().map(to_y_up).collect();
    let normals: Option<Vec<[f32; 3]>> = mesh
        .normals()
        .map(|n| n.iter().map(|v| to_y_up(*v)).collect());
    let mut bin: Vec<u8> = Vec::new();
    bin.extend_from_slice(bytemuck::cast_slice(&positions));
    if let Some(n) = &normals {
        bin.extend_from_slice(bytemuck::cast_slice(n));
    }
    bin.extend_from_slice(bytemuck::cast_slice(mesh.triangles()));
    let json = document(mesh, &positions, normals.is_some(), offset, bin.len());
    let mut text = serde_json::to_vec(&json).map_err(std::io::Error::other)?;
    while !text.len().is_multiple_of(4) {
        text.push(b' ');
    }
    while !bin.len().is_multiple_of(4) {
        bin.push(0);
    }
    let total = 12 + 8 + text.len() + 8 + bin.len();
    let total =
        u32::try_from(total).map_err(|_| std::io::Error::other("a .glb holds at most 4 GiB"))?;
    for word in [MAGIC, 2, total, text.len() as u32, JSON_CHUNK] {
        w.write_all(&word.to_le_bytes())?;
    }
    w.write_all(&text)?;
    for word in [bin.len() as u32, BIN_CHUNK] {
        w.write_all(&word.to_le_bytes())?;
    }
    w.write_all(&bin)
}

/// The glTF JSON of the mesh whose (Y-up) positions are `positions`.
fn document(
    mesh: &Mesh,
    positions: &[[f32; 3]],
    normals: bool,
    offset: [f64; 3],
    bin: usize,
) -> Value {
    let (mut lo, mut hi) = ([f32::INFINITY; 3], [f32::NEG_INFINITY; 3]);
    for p in positions {
        for a in 0..3 {
            lo[a] = lo[a].min(p[a]);
            hi[a] = hi[a].max(p[a]);
        }
    }
    if positions.is_empty() {
        (lo, hi) = ([0.0; 3], [0.0; 3]);
    }
    let n = positions.len();
    let vbytes = 12 * n;
    let mut accessors = vec![
        json!({"bufferView": 0, "componentType": FLOAT, "count": n, "type": "VEC3",
        "min": lo, "max": hi}),
    ];
    let mut views =
        vec![json!({"buffer": 0, "byteOffset": 0, "byteLength": vbytes, "target": 34962})];
    let mut attributes = json!({"POSITION": 0});
    if normals {
        attributes["NORMAL"] = json!(1);
        accessors
            .push(json!({"bufferView": 1, "componentType": FLOAT, "count": n, "type": "VEC3"}));
        views.push(
            json!({"buffer": 0, "byteOffset": vbytes, "byteLength": vbytes, "target": 34962}),
        );
    }
    let ibytes = 12 * mesh.triangles().len();
    views.push(
        json!({"buffer": 0, "byteOffset": bin - ibytes, "byteLength": ibytes, "target": 34963}),
    );
    accessors.push(json!({"bufferView": views.len() - 1, "componentType": UINT,
        "count": 3 * mesh.triangles().len(), "type": "SCALAR"}));
    let mut node = json!({"mesh": 0, "name": "aerie_mesh"});
    if offset != [0.0; 3] {
        node["translation"] = json!([offset[0], offset[2], -offset[1]]);
    }
    json!({
        "asset": {"version": "2.0", "generator": "Aerie (metres; Z-up map turned Y-up: (x, y, z) -> (x, z, -y))"},
        "scene": 0,
        "scenes": [{"nodes": [0]}],
        "nodes": [node],
        "meshes": [{"primitives": [{"attributes": attributes, "indices": accessors.len() - 1, "mode": 4}]}],
        "accessors": accessors,
        "bufferViews": views,
        "buffers": [{"byteLength": bin}],
    })
}

/// Reads a GLB mesh from its bytes.
pub(super) fn read(path: &Path, data: &[u8]) -> Result<Mesh> {
    let bad = |place: &str, msg: String| Error::format(path, place, msg);
    let word = |at: usize| {
        data.get(at..at + 4)
            .map(|b| u32::from_le_bytes([b[0], b[1], b[2], b[3]]))
    };
    if word(0) != Some(MAGIC) || word(4) != Some(2) {
        return Err(bad(
            "header",
            "expected the glTF 2 binary header (\"glTF\", version 2)".into(),
        ));
    }
    let (Some(jlen), Some(JSON_CHUNK)) = (word(12), word(16)) else {
        return Err(bad("byte 12", "expected the JSON chunk".into()));
    };
    let jend = 20 + jlen as usize;
    let text = data
        .get(20..jend)
        .ok_or_else(|| bad("JSON chunk", "the file ends inside it".into()))?;
    let doc: Value = serde_json::from_slice(text).map_err(|e| bad("JSON chunk", e.to_string()))?;
    let bin = match (word(jend), word(jend + 4)) {
        (Some(len), Some(BIN_CHUNK)) => data
            .get(jend + 8..jend + 8 + len as usize)
            .ok_or_else(|| bad("BIN chunk", "the file ends inside it".into()))?,
        _ => &[][..],
    };
    let ctx = Ctx {
        doc: &doc,
        bin,
        path,
    };
    let mut origin = [0.0f64; 3];
    if let Some(t) = doc["nodes"][0]["translation"].as_array() {
        let v: Vec<f64> = t.iter().filter_map(Value::as_f64).collect();
        if v.len() == 3 {
            origin = [v[0], -v[2], v[1]];
        }
    }
    let (mut vertices, mut normals, mut triangles) = (Vec::new(), Vec::new(), Vec::new());
    let prims = doc["meshes"][0]["primitives"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    for p in prims
        .iter()
        .filter(|p| p["mode"].as_u64().unwrap_or(4) == 4)
    {
        let base = vertices.len() as u32;
        let pos = ctx.vec3(&p["attributes"]["POSITION"])?;
        let n = pos.len();
        vertices.extend(pos.into_iter().map(to_z_up));
        if let Ok(nn) = ctx.vec3(&p["attributes"]["NORMAL"]) {
            normals.extend(nn.into_iter().map(to_z_up));
        }
        let idx = if p["indices"].is_null() {
            (0..n as u32).collect()
        } else {
            ctx.indices(&p["indices"])?
        };
        triangles.extend(
            idx.chunks_exact(3)
                .map(|t| [t[0] + base, t[1] + base, t[2] + base]),
        );
    }
    let normals = (normals.len() == vertices.len() && !normals.is_empty()).then_some(normals);
    assemble(path, origin, vertices, normals, triangles)
}

/// The parsed JSON and the BIN chunk.
struct Ctx<'a> {
    doc: &'a Value,
    bin: &'a [u8],
    path: &'a Path,
}

impl Ctx<'_> {
    /// The bytes of accessor `a`'s elements: (data from its first element, count, stride, component type).
    fn view(&self, a: &Value) -> Result<(&[u8], usize, usize, u64)> {
        let bad = |m: &str| Error::format(self.path, "accessors", m.to_string());
        let acc =
            &self.doc["accessors"][a.as_u64().ok_or_else(|| bad("missing accessor"))? as usize];
        let view = &self.doc["bufferViews"][acc["bufferView"]
            .as_u64()
            .ok_or_else(|| bad("accessor without bufferView"))?
            as usize];
        if view["buffer"].as_u64() != Some(0) || !self.doc["buffers"][0]["uri"].is_null() {
            return Err(Error::unsupported(
                self.path,
                "a glTF buffer outside the .glb's BIN chunk",
            ));
        }
        let start =
            view["byteOffset"].as_u64().unwrap_or(0) + acc["byteOffset"].as_u64().unwrap_or(0);
        let ty = acc["componentType"].as_u64().unwrap_or(0);
        let count = acc["count"]
            .as_u64()
            .ok_or_else(|| bad("accessor without count"))? as usize;
        let data = self
            .bin
            .get(start as usize..)
            .ok_or_else(|| bad("accessor past the BIN chunk"))?;
        let stride = view["byteStride"].as_u64().unwrap_or(0) as usize;
        Ok((data, count, stride, ty))
    }

    /// A float VEC3 accessor's values.
    fn vec3(&self, a: &Value) -> Result<Vec<[f32; 3]>> {
        let (data, count, stride, ty) = self.view(a)?;
        if ty != u64::from(FLOAT) {
            return Err(Error::unsupported(
                self.path,
                "positions or normals not in float",
            ));
        }
        let stride = if stride == 0 { 12 } else { stride };
        (0..count)
            .map(|i| {
                let b = data.get(i * stride..i * stride + 12).ok_or_else(|| {
                    Error::format(self.path, "accessors", "vertex data past the BIN chunk")
                })?;
                Ok([0, 4, 8].map(|o| f32::from_le_bytes([b[o], b[o + 1], b[o + 2], b[o + 3]])))
            })
            .collect()
    }

    /// An index accessor's values (unsigned byte, short or int).
    fn indices(&self, a: &Value) -> Result<Vec<u32>> {
        let (data, count, _, ty) = self.view(a)?;
        let size = match ty {
            5121 => 1,
            5123 => 2,
            5125 => 4,
            _ => {
                return Err(Error::format(
                    self.path,
                    "accessors",
                    format!("index component type {ty}"),
                ));
            }
        };
        let bytes = data.get(..count * size).ok_or_else(|| {
            Error::format(self.path, "accessors", "index data past the BIN chunk")
        })?;
        Ok(bytes
            .chunks_exact(size)
            .map(|b| match size {
                1 => u32::from(b[0]),
                2 => u32::from(u16::from_le_bytes([b[0], b[1]])),
                _ => u32::from_le_bytes([b[0], b[1], b[2], b[3]]),
            })
            .collect())
    }
}
