//! Tests of the neighbour search against brute force, on clouds of every shape it meets.

use std::borrow::Cow;

use super::batch::kth_and_root_sum;
use super::block::Candidates;
use super::index::{OCCUPANCY_PER_K, occupancy_level};
use super::morton::{decode, morton};
use super::*;
use crate::features::avx2;
use crate::lanes::LANES;
use crate::progress::NoProgress;

fn brute(points: &[[f32; 3]], q: [f32; 3], k: usize, r2: f32) -> Vec<(u32, f32)> {
    let mut v: Vec<(f32, u32)> = points
        .iter()
        .enumerate()
        .map(|(i, p)| {
            let d = (p[0] - q[0]).powi(2) + (p[1] - q[1]).powi(2) + (p[2] - q[2]).powi(2);
            (d, i as u32)
        })
        .filter(|x| x.0 <= r2)
        .collect();
    let order = |a: &(f32, u32), b: &(f32, u32)| a.0.total_cmp(&b.0).then(a.1.cmp(&b.1));
    if k < v.len() {
        v.select_nth_unstable_by(k, order);
        v.truncate(k);
    }
    v.sort_by(order);
    v.into_iter().take(k).map(|x| (x.1, x.0)).collect()
}

/// splitmix64, for test clouds.
fn rng(seed: &mut u64) -> f32 {
    *seed = seed.wrapping_add(0x9E37_79B9_7F4A_7C15);
    let mut z = *seed;
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    ((z ^ (z >> 31)) >> 40) as f32 / (1u64 << 24) as f32
}

/// Clusters of very different density, a plane, duplicates and far outliers.
fn mixed_cloud(n: usize) -> Vec<[f32; 3]> {
    let mut s = 7u64;
    let mut pts = Vec::new();
    for i in 0..n {
        let p = match i % 5 {
            0 => [rng(&mut s) * 0.1, rng(&mut s) * 0.1, rng(&mut s) * 0.1],
            1 => [rng(&mut s) * 20.0, rng(&mut s) * 20.0, 3.0],
            2 => [5.0, 5.0, (i % 3) as f32],
            3 => [
                rng(&mut s) * 100.0 - 50.0,
                rng(&mut s) * 3.0,
                rng(&mut s) * 40.0,
            ],
            _ => [rng(&mut s) * 2.0 + 10.0, 1.0, rng(&mut s) * 2.0],
        };
        pts.push(p);
    }
    pts.push([500.0, -300.0, 20.0]);
    pts.push([-400.0, 0.0, 0.0]);
    pts
}

/// How many points share a typical point's main cell (point-weighted mean, uncapped).
fn cell_occupancy(nb: &Neighbors) -> f64 {
    let sum: f64 = nb
        .cell_start
        .windows(2)
        .map(|w| ((w[1] - w[0]) as f64).powi(2))
        .sum();
    sum / nb.len() as f64
}

/// A scan-like tile (a plane, a dense cluster, a pile of duplicates, scattered points and one far point)
/// copied 4 x 4 side by side, offset by the tile's extent, as bench/tile.py makes tiled.ply.
fn tiled_cloud(per_tile: usize) -> Vec<[f32; 3]> {
    let mut s = 11u64;
    let mut tile = Vec::new();
    for i in 0..per_tile {
        tile.push(match i % 100 {
            0..60 => [rng(&mut s) * 20.0, rng(&mut s) * 20.0, rng(&mut s) * 0.01],
            60..90 => [
                rng(&mut s) * 0.5 + 3.0,
                rng(&mut s) * 0.5 + 3.0,
                rng(&mut s) * 0.5 + 1.0,
            ],
            90 => [10.0, 10.0, 2.0],
            _ => [rng(&mut s) * 20.0, rng(&mut s) * 20.0, rng(&mut s) * 10.0],
        });
    }
    tile.push([25.0, 25.0, 15.0]);
    let mut pts = Vec::new();
    for tx in 0..4 {
        for ty in 0..4 {
            pts.extend(
                tile.iter()
                    .map(|p| [p[0] + 25.0 * tx as f32, p[1] + 25.0 * ty as f32, p[2]]),
            );
        }
    }
    pts
}

