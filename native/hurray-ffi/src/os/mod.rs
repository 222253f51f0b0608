//! Everything that depends on the operating system, behind `cfg` in this one module: opening a
//! file by its OS path, positional reads, and read-only memory maps. A port to another
//! platform changes this file only; a platform without a branch here builds and answers
//! `UNSUPPORTED` for what it lacks (a memory map), or fails to build here, nowhere else.
//!
//! | what | Unix (64-bit) | Unix (32-bit) | Windows | elsewhere |
//! |---|---|---|---|---|
//! | path bytes | OS bytes | OS bytes | UTF-8 | UTF-8 |
//! | positional read | `pread` | `pread64` on Linux/Android, `pread` elsewhere | `seek_read` | does not build |
//! | memory map | `mmap`/`munmap` | `UNSUPPORTED` | `UNSUPPORTED` | `UNSUPPORTED` |
//! | FIFO-safe open | `O_NONBLOCK` on Linux | `O_NONBLOCK` on Linux | not needed | — |
//! | page allocator for large payloads ([`pages`]) | `mmap`/`mremap`/`madvise` on Linux x86_64, aarch64, riscv64 | global allocator | global allocator | global allocator |

pub mod pages;

use std::fs::File;
use std::mem::MaybeUninit;

use hurray_core::{Error, ErrorKind, Result as CoreResult};

use crate::panic::{FfiError, FfiResult};
use crate::status::*;

/// Opens `path` (OS bytes on Unix, UTF-8 elsewhere) read-only and returns it with its size.
/// Refuses anything but a regular file; on Linux it opens with `O_NONBLOCK`, so a FIFO or
/// device never blocks the open (the flag does nothing to reads of a regular file). Errors:
/// `INVALID_ARGUMENT` (empty, a NUL byte, not UTF-8 where required, not a regular file),
/// `NOT_FOUND`, `TRANSPORT` (any other OS failure; the message names it).
pub(crate) fn open_regular_file(path: &[u8]) -> FfiResult<(File, u64)> {
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
    Ok((file, meta.len()))
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

    // mmap(2)/munmap(2) only where off_t is 64 bits wide without a *64 variant: every 64-bit
    // Unix. PROT_READ and MAP_SHARED are 1 on Linux, Android, macOS and the BSDs.
    #[cfg(target_pointer_width = "64")]
    extern "C" {
        pub(super) fn mmap(
            addr: *mut c_void,
            len: usize,
            prot: c_int,
            flags: c_int,
            fd: c_int,
            off: i64,
        ) -> *mut c_void;
        pub(super) fn munmap(addr: *mut c_void, len: usize) -> c_int;
    }
    #[cfg(target_pointer_width = "64")]
    pub(super) const PROT_READ: c_int = 1;
    #[cfg(target_pointer_width = "64")]
    pub(super) const MAP_SHARED: c_int = 1;
}

/// Reads up to `dst.len()` bytes at `offset` of `file` (short counts are normal; 0 at the
/// end). `EINTR` is retried; any other failure is `Transport`, naming the OS error.
#[cfg(unix)]
pub(crate) fn read_at(file: &File, offset: u64, dst: &mut [MaybeUninit<u8>]) -> CoreResult<usize> {
    use std::os::fd::AsRawFd;
    let off = i64::try_from(offset)
        .map_err(|_| Error::new(ErrorKind::Transport, format!("read offset {offset} beyond 2^63")))?;
    // Linux moves at most 0x7ffff000 bytes per call; the caller loops on short counts.
    let len = dst.len().min(0x7fff_f000);
    loop {
        // SAFETY: `dst` is valid for `len` <= dst.len() bytes of writes, and pread writes only
        // initialised bytes into it (or nothing on failure); the fd is open while `file` lives.
        let n = unsafe { sys::pread(file.as_raw_fd(), dst.as_mut_ptr().cast(), len, off) };
        if n >= 0 {
            return Ok(n as usize);
        }
        let e = std::io::Error::last_os_error();
        if e.kind() != std::io::ErrorKind::Interrupted {
            return Err(Error::new(ErrorKind::Transport, format!("pread of {len} bytes at {offset}: {e}")));
        }
    }
}

