//! What the viewport draws: layers of coloured points in level-of-detail order, built from a `Cloud`.
//!
//! Level of detail: the points of a map come bucket by bucket (spatially coherent). The layer stores them in the
//! order `i -> i * P mod n`, with `P` coprime to `n` near `n / phi`: every prefix of that order samples the
//! buckets evenly, so drawing the first `k` points of a 10-million-point map while the camera moves shows the
//! whole map thinned, and the rest is drawn when it stops. No copy per level, no sort.

use std::sync::Arc;

use aerie_pipeline::Cloud;

/// One point as the GPU reads it (20 bytes): view-local position, sRGB colour, normal (snorm8, zero if none).
#[derive(Clone, Copy, Debug, Default, PartialEq, bytemuck::Pod, bytemuck::Zeroable)]
#[repr(C)]
pub struct GpuPoint {
    pub pos: [f32; 3],
    pub color: [u8; 4],
    pub normal: [i8; 4],
}

/// How points are coloured.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub enum ColorMode {
    #[default]
    Height,
    Intensity,
    /// Plane thickness gamma (maps).
    PlaneThickness,
    Normal,
    /// The file's own colour.
    Rgb,
}

impl ColorMode {
    pub const ALL: [ColorMode; 5] = [
        ColorMode::Height,
        ColorMode::Intensity,
        ColorMode::PlaneThickness,
        ColorMode::Normal,
        ColorMode::Rgb,
    ];

    pub fn label(self) -> &'static str {
        match self {
            ColorMode::Height => "height",
            ColorMode::Intensity => "intensity",
            ColorMode::PlaneThickness => "plane thickness",
            ColorMode::Normal => "normal",
            ColorMode::Rgb => "RGB",
        }
    }
}

/// A drawable set of points. `version` changes whenever the contents do (the GPU copy follows it).
#[derive(Clone)]
pub struct PointLayer {
    pub points: Arc<Vec<GpuPoint>>,
    /// For each drawn point, its index in the source cloud (picking shows the source's attributes).
    pub source_index: Arc<Vec<u32>>,
    pub version: u64,
    pub point_size_px: f32,
    /// Shade by the normal against the view direction (where normals exist).
    pub shaded: bool,
}

static NEXT_VERSION: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(1);

fn next_version() -> u64 {
    NEXT_VERSION.fetch_add(1, std::sync::atomic::Ordering::Relaxed)
}

impl PointLayer {
    /// Builds a layer from `cloud`, positions relative to `view_origin`. Points a mask of `highlights` marks are
    /// drawn in that mask's colour instead (the points a stage would remove); the last mask that marks a point
    /// wins.
    pub fn from_cloud(
        cloud: &Cloud,
        view_origin: [f64; 3],
        mode: ColorMode,
        highlights: &[(&[bool], [u8; 3])],
    ) -> PointLayer {
        let colors = colorize(cloud, mode);
        let shift: [f32; 3] = std::array::from_fn(|k| (cloud.origin[k] - view_origin[k]) as f32);
        let order = lod_order(cloud.len());
        let points = order
            .iter()
            .map(|&i| {
                let i = i as usize;
                let p = cloud.positions()[i];
                let mut c = colors[i];
                for (mask, hc) in highlights {
                    if mask.get(i).copied().unwrap_or(false) {
                        c = *hc;
                    }
                }
                let n = cloud.normals().map_or([0.0; 3], |n| n[i]);
                GpuPoint {
                    pos: std::array::from_fn(|k| p[k] + shift[k]),
                    color: [c[0], c[1], c[2], 255],
                    normal: [snorm(n[0]), snorm(n[1]), snorm(n[2]), 0],
                }
            })
            .collect();
        PointLayer {
            points: Arc::new(points),
            source_index: Arc::new(order),
            version: next_version(),
            point_size_px: 2.0,
            shaded: cloud.normals().is_some(),
        }
    }

    /// A layer of points in one colour.
    #[cfg(test)]
    pub fn solid(
        points: impl Iterator<Item = [f32; 3]>,
        color: [u8; 3],
        size_px: f32,
    ) -> PointLayer {
        let points: Vec<GpuPoint> = points
            .map(|pos| GpuPoint {
                pos,
                color: [color[0], color[1], color[2], 255],
                normal: [0; 4],
            })
            .collect();
        let n = points.len() as u32;
        PointLayer {
            points: Arc::new(points),
            source_index: Arc::new((0..n).collect()),
            version: next_version(),
            point_size_px: size_px,
            shaded: false,
        }
    }

    pub fn len(&self) -> usize {
        self.points.len()
    }
}

fn snorm(v: f32) -> i8 {
    (v.clamp(-1.0, 1.0) * 127.0).round() as i8
}

/// The level-of-detail order of `n` points (see the module doc).
pub fn lod_order(n: usize) -> Vec<u32> {
    if n < 3 {
        return (0..n as u32).collect();
    }
    let mut step = ((n as f64) * 0.618_033_988_75) as usize;
    while gcd(step, n) != 1 {
        step += 1;
    }
    (0..n)
        .map(|i| ((i as u128 * step as u128) % n as u128) as u32)
        .collect()
}

