//! The surface model's last step (issue 8, docs/algorithms.md, section 16): a beam's candidate hits within a
//! surface's layer, resolved to one range. Both renderers offer their disk or plane hits to a [`Layer`] and
//! take its [`Hit`]; what a hit is (disk, plane correction) stays with each renderer.

/// Where a beam hit: range along the (jittered) ray, the map point, and cos(incidence).
#[derive(Clone, Copy, Debug, PartialEq)]
pub(super) struct Hit {
    pub t: f32,
    pub point: u32,
    pub cos_incidence: f32,
}

/// A plane thickness in millimetres, saturating; `u16::MAX` for none (infinite or NaN).
#[inline]
pub(super) fn gamma_mm(gamma: f32) -> u16 {
    if gamma.is_finite() {
        (gamma * 1000.0).round().clamp(0.0, 65534.0) as u16
    } else {
        u16::MAX
    }
}

/// Most candidate hits a beam keeps for its surface estimate.
const LAYER_CAP: usize = 16;

/// The candidate hits of one beam within the surface layer: every disk hit from the nearest to `window`
/// behind it. A map fused from many scans holds a surface as a layer a few centimetres thick; the real sensor
/// sees it near the middle of that layer, so the beam's range is the footprint-weighted mean of the hits in
/// the layer rather than the nearest one (which reads short).
///
/// The result depends only on the set of hits offered, not on their order (so not on how a renderer walks
/// its cells): hits are kept up to `cap` (the largest window) behind the nearest so far, and the nearest
/// hit's window is applied when the layer is resolved.
pub(super) struct Layer {
    /// Depth of the layer behind the nearest hit: `k * gamma / cos(incidence)` of the nearest hit's point,
    /// at most `cap`.
    window: f32,
    k: f32,
    cap: f32,
    n: usize,
    /// The nearest hit so far, by (range, point).
    t_min: f32,
    p_min: u32,
    /// (t, point, cos(incidence), weight).
    hits: [(f32, u32, f32, f32); LAYER_CAP],
}

impl Layer {
    pub fn new((k, cap): (f32, f32)) -> Layer {
        Layer {
            window: 0.0,
            k,
            cap,
            n: 0,
            t_min: f32::INFINITY,
            p_min: u32::MAX,
            hits: [(0.0, 0, 0.0, 0.0); LAYER_CAP],
        }
    }

    /// Empties the layer for the next beam, with the window of [`Layer::new`]. A renderer keeps one layer per
    /// thread and resets it per beam: a new one per beam cost a 256-byte copy (4% of an Avia frame's
    /// instructions, docs/benchmarks.md 2026-11-29).
    #[inline]
    pub fn reset(&mut self, (k, cap): (f32, f32)) {
        self.window = 0.0;
        self.k = k;
        self.cap = cap;
        self.n = 0;
        self.t_min = f32::INFINITY;
        self.p_min = u32::MAX;
    }

    /// Ray parameter beyond which no hit can change the result.
    #[inline]
    pub fn limit(&self) -> f32 {
        self.t_min + self.window
    }

    /// Offers a hit with its footprint weight (1 at the disk's centre, 0 at its rim).
    #[inline]
    pub fn offer(&mut self, t: f32, point: u32, cos: f32, weight: f32, gamma_mm: u16) {
        if !(t <= self.t_min + self.cap) {
            return;
        }
        // A point is listed in every cell its disk reaches, so a beam crossing several of them meets it again.
        if self.hits[..self.n].iter().any(|h| h.1 == point) {
            return;
        }
        if (t, point) < (self.t_min, self.p_min) {
            self.t_min = t;
            self.p_min = point;
            let gamma = if gamma_mm == u16::MAX {
                self.cap
            } else {
                gamma_mm as f32 * 1e-3
            };
            self.window = (self.k * gamma / cos.max(0.2)).min(self.cap);
            let keep = self.t_min + self.cap;
            let mut k = 0;
            for i in 0..self.n {
                if self.hits[i].0 <= keep {
                    self.hits[k] = self.hits[i];
                    k += 1;
                }
            }
            self.n = k;
        }
        let entry = (t, point, cos, weight.max(1e-3));
        if self.n < LAYER_CAP {
            self.hits[self.n] = entry;
            self.n += 1;
        } else if let Some(far) = (0..LAYER_CAP).max_by(|&a, &b| {
            (self.hits[a].0, self.hits[a].1)
                .partial_cmp(&(self.hits[b].0, self.hits[b].1))
                .unwrap_or(std::cmp::Ordering::Equal)
        }) && (t, point) < (self.hits[far].0, self.hits[far].1)
        {
            self.hits[far] = entry;
        }
    }

