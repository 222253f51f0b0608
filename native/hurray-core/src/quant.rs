//! Block-scaled quantization kinds of descriptor version 2 (NF4, OCP MX, NVFP4, per-group
//! affine, GGUF Q8_0 / Q4_0): their parameters, buffer tables and size validation
//! (docs/spec/descriptor.md §Block quantization kinds). A descriptor's use of a kind is checked
//! in `descriptor/validate.rs`; dequantization and quantization live in [`crate::quantize`].

use crate::error::{bail, err, Result};
use crate::shape::Shape;
use crate::types::ElementType;

/// A version-2 quantization kind. The discriminant is the wire code of the quantization block.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[repr(u8)]
pub enum BlockKind {
    /// 4-bit NormalFloat codes (`uint4`) with one absmax per `block` consecutive row-major
    /// elements; optionally the absmax values are themselves quantized (double quantization).
    Nf4 = 4,
    /// OCP Microscaling v1.0: `block` elements along `axis` share one E8M0 scale.
    Mx = 5,
    /// NVFP4: `float4_e2m1fn` values, one `float8_e4m3fn` scale per `block` elements along
    /// `axis`, and one float32 per-tensor scale.
    Nvfp4 = 6,
    /// GPTQ/AWQ-style per-group affine: `(q − zero[g]) × scale[g]`, groups of `block` along `axis`.
    GroupAffine = 7,
    /// GGUF `Q8_0`: blocks of 32 as llama.cpp stores them (float16 `d`, 32 × int8).
    GgufQ8_0 = 8,
    /// GGUF `Q4_0`: blocks of 32 as llama.cpp stores them (float16 `d`, 16 bytes of nibbles).
    GgufQ4_0 = 9,
}

impl BlockKind {
    /// Decodes a quantization kind code 4…9.
    pub fn from_code(code: u8) -> Option<BlockKind> {
        use BlockKind::*;
        Some(match code {
            4 => Nf4,
            5 => Mx,
            6 => Nvfp4,
            7 => GroupAffine,
            8 => GgufQ8_0,
            9 => GgufQ4_0,
            _ => return None,
        })
    }

    /// Lower-case name: `nf4`, `mx`, `nvfp4`, `group-affine`, `q8_0`, `q4_0`.
    pub fn name(self) -> &'static str {
        match self {
            BlockKind::Nf4 => "nf4",
            BlockKind::Mx => "mx",
            BlockKind::Nvfp4 => "nvfp4",
            BlockKind::GroupAffine => "group-affine",
            BlockKind::GgufQ8_0 => "q8_0",
            BlockKind::GgufQ4_0 => "q4_0",
        }
    }
}

/// Bytes of one GGUF `Q8_0` block (float16 scale + 32 int8).
pub const Q8_0_BLOCK_BYTES: u64 = 34;
/// Bytes of one GGUF `Q4_0` block (float16 scale + 16 bytes of nibbles).
pub const Q4_0_BLOCK_BYTES: u64 = 18;
/// Elements per GGUF block.
pub const GGUF_BLOCK: u32 = 32;

/// The parameters of a version-2 quantization block (24 bytes on the wire).
///
/// | field | NF4 | MX | NVFP4 | group affine | Q8_0 / Q4_0 |
/// |---|---|---|---|---|---|
/// | `scale_type` | `float32`, or `int8`/`float8_e4m3fn` with double quantization | `float8_e8m0fnu` | `float8_e4m3fn` | `float32`/`float16`/`bfloat16` | `float16` |
/// | `axis` | 0 (blocks run over the row-major flattening) | block axis | block axis | group axis | rank − 1 |
/// | `block` | elements per block (even, ≥ 2) | elements per block | elements per block | group size | 32 |
/// | `block2` | absmax values per second-level scale (0: no double quantization) | 0 | 0 | 0 | 0 |
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct BlockQuant {
    /// The kind.
    pub kind: BlockKind,
    /// Logical type after dequantization: `float32`, `float16`, `bfloat16` or `float64`.
    pub dequantized: ElementType,
    /// Element type of the scale buffer (see the table).
    pub scale_type: ElementType,
    /// Block axis.
    pub axis: u32,
    /// Block (group) size in elements; never 0.
    pub block: u32,
    /// NF4 double quantization: absmax values per float32 second-level scale, else 0.
    pub block2: u32,
}

