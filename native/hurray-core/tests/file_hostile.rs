//! Hostile containers (docs/spec/hrryfile.md §6 Hostile input). Each
//! case edits a valid container and re-seals every checksum that covers the edit, so the check
//! under test is the one that fires. Every case also asserts that no read left `[0, size)`
//! and that no allocation exceeded what the (small) input justifies.

mod common;
mod file_support;

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;

use file_support::*;
use hurray_core::file::{FileReaderOptions, TRAILER_BYTES};
use hurray_core::{DeviceTag, Error, ErrorKind, FileReader, FileWriterOptions, ReadAt};

/// Tracks the largest single allocation made by the current thread.
struct Tracking;

thread_local! {
    static LARGEST: Cell<usize> = const { Cell::new(0) };
}

// SAFETY: every method forwards to `System` unchanged and only counts bytes on the side, so
// `System`'s guarantees are this allocator's.
unsafe impl GlobalAlloc for Tracking {
    unsafe fn alloc(&self, l: Layout) -> *mut u8 {
        let _ = LARGEST.try_with(|m| m.set(m.get().max(l.size())));
        // SAFETY: forwarded unchanged: `l` meets GlobalAlloc::alloc's contract, which System shares.
        unsafe { System.alloc(l) }
    }
    unsafe fn dealloc(&self, p: *mut u8, l: Layout) {
        // SAFETY: forwarded unchanged: `p` came from System (every allocation here forwards to it) with layout `l`.
        unsafe { System.dealloc(p, l) }
    }
    unsafe fn realloc(&self, p: *mut u8, l: Layout, new: usize) -> *mut u8 {
        let _ = LARGEST.try_with(|m| m.set(m.get().max(new)));
        // SAFETY: forwarded unchanged: `p` came from System with layout `l`, and `new` meets realloc's contract.
        unsafe { System.realloc(p, l, new) }
    }
}

#[global_allocator]
static ALLOC: Tracking = Tracking;

const LIMIT: usize = 1 << 20;

fn lazy() -> FileReaderOptions {
    FileReaderOptions { eager_index_bytes: 0, ..Default::default() }
}

/// Three tensors: "a" and "b" (16 bytes each) and "c" (100 bytes), plus metadata.
fn base() -> Crafted {
    let t = vec![
        (named("a", hurray_core::ElementType::Uint8, vec![16]), vec![pattern(16, 1)]),
        (named("b", hurray_core::ElementType::Uint8, vec![16]), vec![pattern(16, 2)]),
        (bytes_tensor("c", 100, 64, DeviceTag::Cpu), vec![pattern(100, 3)]),
    ];
    Crafted::new(build(&t, &[("k", b"v")], FileWriterOptions::default()))
}

/// Opens `bytes`; returns the error of open, or of the first failing entry access, tensor read,
/// metadata access or verify. Panics if everything succeeds.
fn first_error(bytes: &[u8], opts: FileReaderOptions) -> Error {
    LARGEST.with(|m| m.set(0));
    let src = VecSource::new(bytes.to_vec());
    let result = (|| -> Result<(), (Error, bool)> {
        let mut r = FileReader::open(src, opts).map_err(|e| (e, false))?;
        let wrap = |r: &FileReader<VecSource>, e: Error| (e, r.source().out_of_range);
        for i in 0..r.entry_count() {
            let e = r.entry(i).map_err(|e| wrap(&r, e))?;
            r.read_tensor(&e).map_err(|e| wrap(&r, e))?;
        }
        if let Err(e) = r.metadata() {
            return Err(wrap(&r, e));
        }
        r.verify().map_err(|e| wrap(&r, e))?;
        assert!(!r.source().out_of_range);
        Ok(())
    })();
    let largest = LARGEST.with(|m| m.get());
    assert!(largest <= LIMIT.max(bytes.len() * 2), "allocated {largest} bytes for a {}-byte input", bytes.len());
    match result {
        Ok(()) => panic!("hostile input was accepted"),
        Err((e, out_of_range)) => {
            assert!(!out_of_range, "a read left [0, size) before {e}");
            assert!(!e.message().is_empty());
            e
        }
    }
}

fn expect(bytes: &[u8], opts: FileReaderOptions, kind: ErrorKind, words: &str) {
    let e = first_error(bytes, opts);
    assert_eq!(e.kind(), kind, "{e}");
    assert!(e.message().contains(words), "message {:?} lacks {words:?}", e.message());
}

