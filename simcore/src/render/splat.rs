//! The point-rendering (splat) renderer: MARSIM's angular depth image, completed with plane correction along
//! exact beam directions, neighbour winners at footprint edges, level of detail and time slices.
//!
//! Determinism: every pixel keeps the minimum of `(depth bits << 32) | point index` through an atomic
//! `fetch_min`. The minimum does not depend on the order of writes, so the image, and everything read from
//! it, is identical whatever the number of threads.

use std::sync::atomic::{AtomicU64, Ordering};

use rayon::prelude::*;

use super::ctx::{Ctx, MIN_COS_PLANE};
use super::layer::{Hit, Layer};
use super::motion::LocalPose;
use super::prepared::{Fov, wrap_pi};
use super::vec3::{cross, dot, mat_vec, sub};

const EMPTY: u64 = u64::MAX;
/// Level of detail: points read per image pixel that a far bucket covers.
const LOD_POINTS_PER_PIXEL: f32 = 2.0;
/// Largest image, pixels (the pixel size grows beyond it).
const MAX_PIXELS: f32 = 4.0e6;

struct Image {
    fov: Fov,
    rows: usize,
    cols: usize,
    pix_az: f32,
    pix_el: f32,
    keys: Vec<AtomicU64>,
    /// (cos, sin) of each row's elevation and each column's azimuth, at pixel centres.
    row_cs: Vec<(f32, f32)>,
    col_cs: Vec<(f32, f32)>,
}

impl Image {
    fn new(fov: Fov, pix: f32) -> Image {
        let width = fov.width_rad();
        let height = (fov.el_max - fov.el_min).max(pix);
        let mut pix = pix;
        if width * height / (pix * pix) > MAX_PIXELS {
            pix = (width * height / MAX_PIXELS).sqrt();
        }
        let cols = ((width / pix).ceil() as usize).max(1);
        let rows = ((height / pix).ceil() as usize).max(1);
        let (pix_az, pix_el) = (width / cols as f32, height / rows as f32);
        let az0 = if fov.full_circle {
            -std::f32::consts::PI
        } else {
            fov.az_centre - 0.5 * fov.az_width
        };
        Image {
            fov,
            rows,
            cols,
            pix_az,
            pix_el,
            keys: (0..rows * cols).map(|_| AtomicU64::new(EMPTY)).collect(),
            row_cs: (0..rows)
                .map(|r| {
                    let el = fov.el_min + (r as f32 + 0.5) * pix_el;
                    (el.cos(), el.sin())
                })
                .collect(),
            col_cs: (0..cols)
                .map(|c| {
                    let az = az0 + (c as f32 + 0.5) * pix_az;
                    (az.cos(), az.sin())
                })
                .collect(),
        }
    }

    /// Continuous pixel coordinates (column, row) of a direction.
    #[inline]
    fn coords(&self, az: f32, el: f32) -> (f32, f32) {
        let x = if self.fov.full_circle {
            (az + std::f32::consts::PI) / self.pix_az
        } else {
            (wrap_pi(az - self.fov.az_centre) + 0.5 * self.fov.az_width) / self.pix_az
        };
        (x, (el - self.fov.el_min) / self.pix_el)
    }

    #[inline]
    fn col(&self, c: i64) -> Option<usize> {
        if self.fov.full_circle {
            Some(c.rem_euclid(self.cols as i64) as usize)
        } else if c >= 0 && (c as usize) < self.cols {
            Some(c as usize)
        } else {
            None
        }
    }

    #[inline]
    fn slot(&self, row: i64, col: i64) -> Option<&AtomicU64> {
        if row < 0 || row as usize >= self.rows {
            return None;
        }
        let c = self.col(col)?;
        self.keys.get(row as usize * self.cols + c)
    }

    #[inline]
    fn write(&self, row: i64, col: i64, key: u64) {
        if let Some(slot) = self.slot(row, col)
            && key < slot.load(Ordering::Relaxed)
        {
            slot.fetch_min(key, Ordering::Relaxed);
        }
    }

    #[inline]
    fn read(&self, row: i64, col: i64) -> u64 {
        self.slot(row, col)
            .map_or(EMPTY, |s| s.load(Ordering::Relaxed))
    }

