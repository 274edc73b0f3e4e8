//! Missions as a user scripts on them: the event log (take-off, goals reached, touchdown, collisions, mission
//! end), the landing rule (touching down on uneven ground is a landing, meeting a ledge on the way down is a
//! collision), and goal flights that keep moving through a cluttered place.

use crate::common::{fly, map_of, mission};
use aerie_simcore::flight::{Flight, FlightEvent};
use aerie_simcore::mission::{GoalKind, Mission};
use aerie_simcore::simulator::Map;
use nalgebra::Vector3;

/// A map of a 24 x 24 m ground whose height is `ground(x, y)` (points every 0.1 m), and more points.
fn map(ground: impl Fn(f64, f64) -> f64, more: Vec<[f64; 3]>) -> Map {
    let mut pts = Vec::new();
    for i in 0..240 {
        for j in 0..240 {
            let (x, y) = (-12.0 + 0.1 * i as f64, -12.0 + 0.1 * j as f64);
            pts.push([x, y, ground(x, y)]);
        }
    }
    pts.extend(more);
    map_of(pts.iter().map(|p| p.map(|v| v as f32)).collect())
}

fn flat() -> Map {
    map(|_, _| 0.0, Vec::new())
}

fn kinds(f: &Flight) -> Vec<String> {
    f.events()
        .iter()
        .map(|e| {
            serde_json::to_value(e).unwrap()["event"]
                .as_str()
                .unwrap()
                .to_string()
        })
        .collect()
}

/// Every kind of event, in order, with the goals' numbers and kinds, each reached where it is, and the events'
/// JSON lines as users read them.
#[test]
fn a_mission_logs_take_off_each_goal_touchdown_and_its_end() {
    let m = mission(
        r#"
        [[vehicle]]
        name = "uav"
        start = [0.0, 0.0, 0.13, 0.0]
        [[vehicle.goal]]
        kind = "waypoint"
        position = [0.0, 0.0, 1.5]
        [[vehicle.goal]]
        kind = "goal"
        position = [4.0, 3.0, 1.5]
        [[vehicle.goal]]
        kind = "hover"
        duration_s = 1.0
        [[vehicle.goal]]
        kind = "land"
        "#,
    );
    let f = fly(flat(), &m);
    assert_eq!(
        kinds(&f),
        [
            "takeoff",
            "goal_reached",
            "goal_reached",
            "goal_reached",
            "touchdown",
            "goal_reached",
            "mission_end"
        ],
        "{:#?}",
        f.events()
    );
    let mut last_t = 0.0;
    let mut goals = Vec::new();
    for e in f.events() {
        assert!(e.time_s() >= last_t, "out of order: {e:?}");
        last_t = e.time_s();
        match e {
            FlightEvent::Takeoff { from_ground, .. } => assert!(from_ground),
            FlightEvent::GoalReached {
                goal,
                kind,
                position,
                target,
                ..
            } => {
                goals.push((*goal, *kind));
                let off = (Vector3::from(*position) - Vector3::from(*target)).norm();
                let near = if *kind == GoalKind::Land { 1.5 } else { 0.25 };
                assert!(off <= near, "{e:?}");
            }
            FlightEvent::Touchdown {
                goal,
                vertical_speed_m_s,
                ..
            } => {
                assert_eq!(*goal, 4);
                assert!(
                    *vertical_speed_m_s < 0.0 && *vertical_speed_m_s > -1.0,
                    "{e:?}"
                );
            }
            FlightEvent::MissionEnd {
                goals_done,
                goals_reached,
                why,
                ..
            } => {
                assert!(
                    *goals_done && *goals_reached == 4 && why == "landed",
                    "{e:?}"
                );
            }
            FlightEvent::Collision(c) => panic!("{c:?}"),
        }
    }
    assert_eq!(
        goals,
        [
            (1, GoalKind::Waypoint),
            (2, GoalKind::Goal),
            (3, GoalKind::Hover),
            (4, GoalKind::Land)
        ]
    );
    let s = &f.summary()[0];
    assert!(
        s.goals_done && s.goals_reached == 4 && s.goals == 4,
        "{s:?}"
    );
    let lines = aerie_simcore::flight::events::jsonl(f.events());
    assert_eq!(lines.lines().count(), 7);
    let first: serde_json::Value = serde_json::from_str(lines.lines().nth(1).unwrap()).unwrap();
    assert_eq!(first["event"], "goal_reached");
    assert_eq!(first["goal"], 1);
    assert_eq!(first["kind"], "waypoint");
    assert_eq!(first["vehicle"], "uav");
}

/// A flight whose duration ends before its goals says so, and a vehicle starting in the air reports its start
/// as a take-off at time 0.
#[test]
fn a_mission_cut_short_ends_with_its_goals_not_done() {
    let m = mission(
        r#"
        duration_s = 3.0
        [[vehicle]]
        name = "uav"
        start = [0.0, 0.0, 1.5, 0.0]
        [[vehicle.goal]]
        kind = "waypoint"
        position = [8.0, 0.0, 1.5]
        "#,
    );
    let f = fly(flat(), &m);
    assert_eq!(kinds(&f), ["takeoff", "mission_end"], "{:#?}", f.events());
    assert!(matches!(
        &f.events()[0],
        FlightEvent::Takeoff { time_s, from_ground: false, .. } if *time_s == 0.0
    ));
    assert!(
        matches!(
            &f.events()[1],
            FlightEvent::MissionEnd { goals_done: false, goals_reached: 0, goals: 1, why, .. }
                if why == "duration reached"
        ),
        "{:?}",
        f.events()[1]
    );
}

