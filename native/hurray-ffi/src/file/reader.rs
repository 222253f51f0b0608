//! The container reader: `HurrayFileReader` and its options, over a transport's `read_at`/`size`,
//! over a file the library opens itself, or over a caller's memory span.

use std::ffi::c_void;
use std::mem::MaybeUninit;

use hurray_core::file::{
    check_payload, FileReader, FileReaderOptions, PendingDst, Ranges, Span, SpanBuffer, DEFAULT_EAGER_INDEX_BYTES,
};
use hurray_core::{BufferHandle, DeviceTag, SyncMode};

use crate::buffer::{self, BufferInner};
use crate::handle::{self, opaque_handle};
use crate::panic::{guard, non_null, FfiError, FfiResult};
use crate::status::*;
use crate::tensor::{HurrayTensor, TensorInner};
use crate::transport::{HurrayTransport, Owned};

use super::bytes_arg;
use super::entry::{EntryInner, HurrayFileEntry};
use super::path_source::PathSource;
use crate::os::{self, Mapping};
use std::sync::Arc;

/// Container reader settings and limits. Initialise with `hurray_file_reader_options_init`,
/// then change fields; a NULL options pointer means the defaults.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct HurrayFileReaderOptions {
    /// `sizeof(HurrayFileReaderOptions)` as the caller compiled it.
    pub struct_size: u32,
    /// `HURRAY_FILE_READER_*` flags (default 0).
    pub flags: u32,
    /// Index plus metadata up to this many bytes are read in one call at open and validated
    /// whole; larger indexes are read one entry at a time (default 1 MiB).
    pub eager_index_bytes: u64,
    /// Largest accepted encoded descriptor in bytes (default 1 MiB, at most 16 MiB).
    pub max_descriptor_bytes: u64,
    /// Largest sum of one tensor's buffer sizes read into new memory, in bytes (default 64 GiB).
    pub max_tensor_bytes: u64,
    /// Largest accepted metadata block in bytes (default and maximum 64 MiB).
    pub max_metadata_bytes: u64,
    /// Largest index plus metadata `hurray_file_reader_verify` loads, in bytes (default 1 GiB).
    pub max_index_bytes: u64,
}

/// Reader flag: check every payload's CRC32C when reading a tensor (the default for
/// `hurray_file_reader_open`; for a span reader it touches every page of the payload).
pub const HURRAY_FILE_READER_VERIFY_PAYLOADS: u32 = 1;
/// Reader flag: never check payload CRC32Cs (the default for `hurray_file_reader_open_span`).
pub const HURRAY_FILE_READER_SKIP_PAYLOAD_CHECKS: u32 = 2;
/// Reader flag: run `hurray_file_reader_verify` inside open.
pub const HURRAY_FILE_READER_VERIFY_AT_OPEN: u32 = 4;

impl HurrayFileReaderOptions {
    fn defaults() -> Self {
        let d = FileReaderOptions::default();
        HurrayFileReaderOptions {
            struct_size: std::mem::size_of::<HurrayFileReaderOptions>() as u32,
            flags: 0,
            eager_index_bytes: DEFAULT_EAGER_INDEX_BYTES,
            max_descriptor_bytes: d.max_descriptor_bytes,
            max_tensor_bytes: d.max_tensor_bytes,
            max_metadata_bytes: d.max_metadata_bytes,
            max_index_bytes: d.max_index_bytes,
        }
    }

    fn to_core(self, span: bool) -> FfiResult<FileReaderOptions> {
        if (self.struct_size as usize) < std::mem::size_of::<HurrayFileReaderOptions>() {
            return Err(FfiError::new(
                HURRAY_ERR_INVALID_ARGUMENT,
                "options.struct_size is smaller than this ABI's HurrayFileReaderOptions",
            ));
        }
        let known = HURRAY_FILE_READER_VERIFY_PAYLOADS
            | HURRAY_FILE_READER_SKIP_PAYLOAD_CHECKS
            | HURRAY_FILE_READER_VERIFY_AT_OPEN;
        if self.flags & !known != 0 {
            return Err(FfiError::new(HURRAY_ERR_INVALID_ARGUMENT, "unknown file reader option flags"));
        }
        let verify = self.flags & HURRAY_FILE_READER_VERIFY_PAYLOADS != 0;
        let skip = self.flags & HURRAY_FILE_READER_SKIP_PAYLOAD_CHECKS != 0;
        if verify && skip {
            return Err(FfiError::new(
                HURRAY_ERR_INVALID_ARGUMENT,
                "VERIFY_PAYLOADS and SKIP_PAYLOAD_CHECKS exclude each other",
            ));
        }
        Ok(FileReaderOptions {
            eager_index_bytes: self.eager_index_bytes,
            max_descriptor_bytes: self.max_descriptor_bytes,
            max_tensor_bytes: self.max_tensor_bytes,
            max_metadata_bytes: self.max_metadata_bytes,
            max_index_bytes: self.max_index_bytes,
            verify_payloads: if span { verify } else { !skip },
            verify_at_open: self.flags & HURRAY_FILE_READER_VERIFY_AT_OPEN != 0,
        })
    }
}

pub(crate) enum ReaderInner {
    Io(FileReader<Owned>),
    /// The span's lifetime is the caller's promise (see `hurray_file_reader_open_span`).
    Span(FileReader<Span<'static>>),
    /// A file the reader opened itself (`hurray_file_reader_open_path`).
    Path(FileReader<PathSource>),
    /// A file the reader mapped itself (`hurray_file_reader_open_mapped`). Fields drop in
    /// order: the reader, which borrows the map, before the reader's share of the map; every
    /// tensor read holds a share too, so the map outlives them all.
    Mapped {
        reader: FileReader<Span<'static>>,
        map: Arc<Mapping>,
    },
    /// A reader whose caller reads the ranges it asks for (`hurray_file_reader_new_ranges`).
    Ranges(RangesReader),
}

/// A reader over caller-supplied ranges, through its open: `Opening` until
/// `hurray_file_reader_open_ranges` succeeded (`Verifying` while it runs the verification that
/// `VERIFY_AT_OPEN` asks for, as a step of its own so that its repeats keep their progress).
pub(crate) enum RangesReader {
    Opening(Option<Ranges>, FileReaderOptions),
    Verifying(FileReader<Ranges>),
    Open(FileReader<Ranges>),
}

impl RangesReader {
    fn ranges(&mut self) -> FfiResult<&mut Ranges> {
        match self {
            RangesReader::Opening(Some(r), _) => Ok(r),
            RangesReader::Opening(None, _) => Err(FfiError::new(HURRAY_ERR_INVALID_STATE, "the reader failed to open")),
            RangesReader::Verifying(r) | RangesReader::Open(r) => Ok(r.source_mut()),
        }
    }

    /// The open reader at the start of a call (see `Ranges::begin_call`).
    pub(crate) fn begin(&mut self) -> FfiResult<&mut FileReader<Ranges>> {
        match self {
            RangesReader::Open(r) => {
                r.source_mut().begin_call();
                Ok(r)
            }
            _ => Err(not_open()),
        }
    }

