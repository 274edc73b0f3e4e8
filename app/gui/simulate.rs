//! Step 4, simulate: pick a vehicle and a sensor, click the start and the goal in the viewport, fly. The flight is
//! a one-vehicle mission (take off, reach the goal around obstacles with the built-in planner, land) flown by the
//! same `Flight` as `aerie fly`; the live scan is drawn over the map, the range image and the plots beside it, the
//! flight's events listed as they happen. The flight can be saved into a folder as `aerie fly -o` writes it.

use aerie_pipeline::Cloud;
use aerie_simcore::mission::{Goal, Mission, SensorSpec, VehicleSpec};
use aerie_simcore::record::{Compression, RecordOptions};
use aerie_simcore::render::Image;
use aerie_simcore::sensor::SensorModel;
use aerie_simcore::simulator::Map;
use aerie_simcore::vehicle::QuadParams;
use eframe::egui::{self, Color32, RichText};
use egui_plot::{Legend, Line, Plot};

use super::action::Step;
use super::document::Document;
use super::live::{Live, Recording, Snapshot};
use super::panel::{Cx, Panel};
use super::view::Overlay;

/// Most points of a live scan drawn over the map (a 128-beam LiDAR returns 260k per frame).
const MAX_SCAN_DRAWN: usize = 40_000;

/// Which point a click in the viewport sets.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum ClickSets {
    /// Where the vehicle takes off.
    Start,
    /// Where it flies to.
    #[default]
    Goal,
}

/// The simulate step: the flight's settings, the points clicked, the flight running.
pub struct SimPanel {
    /// The vehicle preset flown.
    pub vehicle: String,
    /// The sensor preset carried.
    pub sensor: String,
    /// The vehicle's speed limit, m/s.
    pub max_speed_m_s: f64,
    /// Flight height above the clicked points, metres.
    pub altitude_m: f64,
    /// Which point a click in the viewport sets.
    pub click_sets: ClickSets,
    /// Where the vehicle starts, view-local, if the user clicked it (else the map's default start).
    pub start: Option<[f32; 3]>,
    /// Where it flies to, view-local.
    pub goal: Option<[f32; 3]>,
    /// Multiple of real time the flight runs at; 0 for as fast as it goes.
    pub speed_x: f32,
    /// Save the flight into `record_dir` (flight.mcap, trajectories, events, summary), as `aerie fly -o`.
    pub record: bool,
    /// The folder the flight is saved into.
    pub record_dir: String,
    /// How the recording is written (compression, rosbag2 metadata).
    pub recording: RecordOptions,
    live: Option<Live>,
    /// The flight as last seen.
    pub snap: Snapshot,
    scan_seq: u64,
    range_tex: Option<egui::TextureHandle>,
    reported: bool,
    /// The default start and the map it was computed for (its version).
    auto_start: (Option<u64>, Option<[f32; 3]>),
    /// The document's origin epoch the clicked points belong to.
    origin_epoch: u64,
}

impl Default for SimPanel {
    fn default() -> Self {
        SimPanel {
            vehicle: "marsim_quad".into(),
            sensor: "mid360".into(),
            max_speed_m_s: 2.0,
            altitude_m: 1.5,
            click_sets: ClickSets::Goal,
            start: None,
            goal: None,
            speed_x: 1.0,
            record: false,
            record_dir: "run".into(),
            recording: RecordOptions::default(),
            live: None,
            snap: Snapshot::default(),
            scan_seq: 0,
            range_tex: None,
            reported: false,
            auto_start: (None, None),
            origin_epoch: 0,
        }
    }
}

impl SimPanel {
    /// Whether a flight is running.
    pub fn running(&self) -> bool {
        self.live.is_some() && !self.snap.finished
    }

    /// Whether a flight was started (running or over): the app shows its plots.
    pub fn has_flight(&self) -> bool {
        self.live.is_some()
    }

