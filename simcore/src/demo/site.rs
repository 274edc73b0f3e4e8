//! The generated demo site: the ground, the static objects (each a [`Surface`] with what it is and how it
//! reflects), the walking person and the scan stations; exact ray casting over all of them at a given time.

use std::f64::consts::PI;
use std::ops::Range;

use serde::Serialize;

use super::terrain::Terrain;
use crate::scene::Surface;

/// What a surface, or a point of the scan, is.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Label {
    /// The site's ground (the height field).
    Ground,
    /// A tree trunk.
    Trunk,
    /// A sphere of a tree's crown.
    Crown,
    /// A wall of the building.
    Wall,
    /// The building's floor slab.
    Floor,
    /// The building's roof.
    Roof,
    /// A power-line pole or its cross-arm.
    Pole,
    /// A segment of a power-line wire.
    Wire,
    /// A parked vehicle (its body or its cabin).
    Vehicle,
    /// The walking person.
    Person,
    /// A stray return from the air (scan points only).
    Outlier,
    /// A beam that straddled a depth edge and returned a range between the two sides (scan points only).
    Mixed,
}

impl Label {
    /// Every label, in declaration order (the order of `Ord`).
    pub const ALL: [Label; 12] = [
        Label::Ground,
        Label::Trunk,
        Label::Crown,
        Label::Wall,
        Label::Floor,
        Label::Roof,
        Label::Pole,
        Label::Wire,
        Label::Vehicle,
        Label::Person,
        Label::Outlier,
        Label::Mixed,
    ];
}

/// One static surface of the site.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Object {
    /// The surface, world coordinates in metres (not serialized).
    #[serde(skip)]
    pub surface: Surface,
    /// What the surface is.
    pub label: Label,
    /// Fraction of the light returned at normal incidence.
    pub reflectance: f64,
}

/// Someone walking back and forth along a segment during a time window.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Walker {
    /// Start and end (x, y) of the walk, metres; the person turns at each end.
    pub path_m: [[f64; 2]; 2],
    /// Walking speed, metres per second.
    pub speed_m_s: f64,
    /// Radius of the cylinder that stands for the person, metres.
    pub radius_m: f64,
    /// Height of the person, metres (the cylinder starts 5 cm below the ground under them).
    pub height_m: f64,
    /// While the person is in the scene, seconds of scan time.
    pub present_s: Range<f64>,
    /// Reflectance of the person, fraction of the light returned at normal incidence (0..1).
    pub reflectance: f64,
}

/// A scanner set-up: where it stands, where its azimuth zero points, when its turn starts.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Station {
    /// Scanner position (the point its beams start from), world coordinates, metres.
    pub position_m: [f64; 3],
    /// Azimuth of the scanner's x axis, counter-clockwise from world +x, radians.
    pub yaw_rad: f64,
    /// When the station's turn starts, seconds of scan time (0 at the first station's start).
    pub start_s: f64,
}

/// What a ray hit.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Target {
    /// The ground.
    Ground,
    /// An index into [`DemoSite::objects`].
    Object(usize),
    /// The walking person.
    Person,
}

/// The first hit of a ray: its range, what it hit and the surface's unit normal there.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Hit {
    /// Distance from the ray's origin to the hit, metres.
    pub range_m: f64,
    /// What was hit.
    pub target: Target,
    /// Unit normal of the surface at the hit, world frame; outward (away from a cylinder's axis, a sphere's centre,
    /// a box), upward for the ground; it may face away from the ray.
    pub normal: [f64; 3],
}

/// The whole generated site, world coordinates in metres.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct DemoSite {
    /// The ground's height field.
    pub terrain: Terrain,
    /// Reflectance of the ground, fraction of the light returned at normal incidence (0..1).
    pub ground_reflectance: f64,
    /// The static surfaces: trees, building, power line, vehicles; [`Target::Object`] indexes them.
    pub objects: Vec<Object>,
    /// The person walking through the scan.
    pub person: Walker,
    /// The scan stations, in scan order.
    pub stations: Vec<Station>,
    /// The corridor's centre line from 2 m outside one doorway to 2 m outside the other, 1.2 m above the floor
    /// (a route for a flight through the building).
    pub corridor_m: [[f64; 3]; 2],
}

