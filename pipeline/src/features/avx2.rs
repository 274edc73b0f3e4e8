//! The neighbour search's candidate listing ([`super::neighbors`]) in eight AVX2 lanes, chosen at run time
//! where the processor has AVX2 (x86-64 processors since 2013-2015). One of the crate's three places with
//! `unsafe`: the vector loads and stores, within slices whose lengths are asserted once per run, and the call
//! of a function compiled for AVX2, made only after the processor is known to have it.
//!
//! Why: listing the candidates within a bound was half of statistical outlier removal's instructions. The
//! 128-bit baseline (SSE2) has no lane permute, so the four-lane listing stores each chunk's passing slots
//! through a table and gathers their distances in a second loop; AVX2 permutes a chunk's eight distances
//! into place (`vpermps`), so one store of the slots and one of the distances list them. On lone_star this
//! took 21% of SOR's instructions and 12-14% of its time (docs/benchmarks.md, 2026-11-25). The values are the
//! four-lane path's: the same f32 subtractions, multiplications and additions in the same order (never
//! fused), the same ordered comparison, the same slot order (test `both_listings_agree`).

#[cfg(target_arch = "x86_64")]
use std::arch::x86_64::*;

/// Lanes of the vectors here.
pub(super) const LANES8: usize = 8;

/// For each 8-bit mask (`_mm256_movemask_ps`), its set lanes in ascending order (the others repeat lane 0,
/// past the count, where the next store overwrites them).
#[cfg(target_arch = "x86_64")]
static PERMUTE: [[u32; LANES8]; 256] = {
    let mut table = [[0u32; LANES8]; 256];
    let mut mask = 0;
    while mask < 256 {
        let (mut lane, mut set) = (0, 0);
        while lane < LANES8 {
            if mask & (1 << lane) != 0 {
                table[mask][set] = lane as u32;
                set += 1;
            }
            lane += 1;
        }
        mask += 1;
    }
    table
};

/// Whether this processor runs [`list`] (checked once, then cached by the standard library).
#[inline]
pub(super) fn available() -> bool {
    #[cfg(target_arch = "x86_64")]
    {
        is_x86_feature_detected!("avx2") && is_x86_feature_detected!("popcnt")
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        false
    }
}

/// A query's rows of candidates, for this listing and the four-lane one: row `r` in `rows` is the run
/// `start[r * nx + c0]..start[r * nx + c1 + 1]` of the structure of arrays `xs, ys, zs` (padded by [`LANES8`]
/// - 1 past its end), for `cols = (c0, c1)`.
pub(super) struct Query<'a> {
    pub xs: &'a [f32],
    pub ys: &'a [f32],
    pub zs: &'a [f32],
    pub start: &'a [u32],
    pub nx: usize,
    pub rows: (usize, usize),
    pub cols: (usize, usize),
    pub q: [f32; 3],
    pub tau: f32,
}

/// Lists the candidates of `query` whose squared distance to `q` is at most `tau`: their slots, in slot
/// order, into `listed` and their squared distances into `near`; returns how many. `listed` and `near` need
/// room for every run rounded up to whole chunks of [`LANES8`].
///
/// Panics if a slice is too short, or where [`available`] is false.
pub(super) fn list(query: &Query, listed: &mut [u32], near: &mut [f32]) -> usize {
    assert!(available(), "avx2::list needs AVX2");
    #[cfg(target_arch = "x86_64")]
    #[allow(unsafe_code)]
    // SAFETY: the processor has AVX2 and POPCNT (asserted above), the features `run` is compiled for.
    unsafe {
        run(query, listed, near)
    }
    #[cfg(not(target_arch = "x86_64"))]
    unreachable!()
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2,popcnt")]
#[allow(unsafe_code)]
fn run(query: &Query, listed: &mut [u32], near: &mut [f32]) -> usize {
    let Query {
        xs,
        ys,
        zs,
        start,
        nx,
        rows: (r0, r1),
        cols: (c0, c1),
        q,
        tau,
    } = *query;
    let (qx, qy, qz) = (
        _mm256_set1_ps(q[0]),
        _mm256_set1_ps(q[1]),
        _mm256_set1_ps(q[2]),
    );
    let tau8 = _mm256_set1_ps(tau);
    let table = PERMUTE.as_ptr();
    let mut n = 0;
    for row in r0..=r1 {
        let (a, e) = (
            start[row * nx + c0] as usize,
            start[row * nx + c1 + 1] as usize,
        );
        let len = (e - a).next_multiple_of(LANES8);
        assert!(
            a + len <= xs.len().min(ys.len()).min(zs.len())
                && n + len <= listed.len().min(near.len()),
            "avx2::list: a run past its arrays"
        );
        let mut w = 0;
        for i in (0..len).step_by(LANES8) {
            // SAFETY: the loads read xs, ys, zs at a + i..a + i + 8, within them (asserted above, i + 8 <= len).
            // The stores write listed and near at n + w..n + w + 8, within them: w <= i, as each chunk of
            // eight advances w by at most eight. The table row `mask` (below 256) holds eight u32.
            unsafe {
                let (dx, dy, dz) = (
                    _mm256_sub_ps(_mm256_loadu_ps(xs.as_ptr().add(a + i)), qx),
                    _mm256_sub_ps(_mm256_loadu_ps(ys.as_ptr().add(a + i)), qy),
                    _mm256_sub_ps(_mm256_loadu_ps(zs.as_ptr().add(a + i)), qz),
                );
                let d = _mm256_add_ps(
                    _mm256_add_ps(_mm256_mul_ps(dx, dx), _mm256_mul_ps(dy, dy)),
                    _mm256_mul_ps(dz, dz),
                );
                let valid = (1u32 << (e - a - i).min(LANES8)) - 1;
                let mask = _mm256_movemask_ps(_mm256_cmp_ps::<_CMP_LE_OQ>(d, tau8)) as u32 & valid;
                let perm = _mm256_loadu_si256(table.add(mask as usize).cast());
                let slots = _mm256_add_epi32(_mm256_set1_epi32((a + i) as i32), perm);
                _mm256_storeu_si256(listed.as_mut_ptr().add(n + w).cast(), slots);
                _mm256_storeu_ps(
                    near.as_mut_ptr().add(n + w),
                    _mm256_permutevar8x32_ps(d, perm),
                );
                w += mask.count_ones() as usize;
            }
        }
        n += w;
    }
    n
}