    /// The latest scan, thinned to at most `MAX_SCAN_DRAWN` points, for the overlay.
    pub fn scan_points(&self) -> Vec<[f32; 3]> {
        let scan = &self.snap.scan;
        let stride = scan.len().div_ceil(MAX_SCAN_DRAWN).max(1);
        scan.iter().step_by(stride).copied().collect()
    }

    /// Stops the flight, if one runs.
    pub fn stop(&mut self) {
        if let Some(l) = &self.live {
            l.stop();
        }
    }

    /// The view origin was forgotten (everything closed): drop the clicked points and the last flight, keep the
    /// vehicle and sensor settings.
    fn forget_map(&mut self) {
        let settings = std::mem::take(self);
        *self = SimPanel {
            vehicle: settings.vehicle,
            sensor: settings.sensor,
            max_speed_m_s: settings.max_speed_m_s,
            altitude_m: settings.altitude_m,
            click_sets: settings.click_sets,
            speed_x: settings.speed_x,
            record: settings.record,
            record_dir: settings.record_dir,
            recording: settings.recording,
            origin_epoch: settings.origin_epoch,
            ..SimPanel::default()
        };
    }
}

/// The mission the window's settings describe, in the map frame.
fn mission(s: &SimPanel, origin: [f64; 3]) -> Result<Mission, String> {
    let world = |p: [f32; 3], up: f64| {
        [
            origin[0] + p[0] as f64,
            origin[1] + p[1] as f64,
            origin[2] + p[2] as f64 + up,
        ]
    };
    let start = s.start_point().ok_or("click a start point on the map")?;
    let goal = s.goal.ok_or("click a goal point on the map")?;
    let st = world(start, 0.3);
    let mission = Mission {
        seed: 1,
        duration_s: None,
        stop_on_collision: false,
        planner_voxel_m: None,
        obstacles: Vec::new(),
        recording: s.recording,
        vehicles: vec![VehicleSpec {
            name: "uav".into(),
            preset: s.vehicle.clone(),
            start: [st[0], st[1], st[2], 0.0],
            max_speed_m_s: s.max_speed_m_s,
            max_accel_m_s2: 1.5,
            sensors: vec![SensorSpec {
                name: s.sensor.clone(),
                preset: s.sensor.clone(),
                mount: [0.0, 0.0, 0.1, 0.0, 0.0, 0.0],
                points_in: Default::default(),
            }],
            goals: vec![
                Goal::Waypoint {
                    position: world(start, s.altitude_m),
                    speed_m_s: Some(1.0),
                },
                Goal::Goal {
                    position: world(goal, s.altitude_m),
                    speed_m_s: None,
                },
                Goal::Land {},
            ],
        }],
    };
    mission.check()?;
    Ok(mission)
}

impl SimPanel {
    /// Where the vehicle starts: the clicked start, else the default of the map (see [`default_start`]).
    pub fn start_point(&self) -> Option<[f32; 3]> {
        self.start.or(self.auto_start.1)
    }

    /// Recomputes the default start when the map changes (once per map: it reads every point).
    fn refresh_default_start(&mut self, doc: &Document) {
        let key = doc.map().map(|_| doc.map_version());
        if self.auto_start.0 != key {
            let start = doc
                .map()
                .and_then(|m| default_start(&m.cloud, doc.origin()));
            self.auto_start = (key, start);
        }
    }

    /// A click in the viewport at `pos` (view-local) sets the start or the goal.
    pub fn viewport_clicked(&mut self, pos: [f32; 3]) {
        match self.click_sets {
            ClickSets::Start => self.start = Some(pos),
            ClickSets::Goal => self.goal = Some(pos),
        }
    }
}

