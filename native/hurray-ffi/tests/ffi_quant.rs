//! The quantization functions of the C ABI: plan → quantize → dequantize through the exported
//! symbols, the block-quant accessor and builder setter, and misuse with clear statuses.

use hurray_ffi::descriptor::*;
use hurray_ffi::*;
use std::ptr;

fn plan(dtype: u8, dims: &[u64], q: Option<&HurrayBlockQuant>) -> (i32, *mut HurrayDescriptor) {
    let mut d = ptr::null_mut();
    // SAFETY: `dims` is valid for `dims.len()` reads, `q` is NULL or a live reference, `d` a live local.
    let st = unsafe {
        hurray_quantize_plan(dtype, dims.as_ptr(), dims.len(), q.map_or(ptr::null(), |q| q as *const _), &mut d)
    };
    (st, d)
}

fn mx(axis: u32, block: u32) -> HurrayBlockQuant {
    HurrayBlockQuant {
        kind: HURRAY_QUANT_MX,
        dequantized_type: HURRAY_DTYPE_FLOAT32,
        scale_type: HURRAY_DTYPE_FLOAT8_E8M0FNU,
        reserved: 0,
        axis,
        block,
        block2: 0,
    }
}

#[test]
fn plan_quantize_dequantize_through_the_c_abi() {
    let (st, d) = plan(HURRAY_DTYPE_FLOAT4_E2M1FN, &[2, 64], Some(&mx(1, 32)));
    assert_eq!(st, HURRAY_OK);
    let mut n = 0usize;
    // SAFETY: `d` is the live descriptor from `plan`; `n` is a live local.
    assert_eq!(unsafe { hurray_descriptor_buffer_count(d, &mut n) }, HURRAY_OK);
    assert_eq!(n, 2);
    let mut bq = HurrayBlockQuant::default();
    // SAFETY: `d` is the live descriptor from `plan`; `bq` is a live local.
    assert_eq!(unsafe { hurray_descriptor_block_quant(d, &mut bq) }, HURRAY_OK);
    assert_eq!(bq, mx(1, 32));
    let mut v = 0u16;
    // SAFETY: `d` is the live descriptor from `plan`; `v` is a live local.
    assert_eq!(unsafe { hurray_ffi::sparse::hurray_descriptor_version(d, &mut v) }, HURRAY_OK);
    assert_eq!(v, 2);
    let input: Vec<f32> = (0..128).map(|i| (i % 13) as f32 - 6.0).collect();
    let mut b0 = vec![0u8; 64];
    let mut b1 = vec![0u8; 4];
    let ptrs = [b0.as_mut_ptr(), b1.as_mut_ptr()];
    let lens = [64usize, 4];
    // SAFETY: `d` is the live descriptor from `plan`; `input` holds 128 floats and each `ptrs[i]` is a writable buffer
    // of `lens[i]` bytes.
    assert_eq!(unsafe { hurray_quantize(d, input.as_ptr(), 128, ptrs.as_ptr(), lens.as_ptr(), 2) }, HURRAY_OK);
    let mut out = vec![0f32; 128];
    let cptrs = [b0.as_ptr(), b1.as_ptr()];
    // SAFETY: `d` is the live descriptor from `plan`; each `cptrs[i]` is valid for `lens[i]` bytes and `out` holds 128
    // floats.
    assert_eq!(unsafe { hurray_dequantize(d, cptrs.as_ptr(), lens.as_ptr(), 2, out.as_mut_ptr(), 128) }, HURRAY_OK);
    // Integers up to 6 in magnitude with amax 6: scale 2^0 (floor(log2 6) − 2 = 0), all exact
    // except 5 (tie → 4) … and odd values above 4 round to even mantissas.
    for (x, y) in input.iter().zip(&out) {
        assert!((x - y).abs() <= 1.0, "{x} vs {y}");
    }
    // Misuse: short scale buffer, wrong output length, NaN scale, NULL pointers.
    let short = [64usize, 3];
    assert_eq!(
        // SAFETY: `d` is the live descriptor from `plan`; each `cptrs[i]` is valid for at least `short[i]` bytes and
        // `out` holds 128 floats.
        unsafe { hurray_dequantize(d, cptrs.as_ptr(), short.as_ptr(), 2, out.as_mut_ptr(), 128) },
        HURRAY_ERR_BUFFER_TOO_SMALL
    );
    assert_eq!(
        // SAFETY: `d` is the live descriptor from `plan`; each `cptrs[i]` is valid for `lens[i]` bytes and `out` holds
        // 128 >= 127 floats.
        unsafe { hurray_dequantize(d, cptrs.as_ptr(), lens.as_ptr(), 2, out.as_mut_ptr(), 127) },
        HURRAY_ERR_INVALID_ARGUMENT
    );
    b1[0] = 0xFF;
    let cptrs = [b0.as_ptr(), b1.as_ptr()];
    assert_eq!(
        // SAFETY: `d` is the live descriptor from `plan`; each `cptrs[i]` is valid for `lens[i]` bytes and `out` holds
        // 128 floats.
        unsafe { hurray_dequantize(d, cptrs.as_ptr(), lens.as_ptr(), 2, out.as_mut_ptr(), 128) },
        HURRAY_ERR_INVALID_ARGUMENT
    );
    assert_eq!(
        // SAFETY: `d` is the live descriptor from `plan`; NULL `buffers` is part of the contract (rejected); `lens` and
        // `out` are live locals.
        unsafe { hurray_dequantize(d, ptr::null(), lens.as_ptr(), 2, out.as_mut_ptr(), 128) },
        HURRAY_ERR_NULL_POINTER
    );
    // SAFETY: `d` is the live descriptor from `plan`; a NULL `out` is part of the contract (rejected).
    assert_eq!(unsafe { hurray_descriptor_block_quant(d, ptr::null_mut()) }, HURRAY_ERR_NULL_POINTER);
    // SAFETY: `d` is the live descriptor from `plan`, destroyed once.
    assert_eq!(unsafe { hurray_descriptor_destroy(d) }, HURRAY_OK);
}

