//! Step 2, clean: the preparation recipe (the same TOML as `aerie prepare --recipe`) edited, loaded and saved;
//! previews that paint the points outlier removal would drop, and those removing moving things would
//! (`moving.rs`), each in a colour of its own; the preparation itself on a background thread, with its
//! per-stage counts.

mod moving;

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Instant;

use aerie_pipeline::Error;
use aerie_pipeline::filters::sor::{SorParams, sor_mask};
use aerie_pipeline::filters::{DownsampleMethod, SorCompat};
use aerie_pipeline::prepare::{Prepared, Recipe, Stage, prepare};
use eframe::egui::{self, RichText};

use super::action::{Action, Step};
use super::document::MapDoc;
use super::layers::REMOVED_COLOR;
use super::panel::{Cx, JobStatus, Panel};
use super::widgets::{Dialog, path_field, swatch};
use crate::jobs::Job;

/// What a preparation gives back.
pub struct PrepareOutcome {
    prepared: Prepared,
    points_in: usize,
    seconds: f64,
    recipe: Recipe,
}

/// The clean step: the recipe, the outlier preview and the preparation.
pub struct CleanPanel {
    /// The recipe edited (kept between runs).
    pub recipe: Recipe,
    /// The recipe file typed in or chosen.
    pub recipe_path: String,
    preview: Option<Job<Vec<Vec<bool>>>>,
    prepare: Option<Job<PrepareOutcome>>,
    /// Points the preview would remove, of how many, and the files they were counted in
    /// ([`Document::files_revision`](super::document::Document::files_revision)).
    preview_counts: Option<(usize, usize, u64)>,
    /// The preview of removing moving things.
    moving: moving::MovingPreview,
}

impl CleanPanel {
    /// The panel, with the recipe of the last run.
    pub fn new(recipe: Recipe) -> CleanPanel {
        CleanPanel {
            recipe,
            recipe_path: String::new(),
            preview: None,
            prepare: None,
            preview_counts: None,
            moving: moving::MovingPreview::default(),
        }
    }

    /// Points the preview would remove, of how many, while the files are those it ran on.
    pub fn preview_counts(&self, doc: &super::document::Document) -> Option<(usize, usize)> {
        self.preview_counts
            .filter(|c| c.2 == doc.files_revision())
            .map(|(removed, total, _)| (removed, total))
    }

    /// Runs outlier removal's decision (not the removal) on every file, to show what it would drop.
    fn start_preview(&mut self, cx: &Cx<'_>) {
        let clouds: Vec<_> = cx
            .doc
            .files()
            .iter()
            .map(|f| Arc::clone(&f.cloud))
            .collect();
        let params: SorParams = self.recipe.filters.sor.clone();
        self.preview = Some(Job::spawn("outlier preview", cx.waker(), move |p| {
            clouds
                .iter()
                .map(|c| Ok(sor_mask(c, &params, p)?.0))
                .collect()
        }));
    }

    /// Prepares the map from every imported file.
    fn start_prepare(&mut self, cx: &Cx<'_>) {
        let inputs: Vec<_> = cx
            .doc
            .files()
            .iter()
            .map(|f| Arc::clone(&f.cloud))
            .collect();
        let recipe = self.recipe.clone();
        self.prepare = Some(Job::spawn("prepare map", cx.waker(), move |p| {
            let started = Instant::now();
            let points_in = inputs.iter().map(|c| c.len()).sum();
            let clouds = inputs.iter().map(|c| ((**c).clone(), None)).collect();
            let prepared = prepare(clouds, &recipe, p)?;
            Ok(PrepareOutcome {
                prepared,
                points_in,
                seconds: started.elapsed().as_secs_f64(),
                recipe,
            })
        }));
    }

    fn show_preview(&mut self, keep_masks: &[Vec<bool>], cx: &mut Cx<'_>) {
        let (mut removed, mut total) = (0, 0);
        let mut drops = Vec::new();
        for keep in keep_masks.iter().take(cx.doc.files().len()) {
            let drop: Vec<bool> = keep.iter().map(|k| !k).collect();
            removed += drop.iter().filter(|d| **d).count();
            total += drop.len();
            drops.push(drop);
        }
        cx.send(Action::ShowRemoved(drops));
        self.preview_counts = Some((removed, total, cx.doc.files_revision()));
        cx.info(format!(
            "outlier removal would drop {removed} of {total} points (shown in magenta)"
        ));
    }
}

