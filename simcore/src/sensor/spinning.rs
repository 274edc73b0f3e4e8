//! Spinning LiDARs (Velodyne, Ouster): a rotating head with a column of lasers, one column of firings per azimuth
//! step, every laser at its calibrated elevation (and optional azimuth offset).

use serde::{Deserialize, Serialize};

use super::{Beam, Fov, MAX_BEAMS_PER_FRAME, SensorError, check_finite, check_range};

/// A spinning LiDAR's pattern. The azimuth of a firing follows the rotation: `start_azimuth_deg` at time 0, then
/// one full turn per frame in the direction given by `clockwise`, plus the laser's azimuth offset. So a Velodyne
/// firing, whose time is its column's cycle plus its laser's firing slot, lands slightly past its column's azimuth,
/// as the Velodyne manuals say to interpolate.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Spinning {
    /// Columns (firing cycles) per frame. Ouster: the lidar mode's horizontal resolution (512, 1024, 2048, 4096).
    /// Velodyne: firing cycles per revolution, at most `1 / (rate_hz * cycle_us)` (VLP-16 at 10 Hz: 1808).
    pub columns: u32,
    /// Azimuth of the first column, degrees, counter-clockwise from +x. By default 180: frames start and end
    /// behind the sensor, as Ouster's sensor frame does and as Velodyne drivers cut by default.
    #[serde(default = "default_start_azimuth")]
    pub start_azimuth_deg: f32,
    /// Whether the head turns clockwise seen from above (azimuth decreasing with time). By default true: Velodyne
    /// and Ouster heads both turn clockwise.
    #[serde(default = "default_clockwise")]
    pub clockwise: bool,
    /// Ouster "lidar origin to beam origin" distance, millimetres: each beam starts this far from the rotation
    /// axis, in the direction of its column's azimuth. By default 0.
    #[serde(default)]
    pub beam_origin_offset_mm: f32,
    /// Height of the lidar origin (where elevations are measured from) above the origin of the frame the points
    /// are given in, millimetres. By default 0: points from the optical centre, as the generic presets give them
    /// (ray-casting consumers take the frame origin for the rays' origin). 36.18 gives Ouster's sensor frame
    /// (`os_sensor`, its lidar-to-sensor transform on OS0 and OS1), as `os0_64_hall` does.
    #[serde(default)]
    pub lidar_origin_z_mm: f32,
    /// Elevation of each laser, degrees, in the vendor's laser-id (packet) order. Rings are assigned by sorted
    /// elevation (see `ring_zero`), so interleaved Velodyne tables can be pasted as they are.
    pub elevations_deg: Vec<f32>,
    /// Which beam the vendor's driver numbers ring 0: `bottom` (Velodyne's driver: rings by elevation, lowest
    /// first) or `top` (Ouster's: the ring is the row of its range image, top-most beam first). By default
    /// `bottom`.
    #[serde(default)]
    pub ring_zero: RingZero,
    /// Azimuth offset of each laser (same order), degrees, counter-clockwise positive. Empty means none.
    /// Vendors publish them clockwise (Velodyne's rotational correction, Ouster's `beam_azimuth_angles`): negate
    /// those values.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub azimuth_offsets_deg: Vec<f32>,
    /// When each laser fires within its column.
    pub firing: FiringTiming,
}

/// Where a spinning LiDAR's driver starts numbering its rings.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RingZero {
    /// Ring 0 is the lowest beam (Velodyne).
    #[default]
    Bottom,
    /// Ring 0 is the top-most beam (Ouster).
    Top,
}

/// When the lasers of one column fire.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case", deny_unknown_fields)]
pub enum FiringTiming {
    /// Every laser of a column shares the column's time, `column / (columns * rate_hz)` (Ouster). A struct
    /// variant with no fields, so that a stray key under it is refused rather than ignored.
    Column {},
    /// Lasers fire one group after another (Velodyne): laser `id` fires at
    /// `column * cycle_us + slot(id) * step_us`, where `slot(id)` is `slots[id]` when `slots` is given and
    /// `id / group_size` otherwise. VLP-16: cycle 55.296, step 2.304, group 1. VLP-32C: pairs, group 2.
    /// HDL-32E: cycle 46.08, step 1.152.
    Sequential {
        /// Time from one column's first firing to the next column's, microseconds.
        cycle_us: f32,
        /// Time between consecutive firing slots, microseconds.
        step_us: f32,
        /// Lasers firing together in one slot, consecutive ids (by default 1).
        #[serde(default = "default_group_size")]
        group_size: u32,
        /// Explicit firing slot per laser id; overrides `group_size` (e.g. HDL-64E's upper and lower blocks
        /// firing in step).
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        slots: Vec<u32>,
    },
}

