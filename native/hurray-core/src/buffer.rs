//! Buffer handles (the fixed 16-byte binary descriptor of one buffer) and the aligned
//! allocation the reader fills (docs/spec/descriptor.md §Buffer handle).

use std::alloc::{self, Layout};
use std::mem::MaybeUninit;
use std::ptr::NonNull;

use crate::error::{bail, err, Result};
use crate::types::{DeviceTag, SyncMode};
use crate::{MAX_BUFFER_ALIGNMENT, MIN_BUFFER_ALIGNMENT};

/// Smallest step by which a [growable](AlignedBuf::growable) buffer grows, in bytes.
pub const GROW_MIN_BYTES: usize = 64 * 1024;

/// Encoded size of a buffer handle in bytes.
pub const BUFFER_HANDLE_BYTES: usize = 16;

/// Byte offset of the `sync_mode` byte inside the encoded buffer handle (docs/spec/descriptor.md
/// §Buffer handle; the handoff cross-check reads it there).
pub const SYNC_MODE_OFFSET: usize = 13;

/// Describes one buffer of a tensor: how many bytes, at what alignment, on which device, and
/// how the producer synchronised it. It describes memory; it does not own any.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct BufferHandle {
    byte_size: u64,
    alignment: u64,
    device_tag: DeviceTag,
    sync_mode: SyncMode,
}

impl BufferHandle {
    /// Makes a handle for `byte_size` bytes aligned to `alignment` bytes.
    ///
    /// Errors: `InvalidAlignment` unless `alignment` is a power of two in
    /// `[device_tag.min_alignment(), MAX_BUFFER_ALIGNMENT]` (64 for CPU, 4096 for GPU and IPC
    /// tags, at most 2 MiB).
    pub fn new(byte_size: u64, alignment: u64, device_tag: DeviceTag, sync_mode: SyncMode) -> Result<Self> {
        check_alignment(alignment, device_tag)?;
        Ok(BufferHandle { byte_size, alignment, device_tag, sync_mode })
    }

    /// Payload size in bytes.
    pub fn byte_size(&self) -> u64 {
        self.byte_size
    }

    /// Alignment in bytes (a power of two).
    pub fn alignment(&self) -> u64 {
        self.alignment
    }

    /// Where the memory lives.
    pub fn device_tag(&self) -> DeviceTag {
        self.device_tag
    }

    /// The producer's synchronisation mechanism.
    pub fn sync_mode(&self) -> SyncMode {
        self.sync_mode
    }

    /// This handle with another sync mode (all else equal). Readers use it to describe host
    /// memory they filled themselves, which is [`SyncMode::ProducerSynced`] whatever the wire
    /// declared (docs/spec/c-abi.md §Buffer handoff and sync modes).
    pub fn with_sync_mode(self, sync_mode: SyncMode) -> Self {
        BufferHandle { sync_mode, ..self }
    }

    /// The 16-byte binary descriptor: byte_size u64, alignment u32, device_tag u8, sync_mode u8
    /// (offset 13), two reserved zero bytes. Little-endian.
    pub fn encode(&self) -> [u8; BUFFER_HANDLE_BYTES] {
        let mut b = [0u8; BUFFER_HANDLE_BYTES];
        b[0..8].copy_from_slice(&self.byte_size.to_le_bytes());
        b[8..12].copy_from_slice(&(self.alignment as u32).to_le_bytes());
        b[12] = self.device_tag.code();
        b[SYNC_MODE_OFFSET] = self.sync_mode.code();
        b
    }

    /// Decodes and validates a 16-byte binary descriptor.
    ///
    /// Errors: `Corrupt` if `bytes` is not 16 bytes long or a reserved byte is non-zero;
    /// `InvalidSyncMode`, `InvalidAlignment`, `InvalidArgument` (device tag) as for [`new`].
    ///
    /// [`new`]: BufferHandle::new
    pub fn decode(bytes: &[u8]) -> Result<Self> {
        if bytes.len() != BUFFER_HANDLE_BYTES {
            bail!(Corrupt, "a buffer handle is {BUFFER_HANDLE_BYTES} bytes, got {}", bytes.len());
        }
        let byte_size = u64::from_le_bytes(bytes[0..8].try_into().unwrap());
        let alignment = u64::from(u32::from_le_bytes(bytes[8..12].try_into().unwrap()));
        let device_tag = DeviceTag::from_code(bytes[12])?;
        let sync_mode = SyncMode::from_code(bytes[SYNC_MODE_OFFSET])?;
        if bytes[14] != 0 || bytes[15] != 0 {
            bail!(Corrupt, "reserved bytes of a buffer handle are not zero");
        }
        BufferHandle::new(byte_size, alignment, device_tag, sync_mode)
    }
}

