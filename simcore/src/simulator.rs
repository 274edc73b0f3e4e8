//! The one entry point for simulated scans: [`Simulator`] owns an opened map, the sensors with their mounting
//! extrinsics, and one renderer per sensor (with the renderer's map index, built once and shared by every
//! sensor). It turns a body trajectory into frames; the CLI (`aerie scan`, `aerie bench scan`), the examples,
//! the flight loop and the app all go through it, so nothing above simcore re-implements a frame loop.
//!
//! Frames: a sensor's pose is `world_from_body(t) * body_from_sensor`, the mounting fixed. A sensor with the
//! identity mounting is driven directly by the trajectory (what `aerie scan --pose` does).

use std::path::Path;
use std::sync::Arc;

use aerie_pipeline::map::{AmapFile, MapView, PackedMap};
use aerie_pipeline::prepare::{Recipe, prepare};
use aerie_pipeline::{NoProgress, io};
use nalgebra::Isometry3;
use rayon::prelude::*;

use crate::render::{BadPose, BeamIndex, Frame, Method, Occluder, RenderParams, Renderer};
use crate::sensor::{Beam, Pattern, SensorModel};
use crate::trajectory::Trajectory;

/// Errors of opening a map or adding a sensor.
#[derive(Debug, thiserror::Error)]
pub enum SimError {
    /// The map could not be read or prepared (the message names the file).
    #[error(transparent)]
    Map(#[from] aerie_pipeline::Error),
    /// The sensor model is invalid.
    #[error("sensor {name}: {source}")]
    Sensor {
        /// The name the sensor was added under.
        name: String,
        /// What is wrong with the model.
        source: crate::sensor::SensorError,
    },
    /// A frame could not be placed: the body's trajectory gave a pose that is not finite.
    #[error("sensor {name}: {source}")]
    Pose {
        /// The name the sensor was added under.
        name: String,
        /// When, and what.
        source: BadPose,
    },
}

impl SimError {
    /// True when the error is the user's input (a bad file or model) rather than the machine.
    pub fn is_bad_input(&self) -> bool {
        match self {
            SimError::Map(e) => e.is_bad_input(),
            SimError::Sensor { .. } | SimError::Pose { .. } => true,
        }
    }
}

/// An opened map: a memory-mapped `.amap`, or a map prepared in memory. Its constructors check what the
/// renderer relies on ([`MapView::check`]), so a simulator never indexes past a column.
pub struct Map {
    source: Source,
    /// What reading and preparing a scan file in memory warned about (see [`Map::warnings`]).
    warnings: Vec<String>,
}

enum Source {
    /// A packed map file, memory-mapped (or read, where mapping fails); checked when it was opened.
    File(Box<AmapFile>),
    /// A map built in this process.
    Memory(Box<PackedMap>),
}

impl Map {
    /// Opens `path`: an `.amap` is memory-mapped (it has its own resolution: `resolution_m` is not used); any
    /// other scan file (LAS, PLY, PCD, E57...) is prepared in memory with the default recipe at `resolution_m`
    /// (0.1 m when `None`).
    pub fn open(path: &Path, resolution_m: Option<f64>) -> Result<Map, SimError> {
        if Map::is_prepared(path) {
            return Ok(Map::from(AmapFile::open(path)?));
        }
        // Columns a map does not keep are skipped at read time, as `aerie prepare` does.
        let cloud = io::read(path, None, &aerie_pipeline::prepare::map_read_options())?;
        let mut warnings = cloud.meta.read_warnings.clone();
        let recipe = Recipe {
            resolution_m: resolution_m.unwrap_or(0.1),
            ..Recipe::default()
        };
        let prepared = prepare(vec![(cloud, None)], &recipe, &NoProgress)?;
        warnings.extend(prepared.warnings);
        let mut map = Map::try_from(prepared.map)?;
        map.warnings = warnings;
        Ok(map)
    }

