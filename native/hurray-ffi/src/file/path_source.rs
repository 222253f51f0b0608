//! A container source that is a file the library opens itself (`hurray_file_reader_open_path`):
//! positional reads on a private file descriptor, so a caller in another language (Java) makes
//! no callback per read. The OS calls are in `crate::os`.

use std::fs::File;
use std::mem::MaybeUninit;

use hurray_core::file::ReadAt;
use hurray_core::Result as CoreResult;

use crate::os;
use crate::panic::FfiResult;

/// A regular file opened read-only, and its size when it was opened.
pub(crate) struct PathSource {
    file: File,
    size: u64,
}

impl PathSource {
    /// Opens `path` as [`os::open_regular_file`] does.
    pub(crate) fn open(path: &[u8]) -> FfiResult<PathSource> {
        let (file, size) = os::open_regular_file(path)?;
        Ok(PathSource { file, size })
    }
}

impl ReadAt for PathSource {
    fn size(&mut self) -> CoreResult<u64> {
        Ok(self.size)
    }

    fn read_at(&mut self, offset: u64, dst: &mut [MaybeUninit<u8>]) -> CoreResult<usize> {
        os::read_at(&self.file, offset, dst)
    }
}
