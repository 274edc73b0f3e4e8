//! The quadrotor: a rigid body driven by four rotors (Lee et al. 2010; docs/algorithms.md, section 23).
//!
//! Frames: world x y z with z up (the map frame); body x forward, y left, z up. The state's attitude is
//! `world_from_body`. Rotor `i` sits at 45 + 90 i degrees (front-left, rear-left, rear-right, front-right, X
//! layout) and pushes along body z with `kF w^2`; it turns the body about z with `s_i kT w^2` (spins alternate).
//! Each motor follows its commanded speed with a first-order lag. The body feels gravity and linear drag.
//! [`Quadrotor::step`] integrates all of it with classical RK4; the flight loop steps at 1 kHz.

mod imu;
mod presets;

use nalgebra::{Matrix3, Quaternion, UnitQuaternion, Vector3};
use serde::{Deserialize, Serialize};

pub use imu::{Imu, ImuParams, ImuSample};

/// Standard gravity, m/s^2.
pub const GRAVITY: f64 = 9.80665;

/// The rate a quadrotor is stepped at (one [`Quadrotor::step`] of RK4 and one controller update each), Hz: the
/// flight loop's physics rate (`flight::PHYSICS_HZ` is this constant). Defined with the vehicle, whose
/// parameters are checked against it (an IMU sampled faster than its body is stepped would repeat samples).
pub const PHYSICS_HZ: f64 = 1000.0;

/// The largest vehicle radius a description may give, metres: beyond the largest multirotors (a 50 m radius is
/// a typo, and would set the vehicle on top of whatever lies within it).
pub const MAX_RADIUS_M: f64 = 5.0;

/// Spin sign of each rotor: +1 turns the body counter-clockwise (seen from above) as it spins.
const SPIN: [f64; 4] = [1.0, -1.0, 1.0, -1.0];

/// Errors of a vehicle description.
#[derive(Debug, thiserror::Error, PartialEq)]
pub enum VehicleError {
    /// A value is out of range; names the field.
    #[error("vehicle {field}: {message}")]
    Invalid {
        /// The field, as written in the TOML (`rpm_min`, `imu.rate_hz`).
        field: String,
        /// What is wrong with its value.
        message: String,
    },
    /// The TOML does not parse; the message names the line and the field where they could be found.
    #[error("{0}")]
    Toml(String),
    /// No such preset.
    #[error("unknown vehicle preset {0:?}; the presets are {1}")]
    UnknownPreset(String, String),
}

fn invalid(field: &str, message: impl Into<String>) -> VehicleError {
    VehicleError::Invalid {
        field: field.into(),
        message: message.into(),
    }
}

/// What a quadrotor is: mass, geometry, rotors, motors, drag, IMU. Loaded from TOML (`presets/vehicles/`).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct QuadParams {
    /// Name of the vehicle type (`marsim_quad`); a preset's matches its file name.
    pub name: String,
    /// One line for people: what the vehicle is. By default, empty.
    #[serde(default)]
    pub description: String,
    /// All-up mass, kg (> 0).
    pub mass_kg: f64,
    /// Centre to rotor axis, metres.
    pub arm_m: f64,
    /// Principal moments of inertia (body x, y, z), kg m^2.
    pub inertia_kg_m2: [f64; 3],
    /// Thrust coefficient: a rotor at w rpm pushes with kF w^2 newtons.
    pub kf_n_per_rpm2: f64,
    /// Drag-torque coefficient: kT w^2 newton-metres.
    pub kt_nm_per_rpm2: f64,
    /// Lowest rotor speed, rpm (at least 0, below `rpm_max`); commands are clamped to `rpm_min..=rpm_max`.
    pub rpm_min: f64,
    /// Highest rotor speed, rpm; the four rotors at full speed must lift the vehicle.
    pub rpm_max: f64,
    /// Time constant of the first-order motor lag, seconds (0: instant).
    pub motor_time_constant_s: f64,
    /// Linear drag, N per m/s, along world x y z.
    pub drag_n_per_m_s: [f64; 3],
    /// Radius of the sphere used for collisions, metres.
    pub radius_m: f64,
    /// How far the landing gear reaches below the body centre, metres.
    pub gear_height_m: f64,
    /// The IMU (`[imu]`).
    pub imu: ImuParams,
}

