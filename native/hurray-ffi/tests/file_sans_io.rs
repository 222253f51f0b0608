//! Containers without a transport through the C ABI (docs/spec/c-abi.md §Containers without a
//! transport): the encoder whose bytes the test writes itself, and the reader whose ranges the
//! test reads itself, both driven the way a binding drives them, with short writes and reads,
//! failing writes and reads, truncated and corrupt files.

mod ffi_common;

use std::ffi::c_void;
use std::ptr::{null, null_mut};

use ffi_common::{last_error, status_name};
use hurray_core::{BufferHandle, DeviceTag, ElementType, LayoutDescriptor, Shape, SyncMode, TensorDescriptor};
use hurray_ffi::buffer::{hurray_buffer_byte_size, hurray_buffer_data_ptr};
use hurray_ffi::buffer_list::hurray_buffer_list_get;
use hurray_ffi::composite::*;
use hurray_ffi::descriptor::{hurray_descriptor_decode, hurray_descriptor_destroy};
use hurray_ffi::file::*;
use hurray_ffi::tensor::{hurray_tensor_buffers, hurray_tensor_destroy};
use hurray_ffi::*;

// ---------- tensors ----------

fn named(name: &str, n: u64, align: u64) -> TensorDescriptor {
    TensorDescriptor::new(
        1,
        0,
        ElementType::Uint8,
        Shape::new(vec![n]).unwrap(),
        0,
        LayoutDescriptor::RowMajor,
        vec![BufferHandle::new(n, align, DeviceTag::Cpu, SyncMode::ProducerSynced).unwrap()],
        None,
        None,
        None,
        None,
    )
    .unwrap()
    .with_name(name)
    .unwrap()
}

fn handle(d: &TensorDescriptor) -> *mut HurrayDescriptor {
    let enc = d.encode().unwrap();
    let mut h = null_mut();
    // SAFETY: `enc` is valid for its length; `h` is a live local.
    assert_eq!(unsafe { hurray_descriptor_decode(enc.as_ptr(), enc.len(), &mut h) }, HURRAY_OK);
    h
}

fn pattern(n: usize, seed: u8) -> Vec<u8> {
    (0..n).map(|i| (i as u8).wrapping_mul(31).wrapping_add(seed)).collect()
}

/// Small, empty, aligned and large (borrowed: over 64 KiB) tensors, in add order.
fn samples() -> Vec<(TensorDescriptor, Vec<u8>)> {
    [("bias", 40, 64), ("embedding", 100_000, 4096), ("w0", 3000, 128), ("empty", 0, 64), ("w1", 300_000, 64)]
        .iter()
        .enumerate()
        .map(|(i, &(n, len, align))| (named(n, len, align), pattern(len as usize, i as u8)))
        .collect()
}

// ---------- writing ----------

/// What the test's sink does: moves at most `chunks[k % len]` bytes on write call `k`, and fails
/// (moving nothing) on the calls listed in `fail`.
struct Sink {
    out: Vec<u8>,
    chunks: Vec<usize>,
    calls: usize,
    fail: Vec<usize>,
}

impl Sink {
    fn new(chunks: &[usize]) -> Sink {
        Sink { out: Vec::new(), chunks: chunks.to_vec(), calls: 0, fail: Vec::new() }
    }

    /// Sends the encoder's pending output; false when a write failed (nothing consumed for it).
    ///
    /// # Safety
    /// `e` is a live encoder whose borrowed payloads are valid.
    unsafe fn send(&mut self, e: *mut HurrayFileEncoder) -> bool {
        let mut pieces = [HurrayIoSlice { ptr: null(), len: 0 }; 4];
        loop {
            let mut n = 0usize;
            // SAFETY: `pieces` holds 4 slots; `n` is a live local.
            assert_eq!(unsafe { hurray_file_encoder_output(e, pieces.as_mut_ptr(), 4, &mut n) }, HURRAY_OK);
            if n == 0 {
                return true;
            }
            let call = self.calls;
            self.calls += 1;
            if self.fail.contains(&call) {
                return false;
            }
            let p = pieces[0];
            let k = p.len.min(self.chunks[call % self.chunks.len()]).max(1);
            // SAFETY: the piece is valid for `p.len` ≥ `k` bytes until the next encoder call.
            self.out.extend_from_slice(unsafe { std::slice::from_raw_parts(p.ptr, k) });
            let mut st = HurrayFileEncoderState::default();
            // SAFETY: `e` is live; `st` is a live local.
            assert_eq!(unsafe { hurray_file_encoder_consume(e, k as u64, &mut st) }, HURRAY_OK);
        }
    }
}

fn new_encoder() -> *mut HurrayFileEncoder {
    let mut e = null_mut();
    // SAFETY: `e` is a live local.
    assert_eq!(unsafe { hurray_file_encoder_new(null(), &mut e) }, HURRAY_OK);
    e
}

