//! Dequantization (every quantized or low-precision tensor to float32) and quantization
//! (float32 to every kind), over caller-owned buffers (docs/spec/descriptor.md §Dequantization
//! and §Quantization).
//!
//! Both work on the buffer table of a validated [`TensorDescriptor`]: `buffers[i]` holds the
//! bytes of table entry *i* (buffer 0 from its start, the descriptor's byte offset applies).
//! Elements are produced and consumed in storage order (row-major or column-major, as the
//! layout says); strided layouts are `Unsupported`. Sparse and block-paged tensors
//! dequantize to their dense form (densify or gather, then the plain tensor); quantize
//! writes dense tensors only. Scratch memory per call: the 256-entry decode tables, one float
//! per channel for per-channel quantization, and, only in [`dequantize_into`] for a block kind
//! with a target other than float32, a float32 copy of the whole tensor (4 bytes per element:
//! up to 4 times the output, for an 8-bit target); for a sparse or paged tensor, its dense
//! element bytes (up to 8 per output element). Scratch is sized by the caller's memory, never
//! by a declared size alone, and a failed allocation is `OutOfMemory`.

use crate::descriptor::{Quantization, TensorDescriptor};
use crate::error::{bail, err, Result};
use crate::lowp::{
    bf16_to_f32, e8m0_decode, e8m0_encode, f16_to_f32, f32_to_bf16, f32_to_f16, floor_log2, pow2, rne_f32, rne_f64,
    MiniFloat, SatEncoder,
};
use crate::quant::{BlockKind, BlockQuant, Q4_0_BLOCK_BYTES, Q8_0_BLOCK_BYTES};
use crate::shape::Shape;
use crate::types::ElementType;
use crate::{BufferHandle, DeviceTag, LayoutDescriptor, SyncMode, MIN_BUFFER_ALIGNMENT};

/// The 16 NF4 (4-bit NormalFloat) levels, code 0…15, as bitsandbytes publishes them:
/// quantiles of N(0, 1) normalised to [−1, 1], with an exact 0 at code 7.
pub const NF4_CODEBOOK: [f32; 16] = [
    -1.0,
    -0.6961928,
    -0.52507305,
    -0.3949175,
    -0.28444138,
    -0.18477343,
    -0.091050036,
    0.0,
    0.0795803,
    0.1609302,
    0.2461123,
    0.33791524,
    0.44070983,
    0.562617,
    0.72295684,
    1.0,
];

/// MXINT8 elements are two's-complement int8 with an implied scale of 2^-6 (OCP MX v1.0 §5.4).
const MXINT8_UNIT: f32 = 1.0 / 64.0;

// ---------------------------------------------------------------------------------------------
// Element access

/// Reads the `w`-bit code of element `i` from a packed little-endian bit stream.
#[inline]
fn code_at(data: &[u8], i: u64, w: u32) -> u8 {
    let bit = i * u64::from(w);
    let byte = (bit / 8) as usize;
    let sh = (bit % 8) as u32;
    let lo = u16::from(data[byte]);
    let hi = if sh + w > 8 { u16::from(data[byte + 1]) } else { 0 };
    (((hi << 8 | lo) >> sh) & ((1 << w) - 1)) as u8
}

/// ORs the `w`-bit `code` of element `i` into a zeroed packed bit stream.
#[inline]
fn put_code(data: &mut [u8], i: u64, w: u32, code: u8) {
    let bit = i * u64::from(w);
    let byte = (bit / 8) as usize;
    let sh = (bit % 8) as u32;
    let v = (u16::from(code) & ((1 << w) - 1)) << sh;
    data[byte] |= v as u8;
    if sh + w > 8 {
        data[byte + 1] |= (v >> 8) as u8;
    }
}

/// The float32 value of every code of a type of at most 8 bits (MXINT8 scaling applied
/// when `mxint8`).
fn table(et: ElementType, mxint8: bool) -> Option<[f32; 256]> {
    use ElementType::*;
    let mut t = [0f32; 256];
    if let Some(f) = MiniFloat::of(et) {
        return Some(f.table());
    }
    for (c, x) in t.iter_mut().enumerate() {
        *x = match et {
            Bool | Uint8 => c as f32,
            Int8 if mxint8 => f32::from(c as u8 as i8) * MXINT8_UNIT,
            Int8 => f32::from(c as u8 as i8),
            Uint4 => (c & 15) as f32,
            Int4 => (((c & 15) as i8) << 4 >> 4) as f32,
            Float8E8m0fnu => e8m0_decode(c as u8),
            _ => return None,
        };
    }
    Some(t)
}

/// Decodes elements `start .. start + out.len()` of a packed or byte-sized stream through `t`.
fn decode_small(data: &[u8], w: u32, start: u64, out: &mut [f32], t: &[f32; 256]) {
    match w {
        8 => {
            let s = start as usize;
            let len = out.len();
            for (o, &b) in out.iter_mut().zip(&data[s..s + len]) {
                *o = t[b as usize];
            }
        }
        4 => {
            let mut out = out;
            let mut byte = (start / 2) as usize;
            if start % 2 == 1 && !out.is_empty() {
                out[0] = t[(data[byte] >> 4) as usize];
                out = &mut out[1..];
                byte += 1;
            }
            let pairs = out.len() / 2;
            for (o, &b) in out.chunks_exact_mut(2).zip(&data[byte..byte + pairs]) {
                o[0] = t[(b & 15) as usize];
                o[1] = t[(b >> 4) as usize];
            }
            if out.len() % 2 == 1 {
                let last = out.len() - 1;
                out[last] = t[(data[byte + pairs] & 15) as usize];
            }
        }
        6 if start.is_multiple_of(4) => {
            // Four 6-bit codes in every three bytes.
            let byte = (start / 4 * 3) as usize;
            let quads = out.len() / 4;
            let (head, tail) = out.split_at_mut(quads * 4);
            for (o, b) in head.chunks_exact_mut(4).zip(data[byte..byte + quads * 3].chunks_exact(3)) {
                let v = u32::from(b[0]) | u32::from(b[1]) << 8 | u32::from(b[2]) << 16;
                o[0] = t[(v & 63) as usize];
                o[1] = t[(v >> 6 & 63) as usize];
                o[2] = t[(v >> 12 & 63) as usize];
                o[3] = t[(v >> 18) as usize];
            }
            let first = start + (quads * 4) as u64;
            for (k, o) in tail.iter_mut().enumerate() {
                *o = t[code_at(data, first + k as u64, w) as usize];
            }
        }
        _ => {
            for (k, o) in out.iter_mut().enumerate() {
                *o = t[code_at(data, start + k as u64, w) as usize];
            }
        }
    }
}

