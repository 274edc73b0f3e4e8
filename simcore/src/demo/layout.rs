//! Procedural generation of the demo site from a [`DemoSpec`] and a seed: where the trees stand and how they
//! lean, the building's walls with their openings, the power line, the parked vehicles, the stations.
//!
//! Every random choice comes from one counter-based stream per part of the site, so changing, say, the number
//! of trees does not move the vehicles.

use std::f64::consts::{FRAC_PI_2, PI, TAU};

use super::site::{DemoSite, Label, Object, Station, Walker, turn};
use super::spec::{BuildingSpec, DemoSpec, ForestSpec, ParkingSpec, PowerLineSpec};
use super::terrain::Terrain;
use crate::rng::BeamRng;
use crate::scene::Surface;

/// Streams of the layout's randomness (the `frame` argument of [`BeamRng::new`]).
const STREAM_GROUND: u64 = 1;
const STREAM_FOREST: u64 = 2;
const STREAM_PARKING: u64 = 3;
const STREAM_STATIONS: u64 = 4;
/// How deep walls, trunks and poles reach below the ground, so uneven ground never shows a gap under them.
const FOOTING_M: f64 = 0.3;
/// Trees keep this far from stations (a tripod is not set up inside a trunk).
const STATION_CLEARANCE_M: f64 = 2.5;
/// Segments of each wire span (a parabola through the two attachment points).
const WIRE_SEGMENTS: usize = 12;

/// Uniform in [lo, hi].
fn between(rng: &mut BeamRng, [lo, hi]: [f64; 2]) -> f64 {
    lo + (hi - lo) * rng.uniform_open0()
}

/// The site `spec` describes, laid out from `seed`.
pub fn generate(spec: &DemoSpec, seed: u64) -> DemoSite {
    let g = &spec.ground;
    let terrain = Terrain::random(
        g.half_extent,
        g.waves,
        g.amplitude,
        g.wavelength,
        &mut BeamRng::new(seed, STREAM_GROUND, 0),
    );
    let stations = stations(spec, &terrain, seed);
    let mut objects = forest(&spec.forest, &terrain, &stations, seed);
    let corridor_m = building(&spec.building, &terrain, &mut objects);
    power_line(&spec.power_line, &terrain, &mut objects);
    parking(&spec.parking, &terrain, &mut objects, seed);
    let p = &spec.person;
    let starts: Vec<f64> = p.during.iter().map(|&s| stations[s].start_s).collect();
    let first = starts.iter().copied().fold(f64::INFINITY, f64::min);
    let last = starts.iter().copied().fold(f64::NEG_INFINITY, f64::max) + spec.scan.duration;
    let person = Walker {
        path_m: p.path,
        speed_m_s: p.speed,
        radius_m: p.radius,
        height_m: p.height,
        present_s: if starts.is_empty() {
            0.0..0.0
        } else {
            first..last
        },
        reflectance: p.reflectance,
    };
    DemoSite {
        terrain,
        ground_reflectance: g.reflectance,
        objects,
        person,
        stations,
        corridor_m,
    }
}

fn stations(spec: &DemoSpec, terrain: &Terrain, seed: u64) -> Vec<Station> {
    let mut rng = BeamRng::new(seed, STREAM_STATIONS, 0);
    spec.scan
        .stations
        .iter()
        .enumerate()
        .map(|(k, &[x, y])| Station {
            position_m: [x, y, terrain.height(x, y) + spec.scan.height],
            yaw_rad: TAU * rng.uniform_open0(),
            start_s: k as f64 * spec.scan.interval,
        })
        .collect()
}

/// Trees by dart throwing: candidates closer than `spacing` to a trunk or too close to a station are refused.
fn forest(f: &ForestSpec, terrain: &Terrain, stations: &[Station], seed: u64) -> Vec<Object> {
    let mut rng = BeamRng::new(seed, STREAM_FOREST, 0);
    let mut bases: Vec<[f64; 2]> = Vec::new();
    let mut objects = Vec::new();
    let [lo, hi] = f.area;
    for _ in 0..f.trees * 200 {
        if bases.len() == f.trees {
            break;
        }
        let (x, y) = (
            between(&mut rng, [lo[0], hi[0]]),
            between(&mut rng, [lo[1], hi[1]]),
        );
        let crowded = bases.iter().any(|b| (b[0] - x).hypot(b[1] - y) < f.spacing);
        let blocks = stations
            .iter()
            .any(|s| (s.position_m[0] - x).hypot(s.position_m[1] - y) < STATION_CLEARANCE_M);
        if crowded || blocks {
            continue;
        }
        bases.push([x, y]);
        tree(f, terrain, [x, y], &mut rng, &mut objects);
    }
    objects
}