/// Regression: `aerie prepare tiled.ply` (8.3M points, 16 copies of a TLS scan) ran for more than 30
/// minutes in SOR's k-nearest search. The main level is chosen from a sample of 65k points; the sample's
/// per-cell counts were capped at `8 * target * rate` truncated to an integer, which is 1 once fewer than
/// 1 point in 4 * target is sampled (6.7M points for k = 16): every cell then counted as holding one
/// point and the coarsest level won, a few main cells each holding a quarter of the cloud, so a few
/// threads' queries each scanned and selected among a large part of the cloud. Here 512 of 64k points
/// are sampled (the same rate as 65k of 8.3M): the level must be the one every point gives, within one,
/// and the answers exact.
#[test]
fn regression_sparse_level_sample_on_a_tiled_cloud() {
    let pts = tiled_cloud(4000);
    let k = 17;
    let target = k as f64 * OCCUPANCY_PER_K;
    let choose = |fine, codes: &[u64], rate| occupancy_level(codes, target, fine, rate);
    let whole = Neighbors::build(Cow::Borrowed(&pts), usize::MAX, choose);
    let sampled = Neighbors::build(Cow::Borrowed(&pts), 512, choose);
    let occupancy = cell_occupancy(&sampled);
    assert!(
        sampled.main.abs_diff(whole.main) <= 1,
        "main level {} from the sample, {} from every point",
        sampled.main,
        whole.main
    );
    assert!(
        (target / 8.0..=8.0 * target).contains(&occupancy),
        "{occupancy} points share a typical main cell (target {target})"
    );
    let all = |nb: &Neighbors, check: bool| {
        nb.knn_all(
            k,
            None,
            &NoProgress,
            || (),
            |_, i, _, nbrs, _| {
                if check && i % 61 == 0 {
                    let want = brute(&pts, pts[i], k, f32::INFINITY);
                    let got: Vec<(u32, f32)> = nbrs.iter().map(|n| (n.index, n.dist2)).collect();
                    assert_eq!(got, want, "point {i}");
                }
                nbrs.iter().map(|n| n.dist2 as f64).sum::<f64>()
            },
        )
        .unwrap()
    };
    // Exact (every 61st point against brute force), and the same answers on the grid every point chose.
    assert_eq!(all(&sampled, true), all(&whole, false));
}

#[test]
fn knn_matches_brute_force() {
    let pts: Vec<[f32; 3]> = (0..500)
        .map(|i| {
            let f = i as f32;
            [
                (f * 0.37).sin() * 3.0,
                (f * 0.11).cos() * 2.0,
                (f * 0.013) % 1.7,
            ]
        })
        .collect();
    let nb = Neighbors::new(&pts).unwrap();
    let mut out = Vec::new();
    for qi in [0usize, 17, 250, 499] {
        nb.knn(pts[qi], 7, None, &mut out);
        let got: Vec<u32> = out.iter().map(|n| n.index).collect();
        let want: Vec<u32> = brute(&pts, pts[qi], 7, f32::INFINITY)
            .iter()
            .map(|x| x.0)
            .collect();
        assert_eq!(got, want);
        assert_eq!(out[0].index as usize, qi);
    }
}

#[test]
fn all_points_queries_match_brute_force_on_a_mixed_cloud() {
    let pts = mixed_cloud(3000);
    for (k, r) in [
        (1usize, None),
        (16, None),
        (16, Some(0.3f32)),
        (40, Some(2.0)),
    ] {
        for nb in [
            Neighbors::for_knn(&pts, k).unwrap(),
            Neighbors::for_knn(&pts, 1).unwrap(),
            Neighbors::for_radius(&pts, 5.0).unwrap(),
        ] {
            let got = nb
                .knn_all(
                    k,
                    r,
                    &NoProgress,
                    || (),
                    |_, i, q, nbrs, pos| {
                        let want = brute(&pts, pts[i], k, r.map_or(f32::INFINITY, |r| r * r));
                        assert_eq!(q, pts[i]);
                        let got: Vec<(u32, f32)> =
                            nbrs.iter().map(|n| (n.index, n.dist2)).collect();
                        assert_eq!(got, want, "point {i} k {k} r {r:?}");
                        for (n, p) in nbrs.iter().zip(pos) {
                            assert_eq!(pts[n.index as usize], *p);
                        }
                        nbrs.len() as u32
                    },
                )
                .unwrap();
            assert_eq!(got.len(), pts.len());
            let mut one = Vec::new();
            for i in (0..pts.len()).step_by(97) {
                nb.knn(pts[i], k, r, &mut one);
                assert_eq!(one.len() as u32, got[i]);
            }
        }
    }
}

/// The sum of the roots of the k smallest squared distances, as brute force finds them (f32 roots of the
/// f32 squared distances, summed in f64).
fn brute_root_sum(points: &[[f32; 3]], q: [f32; 3], k: usize) -> f64 {
    brute(points, q, k, f32::INFINITY)
        .iter()
        .map(|&(_, d2)| d2.sqrt() as f64)
        .sum()
}

