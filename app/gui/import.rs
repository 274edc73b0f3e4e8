//! Step 1, import: scan files (or a prepared map) from a file dialog, drag-and-drop, a typed path or the recent
//! list, read on a background thread with the same readers as `aerie info`, each file's summary shown.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use aerie_pipeline::io;
use aerie_pipeline::map::PackedMap;
use aerie_pipeline::map::amap::AmapFile;
use aerie_pipeline::prepare::{Recipe, map_read_options};
use aerie_pipeline::{Cloud, CloudSummary, Progress};
use anyhow::Context;
use eframe::egui::{self, RichText};

use super::app::{AerieApp, Imported, MapDoc, Step};
use super::view::PointLayer;
use crate::jobs::Job;
use aerie_pipeline::MapReport;
use aerie_pipeline::export::same_file;

/// What a file turned out to be.
pub enum Loaded {
    Scan {
        path: PathBuf,
        cloud: Cloud,
        info: String,
    },
    Map {
        path: PathBuf,
        packed: Box<PackedMap>,
        cloud: Cloud,
        /// The report beside it (none, or one that does not read), carried over when the map is saved again.
        report: Result<Option<Box<MapReport>>, String>,
    },
}

#[derive(Default)]
pub struct ImportState {
    pub job: Option<Job<Vec<Result<Loaded, String>>>>,
    pub path_text: String,
}

/// The file extensions the dialog offers: every scan format's, and a map's.
fn extensions() -> Vec<&'static str> {
    let scans = io::Format::ALL.into_iter().flat_map(io::Format::extensions);
    scans.copied().chain(["amap"]).collect()
}

/// Reads `paths` in the background; each file fails on its own, with its name in the message.
pub fn start(app: &mut AerieApp, paths: Vec<PathBuf>) {
    if app.import.job.is_some() {
        app.error("an import is already running");
        return;
    }
    let job = Job::spawn("import", app.waker(), move |progress| {
        let mut out = Vec::new();
        for p in paths {
            progress.stage(&format!("read {}", file_name(&p)), 0);
            out.push(load(&p).map_err(|e| crate::errors::error_text(&e)));
            // A reader does not stop part-way; what was read while Cancel was pressed is dropped.
            if progress.is_cancelled() {
                anyhow::bail!("cancelled: no file of this import was added");
            }
        }
        Ok(out)
    });
    app.import.job = Some(job);
}

fn load(path: &Path) -> anyhow::Result<Loaded> {
    let is_map = aerie_pipeline::map::amap::is_map_file(path);
    if is_map {
        let file =
            AmapFile::open(path).with_context(|| format!("cannot open map {}", path.display()))?;
        return Ok(Loaded::Map {
            path: path.to_path_buf(),
            packed: Box::new(file.to_packed_map()),
            cloud: file.to_cloud(),
            report: match MapReport::read_beside(path) {
                Ok(report) => Ok(report.map(Box::new)),
                Err(e) => Err(e.to_string()),
            },
        });
    }
    // Imported scans are kept for the map (the viewer colours by height, intensity or RGB): read without what a
    // map does not store, as `aerie prepare` does; the summary names what the file holds besides.
    let cloud = io::read(path, None, &map_read_options())
        .with_context(|| format!("cannot read {}", path.display()))?;
    let mut info = CloudSummary::of(&cloud).to_string();
    if !cloud.meta.dropped.is_empty() {
        info.push_str(&format!(
            "  not read    {}\n",
            cloud.meta.dropped.join(", ")
        ));
    }
    Ok(Loaded::Scan {
        path: path.to_path_buf(),
        cloud,
        info,
    })
}

fn file_name(p: &Path) -> String {
    p.file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| p.display().to_string())
}

pub fn poll(app: &mut AerieApp) {
    let Some(result) = app.import.job.as_mut().and_then(Job::poll) else {
        return;
    };
    app.import.job = None;
    // Nothing is shown (`forget_origin_if_empty` has cleared the origin): frame what comes in.
    let first = app.files.is_empty() && app.map.is_none();
    match result {
        Ok(loaded) => {
            for l in loaded {
                match l {
                    Ok(l) => add(app, l),
                    Err(e) => app.error(e),
                }
            }
        }
        Err(e) => app.error(e),
    }
    if first && (!app.files.is_empty() || app.map.is_some()) {
        app.frame_all();
    }
}

