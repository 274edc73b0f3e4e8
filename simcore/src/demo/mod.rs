//! The built-in demo: a procedural site and a simulated terrestrial laser scan of it, the raw input a new user
//! without data of their own starts from (`aerie demo`).
//!
//! The site is described by `maps/demo/scene.toml` ([`DemoSpec`], shipped inside the program) and
//! laid out from a seed at run time ([`DemoSite`]): uneven ground, a small forest, a building with a corridor through
//! it, poles and wires, parked vehicles, all exact surfaces from [`crate::scene`]. [`raw_scan`] scans it from several
//! stations with the artefacts of a real scan (range noise, stray outliers, density falling with range, mixed points
//! on silhouettes, a person walking through), and [`write_raw_scan`] writes that scan as a file a user could have
//! brought:
//!
//! ```no_run
//! use aerie_simcore::demo::{DemoConfig, write_raw_scan};
//! let report = write_raw_scan("demo/raw_scan.laz".as_ref(), &DemoConfig::default())?;
//! println!("{} points from {} stations", report.points, report.stations.len());
//! # Ok::<(), aerie_simcore::demo::DemoError>(())
//! ```
//!
//! The file's format follows its extension. LAZ (the default of `aerie demo`) is what most users bring and is
//! compact (13.7 MB for the 2.5 million points of the shipped scene): intensity, GPS time and the station as
//! point source id, but LAS has no standard place for a scanner's pose, so the station poses are only in the
//! [`DemoReport`]. E57 (`.e57`) carries them as scan poses, which the prepared map keeps in its metadata, at
//! about 3.5 times the size (49 MB).

mod layout;
mod scan;
mod site;
mod spec;
mod terrain;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Instant;

use aerie_pipeline::Cloud;
use aerie_pipeline::io::{self, WriteOptions};
use rayon::prelude::*;
use serde::Serialize;

pub use layout::generate;
pub use scan::OUTLIER_CLEARANCE_M;
pub use site::{DemoSite, Hit, Label, Object, Station, Target, Walker};
pub use spec::{
    BUILTIN_TOML, BuildingSpec, DemoSpec, ForestSpec, GroundSpec, ParkingSpec, PersonSpec,
    PowerLineSpec, ScanSpec,
};
pub use terrain::{MAX_WAVES, Terrain, Wave};

/// What went wrong building or writing the demo.
#[derive(Debug, thiserror::Error)]
pub enum DemoError {
    /// The scene description does not parse.
    #[error("demo scene toml{}: {message}", line.map(|l| format!(", line {l}")).unwrap_or_default())]
    Spec {
        /// Line of the error in the toml text (1-based), when the parser knows it.
        line: Option<usize>,
        /// The parser's message.
        message: String,
    },
    /// A value of the scene description is out of range.
    #[error("demo scene field `{field}`: {message}")]
    Invalid {
        /// The field, as `table.key` (`scan.step`).
        field: String,
        /// What is wrong with its value.
        message: String,
    },
    /// Writing the scan failed (the error names the file).
    #[error(transparent)]
    Write(#[from] aerie_pipeline::Error),
}

impl DemoError {
    pub(crate) fn invalid(field: impl Into<String>, message: impl Into<String>) -> DemoError {
        DemoError::Invalid {
            field: field.into(),
            message: message.into(),
        }
    }
}

/// What to generate.
#[derive(Clone, Debug, PartialEq)]
pub struct DemoConfig {
    /// Seed of the layout and of the scan's noise and artefacts. By default 1.
    pub seed: u64,
    /// The site and the scan. By default the shipped `maps/demo/scene.toml`.
    pub spec: DemoSpec,
}

impl Default for DemoConfig {
    fn default() -> Self {
        DemoConfig {
            seed: 1,
            spec: DemoSpec::builtin(),
        }
    }
}

impl DemoConfig {
    /// The shipped scene scanned with beams 1 degree apart instead of 0.25 (16 times fewer points): for tests
    /// and quick looks.
    pub fn preview() -> DemoConfig {
        let mut c = DemoConfig::default();
        c.spec.scan.step = 1.0;
        c
    }
}

/// One station of the scan, for the report.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct StationReport {
    /// Scanner position (the point its beams start from), metres.
    pub position_m: [f64; 3],
    /// Azimuth of the scanner's zero direction, counter-clockwise from +x, degrees.
    pub yaw_deg: f64,
    /// When its turn started, seconds (the points' GPS time is counted from the first station's start).
    pub start_s: f64,
    /// Beams fired: one per azimuth step and elevation step, returned or not.
    pub beams: u64,
    /// Points recorded, artefacts included.
    pub points: usize,
    /// Points on the walking person.
    pub person_points: usize,
}

