//! The 3D viewport: point layers drawn with wgpu (or on the CPU where there is no GPU), an orbit/pan/zoom/fly
//! camera, picking, and overlays (paths, goal, collisions) painted by egui over the points.

pub mod camera;
pub mod cpu;
pub mod gpu;
pub mod points;

use eframe::egui::{self, Color32, Pos2, Rect, Sense, Stroke};

pub use camera::Camera;
pub use points::{ColorMode, PointLayer};

/// Lines and markers in view coordinates, drawn over the points.
#[derive(Default)]
pub struct Overlay {
    /// Points drawn on top of everything (a live scan), in one colour.
    pub points: Vec<[f32; 3]>,
    pub points_color: Color32,
    pub lines: Vec<(Vec<[f32; 3]>, Color32)>,
    pub markers: Vec<([f32; 3], Color32, String)>,
}

/// A point the user clicked: which layer, which point of its source, where.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Pick {
    pub slot: usize,
    pub source_index: u32,
    pub pos: [f32; 3],
}

/// What happened in the viewport this frame.
#[derive(Default)]
pub struct ViewResponse {
    pub clicked: Option<Pick>,
}

/// The viewport's state between frames.
pub struct Viewport {
    pub camera: Camera,
    /// Points the GPU draws per frame: the whole image restarts with this many while the camera moves and fills
    /// up by this many per frame once it rests (see `gpu`); adapted to keep frames near 40 ms.
    pub budget: usize,
    /// Whether to adapt `budget` to the frame time (off for benchmarks).
    pub adaptive: bool,
    fill: std::sync::Arc<gpu::Fill>,
    /// W A S D Q E move the camera (fly mode) while the pointer is over the viewport.
    pub fly: bool,
    cpu_texture: Option<egui::TextureHandle>,
    cpu_key: Option<CpuKey>,
    /// Points drawn in the last frame, for the status line.
    pub drawn: usize,
    /// Where the viewport was last drawn, in points.
    pub last_rect: Option<Rect>,
    /// Points above this height (view z) are neither drawn nor picked: the roof of a building lifted off, to
    /// see and click inside it.
    pub cut_above: Option<f32>,
}

impl Default for Viewport {
    fn default() -> Self {
        Viewport {
            camera: Camera::default(),
            budget: 1_000_000,
            adaptive: true,
            fill: Default::default(),
            fly: false,
            cpu_texture: None,
            cpu_key: None,
            drawn: 0,
            last_rect: None,
            cut_above: None,
        }
    }
}

/// Most points the CPU fallback draws, moving or not: it must stay interactive without a GPU.
const CPU_BUDGET: usize = 1_500_000;
/// Most points of each layer searched for a click (an even sample: the layers are in level-of-detail order).
const PICK_BUDGET: usize = 4_000_000;

impl Viewport {
    /// Draws `layers` (slot, layer) and `overlay` filling `ui`, handles the camera, and reports a click.
    pub fn show(
        &mut self,
        ui: &mut egui::Ui,
        gpu: bool,
        layers: &[(usize, &PointLayer)],
        overlay: &Overlay,
    ) -> ViewResponse {
        // Only what is visible: a rect reaching past the panel would stretch the image and move the clicks.
        let rect = ui.available_rect_before_wrap().intersect(ui.clip_rect());
        let response = ui.allocate_rect(rect, Sense::click_and_drag());
        self.last_rect = Some(rect);
        self.handle_input(ui, &response, rect);
        ui.painter().rect_filled(rect, 0.0, BACKGROUND);
        if gpu {
            self.adapt_budget(ui);
            self.paint_gpu(ui, rect, layers);
            self.drawn = self.fill.drawn.load(std::sync::atomic::Ordering::Relaxed);
            if !self
                .fill
                .complete
                .load(std::sync::atomic::Ordering::Relaxed)
            {
                ui.ctx().request_repaint();
            }
        } else {
            let counts: Vec<usize> = layers
                .iter()
                .map(|(_, l)| l.len().min(CPU_BUDGET))
                .collect();
            self.drawn = counts.iter().sum();
            self.paint_cpu(ui, rect, layers, &counts);
        }
        self.paint_overlay(ui, rect, overlay);
        let mut out = ViewResponse::default();
        if response.clicked()
            && let Some(pos) = response.interact_pointer_pos()
        {
            let counts: Vec<usize> = layers
                .iter()
                .map(|(_, l)| l.len().min(PICK_BUDGET))
                .collect();
            out.clicked = self.pick(rect, pos, layers, &counts);
        }
        if response.double_clicked()
            && let Some(p) = out.clicked
        {
            self.camera.target = p.pos;
        }
        out
    }

