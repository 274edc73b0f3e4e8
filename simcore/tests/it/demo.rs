//! The built-in demo (issue 11): the site generates deterministically and holds what `aerie demo` flies through;
//! its raw scan holds the structures and the artefacts, is reproducible byte for byte, and the default
//! preparation removes most of the artefacts while keeping the structures. Scans use the 1-degree preview grid
//! so the tests run in seconds in debug builds.

use std::collections::BTreeSet;

use aerie_pipeline::io::{self, ReadOptions};
use aerie_pipeline::prepare::{Recipe, prepare};
use aerie_pipeline::{Cloud, NoProgress};
use aerie_simcore::demo::{
    BUILTIN_TOML, DemoConfig, DemoError, DemoSite, DemoSpec, Label, OUTLIER_CLEARANCE_M, RawScan,
    generate, raw_scan, write_raw_scan,
};
use nalgebra::Vector3;

type V3 = Vector3<f64>;

/// Position of `p` in the building's frame: (along the corridor, across it, height).
fn in_building(spec: &DemoSpec, p: [f64; 3]) -> [f64; 3] {
    let (s, c) = spec.building.yaw.to_radians().sin_cos();
    let (dx, dy) = (
        p[0] - spec.building.centre[0],
        p[1] - spec.building.centre[1],
    );
    [c * dx + s * dy, -s * dx + c * dy, p[2]]
}

fn world(cloud: &Cloud, i: usize) -> [f64; 3] {
    cloud.world(i)
}

/// Horizontal distance from `p` to the person's walking line.
fn off_walk(site: &DemoSite, p: [f64; 3]) -> f64 {
    let [a, b] = site.person.path_m;
    let (a, b, q) = (
        V3::new(a[0], a[1], 0.0),
        V3::new(b[0], b[1], 0.0),
        V3::new(p[0], p[1], 0.0),
    );
    let s = ((q - a).dot(&(b - a)) / (b - a).norm_squared()).clamp(0.0, 1.0);
    (q - (a + (b - a) * s)).norm()
}

mod spec {
    use super::*;

    #[test]
    fn the_shipped_description_parses_and_bad_ones_name_the_field() {
        let spec = DemoSpec::from_toml(BUILTIN_TOML).unwrap();
        assert_eq!(spec, DemoSpec::builtin());
        assert!((4..=6).contains(&spec.scan.stations.len()));
        let unknown = BUILTIN_TOML.replace("[person]\n", "[person]\nhat = 1\n");
        match DemoSpec::from_toml(&unknown) {
            Err(DemoError::Spec {
                line: Some(l),
                message,
            }) => {
                assert!(message.contains("hat"), "{message}");
                assert_eq!(unknown.lines().nth(l - 1), Some("hat = 1"));
            }
            other => panic!("{other:?}"),
        }
        let negative = BUILTIN_TOML.replace("step = 0.25", "step = -1.0");
        let e = DemoSpec::from_toml(&negative).unwrap_err();
        assert!(e.to_string().contains("scan.step"), "{e}");
        let mut narrow = spec.clone();
        narrow.person.during = vec![9];
        assert!(
            narrow
                .validate()
                .unwrap_err()
                .to_string()
                .contains("person.during")
        );
    }
}

mod site {
    use super::*;

    #[test]
    fn generation_is_deterministic_for_a_seed() {
        let spec = DemoSpec::builtin();
        let a = generate(&spec, 7);
        assert_eq!(a, generate(&spec, 7));
        let b = generate(&spec, 8);
        assert_ne!(a.objects, b.objects, "another seed, another forest");
        assert_ne!(a.terrain, b.terrain);
    }