fn default_start_azimuth() -> f32 {
    180.0
}

fn default_clockwise() -> bool {
    true
}

fn default_group_size() -> u32 {
    1
}

impl Spinning {
    /// Ring of each laser id: its rank by elevation, from the bottom or the top as `ring_zero` says (ties keep
    /// id order from the bottom).
    pub fn rings(&self) -> Vec<u16> {
        let mut ids: Vec<usize> = (0..self.elevations_deg.len()).collect();
        ids.sort_by(|&a, &b| {
            let ea = self.elevations_deg.get(a).copied().unwrap_or(0.0);
            let eb = self.elevations_deg.get(b).copied().unwrap_or(0.0);
            ea.total_cmp(&eb).then(a.cmp(&b))
        });
        if self.ring_zero == RingZero::Top {
            ids.reverse();
        }
        let mut rings = vec![0u16; ids.len()];
        for (rank, id) in ids.into_iter().enumerate() {
            if let Some(ring) = rings.get_mut(id) {
                *ring = u16::try_from(rank).unwrap_or(u16::MAX);
            }
        }
        rings
    }

    /// Firing slot of laser `id` within its column (0 for column timing).
    fn slot(&self, id: usize) -> u32 {
        match &self.firing {
            FiringTiming::Column {} => 0,
            FiringTiming::Sequential {
                group_size, slots, ..
            } => match slots.get(id) {
                Some(&slot) => slot,
                None => u32::try_from(id).unwrap_or(u32::MAX) / (*group_size).max(1),
            },
        }
    }

    /// Start time of a column, seconds since the frame start.
    fn column_time_s(&self, column: u32, rate_hz: f64) -> f64 {
        match &self.firing {
            FiringTiming::Column {} => f64::from(column) / (f64::from(self.columns) * rate_hz),
            FiringTiming::Sequential { cycle_us, .. } => {
                f64::from(column) * f64::from(*cycle_us) * 1e-6
            }
        }
    }

    fn slot_time_s(&self, slot: u32) -> f64 {
        match &self.firing {
            FiringTiming::Column {} => 0.0,
            FiringTiming::Sequential { step_us, .. } => {
                f64::from(slot) * f64::from(*step_us) * 1e-6
            }
        }
    }

    pub(crate) fn validate(&self, rate_hz: f64) -> Result<(), SensorError> {
        let lasers = self.validate_lasers()?;
        self.validate_columns(lasers)?;
        self.validate_origins()?;
        if let FiringTiming::Sequential {
            cycle_us,
            step_us,
            group_size,
            slots,
        } = &self.firing
        {
            self.validate_firing((*cycle_us, *step_us, *group_size), slots, lasers, rate_hz)?;
        }
        Ok(())
    }

    /// The lasers' elevations and azimuth offsets; returns their number.
    fn validate_lasers(&self) -> Result<usize, SensorError> {
        let lasers = self.elevations_deg.len();
        if lasers == 0 || lasers > usize::from(u16::MAX) + 1 {
            return Err(SensorError::invalid(
                "pattern.elevations_deg",
                format!("needs 1 to 65536 lasers, got {lasers}"),
            ));
        }
        for (i, &e) in self.elevations_deg.iter().enumerate() {
            check_range(&format!("pattern.elevations_deg[{i}]"), e, -90.0, 90.0)?;
        }
        if !self.azimuth_offsets_deg.is_empty() && self.azimuth_offsets_deg.len() != lasers {
            return Err(SensorError::invalid(
                "pattern.azimuth_offsets_deg",
                format!(
                    "needs one value per laser ({lasers}) or none, got {}",
                    self.azimuth_offsets_deg.len()
                ),
            ));
        }
        for (i, &a) in self.azimuth_offsets_deg.iter().enumerate() {
            check_range(
                &format!("pattern.azimuth_offsets_deg[{i}]"),
                a,
                -180.0,
                180.0,
            )?;
        }
        Ok(lasers)
    }

