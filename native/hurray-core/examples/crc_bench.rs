//! CRC32C throughput of each kernel this CPU supports, against memcpy of the same buffer in the
//! same run. Not a test: run it with
//!
//! ```sh
//! cd native && cargo run --release --offline -p hurray-core --example crc_bench [-- RUNS]
//! ```
//!
//! For each buffer size (1 MiB, 64 KiB, 1 KiB) a run processes 64 MiB: the checksum of one
//! buffer of that size, repeated, or memcpy of that buffer into another of the same size,
//! repeated (both stay in cache exactly as much as their size allows). Each kernel alternates
//! run by run with memcpy, so both see the same machine load; figures are medians of RUNS
//! (default 15) after 3 warm-up runs, and the ratio is the median of per-run ratios. GB/s is
//! 10^9 bytes per second. `crc32c()` is the public entry point (the kernel picked at run time).

use std::hint::black_box;
use std::time::Instant;

use hurray_core::crc32c::{crc32c, update_with, Kernel};

const WARMUP: usize = 3;
const RUN_BYTES: usize = 64 << 20;

fn median(v: &mut [f64]) -> f64 {
    v.sort_by(|a, b| a.partial_cmp(b).unwrap());
    v[v.len() / 2]
}

/// Median seconds of `base` and `path` run alternately, and the median of per-run `base/path`.
fn measure_pair(runs: usize, mut base: impl FnMut(), mut path: impl FnMut()) -> (f64, f64, f64) {
    for _ in 0..WARMUP {
        base();
        path();
    }
    let (mut tb, mut tp, mut ratio) = (Vec::new(), Vec::new(), Vec::new());
    for _ in 0..runs {
        let t = Instant::now();
        base();
        let b = t.elapsed().as_secs_f64();
        let t = Instant::now();
        path();
        let p = t.elapsed().as_secs_f64();
        tb.push(b);
        tp.push(p);
        ratio.push(b / p);
    }
    (median(&mut tb), median(&mut tp), median(&mut ratio))
}

fn main() {
    let runs: usize = std::env::args().nth(1).and_then(|a| a.parse().ok()).unwrap_or(15);
    println!("crc_bench: {} MiB per run, medians of {runs} runs; chosen kernel {:?}", RUN_BYTES >> 20, Kernel::best());
    println!("{:<10} {:<22} {:>8} {:>12} {:>10}", "buffer", "kernel", "GB/s", "memcpy GB/s", "vs memcpy");
    for size in [1usize << 20, 64 << 10, 1 << 10, 256] {
        let src: Vec<u8> = (0..size).map(|i| (i * 131 + 7) as u8).collect();
        let mut dst = vec![0u8; size];
        let reps = RUN_BYTES / size;
        let mut memcpy = || {
            for _ in 0..reps {
                dst.copy_from_slice(black_box(&src));
                black_box(&mut dst);
            }
        };
        let label = match size {
            s if s >= 1 << 20 => format!("{} MiB", s >> 20),
            s if s >= 1 << 10 => format!("{} KiB", s >> 10),
            s => format!("{s} B"),
        };
        let gbps = |secs: f64| (reps * size) as f64 / secs / 1e9;
        let mut row = |name: &str, path: &mut dyn FnMut()| {
            let (b, p, r) = measure_pair(runs, &mut memcpy, path);
            println!("{:<10} {:<22} {:>8.2} {:>12.2} {:>9.2}x", label, name, gbps(p), gbps(b), r);
        };
        for &k in Kernel::ALL.iter().filter(|k| k.available()) {
            row(&format!("{k:?}"), &mut || {
                for _ in 0..reps {
                    black_box(update_with(k, !0, black_box(&src)));
                }
            });
        }
        row("crc32c() (chosen)", &mut || {
            for _ in 0..reps {
                black_box(crc32c(black_box(&src)));
            }
        });
    }
}
