//! The descriptor surface of the C ABI: the builder (the encode surface of docs/spec/c-abi.md
//! §Descriptors: reading and building) reproduces every golden descriptor byte for byte, the
//! accessors read every field back, and the builder refuses what the core refuses.

#[path = "../../hurray-core/tests/common/mod.rs"]
mod common;
mod ffi_common;

use std::ffi::c_char;
use std::ptr::{null, null_mut};

use common::*;
use ffi_common::*;
use hurray_core::{LayoutDescriptor, Quantization, TensorDescriptor};
use hurray_ffi::buffer::HurrayBufferSpec;
use hurray_ffi::descriptor::*;
use hurray_ffi::*;

/// Originates `d` from C: builder calls only.
///
/// # Safety
/// No requirement on the caller: every pointer it passes comes from `d` or a local (it could be
/// a safe fn).
unsafe fn build(d: &TensorDescriptor) -> *mut HurrayDescriptor {
    // SAFETY: `dims` and every array passed to the builder are slices of `d`, valid for the counts given; `b` is the
    // builder made here.
    unsafe {
        let dims = d.shape().dims();
        let mut b = null_mut();
        expect(hurray_descriptor_builder_new(d.element_type().code(), dims.as_ptr(), dims.len(), &mut b), HURRAY_OK);
        match d.layout() {
            LayoutDescriptor::Strided(s) => {
                expect(hurray_descriptor_builder_set_layout(b, HURRAY_LAYOUT_STRIDED, s.as_ptr(), s.len()), HURRAY_OK)
            }
            l => expect(hurray_descriptor_builder_set_layout(b, l.code(), null(), 0), HURRAY_OK),
        }
        expect(hurray_descriptor_builder_set_byte_offset(b, d.byte_offset()), HURRAY_OK);
        for h in d.buffers() {
            let spec = HurrayBufferSpec {
                byte_size: h.byte_size(),
                alignment: h.alignment() as u32,
                device_tag: h.device_tag().code(),
                sync_mode: h.sync_mode().code(),
                reserved: 0,
            };
            expect(hurray_descriptor_builder_add_buffer(b, &spec), HURRAY_OK);
        }
        if let Some(q) = d.quantization() {
            let (axis, scale, bias) = match *q {
                Quantization::PerTensorAffine { scale, bias, .. } => (0, scale, bias),
                Quantization::PerChannelAffine { axis, .. } => (axis, 0.0, 0.0),
                Quantization::Cast { .. } => (0, 0.0, 0.0),
                Quantization::Block(_) => unreachable!("the property corpus has no block kinds"),
            };
            let hq = HurrayQuantization {
                kind: q.code(),
                dequantized_type: q.dequantized().code(),
                reserved: 0,
                axis,
                scale,
                bias,
            };
            expect(hurray_descriptor_builder_set_quantization(b, &hq), HURRAY_OK);
        }
        if let Some(n) = d.name() {
            expect(hurray_descriptor_builder_set_name(b, n.as_ptr() as *const c_char, n.len()), HURRAY_OK);
        }
        for (k, v) in d.metadata() {
            expect(hurray_descriptor_builder_add_metadata(b, k.as_ptr(), k.len(), v.as_ptr(), v.len()), HURRAY_OK);
        }
        let mut out = null_mut();
        expect(hurray_descriptor_builder_build(b, &mut out), HURRAY_OK);
        // The builder stays usable: a second build gives an equal descriptor.
        let mut again = null_mut();
        expect(hurray_descriptor_builder_build(b, &mut again), HURRAY_OK);
        assert_eq!(encoded(again), encoded(out));
        expect(hurray_descriptor_destroy(again), HURRAY_OK);
        expect(hurray_descriptor_builder_destroy(&mut b), HURRAY_OK);
        assert!(b.is_null());
        out
    }
}

