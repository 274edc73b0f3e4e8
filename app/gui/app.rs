//! The app: the document, the step panels and the viewport, and the frame loop that drives them. Panels read
//! the document and send actions; [`AerieApp::apply`] is the one place where actions change the document and
//! the app. The workflow panel is on the left, the viewport in the centre, the flight's plots on the right while
//! a flight exists, the status line with the running job at the bottom.

use std::path::PathBuf;

use aerie_pipeline::Cloud;
use aerie_pipeline::prepare::Recipe;
use eframe::egui::{self, Color32, RichText};
use serde::{Deserialize, Serialize};

use super::Launch;
use super::action::{Action, Actions, Step};
use super::capture::Capture;
use super::clean::CleanPanel;
use super::document::{Document, LogLine};
use super::export::ExportPanel;
use super::import::ImportPanel;
use super::layers::{Layers, SLOT_MAP};
use super::map::MapPanel;
use super::panel::{Cx, JobStatus, Panel};
use super::simulate::SimPanel;
use super::view::{ColorMode, Overlay, Pick, PointLayer, Viewport};

/// What is kept between runs.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(default)]
pub struct Settings {
    /// Files opened lately, newest first (the import panel's).
    pub recent: Vec<PathBuf>,
    /// How the viewport colours points.
    pub color: ColorMode,
    /// How wide points are drawn.
    pub point_size_px: f32,
    /// The cleaning recipe (the clean panel's).
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

/// The step panels, one per step of the workflow.
pub struct Panels {
    /// Step 1.
    pub import: ImportPanel,
    /// Step 2.
    pub clean: CleanPanel,
    /// Step 3.
    pub map: MapPanel,
    /// Step 4.
    pub simulate: SimPanel,
    /// Step 5.
    pub export: ExportPanel,
}

impl Panels {
    /// Every panel, in the order of the workflow.
    fn all(&self) -> [&dyn Panel; 5] {
        [
            &self.import,
            &self.clean,
            &self.map,
            &self.simulate,
            &self.export,
        ]
    }

    /// Every panel, in the order of the workflow, to change.
    fn all_mut(&mut self) -> [&mut dyn Panel; 5] {
        [
            &mut self.import,
            &mut self.clean,
            &mut self.map,
            &mut self.simulate,
            &mut self.export,
        ]
    }

    /// The panel of `step`.
    fn of(&mut self, step: Step) -> &mut dyn Panel {
        match step {
            Step::Import => &mut self.import,
            Step::Clean => &mut self.clean,
            Step::Map => &mut self.map,
            Step::Simulate => &mut self.simulate,
            Step::Export => &mut self.export,
        }
    }