    fn open_ref(&self) -> FfiResult<&FileReader<Ranges>> {
        match self {
            RangesReader::Open(r) => Ok(r),
            _ => Err(not_open()),
        }
    }

    /// One step of `hurray_file_reader_open_ranges`.
    fn open(&mut self) -> FfiResult<()> {
        if let RangesReader::Opening(src, opts) = self {
            let mut ranges = src.take().ok_or_else(|| {
                FfiError::new(HURRAY_ERR_INVALID_STATE, "an earlier open failed (not for want of input)")
            })?;
            ranges.begin_call();
            let verify = opts.verify_at_open;
            let o = FileReaderOptions { verify_at_open: false, ..*opts };
            match FileReader::open_or_return(ranges, o) {
                Ok(r) => *self = if verify { RangesReader::Verifying(r) } else { RangesReader::Open(r) },
                Err((e, r)) => {
                    if e.kind() == hurray_core::ErrorKind::NeedInput {
                        *src = Some(r);
                    }
                    return Err(e.into());
                }
            }
        }
        if let RangesReader::Verifying(r) = self {
            r.source_mut().begin_call();
            r.verify()?;
        }
        if let RangesReader::Verifying(_) = self {
            let RangesReader::Verifying(r) =
                std::mem::replace(self, RangesReader::Opening(None, FileReaderOptions::default()))
            else {
                unreachable!()
            };
            *self = RangesReader::Open(r);
        }
        Ok(())
    }
}

fn not_open() -> FfiError {
    FfiError::new(HURRAY_ERR_INVALID_STATE, "the reader is not open yet (hurray_file_reader_open_ranges)")
}

/// Runs the same expression on either kind of reader.
macro_rules! with_reader {
    ($r:expr, |$x:ident| $e:expr) => {
        match $r {
            ReaderInner::Io($x) => $e,
            ReaderInner::Span($x) => $e,
            ReaderInner::Path($x) => $e,
            ReaderInner::Mapped { reader: $x, .. } => $e,
            ReaderInner::Ranges(rr) => {
                let $x = rr.begin()?;
                $e
            }
        }
    };
}

/// As `with_reader!` for a shared borrow (accessors that read no bytes).
macro_rules! with_reader_ref {
    ($r:expr, |$x:ident| $e:expr) => {
        match $r {
            ReaderInner::Io($x) => $e,
            ReaderInner::Span($x) => $e,
            ReaderInner::Path($x) => $e,
            ReaderInner::Mapped { reader: $x, .. } => $e,
            ReaderInner::Ranges(rr) => {
                let $x = rr.open_ref()?;
                $e
            }
        }
    };
}

/// Reads an HRRYFILE container through a transport's `read_at`/`size`, through positional
/// reads of a file it opened itself, or over a caller's memory span. Owned; one thread at a
/// time; never call it from its own callbacks.
pub struct HurrayFileReader {
    pub(crate) shell: crate::handle::Shell<ReaderInner>,
}
opaque_handle!(HurrayFileReader, ReaderInner, 0x4855_5252_4652_3031);

/// Fills `*out` with the default container reader options.
///
/// # Safety
/// `out` valid for one write.
#[no_mangle]
pub unsafe extern "C" fn hurray_file_reader_options_init(out: *mut HurrayFileReaderOptions) -> HurrayStatus {
    guard("hurray_file_reader_options_init", || {
        handle::put_out!(out, HurrayFileReaderOptions::defaults())?;
        Ok(HURRAY_OK)
    })
}

/// Opens a container through `*transport` (copied; `read_at` and `size` required). Open calls
/// `size` once and reads the last 4 KiB (the trailer), the header and, when index plus
/// metadata are at most `eager_index_bytes`, the whole index: at most three `read_at` ranges
/// whatever the tensor count, one for a container of at most 4 KiB, two when the index lies
/// in its last 4 KiB (docs/spec/hrryfile.md §4.1). Short counts are looped. On success the reader owns the transport (`release(ctx)`
/// once, at destroy); on failure nothing is taken, so after `HURRAY_ERR_TRANSPORT` the caller
/// may simply call open again.
///
/// Errors: `NULL_POINTER`, `INVALID_ARGUMENT` (options), `TRANSPORT`, `TRUNCATED` (smaller
/// than header plus trailer, or `read_at` ended early), `INVALID_MAGIC` (not a container, or
/// one never finished), `VERSION_MISMATCH`, `CORRUPT` (checksums, impossible offsets,
/// overlapping payloads, unsorted index), `DUPLICATE_NAME`, `LIMIT_EXCEEDED`, `UNSUPPORTED`.
///
/// # Safety
/// Pointers valid; callbacks callable with `ctx` until release.
#[no_mangle]
pub unsafe extern "C" fn hurray_file_reader_open(
    transport: *const HurrayTransport,
    options: *const HurrayFileReaderOptions,
    out_reader: *mut *mut HurrayFileReader,
) -> HurrayStatus {
    guard("hurray_file_reader_open", || {
        crate::os::pages::install();
        non_null(transport, "transport")?;
        non_null(out_reader, "out_reader")?;
        // SAFETY: `transport` was checked non-NULL above and is valid for one read (# Safety).
        let t = unsafe { *transport };
        if t.read_at.is_none() || t.size.is_none() {
            return Err(FfiError::new(
                HURRAY_ERR_NULL_POINTER,
                "transport->read_at or transport->size is NULL (a container reader needs both)",
            ));
        }
        // SAFETY: `options` is non-NULL in this branch and valid for one read (# Safety).
        let opts = if options.is_null() { HurrayFileReaderOptions::defaults() } else { unsafe { *options } };
        let opts = opts.to_core(false)?;
        // Open with a copy that owns nothing, then hand over `release`: a failure releases
        // nothing.
        let mut probe = t;
        probe.release = None;
        let mut r = FileReader::open(Owned(probe), opts)?;
        r.source_mut().0.release = t.release;
        // SAFETY: `out_reader` was checked non-NULL above and is valid for one pointer write (# Safety).
        unsafe { handle::emit(out_reader, ReaderInner::Io(r)) };
        Ok(HURRAY_OK)
    })
}

/// Opens the container in the file at `path` (`path_len` bytes, no NUL: the OS's bytes on
/// Unix, UTF-8 elsewhere; relative paths resolve against the process's working directory) and
/// reads it with the library's own positional reads (`pread`) on a file descriptor private to
/// the reader: no transport, no callbacks. Everything else is as `hurray_file_reader_open`:
/// the same options and defaults (payload checksums checked), the same at most three reads at
/// open (`hurray_file_reader_read_at_calls` counts the `pread` calls), the same checks of every
/// declared size and offset against the file's size before anything is allocated. The size is
/// taken once, at open (`fstat`); a file shortened later reads as `TRUNCATED`.
///
/// The file is opened read-only and close-on-exec, and must be a regular file (on Linux it is
/// opened with `O_NONBLOCK`, so a FIFO or device is refused without blocking). The reader owns
/// the descriptor and closes it at `hurray_file_reader_destroy`; a failed open keeps nothing
/// open. Reads run on the calling thread and block it for as long as the operating system
/// takes (a warm page cache: microseconds); an interrupted read (`EINTR`) is retried.
///
/// Errors: `NULL_POINTER` (`path` with a non-zero length, `out_reader`), `INVALID_ARGUMENT`
/// (empty path, a NUL byte in it, not UTF-8 where that is required, not a regular file, e.g. a
/// directory; options), `NOT_FOUND` (no such file), `TRANSPORT` (any other operating-system
/// failure opening, inspecting or reading it, e.g. permission denied; the message names the OS
/// error), then those of `hurray_file_reader_open`.
///
/// Added in ABI 4 (additive, docs/spec/c-abi.md): look it up by name on older libraries.
///
/// # Safety
/// `path` valid for `path_len` bytes; `options` NULL or valid; `out_reader` valid for one write.
#[no_mangle]
pub unsafe extern "C" fn hurray_file_reader_open_path(
    path: *const u8,
    path_len: u64,
    options: *const HurrayFileReaderOptions,
    out_reader: *mut *mut HurrayFileReader,
) -> HurrayStatus {
    guard("hurray_file_reader_open_path", || {
        crate::os::pages::install();
        // SAFETY: the pointers are as `path_args` requires (# Safety).
        let (p, opts) = unsafe { path_args(path, path_len, options, out_reader, false)? };
        let r = FileReader::open(PathSource::open(p)?, opts)?;
        // SAFETY: `out_reader` was checked non-NULL above and is valid for one pointer write (# Safety).
        unsafe { handle::emit(out_reader, ReaderInner::Path(r)) };
        Ok(HURRAY_OK)
    })
}

/// The arguments of the by-path openers, checked: the path bytes and the core options (`span`:
/// with a span reader's checksum default).
///
/// # Safety
/// `path` valid for `path_len` bytes; `options` NULL or valid for one read.
unsafe fn path_args<'a>(
    path: *const u8,
    path_len: u64,
    options: *const HurrayFileReaderOptions,
    out_reader: *mut *mut HurrayFileReader,
    span: bool,
) -> FfiResult<(&'a [u8], FileReaderOptions)> {
    non_null(out_reader, "out_reader")?;
    // SAFETY: `path` is valid for its length when that is non-zero (# Safety); bytes_arg rejects NULL with a
    // non-zero length.
    let p = unsafe { bytes_arg(path, path_len, "path")? };
    // SAFETY: `options` is non-NULL in this branch and valid for one read (# Safety).
    let opts = if options.is_null() { HurrayFileReaderOptions::defaults() } else { unsafe { *options } };
    Ok((p, opts.to_core(span)?))
}

