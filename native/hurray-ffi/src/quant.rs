//! Block quantization, dequantization and quantization over caller-owned buffers
//! (docs/spec/c-abi.md §Quantization; docs/spec/descriptor.md §Block quantization kinds).
//! Additions within C ABI version 4.

use hurray_core::{quantize, BlockKind, BlockQuant, ElementType, Quantization, Shape};

use crate::descriptor::{DescInner, HurrayDescriptor, HurrayDescriptorBuilder};
use crate::handle;
use crate::panic::{guard, non_null, FfiError, FfiResult};
use crate::slices::{slice_arg, slice_mut_arg};
use crate::status::*;

/// NF4: 4-bit NormalFloat codes, an absmax per `block` row-major elements.
pub const HURRAY_QUANT_NF4: u8 = 4;
/// OCP MX: an E8M0 scale per `block` elements along `axis`.
pub const HURRAY_QUANT_MX: u8 = 5;
/// NVFP4: E2M1 values, an E4M3 scale per `block` along `axis`, a float32 tensor scale.
pub const HURRAY_QUANT_NVFP4: u8 = 6;
/// Per-group affine `(q - zero) * scale`, groups of `block` along `axis`.
pub const HURRAY_QUANT_GROUP_AFFINE: u8 = 7;
/// GGUF Q8_0 blocks (34 bytes per 32 elements).
pub const HURRAY_QUANT_GGUF_Q8_0: u8 = 8;
/// GGUF Q4_0 blocks (18 bytes per 32 elements).
pub const HURRAY_QUANT_GGUF_Q4_0: u8 = 9;

/// The parameters of a block quantization kind (4–9), as in the 24-byte quantization block
/// of a version-2 descriptor. All-zero (`kind == HURRAY_QUANT_NONE`) means "not a block kind".
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct HurrayBlockQuant {
    /// `HURRAY_QUANT_NF4` … `HURRAY_QUANT_GGUF_Q4_0`.
    pub kind: u8,
    /// Logical type after dequantization (`HURRAY_DTYPE_FLOAT32`, `FLOAT16`, `BFLOAT16`, `FLOAT64`).
    pub dequantized_type: u8,
    /// Element type of the scale buffer (`HURRAY_DTYPE_*`; see docs/spec/descriptor.md).
    pub scale_type: u8,
    /// Must be 0.
    pub reserved: u8,
    /// Block axis (0 for NF4; rank − 1 for GGUF).
    pub axis: u32,
    /// Elements per block or group; never 0.
    pub block: u32,
    /// NF4 double quantization: absmax values per float32 second-level scale; else 0.
    pub block2: u32,
}

impl HurrayBlockQuant {
    fn from_core(b: &BlockQuant) -> Self {
        HurrayBlockQuant {
            kind: b.kind as u8,
            dequantized_type: b.dequantized.code(),
            scale_type: b.scale_type.code(),
            reserved: 0,
            axis: b.axis,
            block: b.block,
            block2: b.block2,
        }
    }

    fn to_core(self) -> FfiResult<BlockQuant> {
        if self.reserved != 0 {
            return Err(FfiError::new(HURRAY_ERR_INVALID_ARGUMENT, "HurrayBlockQuant.reserved must be 0"));
        }
        let kind = BlockKind::from_code(self.kind).ok_or_else(|| {
            FfiError::new(HURRAY_ERR_INVALID_ARGUMENT, format!("{} is not a block quantization kind (4-9)", self.kind))
        })?;
        Ok(BlockQuant {
            kind,
            dequantized: ElementType::from_code(self.dequantized_type)?,
            scale_type: ElementType::from_code(self.scale_type)?,
            axis: self.axis,
            block: self.block,
            block2: self.block2,
        })
    }
}

