//! The native floor of the per-tensor cost: named float32[768] tensors with one metadata entry
//! (the Java benchmark `dev.hurray.bench.PerTensor` measures the same through the Java API, and
//! `hurray-java-bench/pertensor.sh` runs both). Not a test: run it with
//!
//! ```sh
//! cd native && cargo run --release --offline -p hurray-core --example pertensor_bench [-- N ROUNDS ELEMS]
//! ```
//!
//! Write: per tensor, a descriptor renamed from a template (`with_name`), encoded and staged
//! by a `StreamEncoder` whose output is drained into a reused buffer every 64 KiB. Read: a
//! `StreamDecoder` with a buffer pool over the encoded stream in memory, each tensor's name
//! looked at and the tensor dropped. Prints the median µs per tensor of ROUNDS runs, in CPU
//! time of this thread (`/proc/thread-self/schedstat`): on a shared machine wall time mostly
//! measures the scheduler.

use std::hint::black_box;

use hurray_core::{
    Decoded, ElementType, OutSeg, ReaderOptions, Shape, StreamDecoder, StreamEncoder, TensorDescriptor, WriterOptions,
};

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let n: usize = args.get(1).and_then(|s| s.parse().ok()).unwrap_or(200_000);
    let rounds: usize = args.get(2).and_then(|s| s.parse().ok()).unwrap_or(7);
    let elems: usize = args.get(3).and_then(|s| s.parse().ok()).unwrap_or(768);
    // Larger payloads are borrowed by the encoder rather than staged, which `drain` does not take.
    assert!(elems <= 16_384, "ELEMS at most 16384 (64 KiB payloads)");
    let template = TensorDescriptor::dense(ElementType::Float32, Shape::new(vec![elems as u64]).unwrap())
        .unwrap()
        .with_metadata("source", "bench")
        .unwrap();
    let payload = vec![1u8; elems * 4];
    let mut wire = Vec::with_capacity(n * (elems * 4 + 256));
    let (mut w, mut r) = (Vec::new(), Vec::new());
    for round in 0..rounds + 2 {
        wire.clear();
        let t0 = cpu_ns();
        let mut e = StreamEncoder::new(WriterOptions::default());
        for i in 0..n {
            let d = template.clone().with_name(format!("emb-{i}")).unwrap();
            let enc = d.encode().unwrap();
            e.encode(&d, &enc, &[&payload]).unwrap();
            if e.pending_bytes() >= 64 * 1024 {
                drain(&mut e, &mut wire);
            }
        }
        e.finish().unwrap();
        drain(&mut e, &mut wire);
        let write = (cpu_ns() - t0) as f64 / 1e3 / n as f64;
        let t1 = cpu_ns();
        let mut d = StreamDecoder::new(ReaderOptions { pool_bytes: 1 << 20, ..ReaderOptions::default() }).unwrap();
        let mut pos = 0;
        let mut count = 0;
        loop {
            match d.poll().unwrap() {
                Decoded::Tensor(t) => {
                    black_box(t.descriptor.name());
                    count += 1;
                }
                Decoded::End => break,
                Decoded::NeedInput => {
                    let dst = d.input_buffer().unwrap();
                    let k = dst.len().min(wire.len() - pos);
                    dst[..k].write_copy_of_slice(&wire[pos..pos + k]);
                    pos += k;
                    d.commit(k).unwrap();
                }
            }
        }
        assert_eq!(count, n);
        let read = (cpu_ns() - t1) as f64 / 1e3 / n as f64;
        if round >= 2 {
            w.push(write);
            r.push(read);
        }
    }
    w.sort_by(f64::total_cmp);
    r.sort_by(f64::total_cmp);
    println!("| native core, {n} named float32[{elems}] (median of {rounds}) | µs of CPU per tensor |");
    println!("|---|---|");
    println!("| write (with_name + encode, batched, to memory) | {:.3} |", w[rounds / 2]);
    println!("| read + name + drop (from memory) | {:.3} |", r[rounds / 2]);
    println!();
}

fn drain(e: &mut StreamEncoder, wire: &mut Vec<u8>) {
    while e.pending_bytes() > 0 {
        let seg = e.segments()[0];
        let off = e.offset();
        let n = match seg {
            OutSeg::Staged { start, end } => {
                wire.extend_from_slice(&e.staged()[start + off..end]);
                end - start - off
            }
            OutSeg::Borrowed { .. } => unreachable!("small payloads are staged"),
        };
        e.consume(n as u64).unwrap();
    }
}

/// This thread's CPU time in ns (Linux: the first field of /proc/thread-self/schedstat).
fn cpu_ns() -> u64 {
    std::fs::read_to_string("/proc/thread-self/schedstat")
        .ok()
        .and_then(|s| s.split_whitespace().next().and_then(|v| v.parse().ok()))
        .unwrap_or(0)
}
