//! A flown mission's data files, as `aerie fly`, the demo and the app's Simulate step write them:
//! `<vehicle>.tum` (ground truth), `events.jsonl` ([`super::FlightEvent`]) and `summary.json`, each through a
//! temporary file. `flight.mcap` (and rosbag2's `metadata.yaml`) are the recorder's
//! ([`super::Flight::record_to`]). The picture of the flight (`flight.png`) is the application's: simcore draws
//! no pictures.

use std::io::Write;
use std::path::Path;

use aerie_pipeline::io::atomic::{io_err, write_atomic};

use super::{Flight, FlightError, events};
use crate::record::write_tum;

/// Where a flight came from and how long it took, for summary.json.
#[derive(Clone, Debug)]
pub struct RunInfo {
    /// The map, as the user named it.
    pub map: String,
    /// The mission file, as the user named it (or what made the mission, e.g. "the app's Simulate step").
    pub mission: String,
    /// The seed flown.
    pub seed: u64,
    /// Wall time of the flight, seconds.
    pub wall_s: f64,
}

/// Writes the trajectories, events and summary of `flight` into `dir` (which must exist).
pub fn write_run(dir: &Path, flight: &Flight, info: &RunInfo) -> Result<(), FlightError> {
    for (name, track) in flight.tracks() {
        let poses: Vec<_> = track.iter().map(|(t, p, _)| (*t, *p)).collect();
        write_tum(&dir.join(format!("{name}.tum")), &poses)?;
    }
    write_text(&dir.join("events.jsonl"), &events::jsonl(flight.events()))?;
    let summary = serde_json::json!({
        "map": info.map,
        "mission": info.mission,
        "seed": info.seed,
        "simulated_s": flight.time(),
        "wall_s": info.wall_s,
        "real_time_factor": flight.time() / info.wall_s.max(1e-9),
        "collisions": flight.collisions().count(),
        "vehicles": flight.summary(),
    });
    let text = serde_json::to_string_pretty(&summary).unwrap_or_default() + "\n";
    write_text(&dir.join("summary.json"), &text)?;
    Ok(())
}

fn write_text(path: &Path, text: &str) -> Result<(), FlightError> {
    write_atomic(path, |f| f.write_all(text.as_bytes()).map_err(io_err(path)))
        .map_err(|e| FlightError::Record(e.into()))
}