/// The alignment of an [`AlignedBuf`]: a power of two, at most [`MAX_BUFFER_ALIGNMENT`].
fn check_buf_alignment(align: u64) -> Result<usize> {
    if align == 0 || !align.is_power_of_two() || align > MAX_BUFFER_ALIGNMENT {
        bail!(InvalidAlignment, "alignment {align} is not a supported power of two");
    }
    Ok(align as usize)
}

/// Checks an alignment for a device tag (see [`BufferHandle::new`]).
pub fn check_alignment(alignment: u64, device_tag: DeviceTag) -> Result<()> {
    if alignment == 0 || !alignment.is_power_of_two() {
        bail!(InvalidAlignment, "alignment {alignment} is not a power of two");
    }
    let min = device_tag.min_alignment();
    if alignment < min {
        bail!(InvalidAlignment, "alignment {alignment} is below {min}, the minimum for {device_tag:?}");
    }
    if alignment > MAX_BUFFER_ALIGNMENT {
        bail!(InvalidAlignment, "alignment {alignment} exceeds the maximum {MAX_BUFFER_ALIGNMENT}");
    }
    debug_assert!(alignment >= MIN_BUFFER_ALIGNMENT);
    Ok(())
}

/// Alignment of the allocator blocks behind a [growable](AlignedBuf::growable) buffer: what the
/// C allocator's `malloc` guarantees on 64-bit platforms, so that growing is the allocator's
/// own `realloc` (see [`AlignedBuf::grow_if_full`]).
const BLOCK_ALIGN: usize = 16;

/// How an [`AlignedBuf`]'s allocation relates to its bytes (kept in the buffer as one `u32`,
/// [`EXACT`] or the offset, so that the buffer stays five words long).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Block {
    /// The allocation is exactly `cap` bytes at `ptr`, aligned to `align`.
    Exact,
    /// The allocation is a block of `cap + slack(align)` bytes aligned to
    /// `min(align, BLOCK_ALIGN)` that starts `offset` bytes before `ptr`: the bytes sit at the
    /// block's first `align`-aligned address, so the block can be given to `realloc`, which
    /// may enlarge it without moving the bytes (see [`AlignedBuf::grow_if_full`]).
    Slack { offset: usize },
}

/// The stored form of [`Block::Exact`]; any other value is a [`Block::Slack`] offset (an
/// offset is below the alignment, at most 2 MiB).
const EXACT: u32 = u32::MAX;

/// Alignment of a [`Block::Slack`] block for buffers aligned to `align`.
fn block_align(align: usize) -> usize {
    align.min(BLOCK_ALIGN)
}

/// Bytes a [`Block::Slack`] block needs beyond the buffer's capacity, so that an
/// `align`-aligned address with `cap` bytes after it lies inside wherever the block starts.
fn slack(align: usize) -> usize {
    align - block_align(align)
}

/// An owned, aligned heap allocation filled front to back. Bytes `[0, filled)` are initialised;
/// the rest are not and can only be reached as `MaybeUninit`. The allocation may be larger
/// than the buffer (`capacity() >= len()`) when a [`BufferPool`](crate::BufferPool) reuses it
/// for a shorter payload; only `[0, len)` is ever reachable. A stream reader's buffer may also
/// start smaller than its length (`capacity() < len()`, see [`AlignedBuf::growable`]) and grow
/// as its bytes arrive, so a declared size costs memory only once the input backs it up.
pub struct AlignedBuf {
    ptr: NonNull<u8>,
    len: usize,
    cap: usize,
    filled: usize,
    align: u32,
    block: u32,
}

// SAFETY: AlignedBuf owns its allocation exclusively, like a Vec<u8>.
unsafe impl Send for AlignedBuf {}
// SAFETY: shared access only reads initialised bytes.
unsafe impl Sync for AlignedBuf {}

