//! Build script: tells the tests whether the shared real scans are here (`cfg(aerie_shared_data)`), by the one
//! rule all three packages share (tests/support/build_cfg.rs).

include!("../tests/support/build_cfg.rs");

fn main() {
    emit_test_cfgs("..");
}
