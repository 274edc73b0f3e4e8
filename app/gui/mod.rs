//! The desktop app: one window in which a user goes from raw scans to a validated, exported map.
//!
//! Shaped like rerun's viewer: thin over the data crates. Every operation is the same library call the CLI makes
//! (`io::read`, `prepare`, `export::write_map`, `flight::Flight`, `export::export`), run as a
//! [`crate::jobs::Job`] on a background thread so the window never freezes. The panels on the left follow the
//! workflow top to bottom (import, clean, map, simulate, export); the viewport fills the rest.
//!
//! - `app`: the state, the frame loop, persistence (recent files, colour mode, camera) between runs;
//! - `import`, `clean`, `map`, `simulate`, `export`: one panel each;
//! - `live`: the flight running on its own thread, paced to real time (or faster), pausable;
//! - `view`: the wgpu viewport (and its CPU fallback), camera, picking, level of detail.

mod app;
mod clean;
mod export;
mod import;
mod live;
mod map;
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
