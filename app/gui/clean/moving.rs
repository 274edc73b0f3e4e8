//! The Clean step's "remove moving things" (the recipe's `filters.moving`): the option with its voxel size,
//! offered when the files say where their points were seen from (scans with poses), and its preview: the
//! classification run on the files merged as a cleaning merges them, on a background job, the points it would
//! remove painted in a colour of their own, with their count and the warnings about the poses.

use std::sync::Arc;

use aerie_pipeline::Cloud;
use aerie_pipeline::filters::merge;
use aerie_pipeline::filters::moving::{MovingError, MovingParams, Viewpoints, moving_mask};
use aerie_pipeline::prepare::{Recipe, Stage};
use eframe::egui::{self, RichText};

use super::super::action::Action;
use super::super::document::Document;
use super::super::panel::Cx;
use crate::jobs::{Job, JobProgress};

/// How a user gives the poses the stage needs, said after what is missing.
const HOW: &str = "Give scans with poses (E57 scan poses, one PCD per scan with its VIEWPOINT), or on the command \
                   line `aerie prepare --remove-moving --poses FILE`.";

/// What the preview's job found.
pub struct MovingFound {
    /// Per file, in order: the points the stage would remove.
    masks: Vec<Vec<bool>>,
    /// What the stage warned about (poses that do not fit the points).
    warnings: Vec<String>,
}

/// The preview shown last, for the files it ran on.
pub struct MovingShown {
    /// Points the stage would remove.
    pub removed: usize,
    /// Points it classified.
    pub total: usize,
    /// What it warned about.
    pub warnings: Vec<String>,
    /// [`Document::files_revision`] when it ran.
    revision: u64,
}

/// The preview of `filters.moving`: its job and what it last showed.
#[derive(Default)]
pub struct MovingPreview {
    job: Option<Job<MovingFound>>,
    shown: Option<MovingShown>,
}

impl MovingPreview {
    /// What the last preview found, while the files are those it ran on.
    pub fn shown(&self, doc: &Document) -> Option<&MovingShown> {
        self.shown
            .as_ref()
            .filter(|s| s.revision == doc.files_revision())
    }

    /// Forgets what the last preview found (its marks were cleared).
    pub fn clear(&mut self) {
        self.shown = None;
    }

    /// Classifies the points of every file as `filters.moving` would, on a background job.
    pub fn start(&mut self, cx: &Cx<'_>, params: MovingParams) {
        let clouds: Vec<Arc<Cloud>> = cx
            .doc
            .files()
            .iter()
            .map(|f| Arc::clone(&f.cloud))
            .collect();
        self.job = Some(Job::spawn("moving things preview", cx.waker(), move |p| {
            classify(&clouds, &params, p)
        }));
    }

    /// Takes in the job's result: paints the points and says how many.
    pub fn poll(&mut self, cx: &mut Cx<'_>) {
        let Some(r) = self.job.as_mut().and_then(Job::poll) else {
            return;
        };
        self.job = None;
        let found = match r {
            Ok(f) => f,
            Err(e) => return cx.error(e),
        };
        let removed = found.masks.iter().flatten().filter(|d| **d).count();
        let total = found.masks.iter().map(Vec::len).sum();
        cx.info(format!(
            "removing moving things would drop {removed} of {total} points (shown in white)"
        ));
        for w in &found.warnings {
            cx.error(format!("warning: {w}"));
        }
        cx.send(Action::ShowMoving(found.masks));
        self.shown = Some(MovingShown {
            removed,
            total,
            warnings: found.warnings,
            revision: cx.doc.files_revision(),
        });
    }

    /// The job running, by name and progress.
    pub fn job(&self) -> Option<(&str, &JobProgress)> {
        self.job.as_ref().map(|j| (j.name.as_str(), j.progress()))
    }

    /// Asks the job to stop.
    pub fn cancel(&self) {
        if let Some(j) = &self.job {
            j.cancel();
        }
    }
}

