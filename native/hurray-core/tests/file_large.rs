//! A container over 4 GiB, kept sparse on disk: a 4.25 GiB tensor of zeros (a lazily zeroed
//! allocation the writer never touches: payload checksums are off, and the sink turns writes
//! from that region into holes) followed by a small tensor placed beyond 4 GiB, so past both
//! 2^31 and 2^32. The small one is read back through a file-backed read_at reader and through
//! the span reader over a region holding the file; all offsets are u64.

mod file_support;

use std::fs::{File, OpenOptions};
use std::io::{Seek, SeekFrom, Write};
use std::mem::MaybeUninit;
use std::os::unix::fs::FileExt;

use file_support::*;
use hurray_core::file::FileReaderOptions;
use hurray_core::stream::WriteTransport;
use hurray_core::{DeviceTag, Error, ErrorKind, FileReader, FileWriter, FileWriterOptions, ReadAt, Result};

const BIG: u64 = (4 << 30) + (256 << 20);

/// Writes to a file; a write whose bytes lie in `holes` (known to be zero) becomes a seek.
struct SparseSink {
    file: File,
    holes: (usize, usize),
    seeked: u64,
}

impl WriteTransport for SparseSink {
    fn write(&mut self, src: &[u8]) -> Result<usize> {
        let a = src.as_ptr() as usize;
        let io = |e: std::io::Error| Error::new(ErrorKind::Transport, e.to_string());
        if a >= self.holes.0 && a + src.len() <= self.holes.1 {
            self.file.seek(SeekFrom::Current(src.len() as i64)).map_err(io)?;
            self.seeked += src.len() as u64;
            return Ok(src.len());
        }
        self.file.write(src).map_err(io)
    }
}

/// `pread` as a `ReadAt` source.
struct FileSource(File);

impl ReadAt for FileSource {
    fn size(&mut self) -> Result<u64> {
        self.0.metadata().map(|m| m.len()).map_err(|e| Error::new(ErrorKind::Transport, e.to_string()))
    }
    fn read_at(&mut self, offset: u64, dst: &mut [MaybeUninit<u8>]) -> Result<usize> {
        dst.fill(MaybeUninit::new(0));
        // SAFETY: every byte of dst was just initialised.
        let buf = unsafe { &mut *(dst as *mut [MaybeUninit<u8>] as *mut [u8]) };
        FileExt::read_at(&self.0, buf, offset).map_err(|e| Error::new(ErrorKind::Transport, e.to_string()))
    }
}

#[test]
fn tensor_beyond_4_gib_in_a_sparse_file() {
    let path = std::env::temp_dir().join(format!("hurray-file-large-{}.hrry", std::process::id()));
    let file = OpenOptions::new().create(true).truncate(true).read(true).write(true).open(&path).unwrap();
    let zeros = vec![0u8; BIG as usize]; // calloc: untouched pages cost no memory
    let holes = (zeros.as_ptr() as usize, zeros.as_ptr() as usize + zeros.len());
    let small = pattern(10_000, 42);
    let opts = FileWriterOptions { payload_checksums: false, min_payload_alignment: 4096 };
    let mut w = FileWriter::new(SparseSink { file, holes, seeked: 0 }, opts).unwrap();
    w.add_tensor(&bytes_tensor("zeros", BIG, 4096, DeviceTag::Cpu), &[&zeros]).unwrap();
    w.add_tensor(&bytes_tensor("zz.beyond", small.len() as u64, 4096, DeviceTag::Cpu), &[&small]).unwrap();
    w.set_metadata("note", b"sparse").unwrap();
    let size = w.finish().unwrap();
    let sink = w.into_transport();
    assert_eq!(sink.seeked, BIG);
    drop(zeros);
    let file = sink.file;
    assert_eq!(file.metadata().unwrap().len(), size);
    assert!(size > 2 << 30);

    let mut r = FileReader::open(FileSource(file.try_clone().unwrap()), FileReaderOptions::default()).unwrap();
    let e = r.find(b"zz.beyond").unwrap().unwrap();
    let loc = e.buffers()[0];
    assert!(loc.offset > u32::MAX as u64, "placed beyond 4 GiB: {}", loc.offset);
    assert_eq!(loc.offset % 4096, 0);
    assert_eq!(r.read_tensor(&e).unwrap().buffers[0].as_slice(), &small[..]);
    let z = r.find(b"zeros").unwrap().unwrap();
    assert_eq!(z.total_bytes(), BIG);
    r.verify().unwrap();

    // The span reader over a region holding the whole file: a lazily zeroed allocation
    // aligned to 4096 into which only the written (non-hole) parts are copied.
    let mut backing = vec![0u8; size as usize + 4096];
    let skew = backing.as_ptr().align_offset(4096);
    let region = &mut backing[skew..skew + size as usize];
    file.read_exact_at(&mut region[..4096], 0).unwrap();
    let tail = (loc.offset as usize) & !4095;
    file.read_exact_at(&mut region[tail..], tail as u64).unwrap();
    let region = &backing[skew..skew + size as usize];
    let mut s =
        FileReader::open_span(region, FileReaderOptions { verify_payloads: true, ..Default::default() }).unwrap();
    let e = s.find(b"zz.beyond").unwrap().unwrap();
    let t = s.span_tensor(&e).unwrap();
    let b = &t.buffers[0];
    assert!(b.is_borrowed());
    let addr = b.as_slice().as_ptr() as usize;
    assert_eq!(addr, region.as_ptr() as usize + loc.offset as usize, "zero copy, in place");
    assert_eq!(b.as_slice(), &small[..]);
    let quiet = FileReaderOptions { verify_payloads: false, ..Default::default() };
    let mut s = FileReader::open_span(region, quiet).unwrap();
    let z = s.find(b"zeros").unwrap().unwrap();
    let zt = s.span_tensor(&z).unwrap();
    assert!(zt.buffers[0].is_borrowed());
    assert_eq!(zt.buffers[0].as_slice().len() as u64, BIG);
    drop(file);
    std::fs::remove_file(&path).unwrap();
}
