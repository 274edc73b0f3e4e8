//! aerie-simcore's integration tests, one module per concern, in one test binary: each binary is a link of the
//! whole dependency tree, so one binary builds several times faster than one per file. The checks of recordings
//! by the Python packages ROS tools use are apart, in tests/python_peers (their need is known only at run time).
//!
//! Tests that read the shared real scans are marked
//! `#[cfg_attr(not(aerie_shared_data), ignore = "needs ../shared/data: see README")]` and find them with
//! [`shared_data`] (tests/support/shared_data.rs).

#[path = "../../../tests/support/shared_data.rs"]
mod shared_data;

mod accuracy;
mod common;
mod demo;
mod flight;
mod flight_dynamics;
mod hall_beams;
mod missions;
mod moving_sequences;
mod render;
mod sensors;

pub use shared_data::shared_data;