/// The encoded bytes of `d`, copied.
///
/// # Safety
/// `d` is a live descriptor handle.
unsafe fn encoded(d: *const HurrayDescriptor) -> Vec<u8> {
    let (mut p, mut n) = (null(), 0usize);
    // SAFETY: `d` is a live descriptor (this function's # Safety); `p` and `n` are live locals.
    expect(unsafe { hurray_descriptor_encoded(d, &mut p, &mut n) }, HURRAY_OK);
    // SAFETY: hurray_descriptor_encoded stored a pointer to `n` bytes owned by `d`, which is still live.
    unsafe { std::slice::from_raw_parts(p, n) }.to_vec()
}

/// Reads every field back through the accessors and compares with the core value.
///
/// # Safety
/// `h` is a live descriptor handle.
unsafe fn check_fields(h: *const HurrayDescriptor, d: &TensorDescriptor) {
    // SAFETY: `h` is a live descriptor (this function's # Safety); out-pointers are live locals, and the arrays read
    // back are owned by `h` with the lengths its accessors report.
    unsafe {
        let (mut et, mut layout, mut rank, mut nbuf, mut nmd) = (0u8, 0u8, 0usize, 0usize, 0usize);
        let (mut off, mut count) = (0u64, 0u64);
        let (mut dims, mut strides) = (null(), null());
        expect(hurray_descriptor_element_type(h, &mut et), HURRAY_OK);
        expect(hurray_descriptor_layout(h, &mut layout), HURRAY_OK);
        expect(hurray_descriptor_rank(h, &mut rank), HURRAY_OK);
        expect(hurray_descriptor_buffer_count(h, &mut nbuf), HURRAY_OK);
        expect(hurray_descriptor_metadata_count(h, &mut nmd), HURRAY_OK);
        expect(hurray_descriptor_byte_offset(h, &mut off), HURRAY_OK);
        expect(hurray_descriptor_element_count(h, &mut count), HURRAY_OK);
        expect(hurray_descriptor_dims(h, &mut dims), HURRAY_OK);
        expect(hurray_descriptor_strides(h, &mut strides), HURRAY_OK);
        assert_eq!(et, d.element_type().code());
        assert_eq!(layout, d.layout().code());
        assert_eq!(rank, d.shape().rank());
        assert_eq!(off, d.byte_offset());
        assert_eq!(count, d.shape().element_count());
        if rank == 0 {
            assert!(dims.is_null());
        } else {
            assert_eq!(std::slice::from_raw_parts(dims, rank), d.shape().dims());
        }
        match d.strides() {
            Some(s) if rank > 0 => assert_eq!(std::slice::from_raw_parts(strides, rank), s),
            _ => assert!(strides.is_null()),
        }
        assert_eq!(nbuf, d.buffers().len());
        for (i, bh) in d.buffers().iter().enumerate() {
            let mut spec = HurrayBufferSpec::default();
            expect(hurray_descriptor_buffer_spec(h, i, &mut spec), HURRAY_OK);
            assert_eq!(spec.byte_size, bh.byte_size());
            assert_eq!(u64::from(spec.alignment), bh.alignment());
            assert_eq!(spec.device_tag, bh.device_tag().code());
            assert_eq!(spec.sync_mode, bh.sync_mode().code());
        }
        let mut spec = HurrayBufferSpec::default();
        expect(hurray_descriptor_buffer_spec(h, nbuf, &mut spec), HURRAY_ERR_INVALID_ARGUMENT);
        let mut q = HurrayQuantization::default();
        expect(hurray_descriptor_quantization(h, &mut q), HURRAY_OK);
        match d.quantization() {
            None => assert_eq!(q, HurrayQuantization::default()),
            Some(cq) => {
                assert_eq!(q.kind, cq.code());
                assert_eq!(q.dequantized_type, cq.dequantized().code());
                match *cq {
                    Quantization::PerTensorAffine { scale, bias, .. } => assert_eq!((q.scale, q.bias), (scale, bias)),
                    Quantization::PerChannelAffine { axis, .. } => assert_eq!(q.axis, axis),
                    Quantization::Cast { .. } => {}
                    Quantization::Block(b) => assert_eq!(q.axis, b.axis),
                }
            }
        }
        let (mut name, mut nlen) = (null(), 0usize);
        expect(hurray_descriptor_name(h, &mut name, &mut nlen), HURRAY_OK);
        match d.name() {
            None => assert!(name.is_null() && nlen == 0),
            Some(n) => {
                assert_eq!(std::slice::from_raw_parts(name as *const u8, nlen + 1), [n.as_bytes(), &[0]].concat());
            }
        }
        assert_eq!(nmd, d.metadata().len());
        for (i, (k, v)) in d.metadata().iter().enumerate() {
            let (mut kp, mut kl, mut vp, mut vl) = (null(), 0usize, null(), 0usize);
            expect(hurray_descriptor_metadata_get(h, i, &mut kp, &mut kl, &mut vp, &mut vl), HURRAY_OK);
            assert_eq!(std::slice::from_raw_parts(kp, kl), k.as_bytes());
            if vl > 0 {
                assert_eq!(std::slice::from_raw_parts(vp, vl), &v[..]);
            } else {
                assert!(v.is_empty());
            }
        }
        let (mut kp, mut kl, mut vp, mut vl) = (null(), 0usize, null(), 0usize);
        expect(hurray_descriptor_metadata_get(h, nmd, &mut kp, &mut kl, &mut vp, &mut vl), HURRAY_ERR_INVALID_ARGUMENT);

        // hurray_descriptor_fields gives exactly what the single-field accessors give.
        let mut f = std::mem::zeroed::<HurrayDescriptorFields>();
        expect(hurray_descriptor_fields(h, &mut f), HURRAY_OK);
        let (mut ep, mut el) = (null(), 0usize);
        expect(hurray_descriptor_encoded(h, &mut ep, &mut el), HURRAY_OK);
        let mut version = 0u16;
        expect(hurray_ffi::sparse::hurray_descriptor_version(h, &mut version), HURRAY_OK);
        assert_eq!(u16::from_le_bytes([*ep.add(4), *ep.add(5)]), version, "bytes 4-5 of the encoding");
        assert_eq!((f.element_type, f.layout, f.version, f.flags), (et, layout, version, 0));
        assert_eq!((f.rank, f.dims, f.strides), (rank, dims, strides));
        assert_eq!((f.byte_offset, f.element_count), (off, count));
        assert_eq!((f.buffer_count, f.metadata_count), (nbuf, nmd));
        assert_eq!((f.name, f.name_len), (name, nlen));
        assert_eq!((f.encoded, f.encoded_len), (ep, el));
        assert_eq!(f.quantization, q);
    }
}