/// Opens a container held in the caller's memory: `len` bytes at `data` (e.g. a memory map of
/// the whole file). The region is borrowed, not copied: it must stay mapped, readable and
/// unmodified until the reader AND every tensor read from it are destroyed, because tensors
/// from `hurray_file_reader_read_tensor` point into it (zero copy) wherever a payload's
/// address satisfies its declared alignment — always, when `data` is aligned to the largest
/// alignment in the file (a page-aligned map and alignments up to 4096). Otherwise that
/// buffer is an aligned copy (`hurray_file_buffer_is_zero_copy` tells which). Payload
/// checksums are not checked unless `HURRAY_FILE_READER_VERIFY_PAYLOADS` is set (checking
/// touches every page). The read counter counts index copies out of the region.
///
/// Errors: as for `hurray_file_reader_open` (no `TRANSPORT`), plus `INVALID_ARGUMENT` when
/// `len` does not fit the address space.
///
/// # Safety
/// `data` valid for `len` bytes of reads for the lifetime described above.
#[no_mangle]
pub unsafe extern "C" fn hurray_file_reader_open_span(
    data: *const c_void,
    len: u64,
    options: *const HurrayFileReaderOptions,
    out_reader: *mut *mut HurrayFileReader,
) -> HurrayStatus {
    guard("hurray_file_reader_open_span", || {
        crate::os::pages::install();
        non_null(out_reader, "out_reader")?;
        // SAFETY: `options` is non-NULL in this branch and valid for one read (# Safety).
        let opts = if options.is_null() { HurrayFileReaderOptions::defaults() } else { unsafe { *options } };
        let opts = opts.to_core(true)?;
        // SAFETY: `data as *const u8` is valid for its length when that is non-zero (# Safety); bytes_arg rejects NULL
        // with a non-zero length.
        let bytes: &'static [u8] = unsafe { bytes_arg(data as *const u8, len, "data")? };
        let r = FileReader::open(Span::new(bytes), opts)?;
        // SAFETY: `out_reader` was checked non-NULL above and is valid for one pointer write (# Safety).
        unsafe { handle::emit(out_reader, ReaderInner::Span(r)) };
        Ok(HURRAY_OK)
    })
}

/// Opens the container in the file at `path` (as for `hurray_file_reader_open_path`: the OS's
/// bytes, read-only, a regular file only) by mapping the whole file read-only into memory
/// (`mmap`, shared) and reading it there, as `hurray_file_reader_open_span` reads a caller's
/// region: tensors from `hurray_file_reader_read_tensor` point into the map (zero copy,
/// read-only) and payload checksums are checked only with `HURRAY_FILE_READER_VERIFY_PAYLOADS`.
/// The reader owns the map; every tensor buffer pointing into it holds a share, so the map is
/// unmapped (by whichever thread destroys the last of them) only when the reader and every such
/// tensor are destroyed. The file descriptor is closed before this returns. The map of the
/// whole file can be borrowed with `hurray_file_reader_mapping`.
///
/// **Risk:** a memory map is not protected against another process shortening the file. After
/// such a truncation, any read of a page past the new end, by this library (open, verify, a
/// checksum, a copy) or by the caller through a tensor's pointer, raises `SIGBUS`, which kills
/// a process that does not handle it (a JVM included). Map only files nobody truncates or
/// rewrites in place (writers that rename a new file over the old one are safe; so is
/// deleting); read other files with `hurray_file_reader_open_path`, which reports `TRUNCATED`.
///
/// Errors: those of `hurray_file_reader_open_path`; `UNSUPPORTED` on a platform without a
/// memory map in this build (use `hurray_file_reader_open_path`); `TRANSPORT` when the OS
/// refuses the map; a file of 0 bytes is `TRUNCATED` (nothing is mapped).
///
/// Added in ABI 4 (additive, docs/spec/c-abi.md): look it up by name on older libraries.
///
/// # Safety
/// `path` valid for `path_len` bytes; `options` NULL or valid; `out_reader` valid for one write.
#[no_mangle]
pub unsafe extern "C" fn hurray_file_reader_open_mapped(
    path: *const u8,
    path_len: u64,
    options: *const HurrayFileReaderOptions,
    out_reader: *mut *mut HurrayFileReader,
) -> HurrayStatus {
    guard("hurray_file_reader_open_mapped", || {
        crate::os::pages::install();
        // SAFETY: the pointers are as `path_args` requires (# Safety).
        let (p, opts) = unsafe { path_args(path, path_len, options, out_reader, true)? };
        let (file, size) = os::open_regular_file(p)?;
        if size == 0 {
            return Err(FfiError::new(HURRAY_ERR_TRUNCATED, "the file is empty (smaller than header plus trailer)"));
        }
        let map = Arc::new(Mapping::map(&file, size)?);
        drop(file);
        // SAFETY: the bytes live as long as `map`, and the reader is dropped before its share
        // of `map` (ReaderInner::Mapped's field order); tensors hold their own shares.
        let bytes: &'static [u8] = unsafe { std::slice::from_raw_parts(map.bytes().as_ptr(), map.bytes().len()) };
        let reader = FileReader::open(Span::new(bytes), opts)?;
        // SAFETY: `out_reader` was checked non-NULL above and is valid for one pointer write (# Safety).
        unsafe { handle::emit(out_reader, ReaderInner::Mapped { reader, map }) };
        Ok(HURRAY_OK)
    })
}

