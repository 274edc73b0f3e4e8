//! Where the tests find the shared real scans (`../shared/data` beside the repository, or
//! `$AERIE_SHARED_DATA`), for the test binaries of all three packages (each includes this file with `#[path]`).
//!
//! A test that reads them is marked
//! `#[cfg_attr(not(aerie_shared_data), ignore = "needs ../shared/data: see README")]`: the package's build script
//! (tests/support/build_cfg.rs) sets the cfg when the folder is present, so a fresh clone's summary counts those
//! tests as ignored, with the reason, instead of passed; `AERIE_REQUIRE_SHARED_DATA=1` (CI) makes an absent
//! folder a build error.

use std::path::{Path, PathBuf};

/// The shared data folder the build looked at (present when `cfg(aerie_shared_data)` is set).
pub fn shared_data_dir() -> &'static Path {
    Path::new(env!("AERIE_SHARED_DATA_DIR"))
}

/// The path of `rel` in the shared data (e.g. `las/autzen_trim.laz`), for tests marked as needing it.
///
/// # Panics
/// When the file is not there: a test that was built to run on the data never passes without it.
pub fn shared_data(rel: &str) -> PathBuf {
    let path = shared_data_dir().join(rel);
    assert!(
        path.is_file(),
        "{} is missing: the shared data folder is incomplete or was removed since the build",
        path.display()
    );
    path
}

/// The build script cannot watch for the data folder to appear (cargo would rebuild every time while it is
/// absent), so a folder put in place after the build would leave the tests that need it ignored: this says so.
#[test]
fn shared_data_is_as_the_build_saw_it() {
    let (dir, built_with) = (shared_data_dir(), cfg!(aerie_shared_data));
    assert_eq!(
        dir.is_dir(),
        built_with,
        "{} is {} but the tests were built {} it, so the tests that need it are marked wrongly: \
         `touch build.rs pipeline/build.rs simcore/build.rs` (at the repository root) and run the tests again",
        dir.display(),
        if built_with { "absent" } else { "present" },
        if built_with { "with" } else { "without" },
    );
}
