//! Missions: what each vehicle carries and what it does, written in TOML (examples in `examples/missions/`),
//! and the timeline of setpoints that flies the goals.
//!
//! ```toml
//! seed = 1
//! stop_on_collision = false
//! [[vehicle]]
//! name = "uav"
//! preset = "marsim_quad"            # or a vehicle TOML file, relative to the mission
//! start = [0.0, 0.0, 1.0, 0.0]      # x y z yaw (map frame; metres, radians)
//! max_speed_m_s = 2.0
//! [[vehicle.sensor]]
//! name = "lidar"
//! preset = "avia"                   # a sensor preset or a sensor TOML file
//! mount = [0.0, 0.0, 0.1, 0.0, 0.0, 0.0]   # body_from_sensor: x y z roll pitch yaw
//! [[vehicle.goal]]
//! kind = "waypoint"                 # waypoint | goal (planned around obstacles) | hover | land
//! position = [5.0, 0.0, 1.5]
//! ```
//!
//! Each vehicle's goals become a [`Timeline`] planned at the start: legs (straight moves to waypoints with a
//! smooth speed profile, stopping at each for [`WAYPOINT_DWELL_S`]; planned paths to goals flown without
//! stopping, [`path`]; holds and a landing) and the goals' marks, which the flight reports as reached. Moves fly
//! at 90% of the speed limit so the tracking error of the controller stays under the limit.

pub mod path;
pub mod planner;

use std::f64::consts::{PI, TAU};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use nalgebra::Vector3;
use serde::{Deserialize, Serialize};

use crate::control::Setpoint;
use crate::record::RecordOptions;
use crate::render::PointsIn;
use crate::world::ObstacleConfig;

pub use path::SmoothPath;
pub use planner::{Grid, PlanError};

/// A whole mission file.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Mission {
    /// Seed of every random stream (noise, obstacles); the same seed gives the same flight.
    #[serde(default)]
    pub seed: u64,
    /// Longest flight, seconds. By default, until every vehicle has finished its goals, plus 2 s.
    #[serde(default)]
    pub duration_s: Option<f64>,
    /// End the flight at the first collision. By default, false (collisions are recorded).
    #[serde(default)]
    pub stop_on_collision: bool,
    /// Voxel of the planner's occupancy grid, metres. By default, the larger of 0.2 m and r_map.
    #[serde(default)]
    pub planner_voxel_m: Option<f64>,
    /// Dynamic obstacles, `[[obstacles]]` tables: groups of drones, falling spheres and cubes moving inside the
    /// map's bounds. By default, none.
    #[serde(default)]
    pub obstacles: Vec<ObstacleConfig>,
    /// How the recording is written, a `[recording]` table: `compression = "zstd" | "lz4" | "none"` (default
    /// zstd), `rosbag2 = true` for rosbag2's metadata.yaml beside the MCAP.
    #[serde(default)]
    pub recording: RecordOptions,
    /// The vehicles, `[[vehicle]]` tables; at least one, names unique.
    #[serde(rename = "vehicle")]
    pub vehicles: Vec<VehicleSpec>,
}

/// One vehicle of a mission.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct VehicleSpec {
    /// Names its topics and output files.
    pub name: String,
    /// Vehicle preset name, or a vehicle TOML file (relative to the mission). By default, `marsim_quad`.
    #[serde(default = "default_vehicle")]
    pub preset: String,
    /// x y z yaw in the map frame.
    pub start: [f64; 4],
    /// Speed limit of moves, m/s. By default, 2.
    #[serde(default = "default_speed")]
    pub max_speed_m_s: f64,
    /// Acceleration of moves, m/s^2. By default, 1.5.
    #[serde(default = "default_accel")]
    pub max_accel_m_s2: f64,
    /// What it carries, `[[vehicle.sensor]]` tables. By default, nothing.
    #[serde(default, rename = "sensor")]
    pub sensors: Vec<SensorSpec>,
    /// What it does, in order, `[[vehicle.goal]]` tables. By default, nothing: it holds its start.
    #[serde(default, rename = "goal")]
    pub goals: Vec<Goal>,
}