/// Checks `case` in eager mode, and in lazy mode where open must succeed and the error comes
/// from the first access (or `verify`).
fn both(c: &Crafted, kind: ErrorKind, words: &str) {
    expect(&c.bytes, FileReaderOptions::default(), kind, words);
    expect(&c.bytes, lazy(), kind, words);
}

fn find_entry(c: &Crafted, name: &str) -> u64 {
    let mut r = FileReader::open(VecSource::new(c.bytes.clone()), FileReaderOptions::default()).unwrap();
    r.find(name.as_bytes()).unwrap().unwrap().index()
}

#[test]
fn valid_base_reads() {
    let c = base();
    let mut r = FileReader::open(VecSource::new(c.bytes.clone()), FileReaderOptions::default()).unwrap();
    r.verify().unwrap();
    assert_eq!(r.entry_count(), 3);
}

#[test]
fn bad_trailer_magic() {
    let mut c = base();
    let at = c.trailer_at();
    c.bytes[at] = b'X';
    both(&c, ErrorKind::InvalidMagic, "trailer magic");
}

#[test]
fn bad_header_magic() {
    let mut c = base();
    c.bytes[0] = b'X';
    both(&c, ErrorKind::InvalidMagic, "header magic");
}

#[test]
fn trailer_checksum() {
    let mut c = base();
    let at = c.trailer_at() + 16;
    c.bytes[at] ^= 1;
    both(&c, ErrorKind::Corrupt, "trailer checksum");
}

#[test]
fn size_smaller_than_trailer() {
    let c = base();
    for n in [0usize, 1, 50, TRAILER_BYTES as usize - 1, TRAILER_BYTES as usize + 15] {
        expect(&c.bytes[..n], FileReaderOptions::default(), ErrorKind::Truncated, "smaller than");
    }
    // Cut short: the last 72 bytes are no trailer any more.
    let n = c.bytes.len() - 10;
    expect(&c.bytes[..n], FileReaderOptions::default(), ErrorKind::InvalidMagic, "trailer magic");
}

#[test]
fn index_offset_past_eof() {
    let mut c = base();
    let mut t = c.trailer();
    t.index_offset = (c.bytes.len() as u64 + 64) & !7;
    c.set_trailer(t);
    both(&c, ErrorKind::Corrupt, "past the end");
}

#[test]
fn index_length_past_eof() {
    let mut c = base();
    let mut t = c.trailer();
    t.index_length = c.bytes.len() as u64;
    c.set_trailer(t);
    both(&c, ErrorKind::Corrupt, "reaches past the end");
}

#[test]
fn index_overlapping_the_trailer() {
    let mut c = base();
    let mut t = c.trailer();
    t.index_length = c.trailer_at() as u64 - t.index_offset + 8;
    c.set_trailer(t);
    both(&c, ErrorKind::Corrupt, "trailer");
}

#[test]
fn index_length_2_pow_60() {
    let mut c = base();
    let mut t = c.trailer();
    t.index_length = 1 << 60;
    c.set_trailer(t);
    both(&c, ErrorKind::Corrupt, "reaches past the end");
    let mut t = c.trailer();
    t.index_length = u64::MAX - 3;
    c.set_trailer(t);
    both(&c, ErrorKind::Corrupt, "reaches past the end");
}

#[test]
fn entry_count_beyond_the_index() {
    let mut c = base();
    let mut t = c.trailer();
    t.entry_count = 4; // fits the index bytes, but the table now covers the first records
    c.set_trailer(t);
    both(&c, ErrorKind::Corrupt, "outside the index records");
    for count in [1u64 << 57, 1 << 60, u64::MAX] {
        let mut c = base();
        let mut t = c.trailer();
        t.entry_count = count;
        c.set_trailer(t);
        both(&c, ErrorKind::Corrupt, "do not fit");
    }
}

#[test]
fn index_inside_header_or_unaligned() {
    let mut c = base();
    let mut t = c.trailer();
    t.index_offset = 8;
    c.set_trailer(t);
    both(&c, ErrorKind::Corrupt, "inside the header");
    let mut c = base();
    let mut t = c.trailer();
    t.index_offset += 4;
    c.set_trailer(t);
    both(&c, ErrorKind::Corrupt, "multiple of 8");
}

