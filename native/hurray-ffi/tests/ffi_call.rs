//! `hurray_call` (docs/spec/c-abi.md §One call signature for bindings): each operation does what
//! the function it names does, with the same status, message and output, and an unknown
//! operation is refused with a message. The Java bindings send every reader and writer call
//! through it, so their tests cover it end to end.

mod ffi_common;

use std::ptr::{null, null_mut};

use ffi_common::*;
use hurray_ffi::buffer::HurrayBufferSpec;
use hurray_ffi::call::*;
use hurray_ffi::descriptor_spec::{hurray_descriptor_check, HurrayDescriptorSpec};
use hurray_ffi::reader::{hurray_reader_options_init, HurrayReaderOptions};
use hurray_ffi::writer::{hurray_writer_options_init, HurrayWriterOptions};
use hurray_ffi::*;

/// The address of memory the call writes (or reads): taken from a `&mut` so the compiler
/// knows it may change.
fn a<T>(p: *mut T) -> u64 {
    p as usize as u64
}

/// The address of memory the call only reads.
fn r<T>(p: *const T) -> u64 {
    p as usize as u64
}

#[test]
fn the_version_and_the_option_defaults_are_those_of_the_named_functions() {
    // SAFETY: out-pointers are live locals.
    unsafe {
        assert_eq!(hurray_call(HURRAY_CALL_C_ABI_VERSION, 0, 0, 0, 0, 0, 0, 0, 0) as u32, hurray_c_abi_version());
        let mut w1 = HurrayWriterOptions { struct_size: 0, flags: 0 };
        let mut w2 = HurrayWriterOptions { struct_size: 7, flags: 7 };
        expect(hurray_writer_options_init(&mut w1), HURRAY_OK);
        expect(hurray_call(HURRAY_CALL_WRITER_OPTIONS_INIT, a(&mut w2), 0, 0, 0, 0, 0, 0, 0), HURRAY_OK);
        assert_eq!((w1.struct_size, w1.flags), (w2.struct_size, w2.flags));
        w2 = HurrayWriterOptions { struct_size: 7, flags: 7 };
        // Words past the function's own arguments are ignored.
        expect(hurray_call(HURRAY_CALL_WRITER_OPTIONS_INIT, a(&mut w2), 99, 99, 99, 99, 99, 99, 99), HURRAY_OK);
        assert_eq!((w1.struct_size, w1.flags), (w2.struct_size, w2.flags));
        let mut r1: HurrayReaderOptions = std::mem::zeroed();
        let mut r2: HurrayReaderOptions = std::mem::zeroed();
        expect(hurray_reader_options_init(&mut r1), HURRAY_OK);
        expect(hurray_call(HURRAY_CALL_READER_OPTIONS_INIT, a(&mut r2), 0, 0, 0, 0, 0, 0, 0), HURRAY_OK);
        assert_eq!(format!("{r1:?}"), format!("{r2:?}"));
    }
}

#[test]
fn a_descriptor_check_through_the_call_writes_the_same_table() {
    let dims = [2u64, 3];
    let spec = float32_spec_named_w(&dims);
    let zero = HurrayBufferSpec { byte_size: 0, alignment: 0, device_tag: 9, sync_mode: 9, reserved: 7 };
    // SAFETY: `spec` and the arrays it points at are live locals with room for the counts passed.
    unsafe {
        let (mut t1, mut t2) = ([zero; 2], [zero; 2]);
        let (mut n1, mut n2) = (2usize, 2usize);
        expect(hurray_descriptor_check(&spec, t1.as_mut_ptr(), &mut n1), HURRAY_OK);
        expect(
            hurray_call(HURRAY_CALL_DESCRIPTOR_CHECK, r(&spec), a(t2.as_mut_ptr()), a(&mut n2), 0, 0, 0, 0, 0),
            HURRAY_OK,
        );
        assert_eq!(n1, n2);
        assert_eq!((t1[0].byte_size, t1[0].alignment), (t2[0].byte_size, t2[0].alignment));
        let bad = HurrayDescriptorSpec { element_type: 200, ..spec };
        let s1 = hurray_descriptor_check(&bad, t1.as_mut_ptr(), &mut n1);
        let m1 = last_error();
        let s2 = hurray_call(HURRAY_CALL_DESCRIPTOR_CHECK, r(&bad), a(t2.as_mut_ptr()), a(&mut n2), 0, 0, 0, 0, 0);
        assert_eq!((s1, m1), (s2, last_error()));
        assert_ne!(s1, HURRAY_OK);
    }
}