    /// At least one column, and not more beams per frame than a frame may hold.
    fn validate_columns(&self, lasers: usize) -> Result<(), SensorError> {
        if self.columns == 0 {
            return Err(SensorError::invalid(
                "pattern.columns",
                "must be at least 1, got 0",
            ));
        }
        let beams = self.beams_per_frame();
        if beams > MAX_BEAMS_PER_FRAME {
            return Err(SensorError::invalid(
                "pattern.columns",
                format!(
                    "{lasers} lasers x {} columns = {beams} beams per frame, more than the {MAX_BEAMS_PER_FRAME} \
                     allowed",
                    self.columns
                ),
            ));
        }
        Ok(())
    }

    /// The start azimuth and where the beams start from the sensor's origin.
    fn validate_origins(&self) -> Result<(), SensorError> {
        check_finite("pattern.start_azimuth_deg", self.start_azimuth_deg)?;
        check_range(
            "pattern.beam_origin_offset_mm",
            self.beam_origin_offset_mm,
            0.0,
            1000.0,
        )?;
        check_range(
            "pattern.lidar_origin_z_mm",
            self.lidar_origin_z_mm,
            -1000.0,
            1000.0,
        )?;
        Ok(())
    }

    /// A sequential firing order: its cycle, step and groups, one slot per laser, and every firing of a frame
    /// before the next frame starts.
    fn validate_firing(
        &self,
        (cycle_us, step_us, group_size): (f32, f32, u32),
        slots: &[u32],
        lasers: usize,
        rate_hz: f64,
    ) -> Result<(), SensorError> {
        if !(cycle_us.is_finite() && cycle_us > 0.0) {
            return Err(SensorError::invalid(
                "pattern.firing.cycle_us",
                format!("must be a positive number of microseconds, got {cycle_us}"),
            ));
        }
        if !(step_us.is_finite() && step_us >= 0.0) {
            return Err(SensorError::invalid(
                "pattern.firing.step_us",
                format!("must be zero or positive, got {step_us}"),
            ));
        }
        if group_size == 0 {
            return Err(SensorError::invalid(
                "pattern.firing.group_size",
                "must be at least 1, got 0",
            ));
        }
        if !slots.is_empty() && slots.len() != lasers {
            return Err(SensorError::invalid(
                "pattern.firing.slots",
                format!(
                    "needs one slot per laser ({lasers}) or none, got {}",
                    slots.len()
                ),
            ));
        }
        let last_slot = (0..lasers).map(|id| self.slot(id)).max().unwrap_or(0);
        if f64::from(last_slot) * f64::from(step_us) >= f64::from(cycle_us) {
            return Err(SensorError::invalid(
                "pattern.firing.step_us",
                format!(
                    "the last firing slot ({last_slot}) x step_us ({step_us}) must fall within cycle_us ({cycle_us})"
                ),
            ));
        }
        // Every firing of the frame must happen before the next frame starts.
        let needed_s = f64::from(self.columns) * f64::from(cycle_us) * 1e-6;
        let period_s = 1.0 / rate_hz;
        if needed_s > period_s * (1.0 + 1e-9) {
            let most = (period_s / (f64::from(cycle_us) * 1e-6)).floor();
            return Err(SensorError::invalid(
                "pattern.columns",
                format!(
                    "{} columns of {cycle_us} us take {:.6} s, longer than the frame period {:.6} s at \
                     rate_hz {rate_hz}; use at most {most} columns",
                    self.columns, needed_s, period_s
                ),
            ));
        }
        Ok(())
    }

    pub(crate) fn beams_per_frame(&self) -> usize {
        self.elevations_deg
            .len()
            .saturating_mul(self.columns as usize)
    }

