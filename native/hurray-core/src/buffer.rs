//! Buffer handles (the fixed 16-byte binary descriptor of one buffer) and the aligned
//! allocation the reader fills (docs/spec/descriptor.md §Buffer handle), with the hook through
//! which the embedding layer supplies memory for large payloads ([`LargeAlloc`]).

use std::alloc::{self, Layout};
use std::mem::MaybeUninit;
use std::ptr::NonNull;
use std::sync::OnceLock;

use crate::error::{bail, err, Result};
use crate::types::{DeviceTag, SyncMode};
use crate::{MAX_BUFFER_ALIGNMENT, MIN_BUFFER_ALIGNMENT};

/// Smallest step by which a [growable](AlignedBuf::growable) buffer grows, in bytes.
pub const GROW_MIN_BYTES: usize = 64 * 1024;

/// Payload allocations of at least this many bytes (a buffer's length) go to the installed
/// [`LargeAlloc`], when there is one.
pub const LARGE_ALLOC_MIN_BYTES: usize = 32 << 20;

/// The same threshold for the allocations a buffer pool makes (`pool.rs`): a pooled
/// allocation is reused tensor after tensor, so the hook's fresh memory is paid for once and
/// its huge pages then serve every reuse (numpy advises huge pages from the same size). An
/// unpooled buffer of this size is better served by the C allocator, which hands freed blocks
/// below its mmap threshold (glibc: at most 32 MiB) out again without new pages.
pub const POOLED_LARGE_ALLOC_MIN_BYTES: usize = 4 << 20;

/// Where large payload regions come from: a hook the embedding layer may install once per
/// process (the C library installs its page allocator, `native/hurray-ffi/src/os/pages.rs`).
/// Without one, every buffer comes from the Rust global allocator. Buffers of at least
/// [`LARGE_ALLOC_MIN_BYTES`] ([`POOLED_LARGE_ALLOC_MIN_BYTES`] for a pool's) made after it is
/// installed are allocated, grown and freed by it;
/// buffers made before keep the global allocator. The bounds of docs/spec/stream.md §Limits
/// do not depend on the hook: it is asked for exactly the capacities the global allocator would
/// be asked for.
///
/// # Safety
///
/// Implementations must return memory that is valid for reads and writes of `size` bytes,
/// aligned to `align`, and owned by the caller until it is passed to
/// [`grow`](Self::grow) or [`free`](Self::free); `None` means nothing was allocated (the caller
/// falls back to the global allocator or reports `OutOfMemory`; a hook never aborts).
pub unsafe trait LargeAlloc: Sync {
    /// A region of `size` bytes (`size > 0`) aligned to `align` (a power of two, at most
    /// 2 MiB), or `None`.
    fn alloc(&self, size: usize, align: usize) -> Option<NonNull<u8>>;

    /// Enlarges the region at `ptr` from `old` to `new` bytes (`new > old`), keeping its first
    /// `old` bytes; the result is aligned to `align`. On `None` the region is unchanged.
    ///
    /// # Safety
    ///
    /// `ptr` came from this allocator with size `old` and alignment `align`, and is not used
    /// again when the call returns `Some`.
    unsafe fn grow(&self, ptr: NonNull<u8>, old: usize, new: usize, align: usize) -> Option<NonNull<u8>>;

    /// Releases the region.
    ///
    /// # Safety
    ///
    /// `ptr` came from this allocator with size `size` and alignment `align`, and is not used
    /// again.
    unsafe fn free(&self, ptr: NonNull<u8>, size: usize, align: usize);
}

static LARGE_ALLOC: OnceLock<&'static dyn LargeAlloc> = OnceLock::new();

/// Installs the process's [`LargeAlloc`]. The first installation wins and stays for the life
/// of the process (buffers it allocated are freed by it); returns whether this call installed
/// `alloc`.
pub fn install_large_alloc(alloc: &'static dyn LargeAlloc) -> bool {
    LARGE_ALLOC.set(alloc).is_ok()
}

/// The installed [`LargeAlloc`], if any.
fn large_alloc() -> Option<&'static dyn LargeAlloc> {
    LARGE_ALLOC.get().copied()
}

