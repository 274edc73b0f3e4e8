//! aerie-simcore: the simulator core. Sensor models and scan patterns ([`sensor`]), scan rendering from a
//! packed map ([`render`]). Reads maps through `aerie_pipeline::map`; never prints.

pub mod render;
pub mod sensor;
