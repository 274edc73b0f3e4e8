//! What a preparation did: each stage's [`StageReport`], and the [`MapReport`] saved beside a map
//! (`map.report.json`), written and read back through that one type.

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::prepare::Recipe;
use crate::{Error, Result};

/// The report of one stage: counts, the reasons points were removed, figures worth keeping, warnings, time.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct StageReport {
    /// Stage name as in recipes, e.g. `filters.sor`.
    pub stage: String,
    /// Points the stage received.
    pub points_in: usize,
    /// Points the stage passed on.
    pub points_out: usize,
    /// Why points were removed, with how many for each reason.
    pub removed: Vec<(String, usize)>,
    /// Figures of the stage (e.g. SOR's mu, sigma, threshold), by name. A figure that is not finite (normals'
    /// unbounded `radius_m`) is `null` in JSON, which has no infinity, and reads back as +inf.
    #[serde(deserialize_with = "figures")]
    pub figures: Vec<(String, f64)>,
    /// Things the user should know (e.g. "removed 83% of the points").
    pub warnings: Vec<String>,
    /// Wall-clock time of the stage, seconds.
    pub seconds: f64,
}

impl StageReport {
    /// A report for `stage` (its recipe name) that received `points_in` points; [`StageReport::finish`] completes it.
    pub fn new(stage: &str, points_in: usize) -> StageReport {
        StageReport {
            stage: stage.to_string(),
            points_in,
            ..StageReport::default()
        }
    }

    /// Record the output count, and warn when the stage removed more than half of the points (users were
    /// surprised by silent heavy downsampling in MARSIM).
    pub fn finish(&mut self, points_out: usize, started: std::time::Instant) {
        self.points_out = points_out;
        self.seconds = started.elapsed().as_secs_f64();
        if self.points_in > 0 && points_out * 2 < self.points_in {
            self.warnings.push(format!(
                "{} removed {:.1}% of the points ({} of {})",
                self.stage,
                100.0 * (self.points_in - points_out) as f64 / self.points_in as f64,
                self.points_in - points_out,
                self.points_in
            ));
        }
    }

    /// Record a figure of the stage (a parameter in effect or a measured value), shown by `aerie info` and in the
    /// map's report.
    pub fn figure(&mut self, name: &str, value: f64) {
        self.figures.push((name.to_string(), value));
    }
}

/// Figures whose non-finite values serde_json wrote as `null`: read back as +inf, the one non-finite value a stage
/// records (an unbounded radius).
fn figures<'de, D: serde::Deserializer<'de>>(
    d: D,
) -> std::result::Result<Vec<(String, f64)>, D::Error> {
    let figures = Vec::<(String, Option<f64>)>::deserialize(d)?;
    Ok(figures
        .into_iter()
        .map(|(name, value)| (name, value.unwrap_or(f64::INFINITY)))
        .collect())
}

/// What a map's report says of its preparation, besides the map itself: what the command line's `prepare` and the
/// app hold when they save a map ([`crate::export::write_map`]).
#[derive(Clone, Copy, Debug)]
pub struct PrepareSummary<'a> {
    /// The recipe the map was prepared with.
    pub recipe: &'a Recipe,
    /// Each stage's report, in the order they ran.
    pub reports: &'a [StageReport],
    /// What the preparation warned of, besides its stages' own warnings.
    pub warnings: &'a [String],
    /// Points read from the inputs.
    pub points_in: usize,
    /// Wall-clock time of the whole preparation, seconds.
    pub seconds: f64,
}

/// The report written beside a map as `<name>.report.json`: the map, its points in and out, the recipe, each
/// stage's report and the warnings. The one type the report is written from and read back into: every key is
/// required, so a report whose keys were renamed is an error, never a report of zeros.
///
/// The fields are in the order of the file's first writer (`serde_json::json!`); [`MapReport::to_json`] writes
/// through a `serde_json::Value`, whose objects sort their keys as that writer's did, so the bytes are those of the
/// reports written before this type existed.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct MapReport {
    /// The map's path as it was written (`Path::display`, so lossy for a name that is not UTF-8).
    pub map: String,
    /// Points read from the inputs.
    pub points_in: usize,
    /// Points in the map.
    pub points_out: usize,
    /// Wall-clock time of the whole preparation, seconds.
    pub seconds: f64,
    /// The recipe the map was prepared with.
    pub recipe: Recipe,
    /// Each stage's report, in the order they ran.
    pub stages: Vec<StageReport>,
    /// What the preparation warned of, besides its stages' own warnings.
    pub warnings: Vec<String>,
}

impl MapReport {
    /// The report of the map of `points_out` points written to `map`, prepared as `summary` says.
    pub fn new(map: &Path, points_out: usize, summary: &PrepareSummary) -> MapReport {
        MapReport {
            map: map.display().to_string(),
            points_in: summary.points_in,
            points_out,
            seconds: summary.seconds,
            recipe: summary.recipe.clone(),
            stages: summary.reports.to_vec(),
            warnings: summary.warnings.to_vec(),
        }
    }