/// Makes a container reader over a source of `size` bytes that the caller reads itself, range
/// by range, between calls: no transport, no callbacks, so none of the caller's code runs
/// inside a call of this library (docs/spec/c-abi.md §Containers without a transport). Nothing
/// is read yet; open it with `hurray_file_reader_open_ranges`. The options and their defaults
/// are those of `hurray_file_reader_open` (payload checksums checked).
///
/// Every reader call that needs bytes it was not given returns `HURRAY_NEED_INPUT` (positive,
/// not an error) having changed nothing: `hurray_file_reader_pending_read` says which range
/// and where the bytes go, the caller reads them (fewer is fine), reports the count with
/// `hurray_file_reader_supply`, and repeats the same call with the same arguments. A payload
/// read by `hurray_file_reader_read_tensor` goes straight into the tensor's allocation.
///
/// Errors: `NULL_POINTER` (`out_reader`), `INVALID_ARGUMENT` (options).
///
/// Added in ABI 4 (additive, docs/spec/c-abi.md).
///
/// # Safety
/// `options` NULL or valid for one read; `out_reader` valid for one write.
#[no_mangle]
pub unsafe extern "C" fn hurray_file_reader_new_ranges(
    size: u64,
    options: *const HurrayFileReaderOptions,
    out_reader: *mut *mut HurrayFileReader,
) -> HurrayStatus {
    guard("hurray_file_reader_new_ranges", || {
        non_null(out_reader, "out_reader")?;
        // SAFETY: `options` is non-NULL in this branch and valid for one read (# Safety).
        let opts = if options.is_null() { HurrayFileReaderOptions::defaults() } else { unsafe { *options } };
        let opts = opts.to_core(false)?;
        let r = RangesReader::Opening(Some(Ranges::new(size)), opts);
        // SAFETY: `out_reader` was checked non-NULL above and is valid for one pointer write (# Safety).
        unsafe { handle::emit(out_reader, ReaderInner::Ranges(r)) };
        Ok(HURRAY_OK)
    })
}

/// Opens a reader made by `hurray_file_reader_new_ranges`, exactly as `hurray_file_reader_open`
/// opens a transport (the same at most three ranges, the same checks, `VERIFY_AT_OPEN`
/// included). Returns `HURRAY_NEED_INPUT` until every range it needs was supplied: supply
/// each and call again. `HURRAY_OK` once open (later calls do nothing). Any other call on the
/// reader before that is `INVALID_STATE`. After an error other than `NEED_INPUT` the reader
/// stays unopened (every call, this one included, is `INVALID_STATE`): destroy it.
///
/// Errors: those of `hurray_file_reader_open` (`TRUNCATED` when `supply` reported 0 bytes
/// inside the declared size), `INVALID_STATE`, `NULL_POINTER`, `USE_AFTER_DESTROY`.
///
/// Added in ABI 4 (additive, docs/spec/c-abi.md).
///
/// # Safety
/// `reader` live (not in use by another thread).
#[no_mangle]
pub unsafe extern "C" fn hurray_file_reader_open_ranges(reader: *mut HurrayFileReader) -> HurrayStatus {
    guard("hurray_file_reader_open_ranges", || {
        crate::os::pages::install();
        // SAFETY: `reader` is NULL or a handle from this library, used by one thread at a time (# Safety); inner_mut
        // rejects NULL and dead handles.
        let ReaderInner::Ranges(r) = (unsafe { handle::inner_mut(reader, "reader")? }) else {
            return Err(FfiError::new(
                HURRAY_ERR_INVALID_ARGUMENT,
                "not a reader made by hurray_file_reader_new_ranges",
            ));
        };
        r.open()?;
        Ok(HURRAY_OK)
    })
}

/// The read a reader asks for after `HURRAY_NEED_INPUT`.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct HurrayFileRead {
    /// Absolute offset of the first byte in the source.
    pub offset: u64,
    /// Bytes wanted (at least 1); fewer may be supplied.
    pub len: u64,
    /// Where they go: `len` writable bytes owned by the reader, valid until the next call on
    /// it. For a payload of `hurray_file_reader_read_tensor` this is the tensor's own
    /// allocation, so the bytes are never copied again.
    pub dst: *mut c_void,
}

/// Stores in `*out` the range the reader's last `HURRAY_NEED_INPUT` asked for: read up to
/// `len` bytes of the source at `offset` into `dst`, then call `hurray_file_reader_supply`.
///
/// Errors: `INVALID_STATE` (no read pending: the last call did not return `NEED_INPUT`),
/// `INVALID_ARGUMENT` (not a ranges reader), `NULL_POINTER`, `USE_AFTER_DESTROY`.
///
/// Added in ABI 4 (additive, docs/spec/c-abi.md).
///
/// # Safety
/// `reader` live; `out` valid for one write.
#[no_mangle]
pub unsafe extern "C" fn hurray_file_reader_pending_read(
    reader: *mut HurrayFileReader,
    out: *mut HurrayFileRead,
) -> HurrayStatus {
    guard("hurray_file_reader_pending_read", || {
        non_null(out, "out")?;
        // SAFETY: `reader` is as `ranges_of` requires (# Safety).
        let src = unsafe { ranges_of(reader)? };
        let p = src.pending().ok_or_else(|| FfiError::new(HURRAY_ERR_INVALID_STATE, "no read is pending"))?;
        let dst = match p.dst {
            PendingDst::Own(b) => b.as_mut_ptr() as *mut c_void,
            PendingDst::InPlace(a) => a as *mut c_void,
        };
        // SAFETY: `out` was checked non-NULL above and is valid for one write (# Safety).
        unsafe { *out = HurrayFileRead { offset: p.offset, len: p.len, dst } };
        Ok(HURRAY_OK)
    })
}

