//! Sensor models: every shipped preset loads and produces a frame that matches its datasheet (count, field of
//! view, timing, rings); Livox patterns keep filling their field of view; TOML round trips and bad input errors.

use std::collections::{BTreeMap, HashSet};

use aerie_simcore::sensor::{
    Beam, FiringTiming, Pattern, Pinhole, RingZero, SensorError, SensorModel,
};

fn preset(name: &str) -> SensorModel {
    match SensorModel::preset(name) {
        Ok(model) => model,
        Err(e) => panic!("preset {name}: {e}"),
    }
}

fn frame(model: &SensorModel, index: u64) -> Vec<Beam> {
    let mut beams = Vec::new();
    model.beams(index, &mut beams);
    beams
}

fn elevation_deg(beam: &Beam) -> f64 {
    let [x, y, z] = beam.dir.map(f64::from);
    z.atan2(x.hypot(y)).to_degrees()
}

fn azimuth_deg(beam: &Beam) -> f64 {
    f64::from(beam.dir[1])
        .atan2(f64::from(beam.dir[0]))
        .to_degrees()
}

fn extent(values: impl Iterator<Item = f64>) -> (f64, f64) {
    values.fold((f64::INFINITY, f64::NEG_INFINITY), |(lo, hi), v| {
        (lo.min(v), hi.max(v))
    })
}

/// Datasheet vertical field of view per preset (degrees) and how close a frame's beams must come to each limit.
const VERTICAL_FOV: &[(&str, f64, f64, f64)] = &[
    ("avia", -38.6, 38.6, 0.5),
    ("mid360", -7.0, 52.0, 1.0),
    ("mid40", -19.2, 19.2, 0.5),
    ("horizon", -12.55, 12.55, 0.5),
    ("vlp16", -15.0, 15.0, 1e-3),
    ("vlp32c", -25.0, 15.0, 1e-3),
    ("hdl32e", -30.67, 10.67, 1e-3),
    ("hdl64e", -24.6, 2.0, 1e-3),
    ("os0_64", -45.46, 45.85, 1e-3),
    ("os0_64_hall", -45.30, 45.27, 1e-3),
    ("os0_128", -46.26, 45.75, 1e-3),
    ("os1_64", -16.611, 16.611, 1e-3),
    ("os1_128", -22.5, 22.5, 1e-3),
    ("os2_128", -11.09, 10.76, 1e-3),
    // The pinhole's vertical limit is reached at the image's top and bottom edges; the outermost pixel centres
    // lie half a pixel inside.
    ("d455", -29.0, 29.0, 0.1),
];

mod presets {
    use super::*;

    #[test]
    fn every_preset_loads_validates_and_is_named_after_its_file() {
        let names = SensorModel::preset_names();
        assert_eq!(names.len(), 15);
        for name in names {
            let model = preset(name);
            assert_eq!(model.name, *name);
            assert!(model.validate().is_ok(), "{name}");
            assert!(
                !model.description.is_empty() && !model.source.is_empty(),
                "{name}"
            );
            assert!(model.rate_hz > 0.0 && model.physics.max_range_m > model.physics.min_range_m);
        }
        assert!(
            VERTICAL_FOV
                .iter()
                .map(|row| row.0)
                .eq(names.iter().copied())
        );
    }

    #[test]
    fn unknown_preset_lists_the_known_ones() {
        let Err(SensorError::UnknownPreset { name, known }) = SensorModel::preset("vlp17") else {
            panic!("vlp17 should not exist");
        };
        assert_eq!(name, "vlp17");
        assert!(known.contains("vlp16") && known.contains("os0_64_hall"));
    }

