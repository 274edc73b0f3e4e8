//! Integer cells of the world frame, shared by the stages that bin points (downsampling, map buckets), and
//! the sort of points into runs of equal cell keys that the neighbour index and the map buckets share.
//!
//! A cell of side `s` holds the world points with `floor(world / s) = c` on each axis, world = the cloud's
//! f64 origin + the f32 position, so two clouds (or two tiles of one map) bin a point the same way whatever
//! their origins. This is also how the .amap format defines bucket coordinates (docs/amap-format.md), so
//! bucketing must bin through it.

/// `v.floor() as i64`, with the same results (saturating; NaN gives 0), without the call into libm that
/// `f64::floor` compiles to on the x86-64 baseline (no SSE4.1): binning runs it three times per point, and the
/// call showed in profiles of a whole prepare.
#[inline]
pub(crate) fn floor_i64(v: f64) -> i64 {
    // `as` truncates toward zero; below zero a non-integer then lies one above its floor.
    let t = v as i64;
    t.saturating_sub(i64::from((t as f64) > v))
}

/// The world cell of side `side` (metres, > 0) that holds position `p` of a cloud with origin `origin`.
#[inline]
pub(crate) fn world_cell(origin: [f64; 3], p: [f32; 3], side: f64) -> [i64; 3] {
    std::array::from_fn(|a| floor_i64((origin[a] + f64::from(p[a])) / side))
}

/// Points sorted into runs of one cell: points `0..n` sorted by (`key(i)`, i).
pub(crate) struct CellRuns {
    /// The points in sorted order.
    pub order: Vec<u32>,
    /// Each run's key, `key >> run_shift`, ascending.
    pub keys: Vec<u64>,
    /// Where each run starts in `order`, then `n`.
    pub starts: Vec<u32>,
}

/// Sort points `0..n` by (`key(i)`, i) for keys below `2^key_bits`, and cut the order into runs of equal
/// `key >> run_shift`. The pair is packed into one u64 when key and index fit (the common case: a few million
/// points and keys of a few tens of bits): the sort then moves half the bytes, where it was a tenth of a whole
/// prepare. Deterministic: the (key, index) pairs are unique.
pub(crate) fn sort_into_runs(
    n: usize,
    key_bits: u32,
    run_shift: u32,
    key: impl Fn(usize) -> u64 + Sync,
) -> CellRuns {
    use rayon::prelude::*;
    /// The runs of equal `key_at(j) >> run_shift` over the sorted `0..n`: their keys and starts, then `n`.
    fn runs(n: usize, run_shift: u32, key_at: impl Fn(usize) -> u64) -> (Vec<u64>, Vec<u32>) {
        // Counted first and allocated once: grown by doubling, the arrays left their outgrown blocks
        // resident (a cell per point or so when a grid is fine).
        let count = (0..n)
            .filter(|&j| j == 0 || key_at(j) >> run_shift != key_at(j - 1) >> run_shift)
            .count();
        let (mut keys, mut starts) = (Vec::with_capacity(count), Vec::with_capacity(count + 1));
        for j in 0..n {
            let c = key_at(j) >> run_shift;
            if keys.last() != Some(&c) {
                keys.push(c);
                starts.push(j as u32);
            }
        }
        starts.push(n as u32);
        (keys, starts)
    }
    let index_bits = usize::BITS - n.saturating_sub(1).leading_zeros();
    let (order, (keys, starts)) = if key_bits + index_bits <= 64 {
        let mut packed: Vec<u64> = (0..n)
            .into_par_iter()
            .map(|i| (key(i) << index_bits) | i as u64)
            .collect();
        packed.par_sort_unstable();
        let mask = (1u64 << index_bits) - 1;
        let order = packed.par_iter().map(|&k| (k & mask) as u32).collect();
        (order, runs(n, run_shift, |j| packed[j] >> index_bits))
    } else {
        let mut keyed: Vec<(u64, u32)> =
            (0..n).into_par_iter().map(|i| (key(i), i as u32)).collect();
        keyed.par_sort_unstable();
        let order = keyed.par_iter().map(|&(_, i)| i).collect();
        (order, runs(n, run_shift, |j| keyed[j].0))
    };
    // The sort's keys (8 or 16 bytes a point) are freed: their pages go back, or they would stay resident under
    // the caller's next arrays (a stage's peak).
    crate::memory::release_free_memory();
    CellRuns {
        order,
        keys,
        starts,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn runs_match_a_sort_of_pairs_packed_or_not() {
        let keys: Vec<u64> = (0..5000u64)
            .map(|i| (i * 7919 % 613) * 3 + (i % 3 == 0) as u64)
            .collect();
        let mut want: Vec<(u64, u32)> = keys
            .iter()
            .enumerate()
            .map(|(i, &k)| (k, i as u32))
            .collect();
        want.sort_unstable();
        for key_bits in [11, 63] {
            let got = sort_into_runs(keys.len(), key_bits, 2, |i| keys[i]);
            let order: Vec<u32> = want.iter().map(|p| p.1).collect();
            assert_eq!(got.order, order);
            assert_eq!(*got.starts.last().unwrap() as usize, keys.len());
            for (r, &c) in got.keys.iter().enumerate() {
                let run = got.starts[r] as usize..got.starts[r + 1] as usize;
                assert!(!run.is_empty());
                assert!(want[run].iter().all(|p| p.0 >> 2 == c));
            }
            assert!(got.keys.windows(2).all(|w| w[0] < w[1]));
        }
    }

    #[test]
    fn floor_i64_matches_floor() {
        let special = [
            0.0,
            -0.0,
            0.5,
            -0.5,
            1.0,
            -1.0,
            -1.5,
            2.999_999_999_999_999_6,
            -2.999_999_999_999_999_6,
            f64::MIN_POSITIVE,
            -f64::MIN_POSITIVE,
            4.5e15,
            -4.5e15,
            9.007_199_254_740_993e15,
            -9.007_199_254_740_993e15,
            9.2e18,
            -9.2e18,
            1e19,
            -1e19,
            1e300,
            -1e300,
            f64::INFINITY,
            f64::NEG_INFINITY,
            f64::NAN,
        ];
        let mut seed = 0x9e37_79b9_7f4a_7c15u64;
        let random = (0..100_000).map(|_| {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            // Mantissa and exponent at random: every magnitude from 2^-20 to 2^70, both signs.
            let e = (seed >> 52) % 90;
            let m = (seed & ((1 << 52) - 1)) as f64 / (1u64 << 52) as f64 + 1.0;
            let v = m * 2f64.powi(e as i32 - 20);
            if seed & 1 == 0 { v } else { -v }
        });
        for v in special.into_iter().chain(random) {
            assert_eq!(floor_i64(v), v.floor() as i64, "{v:e}");
        }
    }

    #[test]
    fn world_cell_uses_the_world_frame() {
        // The same world point from two origins lands in the same cell.
        let a = world_cell([100.0, -200.0, 0.0], [0.25, -0.25, 1.0], 0.5);
        let b = world_cell([0.0, 0.0, 0.0], [100.25, -200.25, 1.0], 0.5);
        assert_eq!(a, b);
        assert_eq!(a, [200, -401, 2]);
    }
}