/// Decodes elements of any non-complex type to float32 (integers convert numerically).
fn decode_plain(et: ElementType, data: &[u8], start: u64, out: &mut [f32], t: Option<&[f32; 256]>) -> Result<()> {
    use ElementType::*;
    if let Some(t) = t {
        decode_small(data, et.bit_width(), start, out, t);
        return Ok(());
    }
    let s = start as usize;
    macro_rules! conv {
        ($n:expr, $f:expr) => {{
            let len = out.len();
            let bytes = &data[s * $n..(s + len) * $n];
            for (o, c) in out.iter_mut().zip(bytes.chunks_exact($n)) {
                *o = $f(c.try_into().unwrap());
            }
        }};
    }
    match et {
        Int16 => conv!(2, |c| f32::from(i16::from_le_bytes(c))),
        Uint16 => conv!(2, |c| f32::from(u16::from_le_bytes(c))),
        Int32 => conv!(4, |c| i32::from_le_bytes(c) as f32),
        Uint32 => conv!(4, |c| u32::from_le_bytes(c) as f32),
        Int64 => conv!(8, |c| i64::from_le_bytes(c) as f32),
        Uint64 => conv!(8, |c| u64::from_le_bytes(c) as f32),
        Float16 => conv!(2, |c| f16_to_f32(u16::from_le_bytes(c))),
        Bfloat16 => conv!(2, |c| bf16_to_f32(u16::from_le_bytes(c))),
        Float32 => conv!(4, f32::from_le_bytes),
        Float64 => conv!(8, |c| f64::from_le_bytes(c) as f32),
        _ => bail!(Unsupported, "cannot dequantize {} to float32", et.name()),
    }
    Ok(())
}

/// An integer element as i64 (for affine arithmetic in float64).
fn int_at(et: ElementType, data: &[u8], i: u64) -> i64 {
    use ElementType::*;
    let i = i as usize;
    let r = |n: usize| &data[i * n..i * n + n];
    match et {
        Int4 => i64::from((code_at(data, i as u64, 4) as i8) << 4 >> 4),
        Uint4 => i64::from(code_at(data, i as u64, 4)),
        Int8 => i64::from(data[i] as i8),
        Uint8 => i64::from(data[i]),
        Int16 => i64::from(i16::from_le_bytes(r(2).try_into().unwrap())),
        Uint16 => i64::from(u16::from_le_bytes(r(2).try_into().unwrap())),
        Int32 => i64::from(i32::from_le_bytes(r(4).try_into().unwrap())),
        Uint32 => i64::from(u32::from_le_bytes(r(4).try_into().unwrap())),
        _ => 0,
    }
}

fn f32_at(b: &[u8], i: usize) -> f32 {
    f32::from_le_bytes(b[i * 4..i * 4 + 4].try_into().unwrap())
}

/// A scale or zero point of a 2- or 4-byte float type.
fn param_at(t: ElementType, b: &[u8], i: usize) -> f32 {
    match t {
        ElementType::Float16 => f16_to_f32(u16::from_le_bytes([b[2 * i], b[2 * i + 1]])),
        ElementType::Bfloat16 => bf16_to_f32(u16::from_le_bytes([b[2 * i], b[2 * i + 1]])),
        _ => f32_at(b, i),
    }
}

fn put_param(t: ElementType, b: &mut [u8], i: usize, v: f32) {
    match t {
        ElementType::Float16 => b[2 * i..2 * i + 2].copy_from_slice(&f32_to_f16(v).to_le_bytes()),
        ElementType::Bfloat16 => b[2 * i..2 * i + 2].copy_from_slice(&f32_to_bf16(v).to_le_bytes()),
        _ => b[4 * i..4 * i + 4].copy_from_slice(&v.to_le_bytes()),
    }
}

/// The value a stored 2- or 4-byte parameter round-trips to.
fn stored_param(t: ElementType, v: f32) -> f32 {
    match t {
        ElementType::Float16 => f16_to_f32(f32_to_f16(v)),
        ElementType::Bfloat16 => bf16_to_f32(f32_to_bf16(v)),
        _ => v,
    }
}

/// A vector of `n` default values for scratch memory, or `OutOfMemory`: an allocation that
/// fails is an error status, never a process abort. Callers size it by memory the caller
/// already backs (the input, the output or the buffers), never by a declared size alone.
pub(crate) fn scratch<T: Clone + Default>(n: usize) -> Result<Vec<T>> {
    let mut v = Vec::new();
    v.try_reserve_exact(n)
        .map_err(|_| err!(OutOfMemory, "cannot allocate {n} scratch values of {} bytes", std::mem::size_of::<T>()))?;
    v.resize(n, T::default());
    Ok(v)
}

// ---------------------------------------------------------------------------------------------
// Checks shared by both directions

/// Refusals that depend on the descriptor alone (and on the direction), made before any
/// buffer is looked at, so that a call's status never depends on spare buffer bytes.
fn check_descriptor(desc: &TensorDescriptor, quantizing: bool) -> Result<()> {
    use ElementType::*;
    if desc.is_composite_head() {
        bail!(InvalidArgument, "a composite head has no elements or buffers: (de)quantize its members");
    }
    if matches!(desc.layout(), LayoutDescriptor::Strided(_)) {
        bail!(Unsupported, "strided tensors cannot be (de)quantized; make them dense first");
    }
    let et = desc.element_type();
    if !quantizing {
        if matches!(et, Complex64 | Complex128) {
            bail!(Unsupported, "cannot dequantize {}", et.name());
        }
        if desc.sparse().is_some() {
            crate::sparse::densify_supported(desc)?;
        }
        return Ok(());
    }
    if desc.sparse().is_some() || desc.paging().is_some() {
        bail!(
            Unsupported,
            "quantize writes dense tensors, not {}: plan a dense descriptor and quantize the dense values",
            desc.layout().name()
        );
    }
    match desc.quantization() {
        Some(Quantization::Block(_)) => Ok(()),
        Some(Quantization::PerChannelAffine { .. }) if et == Int8 => Ok(()),
        None | Some(Quantization::Cast { .. }) if matches!(et, Float32 | Float16 | Bfloat16) => Ok(()),
        None | Some(Quantization::Cast { .. }) if MiniFloat::of(et).is_some() => Ok(()),
        None | Some(Quantization::Cast { .. }) => bail!(Unsupported, "cannot quantize float32 to plain {}", et.name()),
        Some(q) => bail!(Unsupported, "quantizing to kind {} with {} is not supported", q.code(), et.name()),
    }
}

