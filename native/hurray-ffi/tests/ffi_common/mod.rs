//! C-ABI test support: an in-memory transport with `extern "C"` callbacks that can be told to
//! fail, close or count releases, and helpers that write and read whole streams through
//! `hurray_*` calls only.
#![allow(dead_code)]

use std::ffi::{c_void, CStr};
use std::ptr::null_mut;

use hurray_ffi::buffer::*;
use hurray_ffi::buffer_list::*;
use hurray_ffi::descriptor::*;
use hurray_ffi::panic::hurray_last_error_message;
use hurray_ffi::reader::*;
use hurray_ffi::tensor::*;
use hurray_ffi::writer::*;
use hurray_ffi::*;

/// Bytes plus misbehaviour switches, shared by the read and write callbacks.
#[derive(Default)]
pub struct Mem {
    pub bytes: Vec<u8>,
    pub pos: usize,
    /// Most bytes moved per call (0 means unlimited).
    pub chunk: usize,
    pub calls: usize,
    /// This call index fails with HURRAY_ERR_TRANSPORT, moving nothing.
    pub fail_at: Option<usize>,
    /// From this call index on, read reports end of input / write reports a closed sink.
    pub zero_at: Option<usize>,
    pub released: usize,
}

impl Mem {
    pub fn reading(bytes: Vec<u8>, chunk: usize) -> Box<Mem> {
        Box::new(Mem { bytes, chunk, ..Default::default() })
    }
    pub fn writing(chunk: usize) -> Box<Mem> {
        Box::new(Mem { chunk, ..Default::default() })
    }
    fn limit(&self, len: usize) -> usize {
        if self.chunk == 0 {
            len
        } else {
            len.min(self.chunk)
        }
    }
}

pub unsafe extern "C" fn mem_read(ctx: *mut c_void, dst: *mut u8, len: usize, out: *mut usize) -> HurrayStatus {
    // SAFETY: `ctx` is the `Mem` that `transport` registered, which outlives the handle; Hurray calls one callback at a
    // time.
    let m = unsafe { &mut *(ctx as *mut Mem) };
    let call = m.calls;
    m.calls += 1;
    if m.fail_at == Some(call) {
        // SAFETY: Hurray passes `out` valid for one write (the transport callback contract).
        unsafe { *out = 0 };
        return HURRAY_ERR_TRANSPORT;
    }
    if m.zero_at.is_some_and(|z| call >= z) {
        // SAFETY: Hurray passes `out` valid for one write (the transport callback contract).
        unsafe { *out = 0 };
        return HURRAY_OK;
    }
    let n = m.limit(len).min(m.bytes.len() - m.pos);
    // SAFETY: `dst` is valid for `len` >= `n` bytes (callback contract) and `pos + n` <= `bytes.len()` by the `min`
    // above.
    unsafe { std::ptr::copy_nonoverlapping(m.bytes.as_ptr().add(m.pos), dst, n) };
    m.pos += n;
    // SAFETY: Hurray passes `out` valid for one write (the transport callback contract).
    unsafe { *out = n };
    HURRAY_OK
}

pub unsafe extern "C" fn mem_write(ctx: *mut c_void, src: *const u8, len: usize, out: *mut usize) -> HurrayStatus {
    // SAFETY: `ctx` is the `Mem` that `transport` registered, which outlives the handle; Hurray calls one callback at a
    // time.
    let m = unsafe { &mut *(ctx as *mut Mem) };
    let call = m.calls;
    m.calls += 1;
    if m.fail_at == Some(call) {
        // SAFETY: Hurray passes `out` valid for one write (the transport callback contract).
        unsafe { *out = 0 };
        return HURRAY_ERR_TRANSPORT;
    }
    if m.zero_at.is_some_and(|z| call >= z) {
        // SAFETY: Hurray passes `out` valid for one write (the transport callback contract).
        unsafe { *out = 0 };
        return HURRAY_OK;
    }
    let n = m.limit(len);
    // SAFETY: `src` is valid for `len` >= `n` bytes (the transport callback contract).
    m.bytes.extend_from_slice(unsafe { std::slice::from_raw_parts(src, n) });
    // SAFETY: Hurray passes `out` valid for one write (the transport callback contract).
    unsafe { *out = n };
    HURRAY_OK
}

pub unsafe extern "C" fn mem_release(ctx: *mut c_void) {
    // SAFETY: `ctx` is the `Mem` that `transport` registered, which outlives the handle; Hurray calls one callback at a
    // time.
    unsafe { (*(ctx as *mut Mem)).released += 1 };
}

/// A vtable over `m` (which must outlive the handle); `release` counts into `m.released`.
pub fn transport(m: &mut Mem) -> HurrayTransport {
    HurrayTransport {
        ctx: m as *mut Mem as *mut c_void,
        read: Some(mem_read),
        write: Some(mem_write),
        release: Some(mem_release),
        ..HurrayTransport::default()
    }
}

