//! A stream that declares more payload than it carries must not cost the declared memory:
//! the reader's buffers grow as bytes arrive (docs/spec/stream.md §Limits). Peak live heap
//! bytes are measured with a counting global allocator.

mod common;

use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicUsize, Ordering};

use common::*;
use hurray_core::crc32c::crc32c;
use hurray_core::stream::EAGER_RESERVE_BYTES;
use hurray_core::{
    BufferHandle, DeviceTag, ElementType, ErrorKind, LayoutDescriptor, Quantization, ReaderOptions, SyncMode,
    GROW_MIN_BYTES,
};

struct Peak;

static LIVE: AtomicUsize = AtomicUsize::new(0);
static PEAK: AtomicUsize = AtomicUsize::new(0);

fn note(delta_add: usize, delta_sub: usize) {
    let now = LIVE.fetch_add(delta_add, Ordering::Relaxed) + delta_add - delta_sub;
    LIVE.fetch_sub(delta_sub, Ordering::Relaxed);
    PEAK.fetch_max(now, Ordering::Relaxed);
}

// SAFETY: every method forwards to `System` unchanged and only counts bytes on the side, so
// `System`'s guarantees are this allocator's.
unsafe impl GlobalAlloc for Peak {
    unsafe fn alloc(&self, l: Layout) -> *mut u8 {
        // SAFETY: forwarded unchanged: `l` meets GlobalAlloc::alloc's contract, which System shares.
        let p = unsafe { System.alloc(l) };
        if !p.is_null() {
            note(l.size(), 0);
        }
        p
    }
    unsafe fn dealloc(&self, p: *mut u8, l: Layout) {
        // SAFETY: forwarded unchanged: `p` came from System (every allocation here forwards to it) with layout `l`.
        unsafe { System.dealloc(p, l) };
        note(0, l.size());
    }
    unsafe fn realloc(&self, p: *mut u8, l: Layout, new: usize) -> *mut u8 {
        // SAFETY: forwarded unchanged: `p` came from System with layout `l`, and `new` meets realloc's contract.
        let q = unsafe { System.realloc(p, l, new) };
        if !q.is_null() {
            note(new, l.size());
        }
        q
    }
}

#[global_allocator]
static ALLOC: Peak = Peak;

// Tests in this file run one at a time (the counters are process-wide).
static SERIAL: std::sync::Mutex<()> = std::sync::Mutex::new(());

/// Runs `f` and returns the peak of live heap bytes above the level at the start.
fn peak_during<R>(f: impl FnOnce() -> R) -> (R, usize) {
    let base = LIVE.load(Ordering::Relaxed);
    PEAK.store(base, Ordering::Relaxed);
    let r = f();
    (r, PEAK.load(Ordering::Relaxed).saturating_sub(base))
}

/// One tensor frame: int8 `[2]` quantized per channel, so it has three buffers of these sizes
/// (larger than the shape needs, which the format allows), followed by `payload`.
fn raw_stream(buffers: &[u64], payload: &[u8]) -> Vec<u8> {
    tensor_frame_stream(&encoded(buffers), payload)
}

fn encoded(buffers: &[u64]) -> Vec<u8> {
    let handles =
        buffers.iter().map(|&b| BufferHandle::new(b, 64, DeviceTag::Cpu, SyncMode::ProducerSynced).unwrap()).collect();
    let q =
        (buffers.len() > 1).then_some(Quantization::PerChannelAffine { axis: 0, dequantized: ElementType::Float32 });
    let et = if q.is_some() { ElementType::Int8 } else { ElementType::Uint8 };
    let desc = descriptor(et, &[2], 0, LayoutDescriptor::RowMajor, handles, q);
    desc.encode().unwrap()
}

#[test]
fn a_tiny_stream_declaring_60_gib_is_truncated_without_allocating_it() {
    let _g = SERIAL.lock().unwrap_or_else(|p| p.into_inner());
    let s = raw_stream(&[60 << 30], &[7; 48]);
    assert!(s.len() <= 152, "{} bytes", s.len());
    let ((_, end), peak) = peak_during(|| read_bytes(&s, usize::MAX, ReaderOptions::default()));
    assert_eq!(end.unwrap_err().kind(), ErrorKind::Truncated);
    // The eager reserve (untouched) plus the 64 KiB read-ahead and bookkeeping.
    assert!(peak <= EAGER_RESERVE_BYTES + (1 << 20), "peak {peak} bytes");
}