/// Checks `len` against the address space, with room for an alignment's worth of slack.
fn fit_len(len: u64, align: usize) -> Result<usize> {
    usize::try_from(len)
        .ok()
        .filter(|&l| l <= isize::MAX as usize - align)
        .ok_or_else(|| err!(LimitExceeded, "{len} bytes do not fit in the address space"))
}

impl AlignedBuf {
    /// Reserves `len` bytes aligned to `align` (a power of two). Memory is not touched, so a
    /// large reservation costs address space, not resident memory, until it is filled.
    ///
    /// Errors: `InvalidAlignment` for a bad alignment, `LimitExceeded` when `len` does not fit
    /// the address space, `OutOfMemory` when the allocator refuses.
    pub fn new(len: u64, align: u64) -> Result<Self> {
        let align = check_buf_alignment(align)?;
        let len = fit_len(len, align)?;
        if len == 0 {
            return Ok(AlignedBuf::empty(align));
        }
        let layout =
            Layout::from_size_align(len, align).map_err(|_| err!(InvalidAlignment, "bad layout {len}/{align}"))?;
        // SAFETY: layout has non-zero size.
        let raw = unsafe { alloc::alloc(layout) };
        let ptr =
            NonNull::new(raw).ok_or_else(|| err!(OutOfMemory, "could not allocate {len} bytes aligned to {align}"))?;
        Ok(AlignedBuf { ptr, len, cap: len, filled: 0, align: align as u32, block: EXACT })
    }

    /// A zero-capacity buffer: a dangling pointer with the requested alignment, valid for
    /// zero-byte access.
    fn empty(align: usize) -> Self {
        let ptr = NonNull::new(align as *mut u8).expect("align is non-zero");
        AlignedBuf { ptr, len: 0, cap: 0, filled: 0, align: align as u32, block: EXACT }
    }

    /// A buffer of `len` bytes aligned to `align` whose allocation starts at
    /// `min(len, initial)` bytes and grows (see [`grow_if_full`](Self::grow_if_full)) as it is
    /// filled. The address of the bytes may change when it grows, never after it is full.
    ///
    /// Errors: as [`new`](Self::new) (`len` is checked against the address space up front).
    pub fn growable(len: u64, align: u64, initial: usize) -> Result<Self> {
        let align = check_buf_alignment(align)?;
        let len = fit_len(len, align)?;
        if len <= initial {
            return Self::new(len as u64, align as u64);
        }
        let mut b = AlignedBuf::empty(align);
        b.len = len;
        b.block = 0;
        if initial > 0 {
            b.resize_block(initial)?;
        }
        Ok(b)
    }

    /// When every allocated byte is filled but the buffer is not full, enlarges the
    /// allocation to `min(len, max(2 × capacity, 64 KiB))`, keeping the filled prefix. A no-op
    /// otherwise. So the allocation is never more than twice the bytes filled plus 64 KiB.
    ///
    /// The filled bytes are not copied where the allocator can avoid it: a growable buffer's
    /// block goes to the allocator's `realloc`, which enlarges it in place when the memory
    /// after it is free, and which (glibc, for blocks it maps, i.e. every block above its mmap
    /// threshold of at most 32 MiB) moves a large block by remapping its pages, so neither the
    /// bytes nor their pages are touched again. Only when the block comes back at another
    /// offset from the alignment (a small block the allocator moved by copying) are the filled
    /// bytes moved inside it.
    ///
    /// Errors: `OutOfMemory` when the allocator refuses (the buffer is unchanged).
    pub fn grow_if_full(&mut self) -> Result<()> {
        if self.filled < self.cap.min(self.len) || self.filled == self.len {
            return Ok(());
        }
        let new_cap = self.len.min(self.cap.saturating_mul(2).max(GROW_MIN_BYTES));
        // An exact allocation holds its whole length (cap >= len), so it returned above.
        debug_assert!(matches!(self.block(), Block::Slack { .. }));
        self.resize_block(new_cap)
    }

