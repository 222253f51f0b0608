//! A bounded pool of aligned allocations that readers reuse instead of asking the allocator
//! (and the kernel: fresh pages are page-fault bound) for new memory on every tensor
//! (docs/spec/stream.md §Buffer pool).
//!
//! Ownership does the safety work: a reader hands out [`PooledBuf`]s, each owning its
//! allocation exclusively; the allocation goes back to the pool only when that `PooledBuf` is
//! dropped, so memory still referenced by a tensor can never be handed out again. Safe Rust
//! only.

use std::collections::VecDeque;
use std::ops::{Deref, DerefMut};
use std::sync::{Arc, Mutex, MutexGuard, Weak};

use crate::buffer::{AlignedBuf, POOLED_LARGE_ALLOC_MIN_BYTES};
use crate::error::Result;

/// Most free allocations a pool keeps, whatever their sizes (bounds the search on take).
pub const MAX_POOLED_BUFFERS: usize = 64;

/// Counters of a pool, for tests, benchmarks and tuning.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct PoolStats {
    /// The cap: most bytes of free allocations kept.
    pub max_bytes: u64,
    /// Bytes of free allocations held now (their capacities).
    pub held_bytes: u64,
    /// Free allocations held now.
    pub held_buffers: usize,
    /// Takes served by a free allocation.
    pub hits: u64,
    /// Takes that needed a new allocation.
    pub misses: u64,
    /// Allocations that came back and were kept.
    pub returned: u64,
    /// Allocations that came back and were freed instead (cap or count reached, or larger
    /// than the cap), plus those evicted to make room.
    pub freed: u64,
}

struct Free {
    stats: PoolStats,
    /// Oldest first; eviction takes from the front.
    bufs: VecDeque<AlignedBuf>,
}

/// A bounded pool of free aligned allocations, shared by reference count: clones are the same
/// pool, so several readers may share one. Thread-safe (one mutex, held only to pick or file
/// an allocation, never while allocating or freeing).
///
/// **What it holds.** Only allocations whose [`PooledBuf`] was dropped (the tensor that owned
/// it is gone), at most `max_bytes` of them (by capacity) and at most
/// [`MAX_POOLED_BUFFERS`]; buffers in use are not counted and never limited. When the cap is
/// reached, the oldest free allocations are freed first; an allocation larger than the cap is
/// freed at once.
///
/// **Reuse rule.** [`take`](Self::take) reuses a free allocation of the same alignment whose
/// capacity is at least the requested length and less than twice it (the smallest such), so
/// a pooled buffer never wastes more than the length it serves.
///
/// **Lifetime.** Buffers refer to their pool weakly: once every clone of the pool is dropped
/// (e.g. the reader that owned it), its free allocations are freed, and buffers dropped later
/// are simply freed.
#[derive(Clone)]
pub struct BufferPool {
    shared: Arc<Mutex<Free>>,
}

impl BufferPool {
    /// A pool that keeps at most `max_bytes` of free allocations (0 keeps none: every buffer
    /// is freed when dropped).
    pub fn new(max_bytes: u64) -> Self {
        let stats = PoolStats { max_bytes, ..PoolStats::default() };
        BufferPool { shared: Arc::new(Mutex::new(Free { stats, bufs: VecDeque::new() })) }
    }

    /// The cap in bytes.
    pub fn max_bytes(&self) -> u64 {
        lock(&self.shared).stats.max_bytes
    }

    /// Changes the cap; free allocations above the new cap are freed now (oldest first).
    pub fn set_max_bytes(&self, max_bytes: u64) {
        let evicted = {
            let mut f = lock(&self.shared);
            f.stats.max_bytes = max_bytes;
            f.make_room(0)
        };
        drop(evicted);
    }

    /// Frees every free allocation (buffers in use are unaffected and still come back later).
    pub fn clear(&self) {
        let evicted = {
            let mut f = lock(&self.shared);
            let all: Vec<AlignedBuf> = f.bufs.drain(..).collect();
            f.stats.held_bytes = 0;
            f.stats.held_buffers = 0;
            f.stats.freed += all.len() as u64;
            all
        };
        drop(evicted);
    }

    /// The counters now.
    pub fn stats(&self) -> PoolStats {
        lock(&self.shared).stats
    }

    /// An empty buffer of `len` bytes aligned to `align`: a free allocation when one fits the
    /// reuse rule, else a new one (as [`AlignedBuf::new`], whose errors it returns, but from
    /// the [`LargeAlloc`](crate::buffer::LargeAlloc) hook from
    /// [`POOLED_LARGE_ALLOC_MIN_BYTES`] on). Its bytes
    /// are uninitialised until written, as for a new allocation. A zero-byte buffer allocates
    /// nothing and never enters the pool.
    pub fn take(&self, len: u64, align: u64) -> Result<PooledBuf> {
        self.take_inner(len, align, None)
    }

