//! Recordings read by the Python packages ROS tools use (`mcap` with `mcap-ros2-support`, and `rosbags`):
//! check_mcap.py beside this file decodes every message of a flight's MCAP, in every chunk compression, and
//! opens a `rosbag2` folder as a bag with the counts its metadata lists.
//!
//! Whether python3 has those packages only a run can tell, so this binary has its own harness
//! (tests/support/harness.rs): without them the check prints as ignored with the reason, and
//! `AERIE_REQUIRE_PYTHON_PEERS=1` (CI) makes it fail instead.

#[path = "../it/common.rs"]
#[allow(dead_code, reason = "this binary uses only the flight helpers")]
mod common;
#[path = "../../../tests/support/harness.rs"]
mod harness;

use std::path::Path;
use std::process::{Command, ExitCode};

use aerie_simcore::record::{Compression, RecordOptions};
use harness::{Check, Need};

/// python3 with the packages ROS tools use.
static PYTHON_PEERS: Need = Need {
    require_var: "AERIE_REQUIRE_PYTHON_PEERS",
    missing: || {
        let ok = Command::new("python3")
            .args(["-c", "import mcap, mcap_ros2, rosbags"])
            .output()
            .is_ok_and(|o| o.status.success());
        (!ok).then(|| {
            "needs python3 with mcap, mcap-ros2-support and rosbags (pip install mcap mcap-ros2-support rosbags)"
                .to_string()
        })
    },
};

fn main() -> ExitCode {
    harness::main(&[Check {
        name: "ros_tools_decode_every_recording",
        needs: &[&PYTHON_PEERS],
        run: ros_tools_decode_every_recording,
    }])
}

/// Every chunk compression's recording decodes in both Python decoders with the LiDAR's 6 frames of 0.6 s;
/// with `rosbag2`, the folder opens as a bag.
fn ros_tools_decode_every_recording() {
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/python_peers/check_mcap.py");
    for compression in [Compression::Zstd, Compression::Lz4, Compression::None] {
        let dir = tempfile::tempdir().unwrap();
        let options = RecordOptions {
            compression,
            rosbag2: compression == Compression::Zstd,
        };
        common::recorded(5, dir.path(), options);
        let mut targets = vec![dir.path().join("flight_5.mcap")];
        if options.rosbag2 {
            targets.push(dir.path().to_path_buf());
        }
        for target in targets {
            let out = Command::new("python3")
                .arg(&script)
                .arg(&target)
                .output()
                .unwrap();
            let stdout = String::from_utf8_lossy(&out.stdout);
            assert!(
                out.status.success(),
                "{}: {stdout}\n{}",
                target.display(),
                String::from_utf8_lossy(&out.stderr)
            );
            assert!(stdout.contains("\"/uav/vlp/points\": 6"), "{stdout}");
        }
    }
}
