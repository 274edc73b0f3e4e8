//! aerie-simcore: the simulator core. [`Simulator`] is the entry point: it owns an opened map and the mounted
//! sensors and turns a trajectory into frames. Below it: sensor models and scan patterns ([`sensor`]), scan
//! rendering from a packed map ([`render`]), sensor poses over time ([`trajectory`]), analytic scenes with exact
//! ray casting for accuracy checks ([`scene`]), procedural maps for benchmarks ([`synthetic`]), the built-in demo
//! site and its simulated raw scan ([`demo`]); the flight loop ([`flight`]) with [`vehicle`], [`control`],
//! [`mission`], [`world`] and [`record`]. Reads maps through `aerie_pipeline::map`; never prints.
//!
//! ```
//! use aerie_simcore::{Map, Simulator, sensor::SensorModel, synthetic::synthetic_map};
//! use aerie_simcore::trajectory::{Isometry3, Static, pose_from_xyz_rpy};
//!
//! // A procedural 50,000-point map at r_map 0.1 m (any prepared map or `Simulator::open("map.amap")` works).
//! let map = synthetic_map(50_000, 0.1, 7).unwrap();
//! let mut sim = Simulator::new(Map::try_from(map).unwrap());
//! // An Ouster OS1-64 mounted 10 cm above the body origin.
//! let lidar = sim
//!     .add_sensor("os1", SensorModel::preset("os1_64").unwrap(), pose_from_xyz_rpy(0.0, 0.0, 0.1, 0.0, 0.0, 0.0))
//!     .unwrap();
//! // The body hovers 1.5 m above the middle of the map.
//! let body = Static(pose_from_xyz_rpy(0.0, 0.0, 1.5, 0.0, 0.0, 0.0));
//! let frame = sim.render(lidar, &body, 0.0, 0).unwrap();
//! assert!(frame.points.len() > 1000);
//! // Each return carries its ring, firing time and intensity; frames convert to clouds and images.
//! let cloud = frame.to_cloud(0.0, false);
//! assert_eq!(cloud.len(), frame.points.len());
//! let image = frame.range_image(sim.sensor(lidar));
//! assert_eq!((image.width, image.height), (1024, 64));
//! # let _ = Isometry3::<f64>::identity();
//! ```

pub mod control;
pub mod demo;
pub mod flight;
pub mod mission;
pub mod moving_sequence;
pub mod record;
pub mod render;
pub(crate) mod rng;
pub mod scene;
pub mod sensor;
pub mod simulator;
pub mod synthetic;
pub(crate) mod toml_place;
pub mod trajectory;
pub mod vehicle;
pub mod world;

pub use simulator::{Map, SensorId, SimError, Simulator};
