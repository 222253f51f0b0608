//! The container through the C ABI, driven from Rust the way a binding drives it: a writer
//! over a Vec-backed `write`, a reader over Vec-backed `read_at`/`size`, and the span reader
//! over an in-memory region (docs/spec/hrryfile.md §8 C ABI summary).

use std::ffi::c_void;
use std::ptr::{null, null_mut};

use hurray_core::{BufferHandle, DeviceTag, ElementType, LayoutDescriptor, Shape, SyncMode, TensorDescriptor};
use hurray_ffi::buffer::{
    hurray_buffer_alignment, hurray_buffer_byte_size, hurray_buffer_data_ptr, hurray_buffer_destroy,
};
use hurray_ffi::buffer_list::{hurray_buffer_list_get, hurray_buffer_list_len};
use hurray_ffi::composite::*;
use hurray_ffi::descriptor::{hurray_descriptor_buffer_count, hurray_descriptor_destroy, hurray_descriptor_name};
use hurray_ffi::file::*;
use hurray_ffi::panic::hurray_last_error_message;
use hurray_ffi::*;

// ---------- transports ----------

struct Sink {
    bytes: Vec<u8>,
    chunk: usize,
    released: u32,
}

unsafe extern "C" fn sink_write(ctx: *mut c_void, src: *const u8, len: usize, out: *mut usize) -> HurrayStatus {
    // SAFETY: `ctx` is the `Sink` this test registered, which outlives the writer; Hurray calls one callback at a time.
    let s = unsafe { &mut *(ctx as *mut Sink) };
    let n = len.min(s.chunk);
    // SAFETY: `src` is valid for `len` >= `n` bytes (the transport callback contract).
    s.bytes.extend_from_slice(unsafe { std::slice::from_raw_parts(src, n) });
    // SAFETY: Hurray passes `out` valid for one write (the transport callback contract).
    unsafe { *out = n };
    HURRAY_OK
}

unsafe extern "C" fn sink_release(ctx: *mut c_void) {
    // SAFETY: `ctx` is the `Sink` this test registered, still alive when the writer releases it.
    unsafe { (*(ctx as *mut Sink)).released += 1 };
}

struct Source {
    bytes: Vec<u8>,
    chunk: usize,
    calls: u64,
    fail_next: u32,
    released: u32,
    out_of_range: bool,
}

impl Source {
    fn new(bytes: Vec<u8>) -> Self {
        Source { bytes, chunk: usize::MAX, calls: 0, fail_next: 0, released: 0, out_of_range: false }
    }
}

unsafe extern "C" fn src_read_at(
    ctx: *mut c_void,
    offset: u64,
    dst: *mut u8,
    len: usize,
    out: *mut usize,
) -> HurrayStatus {
    // SAFETY: `ctx` is the `Source` that `source_transport` registered, which outlives the reader; one callback at a
    // time.
    let s = unsafe { &mut *(ctx as *mut Source) };
    if s.fail_next > 0 {
        s.fail_next -= 1;
        // SAFETY: Hurray passes `out` valid for one write (the transport callback contract).
        unsafe { *out = 0 };
        return HURRAY_ERR_TRANSPORT;
    }
    s.calls += 1;
    if offset + len as u64 > s.bytes.len() as u64 {
        s.out_of_range = true;
    }
    let at = (offset as usize).min(s.bytes.len());
    let n = len.min(s.chunk).min(s.bytes.len() - at);
    // SAFETY: `dst` is valid for `len` >= `n` bytes (callback contract); `at + n` <= `bytes.len()` by the clamps above.
    unsafe { std::ptr::copy_nonoverlapping(s.bytes.as_ptr().add(at), dst, n) };
    // SAFETY: Hurray passes `out` valid for one write (the transport callback contract).
    unsafe { *out = n };
    HURRAY_OK
}

unsafe extern "C" fn src_size(ctx: *mut c_void, out: *mut u64) -> HurrayStatus {
    // SAFETY: `ctx` is the `Source` that `source_transport` registered, which outlives the reader.
    let s = unsafe { &mut *(ctx as *mut Source) };
    // SAFETY: Hurray passes `out` valid for one write (the transport callback contract).
    unsafe { *out = s.bytes.len() as u64 };
    HURRAY_OK
}

unsafe extern "C" fn src_release(ctx: *mut c_void) {
    // SAFETY: `ctx` is the `Source` that `source_transport` registered, still alive when the reader releases it.
    unsafe { (*(ctx as *mut Source)).released += 1 };
}

fn source_transport(s: &mut Source) -> HurrayTransport {
    HurrayTransport {
        ctx: s as *mut Source as *mut c_void,
        read_at: Some(src_read_at),
        size: Some(src_size),
        release: Some(src_release),
        ..HurrayTransport::default()
    }
}

// ---------- helpers ----------

fn descriptor(d: &TensorDescriptor) -> *mut HurrayDescriptor {
    let enc = d.encode().unwrap();
    let mut h = null_mut();
    // SAFETY: `enc` is valid for its length; `h` is a live local for the out-pointer.
    assert_eq!(unsafe { hurray_descriptor_decode(enc.as_ptr(), enc.len(), &mut h) }, HURRAY_OK);
    h
}

fn named(name: &str, n: u64, align: u64, tag: DeviceTag) -> TensorDescriptor {
    TensorDescriptor::new(
        1,
        0,
        ElementType::Uint8,
        Shape::new(vec![n]).unwrap(),
        0,
        LayoutDescriptor::RowMajor,
        vec![BufferHandle::new(n, align, tag, SyncMode::ProducerSynced).unwrap()],
        None,
        None,
        None,
        None,
    )
    .unwrap()
    .with_name(name)
    .unwrap()
}

fn pattern(n: usize, seed: u8) -> Vec<u8> {
    (0..n).map(|i| (i as u8).wrapping_mul(13).wrapping_add(seed)).collect()
}

fn last_error() -> String {
    let mut buf = vec![0 as std::ffi::c_char; 512];
    let mut len = 0usize;
    // SAFETY: `buf` is valid for `buf.len()` bytes; `len` is a live local.
    unsafe { hurray_last_error_message(buf.as_mut_ptr(), buf.len(), &mut len) };
    let bytes: Vec<u8> = buf[..len.min(511)].iter().map(|&c| c as u8).collect();
    String::from_utf8_lossy(&bytes).into_owned()
}

struct Sample {
    name: &'static str,
    desc: TensorDescriptor,
    payload: Vec<u8>,
}

fn samples() -> Vec<Sample> {
    vec![
        Sample { name: "layer.1.bias", desc: named("layer.1.bias", 40, 64, DeviceTag::Cpu), payload: pattern(40, 1) },
        Sample {
            name: "embedding",
            desc: named("embedding", 100_000, 4096, DeviceTag::Cpu),
            payload: pattern(100_000, 2),
        },
        Sample {
            name: "layer.0.weight",
            desc: named("layer.0.weight", 3000, 128, DeviceTag::Cpu),
            payload: pattern(3000, 3),
        },
        Sample { name: "empty", desc: named("empty", 0, 64, DeviceTag::Cpu), payload: vec![] },
    ]
}