/// Where the vehicle starts when the user has not clicked, view-local: the lowest point within 2 m (in x, y)
/// of the middle of the map (the ground there), else the point nearest the middle.
fn default_start(cloud: &Cloud, origin: [f64; 3]) -> Option<[f32; 3]> {
    let (lo, hi) = cloud.bounds()?;
    let c = [(lo[0] + hi[0]) / 2.0, (lo[1] + hi[1]) / 2.0];
    let mut lowest_near: Option<[f64; 3]> = None;
    let mut nearest = (f64::INFINITY, [0.0; 3]);
    for i in 0..cloud.len() {
        let w = cloud.world(i);
        let d = (w[0] - c[0]).hypot(w[1] - c[1]);
        if d < 2.0 && lowest_near.is_none_or(|l| w[2] < l[2]) {
            lowest_near = Some(w);
        }
        if d < nearest.0 {
            nearest = (d, w);
        }
    }
    let ground = lowest_near.unwrap_or(nearest.1);
    Some(std::array::from_fn(|k| (ground[k] - origin[k]) as f32))
}

impl SimPanel {
    fn start_flight(&mut self, cx: &mut Cx<'_>) {
        let origin = cx.doc.origin();
        let mission = match mission(self, origin) {
            Ok(m) => m,
            Err(e) => return cx.error(e),
        };
        let Some(m) = cx.doc.map() else { return };
        let map = match Map::try_from((*m.packed).clone()) {
            Ok(map) => map,
            Err(e) => return cx.error(format!("cannot fly in this map: {e}")),
        };
        self.stop();
        let recording = self.record.then(|| Recording {
            dir: self.record_dir.trim().into(),
            options: mission.recording,
        });
        if recording
            .as_ref()
            .is_some_and(|r| r.dir.as_os_str().is_empty())
        {
            return cx.error("choose a folder to save the recording into");
        }
        let live = Live::start(map, (mission, recording), origin, cx.waker());
        live.set_speed(self.speed_x);
        self.live = Some(live);
        self.snap = Snapshot::default();
        self.reported = false;
        cx.info(format!(
            "flying with a {} on a {}",
            self.sensor, self.vehicle
        ));
    }

    /// Takes the flight's latest snapshot; tells how it ended, once.
    fn poll_flight(&mut self, cx: &mut Cx<'_>) {
        let Some(live) = &self.live else { return };
        let snap = live.snapshot();
        let stopped = live.stopped();
        if snap.scan_seq != self.scan_seq {
            self.scan_seq = snap.scan_seq;
            if let Some(r) = &snap.range {
                let image = range_image(r);
                match &mut self.range_tex {
                    Some(t) => t.set(image, egui::TextureOptions::NEAREST),
                    None => {
                        self.range_tex = Some(cx.egui.load_texture(
                            "range",
                            image,
                            egui::TextureOptions::NEAREST,
                        ));
                    }
                }
            }
        }
        let done = snap.finished && !self.reported;
        self.snap = snap;
        if done {
            self.reported = true;
            let s = &self.snap;
            let how = if stopped {
                format!("stopped at {:.1} s of {:.1} s", s.t, s.end)
            } else if s.t < s.end - 0.01 {
                // The window's missions never stop on a collision: an early end means the vehicle landed.
                format!("finished at {:.1} s, the vehicle landed", s.t)
            } else {
                format!("finished at {:.1} s", s.t)
            };
            let msg = format!(
                "flight {how}, {} collision(s), {:.1}x real time",
                s.events.iter().filter(|e| e.collision().is_some()).count(),
                s.real_time_factor
            );
            let saved = s
                .saved
                .as_ref()
                .map_or(String::new(), |d| format!("; saved to {}", d.display()));
            match s.error.clone() {
                Some(e) => cx.error(e),
                None => cx.info(msg + &saved),
            }
        }
    }
}

/// A range image in turbo colours, near red, far blue, no return black.
fn range_image(r: &Image) -> egui::ColorImage {
    let max = r.data.iter().copied().fold(0.0f32, f32::max).max(1.0);
    let px: Vec<Color32> = r
        .data
        .iter()
        .map(|&v| {
            if v > 0.0 {
                let c = super::view::points::turbo(1.0 - (v / max).sqrt());
                Color32::from_rgb(c[0], c[1], c[2])
            } else {
                Color32::BLACK
            }
        })
        .collect();
    egui::ColorImage {
        size: [r.width.max(1), r.height.max(1)],
        source_size: egui::vec2(r.width as f32, r.height as f32),
        pixels: px,
    }
}

