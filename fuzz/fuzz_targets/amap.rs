//! Feed arbitrary bytes to the .amap reader (written to a temporary file, then opened).
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(dir) = tempfile::tempdir() else { return };
    let path = dir.path().join("fuzz.amap");
    if std::fs::write(&path, data).is_ok() {
        let _ = aerie_pipeline::map::amap::AmapFile::open(&path);
    }
});
