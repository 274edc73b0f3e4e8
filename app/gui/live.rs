//! A flight running on its own thread, as the window shows it: the same [`Flight`] `aerie fly` steps, paced to
//! a multiple of real time (or as fast as it goes), pausable and steppable; what the window draws is copied into
//! a snapshot under a mutex after each slice of simulated time.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use aerie_simcore::flight::outputs::{RunInfo, write_run};
use aerie_simcore::flight::{Flight, FlightEvent};
use aerie_simcore::mission::Mission;
use aerie_simcore::record::RecordOptions;
use aerie_simcore::render::Image;
use aerie_simcore::simulator::Map;
use nalgebra::Point3;

/// One vehicle, as drawn.
#[derive(Clone, Debug, Default)]
pub struct VehicleLive {
    pub name: String,
    pub position: [f64; 3],
    /// Past positions, view-local, one per slice of simulated time.
    pub track: Vec<[f32; 3]>,
}

/// What the window shows of the flight.
#[derive(Clone, Debug, Default)]
pub struct Snapshot {
    pub t: f64,
    pub end: f64,
    pub finished: bool,
    pub error: Option<String>,
    pub vehicles: Vec<VehicleLive>,
    /// The latest LiDAR frame in view-local coordinates, and a counter that changes with it.
    pub scan: Arc<Vec<[f32; 3]>>,
    pub scan_seq: u64,
    pub range: Option<Arc<Image>>,
    /// What happened so far: take-off, goals reached, collisions, touchdown, the mission's end.
    pub events: Vec<FlightEvent>,
    /// Time, altitude (m), speed (m/s), roll, pitch, yaw (degrees) of the first vehicle, every 0.05 s.
    pub plot: Vec<[f64; 6]>,
    pub real_time_factor: f64,
    /// The beam index of the map is being built (seconds for millions of points) before the first slice.
    pub preparing: bool,
    /// The folder the recording was saved into, once the flight is over.
    pub saved: Option<PathBuf>,
}

/// Where and how a flight from the window is recorded: the folder `aerie fly -o` would write.
#[derive(Clone, Debug)]
pub struct Recording {
    pub dir: PathBuf,
    pub options: RecordOptions,
}

struct Control {
    paused: AtomicBool,
    /// Real-time multiple times 100; 0 runs as fast as possible.
    speed_x100: AtomicU32,
    step: AtomicBool,
    stop: AtomicBool,
}

/// Handle to the running flight.
pub struct Live {
    shared: Arc<Mutex<Snapshot>>,
    ctl: Arc<Control>,
}

/// Simulated seconds per slice between snapshots.
const SLICE_S: f64 = 0.05;

impl Live {
    /// Starts flying `mission` in `map` (layers drawn relative to `view_origin`); `wake` repaints the window.
    pub fn start(
        map: Map,
        (mission, recording): (Mission, Option<Recording>),
        view_origin: [f64; 3],
        wake: impl Fn() + Send + 'static,
    ) -> Live {
        let shared = Arc::new(Mutex::new(Snapshot::default()));
        let ctl = Arc::new(Control {
            paused: AtomicBool::new(false),
            speed_x100: AtomicU32::new(100),
            step: AtomicBool::new(false),
            stop: AtomicBool::new(false),
        });
        let (s, c) = (Arc::clone(&shared), Arc::clone(&ctl));
        std::thread::spawn(move || {
            let outcome = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                fly(map, (&mission, recording), view_origin, &s, &c, &wake)
            }));
            let error = match outcome {
                Ok(Ok(())) => None,
                Ok(Err(e)) => Some(e),
                Err(_) => Some("the flight stopped on an internal error".to_string()),
            };
            // A panic may have poisoned the lock: the snapshot is plain data, still worth showing, and the
            // window must learn that the flight ended.
            let mut snap = s.lock().unwrap_or_else(PoisonError::into_inner);
            snap.finished = true;
            snap.error = error;
            drop(snap);
            wake();
        });
        Live { shared, ctl }
    }

    pub fn snapshot(&self) -> Snapshot {
        self.shared
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }

    pub fn set_paused(&self, paused: bool) {
        self.ctl.paused.store(paused, Ordering::Relaxed);
    }

    pub fn paused(&self) -> bool {
        self.ctl.paused.load(Ordering::Relaxed)
    }

    /// Advances one slice while paused.
    pub fn step(&self) {
        self.ctl.step.store(true, Ordering::Relaxed);
    }

    /// Multiple of real time; 0 for as fast as possible.
    pub fn set_speed(&self, x: f32) {
        self.ctl
            .speed_x100
            .store((x * 100.0) as u32, Ordering::Relaxed);
    }

    pub fn stop(&self) {
        self.ctl.stop.store(true, Ordering::Relaxed);
    }

    /// Whether the user stopped the flight.
    pub fn stopped(&self) -> bool {
        self.ctl.stop.load(Ordering::Relaxed)
    }
}

impl Drop for Live {
    fn drop(&mut self) {
        self.stop();
    }
}