impl SimPanel {
    /// What the viewport draws over the points: the start, the goal, the live scan, the vehicles' tracks and
    /// the collisions; shown in the Simulate step and while a flight exists.
    pub fn overlay(&self, doc: &Document, step: Step, o: &mut Overlay) {
        if doc.map().is_none() || step != Step::Simulate && !self.has_flight() {
            return;
        }
        if let Some(p) = self.start_point() {
            o.markers
                .push((p, Color32::from_rgb(80, 230, 120), "start".into()));
        }
        if let Some(p) = self.goal {
            o.markers
                .push((p, Color32::from_rgb(255, 170, 40), "goal".into()));
        }
        let origin = doc.origin();
        o.points = self.scan_points();
        o.points_color = Color32::WHITE;
        for v in &self.snap.vehicles {
            o.lines
                .push((v.track.clone(), Color32::from_rgb(90, 200, 255)));
            let p = std::array::from_fn(|k| (v.position[k] - origin[k]) as f32);
            o.markers
                .push((p, Color32::from_rgb(90, 200, 255), v.name.clone()));
        }
        for e in self.snap.events.iter().filter_map(|e| e.collision()) {
            let p = std::array::from_fn(|k| (e.point_hit[k] - origin[k]) as f32);
            o.markers.push((
                p,
                Color32::from_rgb(255, 60, 60),
                format!("collision {:.1} s", e.time_s),
            ));
        }
    }
}

fn presets_ui(s: &mut SimPanel, ui: &mut egui::Ui) {
    egui::ComboBox::from_label("vehicle")
        .selected_text(&s.vehicle)
        .show_ui(ui, |ui| {
            for n in QuadParams::preset_names() {
                ui.selectable_value(&mut s.vehicle, n.to_string(), *n);
            }
        });
    egui::ComboBox::from_label("sensor")
        .selected_text(&s.sensor)
        .show_ui(ui, |ui| {
            for n in SensorModel::preset_names() {
                ui.selectable_value(&mut s.sensor, n.to_string(), *n);
            }
        });
    ui.horizontal(|ui| {
        ui.add(
            egui::DragValue::new(&mut s.max_speed_m_s)
                .range(0.2..=15.0)
                .speed(0.1)
                .suffix(" m/s"),
        );
        ui.label("speed limit");
    });
    ui.horizontal(|ui| {
        ui.add(
            egui::DragValue::new(&mut s.altitude_m)
                .range(0.3..=50.0)
                .speed(0.1)
                .suffix(" m"),
        );
        ui.label("height above the clicked points");
    });
}

fn fmt_point(origin: [f64; 3], p: Option<[f32; 3]>) -> String {
    let o = origin;
    p.map_or("—".into(), |p| {
        format!(
            "{:.1}, {:.1}, {:.1}",
            o[0] + p[0] as f64,
            o[1] + p[1] as f64,
            o[2] + p[2] as f64
        )
    })
}

impl SimPanel {
    fn controls_ui(&mut self, ui: &mut egui::Ui, cx: &mut Cx<'_>) {
        ui.horizontal(|ui| {
            if ui
                .add_enabled(
                    self.goal.is_some(),
                    egui::Button::new(RichText::new("Fly").strong()),
                )
                .clicked()
            {
                self.start_flight(cx);
            }
            if let Some(live) = &self.live
                && !self.snap.finished
            {
                let paused = live.paused();
                if ui.button(if paused { "Resume" } else { "Pause" }).clicked() {
                    live.set_paused(!paused);
                }
                if ui.add_enabled(paused, egui::Button::new("Step")).clicked() {
                    live.step();
                }
                if ui.button("Stop").clicked() {
                    live.stop();
                }
            }
        });
        ui.horizontal(|ui| {
            ui.label("speed");
            for (label, x) in [("1x", 1.0), ("2x", 2.0), ("5x", 5.0), ("max", 0.0)] {
                if ui.selectable_label(self.speed_x == x, label).clicked() {
                    self.speed_x = x;
                    if let Some(l) = &self.live {
                        l.set_speed(x);
                    }
                }
            }
        });
    }