    fn handle_input(&mut self, ui: &egui::Ui, response: &egui::Response, rect: Rect) {
        let mut moved = false;
        let d = response.drag_delta();
        if d != egui::Vec2::ZERO {
            let pan = response.dragged_by(egui::PointerButton::Secondary)
                || response.dragged_by(egui::PointerButton::Middle)
                || ui.input(|i| i.modifiers.shift);
            if pan {
                self.camera.pan(d.x, d.y, rect.height());
            } else {
                self.camera.orbit(d.x, d.y);
            }
            moved = true;
        }
        if response.hovered() {
            let scroll = ui.input(|i| i.smooth_scroll_delta.y);
            if scroll != 0.0 {
                self.camera.zoom(scroll);
                moved = true;
            }
            if self.fly && !ui.ctx().egui_wants_keyboard_input() {
                moved |= self.fly_keys(ui);
            }
        }
        if moved {
            ui.ctx().request_repaint();
        }
    }

    fn fly_keys(&mut self, ui: &egui::Ui) -> bool {
        use egui::Key;
        let (f, r, u, dt) = ui.input(|i| {
            let k = |a: Key, b: Key| i.key_down(a) as i32 as f32 - i.key_down(b) as i32 as f32;
            (
                k(Key::W, Key::S),
                k(Key::D, Key::A),
                k(Key::E, Key::Q),
                i.stable_dt.min(0.1),
            )
        });
        if f == 0.0 && r == 0.0 && u == 0.0 {
            return false;
        }
        let step = self.camera.distance.max(2.0) * 0.6 * dt;
        self.camera.fly(f, r, u, step);
        ui.ctx().request_repaint();
        true
    }

    /// The height above which nothing is drawn (view z), `f32::MAX` when there is no cut.
    fn cut(&self) -> f32 {
        self.cut_above.unwrap_or(f32::MAX)
    }

    /// There is nothing to draw: the image is complete as it is.
    pub fn show_nothing(&self) {
        self.fill
            .complete
            .store(true, std::sync::atomic::Ordering::Relaxed);
        self.fill
            .drawn
            .store(0, std::sync::atomic::Ordering::Relaxed);
    }

    /// Whether the last image shows every point (the GPU fills it over several frames).
    pub fn complete(&self) -> bool {
        self.fill
            .complete
            .load(std::sync::atomic::Ordering::Relaxed)
    }

    /// Keeps a frame near 40 ms while the image is being drawn: fewer points per frame when frames are slow.
    fn adapt_budget(&mut self, ui: &egui::Ui) {
        let filling = !self
            .fill
            .complete
            .load(std::sync::atomic::Ordering::Relaxed);
        if !self.adaptive || !filling {
            return;
        }
        let dt = ui.input(|i| i.unstable_dt);
        if dt > 0.06 {
            self.budget = (self.budget as f32 * 0.7) as usize;
        } else if dt < 0.03 {
            self.budget = (self.budget as f32 * 1.25) as usize;
        }
        self.budget = self.budget.clamp(150_000, 50_000_000);
    }

    fn paint_gpu(&self, ui: &egui::Ui, rect: Rect, layers: &[(usize, &PointLayer)]) {
        use std::hash::{Hash, Hasher};
        let ppp = ui.ctx().pixels_per_point();
        let size_px = [
            (rect.width() * ppp).round() as u32,
            (rect.height() * ppp).round() as u32,
        ];
        let c = &self.camera;
        let mut h = std::collections::hash_map::DefaultHasher::new();
        [
            c.target[0],
            c.target[1],
            c.target[2],
            c.yaw,
            c.pitch,
            c.distance,
            c.fov_y,
        ]
        .map(f32::to_bits)
        .hash(&mut h);
        size_px.hash(&mut h);
        self.cut().to_bits().hash(&mut h);
        for (slot, l) in layers {
            (slot, l.version, l.point_size_px.to_bits(), l.shaded).hash(&mut h);
        }
        let vp = self.camera.view_proj(rect.width() / rect.height().max(1.0));
        let bg = [BACKGROUND.r(), BACKGROUND.g(), BACKGROUND.b()].map(|v| v as f64 / 255.0);
        let draw = gpu::DrawPoints {
            key: h.finish(),
            view_proj: vp.into(),
            eye: self.camera.eye().coords.into(),
            cut_above: self.cut(),
            size_px,
            background: bg,
            layers: layers
                .iter()
                .map(|(slot, l)| (*slot, (*l).clone()))
                .collect(),
            budget: self.budget,
            fill: std::sync::Arc::clone(&self.fill),
        };
        ui.painter().add(gpu::callback(rect, draw));
    }

