//! aerie-simcore: the simulator core. Sensor models and scan patterns ([`sensor`]), scan rendering from a
//! packed map ([`render`]), sensor poses over time ([`trajectory`]),
//! procedural maps for benchmarks ([`synthetic`]). Reads maps through `aerie_pipeline::map`; never prints.

pub mod render;
pub mod sensor;
pub mod synthetic;
pub mod trajectory;
