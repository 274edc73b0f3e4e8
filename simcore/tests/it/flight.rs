//! The flight loop end to end: missions, planner, collisions, obstacles, and the recording (read back and
//! decoded by an independent CDR reader here; tests/python_peers decodes it with the Python packages ROS tools
//! use).

use std::collections::BTreeMap;
use std::path::Path;

use crate::common::{fly, map_with_walls, mission, recorded, vlp_mission};
use aerie_simcore::flight::{Flight, FlightError};
use aerie_simcore::mission::{Mission, PlanError};
use aerie_simcore::record::{Compression, RecordOptions};
use aerie_simcore::vehicle::GRAVITY;
use aerie_simcore::world::{ObstacleConfig, ObstacleKind, Obstacles, Shape};
use nalgebra::Vector3;

#[test]
fn a_waypoint_mission_visits_every_waypoint_under_its_speed_limit() {
    let m = mission(
        r#"
        [[vehicle]]
        name = "uav"
        start = [0.0, 0.0, 0.13, 0.0]
        max_speed_m_s = 2.0
        [[vehicle.goal]]
        kind = "waypoint"
        position = [0.0, 0.0, 1.5]
        [[vehicle.goal]]
        kind = "waypoint"
        position = [6.0, 0.0, 1.5]
        [[vehicle.goal]]
        kind = "waypoint"
        position = [6.0, 6.0, 2.5]
        [[vehicle.goal]]
        kind = "land"
        "#,
    );
    let f = fly(map_with_walls(&[], &[]), &m);
    let tracks = f.tracks();
    let track = tracks[0].1;
    for w in [[0.0, 0.0, 1.5], [6.0, 0.0, 1.5], [6.0, 6.0, 2.5]] {
        let near = track
            .iter()
            .map(|(_, p, _)| (p.translation.vector - Vector3::from(w)).norm())
            .fold(f64::INFINITY, f64::min);
        assert!(near < 0.05, "waypoint {w:?} missed by {near} m");
    }
    let top = track.iter().map(|x| x.2.norm()).fold(0.0, f64::max);
    assert!(top <= 2.0 && top > 1.5, "top speed {top}");
    let s = &f.summary()[0];
    assert!(s.goals_done && s.collisions == 0, "{s:?}");
    // Landed on the floor: the gear rests on z = 0.
    assert!((s.final_position[2] - 0.12).abs() < 0.03, "{s:?}");
}

/// A start a little above the floor means "on the floor": the vehicle is set down there, not left to fall with
/// its motors off. A duration the mission gives holds after every vehicle has landed.
#[test]
fn a_start_above_the_floor_is_set_down_and_a_given_duration_holds() {
    let m = mission(
        r#"
        duration_s = 3.0
        [[vehicle]]
        name = "uav"
        start = [0.0, 0.0, 0.25, 0.0]
        [[vehicle.goal]]
        kind = "land"
        "#,
    );
    let f = fly(map_with_walls(&[], &[]), &m);
    assert!((f.time() - 3.0).abs() < 1e-6, "flew {} s", f.time());
    let tracks = f.tracks();
    let heights: Vec<f64> = tracks[0]
        .1
        .iter()
        .map(|(_, p, _)| p.translation.z)
        .collect();
    // marsim_quad's gear is 0.12 m: resting on z = 0 from the first pose to the last.
    assert!(
        heights.iter().all(|z| (z - 0.12).abs() < 1e-9),
        "{:?}",
        &heights[..5]
    );
}

