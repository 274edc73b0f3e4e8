//! Per-point features from neighbourhoods: neighbour search, normals, plane thickness gamma, sampling spacing.

mod avx2;
pub mod neighbors;
pub mod normals;
pub mod spacing;

pub use neighbors::{Neighbor, NeighborScratch, Neighbors};
pub use normals::{NormalsParams, estimate_normals, sym_eigen3};
