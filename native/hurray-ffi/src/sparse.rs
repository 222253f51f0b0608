//! Sparse and block-paged tensors in the C ABI: descriptor accessors, builder setters, and
//! densify / gather into a caller's buffer (docs/spec/c-abi.md §Sparse, paged and
//! composite tensors). Added within ABI 4.

use std::ffi::c_void;

use hurray_core::paged::PagingInfo;
use hurray_core::sparse::{IndexType, SparseInfo};
use hurray_core::{DeviceTag, TensorDescriptor};

use crate::descriptor::{field_get, HurrayDescriptor};
use crate::handle;
use crate::panic::{guard, non_null, FfiError, FfiResult};
use crate::status::*;
use crate::writer::HurrayIoSlice;

/// The sparse block of a COO, CSR, CSC or BSR descriptor (docs/spec/descriptor.md §Sparse
/// layouts). All zero when the descriptor is not sparse.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct HurraySparse {
    /// `HURRAY_DTYPE_INT32` or `HURRAY_DTYPE_INT64`; 0 when not sparse.
    pub index_type: u8,
    /// 1 when indices are promised sorted without duplicates (checked on read), else 0.
    pub canonical: u8,
    /// Must be 0.
    pub reserved0: u16,
    /// BSR block rows; 0 for the other layouts.
    pub block_rows: u32,
    /// BSR block columns; 0 for the other layouts.
    pub block_cols: u32,
    /// Must be 0.
    pub reserved1: u32,
    /// Stored entries (BSR: stored blocks).
    pub nnz: u64,
}

/// The paging block of a block-paged descriptor (docs/spec/descriptor.md §Block-paged
/// layout). All zero when the descriptor is not paged.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct HurrayPaging {
    /// `HURRAY_DTYPE_INT32` or `HURRAY_DTYPE_INT64` (page-table entries); 0 when not paged.
    pub index_type: u8,
    /// Must be 0.
    pub reserved0: u8,
    /// Must be 0.
    pub reserved1: u16,
    /// Rows of dimension 0 per page (≥ 1).
    pub page_size: u32,
    /// Page-table entries: `ceil(dims[0] / page_size)`.
    pub block_count: u64,
    /// Pages in buffer 0.
    pub page_count: u64,
}

/// A descriptor's composite-membership block (docs/spec/descriptor.md §Composite
/// membership). All zero for a tensor outside any composite.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct HurrayCompositeMembership {
    /// 1 when the descriptor has the block, else 0.
    pub present: u8,
    /// Must be 0.
    pub reserved: u8,
    /// Nesting depth: 0 for a top-level head, parent + 1 for a member.
    pub depth: u16,
    /// Position in the parent (0 at depth 0).
    pub index: u32,
    /// Members this head lists; 0 for a plain member.
    pub member_count: u32,
}

impl HurraySparse {
    fn from_core(s: Option<&SparseInfo>) -> Self {
        match s {
            None => HurraySparse::default(),
            Some(s) => HurraySparse {
                index_type: s.index_type().code(),
                canonical: u8::from(s.is_canonical()),
                reserved0: 0,
                block_rows: s.block_shape()[0],
                block_cols: s.block_shape()[1],
                reserved1: 0,
                nnz: s.nnz(),
            },
        }
    }

    pub(crate) fn to_core(self) -> FfiResult<Option<SparseInfo>> {
        if self.index_type == 0 {
            return Ok(None);
        }
        if self.reserved0 != 0 || self.reserved1 != 0 || self.canonical > 1 {
            return Err(FfiError::new(
                HURRAY_ERR_INVALID_ARGUMENT,
                "HurraySparse reserved fields must be 0 and canonical 0 or 1",
            ));
        }
        let it = index_type(self.index_type)?;
        let c = self.canonical == 1;
        Ok(Some(if self.block_rows == 0 && self.block_cols == 0 {
            SparseInfo::new(it, self.nnz, c)
        } else {
            SparseInfo::bsr(it, self.nnz, self.block_rows, self.block_cols, c)
        }))
    }
}

impl HurrayPaging {
    fn from_core(p: Option<&PagingInfo>) -> Self {
        match p {
            None => HurrayPaging::default(),
            Some(p) => HurrayPaging {
                index_type: p.index_type().code(),
                reserved0: 0,
                reserved1: 0,
                page_size: p.page_size(),
                block_count: p.block_count(),
                page_count: p.page_count(),
            },
        }
    }

