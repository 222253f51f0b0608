//! One entry point for the functions a binding calls on every tensor and every reader or
//! writer (docs/spec/c-abi.md §One call signature for bindings).
//!
//! A runtime that links one stub per distinct C signature (a JVM's FFM linker spins classes
//! for each) pays for every signature a stream needs before its first tensor moves. Through
//! `hurray_call` those functions share one signature: the operation number, then eight 64-bit
//! arguments that are the function's own arguments in order.

use crate::buffer::HurrayBufferSpec;
use crate::decoder::{
    hurray_decoder_destroy, hurray_decoder_new, hurray_decoder_next_batch, hurray_decoder_reset, HurrayDecodeResult,
    HurrayDecoder,
};
use crate::descriptor_spec::{hurray_descriptor_check, HurrayDescriptorSpec};
use crate::encoder::{
    hurray_encoder_destroy, hurray_encoder_encode_batch, hurray_encoder_new, hurray_encoder_reset,
    hurray_encoder_set_coalesce_bytes, HurrayEncodeBatchResult, HurrayEncoder, HurrayEncoderState, HurrayTensorSpec,
};
use crate::reader::{hurray_reader_options_init, HurrayReaderOptions};
use crate::status::{HurrayStatus, HURRAY_ERR_INVALID_ARGUMENT};
use crate::tensor::{hurray_tensor_destroy_many, HurrayTensor};
use crate::writer::{hurray_writer_options_init, HurrayIoSlice, HurrayWriterOptions};

/// `hurray_call` operation: `hurray_c_abi_version()` (the result is the version).
pub const HURRAY_CALL_C_ABI_VERSION: u32 = 1;
/// `hurray_call` operation: `hurray_descriptor_check(a0, a1, a2)`.
pub const HURRAY_CALL_DESCRIPTOR_CHECK: u32 = 2;
/// `hurray_call` operation: `hurray_writer_options_init(a0)`.
pub const HURRAY_CALL_WRITER_OPTIONS_INIT: u32 = 3;
/// `hurray_call` operation: `hurray_reader_options_init(a0)`.
pub const HURRAY_CALL_READER_OPTIONS_INIT: u32 = 4;
/// `hurray_call` operation: `hurray_encoder_new(a0, a1)`.
pub const HURRAY_CALL_ENCODER_NEW: u32 = 5;
/// `hurray_call` operation: `hurray_encoder_encode_batch(a0, a1, a2, a3, a4, a5, a6, a7)`.
pub const HURRAY_CALL_ENCODER_ENCODE_BATCH: u32 = 6;
/// `hurray_call` operation: `hurray_encoder_set_coalesce_bytes(a0, a1)`.
pub const HURRAY_CALL_ENCODER_SET_COALESCE_BYTES: u32 = 7;
/// `hurray_call` operation: `hurray_encoder_reset(a0, a1)`.
pub const HURRAY_CALL_ENCODER_RESET: u32 = 8;
/// `hurray_call` operation: `hurray_encoder_destroy(a0)`.
pub const HURRAY_CALL_ENCODER_DESTROY: u32 = 9;
/// `hurray_call` operation: `hurray_decoder_new(a0, a1, a2)`.
pub const HURRAY_CALL_DECODER_NEW: u32 = 10;
/// `hurray_call` operation: `hurray_decoder_next_batch(a0, a1, a2, a3, a4, a5)`.
pub const HURRAY_CALL_DECODER_NEXT_BATCH: u32 = 11;
/// `hurray_call` operation: `hurray_decoder_reset(a0)`.
pub const HURRAY_CALL_DECODER_RESET: u32 = 12;
/// `hurray_call` operation: `hurray_decoder_destroy(a0)`.
pub const HURRAY_CALL_DECODER_DESTROY: u32 = 13;
/// `hurray_call` operation: `hurray_tensor_destroy_many(a0, a1)`.
pub const HURRAY_CALL_TENSOR_DESTROY_MANY: u32 = 14;

