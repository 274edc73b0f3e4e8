//! What vehicles fly in: the static map (for collisions and ground contact) and dynamic obstacles (seen by every
//! LiDAR through [`crate::render::Occluder`], and collidable).
//!
//! Collisions (docs/algorithms.md, section 29; MARSIM only logs them, and only when asked): every physics step the
//! vehicle's sphere is checked against the map's points and the obstacles. Map points are surface samples: the
//! vehicle touches the map where a point lies within its radius. Points below the middle of the landing gear are
//! the ground contact's business, not a collision, unless the vehicle hits them faster than
//! [`HARD_LANDING_M_S`].

mod obstacles;

use aerie_pipeline::features::{Neighbor, NeighborScratch, Neighbors};
use aerie_pipeline::map::MapView;
use nalgebra::{Point3, Vector3};
use serde::Serialize;

pub use obstacles::{MAX_OBSTACLES, ObstacleConfig, ObstacleKind, Obstacles, Shape, Spheres};

/// Touching the ground faster than this (m/s, downward) is a collision, not a landing.
pub const HARD_LANDING_M_S: f64 = 1.5;

/// A collision: when, where the vehicle was, and what it hit.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct CollisionEvent {
    /// When, seconds of flight time.
    pub time_s: f64,
    /// The vehicle's name in the mission.
    pub vehicle: String,
    /// Body centre, map frame.
    pub position: [f64; 3],
    /// The map point or obstacle surface point hit, map frame.
    pub point_hit: [f64; 3],
    /// `map`, or `obstacle N` (its index).
    pub what: String,
}

/// Point queries on a map's points, for collisions and ground contact.
pub struct MapCollider {
    origin: Vector3<f64>,
    index: Option<Neighbors>,
    positions: Vec<[f32; 3]>,
}

impl MapCollider {
    /// Builds the search structure over the map's points (once per flight).
    pub fn new(map: &MapView) -> MapCollider {
        let positions = map.positions.to_vec();
        MapCollider {
            origin: Vector3::from(map.origin),
            index: Neighbors::for_knn(&positions, 1).ok(),
            positions,
        }
    }

    fn local(&self, p: &Vector3<f64>) -> [f32; 3] {
        let l = p - self.origin;
        [l.x as f32, l.y as f32, l.z as f32]
    }

    fn world(&self, i: u32) -> Vector3<f64> {
        let p = self.positions.get(i as usize).copied().unwrap_or([0.0; 3]);
        self.origin + Vector3::new(p[0] as f64, p[1] as f64, p[2] as f64)
    }

    /// The map point nearest to `p` within `radius`, with its distance.
    pub fn nearest_within(&self, p: &Vector3<f64>, radius: f64) -> Option<(Vector3<f64>, f64)> {
        let index = self.index.as_ref()?;
        let mut out = Vec::<Neighbor>::new();
        index.knn(self.local(p), 1, Some(radius as f32), &mut out);
        out.first()
            .map(|n| (self.world(n.index), (n.dist2 as f64).sqrt()))
    }

    /// Every map point within `radius` of `p` (map frame).
    pub fn within(
        &self,
        p: &Vector3<f64>,
        radius: f64,
        scratch: &mut NeighborScratch,
    ) -> Vec<Vector3<f64>> {
        let Some(index) = self.index.as_ref() else {
            return Vec::new();
        };
        let mut out = Vec::new();
        index.within(self.local(p), radius as f32, scratch, &mut out);
        out.iter().map(|n| self.world(n.index)).collect()
    }

    /// Height of the highest map surface under a vehicle at `p` whose gear reaches `gear` below its centre,
    /// within a footprint of `radius`: `None` when nothing lies within reach (in the air).
    pub fn support_height(
        &self,
        p: &Vector3<f64>,
        radius: f64,
        gear: f64,
        scratch: &mut NeighborScratch,
    ) -> Option<f64> {
        let foot = p - Vector3::new(0.0, 0.0, gear);
        self.within(&foot, radius, scratch)
            .iter()
            .filter(|q| q.z <= foot.z + 0.05 && (q.xy() - p.xy()).norm() <= 0.5 * radius)
            .map(|q| q.z)
            .fold(None, |m: Option<f64>, z| Some(m.map_or(z, |m| m.max(z))))
    }
}

/// The map collider and the dynamic obstacles.
pub struct World {
    /// The map's points, for collisions and ground contact.
    pub map: MapCollider,
    /// The dynamic obstacles.
    pub obstacles: Obstacles,
    scratch: NeighborScratch,
}

impl World {
    /// Builds the search structure over `map`'s points (once per flight) and takes `obstacles`.
    pub fn new(map: &MapView, obstacles: Obstacles) -> World {
        World {
            map: MapCollider::new(map),
            obstacles,
            scratch: NeighborScratch::default(),
        }
    }

    /// The support under a vehicle (see [`MapCollider::support_height`]).
    pub fn support_height(&mut self, p: &Vector3<f64>, radius: f64, gear: f64) -> Option<f64> {
        self.map.support_height(p, radius, gear, &mut self.scratch)
    }

    /// Whether every map point within `radius` of `position` lies below it: what a vehicle meets when it sets
    /// down on the ground, even uneven or sloping, where a wall or an overhang within its radius reaches above
    /// its centre.
    pub fn only_ground_within(&mut self, position: &Vector3<f64>, radius: f64) -> bool {
        self.map
            .within(position, radius, &mut self.scratch)
            .iter()
            .all(|q| q.z < position.z)
    }

    /// Whether a vehicle of `radius` at `position` moving with `velocity` touches the map or an obstacle.
    /// Points under its gear (`gear` below the centre) count only when hit faster than [`HARD_LANDING_M_S`].
    pub fn check_collision(
        &mut self,
        time_s: f64,
        vehicle: &str,
        position: &Vector3<f64>,
        velocity: &Vector3<f64>,
        radius: f64,
        gear: f64,
    ) -> Option<CollisionEvent> {
        let event = |point: Vector3<f64>, what: String| CollisionEvent {
            time_s,
            vehicle: vehicle.to_string(),
            position: [position.x, position.y, position.z],
            point_hit: [point.x, point.y, point.z],
            what,
        };
        let hard = -velocity.z > HARD_LANDING_M_S;
        // The lower half of the gear is the ground contact's (on a slope the ground around the feet rises).
        let floor = position.z - 0.5 * gear;
        let hit = self
            .map
            .within(position, radius, &mut self.scratch)
            .into_iter()
            .filter(|q| hard || q.z > floor)
            .min_by(|a, b| (a - position).norm().total_cmp(&(b - position).norm()));
        if let Some(q) = hit {
            return Some(event(q, "map".into()));
        }
        let p = Point3::from(*position);
        for (i, shape) in self.obstacles.shapes().iter().enumerate() {
            if let Some(q) = shape.touches(&p, radius) {
                return Some(event(q.coords, format!("obstacle {i}")));
            }
        }
        None
    }
}
