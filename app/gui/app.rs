//! The app's state and frame loop: the workflow panel on the left, the viewport in the centre, flight plots on
//! the right while a flight exists, the status line with the running job at the bottom.

use std::path::PathBuf;
use std::sync::Arc;

use aerie_pipeline::map::PackedMap;
use aerie_pipeline::prepare::Recipe;
use aerie_pipeline::{Cloud, StageReport};
use eframe::egui::{self, Color32, RichText};
use serde::{Deserialize, Serialize};

use super::view::{ColorMode, Overlay, Pick, PointLayer, Viewport};
use super::{Launch, clean, export, import, map, simulate};

/// The workflow's steps, in order.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub enum Step {
    #[default]
    Import,
    Clean,
    Map,
    Simulate,
    Export,
}

impl Step {
    const ALL: [Step; 5] = [
        Step::Import,
        Step::Clean,
        Step::Map,
        Step::Simulate,
        Step::Export,
    ];

    fn label(self) -> &'static str {
        match self {
            Step::Import => "1  Import",
            Step::Clean => "2  Clean",
            Step::Map => "3  Map",
            Step::Simulate => "4  Simulate",
            Step::Export => "5  Export",
        }
    }
}

/// What is kept between runs.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(default)]
pub struct Settings {
    pub recent: Vec<PathBuf>,
    pub color: ColorMode,
    pub point_size_px: f32,
    pub recipe: Recipe,
}

impl Default for Settings {
    fn default() -> Self {
        Settings {
            recent: Vec::new(),
            color: ColorMode::Height,
            point_size_px: 2.0,
            recipe: Recipe::default(),
        }
    }
}

/// A scan file the user brought.
pub struct Imported {
    pub path: PathBuf,
    pub cloud: Arc<Cloud>,
    /// `aerie info`'s text for it.
    pub info: String,
    pub layer: PointLayer,
    /// Points the cleaning preview would remove.
    pub removed: Option<Arc<Vec<bool>>>,
}

/// The prepared map.
pub struct MapDoc {
    pub packed: Arc<PackedMap>,
    pub cloud: Arc<Cloud>,
    pub reports: Vec<StageReport>,
    pub warnings: Vec<String>,
    pub points_in: usize,
    pub recipe: Recipe,
    pub layer: PointLayer,
    /// Where it was saved or opened from.
    pub path: Option<PathBuf>,
    pub seconds: f64,
}

/// A line of the message log.
pub struct LogLine {
    pub error: bool,
    pub text: String,
}

/// Slots of the viewport's layers.
pub const SLOT_MAP: usize = 1000;

pub struct AerieApp {
    pub(super) settings: Settings,
    pub(super) step: Step,
    pub(super) files: Vec<Imported>,
    pub(super) map: Option<MapDoc>,
    pub(super) view: Viewport,
    /// Every layer is drawn relative to this point (the first file's origin), so f32 keeps millimetres.
    pub(super) view_origin: Option<[f64; 3]>,
    pub(super) gpu: bool,
    pub(super) log: Vec<LogLine>,
    pub(super) pick: Option<(Pick, String)>,
    pub(super) show_raw: bool,
    pub(super) import: import::ImportState,
    pub(super) clean: clean::CleanState,
    pub(super) mapstep: map::MapState,
    pub(super) sim: simulate::SimState,
    pub(super) export: export::ExportState,
    pub(super) ctx: egui::Context,
    screenshot: Option<PathBuf>,
    shot: Arc<std::sync::Mutex<Option<Arc<egui::ColorImage>>>>,
    idle_frames: u32,
    bench: Option<FrameBench>,
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

impl AerieApp {
    /// The app, with the saved settings, importing the files given on the command line.
    pub fn new(cc: &eframe::CreationContext<'_>, launch: Launch) -> AerieApp {
        let settings: Settings = match (cc.storage, launch.screenshot.is_some()) {
            (Some(s), false) => eframe::get_value(s, eframe::APP_KEY).unwrap_or_default(),
            _ => Settings::default(),
        };
        let mut view = Viewport::default();
        let gpu = match cc.wgpu_render_state.as_ref() {
            Some(rs) if std::env::var_os("AERIE_CPU_VIEWPORT").is_none() => {
                super::view::gpu::init(rs);
                if super::view::gpu::is_software(rs) {
                    view.budget = 200_000;
                }
                true
            }
            _ => false,
        };
        let mut app = AerieApp {
            clean: clean::CleanState::new(settings.recipe.clone()),
            settings,
            step: Step::Import,
            files: Vec::new(),
            map: None,
            view,
            view_origin: None,
            gpu,
            log: Vec::new(),
            pick: None,
            show_raw: true,
            import: import::ImportState::default(),
            mapstep: map::MapState::default(),
            sim: simulate::SimState::default(),
            export: export::ExportState::default(),
            ctx: cc.egui_ctx.clone(),
            screenshot: launch.screenshot,
            shot: Arc::default(),
            bench: launch.bench_frames.map(|(frames, budget)| FrameBench {
                frames: frames.max(1),
                budget,
                last: None,
                moving: Vec::new(),
                full: Vec::new(),
            }),
            idle_frames: 0,
        };
        if !launch.files.is_empty() {
            import::start(&mut app, launch.files);
        }
        app
    }

