//! Each beam's direction with the sensor's angular noise: a pure function of (seed, frame, beam index),
//! computed once per frame for the march and the finishing pass.
//!
//! Four beams at a time in SIMD lanes ([`jitter4`]): the same IEEE operations in the same order as the
//! one-beam form ([`jittered_dir`], which takes the remainder), so the same bits; a frame whose beams are
//! jittered the one way or the other is the same file. Why by hand: one beam at a time (nine divisions, three
//! square roots and two rational functions a beam) took about 40 ns a beam, a third of an Avia frame's own work
//! beside the march; four at a time take less than half of that (docs/benchmarks.md, 2026-12-02, stop 60).

use rayon::prelude::*;
use wide::f32x4;

use super::vec3::{cross, unit};
use crate::rng::{FrameStreams, inverse_normal_cdf_x4};
use crate::sensor::Beam;

/// Beams per parallel job.
const CHUNK: usize = 1024;

/// The jittered unit direction of each beam in the sensor frame (angular noise of `sigma` radians, none when
/// it is not positive), into `out`.
pub(super) fn jittered_dirs(
    beams: &[Beam],
    seed: u64,
    frame_index: u64,
    sigma: f32,
    out: &mut Vec<[f32; 3]>,
) {
    let streams = FrameStreams::new(seed, frame_index);
    out.clear();
    out.resize(beams.len(), [0.0; 3]);
    out.par_chunks_mut(CHUNK)
        .zip(beams.par_chunks(CHUNK))
        .enumerate()
        .for_each(|(c, (out, beams))| {
            let first = c * CHUNK;
            if !(sigma > 0.0) {
                for (o, b) in out.iter_mut().zip(beams) {
                    *o = unit(b.dir);
                }
                return;
            }
            let mut quads = beams.chunks_exact(4);
            let mut outs = out.chunks_exact_mut(4);
            let mut at = first;
            for (o, b) in (&mut outs).zip(&mut quads) {
                o.copy_from_slice(&jitter4(b, streams, sigma, at));
                at += 4;
            }
            for (k, (o, b)) in outs
                .into_remainder()
                .iter_mut()
                .zip(quads.remainder())
                .enumerate()
            {
                *o = jittered_dir(b, streams, sigma, at + k);
            }
        });
}

/// Beam `i`'s jittered direction (`sigma` > 0): its unit direction turned by two normal draws of `sigma`
/// radians about an orthonormal pair perpendicular to it.
fn jittered_dir(beam: &Beam, streams: FrameStreams, sigma: f32, i: usize) -> [f32; 3] {
    let b = unit(beam.dir);
    let mut rng = streams.beam(i as u64);
    // The first draw is the range sample (taken in the finishing pass): skip its word.
    rng.skip();
    let (g1, g2) = (rng.normal(), rng.normal());
    // An orthonormal pair perpendicular to b.
    let helper = if b[0].abs() < 0.9 {
        [1.0, 0.0, 0.0]
    } else {
        [0.0, 1.0, 0.0]
    };
    let e1 = unit(cross(b, helper));
    let e2 = cross(b, e1);
    let (a1, a2) = (sigma * g1 as f32, sigma * g2 as f32);
    unit([
        b[0] + a1 * e1[0] + a2 * e2[0],
        b[1] + a1 * e1[1] + a2 * e2[1],
        b[2] + a1 * e1[2] + a2 * e2[2],
    ])
}

/// [`jittered_dir`] of the four beams `beams` (numbered from `first`), one per lane.
#[inline]
fn jitter4(beams: &[Beam], streams: FrameStreams, sigma: f32, first: usize) -> [[f32; 3]; 4] {
    let dir = |k: usize| f32x4::from([0, 1, 2, 3].map(|j| beams.get(j).map_or(0.0, |b| b.dir[k])));
    let b = unit4([dir(0), dir(1), dir(2)]);
    let (mut p1, mut p2) = ([0.0; 4], [0.0; 4]);
    for j in 0..4 {
        let mut rng = streams.beam((first + j) as u64);
        rng.skip();
        p1[j] = rng.uniform_open0();
        p2[j] = rng.uniform_open0();
    }
    let angle =
        |p: [f64; 4]| f32x4::splat(sigma) * f32x4::from(inverse_normal_cdf_x4(p).map(|g| g as f32));
    let (a1, a2) = (angle(p1), angle(p2));
    let (zero, one) = (f32x4::ZERO, f32x4::ONE);
    let off_x = b[0].abs().simd_lt(f32x4::splat(0.9));
    let helper = [off_x.select(one, zero), off_x.select(zero, one), zero];
    let e1 = unit4(cross4(b, helper));
    let e2 = cross4(b, e1);
    let v = unit4([0, 1, 2].map(|k| b[k] + a1 * e1[k] + a2 * e2[k]));
    let [x, y, z] = v.map(f32x4::to_array);
    [0, 1, 2, 3].map(|j| [x[j], y[j], z[j]])
}

