//! Voxel bucketing: cut map space into cubes of edge `l`, key them by Morton code, and order the points of
//! each bucket coarse-to-fine so that every prefix is a spatially even subsample.
//!
//! - Grid: bucket `(i, j, k)` is the cube `[i l, (i+1) l) x [j l, ...) x [k l, ...)` of the map frame, with
//!   `i = floor(x / l)` computed in f64 on world coordinates (`origin + position`), so two maps of the same
//!   place with the same `l` share their grid.
//! - Key: the grid coordinates minus the map's `morton_offset` (the per-axis minimum over occupied buckets) are
//!   non-negative and below 2^21; the key interleaves their bits ([`morton_encode`]).
//! - Order inside a bucket (docs/algorithms.md, section 11): hierarchical levels. Level 0 takes one point per
//!   occupied sub-cube of edge l/2, level 1 one per occupied sub-cube of edge l/4 that holds no point taken yet,
//!   and so on down to the finest level whose edge is still >= r_map; then the remaining points, round-robin
//!   over the finest cells (the 2nd point of every cell, then the 3rd, ...). The point taken for a cell is the one
//!   nearest its centre (ties: lower input index). Inside a level, cells come in bit-reversed Morton order,
//!   which alternates between octants at every scale, so a prefix that stops mid-level is still even.
//! - Automatic bucket size: see [`auto_bucket_size`].

use std::borrow::Cow;
use std::time::Instant;

use rayon::prelude::*;
use rustc_hash::FxHashSet;

use super::{
    Bucket, BucketingInfo, GeoTiffRecord, MapMetadata, MapSource, PackedMap, ReflectanceInfo,
    ScanPose,
};
use crate::cloud::ExtraValues;
use crate::features::normals::SURFACE_OFFSET;
use crate::features::spacing;
use crate::grid::{
    CellRuns, Sorting, cell_bounds, radix_sort_with_buffer, sort_into_runs, world_cell,
};
use crate::{Cloud, Error, Result};

/// Bits per axis in a bucket key.
pub const MORTON_BITS: u32 = 21;
/// Number of buckets along one axis that a key can address (2^21).
pub const MORTON_SPAN: i64 = 1 << MORTON_BITS;

/// The automatic bucket size aims at this mean number of points per occupied bucket...
pub const AUTO_TARGET_POINTS: f64 = 3000.0;
/// ...and accepts any size whose mean lies in this range.
pub const AUTO_ACCEPT_POINTS: (f64, f64) = (2000.0, 4000.0);
/// Smallest automatic bucket size, in multiples of the resolution.
pub const AUTO_MIN_RESOLUTIONS: f64 = 8.0;
/// Largest automatic bucket size, metres (unless 8 r_map is larger).
pub const AUTO_MAX_BUCKET_M: f64 = 20.0;
/// The automatic size is estimated on at most this many points (an even stride through the cloud).
pub const AUTO_SAMPLE_POINTS: usize = 1_000_000;

/// Spread the low 21 bits of `v` so that bit `i` moves to bit `3 i`.
fn spread3(v: u64) -> u64 {
    let mut x = v & 0x1f_ffff;
    x = (x | (x << 32)) & 0x001f_0000_0000_ffff;
    x = (x | (x << 16)) & 0x001f_0000_ff00_00ff;
    x = (x | (x << 8)) & 0x100f_00f0_0f00_f00f;
    x = (x | (x << 4)) & 0x10c3_0c30_c30c_30c3;
    x = (x | (x << 2)) & 0x1249_2492_4924_9249;
    x
}

/// Inverse of [`spread3`]: gather bits `3 i` into bit `i`.
fn compact3(v: u64) -> u64 {
    let mut x = v & 0x1249_2492_4924_9249;
    x = (x | (x >> 2)) & 0x10c3_0c30_c30c_30c3;
    x = (x | (x >> 4)) & 0x100f_00f0_0f00_f00f;
    x = (x | (x >> 8)) & 0x001f_0000_ff00_00ff;
    x = (x | (x >> 16)) & 0x001f_0000_0000_ffff;
    x = (x | (x >> 32)) & 0x1f_ffff;
    x
}

/// Morton key of non-negative grid coordinates below 2^21: bit `i` of x goes to bit `3 i` of the key, bit `i`
/// of y to `3 i + 1`, bit `i` of z to `3 i + 2`. Bits above 21 are ignored.
pub fn morton_encode(c: [u32; 3]) -> u64 {
    spread3(u64::from(c[0])) | (spread3(u64::from(c[1])) << 1) | (spread3(u64::from(c[2])) << 2)
}