fn gcd(mut a: usize, mut b: usize) -> usize {
    while b != 0 {
        (a, b) = (b, a % b);
    }
    a
}

/// Colours of every point of `cloud` under `mode` (grey where the cloud lacks the attribute).
pub fn colorize(cloud: &Cloud, mode: ColorMode) -> Vec<[u8; 3]> {
    let n = cloud.len();
    let scalar = |values: Vec<f32>, lo_pct: f64, hi_pct: f64| {
        let (lo, hi) = percentiles(&values, lo_pct, hi_pct);
        values
            .iter()
            .map(|&v| turbo(((v - lo) / (hi - lo).max(1e-9)).clamp(0.0, 1.0)))
            .collect()
    };
    match mode {
        ColorMode::Height => scalar(cloud.positions().iter().map(|p| p[2]).collect(), 0.02, 0.98),
        ColorMode::Intensity => match cloud.intensity() {
            Some(i) => scalar(i.to_vec(), 0.02, 0.98),
            None => vec![[170; 3]; n],
        },
        ColorMode::PlaneThickness => match cloud.gamma() {
            // 0 (flat) .. 10 cm (no plane): thin surfaces blue, rough or thin structures red.
            Some(g) => g
                .iter()
                .map(|&v| turbo((v / 0.1).clamp(0.0, 1.0)))
                .collect(),
            None => vec![[170; 3]; n],
        },
        ColorMode::Normal => match cloud.normals() {
            Some(ns) => ns
                .iter()
                .map(|v| v.map(|c| (c.abs().min(1.0) * 220.0 + 35.0) as u8))
                .collect(),
            None => vec![[170; 3]; n],
        },
        ColorMode::Rgb => match cloud.color() {
            Some(c) => c.iter().map(|c| c.map(|v| (v >> 8) as u8)).collect(),
            None => vec![[170; 3]; n],
        },
    }
}

/// The `lo` and `hi` quantiles (0..1) of finite values, by sampling at most 100k of them.
fn percentiles(values: &[f32], lo: f64, hi: f64) -> (f32, f32) {
    let stride = (values.len() / 100_000).max(1);
    let mut s: Vec<f32> = values
        .iter()
        .step_by(stride)
        .copied()
        .filter(|v| v.is_finite())
        .collect();
    if s.is_empty() {
        return (0.0, 1.0);
    }
    s.sort_by(f32::total_cmp);
    let at = |q: f64| s[((s.len() - 1) as f64 * q).round() as usize];
    (at(lo), at(hi))
}

/// The turbo colour map (Mikhailov 2019, polynomial fit), `t` in 0..1.
pub fn turbo(t: f32) -> [u8; 3] {
    let t = t.clamp(0.0, 1.0);
    let r = 0.135_721_38
        + t * (4.615_392_6
            + t * (-42.660_32 + t * (132.131_08 + t * (-152.942_4 + t * 59.286_38))));
    let g = 0.091_402_61
        + t * (2.194_188_4
            + t * (4.842_966_6 + t * (-14.185_033 + t * (4.277_298_6 + t * 2.829_566))));
    let b = 0.106_673_3
        + t * (12.641_946 + t * (-60.582_05 + t * (110.362_77 + t * (-89.903_11 + t * 27.348_25))));
    [r, g, b].map(|c| (c.clamp(0.0, 1.0) * 255.0) as u8)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lod_order_is_a_permutation_whose_prefix_spreads_evenly() {
        for n in [0, 1, 2, 3, 10, 1000, 4096, 99_991] {
            let o = lod_order(n);
            let mut seen = vec![false; n];
            for &i in &o {
                assert!(!seen[i as usize]);
                seen[i as usize] = true;
            }
            assert_eq!(o.len(), n);
        }
        // The first 10% of 10,000 points hit each tenth of the array about equally.
        let o = lod_order(10_000);
        let mut bins = [0; 10];
        for &i in &o[..1000] {
            bins[i as usize / 1000] += 1;
        }
        assert!(bins.iter().all(|&b| (90..=110).contains(&b)), "{bins:?}");
    }

    #[test]
    fn highlight_paints_the_masked_points() {
        let cloud = Cloud::from_positions(
            [0.0; 3],
            vec![[0.0, 0.0, 0.0], [1.0, 0.0, 1.0], [2.0, 0.0, 2.0]],
        );
        let mask = [false, true, false];
        let layer =
            PointLayer::from_cloud(&cloud, [0.0; 3], ColorMode::Height, &[(&mask, [255, 0, 0])]);
        let red: Vec<u32> = layer
            .points
            .iter()
            .zip(layer.source_index.iter())
            .filter(|(p, _)| p.color == [255, 0, 0, 255])
            .map(|(_, &i)| i)
            .collect();
        assert_eq!(red, vec![1]);
    }
}
