//! A planned path flown without stopping: the planner's polyline with its corners rounded into circular arcs
//! (each checked against the free space), a speed profile along it, and headings that turn with the path.
//!
//! Why this shape: a polyline flown segment by segment stops at every vertex (the first goal flights stood
//! still 40% of the time in a cluttered plot). Here the geometry is tangent-continuous, so the speed only has
//! to drop where a corner's radius demands it (lateral acceleration `v^2 / r` within the limit). The speed
//! profile is the classic forward-backward pass under the acceleration limit, then smoothed in time with a
//! moving average of its position ([`SMOOTHING_S`]): the average of a profile with bounded acceleration has a
//! continuous acceleration (bounded jerk), which the attitude loop can follow, as the raised-cosine ramps of
//! [`super::Segment`] do for straight moves.

use std::f64::consts::{PI, TAU};

use nalgebra::Vector3;

use crate::control::Setpoint;

/// Width of the moving average that smooths the speed profile in time, seconds.
pub const SMOOTHING_S: f64 = 0.5;

/// Share of the acceleration limit a corner may use sideways; the rest is left to the speed changes and the
/// smoothing, which passes corners a little faster than the profile.
const LATERAL_SHARE: f64 = 0.6;

/// Time step of the stored profile, seconds.
const DT: f64 = 0.01;

/// Arc-length step of the speed profile's passes, metres.
const DS: f64 = 0.01;

/// A piece of the path: a straight line or a circular arc, each starting where the last ended.
#[derive(Clone, Debug, PartialEq)]
enum Piece {
    Line {
        a: Vector3<f64>,
        /// Unit direction.
        u: Vector3<f64>,
        length: f64,
    },
    /// `centre + r (cos(s/r) e1 + sin(s/r) e2)` for `s` in `0..length`.
    Arc {
        centre: Vector3<f64>,
        r: f64,
        e1: Vector3<f64>,
        e2: Vector3<f64>,
        length: f64,
    },
}

impl Piece {
    fn length(&self) -> f64 {
        match self {
            Piece::Line { length, .. } | Piece::Arc { length, .. } => *length,
        }
    }

    /// Position, unit tangent and curvature vector (towards the centre, 1/r long) `s` into the piece.
    fn at(&self, s: f64) -> (Vector3<f64>, Vector3<f64>, Vector3<f64>) {
        match self {
            Piece::Line { a, u, .. } => (a + u * s, *u, Vector3::zeros()),
            Piece::Arc {
                centre, r, e1, e2, ..
            } => {
                let (sin, cos) = (s / r).sin_cos();
                let radial = e1 * cos + e2 * sin;
                (centre + radial * *r, e2 * cos - e1 * sin, -radial / *r)
            }
        }
    }

    fn radius(&self) -> f64 {
        match self {
            Piece::Line { .. } => f64::INFINITY,
            Piece::Arc { r, .. } => *r,
        }
    }
}

/// The rounded path's geometry.
#[derive(Clone, Debug, PartialEq)]
struct Geometry {
    pieces: Vec<Piece>,
    /// Where the path starts (and ends, if it has no pieces).
    first: Vector3<f64>,
    /// Arc length where each piece starts.
    starts: Vec<f64>,
    length: f64,
}

impl Geometry {
    /// The polyline `points` with each inner corner rounded by an arc of radius up to `radius`, shrunk until
    /// the arc lies in free space (`is_free`) and leaves each segment at most half its length.
    fn rounded(
        points: &[Vector3<f64>],
        radius: f64,
        is_free: &dyn Fn(&Vector3<f64>) -> bool,
    ) -> Geometry {
        let points: Vec<Vector3<f64>> =
            points
                .iter()
                .fold(Vec::new(), |mut v: Vec<Vector3<f64>>, p| {
                    if v.last().is_none_or(|q| (p - q).norm() > 1e-6) {
                        v.push(*p);
                    }
                    v
                });
        let mut pieces = Vec::new();
        let mut from = points[0];
        for i in 1..points.len() {
            let (a, b) = (points[i - 1], points[i]);
            let Some(c) = points.get(i + 1) else {
                push_line(&mut pieces, from, b);
                break;
            };
            match corner(a, b, *c, radius, is_free) {
                Some((enter, arc, leave)) => {
                    push_line(&mut pieces, from, enter);
                    pieces.push(arc);
                    from = leave;
                }
                None => {
                    push_line(&mut pieces, from, b);
                    from = b;
                }
            }
        }
        let mut starts = Vec::with_capacity(pieces.len());
        let mut length = 0.0;
        for p in &pieces {
            starts.push(length);
            length += p.length();
        }
        Geometry {
            pieces,
            first: points[0],
            starts,
            length,
        }
    }