/// Writes the samples plus two metadata entries through the C ABI; returns the bytes.
fn write_container(chunk: usize) -> Vec<u8> {
    let mut sink = Sink { bytes: Vec::new(), chunk, released: 0 };
    let t = HurrayTransport {
        ctx: &mut sink as *mut Sink as *mut c_void,
        write: Some(sink_write),
        release: Some(sink_release),
        ..HurrayTransport::default()
    };
    let mut opts = HurrayFileWriterOptions { struct_size: 0, flags: 0, min_payload_alignment: 0 };
    // SAFETY: `t` and `opts` are live locals and `sink` outlives the writer; payload slices outlive each call.
    unsafe {
        assert_eq!(hurray_file_writer_options_init(&mut opts), HURRAY_OK);
        assert_eq!(opts.min_payload_alignment, 64);
        let mut w: *mut HurrayFileWriter = null_mut();
        assert_eq!(hurray_file_writer_new(&t, &opts, &mut w), HURRAY_OK);
        let mut progress = Vec::new();
        for s in samples() {
            let d = descriptor(&s.desc);
            let slice = HurrayIoSlice { ptr: s.payload.as_ptr(), len: s.payload.len() };
            assert_eq!(hurray_file_writer_add_tensor(w, d, &slice, 1), HURRAY_OK, "{}", last_error());
            // The same name again is refused at add time.
            assert_eq!(hurray_file_writer_add_tensor(w, d, &slice, 1), HURRAY_ERR_DUPLICATE_NAME);
            hurray_descriptor_destroy(d);
            let mut written = 0u64;
            assert_eq!(hurray_file_writer_bytes_written(w, &mut written), HURRAY_OK);
            progress.push(written);
        }
        assert!(progress.windows(2).all(|p| p[0] <= p[1]));
        assert!(progress[1] > 100_000, "a large payload goes out at once");
        let mut count = 0u64;
        hurray_file_writer_tensor_count(w, &mut count);
        assert_eq!(count, 4);
        let (k, v) = ("tokenizer", b"{\"bos\": 1}");
        assert_eq!(
            hurray_file_writer_set_metadata(w, k.as_ptr(), k.len() as u64, v.as_ptr(), v.len() as u64),
            HURRAY_OK
        );
        let k = "arch";
        assert_eq!(hurray_file_writer_set_metadata(w, k.as_ptr(), 4, b"x".as_ptr(), 1), HURRAY_OK);
        // A length over the limit is refused by length alone, before a byte is read.
        assert_eq!(hurray_file_writer_set_metadata(w, k.as_ptr(), 1 << 62, null(), 0), HURRAY_ERR_LIMIT_EXCEEDED);
        assert_eq!(hurray_file_writer_set_metadata(w, k.as_ptr(), 4, b"llama".as_ptr(), 5), HURRAY_OK);
        assert_eq!(hurray_file_writer_set_metadata(w, null(), 0, null(), 0), HURRAY_ERR_INVALID_ARGUMENT);
        let bad = [0xFFu8, 0xFE];
        assert_eq!(hurray_file_writer_set_metadata(w, bad.as_ptr(), 2, null(), 0), HURRAY_ERR_INVALID_ARGUMENT);
        let mut size = 0u64;
        assert_eq!(hurray_file_writer_finish(w, &mut size), HURRAY_OK);
        assert_eq!(hurray_file_writer_finish(w, null_mut()), HURRAY_OK, "idempotent");
        let mut written = 0u64;
        hurray_file_writer_bytes_written(w, &mut written);
        assert_eq!(written, size);
        assert_eq!(sink.bytes.len() as u64, size);
        assert_eq!(sink.released, 0);
        assert_eq!(hurray_file_writer_destroy(&mut w), HURRAY_OK);
        assert!(w.is_null());
        assert_eq!(hurray_file_writer_destroy(&mut w), HURRAY_OK, "second destroy is a no-op");
        assert_eq!(sink.released, 1);
    }
    sink.bytes
}

/// Buffer `i` of `t`: its data pointer, a copy of its bytes and its alignment.
///
/// # Safety
/// `t` is a live tensor handle with more than `i` buffers.
unsafe fn tensor_bytes(t: *mut HurrayTensor, i: usize) -> (*mut c_void, Vec<u8>, u32) {
    let mut list = null_mut();
    let mut b = null_mut();
    let mut data = null_mut();
    let mut size = 0u64;
    let mut align = 0u32;
    // SAFETY: `t` is a live tensor handle (this function's # Safety); out-pointers are live locals, and the data
    // pointer is valid for the byte size its buffer reports while `t` lives.
    unsafe {
        assert_eq!(hurray_tensor_buffers(t, &mut list), HURRAY_OK);
        assert_eq!(hurray_buffer_list_get(list, i, &mut b), HURRAY_OK);
        hurray_buffer_data_ptr(b, &mut data);
        hurray_buffer_byte_size(b, &mut size);
        hurray_buffer_alignment(b, &mut align);
        let v = if size == 0 { vec![] } else { std::slice::from_raw_parts(data as *const u8, size as usize).to_vec() };
        (data, v, align)
    }
}

/// Whether `t`'s first buffer points into the caller's region.
///
/// # Safety
/// `t` is a live tensor handle with at least one buffer.
unsafe fn zero_copy(t: *mut HurrayTensor) -> bool {
    let mut list = null_mut();
    let mut b = null_mut();
    let mut z = false;
    // SAFETY: `t` is a live tensor handle with at least one buffer (this function's # Safety); out-pointers are live
    // locals.
    unsafe {
        hurray_tensor_buffers(t, &mut list);
        hurray_buffer_list_get(list, 0, &mut b);
        assert_eq!(hurray_file_buffer_is_zero_copy(b, &mut z), HURRAY_OK);
    }
    z
}

// ---------- tests ----------

#[test]
fn round_trip_through_the_c_abi() {
    let bytes = write_container(1000);
    assert_eq!(write_container(usize::MAX), bytes, "short writes change nothing");
    let mut src = Source::new(bytes.clone());
    src.chunk = 4000;
    let t = source_transport(&mut src);
    // SAFETY: `src` outlives the reader; handles come from the calls above and are destroyed once; out-pointers are
    // live locals.
    unsafe {
        let mut r: *mut HurrayFileReader = null_mut();
        assert_eq!(hurray_file_reader_open(&t, null(), &mut r), HURRAY_OK, "{}", last_error());
        let (mut count, mut calls, mut size) = (0u64, 0u64, 0u64);
        hurray_file_reader_count(r, &mut count);
        hurray_file_reader_read_at_calls(r, &mut calls);
        hurray_file_reader_size(r, &mut size);
        assert_eq!(count, 4);
        assert_eq!(calls, 3, "the last 4 KiB (trailer and index) in two calls of at most 4000 bytes, the header");
        assert_eq!(size, bytes.len() as u64);

        // Names in byte order, through the copy-out accessor.
        let mut names = Vec::new();
        for i in 0..count {
            let mut len = 0u64;
            assert_eq!(hurray_file_reader_name(r, i, null_mut(), 0, &mut len), HURRAY_ERR_BUFFER_TOO_SMALL);
            let mut buf = vec![0u8; len as usize];
            assert_eq!(hurray_file_reader_name(r, i, buf.as_mut_ptr(), len, &mut len), HURRAY_OK);
            names.push(String::from_utf8(buf).unwrap());
        }
        assert_eq!(names, ["embedding", "empty", "layer.0.weight", "layer.1.bias"]);
        let mut len = 0u64;
        assert_eq!(hurray_file_reader_name(r, 4, null_mut(), 0, &mut len), HURRAY_ERR_INVALID_ARGUMENT);

        for s in samples() {
            let mut e: *mut HurrayFileEntry = null_mut();
            assert_eq!(hurray_file_reader_find(r, s.name.as_ptr(), s.name.len() as u64, &mut e), HURRAY_OK);
            let mut p = null();
            let mut n = 0u64;
            hurray_file_entry_name(e, &mut p, &mut n);
            assert_eq!(std::ffi::CStr::from_ptr(p).to_str().unwrap(), s.name);
            assert_eq!(n as usize, s.name.len());
            let mut d = null_mut();
            assert_eq!(hurray_file_entry_descriptor(e, &mut d), HURRAY_OK);
            let mut dn = null();
            let mut dl = 0usize;
            hurray_descriptor_name(d, &mut dn, &mut dl);
            assert_eq!(dl, s.name.len());
            assert_eq!(hurray_descriptor_destroy(d), HURRAY_ERR_INVALID_ARGUMENT, "borrowed");
            let mut bc = 0u64;
            hurray_file_entry_buffer_count(e, &mut bc);
            assert_eq!(bc, 1);
            let mut loc = HurrayFileBufferLocation::default();
            assert_eq!(hurray_file_entry_buffer(e, 0, &mut loc), HURRAY_OK);
            assert_eq!(loc.length, s.payload.len() as u64);
            assert_eq!(loc.offset % u64::from(loc.alignment), 0);
            assert_eq!(loc.alignment as u64, s.desc.buffers()[0].alignment());
            assert_eq!(loc.flags, HURRAY_FILE_BUFFER_HAS_CRC);
            assert_eq!(loc.crc32c, hurray_core::crc32c::crc32c(&s.payload));
            assert_eq!(&bytes[loc.offset as usize..(loc.offset + loc.length) as usize], &s.payload[..]);
            assert_eq!(hurray_file_entry_buffer(e, 1, &mut loc), HURRAY_ERR_INVALID_ARGUMENT);
            let mut total = 0u64;
            hurray_file_entry_total_bytes(e, &mut total);
            assert_eq!(total, s.payload.len() as u64);

            let mut tensor = null_mut();
            assert_eq!(hurray_file_reader_read_tensor(r, e, &mut tensor), HURRAY_OK, "{}", last_error());
            let (ptr, got, align) = tensor_bytes(tensor, 0);
            assert_eq!(got, s.payload);
            assert_eq!(ptr as usize % align as usize, 0);
            assert!(!zero_copy(tensor));
            let mut td = null_mut();
            hurray_tensor_descriptor(tensor, &mut td);
            let mut nb = 0usize;
            hurray_descriptor_buffer_count(td, &mut nb);
            assert_eq!(nb, 1);
            let mut list = null_mut();
            hurray_tensor_buffers(tensor, &mut list);
            let mut ll = 0usize;
            hurray_buffer_list_len(list, &mut ll);
            assert_eq!(ll, 1);
            assert_eq!(hurray_tensor_destroy(&mut tensor), HURRAY_OK);

            // Into the caller's memory.
            let mut dst = vec![0u8; s.payload.len() + 8];
            let mut got_len = 0u64;
            let dp = if dst.is_empty() { null_mut() } else { dst.as_mut_ptr() as *mut c_void };
            assert_eq!(hurray_file_reader_read_buffer_into(r, e, 0, dp, dst.len() as u64, &mut got_len), HURRAY_OK);
            assert_eq!(got_len, s.payload.len() as u64);
            assert_eq!(&dst[..s.payload.len()], &s.payload[..]);
            if !s.payload.is_empty() {
                assert_eq!(
                    hurray_file_reader_read_buffer_into(r, e, 0, dp, s.payload.len() as u64 - 1, null_mut()),
                    HURRAY_ERR_BUFFER_TOO_SMALL
                );
            }
            assert_eq!(hurray_file_entry_destroy(&mut e), HURRAY_OK);
            assert!(e.is_null());
        }

        let mut e: *mut HurrayFileEntry = null_mut();
        assert_eq!(hurray_file_reader_find(r, b"nope".as_ptr(), 4, &mut e), HURRAY_ERR_NOT_FOUND);
        assert!(e.is_null());
        assert!(last_error().contains("nope"));
        assert_eq!(hurray_file_reader_entry(r, 0, &mut e), HURRAY_OK);
        let mut idx = 9u64;
        hurray_file_entry_index(e, &mut idx);
        assert_eq!(idx, 0);
        hurray_file_entry_destroy(&mut e);
        assert_eq!(hurray_file_reader_entry(r, 4, &mut e), HURRAY_ERR_INVALID_ARGUMENT);

        // Metadata: sorted by key, set_metadata replaced "arch".
        let mut mc = 0u64;
        assert_eq!(hurray_file_reader_metadata_count(r, &mut mc), HURRAY_OK);
        assert_eq!(mc, 2);
        let (mut k, mut kl, mut v, mut vl) = (null(), 0u64, null(), 0u64);
        assert_eq!(hurray_file_reader_metadata_get(r, 0, &mut k, &mut kl, &mut v, &mut vl), HURRAY_OK);
        assert_eq!(std::slice::from_raw_parts(k, kl as usize), b"arch");
        assert_eq!(std::slice::from_raw_parts(v, vl as usize), b"llama");
        assert_eq!(
            hurray_file_reader_metadata_get(r, 2, &mut k, &mut kl, &mut v, &mut vl),
            HURRAY_ERR_INVALID_ARGUMENT
        );
        assert_eq!(hurray_file_reader_metadata_find(r, b"tokenizer".as_ptr(), 9, &mut v, &mut vl), HURRAY_OK);
        assert_eq!(std::slice::from_raw_parts(v, vl as usize), b"{\"bos\": 1}");
        assert_eq!(hurray_file_reader_metadata_find(r, b"x".as_ptr(), 1, &mut v, &mut vl), HURRAY_ERR_NOT_FOUND);
        assert_eq!(hurray_file_reader_verify(r), HURRAY_OK);

        assert_eq!(src.released, 0);
        assert_eq!(hurray_file_reader_destroy(&mut r), HURRAY_OK);
        assert!(r.is_null());
        assert_eq!(src.released, 1, "release exactly once");
        assert!(!src.out_of_range);
    }
}

