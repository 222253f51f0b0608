//! DLPack 1.x export and import (docs/spec/dlpack.md): the `repr(C)` structs every DLPack
//! library shares, under Hurray's names so that a C file may include both `hurray.h` and
//! `dlpack.h`. What goes into them is decided by `hurray_core::dlpack`.

use std::ffi::c_void;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::Arc;

use hurray_core::dlpack::{self as core_dlpack, DlpackImport, DLPACK_FLAG_IS_COPIED, DLPACK_FLAG_READ_ONLY};
use hurray_core::{AlignedBuf, PooledBuf};

use crate::buffer::{self, BufferInner, HurrayBuffer};
use crate::descriptor::HurrayDescriptor;
use crate::handle;
use crate::panic::{guard, non_null, FfiError, FfiResult};
use crate::status::*;
use crate::tensor::{HurrayTensor, TensorInner};

/// DLPack major version a Hurray export writes and an import requires.
pub const HURRAY_DLPACK_MAJOR_VERSION: u32 = 1;
/// DLPack minor version a Hurray export writes (1.1).
pub const HURRAY_DLPACK_MINOR_VERSION: u32 = 1;
/// `DLPACK_FLAG_BITMASK_READ_ONLY`: the consumer must not write the data.
pub const HURRAY_DLPACK_FLAG_READ_ONLY: u64 = 1;
/// `DLPACK_FLAG_BITMASK_IS_COPIED`: the data is a copy the producer no longer uses.
pub const HURRAY_DLPACK_FLAG_IS_COPIED: u64 = 2;

/// DLPack's `DLPackVersion`.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default)]
pub struct HurrayDLPackVersion {
    /// Major version (1).
    pub major: u32,
    /// Minor version.
    pub minor: u32,
}

/// DLPack's `DLDevice`.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default)]
pub struct HurrayDLDevice {
    /// `DLDeviceType` (1 CPU, 2 CUDA, 3 CUDA host, 7 Vulkan, 8 Metal, 10 ROCm, …).
    pub device_type: i32,
    /// Device ordinal.
    pub device_id: i32,
}

/// DLPack's `DLDataType`.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default)]
pub struct HurrayDLDataType {
    /// `DLDataTypeCode`.
    pub code: u8,
    /// Bits per element (4 and 6 for packed sub-byte types).
    pub bits: u8,
    /// Vector lanes (1).
    pub lanes: u16,
}

/// DLPack's `DLTensor`.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct HurrayDLTensor {
    /// The data, before `byte_offset` is applied.
    pub data: *mut c_void,
    /// Where the data lives.
    pub device: HurrayDLDevice,
    /// Rank.
    pub ndim: i32,
    /// Element type.
    pub dtype: HurrayDLDataType,
    /// `int64_t[ndim]`.
    pub shape: *mut i64,
    /// `int64_t[ndim]` in elements, or NULL for compact row-major.
    pub strides: *mut i64,
    /// Bytes from `data` to the first element.
    pub byte_offset: u64,
}

/// DLPack's `DLManagedTensorVersioned` (DLPack ≥ 1.0).
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct HurrayDLManagedTensorVersioned {
    /// The DLPack version the producer wrote.
    pub version: HurrayDLPackVersion,
    /// The producer's context; only the deleter reads it.
    pub manager_ctx: *mut c_void,
    /// Frees the tensor; called exactly once by the consumer (NULL: nothing to free).
    pub deleter: Option<unsafe extern "C" fn(managed: *mut HurrayDLManagedTensorVersioned)>,
    /// `HURRAY_DLPACK_FLAG_*` bits.
    pub flags: u64,
    /// The tensor.
    pub dl_tensor: HurrayDLTensor,
}

/// DLPack's `DLManagedTensor` (the unversioned struct of DLPack before 1.0).
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct HurrayDLManagedTensor {
    /// The tensor.
    pub dl_tensor: HurrayDLTensor,
    /// The producer's context; only the deleter reads it.
    pub manager_ctx: *mut c_void,
    /// Frees the tensor; called exactly once by the consumer (NULL: nothing to free).
    pub deleter: Option<unsafe extern "C" fn(managed: *mut HurrayDLManagedTensor)>,
}