#[test]
fn metadata_block_misplaced_or_too_large() {
    let mut c = base();
    let mut t = c.trailer();
    t.metadata_offset += 8;
    c.set_trailer(t);
    both(&c, ErrorKind::Corrupt, "metadata block");
    let c = base();
    let small = FileReaderOptions { max_metadata_bytes: 8, ..Default::default() };
    expect(&c.bytes, small, ErrorKind::LimitExceeded, "metadata block");
    let mut c = base();
    let t = c.trailer();
    let at = t.metadata_offset as usize;
    c.bytes[at] = 200; // entry count 200 in a block of a few bytes (CRC now wrong)...
    let mut t2 = t;
    t2.metadata_crc = hurray_core::crc32c::crc32c(&c.bytes[at..at + t.metadata_length as usize]);
    c.set_trailer(t2); // ...re-sealed, so the count check fires.
    both(&c, ErrorKind::Corrupt, "cannot hold");
}

#[test]
fn checksums_of_index_entry_record_and_metadata() {
    // Whole-index checksum (eager open, or verify).
    let mut c = base();
    let (rec, _) = c.record(2);
    c.bytes[rec + 30] ^= 1;
    expect(&c.bytes, FileReaderOptions::default(), ErrorKind::Corrupt, "index checksum");
    // The same flip, lazily: the record's own checksum catches it when the entry is used.
    expect(&c.bytes, lazy(), ErrorKind::Corrupt, "record checksum");
    // An entry's own checksum guards lazy reads. (With the index loaded, the whole-index
    // checksum covers the entry instead; re-sealed here, the changed field itself is caught.)
    let mut c = base();
    let e = c.entry_at(1);
    c.bytes[e + 5] ^= 1;
    c.reseal_index();
    expect(&c.bytes, lazy(), ErrorKind::Corrupt, "entry 1 checksum");
    expect(&c.bytes, FileReaderOptions::default(), ErrorKind::Corrupt, "outside the index records");
    // Metadata checksum (the metadata block has its own).
    let mut c = base();
    let at = c.trailer().metadata_offset as usize + 9;
    c.bytes[at] ^= 1;
    both(&c, ErrorKind::Corrupt, "metadata block checksum");
}

#[test]
fn payload_past_eof() {
    let mut c = base();
    let i = find_entry(&c, "c");
    let len = c.bytes.len() as u64;
    c.set_buffer_field(i, 0, 8, len);
    both(&c, ErrorKind::Corrupt, "past the end of the file");
}

#[test]
fn payload_offset_plus_length_overflows() {
    let mut c = base();
    let i = find_entry(&c, "c");
    c.set_buffer_field(i, 0, 0, u64::MAX - 63);
    both(&c, ErrorKind::Corrupt, "overflows u64");
    let mut c = base();
    c.set_buffer_field(i, 0, 8, u64::MAX);
    both(&c, ErrorKind::Corrupt, "overflows u64");
}

#[test]
fn payload_inside_the_header() {
    let mut c = base();
    let i = find_entry(&c, "a");
    c.set_buffer_field(i, 0, 0, 0);
    both(&c, ErrorKind::Corrupt, "inside the header");
}

#[test]
fn payload_inside_the_index() {
    let mut c = base();
    let i = find_entry(&c, "a");
    let at = c.trailer().index_offset;
    c.set_buffer_field(i, 0, 0, at);
    both(&c, ErrorKind::Corrupt, "into the index");
    // Straddling the data/index boundary.
    let mut c = base();
    let i = find_entry(&c, "c");
    c.set_buffer_field(i, 0, 0, at - 64);
    both(&c, ErrorKind::Corrupt, "into the index");
}

#[test]
fn overlapping_payloads() {
    let mut c = base();
    let (a, b) = (find_entry(&c, "a"), find_entry(&c, "b"));
    let off = c.buffer_field(a, 0, 0);
    c.set_buffer_field(b, 0, 0, off);
    overlap(&c);
    // Partial overlap, both offsets aligned: "b" moved 64 bytes into the 100 of "c".
    let mut c = base();
    let off_c = c.buffer_field(find_entry(&c, "c"), 0, 0);
    c.set_buffer_field(b, 0, 0, off_c + 64);
    overlap(&c);
}