fn finished(out: PrepareOutcome, cx: &mut Cx<'_>) {
    let cloud = match out.prepared.map.to_cloud() {
        Ok(c) => c,
        Err(e) => return cx.error(format!("cannot show the prepared map: {e}")),
    };
    cx.info(format!(
        "prepared a map of {} points from {} in {:.1} s",
        cloud.len(),
        out.points_in,
        out.seconds
    ));
    for w in &out.prepared.warnings {
        cx.info(format!("warning: {w}"));
    }
    cx.send(Action::SetMap(Box::new(MapDoc {
        points_in: out.points_in,
        reports: out.prepared.reports.clone(),
        warnings: out.prepared.warnings.clone(),
        packed: Arc::new(out.prepared.map),
        cloud: Arc::new(cloud),
        recipe: out.recipe,
        path: None,
        seconds: out.seconds,
    })));
    cx.send(Action::ShowRaw(false));
    cx.send(Action::GoTo(Step::Map));
}

fn stage_toggle(ui: &mut egui::Ui, recipe: &mut Recipe, stage: Stage, label: &str) -> bool {
    let mut on = recipe.stages.contains(&stage);
    if ui.checkbox(&mut on, label).changed() {
        if on {
            // Keep the canonical order: crop, transform, moving things, outliers, downsampling, normals.
            recipe.stages.push(stage);
            recipe.stages.sort_by_key(|s| canonical_rank(*s));
        } else {
            recipe.stages.retain(|s| *s != stage);
        }
    }
    on
}

/// Where a stage the panel turns on goes in the recipe: removing moving things needs every scan's points as
/// read, so it runs before outlier removal and downsampling (docs/user-guide.md, section 6).
fn canonical_rank(stage: Stage) -> u8 {
    match stage {
        Stage::Crop => 0,
        Stage::Transform => 1,
        Stage::Moving => 2,
        Stage::Sor => 3,
        Stage::Radius => 4,
        Stage::Downsample => 5,
        Stage::Normals => 6,
    }
}

fn recipe_ui(ui: &mut egui::Ui, r: &mut Recipe, poses: &Result<usize, String>) {
    ui.horizontal(|ui| {
        ui.label("map resolution r_map");
        ui.add(
            egui::DragValue::new(&mut r.resolution_m)
                .range(0.005..=2.0)
                .speed(0.005)
                .suffix(" m"),
        );
    });
    moving::option_ui(ui, r, poses);
    if stage_toggle(ui, r, Stage::Sor, "statistical outlier removal") {
        ui.indent("sor", |ui| {
            ui.horizontal(|ui| {
                ui.label("neighbours k");
                ui.add(egui::DragValue::new(&mut r.filters.sor.k).range(2..=256));
                ui.label("std ratio");
                ui.add(
                    egui::DragValue::new(&mut r.filters.sor.std_ratio)
                        .range(-5.0..=10.0)
                        .speed(0.05),
                );
            });
            egui::ComboBox::from_label("convention")
                .selected_text(format!("{:?}", r.filters.sor.compat))
                .show_ui(ui, |ui| {
                    for c in [SorCompat::Pcl, SorCompat::CloudCompare, SorCompat::Open3d] {
                        ui.selectable_value(&mut r.filters.sor.compat, c, format!("{c:?}"));
                    }
                });
        });
    }
    if stage_toggle(ui, r, Stage::Downsample, "downsample to r_map") {
        ui.indent("ds", |ui| {
            egui::ComboBox::from_label("method")
                .selected_text(format!("{:?}", r.filters.downsample.method))
                .show_ui(ui, |ui| {
                    for m in [
                        DownsampleMethod::VoxelNearest,
                        DownsampleMethod::VoxelCentroid,
                        DownsampleMethod::MinDistance,
                    ] {
                        ui.selectable_value(&mut r.filters.downsample.method, m, format!("{m:?}"));
                    }
                });
        });
    }
    if stage_toggle(ui, r, Stage::Normals, "normals and plane thickness") {
        ui.indent("normals", |ui| {
            ui.horizontal(|ui| {
                ui.label("neighbours k");
                ui.add(egui::DragValue::new(&mut r.features.normals.k).range(3..=128));
            });
        });
    }
    // Stages a loaded recipe holds that have no control here still run: say so.
    let others: Vec<String> = r
        .stages
        .iter()
        .filter(|s| {
            !matches!(
                s,
                Stage::Moving | Stage::Sor | Stage::Downsample | Stage::Normals
            )
        })
        .map(|s| stage_name(*s))
        .collect();
    if !others.is_empty() {
        ui.colored_label(
            ui.visuals().warn_fg_color,
            format!(
                "The recipe also runs {} (edit the recipe file to change {}).",
                others.join(", "),
                if others.len() == 1 { "it" } else { "them" }
            ),
        );
    }
}

