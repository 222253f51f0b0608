//! Per-tensor CPU cost of reading small named tensors through the C ABI's sans-I/O decoder
//! (`hurray_decoder_next`, then `hurray_tensor_destroy`; and as the Java reader calls it:
//! `hurray_decoder_next_batch` for up to 64 tensors, each destroyed through a queue freed with
//! one `hurray_tensor_destroy_many` per 64), next to the core `StreamDecoder` alone over the same
//! bytes, in the same run. Not a test: run it with
//!
//! ```sh
//! cd native && cargo run --release --offline -p hurray-ffi --example decoder_bench [-- N ROUNDS ELEMS [core|ffi|batch|none]]
//! ```
//!
//! N (default 200,000) float32[ELEMS] (default 256: 1 KiB) tensors, each with its own name and
//! one metadata entry, encoded once; each round decodes them all from memory, with a 1 MiB
//! buffer pool, looking at every tensor's name. Prints the median of ROUNDS (default 7) in µs
//! of CPU time of this thread per tensor (`/proc/thread-self/schedstat`), and the heap blocks
//! each path allocates per tensor (counted by this program's global allocator).

use std::hint::black_box;
use std::ptr::null;

use hurray_core::{
    Decoded, ElementType, OutSeg, ReaderOptions, Shape, StreamDecoder, StreamEncoder, TensorDescriptor, WriterOptions,
};
use hurray_ffi::decoder::*;
use hurray_ffi::tensor::{hurray_tensor_destroy, hurray_tensor_destroy_many, HurrayTensor};
use hurray_ffi::*;

/// The system allocator, counting allocations (one relaxed add each, the same for every path).
struct Counting;
static ALLOCS: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);

// SAFETY: every method forwards to `System` unchanged and only counts calls on the side.
unsafe impl std::alloc::GlobalAlloc for Counting {
    unsafe fn alloc(&self, l: std::alloc::Layout) -> *mut u8 {
        ALLOCS.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        // SAFETY: forwarded unchanged: the caller's `GlobalAlloc::alloc` contract holds for System too.
        unsafe { std::alloc::System.alloc(l) }
    }
    unsafe fn dealloc(&self, p: *mut u8, l: std::alloc::Layout) {
        // SAFETY: forwarded unchanged: `p` came from System with layout `l`.
        unsafe { std::alloc::System.dealloc(p, l) }
    }
    unsafe fn realloc(&self, p: *mut u8, l: std::alloc::Layout, new: usize) -> *mut u8 {
        ALLOCS.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        // SAFETY: forwarded unchanged: `p` came from System with layout `l`; `new` meets realloc's contract.
        unsafe { std::alloc::System.realloc(p, l, new) }
    }
}

#[global_allocator]
static ALLOC: Counting = Counting;

fn allocs() -> u64 {
    ALLOCS.load(std::sync::atomic::Ordering::Relaxed)
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let n: usize = args.get(1).and_then(|s| s.parse().ok()).unwrap_or(200_000);
    let rounds: usize = args.get(2).and_then(|s| s.parse().ok()).unwrap_or(7);
    let elems: u64 = args.get(3).and_then(|s| s.parse().ok()).unwrap_or(256);
    // Larger payloads are borrowed by the encoder rather than staged, which `drain` does not take.
    assert!(elems <= 16_384, "ELEMS at most 16384 (64 KiB payloads)");
    // "core", "ffi" or "none" runs only that path (for counting calls with uprobes).
    let only = args.get(4).map(String::as_str).unwrap_or("both");
    let template = TensorDescriptor::dense(ElementType::Float32, Shape::new(vec![elems]).unwrap())
        .unwrap()
        .with_metadata("source", "bench")
        .unwrap();
    let payload = vec![1u8; elems as usize * 4];
    let mut wire = Vec::new();
    let mut e = StreamEncoder::new(WriterOptions::default());
    for i in 0..n {
        let d = template.clone().with_name(format!("emb-{i}")).unwrap();
        let enc = d.encode().unwrap();
        e.encode(&d, &enc, &[&payload]).unwrap();
        drain(&mut e, &mut wire);
    }
    e.finish().unwrap();
    drain(&mut e, &mut wire);

    let paths: [(&str, ReadFn); 3] = [("core", core_read), ("ffi", ffi_read), ("batch", batch_read)];
    let mut us = vec![Vec::new(); paths.len()];
    let mut blocks = vec![0.0; paths.len()];
    for round in 0..rounds + 2 {
        for (k, (name, read)) in paths.iter().enumerate() {
            if !matches!(only, "both") && only != *name {
                continue;
            }
            let (t, a) = (cpu_ns(), allocs());
            assert_eq!(read(&wire), n);
            let (t, a) = (cpu_ns() - t, allocs() - a);
            if round >= 2 {
                us[k].push(t as f64 / 1e3 / n as f64);
                blocks[k] = a as f64 / n as f64;
            }
        }
    }
    println!(
        "| {n} named float32[{elems}] + 1 metadata entry, read from memory (median of {rounds}) | µs of CPU per tensor | heap blocks per tensor |"
    );
    println!("|---|---|---|");
    let rows = [
        "core `StreamDecoder::poll` + name + drop",
        "C ABI `hurray_decoder_next` + name + `hurray_tensor_destroy`",
        "C ABI `hurray_decoder_next_batch` (64) + name + `hurray_tensor_destroy_many` (64)",
    ];
    for (k, row) in rows.iter().enumerate() {
        if let Some(m) = median(&mut us[k]) {
            println!("| {row} | {m:.3} | {:.1} |", blocks[k]);
        }
    }
}