fn default_vehicle() -> String {
    "marsim_quad".into()
}
fn default_speed() -> f64 {
    2.0
}
fn default_accel() -> f64 {
    1.5
}

/// A sensor on a vehicle.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SensorSpec {
    /// Names its topics (`/<vehicle>/<sensor>/points`) and frame.
    pub name: String,
    /// Sensor preset name (`aerie sensors`), or a sensor TOML file (relative to the mission).
    pub preset: String,
    /// body_from_sensor: x y z (m), roll pitch yaw (rad). By default, the body origin.
    #[serde(default)]
    pub mount: [f64; 6],
    /// Where the recorded points are given, each cloud stamped at its frame's start: `"frame_start"` (the
    /// default), in the sensor frame at the stamp, the motion during the frame compensated; `"firing"`, each
    /// point in the sensor frame at its own firing time (`t` after the stamp), the motion distortion left in,
    /// as a sensor's driver publishes it, for testing a deskewing step.
    #[serde(default)]
    pub points_in: PointsIn,
}

/// What a vehicle does next.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case", deny_unknown_fields)]
pub enum Goal {
    /// Fly straight to `position` and stop there.
    Waypoint {
        /// Where to stop, map frame, metres.
        position: [f64; 3],
        /// Speed limit of this move, m/s, capped by the vehicle's `max_speed_m_s`. By default, the vehicle's.
        #[serde(default)]
        speed_m_s: Option<f64>,
    },
    /// Reach `position` around obstacles (the built-in planner), then stop.
    Goal {
        /// Where to stop, map frame, metres.
        position: [f64; 3],
        /// Speed limit of the moves, m/s, capped by the vehicle's `max_speed_m_s`. By default, the vehicle's.
        #[serde(default)]
        speed_m_s: Option<f64>,
    },
    /// Hold the current position.
    Hover {
        /// How long, seconds (0 or more).
        duration_s: f64,
    },
    /// Descend until on the ground, then stop the motors. (A struct variant with no fields, so that a stray key
    /// such as `position` is refused: serde ignores the keys beside the tag of a unit variant.)
    Land {},
}

/// Errors of reading a mission.
#[derive(Debug, thiserror::Error)]
pub enum MissionError {
    /// The file cannot be read, does not parse, or holds a value [`Mission::check`] refuses.
    #[error("{path}: {message}")]
    Invalid {
        /// The mission file.
        path: PathBuf,
        /// What is wrong (a parse error names the line and the field).
        message: String,
    },
}

impl Mission {
    /// Reads and checks a mission file.
    pub fn load(path: &Path) -> Result<Mission, MissionError> {
        let invalid = |message: String| MissionError::Invalid {
            path: path.to_path_buf(),
            message,
        };
        let text = std::fs::read_to_string(path).map_err(|e| invalid(e.to_string()))?;
        let mission: Mission = toml::from_str(&text).map_err(|e| {
            invalid(crate::toml_place::place_of(&text, &e).describe("mission toml"))
        })?;
        mission.check().map_err(invalid)?;
        Ok(mission)
    }

    /// Checks values a TOML parser cannot: names, and every number finite and in its range (a NaN would
    /// otherwise fly as a goal reached at once, or panic deep in the flight).
    pub fn check(&self) -> Result<(), String> {
        if self.vehicles.is_empty() {
            return Err("a mission needs at least one [[vehicle]]".into());
        }
        let mut names = std::collections::BTreeSet::new();
        for v in &self.vehicles {
            if !names.insert(v.name.as_str()) {
                return Err(format!("two vehicles are named {:?}", v.name));
            }
            v.check()?;
        }
        if let Some(d) = self.duration_s {
            check_duration(d).map_err(|m| format!("duration_s {m}"))?;
        }
        if let Some(v) = self.planner_voxel_m
            && !(v.is_finite() && v >= MIN_PLANNER_VOXEL_M)
        {
            return Err(format!(
                "planner_voxel_m must be at least {MIN_PLANNER_VOXEL_M} m, got {v}"
            ));
        }
        for (i, o) in self.obstacles.iter().enumerate() {
            o.check().map_err(|m| format!("obstacles[{i}]: {m}"))?;
        }
        let total: u64 = self.obstacles.iter().map(|o| o.count as u64).sum();
        if total > crate::world::MAX_OBSTACLES as u64 {
            return Err(format!(
                "{total} obstacles in all; at most {} are simulated",
                crate::world::MAX_OBSTACLES
            ));
        }
        Ok(())
    }
}