    /// The flight's time, errors and events as they happen.
    fn flight_ui(&self, ui: &mut egui::Ui) {
        let s = &self.snap;
        if s.preparing {
            ui.label("building the map's beam index (once per map) ...");
        } else {
            ui.label(format!(
                "t = {:.1} s of {:.1} s, {:.1}x real time",
                s.t, s.end, s.real_time_factor
            ));
        }
        if let Some(e) = &s.error {
            ui.colored_label(Color32::from_rgb(255, 110, 100), e);
        }
        let collisions = s.events.iter().filter(|e| e.collision().is_some()).count();
        ui.label(format!("{collisions} collision(s); events:"));
        for e in &s.events {
            let text = RichText::new(e.describe()).monospace();
            if e.collision().is_some() {
                ui.colored_label(Color32::from_rgb(255, 110, 100), text);
            } else {
                ui.label(text);
            }
        }
    }
}

impl Panel for SimPanel {
    fn poll(&mut self, cx: &mut Cx<'_>) {
        // The view origin was forgotten (everything closed): the points clicked meant places around it.
        if cx.doc.origin_epoch() != self.origin_epoch {
            self.forget_map();
            self.origin_epoch = cx.doc.origin_epoch();
        }
        self.refresh_default_start(cx.doc);
        self.poll_flight(cx);
    }

    fn busy(&self) -> bool {
        self.running()
    }

    fn cancel(&mut self) {
        self.stop();
    }

    fn ui(&mut self, ui: &mut egui::Ui, cx: &mut Cx<'_>) {
        ui.heading("Simulate");
        presets_ui(self, ui);
        ui.add_space(4.0);
        ui.horizontal(|ui| {
            ui.label("a click in the view sets the");
            ui.radio_value(&mut self.click_sets, ClickSets::Start, "start");
            ui.radio_value(&mut self.click_sets, ClickSets::Goal, "goal");
        });
        let origin = cx.doc.origin();
        ui.label(format!("start: {}", fmt_point(origin, self.start_point())));
        ui.label(format!("goal:  {}", fmt_point(origin, self.goal)));
        ui.separator();
        recording_ui(self, ui);
        self.controls_ui(ui, cx);
        if self.has_flight() {
            self.flight_ui(ui);
        }
        ui.add_space(8.0);
        ui.label(RichText::new("For missions with several goals or vehicles, save the map and run `aerie fly MAP --mission m.toml -o run/` (see the user guide).").weak());
    }
}

/// Whether and where the flight is saved, with the choices of `aerie fly --compression --rosbag2`.
fn recording_ui(s: &mut SimPanel, ui: &mut egui::Ui) {
    ui.checkbox(
        &mut s.record,
        "save the recording (MCAP, trajectories, events)",
    );
    if !s.record {
        return;
    }
    ui.horizontal(|ui| {
        ui.label("folder");
        ui.text_edit_singleline(&mut s.record_dir);
        if ui.button("Choose…").clicked()
            && let Some(d) = rfd::FileDialog::new().pick_folder()
        {
            s.record_dir = d.display().to_string();
        }
    });
    ui.horizontal(|ui| {
        ui.label("compression");
        for c in Compression::ALL {
            ui.selectable_value(&mut s.recording.compression, c, c.name());
        }
    });
    ui.checkbox(
        &mut s.recording.rosbag2,
        "rosbag2 metadata.yaml (for ros2 bag play)",
    );
}