#[test]
fn kth_and_root_sum_matches_a_sort_with_ties_and_any_estimate() {
    let mut s = 5u64;
    for n in [1usize, 2, 3, 7, 17, 40, 130] {
        // Values on a coarse lattice, so that many are equal, and some zeros.
        let mut near: Vec<f32> = (0..n)
            .map(|i| {
                if i % 9 == 0 {
                    0.0
                } else {
                    (rng(&mut s) * 12.0).floor() * 0.25
                }
            })
            .collect();
        near.resize(n.next_multiple_of(LANES), f32::INFINITY);
        let mut sorted = near[..n].to_vec();
        sorted.sort_by(f32::total_cmp);
        for k in [1, n / 2, n] {
            if k == 0 {
                continue;
            }
            let want: f64 = sorted[..k].iter().map(|v| v.sqrt() as f64).sum();
            for estimate in [f32::INFINITY, 0.0, 1e-9, sorted[k - 1], 0.6, 100.0] {
                let (kth, sum) = kth_and_root_sum(&near, n, k, estimate);
                assert_eq!(kth, sorted[k - 1], "n {n} k {k} estimate {estimate}");
                assert!(
                    (sum - want).abs() <= 1e-12 * want.max(1.0),
                    "{sum} against {want}"
                );
            }
        }
    }
    assert_eq!(
        kth_and_root_sum(&[f32::INFINITY; LANES], 0, 0, 1.0),
        (0.0, 0.0)
    );
}

/// The eight-lane listing (AVX2) lists exactly the slots and distances the four-lane one does, in the same
/// order, whatever the bound.
#[test]
fn both_listings_agree() {
    if !avx2::available() {
        eprintln!("skipped: this processor has no AVX2, so only the four-lane listing runs");
        return;
    }
    for pts in [mixed_cloud(3000), tiled_cloud(300)] {
        let nb = Neighbors::for_knn(&pts, 17).unwrap();
        let mut block = Candidates::new();
        for ci in (0..nb.cell_codes.len()).step_by(5) {
            let g = decode(nb.cell_codes[ci]).map(|v| v as i64);
            block.fill(&nb, g.map(|v| v - 1), g.map(|v| v + 1), false);
            for j in nb.cell_start[ci] as usize..nb.cell_start[ci + 1] as usize {
                for tau in [0.0, 1e-4, 3e-3, 0.02, 0.1, f32::INFINITY] {
                    let listing = |block: &mut Candidates, lanes8| {
                        block.lanes8 = lanes8;
                        let n = block.list(&nb, nb.sorted[j], tau);
                        let near: Vec<u32> = block.near[..n + LANES]
                            .iter()
                            .map(|d| d.to_bits())
                            .collect();
                        (block.listed[..n].to_vec(), near)
                    };
                    let four = listing(&mut block, false);
                    assert_eq!(four, listing(&mut block, true), "point {j}, tau {tau}");
                }
            }
        }
    }
}

#[test]
fn root_sums_match_brute_force() {
    let mut s = 11u64;
    let mut walls = Vec::new();
    for i in 0..3000 {
        let (a, b) = (rng(&mut s) * 6.0, rng(&mut s) * 6.0);
        walls.push(match i % 3 {
            0 => [2.0, a, b],
            1 => [a, 4.0, b],
            _ => [
                (i % 7) as f32 * 0.1,
                (i / 7 % 9) as f32 * 0.1,
                (i / 63) as f32 * 0.1,
            ],
        });
    }
    for pts in [mixed_cloud(3000), walls, tiled_cloud(300)] {
        for k in [1usize, 2, 17, 40] {
            let nb = Neighbors::for_knn(&pts, k).unwrap();
            let sums = nb.knn_root_sums_in_cell_order(k, &NoProgress).unwrap();
            let order = nb.into_order();
            for (sum, &i) in sums.iter().zip(&order) {
                let want = brute_root_sum(&pts, pts[i as usize], k);
                assert!(
                    (sum - want).abs() <= 1e-12 * want.max(1.0),
                    "point {i} k {k}: {sum} against {want}"
                );
            }
        }
    }
}

/// Walls along each axis (blocks bucketed by each pair of axes) and a lattice, where many candidates lie
/// at equal distances (the rank selection's ties fall back to the sort).
#[test]
fn walls_and_lattices_match_brute_force() {
    let mut s = 11u64;
    let mut pts = Vec::new();
    for i in 0..4000 {
        let (a, b) = (rng(&mut s) * 6.0, rng(&mut s) * 6.0);
        pts.push(match i % 4 {
            0 => [2.0, a, b],
            1 => [a, 4.0, b],
            2 => [a, b, 0.5],
            _ => [
                (i % 7) as f32 * 0.1,
                (i / 7 % 9) as f32 * 0.1,
                (i / 63) as f32 * 0.1,
            ],
        });
    }
    for k in [1usize, 8, 17, 40] {
        let nb = Neighbors::for_knn(&pts, k).unwrap();
        nb.knn_all(
            k,
            None,
            &NoProgress,
            || (),
            |_, i, _, nbrs, _| {
                let want = brute(&pts, pts[i], k, f32::INFINITY);
                let got: Vec<(u32, f32)> = nbrs.iter().map(|n| (n.index, n.dist2)).collect();
                assert_eq!(got, want, "point {i} k {k}");
            },
        )
        .unwrap();
    }
}