#[test]
fn span_reader_hands_out_the_region_in_place() {
    let bytes = write_container(usize::MAX);
    let mut backing = vec![0u8; bytes.len() + 4096];
    let skew = backing.as_ptr().align_offset(4096);
    backing[skew..skew + bytes.len()].copy_from_slice(&bytes);
    let region = &backing[skew..skew + bytes.len()];
    let (lo, hi) = (region.as_ptr() as usize, region.as_ptr() as usize + region.len());
    // SAFETY: `backing` (and so `region`) outlives the span reader and every tensor read from it; out-pointers are live
    // locals.
    unsafe {
        let mut r: *mut HurrayFileReader = null_mut();
        assert_eq!(
            hurray_file_reader_open_span(region.as_ptr() as *const c_void, region.len() as u64, null(), &mut r),
            HURRAY_OK
        );
        let mut tensors = Vec::new();
        for s in samples() {
            let mut e = null_mut();
            assert_eq!(hurray_file_reader_find(r, s.name.as_ptr(), s.name.len() as u64, &mut e), HURRAY_OK);
            let mut t = null_mut();
            assert_eq!(hurray_file_reader_read_tensor(r, e, &mut t), HURRAY_OK);
            hurray_file_entry_destroy(&mut e);
            tensors.push((t, s));
        }
        // Tensors borrow the region, not the reader.
        assert_eq!(hurray_file_reader_destroy(&mut r), HURRAY_OK);
        for (mut t, s) in tensors {
            let (ptr, got, _) = tensor_bytes(t, 0);
            assert_eq!(got, s.payload);
            if !s.payload.is_empty() {
                assert!((ptr as usize) >= lo && (ptr as usize) + s.payload.len() <= hi, "{} in place", s.name);
            }
            assert!(zero_copy(t));
            hurray_tensor_destroy(&mut t);
        }

        // One byte off alignment: copies, aligned as declared.
        let mut backing = vec![0u8; bytes.len() + 4097];
        let skew = backing.as_ptr().align_offset(4096) + 1;
        backing[skew..skew + bytes.len()].copy_from_slice(&bytes);
        let region = &backing[skew..skew + bytes.len()];
        let mut opts = std::mem::zeroed::<HurrayFileReaderOptions>();
        hurray_file_reader_options_init(&mut opts);
        opts.flags = HURRAY_FILE_READER_VERIFY_PAYLOADS;
        assert_eq!(
            hurray_file_reader_open_span(region.as_ptr() as *const c_void, region.len() as u64, &opts, &mut r),
            HURRAY_OK
        );
        let mut e = null_mut();
        assert_eq!(hurray_file_reader_find(r, b"embedding".as_ptr(), 9, &mut e), HURRAY_OK);
        let mut t = null_mut();
        assert_eq!(hurray_file_reader_read_tensor(r, e, &mut t), HURRAY_OK);
        let (ptr, got, align) = tensor_bytes(t, 0);
        assert_eq!(align, 4096);
        assert_eq!(ptr as usize % 4096, 0);
        assert_eq!(got, pattern(100_000, 2));
        assert!(!zero_copy(t));
        hurray_tensor_destroy(&mut t);
        hurray_file_entry_destroy(&mut e);
        hurray_file_reader_destroy(&mut r);
    }
}

