//! The built-in planner: an occupancy grid built from the map, inflated by the vehicle's radius, searched with
//! A* (26-connected, Euclidean heuristic, so the path is optimal on the grid), then shortened by line of sight.
//! The flight loop flies the resulting polyline without stopping, its corners rounded in the grid's free space
//! ([`super::path::SmoothPath`]). When no path exists, the error names the condition that fails and the
//! reachable point nearest to the goal (a flood fill of the start's free space).

// `!(a <= b)` is deliberate: a NaN must fail the test it is in.
#![allow(clippy::neg_cmp_op_on_partial_ord)]

use std::cmp::Ordering;
use std::collections::BinaryHeap;

use aerie_pipeline::map::MapView;
use nalgebra::Vector3;

/// Most cells a planning grid may have (about 1 GB of bookkeeping).
const MAX_CELLS: usize = 60_000_000;

/// Why no path was found; the message names the goal, the condition that fails, and the nearest point the
/// vehicle can reach instead.
#[derive(Debug, thiserror::Error, PartialEq)]
pub enum PlanError {
    /// The goal is in free space, but the free space around it is cut off from the start.
    #[error(
        "no path to the goal ({:.2}, {:.2}, {:.2}): the free space around it is cut off from the start ({:.2}, {:.2}, \
         {:.2}) for a vehicle needing {clearance_m:.2} m of clearance; {}",
        goal[0], goal[1], goal[2], start[0], start[1], start[2], suggest(nearest.as_ref(), goal)
    )]
    NoPath {
        /// Where the path was to start, map frame, metres.
        start: [f64; 3],
        /// Where it was to end, map frame, metres.
        goal: [f64; 3],
        /// The vehicle's radius plus the planner's margin, metres.
        clearance_m: f64,
        /// The reachable point nearest to the goal, if any.
        nearest: Option<[f64; 3]>,
    },
    /// The goal is where the vehicle cannot be: in the map's surface, or within its clearance of it.
    #[error(
        "the goal ({:.2}, {:.2}, {:.2}) is {what}; {}",
        goal[0], goal[1], goal[2], suggest(nearest.as_ref(), goal)
    )]
    BadGoal {
        /// The goal, map frame, metres.
        goal: [f64; 3],
        /// Which condition fails, with the distances ("too close to the ground ...").
        what: String,
        /// The reachable point nearest to the goal, if any.
        nearest: Option<[f64; 3]>,
    },
    /// The start is outside the grid, or enclosed in the map's surface.
    #[error(
        "the start ({:.2}, {:.2}, {:.2}) is {what}",
        start[0], start[1], start[2]
    )]
    BadStart {
        /// The start, map frame, metres.
        start: [f64; 3],
        /// Where it lies ("outside the map").
        what: &'static str,
    },
    /// The grid would exceed the cell limit (about 1 GB of bookkeeping).
    #[error(
        "a planning grid of {cells} cells at {voxel_m} m is too large (at most {MAX_CELLS}); plan at a coarser voxel"
    )]
    TooLarge {
        /// Cells the grid over the map's bounds would have.
        cells: usize,
        /// The grid's voxel, metres.
        voxel_m: f64,
    },
}

/// The advice that ends an unreachable goal's message.
fn suggest(nearest: Option<&[f64; 3]>, goal: &[f64; 3]) -> String {
    match nearest {
        Some(p) => {
            let d = (Vector3::from(*p) - Vector3::from(*goal)).norm();
            format!(
                "the nearest reachable point is ({:.2}, {:.2}, {:.2}), {d:.2} m from it",
                p[0], p[1], p[2]
            )
        }
        None => "no point is reachable from the start".into(),
    }
}

/// An inflated occupancy grid over the map's bounds (plus a margin).
pub struct Grid {
    lo: Vector3<f64>,
    voxel: f64,
    dims: [usize; 3],
    /// Within the clearance of a map point.
    occupied: Vec<bool>,
    /// Holding a map point.
    surface: Vec<bool>,
    clearance: f64,
}

