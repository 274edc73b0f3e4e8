//! Step 5, export: every format of `aerie export`, MARSIM's PCD included, through the same writer.

use std::path::PathBuf;
use std::sync::Arc;

use aerie_pipeline::Cloud;
use aerie_pipeline::export::{ExportOptions, Exported, PRESETS, export, not_an_input, octomap};
use aerie_pipeline::io::Format;
use eframe::egui::{self, RichText};

use super::panel::{Cx, JobStatus, Panel};
use super::widgets::{Dialog, path_field};

use crate::jobs::Job;

/// The file written, its points, and what the export did besides (offset, warnings).
pub type Written = (PathBuf, usize, Exported);

/// The export step: the format chosen, the path, the job writing it.
#[derive(Default)]
pub struct ExportPanel {
    /// Index of the preset chosen in [`PRESETS`].
    pub choice: usize,
    /// Where to write.
    pub path: String,
    job: Option<Job<Written>>,
}

impl ExportPanel {
    /// Writes the map as the chosen format to `path` in the background, after the checks `aerie export` makes:
    /// not over a file the app read, and a name whose extension is the chosen format's.
    fn start(&mut self, path: PathBuf, cx: &mut Cx<'_>) {
        let Some(m) = cx.doc.map() else { return };
        let preset = PRESETS[self.choice];
        if preset.is_folder() && !preset.names(&path) {
            cx.error(format!(
                "{}: {} is written to a folder: name it without an extension",
                path.display(),
                preset.label
            ));
            return;
        }
        if Format::from_path(&path).is_some() && !preset.names(&path) {
            cx.error(format!(
                "{} names another format than {}: name it .{}",
                path.display(),
                preset.label,
                preset.extension()
            ));
            return;
        }
        let inputs: Vec<&std::path::Path> = cx
            .doc
            .files()
            .iter()
            .map(|f| f.path.as_path())
            .chain(m.path.as_deref())
            .collect();
        if let Err(e) = not_an_input(&path, &inputs) {
            cx.error(e.to_string());
            return;
        }
        let cloud: Arc<Cloud> = Arc::clone(&m.cloud);
        // A gridded export (OctoMap) takes the map's own resolution, a USD stage draws its points that wide.
        let options = ExportOptions {
            resolution_m: Some(octomap::resolution_of_map(m.packed.resolution)),
            ..preset.options()
        };
        self.job = Some(Job::spawn("export", cx.waker(), move |_| {
            let done = export(&cloud, &path, &options)?;
            Ok((path, cloud.len(), done))
        }));
    }
}

impl Panel for ExportPanel {
    fn poll(&mut self, cx: &mut Cx<'_>) {
        if let Some(r) = self.job.as_mut().and_then(Job::poll) {
            self.job = None;
            match r {
                Ok((p, n, done)) => {
                    let note = done
                        .shift_note()
                        .map(|s| format!("; {s}"))
                        .unwrap_or_default();
                    cx.info(format!("exported {n} points to {}{note}", p.display()));
                    for w in done.warnings {
                        cx.error(format!("warning: {}: {w}", p.display()));
                    }
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
        ui.heading("Export the map");
        let before = self.choice;
        for (i, preset) in PRESETS.iter().enumerate() {
            ui.radio_value(&mut self.choice, i, preset.label);
        }
        let ext = PRESETS[self.choice].extension();
        let folder = PRESETS[self.choice].is_folder();
        if self.choice != before {
            // The path follows the format chosen, so that the file holds what its name says (a folder: no
            // extension).
            let path = PathBuf::from(self.path.trim());
            if Format::from_path(&path).is_some() || PRESETS.iter().any(|p| p.names(&path)) {
                self.path = path.with_extension(ext).display().to_string();
            }
        }
        ui.horizontal(|ui| {
            if folder {
                path_field(ui, &mut self.path, "map_model", ext, Dialog::Folder);
            } else {
                path_field(ui, &mut self.path, &format!("map.{ext}"), ext, Dialog::Save);
            }
        });
        let enabled = self.job.is_none() && !self.path.trim().is_empty();
        if ui
            .add_enabled(enabled, egui::Button::new(RichText::new("Export").strong()))
            .clicked()
        {
            let p = PathBuf::from(self.path.trim());
            self.start(p, cx);
        }
        ui.label(
            RichText::new("The same writers as `aerie export MAP OUT [--for TARGET]`.").weak(),
        );
    }
}

#[cfg(test)]
mod tests {
    use egui_kittest::kittest::Queryable;

    use super::super::action::Action;
    use super::super::panel::testing::{doc_with_map, harness};
    use super::*;

    #[test]
    fn the_path_follows_the_format_and_a_wrong_name_is_refused() {
        let mut h = harness(ExportPanel::default(), doc_with_map());
        h.state_mut().panel.path = "out/map.pcd".into();
        h.run_steps(2);
        h.get_by_label("LAZ").click();
        h.run_steps(2);
        assert_eq!(h.state().panel.path, "out/map.laz");
        h.state_mut().panel.path = "out/map.ply".into();
        h.run_steps(1);
        h.get_by_label("Export").click();
        h.run_steps(2);
        assert!(h.state().panel.job.is_none());
        assert!(
            matches!(&h.state().actions.sent()[0], Action::Log(l) if l.error && l.text.contains("name it .laz")),
            "the name must say the format"
        );
    }

    /// The OctoMap tree is offered like every format: the path takes .bt, and another name is refused.
    #[test]
    fn the_octomap_tree_takes_a_bt_name() {
        let mut h = harness(ExportPanel::default(), doc_with_map());
        h.state_mut().panel.path = "out/map.pcd".into();
        h.run_steps(2);
        let label = PRESETS
            .iter()
            .find(|p| p.extension() == "bt")
            .unwrap()
            .label;
        h.get_by_label(label).click();
        h.run_steps(2);
        assert_eq!(h.state().panel.path, "out/map.bt");
        h.state_mut().panel.path = "out/map.las".into();
        h.run_steps(1);
        h.get_by_label("Export").click();
        h.run_steps(2);
        assert!(h.state().panel.job.is_none());
        assert!(
            matches!(&h.state().actions.sent()[0], Action::Log(l) if l.error && l.text.contains("name it .bt")),
            "the name must be .bt"
        );
    }

    /// The Gazebo model is a folder: the path loses its extension, and a file's name is refused.
    #[test]
    fn the_gazebo_model_takes_a_folder_name() {
        let mut h = harness(ExportPanel::default(), doc_with_map());
        h.state_mut().panel.path = "out/map.pcd".into();
        h.run_steps(2);
        let label = PRESETS.iter().find(|p| p.is_folder()).unwrap().label;
        h.get_by_label(label).click();
        h.run_steps(2);
        assert_eq!(h.state().panel.path, "out/map");
        h.state_mut().panel.path = "out/map.las".into();
        h.run_steps(1);
        h.get_by_label("Export").click();
        h.run_steps(2);
        assert!(h.state().panel.job.is_none());
        assert!(
            matches!(&h.state().actions.sent()[0], Action::Log(l) if l.error && l.text.contains("without an extension")),
            "a folder takes no extension"
        );
    }
}