    /// Where the report of `map` lies: `map.amap` -> `map.report.json`.
    pub fn path_for(map: &Path) -> PathBuf {
        map.with_extension("report.json")
    }

    /// The report as the JSON text of `<name>.report.json` (pretty-printed, keys sorted).
    pub fn to_json(&self) -> Result<String> {
        let not_json = |e: serde_json::Error| Error::parameter("map report", e.to_string());
        let value = serde_json::to_value(self).map_err(not_json)?;
        serde_json::to_string_pretty(&value).map_err(not_json)
    }

    /// Reads a report from its JSON text; `path` names it in errors, which give the line and column and what was
    /// expected (a missing key is named).
    pub fn from_json(text: &str, path: &Path) -> Result<MapReport> {
        serde_json::from_str(text).map_err(|e| {
            let place = format!("line {} column {}", e.line(), e.column());
            // serde_json ends its message with the same place: keep it once, in the error's own field.
            let message = e.to_string();
            let message = message
                .strip_suffix(&format!(" at {place}"))
                .unwrap_or(&message)
                .to_string();
            Error::format(path, place, message)
        })
    }

    /// The report beside the map `map`: `None` when there is no such file (a map prepared by a library caller, or
    /// copied without it), an error when it cannot be read or is not a report.
    pub fn read_beside(map: &Path) -> Result<Option<MapReport>> {
        let path = MapReport::path_for(map);
        match std::fs::read_to_string(&path) {
            Ok(text) => MapReport::from_json(&text, &path).map(Some),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
            Err(e) => Err(Error::io(&path, e)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A report as `prepare` makes one: the default recipe (its crop box unbounded, written as `null`), a stage
    /// with an infinite figure (also `null`), removals and warnings.
    fn report() -> MapReport {
        let mut normals = StageReport::new("features.normals", 120);
        normals.figure("k", 16.0);
        normals.figure("radius_m", f64::INFINITY);
        normals.removed.push(("no plane".into(), 3));
        normals.warnings.push("a warning".into());
        normals.points_out = 117;
        normals.seconds = 0.25;
        let recipe = Recipe::default();
        let summary = PrepareSummary {
            recipe: &recipe,
            reports: &[normals],
            warnings: &["the map is small".into()],
            points_in: 120,
            seconds: 1.5,
        };
        MapReport::new(Path::new("out/site.amap"), 110, &summary)
    }

    #[test]
    fn a_report_reads_back_as_written() {
        let report = report();
        let text = report.to_json().unwrap();
        assert!(text.contains("\"min\": [\n          null,"), "{text}");
        let back = MapReport::from_json(&text, Path::new("site.report.json")).unwrap();
        assert_eq!(back, report);
        assert_eq!(back.to_json().unwrap(), text);
    }

    /// The keys are sorted at every level, as the reports written with `serde_json::json!` had them.
    #[test]
    fn the_keys_are_in_the_order_reports_always_had() {
        let text = report().to_json().unwrap();
        let at = |key: &str| text.find(&format!("\n  \"{key}\": ")).unwrap();
        let keys = [
            "map",
            "points_in",
            "points_out",
            "recipe",
            "seconds",
            "stages",
            "warnings",
        ];
        assert!(keys.windows(2).all(|w| at(w[0]) < at(w[1])), "{text}");
        assert!(text.find("\"bucket_size_m\"") < text.find("\"resolution_m\": 0.1"));
    }

    /// A renamed or missing key is an error that names the file, the place and the key; nothing reads as zero.
    #[test]
    fn a_renamed_or_missing_key_is_an_error() {
        let text = report().to_json().unwrap();
        let path = Path::new("site.report.json");
        let renamed = text.replace("\"points_in\"", "\"points_read\"");
        let err = MapReport::from_json(&renamed, path)
            .unwrap_err()
            .to_string();
        assert!(
            err.starts_with("site.report.json: line ") && err.contains("missing field `points_in`"),
            "{err}"
        );
        let stage = text.replace("\"points_out\": 117", "\"kept\": 117");
        let err = MapReport::from_json(&stage, path).unwrap_err().to_string();
        assert!(err.contains("missing field `points_out`"), "{err}");
        let err = MapReport::from_json("{}", path).unwrap_err().to_string();
        assert!(err.contains("missing field"), "{err}");
    }

    #[test]
    fn no_report_beside_a_map_is_none_and_a_broken_one_an_error() {
        let dir = tempfile::tempdir().unwrap();
        let map = dir.path().join("m.amap");
        assert!(MapReport::read_beside(&map).unwrap().is_none());
        std::fs::write(dir.path().join("m.report.json"), "{\"map\": 3").unwrap();
        let err = MapReport::read_beside(&map).unwrap_err();
        assert!(matches!(err, Error::Format { .. }), "{err}");
        assert!(err.to_string().contains("m.report.json"), "{err}");
        let report = report();
        std::fs::write(MapReport::path_for(&map), report.to_json().unwrap()).unwrap();
        assert_eq!(MapReport::read_beside(&map).unwrap(), Some(report));
    }
}