/// One allocation per export: the struct first (so the struct's address is the allocation's),
/// then what it points to, and a share of the buffer that keeps the memory alive.
#[repr(C)]
struct Exported<M> {
    managed: M,
    shape: Vec<i64>,
    strides: Vec<i64>,
    _keep: Arc<BufferInner>,
}

/// Moves an export into its allocation and points the struct's `manager_ctx` at it; returns
/// the struct's address (the allocation's, `Exported` being `repr(C)` with the struct first).
fn boxed<M>(
    managed: M,
    shape: Vec<i64>,
    strides: Vec<i64>,
    keep: Arc<BufferInner>,
    ctx: fn(&mut M) -> &mut *mut c_void,
) -> *mut M {
    // The shape and strides the struct points into are the Vecs' heap buffers, which moving the
    // Vecs into the box does not move.
    let p = Box::into_raw(Box::new(Exported { managed, shape, strides, _keep: keep }));
    // SAFETY: `p` is the allocation just made, valid and uniquely owned here.
    unsafe { *ctx(&mut (*p).managed) = p as *mut c_void };
    p as *mut M
}

unsafe extern "C" fn delete_versioned(managed: *mut HurrayDLManagedTensorVersioned) {
    if managed.is_null() {
        return;
    }
    // A deleter must not unwind into its (C) caller; a panicking release is dropped here.
    let _ = catch_unwind(AssertUnwindSafe(|| {
        // SAFETY: `managed` is the first field of a boxed `Exported` made by
        // `hurray_dlpack_export` (repr(C), so the addresses agree), and DLPack calls the
        // deleter exactly once.
        drop(unsafe { Box::from_raw(managed as *mut Exported<HurrayDLManagedTensorVersioned>) });
    }));
}

unsafe extern "C" fn delete_legacy(managed: *mut HurrayDLManagedTensor) {
    if managed.is_null() {
        return;
    }
    let _ = catch_unwind(AssertUnwindSafe(|| {
        // SAFETY: as in `delete_versioned`, for `hurray_dlpack_export_legacy`'s allocation.
        drop(unsafe { Box::from_raw(managed as *mut Exported<HurrayDLManagedTensor>) });
    }));
}

/// A `DLTensor`, the shape and strides it points into, and the share that keeps its data.
type ExportParts = (HurrayDLTensor, Vec<i64>, Vec<i64>, Arc<BufferInner>);

/// The `DLTensor` of `descriptor` over `buffer`, its shape and strides left for the caller
/// to point at, and the buffer share that keeps it alive.
///
/// # Safety
/// `descriptor` and `buffer` NULL or live handles.
unsafe fn export_parts(descriptor: *const HurrayDescriptor, buffer: *const HurrayBuffer) -> FfiResult<ExportParts> {
    let d = handle::handle_ref!(descriptor)?;
    let b = handle::handle_ref!(buffer)?;
    // The device of the memory, which the buffer's handle names: host memory for a read
    // tensor's buffer (whatever device its producer's table gave, see `read_handle`), the
    // caller's word for its own memory (hurray_buffer_from_ptr).
    let e = core_dlpack::export(&d.desc, b.handle.device_tag())?;
    let need = d.desc.buffers()[0].byte_size();
    if b.handle.byte_size() < need {
        return Err(FfiError::new(
            HURRAY_ERR_BUFFER_TOO_SMALL,
            format!("the buffer holds {} bytes; the descriptor needs {need}", b.handle.byte_size()),
        ));
    }
    let mut shape = e.shape;
    let mut strides = e.strides;
    let rank = shape.len();
    let t = HurrayDLTensor {
        data: if e.null_data { std::ptr::null_mut() } else { b.ptr() },
        device: HurrayDLDevice { device_type: e.device_type, device_id: 0 },
        ndim: rank as i32,
        dtype: HurrayDLDataType { code: e.code, bits: e.bits, lanes: 1 },
        shape: if rank == 0 { std::ptr::null_mut() } else { shape.as_mut_ptr() },
        strides: if rank == 0 { std::ptr::null_mut() } else { strides.as_mut_ptr() },
        byte_offset: e.byte_offset,
    };
    Ok((t, shape, strides, Arc::clone(b)))
}

