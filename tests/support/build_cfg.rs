// The build-script half of the rule "a test that needs the shared real scans runs where they are, and shows
// as ignored, with the reason, where they are not". `build.rs`, `pipeline/build.rs` and `simcore/build.rs` each
// `include!` this file and call `emit_test_cfgs`; it has no `//!` doc because an included file may not carry
// inner attributes.
//
// Why at build time: libtest can only ignore a test by an attribute, so whether the data is present has to be
// known when the tests are compiled. `../shared/data` lies beside the repository, where the build runs too.

use std::path::{Path, PathBuf};

/// The variable that names another folder for the shared data (default: `../shared/data` beside the workspace).
const DATA_VAR: &str = "AERIE_SHARED_DATA";
/// The variable that makes an absent data folder a build error (CI sets it: `.ci/run`).
const REQUIRE_VAR: &str = "AERIE_REQUIRE_SHARED_DATA";

/// Tells cargo, for the package whose workspace root is `workspace_root` (relative to the package):
/// - `cfg(aerie_shared_data)` when the shared data folder is present, declared for `check-cfg` either way;
/// - `AERIE_SHARED_DATA_DIR`, the folder's absolute path, for the tests' `shared_data` helper
///   (tests/support/shared_data.rs);
/// - to run this again when the folder disappears or either variable changes. Its appearance cannot be watched
///   without rebuilding the crate on every build (cargo counts a missing watched path as changed): the test
///   `shared_data_is_as_the_build_saw_it` fails instead, saying how to rebuild.
///
/// With `AERIE_REQUIRE_SHARED_DATA` set (to anything but empty or `0`) and the folder absent, the build fails
/// with a message that says where the folder was looked for.
fn emit_test_cfgs(workspace_root: &str) {
    println!("cargo::rustc-check-cfg=cfg(aerie_shared_data)");
    println!("cargo::rerun-if-env-changed={DATA_VAR}");
    println!("cargo::rerun-if-env-changed={REQUIRE_VAR}");
    let dir = shared_data_dir(workspace_root);
    println!("cargo::rustc-env=AERIE_SHARED_DATA_DIR={}", dir.display());
    if dir.is_dir() {
        println!("cargo::rustc-cfg=aerie_shared_data");
        println!("cargo::rerun-if-changed={}", dir.display());
    } else if required(REQUIRE_VAR) {
        println!(
            "cargo::error={REQUIRE_VAR} is set but the shared data folder {} is absent: put the shared data \
             beside the repository (../shared/data) or name its folder in {DATA_VAR}",
            dir.display()
        );
    }
}

/// `$AERIE_SHARED_DATA`, else `../shared/data` beside the workspace root, as an absolute path.
fn shared_data_dir(workspace_root: &str) -> PathBuf {
    if let Some(d) = std::env::var_os(DATA_VAR).filter(|d| !d.is_empty()) {
        return absolute(Path::new(&d));
    }
    let manifest = std::env::var_os("CARGO_MANIFEST_DIR").expect("cargo sets CARGO_MANIFEST_DIR");
    let root = absolute(&Path::new(&manifest).join(workspace_root));
    root.parent().unwrap_or(&root).join("shared/data")
}

/// `p` made absolute and without `..` where the file system allows (it need not exist).
fn absolute(p: &Path) -> PathBuf {
    p.canonicalize()
        .or_else(|_| std::path::absolute(p))
        .unwrap_or_else(|_| p.to_path_buf())
}

/// Whether the variable `var` asks for something to be required: set, and neither empty nor `0`. The one
/// reading of every `AERIE_REQUIRE_*` variable (tests/support/harness.rs reads the others the same way).
fn required(var: &str) -> bool {
    std::env::var_os(var).is_some_and(|v| !v.is_empty() && v != "0")
}
