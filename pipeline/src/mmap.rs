//! Read-only memory maps of input files: with `memory.rs` and `features/avx2.rs`, one of the three places in the
//! crate with `unsafe`.

use std::fs::File;

/// Map `file` read-only.
#[allow(unsafe_code)]
pub(crate) fn map_file(file: &File) -> std::io::Result<memmap2::Mmap> {
    // SAFETY: memmap2 requires that the mapped file is not modified (or truncated) while the map is alive;
    // that would change bytes behind shared references or fault on access (SIGBUS). The contract with users,
    // as with ripgrep's MmapChoice: an input file is not rewritten in place while aerie reads it. aerie's own
    // writers never modify a file in place: they write a temporary file and rename it over the old one, which
    // leaves an existing mapping valid. Callers keep a plain-read fallback for when mapping fails.
    unsafe { memmap2::Mmap::map(file) }
}