/// Adds one tensor; sends when the output borrows its payload or passes 64 KiB, as a binding does.
///
/// # Safety
/// `e` live.
unsafe fn add(e: *mut HurrayFileEncoder, sink: &mut Sink, d: &TensorDescriptor, p: &[u8]) -> HurrayStatus {
    let h = handle(d);
    let slice = HurrayIoSlice { ptr: p.as_ptr(), len: p.len() };
    let mut st = HurrayFileEncoderState::default();
    // SAFETY: `h` and `slice` are live; `p` outlives the sends below.
    let s = unsafe { hurray_file_encoder_add_tensor(e, h, &slice, 1, &mut st) };
    // SAFETY: `h` came from hurray_descriptor_decode.
    unsafe { hurray_descriptor_destroy(h) };
    if s != HURRAY_OK {
        return s;
    }
    // SAFETY: `e` is live and `p` is still valid.
    if (st.borrows_payloads == 1 || st.pending_bytes >= 64 * 1024) && !unsafe { sink.send(e) } {
        // SAFETY: `e` is live.
        return unsafe { hurray_file_encoder_abort(e, 1, &mut st) };
    }
    HURRAY_OK
}

/// Stages finish and sends; the state after.
///
/// # Safety
/// `e` live.
unsafe fn finish(e: *mut HurrayFileEncoder, sink: &mut Sink) -> (bool, HurrayFileEncoderState) {
    let mut st = HurrayFileEncoderState::default();
    let mut size = 0u64;
    // SAFETY: `e` is live; the out-pointers are live locals.
    assert_eq!(unsafe { hurray_file_encoder_finish(e, &mut size, &mut st) }, HURRAY_OK, "{}", last_error());
    // SAFETY: `e` is live.
    let ok = unsafe { sink.send(e) };
    if !ok {
        // SAFETY: `e` is live.
        assert_eq!(unsafe { hurray_file_encoder_abort(e, 0, &mut st) }, HURRAY_OK, "finish stays retryable");
    }
    // SAFETY: `e` is live; `st` a live local.
    unsafe { hurray_file_encoder_consume(e, 0, &mut st) };
    if st.finished == 1 {
        assert_eq!(st.bytes_written, size);
    }
    (ok, st)
}

/// The samples written through the encoder with `chunks` as write sizes.
fn encode_all(chunks: &[usize]) -> Vec<u8> {
    let e = new_encoder();
    let mut sink = Sink::new(chunks);
    let samples = samples();
    // SAFETY: `e` is live throughout; payloads outlive every send.
    unsafe {
        for (d, p) in &samples {
            assert_eq!(add(e, &mut sink, d, p), HURRAY_OK, "{}", last_error());
        }
        let (k, v) = ("arch", b"llama");
        assert_eq!(hurray_file_encoder_set_metadata(e, k.as_ptr(), 4, v.as_ptr(), 5), HURRAY_OK);
        let (ok, st) = finish(e, &mut sink);
        assert!(ok && st.finished == 1 && st.tensor_count == samples.len() as u64);
        let mut e = e;
        assert_eq!(hurray_file_encoder_destroy(&mut e), HURRAY_OK);
        assert!(e.is_null());
    }
    sink.out
}

struct VecSink(Vec<u8>);

unsafe extern "C" fn vec_write(ctx: *mut c_void, src: *const u8, len: usize, out: *mut usize) -> HurrayStatus {
    // SAFETY: `ctx` is the test's VecSink, alive for the writer; `src` valid for `len`; `out` for one write.
    unsafe {
        (*(ctx as *mut VecSink)).0.extend_from_slice(std::slice::from_raw_parts(src, len));
        *out = len;
    }
    HURRAY_OK
}

/// The samples written through the callback writer (the reference bytes).
fn write_all() -> Vec<u8> {
    let mut sink = VecSink(Vec::new());
    let t = HurrayTransport {
        ctx: &mut sink as *mut VecSink as *mut c_void,
        write: Some(vec_write),
        ..HurrayTransport::default()
    };
    // SAFETY: `t` and `sink` outlive the writer; payloads outlive each call.
    unsafe {
        let mut w = null_mut();
        assert_eq!(hurray_file_writer_new(&t, null(), &mut w), HURRAY_OK);
        for (d, p) in samples() {
            let h = handle(&d);
            let slice = HurrayIoSlice { ptr: p.as_ptr(), len: p.len() };
            assert_eq!(hurray_file_writer_add_tensor(w, h, &slice, 1), HURRAY_OK);
            hurray_descriptor_destroy(h);
        }
        assert_eq!(hurray_file_writer_set_metadata(w, b"arch".as_ptr(), 4, b"llama".as_ptr(), 5), HURRAY_OK);
        assert_eq!(hurray_file_writer_finish(w, null_mut()), HURRAY_OK);
        hurray_file_writer_destroy(&mut w);
    }
    sink.0
}

// ---------- reading ----------

