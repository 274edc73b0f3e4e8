//! Flight control: the [`Controller`] trait (users bring their own) and [`Cascaded`], the built-in cascade
//! position -> acceleration -> attitude -> body rate -> torque, followed by a mixer to rotor speeds with
//! saturation.
//!
//! Gains come from a design: each loop is a second-order system with natural frequency `omega_n` and damping
//! `zeta` (MARSIM's choice: position T = 3 s, zeta 0.9; altitude T = 2 s, zeta 0.8; attitude T = 0.5 s, zeta
//! 1.0, with omega_n = 2 pi / T). With the attitude loop much faster than the position loop, a position step
//! then follows the classical second-order response: overshoot `exp(-pi zeta / sqrt(1 - zeta^2))` and a 2%
//! settling time of about `4 / (zeta omega_n)`; [`Gains::overshoot`] and [`Gains::settling_time_s`] give them
//! and the tests check the closed loop against them.

use nalgebra::{Matrix3, Matrix4, Rotation3, UnitQuaternion, Vector3, Vector4};

use crate::vehicle::{GRAVITY, QuadParams, QuadState, RotorCommand};

/// Where the vehicle should be: position, velocity and acceleration feed-forward (world frame), heading.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Setpoint {
    /// Position of the body centre, world frame, metres.
    pub position: Vector3<f64>,
    /// Velocity feed-forward, world frame, m/s.
    pub velocity: Vector3<f64>,
    /// Acceleration feed-forward, world frame, m/s^2.
    pub acceleration: Vector3<f64>,
    /// Heading, radians.
    pub yaw: f64,
}

impl Setpoint {
    /// Hold still at `position` facing `yaw`.
    pub fn hold(position: Vector3<f64>, yaw: f64) -> Setpoint {
        Setpoint {
            position,
            velocity: Vector3::zeros(),
            acceleration: Vector3::zeros(),
            yaw,
        }
    }
}

/// Turns the state and a setpoint into rotor commands; called at the physics rate.
pub trait Controller: Send {
    /// The rotor command for `state` toward `setpoint`; `dt` is the physics step, seconds (1 /
    /// [`crate::flight::PHYSICS_HZ`] in a flight).
    fn update(&mut self, state: &QuadState, setpoint: &Setpoint, dt: f64) -> RotorCommand;
}

/// A second-order loop design.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Gains {
    /// Natural frequency, rad/s.
    pub omega_n: f64,
    /// Damping ratio (1: critically damped).
    pub zeta: f64,
}

impl Gains {
    /// The design with natural period `period_s` (omega_n = 2 pi / T) and damping `zeta`.
    pub fn from_period(period_s: f64, zeta: f64) -> Gains {
        Gains {
            omega_n: std::f64::consts::TAU / period_s,
            zeta,
        }
    }

    /// Proportional gain omega_n^2.
    pub fn kp(&self) -> f64 {
        self.omega_n * self.omega_n
    }

    /// Derivative gain 2 zeta omega_n.
    pub fn kd(&self) -> f64 {
        2.0 * self.zeta * self.omega_n
    }

    /// Peak overshoot of a step, as a fraction (0 for zeta >= 1).
    pub fn overshoot(&self) -> f64 {
        if self.zeta >= 1.0 {
            0.0
        } else {
            (-std::f64::consts::PI * self.zeta / (1.0 - self.zeta * self.zeta).sqrt()).exp()
        }
    }

    /// Time to stay within 2% of a step, seconds (the usual 4 / (zeta omega_n) estimate).
    pub fn settling_time_s(&self) -> f64 {
        4.0 / (self.zeta * self.omega_n)
    }
}

/// Limits and designs of [`Cascaded`].
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct CascadedParams {
    /// Horizontal position loop.
    pub position: Gains,
    /// Vertical position loop.
    pub altitude: Gains,
    /// Attitude loop (roll and pitch).
    pub attitude: Gains,
    /// Heading loop: slower than roll and pitch, whose torque the rotors' drag can give only a little of.
    pub yaw: Gains,
    /// Fastest turn of the heading reference, rad/s: a new heading is approached at this rate.
    pub max_yaw_rate_rad_s: f64,
    /// Largest tilt of the thrust from vertical, radians.
    pub max_tilt_rad: f64,
    /// Largest horizontal acceleration asked of the attitude loop, m/s^2.
    pub max_accel_m_s2: f64,
}

