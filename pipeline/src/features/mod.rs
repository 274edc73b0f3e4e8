//! Per-point features from neighbourhoods: neighbour search, normals, plane thickness gamma.
