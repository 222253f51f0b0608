//! A container source that is a file the library opens itself (`hurray_file_reader_open_path`):
//! positional reads on a private file descriptor, so a caller in another language (Java) makes
//! no callback per read.

use std::fs::File;
use std::mem::MaybeUninit;

use hurray_core::file::ReadAt;
use hurray_core::{Error, ErrorKind, Result as CoreResult};

use crate::panic::{FfiError, FfiResult};
use crate::status::*;

/// A regular file opened read-only, and its size when it was opened.
pub(crate) struct PathSource {
    file: File,
    size: u64,
}

impl PathSource {
    /// Opens `path` (OS bytes on Unix, UTF-8 elsewhere) read-only. Refuses anything but a
    /// regular file; on Linux it opens with `O_NONBLOCK`, so a FIFO or device never blocks the
    /// open (the flag does nothing to reads of a regular file).
    pub(crate) fn open(path: &[u8]) -> FfiResult<PathSource> {
        if path.is_empty() {
            return Err(FfiError::new(HURRAY_ERR_INVALID_ARGUMENT, "path is empty"));
        }
        if path.contains(&0) {
            return Err(FfiError::new(HURRAY_ERR_INVALID_ARGUMENT, "path contains a NUL byte"));
        }
        let shown = || String::from_utf8_lossy(path);
        let p = os_path(path)?;
        let mut o = std::fs::OpenOptions::new();
        o.read(true);
        nonblocking(&mut o);
        let file = o.open(p).map_err(|e| os_error(&e, &format!("opening {:?}", shown())))?;
        let meta = file.metadata().map_err(|e| os_error(&e, &format!("fstat of {:?}", shown())))?;
        if !meta.is_file() {
            let what = if meta.is_dir() { "a directory" } else { "not a regular file" };
            return Err(FfiError::new(HURRAY_ERR_INVALID_ARGUMENT, format!("{:?} is {what}", shown())));
        }
        Ok(PathSource { file, size: meta.len() })
    }
}

/// `NOT_FOUND` for a missing file, `TRANSPORT` for every other OS failure; the message names
/// the operation and the OS error.
fn os_error(e: &std::io::Error, what: &str) -> FfiError {
    let status = if e.kind() == std::io::ErrorKind::NotFound { HURRAY_ERR_NOT_FOUND } else { HURRAY_ERR_TRANSPORT };
    FfiError::new(status, format!("{what}: {e}"))
}

#[cfg(unix)]
fn os_path(path: &[u8]) -> FfiResult<&std::path::Path> {
    use std::os::unix::ffi::OsStrExt;
    Ok(std::path::Path::new(std::ffi::OsStr::from_bytes(path)))
}

#[cfg(not(unix))]
fn os_path(path: &[u8]) -> FfiResult<&std::path::Path> {
    std::str::from_utf8(path)
        .map(std::path::Path::new)
        .map_err(|_| FfiError::new(HURRAY_ERR_INVALID_ARGUMENT, "path is not UTF-8"))
}

/// Adds `O_NONBLOCK` where its value is the generic Linux one; elsewhere does nothing.
fn nonblocking(o: &mut std::fs::OpenOptions) {
    #[cfg(all(
        target_os = "linux",
        any(
            target_arch = "x86",
            target_arch = "x86_64",
            target_arch = "arm",
            target_arch = "aarch64",
            target_arch = "riscv64",
            target_arch = "powerpc64",
            target_arch = "s390x",
            target_arch = "loongarch64"
        )
    ))]
    {
        use std::os::unix::fs::OpenOptionsExt;
        o.custom_flags(0o4000);
    }
    let _ = o;
}

#[cfg(unix)]
mod sys {
    use std::ffi::{c_int, c_void};

    extern "C" {
        // POSIX pread(2); libc is linked by std. 32-bit Linux and Android take a 32-bit off_t
        // there: pread64 is the one with a 64-bit offset.
        #[cfg_attr(
            all(any(target_os = "linux", target_os = "android"), target_pointer_width = "32"),
            link_name = "pread64"
        )]
        pub(super) fn pread(fd: c_int, buf: *mut c_void, count: usize, offset: i64) -> isize;
    }
}

impl ReadAt for PathSource {
    fn size(&mut self) -> CoreResult<u64> {
        Ok(self.size)
    }

    #[cfg(unix)]
    fn read_at(&mut self, offset: u64, dst: &mut [MaybeUninit<u8>]) -> CoreResult<usize> {
        use std::os::fd::AsRawFd;
        let off = i64::try_from(offset)
            .map_err(|_| Error::new(ErrorKind::Transport, format!("read offset {offset} beyond 2^63")))?;
        // Linux moves at most 0x7ffff000 bytes per call; the reader loops on short counts.
        let len = dst.len().min(0x7fff_f000);
        loop {
            // SAFETY: `dst` is valid for `len` <= dst.len() bytes of writes, and pread writes
            // only initialised bytes into it (or nothing on failure); the fd is open for as
            // long as `self.file` lives.
            let n = unsafe { sys::pread(self.file.as_raw_fd(), dst.as_mut_ptr().cast(), len, off) };
            if n >= 0 {
                return Ok(n as usize);
            }
            let e = std::io::Error::last_os_error();
            if e.kind() != std::io::ErrorKind::Interrupted {
                return Err(Error::new(ErrorKind::Transport, format!("pread of {len} bytes at {offset}: {e}")));
            }
        }
    }

    #[cfg(not(unix))]
    fn read_at(&mut self, offset: u64, dst: &mut [MaybeUninit<u8>]) -> CoreResult<usize> {
        use std::os::windows::fs::FileExt;
        // No uninitialised-buffer read here: zero the range first.
        for b in dst.iter_mut() {
            b.write(0);
        }
        // SAFETY: every byte of `dst` was initialised just above.
        let init = unsafe { &mut *(dst as *mut [MaybeUninit<u8>] as *mut [u8]) };
        self.file
            .seek_read(init, offset)
            .map_err(|e| Error::new(ErrorKind::Transport, format!("read of {} bytes at {offset}: {e}", init.len())))
    }
}