/// [`check_descriptor`], then the caller's buffers against what the descriptor needs.
fn check_buffers(
    desc: &TensorDescriptor,
    quantizing: bool,
    lens: impl Iterator<Item = usize>,
    count: usize,
) -> Result<()> {
    check_descriptor(desc, quantizing)?;
    let table = desc.buffers();
    if count != table.len() {
        bail!(InvalidArgument, "{count} buffers given for a buffer table of {}", table.len());
    }
    let overflow = || err!(LimitExceeded, "buffer byte count overflows u64");
    let need = match desc.quantization() {
        Some(Quantization::Block(b)) => {
            let mut v = b.buffer_sizes(desc.element_type(), desc.shape())?;
            v[0] = v[0].checked_add(desc.byte_offset()).ok_or_else(overflow)?;
            v
        }
        // Sparse and paged buffers are read as a whole (values, indices, pages, page table).
        _ if desc.sparse().is_some() || desc.paging().is_some() => table.iter().map(|b| b.byte_size()).collect(),
        _ => {
            let mut v: Vec<u64> = table.iter().map(|b| b.byte_size()).collect();
            v[0] = desc.byte_offset().checked_add(desc.dense_byte_count()).ok_or_else(overflow)?;
            if let Some(Quantization::PerChannelAffine { axis, .. }) = desc.quantization() {
                let c = desc.shape().dims()[*axis as usize].checked_mul(4).ok_or_else(overflow)?;
                v[1] = c;
                v[2] = c;
            }
            v
        }
    };
    for (i, (len, need)) in lens.zip(need).enumerate() {
        if (len as u64) < need {
            bail!(BufferTooSmall, "buffer {i} has {len} bytes, the descriptor needs {need}");
        }
    }
    Ok(())
}

/// For a sparse or block-paged tensor, its dense row-major form (by [`crate::sparse::densify`]
/// or [`crate::paged::gather`]) and a plain descriptor of it, so that dequantize agrees with
/// them by construction; `None` for the other layouts. The copy holds at most 8 bytes per
/// element of the output the caller gave, and its allocation failing is `OutOfMemory`.
fn dense_form(desc: &TensorDescriptor, buffers: &[&[u8]]) -> Result<Option<(TensorDescriptor, Vec<u8>)>> {
    let sparse = desc.sparse().is_some();
    if !sparse && desc.paging().is_none() {
        return Ok(None);
    }
    let plain = TensorDescriptor::dense(desc.element_type(), desc.shape().clone())?;
    let n = usize::try_from(plain.dense_byte_count())
        .map_err(|_| err!(LimitExceeded, "the dense form does not fit this platform"))?;
    let mut dense = scratch::<u8>(n)?;
    if sparse {
        crate::sparse::densify(desc, buffers, &mut dense)?;
    } else {
        crate::paged::gather(desc, buffers, &mut dense)?;
    }
    Ok(Some((plain, dense)))
}

fn check_len(desc: &TensorDescriptor, len: usize, what: &str) -> Result<usize> {
    let n = desc.shape().element_count();
    if n != len as u64 {
        bail!(InvalidArgument, "{what} holds {len} float32 values, the tensor has {n} elements");
    }
    Ok(len)
}

// ---------------------------------------------------------------------------------------------
// Dequantization

/// Dequantizes the tensor described by `desc` to float32, writing `out` in storage order.
///
/// `buffers` holds one slice per buffer-table entry, each at least as long as the descriptor
/// needs (buffer 0 counting the byte offset). Any element type except `complex64`,
/// `complex128` converts (integers numerically; float16, bfloat16 and every minifloat
/// exactly). Quantization kinds: per-tensor and per-channel affine are evaluated in float64
/// and rounded once to float32; cast is the exact conversion; the block kinds follow
/// docs/spec/descriptor.md §Block quantization kinds, in float32.
///
/// A sparse or block-paged tensor gives its logical shape in row-major order: exactly
/// [`crate::sparse::densify`] or [`crate::paged::gather`], then the plain tensor.
///
/// Errors: `InvalidArgument` (buffer count, `out.len()` ≠ element count, a NaN E8M0 scale
/// `0xFF`, a composite head), `BufferTooSmall` (a slice shorter than the descriptor needs),
/// `Unsupported` (complex types, strided layouts), `Corrupt` (sparse indices, page table).
/// Refusals that depend on the descriptor alone come first. Never panics.
pub fn dequantize(desc: &TensorDescriptor, buffers: &[&[u8]], out: &mut [f32]) -> Result<()> {
    check_buffers(desc, false, buffers.iter().map(|b| b.len()), buffers.len())?;
    let n = check_len(desc, out.len(), "the output")? as u64;
    if let Some((plain, dense)) = dense_form(desc, buffers)? {
        return dequantize(&plain, &[&dense], out);
    }
    let et = desc.element_type();
    let off = desc.byte_offset() as usize;
    let data = &buffers[0][off..];
    match desc.quantization() {
        None | Some(Quantization::Cast { .. }) => decode_plain(et, data, 0, out, table(et, false).as_ref()),
        Some(Quantization::PerTensorAffine { scale, bias, .. }) => {
            for (i, o) in out.iter_mut().enumerate() {
                *o = (int_at(et, data, i as u64) as f64 * scale + bias) as f32;
            }
            Ok(())
        }
        Some(Quantization::PerChannelAffine { axis, .. }) => {
            let (s, b) = (buffers[1], buffers[2]);
            let (inner, len) = channel_stride(desc, *axis as usize);
            for (i, o) in out.iter_mut().enumerate() {
                let c = ((i as u64 / inner) % len) as usize;
                let q = int_at(et, data, i as u64) as f64;
                *o = (q * f64::from(f32_at(s, c)) + f64::from(f32_at(b, c))) as f32;
            }
            Ok(())
        }
        Some(Quantization::Block(bq)) => dequantize_block(bq, et, desc.shape(), data, buffers, out, n),
    }
}

/// True for the element types [`dequantize_into`] writes: `float16`, `bfloat16`, `float32`,
/// `float64` and the 8-, 16-, 32- and 64-bit integers.
pub fn is_dequantize_target(t: ElementType) -> bool {
    use ElementType::*;
    matches!(
        t,
        Float16 | Bfloat16 | Float32 | Float64 | Int8 | Uint8 | Int16 | Uint16 | Int32 | Uint32 | Int64 | Uint64
    )
}