    #[test]
    fn the_site_holds_every_structure_the_description_asks_for() {
        let spec = DemoSpec::builtin();
        let site = generate(&spec, 1);
        let count = |l: Label| site.objects.iter().filter(|o| o.label == l).count();
        assert_eq!(count(Label::Trunk), spec.forest.trees);
        assert!(count(Label::Crown) >= spec.forest.trees * spec.forest.crown_spheres[0]);
        // A pole and its cross-arm each; the wires of every span in straight pieces.
        assert_eq!(count(Label::Pole), 2 * spec.power_line.poles);
        assert!(count(Label::Wire) >= spec.power_line.wires * (spec.power_line.poles - 1));
        assert_eq!(count(Label::Vehicle), 2 * spec.parking.vehicles);
        assert!(count(Label::Wall) >= 6 && count(Label::Roof) == 1);
        // The trunks lean, and differ in radius.
        let radii: BTreeSet<u64> = site
            .objects
            .iter()
            .filter_map(|o| match o.surface {
                aerie_simcore::scene::Surface::Tube { a, b, radius } if o.label == Label::Trunk => {
                    assert!(b[2] > a[2]);
                    Some((radius * 1e4) as u64)
                }
                _ => None,
            })
            .collect();
        assert!(radii.len() > spec.forest.trees / 2);
        // Stations stand in the open, above the ground.
        for s in &site.stations {
            let (_, _, d) = site.nearest(s.position_m);
            assert!(d > 0.5, "a station is {d} m from a surface");
        }
        // About 60 x 40 m.
        let [hx, hy] = site.terrain.half_extent_m;
        assert!((50.0..=70.0).contains(&(2.0 * hx)) && (35.0..=50.0).contains(&(2.0 * hy)));
    }

    #[test]
    fn a_quad_fits_through_the_corridor() {
        let spec = DemoSpec::builtin();
        let site = generate(&spec, 1);
        let [a, b] = site.corridor_m.map(V3::from);
        let along = (b - a).normalize();
        let across = V3::z().cross(&along);
        // A box 2.0 m wide and 1.0 m high swept along the whole corridor meets nothing.
        for dy in [-1.0, -0.5, 0.0, 0.5, 1.0] {
            for dz in [-0.5, 0.0, 0.5] {
                let o = a + across * dy + V3::z() * dz;
                let hit = site.raycast(o.into(), along.into(), (b - a).norm(), -1.0);
                assert!(hit.is_none(), "blocked at ({dy}, {dz}): {hit:?}");
            }
        }
        // And it is a corridor: walls on both sides, within reach, along its length.
        for f in [0.2, 0.4, 0.6, 0.8] {
            let mid = a + (b - a) * f;
            let width: f64 = [across, -across]
                .iter()
                .map(|d| {
                    site.raycast(mid.into(), (*d).into(), 20.0, -1.0)
                        .expect("a wall")
                        .range_m
                })
                .sum();
            assert!(
                width >= 2.0 && width < spec.building.size[1],
                "{f}: {width}"
            );
        }
    }
}

mod scan {
    use super::*;

