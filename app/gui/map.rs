//! Step 3, the map: its figures, histograms of plane thickness and local density (what the simulator's surface
//! model and footprints depend on), and saving it as .amap with its report, as `aerie prepare` does.

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::Arc;

use aerie_pipeline::Cloud;
use eframe::egui::{self, RichText};
use egui_plot::{Bar, BarChart, Plot};

use super::app::{AerieApp, MapDoc, Step};
use super::widgets::{Dialog, path_field};
use crate::jobs::Job;
use aerie_pipeline::export::write_map;
use aerie_pipeline::report::PrepareSummary;

/// Histograms of the current map.
pub struct MapStats {
    version: u64,
    /// (bin centre in mm, points) over 0..100 mm.
    gamma: Vec<(f64, f64)>,
    no_plane: usize,
    /// (log10 points per m^3 at bin centre, voxels) of 0.5 m voxels.
    density: Vec<(f64, f64)>,
    /// Median points per m^3.
    density_median: f64,
}

#[derive(Default)]
pub struct MapState {
    pub job: Option<Job<PathBuf>>,
    pub save_path: String,
    stats: Option<MapStats>,
}

const DENSITY_VOXEL_M: f64 = 0.5;

fn stats(cloud: &Cloud, version: u64) -> MapStats {
    let mut gamma = vec![0.0; 40];
    let mut no_plane = 0;
    for &g in cloud.gamma().into_iter().flatten() {
        if g.is_finite() {
            gamma[((g * 400.0) as usize).min(39)] += 1.0;
        } else {
            no_plane += 1;
        }
    }
    let mut voxels: HashMap<[i32; 3], u32> = HashMap::new();
    for p in cloud.positions() {
        let key = p.map(|c| (c as f64 / DENSITY_VOXEL_M).floor() as i32);
        *voxels.entry(key).or_default() += 1;
    }
    let per_m3 = |n: u32| n as f64 / DENSITY_VOXEL_M.powi(3);
    let mut d: Vec<f64> = voxels.values().map(|&n| per_m3(n)).collect();
    d.sort_by(f64::total_cmp);
    let density_median = d.get(d.len() / 2).copied().unwrap_or(0.0);
    let mut density = vec![0.0; 30];
    for v in &d {
        density[((v.log10() * 5.0).max(0.0) as usize).min(29)] += 1.0;
    }
    MapStats {
        version,
        gamma: gamma
            .into_iter()
            .enumerate()
            .map(|(i, n)| (i as f64 * 2.5 + 1.25, n))
            .collect(),
        no_plane,
        density: density
            .into_iter()
            .enumerate()
            .map(|(i, n)| ((i as f64 + 0.5) / 5.0, n))
            .collect(),
        density_median,
    }
}

pub fn poll(app: &mut AerieApp) {
    if let Some(r) = app.mapstep.job.as_mut().and_then(Job::poll) {
        app.mapstep.job = None;
        match r {
            Ok(path) => {
                app.info(format!("saved {}", path.display()));
                if let Some(m) = &mut app.map {
                    m.path = Some(path);
                }
            }
            Err(e) => app.error(e),
        }
    }
}

/// Saves the map (and its report) to `path` in the background.
pub fn start_save(app: &mut AerieApp, path: PathBuf) {
    let Some(m) = &app.map else { return };
    if path.extension().and_then(|e| e.to_str()) != Some("amap") {
        app.error(format!("a map is saved as .amap, not {}", path.display()));
        return;
    }
    // The map is shared with the job, not copied.
    let map = Arc::clone(&m.packed);
    let (recipe, reports, warnings) = (m.recipe.clone(), m.reports.clone(), m.warnings.clone());
    let (points_in, seconds) = (m.points_in, m.seconds);
    app.mapstep.job = Some(Job::spawn("save map", app.waker(), move |_| {
        let summary = PrepareSummary {
            recipe: &recipe,
            reports: &reports,
            warnings: &warnings,
            points_in,
            seconds,
        };
        write_map(&map, &summary, &path)?;
        Ok(path)
    }));
}

fn histogram(
    ui: &mut egui::Ui,
    id: &str,
    name: &str,
    bars: &[(f64, f64)],
    width: f64,
    x_label: &str,
) {
    let bars: Vec<Bar> = bars
        .iter()
        .map(|&(x, n)| Bar::new(x, n).width(width))
        .collect();
    Plot::new(id)
        .height(110.0)
        .allow_drag(false)
        .allow_zoom(false)
        .allow_scroll(false)
        .x_axis_label(x_label)
        .show(ui, |p| p.bar_chart(BarChart::new(name, bars)));
}

pub fn ui(app: &mut AerieApp, ui: &mut egui::Ui) {
    let Some(m) = &app.map else { return };
    ui.heading("Map");
    figures(ui, m);
    if app
        .mapstep
        .stats
        .as_ref()
        .is_none_or(|s| s.version != m.layer.version)
    {
        app.mapstep.stats = Some(stats(&m.cloud, m.layer.version));
    }
    if let Some(s) = &app.mapstep.stats {
        histograms(ui, s, m.cloud.gamma().is_some());
    }
    ui.separator();
    ui.label("Colour the view by height, intensity, plane thickness or normal above the viewport.");
    save_row(app, ui);
    ui.add_space(8.0);
    if ui.button("Next: simulate ->").clicked() {
        app.step = Step::Simulate;
    }
}

/// The map's size, resolution, buckets and file.
fn figures(ui: &mut egui::Ui, m: &MapDoc) {
    let h = m.packed.view();
    egui::Grid::new("map_figures").show(ui, |ui| {
        ui.label("points");
        ui.label(m.packed.len().to_string());
        ui.end_row();
        ui.label("resolution r_map");
        ui.label(format!("{} m", m.packed.resolution));
        ui.end_row();
        ui.label("buckets");
        ui.label(format!(
            "{} of {:.2} m",
            h.buckets.len(),
            m.packed.bucket_size
        ));
        ui.end_row();
        ui.label("saved as");
        ui.label(
            m.path
                .as_ref()
                .map_or("not saved".into(), |p| p.display().to_string()),
        );
        ui.end_row();
    });
}

/// The plane thickness and local density histograms (no thickness without normals).
fn histograms(ui: &mut egui::Ui, s: &MapStats, has_gamma: bool) {
    ui.label(RichText::new("plane thickness (mm)").strong());
    if has_gamma {
        histogram(ui, "gamma_hist", "points", &s.gamma, 2.5, "mm");
        ui.label(format!(
            "{} points with no plane (thin structures, edges)",
            s.no_plane
        ));
    } else {
        ui.label("not computed (turn on normals in Clean)");
    }
    ui.label(RichText::new("local density (log10 points/m³, 0.5 m voxels)").strong());
    histogram(
        ui,
        "density_hist",
        "voxels",
        &s.density,
        0.2,
        "log10 pts/m³",
    );
    ui.label(format!("median {:.0} points/m³", s.density_median));
}

/// Where to save the map, and the button that saves it.
fn save_row(app: &mut AerieApp, ui: &mut egui::Ui) {
    ui.horizontal(|ui| {
        path_field(
            ui,
            &mut app.mapstep.save_path,
            "map.amap",
            "amap",
            Dialog::Save,
        );
        let enabled = app.mapstep.job.is_none() && !app.mapstep.save_path.trim().is_empty();
        if ui
            .add_enabled(enabled, egui::Button::new("Save .amap"))
            .clicked()
        {
            let p = PathBuf::from(app.mapstep.save_path.trim());
            start_save(app, p);
        }
    });
}
