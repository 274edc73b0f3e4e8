//! Scan rendering from a packed map (not yet written).