/// Copies the block quantization parameters into `*out`; all zero when the descriptor has no
/// block quantization (then `hurray_descriptor_quantization` describes kinds 1–3).
///
/// Errors: `HURRAY_ERR_NULL_POINTER`, `HURRAY_ERR_USE_AFTER_DESTROY`.
///
/// # Safety
/// `descriptor` a live descriptor; `out` valid for one write.
#[no_mangle]
pub unsafe extern "C" fn hurray_descriptor_block_quant(
    descriptor: *const HurrayDescriptor,
    out: *mut HurrayBlockQuant,
) -> HurrayStatus {
    guard("hurray_descriptor_block_quant", || {
        let d = &handle::handle_ref!(descriptor)?.desc;
        let v = match d.quantization() {
            Some(Quantization::Block(b)) => HurrayBlockQuant::from_core(b),
            _ => HurrayBlockQuant::default(),
        };
        handle::put_out!(out, v)?;
        Ok(HURRAY_OK)
    })
}

/// Gives the descriptor being built a block quantization kind (4–9), replacing any block set
/// with `hurray_descriptor_builder_set_quantization`; NULL removes it again. When no buffer
/// was added, `hurray_descriptor_builder_build` makes the exact table the kind needs.
/// The parameters are checked against the shape at build time.
///
/// Errors: `NULL_POINTER` (builder), `USE_AFTER_DESTROY`, `INVALID_ARGUMENT` (kind not 4–9,
/// reserved byte), `INVALID_TYPE` (unknown type codes).
///
/// # Safety
/// `builder` a live builder; `quant` NULL or valid for one read.
#[no_mangle]
pub unsafe extern "C" fn hurray_descriptor_builder_set_block_quant(
    builder: *mut HurrayDescriptorBuilder,
    quant: *const HurrayBlockQuant,
) -> HurrayStatus {
    guard("hurray_descriptor_builder_set_block_quant", || {
        let b = handle::handle_mut!(builder)?;
        b.block = if quant.is_null() {
            None
        } else {
            // SAFETY: non-null and valid for one read (caller's contract).
            Some(unsafe { *quant }.to_core()?)
        };
        Ok(HURRAY_OK)
    })
}

/// Makes a new owned descriptor for a row-major CPU tensor of `element_type` and `dims`
/// (`rank` entries) quantized as `*quant`, with its buffer table sized exactly (read the
/// sizes with `hurray_descriptor_buffer`). `quant` may be NULL for a plain (cast) tensor.
/// Fill the buffers with `hurray_quantize`. Destroy the result with `hurray_descriptor_destroy`.
///
/// Errors: `NULL_POINTER` (`out_descriptor`, or `dims` with `rank > 0`), `INVALID_ARGUMENT`
/// (unknown kind, axis ≥ rank, block 0 or not dividing the axis), `INVALID_TYPE`,
/// `INVALID_SHAPE`, `LIMIT_EXCEEDED` (a buffer size overflows).
///
/// # Safety
/// `dims` valid for `rank` reads; `quant` NULL or valid; `out_descriptor` valid for one write.
#[no_mangle]
pub unsafe extern "C" fn hurray_quantize_plan(
    element_type: u8,
    dims: *const u64,
    rank: usize,
    quant: *const HurrayBlockQuant,
    out_descriptor: *mut *mut HurrayDescriptor,
) -> HurrayStatus {
    guard("hurray_quantize_plan", || {
        non_null(out_descriptor, "out_descriptor")?;
        if rank > hurray_core::MAX_RANK {
            return Err(FfiError::new(
                HURRAY_ERR_INVALID_SHAPE,
                format!("rank {rank} exceeds {}", hurray_core::MAX_RANK),
            ));
        }
        // SAFETY: `dims` is valid for `rank` reads (caller's contract); checked by slice_arg.
        let dims = unsafe { slice_arg(dims, rank, "dims")? }.to_vec();
        let q = if quant.is_null() {
            None
        } else {
            // SAFETY: non-null and valid by the caller's contract.
            Some(Quantization::Block(unsafe { *quant }.to_core()?))
        };
        let d = quantize::plan(ElementType::from_code(element_type)?, Shape::new(dims)?, q)?;
        // SAFETY: `out_descriptor` was checked non-NULL above and is valid for one pointer write (# Safety).
        unsafe { handle::emit(out_descriptor, DescInner::new(d)?) };
        Ok(HURRAY_OK)
    })
}