/// Reports that the caller wrote `filled` bytes (at most the `len` asked for) of the pending
/// read into its `dst`; 0 means the source ends at `offset` (the repeated call then reports
/// `TRUNCATED`). Then repeat the call that returned `HURRAY_NEED_INPUT`. A caller that cannot
/// read (its I/O failed) simply does not supply: the reader is unchanged and the call can be
/// repeated later, or another call made.
///
/// Errors (nothing recorded): `INVALID_STATE` (no read pending), `INVALID_ARGUMENT` (`filled`
/// above `len`, or not a ranges reader), `NULL_POINTER`, `USE_AFTER_DESTROY`.
///
/// Added in ABI 4 (additive, docs/spec/c-abi.md).
///
/// # Safety
/// `reader` live; the bytes were written to the `dst` of `hurray_file_reader_pending_read`.
#[no_mangle]
pub unsafe extern "C" fn hurray_file_reader_supply(reader: *mut HurrayFileReader, filled: u64) -> HurrayStatus {
    guard("hurray_file_reader_supply", || {
        // SAFETY: `reader` is as `ranges_of` requires (# Safety).
        unsafe { ranges_of(reader)? }.supply(filled)?;
        Ok(HURRAY_OK)
    })
}

/// The range source of a ranges reader.
///
/// # Safety
/// As the callers' `reader`.
unsafe fn ranges_of<'a>(reader: *mut HurrayFileReader) -> FfiResult<&'a mut Ranges> {
    // SAFETY: `reader` is NULL or a handle from this library, used by one thread at a time (# Safety); inner_mut
    // rejects NULL and dead handles.
    match unsafe { handle::inner_mut(reader, "reader")? } {
        ReaderInner::Ranges(r) => r.ranges(),
        _ => Err(FfiError::new(HURRAY_ERR_INVALID_ARGUMENT, "not a reader made by hurray_file_reader_new_ranges")),
    }
}

/// Hands out the memory map of a reader made by `hurray_file_reader_open_mapped` as a new
/// owned `HurrayBuffer` over the whole file (offset 0, the file's size at open, alignment
/// 4096, read-only memory): `hurray_buffer_data_ptr` and `hurray_buffer_byte_size` give the
/// region, and `hurray_buffer_destroy` releases the buffer's share of the map, which stays
/// mapped until that buffer, the reader and every tensor pointing into it are destroyed. For a
/// binding that shows the caller the whole map. Do not write through it.
///
/// Errors: `NULL_POINTER`, `USE_AFTER_DESTROY`, `INVALID_ARGUMENT` (a reader that did not map
/// its file).
///
/// Added in ABI 4 (additive, docs/spec/c-abi.md).
///
/// # Safety
/// `reader` live; `out_buffer` valid for one write.
#[no_mangle]
pub unsafe extern "C" fn hurray_file_reader_mapping(
    reader: *const HurrayFileReader,
    out_buffer: *mut *mut crate::buffer::HurrayBuffer,
) -> HurrayStatus {
    guard("hurray_file_reader_mapping", || {
        non_null(out_buffer, "out_buffer")?;
        let inner = handle::handle_ref!(reader)?;
        let ReaderInner::Mapped { map, .. } = inner else {
            return Err(FfiError::new(
                HURRAY_ERR_INVALID_ARGUMENT,
                "the reader did not map its file (hurray_file_reader_open_mapped)",
            ));
        };
        let region = map.bytes();
        let h = BufferHandle::new(region.len() as u64, 4096, DeviceTag::Cpu, SyncMode::ProducerSynced)?;
        let b = map_share(region.as_ptr(), h, map)?;
        // SAFETY: `out_buffer` was checked non-NULL above and is valid for one pointer write (# Safety).
        unsafe { handle::emit(out_buffer, Arc::new(b)) };
        Ok(HURRAY_OK)
    })
}

/// Stores the container's size in bytes (as `size` reported at open, or the span length).
///
/// Errors: `HURRAY_ERR_NULL_POINTER`, `HURRAY_ERR_USE_AFTER_DESTROY`.
///
/// # Safety
/// `reader` live; `out` valid for one write.
#[no_mangle]
pub unsafe extern "C" fn hurray_file_reader_size(reader: *const HurrayFileReader, out: *mut u64) -> HurrayStatus {
    guard("hurray_file_reader_size", || {
        let inner = handle::handle_ref!(reader)?;
        let v = with_reader_ref!(inner, |r| r.size());
        handle::put_out!(out, v)?;
        Ok(HURRAY_OK)
    })
}

/// Stores the number of tensors in the container.
///
/// Errors: `HURRAY_ERR_NULL_POINTER`, `HURRAY_ERR_USE_AFTER_DESTROY`.
///
/// # Safety
/// `reader` live; `out` valid for one write.
#[no_mangle]
pub unsafe extern "C" fn hurray_file_reader_count(reader: *const HurrayFileReader, out: *mut u64) -> HurrayStatus {
    guard("hurray_file_reader_count", || {
        let inner = handle::handle_ref!(reader)?;
        let v = with_reader_ref!(inner, |r| r.entry_count());
        handle::put_out!(out, v)?;
        Ok(HURRAY_OK)
    })
}

/// Stores how many `read_at` calls the reader has made so far, open included (for a span
/// reader: copies of index bytes out of the region). Lets callers and tests check that
/// open and lookups stay within their documented read counts.
///
/// Errors: `HURRAY_ERR_NULL_POINTER`, `HURRAY_ERR_USE_AFTER_DESTROY`.
///
/// # Safety
/// `reader` live; `out` valid for one write.
#[no_mangle]
pub unsafe extern "C" fn hurray_file_reader_read_at_calls(
    reader: *const HurrayFileReader,
    out: *mut u64,
) -> HurrayStatus {
    guard("hurray_file_reader_read_at_calls", || {
        let inner = handle::handle_ref!(reader)?;
        let v = with_reader_ref!(inner, |r| r.read_calls());
        handle::put_out!(out, v)?;
        Ok(HURRAY_OK)
    })
}

/// Copies the name of entry `index` (entries are sorted by name bytes) into `buf`: at most
/// `cap` bytes, NOT NUL-terminated, and stores the full name length in bytes in `*out_len`.
/// `buf` may be NULL when `cap` is 0 (a length query). Reads the entry table only (names over
/// 88 bytes: also the record) unless the index is loaded; decodes no descriptor.
///
/// Errors: `BUFFER_TOO_SMALL` (`cap` < length; `*out_len` is still set), `INVALID_ARGUMENT`
/// (`index >= count`), `TRANSPORT` (retry), `TRUNCATED`, `CORRUPT`, `NULL_POINTER`.
///
/// # Safety
/// `reader` live; `buf` valid for `cap` bytes; `out_len` valid for one write.
#[no_mangle]
pub unsafe extern "C" fn hurray_file_reader_name(
    reader: *mut HurrayFileReader,
    index: u64,
    buf: *mut u8,
    cap: u64,
    out_len: *mut u64,
) -> HurrayStatus {
    guard("hurray_file_reader_name", || {
        let inner = handle::handle_mut!(reader)?;
        non_null(out_len, "out_len")?;
        let name = with_reader!(inner, |r| r.name_at(index))?;
        // SAFETY: `out_len` was checked non-NULL above and is valid for one write (# Safety).
        unsafe { *out_len = name.len() as u64 };
        if (cap as u128) < name.len() as u128 {
            return Err(FfiError::new(
                HURRAY_ERR_BUFFER_TOO_SMALL,
                format!("name of {} bytes, buffer of {cap}", name.len()),
            ));
        }
        if !name.is_empty() {
            non_null(buf, "buf")?;
            // SAFETY: `buf` is non-NULL (checked just above) and valid for `cap` bytes (# Safety), and `name.len()` <=
            // `cap` was checked above; `name` (reader-owned bytes, or the caller's read-only span) cannot be
            // the caller's writable `buf`.
            unsafe { std::ptr::copy_nonoverlapping(name.as_ptr(), buf, name.len()) };
        }
        Ok(HURRAY_OK)
    })
}