    pub(crate) fn generate(&self, rate_hz: f64, out: &mut Vec<Beam>) {
        let rings = self.rings();
        // Firing order within a column: by slot, then by laser id.
        let mut order: Vec<usize> = (0..self.elevations_deg.len()).collect();
        order.sort_by_key(|&id| (self.slot(id), id));
        let lasers: Vec<Laser> = order
            .into_iter()
            .map(|id| {
                let elevation =
                    f64::from(self.elevations_deg.get(id).copied().unwrap_or(0.0)).to_radians();
                Laser {
                    cos_el: elevation.cos(),
                    sin_el: elevation.sin(),
                    azimuth_offset: f64::from(
                        self.azimuth_offsets_deg.get(id).copied().unwrap_or(0.0),
                    )
                    .to_radians(),
                    slot_time_s: self.slot_time_s(self.slot(id)),
                    ring: rings.get(id).copied().unwrap_or(0),
                }
            })
            .collect();
        let turn = if self.clockwise { -1.0 } else { 1.0 } * std::f64::consts::TAU * rate_hz;
        let start = f64::from(self.start_azimuth_deg).to_radians();
        for column in 0..self.columns {
            let column_time = self.column_time_s(column, rate_hz);
            for laser in &lasers {
                let time = column_time + laser.slot_time_s;
                let azimuth = start + turn * time + laser.azimuth_offset;
                let (sin_az, cos_az) = azimuth.sin_cos();
                out.push(Beam {
                    dir: unit([laser.cos_el * cos_az, laser.cos_el * sin_az, laser.sin_el]),
                    time_s: time as f32,
                    ring: laser.ring,
                });
            }
        }
    }

    pub(crate) fn fov(&self) -> Fov {
        let (lo, hi) = self
            .elevations_deg
            .iter()
            .fold((f32::INFINITY, f32::NEG_INFINITY), |(lo, hi), &e| {
                (lo.min(e), hi.max(e))
            });
        Fov {
            azimuth_min_rad: -std::f32::consts::PI,
            azimuth_max_rad: std::f32::consts::PI,
            elevation_min_rad: lo.to_radians(),
            elevation_max_rad: hi.to_radians(),
        }
    }

    /// The finer of the azimuth step and the median elevation gap between neighbouring rings.
    pub(crate) fn angular_resolution_rad(&self) -> f32 {
        let azimuth_step = std::f32::consts::TAU / self.columns.max(1) as f32;
        let mut elevations = self.elevations_deg.clone();
        elevations.sort_by(f32::total_cmp);
        let mut gaps: Vec<f32> = elevations
            .windows(2)
            .filter_map(|w| match w {
                [a, b] if b > a => Some((b - a).to_radians()),
                _ => None,
            })
            .collect();
        gaps.sort_by(f32::total_cmp);
        match gaps.get(gaps.len() / 2) {
            Some(&median) => azimuth_step.min(median),
            None => azimuth_step,
        }
    }

    /// Where each beam starts in the sensor frame, metres: the lidar origin, plus the beam-origin offset along the
    /// beam's column azimuth (its direction's azimuth less its laser's azimuth offset).
    pub(crate) fn beam_origins_m(&self, beams: &[Beam], out: &mut Vec<[f32; 3]>) {
        let z = self.lidar_origin_z_mm * 1e-3;
        let n = self.beam_origin_offset_mm * 1e-3;
        let mut offset_of_ring = vec![0.0f32; self.elevations_deg.len()];
        for (id, ring) in self.rings().into_iter().enumerate() {
            if let (Some(slot), Some(offset)) = (
                offset_of_ring.get_mut(usize::from(ring)),
                self.azimuth_offsets_deg.get(id),
            ) {
                *slot = offset.to_radians();
            }
        }
        out.extend(beams.iter().map(|beam| {
            if n == 0.0 {
                return [0.0, 0.0, z];
            }
            let offset = offset_of_ring
                .get(usize::from(beam.ring))
                .copied()
                .unwrap_or(0.0);
            let azimuth = beam.dir[1].atan2(beam.dir[0]) - offset;
            [n * azimuth.cos(), n * azimuth.sin(), z]
        }));
    }
}

struct Laser {
    cos_el: f64,
    sin_el: f64,
    azimuth_offset: f64,
    slot_time_s: f64,
    ring: u16,
}

