//! Quantization benchmark: dequantize throughput, in float32 output
//! bytes per second, for MXFP4, NF4 and GGUF Q4_0 (plus the other kinds) against a `memcpy` of
//! the same output size, and quantize throughput (float32 input bytes per second), one thread,
//! same run.
//!
//!     cargo run --release --offline -p hurray-core --example quant_bench [MiB of output]
//!
//! The default tensor is [4096, 4096] float32 (64 MiB of output, larger than the caches), so
//! both sides stream through memory. Figures are medians of repeated runs; compare the ratio
//! column, which comes from one run, not absolute numbers across machines.

use std::hint::black_box;
use std::time::Instant;

use hurray_core::quantize::{dequantize, plan, quantize};
use hurray_core::{BlockQuant, ElementType, Quantization, Shape};

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

/// Median seconds of `f` over `reps` runs after one warm-up.
fn time(reps: usize, mut f: impl FnMut()) -> f64 {
    f();
    median(
        (0..reps)
            .map(|_| {
                let t = Instant::now();
                f();
                t.elapsed().as_secs_f64()
            })
            .collect(),
    )
}

fn main() {
    let mib: usize = std::env::args().nth(1).and_then(|a| a.parse().ok()).unwrap_or(64);
    let cols = 4096usize;
    let rows = (mib << 20) / 4 / cols;
    let n = rows * cols;
    let shape = Shape::new(vec![rows as u64, cols as u64]).unwrap();
    let input: Vec<f32> = (0..n).map(|i| ((i as u64 * 2_654_435_761 % 10_007) as f32 / 1000.0) - 5.0).collect();
    let out_bytes = (n * 4) as f64;
    let reps = 9;

    let src = vec![1u8; n * 4];
    let mut dst = vec![0u8; n * 4];
    let memcpy = time(reps, || {
        dst.copy_from_slice(black_box(&src));
        black_box(&dst);
    });
    println!(
        "tensor [{rows}, {cols}] float32, {:.0} MiB of output; one thread; median of {reps}",
        out_bytes / (1 << 20) as f64
    );
    println!("memcpy of the output size: {:.2} GB/s", out_bytes / memcpy / 1e9);
    println!();
    println!("| kind | stored | dequantize GB/s (output) | × memcpy | quantize GB/s (input) |");
    println!("|---|---|---:|---:|---:|");

    let kinds: Vec<(&str, ElementType, Quantization)> = vec![
        ("MXFP4", ElementType::Float4E2m1fn, Quantization::Block(BlockQuant::mx(1, 32))),
        ("NF4 (block 64)", ElementType::Uint4, Quantization::Block(BlockQuant::nf4(64))),
        ("Q4_0", ElementType::Uint4, Quantization::Block(BlockQuant::gguf(true, 2))),
        ("Q8_0", ElementType::Int8, Quantization::Block(BlockQuant::gguf(false, 2))),
        ("MXFP8 E4M3", ElementType::Float8E4m3fn, Quantization::Block(BlockQuant::mx(1, 32))),
        ("MXFP6 E2M3", ElementType::Float6E2m3fn, Quantization::Block(BlockQuant::mx(1, 32))),
        ("MXINT8", ElementType::Int8, Quantization::Block(BlockQuant::mx(1, 32))),
        ("NVFP4", ElementType::Float4E2m1fn, Quantization::Block(BlockQuant::nvfp4(1, 16))),
        (
            "int4 per-group 128",
            ElementType::Int4,
            Quantization::Block(BlockQuant::group_affine(1, 128, ElementType::Float16)),
        ),
        ("MXFP4 along axis 0", ElementType::Float4E2m1fn, Quantization::Block(BlockQuant::mx(0, 32))),
    ];
    for (label, et, q) in kinds {
        let d = plan(et, shape.clone(), Some(q)).unwrap();
        let mut bufs: Vec<Vec<u8>> = d.buffers().iter().map(|b| vec![0u8; b.byte_size() as usize]).collect();
        let qt = time(3, || {
            let mut refs: Vec<&mut [u8]> = bufs.iter_mut().map(|b| b.as_mut_slice()).collect();
            quantize(&d, black_box(&input), &mut refs).unwrap();
        });
        let mut out = vec![0f32; n];
        let refs: Vec<&[u8]> = bufs.iter().map(|b| b.as_slice()).collect();
        let dt = time(reps, || {
            dequantize(&d, black_box(&refs), &mut out).unwrap();
            black_box(&out);
        });
        // Re-measure memcpy next to each kind so drift in machine load shows in the ratio.
        let mc = time(reps, || {
            dst.copy_from_slice(black_box(&src));
            black_box(&dst);
        });
        println!(
            "| {label} | {} | {:.2} | {:.2} | {:.3} |",
            et.name(),
            out_bytes / dt / 1e9,
            mc / dt,
            out_bytes / qt / 1e9
        );
    }
}
