//! One large tensor over loopback TCP, against the raw bytes over the same socket in the same
//! run. Not a test: run it with
//!
//! ```sh
//! cd native && cargo run --release --offline -p hurray-ffi --example loopback_bench [-- MB RUNS ALLOC]
//! ```
//!
//! ALLOC is `pages` (default: the C library's page allocator installed, as every C reader and
//! decoder does, `src/os/pages.rs`) or `std` (hurray-core's default, the global allocator);
//! run both, alternating, to compare them under the same load.
//!
//! Each run sends one uint8 tensor of MB (default 307.2) million bytes, pre-encoded, from a
//! sender thread in 1 MiB writes, and receives it on the measuring thread:
//! - raw, reused 1 MiB: the same bytes read into one reused 1 MiB buffer and discarded (the
//!   socket's cost alone);
//! - raw, kept: the same bytes read into a fresh `Vec` of the payload's size, kept until the run
//!   ends, as a receiver that keeps the data does (the socket plus fresh pages of the global
//!   allocator);
//! - decoder: a [`StreamDecoder`] fed by socket reads into its `input_buffer` (what the Java
//!   `Reader` does), the tensor dropped at once; its buffer grows as the bytes arrive;
//! - decoder, warm: the same with one buffer pool kept across runs, so the tensor's memory is
//!   resident before the bytes arrive (the cost of fresh pages taken out).
//!
//! Rows alternate within each run (same machine load); figures are medians after one warm-up
//! run. Splits for the decoder rows: time inside socket reads, time in the decoder's calls
//! (`poll`, `input_buffer`: growing the buffer; `commit`), time dropping the tensor (freeing
//! it), and minor page faults from /proc/self/stat (Linux).

use std::hint::black_box;
use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::time::{Duration, Instant};

use hurray_core::{
    BufferPool, Decoded, ElementType, ReaderOptions, Shape, StreamDecoder, StreamWriter, TensorDescriptor,
    WriterOptions,
};

fn minor_faults() -> u64 {
    std::fs::read_to_string("/proc/self/stat")
        .ok()
        .and_then(|s| s.rsplit_once(')').map(|(_, rest)| rest.to_string()))
        .and_then(|rest| rest.split_whitespace().nth(7).and_then(|v| v.parse().ok()))
        .unwrap_or(0)
}

/// Sends `bytes` to a fresh connection in 1 MiB writes; returns the receiving end.
fn connect(bytes: &'static [u8]) -> (TcpStream, std::thread::JoinHandle<()>) {
    let l = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = l.local_addr().unwrap();
    let sender = std::thread::spawn(move || {
        let mut s = TcpStream::connect(addr).unwrap();
        for c in bytes.chunks(1 << 20) {
            s.write_all(c).unwrap();
        }
    });
    (l.accept().unwrap().0, sender)
}

#[derive(Default, Clone, Copy)]
struct Split {
    total: Duration,
    read: Duration,
    decoder: Duration,
    drop: Duration,
    faults: u64,
}

fn raw(bytes: &'static [u8], buf: &mut [u8]) -> Split {
    let (mut s, sender) = connect(bytes);
    let t = Instant::now();
    let mut got = 0;
    while got < bytes.len() {
        let n = s.read(buf).unwrap();
        assert!(n > 0);
        got += n;
    }
    let total = t.elapsed();
    sender.join().unwrap();
    Split { total, read: total, ..Split::default() }
}

fn raw_kept(bytes: &'static [u8]) -> Split {
    let (s, sender) = connect(bytes);
    let f0 = minor_faults();
    let t = Instant::now();
    let mut v = Vec::with_capacity(bytes.len());
    let n = s.take(bytes.len() as u64).read_to_end(&mut v).unwrap();
    assert_eq!(n, bytes.len());
    let total = t.elapsed();
    let faults = minor_faults() - f0;
    let t1 = Instant::now();
    drop(black_box(v));
    let drop = t1.elapsed();
    sender.join().unwrap();
    Split { total, read: total, drop, faults, ..Split::default() }
}

