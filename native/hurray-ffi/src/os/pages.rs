//! The page allocator the C library installs as hurray-core's `LargeAlloc` (payload buffers of
//! at least 32 MiB, 4 MiB for a buffer pool's): anonymous private mappings, 2 MiB aligned and advised for transparent huge
//! pages (`MADV_HUGEPAGE`) when at least 2 MiB long, grown with `mremap`. A reader's first
//! write to a fresh 2 MiB huge page is one fault instead of 512, which is most of a large
//! tensor's receive cost with 4 KiB pages.
//!
//! Growing keeps the bytes without copying them: the mapping is enlarged in place when the
//! address space after it is free, else its pages are moved (`MREMAP_FIXED`) to the start of a
//! new 2 MiB aligned reservation; only when the kernel refuses the move are the bytes copied.
//! Every refusal falls back: a failed `madvise` leaves ordinary pages; a failed `mmap` answers
//! `None`, so hurray-core uses the global allocator (or reports `OUT_OF_MEMORY`), never an abort.
//! The capacities asked for are hurray-core's, so the bounds of docs/spec/stream.md §Limits
//! hold; a mapping adds at most its rounding up to a page (2 MiB for those of at least 2 MiB).
//!
//! Linux on x86_64, aarch64 and riscv64 (the generic flag values below); elsewhere [`install`]
//! does nothing.

use std::sync::atomic::{AtomicU64, Ordering::Relaxed};

/// What the page allocator has done in this process (all counters since load).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct PageStats {
    /// Bytes mapped now.
    pub mapped_bytes: u64,
    /// The most bytes mapped at once.
    pub peak_mapped_bytes: u64,
    /// Regions mapped.
    pub maps: u64,
    /// Growths done in place.
    pub grown_in_place: u64,
    /// Growths that moved the pages to a new reservation.
    pub grown_by_move: u64,
    /// Growths that copied the bytes (the kernel refused the move).
    pub grown_by_copy: u64,
    /// Requests refused (`mmap` failed): hurray-core fell back to the global allocator.
    pub refused: u64,
    /// `madvise(MADV_HUGEPAGE)` calls that failed (the region keeps ordinary pages).
    pub advice_failed: u64,
}

struct Counters {
    mapped_bytes: AtomicU64,
    peak_mapped_bytes: AtomicU64,
    maps: AtomicU64,
    grown_in_place: AtomicU64,
    grown_by_move: AtomicU64,
    grown_by_copy: AtomicU64,
    refused: AtomicU64,
    advice_failed: AtomicU64,
}

static COUNTERS: Counters = Counters {
    mapped_bytes: AtomicU64::new(0),
    peak_mapped_bytes: AtomicU64::new(0),
    maps: AtomicU64::new(0),
    grown_in_place: AtomicU64::new(0),
    grown_by_move: AtomicU64::new(0),
    grown_by_copy: AtomicU64::new(0),
    refused: AtomicU64::new(0),
    advice_failed: AtomicU64::new(0),
};

/// Counts `bytes` more mapped.
fn mapped_more(bytes: usize) {
    let now = COUNTERS.mapped_bytes.fetch_add(bytes as u64, Relaxed) + bytes as u64;
    COUNTERS.peak_mapped_bytes.fetch_max(now, Relaxed);
}

/// The counters now.
pub fn page_stats() -> PageStats {
    let c = &COUNTERS;
    PageStats {
        mapped_bytes: c.mapped_bytes.load(Relaxed),
        peak_mapped_bytes: c.peak_mapped_bytes.load(Relaxed),
        maps: c.maps.load(Relaxed),
        grown_in_place: c.grown_in_place.load(Relaxed),
        grown_by_move: c.grown_by_move.load(Relaxed),
        grown_by_copy: c.grown_by_copy.load(Relaxed),
        refused: c.refused.load(Relaxed),
        advice_failed: c.advice_failed.load(Relaxed),
    }
}

/// Installs the page allocator as hurray-core's `LargeAlloc` for this process (idempotent; a
/// no-op on platforms without it). Called by every C constructor of a reader or decoder, so
/// buffers made through the C ABI use it; Rust users of this crate may call it themselves.
pub fn install() {
    #[cfg(all(target_os = "linux", any(target_arch = "x86_64", target_arch = "aarch64", target_arch = "riscv64")))]
    {
        static ONCE: std::sync::Once = std::sync::Once::new();
        ONCE.call_once(|| {
            hurray_core::install_large_alloc(&linux::PAGES);
        });
    }
}