impl Default for CascadedParams {
    fn default() -> Self {
        CascadedParams {
            position: Gains::from_period(3.0, 0.9),
            altitude: Gains::from_period(2.0, 0.8),
            attitude: Gains::from_period(0.5, 1.0),
            yaw: Gains::from_period(1.5, 1.0),
            max_yaw_rate_rad_s: 1.0,
            max_tilt_rad: 30f64.to_radians(),
            max_accel_m_s2: 6.0,
        }
    }
}

/// The built-in cascaded controller (Lee et al. geometric attitude control on SO(3)).
#[derive(Clone, Debug)]
pub struct Cascaded {
    params: CascadedParams,
    vehicle: QuadParams,
    mixer: Mixer,
    /// The heading reference, rate-limited toward the setpoint's.
    yaw_ref: Option<f64>,
}

impl Cascaded {
    /// A controller for `vehicle` with the limits and designs of `params` (MARSIM's: [`CascadedParams::default`]).
    pub fn new(vehicle: &QuadParams, params: CascadedParams) -> Cascaded {
        Cascaded {
            params,
            vehicle: vehicle.clone(),
            mixer: Mixer::new(vehicle),
            yaw_ref: None,
        }
    }

    /// Its limits and loop designs.
    pub fn params(&self) -> &CascadedParams {
        &self.params
    }

    /// Commanded acceleration (world) from the position and velocity errors, limited in tilt.
    fn acceleration(&self, s: &QuadState, sp: &Setpoint) -> Vector3<f64> {
        let (pos, alt) = (&self.params.position, &self.params.altitude);
        let ep = sp.position - s.position;
        let ev = sp.velocity - s.velocity;
        let mut a = sp.acceleration
            + Vector3::new(
                pos.kp() * ep.x + pos.kd() * ev.x,
                pos.kp() * ep.y + pos.kd() * ev.y,
                alt.kp() * ep.z + alt.kd() * ev.z,
            );
        // Drag feed-forward: the thrust also pays for the drag at the current velocity.
        let drag = Vector3::from(self.vehicle.drag_n_per_m_s).component_mul(&s.velocity);
        a += drag / self.vehicle.mass_kg;
        let h = a.xy().norm();
        let max_h = self.params.max_accel_m_s2;
        if h > max_h {
            a.x *= max_h / h;
            a.y *= max_h / h;
        }
        // Never ask to fall faster than gravity; keep the tilt within its limit.
        a.z = a.z.max(-0.8 * GRAVITY);
        let up = a.z + GRAVITY;
        let max_h_tilt = up * self.params.max_tilt_rad.tan();
        let h = a.xy().norm();
        if h > max_h_tilt {
            a.x *= max_h_tilt / h;
            a.y *= max_h_tilt / h;
        }
        a
    }
}

impl Controller for Cascaded {
    fn update(&mut self, s: &QuadState, sp: &Setpoint, dt: f64) -> RotorCommand {
        let m = self.vehicle.mass_kg;
        let a = self.acceleration(s, sp);
        let f_des = m * (a + Vector3::new(0.0, 0.0, GRAVITY));
        let r = s.world_from_body.to_rotation_matrix();
        // Collective thrust: the desired force projected on the current body z.
        let thrust = f_des.dot(&(r * Vector3::z())).max(0.0);
        let yaw = self.yaw_ref.unwrap_or_else(|| s.yaw());
        let step = self.params.max_yaw_rate_rad_s * dt;
        let turn = (sp.yaw - yaw + std::f64::consts::PI).rem_euclid(std::f64::consts::TAU)
            - std::f64::consts::PI;
        let yaw = yaw + turn.clamp(-step, step);
        self.yaw_ref = Some(yaw);
        let r_des = desired_attitude(&f_des, yaw);
        // Attitude error (Lee et al.): e_R = vee(R_d^T R - R^T R_d) / 2; the attitude P loop gives body rates,
        // the rate loop torques; together a PD with the attitude design's omega_n and zeta.
        let rm = r.matrix();
        let rd = r_des.matrix();
        let e = rd.transpose() * rm - rm.transpose() * rd;
        let e_r = 0.5 * Vector3::new(e[(2, 1)], e[(0, 2)], e[(1, 0)]);
        let (att, yaw) = (&self.params.attitude, &self.params.yaw);
        let kp = Vector3::new(att.kp(), att.kp(), yaw.kp());
        let kd = Vector3::new(att.kd(), att.kd(), yaw.kd());
        let rate_des = -kp.component_div(&kd).component_mul(&e_r);
        let j = Matrix3::from_diagonal(&Vector3::from(self.vehicle.inertia_kg_m2));
        let w = s.body_rates;
        let torque = j * kd.component_mul(&(rate_des - w)) + w.cross(&(j * w));
        self.mixer.mix(thrust, &torque)
    }
}