impl QuadParams {
    /// A shipped preset (`marsim_quad`, the default, or `quad250`).
    pub fn preset(name: &str) -> Result<QuadParams, VehicleError> {
        let text = presets::text(name)
            .ok_or_else(|| VehicleError::UnknownPreset(name.into(), presets::NAMES.join(", ")))?;
        QuadParams::from_toml(text)
    }

    /// Names of the shipped presets.
    pub fn preset_names() -> &'static [&'static str] {
        presets::NAMES
    }

    /// Parses and validates a description.
    pub fn from_toml(text: &str) -> Result<QuadParams, VehicleError> {
        let p: QuadParams = toml::from_str(text).map_err(|e| {
            VehicleError::Toml(crate::toml_place::place_of(text, &e).describe("vehicle toml"))
        })?;
        p.validate()?;
        Ok(p)
    }

    /// Checks every value; the error names the field.
    pub fn validate(&self) -> Result<(), VehicleError> {
        let positive = |field: &str, v: f64| {
            if v.is_finite() && v > 0.0 {
                Ok(())
            } else {
                Err(invalid(
                    field,
                    format!("must be a positive number, got {v}"),
                ))
            }
        };
        positive("mass_kg", self.mass_kg)?;
        positive("arm_m", self.arm_m)?;
        for v in self.inertia_kg_m2 {
            positive("inertia_kg_m2", v)?;
        }
        positive("kf_n_per_rpm2", self.kf_n_per_rpm2)?;
        positive("kt_nm_per_rpm2", self.kt_nm_per_rpm2)?;
        positive("rpm_max", self.rpm_max)?;
        positive("radius_m", self.radius_m)?;
        if self.radius_m > MAX_RADIUS_M {
            return Err(invalid(
                "radius_m",
                format!(
                    "must be at most {MAX_RADIUS_M} m (the vehicle's half-width with its rotors), got {}",
                    self.radius_m
                ),
            ));
        }
        if !(self.rpm_min >= 0.0 && self.rpm_min < self.rpm_max) {
            return Err(invalid("rpm_min", "must be at least 0 and below rpm_max"));
        }
        if !(self.motor_time_constant_s >= 0.0 && self.motor_time_constant_s < 1.0) {
            return Err(invalid(
                "motor_time_constant_s",
                "must be between 0 and 1 s",
            ));
        }
        if !self
            .drag_n_per_m_s
            .iter()
            .all(|d| *d >= 0.0 && d.is_finite())
        {
            return Err(invalid("drag_n_per_m_s", "must be finite and at least 0"));
        }
        if !(self.gear_height_m >= 0.0 && self.gear_height_m <= self.radius_m) {
            return Err(invalid(
                "gear_height_m",
                format!(
                    "must be from 0 to radius_m ({} m), got {}",
                    self.radius_m, self.gear_height_m
                ),
            ));
        }
        if 4.0 * self.max_thrust_per_rotor() <= self.mass_kg * GRAVITY {
            return Err(invalid(
                "rpm_max",
                "the rotors at full speed cannot lift the vehicle (4 kF rpm_max^2 <= m g)",
            ));
        }
        self.imu.validate()
    }

    /// Thrust of one rotor at full speed, newtons.
    pub fn max_thrust_per_rotor(&self) -> f64 {
        self.kf_n_per_rpm2 * self.rpm_max * self.rpm_max
    }

    /// Rotor speed at which the four rotors hold the vehicle, rpm.
    pub fn hover_rpm(&self) -> f64 {
        (self.mass_kg * GRAVITY / (4.0 * self.kf_n_per_rpm2)).sqrt()
    }

    /// Rotor positions in the body frame (x, y), metres.
    pub fn rotor_positions(&self) -> [[f64; 2]; 4] {
        let a = self.arm_m * std::f64::consts::FRAC_1_SQRT_2;
        [[a, a], [-a, a], [-a, -a], [a, -a]]
    }

    fn inertia(&self) -> Matrix3<f64> {
        Matrix3::from_diagonal(&Vector3::from(self.inertia_kg_m2))
    }
}

/// Commanded rotor speeds, rpm (clamped to the motor limits by the vehicle).
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct RotorCommand(pub [f64; 4]);

/// The state of a quadrotor.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct QuadState {
    /// Body centre in the world, metres.
    pub position: Vector3<f64>,
    /// World frame, m/s.
    pub velocity: Vector3<f64>,
    /// Attitude: rotates body-frame vectors into the world frame.
    pub world_from_body: UnitQuaternion<f64>,
    /// Body rates (body frame), rad/s.
    pub body_rates: Vector3<f64>,
    /// Actual rotor speeds, rpm.
    pub rotor_rpm: [f64; 4],
}