    #[test]
    fn beam_count_follows_the_pattern() {
        for name in SensorModel::preset_names() {
            let model = preset(name);
            let expected = match &model.pattern {
                Pattern::Spinning(p) => p.elevations_deg.len() * p.columns as usize,
                Pattern::Rosette(p) => (p.points_per_second / model.rate_hz).round() as usize,
                Pattern::Sweep(p) => (p.points_per_second / model.rate_hz).round() as usize,
                Pattern::Pinhole(p) => (p.width * p.height) as usize,
            };
            let beams = frame(&model, 0);
            assert_eq!(beams.len(), expected, "{name}");
            assert_eq!(model.beams_per_frame(), expected, "{name}");
        }
        // Spot checks against the datasheets.
        assert_eq!(preset("avia").beams_per_frame(), 24_000);
        assert_eq!(preset("mid40").beams_per_frame(), 10_000);
        assert_eq!(preset("mid360").beams_per_frame(), 20_000);
        assert_eq!(preset("os1_128").beams_per_frame(), 128 * 2048);
        assert_eq!(preset("vlp16").beams_per_frame(), 16 * 1808);
        assert_eq!(preset("d455").beams_per_frame(), 848 * 480);
    }

    #[test]
    fn directions_are_unit_and_inside_the_reported_fov() {
        for name in SensorModel::preset_names() {
            let model = preset(name);
            let fov = model.fov();
            for beam in frame(&model, 3) {
                let norm = beam
                    .dir
                    .iter()
                    .map(|c| f64::from(*c).powi(2))
                    .sum::<f64>()
                    .sqrt();
                assert!((norm - 1.0).abs() < 1e-6, "{name}: |dir| = {norm}");
                assert!(
                    fov.contains(beam.dir, 1e-5),
                    "{name}: {:?} outside {fov:?}",
                    beam.dir
                );
            }
        }
    }

    #[test]
    fn elevations_stay_within_and_reach_the_datasheet_fov() {
        for &(name, lo, hi, reach) in VERTICAL_FOV {
            let beams = frame(&preset(name), 0);
            let (min, max) = extent(beams.iter().map(elevation_deg));
            assert!(
                min >= lo - 1e-3 && max <= hi + 1e-3,
                "{name}: {min}..{max} outside {lo}..{hi}"
            );
            assert!(
                min - lo <= reach && hi - max <= reach,
                "{name}: {min}..{max} does not reach {lo}..{hi}"
            );
        }
    }

    #[test]
    fn livox_and_camera_azimuths_span_the_horizontal_fov() {
        for (name, half) in [
            ("avia", 35.2),
            ("mid40", 19.2),
            ("horizon", 40.85),
            ("d455", 43.5),
        ] {
            let (min, max) = extent(frame(&preset(name), 0).iter().map(azimuth_deg));
            assert!(
                min > -half - 0.2 && max < half + 0.2,
                "{name}: {min}..{max}"
            );
            assert!(
                min < -half + 0.5 && max > half - 0.5,
                "{name}: {min}..{max}"
            );
        }
        let (min, max) = extent(frame(&preset("mid360"), 0).iter().map(azimuth_deg));
        assert!(min < -179.0 && max > 179.0, "mid360 azimuth {min}..{max}");
    }

    #[test]
    fn times_lie_in_the_frame_and_never_decrease() {
        for name in SensorModel::preset_names() {
            let model = preset(name);
            let period = model.frame_period_s();
            let beams = frame(&model, 1);
            for beam in &beams {
                assert!(
                    beam.time_s >= 0.0 && f64::from(beam.time_s) < period,
                    "{name}: {}",
                    beam.time_s
                );
            }
            assert!(
                beams.windows(2).all(|w| w[0].time_s <= w[1].time_s),
                "{name}: times decrease"
            );
            // Spinning frames span nearly the whole period; Livox points come at 1 / points_per_second.
            let last = f64::from(beams.last().map_or(0.0, |b| b.time_s));
            match &model.pattern {
                Pattern::Pinhole(_) => assert_eq!(last, 0.0),
                _ => assert!(last > 0.99 * period, "{name}: last time {last}"),
            }
        }
    }

