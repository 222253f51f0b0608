//! Low-precision element types and block quantization kinds (descriptor version 2): values
//! checked against tables computed here from the OCP / NF4 / GGUF definitions (not by the code
//! under test), round trips through a stream and an HRRYFILE, and hostile parameters.

mod common;
mod file_support;

use hurray_core::file::FileReaderOptions;
use hurray_core::lowp::MiniFloat;
use hurray_core::quantize::{dequantize, dequantize_to_vec, plan, quantize_to_vec, NF4_CODEBOOK};
use hurray_core::{
    BlockKind, BlockQuant, BufferHandle, DeviceTag, ElementType, ErrorKind, FileReader, FileWriterOptions,
    LayoutDescriptor, Quantization, ReaderOptions, Shape, SyncMode, TensorDescriptor,
};
use ElementType::*;

/// The value of every code of a sign/exponent/mantissa format, from the OCP definitions:
/// subnormal `(-1)^s · 2^(1−bias) · m/2^M`, normal `(-1)^s · 2^(e−bias) · (1 + m/2^M)`.
/// `nan(code)` / `inf(code)` name the special codes of each format.
fn ocp_value(code: u32, e_bits: u32, m_bits: u32, bias: i32) -> f64 {
    let s = (code >> (e_bits + m_bits)) & 1;
    let e = (code >> m_bits) & ((1 << e_bits) - 1);
    let m = code & ((1 << m_bits) - 1);
    let mag = if e == 0 {
        2f64.powi(1 - bias) * (m as f64 / (1u32 << m_bits) as f64)
    } else {
        2f64.powi(e as i32 - bias) * (1.0 + m as f64 / (1u32 << m_bits) as f64)
    };
    if s == 1 {
        -mag
    } else {
        mag
    }
}

#[test]
fn minifloat_tables_match_the_ocp_definitions() {
    // (type, E, M, bias, NaN codes, ±inf codes, max finite)
    type Case = (ElementType, u32, u32, i32, Vec<u32>, Vec<u32>, f64);
    let cases: [Case; 8] = [
        (Float8E4m3fn, 4, 3, 7, vec![0x7F, 0xFF], vec![], 448.0),
        (Float8E5m2, 5, 2, 15, vec![0x7D, 0x7E, 0x7F, 0xFD, 0xFE, 0xFF], vec![0x7C, 0xFC], 57344.0),
        (Float8E4m3fnuz, 4, 3, 8, vec![0x80], vec![], 240.0),
        (Float8E5m2fnuz, 5, 2, 16, vec![0x80], vec![], 57344.0),
        (Float8E3m4, 3, 4, 3, (0x71..=0x7F).chain(0xF1..=0xFF).collect(), vec![0x70, 0xF0], 15.5),
        (Float6E2m3fn, 2, 3, 1, vec![], vec![], 7.5),
        (Float6E3m2fn, 3, 2, 3, vec![], vec![], 28.0),
        (Float4E2m1fn, 2, 1, 1, vec![], vec![], 6.0),
    ];
    for (t, e, m, bias, nans, infs, max) in cases {
        let f = MiniFloat::of(t).unwrap();
        assert_eq!(f.max_finite(), max, "{t:?} max");
        let bits = 1 + e + m;
        assert_eq!(t.bit_width(), bits);
        let mut seen_max = 0f64;
        for code in 0..(1u32 << bits) {
            let got = f.decode(code as u8);
            if nans.contains(&code) {
                assert!(got.is_nan(), "{t:?} {code:#x} should be NaN");
            } else if infs.contains(&code) {
                assert_eq!(got, if code >> (bits - 1) == 1 { f32::NEG_INFINITY } else { f32::INFINITY });
            } else {
                let want = ocp_value(code, e, m, bias);
                assert_eq!(f64::from(got), want, "{t:?} code {code:#x}");
                seen_max = seen_max.max(want);
            }
        }
        assert_eq!(seen_max, max, "{t:?} largest finite code");
    }
    // Spot values from the OCP tables.
    let e2m1: Vec<f32> = (0..8).map(|c| MiniFloat::E2M1.decode(c)).collect();
    assert_eq!(e2m1, [0.0, 0.5, 1.0, 1.5, 2.0, 3.0, 4.0, 6.0]);
    assert_eq!(MiniFloat::E4M3FN.decode(0x01), 2f32.powi(-9));
    assert_eq!(MiniFloat::E5M2.decode(0x01), 2f32.powi(-16));
    assert_eq!(MiniFloat::E2M3.decode(0x01), 0.125);
    assert_eq!(MiniFloat::E3M2.decode(0x01), 0.0625);
    // emax_elem (OCP MX §5.3): E4M3 8, E5M2 15, E2M3 2, E3M2 4, E2M1 2.
    let emax: Vec<i32> = [MiniFloat::E4M3FN, MiniFloat::E5M2, MiniFloat::E2M3, MiniFloat::E3M2, MiniFloat::E2M1]
        .iter()
        .map(|f| f.emax())
        .collect();
    assert_eq!(emax, [8, 15, 2, 4, 2]);
}