    pub(crate) fn to_core(self) -> FfiResult<Option<PagingInfo>> {
        if self.index_type == 0 {
            return Ok(None);
        }
        if self.reserved0 != 0 || self.reserved1 != 0 {
            return Err(FfiError::new(HURRAY_ERR_INVALID_ARGUMENT, "HurrayPaging reserved fields must be 0"));
        }
        Ok(Some(PagingInfo::new(index_type(self.index_type)?, self.page_size, self.block_count, self.page_count)))
    }
}

fn index_type(code: u8) -> FfiResult<IndexType> {
    IndexType::from_code(code).map_err(|_| {
        FfiError::new(HURRAY_ERR_INVALID_ARGUMENT, format!("index type {code} (only HURRAY_DTYPE_INT32 or _INT64)"))
    })
}

/// Stores the descriptor's version (1, or 2 when it has a sparse, paging or composite block)
/// in `*out`. Errors: `NULL_POINTER`, `USE_AFTER_DESTROY`. Added within ABI 4.
///
/// # Safety
/// `descriptor` a live descriptor; `out` valid for one write.
#[no_mangle]
pub unsafe extern "C" fn hurray_descriptor_version(descriptor: *const HurrayDescriptor, out: *mut u16) -> HurrayStatus {
    field_get!("hurray_descriptor_version", descriptor, out, |d| d.version())
}

/// Stores the sparse block in `*out` (all zero unless the layout is COO, CSR, CSC or BSR).
/// Errors: `NULL_POINTER`, `USE_AFTER_DESTROY`. Added within ABI 4.
///
/// # Safety
/// `descriptor` a live descriptor; `out` valid for one write.
#[no_mangle]
pub unsafe extern "C" fn hurray_descriptor_sparse(
    descriptor: *const HurrayDescriptor,
    out: *mut HurraySparse,
) -> HurrayStatus {
    field_get!("hurray_descriptor_sparse", descriptor, out, |d| HurraySparse::from_core(d.sparse()))
}

/// Stores the paging block in `*out` (all zero unless the layout is block-paged).
/// Errors: `NULL_POINTER`, `USE_AFTER_DESTROY`. Added within ABI 4.
///
/// # Safety
/// `descriptor` a live descriptor; `out` valid for one write.
#[no_mangle]
pub unsafe extern "C" fn hurray_descriptor_paging(
    descriptor: *const HurrayDescriptor,
    out: *mut HurrayPaging,
) -> HurrayStatus {
    field_get!("hurray_descriptor_paging", descriptor, out, |d| HurrayPaging::from_core(d.paging()))
}

/// Stores the composite-membership block in `*out` (all zero when absent). A head has
/// `member_count > 0`, no buffers, and is followed on a stream by its members in preorder.
/// Errors: `NULL_POINTER`, `USE_AFTER_DESTROY`. Added within ABI 4.
///
/// # Safety
/// `descriptor` a live descriptor; `out` valid for one write.
#[no_mangle]
pub unsafe extern "C" fn hurray_descriptor_composite(
    descriptor: *const HurrayDescriptor,
    out: *mut HurrayCompositeMembership,
) -> HurrayStatus {
    field_get!("hurray_descriptor_composite", descriptor, out, |d| match d.composite() {
        None => HurrayCompositeMembership::default(),
        Some(c) => HurrayCompositeMembership {
            present: 1,
            reserved: 0,
            depth: c.depth(),
            index: c.index(),
            member_count: c.member_count(),
        },
    })
}

