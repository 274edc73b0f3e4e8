//! The `aerie` command's end-to-end tests, in one test binary (each binary is a link of the whole dependency
//! tree). The real window's screenshot test is apart, in tests/gui (its need is known only at run time).
//!
//! Tests that read the shared real scans are marked
//! `#[cfg_attr(not(aerie_shared_data), ignore = "needs ../shared/data: see README")]` and find them with
//! [`shared_data`] (tests/support/shared_data.rs).

#[path = "../support/shared_data.rs"]
mod shared_data;

mod cli;
mod map_and_scan;
mod mesh;
mod moving;
mod tiles;

pub use shared_data::shared_data;
mod tidy;