/// Eager open rejects overlapping payloads; a lazy reader sees each entry as valid on its own
/// (its payload checksum may then fail) and `verify` finds the overlap.
fn overlap(c: &Crafted) {
    expect(&c.bytes, FileReaderOptions::default(), ErrorKind::Corrupt, "overlap");
    let mut r = FileReader::open(VecSource::new(c.bytes.clone()), lazy()).unwrap();
    for i in 0..r.entry_count() {
        r.entry(i).unwrap();
    }
    let e = r.verify().unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Corrupt);
    assert!(e.message().contains("overlap"), "{e}");
}

/// Renames entry `i` to `to` (same length) in both its record and its inline prefix.
fn rename(c: &mut Crafted, i: u64, from: &str, to: &str) {
    assert_eq!(from.len(), to.len());
    let (rec, len) = c.record(i);
    let name_at = c.entry_u64(i, 16) as usize;
    assert_eq!(&c.bytes[name_at..name_at + from.len()], from.as_bytes());
    assert!(name_at >= rec && name_at < rec + len);
    c.bytes[name_at..name_at + to.len()].copy_from_slice(to.as_bytes());
    c.reseal_record(i);
    c.patch_entry(i, |e| e[36..36 + to.len()].copy_from_slice(to.as_bytes()));
}

#[test]
fn duplicate_names() {
    let mut c = base();
    let b = find_entry(&c, "b");
    rename(&mut c, b, "b", "a");
    expect(&c.bytes, FileReaderOptions::default(), ErrorKind::DuplicateName, "both named");
    // Lazily, each entry is fine on its own; verify finds the duplicate.
    let mut r = FileReader::open(VecSource::new(c.bytes.clone()), lazy()).unwrap();
    r.entry(0).unwrap();
    r.entry(1).unwrap();
    assert_eq!(r.verify().unwrap_err().kind(), ErrorKind::DuplicateName);
}

#[test]
fn unsorted_index() {
    let mut c = base();
    let a = find_entry(&c, "a");
    rename(&mut c, a, "a", "d");
    expect(&c.bytes, FileReaderOptions::default(), ErrorKind::Corrupt, "not sorted");
    let mut r = FileReader::open(VecSource::new(c.bytes.clone()), lazy()).unwrap();
    assert_eq!(r.verify().unwrap_err().kind(), ErrorKind::Corrupt);
}

#[test]
fn payload_length_differs_from_descriptor() {
    let mut c = base();
    let i = find_entry(&c, "c");
    c.set_buffer_field(i, 0, 8, 99);
    both(&c, ErrorKind::Corrupt, "descriptor declares 100");
    let mut c = base();
    c.set_buffer_field(i, 0, 8, 101);
    both(&c, ErrorKind::Corrupt, "descriptor declares 100");
}

#[test]
fn unaligned_payload_offset() {
    let mut c = base();
    let i = find_entry(&c, "c");
    let off = c.buffer_field(i, 0, 0);
    c.set_buffer_field(i, 0, 0, off + 8);
    both(&c, ErrorKind::InvalidAlignment, "not a multiple of its alignment 64");
}

#[test]
fn entry_fields_out_of_range() {
    // Record pointing into the entry table.
    let mut c = base();
    let at = c.trailer().index_offset;
    c.patch_entry(0, |e| e[0..8].copy_from_slice(&at.to_le_bytes()));
    both(&c, ErrorKind::Corrupt, "outside the index records");
    // Record length 2^62.
    let mut c = base();
    c.patch_entry(0, |e| e[8..16].copy_from_slice(&(1u64 << 62).to_le_bytes()));
    both(&c, ErrorKind::Corrupt, "outside the index records");
    // Name length 0 and 5000.
    for n in [0u32, 5000] {
        let mut c = base();
        c.patch_entry(0, |e| e[24..28].copy_from_slice(&n.to_le_bytes()));
        both(&c, ErrorKind::Corrupt, "name of");
    }
    // Name reaching past its record.
    let mut c = base();
    c.patch_entry(0, |e| e[16..24].copy_from_slice(&(u64::MAX - 1).to_le_bytes()));
    both(&c, ErrorKind::Corrupt, "outside its descriptor");
    // 65 buffers.
    let mut c = base();
    c.patch_entry(0, |e| e[28..32].copy_from_slice(&65u32.to_le_bytes()));
    both(&c, ErrorKind::Corrupt, "buffers");
    // Prefix that disagrees with the name.
    let mut c = base();
    c.patch_entry(0, |e| e[36] = b'z');
    both(&c, ErrorKind::Corrupt, "name");
    // Descriptor larger than the reader accepts.
    let c = base();
    let tiny = FileReaderOptions { max_descriptor_bytes: 30, ..Default::default() };
    expect(&c.bytes, tiny, ErrorKind::LimitExceeded, "descriptor of");
}