impl QuadState {
    /// At rest at `position` with heading `yaw` (radians), rotors stopped.
    pub fn at_rest(position: Vector3<f64>, yaw: f64) -> QuadState {
        QuadState {
            position,
            velocity: Vector3::zeros(),
            world_from_body: UnitQuaternion::from_euler_angles(0.0, 0.0, yaw),
            body_rates: Vector3::zeros(),
            rotor_rpm: [0.0; 4],
        }
    }

    /// Yaw (heading) of the body, radians.
    pub fn yaw(&self) -> f64 {
        self.world_from_body.euler_angles().2
    }

    /// The pose as an isometry (world_from_body).
    pub fn pose(&self) -> nalgebra::Isometry3<f64> {
        nalgebra::Isometry3::from_parts(self.position.into(), self.world_from_body)
    }
}

/// Time derivative of the integrated state.
#[derive(Clone, Copy)]
struct Deriv {
    dp: Vector3<f64>,
    dv: Vector3<f64>,
    dq: Quaternion<f64>,
    dw: Vector3<f64>,
    drpm: [f64; 4],
}

/// A quadrotor in flight.
#[derive(Clone, Debug)]
pub struct Quadrotor {
    params: QuadParams,
    inertia: Matrix3<f64>,
    inertia_inv: Matrix3<f64>,
    state: QuadState,
    /// Whether the vehicle rests on a support (ground contact), set by the last step.
    grounded: bool,
}

impl Quadrotor {
    /// A vehicle of `params` in `state`. `params` must be valid ([`QuadParams::validate`]).
    pub fn new(params: QuadParams, state: QuadState) -> Quadrotor {
        let inertia = params.inertia();
        let inertia_inv = inertia.try_inverse().unwrap_or_else(Matrix3::identity);
        Quadrotor {
            params,
            inertia,
            inertia_inv,
            state,
            grounded: false,
        }
    }

    /// Sets the vehicle down on a support at height `support_z`, at rest, motors still: a start on the ground.
    /// Its first step then reads as resting (the accelerometer at +g), not as a fall onto the support.
    pub fn rest_on(&mut self, support_z: f64) {
        self.state.position.z = support_z + self.params.gear_height_m;
        self.state.velocity = Vector3::zeros();
        self.state.rotor_rpm = [0.0; 4];
        self.contact(Some(support_z));
    }

    /// What the vehicle is.
    pub fn params(&self) -> &QuadParams {
        &self.params
    }

    /// Its state after the last step.
    pub fn state(&self) -> &QuadState {
        &self.state
    }

    /// Whether the vehicle rested on its support after the last step.
    pub fn grounded(&self) -> bool {
        self.grounded
    }

    /// Per-rotor thrust (N) and the resulting body thrust and torques.
    fn wrench(&self, rpm: &[f64; 4]) -> (f64, Vector3<f64>) {
        let p = &self.params;
        let mut thrust = 0.0;
        let mut torque = Vector3::zeros();
        for (i, (w, [x, y])) in rpm.iter().zip(p.rotor_positions()).enumerate() {
            let f = p.kf_n_per_rpm2 * w * w;
            thrust += f;
            torque.x += y * f;
            torque.y -= x * f;
            torque.z += SPIN[i] * p.kt_nm_per_rpm2 * w * w;
        }
        (thrust, torque)
    }

    /// World acceleration of the body centre in `s` (gravity, thrust, drag).
    fn acceleration(&self, s: &QuadState) -> Vector3<f64> {
        let (thrust, _) = self.wrench(&s.rotor_rpm);
        let drag = Vector3::from(self.params.drag_n_per_m_s).component_mul(&s.velocity);
        (s.world_from_body * Vector3::new(0.0, 0.0, thrust) - drag) / self.params.mass_kg
            - Vector3::new(0.0, 0.0, GRAVITY)
    }

    fn deriv(&self, s: &QuadState, cmd: &[f64; 4]) -> Deriv {
        let (_, torque) = self.wrench(&s.rotor_rpm);
        let w = s.body_rates;
        let dw = self.inertia_inv * (torque - w.cross(&(self.inertia * w)));
        let dq = s.world_from_body.as_ref() * Quaternion::from_parts(0.0, w) * 0.5;
        let tau = self.params.motor_time_constant_s;
        let drpm: [f64; 4] = std::array::from_fn(|i| {
            if tau > 0.0 {
                (cmd[i] - s.rotor_rpm[i]) / tau
            } else {
                0.0
            }
        });
        Deriv {
            dp: s.velocity,
            dv: self.acceleration(s),
            dq,
            dw,
            drpm,
        }
    }