    #[test]
    fn rings_cover_every_laser_or_line_in_the_drivers_order() {
        for name in SensorModel::preset_names() {
            let model = preset(name);
            let beams = frame(&model, 0);
            let count = match &model.pattern {
                Pattern::Spinning(p) => p.elevations_deg.len(),
                Pattern::Rosette(p) => p.lines as usize,
                Pattern::Sweep(p) => p.lines as usize,
                Pattern::Pinhole(p) => p.height as usize,
            };
            let seen: HashSet<u16> = beams.iter().map(|b| b.ring).collect();
            assert_eq!(seen.len(), count, "{name}");
            assert!(beams.iter().all(|b| usize::from(b.ring) < count), "{name}");
            if let Pattern::Spinning(p) = &model.pattern {
                // Velodyne's driver numbers rings from the bottom, Ouster's from the top-most beam.
                let ouster = name.starts_with("os");
                assert_eq!(p.ring_zero == RingZero::Top, ouster, "{name}");
                let mut by_ring = BTreeMap::new();
                for beam in &beams {
                    by_ring
                        .entry(beam.ring)
                        .or_insert_with(|| elevation_deg(beam));
                }
                let mut elevations: Vec<f64> = by_ring.into_values().collect();
                if ouster {
                    elevations.reverse();
                }
                assert!(
                    elevations.windows(2).all(|w| w[0] < w[1]),
                    "{name}: rings out of the driver's order"
                );
            }
        }
    }

    #[test]
    fn frames_are_deterministic() {
        for name in ["avia", "mid360", "os0_64", "vlp32c"] {
            let model = preset(name);
            assert_eq!(frame(&model, 7), frame(&model, 7), "{name}");
        }
    }

    #[test]
    fn resolution_matches_the_pattern() {
        let deg = |name: &str| f64::from(preset(name).angular_resolution_rad()).to_degrees();
        assert!((deg("vlp16") - 360.0 / 1808.0).abs() < 1e-3);
        assert!((deg("os1_128") - 360.0 / 2048.0).abs() < 1e-3);
        // Livox: square root of the solid angle per point of a frame.
        assert!((0.3..0.6).contains(&deg("avia")), "{}", deg("avia"));
        assert!((0.8..1.2).contains(&deg("mid360")), "{}", deg("mid360"));
        // D455 at 848 px over 87 deg: about 0.128 deg per central pixel.
        assert!((deg("d455") - 0.128).abs() < 0.002, "{}", deg("d455"));
    }
}

mod velodyne {
    use super::*;

    const VLP16_BY_ID: [f32; 16] = [
        -15.0, 1.0, -13.0, 3.0, -11.0, 5.0, -9.0, 7.0, -7.0, 9.0, -5.0, 11.0, -3.0, 13.0, -1.0,
        15.0,
    ];

    #[test]
    fn vlp16_elevation_table_matches_the_datasheet() {
        let model = preset("vlp16");
        let Pattern::Spinning(p) = &model.pattern else {
            panic!("vlp16 is spinning");
        };
        assert_eq!(p.elevations_deg, VLP16_BY_ID);
        assert_eq!(
            p.rings(),
            vec![0, 8, 1, 9, 2, 10, 3, 11, 4, 12, 5, 13, 6, 14, 7, 15]
        );
        // The first column fires in laser-id order; ring r sits at -15 + 2r degrees.
        let beams = frame(&model, 0);
        for (id, beam) in beams.iter().take(16).enumerate() {
            assert!((elevation_deg(beam) - f64::from(VLP16_BY_ID[id])).abs() < 1e-4);
            assert!((elevation_deg(beam) - (-15.0 + 2.0 * f64::from(beam.ring))).abs() < 1e-4);
        }
    }

    #[test]
    fn vlp16_firing_times_follow_the_manual() {
        let beams = frame(&preset("vlp16"), 0);
        for (column, id) in [
            (0usize, 0usize),
            (0, 15),
            (1, 0),
            (1, 7),
            (1000, 3),
            (1807, 15),
        ] {
            let expected = column as f64 * 55.296e-6 + id as f64 * 2.304e-6;
            let beam = beams[column * 16 + id];
            assert!(
                (f64::from(beam.time_s) - expected).abs() < 1e-8,
                "column {column} laser {id}"
            );
        }
        // The azimuth follows the clockwise rotation: 360 deg x 10 Hz x 55.296 us = 0.199 deg per column.
        let step =
            azimuth_deg(&beams[0]).rem_euclid(360.0) - azimuth_deg(&beams[16]).rem_euclid(360.0);
        assert!((step - 0.199_066).abs() < 1e-4, "step {step}");
    }

