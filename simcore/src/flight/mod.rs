//! The flight loop: vehicles flying missions in a map, their LiDARs rendered through the [`Simulator`], every
//! message recorded. One fixed physics step (1 kHz, RK4) drives everything; the controller runs every step,
//! each IMU at its own rate, odometry at 100 Hz, each sensor once per frame. A LiDAR frame is rendered when
//! its period has passed, from the poses the body actually took during it (motion distortion, per-beam time),
//! with the obstacles and the other vehicles as occluders. Deterministic for a seed.

// `!(a <= b)` is deliberate: a NaN must fail the test it is in.
#![allow(clippy::neg_cmp_op_on_partial_ord)]

pub mod events;
pub mod outputs;

use std::path::Path;
use std::sync::Arc;

use nalgebra::{Isometry3, Vector3};
use serde::Serialize;

use crate::control::{Cascaded, CascadedParams, Controller};
use crate::mission::{self, Goal, GoalMark, Grid, Leg, Mission, PlanError, Planner, VehicleSpec};
use crate::record::{RecordError, RecordOptions, Recorder, TrackSample, ros2};
use crate::render::{BeamIndex, Frame, Occluder, RenderParams};
use crate::sensor::{PointFields, SensorModel};
use crate::simulator::{FrameJob, Map, SensorId, SimError, Simulator};
use crate::trajectory::{Tum, pose_from_xyz_rpy};
use crate::vehicle::{Imu, QuadParams, QuadState, Quadrotor, RotorCommand, VehicleError};
use crate::world::{CollisionEvent, HARD_LANDING_M_S, Obstacles, Spheres, World};

pub use events::FlightEvent;

/// Physics and control rate, Hz.
pub const PHYSICS_HZ: f64 = 1000.0;
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

/// Refuses a start or goal farther outside the map's box, horizontally, than the map is wide (and than 100 m): a
/// position given in another frame (a local one for a georeferenced map, or the reverse) would otherwise fly in
/// empty space. Heights are free: a map of one point far below stands for an empty world.
fn check_near_map(v: &VehicleSpec, lo: Vector3<f64>, hi: Vector3<f64>) -> Result<(), FlightError> {
    let margin = (hi.x - lo.x).max(hi.y - lo.y).max(100.0);
    for (what, p) in mission_positions(v) {
        let outside = (p - p.sup(&lo).inf(&hi)).xy().norm();
        if outside > margin {
            return Err(FlightError::FarFromMap {
                vehicle: v.name.clone(),
                message: format!(
                    "{what} ({:.2}, {:.2}, {:.2}) lies {outside:.0} m outside the map horizontally, whose points span \
                     x {:.2}..{:.2}, y {:.2}..{:.2}, z {:.2}..{:.2}; mission positions are in the map's frame",
                    p.x, p.y, p.z, lo.x, hi.x, lo.y, hi.y, lo.z, hi.z
                ),
            });
        }
    }
    Ok(())
}

/// The start and the goal positions of a vehicle, each named as messages name it ("start", "goal 2").
fn mission_positions(v: &VehicleSpec) -> Vec<(String, Vector3<f64>)> {
    let goals = v.goals.iter().enumerate().filter_map(|(i, g)| match g {
        Goal::Waypoint { position, .. } | Goal::Goal { position, .. } => {
            Some((format!("goal {}", i + 1), Vector3::from(*position)))
        }
        Goal::Hover { .. } | Goal::Land {} => None,
    });
    let start = Vector3::new(v.start[0], v.start[1], v.start[2]);
    std::iter::once(("start".to_string(), start))
        .chain(goals)
        .collect()
}

/// Loads a vehicle preset or file, a sensor preset or file (relative to `base`).
fn resolve<T>(
    spec: &str,
    base: &Path,
    preset: impl Fn(&str) -> Result<T, String>,
    parse: impl Fn(&str) -> Result<T, String>,
) -> Result<T, String> {
    // `Quad.TOML` is a file too, not an unknown preset; so is a sensor's Ouster metadata (`.json`).
    if Path::new(spec)
        .extension()
        .is_some_and(|e| e.eq_ignore_ascii_case("toml") || e.eq_ignore_ascii_case("json"))
    {
        let path = base.join(spec);
        let text =
            std::fs::read_to_string(&path).map_err(|e| format!("{}: {e}", path.display()))?;
        return parse(&text).map_err(|e| format!("{}: {e}", path.display()));
    }
    preset(spec)
}

