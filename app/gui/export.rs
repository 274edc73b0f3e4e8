//! Step 5, export: every format of `aerie export`, MARSIM's PCD included, through the same writer.

use std::path::PathBuf;
use std::sync::Arc;

use aerie_pipeline::Cloud;
use aerie_pipeline::export::{Exported, PRESETS, export, not_an_input};
use aerie_pipeline::io::Format;
use eframe::egui::{self, RichText};

use super::app::AerieApp;
use super::widgets::{Dialog, path_field};

use crate::jobs::Job;

/// The file written, its points, and what the export did besides (offset, warnings).
pub type Written = (PathBuf, usize, Exported);

#[derive(Default)]
pub struct ExportState {
    pub choice: usize,
    pub path: String,
    pub job: Option<Job<Written>>,
}

/// Writes the map as the chosen format to `path` in the background, after the checks `aerie export` makes: not
/// over a file the app read, and a name whose extension is the chosen format's.
pub fn start(app: &mut AerieApp, path: PathBuf) {
    let Some(m) = &app.map else { return };
    let preset = PRESETS[app.export.choice];
    if let Some(named) = Format::from_path(&path)
        && named != preset.format
    {
        app.error(format!(
            "{} names another format than {}: name it .{}",
            path.display(),
            preset.label,
            preset.extension()
        ));
        return;
    }
    let inputs: Vec<&std::path::Path> = app
        .files
        .iter()
        .map(|f| f.path.as_path())
        .chain(m.path.as_deref())
        .collect();
    if let Err(e) = not_an_input(&path, &inputs) {
        app.error(e.to_string());
        return;
    }
    let cloud: Arc<Cloud> = Arc::clone(&m.cloud);
    app.export.job = Some(Job::spawn("export", app.waker(), move |_| {
        let done = export(&cloud, &path, &preset.options())?;
        Ok((path, cloud.len(), done))
    }));
}

pub fn poll(app: &mut AerieApp) {
    if let Some(r) = app.export.job.as_mut().and_then(Job::poll) {
        app.export.job = None;
        match r {
            Ok((p, n, done)) => {
                let note = done
                    .shift_note()
                    .map(|s| format!("; {s}"))
                    .unwrap_or_default();
                app.info(format!("exported {n} points to {}{note}", p.display()));
                for w in done.warnings {
                    app.error(format!("warning: {}: {w}", p.display()));
                }
            }
            Err(e) => app.error(e),
        }
    }
}

pub fn ui(app: &mut AerieApp, ui: &mut egui::Ui) {
    ui.heading("Export the map");
    let before = app.export.choice;
    for (i, preset) in PRESETS.iter().enumerate() {
        ui.radio_value(&mut app.export.choice, i, preset.label);
    }
    let ext = PRESETS[app.export.choice].extension();
    if app.export.choice != before {
        // The path follows the format chosen, so that the file holds what its name says.
        let path = PathBuf::from(app.export.path.trim());
        if Format::from_path(&path).is_some() {
            app.export.path = path.with_extension(ext).display().to_string();
        }
    }
    ui.horizontal(|ui| {
        path_field(
            ui,
            &mut app.export.path,
            &format!("map.{ext}"),
            ext,
            Dialog::Save,
        );
    });
    let enabled = app.export.job.is_none() && !app.export.path.trim().is_empty();
    if ui
        .add_enabled(enabled, egui::Button::new(RichText::new("Export").strong()))
        .clicked()
    {
        let p = PathBuf::from(app.export.path.trim());
        start(app, p);
    }
    ui.label(RichText::new("The same writers as `aerie export MAP OUT [--for marsim]`.").weak());
}
