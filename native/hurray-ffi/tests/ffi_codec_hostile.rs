//! The codec calls of the C ABI (`hurray_dequantize`, `hurray_dequantize_to`,
//! `hurray_quantize`, `hurray_sparse_densify`, `hurray_paged_gather`) on descriptors that
//! used to reach the panic boundary, hang, or return values that disagree with each other:
//! each now returns a documented status, never `HURRAY_ERR_INTERNAL_PANIC`.

mod ffi_common;

use std::ptr;

use ffi_common::*;
use hurray_ffi::descriptor::*;
use hurray_ffi::*;

/// `hurray_dequantize_to` with the given payloads, into `out`.
fn dequantize_to(d: *const HurrayDescriptor, bufs: &[&[u8]], out_type: u8, out: &mut [u8]) -> HurrayStatus {
    let ptrs: Vec<*const u8> = bufs.iter().map(|b| b.as_ptr()).collect();
    let lens: Vec<usize> = bufs.iter().map(|b| b.len()).collect();
    // SAFETY: `d` is a live descriptor; `ptrs[i]` is valid for `lens[i]` bytes; `out` is writable for its length.
    unsafe { hurray_dequantize_to(d, ptrs.as_ptr(), lens.as_ptr(), bufs.len(), out_type, out.as_mut_ptr(), out.len()) }
}

#[test]
fn a_composite_head_gets_invalid_argument_from_every_codec_call() {
    let head = hurray_core::composite::head_descriptor(None, vec!["w".into()]).unwrap();
    let d = decode(&head.encode().unwrap());
    let mut bytes = [0u8; 16];
    expect(dequantize_to(d, &[], HURRAY_DTYPE_FLOAT32, &mut bytes), HURRAY_ERR_INVALID_ARGUMENT);
    let mut out = [0f32; 1];
    // SAFETY: `d` is live; no buffers (NULL arrays with count 0); `out` holds one float.
    let st = unsafe { hurray_dequantize(d, ptr::null(), ptr::null(), 0, out.as_mut_ptr(), 1) };
    expect(st, HURRAY_ERR_INVALID_ARGUMENT);
    let input = [1f32];
    // SAFETY: `d` is live; `input` holds one float; no buffers.
    let st = unsafe { hurray_quantize(d, input.as_ptr(), 1, ptr::null(), ptr::null(), 0) };
    expect(st, HURRAY_ERR_INVALID_ARGUMENT);
    // SAFETY: `d` is the live descriptor decoded above, destroyed once.
    expect(unsafe { hurray_descriptor_destroy(d) }, HURRAY_OK);
}

#[test]
fn a_strided_tensor_is_unsupported_with_exact_buffers_and_with_slack() {
    use hurray_core::{BufferHandle, DeviceTag, ElementType, LayoutDescriptor, Shape, SyncMode, TensorDescriptor};
    // float32 [2] at offset 4 with stride −1: elements at bytes 4 and 0, buffer of exactly 8.
    let core = TensorDescriptor::new(
        hurray_core::DESCRIPTOR_VERSION,
        0,
        ElementType::Float32,
        Shape::new(vec![2]).unwrap(),
        4,
        LayoutDescriptor::Strided(vec![-1]),
        vec![BufferHandle::new(8, 64, DeviceTag::Cpu, SyncMode::ProducerSynced).unwrap()],
        None,
        None,
        None,
        None,
    )
    .unwrap();
    let d = decode(&core.encode().unwrap());
    for len in [8usize, 12] {
        let data = vec![0u8; len];
        let mut out = [0u8; 8];
        expect(dequantize_to(d, &[&data], HURRAY_DTYPE_FLOAT32, &mut out), HURRAY_ERR_UNSUPPORTED);
    }
    // SAFETY: `d` is the live descriptor decoded above, destroyed once.
    expect(unsafe { hurray_descriptor_destroy(d) }, HURRAY_OK);
}
