//! Stream readers (docs/spec/c-abi.md §Reading and writing a stream).

use hurray_core::{ReaderOptions, StreamReader};

use crate::handle::{self, opaque_handle};
use crate::panic::{guard, non_null, FfiError, FfiResult};
use crate::status::*;
use crate::tensor::{HurrayTensor, TensorInner};
use crate::transport::{HurrayTransport, Owned};

/// Reader limits (docs/spec/stream.md §Limits). Initialise with `hurray_reader_options_init`,
/// then change fields. A NULL options pointer means the defaults.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct HurrayReaderOptions {
    /// `sizeof(HurrayReaderOptions)` as the caller compiled it (forward compatibility).
    pub struct_size: u32,
    /// Largest accepted rank (default and maximum 32).
    pub max_rank: u32,
    /// Largest accepted encoded descriptor in bytes (default 1 MiB, maximum 16 MiB).
    pub max_descriptor_bytes: u64,
    /// Largest accepted sum of one tensor's buffer sizes in bytes (default 64 GiB).
    pub max_tensor_bytes: u64,
    /// `HURRAY_READER_*` flags.
    pub flags: u32,
    /// Must be 0.
    pub reserved: u32,
}

/// Reader flag: fail with `HURRAY_ERR_CORRUPT` on a stream written without payload checksums.
pub const HURRAY_READER_REQUIRE_PAYLOAD_CHECKSUMS: u32 = 1;

impl HurrayReaderOptions {
    pub(crate) fn defaults() -> Self {
        let d = ReaderOptions::default();
        HurrayReaderOptions {
            struct_size: std::mem::size_of::<HurrayReaderOptions>() as u32,
            max_rank: d.max_rank,
            max_descriptor_bytes: d.max_descriptor_bytes,
            max_tensor_bytes: d.max_tensor_bytes,
            flags: 0,
            reserved: 0,
        }
    }

    pub(crate) fn to_core(self) -> FfiResult<ReaderOptions> {
        if (self.struct_size as usize) < std::mem::size_of::<HurrayReaderOptions>() {
            return Err(FfiError::new(
                HURRAY_ERR_INVALID_ARGUMENT,
                "options.struct_size is smaller than this ABI's HurrayReaderOptions",
            ));
        }
        if self.flags & !HURRAY_READER_REQUIRE_PAYLOAD_CHECKSUMS != 0 || self.reserved != 0 {
            return Err(FfiError::new(HURRAY_ERR_INVALID_ARGUMENT, "unknown reader option flags"));
        }
        Ok(ReaderOptions {
            max_descriptor_bytes: self.max_descriptor_bytes,
            max_rank: self.max_rank,
            max_tensor_bytes: self.max_tensor_bytes,
            require_payload_checksums: self.flags & HURRAY_READER_REQUIRE_PAYLOAD_CHECKSUMS != 0,
            // Not in this struct (growing it is not additive): see
            // hurray_reader_set_buffer_pool_bytes.
            pool_bytes: 0,
        })
    }
}

/// Reads a stream tensor by tensor through a transport's `read`. Owned; one thread at a
/// time; never call it from inside its own transport callbacks.
pub struct HurrayReader {
    pub(crate) shell: crate::handle::Shell<ReaderState>,
}
opaque_handle!(HurrayReader, ReaderState, 0x4855_5252_5244_3031);

/// A stream reader plus the partly assembled composite of `hurray_reader_next_item`
/// (composite.rs); derefs to the stream reader so the flat view is unchanged.
pub(crate) struct ReaderState {
    pub(crate) stream: StreamReader<Owned>,
    pub(crate) items: hurray_core::ItemReader,
    pub(crate) metadata_views: Vec<crate::decoder::HurrayMetadataView>,
}

impl std::ops::Deref for ReaderState {
    type Target = StreamReader<Owned>;
    fn deref(&self) -> &Self::Target {
        &self.stream
    }
}

impl std::ops::DerefMut for ReaderState {
    fn deref_mut(&mut self) -> &mut Self::Target {
        &mut self.stream
    }
}

/// Fills `*out` with the default reader options.
///
/// # Safety
/// `out` valid for one write.
#[no_mangle]
pub unsafe extern "C" fn hurray_reader_options_init(out: *mut HurrayReaderOptions) -> HurrayStatus {
    guard("hurray_reader_options_init", || {
        handle::put_out!(out, HurrayReaderOptions::defaults())?;
        Ok(HURRAY_OK)
    })
}