#[test]
fn the_builder_originates_every_golden_descriptor_byte_for_byte() {
    let mut items = golden_items();
    items.extend(plain_items());
    for it in &items {
        let want = it.desc.encode().unwrap();
        // SAFETY: `build` makes a live descriptor that is destroyed once at the end of the block; handles are made and
        // destroyed in this block; pointers passed are live locals or slices valid for the lengths given.
        unsafe {
            let built = build(&it.desc);
            assert_eq!(encoded(built), want, "{}", it.desc);
            check_fields(built, &it.desc);
            // Decode and clone give the same bytes and fields.
            let decoded = decode(&want);
            check_fields(decoded, &it.desc);
            let mut cloned = null_mut();
            expect(hurray_descriptor_clone(decoded, &mut cloned), HURRAY_OK);
            assert_eq!(encoded(cloned), want);
            for h in [built, decoded, cloned] {
                expect(hurray_descriptor_destroy(h), HURRAY_OK);
            }
        }
    }
}

#[test]
fn a_builder_without_buffers_gets_one_dense_cpu_buffer() {
    // SAFETY: handles are made and destroyed in this block; pointers passed are live locals or slices valid for the
    // lengths given.
    unsafe {
        let dims = [3u64, 5];
        let mut b = null_mut();
        expect(hurray_descriptor_builder_new(HURRAY_DTYPE_UINT4, dims.as_ptr(), 2, &mut b), HURRAY_OK);
        expect(hurray_descriptor_builder_set_byte_offset(b, 4), HURRAY_OK);
        let mut d = null_mut();
        expect(hurray_descriptor_builder_build(b, &mut d), HURRAY_OK);
        let mut spec = HurrayBufferSpec::default();
        expect(hurray_descriptor_buffer_spec(d, 0, &mut spec), HURRAY_OK);
        // 15 uint4 elements are 8 bytes, after a 4-byte offset.
        assert_eq!(spec, HurrayBufferSpec { byte_size: 12, alignment: 64, device_tag: 0, sync_mode: 0, reserved: 0 });
        expect(hurray_descriptor_destroy(d), HURRAY_OK);
        // A strided layout has no implied buffer.
        let strides = [5i64, 1];
        expect(hurray_descriptor_builder_set_layout(b, HURRAY_LAYOUT_STRIDED, strides.as_ptr(), 2), HURRAY_OK);
        d = null_mut();
        expect(hurray_descriptor_builder_build(b, &mut d), HURRAY_ERR_INVALID_LAYOUT);
        assert!(d.is_null(), "a failed call leaves *out unchanged");
        expect(hurray_descriptor_builder_destroy(&mut b), HURRAY_OK);
        // Rank 0 with NULL dims.
        expect(hurray_descriptor_builder_new(HURRAY_DTYPE_COMPLEX128, null(), 0, &mut b), HURRAY_OK);
        expect(hurray_descriptor_builder_build(b, &mut d), HURRAY_OK);
        let mut n = 0u64;
        expect(hurray_descriptor_element_count(d, &mut n), HURRAY_OK);
        assert_eq!(n, 1);
        expect(hurray_descriptor_buffer_spec(d, 0, &mut spec), HURRAY_OK);
        assert_eq!(spec.byte_size, 16);
        expect(hurray_descriptor_destroy(d), HURRAY_OK);
        expect(hurray_descriptor_builder_destroy(&mut b), HURRAY_OK);
    }
}