#[test]
fn failures_are_clear_and_retryable() {
    let bytes = write_container(usize::MAX);
    // SAFETY: each `Source` outlives its reader; handles come from the calls above and are destroyed once; out-pointers
    // are live locals.
    unsafe {
        // A transport failure at open takes nothing; open again succeeds.
        let mut src = Source::new(bytes.clone());
        src.fail_next = 1;
        let t = source_transport(&mut src);
        let mut r: *mut HurrayFileReader = null_mut();
        assert_eq!(hurray_file_reader_open(&t, null(), &mut r), HURRAY_ERR_TRANSPORT);
        assert!(r.is_null());
        assert!(last_error().contains("read_at"));
        assert_eq!(src.released, 0, "a failed open releases nothing");
        assert_eq!(hurray_file_reader_open(&t, null(), &mut r), HURRAY_OK);
        // ...and a failure inside a read is retryable too.
        let mut e = null_mut();
        assert_eq!(hurray_file_reader_find(r, b"embedding".as_ptr(), 9, &mut e), HURRAY_OK);
        src.fail_next = 1;
        let mut tensor = null_mut();
        assert_eq!(hurray_file_reader_read_tensor(r, e, &mut tensor), HURRAY_ERR_TRANSPORT);
        assert!(tensor.is_null());
        assert_eq!(hurray_file_reader_read_tensor(r, e, &mut tensor), HURRAY_OK);
        hurray_tensor_destroy(&mut tensor);

        // An entry of another reader is refused.
        let mut src2 = Source::new(bytes.clone());
        let t2 = source_transport(&mut src2);
        let mut r2 = null_mut();
        assert_eq!(hurray_file_reader_open(&t2, null(), &mut r2), HURRAY_OK);
        assert_eq!(hurray_file_reader_read_tensor(r2, e, &mut tensor), HURRAY_ERR_INVALID_ARGUMENT);
        hurray_file_reader_destroy(&mut r2);
        hurray_file_entry_destroy(&mut e);

        // NULLs and missing callbacks.
        assert_eq!(hurray_file_reader_open(null(), null(), &mut r2), HURRAY_ERR_NULL_POINTER);
        let mut no_size = t;
        no_size.size = None;
        assert_eq!(hurray_file_reader_open(&no_size, null(), &mut r2), HURRAY_ERR_NULL_POINTER);
        assert_eq!(hurray_file_reader_find(r, null(), 3, &mut e), HURRAY_ERR_NULL_POINTER);
        assert_eq!(hurray_file_reader_count(r, null_mut()), HURRAY_ERR_NULL_POINTER);
        assert_eq!(hurray_file_reader_open_span(null(), 100, null(), &mut r2), HURRAY_ERR_NULL_POINTER);
        let mut opts = std::mem::zeroed::<HurrayFileReaderOptions>();
        hurray_file_reader_options_init(&mut opts);
        opts.flags = HURRAY_FILE_READER_VERIFY_PAYLOADS | HURRAY_FILE_READER_SKIP_PAYLOAD_CHECKS;
        assert_eq!(hurray_file_reader_open(&t, &opts, &mut r2), HURRAY_ERR_INVALID_ARGUMENT);
        opts.flags = 1 << 20;
        assert_eq!(hurray_file_reader_open(&t, &opts, &mut r2), HURRAY_ERR_INVALID_ARGUMENT);
        opts.flags = HURRAY_FILE_READER_VERIFY_AT_OPEN;
        assert_eq!(hurray_file_reader_open(&t, &opts, &mut r2), HURRAY_OK);
        hurray_file_reader_destroy(&mut r2);
        hurray_file_reader_destroy(&mut r);
        assert_eq!(hurray_file_reader_destroy(null_mut()), HURRAY_OK);
        assert_eq!(src.released, 2);

        // Hostile bytes: a flipped trailer magic is a clear error.
        let mut bad = bytes.clone();
        let n = bad.len();
        bad[n - 72] = b'x';
        assert_eq!(
            hurray_file_reader_open_span(bad.as_ptr() as *const c_void, n as u64, null(), &mut r2),
            HURRAY_ERR_INVALID_MAGIC
        );
        assert_eq!(
            hurray_file_reader_open_span(bad.as_ptr() as *const c_void, 40, null(), &mut r2),
            HURRAY_ERR_TRUNCATED
        );
    }
}

#[test]
fn writer_rules_through_the_c_abi() {
    let mut sink = Sink { bytes: Vec::new(), chunk: usize::MAX, released: 0 };
    let t = HurrayTransport {
        ctx: &mut sink as *mut Sink as *mut c_void,
        write: Some(sink_write),
        release: Some(sink_release),
        ..HurrayTransport::default()
    };
    // SAFETY: `sink` outlives the writers; handles come from the calls above and are destroyed once; out-pointers are
    // live locals.
    unsafe {
        let mut w: *mut HurrayFileWriter = null_mut();
        let mut opts = std::mem::zeroed::<HurrayFileWriterOptions>();
        hurray_file_writer_options_init(&mut opts);
        opts.min_payload_alignment = 100;
        assert_eq!(hurray_file_writer_new(&t, &opts, &mut w), HURRAY_ERR_INVALID_ALIGNMENT);
        opts.min_payload_alignment = 4096;
        opts.flags = 7;
        assert_eq!(hurray_file_writer_new(&t, &opts, &mut w), HURRAY_ERR_INVALID_ARGUMENT);
        assert_eq!(sink.released, 0);
        opts.flags = HURRAY_FILE_WRITER_NO_PAYLOAD_CHECKSUMS;
        assert_eq!(hurray_file_writer_new(&t, &opts, &mut w), HURRAY_OK);

        let unnamed = TensorDescriptor::dense(ElementType::Float32, Shape::new(vec![2]).unwrap()).unwrap();
        let d = descriptor(&unnamed);
        let p = [0u8; 8];
        let s = HurrayIoSlice { ptr: p.as_ptr(), len: 8 };
        assert_eq!(hurray_file_writer_add_tensor(w, d, &s, 1), HURRAY_ERR_INVALID_ARGUMENT);
        assert!(last_error().contains("name"));
        hurray_descriptor_destroy(d);
        let d = descriptor(&named("x", 8, 64, DeviceTag::Cpu));
        assert_eq!(hurray_file_writer_add_tensor(w, d, null(), 0), HURRAY_ERR_INVALID_ARGUMENT, "count mismatch");
        assert_eq!(hurray_file_writer_add_tensor(w, d, &s, 65), HURRAY_ERR_INVALID_ARGUMENT);
        let short = HurrayIoSlice { ptr: p.as_ptr(), len: 7 };
        assert_eq!(hurray_file_writer_add_tensor(w, d, &short, 1), HURRAY_ERR_BUFFER_TOO_SMALL);
        assert_eq!(hurray_file_writer_add_tensor(w, d, null(), 1), HURRAY_ERR_NULL_POINTER);
        assert_eq!(hurray_file_writer_add_tensor(w, d, &s, 1), HURRAY_OK);
        // Destroyed without finish: the bytes that went out are no container.
        assert_eq!(hurray_file_writer_flush(w), HURRAY_OK);
        assert_eq!(hurray_file_writer_destroy(&mut w), HURRAY_OK);
        assert_eq!(sink.released, 1);
        let mut r = null_mut();
        let n = sink.bytes.len();
        assert!(n >= 4096 + 8, "payload page-aligned");
        assert_ne!(
            hurray_file_reader_open_span(sink.bytes.as_ptr() as *const c_void, n as u64, null(), &mut r),
            HURRAY_OK
        );
        assert!(r.is_null());

        // After finish, adding is an invalid state.
        let mut sink2 = Sink { bytes: Vec::new(), chunk: usize::MAX, released: 0 };
        let t2 = HurrayTransport {
            ctx: &mut sink2 as *mut Sink as *mut c_void,
            write: Some(sink_write),
            ..HurrayTransport::default()
        };
        assert_eq!(hurray_file_writer_new(&t2, null(), &mut w), HURRAY_OK);
        assert_eq!(hurray_file_writer_finish(w, null_mut()), HURRAY_OK);
        assert_eq!(hurray_file_writer_add_tensor(w, d, &s, 1), HURRAY_ERR_INVALID_STATE);
        hurray_file_writer_destroy(&mut w);
        hurray_descriptor_destroy(d);
        assert_eq!(
            hurray_file_reader_open_span(
                sink2.bytes.as_ptr() as *const c_void,
                sink2.bytes.len() as u64,
                null(),
                &mut r
            ),
            HURRAY_OK
        );
        let mut c = 9u64;
        hurray_file_reader_count(r, &mut c);
        assert_eq!(c, 0);
        hurray_file_reader_destroy(&mut r);

        let no_write = HurrayTransport::default();
        assert_eq!(hurray_file_writer_new(&no_write, null(), &mut w), HURRAY_ERR_NULL_POINTER);
    }
}