struct Sensor {
    id: SensorId,
    topic: String,
    frame_id: String,
    point_fields: PointFields,
    period: f64,
    next_start: f64,
    frame_index: u64,
}

struct Craft {
    name: String,
    /// `<name>/base_link`, the body's frame id (made once: the loop must not allocate every step).
    base_frame: String,
    quad: Quadrotor,
    controller: Box<dyn Controller>,
    imu: Imu,
    next_imu: f64,
    imu_samples: u64,
    legs: Vec<Leg>,
    /// The goals, in mission order, and how many have been reached (they are reached in order).
    goals: Vec<GoalMark>,
    goals_reached: usize,
    sensors: Vec<Sensor>,
    /// Body poses since the oldest frame still being collected.
    history: Vec<(f64, Isometry3<f64>)>,
    /// Ground truth at the odometry rate, for the TUM file and the summary.
    track: Vec<TrackSample>,
    motors_off: bool,
    touching: bool,
    /// Off the ground (a take-off has been reported).
    airborne: bool,
    /// A touchdown at its landing has been reported.
    touched_down: bool,
    /// The contact going on is with the ground under it during a landing (not a collision).
    ground_contact: bool,
    /// Vertical velocity before the last physics step, m/s (a touchdown's speed, before the ground stops it).
    vz_before_step: f64,
    collisions: u32,
    frames: u64,
    points: u64,
}

