//! The octree of an OctoMap `.bt` file: voxel keys, leaves in Morton order, pruning, and the tree's binary
//! encoding as OctoMap's `OccupancyOcTreeBase::writeBinaryNode` writes it and `readBinaryNode` reads it.
//!
//! The tree is 16 levels deep: a voxel's key is 16 bits per axis, `floor(coordinate / resolution) + 32768`, and
//! child `i` of a node holds the half of each axis that bit `i & 1` (x), `i & 2` (y), `i & 4` (z) names. A
//! Morton code that puts x in the lowest bit of each triple therefore sorts the voxels in the order the encoding
//! visits them, so the tree is written from a sorted list of leaves without building nodes.

use std::path::Path;

use crate::{Error, Result};

/// The tree's depth: OctoMap's `tree_depth`, 16 levels below the root.
pub(super) const DEPTH: u32 = 16;
/// The key of the cell whose lower corner is at 0 on an axis: OctoMap's `tree_max_val`.
pub(super) const KEY_ZERO: i64 = 1 << 15;

/// A leaf of the tree: a cube of voxels known to be occupied or free.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct Leaf {
    /// The Morton code of the leaf's lowest voxel (48 bits: x, y, z interleaved, x lowest).
    pub code: u64,
    /// The leaf's depth below the root: 16 for one voxel, 15 for a cube of 2 x 2 x 2 voxels, ...
    pub depth: u8,
    /// Occupied (true) or free (false).
    pub occupied: bool,
}

impl Leaf {
    /// The leaf's lowest voxel key and its edge in voxels.
    pub fn cube(&self) -> ([u16; 3], u32) {
        (
            decode_morton(self.code),
            1 << (DEPTH - u32::from(self.depth)),
        )
    }
}

/// How many voxel codes a node at `depth` covers.
fn span(depth: u32) -> u64 {
    1 << (3 * (DEPTH - depth))
}

/// The Morton code of a voxel key: bit `b` of x, y, z at bits `3b`, `3b + 1`, `3b + 2`.
pub fn morton(key: [u16; 3]) -> u64 {
    let spread = |v: u16| {
        let mut x = u64::from(v);
        x = (x | (x << 16)) & 0x0000_ff00_00ff;
        x = (x | (x << 8)) & 0x00f0_0f00_f00f;
        x = (x | (x << 4)) & 0x0c30_c30c_30c3;
        (x | (x << 2)) & 0x2492_4924_9249
    };
    spread(key[0]) | (spread(key[1]) << 1) | (spread(key[2]) << 2)
}

/// The voxel key of a Morton code ([`morton`]'s inverse).
pub fn decode_morton(code: u64) -> [u16; 3] {
    let squeeze = |v: u64| {
        let mut x = v & 0x2492_4924_9249;
        x = (x | (x >> 2)) & 0x0c30_c30c_30c3;
        x = (x | (x >> 4)) & 0x00f0_0f00_f00f;
        x = (x | (x >> 8)) & 0x0000_ff00_00ff;
        x = (x | (x >> 16)) & 0xffff;
        x as u16
    };
    [squeeze(code), squeeze(code >> 1), squeeze(code >> 2)]
}

/// Merges every eight sibling leaves of one state into their parent, from the voxels up to the root's
/// children, as OctoMap's `prune` does after `toMaxLikelihood`. `leaves` is sorted by code, without overlaps.
pub fn prune(mut leaves: Vec<Leaf>) -> Vec<Leaf> {
    for depth in (2..=DEPTH).rev() {
        let mut merged = Vec::with_capacity(leaves.len());
        let mut i = 0;
        while i < leaves.len() {
            let group = leaves.get(i..i + 8).filter(|g| siblings(g, depth));
            match group {
                Some(g) => {
                    merged.push(Leaf {
                        depth: (depth - 1) as u8,
                        ..g[0]
                    });
                    i += 8;
                }
                None => {
                    merged.push(leaves[i]);
                    i += 1;
                }
            }
        }
        leaves = merged;
    }
    leaves
}

/// True when `g` is the eight children of one node at `depth - 1`, all leaves of one state.
fn siblings(g: &[Leaf], depth: u32) -> bool {
    let first = g[0];
    first.code.is_multiple_of(span(depth - 1))
        && g.iter().enumerate().all(|(k, l)| {
            u32::from(l.depth) == depth
                && l.occupied == first.occupied
                && l.code == first.code + k as u64 * span(depth)
        })
}