/// Borrows the role of member `index` of a composite head: `*out_bytes` points at `*out_len`
/// UTF-8 bytes (not NUL-terminated), valid while the descriptor lives. Errors:
/// `INVALID_ARGUMENT` (not a head, or `index` ≥ member count), `NULL_POINTER`,
/// `USE_AFTER_DESTROY`. Added within ABI 4.
///
/// # Safety
/// `descriptor` a live descriptor; `out_bytes` and `out_len` valid for one write.
#[no_mangle]
pub unsafe extern "C" fn hurray_descriptor_composite_role(
    descriptor: *const HurrayDescriptor,
    index: u32,
    out_bytes: *mut *const u8,
    out_len: *mut usize,
) -> HurrayStatus {
    guard("hurray_descriptor_composite_role", || {
        let d = &handle::handle_ref!(descriptor)?.desc;
        non_null(out_bytes, "out_bytes")?;
        non_null(out_len, "out_len")?;
        let roles = d.composite().map(|c| c.roles()).unwrap_or(&[]);
        let r = roles.get(index as usize).ok_or_else(|| {
            FfiError::new(
                HURRAY_ERR_INVALID_ARGUMENT,
                format!("member {index} of a descriptor listing {} members", roles.len()),
            )
        })?;
        // SAFETY: `out_bytes` and `out_len` were checked non-NULL above and are valid for one write each (# Safety).
        unsafe {
            *out_bytes = r.as_ptr();
            *out_len = r.len();
        }
        Ok(HURRAY_OK)
    })
}

/// Borrows `count` payload slices, refusing buffers the descriptor places in device memory.
///
/// # Safety
/// `payloads` NULL or valid for `count` slices, each valid for its length for `'a`.
unsafe fn host_views<'a>(
    d: &TensorDescriptor,
    payloads: *const HurrayIoSlice,
    count: usize,
) -> FfiResult<Vec<&'a [u8]>> {
    if count != d.buffers().len() {
        return Err(FfiError::new(
            HURRAY_ERR_INVALID_ARGUMENT,
            format!("{count} payloads for a descriptor with {} buffers", d.buffers().len()),
        ));
    }
    let slices: &[HurrayIoSlice] = if count == 0 {
        &[]
    } else {
        non_null(payloads, "payloads")?;
        // SAFETY: `payloads` is non-NULL (checked just above) and valid for `count` slices (# Safety).
        unsafe { std::slice::from_raw_parts(payloads, count) }
    };
    let mut out = Vec::with_capacity(count);
    for (i, (s, h)) in slices.iter().zip(d.buffers()).enumerate() {
        let tag = h.device_tag();
        if !matches!(tag, DeviceTag::Cpu | DeviceTag::CudaHost | DeviceTag::Ipc) {
            return Err(FfiError::new(
                HURRAY_ERR_INVALID_ARGUMENT,
                format!("buffer {i} is device memory ({tag:?}): copy it to the host first"),
            ));
        }
        if s.len == 0 {
            out.push(&[][..]);
        } else {
            non_null(s.ptr, "payloads[i].ptr")?;
            // SAFETY: the caller gives s.len readable bytes at s.ptr for the call.
            out.push(unsafe { std::slice::from_raw_parts(s.ptr, s.len) });
        }
    }
    Ok(out)
}

/// A core routine writing a tensor's dense form into caller memory.
type IntoCaller = fn(&TensorDescriptor, &[&[u8]], &mut [u8]) -> hurray_core::Result<()>;

/// The shared body of `hurray_sparse_densify` and `hurray_paged_gather`: runs `f` from the
/// payloads into `out`.
///
/// # Safety
/// `descriptor` NULL or a descriptor handle from this library; `payloads` NULL or valid for
/// `count` slices, each valid for its length; `out` valid for `out_len` writable bytes when
/// non-NULL, not overlapping the payloads.
unsafe fn into_caller(
    what: &str,
    descriptor: *const HurrayDescriptor,
    payloads: *const HurrayIoSlice,
    count: usize,
    out: *mut c_void,
    out_len: u64,
    f: IntoCaller,
) -> HurrayStatus {
    guard(what, || {
        let d = &handle::handle_ref!(descriptor)?.desc;
        // SAFETY: `payloads` is valid for `count` slices, each valid for its length (# Safety), as host_views requires.
        let views = unsafe { host_views(d, payloads, count)? };
        let need = d.dense_byte_count();
        if out_len < need {
            return Err(FfiError::new(
                HURRAY_ERR_BUFFER_TOO_SMALL,
                format!("the output needs {need} bytes, out_len is {out_len}"),
            ));
        }
        if need == 0 {
            f(d, &views, &mut [])?;
            return Ok(HURRAY_OK);
        }
        non_null(out, "out")?;
        // SAFETY: the caller gives out_len ≥ need writable bytes at out, not aliasing the
        // buffers (documented).
        let dst = unsafe { std::slice::from_raw_parts_mut(out as *mut u8, need as usize) };
        f(d, &views, dst)?;
        Ok(HURRAY_OK)
    })
}

