//! Surface nets over the sparse signed distance of [`super::sdf`]: one vertex per cell the surface crosses, one
//! quad (two triangles) per grid edge it crosses, as Gibson's surface nets [R42] and their naive form in
//! Mikola Lysenko's write-up [R43]; the vertex is the mean of the cell's edge crossings.
//!
//! Only cells near the samples are visited, and a cell with a corner without a distance gets no vertex, so the
//! mesh stops where the map has no points. Everything runs over sorted keys, each step a parallel map whose
//! results keep their order: the same map gives the same mesh whatever the number of threads.

use rayon::prelude::*;

use super::MeshError;
use super::sdf::{Kernel, PointGrid, Surfels, cell_of, dist2, distance_at, key, unkey};
use crate::progress::Progress;

/// Work items between two looks at the cancel flag.
const CHUNK: usize = 1 << 14;

/// The surface's vertices, their normals and the triangles, in the map's frame.
pub(crate) struct Net {
    pub vertices: Vec<[f32; 3]>,
    pub normals: Vec<[f32; 3]>,
    pub triangles: Vec<[u32; 3]>,
}

/// The 12 edges of a cell as pairs of corner numbers (corner `i` is at `(i & 1, i >> 1 & 1, i >> 2 & 1)`).
const EDGES: [(usize, usize); 12] = [
    (0, 1),
    (2, 3),
    (4, 5),
    (6, 7),
    (0, 2),
    (1, 3),
    (4, 6),
    (5, 7),
    (0, 4),
    (1, 5),
    (2, 6),
    (3, 7),
];

/// The surface of `s` on a grid of edge `h`, with the distance weighted by `k` and vertices kept only within
/// `trim` of a sample (`trim <= k.support`).
pub(crate) fn extract(
    s: &Surfels,
    grid: &PointGrid,
    h: f32,
    k: Kernel,
    trim: f32,
    progress: &dyn Progress,
) -> Result<Net, MeshError> {
    let cells = sorted_unique(&s.q, |q, out| {
        let lo = cell_of(q.map(|v| v - 0.5 * h), h);
        let hi = cell_of(q.map(|v| v + 0.5 * h), h);
        for x in lo[0]..=hi[0] {
            for y in lo[1]..=hi[1] {
                for z in lo[2]..=hi[2] {
                    out.push(key([x, y, z]));
                }
            }
        }
    });
    let corners = sorted_unique(&cells, |&c, out| {
        let c = unkey(c);
        for i in 0..8 {
            out.push(key(corner(c, i)));
        }
    });
    let values = distances(&corners, s, grid, h, k, progress)?;
    let value = |c: [i64; 3]| {
        corners
            .binary_search(&key(c))
            .map_or(f32::NAN, |at| values[at])
    };
    progress.stage("mesh: vertices", cells.len() as u64);
    let found: Vec<Option<([f32; 3], [f32; 3])>> = cells
        .par_iter()
        .map(|&c| vertex(unkey(c), h, &value).filter(|(v, _)| near(*v, s, grid, trim)))
        .collect();
    progress.advance(cells.len() as u64);
    check(progress)?;
    let mut keys = Vec::new();
    let mut vertices = Vec::new();
    let mut normals = Vec::new();
    for (c, f) in cells.iter().zip(found) {
        if let Some((v, n)) = f {
            keys.push(*c);
            vertices.push(v);
            normals.push(n);
        }
    }
    progress.stage("mesh: faces", keys.len() as u64);
    let triangles: Vec<[u32; 3]> = keys
        .par_iter()
        .flat_map_iter(|&c| quads(unkey(c), &keys, &vertices, &value))
        .collect();
    progress.advance(keys.len() as u64);
    check(progress)?;
    Ok(compact(vertices, normals, triangles))
}

/// Every key `emit` makes from the items, sorted and without repeats (deduplicated per chunk first, as
/// neighbouring items make mostly the same keys).
fn sorted_unique<T: Sync>(items: &[T], emit: impl Fn(&T, &mut Vec<u64>) + Sync) -> Vec<u64> {
    let mut all: Vec<u64> = items
        .par_chunks(CHUNK)
        .flat_map_iter(|chunk| {
            let mut out = Vec::with_capacity(chunk.len() * 2);
            chunk.iter().for_each(|t| emit(t, &mut out));
            out.sort_unstable();
            out.dedup();
            out
        })
        .collect();
    all.par_sort_unstable();
    all.dedup();
    all
}

/// Corner `i` of the cell `c`.
fn corner(c: [i64; 3], i: usize) -> [i64; 3] {
    [
        c[0] + (i & 1) as i64,
        c[1] + (i >> 1 & 1) as i64,
        c[2] + (i >> 2 & 1) as i64,
    ]
}

/// The signed distance at every corner, in their order.
fn distances(
    corners: &[u64],
    s: &Surfels,
    grid: &PointGrid,
    h: f32,
    k: Kernel,
    progress: &dyn Progress,
) -> Result<Vec<f32>, MeshError> {
    progress.stage("mesh: distance", corners.len() as u64);
    let chunks: Vec<Option<Vec<f32>>> = corners
        .par_chunks(CHUNK)
        .map_init(Vec::new, |scratch, chunk| {
            if progress.is_cancelled() {
                return None;
            }
            let out = chunk
                .iter()
                .map(|&c| distance_at(unkey(c).map(|v| v as f32 * h), s, grid, k, scratch))
                .collect();
            progress.advance(chunk.len() as u64);
            Some(out)
        })
        .collect();
    let mut values = Vec::with_capacity(corners.len());
    for c in chunks {
        values.extend(c.ok_or(MeshError::Cancelled)?);
    }
    Ok(values)
}

