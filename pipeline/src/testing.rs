//! Support for tests that read the shared real scans (`../shared/data` beside the repository).
//!
//! This is the one place in the library that prints: a skip message, for tests only.

use std::path::PathBuf;

/// The shared data directory: `$AERIE_SHARED_DATA`, else `../shared/data` beside the workspace root.
pub fn shared_data_dir() -> Option<PathBuf> {
    if let Some(d) = std::env::var_os("AERIE_SHARED_DATA") {
        return Some(PathBuf::from(d));
    }
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("..");
    let d = root.join("../shared/data");
    d.is_dir().then_some(d)
}

/// The path of `rel` inside the shared data, or `None` (with a skip message) when the shared data is absent.
/// When the shared data is present the file must be there: a test never passes vacuously. With
/// `AERIE_REQUIRE_SHARED_DATA=1` (CI, which always has it) an absent folder fails the test instead of
/// skipping it.
pub fn shared_file(rel: &str) -> Option<PathBuf> {
    let Some(dir) = shared_data_dir() else {
        assert!(
            std::env::var("AERIE_REQUIRE_SHARED_DATA").as_deref() != Ok("1"),
            "AERIE_REQUIRE_SHARED_DATA=1 but ../shared/data (or $AERIE_SHARED_DATA) is absent: {rel} is needed"
        );
        eprintln!(
            "skipping: ../shared/data is absent (set AERIE_SHARED_DATA to run tests on real scans)"
        );
        return None;
    };
    let p = dir.join(rel);
    assert!(
        p.is_file(),
        "shared data is present but {} is missing",
        p.display()
    );
    Some(p)
}
