//! The demo scene's description: `maps/demo/scene.toml` at the repository's top (where the program's shipped
//! scenes and recipes live), embedded at compile time so the program needs no data directory, and parsed into a
//! [`DemoSpec`]. Units as the file says: metres,
//! seconds, degrees; every field is required, so the shipped file documents them all.

// `!(a > b)` is deliberate: a NaN must fail the test it is in.
#![allow(clippy::neg_cmp_op_on_partial_ord)]

use serde::{Deserialize, Serialize};

use super::DemoError;

/// The shipped description, `maps/demo/scene.toml`.
pub const BUILTIN_TOML: &str = include_str!("../../../maps/demo/scene.toml");

/// A demo scene and the scan of it, as `maps/demo/scene.toml` describes them.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DemoSpec {
    /// The ground (`[ground]`).
    pub ground: GroundSpec,
    /// The trees (`[forest]`).
    pub forest: ForestSpec,
    /// The building (`[building]`).
    pub building: BuildingSpec,
    /// The poles and wires (`[power_line]`).
    pub power_line: PowerLineSpec,
    /// The parked vehicles (`[parking]`).
    pub parking: ParkingSpec,
    /// The walking person (`[person]`).
    pub person: PersonSpec,
    /// The stations and the scanner (`[scan]`).
    pub scan: ScanSpec,
}

/// The ground: a smooth height field over a rectangle centred on the origin.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct GroundSpec {
    /// Half sizes of the ground rectangle along x and y, metres.
    pub half_extent: [f64; 2],
    /// Number of plane waves summed.
    pub waves: usize,
    /// Amplitude of each wave, metres.
    pub amplitude: f64,
    /// Range the wavelengths are drawn from, metres.
    pub wavelength: [f64; 2],
    /// Reflectance of the ground, fraction of the light returned at normal incidence (0..1).
    pub reflectance: f64,
}

/// A small forest: trunks (leaning open cylinders) with crowns of spheres.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ForestSpec {
    /// Min and max corner of the area the trunks stand in, metres.
    pub area: [[f64; 2]; 2],
    /// Number of trees wanted. Fewer stand when `spacing` and the clearance kept around stations leave no room (the
    /// layout gives up after 200 candidates per tree).
    pub trees: usize,
    /// Least distance between two trunks, metres.
    pub spacing: f64,
    /// Range the trunk radii are drawn from, metres.
    pub trunk_radius: [f64; 2],
    /// Tree height, metres.
    pub height: [f64; 2],
    /// Lean of the trunk from the vertical, degrees.
    pub lean: [f64; 2],
    /// Range the number of spheres in a crown is drawn from; at least 1.
    pub crown_spheres: [usize; 2],
    /// Range the crown spheres' radii are drawn from, metres.
    pub crown_radius: [f64; 2],
    /// Least height of a crown's underside above the ground, metres.
    pub crown_clearance: f64,
    /// Reflectance of the trunks, fraction of the light returned at normal incidence (0..1).
    pub bark_reflectance: f64,
    /// Reflectance of the crowns, fraction of the light returned at normal incidence (0..1).
    pub leaf_reflectance: f64,
}

/// A building with a corridor through it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct BuildingSpec {
    /// Centre of the footprint (x, y), metres.
    pub centre: [f64; 2],
    /// Outer length (along the corridor) and width, metres.
    pub size: [f64; 2],
    /// Turn about the vertical, degrees (counter-clockwise from +x).
    pub yaw: f64,
    /// Height of the walls above the floor, metres.
    pub wall_height: f64,
    /// Thickness of every wall, metres.
    pub wall_thickness: f64,
    /// Clear width of the corridor and of its end doorways, metres.
    pub corridor_width: f64,
    /// Height of the doorways at the corridor's ends, metres; below `wall_height`.
    pub corridor_door_height: f64,
    /// Width and height of the room doors, metres.
    pub door: [f64; 2],
    /// Width and height of the windows, metres.
    pub window: [f64; 2],
    /// Height of the window sills above the floor, metres.
    pub window_sill: f64,
    /// Windows in each long outer wall, evenly spaced.
    pub windows_per_side: usize,
    /// Reflectance of the walls and the floor, fraction of the light returned at normal incidence (0..1).
    pub reflectance: f64,
    /// Reflectance of the roof, fraction of the light returned at normal incidence (0..1).
    pub roof_reflectance: f64,
}

/// Poles and the wires between them.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PowerLineSpec {
    /// Position (x, y) of the first pole, metres.
    pub from: [f64; 2],
    /// Position (x, y) of the last pole, metres; the others stand evenly spaced between.
    pub to: [f64; 2],
    /// Number of poles; at least 2.
    pub poles: usize,
    /// Height of the pole tops above the ground, metres.
    pub pole_height: f64,
    /// Radius of the poles, metres.
    pub pole_radius: f64,
    /// Wires per span.
    pub wires: usize,
    /// Radius of the wires, metres.
    pub wire_radius: f64,
    /// Sag at mid-span, metres.
    pub sag: f64,
    /// Reflectance of poles, cross-arms and wires, fraction of the light returned at normal incidence (0..1).
    pub reflectance: f64,
}

