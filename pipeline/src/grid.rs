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

/// The lowest and highest world cells of side `side` that hold the (finite) points (`[i64::MAX; 3]` and
/// `[i64::MIN; 3]` for none): the cells of the lowest and highest positions, since a point's cell never
/// decreases as a coordinate grows.
pub(crate) fn cell_bounds(
    origin: [f64; 3],
    positions: &[[f32; 3]],
    side: f64,
) -> ([i64; 3], [i64; 3]) {
    let (lo, hi) = crate::cloud::par_position_bounds(positions);
    (world_cell(origin, lo, side), world_cell(origin, hi, side))
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

/// How [`sort_into_runs`] sorts.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Sorting {
    /// Radix sorts of two halves on two threads, then a merge: about twice as fast as rayon's sort on two
    /// cores, with a second buffer of 8 bytes a point for the time of the sort.
    Radix,
    /// Rayon's parallel pattern-defeating quicksort, in place: for a sort at a prepare's peak of memory.
    InPlace,
}

/// Sort points `0..n` by (`key(i)`, i) for keys below `2^key_bits`, and cut the order into runs of equal
/// `key >> run_shift`. The pair is packed into one u64 when key and index fit (the common case: a few million
/// points and keys of a few tens of bits): the sort then moves half the bytes, where it was a tenth of a whole
/// prepare. Deterministic: the (key, index) pairs are unique.
pub(crate) fn sort_into_runs(
    n: usize,
    key_bits: u32,
    run_shift: u32,
    sorting: Sorting,
    key: impl Fn(usize) -> u64 + Sync,
) -> CellRuns {
    use rayon::prelude::*;
    /// The runs of equal `key(x) >> run_shift` over the sorted `v`: their keys and starts, then `v.len()`.
    /// Counted, then listed, chunk by chunk in parallel: the arrays are allocated once at their length (grown
    /// by doubling, they left their outgrown blocks resident: a run per point or so when a grid is fine).
    fn runs<T: Sync>(
        v: &[T],
        run_shift: u32,
        key: impl Fn(&T) -> u64 + Sync,
    ) -> (Vec<u64>, Vec<u32>) {
        const CHUNK: usize = 1 << 16;
        let run_key = |j: usize| key(&v[j]) >> run_shift;
        let starts_run = |j: usize| j == 0 || run_key(j) != run_key(j - 1);
        let chunk = |c: usize| c * CHUNK..((c + 1) * CHUNK).min(v.len());
        let chunks = v.len().div_ceil(CHUNK);
        let counts: Vec<usize> = (0..chunks)
            .into_par_iter()
            .map(|c| chunk(c).filter(|&j| starts_run(j)).count())
            .collect();
        let count = counts.iter().sum();
        let (mut keys, mut starts) = (vec![0u64; count], vec![0u32; count + 1]);
        let mut parts = Vec::with_capacity(chunks);
        let (mut rest_keys, mut rest_starts) = (&mut keys[..], &mut starts[..count]);
        for &m in &counts {
            let (k, kt) = rest_keys.split_at_mut(m);
            let (s, st) = rest_starts.split_at_mut(m);
            parts.push((k, s));
            (rest_keys, rest_starts) = (kt, st);
        }
        parts.into_par_iter().enumerate().for_each(|(c, (k, s))| {
            for (j, (k, s)) in chunk(c).filter(|&j| starts_run(j)).zip(k.iter_mut().zip(s)) {
                (*k, *s) = (run_key(j), j as u32);
            }
        });
        starts[count] = v.len() as u32;
        (keys, starts)
    }
    let index_bits = usize::BITS - n.saturating_sub(1).leading_zeros();
    let (order, (keys, starts)) = if key_bits + index_bits <= 64 {
        let mut packed: Vec<u64> = (0..n)
            .into_par_iter()
            .map(|i| (key(i) << index_bits) | i as u64)
            .collect();
        match sorting {
            Sorting::Radix => sort_packed(&mut packed, index_bits, key_bits),
            Sorting::InPlace => packed.par_sort_unstable(),
        }
        let mask = (1u64 << index_bits) - 1;
        let order = packed.par_iter().map(|&k| (k & mask) as u32).collect();
        (order, runs(&packed, run_shift, |&x| x >> index_bits))
    } else {
        let mut keyed: Vec<(u64, u32)> =
            (0..n).into_par_iter().map(|i| (key(i), i as u32)).collect();
        keyed.par_sort_unstable();
        let order = keyed.par_iter().map(|&(_, i)| i).collect();
        (order, runs(&keyed, run_shift, |x| x.0))
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

/// Sorts `v`, whose values lie below 2^(lo + bits) and, among those with equal bits `lo..lo + bits`, are
/// already in order: the packed (key, index) pairs of [`sort_into_runs`], made in index order, or any values
/// with `lo` 0. Each half is sorted by those bits alone with a stable radix sort, on its own thread, and the
/// halves are merged in two parts at once: on lone_star's 519k keys, 3.5-4.0 ms against 6.7-7.6 ms for
/// rayon's `par_sort_unstable` on two cores. It needs a second buffer, as long as `v`, for the time of the
/// sort.
pub(crate) fn sort_packed(v: &mut Vec<u64>, lo: u32, bits: u32) {
    use rayon::join;
    let n = v.len();
    if n < 1 << 14 {
        v.sort_unstable();
        return;
    }
    let mut out = vec![0u64; n];
    let mid = n / 2;
    {
        let (a, b) = v.split_at_mut(mid);
        let (ta, tb) = out.split_at_mut(mid);
        let key = |x: &u64| x >> lo;
        join(
            || radix_sort(a, ta, bits, key),
            || radix_sort(b, tb, bits, key),
        );
    }
    let (a, b) = v.split_at(mid);
    let i = a.len() / 2;
    let j = b.partition_point(|&x| x < a[i]);
    let (head, tail) = out.split_at_mut(i + j);
    join(
        || merge(&a[..i], &b[..j], head),
        || merge(&a[i..], &b[j..], tail),
    );
    *v = out;
}

/// Stable least-significant-digit radix sort of `v` by the low `bits` bits of `key`, `tmp` (as long as `v`)
/// taking the passes: one counting pass for every digit, then a pass per digit that not all keys share.
/// Digits of 8 bits below 2^14 values (their counts stay small beside the data), else of 11. Several times
/// faster than a comparison sort on the buckets' few thousand small keys, and twice rayon's parallel sort on
/// the neighbour index's keys (see [`sort_packed`]).
pub(crate) fn radix_sort<T: Copy>(v: &mut [T], tmp: &mut [T], bits: u32, key: impl Fn(&T) -> u64) {
    let digit_bits = if v.len() < 1 << 14 { 8 } else { 11 };
    let radix = 1usize << digit_bits;
    let bits = bits.min(u64::BITS);
    let mask = u64::MAX >> (u64::BITS - bits.max(1));
    let passes = bits.div_ceil(digit_bits) as usize;
    let digit =
        |x: &T, pass: usize| ((key(x) & mask) >> (pass as u32 * digit_bits)) as usize & (radix - 1);
    let mut counts = vec![0usize; passes * radix];
    for x in v.iter() {
        for (pass, c) in counts.chunks_exact_mut(radix).enumerate() {
            c[digit(x, pass)] += 1;
        }
    }
    let mut in_tmp = false;
    for (pass, c) in counts.chunks_exact_mut(radix).enumerate() {
        if c.contains(&v.len()) {
            continue;
        }
        let mut at = 0;
        for k in c.iter_mut() {
            (*k, at) = (at, at + *k);
        }
        let (from, to): (&[T], &mut [T]) = if in_tmp { (tmp, v) } else { (v, tmp) };
        for x in from {
            let d = digit(x, pass);
            to[c[d]] = *x;
            c[d] += 1;
        }
        in_tmp = !in_tmp;
    }
    if in_tmp {
        v.copy_from_slice(tmp);
    }
}

/// [`radix_sort`] of a whole vector, with a buffer of its own.
pub(crate) fn radix_sort_with_buffer<T: Copy>(v: &mut [T], bits: u32, key: impl Fn(&T) -> u64) {
    let mut tmp = v.to_vec();
    radix_sort(v, &mut tmp, bits, key);
}

/// Merges the ascending `a` and `b` into `out` (as long as both).
fn merge(a: &[u64], b: &[u64], out: &mut [u64]) {
    let (mut i, mut j) = (0, 0);
    for o in out {
        if j == b.len() || (i < a.len() && a[i] < b[j]) {
            *o = a[i];
            i += 1;
        } else {
            *o = b[j];
            j += 1;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cell_bounds_are_the_lowest_and_highest_cells_of_the_points() {
        let mut next = values(7);
        let origin = [-3.7, 1234.5, 0.0];
        // Coordinates on both sides of zero and on cell faces (multiples of the side, exactly).
        let mut coord = || match next() % 4 {
            0 => ((next() % 64) as f32 - 32.0) * 0.25,
            _ => (next() % 20_000) as f32 * 1e-3 - 10.0,
        };
        let positions: Vec<[f32; 3]> = (0..100_000).map(|_| [coord(), coord(), coord()]).collect();
        for side in [0.25, 0.1, 1.0 / 3.0, 7.0] {
            let cells: Vec<[i64; 3]> = positions
                .iter()
                .map(|&p| world_cell(origin, p, side))
                .collect();
            let want_lo = std::array::from_fn(|a| cells.iter().map(|c| c[a]).min().unwrap());
            let want_hi = std::array::from_fn(|a| cells.iter().map(|c| c[a]).max().unwrap());
            assert_eq!(
                cell_bounds(origin, &positions, side),
                (want_lo, want_hi),
                "side {side}"
            );
        }
        assert_eq!(
            cell_bounds(origin, &[], 0.5),
            ([i64::MAX; 3], [i64::MIN; 3])
        );
    }

    /// A seeded generator of 64-bit values (an LCG, its high bits folded into the low ones).
    fn values(mut s: u64) -> impl FnMut() -> u64 {
        move || {
            s = s
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            s ^ (s >> 29)
        }
    }

    #[test]
    fn radix_sort_is_a_stable_sort_by_the_key() {
        let mut next = values(3);
        // Below and above 2^14 values (digits of 8 and of 11 bits).
        for (n, bits) in [
            (0, 8),
            (1, 8),
            (5, 3),
            (1000, 18),
            (3000, 40),
            (500, 64),
            (40_000, 64),
            (40_000, 23),
        ] {
            let mask = if bits >= 64 {
                u64::MAX
            } else {
                (1u64 << bits) - 1
            };
            // Few distinct keys, so that stability is exercised; bits above `bits` are ignored.
            let v: Vec<(u64, u32)> = (0..n)
                .map(|i| (next() & mask & 0xF0F0_F0F0_F0F0_F0F1 | (next() & !mask), i))
                .collect();
            let mut want = v.clone();
            want.sort_by_key(|x| x.0 & mask);
            let mut got = v;
            radix_sort_with_buffer(&mut got, bits, |x| x.0);
            assert_eq!(got, want, "n {n}, bits {bits}");
        }
    }

    #[test]
    fn sort_packed_matches_a_sort() {
        let mut next = values(7);
        for (n, key_bits, spread) in [
            (1000, 10, 1),
            (70_001, 37, 1),
            (70_001, 37, 1 << 11),
            (100_000, 3, 1),
        ] {
            let index_bits = usize::BITS - (n - 1usize).leading_zeros();
            // Keys with ties, and (spread) with a low digit that every key shares, which the sort skips.
            let mut v: Vec<u64> = (0..n as u64)
                .map(|i| (((next() >> 33) * spread) % (1 << key_bits)) << index_bits | i)
                .collect();
            let mut want = v.clone();
            want.sort_unstable();
            sort_packed(&mut v, index_bits, key_bits);
            assert_eq!(v, want, "n {n} key bits {key_bits} spread {spread}");
        }
    }

    #[test]
    fn runs_match_a_sort_of_pairs_packed_or_not() {
        // Enough keys for the radix sort (below 2^14 both sort in place) and for runs that cross the edges of
        // the chunks that `runs` works in.
        let keys: Vec<u64> = (0..150_000u64)
            .map(|i| (i * 7919 % 613) * 3 + (i % 3 == 0) as u64)
            .collect();
        let mut want: Vec<(u64, u32)> = keys
            .iter()
            .enumerate()
            .map(|(i, &k)| (k, i as u32))
            .collect();
        want.sort_unstable();
        for (key_bits, sorting) in [11, 63]
            .into_iter()
            .flat_map(|b| [(b, Sorting::Radix), (b, Sorting::InPlace)])
        {
            let got = sort_into_runs(keys.len(), key_bits, 2, sorting, |i| keys[i]);
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