#[test]
fn a_falling_sphere_falls_with_g_and_obstacles_respawn_inside() {
    let (lo, hi) = (Vector3::new(-5.0, -5.0, 0.0), Vector3::new(5.0, 5.0, 100.0));
    let cfg = ObstacleConfig {
        kind: ObstacleKind::FallingSphere,
        count: 1,
        size_m: 0.5,
        speed_m_s: 0.0,
    };
    let mut o = Obstacles::new(&[cfg], lo, hi, 3);
    let Shape::Sphere { centre, .. } = o.shapes()[0] else {
        unreachable!()
    };
    let z0 = centre.z;
    for k in 1..=2000 {
        o.step(0.001);
        let t = k as f64 * 0.001;
        let Shape::Sphere { centre, .. } = o.shapes()[0] else {
            unreachable!()
        };
        assert!(
            (centre.z - (z0 - 0.5 * GRAVITY * t * t)).abs() < 1e-9,
            "t {t}"
        );
    }
    // Drones and cubes stay inside the box, respawning when they leave; the same seed gives the same run.
    let cfgs = [
        ObstacleConfig {
            kind: ObstacleKind::Drone,
            count: 4,
            size_m: 0.4,
            speed_m_s: 3.0,
        },
        ObstacleConfig {
            kind: ObstacleKind::Cube,
            count: 3,
            size_m: 0.6,
            speed_m_s: 2.0,
        },
    ];
    let run = |seed| {
        let mut o = Obstacles::new(&cfgs, lo, Vector3::new(5.0, 5.0, 5.0), seed);
        for _ in 0..20_000 {
            o.step(0.001);
            for s in o.shapes() {
                let c = match s {
                    Shape::Sphere { centre, .. } | Shape::Cube { centre, .. } => centre,
                };
                assert!((0..3).all(|k| c[k] >= -5.6 && c[k] <= 5.6), "{c}");
            }
        }
        (o.shapes().to_vec(), o.respawns())
    };
    let (a, respawns) = run(1);
    assert!(respawns.iter().sum::<u64>() > 7, "{respawns:?}");
    assert_eq!(a, run(1).0);
    assert_ne!(a, run(2).0);
}

#[test]
fn flying_into_a_wall_is_a_collision_at_the_wall() {
    let m = mission(
        r#"
        stop_on_collision = true
        [[vehicle]]
        name = "uav"
        start = [0.0, 0.0, 1.5, 0.0]
        [[vehicle.goal]]
        kind = "waypoint"
        position = [9.0, 0.0, 1.5]
        "#,
    );
    let f = fly(map_with_walls(&[(5.0, -5.0, 5.0)], &[]), &m);
    let e = f.collisions().next().expect("a collision");
    let radius = 0.35;
    assert_eq!(e.what, "map");
    assert!((e.position[0] - (5.0 - radius)).abs() < 0.06, "{e:?}");
    assert!(
        (e.point_hit[0] - 5.0).abs() < 0.06 && e.point_hit[1].abs() < radius,
        "{e:?}"
    );
    assert!(
        e.time_s > 1.0 && f.time() < e.time_s + 0.01,
        "stopped at {}",
        f.time()
    );
}

#[test]
fn the_planner_reaches_a_goal_behind_a_wall() {
    let m = mission(
        r#"
        [[vehicle]]
        name = "uav"
        start = [0.0, 0.0, 1.5, 0.0]
        max_speed_m_s = 3.0
        [[vehicle.goal]]
        kind = "goal"
        position = [9.0, 0.0, 1.5]
        "#,
    );
    // A wall 8 m wide and taller than the flight: the path must go around an end.
    let f = fly(map_with_walls(&[(5.0, -4.0, 4.0)], &[]), &m);
    assert!(f.collisions().next().is_none(), "{:?}", f.events());
    let s = &f.summary()[0];
    let end = Vector3::from(s.final_position);
    assert!((end - Vector3::new(9.0, 0.0, 1.5)).norm() < 0.05, "{end}");
    let tracks = f.tracks();
    // Around an end or over the top (the map's bounds leave room above it), never through.
    let went_round = tracks[0].1.iter().any(|(_, p, _)| {
        let v = p.translation.vector;
        v.y.abs() > 4.2 || v.z > 4.2
    });
    assert!(went_round && s.goals_done, "{s:?}");
}

