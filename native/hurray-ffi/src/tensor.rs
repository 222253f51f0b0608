//! Tensors: a descriptor plus its buffers in one handle (docs/spec/c-abi.md §Reading and
//! writing a stream).

use std::sync::{Arc, Mutex, OnceLock};

use hurray_core::{PooledBuf, ReadTensor};

use crate::buffer::{BufferInner, HurrayBuffer};
use crate::buffer_list::{HurrayBufferList, ListInner};
use crate::descriptor::{DescInner, HurrayDescriptor};
use crate::handle::{self, opaque_handle};
use crate::panic::{guard, non_null, FfiResult};
use crate::status::*;

/// The two halves of a tensor, both handed out as borrows. A tensor a reader decoded keeps its
/// buffers as read until `hurray_tensor_buffers` first asks for the list: the decode results
/// give each buffer's pointer and spec without it, so a tensor read and destroyed that way costs
/// no list, buffer handles or shared counts (three heap blocks plus one per buffer).
pub struct TensorInner {
    descriptor: Option<Box<HurrayDescriptor>>,
    /// The buffer list handle, made once (at construction, or from `unlisted` on first use).
    list: OnceLock<Box<HurrayBufferList>>,
    /// A read tensor's buffers in buffer-table order until `list` is made from them (then empty).
    unlisted: Mutex<Vec<PooledBuf>>,
}

impl Drop for TensorInner {
    fn drop(&mut self) {
        if let Some(b) = self.list.take() {
            handle::retire(b);
        }
        // Buffers never listed go back to their pool here, before the descriptor is retired, as
        // listed ones do above.
        drop(std::mem::take(self.unlisted.get_mut().unwrap_or_else(|e| e.into_inner())));
        if let Some(d) = self.descriptor.take() {
            handle::retire(d);
        }
    }
}

impl TensorInner {
    pub(crate) fn from_read(t: ReadTensor) -> FfiResult<Self> {
        let encoded = t.descriptor.encode()?;
        Ok(Self::from_read_encoded(t, &encoded))
    }

    /// As `from_read`, with the descriptor's encoding at hand (the stream decoder's frame
    /// bytes; see `DescInner::with_encoding`). The buffer list is made when first asked for.
    pub(crate) fn from_read_encoded(t: ReadTensor, encoded: &[u8]) -> Self {
        Self::from_read_shared(t, encoded, &mut None)
    }

    /// As `from_read_encoded`, sharing the encoding's allocation with the last tensor's when it
    /// is the same (`DescInner::with_shared_encoding`).
    pub(crate) fn from_read_shared(t: ReadTensor, encoded: &[u8], last: &mut Option<Arc<[u8]>>) -> Self {
        let ReadTensor { descriptor, buffers } = t;
        TensorInner {
            descriptor: Some(Box::new(handle::new_borrowed(DescInner::with_shared_encoding(
                descriptor, encoded, last,
            )))),
            list: OnceLock::new(),
            unlisted: Mutex::new(buffers),
        }
    }

    /// A tensor from a descriptor and ready buffers in buffer-table order (the container span
    /// reader's zero-copy buffers).
    pub(crate) fn from_parts(descriptor: hurray_core::TensorDescriptor, buffers: Vec<BufferInner>) -> FfiResult<Self> {
        let slots =
            buffers.into_iter().map(|b| Some(Box::new(handle::new_borrowed::<HurrayBuffer>(Arc::new(b))))).collect();
        Ok(TensorInner {
            descriptor: Some(Box::new(handle::new_borrowed(DescInner::new(descriptor)?))),
            list: OnceLock::from(Box::new(handle::new_borrowed(ListInner(slots)))),
            unlisted: Mutex::new(Vec::new()),
        })
    }

    /// The buffer list handle, made from the buffers as read on first use.
    fn list(&self) -> &HurrayBufferList {
        self.list.get_or_init(|| {
            let bufs = std::mem::take(&mut *self.unlisted.lock().unwrap_or_else(|e| e.into_inner()));
            let declared = self.desc_inner().map_or(&[][..], |d| d.desc.buffers());
            let slots = bufs
                .into_iter()
                .zip(declared)
                .map(|(buf, &h)| {
                    Some(Box::new(handle::new_borrowed::<HurrayBuffer>(Arc::new(BufferInner::owned(buf, h)))))
                })
                .collect();
            Box::new(handle::new_borrowed(ListInner(slots)))
        })
    }
}

/// A tensor: a descriptor plus the buffers it describes. Owned by the caller that received
/// it; `hurray_tensor_destroy` frees both halves at once.
pub struct HurrayTensor {
    pub(crate) shell: crate::handle::Shell<TensorInner>,
}
opaque_handle!(HurrayTensor, TensorInner, 0x4855_5252_544E_3031);

/// Borrows the tensor's descriptor: valid until the tensor is destroyed; do not destroy it.
///
/// # Safety
/// `tensor` a live tensor; `out_descriptor` valid for one write.
#[no_mangle]
pub unsafe extern "C" fn hurray_tensor_descriptor(
    tensor: *const HurrayTensor,
    out_descriptor: *mut *mut HurrayDescriptor,
) -> HurrayStatus {
    guard("hurray_tensor_descriptor", || {
        let t = handle::handle_ref!(tensor)?;
        non_null(out_descriptor, "out_descriptor")?;
        let p: *const HurrayDescriptor = &**t.descriptor.as_ref().expect("live tensor");
        // SAFETY: `out_descriptor` was checked non-NULL above and is valid for one pointer write
        // (this function's contract); the descriptor is borrowed from the tensor, as documented.
        unsafe { *out_descriptor = p as *mut HurrayDescriptor };
        Ok(HURRAY_OK)
    })
}

