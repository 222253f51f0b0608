//! Stream throughput through an in-memory transport, against memcpy of the same bytes in the
//! same run (target ≥ 0.8× memcpy). Not a test: run it with
//!
//! ```sh
//! cd native && cargo run --release --offline -p hurray-core --example stream_bench [-- TENSORS RUNS MIB]
//! ```
//!
//! Each run moves TENSORS (default 16) tensors of MIB (default 4) MiB:
//! - write path: `StreamWriter` → a `Vec<u8>` sink whose capacity is reused between runs,
//!   compared with memcpy of the same 4 MiB source into consecutive 4 MiB slots of a buffer of
//!   the same size (the same memory pattern);
//! - read path: `StreamReader` over the encoded stream in memory → one new aligned allocation
//!   per tensor (the reader's API gives each tensor its own buffers), compared with memcpy of
//!   consecutive 4 MiB slots of a source of the same size into one 4 MiB destination.
//!
//! Both paths run without and with payload checksums; the read path also with every tensor
//! of a run kept alive (fresh pages each time), next to plain memcpy into fresh allocations,
//! and with a buffer pool (`ReaderOptions::pool_bytes`) that hands each dropped tensor's
//! allocation to the next tensor (glibc serves allocations above its mmap threshold, at most
//! 32 MiB, with fresh pages every time, so without a pool large tensors pay page faults).
//! Each path alternates run by run with its memcpy baseline, so both see the same machine
//! load; figures are medians of RUNS (default 15) after 3 warm-up runs, and the ratio is the
//! median of the per-run ratios. GB/s counts payload bytes (10^9 bytes per second). Minor page
//! faults
//! per run come from /proc/self/stat (Linux), to show whether allocation touched fresh pages.

use std::hint::black_box;
use std::time::Instant;

use hurray_core::stream::SliceSource;
use hurray_core::{
    BufferPool, ElementType, ReaderOptions, Shape, StreamReader, StreamWriter, TensorDescriptor, WriterOptions,
};

const WARMUP: usize = 3;

fn minor_faults() -> u64 {
    // Field 10 of /proc/self/stat is minflt; the command name (field 2) may contain spaces,
    // so count from the closing parenthesis.
    std::fs::read_to_string("/proc/self/stat")
        .ok()
        .and_then(|s| s.rsplit_once(')').map(|(_, rest)| rest.to_string()))
        .and_then(|rest| rest.split_whitespace().nth(7).and_then(|v| v.parse().ok()))
        .unwrap_or(0)
}

/// Runs `base` and `path` alternately (so both see the same machine load), after warm-up.
/// Returns the median seconds of each, the median of the per-pair ratios `base / path`, and
/// the median minor faults of `path` per run.
fn measure_pair(runs: usize, mut base: impl FnMut(), mut path: impl FnMut()) -> (f64, f64, f64, u64) {
    for _ in 0..WARMUP {
        base();
        path();
    }
    let (mut tb, mut tp, mut ratio, mut faults) = (Vec::new(), Vec::new(), Vec::new(), Vec::new());
    for _ in 0..runs {
        let t = Instant::now();
        base();
        let b = t.elapsed().as_secs_f64();
        let f0 = minor_faults();
        let t = Instant::now();
        path();
        let p = t.elapsed().as_secs_f64();
        faults.push(minor_faults() - f0);
        tb.push(b);
        tp.push(p);
        ratio.push(b / p);
    }
    (median(&mut tb), median(&mut tp), median(&mut ratio), {
        faults.sort();
        faults[runs / 2]
    })
}

fn median(v: &mut [f64]) -> f64 {
    v.sort_by(|a, b| a.partial_cmp(b).unwrap());
    v[v.len() / 2]
}

fn gbps(bytes: usize, secs: f64) -> f64 {
    bytes as f64 / secs / 1e9
}