    /// As [`take`](Self::take), but on a miss the new allocation is
    /// [growable](AlignedBuf::growable) from `initial` bytes: it grows as the buffer is filled.
    pub fn take_growable(&self, len: u64, align: u64, initial: usize) -> Result<PooledBuf> {
        self.take_inner(len, align, Some(initial))
    }

    fn take_inner(&self, len: u64, align: u64, initial: Option<usize>) -> Result<PooledBuf> {
        if len == 0 {
            return Ok(PooledBuf::unpooled(AlignedBuf::new(0, align)?));
        }
        let found = {
            let mut f = lock(&self.shared);
            let hit = f.best_fit(len, align);
            match hit {
                Some(i) => {
                    let b = f.bufs.remove(i).expect("index from best_fit");
                    f.stats.held_bytes -= b.capacity() as u64;
                    f.stats.held_buffers -= 1;
                    f.stats.hits += 1;
                    Some(b)
                }
                None => {
                    f.stats.misses += 1;
                    None
                }
            }
        };
        let buf = match found {
            Some(mut b) => {
                // best_fit checked len <= capacity, so it fits usize.
                b.reset(len as usize);
                b
            }
            // A new allocation this pool will keep: the hook serves it from a lower size on.
            None => match initial {
                Some(initial) => AlignedBuf::growable_with(len, align, initial, POOLED_LARGE_ALLOC_MIN_BYTES)?,
                None => AlignedBuf::new_with(len, align, POOLED_LARGE_ALLOC_MIN_BYTES)?,
            },
        };
        Ok(PooledBuf { buf: Some(buf), home: Arc::downgrade(&self.shared) })
    }
}

impl std::fmt::Debug for BufferPool {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "BufferPool({:?})", self.stats())
    }
}

impl Free {
    /// Index of the smallest free allocation with alignment `align` and a capacity in
    /// `[len, 2 * len)`; of several that small, the most recently freed (its memory is the most
    /// likely to be in cache). Scans from the newest and stops at an exact fit, so a stream of
    /// same-sized tensors finds its buffer at once.
    fn best_fit(&self, len: u64, align: u64) -> Option<usize> {
        let mut best: Option<(usize, usize)> = None;
        for (i, b) in self.bufs.iter().enumerate().rev() {
            let cap = b.capacity() as u64;
            if b.align() as u64 == align && cap >= len && cap - len < len && best.is_none_or(|(_, c)| b.capacity() < c)
            {
                best = Some((i, b.capacity()));
                if cap == len {
                    break;
                }
            }
        }
        best.map(|(i, _)| i)
    }

    /// Evicts the oldest free allocations until `incoming` more bytes and one more buffer fit
    /// (or, for `incoming == 0`, until the pool is within its cap). Returns what to free once
    /// the lock is released.
    fn make_room(&mut self, incoming: u64) -> Vec<AlignedBuf> {
        let mut out = Vec::new();
        let max_count = if incoming == 0 { MAX_POOLED_BUFFERS } else { MAX_POOLED_BUFFERS - 1 };
        while !self.bufs.is_empty()
            && (self.stats.held_bytes + incoming > self.stats.max_bytes || self.bufs.len() > max_count)
        {
            let b = self.bufs.pop_front().expect("non-empty");
            self.stats.held_bytes -= b.capacity() as u64;
            self.stats.held_buffers -= 1;
            self.stats.freed += 1;
            out.push(b);
        }
        out
    }

    /// Files a returned allocation, or hands it back to be freed.
    fn give_back(&mut self, b: AlignedBuf) -> Vec<AlignedBuf> {
        let cap = b.capacity() as u64;
        if cap == 0 || cap > self.stats.max_bytes {
            self.stats.freed += 1;
            return vec![b];
        }
        let evicted = self.make_room(cap);
        self.stats.held_bytes += cap;
        self.stats.held_buffers += 1;
        self.stats.returned += 1;
        self.bufs.push_back(b);
        evicted
    }
}

/// Locks a pool, ignoring poisoning: the pool's state is consistent after every statement that
/// can panic (none of them do in practice), and a pool must never turn a tensor drop into a
/// panic.
fn lock(m: &Mutex<Free>) -> MutexGuard<'_, Free> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

