//! HRRYFILE benchmark: open time for 1, 1,000 and 100,000 tensors, and
//! random-read throughput through the read_at reader against raw `pread`s of the same ranges,
//! in the same run, on a warm page cache.
//!
//!     cargo run --release --offline -p hurray-core --example file_bench
//!
//! Files go to the system temp directory and are removed at the end. Figures are medians of
//! repeated runs; compare ratios from one run, not absolute numbers across machines.

use std::fs::{File, OpenOptions};
use std::io::Write;
use std::mem::MaybeUninit;
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use hurray_core::file::{FileReaderOptions, Span};
use hurray_core::stream::WriteTransport;
use hurray_core::{
    AlignedBuf, ElementType, Error, ErrorKind, FileReader, FileWriter, FileWriterOptions, ReadAt, Result, Shape,
    TensorDescriptor,
};

/// `pread`/`fstat` as a `ReadAt` source, counting calls.
struct FileSource {
    file: File,
    calls: u64,
}

impl ReadAt for FileSource {
    fn size(&mut self) -> Result<u64> {
        self.file.metadata().map(|m| m.len()).map_err(|e| Error::new(ErrorKind::Transport, e.to_string()))
    }
    fn read_at(&mut self, offset: u64, dst: &mut [MaybeUninit<u8>]) -> Result<usize> {
        self.calls += 1;
        // SAFETY: pread only writes into the buffer and reports how many bytes it wrote, which
        // is exactly the contract of `ReadAt::read_at` (the C transport does the same).
        let buf = unsafe { &mut *(dst as *mut [MaybeUninit<u8>] as *mut [u8]) };
        self.file.read_at(buf, offset).map_err(|e| Error::new(ErrorKind::Transport, e.to_string()))
    }
}

struct FileSink(File);

impl WriteTransport for FileSink {
    fn write(&mut self, src: &[u8]) -> Result<usize> {
        self.0.write(src).map_err(|e| Error::new(ErrorKind::Transport, e.to_string()))
    }
}

fn write_container(path: &Path, n: u64, bytes_each: usize) -> u64 {
    let f = OpenOptions::new().create(true).truncate(true).write(true).open(path).unwrap();
    let mut w = FileWriter::new(FileSink(f), FileWriterOptions::default()).unwrap();
    let payload: Vec<u8> = (0..bytes_each).map(|i| i as u8).collect();
    for i in 0..n {
        let d = TensorDescriptor::dense(ElementType::Uint8, Shape::new(vec![bytes_each as u64]).unwrap())
            .unwrap()
            .with_name(format!("model.layers.{i:06}.weight"))
            .unwrap();
        w.add_tensor(&d, &[&payload]).unwrap();
    }
    w.set_metadata("bench", b"file_bench").unwrap();
    w.finish().unwrap()
}

fn median(mut v: Vec<Duration>) -> Duration {
    v.sort();
    v[v.len() / 2]
}

fn micros(d: Duration) -> f64 {
    d.as_secs_f64() * 1e6
}

fn open_times(dir: &Path) {
    println!("== open time (median; read_at calls counted at open)");
    println!(
        "{:>9} {:>12} {:>7} {:>14} {:>16} {:>14}",
        "tensors", "file bytes", "calls", "open µs", "open+find µs", "span open µs"
    );
    for &(n, reps) in &[(1u64, 2000usize), (1000, 500), (100_000, 100)] {
        let path = dir.join(format!("open-{n}.hrry"));
        let size = write_container(&path, n, 16);
        let target = format!("model.layers.{:06}.weight", n / 3);
        let mut opens = Vec::new();
        let mut finds = Vec::new();
        let mut calls = 0;
        for _ in 0..reps {
            let file = File::open(&path).unwrap();
            let t = Instant::now();
            let r = FileReader::open(FileSource { file, calls: 0 }, FileReaderOptions::default()).unwrap();
            opens.push(t.elapsed());
            calls = r.source().calls;
            drop(r);
            let file = File::open(&path).unwrap();
            let t = Instant::now();
            let mut r = FileReader::open(FileSource { file, calls: 0 }, FileReaderOptions::default()).unwrap();
            r.find(target.as_bytes()).unwrap().unwrap();
            finds.push(t.elapsed());
        }
        let bytes = std::fs::read(&path).unwrap();
        let mut spans = Vec::new();
        for _ in 0..reps {
            let t = Instant::now();
            let r = FileReader::open(Span::new(&bytes), FileReaderOptions::default()).unwrap();
            spans.push(t.elapsed());
            drop(r);
        }
        println!(
            "{:>9} {:>12} {:>7} {:>14.1} {:>16.1} {:>14.1}",
            n,
            size,
            calls,
            micros(median(opens)),
            micros(median(finds)),
            micros(median(spans))
        );
        std::fs::remove_file(&path).unwrap();
    }
}

/// xorshift: a fixed random sequence of tensor indexes.
fn sequence(n: usize, len: usize) -> Vec<usize> {
    let mut s = 0x2545_F491_4F6C_DD1Du64;
    (0..len)
        .map(|_| {
            s ^= s << 13;
            s ^= s >> 7;
            s ^= s << 17;
            (s % n as u64) as usize
        })
        .collect()
}

fn gbps(bytes: u64, d: Duration) -> f64 {
    bytes as f64 / d.as_secs_f64() / 1e9
}