/// Normalises in f64 and rounds to f32, so directions are unit length to f32 precision.
pub(crate) fn unit(v: [f64; 3]) -> [f32; 3] {
    let norm = (v[0] * v[0] + v[1] * v[1] + v[2] * v[2]).sqrt();
    if norm > 0.0 {
        [
            (v[0] / norm) as f32,
            (v[1] / norm) as f32,
            (v[2] / norm) as f32,
        ]
    } else {
        [1.0, 0.0, 0.0]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spinning(elevations: &[f32], firing: FiringTiming) -> Spinning {
        Spinning {
            columns: 4,
            start_azimuth_deg: 0.0,
            clockwise: false,
            beam_origin_offset_mm: 0.0,
            lidar_origin_z_mm: 0.0,
            elevations_deg: elevations.to_vec(),
            ring_zero: RingZero::Bottom,
            azimuth_offsets_deg: Vec::new(),
            firing,
        }
    }

    fn sequential(group_size: u32, slots: Vec<u32>) -> FiringTiming {
        FiringTiming::Sequential {
            cycle_us: 10.0,
            step_us: 1.0,
            group_size,
            slots,
        }
    }

    #[test]
    fn rings_rank_by_elevation_with_ties_in_id_order() {
        let s = spinning(&[3.0, -1.0, 3.0, -5.0], FiringTiming::Column {});
        assert_eq!(s.rings(), vec![2, 1, 3, 0]);
    }

    #[test]
    fn slots_follow_group_size_unless_listed() {
        let s = spinning(&[0.0; 4], sequential(2, Vec::new()));
        assert_eq!(
            (0..4).map(|id| s.slot(id)).collect::<Vec<_>>(),
            [0, 0, 1, 1]
        );
        let s = spinning(&[0.0; 4], sequential(1, vec![0, 1, 0, 1]));
        assert_eq!(
            (0..4).map(|id| s.slot(id)).collect::<Vec<_>>(),
            [0, 1, 0, 1]
        );
        assert_eq!(spinning(&[0.0; 4], FiringTiming::Column {}).slot(3), 0);
    }

    #[test]
    fn validation_table() {
        let ok = spinning(&[0.0, 1.0], sequential(1, Vec::new()));
        assert!(ok.validate(10.0).is_ok());
        let cases: [(Spinning, &str); 6] = [
            (
                spinning(&[], FiringTiming::Column {}),
                "pattern.elevations_deg",
            ),
            (
                Spinning {
                    azimuth_offsets_deg: vec![1.0],
                    ..ok.clone()
                },
                "pattern.azimuth_offsets_deg",
            ),
            (
                spinning(&[0.0, 1.0], sequential(1, vec![0])),
                "pattern.firing.slots",
            ),
            (
                spinning(&[0.0, 1.0], sequential(0, Vec::new())),
                "pattern.firing.group_size",
            ),
            (
                Spinning {
                    columns: 10_001,
                    ..ok.clone()
                },
                "pattern.columns",
            ),
            // A frame too large to allocate: 64 x 2^21 beams, with column timing (no firing-period bound).
            (
                Spinning {
                    columns: 1 << 21,
                    ..spinning(&[0.0; 64], FiringTiming::Column {})
                },
                "pattern.columns",
            ),
        ];
        for (model, field) in cases {
            match model.validate(10.0) {
                Err(SensorError::Invalid { field: got, .. }) => assert_eq!(got, field),
                other => panic!("{field}: {other:?}"),
            }
        }
    }

    #[test]
    fn counter_clockwise_columns_step_forward() {
        let s = spinning(&[0.0], FiringTiming::Column {});
        let mut beams = Vec::new();
        s.generate(10.0, &mut beams);
        let expected = [[1.0, 0.0], [0.0, 1.0], [-1.0, 0.0], [0.0, -1.0]];
        assert_eq!(beams.len(), 4);
        for (beam, [x, y]) in beams.iter().zip(expected) {
            assert!(
                (beam.dir[0] - x).abs() < 1e-6 && (beam.dir[1] - y).abs() < 1e-6,
                "{beam:?}"
            );
        }
        assert!((s.angular_resolution_rad() - std::f32::consts::FRAC_PI_2).abs() < 1e-6);
    }
}
