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

use super::action::{Action, Step};
use super::document::MapDoc;
use super::panel::{Cx, JobStatus, Panel};
use crate::jobs::Job;
use aerie_pipeline::MapReport;

/// What a file turned out to be.
pub enum Loaded {
    /// A scan, with `aerie info`'s text for it.
    Scan {
        path: PathBuf,
        cloud: Cloud,
        info: String,
    },
    /// A prepared map, with its points as a cloud for the viewport.
    Map {
        path: PathBuf,
        packed: Box<PackedMap>,
        cloud: Cloud,
        /// The report beside it (none, or one that does not read), carried over when the map is saved again.
        report: Result<Option<Box<MapReport>>, String>,
    },
}

/// The import step: the job reading files, the typed path, the recent files.
#[derive(Default)]
pub struct ImportPanel {
    job: Option<Job<Vec<Result<Loaded, String>>>>,
    /// The path typed in.
    pub path_text: String,
    /// Files opened lately, newest first (kept between runs).
    pub recent: Vec<PathBuf>,
}

/// The file extensions the dialog offers: every scan format's, and a map's.
fn extensions() -> Vec<&'static str> {
    let scans = io::Format::ALL.into_iter().flat_map(io::Format::extensions);
    scans.copied().chain(["amap"]).collect()
}

impl ImportPanel {
    /// The panel, with the recent files of the last run.
    pub fn new(recent: Vec<PathBuf>) -> ImportPanel {
        ImportPanel {
            recent,
            ..ImportPanel::default()
        }
    }

