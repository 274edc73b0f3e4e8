//! A rendered [`Frame`] and what it turns into: a point cloud (sensor or map frame) and range or depth images laid
//! out the way the sensor's own driver lays them out (rings by columns for spinning LiDARs, pixels for depth
//! cameras, azimuth across and elevation down for Livox).

use aerie_pipeline::{Cloud, Columns};
use nalgebra::{Isometry3, Point3};

use super::params::Method;
use crate::sensor::{Pattern, RingZero, SensorModel};

/// One return of a rendered scan.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct ScanPoint {
    /// Position, metres, in the sensor frame that [`RenderParams::points_in`](super::RenderParams::points_in) names (by default at the frame
    /// start, the motion during the frame compensated).
    pub xyz: [f32; 3],
    /// Measured range along the beam, metres (noise included).
    pub range_m: f32,
    /// Simulated reflectivity R0 * cos(incidence), 0..1.
    pub intensity: f32,
    /// Firing time since the frame start, seconds.
    pub time_s: f32,
    /// The beam's ring: laser of a spinning LiDAR (numbered from the end its `ring_zero` says), line of a Livox,
    /// row of a depth camera ([`Beam::ring`](crate::sensor::Beam::ring)).
    pub ring: u16,
    /// Index of the beam in the scan pattern.
    pub beam: u32,
}

/// A rendered frame. Its conversions to a point cloud and to range and depth images are below.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Frame {
    /// Returns, in beam order.
    pub points: Vec<ScanPoint>,
    /// Number of beams fired (returned or not).
    pub beams: usize,
    /// Start of the frame on the trajectory's clock, seconds.
    pub start_s: f64,
    /// Pose of the sensor in whose frame `points` are given: at the frame start, or at its last firing with
    /// [`PointsIn::FrameEnd`](super::PointsIn::FrameEnd). With [`PointsIn::Firing`](super::PointsIn::Firing) the pose at the frame start, though each point is in
    /// the sensor frame at its own firing.
    pub world_from_sensor: Isometry3<f64>,
    /// The renderer that produced the frame (never `Auto`).
    pub method: Method,
    /// Present when [`RenderParams::debug`](super::RenderParams::debug) is set.
    pub debug: Option<FrameDebug>,
}

/// Per-beam results before noise, dropout and range limits, for analysis.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct FrameDebug {
    /// Geometric range of each beam (index as in the pattern), `None` where the beam hit nothing.
    pub range_m: Vec<Option<f32>>,
    /// Number of time slices (splat renderer) used.
    pub time_slices: u32,
    /// Number of map points rasterised (splat renderer, after culling and level of detail).
    pub points_rasterised: u64,
}

/// A single-channel image, row-major, top row first. Pixels without a return hold 0.
#[derive(Clone, Debug, PartialEq)]
pub struct Image {
    /// Width, pixels (columns).
    pub width: usize,
    /// Height, pixels (rows).
    pub height: usize,
    /// Metres.
    pub data: Vec<f32>,
}

impl Image {
    /// The value at column `x`, row `y` (0 outside).
    pub fn get(&self, x: usize, y: usize) -> f32 {
        if x < self.width {
            self.data.get(y * self.width + x).copied().unwrap_or(0.0)
        } else {
            0.0
        }
    }

    /// Pixels holding a return.
    pub fn filled(&self) -> usize {
        self.data.iter().filter(|v| **v > 0.0).count()
    }
}

impl Frame {
    /// The returns as a cloud with intensity, time (seconds since `time_offset_s` before the frame start, so a
    /// series can share one clock) and ring. Points stay in the sensor frame the frame gives them in
    /// ([`super::RenderParams::points_in`]) unless `in_map_frame`, where they are placed by the frame's pose
    /// (origin at the pose, rounded down to metres, so georeferenced maps keep their precision; for
    /// [`super::PointsIn::Firing`] frames that placement ignores the motion during the frame).
    pub fn to_cloud(&self, time_offset_s: f64, in_map_frame: bool) -> Cloud {
        let mut cloud = Columns::default();
        let pose = &self.world_from_sensor;
        let mut o = [0.0; 3];
        if in_map_frame {
            let t = pose.translation.vector;
            o = [t.x.floor(), t.y.floor(), t.z.floor()];
        }
        cloud.positions = self
            .points
            .iter()
            .map(|p| {
                if !in_map_frame {
                    return p.xyz;
                }
                let w = pose * Point3::new(p.xyz[0] as f64, p.xyz[1] as f64, p.xyz[2] as f64);
                [
                    (w.x - o[0]) as f32,
                    (w.y - o[1]) as f32,
                    (w.z - o[2]) as f32,
                ]
            })
            .collect();
        cloud.intensity = Some(self.points.iter().map(|p| p.intensity).collect());
        cloud.time = Some(
            self.points
                .iter()
                .map(|p| time_offset_s + p.time_s as f64)
                .collect(),
        );
        cloud.ring = Some(self.points.iter().map(|p| p.ring).collect());
        Cloud::from_columns(o, cloud).expect("one value per point in every column")
    }

