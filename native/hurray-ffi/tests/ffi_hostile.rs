//! Hostile input through the C ABI: every case returns a clear negative status, never a panic
//! (a caught panic would be HURRAY_ERR_INTERNAL_PANIC), and a failed reader stays failed.

#[path = "../../hurray-core/tests/common/mod.rs"]
mod common;
mod ffi_common;

use std::ffi::c_void;
use std::ptr::{null, null_mut};

use common::*;
use ffi_common::*;
use hurray_core::crc32c::crc32c;
use hurray_core::ElementType;
use hurray_ffi::buffer::*;
use hurray_ffi::descriptor::hurray_descriptor_destroy;
use hurray_ffi::reader::*;
use hurray_ffi::writer::*;
use hurray_ffi::*;

fn tiny_stream_declaring(len: u64) -> Vec<u8> {
    let mut s = b"HRRYSTRM".to_vec();
    s.extend_from_slice(&[1, 0, 0, 0]);
    let c = crc32c(&s);
    s.extend_from_slice(&c.to_le_bytes());
    let mut f = b"HRTN".to_vec();
    f.extend_from_slice(&[0; 4]);
    f.extend_from_slice(&len.to_le_bytes());
    f.extend_from_slice(&[0; 4]);
    let c = crc32c(&f);
    f.extend_from_slice(&c.to_le_bytes());
    s.extend(f);
    s
}

/// Reads until something other than HURRAY_OK; returns it (and checks it is sticky).
fn ffi_first_error(bytes: Vec<u8>) -> HurrayStatus {
    let (_, end, _, _) = ffi_read(Mem::reading(bytes, 0));
    end
}

#[test]
fn a_2_pow_60_descriptor_length_on_a_tiny_stream_is_limit_exceeded() {
    let bytes = tiny_stream_declaring(1 << 60);
    assert_eq!(bytes.len(), 40);
    let mut m = Mem::reading(bytes, 0);
    let t = transport(&mut m);
    // SAFETY: `m` outlives `t` and the reader; handles are made and destroyed in this block; pointers passed are live
    // locals or slices valid for the lengths given.
    unsafe {
        let mut r = null_mut();
        expect(hurray_reader_new(&t, null(), &mut r), HURRAY_OK);
        let mut tensor = null_mut();
        expect(hurray_reader_next_tensor(r, &mut tensor), HURRAY_ERR_LIMIT_EXCEEDED);
        assert!(last_error().contains("exceeds the limit"), "{}", last_error());
        let calls = m.calls;
        // Sticky, and no further transport calls.
        expect(hurray_reader_next_tensor(r, &mut tensor), HURRAY_ERR_LIMIT_EXCEEDED);
        assert_eq!(m.calls, calls);
        assert!(tensor.is_null());
        expect(hurray_reader_destroy(&mut r), HURRAY_OK);
    }
    assert_eq!(m.released, 1);
}

fn raw_descriptor(dims: &[u64], handle: [u8; 16]) -> Vec<u8> {
    let mut d = b"HRDS\x01\x00\x00\x00".to_vec();
    d.extend_from_slice(&[ElementType::Uint8.code(), 0, dims.len() as u8, 1]);
    d.extend_from_slice(&[0; 12]);
    for x in dims {
        d.extend_from_slice(&x.to_le_bytes());
    }
    d.extend_from_slice(&handle);
    d
}

fn raw_handle(size: u64, align: u32) -> [u8; 16] {
    let mut h = [0u8; 16];
    h[0..8].copy_from_slice(&size.to_le_bytes());
    h[8..12].copy_from_slice(&align.to_le_bytes());
    h
}

fn decode_status(bytes: &[u8]) -> HurrayStatus {
    let mut d = null_mut();
    // SAFETY: `bytes` is valid for its length; `d` is a live local.
    let s = unsafe { hurray_descriptor_decode(bytes.as_ptr(), bytes.len(), &mut d) };
    if s == HURRAY_OK {
        // SAFETY: `d` is the descriptor just decoded, destroyed once.
        unsafe { hurray_descriptor_destroy(d) };
    } else {
        assert!(d.is_null());
    }
    s
}