/// A binding's read loop: repeats `call` while it asks for input, reading the requested range
/// of `file` (at most `chunk` bytes per read, and nothing past its end) into `dst`.
///
/// # Safety
/// `r` is a live ranges reader.
unsafe fn drive(
    r: *mut HurrayFileReader,
    file: &[u8],
    chunk: usize,
    mut call: impl FnMut() -> HurrayStatus,
) -> HurrayStatus {
    let mut rounds = 0;
    loop {
        let s = call();
        if s != HURRAY_NEED_INPUT {
            return s;
        }
        rounds += 1;
        assert!(rounds < 1_000_000, "a call kept asking for input");
        let mut rd = HurrayFileRead { offset: 0, len: 0, dst: null_mut() };
        // SAFETY: `r` is live; `rd` a live local.
        assert_eq!(unsafe { hurray_file_reader_pending_read(r, &mut rd) }, HURRAY_OK);
        assert!(rd.len >= 1 && !rd.dst.is_null());
        let at = (rd.offset as usize).min(file.len());
        let n = (rd.len as usize).min(chunk).min(file.len() - at);
        // SAFETY: `dst` is valid for `rd.len` ≥ `n` bytes until the next reader call.
        unsafe { std::ptr::copy_nonoverlapping(file[at..].as_ptr(), rd.dst as *mut u8, n) };
        // SAFETY: `r` is live.
        assert_eq!(unsafe { hurray_file_reader_supply(r, n as u64) }, HURRAY_OK);
    }
}

/// A ranges reader over `file` claiming `size` bytes, opened; the open status.
fn open_ranges(
    file: &[u8],
    size: u64,
    opts: *const HurrayFileReaderOptions,
    chunk: usize,
) -> (HurrayStatus, *mut HurrayFileReader) {
    let mut r = null_mut();
    // SAFETY: `r` is a live local; the reader is live after new.
    unsafe {
        assert_eq!(hurray_file_reader_new_ranges(size, opts, &mut r), HURRAY_OK);
        let s = drive(r, file, chunk, || hurray_file_reader_open_ranges(r));
        (s, r)
    }
}

/// Everything a reader says about its container, as statuses and bytes, read through `call`
/// (the plain call, or the ranges loop).
///
/// # Safety
/// `r` live.
unsafe fn summary(
    r: *mut HurrayFileReader,
    call: &mut dyn FnMut(&mut dyn FnMut() -> HurrayStatus) -> HurrayStatus,
) -> Vec<String> {
    let mut out = Vec::new();
    let mut n = 0u64;
    // SAFETY: `r` is live (# Safety); every out-pointer is a live local; tensors and entries are destroyed here.
    unsafe {
        out.push(format!("count {}", status_name(hurray_file_reader_count(r, &mut n))));
        for i in 0..n.min(64) {
            let mut e = null_mut();
            let s = call(&mut || hurray_file_reader_entry(r, i, &mut e));
            out.push(format!("entry {i} {}", status_name(s)));
            if s != HURRAY_OK {
                continue;
            }
            let mut t = null_mut();
            let s = call(&mut || hurray_file_reader_read_tensor(r, e, &mut t));
            out.push(format!("tensor {i} {}", status_name(s)));
            if s == HURRAY_OK {
                out.push(format!("bytes {i} {:?}", crc(&tensor_bytes(t).1)));
                hurray_tensor_destroy(&mut t);
            }
            let mut dst = vec![0u8; 400_000];
            let mut len = 0u64;
            let s = call(&mut || {
                hurray_file_reader_read_buffer_into(
                    r,
                    e,
                    0,
                    dst.as_mut_ptr() as *mut c_void,
                    dst.len() as u64,
                    &mut len,
                )
            });
            out.push(format!(
                "into {i} {} {}",
                status_name(s),
                if s == HURRAY_OK { crc(&dst[..len as usize]) } else { 0 }
            ));
            hurray_file_entry_destroy(&mut e);
        }
        let mut e = null_mut();
        let s = call(&mut || hurray_file_reader_find(r, b"w0".as_ptr(), 2, &mut e));
        out.push(format!("find {}", status_name(s)));
        hurray_file_entry_destroy(&mut e);
        let mut m = 0u64;
        out.push(format!("metadata {} {m}", status_name(call(&mut || hurray_file_reader_metadata_count(r, &mut m)))));
        out.push(format!("verify {}", status_name(call(&mut || hurray_file_reader_verify(r)))));
    }
    out
}

fn crc(b: &[u8]) -> u32 {
    hurray_core::crc32c::crc32c(b)
}

/// Buffer 0 of `t`: its address and bytes.
///
/// # Safety
/// `t` live with a buffer.
unsafe fn tensor_bytes(t: *mut HurrayTensor) -> (usize, Vec<u8>) {
    let (mut list, mut b, mut data, mut size) = (null_mut(), null_mut(), null_mut(), 0u64);
    // SAFETY: `t` is live (# Safety); the data pointer is valid for its size while `t` lives.
    unsafe {
        hurray_tensor_buffers(t, &mut list);
        hurray_buffer_list_get(list, 0, &mut b);
        hurray_buffer_data_ptr(b, &mut data);
        hurray_buffer_byte_size(b, &mut size);
        let v = if size == 0 { vec![] } else { std::slice::from_raw_parts(data as *const u8, size as usize).to_vec() };
        (data as usize, v)
    }
}

