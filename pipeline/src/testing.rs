//! Support for tests that read the shared real scans (`../shared/data` beside the repository).
//!
//! This is the one place in the library that prints: a skip message, for tests only.
//!
//! A user's fresh clone has no shared data, so tests that need it skip with a message there. CI always has it and
//! sets `AERIE_REQUIRE_SHARED_DATA=1` (`.ci/run`), which turns a skip into a failure: a missing data directory
//! must not let the suite pass while proving little.

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

/// Whether `AERIE_REQUIRE_SHARED_DATA` asks for the shared data to be present (any value but empty or `0`).
pub fn shared_data_required() -> bool {
    std::env::var_os("AERIE_REQUIRE_SHARED_DATA").is_some_and(|v| !v.is_empty() && v != "0")
}

/// The path of `rel` inside the shared data, or `None` (with a skip message) when the shared data is absent.
/// When the shared data is present the file must be there: a test never passes vacuously.
///
/// # Panics
/// When the file is missing although the shared data is present, and when the shared data is absent while
/// [`shared_data_required`] (CI).
pub fn shared_file(rel: &str) -> Option<PathBuf> {
    resolve(shared_data_dir(), shared_data_required(), rel)
}

/// [`shared_file`] with the environment read by the caller (so it can be tested without changing it).
fn resolve(dir: Option<PathBuf>, required: bool, rel: &str) -> Option<PathBuf> {
    let Some(dir) = dir else {
        assert!(
            !required,
            "AERIE_REQUIRE_SHARED_DATA is set but ../shared/data is absent (needed for {rel}); put the shared \
             data beside the repository or set AERIE_SHARED_DATA to its directory"
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_absence_skips_unless_required() {
        assert_eq!(resolve(None, false, "las/any.laz"), None);
        let r = std::panic::catch_unwind(|| resolve(None, true, "las/any.laz"));
        let payload = r.expect_err("a required absence must fail, not skip");
        let text = payload
            .downcast_ref::<String>()
            .cloned()
            .unwrap_or_default();
        assert!(
            text.contains("AERIE_REQUIRE_SHARED_DATA") && text.contains("las/any.laz"),
            "{text}"
        );
    }

    #[test]
    fn a_present_directory_must_hold_the_file() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("here.pcd"), b"x").unwrap();
        let found = resolve(Some(dir.path().to_path_buf()), true, "here.pcd");
        assert_eq!(found, Some(dir.path().join("here.pcd")));
        let r =
            std::panic::catch_unwind(|| resolve(Some(dir.path().to_path_buf()), false, "gone.pcd"));
        assert!(
            r.is_err(),
            "a missing file in present shared data must fail"
        );
    }
}