/// The longest flight, and the longest hover, a mission may ask for, seconds (ten hours).
pub const MAX_DURATION_S: f64 = 36_000.0;

/// A flight duration: above 0 and at most [`MAX_DURATION_S`]; the error says so, without the field's name.
pub fn check_duration(d: f64) -> Result<(), String> {
    if d > 0.0 && d <= MAX_DURATION_S {
        Ok(())
    } else {
        Err(format!(
            "must be above 0 and at most {MAX_DURATION_S} s, got {d}"
        ))
    }
}

/// The finest planner voxel a mission may ask for, metres: below it the grid only grows, the map's points being
/// centimetres apart at best.
pub const MIN_PLANNER_VOXEL_M: f64 = 0.01;

impl VehicleSpec {
    fn check(&self) -> Result<(), String> {
        let name = &self.name;
        if !is_ros_name(name) {
            return Err(format!(
                "vehicle name {name:?}: use letters, digits and _, not starting with a digit (it names ROS topics and files)"
            ));
        }
        // Beyond these no multirotor flies (racing quads reach ~50 m/s and ~5 g); a larger value is a slip.
        for (field, v, most) in [
            ("max_speed_m_s", self.max_speed_m_s, 100.0),
            ("max_accel_m_s2", self.max_accel_m_s2, 100.0),
        ] {
            if !(v.is_finite() && v > 0.0 && v <= most) {
                return Err(format!(
                    "vehicle {name}: {field} must be above 0 and at most {most}, got {v}"
                ));
            }
        }
        check_position(&self.start[..3]).map_err(|m| format!("vehicle {name}: start {m}"))?;
        if !self.start[3].is_finite() {
            return Err(format!("vehicle {name}: start yaw must be finite"));
        }
        let mut sensors = std::collections::BTreeSet::new();
        for s in &self.sensors {
            if !is_ros_name(&s.name) {
                return Err(format!(
                    "vehicle {name} sensor name {:?}: use letters, digits and _, not starting with a digit (it names the sensor's ROS topic \
                     and frame)",
                    s.name
                ));
            }
            if !sensors.insert(s.name.as_str()) {
                return Err(format!(
                    "vehicle {name}: two sensors are named {:?} (the name makes the topic)",
                    s.name
                ));
            }
            if !s.mount.iter().all(|x| x.is_finite()) {
                return Err(format!(
                    "vehicle {name} sensor {}: mount must be finite",
                    s.name
                ));
            }
            if s.points_in == PointsIn::FrameEnd {
                return Err(format!(
                    "vehicle {name} sensor {}: points_in = \"frame_end\" cannot be recorded (clouds are stamped at \
                     the frame start); use \"frame_start\" or \"firing\"",
                    s.name
                ));
            }
        }
        for (i, g) in self.goals.iter().enumerate() {
            g.check()
                .map_err(|m| format!("vehicle {name} goal {}: {m}", i + 1))?;
        }
        Ok(())
    }
}

/// A name that can stand as one token of a ROS topic or frame id (`/<vehicle>/<sensor>/points`): letters,
/// digits and `_`, not empty (ROS also refuses a leading digit in a topic token; the vehicle's names a file too).
pub fn is_ros_name(name: &str) -> bool {
    name.chars().next().is_some_and(|c| !c.is_ascii_digit())
        && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
}

/// The largest coordinate a mission position may have, metres: beyond any georeferenced frame (UTM northings
/// reach 1e7 m), so a larger one is a typo.
pub const MAX_COORDINATE_M: f64 = 1e8;