    /// Reads `paths` in the background; each file fails on its own, with its name in the message.
    pub fn start(&mut self, paths: Vec<PathBuf>, cx: &mut Cx<'_>) {
        if self.job.is_some() {
            cx.error("an import is already running");
            return;
        }
        let job = Job::spawn("import", cx.waker(), move |progress| {
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
        self.job = Some(job);
    }
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

impl ImportPanel {
    /// `path` goes on top of the recent files.
    fn remember(&mut self, path: &Path) {
        self.recent.retain(|p| p != path);
        self.recent.insert(0, path.to_path_buf());
        self.recent.truncate(10);
    }

    fn add(&mut self, loaded: Loaded, cx: &mut Cx<'_>) {
        let path = match &loaded {
            Loaded::Scan { path, .. } | Loaded::Map { path, .. } => path.clone(),
        };
        self.remember(&path);
        match loaded {
            // A scan joins the files to clean, unless it is one of them already (the document checks).
            Loaded::Scan { path, cloud, info } => cx.send(Action::AddScan {
                path,
                cloud: Box::new(cloud),
                info,
            }),
            Loaded::Map {
                path,
                packed,
                cloud,
                report,
            } => add_map(cx, path, packed, cloud, report),
        }
    }
}

/// The map is not one of the files: say that it stays when they are all removed, and offer to close it.
fn leftover_map_ui(ui: &mut egui::Ui, cx: &mut Cx<'_>) {
    let Some(m) = cx.doc.map() else {
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
    let idle = !cx.busy;
    if ui
        .add_enabled(idle, egui::Button::new("Close the map"))
        .on_disabled_hover_text("wait for the running job to end")
        .clicked()
    {
        cx.send(Action::CloseMap);
        cx.info(format!("closed {name}"));
    }
}

/// A prepared map opens into the Map step, with its report and recipe.
fn add_map(
    cx: &mut Cx<'_>,
    path: PathBuf,
    packed: Box<PackedMap>,
    cloud: Cloud,
    report: Result<Option<Box<MapReport>>, String>,
) {
    cx.info(format!(
        "opened map {} ({} points)",
        path.display(),
        cloud.len()
    ));
    let recipe = stored_recipe(&packed).unwrap_or_else(|e| {
        cx.info(format!(
            "warning: the map's recipe does not read ({e}); Clean starts from the default recipe"
        ));
        Recipe::default()
    });
    let report = report.unwrap_or_else(|e| {
        cx.info(format!(
            "warning: {e}: the map opens without the report of its preparation"
        ));
        None
    });
    let (points_in, seconds, reports, warnings) = match report.map(|r| *r) {
        Some(r) => (r.points_in, r.seconds, r.stages, r.warnings),
        None => (cloud.len(), 0.0, Vec::new(), Vec::new()),
    };
    cx.send(Action::SetMap(Box::new(MapDoc {
        points_in,
        packed: Arc::new(*packed),
        cloud: Arc::new(cloud),
        reports,
        warnings,
        recipe,
        path: Some(path),
        seconds,
    })));
    cx.send(Action::GoTo(Step::Map));
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

impl Panel for ImportPanel {
    fn poll(&mut self, cx: &mut Cx<'_>) {
        let Some(result) = self.job.as_mut().and_then(Job::poll) else {
            return;
        };
        self.job = None;
        // Nothing is shown (the document forgets its origin when the last thing shown goes): frame what comes in.
        let first = cx.doc.is_empty();
        match result {
            Ok(loaded) => {
                for l in loaded {
                    match l {
                        Ok(l) => self.add(l, cx),
                        Err(e) => cx.error(e),
                    }
                }
            }
            Err(e) => cx.error(e),
        }
        if first {
            cx.send(Action::FrameAll);
        }
    }

    fn job(&self) -> Option<JobStatus> {
        self.job.as_ref().map(|j| JobStatus {
            name: format!("{}: {}", j.name, j.progress().stage_name()),
            fraction: j.progress().fraction(),
        })
    }

    fn cancel(&mut self) {
        if let Some(j) = &self.job {
            j.cancel();
        }
    }

    fn ui(&mut self, ui: &mut egui::Ui, cx: &mut Cx<'_>) {
        ui.heading("Import scans");
        ui.label("LAS, LAZ, E57, PLY, PCD, XYZ/TXT/CSV, KITTI .bin, or a prepared map (.amap). Several files are merged when cleaned. You can also drop files on the window.");
        self.open_ui(ui, cx);
        ui.separator();
        files_ui(ui, cx);
        if cx.doc.files().is_empty() {
            leftover_map_ui(ui, cx);
        } else {
            ui.add_space(8.0);
            if ui.button("Next: clean ->").clicked() {
                cx.send(Action::GoTo(Step::Clean));
            }
        }
    }
}

impl ImportPanel {
    /// The file dialog, the typed path and the recent files.
    fn open_ui(&mut self, ui: &mut egui::Ui, cx: &mut Cx<'_>) {
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
                    Some(paths) => self.start(paths, cx),
                    // Nobody closes a dialog this fast: there was none to show.
                    None if asked.elapsed().as_secs_f64() < 0.3 => cx.error(
                        "no file dialog could be shown (this desktop has no xdg-desktop-portal): type a path below \
                         or drop the files on the window",
                    ),
                    None => {}
                }
            }
        });
        ui.horizontal(|ui| {
            let field = ui.add(
                egui::TextEdit::singleline(&mut self.path_text)
                    .hint_text("or type a path")
                    .desired_width(220.0),
            );
            let entered = field.lost_focus() && ui.input(|i| i.key_pressed(egui::Key::Enter));
            if (ui.button("Import").clicked() || entered) && !self.path_text.trim().is_empty() {
                let p = PathBuf::from(self.path_text.trim());
                self.start(vec![p], cx);
            }
        });
        if !self.recent.is_empty() {
            ui.collapsing("Recent", |ui| {
                let mut chosen = None;
                for p in &self.recent {
                    if ui.link(p.display().to_string()).clicked() {
                        chosen = Some(p.clone());
                    }
                }
                if let Some(p) = chosen {
                    self.start(vec![p], cx);
                }
            });
        }
    }
}

/// Each imported file with its summary and a button that removes it.
fn files_ui(ui: &mut egui::Ui, cx: &mut Cx<'_>) {
    let mut remove = None;
    for (i, f) in cx.doc.files().iter().enumerate() {
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
        let text = format!("removed {}", cx.doc.files()[i].path.display());
        cx.send(Action::RemoveFile(i));
        cx.info(text);
    }
}

#[cfg(test)]
mod tests {
    use egui_kittest::kittest::Queryable;

    use super::super::panel::testing::{doc_with_map, doc_with_scan, harness};
    use super::*;

    #[test]
    fn the_panel_lists_the_files_and_asks_to_remove_one() {
        let mut h = harness(ImportPanel::new(Vec::new()), doc_with_scan());
        h.run_steps(2);
        h.get_by_label("grid.xyz");
        h.get_by_label("400 points");
        h.get_by_label("remove").click();
        h.run_steps(2);
        let sent = h.state().actions.sent();
        assert!(matches!(sent[0], Action::RemoveFile(0)));
        assert!(matches!(&sent[1], Action::Log(l) if l.text == "removed grid.xyz"));
    }

    #[test]
    fn a_map_left_without_scans_can_be_closed() {
        let mut doc = doc_with_map();
        doc.remove_file(0);
        let mut h = harness(ImportPanel::new(vec!["old.las".into()]), doc);
        h.run_steps(2);
        h.get_by_label_contains("No scans imported. the map made by cleaning (400 points)");
        h.get_by_label("Recent");
        h.get_by_label("Close the map").click();
        h.run_steps(2);
        assert!(matches!(h.state().actions.sent()[0], Action::CloseMap));
    }
}