/// Stores entry `index` (name order) in `*out_entry`: a new owned entry (destroy with
/// `hurray_file_entry_destroy`). Reads one entry and one record unless the index is loaded;
/// reads no payload. `*out_entry` is NULL on error.
///
/// Errors: `INVALID_ARGUMENT` (`index >= count`), `TRANSPORT` (retry), `TRUNCATED`,
/// `CORRUPT` (checksum, payload length differs from the descriptor, payload range outside the
/// data area), `INVALID_ALIGNMENT` (payload offset not a multiple of its alignment),
/// `LIMIT_EXCEEDED`, descriptor decoding errors, `NULL_POINTER`.
///
/// # Safety
/// `reader` live; `out_entry` valid for one write.
#[no_mangle]
pub unsafe extern "C" fn hurray_file_reader_entry(
    reader: *mut HurrayFileReader,
    index: u64,
    out_entry: *mut *mut HurrayFileEntry,
) -> HurrayStatus {
    guard("hurray_file_reader_entry", || {
        non_null(out_entry, "out_entry")?;
        // SAFETY: `out_entry` was checked non-NULL above and is valid for one write (# Safety).
        unsafe { *out_entry = std::ptr::null_mut() };
        let inner = handle::handle_mut!(reader)?;
        let e = with_reader!(inner, |r| r.entry(index))?;
        // SAFETY: `out_entry` was checked non-NULL above and is valid for one pointer write (# Safety).
        unsafe { handle::emit(out_entry, EntryInner::new(e)?) };
        Ok(HURRAY_OK)
    })
}

/// Finds the tensor named by `name_len` bytes at `name` (compared as bytes, no NUL) and stores
/// a new owned entry in `*out_entry`. A binary search over the name-sorted entry table: at
/// most ceil(log2(count + 1)) entry reads (plus a name read per probe whose first 88 bytes tie
/// with a longer name) and one record read; no reads when the index is loaded.
///
/// Errors: `NOT_FOUND` (`*out_entry` = NULL), and those of `hurray_file_reader_entry`.
///
/// # Safety
/// `reader` live; `name` valid for `name_len` bytes; `out_entry` valid for one write.
#[no_mangle]
pub unsafe extern "C" fn hurray_file_reader_find(
    reader: *mut HurrayFileReader,
    name: *const u8,
    name_len: u64,
    out_entry: *mut *mut HurrayFileEntry,
) -> HurrayStatus {
    guard("hurray_file_reader_find", || {
        non_null(out_entry, "out_entry")?;
        // SAFETY: `out_entry` was checked non-NULL above and is valid for one write (# Safety).
        unsafe { *out_entry = std::ptr::null_mut() };
        let inner = handle::handle_mut!(reader)?;
        // SAFETY: `name` is valid for its length when that is non-zero (# Safety); bytes_arg rejects NULL with a
        // non-zero length.
        let n = unsafe { bytes_arg(name, name_len, "name")? };
        match with_reader!(inner, |r| r.find(n))? {
            Some(e) => {
                // SAFETY: `out_entry` was checked non-NULL above and is valid for one pointer write (# Safety).
                unsafe { handle::emit(out_entry, EntryInner::new(e)?) };
                Ok(HURRAY_OK)
            }
            None => {
                Err(FfiError::new(HURRAY_ERR_NOT_FOUND, format!("no tensor named {:?}", String::from_utf8_lossy(n))))
            }
        }
    })
}

/// Reads the tensor of `entry` into `*out_tensor`: a new owned `HurrayTensor`, the same kind
/// of handle the stream reader returns (destroy with `hurray_tensor_destroy`).
///
/// Through a transport: each buffer is a new allocation aligned to its declared alignment,
/// filled by `read_at` directly; each stored CRC32C is checked unless
/// `HURRAY_FILE_READER_SKIP_PAYLOAD_CHECKS` was set. Over a span: each buffer points into the
/// caller's region when the address is aligned (zero copy; the tensor borrows the region, see
/// `hurray_file_reader_open_span`), else it is an aligned copy; checksums only with
/// `HURRAY_FILE_READER_VERIFY_PAYLOADS`. Buffers pointing into a span have no release
/// callback; treat their memory as read-only if the region is.
///
/// Errors (`*out_tensor` = NULL): `INVALID_ARGUMENT` (an entry of another reader),
/// `LIMIT_EXCEEDED` (`max_tensor_bytes`), `OUT_OF_MEMORY`, `TRANSPORT` (nothing changed;
/// retry), `TRUNCATED`, `CORRUPT` (checksum mismatch), `NULL_POINTER`.
///
/// # Safety
/// `reader` and `entry` live; `out_tensor` valid for one write.
#[no_mangle]
pub unsafe extern "C" fn hurray_file_reader_read_tensor(
    reader: *mut HurrayFileReader,
    entry: *const HurrayFileEntry,
    out_tensor: *mut *mut HurrayTensor,
) -> HurrayStatus {
    guard("hurray_file_reader_read_tensor", || {
        non_null(out_tensor, "out_tensor")?;
        // SAFETY: `out_tensor` was checked non-NULL above and is valid for one write (# Safety).
        unsafe { *out_tensor = std::ptr::null_mut() };
        let inner = handle::handle_mut!(reader)?;
        let e = handle::handle_ref!(entry)?;
        let t = match inner {
            ReaderInner::Io(r) => TensorInner::from_read(r.read_tensor(&e.core)?)?,
            ReaderInner::Path(r) => TensorInner::from_read(r.read_tensor(&e.core)?)?,
            ReaderInner::Span(r) => span_tensor(r, &e.core, None)?,
            ReaderInner::Mapped { reader, map } => span_tensor(reader, &e.core, Some(map))?,
            ReaderInner::Ranges(r) => TensorInner::from_read(r.begin()?.read_tensor_in_place(&e.core)?)?,
        };
        // SAFETY: `out_tensor` was checked non-NULL above and is valid for one pointer write (# Safety).
        unsafe { handle::emit(out_tensor, t) };
        Ok(HURRAY_OK)
    })
}

/// The tensor of `entry` over a span: buffers into the region where aligned. With `map`, each
/// such buffer holds a share of the map, released with the buffer.
fn span_tensor(
    r: &mut FileReader<Span<'static>>,
    entry: &hurray_core::file::FileEntry,
    map: Option<&Arc<Mapping>>,
) -> FfiResult<TensorInner> {
    let st = r.span_tensor(entry)?;
    let mut bufs = Vec::with_capacity(st.buffers.len());
    for (b, h) in st.buffers.into_iter().zip(st.descriptor.buffers()) {
        bufs.push(span_buffer(b, *h, map)?);
    }
    TensorInner::from_parts(st.descriptor, bufs)
}

