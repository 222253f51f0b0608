//! DLPack 1.x interchange rules (docs/spec/dlpack.md): which descriptors a DLPack tensor can
//! carry, the fields an export writes, and the descriptor an import builds. The `repr(C)`
//! structs themselves live in `hurray-ffi`; this module decides what goes into them.

use crate::error::{bail, err, Result};
use crate::{BufferHandle, DeviceTag, ElementType, LayoutDescriptor, Shape, SyncMode, TensorDescriptor};

/// The DLPack major version written on export and required on import.
pub const DLPACK_MAJOR: u32 = 1;
/// The DLPack minor version written on export (1.1: the fp8/fp6/fp4 type codes).
pub const DLPACK_MINOR: u32 = 1;
/// `DLPACK_FLAG_BITMASK_READ_ONLY`.
pub const DLPACK_FLAG_READ_ONLY: u64 = 1;
/// `DLPACK_FLAG_BITMASK_IS_COPIED`.
pub const DLPACK_FLAG_IS_COPIED: u64 = 2;
/// `kDLCPU`.
pub const DL_CPU: i32 = 1;
/// `kDLCUDA`.
pub const DL_CUDA: i32 = 2;
/// `kDLCUDAHost`.
pub const DL_CUDA_HOST: i32 = 3;
/// `kDLVulkan`.
pub const DL_VULKAN: i32 = 7;
/// `kDLMetal`.
pub const DL_METAL: i32 = 8;
/// `kDLROCM`.
pub const DL_ROCM: i32 = 10;

/// What an export writes into a `DLTensor` besides the data pointer.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DlpackExport {
    /// `device.device_type`.
    pub device_type: i32,
    /// `dtype.code`.
    pub code: u8,
    /// `dtype.bits`.
    pub bits: u8,
    /// The dimensions.
    pub shape: Vec<i64>,
    /// Strides in elements, one per dimension (always present).
    pub strides: Vec<i64>,
    /// `byte_offset` (0 for a tensor of zero elements, whose data pointer is NULL).
    pub byte_offset: u64,
    /// Whether the data pointer is NULL (zero elements).
    pub null_data: bool,
}

/// The DLPack device type of a Hurray device tag (IPC memory is host memory: `kDLCPU`).
pub fn device_type_of(tag: DeviceTag) -> i32 {
    match tag {
        DeviceTag::Cpu | DeviceTag::Ipc => DL_CPU,
        DeviceTag::Cuda => DL_CUDA,
        DeviceTag::CudaHost => DL_CUDA_HOST,
        DeviceTag::Rocm => DL_ROCM,
        DeviceTag::Metal => DL_METAL,
        DeviceTag::Vulkan => DL_VULKAN,
    }
}

/// The Hurray element type of a DLPack `DLDataType`. Errors: `Unsupported` for lanes other
/// than 1 or a (code, bits) pair with no Hurray type.
pub fn element_type_of(code: u8, bits: u8, lanes: u16) -> Result<ElementType> {
    if lanes != 1 {
        bail!(Unsupported, "DLPack vector types (lanes {lanes}) are not supported");
    }
    ElementType::ALL
        .iter()
        .copied()
        .find(|t| {
            let (c, b, _) = t.dlpack();
            c == code && b == bits
        })
        .ok_or_else(|| err!(Unsupported, "DLPack type code {code} with {bits} bits has no Hurray element type"))
}

fn row_major(dims: &[u64]) -> Vec<i64> {
    let mut s = vec![0i64; dims.len()];
    let mut acc: i64 = 1;
    for i in (0..dims.len()).rev() {
        s[i] = acc;
        acc = acc.wrapping_mul(dims[i].max(1) as i64);
    }
    s
}