    fn piece_at(&self, s: f64) -> (&Piece, f64) {
        let i = self.starts.partition_point(|&x| x <= s).saturating_sub(1);
        (
            &self.pieces[i],
            (s - self.starts[i]).clamp(0.0, self.pieces[i].length()),
        )
    }

    /// Position, unit tangent and curvature vector at arc length `s`.
    fn at(&self, s: f64) -> (Vector3<f64>, Vector3<f64>, Vector3<f64>) {
        if self.pieces.is_empty() {
            return (self.first, Vector3::x(), Vector3::zeros());
        }
        let (piece, local) = self.piece_at(s.clamp(0.0, self.length));
        piece.at(local)
    }

    fn radius_at(&self, s: f64) -> f64 {
        if self.pieces.is_empty() {
            return f64::INFINITY;
        }
        self.piece_at(s).0.radius()
    }
}

fn push_line(pieces: &mut Vec<Piece>, a: Vector3<f64>, b: Vector3<f64>) {
    let length = (b - a).norm();
    if length > 1e-9 {
        pieces.push(Piece::Line {
            a,
            u: (b - a) / length,
            length,
        });
    }
}

/// The arc rounding the corner at `b` between `a -> b` and `b -> c`: where it leaves the first segment, the
/// arc, and where it joins the second. `None` for a straight or a reversing corner, or where no arc of a
/// useful radius fits in free space.
fn corner(
    a: Vector3<f64>,
    b: Vector3<f64>,
    c: Vector3<f64>,
    radius: f64,
    is_free: &dyn Fn(&Vector3<f64>) -> bool,
) -> Option<(Vector3<f64>, Piece, Vector3<f64>)> {
    let (u1, u2) = ((b - a).normalize(), (c - b).normalize());
    let turn = u1.dot(&u2).clamp(-1.0, 1.0).acos();
    if !(1e-3..=PI - 1e-3).contains(&turn) {
        return None;
    }
    let half_tan = (turn / 2.0).tan();
    let room = 0.5 * (b - a).norm().min((c - b).norm());
    let mut r = radius.min(room / half_tan);
    while r > 0.02 {
        let d = r * half_tan;
        let (enter, leave) = (b - u1 * d, b + u2 * d);
        // The centre lies inside the corner, r from both tangent points.
        let inward = (u2 - u1).normalize();
        let centre = b + inward * (r / (turn / 2.0).cos());
        let e1 = (enter - centre) / r;
        let e2 = u1;
        let arc = Piece::Arc {
            centre,
            r,
            e1,
            e2,
            length: r * turn,
        };
        let n = ((r * turn) / 0.05).ceil().max(2.0) as usize;
        if (0..=n).all(|k| is_free(&arc.at(r * turn * k as f64 / n as f64).0)) {
            return Some((enter, arc, leave));
        }
        r *= 0.5;
    }
    None
}

/// A path flown from rest to rest without stopping: its geometry, and the arc length, speed and tangential
/// acceleration every [`DT`] seconds from its start, and the heading.
#[derive(Clone, Debug, PartialEq)]
pub struct SmoothPath {
    geometry: Geometry,
    /// (s, v, a_t, yaw) every [`DT`] from `t0`.
    samples: Vec<[f64; 4]>,
    /// When the path starts, seconds of flight time.
    pub t0: f64,
}

impl SmoothPath {
    /// Rounds the polyline `points` (corners checked with `is_free`) and times it from rest at `t0` to rest,
    /// under `speed` and the acceleration `accel`, starting with heading `yaw` and turning towards the path's
    /// heading at `turn_rate` rad/s.
    pub fn new(
        points: &[Vector3<f64>],
        (speed, accel): (f64, f64),
        (t0, yaw, turn_rate): (f64, f64, f64),
        is_free: &dyn Fn(&Vector3<f64>) -> bool,
    ) -> SmoothPath {
        let lateral = LATERAL_SHARE * accel;
        let geometry = Geometry::rounded(points, speed * speed / lateral, is_free);
        let (profile, ds) = speed_profile(&geometry, speed, accel, lateral);
        let timed = smoothed(&time_parametrised(&profile, ds), geometry.length);
        let mut heading = yaw;
        let samples = timed
            .into_iter()
            .map(|(s, v, a)| {
                let (_, tangent, _) = geometry.at(s);
                if tangent.xy().norm() > 0.3 && v > 1e-3 {
                    let want = tangent.y.atan2(tangent.x);
                    let turn = (want - heading + PI).rem_euclid(TAU) - PI;
                    heading += turn.clamp(-turn_rate * DT, turn_rate * DT);
                }
                [s, v, a, heading]
            })
            .collect();
        SmoothPath {
            geometry,
            samples,
            t0,
        }
    }