#[test]
fn minifloat_encoding_is_nearest_even_with_saturation() {
    for f in [MiniFloat::E4M3FN, MiniFloat::E5M2, MiniFloat::E2M3, MiniFloat::E3M2, MiniFloat::E2M1, MiniFloat::E3M4] {
        // Sorted finite non-negative values with their codes: brute-force nearest, ties to the
        // even code.
        let mut vals: Vec<(f64, u8)> = (0..(1u32 << (f.bits() - 1)))
            .map(|c| (f64::from(f.decode(c as u8)), c as u8))
            .filter(|(v, _)| v.is_finite())
            .collect();
        vals.sort_by(|a, b| a.0.total_cmp(&b.0));
        let mut rng = common::Rng::new(7);
        for _ in 0..20_000 {
            let x = (rng.below(1 << 24) as f64 / (1 << 24) as f64) * f.max_finite() * 1.2;
            let x = x as f32;
            let xf = f64::from(x);
            let best = vals
                .iter()
                .min_by(|a, b| {
                    let (da, db) = ((a.0 - xf).abs(), (b.0 - xf).abs());
                    da.total_cmp(&db).then((a.1 & 1).cmp(&(b.1 & 1)))
                })
                .unwrap();
            let want = if xf > f.max_finite() { vals.last().unwrap().1 } else { best.1 };
            assert_eq!(f.encode(x, true), want, "{f:?} {x}");
            assert_eq!(f.encode(-x, true), want | (1 << (f.bits() - 1)) as u8, "{f:?} -{x}");
        }
    }
    // Non-saturating overflow: infinity where the format has one, NaN for fn formats.
    assert_eq!(MiniFloat::E5M2.encode(1e6, false), 0x7C);
    assert_eq!(MiniFloat::E4M3FN.encode(1e6, false), 0x7F);
    assert_eq!(MiniFloat::E4M3FN.encode(1e6, true), 0x7E);
}

#[test]
fn nf4_codebook_and_quantization() {
    // The published NF4 levels (bitsandbytes), symmetric around an exact zero at code 7.
    let published: [f64; 16] = [
        -1.0,
        -0.6961928009986877,
        -0.5250730514526367,
        -0.39491748809814453,
        -0.28444138169288635,
        -0.18477343022823334,
        -0.09105003625154495,
        0.0,
        0.07958029955625534,
        0.16093020141124725,
        0.24611230194568634,
        0.33791524171829224,
        0.44070982933044434,
        0.5626170039176941,
        0.7229568362236023,
        1.0,
    ];
    for (a, b) in NF4_CODEBOOK.iter().zip(published) {
        assert_eq!(*a, b as f32);
    }
    let want: Vec<f32> = published.iter().map(|&x| x as f32).collect();
    // One block of 64: absmax 2.0; every element is the nearest level × absmax.
    let input: Vec<f32> = (0..64).map(|i| (i as f32 - 31.5) / 15.75).collect();
    let (d, bufs) =
        quantize_to_vec(Uint4, Shape::new(vec![64]).unwrap(), Some(Quantization::Block(BlockQuant::nf4(64))), &input)
            .unwrap();
    assert_eq!(d.version(), 2);
    assert_eq!(bufs[1], 2.0f32.to_le_bytes());
    let out = dequantize_to_vec(&d, &bufs.iter().map(|b| b.as_slice()).collect::<Vec<_>>()).unwrap();
    for (i, (&x, &y)) in input.iter().zip(&out).enumerate() {
        let nearest = want.iter().map(|l| l * 2.0).min_by(|a, b| (a - x).abs().total_cmp(&(b - x).abs())).unwrap();
        assert!((y - nearest).abs() < 1e-6, "element {i}: {x} -> {y}, nearest level {nearest}");
        // The code is in nibble (i % 2) of byte i / 2.
        let code = (bufs[0][i / 2] >> (4 * (i % 2))) & 15;
        assert!((NF4_CODEBOOK[code as usize] * 2.0 - y).abs() < 1e-6);
    }
}

