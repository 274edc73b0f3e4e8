//! The .amap packed map file: writer and memory-mapped reader (not yet written).