    /// The preview scan, made once for all the tests of this module.
    fn preview() -> &'static RawScan {
        static SCAN: std::sync::OnceLock<RawScan> = std::sync::OnceLock::new();
        SCAN.get_or_init(|| raw_scan(&DemoConfig::preview()).unwrap())
    }

    #[test]
    fn points_lie_on_what_their_labels_say() {
        let scan = preview();
        let (cloud, site) = (&scan.cloud, &scan.site);
        assert_eq!(scan.labels.len(), cloud.len());
        assert_eq!(scan.report.points, cloud.len());
        let mut off = 0;
        let mut checked = 0;
        for (i, &label) in scan.labels.iter().enumerate() {
            if matches!(label, Label::Outlier | Label::Mixed | Label::Person) {
                continue;
            }
            let (nearest, _, d) = site.nearest(world(cloud, i));
            checked += 1;
            // Range noise is 4 mm + 0.1 mm per metre: 3 cm is over 3 sigma at any range.
            if d > 0.03 || (nearest != label && d > 0.01) {
                off += 1;
            }
        }
        assert!(
            off * 1000 < checked,
            "{off} of {checked} points are off their surface"
        );
    }

    #[test]
    fn the_scan_holds_the_structures() {
        let scan = preview();
        let spec = DemoSpec::builtin();
        let by = |l: Label| scan.report.points_by_label.get(&l).copied().unwrap_or(0);
        for l in [
            Label::Ground,
            Label::Trunk,
            Label::Crown,
            Label::Wall,
            Label::Roof,
            Label::Pole,
        ] {
            assert!(by(l) > 100, "{l:?}: {}", by(l));
        }
        assert!(by(Label::Wire) > 10 && by(Label::Vehicle) > 100);
        // Points on both corridor walls, seen from the station inside it.
        let half = 0.5 * spec.building.corridor_width;
        let mut sides = [0, 0];
        for (i, &l) in scan.labels.iter().enumerate() {
            let q = in_building(&spec, world(&scan.cloud, i));
            if l == Label::Wall
                && (q[1].abs() - half).abs() < 0.05
                && q[0].abs() < 0.4 * spec.building.size[0]
            {
                sides[usize::from(q[1] > 0.0)] += 1;
            }
        }
        assert!(sides[0] > 200 && sides[1] > 200, "{sides:?}");
        // Most trunks are seen.
        let trunks: BTreeSet<usize> = scan
            .labels
            .iter()
            .enumerate()
            .filter(|&(_, &l)| l == Label::Trunk)
            .filter_map(|(i, _)| scan.site.nearest(world(&scan.cloud, i)).1)
            .collect();
        assert!(
            trunks.len() * 10 >= spec.forest.trees * 8,
            "{} trunks seen",
            trunks.len()
        );
    }

    #[test]
    fn the_artefacts_are_there_and_few() {
        let scan = preview();
        let (cloud, site) = (&scan.cloud, &scan.site);
        let spec = DemoSpec::builtin();
        let by = |l: Label| scan.report.points_by_label.get(&l).copied().unwrap_or(0);
        // Outliers: about the share asked of the beams, in the air.
        let expected = spec.scan.outlier_share * scan.report.beams as f64;
        let outliers = by(Label::Outlier) as f64;
        assert!(
            outliers > 0.5 * expected && outliers < 1.2 * expected,
            "{outliers} for {expected}"
        );
        assert!(outliers < 0.01 * cloud.len() as f64);
        let airborne = |l: Label, far: f64| {
            let of: Vec<usize> = (0..cloud.len()).filter(|&i| scan.labels[i] == l).collect();
            let n = of
                .iter()
                .filter(|&&i| site.nearest(world(cloud, i)).2 > far)
                .count();
            (n, of.len())
        };
        let (far, all) = airborne(Label::Outlier, OUTLIER_CLEARANCE_M - 0.05);
        assert!(far == all, "{far} of {all} outliers are in the air");
        // Mixed points: between the two sides of a silhouette, off every surface.
        let (far, all) = airborne(Label::Mixed, 0.05);
        assert!(
            all > 100 && far * 2 > all,
            "{far} of {all} mixed points off the surfaces"
        );
        // Density falls with range: the ground near the first station is denser than farther out.
        let s = site.stations[1].position_m;
        let ring = |r0: f64, r1: f64| {
            let n = (0..cloud.len())
                .filter(|&i| scan.labels[i] == Label::Ground)
                .filter(|&i| {
                    let p = world(cloud, i);
                    (r0..r1).contains(&(p[0] - s[0]).hypot(p[1] - s[1]))
                })
                .filter(|&i| (scan.cloud.meta.scans[1].points).contains(&i))
                .count();
            n as f64 / (std::f64::consts::PI * (r1 * r1 - r0 * r0))
        };
        let (near, far) = (ring(3.0, 5.0), ring(15.0, 17.0));
        assert!(near > 5.0 * far, "{near} vs {far} points per square metre");
    }

    #[test]
    fn the_person_is_where_they_walk_and_only_while_they_walk() {
        let scan = preview();
        let spec = DemoSpec::builtin();
        let times = scan.cloud.time().unwrap();
        let mut seen = 0;
        for (k, st) in scan.report.stations.iter().enumerate() {
            if spec.person.during.contains(&k) {
                seen += st.person_points;
            } else {
                assert_eq!(st.person_points, 0, "station {k}");
            }
        }
        assert!(seen > 0);
        for (i, &l) in scan.labels.iter().enumerate() {
            if l != Label::Person {
                continue;
            }
            let p = world(&scan.cloud, i);
            let body = scan
                .site
                .person
                .at(times[i], &scan.site.terrain)
                .expect("present");
            assert!(
                body.distance(p) < 0.03,
                "a person point {} m off the body",
                body.distance(p)
            );
            assert!(off_walk(&scan.site, p) < spec.person.radius + 0.05);
        }
    }
}

mod file {
    use super::*;