    /// Depth at which the ray through the centre of pixel (row, col) crosses the disk of radius `rho` at `v`
    /// with unit normal `n` (image frame), if it does.
    #[inline]
    fn disk_depth(&self, row: i64, col: i64, v: [f32; 3], n: [f32; 3], rho: f32) -> Option<f32> {
        let (ce, se) = *self.row_cs.get(usize::try_from(row).ok()?)?;
        let (ca, sa) = *self.col_cs.get(self.col(col)?)?;
        let w = [ce * ca, ce * sa, se];
        let den = dot(n, w);
        if den.abs() < 0.5 * MIN_COS_PLANE {
            return None;
        }
        let t = dot(n, v) / den;
        let miss = [t * w[0] - v[0], t * w[1] - v[1], t * w[2] - v[2]];
        (t > 0.0 && dot(miss, miss) <= rho * rho).then_some(t)
    }

    /// Rasterises a point at `v` (image frame) with disk radius `rho`: with a normal `n` (a point on a plane),
    /// the pixels whose centre ray crosses its oriented disk, at the depth of the crossing; without, the
    /// pixels within its cube's half-angle, at its distance.
    #[inline]
    fn splat(&self, v: [f32; 3], n: Option<[f32; 3]>, rho: f32, index: u32) {
        let d = dot(v, v).sqrt();
        if !(d > 1e-4) {
            return;
        }
        let key_of = |depth: f32| ((depth.to_bits() as u64) << 32) | index as u64;
        let key = key_of(d);
        let az = v[1].atan2(v[0]);
        let el = (v[2] / d).clamp(-1.0, 1.0).asin();
        let theta = (rho / d).min(1.0).asin();
        let (x, y) = self.coords(az, el);
        // Near-parallel disks are drawn as spheres: their ellipse would be thinner than a pixel.
        let n = n.filter(|n| (dot(*n, v) / d).abs() >= MIN_COS_PLANE);
        // The containing pixel always, so that far points smaller than a pixel leave no holes.
        let (r0, c0) = (y.floor() as i64, x.floor() as i64);
        let k0 = n
            .and_then(|n| self.disk_depth(r0, c0, v, n, rho))
            .map_or(key, key_of);
        self.write(r0, c0, k0);
        if let Some(n) = n
            && theta < 0.2
            && self.splat_ellipse(v, d, n, rho, x, el, index)
        {
            return;
        }
        let r_lo = ((el - theta - self.fov.el_min) / self.pix_el - 0.5)
            .ceil()
            .max(0.0) as i64;
        let r_hi = ((el + theta - self.fov.el_min) / self.pix_el - 0.5)
            .floor()
            .min(self.rows as f32 - 1.0) as i64;
        for r in r_lo..=r_hi {
            let el_r = self.fov.el_min + (r as f32 + 0.5) * self.pix_el;
            let dy = el_r - el;
            let rem = theta * theta - dy * dy;
            if rem < 0.0 {
                continue;
            }
            let cos_r = self.row_cs.get(r as usize).map_or(1.0, |cs| cs.0);
            let half = rem.sqrt() / cos_r.max(1e-3);
            let half_px = half / self.pix_az;
            let (c_lo, c_hi) = if self.fov.full_circle && 2.0 * half_px >= self.cols as f32 {
                (0, self.cols as i64 - 1)
            } else {
                let lo = (x - half_px - 0.5).ceil();
                let hi = (x + half_px - 0.5).floor();
                if self.fov.full_circle {
                    (lo as i64, hi as i64)
                } else {
                    (lo.max(0.0) as i64, hi.min(self.cols as f32 - 1.0) as i64)
                }
            };
            match n {
                Some(n) => {
                    for c in c_lo..=c_hi {
                        if let Some(t) = self.disk_depth(r, c, v, n, rho) {
                            self.write(r, c, key_of(t));
                        }
                    }
                }
                None => {
                    for c in c_lo..=c_hi {
                        self.write(r, c, key);
                    }
                }
            }
        }
    }
}

