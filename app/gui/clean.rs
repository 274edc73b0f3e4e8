//! Step 2, clean: the preparation recipe (the same TOML as `aerie prepare --recipe`) edited, loaded and saved;
//! a preview that paints the points outlier removal would drop; the preparation itself on a background thread,
//! with its per-stage counts.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Instant;

use aerie_pipeline::Error;
use aerie_pipeline::filters::sor::{SorParams, sor_mask};
use aerie_pipeline::filters::{DownsampleMethod, SorCompat};
use aerie_pipeline::prepare::{Prepared, Recipe, Stage, prepare};
use eframe::egui::{self, RichText};

use super::app::{AerieApp, MapDoc, Step};
use super::view::PointLayer;
use super::widgets::{Dialog, path_field};
use crate::jobs::Job;

/// Colour of the points a stage would remove.
pub const REMOVED_COLOR: [u8; 3] = [255, 40, 200];

pub struct PrepareOutcome {
    prepared: Prepared,
    points_in: usize,
    seconds: f64,
    recipe: Recipe,
}

pub struct CleanState {
    pub recipe: Recipe,
    pub recipe_path: String,
    preview: Option<Job<Vec<Vec<bool>>>>,
    pub prepare: Option<Job<PrepareOutcome>>,
    /// Points the preview would remove, of how many.
    pub preview_counts: Option<(usize, usize)>,
}

impl CleanState {
    pub fn new(recipe: Recipe) -> CleanState {
        CleanState {
            recipe,
            recipe_path: String::new(),
            preview: None,
            prepare: None,
            preview_counts: None,
        }
    }

    pub fn busy(&self) -> bool {
        self.preview.is_some() || self.prepare.is_some()
    }

    pub fn running(&self) -> Option<(String, Option<f32>)> {
        let p = self
            .prepare
            .as_ref()
            .map(|j| (j.name.as_str(), j.progress()));
        let p = p.or(self
            .preview
            .as_ref()
            .map(|j| (j.name.as_str(), j.progress())));
        p.map(|(name, pr)| (format!("{name}: {}", pr.stage_name()), pr.fraction()))
    }

    pub fn cancel(&self) {
        if let Some(j) = &self.preview {
            j.cancel();
        }
        if let Some(j) = &self.prepare {
            j.cancel();
        }
    }

    /// The files changed: an old preview no longer applies.
    pub fn inputs_changed(&mut self) {
        self.preview_counts = None;
    }
}

/// Runs outlier removal's decision (not the removal) on every file, to show what it would drop.
pub fn start_preview(app: &mut AerieApp) {
    let clouds: Vec<_> = app.files.iter().map(|f| Arc::clone(&f.cloud)).collect();
    let params: SorParams = app.clean.recipe.filters.sor.clone();
    app.clean.preview = Some(Job::spawn("outlier preview", app.waker(), move |p| {
        clouds
            .iter()
            .map(|c| Ok(sor_mask(c, &params, p)?.0))
            .collect()
    }));
}