/// Parked vehicles.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ParkingSpec {
    /// Min and max corner of the parking area, metres; the vehicles stand side by side along x, across the middle
    /// in y.
    pub area: [[f64; 2]; 2],
    /// Number of vehicles.
    pub vehicles: usize,
    /// Length, width, height, metres.
    pub size: [f64; 3],
    /// Range each vehicle's paint reflectance is drawn from.
    pub reflectance: [f64; 2],
}

/// The person walking through the scan.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PersonSpec {
    /// Start and end of the walk; the person walks back and forth between them.
    pub path: [[f64; 2]; 2],
    /// Metres per second.
    pub speed: f64,
    /// Radius of the cylinder that stands for the person, metres.
    pub radius: f64,
    /// Height of the person, metres.
    pub height: f64,
    /// Stations (0-based) during whose scans the person walks; absent otherwise.
    pub during: Vec<usize>,
    /// Reflectance of the person, fraction of the light returned at normal incidence (0..1).
    pub reflectance: f64,
}

/// The terrestrial scan: stations, angular grid and the artefacts.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ScanSpec {
    /// Station positions (x, y); each stands `height` above the ground there.
    pub stations: Vec<[f64; 2]>,
    /// Height of the scanner above the ground at each station, metres.
    pub height: f64,
    /// Angle between neighbouring beams in azimuth and elevation, degrees.
    pub step: f64,
    /// Elevations covered, degrees.
    pub elevation: [f64; 2],
    /// Farthest range a beam returns from, metres.
    pub max_range: f64,
    /// Range at which a surface of reflectance 1 at normal incidence is still detected, metres.
    pub detect_range: f64,
    /// Range noise (1 sigma) at zero range, metres.
    pub range_sigma: f64,
    /// Growth of the range noise per metre of range: sigma = `range_sigma + range_sigma_per_m * range`.
    pub range_sigma_per_m: f64,
    /// Share of beams returning from a random point in the air.
    pub outlier_share: f64,
    /// Chance that a beam next to a depth jump returns a range between the two sides.
    pub mixed_share: f64,
    /// Depth difference between neighbouring beams that makes an edge, metres.
    pub edge_jump: f64,
    /// Seconds one station's turn takes.
    pub duration: f64,
    /// Seconds between the starts of two stations.
    pub interval: f64,
}

impl DemoSpec {
    /// The shipped description (`maps/demo/scene.toml`).
    pub fn builtin() -> DemoSpec {
        // The shipped file is checked by a test; failing here would be a build defect, not a user error.
        DemoSpec::from_toml(BUILTIN_TOML).unwrap_or_else(|e| panic!("maps/demo/scene.toml: {e}"))
    }

    /// Parse and check a description.
    pub fn from_toml(text: &str) -> Result<DemoSpec, DemoError> {
        let spec: DemoSpec = toml::from_str(text).map_err(|e| {
            let line = e
                .span()
                .map(|s| text[..s.start.min(text.len())].matches('\n').count() + 1);
            DemoError::Spec {
                line,
                message: e.message().trim().to_string(),
            }
        })?;
        spec.validate()?;
        Ok(spec)
    }

    /// Check values that parse but make no scene: negative sizes, empty ranges, a grid too fine.
    pub fn validate(&self) -> Result<(), DemoError> {
        self.check_positive()?;
        self.check_ranges()?;
        self.check_layout()?;
        self.check_scan()
    }

    /// Sizes, speeds and ranges that must be positive.
    fn check_positive(&self) -> Result<(), DemoError> {
        let positive = [
            (
                "ground.half_extent",
                self.ground.half_extent[0].min(self.ground.half_extent[1]),
            ),
            ("ground.wavelength", self.ground.wavelength[0]),
            ("forest.spacing", self.forest.spacing),
            ("forest.trunk_radius", self.forest.trunk_radius[0]),
            ("forest.height", self.forest.height[0]),
            ("forest.crown_radius", self.forest.crown_radius[0]),
            (
                "building.size",
                self.building.size[0].min(self.building.size[1]),
            ),
            ("building.wall_height", self.building.wall_height),
            ("building.wall_thickness", self.building.wall_thickness),
            ("building.corridor_width", self.building.corridor_width),
            ("power_line.pole_height", self.power_line.pole_height),
            ("power_line.pole_radius", self.power_line.pole_radius),
            ("power_line.wire_radius", self.power_line.wire_radius),
            (
                "parking.size",
                self.parking
                    .size
                    .iter()
                    .copied()
                    .fold(f64::INFINITY, f64::min),
            ),
            ("person.speed", self.person.speed),
            ("person.radius", self.person.radius),
            ("person.height", self.person.height),
            ("scan.step", self.scan.step),
            ("scan.max_range", self.scan.max_range),
            ("scan.detect_range", self.scan.detect_range),
            ("scan.duration", self.scan.duration),
        ];
        for (field, v) in positive {
            if !(v.is_finite() && v > 0.0) {
                return Err(DemoError::invalid(
                    field,
                    format!("{v} must be a positive number"),
                ));
            }
        }
        Ok(())
    }