/// A region of `len` bytes aligned to `align` from the installed hook, if there is one and it
/// delivers.
fn large_region(len: usize, align: usize) -> Option<NonNull<u8>> {
    let p = large_alloc()?.alloc(len, align)?;
    debug_assert_eq!(p.as_ptr() as usize & (align - 1), 0, "LargeAlloc contract: aligned");
    Some(p)
}

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

    /// The same handle for bytes in host memory ([`DeviceTag::Cpu`]), as a reader's buffers
    /// are whatever device the producer's table named. The alignment stays valid: the CPU's
    /// minimum is the smallest of any device.
    pub fn in_host_memory(self) -> Self {
        BufferHandle { device_tag: DeviceTag::Cpu, ..self }
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
/// [`EXACT`], [`LARGE`] or the offset, so that the buffer stays five words long).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Block {
    /// The allocation is exactly `cap` bytes at `ptr`, aligned to `align`.
    Exact,
    /// The allocation is a block of `cap + slack(align)` bytes aligned to
    /// `min(align, BLOCK_ALIGN)` that starts `offset` bytes before `ptr`: the bytes sit at the
    /// block's first `align`-aligned address, so the block can be given to `realloc`, which
    /// may enlarge it without moving the bytes (see [`AlignedBuf::grow_if_full`]).
    Slack { offset: usize },
    /// The allocation is a region of `cap` bytes at `ptr` from the installed [`LargeAlloc`],
    /// aligned to `align`; a growable one grows through the hook.
    Large,
}

/// The stored form of [`Block::Exact`]; any value but this and [`LARGE`] is a
/// [`Block::Slack`] offset (an offset is below the alignment, at most 2 MiB).
const EXACT: u32 = u32::MAX;