#[test]
fn radius_counts_match_brute_force() {
    let pts = mixed_cloud(2000);
    for r in [0.05f32, 0.5, 3.0] {
        for nb in [
            Neighbors::for_radius(&pts, r).unwrap(),
            Neighbors::new(&pts).unwrap(),
        ] {
            let all = nb.count_within_all(r, &NoProgress).unwrap();
            let mut s = nb.scratch();
            let mut out = Vec::new();
            for i in 0..pts.len() {
                let want = brute(&pts, pts[i], usize::MAX, r * r);
                assert_eq!(all[i] as usize, want.len(), "point {i} r {r}");
                if i % 50 == 0 {
                    nb.within(pts[i], r, &mut s, &mut out);
                    let got: Vec<(u32, f32)> = out.iter().map(|n| (n.index, n.dist2)).collect();
                    assert_eq!(got, want);
                    assert_eq!(nb.count_within(pts[i], r, &mut s), want.len());
                }
            }
        }
    }
}

#[test]
fn foreign_query_points() {
    let pts = mixed_cloud(1000);
    let nb = Neighbors::new(&pts).unwrap();
    let mut out = Vec::new();
    for q in [
        [1000.0f32, 1000.0, 1000.0],
        [-1e6, 0.0, 0.0],
        [3.3, 2.2, 1.1],
        [0.05; 3],
    ] {
        nb.knn(q, 5, None, &mut out);
        let got: Vec<(u32, f32)> = out.iter().map(|n| (n.index, n.dist2)).collect();
        assert_eq!(got, brute(&pts, q, 5, f32::INFINITY), "{q:?}");
    }
}

#[test]
fn radius_limits_knn_and_within_counts() {
    let pts: Vec<[f32; 3]> = (0..10).map(|i| [i as f32, 0.0, 0.0]).collect();
    let nb = Neighbors::new(&pts).unwrap();
    let mut out = Vec::new();
    nb.knn([0.0; 3], 5, Some(2.0), &mut out);
    assert_eq!(
        out.iter().map(|n| n.index).collect::<Vec<_>>(),
        vec![0, 1, 2]
    );
    let mut s = nb.scratch();
    nb.within([4.0, 0.0, 0.0], 1.0, &mut s, &mut out);
    assert_eq!(
        out.iter().map(|n| n.index).collect::<Vec<_>>(),
        vec![4, 3, 5]
    );
    assert_eq!(nb.count_within([4.0, 0.0, 0.0], 1.5, &mut s), 3);
    // k larger than the cloud returns every point.
    nb.knn([0.0; 3], 50, None, &mut out);
    assert_eq!(out.len(), 10);
}

#[test]
fn all_duplicates_do_not_panic() {
    let pts = vec![[1.5f32, -2.0, 3.0]; 5000];
    let nb = Neighbors::new(&pts).unwrap();
    let mut out = Vec::new();
    nb.knn(pts[0], 16, None, &mut out);
    assert_eq!(out.len(), 16);
    assert!(out.iter().all(|n| n.dist2 == 0.0));
    assert_eq!(
        out.iter().map(|n| n.index).collect::<Vec<_>>(),
        (0..16).collect::<Vec<_>>()
    );
    let mut s = nb.scratch();
    assert_eq!(nb.count_within(pts[0], 0.0, &mut s), 5000);
}

#[test]
fn empty_and_nan() {
    let nb = Neighbors::new(&[]).unwrap();
    let mut out = vec![Neighbor {
        index: 0,
        dist2: 0.0,
    }];
    nb.knn([0.0; 3], 3, None, &mut out);
    assert!(out.is_empty());
    assert!(nb.count_within_all(1.0, &NoProgress).unwrap().is_empty());
    assert!(Neighbors::new(&[[0.0, f32::NAN, 0.0]]).is_err());
}

#[test]
fn morton_round_trip() {
    for c in [
        [0u32, 0, 0],
        [1, 2, 3],
        [0x1f_ffff, 0, 0x12345],
        [7, 0x1f_ffff, 0x1f_ffff],
    ] {
        assert_eq!(decode(morton(c)), c);
    }
}