#[test]
fn lazy_index_read_counts_through_the_c_abi() {
    const N: u64 = 20_000;
    let mut sink = Sink { bytes: Vec::new(), chunk: usize::MAX, released: 0 };
    let t = HurrayTransport {
        ctx: &mut sink as *mut Sink as *mut c_void,
        write: Some(sink_write),
        ..HurrayTransport::default()
    };
    // SAFETY: `sink` outlives the writer and `src` the reader; handles are destroyed once; out-pointers are live
    // locals.
    unsafe {
        let mut w = null_mut();
        assert_eq!(hurray_file_writer_new(&t, null(), &mut w), HURRAY_OK);
        for i in 0..N {
            let d = descriptor(&named(&format!("w{i:05}"), 2, 64, DeviceTag::Cpu));
            let p = [i as u8, (i >> 8) as u8];
            let s = HurrayIoSlice { ptr: p.as_ptr(), len: 2 };
            assert_eq!(hurray_file_writer_add_tensor(w, d, &s, 1), HURRAY_OK);
            hurray_descriptor_destroy(d);
        }
        assert_eq!(hurray_file_writer_finish(w, null_mut()), HURRAY_OK);
        hurray_file_writer_destroy(&mut w);
    }
    let mut src = Source::new(std::mem::take(&mut sink.bytes));
    let tr = source_transport(&mut src);
    // SAFETY: `src` outlives the reader; handles come from the calls above and are destroyed once; out-pointers are
    // live locals.
    unsafe {
        let mut opts = std::mem::zeroed::<HurrayFileReaderOptions>();
        hurray_file_reader_options_init(&mut opts);
        opts.eager_index_bytes = 0;
        let mut r = null_mut();
        assert_eq!(hurray_file_reader_open(&tr, &opts, &mut r), HURRAY_OK);
        let mut calls = 0u64;
        hurray_file_reader_read_at_calls(r, &mut calls);
        assert_eq!(calls, 2);
        assert_eq!(src.calls, 2, "the counter matches what the transport saw");
        let bound = 64 - N.leading_zeros() as u64 + 1; // ceil(log2(N + 1)) entries + 1 record
        for k in [0u64, 9_999, 19_999] {
            let name = format!("w{k:05}");
            let before = src.calls;
            let mut e = null_mut();
            assert_eq!(hurray_file_reader_find(r, name.as_ptr(), name.len() as u64, &mut e), HURRAY_OK);
            assert!(src.calls - before <= bound, "{} calls", src.calls - before);
            let mut t = null_mut();
            assert_eq!(hurray_file_reader_read_tensor(r, e, &mut t), HURRAY_OK);
            let (_, got, _) = tensor_bytes(t, 0);
            assert_eq!(got, [k as u8, (k >> 8) as u8]);
            hurray_tensor_destroy(&mut t);
            hurray_file_entry_destroy(&mut e);
        }
        hurray_file_reader_read_at_calls(r, &mut calls);
        assert_eq!(calls, src.calls);
        hurray_file_reader_destroy(&mut r);
    }
}

/// Every `hurray_file_*` function in hurray.h, read from the header itself.
#[cfg(unix)]
/// A fresh temporary directory for one test (removed by the caller).
fn temp_dir(tag: &str) -> std::path::PathBuf {
    static NEXT: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);
    let n = NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let d = std::env::temp_dir().join(format!("hurray-file-abi-{tag}-{}-{n}", std::process::id()));
    std::fs::create_dir_all(&d).unwrap();
    d
}

/// The signature shared by `hurray_file_reader_open_path` and `_open_mapped`.
type OpenByPath =
    unsafe extern "C" fn(*const u8, u64, *const HurrayFileReaderOptions, *mut *mut HurrayFileReader) -> HurrayStatus;

#[cfg(unix)]
/// `open` (a by-path opener) on `path`: the status and the reader (NULL on failure).
fn open_by(
    open: OpenByPath,
    path: &std::path::Path,
    opts: *const HurrayFileReaderOptions,
) -> (HurrayStatus, *mut HurrayFileReader) {
    use std::os::unix::ffi::OsStrExt;
    let p = path.as_os_str().as_bytes();
    let mut r = null_mut();
    // SAFETY: `p` is valid for its length; `opts` is NULL or a live local of the caller; `r` is a live local.
    let s = unsafe { open(p.as_ptr(), p.len() as u64, opts, &mut r) };
    assert_eq!(s == HURRAY_OK, !r.is_null(), "a reader exactly on success");
    (s, r)
}

#[cfg(unix)]
/// `hurray_file_reader_open_path` on `path`: the status and the reader (NULL on failure).
fn open_path(path: &std::path::Path, opts: *const HurrayFileReaderOptions) -> (HurrayStatus, *mut HurrayFileReader) {
    open_by(hurray_file_reader_open_path, path, opts)
}

