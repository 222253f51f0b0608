//! A growing buffer keeps its bytes wherever the allocator puts its block. The reader's large
//! buffers grow through the allocator's `realloc` (docs/spec/stream.md §Limits), which may
//! enlarge a block in place, remap it, or move it by copying; when a moved block comes back at
//! another offset from the buffer's alignment, the buffer moves its bytes inside it. Here the
//! global allocator moves every large `realloc` to a new block at a rotating offset
//! (16, 32 or 48 bytes past a 64-byte boundary), so every growth takes that path; the tests
//! check alignment and contents through the sans-I/O decoder (input committed exactly up to,
//! one byte short of, and one byte past each capacity boundary) and the stream reader (short
//! and failing reads).

mod common;

use std::alloc::{GlobalAlloc, Layout, System};
use std::mem::MaybeUninit;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;

use common::*;
use hurray_core::stream::EAGER_RESERVE_BYTES;
use hurray_core::{
    Decoded, DeviceTag, ElementType, Error, ErrorKind, LayoutDescriptor, Quantization, ReadTransport, ReaderOptions,
    StreamDecoder, StreamReader, SyncMode,
};

/// Reallocations at least this large are moved; smaller ones go to `System` unchanged.
const MOVE_FROM: usize = 16 * 1024;
/// Bytes of room a moved block gets before its start (a whole alignment of the base block).
const PAD: usize = 64;

/// Most moved blocks alive at once (a fixed table: the allocator must not allocate for itself).
const SLOTS: usize = 256;
/// Moved blocks still alive: (address handed out, base address from System, size asked for);
/// address 0 marks a free slot.
static MOVED: Mutex<[(usize, usize, usize); SLOTS]> = Mutex::new([(0, 0, 0); SLOTS]);
/// Reallocations served by moving, and the rotation of their offsets.
static MOVES: AtomicUsize = AtomicUsize::new(0);

struct Moving;

impl Moving {
    /// Forgets the moved block at `p`, returning its base and size, if it is one.
    fn take(p: *mut u8) -> Option<(usize, usize)> {
        let mut moved = MOVED.lock().unwrap_or_else(|e| e.into_inner());
        let slot = moved.iter_mut().find(|s| s.0 == p as usize)?;
        let (_, base, size) = std::mem::take(slot);
        Some((base, size))
    }

    /// Frees `p` (layout `l`) wherever it came from.
    ///
    /// # Safety
    /// `p` was returned by this allocator with layout `l` and is freed once.
    unsafe fn free(&self, p: *mut u8, l: Layout) {
        match Self::take(p) {
            // SAFETY: `base` came from System with exactly this layout (see `realloc`).
            Some((base, size)) => unsafe {
                System.dealloc(base as *mut u8, Layout::from_size_align_unchecked(size + PAD, PAD))
            },
            // SAFETY: not a moved block, so it came from System with layout `l`.
            None => unsafe { System.dealloc(p, l) },
        }
    }
}

// SAFETY: every block handed out is valid for its layout: either System's own, or a part of a
// larger System block that starts at an address aligned to at least 16 (the largest alignment
// moved here) and has `new` bytes after it; moved blocks are freed through their base block.
unsafe impl GlobalAlloc for Moving {
    unsafe fn alloc(&self, l: Layout) -> *mut u8 {
        // SAFETY: forwarded unchanged.
        unsafe { System.alloc(l) }
    }
    unsafe fn dealloc(&self, p: *mut u8, l: Layout) {
        // SAFETY: the caller's contract is `free`'s.
        unsafe { self.free(p, l) }
    }
    unsafe fn realloc(&self, p: *mut u8, l: Layout, new: usize) -> *mut u8 {
        let is_moved = MOVED.lock().unwrap_or_else(|e| e.into_inner()).iter().any(|s| s.0 == p as usize);
        if !is_moved && (new < MOVE_FROM || l.align() > 16) {
            // SAFETY: forwarded unchanged: `p` is System's own block.
            return unsafe { System.realloc(p, l, new) };
        }
        let shift = 16 * (1 + MOVES.fetch_add(1, Ordering::Relaxed) % 3);
        // SAFETY: a non-zero size and a valid alignment.
        let base = unsafe { System.alloc(Layout::from_size_align_unchecked(new + PAD, PAD)) };
        if base.is_null() {
            return base;
        }
        // SAFETY: base + shift + new stays inside the block of new + PAD bytes (shift <= 48);
        // the old block has l.size() bytes, and min(l.size(), new) fits both.
        let q = unsafe {
            let q = base.add(shift);
            std::ptr::copy_nonoverlapping(p, q, l.size().min(new));
            q
        };
        {
            let mut moved = MOVED.lock().unwrap_or_else(|e| e.into_inner());
            let slot = moved.iter_mut().find(|s| s.0 == 0).expect("a free slot for a moved block");
            *slot = (q as usize, base as usize, new);
        }
        // SAFETY: `p` came from this allocator with layout `l`; it is freed once, here.
        unsafe { self.free(p, l) };
        q
    }
}

#[global_allocator]
static ALLOC: Moving = Moving;

/// Serves `bytes` in reads of at most `chunk`, failing every `fail_every`-th call (0: never)
/// having moved nothing.
struct Choppy<'a> {
    bytes: &'a [u8],
    pos: usize,
    chunk: usize,
    calls: usize,
    fail_every: usize,
    failures: usize,
}

