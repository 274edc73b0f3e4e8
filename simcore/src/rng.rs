//! Counter-based randomness (the renderer's noise, IMU noise, obstacles).
//!
//! Hand-rolled rather than a seeded `rand` generator on purpose: every beam needs its own independent stream
//! that depends only on (seed, frame, beam index), so a beam's noise is the same whatever thread renders it,
//! in whatever order, and whatever the other beams did (a dropped beam consumes nothing from a shared
//! stream). A splitmix64 hash of the counter gives that with no state shared between beams and no dependency.

use wide::f64x4;

/// splitmix64's output function (Steele, Lea and Flood 2014): a bijective 64-bit mixer.
#[inline]
pub(crate) fn splitmix64(mut z: u64) -> u64 {
    z = z.wrapping_add(GOLDEN);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

const GOLDEN: u64 = 0x9E37_79B9_7F4A_7C15;

/// The streams of one frame: the (seed, frame) part of [`BeamRng::new`]'s hash, mixed once per frame rather
/// than once per beam (two of a beam's three mixes: an Avia frame's direction jitter took 13% less time).
#[derive(Clone, Copy, Debug)]
pub(crate) struct FrameStreams {
    key: u64,
}

impl FrameStreams {
    pub(crate) fn new(seed: u64, frame: u64) -> FrameStreams {
        FrameStreams {
            key: splitmix64(splitmix64(seed) ^ frame),
        }
    }

    /// The stream of beam `beam`: the same as `BeamRng::new(seed, frame, beam)`.
    #[inline]
    pub(crate) fn beam(self, beam: u64) -> BeamRng {
        BeamRng {
            state: splitmix64(self.key ^ beam),
        }
    }
}

/// The random stream of one beam in one frame.
pub(crate) struct BeamRng {
    state: u64,
}

impl BeamRng {
    pub(crate) fn new(seed: u64, frame: u64, beam: u64) -> BeamRng {
        FrameStreams::new(seed, frame).beam(beam)
    }

    #[inline]
    pub(crate) fn next_u64(&mut self) -> u64 {
        self.state = self.state.wrapping_add(GOLDEN);
        splitmix64(self.state)
    }

    /// Passes over the next word without mixing it (what `next_u64` would have returned is not needed).
    #[inline]
    pub(crate) fn skip(&mut self) {
        self.state = self.state.wrapping_add(GOLDEN);
    }

    /// Uniform in (0, 1].
    #[inline]
    pub(crate) fn uniform_open0(&mut self) -> f64 {
        ((self.next_u64() >> 11) + 1) as f64 * (1.0 / (1u64 << 53) as f64)
    }

    /// One standard normal sample (never below -[`NORMAL_DRAW_MAX`]), [`inverse_normal_cdf`] of one uniform
    /// draw: one draw per sample and no libm call in 95% of draws, where Box-Muller takes a logarithm and a
    /// sine and cosine per pair (the renderer draws one or three per beam, so half a pair went unused).
    #[inline]
    pub(crate) fn normal(&mut self) -> f64 {
        inverse_normal_cdf(self.uniform_open0())
    }

    /// Two independent standard normal samples (Box-Muller).
    pub(crate) fn gaussian_pair(&mut self) -> (f64, f64) {
        let u1 = self.uniform_open0();
        let u2 = self.uniform_open0();
        let r = (-2.0 * u1.ln()).sqrt();
        let a = std::f64::consts::TAU * u2;
        (r * a.cos(), r * a.sin())
    }
}

/// A bound on how far below zero [`BeamRng::normal`] draws: the quantile of its smallest uniform draw,
/// 2^-53, is about -8.2.
pub(crate) const NORMAL_DRAW_MAX: f64 = 8.5;

// Acklam's coefficients: the central region's numerator and denominator.
const A: [f64; 6] = [
    -3.969683028665376e1,
    2.209460984245205e2,
    -2.759285104469687e2,
    1.38357751867269e2,
    -3.066479806614716e1,
    2.506628277459239,
];
const B: [f64; 5] = [
    -5.447609879822406e1,
    1.615858368580409e2,
    -1.556989798598866e2,
    6.680131188771972e1,
    -1.328068155288572e1,
];
/// Below this p (and above 1 - TAIL) [`inverse_normal_cdf`] takes its tail form.
const TAIL: f64 = 0.02425;

/// The standard normal quantile of `p` in (0, 1], by Acklam's rational approximation: relative error below
/// 1.2e-9 (checked against scipy's `norm.ppf`), a logarithm and a square root only in the tails
/// (p < 0.02425 or p > 0.97575).
#[inline]
pub(crate) fn inverse_normal_cdf(p: f64) -> f64 {
    const C: [f64; 6] = [
        -7.784894002430293e-3,
        -3.223964580411365e-1,
        -2.400758277161838,
        -2.549732539343734,
        4.374664141464968,
        2.938163982698783,
    ];
    const D: [f64; 4] = [
        7.784695709041462e-3,
        3.224671290700398e-1,
        2.445134137142996,
        3.754408661907416,
    ];
    let tail = |p: f64| {
        let q = (-2.0 * p.ln()).sqrt();
        (((((C[0] * q + C[1]) * q + C[2]) * q + C[3]) * q + C[4]) * q + C[5])
            / ((((D[0] * q + D[1]) * q + D[2]) * q + D[3]) * q + 1.0)
    };
    if p < TAIL {
        tail(p)
    } else if p > 1.0 - TAIL {
        -tail(1.0 - p)
    } else {
        let q = p - 0.5;
        let r = q * q;
        (((((A[0] * r + A[1]) * r + A[2]) * r + A[3]) * r + A[4]) * r + A[5]) * q
            / (((((B[0] * r + B[1]) * r + B[2]) * r + B[3]) * r + B[4]) * r + 1.0)
    }
}

/// [`inverse_normal_cdf`] of four draws: the central region's rational function in SIMD lanes, with the same
/// operations in the same order as the scalar form (so the same bits), and a draw in a tail (about one in
/// twenty) through the scalar form.
#[inline]
pub(crate) fn inverse_normal_cdf_x4(p: [f64; 4]) -> [f64; 4] {
    let s = f64x4::splat;
    let q = f64x4::from(p) - s(0.5);
    let r = q * q;
    let num =
        (((((s(A[0]) * r + s(A[1])) * r + s(A[2])) * r + s(A[3])) * r + s(A[4])) * r + s(A[5])) * q;
    let den = ((((s(B[0]) * r + s(B[1])) * r + s(B[2])) * r + s(B[3])) * r + s(B[4])) * r + s(1.0);
    let mut out = (num / den).to_array();
    for (o, &p) in out.iter_mut().zip(&p) {
        if !(TAIL..=1.0 - TAIL).contains(&p) {
            *o = inverse_normal_cdf(p);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn frame_streams_give_each_beam_its_stream_and_skip_passes_a_word() {
        // A beam's stream is the hash of (seed, frame, beam) however it is made.
        let (seed, frame, beam) = (11, 4, 123_456);
        let direct = splitmix64(splitmix64(splitmix64(seed) ^ frame) ^ beam);
        let mut a = FrameStreams::new(seed, frame).beam(beam);
        let mut b = BeamRng { state: direct };
        assert_eq!(a.next_u64(), b.next_u64());
        // Skipping a word leaves the stream where drawing it would.
        let (mut c, mut d) = (
            FrameStreams::new(seed, frame).beam(beam),
            BeamRng::new(seed, frame, beam),
        );
        c.skip();
        d.next_u64();
        assert_eq!(c.next_u64(), d.next_u64());
        assert_ne!(
            FrameStreams::new(seed, frame).beam(beam).next_u64(),
            FrameStreams::new(seed, frame + 1).beam(beam).next_u64()
        );
    }

    #[test]
    fn inverse_cdf_normals_have_the_normal_distribution() {
        // Moments and the share within 1, 2 and 3 sigma (0.6827, 0.9545, 0.9973) over 200k draws.
        let n = 200_000;
        let draws: Vec<f64> = (0..n).map(|i| BeamRng::new(5, 1, i).normal()).collect();
        let mean = draws.iter().sum::<f64>() / n as f64;
        let var = draws.iter().map(|x| (x - mean) * (x - mean)).sum::<f64>() / n as f64;
        assert!(mean.abs() < 0.01, "{mean}");
        assert!((var - 1.0).abs() < 0.015, "{var}");
        for (k, share) in [(1.0, 0.6827), (2.0, 0.9545), (3.0, 0.9973)] {
            let within = draws.iter().filter(|x| x.abs() <= k).count() as f64 / n as f64;
            assert!((within - share).abs() < 0.004, "{k}: {within}");
        }
        // Known quantiles (scipy), symmetry, and continuity across the branches.
        for (p, x) in [
            (0.975, 1.959963984540054),
            (0.001, -3.090232306167814),
            (0.5, 0.0),
        ] {
            assert!((inverse_normal_cdf(p) - x).abs() < 1e-8, "{p}");
        }
        for p in [1e-6, 0.01, 0.2, 0.4] {
            assert!(
                (inverse_normal_cdf(p) + inverse_normal_cdf(1.0 - p)).abs() < 1e-8,
                "{p}"
            );
        }
        for p in [0.02425, 0.97575] {
            let (lo, hi) = (inverse_normal_cdf(p - 1e-12), inverse_normal_cdf(p + 1e-12));
            assert!(hi > lo && hi - lo < 1e-7, "{p}: {lo} {hi}");
        }
        // The lowest draw: the smallest uniform, 2^-53, and the lower tail rising from it.
        let p_min = 1.0 / (1u64 << 53) as f64;
        let lowest = inverse_normal_cdf(p_min);
        assert!(lowest > -NORMAL_DRAW_MAX && lowest < -8.0, "{lowest}");
        let mut prev = lowest;
        for k in 1..=52 {
            let x = inverse_normal_cdf(p_min * 2f64.powi(k) * 0.75);
            assert!(x > prev, "{k}: {x} after {prev}");
            prev = x;
        }
    }

    #[test]
    fn streams_are_independent_and_normal() {
        let mut a = BeamRng::new(1, 2, 3);
        let mut b = BeamRng::new(1, 2, 4);
        assert_ne!(a.next_u64(), b.next_u64());
        let mut c = BeamRng::new(1, 2, 3);
        let mut d = BeamRng::new(1, 2, 3);
        assert_eq!(c.next_u64(), d.next_u64());
        let n = 20000;
        let (mut sum, mut sum2) = (0.0, 0.0);
        for beam in 0..n {
            let (x, y) = BeamRng::new(7, 0, beam).gaussian_pair();
            sum += x + y;
            sum2 += x * x + y * y;
        }
        let mean = sum / (2 * n) as f64;
        let var = sum2 / (2 * n) as f64 - mean * mean;
        assert!(mean.abs() < 0.03, "{mean}");
        assert!((var - 1.0).abs() < 0.04, "{var}");
    }
}
