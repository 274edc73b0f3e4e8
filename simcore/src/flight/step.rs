//! One physics step of a flight, and what happens in it: the controllers and the bodies stepped, the obstacles
//! moved, contacts told apart (standing, a touchdown, a collision), goals and take-offs reported, IMU, odometry
//! and /tf sampled, and every LiDAR frame whose period has passed rendered (all vehicles' in one batch) and
//! recorded.

use nalgebra::Isometry3;

use super::{Flight, FlightError, FlightEvent, ODOM_HZ, PHYSICS_HZ, events};
use crate::mission::{self, Leg};
use crate::record::ros2;
use crate::render::{Frame, Occluder};
use crate::simulator::{FrameJob, SensorId};
use crate::trajectory::Tum;
use crate::vehicle::RotorCommand;
use crate::world::{HARD_LANDING_M_S, Spheres};

impl Flight {
    pub(super) fn step_once(
        &mut self,
        on_frame: &mut dyn FnMut(&str, &Frame),
    ) -> Result<(), FlightError> {
        let dt = 1.0 / PHYSICS_HZ;
        let t = self.time();
        for c in &mut self.crafts {
            let s = *c.quad.state();
            let (sp, off) = mission::setpoint_at(&c.legs, t, c.quad.grounded());
            c.motors_off |= off;
            let cmd = if c.motors_off {
                RotorCommand([0.0; 4])
            } else {
                c.controller.update(&s, &sp, dt)
            };
            let p = c.quad.params();
            let support = self
                .world
                .support_height(&s.position, p.radius_m, p.gear_height_m);
            c.vz_before_step = s.velocity.z;
            c.quad.step(&cmd, dt, support);
        }
        self.world.obstacles.step(dt);
        self.step += 1;
        let t = self.time();
        self.check_collisions(t);
        self.track_progress(t);
        if !self.fixed_duration && self.crafts.iter().all(|c| c.motors_off) {
            // Everyone has landed: one more second of data, then stop (a duration the mission gives holds).
            self.end_s = self.end_s.min(t + 1.0);
        }
        for c in &mut self.crafts {
            c.history.push((t, c.quad.state().pose()));
        }
        let frames = self.render_due(t)?;
        for (i, frames) in frames.into_iter().enumerate() {
            self.sample(i, t)?;
            self.emit(i, frames, on_frame)?;
        }
        if self.finished() && !self.ended {
            self.report_ends(t);
        }
        Ok(())
    }

    /// Take-offs, touchdowns at a landing, and goals reached, of every vehicle at time `t`.
    fn track_progress(&mut self, t: f64) {
        for c in &mut self.crafts {
            let s = *c.quad.state();
            if !c.airborne && !c.quad.grounded() {
                c.airborne = true;
                self.events.push(FlightEvent::Takeoff {
                    time_s: t,
                    vehicle: c.name.clone(),
                    position: s.position.into(),
                    from_ground: true,
                });
            }
            let Some(goal) = c.goals.get(c.goals_reached) else {
                continue;
            };
            let landing = goal.kind == mission::GoalKind::Land && t >= goal.due_s;
            if landing && !c.touched_down && c.airborne && (c.quad.grounded() || c.ground_contact) {
                c.touched_down = true;
                self.events.push(FlightEvent::Touchdown {
                    time_s: t,
                    vehicle: c.name.clone(),
                    goal: goal.index,
                    position: s.position.into(),
                    vertical_speed_m_s: c.vz_before_step,
                });
            }
            let reached = if goal.kind == mission::GoalKind::Land {
                c.motors_off
            } else {
                t >= goal.due_s && (s.position - goal.target).norm() <= events::GOAL_REACHED_M
            };
            if reached {
                self.events.push(FlightEvent::GoalReached {
                    time_s: t,
                    vehicle: c.name.clone(),
                    goal: goal.index,
                    kind: goal.kind,
                    position: s.position.into(),
                    target: goal.target.into(),
                    planned_path_m: goal.planned_m,
                });
                c.goals_reached += 1;
            }
        }
    }