    /// `[low, high]` pairs.
    fn check_ranges(&self) -> Result<(), DemoError> {
        let ordered = [
            ("ground.wavelength", self.ground.wavelength),
            ("forest.trunk_radius", self.forest.trunk_radius),
            ("forest.height", self.forest.height),
            ("forest.lean", self.forest.lean),
            ("forest.crown_radius", self.forest.crown_radius),
            ("parking.reflectance", self.parking.reflectance),
            ("scan.elevation", self.scan.elevation),
        ];
        for (field, [lo, hi]) in ordered {
            if !(lo.is_finite() && hi.is_finite() && lo <= hi) {
                return Err(DemoError::invalid(
                    field,
                    format!("[{lo}, {hi}] is not a range [low, high]"),
                ));
            }
        }
        Ok(())
    }

    /// What must fit together: the corridor in the building, the crowns' sphere counts, the ground's waves, the
    /// power line's poles.
    fn check_layout(&self) -> Result<(), DemoError> {
        let b = &self.building;
        if !(b.corridor_width + 4.0 * b.wall_thickness < b.size[1]
            && b.corridor_door_height < b.wall_height)
        {
            return Err(DemoError::invalid(
                "building.corridor_width",
                "the corridor and its doorways must fit inside the building's width and wall height",
            ));
        }
        if self.forest.crown_spheres[0] > self.forest.crown_spheres[1]
            || self.forest.crown_spheres[0] == 0
        {
            return Err(DemoError::invalid(
                "forest.crown_spheres",
                "must be a range [low, high] of at least 1",
            ));
        }
        if self.ground.waves > super::terrain::MAX_WAVES {
            return Err(DemoError::invalid(
                "ground.waves",
                format!("at most {} waves", super::terrain::MAX_WAVES),
            ));
        }
        if self.power_line.poles < 2 {
            return Err(DemoError::invalid(
                "power_line.poles",
                "a line needs at least 2 poles",
            ));
        }
        Ok(())
    }

    /// The scanner's shares of stray and mixed points, its stations, and how many beams a station fires.
    fn check_scan(&self) -> Result<(), DemoError> {
        let shares = [
            ("scan.outlier_share", self.scan.outlier_share),
            ("scan.mixed_share", self.scan.mixed_share),
        ];
        for (field, v) in shares {
            if !(0.0..=1.0).contains(&v) {
                return Err(DemoError::invalid(
                    field,
                    format!("{v} is not a share between 0 and 1"),
                ));
            }
        }
        if self.scan.stations.is_empty() {
            return Err(DemoError::invalid(
                "scan.stations",
                "at least one station is needed",
            ));
        }
        if let Some(&s) = self
            .person
            .during
            .iter()
            .find(|&&s| s >= self.scan.stations.len())
        {
            return Err(DemoError::invalid(
                "person.during",
                format!(
                    "station {s} does not exist (there are {})",
                    self.scan.stations.len()
                ),
            ));
        }
        let rays = (360.0 / self.scan.step)
            * ((self.scan.elevation[1] - self.scan.elevation[0]) / self.scan.step);
        if rays > crate::scene::MAX_RAYS_PER_SCANNER as f64 {
            return Err(DemoError::invalid(
                "scan.step",
                format!(
                    "{} degrees gives {rays:.0} beams per station; use a coarser step",
                    self.scan.step
                ),
            ));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Each group of checks refuses a value that makes no scene, naming the field.
    #[test]
    fn a_scene_that_cannot_be_built_names_the_field() {
        assert!(DemoSpec::builtin().validate().is_ok());
        type Spoil = fn(&mut DemoSpec);
        let cases: [(&str, Spoil); 8] = [
            ("forest.spacing", |s| s.forest.spacing = -1.0),
            ("scan.step", |s| s.scan.step = f64::NAN),
            ("forest.height", |s| s.forest.height = [9.0, 3.0]),
            ("building.corridor_width", |s| {
                s.building.corridor_width = s.building.size[1];
            }),
            ("power_line.poles", |s| s.power_line.poles = 1),
            ("scan.outlier_share", |s| s.scan.outlier_share = 1.5),
            ("person.during", |s| s.person.during = vec![99]),
            ("scan.step", |s| s.scan.step = 1e-4),
        ];
        for (field, spoil) in cases {
            let mut spec = DemoSpec::builtin();
            spoil(&mut spec);
            let e = spec.validate().unwrap_err().to_string();
            assert!(e.contains(&format!("`{field}`")), "{field}: {e}");
        }
    }
}
