//! Setting a flight up from its mission: each vehicle's preset or file, its start (set down on the ground under
//! it), its sensors mounted in the [`Simulator`] with their seeds and topics, the planner that lays its
//! timeline through the map, and the checks that refuse a mission given in another frame.

use std::path::Path;

use nalgebra::{Isometry3, Vector3};

use super::FlightError;
use super::craft::Sensor;
use crate::mission::{self, Goal, Grid, Leg, PlanError, Planner, VehicleSpec};
use crate::render::RenderParams;
use crate::sensor::SensorModel;
use crate::simulator::Simulator;
use crate::trajectory::pose_from_xyz_rpy;
use crate::vehicle::{QuadParams, QuadState, Quadrotor, VehicleError};
use crate::world::World;

/// Refuses a start or goal farther outside the map's box, horizontally, than the map is wide (and than 100 m): a
/// position given in another frame (a local one for a georeferenced map, or the reverse) would otherwise fly in
/// empty space. Heights are free: a map of one point far below stands for an empty world.
pub(super) fn check_near_map(
    v: &VehicleSpec,
    lo: Vector3<f64>,
    hi: Vector3<f64>,
) -> Result<(), FlightError> {
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
pub(super) fn mission_positions(v: &VehicleSpec) -> Vec<(String, Vector3<f64>)> {
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
pub(super) fn resolve<T>(
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

/// The vehicle's parameters: a preset's name or a TOML file beside the mission.
pub(super) fn vehicle_params(v: &VehicleSpec, base: &Path) -> Result<QuadParams, FlightError> {
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
pub(super) fn quad_at_start(world: &mut World, params: &QuadParams, v: &VehicleSpec) -> Quadrotor {
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

pub(super) fn mount_of(m: &[f64; 6]) -> Isometry3<f64> {
    pose_from_xyz_rpy(m[0], m[1], m[2], m[3], m[4], m[5])
}

/// Adds the sensors of vehicle `v` (the `vi`th of the mission, whose seed is `seed`) to `sim` (preset names or
/// files relative to `base`), each with its own seed, and the topic and frame its messages are recorded under.
pub(super) fn mount_sensors(
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
pub(super) struct GridPlanner<'a> {
    pub(super) sim: &'a Simulator,
    /// Every start and goal of the mission, inside the grid whatever the map's bounds.
    pub(super) within: &'a [Vector3<f64>],
    pub(super) voxel: f64,
    pub(super) clearance: f64,
    pub(super) grid: &'a mut Option<(f64, Grid)>,
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

/// A generous end for a timeline that ends in a landing: its start, plus the descent from the landing height
/// to 10 m below it at the landing speed.
pub(super) fn landing_end(legs: &[Leg]) -> f64 {
    match legs.last() {
        Some(Leg::Land { t0, .. }) => t0 + 10.0 / mission::LANDING_SPEED_M_S,
        _ => 60.0,
    }
}

/// Bounds of a map's points in the map frame (zero for an empty map).
pub(super) fn bounds(view: &aerie_pipeline::map::MapView) -> (Vector3<f64>, Vector3<f64>) {
    view.bounds()
        .map_or((Vector3::zeros(), Vector3::zeros()), |(lo, hi)| {
            (Vector3::from(lo), Vector3::from(hi))
        })
}