    /// Range along each beam, as the sensor's native image (see the module doc); the nearest return wins
    /// where two beams share a pixel.
    pub fn range_image(&self, sensor: &SensorModel) -> Image {
        self.image(sensor, |p| p.range_m)
    }

    /// Depth along the sensor's forward axis (x): what a depth camera reports; for LiDARs the same layout
    /// as [`Frame::range_image`].
    pub fn depth_image(&self, sensor: &SensorModel) -> Image {
        self.image(sensor, |p| p.xyz[0].max(0.0))
    }

    fn image(&self, sensor: &SensorModel, value: impl Fn(&super::ScanPoint) -> f32) -> Image {
        let layout = Layout::of(sensor);
        let mut img = Image {
            width: layout.width,
            height: layout.height,
            data: vec![0.0; layout.width * layout.height],
        };
        for p in &self.points {
            let v = value(p);
            if let Some(px) = layout.pixel(p).and_then(|i| img.data.get_mut(i))
                && v > 0.0
                && (*px == 0.0 || v < *px)
            {
                *px = v;
            }
        }
        img
    }
}

/// Where a return lands in a sensor's image.
struct Layout {
    width: usize,
    height: usize,
    kind: LayoutKind,
}

enum LayoutKind {
    /// Pixel = beam index.
    Pixels,
    /// Row = the top-most beam first, column = beam / lasers; `top_first` when ring 0 is the top-most beam.
    Rings { lasers: usize, top_first: bool },
    /// Azimuth/elevation grid over the field of view.
    Angles {
        az_max: f32,
        az_span: f32,
        el_max: f32,
        el_span: f32,
    },
}

impl Layout {
    fn of(sensor: &SensorModel) -> Layout {
        match &sensor.pattern {
            Pattern::Pinhole(p) => Layout {
                width: p.width as usize,
                height: p.height as usize,
                kind: LayoutKind::Pixels,
            },
            Pattern::Spinning(p) => {
                let lasers = p.elevations_deg.len().max(1);
                Layout {
                    width: p.columns as usize,
                    height: lasers,
                    kind: LayoutKind::Rings {
                        lasers,
                        top_first: p.ring_zero == RingZero::Top,
                    },
                }
            }
            _ => {
                let fov = sensor.fov();
                let res = sensor.angular_resolution_rad().max(1e-4);
                let az_span = (fov.azimuth_max_rad - fov.azimuth_min_rad).max(1e-6);
                let el_span = (fov.elevation_max_rad - fov.elevation_min_rad).max(1e-6);
                Layout {
                    width: ((az_span / res).ceil() as usize).clamp(1, 8192),
                    height: ((el_span / res).ceil() as usize).clamp(1, 4096),
                    kind: LayoutKind::Angles {
                        az_max: fov.azimuth_max_rad,
                        az_span,
                        el_max: fov.elevation_max_rad,
                        el_span,
                    },
                }
            }
        }
    }

    fn pixel(&self, p: &super::ScanPoint) -> Option<usize> {
        let (w, h) = (self.width, self.height);
        match self.kind {
            LayoutKind::Pixels => ((p.beam as usize) < w * h).then_some(p.beam as usize),
            LayoutKind::Rings { lasers, top_first } => {
                let (ring, column) = (p.ring as usize, p.beam as usize / lasers);
                let row = if top_first {
                    ring
                } else {
                    h.wrapping_sub(1 + ring)
                };
                (ring < h && column < w).then(|| row * w + column)
            }
            LayoutKind::Angles {
                az_max,
                az_span,
                el_max,
                el_span,
            } => {
                let [x, y, z] = p.xyz;
                let az = y.atan2(x);
                let el = z.atan2(x.hypot(y));
                // Azimuth decreases to the right (looking along +x, +y is left); elevation decreases downward.
                let u = ((az_max - az) / az_span * w as f32).clamp(0.0, w as f32 - 1.0) as usize;
                let v = ((el_max - el) / el_span * h as f32).clamp(0.0, h as f32 - 1.0) as usize;
                Some(v * w + u)
            }
        }
    }
}