impl Walker {
    /// The person's cylinder at time `time_s`, or `None` while absent. `ground` gives the height under them.
    pub fn at(&self, time_s: f64, ground: &Terrain) -> Option<Surface> {
        if !self.present_s.contains(&time_s) {
            return None;
        }
        let [a, b] = self.path_m;
        let length = (b[0] - a[0]).hypot(b[1] - a[1]);
        let walked = self.speed_m_s * (time_s - self.present_s.start);
        let f = if length > 0.0 {
            let s = walked.rem_euclid(2.0 * length) / length;
            if s <= 1.0 { s } else { 2.0 - s }
        } else {
            0.0
        };
        let (x, y) = (a[0] + (b[0] - a[0]) * f, a[1] + (b[1] - a[1]) * f);
        let z0 = ground.height(x, y) - 0.05;
        Some(Surface::Cylinder {
            x,
            y,
            radius: self.radius_m,
            z0,
            z1: z0 + self.height_m,
        })
    }
}

impl DemoSite {
    /// First hit of the unit ray (`o`, `u`) within `max_range_m` at time `time_s` (the person moves), testing
    /// only the objects `candidates` lists (all objects: `0..objects.len()`).
    pub fn raycast_among(
        &self,
        candidates: impl IntoIterator<Item = usize>,
        o: [f64; 3],
        u: [f64; 3],
        max_range_m: f64,
        time_s: f64,
    ) -> Option<Hit> {
        let mut best: Option<(f64, Target)> = None;
        let nearer = |t: f64, target: Target, best: &mut Option<(f64, Target)>| {
            if t <= max_range_m && best.is_none_or(|(b, _)| t < b) {
                *best = Some((t, target));
            }
        };
        for i in candidates {
            if let Some(t) = self.objects.get(i).and_then(|ob| ob.surface.raycast(o, u)) {
                nearer(t, Target::Object(i), &mut best);
            }
        }
        let person = self.person.at(time_s, &self.terrain);
        if let Some(t) = person.as_ref().and_then(|p| p.raycast(o, u)) {
            nearer(t, Target::Person, &mut best);
        }
        let limit = best.map_or(max_range_m, |(t, _)| t);
        if let Some(t) = self.terrain.raycast(o, u, limit) {
            nearer(t, Target::Ground, &mut best);
        }
        let (t, target) = best?;
        let p = [o[0] + u[0] * t, o[1] + u[1] * t, o[2] + u[2] * t];
        let normal = match target {
            Target::Ground => self.terrain.normal(p[0], p[1]),
            Target::Object(i) => self.objects[i].surface.normal_at(p),
            Target::Person => person.map_or([1.0, 0.0, 0.0], |s| s.normal_at(p)),
        };
        Some(Hit {
            range_m: t,
            target,
            normal,
        })
    }

    /// [`DemoSite::raycast_among`] over every object.
    pub fn raycast(&self, o: [f64; 3], u: [f64; 3], max_range_m: f64, time_s: f64) -> Option<Hit> {
        self.raycast_among(0..self.objects.len(), o, u, max_range_m, time_s)
    }

    /// What a hit is and how it reflects.
    pub fn label_and_reflectance(&self, target: Target) -> (Label, f64) {
        match target {
            Target::Ground => (Label::Ground, self.ground_reflectance),
            Target::Object(i) => self
                .objects
                .get(i)
                .map_or((Label::Ground, 0.0), |o| (o.label, o.reflectance)),
            Target::Person => (Label::Person, self.person.reflectance),
        }
    }

    /// The static surface nearest to `p`: what it is, which object (`None`: the ground) and how far, metres. For
    /// the ground the distance is the height above it times the normal's vertical part (the distance to its
    /// tangent plane: exact to the first order on ground this smooth). The person is not static and not
    /// considered.
    pub fn nearest(&self, p: [f64; 3]) -> (Label, Option<usize>, f64) {
        let n = self.terrain.normal(p[0], p[1]);
        let ground = if self.terrain.covers(p[0], p[1]) {
            ((p[2] - self.terrain.height(p[0], p[1])) * n[2]).abs()
        } else {
            f64::INFINITY
        };
        self.objects
            .iter()
            .enumerate()
            .map(|(i, o)| (o.label, Some(i), o.surface.distance(p)))
            .fold(
                (Label::Ground, None, ground),
                |a, b| if b.2 < a.2 { b } else { a },
            )
    }

    /// Number of objects of each label.
    pub fn object_counts(&self) -> Vec<(Label, usize)> {
        Label::ALL
            .iter()
            .map(|&l| (l, self.objects.iter().filter(|o| o.label == l).count()))
            .filter(|&(_, n)| n > 0)
            .collect()
    }
}

/// `v` turned by `yaw_rad` about z.
pub(crate) fn turn(v: [f64; 2], yaw_rad: f64) -> [f64; 2] {
    let (s, c) = yaw_rad.sin_cos();
    [c * v[0] - s * v[1], s * v[0] + c * v[1]]
}

/// An angle in [0, 2 pi).
pub(crate) fn wrap_angle(a: f64) -> f64 {
    a.rem_euclid(2.0 * PI)
}