    #[test]
    fn the_raw_scan_file_is_reproducible_byte_for_byte_whatever_the_threads() {
        let dir = tempfile::tempdir().unwrap();
        let config = DemoConfig::preview();
        let a = dir.path().join("new/a.laz");
        let b = dir.path().join("b.laz");
        let report = write_raw_scan(&a, &config).unwrap();
        let one_thread = rayon::ThreadPoolBuilder::new()
            .num_threads(1)
            .build()
            .unwrap();
        one_thread.install(|| write_raw_scan(&b, &config)).unwrap();
        let (ba, bb) = (std::fs::read(&a).unwrap(), std::fs::read(&b).unwrap());
        assert!(ba == bb, "two writes of the same seed differ");
        let mut other = config.clone();
        other.seed += 1;
        let c = dir.path().join("c.laz");
        write_raw_scan(&c, &other).unwrap();
        assert!(std::fs::read(&c).unwrap() != ba);
        // What a user's reader sees: every point, intensity, GPS time, the station as point source id.
        let cloud = io::read(&a, None, &ReadOptions::default()).unwrap();
        assert_eq!(cloud.len(), report.points);
        assert!(cloud.intensity().is_some() && cloud.time().is_some());
        let sources: BTreeSet<u64> = cloud
            .extra("point_source_id")
            .expect("point source id")
            .values
            .to_f64()
            .iter()
            .map(|&v| v as u64)
            .collect();
        let want: BTreeSet<u64> = (1..=report.stations.len() as u64).collect();
        assert_eq!(sources, want);
    }

    #[test]
    fn e57_carries_the_station_poses() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("scan.e57");
        let report = write_raw_scan(&path, &DemoConfig::preview()).unwrap();
        let cloud = io::read(&path, None, &ReadOptions::default()).unwrap();
        assert_eq!(cloud.meta.scans.len(), report.stations.len());
        for (s, r) in cloud.meta.scans.iter().zip(&report.stations) {
            let world_from_scan = s.world_from_scan.expect("a pose");
            let t = world_from_scan.translation.vector;
            assert!((t - Vector3::from(r.position_m)).amax() < 1e-6, "{t:?}");
            assert_eq!(s.points.len(), r.points);
        }
    }

    #[test]
    fn prepare_removes_most_outliers_and_keeps_the_structures() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("raw.laz");
        let scan = raw_scan(&DemoConfig::preview()).unwrap();
        io::write(&scan.cloud, &path, None, &Default::default()).unwrap();
        let raw = io::read(&path, None, &ReadOptions::default()).unwrap();
        let prepared = prepare(vec![(raw.clone(), None)], &Recipe::default(), &NoProgress).unwrap();
        let map = prepared.map.to_cloud().unwrap();
        // Downsampling keeps original points, so each map point is a raw point: find its label by position
        // (LAZ stores 0.1 mm steps; the key rounds to them).
        let key = |p: [f64; 3]| p.map(|v| (v * 1e4).round() as i64);
        let in_map: BTreeSet<[i64; 3]> = (0..map.len()).map(|i| key(map.world(i))).collect();
        let site = &scan.site;
        let outliers: Vec<[f64; 3]> = (0..raw.len())
            .filter(|&i| scan.labels[i] == Label::Outlier)
            .map(|i| raw.world(i))
            .collect();
        let kept = |ps: &[[f64; 3]]| ps.iter().filter(|&&p| in_map.contains(&key(p))).count();
        assert!(outliers.len() > 100);
        let survivors = kept(&outliers);
        // Outliers are a metre or more clear of every surface (OUTLIER_CLEARANCE_M); statistical outlier removal
        // takes most of them (those nearest a dense surface can pass for it).
        assert!(
            survivors * 3 < outliers.len(),
            "{survivors} of {} outliers survive",
            outliers.len()
        );
        // The structures survive: at least 80% of the trunks, wall pieces, vehicles and poles seen keep points,
        // and half of the wire pieces (at this coarse grid a wire is a sparse line of points, which a statistical
        // filter thins).
        let objects_near = |cloud: &Cloud, l: Label| -> BTreeSet<usize> {
            (0..cloud.len())
                .map(|i| site.nearest(cloud.world(i)))
                .filter(|&(label, _, d)| label == l && d < 0.05)
                .filter_map(|(_, object, _)| object)
                .collect()
        };
        for (l, share) in [
            (Label::Trunk, 8),
            (Label::Wall, 8),
            (Label::Vehicle, 8),
            (Label::Pole, 8),
            (Label::Wire, 5),
        ] {
            let (before, after) = (objects_near(&raw, l).len(), objects_near(&map, l).len());
            assert!(
                after * 10 >= before * share,
                "{l:?}: {after} of {before} objects keep points"
            );
        }
    }
}