impl Image {
    /// Rasterises the oriented disk of a point at `v` (distance `d`, pixel column `x`, elevation `el`) over
    /// the rows and columns of its projected ellipse (small-angle approximation, padded by a pixel), each
    /// pixel still decided by the exact ray-disk test. A disk seen at grazing incidence covers a few rows
    /// where its bounding circle covers many. Returns false (nothing drawn) where the ellipse is degenerate.
    #[allow(clippy::too_many_arguments)]
    #[inline]
    fn splat_ellipse(
        &self,
        v: [f32; 3],
        d: f32,
        n: [f32; 3],
        rho: f32,
        x: f32,
        el: f32,
        index: u32,
    ) -> bool {
        let vh = [v[0] / d, v[1] / d, v[2] / d];
        let c = dot(n, vh);
        let mp = [n[0] - c * vh[0], n[1] - c * vh[1], n[2] - c * vh[2]];
        let mlen = dot(mp, mp).sqrt();
        let hxy = vh[0].hypot(vh[1]);
        if mlen < 1e-4 || hxy < 1e-3 {
            return false;
        }
        // Minor axis m (the normal's projection, foreshortened by cos(incidence)), major axis mm.
        let m = [mp[0] / mlen, mp[1] / mlen, mp[2] / mlen];
        let mm = cross(vh, m);
        let (ca, sa) = (vh[0] / hxy, vh[1] / hxy);
        let (ce, se) = (hxy, vh[2]);
        let e_az = [-sa, ca, 0.0];
        let e_el = [-se * ca, -se * sa, ce];
        let r1 = rho / d;
        let r2 = (r1 * c.abs()).max(1e-6);
        let (a1, b1, a2, b2) = (dot(e_az, mm), dot(e_el, mm), dot(e_az, m), dot(e_el, m));
        let half_el = ((r1 * b1).powi(2) + (r2 * b2).powi(2)).sqrt();
        let (i1, i2) = (1.0 / (r1 * r1), 1.0 / (r2 * r2));
        let qa = a1 * a1 * i1 + a2 * a2 * i2;
        let qb = a1 * b1 * i1 + a2 * b2 * i2;
        let qc = b1 * b1 * i1 + b2 * b2 * i2;
        if !(qa > 0.0) {
            return false;
        }
        let key_of = |depth: f32| ((depth.to_bits() as u64) << 32) | index as u64;
        // Rows whose centres may be inside, padded by one.
        let r_lo =
            (((el - half_el - self.fov.el_min) / self.pix_el - 0.5).ceil() - 1.0).max(0.0) as i64;
        let r_hi = (((el + half_el - self.fov.el_min) / self.pix_el - 0.5).floor() + 1.0)
            .min(self.rows as f32 - 1.0) as i64;
        for r in r_lo..=r_hi {
            let el_r = self.fov.el_min + (r as f32 + 0.5) * self.pix_el;
            let y = (el_r - el).clamp(-half_el, half_el);
            // (x a1 + y b1)^2 / r1^2 + (x a2 + y b2)^2 / r2^2 <= 1, a quadratic in x.
            let disc = (qb * y).powi(2) - qa * (qc * y * y - 1.0);
            let root = disc.max(0.0).sqrt();
            let (x_lo, x_hi) = ((-qb * y - root) / qa, (-qb * y + root) / qa);
            let cos_r = self.row_cs.get(r as usize).map_or(1.0, |cs| cs.0).max(1e-3);
            let scale = 1.0 / (cos_r * self.pix_az);
            let c_lo = (x + x_lo * scale - 0.5).ceil() - 1.0;
            let c_hi = (x + x_hi * scale - 0.5).floor() + 1.0;
            let (c_lo, c_hi) = if self.fov.full_circle {
                if c_hi - c_lo >= self.cols as f32 {
                    (0, self.cols as i64 - 1)
                } else {
                    (c_lo as i64, c_hi as i64)
                }
            } else {
                (
                    c_lo.max(0.0) as i64,
                    c_hi.min(self.cols as f32 - 1.0) as i64,
                )
            };
            for col in c_lo..=c_hi {
                if let Some(t) = self.disk_depth(r, col, v, n, rho) {
                    self.write(r, col, key_of(t));
                }
            }
        }
        true
    }
}

/// A bucket to rasterise: its points `first..first + n` (a coarse-to-fine prefix) with disk radius `rho`.
struct Job {
    /// Distance of the bucket centre, for near-to-far order (fewer depth-buffer writes).
    distance: f32,
    bucket: u32,
    first: u32,
    n: u32,
    rho: f32,
}