#[test]
fn every_operation_refuses_null_handles_as_its_function_does_and_an_unknown_one_is_refused() {
    let mut count = 0usize;
    let ops = [
        HURRAY_CALL_DESCRIPTOR_CHECK,
        HURRAY_CALL_WRITER_OPTIONS_INIT,
        HURRAY_CALL_READER_OPTIONS_INIT,
        HURRAY_CALL_ENCODER_NEW,
        HURRAY_CALL_ENCODER_ENCODE_BATCH,
        HURRAY_CALL_ENCODER_SET_COALESCE_BYTES,
        HURRAY_CALL_ENCODER_RESET,
        HURRAY_CALL_ENCODER_DESTROY,
        HURRAY_CALL_DECODER_NEW,
        HURRAY_CALL_DECODER_NEXT_BATCH,
        HURRAY_CALL_DECODER_RESET,
        HURRAY_CALL_DECODER_DESTROY,
        HURRAY_CALL_TENSOR_DESTROY_MANY,
    ];
    // SAFETY: every pointer argument is NULL, which each function refuses (or, for the destroys
    // of a NULL slot, accepts as nothing to do) without dereferencing; `count` is a live local.
    unsafe {
        let direct = [
            hurray_descriptor_check(null(), null_mut(), null_mut()),
            hurray_writer_options_init(null_mut()),
            hurray_reader_options_init(null_mut()),
            encoder::hurray_encoder_new(null(), null_mut()),
            encoder::hurray_encoder_encode_batch(null_mut(), 0, null(), 0, 0, null_mut(), 0, null_mut()),
            encoder::hurray_encoder_set_coalesce_bytes(null_mut(), 0),
            encoder::hurray_encoder_reset(null_mut(), null_mut()),
            encoder::hurray_encoder_destroy(null_mut()),
            decoder::hurray_decoder_new(null(), 0, null_mut()),
            decoder::hurray_decoder_next_batch(null_mut(), 0, 0, null_mut(), 0, &mut count),
            decoder::hurray_decoder_reset(null_mut()),
            decoder::hurray_decoder_destroy(null_mut()),
            tensor::hurray_tensor_destroy_many(null_mut(), 0),
        ];
        for (i, op) in ops.iter().enumerate() {
            let extra = if *op == HURRAY_CALL_DECODER_NEXT_BATCH { a(&mut count) } else { 0 };
            let s = if *op == HURRAY_CALL_DECODER_NEXT_BATCH {
                hurray_call(*op, 0, 0, 0, 0, 0, extra, 0, 0)
            } else {
                hurray_call(*op, 0, 0, 0, 0, 0, 0, 0, 0)
            };
            assert_eq!(s, direct[i], "operation {op}");
        }
        expect(hurray_call(0, 0, 0, 0, 0, 0, 0, 0, 0), HURRAY_ERR_INVALID_ARGUMENT);
        expect(hurray_call(99, 0, 0, 0, 0, 0, 0, 0, 0), HURRAY_ERR_INVALID_ARGUMENT);
        assert!(last_error().contains("unknown operation 99"), "{}", last_error());
    }
}

#[test]
fn a_handle_of_another_type_is_refused_by_its_tag() {
    // SAFETY: each handle is live and made here; passing one where the other type is expected
    // is what the tag check exists to refuse (the tag sits first in every handle).
    unsafe {
        let mut d = null_mut();
        expect(decoder::hurray_decoder_new(null(), 0, &mut d), HURRAY_OK);
        let mut e = null_mut();
        expect(encoder::hurray_encoder_new(null(), &mut e), HURRAY_OK);
        let s = hurray_call(HURRAY_CALL_ENCODER_SET_COALESCE_BYTES, d as usize as u64, 0, 0, 0, 0, 0, 0, 0);
        assert_eq!(s, HURRAY_ERR_USE_AFTER_DESTROY, "{}", last_error());
        expect(
            hurray_call(HURRAY_CALL_DECODER_RESET, e as usize as u64, 0, 0, 0, 0, 0, 0, 0),
            HURRAY_ERR_USE_AFTER_DESTROY,
        );
        expect(decoder::hurray_decoder_destroy(&mut d), HURRAY_OK);
        expect(encoder::hurray_encoder_destroy(&mut e), HURRAY_OK);
    }
}