/// Exports a tensor to DLPack 1.x without copying: a new `DLManagedTensorVersioned` whose
/// data is `buffer`'s memory (buffer 0 of `descriptor`'s table; `buffer` is borrowed and may
/// be a read tensor's, from `hurray_buffer_list_get`, or one of `hurray_buffer_from_ptr`).
/// The struct holds a share of the buffer, so the memory stays valid after the tensor or
/// buffer handle is destroyed, until the consumer calls the struct's `deleter` (exactly
/// once, from any thread; it frees the struct, its shape and strides, and drops the share,
/// which may run the buffer's release callback on that thread). Strides are written in
/// elements for every rank above 0; `data` is NULL for zero elements.
/// `flags` may hold `HURRAY_DLPACK_FLAG_READ_ONLY` and `HURRAY_DLPACK_FLAG_IS_COPIED` (the
/// caller's statement that the buffer is a copy made for this export), copied into the struct.
///
/// Errors: `NULL_POINTER`; `UNSUPPORTED` (quantized, sparse, paged, composite head, more than
/// one buffer); `BUFFER_TOO_SMALL` (the buffer is shorter than the table's buffer 0);
/// `INVALID_ARGUMENT` (other flag bits); `LIMIT_EXCEEDED`. Nothing is allocated on failure.
///
/// # Safety
/// `descriptor` and `buffer` live handles; `out_managed` valid for one write.
#[no_mangle]
pub unsafe extern "C" fn hurray_dlpack_export(
    descriptor: *const HurrayDescriptor,
    buffer: *const HurrayBuffer,
    flags: u64,
    out_managed: *mut *mut HurrayDLManagedTensorVersioned,
) -> HurrayStatus {
    guard("hurray_dlpack_export", || {
        non_null(out_managed, "out_managed")?;
        if flags & !(DLPACK_FLAG_READ_ONLY | DLPACK_FLAG_IS_COPIED) != 0 {
            return Err(FfiError::new(HURRAY_ERR_INVALID_ARGUMENT, format!("unknown flags {flags:#x}")));
        }
        // SAFETY: the handles are NULL or live (this function's contract).
        let (dl_tensor, shape, strides, keep) = unsafe { export_parts(descriptor, buffer)? };
        let managed = HurrayDLManagedTensorVersioned {
            version: HurrayDLPackVersion { major: HURRAY_DLPACK_MAJOR_VERSION, minor: HURRAY_DLPACK_MINOR_VERSION },
            manager_ctx: std::ptr::null_mut(),
            deleter: Some(delete_versioned),
            flags,
            dl_tensor,
        };
        let p = boxed(managed, shape, strides, keep, |m| &mut m.manager_ctx);
        // SAFETY: `out_managed` checked non-NULL, valid for one write (contract).
        unsafe { *out_managed = p };
        Ok(HURRAY_OK)
    })
}

/// As `hurray_dlpack_export`, as the unversioned `DLManagedTensor` of DLPack before 1.0 (no
/// version and no flags: a consumer that asked for it gets the same data and ownership).
///
/// # Safety
/// As `hurray_dlpack_export`.
#[no_mangle]
pub unsafe extern "C" fn hurray_dlpack_export_legacy(
    descriptor: *const HurrayDescriptor,
    buffer: *const HurrayBuffer,
    out_managed: *mut *mut HurrayDLManagedTensor,
) -> HurrayStatus {
    guard("hurray_dlpack_export_legacy", || {
        non_null(out_managed, "out_managed")?;
        // SAFETY: the handles are NULL or live (this function's contract).
        let (dl_tensor, shape, strides, keep) = unsafe { export_parts(descriptor, buffer)? };
        let managed =
            HurrayDLManagedTensor { dl_tensor, manager_ctx: std::ptr::null_mut(), deleter: Some(delete_legacy) };
        let p = boxed(managed, shape, strides, keep, |m| &mut m.manager_ctx);
        // SAFETY: as in `hurray_dlpack_export`.
        unsafe { *out_managed = p };
        Ok(HURRAY_OK)
    })
}

