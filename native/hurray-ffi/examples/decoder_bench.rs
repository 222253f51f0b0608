//! Per-tensor CPU cost of reading small named tensors through the C ABI's sans-I/O decoder
//! (`hurray_decoder_next`, then `hurray_tensor_destroy`), next to the core `StreamDecoder`
//! alone over the same bytes, in the same run. Not a test: run it with
//!
//! ```sh
//! cd native && cargo run --release --offline -p hurray-ffi --example decoder_bench [-- N ROUNDS ELEMS [core|ffi|none]]
//! ```
//!
//! N (default 200,000) float32[ELEMS] (default 256: 1 KiB) tensors, each with its own name and
//! one metadata entry, encoded once; each round decodes them all from memory, with a 1 MiB
//! buffer pool, looking at every tensor's name. Prints the median of ROUNDS (default 7) in µs
//! of CPU time of this thread per tensor (`/proc/thread-self/schedstat`).

use std::hint::black_box;
use std::ptr::null;

use hurray_core::{
    Decoded, ElementType, OutSeg, ReaderOptions, Shape, StreamDecoder, StreamEncoder, TensorDescriptor, WriterOptions,
};
use hurray_ffi::decoder::*;
use hurray_ffi::tensor::hurray_tensor_destroy;
use hurray_ffi::*;

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

    let (mut core, mut ffi) = (Vec::new(), Vec::new());
    for round in 0..rounds + 2 {
        let t = cpu_ns();
        if matches!(only, "both" | "core") {
            assert_eq!(core_read(&wire), n);
        }
        let c = (cpu_ns() - t) as f64 / 1e3 / n as f64;
        let t = cpu_ns();
        if matches!(only, "both" | "ffi") {
            assert_eq!(ffi_read(&wire), n);
        }
        let f = (cpu_ns() - t) as f64 / 1e3 / n as f64;
        if round >= 2 {
            core.push(c);
            ffi.push(f);
        }
    }
    core.sort_by(f64::total_cmp);
    ffi.sort_by(f64::total_cmp);
    println!("| {n} named float32[{elems}] + 1 metadata entry, read from memory (median of {rounds}) | µs of CPU per tensor |");
    println!("|---|---|");
    println!("| core `StreamDecoder::poll` + name + drop | {:.3} |", core[rounds / 2]);
    println!("| C ABI `hurray_decoder_next` + name + `hurray_tensor_destroy` | {:.3} |", ffi[rounds / 2]);
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