#[test]
fn mx_quantization_follows_ocp_6_3() {
    // One MXFP4 block of 32 along the last axis: amax 5.0 → floor(log2 5) = 2, emax(E2M1) = 2,
    // shared exponent 0 → E8M0 127; elements are E2M1 of v / 1 rounded to nearest even.
    let mut input = vec![0f32; 32];
    input[0] = 5.0; // ties between 4 and 6 → 4 (even mantissa)
    input[1] = -2.6; // → -3
    input[2] = 0.25; // tie between 0 and 0.5 → 0
    input[3] = 0.74; // → 0.5
    let q = Quantization::Block(BlockQuant::mx(0, 32));
    let (d, bufs) = quantize_to_vec(Float4E2m1fn, Shape::new(vec![32]).unwrap(), Some(q), &input).unwrap();
    assert_eq!(bufs[1], [127]);
    assert_eq!(bufs[0][0], 0x6 | 0xD << 4); // 4.0 = 0b0110, -3.0 = 0b1101
    assert_eq!(bufs[0][1], 0x1 << 4); // 0 (low nibble), 0.5 (high nibble)
    let out = dequantize_to_vec(&d, &[&bufs[0], &bufs[1]]).unwrap();
    assert_eq!(&out[..4], &[4.0, -3.0, 0.0, 0.5]);
    // MXFP8 E4M3 with amax 1000: floor(log2 1000) = 9, emax 8 → X = 2^1 (E8M0 128); 1000/2 = 500
    // saturates to 448 → 896.
    let mut input = vec![1.0f32; 32];
    input[5] = 1000.0;
    let (d, bufs) = quantize_to_vec(
        Float8E4m3fn,
        Shape::new(vec![32]).unwrap(),
        Some(Quantization::Block(BlockQuant::mx(0, 32))),
        &input,
    )
    .unwrap();
    assert_eq!(bufs[1], [128]);
    let out = dequantize_to_vec(&d, &[&bufs[0], &bufs[1]]).unwrap();
    assert_eq!(out[5], 896.0);
    assert_eq!(out[0], 1.0);
    // MXINT8: amax 3.0 → X = 2^1; element 3/2 = 1.5 → 96 (1.5 × 64).
    let mut input = vec![0f32; 32];
    input[0] = 3.0;
    input[1] = -0.5;
    let (d, bufs) =
        quantize_to_vec(Int8, Shape::new(vec![32]).unwrap(), Some(Quantization::Block(BlockQuant::mx(0, 32))), &input)
            .unwrap();
    assert_eq!(bufs[1], [128]);
    assert_eq!(bufs[0][0] as i8, 96);
    assert_eq!(bufs[0][1] as i8, -16);
    let out = dequantize_to_vec(&d, &[&bufs[0], &bufs[1]]).unwrap();
    assert_eq!(&out[..2], &[3.0, -0.5]);
    // An all-zero block gets the smallest scale and zero elements.
    let (_, bufs) = quantize_to_vec(
        Float6E3m2fn,
        Shape::new(vec![32]).unwrap(),
        Some(Quantization::Block(BlockQuant::mx(0, 32))),
        &[0.0; 32],
    )
    .unwrap();
    assert_eq!(bufs[1], [0]);
    assert!(bufs[0].iter().all(|&b| b == 0));
}

#[test]
fn mx_along_a_leading_axis_uses_the_right_scales() {
    // Shape [64, 3], blocks along axis 0: scale (k, i) covers rows 32k..32k+32 of column i.
    let input: Vec<f32> = (0..192).map(|i| ((i % 3) as f32 + 1.0) * if i / 3 < 32 { 1.0 } else { 16.0 }).collect();
    let (d, bufs) = quantize_to_vec(
        Float8E5m2,
        Shape::new(vec![64, 3]).unwrap(),
        Some(Quantization::Block(BlockQuant::mx(0, 32))),
        &input,
    )
    .unwrap();
    assert_eq!(bufs[1].len(), 6);
    // amax per (k, i): (i + 1) · 16^k; X = 2^(floor(log2 amax) − 15).
    for k in 0..2 {
        for i in 0..3 {
            let amax = (i as f32 + 1.0) * 16f32.powi(k);
            let e = amax.log2().floor() as i32 - 15;
            assert_eq!(bufs[1][k as usize * 3 + i], (e + 127) as u8);
        }
    }
    let out = dequantize_to_vec(&d, &[&bufs[0], &bufs[1]]).unwrap();
    assert_eq!(out, input);
}

#[test]
fn nvfp4_values_and_scales() {
    let input: Vec<f32> = (0..32).map(|i| (i as f32 - 16.0) * 0.25).collect();
    let q = Quantization::Block(BlockQuant::nvfp4(0, 16));
    let (d, bufs) = quantize_to_vec(Float4E2m1fn, Shape::new(vec![32]).unwrap(), Some(q), &input).unwrap();
    assert_eq!(d.buffers().len(), 3);
    let ts = f32::from_le_bytes(bufs[2][..4].try_into().unwrap());
    assert_eq!(ts, 4.0 / (6.0 * 448.0));
    let out = dequantize_to_vec(&d, &[&bufs[0], &bufs[1], &bufs[2]]).unwrap();
    for (b, blk) in out.chunks(16).enumerate() {
        let s = MiniFloat::E4M3FN.decode(bufs[1][b]);
        for (k, y) in blk.iter().enumerate() {
            let i = b * 16 + k;
            let code = (bufs[0][i / 2] >> (4 * (i % 2))) & 15;
            assert_eq!(*y, (MiniFloat::E2M1.decode(code) * s) * ts);
            // Largest E2M1 step (4 → 6) is 2, so the error is at most one unit of the scale.
            assert!((y - input[i]).abs() <= s * ts + 1e-6, "{i}: {} vs {y}", input[i]);
        }
    }
}