/// Dequantizes the tensor described by `desc` to `target`, writing `n` little-endian elements
/// of `target` (n × its width bytes) at the start of `out`, in storage order. `target` is
/// normally the quantization's declared dequantized type; any type of
/// [`is_dequantize_target`] is accepted for any source.
///
/// Each value is computed as [`dequantize`] defines it, then rounded once to `target`
/// (docs/spec/descriptor.md §Dequantization): affine kinds are evaluated in float64 and
/// rounded from there; plain and cast tensors are converted exactly to float64 first (64-bit
/// integers round to float64) and rounded from there; block kinds are float32 arithmetic,
/// widened exactly. For `float32` the result is bit for bit [`dequantize`]'s. Rounding:
/// to nearest, ties to even, for the float targets (overflow gives ±∞, NaN stays NaN); for
/// the integer targets, halves towards +∞, then the value wraps modulo 2^bits; NaN and ±∞
/// give 0.
///
/// Errors: those of [`dequantize`], plus `Unsupported` for a `target` outside
/// [`is_dequantize_target`] and `BufferTooSmall` for an `out` shorter than n × width bytes
/// (longer is fine; the rest is left untouched).
pub fn dequantize_into(desc: &TensorDescriptor, buffers: &[&[u8]], target: ElementType, out: &mut [u8]) -> Result<()> {
    use ElementType::*;
    if !is_dequantize_target(target) {
        bail!(
            Unsupported,
            "cannot dequantize to {}: the targets are float16, bfloat16, float32, float64 and the 8- to 64-bit integers",
            target.name()
        );
    }
    check_buffers(desc, false, buffers.iter().map(|b| b.len()), buffers.len())?;
    let n = desc.shape().element_count();
    let need = target.bytes_for(n).ok_or_else(|| err!(LimitExceeded, "output byte count overflows"))?;
    if (out.len() as u64) < need {
        bail!(BufferTooSmall, "the output has {} bytes, {n} {} elements need {need}", out.len(), target.name());
    }
    let n = usize::try_from(n).map_err(|_| err!(LimitExceeded, "element count does not fit this platform"))?;
    if let Some((plain, dense)) = dense_form(desc, buffers)? {
        return dequantize_into(&plain, &[&dense], target, out);
    }
    let out = &mut out[..need as usize];
    let et = desc.element_type();
    let data = &buffers[0][desc.byte_offset() as usize..];
    match desc.quantization() {
        Some(Quantization::PerTensorAffine { scale, bias, .. }) => {
            for i in 0..n {
                put_wide(target, out, i, int_at(et, data, i as u64) as f64 * scale + bias);
            }
        }
        Some(Quantization::PerChannelAffine { axis, .. }) => {
            let (s, b) = (buffers[1], buffers[2]);
            let (inner, len) = channel_stride(desc, *axis as usize);
            for i in 0..n {
                let c = ((i as u64 / inner) % len) as usize;
                let q = int_at(et, data, i as u64) as f64;
                put_wide(target, out, i, q * f64::from(f32_at(s, c)) + f64::from(f32_at(b, c)));
            }
        }
        Some(Quantization::Block(_)) => {
            // n floats: at most 4 times the output the caller gave.
            let mut v = scratch::<f32>(n)?;
            dequantize(desc, buffers, &mut v)?;
            if target == Float32 {
                for (o, x) in out.chunks_exact_mut(4).zip(&v) {
                    o.copy_from_slice(&x.to_le_bytes());
                }
            } else {
                for (i, x) in v.into_iter().enumerate() {
                    put_wide(target, out, i, f64::from(x));
                }
            }
        }
        None | Some(Quantization::Cast { .. }) => {
            if matches!(et, Complex64 | Complex128) {
                bail!(Unsupported, "cannot dequantize {}", et.name());
            }
            if desc.quantization().is_none() && et.is_integer() && target.is_integer() {
                // Integer to integer: the exact value wrapped modulo 2^bits, not through float64
                // (which would round 64-bit values beyond 2^53).
                let w = (target.bit_width() / 8) as usize;
                for i in 0..n {
                    let v = exact_int_at(et, data, i);
                    out[w * i..w * i + w].copy_from_slice(&v.to_le_bytes()[..w]);
                }
                return Ok(());
            }
            if target == Float32 {
                // Chunked through the float32 decoder, so that 64-bit integers round once.
                let mut chunk = [0f32; 1024];
                let t = table(et, false);
                for start in (0..n).step_by(chunk.len()) {
                    let len = chunk.len().min(n - start);
                    decode_plain(et, data, start as u64, &mut chunk[..len], t.as_ref())?;
                    for (o, x) in out[4 * start..4 * (start + len)].chunks_exact_mut(4).zip(&chunk[..len]) {
                        o.copy_from_slice(&x.to_le_bytes());
                    }
                }
            } else {
                let t = table(et, false);
                for i in 0..n {
                    put_wide(target, out, i, plain_f64_at(et, data, i, t.as_ref()));
                }
            }
        }
    }
    Ok(())
}

/// Element `i` of a plain integer tensor as its exact value (two's complement in an `i128`).
fn exact_int_at(et: ElementType, data: &[u8], i: usize) -> i128 {
    match et {
        ElementType::Int64 => i128::from(i64::from_le_bytes(data[8 * i..8 * i + 8].try_into().unwrap())),
        ElementType::Uint64 => i128::from(u64::from_le_bytes(data[8 * i..8 * i + 8].try_into().unwrap())),
        _ => i128::from(int_at(et, data, i as u64)),
    }
}

/// For per-channel affine: how many consecutive storage-order elements share a channel, and
/// the channel count.
fn channel_stride(desc: &TensorDescriptor, a: usize) -> (u64, u64) {
    let dims = desc.shape().dims();
    // Storage order decides which index varies fastest.
    let inner: u64 = if *desc.layout() == LayoutDescriptor::ColumnMajor {
        dims[..a].iter().product()
    } else {
        dims[a + 1..].iter().product()
    };
    (inner.max(1), dims[a])
}