unsafe extern "C" fn release_versioned(_data: *mut c_void, ctx: *mut c_void) {
    let m = ctx as *mut HurrayDLManagedTensorVersioned;
    // SAFETY: `ctx` is the producer's struct given to `hurray_dlpack_import`, alive until its
    // deleter runs, which happens here exactly once (the buffer's release runs once).
    if let Some(f) = unsafe { (*m).deleter } {
        // SAFETY: the producer's deleter, called once with its own struct, as DLPack says.
        unsafe { f(m) };
    }
}

unsafe extern "C" fn release_legacy(_data: *mut c_void, ctx: *mut c_void) {
    let m = ctx as *mut HurrayDLManagedTensor;
    // SAFETY: as in `release_versioned`.
    if let Some(f) = unsafe { (*m).deleter } {
        // SAFETY: as in `release_versioned`.
        unsafe { f(m) };
    }
}

/// Reads `t` into a tensor whose one buffer is the producer's memory (released through
/// `release(ctx)`), or an aligned copy when `data` is not 64-byte aligned (then `release` runs
/// before this returns). On error `release` has not run; the caller runs it.
///
/// # Safety
/// `t` a producer's `DLTensor` whose pointers are valid as DLPack says.
unsafe fn import_tensor(
    t: &HurrayDLTensor,
    release: unsafe extern "C" fn(*mut c_void, *mut c_void),
    ctx: *mut c_void,
) -> FfiResult<(TensorInner, bool)> {
    let ndim = t.ndim;
    if !(0..=hurray_core::MAX_RANK as i32).contains(&ndim) {
        return Err(FfiError::new(
            HURRAY_ERR_LIMIT_EXCEEDED,
            format!("DLPack ndim {ndim} outside 0..{}", hurray_core::MAX_RANK),
        ));
    }
    let n = ndim as usize;
    if n > 0 && t.shape.is_null() {
        return Err(FfiError::new(HURRAY_ERR_INVALID_ARGUMENT, format!("DLPack shape is NULL with ndim {n}")));
    }
    // SAFETY: DLPack's shape is `int64_t[ndim]` (non-NULL checked above for ndim > 0).
    let shape = if n == 0 { &[][..] } else { unsafe { std::slice::from_raw_parts(t.shape, n) } };
    // SAFETY: DLPack's strides are NULL or `int64_t[ndim]`.
    let strides = (n > 0 && !t.strides.is_null()).then(|| unsafe { std::slice::from_raw_parts(t.strides, n) });
    let desc = core_dlpack::import(&DlpackImport {
        device_type: t.device.device_type,
        code: t.dtype.code,
        bits: t.dtype.bits,
        lanes: t.dtype.lanes,
        shape,
        strides,
        byte_offset: t.byte_offset,
    })?;
    let h = desc.buffers()[0];
    if t.data.is_null() && h.byte_size() > 0 {
        return Err(FfiError::new(HURRAY_ERR_INVALID_ARGUMENT, "DLPack data is NULL for a non-empty tensor"));
    }
    if !t.data.is_null() && (t.data as usize).is_multiple_of(hurray_core::MIN_BUFFER_ALIGNMENT as usize) {
        // Encode first: `from_parts` fails only there, and must not fail once the buffer holds
        // the release (dropping it would run the deleter, and the caller would run it again).
        desc.encode()?;
        let inner = buffer::external(t.data, h, Some(release), ctx, None)?;
        return Ok((TensorInner::from_parts(desc, vec![inner])?, false));
    }
    // Hurray buffers are at least 64-byte aligned: copy the bytes the descriptor spans.
    let bytes = if h.byte_size() == 0 {
        &[][..]
    } else {
        // SAFETY: a DLPack producer's data spans byte_offset plus the elements' extent, which
        // is exactly the buffer size the core computed.
        unsafe { std::slice::from_raw_parts(t.data as *const u8, h.byte_size() as usize) }
    };
    let copy = AlignedBuf::from_slice(bytes, hurray_core::MIN_BUFFER_ALIGNMENT)?;
    let inner = BufferInner::owned(PooledBuf::unpooled(copy), h);
    Ok((TensorInner::from_parts(desc, vec![inner])?, true))
}

