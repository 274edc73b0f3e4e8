//! Where each map point's disk lies: on the surface the map stores for it, not at the point itself.
//!
//! A map fused from many scans holds a surface as a layer a few centimetres thick (pose error, noise), and a
//! voxel downsampling keeps points from anywhere inside it. A real sensor sees the surface near the layer's
//! middle (measured on the hall's real scans, docs/accuracy.md, section 4). The normals stage stores how far
//! that middle lies from each point along its normal
//! (`aerie_pipeline::features::normals::SURFACE_OFFSET`); the renderers draw a point on a plane at
//! `p + offset * n`. Points off planes (plane thickness at or above the renderer's `gamma_max`) stay where
//! they are: their neighbourhood's centroid says nothing about where a beam meets them.

use aerie_pipeline::map::MapView;
use rayon::prelude::*;

/// The map's points moved onto their surfaces, or `None` when the map stores no offsets (then the points are
/// the surface). Points whose plane thickness is not below `gamma_max`, or without a normal, stay put.
pub(crate) fn surface_positions(map: &MapView, gamma_max: f32) -> Option<Vec<[f32; 3]>> {
    let offsets = map.surface_offset?;
    let normals = map.normals?;
    let gamma = map.gamma?;
    let n = map.positions.len();
    if offsets.len() != n || normals.len() != n || gamma.len() != n {
        return None;
    }
    Some(
        (map.positions, normals, (offsets, gamma))
            .into_par_iter()
            .map(|(p, nv, (&s, &g))| {
                if g < gamma_max && s.is_finite() {
                    [p[0] + s * nv[0], p[1] + s * nv[1], p[2] + s * nv[2]]
                } else {
                    *p
                }
            })
            .collect(),
    )
}