/// The stored form of [`Block::Large`].
const LARGE: u32 = u32::MAX - 1;

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
        Self::new_with(len, align, LARGE_ALLOC_MIN_BYTES)
    }

    /// As [`new`](Self::new), asking the [`LargeAlloc`] hook from `large_min` bytes on.
    pub(crate) fn new_with(len: u64, align: u64, large_min: usize) -> Result<Self> {
        let align = check_buf_alignment(align)?;
        let len = fit_len(len, align)?;
        if len == 0 {
            return Ok(AlignedBuf::empty(align));
        }
        if len >= large_min {
            if let Some(ptr) = large_region(len, align) {
                return Ok(AlignedBuf { ptr, len, cap: len, filled: 0, align: align as u32, block: LARGE });
            }
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
        Self::growable_with(len, align, initial, LARGE_ALLOC_MIN_BYTES)
    }

    /// As [`growable`](Self::growable), asking the [`LargeAlloc`] hook from `large_min` bytes on.
    pub(crate) fn growable_with(len: u64, align: u64, initial: usize, large_min: usize) -> Result<Self> {
        let align = check_buf_alignment(align)?;
        let len = fit_len(len, align)?;
        if len <= initial {
            return Self::new_with(len as u64, align as u64, large_min);
        }
        let mut b = AlignedBuf::empty(align);
        b.len = len;
        b.block = if len >= large_min && large_alloc().is_some() { LARGE } else { 0 };
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
    /// bytes moved inside it. A buffer of at least [`LARGE_ALLOC_MIN_BYTES`] made while a
    /// [`LargeAlloc`] is installed grows through that hook instead; when the hook refuses, the
    /// buffer moves to the global allocator (one copy of the filled bytes) and grows there.
    ///
    /// Errors: `OutOfMemory` when the allocator refuses (the buffer is unchanged).
    pub fn grow_if_full(&mut self) -> Result<()> {
        if self.filled < self.cap.min(self.len) || self.filled == self.len {
            return Ok(());
        }
        let new_cap = self.len.min(self.cap.saturating_mul(2).max(GROW_MIN_BYTES));
        // An exact allocation holds its whole length (cap >= len), so it returned above.
        debug_assert!(!matches!(self.block(), Block::Exact));
        self.resize_block(new_cap)
    }

    /// Gives a [`Block::Slack`] or [`Block::Large`] buffer an allocation of `new_cap` bytes
    /// (more than its capacity), keeping its filled prefix; the buffer is unchanged on error.
    fn resize_block(&mut self, new_cap: usize) -> Result<()> {
        let offset = match self.block() {
            Block::Slack { offset } => offset,
            Block::Large => return self.resize_large(new_cap),
            Block::Exact => unreachable!("resize_block on an exact allocation"),
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

    /// [`resize_block`](Self::resize_block) for a [`Block::Large`] buffer: through the hook, or,
    /// when it refuses, into a [`Block::Slack`] block of the global allocator.
    fn resize_large(&mut self, new_cap: usize) -> Result<()> {
        let align = self.align();
        let hook = large_alloc().expect("a large block was made by the installed hook");
        let got = if self.cap == 0 {
            large_region(new_cap, align)
        } else {
            // SAFETY: the region at ptr came from this hook with size cap and this alignment;
            // on Some it is replaced by the result below and not used again.
            unsafe { hook.grow(self.ptr, self.cap, new_cap, align) }
        };
        match got {
            Some(p) => {
                debug_assert_eq!(p.as_ptr() as usize & (align - 1), 0, "LargeAlloc contract: aligned");
                self.ptr = p;
                self.cap = new_cap;
                Ok(())
            }
            None => self.move_to_heap(new_cap),
        }
    }

    /// Moves a [`Block::Large`] buffer's filled bytes into a new [`Block::Slack`] block of
    /// `new_cap` bytes from the global allocator (which it grows in from then on), freeing the
    /// region. Unchanged on error.
    fn move_to_heap(&mut self, new_cap: usize) -> Result<()> {
        let mut heap = AlignedBuf::empty(self.align());
        heap.len = self.len;
        heap.block = 0;
        heap.resize_block(new_cap)?;
        heap.spare_mut()[..self.filled].write_copy_of_slice(self.as_slice());
        heap.filled = self.filled;
        // The old buffer, now holding the region, frees it through the hook when dropped.
        drop(std::mem::replace(self, heap));
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
            LARGE => Block::Large,
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
            // SAFETY: a region of the installed hook (which never changes) of cap bytes at this
            // alignment, given back once.
            Block::Large => unsafe {
                large_alloc().expect("a large block was made by the installed hook").free(self.ptr, self.cap, align)
            },
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

    /// A [`LargeAlloc`] over the global allocator that counts, per thread, what it holds and
    /// can be told to refuse (tests run on many threads; each checks only its own).
    struct TestHook;

    #[derive(Clone, Copy, Default, Debug, PartialEq)]
    struct HookCounts {
        live_bytes: i64,
        allocs: u32,
        grows: u32,
        frees: u32,
    }

    thread_local! {
        static COUNTS: std::cell::Cell<HookCounts> = const { std::cell::Cell::new(HookCounts { live_bytes: 0, allocs: 0, grows: 0, frees: 0 }) };
        /// Refuse allocations (bit 0) or growth (bit 1).
        static REFUSE: std::cell::Cell<u8> = const { std::cell::Cell::new(0) };
    }

    fn count(f: impl FnOnce(&mut HookCounts)) {
        COUNTS.with(|c| {
            let mut v = c.get();
            f(&mut v);
            c.set(v);
        });
    }

    // SAFETY: regions come from the global allocator with exactly the layout (size, align)
    // the caller states again in grow and free.
    unsafe impl LargeAlloc for TestHook {
        fn alloc(&self, size: usize, align: usize) -> Option<NonNull<u8>> {
            if REFUSE.with(|r| r.get() & 1 != 0) {
                return None;
            }
            // SAFETY: size > 0 (contract), align a power of two.
            let p = NonNull::new(unsafe { alloc::alloc(Layout::from_size_align(size, align).ok()?) })?;
            count(|c| {
                c.live_bytes += size as i64;
                c.allocs += 1;
            });
            Some(p)
        }

        unsafe fn grow(&self, ptr: NonNull<u8>, old: usize, new: usize, align: usize) -> Option<NonNull<u8>> {
            if REFUSE.with(|r| r.get() & 2 != 0) {
                return None;
            }
            // SAFETY: ptr was allocated above with (old, align) (the caller's contract).
            let p = NonNull::new(unsafe {
                alloc::realloc(ptr.as_ptr(), Layout::from_size_align_unchecked(old, align), new)
            })?;
            count(|c| {
                c.live_bytes += new as i64 - old as i64;
                c.grows += 1;
            });
            Some(p)
        }

        unsafe fn free(&self, ptr: NonNull<u8>, size: usize, align: usize) {
            // SAFETY: as for grow.
            unsafe { alloc::dealloc(ptr.as_ptr(), Layout::from_size_align_unchecked(size, align)) };
            count(|c| {
                c.live_bytes -= size as i64;
                c.frees += 1;
            });
        }
    }

    static TEST_HOOK: TestHook = TestHook;

    /// Installs the test hook (once for this test binary) and resets this thread's counts.
    fn with_test_hook() {
        install_large_alloc(&TEST_HOOK);
        assert!(std::ptr::addr_eq(large_alloc().unwrap(), &TEST_HOOK), "only the test hook is installed here");
        COUNTS.with(|c| c.set(HookCounts::default()));
        REFUSE.with(|r| r.set(0));
    }

    fn counts() -> HookCounts {
        COUNTS.with(|c| c.get())
    }

    #[test]
    fn large_buffers_grow_through_the_hook_keeping_prefix_alignment_and_bounds() {
        with_test_hook();
        for align in [64u64, 4096, 1 << 21] {
            let len = LARGE_ALLOC_MIN_BYTES + 4 * GROW_MIN_BYTES + 17;
            let mut b = AlignedBuf::growable(len as u64, align, GROW_MIN_BYTES).unwrap();
            assert_eq!((b.block(), b.capacity()), (Block::Large, GROW_MIN_BYTES));
            assert_eq!(counts().live_bytes, GROW_MIN_BYTES as i64, "the hook holds exactly the capacity");
            let want = fill_checked(&mut b, &[5 << 20, 3001], GROW_MIN_BYTES);
            assert_eq!((b.as_slice(), b.capacity()), (&want[..], len));
            assert_eq!(counts().live_bytes, len as i64);
            assert!(counts().grows >= 9, "{:?}", counts());
            drop(b);
            assert_eq!(counts().live_bytes, 0);
        }
        // A buffer below the threshold never reaches the hook, nor does an exact one.
        let c0 = counts();
        let mut small = AlignedBuf::growable((LARGE_ALLOC_MIN_BYTES - 1) as u64, 64, GROW_MIN_BYTES).unwrap();
        fill_checked(&mut small, &[usize::MAX], GROW_MIN_BYTES);
        assert_ne!(small.block(), Block::Large);
        drop(small);
        assert_eq!(counts(), c0);
        // An exact allocation of the threshold's size is one region of the hook.
        let e = AlignedBuf::new(LARGE_ALLOC_MIN_BYTES as u64, 4096).unwrap();
        assert_eq!((e.block(), e.as_ptr() as usize % 4096), (Block::Large, 0));
        assert_eq!(counts().live_bytes, LARGE_ALLOC_MIN_BYTES as i64);
        drop(e);
        assert_eq!(counts().live_bytes, 0);
    }

    #[test]
    fn the_pooled_threshold_sends_smaller_buffers_to_the_hook() {
        // What BufferPool asks for on a miss (pool.rs, take_inner): the hook from
        // POOLED_LARGE_ALLOC_MIN_BYTES on, where AlignedBuf::new waits for LARGE_ALLOC_MIN_BYTES.
        with_test_hook();
        let min = POOLED_LARGE_ALLOC_MIN_BYTES;
        let below = AlignedBuf::new_with((min - 1) as u64, 64, min).unwrap();
        let unpooled = AlignedBuf::new(min as u64, 64).unwrap();
        assert_ne!(below.block(), Block::Large);
        assert_ne!(unpooled.block(), Block::Large);
        assert_eq!(counts(), HookCounts::default());
        let exact = AlignedBuf::new_with(min as u64, 4096, min).unwrap();
        assert_eq!((exact.block(), exact.as_ptr() as usize % 4096), (Block::Large, 0));
        let len = min + 3 * GROW_MIN_BYTES + 5;
        let mut grown = AlignedBuf::growable_with(len as u64, 64, GROW_MIN_BYTES, min).unwrap();
        assert_eq!((grown.block(), grown.capacity()), (Block::Large, GROW_MIN_BYTES));
        let want = fill_checked(&mut grown, &[usize::MAX], GROW_MIN_BYTES);
        assert_eq!(grown.as_slice(), &want[..]);
        assert_eq!((counts().live_bytes, counts().allocs), ((min + len) as i64, 2));
        // An eagerly sized growable one is exact, from the hook too.
        let eager = AlignedBuf::growable_with(min as u64, 64, min, min).unwrap();
        assert_eq!(eager.block(), Block::Large);
        drop((exact, grown, eager, below, unpooled));
        assert_eq!(counts().live_bytes, 0);
    }

    #[test]
    fn a_refusing_hook_falls_back_to_the_global_allocator() {
        with_test_hook();
        let len = LARGE_ALLOC_MIN_BYTES + 4 * GROW_MIN_BYTES + 17;
        // Refused from the start: an ordinary global-allocator buffer.
        REFUSE.with(|r| r.set(1));
        let e = AlignedBuf::new(len as u64, 64).unwrap();
        assert_eq!(e.block(), Block::Exact);
        let mut b = AlignedBuf::growable(len as u64, 4096, GROW_MIN_BYTES).unwrap();
        assert!(matches!(b.block(), Block::Slack { .. }), "{:?}", b.block());
        let want = fill_checked(&mut b, &[usize::MAX], GROW_MIN_BYTES);
        assert_eq!(b.as_slice(), &want[..]);
        assert_eq!(counts(), HookCounts::default());
        // Growth refused half way: the filled bytes move to the global allocator once.
        REFUSE.with(|r| r.set(0));
        let mut b = AlignedBuf::growable(len as u64, 1 << 21, GROW_MIN_BYTES).unwrap();
        let mut want = Vec::new();
        let fill_to = |b: &mut AlignedBuf, want: &mut Vec<u8>, to: usize| {
            while b.filled() < to {
                b.grow_if_full().unwrap();
                let n = b.spare_mut().len();
                let bytes: Vec<u8> = (0..n).map(|i| (want.len() + i) as u8 ^ 0x5a).collect();
                b.spare_mut().write_copy_of_slice(&bytes);
                b.advance(n);
                want.extend_from_slice(&bytes);
            }
        };
        fill_to(&mut b, &mut want, 8 * GROW_MIN_BYTES);
        assert_eq!(b.block(), Block::Large);
        REFUSE.with(|r| r.set(2));
        b.grow_if_full().unwrap();
        assert!(matches!(b.block(), Block::Slack { .. }), "{:?}", b.block());
        assert_eq!((b.as_slice(), b.capacity(), b.as_ptr() as usize % (1 << 21)), (&want[..], 16 * GROW_MIN_BYTES, 0));
        assert_eq!(counts().live_bytes, 0, "the hook's region is freed after the move");
        fill_to(&mut b, &mut want, len);
        assert_eq!((b.as_slice(), b.capacity()), (&want[..], len), "grows on in the global allocator");
    }

    #[test]
    fn a_large_declared_size_through_the_hook_allocates_by_its_bytes() {
        with_test_hook();
        let mut b = AlignedBuf::growable(1 << 40, 64, GROW_MIN_BYTES).unwrap();
        assert_eq!(b.block(), Block::Large);
        let mut filled = 0;
        for _ in 0..6 {
            b.grow_if_full().unwrap();
            let n = b.spare_mut().len();
            b.spare_mut().iter_mut().for_each(|x| {
                x.write(9);
            });
            b.advance(n);
            filled += n;
            assert!(b.capacity() <= 2 * filled, "capacity {} for {filled} bytes", b.capacity());
            assert_eq!(counts().live_bytes, b.capacity() as i64, "the hook holds the capacity, no more");
        }
        assert!(b.as_slice().iter().all(|&x| x == 9));
    }
}