/// Grid coordinates of a Morton key (inverse of [`morton_encode`]).
pub fn morton_decode(key: u64) -> [u32; 3] {
    // compact3 returns at most 21 bits, so the casts are exact.
    [
        compact3(key) as u32,
        compact3(key >> 1) as u32,
        compact3(key >> 2) as u32,
    ]
}

/// Integer grid coordinates of a bucket: `morton_decode(key) + morton_offset`. The bucket covers
/// `[c * l, (c + 1) * l)` on each axis of the map frame.
pub fn bucket_coords(key: u64, morton_offset: [i64; 3]) -> [i64; 3] {
    let c = morton_decode(key);
    [
        i64::from(c[0]) + morton_offset[0],
        i64::from(c[1]) + morton_offset[1],
        i64::from(c[2]) + morton_offset[2],
    ]
}

fn check_parameters(cloud: &Cloud, resolution: f32) -> Result<()> {
    if !(resolution.is_finite() && resolution > 0.0) {
        return Err(Error::parameter(
            "resolution",
            format!("{resolution} m: expected a positive finite length"),
        ));
    }
    if cloud.is_empty() {
        return Err(Error::parameter(
            "cloud",
            "the cloud is empty: a map needs at least one point",
        ));
    }
    if u32::try_from(cloud.len()).is_err() {
        return Err(Error::parameter(
            "cloud",
            format!(
                "{} points; a map holds at most {} (split it into tiles)",
                cloud.len(),
                u32::MAX
            ),
        ));
    }
    Ok(cloud.validate()?)
}

/// Mean number of points per occupied bucket for bucket size `l`, estimated on an even stride of at most
/// [`AUTO_SAMPLE_POINTS`] points (buckets holding thousands of points are all seen by such a sample).
fn mean_occupancy(cloud: &Cloud, l: f64) -> f64 {
    let n = cloud.len();
    let stride = n.div_ceil(AUTO_SAMPLE_POINTS).max(1);
    // Sets per chunk, then their union: the count does not depend on the split. Fx hashing, not SipHash: the
    // keys are not attacker-chosen, and the search hashes the whole sample up to 26 times.
    let occupied = cloud
        .positions()
        .par_iter()
        .step_by(stride)
        .fold(FxHashSet::default, |mut set, p| {
            set.insert(world_cell(cloud.origin, *p, l));
            set
        })
        .reduce(FxHashSet::default, |a, b| {
            let (mut big, small) = if a.len() >= b.len() { (a, b) } else { (b, a) };
            big.extend(small);
            big
        });
    n as f64 / occupied.len().max(1) as f64
}

/// The automatic bucket size for a cloud at resolution `r`.
///
/// Rule: the mean number of points per occupied bucket grows with `l`; search `l` (bisection on log l, at most
/// 24 steps) for a mean of [`AUTO_TARGET_POINTS`] (3000), accepting any `l` whose mean lies in 2000..4000;
/// clamp to `[8 r, 20 m]` (when 8 r exceeds 20 m, 8 r); round to a whole multiple of `r` inside that range.
/// Deterministic: it depends only on the points.
pub fn auto_bucket_size(cloud: &Cloud, resolution: f32) -> Result<f32> {
    check_parameters(cloud, resolution)?;
    let r = f64::from(resolution);
    let lo = AUTO_MIN_RESOLUTIONS * r;
    let hi = AUTO_MAX_BUCKET_M.max(lo);
    let (accept_lo, accept_hi) = AUTO_ACCEPT_POINTS;
    let chosen = if mean_occupancy(cloud, lo) >= accept_lo {
        lo
    } else if mean_occupancy(cloud, hi) <= AUTO_TARGET_POINTS {
        hi
    } else {
        let (mut a, mut b) = (lo.ln(), hi.ln());
        let mut mid = 0.5 * (a + b);
        for _ in 0..24 {
            mid = 0.5 * (a + b);
            let mean = mean_occupancy(cloud, mid.exp());
            if (accept_lo..=accept_hi).contains(&mean) {
                break;
            }
            if mean < AUTO_TARGET_POINTS {
                a = mid;
            } else {
                b = mid;
            }
        }
        mid.exp()
    };
    let k_min = (lo / r).round();
    // r is an f32 widened to f64 (0.1 -> 0.10000000149), so 20 / r falls just short of 200: allow for it.
    let k_max = (hi / r + 1e-3).floor().max(k_min);
    let k = (chosen / r).round().clamp(k_min, k_max);
    Ok((k * r) as f32)
}

/// Number of hierarchical levels for bucket size `l` and resolution `r`: the finest sub-cube edge l / 2^K stays
/// >= r; at least 1, at most 20 (the finest cell code then fits 60 bits).
fn level_count(l: f64, r: f64) -> u32 {
    let k = ((l / r).log2() + 1e-9).floor();
    if k.is_finite() {
        k.clamp(1.0, 20.0) as u32
    } else {
        1
    }
}