fn check_position(p: &[f64]) -> Result<(), String> {
    if p.iter()
        .all(|x| x.is_finite() && x.abs() <= MAX_COORDINATE_M)
    {
        Ok(())
    } else {
        Err(format!(
            "must be finite and within {MAX_COORDINATE_M:e} m of the map frame's origin, got {p:?}"
        ))
    }
}

impl Goal {
    fn check(&self) -> Result<(), String> {
        match self {
            Goal::Waypoint {
                position,
                speed_m_s,
            }
            | Goal::Goal {
                position,
                speed_m_s,
            } => {
                check_position(position).map_err(|m| format!("position {m}"))?;
                match speed_m_s {
                    Some(s) if !(s.is_finite() && *s > 0.0) => {
                        Err(format!("speed_m_s must be positive and finite, got {s}"))
                    }
                    _ => Ok(()),
                }
            }
            Goal::Hover { duration_s } if !(0.0..=MAX_DURATION_S).contains(duration_s) => Err(
                format!("hover duration_s must be from 0 to {MAX_DURATION_S} s, got {duration_s}"),
            ),
            Goal::Hover { .. } | Goal::Land {} => Ok(()),
        }
    }
}

/// A straight move from `a` to `b` starting at `t0`: speed up, cruise, slow down, with the acceleration rising
/// and falling as a raised cosine (bounded jerk), so that the attitude loop can follow the feed-forward without
/// lag building up (a trapezoidal speed profile, with its steps in acceleration, overshot the speed by ~18%).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Segment {
    /// Start, map frame, metres.
    pub a: Vector3<f64>,
    /// End, map frame, metres.
    pub b: Vector3<f64>,
    /// When the move starts, seconds of flight time.
    pub t0: f64,
    speed: f64,
    /// Duration of the speed-up (and of the slow-down), seconds.
    t_acc: f64,
    /// How long the move takes from rest to rest, seconds.
    pub duration: f64,
}

impl Segment {
    /// The fastest such move from `a` to `b` under `speed` and peak acceleration `accel`, from rest to rest.
    pub fn new(a: Vector3<f64>, b: Vector3<f64>, t0: f64, speed: f64, accel: f64) -> Segment {
        let l = (b - a).norm();
        // The speed-up lasts 2 v / a_peak and covers v t_acc / 2.
        let v = speed.min((l * accel / 2.0).sqrt());
        let t_acc = if accel > 0.0 { 2.0 * v / accel } else { 0.0 };
        let cruise = if v > 0.0 {
            (l - v * t_acc).max(0.0) / v
        } else {
            0.0
        };
        Segment {
            a,
            b,
            t0,
            speed: v,
            t_acc,
            duration: 2.0 * t_acc + cruise,
        }
    }

    /// Distance, speed and acceleration `tau` seconds into the speed-up.
    fn ramp(&self, tau: f64) -> (f64, f64, f64) {
        let (v, ta) = (self.speed, self.t_acc);
        if ta <= 0.0 {
            return (0.0, 0.0, 0.0);
        }
        let w = TAU / ta;
        (
            v * (tau * tau / (2.0 * ta) + ((w * tau).cos() - 1.0) / (w * w * ta)),
            v * (tau / ta - (w * tau).sin() / TAU),
            v / ta * (1.0 - (w * tau).cos()),
        )
    }

    /// Position, velocity and acceleration at time `t`.
    pub fn sample(&self, t: f64) -> (Vector3<f64>, Vector3<f64>, Vector3<f64>) {
        let d = self.b - self.a;
        let l = d.norm();
        if l == 0.0 || !(t > self.t0 && t < self.t0 + self.duration) {
            let at = if t <= self.t0 { self.a } else { self.b };
            return (at, Vector3::zeros(), Vector3::zeros());
        }
        let u = d / l;
        let tau = t - self.t0;
        let ta = self.t_acc;
        let (s, sv, sa) = if tau < ta {
            self.ramp(tau)
        } else if tau < self.duration - ta {
            (
                0.5 * self.speed * ta + self.speed * (tau - ta),
                self.speed,
                0.0,
            )
        } else {
            let (s, v, a) = self.ramp(self.duration - tau);
            (l - s, v, -a)
        };
        (self.a + u * s.clamp(0.0, l), u * sv, u * sa)
    }
}

