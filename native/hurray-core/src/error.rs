//! The one error type of the format core. Each [`ErrorKind`] maps to exactly one C ABI status
//! code (see `hurray-ffi`'s `status` module and docs/spec/c-abi.md).

use std::fmt;

/// What went wrong, as a closed set the C ABI can map to status codes.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum ErrorKind {
    /// A magic number did not match (stream header, descriptor, container).
    InvalidMagic,
    /// A version field names a version this build does not read.
    VersionMismatch,
    /// The layout is unknown, inconsistent with the shape, or reaches outside its buffer.
    InvalidLayout,
    /// Unknown element type code, or a type not allowed where it is used.
    InvalidType,
    /// A buffer or payload is smaller than the descriptor requires.
    BufferTooSmall,
    /// A sync_mode value in the reserved range 0x03–0xFE, or 0xFF.
    InvalidSyncMode,
    /// The handoff payload does not match the declared sync_mode (docs/spec/c-abi.md §Buffer
    /// handoff and sync modes).
    SyncModeMismatch,
    /// A transport callback reported failure (it moved no bytes).
    Transport,
    /// Input ended (read returned 0) in the middle of an item.
    Truncated,
    /// A checksum did not match, or bytes are structurally impossible.
    Corrupt,
    /// A writer failed after it had put part of an item on the wire; it accepts nothing more.
    Poisoned,
    /// The sink accepted 0 bytes: it is closed.
    SinkClosed,
    /// A declared size, rank, count or length exceeds a configured or format limit.
    LimitExceeded,
    /// An argument is out of its documented domain.
    InvalidArgument,
    /// A well-formed feature this build does not implement (reserved layouts, extensions).
    Unsupported,
    /// Alignment is zero, not a power of two, below the minimum for its device, or too large.
    InvalidAlignment,
    /// A shape whose element or byte count overflows u64, or a rank above the maximum.
    InvalidShape,
    /// An allocation failed.
    OutOfMemory,
    /// A lookup found nothing (container: no tensor of that name).
    NotFound,
    /// A name that must be unique is already present.
    DuplicateName,
    /// The call is not valid in the object's current state (e.g. write after finish).
    InvalidState,
    /// Not an error: a sans-I/O reader needs bytes its caller has not supplied yet
    /// (`file::Ranges`); the caller supplies them and repeats the call.
    NeedInput,
}

/// An error with its kind and a human-readable message.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Error {
    kind: ErrorKind,
    message: String,
}

impl Error {
    /// Makes an error of `kind` with `message`.
    pub fn new(kind: ErrorKind, message: impl Into<String>) -> Self {
        Error { kind, message: message.into() }
    }

    /// The error's kind.
    pub fn kind(&self) -> ErrorKind {
        self.kind
    }

    /// The human-readable message (no trailing newline).
    pub fn message(&self) -> &str {
        &self.message
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{:?}: {}", self.kind, self.message)
    }
}

impl std::error::Error for Error {}

/// Result alias used throughout the core.
pub type Result<T> = std::result::Result<T, Error>;

macro_rules! bail {
    ($kind:ident, $($arg:tt)*) => {
        return Err($crate::error::Error::new($crate::error::ErrorKind::$kind, format!($($arg)*)))
    };
}
pub(crate) use bail;

macro_rules! err {
    ($kind:ident, $($arg:tt)*) => {
        $crate::error::Error::new($crate::error::ErrorKind::$kind, format!($($arg)*))
    };
}
pub(crate) use err;
