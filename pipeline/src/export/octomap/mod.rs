//! OctoMap's binary tree (`.bt`), for planners built on OctoMap: [`write`] makes one of a map, [`read`] reads one
//! back with its [`OctreeSummary`] (what `aerie info` shows).
//!
//! Occupied voxels are where the map has points; free ones lie along the rays from the scanners to what they
//! saw, where the scanners' positions are known (E57 poses, PCD `VIEWPOINT`, the poses a map keeps), so an
//! exploration planner sees known free space and not only walls (docs/algorithms.md, section 34). The tree is
//! written as OctoMap's `AbstractOccupancyOcTree::writeBinary` writes it, after its `toMaxLikelihood` and
//! `prune`: the same text header, the same node encoding, the same pruned tree, so the bytes depend only on the
//! map and the resolution.
//!
//! It lives in `export` and not in `io`: `io`'s formats are point clouds read into a [`Cloud`], and a `.bt` is
//! an occupancy tree, written only from a prepared map and read back only to be summarised.

mod tree;
mod voxels;

pub use tree::{Leaf, decode_morton, morton};

use std::io::Write;
use std::ops::RangeInclusive;
use std::path::Path;

use serde::Serialize;

use super::ExportError;
use crate::io::atomic;
use crate::{Cloud, Error, Result};

/// The resolutions a tree can be written at, metres: finer ones make trees too large to plan in, coarser ones
/// hide doors.
pub const RESOLUTION_RANGE_M: RangeInclusive<f64> = 0.01..=10.0;

/// The first line of every `.bt` file, by which OctoMap recognises one.
const MAGIC: &str = "# Octomap OcTree binary file";

/// What a `.bt` file holds, as `aerie info` shows it.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct OctreeSummary {
    /// The tree's class, as its header names it (`OcTree`).
    pub id: String,
    /// The voxel's edge, metres.
    pub resolution_m: f64,
    /// Nodes in the tree, the root included (the header's `size`, which the tree matches).
    pub nodes: u64,
    /// Occupied leaves (pruned: one leaf may be a cube of many voxels).
    pub occupied_leaves: u64,
    /// Free leaves.
    pub free_leaves: u64,
    /// Volume of the occupied leaves, cubic metres.
    pub occupied_m3: f64,
    /// Volume of the free leaves, cubic metres.
    pub free_m3: f64,
    /// Lowest and highest corner of the known (occupied or free) space, metres in the tree's frame; `None` for
    /// a tree with no leaves.
    pub bounds: Option<([f64; 3], [f64; 3])>,
}

impl std::fmt::Display for OctreeSummary {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        writeln!(f, "  format      OctoMap {} (.bt)", self.id)?;
        writeln!(f, "  resolution  {} m", self.resolution_m)?;
        writeln!(f, "  nodes       {}", self.nodes)?;
        writeln!(
            f,
            "  occupied    {} leaves, {:.3} m^3",
            self.occupied_leaves, self.occupied_m3
        )?;
        writeln!(
            f,
            "  free        {} leaves, {:.3} m^3",
            self.free_leaves, self.free_m3
        )?;
        if let Some((lo, hi)) = self.bounds {
            writeln!(f, "  bounds min  {:.3} {:.3} {:.3}", lo[0], lo[1], lo[2])?;
            writeln!(f, "         max  {:.3} {:.3} {:.3}", hi[0], hi[1], hi[2])?;
        }
        Ok(())
    }
}