#[test]
fn group_affine_formula() {
    // uint4, groups of 4 along the last axis: scale = (max − min) / 15, integer zero point.
    let input = [0.0f32, 1.0, 2.0, 3.0, -1.5, 0.0, 1.5, 3.0];
    let q = Quantization::Block(BlockQuant::group_affine(1, 4, Float32));
    let (d, bufs) = quantize_to_vec(Uint4, Shape::new(vec![2, 4]).unwrap(), Some(q), &input).unwrap();
    let f = |b: &[u8], i: usize| f32::from_le_bytes(b[4 * i..4 * i + 4].try_into().unwrap());
    assert_eq!(f(&bufs[1], 0), 3.0 / 15.0);
    assert_eq!(f(&bufs[2], 0), 0.0);
    assert_eq!(f(&bufs[1], 1), 4.5 / 15.0);
    assert_eq!(f(&bufs[2], 1), 5.0); // round(0 − (−1.5) / 0.3) = 5
    let out = dequantize_to_vec(&d, &[&bufs[0], &bufs[1], &bufs[2]]).unwrap();
    for (i, (x, y)) in input.iter().zip(&out).enumerate() {
        let (s, z) = (f(&bufs[1], i / 4), f(&bufs[2], i / 4));
        let q = (bufs[0][i / 2] >> (4 * (i % 2))) & 15;
        assert_eq!(*y, (q as f32 - z) * s);
        assert!((x - y).abs() < 1e-6, "{i}");
    }
    // Hand-built int8 groups with float16 scales: (q − z) · s.
    let d =
        plan(Int8, Shape::new(vec![4]).unwrap(), Some(Quantization::Block(BlockQuant::group_affine(0, 2, Float16))))
            .unwrap();
    let data = [10u8, (-6i8) as u8, 0, 127];
    let scales = [0x3800u16.to_le_bytes(), 0x4000u16.to_le_bytes()].concat(); // 0.5, 2.0
    let zeros = [0x4000u16.to_le_bytes(), 0x0000u16.to_le_bytes()].concat(); // 2.0, 0.0
    let out = dequantize_to_vec(&d, &[&data, &scales, &zeros]).unwrap();
    assert_eq!(out, [4.0, -4.0, 0.0, 254.0]);
}

#[test]
fn hand_built_gguf_blocks() {
    // Q8_0: d = 0.5 (f16 0x3800), q = 0, 1, −1, …
    let mut blk = vec![0x00u8, 0x38];
    blk.extend((0..32).map(|i| (i as i8 - 16) as u8));
    let d =
        plan(Int8, Shape::new(vec![1, 32]).unwrap(), Some(Quantization::Block(BlockQuant::gguf(false, 2)))).unwrap();
    assert_eq!(d.buffers()[0].byte_size(), 34);
    let out = dequantize_to_vec(&d, &[&blk]).unwrap();
    let want: Vec<f32> = (0..32).map(|i| (i as f32 - 16.0) * 0.5).collect();
    assert_eq!(out, want);
    // Q4_0: d = 2.0 (0x4000); byte j holds element j (low nibble) and j + 16 (high nibble).
    let mut blk = vec![0x00u8, 0x40];
    blk.extend((0..16u8).map(|j| j | (15 - j) << 4));
    let d = plan(Uint4, Shape::new(vec![32]).unwrap(), Some(Quantization::Block(BlockQuant::gguf(true, 1)))).unwrap();
    assert_eq!(d.buffers()[0].byte_size(), 18);
    let out = dequantize_to_vec(&d, &[&blk]).unwrap();
    for j in 0..16 {
        assert_eq!(out[j], (j as f32 - 8.0) * 2.0);
        assert_eq!(out[j + 16], ((15 - j) as f32 - 8.0) * 2.0);
    }
    // Quantize → dequantize stays within half a step.
    let input: Vec<f32> = (0..64).map(|i| (i as f32 * 0.37).sin() * 3.0).collect();
    for four in [false, true] {
        let et = if four { Uint4 } else { Int8 };
        let (d, bufs) = quantize_to_vec(
            et,
            Shape::new(vec![2, 32]).unwrap(),
            Some(Quantization::Block(BlockQuant::gguf(four, 2))),
            &input,
        )
        .unwrap();
        let out = dequantize_to_vec(&d, &[&bufs[0]]).unwrap();
        // Q4_0 maps the largest magnitude to −8, so the opposite end may clip by one step.
        let tol = if four { 3.0 / 8.0 + 1e-3 } else { 3.0 / 127.0 * 0.5 + 1e-3 };
        for (x, y) in input.iter().zip(&out) {
            assert!((x - y).abs() <= tol * 1.01, "{x} vs {y}");
        }
    }
}

#[test]
fn gguf_quantizers_round_as_llama_cpp() {
    // Q8_0: d = amax / 127 = 1 exactly, so the codes are roundf(v): halves go away from zero
    // (0.5 → 1, 2.5 → 3, −0.5 → −1), where ties-to-even would give 0, 2, 0.
    let mut v = vec![0f32; 32];
    v[..5].copy_from_slice(&[127.0, 0.5, 2.5, -0.5, -2.5]);
    let q8 = Some(Quantization::Block(BlockQuant::gguf(false, 1)));
    let (_, bufs) = quantize_to_vec(Int8, Shape::new(vec![32]).unwrap(), q8.clone(), &v).unwrap();
    assert_eq!(&bufs[0][..2], &[0x00, 0x3c]); // float16 1.0
    assert_eq!(bufs[0][2..7].iter().map(|&b| b as i8).collect::<Vec<_>>(), [127, 1, 3, -1, -3]);
    // The codes come from the float32 scale, not the stored float16 one: amax 100 gives
    // d = 0.7874016 (float16 0.7875977); 0.3937008 × (1 / d) is 0.5 in float32, so roundf
    // gives 1, where 0.3937008 / 0.7875977 = 0.49987555 would give 0.
    v.fill(0.0);
    v[0] = 100.0;
    v[1] = 0.3937008;
    let (_, bufs) = quantize_to_vec(Int8, Shape::new(vec![32]).unwrap(), q8, &v).unwrap();
    let id = 1.0f32 / (100.0f32 / 127.0);
    assert_eq!(bufs[0][3] as i8, (0.3937008f32 * id).round() as i8);
    assert_eq!(bufs[0][3] as i8, 1);
    // Q4_0: the largest magnitude −8 gives d = 1; codes trunc(v + 8.5) capped at 15, so 0.5 → 9
    // and 2.5 → 11 (ties-to-even on v / d would give 8 and 10), 7.9 → 15 (16 capped).
    let mut v = vec![0f32; 32];
    v[..5].copy_from_slice(&[-8.0, 0.5, 2.5, -0.5, 7.9]);
    let q4 = Some(Quantization::Block(BlockQuant::gguf(true, 1)));
    let (_, bufs) = quantize_to_vec(Uint4, Shape::new(vec![32]).unwrap(), q4, &v).unwrap();
    assert_eq!(&bufs[0][..2], &[0x00, 0x3c]); // d = m / −8 = float16 1.0
    let low: Vec<u8> = bufs[0][2..7].iter().map(|b| b & 15).collect();
    assert_eq!(low, [0, 9, 11, 8, 15]);
    assert!(bufs[0][2..18].iter().all(|b| b >> 4 == 8)); // elements 16..32 are 0 → trunc(8.5)
}