/// A stage's name as recipes write it (`filters.radius`).
fn stage_name(stage: Stage) -> String {
    serde_json::to_value(stage)
        .ok()
        .and_then(|v| v.as_str().map(str::to_string))
        .unwrap_or_else(|| format!("{stage:?}"))
}

impl CleanPanel {
    fn recipe_file_ui(&mut self, ui: &mut egui::Ui, cx: &mut Cx<'_>) {
        ui.horizontal(|ui| {
            path_field(
                ui,
                &mut self.recipe_path,
                "recipe.toml",
                "toml",
                Dialog::Open,
            );
            if ui.button("Load").clicked() {
                let p = PathBuf::from(self.recipe_path.trim());
                match std::fs::read_to_string(&p)
                    .map_err(|e| Error::io(&p, e))
                    .and_then(|t| Recipe::from_toml(&t, &p))
                {
                    Ok(r) => {
                        self.recipe = r;
                        cx.info(format!("loaded recipe {}", p.display()));
                    }
                    Err(e) => cx.error(e.to_string()),
                }
            }
            if ui.button("Save").clicked() {
                let p = PathBuf::from(self.recipe_path.trim());
                let r = self.recipe.to_toml().and_then(|text| {
                    aerie_pipeline::io::atomic::write_atomic(&p, |f| {
                        std::io::Write::write_all(f, text.as_bytes()).map_err(|e| Error::io(&p, e))
                    })
                });
                match r {
                    Ok(()) => cx.info(format!("saved recipe {}", p.display())),
                    Err(e) => cx.error(e.to_string()),
                }
            }
        });
    }

    /// Preview and clear the outliers and the moving things, run the cleaning.
    fn run_ui(&mut self, ui: &mut egui::Ui, cx: &mut Cx<'_>, poses: &Result<usize, String>) {
        let idle = !self.busy();
        ui.horizontal_wrapped(|ui| {
            if ui
                .add_enabled(
                    idle && self.recipe.stages.contains(&Stage::Sor),
                    egui::Button::new("Preview outliers"),
                )
                .clicked()
            {
                self.start_preview(cx);
            }
            if ui
                .add_enabled(
                    idle && poses.is_ok() && self.recipe.stages.contains(&Stage::Moving),
                    egui::Button::new("Preview moving things"),
                )
                .clicked()
            {
                self.moving.start(cx, self.recipe.filters.moving.clone());
            }
            let marked = |f: &super::document::Imported| f.removed.is_some() || f.moving.is_some();
            if cx.doc.files().iter().any(marked) && ui.button("Clear preview").clicked() {
                cx.send(Action::ClearRemoved);
                self.preview_counts = None;
                self.moving.clear();
            }
        });
        if let Some((removed, total)) = self.preview_counts(cx.doc) {
            ui.horizontal(|ui| {
                swatch(ui, REMOVED_COLOR);
                ui.label(format!(
                    "would remove {removed} of {total} points (magenta)"
                ));
            });
        }
        if let Some(shown) = self.moving.shown(cx.doc) {
            moving::shown_ui(ui, shown);
        }
        if ui
            .add_enabled(
                idle,
                egui::Button::new(RichText::new("Run cleaning").strong()),
            )
            .clicked()
        {
            match self.recipe.validate() {
                Ok(()) => self.start_prepare(cx),
                Err(e) => cx.error(e.to_string()),
            }
        }
    }
}

impl Panel for CleanPanel {
    fn poll(&mut self, cx: &mut Cx<'_>) {
        self.moving.poll(cx);
        if let Some(r) = self.preview.as_mut().and_then(Job::poll) {
            self.preview = None;
            match r {
                Ok(masks) => self.show_preview(&masks, cx),
                Err(e) => cx.error(e),
            }
        }
        if let Some(r) = self.prepare.as_mut().and_then(Job::poll) {
            self.prepare = None;
            match r {
                Ok(out) => finished(out, cx),
                Err(e) => cx.error(e),
            }
        }
    }