#[test]
fn hand_crafted_descriptor_bytes_get_clear_statuses() {
    assert_eq!(decode_status(&raw_descriptor(&[4], raw_handle(4, 64))), HURRAY_OK);
    for align in [0u32, 3, 1 << 30, 1 << 31] {
        assert_eq!(decode_status(&raw_descriptor(&[4], raw_handle(4, align))), HURRAY_ERR_INVALID_ALIGNMENT, "{align}");
    }
    assert_eq!(decode_status(&raw_descriptor(&[1 << 32, 1 << 32], raw_handle(0, 64))), HURRAY_ERR_INVALID_SHAPE);
    assert_eq!(decode_status(&raw_descriptor(&[1; 33], raw_handle(1, 64))), HURRAY_ERR_INVALID_SHAPE);
    assert_eq!(decode_status(&raw_descriptor(&[5], raw_handle(4, 64))), HURRAY_ERR_BUFFER_TOO_SMALL);
    assert_eq!(decode_status(b"HRDS"), HURRAY_ERR_CORRUPT);
    assert_eq!(decode_status(b"NOPE...."), HURRAY_ERR_INVALID_MAGIC);
    assert_eq!(decode_status(&[]), HURRAY_ERR_CORRUPT);
    let mut d = null_mut();
    // SAFETY: a NULL pointer with length 0 is allowed; `d` is a live local.
    expect(unsafe { hurray_descriptor_decode(null(), 0, &mut d) }, HURRAY_ERR_CORRUPT);
    // Through a stream.
    let desc = raw_descriptor(&[4], raw_handle(4, 3));
    let mut s = tiny_stream_declaring(desc.len() as u64);
    // Fix the frame: the descriptor CRC and the frame CRC.
    s[16 + 16..16 + 20].copy_from_slice(&crc32c(&desc).to_le_bytes());
    let c = crc32c(&s[16..16 + 20]);
    s[16 + 20..16 + 24].copy_from_slice(&c.to_le_bytes());
    s.extend_from_slice(&desc);
    s.extend_from_slice(&[1, 2, 3, 4]);
    assert_eq!(ffi_first_error(s), HURRAY_ERR_INVALID_ALIGNMENT);
}

#[test]
fn bad_alignments_through_buffer_from_ptr() {
    #[repr(C, align(4096))]
    struct Page([u8; 4096]);
    let mut page = Box::new(Page([0; 4096]));
    let data = page.0.as_mut_ptr() as *mut c_void;
    for align in [0u32, 3, 32, 1 << 30, 1 << 31, u32::MAX] {
        let mut b = null_mut();
        expect(
            // SAFETY: `page` outlives the call, `data` is its start, valid for 16 bytes; the alignment is refused
            // before any use.
            unsafe { hurray_buffer_from_ptr(data, 16, align, HURRAY_DEVICE_CPU, None, null_mut(), &mut b) },
            HURRAY_ERR_INVALID_ALIGNMENT,
        );
        assert!(b.is_null());
    }
    let mut b = null_mut();
    // SAFETY: `page` outlives the buffer, which is destroyed below, and holds 16 bytes at `data` aligned to 4096;
    // nothing is dereferenced for a CUDA tag.
    expect(unsafe { hurray_buffer_from_ptr(data, 16, 4096, HURRAY_DEVICE_CUDA, None, null_mut(), &mut b) }, HURRAY_OK);
    // SAFETY: `b` holds the live buffer made above, destroyed once.
    expect(unsafe { hurray_buffer_destroy(&mut b) }, HURRAY_OK);
    page.0[0] = 1;
}