fn span_summary(file: &[u8], opts: *const HurrayFileReaderOptions) -> Vec<String> {
    let mut r = null_mut();
    // SAFETY: `file` outlives the reader and its tensors (destroyed in `summary`).
    unsafe {
        let s = hurray_file_reader_open_span(file.as_ptr() as *const c_void, file.len() as u64, opts, &mut r);
        if s != HURRAY_OK {
            return vec![format!("open {}", status_name(s))];
        }
        let mut plain = |f: &mut dyn FnMut() -> HurrayStatus| f();
        let mut out = summary(r, &mut plain);
        out.insert(0, "open HURRAY_OK".into());
        hurray_file_reader_destroy(&mut r);
        out
    }
}

fn ranges_summary(file: &[u8], opts: *const HurrayFileReaderOptions, chunk: usize) -> Vec<String> {
    let (s, mut r) = open_ranges(file, file.len() as u64, opts, chunk);
    if s != HURRAY_OK {
        // SAFETY: `r` came from new_ranges.
        unsafe { hurray_file_reader_destroy(&mut r) };
        return vec![format!("open {}", status_name(s))];
    }
    // SAFETY: `r` is live until destroyed below.
    unsafe {
        let mut ranged = |f: &mut dyn FnMut() -> HurrayStatus| drive(r, file, chunk, f);
        let mut out = summary(r, &mut ranged);
        out.insert(0, "open HURRAY_OK".into());
        hurray_file_reader_destroy(&mut r);
        out
    }
}

/// Reader options that check payloads (the span default skips them) and optionally read the
/// index lazily.
fn options(lazy: bool) -> HurrayFileReaderOptions {
    let mut o = HurrayFileReaderOptions {
        struct_size: 0,
        flags: 0,
        eager_index_bytes: 0,
        max_descriptor_bytes: 0,
        max_tensor_bytes: 0,
        max_metadata_bytes: 0,
        max_index_bytes: 0,
    };
    // SAFETY: `o` is a live local.
    unsafe { hurray_file_reader_options_init(&mut o) };
    o.flags = HURRAY_FILE_READER_VERIFY_PAYLOADS;
    if lazy {
        o.eager_index_bytes = 0;
    }
    o
}

// ---------- tests ----------

#[test]
fn the_encoder_writes_the_callback_writers_bytes_whatever_the_write_sizes() {
    let reference = write_all();
    for chunks in [&[usize::MAX][..], &[1, 7, 4096, 65_536, 3][..], &[100_000, 13][..]] {
        assert_eq!(encode_all(chunks), reference, "write sizes {chunks:?}");
    }
}

#[test]
fn the_ranges_reader_reads_what_the_span_reader_reads() {
    let file = write_all();
    for lazy in [false, true] {
        let o = options(lazy);
        let want = span_summary(&file, &o);
        assert!(want.iter().filter(|l| l.starts_with("tensor") && l.ends_with("HURRAY_OK")).count() == 5, "{want:?}");
        for chunk in [usize::MAX, 4096, 977] {
            assert_eq!(ranges_summary(&file, &o, chunk), want, "lazy {lazy}, reads of at most {chunk} bytes");
        }
    }
}

#[test]
fn open_counts_supplied_reads_and_payloads_land_in_the_tensor() {
    let file = write_all();
    let (s, mut r) = open_ranges(&file, file.len() as u64, null(), usize::MAX);
    assert_eq!(s, HURRAY_OK);
    // SAFETY: `r` is live until destroyed; out-pointers are live locals.
    unsafe {
        let mut calls = 0u64;
        assert_eq!(hurray_file_reader_read_at_calls(r, &mut calls), HURRAY_OK);
        assert_eq!(calls, 2, "the last 4 KiB (trailer and index), then the header");
        assert_eq!(hurray_file_reader_open_ranges(r), HURRAY_OK, "open again does nothing");
        let mut e = null_mut();
        assert_eq!(hurray_file_reader_find(r, b"w1".as_ptr(), 2, &mut e), HURRAY_OK, "a loaded index reads nothing");
        let mut t = null_mut();
        assert_eq!(hurray_file_reader_read_tensor(r, e, &mut t), HURRAY_NEED_INPUT);
        let mut rd = HurrayFileRead { offset: 0, len: 0, dst: null_mut() };
        assert_eq!(hurray_file_reader_pending_read(r, &mut rd), HURRAY_OK);
        assert_eq!(rd.len, 300_000);
        // A caller whose read failed does not supply: the same call asks for the same range.
        assert_eq!(hurray_file_reader_read_tensor(r, e, &mut t), HURRAY_NEED_INPUT);
        let mut again = HurrayFileRead { offset: 0, len: 0, dst: null_mut() };
        hurray_file_reader_pending_read(r, &mut again);
        assert_eq!((again.offset, again.len, again.dst), (rd.offset, rd.len, rd.dst));
        // Two short reads, straight into the tensor's memory.
        let dst = rd.dst as usize;
        let s = drive(r, &file, 200_000, || hurray_file_reader_read_tensor(r, e, &mut t));
        assert_eq!(s, HURRAY_OK, "{}", last_error());
        let (addr, bytes) = tensor_bytes(t);
        assert_eq!(addr, dst, "the payload was read into the tensor's allocation: no copy");
        assert_eq!(bytes, pattern(300_000, 4));
        assert_eq!(hurray_file_reader_read_at_calls(r, &mut calls), HURRAY_OK);
        assert_eq!(calls, 4);
        hurray_tensor_destroy(&mut t);
        hurray_file_entry_destroy(&mut e);
        hurray_file_reader_destroy(&mut r);
    }
}