    #[test]
    fn vlp32c_pairs_fire_together_and_offsets_apply() {
        let model = preset("vlp32c");
        let beams = frame(&model, 0);
        for k in 0..16 {
            assert_eq!(beams[2 * k].time_s, beams[2 * k + 1].time_s);
        }
        assert!(beams[2].time_s > beams[1].time_s);
        // Laser 0 (azimuth offset +1.4 deg clockwise) and laser 1 (-4.2) fire together 5.6 deg apart.
        let apart = azimuth_deg(&beams[1]) - azimuth_deg(&beams[0]);
        assert!((apart.rem_euclid(360.0) - 5.6).abs() < 1e-3, "{apart}");
    }

    #[test]
    fn hdl64e_blocks_fire_in_step() {
        let model = preset("hdl64e");
        let Pattern::Spinning(p) = &model.pattern else {
            panic!("hdl64e is spinning");
        };
        let FiringTiming::Sequential { slots, .. } = &p.firing else {
            panic!("hdl64e fires sequentially");
        };
        assert_eq!(slots.len(), 64);
        // Firing order puts laser id and id + 32 side by side, sharing a time.
        let beams = frame(&model, 0);
        assert_eq!(beams[0].time_s, beams[1].time_s);
        assert!(elevation_deg(&beams[0]) > 0.0 && elevation_deg(&beams[1]) < -8.0);
    }
}

mod ouster {
    use super::*;

    const HALL: [f32; 64] = [
        -45.30, -43.65, -42.26, -40.61, -39.27, -37.62, -36.29, -34.66, -33.33, -31.73, -30.40,
        -28.83, -27.48, -25.95, -24.58, -23.09, -21.72, -20.24, -18.85, -17.41, -15.98, -14.58,
        -13.16, -11.77, -10.34, -8.98, -7.51, -6.18, -4.69, -3.39, -1.89, -0.60, 0.91, 2.17, 3.71,
        4.97, 6.51, 7.74, 9.32, 10.53, 12.14, 13.36, 14.98, 16.17, 17.83, 19.02, 20.68, 21.85,
        23.54, 24.71, 26.43, 27.59, 29.34, 30.49, 32.27, 33.41, 35.19, 36.33, 38.14, 39.29, 41.11,
        42.26, 44.11, 45.27,
    ];

    #[test]
    fn os0_hall_has_the_measured_rings() {
        let model = preset("os0_64_hall");
        let Pattern::Spinning(p) = &model.pattern else {
            panic!("os0_64_hall is spinning");
        };
        assert_eq!(p.elevations_deg, HALL);
        assert_eq!(p.columns, 2048);
        assert_eq!(p.lidar_origin_z_mm, 36.18);
        let beams = frame(&model, 0);
        let mut by_ring = BTreeMap::new();
        for beam in &beams {
            by_ring
                .entry(beam.ring)
                .or_insert_with(Vec::new)
                .push(elevation_deg(beam));
        }
        assert_eq!(by_ring.len(), 64);
        for (ring, elevations) in by_ring {
            // Ring 0 is the top-most beam (Ouster's driver); the table lists them bottom first.
            let expected = f64::from(HALL[63 - usize::from(ring)]);
            assert_eq!(elevations.len(), 2048);
            assert!(
                elevations.iter().all(|e| (e - expected).abs() < 1e-4),
                "ring {ring}"
            );
        }
        // Azimuths on the 360/2048 grid.
        for beam in beams.iter().step_by(997) {
            let cells = azimuth_deg(beam) / (360.0 / 2048.0);
            assert!((cells - cells.round()).abs() < 1e-3, "{cells}");
        }
    }

    #[test]
    fn columns_share_one_time() {
        let model = preset("os1_128");
        let beams = frame(&model, 0);
        let period = 1.0 / (2048.0 * 10.0);
        for column in [0usize, 1, 777, 2047] {
            let cells = &beams[column * 128..(column + 1) * 128];
            assert!(cells.iter().all(|b| b.time_s == cells[0].time_s));
            assert!((f64::from(cells[0].time_s) - column as f64 * period).abs() < 1e-8);
        }
    }

