//! Feed arbitrary bytes to the e57 reader: it must return Ok or Err, never panic or allocate without bound.
#![no_main]

use aerie_pipeline::io::{Format, ReadOptions, read_bytes};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let _ = read_bytes(
        data,
        std::path::Path::new("fuzz.e57"),
        Format::E57,
        &ReadOptions::default(),
    );
});