#[test]
fn misuse_of_the_ranges_calls_is_refused() {
    let file = write_all();
    // SAFETY: every handle is live while used; out-pointers are live locals.
    unsafe {
        let mut r = null_mut();
        assert_eq!(hurray_file_reader_new_ranges(file.len() as u64, null(), &mut r), HURRAY_OK);
        let mut n = 0u64;
        assert_eq!(hurray_file_reader_count(r, &mut n), HURRAY_ERR_INVALID_STATE, "not open yet");
        let mut rd = HurrayFileRead { offset: 0, len: 0, dst: null_mut() };
        assert_eq!(hurray_file_reader_pending_read(r, &mut rd), HURRAY_ERR_INVALID_STATE, "nothing asked yet");
        assert_eq!(hurray_file_reader_supply(r, 1), HURRAY_ERR_INVALID_STATE);
        assert_eq!(hurray_file_reader_open_ranges(r), HURRAY_NEED_INPUT);
        assert_eq!(hurray_file_reader_pending_read(r, &mut rd), HURRAY_OK);
        assert_eq!((rd.offset, rd.len), (file.len() as u64 - 4096, 4096));
        assert_eq!(hurray_file_reader_supply(r, 4097), HURRAY_ERR_INVALID_ARGUMENT, "more than asked");
        assert!(last_error().contains("4097"), "{}", last_error());
        hurray_file_reader_destroy(&mut r);

        // The ranges calls on another kind of reader.
        let mut span = null_mut();
        assert_eq!(
            hurray_file_reader_open_span(file.as_ptr() as *const c_void, file.len() as u64, null(), &mut span),
            HURRAY_OK
        );
        assert_eq!(hurray_file_reader_open_ranges(span), HURRAY_ERR_INVALID_ARGUMENT);
        assert_eq!(hurray_file_reader_pending_read(span, &mut rd), HURRAY_ERR_INVALID_ARGUMENT);
        assert_eq!(hurray_file_reader_supply(span, 0), HURRAY_ERR_INVALID_ARGUMENT);
        hurray_file_reader_destroy(&mut span);

        let mut bad = options(false);
        bad.flags = 0x80;
        assert_eq!(hurray_file_reader_new_ranges(0, &bad, &mut r), HURRAY_ERR_INVALID_ARGUMENT);
        assert!(r.is_null());
    }
}

#[test]
fn truncated_and_short_sources_are_truncated_not_hangs() {
    let file = write_all();
    // Too small for a container at all.
    let (s, mut r) = open_ranges(&file[..50], 50, null(), usize::MAX);
    assert_eq!(s, HURRAY_ERR_TRUNCATED);
    // SAFETY: `r` came from new_ranges.
    unsafe { hurray_file_reader_destroy(&mut r) };
    // The source ends before the size it declared: a supply of 0 inside the size.
    for cut in [file.len() - 1, file.len() - 4096, 100_000, 16] {
        let (s, mut r) = open_ranges(&file[..cut], file.len() as u64, null(), usize::MAX);
        assert_eq!(s, HURRAY_ERR_TRUNCATED, "cut at {cut}");
        // SAFETY: `r` came from new_ranges; after a failed open every call is INVALID_STATE.
        unsafe {
            assert_eq!(hurray_file_reader_open_ranges(r), HURRAY_ERR_INVALID_STATE);
            hurray_file_reader_destroy(&mut r);
        }
    }
    // A file that opens but whose payloads were cut: the tensor read reports it.
    let (s, mut r) = open_ranges(&file, file.len() as u64, null(), usize::MAX);
    assert_eq!(s, HURRAY_OK);
    // SAFETY: `r` is live until destroyed.
    unsafe {
        let mut e = null_mut();
        assert_eq!(hurray_file_reader_find(r, b"w1".as_ptr(), 2, &mut e), HURRAY_OK);
        let mut t = null_mut();
        let short = &file[..200_000];
        assert_eq!(drive(r, short, usize::MAX, || hurray_file_reader_read_tensor(r, e, &mut t)), HURRAY_ERR_TRUNCATED);
        assert!(t.is_null());
        // The reader is still usable: with the whole file the same read succeeds.
        assert_eq!(drive(r, &file, usize::MAX, || hurray_file_reader_read_tensor(r, e, &mut t)), HURRAY_OK);
        hurray_tensor_destroy(&mut t);
        hurray_file_entry_destroy(&mut e);
        hurray_file_reader_destroy(&mut r);
    }
}

