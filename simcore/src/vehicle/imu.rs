//! The inertial measurement unit: specific force and body rates sampled at their own rate, with white noise and
//! a bias random walk (the usual continuous-time model of Kalibr and most VIO packages, so users can copy their
//! IMU's densities). Unlike MARSIM's, it reads +g upward at rest.

use nalgebra::Vector3;
use serde::{Deserialize, Serialize};

use super::VehicleError;
use crate::rng::BeamRng;

/// IMU rate and noise densities.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ImuParams {
    /// Samples per second.
    pub rate_hz: f64,
    /// Gyroscope white noise, rad/s/sqrt(Hz).
    pub gyro_noise_density: f64,
    /// Accelerometer white noise, m/s^2/sqrt(Hz).
    pub accel_noise_density: f64,
    /// Gyroscope bias random walk, rad/s^2/sqrt(Hz).
    pub gyro_bias_random_walk: f64,
    /// Accelerometer bias random walk, m/s^3/sqrt(Hz).
    pub accel_bias_random_walk: f64,
}

impl ImuParams {
    pub(crate) fn validate(&self) -> Result<(), VehicleError> {
        // The flight reads the IMU once per physics step at most: a higher rate would come out at the physics
        // rate with the noise sized for the asked one.
        let most = super::PHYSICS_HZ;
        if !(self.rate_hz.is_finite() && self.rate_hz > 0.0 && self.rate_hz <= most) {
            return Err(VehicleError::Invalid {
                field: "imu.rate_hz".into(),
                message: format!(
                    "must be above 0 and at most {most} (the flight's physics rate), got {}",
                    self.rate_hz
                ),
            });
        }
        for (field, v) in [
            ("imu.gyro_noise_density", self.gyro_noise_density),
            ("imu.accel_noise_density", self.accel_noise_density),
            ("imu.gyro_bias_random_walk", self.gyro_bias_random_walk),
            ("imu.accel_bias_random_walk", self.accel_bias_random_walk),
        ] {
            if !(v.is_finite() && v >= 0.0) {
                return Err(VehicleError::Invalid {
                    field: field.into(),
                    message: format!("must be finite and at least 0, got {v}"),
                });
            }
        }
        Ok(())
    }
}

/// One IMU reading.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct ImuSample {
    /// Seconds on the simulation clock.
    pub t: f64,
    /// Body rates, rad/s (body frame).
    pub angular_velocity: Vector3<f64>,
    /// Specific force, m/s^2 (body frame): +g along body z at rest.
    pub linear_acceleration: Vector3<f64>,
}

/// An IMU: turns true body rates and specific force into noisy, biased samples. Deterministic: sample `k` of
/// IMU `id` under seed `seed` draws from its own counter-based stream.
#[derive(Clone, Debug)]
pub struct Imu {
    params: ImuParams,
    seed: u64,
    id: u64,
    sample: u64,
    gyro_bias: Vector3<f64>,
    accel_bias: Vector3<f64>,
}

impl Imu {
    /// An IMU of `params` with zero biases. `seed` and `id` pick its noise streams: IMUs under one seed need
    /// distinct ids (a flight uses the vehicle's index).
    pub fn new(params: ImuParams, seed: u64, id: u64) -> Imu {
        Imu {
            params,
            seed,
            id,
            sample: 0,
            gyro_bias: Vector3::zeros(),
            accel_bias: Vector3::zeros(),
        }
    }

    /// Its rate and noise densities.
    pub fn params(&self) -> &ImuParams {
        &self.params
    }

    /// Seconds between samples.
    pub fn period_s(&self) -> f64 {
        1.0 / self.params.rate_hz
    }

    /// Current biases (gyro, accel), for tests and ground truth.
    pub fn biases(&self) -> (Vector3<f64>, Vector3<f64>) {
        (self.gyro_bias, self.accel_bias)
    }

    /// The next sample at time `t` from the true body rates and specific force.
    pub fn sample(
        &mut self,
        t: f64,
        body_rates: &Vector3<f64>,
        specific_force: &Vector3<f64>,
    ) -> ImuSample {
        let p = &self.params;
        let dt = 1.0 / p.rate_hz;
        // Stream 0xIMU: one per (IMU, sample), so nothing depends on how often others were sampled.
        let mut rng = BeamRng::new(self.seed ^ 0x494D_5500_0000_0000, self.id, self.sample);
        self.sample += 1;
        let mut gauss3 = || {
            let (a, b) = rng.gaussian_pair();
            let (c, _) = rng.gaussian_pair();
            Vector3::new(a, b, c)
        };
        let white_g = gauss3() * (p.gyro_noise_density * p.rate_hz.sqrt());
        let white_a = gauss3() * (p.accel_noise_density * p.rate_hz.sqrt());
        self.gyro_bias += gauss3() * (p.gyro_bias_random_walk * dt.sqrt());
        self.accel_bias += gauss3() * (p.accel_bias_random_walk * dt.sqrt());
        ImuSample {
            t,
            angular_velocity: body_rates + self.gyro_bias + white_g,
            linear_acceleration: specific_force + self.accel_bias + white_a,
        }
    }
}