impl Grid {
    /// Cells of `voxel_m` holding a map point, inflated by `clearance_m` (the vehicle radius plus a margin),
    /// over the map's bounds grown to hold the points of `within` (the mission's starts and goals: above a
    /// flat ground, the air a vehicle flies in is outside the map's points).
    pub fn from_map(
        map: &MapView,
        voxel_m: f64,
        clearance_m: f64,
        within: &[Vector3<f64>],
    ) -> Result<Grid, PlanError> {
        let origin = Vector3::from(map.origin);
        let (mut lo, mut hi) = (
            Vector3::repeat(f64::INFINITY),
            Vector3::repeat(f64::NEG_INFINITY),
        );
        for p in map.positions {
            let v = origin + Vector3::new(p[0] as f64, p[1] as f64, p[2] as f64);
            lo = lo.inf(&v);
            hi = hi.sup(&v);
        }
        for v in within {
            lo = lo.inf(v);
            hi = hi.sup(v);
        }
        if !(lo.x <= hi.x) {
            lo = Vector3::zeros();
            hi = Vector3::zeros();
        }
        let margin = Vector3::repeat(2.0 * voxel_m + clearance_m);
        let (lo, hi) = (lo - margin, hi + margin);
        let dims = [0, 1, 2].map(|k| ((hi[k] - lo[k]) / voxel_m).ceil().max(1.0) as usize);
        let cells = dims[0].saturating_mul(dims[1]).saturating_mul(dims[2]);
        if cells > MAX_CELLS {
            return Err(PlanError::TooLarge { cells, voxel_m });
        }
        let mut grid = Grid {
            lo,
            voxel: voxel_m,
            dims,
            occupied: vec![false; cells],
            surface: Vec::new(),
            clearance: clearance_m,
        };
        let mut raw = vec![false; cells];
        for p in map.positions {
            let v = origin + Vector3::new(p[0] as f64, p[1] as f64, p[2] as f64);
            if let Some(i) = grid.index_of(&v) {
                raw[i] = true;
            }
        }
        // Inflate: every cell within the clearance of an occupied cell's centre.
        let reach = (clearance_m / voxel_m).ceil() as i64;
        let r2 = (clearance_m / voxel_m + 0.5).powi(2);
        let offsets: Vec<[i64; 3]> = (-reach..=reach)
            .flat_map(|x| {
                (-reach..=reach).flat_map(move |y| (-reach..=reach).map(move |z| [x, y, z]))
            })
            .filter(|o| (o[0] * o[0] + o[1] * o[1] + o[2] * o[2]) as f64 <= r2)
            .collect();
        for (i, _) in raw.iter().enumerate().filter(|(_, o)| **o) {
            let c = grid.cell_of_index(i);
            for o in &offsets {
                if let Some(j) = grid.index([c[0] + o[0], c[1] + o[1], c[2] + o[2]]) {
                    grid.occupied[j] = true;
                }
            }
        }
        grid.surface = raw;
        Ok(grid)
    }

    fn index(&self, c: [i64; 3]) -> Option<usize> {
        let [x, y, z] = c;
        let d = self.dims.map(|v| v as i64);
        (x >= 0 && y >= 0 && z >= 0 && x < d[0] && y < d[1] && z < d[2])
            .then(|| ((z * d[1] + y) * d[0] + x) as usize)
    }

    fn cell_of_index(&self, i: usize) -> [i64; 3] {
        let [dx, dy, _] = self.dims;
        [
            (i % dx) as i64,
            (i / dx % dy) as i64,
            (i / (dx * dy)) as i64,
        ]
    }

    fn cell_of(&self, p: &Vector3<f64>) -> [i64; 3] {
        [0, 1, 2].map(|k| ((p[k] - self.lo[k]) / self.voxel).floor() as i64)
    }

    fn index_of(&self, p: &Vector3<f64>) -> Option<usize> {
        self.index(self.cell_of(p))
    }

    fn centre(&self, c: [i64; 3]) -> Vector3<f64> {
        Vector3::new(
            self.lo.x + (c[0] as f64 + 0.5) * self.voxel,
            self.lo.y + (c[1] as f64 + 0.5) * self.voxel,
            self.lo.z + (c[2] as f64 + 0.5) * self.voxel,
        )
    }

    /// Whether `p` is inside the grid and not within the clearance of the map.
    pub fn is_free(&self, p: &Vector3<f64>) -> bool {
        self.index_of(p).is_some_and(|i| !self.occupied[i])
    }

