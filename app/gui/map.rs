//! Step 3, the map: its figures, histograms of plane thickness and local density (what the simulator's surface
//! model and footprints depend on), and saving it as .amap with its report, as `aerie prepare` does.

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::Arc;

use aerie_pipeline::Cloud;
use eframe::egui::{self, RichText};
use egui_plot::{Bar, BarChart, Plot};

use super::action::{Action, Step};
use super::document::MapDoc;
use super::panel::{Cx, JobStatus, Panel};
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

/// The map step: its histograms and the job saving it.
#[derive(Default)]
pub struct MapPanel {
    job: Option<Job<PathBuf>>,
    /// Where to save the map.
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

impl MapPanel {
    /// Saves the map (and its report) to `path` in the background.
    fn start_save(&mut self, path: PathBuf, cx: &mut Cx<'_>) {
        let Some(m) = cx.doc.map() else { return };
        if path.extension().and_then(|e| e.to_str()) != Some("amap") {
            cx.error(format!("a map is saved as .amap, not {}", path.display()));
            return;
        }
        // The map is shared with the job, not copied.
        let map = Arc::clone(&m.packed);
        let (recipe, reports, warnings) = (m.recipe.clone(), m.reports.clone(), m.warnings.clone());
        let (points_in, seconds) = (m.points_in, m.seconds);
        self.job = Some(Job::spawn("save map", cx.waker(), move |_| {
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

    /// Where to save the map, and the button that saves it.
    fn save_row(&mut self, ui: &mut egui::Ui, cx: &mut Cx<'_>) {
        ui.horizontal(|ui| {
            path_field(ui, &mut self.save_path, "map.amap", "amap", Dialog::Save);
            let enabled = self.job.is_none() && !self.save_path.trim().is_empty();
            if ui
                .add_enabled(enabled, egui::Button::new("Save .amap"))
                .clicked()
            {
                let p = PathBuf::from(self.save_path.trim());
                self.start_save(p, cx);
            }
        });
    }
}

impl Panel for MapPanel {
    fn poll(&mut self, cx: &mut Cx<'_>) {
        if let Some(r) = self.job.as_mut().and_then(Job::poll) {
            self.job = None;
            match r {
                Ok(path) => {
                    cx.info(format!("saved {}", path.display()));
                    cx.send(Action::MapSaved(path));
                }
                Err(e) => cx.error(e),
            }
        }
    }

    fn job(&self) -> Option<JobStatus> {
        self.job.as_ref().map(|j| JobStatus {
            name: j.name.clone(),
            fraction: None,
        })
    }

    fn cancel(&mut self) {
        if let Some(j) = &self.job {
            j.cancel();
        }
    }

    fn ui(&mut self, ui: &mut egui::Ui, cx: &mut Cx<'_>) {
        let Some(m) = cx.doc.map() else { return };
        let version = cx.doc.map_version();
        ui.heading("Map");
        figures(ui, m);
        if self.stats.as_ref().is_none_or(|s| s.version != version) {
            self.stats = Some(stats(&m.cloud, version));
        }
        if let Some(s) = &self.stats {
            histograms(ui, s, m.cloud.gamma().is_some());
        }
        ui.separator();
        ui.label(
            "Colour the view by height, intensity, plane thickness or normal above the viewport.",
        );
        self.save_row(ui, cx);
        ui.add_space(8.0);
        if ui.button("Next: simulate ->").clicked() {
            cx.send(Action::GoTo(Step::Simulate));
        }
    }
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

#[cfg(test)]
mod tests {
    use egui_kittest::kittest::Queryable;

    use super::super::panel::testing::{doc_with_map, harness};
    use super::*;

    #[test]
    fn the_panel_shows_the_maps_figures_and_refuses_another_extension() {
        let mut h = harness(MapPanel::default(), doc_with_map());
        h.run_steps(2);
        h.get_by_label("400");
        h.get_by_label("not saved");
        h.get_by_label_contains("median");
        h.state_mut().panel.save_path = "map.pcd".into();
        h.run_steps(1);
        h.get_by_label("Save .amap").click();
        h.run_steps(2);
        assert!(h.state().panel.job.is_none());
        assert!(
            matches!(&h.state().actions.sent()[0], Action::Log(l) if l.error && l.text.contains(".amap")),
            "a map is saved as .amap"
        );
    }
}
