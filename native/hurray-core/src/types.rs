//! Element types, device tags and sync modes: the one-byte enumerations of the format
//! (docs/spec/descriptor.md §Codes).

use crate::error::{bail, Result};

/// The element type (dtype) of a tensor. The discriminant is the wire code.
///
/// Sub-byte types (`Int4`, `Uint4`, `Float4E2m1fn`: 4 bits; `Float6E2m3fn`, `Float6E3m2fn`:
/// 6 bits) form one little-endian bit stream: element *i* occupies bits `[w·i, w·i + w)`,
/// bit *k* of the stream being bit `k mod 8` of byte `k / 8`. For 4-bit types that puts the
/// lower flattened index in the low nibble. Padding bits after the last element are zero.
/// The byte count is `ceil(elements · w / 8)`.
///
/// Codes 0–18 are descriptor version 1; codes 19–25 need descriptor version 2.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[repr(u8)]
pub enum ElementType {
    Bool = 0,
    Int8 = 1,
    Int16 = 2,
    Int32 = 3,
    Int64 = 4,
    Uint8 = 5,
    Uint16 = 6,
    Uint32 = 7,
    Uint64 = 8,
    Float16 = 9,
    Bfloat16 = 10,
    Float32 = 11,
    Float64 = 12,
    /// Two float32: real then imaginary.
    Complex64 = 13,
    /// Two float64: real then imaginary.
    Complex128 = 14,
    /// OCP FP8 E4M3, finite-only (no infinities; 0x7F/0xFF are NaN).
    Float8E4m3fn = 15,
    /// OCP FP8 E5M2 (IEEE-like, with infinities).
    Float8E5m2 = 16,
    /// Signed 4-bit two's complement, packed two per byte.
    Int4 = 17,
    /// Unsigned 4-bit, packed two per byte.
    Uint4 = 18,
    /// FP8 E4M3 with bias 8, no infinities, no negative zero; `0x80` is NaN. (version 2)
    Float8E4m3fnuz = 19,
    /// FP8 E5M2 with bias 16, no infinities, no negative zero; `0x80` is NaN. (version 2)
    Float8E5m2fnuz = 20,
    /// FP8 E3M4 with bias 3, IEEE-style infinities and NaN. (version 2)
    Float8E3m4 = 21,
    /// OCP FP6 E2M3, finite only, 6 bits packed. (version 2)
    Float6E2m3fn = 22,
    /// OCP FP6 E3M2, finite only, 6 bits packed. (version 2)
    Float6E3m2fn = 23,
    /// OCP FP4 E2M1, finite only, packed two per byte like `Int4`. (version 2)
    Float4E2m1fn = 24,
    /// OCP E8M0 scale: unsigned exponent, value 2^(code − 127), `0xFF` NaN, no zero. (version 2)
    Float8E8m0fnu = 25,
}

impl ElementType {
    /// Every element type, in code order.
    pub const ALL: [ElementType; 26] = [
        ElementType::Bool,
        ElementType::Int8,
        ElementType::Int16,
        ElementType::Int32,
        ElementType::Int64,
        ElementType::Uint8,
        ElementType::Uint16,
        ElementType::Uint32,
        ElementType::Uint64,
        ElementType::Float16,
        ElementType::Bfloat16,
        ElementType::Float32,
        ElementType::Float64,
        ElementType::Complex64,
        ElementType::Complex128,
        ElementType::Float8E4m3fn,
        ElementType::Float8E5m2,
        ElementType::Int4,
        ElementType::Uint4,
        ElementType::Float8E4m3fnuz,
        ElementType::Float8E5m2fnuz,
        ElementType::Float8E3m4,
        ElementType::Float6E2m3fn,
        ElementType::Float6E3m2fn,
        ElementType::Float4E2m1fn,
        ElementType::Float8E8m0fnu,
    ];

    /// The lowest descriptor version that may carry this type: 1 for codes 0–18, else 2.
    pub fn min_version(self) -> u16 {
        if self.code() <= 18 {
            1
        } else {
            2
        }
    }

