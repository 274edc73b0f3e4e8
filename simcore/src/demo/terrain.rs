//! The demo site's ground: a smooth height field `z = sum_k A_k cos(kx_k x + ky_k y + phase_k)` over a rectangle,
//! with exact ray casting.
//!
//! A height field has no closed-form ray intersection, so the ray is marched with steps that provably cannot
//! pass the first crossing (the gap above the ground divided by the fastest rate at which the ray can close on
//! it, which the waves' amplitudes and frequencies along the ray bound), then Newton's method polishes the root
//! to machine precision. Rays meet the ground at grazing angles in a terrestrial scan, so a safe first root
//! matters: a fixed step would skip the crest of a small bump and hit the slope behind it.

// `!(a > b)` is deliberate: a NaN must fail the test it is in.
#![allow(clippy::neg_cmp_op_on_partial_ord)]

use std::f64::consts::TAU;

use serde::Serialize;

use crate::rng::BeamRng;

/// Gap above the ground at which marching hands over to Newton's method, metres.
const HANDOVER_M: f64 = 1e-3;
/// Most marching steps per ray (a ray grazing the ground for a long way); past them the ray misses.
const MAX_STEPS: usize = 400;
/// Most waves a height field may sum (a fixed bound keeps ray casting free of allocation).
pub const MAX_WAVES: usize = 16;

/// One plane wave of the height field.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct Wave {
    /// Wave vector, radians per metre.
    pub k: [f64; 2],
    /// Phase of the wave at the origin, radians.
    pub phase_rad: f64,
    /// Amplitude, metres.
    pub amplitude_m: f64,
}

/// The ground: a sum of plane waves over the rectangle `|x| <= half_extent[0]`, `|y| <= half_extent[1]`.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Terrain {
    /// Half sizes of the rectangle along x and y, metres; centred on the origin.
    pub half_extent_m: [f64; 2],
    /// The waves summed; at most [`MAX_WAVES`].
    pub waves: Vec<Wave>,
}

impl Terrain {
    /// `count` (at most [`MAX_WAVES`]) waves of `amplitude_m`, wavelengths drawn from `wavelength_m`, directions and phases uniform.
    pub(crate) fn random(
        half_extent_m: [f64; 2],
        count: usize,
        amplitude_m: f64,
        wavelength_m: [f64; 2],
        rng: &mut BeamRng,
    ) -> Terrain {
        let waves = (0..count.min(MAX_WAVES))
            .map(|_| {
                let dir = TAU * rng.uniform_open0();
                let length =
                    wavelength_m[0] + (wavelength_m[1] - wavelength_m[0]) * rng.uniform_open0();
                let k = TAU / length;
                Wave {
                    k: [k * dir.cos(), k * dir.sin()],
                    phase_rad: TAU * rng.uniform_open0(),
                    amplitude_m,
                }
            })
            .collect();
        Terrain {
            half_extent_m,
            waves,
        }
    }

    /// Ground height at (x, y), metres (also outside the rectangle: the field is defined everywhere).
    pub fn height(&self, x: f64, y: f64) -> f64 {
        self.waves
            .iter()
            .map(|w| w.amplitude_m * (w.k[0] * x + w.k[1] * y + w.phase_rad).cos())
            .sum()
    }

    /// Unit upward normal at (x, y).
    pub fn normal(&self, x: f64, y: f64) -> [f64; 3] {
        let (mut gx, mut gy) = (0.0, 0.0);
        for w in &self.waves {
            let s = -w.amplitude_m * (w.k[0] * x + w.k[1] * y + w.phase_rad).sin();
            gx += s * w.k[0];
            gy += s * w.k[1];
        }
        let n = (gx * gx + gy * gy + 1.0).sqrt();
        [-gx / n, -gy / n, 1.0 / n]
    }

    /// Highest the ground can be anywhere, metres.
    pub fn max_height(&self) -> f64 {
        self.waves.iter().map(|w| w.amplitude_m.abs()).sum()
    }

    /// Whether (x, y) lies over the ground rectangle.
    pub fn covers(&self, x: f64, y: f64) -> bool {
        x.abs() <= self.half_extent_m[0] && y.abs() <= self.half_extent_m[1]
    }