#[test]
fn corrupt_files_get_the_span_readers_statuses() {
    let file = write_all();
    let len = file.len();
    // Every position of the header, the index, the metadata and the trailer, and a spread of
    // payload positions, each flipped in turn.
    let mut positions: Vec<usize> = (0..16).step_by(3).chain((len - 2048..len).step_by(29)).collect();
    positions.extend((16..len - 2048).step_by(40_999));
    for lazy in [false, true] {
        let o = options(lazy);
        for &p in &positions {
            let mut bad = file.clone();
            bad[p] ^= 0x5A;
            let want = span_summary(&bad, &o);
            assert_eq!(ranges_summary(&bad, &o, 1500), want, "byte {p} flipped, lazy {lazy}");
        }
    }
}

#[test]
fn verify_at_open_runs_through_the_ranges_and_finds_bad_padding() {
    let file = write_all();
    let mut o = options(true);
    o.flags |= HURRAY_FILE_READER_VERIFY_AT_OPEN;
    let (s, mut r) = open_ranges(&file, file.len() as u64, &o, 3000);
    assert_eq!(s, HURRAY_OK, "{}", last_error());
    // SAFETY: `r` came from new_ranges.
    unsafe { hurray_file_reader_destroy(&mut r) };
    // A non-zero padding byte between the header and "bias" (40 bytes at 64).
    let mut bad = file.clone();
    bad[20] = 1;
    let (s, mut r) = open_ranges(&bad, bad.len() as u64, &o, 3000);
    assert_eq!(s, HURRAY_ERR_CORRUPT);
    assert!(last_error().contains("offset 20"), "{}", last_error());
    // SAFETY: `r` came from new_ranges.
    unsafe { hurray_file_reader_destroy(&mut r) };
}

#[test]
fn a_failed_write_before_a_tensor_left_takes_it_back_and_loses_nothing() {
    let reference = write_all();
    let samples = samples();
    // Write call k fails, for each k. Either none of the tensor being sent had left: it is
    // taken back, added again, and the container is byte for byte the reference one (nothing
    // consumed before was lost or sent twice); or part of it had left: the encoder is
    // poisoned and its output is no container. A failure while finishing is always retried.
    let (mut taken_back, mut poisoned) = (0, 0);
    for fail in 0..12 {
        let e = new_encoder();
        let mut sink = Sink::new(&[usize::MAX]);
        sink.fail = vec![fail];
        // SAFETY: `e` is live; payloads outlive the sends.
        let done = unsafe {
            let mut ok = true;
            for (d, p) in &samples {
                let mut st = HurrayFileEncoderState::default();
                hurray_file_encoder_consume(e, 0, &mut st);
                let before = st.tensor_count;
                let s = add(e, &mut sink, d, p);
                if s == HURRAY_ERR_POISONED {
                    ok = false;
                    break;
                }
                assert_eq!(s, HURRAY_OK, "{}", last_error());
                hurray_file_encoder_consume(e, 0, &mut st);
                if st.tensor_count == before {
                    taken_back += 1;
                    assert_eq!(add(e, &mut sink, d, p), HURRAY_OK, "{}", last_error());
                }
            }
            if ok {
                hurray_file_encoder_set_metadata(e, b"arch".as_ptr(), 4, b"llama".as_ptr(), 5);
                let (mut sent, mut st) = finish(e, &mut sink);
                while !sent {
                    (sent, st) = finish(e, &mut sink);
                }
                assert_eq!(st.finished, 1);
            }
            let mut e = e;
            hurray_file_encoder_destroy(&mut e);
            ok
        };
        if done {
            assert_eq!(sink.out, reference, "write call {fail} failed");
        } else {
            poisoned += 1;
            let (s, mut r) = open_ranges(&sink.out, sink.out.len() as u64, null(), usize::MAX);
            assert!(s < 0, "a poisoned encoder's output opened");
            // SAFETY: `r` came from new_ranges.
            unsafe { hurray_file_reader_destroy(&mut r) };
        }
    }
    assert!(taken_back >= 3 && poisoned >= 1, "taken back {taken_back}, poisoned {poisoned}");
}