    /// What reading and preparing the scan file warned about when [`Map::open`] prepared it in memory (a
    /// scan much sparser than the resolution, most points removed...): the caller shows them, since nobody
    /// saw a prepare's report. Empty for a `.amap`, whose `aerie prepare` reported them, and for maps built
    /// by hand.
    pub fn warnings(&self) -> &[String] {
        &self.warnings
    }

    /// Whether `path` names a prepared map (`.amap`), which [`Map::open`] maps as it is, rather than a scan
    /// file it prepares.
    pub fn is_prepared(path: &Path) -> bool {
        aerie_pipeline::map::amap::is_map_file(path)
    }

    /// The map's arrays, borrowed.
    pub fn view(&self) -> MapView<'_> {
        match &self.source {
            Source::File(f) => f.view(),
            Source::Memory(m) => m.view(),
        }
    }
}

impl TryFrom<PackedMap> for Map {
    type Error = SimError;

    /// A map built in memory ([`PackedMap::from_cloud`], `prepare`, or by hand).
    ///
    /// # Errors
    ///
    /// [`SimError::Map`] naming the first broken invariant of [`MapView::check`] (a column with the wrong
    /// number of values, buckets that do not partition the points, a resolution that is not positive).
    fn try_from(map: PackedMap) -> Result<Map, SimError> {
        map.view()
            .check()
            .map_err(|m| aerie_pipeline::Error::parameter("map", m))?;
        Ok(Map {
            source: Source::Memory(Box::new(map)),
            warnings: Vec::new(),
        })
    }
}

impl From<AmapFile> for Map {
    fn from(file: AmapFile) -> Map {
        Map {
            source: Source::File(Box::new(file)),
            warnings: Vec::new(),
        }
    }
}

/// A sensor of a [`Simulator`], as [`Simulator::add_sensor`] or [`Simulator::sensor_ids`] gives it. The
/// simulator's methods that take one panic on an id of another simulator with fewer sensors.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct SensorId(usize);

/// A sensor on the vehicle: its model, where it sits, and its renderer's state.
struct Mounted {
    name: String,
    model: SensorModel,
    body_from_sensor: Isometry3<f64>,
    renderer: Renderer,
    beams: Vec<Beam>,
    origins: Vec<[f32; 3]>,
    /// Frame index the pattern in `beams` belongs to (Livox patterns run on from frame to frame).
    beams_frame: Option<u64>,
}

impl Mounted {
    /// Renders `job` (whose sensor this is); `index` is the shared beam index when the renderer uses it.
    fn render(
        &mut self,
        view: &MapView,
        index: Option<&Arc<BeamIndex>>,
        job: &FrameJob<'_>,
    ) -> Result<Frame, SimError> {
        let runs_on = matches!(self.model.pattern, Pattern::Rosette(_) | Pattern::Sweep(_));
        if runs_on && self.beams_frame != Some(job.frame_index) {
            self.model.beams(job.frame_index, &mut self.beams);
            self.model.beam_origins_m(&self.beams, &mut self.origins);
            self.renderer.set_beams(&self.beams);
            self.renderer.set_beam_origins(&self.origins);
            self.beams_frame = Some(job.frame_index);
        }
        if let Some(index) = index {
            self.renderer.set_index(view, index.clone());
        }
        let trajectory = Through {
            world_from_body: job.world_from_body,
            body_from_sensor: self.body_from_sensor,
        };
        self.renderer
            .render_with(
                view,
                &trajectory,
                job.frame_start_s,
                job.frame_index,
                job.occluders,
            )
            .map_err(|source| SimError::Pose {
                name: self.name.clone(),
                source,
            })
    }
}

/// One frame for [`Simulator::render_many`]: the arguments of [`Simulator::render_with`].
#[derive(Clone, Copy)]
pub struct FrameJob<'a> {
    /// The sensor to render.
    pub sensor: SensorId,
    /// The body's motion during the frame.
    pub world_from_body: &'a dyn Trajectory,
    /// When the frame starts, on the trajectory's clock, seconds.
    pub frame_start_s: f64,
    /// The frame's index (seeds its noise; Livox patterns run on with it).
    pub frame_index: u64,
    /// Moving things the map does not hold.
    pub occluders: &'a [&'a dyn Occluder],
}