    /// Gives a [`Block::Slack`] buffer an allocation of `new_cap` bytes (more than its
    /// capacity), keeping its filled prefix; the buffer is unchanged on error.
    fn resize_block(&mut self, new_cap: usize) -> Result<()> {
        let Block::Slack { offset } = self.block() else {
            unreachable!("resize_block on an exact allocation");
        };
        debug_assert!(new_cap > self.cap && new_cap <= self.len);
        let align = self.align();
        let balign = block_align(align);
        let new_size = new_cap + slack(align);
        let raw = if self.cap == 0 {
            // SAFETY: the layout has non-zero size (new_cap > cap == 0) and a valid alignment
            // (a power of two); its size fits isize once rounded up (new_cap <= len, checked by
            // `fit_len` with room for the slack).
            unsafe { alloc::alloc(Layout::from_size_align_unchecked(new_size, balign)) }
        } else {
            // SAFETY: the block starts `offset` bytes before ptr and was allocated with exactly
            // this layout (cap + slack, balign); new_size is non-zero and fits isize as above.
            unsafe {
                alloc::realloc(
                    self.ptr.as_ptr().sub(offset),
                    Layout::from_size_align_unchecked(self.cap + slack(align), balign),
                    new_size,
                )
            }
        };
        let raw = NonNull::new(raw).ok_or_else(|| {
            err!(OutOfMemory, "could not grow a buffer to {new_cap} bytes ({} of {} received)", self.filled, self.len)
        })?;
        // The block is aligned to block_align, so this is at most the slack.
        let new_offset = (align - (raw.as_ptr() as usize & (align - 1))) & (align - 1);
        if self.cap != 0 && new_offset != offset {
            // SAFETY: realloc kept the block's first cap + slack bytes, so the filled prefix
            // is at `offset`; both ranges lie inside the new block (offsets at most the slack,
            // filled <= cap < new_cap). `copy` allows the overlap.
            unsafe { std::ptr::copy(raw.as_ptr().add(offset), raw.as_ptr().add(new_offset), self.filled) };
        }
        // SAFETY: new_offset <= slack, inside the block of new_cap + slack bytes.
        self.ptr = unsafe { raw.add(new_offset) };
        self.cap = new_cap;
        self.block = new_offset as u32;
        Ok(())
    }

    /// Copies `bytes` into a new buffer aligned to `align`.
    pub fn from_slice(bytes: &[u8], align: u64) -> Result<Self> {
        let mut b = Self::new(bytes.len() as u64, align)?;
        b.spare_mut().write_copy_of_slice(bytes);
        b.filled = bytes.len();
        Ok(b)
    }

    /// Total size in bytes.
    pub fn len(&self) -> usize {
        self.len
    }

    /// True when the size is 0.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Size of the underlying allocation in bytes (≥ [`len`](Self::len)).
    pub fn capacity(&self) -> usize {
        self.cap
    }

    /// Alignment in bytes.
    pub fn align(&self) -> usize {
        self.align as usize
    }

    /// How the allocation relates to the bytes.
    fn block(&self) -> Block {
        match self.block {
            EXACT => Block::Exact,
            offset => Block::Slack { offset: offset as usize },
        }
    }

    /// Bytes initialised so far.
    pub fn filled(&self) -> usize {
        self.filled
    }

    /// True when every byte is initialised.
    pub fn is_full(&self) -> bool {
        self.filled == self.len
    }

    /// The not-yet-filled tail of the allocation (shorter than `len() - filled()` while a
    /// [growable](Self::growable) buffer has not grown to its length).
    pub fn spare_mut(&mut self) -> &mut [MaybeUninit<u8>] {
        // SAFETY: [filled, min(len, cap)) lies inside the allocation; MaybeUninit needs no init.
        unsafe {
            std::slice::from_raw_parts_mut(
                self.ptr.as_ptr().add(self.filled) as *mut MaybeUninit<u8>,
                self.len.min(self.cap) - self.filled,
            )
        }
    }

    /// Marks `n` more bytes of the spare tail as initialised. Only the crate may call it,
    /// right after those bytes were written through [`spare_mut`](Self::spare_mut).
    pub(crate) fn advance(&mut self, n: usize) {
        assert!(n <= self.len.min(self.cap) - self.filled, "advance past the end");
        self.filled += n;
    }

    /// Forgets the contents (for reuse as a scratch buffer).
    pub(crate) fn clear(&mut self) {
        self.filled = 0;
    }

    /// Reuses the allocation as an empty buffer of `len` bytes (`len <= capacity()`): nothing
    /// is initialised until it is written again through [`spare_mut`](Self::spare_mut).
    pub(crate) fn reset(&mut self, len: usize) {
        assert!(len <= self.cap, "reset beyond the allocation");
        self.len = len;
        self.filled = 0;
    }