#[test]
fn plan_refuses_bad_parameters() {
    assert_eq!(plan(HURRAY_DTYPE_FLOAT4_E2M1FN, &[2, 64], Some(&mx(2, 32))).0, HURRAY_ERR_INVALID_ARGUMENT);
    assert_eq!(plan(HURRAY_DTYPE_FLOAT4_E2M1FN, &[2, 64], Some(&mx(1, 0))).0, HURRAY_ERR_INVALID_ARGUMENT);
    assert_eq!(plan(HURRAY_DTYPE_FLOAT4_E2M1FN, &[2, 48], Some(&mx(1, 32))).0, HURRAY_ERR_INVALID_ARGUMENT);
    assert_eq!(plan(HURRAY_DTYPE_FLOAT32, &[2, 64], Some(&mx(1, 32))).0, HURRAY_ERR_INVALID_TYPE);
    assert_eq!(
        plan(HURRAY_DTYPE_FLOAT4_E2M1FN, &[2, 64], Some(&HurrayBlockQuant { kind: 3, ..mx(1, 32) })).0,
        HURRAY_ERR_INVALID_ARGUMENT
    );
    assert_eq!(
        plan(HURRAY_DTYPE_FLOAT4_E2M1FN, &[2, 64], Some(&HurrayBlockQuant { reserved: 1, ..mx(1, 32) })).0,
        HURRAY_ERR_INVALID_ARGUMENT
    );
    let mut d = ptr::null_mut();
    assert_eq!(
        // SAFETY: NULL `dims` with rank 1 is part of the contract (rejected); `d` is a live local.
        unsafe { hurray_quantize_plan(HURRAY_DTYPE_FLOAT32, ptr::null(), 1, ptr::null(), &mut d) },
        HURRAY_ERR_NULL_POINTER
    );
}