/// Whether this platform has the page allocator (whether [`install`] installs anything).
pub fn supported() -> bool {
    cfg!(all(target_os = "linux", any(target_arch = "x86_64", target_arch = "aarch64", target_arch = "riscv64")))
}

#[cfg(all(target_os = "linux", any(target_arch = "x86_64", target_arch = "aarch64", target_arch = "riscv64")))]
mod linux {
    use std::ffi::{c_int, c_long, c_void};
    use std::ptr::NonNull;
    use std::sync::atomic::Ordering::Relaxed;

    use super::{mapped_more, COUNTERS};

    extern "C" {
        fn mmap(addr: *mut c_void, len: usize, prot: c_int, flags: c_int, fd: c_int, off: i64) -> *mut c_void;
        fn munmap(addr: *mut c_void, len: usize) -> c_int;
        // Variadic in C (the fifth argument is read only with MREMAP_FIXED).
        fn mremap(old: *mut c_void, old_len: usize, new_len: usize, flags: c_int, ...) -> *mut c_void;
        fn madvise(addr: *mut c_void, len: usize, advice: c_int) -> c_int;
        fn sysconf(name: c_int) -> c_long;
    }

    const PROT_READ_WRITE: c_int = 0x1 | 0x2;
    const MAP_PRIVATE_ANONYMOUS: c_int = 0x02 | 0x20;
    const MREMAP_MAYMOVE: c_int = 1;
    const MREMAP_FIXED: c_int = 2;
    const MADV_HUGEPAGE: c_int = 14;
    const SC_PAGESIZE: c_int = 30;
    const MAP_FAILED: usize = usize::MAX;

    /// A transparent huge page on these architectures (with 4 KiB base pages; larger base
    /// pages make it a plain alignment).
    pub(super) const HUGE: usize = 2 << 20;

    pub(super) struct Pages;

    pub(super) static PAGES: Pages = Pages;

    // Failure injection for the tests: bit 0 refuses `mmap`, bit 1 `mremap`, bit 2 `madvise`.
    #[cfg(test)]
    thread_local! {
        pub(super) static REFUSE: std::cell::Cell<u8> = const { std::cell::Cell::new(0) };
    }

    fn refused(_bit: u8) -> bool {
        #[cfg(test)]
        return REFUSE.with(|r| r.get() & _bit != 0);
        #[cfg(not(test))]
        false
    }

    fn page() -> usize {
        // SAFETY: sysconf reads a constant of the system; no memory is involved.
        let p = unsafe { sysconf(SC_PAGESIZE) };
        if p > 0 && (p as usize).is_power_of_two() {
            p as usize
        } else {
            4096
        }
    }

    /// The mapping's length for `size` bytes: whole huge pages from 2 MiB on, whole pages below.
    pub(super) fn span(size: usize) -> Option<usize> {
        let unit = if size >= HUGE { HUGE } else { page() };
        size.checked_add(unit - 1).map(|s| s & !(unit - 1))
    }

    /// The alignment of a mapping of `len` bytes for a buffer aligned to `align`.
    fn start_align(len: usize, align: usize) -> usize {
        align.max(if len >= HUGE { HUGE } else { page() })
    }

    /// Maps `len` fresh bytes (a multiple of the page) at an address aligned to `align`, advised
    /// for huge pages when at least 2 MiB long. `None` when the kernel refuses.
    fn map_aligned(len: usize, align: usize) -> Option<NonNull<u8>> {
        let pg = page();
        let extra = align.saturating_sub(pg);
        let total = len.checked_add(extra)?;
        if refused(1) {
            return None;
        }
        // SAFETY: a fresh private anonymous mapping at an address the kernel picks; no existing
        // memory is touched.
        let p = unsafe { mmap(std::ptr::null_mut(), total, PROT_READ_WRITE, MAP_PRIVATE_ANONYMOUS, -1, 0) };
        if p as usize == MAP_FAILED || p.is_null() {
            return None;
        }
        let base = p as usize;
        let start = (base + align - 1) & !(align - 1);
        // SAFETY: both ranges are whole pages of the mapping just made (base and start are page
        // aligned, start - base <= extra), which nothing else references.
        unsafe {
            if start > base {
                munmap(base as *mut c_void, start - base);
            }
            let tail = base + total - (start + len);
            if tail > 0 {
                munmap((start + len) as *mut c_void, tail);
            }
        }
        advise(start, len);
        COUNTERS.maps.fetch_add(1, Relaxed);
        NonNull::new(start as *mut u8)
    }