    /// Whether any panel has work running.
    fn busy(&self) -> bool {
        self.all().iter().any(|p| p.busy())
    }
}

/// The desktop app.
pub struct AerieApp {
    settings: Settings,
    /// The step shown.
    pub(super) step: Step,
    /// The files, the map, the view origin.
    pub(super) doc: Document,
    /// The step panels.
    pub(super) panels: Panels,
    /// The viewport's layers of `doc`.
    pub(super) layers: Layers,
    /// The viewport's camera and drawing state.
    pub(super) view: Viewport,
    /// The messages, oldest first.
    pub(super) log: Vec<LogLine>,
    gpu: bool,
    pick: Option<(Pick, String)>,
    show_raw: bool,
    ctx: egui::Context,
    capture: Capture,
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
            panels: Panels {
                import: ImportPanel::new(settings.recent.clone()),
                clean: CleanPanel::new(settings.recipe.clone()),
                map: MapPanel::default(),
                simulate: SimPanel::default(),
                export: ExportPanel::default(),
            },
            settings,
            step: Step::Import,
            doc: Document::default(),
            layers: Layers::default(),
            view,
            gpu,
            log: Vec::new(),
            pick: None,
            show_raw: true,
            ctx: cc.egui_ctx.clone(),
            capture: Capture::new(launch.screenshot, launch.bench_frames),
        };
        if !launch.files.is_empty() {
            app.with_panels(|panels, cx| panels.import.start(launch.files, cx));
        }
        app
    }

    /// Logs a message (the tests' way to put one in the status bar).
    #[cfg(test)]
    pub(super) fn info(&mut self, text: impl Into<String>) {
        self.log.push(LogLine::info(text));
    }

    /// Whether any background work is running.
    pub fn busy(&self) -> bool {
        self.panels.busy()
    }

    /// Runs `f` over the panels with what they may see of the app, then applies the actions they sent.
    fn with_panels<R>(&mut self, f: impl FnOnce(&mut Panels, &mut Cx<'_>) -> R) -> R {
        let mut actions = Actions::default();
        let busy = self.busy();
        let mut cx = Cx {
            doc: &self.doc,
            busy,
            egui: &self.ctx,
            actions: &mut actions,
        };
        let r = f(&mut self.panels, &mut cx);
        for action in actions.take() {
            self.apply(action);
        }
        self.sync_layers();
        r
    }

    /// Does what a panel asked: the one place where the document and the app's own state change.
    fn apply(&mut self, action: Action) {
        match action {
            Action::Log(line) => self.log.push(line),
            Action::GoTo(step) => self.step = step,
            Action::FrameAll => {
                self.sync_layers();
                self.frame_all();
            }
            Action::ShowRaw(show) => self.show_raw = show,
            Action::AddScan { path, cloud, info } => {
                let said = self.doc.add_scan(path, *cloud, info);
                self.log.extend(said);
            }
            Action::RemoveFile(index) => {
                self.doc.remove_file(index);
            }
            Action::SetMap(map) => self.doc.set_map(*map),
            Action::CloseMap => {
                self.doc.close_map();
            }
            Action::MapSaved(path) => self.doc.map_saved(path),
            Action::ShowRemoved(masks) => self.doc.show_removed(masks),
            Action::ShowMoving(masks) => self.doc.show_moving(masks),
            Action::ClearRemoved => self.doc.clear_removed(),
        }
    }

    /// Rebuilds the layers whose file, map or colouring changed.
    fn sync_layers(&mut self) {
        let (color, size) = (self.settings.color, self.settings.point_size_px);
        self.layers.sync(&self.doc, color, size);
    }

    /// The layers the viewport shows now, with their slots.
    fn shown_layers(&self) -> Vec<(usize, &PointLayer)> {
        let mut out = Vec::new();
        let show_map = self.doc.map().is_some() && !matches!(self.step, Step::Import | Step::Clean);
        if !show_map || self.show_raw && self.step != Step::Simulate {
            out.extend(self.layers.files().enumerate());
        }
        if let Some(m) = self.layers.map()
            && (show_map || self.doc.files().is_empty())
        {
            out.push((SLOT_MAP, m));
        }
        out
    }

    /// Takes in what every panel's background work has finished.
    fn poll_panels(&mut self) {
        self.with_panels(|panels, cx| {
            for p in panels.all_mut() {
                p.poll(cx);
            }
        });
    }

    fn workflow_panel(&mut self, ui: &mut egui::Ui) {
        ui.add_space(6.0);
        ui.horizontal_wrapped(|ui| {
            for s in Step::ALL {
                let enabled = match s {
                    Step::Import => true,
                    Step::Clean => !self.doc.files().is_empty(),
                    Step::Map | Step::Simulate | Step::Export => self.doc.map().is_some(),
                };
                let b =
                    ui.add_enabled(enabled, egui::Button::selectable(self.step == s, s.label()));
                if b.clicked() {
                    self.step = s;
                }
            }
        });
        ui.separator();
        let step = self.step;
        self.with_panels(|panels, cx| {
            egui::ScrollArea::vertical().show(ui, |ui| panels.of(step).ui(ui, cx));
        });
    }

    fn status_bar(&mut self, ui: &mut egui::Ui) {
        ui.horizontal(|ui| {
            if let Some((i, job)) = self.running_job() {
                ui.spinner();
                ui.label(job.name);
                if let Some(f) = job.fraction {
                    ui.add(
                        egui::ProgressBar::new(f)
                            .desired_width(200.0)
                            .show_percentage(),
                    );
                }
                if ui.button("Cancel").clicked() {
                    self.panels.all_mut()[i].cancel();
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

    /// The first job running, in the order of the workflow, and its panel's index.
    fn running_job(&self) -> Option<(usize, JobStatus)> {
        self.panels
            .all()
            .iter()
            .enumerate()
            .find_map(|(i, p)| p.job().map(|j| (i, j)))
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
                self.sync_layers();
            }
            if self.doc.map().is_some() && !self.doc.files().is_empty() {
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
        let o = self.doc.origin()[2];
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
        for (_, l) in self.shown_layers() {
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
        self.shown_layers()
            .into_iter()
            .filter_map(|(slot, _)| match slot {
                SLOT_MAP => self.doc.map().map(|m| m.cloud.as_ref()),
                i => self.doc.files().get(i).map(|f| f.cloud.as_ref()),
            })
    }

    /// Points the camera at everything loaded.
    pub(super) fn frame_all(&mut self) {
        let mut lo = [f32::INFINITY; 3];
        let mut hi = [f32::NEG_INFINITY; 3];
        for (_, l) in self.shown_layers() {
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
        let origin = self.doc.origin();
        let world: [f64; 3] = std::array::from_fn(|k| origin[k] + pick.pos[k] as f64);
        let mut t = format!("x {:.3}  y {:.3}  z {:.3}", world[0], world[1], world[2]);
        let cloud = match pick.slot {
            SLOT_MAP => self.doc.map().map(|m| &m.cloud),
            i => self.doc.files().get(i).map(|f| &f.cloud),
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
        self.panels
            .simulate
            .overlay(&self.doc, self.step, &mut overlay);
        let layers: Vec<(usize, PointLayer)> = self
            .shown_layers()
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
                self.panels.simulate.viewport_clicked(p.pos);
            }
            self.pick = Some((p, text));
        }
        let files_shown = refs.iter().any(|(slot, _)| *slot != SLOT_MAP);
        if files_shown && let Some(rect) = self.view.last_rect {
            preview_legend(ui, rect, &super::layers::legend(&self.doc));
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
            self.with_panels(|panels, cx| panels.import.start(dropped, cx));
        }
    }

    /// Unattended runs (`--screenshot`, `--bench-frames`): their step after each frame.
    fn capture_step(&mut self, ctx: &egui::Context) {
        let drawn = !self.gpu || self.view.complete();
        self.capture.screenshot_step(ctx, !self.busy() && drawn);
        let points = (!self.busy() && !self.doc.is_empty())
            .then(|| self.doc.points_in_files() + self.doc.map().map_or(0, |m| m.cloud.len()));
        self.capture.bench_step(ctx, &mut self.view, points);
    }
}

impl eframe::App for AerieApp {
    fn ui(&mut self, ui: &mut egui::Ui, _frame: &mut eframe::Frame) {
        let ctx = ui.ctx().clone();
        self.poll_panels();
        self.dropped_files(&ctx);
        egui::Panel::bottom("status").show(ui, |ui| self.status_bar(ui));
        egui::Panel::left("workflow")
            .default_size(360.0)
            .resizable(true)
            .show(ui, |ui| self.workflow_panel(ui));
        if self.panels.simulate.has_flight() {
            egui::Panel::right("flight")
                .default_size(360.0)
                .resizable(true)
                .show(ui, |ui| self.panels.simulate.side_panel(ui));
        }
        egui::CentralPanel::default().show(ui, |ui| self.viewport(ui));
        if self.busy() {
            ctx.request_repaint_after(std::time::Duration::from_millis(100));
        }
        self.capture_step(&ctx);
    }

    fn save(&mut self, storage: &mut dyn eframe::Storage) {
        if !self.capture.screenshot_pending() {
            self.settings.recipe = self.panels.clean.recipe.clone();
            self.settings.recent = self.panels.import.recent.clone();
            eframe::set_value(storage, eframe::APP_KEY, &self.settings);
        }
    }

    fn on_exit(&mut self) {
        self.panels.simulate.stop();
    }
}

/// Whether `cloud` holds what colour mode `mode` draws from.
/// The previews' colours shown in the top right corner of the viewport's `rect`, one line each: a square and
/// what it means.
fn preview_legend(ui: &egui::Ui, rect: egui::Rect, entries: &[([u8; 3], &str)]) {
    let corner = rect.right_top() + egui::vec2(-8.0, 8.0);
    for (i, (rgb, text)) in entries.iter().enumerate() {
        let y = corner.y + 18.0 * i as f32;
        let at = egui::pos2(corner.x, y);
        let label = ui.painter().text(
            at,
            egui::Align2::RIGHT_TOP,
            *text,
            egui::FontId::proportional(13.0),
            Color32::from_gray(230),
        );
        let square = egui::Rect::from_min_size(
            egui::pos2(label.left() - 16.0, y + 2.0),
            egui::vec2(10.0, 10.0),
        );
        ui.painter()
            .rect_filled(square, 1.0, Color32::from_rgb(rgb[0], rgb[1], rgb[2]));
    }
}

fn has_colour_source(cloud: &Cloud, mode: ColorMode) -> bool {
    match mode {
        ColorMode::Height => true,
        ColorMode::Intensity => cloud.intensity().is_some(),
        ColorMode::PlaneThickness => cloud.gamma().is_some(),
        ColorMode::Normal => cloud.normals().is_some(),
        ColorMode::Rgb => cloud.color().is_some(),
    }
}