    /// A closure that wakes the window (for jobs).
    pub(super) fn waker(&self) -> impl Fn() + Send + Sync + 'static {
        let ctx = self.ctx.clone();
        move || ctx.request_repaint()
    }

    pub(super) fn info(&mut self, text: impl Into<String>) {
        self.log.push(LogLine {
            error: false,
            text: text.into(),
        });
    }

    pub(super) fn error(&mut self, text: impl Into<String>) {
        self.log.push(LogLine {
            error: true,
            text: text.into(),
        });
    }

    /// Whether any background work is running.
    pub fn busy(&self) -> bool {
        self.import.job.is_some()
            || self.clean.busy()
            || self.mapstep.job.is_some()
            || self.export.job.is_some()
            || self.sim.running()
    }

    /// The origin layers are drawn from; set by the first data loaded.
    pub(super) fn origin_for(&mut self, cloud: &Cloud) -> [f64; 3] {
        *self.view_origin.get_or_insert(cloud.origin)
    }

    /// Rebuilds every layer in the current colour mode.
    pub(super) fn recolor(&mut self) {
        let origin = self.view_origin.unwrap_or_default();
        let mode = self.settings.color;
        for f in &mut self.files {
            let mask = f
                .removed
                .as_ref()
                .map(|m| (m.as_slice(), clean::REMOVED_COLOR));
            f.layer = PointLayer::from_cloud(&f.cloud, origin, mode, mask);
            f.layer.point_size_px = self.settings.point_size_px;
        }
        if let Some(m) = &mut self.map {
            m.layer = PointLayer::from_cloud(&m.cloud, origin, mode, None);
            m.layer.point_size_px = self.settings.point_size_px;
        }
    }

    fn layers(&self) -> Vec<(usize, &PointLayer)> {
        let mut out = Vec::new();
        let show_map = self.map.is_some() && !matches!(self.step, Step::Import | Step::Clean);
        if !show_map || self.show_raw && self.step != Step::Simulate {
            out.extend(self.files.iter().enumerate().map(|(i, f)| (i, &f.layer)));
        }
        if let Some(m) = &self.map
            && (show_map || self.files.is_empty())
        {
            out.push((SLOT_MAP, &m.layer));
        }
        out
    }

    fn poll_jobs(&mut self) {
        import::poll(self);
        clean::poll(self);
        map::poll(self);
        export::poll(self);
        simulate::poll(self);
    }

    fn workflow_panel(&mut self, ui: &mut egui::Ui) {
        ui.add_space(6.0);
        ui.horizontal_wrapped(|ui| {
            for s in Step::ALL {
                let enabled = match s {
                    Step::Import => true,
                    Step::Clean => !self.files.is_empty(),
                    Step::Map | Step::Simulate | Step::Export => self.map.is_some(),
                };
                let b =
                    ui.add_enabled(enabled, egui::Button::selectable(self.step == s, s.label()));
                if b.clicked() {
                    self.step = s;
                }
            }
        });
        ui.separator();
        egui::ScrollArea::vertical().show(ui, |ui| match self.step {
            Step::Import => import::ui(self, ui),
            Step::Clean => clean::ui(self, ui),
            Step::Map => map::ui(self, ui),
            Step::Simulate => simulate::ui(self, ui),
            Step::Export => export::ui(self, ui),
        });
    }

