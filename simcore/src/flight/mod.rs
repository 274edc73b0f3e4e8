//! The flight loop: vehicles flying missions in a map, their LiDARs rendered through the [`Simulator`], every
//! message recorded. One fixed physics step (1 kHz, RK4) drives everything; the controller runs every step,
//! each IMU at its own rate, odometry at 100 Hz, each sensor once per frame. A LiDAR frame is rendered when
//! its period has passed, from the poses the body actually took during it (motion distortion, per-beam time),
//! with the obstacles and the other vehicles as occluders. Deterministic for a seed.
//!
//! [`Flight`] here is the loop's public face: set up, record, run, read. Beside it: `setup.rs` turns a mission
//! into vehicles, sensors and timelines; `craft.rs` is a vehicle's state in flight; `step.rs` is one physics
//! step and what happens in it; [`events`] is what happened; [`outputs`] writes the data files of a flight.

// `!(a <= b)` is deliberate: a NaN must fail the test it is in.
#![allow(clippy::neg_cmp_op_on_partial_ord)]

mod craft;
pub mod events;
pub mod outputs;
mod setup;
mod step;

use std::path::Path;
use std::sync::Arc;

use nalgebra::{Isometry3, Vector3};
use serde::Serialize;

use crate::control::{Cascaded, CascadedParams};
use crate::mission::{self, Grid, Mission, PlanError};
use crate::record::{RecordError, RecordOptions, Recorder, TrackSample, ros2};
use crate::render::{BeamIndex, Frame};
use crate::simulator::{Map, SimError, Simulator};
use crate::vehicle::{Imu, QuadState, VehicleError};
use crate::world::{CollisionEvent, Obstacles, World};
use craft::Craft;
use setup::{
    GridPlanner, bounds, check_near_map, landing_end, mission_positions, mount_sensors,
    quad_at_start, vehicle_params,
};

pub use events::FlightEvent;

/// Physics and control rate, Hz: the rate the vehicles are stepped at ([`crate::vehicle::PHYSICS_HZ`]).
pub use crate::vehicle::PHYSICS_HZ;
/// Ground-truth odometry and /tf rate, Hz.
pub const ODOM_HZ: f64 = 100.0;

