//! The tools behind `bench/dynamic_peers.py` (issue 78): simulate sequences with moving things in the benchmark
//! layout, clean one with `filters.moving`, score a cleaned map, and run the stage on the real balm hall.
//!
//! cargo build --profile fast -p aerie-simcore --example moving_bench
//! moving_bench generate OUT_DIR            # demo_avia, demo_os0, hall_avia, hall_os0 under OUT_DIR
//! moving_bench clean SEQ_DIR OUT.pcd       # prints {"points_in", "points_out", "stage_s", "total_s"}
//! moving_bench score SEQ_DIR CLEANED.pcd   # prints SA, DA, AA and counts as JSON
//! moving_bench balm FUSED.laz POSES.csv OUT_DIR   # removed points, a top view, the scans in the layout

use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::Instant;

use aerie_pipeline::dynamic_bench;
use aerie_pipeline::filters::moving::{MovingParams, Viewpoints, moving_mask};
use aerie_pipeline::io::{self, ReadOptions, poses};
use aerie_pipeline::{Cloud, NoProgress};
use aerie_simcore::Map;
use aerie_simcore::moving_sequence::{
    DemoWorld, Mover, MoverPath, MoverShape, SequenceSpec, demo_spec, ground_of, person, simulate,
    write_sequence,
};
use anyhow::{Context, bail};

fn main() -> anyhow::Result<()> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let a: Vec<&str> = args.iter().map(String::as_str).collect();
    match a.as_slice() {
        ["generate", out] => generate(Path::new(out)),
        ["clean", seq, out] => clean(Path::new(seq), Path::new(out)),
        ["score", seq, cleaned] => score(Path::new(seq), Path::new(cleaned)),
        ["balm", laz, poses, out] => balm(Path::new(laz), Path::new(poses), Path::new(out)),
        _ => bail!(
            "usage: moving_bench generate OUT | clean SEQ OUT.pcd | score SEQ CLEANED.pcd | balm LAZ POSES OUT"
        ),
    }
}

/// The shared data folder (`../shared/data` beside the repository, or `$AERIE_SHARED_DATA`).
fn shared(rel: &str) -> anyhow::Result<PathBuf> {
    let dir = std::env::var_os("AERIE_SHARED_DATA").map_or_else(
        || Path::new(env!("CARGO_MANIFEST_DIR")).join("../../shared/data"),
        PathBuf::from,
    );
    let path = dir.join(rel);
    anyhow::ensure!(
        path.exists(),
        "{} is absent: put the shared data beside the repository",
        path.display()
    );
    Ok(path)
}

fn generate(out: &Path) -> anyhow::Result<()> {
    let world = DemoWorld::new(1)?;
    for sensor in ["avia", "os0_64"] {
        let mut spec = demo_spec(sensor, 60);
        spec.speed_m_s = 0.9;
        spec.frame_spacing_s = 0.4;
        let started = Instant::now();
        let frames = simulate(DemoWorld::placeholder_map()?, &[&world], &spec, &|x, y| {
            world.ground(x, y)
        })?;
        let dir = out.join(format!("demo_{}", short(sensor)));
        write_sequence(&dir, &frames)?;
        report(&dir, &frames, started);
    }
    let hall = shared("maps/hall_map_20cm.pcd")?;
    let path: Vec<[f64; 3]> = poses::read_poses(&shared("balm/poses.csv")?, None)?
        .iter()
        .step_by(4)
        .map(|p| p.world_from_sensor.translation.vector.into())
        .collect();
    for sensor in ["avia", "os0_64"] {
        let map = Map::open(&hall, Some(0.2))?;
        let ground = ground_of(&map.view());
        let spec = hall_spec(sensor, path.clone());
        let started = Instant::now();
        let frames = simulate(map, &[], &spec, &ground)?;
        let dir = out.join(format!("hall_{}", short(sensor)));
        write_sequence(&dir, &frames)?;
        report(&dir, &frames, started);
    }
    Ok(())
}

/// The stage's parameters: the defaults, or a `filters.moving` TOML table in `$MOVING_PARAMS` (for sweeps).
fn params() -> anyhow::Result<MovingParams> {
    Ok(match std::env::var("MOVING_PARAMS") {
        Ok(text) => toml::from_str(&text)?,
        Err(_) => MovingParams::default(),
    })
}