#[test]
fn buffer_record_flags() {
    let mut c = base();
    let at = c.buffer_record_at(0, 0) + 20;
    c.bytes[at] = 0x80;
    c.reseal_record(0);
    both(&c, ErrorKind::Corrupt, "unknown flags");
}

/// A source that lies: it claims more bytes than it moved, or a larger size than it has.
struct Liar {
    inner: VecSource,
    overcount: bool,
    extra_size: u64,
}

impl ReadAt for Liar {
    fn size(&mut self) -> hurray_core::Result<u64> {
        Ok(self.inner.size()? + self.extra_size)
    }
    fn read_at(&mut self, offset: u64, dst: &mut [std::mem::MaybeUninit<u8>]) -> hurray_core::Result<usize> {
        let n = self.inner.read_at(offset, dst)?;
        Ok(if self.overcount { n + 1 } else { n })
    }
}

#[test]
fn misbehaving_sources() {
    let c = base();
    let src = Liar { inner: VecSource::new(c.bytes.clone()), overcount: true, extra_size: 0 };
    let e = FileReader::open(src, FileReaderOptions::default()).err().unwrap();
    assert_eq!(e.kind(), ErrorKind::Transport);
    // size() says more than there is: the trailer read finds no bytes.
    let src = Liar { inner: VecSource::new(c.bytes.clone()), overcount: false, extra_size: 1000 };
    let e = FileReader::open(src, FileReaderOptions::default()).err().unwrap();
    assert_eq!(e.kind(), ErrorKind::Truncated);
}

/// Seeded mutations of a valid container: flipped bytes and overwritten u64 fields, anywhere.
/// Nothing may panic, read outside the input or over-allocate, and every error must be one of
/// the documented kinds.
#[test]
fn random_mutations_fail_cleanly() {
    let c = base();
    let len = c.bytes.len();
    let mut rng = common::Rng::new(0x9E37_79B9_7F4A_7C15);
    let mut next = move || rng.next_u64();
    let allowed = [
        ErrorKind::InvalidMagic,
        ErrorKind::VersionMismatch,
        ErrorKind::Corrupt,
        ErrorKind::Truncated,
        ErrorKind::LimitExceeded,
        ErrorKind::DuplicateName,
        ErrorKind::InvalidAlignment,
        ErrorKind::Unsupported,
        ErrorKind::InvalidLayout,
        ErrorKind::InvalidType,
        ErrorKind::InvalidShape,
        ErrorKind::InvalidSyncMode,
        ErrorKind::InvalidArgument,
        ErrorKind::BufferTooSmall,
    ];
    let mut rejected = 0;
    for round in 0..1500 {
        let mut m = c.bytes.clone();
        for _ in 0..1 + next() % 3 {
            let at = (next() % len as u64) as usize;
            if next() % 2 == 0 {
                m[at] ^= 1 << (next() % 8);
            } else {
                let v = match next() % 4 {
                    0 => 0,
                    1 => u64::MAX,
                    2 => 1 << (next() % 64),
                    _ => next(),
                };
                let at = at.min(len - 8);
                m[at..at + 8].copy_from_slice(&v.to_le_bytes());
            }
        }
        let opts = if round % 2 == 0 { FileReaderOptions::default() } else { lazy() };
        LARGEST.with(|l| l.set(0));
        let mut src = VecSource::new(m);
        src.chunk = if round % 3 == 0 { 13 } else { usize::MAX };
        let mut errors = Vec::new();
        let mut oor = false;
        match FileReader::open(src, opts) {
            Err(e) => {
                errors.push(e);
                rejected += 1;
            }
            Ok(mut r) => {
                for i in 0..r.entry_count().min(10) {
                    match r.entry(i) {
                        Ok(e) => errors.extend(r.read_tensor(&e).err()),
                        Err(e) => errors.push(e),
                    }
                    errors.extend(r.name_at(i).err());
                }
                errors.extend(r.find(b"b").err());
                errors.extend(r.metadata().err());
                errors.extend(r.verify().err());
                oor = r.source().out_of_range;
            }
        }
        let largest = LARGEST.with(|l| l.get());
        assert!(largest <= LIMIT, "round {round}: allocated {largest} bytes");
        assert!(!oor, "round {round}: read outside the input");
        for e in errors {
            assert!(allowed.contains(&e.kind()), "round {round}: unexpected {e}");
            assert!(!e.message().is_empty());
        }
    }
    assert!(rejected > 500, "most mutations must be caught at open ({rejected})");
}

