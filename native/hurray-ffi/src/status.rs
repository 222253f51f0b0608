//! Status codes (docs/spec/c-abi.md §Status codes: the original -1 to -7, extended for the
//! stream path).

use std::ffi::c_char;

use hurray_core::ErrorKind;

/// Result of every fallible call: 0 is success, positive values are non-error outcomes,
/// negative values are errors.
pub type HurrayStatus = i32;

/// Success.
pub const HURRAY_OK: HurrayStatus = 0;
/// The stream's end-of-stream marker was read at an item boundary. Positive: not an error.
pub const HURRAY_END_OF_STREAM: HurrayStatus = 1;
/// Not an error: a decoder (`hurray_decoder_next`) needs more input before it can go on.
/// Added in ABI 4 (additive); only the decoder functions return it.
pub const HURRAY_NEED_INPUT: HurrayStatus = 2;
/// A magic number did not match.
pub const HURRAY_ERR_INVALID_MAGIC: HurrayStatus = -1;
/// A version field names a version this build does not read.
pub const HURRAY_ERR_VERSION_MISMATCH: HurrayStatus = -2;
/// Unknown or inconsistent layout, or elements reaching outside their buffer's layout.
pub const HURRAY_ERR_INVALID_LAYOUT: HurrayStatus = -3;
/// Unknown element type code, or a type not allowed there.
pub const HURRAY_ERR_INVALID_TYPE: HurrayStatus = -4;
/// A buffer or payload is smaller than required (also: an output buffer too small).
pub const HURRAY_ERR_BUFFER_TOO_SMALL: HurrayStatus = -5;
/// A required pointer argument was NULL.
pub const HURRAY_ERR_NULL_POINTER: HurrayStatus = -6;
/// A Rust panic was caught at the boundary; the message is in the last-error slot.
pub const HURRAY_ERR_INTERNAL_PANIC: HurrayStatus = -7;
/// A sync_mode value in the reserved range 0x03–0xFE, or 0xFF.
pub const HURRAY_ERR_INVALID_SYNC_MODE: HurrayStatus = -8;
/// The handoff payload does not match the declared sync_mode.
pub const HURRAY_ERR_SYNC_MODE_MISMATCH: HurrayStatus = -9;
/// A transport callback failed; it moved no bytes, so the call can be retried (a reader
/// resumes mid-tensor).
pub const HURRAY_ERR_TRANSPORT: HurrayStatus = -10;
/// Input ended (read returned 0) inside an item or before the end-of-stream marker.
pub const HURRAY_ERR_TRUNCATED: HurrayStatus = -11;
/// A checksum mismatch or structurally impossible bytes.
pub const HURRAY_ERR_CORRUPT: HurrayStatus = -12;
/// The writer failed after writing part of an item and accepts nothing more.
pub const HURRAY_ERR_POISONED: HurrayStatus = -13;
/// The sink accepted 0 bytes (closed).
pub const HURRAY_ERR_SINK_CLOSED: HurrayStatus = -14;
/// A size, rank, count or length exceeds a configured or format limit.
pub const HURRAY_ERR_LIMIT_EXCEEDED: HurrayStatus = -15;
/// An argument is outside its documented domain.
pub const HURRAY_ERR_INVALID_ARGUMENT: HurrayStatus = -16;
/// A well-formed feature this build does not implement.
pub const HURRAY_ERR_UNSUPPORTED: HurrayStatus = -17;
/// Alignment zero, not a power of two, below the device minimum, too large, or a pointer not
/// aligned as declared.
pub const HURRAY_ERR_INVALID_ALIGNMENT: HurrayStatus = -18;
/// A shape whose element or byte count overflows u64, or a rank above the maximum.
pub const HURRAY_ERR_INVALID_SHAPE: HurrayStatus = -19;
/// A handle was used after it was destroyed (detected in debug builds).
pub const HURRAY_ERR_USE_AFTER_DESTROY: HurrayStatus = -20;
/// An allocation failed.
pub const HURRAY_ERR_OUT_OF_MEMORY: HurrayStatus = -21;
/// Nothing found (e.g. no tensor of that name in a container).
pub const HURRAY_ERR_NOT_FOUND: HurrayStatus = -22;
/// A name that must be unique is already present.
pub const HURRAY_ERR_DUPLICATE_NAME: HurrayStatus = -23;
/// The call is not valid in the handle's current state.
pub const HURRAY_ERR_INVALID_STATE: HurrayStatus = -24;