/// The classification of the files' points, merged in order as a cleaning merges them, split back per file.
fn classify(
    clouds: &[Arc<Cloud>],
    params: &MovingParams,
    p: &JobProgress,
) -> anyhow::Result<MovingFound> {
    let merged;
    let cloud: &Cloud = match clouds {
        [one] => one,
        _ => {
            let inputs = clouds.iter().map(|c| ((**c).clone(), None)).collect();
            merged = merge(inputs, p)?.0;
            &merged
        }
    };
    let views = Viewpoints::from_scans(cloud)?;
    let mask = moving_mask(cloud, &views, params, p)?;
    let mut dynamic = mask.dynamic.into_iter();
    let masks = clouds
        .iter()
        .map(|c| {
            let mut m: Vec<bool> = dynamic.by_ref().take(c.len()).collect();
            m.resize(c.len(), false);
            m
        })
        .collect();
    Ok(MovingFound {
        masks,
        warnings: mask.stats.warnings,
    })
}

/// How many scans with poses the files hold, or, when some file does not say where its points were seen from,
/// a sentence naming the file, what it lacks and how to give it.
pub fn viewpoints_known(doc: &Document) -> Result<usize, String> {
    if doc.files().is_empty() {
        return Err(format!(
            "Needs the scan files, with where each was seen from (a map keeps no scan poses). {HOW}"
        ));
    }
    let mut scans = 0;
    for f in doc.files() {
        let name = f
            .path
            .file_name()
            .unwrap_or(f.path.as_os_str())
            .to_string_lossy();
        let missing = match Viewpoints::from_scans(&f.cloud) {
            Ok(v) => {
                scans += v.len();
                continue;
            }
            Err(MovingError::NoPoses { scans: 0, .. }) => {
                format!("{name} does not say where its points were seen from (no scan poses)")
            }
            Err(MovingError::NoPoses {
                scans,
                without_pose,
            }) => format!("{without_pose} of the {scans} scans of {name} have no pose"),
            Err(e) => format!("{name}: {e}"),
        };
        return Err(format!("{missing}. {HOW}"));
    }
    Ok(scans)
}

/// The option: on or off, its voxel size, and why it is off limits when the files lack poses.
pub fn option_ui(ui: &mut egui::Ui, r: &mut Recipe, known: &Result<usize, String>) {
    let was_on = r.stages.contains(&Stage::Moving);
    // Without poses it cannot be turned on; one left on (a saved or loaded recipe) can still be turned off.
    let on = ui
        .add_enabled_ui(known.is_ok() || was_on, |ui| {
            super::stage_toggle(ui, r, Stage::Moving, "remove moving things")
        })
        .inner;
    if on {
        ui.indent("moving", |ui| {
            ui.horizontal(|ui| {
                ui.label("voxel");
                ui.add(
                    egui::DragValue::new(&mut r.filters.moving.voxel_m)
                        .range(0.02..=1.0)
                        .speed(0.005)
                        .suffix(" m"),
                )
                .on_hover_text(
                    "Edge of the free-space grid: a point goes when another scan saw its voxel empty. \
                     Larger is faster and coarser.",
                );
                if let Ok(scans) = known {
                    ui.label(RichText::new(format!("{scans} scans with poses")).weak());
                }
            });
        });
    }
    if let Err(reason) = known {
        if on {
            let text = format!("Cleaning will stop here: {reason}");
            ui.colored_label(ui.visuals().warn_fg_color, text);
        } else {
            ui.label(RichText::new(reason).weak());
        }
    }
}

/// The preview's count and warnings.
pub fn shown_ui(ui: &mut egui::Ui, shown: &MovingShown) {
    ui.horizontal(|ui| {
        super::super::widgets::swatch(ui, super::super::layers::MOVING_COLOR);
        ui.label(format!(
            "would remove {} of {} points as moving (white)",
            shown.removed, shown.total
        ));
    });
    for w in &shown.warnings {
        ui.colored_label(ui.visuals().warn_fg_color, w);
    }
}

#[cfg(test)]
#[path = "moving_tests.rs"]
mod tests;
