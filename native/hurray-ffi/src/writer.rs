//! Stream writers (docs/spec/c-abi.md §Reading and writing a stream).

use hurray_core::{StreamWriter, WriterOptions};

use crate::descriptor::HurrayDescriptor;
use crate::handle::{self, opaque_handle};
use crate::panic::{guard, non_null, FfiError, FfiResult};
use crate::slices::slice_arg;
use crate::status::*;
use crate::transport::{HurrayTransport, Owned};

/// A borrowed byte range: `len` bytes at `ptr` (`ptr` may be NULL when `len` is 0).
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct HurrayIoSlice {
    /// First byte.
    pub ptr: *const u8,
    /// Length in bytes.
    pub len: usize,
}

/// Writer settings. Initialise with `hurray_writer_options_init`; NULL means defaults.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct HurrayWriterOptions {
    /// `sizeof(HurrayWriterOptions)` as the caller compiled it.
    pub struct_size: u32,
    /// `HURRAY_WRITER_*` flags.
    pub flags: u32,
}

/// Writer flag: follow every payload with its CRC32C.
pub const HURRAY_WRITER_PAYLOAD_CHECKSUMS: u32 = 1;

impl HurrayWriterOptions {
    pub(crate) fn defaults() -> Self {
        HurrayWriterOptions { struct_size: std::mem::size_of::<HurrayWriterOptions>() as u32, flags: 0 }
    }
    pub(crate) fn to_core(self) -> FfiResult<WriterOptions> {
        if (self.struct_size as usize) < std::mem::size_of::<HurrayWriterOptions>() {
            return Err(FfiError::new(
                HURRAY_ERR_INVALID_ARGUMENT,
                "options.struct_size is smaller than this ABI's HurrayWriterOptions",
            ));
        }
        if self.flags & !HURRAY_WRITER_PAYLOAD_CHECKSUMS != 0 {
            return Err(FfiError::new(HURRAY_ERR_INVALID_ARGUMENT, "unknown writer option flags"));
        }
        Ok(WriterOptions { payload_checksums: self.flags & HURRAY_WRITER_PAYLOAD_CHECKSUMS != 0 })
    }
}

/// Writes a stream through a transport's `write`. Owned; one thread at a time.
pub struct HurrayWriter {
    pub(crate) shell: crate::handle::Shell<StreamWriter<Owned>>,
}
opaque_handle!(HurrayWriter, StreamWriter<Owned>, 0x4855_5252_5752_3031);

/// Fills `*out` with the default writer options.
///
/// # Safety
/// `out` valid for one write.
#[no_mangle]
pub unsafe extern "C" fn hurray_writer_options_init(out: *mut HurrayWriterOptions) -> HurrayStatus {
    guard("hurray_writer_options_init", || {
        handle::put_out!(out, HurrayWriterOptions::defaults())?;
        Ok(HURRAY_OK)
    })
}

/// Makes a writer over `*transport` (copied; `write` required). Nothing is written yet. On
/// success the writer owns the transport (`release(ctx)` once, at destroy); on failure
/// nothing is taken. Errors: `NULL_POINTER`, `INVALID_ARGUMENT` (options).
///
/// # Safety
/// Pointers valid; callbacks callable with `ctx` until release.
#[no_mangle]
pub unsafe extern "C" fn hurray_writer_new(
    transport: *const HurrayTransport,
    options: *const HurrayWriterOptions,
    out_writer: *mut *mut HurrayWriter,
) -> HurrayStatus {
    guard("hurray_writer_new", || {
        non_null(transport, "transport")?;
        non_null(out_writer, "out_writer")?;
        // SAFETY: `transport` was checked non-NULL above and is valid for one read (# Safety).
        let t = unsafe { *transport };
        if t.write.is_none() {
            return Err(FfiError::new(HURRAY_ERR_NULL_POINTER, "transport->write is NULL (a writer needs it)"));
        }
        // SAFETY: `options` is non-NULL in this branch and valid for one read (# Safety).
        let opts = if options.is_null() { HurrayWriterOptions::defaults() } else { unsafe { *options } };
        // Validate before wrapping the transport: dropping an `Owned` calls `release`, and a
        // failed call must release nothing.
        let opts = opts.to_core()?;
        let w = StreamWriter::new(Owned(t), opts);
        // SAFETY: `out_writer` was checked non-NULL above and is valid for one pointer write (# Safety).
        unsafe { handle::emit(out_writer, w) };
        Ok(HURRAY_OK)
    })
}