/// Reads up to `dst.len()` bytes at `offset` of `file`.
#[cfg(windows)]
pub(crate) fn read_at(file: &File, offset: u64, dst: &mut [MaybeUninit<u8>]) -> CoreResult<usize> {
    use std::os::windows::fs::FileExt;
    // No uninitialised-buffer read here: zero the range first.
    for b in dst.iter_mut() {
        b.write(0);
    }
    // SAFETY: every byte of `dst` was initialised just above.
    let init = unsafe { &mut *(dst as *mut [MaybeUninit<u8>] as *mut [u8]) };
    file.seek_read(init, offset)
        .map_err(|e| Error::new(ErrorKind::Transport, format!("read of {} bytes at {offset}: {e}", init.len())))
}

/// A read-only, shared memory map of a whole file, unmapped when dropped (on any thread). The
/// pages stay valid after the file is closed; they are NOT protected against another process
/// shortening the file: touching a page past the new end raises `SIGBUS` (see
/// `hurray_file_reader_open_mapped`).
pub(crate) struct Mapping {
    ptr: *mut u8,
    len: usize,
}

// SAFETY: the map is read-only memory owned by this value alone; reading it from several
// threads at once is sound, and munmap may run on any thread.
unsafe impl Send for Mapping {}
// SAFETY: as above: shared references only read.
unsafe impl Sync for Mapping {}

impl Mapping {
    /// Maps the first `len` bytes (`len` > 0) of `file` read-only and shared. `UNSUPPORTED`
    /// where this module has no memory map; `TRANSPORT` when the OS refuses (the message
    /// names the error).
    #[cfg(all(unix, target_pointer_width = "64"))]
    pub(crate) fn map(file: &File, len: u64) -> FfiResult<Mapping> {
        use std::os::fd::AsRawFd;
        let len = usize::try_from(len)
            .ok()
            .filter(|&l| l > 0 && l <= isize::MAX as usize)
            .ok_or_else(|| FfiError::new(HURRAY_ERR_INVALID_ARGUMENT, format!("cannot map {len} bytes")))?;
        // SAFETY: a fresh read-only mapping at an address the kernel picks; no existing memory
        // is touched. The fd is open for the call; the map outlives it by POSIX rules.
        let p = unsafe { sys::mmap(std::ptr::null_mut(), len, sys::PROT_READ, sys::MAP_SHARED, file.as_raw_fd(), 0) };
        if p as usize == usize::MAX || p.is_null() {
            let e = std::io::Error::last_os_error();
            return Err(FfiError::new(HURRAY_ERR_TRANSPORT, format!("mmap of {len} bytes: {e}")));
        }
        Ok(Mapping { ptr: p.cast(), len })
    }

    /// No memory map on this platform.
    #[cfg(not(all(unix, target_pointer_width = "64")))]
    pub(crate) fn map(_file: &File, _len: u64) -> FfiResult<Mapping> {
        Err(FfiError::new(HURRAY_ERR_UNSUPPORTED, "this build has no memory map for this platform"))
    }

    /// The mapped bytes. Valid for as long as `self` lives.
    pub(crate) fn bytes(&self) -> &[u8] {
        // SAFETY: `ptr` is a live read-only mapping of `len` bytes until drop.
        unsafe { std::slice::from_raw_parts(self.ptr, self.len) }
    }
}

impl Drop for Mapping {
    fn drop(&mut self) {
        #[cfg(all(unix, target_pointer_width = "64"))]
        // SAFETY: `ptr`/`len` are exactly what mmap returned, unmapped once, here; nothing
        // borrows the bytes any more (every borrower holds this value alive).
        unsafe {
            sys::munmap(self.ptr.cast(), self.len);
        }
    }
}