#[test]
fn a_write_failure_mid_tensor_poisons_and_no_prefix_looks_complete() {
    let samples = samples();
    let e = new_encoder();
    // Reads of 50,000 bytes: "embedding" (100,000 bytes, borrowed) leaves in two writes; the
    // second fails after the first went out.
    let mut sink = Sink::new(&[50_000]);
    // SAFETY: `e` is live; payloads outlive the sends.
    unsafe {
        assert_eq!(add(e, &mut sink, &samples[0].0, &samples[0].1), HURRAY_OK);
        sink.fail = vec![sink.calls + 2];
        assert_eq!(add(e, &mut sink, &samples[1].0, &samples[1].1), HURRAY_ERR_POISONED);
        let mut st = HurrayFileEncoderState::default();
        assert_eq!(hurray_file_encoder_abort(e, 0, &mut st), HURRAY_ERR_POISONED);
        assert_eq!(st.poisoned, 1);
        assert_eq!(add(e, &mut sink, &samples[2].0, &samples[2].1), HURRAY_ERR_POISONED);
        assert_eq!(hurray_file_encoder_finish(e, null_mut(), &mut st), HURRAY_ERR_POISONED);
        let mut e = e;
        hurray_file_encoder_destroy(&mut e);
    }
    let (s, mut r) = open_ranges(&sink.out, sink.out.len() as u64, null(), usize::MAX);
    assert!(s == HURRAY_ERR_INVALID_MAGIC || s == HURRAY_ERR_TRUNCATED, "{}", status_name(s));
    // SAFETY: `r` came from new_ranges.
    unsafe { hurray_file_reader_destroy(&mut r) };

    // Whatever the point where writing stops, the bytes written are never a container until
    // the last byte of the trailer is.
    let whole = write_all();
    for cut in (0..whole.len()).step_by(997).chain(whole.len() - 80..whole.len()) {
        let (s, mut r) = open_ranges(&whole[..cut], cut as u64, null(), usize::MAX);
        assert!(s < 0, "a prefix of {cut} of {} bytes opened", whole.len());
        // SAFETY: `r` came from new_ranges.
        unsafe { hurray_file_reader_destroy(&mut r) };
    }
}

#[test]
fn encoder_rules() {
    let samples = samples();
    // SAFETY: every handle is live while used; out-pointers are live locals.
    unsafe {
        let e = new_encoder();
        let mut sink = Sink::new(&[usize::MAX]);
        let mut st = HurrayFileEncoderState::default();
        hurray_file_encoder_consume(e, 0, &mut st);
        assert_eq!((st.pending_bytes, st.bytes_written), (16, 0), "the header is pending");
        assert_eq!(hurray_file_encoder_consume(e, 17, &mut st), HURRAY_ERR_INVALID_ARGUMENT);
        // A large payload is borrowed: nothing more may be staged until it was sent.
        let (d, p) = &samples[4];
        let h = handle(d);
        let slice = HurrayIoSlice { ptr: p.as_ptr(), len: p.len() };
        assert_eq!(hurray_file_encoder_add_tensor(e, h, &slice, 1, &mut st), HURRAY_OK);
        assert_eq!(st.borrows_payloads, 1);
        let h0 = handle(&samples[0].0);
        let s0 = HurrayIoSlice { ptr: samples[0].1.as_ptr(), len: 40 };
        assert_eq!(hurray_file_encoder_add_tensor(e, h0, &s0, 1, &mut st), HURRAY_ERR_INVALID_STATE);
        assert_eq!(hurray_file_encoder_finish(e, null_mut(), &mut st), HURRAY_ERR_INVALID_STATE);
        assert_eq!(hurray_file_encoder_add_tensor(e, h, &slice, 1, &mut st), HURRAY_ERR_INVALID_STATE);
        assert!(sink.send(e));
        hurray_file_encoder_consume(e, 0, &mut st);
        assert_eq!((st.pending_bytes, st.borrows_payloads), (0, 0));
        assert_eq!(hurray_file_encoder_add_tensor(e, h, &slice, 1, &mut st), HURRAY_ERR_DUPLICATE_NAME);
        let two = [s0, s0];
        assert_eq!(hurray_file_encoder_add_tensor(e, h0, two.as_ptr(), 2, &mut st), HURRAY_ERR_INVALID_ARGUMENT);
        let short = HurrayIoSlice { ptr: s0.ptr, len: 39 };
        assert_eq!(hurray_file_encoder_add_tensor(e, h0, &short, 1, &mut st), HURRAY_ERR_BUFFER_TOO_SMALL);
        assert_eq!(hurray_file_encoder_set_metadata(e, null(), 0, null(), 0), HURRAY_ERR_INVALID_ARGUMENT);
        // Lengths over the limits are refused by length alone, before a byte is read (the
        // pointers have one byte behind them).
        assert_eq!(hurray_file_encoder_set_metadata(e, b"k".as_ptr(), 1 << 62, null(), 0), HURRAY_ERR_LIMIT_EXCEEDED);
        assert_eq!(hurray_file_encoder_set_metadata(e, b"k".as_ptr(), 1 << 40, null(), 0), HURRAY_ERR_LIMIT_EXCEEDED);
        assert_eq!(
            hurray_file_encoder_set_metadata(e, b"k".as_ptr(), 1, b"v".as_ptr(), u64::MAX),
            HURRAY_ERR_LIMIT_EXCEEDED
        );
        // A composite: staged whole, payloads copied.
        let mut b = null_mut();
        assert_eq!(hurray_composite_builder_new(b"pair".as_ptr(), 4, &mut b), HURRAY_OK);
        assert_eq!(hurray_composite_builder_add_tensor(b, b"a".as_ptr(), 1, h0, &s0, 1), HURRAY_OK);
        assert_eq!(hurray_composite_builder_add_tensor(b, b"b".as_ptr(), 1, h, &slice, 1), HURRAY_OK);
        assert_eq!(hurray_file_encoder_add_composite(e, b, &mut st), HURRAY_OK, "{}", last_error());
        assert_eq!((st.tensor_count, st.borrows_payloads), (4, 0));
        // None of it left: a failed send takes the whole composite back.
        assert_eq!(hurray_file_encoder_abort(e, 1, &mut st), HURRAY_OK);
        assert_eq!((st.tensor_count, st.pending_bytes), (1, 0));
        assert_eq!(hurray_file_encoder_add_composite(e, b, &mut st), HURRAY_OK);
        hurray_composite_builder_destroy(&mut b);
        let (ok, st) = finish(e, &mut sink);
        assert!(ok && st.finished == 1);
        assert_eq!(hurray_file_encoder_finish(e, null_mut(), null_mut()), HURRAY_OK, "idempotent");
        assert_eq!(hurray_file_encoder_add_tensor(e, h0, &s0, 1, null_mut()), HURRAY_ERR_INVALID_STATE);
        hurray_descriptor_destroy(h);
        hurray_descriptor_destroy(h0);
        let mut e = e;
        hurray_file_encoder_destroy(&mut e);
        // The composite reads back through the ranges reader.
        let file = sink.out;
        let (s, mut r) = open_ranges(&file, file.len() as u64, null(), usize::MAX);
        assert_eq!(s, HURRAY_OK);
        let mut c = null_mut();
        assert_eq!(
            drive(r, &file, 7000, || hurray_file_reader_read_composite(r, b"pair".as_ptr(), 4, &mut c)),
            HURRAY_OK
        );
        hurray_composite_destroy(&mut c);
        assert_eq!(drive(r, &file, 7000, || hurray_file_reader_check_composites(r)), HURRAY_OK);
        hurray_file_reader_destroy(&mut r);
    }
}