    /// How long the path takes, seconds.
    pub fn duration(&self) -> f64 {
        (self.samples.len().saturating_sub(1)) as f64 * DT
    }

    /// The path's length, metres.
    pub fn length(&self) -> f64 {
        self.geometry.length
    }

    /// Where the path ends.
    pub fn end(&self) -> Vector3<f64> {
        self.geometry.at(self.geometry.length).0
    }

    /// The heading at the end, radians.
    pub fn end_yaw(&self) -> f64 {
        self.samples.last().map_or(0.0, |x| x[3])
    }

    /// The setpoint at flight time `t` (the ends before and after).
    pub fn sample(&self, t: f64) -> Setpoint {
        let x = ((t - self.t0) / DT).clamp(0.0, self.duration() / DT);
        let i = (x.floor() as usize).min(self.samples.len().saturating_sub(2));
        let f = x - i as f64;
        let (p, q) = (
            self.samples[i],
            self.samples[(i + 1).min(self.samples.len() - 1)],
        );
        let lerp = |k: usize| p[k] + (q[k] - p[k]) * f;
        let (s, v, a) = (lerp(0), lerp(1), lerp(2));
        let turn = (q[3] - p[3] + PI).rem_euclid(TAU) - PI;
        let (position, tangent, curvature) = self.geometry.at(s);
        Setpoint {
            position,
            velocity: tangent * v,
            acceleration: tangent * a + curvature * v * v,
            yaw: p[3] + turn * f,
        }
    }
}

/// The fastest speed at equal steps of about [`DS`] of arc length: under `speed`, under the corners' lateral
/// limit, and reachable from rest and to rest under `accel` (forward and backward passes). Returns the speeds
/// and the step.
fn speed_profile(g: &Geometry, speed: f64, accel: f64, lateral: f64) -> (Vec<f64>, f64) {
    let n = (g.length / DS).ceil().max(1.0) as usize;
    let ds = g.length / n as f64;
    let mut v: Vec<f64> = (0..=n)
        .map(|i| speed.min((lateral * g.radius_at(i as f64 * ds)).sqrt()))
        .collect();
    v[0] = 0.0;
    v[n] = 0.0;
    for i in 1..=n {
        v[i] = v[i].min((v[i - 1] * v[i - 1] + 2.0 * accel * ds).sqrt());
    }
    for i in (0..n).rev() {
        v[i] = v[i].min((v[i + 1] * v[i + 1] + 2.0 * accel * ds).sqrt());
    }
    (v, ds)
}

/// Arc length every [`DT`] seconds, from speeds `v` at arc-length steps of `ds`.
fn time_parametrised(v: &[f64], ds: f64) -> Vec<f64> {
    let n = v.len() - 1;
    // When each arc-length sample is passed (the speed taken as linear in time between them).
    let mut t = vec![0.0; n + 1];
    for i in 1..=n {
        let mean = 0.5 * (v[i - 1] + v[i]);
        t[i] = t[i - 1] + if mean > 0.0 { ds / mean } else { 0.0 };
    }
    let end = t[n];
    let steps = (end / DT).ceil() as usize;
    let mut out = Vec::with_capacity(steps + 1);
    let mut j = 0;
    for k in 0..=steps {
        let tk = (k as f64 * DT).min(end);
        while j + 1 < n && t[j + 1] < tk {
            j += 1;
        }
        let span = t[(j + 1).min(n)] - t[j];
        let f = if span > 0.0 { (tk - t[j]) / span } else { 0.0 };
        out.push((j as f64 + f.clamp(0.0, 1.0)) * ds);
    }
    out
}