/// `bits` low bits of `code`, reversed.
fn reverse_low(code: u64, bits: u32) -> u64 {
    if bits == 0 {
        0
    } else {
        code.reverse_bits() >> (64 - bits)
    }
}

/// Coarse-to-fine order of points with local coordinates `local` (each in [0, 1)^3 of their bucket) over
/// `levels` levels. Returns a permutation of `0..local.len()`; ties are broken by index, so the result depends
/// only on the input.
pub(crate) fn coarse_to_fine(local: &[[f64; 3]], levels: u32) -> Vec<u32> {
    let m = local.len();
    let levels = levels.clamp(1, 20);
    let cells = 1u64 << levels;
    let cell_of = |q: f64| -> u32 {
        // `as` saturates at 0 for negative values; the clamp keeps q = 1.0 in the last cell.
        ((q * cells as f64) as u64).min(cells - 1) as u32
    };
    // (finest cell code, local index), sorted: every cell at every level is then a contiguous run.
    let mut pts: Vec<(u64, u32)> = local
        .iter()
        .enumerate()
        .map(|(j, q)| {
            (
                morton_encode([cell_of(q[0]), cell_of(q[1]), cell_of(q[2])]),
                j as u32,
            )
        })
        .collect();
    // (code, index) pairs are unique and built in index order, so a stable sort by code is the sort of pairs.
    radix_sort_with_buffer(&mut pts, 3 * levels, |p| p.0);
    let mut taken = vec![false; m];
    let mut out = Vec::with_capacity(m);
    let mut chosen: Vec<(u64, usize)> = Vec::new();
    for k in 0..levels {
        let shift = 3 * (levels - 1 - k);
        let size = 1.0 / (1u64 << (k + 1)) as f64;
        chosen.clear();
        let mut s = 0;
        while s < m {
            let c = pts[s].0 >> shift;
            let mut e = s + 1;
            while e < m && pts[e].0 >> shift == c {
                e += 1;
            }
            if !taken[s..e].iter().any(|&t| t) {
                let g = morton_decode(c);
                let centre = [
                    (f64::from(g[0]) + 0.5) * size,
                    (f64::from(g[1]) + 0.5) * size,
                    (f64::from(g[2]) + 0.5) * size,
                ];
                let mut best = s;
                let mut best_d = f64::INFINITY;
                for (pos, &(_, j)) in pts.iter().enumerate().take(e).skip(s) {
                    let q = local[j as usize];
                    let d = (q[0] - centre[0]).powi(2)
                        + (q[1] - centre[1]).powi(2)
                        + (q[2] - centre[2]).powi(2);
                    // Strict: on equal distance the earlier (lower index) point stays.
                    if d < best_d {
                        best_d = d;
                        best = pos;
                    }
                }
                chosen.push((reverse_low(c, 3 * (k + 1)), best));
            }
            s = e;
        }
        // One entry per cell: the keys are unique.
        radix_sort_with_buffer(&mut chosen, 3 * (k + 1), |c| c.0);
        for &(_, pos) in &chosen {
            taken[pos] = true;
            out.push(pts[pos].1);
        }
    }
    // The rest: round-robin over the finest cells, each round in bit-reversed cell order.
    let mut rest: Vec<(u32, u64, usize)> = Vec::with_capacity(m - out.len());
    let mut s = 0;
    while s < m {
        let c = pts[s].0;
        let mut rank = 0u32;
        let mut e = s;
        while e < m && pts[e].0 == c {
            if !taken[e] {
                rest.push((rank, reverse_low(c, 3 * levels), e));
                rank += 1;
            }
            e += 1;
        }
        s = e;
    }
    // (rank, code) pairs are unique (ranks count up within a cell): sorting by both is the sort of the triples.
    // By code, then stably by rank: each key fits its own 64 bits (codes take up to 60).
    let rank_bits = u32::BITS - rest.iter().map(|r| r.0).max().unwrap_or(0).leading_zeros();
    radix_sort_with_buffer(&mut rest, 3 * levels, |r| r.1);
    radix_sort_with_buffer(&mut rest, rank_bits, |r| u64::from(r.0));
    out.extend(rest.iter().map(|&(_, _, pos)| pts[pos].1));
    out
}

/// The result of bucketing a cloud: the grid and the point order.
#[derive(Clone, Debug, PartialEq)]
pub struct Bucketing {
    /// Bucket edge length l, metres (as given, or chosen from density by [`auto_bucket_size`]).
    pub bucket_size: f32,
    /// Offset from Morton-decoded keys to bucket grid coordinates (see [`bucket_coords`]), so that keys stay
    /// non-negative for maps on both sides of the origin.
    pub morton_offset: [i64; 3],
    /// The buckets, sorted by key, partitioning the reordered points.
    pub buckets: Vec<Bucket>,
    /// `order[i]` is the cloud index of the map's point `i`.
    pub order: Vec<u32>,
}

