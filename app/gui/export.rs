//! Step 5, export: every format of `aerie export`, MARSIM's PCD included, through the same writer.

use std::path::PathBuf;
use std::sync::Arc;

use aerie_pipeline::Cloud;
use aerie_pipeline::io::{Encoding, Format};
use eframe::egui::{self, RichText};

use super::app::AerieApp;
use super::widgets::{Dialog, path_field};
use crate::cli::export::{Target, write};

use crate::jobs::Job;

/// The choices offered: label, format, encoding, target, file extension.
pub const CHOICES: [(&str, Format, Option<Encoding>, Target, &str); 9] = [
    (
        "MARSIM map (binary PCD, x y z)",
        Format::Pcd,
        Some(Encoding::Binary),
        Target::Marsim,
        "pcd",
    ),
    (
        "PCD binary (ROS, PCL: float x y z)",
        Format::Pcd,
        Some(Encoding::Binary),
        Target::Ros,
        "pcd",
    ),
    (
        "PCD compressed",
        Format::Pcd,
        Some(Encoding::Compressed),
        Target::Generic,
        "pcd",
    ),
    (
        "PLY binary (with normals)",
        Format::Ply,
        Some(Encoding::Binary),
        Target::Generic,
        "ply",
    ),
    ("LAS", Format::Las, None, Target::Generic, "las"),
    ("LAZ", Format::Laz, None, Target::Generic, "laz"),
    ("E57", Format::E57, None, Target::Generic, "e57"),
    ("XYZ text", Format::Xyz, None, Target::Generic, "xyz"),
    (
        "KITTI .bin (x y z intensity)",
        Format::Kitti,
        None,
        Target::Generic,
        "bin",
    ),
];

/// The file written, its points, and the offset a MARSIM export was moved by.
pub type Written = (PathBuf, usize, Option<[f64; 3]>);

#[derive(Default)]
pub struct ExportState {
    pub choice: usize,
    pub path: String,
    pub job: Option<Job<Written>>,
}

/// Writes the map as the chosen format to `path` in the background.
pub fn start(app: &mut AerieApp, path: PathBuf) {
    let Some(m) = &app.map else { return };
    let cloud: Arc<Cloud> = Arc::clone(&m.cloud);
    let (_, format, encoding, target, _) = CHOICES[app.export.choice];
    app.export.job = Some(Job::spawn("export", app.waker(), move |_| {
        let shift = write(&cloud, &path, Some(format), encoding, None, target)?;
        Ok((path, cloud.len(), shift))
    }));
}

pub fn poll(app: &mut AerieApp) {
    if let Some(r) = app.export.job.as_mut().and_then(Job::poll) {
        app.export.job = None;
        match r {
            Ok((p, n, shift)) => {
                let note = shift
                    .map(|s| format!("; {}", crate::cli::export::shift_note(s)))
                    .unwrap_or_default();
                app.info(format!("exported {n} points to {}{note}", p.display()));
            }
            Err(e) => app.error(e),
        }
    }
}

pub fn ui(app: &mut AerieApp, ui: &mut egui::Ui) {
    ui.heading("Export the map");
    for (i, c) in CHOICES.iter().enumerate() {
        ui.radio_value(&mut app.export.choice, i, c.0);
    }
    let ext = CHOICES[app.export.choice].4;
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
