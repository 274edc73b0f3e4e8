//! LiDAR and depth-camera models, scan patterns and presets (not yet written).