fn decoder(bytes: &'static [u8], pool: Option<&BufferPool>) -> Split {
    let (mut s, sender) = connect(bytes);
    let mut d = StreamDecoder::new(ReaderOptions::default()).unwrap();
    d.set_buffer_pool(pool.cloned());
    let mut sp = Split::default();
    let f0 = minor_faults();
    let t = Instant::now();
    loop {
        let t1 = Instant::now();
        let got = d.poll().unwrap();
        sp.decoder += t1.elapsed();
        match got {
            Decoded::Tensor(t) => {
                let t1 = Instant::now();
                drop(black_box(t));
                sp.drop += t1.elapsed();
            }
            Decoded::End => break,
            Decoded::NeedInput => {
                let t1 = Instant::now();
                let dst = d.input_buffer().unwrap();
                sp.decoder += t1.elapsed();
                // SAFETY: the socket only writes into `dst` (it never reads it), and only the
                // `n` bytes it reports written are committed as initialised.
                let dst = unsafe { std::slice::from_raw_parts_mut(dst.as_mut_ptr() as *mut u8, dst.len()) };
                let t1 = Instant::now();
                let n = s.read(dst).unwrap();
                sp.read += t1.elapsed();
                d.commit(n).unwrap();
            }
        }
    }
    sp.total = t.elapsed();
    sp.faults = minor_faults() - f0;
    sender.join().unwrap();
    sp
}

fn median(v: &mut [Split], f: impl Fn(&Split) -> f64) -> f64 {
    let mut x: Vec<f64> = v.iter().map(f).collect();
    x.sort_by(|a, b| a.partial_cmp(b).unwrap());
    x[x.len() / 2]
}

fn main() {
    let mut args = std::env::args().skip(1);
    let mb: f64 = args.next().and_then(|a| a.parse().ok()).unwrap_or(307.2);
    let runs: usize = args.next().and_then(|a| a.parse().ok()).unwrap_or(5);
    let alloc = args.next().unwrap_or_else(|| "pages".into());
    match alloc.as_str() {
        "pages" => hurray_ffi::install_page_allocator(),
        "std" => {}
        other => panic!("ALLOC is pages or std, not {other}"),
    }
    let len = (mb * 1e6) as usize;
    let desc = TensorDescriptor::dense(ElementType::Uint8, Shape::new(vec![len as u64]).unwrap()).unwrap();
    let payload: Vec<u8> = (0..len).map(|i| (i * 131 + 7) as u8).collect();
    let mut w = StreamWriter::new(Vec::new(), WriterOptions::default());
    w.write_tensor(&desc, &[&payload]).unwrap();
    w.finish().unwrap();
    let bytes: &'static [u8] = Box::leak(w.into_transport().into_boxed_slice());
    drop(payload);

    let pool = BufferPool::new(2 * len as u64);
    let mut buf = vec![0u8; 1 << 20];
    let mut rows: [Vec<Split>; 4] = Default::default();
    for run in 0..=runs {
        let r = [raw(bytes, &mut buf), raw_kept(bytes), decoder(bytes, None), decoder(bytes, Some(&pool))];
        if run > 0 {
            for (v, s) in rows.iter_mut().zip(r) {
                v.push(s);
            }
        }
    }
    let raw_ms = median(&mut rows[0], |s| s.total.as_secs_f64() * 1e3);
    let pages = hurray_ffi::page_stats();
    println!(
        "loopback_bench: one {mb} MB tensor, medians of {runs} runs, allocator {alloc} ({} regions mapped, {} grown in place, {} by move, {} by copy, {} refused)",
        pages.maps, pages.grown_in_place, pages.grown_by_move, pages.grown_by_copy, pages.refused
    );
    println!(
        "{:<20} {:>9} {:>8} {:>8} {:>9} {:>10} {:>8} {:>9}",
        "path", "total ms", "GB/s", "vs raw", "read ms", "decoder ms", "drop ms", "faults"
    );
    for (name, v) in ["raw, reused 1 MiB", "raw, kept", "decoder", "decoder, warm pool"].iter().zip(rows.iter_mut()) {
        let total = median(v, |s| s.total.as_secs_f64() * 1e3);
        println!(
            "{:<20} {:>9.1} {:>8.2} {:>7.2}x {:>9.1} {:>10.1} {:>8.1} {:>9}",
            name,
            total,
            len as f64 / total / 1e6,
            raw_ms / total,
            median(v, |s| s.read.as_secs_f64() * 1e3),
            median(v, |s| s.decoder.as_secs_f64() * 1e3),
            median(v, |s| s.drop.as_secs_f64() * 1e3),
            median(v, |s| s.faults as f64) as u64,
        );
    }
}