impl ReadTransport for Choppy<'_> {
    fn read(&mut self, dst: &mut [MaybeUninit<u8>]) -> hurray_core::Result<usize> {
        self.calls += 1;
        if self.fail_every > 0 && self.calls.is_multiple_of(self.fail_every) {
            self.failures += 1;
            return Err(Error::new(ErrorKind::Transport, "injected read failure"));
        }
        let n = dst.len().min(self.chunk).min(self.bytes.len() - self.pos);
        dst[..n].write_copy_of_slice(&self.bytes[self.pos..self.pos + n]);
        self.pos += n;
        Ok(n)
    }
}

/// A tensor whose buffers outgrow the eager budget: buffer 0 takes all but 100 KiB of it;
/// buffer 1 (3 MiB + 13) then starts at 100 KiB and grows five times, buffer 2 (300 KiB + 1)
/// starts at 64 KiB and grows three times.
fn growing_item() -> Item {
    let a = EAGER_RESERVE_BYTES as u64 - 100 * 1024;
    let sizes = [a, (3 << 20) + 13, 300 * 1024 + 1];
    let mut rng = Rng::new(24);
    let payloads: Vec<Vec<u8>> = sizes.iter().map(|&n| rng.bytes(n as usize)).collect();
    let handles = sizes.iter().map(|&n| handle(n, 64, DeviceTag::Cpu, SyncMode::ProducerSynced)).collect();
    let q = Some(Quantization::PerChannelAffine { axis: 0, dequantized: ElementType::Float32 });
    let desc = descriptor(ElementType::Int8, &[2], 0, LayoutDescriptor::RowMajor, handles, q);
    Item { desc, payloads }
}

#[test]
fn decoder_input_up_to_across_and_one_short_of_every_growth_boundary() {
    let item = growing_item();
    let bytes = encode_stream(std::slice::from_ref(&item), true);
    // Each pattern says how much of each offered input buffer to fill: all of it (the commit
    // ends on the allocation's boundary, the next input_buffer grows it), all but one byte
    // (the next input then fills the last byte alone), or a single byte where more is offered.
    for pattern in [&[usize::MAX][..], &[usize::MAX - 1, usize::MAX][..], &[usize::MAX, 1, usize::MAX - 1][..]] {
        let moves = MOVES.load(Ordering::Relaxed);
        let mut d = StreamDecoder::new(ReaderOptions::default()).unwrap();
        let (mut pos, mut k, mut got) = (0usize, 0usize, None);
        loop {
            match d.poll().unwrap() {
                Decoded::Tensor(t) => {
                    for b in &t.buffers {
                        assert_eq!(b.as_ptr() as usize % 64, 0);
                    }
                    got = Some((t.descriptor, t.buffers.iter().map(|b| b.as_slice().to_vec()).collect()));
                }
                Decoded::End => break,
                Decoded::NeedInput => {
                    let dst = d.input_buffer().unwrap();
                    assert!(!dst.is_empty(), "a decoder that needs input offers room");
                    let offered = dst.len().min(bytes.len() - pos);
                    let n = match pattern[k % pattern.len()] {
                        usize::MAX => offered,
                        m if m == usize::MAX - 1 => (offered - 1).max(1),
                        m => m.min(offered),
                    };
                    dst[..n].write_copy_of_slice(&bytes[pos..pos + n]);
                    d.commit(n).unwrap();
                    pos += n;
                    k += 1;
                }
            }
        }
        assert_eq!(pos, bytes.len());
        assert_same(&[got.expect("one tensor")], std::slice::from_ref(&item));
        assert!(MOVES.load(Ordering::Relaxed) - moves >= 8, "buffers 1 and 2 grew through moving reallocs");
    }
}

#[test]
fn stream_buffers_beyond_the_eager_budget_read_back_exactly_through_moved_growth() {
    let item = growing_item();
    for checksums in [false, true] {
        let bytes = encode_stream(std::slice::from_ref(&item), checksums);
        // Short reads that hit the direct-read path and the read-ahead, and failing reads
        // (every 7th call) that the reader resumes from.
        for (chunk, fail_every) in [(65_537, 0), (4097, 7), (1 << 20, 3)] {
            let moves = MOVES.load(Ordering::Relaxed);
            let src = Choppy { bytes: &bytes, pos: 0, chunk, calls: 0, fail_every, failures: 0 };
            let mut r = StreamReader::new(src, ReaderOptions::default()).unwrap();
            let mut got = Vec::new();
            loop {
                match r.next_tensor() {
                    Ok(Some(t)) => {
                        for b in &t.buffers {
                            assert_eq!(b.as_ptr() as usize % 64, 0);
                        }
                        got.push((t.descriptor, t.buffers.iter().map(|b| b.as_slice().to_vec()).collect()));
                    }
                    Ok(None) => break,
                    Err(e) if e.kind() == ErrorKind::Transport => continue,
                    Err(e) => panic!("chunk {chunk}: {e}"),
                }
            }
            assert_same(&got, std::slice::from_ref(&item));
            assert!(MOVES.load(Ordering::Relaxed) - moves >= 8, "buffers 1 and 2 grew through moving reallocs");
            assert_eq!(r.transport().failures > 0, fail_every > 0);
        }
    }
}