/// Element `i` of a plain (or cast) tensor as float64: exact for every type but the 64-bit
/// integers (rounded to nearest even). `t` is [`table`] for the types of at most 8 bits.
fn plain_f64_at(et: ElementType, data: &[u8], i: usize, t: Option<&[f32; 256]>) -> f64 {
    use ElementType::*;
    if let Some(t) = t {
        let code = if et.bit_width() == 8 { data[i] } else { code_at(data, i as u64, et.bit_width()) };
        return f64::from(t[code as usize]);
    }
    let r = |n: usize| &data[i * n..i * n + n];
    match et {
        Int16 => f64::from(i16::from_le_bytes(r(2).try_into().unwrap())),
        Uint16 => f64::from(u16::from_le_bytes(r(2).try_into().unwrap())),
        Int32 => f64::from(i32::from_le_bytes(r(4).try_into().unwrap())),
        Uint32 => f64::from(u32::from_le_bytes(r(4).try_into().unwrap())),
        Int64 => i64::from_le_bytes(r(8).try_into().unwrap()) as f64,
        Uint64 => u64::from_le_bytes(r(8).try_into().unwrap()) as f64,
        Float16 => f64::from(f16_to_f32(u16::from_le_bytes(r(2).try_into().unwrap()))),
        Bfloat16 => f64::from(bf16_to_f32(u16::from_le_bytes(r(2).try_into().unwrap()))),
        Float32 => f64::from(f32::from_le_bytes(r(4).try_into().unwrap())),
        Float64 => f64::from_le_bytes(r(8).try_into().unwrap()),
        _ => 0.0, // complex types are refused before
    }
}

/// Stores `x` as element `i` of `out` (little-endian `target`), rounded once as
/// [`dequantize_into`] specifies.
#[inline]
fn put_wide(target: ElementType, out: &mut [u8], i: usize, x: f64) {
    use ElementType::*;
    match target {
        Float32 => out[4 * i..4 * i + 4].copy_from_slice(&(x as f32).to_le_bytes()),
        Float64 => out[8 * i..8 * i + 8].copy_from_slice(&x.to_le_bytes()),
        // The rounded values are exact in float32, so the float32 encoders only re-pack them.
        Float16 => {
            let h = f32_to_f16(round_to_precision(x, 11, -14, 65504.0) as f32);
            out[2 * i..2 * i + 2].copy_from_slice(&h.to_le_bytes());
        }
        Bfloat16 => {
            let h = f32_to_bf16(round_to_precision(x, 8, -126, pow2(128) - pow2(120)) as f32);
            out[2 * i..2 * i + 2].copy_from_slice(&h.to_le_bytes());
        }
        _ => {
            let w = (target.bit_width() / 8) as usize;
            let v = round_half_up_wrap(x, target.bit_width());
            out[w * i..w * i + w].copy_from_slice(&v.to_le_bytes()[..w]);
        }
    }
}

/// `x` rounded half towards +∞ to an integer, then reduced modulo 2^`bits` (the low `bits`
/// bits of the two's-complement result); 0 for NaN and ±∞. For 32 bits this is JavaScript's
/// `Math.round` followed by ToInt32 (an `Int32Array` store), which tfjs applies to int32
/// weights.
pub fn round_half_up_wrap(x: f64, bits: u32) -> u64 {
    if !x.is_finite() {
        return 0;
    }
    let mut r = x.floor();
    // Exact: below 2^52 the fraction x − floor(x) is representable; above, x is an integer.
    if x - r >= 0.5 {
        r += 1.0;
    }
    // fmod of an integer by a power of two is exact and below 2^64 in magnitude.
    let m = (r % 2f64.powi(bits as i32)) as i128;
    let mask = if bits == 64 { u64::MAX } else { (1u64 << bits) - 1 };
    (m as u64) & mask
}

/// `x` rounded once, to nearest with ties to even, to a binary format with `p` significand
/// bits (the implicit one included), smallest normal exponent `emin` and largest finite value
/// `max`; values beyond `max` by half an ulp or more give ±∞, NaN stays NaN. The result is an
/// f64 holding a value of that format.
fn round_to_precision(x: f64, p: i32, emin: i32, max: f64) -> f64 {
    if !x.is_finite() || x == 0.0 {
        return x;
    }
    let a = x.abs();
    if a >= max + pow2(floor_log2(max) - p) {
        return f64::INFINITY.copysign(x);
    }
    // Half the smallest subnormal or less: rounds to (signed) zero, ties to the even zero.
    if a <= pow2(emin - p) {
        return 0f64.copysign(x);
    }
    let quantum = pow2(floor_log2(a).max(emin) - (p - 1));
    rne_f64(x / quantum) * quantum
}

/// Runs `post(chunk, block)` over every block of an axis-blocked tensor whose raw element
/// values are already in `out` (or are decoded per block by `decode` when blocks are
/// contiguous).
fn for_blocks(
    bq: &BlockQuant,
    shape: &Shape,
    out: &mut [f32],
    mut decode: impl FnMut(u64, &mut [f32]),
    mut post: impl FnMut(&mut [f32], usize),
) {
    // A tensor without elements has no blocks. The loops below run over outer × axis rows,
    // which a zero-length inner dimension would leave unbounded by the element count.
    if out.is_empty() {
        return;
    }
    let block = bq.block as usize;
    let (outer, a, inner) = if bq.kind == BlockKind::Nf4 { (1, out.len() as u64, 1) } else { bq.geometry(shape) };
    if inner == 1 {
        for (b, chunk) in out.chunks_mut(block).enumerate() {
            decode((b * block) as u64, chunk);
            post(chunk, b);
        }
        return;
    }
    decode(0, out);
    let (a, inner) = (a as usize, inner as usize);
    let ab = a / block;
    for o in 0..outer as usize {
        for k in 0..a {
            let row = &mut out[(o * a + k) * inner..(o * a + k + 1) * inner];
            let base = (o * ab + k / block) * inner;
            for (i, x) in row.iter_mut().enumerate() {
                post(std::slice::from_mut(x), base + i);
            }
        }
    }
}

fn scale_chunk(chunk: &mut [f32], s: f32) {
    for x in chunk {
        *x *= s;
    }
}