/// A buffer a reader filled, owning its aligned allocation exclusively. It dereferences to
/// [`AlignedBuf`] (so `as_slice`, `as_ptr`, `len` … work as on a plain buffer). When dropped,
/// the allocation goes back to the [`BufferPool`] it came from, if that pool still exists;
/// otherwise (or for an unpooled buffer) it is freed. Send and Sync like `AlignedBuf`.
pub struct PooledBuf {
    /// Always `Some` until drop or `into_inner`.
    buf: Option<AlignedBuf>,
    home: Weak<Mutex<Free>>,
}

impl PooledBuf {
    /// Wraps an allocation that belongs to no pool (freed when dropped).
    pub fn unpooled(buf: AlignedBuf) -> Self {
        PooledBuf { buf: Some(buf), home: Weak::new() }
    }

    /// True while the pool this buffer returns to still exists.
    pub fn is_pooled(&self) -> bool {
        self.home.strong_count() > 0
    }

    /// Detaches the allocation from its pool: it is then freed when dropped, never reused.
    pub fn into_inner(mut self) -> AlignedBuf {
        self.buf.take().expect("PooledBuf holds its buffer until dropped")
    }
}

impl From<AlignedBuf> for PooledBuf {
    fn from(buf: AlignedBuf) -> Self {
        PooledBuf::unpooled(buf)
    }
}

impl Deref for PooledBuf {
    type Target = AlignedBuf;
    fn deref(&self) -> &AlignedBuf {
        self.buf.as_ref().expect("PooledBuf holds its buffer until dropped")
    }
}

impl DerefMut for PooledBuf {
    fn deref_mut(&mut self) -> &mut AlignedBuf {
        self.buf.as_mut().expect("PooledBuf holds its buffer until dropped")
    }
}

impl Drop for PooledBuf {
    fn drop(&mut self) {
        let Some(buf) = self.buf.take() else { return };
        let Some(pool) = self.home.upgrade() else { return };
        // Free outside the lock (a large free may unmap memory).
        let to_free = lock(&pool).give_back(buf);
        drop(to_free);
    }
}