/// Makes a reader over `*transport` (copied; `read` required). `options` NULL means defaults.
/// On success the reader owns the transport: `release(ctx)` is called once when the reader
/// is destroyed. On failure nothing is taken.
///
/// Errors: `NULL_POINTER` (`transport`, `transport->read`, `out_reader`), `INVALID_ARGUMENT`
/// (options).
///
/// # Safety
/// Pointers valid; callbacks callable with `ctx` until release.
#[no_mangle]
pub unsafe extern "C" fn hurray_reader_new(
    transport: *const HurrayTransport,
    options: *const HurrayReaderOptions,
    out_reader: *mut *mut HurrayReader,
) -> HurrayStatus {
    guard("hurray_reader_new", || {
        crate::os::pages::install();
        non_null(transport, "transport")?;
        non_null(out_reader, "out_reader")?;
        // SAFETY: `transport` was checked non-NULL above and is valid for one read (# Safety).
        let t = unsafe { *transport };
        if t.read.is_none() {
            return Err(FfiError::new(HURRAY_ERR_NULL_POINTER, "transport->read is NULL (a stream reader needs it)"));
        }
        // SAFETY: `options` is non-NULL in this branch and valid for one read (# Safety).
        let opts = if options.is_null() { HurrayReaderOptions::defaults() } else { unsafe { *options } };
        let opts = opts.to_core()?;
        // Validate before taking ownership so a failure releases nothing.
        let mut probe = t;
        probe.release = None;
        drop(StreamReader::new(Owned(probe), opts)?);
        let r = StreamReader::new(Owned(t), opts)?;
        // SAFETY: `out_reader` was checked non-NULL above and is valid for one pointer write (# Safety).
        unsafe {
            handle::emit(
                out_reader,
                ReaderState { stream: r, items: hurray_core::ItemReader::new(), metadata_views: Vec::new() },
            )
        };
        Ok(HURRAY_OK)
    })
}

/// Reads the next tensor into `*out_tensor` (a new owned tensor: destroy it with
/// `hurray_tensor_destroy`). Returns `HURRAY_END_OF_STREAM` (positive; `*out_tensor` = NULL)
/// once the end marker was read, and on every call after.
///
/// Errors (`*out_tensor` = NULL): `HURRAY_ERR_TRANSPORT` — the callback failed having moved
/// nothing; call again to resume mid-tensor. `TRUNCATED` (read returned 0 inside an item or
/// before the end marker), `CORRUPT`, `INVALID_MAGIC`, `VERSION_MISMATCH`, `LIMIT_EXCEEDED`,
/// `UNSUPPORTED`, descriptor validation errors, `OUT_OF_MEMORY`: these are sticky.
///
/// # Safety
/// `reader` a live reader; `out_tensor` valid for one write.
#[no_mangle]
pub unsafe extern "C" fn hurray_reader_next_tensor(
    reader: *mut HurrayReader,
    out_tensor: *mut *mut HurrayTensor,
) -> HurrayStatus {
    guard("hurray_reader_next_tensor", || {
        non_null(out_tensor, "out_tensor")?;
        // SAFETY: `out_tensor` was checked non-NULL above and is valid for one write (# Safety).
        unsafe { *out_tensor = std::ptr::null_mut() };
        let r = handle::handle_mut!(reader)?;
        match r.next_tensor()? {
            None => Ok(HURRAY_END_OF_STREAM),
            Some(t) => {
                // SAFETY: `out_tensor` was checked non-NULL above and is valid for one pointer write (# Safety).
                unsafe { handle::emit(out_tensor, TensorInner::from_read(t)?) };
                Ok(HURRAY_OK)
            }
        }
    })
}

/// Lets the reader reuse the memory of destroyed tensors: keeps up to `max_bytes` bytes of
/// buffer allocations whose tensors were destroyed (`hurray_tensor_destroy`, or the last
/// `hurray_buffer_clone` sharing a buffer destroyed) and hands them to later tensors instead
/// of allocating new memory (docs/spec/stream.md §Buffer pool). A reader has no pool until
/// this is called; `max_bytes == 0` removes it. Callable at any time; takes effect from the
/// next tensor whose buffers are not yet allocated.
///
/// A buffer's memory is reused only after every handle to it is destroyed, so no live tensor
/// ever sees its bytes change; a pointer kept from a destroyed tensor may now point at another
/// tensor's bytes (using it was already undefined behaviour). Reused memory is reused at the
/// same alignment, for a buffer of at least half its size. The pool holds at most `max_bytes`
/// (by allocation size) and at most 64 allocations, oldest freed first; buffers in use are not
/// counted. Destroying the reader frees the pool's memory; buffers of tensors still alive are
/// then freed when those tensors are destroyed.
///
/// Added in ABI 4 (additive, docs/spec/c-abi.md): look it up by name on older libraries.
///
/// Errors: `NULL_POINTER`, `USE_AFTER_DESTROY`.
///
/// # Safety
/// `reader` a live reader (not in use by another thread).
#[no_mangle]
pub unsafe extern "C" fn hurray_reader_set_buffer_pool_bytes(
    reader: *mut HurrayReader,
    max_bytes: u64,
) -> HurrayStatus {
    guard("hurray_reader_set_buffer_pool_bytes", || {
        let r = handle::handle_mut!(reader)?;
        r.set_buffer_pool_bytes(max_bytes);
        Ok(HURRAY_OK)
    })
}

/// Destroys a reader (releasing its transport) and writes NULL to `*reader`. NULL or
/// `*reader == NULL` is a no-op. Tensors already read stay valid.
///
/// # Safety
/// `reader` NULL or valid for read and write.
#[no_mangle]
pub unsafe extern "C" fn hurray_reader_destroy(reader: *mut *mut HurrayReader) -> HurrayStatus {
    guard("hurray_reader_destroy", || {
        // SAFETY: `reader` is NULL or valid for a read and a write; `*reader` is NULL or a handle from this library
        // (# Safety).
        unsafe { handle::destroy_pp(reader, "reader")? };
        Ok(HURRAY_OK)
    })
}