    #[test]
    fn beam_origins_sit_on_the_offset_circle() {
        let mut model = preset("os0_64");
        let beams = frame(&model, 0);
        let mut origins = Vec::new();
        model.beam_origins_m(&beams, &mut origins);
        assert_eq!(origins.len(), beams.len());
        for origin in &origins {
            assert!((origin[0].hypot(origin[1]) - 0.02767).abs() < 1e-6);
            assert_eq!(
                origin[2], 0.0,
                "the generic presets give points from the optical centre"
            );
        }
        // Ouster's sensor frame: the circle 36.18 mm up.
        if let Pattern::Spinning(p) = &mut model.pattern {
            p.lidar_origin_z_mm = 36.18;
        }
        model.beam_origins_m(&beams, &mut origins);
        assert!(origins.iter().all(|o| (o[2] - 0.03618).abs() < 1e-7));
        // The offset points along the column azimuth: the first column faces backwards (start at 180 deg).
        assert!(origins[0][0] < -0.027);
        let velodyne = preset("vlp16");
        velodyne.beam_origins_m(&frame(&velodyne, 0), &mut origins);
        assert!(origins.iter().all(|o| *o == [0.0; 3]));
    }
}

mod livox {
    use super::*;

    /// Fraction of the field of view's 0.5 deg (azimuth, elevation) cells hit by frames `0..frames`.
    fn coverage(model: &SensorModel, frames: u64) -> f64 {
        let fov = model.fov();
        let cell = 0.5f64.to_radians();
        let mut hit = HashSet::new();
        for index in 0..frames {
            for beam in frame(model, index) {
                let az = azimuth_deg(&beam).to_radians() - f64::from(fov.azimuth_min_rad);
                let el = elevation_deg(&beam).to_radians() - f64::from(fov.elevation_min_rad);
                hit.insert(((az / cell) as i64, (el / cell) as i64));
            }
        }
        let width = (f64::from(fov.azimuth_max_rad - fov.azimuth_min_rad) / cell).ceil();
        let height = (f64::from(fov.elevation_max_rad - fov.elevation_min_rad) / cell).ceil();
        hit.len() as f64 / (width * height)
    }

    #[test]
    fn coverage_grows_frame_after_frame() {
        // Measured (bounding-box cells, which a circular field of view fills to at most ~79%):
        // avia 0.48 / 0.69 / 0.81, mid40 0.28 / 0.47 / 0.76, horizon 0.65 / 0.76 / 0.82,
        // mid360 0.22 / 0.38 / 0.61 after 1 / 2 / 5 frames.
        for (name, after_one, after_five) in [
            ("avia", 0.35, 0.7),
            ("mid40", 0.2, 0.6),
            ("horizon", 0.5, 0.75),
            ("mid360", 0.15, 0.5),
        ] {
            let model = preset(name);
            let (c1, c2, c5) = (
                coverage(&model, 1),
                coverage(&model, 2),
                coverage(&model, 5),
            );
            assert!(c1 > after_one, "{name}: {c1} after 1 frame");
            assert!(c2 > c1 * 1.1, "{name}: {c1} -> {c2}");
            assert!(c5 > c2 * 1.05 && c5 > after_five, "{name}: {c2} -> {c5}");
        }
    }

    #[test]
    fn successive_frames_differ() {
        for name in ["avia", "mid40", "horizon", "mid360"] {
            let model = preset(name);
            let (a, b) = (frame(&model, 0), frame(&model, 1));
            assert_eq!(a.len(), b.len());
            let same = a.iter().zip(&b).filter(|(x, y)| x.dir == y.dir).count();
            assert!(
                same < a.len() / 100,
                "{name}: {same} of {} directions repeat",
                a.len()
            );
            // Times and lines restart with each frame.
            assert!(
                a.iter()
                    .zip(&b)
                    .all(|(x, y)| x.time_s == y.time_s && x.ring == y.ring)
            );
        }
    }