/// Checks that `bytes` (with one non-zero padding byte at `at`) reads normally (reads do not
/// check padding) and that `verify` answers `Corrupt` naming `at`: through `read_at` (eager
/// and lazy) and over a span.
fn padding_flipped(bytes: &[u8], at: u64) {
    let words = format!("offset {at}");
    for opts in [FileReaderOptions::default(), lazy()] {
        let mut r = FileReader::open(VecSource::new(bytes.to_vec()), opts).unwrap();
        for i in 0..r.entry_count() {
            let e = r.entry(i).unwrap();
            r.read_tensor(&e).unwrap();
        }
        LARGEST.with(|m| m.set(0));
        let e = r.verify().unwrap_err();
        let largest = LARGEST.with(|m| m.get());
        assert_eq!(e.kind(), ErrorKind::Corrupt, "{e}");
        assert!(e.message().contains("padding") && e.message().contains(&words), "{e}");
        assert!(!r.source().out_of_range);
        // Gaps are read in bounded chunks, never allocated whole.
        assert!(largest <= 128 * 1024, "verify allocated {largest} bytes");
    }
    let mut s =
        FileReader::open_span(bytes, FileReaderOptions { verify_payloads: true, ..Default::default() }).unwrap();
    for i in 0..s.entry_count() {
        let e = s.entry(i).unwrap();
        s.span_tensor(&e).unwrap();
    }
    let e = s.verify().unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Corrupt, "{e}");
    assert!(e.message().contains(&words), "{e}");
}

#[test]
fn non_zero_padding_is_found_by_verify_only() {
    let c = base();
    let mut r = FileReader::open(VecSource::new(c.bytes.clone()), FileReaderOptions::default()).unwrap();
    r.verify().unwrap();
    let mut payloads: Vec<(u64, u64)> = Vec::new();
    for i in 0..r.entry_count() {
        let e = r.entry(i).unwrap();
        payloads.extend(e.buffers().iter().map(|b| (b.offset, b.length)));
    }
    payloads.sort_unstable();
    let index_offset = c.trailer().index_offset;
    let first = payloads[0].0;
    let (last_off, last_len) = payloads[payloads.len() - 1];
    let between = payloads[0].0 + payloads[0].1;
    assert!(
        first > 16 && between < payloads[1].0 && last_off + last_len < index_offset,
        "the base file has every kind of gap"
    );
    // After the header, between two payloads, at the end of a gap, and just before the index.
    for at in [16, first - 1, between, payloads[1].0 - 1, last_off + last_len, index_offset - 1] {
        let mut bytes = c.bytes.clone();
        bytes[at as usize] = 0x5a;
        padding_flipped(&bytes, at);
    }
}

#[test]
fn padding_larger_than_a_chunk_is_read_in_chunks() {
    // A 1 MiB-aligned payload leaves a gap of almost 1 MiB after the header.
    let t = vec![(bytes_tensor("big_gap", 100, 1 << 20, DeviceTag::Cpu), vec![pattern(100, 7)])];
    let bytes = build(&t, &[], FileWriterOptions::default());
    let mut r = FileReader::open(VecSource::new(bytes.clone()), FileReaderOptions::default()).unwrap();
    let before = r.source().calls;
    r.verify().unwrap();
    let chunks = (r.source().calls - before) as u64;
    assert!(chunks >= (1 << 20) / hurray_core::file::PADDING_CHUNK_BYTES - 1, "{chunks} reads");
    let mut flipped = bytes;
    let at = 3 * hurray_core::file::PADDING_CHUNK_BYTES + 5;
    flipped[at as usize] = 1;
    padding_flipped(&flipped, at);
}

