//! Caller-supplied counts and lengths whose byte size cannot exist are refused with
//! `HURRAY_ERR_INVALID_ARGUMENT` before a slice is built from them. Building the slice would be
//! undefined behaviour, and in a debug build (the one `cargo test` makes) a non-unwinding abort
//! of the whole process, so these tests fail by crashing without the checks.

#[path = "../../hurray-core/tests/common/mod.rs"]
mod common;
mod ffi_common;

use std::ptr::{null_mut, NonNull};

use common::*;
use ffi_common::*;
use hurray_core::ElementType;
use hurray_ffi::descriptor::*;
use hurray_ffi::writer::*;
use hurray_ffi::*;

#[test]
fn write_tensor_refuses_a_payload_count_near_size_max_over_8() {
    let item = dense(ElementType::Float32, &[4]);
    let d = decode(&item.desc.encode().unwrap());
    let mut m = Mem::writing(0);
    let t = transport(&mut m);
    let mut w = null_mut();
    // SAFETY: `m` outlives `t` and the writer; `w` is a live local.
    expect(unsafe { hurray_writer_new(&t, std::ptr::null(), &mut w) }, HURRAY_OK);
    let dangling = NonNull::<HurrayIoSlice>::dangling().as_ptr();
    for count in [usize::MAX / 8, usize::MAX / 16 + 1, usize::MAX, 65] {
        // SAFETY: the call refuses the count/length before reading through the dangling pointer (the bound under test);
        // `w` and `d` are live.
        let s = unsafe { hurray_writer_write_tensor(w, d, dangling, count) };
        expect(s, HURRAY_ERR_INVALID_ARGUMENT);
        assert!(last_error().contains("at most 64 buffers"), "{}", last_error());
    }
    // One payload whose length cannot exist.
    let p = [HurrayIoSlice { ptr: NonNull::<u8>::dangling().as_ptr(), len: usize::MAX - 3 }];
    // SAFETY: the call refuses the count/length before reading through the dangling pointer (the bound under test); `w`
    // and `d` are live.
    expect(unsafe { hurray_writer_write_tensor(w, d, p.as_ptr(), 1) }, HURRAY_ERR_INVALID_ARGUMENT);
    assert!(last_error().contains("payloads[0].ptr"), "{}", last_error());
    // Nothing reached the wire, and the writer still works.
    assert!(m.bytes.is_empty());
    let good = slices(&item.payloads);
    // SAFETY: `good` holds slices over `item.payloads`, which outlive the call; `w` and `d` are live.
    expect(unsafe { hurray_writer_write_tensor(w, d, good.as_ptr(), good.len()) }, HURRAY_OK);
    // SAFETY: `w` holds the live writer, destroyed once.
    expect(unsafe { hurray_writer_destroy(&mut w) }, HURRAY_OK);
    // SAFETY: `d` is the live descriptor from `decode`, destroyed once.
    expect(unsafe { hurray_descriptor_destroy(d) }, HURRAY_OK);
}

#[test]
fn descriptor_decode_refuses_a_length_beyond_the_address_space() {
    let mut d = null_mut();
    let p = NonNull::<u8>::dangling().as_ptr();
    // SAFETY: the call refuses the count/length before reading through the dangling pointer (the bound under test); `d`
    // is a live local.
    let s = unsafe { hurray_descriptor_decode(p, usize::MAX, &mut d) };
    expect(s, HURRAY_ERR_INVALID_ARGUMENT);
    assert!(d.is_null());
}

#[test]
fn name_check_applies_the_core_rule() {
    use hurray_ffi::names::{hurray_name_check, HURRAY_NAME_PATH};
    // SAFETY: `n` is a live byte slice valid for its length.
    let check = |n: &[u8], flags| unsafe { hurray_name_check(n.as_ptr(), n.len(), flags) };
    expect(check(b"layer.0/weight", HURRAY_NAME_PATH), HURRAY_OK);
    expect(check(b"../x", 0), HURRAY_OK);
    expect(check(b"../x", HURRAY_NAME_PATH), HURRAY_ERR_INVALID_ARGUMENT);
    expect(check(b"a\0b", 0), HURRAY_ERR_INVALID_ARGUMENT);
    expect(check(b"\xff", 0), HURRAY_ERR_INVALID_ARGUMENT);
    expect(check(&[b'x'; 4097], 0), HURRAY_ERR_LIMIT_EXCEEDED);
    expect(check(b"x", 2), HURRAY_ERR_INVALID_ARGUMENT);
    // SAFETY: a NULL name with length 0 is allowed.
    expect(unsafe { hurray_name_check(std::ptr::null(), 0, 0) }, HURRAY_OK);
    // SAFETY: a NULL name with a non-zero length is part of the contract (rejected).
    expect(unsafe { hurray_name_check(std::ptr::null(), 1, 0) }, HURRAY_ERR_NULL_POINTER);
    // SAFETY: the call refuses the count/length before reading through the dangling pointer (the bound under test).
    expect(unsafe { hurray_name_check(NonNull::<u8>::dangling().as_ptr(), usize::MAX, 0) }, HURRAY_ERR_LIMIT_EXCEEDED);
}