/// Renders all beams; returns per-beam hits, the number of time slices and of rasterised points.
pub(super) fn render(ctx: &Ctx) -> (Vec<Option<Hit>>, u32, u64) {
    let beams = ctx.beams;
    let mut hits: Vec<Option<Hit>> = vec![None; beams.len()];
    let by_time = &ctx.prepared.by_time;
    let time = |i: u32| beams.get(i as usize).map_or(0.0, |b| b.time_s as f64);
    let (Some(&first), Some(&last)) = (by_time.first(), by_time.last()) else {
        return (hits, 0, 0);
    };
    let (t_lo, t_hi) = (time(first), time(last));
    let k = ctx.time_slices();
    // Point -> bucket lookup for per-bucket disk radii (buckets partition the points; sort by `first`).
    let mut by_first: Vec<(u32, u32)> = ctx
        .map
        .buckets
        .iter()
        .enumerate()
        .map(|(i, b)| (b.first, i as u32))
        .collect();
    by_first.sort_unstable();
    let mut rasterised = 0u64;
    let mut start = 0usize;
    for s in 0..k {
        let t_end = if s + 1 == k {
            f64::INFINITY
        } else {
            t_lo + (t_hi - t_lo) * (s + 1) as f64 / k as f64
        };
        let end = start
            + by_time
                .get(start..)
                .map_or(0, |rest| rest.partition_point(|&i| time(i) < t_end));
        let Some(slice) = by_time.get(start..end) else {
            break;
        };
        start = end;
        if slice.is_empty() {
            continue;
        }
        let t_a = t_lo + (t_hi - t_lo) * s as f64 / k as f64;
        let t_b = if s + 1 == k { t_hi } else { t_end };
        let (slice_hits, n) = render_slice(ctx, slice, t_a, t_b, &by_first);
        rasterised += n;
        for (i, h) in slice.iter().zip(slice_hits) {
            if let Some(slot) = hits.get_mut(*i as usize) {
                *slot = h;
            }
        }
    }
    (hits, k, rasterised)
}

fn render_slice(
    ctx: &Ctx,
    slice: &[u32],
    t_a: f64,
    t_b: f64,
    by_first: &[(u32, u32)],
) -> (Vec<Option<Hit>>, u64) {
    let pose = ctx.pose_at(0.5 * (t_a + t_b));
    // Widen the window by what the pose does within the slice, the jitter and a pixel or two.
    let mut margin = 2.0 * ctx.prepared.pixel_rad + 3.0 * ctx.physics.angular_sigma_rad.max(0.0);
    if ctx.moving {
        for t in [t_a, t_b] {
            let p = ctx.pose_at(t);
            let rel = pose.rot64.transpose() * p.rot64;
            let angle = ((rel.trace() - 1.0) * 0.5).clamp(-1.0, 1.0).acos() as f32;
            let shift = (p.origin - pose.origin).norm() as f32;
            // Parallax of points 1 m away; nearer points lose a sliver at the window edge.
            margin += angle + shift.min(0.3);
        }
    }
    let az_el = &ctx.prepared.az_el;
    let fov = Fov::of(
        slice.iter().filter_map(|&i| az_el.get(i as usize).copied()),
        margin.min(0.5),
    );
    let image = Image::new(fov, ctx.prepared.pixel_rad);
    let mut jobs = cull(ctx, &pose, &image);
    jobs.sort_by(|a, b| {
        a.distance
            .total_cmp(&b.distance)
            .then(a.bucket.cmp(&b.bucket))
    });
    let any_lod = jobs.iter().any(|j| j.rho > ctx.rho);
    let mut radius = vec![ctx.rho; ctx.map.buckets.len()];
    for j in &jobs {
        if let Some(r) = radius.get_mut(j.bucket as usize) {
            *r = j.rho;
        }
    }
    let o = pose.origin32();
    let rt = pose.rot_t();
    let positions = ctx.map.positions;
    let normals = ctx.map.normals.filter(|_| ctx.planes);
    let gamma = ctx.map.gamma;
    jobs.par_iter().for_each(|job| {
        let lo = job.first as usize;
        let hi = lo + job.n as usize;
        let Some(points) = positions.get(lo..hi) else {
            return;
        };
        for (k, p) in points.iter().enumerate() {
            let idx = lo + k;
            let on_plane = gamma
                .and_then(|g| g.get(idx))
                .is_none_or(|&g| g < ctx.gamma_max);
            let n = normals
                .filter(|_| on_plane)
                .and_then(|n| n.get(idx))
                .map(|n| mat_vec(&rt, *n));
            image.splat(mat_vec(&rt, sub(*p, o)), n, job.rho, idx as u32);
        }
    });
    let rasterised = jobs.iter().map(|j| j.n as u64).sum();
    let rho_of = |idx: u32| -> f32 {
        if !any_lod {
            return ctx.rho;
        }
        let k = by_first.partition_point(|&(f, _)| f <= idx);
        k.checked_sub(1)
            .and_then(|k| by_first.get(k))
            .and_then(|&(_, b)| radius.get(b as usize))
            .copied()
            .unwrap_or(ctx.rho)
    };
    let hits = slice
        .par_iter()
        .with_min_len(256)
        .map(|&i| read_beam(ctx, &image, &pose, i as usize, &rho_of))
        .collect();
    (hits, rasterised)
}