/// What [`export`] writes for `d` over memory on `memory` (where the buffer's bytes are, which
/// is not always the device the descriptor's buffer table names: a tensor read from a stream or
/// file is in host memory whatever device its producer's table gave), after checking that
/// DLPack can carry it: one buffer, a dense or strided layout, no quantization, not a
/// composite head. Errors: `Unsupported`
/// (quantization, sparse or paged layouts, a composite head, several buffers), `LimitExceeded`
/// (a dimension above `i64::MAX`).
pub fn export(d: &TensorDescriptor, memory: DeviceTag) -> Result<DlpackExport> {
    if let Some(q) = d.quantization() {
        bail!(Unsupported, "DLPack cannot carry quantization (kind {}); dequantize first", q.code());
    }
    if d.is_composite_head() {
        bail!(Unsupported, "a composite head has no data for DLPack");
    }
    if d.buffers().len() != 1 {
        bail!(Unsupported, "DLPack carries one buffer; this tensor has {}", d.buffers().len());
    }
    let dims = d.shape().dims();
    let mut shape = Vec::with_capacity(dims.len());
    for &n in dims {
        shape.push(i64::try_from(n).map_err(|_| err!(LimitExceeded, "dimension {n} above 2^63-1"))?);
    }
    let strides = match d.layout() {
        LayoutDescriptor::RowMajor => row_major(dims),
        LayoutDescriptor::ColumnMajor => {
            let mut s = vec![0i64; dims.len()];
            let mut acc: i64 = 1;
            for (i, &n) in dims.iter().enumerate() {
                s[i] = acc;
                acc = acc.wrapping_mul(n.max(1) as i64);
            }
            s
        }
        LayoutDescriptor::Strided(s) => s.clone(),
        other => bail!(Unsupported, "DLPack carries dense and strided layouts, not {}", other.name()),
    };
    let empty = d.shape().element_count() == 0;
    Ok(DlpackExport {
        device_type: device_type_of(memory),
        code: d.element_type().dlpack().0,
        bits: d.element_type().dlpack().1,
        shape,
        strides,
        byte_offset: if empty { 0 } else { d.byte_offset() },
        null_data: empty,
    })
}

/// The fields of a producer's `DLTensor` an import reads.
#[derive(Clone, Copy, Debug)]
pub struct DlpackImport<'a> {
    /// `device.device_type`.
    pub device_type: i32,
    /// `dtype.code`, `dtype.bits`, `dtype.lanes`.
    pub code: u8,
    /// See `code`.
    pub bits: u8,
    /// See `code`.
    pub lanes: u16,
    /// The dimensions (`ndim` of them).
    pub shape: &'a [i64],
    /// Strides in elements, or `None` for compact row-major.
    pub strides: Option<&'a [i64]>,
    /// `byte_offset`.
    pub byte_offset: u64,
}