#[test]
fn an_unreachable_goal_is_an_error_naming_it() {
    let text = |goal: &str| {
        format!(
            "[[vehicle]]\nname = \"uav\"\nstart = [0.0, 0.0, 1.5, 0.0]\n[[vehicle.goal]]\nkind = \"goal\"\nposition = {goal}\n"
        )
    };
    // Inside a closed box.
    let map = map_with_walls(&[], &[([6.0, 0.0, 2.0], 1.5)]);
    let err = Flight::new(map, &mission(&text("[6.0, 0.0, 2.0]")), Path::new("."))
        .err()
        .unwrap();
    assert!(
        matches!(
            err,
            FlightError::Plan {
                source: PlanError::NoPath { .. },
                ..
            }
        ),
        "{err}"
    );
    assert!(err.to_string().contains("(6.00, 0.00, 2.00)"), "{err}");
    // ... with the reachable point nearest to it: outside the box's wall, clear of it.
    let nearest = |err: &FlightError| match err {
        FlightError::Plan {
            source: PlanError::NoPath { nearest, .. } | PlanError::BadGoal { nearest, .. },
            ..
        } => nearest.map(Vector3::from),
        _ => None,
    };
    let near = nearest(&err).expect("a suggestion");
    let off = (near - Vector3::new(6.0, 0.0, 2.0)).abs();
    assert!(
        off.max() > 1.5 + 0.45 && off.max() < 1.5 + 0.45 + 0.5,
        "{near}"
    );
    assert!(
        err.to_string().contains("the nearest reachable point is ("),
        "{err}"
    );
    // Too close to the floor for the clearance, and in a wall: each says which, and where to go instead.
    for (goal, says, height) in [
        (
            "[2.0, 3.0, 0.2]",
            "too close to the ground for the vehicle's clearance: about 0.",
            0.45,
        ),
        ("[5.0, 0.0, 2.0]", "in the map's surface", 2.0),
    ] {
        let map = map_with_walls(&[(5.0, -5.0, 5.0)], &[]);
        let err = Flight::new(map, &mission(&text(goal)), Path::new("."))
            .err()
            .unwrap();
        assert!(err.to_string().contains(says), "{err}");
        let near = nearest(&err).expect("a suggestion");
        assert!((near.z - height).abs() < 0.35, "{goal}: {near}");
    }
    // Outside the map.
    let map = map_with_walls(&[], &[]);
    let err = Flight::new(map, &mission(&text("[500.0, 0.0, 2.0]")), Path::new("."))
        .err()
        .unwrap();
    assert!(
        err.to_string().contains("(500.00, 0.00, 2.00)") && err.to_string().contains("outside"),
        "{err}"
    );
    // A start far outside the map (another frame's coordinates) is refused before any planning, with the bounds.
    let far = "[[vehicle]]\nname = \"uav\"\nstart = [600000.0, 0.0, 1.5, 0.0]\n";
    let err = Flight::new(map_with_walls(&[], &[]), &mission(far), Path::new("."))
        .err()
        .unwrap();
    assert!(
        matches!(err, FlightError::FarFromMap { .. })
            && err.to_string().contains("start (600000.00, 0.00, 1.50)")
            && err.to_string().contains("span x "),
        "{err}"
    );
}

/// An independent little-endian CDR reader (alignment relative to the end of the 4-byte encapsulation header).
struct Reader<'a> {
    b: &'a [u8],
    pos: usize,
}

impl<'a> Reader<'a> {
    fn new(b: &'a [u8]) -> Reader<'a> {
        assert_eq!(&b[..4], &[0, 1, 0, 0], "CDR little-endian encapsulation");
        Reader { b, pos: 4 }
    }
    fn take(&mut self, n: usize, align: usize) -> &'a [u8] {
        let rel = self.pos - 4;
        self.pos += (align - rel % align) % align;
        let s = &self.b[self.pos..self.pos + n];
        self.pos += n;
        s
    }
    fn u8(&mut self) -> u8 {
        self.take(1, 1)[0]
    }
    fn u32(&mut self) -> u32 {
        u32::from_le_bytes(self.take(4, 4).try_into().unwrap())
    }
    fn f64(&mut self) -> f64 {
        f64::from_le_bytes(self.take(8, 8).try_into().unwrap())
    }
    fn string(&mut self) -> String {
        let n = self.u32() as usize;
        let s = self.take(n, 1);
        assert_eq!(s[n - 1], 0);
        String::from_utf8(s[..n - 1].to_vec()).unwrap()
    }
    fn header(&mut self) -> (f64, String) {
        let sec = self.u32() as i32 as f64;
        let ns = self.u32() as f64;
        (sec + ns * 1e-9, self.string())
    }
    fn done(&self) {
        assert_eq!(self.pos, self.b.len(), "trailing bytes");
    }
}

