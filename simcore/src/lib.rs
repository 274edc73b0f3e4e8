//! aerie-simcore: the simulator core. Sensor models and scan patterns ([`sensor`]), scan rendering from a
//! packed map ([`render`]), sensor poses over time ([`trajectory`]), analytic scenes with exact ray casting
//! for accuracy checks ([`scene`]), procedural maps for benchmarks ([`synthetic`]), the built-in demo site and
//! its simulated raw scan ([`demo`]). Reads maps through `aerie_pipeline::map`; never prints.

pub mod demo;
pub mod render;
pub(crate) mod rng;
pub mod scene;
pub mod sensor;
pub mod synthetic;
pub mod trajectory;