    /// The initialised prefix.
    pub fn as_slice(&self) -> &[u8] {
        // SAFETY: [0, filled) is initialised.
        unsafe { std::slice::from_raw_parts(self.ptr.as_ptr(), self.filled) }
    }

    /// Pointer to the first byte (aligned; dangling but aligned when empty).
    pub fn as_ptr(&self) -> *const u8 {
        self.ptr.as_ptr()
    }

    /// Mutable pointer to the first byte.
    pub fn as_mut_ptr(&mut self) -> *mut u8 {
        self.ptr.as_ptr()
    }
}

impl Drop for AlignedBuf {
    fn drop(&mut self) {
        if self.cap == 0 {
            return;
        }
        let align = self.align();
        match self.block() {
            // SAFETY: allocated in `new` with exactly this layout.
            Block::Exact => unsafe {
                alloc::dealloc(self.ptr.as_ptr(), Layout::from_size_align_unchecked(self.cap, align))
            },
            // SAFETY: the block starts `offset` bytes before ptr, allocated in `resize_block`
            // with exactly this layout.
            Block::Slack { offset } => unsafe {
                alloc::dealloc(
                    self.ptr.as_ptr().sub(offset),
                    Layout::from_size_align_unchecked(self.cap + slack(align), block_align(align)),
                )
            },
        }
    }
}