/// A trajectory of the body seen through a fixed mounting: the sensor's trajectory.
struct Through<'a> {
    world_from_body: &'a dyn Trajectory,
    body_from_sensor: Isometry3<f64>,
}

impl Trajectory for Through<'_> {
    fn world_from_sensor(&self, t_s: f64) -> Isometry3<f64> {
        self.world_from_body.world_from_sensor(t_s) * self.body_from_sensor
    }
}

/// Simulated LiDARs and depth cameras in one map. See the crate documentation for an example.
pub struct Simulator {
    map: Map,
    params: RenderParams,
    sensors: Vec<Mounted>,
    /// The beam renderer's index, built on first use and shared by every sensor.
    index: Option<Arc<BeamIndex>>,
}

impl Simulator {
    /// A simulator in `map` with default rendering parameters and no sensors. A [`PackedMap`] built in memory
    /// becomes a [`Map`] through `Map::try_from`, which checks it.
    pub fn new(map: Map) -> Simulator {
        Simulator {
            map,
            params: RenderParams::default(),
            sensors: Vec::new(),
            index: None,
        }
    }

    /// Opens a map file (see [`Map::open`]).
    pub fn open(path: &Path, resolution_m: Option<f64>) -> Result<Simulator, SimError> {
        Ok(Simulator::new(Map::open(path, resolution_m)?))
    }

    /// Sets the rendering parameters of sensors added afterwards (seed, renderer, plane correction...).
    pub fn with_params(mut self, params: RenderParams) -> Simulator {
        self.params = params;
        self
    }

    /// Sets the rendering parameters of sensors added afterwards.
    pub fn set_params(&mut self, params: RenderParams) {
        self.params = params;
    }

    /// The rendering parameters.
    pub fn params(&self) -> &RenderParams {
        &self.params
    }