/// This thread's last error message.
pub fn last_error() -> String {
    let mut len = 0usize;
    // SAFETY: a NULL buffer with capacity 0 is allowed; `len` is a live local.
    unsafe { hurray_last_error_message(null_mut(), 0, &mut len) };
    let mut buf = vec![0 as std::ffi::c_char; len + 1];
    // SAFETY: `buf` is valid for `buf.len()` bytes; `len` is a live local.
    assert_eq!(unsafe { hurray_last_error_message(buf.as_mut_ptr(), buf.len(), &mut len) }, HURRAY_OK);
    // SAFETY: on HURRAY_OK the message in `buf` is NUL-terminated (capacity `len + 1`).
    unsafe { CStr::from_ptr(buf.as_ptr()) }.to_string_lossy().into_owned()
}

pub fn status_name(s: HurrayStatus) -> String {
    // SAFETY: hurray_status_name returns a static NUL-terminated string for any status.
    unsafe { CStr::from_ptr(hurray_ffi::status::hurray_status_name(s)) }.to_string_lossy().into_owned()
}

/// Asserts a status, showing names and the last error on failure.
#[track_caller]
pub fn expect(s: HurrayStatus, want: HurrayStatus) {
    assert_eq!(s, want, "got {} ({}), want {}", status_name(s), last_error(), status_name(want));
}

/// An owned descriptor handle decoded from `encoded`.
pub fn decode(encoded: &[u8]) -> *mut HurrayDescriptor {
    let mut d = null_mut();
    // SAFETY: `encoded` is valid for its length; `d` is a live local for the out-pointer.
    expect(unsafe { hurray_descriptor_decode(encoded.as_ptr(), encoded.len(), &mut d) }, HURRAY_OK);
    d
}

/// A payload as the C ABI sees it.
pub fn slices(payloads: &[Vec<u8>]) -> Vec<HurrayIoSlice> {
    payloads
        .iter()
        .map(|p| HurrayIoSlice { ptr: if p.is_empty() { std::ptr::null() } else { p.as_ptr() }, len: p.len() })
        .collect()
}

/// One tensor read back through the C ABI: its encoded descriptor and its buffers' bytes.
#[derive(Debug, PartialEq)]
pub struct Back {
    pub encoded: Vec<u8>,
    pub buffers: Vec<Vec<u8>>,
}

/// Copies a tensor's descriptor encoding and buffers out through the accessors, checking each
/// buffer's pointer is aligned as its handle declares and its fields match the descriptor.
///
/// # Safety
/// `t` is a live tensor handle from this library.
pub unsafe fn copy_out(t: *mut HurrayTensor) -> Back {
    // SAFETY: `t` is a live tensor handle (this function's contract); every out-pointer is a live local, and the data
    // pointers read back are valid for the sizes their handles report while `t` lives.
    unsafe {
        let mut d = null_mut();
        expect(hurray_tensor_descriptor(t, &mut d), HURRAY_OK);
        let (mut p, mut n) = (std::ptr::null(), 0usize);
        expect(hurray_descriptor_encoded(d, &mut p, &mut n), HURRAY_OK);
        let encoded = std::slice::from_raw_parts(p, n).to_vec();
        let mut list = null_mut();
        expect(hurray_tensor_buffers(t, &mut list), HURRAY_OK);
        let mut len = 0usize;
        expect(hurray_buffer_list_len(list, &mut len), HURRAY_OK);
        let mut count = 0usize;
        expect(hurray_descriptor_buffer_count(d, &mut count), HURRAY_OK);
        assert_eq!(len, count, "one buffer per buffer-table entry");
        // All data pointers in one call: the same as buffer by buffer (checked below).
        let mut ptrs = vec![null_mut::<c_void>(); len];
        let mut n = usize::MAX;
        expect(hurray_buffer_list_data_ptrs(list, ptrs.as_mut_ptr(), len, &mut n), HURRAY_OK);
        assert_eq!(n, len);
        if len > 0 {
            let mut short = usize::MAX;
            expect(hurray_buffer_list_data_ptrs(list, null_mut(), 0, &mut short), HURRAY_ERR_BUFFER_TOO_SMALL);
            assert_eq!(short, len, "the length is stored even when the capacity is too small");
        }
        let mut buffers = Vec::new();
        for (i, &want) in ptrs.iter().enumerate() {
            let mut b = null_mut();
            expect(hurray_buffer_list_get(list, i, &mut b), HURRAY_OK);
            let mut data: *mut c_void = null_mut();
            let (mut size, mut align, mut dev, mut sync) = (0u64, 0u32, 0u8, 0u8);
            expect(hurray_buffer_data_ptr(b, &mut data), HURRAY_OK);
            assert_eq!(want, data, "hurray_buffer_list_data_ptrs entry {i}");
            expect(hurray_buffer_byte_size(b, &mut size), HURRAY_OK);
            expect(hurray_buffer_alignment(b, &mut align), HURRAY_OK);
            expect(hurray_buffer_device_tag(b, &mut dev), HURRAY_OK);
            expect(hurray_buffer_sync_mode(b, &mut sync), HURRAY_OK);
            let mut spec = HurrayBufferSpec::default();
            expect(hurray_descriptor_buffer_spec(d, i, &mut spec), HURRAY_OK);
            assert_eq!((spec.byte_size, spec.alignment), (size, align));
            // A reader's buffer is host memory it filled: CPU and PRODUCER_SYNCED whatever the
            // wire declared (that stays in the descriptor's spec), with no sync payload.
            assert_eq!(dev, HURRAY_DEVICE_CPU, "buffer {i} declared device {}", spec.device_tag);
            assert_eq!(sync, HURRAY_SYNC_PRODUCER_SYNCED, "buffer {i} declared sync mode {}", spec.sync_mode);
            let mut payload =
                HurraySyncPayload { sync_handle: std::ptr::dangling_mut::<c_void>(), ..std::mem::zeroed() };
            expect(hurray_buffer_sync_payload(b, &mut payload), HURRAY_OK);
            assert!(
                payload.sync_handle.is_null()
                    && payload.consumer_stream.is_null()
                    && payload.event_release_fn.is_none()
            );
            assert!(!data.is_null());
            assert_eq!(data as usize % align as usize, 0, "buffer {i} not aligned to {align}");
            assert!(align >= 64);
            buffers.push(std::slice::from_raw_parts(data as *const u8, size as usize).to_vec());
        }
        Back { encoded, buffers }
    }
}

