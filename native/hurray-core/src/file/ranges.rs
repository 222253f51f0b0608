//! A container source whose bytes the caller reads itself, between calls (docs/spec/c-abi.md
//! §Containers without a transport): the sans-I/O shape of [`ReadAt`].
//!
//! A [`FileReader`](super::FileReader) over [`Ranges`] runs exactly as over any source, but a
//! read of bytes the caller has not supplied fails with [`ErrorKind::NeedInput`] and records
//! the range ([`Ranges::pending`]). The caller reads that range from wherever it likes (a
//! positional read of a file, at its own pace, outside any call into the reader), hands the
//! bytes over with [`Ranges::supply`], and repeats the call that failed. The repeat runs from
//! the start and finds every range supplied so far, so each repeat gets one range further; a
//! call that reads `k` ranges returns `NeedInput` `k` times. Reader methods leave the reader
//! unchanged when they fail for want of input, as for any source failure, so nothing is lost.
//!
//! Where the bytes go: a payload read by
//! [`FileReader::read_tensor_in_place`](super::FileReader::read_tensor_in_place) is requested
//! straight into the tensor's own aligned allocation, which the reader keeps across the repeats
//! (no copy). Every other range (trailer, header, index, records, metadata, padding) goes into
//! a buffer of the source's own and is copied out when the repeat asks for it.
//!
//! Memory: ranges supplied during one call are kept until a later call starts
//! ([`Ranges::begin_call`]) without a range having been supplied since the last one, i.e. until
//! the repeated call completed or was given up; they are bounded by what that call reads.

use std::mem::MaybeUninit;

use super::reader::ReadAt;
use crate::buffer::AlignedBuf;
use crate::error::{bail, Error, ErrorKind, Result};
use crate::MIN_BUFFER_ALIGNMENT;

/// A range the reader asked for.
#[derive(Debug)]
struct Request {
    offset: u64,
    len: u64,
    /// Where the bytes go: the source's own buffer, or memory of the reader's that it keeps
    /// across repeats (its address).
    dst: Dst,
}

#[derive(Debug)]
enum Dst {
    Own(AlignedBuf),
    InPlace(usize),
}

/// Bytes supplied into the reader's own memory: `filled` bytes from `offset` at address `addr`.
#[derive(Clone, Copy, Debug)]
struct InPlace {
    offset: u64,
    addr: usize,
    filled: u64,
}

/// Where the caller writes the bytes of the pending read ([`Ranges::pending`]).
#[derive(Debug)]
pub enum PendingDst<'a> {
    /// A buffer of the source's own (`len` bytes).
    Own(&'a mut [MaybeUninit<u8>]),
    /// Memory of the reader's at this address, `len` bytes (a tensor buffer the reader keeps
    /// until the repeated call).
    InPlace(usize),
}

/// The read the caller is asked to make.
#[derive(Debug)]
pub struct PendingRead<'a> {
    /// Absolute offset of the first byte.
    pub offset: u64,
    /// Bytes wanted (at least 1); supplying fewer is allowed.
    pub len: u64,
    /// Where they go.
    pub dst: PendingDst<'a>,
}

/// A source of `size` bytes that the caller reads and supplies range by range (see the module
/// documentation). `Send`; one thread at a time.
#[derive(Debug)]
pub struct Ranges {
    size: u64,
    /// Supplied copies: (offset, bytes), in supply order; a supply that continues the last
    /// one extends it, so a range read in many short reads is one window.
    windows: Vec<(u64, Vec<u8>)>,
    /// A supply of 0 bytes said the source ends here.
    end: Option<u64>,
    in_place: Option<InPlace>,
    request: Option<Request>,
    /// A range was supplied since the last [`begin_call`](Self::begin_call).
    resumed: bool,
    /// The next miss asks for the bytes in the destination's own memory.
    next_in_place: bool,
    /// Ranges supplied with at least one byte (the reader's read counter).
    supplied: u64,
}

impl Ranges {
    /// A source of `size` bytes (the size of the file the caller reads).
    pub fn new(size: u64) -> Self {
        Ranges {
            size,
            windows: Vec::new(),
            end: None,
            in_place: None,
            request: None,
            resumed: false,
            next_in_place: false,
            supplied: 0,
        }
    }

