//! Handing memory that a stage freed back to the operating system before the next stage runs.
//!
//! Why: glibc keeps freed memory resident where it cannot return it on the spot (free chunks below the heap's top,
//! the arenas of rayon's worker threads), so a prepare's peak resident set was the live data plus what earlier
//! stages had freed: about 14 MB of 42 on lone_star (docs/benchmarks.md). `malloc_trim` returns every whole free
//! page of every arena; it costs a walk over the free lists (about a millisecond) and is called once per stage.

/// Returns the allocator's wholly free pages to the operating system (glibc's `malloc_trim`); nothing elsewhere.
pub(crate) fn release_free_memory() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    #[allow(unsafe_code)]
    // SAFETY: `malloc_trim` has no preconditions: it locks each arena itself and only gives back pages no
    // allocation uses.
    unsafe {
        libc::malloc_trim(0);
    }
}