impl SimPanel {
    /// The right panel during a flight: the range image and the plots.
    pub fn side_panel(&self, ui: &mut egui::Ui) {
        ui.heading("Flight");
        if let Some(t) = &self.range_tex {
            ui.label(format!("{} range image", self.sensor));
            let w = ui.available_width();
            let size = t.size_vec2();
            let h = (w * size.y / size.x.max(1.0)).clamp(30.0, 220.0);
            ui.image((t.id(), egui::vec2(w, h)));
        }
        let plot = &self.snap.plot;
        let series = |k: usize| -> Vec<[f64; 2]> { plot.iter().map(|r| [r[0], r[k]]).collect() };
        for (id, title, keys) in [
            ("alt", "altitude (m)", &[(1usize, "z")][..]),
            ("speed", "speed (m/s)", &[(2, "speed")][..]),
            (
                "att",
                "attitude (deg)",
                &[(3, "roll"), (4, "pitch"), (5, "yaw")][..],
            ),
        ] {
            ui.label(title);
            // At least a second and a tenth of a unit across: egui_plot panics on bounds of no width, which a
            // flight's first sample, or a vehicle at rest (a speed of 1e-19), would give.
            let range = |v: &mut dyn Iterator<Item = f64>| {
                v.filter(|x| x.is_finite())
                    .fold(None, |r: Option<(f64, f64)>, x| {
                        Some(r.map_or((x, x), |(lo, hi)| (lo.min(x), hi.max(x))))
                    })
            };
            let (t0, t1) = range(&mut plot.iter().map(|r| r[0])).unwrap_or((0.0, 1.0));
            let (y0, y1) = range(&mut keys.iter().flat_map(|(k, _)| plot.iter().map(|r| r[*k])))
                .unwrap_or((0.0, 1.0));
            Plot::new(id)
                .height(120.0)
                .legend(Legend::default())
                .include_x(t0)
                .include_x(t1.max(t0 + 1.0))
                .include_y(y0)
                .include_y(y1.max(y0 + 0.1))
                // Marks rounded to a thousandth: a level vehicle's attitude otherwise reads 0.00000000000002.
                .y_axis_formatter(|mark, _| {
                    format!("{}", (mark.value * 1000.0).round() / 1000.0 + 0.0)
                })
                .show(ui, |p| {
                    for (k, name) in keys {
                        p.line(Line::new(*name, series(*k)));
                    }
                });
        }
    }
}

#[cfg(test)]
mod tests {
    use egui_kittest::kittest::Queryable;

    use super::super::panel::testing::{doc_with_map, harness};
    use super::*;

    #[test]
    fn a_click_sets_the_goal_until_everything_is_closed() {
        let mut h = harness(SimPanel::default(), doc_with_map());
        h.run_steps(1);
        assert!(
            h.state().panel.start_point().is_some(),
            "a default start on the map"
        );
        h.state_mut().panel.viewport_clicked([1.0, 2.0, 0.5]);
        h.run_steps(2);
        h.get_by_label("goal:  1001.0, 2002.0, 10.5");
        // Everything closed: the goal clicked meant a place around the old view origin.
        h.state_mut().doc.remove_file(0);
        h.state_mut().doc.close_map();
        h.run_steps(1);
        assert_eq!(h.state().panel.goal, None);
        assert!(h.state().actions.sent().is_empty());
    }

    #[test]
    fn the_default_start_is_the_ground_in_the_middle() {
        let cloud = Cloud::from_positions(
            [1000.0, 2000.0, 300.0],
            vec![
                [0.0, 0.0, 0.0],
                [10.0, 10.0, 0.0],
                [5.0, 5.5, 2.0],
                [5.5, 5.0, 0.1],
                [5.0, 5.0, 6.0],
            ],
        );
        // Lowest of the points within 2 m of the middle (5, 5), relative to the view origin.
        assert_eq!(
            default_start(&cloud, [1000.0, 2000.0, 300.0]),
            Some([5.5, 5.0, 0.1])
        );
        // No point near the middle: the nearest one.
        let sparse = Cloud::from_positions([0.0; 3], vec![[0.0, 0.0, 0.0], [10.0, 10.0, 1.0]]);
        assert_eq!(default_start(&sparse, [0.0; 3]), Some([0.0, 0.0, 0.0]));
    }
}