fn dequantize_block(
    bq: &BlockQuant,
    et: ElementType,
    shape: &Shape,
    data: &[u8],
    buffers: &[&[u8]],
    out: &mut [f32],
    n: u64,
) -> Result<()> {
    let w = et.bit_width();
    match bq.kind {
        BlockKind::Nf4 => {
            let mut t = [0f32; 256];
            t[..16].copy_from_slice(&NF4_CODEBOOK);
            let (s1, s2) = (buffers[1], buffers.get(2).copied().unwrap_or(&[]));
            let dq = if bq.block2 == 0 { None } else { table(bq.scale_type, false) };
            let b2 = bq.block2.max(1) as usize;
            for_blocks(
                bq,
                shape,
                out,
                |st, c| decode_small(data, 4, st, c, &t),
                |c, b| {
                    let absmax = match &dq {
                        None => f32_at(s1, b),
                        Some(dt) => dt[s1[b] as usize] * f32_at(s2, b / b2),
                    };
                    scale_chunk(c, absmax);
                },
            );
        }
        BlockKind::Mx => {
            let scales = &buffers[1][..bq.block_count(shape) as usize];
            if let Some(b) = scales.iter().position(|&s| s == 0xFF) {
                bail!(InvalidArgument, "E8M0 scale of block {b} is 0xFF (NaN)");
            }
            let t = table(et, true).ok_or_else(|| err!(InvalidType, "MX cannot store {}", et.name()))?;
            for_blocks(
                bq,
                shape,
                out,
                |st, c| decode_small(data, w, st, c, &t),
                |c, b| scale_chunk(c, e8m0_decode(scales[b])),
            );
        }
        BlockKind::Nvfp4 => {
            let t = MiniFloat::E2M1.table();
            let s8 = MiniFloat::E4M3FN.table();
            let scales = buffers[1];
            let ts = f32_at(buffers[2], 0);
            for_blocks(
                bq,
                shape,
                out,
                |st, c| decode_small(data, 4, st, c, &t),
                |c, b| {
                    let s = s8[scales[b] as usize];
                    for x in c {
                        *x = (*x * s) * ts;
                    }
                },
            );
        }
        BlockKind::GroupAffine => {
            let t = table(et, false).ok_or_else(|| err!(InvalidType, "group affine cannot store {}", et.name()))?;
            let (s, z, st) = (buffers[1], buffers[2], bq.scale_type);
            for_blocks(
                bq,
                shape,
                out,
                |i, c| decode_small(data, w, i, c, &t),
                |c, b| {
                    let (sc, zp) = (param_at(st, s, b), param_at(st, z, b));
                    for x in c {
                        *x = (*x - zp) * sc;
                    }
                },
            );
        }
        BlockKind::GgufQ8_0 => {
            let blocks = data.chunks_exact(Q8_0_BLOCK_BYTES as usize).take((n / 32) as usize);
            for (o, blk) in out.chunks_exact_mut(32).zip(blocks) {
                let d = f16_to_f32(u16::from_le_bytes([blk[0], blk[1]]));
                for (x, &q) in o.iter_mut().zip(&blk[2..]) {
                    *x = f32::from(q as i8) * d;
                }
            }
        }
        BlockKind::GgufQ4_0 => {
            let blocks = data.chunks_exact(Q4_0_BLOCK_BYTES as usize).take((n / 32) as usize);
            for (o, blk) in out.chunks_exact_mut(32).zip(blocks) {
                let d = f16_to_f32(u16::from_le_bytes([blk[0], blk[1]]));
                let (lo, hi) = o.split_at_mut(16);
                for ((l, h), &q) in lo.iter_mut().zip(hi.iter_mut()).zip(&blk[2..]) {
                    *l = (i32::from(q & 15) - 8) as f32 * d;
                    *h = (i32::from(q >> 4) - 8) as f32 * d;
                }
            }
        }
    }
    Ok(())
}

// ---------------------------------------------------------------------------------------------
// Quantization

/// A row-major CPU descriptor for `element_type[shape]` with `quantization`, its buffer table
/// sized exactly (64-byte alignment), at the lowest descriptor version that carries it.
/// [`quantize`] fills buffers of these sizes.
///
/// Errors: every validation error of the quantization kind (see [`BlockQuant::buffer_sizes`])
/// and of [`TensorDescriptor::new`].
pub fn plan(element_type: ElementType, shape: Shape, quantization: Option<Quantization>) -> Result<TensorDescriptor> {
    let mk = |n: u64| BufferHandle::new(n, MIN_BUFFER_ALIGNMENT, DeviceTag::Cpu, SyncMode::ProducerSynced);
    let n = shape.element_count();
    let sizes = match &quantization {
        Some(Quantization::Block(b)) => b.buffer_sizes(element_type, &shape)?,
        Some(Quantization::PerChannelAffine { axis, .. }) => {
            let d = *shape
                .dims()
                .get(*axis as usize)
                .ok_or_else(|| err!(InvalidArgument, "axis {axis} out of range for rank {}", shape.rank()))?;
            let p = d.checked_mul(4).ok_or_else(|| err!(LimitExceeded, "parameter bytes overflow"))?;
            vec![element_type.bytes_for(n).ok_or_else(|| err!(InvalidShape, "byte count overflows"))?, p, p]
        }
        _ => vec![element_type.bytes_for(n).ok_or_else(|| err!(InvalidShape, "byte count overflows"))?],
    };
    let buffers = sizes.into_iter().map(mk).collect::<Result<Vec<_>>>()?;
    let version = crate::min_version_for(element_type, quantization.as_ref());
    TensorDescriptor::new(
        version,
        0,
        element_type,
        shape,
        0,
        LayoutDescriptor::RowMajor,
        buffers,
        quantization,
        None,
        None,
        None,
    )
}

/// Quantizes `input` (float32, storage order, one value per element) into `buffers`, which
/// must match `desc`'s buffer table (as [`plan`] makes it). Buffers are zeroed first, so
/// padding bits are zero.
///
/// Supported: every block kind; per-channel affine with an `int8` stored type (symmetric:
/// `scale[c] = amax_c / 127`, bias 0); and plain or cast descriptors of a float element type
/// (round to nearest even; minifloats saturate). Rules per kind are in docs/spec/descriptor.md
/// §Quantization. Errors: `InvalidArgument` (length or buffer count mismatch, a NaN or ±Inf
/// input for a block kind or int8 per-channel affine, a composite head), `BufferTooSmall`, `Unsupported`
/// (sparse, paged and strided layouts, other combinations), the descriptor's refusals first.
pub fn quantize(desc: &TensorDescriptor, input: &[f32], buffers: &mut [&mut [u8]]) -> Result<()> {
    check_buffers(desc, true, buffers.iter().map(|b| b.len()), buffers.len())?;
    let n = check_len(desc, input.len(), "the input")?;
    for b in buffers.iter_mut() {
        b.fill(0);
    }
    let et = desc.element_type();
    let off = desc.byte_offset() as usize;
    match desc.quantization() {
        Some(Quantization::Block(bq)) => {
            require_finite(input, bq.kind.name())?;
            quantize_block(bq, et, desc.shape(), input, buffers, off)
        }
        Some(Quantization::PerChannelAffine { axis, .. }) if et == ElementType::Int8 => {
            // The block kinds' rule: an integer code cannot carry NaN or ±Inf, and clamping
            // them would be a silent wrong value.
            require_finite(input, "int8 per-channel")?;
            // The storage-order channel stride, as dequantize uses (column-major included).
            let (inner, len) = channel_stride(desc, *axis as usize);
            let (inner, len) = (inner as usize, len as usize);
            // One float per channel: the parameter buffers the caller gave hold 4 bytes each.
            let mut amax = scratch::<f32>(len)?;
            for (i, v) in input.iter().enumerate() {
                let c = (i / inner) % len;
                amax[c] = amax[c].max(v.abs());
            }
            let (data, rest) = buffers.split_at_mut(1);
            for (c, m) in amax.iter().enumerate() {
                let s = if *m > 0.0 && m.is_finite() { m / 127.0 } else { 1.0 };
                rest[0][4 * c..4 * c + 4].copy_from_slice(&s.to_le_bytes());
            }
            for (i, v) in input.iter().enumerate() {
                let c = (i / inner) % len;
                let s = f32_at(rest[0], c);
                data[0][off + i] = rne_f32(v / s).clamp(-127.0, 127.0) as i8 as u8;
            }
            Ok(())
        }
        None | Some(Quantization::Cast { .. }) => {
            let data = &mut buffers[0][off..];
            match et {
                ElementType::Float32 => {
                    for (c, v) in data.chunks_exact_mut(4).zip(input) {
                        c.copy_from_slice(&v.to_le_bytes());
                    }
                }
                ElementType::Float16 | ElementType::Bfloat16 => {
                    for (i, v) in input.iter().enumerate() {
                        put_param(et, data, i, *v);
                    }
                }
                _ => {
                    let f = MiniFloat::of(et)
                        .ok_or_else(|| err!(Unsupported, "cannot quantize float32 to plain {}", et.name()))?;
                    let w = et.bit_width();
                    let e = SatEncoder::new(f);
                    for (i, v) in input.iter().enumerate().take(n) {
                        put_code(data, i as u64, w, e.encode(*v));
                    }
                }
            }
            Ok(())
        }
        Some(q) => bail!(Unsupported, "quantizing to kind {} with {} is not supported", q.code(), et.name()),
    }
}