fn main() {
    let mut args = std::env::args().skip(1);
    let tensors: usize = args.next().and_then(|a| a.parse().ok()).unwrap_or(16);
    let runs: usize = args.next().and_then(|a| a.parse().ok()).unwrap_or(15);
    let mib: usize = args.next().and_then(|a| a.parse().ok()).unwrap_or(4);
    #[allow(non_snake_case)]
    let TENSOR_BYTES = mib << 20;
    let total = tensors * TENSOR_BYTES;

    let desc =
        TensorDescriptor::dense(ElementType::Float32, Shape::new(vec![(TENSOR_BYTES / 4) as u64]).unwrap()).unwrap();
    let encoded = desc.encode().unwrap();
    let payload: Vec<u8> = (0..TENSOR_BYTES).map(|i| (i * 131 + 7) as u8).collect();

    println!("stream_bench: {tensors} tensors of {mib} MiB per run ({} MiB), medians of {runs} runs", total >> 20);
    println!("each path alternates with its memcpy baseline; the ratio is the median of per-run ratios");
    println!("{:<46} {:>8} {:>12} {:>10} {:>11}", "path", "GB/s", "memcpy GB/s", "vs memcpy", "faults/run");
    let row = |label: &str, (b, p, r, f): (f64, f64, f64, u64)| {
        println!("{:<46} {:>8.2} {:>12.2} {:>9.2}x {:>11}", label, gbps(total, p), gbps(total, b), r, f);
    };

    // Write path: baseline copies the same source into consecutive slots of an equal buffer.
    let mut slots = vec![0u8; total];
    let mut memcpy_write = || {
        for chunk in slots.chunks_exact_mut(TENSOR_BYTES) {
            chunk.copy_from_slice(black_box(&payload));
        }
        black_box(&mut slots);
    };
    let mut streams = Vec::new();
    for checksums in [false, true] {
        let opts = WriterOptions { payload_checksums: checksums };
        let mut sink: Vec<u8> = Vec::new();
        let m = measure_pair(runs, &mut memcpy_write, || {
            let mut buf = std::mem::take(&mut sink);
            buf.clear();
            let mut w = StreamWriter::new(buf, opts);
            for _ in 0..tensors {
                w.write_encoded(&desc, &encoded, &[&payload]).unwrap();
            }
            w.finish().unwrap();
            sink = w.into_transport();
        });
        row(&format!("write: tensor -> memory{}", if checksums { ", payload CRC32C" } else { "" }), m);
        streams.push((checksums, sink));
    }

    // Read path: baseline copies consecutive slots of an equal source into one MIB buffer.
    let source = streams[0].1.clone();
    let mut dst = vec![0u8; TENSOR_BYTES];
    let mut memcpy_read = || {
        for chunk in source[..total].chunks_exact(TENSOR_BYTES) {
            dst.copy_from_slice(black_box(chunk));
        }
        black_box(&mut dst);
    };
    for (checksums, bytes) in &streams {
        let mut read = 0usize;
        let m = measure_pair(runs, &mut memcpy_read, || {
            let mut r = StreamReader::new(SliceSource::new(bytes, usize::MAX), ReaderOptions::default()).unwrap();
            while let Some(t) = r.next_tensor().unwrap() {
                read += black_box(t.buffers[0].as_slice()).len();
            }
        });
        assert_eq!(read, (WARMUP + runs) * total);
        row(&format!("read: memory -> aligned tensor{}", if *checksums { ", payload CRC32C" } else { "" }), m);
    }

    // The same reads with a buffer pool: each tensor is dropped before the next is read, so its
    // allocation (pages already resident) is reused.
    let pooled = ReaderOptions { pool_bytes: 2 * TENSOR_BYTES as u64, ..ReaderOptions::default() };
    let mut read = 0usize;
    let m = measure_pair(runs, &mut memcpy_read, || {
        let mut r = StreamReader::new(SliceSource::new(&streams[0].1, usize::MAX), pooled).unwrap();
        while let Some(t) = r.next_tensor().unwrap() {
            read += black_box(t.buffers[0].as_slice()).len();
        }
    });
    assert_eq!(read, (WARMUP + runs) * total);
    row("read, pooled (new reader and pool per run)", m);

    // Steady state of a long-lived reader: one pool kept across runs, so no run starts cold.
    let pool = BufferPool::new(2 * TENSOR_BYTES as u64);
    let m = measure_pair(runs, &mut memcpy_read, || {
        let mut r = StreamReader::new(SliceSource::new(&streams[0].1, usize::MAX), ReaderOptions::default()).unwrap();
        r.set_buffer_pool(Some(pool.clone()));
        while let Some(t) = r.next_tensor().unwrap() {
            black_box(t.buffers[0].as_slice());
        }
    });
    row("read, pooled (one pool across runs)", m);

    // A consumer that keeps every tensor of a run alive makes the allocator hand out fresh
    // pages, so each tensor pays first-touch page faults (TOOLCHAIN.md: ~12 µs per 4 KiB).
    let bytes = &streams[0].1;
    let m = measure_pair(runs.min(7), &mut memcpy_read, || {
        let mut r = StreamReader::new(SliceSource::new(bytes, usize::MAX), ReaderOptions::default()).unwrap();
        let mut kept = Vec::with_capacity(tensors);
        while let Some(t) = r.next_tensor().unwrap() {
            kept.push(t);
        }
        black_box(&kept);
    });
    row("read, every tensor of the run kept alive", m);

    // The same first-touch cost without Hurray: memcpy into fresh allocations, all kept.
    let m = measure_pair(runs.min(7), &mut memcpy_read, || {
        let mut bufs: Vec<Vec<u8>> = Vec::with_capacity(tensors);
        for chunk in source[..total].chunks_exact(TENSOR_BYTES) {
            let mut v = Vec::with_capacity(TENSOR_BYTES);
            v.extend_from_slice(chunk);
            bufs.push(v);
        }
        black_box(&bufs);
    });
    row("(memcpy into fresh Vecs, all kept)", m);
}