fn random_reads(dir: &Path, tensors: u64, each: usize, reads: usize) {
    let path = dir.join(format!("random-{each}.hrry"));
    write_container(&path, tensors, each);
    let file = File::open(&path).unwrap();
    let mut r = FileReader::open(FileSource { file, calls: 0 }, FileReaderOptions::default()).unwrap();
    let entries: Vec<_> = (0..tensors).map(|i| r.entry(i).unwrap()).collect();
    let order = sequence(tensors as usize, reads);
    let total = (reads * each) as u64;
    let raw = File::open(&path).unwrap();
    // Warm the page cache.
    let mut scratch = vec![0u8; each];
    for e in &entries {
        raw.read_exact_at(&mut scratch, e.buffers()[0].offset).unwrap();
    }
    let quiet = FileReaderOptions { verify_payloads: false, ..Default::default() };
    let mut rq = FileReader::open(FileSource { file: File::open(&path).unwrap(), calls: 0 }, quiet).unwrap();
    let entries_q: Vec<_> = (0..tensors).map(|i| rq.entry(i).unwrap()).collect();
    let bytes = std::fs::read(&path).unwrap();
    let mut backing = vec![0u8; bytes.len() + 4096];
    let skew = backing.as_ptr().align_offset(4096);
    backing[skew..skew + bytes.len()].copy_from_slice(&bytes);
    let region = &backing[skew..skew + bytes.len()];
    let mut span = FileReader::open_span(region, quiet).unwrap();
    let span_entries: Vec<_> = (0..tensors).map(|i| span.entry(i).unwrap()).collect();
    let mut span_v = FileReader::open_span(region, FileReaderOptions::default()).unwrap();
    let span_v_entries: Vec<_> = (0..tensors).map(|i| span_v.entry(i).unwrap()).collect();

    let mut results: Vec<(&str, Vec<Duration>)> = vec![
        ("raw pread, reused buffer", vec![]),
        ("raw pread, fresh aligned buffer", vec![]),
        ("reader read_tensor, CRC on", vec![]),
        ("reader read_tensor, CRC off", vec![]),
        ("reader read_buffer_into, reused", vec![]),
        ("span span_tensor (zero copy)", vec![]),
        ("span span_tensor, CRC on", vec![]),
    ];
    let mut sink = 0u64;
    for _round in 0..7 {
        let t = Instant::now();
        for &i in &order {
            let loc = entries[i].buffers()[0];
            raw.read_exact_at(&mut scratch, loc.offset).unwrap();
            sink = sink.wrapping_add(scratch[each / 2] as u64);
        }
        results[0].1.push(t.elapsed());

        let t = Instant::now();
        for &i in &order {
            let loc = entries[i].buffers()[0];
            let mut b = AlignedBuf::new(each as u64, 64).unwrap();
            let dst = b.spare_mut();
            // SAFETY: as in FileSource::read_at.
            let buf = unsafe { &mut *(dst as *mut [MaybeUninit<u8>] as *mut [u8]) };
            raw.read_exact_at(buf, loc.offset).unwrap();
            sink = sink.wrapping_add(b.as_ptr() as u64 & 1);
        }
        results[1].1.push(t.elapsed());

        let t = Instant::now();
        for &i in &order {
            let tensor = r.read_tensor(&entries[i]).unwrap();
            sink = sink.wrapping_add(tensor.buffers[0].as_slice()[each / 2] as u64);
        }
        results[2].1.push(t.elapsed());

        let t = Instant::now();
        for &i in &order {
            let tensor = rq.read_tensor(&entries_q[i]).unwrap();
            sink = sink.wrapping_add(tensor.buffers[0].as_slice()[each / 2] as u64);
        }
        results[3].1.push(t.elapsed());

        let mut pool = AlignedBuf::new(each as u64, 64).unwrap();
        let t = Instant::now();
        for &i in &order {
            rq.read_buffer_into(&entries_q[i], 0, pool.spare_mut()).unwrap();
        }
        results[4].1.push(t.elapsed());

        let t = Instant::now();
        for &i in &order {
            let st = span.span_tensor(&span_entries[i]).unwrap();
            sink = sink.wrapping_add(st.buffers[0].as_slice().len() as u64);
        }
        results[5].1.push(t.elapsed());

        let t = Instant::now();
        for &i in &order {
            let st = span_v.span_tensor(&span_v_entries[i]).unwrap();
            sink = sink.wrapping_add(st.buffers[0].is_borrowed() as u64);
        }
        results[6].1.push(t.elapsed());
    }
    println!(
        "== random reads: {reads} reads of {} KiB tensors out of {tensors} ({} MiB file, warm cache)",
        each / 1024,
        bytes.len() >> 20
    );
    let base = gbps(total, median(results[0].1.clone()));
    for (name, times) in results {
        let m = median(times);
        let g = gbps(total, m);
        if name.contains("zero copy") {
            // No payload byte moves: only the lookup-free tensor assembly is timed.
            println!("{name:<34} {:>13} {:>8.2} µs/read  (no bytes copied)", "-", micros(m) / reads as f64);
        } else {
            println!("{name:<34} {:>8.2} GB/s {:>8.2} µs/read  {:>5.2}× raw", g, micros(m) / reads as f64, g / base);
        }
    }
    std::hint::black_box(sink);
    std::fs::remove_file(&path).unwrap();
}

fn main() {
    let dir: PathBuf = std::env::temp_dir().join(format!("hurray-file-bench-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    open_times(&dir);
    random_reads(&dir, 64, 1 << 20, 256);
    random_reads(&dir, 4096, 16 << 10, 4096);
    std::fs::remove_dir_all(&dir).unwrap();
}
