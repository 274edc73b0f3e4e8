//! An exact, order-independent sum of f64 values (docs/architecture.md, "Tiled prepare").
//!
//! Every finite f64 is an integer multiple of 2^-1074 below 2^1024, so a fixed-point integer of about 2100 bits
//! holds any sum of them exactly: the sum of a set of values is then the same whatever the order and the
//! grouping of the additions (threads, chunks, tiles, machines), which a float sum is not. Outlier removal's
//! global mean and spread and the normals' centroid use it, so a tiled prepare and the in-memory one agree to
//! the bit. Written by hand (a superaccumulator in the manner of Kulisch's long accumulator): the crates found
//! (`accurate`, `xsum`) round each partial result, or are unmaintained; this needs only addition and merging.

use serde::{Deserialize, Serialize};

/// Bits per limb: each limb is an i64 holding a 32-bit digit plus room for 2^30 unnormalised additions.
const DIGIT: u32 = 32;
/// Limbs: the bit positions 0..2045+85 of a value times 2^1074, in 32-bit digits, and one for the sign.
const LIMBS: usize = 68;
/// Additions between normalisations (each adds less than 2^32 to a limb; i64 holds 2^62 of them safely).
const RENORMALISE_EVERY: u32 = 1 << 29;

/// An exact sum of f64 values, to be [`ExactSum::add`]ed to, [`ExactSum::merge`]d with another and read
/// with [`ExactSum::value`]. Non-finite values are summed apart (as floats: infinities and NaN are
/// order-independent too) and dominate the result.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ExactSum {
    limbs: Vec<i64>,
    /// Additions since the limbs were last normalised.
    pending: u32,
    /// The sum of the non-finite values (0 when there were none).
    special: f64,
}

impl Default for ExactSum {
    fn default() -> Self {
        ExactSum {
            limbs: vec![0; LIMBS],
            pending: 0,
            special: 0.0,
        }
    }
}

impl ExactSum {
    /// An empty sum (zero).
    pub fn new() -> ExactSum {
        ExactSum::default()
    }

    /// Add `x` exactly.
    #[inline]
    pub fn add(&mut self, x: f64) {
        if !x.is_finite() {
            self.special += x;
            return;
        }
        let bits = x.to_bits();
        let exp = ((bits >> 52) & 0x7ff) as u32;
        let frac = bits & ((1u64 << 52) - 1);
        // x = m * 2^(shift - 1074).
        let (m, shift) = if exp == 0 {
            (frac, 0)
        } else {
            (frac | (1u64 << 52), exp - 1)
        };
        if m == 0 {
            return;
        }
        let at = (shift / DIGIT) as usize;
        let wide = u128::from(m) << (shift % DIGIT);
        let negative = bits >> 63 == 1;
        for j in 0..3 {
            let digit = ((wide >> (DIGIT * j as u32)) & 0xffff_ffff) as i64;
            if negative {
                self.limbs[at + j] -= digit;
            } else {
                self.limbs[at + j] += digit;
            }
        }
        self.pending += 1;
        if self.pending >= RENORMALISE_EVERY {
            self.normalise();
        }
    }

    /// Add every value of `other` (exact: merging partial sums in any grouping gives the same sum).
    pub fn merge(&mut self, other: &ExactSum) {
        let mut other = other.clone();
        other.normalise();
        self.normalise();
        for (a, b) in self.limbs.iter_mut().zip(&other.limbs) {
            *a += b;
        }
        self.special += other.special;
        self.normalise();
    }

    /// Carries propagated: every limb but the last in 0..2^32, the last signed. One value, one form.
    fn normalise(&mut self) {
        for i in 0..LIMBS - 1 {
            let carry = self.limbs[i] >> DIGIT;
            self.limbs[i] -= carry << DIGIT;
            self.limbs[i + 1] += carry;
        }
        self.pending = 0;
    }

