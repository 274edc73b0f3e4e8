//! What happened in a flight, as users script on it (`events.jsonl`, one JSON object per line, documented in
//! docs/user-guide.md): take-offs, goals reached, collisions, touchdowns at a landing, and each vehicle's
//! mission end with the reason.

use serde::Serialize;

use crate::mission::GoalKind;
use crate::world::CollisionEvent;

/// How close to a goal the body centre must come for it to count as reached, metres (the controller settles
/// within a few centimetres; a vehicle held off by an obstacle does not get this close).
pub const GOAL_REACHED_M: f64 = 0.25;

/// One event of a flight; serialised with its kind in `"event"`.
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(tag = "event", rename_all = "snake_case")]
pub enum FlightEvent {
    /// The vehicle left the ground (or, starting in the air, began its mission at time 0).
    Takeoff {
        /// When, seconds of flight time.
        time_s: f64,
        /// The vehicle's name in the mission.
        vehicle: String,
        /// Body centre, map frame, metres.
        position: [f64; 3],
        /// False when it started in the air.
        from_ground: bool,
    },
    /// A goal of the mission was reached: a waypoint or goal when the body centre came within
    /// [`GOAL_REACHED_M`] of it after the setpoint arrived, a hover when it ended there, a landing when the
    /// motors stopped on the ground.
    GoalReached {
        /// When, seconds of flight time.
        time_s: f64,
        /// The vehicle's name in the mission.
        vehicle: String,
        /// The goal's number in the vehicle's `[[vehicle.goal]]` list, from 1.
        goal: usize,
        /// Its kind: waypoint, goal, hover or land.
        kind: GoalKind,
        /// Body centre, map frame, metres.
        position: [f64; 3],
        /// Where the goal is (a landing: where its descent started), map frame, metres.
        target: [f64; 3],
        /// A `goal`'s planned path length, metres (the planner's shortest collision-free path).
        #[serde(skip_serializing_if = "Option::is_none")]
        planned_path_m: Option<f64>,
    },
    /// The vehicle touched the map or an obstacle where it should not have.
    Collision(CollisionEvent),
    /// The vehicle's gear met the ground during a `land` goal: the landing, not a collision.
    Touchdown {
        /// When, seconds of flight time.
        time_s: f64,
        /// The vehicle's name in the mission.
        vehicle: String,
        /// The `land` goal's number, from 1.
        goal: usize,
        /// Body centre, map frame, metres.
        position: [f64; 3],
        /// Vertical speed at contact, m/s (negative: descending).
        vertical_speed_m_s: f64,
    },
    /// The flight ended for this vehicle.
    MissionEnd {
        /// When, seconds of flight time.
        time_s: f64,
        /// The vehicle's name in the mission.
        vehicle: String,
        /// Whether every goal was reached.
        goals_done: bool,
        /// Goals reached, and goals in the mission.
        goals_reached: usize,
        /// Goals the vehicle had.
        goals: usize,
        /// Why it ended: `goals done`, `landed`, `stopped at a collision (stop_on_collision)` or `duration
        /// reached`.
        why: String,
    },
}

impl FlightEvent {
    /// The collision, if this event is one.
    pub fn collision(&self) -> Option<&CollisionEvent> {
        match self {
            FlightEvent::Collision(c) => Some(c),
            _ => None,
        }
    }

    /// When it happened, seconds of flight time.
    pub fn time_s(&self) -> f64 {
        match self {
            FlightEvent::Collision(c) => c.time_s,
            FlightEvent::Takeoff { time_s, .. }
            | FlightEvent::GoalReached { time_s, .. }
            | FlightEvent::Touchdown { time_s, .. }
            | FlightEvent::MissionEnd { time_s, .. } => *time_s,
        }
    }

    /// One line for a person: `12.30 s  uav  goal 2 (waypoint) reached`.
    pub fn describe(&self) -> String {
        let (t, what) = match self {
            FlightEvent::Takeoff {
                time_s,
                vehicle,
                from_ground,
                ..
            } => (
                time_s,
                format!(
                    "{vehicle}  {}",
                    if *from_ground {
                        "took off"
                    } else {
                        "started in the air"
                    }
                ),
            ),
            FlightEvent::GoalReached {
                time_s,
                vehicle,
                goal,
                kind,
                ..
            } => (
                time_s,
                format!("{vehicle}  goal {goal} ({}) reached", kind.name()),
            ),
            FlightEvent::Collision(c) => (
                &c.time_s,
                format!("{}  collision with {}", c.vehicle, c.what),
            ),
            FlightEvent::Touchdown {
                time_s,
                vehicle,
                vertical_speed_m_s,
                ..
            } => (
                time_s,
                format!("{vehicle}  touched down at {:.2} m/s", -vertical_speed_m_s),
            ),
            FlightEvent::MissionEnd {
                time_s,
                vehicle,
                goals_reached,
                goals,
                why,
                ..
            } => (
                time_s,
                format!("{vehicle}  mission ended: {why} ({goals_reached} of {goals} goals)"),
            ),
        };
        format!("{t:7.2} s  {what}")
    }
}

/// `events` as JSON lines, one object per event, each line ending in a newline (the `events.jsonl` format).
pub fn jsonl(events: &[FlightEvent]) -> String {
    events
        .iter()
        .map(|e| serde_json::to_string(e).unwrap_or_default() + "\n")
        .collect()
}