/// One tree: a leaning trunk from below the ground to its top, a crown of spheres around the top.
fn tree(
    f: &ForestSpec,
    terrain: &Terrain,
    [x, y]: [f64; 2],
    rng: &mut BeamRng,
    out: &mut Vec<Object>,
) {
    let ground = terrain.height(x, y);
    let height = between(rng, f.height);
    let radius = between(rng, f.trunk_radius);
    let lean = between(rng, f.lean).to_radians();
    let toward = TAU * rng.uniform_open0();
    let axis = [
        lean.sin() * toward.cos(),
        lean.sin() * toward.sin(),
        lean.cos(),
    ];
    let at = |s: f64| [x + axis[0] * s, y + axis[1] * s, ground + axis[2] * s];
    out.push(Object {
        surface: Surface::Tube {
            a: at(-FOOTING_M),
            b: at(height),
            radius,
        },
        label: Label::Trunk,
        reflectance: f.bark_reflectance,
    });
    let spheres = f.crown_spheres[0]
        + (rng.next_u64() % (f.crown_spheres[1] - f.crown_spheres[0] + 1) as u64) as usize;
    for k in 0..spheres {
        let r = between(rng, f.crown_radius);
        // The first sphere sits on the trunk's top, so the trunk ends inside the crown.
        let (along, off) = if k == 0 {
            (height, 0.0)
        } else {
            (
                height * between(rng, [0.6, 0.95]),
                r * between(rng, [0.2, 0.8]),
            )
        };
        let dir = TAU * rng.uniform_open0();
        let c = at(along);
        let z = c[2].max(ground + f.crown_clearance + r);
        out.push(Object {
            surface: Surface::Sphere {
                centre: [c[0] + off * dir.cos(), c[1] + off * dir.sin(), z],
                radius: r,
            },
            label: Label::Crown,
            reflectance: f.leaf_reflectance,
        });
    }
}

/// The building's frame and heights.
struct Frame {
    centre: [f64; 2],
    yaw: f64,
    /// Bottom of the walls (below the lowest ground under the building), floor level, top of the walls.
    z_base: f64,
    z_floor: f64,
    z_top: f64,
    thickness: f64,
}

impl Frame {
    fn world(&self, local: [f64; 2]) -> [f64; 2] {
        let v = turn(local, self.yaw);
        [self.centre[0] + v[0], self.centre[1] + v[1]]
    }

    /// A box spanning local `u` in [u0, u1], `v` in [v0, v1] and heights [z0, z1].
    fn block(&self, [u0, u1]: [f64; 2], [v0, v1]: [f64; 2], [z0, z1]: [f64; 2]) -> Surface {
        let c = self.world([0.5 * (u0 + u1), 0.5 * (v0 + v1)]);
        Surface::Cuboid {
            centre: [c[0], c[1], 0.5 * (z0 + z1)],
            yaw_rad: self.yaw,
            half: [
                0.5 * (u1 - u0).abs(),
                0.5 * (v1 - v0).abs(),
                0.5 * (z1 - z0).abs(),
            ],
        }
    }
}

/// An opening in a wall: from `s0` to `s1` along the wall, from `bottom` to `top` above the floor.
#[derive(Clone, Copy)]
struct Opening {
    s0: f64,
    s1: f64,
    bottom: f64,
    top: f64,
}

/// Walls, floor and roof. Returns the corridor's centre line for the flight (see [`DemoSite::corridor_m`]).
fn building(b: &BuildingSpec, terrain: &Terrain, out: &mut Vec<Object>) -> [[f64; 3]; 2] {
    let [hl, hw] = [0.5 * b.size[0], 0.5 * b.size[1]];
    let frame = building_frame(b, terrain);
    for w in building_walls(b, &frame) {
        out.push(Object {
            surface: w,
            label: Label::Wall,
            reflectance: b.reflectance,
        });
    }
    out.push(Object {
        surface: frame.block([-hl, hl], [-hw, hw], [frame.z_base, frame.z_floor]),
        label: Label::Floor,
        reflectance: b.reflectance,
    });
    let eave = 0.3;
    out.push(Object {
        surface: frame.block(
            [-hl - eave, hl + eave],
            [-hw - eave, hw + eave],
            [frame.z_top, frame.z_top + 0.25],
        ),
        label: Label::Roof,
        reflectance: b.roof_reflectance,
    });
    let z = frame.z_floor + 1.2;
    let [a, e] = [frame.world([-hl - 2.0, 0.0]), frame.world([hl + 2.0, 0.0])];
    [[a[0], a[1], z], [e[0], e[1], z]]
}