/// The attitude whose body z points along `f` with heading `yaw`.
fn desired_attitude(f: &Vector3<f64>, yaw: f64) -> Rotation3<f64> {
    let z = if f.norm() > 1e-9 {
        f.normalize()
    } else {
        Vector3::z()
    };
    let xc = Vector3::new(yaw.cos(), yaw.sin(), 0.0);
    let y = z.cross(&xc);
    let y = if y.norm() > 1e-9 {
        y.normalize()
    } else {
        Vector3::y()
    };
    let x = y.cross(&z);
    Rotation3::from_matrix_unchecked(Matrix3::from_columns(&[x, y, z]))
}

/// Allocation of collective thrust and body torques to rotor speeds, with saturation: when the rotors cannot
/// give everything, the yaw torque is scaled down first (as far as to zero), then roll and pitch; the collective
/// thrust is kept.
#[derive(Clone, Debug)]
pub struct Mixer {
    /// Maps per-rotor thrusts to (thrust, torque x, torque y, torque z).
    inverse: Matrix4<f64>,
    kf: f64,
    f_min: f64,
    f_max: f64,
}

impl Mixer {
    /// The allocation for the rotor layout, spins and motor limits (`rpm_min`, `rpm_max`) of `p`.
    pub fn new(p: &QuadParams) -> Mixer {
        let pos = p.rotor_positions();
        let spin = [1.0, -1.0, 1.0, -1.0];
        let ratio = p.kt_nm_per_rpm2 / p.kf_n_per_rpm2;
        let mut a = Matrix4::zeros();
        for i in 0..4 {
            a[(0, i)] = 1.0;
            a[(1, i)] = pos[i][1];
            a[(2, i)] = -pos[i][0];
            a[(3, i)] = spin[i] * ratio;
        }
        Mixer {
            inverse: a.try_inverse().unwrap_or_else(Matrix4::zeros),
            kf: p.kf_n_per_rpm2,
            f_min: p.kf_n_per_rpm2 * p.rpm_min * p.rpm_min,
            f_max: p.kf_n_per_rpm2 * p.rpm_max * p.rpm_max,
        }
    }

    /// Rotor speeds for collective thrust `thrust` (N) and body torques (N m).
    pub fn mix(&self, thrust: f64, torque: &Vector3<f64>) -> RotorCommand {
        let within = |f: &Vector4<f64>| f.iter().all(|v| *v >= self.f_min && *v <= self.f_max);
        let solve = |t: &Vector3<f64>| self.inverse * Vector4::new(thrust, t.x, t.y, t.z);
        // Largest scale in [0, 1] of `part` (added to `base`) that the rotors can give.
        let fit = |base: Vector3<f64>, part: Vector3<f64>| {
            let (mut lo, mut hi) = (0.0, 1.0);
            for _ in 0..30 {
                let mid = 0.5 * (lo + hi);
                if within(&solve(&(base + part * mid))) {
                    lo = mid;
                } else {
                    hi = mid;
                }
            }
            base + part * lo
        };
        let mut f = solve(torque);
        if !within(&f) {
            let roll_pitch = Vector3::new(torque.x, torque.y, 0.0);
            f = if within(&solve(&roll_pitch)) {
                solve(&fit(roll_pitch, Vector3::new(0.0, 0.0, torque.z)))
            } else {
                solve(&fit(Vector3::zeros(), roll_pitch))
            };
        }
        RotorCommand(std::array::from_fn(|i| {
            (f[i].clamp(self.f_min, self.f_max) / self.kf).sqrt()
        }))
    }
}

/// The heading of an attitude, radians.
pub fn yaw_of(q: &UnitQuaternion<f64>) -> f64 {
    q.euler_angles().2
}