    /// Each vehicle's mission end, once the flight is over.
    fn report_ends(&mut self, t: f64) {
        self.ended = true;
        for c in &self.crafts {
            let done = c.goals_reached == c.goals.len();
            let why = if self.stopped {
                "stopped at a collision (stop_on_collision)"
            } else if done && c.motors_off {
                "landed"
            } else if done {
                "goals done"
            } else {
                "duration reached"
            };
            self.events.push(FlightEvent::MissionEnd {
                time_s: t,
                vehicle: c.name.clone(),
                goals_done: done,
                goals_reached: c.goals_reached,
                goals: c.goals.len(),
                why: why.into(),
            });
        }
    }

    /// Contacts with the map and the obstacles. Before take-off, the vehicle stands where the mission set it
    /// down: touching the map there is no collision (the contact counts once it has ended and a new one
    /// begins). During a landing, meeting the ground under the vehicle is the touchdown
    /// ([`Self::track_progress`]), not a collision: its gear within reach of the ground under it,
    /// every map point within its radius below its centre (uneven or sloping ground), met no faster than a hard
    /// landing. A wall, a ledge beside the gear or an obstacle on the way down is still a collision.
    fn check_collisions(&mut self, t: f64) {
        for c in &mut self.crafts {
            let s = c.quad.state();
            let p = c.quad.params();
            let hit = self.world.check_collision(
                t,
                &c.name,
                &s.position,
                &s.velocity,
                p.radius_m,
                p.gear_height_m,
            );
            let landing =
                matches!(mission::leg_at(&c.legs, t), Some(Leg::Land { t0, .. }) if t >= *t0);
            match hit {
                Some(e) if !c.touching => {
                    c.touching = true;
                    // Where the mission set it down, it stands on whatever the map has there.
                    let standing = !c.airborne && e.what == "map";
                    let ground = landing
                        && e.what == "map"
                        && -s.velocity.z <= HARD_LANDING_M_S
                        && self
                            .world
                            .support_height(&s.position, p.radius_m, p.gear_height_m)
                            .is_some()
                        && self.world.only_ground_within(&s.position, p.radius_m);
                    c.ground_contact = ground;
                    if standing || ground {
                        continue;
                    }
                    c.collisions += 1;
                    self.events.push(FlightEvent::Collision(e));
                    if self.stop_on_collision {
                        self.stopped = true;
                    }
                }
                Some(_) => {}
                None => {
                    c.touching = false;
                    c.ground_contact = false;
                }
            }
        }
    }

    /// IMU, odometry and /tf of vehicle `i` at time `t`.
    fn sample(&mut self, i: usize, t: f64) -> Result<(), FlightError> {
        let c = &mut self.crafts[i];
        let s = *c.quad.state();
        let world_from_body = s.pose();
        let base = c.base_frame.as_str();
        if t + 1e-9 >= c.next_imu {
            let f = c.quad.specific_force_body();
            let sample = c.imu.sample(t, &s.body_rates, &f);
            // Sample k is due at k / rate: computed, not accumulated, so rounding never adds a sample.
            c.imu_samples += 1;
            c.next_imu = (c.imu_samples + 1) as f64 * c.imu.period_s();
            if let Some(rec) = self.recorder.as_mut() {
                let ip = c.imu.params();
                let (gv, av) = (
                    (ip.gyro_noise_density.powi(2)) * ip.rate_hz,
                    (ip.accel_noise_density.powi(2)) * ip.rate_hz,
                );
                let msg = ros2::imu(
                    t,
                    base,
                    &sample.angular_velocity,
                    &sample.linear_acceleration,
                    gv,
                    av,
                );
                rec.write(&format!("/{}/imu", c.name), ros2::IMU, t, msg)?;
            }
        }
        if self.step.is_multiple_of((PHYSICS_HZ / ODOM_HZ) as u64) {
            c.track.push((t, world_from_body, s.velocity));
            if let Some(rec) = self.recorder.as_mut() {
                let v_body = s.world_from_body.inverse() * s.velocity;
                let odom = ros2::odometry(t, "map", base, &world_from_body, &v_body, &s.body_rates);
                rec.write(&format!("/{}/odom", c.name), ros2::ODOMETRY, t, odom)?;
                let tf = ros2::tf_message(t, &[("map", base, world_from_body)]);
                rec.write("/tf", ros2::TF_MESSAGE, t, tf)?;
            }
        }
        Ok(())
    }

