//! Voxel bucketing with coarse-to-fine order inside each bucket (not yet written).