#[test]
fn the_builder_refuses_what_the_core_refuses() {
    // SAFETY: handles are made and destroyed in this block; pointers passed are live locals or slices valid for the
    // lengths given.
    unsafe {
        let mut b = null_mut();
        let dims = [4u64];
        expect(hurray_descriptor_builder_new(26, dims.as_ptr(), 1, &mut b), HURRAY_ERR_INVALID_TYPE);
        assert!(b.is_null());
        expect(hurray_descriptor_builder_new(HURRAY_DTYPE_INT32, dims.as_ptr(), 1, &mut b), HURRAY_OK);
        // Layouts.
        expect(
            hurray_descriptor_builder_set_layout(b, HURRAY_LAYOUT_ROW_MAJOR, dims.as_ptr() as *const i64, 1),
            HURRAY_ERR_INVALID_LAYOUT,
        );
        let two = [1i64, 1];
        expect(
            hurray_descriptor_builder_set_layout(b, HURRAY_LAYOUT_STRIDED, two.as_ptr(), 2),
            HURRAY_ERR_INVALID_LAYOUT,
        );
        // Sparse and paged layouts (descriptor version 2) take no strides; without their
        // block (hurray_descriptor_builder_set_sparse / _set_paging) the build refuses them.
        for code in 3..=7u8 {
            expect(hurray_descriptor_builder_set_layout(b, code, two.as_ptr(), 2), HURRAY_ERR_INVALID_LAYOUT);
            expect(hurray_descriptor_builder_set_layout(b, code, null(), 0), HURRAY_OK);
            let mut out = null_mut();
            expect(hurray_descriptor_builder_build(b, &mut out), HURRAY_ERR_INVALID_LAYOUT);
        }
        expect(hurray_descriptor_builder_set_layout(b, HURRAY_LAYOUT_ROW_MAJOR, null(), 0), HURRAY_OK);
        expect(hurray_descriptor_builder_set_layout(b, 8, null(), 0), HURRAY_ERR_INVALID_LAYOUT);
        // Names.
        let nul = b"a\0b";
        expect(hurray_descriptor_builder_set_name(b, nul.as_ptr() as *const c_char, 3), HURRAY_ERR_INVALID_ARGUMENT);
        let bad_utf8 = [0xFFu8, 0xFE];
        expect(
            hurray_descriptor_builder_set_name(b, bad_utf8.as_ptr() as *const c_char, 2),
            HURRAY_ERR_INVALID_ARGUMENT,
        );
        let long = vec![b'x'; 4097];
        expect(
            hurray_descriptor_builder_set_name(b, long.as_ptr() as *const c_char, long.len()),
            HURRAY_ERR_INVALID_ARGUMENT,
        );
        expect(hurray_descriptor_builder_set_name(b, long.as_ptr() as *const c_char, 4096), HURRAY_OK);
        // Buffers.
        for (align, dev, sync, reserved, want) in [
            (0u32, 0u8, 0u8, 0u16, HURRAY_ERR_INVALID_ALIGNMENT),
            (3, 0, 0, 0, HURRAY_ERR_INVALID_ALIGNMENT),
            (1 << 30, 0, 0, 0, HURRAY_ERR_INVALID_ALIGNMENT),
            (1 << 31, 0, 0, 0, HURRAY_ERR_INVALID_ALIGNMENT),
            (64, HURRAY_DEVICE_CUDA, 0, 0, HURRAY_ERR_INVALID_ALIGNMENT),
            (4096, 9, 0, 0, HURRAY_ERR_INVALID_ARGUMENT),
            (64, 0, 3, 0, HURRAY_ERR_INVALID_SYNC_MODE),
            (64, 0, 0xFF, 0, HURRAY_ERR_INVALID_SYNC_MODE),
            (64, 0, 0, 1, HURRAY_ERR_INVALID_ARGUMENT),
        ] {
            let spec = HurrayBufferSpec { byte_size: 16, alignment: align, device_tag: dev, sync_mode: sync, reserved };
            expect(hurray_descriptor_builder_add_buffer(b, &spec), want);
        }
        // Metadata.
        expect(hurray_descriptor_builder_add_metadata(b, b"k".as_ptr(), 1, b"v".as_ptr(), 1), HURRAY_OK);
        expect(hurray_descriptor_builder_add_metadata(b, b"k".as_ptr(), 1, null(), 0), HURRAY_ERR_DUPLICATE_NAME);
        expect(hurray_descriptor_builder_add_metadata(b, null(), 0, null(), 0), HURRAY_ERR_INVALID_ARGUMENT);
        let big = vec![0u8; 64 * 1024 + 1];
        expect(
            hurray_descriptor_builder_add_metadata(b, b"v".as_ptr(), 1, big.as_ptr(), big.len()),
            HURRAY_ERR_LIMIT_EXCEEDED,
        );
        // Quantization.
        let mut q = HurrayQuantization { kind: 4, dequantized_type: HURRAY_DTYPE_FLOAT32, ..Default::default() };
        expect(hurray_descriptor_builder_set_quantization(b, &q), HURRAY_ERR_UNSUPPORTED);
        q.kind = 10; // 4-9 are block kinds (hurray_descriptor_builder_set_block_quant)
        expect(hurray_descriptor_builder_set_quantization(b, &q), HURRAY_ERR_INVALID_ARGUMENT);
        q = HurrayQuantization { kind: HURRAY_QUANT_PER_TENSOR_AFFINE, dequantized_type: 200, ..Default::default() };
        expect(hurray_descriptor_builder_set_quantization(b, &q), HURRAY_ERR_INVALID_TYPE);
        q = HurrayQuantization {
            kind: HURRAY_QUANT_CAST,
            dequantized_type: HURRAY_DTYPE_FLOAT32,
            ..Default::default()
        };
        expect(hurray_descriptor_builder_set_quantization(b, &q), HURRAY_OK);
        // Cast needs a float stored type: refused at build, which leaves *out NULL.
        let mut d = null_mut();
        expect(hurray_descriptor_builder_build(b, &mut d), HURRAY_ERR_INVALID_TYPE);
        assert!(d.is_null());
        // Kind NONE takes no parameters (all zero): it removes the quantization again.
        q.kind = HURRAY_QUANT_NONE;
        expect(hurray_descriptor_builder_set_quantization(b, &q), HURRAY_ERR_INVALID_ARGUMENT);
        q = HurrayQuantization::default();
        expect(hurray_descriptor_builder_set_quantization(b, &q), HURRAY_OK);
        expect(hurray_descriptor_builder_build(b, &mut d), HURRAY_OK);
        expect(hurray_descriptor_destroy(d), HURRAY_OK);
        // A buffer too small for the elements.
        let spec = HurrayBufferSpec { byte_size: 15, alignment: 64, device_tag: 0, sync_mode: 0, reserved: 0 };
        expect(hurray_descriptor_builder_add_buffer(b, &spec), HURRAY_OK);
        expect(hurray_descriptor_builder_build(b, &mut d), HURRAY_ERR_BUFFER_TOO_SMALL);
        expect(hurray_descriptor_builder_destroy(&mut b), HURRAY_OK);
    }
}

