//! `quantize::dequantize_into`: dequantization to the declared type (docs/spec/descriptor.md
//! §Dequantization), against values worked out by hand here, and hostile arguments.

use hurray_core::quantize::{dequantize_into, dequantize_to_vec, is_dequantize_target, quantize_to_vec};
use hurray_core::{
    BlockQuant, BufferHandle, DeviceTag, ElementType, ErrorKind, LayoutDescriptor, Quantization, Shape, SyncMode,
    TensorDescriptor,
};
use ElementType::*;

fn affine(stored: ElementType, n: u64, scale: f64, bias: f64, to: ElementType) -> TensorDescriptor {
    let bytes = stored.bytes_for(n).unwrap();
    TensorDescriptor::new(
        1,
        0,
        stored,
        Shape::new(vec![n]).unwrap(),
        0,
        LayoutDescriptor::RowMajor,
        vec![BufferHandle::new(bytes, 64, DeviceTag::Cpu, SyncMode::ProducerSynced).unwrap()],
        Some(Quantization::PerTensorAffine { scale, bias, dequantized: to }),
        None,
        None,
        None,
    )
    .unwrap()
}

fn into(d: &TensorDescriptor, bufs: &[&[u8]], to: ElementType) -> Vec<u8> {
    let n = d.shape().element_count();
    let mut out = vec![0xAAu8; to.bytes_for(n).unwrap() as usize];
    dequantize_into(d, bufs, to, &mut out).unwrap();
    out
}

fn i32s(b: &[u8]) -> Vec<i32> {
    b.chunks_exact(4).map(|c| i32::from_le_bytes(c.try_into().unwrap())).collect()
}

fn u16s(b: &[u8]) -> Vec<u16> {
    b.chunks_exact(2).map(|c| u16::from_le_bytes(c.try_into().unwrap())).collect()
}

#[test]
fn integer_targets_round_halves_up_and_wrap() {
    // uint8 q × 0.5 − 3: q = 1 → −2.5 → −2; 5 → −0.5 → 0; 7 → 0.5 → 1; 255 → 124.5 → 125.
    let d = affine(Uint8, 4, 0.5, -3.0, Int32);
    assert_eq!(i32s(&into(&d, &[&[1, 5, 7, 255]], Int32)), [-2, 0, 1, 125]);
    // 0 + 2147483647.5 rounds up to 2^31, which wraps to −2^31.
    let d = affine(Uint8, 1, 1.0, 2_147_483_647.5, Int32);
    assert_eq!(i32s(&into(&d, &[&[0]], Int32)), [i32::MIN]);
    // The largest double below 0.5 is not a half: 0.
    let d = affine(Uint8, 1, 1.0, 0.499_999_999_999_999_94, Int32);
    assert_eq!(i32s(&into(&d, &[&[0]], Int32)), [0]);
    // 8 and 16 bits: 200 wraps to −56 (0xC8) in int8; −1 is 0xFFFF in uint16; 65536 + 3 is 3.
    let d = affine(Uint8, 1, 1.0, 0.0, Int8);
    assert_eq!(into(&d, &[&[200]], Int8), [0xC8]);
    let d = affine(Int8, 2, 1.0, 0.0, Uint16);
    assert_eq!(u16s(&into(&d, &[&[0xFF, 3]], Uint16)), [0xFFFF, 3]);
    let d = affine(Uint8, 1, 1.0, 65539.0, Uint16);
    assert_eq!(u16s(&into(&d, &[&[0]], Uint16)), [3]);
    // 64 bits: 2^70 is a multiple of 2^64 (0); −2.5 → −2.
    let d = affine(Int8, 2, 2f64.powi(69), 0.0, Int64);
    let o = into(&d, &[&[2, 0]], Int64);
    assert_eq!(i64::from_le_bytes(o[..8].try_into().unwrap()), 0);
    let d = affine(Int8, 1, 0.5, -2.0, Uint64);
    assert_eq!(u64::from_le_bytes(into(&d, &[&[0xFF]], Uint64)[..].try_into().unwrap()), (-2i64) as u64);
    // Overflow to +∞ in float64 gives 0 for an integer target and ∞ for float32.
    let d = affine(Uint8, 1, 1e308, 0.0, Int32);
    assert_eq!(i32s(&into(&d, &[&[255]], Int32)), [0]);
    assert_eq!(into(&d, &[&[255]], Float32), f32::INFINITY.to_le_bytes());
}

