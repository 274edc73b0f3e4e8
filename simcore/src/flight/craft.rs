//! A vehicle in flight: its body, controller and IMU, its timeline and goals, its mounted sensors, the poses its
//! frames still need, its ground truth, and what it has done so far (contacts, take-off, touchdown, counts).

use nalgebra::Isometry3;

use crate::control::Controller;
use crate::mission::{self, GoalMark, Leg};
use crate::record::TrackSample;
use crate::sensor::PointFields;
use crate::simulator::SensorId;
use crate::vehicle::{Imu, Quadrotor};

/// A sensor mounted on a vehicle: its id in the simulator, where its messages are recorded, and its next frame.
pub(super) struct Sensor {
    pub(super) id: SensorId,
    pub(super) topic: String,
    pub(super) frame_id: String,
    pub(super) point_fields: PointFields,
    pub(super) period: f64,
    pub(super) next_start: f64,
    pub(super) frame_index: u64,
}

/// A vehicle in flight and its state beyond the body's.
pub(super) struct Craft {
    pub(super) name: String,
    /// `<name>/base_link`, the body's frame id (made once: the loop must not allocate every step).
    pub(super) base_frame: String,
    pub(super) quad: Quadrotor,
    pub(super) controller: Box<dyn Controller>,
    pub(super) imu: Imu,
    pub(super) next_imu: f64,
    pub(super) imu_samples: u64,
    pub(super) legs: Vec<Leg>,
    /// The goals, in mission order, and how many have been reached (they are reached in order).
    pub(super) goals: Vec<GoalMark>,
    pub(super) goals_reached: usize,
    pub(super) sensors: Vec<Sensor>,
    /// Body poses since the oldest frame still being collected.
    pub(super) history: Vec<(f64, Isometry3<f64>)>,
    /// Ground truth at the odometry rate, for the TUM file and the summary.
    pub(super) track: Vec<TrackSample>,
    pub(super) motors_off: bool,
    pub(super) touching: bool,
    /// Off the ground (a take-off has been reported).
    pub(super) airborne: bool,
    /// A touchdown at its landing has been reported.
    pub(super) touched_down: bool,
    /// The contact going on is with the ground under it during a landing (not a collision).
    pub(super) ground_contact: bool,
    /// Vertical velocity before the last physics step, m/s (a touchdown's speed, before the ground stops it).
    pub(super) vz_before_step: f64,
    pub(super) collisions: u32,
    pub(super) frames: u64,
    pub(super) points: u64,
}

impl Craft {
    pub(super) fn new(
        name: &str,
        quad: Quadrotor,
        controller: Box<dyn Controller>,
        imu: Imu,
        (timeline, sensors): (mission::Timeline, Vec<Sensor>),
    ) -> Craft {
        Craft {
            name: name.to_string(),
            base_frame: format!("{name}/base_link"),
            quad,
            controller,
            next_imu: imu.period_s(),
            imu,
            imu_samples: 0,
            legs: timeline.legs,
            goals: timeline.goals,
            goals_reached: 0,
            sensors,
            history: Vec::new(),
            track: Vec::new(),
            motors_off: false,
            touching: false,
            airborne: false,
            touched_down: false,
            ground_contact: false,
            vz_before_step: 0.0,
            collisions: 0,
            frames: 0,
            points: 0,
        }
    }
}