/// One read path: decodes the whole wire, returns the tensor count.
type ReadFn = fn(&[u8]) -> usize;

fn median(v: &mut [f64]) -> Option<f64> {
    v.sort_by(f64::total_cmp);
    v.get(v.len() / 2).copied()
}

fn core_read(wire: &[u8]) -> usize {
    let mut d = StreamDecoder::new(ReaderOptions { pool_bytes: 1 << 20, ..ReaderOptions::default() }).unwrap();
    let (mut pos, mut count) = (0, 0);
    loop {
        match d.poll().unwrap() {
            Decoded::Tensor(t) => {
                black_box(t.descriptor.name());
                count += 1;
            }
            Decoded::End => return count,
            Decoded::NeedInput => {
                let dst = d.input_buffer().unwrap();
                let k = dst.len().min(wire.len() - pos);
                dst[..k].write_copy_of_slice(&wire[pos..pos + k]);
                pos += k;
                d.commit(k).unwrap();
            }
        }
    }
}

fn ffi_read(wire: &[u8]) -> usize {
    // SAFETY: the decoder is made and destroyed here; its input window is written within the
    // length it offers; each tensor is destroyed once, after its name was read.
    unsafe {
        let mut d = std::ptr::null_mut();
        assert_eq!(hurray_decoder_new(null(), 1 << 20, &mut d), HURRAY_OK);
        let (mut pos, mut filled, mut count) = (0, 0, 0);
        loop {
            let mut r = std::mem::zeroed::<HurrayDecodeResult>();
            let s = hurray_decoder_next(d, filled, 0, &mut r);
            filled = 0;
            match s {
                HURRAY_OK => {
                    black_box(std::slice::from_raw_parts(r.fields.name.cast::<u8>(), r.fields.name_len));
                    let mut t = r.tensor;
                    assert_eq!(hurray_tensor_destroy(&mut t), HURRAY_OK);
                    count += 1;
                }
                HURRAY_NEED_INPUT => {
                    let k = r.input_len.min(wire.len() - pos);
                    std::ptr::copy_nonoverlapping(wire[pos..].as_ptr(), r.input, k);
                    pos += k;
                    filled = k;
                }
                HURRAY_END_OF_STREAM => break,
                other => panic!("status {other}"),
            }
        }
        assert_eq!(hurray_decoder_destroy(&mut d), HURRAY_OK);
        count
    }
}

/// As the Java reader reads: up to 64 tensors per `hurray_decoder_next_batch`, each tensor's name
/// looked at and its handle queued, the queue freed with one `hurray_tensor_destroy_many` per 64.
fn batch_read(wire: &[u8]) -> usize {
    const BATCH: usize = 64;
    // SAFETY: as in `ffi_read`; `results` has room for `BATCH` results and each tensor is queued
    // once and destroyed once, by `hurray_tensor_destroy_many`.
    unsafe {
        let mut d = std::ptr::null_mut();
        assert_eq!(hurray_decoder_new(null(), 1 << 20, &mut d), HURRAY_OK);
        let mut results = vec![std::mem::zeroed::<HurrayDecodeResult>(); BATCH];
        let mut queue: Vec<*mut HurrayTensor> = Vec::with_capacity(BATCH);
        let (mut pos, mut filled, mut count) = (0, 0, 0);
        let mut input: (*mut u8, usize) = (std::ptr::null_mut(), 0);
        loop {
            if !input.0.is_null() {
                let k = input.1.min(wire.len() - pos);
                std::ptr::copy_nonoverlapping(wire[pos..].as_ptr(), input.0, k);
                pos += k;
                filled = k;
                input = (std::ptr::null_mut(), 0);
            }
            let mut got = 0;
            let s = hurray_decoder_next_batch(d, filled, 0, results.as_mut_ptr(), BATCH, &mut got);
            filled = 0;
            match s {
                HURRAY_OK => {
                    for r in &results[..got] {
                        black_box(std::slice::from_raw_parts(r.fields.name.cast::<u8>(), r.fields.name_len));
                        queue.push(r.tensor);
                        if queue.len() == BATCH {
                            assert_eq!(hurray_tensor_destroy_many(queue.as_mut_ptr(), queue.len()), HURRAY_OK);
                            queue.clear();
                        }
                        count += 1;
                    }
                    if results[0].input_len > 0 {
                        input = (results[0].input, results[0].input_len);
                    }
                }
                HURRAY_NEED_INPUT => input = (results[0].input, results[0].input_len),
                HURRAY_END_OF_STREAM => break,
                other => panic!("status {other}"),
            }
        }
        assert_eq!(hurray_tensor_destroy_many(queue.as_mut_ptr(), queue.len()), HURRAY_OK);
        assert_eq!(hurray_decoder_destroy(&mut d), HURRAY_OK);
        count
    }
}

fn drain(e: &mut StreamEncoder, wire: &mut Vec<u8>) {
    while e.pending_bytes() > 0 {
        let seg = e.segments()[0];
        let off = e.offset();
        let k = match seg {
            OutSeg::Staged { start, end } => {
                wire.extend_from_slice(&e.staged()[start + off..end]);
                end - start - off
            }
            OutSeg::Borrowed { .. } => unreachable!("small payloads are staged"),
        };
        e.consume(k as u64).unwrap();
    }
}

/// This thread's CPU time in ns (Linux: the first field of /proc/thread-self/schedstat).
fn cpu_ns() -> u64 {
    std::fs::read_to_string("/proc/thread-self/schedstat")
        .ok()
        .and_then(|s| s.split_whitespace().next().and_then(|v| v.parse().ok()))
        .unwrap_or(0)
}