#[test]
fn payload_checksums_are_verified_in_windows_whatever_the_tensor_size() {
    use hurray_core::file::PAYLOAD_CHUNK_BYTES;
    let n = 8 * PAYLOAD_CHUNK_BYTES as usize + 123;
    let t = vec![
        (named("small", hurray_core::ElementType::Uint8, vec![16]), vec![pattern(16, 1)]),
        (bytes_tensor("w", n as u64, 64, DeviceTag::Cpu), vec![pattern(n, 9)]),
    ];
    let bytes = build(&t, &[], FileWriterOptions::default());
    // A limit far below the tensor: reading it whole is refused, checking it is not.
    let opts = FileReaderOptions { max_tensor_bytes: 1 << 16, verify_payloads: false, ..Default::default() };
    let mut r = FileReader::open(VecSource::new(bytes.clone()), opts).unwrap();
    let w = r.entry(1).unwrap();
    assert_eq!(r.read_tensor(&w).unwrap_err().kind(), ErrorKind::LimitExceeded);
    LARGEST.with(|m| m.set(0));
    let before = r.source().calls;
    r.verify_payloads().unwrap();
    let largest = LARGEST.with(|m| m.get());
    assert!(largest <= PAYLOAD_CHUNK_BYTES as usize + 4096, "largest allocation {largest} bytes");
    assert!(r.source().calls - before >= 9, "read in windows");
    assert!(!r.source().out_of_range);

    // One flipped byte deep inside the large payload: named, through read_at and in a span.
    let at = w.buffers()[0].offset as usize + 5 * PAYLOAD_CHUNK_BYTES as usize + 7;
    let mut flipped = bytes;
    flipped[at] ^= 0x40;
    let mut r = FileReader::open(VecSource::new(flipped.clone()), opts).unwrap();
    r.verify().unwrap(); // the index and padding are intact
    let e = r.verify_payloads().unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Corrupt, "{e}");
    assert!(e.message().contains("payload 0 of \"w\" checksum mismatch"), "{e}");
    let mut s = FileReader::open_span(&flipped, opts).unwrap();
    let e = s.verify_payloads().unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Corrupt, "{e}");
    // A transport failure mid-way is resumed by repeating the call, which ends in the same error.
    let mut r = FileReader::open(VecSource::new(flipped), opts).unwrap();
    r.source_mut().fail_next = 0;
    r.source_mut().chunk = PAYLOAD_CHUNK_BYTES as usize / 3;
    let calls = r.source().calls;
    r.source_mut().fail_next = 1;
    assert_eq!(r.verify_payloads().unwrap_err().kind(), ErrorKind::Transport);
    let e = r.verify_payloads().unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Corrupt, "{e}");
    assert!(r.source().calls > calls);
}

#[test]
fn payloads_without_a_stored_checksum_are_not_read_by_payload_verification() {
    let n = 3 * hurray_core::file::PAYLOAD_CHUNK_BYTES as usize;
    let t = vec![(bytes_tensor("w", n as u64, 64, DeviceTag::Cpu), vec![pattern(n, 4)])];
    let no_crc = FileWriterOptions { payload_checksums: false, ..FileWriterOptions::default() };
    let mut bytes = build(&t, &[], no_crc);
    let mut r = FileReader::open(VecSource::new(bytes.clone()), FileReaderOptions::default()).unwrap();
    let before = r.source().calls;
    r.verify_payloads().unwrap();
    assert_eq!(r.source().calls, before, "the index is loaded, and no payload has a checksum to check");
    let at = bytes.len() / 2;
    bytes[at] ^= 1;
    let mut r = FileReader::open(VecSource::new(bytes), FileReaderOptions::default()).unwrap();
    r.verify_payloads().unwrap();
}