    /// Range of the first crossing of the ground by the unit ray (`o`, `u`) within `t_max`, where the crossing
    /// lies over the rectangle. The origin must be above the ground.
    pub fn raycast(&self, o: [f64; 3], u: [f64; 3], t_max: f64) -> Option<f64> {
        let t_end = t_max.min(self.exit_range(o, u)?);
        // Along the ray the height is sum A cos(p_k + w_k t); |d height / dt| <= sum A |w_k|.
        let mut buf = [(0.0, 0.0, 0.0); MAX_WAVES];
        for (b, w) in buf.iter_mut().zip(&self.waves) {
            let p = w.k[0] * o[0] + w.k[1] * o[1] + w.phase_rad;
            *b = (w.amplitude_m, p, w.k[0] * u[0] + w.k[1] * u[1]);
        }
        let along = &buf[..self.waves.len().min(MAX_WAVES)];
        let gap = |t: f64| {
            o[2] + u[2] * t
                - along
                    .iter()
                    .map(|&(a, p, w)| a * (p + w * t).cos())
                    .sum::<f64>()
        };
        let slope = |t: f64| {
            u[2] + along
                .iter()
                .map(|&(a, p, w)| a * w * (p + w * t).sin())
                .sum::<f64>()
        };
        let closing = along.iter().map(|&(a, _, w)| a * w.abs()).sum::<f64>() - u[2];
        let top = self.max_height();
        let mut t = 0.0;
        let mut g = gap(t);
        if !(g > 0.0) || !(closing > 0.0) {
            return None;
        }
        let mut steps = 0;
        while g > HANDOVER_M {
            // Above every crest and rising: the ray never comes down to the ground.
            if u[2] >= 0.0 && o[2] + u[2] * t > top {
                return None;
            }
            t += g / closing;
            if t > t_end || steps == MAX_STEPS {
                return None;
            }
            g = gap(t);
            steps += 1;
        }
        // The marching stopped at most 1 mm above the first crossing: polish it.
        for _ in 0..4 {
            let d = slope(t);
            if !(d < -1e-9) {
                break;
            }
            let next = t - g / d;
            if !(next.is_finite() && (next - t).abs() <= 2.0 * HANDOVER_M / d.abs()) {
                break;
            }
            t = next;
            g = gap(t);
        }
        (t > 0.0 && t <= t_end).then_some(t)
    }

    /// Range at which the ray leaves the rectangle (in x-y), or `None` when it starts outside.
    fn exit_range(&self, o: [f64; 3], u: [f64; 3]) -> Option<f64> {
        if !self.covers(o[0], o[1]) {
            return None;
        }
        let mut t = f64::INFINITY;
        for k in 0..2 {
            if u[k] > 0.0 {
                t = t.min((self.half_extent_m[k] - o[k]) / u[k]);
            } else if u[k] < 0.0 {
                t = t.min((-self.half_extent_m[k] - o[k]) / u[k]);
            }
        }
        Some(t)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn terrain() -> Terrain {
        Terrain::random(
            [30.0, 20.0],
            4,
            0.2,
            [12.0, 40.0],
            &mut BeamRng::new(3, 0, 0),
        )
    }

    #[test]
    fn hits_are_on_the_ground_and_first() {
        let g = terrain();
        let o = [1.0, -2.0, g.height(1.0, -2.0) + 1.6];
        let mut hits = 0;
        for k in 0..2000 {
            let az = k as f64 * 0.0311;
            let el = -(0.01 + (k % 97) as f64 * 0.012);
            let u = [el.cos() * az.cos(), el.cos() * az.sin(), el.sin()];
            let Some(t) = g.raycast(o, u, 80.0) else {
                continue;
            };
            hits += 1;
            let p = [o[0] + u[0] * t, o[1] + u[1] * t, o[2] + u[2] * t];
            assert!(
                (p[2] - g.height(p[0], p[1])).abs() < 1e-9,
                "{k}: off the ground"
            );
            // Dense samples before the hit are all above the ground: no earlier crossing was skipped.
            for s in 1..200 {
                let q = t * s as f64 / 200.0;
                let z = o[2] + u[2] * q;
                assert!(
                    z > g.height(o[0] + u[0] * q, o[1] + u[1] * q),
                    "{k}: crossed before"
                );
            }
        }
        assert!(hits > 1500, "{hits}");
        // Straight up, and out over the edge of the rectangle.
        assert_eq!(g.raycast(o, [0.0, 0.0, 1.0], 80.0), None);
        assert_eq!(g.raycast(o, [1.0, 0.0, 0.0], 80.0), None);
        let n = g.normal(3.0, 4.0);
        assert!(((n[0] * n[0] + n[1] * n[1] + n[2] * n[2]).sqrt() - 1.0).abs() < 1e-12);
    }
}