fn decode(schema: &str, data: &[u8]) {
    let mut r = Reader::new(data);
    match schema {
        "sensor_msgs/msg/PointCloud2" => {
            let (_, frame) = r.header();
            assert_eq!(frame, "uav/vlp");
            let (h, w) = (r.u32(), r.u32());
            assert_eq!(h, 1);
            let n = r.u32();
            let fields: Vec<(String, u32, u8, u32)> = (0..n)
                .map(|_| (r.string(), r.u32(), r.u8(), r.u32()))
                .collect();
            let names: Vec<&str> = fields.iter().map(|f| f.0.as_str()).collect();
            // The VLP-16 preset's clouds carry velodyne_pointcloud's fields (packed, time in float seconds).
            assert_eq!(names, ["x", "y", "z", "intensity", "ring", "time"]);
            let offsets: Vec<u32> = fields.iter().map(|f| f.1).collect();
            assert_eq!(offsets, [0, 4, 8, 12, 16, 18]);
            assert_eq!(r.u8(), 0);
            let (step, row) = (r.u32(), r.u32());
            assert_eq!(row, step * w);
            let len = r.u32() as usize;
            let bytes = r.take(len, 1);
            assert_eq!(len, (step * w) as usize);
            assert!(w > 1000, "{w} points");
            for p in bytes.chunks(step as usize) {
                let f = |o: usize| f32::from_le_bytes(p[o..o + 4].try_into().unwrap());
                let range = (f(0).powi(2) + f(4).powi(2) + f(8).powi(2)).sqrt();
                let ring = u16::from_le_bytes(p[16..18].try_into().unwrap());
                let t = f32::from_le_bytes(p[18..22].try_into().unwrap());
                assert!(range > 0.5 && range < 120.0 && (0.0..0.1).contains(&t) && ring < 16);
            }
            assert_eq!(r.u8(), 1);
        }
        "sensor_msgs/msg/Imu" => {
            let (_, frame) = r.header();
            assert_eq!(frame, "uav/base_link");
            let q: Vec<f64> = (0..4).map(|_| r.f64()).collect();
            assert_eq!(q, [0.0, 0.0, 0.0, 1.0]);
            assert_eq!(r.f64(), -1.0);
            (0..8).for_each(|_| assert_eq!(r.f64(), 0.0));
            let gyro: Vec<f64> = (0..3).map(|_| r.f64()).collect();
            (0..9).for_each(|_| {
                r.f64();
            });
            let acc: Vec<f64> = (0..3).map(|_| r.f64()).collect();
            (0..9).for_each(|_| {
                r.f64();
            });
            assert!(gyro.iter().all(|g| g.abs() < 5.0));
            assert!((acc[2] - GRAVITY).abs() < 3.0, "{acc:?}");
        }
        "nav_msgs/msg/Odometry" => {
            let (_, frame) = r.header();
            assert_eq!(
                (frame.as_str(), r.string().as_str()),
                ("map", "uav/base_link")
            );
            let p: Vec<f64> = (0..7).map(|_| r.f64()).collect();
            assert!((p[2] - 1.5).abs() < 0.2, "{p:?}");
            let qn: f64 = p[3..].iter().map(|v| v * v).sum();
            assert!((qn - 1.0).abs() < 1e-9);
            (0..36 + 6 + 36).for_each(|_| {
                r.f64();
            });
        }
        "tf2_msgs/msg/TFMessage" => {
            let n = r.u32();
            assert!(n >= 1);
            for _ in 0..n {
                let (_, parent) = r.header();
                let child = r.string();
                assert!(
                    parent == "map" || parent == "uav/base_link",
                    "{parent} -> {child}"
                );
                (0..7).for_each(|_| {
                    r.f64();
                });
            }
        }
        other => panic!("unexpected schema {other}"),
    }
    r.done();
}

/// Every chunk compression: the same seed gives the same bytes, every message decodes with the independent CDR
/// reader (tests/python_peers decodes the same recordings with the Python packages ROS tools use, and opens the
/// `rosbag2` folder as a bag), zstd and lz4 are smaller than none.
#[test]
fn the_recording_is_deterministic_and_every_message_decodes() {
    let mut sizes = BTreeMap::new();
    for compression in [Compression::Zstd, Compression::Lz4, Compression::None] {
        let dir = tempfile::tempdir().unwrap();
        let options = RecordOptions {
            compression,
            rosbag2: compression == Compression::Zstd,
        };
        let a = recorded(5, dir.path(), options);
        assert_eq!(a, recorded(5, dir.path(), options), "same seed, same bytes");
        assert_ne!(a, recorded(6, dir.path(), options));
        sizes.insert(compression.name(), a.len());
        check_messages(&a);
        // No partial file is left beside it.
        let leftovers: Vec<_> = std::fs::read_dir(dir.path())
            .unwrap()
            .filter_map(Result::ok)
            .filter(|e| e.file_name().to_string_lossy().contains("partial"))
            .collect();
        assert!(leftovers.is_empty());
        // rosbag2's metadata only when asked.
        assert_eq!(dir.path().join("metadata.yaml").is_file(), options.rosbag2);
        if options.rosbag2 {
            // The metadata lists the last file, seed 6's. Recorded again without rosbag2 into another file, it
            // stays; into that file, its counts would no longer be true, so it goes.
            let plain = RecordOptions {
                rosbag2: false,
                ..options
            };
            recorded(5, dir.path(), plain);
            assert!(dir.path().join("metadata.yaml").exists());
            recorded(6, dir.path(), plain);
            assert!(!dir.path().join("metadata.yaml").exists());
        }
    }
    assert!(
        sizes["zstd"] < sizes["none"] && sizes["lz4"] < sizes["none"],
        "{sizes:?}"
    );
}