/// The tree's binary encoding (what follows the header's `data` line) and its number of nodes, the root
/// included (the header's `size`). `leaves` is sorted by code, without overlaps, none at the root.
pub fn encode(leaves: &[Leaf]) -> (Vec<u8>, u64) {
    let mut out = Vec::new();
    let mut nodes = 1;
    encode_node(leaves, 0, 0, &mut out, &mut nodes);
    (out, nodes)
}

/// Writes the node at `depth` whose lowest code is `base`: two bytes of two bits per child (`01` free leaf,
/// `10` occupied leaf, `11` inner node, `00` unknown; children 0-3 in the first byte, lowest bits first), then
/// each inner child's own encoding in child order.
fn encode_node(leaves: &[Leaf], base: u64, depth: u32, out: &mut Vec<u8>, nodes: &mut u64) {
    let child_span = span(depth + 1);
    let mut bytes = [0u8; 2];
    let mut inner = Vec::new();
    for c in 0..8u64 {
        let lo = base + c * child_span;
        let start = leaves.partition_point(|l| l.code < lo);
        let end = leaves.partition_point(|l| l.code < lo + child_span);
        let sub = &leaves[start..end];
        let bits = match sub {
            [] => continue,
            [leaf] if u32::from(leaf.depth) == depth + 1 => {
                if leaf.occupied {
                    0b10
                } else {
                    0b01
                }
            }
            _ => {
                inner.push((sub, lo));
                0b11
            }
        };
        *nodes += 1;
        bytes[(c / 4) as usize] |= bits << (2 * (c % 4));
    }
    out.extend_from_slice(&bytes);
    for (sub, lo) in inner {
        encode_node(sub, lo, depth + 1, out, nodes);
    }
}

/// The leaves of an encoded tree and its number of nodes, read from `data` (the bytes after the header's `data`
/// line, which start at byte `offset` of the file `path`). Every byte must belong to the tree.
pub fn decode(data: &[u8], path: &Path, offset: usize) -> Result<(Vec<Leaf>, u64)> {
    let mut reader = Decoder {
        data,
        pos: 0,
        path,
        offset,
        leaves: Vec::new(),
        nodes: 1,
    };
    reader.node(0, 0)?;
    if reader.pos != data.len() {
        return Err(Error::format(
            path,
            format!("byte {}", offset + reader.pos),
            format!(
                "{} bytes follow the end of the tree: the file is corrupted or not one OcTree",
                data.len() - reader.pos
            ),
        ));
    }
    Ok((reader.leaves, reader.nodes))
}

/// The state of [`decode`]: where it is in the bytes, and what it has read.
struct Decoder<'a> {
    data: &'a [u8],
    pos: usize,
    path: &'a Path,
    offset: usize,
    leaves: Vec<Leaf>,
    nodes: u64,
}

impl Decoder<'_> {
    /// Reads the node at `depth` whose lowest code is `base`, and its inner children after it.
    fn node(&mut self, base: u64, depth: u32) -> Result<()> {
        let Some(&[b0, b1]) = self.data.get(self.pos..self.pos + 2) else {
            return Err(Error::format(
                self.path,
                format!("byte {}", self.offset + self.pos),
                format!(
                    "the file ends inside the tree (a node at depth {depth} needs 2 bytes): it is truncated"
                ),
            ));
        };
        let at = self.offset + self.pos;
        self.pos += 2;
        let child_span = span(depth + 1);
        let mut inner = Vec::new();
        for c in 0..8u64 {
            let byte = if c < 4 { b0 } else { b1 };
            let code = base + c * child_span;
            let depth_u8 = (depth + 1) as u8;
            match (byte >> (2 * (c % 4))) & 0b11 {
                0b00 => continue,
                0b01 | 0b10 => self.leaves.push(Leaf {
                    code,
                    depth: depth_u8,
                    occupied: (byte >> (2 * (c % 4))) & 0b11 == 0b10,
                }),
                _ if depth + 1 == DEPTH => {
                    return Err(Error::format(
                        self.path,
                        format!("byte {at}"),
                        format!(
                            "child {c} of a node at depth {depth} has children, below the tree's 16 levels"
                        ),
                    ));
                }
                _ => inner.push(code),
            }
            self.nodes += 1;
        }
        for code in inner {
            self.node(code, depth + 1)?;
        }
        Ok(())
    }
}