    /// The read the last `NeedInput` asked for, if it is still pending.
    pub fn pending(&mut self) -> Option<PendingRead<'_>> {
        let r = self.request.as_mut()?;
        let dst = match &mut r.dst {
            Dst::Own(b) => PendingDst::Own(b.spare_mut()),
            Dst::InPlace(a) => PendingDst::InPlace(*a),
        };
        Some(PendingRead { offset: r.offset, len: r.len, dst })
    }

    /// Records that the caller wrote `filled` bytes of the pending read into its destination
    /// (0: the input ends at the requested offset; the repeated call then reports `Truncated`). Each
    /// supply counts as one read ([`FileReader::read_calls`](super::FileReader::read_calls)).
    /// The caller then repeats the call that asked.
    ///
    /// Errors (nothing recorded): `InvalidState` (no read pending), `InvalidArgument`
    /// (`filled` larger than the length asked for).
    pub fn supply(&mut self, filled: u64) -> Result<()> {
        let Some(r) = self.request.as_ref() else {
            bail!(InvalidState, "no read is pending: the reader did not ask for input");
        };
        if filled > r.len {
            bail!(InvalidArgument, "{filled} bytes supplied for a read of {}", r.len);
        }
        let r = self.request.take().expect("checked above");
        if filled == 0 {
            self.end = Some(r.offset);
            self.resumed = true;
            return Ok(());
        }
        match r.dst {
            Dst::Own(mut b) => {
                b.advance(filled as usize);
                match self.windows.last_mut() {
                    Some((at, w)) if *at + w.len() as u64 == r.offset => w.extend_from_slice(b.as_slice()),
                    _ => self.windows.push((r.offset, b.as_slice().to_vec())),
                }
            }
            Dst::InPlace(addr) => {
                self.in_place = match self.in_place {
                    // The rest of a range whose first part was supplied earlier.
                    Some(p) if p.offset + p.filled == r.offset && p.addr as u64 + p.filled == addr as u64 => {
                        Some(InPlace { filled: p.filled + filled, ..p })
                    }
                    _ => Some(InPlace { offset: r.offset, addr, filled }),
                };
            }
        }
        self.supplied += 1;
        self.resumed = true;
        Ok(())
    }

    /// Called when a reader call starts. Unless a range was supplied since the last call (the
    /// call is a repeat), forgets the ranges supplied before and any pending read.
    pub fn begin_call(&mut self) {
        if !self.resumed {
            self.windows.clear();
            self.in_place = None;
            self.end = None;
        }
        self.resumed = false;
        self.request = None;
        self.next_in_place = false;
    }

    /// Forgets bytes supplied into reader memory (the reader dropped that memory).
    pub(crate) fn forget_in_place(&mut self) {
        self.in_place = None;
        if matches!(self.request, Some(Request { dst: Dst::InPlace(_), .. })) {
            self.request = None;
        }
    }

    /// Makes the next miss ask for its bytes in the destination itself (which the reader keeps
    /// until the repeat).
    pub(crate) fn set_in_place(&mut self, on: bool) {
        self.next_in_place = on;
    }

    fn miss(&mut self, offset: u64, dst: &mut [MaybeUninit<u8>]) -> Result<usize> {
        let len = dst.len() as u64;
        let d = if self.next_in_place {
            Dst::InPlace(dst.as_mut_ptr() as usize)
        } else {
            Dst::Own(AlignedBuf::new(len, MIN_BUFFER_ALIGNMENT)?)
        };
        self.request = Some(Request { offset, len, dst: d });
        Err(Error::new(ErrorKind::NeedInput, format!("needs the {len} bytes at offset {offset}")))
    }
}

impl ReadAt for Ranges {
    fn size(&mut self) -> Result<u64> {
        Ok(self.size)
    }

    fn read_at(&mut self, offset: u64, dst: &mut [MaybeUninit<u8>]) -> Result<usize> {
        if let Some(p) = self.in_place {
            if p.offset == offset && p.addr == dst.as_mut_ptr() as usize {
                // The caller wrote these bytes into this very memory.
                return Ok(p.filled.min(dst.len() as u64) as usize);
            }
        }
        if self.end == Some(offset) {
            return Ok(0);
        }
        // Latest first: a repeat mostly asks again for what was supplied last.
        for (at, b) in self.windows.iter().rev() {
            if *at <= offset && offset < at + b.len() as u64 {
                let from = (offset - at) as usize;
                let n = dst.len().min(b.len() - from);
                dst[..n].write_copy_of_slice(&b[from..from + n]);
                return Ok(n);
            }
        }
        self.miss(offset, dst)
    }

    fn release(&mut self, offset: u64, len: u64) {
        self.windows.retain(|(at, b)| !(*at >= offset && at + b.len() as u64 <= offset + len));
    }

    fn reads_made(&self) -> Option<u64> {
        Some(self.supplied)
    }

    fn replayed(&self) -> bool {
        true
    }
}