/// Refuses NaN and ±Inf for a quantization whose codes are integers (every block kind and
/// int8 per-channel affine), naming the first offending element.
fn require_finite(input: &[f32], kind: &str) -> Result<()> {
    match input.iter().position(|v| !v.is_finite()) {
        Some(i) => bail!(InvalidArgument, "{kind} quantization needs finite inputs (element {i} is {})", input[i]),
        None => Ok(()),
    }
}

/// Visits every block: `f(block index, element indices)`.
fn each_block(bq: &BlockQuant, shape: &Shape, n: usize, mut f: impl FnMut(usize, &mut dyn Iterator<Item = usize>)) {
    if n == 0 {
        return;
    }
    let block = bq.block as usize;
    let (a, inner) = if bq.kind == BlockKind::Nf4 {
        (n, 1)
    } else {
        let (_, a, i) = bq.geometry(shape);
        (a as usize, i as usize)
    };
    if inner == 1 {
        for (b, start) in (0..n).step_by(block.max(1)).enumerate() {
            f(b, &mut (start..(start + block).min(n)));
        }
        return;
    }
    let ab = a / block;
    for b in 0..n / block {
        let (o, kb, i) = (b / (ab * inner), (b / inner) % ab, b % inner);
        let first = (o * a + kb * block) * inner + i;
        f(b, &mut (0..block).map(move |k| first + k * inner));
    }
}

/// OCP MX v1.0 §6.3: X = 2^(floor(log2(amax)) − emax_elem), clamped to the E8M0 range.
fn mx_shared_exp(amax: f32, emax_elem: i32) -> i32 {
    if amax == 0.0 {
        return -127;
    }
    crate::lowp::floor_log2(f64::from(amax)) - emax_elem
}