/// Bucket `cloud` with bucket size `l` (`None`: [`auto_bucket_size`]) at resolution `resolution`.
/// Parallel across buckets; the result does not depend on the number of threads.
pub fn bucketize(cloud: &Cloud, resolution: f32, bucket_size: Option<f32>) -> Result<Bucketing> {
    check_parameters(cloud, resolution)?;
    let l32 = match bucket_size {
        None => auto_bucket_size(cloud, resolution)?,
        Some(l) => checked_bucket_size(l, resolution)?,
    };
    let l = f64::from(l32);
    let origin = cloud.origin;
    let (lo, hi) = cell_bounds(origin, cloud.positions(), l);
    check_span(lo, hi, l32)?;
    // Every coordinate minus lo lies in 0..2^21 (checked above), so the casts are exact.
    let axis_bits = (0..3)
        .map(|a| u64::BITS - ((hi[a] - lo[a]) as u64).leading_zeros())
        .max()
        .unwrap_or(0);
    let positions = cloud.positions();
    let CellRuns {
        order: mut sorted,
        keys: run_keys,
        starts,
    } = sort_into_runs(positions.len(), 3 * axis_bits, 0, Sorting::InPlace, |i| {
        let g = world_cell(origin, positions[i], l);
        morton_encode([0, 1, 2].map(|a| (g[a] - lo[a]) as u32))
    });
    let levels = level_count(l, f64::from(resolution));
    // Each bucket's run of `sorted` is put into coarse-to-fine order where it lies: no second order array.
    let mut runs = Vec::with_capacity(run_keys.len());
    let mut rest = &mut sorted[..];
    for r in 0..run_keys.len() {
        let (ids, tail) = rest.split_at_mut((starts[r + 1] - starts[r]) as usize);
        runs.push((run_keys[r], starts[r], ids));
        rest = tail;
    }
    let buckets: Vec<Bucket> = runs
        .into_par_iter()
        .map(|(key, first, ids)| {
            let corner = bucket_coords(key, lo).map(|c| c as f64 * l);
            let (min, max) = order_bucket(cloud, (corner, l), levels, ids);
            Bucket {
                key,
                first,
                count: ids.len() as u32,
                min,
                max,
            }
        })
        .collect();
    Ok(Bucketing {
        bucket_size: l32,
        morton_offset: lo,
        buckets,
        order: sorted,
    })
}

/// A bucket size the user gave: finite and at least the resolution.
fn checked_bucket_size(l: f32, resolution: f32) -> Result<f32> {
    if !(l.is_finite() && l >= resolution) {
        return Err(Error::parameter(
            "bucket_size",
            format!("{l} m: expected a finite length of at least the resolution ({resolution} m)"),
        ));
    }
    Ok(l)
}

/// The map may span at most `MORTON_SPAN` buckets along each axis, what a key addresses.
fn check_span(lo: [i64; 3], hi: [i64; 3], l32: f32) -> Result<()> {
    for a in 0..3 {
        let span = i128::from(hi[a]) - i128::from(lo[a]) + 1;
        if span > i128::from(MORTON_SPAN) {
            return Err(Error::parameter(
                "bucket_size",
                format!(
                    "{l32} m makes the map {span} buckets long along {}; a key addresses at most {MORTON_SPAN}: use larger buckets",
                    ["x", "y", "z"][a]
                ),
            ));
        }
    }
    Ok(())
}

/// Puts one bucket's points (`ids`, in place) into coarse-to-fine order, the bucket's `corner` and size `l`
/// given, and returns their bounds.
fn order_bucket(
    cloud: &Cloud,
    (corner, l): ([f64; 3], f64),
    levels: u32,
    ids: &mut [u32],
) -> ([f32; 3], [f32; 3]) {
    let (origin, positions) = (cloud.origin, cloud.positions());
    let mut bmin = [f32::INFINITY; 3];
    let mut bmax = [f32::NEG_INFINITY; 3];
    let local: Vec<[f64; 3]> = ids
        .iter()
        .map(|&i| {
            let p = positions[i as usize];
            let mut q = [0.0; 3];
            for a in 0..3 {
                bmin[a] = bmin[a].min(p[a]);
                bmax[a] = bmax[a].max(p[a]);
                q[a] = ((origin[a] + f64::from(p[a]) - corner[a]) / l).clamp(0.0, 1.0);
            }
            q
        })
        .collect();
    let fine_order = coarse_to_fine(&local, levels);
    let in_run: Vec<u32> = fine_order.iter().map(|&j| ids[j as usize]).collect();
    ids.copy_from_slice(&in_run);
    (bmin, bmax)
}