impl std::fmt::Debug for AlignedBuf {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "AlignedBuf({} of {} bytes, capacity {}, align {})", self.filled, self.len, self.cap, self.align)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ErrorKind;

    #[test]
    fn handle_round_trip_and_sync_offset() {
        let h = BufferHandle::new(1234, 4096, DeviceTag::Cuda, SyncMode::Event).unwrap();
        let b = h.encode();
        assert_eq!(b[SYNC_MODE_OFFSET], 0x01);
        assert_eq!(BufferHandle::decode(&b).unwrap(), h);
    }

    #[test]
    fn bad_alignments() {
        for a in [0u64, 3, 32, 1 << 30, 1 << 63] {
            let e = BufferHandle::new(1, a, DeviceTag::Cpu, SyncMode::ProducerSynced).unwrap_err();
            assert_eq!(e.kind(), ErrorKind::InvalidAlignment, "alignment {a}");
        }
        let e = BufferHandle::new(1, 64, DeviceTag::Cuda, SyncMode::ProducerSynced).unwrap_err();
        assert_eq!(e.kind(), ErrorKind::InvalidAlignment);
    }

    #[test]
    fn reserved_sync_mode_rejected_on_decode() {
        let mut b = BufferHandle::new(1, 64, DeviceTag::Cpu, SyncMode::ProducerSynced).unwrap().encode();
        b[SYNC_MODE_OFFSET] = 0x03;
        assert_eq!(BufferHandle::decode(&b).unwrap_err().kind(), ErrorKind::InvalidSyncMode);
    }

    #[test]
    fn aligned_alloc() {
        for align in [64u64, 4096, 1 << 21] {
            let b = AlignedBuf::from_slice(&[1, 2, 3], align).unwrap();
            assert_eq!(b.as_ptr() as usize % align as usize, 0);
            assert_eq!(b.as_slice(), &[1, 2, 3]);
        }
        let e = AlignedBuf::new(0, 64).unwrap();
        assert_eq!(e.as_ptr() as usize % 64, 0);
        assert_eq!(AlignedBuf::new(u64::MAX, 64).unwrap_err().kind(), ErrorKind::LimitExceeded);
    }

    /// Fills `b` in steps cycled from `steps`, growing before each and checking at every step
    /// that the filled bytes are intact, the pointer aligned and the allocation at most twice
    /// the bytes filled plus `slack_bytes`. Returns the bytes written.
    fn fill_checked(b: &mut AlignedBuf, steps: &[usize], slack_bytes: usize) -> Vec<u8> {
        let mut want = Vec::with_capacity(b.len());
        let mut k = 0usize;
        while !b.is_full() {
            let before = b.capacity();
            b.grow_if_full().unwrap();
            assert_eq!(b.as_ptr() as usize % b.align(), 0, "aligned after growing to {}", b.capacity());
            if b.capacity() != before {
                assert!(b.as_slice() == &want[..], "the filled prefix survives growing to {}", b.capacity());
            }
            assert!(
                b.capacity() <= 2 * b.filled() + slack_bytes,
                "capacity {} for {} filled",
                b.capacity(),
                b.filled()
            );
            let spare = b.spare_mut();
            let n = spare.len().min(steps[k % steps.len()]);
            let bytes: Vec<u8> = (0..n).map(|i| ((want.len() + i) * 7 + k) as u8).collect();
            spare[..n].write_copy_of_slice(&bytes);
            b.advance(n);
            want.extend_from_slice(&bytes);
            k += 1;
        }
        want
    }

    #[test]
    fn growable_buffers_grow_with_their_bytes_keeping_prefix_and_alignment() {
        for align in [64u64, 4096, 1 << 21] {
            // Steps that end exactly on each capacity boundary (64 KiB, then the whole offer),
            // straddle one (3001 bytes), and cross one a byte at a time.
            for (initial, steps) in [
                (GROW_MIN_BYTES, &[GROW_MIN_BYTES, 1, 1, usize::MAX][..]),
                (10, &[3001][..]),
                (0, &[1, GROW_MIN_BYTES - 1, 2][..]),
                (100_000, &[usize::MAX][..]),
            ] {
                let len = 12 * GROW_MIN_BYTES + 17;
                let mut b = AlignedBuf::growable(len as u64, align, initial).unwrap();
                assert_eq!((b.len(), b.capacity()), (len, initial));
                let want = fill_checked(&mut b, steps, GROW_MIN_BYTES.max(initial));
                assert_eq!(b.as_slice(), &want[..]);
                assert_eq!((b.len(), b.capacity()), (len, len));
                let at = b.as_ptr();
                b.grow_if_full().unwrap(); // full: neither grows nor moves
                assert_eq!((b.capacity(), b.as_ptr()), (len, at));
                // Reused as a pool reuses it: a shorter buffer in the same block, no growth.
                b.reset(len - 5);
                let again = fill_checked(&mut b, &[usize::MAX], len);
                assert_eq!((b.as_slice(), b.capacity()), (&again[..], len));
            }
        }
        // A length within the first allocation is an ordinary exact one.
        let b = AlignedBuf::growable(1000, 64, 4096).unwrap();
        assert_eq!((b.capacity(), b.block()), (1000, Block::Exact));
        // Starting from nothing, and a length the address space cannot hold.
        let mut z = AlignedBuf::growable(5, 64, 0).unwrap();
        assert_eq!(z.spare_mut().len(), 0);
        z.grow_if_full().unwrap();
        assert_eq!((z.capacity(), z.spare_mut().len()), (5, 5));
        assert_eq!(AlignedBuf::growable(u64::MAX, 64, 10).unwrap_err().kind(), ErrorKind::LimitExceeded);
    }

    /// Tensors hold their buffers in small heap vectors, and their size shifts where glibc
    /// places the large blocks around them: two more words made a stream of 4 MiB tensors kept
    /// alive trim and refault its heap every run (stream_bench: 13,280 faults instead of 1,024).
    #[test]
    #[cfg(target_pointer_width = "64")]
    fn a_buffer_is_five_words() {
        assert_eq!(std::mem::size_of::<AlignedBuf>(), 40);
    }

    #[test]
    fn a_growable_buffer_declaring_a_terabyte_allocates_by_its_bytes() {
        let mut b = AlignedBuf::growable(1 << 40, 64, GROW_MIN_BYTES).unwrap();
        assert_eq!(b.capacity(), GROW_MIN_BYTES, "only the first step is allocated");
        let mut filled = 0;
        for _ in 0..5 {
            b.grow_if_full().unwrap();
            let n = b.spare_mut().len();
            b.spare_mut().iter_mut().for_each(|x| {
                x.write(3);
            });
            b.advance(n);
            filled += n;
            assert!(b.capacity() <= 2 * filled, "capacity {} for {filled} bytes", b.capacity());
        }
        b.grow_if_full().unwrap();
        assert_eq!((b.filled(), b.capacity()), (16 * GROW_MIN_BYTES, 32 * GROW_MIN_BYTES));
        assert!(b.as_slice().iter().all(|&x| x == 3));
    }
}