#[test]
fn integer_quantizers_refuse_non_finite_input_alike() {
    // Every kind whose codes are integers refuses NaN and ±Inf, int8 per-channel included
    // (storing NaN as 0 and ±Inf as ±127 steps would be a silent wrong result).
    for bad in [f32::NAN, f32::INFINITY, f32::NEG_INFINITY] {
        let mut v = vec![1f32; 32];
        v[5] = bad;
        let shape = Shape::new(vec![1, 32]).unwrap();
        let pc = Some(Quantization::PerChannelAffine { axis: 0, dequantized: Float32 });
        let e = quantize_to_vec(Int8, shape.clone(), pc, &v).unwrap_err();
        assert_eq!(e.kind(), ErrorKind::InvalidArgument, "{bad}");
        assert!(e.to_string().contains("element 5"), "{e}");
        for (et, bq) in
            [(Int8, BlockQuant::gguf(false, 2)), (Uint4, BlockQuant::nf4(32)), (Int8, BlockQuant::mx(1, 32))]
        {
            let e = quantize_to_vec(et, shape.clone(), Some(Quantization::Block(bq)), &v).unwrap_err();
            assert_eq!(e.kind(), ErrorKind::InvalidArgument, "{bad} {:?}", bq.kind);
        }
    }
}

/// A named quantized tensor with its buffers and the float32 input it came from.
type Quantized = (String, TensorDescriptor, Vec<Vec<u8>>, Vec<f32>);

/// Every block kind and element format, quantized from the same data.
fn every_kind() -> Vec<Quantized> {
    let shape = Shape::new(vec![4, 64]).unwrap();
    let input: Vec<f32> = (0..256).map(|i| ((i * 7919) % 1000) as f32 / 100.0 - 5.0).collect();
    let mut kinds: Vec<(ElementType, BlockQuant)> = vec![
        (Uint4, BlockQuant::nf4(64)),
        (Uint4, BlockQuant::nf4_double(32, Int8, 4)),
        (Uint4, BlockQuant::nf4_double(64, Float8E4m3fn, 2)),
        (Float4E2m1fn, BlockQuant::nvfp4(1, 16)),
        (Int4, BlockQuant::group_affine(1, 32, Float32)),
        (Uint4, BlockQuant::group_affine(0, 2, Bfloat16)),
        (Int8, BlockQuant::group_affine(1, 64, Float16)),
        (Int8, BlockQuant::gguf(false, 2)),
        (Uint4, BlockQuant::gguf(true, 2)),
    ];
    for et in [Float8E4m3fn, Float8E5m2, Float6E2m3fn, Float6E3m2fn, Float4E2m1fn, Int8] {
        kinds.push((et, BlockQuant::mx(1, 32)));
        kinds.push((et, BlockQuant::mx(0, 2)));
    }
    kinds
        .into_iter()
        .enumerate()
        .map(|(i, (et, bq))| {
            let (d, bufs) = quantize_to_vec(et, shape.clone(), Some(Quantization::Block(bq)), &input).unwrap();
            let name = format!("q{i}/{}/{}", bq.kind.name(), et.name());
            (name.clone(), d.with_name(name).unwrap(), bufs, input.clone())
        })
        .collect()
}

#[test]
fn every_kind_round_trips_through_a_stream_and_a_container() {
    let all = every_kind();
    let items: Vec<common::Item> =
        all.iter().map(|(_, d, b, _)| common::Item { desc: d.clone(), payloads: b.clone() }).collect();
    let bytes = common::encode_stream(&items, true);
    let (read, end) = common::read_bytes(&bytes, 13, ReaderOptions::default());
    end.unwrap();
    common::assert_same(&read, &items);
    let pairs: Vec<(TensorDescriptor, Vec<Vec<u8>>)> = all.iter().map(|(_, d, b, _)| (d.clone(), b.clone())).collect();
    let file = file_support::build(&pairs, &[], FileWriterOptions::default());
    let mut r = FileReader::open_span(&file, FileReaderOptions::default()).unwrap();
    for (name, d, bufs, input) in &all {
        let e = r.find(name.as_bytes()).unwrap().unwrap();
        let t = r.read_tensor(&e).unwrap();
        assert_eq!(&t.descriptor, d);
        let got: Vec<&[u8]> = t.buffers.iter().map(|b| b.as_slice()).collect();
        assert_eq!(got, bufs.iter().map(|b| b.as_slice()).collect::<Vec<_>>(), "{name}");
        // Dequantized values stay close to the input (a loose, kind-independent bound).
        let out = dequantize_to_vec(d, &got).unwrap();
        let err = input.iter().zip(&out).map(|(x, y)| (x - y).abs()).fold(0f32, f32::max);
        assert!(err < 1.6, "{name}: max error {err}");
        // Re-encoding the decoded descriptor gives the same bytes.
        assert_eq!(TensorDescriptor::decode(&d.encode().unwrap()).unwrap(), *d);
    }
}