/// Imports a producer's `DLManagedTensorVersioned` as a new owned tensor (descriptor plus one
/// buffer; destroy it with `hurray_tensor_destroy`). The buffer is the producer's memory
/// when `data` is 64-byte aligned (Hurray's minimum alignment): the producer's deleter then
/// runs exactly once, when the last handle sharing the buffer is destroyed, on that thread.
/// Otherwise the bytes are copied into an aligned allocation and the deleter runs before this
/// returns. Strides that are NULL or compact give a row-major descriptor, others a strided
/// one; `flags` (read-only, copied) are the caller's to read before the call.
///
/// Ownership: once both pointers are non-NULL the struct is consumed, whatever the status:
/// on every failure the deleter has run before the call returns (DLPack's rule for a
/// consumer that gives up), so the caller must not call it again.
///
/// Errors: `NULL_POINTER` (`managed` or `out_tensor`; nothing is called), `VERSION_MISMATCH`
/// (major version other than 1), `UNSUPPORTED` (device memory, lanes, an unknown type code),
/// `INVALID_SHAPE`, `INVALID_LAYOUT`, `LIMIT_EXCEEDED` (ndim above 32, a byte count above
/// 2^63 - 1), `INVALID_ARGUMENT` (a NULL shape or data pointer inside the struct where one is
/// needed); on all of these the deleter has run.
///
/// # Safety
/// `managed` a valid DLPack producer's struct; `out_tensor` valid for one write.
#[no_mangle]
pub unsafe extern "C" fn hurray_dlpack_import(
    managed: *mut HurrayDLManagedTensorVersioned,
    out_tensor: *mut *mut HurrayTensor,
) -> HurrayStatus {
    guard("hurray_dlpack_import", || {
        non_null(managed, "managed")?;
        non_null(out_tensor, "out_tensor")?;
        let ctx = managed as *mut c_void;
        let result = (|| {
            // SAFETY: a producer's struct (this function's contract).
            let m = unsafe { &*managed };
            if m.version.major != HURRAY_DLPACK_MAJOR_VERSION {
                return Err(FfiError::new(
                    HURRAY_ERR_VERSION_MISMATCH,
                    format!(
                        "DLPack major version {}, this library reads {HURRAY_DLPACK_MAJOR_VERSION}",
                        m.version.major
                    ),
                ));
            }
            // SAFETY: the producer's DLTensor (contract).
            unsafe { import_tensor(&m.dl_tensor, release_versioned, ctx) }
        })();
        finish_import(result, out_tensor, || {
            // SAFETY: the producer's struct, given up once (see the function's ownership rule).
            unsafe { release_versioned(std::ptr::null_mut(), ctx) }
        })
    })
}

/// As `hurray_dlpack_import` for the unversioned `DLManagedTensor` of DLPack before 1.0
/// (no version to check, no flags).
///
/// # Safety
/// As `hurray_dlpack_import`.
#[no_mangle]
pub unsafe extern "C" fn hurray_dlpack_import_legacy(
    managed: *mut HurrayDLManagedTensor,
    out_tensor: *mut *mut HurrayTensor,
) -> HurrayStatus {
    guard("hurray_dlpack_import_legacy", || {
        non_null(managed, "managed")?;
        non_null(out_tensor, "out_tensor")?;
        let ctx = managed as *mut c_void;
        // SAFETY: the producer's struct and DLTensor (contract).
        let result = unsafe { import_tensor(&(*managed).dl_tensor, release_legacy, ctx) };
        finish_import(result, out_tensor, || {
            // SAFETY: as in `hurray_dlpack_import`.
            unsafe { release_legacy(std::ptr::null_mut(), ctx) }
        })
    })
}

fn finish_import(
    result: FfiResult<(TensorInner, bool)>,
    out_tensor: *mut *mut HurrayTensor,
    give_back: impl FnOnce(),
) -> FfiResult<HurrayStatus> {
    match result {
        Ok((inner, copied)) => {
            if copied {
                give_back();
            }
            // SAFETY: `out_tensor` checked non-NULL by the caller, valid for one write.
            unsafe { handle::emit(out_tensor, inner) };
            Ok(HURRAY_OK)
        }
        Err(e) => {
            give_back();
            Err(e)
        }
    }
}