    fn paint_cpu(
        &mut self,
        ui: &egui::Ui,
        rect: Rect,
        layers: &[(usize, &PointLayer)],
        counts: &[usize],
    ) {
        let ppp = ui.ctx().pixels_per_point();
        let w = (rect.width() * ppp).round().max(1.0) as u32;
        let h = (rect.height() * ppp).round().max(1.0) as u32;
        let c = &self.camera;
        let cam_key = [
            c.target[0],
            c.target[1],
            c.target[2],
            c.yaw,
            c.pitch + c.distance,
        ]
        .map(f32::to_bits);
        let key = (
            layers.iter().map(|(_, l)| l.version).collect(),
            [w, h],
            cam_key,
            self.drawn,
            self.cut().to_bits(),
        );
        if self.cpu_key.as_ref() != Some(&key) || self.cpu_texture.is_none() {
            let owned: Vec<(PointLayer, usize)> = layers
                .iter()
                .zip(counts)
                .map(|((_, l), &n)| ((*l).clone(), n))
                .collect();
            let px = cpu::rasterise(
                c,
                &owned,
                (w as usize, h as usize),
                [BACKGROUND.r(), BACKGROUND.g(), BACKGROUND.b()],
                self.cut(),
            );
            let image = egui::ColorImage::from_rgba_unmultiplied(
                [w as usize, h as usize],
                bytemuck::cast_slice(&px),
            );
            match &mut self.cpu_texture {
                Some(t) => t.set(image, egui::TextureOptions::NEAREST),
                None => {
                    self.cpu_texture = Some(ui.ctx().load_texture(
                        "aerie_viewport",
                        image,
                        egui::TextureOptions::NEAREST,
                    ));
                }
            }
            self.cpu_key = Some(key);
        }
        if let Some(t) = &self.cpu_texture {
            let uv = Rect::from_min_max(Pos2::ZERO, Pos2::new(1.0, 1.0));
            ui.painter().image(t.id(), rect, uv, Color32::WHITE);
        }
    }

    fn to_screen(&self, rect: Rect) -> impl Fn([f32; 3]) -> Option<Pos2> {
        let vp = self.camera.view_proj(rect.width() / rect.height().max(1.0));
        let size = [rect.width(), rect.height()];
        let min = rect.min;
        move |p| Camera::project(&vp, p, size).map(|([x, y], _)| Pos2::new(min.x + x, min.y + y))
    }

    fn paint_overlay(&self, ui: &egui::Ui, rect: Rect, overlay: &Overlay) {
        let painter = ui.painter_at(rect);
        let project = self.to_screen(rect);
        if !overlay.points.is_empty() {
            // One mesh of small squares: a live scan stays visible over the map without taking part in the
            // map's progressive image (which would restart with every frame of the scan).
            let mut mesh = egui::Mesh::default();
            for p in overlay.points.iter().filter_map(|p| project(*p)) {
                mesh.add_colored_rect(
                    Rect::from_center_size(p, egui::vec2(2.5, 2.5)),
                    overlay.points_color,
                );
            }
            painter.add(egui::Shape::mesh(mesh));
        }
        for (line, color) in &overlay.lines {
            let pts: Vec<Pos2> = line.iter().filter_map(|p| project(*p)).collect();
            if pts.len() > 1 {
                painter.add(egui::Shape::line(pts, Stroke::new(2.0, *color)));
            }
        }
        for (p, color, label) in &overlay.markers {
            if let Some(s) = project(*p) {
                painter.circle(s, 6.0, color.gamma_multiply(0.6), Stroke::new(2.0, *color));
                painter.text(
                    s + egui::vec2(9.0, -9.0),
                    egui::Align2::LEFT_BOTTOM,
                    label,
                    egui::FontId::proportional(13.0),
                    *color,
                );
            }
        }
    }

    /// The nearest drawn point within 6 pixels of `pos`, front-most first.
    fn pick(
        &self,
        rect: Rect,
        pos: Pos2,
        layers: &[(usize, &PointLayer)],
        counts: &[usize],
    ) -> Option<Pick> {
        let vp = self.camera.view_proj(rect.width() / rect.height().max(1.0));
        let size = [rect.width(), rect.height()];
        let (cx, cy) = (pos.x - rect.min.x, pos.y - rect.min.y);
        let mut best: Option<(f32, Pick)> = None;
        for ((slot, layer), &n) in layers.iter().zip(counts) {
            for (k, p) in layer.points.iter().take(n).enumerate() {
                if p.pos[2] > self.cut() {
                    continue;
                }
                let Some(([x, y], z)) = Camera::project(&vp, p.pos, size) else {
                    continue;
                };
                if (x - cx).powi(2) + (y - cy).powi(2) <= 36.0
                    && best.as_ref().is_none_or(|(bz, _)| z < *bz)
                {
                    best = Some((
                        z,
                        Pick {
                            slot: *slot,
                            source_index: layer.source_index[k],
                            pos: p.pos,
                        },
                    ));
                }
            }
        }
        best.map(|(_, p)| p)
    }
}

/// What the CPU image depends on: layer versions, size in pixels, camera, points drawn, the cut height.
type CpuKey = (Vec<u64>, [u32; 2], [u32; 5], usize, u32);

pub const BACKGROUND: Color32 = Color32::from_rgb(22, 24, 29);