#[test]
#[cfg(unix)]
fn path_reader_reads_the_file_itself() {
    let bytes = write_container(usize::MAX);
    let dir = temp_dir("path");
    let file = dir.join("model.hrry");
    std::fs::write(&file, &bytes).unwrap();
    // SAFETY: handles come from the calls below and are destroyed once; out-pointers are live locals.
    unsafe {
        let (s, mut r) = open_path(&file, null());
        assert_eq!(s, HURRAY_OK, "{}", last_error());
        let (mut count, mut calls, mut size) = (0u64, 0u64, 0u64);
        hurray_file_reader_count(r, &mut count);
        hurray_file_reader_read_at_calls(r, &mut calls);
        hurray_file_reader_size(r, &mut size);
        assert_eq!((count, size), (4, bytes.len() as u64));
        assert_eq!(calls, 2, "the last 4 KiB (trailer and index), the header: as through a transport");
        // Every tensor comes back with its bytes, checksums checked (the default).
        for sample in samples() {
            let mut e = null_mut();
            let n = sample.name.as_bytes();
            assert_eq!(hurray_file_reader_find(r, n.as_ptr(), n.len() as u64, &mut e), HURRAY_OK);
            let mut t = null_mut();
            assert_eq!(hurray_file_reader_read_tensor(r, e, &mut t), HURRAY_OK, "{}", last_error());
            let (_, got, align) = tensor_bytes(t, 0);
            assert_eq!(got, sample.payload, "{}", sample.name);
            assert_eq!(align as u64, sample.desc.buffers()[0].alignment());
            hurray_tensor_destroy(&mut t);
            hurray_file_entry_destroy(&mut e);
        }
        let mut md = 0u64;
        assert_eq!(hurray_file_reader_metadata_count(r, &mut md), HURRAY_OK);
        assert_eq!(md, 2);
        assert_eq!(hurray_file_reader_verify(r), HURRAY_OK, "{}", last_error());

        // The file shrinks under the open reader: TRUNCATED, not a crash or a short tensor.
        let mut e = null_mut();
        assert_eq!(hurray_file_reader_find(r, b"embedding".as_ptr(), 9, &mut e), HURRAY_OK);
        std::fs::OpenOptions::new().write(true).open(&file).unwrap().set_len(100).unwrap();
        let mut t = null_mut();
        assert_eq!(hurray_file_reader_read_tensor(r, e, &mut t), HURRAY_ERR_TRUNCATED, "{}", last_error());
        assert!(t.is_null());
        hurray_file_entry_destroy(&mut e);
        assert_eq!(hurray_file_reader_destroy(&mut r), HURRAY_OK);
        assert!(r.is_null());

        // A damaged payload: CORRUPT with checks on (the default), the bytes with them off.
        let mut damaged = bytes.clone();
        let (s, mut r) = open_path(
            &{
                std::fs::write(&file, &bytes).unwrap();
                file.clone()
            },
            null(),
        );
        assert_eq!(s, HURRAY_OK);
        assert_eq!(hurray_file_reader_find(r, b"layer.1.bias".as_ptr(), 12, &mut e), HURRAY_OK);
        let mut loc = HurrayFileBufferLocation::default();
        assert_eq!(hurray_file_entry_buffer(e, 0, &mut loc), HURRAY_OK);
        hurray_file_entry_destroy(&mut e);
        hurray_file_reader_destroy(&mut r);
        damaged[loc.offset as usize] ^= 0x5A;
        std::fs::write(&file, &damaged).unwrap();
        let mut skip = std::mem::zeroed::<HurrayFileReaderOptions>();
        hurray_file_reader_options_init(&mut skip);
        skip.flags = HURRAY_FILE_READER_SKIP_PAYLOAD_CHECKS;
        for (opts, want) in [(null(), HURRAY_ERR_CORRUPT), (&skip as *const _, HURRAY_OK)] {
            let (s, mut r) = open_path(&file, opts);
            assert_eq!(s, HURRAY_OK);
            assert_eq!(hurray_file_reader_find(r, b"layer.1.bias".as_ptr(), 12, &mut e), HURRAY_OK);
            assert_eq!(hurray_file_reader_read_tensor(r, e, &mut t), want, "{}", last_error());
            hurray_tensor_destroy(&mut t);
            hurray_file_entry_destroy(&mut e);
            hurray_file_reader_destroy(&mut r);
        }
        let mut bad_opts = skip;
        bad_opts.flags = HURRAY_FILE_READER_VERIFY_PAYLOADS | HURRAY_FILE_READER_SKIP_PAYLOAD_CHECKS;
        assert_eq!(open_path(&file, &bad_opts).0, HURRAY_ERR_INVALID_ARGUMENT, "options are checked");
    }
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
#[cfg(unix)]
fn path_reader_refuses_bad_paths_and_hostile_files() {
    let bytes = write_container(usize::MAX);
    let dir = temp_dir("hostile");
    let put = |name: &str, b: &[u8]| {
        let p = dir.join(name);
        std::fs::write(&p, b).unwrap();
        p
    };
    let fails = |p: &std::path::Path, want: HurrayStatus, says: &str| {
        let (s, _) = open_path(p, null());
        let msg = last_error();
        assert_eq!(s, want, "{}: {msg}", p.display());
        assert!(msg.starts_with("hurray_file_reader_open_path: ") && msg.contains(says), "{msg}");
    };
    fails(&dir.join("missing.hrry"), HURRAY_ERR_NOT_FOUND, "missing.hrry");
    fails(&dir, HURRAY_ERR_INVALID_ARGUMENT, "is a directory");
    fails(&put("empty.hrry", &[]), HURRAY_ERR_TRUNCATED, "smaller than a container header");
    fails(&put("short.hrry", &bytes[..80]), HURRAY_ERR_TRUNCATED, "smaller than a container header");
    fails(&put("cut.hrry", &bytes[..bytes.len() - 10]), HURRAY_ERR_INVALID_MAGIC, "");
    // A trailer that claims an index of 2^60 bytes (checksum resealed): refused before any
    // allocation, because it does not fit the file's size.
    let mut huge = bytes.clone();
    let t = huge.len() - 72;
    huge[t + 24..t + 32].copy_from_slice(&(1u64 << 60).to_le_bytes());
    let crc = hurray_core::crc32c::crc32c(&huge[t..t + 68]);
    huge[t + 68..t + 72].copy_from_slice(&crc.to_le_bytes());
    fails(&put("huge-index.hrry", &huge), HURRAY_ERR_CORRUPT, "");
    // A FIFO is refused at once instead of blocking in open (Linux opens with O_NONBLOCK).
    let fifo = dir.join("fifo");
    if std::process::Command::new("mkfifo").arg(&fifo).status().is_ok_and(|s| s.success()) {
        fails(&fifo, HURRAY_ERR_INVALID_ARGUMENT, "not a regular file");
    }
    // SAFETY: the pointers are NULL, live locals, or literals valid for the lengths given.
    unsafe {
        let mut r = null_mut();
        assert_eq!(hurray_file_reader_open_path(null(), 0, null(), &mut r), HURRAY_ERR_INVALID_ARGUMENT);
        assert!(last_error().contains("path is empty"));
        assert_eq!(hurray_file_reader_open_path(b"a\0b".as_ptr(), 3, null(), &mut r), HURRAY_ERR_INVALID_ARGUMENT);
        assert!(last_error().contains("NUL"));
        assert_eq!(hurray_file_reader_open_path(null(), 5, null(), &mut r), HURRAY_ERR_NULL_POINTER);
        assert!(r.is_null());
    }
    std::fs::remove_dir_all(&dir).unwrap();
}

#[cfg(unix)]
/// `hurray_file_reader_open_mapped` on `path`: the status and the reader (NULL on failure).
fn open_mapped(path: &std::path::Path, opts: *const HurrayFileReaderOptions) -> (HurrayStatus, *mut HurrayFileReader) {
    open_by(hurray_file_reader_open_mapped, path, opts)
}

#[cfg(target_os = "linux")]
/// How many of this process's mappings (/proc/self/maps) are of `path`.
fn maps_of(path: &std::path::Path) -> usize {
    let name = std::fs::canonicalize(path).unwrap();
    let name = format!(" {}", name.display());
    std::fs::read_to_string("/proc/self/maps").unwrap().lines().filter(|l| l.ends_with(&name)).count()
}

#[test]
#[cfg(all(unix, target_pointer_width = "64"))]
fn mapped_reader_maps_the_file_itself_and_the_last_holder_unmaps() {
    let bytes = write_container(usize::MAX);
    let dir = temp_dir("mapped");
    let file = dir.join("model.hrry");
    std::fs::write(&file, &bytes).unwrap();
    let linux = cfg!(target_os = "linux");
    // SAFETY: handles come from the calls below and are destroyed once; out-pointers are live locals; the region is
    // read only while a share of the map is held.
    unsafe {
        let (s, mut r) = open_mapped(&file, null());
        assert_eq!(s, HURRAY_OK, "{}", last_error());
        let mut region = null_mut();
        assert_eq!(hurray_file_reader_mapping(r, &mut region), HURRAY_OK, "{}", last_error());
        let mut base: *mut c_void = null_mut();
        assert_eq!(hurray_buffer_data_ptr(region, &mut base), HURRAY_OK);
        let base = base as *const u8;
        let mut len = 0u64;
        hurray_buffer_byte_size(region, &mut len);
        assert_eq!(len, bytes.len() as u64);
        assert_eq!(base as usize % 4096, 0, "page-aligned");
        assert_eq!(std::slice::from_raw_parts(base, bytes.len()), &bytes[..]);
        // Tensors point into the map at their file offsets, and keep it after the reader goes.
        let mut tensors = Vec::new();
        for sample in samples() {
            let mut e = null_mut();
            let n = sample.name.as_bytes();
            assert_eq!(hurray_file_reader_find(r, n.as_ptr(), n.len() as u64, &mut e), HURRAY_OK);
            let mut loc = HurrayFileBufferLocation::default();
            assert_eq!(hurray_file_entry_buffer(e, 0, &mut loc), HURRAY_OK);
            let mut t = null_mut();
            assert_eq!(hurray_file_reader_read_tensor(r, e, &mut t), HURRAY_OK, "{}", last_error());
            assert!(zero_copy(t), "{}", sample.name);
            let (p, got, _) = tensor_bytes(t, 0);
            assert_eq!(p as usize, base as usize + loc.offset as usize);
            assert_eq!(got, sample.payload);
            hurray_file_entry_destroy(&mut e);
            tensors.push((t, sample.payload));
        }
        assert_eq!(hurray_file_reader_verify(r), HURRAY_OK, "{}", last_error());
        if linux {
            assert_eq!(maps_of(&file), 1, "one map, shared by the reader, its tensors and the region");
        }
        assert_eq!(hurray_file_reader_destroy(&mut r), HURRAY_OK);
        hurray_buffer_destroy(&mut region);
        for (mut t, payload) in tensors {
            assert_eq!(tensor_bytes(t, 0).1, payload, "still mapped");
            hurray_tensor_destroy(&mut t);
        }
        if linux {
            assert_eq!(maps_of(&file), 0, "the last holder unmapped");
        }
        // A reader over a transport has no map to hand out.
        let (s, mut p) = open_path(&file, null());
        assert_eq!(s, HURRAY_OK);
        let mut none = null_mut();
        assert_eq!(hurray_file_reader_mapping(p, &mut none), HURRAY_ERR_INVALID_ARGUMENT);
        assert!(none.is_null());
        hurray_file_reader_destroy(&mut p);
    }
    // Bad files are refused as by open_path, and leave nothing mapped.
    let put = |name: &str, b: &[u8]| {
        let p = dir.join(name);
        std::fs::write(&p, b).unwrap();
        p
    };
    for (p, want) in [
        (dir.join("missing.hrry"), HURRAY_ERR_NOT_FOUND),
        (dir.clone(), HURRAY_ERR_INVALID_ARGUMENT),
        (put("empty.hrry", &[]), HURRAY_ERR_TRUNCATED),
        (put("cut.hrry", &bytes[..bytes.len() - 10]), HURRAY_ERR_INVALID_MAGIC),
    ] {
        let (s, _) = open_mapped(&p, null());
        assert_eq!(s, want, "{}: {}", p.display(), last_error());
        assert!(last_error().starts_with("hurray_file_reader_open_mapped: "), "{}", last_error());
        if linux && p.is_file() {
            assert_eq!(maps_of(&p), 0, "{}", p.display());
        }
    }
    std::fs::remove_dir_all(&dir).unwrap();
}

fn header_file_functions() -> std::collections::BTreeSet<String> {
    let h = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../../hurray.h")).unwrap();
    h.lines()
        .filter(|l| !l.starts_with("//"))
        .filter_map(|l| {
            let i = l.find("hurray_file_")?;
            let rest = &l[i..];
            let name = &rest[..rest.find('(')?];
            name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_').then(|| name.to_string())
        })
        .collect()
}

#[test]
fn null_pointers_destroy_rules_and_stale_handles() {
    let bytes = write_container(usize::MAX);
    let mut src = Source::new(bytes.clone());
    let t = source_transport(&mut src);
    let mut sink = Sink { bytes: Vec::new(), chunk: usize::MAX, released: 0 };
    let wt = HurrayTransport {
        ctx: &mut sink as *mut Sink as *mut c_void,
        write: Some(sink_write),
        ..HurrayTransport::default()
    };
    // SAFETY: NULL arguments are part of every function's contract; the stale handles are used only in debug builds,
    // where destroyed shells stay allocated; live pointers are locals or handles made above.
    unsafe {
        let mut r: *mut HurrayFileReader = null_mut();
        assert_eq!(hurray_file_reader_open(&t, null(), &mut r), HURRAY_OK);
        let mut e: *mut HurrayFileEntry = null_mut();
        assert_eq!(hurray_file_reader_find(r, b"embedding".as_ptr(), 9, &mut e), HURRAY_OK);
        let mut tensor = null_mut();
        assert_eq!(hurray_file_reader_read_tensor(r, e, &mut tensor), HURRAY_OK);
        let mut list = null_mut();
        hurray_tensor_buffers(tensor, &mut list);
        let mut buf = null_mut();
        hurray_buffer_list_get(list, 0, &mut buf);
        let mut w: *mut HurrayFileWriter = null_mut();
        assert_eq!(hurray_file_writer_new(&wt, null(), &mut w), HURRAY_OK);
        let d = descriptor(&named("n", 1, 64, DeviceTag::Cpu));
        let one = [1u8];
        let slice = HurrayIoSlice { ptr: one.as_ptr(), len: 1 };
        let mut u = 0u64;
        let mut flag = false;
        let mut cp = null();
        let mut bp = null();
        let mut dd = null_mut();
        let mut loc = HurrayFileBufferLocation::default();
        let mut scratch = [0u8; 16];
        let mut ropts = std::mem::zeroed::<HurrayFileReaderOptions>();
        let mut wopts = std::mem::zeroed::<HurrayFileWriterOptions>();
        let mut tmp_r = null_mut();
        let mut tmp_w = null_mut();
        let mut tmp_e = null_mut();
        let mut tmp_t = null_mut();
        let k = b"arch";
        let mut pieces = 0usize;
        let mut fread = HurrayFileRead { offset: 0, len: 0, dst: null_mut() };
        let mut tmp_fe: *mut HurrayFileEncoder = null_mut();
        let cases: Vec<(&str, HurrayStatus)> = vec![
            ("hurray_file_encoder_new", hurray_file_encoder_new(null(), null_mut())),
            ("hurray_file_encoder_add_tensor", hurray_file_encoder_add_tensor(null_mut(), d, &slice, 1, null_mut())),
            ("hurray_file_encoder_add_composite", hurray_file_encoder_add_composite(null_mut(), null(), null_mut())),
            (
                "hurray_file_encoder_set_metadata",
                hurray_file_encoder_set_metadata(null_mut(), k.as_ptr(), 4, null(), 0),
            ),
            ("hurray_file_encoder_finish", hurray_file_encoder_finish(null_mut(), null_mut(), null_mut())),
            ("hurray_file_encoder_output", hurray_file_encoder_output(null(), null_mut(), 0, &mut pieces)),
            ("hurray_file_encoder_consume", hurray_file_encoder_consume(null_mut(), 0, null_mut())),
            ("hurray_file_encoder_abort", hurray_file_encoder_abort(null_mut(), 0, null_mut())),
            ("hurray_file_reader_new_ranges", hurray_file_reader_new_ranges(0, null(), null_mut())),
            ("hurray_file_reader_open_ranges", hurray_file_reader_open_ranges(null_mut())),
            ("hurray_file_reader_pending_read", hurray_file_reader_pending_read(null_mut(), &mut fread)),
            ("hurray_file_reader_supply", hurray_file_reader_supply(null_mut(), 0)),
            ("hurray_file_writer_options_init", hurray_file_writer_options_init(null_mut())),
            ("hurray_file_writer_new", hurray_file_writer_new(null(), null(), &mut tmp_w)),
            ("hurray_file_writer_new", hurray_file_writer_new(&wt, null(), null_mut())),
            ("hurray_file_writer_add_tensor", hurray_file_writer_add_tensor(null_mut(), d, &slice, 1)),
            ("hurray_file_writer_add_tensor", hurray_file_writer_add_tensor(w, null(), &slice, 1)),
            ("hurray_file_writer_add_tensor", hurray_file_writer_add_tensor(w, d, null(), 1)),
            ("hurray_file_writer_set_metadata", hurray_file_writer_set_metadata(null_mut(), k.as_ptr(), 4, null(), 0)),
            ("hurray_file_writer_set_metadata", hurray_file_writer_set_metadata(w, null(), 4, null(), 0)),
            ("hurray_file_writer_set_metadata", hurray_file_writer_set_metadata(w, k.as_ptr(), 4, null(), 3)),
            ("hurray_file_writer_flush", hurray_file_writer_flush(null_mut())),
            ("hurray_file_writer_finish", hurray_file_writer_finish(null_mut(), &mut u)),
            ("hurray_file_writer_bytes_written", hurray_file_writer_bytes_written(null(), &mut u)),
            ("hurray_file_writer_bytes_written", hurray_file_writer_bytes_written(w, null_mut())),
            ("hurray_file_writer_tensor_count", hurray_file_writer_tensor_count(null(), &mut u)),
            ("hurray_file_writer_tensor_count", hurray_file_writer_tensor_count(w, null_mut())),
            ("hurray_file_reader_options_init", hurray_file_reader_options_init(null_mut())),
            ("hurray_file_reader_open", hurray_file_reader_open(null(), null(), &mut tmp_r)),
            ("hurray_file_reader_open", hurray_file_reader_open(&t, null(), null_mut())),
            ("hurray_file_reader_open_span", hurray_file_reader_open_span(null(), 100, null(), &mut tmp_r)),
            ("hurray_file_reader_open_path", hurray_file_reader_open_path(null(), 4, null(), &mut tmp_r)),
            ("hurray_file_reader_open_path", hurray_file_reader_open_path(k.as_ptr(), 4, null(), null_mut())),
            ("hurray_file_reader_open_mapped", hurray_file_reader_open_mapped(null(), 4, null(), &mut tmp_r)),
            ("hurray_file_reader_open_mapped", hurray_file_reader_open_mapped(k.as_ptr(), 4, null(), null_mut())),
            ("hurray_file_reader_mapping", hurray_file_reader_mapping(null(), &mut null_mut())),
            ("hurray_file_reader_mapping", hurray_file_reader_mapping(r, null_mut())),
            (
                "hurray_file_reader_open_span",
                hurray_file_reader_open_span(bytes.as_ptr() as *const c_void, bytes.len() as u64, null(), null_mut()),
            ),
            ("hurray_file_reader_size", hurray_file_reader_size(null(), &mut u)),
            ("hurray_file_reader_size", hurray_file_reader_size(r, null_mut())),
            ("hurray_file_reader_count", hurray_file_reader_count(null(), &mut u)),
            ("hurray_file_reader_count", hurray_file_reader_count(r, null_mut())),
            ("hurray_file_reader_read_at_calls", hurray_file_reader_read_at_calls(null(), &mut u)),
            ("hurray_file_reader_read_at_calls", hurray_file_reader_read_at_calls(r, null_mut())),
            ("hurray_file_reader_name", hurray_file_reader_name(null_mut(), 0, scratch.as_mut_ptr(), 16, &mut u)),
            ("hurray_file_reader_name", hurray_file_reader_name(r, 0, scratch.as_mut_ptr(), 16, null_mut())),
            ("hurray_file_reader_name", hurray_file_reader_name(r, 0, null_mut(), 16, &mut u)),
            ("hurray_file_reader_entry", hurray_file_reader_entry(null_mut(), 0, &mut tmp_e)),
            ("hurray_file_reader_entry", hurray_file_reader_entry(r, 0, null_mut())),
            ("hurray_file_reader_find", hurray_file_reader_find(null_mut(), k.as_ptr(), 4, &mut tmp_e)),
            ("hurray_file_reader_find", hurray_file_reader_find(r, null(), 4, &mut tmp_e)),
            ("hurray_file_reader_find", hurray_file_reader_find(r, k.as_ptr(), 4, null_mut())),
            (
                "hurray_file_reader_read_composite",
                hurray_file_reader_read_composite(null_mut(), k.as_ptr(), 4, &mut null_mut()),
            ),
            ("hurray_file_reader_read_composite", hurray_file_reader_read_composite(r, null(), 4, &mut null_mut())),
            ("hurray_file_reader_read_composite", hurray_file_reader_read_composite(r, k.as_ptr(), 4, null_mut())),
            ("hurray_file_writer_add_composite", hurray_file_writer_add_composite(null_mut(), null())),
            ("hurray_file_reader_read_tensor", hurray_file_reader_read_tensor(null_mut(), e, &mut tmp_t)),
            ("hurray_file_reader_read_tensor", hurray_file_reader_read_tensor(r, null(), &mut tmp_t)),
            ("hurray_file_reader_read_tensor", hurray_file_reader_read_tensor(r, e, null_mut())),
            (
                "hurray_file_reader_read_buffer_into",
                hurray_file_reader_read_buffer_into(null_mut(), e, 0, scratch.as_mut_ptr() as *mut c_void, 16, &mut u),
            ),
            (
                "hurray_file_reader_read_buffer_into",
                hurray_file_reader_read_buffer_into(r, null(), 0, scratch.as_mut_ptr() as *mut c_void, 16, &mut u),
            ),
            (
                "hurray_file_reader_read_buffer_into",
                hurray_file_reader_read_buffer_into(r, e, 0, null_mut(), 1 << 20, &mut u),
            ),
            ("hurray_file_reader_metadata_count", hurray_file_reader_metadata_count(null_mut(), &mut u)),
            ("hurray_file_reader_metadata_count", hurray_file_reader_metadata_count(r, null_mut())),
            (
                "hurray_file_reader_metadata_get",
                hurray_file_reader_metadata_get(null_mut(), 0, &mut bp, &mut u, &mut bp, &mut u),
            ),
            (
                "hurray_file_reader_metadata_get",
                hurray_file_reader_metadata_get(r, 0, null_mut(), &mut u, &mut bp, &mut u),
            ),
            (
                "hurray_file_reader_metadata_get",
                hurray_file_reader_metadata_get(r, 0, &mut bp, null_mut(), &mut bp, &mut u),
            ),
            (
                "hurray_file_reader_metadata_get",
                hurray_file_reader_metadata_get(r, 0, &mut bp, &mut u, null_mut(), &mut u),
            ),
            (
                "hurray_file_reader_metadata_get",
                hurray_file_reader_metadata_get(r, 0, &mut bp, &mut u, &mut bp, null_mut()),
            ),
            (
                "hurray_file_reader_metadata_find",
                hurray_file_reader_metadata_find(null_mut(), k.as_ptr(), 4, &mut bp, &mut u),
            ),
            ("hurray_file_reader_metadata_find", hurray_file_reader_metadata_find(r, null(), 4, &mut bp, &mut u)),
            (
                "hurray_file_reader_metadata_find",
                hurray_file_reader_metadata_find(r, k.as_ptr(), 4, null_mut(), &mut u),
            ),
            (
                "hurray_file_reader_metadata_find",
                hurray_file_reader_metadata_find(r, k.as_ptr(), 4, &mut bp, null_mut()),
            ),
            ("hurray_file_reader_verify", hurray_file_reader_verify(null_mut())),
            ("hurray_file_reader_verify_payloads", hurray_file_reader_verify_payloads(null_mut())),
            (
                "hurray_file_reader_check_composites",
                hurray_ffi::composite::hurray_file_reader_check_composites(null_mut()),
            ),
            ("hurray_file_reader_set_buffer_pool_bytes", hurray_file_reader_set_buffer_pool_bytes(null_mut(), 1 << 20)),
            ("hurray_file_entry_index", hurray_file_entry_index(null(), &mut u)),
            ("hurray_file_entry_index", hurray_file_entry_index(e, null_mut())),
            ("hurray_file_entry_buffer_count", hurray_file_entry_buffer_count(null(), &mut u)),
            ("hurray_file_entry_buffer_count", hurray_file_entry_buffer_count(e, null_mut())),
            ("hurray_file_entry_total_bytes", hurray_file_entry_total_bytes(null(), &mut u)),
            ("hurray_file_entry_total_bytes", hurray_file_entry_total_bytes(e, null_mut())),
            ("hurray_file_entry_name", hurray_file_entry_name(null(), &mut cp, &mut u)),
            ("hurray_file_entry_name", hurray_file_entry_name(e, null_mut(), &mut u)),
            ("hurray_file_entry_name", hurray_file_entry_name(e, &mut cp, null_mut())),
            ("hurray_file_entry_descriptor", hurray_file_entry_descriptor(null(), &mut dd)),
            ("hurray_file_entry_descriptor", hurray_file_entry_descriptor(e, null_mut())),
            ("hurray_file_entry_buffer", hurray_file_entry_buffer(null(), 0, &mut loc)),
            ("hurray_file_entry_buffer", hurray_file_entry_buffer(e, 0, null_mut())),
            ("hurray_file_buffer_is_zero_copy", hurray_file_buffer_is_zero_copy(null(), &mut flag)),
            ("hurray_file_buffer_is_zero_copy", hurray_file_buffer_is_zero_copy(buf, null_mut())),
        ];
        let mut covered = std::collections::BTreeSet::new();
        for (name, s) in &cases {
            assert_eq!(
                *s,
                HURRAY_ERR_NULL_POINTER,
                "{name}: {}",
                std::ffi::CStr::from_ptr(hurray_status_name(*s)).to_string_lossy()
            );
            covered.insert(name.to_string());
        }
        assert!(tmp_r.is_null() && tmp_w.is_null() && tmp_e.is_null() && tmp_t.is_null());
        assert!(last_error().contains("NULL"));
        let destroys = [
            "hurray_file_writer_destroy",
            "hurray_file_reader_destroy",
            "hurray_file_entry_destroy",
            "hurray_file_encoder_destroy",
        ];
        assert_eq!(hurray_file_encoder_destroy(null_mut()), HURRAY_OK);
        assert_eq!(hurray_file_encoder_destroy(&mut tmp_fe), HURRAY_OK);
        let missing: Vec<String> = header_file_functions()
            .into_iter()
            .filter(|n| !covered.contains(n) && !destroys.contains(&n.as_str()))
            .collect();
        assert!(missing.is_empty(), "hurray_file_* functions without a NULL case: {missing:?}");
        assert!(
            hurray_file_reader_options_init(&mut ropts) == HURRAY_OK
                && hurray_file_writer_options_init(&mut wopts) == HURRAY_OK
        );

        // destroy(NULL) and destroy(&NULL) are no-ops.
        let mut none_w: *mut HurrayFileWriter = null_mut();
        let mut none_r: *mut HurrayFileReader = null_mut();
        let mut none_e: *mut HurrayFileEntry = null_mut();
        assert_eq!(hurray_file_writer_destroy(null_mut()), HURRAY_OK);
        assert_eq!(hurray_file_writer_destroy(&mut none_w), HURRAY_OK);
        assert_eq!(hurray_file_reader_destroy(null_mut()), HURRAY_OK);
        assert_eq!(hurray_file_reader_destroy(&mut none_r), HURRAY_OK);
        assert_eq!(hurray_file_entry_destroy(null_mut()), HURRAY_OK);
        assert_eq!(hurray_file_entry_destroy(&mut none_e), HURRAY_OK);

        // Stale copies of destroyed handles are detected in debug builds.
        let (stale_w, stale_r, stale_e) = (w, r, e);
        hurray_tensor_destroy(&mut tensor);
        assert_eq!(hurray_file_entry_destroy(&mut e), HURRAY_OK);
        assert_eq!(hurray_file_reader_destroy(&mut r), HURRAY_OK);
        assert_eq!(hurray_file_writer_destroy(&mut w), HURRAY_OK);
        hurray_descriptor_destroy(d);
        if cfg!(debug_assertions) {
            assert_eq!(hurray_file_writer_tensor_count(stale_w, &mut u), HURRAY_ERR_USE_AFTER_DESTROY);
            assert_eq!(hurray_file_reader_count(stale_r, &mut u), HURRAY_ERR_USE_AFTER_DESTROY);
            assert_eq!(hurray_file_entry_index(stale_e, &mut u), HURRAY_ERR_USE_AFTER_DESTROY);
            let mut again = stale_e;
            assert_eq!(hurray_file_entry_destroy(&mut again), HURRAY_ERR_USE_AFTER_DESTROY);
        }
    }
}