/// Buckets in range and in the image window, with the prefix level of detail asks for.
fn cull(ctx: &Ctx, pose: &LocalPose, image: &Image) -> Vec<Job> {
    let o = pose.origin32();
    let rt = pose.rot_t();
    let max_range = ctx.reach;
    let n_points = ctx.map.positions.len() as u64;
    ctx.map
        .buckets
        .par_iter()
        .enumerate()
        .filter_map(|(bi, b)| {
            if b.count == 0 || b.first as u64 + b.count as u64 > n_points {
                return None;
            }
            let c = [
                0.5 * (b.min[0] + b.max[0]),
                0.5 * (b.min[1] + b.max[1]),
                0.5 * (b.min[2] + b.max[2]),
            ];
            let ext = sub(b.max, b.min);
            let half = 0.5 * dot(ext, ext).sqrt();
            let v = mat_vec(&rt, sub(c, o));
            let dc = dot(v, v).sqrt();
            // A margin beyond the range keeps the surfaces just outside it in the image, so that the edge
            // tests of beams near max range see the same neighbourhood as with a longer range.
            if !(dc - half <= 1.05 * max_range + 1.0 + ctx.rho) {
                return None;
            }
            let mut n = b.count;
            let mut rho = ctx.rho;
            if ctx.params.lod && dc > 2.0 * half && half > 0.0 {
                // Pixels the bucket can cover: its box's angular extent (a flat bucket seen at grazing
                // incidence covers few rows).
                let az_c = v[1].atan2(v[0]);
                let (mut az_lo, mut az_hi, mut el_lo, mut el_hi) =
                    (0f32, 0f32, f32::INFINITY, f32::NEG_INFINITY);
                for k in 0..8 {
                    let corner = [
                        if k & 1 == 0 { b.min[0] } else { b.max[0] },
                        if k & 2 == 0 { b.min[1] } else { b.max[1] },
                        if k & 4 == 0 { b.min[2] } else { b.max[2] },
                    ];
                    let w = mat_vec(&rt, sub(corner, o));
                    let da = wrap_pi(w[1].atan2(w[0]) - az_c);
                    let el = (w[2] / dot(w, w).sqrt().max(1e-9)).clamp(-1.0, 1.0).asin();
                    az_lo = az_lo.min(da);
                    az_hi = az_hi.max(da);
                    el_lo = el_lo.min(el);
                    el_hi = el_hi.max(el);
                }
                let cols = ((az_hi - az_lo) / image.pix_az).max(1.0);
                let rows = ((el_hi - el_lo) / image.pix_el).max(1.0);
                let need = (LOD_POINTS_PER_PIXEL * cols * rows).ceil().max(8.0);
                if need < b.count as f32 {
                    n = need as u32;
                    // Points of a surface: an even subsample of n of count points is spaced
                    // sqrt(count / n) times wider, so each covers that much more.
                    rho = ctx.rho * (b.count as f32 / n as f32).sqrt();
                }
            }
            let reach = half + rho;
            if dc > reach {
                let a = (reach / dc).min(1.0).asin();
                let el = (v[2] / dc).clamp(-1.0, 1.0).asin();
                if el + a < image.fov.el_min || el - a > image.fov.el_max {
                    return None;
                }
                if !image.fov.full_circle {
                    let lat = (el.abs() + a).min(1.5);
                    let az_half = a / lat.cos();
                    let az = v[1].atan2(v[0]);
                    if wrap_pi(az - image.fov.az_centre).abs() - az_half > 0.5 * image.fov.az_width
                    {
                        return None;
                    }
                }
            }
            Some(Job {
                distance: dc,
                bucket: bi as u32,
                first: b.first,
                n,
                rho,
            })
        })
        .collect()
}

