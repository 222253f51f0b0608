//! HRRYFILE containers through the C ABI (docs/spec/hrryfile.md §8 C ABI summary): a writer over a
//! transport's `write` and an encoder that hands its bytes to the caller instead, a reader over
//! a transport's `read_at`/`size`, over ranges the caller reads itself, over a file it opens or
//! maps, and over a caller's memory span (e.g. a memory map) that hands out payloads in place.
//!
//! Conventions of this module: counts, indexes, offsets and lengths are `uint64_t`; strings are
//! (pointer, length) pairs of UTF-8 bytes, never NUL-terminated on input; every out-pointer is
//! written only on `HURRAY_OK` unless said otherwise; borrowed pointers name their owner and
//! stay valid until that owner is destroyed. One handle, one thread at a time.

// cbindgen emits items into hurray.h in module declaration order: keep writer, reader, entry
// (blank lines keep rustfmt from sorting them).
mod writer;

mod encoder;

mod reader;

mod entry;

mod path_source;

pub use encoder::*;
pub use entry::*;
pub use reader::*;
pub use writer::*;

use std::mem::MaybeUninit;

use hurray_core::file::ReadAt;
use hurray_core::Result as CoreResult;

use crate::panic::{non_null, FfiError, FfiResult};
use crate::status::*;
use crate::transport::Owned;

impl ReadAt for Owned {
    fn size(&mut self) -> CoreResult<u64> {
        Owned::size(self)
    }
    fn read_at(&mut self, offset: u64, dst: &mut [MaybeUninit<u8>]) -> CoreResult<usize> {
        Owned::read_at(self, offset, dst)
    }
}

/// Refuses a container metadata key or value longer than the format allows
/// (`hurray_core::file::MAX_FILE_METADATA_*`), by its length alone, before any byte is read.
fn check_metadata_lengths(key_len: u64, value_len: u64) -> FfiResult<()> {
    if key_len > hurray_core::file::MAX_FILE_METADATA_KEY_BYTES as u64 {
        return Err(FfiError::new(
            HURRAY_ERR_LIMIT_EXCEEDED,
            format!("metadata key of {key_len} bytes exceeds {}", hurray_core::file::MAX_FILE_METADATA_KEY_BYTES),
        ));
    }
    if value_len > hurray_core::file::MAX_FILE_METADATA_VALUE_BYTES {
        return Err(FfiError::new(
            HURRAY_ERR_LIMIT_EXCEEDED,
            format!("metadata value of {value_len} bytes exceeds {}", hurray_core::file::MAX_FILE_METADATA_VALUE_BYTES),
        ));
    }
    Ok(())
}

/// `len` bytes at `p` as a slice; NULL is allowed only when `len` is 0.
unsafe fn bytes_arg<'a>(p: *const u8, len: u64, name: &str) -> FfiResult<&'a [u8]> {
    if len == 0 {
        return Ok(&[]);
    }
    non_null(p, name)?;
    let len = usize::try_from(len).ok().filter(|&l| l <= isize::MAX as usize).ok_or_else(|| {
        FfiError::new(HURRAY_ERR_INVALID_ARGUMENT, format!("{name}: length does not fit the address space"))
    })?;
    // SAFETY: the caller guarantees `p` is valid for `len` bytes.
    Ok(unsafe { std::slice::from_raw_parts(p, len) })
}