    fn advance(s: &QuadState, d: &Deriv, h: f64) -> QuadState {
        let mut rpm = s.rotor_rpm;
        for (w, dw) in rpm.iter_mut().zip(d.drpm) {
            *w += h * dw;
        }
        QuadState {
            position: s.position + d.dp * h,
            velocity: s.velocity + d.dv * h,
            world_from_body: UnitQuaternion::new_normalize(
                s.world_from_body.into_inner() + d.dq * h,
            ),
            body_rates: s.body_rates + d.dw * h,
            rotor_rpm: rpm,
        }
    }

    /// Integrates `dt` seconds (RK4) with the rotors commanded to `cmd`. `support_z` is the height of whatever
    /// lies under the vehicle (from the map), if known: the landing gear rests on it instead of passing
    /// through.
    pub fn step(&mut self, cmd: &RotorCommand, dt: f64, support_z: Option<f64>) {
        let p = &self.params;
        let mut c = cmd.0;
        for v in &mut c {
            *v = if v.is_finite() {
                v.clamp(p.rpm_min, p.rpm_max)
            } else {
                p.rpm_min
            };
        }
        if p.motor_time_constant_s == 0.0 {
            self.state.rotor_rpm = c;
        }
        let s0 = self.state;
        let k1 = self.deriv(&s0, &c);
        let k2 = self.deriv(&Self::advance(&s0, &k1, 0.5 * dt), &c);
        let k3 = self.deriv(&Self::advance(&s0, &k2, 0.5 * dt), &c);
        let k4 = self.deriv(&Self::advance(&s0, &k3, dt), &c);
        let comb = |a: Vector3<f64>, b: Vector3<f64>, c: Vector3<f64>, d: Vector3<f64>| {
            (a + 2.0 * b + 2.0 * c + d) / 6.0
        };
        let mut drpm = [0.0; 4];
        for (i, v) in drpm.iter_mut().enumerate() {
            *v = (k1.drpm[i] + 2.0 * k2.drpm[i] + 2.0 * k3.drpm[i] + k4.drpm[i]) / 6.0;
        }
        let d = Deriv {
            dp: comb(k1.dp, k2.dp, k3.dp, k4.dp),
            dv: comb(k1.dv, k2.dv, k3.dv, k4.dv),
            dq: (k1.dq + k2.dq * 2.0 + k3.dq * 2.0 + k4.dq) / 6.0,
            dw: comb(k1.dw, k2.dw, k3.dw, k4.dw),
            drpm,
        };
        self.state = Self::advance(&s0, &d, dt);
        self.contact(support_z);
    }

    /// Ground contact: the gear cannot go below the support; a vehicle pressed onto it (thrust below weight)
    /// rests level, without sliding or spinning.
    fn contact(&mut self, support_z: Option<f64>) {
        self.grounded = false;
        let Some(ground) = support_z.filter(|z| z.is_finite()) else {
            return;
        };
        let floor = ground + self.params.gear_height_m;
        if self.state.position.z > floor {
            return;
        }
        self.state.position.z = floor;
        if self.state.velocity.z < 0.0 {
            self.state.velocity.z = 0.0;
        }
        let (thrust, _) = self.wrench(&self.state.rotor_rpm);
        if thrust < self.params.mass_kg * GRAVITY {
            self.grounded = true;
            self.state.velocity = Vector3::zeros();
            self.state.body_rates = Vector3::zeros();
            let yaw = self.state.yaw();
            self.state.world_from_body = UnitQuaternion::from_euler_angles(0.0, 0.0, yaw);
        }
    }

    /// What an ideal accelerometer at the body centre reads: the specific force (acceleration minus gravity)
    /// in the body frame, m/s^2. At hover and at rest it is +g along body z.
    pub fn specific_force_body(&self) -> Vector3<f64> {
        let a = if self.grounded {
            Vector3::zeros()
        } else {
            self.acceleration(&self.state)
        };
        self.state.world_from_body.inverse() * (a + Vector3::new(0.0, 0.0, GRAVITY))
    }

    /// Replaces the state (a reset, a respawn).
    pub fn set_state(&mut self, state: QuadState) {
        self.state = state;
    }
}