    #[test]
    fn angles_are_not_quantised() {
        for name in ["avia", "mid40", "horizon", "mid360"] {
            let beams = frame(&preset(name), 0);
            let azimuths: HashSet<u64> = beams.iter().map(|b| azimuth_deg(b).to_bits()).collect();
            let elevations: HashSet<u64> =
                beams.iter().map(|b| elevation_deg(b).to_bits()).collect();
            assert!(
                azimuths.len() > beams.len() * 9 / 10,
                "{name}: {} azimuths",
                azimuths.len()
            );
            assert!(
                elevations.len() > beams.len() * 9 / 10,
                "{name}: {} elevations",
                elevations.len()
            );
            // MARSIM's outputs fall on a 0.2 deg (or 1 deg) grid; these must not.
            let on_grid = beams
                .iter()
                .filter(|b| {
                    let cells = elevation_deg(b) / 0.2;
                    (cells - cells.round()).abs() < 1e-3
                })
                .count();
            assert!(
                on_grid < beams.len() / 50,
                "{name}: {on_grid} on a 0.2 deg grid"
            );
        }
    }

    #[test]
    fn points_have_their_own_times_and_cycle_through_lines() {
        let beams = frame(&preset("avia"), 0);
        for (k, beam) in beams.iter().enumerate().take(100) {
            assert!((f64::from(beam.time_s) - k as f64 / 240_000.0).abs() < 1e-9);
            assert_eq!(usize::from(beam.ring), k % 6);
        }
    }

    #[test]
    fn late_frames_stay_valid() {
        let model = preset("mid360");
        let beams = frame(&model, 10_000_000_000);
        assert_eq!(beams.len(), 20_000);
        let (min, max) = extent(beams.iter().map(elevation_deg));
        assert!(min > -7.001 && max < 52.001 && min < -6.0 && max > 51.0);
    }
}

mod camera {
    use super::*;

    #[test]
    fn d455_noise_is_not_squared_twice() {
        let model = preset("d455");
        let Pattern::Pinhole(p) = &model.pattern else {
            panic!("d455 is a pinhole camera");
        };
        let k = p.depth_sigma_quadratic(0.08, 0.095);
        assert!((f64::from(model.physics.range_sigma_quadratic) - k).abs() < 1e-7);
        // sigma_z = k z^2: 1.9 mm at 1 m, 30 mm at 4 m for 848 px; 1.2 mm at 1 m at 1280 px
        // (docs/algorithms.md, section 15).
        assert!((k - 0.001_885).abs() < 1e-6);
        let wide = Pinhole {
            width: 1280,
            height: 720,
            ..p.clone()
        };
        assert!((wide.depth_sigma_quadratic(0.08, 0.095) * 1000.0 - 1.25).abs() < 0.01);
    }

    #[test]
    fn pixels_are_row_major_from_the_top_left() {
        let model = preset("d455");
        let beams = frame(&model, 0);
        let (first, last) = (beams[0], beams[beams.len() - 1]);
        assert!(
            first.dir[1] > 0.0 && first.dir[2] > 0.0,
            "top-left pixel looks up and left"
        );
        assert!(last.dir[1] < 0.0 && last.dir[2] < 0.0);
        assert_eq!((first.ring, last.ring), (0, 479));
        assert!(beams.iter().all(|b| b.time_s == 0.0));
        // The ray through a pixel centre: pixel (424, 240) lies half a pixel right of and below the axis.
        let (fx, fy) = match &model.pattern {
            Pattern::Pinhole(p) => p.focal_px(),
            _ => unreachable!(),
        };
        let centre = beams[240 * 848 + 424];
        let (y, z) = (centre.dir[1] / centre.dir[0], centre.dir[2] / centre.dir[0]);
        assert!((f64::from(y) + 0.5 / fx).abs() < 1e-6 && (f64::from(z) + 0.5 / fy).abs() < 1e-6);
    }
}

mod toml_files {
    use super::*;

    #[test]
    fn every_preset_round_trips() {
        for name in SensorModel::preset_names() {
            let model = preset(name);
            let text = model.to_toml();
            match SensorModel::from_toml(&text) {
                Ok(back) => assert_eq!(back, model, "{name}"),
                Err(e) => panic!("{name}: {e}\n{text}"),
            }
        }
    }