    fn status_bar(&mut self, ui: &mut egui::Ui) {
        ui.horizontal(|ui| {
            if let Some((name, fraction, cancel)) = self.running_job() {
                ui.spinner();
                ui.label(name);
                if let Some(f) = fraction {
                    ui.add(
                        egui::ProgressBar::new(f)
                            .desired_width(200.0)
                            .show_percentage(),
                    );
                }
                if ui.button("Cancel").clicked() {
                    cancel(self);
                }
                ui.separator();
            }
            // The count on the right is laid out first; the last message takes what is left of the bar, cut
            // short with its whole text on hover, so that a long warning never runs under the count.
            ui.with_layout(egui::Layout::right_to_left(egui::Align::Center), |ui| {
                ui.label(format!("{} points drawn", self.view.drawn));
                if !self.gpu {
                    ui.label(RichText::new("CPU viewport").weak());
                }
                if let Some(l) = self.log.last() {
                    let text = RichText::new(&l.text);
                    let text = if l.error {
                        text.color(Color32::from_rgb(255, 110, 100))
                    } else {
                        text
                    };
                    ui.with_layout(egui::Layout::left_to_right(egui::Align::Center), |ui| {
                        ui.add(egui::Label::new(text).truncate())
                            .on_hover_text(&l.text);
                    });
                }
            });
        });
    }

    #[allow(clippy::type_complexity)]
    fn running_job(&self) -> Option<(String, Option<f32>, fn(&mut AerieApp))> {
        if let Some(j) = &self.import.job {
            return Some((
                format!("{}: {}", j.name, j.progress().stage_name()),
                j.progress().fraction(),
                |a| {
                    if let Some(j) = &a.import.job {
                        j.cancel();
                    }
                },
            ));
        }
        if let Some((name, f)) = self.clean.running() {
            return Some((name, f, |a| a.clean.cancel()));
        }
        if let Some(j) = &self.mapstep.job {
            return Some((j.name.clone(), None, |_| {}));
        }
        if let Some(j) = &self.export.job {
            return Some((j.name.clone(), None, |_| {}));
        }
        None
    }

    fn view_options(&mut self, ui: &mut egui::Ui) {
        // Wrapped, so that a narrow window does not push the row, and the viewport under it, past its edge.
        ui.horizontal_wrapped(|ui| {
            let before = self.settings.color;
            // The colour choice and its note in one group: the wrapping row never puts the note on a line of
            // its own.
            let shown: Vec<&Cloud> = self.shown_clouds().collect();
            let grey = !shown.is_empty() && !shown.iter().any(|c| has_colour_source(c, before));
            ui.horizontal(|ui| {
                egui::ComboBox::from_label("colour")
                    .selected_text(before.label())
                    .show_ui(ui, |ui| {
                        for m in ColorMode::ALL {
                            ui.selectable_value(&mut self.settings.color, m, m.label());
                        }
                    });
                if grey {
                    ui.label(RichText::new(format!("(no {} here: grey)", before.label())).weak());
                }
            });
            let size_before = self.settings.point_size_px;
            ui.add(egui::Slider::new(&mut self.settings.point_size_px, 1.0..=6.0).text("point px"));
            if before != self.settings.color || size_before != self.settings.point_size_px {
                self.recolor();
            }
            if self.map.is_some() && !self.files.is_empty() {
                ui.checkbox(&mut self.show_raw, "raw scans");
            }
            self.cut_ui(ui);
            ui.checkbox(&mut self.view.fly, "fly (WASD QE)")
                .on_hover_text("Move the camera with W A S D, Q and E");
            if ui.button("Frame all").clicked() {
                self.frame_all();
            }
        });
    }