/// What was generated: figures for the user's report.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct DemoReport {
    /// The seed the site and the scan were generated from.
    pub seed: u64,
    /// The file written, when one was.
    pub path: Option<PathBuf>,
    /// Points in the scan, all stations.
    pub points: usize,
    /// Beams fired, all stations.
    pub beams: u64,
    /// The stations, in scan order.
    pub stations: Vec<StationReport>,
    /// Points by what they lie on (`outlier` and `mixed` are the artefacts).
    pub points_by_label: BTreeMap<Label, usize>,
    /// Surfaces of the site by what they are.
    pub objects_by_label: BTreeMap<Label, usize>,
    /// Wall-clock seconds to lay out and scan the site.
    pub scan_s: f64,
    /// Wall-clock seconds to write the file; 0 when none was written.
    pub write_s: f64,
}

/// The demo scan in memory: the cloud as it would be written, each point's label (what the point lies on: the
/// ground truth a real scan lacks), the site scanned and the report.
pub struct RawScan {
    /// The points as written: positions, intensity, GPS time, the station as point source id, and the station poses
    /// in the metadata.
    pub cloud: Cloud,
    /// What each point lies on, in the cloud's point order.
    pub labels: Vec<Label>,
    /// The site that was scanned.
    pub site: DemoSite,
    /// Figures for the report; `path` is `None` and `write_s` 0 as nothing was written.
    pub report: DemoReport,
}

/// Lay out the site of `config` and scan it from every station.
pub fn raw_scan(config: &DemoConfig) -> Result<RawScan, DemoError> {
    let start = Instant::now();
    config.spec.validate()?;
    let site = generate(&config.spec, config.seed);
    let scans: Vec<_> = (0..site.stations.len())
        .into_par_iter()
        .map(|k| scan::scan_station(&site, &config.spec.scan, k, config.seed))
        .collect();
    let beams: Vec<u64> = scans.iter().map(|s| s.beams).collect();
    let (cloud, labels) = scan::assemble(&site, scans);
    let mut stations = Vec::with_capacity(site.stations.len());
    for (k, (station, scan)) in site.stations.iter().zip(&cloud.meta.scans).enumerate() {
        let range = scan.points.clone();
        stations.push(StationReport {
            position_m: station.position_m,
            yaw_deg: station.yaw_rad.to_degrees(),
            start_s: station.start_s,
            beams: beams[k],
            points: range.len(),
            person_points: labels[range]
                .iter()
                .filter(|&&l| l == Label::Person)
                .count(),
        });
    }
    let mut points_by_label = BTreeMap::new();
    for &l in &labels {
        *points_by_label.entry(l).or_insert(0) += 1;
    }
    let report = DemoReport {
        seed: config.seed,
        path: None,
        points: cloud.len(),
        beams: beams.iter().sum(),
        stations,
        points_by_label,
        objects_by_label: site.object_counts().into_iter().collect(),
        scan_s: start.elapsed().as_secs_f64(),
        write_s: 0.0,
    };
    Ok(RawScan {
        cloud,
        labels,
        site,
        report,
    })
}

/// Scan the demo site and write the raw scan to `path` (format from the extension: `.laz` or `.las` as LAS 1.2
/// with intensity, GPS time and point source id = station; `.e57` with the station poses; any format
/// [`aerie_pipeline::io::write`] knows). A missing directory is created.
pub fn write_raw_scan(path: &Path, config: &DemoConfig) -> Result<DemoReport, DemoError> {
    let scan = raw_scan(config)?;
    let start = Instant::now();
    io::write(&scan.cloud, path, None, &WriteOptions::default())?;
    let mut report = scan.report;
    report.write_s = start.elapsed().as_secs_f64();
    report.path = Some(path.to_path_buf());
    Ok(report)
}
