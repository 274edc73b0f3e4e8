//! What every step panel is to the app: the [`Panel`] trait, the [`Cx`] a panel draws and polls with (the
//! document to read, where to send actions), and the status of a running job. The app holds the panels and
//! drives them through this trait alone: jobs are polled, shown in the status bar and cancelled by one loop over
//! the panels, and no panel knows the app or another panel.

use eframe::egui;

use super::action::{Action, Actions};
use super::document::Document;

/// What a panel sees of the app during a frame, and where it sends what it wants done.
pub struct Cx<'a> {
    /// The document, read-only: changes go through [`Cx::send`].
    pub doc: &'a Document,
    /// Whether any background work of the app is running (a panel's job or a flight).
    pub busy: bool,
    /// The window's context: jobs wake it when they have news.
    pub egui: &'a egui::Context,
    /// The actions sent this frame.
    pub actions: &'a mut Actions,
}

impl Cx<'_> {
    /// Asks the app for `action`.
    pub fn send(&mut self, action: Action) {
        self.actions.send(action);
    }

    /// Logs a message.
    pub fn info(&mut self, text: impl Into<String>) {
        self.actions.info(text);
    }

    /// Logs an error (or a warning the user must see).
    pub fn error(&mut self, text: impl Into<String>) {
        self.actions.error(text);
    }

    /// A closure that wakes the window (for jobs).
    pub fn waker(&self) -> impl Fn() + Send + Sync + 'static {
        let ctx = self.egui.clone();
        move || ctx.request_repaint()
    }
}

/// A job running, as the status bar shows it.
#[derive(Clone, Debug, PartialEq)]
pub struct JobStatus {
    /// What it does and the stage it is at ("prepare map: normals").
    pub name: String,
    /// Fraction of the stage done, when its size is known.
    pub fraction: Option<f32>,
}

/// A step of the workflow, drawn in the panel on the left.
pub trait Panel {
    /// Draws the panel.
    fn ui(&mut self, ui: &mut egui::Ui, cx: &mut Cx<'_>);

    /// Takes in what its background work has finished, once per frame before anything is drawn. By default,
    /// nothing.
    fn poll(&mut self, _cx: &mut Cx<'_>) {}

    /// The job it runs now, for the status bar. By default, none.
    fn job(&self) -> Option<JobStatus> {
        None
    }

    /// Whether it has work running (a job, a flight). By default, whether it runs a job.
    fn busy(&self) -> bool {
        self.job().is_some()
    }

    /// Asks its running jobs to stop; they end with a "cancelled" error. By default, nothing.
    fn cancel(&mut self) {}
}

/// Draws one panel alone over a document in egui's test harness, as the app would, keeping the actions it sends.
#[cfg(test)]
pub mod testing {
    use egui_kittest::Harness;

    use super::*;

    /// A panel, the document it reads and the actions it sent.
    pub struct Alone<P> {
        /// The panel under test.
        pub panel: P,
        /// What it reads.
        pub doc: Document,
        /// What it sent, every frame's kept.
        pub actions: Actions,
    }

    /// A harness that polls and draws `panel` over `doc` each frame.
    pub fn harness<P: Panel + 'static>(panel: P, doc: Document) -> Harness<'static, Alone<P>> {
        let state = Alone {
            panel,
            doc,
            actions: Actions::default(),
        };
        Harness::builder()
            .with_size(egui::vec2(420.0, 700.0))
            // The app's number fields are named by the label beside them, which the check does not see.
            .with_accessibility_check(false)
            .build_ui_state(
                |ui, s: &mut Alone<P>| {
                    let ctx = ui.ctx().clone();
                    let mut cx = Cx {
                        doc: &s.doc,
                        busy: s.panel.busy(),
                        egui: &ctx,
                        actions: &mut s.actions,
                    };
                    s.panel.poll(&mut cx);
                    s.panel.ui(ui, &mut cx);
                },
                state,
            )
    }

    /// A document with one scan file of a 10 x 10 m grid of points, 0.5 m apart.
    pub fn doc_with_scan() -> Document {
        let mut doc = Document::default();
        let positions = (0..400)
            .map(|i| [(i % 20) as f32 * 0.5, (i / 20) as f32 * 0.5, 0.0])
            .collect();
        let cloud = aerie_pipeline::Cloud::from_positions([1000.0, 2000.0, 10.0], positions);
        doc.add_scan("grid.xyz".into(), cloud, "points 400\n".into());
        doc
    }

    /// [`doc_with_scan`] with a map prepared from it (no stages).
    pub fn doc_with_map() -> Document {
        use aerie_pipeline::prepare::{Recipe, prepare};
        use std::sync::Arc;
        let mut doc = doc_with_scan();
        let scan = (*doc.files()[0].cloud).clone();
        let recipe = Recipe {
            stages: Vec::new(),
            ..Recipe::default()
        };
        let prepared = prepare(
            vec![(scan, None)],
            &recipe,
            &aerie_pipeline::progress::NoProgress,
        )
        .expect("a grid prepares");
        let cloud = prepared.map.to_cloud().expect("the map reads back");
        doc.set_map(super::super::document::MapDoc {
            packed: Arc::new(prepared.map),
            cloud: Arc::new(cloud),
            reports: prepared.reports,
            warnings: prepared.warnings,
            points_in: 400,
            recipe,
            path: None,
            seconds: 0.1,
        });
        doc
    }
}