/// Reads the image along beam `i`'s exact direction and computes its range.
fn read_beam(
    ctx: &Ctx,
    image: &Image,
    pose: &LocalPose,
    i: usize,
    rho_of: &impl Fn(u32) -> f32,
) -> Option<Hit> {
    let (o, u) = ctx.ray(i);
    let rt = pose.rot_t();
    let locate = |w: [f32; 3]| -> (f32, f32, f32) {
        let n = dot(w, w).sqrt().max(1e-12);
        let az = w[1].atan2(w[0]);
        let el = (w[2] / n).clamp(-1.0, 1.0).asin();
        let (x, y) = image.coords(az, el);
        (x, y, el.cos())
    };
    let (mut x, mut y, mut cos_el) = locate(mat_vec(&rt, u));
    let mut centre = image.read(y.floor() as i64, x.floor() as i64);
    if (ctx.moving || !ctx.origins.is_empty()) && centre != EMPTY {
        // The beam leaves from its own origin, not the image's: look again where its hit appears from there.
        let depth = f32::from_bits((centre >> 32) as u32);
        let shift = sub(o, pose.origin32());
        if dot(shift, shift) > 1e-10 {
            let w = [
                shift[0] + depth * u[0],
                shift[1] + depth * u[1],
                shift[2] + depth * u[2],
            ];
            (x, y, cos_el) = locate(mat_vec(&rt, w));
            centre = image.read(y.floor() as i64, x.floor() as i64);
        }
    }
    let (row, col) = (y.floor() as i64, x.floor() as i64);
    // Nearest plane hit that lands on a candidate's disk; failing that, on its plane within the distance a
    // pixel spans there (the image cannot resolve more: at grazing incidence a pixel covers far more than a
    // disk), which is bounded extrapolation of the surface that won the pixel.
    // Hits inside a winner's own disk: the surface layer of the beam (see `Layer`).
    let mut strict = Layer::new(ctx.layer_window());
    let mut relaxed: Option<Hit> = None;
    let reach = if ctx.params.neighbours { 1 } else { 0 };
    let mut last = EMPTY;
    let mut centre_on_plane = false;
    // An empty neighbour means a surface edge nearby: no extrapolation there.
    let mut hole = false;
    for dr in -reach..=reach {
        for dc in -reach..=reach {
            let key = image.read(row + dr, col + dc);
            if key == EMPTY {
                hole = true;
                continue;
            }
            if key == last {
                continue;
            }
            last = key;
            let idx = key as u32;
            let Some(h) = ctx.plane_hit(idx, o, u) else {
                continue;
            };
            if key == centre {
                centre_on_plane = true;
            }
            if !(h.t > 0.0) {
                continue;
            }
            let hit = Hit {
                t: h.t,
                point: idx,
                cos_incidence: h.cos,
            };
            let better = |b: &Option<Hit>| b.is_none_or(|b| (h.t, idx) < (b.t, b.point));
            // Every disk is at least rho wide; look up a level-of-detail radius only when that matters.
            let radius = if h.off <= ctx.rho {
                ctx.rho
            } else {
                rho_of(idx)
            };
            if h.off <= radius {
                let w = 1.0 - (h.off / radius).powi(2);
                strict.offer(h.t, idx, h.cos, w, ctx.gamma_mm(idx));
                continue;
            }
            // Angle between the beam and the centre of the pixel this candidate won (plus a tenth of a
            // pixel for rounding): the candidate's disk covers that centre's ray.
            let ddx = (x - (col + dc) as f32 - 0.5) * image.pix_az * cos_el;
            let ddy = (y - (row + dr) as f32 - 0.5) * image.pix_el;
            let delta = ddx.hypot(ddy) + 0.1 * image.pix_el;
            if h.off <= radius + h.t * delta / h.cos && better(&relaxed) {
                relaxed = Some(hit);
            }
        }
    }
    if let Some(hit) = strict.resolve() {
        return Some(hit);
    }
    if hole {
        relaxed = None;
    }
    if relaxed.is_some() || centre == EMPTY || centre_on_plane {
        return relaxed;
    }
    let idx = centre as u32;
    ctx.plain_hit(idx, o, u).map(|(t, cos)| Hit {
        t,
        point: idx,
        cos_incidence: cos,
    })
}