/// Reflectance for the simulator from raw intensity: `clamp(i / p99, 0, 1)` where p99 is the 99th percentile
/// (nearest rank: the value at sorted index floor(0.99 (m - 1))) of the finite intensities; non-finite
/// intensities give 0. `None` when no finite intensity is positive at that percentile.
pub fn reflectance_from_intensity(intensity: &[f32]) -> Option<(Vec<f32>, ReflectanceInfo)> {
    // Sized up front: grown by doubling, the copy left its outgrown blocks resident (twice its size).
    let mut finite: Vec<f32> = Vec::with_capacity(intensity.len());
    finite.extend(intensity.iter().copied().filter(|v| v.is_finite()));
    if finite.is_empty() {
        return None;
    }
    let rank = (0.99 * (finite.len() - 1) as f64).floor() as usize;
    let (_, p99, _) = finite.select_nth_unstable_by(rank, f32::total_cmp);
    let scale = *p99;
    if scale <= 0.0 {
        return None;
    }
    let refl = intensity
        .iter()
        .map(|&v| {
            if v.is_finite() {
                (v / scale).clamp(0.0, 1.0)
            } else {
                0.0
            }
        })
        .collect();
    Some((
        refl,
        ReflectanceInfo {
            percentile: 99.0,
            scale: f64::from(scale),
        },
    ))
}

impl PackedMap {
    /// Build a packed map from a prepared cloud: bucket it (bucket size `bucket_size`, or automatic when
    /// `None`), reorder the points into bucket order carrying their attributes, derive reflectance from
    /// intensity, and fill the metadata (sources, CRS, scanner poses, bucketing). Positions keep the cloud's
    /// origin and their exact values. Attributes the map does not store (time, returns, ring, extra
    /// dimensions) are listed in the metadata's `dropped_attributes`.
    ///
    /// Errors: an empty cloud, more than 2^32 - 1 points, non-finite coordinates, a resolution that is not a
    /// positive length, a bucket size below the resolution, or a map more than 2^21 buckets long.
    pub fn from_cloud(
        cloud: &Cloud,
        resolution: f32,
        bucket_size: Option<f32>,
    ) -> Result<PackedMap> {
        PackedMap::pack(Cow::Borrowed(cloud), resolution, bucket_size)
    }

    /// [`PackedMap::from_cloud`] for a cloud that is no longer needed: each attribute is freed as soon as its
    /// reordered copy is made, so the peak memory is the cloud plus one attribute rather than two clouds.
    pub(crate) fn from_cloud_owned(
        cloud: Cloud,
        resolution: f32,
        bucket_size: Option<f32>,
    ) -> Result<PackedMap> {
        PackedMap::pack(Cow::Owned(cloud), resolution, bucket_size)
    }

    fn pack(
        mut cloud: Cow<'_, Cloud>,
        resolution: f32,
        bucket_size: Option<f32>,
    ) -> Result<PackedMap> {
        let started = Instant::now();
        let b = bucketize(&cloud, resolution, bucket_size)?;
        // The workers' per-bucket scratch is freed: its pages go back before the map's arrays are made.
        crate::memory::release_free_memory();
        fn reorder<T: Copy + Send + Sync>(v: &[T], ord: &[u32]) -> Vec<T> {
            ord.par_iter().map(|&i| v[i as usize]).collect()
        }
        // An optional attribute in map order; an owned cloud's copy is freed at once, and its pages handed
        // back: the heap cannot give them to the next (differently sized) array, so they would otherwise stay
        // resident beside the whole map. (Permuting an owned cloud in place instead, following the order's
        // cycles, saved the copy of the largest column but took 3.5 s instead of 0.65 s on 5.8M points: the
        // coarse-to-fine order within a bucket scatters.)
        macro_rules! pick {
            ($field:ident, $take:ident) => {{
                let out = cloud.$field().map(|v| reorder(v, &b.order));
                if let Cow::Owned(c) = &mut cloud {
                    drop(c.$take());
                    crate::memory::release_free_memory();
                }
                out
            }};
        }
        let intensity = pick!(intensity, take_intensity);
        // The normals stage's extra dimensions that a map keeps as sections of their own.
        let mut kept_extra = |name: &str| {
            let v = match cloud.extra(name).map(|d| &d.values) {
                Some(ExtraValues::F32(v)) => Some(reorder(v, &b.order)),
                _ => None,
            };
            if v.is_some()
                && let Cow::Owned(c) = &mut cloud
            {
                c.retain_extras(|d| d.name != name);
            }
            v
        };
        let spacing = kept_extra(spacing::EXTRA_NAME);
        let surface_offset = kept_extra(SURFACE_OFFSET);
        let mut meta = map_metadata(
            &cloud,
            &b,
            bucket_size.is_some(),
            spacing.is_some(),
            started,
        );
        let normals = pick!(normals, take_normals);
        let gamma = pick!(gamma, take_gamma);
        let color = pick!(color, take_color);
        let classification = pick!(classification, take_classification);
        // Positions last: they cannot leave a cloud that has points, so an owned cloud is dropped with them.
        let origin = cloud.origin;
        let positions = reorder(cloud.positions(), &b.order);
        drop(cloud);
        drop(b.order);
        crate::memory::release_free_memory();
        let refl = intensity.as_deref().and_then(reflectance_from_intensity);
        meta.reflectance = refl.as_ref().map(|(_, info)| info.clone());
        let mut map = PackedMap {
            origin,
            resolution,
            bucket_size: b.bucket_size,
            morton_offset: b.morton_offset,
            buckets: b.buckets,
            positions,
            normals,
            gamma,
            spacing,
            surface_offset,
            intensity,
            reflectance: refl.map(|(r, _)| r),
            color,
            classification,
            metadata_toml: String::new(),
        };
        map.set_metadata(&meta)?;
        Ok(map)
    }
}