#[test]
fn plain_low_precision_types_dequantize() {
    for et in [
        Float16,
        Bfloat16,
        Float8E4m3fn,
        Float8E5m2,
        Float8E4m3fnuz,
        Float8E5m2fnuz,
        Float8E3m4,
        Float6E2m3fn,
        Float6E3m2fn,
        Float4E2m1fn,
    ] {
        let input = [0.5f32, -1.0, 1.5, 2.0, 0.0, -0.5, 3.0];
        let (d, bufs) = quantize_to_vec(et, Shape::new(vec![7]).unwrap(), None, &input).unwrap();
        assert_eq!(d.version(), et.min_version());
        let out = dequantize_to_vec(&d, &[&bufs[0]]).unwrap();
        assert_eq!(out, input, "{et:?}");
    }
    // E8M0 as a plain tensor: 2^(c − 127).
    let d = TensorDescriptor::dense(Float8E8m0fnu, Shape::new(vec![3]).unwrap()).unwrap();
    assert_eq!(d.version(), 2);
    assert_eq!(dequantize_to_vec(&d, &[&[127, 130, 0]]).unwrap(), [1.0, 8.0, 2f32.powi(-127)]);
    // 6-bit packing: element i in bits [6i, 6i+6) of a little-endian stream.
    let d = TensorDescriptor::dense(Float6E2m3fn, Shape::new(vec![4]).unwrap()).unwrap();
    assert_eq!(d.buffers()[0].byte_size(), 3);
    // codes 0x08 (1.0), 0x28 (−1.0), 0x01 (0.125), 0x3F (−7.5)
    let stream: u32 = 0x08 | 0x28 << 6 | 0x01 << 12 | 0x3F << 18;
    let out = dequantize_to_vec(&d, &[&stream.to_le_bytes()[..3]]).unwrap();
    assert_eq!(out, [1.0, -1.0, 0.125, -7.5]);
}

#[test]
fn version_one_cannot_carry_version_two_features() {
    let q = Quantization::Block(BlockQuant::mx(0, 32));
    let d = plan(Float4E2m1fn, Shape::new(vec![32]).unwrap(), Some(q)).unwrap();
    let mut bytes = d.encode().unwrap();
    assert_eq!(&bytes[4..6], &2u16.to_le_bytes());
    bytes[4] = 1;
    assert_eq!(TensorDescriptor::decode(&bytes).unwrap_err().kind(), ErrorKind::Unsupported);
    // A plain float32 tensor is still version 1 (byte-identical to before).
    assert_eq!(TensorDescriptor::dense(Float32, Shape::new(vec![2]).unwrap()).unwrap().version(), 1);
}

fn block_desc(et: ElementType, dims: Vec<u64>, bq: BlockQuant, sizes: &[u64]) -> hurray_core::Result<TensorDescriptor> {
    let bufs =
        sizes.iter().map(|&n| BufferHandle::new(n, 64, DeviceTag::Cpu, SyncMode::ProducerSynced).unwrap()).collect();
    TensorDescriptor::new(
        2,
        0,
        et,
        Shape::new(dims).unwrap(),
        0,
        LayoutDescriptor::RowMajor,
        bufs,
        Some(Quantization::Block(bq)),
        None,
        None,
        None,
    )
}