    /// The DLPack 1.1 `DLDataType` (`code`, `bits`, `lanes` = 1) of this type.
    /// DLPack codes: 0 int, 1 uint, 2 float, 4 bfloat, 5 complex, 6 bool, 7 float8_e3m4,
    /// 10 float8_e4m3fn, 11 float8_e4m3fnuz, 12 float8_e5m2, 13 float8_e5m2fnuz,
    /// 14 float8_e8m0fnu, 15 float6_e2m3fn, 16 float6_e3m2fn, 17 float4_e2m1fn.
    pub fn dlpack(self) -> (u8, u8, u16) {
        use ElementType::*;
        let code = match self {
            Int8 | Int16 | Int32 | Int64 | Int4 => 0,
            Uint8 | Uint16 | Uint32 | Uint64 | Uint4 => 1,
            Float16 | Float32 | Float64 => 2,
            Bfloat16 => 4,
            Complex64 | Complex128 => 5,
            Bool => 6,
            Float8E3m4 => 7,
            Float8E4m3fn => 10,
            Float8E4m3fnuz => 11,
            Float8E5m2 => 12,
            Float8E5m2fnuz => 13,
            Float8E8m0fnu => 14,
            Float6E2m3fn => 15,
            Float6E3m2fn => 16,
            Float4E2m1fn => 17,
        };
        (code, self.bit_width() as u8, 1)
    }

    /// True for the integer types (signed and unsigned, packed or not).
    pub fn is_integer(self) -> bool {
        use ElementType::*;
        matches!(self, Int4 | Uint4 | Int8 | Uint8 | Int16 | Uint16 | Int32 | Uint32 | Int64 | Uint64)
    }

    /// Decodes a wire code; unknown codes are `InvalidType`.
    pub fn from_code(code: u8) -> Result<Self> {
        match Self::ALL.get(code as usize) {
            Some(t) => Ok(*t),
            None => bail!(InvalidType, "unknown element type code {code}"),
        }
    }

    /// The wire code.
    pub fn code(self) -> u8 {
        self as u8
    }

    /// Storage width of one element in bits (4 for the packed types, 8 for bool).
    pub fn bit_width(self) -> u32 {
        use ElementType::*;
        match self {
            Int4 | Uint4 | Float4E2m1fn => 4,
            Float6E2m3fn | Float6E3m2fn => 6,
            Bool | Int8 | Uint8 | Float8E4m3fn | Float8E5m2 | Float8E4m3fnuz | Float8E5m2fnuz | Float8E3m4
            | Float8E8m0fnu => 8,
            Int16 | Uint16 | Float16 | Bfloat16 => 16,
            Int32 | Uint32 | Float32 => 32,
            Int64 | Uint64 | Float64 | Complex64 => 64,
            Complex128 => 128,
        }
    }

    /// True for the packed 4- and 6-bit types.
    pub fn is_sub_byte(self) -> bool {
        self.bit_width() < 8
    }

    /// Lower-case canonical name, e.g. `float32`, `float8_e4m3fn`.
    pub fn name(self) -> &'static str {
        use ElementType::*;
        match self {
            Bool => "bool",
            Int8 => "int8",
            Int16 => "int16",
            Int32 => "int32",
            Int64 => "int64",
            Uint8 => "uint8",
            Uint16 => "uint16",
            Uint32 => "uint32",
            Uint64 => "uint64",
            Float16 => "float16",
            Bfloat16 => "bfloat16",
            Float32 => "float32",
            Float64 => "float64",
            Complex64 => "complex64",
            Complex128 => "complex128",
            Float8E4m3fn => "float8_e4m3fn",
            Float8E5m2 => "float8_e5m2",
            Int4 => "int4",
            Uint4 => "uint4",
            Float8E4m3fnuz => "float8_e4m3fnuz",
            Float8E5m2fnuz => "float8_e5m2fnuz",
            Float8E3m4 => "float8_e3m4",
            Float6E2m3fn => "float6_e2m3fn",
            Float6E3m2fn => "float6_e3m2fn",
            Float4E2m1fn => "float4_e2m1fn",
            Float8E8m0fnu => "float8_e8m0fnu",
        }
    }

    /// Bytes needed to store `elements` elements densely, or `None` on u64 overflow.
    pub fn bytes_for(self, elements: u64) -> Option<u64> {
        if self.is_sub_byte() {
            // ceil(elements * w / 8) without overflowing the intermediate product.
            let w = u64::from(self.bit_width());
            let bits_hi = (elements / 8) * w;
            let rem_bits = (elements % 8) * w;
            bits_hi.checked_add(rem_bits.div_ceil(8))
        } else {
            elements.checked_mul(u64::from(self.bit_width() / 8))
        }
    }
}