    /// Renders every frame whose period has passed at `t`, of all vehicles side by side: per vehicle, its
    /// (sensor, frame) pairs. A sensor's frame sees the map, the obstacles and the other vehicles as they are
    /// now, and the poses its body took during the frame.
    fn render_due(&mut self, t: f64) -> Result<Vec<Vec<(usize, Frame)>>, FlightError> {
        struct Due {
            craft: usize,
            sensor: usize,
            id: SensorId,
            start: f64,
            index: u64,
            trajectory: Tum,
            others: usize,
        }
        let mut due = Vec::new();
        let mut others = Vec::new();
        for (i, c) in self.crafts.iter().enumerate() {
            for (k, s) in c.sensors.iter().enumerate() {
                if t + 1e-9 < s.next_start + s.period {
                    continue;
                }
                let (start, period) = (s.next_start, s.period);
                let samples: Vec<(f64, Isometry3<f64>)> = c
                    .history
                    .iter()
                    .filter(|(ht, _)| *ht >= start - 2e-3 && *ht <= start + period + 2e-3)
                    .copied()
                    .collect();
                let Ok(trajectory) = Tum::from_samples(samples) else {
                    continue;
                };
                if others.last().is_none_or(|&(j, _)| j != i) {
                    others.push((i, self.other_vehicles(i)));
                }
                due.push(Due {
                    craft: i,
                    sensor: k,
                    id: s.id,
                    start,
                    index: s.frame_index,
                    trajectory,
                    others: others.len() - 1,
                });
            }
        }
        let mut out: Vec<Vec<(usize, Frame)>> = self.crafts.iter().map(|_| Vec::new()).collect();
        if due.is_empty() {
            return Ok(out);
        }
        let occluders: Vec<[&dyn Occluder; 2]> = others
            .iter()
            .map(|(_, o)| [&self.world.obstacles as &dyn Occluder, o])
            .collect();
        let jobs: Vec<FrameJob<'_>> = due
            .iter()
            .map(|d| FrameJob {
                sensor: d.id,
                world_from_body: &d.trajectory,
                frame_start_s: d.start,
                frame_index: d.index,
                occluders: &occluders[d.others],
            })
            .collect();
        let started = std::time::Instant::now();
        let frames = self.sim.render_many(&jobs)?;
        self.render_s += started.elapsed().as_secs_f64();
        for (d, frame) in due.iter().zip(frames) {
            out[d.craft].push((d.sensor, frame));
        }
        Ok(out)
    }

    /// The vehicles other than `i`, as spheres (occluders of `i`'s sensors).
    fn other_vehicles(&self, i: usize) -> Spheres {
        self.crafts
            .iter()
            .enumerate()
            .filter(|(j, _)| *j != i)
            .map(|(_, c)| (c.quad.state().position.into(), c.quad.params().radius_m))
            .collect()
    }

    /// Hands vehicle `i`'s rendered frames to `on_frame` and the recording, moves its sensors on to their next
    /// frame, and forgets the poses no frame needs any more.
    fn emit(
        &mut self,
        i: usize,
        frames: Vec<(usize, Frame)>,
        on_frame: &mut dyn FnMut(&str, &Frame),
    ) -> Result<(), FlightError> {
        let c = &mut self.crafts[i];
        for (k, frame) in frames {
            c.frames += 1;
            c.points += frame.points.len() as u64;
            on_frame(&c.name, &frame);
            let s = &mut c.sensors[k];
            if let Some(rec) = self.recorder.as_mut() {
                rec.write_cloud(
                    (&s.topic, s.next_start + s.period),
                    (s.next_start, &s.frame_id),
                    frame.points,
                    s.point_fields,
                )?;
            }
            s.frame_index += 1;
            s.next_start += s.period;
        }
        let keep_from = c
            .sensors
            .iter()
            .map(|s| s.next_start)
            .fold(f64::INFINITY, f64::min)
            - 0.01;
        let cut = c.history.partition_point(|(ht, _)| *ht < keep_from);
        c.history.drain(..cut);
        Ok(())
    }
}