fn short(sensor: &str) -> &str {
    sensor.split('_').next().unwrap_or(sensor)
}

fn report(dir: &Path, frames: &[aerie_simcore::moving_sequence::SimFrame], started: Instant) {
    let points: usize = frames.iter().map(|f| f.cloud.len()).sum();
    let dynamic: usize = frames
        .iter()
        .map(|f| f.dynamic.iter().filter(|&&d| d).count())
        .sum();
    println!(
        "{}: {} frames, {points} points, {dynamic} dynamic, {:.1} s",
        dir.display(),
        frames.len(),
        started.elapsed().as_secs_f64()
    );
}

/// The hall sequence: the sensor walks the real sequence's path at 1.2 m/s; a person walks 3 m ahead, a cart
/// 7 m ahead, another person 5 m behind, and the operator 1 m behind the sensor.
fn hall_spec(sensor: &str, path_m: Vec<[f64; 3]>) -> SequenceSpec {
    SequenceSpec {
        sensor: sensor.to_string(),
        path_m,
        speed_m_s: 1.2,
        frames: 80,
        frame_spacing_s: 0.5,
        movers: vec![
            person(MoverPath::Follow { lead_m: 3.0 }),
            Mover {
                shape: MoverShape::Vehicle {
                    size_m: [1.6, 0.8, 1.2],
                },
                path: MoverPath::Follow { lead_m: 7.0 },
            },
            person(MoverPath::Follow { lead_m: -5.0 }),
            person(MoverPath::Follow { lead_m: -1.0 }),
        ],
        seed: 2,
    }
}

fn clean(seq: &Path, out: &Path) -> anyhow::Result<()> {
    let started = Instant::now();
    let raw = dynamic_bench::read_sequence(seq)?;
    let stage = Instant::now();
    let views = Viewpoints::from_scans(&raw)?;
    let mask = moving_mask(&raw, &views, &params()?, &NoProgress)?;
    let stage_s = stage.elapsed().as_secs_f64();
    let keep: Vec<usize> = (0..raw.len()).filter(|&i| !mask.dynamic[i]).collect();
    let kept = Cloud::from_positions(
        raw.origin,
        keep.iter().map(|&i| raw.positions()[i]).collect(),
    );
    io::write(&kept, out, Some(io::Format::Pcd), &Default::default())?;
    println!(
        "{{\"points_in\": {}, \"points_out\": {}, \"stage_s\": {stage_s:.3}, \"total_s\": {:.3}, \"warnings\": {}}}",
        raw.len(),
        kept.len(),
        started.elapsed().as_secs_f64(),
        mask.stats.warnings.len()
    );
    Ok(())
}

fn score(seq: &Path, cleaned: &Path) -> anyhow::Result<()> {
    let (gt, labels) = dynamic_bench::read_ground_truth(seq)?;
    let out = io::read(cleaned, Some(io::Format::Pcd), &ReadOptions::default())?;
    println!(
        "{}",
        serde_json::to_string(&dynamic_bench::score(&gt, &labels, &out)?)?
    );
    Ok(())
}