/// The vertex of cell `c` and its normal, when all its corners have a distance and the surface crosses it.
fn vertex(c: [i64; 3], h: f32, value: &impl Fn([i64; 3]) -> f32) -> Option<([f32; 3], [f32; 3])> {
    let mut f = [0.0f32; 8];
    for (i, v) in f.iter_mut().enumerate() {
        *v = value(corner(c, i));
        if v.is_nan() {
            return None;
        }
    }
    let inside = f.iter().filter(|v| **v < 0.0).count();
    if inside == 0 || inside == 8 {
        return None;
    }
    let (mut sum, mut count) = ([0.0f32; 3], 0.0f32);
    for (a, b) in EDGES {
        if (f[a] < 0.0) == (f[b] < 0.0) {
            continue;
        }
        let t = f[a] / (f[a] - f[b]);
        for (axis, s) in sum.iter_mut().enumerate() {
            let pa = (a >> axis & 1) as f32;
            let pb = (b >> axis & 1) as f32;
            *s += pa + t * (pb - pa);
        }
        count += 1.0;
    }
    let v = [0, 1, 2].map(|axis| (c[axis] as f32 + sum[axis] / count) * h);
    Some((v, gradient(&f)))
}

/// The unit gradient of the trilinear interpolation of the corner values `f` over the cell (up when flat).
fn gradient(f: &[f32; 8]) -> [f32; 3] {
    let mut g = [0.0f32; 3];
    for (i, &v) in f.iter().enumerate() {
        for (axis, gv) in g.iter_mut().enumerate() {
            *gv += if i >> axis & 1 == 1 { v } else { -v };
        }
    }
    let len = (g[0] * g[0] + g[1] * g[1] + g[2] * g[2]).sqrt();
    if len > 0.0 && len.is_finite() {
        g.map(|v| v / len)
    } else {
        [0.0, 0.0, 1.0]
    }
}

/// Whether a sample lies within `r` of `v`.
fn near(v: [f32; 3], s: &Surfels, grid: &PointGrid, r: f32) -> bool {
    let mut found = false;
    grid.near(v, r, |i| found |= dist2(v, s.q[i as usize]) <= r * r);
    found
}

/// The triangles of the quads on the three edges leaving the lowest corner of cell `c` (whose vertex is
/// `keys[..]`'s), counter-clockwise seen from the positive side.
fn quads(
    c: [i64; 3],
    keys: &[u64],
    vertices: &[[f32; 3]],
    value: &impl Fn([i64; 3]) -> f32,
) -> Vec<[u32; 3]> {
    let mut out = Vec::new();
    let f0 = value(c);
    for a in 0..3 {
        let (b, d) = ((a + 1) % 3, (a + 2) % 3);
        let mut end = c;
        end[a] += 1;
        let f1 = value(end);
        if (f0 < 0.0) == (f1 < 0.0) {
            continue;
        }
        let around = [c, minus(c, b, b), minus(c, b, d), minus(c, d, d)];
        let mut ids = [0u32; 4];
        let mut all = true;
        for (id, cell) in ids.iter_mut().zip(around) {
            match keys.binary_search(&key(cell)) {
                Ok(at) => *id = at as u32,
                Err(_) => all = false,
            }
        }
        if !all {
            continue;
        }
        if f0 >= 0.0 {
            ids.reverse();
        }
        out.extend(split(ids, vertices));
    }
    out
}

/// `c` one step down along `a`, and one more along `b` when it differs.
fn minus(c: [i64; 3], a: usize, b: usize) -> [i64; 3] {
    let mut v = c;
    v[a] -= 1;
    if b != a {
        v[b] -= 1;
    }
    v
}

/// A quad's two triangles, split along its shorter diagonal.
fn split(q: [u32; 4], v: &[[f32; 3]]) -> [[u32; 3]; 2] {
    let p = |i: usize| v[q[i] as usize];
    if dist2(p(0), p(2)) <= dist2(p(1), p(3)) {
        [[q[0], q[1], q[2]], [q[0], q[2], q[3]]]
    } else {
        [[q[1], q[2], q[3]], [q[1], q[3], q[0]]]
    }
}

/// The net without the vertices no triangle uses, indices renumbered in vertex order.
fn compact(vertices: Vec<[f32; 3]>, normals: Vec<[f32; 3]>, triangles: Vec<[u32; 3]>) -> Net {
    let mut used = vec![false; vertices.len()];
    triangles
        .iter()
        .flatten()
        .for_each(|&i| used[i as usize] = true);
    let mut map = vec![u32::MAX; vertices.len()];
    let mut kept_v = Vec::new();
    let mut kept_n = Vec::new();
    for (i, ((v, n), u)) in vertices.into_iter().zip(normals).zip(&used).enumerate() {
        if *u {
            map[i] = kept_v.len() as u32;
            kept_v.push(v);
            kept_n.push(n);
        }
    }
    let triangles = triangles
        .into_par_iter()
        .map(|t| t.map(|i| map[i as usize]))
        .collect();
    Net {
        vertices: kept_v,
        normals: kept_n,
        triangles,
    }
}

/// [`MeshError::Cancelled`] when the user asked to stop.
fn check(progress: &dyn Progress) -> Result<(), MeshError> {
    if progress.is_cancelled() {
        Err(MeshError::Cancelled)
    } else {
        Ok(())
    }
}
