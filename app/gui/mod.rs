//! The desktop app: one window in which a user goes from raw scans to a validated, exported map.
//!
//! Shaped like rerun's viewer: thin over the data crates. Every operation is the same library call the CLI makes
//! (`io::read`, `prepare`, `export::write_map`, `flight::Flight`, `export::export`), run as a
//! [`crate::jobs::Job`] on a background thread so the window never freezes. The panels on the left follow the
//! workflow top to bottom (import, clean, map, simulate, export); the viewport fills the rest.
//!
//! A [`document::Document`] (no egui) holds the files, the map and the view origin. Each step panel owns its own
//! state, reads the document and sends [`action::Action`]s, which the app applies in one place; the app drives
//! the panels through the [`panel::Panel`] trait only (poll, draw, show and cancel their jobs). No panel imports
//! the app or another panel, so each is tested alone over a document.
//!
//! - `app`: the app: the frame loop, `apply`, persistence (recent files, colour mode, recipe) between runs;
//! - `document`: the files, the map, the view origin and the operations that change them;
//! - `action`: the workflow's steps and the actions panels send;
//! - `panel`: the trait every step panel implements, and the harness that tests one alone;
//! - `import`, `clean`, `map`, `simulate`, `export`: one panel each;
//! - `layers`: the viewport's point layers of the document, rebuilt when what they show changes;
//! - `live`: the flight running on its own thread, paced to real time (or faster), pausable;
//! - `capture`: the unattended runs, `--screenshot` and `--bench-frames`;
//! - `view`: the wgpu viewport (and its CPU fallback), camera, picking, level of detail.

mod action;
mod app;
mod capture;
mod clean;
mod document;
mod export;
mod import;
mod layers;
mod live;
mod map;
mod panel;
mod simulate;
#[cfg(test)]
mod tests;
pub mod view;
mod widgets;

use std::path::PathBuf;

pub use app::AerieApp;

/// What to do besides showing the window: files to import at once, and an optional screenshot to take (once
/// everything given has loaded) before closing, for tests and documentation.
#[derive(Clone, Debug, Default)]
pub struct Launch {
    pub files: Vec<PathBuf>,
    pub screenshot: Option<PathBuf>,
    pub size: Option<[f32; 2]>,
    /// Measure the viewport: once loaded, orbit for this many frames with the moving budget, then as many
    /// drawing every point; print the median frame times and close. (frames, points per frame while orbiting)
    pub bench_frames: Option<(u32, usize)>,
}

/// Opens the window and runs until it is closed.
pub fn run(launch: Launch) -> anyhow::Result<()> {
    let no_display = ["DISPLAY", "WAYLAND_DISPLAY"]
        .iter()
        .all(|v| std::env::var_os(v).is_none_or(|d| d.is_empty()));
    if cfg!(target_os = "linux") && no_display {
        anyhow::bail!(
            "no display to open the app on (DISPLAY and WAYLAND_DISPLAY are unset); the command line works \
             without one: `aerie --help`"
        );
    }
    let size = launch.size.unwrap_or([1400.0, 880.0]);
    let options = eframe::NativeOptions {
        viewport: eframe::egui::ViewportBuilder::default()
            .with_title("Aerie")
            .with_inner_size(size)
            .with_drag_and_drop(true),
        renderer: eframe::Renderer::Wgpu,
        // A screenshot run must not be shaped by (nor change) the user's saved layout.
        persist_window: launch.screenshot.is_none() && launch.bench_frames.is_none(),
        ..Default::default()
    };
    eframe::run_native(
        "Aerie",
        options,
        Box::new(move |cc| Ok(Box::new(AerieApp::new(cc, launch)))),
    )
    .map_err(|e| anyhow::anyhow!("cannot open the window: {e}"))
}