/// Every message of an MCAP decodes with the independent reader, with rosbag2's QoS, in the counts of 0.6 s.
fn check_messages(mcap_bytes: &[u8]) {
    let mut per_topic: BTreeMap<String, usize> = BTreeMap::new();
    for m in mcap::MessageStream::new(mcap_bytes).unwrap() {
        let m = m.unwrap();
        let schema = m.channel.schema.as_ref().unwrap();
        assert_eq!(
            (
                schema.encoding.as_str(),
                m.channel.message_encoding.as_str()
            ),
            ("ros2msg", "cdr")
        );
        decode(&schema.name, &m.data);
        // rosbag2's QoS: /tf_static latched (transient local, durability 1), the rest volatile (2).
        let qos = &m.channel.metadata["offered_qos_profiles"];
        let durability = if m.channel.topic == "/tf_static" {
            1
        } else {
            2
        };
        assert!(
            qos.contains(&format!("durability: {durability}\n")) && qos.contains("reliability: 1"),
            "{}: {qos}",
            m.channel.topic
        );
        *per_topic.entry(m.channel.topic.clone()).or_default() += 1;
    }
    // 0.6 s: IMU at 200 Hz, odometry and /tf at 100 Hz, the LiDAR at 10 Hz.
    assert_eq!(per_topic.get("/uav/imu"), Some(&120));
    assert_eq!(per_topic.get("/uav/odom"), Some(&60));
    assert_eq!(per_topic.get("/uav/vlp/points"), Some(&6));
    assert_eq!(per_topic.get("/tf_static"), Some(&1));
}

/// `points_in = "firing"` records each point in the sensor frame at its own firing (as a driver publishes it),
/// the default the motion compensated into the frame start: the same returns, placed apart by the motion.
#[test]
fn a_sensor_records_points_where_the_mission_asks() {
    let frames = |points_in: &str| {
        let m = vlp_mission(3, 1.5, points_in, 3.0);
        let mut f =
            Flight::new(map_with_walls(&[(5.0, -5.0, 5.0)], &[]), &m, Path::new(".")).unwrap();
        let mut out = Vec::new();
        f.run_until(f64::INFINITY, &mut |_, frame| {
            out.push(frame.points.clone());
        })
        .unwrap();
        out
    };
    let (start, firing) = (frames(""), frames("points_in = \"firing\""));
    assert_eq!(start.len(), firing.len());
    let mut moved = 0usize;
    for (a, b) in start.iter().zip(&firing) {
        assert_eq!(a.len(), b.len());
        for (p, q) in a.iter().zip(b) {
            assert_eq!((p.beam, p.range_m), (q.beam, q.range_m));
            let norm = |v: [f32; 3]| (v[0] * v[0] + v[1] * v[1] + v[2] * v[2]).sqrt();
            assert!((norm(q.xyz) - q.range_m).abs() < 1e-4, "{q:?}");
            let d = [0, 1, 2].map(|k| p.xyz[k] - q.xyz[k]);
            moved += usize::from(norm(d) > 0.01);
        }
    }
    assert!(moved > 1000, "the motion must separate them: {moved}");

    let text = "[[vehicle]]\nname = \"uav\"\nstart = [0.0, 0.0, 1.5, 0.0]\n[[vehicle.sensor]]\nname = \"l\"\npreset = \"vlp16\"\n\
                points_in = \"frame_end\"\n";
    let m: Mission = toml::from_str(text).unwrap();
    let err = m.check().unwrap_err();
    assert!(
        err.contains("frame_end") && err.contains("sensor l"),
        "{err}"
    );
}