    fn job(&self) -> Option<JobStatus> {
        let p = self
            .prepare
            .as_ref()
            .map(|j| (j.name.as_str(), j.progress()));
        let p = p.or(self
            .preview
            .as_ref()
            .map(|j| (j.name.as_str(), j.progress())));
        let p = p.or(self.moving.job());
        p.map(|(name, pr)| JobStatus {
            name: format!("{name}: {}", pr.stage_name()),
            fraction: pr.fraction(),
        })
    }

    fn cancel(&mut self) {
        if let Some(j) = &self.preview {
            j.cancel();
        }
        if let Some(j) = &self.prepare {
            j.cancel();
        }
        self.moving.cancel();
    }

    fn ui(&mut self, ui: &mut egui::Ui, cx: &mut Cx<'_>) {
        ui.heading("Clean");
        let n = cx.doc.points_in_files();
        ui.label(format!("{} file(s), {n} points in", cx.doc.files().len()));
        ui.add_space(4.0);
        let poses = moving::viewpoints_known(cx.doc);
        recipe_ui(ui, &mut self.recipe, &poses);
        ui.add_space(4.0);
        ui.label(RichText::new("Recipe file (the same TOML as `aerie prepare --recipe`)").weak());
        self.recipe_file_ui(ui, cx);
        ui.separator();
        self.run_ui(ui, cx, &poses);
        if let Some(m) = cx.doc.map()
            && !m.reports.is_empty()
        {
            ui.separator();
            ui.label(
                RichText::new(format!(
                    "points in {} -> points out {}",
                    m.points_in,
                    m.packed.len()
                ))
                .strong(),
            );
            if m.points_in != n && !cx.doc.files().is_empty() {
                ui.colored_label(
                    ui.visuals().warn_fg_color,
                    "The map was made from other inputs than these: run cleaning again to make it from them.",
                );
            }
            report_table(ui, &m.reports);
        }
    }
}

/// The per-stage counts and times of a preparation: points in and out, and those removed with the reasons
/// (hover).
pub fn report_table(ui: &mut egui::Ui, reports: &[aerie_pipeline::StageReport]) {
    egui::Grid::new("reports").striped(true).show(ui, |ui| {
        for h in ["stage", "in", "out", "removed", "s"] {
            ui.label(RichText::new(h).strong());
        }
        ui.end_row();
        for r in reports {
            ui.label(&r.stage);
            ui.label(r.points_in.to_string());
            ui.label(r.points_out.to_string());
            if r.removed.is_empty() {
                ui.label("");
            } else {
                let n: usize = r.removed.iter().map(|(_, n)| n).sum();
                let why: Vec<String> = r.removed.iter().map(|(w, n)| format!("{w}: {n}")).collect();
                ui.label(n.to_string()).on_hover_text(why.join("\n"));
            }
            ui.label(format!("{:.2}", r.seconds));
            ui.end_row();
        }
    });
}

#[cfg(test)]
mod tests {
    use egui_kittest::kittest::Queryable;

    use super::super::panel::testing::{doc_with_map, harness};
    use super::*;

    #[test]
    fn the_panel_shows_the_inputs_and_the_last_preparation() {
        let mut h = harness(CleanPanel::new(Recipe::default()), doc_with_map());
        h.run_steps(2);
        h.get_by_label("1 file(s), 400 points in");
        h.get_by_label("points in 400 -> points out 400");
        assert!(h.state().actions.sent().is_empty());
    }

    #[test]
    fn a_bad_recipe_is_an_error_not_a_job() {
        let mut recipe = Recipe::default();
        // No control shows it: the downsampling cell differs from the map's resolution.
        recipe.filters.downsample.resolution_m = 0.77;
        let mut h = harness(CleanPanel::new(recipe), doc_with_map());
        h.run_steps(2);
        h.get_by_label("Run cleaning").click();
        h.run_steps(2);
        assert!(!h.state().panel.busy());
        assert!(
            matches!(&h.state().actions.sent()[0], Action::Log(l) if l.error),
            "a recipe that does not validate is refused"
        );
    }
}