/// Borrows `count` caller buffers as slices; a NULL pointer is allowed only with length 0.
///
/// # Safety
/// `ptrs` and `lens` valid for `count` reads; each `ptrs[i]` valid for `lens[i]` reads and not
/// written during the call.
unsafe fn slices<'a>(ptrs: *const *const u8, lens: *const usize, count: usize) -> FfiResult<Vec<&'a [u8]>> {
    // SAFETY: both arrays are valid for `count` reads (# Safety); checked by slice_arg.
    let (p, l) = unsafe { (slice_arg(ptrs, count, "buffers")?, slice_arg(lens, count, "buffer_lens")?) };
    // SAFETY: each buffer is valid for its length (# Safety); checked by slice_arg.
    p.iter().zip(l).map(|(&p, &l)| unsafe { slice_arg(p, l, "buffers[i]") }).collect()
}

/// As [`slices`], for buffers the caller lets this call write.
///
/// # Safety
/// `ptrs` and `lens` valid for `count` reads; each `ptrs[i]` valid for `lens[i]` writes, the
/// buffers not overlapping.
unsafe fn slices_mut<'a>(ptrs: *const *mut u8, lens: *const usize, count: usize) -> FfiResult<Vec<&'a mut [u8]>> {
    // SAFETY: both arrays are valid for `count` reads (# Safety); checked by slice_arg.
    let (p, l) = unsafe { (slice_arg(ptrs, count, "buffers")?, slice_arg(lens, count, "buffer_lens")?) };
    // SAFETY: each buffer is writable for its length and unaliased (# Safety); checked by slice_mut_arg.
    p.iter().zip(l).map(|(&p, &l)| unsafe { slice_mut_arg(p, l, "buffers[i]") }).collect()
}

/// Dequantizes a tensor to float32: `buffers[i]` (`buffer_lens[i]` bytes) holds buffer-table
/// entry *i* of `descriptor` (buffer 0 from its start; the byte offset applies). Writes
/// `out_len` floats, which must equal the element count, in storage order. Works for every
/// element type but complex (integers convert numerically, float16/bfloat16/minifloats
/// exactly) and every quantization kind. A sparse or block-paged tensor gives its dense
/// row-major form, exactly as `hurray_sparse_densify` / `hurray_paged_gather` then
/// dequantize. Runs on the calling thread; no callbacks.
///
/// Errors: `NULL_POINTER`, `USE_AFTER_DESTROY`, `INVALID_ARGUMENT` (buffer count, `out_len`,
/// an E8M0 scale 0xFF, a composite head), `BUFFER_TOO_SMALL` (a buffer shorter than the
/// descriptor needs), `UNSUPPORTED` (complex types, strided layouts), `CORRUPT` (a sparse
/// index or page-table entry out of range). The status depends on the descriptor, not on
/// spare buffer bytes.
///
/// # Safety
/// `buffers` and `buffer_lens` valid for `buffer_count` reads, each `buffers[i]` valid for
/// `buffer_lens[i]` reads; `out` valid for `out_len` float writes and not overlapping them.
#[no_mangle]
pub unsafe extern "C" fn hurray_dequantize(
    descriptor: *const HurrayDescriptor,
    buffers: *const *const u8,
    buffer_lens: *const usize,
    buffer_count: usize,
    out: *mut f32,
    out_len: usize,
) -> HurrayStatus {
    guard("hurray_dequantize", || {
        let d = &handle::handle_ref!(descriptor)?.desc;
        // SAFETY: `buffers` and `buffer_lens` are valid for `buffer_count` reads and each buffer for its length
        // (# Safety).
        let bufs = unsafe { slices(buffers, buffer_lens, buffer_count)? };
        // SAFETY: `out` is valid for `out_len` writes and not aliased (# Safety).
        let out = unsafe { out_bytes(out, out_len)? };
        quantize::dequantize(d, &bufs, out)?;
        Ok(HURRAY_OK)
    })
}

