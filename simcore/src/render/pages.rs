//! The beam index's large tables in memory backed by transparent huge pages where the system allows it.
//!
//! Why: a beam reads a few cache lines in each of a dozen cells spread over the index's hundreds of megabytes,
//! so with 4 KiB pages nearly every cell it enters costs a TLB miss and a page walk (a two-level one in a
//! virtual machine). Backed by 2 MiB pages, the ~245 MB of packs of the tiled lone_star map need ~120 TLB
//! entries, and frames there take 3-5% (Avia) and ~9% (OS1-128) less time (docs/benchmarks.md, stop 54). Linux
//! backs an allocation with huge pages unasked only where THP is set to `always`; most systems set `madvise`,
//! so a large table is mapped anonymously and advised (`MADV_HUGEPAGE`). Elsewhere, or where mapping fails, a
//! plain `Vec` holds it; the contents are the same either way.

use std::marker::PhantomData;
use std::ops::{Deref, DerefMut};

use bytemuck::Pod;
use memmap2::{MmapMut, MmapOptions};
use rayon::prelude::*;

/// Tables smaller than one huge page stay on the heap.
const HUGE_PAGE: usize = 2 << 20;

/// A fixed-length table of plain-old-data values, on huge pages where the system allows it.
pub(super) struct HugeVec<T> {
    storage: Storage<T>,
    len: usize,
}

enum Storage<T> {
    Mapped(MmapMut, PhantomData<T>),
    Heap(Vec<T>),
}

impl<T: Pod + Send + Sync> HugeVec<T> {
    /// `len` copies of `value`.
    pub fn filled(len: usize, value: T) -> HugeVec<T> {
        let bytes = len.saturating_mul(size_of::<T>());
        let storage = if bytes >= HUGE_PAGE {
            Self::mapped(bytes, value).map_or_else(
                || Storage::Heap(vec![value; len]),
                |m| Storage::Mapped(m, PhantomData),
            )
        } else {
            Storage::Heap(vec![value; len])
        };
        HugeVec { storage, len }
    }

    /// A copy of `values`.
    pub fn from_slice(values: &[T]) -> HugeVec<T> {
        let mut v = HugeVec::filled(values.len(), T::zeroed());
        v.copy_from_slice(values);
        v
    }

    /// An anonymous mapping of `bytes`, advised to huge pages and filled with `value`; `None` where it cannot be
    /// made or does not hold whole, aligned values of `T` (the heap is used instead).
    fn mapped(bytes: usize, value: T) -> Option<MmapMut> {
        let mut map = MmapOptions::new().len(bytes).map_anon().ok()?;
        // Advice only: where THP is off, the mapping keeps small pages and works the same.
        #[cfg(target_os = "linux")]
        let _ = map.advise(memmap2::Advice::HugePage);
        // Filled on every core: the first touch of each page (a 2 MiB page is zeroed, and may wait on the
        // kernel compacting memory to find one) is most of the cost.
        bytemuck::try_cast_slice_mut::<u8, T>(&mut map[..])
            .ok()?
            .par_chunks_mut((HUGE_PAGE / size_of::<T>().max(1)).max(1))
            .for_each(|c| c.fill(value));
        Some(map)
    }
}

impl<T: Pod> Deref for HugeVec<T> {
    type Target = [T];

    fn deref(&self) -> &[T] {
        match &self.storage {
            // `filled` checked that the mapping casts whole; the fallback is never taken.
            Storage::Mapped(m, _) => bytemuck::try_cast_slice(&m[..]).unwrap_or(&[]),
            Storage::Heap(v) => v,
        }
        .get(..self.len)
        .unwrap_or(&[])
    }
}

impl<T: Pod> DerefMut for HugeVec<T> {
    fn deref_mut(&mut self) -> &mut [T] {
        let len = self.len;
        match &mut self.storage {
            Storage::Mapped(m, _) => bytemuck::try_cast_slice_mut(&mut m[..]).unwrap_or(&mut []),
            Storage::Heap(v) => v,
        }
        .get_mut(..len)
        .unwrap_or(&mut [])
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn small_and_large_tables_hold_what_was_written() {
        for len in [0usize, 3, HUGE_PAGE / 8 + 5] {
            let mut v = HugeVec::filled(len, [7u32, 9]);
            assert_eq!(v.len(), len);
            assert!(v.iter().all(|&x| x == [7, 9]));
            if let Some(last) = v.last_mut() {
                *last = [1, 2];
            }
            if len > 0 {
                assert_eq!(v[len - 1], [1, 2]);
                assert_eq!(v[0], [7, 9]);
            }
        }
    }
}