#[test]
fn int4_packing_low_nibble_first() {
    // Byte 0x9F: element 0 is the low nibble 0xF (int4 −1, uint4 15), element 1 is 0x9
    // (int4 −7, uint4 9); byte 0x07: 7 then 0.
    for (t, want) in [(Int4, [-1.0, -7.0, 7.0, 0.0]), (Uint4, [15.0, 9.0, 7.0, 0.0])] {
        let d = affine(t, 4, 0.25, 1.0, Float64);
        let o = into(&d, &[&[0x9F, 0x07]], Float64);
        let got: Vec<f64> = o.chunks_exact(8).map(|c| f64::from_le_bytes(c.try_into().unwrap())).collect();
        let want: Vec<f64> = want.iter().map(|q| q * 0.25 + 1.0).collect();
        assert_eq!(got, want, "{t:?}");
    }
    // An odd count reads only the low nibble of the last byte.
    let d = affine(Uint4, 3, 1.0, 0.0, Int16);
    assert_eq!(into(&d, &[&[0x21, 0xF3]], Int16), [1, 0, 2, 0, 3, 0]);
}

#[test]
fn float_targets_round_once_from_float64() {
    // float16: ulp at 1 is 2^-10. 1 + 2^-11 is a tie → 1.0 (even); 1 + 3·2^-11 → 1 + 2^-9;
    // 1 + 2^-11 + 2^-40 is above the tie → 1 + 2^-10 (rounding through float32 first would
    // give 1.0); 65520 is the tie above the largest finite 65504 → ∞; 65519 → 65504.
    let xs =
        [1.0 + 2f64.powi(-11), 1.0 + 3.0 * 2f64.powi(-11), 1.0 + 2f64.powi(-11) + 2f64.powi(-40), 65520.0, 65519.0];
    let want = [0x3C00u16, 0x3C02, 0x3C01, 0x7C00, 0x7BFF];
    for (x, w) in xs.iter().zip(want) {
        let d = affine(Uint8, 1, 1.0, *x - 1.0, Float16);
        assert_eq!(u16s(&into(&d, &[&[1]], Float16)), [w], "{x}");
    }
    // Subnormals: 2^-24 is the smallest; 2^-25 (the tie) → 0; 3·2^-25 → 2·2^-24.
    for (x, w) in [(2f64.powi(-24), 1u16), (2f64.powi(-25), 0), (3.0 * 2f64.powi(-25), 2), (-2f64.powi(-26), 0x8000)] {
        let d = affine(Uint8, 1, 1.0, x, Float16);
        assert_eq!(u16s(&into(&d, &[&[0]], Float16)), [w], "{x}");
    }
    // bfloat16: 8 significant bits; 1 + 2^-8 + 2^-40 → 1 + 2^-7 (0x3F81), 1 + 2^-8 → 1.0.
    for (x, w) in [(1.0 + 2f64.powi(-8) + 2f64.powi(-40), 0x3F81u16), (1.0 + 2f64.powi(-8), 0x3F80), (-2.0, 0xC000)] {
        let d = affine(Uint8, 1, 1.0, x, Bfloat16);
        assert_eq!(u16s(&into(&d, &[&[0]], Bfloat16)), [w], "{x}");
    }
    // float32: nearest even of the float64 value (0.1 → 0x3DCCCCCD).
    let d = affine(Uint8, 1, 0.1, 0.0, Float32);
    assert_eq!(into(&d, &[&[1]], Float32), 0x3DCC_CCCDu32.to_le_bytes());
}