/// Writes `items` through `hurray_writer_*` into a fresh `Mem` with `chunk`-byte writes.
pub fn ffi_write(items: &[(Vec<u8>, Vec<Vec<u8>>)], chunk: usize, checksums: bool) -> Vec<u8> {
    let mut m = Mem::writing(chunk);
    let t = transport(&mut m);
    let mut opts = HurrayWriterOptions { struct_size: 0, flags: 0 };
    // SAFETY: `t` and `opts` are live locals, `m` outlives the writer, and each payload slice outlives its write call.
    unsafe {
        expect(hurray_writer_options_init(&mut opts), HURRAY_OK);
        if checksums {
            opts.flags |= HURRAY_WRITER_PAYLOAD_CHECKSUMS;
        }
        let mut w = null_mut();
        expect(hurray_writer_new(&t, &opts, &mut w), HURRAY_OK);
        for (enc, payloads) in items {
            let d = decode(enc);
            let s = slices(payloads);
            expect(hurray_writer_write_tensor(w, d, s.as_ptr(), s.len()), HURRAY_OK);
            expect(hurray_descriptor_destroy(d), HURRAY_OK);
        }
        expect(hurray_writer_finish(w), HURRAY_OK);
        expect(hurray_writer_destroy(&mut w), HURRAY_OK);
        assert!(w.is_null());
    }
    assert_eq!(m.released, 1);
    std::mem::take(&mut m.bytes)
}

/// Reads a whole stream through `hurray_reader_*`, retrying after `HURRAY_ERR_TRANSPORT`.
/// Returns the tensors, the final status (END_OF_STREAM or an error) and the transport
/// failures seen.
pub fn ffi_read(mut m: Box<Mem>) -> (Vec<Back>, HurrayStatus, usize, Box<Mem>) {
    let t = transport(&mut m);
    let mut out = Vec::new();
    let mut failures = 0;
    let end;
    // SAFETY: `t` is a live local whose `m` outlives the reader; every out-pointer is a live local.
    unsafe {
        let mut r = null_mut();
        expect(hurray_reader_new(&t, std::ptr::null(), &mut r), HURRAY_OK);
        loop {
            let mut tensor = null_mut();
            let s = hurray_reader_next_tensor(r, &mut tensor);
            if s == HURRAY_OK {
                out.push(copy_out(tensor));
                expect(hurray_tensor_destroy(&mut tensor), HURRAY_OK);
                assert!(tensor.is_null());
            } else {
                assert!(tensor.is_null(), "no tensor on {}", status_name(s));
                if s == HURRAY_ERR_TRANSPORT {
                    failures += 1;
                    assert!(failures < 3);
                    continue;
                }
                end = s;
                break;
            }
        }
        expect(hurray_reader_destroy(&mut r), HURRAY_OK);
    }
    assert_eq!(m.released, 1, "release exactly once, at destroy");
    (out, end, failures, m)
}

/// A spec of a float32 tensor named `w` with `dims` (row-major, default buffer table, no
/// metadata); `dims` must outlive it.
#[allow(dead_code)]
pub fn float32_spec_named_w(dims: &[u64]) -> hurray_ffi::descriptor_spec::HurrayDescriptorSpec {
    hurray_ffi::descriptor_spec::HurrayDescriptorSpec {
        element_type: hurray_core::ElementType::Float32.code(),
        layout: 0,
        reserved: 0,
        reserved2: 0,
        rank: dims.len(),
        dims: dims.as_ptr(),
        strides: std::ptr::null(),
        stride_count: 0,
        byte_offset: 0,
        buffer_count: 0,
        buffers: std::ptr::null(),
        name: b"w".as_ptr(),
        name_len: 1,
        metadata_count: 0,
        metadata: std::ptr::null(),
        quantization: HurrayQuantization::default(),
    }
}