/// With nothing shown, the next file sets the origin layers are drawn from (a file far from the last one would
/// otherwise be drawn to f32 rounding around that one's origin). The points clicked for a flight are relative to
/// the old origin, so they go with it.
fn forget_origin_if_empty(app: &mut AerieApp) {
    if app.files.is_empty() && app.map.is_none() {
        app.view_origin = None;
        app.sim.forget_map();
    }
}

/// The map is not one of the files: say that it stays when they are all removed, and offer to close it.
fn leftover_map_ui(app: &mut AerieApp, ui: &mut egui::Ui) {
    let Some(m) = &app.map else {
        return;
    };
    let name = m
        .path
        .as_deref()
        .map(file_name)
        .unwrap_or_else(|| "the map made by cleaning".into());
    ui.label(format!(
        "No scans imported. {name} ({} points) is still open: it is drawn, flown and exported.",
        m.packed.len()
    ));
    let idle = !app.busy();
    if ui
        .add_enabled(idle, egui::Button::new("Close the map"))
        .on_disabled_hover_text("wait for the running job to end")
        .clicked()
    {
        app.map = None;
        app.info(format!("closed {name}"));
        forget_origin_if_empty(app);
    }
}

/// Beyond this distance from what is shown a file is most likely in another coordinate system (the merge's own
/// limit: `filters::merge`).
const FAR_KM: f64 = 16.0;

fn add(app: &mut AerieApp, loaded: Loaded) {
    let path = match &loaded {
        Loaded::Scan { path, .. } | Loaded::Map { path, .. } => path.clone(),
    };
    app.settings.recent.retain(|p| *p != path);
    app.settings.recent.insert(0, path.clone());
    app.settings.recent.truncate(10);
    match loaded {
        Loaded::Scan { path, cloud, info } => add_scan(app, path, cloud, info),
        Loaded::Map {
            path,
            packed,
            cloud,
            report,
        } => add_map(app, path, packed, cloud, report),
    }
}

/// A scan joins the files to clean, unless it is one of them already.
fn add_scan(app: &mut AerieApp, path: PathBuf, cloud: Cloud, info: String) {
    if let Some(twin) = app.files.iter().find(|f| same_file(&f.path, &path)) {
        app.error(format!(
            "{} is already imported (as {}): its points would be merged twice",
            path.display(),
            twin.path.display()
        ));
        return;
    }
    warn_if_far(app, &path, &cloud);
    let layer = layer_for(app, &cloud);
    app.info(format!(
        "imported {} ({} points)",
        path.display(),
        cloud.len()
    ));
    // After the import line, so that the status bar shows it: points may be missing.
    for w in &cloud.meta.read_warnings {
        app.error(format!("warning: {w}"));
    }
    app.files.push(Imported {
        path,
        cloud: Arc::new(cloud),
        info,
        layer,
        removed: None,
    });
    app.clean.inputs_changed();
}

/// The view's layer of a newly opened cloud, in the view's colour mode and point size.
fn layer_for(app: &mut AerieApp, cloud: &Cloud) -> PointLayer {
    let origin = app.origin_for(cloud);
    let mut layer = PointLayer::from_cloud(cloud, origin, app.settings.color, None);
    layer.point_size_px = app.settings.point_size_px;
    layer
}

/// Warns when a scan lies so far from what is shown that it is most likely in another coordinate system.
fn warn_if_far(app: &mut AerieApp, path: &Path, cloud: &Cloud) {
    if let (Some(o), Some((lo, hi))) = (app.view_origin, cloud.bounds()) {
        let centre: [f64; 3] = std::array::from_fn(|k| 0.5 * (lo[k] + hi[k]));
        let km = (0..3)
            .map(|k| (centre[k] - o[k]).powi(2))
            .sum::<f64>()
            .sqrt()
            / 1e3;
        if km > FAR_KM {
            app.error(format!(
                "warning: {} lies {km:.0} km from the files already shown: are they in one coordinate \
                 system? Cleaning will refuse to merge them",
                path.display()
            ));
        }
    }
}