    const PINHOLE: &str = "name = \"cam\"\nrate_hz = 10.0\n\n[physics]\nmin_range_m = 0.2\nmax_range_m = 5.0\n\n\
                           [pattern]\nkind = \"pinhole\"\nwidth = 64\nheight = 48\nhfov_deg = 60.0\nvfov_deg = 45.0\n";

    fn field_of(text: &str) -> (String, String) {
        match SensorModel::from_toml(text) {
            Err(SensorError::Parse { field, .. }) => (field, "parse".into()),
            Err(SensorError::Invalid { field, .. }) => (field, "invalid".into()),
            Err(other) => panic!("unexpected error {other}"),
            Ok(_) => panic!("accepted:\n{text}"),
        }
    }

    #[test]
    fn a_user_file_loads() {
        let model = SensorModel::from_toml(PINHOLE).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(model.beams_per_frame(), 64 * 48);
        assert_eq!(model.physics.default_reflectance, 0.5, "defaults apply");
    }

    #[test]
    fn bad_files_name_the_field() {
        let cases = [
            (
                PINHOLE.replace("rate_hz = 10.0", "rate_hz = \"fast\""),
                "rate_hz",
                "parse",
            ),
            (
                PINHOLE.replace("height = 48\n", ""),
                "pattern.height",
                "parse",
            ),
            (
                PINHOLE.replace("height = 48", "height = \"tall\""),
                "pattern.height",
                "parse",
            ),
            (
                PINHOLE.replace("max_range_m = 5.0", "max_range_m = 5.0\nmax_rang = 3.0"),
                "physics.max_rang",
                "parse",
            ),
            (
                PINHOLE.replace("\"pinhole\"", "\"fisheye\""),
                "pattern.kind",
                "parse",
            ),
            (
                PINHOLE.replace("max_range_m = 5.0", "max_range_m = 0.1"),
                "physics.max_range_m",
                "invalid",
            ),
            (
                PINHOLE.replace("width = 64", "width = 0"),
                "pattern.width",
                "invalid",
            ),
            (
                PINHOLE.replace("rate_hz = 10.0", "rate_hz = -1.0"),
                "rate_hz",
                "invalid",
            ),
        ];
        for (text, field, kind) in cases {
            assert_eq!(
                field_of(&text),
                (field.to_string(), kind.to_string()),
                "{text}"
            );
        }
        // The message says what is wrong and where.
        let Err(e) = SensorModel::from_toml(&PINHOLE.replace("height = 48", "height = \"tall\""))
        else {
            panic!("accepted");
        };
        let text = e.to_string();
        assert!(
            text.contains("line 11") && text.contains("`pattern.height`") && text.contains("u32"),
            "{text}"
        );
    }

    #[test]
    fn bad_spinning_files_name_the_field() {
        let vlp16 = preset("vlp16").to_toml();
        let cases = [
            (
                vlp16.replace("cycle_us = 55.296", "cycle_us = \"slow\""),
                "pattern.firing.cycle_us",
                "parse",
            ),
            (
                vlp16.replace("columns = 1808", "columns = 1900"),
                "pattern.columns",
                "invalid",
            ),
            (
                vlp16.replace("columns = 1808", "columns = 0"),
                "pattern.columns",
                "invalid",
            ),
            (
                vlp16.replace("step_us = 2.304", "step_us = 4.0"),
                "pattern.firing.step_us",
                "invalid",
            ),
            (
                vlp16.replace("    -15.0,\n", "    -95.0,\n"),
                "pattern.elevations_deg[0]",
                "invalid",
            ),
        ];
        for (text, field, kind) in cases {
            assert_ne!(text, vlp16, "the replacement must apply");
            assert_eq!(field_of(&text), (field.to_string(), kind.to_string()));
        }
    }

    #[test]
    fn invalid_models_yield_no_beams() {
        let mut model = preset("vlp16");
        if let Pattern::Spinning(p) = &mut model.pattern {
            p.elevations_deg.clear();
        }
        let mut beams = vec![frame(&preset("mid40"), 0)[0]];
        model.beams(0, &mut beams);
        assert!(beams.is_empty());
    }
}