fn fly(
    map: Map,
    (mission, recording): (&Mission, Option<Recording>),
    origin: [f64; 3],
    shared: &Mutex<Snapshot>,
    ctl: &Control,
    wake: &dyn Fn(),
) -> Result<(), String> {
    let mut flight = Flight::new(map, mission, Path::new(".")).map_err(|e| e.to_string())?;
    if let Some(r) = &recording {
        std::fs::create_dir_all(&r.dir).map_err(|e| format!("{}: {e}", r.dir.display()))?;
        flight
            .record_to(&r.dir.join("flight.mcap"), r.options)
            .map_err(|e| e.to_string())?;
    }
    let sim = flight.simulator();
    let sensor = sim.sensor_ids().next().map(|id| sim.sensor(id).clone());
    if let Ok(mut s) = shared.lock() {
        s.end = flight.end_time();
        s.preparing = flight.uses_beam_index();
    }
    wake();
    // Built before the clock starts, so that neither the pacing nor the real-time factor counts it.
    flight.warm_up();
    if let Ok(mut s) = shared.lock() {
        s.preparing = false;
    }
    let mut pace = (Instant::now(), 0.0, ctl.speed_x100.load(Ordering::Relaxed));
    let wall = Instant::now();
    while !flight.finished() && !ctl.stop.load(Ordering::Relaxed) {
        let speed = ctl.speed_x100.load(Ordering::Relaxed);
        if ctl.paused.load(Ordering::Relaxed) && !ctl.step.swap(false, Ordering::Relaxed) {
            pace = (Instant::now(), flight.time(), speed);
            std::thread::sleep(Duration::from_millis(15));
            continue;
        }
        if speed != pace.2 {
            pace = (Instant::now(), flight.time(), speed);
        }
        if speed > 0 && !ctl.paused.load(Ordering::Relaxed) {
            let allowed = pace.1 + pace.0.elapsed().as_secs_f64() * speed as f64 / 100.0;
            if allowed < flight.time() + SLICE_S {
                std::thread::sleep(Duration::from_millis(5));
                continue;
            }
        }
        let mut frame_points = None;
        let mut range = None;
        let t = flight.time() + SLICE_S;
        flight
            .run_until(t, &mut |_, frame| {
                let pose = frame.world_from_sensor;
                let pts: Vec<[f32; 3]> = frame
                    .points
                    .iter()
                    .map(|p| {
                        let w =
                            pose * Point3::new(p.xyz[0] as f64, p.xyz[1] as f64, p.xyz[2] as f64);
                        [
                            (w.x - origin[0]) as f32,
                            (w.y - origin[1]) as f32,
                            (w.z - origin[2]) as f32,
                        ]
                    })
                    .collect();
                frame_points = Some(pts);
                range = sensor.as_ref().map(|s| frame.range_image(s));
            })
            .map_err(|e| e.to_string())?;
        // Updated in place: the plots and tracks grow with the flight, so no copy of them per slice.
        if let Ok(mut snap) = shared.lock() {
            record(&mut snap, &flight, origin, frame_points, range, wall);
        }
        wake();
    }
    if let Some(r) = recording {
        // Stopped by the user or finished: what was flown is kept, as `aerie fly` writes it.
        flight.finish_recording().map_err(|e| e.to_string())?;
        let info = RunInfo {
            map: "the map open in the app".into(),
            mission: "the app's Simulate step".into(),
            seed: mission.seed,
            wall_s: wall.elapsed().as_secs_f64(),
        };
        write_run(&r.dir, &flight, &info).map_err(|e| e.to_string())?;
        crate::plots::flight::write(&r.dir, &flight).map_err(|e| format!("{e:#}"))?;
        if let Ok(mut snap) = shared.lock() {
            snap.events = flight.events().to_vec();
            snap.saved = Some(r.dir);
        }
    }
    Ok(())
}

fn record(
    snap: &mut Snapshot,
    flight: &Flight,
    origin: [f64; 3],
    points: Option<Vec<[f32; 3]>>,
    range: Option<Image>,
    wall: Instant,
) {
    snap.t = flight.time();
    snap.real_time_factor = snap.t / wall.elapsed().as_secs_f64().max(1e-9);
    if let Some(p) = points {
        snap.scan = Arc::new(p);
        snap.scan_seq += 1;
    }
    if let Some(r) = range {
        snap.range = Some(Arc::new(r));
    }
    snap.events = flight.events().to_vec();
    let states = flight.states();
    snap.vehicles
        .resize_with(states.len(), VehicleLive::default);
    for (v, (name, s)) in snap.vehicles.iter_mut().zip(&states) {
        v.name = name.to_string();
        v.position = s.position.into();
        v.track
            .push(std::array::from_fn(|k| (s.position[k] - origin[k]) as f32));
    }
    if let Some((_, s)) = states.first() {
        let (r, p, y) = s.world_from_body.euler_angles();
        let deg = f64::to_degrees;
        snap.plot.push([
            snap.t,
            s.position.z,
            s.velocity.norm(),
            deg(r),
            deg(p),
            deg(y),
        ]);
    }
}