/// One step of a vehicle's timeline.
#[derive(Clone, Debug, PartialEq)]
pub enum Leg {
    /// Fly a straight segment.
    Move {
        /// The move, positions and timing.
        segment: Segment,
        /// Heading during the move, radians counter-clockwise from map +x.
        yaw: f64,
    },
    /// Fly a planned path without stopping on the way (a `goal`).
    Path(Arc<SmoothPath>),
    /// Hold a position from `t0` until `until`.
    Hold {
        /// Where to hold, map frame, metres.
        position: Vector3<f64>,
        /// Heading, radians counter-clockwise from map +x.
        yaw: f64,
        /// Start of the hold, seconds of flight time.
        t0: f64,
        /// End of the hold, seconds of flight time; infinite for the hold after the last goal.
        until: f64,
    },
    /// Descend from `from` at [`LANDING_SPEED_M_S`] from `t0` until on the ground, then stop the motors.
    Land {
        /// Where the descent starts, map frame, metres.
        from: Vector3<f64>,
        /// Heading, radians counter-clockwise from map +x.
        yaw: f64,
        /// Start of the descent, seconds of flight time.
        t0: f64,
    },
}

/// Heading rate assumed when turning on the spot before a move, rad/s (below the controller's limit).
pub const TURN_RATE_RAD_S: f64 = 0.8;

/// How long a vehicle holds at each waypoint or path vertex, seconds.
pub const WAYPOINT_DWELL_S: f64 = 1.0;

/// Speed of a landing descent, m/s.
pub const LANDING_SPEED_M_S: f64 = 0.5;

/// What a timeline needs of the planner: a path around obstacles, and whether a point is in its free space (to
/// round the path's corners there).
pub trait Planner {
    /// A polyline from `from` to `to` through free space; its first point is `from` and its last `to`.
    fn plan(
        &mut self,
        from: &Vector3<f64>,
        to: &Vector3<f64>,
    ) -> Result<Vec<Vector3<f64>>, PlanError>;
    /// Whether a vehicle centred at `p` keeps its clearance (after [`Planner::plan`] was called).
    fn is_free(&self, p: &Vector3<f64>) -> bool;
}

/// The kind of a goal, as events name it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum GoalKind {
    /// `kind = "waypoint"`.
    Waypoint,
    /// `kind = "goal"`.
    Goal,
    /// `kind = "hover"`.
    Hover,
    /// `kind = "land"`.
    Land,
}

impl GoalKind {
    /// The kind as the mission file spells it.
    pub fn name(self) -> &'static str {
        match self {
            GoalKind::Waypoint => "waypoint",
            GoalKind::Goal => "goal",
            GoalKind::Hover => "hover",
            GoalKind::Land => "land",
        }
    }
}

/// Where and when a goal of the timeline is due: the flight reports it reached when the vehicle gets there.
#[derive(Clone, Debug, PartialEq)]
pub struct GoalMark {
    /// The goal's number in the mission, from 1.
    pub index: usize,
    /// Its kind.
    pub kind: GoalKind,
    /// Where the vehicle should be when it is reached (a landing: where the descent starts).
    pub target: Vector3<f64>,
    /// When the setpoint gets there (a hover: when it ends; a landing: when the descent starts), seconds.
    pub due_s: f64,
    /// A `goal`'s planned path length, metres: the shortest collision-free path the planner found with the
    /// whole map known (before its corners are rounded).
    pub planned_m: Option<f64>,
}

/// A vehicle's legs, and its goals' marks in mission order.
#[derive(Clone, Debug, PartialEq)]
pub struct Timeline {
    /// The legs, one after the other.
    pub legs: Vec<Leg>,
    /// One per goal.
    pub goals: Vec<GoalMark>,
}

