//! aerie-simcore: the simulator core. Sensor models and scan patterns ([`sensor`]), scan rendering from a
//! packed map ([`render`]), sensor poses over time ([`trajectory`]). Reads maps through `aerie_pipeline::map`; never prints.

pub mod render;
pub mod sensor;
pub mod trajectory;