impl BlockQuant {
    /// NF4 with float32 absmax per `block` elements (default 64), dequantizing to float32.
    pub fn nf4(block: u32) -> Self {
        BlockQuant {
            kind: BlockKind::Nf4,
            dequantized: ElementType::Float32,
            scale_type: ElementType::Float32,
            axis: 0,
            block,
            block2: 0,
        }
    }

    /// NF4 with double quantization: absmax stored as `absmax_type` (`int8` or
    /// `float8_e4m3fn`) with one float32 scale per `block2` absmax values.
    pub fn nf4_double(block: u32, absmax_type: ElementType, block2: u32) -> Self {
        BlockQuant { scale_type: absmax_type, block2, ..Self::nf4(block) }
    }

    /// OCP MX with an E8M0 scale per `block` (default 32) elements along `axis`.
    pub fn mx(axis: u32, block: u32) -> Self {
        BlockQuant {
            kind: BlockKind::Mx,
            dequantized: ElementType::Float32,
            scale_type: ElementType::Float8E8m0fnu,
            axis,
            block,
            block2: 0,
        }
    }

    /// NVFP4 with a float8_e4m3fn scale per `block` (default 16) elements along `axis`.
    pub fn nvfp4(axis: u32, block: u32) -> Self {
        BlockQuant { kind: BlockKind::Nvfp4, scale_type: ElementType::Float8E4m3fn, ..Self::mx(axis, block) }
    }

    /// Per-group affine with `scale_type` scales and zero points per `group` elements along `axis`.
    pub fn group_affine(axis: u32, group: u32, scale_type: ElementType) -> Self {
        BlockQuant { kind: BlockKind::GroupAffine, scale_type, ..Self::mx(axis, group) }
    }

    /// GGUF `Q8_0` (or `Q4_0` when `four_bit`) over a tensor of rank `rank` ≥ 1.
    pub fn gguf(four_bit: bool, rank: usize) -> Self {
        BlockQuant {
            kind: if four_bit { BlockKind::GgufQ4_0 } else { BlockKind::GgufQ8_0 },
            dequantized: ElementType::Float32,
            scale_type: ElementType::Float16,
            axis: rank.saturating_sub(1) as u32,
            block: GGUF_BLOCK,
            block2: 0,
        }
    }

