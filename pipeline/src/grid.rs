//! Integer cells of the world frame, shared by the stages that bin points (downsampling, map buckets).
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

#[cfg(test)]
mod tests {
    use super::*;

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