fn quantize_block(
    bq: &BlockQuant,
    et: ElementType,
    shape: &Shape,
    input: &[f32],
    buffers: &mut [&mut [u8]],
    off: usize,
) -> Result<()> {
    let n = input.len();
    let w = et.bit_width();
    let (data, params) = buffers.split_at_mut(1);
    let data = &mut data[0][off..];
    // The element indices of one block: never more than the input holds, whatever the
    // declared block size.
    let mut idx: Vec<usize> = Vec::new();
    idx.try_reserve_exact((bq.block as usize).min(n))
        .map_err(|_| err!(OutOfMemory, "cannot allocate block scratch"))?;
    match bq.kind {
        BlockKind::Nf4 => {
            let mids: [f32; 15] = std::array::from_fn(|i| (NF4_CODEBOOK[i] + NF4_CODEBOOK[i + 1]) / 2.0);
            let nb = n.div_ceil(bq.block as usize);
            let mut absmax = scratch::<f32>(nb)?;
            each_block(bq, shape, n, |b, it| absmax[b] = it.map(|i| input[i].abs()).fold(0.0, f32::max));
            // Double quantization replaces each absmax with its stored approximation first,
            // so the codes are chosen against the scale a reader will use.
            if bq.block2 > 0 {
                let (s1, s2) = params.split_at_mut(1);
                let b2 = bq.block2 as usize;
                let dq = table(bq.scale_type, false).unwrap_or([0.0; 256]);
                for (g, grp) in absmax.chunks_mut(b2).enumerate() {
                    let m = grp.iter().copied().fold(0f32, f32::max);
                    let top = if bq.scale_type == ElementType::Int8 { 127.0 } else { 448.0 };
                    let s = if m > 0.0 { m / top } else { 1.0 };
                    s2[0][4 * g..4 * g + 4].copy_from_slice(&s.to_le_bytes());
                    for (k, x) in grp.iter_mut().enumerate() {
                        let code = if bq.scale_type == ElementType::Int8 {
                            rne_f32(*x / s).clamp(0.0, 127.0) as i8 as u8
                        } else {
                            MiniFloat::E4M3FN.encode(*x / s, true)
                        };
                        s1[0][g * b2 + k] = code;
                        *x = dq[code as usize] * s;
                    }
                }
            } else {
                for (b, m) in absmax.iter().enumerate() {
                    params[0][4 * b..4 * b + 4].copy_from_slice(&m.to_le_bytes());
                }
            }
            each_block(bq, shape, n, |b, it| {
                let m = absmax[b];
                for i in it {
                    let x = if m > 0.0 { input[i] / m } else { 0.0 };
                    let code = mids.iter().filter(|&&t| x > t).count() as u8;
                    put_code(data, i as u64, 4, code);
                }
            });
        }
        BlockKind::Mx => {
            let int8 = et == ElementType::Int8;
            let f = MiniFloat::of(et);
            let emax = f.map_or(0, |f| f.emax());
            let enc = f.map(SatEncoder::new);
            each_block(bq, shape, n, |b, it| {
                idx.clear();
                idx.extend(it);
                let amax = idx.iter().map(|&i| input[i].abs()).fold(0f32, f32::max);
                let e = mx_shared_exp(amax, emax).clamp(-127, 127);
                params[0][b] = e8m0_encode(e);
                let inv = crate::lowp::pow2(-e);
                for &i in &idx {
                    let v = (f64::from(input[i]) * inv) as f32;
                    let code = match &enc {
                        Some(e) => e.encode(v),
                        None if int8 => rne_f32(v * 64.0).clamp(-128.0, 127.0) as i8 as u8,
                        None => 0,
                    };
                    put_code(data, i as u64, w, code);
                }
            });
        }
        BlockKind::Nvfp4 => {
            let (e2m1, e4m3) = (SatEncoder::new(MiniFloat::E2M1), SatEncoder::new(MiniFloat::E4M3FN));
            let s8t = MiniFloat::E4M3FN.table();
            let amax = input.iter().map(|v| v.abs()).fold(0f32, f32::max);
            let ts = if amax > 0.0 { amax / (6.0 * 448.0) } else { 1.0 };
            params[1][..4].copy_from_slice(&ts.to_le_bytes());
            let (s8, _) = params.split_at_mut(1);
            each_block(bq, shape, n, |b, it| {
                idx.clear();
                idx.extend(it);
                let bmax = idx.iter().map(|&i| input[i].abs()).fold(0f32, f32::max);
                let sc = e4m3.encode(bmax / 6.0 / ts);
                s8[0][b] = sc;
                let s = s8t[sc as usize] * ts;
                for &i in &idx {
                    let code = if s > 0.0 { e2m1.encode(input[i] / s) } else { 0 };
                    put_code(data, i as u64, 4, code);
                }
            });
        }
        BlockKind::GroupAffine => {
            let (qmin, qmax) = match et {
                ElementType::Int4 => (-8.0f32, 7.0f32),
                ElementType::Uint4 => (0.0, 15.0),
                ElementType::Int8 => (-128.0, 127.0),
                _ => (0.0, 255.0),
            };
            let signed = qmin < 0.0;
            let st = bq.scale_type;
            let (s, z) = params.split_at_mut(1);
            each_block(bq, shape, n, |b, it| {
                idx.clear();
                idx.extend(it);
                let (lo, hi) = idx.iter().fold((0f32, 0f32), |(l, h), &i| (l.min(input[i]), h.max(input[i])));
                // Signed types: symmetric (zero point 0); unsigned: asymmetric with an integer
                // zero point, so 0.0 is always exact.
                let (mut sc, zp) = if signed {
                    (lo.abs().max(hi) / qmax, 0.0)
                } else {
                    let sc = (hi - lo) / (qmax - qmin);
                    (sc, if sc > 0.0 { rne_f32(qmin - lo / sc).clamp(qmin, qmax) } else { 0.0 })
                };
                if sc == 0.0 || !sc.is_finite() {
                    sc = 1.0;
                }
                let sc = stored_param(st, sc);
                let sc = if sc == 0.0 { 1.0 } else { sc };
                put_param(st, s[0], b, sc);
                put_param(st, z[0], b, zp);
                let zp = stored_param(st, zp);
                for &i in &idx {
                    let q = rne_f32(input[i] / sc + zp).clamp(qmin, qmax) as i32;
                    put_code(data, i as u64, w, q as u8 & if w == 4 { 15 } else { 255 });
                }
            });
        }
        BlockKind::GgufQ8_0 => {
            // llama.cpp's quantize_row_q8_0_ref, bit for bit: codes from the float32 scale's
            // reciprocal (not the stored float16 one), rounded half away from zero (roundf).
            for (blk, v) in data.chunks_exact_mut(Q8_0_BLOCK_BYTES as usize).zip(input.chunks_exact(32)) {
                let amax = v.iter().map(|x| x.abs()).fold(0f32, f32::max);
                let d = amax / 127.0;
                let id = if d != 0.0 { 1.0 / d } else { 0.0 };
                blk[..2].copy_from_slice(&f32_to_f16(d).to_le_bytes());
                for (q, x) in blk[2..].iter_mut().zip(v) {
                    *q = (x * id).round().clamp(-127.0, 127.0) as i8 as u8;
                }
            }
        }
        BlockKind::GgufQ4_0 => {
            for (blk, v) in data.chunks_exact_mut(Q4_0_BLOCK_BYTES as usize).zip(input.chunks_exact(32)) {
                // llama.cpp's quantize_row_q4_0_ref, bit for bit: the first element of largest
                // magnitude maps to −8; codes are trunc(v × (1/d) + 8.5) from the float32 scale,
                // capped at 15.
                let m = v.iter().copied().fold(0f32, |a, x| if x.abs() > a.abs() { x } else { a });
                let d = m / -8.0;
                let id = if d != 0.0 { 1.0 / d } else { 0.0 };
                blk[..2].copy_from_slice(&f32_to_f16(d).to_le_bytes());
                let q = |x: f32| ((x * id + 8.5).trunc().max(0.0) as u8).min(15);
                for j in 0..16 {
                    blk[2 + j] = q(v[j]) | q(v[j + 16]) << 4;
                }
            }
        }
    }
    Ok(())
}

/// [`plan`] then [`quantize`] into freshly allocated buffers.
pub fn quantize_to_vec(
    element_type: ElementType,
    shape: Shape,
    quantization: Option<Quantization>,
    input: &[f32],
) -> Result<(TensorDescriptor, Vec<Vec<u8>>)> {
    let desc = plan(element_type, shape, quantization)?;
    check_len(&desc, input.len(), "the input")?;
    let mut bufs = Vec::with_capacity(desc.buffers().len());
    for b in desc.buffers() {
        let n = usize::try_from(b.byte_size()).map_err(|_| err!(LimitExceeded, "buffer does not fit this platform"))?;
        bufs.push(scratch::<u8>(n)?);
    }
    let mut refs: Vec<&mut [u8]> = bufs.iter_mut().map(|b| b.as_mut_slice()).collect();
    quantize(&desc, input, &mut refs)?;
    Ok((desc, bufs))
}

/// [`dequantize`] into a fresh vector.
pub fn dequantize_to_vec(desc: &TensorDescriptor, buffers: &[&[u8]]) -> Result<Vec<f32>> {
    let n = usize::try_from(desc.shape().element_count())
        .map_err(|_| err!(LimitExceeded, "element count does not fit this platform"))?;
    check_buffers(desc, false, buffers.iter().map(|b| b.len()), buffers.len())?;
    let mut out = scratch::<f32>(n)?;
    dequantize(desc, buffers, &mut out)?;
    Ok(out)
}
