//! Livox non-repetitive patterns: the rosette of the prism scanners (Mid-40, Horizon, Avia; MARSIM's closed form
//! with continuous angles) and an approximate sweep for the Mid-360. Every point has its own time, and the
//! pattern's phase runs on across frames, so each frame fills gaps the previous ones left.

use rayon::prelude::*;
use serde::{Deserialize, Serialize};

use super::{Beam, Fov, SensorError, check_range};

/// A Risley-prism rosette (MARSIM's closed form, docs/algorithms.md, section 14): at time `t` the pattern point is
/// `((cos w1 t + cos w2 t) / 2, (sin w1 t + sin w2 t) / 2)`, a point of the unit disc, scaled to the field of
/// view. Point `k` of a frame fires at `k / points_per_second` and belongs to line `k % lines`; lines are shifted
/// vertically by `line_offset_deg` from one to the next, centred on the optical axis. Unlike MARSIM, angles are not
/// quantised and `t` is global (frame start + point time), so the pattern never restarts at a frame boundary.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Rosette {
    /// Field of view `[horizontal, vertical]`, degrees, of all lines together. Equal values give a circular field
    /// of view (Mid-40: `[38.4, 38.4]`).
    pub fov_deg: [f32; 2],
    /// Laser lines (1 to 65536).
    pub lines: u32,
    /// Vertical shift between neighbouring lines, degrees. Each line's own pattern spans
    /// `fov_deg[1] - (lines - 1) * line_offset_deg` vertically. By default 0.
    #[serde(default)]
    pub line_offset_deg: f32,
    /// Points per second over all lines (single return).
    pub points_per_second: f64,
    /// Speed of the first prism, revolutions per minute (Avia in MARSIM: 7294).
    pub w1_rpm: f64,
    /// Speed of the second prism, revolutions per minute, negative when it turns the other way (-4664).
    pub w2_rpm: f64,
}

/// An approximation of the Livox Mid-360's pattern, whose prism parameters are not published: each line sweeps
/// the azimuth at a steady `azimuth_rev_per_s` while its elevation runs a triangle wave between the limits at
/// `elevation_cycles_per_s`. Lines are spread evenly in azimuth and in elevation phase. With the two rates
/// incommensurate (and the phase continuing across frames) the pattern does not repeat frame to frame and covers
/// the whole vertical range, which MARSIM's quantised version did not. Point density is uniform in elevation,
/// not the real unit's distribution.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Sweep {
    /// Lowest and highest elevation, degrees (Mid-360: `[-7, 52]`).
    pub elevation_range_deg: [f32; 2],
    /// Laser lines (1 to 65536).
    pub lines: u32,
    /// Points per second over all lines.
    pub points_per_second: f64,
    /// Azimuth turns per second of each line, counter-clockwise seen from above.
    pub azimuth_rev_per_s: f64,
    /// Full elevation cycles (bottom, top, bottom) per second of each line.
    pub elevation_cycles_per_s: f64,
}

const MAX_POINTS_PER_FRAME: f64 = super::MAX_BEAMS_PER_FRAME as f64;

fn check_point_rate(points_per_second: f64, rate_hz: f64) -> Result<(), SensorError> {
    if !(points_per_second.is_finite() && points_per_second > 0.0) {
        return Err(SensorError::invalid(
            "pattern.points_per_second",
            format!("must be positive, got {points_per_second}"),
        ));
    }
    let per_frame = points_per_second / rate_hz;
    if !(1.0..=MAX_POINTS_PER_FRAME).contains(&per_frame) {
        return Err(SensorError::invalid(
            "pattern.points_per_second",
            format!(
                "gives {per_frame:.1} points per frame at rate_hz {rate_hz}; must be between 1 and {MAX_POINTS_PER_FRAME}"
            ),
        ));
    }
    Ok(())
}

fn check_lines(lines: u32) -> Result<(), SensorError> {
    if lines == 0 || lines > u32::from(u16::MAX) + 1 {
        return Err(SensorError::invalid(
            "pattern.lines",
            format!("must be 1 to 65536, got {lines}"),
        ));
    }
    Ok(())
}

fn check_speed(field: &str, value: f64) -> Result<(), SensorError> {
    if !value.is_finite() || value == 0.0 {
        return Err(SensorError::invalid(
            field,
            format!("must be a finite, non-zero speed, got {value}"),
        ));
    }
    Ok(())
}