fn span_buffer(b: SpanBuffer<'static>, h: BufferHandle, map: Option<&Arc<Mapping>>) -> FfiResult<BufferInner> {
    match b {
        SpanBuffer::Borrowed(s) => match map {
            None => {
                buffer::external(s.as_ptr() as *mut c_void, buffer::read_handle(h), None, std::ptr::null_mut(), None)
            }
            Some(m) => map_share(s.as_ptr(), buffer::read_handle(h), m),
        },
        SpanBuffer::Copied(a) => Ok(BufferInner::owned(a.into(), h)),
    }
}

/// A buffer of `handle`'s size at `ptr` inside `map` that keeps a share of the map until the
/// buffer's last handle is destroyed.
fn map_share(ptr: *const u8, handle: BufferHandle, map: &Arc<Mapping>) -> FfiResult<BufferInner> {
    let share = Arc::into_raw(Arc::clone(map)) as *mut c_void;
    let b = buffer::external(ptr as *mut c_void, handle, Some(release_map_share), share, None);
    if b.is_err() {
        // SAFETY: `share` came from Arc::into_raw just above and was not handed out.
        unsafe { release_map_share(std::ptr::null_mut(), share) };
    }
    b
}

/// Drops one share of a [`Mapping`] (the last one unmaps).
unsafe extern "C" fn release_map_share(_data: *mut c_void, share: *mut c_void) {
    // SAFETY: `share` is one `Arc::into_raw` of a Mapping (map_share), released exactly once
    // (the buffer's release contract).
    drop(unsafe { Arc::from_raw(share as *const Mapping) });
}

/// Lets `hurray_file_reader_read_tensor` reuse the memory of destroyed tensors: keeps up to
/// `max_bytes` bytes of buffer allocations whose tensors were destroyed and hands them to
/// later tensors, exactly as `hurray_reader_set_buffer_pool_bytes` does for a stream reader
/// (same reuse rule, bounds and lifetime). No pool until this is called; 0 removes it. A span
/// reader accepts the call and ignores it: its buffers point into the region (or are one-off
/// aligned copies of it).
///
/// Added in ABI 4 (additive, docs/spec/c-abi.md): look it up by name on older libraries.
///
/// Errors: `NULL_POINTER`, `USE_AFTER_DESTROY`.
///
/// # Safety
/// `reader` live (not in use by another thread).
#[no_mangle]
pub unsafe extern "C" fn hurray_file_reader_set_buffer_pool_bytes(
    reader: *mut HurrayFileReader,
    max_bytes: u64,
) -> HurrayStatus {
    guard("hurray_file_reader_set_buffer_pool_bytes", || {
        let inner = handle::handle_mut!(reader)?;
        with_reader!(inner, |r| r.set_buffer_pool_bytes(max_bytes));
        Ok(HURRAY_OK)
    })
}

/// Reads payload `buffer` of `entry` into the caller's memory: `capacity` bytes at `dst`, of
/// which exactly the payload's length are written (stored in `*out_len`, may be NULL). For
/// callers that pool their own (e.g. arena) memory instead of taking a new allocation per
/// tensor. The stored CRC32C is checked under the same rule as
/// `hurray_file_reader_read_tensor`. Over a span this is a copy out of the region.
///
/// Errors: `BUFFER_TOO_SMALL` (`capacity` below the length), `INVALID_ARGUMENT` (another
/// reader's entry, `buffer` out of range), `TRANSPORT` (retry), `TRUNCATED`, `CORRUPT`,
/// `NULL_POINTER`.
///
/// # Safety
/// `reader`, `entry` live; `dst` valid for `capacity` bytes of writes; `out_len` NULL or valid.
#[no_mangle]
pub unsafe extern "C" fn hurray_file_reader_read_buffer_into(
    reader: *mut HurrayFileReader,
    entry: *const HurrayFileEntry,
    buffer: u64,
    dst: *mut c_void,
    capacity: u64,
    out_len: *mut u64,
) -> HurrayStatus {
    guard("hurray_file_reader_read_buffer_into", || {
        let inner = handle::handle_mut!(reader)?;
        let e = handle::handle_ref!(entry)?;
        let b = usize::try_from(buffer).unwrap_or(usize::MAX);
        let need = e.core.buffers().get(b).map(|l| l.length).unwrap_or(0);
        if capacity < need {
            return Err(FfiError::new(
                HURRAY_ERR_BUFFER_TOO_SMALL,
                format!("destination of {capacity} bytes for a payload of {need}"),
            ));
        }
        let cap = usize::try_from(need)
            .map_err(|_| FfiError::new(HURRAY_ERR_LIMIT_EXCEEDED, "payload does not fit the address space"))?;
        if cap > 0 {
            non_null(dst, "dst")?;
        }
        let slot: &mut [MaybeUninit<u8>] = if cap == 0 {
            &mut []
        } else {
            // SAFETY: the caller guarantees dst is valid for capacity >= cap bytes of writes.
            unsafe { std::slice::from_raw_parts_mut(dst as *mut MaybeUninit<u8>, cap) }
        };
        let (n, verify) = with_reader!(inner, |r| (r.read_buffer_into(&e.core, b, slot)?, r.options().verify_payloads));
        if verify && n > 0 {
            // SAFETY: read_buffer_into initialised exactly n bytes at dst.
            let bytes = unsafe { std::slice::from_raw_parts(dst as *const u8, n as usize) };
            check_payload(&e.core, b, bytes)?;
        }
        if !out_len.is_null() {
            // SAFETY: `out_len` is non-NULL (checked just above) and valid for one write (# Safety).
            unsafe { *out_len = n };
        }
        Ok(HURRAY_OK)
    })
}

/// Stores the number of file-level metadata entries in `*out`. The metadata block is read
/// and checked on first use (one `read_at` range) unless the index was loaded at open.
///
/// Errors: `TRANSPORT` (retry), `TRUNCATED`, `CORRUPT`, `DUPLICATE_NAME`, `LIMIT_EXCEEDED`.
///
/// # Safety
/// `reader` live; `out` valid for one write.
#[no_mangle]
pub unsafe extern "C" fn hurray_file_reader_metadata_count(
    reader: *mut HurrayFileReader,
    out: *mut u64,
) -> HurrayStatus {
    guard("hurray_file_reader_metadata_count", || {
        let inner = handle::handle_mut!(reader)?;
        non_null(out, "out")?;
        let n = with_reader!(inner, |r| r.metadata()?.len());
        // SAFETY: `out` was checked non-NULL above and is valid for one write (# Safety).
        unsafe { *out = n as u64 };
        Ok(HURRAY_OK)
    })
}

