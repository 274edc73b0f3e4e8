//! What a panel asks the app to do: the workflow's steps and the [`Action`]s a panel sends instead of changing the
//! document, the view or another panel itself. The app applies them in one place (`AerieApp::apply`), after the
//! panel that sent them has been drawn, so a change a panel makes is never half-seen by another (rerun's
//! `SystemCommand`).

use std::path::PathBuf;

use aerie_pipeline::Cloud;
use serde::{Deserialize, Serialize};

use super::document::{LogLine, MapDoc};

/// The workflow's steps, in order.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub enum Step {
    /// Bring scan files or a map.
    #[default]
    Import,
    /// Edit the recipe, preview outliers, prepare the map.
    Clean,
    /// The map's figures and histograms; save it.
    Map,
    /// Fly a vehicle with a sensor in the map.
    Simulate,
    /// Write the map for another tool.
    Export,
}

impl Step {
    /// Every step, in the order of the workflow.
    pub const ALL: [Step; 5] = [
        Step::Import,
        Step::Clean,
        Step::Map,
        Step::Simulate,
        Step::Export,
    ];

    /// The step's button in the workflow panel.
    pub fn label(self) -> &'static str {
        match self {
            Step::Import => "1  Import",
            Step::Clean => "2  Clean",
            Step::Map => "3  Map",
            Step::Simulate => "4  Simulate",
            Step::Export => "5  Export",
        }
    }
}

/// A change a panel wants made to the document or the app.
pub enum Action {
    /// Add a line to the message log (the last one shows in the status bar).
    Log(LogLine),
    /// Show another step of the workflow.
    GoTo(Step),
    /// Point the camera at everything shown.
    FrameAll,
    /// Draw the raw scans beside the map (or not).
    ShowRaw(bool),
    /// A scan read from `path` joins the files, unless it is one of them already.
    AddScan {
        /// Where it was read from.
        path: PathBuf,
        /// Its points (boxed: a cloud is large beside the other actions).
        cloud: Box<Cloud>,
        /// `aerie info`'s text for it.
        info: String,
    },
    /// Remove the file at this index of [`super::document::Document::files`].
    RemoveFile(usize),
    /// The map (opened or just prepared) replaces the one open.
    SetMap(Box<MapDoc>),
    /// Close the map.
    CloseMap,
    /// The map was saved to this path.
    MapSaved(PathBuf),
    /// For each file in order, the points a cleaning stage would remove (true: removed), to paint them.
    ShowRemoved(Vec<Vec<bool>>),
    /// For each file in order, the points `filters.moving` would remove (true: removed), to paint them in their
    /// own colour.
    ShowMoving(Vec<Vec<bool>>),
    /// Paint every file's points as read again.
    ClearRemoved,
}

/// Where a panel sends its actions during a frame.
#[derive(Default)]
pub struct Actions(Vec<Action>);

impl Actions {
    /// Asks for `action`.
    pub fn send(&mut self, action: Action) {
        self.0.push(action);
    }

    /// Logs a message.
    pub fn info(&mut self, text: impl Into<String>) {
        self.send(Action::Log(LogLine::info(text)));
    }

    /// Logs an error (or a warning the user must see), drawn in red.
    pub fn error(&mut self, text: impl Into<String>) {
        self.send(Action::Log(LogLine::error(text)));
    }

    /// The actions sent, oldest first, leaving none.
    pub fn take(&mut self) -> Vec<Action> {
        std::mem::take(&mut self.0)
    }

    /// The actions sent so far (for tests).
    #[cfg(test)]
    pub fn sent(&self) -> &[Action] {
        &self.0
    }
}