#[test]
fn payload_count_and_size_mismatches_are_refused_before_any_byte() {
    let it = dense(ElementType::Float32, &[2, 3]);
    let mut m = Mem::writing(0);
    let t = transport(&mut m);
    // SAFETY: `m` outlives `t` and the writer; handles are made and destroyed in this block; pointers passed are live
    // locals or slices valid for the lengths given.
    unsafe {
        let mut w = null_mut();
        expect(hurray_writer_new(&t, null(), &mut w), HURRAY_OK);
        let d = decode(&it.desc.encode().unwrap());
        let p = &it.payloads[0];
        let ok = HurrayIoSlice { ptr: p.as_ptr(), len: p.len() };
        let short = HurrayIoSlice { ptr: p.as_ptr(), len: p.len() - 1 };
        let long = [0u8; 25];
        let long = HurrayIoSlice { ptr: long.as_ptr(), len: 25 };
        expect(hurray_writer_write_tensor(w, d, null(), 0), HURRAY_ERR_INVALID_ARGUMENT);
        expect(hurray_writer_write_tensor(w, d, [ok, ok].as_ptr(), 2), HURRAY_ERR_INVALID_ARGUMENT);
        expect(hurray_writer_write_tensor(w, d, &short, 1), HURRAY_ERR_BUFFER_TOO_SMALL);
        expect(hurray_writer_write_tensor(w, d, &long, 1), HURRAY_ERR_INVALID_ARGUMENT);
        assert!(m.bytes.is_empty(), "nothing reached the wire");
        expect(hurray_writer_write_tensor(w, d, &ok, 1), HURRAY_OK);
        expect(hurray_writer_finish(w), HURRAY_OK);
        expect(hurray_writer_write_tensor(w, d, &ok, 1), HURRAY_ERR_INVALID_STATE);
        expect(hurray_descriptor_destroy(d), HURRAY_OK);
        expect(hurray_writer_destroy(&mut w), HURRAY_OK);
    }
    let (back, end, _, _) = ffi_read(Mem::reading(m.bytes.clone(), 0));
    expect(end, HURRAY_END_OF_STREAM);
    assert_eq!(back.len(), 1);
}

#[test]
fn every_prefix_of_the_golden_stream_is_truncated_through_the_c_abi() {
    let bytes = std::fs::read(golden_dir().join("stream_v1_checksums.hrry")).unwrap();
    for cut in 0..bytes.len() {
        assert_eq!(ffi_first_error(bytes[..cut].to_vec()), HURRAY_ERR_TRUNCATED, "cut {cut}");
    }
    assert_eq!(ffi_first_error(bytes), HURRAY_END_OF_STREAM);
}

#[test]
fn a_bit_flipped_in_any_byte_of_the_golden_stream_is_detected_through_the_c_abi() {
    let bytes = std::fs::read(golden_dir().join("stream_v1_checksums.hrry")).unwrap();
    for i in 0..bytes.len() {
        let mut b = bytes.clone();
        b[i] ^= 1 << (i % 8);
        let s = ffi_first_error(b);
        assert!(
            [HURRAY_ERR_CORRUPT, HURRAY_ERR_INVALID_MAGIC, HURRAY_ERR_VERSION_MISMATCH, HURRAY_ERR_UNSUPPORTED]
                .contains(&s),
            "byte {i}: {}",
            status_name(s)
        );
    }
}

#[test]
fn not_a_stream_is_invalid_magic_and_errors_are_negative() {
    let s = ffi_first_error(b"GET / HTTP/1.1\r\nHost: x\r\n\r\n".to_vec());
    expect(s, HURRAY_ERR_INVALID_MAGIC);
    assert!(s < 0);
    // Zero-size dims and zero-byte payloads travel; their buffers are non-NULL and aligned.
    let items = vec![dense(ElementType::Float32, &[0]), dense(ElementType::Int8, &[4, 0, 3])];
    let (back, end, _, _) = ffi_read(Mem::reading(encode_stream(&items, true), 5));
    expect(end, HURRAY_END_OF_STREAM);
    assert_eq!(back.len(), 2);
    assert!(back.iter().all(|b| b.buffers == vec![Vec::<u8>::new()]));
}
