//! The quadrotor, its IMU and the cascaded controller, checked against their designs.

use aerie_simcore::control::{Cascaded, CascadedParams, Controller, Setpoint};
use aerie_simcore::vehicle::{
    GRAVITY, Imu, ImuParams, QuadParams, QuadState, Quadrotor, RotorCommand,
};
use nalgebra::Vector3;

const DT: f64 = 0.001;

fn hovering(params: &QuadParams, at: Vector3<f64>) -> Quadrotor {
    let mut s = QuadState::at_rest(at, 0.0);
    s.rotor_rpm = [params.hover_rpm(); 4];
    Quadrotor::new(params.clone(), s)
}

/// Flies `seconds` toward `sp`, returning the position after every step.
fn fly(q: &mut Quadrotor, c: &mut Cascaded, sp: &Setpoint, seconds: f64) -> Vec<Vector3<f64>> {
    let steps = (seconds / DT).round() as usize;
    (0..steps)
        .map(|_| {
            let cmd = c.update(q.state(), sp, DT);
            q.step(&cmd, DT, None);
            q.state().position
        })
        .collect()
}

#[test]
fn hover_holds_within_2_cm_for_60_s() {
    let p = QuadParams::preset("marsim_quad").unwrap();
    let target = Vector3::new(1.0, -2.0, 3.0);
    let mut q = hovering(&p, target + Vector3::new(0.1, 0.0, -0.1));
    let mut c = Cascaded::new(&p, CascadedParams::default());
    let sp = Setpoint::hold(target, 0.3);
    fly(&mut q, &mut c, &sp, 10.0);
    let track = fly(&mut q, &mut c, &sp, 60.0);
    let worst = track
        .iter()
        .map(|x| (x - target).norm())
        .fold(0.0, f64::max);
    assert!(worst < 0.02, "worst deviation {worst} m");
    let drift = (track.last().unwrap() - track.first().unwrap()).norm();
    assert!(drift < 0.005, "drift {drift} m over 60 s");
    // The rotors carry the weight: every rotor near the analytic hover speed (~13,150 rpm for this quad).
    let hover = p.hover_rpm();
    assert!((hover - 13_150.0).abs() < 150.0, "{hover}");
    for w in q.state().rotor_rpm {
        assert!((w - hover).abs() < 0.01 * hover, "{w} vs {hover}");
    }
    assert!((q.state().yaw() - 0.3).abs() < 1e-3);
}

/// Overshoot (fraction of the step) and 2% settling time of a step of `size` along `axis`.
fn step_response(axis: usize, size: f64) -> (f64, f64) {
    let p = QuadParams::preset("marsim_quad").unwrap();
    let start = Vector3::new(0.0, 0.0, 5.0);
    let mut q = hovering(&p, start);
    let mut c = Cascaded::new(&p, CascadedParams::default());
    let mut goal = start;
    goal[axis] += size;
    let track = fly(&mut q, &mut c, &Setpoint::hold(goal, 0.0), 10.0);
    let x: Vec<f64> = track
        .iter()
        .map(|v| (v[axis] - start[axis]) / size)
        .collect();
    let overshoot = x.iter().copied().fold(f64::MIN, f64::max) - 1.0;
    let last_out = x
        .iter()
        .rposition(|v| (v - 1.0).abs() > 0.02)
        .map_or(0, |i| i + 1);
    (overshoot.max(0.0), last_out as f64 * DT)
}

#[test]
fn position_steps_follow_their_design() {
    let d = CascadedParams::default();
    for (axis, design) in [(0, d.position), (2, d.altitude)] {
        let (overshoot, settle) = step_response(axis, 1.0);
        println!(
            "axis {axis}: overshoot {overshoot:.4} (design {:.4}), settling {settle:.2} s (design {:.2} s)",
            design.overshoot(),
            design.settling_time_s()
        );
        assert!(
            overshoot <= design.overshoot() + 0.02,
            "axis {axis}: {overshoot}"
        );
        let ts = design.settling_time_s();
        assert!(
            (settle - ts).abs() <= 0.3 * ts,
            "axis {axis}: {settle} s vs {ts} s"
        );
    }
}