    /// Whether the straight segment a-b stays in free cells (sampled at a quarter voxel).
    pub fn line_free(&self, a: &Vector3<f64>, b: &Vector3<f64>) -> bool {
        let n = ((b - a).norm() / (0.25 * self.voxel)).ceil().max(1.0) as usize;
        (0..=n).all(|i| self.is_free(&a.lerp(b, i as f64 / n as f64)))
    }

    /// The shortest grid path from `start` to `goal`, shortened by line of sight; its first point is `start`
    /// and its last `goal`. A start within the clearance of the ground (a vehicle standing on it) first climbs
    /// straight up to free space.
    pub fn plan(
        &self,
        start: &Vector3<f64>,
        goal: &Vector3<f64>,
    ) -> Result<Vec<Vector3<f64>>, PlanError> {
        let (s3, g3) = ([start.x, start.y, start.z], [goal.x, goal.y, goal.z]);
        let si = self.index_of(start).ok_or(PlanError::BadStart {
            start: s3,
            what: "outside the map",
        })?;
        let (si, climb) = self.free_above(si).ok_or(PlanError::BadStart {
            start: s3,
            what: "enclosed in the map's surface: no free space above it within 3 m",
        })?;
        let Some(gi) = self.index_of(goal) else {
            return Err(PlanError::BadGoal {
                goal: g3,
                what: "outside the map".into(),
                nearest: None,
            });
        };
        if self.occupied[gi] {
            return Err(PlanError::BadGoal {
                goal: g3,
                what: self.why_occupied(goal),
                nearest: self.nearest_reachable(si, goal),
            });
        }
        let cells = self.astar(si, gi).ok_or_else(|| PlanError::NoPath {
            start: s3,
            goal: g3,
            clearance_m: self.clearance,
            nearest: self.nearest_reachable(si, goal),
        })?;
        let mut path: Vec<Vector3<f64>> = cells
            .iter()
            .map(|&i| self.centre(self.cell_of_index(i)))
            .collect();
        if climb {
            path.insert(0, *start);
        } else {
            path[0] = *start;
        }
        if let Some(last) = path.last_mut() {
            *last = *goal;
        }
        let (head, rest) = path.split_at(usize::from(climb));
        let mut out = head.to_vec();
        out.extend(self.shortcut(rest));
        Ok(out)
    }

    /// The start cell, or if it is within the clearance of the map (a vehicle on the ground), the first free
    /// cell above it within 3 m, one more cell up for room to turn; and whether it climbed.
    fn free_above(&self, i: usize) -> Option<(usize, bool)> {
        if !self.occupied[i] {
            return Some((i, false));
        }
        let c = self.cell_of_index(i);
        let most = (3.0 / self.voxel).ceil() as i64;
        (1..=most).find_map(|up| {
            let j = self.index([c[0], c[1], c[2] + up])?;
            let above = self
                .index([c[0], c[1], c[2] + up + 1])
                .filter(|&k| !self.occupied[k]);
            (!self.occupied[j]).then_some((above.unwrap_or(j), true))
        })
    }

    /// Which condition an occupied goal fails: in the map's surface, too close to the ground under it, or too
    /// close to the map beside or above it, with the distance and the clearance needed.
    fn why_occupied(&self, goal: &Vector3<f64>) -> String {
        let Some(nearest) = self.nearest_surface(goal) else {
            return "within the vehicle's clearance of the map".into();
        };
        let d = nearest - goal;
        let (dist, need) = (d.norm(), self.clearance);
        if dist < 0.5 * self.voxel {
            format!(
                "in the map's surface (a map point within {:.2} m)",
                0.5 * self.voxel
            )
        } else if -d.z > d.xy().norm() {
            format!(
                "too close to the ground for the vehicle's clearance: about {:.2} m above the surface under it, \
                 where it needs {need:.2} m",
                -d.z
            )
        } else {
            format!(
                "too close to the map for the vehicle's clearance: about {dist:.2} m from it, where it needs \
                 {need:.2} m"
            )
        }
    }

    /// The centre of the cell holding a map point nearest to `p`, within the clearance and a cell (distances
    /// from it are good to half a voxel).
    fn nearest_surface(&self, p: &Vector3<f64>) -> Option<Vector3<f64>> {
        let c = self.cell_of(p);
        let reach = (self.clearance / self.voxel).ceil() as i64 + 1;
        let mut best: Option<(f64, Vector3<f64>)> = None;
        for dz in -reach..=reach {
            for dy in -reach..=reach {
                for dx in -reach..=reach {
                    let cell = [c[0] + dx, c[1] + dy, c[2] + dz];
                    if self.index(cell).is_some_and(|j| self.surface[j]) {
                        let q = self.centre(cell);
                        let d = (q - p).norm();
                        if best.is_none_or(|(b, _)| d < b) {
                            best = Some((d, q));
                        }
                    }
                }
            }
        }
        best.map(|(_, q)| q)
    }

