//! The real window, under Xvfb with Mesa's software Vulkan (lavapipe): `aerie app MAP --screenshot` must show
//! the map in the viewport, not a blank area and not what it shows with no map loaded.
//!
//! Needs `xvfb-run` and a Vulkan driver (`apt-get install xvfb mesa-vulkan-drivers`), which only a run can
//! tell, so this binary has its own harness (tests/support/harness.rs): without them the check prints as
//! ignored with the reason, and `AERIE_REQUIRE_GUI=1` (CI installs both and sets it) makes it fail instead. It
//! also needs the shared data (`cfg(aerie_shared_data)`, tests/support/shared_data.rs). With
//! `AERIE_SCREENSHOT_DIR` set, the screenshots are kept there (the README's come from this test).

#[path = "../support/harness.rs"]
mod harness;
#[path = "../support/shared_data.rs"]
mod shared_data;

use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode};

use harness::{Check, Need};

const BIN: &str = env!("CARGO_BIN_EXE_aerie");

/// An X server to run under and a Vulkan driver.
static DISPLAY_STACK: Need = Need {
    require_var: "AERIE_REQUIRE_GUI",
    missing: || {
        let xvfb = Command::new("sh")
            .args(["-c", "command -v xvfb-run"])
            .output()
            .is_ok_and(|o| o.status.success());
        let vulkan = Path::new("/usr/share/vulkan/icd.d")
            .read_dir()
            .is_ok_and(|mut d| d.next().is_some());
        (!(xvfb && vulkan)).then(|| {
            "needs xvfb-run and a Vulkan driver (apt-get install xvfb mesa-vulkan-drivers)"
                .to_string()
        })
    },
};

/// The shared real scans, known at build time (`AERIE_REQUIRE_SHARED_DATA=1` already fails the build).
static SHARED_DATA: Need = Need {
    require_var: "AERIE_REQUIRE_SHARED_DATA",
    missing: || (!cfg!(aerie_shared_data)).then(|| "needs ../shared/data: see README".to_string()),
};

fn main() -> ExitCode {
    harness::main(&[Check {
        name: "the_window_shows_a_prepared_map",
        needs: &[&SHARED_DATA, &DISPLAY_STACK],
        run: the_window_shows_a_prepared_map,
    }])
}

fn screenshot(args: &[&Path], out: &Path) {
    let mut cmd = Command::new("xvfb-run");
    cmd.args([
        "-a",
        "-s",
        "-screen 0 1400x900x24",
        BIN,
        "app",
        "--size",
        "1280x800",
        "--screenshot",
    ])
    .arg(out)
    .args(args)
    .env("WGPU_BACKEND", "vulkan")
    .env("HOME", out.parent().unwrap());
    let o = cmd.output().expect("xvfb-run runs");
    assert!(
        o.status.success() && out.is_file(),
        "aerie app --screenshot failed ({}):\n{}\n{}",
        o.status,
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    );
}

/// RGBA pixels and size of a PNG.
fn read_png(path: &Path) -> (Vec<u8>, usize, usize) {
    let decoder = png::Decoder::new(std::io::BufReader::new(std::fs::File::open(path).unwrap()));
    let mut reader = decoder.read_info().unwrap();
    let mut buf = vec![0; reader.output_buffer_size().unwrap()];
    let info = reader.next_frame(&mut buf).unwrap();
    assert_eq!(info.color_type, png::ColorType::Rgba);
    buf.truncate(info.buffer_size());
    (buf, info.width as usize, info.height as usize)
}

/// Pixels of the middle of the window (inside the viewport, right of the workflow panel) that are not the
/// viewport's background colour.
fn lit_fraction(rgba: &[u8], w: usize, h: usize) -> f64 {
    let (x0, x1, y0, y1) = (w * 45 / 100, w * 85 / 100, h * 25 / 100, h * 75 / 100);
    let mut lit = 0;
    for y in y0..y1 {
        for x in x0..x1 {
            let p = &rgba[(y * w + x) * 4..][..3];
            if p.iter()
                .zip([22u8, 24, 29])
                .any(|(a, b)| a.abs_diff(b) > 12)
            {
                lit += 1;
            }
        }
    }
    lit as f64 / ((x1 - x0) * (y1 - y0)) as f64
}

fn the_window_shows_a_prepared_map() {
    let scan = shared_data::shared_data("maps/hall_map_20cm.pcd");
    let dir = tempfile::tempdir().unwrap();
    let map = dir.path().join("hall.amap");
    let o = Command::new(BIN)
        .args(["prepare", "-q", "--resolution", "0.2", "-o"])
        .arg(&map)
        .arg(&scan)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let empty = dir.path().join("empty.png");
    let shown = dir.path().join("map.png");
    screenshot(&[], &empty);
    screenshot(&[&map], &shown);
    let (a, w, h) = read_png(&empty);
    let (b, w2, h2) = read_png(&shown);
    assert_eq!((w, h), (w2, h2));
    let (lit_empty, lit_map) = (lit_fraction(&a, w, h), lit_fraction(&b, w, h));
    assert!(
        lit_map > 0.2,
        "the map covers only {:.1}% of the viewport's middle",
        lit_map * 100.0
    );
    assert!(
        lit_map > lit_empty + 0.15,
        "with a map {lit_map:.3} of the middle is lit, without {lit_empty:.3}"
    );
    if let Some(keep) = std::env::var_os("AERIE_SCREENSHOT_DIR").map(PathBuf::from) {
        std::fs::create_dir_all(&keep).unwrap();
        std::fs::copy(&shown, keep.join("app_map.png")).unwrap();
    }
}