/// Dequantizes a tensor to `out_type` (`HURRAY_DTYPE_*`; normally the quantization's
/// `dequantized_type`): like `hurray_dequantize`, but writes element count × the type's width
/// little-endian bytes at the start of `out`, each value rounded once from its float64 (affine,
/// plain, cast) or float32 (block kinds) value: to nearest even for `FLOAT16`, `BFLOAT16`,
/// `FLOAT32`, `FLOAT64`; for the 8- to 64-bit integer types halves towards +infinity, then
/// wrapped modulo 2^bits, NaN and infinities giving 0 (docs/spec/descriptor.md
/// §Dequantization). With `FLOAT32` the bytes are exactly `hurray_dequantize`'s floats. Bytes
/// of `out` past the result are left untouched. Runs on the calling thread; no callbacks.
///
/// Errors: those of `hurray_dequantize`, plus `INVALID_TYPE` (an unknown `out_type` code),
/// `UNSUPPORTED` (`out_type` is `BOOL`, `INT4`, `UINT4`, complex or a minifloat) and
/// `BUFFER_TOO_SMALL` (`out_len` is less than the bytes the result needs).
///
/// # Safety
/// `buffers` and `buffer_lens` valid for `buffer_count` reads, each `buffers[i]` valid for
/// `buffer_lens[i]` reads; `out` valid for `out_len` byte writes and not overlapping them.
#[no_mangle]
pub unsafe extern "C" fn hurray_dequantize_to(
    descriptor: *const HurrayDescriptor,
    buffers: *const *const u8,
    buffer_lens: *const usize,
    buffer_count: usize,
    out_type: u8,
    out: *mut u8,
    out_len: usize,
) -> HurrayStatus {
    guard("hurray_dequantize_to", || {
        let d = &handle::handle_ref!(descriptor)?.desc;
        let target = ElementType::from_code(out_type)?;
        // SAFETY: `buffers` and `buffer_lens` are valid for `buffer_count` reads and each buffer for its length
        // (# Safety).
        let bufs = unsafe { slices(buffers, buffer_lens, buffer_count)? };
        // SAFETY: `out` is valid for `out_len` writes and not aliased (# Safety).
        let out = unsafe { out_bytes(out, out_len)? };
        quantize::dequantize_into(d, &bufs, target, out)?;
        Ok(HURRAY_OK)
    })
}

/// Quantizes `in_len` float32 values (storage order; must equal the element count) into the
/// caller's buffers for `descriptor` (as `hurray_quantize_plan` makes it): `buffers[i]`
/// receives buffer-table entry *i* and is zeroed first. Rules per kind: docs/spec/descriptor.md
/// §Quantization. Runs on the calling thread; no callbacks.
///
/// Errors: `NULL_POINTER`, `USE_AFTER_DESTROY`, `INVALID_ARGUMENT` (counts, a non-finite input
/// for a block kind, a composite head), `BUFFER_TOO_SMALL`, `UNSUPPORTED` (sparse, paged and
/// strided layouts, kinds and types it cannot write).
///
/// # Safety
/// `input` valid for `in_len` reads; `buffers`/`buffer_lens` valid for `buffer_count` reads,
/// each `buffers[i]` valid for `buffer_lens[i]` writes, none overlapping another or `input`.
#[no_mangle]
pub unsafe extern "C" fn hurray_quantize(
    descriptor: *const HurrayDescriptor,
    input: *const f32,
    in_len: usize,
    buffers: *const *mut u8,
    buffer_lens: *const usize,
    buffer_count: usize,
) -> HurrayStatus {
    guard("hurray_quantize", || {
        let d = &handle::handle_ref!(descriptor)?.desc;
        // SAFETY: `input` is valid for `in_len` reads (caller's contract); checked by slice_arg.
        let input = unsafe { slice_arg(input, in_len, "input")? };
        // SAFETY: `buffers` and `buffer_lens` are valid for `buffer_count` reads, each buffer writable for its
        // length and not overlapping the others (# Safety).
        let mut rw = unsafe { slices_mut(buffers, buffer_lens, buffer_count)? };
        quantize::quantize(d, input, &mut rw)?;
        Ok(HURRAY_OK)
    })
}

/// The caller's output bytes: empty when `out_len` is 0 (then `out` may be NULL), else
/// `NULL_POINTER` for a NULL `out`.
///
/// # Safety
/// `out` valid for `out_len` byte writes and not aliased for the returned lifetime.
unsafe fn out_bytes<'a, T>(out: *mut T, out_len: usize) -> FfiResult<&'a mut [T]> {
    // SAFETY: valid for `out_len` writes and not aliased (# Safety); checked by slice_mut_arg.
    unsafe { slice_mut_arg(out, out_len, "out") }
}