    /// The stored element types this kind accepts.
    pub fn allowed_element_types(&self) -> &'static [ElementType] {
        use ElementType::*;
        match self.kind {
            BlockKind::Nf4 | BlockKind::GgufQ4_0 => &[Uint4],
            BlockKind::Mx => &[Float8E4m3fn, Float8E5m2, Float6E2m3fn, Float6E3m2fn, Float4E2m1fn, Int8],
            BlockKind::Nvfp4 => &[Float4E2m1fn],
            BlockKind::GroupAffine => &[Int4, Uint4, Int8, Uint8],
            BlockKind::GgufQ8_0 => &[Int8],
        }
    }

    /// Splits `shape` around the block axis: (outer, axis length, inner) element counts.
    /// Only meaningful for axis kinds after validation.
    pub(crate) fn geometry(&self, shape: &Shape) -> (u64, u64, u64) {
        let dims = shape.dims();
        let a = self.axis as usize;
        let outer = dims[..a].iter().product();
        let inner = dims[a + 1..].iter().product();
        (outer, dims[a], inner)
    }

    /// Number of blocks (groups) for `shape`: ⌈n / block⌉ for NF4, n / block otherwise.
    pub fn block_count(&self, shape: &Shape) -> u64 {
        let n = shape.element_count();
        n.div_ceil(u64::from(self.block))
    }

    /// The exact byte size each buffer of the table needs, in table order, after checking
    /// the parameters against `element_type` and `shape`.
    ///
    /// Errors: `InvalidType` (element, scale or dequantized type not allowed for the kind),
    /// `InvalidArgument` (axis ≥ rank, block 0, odd NF4 block, block not dividing the axis,
    /// GGUF block ≠ 32 or axis ≠ rank − 1, `block2` misuse), `LimitExceeded` (a size
    /// overflows u64).
    pub fn buffer_sizes(&self, et: ElementType, shape: &Shape) -> Result<Vec<u64>> {
        use ElementType::*;
        let rank = shape.rank();
        if !self.allowed_element_types().contains(&et) {
            bail!(InvalidType, "{} quantization cannot store {}", self.kind.name(), et.name());
        }
        if !matches!(self.dequantized, Float32 | Float16 | Bfloat16 | Float64) {
            bail!(InvalidType, "{} quantization cannot dequantize to {}", self.kind.name(), self.dequantized.name());
        }
        if self.block == 0 {
            bail!(InvalidArgument, "{} block size is 0", self.kind.name());
        }
        let scale_ok = match self.kind {
            BlockKind::Nf4 => {
                if self.block2 == 0 {
                    self.scale_type == Float32
                } else {
                    matches!(self.scale_type, Int8 | Float8E4m3fn)
                }
            }
            BlockKind::Mx => self.scale_type == Float8E8m0fnu,
            BlockKind::Nvfp4 => self.scale_type == Float8E4m3fn,
            BlockKind::GroupAffine => matches!(self.scale_type, Float32 | Float16 | Bfloat16),
            BlockKind::GgufQ8_0 | BlockKind::GgufQ4_0 => self.scale_type == Float16,
        };
        if !scale_ok {
            bail!(InvalidType, "{} quantization cannot use {} scales", self.kind.name(), self.scale_type.name());
        }
        if self.kind != BlockKind::Nf4 && self.block2 != 0 {
            bail!(InvalidArgument, "block2 is only used by NF4 double quantization");
        }
        let n = shape.element_count();
        let overflow = || err!(LimitExceeded, "{} buffer size for {:?} overflows u64", self.kind.name(), shape.dims());
        let elem_bytes = et.bytes_for(n).ok_or_else(overflow)?;
        let block = u64::from(self.block);
        if self.kind == BlockKind::Nf4 {
            if self.axis != 0 {
                bail!(InvalidArgument, "NF4 blocks run over the flattened tensor; axis must be 0, not {}", self.axis);
            }
            if !self.block.is_multiple_of(2) {
                bail!(InvalidArgument, "NF4 block size {} must be even (whole bytes per block)", self.block);
            }
            let nb = n.div_ceil(block);
            let mut v = vec![elem_bytes];
            if self.block2 == 0 {
                v.push(nb.checked_mul(4).ok_or_else(overflow)?);
            } else {
                v.push(nb);
                v.push(nb.div_ceil(u64::from(self.block2)).checked_mul(4).ok_or_else(overflow)?);
            }
            return Ok(v);
        }
        if self.axis as usize >= rank {
            bail!(InvalidArgument, "{} axis {} out of range for rank {rank}", self.kind.name(), self.axis);
        }
        let len = shape.dims()[self.axis as usize];
        if !len.is_multiple_of(block) {
            bail!(
                InvalidArgument,
                "{} block size {block} does not divide dimension {} of length {len}",
                self.kind.name(),
                self.axis
            );
        }
        let nb = n / block;
        let scale_bytes = |t: ElementType| t.bytes_for(nb).ok_or_else(overflow);
        Ok(match self.kind {
            BlockKind::Mx => vec![elem_bytes, scale_bytes(Float8E8m0fnu)?],
            BlockKind::Nvfp4 => vec![elem_bytes, scale_bytes(Float8E4m3fn)?, 4],
            BlockKind::GroupAffine => {
                let s = scale_bytes(self.scale_type)?;
                vec![elem_bytes, s, s]
            }
            BlockKind::GgufQ8_0 | BlockKind::GgufQ4_0 => {
                if self.block != GGUF_BLOCK || self.axis as usize != rank - 1 {
                    bail!(InvalidArgument, "GGUF blocks are 32 elements along the last axis");
                }
                let per = if self.kind == BlockKind::GgufQ8_0 { Q8_0_BLOCK_BYTES } else { Q4_0_BLOCK_BYTES };
                vec![nb.checked_mul(per).ok_or_else(overflow)?]
            }
            BlockKind::Nf4 => unreachable!("handled above"),
        })
    }
}
