//! Where each map point's disk lies: on the surface the map stores for it, not at the point itself.
//!
//! A map fused from many scans holds a surface as a layer a few centimetres thick (pose error, noise), and a
//! voxel downsampling keeps points from anywhere inside it. A real sensor sees the surface near the layer's
//! middle (measured on the hall's real scans, docs/accuracy.md, section 4). The normals stage stores how far
//! that middle lies from each point along its normal
//! (`aerie_pipeline::features::normals::SURFACE_OFFSET`); the renderers draw each point at `p + offset * n`.
//! That holds for points off planes too (plane thickness at or above the renderer's `gamma_max`: corners,
//! clutter, the thickest layers), whose neighbourhood still has a direction of least spread: along the real
//! scans' own beams the beams that end on such points read 6.1 cm short with their offsets and 7.0 cm without
//! (docs/accuracy.md, section 4). Points without a plane fit have a zero normal and offset and stay put.

use aerie_pipeline::map::MapView;
use rayon::prelude::*;

/// The map's points moved onto their surfaces, or `None` when the map stores no offsets (then the points are
/// the surface).
pub(super) fn surface_positions(map: &MapView) -> Option<Vec<[f32; 3]>> {
    let offsets = map.surface_offset?;
    let normals = map.normals?;
    let n = map.positions.len();
    if offsets.len() != n || normals.len() != n {
        return None;
    }
    Some(
        (map.positions, normals, offsets)
            .into_par_iter()
            .map(|(p, nv, &s)| {
                if s.is_finite() {
                    [p[0] + s * nv[0], p[1] + s * nv[1], p[2] + s * nv[2]]
                } else {
                    *p
                }
            })
            .collect(),
    )
}