#[test]
fn imu_reads_plus_g_at_hover_with_the_configured_noise() {
    let p = QuadParams::preset("marsim_quad").unwrap();
    let mut q = hovering(&p, Vector3::new(0.0, 0.0, 2.0));
    let mut c = Cascaded::new(&p, CascadedParams::default());
    let sp = Setpoint::hold(Vector3::new(0.0, 0.0, 2.0), 0.0);
    fly(&mut q, &mut c, &sp, 5.0);
    let white = ImuParams {
        gyro_bias_random_walk: 0.0,
        accel_bias_random_walk: 0.0,
        ..p.imu.clone()
    };
    let mut imu = Imu::new(white.clone(), 7, 0);
    let n = 4000;
    let period_steps = (imu.period_s() / DT).round() as usize;
    let mut acc = Vec::new();
    let mut gyro = Vec::new();
    for k in 0..n {
        for _ in 0..period_steps {
            let cmd = c.update(q.state(), &sp, DT);
            q.step(&cmd, DT, None);
        }
        let s = imu.sample(
            k as f64 * imu.period_s(),
            &q.state().body_rates,
            &q.specific_force_body(),
        );
        acc.push(s.linear_acceleration);
        gyro.push(s.angular_velocity);
    }
    let mean = acc.iter().sum::<Vector3<f64>>() / n as f64;
    let sigma_a = white.accel_noise_density * white.rate_hz.sqrt();
    assert!(
        (mean.z - GRAVITY).abs() < 4.0 * sigma_a / (n as f64).sqrt() + 1e-3,
        "{mean}"
    );
    assert!(mean.x.abs() < 0.01 && mean.y.abs() < 0.01, "{mean}");
    let std = |v: &[f64]| {
        let m = v.iter().sum::<f64>() / v.len() as f64;
        (v.iter().map(|x| (x - m).powi(2)).sum::<f64>() / (v.len() - 1) as f64).sqrt()
    };
    let az: Vec<f64> = acc.iter().map(|a| a.z).collect();
    let gx: Vec<f64> = gyro.iter().map(|g| g.x).collect();
    let sigma_g = white.gyro_noise_density * white.rate_hz.sqrt();
    assert!(
        (std(&az) / sigma_a - 1.0).abs() < 0.06,
        "{} vs {sigma_a}",
        std(&az)
    );
    assert!(
        (std(&gx) / sigma_g - 1.0).abs() < 0.06,
        "{} vs {sigma_g}",
        std(&gx)
    );
}

#[test]
fn imu_bias_random_walk_grows_with_its_density() {
    let p = QuadParams::preset("marsim_quad").unwrap();
    let walk = ImuParams {
        gyro_noise_density: 0.0,
        accel_noise_density: 0.0,
        ..p.imu.clone()
    };
    // Over many independent IMUs the bias after T seconds has variance density^2 T.
    let (t, runs) = (2.0, 400);
    let samples = (t * walk.rate_hz) as usize;
    let mut finals = Vec::new();
    for id in 0..runs {
        let mut imu = Imu::new(walk.clone(), 3, id);
        let mut last = Vector3::zeros();
        for k in 0..samples {
            last = imu
                .sample(k as f64, &Vector3::zeros(), &Vector3::zeros())
                .linear_acceleration;
        }
        finals.push(last.x);
    }
    let var = finals.iter().map(|x| x * x).sum::<f64>() / runs as f64;
    let expect = walk.accel_bias_random_walk.powi(2) * t;
    assert!((var / expect - 1.0).abs() < 0.2, "{var} vs {expect}");
}

#[test]
fn the_same_seed_gives_the_same_samples() {
    let p = QuadParams::preset("quad250").unwrap();
    let run = |seed| {
        let mut imu = Imu::new(p.imu.clone(), seed, 1);
        (0..100)
            .map(|k| imu.sample(k as f64, &Vector3::x(), &Vector3::z()))
            .collect::<Vec<_>>()
    };
    assert_eq!(run(5), run(5));
    assert_ne!(run(5), run(6));
}