/// Writes the dense row-major form of a sparse tensor (`descriptor` COO/CSR/CSC/BSR with
/// its `count` payloads in buffer-table order, each at least its declared size; for a read
/// tensor, `hurray_buffer_list_data_ptrs` of `hurray_tensor_buffers` gives the pointers) into the caller's `out` of `out_len` bytes: exactly the dense byte
/// count of the shape is written, zeros where nothing is stored; duplicates of a
/// non-canonical tensor are summed. Indices are checked first.
///
/// Errors: `INVALID_ARGUMENT` (not sparse, or a buffer in device memory),
/// `BUFFER_TOO_SMALL` (`out_len`), `CORRUPT` (an index out of range, a bad indptr),
/// `UNSUPPORTED` (summing duplicates of float16/bfloat16/fp8), `NULL_POINTER`. Added
/// within ABI 4. Thread-safe for distinct outputs.
///
/// # Safety
/// `descriptor` live; `payloads` valid for `count` slices, each readable for its length;
/// `out` valid for `out_len` writable bytes that do not overlap the payloads.
#[no_mangle]
pub unsafe extern "C" fn hurray_sparse_densify(
    descriptor: *const HurrayDescriptor,
    payloads: *const HurrayIoSlice,
    count: usize,
    out: *mut c_void,
    out_len: u64,
) -> HurrayStatus {
    // SAFETY: the caller's pointers meet into_caller's contract: this function's # Safety is the same.
    unsafe {
        into_caller("hurray_sparse_densify", descriptor, payloads, count, out, out_len, hurray_core::sparse::densify)
    }
}

/// Copies a block-paged tensor (`descriptor` with its 2 payloads, pages then page table) into
/// the caller's `out` as a contiguous row-major tensor of its logical shape (exactly the
/// dense byte count is written). Every page-table entry is checked first.
///
/// Errors: `INVALID_ARGUMENT` (not paged, or device memory), `BUFFER_TOO_SMALL`,
/// `CORRUPT` (an entry past the page buffer), `NULL_POINTER`. Added within ABI 4.
///
/// # Safety
/// As for `hurray_sparse_densify`.
#[no_mangle]
pub unsafe extern "C" fn hurray_paged_gather(
    descriptor: *const HurrayDescriptor,
    payloads: *const HurrayIoSlice,
    count: usize,
    out: *mut c_void,
    out_len: u64,
) -> HurrayStatus {
    // SAFETY: the caller's pointers meet into_caller's contract: this function's # Safety is the same.
    unsafe { into_caller("hurray_paged_gather", descriptor, payloads, count, out, out_len, hurray_core::paged::gather) }
}

/// Checks the buffer contents a descriptor cannot vouch for, without writing anything: every
/// sparse index and indptr entry (COO/CSR/CSC/BSR; canonical order when promised) and every
/// page-table entry (block-paged), exactly the checks densify, gather, the readers and the
/// container writer apply. For other layouts only the payload count is checked.
/// For callers that move a sparse or paged tensor into another format without densifying it.
///
/// Errors: `CORRUPT` (the first offending position), `BUFFER_TOO_SMALL` (a payload shorter
/// than declared), `INVALID_ARGUMENT` (payload count, device memory), `NULL_POINTER`. Added
/// within ABI 4. Thread-safe.
///
/// # Safety
/// `descriptor` live; `payloads` valid for `count` slices, each readable for its length.
#[no_mangle]
pub unsafe extern "C" fn hurray_layout_check_contents(
    descriptor: *const HurrayDescriptor,
    payloads: *const HurrayIoSlice,
    count: usize,
) -> HurrayStatus {
    guard("hurray_layout_check_contents", || {
        let d = &handle::handle_ref!(descriptor)?.desc;
        // SAFETY: `payloads` is valid for `count` slices, each valid for its length (# Safety), as host_views requires.
        let views = unsafe { host_views(d, payloads, count)? };
        hurray_core::layouts::check_contents(d, &views)?;
        Ok(HURRAY_OK)
    })
}