/// [`unit`] in four lanes.
#[inline(always)]
fn unit4(v: [f32x4; 3]) -> [f32x4; 3] {
    let n = (v[0] * v[0] + v[1] * v[1] + v[2] * v[2]).sqrt();
    let ok = n.simd_gt(f32x4::ZERO) & n.simd_lt(f32x4::INFINITY);
    [
        ok.select(v[0] / n, f32x4::ONE),
        ok.select(v[1] / n, f32x4::ZERO),
        ok.select(v[2] / n, f32x4::ZERO),
    ]
}

/// [`cross`] in four lanes.
#[inline(always)]
fn cross4(a: [f32x4; 3], b: [f32x4; 3]) -> [f32x4; 3] {
    [
        a[1] * b[2] - a[2] * b[1],
        a[2] * b[0] - a[0] * b[2],
        a[0] * b[1] - a[1] * b[0],
    ]
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Directions of every kind a pattern or a user's TOML may give: unit, unnormalised, near each axis,
    /// degenerate (zero, NaN, infinite, overflowing).
    fn odd_beams(n: usize) -> Vec<Beam> {
        let mut state = 0x1234_5678_9abc_def0u64;
        let mut next = || {
            state = crate::rng::splitmix64(state);
            (state >> 40) as f32 / (1u64 << 24) as f32 * 2.0 - 1.0
        };
        let special = [
            [0.0, 0.0, 0.0],
            [f32::NAN, 0.0, 1.0],
            [f32::INFINITY, 0.0, 0.0],
            [1e30, 1e30, 0.0],
            [1.0, 0.0, 0.0],
            [-1.0, 0.0, 0.0],
            [0.0, 1.0, 0.0],
            [0.0, 0.0, -1.0],
            [0.9, 0.1, 0.0],
            [-0.9, 0.0, 0.1],
            [3.0, -4.0, 12.0],
        ];
        (0..n)
            .map(|i| Beam {
                dir: special
                    .get(i % 37)
                    .copied()
                    .unwrap_or_else(|| [next(), next(), next()]),
                time_s: 0.0,
                ring: 0,
            })
            .collect()
    }

    #[test]
    fn four_lanes_give_the_one_beam_forms_bits() {
        // Lengths that leave a remainder in a job and in the last job.
        for (n, sigma, frame) in [(4099, 1e-3, 0), (2050, 0.3, 7), (13, 2e-4, 3), (3, 1e-3, 1)] {
            let beams = odd_beams(n);
            let streams = FrameStreams::new(42, frame);
            let mut got = Vec::new();
            jittered_dirs(&beams, 42, frame, sigma, &mut got);
            assert_eq!(got.len(), n);
            for (i, (g, b)) in got.iter().zip(&beams).enumerate() {
                let want = jittered_dir(b, streams, sigma, i);
                assert_eq!(
                    g.map(f32::to_bits),
                    want.map(f32::to_bits),
                    "beam {i} of {n}: {:?}",
                    b.dir
                );
            }
        }
    }

    #[test]
    fn no_noise_leaves_unit_directions() {
        let beams = odd_beams(100);
        let mut got = Vec::new();
        jittered_dirs(&beams, 1, 0, 0.0, &mut got);
        for (g, b) in got.iter().zip(&beams) {
            assert_eq!(g.map(f32::to_bits), unit(b.dir).map(f32::to_bits));
        }
    }

    #[test]
    fn jitter_turns_by_about_sigma() {
        let beams = odd_beams(20_000);
        let sigma = 1e-3f32;
        let mut got = Vec::new();
        jittered_dirs(&beams, 9, 2, sigma, &mut got);
        let (mut sum2, mut n) = (0.0f64, 0usize);
        for (g, b) in got.iter().zip(&beams) {
            let (u, g) = (unit(b.dir).map(f64::from), g.map(f64::from));
            let c = u[0] * g[0] + u[1] * g[1] + u[2] * g[2];
            let s = [
                u[1] * g[2] - u[2] * g[1],
                u[2] * g[0] - u[0] * g[2],
                u[0] * g[1] - u[1] * g[0],
            ];
            sum2 += (s[0] * s[0] + s[1] * s[1] + s[2] * s[2])
                .sqrt()
                .atan2(c)
                .powi(2);
            n += 1;
        }
        // The angle between two draws of sigma on perpendicular axes: its mean square is 2 sigma^2.
        let rms = (sum2 / n as f64 / 2.0).sqrt();
        assert!((rms / f64::from(sigma) - 1.0).abs() < 0.1, "rms {rms}");
    }
}