#[test]
fn ground_contact_holds_the_vehicle() {
    let p = QuadParams::preset("marsim_quad").unwrap();
    let ground = 0.5;
    // Motors off on the ground: it stays there.
    let rest = Vector3::new(0.0, 0.0, ground + p.gear_height_m);
    let mut q = Quadrotor::new(p.clone(), QuadState::at_rest(rest, 1.0));
    for _ in 0..2000 {
        q.step(&RotorCommand([0.0; 4]), DT, Some(ground));
    }
    assert!((q.state().position - rest).norm() < 1e-9 && q.grounded());
    // Set down from a start a little above the ground, it rests there from its first step, and its
    // accelerometer reads +g, not a fall.
    let mut q = Quadrotor::new(
        p.clone(),
        QuadState::at_rest(rest + Vector3::new(0.0, 0.0, 0.12), 0.0),
    );
    q.rest_on(ground);
    q.step(&RotorCommand([0.0; 4]), DT, Some(ground));
    assert!((q.state().position - rest).norm() < 1e-9 && q.grounded());
    assert!((q.specific_force_body().z - GRAVITY).abs() < 1e-9);
    // Dropped from 1 m: it falls with g and comes to rest on the support.
    let mut q = Quadrotor::new(
        p.clone(),
        QuadState::at_rest(rest + Vector3::new(0.0, 0.0, 1.0), 0.0),
    );
    for _ in 0..300 {
        q.step(&RotorCommand([0.0; 4]), DT, Some(ground));
    }
    // Free fall with linear drag k = c / m: z0 - z(t) = (g / k) t - (g / k^2) (1 - exp(-k t)).
    let fallen = rest.z + 1.0 - q.state().position.z;
    let (k, t) = (p.drag_n_per_m_s[2] / p.mass_kg, 0.3);
    let expect = GRAVITY / k * t - GRAVITY / (k * k) * (1.0 - (-k * t).exp());
    assert!(
        (fallen - expect).abs() < 1e-6,
        "fell {fallen}, expected {expect}"
    );
    for _ in 0..1000 {
        q.step(&RotorCommand([0.0; 4]), DT, Some(ground));
    }
    assert!((q.state().position.z - rest.z).abs() < 1e-9 && q.state().velocity.norm() == 0.0);
    // And takes off again when the controller asks.
    let mut c = Cascaded::new(&p, CascadedParams::default());
    let sp = Setpoint::hold(rest + Vector3::new(0.0, 0.0, 2.0), 0.0);
    for _ in 0..8000 {
        let cmd = c.update(q.state(), &sp, DT);
        q.step(&cmd, DT, Some(ground));
    }
    assert!(
        (q.state().position - sp.position).norm() < 0.05,
        "{}",
        q.state().position
    );
}

#[test]
fn presets_are_valid_and_errors_name_the_field() {
    for name in QuadParams::preset_names() {
        QuadParams::preset(name).unwrap();
    }
    let text = aerie_simcore::vehicle::QuadParams::preset("quad250").unwrap();
    let bad = toml::to_string(&QuadParams {
        mass_kg: -1.0,
        ..text
    })
    .unwrap();
    let err = QuadParams::from_toml(&bad).unwrap_err().to_string();
    assert!(err.contains("mass_kg"), "{err}");
    // A radius of 50 m (a typo) would set the vehicle on top of whatever lies within it; an IMU faster than
    // the physics steps would come out at their rate with noise sized for the asked one.
    let base = QuadParams::preset("quad250").unwrap();
    let mut imu = base.imu.clone();
    imu.rate_hz = 5000.0;
    for (bad, field) in [
        (
            QuadParams {
                radius_m: 50.0,
                ..base.clone()
            },
            "radius_m",
        ),
        (
            QuadParams {
                gear_height_m: 1.0,
                ..base.clone()
            },
            "gear_height_m",
        ),
        (
            QuadParams {
                imu,
                ..base.clone()
            },
            "imu.rate_hz",
        ),
    ] {
        let err = bad.validate().unwrap_err().to_string();
        assert!(err.contains(field), "{err}");
    }
    assert!(
        QuadParams::preset("nope")
            .unwrap_err()
            .to_string()
            .contains("marsim_quad")
    );
}