    /// The map's arrays.
    pub fn map(&self) -> MapView<'_> {
        self.map.view()
    }

    /// Adds a sensor mounted at `body_from_sensor` on the body; `name` labels its output (topics, files).
    pub fn add_sensor(
        &mut self,
        name: impl Into<String>,
        model: SensorModel,
        body_from_sensor: Isometry3<f64>,
    ) -> Result<SensorId, SimError> {
        let name = name.into();
        model.validate().map_err(|source| SimError::Sensor {
            name: name.clone(),
            source,
        })?;
        let mut beams = Vec::new();
        model.beams(0, &mut beams);
        let mut origins = Vec::new();
        model.beam_origins_m(&beams, &mut origins);
        let mut renderer = Renderer::new(&beams, &model.physics, &self.params);
        renderer.set_beam_origins(&origins);
        renderer.set_depth_axis(matches!(model.pattern, Pattern::Pinhole(_)));
        self.sensors.push(Mounted {
            name,
            model,
            body_from_sensor,
            renderer,
            beams,
            origins,
            beams_frame: Some(0),
        });
        Ok(SensorId(self.sensors.len() - 1))
    }

    /// Number of sensors.
    pub fn sensor_count(&self) -> usize {
        self.sensors.len()
    }

    /// The sensors, in the order they were added.
    pub fn sensor_ids(&self) -> impl Iterator<Item = SensorId> + use<> {
        (0..self.sensors.len()).map(SensorId)
    }

    /// A sensor's model.
    pub fn sensor(&self, id: SensorId) -> &SensorModel {
        &self.sensors[id.0].model
    }

    /// A sensor's name.
    pub fn sensor_name(&self, id: SensorId) -> &str {
        &self.sensors[id.0].name
    }

    /// Where a sensor sits on the body.
    pub fn body_from_sensor(&self, id: SensorId) -> Isometry3<f64> {
        self.sensors[id.0].body_from_sensor
    }

    /// The beams of the sensor's most recent frame, in firing order (`aerie bench scan --rays-out` writes them
    /// for the peers to cast).
    pub fn beams(&self, id: SensorId) -> &[Beam] {
        &self.sensors[id.0].beams
    }

    /// The beam renderer's index of the map, building it now if needed (to time it apart, or to share it).
    pub fn beam_index(&mut self) -> Arc<BeamIndex> {
        let view = self.map.view();
        let gamma_max = self
            .params
            .gamma_max_m
            .unwrap_or(0.5 * view.resolution.max(1e-6));
        self.index
            .get_or_insert_with(|| {
                Arc::new(BeamIndex::build_with(
                    &view,
                    gamma_max,
                    self.params.on_surface,
                ))
            })
            .clone()
    }

    /// Builds now what the first frame would otherwise build: the beam renderer's index of the map, when a
    /// sensor's renderer uses it (seconds for millions of points), so that the set-up is timed and told apart
    /// from the frames. Changes no output. The index, when a renderer uses it.
    pub fn warm_up(&mut self) -> Option<Arc<BeamIndex>> {
        self.uses_beam_index().then(|| self.beam_index())
    }

    /// Whether a sensor's renderer uses the beam index of the map (each sensor's renderer is chosen now if it
    /// was not yet: [`crate::render::Method::Auto`] decides on the first frame and keeps its choice).
    pub fn uses_beam_index(&mut self) -> bool {
        let ids: Vec<SensorId> = self.sensor_ids().collect();
        ids.into_iter().any(|id| self.wants_index(id))
    }

    /// Start time of frame `k` of a sensor whose frames start at `t0_s`.
    pub fn frame_start(&self, id: SensorId, t0_s: f64, k: u64) -> f64 {
        t0_s + k as f64 * self.sensors[id.0].model.frame_period_s()
    }

    /// Renders frame `frame_index` of sensor `id`, which starts at `frame_start_s` on the trajectory's clock,
    /// with the body moving along `world_from_body`. Frames of one sensor are meant to be rendered in order,
    /// but any order gives the same result. An error when the trajectory's pose is not finite at a time the
    /// frame needs.
    pub fn render(
        &mut self,
        id: SensorId,
        world_from_body: &dyn Trajectory,
        frame_start_s: f64,
        frame_index: u64,
    ) -> Result<Frame, SimError> {
        self.render_with(id, world_from_body, frame_start_s, frame_index, &[])
    }

    /// [`Simulator::render`] with moving things the map does not hold (obstacles, other vehicles): a beam
    /// returns from whichever is nearer, the map or an occluder.
    pub fn render_with(
        &mut self,
        id: SensorId,
        world_from_body: &dyn Trajectory,
        frame_start_s: f64,
        frame_index: u64,
        occluders: &[&dyn Occluder],
    ) -> Result<Frame, SimError> {
        self.render_job(&FrameJob {
            sensor: id,
            world_from_body,
            frame_start_s,
            frame_index,
            occluders,
        })
    }

    fn render_job(&mut self, job: &FrameJob<'_>) -> Result<Frame, SimError> {
        let index = self.wants_index(job.sensor).then(|| self.beam_index());
        let view = self.map.view();
        self.sensors[job.sensor.0].render(&view, index.as_ref(), job)
    }

    /// Renders several frames at once, in parallel, one per job, in the jobs' order: what
    /// [`Simulator::render_with`] returns for each, computed side by side (the flight loop renders the frames
    /// its vehicles finish in the same physics step this way, so that frames too small to keep every core
    /// busy on their own still do together). A sensor named by more than one job has them rendered one after
    /// the other, in order. The first job's error, in the jobs' order, when a pose is not finite.
    pub fn render_many(&mut self, jobs: &[FrameJob<'_>]) -> Result<Vec<Frame>, SimError> {
        let wants: Vec<bool> = jobs.iter().map(|j| self.wants_index(j.sensor)).collect();
        let index = wants.contains(&true).then(|| self.beam_index());
        let view = self.map.view();
        let mut slots: Vec<Option<&mut Mounted>> = self.sensors.iter_mut().map(Some).collect();
        let mut work: Vec<(&mut Mounted, &FrameJob<'_>, bool)> = Vec::with_capacity(jobs.len());
        for (job, &wants) in jobs.iter().zip(&wants) {
            match slots[job.sensor.0].take() {
                Some(s) => work.push((s, job, wants)),
                None => {
                    // The same sensor twice: its frames depend on each other's order.
                    drop(work);
                    return jobs.iter().map(|j| self.render_job(j)).collect();
                }
            }
        }
        work.into_par_iter()
            .map(|(s, job, wants)| s.render(&view, index.as_ref().filter(|_| wants), job))
            .collect::<Vec<_>>()
            .into_iter()
            .collect()
    }

    /// Whether the sensor's renderer uses the beam index (so that the shared one is handed to it).
    pub(crate) fn wants_index(&mut self, id: SensorId) -> bool {
        let view = self.map.view();
        let s = &mut self.sensors[id.0];
        s.renderer.choose(&view) == Method::Beam
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::synthetic::synthetic_map;
    use crate::trajectory::{Static, pose_from_xyz_rpy};
    use crate::world::Spheres;

    fn sim() -> (Simulator, Vec<SensorId>) {
        let mut sim =
            Simulator::new(Map::try_from(synthetic_map(20_000, 0.1, 3).unwrap()).unwrap());
        let ids = ["mid360", "os0_64", "avia"]
            .iter()
            .map(|p| {
                let model = SensorModel::preset(p).unwrap();
                let mount = pose_from_xyz_rpy(0.0, 0.0, 0.1, 0.0, 0.0, 0.0);
                sim.add_sensor(*p, model, mount).unwrap()
            })
            .collect();
        (sim, ids)
    }

    #[test]
    fn render_many_equals_rendering_one_frame_after_another() {
        let bodies = [
            Static(pose_from_xyz_rpy(0.0, 0.0, 1.5, 0.0, 0.0, 0.0)),
            Static(pose_from_xyz_rpy(3.0, -2.0, 1.0, 0.0, 0.1, 0.7)),
        ];
        let ball: Spheres = [([1.0, 0.0, 1.5].into(), 0.5)].into_iter().collect();
        let occluders: [&dyn Occluder; 1] = [&ball];
        let (mut one, ids) = sim();
        let (mut many, _) = sim();
        for frame_index in 0..3u64 {
            // Two frames of the first sensor in one call: they run one after the other.
            let mut jobs: Vec<FrameJob<'_>> = ids
                .iter()
                .enumerate()
                .map(|(k, &sensor)| FrameJob {
                    sensor,
                    world_from_body: &bodies[k % 2],
                    frame_start_s: 0.1 * frame_index as f64,
                    frame_index,
                    occluders: &occluders,
                })
                .collect();
            if frame_index == 2 {
                jobs.push(FrameJob {
                    frame_index: 3,
                    ..jobs[0]
                });
            }
            let expected: Vec<Frame> = jobs
                .iter()
                .map(|j| {
                    one.render_with(
                        j.sensor,
                        j.world_from_body,
                        j.frame_start_s,
                        j.frame_index,
                        j.occluders,
                    )
                    .unwrap()
                })
                .collect();
            let got = many.render_many(&jobs).unwrap();
            assert_eq!(got.len(), jobs.len());
            for (g, e) in got.iter().zip(&expected) {
                assert!(e.points.len() > 100);
                assert!(g == e, "frame {frame_index} differs");
            }
        }
    }

    /// Warming up builds the index the first frame would have built, and the frames stay the same; a simulator
    /// whose renderers all splat builds none.
    #[test]
    fn warm_up_builds_the_index_and_changes_no_frame() {
        let body = Static(pose_from_xyz_rpy(0.5, 0.0, 1.2, 0.0, 0.0, 0.3));
        let (mut cold, ids) = sim();
        let (mut warm, _) = sim();
        assert!(warm.uses_beam_index());
        assert!(warm.index.is_none());
        let index = warm.warm_up().expect("the beam renderer's index");
        assert!(warm.index.as_ref().is_some_and(|i| Arc::ptr_eq(i, &index)));
        for &id in &ids {
            let a = cold.render(id, &body, 0.0, 0).unwrap();
            let b = warm.render(id, &body, 0.0, 0).unwrap();
            assert!(a.points.len() > 100 && a == b);
        }
        let mut splat =
            Simulator::new(Map::try_from(synthetic_map(2_000, 0.1, 3).unwrap()).unwrap())
                .with_params(RenderParams {
                    method: Method::Splat,
                    ..RenderParams::default()
                });
        splat
            .add_sensor(
                "avia",
                SensorModel::preset("avia").unwrap(),
                Isometry3::identity(),
            )
            .unwrap();
        assert!(!splat.uses_beam_index() && splat.warm_up().is_none() && splat.index.is_none());
    }

    /// A trajectory that turns NaN mid-frame is an error naming the sensor and the time, not a frame with no
    /// returns.
    #[test]
    fn a_pose_that_is_not_finite_is_an_error_not_an_empty_frame() {
        struct GoesNan;
        impl Trajectory for GoesNan {
            fn world_from_sensor(&self, t_s: f64) -> Isometry3<f64> {
                let x = if t_s > 0.05 { f64::NAN } else { 0.0 };
                pose_from_xyz_rpy(x, 0.0, 1.5, 0.0, 0.0, 0.0)
            }
        }
        let (mut sim, ids) = sim();
        let os0 = ids[1];
        let err = sim.render(os0, &GoesNan, 0.0, 0).unwrap_err();
        assert!(
            matches!(&err, SimError::Pose { name, source } if name == "os0_64" && source.t_s > 0.05),
            "{err}"
        );
        assert!(
            err.is_bad_input() && err.to_string().contains("not finite"),
            "{err}"
        );
        let job = FrameJob {
            sensor: os0,
            world_from_body: &GoesNan,
            frame_start_s: 0.0,
            frame_index: 0,
            occluders: &[],
        };
        assert!(sim.render_many(&[job]).is_err());
        // A finite pose renders as before.
        let still = Static(pose_from_xyz_rpy(0.0, 0.0, 1.5, 0.0, 0.0, 0.0));
        assert!(!sim.render(os0, &still, 0.0, 0).unwrap().points.is_empty());
    }

    /// A map assembled by hand with a column of the wrong length, or buckets that do not cover its points, is
    /// refused when it becomes a `Map`, with the column named, rather than panicking in the renderer.
    #[test]
    fn a_map_whose_columns_disagree_is_refused_before_it_is_rendered() {
        let good = synthetic_map(2_000, 0.1, 3).unwrap();
        let n = good.len();
        assert!(Map::try_from(good.clone()).is_ok());
        let mut short_normals = good.clone();
        short_normals.normals.as_mut().unwrap().pop();
        let mut uncovered = good.clone();
        uncovered.positions.push([0.0; 3]);
        uncovered.normals.as_mut().unwrap().push([0.0, 0.0, 1.0]);
        uncovered.gamma = None;
        uncovered.spacing = None;
        uncovered.reflectance = None;
        let mut flat = good;
        flat.resolution = 0.0;
        for (map, says) in [
            (
                short_normals,
                format!("normals has {} values for {n} points", n - 1),
            ),
            (
                uncovered,
                format!("buckets cover {n} points but the map has {}", n + 1),
            ),
            (flat, "resolution 0,".to_string()),
        ] {
            let err = Map::try_from(map).err().expect("refused");
            assert!(
                err.is_bad_input() && err.to_string().contains(&says),
                "{err}"
            );
        }
    }
}