/// Writes one tensor: `payloads[i]` (borrowed, not retained after the call) is buffer `i` of
/// the descriptor's buffer table and must be exactly its byte size; `count` must equal the
/// buffer count. The tensor is entirely on the wire when this returns `HURRAY_OK`.
///
/// Errors: `NULL_POINTER`, `INVALID_ARGUMENT` (count above 64 or not the buffer count, a
/// payload too long or longer than the address space), `BUFFER_TOO_SMALL` (payload too short), `INVALID_STATE` (after finish), `POISONED`,
/// `TRANSPORT` / `SINK_CLOSED`: if no byte of the item was written the call can be retried,
/// otherwise the writer is now poisoned.
///
/// # Safety
/// `writer` live; `descriptor` live; `payloads` valid for `count` slices, each valid for its
/// length.
#[no_mangle]
pub unsafe extern "C" fn hurray_writer_write_tensor(
    writer: *mut HurrayWriter,
    descriptor: *const HurrayDescriptor,
    payloads: *const HurrayIoSlice,
    count: usize,
) -> HurrayStatus {
    guard("hurray_writer_write_tensor", || {
        let w = handle::handle_mut!(writer)?;
        let d = handle::handle_ref!(descriptor)?;
        // Bound `count` before building any slice from it (as the file writer does).
        if count > hurray_core::MAX_BUFFERS {
            return Err(FfiError::new(
                HURRAY_ERR_INVALID_ARGUMENT,
                format!("{count} payloads: a tensor has at most {} buffers", hurray_core::MAX_BUFFERS),
            ));
        }
        // SAFETY: the caller guarantees `payloads` is valid for `count` slices, each for its length.
        let (_, parts) = unsafe { payload_parts(payloads, count)? };
        w.write_encoded(&d.desc, d.encoded(), &parts)?;
        Ok(HURRAY_OK)
    })
}

/// Writes the end-of-stream marker. Idempotent after success; a reader sees
/// `HURRAY_END_OF_STREAM` after it. Errors as for `hurray_writer_write_tensor`.
///
/// # Safety
/// `writer` live.
#[no_mangle]
pub unsafe extern "C" fn hurray_writer_finish(writer: *mut HurrayWriter) -> HurrayStatus {
    guard("hurray_writer_finish", || {
        handle::handle_mut!(writer)?.finish()?;
        Ok(HURRAY_OK)
    })
}

/// Destroys a writer and writes NULL to `*writer`. If the writer is neither finished nor
/// poisoned, the end-of-stream marker is written first (best effort: call
/// `hurray_writer_finish` to see its status). Then the transport is released. NULL or
/// `*writer == NULL` is a no-op.
///
/// # Safety
/// `writer` NULL or valid for read and write.
#[no_mangle]
pub unsafe extern "C" fn hurray_writer_destroy(writer: *mut *mut HurrayWriter) -> HurrayStatus {
    guard("hurray_writer_destroy", || {
        // SAFETY: `writer` is non-NULL (checked first in the condition) and valid for a read (# Safety).
        if !writer.is_null() && unsafe { !(*writer).is_null() } {
            // SAFETY: `*writer` is NULL or a handle from this library, used by one thread at a time (# Safety);
            // inner_mut rejects NULL and dead handles.
            if let Ok(w) = unsafe { handle::inner_mut(*writer, "writer") } {
                if !w.is_finished() && !w.is_poisoned() {
                    let _ = w.finish();
                }
            }
        }
        // SAFETY: `writer` is NULL or valid for a read and a write; `*writer` is NULL or a handle from this library
        // (# Safety).
        unsafe { handle::destroy_pp(writer, "writer")? };
        Ok(HURRAY_OK)
    })
}

/// A tensor's payload ranges as byte slices: up to [`INLINE_PARTS`] on the stack (dense and
/// per-channel tensors), more in a `Vec`. The writers and encoders build one per tensor, so the
/// common tensor costs no heap allocation.
pub(crate) enum PayloadParts<'a> {
    Inline([&'a [u8]; INLINE_PARTS], usize),
    Heap(Vec<&'a [u8]>),
}

/// Payload ranges a [`PayloadParts`] holds without allocating.
const INLINE_PARTS: usize = 4;

impl<'a> std::ops::Deref for PayloadParts<'a> {
    type Target = [&'a [u8]];

    fn deref(&self) -> &Self::Target {
        match self {
            PayloadParts::Inline(parts, len) => &parts[..*len],
            PayloadParts::Heap(parts) => parts,
        }
    }
}

/// The caller's payload array (`count` slices at `payloads`) and each range as a byte slice,
/// every length bounded to the address space (see [`slice_arg`]); a NULL pointer is allowed
/// only with length 0. Shared by the writer and the encoder.
///
/// # Safety
/// `payloads` valid for `count` reads; each slice's `ptr` valid for `len` reads while the
/// returned slices live.
pub(crate) unsafe fn payload_parts<'a>(
    payloads: *const HurrayIoSlice,
    count: usize,
) -> FfiResult<(&'a [HurrayIoSlice], PayloadParts<'a>)> {
    // SAFETY: valid for `count` reads (# Safety); checked by slice_arg.
    let slices: &[HurrayIoSlice] = unsafe { slice_arg(payloads, count, "payloads")? };
    let mut parts = if count <= INLINE_PARTS {
        PayloadParts::Inline([&[]; INLINE_PARTS], count)
    } else {
        PayloadParts::Heap(vec![&[]; count])
    };
    let out = match &mut parts {
        PayloadParts::Inline(p, _) => &mut p[..count],
        PayloadParts::Heap(p) => p.as_mut_slice(),
    };
    for (i, (s, part)) in slices.iter().zip(out).enumerate() {
        if s.len == 0 {
            // Left as the empty slice.
        } else if s.ptr.is_null() || s.len > isize::MAX as usize {
            // The message is formatted only on failure (this loop runs per tensor).
            // SAFETY: refused by slice_arg without building a slice.
            *part = unsafe { slice_arg(s.ptr, s.len, &format!("payloads[{i}].ptr"))? };
        } else {
            // SAFETY: non-null, length fits isize; valid for `len` reads (# Safety).
            *part = unsafe { std::slice::from_raw_parts(s.ptr, s.len) };
        }
    }
    Ok((slices, parts))
}