/// Points in one frame: whole points that fire within the frame period.
pub(crate) fn points_per_frame(points_per_second: f64, rate_hz: f64) -> usize {
    // The epsilon keeps 240000 / 10 at 24000 despite rounding in the division.
    let n = (points_per_second / rate_hz + 1e-6).floor();
    if n.is_finite() && n >= 0.0 {
        (n.min(MAX_POINTS_PER_FRAME)) as usize
    } else {
        0
    }
}

/// Fractional turns done by a rotation of `turns_per_frame` over `frame_index` whole frames, keeping precision
/// for large frame indices by dropping whole turns first.
/// Points per block of the rosette's phase recurrence (see `Rosette::generate`).
const PHASE_BLOCK: usize = 256;

fn phase_at_frame(turns_per_frame: f64, frame_index: u64) -> f64 {
    (turns_per_frame.fract() * frame_index as f64).fract()
}

/// The sine and cosine of an angle, advanced by rotation: an angle that grows by a fixed step per point
/// costs two multiplies and adds per point instead of a `sin_cos`.
#[derive(Clone, Copy, Debug)]
struct Phasor {
    sin: f64,
    cos: f64,
}

impl Phasor {
    /// The angle of `turns` full turns.
    fn of_turns(turns: f64) -> Phasor {
        let (sin, cos) = (std::f64::consts::TAU * turns).sin_cos();
        Phasor { sin, cos }
    }

    /// The phase `base + rate * time` (turns) of point `k` at `points_per_second`, evaluated exactly.
    fn at_point(base: f64, rate: f64, k: usize, points_per_second: f64) -> Phasor {
        Phasor::of_turns(base + (rate * (k as f64 / points_per_second)).fract())
    }

    /// This angle plus `by`'s.
    fn turned(self, by: Phasor) -> Phasor {
        Phasor {
            sin: self.sin * by.cos + self.cos * by.sin,
            cos: self.cos * by.cos - self.sin * by.sin,
        }
    }
}

/// Fills `out` with the `n` beams of a frame, in parallel over fixed blocks of [`PHASE_BLOCK`] points:
/// `block(first)` sets up the block starting at point `first` (its phasors evaluated exactly) and returns the
/// beam of each point `k` of the block, called in order. Fixed blocks keep the result independent of the
/// number of threads, and the rounding a block accumulates (~1e-14 rad) far below the f32 directions.
fn beams_in_blocks<F, B>(n: usize, out: &mut Vec<Beam>, block: B)
where
    B: Fn(usize) -> F + Sync + Send,
    F: FnMut(usize) -> Beam,
{
    out.clear();
    out.par_extend(
        (0..n.div_ceil(PHASE_BLOCK))
            .into_par_iter()
            .flat_map_iter(|b| {
                let first = b * PHASE_BLOCK;
                (first..(first + PHASE_BLOCK).min(n)).map(block(first))
            }),
    );
}

impl Rosette {
    /// Half-extent of one line's own pattern, `[horizontal, vertical]`, radians.
    fn line_half_extent_rad(&self) -> [f64; 2] {
        let spread = f64::from(self.lines.saturating_sub(1)) * f64::from(self.line_offset_deg);
        [
            (f64::from(self.fov_deg[0]) / 2.0).to_radians(),
            ((f64::from(self.fov_deg[1]) - spread) / 2.0).to_radians(),
        ]
    }

    /// Vertical shift of the outermost line, radians.
    fn max_line_shift_rad(&self) -> f64 {
        (f64::from(self.lines.saturating_sub(1)) * f64::from(self.line_offset_deg) / 2.0)
            .to_radians()
    }

    pub(crate) fn validate(&self, rate_hz: f64) -> Result<(), SensorError> {
        check_range("pattern.fov_deg[0]", self.fov_deg[0], 0.1, 179.0)?;
        check_range("pattern.fov_deg[1]", self.fov_deg[1], 0.1, 179.0)?;
        check_lines(self.lines)?;
        check_range("pattern.line_offset_deg", self.line_offset_deg, 0.0, 90.0)?;
        let spread = self.lines.saturating_sub(1) as f32 * self.line_offset_deg;
        if spread >= self.fov_deg[1] {
            return Err(SensorError::invalid(
                "pattern.line_offset_deg",
                format!(
                    "(lines - 1) x line_offset_deg = {spread} deg leaves no vertical field of view for each line \
                     (fov_deg[1] = {})",
                    self.fov_deg[1]
                ),
            ));
        }
        check_point_rate(self.points_per_second, rate_hz)?;
        check_speed("pattern.w1_rpm", self.w1_rpm)?;
        check_speed("pattern.w2_rpm", self.w2_rpm)
    }