    /// "cut above": hides what lies above a height (in the map's z), to see and click inside a building.
    fn cut_ui(&mut self, ui: &mut egui::Ui) {
        let mut on = self.view.cut_above.is_some();
        let toggled = ui
            .checkbox(&mut on, "cut above")
            .on_hover_text("Hide the points above a height (a roof) to see and click inside")
            .changed();
        if toggled {
            self.view.cut_above = on.then(|| self.default_cut());
        }
        let o = self.view_origin.unwrap_or_default()[2];
        if let Some(z) = &mut self.view.cut_above {
            let mut world = o + f64::from(*z);
            if ui
                .add(egui::DragValue::new(&mut world).speed(0.05).suffix(" m"))
                .changed()
            {
                *z = (world - o) as f32;
            }
        }
    }

    /// A first cut height: 60% of the way up what is shown, below the roof of a hall.
    fn default_cut(&self) -> f32 {
        let (mut lo, mut hi) = (f32::INFINITY, f32::NEG_INFINITY);
        for (_, l) in self.layers() {
            for p in l.points.iter().step_by((l.len() / 50_000).max(1)) {
                lo = lo.min(p.pos[2]);
                hi = hi.max(p.pos[2]);
            }
        }
        if lo.is_finite() {
            lo + 0.6 * (hi - lo)
        } else {
            0.0
        }
    }

    /// The clouds the viewport shows now.
    fn shown_clouds(&self) -> impl Iterator<Item = &Cloud> {
        self.layers()
            .into_iter()
            .filter_map(|(slot, _)| match slot {
                SLOT_MAP => self.map.as_ref().map(|m| m.cloud.as_ref()),
                i => self.files.get(i).map(|f| f.cloud.as_ref()),
            })
    }

    /// Points the camera at everything loaded.
    pub(super) fn frame_all(&mut self) {
        let mut lo = [f32::INFINITY; 3];
        let mut hi = [f32::NEG_INFINITY; 3];
        for (_, l) in self.layers() {
            for p in l.points.iter().step_by((l.len() / 50_000).max(1)) {
                for k in 0..3 {
                    lo[k] = lo[k].min(p.pos[k]);
                    hi[k] = hi[k].max(p.pos[k]);
                }
            }
        }
        if lo[0].is_finite() {
            self.view.camera = super::view::Camera::framing(lo, hi);
        }
    }

    fn pick_text(&self, pick: &Pick) -> String {
        let origin = self.view_origin.unwrap_or_default();
        let world: [f64; 3] = std::array::from_fn(|k| origin[k] + pick.pos[k] as f64);
        let mut t = format!("x {:.3}  y {:.3}  z {:.3}", world[0], world[1], world[2]);
        let cloud = match pick.slot {
            SLOT_MAP => self.map.as_ref().map(|m| &m.cloud),
            i if i < self.files.len() => Some(&self.files[i].cloud),
            _ => None,
        };
        if let Some(c) = cloud {
            let i = pick.source_index as usize;
            if let Some(v) = c.intensity().and_then(|v| v.get(i)) {
                t += &format!("  intensity {v}");
            }
            if let Some(v) = c.gamma().and_then(|v| v.get(i)) {
                t += &format!("  plane thickness {:.1} mm", v * 1000.0);
            }
            if let Some(n) = c.normals().and_then(|v| v.get(i)) {
                t += &format!("  normal ({:.2}, {:.2}, {:.2})", n[0], n[1], n[2]);
            }
            if let Some(v) = c.classification().and_then(|v| v.get(i)) {
                t += &format!("  class {v}");
            }
            if let Some(v) = c.color().and_then(|v| v.get(i)) {
                t += &format!("  rgb {} {} {}", v[0] >> 8, v[1] >> 8, v[2] >> 8);
            }
        }
        t
    }

