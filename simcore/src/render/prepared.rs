//! What a renderer keeps from the scan pattern alone ([`Prepared`]): the beams' angles, their firing order, the
//! pattern's angular window ([`Fov`]) and the splat renderer's pixel size.

use rayon::prelude::*;

use super::params::RenderParams;
use super::vec3::unit;
use crate::sensor::Beam;

/// An angular window of the sensor frame: azimuth centre and width, elevation bounds (radians).
#[derive(Clone, Copy, Debug, PartialEq)]
pub(super) struct Fov {
    pub full_circle: bool,
    pub az_centre: f32,
    pub az_width: f32,
    pub el_min: f32,
    pub el_max: f32,
}

impl Fov {
    pub fn width_rad(&self) -> f32 {
        if self.full_circle {
            std::f32::consts::TAU
        } else {
            self.az_width
        }
    }

    /// The window covering directions with the given azimuths/elevations, widened by `margin` radians.
    pub fn of(az_el: impl Iterator<Item = (f32, f32)>, margin: f32) -> Fov {
        const BINS: usize = 720;
        let mut occupied = [false; BINS];
        let (mut el_min, mut el_max) = (f32::INFINITY, f32::NEG_INFINITY);
        let mut any = false;
        for (az, el) in az_el {
            any = true;
            let b = (((az + std::f32::consts::PI) / std::f32::consts::TAU) * BINS as f32) as usize;
            if let Some(slot) = occupied.get_mut(b.min(BINS - 1)) {
                *slot = true;
            }
            el_min = el_min.min(el);
            el_max = el_max.max(el);
        }
        if !any {
            return Fov {
                full_circle: false,
                az_centre: 0.0,
                az_width: 0.0,
                el_min: 0.0,
                el_max: 0.0,
            };
        }
        // Largest circular run of empty bins: the azimuths outside the window.
        let (mut best_len, mut best_end) = (0usize, 0usize);
        let mut run = 0usize;
        for i in 0..2 * BINS {
            if occupied[i % BINS] {
                run = 0;
            } else {
                run += 1;
                if run > best_len && run <= BINS {
                    best_len = run;
                    best_end = i % BINS;
                }
            }
        }
        let bin = std::f32::consts::TAU / BINS as f32;
        let half_pi = std::f32::consts::FRAC_PI_2;
        let el_min = (el_min - margin).max(-half_pi);
        let el_max = (el_max + margin).min(half_pi);
        let gap = best_len as f32 * bin;
        let width = std::f32::consts::TAU - gap + 2.0 * margin;
        // Small gaps are not worth a partial image; polar windows need the full circle too.
        if gap < 20f32.to_radians()
            || width >= std::f32::consts::TAU * 0.95
            || el_max > 1.4
            || el_min < -1.4
        {
            return Fov {
                full_circle: true,
                az_centre: 0.0,
                az_width: std::f32::consts::TAU,
                el_min,
                el_max,
            };
        }
        // The window starts right after the gap.
        let start = -std::f32::consts::PI + (best_end + 1) as f32 * bin - margin;
        Fov {
            full_circle: false,
            az_centre: wrap_pi(start + 0.5 * width),
            az_width: width,
            el_min,
            el_max,
        }
    }
}

/// Angle wrapped to [-pi, pi).
#[inline]
pub(super) fn wrap_pi(a: f32) -> f32 {
    let tau = std::f32::consts::TAU;
    let w = (a + std::f32::consts::PI).rem_euclid(tau) - std::f32::consts::PI;
    if w >= std::f32::consts::PI {
        w - tau
    } else {
        w
    }
}

/// What depends only on the pattern: beam angles, beams sorted by time, the whole pattern's window, pixel size.
pub(super) struct Prepared {
    /// (azimuth, elevation) of each beam's nominal direction in the sensor frame.
    pub az_el: Vec<(f32, f32)>,
    /// Beam indices sorted by (time, index).
    pub by_time: Vec<u32>,
    pub fov_all: Fov,
    pub pixel_rad: f32,
}

impl Prepared {
    pub(super) fn new(beams: &[Beam], params: &RenderParams) -> Prepared {
        let az_el: Vec<(f32, f32)> = beams
            .par_iter()
            .map(|b| {
                let [x, y, z] = unit(b.dir);
                (y.atan2(x), z.clamp(-1.0, 1.0).asin())
            })
            .collect();
        let mut by_time: Vec<u32> = (0..beams.len() as u32).collect();
        by_time.sort_by(|&a, &b| {
            let ta = beams.get(a as usize).map_or(0.0, |x| x.time_s);
            let tb = beams.get(b as usize).map_or(0.0, |x| x.time_s);
            ta.total_cmp(&tb).then(a.cmp(&b))
        });
        let fov_all = Fov::of(az_el.iter().copied(), 0.0);
        let area = (fov_all.width_rad() * (fov_all.el_max - fov_all.el_min).max(1e-3)).max(1e-6);
        let spacing = (area / beams.len().max(1) as f32).sqrt();
        let pixel_rad = params
            .pixel_rad
            .filter(|p| p.is_finite() && *p > 0.0)
            .unwrap_or(0.5 * spacing)
            .clamp(2e-4, 0.1);
        Prepared {
            az_el,
            by_time,
            fov_all,
            pixel_rad,
        }
    }

    /// Nothing prepared (the beam renderer needs none of it).
    pub(super) fn empty() -> Prepared {
        Prepared {
            az_el: Vec::new(),
            by_time: Vec::new(),
            fov_all: Fov::of(std::iter::empty(), 0.0),
            pixel_rad: 0.0,
        }
    }

    pub(super) fn n_beams(&self) -> usize {
        self.az_el.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fov_of_partial_and_full_patterns() {
        // A 70 deg wide window centred at 0.
        let dirs: Vec<(f32, f32)> = (0..100)
            .map(|i| ((-35.0 + 0.7 * i as f32).to_radians(), 0.1))
            .collect();
        let f = Fov::of(dirs.iter().copied(), 0.0);
        assert!(!f.full_circle);
        assert!(f.az_centre.abs() < 0.02, "{f:?}");
        assert!((f.az_width - 70f32.to_radians()).abs() < 0.03, "{f:?}");
        // A window straddling +-180 deg.
        let dirs: Vec<(f32, f32)> = (0..100)
            .map(|i| (wrap_pi((145.0 + 0.7 * i as f32).to_radians()), 0.0))
            .collect();
        let f = Fov::of(dirs.iter().copied(), 0.0);
        assert!(!f.full_circle);
        assert!(
            (wrap_pi(f.az_centre - 180f32.to_radians())).abs() < 0.02,
            "{f:?}"
        );
        // Spinning: full circle.
        let dirs: Vec<(f32, f32)> = (0..1024)
            .map(|i| (wrap_pi(i as f32 * std::f32::consts::TAU / 1024.0), 0.0))
            .collect();
        assert!(Fov::of(dirs.iter().copied(), 0.0).full_circle);
    }
}
