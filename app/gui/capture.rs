//! The app's unattended runs: `aerie app --screenshot` (take a picture of the window once everything given has
//! loaded and been drawn, then close) and `aerie app --bench-frames` (orbit the camera and print the viewport's
//! frame times, then close).

use std::path::PathBuf;
use std::sync::{Arc, Mutex};

use eframe::egui::{self, Color32};

use super::view::Viewport;

/// What an unattended run still has to do.
pub struct Capture {
    screenshot: Option<PathBuf>,
    shot: Arc<Mutex<Option<Arc<egui::ColorImage>>>>,
    idle_frames: u32,
    bench: Option<FrameBench>,
}

impl Capture {
    /// A screenshot to take into `screenshot`, a benchmark of (frames, points per frame while orbiting).
    pub fn new(screenshot: Option<PathBuf>, bench_frames: Option<(u32, usize)>) -> Capture {
        Capture {
            screenshot,
            shot: Arc::default(),
            idle_frames: 0,
            bench: bench_frames.map(|(frames, budget)| FrameBench {
                frames: frames.max(1),
                budget,
                last: None,
                moving: Vec::new(),
                full: Vec::new(),
            }),
        }
    }

    /// Whether a screenshot is still to be taken (the run must neither read nor write the saved settings).
    pub fn screenshot_pending(&self) -> bool {
        self.screenshot.is_some()
    }

    /// Screenshot runs: once everything has loaded (`ready`) and a few frames were drawn, take the picture, then
    /// close.
    pub fn screenshot_step(&mut self, ctx: &egui::Context, ready: bool) {
        let Some(path) = self.screenshot.clone() else {
            return;
        };
        let taken = self.shot.lock().ok().and_then(|mut s| s.take());
        if let Some(image) = taken {
            if let Err(e) = save_png(&path, &image) {
                eprintln!(
                    "error: cannot write the screenshot {}: {e:#}",
                    path.display()
                );
            }
            self.screenshot = None;
            ctx.send_viewport_cmd(egui::ViewportCommand::Close);
            return;
        }
        self.idle_frames = if ready { self.idle_frames + 1 } else { 0 };
        if self.idle_frames == 10 {
            let slot = Arc::clone(&self.shot);
            let wake = ctx.clone();
            ctx.send_viewport_cmd(egui::ViewportCommand::Screenshot(
                egui::ScreenshotCallback::new(move |image| {
                    if let Ok(mut s) = slot.lock() {
                        *s = Some(image);
                    }
                    wake.request_repaint();
                }),
            ));
        }
        ctx.request_repaint();
    }

    /// Benchmark runs: once `points` are loaded and nothing runs (`None` until then), a frame of the benchmark;
    /// closes the window when it is over.
    pub fn bench_step(&mut self, ctx: &egui::Context, view: &mut Viewport, points: Option<usize>) {
        let Some(points) = points else {
            if self.bench.is_some() {
                ctx.request_repaint();
            }
            return;
        };
        let done = self
            .bench
            .as_mut()
            .is_some_and(|b| b.step(view, points, ctx));
        if done {
            self.bench = None;
            ctx.send_viewport_cmd(egui::ViewportCommand::Close);
        }
    }
}

/// `aerie app --bench-frames N`: frame times of the viewport, orbiting, first thinned (moving) then in full.
struct FrameBench {
    frames: u32,
    /// Points per frame while orbiting in the first phase.
    budget: usize,
    last: Option<std::time::Instant>,
    moving: Vec<f64>,
    full: Vec<f64>,
}

impl FrameBench {
    fn step(&mut self, app_view: &mut Viewport, points: usize, ctx: &egui::Context) -> bool {
        let now = std::time::Instant::now();
        if let Some(last) = self.last {
            let ms = (now - last).as_secs_f64() * 1e3;
            let phase = if self.moving.len() < self.frames as usize {
                &mut self.moving
            } else {
                &mut self.full
            };
            phase.push(ms);
        }
        if self.last.is_none() {
            app_view.adaptive = false;
            app_view.budget = self.budget;
        }
        self.last = Some(now);
        if self.moving.len() == self.frames as usize {
            // Second phase: every point, every frame.
            app_view.budget = usize::MAX;
        }
        app_view.camera.orbit(4.0, 0.0);
        ctx.request_repaint();
        if self.full.len() < self.frames as usize {
            return false;
        }
        let median = |v: &mut Vec<f64>| {
            v.sort_by(f64::total_cmp);
            v[v.len() / 2]
        };
        println!(
            "viewport: {points} points loaded, {} px; orbiting at {} points per frame: median {:.1} ms/frame; every point every frame: median {:.1} ms/frame ({} frames each)",
            app_view.last_rect.map_or("?".into(), |r| format!(
                "{:.0}x{:.0}",
                r.width() * ctx.pixels_per_point(),
                r.height() * ctx.pixels_per_point()
            )),
            self.budget,
            median(&mut self.moving),
            median(&mut self.full),
            self.frames
        );
        true
    }
}

fn save_png(path: &std::path::Path, image: &egui::ColorImage) -> anyhow::Result<()> {
    let [w, h] = image.size;
    let rgba: Vec<u8> = image.pixels.iter().flat_map(Color32::to_array).collect();
    aerie_pipeline::io::atomic::write_atomic(path, |f| {
        let mut enc = png::Encoder::new(f, w as u32, h as u32);
        enc.set_color(png::ColorType::Rgba);
        enc.set_depth(png::BitDepth::Eight);
        let mut wr = enc
            .write_header()
            .map_err(|e| aerie_pipeline::Error::io(path, std::io::Error::other(e)))?;
        wr.write_image_data(&rgba)
            .map_err(|e| aerie_pipeline::Error::io(path, std::io::Error::other(e)))?;
        Ok(())
    })?;
    Ok(())
}