/// The building's frame: its footing below the lowest ground under its footprint, its floor just above the
/// highest, its walls' top.
fn building_frame(b: &BuildingSpec, terrain: &Terrain) -> Frame {
    let [len, wid] = b.size;
    let (hl, hw) = (0.5 * len, 0.5 * wid);
    let mut frame = Frame {
        centre: b.centre,
        yaw: b.yaw.to_radians(),
        z_base: 0.0,
        z_floor: 0.0,
        z_top: 0.0,
        thickness: b.wall_thickness,
    };
    // Ground under the footprint, sampled finely enough for waves many metres long.
    let samples: Vec<f64> = (0..=16)
        .flat_map(|i| (0..=16).map(move |j| (i, j)))
        .map(|(i, j)| {
            let p = frame.world([-hl + len * i as f64 / 16.0, -hw + wid * j as f64 / 16.0]);
            terrain.height(p[0], p[1])
        })
        .collect();
    frame.z_base = samples.iter().copied().fold(f64::INFINITY, f64::min) - FOOTING_M;
    frame.z_floor = samples.iter().copied().fold(f64::NEG_INFINITY, f64::max) + 0.05;
    frame.z_top = frame.z_floor + b.wall_height;
    frame
}

/// The walls: the long outer ones with evenly spaced windows, the end walls with the corridor's doorways, and
/// the corridor's walls with a door into the room on each side of the middle.
fn building_walls(b: &BuildingSpec, frame: &Frame) -> Vec<Surface> {
    let [len, wid] = b.size;
    let (hl, hw, t) = (0.5 * len, 0.5 * wid, b.wall_thickness);
    let mut walls = Vec::new();
    let n = b.windows_per_side;
    let windows: Vec<Opening> = (0..n)
        .map(|k| {
            let s = len * (k as f64 + 0.5) / n as f64;
            Opening {
                s0: s - 0.5 * b.window[0],
                s1: s + 0.5 * b.window[0],
                bottom: b.window_sill,
                top: b.window_sill + b.window[1],
            }
        })
        .collect();
    for side in [-1.0, 1.0] {
        let v = side * (hw - 0.5 * t);
        wall_along_u(frame, [-hl, hl], v, &windows, &mut walls);
    }
    let cw = b.corridor_width;
    let doorway = [Opening {
        s0: hw - 0.5 * cw,
        s1: hw + 0.5 * cw,
        bottom: 0.0,
        top: b.corridor_door_height,
    }];
    for side in [-1.0, 1.0] {
        let u = side * (hl - 0.5 * t);
        wall_along_v(frame, u, [-hw, hw], &doorway, &mut walls);
    }
    let inner = hl - t;
    let doors: Vec<Opening> = [0.25, 0.75]
        .iter()
        .map(|f| {
            let s = 2.0 * inner * f;
            Opening {
                s0: s - 0.5 * b.door[0],
                s1: s + 0.5 * b.door[0],
                bottom: 0.0,
                top: b.door[1],
            }
        })
        .collect();
    for side in [-1.0, 1.0] {
        let v = side * (0.5 * cw + 0.5 * t);
        wall_along_u(frame, [-inner, inner], v, &doors, &mut walls);
    }
    walls
}

/// A wall along the building's long axis at cross position `v`, from `u0` to `u1`; openings measured from `u0`.
fn wall_along_u(
    f: &Frame,
    [u0, u1]: [f64; 2],
    v: f64,
    openings: &[Opening],
    out: &mut Vec<Surface>,
) {
    let half_t = 0.5 * f.thickness;
    for (s, z) in wall_pieces(u1 - u0, openings, f) {
        out.push(f.block([u0 + s[0], u0 + s[1]], [v - half_t, v + half_t], z));
    }
}

/// A wall across the building at long position `u`, from `v0` to `v1`; openings measured from `v0`.
fn wall_along_v(
    f: &Frame,
    u: f64,
    [v0, v1]: [f64; 2],
    openings: &[Opening],
    out: &mut Vec<Surface>,
) {
    let half_t = 0.5 * f.thickness;
    for (s, z) in wall_pieces(v1 - v0, openings, f) {
        out.push(f.block([u - half_t, u + half_t], [v0 + s[0], v0 + s[1]], z));
    }
}

/// The solid parts of a wall of `length` with `openings` (sorted, inside the wall, not overlapping): full-height
/// pieces between openings, and under and over each opening. Each piece: (span along the wall, heights).
fn wall_pieces(length: f64, openings: &[Opening], f: &Frame) -> Vec<([f64; 2], [f64; 2])> {
    let mut pieces = Vec::new();
    let mut s = 0.0;
    for o in openings {
        if o.s0 > s {
            pieces.push(([s, o.s0], [f.z_base, f.z_top]));
        }
        let (bottom, top) = (f.z_floor + o.bottom, f.z_floor + o.top);
        if bottom > f.z_base + 1e-6 {
            pieces.push(([o.s0, o.s1], [f.z_base, bottom]));
        }
        if top < f.z_top - 1e-6 {
            pieces.push(([o.s0, o.s1], [top, f.z_top]));
        }
        s = o.s1;
    }
    if s < length {
        pieces.push(([s, length], [f.z_base, f.z_top]));
    }
    pieces
}