/// A payload larger than the reader's checksum chunk is read and checked a chunk at a time:
/// intact, it reads back whole (also through a transport that returns short reads); one
/// flipped byte anywhere in it (first chunk, across a chunk boundary, the short last chunk)
/// is `Corrupt`, named, as for a small payload.
#[test]
fn a_large_payload_read_whole_is_checked_chunk_by_chunk() {
    let n = (3 << 20) + (1 << 19) + 7;
    let t = vec![
        (named("small", hurray_core::ElementType::Uint8, vec![16]), vec![pattern(16, 1)]),
        (bytes_tensor("w", n as u64, 64, DeviceTag::Cpu), vec![pattern(n, 9)]),
    ];
    let bytes = build(&t, &[], FileWriterOptions::default());
    let opts = FileReaderOptions::default();
    for chunk in [usize::MAX, 300_007] {
        let mut src = VecSource::new(bytes.clone());
        src.chunk = chunk;
        let mut r = FileReader::open(src, opts).unwrap();
        let w = r.entry(1).unwrap();
        let read = r.read_tensor(&w).unwrap();
        assert_eq!(read.buffers[0].as_slice(), &pattern(n, 9)[..], "transport chunk {chunk}");
    }
    let start = {
        let mut r = FileReader::open(VecSource::new(bytes.clone()), opts).unwrap();
        r.entry(1).unwrap().buffers()[0].offset as usize
    };
    for at in [0, 5, (1 << 20) - 1, 1 << 20, (2 << 20) + 1, n - 1] {
        let mut flipped = bytes.clone();
        flipped[start + at] ^= 0x10;
        let mut r = FileReader::open(VecSource::new(flipped), opts).unwrap();
        let w = r.entry(1).unwrap();
        let e = r.read_tensor(&w).unwrap_err();
        assert_eq!(e.kind(), ErrorKind::Corrupt, "byte {at}: {e}");
        assert!(e.message().contains("payload 0 of \"w\" checksum mismatch"), "byte {at}: {e}");
    }
}

/// A source that misbehaves once, at its `fail_at`-th read inside `from..to`: a `Transport`
/// failure (mode 0), an early end of input (1), or a count one more than it moved (2).
struct FailAt {
    inner: VecSource,
    from: u64,
    to: u64,
    calls: u64,
    fail_at: u64,
    mode: u8,
}

impl ReadAt for FailAt {
    fn size(&mut self) -> hurray_core::Result<u64> {
        self.inner.size()
    }
    fn read_at(&mut self, offset: u64, dst: &mut [std::mem::MaybeUninit<u8>]) -> hurray_core::Result<usize> {
        if offset >= self.from && offset < self.to {
            self.calls += 1;
            if self.calls == self.fail_at {
                match self.mode {
                    0 => return Err(hurray_core::Error::new(ErrorKind::Transport, "test source fails mid-payload")),
                    1 => return Ok(0),
                    _ => return Ok(self.inner.read_at(offset, dst)? + 1),
                }
            }
        }
        self.inner.read_at(offset, dst)
    }
}

/// A large payload read chunk by chunk through a source with short reads that fails at any
/// one of its reads (a transport error, an early end, or a count past the chunk's end): the
/// read fails with `Transport` or `Truncated` (or, for an overcount inside the chunk, which
/// no reader can see, succeeds), and the next read of the same entry gives the payload whole.
#[test]
fn a_large_payload_read_chunk_by_chunk_recovers_from_a_failure_at_any_read() {
    let n = (3 << 20) + 7;
    let t = vec![(bytes_tensor("w", n as u64, 64, DeviceTag::Cpu), vec![pattern(n, 9)])];
    let bytes = build(&t, &[], FileWriterOptions::default());
    let opts = FileReaderOptions::default();
    let start = {
        let mut r = FileReader::open(VecSource::new(bytes.clone()), opts).unwrap();
        r.entry(0).unwrap().buffers()[0].offset
    };
    for mode in 0..3u8 {
        // 700,001-byte reads: two per 1 MiB chunk, seven for the payload.
        for k in 1..8u64 {
            let mut src = VecSource::new(bytes.clone());
            src.chunk = 700_001;
            let src = FailAt { inner: src, from: start, to: start + n as u64, calls: 0, fail_at: u64::MAX, mode };
            let mut r = FileReader::open(src, opts).unwrap();
            let w = r.entry(0).unwrap();
            r.source_mut().calls = 0;
            r.source_mut().fail_at = k;
            match r.read_tensor(&w) {
                Err(e) => {
                    let want = if mode == 1 { ErrorKind::Truncated } else { ErrorKind::Transport };
                    assert_eq!(e.kind(), want, "mode {mode}, read {k}: {e}");
                }
                Ok(_) => assert_eq!(mode, 2, "read {k}"),
            }
            r.source_mut().fail_at = u64::MAX;
            let again = r.read_tensor(&w).unwrap();
            assert_eq!(again.buffers[0].as_slice(), &pattern(n, 9)[..], "mode {mode}, read {k}");
        }
    }
}