/// A prepared map opens into the Map step, with its report and recipe.
fn add_map(
    app: &mut AerieApp,
    path: PathBuf,
    packed: Box<PackedMap>,
    cloud: Cloud,
    report: Result<Option<Box<MapReport>>, String>,
) {
    let layer = layer_for(app, &cloud);
    app.info(format!(
        "opened map {} ({} points)",
        path.display(),
        cloud.len()
    ));
    let recipe = stored_recipe(&packed).unwrap_or_else(|e| {
        app.info(format!(
            "warning: the map's recipe does not read ({e}); Clean starts from the default recipe"
        ));
        Recipe::default()
    });
    let report = report.unwrap_or_else(|e| {
        app.info(format!(
            "warning: {e}: the map opens without the report of its preparation"
        ));
        None
    });
    let (points_in, seconds, reports, warnings) = match report.map(|r| *r) {
        Some(r) => (r.points_in, r.seconds, r.stages, r.warnings),
        None => (cloud.len(), 0.0, Vec::new(), Vec::new()),
    };
    app.map = Some(MapDoc {
        points_in,
        packed: Arc::new(*packed),
        cloud: Arc::new(cloud),
        reports,
        warnings,
        recipe,
        layer,
        path: Some(path),
        seconds,
    });
    app.step = Step::Map;
}

/// The recipe a map was prepared with: the default one for a map prepared without (by a library caller); a
/// stored recipe that does not read (a newer aerie's) is an error to tell, not silently replaced.
fn stored_recipe(packed: &PackedMap) -> Result<Recipe, String> {
    match packed.metadata().map(|m| m.recipe) {
        Ok(None) => Ok(Recipe::default()),
        Ok(Some(table)) => table
            .try_into::<Recipe>()
            .map_err(|e| e.message().trim().to_string()),
        Err(e) => Err(e.to_string()),
    }
}

pub fn ui(app: &mut AerieApp, ui: &mut egui::Ui) {
    ui.heading("Import scans");
    ui.label("LAS, LAZ, E57, PLY, PCD, XYZ/TXT/CSV, KITTI .bin, or a prepared map (.amap). Several files are merged when cleaned. You can also drop files on the window.");
    ui.horizontal(|ui| {
        if ui
            .button("Open files…")
            .on_hover_text("The desktop's file dialog (xdg-desktop-portal); without one, drop files or type a path")
            .clicked()
        {
            let asked = std::time::Instant::now();
            match rfd::FileDialog::new()
                .add_filter("scans and maps", &extensions())
                .pick_files()
            {
                Some(paths) => start(app, paths),
                // Nobody closes a dialog this fast: there was none to show.
                None if asked.elapsed().as_secs_f64() < 0.3 => app.error(
                    "no file dialog could be shown (this desktop has no xdg-desktop-portal): type a path below \
                     or drop the files on the window",
                ),
                None => {}
            }
        }
    });
    ui.horizontal(|ui| {
        let field = ui.add(
            egui::TextEdit::singleline(&mut app.import.path_text)
                .hint_text("or type a path")
                .desired_width(220.0),
        );
        let entered = field.lost_focus() && ui.input(|i| i.key_pressed(egui::Key::Enter));
        if (ui.button("Import").clicked() || entered) && !app.import.path_text.trim().is_empty() {
            let p = PathBuf::from(app.import.path_text.trim());
            start(app, vec![p]);
        }
    });
    if !app.settings.recent.is_empty() {
        ui.collapsing("Recent", |ui| {
            let mut chosen = None;
            for p in &app.settings.recent {
                if ui.link(p.display().to_string()).clicked() {
                    chosen = Some(p.clone());
                }
            }
            if let Some(p) = chosen {
                start(app, vec![p]);
            }
        });
    }
    ui.separator();
    let mut remove = None;
    for (i, f) in app.files.iter().enumerate() {
        ui.horizontal(|ui| {
            ui.label(RichText::new(file_name(&f.path)).strong());
            ui.label(format!("{} points", f.cloud.len()));
            if ui.small_button("remove").clicked() {
                remove = Some(i);
            }
        });
        egui::CollapsingHeader::new("info")
            .id_salt(("info", i))
            .show(ui, |ui| {
                ui.label(RichText::new(&f.info).monospace().size(11.0));
            });
    }
    if let Some(i) = remove {
        let f = app.files.remove(i);
        app.clean.inputs_changed();
        app.info(format!("removed {}", f.path.display()));
        forget_origin_if_empty(app);
    }
    if app.files.is_empty() {
        leftover_map_ui(app, ui);
    } else {
        ui.add_space(8.0);
        if ui.button("Next: clean ->").clicked() {
            app.step = Step::Clean;
        }
    }
}