/// Errors of setting up or running a flight.
#[derive(Debug, thiserror::Error)]
pub enum FlightError {
    /// A vehicle's preset or file cannot be loaded.
    #[error("vehicle {vehicle}: {source}")]
    Vehicle {
        /// The vehicle's name in the mission.
        vehicle: String,
        /// What is wrong with its description.
        source: VehicleError,
    },
    /// A sensor's preset or file cannot be loaded, or the simulator refuses to mount it.
    #[error("vehicle {vehicle}, sensor {sensor}: {message}")]
    Sensor {
        /// The vehicle's name in the mission.
        vehicle: String,
        /// The sensor's name in the mission.
        sensor: String,
        /// What is wrong.
        message: String,
    },
    /// A goal of a vehicle has no path (planned when the flight is set up).
    #[error("vehicle {vehicle}: {source}")]
    Plan {
        /// The vehicle's name in the mission.
        vehicle: String,
        /// Why the planner found no path.
        source: PlanError,
    },
    /// A vehicle's start or goal lies far outside the map: most likely given in another frame.
    #[error("vehicle {vehicle}: {message}")]
    FarFromMap {
        /// The vehicle's name in the mission.
        vehicle: String,
        /// Which position, where, and the map's bounds.
        message: String,
    },
    /// Writing the recording failed.
    #[error(transparent)]
    Record(#[from] RecordError),
    /// A LiDAR frame could not be rendered: a vehicle's pose stopped being finite (its physics diverged).
    #[error("{0}")]
    Frame(#[from] SimError),
}

impl FlightError {
    /// True when the mission or the user's output path is the cause rather than the machine (the CLI exits 2).
    pub fn is_bad_input(&self) -> bool {
        match self {
            FlightError::Record(e) => e.is_bad_input(),
            FlightError::Vehicle { .. }
            | FlightError::Sensor { .. }
            | FlightError::Plan { .. }
            | FlightError::FarFromMap { .. } => true,
            // The mission's numbers drove the vehicle there (a controller gain, a mass of 0).
            FlightError::Frame(e) => e.is_bad_input(),
        }
    }
}
/// What a vehicle did, for summary.json.
#[derive(Clone, Debug, Serialize)]
pub struct VehicleSummary {
    /// The vehicle's name in the mission.
    pub name: String,
    /// Length of the flown path, metres (the ground truth at the odometry rate, [`ODOM_HZ`]).
    pub path_length_m: f64,
    /// Highest speed of the ground truth, m/s.
    pub max_speed_m_s: f64,
    /// Collisions: times it came to touch the map or an obstacle (a lasting contact counts once).
    pub collisions: u32,
    /// LiDAR frames rendered, all its sensors.
    pub lidar_frames: u64,
    /// Points in those frames.
    pub lidar_points: u64,
    /// Whether it reached every goal ([`FlightEvent::GoalReached`]).
    pub goals_done: bool,
    /// Goals reached, of `goals`.
    pub goals_reached: usize,
    /// Goals in its mission.
    pub goals: usize,
    /// Where the body centre is now, map frame, metres.
    pub final_position: [f64; 3],
}

/// A flight being simulated.
pub struct Flight {
    sim: Simulator,
    world: World,
    crafts: Vec<Craft>,
    step: u64,
    recorder: Option<Recorder>,
    events: Vec<FlightEvent>,
    stop_on_collision: bool,
    end_s: f64,
    /// Whether the mission gave the duration (then the flight runs to `end_s` even after every vehicle landed).
    fixed_duration: bool,
    stopped: bool,
    /// The mission ends have been reported.
    ended: bool,
    /// Wall time spent rendering LiDAR frames so far, seconds (for benchmarks; never affects the output).
    render_s: f64,
}

impl Flight {
    /// Sets up `mission` in `map`; sensor and vehicle files are looked up relative to `base` (the mission's
    /// folder). Plans every goal now, so a goal without a path fails here, naming it.
    pub fn new(map: Map, mission: &Mission, base: &Path) -> Result<Flight, FlightError> {
        let mut sim = Simulator::new(map);
        let view = sim.map();
        let (lo, hi) = bounds(&view);
        let obstacles = Obstacles::new(&mission.obstacles, lo, hi, mission.seed);
        let mut world = World::new(&view, obstacles);
        let voxel = mission
            .planner_voxel_m
            .unwrap_or((view.resolution as f64).max(0.2));
        let mut grid: Option<(f64, Grid)> = None;
        let positions: Vec<Vector3<f64>> = mission
            .vehicles
            .iter()
            .flat_map(|v| mission_positions(v).into_iter().map(|(_, p)| p))
            .collect();
        let mut crafts = Vec::new();
        for (vi, v) in mission.vehicles.iter().enumerate() {
            check_near_map(v, lo, hi)?;
            let params = vehicle_params(v, base)?;
            let mut planner = GridPlanner {
                sim: &sim,
                within: &positions,
                voxel,
                clearance: params.radius_m + 0.1,
                grid: &mut grid,
            };
            let timeline =
                mission::timeline(v, &mut planner).map_err(|source| FlightError::Plan {
                    vehicle: v.name.clone(),
                    source,
                })?;
            let quad = quad_at_start(&mut world, &params, v);
            let controller = Box::new(Cascaded::new(&params, CascadedParams::default()));
            let imu = Imu::new(params.imu.clone(), mission.seed, vi as u64);
            let sensors = mount_sensors(&mut sim, (vi, v), mission.seed, base)?;
            crafts.push(Craft::new(
                &v.name,
                quad,
                controller,
                imu,
                (timeline, sensors),
            ));
        }
        let mut events = Vec::new();
        for c in &mut crafts {
            if !c.quad.grounded() {
                c.airborne = true;
                events.push(FlightEvent::Takeoff {
                    time_s: 0.0,
                    vehicle: c.name.clone(),
                    position: c.quad.state().position.into(),
                    from_ground: false,
                });
            }
        }
        let end_s = mission.duration_s.unwrap_or_else(|| {
            crafts
                .iter()
                .map(|c| {
                    mission::timeline_end(&c.legs).unwrap_or_else(|| landing_end(&c.legs)) + 2.0
                })
                .fold(0.0, f64::max)
        });
        Ok(Flight {
            sim,
            world,
            crafts,
            step: 0,
            recorder: None,
            events,
            stop_on_collision: mission.stop_on_collision,
            end_s,
            fixed_duration: mission.duration_s.is_some(),
            stopped: false,
            ended: false,
            render_s: 0.0,
        })
    }

    /// Records every message into an MCAP file at `path` from now on, written as `options` say.
    pub fn record_to(&mut self, path: &Path, options: RecordOptions) -> Result<(), FlightError> {
        let mut rec = Recorder::create(path, options)?;
        let statics: Vec<(String, String, Isometry3<f64>)> = self
            .crafts
            .iter()
            .flat_map(|c| {
                c.sensors.iter().map(|s| {
                    (
                        format!("{}/base_link", c.name),
                        s.frame_id.clone(),
                        self.sim.body_from_sensor(s.id),
                    )
                })
            })
            .collect();
        let refs: Vec<(&str, &str, Isometry3<f64>)> = statics
            .iter()
            .map(|(a, b, t)| (a.as_str(), b.as_str(), *t))
            .collect();
        rec.write(
            "/tf_static",
            ros2::TF_MESSAGE,
            0.0,
            ros2::tf_message(0.0, &refs),
        )?;
        self.recorder = Some(rec);
        Ok(())
    }

    /// Simulation time, seconds.
    pub fn time(&self) -> f64 {
        self.step as f64 / PHYSICS_HZ
    }

    /// When the flight ends, seconds.
    pub fn end_time(&self) -> f64 {
        self.end_s
    }

    /// Whether the flight is over (its time is up, or a collision stopped it).
    pub fn finished(&self) -> bool {
        self.stopped || self.time() >= self.end_s - 0.5 / PHYSICS_HZ
    }

    /// What happened so far, in order: take-offs, goals reached, collisions, touchdowns, and (once the flight is
    /// over) each vehicle's mission end.
    pub fn events(&self) -> &[FlightEvent] {
        &self.events
    }

    /// The collisions so far.
    pub fn collisions(&self) -> impl Iterator<Item = &CollisionEvent> {
        self.events.iter().filter_map(FlightEvent::collision)
    }

    /// Vehicle states, in mission order.
    pub fn states(&self) -> Vec<(&str, QuadState)> {
        self.crafts
            .iter()
            .map(|c| (c.name.as_str(), *c.quad.state()))
            .collect()
    }

    /// The simulator (map, sensors).
    pub fn simulator(&self) -> &Simulator {
        &self.sim
    }

    /// Builds now what the first LiDAR frame would otherwise build (the beam renderer's index of the map), so
    /// that setup and flight are timed apart ([`Simulator::warm_up`]). Changes no output.
    pub fn warm_up(&mut self) -> Option<Arc<BeamIndex>> {
        self.sim.warm_up()
    }

    /// Whether a LiDAR's renderer uses the beam index of the map ([`Simulator::uses_beam_index`]).
    pub fn uses_beam_index(&mut self) -> bool {
        self.sim.uses_beam_index()
    }

    /// Wall time spent rendering LiDAR frames so far (occluders, motion and the renderer), seconds; the rest of
    /// a flight's time is physics, control, sampling and recording.
    pub fn render_time_s(&self) -> f64 {
        self.render_s
    }

    /// Runs until simulation time `t` (or the end); `on_frame` sees every rendered LiDAR frame.
    pub fn run_until(
        &mut self,
        t: f64,
        on_frame: &mut dyn FnMut(&str, &Frame),
    ) -> Result<(), FlightError> {
        while !self.finished() && self.time() < t - 0.5 / PHYSICS_HZ {
            self.step_once(on_frame)?;
        }
        Ok(())
    }

    /// Finishes the recording (renames it into place).
    pub fn finish_recording(&mut self) -> Result<(), FlightError> {
        if let Some(rec) = self.recorder.take() {
            rec.finish()?;
        }
        Ok(())
    }

    /// Ground truth of each vehicle at the odometry rate: (name, [(t, world_from_body, velocity)]).
    pub fn tracks(&self) -> Vec<(&str, &[TrackSample])> {
        self.crafts
            .iter()
            .map(|c| (c.name.as_str(), c.track.as_slice()))
            .collect()
    }

    /// What each vehicle did.
    pub fn summary(&self) -> Vec<VehicleSummary> {
        self.crafts
            .iter()
            .map(|c| {
                let length = c
                    .track
                    .windows(2)
                    .map(|w| (w[1].1.translation.vector - w[0].1.translation.vector).norm())
                    .sum();
                let max_speed = c.track.iter().map(|x| x.2.norm()).fold(0.0, f64::max);
                let p = c.quad.state().position;
                VehicleSummary {
                    name: c.name.clone(),
                    path_length_m: length,
                    max_speed_m_s: max_speed,
                    collisions: c.collisions,
                    lidar_frames: c.frames,
                    lidar_points: c.points,
                    goals_done: c.goals_reached == c.goals.len(),
                    goals_reached: c.goals_reached,
                    goals: c.goals.len(),
                    final_position: [p.x, p.y, p.z],
                }
            })
            .collect()
    }
}