    /// Asks for transparent huge pages over `[start, start + len)` (a range of this module's
    /// own mapping), when it can hold one; a refusal leaves ordinary pages.
    fn advise(start: usize, len: usize) {
        if len < HUGE {
            return;
        }
        // SAFETY: advice only; the range is a live mapping of this module.
        let r = if refused(4) { -1 } else { unsafe { madvise(start as *mut c_void, len, MADV_HUGEPAGE) } };
        if r != 0 {
            COUNTERS.advice_failed.fetch_add(1, Relaxed);
        }
    }

    // SAFETY: every region is a private anonymous mapping of `span(size)` bytes aligned to at
    // least `align`, readable and writable, owned by the caller until grow or free; grow keeps
    // the first `old` bytes (by remapping the same pages, or by copying them).
    unsafe impl hurray_core::LargeAlloc for Pages {
        fn alloc(&self, size: usize, align: usize) -> Option<NonNull<u8>> {
            let len = span(size)?;
            let p = map_aligned(len, start_align(len, align));
            match p {
                Some(_) => mapped_more(len),
                None => {
                    COUNTERS.refused.fetch_add(1, Relaxed);
                }
            }
            p
        }

        unsafe fn grow(&self, ptr: NonNull<u8>, old: usize, new: usize, align: usize) -> Option<NonNull<u8>> {
            let (old_len, new_len) = (span(old)?, span(new)?);
            let at = ptr.as_ptr() as usize;
            let want = start_align(new_len, align);
            if new_len == old_len {
                return Some(ptr);
            }
            if at & (want - 1) == 0 && !refused(2) {
                // SAFETY: the region is this module's mapping of old_len bytes; without
                // MREMAP_MAYMOVE it is only extended, in place, or left alone.
                let r = unsafe { mremap(at as *mut c_void, old_len, new_len, 0) };
                if r as usize == at {
                    advise(at, new_len);
                    COUNTERS.grown_in_place.fetch_add(1, Relaxed);
                    mapped_more(new_len - old_len);
                    return Some(ptr);
                }
            }
            let Some(dst) = map_aligned(new_len, want) else {
                COUNTERS.refused.fetch_add(1, Relaxed);
                return None;
            };
            let d = dst.as_ptr() as usize;
            let moved = !refused(2) && {
                // SAFETY: moves the old region's pages over the first old_len bytes of the fresh
                // reservation `dst` (MREMAP_FIXED replaces what is mapped there); the old range
                // is unmapped by the call. On failure nothing changes.
                let r = unsafe { mremap(at as *mut c_void, old_len, old_len, MREMAP_MAYMOVE | MREMAP_FIXED, d) };
                r as usize == d
            };
            if moved {
                // The moved pages keep the old mapping's advice; the whole region gets it.
                advise(d, new_len);
                COUNTERS.grown_by_move.fetch_add(1, Relaxed);
            } else {
                // SAFETY: both regions are live mappings of this module, distinct, and at least
                // `old` bytes long; the old one is unmapped once, here.
                unsafe {
                    std::ptr::copy_nonoverlapping(ptr.as_ptr(), dst.as_ptr(), old);
                    munmap(at as *mut c_void, old_len);
                }
                COUNTERS.grown_by_copy.fetch_add(1, Relaxed);
            }
            mapped_more(new_len - old_len);
            Some(dst)
        }

        unsafe fn free(&self, ptr: NonNull<u8>, size: usize, _align: usize) {
            let Some(len) = span(size) else { return };
            // SAFETY: the region is this module's mapping of span(size) bytes, given back once.
            unsafe { munmap(ptr.as_ptr().cast(), len) };
            COUNTERS.mapped_bytes.fetch_sub(len as u64, Relaxed);
        }
    }
}

#[cfg(all(test, target_os = "linux", any(target_arch = "x86_64", target_arch = "aarch64", target_arch = "riscv64")))]
mod tests {
    use hurray_core::LargeAlloc;

    use super::linux::{span, PAGES, REFUSE};
    use super::*;

    const MIB: usize = 1 << 20;