/// Writes `cloud` as an OctoMap tree of `resolution_m` voxels to `path`, in the map's frame minus `shift`
/// (metres; zero to keep the map's frame). Nothing is left at `path` on error.
pub(super) fn write(
    cloud: &Cloud,
    path: &Path,
    resolution_m: f64,
    shift: [f64; 3],
) -> Result<(), ExportError> {
    if cloud.is_empty() {
        return Err(ExportError::EmptyMap {
            path: path.to_path_buf(),
        });
    }
    if !RESOLUTION_RANGE_M.contains(&resolution_m) {
        return Err(bad_resolution(
            path,
            resolution_m,
            format!(
                "OctoMap's voxel must be from {} to {} m",
                RESOLUTION_RANGE_M.start(),
                RESOLUTION_RANGE_M.end()
            ),
        ));
    }
    let grid = voxels::Grid {
        resolution_m,
        shift,
    };
    let leaves = voxels::leaves(cloud, &grid)
        .map_err(|_| bad_resolution(path, resolution_m, too_fine(cloud, shift)))?;
    let (data, nodes) = tree::encode(&tree::prune(leaves));
    let header = format!(
        "{MAGIC}\n# (feel free to add / change comments, but leave the first line as it is!)\n#\nid OcTree\n\
         size {nodes}\nres {resolution_m}\ndata\n"
    );
    atomic::write_atomic_buffered(path, |w| {
        w.write_all(header.as_bytes())
            .and_then(|()| w.write_all(&data))
            .map_err(|e| Error::io(path, e))
    })
    .map_err(|source| ExportError::Write {
        path: path.to_path_buf(),
        source,
    })
}

/// [`ExportError::BadResolution`] for `path`.
fn bad_resolution(path: &Path, resolution_m: f64, reason: String) -> ExportError {
    ExportError::BadResolution {
        path: path.to_path_buf(),
        resolution_m,
        reason,
    }
}

/// Why a map (moved by `shift`) does not fit a tree at the resolution asked, with the finest one that fits it.
fn too_fine(cloud: &Cloud, shift: [f64; 3]) -> String {
    let (lo, hi) = cloud.bounds().unwrap_or(([0.0; 3], [0.0; 3]));
    let extent = (0..3).map(|k| hi[k] - lo[k]).fold(0.0, f64::max);
    let reach = (0..3)
        .map(|k| (lo[k] - shift[k]).abs().max((hi[k] - shift[k]).abs()))
        .fold(0.0, f64::max);
    format!(
        "the map spans {extent:.1} m and reaches {reach:.1} m from the tree's origin, more than OctoMap's 32768 \
         voxels: use {:.3} m or coarser",
        (reach / 32768.0 * 1.01).max(*RESOLUTION_RANGE_M.start())
    )
}

/// A map's resolution (stored as `f32`) as the decimal its recipe gave, for a tree's header: `0.1`, not the
/// `0.10000000149011612` that widening the `f32` gives.
pub fn resolution_of_map(resolution: f32) -> f64 {
    resolution
        .to_string()
        .parse()
        .unwrap_or(f64::from(resolution))
}

/// Whether the file at `path` starts with the line of an OctoMap binary tree (false when it cannot be read).
pub fn is_octree_file(path: &Path) -> bool {
    use std::io::Read;
    let mut head = [0u8; MAGIC.len()];
    std::fs::File::open(path)
        .and_then(|mut f| f.read_exact(&mut head))
        .is_ok_and(|()| head == MAGIC.as_bytes())
}

/// Reads the `.bt` file at `path`: its header and every node of its tree, each checked. A truncated or
/// corrupted file is an [`Error::Format`] naming the byte or the header line.
pub fn read(path: &Path) -> Result<(OctreeSummary, Vec<Leaf>)> {
    let data = std::fs::read(path).map_err(|e| Error::io(path, e))?;
    read_bytes(&data, path)
}

/// [`read`] of a file's bytes held in memory; `path` names it in errors.
pub fn read_bytes(data: &[u8], path: &Path) -> Result<(OctreeSummary, Vec<Leaf>)> {
    let header = Header::parse(data, path)?;
    let body = &data[header.data_at..];
    let (leaves, nodes) = if header.size == 0 && body.is_empty() {
        (Vec::new(), 0)
    } else {
        tree::decode(body, path, header.data_at)?
    };
    if nodes != header.size {
        return Err(Error::format(
            path,
            "header `size`",
            format!(
                "the header says {} nodes and the tree holds {nodes}: the file is truncated or corrupted",
                header.size
            ),
        ));
    }
    Ok((summarise(header, nodes, &leaves), leaves))
}