    /// The centre of the free cell reachable from cell `from` nearest to `goal` (a flood fill of the free space
    /// around the start; only on the error path).
    fn nearest_reachable(&self, from: usize, goal: &Vector3<f64>) -> Option<[f64; 3]> {
        if self.occupied[from] {
            return None;
        }
        let mut seen = vec![false; self.occupied.len()];
        let mut queue = std::collections::VecDeque::from([from]);
        seen[from] = true;
        let mut best = (f64::INFINITY, from);
        while let Some(i) = queue.pop_front() {
            let c = self.cell_of_index(i);
            let d = (self.centre(c) - goal).norm();
            if d < best.0 {
                best = (d, i);
            }
            for n in neighbours(c) {
                if let Some(j) = self.index(n).filter(|&j| !self.occupied[j] && !seen[j]) {
                    seen[j] = true;
                    queue.push_back(j);
                }
            }
        }
        let p = self.centre(self.cell_of_index(best.1));
        Some([p.x, p.y, p.z])
    }

    fn astar(&self, start: usize, goal: usize) -> Option<Vec<usize>> {
        #[derive(PartialEq)]
        struct Open(f64, usize);
        impl Eq for Open {}
        impl Ord for Open {
            fn cmp(&self, o: &Self) -> Ordering {
                o.0.total_cmp(&self.0).then(o.1.cmp(&self.1))
            }
        }
        impl PartialOrd for Open {
            fn partial_cmp(&self, o: &Self) -> Option<Ordering> {
                Some(self.cmp(o))
            }
        }
        let n = self.occupied.len();
        let mut g = vec![f64::INFINITY; n];
        let mut parent = vec![usize::MAX; n];
        let gc = self.cell_of_index(goal);
        let h = |c: [i64; 3]| {
            let d = [c[0] - gc[0], c[1] - gc[1], c[2] - gc[2]];
            ((d[0] * d[0] + d[1] * d[1] + d[2] * d[2]) as f64).sqrt()
        };
        let mut open = BinaryHeap::new();
        g[start] = 0.0;
        open.push(Open(h(self.cell_of_index(start)), start));
        while let Some(Open(_, i)) = open.pop() {
            if i == goal {
                let mut path = vec![goal];
                let mut k = goal;
                while parent[k] != usize::MAX {
                    k = parent[k];
                    path.push(k);
                }
                path.reverse();
                return Some(path);
            }
            let c = self.cell_of_index(i);
            for nc in neighbours(c) {
                let Some(j) = self.index(nc) else { continue };
                if self.occupied[j] {
                    continue;
                }
                let d = [nc[0] - c[0], nc[1] - c[1], nc[2] - c[2]];
                let cost = g[i] + (((d[0] * d[0] + d[1] * d[1] + d[2] * d[2]) as f64).sqrt());
                if cost < g[j] {
                    g[j] = cost;
                    parent[j] = i;
                    open.push(Open(cost + h(nc), j));
                }
            }
        }
        None
    }

    /// Drops every vertex the path can skip while keeping line of sight (greedy, from the start).
    fn shortcut(&self, path: &[Vector3<f64>]) -> Vec<Vector3<f64>> {
        let mut out = vec![path[0]];
        let mut i = 0;
        while i + 1 < path.len() {
            let mut j = path.len() - 1;
            while j > i + 1 && !self.line_free(&path[i], &path[j]) {
                j -= 1;
            }
            out.push(path[j]);
            i = j;
        }
        out
    }
}

/// The 26 cells around `c`.
fn neighbours(c: [i64; 3]) -> impl Iterator<Item = [i64; 3]> {
    (-1..=1i64)
        .flat_map(|dz| (-1..=1i64).flat_map(move |dy| (-1..=1i64).map(move |dx| [dx, dy, dz])))
        .filter(|d| *d != [0, 0, 0])
        .map(move |d| [c[0] + d[0], c[1] + d[1], c[2] + d[2]])
}
