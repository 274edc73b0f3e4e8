//! What a stage did, for the preparation report saved beside a map.

use serde::{Deserialize, Serialize};

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
    /// Figures of the stage (e.g. SOR's mu, sigma, threshold), by name.
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