    pub(crate) fn generate(&self, frame_index: u64, rate_hz: f64, out: &mut Vec<Beam>) {
        let n = points_per_frame(self.points_per_second, rate_hz);
        let period = 1.0 / rate_hz;
        let (f1, f2) = (self.w1_rpm / 60.0, self.w2_rpm / 60.0);
        let base1 = phase_at_frame(f1 * period, frame_index);
        let base2 = phase_at_frame(f2 * period, frame_index);
        let [half_h, half_v] = self.line_half_extent_rad();
        let shift = f64::from(self.line_offset_deg).to_radians();
        let centre = f64::from(self.lines.saturating_sub(1)) / 2.0;
        let lines = u64::from(self.lines.max(1));
        // Each prism's phase advances by a fixed angle per point: a `Phasor` per prism, exact at the start
        // of every block. The trigonometry was about a tenth of a beam-rendered Avia frame.
        let pps = self.points_per_second;
        let (step1, step2) = (Phasor::of_turns(f1 / pps), Phasor::of_turns(f2 / pps));
        beams_in_blocks(n, out, |first| {
            let mut z1 = Phasor::at_point(base1, f1, first, pps);
            let mut z2 = Phasor::at_point(base2, f2, first, pps);
            move |k| {
                let rx = 0.5 * (z1.cos + z2.cos);
                let ry = 0.5 * (z1.sin + z2.sin);
                z1 = z1.turned(step1);
                z2 = z2.turned(step2);
                let line = k as u64 % lines;
                let u = rx * half_h;
                let v = ry * half_v + (line as f64 - centre) * shift;
                Beam {
                    dir: polar_about_x(u, v),
                    time_s: (k as f64 / pps) as f32,
                    ring: line as u16,
                }
            }
        });
    }

    pub(crate) fn fov(&self) -> Fov {
        let [half_h, _] = self.line_half_extent_rad();
        let half_v = (f64::from(self.fov_deg[1]) / 2.0).to_radians();
        // A point's azimuth never exceeds its angle off the axis, so this bounds lines shifted off centre too.
        let azimuth = half_h.hypot(self.max_line_shift_rad());
        Fov {
            azimuth_min_rad: -azimuth as f32,
            azimuth_max_rad: azimuth as f32,
            elevation_min_rad: -half_v as f32,
            elevation_max_rad: half_v as f32,
        }
    }

    /// Square root of the solid angle per point of a frame (the field of view taken as an ellipse).
    pub(crate) fn angular_resolution_rad(&self, rate_hz: f64) -> f32 {
        let h = f64::from(self.fov_deg[0]).to_radians();
        let v = f64::from(self.fov_deg[1]).to_radians();
        let area = std::f64::consts::FRAC_PI_4 * h * v;
        (area / points_per_frame(self.points_per_second, rate_hz).max(1) as f64).sqrt() as f32
    }
}

/// The direction at angle `hypot(u, v)` off the +x axis, tilted towards +y by `u` and towards +z by `v`: a
/// beam at `(u, 0)` has azimuth `u`, one at `(0, v)` elevation `v`.
///
/// The vector is of unit length by construction (cos^2 + sin^2 (u^2 + v^2) / theta^2 = 1) to f64 rounding,
/// far below f32's, so it is not normalised again; `hypot`'s care for overflow is not needed for angles.
fn polar_about_x(u: f64, v: f64) -> [f32; 3] {
    let t2 = u * u + v * v;
    if t2 < 1e-24 {
        return [1.0, 0.0, 0.0];
    }
    if t2 <= 1.0 {
        // cos(theta) and sin(theta) / theta as series in theta^2, without the square root or libm's sincos
        // (a quarter of a Livox frame's pattern): within 3e-17 for theta <= 1 rad, the fields of view of the
        // Livox presets, far below the f32 the directions are stored in.
        let (cos, s) = cos_and_sinc(t2);
        return [cos as f32, (s * u) as f32, (s * v) as f32];
    }
    let theta = t2.sqrt();
    let (sin, cos) = theta.sin_cos();
    let s = sin / theta;
    [cos as f32, (s * u) as f32, (s * v) as f32]
}