/// The timeline of a vehicle's goals, planned from its start; `planner` plans the `goal` kinds.
pub fn timeline(spec: &VehicleSpec, planner: &mut dyn Planner) -> Result<Timeline, PlanError> {
    let mut laid = Laid {
        legs: Vec::new(),
        at: Vector3::new(spec.start[0], spec.start[1], spec.start[2]),
        yaw: spec.start[3],
        t: 0.0,
    };
    let mut goals = Vec::new();
    let mut planned_m = None;
    let speed_of = |s: &Option<f64>| 0.9 * s.unwrap_or(spec.max_speed_m_s).min(spec.max_speed_m_s);
    for (i, goal) in spec.goals.iter().enumerate() {
        let at = laid.at;
        let kind = match goal {
            Goal::Waypoint {
                position,
                speed_m_s,
            } => {
                let points = [at, Vector3::from(*position)];
                laid.follow(&points, speed_of(speed_m_s), spec.max_accel_m_s2);
                GoalKind::Waypoint
            }
            Goal::Goal {
                position,
                speed_m_s,
            } => {
                let points = planner.plan(&at, &Vector3::from(*position))?;
                planned_m = Some(points.windows(2).map(|w| (w[1] - w[0]).norm()).sum());
                let free = |p: &Vector3<f64>| planner.is_free(p);
                laid.fly_path(&points, (speed_of(speed_m_s), spec.max_accel_m_s2), &free);
                GoalKind::Goal
            }
            Goal::Hover { duration_s } => {
                laid.hold(laid.yaw, laid.t + duration_s.max(0.0));
                GoalKind::Hover
            }
            Goal::Land {} => {
                laid.legs.push(Leg::Land {
                    from: at,
                    yaw: laid.yaw,
                    t0: laid.t,
                });
                goals.push(GoalMark {
                    index: i + 1,
                    kind: GoalKind::Land,
                    target: at,
                    due_s: laid.t,
                    planned_m: None,
                });
                break;
            }
        };
        // A waypoint is due when its move arrives, before the dwell that settles it.
        let due_s = match (kind, laid.legs.last()) {
            (GoalKind::Waypoint, Some(Leg::Hold { t0, .. })) => *t0,
            _ => laid.t,
        };
        goals.push(GoalMark {
            index: i + 1,
            kind,
            target: laid.at,
            due_s,
            planned_m: planned_m.take(),
        });
    }
    if !matches!(laid.legs.last(), Some(Leg::Land { .. })) {
        laid.hold(laid.yaw, f64::INFINITY);
    }
    Ok(Timeline {
        legs: laid.legs,
        goals,
    })
}

/// The legs laid so far, and where they leave the vehicle: its position, heading and time.
struct Laid {
    legs: Vec<Leg>,
    at: Vector3<f64>,
    yaw: f64,
    t: f64,
}

impl Laid {
    /// Holds the position, turned to `yaw`, until `until`.
    fn hold(&mut self, yaw: f64, until: f64) {
        self.legs.push(Leg::Hold {
            position: self.at,
            yaw,
            t0: self.t,
            until,
        });
        self.t = until;
    }

    /// Flies the polyline `points` (its first vertex where the vehicle is) at `speed`: before each segment that
    /// goes somewhere horizontally it turns on the spot to face it, and after each it settles on the vertex.
    fn follow(&mut self, points: &[Vector3<f64>], speed: f64, max_accel: f64) {
        for w in points.windows(2) {
            let (a, b) = (w[0], w[1]);
            let d = b - a;
            if d.xy().norm() > 0.2 {
                let heading = d.y.atan2(d.x);
                let turn = (heading - self.yaw + PI).rem_euclid(TAU) - PI;
                if turn.abs() > 0.05 {
                    // Turn on the spot first: the heading loop is slow, and turning while accelerating would
                    // add the lag of both.
                    self.hold(heading, self.t + turn.abs() / TURN_RATE_RAD_S + 0.5);
                }
                self.yaw = heading;
            }
            let segment = Segment::new(a, b, self.t, speed, max_accel);
            self.t += segment.duration;
            self.legs.push(Leg::Move {
                segment,
                yaw: self.yaw,
            });
            self.at = b;
            // Settle on the vertex before the next move, so that the tracking lag of one segment does not
            // add to the speed of the next.
            self.hold(self.yaw, self.t + WAYPOINT_DWELL_S);
        }
    }