/// The descriptor of an imported tensor: row-major when the strides are absent or compact,
/// else strided; one CPU buffer of 64-byte alignment spanning `byte_offset` plus the
/// elements' extent (the buffer's size is the descriptor's buffer 0). Errors: `Unsupported`
/// (device memory, lanes, unknown type), `InvalidShape` (a negative dimension),
/// `InvalidLayout` (strides reaching before the data; strided sub-byte types),
/// `LimitExceeded` (sizes overflowing 64 bits).
pub fn import(f: &DlpackImport<'_>) -> Result<TensorDescriptor> {
    if f.device_type != DL_CPU && f.device_type != DL_CUDA_HOST {
        bail!(Unsupported, "DLPack device type {} is not host memory (kDLCPU or kDLCUDAHost)", f.device_type);
    }
    let ty = element_type_of(f.code, f.bits, f.lanes)?;
    let mut dims = Vec::with_capacity(f.shape.len());
    for &n in f.shape {
        dims.push(u64::try_from(n).map_err(|_| err!(InvalidShape, "DLPack dimension {n} is negative"))?);
    }
    let shape = Shape::new(dims)?;
    let count = shape.element_count();
    let compact = row_major(shape.dims());
    let layout = match f.strides {
        Some(s) if count > 1 && s != compact.as_slice() => LayoutDescriptor::Strided(s.to_vec()),
        _ => LayoutDescriptor::RowMajor,
    };
    let overflow = || err!(LimitExceeded, "DLPack shape, strides or byte_offset overflow a 64-bit byte count");
    let extent: u64 = if count == 0 {
        0
    } else if let LayoutDescriptor::Strided(s) = &layout {
        if ty.is_sub_byte() {
            bail!(InvalidLayout, "packed sub-byte type {} cannot be strided", ty.name());
        }
        let (mut lo, mut hi) = (0i128, 0i128);
        for (&n, &st) in shape.dims().iter().zip(s) {
            let span = i128::from(n - 1) * i128::from(st);
            lo += span.min(0);
            hi += span.max(0);
        }
        let es = i128::from(ty.bit_width() / 8);
        if i128::from(f.byte_offset) + lo * es < 0 {
            bail!(InvalidLayout, "DLPack strides reach before the data");
        }
        u64::try_from((hi + 1) * es).map_err(|_| overflow())?
    } else {
        ty.bytes_for(count).ok_or_else(overflow)?
    };
    let offset = if count == 0 { 0 } else { f.byte_offset };
    // Sizes beyond i64 cannot be addressed (and a hostile byte_offset must not become a
    // buffer that spans the address space).
    let size = offset.checked_add(extent).filter(|&s| s <= i64::MAX as u64).ok_or_else(overflow)?;
    let buffer = BufferHandle::new(size, crate::MIN_BUFFER_ALIGNMENT, DeviceTag::Cpu, SyncMode::ProducerSynced)?;
    TensorDescriptor::new(ty.min_version(), 0, ty, shape, offset, layout, vec![buffer], None, None, None, None)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fields<'a>(code: u8, bits: u8, shape: &'a [i64], strides: Option<&'a [i64]>) -> DlpackImport<'a> {
        DlpackImport { device_type: DL_CPU, code, bits, lanes: 1, shape, strides, byte_offset: 0 }
    }

    #[test]
    fn every_element_type_round_trips_through_its_code() {
        for t in ElementType::ALL {
            let (c, b, l) = t.dlpack();
            assert_eq!(element_type_of(c, b, l).unwrap(), t);
        }
        assert!(element_type_of(2, 32, 4).is_err());
        assert!(element_type_of(99, 8, 1).is_err());
    }

    #[test]
    fn export_writes_row_major_and_column_major_strides() {
        let d = TensorDescriptor::dense(ElementType::Float32, Shape::new(vec![2, 3, 4]).unwrap()).unwrap();
        let e = export(&d, DeviceTag::Cpu).unwrap();
        assert_eq!((e.code, e.bits, e.device_type), (2, 32, DL_CPU));
        // The device is where the memory is, not what the descriptor's table says.
        let cuda = BufferHandle::new(96, 4096, DeviceTag::Cuda, SyncMode::ProducerSynced).unwrap();
        let tagged = crate::DescriptorParts {
            buffers: vec![cuda],
            ..crate::DescriptorParts::new(ElementType::Float32, Shape::new(vec![2, 3, 4]).unwrap())
        }
        .build()
        .unwrap();
        assert_eq!(export(&tagged, DeviceTag::Cpu).unwrap().device_type, DL_CPU);
        assert_eq!(export(&tagged, DeviceTag::Cuda).unwrap().device_type, DL_CUDA);
        assert_eq!(e.shape, vec![2, 3, 4]);
        assert_eq!(e.strides, vec![12, 4, 1]);
        let back = import(&fields(2, 32, &e.shape, Some(&e.strides))).unwrap();
        assert_eq!(back.layout(), &LayoutDescriptor::RowMajor);
        assert_eq!(back.buffers()[0].byte_size(), 96);
    }

    #[test]
    fn import_keeps_strides_and_refuses_hostile_fields() {
        let d = import(&fields(2, 32, &[3, 2], Some(&[1, 3]))).unwrap();
        assert_eq!(d.layout(), &LayoutDescriptor::Strided(vec![1, 3]));
        assert_eq!(d.buffers()[0].byte_size(), 24);
        assert!(import(&fields(2, 32, &[-1], None)).is_err());
        assert!(import(&fields(2, 32, &[4], Some(&[-1]))).is_err());
        assert!(import(&fields(0, 4, &[4, 4], Some(&[1, 4]))).is_err());
        assert!(import(&fields(2, 64, &[i64::MAX, 4], None)).is_err());
        let mut far = fields(2, 32, &[4], None);
        far.byte_offset = i64::MAX as u64 - 4;
        assert_eq!(import(&far).unwrap_err().kind(), crate::ErrorKind::LimitExceeded);
        let mut gpu = fields(2, 32, &[4], None);
        gpu.device_type = DL_CUDA;
        assert_eq!(import(&gpu).unwrap_err().kind(), crate::ErrorKind::Unsupported);
        let empty = import(&fields(2, 32, &[0, 5], Some(&[0, 0]))).unwrap();
        assert_eq!(empty.buffers()[0].byte_size(), 0);
    }
}
