//! What a reader's buffers say about synchronisation (docs/spec/c-abi.md §Buffer handoff and
//! sync modes): the bytes are in host memory the reader filled (or a region the caller
//! mapped) and no event or stream travels with them, so every buffer a stream or file reader
//! hands out is `SYNC_PRODUCER_SYNCED` with an empty payload, while the descriptor keeps the
//! mode the wire declared. The golden vectors declare all three modes.

#[path = "../../hurray-core/tests/common/mod.rs"]
mod common;
mod ffi_common;

use std::ffi::c_void;
use std::ptr::{null, null_mut};

use common::*;
use ffi_common::*;
use hurray_ffi::buffer::*;
use hurray_ffi::file::*;
use hurray_ffi::reader::*;
use hurray_ffi::tensor::*;
use hurray_ffi::*;

/// Checks every buffer of `t`; returns the declared modes seen.
///
/// # Safety
/// `t` is a live tensor handle.
unsafe fn check(t: *mut HurrayTensor) -> Vec<u8> {
    // SAFETY: `t` is a live tensor handle (this function's # Safety), as copy_out requires.
    let back = unsafe { copy_out(t) }; // asserts PRODUCER_SYNCED and an empty payload per buffer
    let desc = hurray_core::TensorDescriptor::decode(&back.encoded).unwrap();
    desc.buffers().iter().map(|h| h.sync_mode().code()).collect()
}

#[test]
fn stream_reader_buffers_are_producer_synced_whatever_the_wire_declared() {
    let bytes = std::fs::read(golden_dir().join("stream_v1_checksums.hrry")).unwrap();
    let mut m = Mem::reading(bytes, 0);
    let t = transport(&mut m);
    let mut declared = Vec::new();
    // SAFETY: `m` outlives `t` and the reader; handles are made and destroyed in this block; pointers passed are live
    // locals or slices valid for the lengths given.
    unsafe {
        let mut r = null_mut();
        expect(hurray_reader_new(&t, null(), &mut r), HURRAY_OK);
        loop {
            let mut tensor = null_mut();
            let s = hurray_reader_next_tensor(r, &mut tensor);
            if s == HURRAY_END_OF_STREAM {
                break;
            }
            expect(s, HURRAY_OK);
            declared.extend(check(tensor));
            expect(hurray_tensor_destroy(&mut tensor), HURRAY_OK);
        }
        expect(hurray_reader_destroy(&mut r), HURRAY_OK);
    }
    for mode in [HURRAY_SYNC_EVENT, HURRAY_SYNC_CONSUMER_STREAM] {
        assert!(declared.contains(&mode), "the golden stream declares mode {mode}");
    }
}

unsafe extern "C" fn vec_read_at(
    ctx: *mut c_void,
    offset: u64,
    dst: *mut u8,
    len: usize,
    out: *mut usize,
) -> HurrayStatus {
    // SAFETY: `ctx` is the `Vec<u8>` registered by the test, which outlives the reader; it is only read.
    let v = unsafe { &*(ctx as *const Vec<u8>) };
    let at = (offset as usize).min(v.len());
    let n = len.min(v.len() - at);
    // SAFETY: `dst` is valid for `len` >= `n` bytes (callback contract); `at + n` <= `v.len()` by the clamps above.
    unsafe { std::ptr::copy_nonoverlapping(v.as_ptr().add(at), dst, n) };
    // SAFETY: Hurray passes `out` valid for one write (the transport callback contract).
    unsafe { *out = n };
    HURRAY_OK
}

unsafe extern "C" fn vec_size(ctx: *mut c_void, out: *mut u64) -> HurrayStatus {
    // SAFETY: `ctx` is the registered `Vec<u8>`, alive for the reader's lifetime; `out` is valid for one write
    // (callback contract).
    unsafe { *out = (*(ctx as *const Vec<u8>)).len() as u64 };
    HURRAY_OK
}

#[test]
fn file_reader_buffers_are_producer_synced_through_read_at_and_span() {
    let mut bytes = std::fs::read(golden_dir().join("file_v1.hrryfile")).unwrap();
    for span in [false, true] {
        let mut declared = Vec::new();
        // SAFETY: `bytes` outlives the span reader and every tensor read from it, and the transport's `Vec` outlives
        // the other reader; handles are made and destroyed in this block; pointers passed are live locals or slices
        // valid for the lengths given.
        unsafe {
            let mut r = null_mut();
            if span {
                expect(
                    hurray_file_reader_open_span(bytes.as_ptr() as *const c_void, bytes.len() as u64, null(), &mut r),
                    HURRAY_OK,
                );
            } else {
                let t = HurrayTransport {
                    ctx: &mut bytes as *mut Vec<u8> as *mut c_void,
                    read_at: Some(vec_read_at),
                    size: Some(vec_size),
                    ..HurrayTransport::default()
                };
                expect(hurray_file_reader_open(&t, null(), &mut r), HURRAY_OK);
            }
            let mut count = 0u64;
            expect(hurray_file_reader_count(r, &mut count), HURRAY_OK);
            for i in 0..count {
                let mut e = null_mut();
                expect(hurray_file_reader_entry(r, i, &mut e), HURRAY_OK);
                let mut t = null_mut();
                expect(hurray_file_reader_read_tensor(r, e, &mut t), HURRAY_OK);
                declared.extend(check(t));
                expect(hurray_tensor_destroy(&mut t), HURRAY_OK);
                expect(hurray_file_entry_destroy(&mut e), HURRAY_OK);
            }
            expect(hurray_file_reader_destroy(&mut r), HURRAY_OK);
        }
        assert!(
            declared.iter().any(|&m| m != HURRAY_SYNC_PRODUCER_SYNCED),
            "span {span}: the golden file declares other modes"
        );
    }
}

#[test]
fn a_handoff_still_cross_checks_the_declared_mode() {
    // The rule above is the reader's; a producer's handoff keeps the cross-check of
    // docs/spec/c-abi.md §Buffer handoff and sync modes.
    let h = handle(64, 64, hurray_core::DeviceTag::Cpu, hurray_core::SyncMode::Event).encode();
    let mut data = [0u8; 128];
    let mut out = null_mut();
    // SAFETY: `h` holds 16 bytes, `data` 128 bytes that outlive the call; `out` is a live local; the mode mismatch is
    // refused first.
    let s = unsafe {
        hurray_buffer_handoff(h.as_ptr(), data.as_mut_ptr() as *mut c_void, null(), None, null_mut(), &mut out)
    };
    expect(s, HURRAY_ERR_SYNC_MODE_MISMATCH);
    assert!(out.is_null());
}