/// Samples written through the callback writer.
fn write_these(samples: &[(TensorDescriptor, Vec<u8>)]) -> Vec<u8> {
    let mut sink = VecSink(Vec::new());
    let t = HurrayTransport {
        ctx: &mut sink as *mut VecSink as *mut c_void,
        write: Some(vec_write),
        ..HurrayTransport::default()
    };
    // SAFETY: `t` and `sink` outlive the writer; payloads outlive each call.
    unsafe {
        let mut w = null_mut();
        assert_eq!(hurray_file_writer_new(&t, null(), &mut w), HURRAY_OK);
        for (d, p) in samples {
            let h = handle(d);
            let slice = HurrayIoSlice { ptr: p.as_ptr(), len: p.len() };
            assert_eq!(hurray_file_writer_add_tensor(w, h, &slice, 1), HURRAY_OK);
            hurray_descriptor_destroy(h);
        }
        assert_eq!(hurray_file_writer_finish(w, null_mut()), HURRAY_OK);
        hurray_file_writer_destroy(&mut w);
    }
    sink.0
}

#[test]
fn payload_verification_resumes_through_the_ranges_and_holds_one_window() {
    let big = 3 * (1 << 20) + 77;
    let mut s = samples();
    s.push((named("zbig", big as u64, 64), pattern(big, 5)));
    let file = write_these(&s);
    let at = file.len() - 4096 - (1 << 20); // inside "zbig"'s last megabyte (it is stored last)
    for (bytes, want) in [
        (file.clone(), HURRAY_OK),
        (
            {
                let mut b = file.clone();
                b[at] ^= 2;
                b
            },
            HURRAY_ERR_CORRUPT,
        ),
    ] {
        for lazy in [false, true] {
            let o = options(lazy);
            let (st, mut r) = open_ranges(&bytes, bytes.len() as u64, &o, usize::MAX);
            assert_eq!(st, HURRAY_OK, "{}", last_error());
            let mut rounds = 0u32;
            // SAFETY: `r` is a live ranges reader.
            let st = unsafe {
                drive(r, &bytes, usize::MAX, || {
                    rounds += 1;
                    hurray_file_reader_verify_payloads(r)
                })
            };
            assert_eq!(st, want, "{}", last_error());
            if want == HURRAY_ERR_CORRUPT {
                assert!(last_error().contains("\"zbig\" checksum mismatch"), "{}", last_error());
            }
            // Each repeat continues where the last stopped: about one round per entry and window,
            // never a restart from the first entry.
            assert!(rounds <= 2 * (s.len() as u32 + 4) + 2, "{rounds} rounds");
            // SAFETY: `r` came from new_ranges.
            unsafe { hurray_file_reader_destroy(&mut r) };
        }
        // The span reader checks in place and agrees.
        let o = options(false);
        let mut r = null_mut();
        // SAFETY: `bytes` outlives the reader; `r` is a live local.
        unsafe {
            assert_eq!(
                hurray_file_reader_open_span(bytes.as_ptr() as *const c_void, bytes.len() as u64, &o, &mut r),
                HURRAY_OK
            );
            assert_eq!(hurray_file_reader_verify_payloads(r), want);
            hurray_file_reader_destroy(&mut r);
        }
    }
}