#[test]
fn plain_and_cast_sources() {
    // A float32 NaN, ±∞ and −2.5 to int32: 0, 0, 0, −2.
    let d = TensorDescriptor::dense(Float32, Shape::new(vec![4]).unwrap()).unwrap();
    let src: Vec<u8> =
        [f32::NAN, f32::INFINITY, f32::NEG_INFINITY, -2.5].iter().flat_map(|x| x.to_le_bytes()).collect();
    assert_eq!(i32s(&into(&d, &[&src], Int32)), [0, 0, 0, -2]);
    // float16 to float64 exactly: 2^-24 (0x0001), −0 (0x8000), 65504 (0x7BFF).
    let d = TensorDescriptor::dense(Float16, Shape::new(vec![3]).unwrap()).unwrap();
    let o = into(&d, &[&[0x01, 0x00, 0x00, 0x80, 0xFF, 0x7B]], Float64);
    let got: Vec<u64> = o.chunks_exact(8).map(|c| u64::from_le_bytes(c.try_into().unwrap())).collect();
    assert_eq!(got, [2f64.powi(-24).to_bits(), (-0f64).to_bits(), 65504f64.to_bits()]);
    // float64 to float16 rounds once: 1 + 2^-11 + 2^-40 → 0x3C01.
    let d = TensorDescriptor::dense(Float64, Shape::new(vec![1]).unwrap()).unwrap();
    assert_eq!(u16s(&into(&d, &[&(1.0 + 2f64.powi(-11) + 2f64.powi(-40)).to_le_bytes()], Float16)), [0x3C01]);
    // int64 2^53 + 1 to float64 rounds to even (2^53); to float32 once (2^53).
    let d = TensorDescriptor::dense(Int64, Shape::new(vec![1]).unwrap()).unwrap();
    let v = ((1i64 << 53) + 1).to_le_bytes();
    assert_eq!(into(&d, &[&v], Float64), 2f64.powi(53).to_le_bytes());
    assert_eq!(into(&d, &[&v], Float32), 2f32.powi(53).to_le_bytes());
    // e4m3fn 0x38 is 1.0; as int8 it is 1.
    let d = TensorDescriptor::dense(Float8E4m3fn, Shape::new(vec![1]).unwrap()).unwrap();
    assert_eq!(into(&d, &[&[0x38]], Int8), [1]);
}

#[test]
fn float32_target_matches_dequantize_and_block_kinds_widen() {
    let input: Vec<f32> = (0..64).map(|i| (i as f32 - 31.5) * 0.37).collect();
    let q = Quantization::Block(BlockQuant::mx(0, 32));
    let (d, bufs) = quantize_to_vec(Float4E2m1fn, Shape::new(vec![64]).unwrap(), Some(q), &input).unwrap();
    let refs: Vec<&[u8]> = bufs.iter().map(|b| &b[..]).collect();
    let f32s = dequantize_to_vec(&d, &refs).unwrap();
    let want: Vec<u8> = f32s.iter().flat_map(|x| x.to_le_bytes()).collect();
    assert_eq!(into(&d, &refs, Float32), want);
    let want64: Vec<u8> = f32s.iter().flat_map(|x| f64::from(*x).to_le_bytes()).collect();
    assert_eq!(into(&d, &refs, Float64), want64);
}

#[test]
fn hostile_arguments_get_clear_errors() {
    let d = affine(Uint8, 4, 0.5, 0.0, Float32);
    let src = [1u8, 2, 3, 4];
    for t in [Bool, Int4, Uint4, Complex64, Complex128, Float8E4m3fn, Float8E8m0fnu, Float4E2m1fn] {
        assert!(!is_dequantize_target(t));
        let mut out = [0u8; 64];
        let e = dequantize_into(&d, &[&src], t, &mut out).unwrap_err();
        assert_eq!(e.kind(), ErrorKind::Unsupported, "{t:?}");
        assert!(e.to_string().contains(t.name()), "{e}");
    }
    // Output one byte short; longer is fine and the tail stays untouched.
    let mut short = [0u8; 15];
    assert_eq!(dequantize_into(&d, &[&src], Float32, &mut short).unwrap_err().kind(), ErrorKind::BufferTooSmall);
    let mut long = [0xEEu8; 17];
    dequantize_into(&d, &[&src], Float32, &mut long).unwrap();
    assert_eq!(long[16], 0xEE);
    // Input buffer short, wrong buffer count, complex source.
    let mut out = [0u8; 16];
    assert_eq!(dequantize_into(&d, &[&src[..3]], Float32, &mut out).unwrap_err().kind(), ErrorKind::BufferTooSmall);
    assert_eq!(dequantize_into(&d, &[], Float32, &mut out).unwrap_err().kind(), ErrorKind::InvalidArgument);
    let c = TensorDescriptor::dense(Complex64, Shape::new(vec![1]).unwrap()).unwrap();
    assert_eq!(dequantize_into(&c, &[&[0; 8]], Float64, &mut out).unwrap_err().kind(), ErrorKind::Unsupported);
    // An MX E8M0 NaN scale is refused for every target.
    let q = Quantization::Block(BlockQuant::mx(0, 32));
    let (m, mut bufs) = quantize_to_vec(Float4E2m1fn, Shape::new(vec![32]).unwrap(), Some(q), &[1.0; 32]).unwrap();
    bufs[1][0] = 0xFF;
    let refs: Vec<&[u8]> = bufs.iter().map(|b| &b[..]).collect();
    let mut out = [0u8; 256];
    assert_eq!(dequantize_into(&m, &refs, Float64, &mut out).unwrap_err().kind(), ErrorKind::InvalidArgument);
}