    /// Flies the planned polyline `points` (its first vertex where the vehicle is) without stopping on the way,
    /// its corners rounded in free space, turning to face the way while it goes.
    fn fly_path(
        &mut self,
        points: &[Vector3<f64>],
        (speed, accel): (f64, f64),
        is_free: &dyn Fn(&Vector3<f64>) -> bool,
    ) {
        let path = SmoothPath::new(
            points,
            (speed, accel),
            (self.t, self.yaw, TURN_RATE_RAD_S),
            is_free,
        );
        self.t += path.duration();
        self.at = path.end();
        self.yaw = path.end_yaw();
        self.legs.push(Leg::Path(Arc::new(path)));
    }
}

/// The setpoint of a timeline at time `t`, and whether the vehicle should stop its motors (landed).
pub fn setpoint_at(legs: &[Leg], t: f64, grounded: bool) -> (Setpoint, bool) {
    match leg_at(legs, t) {
        Some(Leg::Move { segment, yaw }) => {
            let (p, v, a) = segment.sample(t);
            (
                Setpoint {
                    position: p,
                    velocity: v,
                    acceleration: a,
                    yaw: *yaw,
                },
                false,
            )
        }
        Some(Leg::Path(path)) => (path.sample(t), false),
        Some(Leg::Hold { position, yaw, .. }) => (Setpoint::hold(*position, *yaw), false),
        Some(Leg::Land { from, yaw, t0 }) => {
            let dz = LANDING_SPEED_M_S * (t - t0).max(0.0);
            let sp = Setpoint {
                position: from - Vector3::new(0.0, 0.0, dz),
                velocity: Vector3::new(0.0, 0.0, -LANDING_SPEED_M_S),
                acceleration: Vector3::zeros(),
                yaw: *yaw,
            };
            (sp, grounded && t > *t0 + 0.5)
        }
        None => (Setpoint::hold(Vector3::zeros(), 0.0), true),
    }
}

/// The leg flown at time `t` (the last one after the timeline's end).
pub fn leg_at(legs: &[Leg], t: f64) -> Option<&Leg> {
    legs.iter()
        .find(|l| match l {
            Leg::Move { segment, .. } => t < segment.t0 + segment.duration,
            Leg::Path(path) => t < path.t0 + path.duration(),
            Leg::Hold { until, .. } => t < *until,
            Leg::Land { .. } => true,
        })
        .or(legs.last())
}