/// Calls the function that operation `op` (`HURRAY_CALL_*`) names with `a0`.. as its arguments
/// in order: a pointer as its address, an integer zero-extended (a `uint32_t` argument takes
/// the low 32 bits of its word). Arguments past the function's own are ignored. Returns what
/// the function returns: its status, or for `HURRAY_CALL_C_ABI_VERSION` the version. An
/// unknown `op` returns `HURRAY_ERR_INVALID_ARGUMENT` and calls nothing. Thread rules,
/// ownership and validity of each argument are those of the named function.
///
/// # Safety
/// The arguments must satisfy the `# Safety` section of the function `op` names.
#[no_mangle]
#[allow(clippy::too_many_arguments)]
pub unsafe extern "C" fn hurray_call(
    op: u32,
    a0: u64,
    a1: u64,
    a2: u64,
    a3: u64,
    a4: u64,
    a5: u64,
    a6: u64,
    a7: u64,
) -> HurrayStatus {
    // Addresses arrive as integers: `p(x)` turns one back into the pointer type the function
    // takes (the caller vouches for it under the function's own # Safety).
    fn p<T>(x: u64) -> *mut T {
        x as usize as *mut T
    }
    // SAFETY: in every arm, the caller satisfies the named function's # Safety (this function's
    // # Safety); each argument is passed through unchanged in its declared type.
    unsafe {
        match op {
            HURRAY_CALL_C_ABI_VERSION => crate::hurray_c_abi_version() as HurrayStatus,
            HURRAY_CALL_DESCRIPTOR_CHECK => {
                hurray_descriptor_check(p::<HurrayDescriptorSpec>(a0), p::<HurrayBufferSpec>(a1), p::<usize>(a2))
            }
            HURRAY_CALL_WRITER_OPTIONS_INIT => hurray_writer_options_init(p::<HurrayWriterOptions>(a0)),
            HURRAY_CALL_READER_OPTIONS_INIT => hurray_reader_options_init(p::<HurrayReaderOptions>(a0)),
            HURRAY_CALL_ENCODER_NEW => hurray_encoder_new(p::<HurrayWriterOptions>(a0), p::<*mut HurrayEncoder>(a1)),
            HURRAY_CALL_ENCODER_ENCODE_BATCH => hurray_encoder_encode_batch(
                p::<HurrayEncoder>(a0),
                a1,
                p::<HurrayTensorSpec>(a2),
                a3 as usize,
                a4 as u32,
                p::<HurrayIoSlice>(a5),
                a6 as usize,
                p::<HurrayEncodeBatchResult>(a7),
            ),
            HURRAY_CALL_ENCODER_SET_COALESCE_BYTES => {
                hurray_encoder_set_coalesce_bytes(p::<HurrayEncoder>(a0), a1 as usize)
            }
            HURRAY_CALL_ENCODER_RESET => hurray_encoder_reset(p::<HurrayEncoder>(a0), p::<HurrayEncoderState>(a1)),
            HURRAY_CALL_ENCODER_DESTROY => hurray_encoder_destroy(p::<*mut HurrayEncoder>(a0)),
            HURRAY_CALL_DECODER_NEW => {
                hurray_decoder_new(p::<HurrayReaderOptions>(a0), a1, p::<*mut HurrayDecoder>(a2))
            }
            HURRAY_CALL_DECODER_NEXT_BATCH => hurray_decoder_next_batch(
                p::<HurrayDecoder>(a0),
                a1 as usize,
                a2 as u32,
                p::<HurrayDecodeResult>(a3),
                a4 as usize,
                p::<usize>(a5),
            ),
            HURRAY_CALL_DECODER_RESET => hurray_decoder_reset(p::<HurrayDecoder>(a0)),
            HURRAY_CALL_DECODER_DESTROY => hurray_decoder_destroy(p::<*mut HurrayDecoder>(a0)),
            HURRAY_CALL_TENSOR_DESTROY_MANY => hurray_tensor_destroy_many(p::<*mut HurrayTensor>(a0), a1 as usize),
            _ => crate::panic::guard("hurray_call", || {
                Err(crate::panic::FfiError::new(HURRAY_ERR_INVALID_ARGUMENT, format!("unknown operation {op}")))
            }),
        }
    }
}
