//! How the process's allocator treats freed memory: kept for reuse while a process works, handed back to the
//! operating system between preparation stages. With `mmap.rs` and `features/avx2.rs`, one of the three places
//! in the crate with `unsafe`.
//!
//! Why: glibc returns a freed block of more than its (dynamic) mmap threshold, or a heap top beyond twice that,
//! to the kernel at once, and the next allocation of the same size costs a page fault per 4 KiB on first
//! touch. For a reader whose output arrays are written once, those faults were most of the time of a repeated
//! in-process read (docs/benchmarks.md, "Reading scan files"). Conversely glibc keeps resident what it cannot
//! return on the spot (free chunks below the heap's top, the arenas of rayon's worker threads), so a
//! prepare's peak resident set held what earlier stages had freed.

/// Blocks below this many bytes come from the heap and stay there for reuse when freed (glibc's largest
/// dynamic mmap threshold on 64-bit systems, fixed here so that it does not depend on what was freed first).
const MMAP_THRESHOLD: i32 = 32 << 20;
/// Free memory at the heap's top that glibc keeps for reuse instead of returning it.
const TRIM_THRESHOLD: i32 = 64 << 20;

/// For an application that reads and prepares data repeatedly (the `aerie` command line and app): keep freed
/// blocks of up to 32 MiB, and up to 64 MiB of free heap, for reuse rather than returning them to the kernel
/// on every free. Preparation hands free memory back between its stages regardless. Call once at the start of
/// `main`, before any thread starts; a no-op outside glibc. Libraries should leave this to the application.
pub fn keep_freed_memory_for_reuse() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    #[allow(unsafe_code)]
    // SAFETY: `mallopt` has no memory-safety preconditions; it only changes glibc's thresholds (and fails,
    // returning 0, for values it rejects).
    unsafe {
        libc::mallopt(libc::M_MMAP_THRESHOLD, MMAP_THRESHOLD);
        libc::mallopt(libc::M_TRIM_THRESHOLD, TRIM_THRESHOLD);
    }
}

/// Returns the allocator's wholly free pages to the operating system (glibc's `malloc_trim`); nothing elsewhere.
/// It walks the free lists of every arena, cheap beside a stage (the 8.3M-point prepare runs level with it),
/// and is called before each preparation stage, while packing and after each large transient is freed (the
/// keys of `grid::sort_into_runs`, an index's unsorted positions): a prepare of lone_star peaked at 41.7 MB
/// resident without any of it, 34.7 MB with the calls between stages and 27-28 MB with all of them.
pub(crate) fn release_free_memory() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    #[allow(unsafe_code)]
    // SAFETY: `malloc_trim` has no preconditions: it locks each arena itself and only gives back pages no
    // allocation uses.
    unsafe {
        libc::malloc_trim(0);
    }
}