/// The real hall: each point's scan from `point_source_id`, each scan's pose from poses.csv (matched by the
/// number in its file name); writes the removed points, a top view of them over the map, and the scans in
/// the benchmark layout (for DUFOMap).
fn balm(laz: &Path, poses_path: &Path, out: &Path) -> anyhow::Result<()> {
    std::fs::create_dir_all(out)?;
    let cloud = io::read(laz, None, &ReadOptions::default())?;
    let ids: Vec<u32> = cloud
        .extra("point_source_id")
        .context("no point_source_id in the LAZ file")?
        .values
        .to_f64()
        .iter()
        .map(|&v| v as u32)
        .collect();
    let list = poses::read_poses(poses_path, None)?;
    let max_id = ids.iter().copied().max().unwrap_or(0) as usize;
    let mut by_id = vec![None; max_id + 1];
    for p in &list {
        let n = p
            .name
            .as_deref()
            .and_then(poses::scan_number)
            .context("pose without a scan number")?;
        if let Some(slot) = by_id.get_mut(n as usize) {
            *slot = Some(p.world_from_sensor);
        }
    }
    // Scans without points keep the identity; a point whose scan has no pose is an error of the data.
    let missing = ids.iter().filter(|&&i| by_id[i as usize].is_none()).count();
    if missing > 0 {
        bail!("{missing} points belong to scans without a pose");
    }
    let pose_list: Vec<_> = by_id.iter().map(|p| p.unwrap_or_default()).collect();
    let views = Viewpoints::from_scan_index(&ids, &pose_list)?;
    let started = Instant::now();
    let mask = moving_mask(&cloud, &views, &params()?, &NoProgress)?;
    let stage_s = started.elapsed().as_secs_f64();
    let removed: Vec<usize> = (0..cloud.len()).filter(|&i| mask.dynamic[i]).collect();
    println!(
        "balm hall: {} points, {} scans, removed {} ({:.3}%) in {stage_s:.2} s; {:?}",
        cloud.len(),
        list.len(),
        removed.len(),
        100.0 * removed.len() as f64 / cloud.len() as f64,
        mask.stats
    );
    let gone = Cloud::from_positions(
        cloud.origin,
        removed.iter().map(|&i| cloud.positions()[i]).collect(),
    );
    io::write(&gone, &out.join("removed.pcd"), None, &Default::default())?;
    top_view(&cloud, &mask.dynamic, &out.join("removed_top.ppm"))?;
    if std::env::var_os("BALM_LAYOUT").is_some() {
        let layout = out.join("layout");
        for s in 0..views.len() {
            let idx: Vec<usize> = (0..views.count(s)).map(|k| views.point(s, k)).collect();
            if idx.is_empty() {
                continue;
            }
            let frame = Cloud::from_positions(
                cloud.origin,
                idx.iter().map(|&i| cloud.positions()[i]).collect(),
            );
            dynamic_bench::write_frame(&layout, s, &frame, views.pose(s))?;
        }
    }
    Ok(())
}

/// A top view (x right, y up, 5 cm pixels): the map in grey by point count, removed points in red.
fn top_view(cloud: &Cloud, removed: &[bool], path: &Path) -> anyhow::Result<()> {
    // The central 99.8% of the points on each axis (a fused map has strays hundreds of metres away).
    let q = |a: usize, f: f64| {
        let mut v: Vec<f64> = (0..cloud.len())
            .step_by(50)
            .map(|i| cloud.world(i)[a])
            .collect();
        v.sort_unstable_by(f64::total_cmp);
        v[((v.len() - 1) as f64 * f) as usize]
    };
    let (lo, hi) = ([q(0, 0.001), q(1, 0.001)], [q(0, 0.999), q(1, 0.999)]);
    let px = 0.05;
    let w = ((hi[0] - lo[0]) / px) as usize + 1;
    let h = ((hi[1] - lo[1]) / px) as usize + 1;
    let mut count = vec![0u32; w * h];
    let mut red = vec![0u32; w * h];
    for (i, &gone) in removed.iter().enumerate() {
        let p = cloud.world(i);
        if p[0] < lo[0] || p[0] > hi[0] || p[1] < lo[1] || p[1] > hi[1] {
            continue;
        }
        let x = ((p[0] - lo[0]) / px) as usize;
        let y = h - 1 - ((p[1] - lo[1]) / px) as usize;
        let k = y.min(h - 1) * w + x.min(w - 1);
        count[k] += 1;
        red[k] += u32::from(gone);
    }
    let mut rgb = Vec::with_capacity(w * h * 3);
    for k in 0..w * h {
        if red[k] > 0 {
            rgb.extend_from_slice(&[255, 30, 30]);
        } else {
            let g = (255.0 - 40.0 * (1.0 + count[k] as f64).ln()).clamp(0.0, 255.0) as u8;
            rgb.extend_from_slice(&[g, g, g]);
        }
    }
    // A binary PPM: simcore and its examples draw no pictures with image crates (`convert` or any viewer
    // turns it into a PNG).
    let mut file = std::io::BufWriter::new(std::fs::File::create(path)?);
    write!(file, "P6\n{w} {h}\n255\n")?;
    file.write_all(&rgb)?;
    file.flush()?;
    Ok(())
}