pub(crate) fn from_kind(kind: ErrorKind) -> HurrayStatus {
    match kind {
        ErrorKind::InvalidMagic => HURRAY_ERR_INVALID_MAGIC,
        ErrorKind::VersionMismatch => HURRAY_ERR_VERSION_MISMATCH,
        ErrorKind::InvalidLayout => HURRAY_ERR_INVALID_LAYOUT,
        ErrorKind::InvalidType => HURRAY_ERR_INVALID_TYPE,
        ErrorKind::BufferTooSmall => HURRAY_ERR_BUFFER_TOO_SMALL,
        ErrorKind::InvalidSyncMode => HURRAY_ERR_INVALID_SYNC_MODE,
        ErrorKind::SyncModeMismatch => HURRAY_ERR_SYNC_MODE_MISMATCH,
        ErrorKind::Transport => HURRAY_ERR_TRANSPORT,
        ErrorKind::Truncated => HURRAY_ERR_TRUNCATED,
        ErrorKind::Corrupt => HURRAY_ERR_CORRUPT,
        ErrorKind::Poisoned => HURRAY_ERR_POISONED,
        ErrorKind::SinkClosed => HURRAY_ERR_SINK_CLOSED,
        ErrorKind::LimitExceeded => HURRAY_ERR_LIMIT_EXCEEDED,
        ErrorKind::InvalidArgument => HURRAY_ERR_INVALID_ARGUMENT,
        ErrorKind::Unsupported => HURRAY_ERR_UNSUPPORTED,
        ErrorKind::InvalidAlignment => HURRAY_ERR_INVALID_ALIGNMENT,
        ErrorKind::InvalidShape => HURRAY_ERR_INVALID_SHAPE,
        ErrorKind::OutOfMemory => HURRAY_ERR_OUT_OF_MEMORY,
        ErrorKind::NotFound => HURRAY_ERR_NOT_FOUND,
        ErrorKind::DuplicateName => HURRAY_ERR_DUPLICATE_NAME,
        ErrorKind::InvalidState => HURRAY_ERR_INVALID_STATE,
        ErrorKind::NeedInput => HURRAY_NEED_INPUT,
        _ => HURRAY_ERR_INTERNAL_PANIC,
    }
}

/// The constant's name for a status (e.g. `"HURRAY_ERR_TRUNCATED"`), or `"HURRAY_UNKNOWN_STATUS"`.
/// Returns a static NUL-terminated string: never NULL, never freed. Thread-safe.
#[no_mangle]
pub extern "C" fn hurray_status_name(status: HurrayStatus) -> *const c_char {
    let s: &'static [u8] = match status {
        HURRAY_OK => b"HURRAY_OK\0",
        HURRAY_END_OF_STREAM => b"HURRAY_END_OF_STREAM\0",
        HURRAY_NEED_INPUT => b"HURRAY_NEED_INPUT\0",
        HURRAY_ERR_INVALID_MAGIC => b"HURRAY_ERR_INVALID_MAGIC\0",
        HURRAY_ERR_VERSION_MISMATCH => b"HURRAY_ERR_VERSION_MISMATCH\0",
        HURRAY_ERR_INVALID_LAYOUT => b"HURRAY_ERR_INVALID_LAYOUT\0",
        HURRAY_ERR_INVALID_TYPE => b"HURRAY_ERR_INVALID_TYPE\0",
        HURRAY_ERR_BUFFER_TOO_SMALL => b"HURRAY_ERR_BUFFER_TOO_SMALL\0",
        HURRAY_ERR_NULL_POINTER => b"HURRAY_ERR_NULL_POINTER\0",
        HURRAY_ERR_INTERNAL_PANIC => b"HURRAY_ERR_INTERNAL_PANIC\0",
        HURRAY_ERR_INVALID_SYNC_MODE => b"HURRAY_ERR_INVALID_SYNC_MODE\0",
        HURRAY_ERR_SYNC_MODE_MISMATCH => b"HURRAY_ERR_SYNC_MODE_MISMATCH\0",
        HURRAY_ERR_TRANSPORT => b"HURRAY_ERR_TRANSPORT\0",
        HURRAY_ERR_TRUNCATED => b"HURRAY_ERR_TRUNCATED\0",
        HURRAY_ERR_CORRUPT => b"HURRAY_ERR_CORRUPT\0",
        HURRAY_ERR_POISONED => b"HURRAY_ERR_POISONED\0",
        HURRAY_ERR_SINK_CLOSED => b"HURRAY_ERR_SINK_CLOSED\0",
        HURRAY_ERR_LIMIT_EXCEEDED => b"HURRAY_ERR_LIMIT_EXCEEDED\0",
        HURRAY_ERR_INVALID_ARGUMENT => b"HURRAY_ERR_INVALID_ARGUMENT\0",
        HURRAY_ERR_UNSUPPORTED => b"HURRAY_ERR_UNSUPPORTED\0",
        HURRAY_ERR_INVALID_ALIGNMENT => b"HURRAY_ERR_INVALID_ALIGNMENT\0",
        HURRAY_ERR_INVALID_SHAPE => b"HURRAY_ERR_INVALID_SHAPE\0",
        HURRAY_ERR_USE_AFTER_DESTROY => b"HURRAY_ERR_USE_AFTER_DESTROY\0",
        HURRAY_ERR_OUT_OF_MEMORY => b"HURRAY_ERR_OUT_OF_MEMORY\0",
        HURRAY_ERR_NOT_FOUND => b"HURRAY_ERR_NOT_FOUND\0",
        HURRAY_ERR_DUPLICATE_NAME => b"HURRAY_ERR_DUPLICATE_NAME\0",
        HURRAY_ERR_INVALID_STATE => b"HURRAY_ERR_INVALID_STATE\0",
        _ => b"HURRAY_UNKNOWN_STATUS\0",
    };
    s.as_ptr() as *const c_char
}
