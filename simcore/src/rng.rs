//! Counter-based randomness (the renderer's noise, IMU noise, obstacles).
//!
//! Hand-rolled rather than a seeded `rand` generator on purpose: every beam needs its own independent stream
//! that depends only on (seed, frame, beam index), so a beam's noise is the same whatever thread renders it,
//! in whatever order, and whatever the other beams did (a dropped beam consumes nothing from a shared
//! stream). A splitmix64 hash of the counter gives that with no state shared between beams and no dependency.

/// splitmix64's output function (Steele, Lea and Flood 2014): a bijective 64-bit mixer.
#[inline]
pub(crate) fn splitmix64(mut z: u64) -> u64 {
    z = z.wrapping_add(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// The random stream of one beam in one frame.
pub(crate) struct BeamRng {
    state: u64,
}

impl BeamRng {
    pub(crate) fn new(seed: u64, frame: u64, beam: u64) -> BeamRng {
        BeamRng {
            state: splitmix64(splitmix64(splitmix64(seed) ^ frame) ^ beam),
        }
    }

    #[inline]
    pub(crate) fn next_u64(&mut self) -> u64 {
        self.state = self.state.wrapping_add(0x9E37_79B9_7F4A_7C15);
        splitmix64(self.state)
    }

    /// Uniform in (0, 1].
    #[inline]
    pub(crate) fn uniform_open0(&mut self) -> f64 {
        ((self.next_u64() >> 11) + 1) as f64 * (1.0 / (1u64 << 53) as f64)
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

#[cfg(test)]
mod tests {
    use super::*;

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