#[test]
fn hostile_parameters_get_clear_errors() {
    let mx = BlockQuant::mx(1, 32);
    // Valid: [2, 64] MXFP4 → 64 element bytes, 4 scales.
    block_desc(Float4E2m1fn, vec![2, 64], mx, &[64, 4]).unwrap();
    // Scale buffer too short; packed element buffer off by one.
    assert_eq!(block_desc(Float4E2m1fn, vec![2, 64], mx, &[64, 3]).unwrap_err().kind(), ErrorKind::BufferTooSmall);
    assert_eq!(block_desc(Float4E2m1fn, vec![2, 64], mx, &[63, 4]).unwrap_err().kind(), ErrorKind::BufferTooSmall);
    assert_eq!(block_desc(Float6E3m2fn, vec![2, 64], mx, &[95, 4]).unwrap_err().kind(), ErrorKind::BufferTooSmall);
    block_desc(Float6E3m2fn, vec![2, 64], mx, &[96, 4]).unwrap();
    // Axis ≥ rank, block 0, block not dividing the axis.
    let e = block_desc(Float4E2m1fn, vec![2, 64], BlockQuant::mx(2, 32), &[64, 4]).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::InvalidArgument);
    assert!(e.to_string().contains("axis"), "{e}");
    let e = block_desc(Float4E2m1fn, vec![2, 64], BlockQuant::mx(1, 0), &[64, 4]).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::InvalidArgument);
    assert!(e.to_string().contains("block size is 0"), "{e}");
    let e = block_desc(Float4E2m1fn, vec![2, 64], BlockQuant::mx(1, 24), &[64, 4]).unwrap_err();
    assert!(e.to_string().contains("does not divide"), "{e}");
    // Wrong element / scale types, wrong buffer count, non-row-major layout.
    assert_eq!(block_desc(Float32, vec![2, 64], mx, &[512, 4]).unwrap_err().kind(), ErrorKind::InvalidType);
    assert_eq!(
        block_desc(Float4E2m1fn, vec![2, 64], BlockQuant { scale_type: Float32, ..mx }, &[64, 4]).unwrap_err().kind(),
        ErrorKind::InvalidType
    );
    assert_eq!(block_desc(Float4E2m1fn, vec![2, 64], mx, &[64]).unwrap_err().kind(), ErrorKind::InvalidLayout);
    // GGUF: block must be 32 along the last axis; blocks are whole.
    assert!(block_desc(Int8, vec![2, 64], BlockQuant::gguf(false, 2), &[136]).is_ok());
    assert_eq!(
        block_desc(Int8, vec![2, 64], BlockQuant::gguf(false, 2), &[135]).unwrap_err().kind(),
        ErrorKind::BufferTooSmall
    );
    assert_eq!(
        block_desc(Int8, vec![2, 64], BlockQuant::gguf(false, 1), &[136]).unwrap_err().kind(),
        ErrorKind::InvalidArgument
    );
    assert_eq!(
        block_desc(Int8, vec![2, 48], BlockQuant::gguf(false, 2), &[102]).unwrap_err().kind(),
        ErrorKind::InvalidArgument
    );
    // NF4: odd block, nonzero axis, double quantization with a float32 absmax type.
    assert_eq!(
        block_desc(Uint4, vec![10], BlockQuant::nf4(3), &[5, 16]).unwrap_err().kind(),
        ErrorKind::InvalidArgument
    );
    assert_eq!(
        block_desc(Uint4, vec![10], BlockQuant { axis: 1, ..BlockQuant::nf4(2) }, &[5, 20]).unwrap_err().kind(),
        ErrorKind::InvalidArgument
    );
    assert_eq!(
        block_desc(Uint4, vec![10], BlockQuant::nf4_double(2, Float32, 2), &[5, 5, 12]).unwrap_err().kind(),
        ErrorKind::InvalidType
    );
    // NF4 partial last block: 10 elements in blocks of 4 → 3 absmax.
    block_desc(Uint4, vec![10], BlockQuant::nf4(4), &[5, 12]).unwrap();
    assert_eq!(
        block_desc(Uint4, vec![10], BlockQuant::nf4(4), &[5, 11]).unwrap_err().kind(),
        ErrorKind::BufferTooSmall
    );
    // A group count whose parameter bytes overflow u64.
    let e = block_desc(Int8, vec![1 << 62], BlockQuant::group_affine(0, 1, Float32), &[1 << 62, 0, 0]).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::LimitExceeded);
    let e = block_desc(Uint4, vec![u64::MAX], BlockQuant::nf4(2), &[u64::MAX / 2 + 1, 0]).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::LimitExceeded);
    // E8M0 0xFF (NaN) scales are refused at dequantization, naming the block.
    let d = block_desc(Float4E2m1fn, vec![2, 64], mx, &[64, 4]).unwrap();
    let mut out = vec![0f32; 128];
    let e = dequantize(&d, &[&[0u8; 64], &[127, 127, 0xFF, 127]], &mut out).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::InvalidArgument);
    assert!(e.to_string().contains("block 2"), "{e}");
    // Caller slices shorter than the descriptor, wrong counts, wrong output length.
    assert_eq!(dequantize(&d, &[&[0u8; 64], &[127; 3]], &mut out).unwrap_err().kind(), ErrorKind::BufferTooSmall);
    assert_eq!(dequantize(&d, &[&[0u8; 64]], &mut out).unwrap_err().kind(), ErrorKind::InvalidArgument);
    assert_eq!(
        dequantize(&d, &[&[0u8; 64], &[127; 4]], &mut out[..127]).unwrap_err().kind(),
        ErrorKind::InvalidArgument
    );
    // Non-finite inputs cannot be block-quantized.
    let e = quantize_to_vec(
        Float4E2m1fn,
        Shape::new(vec![32]).unwrap(),
        Some(Quantization::Block(BlockQuant::mx(0, 32))),
        &[f32::NAN; 32],
    );
    assert_eq!(e.unwrap_err().kind(), ErrorKind::InvalidArgument);
    // Version-2 block fields: reserved bytes must be zero.
    let d = plan(Uint4, Shape::new(vec![64]).unwrap(), Some(Quantization::Block(BlockQuant::nf4(64)))).unwrap();
    let mut bytes = d.encode().unwrap();
    let n = bytes.len();
    bytes[n - 1] = 1;
    assert_eq!(TensorDescriptor::decode(&bytes).unwrap_err().kind(), ErrorKind::Corrupt);
    assert_eq!(BlockKind::from_code(10), None);
}