impl Craft {
    fn new(
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

/// The vehicle's parameters: a preset's name or a TOML file beside the mission.
fn vehicle_params(v: &VehicleSpec, base: &Path) -> Result<QuadParams, FlightError> {
    resolve(
        &v.preset,
        base,
        |n| QuadParams::preset(n).map_err(|e| e.to_string()),
        |t| QuadParams::from_toml(t).map_err(|e| e.to_string()),
    )
    .map_err(|m| FlightError::Vehicle {
        vehicle: v.name.clone(),
        source: VehicleError::Toml(m),
    })
}

/// The quad at its start. One starting in the air starts hovering. One that starts over ground within its reach
/// (a start written a little above the floor means "on the floor") is set down on it, motors still: left a few
/// centimetres up with its motors off, it would fall, and its IMU would read the fall.
fn quad_at_start(world: &mut World, params: &QuadParams, v: &VehicleSpec) -> Quadrotor {
    let start = Vector3::new(v.start[0], v.start[1], v.start[2]);
    let mut state = QuadState::at_rest(start, v.start[3]);
    let support = world.support_height(&start, params.radius_m, params.gear_height_m);
    if support.is_none() {
        state.rotor_rpm = [params.hover_rpm(); 4];
    }
    let mut quad = Quadrotor::new(params.clone(), state);
    if let Some(ground) = support {
        quad.rest_on(ground);
    }
    quad
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

fn mount_of(m: &[f64; 6]) -> Isometry3<f64> {
    pose_from_xyz_rpy(m[0], m[1], m[2], m[3], m[4], m[5])
}

/// Adds the sensors of vehicle `v` (the `vi`th of the mission, whose seed is `seed`) to `sim` (preset names or
/// files relative to `base`), each with its own seed, and the topic and frame its messages are recorded under.
fn mount_sensors(
    sim: &mut Simulator,
    (vi, v): (usize, &VehicleSpec),
    seed: u64,
    base: &Path,
) -> Result<Vec<Sensor>, FlightError> {
    let mut sensors = Vec::new();
    for (si, s) in v.sensors.iter().enumerate() {
        let serr = |message: String| FlightError::Sensor {
            vehicle: v.name.clone(),
            sensor: s.name.clone(),
            message,
        };
        let model = resolve(
            &s.preset,
            base,
            |n| SensorModel::preset(n).map_err(|e| e.to_string()),
            |t| SensorModel::from_text(t).map_err(|e| e.to_string()),
        )
        .map_err(serr)?;
        let period = model.frame_period_s();
        let point_fields = model.point_fields;
        sim.set_params(RenderParams {
            seed: seed ^ ((vi as u64) << 32 | si as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15),
            points_in: s.points_in,
            ..RenderParams::default()
        });
        let id = sim
            .add_sensor(format!("{}/{}", v.name, s.name), model, mount_of(&s.mount))
            .map_err(|e| serr(e.to_string()))?;
        sensors.push(Sensor {
            id,
            topic: format!("/{}/{}/points", v.name, s.name),
            frame_id: format!("{}/{}", v.name, s.name),
            point_fields,
            period,
            next_start: 0.0,
            frame_index: 0,
        });
    }
    Ok(sensors)
}

/// The built-in planner for a timeline: the occupancy grid of the map, built on the first `goal` and rebuilt
/// only for a vehicle of another clearance.
struct GridPlanner<'a> {
    sim: &'a Simulator,
    /// Every start and goal of the mission, inside the grid whatever the map's bounds.
    within: &'a [Vector3<f64>],
    voxel: f64,
    clearance: f64,
    grid: &'a mut Option<(f64, Grid)>,
}

impl Planner for GridPlanner<'_> {
    fn plan(
        &mut self,
        from: &Vector3<f64>,
        to: &Vector3<f64>,
    ) -> Result<Vec<Vector3<f64>>, PlanError> {
        if self.grid.as_ref().is_none_or(|(c, _)| *c != self.clearance) {
            let grid = Grid::from_map(&self.sim.map(), self.voxel, self.clearance, self.within)?;
            *self.grid = Some((self.clearance, grid));
        }
        match self.grid.as_ref() {
            Some((_, g)) => g.plan(from, to),
            None => Ok(vec![*from, *to]),
        }
    }

    fn is_free(&self, p: &Vector3<f64>) -> bool {
        self.grid.as_ref().is_none_or(|(_, g)| g.is_free(p))
    }
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

    fn step_once(&mut self, on_frame: &mut dyn FnMut(&str, &Frame)) -> Result<(), FlightError> {
        let dt = 1.0 / PHYSICS_HZ;
        let t = self.time();
        for c in &mut self.crafts {
            let s = *c.quad.state();
            let (sp, off) = mission::setpoint_at(&c.legs, t, c.quad.grounded());
            c.motors_off |= off;
            let cmd = if c.motors_off {
                RotorCommand([0.0; 4])
            } else {
                c.controller.update(&s, &sp, dt)
            };
            let p = c.quad.params();
            let support = self
                .world
                .support_height(&s.position, p.radius_m, p.gear_height_m);
            c.vz_before_step = s.velocity.z;
            c.quad.step(&cmd, dt, support);
        }
        self.world.obstacles.step(dt);
        self.step += 1;
        let t = self.time();
        self.check_collisions(t);
        self.track_progress(t);
        if !self.fixed_duration && self.crafts.iter().all(|c| c.motors_off) {
            // Everyone has landed: one more second of data, then stop (a duration the mission gives holds).
            self.end_s = self.end_s.min(t + 1.0);
        }
        for c in &mut self.crafts {
            c.history.push((t, c.quad.state().pose()));
        }
        let frames = self.render_due(t)?;
        for (i, frames) in frames.into_iter().enumerate() {
            self.sample(i, t)?;
            self.emit(i, frames, on_frame)?;
        }
        if self.finished() && !self.ended {
            self.report_ends(t);
        }
        Ok(())
    }

    /// Take-offs, touchdowns at a landing, and goals reached, of every vehicle at time `t`.
    fn track_progress(&mut self, t: f64) {
        for c in &mut self.crafts {
            let s = *c.quad.state();
            if !c.airborne && !c.quad.grounded() {
                c.airborne = true;
                self.events.push(FlightEvent::Takeoff {
                    time_s: t,
                    vehicle: c.name.clone(),
                    position: s.position.into(),
                    from_ground: true,
                });
            }
            let Some(goal) = c.goals.get(c.goals_reached) else {
                continue;
            };
            let landing = goal.kind == mission::GoalKind::Land && t >= goal.due_s;
            if landing && !c.touched_down && c.airborne && (c.quad.grounded() || c.ground_contact) {
                c.touched_down = true;
                self.events.push(FlightEvent::Touchdown {
                    time_s: t,
                    vehicle: c.name.clone(),
                    goal: goal.index,
                    position: s.position.into(),
                    vertical_speed_m_s: c.vz_before_step,
                });
            }
            let reached = if goal.kind == mission::GoalKind::Land {
                c.motors_off
            } else {
                t >= goal.due_s && (s.position - goal.target).norm() <= events::GOAL_REACHED_M
            };
            if reached {
                self.events.push(FlightEvent::GoalReached {
                    time_s: t,
                    vehicle: c.name.clone(),
                    goal: goal.index,
                    kind: goal.kind,
                    position: s.position.into(),
                    target: goal.target.into(),
                    planned_path_m: goal.planned_m,
                });
                c.goals_reached += 1;
            }
        }
    }

    /// Each vehicle's mission end, once the flight is over.
    fn report_ends(&mut self, t: f64) {
        self.ended = true;
        for c in &self.crafts {
            let done = c.goals_reached == c.goals.len();
            let why = if self.stopped {
                "stopped at a collision (stop_on_collision)"
            } else if done && c.motors_off {
                "landed"
            } else if done {
                "goals done"
            } else {
                "duration reached"
            };
            self.events.push(FlightEvent::MissionEnd {
                time_s: t,
                vehicle: c.name.clone(),
                goals_done: done,
                goals_reached: c.goals_reached,
                goals: c.goals.len(),
                why: why.into(),
            });
        }
    }

    /// Contacts with the map and the obstacles. Before take-off, the vehicle stands where the mission set it
    /// down: touching the map there is no collision (the contact counts once it has ended and a new one
    /// begins). During a landing, meeting the ground under the vehicle is the touchdown
    /// ([`Self::track_progress`]), not a collision: its gear within reach of the ground under it,
    /// every map point within its radius below its centre (uneven or sloping ground), met no faster than a hard
    /// landing. A wall, a ledge beside the gear or an obstacle on the way down is still a collision.
    fn check_collisions(&mut self, t: f64) {
        for c in &mut self.crafts {
            let s = c.quad.state();
            let p = c.quad.params();
            let hit = self.world.check_collision(
                t,
                &c.name,
                &s.position,
                &s.velocity,
                p.radius_m,
                p.gear_height_m,
            );
            let landing =
                matches!(mission::leg_at(&c.legs, t), Some(Leg::Land { t0, .. }) if t >= *t0);
            match hit {
                Some(e) if !c.touching => {
                    c.touching = true;
                    // Where the mission set it down, it stands on whatever the map has there.
                    let standing = !c.airborne && e.what == "map";
                    let ground = landing
                        && e.what == "map"
                        && -s.velocity.z <= HARD_LANDING_M_S
                        && self
                            .world
                            .support_height(&s.position, p.radius_m, p.gear_height_m)
                            .is_some()
                        && self.world.only_ground_within(&s.position, p.radius_m);
                    c.ground_contact = ground;
                    if standing || ground {
                        continue;
                    }
                    c.collisions += 1;
                    self.events.push(FlightEvent::Collision(e));
                    if self.stop_on_collision {
                        self.stopped = true;
                    }
                }
                Some(_) => {}
                None => {
                    c.touching = false;
                    c.ground_contact = false;
                }
            }
        }
    }

    /// IMU, odometry and /tf of vehicle `i` at time `t`.
    fn sample(&mut self, i: usize, t: f64) -> Result<(), FlightError> {
        let c = &mut self.crafts[i];
        let s = *c.quad.state();
        let world_from_body = s.pose();
        let base = c.base_frame.as_str();
        if t + 1e-9 >= c.next_imu {
            let f = c.quad.specific_force_body();
            let sample = c.imu.sample(t, &s.body_rates, &f);
            // Sample k is due at k / rate: computed, not accumulated, so rounding never adds a sample.
            c.imu_samples += 1;
            c.next_imu = (c.imu_samples + 1) as f64 * c.imu.period_s();
            if let Some(rec) = self.recorder.as_mut() {
                let ip = c.imu.params();
                let (gv, av) = (
                    (ip.gyro_noise_density.powi(2)) * ip.rate_hz,
                    (ip.accel_noise_density.powi(2)) * ip.rate_hz,
                );
                let msg = ros2::imu(
                    t,
                    base,
                    &sample.angular_velocity,
                    &sample.linear_acceleration,
                    gv,
                    av,
                );
                rec.write(&format!("/{}/imu", c.name), ros2::IMU, t, msg)?;
            }
        }
        if self.step.is_multiple_of((PHYSICS_HZ / ODOM_HZ) as u64) {
            c.track.push((t, world_from_body, s.velocity));
            if let Some(rec) = self.recorder.as_mut() {
                let v_body = s.world_from_body.inverse() * s.velocity;
                let odom = ros2::odometry(t, "map", base, &world_from_body, &v_body, &s.body_rates);
                rec.write(&format!("/{}/odom", c.name), ros2::ODOMETRY, t, odom)?;
                let tf = ros2::tf_message(t, &[("map", base, world_from_body)]);
                rec.write("/tf", ros2::TF_MESSAGE, t, tf)?;
            }
        }
        Ok(())
    }

    /// Renders every frame whose period has passed at `t`, of all vehicles side by side: per vehicle, its
    /// (sensor, frame) pairs. A sensor's frame sees the map, the obstacles and the other vehicles as they are
    /// now, and the poses its body took during the frame.
    fn render_due(&mut self, t: f64) -> Result<Vec<Vec<(usize, Frame)>>, FlightError> {
        struct Due {
            craft: usize,
            sensor: usize,
            id: SensorId,
            start: f64,
            index: u64,
            trajectory: Tum,
            others: usize,
        }
        let mut due = Vec::new();
        let mut others = Vec::new();
        for (i, c) in self.crafts.iter().enumerate() {
            for (k, s) in c.sensors.iter().enumerate() {
                if t + 1e-9 < s.next_start + s.period {
                    continue;
                }
                let (start, period) = (s.next_start, s.period);
                let samples: Vec<(f64, Isometry3<f64>)> = c
                    .history
                    .iter()
                    .filter(|(ht, _)| *ht >= start - 2e-3 && *ht <= start + period + 2e-3)
                    .copied()
                    .collect();
                let Ok(trajectory) = Tum::from_samples(samples) else {
                    continue;
                };
                if others.last().is_none_or(|&(j, _)| j != i) {
                    others.push((i, self.other_vehicles(i)));
                }
                due.push(Due {
                    craft: i,
                    sensor: k,
                    id: s.id,
                    start,
                    index: s.frame_index,
                    trajectory,
                    others: others.len() - 1,
                });
            }
        }
        let mut out: Vec<Vec<(usize, Frame)>> = self.crafts.iter().map(|_| Vec::new()).collect();
        if due.is_empty() {
            return Ok(out);
        }
        let occluders: Vec<[&dyn Occluder; 2]> = others
            .iter()
            .map(|(_, o)| [&self.world.obstacles as &dyn Occluder, o])
            .collect();
        let jobs: Vec<FrameJob<'_>> = due
            .iter()
            .map(|d| FrameJob {
                sensor: d.id,
                world_from_body: &d.trajectory,
                frame_start_s: d.start,
                frame_index: d.index,
                occluders: &occluders[d.others],
            })
            .collect();
        let started = std::time::Instant::now();
        let frames = self.sim.render_many(&jobs)?;
        self.render_s += started.elapsed().as_secs_f64();
        for (d, frame) in due.iter().zip(frames) {
            out[d.craft].push((d.sensor, frame));
        }
        Ok(out)
    }

    /// The vehicles other than `i`, as spheres (occluders of `i`'s sensors).
    fn other_vehicles(&self, i: usize) -> Spheres {
        self.crafts
            .iter()
            .enumerate()
            .filter(|(j, _)| *j != i)
            .map(|(_, c)| (c.quad.state().position.into(), c.quad.params().radius_m))
            .collect()
    }

    /// Hands vehicle `i`'s rendered frames to `on_frame` and the recording, moves its sensors on to their next
    /// frame, and forgets the poses no frame needs any more.
    fn emit(
        &mut self,
        i: usize,
        frames: Vec<(usize, Frame)>,
        on_frame: &mut dyn FnMut(&str, &Frame),
    ) -> Result<(), FlightError> {
        let c = &mut self.crafts[i];
        for (k, frame) in frames {
            c.frames += 1;
            c.points += frame.points.len() as u64;
            on_frame(&c.name, &frame);
            let s = &mut c.sensors[k];
            if let Some(rec) = self.recorder.as_mut() {
                rec.write_cloud(
                    (&s.topic, s.next_start + s.period),
                    (s.next_start, &s.frame_id),
                    frame.points,
                    s.point_fields,
                )?;
            }
            s.frame_index += 1;
            s.next_start += s.period;
        }
        let keep_from = c
            .sensors
            .iter()
            .map(|s| s.next_start)
            .fold(f64::INFINITY, f64::min)
            - 0.01;
        let cut = c.history.partition_point(|(ht, _)| *ht < keep_from);
        c.history.drain(..cut);
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

/// A generous end for a timeline that ends in a landing: its start, plus the descent from the landing height
/// to 10 m below it at the landing speed.
fn landing_end(legs: &[Leg]) -> f64 {
    match legs.last() {
        Some(Leg::Land { t0, .. }) => t0 + 10.0 / mission::LANDING_SPEED_M_S,
        _ => 60.0,
    }
}

/// Bounds of a map's points in the map frame (zero for an empty map).
fn bounds(view: &aerie_pipeline::map::MapView) -> (Vector3<f64>, Vector3<f64>) {
    view.bounds()
        .map_or((Vector3::zeros(), Vector3::zeros()), |(lo, hi)| {
            (Vector3::from(lo), Vector3::from(hi))
        })
}