/// Borrows metadata entry `index` (entries sorted by key bytes): `*out_key_len` UTF-8 key
/// bytes (not NUL-terminated) and `*out_value_len` value bytes, owned by the reader and valid
/// until it is destroyed. An empty value may be reported with a non-NULL pointer.
///
/// Errors: `INVALID_ARGUMENT` (`index` out of range), those of
/// `hurray_file_reader_metadata_count`, `NULL_POINTER`.
///
/// # Safety
/// `reader` live; out-pointers valid for one write.
#[no_mangle]
pub unsafe extern "C" fn hurray_file_reader_metadata_get(
    reader: *mut HurrayFileReader,
    index: u64,
    out_key: *mut *const u8,
    out_key_len: *mut u64,
    out_value: *mut *const u8,
    out_value_len: *mut u64,
) -> HurrayStatus {
    guard("hurray_file_reader_metadata_get", || {
        let inner = handle::handle_mut!(reader)?;
        for (p, n) in [
            (out_key as *const (), "out_key"),
            (out_key_len as *const (), "out_key_len"),
            (out_value as *const (), "out_value"),
            (out_value_len as *const (), "out_value_len"),
        ] {
            non_null(p, n)?;
        }
        let md = with_reader!(inner, |r| r.metadata()?);
        let (k, v) = usize::try_from(index).ok().and_then(|i| md.get(i)).ok_or_else(|| {
            FfiError::new(
                HURRAY_ERR_INVALID_ARGUMENT,
                format!("metadata index {index} out of range for {} entries", md.len()),
            )
        })?;
        // SAFETY: the four out-pointers were checked non-NULL above and are valid for one write each (# Safety).
        unsafe {
            *out_key = k.as_ptr();
            *out_key_len = k.len() as u64;
            *out_value = v.as_ptr();
            *out_value_len = v.len() as u64;
        }
        Ok(HURRAY_OK)
    })
}

/// Borrows the value of metadata key `key` (`key_len` bytes): owned by the reader, valid
/// until it is destroyed. Errors: `NOT_FOUND`, those of `hurray_file_reader_metadata_count`.
///
/// # Safety
/// `reader` live; `key` valid for `key_len` bytes; out-pointers valid for one write.
#[no_mangle]
pub unsafe extern "C" fn hurray_file_reader_metadata_find(
    reader: *mut HurrayFileReader,
    key: *const u8,
    key_len: u64,
    out_value: *mut *const u8,
    out_value_len: *mut u64,
) -> HurrayStatus {
    guard("hurray_file_reader_metadata_find", || {
        let inner = handle::handle_mut!(reader)?;
        non_null(out_value, "out_value")?;
        non_null(out_value_len, "out_value_len")?;
        // SAFETY: `key` is valid for its length when that is non-zero (# Safety); bytes_arg rejects NULL with a
        // non-zero length.
        let k = unsafe { bytes_arg(key, key_len, "key")? };
        let md = with_reader!(inner, |r| r.metadata()?);
        let i = md.binary_search_by(|(x, _)| x.as_bytes().cmp(k)).map_err(|_| {
            FfiError::new(HURRAY_ERR_NOT_FOUND, format!("no metadata key {:?}", String::from_utf8_lossy(k)))
        })?;
        let v = &md[i].1;
        // SAFETY: `out_value` and `out_value_len` were checked non-NULL above and are valid for one write each
        // (# Safety).
        unsafe {
            *out_value = v.as_ptr();
            *out_value_len = v.len() as u64;
        }
        Ok(HURRAY_OK)
    })
}

/// Checks the whole index (docs/spec/hrryfile.md §3 Integrity): index and metadata checksums,
/// every entry and record, strict name order (no duplicates), every descriptor against its
/// payload lengths and alignments, payload ranges, that no two payloads overlap, and that
/// every padding byte of the payload area (after the header, between payloads, before the
/// index) is zero, and the composite structure (`hurray_file_reader_check_composites`). Loads
/// index plus metadata in one range unless loaded at open
/// (`LIMIT_EXCEEDED` above `max_index_bytes`). Reads no payload; reads the padding through
/// `read_at` in chunks of at most 64 KiB (a span reader scans it in place). A lazily opened
/// reader checks each entry only when it is used, and no read checks padding; call this to
/// check everything up front.
///
/// Errors: those of `hurray_file_reader_open` and `hurray_file_reader_entry`;
/// `HURRAY_ERR_CORRUPT` for a non-zero padding byte (the message names its offset) or a
/// malformed composite (the message names the entry); `HURRAY_ERR_LIMIT_EXCEEDED` for a
/// composite of more than 65,536 descriptors.
///
/// # Safety
/// `reader` live.
#[no_mangle]
pub unsafe extern "C" fn hurray_file_reader_verify(reader: *mut HurrayFileReader) -> HurrayStatus {
    guard("hurray_file_reader_verify", || {
        let inner = handle::handle_mut!(reader)?;
        with_reader!(inner, |r| r.verify())?;
        with_reader!(inner, |r| hurray_core::composite::check_container(r))?;
        Ok(HURRAY_OK)
    })
}

/// Checks every stored payload CRC32C in the container, reading each payload through
/// `read_at` in windows of at most 1 MiB (a span reader checks it in place): memory stays one
/// window whatever a tensor's size, and `max_tensor_bytes` does not apply. A tensor whose
/// layout has a contents check (sparse indices, page tables) is then read whole and checked
/// (`max_tensor_bytes` applies to it). Runs whatever the payload-check flags; with
/// `hurray_file_reader_verify` it checks every byte of the file. A ranges reader repeats the
/// call after each `NEED_INPUT` and it resumes where it stopped (so does a call repeated after
/// a `TRANSPORT` failure). Added within ABI 4.
///
/// Errors: `HURRAY_ERR_CORRUPT` (a checksum mismatch, the message naming the tensor and
/// buffer; bad sparse indices or page table), `HURRAY_ERR_TRUNCATED`, `HURRAY_ERR_TRANSPORT`,
/// `HURRAY_ERR_NEED_INPUT`, those of `hurray_file_reader_entry` and
/// `hurray_file_reader_read_tensor`.
///
/// # Safety
/// `reader` live.
#[no_mangle]
pub unsafe extern "C" fn hurray_file_reader_verify_payloads(reader: *mut HurrayFileReader) -> HurrayStatus {
    guard("hurray_file_reader_verify_payloads", || {
        let inner = handle::handle_mut!(reader)?;
        with_reader!(inner, |r| r.verify_payloads())?;
        Ok(HURRAY_OK)
    })
}

/// Destroys a container reader (releasing its transport) and writes NULL to `*reader`.
/// Entries and tensors already obtained stay valid (span tensors still need the region).
/// NULL or `*reader == NULL` is a no-op.
///
/// # Safety
/// `reader` NULL or valid for read and write.
#[no_mangle]
pub unsafe extern "C" fn hurray_file_reader_destroy(reader: *mut *mut HurrayFileReader) -> HurrayStatus {
    guard("hurray_file_reader_destroy", || {
        // SAFETY: `reader` is NULL or valid for a read and a write; `*reader` is NULL or a handle from this library
        // (# Safety).
        unsafe { handle::destroy_pp(reader, "reader")? };
        Ok(HURRAY_OK)
    })
}