fn landing(at: [f64; 2]) -> Mission {
    mission(&format!(
        r#"
        [[vehicle]]
        name = "uav"
        start = [{x}, {y}, 2.0, 0.0]
        [[vehicle.goal]]
        kind = "land"
        "#,
        x = at[0],
        y = at[1]
    ))
}

/// Bumpy ground, sloping up to about 30 degrees: the vehicle settles on it, which is a touchdown and the goal
/// reached, not a collision.
#[test]
fn touching_down_on_uneven_ground_is_a_landing() {
    let bumpy = |x: f64, y: f64| 0.08 * (4.0 * x).sin() + 0.08 * (3.5 * y).cos();
    for at in [[0.0, 0.0], [0.3, 0.5], [1.1, -0.7], [-0.6, 0.2]] {
        let f = fly(map(bumpy, Vec::new()), &landing(at));
        let s = &f.summary()[0];
        assert_eq!(s.collisions, 0, "landing at {at:?}: {:#?}", f.events());
        assert_eq!(
            kinds(&f),
            ["takeoff", "touchdown", "goal_reached", "mission_end"],
            "landing at {at:?}"
        );
        assert!(s.goals_done, "{s:?}");
    }
}

/// A ledge (the top edge of a low box) within the vehicle's radius but beyond its gear: meeting it on the way
/// down is a collision, however gently.
#[test]
fn meeting_a_ledge_on_the_way_down_is_a_collision() {
    // A box 1 m tall whose near face is 0.25 m from the descent's axis (the vehicle's radius is 0.35 m).
    let mut ledge = Vec::new();
    for i in 0..=20 {
        for j in 0..=10 {
            let (x, y, z) = (0.25 + 0.05 * j as f64, -0.5 + 0.05 * i as f64, 1.0);
            ledge.push([x, y, z]);
            ledge.push([0.25, y, 0.1 * j as f64]);
        }
    }
    let f = fly(map(|_, _| 0.0, ledge), &landing([0.0, 0.0]));
    let collisions: Vec<_> = f.collisions().collect();
    assert_eq!(collisions.len(), 1, "{:#?}", f.events());
    assert!(collisions[0].point_hit[0] >= 0.24, "{:?}", collisions[0]);
    // The touchdown is on the floor, not where the ledge was met.
    for e in f.events() {
        if let FlightEvent::Touchdown { position, .. } = e {
            assert!(position[2] < 0.3, "{e:?}");
        }
    }
}

/// Pillars 0.3 m thick on a 1.6 m grid, the goal on the far side: the vehicle weaves through without stopping
/// (under 5% of the time below 0.1 m/s between take-off and the goal), without touching a pillar, along a
/// path at most 1.3 times the planner's.
#[test]
fn a_goal_through_a_forest_of_pillars_is_flown_without_stopping() {
    let mut pillars = Vec::new();
    for gx in -3..=3 {
        for gy in -3i32..=3 {
            // Every other row shifted, as trees stand.
            let (cx, cy) = (
                1.6 * gx as f64 + 0.8 * (gy.rem_euclid(2)) as f64,
                1.6 * gy as f64,
            );
            for k in 0..12 {
                let a = k as f64 * std::f64::consts::TAU / 12.0;
                for h in 0..30 {
                    pillars.push([cx + 0.15 * a.cos(), cy + 0.15 * a.sin(), 0.1 * h as f64]);
                }
            }
        }
    }
    let m = mission(
        r#"
        [[vehicle]]
        name = "uav"
        start = [-6.5, -6.5, 1.5, 0.0]
        max_speed_m_s = 2.0
        [[vehicle.goal]]
        kind = "goal"
        position = [6.5, 5.5, 1.5]
        "#,
    );
    let f = fly(map(|_, _| 0.0, pillars), &m);
    assert_eq!(f.collisions().count(), 0, "{:#?}", f.events());
    let reached = f
        .events()
        .iter()
        .find_map(|e| match e {
            FlightEvent::GoalReached { time_s, .. } => Some(*time_s),
            _ => None,
        })
        .expect("the goal is reached");
    let tracks = f.tracks();
    let track: Vec<_> = tracks[0]
        .1
        .iter()
        .filter(|(t, _, _)| *t <= reached)
        .collect();
    let slow = track.iter().filter(|(_, _, v)| v.norm() < 0.1).count() as f64 / track.len() as f64;
    eprintln!(
        "forest: {:.1}% of {reached:.1} s below 0.1 m/s",
        100.0 * slow
    );
    assert!(
        slow <= 0.05,
        "{:.1}% of the time below 0.1 m/s",
        100.0 * slow
    );
    let flown: f64 = track
        .windows(2)
        .map(|w| (w[1].1.translation.vector - w[0].1.translation.vector).norm())
        .sum();
    let straight = (Vector3::new(6.5, 5.5, 1.5) - Vector3::new(-6.5, -6.5, 1.5)).norm();
    eprintln!("forest: flew {flown:.2} m for {straight:.2} m as the crow flies");
    assert!(
        flown <= 1.3 * straight,
        "flew {flown:.2} m for {straight:.2} m as the crow flies"
    );
}

/// A `goal` straight from the ground: the planned path first climbs out of the ground's clearance, and the
/// vehicle takes off along it and reaches the goal without touching anything.
#[test]
fn a_goal_from_the_ground_takes_off_along_the_path() {
    let m = mission(
        r#"
        [[vehicle]]
        name = "uav"
        start = [0.0, 0.0, 0.13, 0.0]
        [[vehicle.goal]]
        kind = "goal"
        position = [5.0, -3.0, 1.5]
        "#,
    );
    let f = fly(flat(), &m);
    assert_eq!(
        kinds(&f),
        ["takeoff", "goal_reached", "mission_end"],
        "{:#?}",
        f.events()
    );
    assert!(f.summary()[0].goals_done);
}