/// The figures of a tree read back.
fn summarise(header: Header, nodes: u64, leaves: &[Leaf]) -> OctreeSummary {
    let res = header.resolution_m;
    let mut summary = OctreeSummary {
        id: header.id,
        resolution_m: res,
        nodes,
        occupied_leaves: 0,
        free_leaves: 0,
        occupied_m3: 0.0,
        free_m3: 0.0,
        bounds: None,
    };
    for leaf in leaves {
        let (key, edge) = leaf.cube();
        let volume = (f64::from(edge) * res).powi(3);
        if leaf.occupied {
            summary.occupied_leaves += 1;
            summary.occupied_m3 += volume;
        } else {
            summary.free_leaves += 1;
            summary.free_m3 += volume;
        }
        let lo = key.map(|k| (f64::from(k) - tree::KEY_ZERO as f64) * res);
        let hi = lo.map(|v| v + f64::from(edge) * res);
        let (blo, bhi) = summary.bounds.get_or_insert((lo, hi));
        for k in 0..3 {
            blo[k] = blo[k].min(lo[k]);
            bhi[k] = bhi[k].max(hi[k]);
        }
    }
    summary
}

/// A `.bt` file's text header.
struct Header {
    id: String,
    size: u64,
    resolution_m: f64,
    /// Where the tree's bytes start: after the `data` line.
    data_at: usize,
}

impl Header {
    /// Reads the header as OctoMap's `AbstractOcTree::readHeader` does: the magic first line, then `#` comments
    /// and `id`, `size`, `res` lines in any order, up to the `data` line.
    fn parse(data: &[u8], path: &Path) -> Result<Header> {
        if !data.starts_with(MAGIC.as_bytes()) {
            return Err(Error::format(
                path,
                "line 1",
                format!("expected {MAGIC:?}: not an OctoMap binary tree (.bt)"),
            ));
        }
        let (mut id, mut size, mut res) = (None, None, None);
        let (mut at, mut number) = (0, 0);
        loop {
            number += 1;
            let Some(len) = data[at..].iter().position(|&b| b == b'\n') else {
                return Err(Error::format(
                    path,
                    format!("line {number}"),
                    "the file ends in its header, before the `data` line: it is truncated",
                ));
            };
            let line = String::from_utf8_lossy(&data[at..at + len]);
            at += len + 1;
            let place = format!("line {number}");
            let mut words = line.split_whitespace();
            match words.next() {
                Some("data") => {
                    return Ok(Header {
                        id: id.ok_or_else(|| missing(path, "id"))?,
                        size: size.ok_or_else(|| missing(path, "size"))?,
                        resolution_m: res.ok_or_else(|| missing(path, "res"))?,
                        data_at: at,
                    });
                }
                Some("id") => id = Some(parse_id(words.next(), path, &place)?),
                Some("size") => {
                    size = Some(parse_value(words.next(), path, &place, "a node count")?);
                }
                Some("res") => res = Some(parse_res(words.next(), path, &place)?),
                _ => {}
            }
        }
    }
}

/// A header without one of its keys.
fn missing(path: &Path, key: &str) -> Error {
    Error::format(path, "header", format!("no `{key}` line before `data`"))
}

/// The tree's class: only `OcTree` (other classes store more per node).
fn parse_id(word: Option<&str>, path: &Path, place: &str) -> Result<String> {
    match word {
        Some("OcTree") => Ok("OcTree".to_string()),
        Some(other) => Err(Error::unsupported(
            path,
            format!("{place}: a tree of class {other:?}: Aerie reads OcTree (.bt) files only"),
        )),
        None => Err(Error::format(path, place, "`id` without a tree class")),
    }
}

/// A number after a header key.
fn parse_value<T: std::str::FromStr>(
    word: Option<&str>,
    path: &Path,
    place: &str,
    what: &str,
) -> Result<T> {
    word.and_then(|w| w.parse().ok()).ok_or_else(|| {
        Error::format(
            path,
            place,
            format!("expected {what}, found {:?}", word.unwrap_or("")),
        )
    })
}

/// The resolution: a positive finite number of metres.
fn parse_res(word: Option<&str>, path: &Path, place: &str) -> Result<f64> {
    let res: f64 = parse_value(word, path, place, "a resolution in metres")?;
    if res.is_finite() && res > 0.0 {
        Ok(res)
    } else {
        Err(Error::format(
            path,
            place,
            format!("the resolution {res} is not a positive length"),
        ))
    }
}

#[cfg(test)]
mod tests;