/// `(cos(theta), sin(theta) / theta)` from `t2 = theta^2 <= 1` by their Taylor series to theta^20 and theta^18
/// (the next terms are below 5e-20 and 3e-18).
fn cos_and_sinc(t2: f64) -> (f64, f64) {
    // 1 / (2k)! and 1 / (2k + 1)!, k = 0..=10 and 0..=9, alternating in sign.
    const COS: [f64; 11] = [
        1.0,
        -1.0 / 2.0,
        1.0 / 24.0,
        -1.0 / 720.0,
        1.0 / 40_320.0,
        -1.0 / 3_628_800.0,
        1.0 / 479_001_600.0,
        -1.0 / 87_178_291_200.0,
        1.0 / 20_922_789_888_000.0,
        -1.0 / 6_402_373_705_728_000.0,
        1.0 / 2_432_902_008_176_640_000.0,
    ];
    const SINC: [f64; 10] = [
        1.0,
        -1.0 / 6.0,
        1.0 / 120.0,
        -1.0 / 5_040.0,
        1.0 / 362_880.0,
        -1.0 / 39_916_800.0,
        1.0 / 6_227_020_800.0,
        -1.0 / 1_307_674_368_000.0,
        1.0 / 355_687_428_096_000.0,
        -1.0 / 121_645_100_408_832_000.0,
    ];
    let horner = |c: &[f64]| c.iter().rev().fold(0.0, |acc, &k| acc * t2 + k);
    (horner(&COS), horner(&SINC))
}

/// Triangle wave over one cycle: 0 at phase 0, 1 at phase 0.5, back to 0 at phase 1.
fn triangle(phase: f64) -> f64 {
    // Phases are non-negative here: truncation by a cast, where `rem_euclid` is a libm call (both exact).
    let p = if (0.0..9e15).contains(&phase) {
        phase - (phase as u64) as f64
    } else {
        phase.rem_euclid(1.0)
    };
    1.0 - (2.0 * p - 1.0).abs()
}

impl Sweep {
    pub(crate) fn validate(&self, rate_hz: f64) -> Result<(), SensorError> {
        let [lo, hi] = self.elevation_range_deg;
        check_range("pattern.elevation_range_deg[0]", lo, -90.0, 90.0)?;
        check_range("pattern.elevation_range_deg[1]", hi, -90.0, 90.0)?;
        if lo >= hi {
            return Err(SensorError::invalid(
                "pattern.elevation_range_deg",
                format!("the lowest elevation ({lo}) must be below the highest ({hi})"),
            ));
        }
        check_lines(self.lines)?;
        check_point_rate(self.points_per_second, rate_hz)?;
        check_speed("pattern.azimuth_rev_per_s", self.azimuth_rev_per_s)?;
        check_speed(
            "pattern.elevation_cycles_per_s",
            self.elevation_cycles_per_s,
        )
    }

    pub(crate) fn generate(&self, frame_index: u64, rate_hz: f64, out: &mut Vec<Beam>) {
        let n = points_per_frame(self.points_per_second, rate_hz);
        let period = 1.0 / rate_hz;
        let base_az = phase_at_frame(self.azimuth_rev_per_s * period, frame_index);
        let base_el = phase_at_frame(self.elevation_cycles_per_s * period, frame_index);
        let lo = f64::from(self.elevation_range_deg[0]).to_radians();
        let span = f64::from(self.elevation_range_deg[1]).to_radians() - lo;
        let lines = u64::from(self.lines.max(1));
        // The azimuth (turns) is base + rate * time + line / lines, less half a turn: a `Phasor` advanced
        // point by point (exact at the start of every block) turned by the line's share. The elevation's
        // triangle wave turns every few hundred points and keeps its own sine and cosine.
        let pps = self.points_per_second;
        let rate = self.azimuth_rev_per_s;
        let step = Phasor::of_turns(rate / pps);
        let shares: Vec<Phasor> = (0..lines)
            .map(|line| Phasor::of_turns(line as f64 / lines as f64))
            .collect();
        let shares = &shares;
        beams_in_blocks(n, out, |first| {
            let mut z = Phasor::at_point(base_az, rate, first, pps);
            move |k| {
                let time = k as f64 / pps;
                let line = k as u64 % lines;
                // Half a turn back: both sine and cosine change sign.
                let az = z.turned(shares[line as usize]);
                let (sin_az, cos_az) = (-az.sin, -az.cos);
                z = z.turned(step);
                let share = line as f64 / lines as f64;
                let cycle = base_el + (self.elevation_cycles_per_s * time).fract() + share;
                let (sin_el, cos_el) = (lo + span * triangle(cycle)).sin_cos();
                // Unit length by construction; the phasors drift from it by ~1e-15 over a block.
                Beam {
                    dir: [cos_el * cos_az, cos_el * sin_az, sin_el].map(|c| c as f32),
                    time_s: time as f32,
                    ring: line as u16,
                }
            }
        });
    }