/// When the timeline's last goal is reached (`None` for an endless hold or a landing, known only in flight).
pub fn timeline_end(legs: &[Leg]) -> Option<f64> {
    match legs.last()? {
        Leg::Hold { t0, until, .. } if until.is_infinite() => Some(*t0),
        Leg::Hold { until, .. } => Some(*until),
        Leg::Move { segment, .. } => Some(segment.t0 + segment.duration),
        Leg::Path(path) => Some(path.t0 + path.duration()),
        Leg::Land { .. } => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const BASE: &str = "[[vehicle]]\nname = \"uav\"\nstart = [0.0, 0.0, 1.5, 0.0]\n";

    fn check(extra: &str) -> Result<(), String> {
        // Tables after the vehicle's own keys: mission-level keys go before it.
        let (top, vehicle) = extra.split_once("|").unwrap_or(("", extra));
        let m: Mission = toml::from_str(&format!("{top}\n{BASE}{vehicle}")).unwrap();
        m.check()
    }

    /// Every number a mission gives must be finite and in range: a NaN waypoint used to panic deep in the flight,
    /// and a NaN planner voxel planned a one-cell grid that reported a goal reached without flying to it.
    #[test]
    fn non_finite_and_out_of_range_values_are_refused_naming_the_field() {
        assert!(check("").is_ok());
        for (extra, expect) in [
            (
                "[[vehicle.goal]]\nkind = \"waypoint\"\nposition = [nan, 5.0, 1.0]\n",
                "goal 1: position must be finite",
            ),
            (
                "[[vehicle.goal]]\nkind = \"waypoint\"\nposition = [1e300, 5.0, 1.0]\n",
                "goal 1: position must be finite and within 1e8 m",
            ),
            (
                "[[vehicle.goal]]\nkind = \"goal\"\nposition = [1.0, 5.0, 1.0]\nspeed_m_s = -1.0\n",
                "goal 1: speed_m_s",
            ),
            (
                "[[vehicle.goal]]\nkind = \"hover\"\nduration_s = nan\n",
                "goal 1: hover duration_s",
            ),
            (
                "[[vehicle.sensor]]\nname = \"l\"\npreset = \"avia\"\nmount = [0.0, 0.0, nan, 0.0, 0.0, 0.0]\n",
                "sensor l: mount must be finite",
            ),
            (
                "[[vehicle.sensor]]\nname = \"l\"\npreset = \"avia\"\n[[vehicle.sensor]]\nname = \"l\"\npreset = \"vlp16\"\n",
                "two sensors are named \"l\"",
            ),
            (
                "[[vehicle.goal]]\nkind = \"hover\"\nduration_s = -5.0\n",
                "hover duration_s must be from 0",
            ),
            (
                "max_speed_m_s = -1.0\n",
                "max_speed_m_s must be above 0 and at most 100, got -1",
            ),
            (
                "max_speed_m_s = 1e9\n",
                "max_speed_m_s must be above 0 and at most 100, got 1000000000",
            ),
            // A sensor's name makes its topic and frame: `/uav/a b/points` is no ROS name.
            (
                "[[vehicle.sensor]]\nname = \"a b\"\npreset = \"avia\"\n",
                "sensor name \"a b\"",
            ),
            (
                "[[vehicle.sensor]]\nname = \"li/dar\"\npreset = \"avia\"\n",
                "sensor name \"li/dar\"",
            ),
            (
                "[[vehicle.sensor]]\nname = \"\"\npreset = \"avia\"\n",
                "sensor name \"\"",
            ),
            ("planner_voxel_m = nan|", "planner_voxel_m"),
            ("planner_voxel_m = 0.0|", "planner_voxel_m"),
            (
                "|[[obstacles]]\nkind = \"drone\"\ncount = 100000\n",
                "obstacles[0]: count 100000",
            ),
            (
                "|[[obstacles]]\nkind = \"cube\"\nsize_m = nan\n",
                "obstacles[0]: size_m",
            ),
            (
                "|[[obstacles]]\nkind = \"cube\"\nspeed_m_s = inf\n",
                "obstacles[0]: speed_m_s",
            ),
            (
                "|[[obstacles]]\nkind = \"drone\"\ncount = 600\n[[obstacles]]\nkind = \"cube\"\ncount = 600\n",
                "1200 obstacles in all",
            ),
        ] {
            let err = check(extra).expect_err(extra);
            assert!(err.contains(expect), "{extra}: {err}");
        }
        // A land goal takes no keys: "land at X" must not pass as landing where the vehicle is.
        let land = |keys: &str| {
            toml::from_str::<Mission>(&format!("{BASE}[[vehicle.goal]]\nkind = \"land\"\n{keys}"))
        };
        assert!(land("").is_ok());
        let err = land("position = [1.0, 2.0, 0.0]\n")
            .unwrap_err()
            .to_string();
        assert!(err.contains("unknown field `position`"), "{err}");
        // From a file, the message names the key's own line and its table, not the goal's header, and a
        // waypoint after the land goal does not confuse it.
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("m.toml");
        let text = format!(
            "{BASE}[[vehicle.goal]]\nkind = \"land\"\nposition = [1.0, 2.0, 0.0]\n\
             [[vehicle.goal]]\nkind = \"waypoint\"\nposition = [0.0, 1.0, 0.0]\n"
        );
        std::fs::write(&path, &text).unwrap();
        let line = text
            .lines()
            .position(|l| l.starts_with("position = [1.0"))
            .unwrap()
            + 1;
        let err = Mission::load(&path).unwrap_err().to_string();
        assert!(
            err.contains(&format!("line {line}, field `vehicle.goal.position`"))
                && err.contains("takes no keys besides its kind"),
            "{err}"
        );
    }
}