/// The map's metadata from what the cloud knew (CRS, sources, scan poses) and how it was bucketed; the
/// attributes a map does not keep are listed as dropped (all extras but the stored spacing when `has_spacing`).
/// Reflectance, normal orientation and the recipe are filled in later.
/// The attributes of `cloud` that a map does not keep (the spacing extra dimension is kept as its own section
/// when `has_spacing`).
fn dropped_attributes(cloud: &Cloud, has_spacing: bool) -> Vec<String> {
    let mut dropped: Vec<String> = [
        (cloud.time().is_some(), "time"),
        (cloud.return_number().is_some(), "return_number"),
        (cloud.number_of_returns().is_some(), "number_of_returns"),
        (cloud.ring().is_some(), "ring"),
    ]
    .into_iter()
    .filter(|(present, _)| *present)
    .map(|(_, name)| name.to_string())
    .collect();
    dropped.extend(
        cloud
            .extras()
            .iter()
            .filter(|d| !has_spacing || d.name != spacing::EXTRA_NAME)
            .filter(|d| d.name != SURFACE_OFFSET)
            .map(|d| d.name.clone()),
    );
    dropped
}

fn map_metadata(
    cloud: &Cloud,
    b: &Bucketing,
    fixed_size: bool,
    has_spacing: bool,
    started: Instant,
) -> MapMetadata {
    let n = cloud.len();
    let max_count = b
        .buckets
        .iter()
        .map(|b| u64::from(b.count))
        .max()
        .unwrap_or(0);
    MapMetadata {
        aerie_version: env!("CARGO_PKG_VERSION").to_string(),
        crs_wkt: cloud.meta.crs_wkt.clone(),
        crs_geotiff: cloud
            .meta
            .las_geotiff
            .iter()
            .map(|(record_id, data)| GeoTiffRecord {
                record_id: *record_id,
                data: data.clone(),
            })
            .collect(),
        sources: cloud
            .meta
            .source
            .iter()
            .map(|p| MapSource {
                path: p.display().to_string(),
                format: cloud.meta.format.clone(),
            })
            .collect(),
        scans: cloud
            .meta
            .scans
            .iter()
            .filter_map(|s| {
                s.world_from_scan.map(|world_from_scan| ScanPose {
                    name: s.name.clone(),
                    world_from_scan,
                })
            })
            .collect(),
        bucketing: BucketingInfo {
            rule: if fixed_size { "fixed" } else { "auto" }.to_string(),
            mean_points_per_bucket: n as f64 / b.buckets.len().max(1) as f64,
            max_points_per_bucket: max_count,
        },
        // Set by the caller once the largest columns are in map order (the peak holds one of them twice).
        reflectance: None,
        normal_orientation: None,
        dropped_attributes: dropped_attributes(cloud, has_spacing),
        recipe: None,
        report: {
            let mut r = crate::StageReport::new("map.buckets", n);
            r.figure("bucket_size_m", f64::from(b.bucket_size));
            r.figure("buckets", b.buckets.len() as f64);
            // The map frame is the cloud's: where its CRS counts in feet, the simulator must hear it here.
            r.warnings.extend(crate::crs::units_warning(&cloud.meta));
            r.finish(n, started);
            // Time varies from run to run; the map bytes must not.
            r.seconds = 0.0;
            vec![r]
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A tiny deterministic generator (splitmix64) so tests need no extra crate.
    pub(crate) struct Rng(u64);
    impl Rng {
        pub fn next_u64(&mut self) -> u64 {
            self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
            let mut z = self.0;
            z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
            z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
            z ^ (z >> 31)
        }
        pub fn unit(&mut self) -> f64 {
            (self.next_u64() >> 11) as f64 / (1u64 << 53) as f64
        }
    }

    /// At 20 levels a finest cell's code takes 60 bits: duplicates ranked 16 and up must still come out in
    /// rank order (a key of rank and code together would not fit 64 bits).
    #[test]
    fn duplicates_at_the_deepest_level_keep_their_order() {
        let local = vec![[0.3, 0.6, 0.9]; 100];
        let want: Vec<u32> = (0..100).collect();
        assert_eq!(coarse_to_fine(&local, 20), want);
    }

    #[test]
    fn morton_round_trips_and_interleaves() {
        assert_eq!(morton_encode([1, 0, 0]), 1);
        assert_eq!(morton_encode([0, 1, 0]), 2);
        assert_eq!(morton_encode([0, 0, 1]), 4);
        assert_eq!(morton_encode([2, 0, 0]), 8);
        let max = (1u32 << 21) - 1;
        assert_eq!(morton_encode([max, max, max]), (1u64 << 63) - 1);
        let mut rng = Rng(7);
        for _ in 0..1000 {
            let c = [
                (rng.next_u64() as u32) & max,
                (rng.next_u64() as u32) & max,
                (rng.next_u64() as u32) & max,
            ];
            assert_eq!(morton_decode(morton_encode(c)), c);
        }
    }

    /// Max over `all` of the distance to the nearest of `prefix`.
    fn covering_radius(all: &[[f64; 3]], prefix: &[[f64; 3]]) -> f64 {
        all.iter()
            .map(|p| {
                prefix
                    .iter()
                    .map(|q| {
                        ((p[0] - q[0]).powi(2) + (p[1] - q[1]).powi(2) + (p[2] - q[2]).powi(2))
                            .sqrt()
                    })
                    .fold(f64::INFINITY, f64::min)
            })
            .fold(0.0, f64::max)
    }

    #[test]
    /// Evenness: the covering radius of the first n points (the farthest any point of the bucket is from the
    /// prefix) stays within 2.5 times the mean spacing (1/n)^(1/3) of n points in the unit cube. Measured: at
    /// most 1.45 on this cloud (a hierarchical order peaks just before a level completes).
    fn every_prefix_is_even_for_a_uniform_cloud() {
        let mut rng = Rng(42);
        let mut pts: Vec<[f64; 3]> = (0..4000)
            .map(|_| [rng.unit(), rng.unit(), rng.unit()])
            .collect();
        // Sorted input: a naive prefix would cover only one slab, so the test can fail.
        pts.sort_by(|a, b| a[0].total_cmp(&b[0]));
        let order = coarse_to_fine(&pts, 5);
        let mut seen = order.clone();
        seen.sort_unstable();
        assert_eq!(seen, (0..4000).collect::<Vec<u32>>(), "not a permutation");
        let ordered: Vec<[f64; 3]> = order.iter().map(|&i| pts[i as usize]).collect();
        for n in [
            8usize, 12, 20, 40, 64, 100, 200, 300, 400, 512, 700, 1000, 2000, 3000,
        ] {
            let spacing = (1.0 / n as f64).cbrt();
            let r = covering_radius(&pts, &ordered[..n]);
            assert!(
                r <= 2.5 * spacing,
                "prefix {n}: covering radius {r:.3} > 2.5 x spacing {spacing:.3}"
            );
            let naive = covering_radius(&pts, &pts[..n]);
            assert!(
                n < 20 || naive > 2.5 * spacing,
                "naive prefix {n} unexpectedly even"
            );
        }
    }

    #[test]
    /// The same on a surface, with the 2-D spacing (1/n)^(1/2). Measured: at most 2.0.
    fn prefix_of_a_surface_covers_it() {
        // A plane z = 0.3 sampled on a jittered grid: the coarse levels must spread over the whole square.
        let mut rng = Rng(3);
        let mut pts = Vec::new();
        for i in 0..60 {
            for j in 0..60 {
                pts.push([
                    (i as f64 + rng.unit()) / 60.0,
                    (j as f64 + rng.unit()) / 60.0,
                    0.3,
                ]);
            }
        }
        let order = coarse_to_fine(&pts, 5);
        let ordered: Vec<[f64; 3]> = order.iter().map(|&i| pts[i as usize]).collect();
        for n in [
            4usize, 10, 16, 20, 30, 50, 64, 80, 100, 150, 200, 256, 300, 500, 700, 1000, 2000, 3000,
        ] {
            let spacing = (1.0 / n as f64).sqrt();
            let r = covering_radius(&pts, &ordered[..n]);
            assert!(
                r <= 2.5 * spacing,
                "prefix {n}: covering radius {r:.3} vs spacing {spacing:.3}"
            );
            let naive = covering_radius(&pts, &pts[..n]);
            assert!(
                n < 20 || naive > 2.5 * spacing,
                "naive prefix {n} unexpectedly even"
            );
        }
    }

    fn grid_cloud(extent: f64, step: f64) -> Cloud {
        let k = (extent / step) as usize;
        let mut positions = Vec::new();
        for i in 0..k {
            for j in 0..k {
                positions.push([(i as f64 * step) as f32, (j as f64 * step) as f32, 0.5]);
            }
        }
        Cloud::from_positions([1000.0, -2000.0, 10.0], positions)
    }

    #[test]
    fn auto_bucket_size_targets_a_few_thousand_points() {
        // A 200 m x 200 m plane at 0.1 m: 4e6 points, 100 per m^2, so l ~ sqrt(3000 / 100) ~ 5.5 m.
        let c = grid_cloud(200.0, 0.1);
        let l = auto_bucket_size(&c, 0.1).unwrap();
        let mean = mean_occupancy(&c, f64::from(l));
        assert!((1800.0..=4400.0).contains(&mean), "l {l}: mean {mean}");
        let k = f64::from(l) / 0.1;
        assert!((k - k.round()).abs() < 1e-3, "l {l} is not a multiple of r");
        // Sparse: clamp at 20 m. Dense: clamp at 8 r.
        let sparse = grid_cloud(100.0, 2.0);
        assert_eq!(auto_bucket_size(&sparse, 0.5).unwrap(), 20.0);
        assert_eq!(auto_bucket_size(&sparse, 0.1).unwrap(), 20.0);
        let mut rng = Rng(1);
        let positions = (0..20_000)
            .map(|_| {
                [
                    rng.unit() as f32 * 0.1,
                    rng.unit() as f32 * 0.1,
                    rng.unit() as f32 * 0.1,
                ]
            })
            .collect();
        let dense = Cloud::from_positions([0.0; 3], positions);
        assert_eq!(auto_bucket_size(&dense, 0.01).unwrap(), 0.08);
    }

    #[test]
    fn buckets_partition_sorted_and_bounded() {
        let c = grid_cloud(30.0, 0.25);
        let b = bucketize(&c, 0.25, Some(4.0)).unwrap();
        super::super::check_buckets(&b.buckets, c.len()).unwrap();
        let mut seen = b.order.clone();
        seen.sort_unstable();
        assert_eq!(seen, (0..c.len() as u32).collect::<Vec<_>>());
        for bk in &b.buckets {
            let g = bucket_coords(bk.key, b.morton_offset);
            for &i in &b.order[bk.first as usize..(bk.first + bk.count) as usize] {
                let w = c.world(i as usize);
                let p = c.positions()[i as usize];
                for a in 0..3 {
                    assert_eq!((w[a] / 4.0).floor() as i64, g[a]);
                    assert!(bk.min[a] <= p[a] && p[a] <= bk.max[a]);
                }
            }
        }
        // 30 m / 4 m -> 8 columns of buckets in x and y (origin 1000 and -2000 are multiples of 4).
        assert_eq!(b.buckets.len(), 64);
    }

    #[test]
    fn reflectance_uses_the_99th_percentile() {
        let mut v: Vec<f32> = (1..=100).map(|i| i as f32).collect();
        v.push(f32::NAN);
        let (r, info) = reflectance_from_intensity(&v).unwrap();
        assert_eq!(info.scale, 99.0);
        assert_eq!(r[98], 1.0);
        assert_eq!(r[99], 1.0);
        assert_eq!(r[100], 0.0);
        assert!((r[48] - 49.0 / 99.0).abs() < 1e-6);
        assert!(reflectance_from_intensity(&[0.0, 0.0]).is_none());
    }

    #[test]
    fn rejects_bad_parameters() {
        let c = grid_cloud(2.0, 0.5);
        assert!(bucketize(&Cloud::default(), 0.1, None).is_err());
        assert!(bucketize(&c, 0.0, None).is_err());
        assert!(bucketize(&c, f32::NAN, None).is_err());
        assert!(bucketize(&c, 0.1, Some(0.05)).is_err());
        assert!(bucketize(&c, 0.1, Some(f32::INFINITY)).is_err());
        let far = Cloud::from_positions(c.origin, [c.positions(), &[[1.0e7, 0.0, 0.0]]].concat());
        let e = bucketize(&far, 0.001, Some(0.001)).unwrap_err().to_string();
        assert!(e.contains("buckets long along x"), "{e}");
        let mut nan = c.clone();
        nan.positions_mut()[1][2] = f32::NAN;
        assert!(
            bucketize(&nan, 0.1, None)
                .unwrap_err()
                .to_string()
                .contains("point 1")
        );
    }
}