#[test]
fn a_stream_declaring_a_terabyte_allocates_by_what_arrives() {
    let _g = SERIAL.lock().unwrap_or_else(|p| p.into_inner());
    let opts = ReaderOptions { max_tensor_bytes: u64::MAX, ..Default::default() };
    // A few bytes of payload: the untouched eager reserve at most.
    let s = raw_stream(&[1 << 40], &[7; 16]);
    let ((_, end), peak) = peak_during(|| read_bytes(&s, usize::MAX, opts));
    assert_eq!(end.unwrap_err().kind(), ErrorKind::Truncated);
    assert!(peak <= EAGER_RESERVE_BYTES + (1 << 20), "peak {peak} bytes");
    // 80 MiB of payload, past the eager reserve: the buffer has grown once, to at most
    // twice what arrived.
    let got = 80 << 20;
    let s = raw_stream(&[1 << 40], &vec![7; got]);
    for chunk in [usize::MAX, 1 << 20] {
        let ((_, end), peak) = peak_during(|| read_bytes(&s, chunk, opts));
        assert_eq!(end.unwrap_err().kind(), ErrorKind::Truncated);
        assert!(peak <= 2 * got + (1 << 20), "chunk {chunk}: peak {peak} bytes for {got} received");
    }
}

#[test]
fn a_declared_size_the_allocator_cannot_reserve_is_still_plain_truncation() {
    let _g = SERIAL.lock().unwrap_or_else(|p| p.into_inner());
    // 2^46 bytes (64 TiB): reserving it up front fails (OutOfMemory) on any machine; the
    // input ends long before, which is what must be reported.
    let s = raw_stream(&[1 << 46], &[1; 100]);
    let opts = ReaderOptions { max_tensor_bytes: u64::MAX, ..Default::default() };
    let (_, end) = read_bytes(&s, 7, opts);
    assert_eq!(end.unwrap_err().kind(), ErrorKind::Truncated);
}

#[test]
fn many_huge_buffers_share_one_eager_budget() {
    let _g = SERIAL.lock().unwrap_or_else(|p| p.into_inner());
    let s = raw_stream(&[20 << 30; 3], &[0; 1000]);
    let ((_, end), peak) = peak_during(|| read_bytes(&s, usize::MAX, ReaderOptions::default()));
    assert_eq!(end.unwrap_err().kind(), ErrorKind::Truncated);
    assert!(peak <= EAGER_RESERVE_BYTES + 3 * GROW_MIN_BYTES + (1 << 20), "peak {peak} bytes");
}

#[test]
fn buffers_beyond_the_eager_budget_grow_and_read_back_exactly() {
    let _g = SERIAL.lock().unwrap_or_else(|p| p.into_inner());
    // Buffer 0 takes all but 100 KiB of the budget; buffer 1 (3 MiB) then starts at 100 KiB
    // and grows five times while arriving in 4097-byte reads.
    let a = (EAGER_RESERVE_BYTES - 100 * 1024) as u64;
    let b = (3 << 20) + 13;
    let mut rng = Rng::new(8);
    let payloads = [rng.bytes(a as usize), rng.bytes(b as usize)];
    let s = raw_stream(&[a, b, 64], &[payloads.concat(), vec![5; 64]].concat());
    let mut s = s;
    s.extend_from_slice(&end_marker());
    for chunk in [4097, usize::MAX] {
        for pool in [0, 1 << 30] {
            let opts = ReaderOptions { pool_bytes: pool, ..Default::default() };
            let (got, end) = read_bytes(&s, chunk, opts);
            end.unwrap();
            assert_eq!(got.len(), 1);
            assert!(got[0].1[..2] == payloads[..], "chunk {chunk}, pool {pool}");
        }
    }
}

fn end_marker() -> Vec<u8> {
    let mut f = hurray_core::stream::FRAME_END.to_vec();
    f.extend_from_slice(&[0; 16]);
    let c = crc32c(&f);
    f.extend_from_slice(&c.to_le_bytes());
    f
}

/// A block size the data does not back must not size scratch memory: NF4 (whose last block
/// may be partial, so its block may exceed the element count) with a block of nearly 2^32
/// elements over a 4-element tensor asked for 2^32 words of index scratch, 34 GB, and
/// aborted the process when that failed.
#[test]
fn a_huge_declared_block_over_few_elements_allocates_by_the_data() {
    use hurray_core::{quantize, BlockQuant, Shape};
    let _g = SERIAL.lock().unwrap_or_else(|p| p.into_inner());
    for block in [u32::MAX - 1, 1 << 31] {
        let q = Some(Quantization::Block(BlockQuant::nf4(block)));
        let input = [0.5f32, -1.0, 0.25, 1.0];
        let (r, peak) =
            peak_during(|| quantize::quantize_to_vec(ElementType::Uint4, Shape::new(vec![4]).unwrap(), q, &input));
        let (d, bufs) = r.unwrap();
        assert!(peak < 1 << 20, "block {block}: quantizing 4 elements peaked at {peak} bytes");
        let views: Vec<&[u8]> = bufs.iter().map(|b| b.as_slice()).collect();
        let (r, peak) = peak_during(|| quantize::dequantize_to_vec(&d, &views));
        // NF4 is lossy: one block of absmax 1 gives each value its nearest code.
        let got = r.unwrap();
        assert!(got.iter().zip(&input).all(|(g, x)| (g - x).abs() < 0.07), "{got:?}");
        assert!(peak < 1 << 20, "block {block}: dequantizing 4 elements peaked at {peak} bytes");
    }
}
