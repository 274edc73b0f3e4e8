//! Tests of the point cloud: construction, columns, selection, joining and the serialised scan info.

use super::*;

#[test]
fn scan_info_keeps_the_stored_pose_form() {
    // As `aerie info --json` has always shown a scan; a missing pose reads as none.
    let text = r#"{"name":"s","points":{"start":0,"end":3},"world_from_scan":{"rotation_wxyz":[0.7071067811865476,0.0,0.0,0.7071067811865476],"translation":[500010.0,4000005.0,101.5]}}"#;
    let s: ScanInfo = serde_json::from_str(text).unwrap();
    assert_eq!(serde_json::to_string(&s).unwrap(), text);
    let none = r#"{"name":"s","points":{"start":0,"end":3},"world_from_scan":null}"#;
    let s: ScanInfo = serde_json::from_str(none).unwrap();
    assert_eq!(serde_json::to_string(&s).unwrap(), none);
    let s: ScanInfo = serde_json::from_str(r#"{"name":"s","points":{"start":0,"end":3}}"#).unwrap();
    assert_eq!(s.world_from_scan, None);
}

#[test]
fn large_coordinates_keep_millimetres() {
    let mut c = Cloud::from_positions([637_000.0, 851_000.0, 400.0], vec![[123.456, 789.012, 3.5]]);
    let w = c.world(0);
    assert!((w[0] - 637_123.456).abs() < 1e-4, "{w:?}");
    c.set_origin([637_100.0, 851_700.0, 0.0]);
    let w2 = c.world(0);
    assert!((w2[0] - 637_123.456).abs() < 1e-3 && (w2[1] - 851_789.012).abs() < 1e-3);
}

#[test]
fn append_drops_attributes_missing_on_one_side() {
    let mut a = Cloud::from_columns(
        [0.0; 3],
        Columns {
            positions: vec![[0.0; 3]],
            intensity: Some(vec![1.0]),
            ring: Some(vec![3]),
            ..Columns::default()
        },
    )
    .unwrap();
    let mut b = Cloud::from_positions([10.0, 0.0, 0.0], vec![[1.0, 0.0, 0.0]]);
    b.set_intensity(Some(vec![2.0])).unwrap();
    a.append(&b);
    assert_eq!(a.len(), 2);
    assert_eq!(a.intensity(), Some(&[1.0, 2.0][..]));
    assert_eq!(a.ring(), None);
    assert_eq!(a.positions()[1], [11.0, 0.0, 0.0]);
    a.validate().unwrap();
}

/// Ten points on the x axis at x = i, intensity i, an extra dimension 10 i, in two scans of five.
fn numbered() -> Cloud {
    let mut c = Cloud::from_columns(
        [0.0; 3],
        Columns {
            positions: (0..10).map(|i| [i as f32, 0.0, 0.0]).collect(),
            intensity: Some((0..10).map(|i| i as f32).collect()),
            ..Columns::default()
        },
    )
    .unwrap();
    c.push_extra(ExtraDim::new(
        "tag",
        (0..10).map(|i| 10 * i as u16).collect::<Vec<_>>(),
    ))
    .unwrap();
    c.meta.scans = ["a", "b"]
        .iter()
        .enumerate()
        .map(|(s, name)| ScanInfo {
            name: name.to_string(),
            points: 5 * s..5 * s + 5,
            world_from_scan: None,
        })
        .collect();
    c
}

/// Every column of point `j` still tells which input point it was.
fn consistent(c: &Cloud) -> Vec<u32> {
    let tag = c.extra("tag").unwrap().values.to_f64();
    (0..c.len())
        .map(|j| {
            let i = c.positions()[j][0];
            assert_eq!(c.intensity().unwrap()[j], i);
            assert_eq!(tag[j], 10.0 * i as f64);
            i as u32
        })
        .collect()
}

#[test]
fn retain_keeps_flagged_points_and_renumbers_scans() {
    let mut c = numbered();
    let keep: Vec<bool> = (0..10).map(|i| i % 3 != 0).collect();
    c.retain(&keep).unwrap();
    assert_eq!(consistent(&c), vec![1, 2, 4, 5, 7, 8]);
    // Scan a held 0..5 (kept 1, 2, 4), scan b 5..10 (kept 5, 7, 8).
    assert_eq!(c.meta.scans[0].points, 0..3);
    assert_eq!(c.meta.scans[1].points, 3..6);
    assert!(c.retain(&[true]).is_err());
    assert_eq!(c.len(), 6);
}

#[test]
fn reorders_move_every_column_together() {
    let order: Vec<u32> = vec![3, 0, 9, 1, 8, 2, 7, 4, 6, 5];
    let reorder = |c: &mut Cloud| {
        c.lend_positions(|p| {
            let positions = order.iter().map(|&i| p[i as usize]).collect();
            (
                Returned::Reordered {
                    positions,
                    order: order.clone(),
                },
                7,
            )
        })
    };
    // Lent positions handed back in a new order: the other columns follow them, scan ranges go.
    let mut c = numbered();
    assert_eq!(reorder(&mut c), 7);
    assert_eq!(consistent(&c), order);
    assert!(c.meta.scans.iter().all(|s| s.points.is_empty()));
    // One scan holding every point still does after a reorder.
    let mut c = numbered();
    c.meta.scans.truncate(1);
    c.meta.scans[0].points = 0..10;
    reorder(&mut c);
    assert_eq!(c.meta.scans[0].points, 0..10);
    // Handed back in order, nothing moves.
    let mut c = numbered();
    c.lend_positions(|p| (Returned::InOrder(p), ()));
    assert_eq!(consistent(&c), (0..10).collect::<Vec<_>>());
    assert_eq!(c.meta.scans[1].points, 5..10);
}