/// Arc length, speed and tangential acceleration every [`DT`] after a moving average of [`SMOOTHING_S`] over
/// the arc length against time `s`, held at the ends; the last sample is the path's end at rest.
fn smoothed(s: &[f64], length: f64) -> Vec<(f64, f64, f64)> {
    let w = (SMOOTHING_S / DT).round() as isize;
    let at = |k: isize| s[k.clamp(0, s.len() as isize - 1) as usize];
    // Over the window k - w + 1 ..= k: the mean, and its change per step (the difference across the window).
    let speed = |k: isize| (at(k) - at(k - w)) / (w as f64 * DT);
    let mut out = Vec::with_capacity(s.len() + w as usize);
    let mut sum: f64 = (1 - w..=0).map(at).sum();
    for k in 0..(s.len() as isize + w) {
        if k > 0 {
            sum += at(k) - at(k - w);
        }
        let a = (speed(k + 1) - speed(k - 1)) / (2.0 * DT);
        out.push((sum / w as f64, speed(k), a));
    }
    if let Some(last) = out.last_mut() {
        *last = (length, 0.0, 0.0);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn free(_: &Vector3<f64>) -> bool {
        true
    }

    fn l_path() -> SmoothPath {
        let points = [
            Vector3::new(0.0, 0.0, 1.0),
            Vector3::new(5.0, 0.0, 1.0),
            Vector3::new(5.0, 5.0, 1.0),
            Vector3::new(9.0, 9.0, 1.0),
        ];
        SmoothPath::new(&points, (1.8, 1.5), (2.0, 0.0, 0.8), &free)
    }

    /// From rest to rest at the ends, never below 0.1 m/s on the way (but in the first and last half second),
    /// under the speed limit, along a path that cuts the polyline's corners, with the position the integral of
    /// the velocity.
    #[test]
    fn a_path_is_flown_from_rest_to_rest_without_stopping() {
        let p = l_path();
        let start = p.sample(p.t0);
        let end = p.sample(p.t0 + p.duration());
        assert!((start.position - Vector3::new(0.0, 0.0, 1.0)).norm() < 1e-9);
        assert!((end.position - Vector3::new(9.0, 9.0, 1.0)).norm() < 1e-9);
        assert!(start.velocity.norm() < 1e-9 && end.velocity.norm() < 1e-9);
        let steps = (p.duration() / 0.001) as usize;
        let (mut slowest, mut top, mut drift) = (f64::INFINITY, 0.0f64, 0.0f64);
        let mut integrated = start.position;
        for k in 0..steps {
            let tau = k as f64 * 0.001;
            let sp = p.sample(p.t0 + tau);
            let v = sp.velocity.norm();
            if tau > 0.5 && tau < p.duration() - 0.5 {
                slowest = slowest.min(v);
            }
            top = top.max(v);
            drift = drift.max((integrated - sp.position).norm());
            integrated += sp.velocity * 0.001;
            assert!(sp.acceleration.norm() < 1.5 * 1.3, "{tau}: {sp:?}");
        }
        assert!(top <= 1.8 + 1e-9 && top > 1.7, "top speed {top}");
        assert!(slowest > 0.1, "slowest {slowest} m/s on the way");
        assert!(drift < 0.02, "position and velocity disagree by {drift} m");
        let polyline = 5.0 + 5.0 + 32f64.sqrt();
        assert!(
            p.length() < polyline && p.length() > polyline - 1.5,
            "{}",
            p.length()
        );
    }

    /// The heading turns with the path, never faster than the turn rate.
    #[test]
    fn the_heading_follows_the_path() {
        let p = l_path();
        let n = (p.duration() / 0.01) as usize;
        let samples: Vec<Setpoint> = (0..=n).map(|k| p.sample(p.t0 + k as f64 * 0.01)).collect();
        for w in samples.windows(2) {
            let turn = (w[1].yaw - w[0].yaw + PI).rem_euclid(TAU) - PI;
            assert!(turn.abs() <= 0.8 * 0.01 + 1e-9, "{turn}");
        }
        // On the straight stretch going north, facing north.
        let north = samples
            .iter()
            .min_by(|a, b| {
                let d = |s: &Setpoint| (s.position - Vector3::new(5.0, 3.0, 1.0)).norm();
                d(a).total_cmp(&d(b))
            })
            .unwrap();
        assert!((north.yaw - PI / 2.0).abs() < 0.15, "{north:?}");
        assert!((p.end_yaw() - PI / 4.0).abs() < 0.05, "{}", p.end_yaw());
    }

    /// A corner whose rounding would leave the free space is rounded tighter (or left sharp).
    #[test]
    fn corners_stay_in_free_space() {
        let points = [
            Vector3::new(0.0, 0.0, 1.0),
            Vector3::new(5.0, 0.0, 1.0),
            Vector3::new(5.0, 5.0, 1.0),
        ];
        // Free: only within 0.1 m of the polyline.
        let near = |q: &Vector3<f64>| {
            (q.y.abs() < 0.1 && q.x <= 5.1) || ((q.x - 5.0).abs() < 0.1 && q.y >= -0.1)
        };
        let p = SmoothPath::new(&points, (2.0, 1.5), (0.0, 0.0, 0.8), &near);
        for k in 0..=1000 {
            let q = p.sample(p.duration() * k as f64 / 1000.0).position;
            assert!(near(&q), "{q:?}");
        }
    }
}