    /// The beam's hit: the weighted mean range of the hits within the nearest hit's window, with the nearest
    /// hit's point and incidence. Sums run in a fixed order (sorted by range, then point), so the result does
    /// not depend on the order in which the march met the points. Sorts the hits in place (a copy of them was a
    /// 256-byte memcpy per beam); the layer is reset before its next use.
    pub fn resolve(&mut self) -> Option<Hit> {
        if self.n == 0 {
            return None;
        }
        let limit = self.limit();
        let hits = &mut self.hits[..self.n];
        hits.sort_unstable_by(|a, b| {
            (a.0, a.1)
                .partial_cmp(&(b.0, b.1))
                .unwrap_or(std::cmp::Ordering::Equal)
        });
        let (first, _) = hits.split_first()?;
        let (mut sw, mut swt) = (0.0f32, 0.0f32);
        for h in hits.iter().take_while(|h| h.0 <= limit) {
            sw += h.3;
            swt += h.3 * (h.0 - first.0);
        }
        Some(Hit {
            t: first.0 + swt / sw,
            point: first.1,
            cos_incidence: first.2,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn layer_depends_on_the_set_of_hits_not_their_order() {
        // (t, point, cos, weight, gamma mm): a thick layer whose nearest hit (point 7) arrives late, a hit
        // beyond the first hit's window but inside the nearest's, a point offered twice (two cells), and
        // hits beyond every window.
        let hits = [
            (5.00f32, 3u32, 0.9f32, 0.5f32, 20u16),
            (5.03, 4, 0.8, 0.9, 20),
            (5.09, 5, 0.7, 0.2, 60),
            (4.98, 7, 0.9, 0.7, 60),
            (5.03, 4, 0.8, 0.9, 20),
            (5.40, 9, 1.0, 1.0, 20),
            (5.11, 11, 0.6, 0.4, 60),
        ];
        let resolve = |order: &[usize]| {
            let mut layer = Layer::new((2.0, 0.2));
            for &i in order {
                let (t, p, c, w, g) = hits[i];
                layer.offer(t, p, c, w, g);
            }
            layer.resolve().unwrap()
        };
        let forward = resolve(&[0, 1, 2, 3, 4, 5, 6]);
        for order in [
            [6, 5, 4, 3, 2, 1, 0],
            [3, 0, 1, 2, 4, 5, 6],
            [0, 5, 1, 6, 4, 2, 3],
        ] {
            assert_eq!(resolve(&order), forward, "{order:?}");
        }
        assert_eq!(forward.point, 7);
        // The window of the nearest (2 * 0.06 / 0.9 = 0.133) holds points 7, 3, 4, 5 and 11, point 4 once.
        let (sw, swt) = [
            (4.98, 0.7),
            (5.00, 0.5),
            (5.03, 0.9),
            (5.09, 0.2),
            (5.11, 0.4),
        ]
        .iter()
        .fold((0.0f32, 0.0f32), |(a, b), &(t, w)| {
            (a + w, b + w * (t - 4.98))
        });
        assert!((forward.t - (4.98 + swt / sw)).abs() < 1e-6, "{forward:?}");
    }
}