/// Poles with cross-arms along a line, and sagging wires between neighbouring poles.
fn power_line(p: &PowerLineSpec, terrain: &Terrain, out: &mut Vec<Object>) {
    let (dx, dy) = (p.to[0] - p.from[0], p.to[1] - p.from[1]);
    let across = {
        let n = dx.hypot(dy).max(1e-9);
        [-dy / n, dx / n]
    };
    let arm_half = 0.5 * 0.8 * p.wires.max(2) as f64;
    let mut attach: Vec<Vec<[f64; 3]>> = Vec::new();
    for i in 0..p.poles {
        let f = i as f64 / (p.poles - 1) as f64;
        let (x, y) = (p.from[0] + dx * f, p.from[1] + dy * f);
        let ground = terrain.height(x, y);
        let top = ground + p.pole_height;
        let obj = |surface| Object {
            surface,
            label: Label::Pole,
            reflectance: p.reflectance,
        };
        out.push(obj(Surface::Cylinder {
            x,
            y,
            radius: p.pole_radius,
            z0: ground - FOOTING_M,
            z1: top,
        }));
        let arm_z = top - 0.3;
        let end = |s: f64| [x + across[0] * s, y + across[1] * s, arm_z];
        out.push(obj(Surface::Tube {
            a: end(-arm_half),
            b: end(arm_half),
            radius: 0.05,
        }));
        attach.push(
            (0..p.wires)
                .map(|k| {
                    let s = (k as f64 - 0.5 * (p.wires as f64 - 1.0)) * 0.8;
                    let e = end(s);
                    [e[0], e[1], arm_z + 0.05 + p.wire_radius]
                })
                .collect(),
        );
    }
    for span in attach.windows(2) {
        for (a, b) in span[0].iter().zip(&span[1]) {
            let at = |s: f64| {
                let sag = 4.0 * p.sag * s * (1.0 - s);
                [
                    a[0] + (b[0] - a[0]) * s,
                    a[1] + (b[1] - a[1]) * s,
                    a[2] + (b[2] - a[2]) * s - sag,
                ]
            };
            for k in 0..WIRE_SEGMENTS {
                let (s0, s1) = (
                    k as f64 / WIRE_SEGMENTS as f64,
                    (k + 1) as f64 / WIRE_SEGMENTS as f64,
                );
                out.push(Object {
                    surface: Surface::Tube {
                        a: at(s0),
                        b: at(s1),
                        radius: p.wire_radius,
                    },
                    label: Label::Wire,
                    reflectance: p.reflectance,
                });
            }
        }
    }
}

/// Vehicles side by side across the parking area, each a body and a cabin, nose toward +y (give or take).
fn parking(p: &ParkingSpec, terrain: &Terrain, out: &mut Vec<Object>, seed: u64) {
    let mut rng = BeamRng::new(seed, STREAM_PARKING, 0);
    let [lo, hi] = p.area;
    let slot = (hi[0] - lo[0]) / p.vehicles.max(1) as f64;
    for i in 0..p.vehicles {
        let scale = between(&mut rng, [0.92, 1.08]);
        let [l, w, h] = p.size.map(|s| s * scale);
        let x = lo[0] + (i as f64 + 0.5) * slot;
        let y = 0.5 * (lo[1] + hi[1]) + between(&mut rng, [-0.5, 0.5]);
        let yaw = FRAC_PI_2
            + between(&mut rng, [-0.1, 0.1])
            + if rng.uniform_open0() < 0.5 { PI } else { 0.0 };
        let reflectance = between(&mut rng, p.reflectance);
        let corners = [[-0.5, -0.5], [-0.5, 0.5], [0.5, -0.5], [0.5, 0.5]].map(|[a, b]| {
            let v = turn([a * l, b * w], yaw);
            terrain.height(x + v[0], y + v[1])
        });
        let bottom = corners.iter().copied().fold(f64::INFINITY, f64::min) - 0.05;
        let ground = terrain.height(x, y);
        let (body_top, top) = (ground + 0.6 * h, ground + h);
        let cabin = turn([-0.1 * l, 0.0], yaw);
        let boxes = [
            Surface::Cuboid {
                centre: [x, y, 0.5 * (bottom + body_top)],
                yaw_rad: yaw,
                half: [0.5 * l, 0.5 * w, 0.5 * (body_top - bottom)],
            },
            Surface::Cuboid {
                centre: [x + cabin[0], y + cabin[1], 0.5 * (body_top + top)],
                yaw_rad: yaw,
                half: [0.275 * l, 0.45 * w, 0.5 * (top - body_top)],
            },
        ];
        for surface in boxes {
            out.push(Object {
                surface,
                label: Label::Vehicle,
                reflectance,
            });
        }
    }
}