/// The committed version-2 golden stream: every block kind of [`every_kind`] plus one dense
/// tensor of each version-2 element type, payload checksums on. The Java tests quantize the
/// same input through the Java API and compare byte for byte. Regenerate with
/// `HURRAY_REGEN_GOLDEN=1 cargo test --offline -p hurray-core --test quant`.
#[test]
fn golden_v2_stream_is_what_the_code_writes() {
    let mut items: Vec<common::Item> =
        every_kind().into_iter().map(|(_, d, b, _)| common::Item { desc: d, payloads: b }).collect();
    for et in ElementType::ALL.into_iter().filter(|t| t.min_version() == 2) {
        let mut it = common::dense(et, &[5]);
        it.desc = it.desc.with_name(format!("dtype/{}", et.name())).unwrap();
        items.push(it);
    }
    let bytes = common::encode_stream(&items, true);
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../src/golden/stream_v2_quant.hrry");
    if std::env::var("HURRAY_REGEN_GOLDEN").is_ok_and(|v| v == "1") {
        let tmp = path.with_extension("tmp");
        std::fs::write(&tmp, &bytes).unwrap();
        std::fs::rename(&tmp, &path).unwrap();
    }
    let committed = std::fs::read(&path)
        .unwrap_or_else(|e| panic!("{}: {e} (regenerate with HURRAY_REGEN_GOLDEN=1)", path.display()));
    assert!(committed == bytes, "{} differs from what the code writes", path.display());
    let (read, end) = common::read_bytes(&committed, 7, ReaderOptions::default());
    end.unwrap();
    common::assert_same(&read, &items);
    assert!(read.iter().all(|(d, _)| d.version() == 2));
}

/// Seeded random parameters, shapes and buffer sizes: construction either succeeds or fails
/// with an error, and every descriptor that validates dequantizes random bytes of its declared
/// sizes without panicking (NaN scales aside, which are an error). Mutated encodings decode to
/// an error or to a descriptor that re-encodes to the same bytes.
#[test]
fn random_block_parameters_never_panic() {
    let mut r = common::Rng::new(0x9e37);
    let kinds = [
        BlockKind::Nf4,
        BlockKind::Mx,
        BlockKind::Nvfp4,
        BlockKind::GroupAffine,
        BlockKind::GgufQ8_0,
        BlockKind::GgufQ4_0,
    ];
    let mut ok = 0;
    for _ in 0..8000 {
        let rank = r.below(4) as usize;
        let dims: Vec<u64> = (0..rank).map(|_| [0, 1, 2, 3, 4, 16, 32, 64, 96][r.below(9) as usize]).collect();
        let bq = BlockQuant {
            kind: kinds[r.below(6) as usize],
            dequantized: ElementType::ALL[r.below(26) as usize],
            scale_type: ElementType::ALL[r.below(26) as usize],
            axis: r.below(4) as u32,
            block: [0, 1, 2, 3, 16, 32, 64][r.below(7) as usize],
            block2: [0, 0, 1, 3][r.below(4) as usize],
        };
        // Mostly near-valid: an allowed element type, the kind's usual scale type, and buffer
        // sizes within one byte of what the kind needs; sometimes anything.
        let sane = r.below(4) != 0;
        let mut bq = bq;
        let et = if sane {
            bq.dequantized = Float32;
            bq.scale_type = match bq.kind {
                BlockKind::Nf4 if bq.block2 > 0 => Int8,
                BlockKind::Nf4 => Float32,
                BlockKind::Mx => Float8E8m0fnu,
                BlockKind::Nvfp4 => Float8E4m3fn,
                BlockKind::GroupAffine => [Float32, Float16, Bfloat16][r.below(3) as usize],
                _ => Float16,
            };
            if bq.kind == BlockKind::Nf4 {
                bq.axis = 0;
            }
            let allowed = bq.allowed_element_types();
            allowed[r.below(allowed.len() as u64) as usize]
        } else {
            ElementType::ALL[r.below(26) as usize]
        };
        let shape = Shape::new(dims.clone()).unwrap();
        let sizes: Vec<u64> = match bq.buffer_sizes(et, &shape) {
            Ok(v) if sane => v.into_iter().map(|n| (n + r.below(3)).saturating_sub(1)).collect(),
            _ => (0..1 + r.below(3)).map(|_| r.below(200)).collect(),
        };
        let Ok(d) = block_desc(et, dims.clone(), bq, &sizes) else { continue };
        ok += 1;
        let bufs: Vec<Vec<u8>> = sizes.iter().map(|&n| r.bytes(n as usize)).collect();
        let refs: Vec<&[u8]> = bufs.iter().map(|b| b.as_slice()).collect();
        let mut out = vec![0f32; d.shape().element_count() as usize];
        if let Err(e) = dequantize(&d, &refs, &mut out) {
            assert_eq!(e.kind(), ErrorKind::InvalidArgument, "{d:?}: {e}");
        }
        let bytes = d.encode().unwrap();
        for _ in 0..8 {
            let mut m = bytes.clone();
            let i = r.below(m.len() as u64) as usize;
            m[i] ^= 1 << r.below(8);
            if let Ok(x) = TensorDescriptor::decode(&m) {
                assert_eq!(x.encode().unwrap(), m);
            }
        }
    }
    assert!(ok > 250, "only {ok} valid descriptors generated");
}