    pub(crate) fn fov(&self) -> Fov {
        Fov {
            azimuth_min_rad: -std::f32::consts::PI,
            azimuth_max_rad: std::f32::consts::PI,
            elevation_min_rad: self.elevation_range_deg[0].to_radians(),
            elevation_max_rad: self.elevation_range_deg[1].to_radians(),
        }
    }

    /// Square root of the solid angle per point of a frame.
    pub(crate) fn angular_resolution_rad(&self, rate_hz: f64) -> f32 {
        let lo = f64::from(self.elevation_range_deg[0]).to_radians();
        let hi = f64::from(self.elevation_range_deg[1]).to_radians();
        let area = std::f64::consts::TAU * (hi.sin() - lo.sin());
        (area / points_per_frame(self.points_per_second, rate_hz).max(1) as f64).sqrt() as f32
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn triangle_wave_turns_at_half_phase() {
        for (phase, value) in [
            (0.0, 0.0),
            (0.25, 0.5),
            (0.5, 1.0),
            (0.75, 0.5),
            (1.0, 0.0),
            (-0.25, 0.5),
        ] {
            assert!((triangle(phase) - value).abs() < 1e-12, "{phase}");
        }
    }

    #[test]
    fn points_per_frame_counts_whole_points() {
        assert_eq!(points_per_frame(240_000.0, 10.0), 24_000);
        assert_eq!(points_per_frame(240_000.0, 7.0), 34_285);
        assert_eq!(points_per_frame(100_000.0, 0.5), 200_000);
    }

    #[test]
    fn phase_drops_whole_turns() {
        assert!((phase_at_frame(12.25, 3) - 0.75).abs() < 1e-12);
        assert_eq!(phase_at_frame(5.0, 1_000_000), 0.0);
    }

    #[test]
    fn polar_mapping_keeps_axis_angles() {
        let d = polar_about_x(0.3, 0.0);
        assert!((d[1].atan2(d[0]) - 0.3).abs() < 1e-6 && d[2] == 0.0);
        let d = polar_about_x(0.0, -0.4);
        assert!((d[2].asin() + 0.4).abs() < 1e-6 && d[1] == 0.0);
        assert_eq!(polar_about_x(0.0, 0.0), [1.0, 0.0, 0.0]);
    }

    #[test]
    fn series_agree_with_libm_within_a_radian() {
        for k in 0..=2000 {
            let theta = k as f64 / 2000.0;
            let (cos, sinc) = cos_and_sinc(theta * theta);
            let sinc_libm = if theta > 0.0 {
                theta.sin() / theta
            } else {
                1.0
            };
            assert!((cos - theta.cos()).abs() < 4e-16, "cos at {theta}");
            assert!((sinc - sinc_libm).abs() < 4e-16, "sinc at {theta}");
        }
        // Beyond a radian, libm's sine and cosine.
        let d = polar_about_x(1.2, 0.0);
        assert_eq!(d, [1.2f64.cos() as f32, 1.2f64.sin() as f32, 0.0]);
    }

    #[test]
    fn line_spread_must_leave_a_field_of_view() {
        let rosette = Rosette {
            fov_deg: [10.0, 10.0],
            lines: 6,
            line_offset_deg: 2.0,
            points_per_second: 1000.0,
            w1_rpm: 100.0,
            w2_rpm: -50.0,
        };
        assert!(matches!(
            rosette.validate(10.0),
            Err(SensorError::Invalid { field, .. }) if field == "pattern.line_offset_deg"
        ));
        let fewer = Rosette {
            lines: 5,
            ..rosette
        };
        assert!(fewer.validate(10.0).is_ok());
        assert_eq!(fewer.line_half_extent_rad()[1], 1f64.to_radians());
    }
}