#[test]
fn builder_shapes_overflowing_are_invalid_shape() {
    // SAFETY: handles are made and destroyed in this block; pointers passed are live locals or slices valid for the
    // lengths given.
    unsafe {
        let mut b = null_mut();
        let big = [1u64 << 32, 1 << 32];
        expect(hurray_descriptor_builder_new(HURRAY_DTYPE_UINT8, big.as_ptr(), 2, &mut b), HURRAY_ERR_INVALID_SHAPE);
        let ranks = [1u64; 33];
        expect(hurray_descriptor_builder_new(HURRAY_DTYPE_UINT8, ranks.as_ptr(), 33, &mut b), HURRAY_ERR_INVALID_SHAPE);
        expect(hurray_descriptor_builder_new(HURRAY_DTYPE_UINT8, null(), usize::MAX, &mut b), HURRAY_ERR_INVALID_SHAPE);
        assert!(b.is_null());
        expect(hurray_descriptor_builder_new(HURRAY_DTYPE_UINT8, ranks.as_ptr(), 32, &mut b), HURRAY_OK);
        expect(hurray_descriptor_builder_destroy(&mut b), HURRAY_OK);
        // 2^62 elements fit; 2^62 float64 bytes do not.
        let dims = [1u64 << 31, 1 << 31];
        expect(hurray_descriptor_builder_new(HURRAY_DTYPE_FLOAT64, dims.as_ptr(), 2, &mut b), HURRAY_OK);
        let mut d = null_mut();
        expect(hurray_descriptor_builder_build(b, &mut d), HURRAY_ERR_INVALID_SHAPE);
        let spec = HurrayBufferSpec { byte_size: u64::MAX, alignment: 64, device_tag: 0, sync_mode: 0, reserved: 0 };
        expect(hurray_descriptor_builder_add_buffer(b, &spec), HURRAY_OK);
        expect(hurray_descriptor_builder_build(b, &mut d), HURRAY_ERR_INVALID_SHAPE);
        expect(hurray_descriptor_builder_destroy(&mut b), HURRAY_OK);
        // A byte offset that overflows with the implied buffer.
        let one = [u64::MAX / 4];
        expect(hurray_descriptor_builder_new(HURRAY_DTYPE_INT16, one.as_ptr(), 1, &mut b), HURRAY_OK);
        expect(hurray_descriptor_builder_set_byte_offset(b, u64::MAX), HURRAY_OK);
        expect(hurray_descriptor_builder_build(b, &mut d), HURRAY_ERR_INVALID_SHAPE);
        assert!(d.is_null());
        expect(hurray_descriptor_builder_destroy(&mut b), HURRAY_OK);
    }
}