/// Borrows the tensor's buffer list (element i is buffer i of the descriptor's buffer table):
/// valid until the tensor is destroyed; do not destroy it.
///
/// # Safety
/// `tensor` a live tensor; `out_buffers` valid for one write.
#[no_mangle]
pub unsafe extern "C" fn hurray_tensor_buffers(
    tensor: *const HurrayTensor,
    out_buffers: *mut *mut HurrayBufferList,
) -> HurrayStatus {
    guard("hurray_tensor_buffers", || {
        let t = handle::handle_ref!(tensor)?;
        non_null(out_buffers, "out_buffers")?;
        let p: *const HurrayBufferList = t.list();
        // SAFETY: `out_buffers` was checked non-NULL above and is valid for one pointer write
        // (this function's contract); the list is borrowed from the tensor, as documented.
        unsafe { *out_buffers = p as *mut HurrayBufferList };
        Ok(HURRAY_OK)
    })
}

/// Destroys a tensor, its descriptor and its buffers, and writes NULL to `*tensor`. NULL or
/// `*tensor == NULL` is a no-op.
///
/// # Safety
/// `tensor` NULL or valid for read and write; `*tensor` NULL or a tensor handle.
#[no_mangle]
pub unsafe extern "C" fn hurray_tensor_destroy(tensor: *mut *mut HurrayTensor) -> HurrayStatus {
    guard("hurray_tensor_destroy", || {
        // SAFETY: `tensor` is NULL or valid for a read and a write, and `*tensor` NULL or a handle
        // of this type (this function's contract).
        unsafe { handle::destroy_pp(tensor, "tensor")? };
        Ok(HURRAY_OK)
    })
}

/// Destroys `count` tensors at `tensors[0..count]` (as `hurray_tensor_destroy` each) and writes
/// NULL over each; NULL entries are skipped. A binding that closes many small tensors frees
/// them in one call. Every tensor is destroyed even when one entry is a dead handle (the error
/// then names the first such index). Added in ABI 4 (additive).
///
/// Errors: `NULL_POINTER` (`tensors` with `count > 0`), `USE_AFTER_DESTROY`.
///
/// # Safety
/// `tensors` valid for `count` reads and writes; each entry NULL or a tensor handle.
#[no_mangle]
pub unsafe extern "C" fn hurray_tensor_destroy_many(tensors: *mut *mut HurrayTensor, count: usize) -> HurrayStatus {
    guard("hurray_tensor_destroy_many", || {
        // SAFETY: `tensors` is valid for `count` reads and writes (# Safety); slice_mut_arg rejects NULL with a
        // non-zero count.
        let slots = unsafe { crate::slices::slice_mut_arg(tensors, count, "tensors")? };
        let mut first_error = None;
        for (i, slot) in slots.iter_mut().enumerate() {
            // SAFETY: each entry is NULL or a tensor handle (# Safety); `slot` is a valid, unaliased pointer slot.
            if let Err(e) = unsafe { handle::destroy_pp(slot, "tensor") } {
                first_error.get_or_insert(e.with_prefix(&format!("tensors[{i}]: ")));
            }
        }
        match first_error {
            Some(e) => Err(e),
            None => Ok(HURRAY_OK),
        }
    })
}

impl TensorInner {
    /// The descriptor half.
    pub(crate) fn desc_inner(&self) -> Option<&DescInner> {
        self.descriptor.as_ref().and_then(|d| d.shell.inner.as_ref())
    }

    /// Each buffer's data pointer and spec, in buffer-table order, appended to `out`. The spec
    /// is the descriptor's buffer-table entry as declared (sync mode included), so it agrees
    /// with the descriptor; the buffer handle itself says `SYNC_PRODUCER_SYNCED`
    /// (docs/spec/c-abi.md §Buffer handoff and sync modes).
    pub(crate) fn buffer_views(&mut self, out: &mut Vec<crate::decoder::HurrayDecodedBuffer>) {
        let declared = self.descriptor.as_ref().and_then(|d| d.shell.inner.as_ref()).map(|d| d.desc.buffers());
        if let Some(list) = self.list.get().and_then(|l| l.shell.inner.as_ref()) {
            for (i, slot) in list.0.iter().enumerate() {
                if let Some(b) = slot.as_ref().and_then(|b| b.shell.inner.as_ref()) {
                    let h = declared.and_then(|t| t.get(i)).unwrap_or(&b.handle);
                    out.push(crate::decoder::HurrayDecodedBuffer {
                        data: b.ptr(),
                        spec: crate::buffer::HurrayBufferSpec::from_handle(h),
                    });
                }
            }
            return;
        }
        let Some(declared) = declared else { return };
        let bufs = self.unlisted.get_mut().unwrap_or_else(|e| e.into_inner());
        for (b, h) in bufs.iter().zip(declared) {
            out.push(crate::decoder::HurrayDecodedBuffer {
                data: b.as_ptr() as *mut std::ffi::c_void,
                spec: crate::buffer::HurrayBufferSpec::from_handle(h),
            });
        }
    }
}
