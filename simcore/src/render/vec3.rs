//! The few f32 vector steps of the renderers' inner loops, on plain arrays: nalgebra's types serve the
//! poses and the frame (f64), while the march and the splat keep map-relative f32 coordinates in registers.

/// `v` normalised (unit x when degenerate).
#[inline]
pub(super) fn unit(v: [f32; 3]) -> [f32; 3] {
    let n = (v[0] * v[0] + v[1] * v[1] + v[2] * v[2]).sqrt();
    if n > 0.0 && n.is_finite() {
        [v[0] / n, v[1] / n, v[2] / n]
    } else {
        [1.0, 0.0, 0.0]
    }
}

/// The smaller of two values that are never NaN (ray parameters, coordinates, distances): one instruction,
/// where `f32::min`'s care for NaN costs five, in the steps every cell of a march and every pixel of the range
/// bound take.
#[inline(always)]
pub(super) fn min_of(a: f32, b: f32) -> f32 {
    if a < b { a } else { b }
}

/// The larger of two values that are never NaN (see [`min_of`]).
#[inline(always)]
pub(super) fn max_of(a: f32, b: f32) -> f32 {
    if a > b { a } else { b }
}

#[inline]
pub(super) fn dot(a: [f32; 3], b: [f32; 3]) -> f32 {
    a[0] * b[0] + a[1] * b[1] + a[2] * b[2]
}

#[inline]
pub(super) fn add(a: [f32; 3], b: [f32; 3]) -> [f32; 3] {
    [a[0] + b[0], a[1] + b[1], a[2] + b[2]]
}

#[inline]
pub(super) fn sub(a: [f32; 3], b: [f32; 3]) -> [f32; 3] {
    [a[0] - b[0], a[1] - b[1], a[2] - b[2]]
}

/// Row-major 3x3 matrix times vector.
#[inline]
pub(super) fn mat_vec(m: &[[f32; 3]; 3], v: [f32; 3]) -> [f32; 3] {
    [dot(m[0], v), dot(m[1], v), dot(m[2], v)]
}

#[inline]
pub(super) fn cross(a: [f32; 3], b: [f32; 3]) -> [f32; 3] {
    [
        a[1] * b[2] - a[2] * b[1],
        a[2] * b[0] - a[0] * b[2],
        a[0] * b[1] - a[1] * b[0],
    ]
}