    /// Whether `[p, p + len)` lies in one mapping of /proc/self/maps.
    fn mapped(p: usize, len: usize) -> bool {
        let maps = std::fs::read_to_string("/proc/self/maps").unwrap();
        maps.lines().any(|l| {
            let r = l.split_whitespace().next().unwrap();
            let (a, b) = r.split_once('-').unwrap();
            let (a, b) = (usize::from_str_radix(a, 16).unwrap(), usize::from_str_radix(b, 16).unwrap());
            a <= p && p + len <= b
        })
    }

    fn fill(p: *mut u8, from: usize, to: usize) {
        for i in from..to {
            // SAFETY: the tests write only inside regions they hold.
            unsafe { p.add(i).write((i * 31 / 4096) as u8) };
        }
    }

    fn check(p: *const u8, to: usize) {
        for i in (0..to).step_by(997) {
            // SAFETY: as for fill.
            assert_eq!(unsafe { p.add(i).read() }, (i * 31 / 4096) as u8, "byte {i}");
        }
    }

    #[test]
    fn regions_are_aligned_grow_keeping_bytes_and_are_unmapped_on_free() {
        REFUSE.with(|r| r.set(0));
        for align in [64usize, 4096, 2 * MIB] {
            let p = PAGES.alloc(64 * 1024, align).unwrap();
            assert_eq!(p.as_ptr() as usize % align, 0);
            fill(p.as_ptr(), 0, 64 * 1024);
            let mut cur = (p, 64 * 1024);
            for new in [3 * MIB, 7 * MIB + 5, 40 * MIB] {
                // SAFETY: cur is a live region of PAGES of that size and alignment.
                let q = unsafe { PAGES.grow(cur.0, cur.1, new, align) }.unwrap();
                assert_eq!(q.as_ptr() as usize % align.max(linux::HUGE), 0, "huge-page aligned at {new}");
                check(q.as_ptr(), cur.1);
                fill(q.as_ptr(), cur.1, new);
                cur = (q, new);
            }
            let at = cur.0.as_ptr() as usize;
            let len = span(cur.1).unwrap();
            assert!(mapped(at, 4096) && mapped(at + len - 4096, 4096), "mapped from start to end");
            // SAFETY: as above; not used again.
            unsafe { PAGES.free(cur.0, cur.1, align) };
            assert!(!mapped(at, 4096), "unmapped");
        }
        let s = page_stats();
        assert!(s.maps >= 3 && s.grown_in_place + s.grown_by_move >= 9, "{s:?}");
    }

    #[test]
    fn refusals_fall_back_without_losing_bytes() {
        // mremap refused: the bytes are copied into a fresh region.
        REFUSE.with(|r| r.set(2));
        let p = PAGES.alloc(4 * MIB, 4096).unwrap();
        fill(p.as_ptr(), 0, 4 * MIB);
        let copies = page_stats().grown_by_copy;
        // SAFETY: p is a live region of 4 MiB.
        let q = unsafe { PAGES.grow(p, 4 * MIB, 9 * MIB, 4096) }.unwrap();
        assert!(page_stats().grown_by_copy > copies);
        check(q.as_ptr(), 4 * MIB);
        assert!(!mapped(p.as_ptr() as usize, 4096) || p == q);
        // madvise refused: still a usable region, the failure counted.
        REFUSE.with(|r| r.set(4));
        let failed = page_stats().advice_failed;
        let a = PAGES.alloc(4 * MIB, 64).unwrap();
        assert!(page_stats().advice_failed > failed);
        fill(a.as_ptr(), 0, 4 * MIB);
        // mmap refused: None, the region unchanged, the refusal counted.
        REFUSE.with(|r| r.set(1 | 2));
        let refused = page_stats().refused;
        assert!(PAGES.alloc(4 * MIB, 64).is_none());
        // SAFETY: q is a live region of 9 MiB; on None it stays so.
        assert!(unsafe { PAGES.grow(q, 9 * MIB, 40 * MIB, 4096) }.is_none());
        assert_eq!(page_stats().refused, refused + 2);
        check(q.as_ptr(), 4 * MIB);
        REFUSE.with(|r| r.set(0));
        // SAFETY: live regions, freed once.
        unsafe {
            PAGES.free(q, 9 * MIB, 4096);
            PAGES.free(a, 4 * MIB, 64);
        }
    }
}