/// A plain integer tensor converts to an integer target exactly (wrapped modulo 2^bits), not
/// through float64: `dequantize(dequantizedType())` of an int64 tensor is the identity.
#[test]
fn plain_integers_convert_to_integers_exactly() {
    let vals = [i64::MIN, i64::MAX, -1, (1i64 << 53) + 1, 0x1234_5678_9ABC_DEF0];
    let bytes: Vec<u8> = vals.iter().flat_map(|v| v.to_le_bytes()).collect();
    let d = TensorDescriptor::dense(Int64, Shape::new(vec![vals.len() as u64]).unwrap()).unwrap();
    assert_eq!(into(&d, &[&bytes], Int64), bytes, "int64 to int64 is the identity");
    let low: Vec<u8> = vals.iter().map(|v| *v as u8).collect();
    assert_eq!(into(&d, &[&bytes], Uint8), low, "the low 8 bits");
    let as_u32: Vec<u8> = vals.iter().flat_map(|v| (*v as u32).to_le_bytes()).collect();
    assert_eq!(into(&d, &[&bytes], Uint32), as_u32);
    let u = [u64::MAX, 1u64 << 63, (1u64 << 53) + 1];
    let ub: Vec<u8> = u.iter().flat_map(|v| v.to_le_bytes()).collect();
    let du = TensorDescriptor::dense(Uint64, Shape::new(vec![3]).unwrap()).unwrap();
    let wrapped: Vec<u8> = u.iter().flat_map(|v| (*v as i64).to_le_bytes()).collect();
    assert_eq!(into(&du, &[&ub], Int64), wrapped);
    // Narrow sources widen exactly; int4 sign-extends.
    let d4 = TensorDescriptor::dense(Int4, Shape::new(vec![2]).unwrap()).unwrap();
    assert_eq!(into(&d4, &[&[0x8F]], Int16), [0xFF, 0xFF, 0xF8, 0xFF], "int4 [-1, -8]");
}

/// Per-channel int8 quantization finds channels in storage order, as dequantization does: for a
/// column-major [2, 3] tensor with channels along axis 0, the two rows get their own scales.
#[test]
fn per_channel_quantize_follows_the_storage_order() {
    use hurray_core::quantize::{dequantize, quantize};
    let d = TensorDescriptor::new(
        1,
        0,
        Int8,
        Shape::new(vec![2, 3]).unwrap(),
        0,
        LayoutDescriptor::ColumnMajor,
        vec![
            BufferHandle::new(6, 64, DeviceTag::Cpu, SyncMode::ProducerSynced).unwrap(),
            BufferHandle::new(8, 64, DeviceTag::Cpu, SyncMode::ProducerSynced).unwrap(),
            BufferHandle::new(8, 64, DeviceTag::Cpu, SyncMode::ProducerSynced).unwrap(),
        ],
        Some(Quantization::PerChannelAffine { axis: 0, dequantized: Float32 }),
        None,
        None,
        None,
    )
    .unwrap();
    // Storage order (column-major): row 0 = [1, 2, 3] (small), row 1 = [100, 200, 300] (large).
    let input = [1.0f32, 100.0, 2.0, 200.0, 3.0, 300.0];
    let (mut q, mut s, mut b) = (vec![0u8; 6], vec![0u8; 8], vec![0u8; 8]);
    quantize(&d, &input, &mut [&mut q, &mut s, &mut b]).unwrap();
    let scale = |i: usize| f32::from_le_bytes(s[4 * i..4 * i + 4].try_into().unwrap());
    assert_eq!((scale(0), scale(1)), (3.0 / 127.0, 300.0 / 127.0), "one scale per row");
    let mut back = [0f32; 6];
    dequantize(&d, &[&q, &s, &b], &mut back).unwrap();
    for (x, y) in input.iter().zip(back) {
        assert!((x - y).abs() <= x.abs() / 100.0, "{x} came back as {y}");
    }
}
