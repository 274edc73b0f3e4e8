//! Where the rays start and what is measured along them: beams leave from their own origins, depth cameras
//! measure depth along their axis.

use super::*;

/// Beams leave from their own origins (Ouster beam offsets, the lidar origin above the sensor frame), and the
/// points are still reported in the sensor frame.
#[test]
fn beam_origins_offset_the_rays() {
    use aerie_pipeline::map::PackedMap;
    use aerie_pipeline::{Cloud, Columns};
    use aerie_simcore::render::{Method, RenderParams, Renderer};
    use aerie_simcore::trajectory::{Static, pose_from_xyz_rpy};
    // A floor 1 m below the sensor, sampled every 5 cm.
    let n = 200;
    let positions: Vec<[f32; 3]> = (0..n * n)
        .map(|i| {
            [
                (i % n) as f32 * 0.05 - 5.0,
                (i / n) as f32 * 0.05 - 5.0,
                -1.0,
            ]
        })
        .collect();
    let cloud = Cloud::from_columns(
        [0.0; 3],
        Columns {
            normals: Some(vec![[0.0, 0.0, 1.0]; positions.len()]),
            gamma: Some(vec![0.0; positions.len()]),
            positions,
            ..Columns::default()
        },
    )
    .unwrap();
    let map = PackedMap::from_cloud(&cloud, 0.05, None).unwrap();
    let h = std::f32::consts::FRAC_1_SQRT_2;
    // A fan of 31 x 21 beams from 30 to 60 degrees down; beam 0 points ahead, 45 degrees down.
    let mut beams = vec![Beam {
        dir: [h, 0.0, -h],
        time_s: 0.0,
        ring: 0,
    }];
    for i in 0..31 {
        for j in 0..21 {
            let el = -(30.0 + i as f32).to_radians();
            let az = (j as f32 - 10.0).to_radians();
            beams.push(Beam {
                dir: [el.cos() * az.cos(), el.cos() * az.sin(), el.sin()],
                time_s: 0.0,
                ring: i,
            });
        }
    }
    let physics = Physics {
        min_range_m: 0.1,
        max_range_m: 100.0,
        range_sigma_m: 0.0,
        range_sigma_quadratic: 0.0,
        angular_sigma_rad: 0.0,
        default_reflectance: 0.5,
        range_10pct_m: 0.0,
        range_80pct_m: 0.0,
    };
    let pose = Static(pose_from_xyz_rpy(0.0, 0.0, 0.0, 0.0, 0.0, 0.0));
    // An Ouster-like lift of the lidar origin above the sensor frame, and one of a metre, which the beam
    // renderer's range bound must widen its spans by (the splat renderer re-reads its image from the sensor
    // origin, exact only for small offsets).
    for (method, lift) in [
        (Method::Splat, 0.05f32),
        (Method::Beam, 0.05),
        (Method::Beam, 1.0),
    ] {
        let params = RenderParams {
            method,
            ..RenderParams::default()
        };
        let mut r = Renderer::new(&beams, &physics, &params);
        let plain = r.render(&map.view(), &pose, 0.0, 0).unwrap();
        r.set_beam_origins(&vec![[0.0, 0.0, lift]; beams.len()]);
        let lifted = r.render(&map.view(), &pose, 0.0, 0).unwrap();
        let first =
            |f: &aerie_simcore::render::Frame| f.points.iter().find(|p| p.beam == 0).copied();
        let (Some(a), Some(b)) = (first(&plain), first(&lifted)) else {
            panic!(
                "{method:?}: beam 0 missed: {} and {} returns",
                plain.points.len(),
                lifted.points.len()
            )
        };
        assert!(
            (a.range_m - 2f32.sqrt()).abs() < 0.01,
            "{method:?}: {}",
            a.range_m
        );
        assert!(
            (b.range_m - (1.0 + lift) * 2f32.sqrt()).abs() < 0.01,
            "{method:?}: {}",
            b.range_m
        );
        assert!(
            (a.xyz[2] + 1.0).abs() < 0.01 && (b.xyz[2] + 1.0).abs() < 0.01,
            "{:?} {:?}",
            a.xyz,
            b.xyz
        );
        assert!((b.xyz[0] - (1.0 + lift)).abs() < 0.01, "{:?}", b.xyz);
    }
}

/// A depth camera measures depth along its optical axis: facing a wall, every pixel reads the wall's distance
/// whatever its angle off the axis, with the stereo noise sigma_z = k z^2 of that depth, and the range limits
/// bound the depth, so the image corners, farther along their rays, still return.
#[test]
fn depth_cameras_measure_depth_along_their_axis() {
    let wall = Scene {
        prims: vec![Surface::rect(
            [3.0, 0.0, 0.0],
            [0.0, 1.0, 0.0],
            [0.0, 0.0, 1.0],
            6.0,
            6.0,
        )],
    };
    let map = TestMap::build(&wall, 0.05, ORIGIN);
    let model = aerie_simcore::sensor::SensorModel::preset("d455").unwrap();
    let mut beams = Vec::new();
    model.beams(0, &mut beams);
    let pose = pose_from_xyz_rpy(ORIGIN[0], ORIGIN[1], ORIGIN[2], 0.0, 0.0, 0.0);
    let k = 0.02f32;
    let run = |physics: &Physics| {
        let mut r = Renderer::new(&beams, physics, &params(Method::Beam, true));
        r.set_depth_axis(true);
        r.render(&map.view(), &Static(pose), 0.0, 0).unwrap()
    };
    let ideal = Physics {
        max_range_m: 3.2,
        ..physics()
    };
    let frame = run(&ideal);
    // Rays up to ~47 deg off the axis reach the wall at ~4.4 m, beyond max_range_m: they still return.
    assert!(
        frame.points.len() > beams.len() * 95 / 100,
        "{}",
        frame.points.len()
    );
    assert!(frame.points.iter().any(|q| q.range_m > 4.0));
    let noisy = run(&Physics {
        range_sigma_quadratic: k,
        ..physics()
    });
    let dz: Vec<f64> = noisy
        .points
        .iter()
        .map(|q| f64::from(q.xyz[0]) - 3.0)
        .collect();
    let sd = (dz.iter().map(|d| d * d).sum::<f64>() / dz.len() as f64).sqrt();
    let sigma_z = f64::from(k) * 9.0;
    assert!(
        (sd - sigma_z).abs() < 0.05 * sigma_z,
        "depth sd {sd}, expected {sigma_z}"
    );
    let image = noisy.depth_image(&model);
    let centre = image.data[image.height / 2 * image.width + image.width / 2];
    let corner = image.data[image.width + 1];
    assert!(
        (centre - 3.0).abs() < 0.5 && (corner - 3.0).abs() < 0.5,
        "{centre} {corner}"
    );
}