#[test]
fn builder_takes_a_block_quant_and_sizes_the_table() {
    let dims = [4u64, 32];
    let mut b = ptr::null_mut();
    // SAFETY: `dims` holds 2 values; `b` is a live local.
    assert_eq!(unsafe { hurray_descriptor_builder_new(HURRAY_DTYPE_INT8, dims.as_ptr(), 2, &mut b) }, HURRAY_OK);
    let q = HurrayBlockQuant {
        kind: HURRAY_QUANT_GGUF_Q8_0,
        dequantized_type: HURRAY_DTYPE_FLOAT32,
        scale_type: HURRAY_DTYPE_FLOAT16,
        reserved: 0,
        axis: 1,
        block: 32,
        block2: 0,
    };
    // SAFETY: `b` is the live builder made above; `q` is a live local.
    assert_eq!(unsafe { hurray_descriptor_builder_set_block_quant(b, &q) }, HURRAY_OK);
    let mut d = ptr::null_mut();
    // SAFETY: `b` is the live builder made above; `d` is a live local.
    assert_eq!(unsafe { hurray_descriptor_builder_build(b, &mut d) }, HURRAY_OK);
    let mut spec = HurrayBufferSpec::default();
    // SAFETY: `d` is the live descriptor built above; `spec` is a live local.
    assert_eq!(unsafe { hurray_descriptor_buffer_spec(d, 0, &mut spec) }, HURRAY_OK);
    assert_eq!(spec.byte_size, 4 * 34);
    // SAFETY: `d` is the live descriptor built above, destroyed once.
    unsafe { hurray_descriptor_destroy(d) };
    // SAFETY: `b` is a live local holding the builder made above (or NULL), destroyed once.
    unsafe { hurray_descriptor_builder_destroy(&mut b) };
}

#[test]
fn dequantize_to_writes_the_requested_type() {
    let (st, d) = plan(HURRAY_DTYPE_FLOAT4_E2M1FN, &[32], Some(&mx(0, 32)));
    assert_eq!(st, HURRAY_OK);
    // E2M1 codes 0x2 (1.0) and 0xB (−1.5) repeated; scale 2^(128 − 127) = 2.
    let b0 = [0xB2u8; 16];
    let b1 = [128u8];
    let ptrs = [b0.as_ptr(), b1.as_ptr()];
    let lens = [16usize, 1];
    let call = |ty: u8, out: *mut u8, len: usize| {
        // SAFETY: `d` is the live descriptor from `plan`; each `ptrs[i]` is valid for `lens[i]` bytes; `out` is NULL or
        // valid for `len` byte writes.
        unsafe { hurray_dequantize_to(d, ptrs.as_ptr(), lens.as_ptr(), 2, ty, out, len) }
    };
    let mut f64s = [0u8; 256];
    assert_eq!(call(HURRAY_DTYPE_FLOAT64, f64s.as_mut_ptr(), 256), HURRAY_OK);
    for (i, c) in f64s.chunks_exact(8).enumerate() {
        assert_eq!(f64::from_le_bytes(c.try_into().unwrap()), if i % 2 == 0 { 2.0 } else { -3.0 });
    }
    let mut i8s = [0u8; 33];
    i8s[32] = 0x5A;
    assert_eq!(call(HURRAY_DTYPE_INT8, i8s.as_mut_ptr(), 33), HURRAY_OK);
    assert_eq!(&i8s[..2], &[2, (-3i8) as u8]);
    assert_eq!(i8s[32], 0x5A, "bytes past the result are untouched");
    // Misuse: a short output, an unknown code, a type that is no target, NULL pointers.
    assert_eq!(call(HURRAY_DTYPE_INT8, i8s.as_mut_ptr(), 31), HURRAY_ERR_BUFFER_TOO_SMALL);
    assert_eq!(call(HURRAY_DTYPE_INT8, ptr::null_mut(), 0), HURRAY_ERR_BUFFER_TOO_SMALL);
    assert_eq!(call(200, i8s.as_mut_ptr(), 33), HURRAY_ERR_INVALID_TYPE);
    assert_eq!(call(HURRAY_DTYPE_INT4, i8s.as_mut_ptr(), 33), HURRAY_ERR_UNSUPPORTED);
    assert_eq!(call(HURRAY_DTYPE_INT8, ptr::null_mut(), 32), HURRAY_ERR_NULL_POINTER);
    let mut out = [0u8; 4];
    assert_eq!(
        // SAFETY: a NULL descriptor is part of the contract (rejected); the other pointers are live locals.
        unsafe {
            hurray_dequantize_to(
                ptr::null(),
                ptrs.as_ptr(),
                lens.as_ptr(),
                2,
                HURRAY_DTYPE_FLOAT32,
                out.as_mut_ptr(),
                4,
            )
        },
        HURRAY_ERR_NULL_POINTER
    );
    // SAFETY: `d` is the live descriptor from `plan`, destroyed once.
    assert_eq!(unsafe { hurray_descriptor_destroy(d) }, HURRAY_OK);
}
