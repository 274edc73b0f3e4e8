//! aerie-pipeline's integration tests, one module per concern, in one test binary: each binary is a link of
//! the whole dependency tree, so one binary builds several times faster than one per file.
//!
//! Tests that read the shared real scans are marked
//! `#[cfg_attr(not(aerie_shared_data), ignore = "needs ../shared/data: see README")]` and find them with
//! [`shared_data`] (tests/support/shared_data.rs).

#[path = "../../../tests/support/shared_data.rs"]
mod shared_data;

mod amap;
mod atomic;
mod bad_input;
mod io_e57;
mod io_las;
mod io_ply_pcd_text;
mod moving;
mod output_paths;
mod prepare;
mod stages;
mod tiles;

pub use shared_data::shared_data;