/// Prepares the map from every imported file.
pub fn start_prepare(app: &mut AerieApp) {
    let inputs: Vec<_> = app.files.iter().map(|f| Arc::clone(&f.cloud)).collect();
    let recipe = app.clean.recipe.clone();
    app.clean.prepare = Some(Job::spawn("prepare map", app.waker(), move |p| {
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

pub fn poll(app: &mut AerieApp) {
    if let Some(r) = app.clean.preview.as_mut().and_then(Job::poll) {
        app.clean.preview = None;
        match r {
            Ok(masks) => show_preview(app, masks),
            Err(e) => app.error(e),
        }
    }
    if let Some(r) = app.clean.prepare.as_mut().and_then(Job::poll) {
        app.clean.prepare = None;
        match r {
            Ok(out) => finished(app, out),
            Err(e) => app.error(e),
        }
    }
}

fn show_preview(app: &mut AerieApp, keep_masks: Vec<Vec<bool>>) {
    let (mut removed, mut total) = (0, 0);
    for (f, keep) in app.files.iter_mut().zip(keep_masks) {
        let drop: Vec<bool> = keep.iter().map(|k| !k).collect();
        removed += drop.iter().filter(|d| **d).count();
        total += drop.len();
        f.removed = Some(Arc::new(drop));
    }
    app.clean.preview_counts = Some((removed, total));
    app.info(format!(
        "outlier removal would drop {removed} of {total} points (shown in magenta)"
    ));
    app.recolor();
}

fn finished(app: &mut AerieApp, out: PrepareOutcome) {
    let cloud = match out.prepared.map.to_cloud() {
        Ok(c) => c,
        Err(e) => return app.error(format!("cannot show the prepared map: {e}")),
    };
    let origin = app.origin_for(&cloud);
    let mut layer = PointLayer::from_cloud(&cloud, origin, app.settings.color, None);
    layer.point_size_px = app.settings.point_size_px;
    app.info(format!(
        "prepared a map of {} points from {} in {:.1} s",
        cloud.len(),
        out.points_in,
        out.seconds
    ));
    for w in &out.prepared.warnings {
        app.info(format!("warning: {w}"));
    }
    app.map = Some(MapDoc {
        points_in: out.points_in,
        reports: out.prepared.reports.clone(),
        warnings: out.prepared.warnings.clone(),
        packed: Arc::new(out.prepared.map),
        cloud: Arc::new(cloud),
        recipe: out.recipe,
        layer,
        path: None,
        seconds: out.seconds,
    });
    app.show_raw = false;
    app.step = Step::Map;
}

fn stage_toggle(ui: &mut egui::Ui, recipe: &mut Recipe, stage: Stage, label: &str) -> bool {
    let mut on = recipe.stages.contains(&stage);
    if ui.checkbox(&mut on, label).changed() {
        if on {
            // Keep the canonical order: crop, transform, outliers, downsampling, normals.
            recipe.stages.push(stage);
            recipe.stages.sort_by_key(|s| *s as u8);
        } else {
            recipe.stages.retain(|s| *s != stage);
        }
    }
    on
}

fn recipe_ui(ui: &mut egui::Ui, r: &mut Recipe) {
    ui.horizontal(|ui| {
        ui.label("map resolution r_map");
        ui.add(
            egui::DragValue::new(&mut r.resolution_m)
                .range(0.005..=2.0)
                .speed(0.005)
                .suffix(" m"),
        );
    });
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
        .filter(|s| !matches!(s, Stage::Sor | Stage::Downsample | Stage::Normals))
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

fn recipe_file_ui(app: &mut AerieApp, ui: &mut egui::Ui) {
    ui.horizontal(|ui| {
        path_field(
            ui,
            &mut app.clean.recipe_path,
            "recipe.toml",
            "toml",
            Dialog::Open,
        );
        if ui.button("Load").clicked() {
            let p = PathBuf::from(app.clean.recipe_path.trim());
            match std::fs::read_to_string(&p)
                .map_err(|e| Error::io(&p, e))
                .and_then(|t| Recipe::from_toml(&t, &p))
            {
                Ok(r) => {
                    app.clean.recipe = r;
                    app.info(format!("loaded recipe {}", p.display()));
                }
                Err(e) => app.error(e.to_string()),
            }
        }
        if ui.button("Save").clicked() {
            let p = PathBuf::from(app.clean.recipe_path.trim());
            let r = app.clean.recipe.to_toml().and_then(|text| {
                aerie_pipeline::io::atomic::write_atomic(&p, |f| {
                    std::io::Write::write_all(f, text.as_bytes()).map_err(|e| Error::io(&p, e))
                })
            });
            match r {
                Ok(()) => app.info(format!("saved recipe {}", p.display())),
                Err(e) => app.error(e.to_string()),
            }
        }
    });
}

pub fn ui(app: &mut AerieApp, ui: &mut egui::Ui) {
    ui.heading("Clean");
    let n: usize = app.files.iter().map(|f| f.cloud.len()).sum();
    ui.label(format!("{} file(s), {n} points in", app.files.len()));
    ui.add_space(4.0);
    recipe_ui(ui, &mut app.clean.recipe);
    ui.add_space(4.0);
    ui.label(RichText::new("Recipe file (the same TOML as `aerie prepare --recipe`)").weak());
    recipe_file_ui(app, ui);
    ui.separator();
    let idle = !app.clean.busy();
    ui.horizontal(|ui| {
        if ui
            .add_enabled(
                idle && app.clean.recipe.stages.contains(&Stage::Sor),
                egui::Button::new("Preview outliers"),
            )
            .clicked()
        {
            start_preview(app);
        }
        if app.files.iter().any(|f| f.removed.is_some()) && ui.button("Clear preview").clicked() {
            for f in &mut app.files {
                f.removed = None;
            }
            app.clean.preview_counts = None;
            app.recolor();
        }
    });
    if let Some((removed, total)) = app.clean.preview_counts {
        ui.label(format!(
            "would remove {removed} of {total} points (magenta)"
        ));
    }
    if ui
        .add_enabled(
            idle,
            egui::Button::new(RichText::new("Run cleaning").strong()),
        )
        .clicked()
    {
        match app.clean.recipe.validate() {
            Ok(()) => start_prepare(app),
            Err(e) => app.error(e.to_string()),
        }
    }
    if let Some(m) = &app.map
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
        if m.points_in != n && !app.files.is_empty() {
            ui.colored_label(
                ui.visuals().warn_fg_color,
                "The map was made from other inputs than these: run cleaning again to make it from them.",
            );
        }
        report_table(ui, &m.reports);
    }
}

/// The per-stage counts and times of a preparation.
pub fn report_table(ui: &mut egui::Ui, reports: &[aerie_pipeline::StageReport]) {
    egui::Grid::new("reports").striped(true).show(ui, |ui| {
        for h in ["stage", "in", "out", "s"] {
            ui.label(RichText::new(h).strong());
        }
        ui.end_row();
        for r in reports {
            ui.label(&r.stage);
            ui.label(r.points_in.to_string());
            ui.label(r.points_out.to_string());
            ui.label(format!("{:.2}", r.seconds));
            ui.end_row();
        }
    });
}