    fn viewport(&mut self, ui: &mut egui::Ui) {
        self.view_options(ui);
        let mut overlay = Overlay::default();
        simulate::overlay(self, &mut overlay);
        let layers: Vec<(usize, PointLayer)> = self
            .layers()
            .into_iter()
            .map(|(s, l)| (s, l.clone()))
            .collect();
        let refs: Vec<(usize, &PointLayer)> = layers.iter().map(|(s, l)| (*s, l)).collect();
        if refs.is_empty() {
            self.view.show_nothing();
            ui.centered_and_justified(|ui| {
                ui.label(RichText::new("Drop scan files (LAS, LAZ, E57, PLY, PCD, XYZ) or a map (.amap) here,\nor use Import on the left.").size(16.0).weak());
            });
            return;
        }
        let r = self.view.show(ui, self.gpu, &refs, &overlay);
        if let Some(p) = r.clicked {
            let text = self.pick_text(&p);
            if self.step == Step::Simulate {
                simulate::clicked(self, p.pos);
            }
            self.pick = Some((p, text));
        }
        if let Some((_, text)) = &self.pick {
            let rect = ui.min_rect();
            ui.painter().text(
                rect.left_bottom() + egui::vec2(8.0, -8.0),
                egui::Align2::LEFT_BOTTOM,
                text,
                egui::FontId::monospace(12.0),
                Color32::from_gray(230),
            );
        }
    }

    fn dropped_files(&mut self, ctx: &egui::Context) {
        let dropped: Vec<PathBuf> = ctx.input(|i| {
            i.raw
                .dropped_files
                .iter()
                .map(|f| f.path().to_path_buf())
                .collect()
        });
        if !dropped.is_empty() {
            import::start(self, dropped);
        }
    }

    /// Screenshot runs: once everything has loaded and a few frames were drawn, take the picture, then close.
    fn screenshot_step(&mut self, ctx: &egui::Context) {
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
        let drawn = !self.gpu || self.view.complete();
        self.idle_frames = if self.busy() || !drawn {
            0
        } else {
            self.idle_frames + 1
        };
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
}

impl AerieApp {
    fn bench_step(&mut self, ctx: &egui::Context) {
        if self.bench.is_none() || self.busy() || self.files.is_empty() && self.map.is_none() {
            if self.bench.is_some() {
                ctx.request_repaint();
            }
            return;
        }
        let points = self.files.iter().map(|f| f.cloud.len()).sum::<usize>()
            + self.map.as_ref().map_or(0, |m| m.cloud.len());
        let done = self
            .bench
            .as_mut()
            .is_some_and(|b| b.step(&mut self.view, points, ctx));
        if done {
            self.bench = None;
            ctx.send_viewport_cmd(egui::ViewportCommand::Close);
        }
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

impl eframe::App for AerieApp {
    fn ui(&mut self, ui: &mut egui::Ui, _frame: &mut eframe::Frame) {
        let ctx = ui.ctx().clone();
        self.poll_jobs();
        self.dropped_files(&ctx);
        egui::Panel::bottom("status").show(ui, |ui| self.status_bar(ui));
        egui::Panel::left("workflow")
            .default_size(360.0)
            .resizable(true)
            .show(ui, |ui| self.workflow_panel(ui));
        if self.sim.has_flight() {
            egui::Panel::right("flight")
                .default_size(360.0)
                .resizable(true)
                .show(ui, |ui| simulate::side_panel(self, ui));
        }
        egui::CentralPanel::default().show(ui, |ui| self.viewport(ui));
        if self.busy() {
            ctx.request_repaint_after(std::time::Duration::from_millis(100));
        }
        self.screenshot_step(&ctx);
        self.bench_step(&ctx);
    }

    fn save(&mut self, storage: &mut dyn eframe::Storage) {
        if self.screenshot.is_none() {
            self.settings.recipe = self.clean.recipe.clone();
            eframe::set_value(storage, eframe::APP_KEY, &self.settings);
        }
    }

    fn on_exit(&mut self) {
        self.sim.stop();
    }
}

/// Whether `cloud` holds what colour mode `mode` draws from.
fn has_colour_source(cloud: &Cloud, mode: ColorMode) -> bool {
    match mode {
        ColorMode::Height => true,
        ColorMode::Intensity => cloud.intensity().is_some(),
        ColorMode::PlaneThickness => cloud.gamma().is_some(),
        ColorMode::Normal => cloud.normals().is_some(),
        ColorMode::Rgb => cloud.color().is_some(),
    }
}