impl std::fmt::Debug for PooledBuf {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match &self.buf {
            Some(b) => write!(f, "{b:?}{}", if self.is_pooled() { " (pooled)" } else { "" }),
            None => write!(f, "PooledBuf(taken)"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ErrorKind;

    fn fill(b: &mut PooledBuf, v: u8) {
        let n = b.len();
        b.spare_mut().write_copy_of_slice(&vec![v; n]);
        b.advance(n);
    }

    #[test]
    fn returned_allocation_is_reused() {
        let pool = BufferPool::new(1 << 20);
        let mut a = pool.take(4096, 64).unwrap();
        fill(&mut a, 7);
        let p = a.as_ptr();
        drop(a);
        assert_eq!(pool.stats().held_bytes, 4096);
        let b = pool.take(4000, 64).unwrap();
        assert_eq!(b.as_ptr(), p, "same allocation comes back");
        assert_eq!(b.len(), 4000);
        assert_eq!(b.capacity(), 4096);
        assert_eq!(b.filled(), 0, "a reused buffer starts empty");
        assert_eq!(b.as_slice(), &[] as &[u8]);
        let s = pool.stats();
        assert_eq!((s.hits, s.misses, s.held_bytes, s.held_buffers), (1, 1, 0, 0));
    }

    #[test]
    fn the_smallest_fit_wins_and_of_equals_the_newest() {
        let pool = BufferPool::new(1 << 20);
        let big = pool.take(1500, 64).unwrap();
        let old = pool.take(1024, 64).unwrap();
        let new = pool.take(1024, 64).unwrap();
        let (big_p, old_p, new_p) = (big.as_ptr(), old.as_ptr(), new.as_ptr());
        drop(old);
        drop(big);
        drop(new);
        assert_eq!(pool.take(1024, 64).unwrap().as_ptr(), new_p, "exact fits: the most recently freed");
        // That one is back in the pool, newest again; a smaller request still prefers the smallest fit.
        let a = pool.take(1000, 64).unwrap();
        let b = pool.take(1000, 64).unwrap();
        assert_eq!((a.as_ptr(), b.as_ptr()), (new_p, old_p), "1024-byte buffers before the 1500-byte one");
        assert_eq!(pool.take(1000, 64).unwrap().as_ptr(), big_p);
    }

    #[test]
    fn no_reuse_while_alive() {
        let pool = BufferPool::new(1 << 20);
        let a = pool.take(1000, 64).unwrap();
        let b = pool.take(1000, 64).unwrap();
        assert_ne!(a.as_ptr(), b.as_ptr());
        assert_eq!(pool.stats().misses, 2);
        drop(a);
        let c = pool.take(1000, 64).unwrap();
        assert_ne!(c.as_ptr(), b.as_ptr(), "b is still alive");
    }

    #[test]
    fn too_large_or_wrong_alignment_not_reused() {
        let pool = BufferPool::new(1 << 20);
        drop(pool.take(10_000, 64).unwrap());
        // 4000 * 2 <= 10000: wasteful, not reused.
        let small = pool.take(4000, 64).unwrap();
        assert_eq!(pool.stats().hits, 0);
        drop(small);
        // Another alignment: not reused.
        let other = pool.take(10_000, 4096).unwrap();
        assert_eq!(other.as_ptr() as usize % 4096, 0);
        assert_eq!(pool.stats().hits, 0);
        // Larger than any free allocation: not reused.
        drop(pool.take(20_000, 64).unwrap());
        assert_eq!(pool.stats().hits, 0);
        // Fits: the smallest fitting one is taken.
        let fit = pool.take(4000, 64).unwrap();
        assert_eq!(fit.capacity(), 4000);
        assert_eq!(pool.stats().hits, 1);
    }

    #[test]
    fn alignment_honoured_on_reuse() {
        let pool = BufferPool::new(8 << 20);
        for align in [64u64, 4096, 1 << 21] {
            let a = pool.take(5000, align).unwrap();
            let p = a.as_ptr();
            drop(a);
            let b = pool.take(5000, align).unwrap();
            assert_eq!(b.as_ptr(), p);
            assert_eq!(b.as_ptr() as usize % align as usize, 0);
            assert_eq!(b.align() as u64, align);
        }
    }

    #[test]
    fn cap_is_respected() {
        let pool = BufferPool::new(10_000);
        let bufs: Vec<_> = (0..4).map(|_| pool.take(4000, 64).unwrap()).collect();
        drop(bufs);
        let s = pool.stats();
        assert!(s.held_bytes <= 10_000, "{s:?}");
        assert_eq!(s.held_buffers, 2);
        assert_eq!(s.freed, 2);
        // Larger than the cap: freed at once.
        drop(pool.take(20_000, 64).unwrap());
        assert_eq!(pool.stats().held_buffers, 2);
        // Lowering the cap frees the oldest now.
        pool.set_max_bytes(5000);
        assert_eq!(pool.stats().held_buffers, 1);
        pool.set_max_bytes(0);
        assert_eq!(pool.stats().held_bytes, 0);
        drop(pool.take(100, 64).unwrap());
        assert_eq!(pool.stats().held_buffers, 0, "a cap of 0 keeps nothing");
    }

    #[test]
    fn count_is_bounded() {
        let pool = BufferPool::new(u64::MAX);
        let bufs: Vec<_> = (0..MAX_POOLED_BUFFERS + 10).map(|_| pool.take(64, 64).unwrap()).collect();
        drop(bufs);
        assert_eq!(pool.stats().held_buffers, MAX_POOLED_BUFFERS);
        pool.clear();
        assert_eq!(pool.stats().held_buffers, 0);
        assert_eq!(pool.stats().held_bytes, 0);
    }

    #[test]
    fn buffers_outlive_their_pool() {
        let pool = BufferPool::new(1 << 20);
        let mut a = pool.take(3000, 64).unwrap();
        fill(&mut a, 9);
        assert!(a.is_pooled());
        drop(pool);
        assert!(!a.is_pooled());
        assert!(a.as_slice().iter().all(|&x| x == 9));
        drop(a); // simply freed
    }

    #[test]
    fn zero_bytes_and_errors() {
        let pool = BufferPool::new(1 << 20);
        let z = pool.take(0, 64).unwrap();
        assert_eq!(z.len(), 0);
        assert_eq!(z.as_ptr() as usize % 64, 0);
        drop(z);
        assert_eq!(pool.stats().held_buffers, 0);
        assert_eq!(pool.take(10, 3).unwrap_err().kind(), ErrorKind::InvalidAlignment);
        assert_eq!(pool.take(u64::MAX, 64).unwrap_err().kind(), ErrorKind::LimitExceeded);
        let detached = pool.take(100, 64).unwrap().into_inner();
        drop(detached);
        assert_eq!(pool.stats().held_buffers, 0, "into_inner detaches");
    }

    #[test]
    fn shared_across_threads() {
        let pool = BufferPool::new(1 << 20);
        let bufs: Vec<_> = (0..8).map(|_| pool.take(1024, 64).unwrap()).collect();
        std::thread::scope(|s| {
            for b in bufs {
                s.spawn(move || drop(b));
            }
        });
        assert_eq!(pool.stats().held_buffers, 8);
    }
}