    /// The sum, rounded to f64 by a fixed rule (the digits added from the most significant down), so equal
    /// exact sums give equal results.
    pub fn value(&self) -> f64 {
        if self.special != 0.0 || self.special.is_nan() {
            return self.special;
        }
        let mut s = self.clone();
        s.normalise();
        let negative = s.limbs[LIMBS - 1] < 0;
        if negative {
            // Two's complement over the digits: the magnitude's digits, all in 0..2^32.
            let mut carry = 1i64;
            for l in s.limbs.iter_mut() {
                let v = (!*l & 0xffff_ffff) + carry;
                *l = v & 0xffff_ffff;
                carry = v >> DIGIT;
            }
        }
        let mut r = 0.0f64;
        for (i, &l) in s.limbs.iter().enumerate().rev() {
            if l != 0 {
                r += scale2(l as f64, DIGIT as i32 * i as i32 - 1074);
            }
        }
        if negative { -r } else { r }
    }
}

/// `v * 2^e` for any `e` the accumulator uses (exact while the result is representable).
fn scale2(v: f64, e: i32) -> f64 {
    let pow2 = |e: i32| f64::from_bits(((e + 1023) as u64) << 52);
    if e < -1022 {
        v * pow2(e + 100) * pow2(-100)
    } else if e > 1023 {
        v * pow2(1023) * pow2(e - 1023)
    } else {
        v * pow2(e)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn exact_where_floats_are_not() {
        let mut s = ExactSum::new();
        for x in [1e100, 1.0, -1e100, 1e-300, 3.0, -2.5] {
            s.add(x);
        }
        assert_eq!(s.value(), 1.5 + 1e-300);
        let mut t = ExactSum::new();
        t.add(-0.1);
        t.add(-0.2);
        assert_eq!(t.value(), -0.30000000000000004);
        let mut z = ExactSum::new();
        z.add(f64::MIN_POSITIVE / 4.0);
        z.add(f64::MAX);
        z.add(-f64::MAX);
        assert_eq!(z.value(), f64::MIN_POSITIVE / 4.0);
        let mut inf = ExactSum::new();
        inf.add(1.0);
        inf.add(f64::INFINITY);
        assert_eq!(inf.value(), f64::INFINITY);
    }

    #[test]
    fn order_and_grouping_do_not_matter() {
        let mut state = 7u64;
        let values: Vec<f64> = (0..5000)
            .map(|_| {
                state = state
                    .wrapping_mul(6364136223846793005)
                    .wrapping_add(1442695040888963407);
                let m = (state >> 11) as f64 / (1u64 << 53) as f64 - 0.5;
                m * 10f64.powi((state % 40) as i32 - 20)
            })
            .collect();
        let mut forward = ExactSum::new();
        values.iter().for_each(|&v| forward.add(v));
        let mut backward = ExactSum::new();
        values.iter().rev().for_each(|&v| backward.add(v));
        let mut grouped = ExactSum::new();
        for chunk in values.chunks(333).rev() {
            let mut part = ExactSum::new();
            chunk.iter().for_each(|&v| part.add(v));
            grouped.merge(&part);
        }
        assert_eq!(forward.value().to_bits(), backward.value().to_bits());
        assert_eq!(forward.value().to_bits(), grouped.value().to_bits());
    }

    proptest::proptest! {
        /// Any split of any finite values into parts, summed in any order, gives the same bits.
        #[test]
        fn partial_sums_combine_exactly(
            values in proptest::collection::vec(
                proptest::num::f64::NORMAL | proptest::num::f64::SUBNORMAL | proptest::num::f64::ZERO,
                0..200,
            ),
            cut in 0usize..200,
        ) {
            let cut = cut.min(values.len());
            let mut whole = ExactSum::new();
            values.iter().for_each(|&v| whole.add(v));
            let (a, b) = values.split_at(cut);
            let mut left = ExactSum::new();
            a.iter().rev().for_each(|&v| left.add(v));
            let mut right = ExactSum::new();
            b.iter().for_each(|&v| right.add(v));
            right.merge(&left);
            proptest::prop_assert_eq!(whole.value().to_bits(), right.value().to_bits());
        }
    }
}