/// Where a buffer's memory lives. The discriminant is the wire code. Every tag other than
/// `Cpu` requires an alignment of at least [`crate::DEVICE_BUFFER_ALIGNMENT`] (4096).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[repr(u8)]
pub enum DeviceTag {
    /// Ordinary host memory.
    Cpu = 0,
    /// CUDA device memory.
    Cuda = 1,
    /// CUDA pinned (page-locked) host memory.
    CudaHost = 2,
    /// ROCm/HIP device memory.
    Rocm = 3,
    /// Metal buffer.
    Metal = 4,
    /// Vulkan device memory.
    Vulkan = 5,
    /// Host memory shared between processes (IPC, e.g. a shared mapping).
    Ipc = 6,
}

impl DeviceTag {
    /// Decodes a wire code; unknown codes are `InvalidArgument`.
    pub fn from_code(code: u8) -> Result<Self> {
        use DeviceTag::*;
        Ok(match code {
            0 => Cpu,
            1 => Cuda,
            2 => CudaHost,
            3 => Rocm,
            4 => Metal,
            5 => Vulkan,
            6 => Ipc,
            _ => bail!(InvalidArgument, "unknown device tag {code}"),
        })
    }

    /// The wire code.
    pub fn code(self) -> u8 {
        self as u8
    }

    /// The smallest alignment a buffer with this tag may declare: 64 for CPU, 4096 otherwise.
    pub fn min_alignment(self) -> u64 {
        match self {
            DeviceTag::Cpu => crate::MIN_BUFFER_ALIGNMENT,
            _ => crate::DEVICE_BUFFER_ALIGNMENT,
        }
    }
}

/// How the producer synchronised its device writes before handoff (docs/spec/descriptor.md §Sync
/// modes, docs/spec/c-abi.md §Buffer handoff and sync modes). Wire codes 0x03–0xFE are reserved and
/// 0xFF is invalid: both are rejected with `InvalidSyncMode`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Default)]
#[repr(u8)]
pub enum SyncMode {
    /// 0x00: the producer waited on the host; the safe default and the version-1 behaviour.
    #[default]
    ProducerSynced = 0x00,
    /// 0x01: an event handle travels with the handoff; the consumer stream-waits on it.
    Event = 0x01,
    /// 0x02: the consumer supplies its stream and the producer orders onto it.
    ConsumerStream = 0x02,
}

impl SyncMode {
    /// Decodes a wire code; 0x03–0xFF are `InvalidSyncMode`.
    pub fn from_code(code: u8) -> Result<Self> {
        match code {
            0x00 => Ok(SyncMode::ProducerSynced),
            0x01 => Ok(SyncMode::Event),
            0x02 => Ok(SyncMode::ConsumerStream),
            0xFF => bail!(InvalidSyncMode, "sync_mode 0xFF is the invalid value"),
            _ => bail!(InvalidSyncMode, "sync_mode {code:#04x} is reserved"),
        }
    }

    /// The wire code.
    pub fn code(self) -> u8 {
        self as u8
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn element_codes_round_trip() {
        for (i, t) in ElementType::ALL.iter().enumerate() {
            assert_eq!(t.code() as usize, i);
            assert_eq!(ElementType::from_code(t.code()).unwrap(), *t);
        }
        assert!(ElementType::from_code(26).is_err());
        assert!(ElementType::from_code(255).is_err());
    }

    #[test]
    fn sub_byte_bytes() {
        assert_eq!(ElementType::Int4.bytes_for(0), Some(0));
        assert_eq!(ElementType::Int4.bytes_for(3), Some(2));
        assert_eq!(ElementType::Uint4.bytes_for(4), Some(2));
        assert_eq!(ElementType::Float32.bytes_for(u64::MAX), None);
        assert_eq!(ElementType::Complex128.bytes_for(2), Some(32));
        assert_eq!(ElementType::Float6E2m3fn.bytes_for(4), Some(3));
        assert_eq!(ElementType::Float6E3m2fn.bytes_for(5), Some(4));
        assert_eq!(ElementType::Float6E3m2fn.bytes_for(1), Some(1));
        assert_eq!(ElementType::Float4E2m1fn.bytes_for(u64::MAX), Some(u64::MAX / 2 + 1));
        assert_eq!(ElementType::Float6E2m3fn.bytes_for(u64::MAX), Some((u64::MAX as u128 * 6).div_ceil(8) as u64));
    }

    #[test]
    fn sync_mode_ranges() {
        assert_eq!(SyncMode::from_code(2).unwrap(), SyncMode::ConsumerStream);
        for c in 3..=255u8 {
            assert_eq!(SyncMode::from_code(c).unwrap_err().kind(), crate::ErrorKind::InvalidSyncMode);
        }
    }
}
