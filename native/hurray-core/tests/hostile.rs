//! Hostile input through the core API: each case gets a clear error kind, no panic, no hang,
//! and no allocation beyond the configured limits (checked with a counting global allocator
//! that records the largest single request made by the current thread).

mod common;

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;

use common::*;
use hurray_core::crc32c::crc32c;
use hurray_core::stream::{SliceSource, FRAME_END, FRAME_HEADER_BYTES, FRAME_TENSOR, STREAM_MAGIC};
use hurray_core::{
    AlignedBuf, BufferHandle, DeviceTag, ElementType, ErrorKind, LayoutDescriptor, ReaderOptions, Shape, StreamReader,
    StreamWriter, SyncMode, TensorDescriptor, WriterOptions, BUFFER_HANDLE_BYTES, MAX_RANK, SYNC_MODE_OFFSET,
};

struct Counting;

thread_local! {
    static LARGEST: Cell<usize> = const { Cell::new(0) };
}

// SAFETY: every method forwards to `System` unchanged and only counts bytes on the side, so
// `System`'s guarantees are this allocator's.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, l: Layout) -> *mut u8 {
        let _ = LARGEST.try_with(|c| c.set(c.get().max(l.size())));
        // SAFETY: forwarded unchanged: `l` meets GlobalAlloc::alloc's contract, which System shares.
        unsafe { System.alloc(l) }
    }
    unsafe fn dealloc(&self, p: *mut u8, l: Layout) {
        // SAFETY: forwarded unchanged: `p` came from System (every allocation here forwards to it) with layout `l`.
        unsafe { System.dealloc(p, l) }
    }
    unsafe fn alloc_zeroed(&self, l: Layout) -> *mut u8 {
        let _ = LARGEST.try_with(|c| c.set(c.get().max(l.size())));
        // SAFETY: forwarded unchanged: `l` meets GlobalAlloc::alloc_zeroed's contract, which System shares.
        unsafe { System.alloc_zeroed(l) }
    }
    unsafe fn realloc(&self, p: *mut u8, l: Layout, new: usize) -> *mut u8 {
        let _ = LARGEST.try_with(|c| c.set(c.get().max(new)));
        // SAFETY: forwarded unchanged: `p` came from System with layout `l`, and `new` meets realloc's contract.
        unsafe { System.realloc(p, l, new) }
    }
}

#[global_allocator]
static ALLOC: Counting = Counting;

/// Runs `f` and returns its result with the largest single allocation it made on this thread.
fn largest_alloc<R>(f: impl FnOnce() -> R) -> (R, usize) {
    LARGEST.with(|c| c.set(0));
    let r = f();
    (r, LARGEST.with(|c| c.get()))
}

fn stream_header(flags: u16) -> Vec<u8> {
    let mut h = STREAM_MAGIC.to_vec();
    h.extend_from_slice(&1u16.to_le_bytes());
    h.extend_from_slice(&flags.to_le_bytes());
    let c = crc32c(&h);
    h.extend_from_slice(&c.to_le_bytes());
    h
}

fn frame_header(kind: [u8; 4], flags: u32, len: u64, dcrc: u32) -> Vec<u8> {
    let mut h = kind.to_vec();
    h.extend_from_slice(&flags.to_le_bytes());
    h.extend_from_slice(&len.to_le_bytes());
    h.extend_from_slice(&dcrc.to_le_bytes());
    let c = crc32c(&h);
    h.extend_from_slice(&c.to_le_bytes());
    assert_eq!(h.len(), FRAME_HEADER_BYTES);
    h
}

/// A stream holding one frame with these descriptor bytes and `payload` after it.
fn one_frame(desc: &[u8], payload: &[u8]) -> Vec<u8> {
    let mut s = stream_header(0);
    s.extend(frame_header(FRAME_TENSOR, 0, desc.len() as u64, crc32c(desc)));
    s.extend_from_slice(desc);
    s.extend_from_slice(payload);
    s
}

fn first_error(bytes: &[u8], opts: ReaderOptions) -> hurray_core::Error {
    let (_, end) = read_bytes(bytes, usize::MAX, opts);
    end.expect_err("hostile input must fail")
}

fn raw_descriptor(et: u8, layout: u8, dims: &[u64], nbuf: u8, ext: u32) -> Vec<u8> {
    let mut d = b"HRDS".to_vec();
    d.extend_from_slice(&1u16.to_le_bytes());
    d.extend_from_slice(&0u16.to_le_bytes());
    d.extend_from_slice(&[et, layout, dims.len() as u8, nbuf]);
    d.extend_from_slice(&ext.to_le_bytes());
    d.extend_from_slice(&0u64.to_le_bytes());
    for x in dims {
        d.extend_from_slice(&x.to_le_bytes());
    }
    d
}

fn raw_handle(size: u64, align: u32, dev: u8, sync: u8) -> [u8; 16] {
    let mut h = [0u8; BUFFER_HANDLE_BYTES];
    h[0..8].copy_from_slice(&size.to_le_bytes());
    h[8..12].copy_from_slice(&align.to_le_bytes());
    h[12] = dev;
    h[SYNC_MODE_OFFSET] = sync;
    h
}

#[test]
fn shape_product_overflowing_u64_is_invalid_shape() {
    for dims in [vec![1u64 << 32, 1 << 32], vec![u64::MAX, 2], vec![16; MAX_RANK]] {
        assert_eq!(Shape::new(dims.clone()).unwrap_err().kind(), ErrorKind::InvalidShape, "{dims:?}");
    }
    // Through hand-crafted descriptor bytes.
    let mut d = raw_descriptor(ElementType::Uint8.code(), 0, &[1 << 32, 1 << 32], 1, 0);
    d.extend_from_slice(&raw_handle(0, 64, 0, 0));
    assert_eq!(TensorDescriptor::decode(&d).unwrap_err().kind(), ErrorKind::InvalidShape);
    let e = first_error(&one_frame(&d, &[]), ReaderOptions::default());
    assert_eq!(e.kind(), ErrorKind::InvalidShape);
}

#[test]
fn element_count_times_element_size_overflowing_is_invalid_shape() {
    // 2^62 elements fit in u64; 2^62 * 8 bytes do not.
    let shape = Shape::new(vec![1 << 31, 1 << 31]).unwrap();
    assert_eq!(
        TensorDescriptor::dense(ElementType::Float64, shape.clone()).unwrap_err().kind(),
        ErrorKind::InvalidShape
    );
    let e = TensorDescriptor::new(
        1,
        0,
        ElementType::Complex128,
        shape,
        0,
        LayoutDescriptor::RowMajor,
        vec![cpu(u64::MAX)],
        None,
        None,
        None,
        None,
    )
    .unwrap_err();
    assert_eq!(e.kind(), ErrorKind::InvalidShape);
    let mut d = raw_descriptor(ElementType::Float32.code(), 0, &[u64::MAX / 2], 1, 0);
    d.extend_from_slice(&raw_handle(u64::MAX, 64, 0, 0));
    assert_eq!(TensorDescriptor::decode(&d).unwrap_err().kind(), ErrorKind::InvalidShape);
    // Sub-byte types never overflow: u64::MAX int4 elements are ceil(2^64-1 / 2) bytes.
    assert_eq!(ElementType::Int4.bytes_for(u64::MAX), Some(1 << 63));
}

#[test]
fn bad_alignments_are_invalid_alignment() {
    for a in [0u64, 3, 32, 1 << 30, 1 << 63, u64::MAX] {
        let e = BufferHandle::new(16, a, DeviceTag::Cpu, SyncMode::ProducerSynced).unwrap_err();
        assert_eq!(e.kind(), ErrorKind::InvalidAlignment, "alignment {a}");
    }
    // GPU and IPC buffers need 4096.
    for dev in [DeviceTag::Cuda, DeviceTag::Ipc, DeviceTag::Metal] {
        let e = BufferHandle::new(16, 2048, dev, SyncMode::ProducerSynced).unwrap_err();
        assert_eq!(e.kind(), ErrorKind::InvalidAlignment);
    }
    // The binary handle holds alignment as u32: 2^63 cannot be encoded; 2^31 is the top bit.
    for a in [0u32, 3, 1 << 30, 1 << 31, u32::MAX] {
        assert_eq!(
            BufferHandle::decode(&raw_handle(1, a, 0, 0)).unwrap_err().kind(),
            ErrorKind::InvalidAlignment,
            "{a}"
        );
        let mut d = raw_descriptor(ElementType::Uint8.code(), 0, &[1], 1, 0);
        d.extend_from_slice(&raw_handle(1, a, 0, 0));
        assert_eq!(TensorDescriptor::decode(&d).unwrap_err().kind(), ErrorKind::InvalidAlignment);
        assert_eq!(first_error(&one_frame(&d, &[0]), ReaderOptions::default()).kind(), ErrorKind::InvalidAlignment);
    }
    assert_eq!(AlignedBuf::new(1, 3).unwrap_err().kind(), ErrorKind::InvalidAlignment);
    assert_eq!(AlignedBuf::new(1, 0).unwrap_err().kind(), ErrorKind::InvalidAlignment);
    assert_eq!(AlignedBuf::new(1, 1 << 63).unwrap_err().kind(), ErrorKind::InvalidAlignment);
}

#[test]
fn buffer_handle_codes_and_reserved_bytes_are_checked() {
    for sync in 0x03..=0xFFu8 {
        assert_eq!(BufferHandle::decode(&raw_handle(1, 64, 0, sync)).unwrap_err().kind(), ErrorKind::InvalidSyncMode);
    }
    for dev in 7..=255u8 {
        assert_eq!(BufferHandle::decode(&raw_handle(1, 4096, dev, 0)).unwrap_err().kind(), ErrorKind::InvalidArgument);
    }
    let mut h = raw_handle(1, 64, 0, 0);
    h[15] = 1;
    assert_eq!(BufferHandle::decode(&h).unwrap_err().kind(), ErrorKind::Corrupt);
    assert_eq!(BufferHandle::decode(&h[..15]).unwrap_err().kind(), ErrorKind::Corrupt);
}

#[test]
fn rank_above_the_maximum_is_rejected() {
    assert_eq!(Shape::new(vec![1; MAX_RANK + 1]).unwrap_err().kind(), ErrorKind::InvalidShape);
    for rank in [MAX_RANK + 1, 200, 255] {
        let mut d = raw_descriptor(ElementType::Uint8.code(), 0, &vec![1; rank], 1, 0);
        d.extend_from_slice(&raw_handle(1, 64, 0, 0));
        assert_eq!(TensorDescriptor::decode(&d).unwrap_err().kind(), ErrorKind::InvalidShape);
    }
    // A reader configured with a lower rank limit refuses a valid higher-rank tensor.
    let it = dense(ElementType::Uint8, &[1, 2, 1, 2, 1]);
    let bytes = encode_stream(&[it], false);
    let opts = ReaderOptions { max_rank: 4, ..Default::default() };
    assert_eq!(first_error(&bytes, opts).kind(), ErrorKind::LimitExceeded);
    let too_high = ReaderOptions { max_rank: MAX_RANK as u32 + 1, ..Default::default() };
    assert_eq!(StreamReader::new(SliceSource::new(&[], 1), too_high).err().unwrap().kind(), ErrorKind::InvalidArgument);
}

#[test]
fn a_huge_declared_descriptor_length_on_a_tiny_stream_allocates_nothing() {
    for len in [1u64 << 60, u64::MAX, (1 << 20) + 1, 16 << 20] {
        let mut s = stream_header(0);
        s.extend(frame_header(FRAME_TENSOR, 0, len, 0));
        assert!(s.len() <= 40);
        let (e, largest) = largest_alloc(|| first_error(&s, ReaderOptions::default()));
        assert_eq!(e.kind(), ErrorKind::LimitExceeded, "len {len}");
        // Only the reader's fixed 64 KiB read-ahead buffer and small bookkeeping.
        assert!(largest <= 64 * 1024, "len {len}: allocated {largest} bytes");
    }
    // A declared length within the limit on a tiny stream: truncated, allocation bounded by the limit.
    let mut s = stream_header(0);
    s.extend(frame_header(FRAME_TENSOR, 0, 1000, 0));
    s.extend_from_slice(&[0; 10]);
    let opts = ReaderOptions { max_descriptor_bytes: 1000, ..Default::default() };
    let (e, largest) = largest_alloc(|| first_error(&s, opts));
    assert_eq!(e.kind(), ErrorKind::Truncated);
    assert!(largest <= 64 * 1024);
    // The default limit (1 MiB) declared on a tiny stream: the buffer grows with the bytes that
    // arrive, so nothing near 1 MiB is allocated before the input backs it up.
    let mut s2 = stream_header(0);
    s2.extend(frame_header(FRAME_TENSOR, 0, 1 << 20, 0));
    s2.extend_from_slice(&[0; 10]);
    let (e, largest) = largest_alloc(|| first_error(&s2, ReaderOptions::default()));
    assert_eq!(e.kind(), ErrorKind::Truncated);
    assert!(largest <= 64 * 1024, "allocated {largest} bytes for 10 bytes of descriptor");
    // Options above the format maximum are refused.
    let opts = ReaderOptions { max_descriptor_bytes: (16 << 20) + 1, ..Default::default() };
    assert_eq!(StreamReader::new(SliceSource::new(&s, 1), opts).err().unwrap().kind(), ErrorKind::InvalidArgument);
}

#[test]
fn a_huge_declared_tensor_is_refused_before_allocating() {
    for (size, limit) in [(1u64 << 40, 64u64 << 30), (u64::MAX, 64 << 30), ((1 << 20) + 1, 1 << 20)] {
        let mut d = raw_descriptor(ElementType::Uint8.code(), 0, &[1], 1, 0);
        d.extend_from_slice(&raw_handle(size, 64, 0, 0));
        let opts = ReaderOptions { max_tensor_bytes: limit, ..Default::default() };
        let (e, largest) = largest_alloc(|| first_error(&one_frame(&d, &[1, 2, 3]), opts));
        assert_eq!(e.kind(), ErrorKind::LimitExceeded, "size {size}");
        assert!(largest <= 64 * 1024, "allocated {largest}");
    }
    // The sum of several buffers counts.
    let q = hurray_core::Quantization::PerChannelAffine { axis: 0, dequantized: ElementType::Float32 };
    let desc =
        descriptor(ElementType::Int8, &[2], 0, LayoutDescriptor::RowMajor, vec![cpu(600), cpu(600), cpu(600)], Some(q));
    let bytes = one_frame(&desc.encode().unwrap(), &[]);
    let opts = ReaderOptions { max_tensor_bytes: 1799, ..Default::default() };
    assert_eq!(first_error(&bytes, opts).kind(), ErrorKind::LimitExceeded);
    let opts = ReaderOptions { max_tensor_bytes: 1800, ..Default::default() };
    assert_eq!(first_error(&bytes, opts).kind(), ErrorKind::Truncated);
}

#[test]
fn writer_refuses_mismatched_payloads_and_writes_nothing() {
    let it = dense(ElementType::Float32, &[2, 3]);
    let p = &it.payloads[0];
    let cases: Vec<(Vec<&[u8]>, ErrorKind)> = vec![
        (vec![], ErrorKind::InvalidArgument),
        (vec![p, p], ErrorKind::InvalidArgument),
        (vec![&p[..23]], ErrorKind::BufferTooSmall),
        (vec![&[]], ErrorKind::BufferTooSmall),
        (vec![&[0u8; 25]], ErrorKind::InvalidArgument),
    ];
    for (payloads, kind) in cases {
        let mut w = StreamWriter::new(Vec::new(), WriterOptions::default());
        assert_eq!(w.write_tensor(&it.desc, &payloads).unwrap_err().kind(), kind);
        assert!(w.transport().is_empty(), "nothing may reach the wire");
        assert!(!w.is_poisoned());
        w.write_tensor(&it.desc, &it.slices()).unwrap();
    }
}

#[test]
fn a_stream_whose_payload_is_cut_is_truncated() {
    let it = dense(ElementType::Int64, &[100]);
    let bytes = encode_stream(std::slice::from_ref(&it), false);
    let desc_end = bytes.len() - 24 - 800;
    for cut in [desc_end, desc_end + 1, desc_end + 799] {
        assert_eq!(first_error(&bytes[..cut], ReaderOptions::default()).kind(), ErrorKind::Truncated, "cut {cut}");
    }
    // A frame whose payload is shorter than declared, followed directly by the end marker:
    // the marker's bytes are taken as payload and the input ends inside the item.
    let desc = it.desc.encode().unwrap();
    let mut s = one_frame(&desc, &[0; 100]);
    s.extend(frame_header(FRAME_END, 0, 0, 0));
    assert_eq!(first_error(&s, ReaderOptions::default()).kind(), ErrorKind::Truncated);
}

#[test]
fn malformed_stream_and_frame_headers_get_distinct_errors() {
    let good = encode_stream(&[dense(ElementType::Uint8, &[3])], true);
    let case = |f: &dyn Fn(&mut Vec<u8>)| {
        let mut b = good.clone();
        f(&mut b);
        first_error(&b, ReaderOptions::default()).kind()
    };
    let fix_header_crc = |b: &mut Vec<u8>| {
        let c = crc32c(&b[0..12]);
        b[12..16].copy_from_slice(&c.to_le_bytes());
    };
    assert_eq!(case(&|b| b[0] = b'X'), ErrorKind::InvalidMagic);
    assert_eq!(case(&|b| b[12] ^= 1), ErrorKind::Corrupt);
    assert_eq!(
        case(&|b| {
            b[8] = 2;
            fix_header_crc(b)
        }),
        ErrorKind::VersionMismatch
    );
    assert_eq!(
        case(&|b| {
            b[10] = 0x82;
            fix_header_crc(b)
        }),
        ErrorKind::Unsupported
    );
    // Frame: flags, kind, end marker with a body, descriptor checksum.
    let frame = |kind: [u8; 4], flags: u32, len: u64, dcrc: u32| {
        let mut s = stream_header(0);
        s.extend(frame_header(kind, flags, len, dcrc));
        s.extend_from_slice(&[0; 64]);
        first_error(&s, ReaderOptions::default()).kind()
    };
    assert_eq!(frame(FRAME_TENSOR, 1, 0, 0), ErrorKind::Unsupported);
    assert_eq!(frame(*b"HRXX", 0, 0, 0), ErrorKind::Corrupt);
    assert_eq!(frame(FRAME_END, 0, 4, 0), ErrorKind::Corrupt);
    assert_eq!(frame(FRAME_END, 0, 0, 9), ErrorKind::Corrupt);
    assert_eq!(frame(FRAME_TENSOR, 0, 16, 0x1234_5678), ErrorKind::Corrupt);
    // A stream without payload checksums, read by a reader that requires them.
    let plain = encode_stream(&[], false);
    let opts = ReaderOptions { require_payload_checksums: true, ..Default::default() };
    assert_eq!(first_error(&plain, opts).kind(), ErrorKind::Corrupt);
    // Empty input and a partial header are truncated.
    assert_eq!(first_error(&[], ReaderOptions::default()).kind(), ErrorKind::Truncated);
    assert_eq!(first_error(&good[..7], ReaderOptions::default()).kind(), ErrorKind::Truncated);
}

#[test]
fn malformed_descriptor_fields_get_clear_errors() {
    let h = raw_handle(1, 64, 0, 0);
    let with = |mut d: Vec<u8>, tail: &[u8]| {
        d.extend_from_slice(tail);
        TensorDescriptor::decode(&d).unwrap_err().kind()
    };
    // Codes 19–25 exist from descriptor version 2 on: in a version-1 descriptor they are
    // UNSUPPORTED; 26 and above are unknown.
    assert_eq!(with(raw_descriptor(19, 0, &[1], 1, 0), &h), ErrorKind::Unsupported);
    assert_eq!(with(raw_descriptor(26, 0, &[1], 1, 0), &h), ErrorKind::InvalidType);
    assert_eq!(with(raw_descriptor(255, 0, &[1], 1, 0), &h), ErrorKind::InvalidType);
    for layout in 3..=7 {
        assert_eq!(with(raw_descriptor(5, layout, &[1], 1, 0), &h), ErrorKind::Unsupported);
    }
    assert_eq!(with(raw_descriptor(5, 8, &[1], 1, 0), &h), ErrorKind::InvalidLayout);
    assert_eq!(with(raw_descriptor(5, 0, &[1], 65, 0), &h), ErrorKind::LimitExceeded);
    assert_eq!(with(raw_descriptor(5, 0, &[1], 2, 0), &[h, h].concat()), ErrorKind::InvalidLayout);
    assert_eq!(with(raw_descriptor(5, 0, &[1], 0, 0), &[]), ErrorKind::InvalidLayout);
    for ext in [1 << 3, 1 << 4, 1 << 5] {
        assert_eq!(with(raw_descriptor(5, 0, &[1], 1, ext), &h), ErrorKind::Unsupported);
    }
    assert_eq!(with(raw_descriptor(5, 0, &[1], 1, 1 << 9), &h), ErrorKind::Unsupported);
    // Name: too long, not UTF-8, containing NUL, length past the end.
    let name = |n: &[u8], len: u32| [&h[..], &len.to_le_bytes(), n].concat();
    assert_eq!(with(raw_descriptor(5, 0, &[1], 1, 1), &name(b"", 4097)), ErrorKind::LimitExceeded);
    assert_eq!(with(raw_descriptor(5, 0, &[1], 1, 1), &name(&[0xC3, 0x28], 2)), ErrorKind::Corrupt);
    assert_eq!(with(raw_descriptor(5, 0, &[1], 1, 1), &name(b"a\0", 2)), ErrorKind::InvalidArgument);
    assert_eq!(with(raw_descriptor(5, 0, &[1], 1, 1), &name(b"abc", u32::MAX)), ErrorKind::LimitExceeded);
    assert_eq!(with(raw_descriptor(5, 0, &[1], 1, 1), &name(b"abc", 4)), ErrorKind::Corrupt);
    // Metadata: zero entries, too many, duplicate keys, a huge value length.
    let md = |entries: &[(&[u8], &[u8])], count: u32| {
        let mut v = h.to_vec();
        v.extend_from_slice(&count.to_le_bytes());
        for (k, val) in entries {
            v.extend_from_slice(&(k.len() as u32).to_le_bytes());
            v.extend_from_slice(k);
            v.extend_from_slice(&(val.len() as u32).to_le_bytes());
            v.extend_from_slice(val);
        }
        v
    };
    assert_eq!(with(raw_descriptor(5, 0, &[1], 1, 2), &md(&[], 0)), ErrorKind::Corrupt);
    assert_eq!(with(raw_descriptor(5, 0, &[1], 1, 2), &md(&[], 257)), ErrorKind::Corrupt);
    assert_eq!(with(raw_descriptor(5, 0, &[1], 1, 2), &md(&[(b"k", b"1"), (b"k", b"2")], 2)), ErrorKind::DuplicateName);
    assert_eq!(with(raw_descriptor(5, 0, &[1], 1, 2), &md(&[(b"", b"1")], 1)), ErrorKind::InvalidArgument);
    let mut huge = md(&[], 1);
    huge.extend_from_slice(&1u32.to_le_bytes());
    huge.push(b'k');
    huge.extend_from_slice(&u32::MAX.to_le_bytes());
    assert_eq!(with(raw_descriptor(5, 0, &[1], 1, 2), &huge), ErrorKind::LimitExceeded);
    // Quantization: reserved kinds, unknown kinds, reserved bytes, unused fields, wrong types.
    let quant = |kind: u8, dq: u8, reserved: u8, axis: u32, scale: f64| {
        let mut v = h.to_vec();
        v.extend_from_slice(&[kind, dq, reserved, 0]);
        v.extend_from_slice(&axis.to_le_bytes());
        v.extend_from_slice(&scale.to_le_bytes());
        v.extend_from_slice(&0f64.to_le_bytes());
        v
    };
    // Kinds 4–9 are version-2 kinds: UNSUPPORTED in a version-1 descriptor.
    for kind in 4..=9 {
        assert_eq!(with(raw_descriptor(5, 0, &[1], 1, 4), &quant(kind, 11, 0, 0, 0.0)), ErrorKind::Unsupported);
    }
    assert_eq!(with(raw_descriptor(5, 0, &[1], 1, 4), &quant(0, 11, 0, 0, 0.0)), ErrorKind::Corrupt);
    assert_eq!(with(raw_descriptor(5, 0, &[1], 1, 4), &quant(10, 11, 0, 0, 0.0)), ErrorKind::Corrupt);
    assert_eq!(with(raw_descriptor(5, 0, &[1], 1, 4), &quant(1, 11, 1, 0, 1.0)), ErrorKind::Corrupt);
    assert_eq!(with(raw_descriptor(5, 0, &[1], 1, 4), &quant(1, 11, 0, 3, 1.0)), ErrorKind::Corrupt);
    assert_eq!(with(raw_descriptor(5, 0, &[1], 1, 4), &quant(3, 11, 0, 0, 1.0)), ErrorKind::Corrupt);
    assert_eq!(with(raw_descriptor(5, 0, &[1], 1, 4), &quant(1, 11, 0, 0, f64::NAN)), ErrorKind::InvalidArgument);
    assert_eq!(with(raw_descriptor(5, 0, &[1], 1, 4), &quant(1, 0, 0, 0, 1.0)), ErrorKind::InvalidType);
    let mut f32_affine = quant(1, 11, 0, 0, 1.0);
    f32_affine[..16].copy_from_slice(&raw_handle(4, 64, 0, 0));
    assert_eq!(with(raw_descriptor(11, 0, &[1], 1, 4), &f32_affine), ErrorKind::InvalidType);
    assert_eq!(with(raw_descriptor(5, 0, &[1], 1, 4), &quant(3, 11, 0, 0, 0.0)), ErrorKind::InvalidType);
    assert_eq!(with(raw_descriptor(5, 0, &[1], 1, 4), &quant(2, 11, 0, 1, 0.0)), ErrorKind::InvalidLayout);
    // Magic, version, truncation, trailing bytes, oversize.
    let mut d = raw_descriptor(5, 0, &[1], 1, 0);
    d.extend_from_slice(&h);
    assert!(TensorDescriptor::decode(&d).is_ok());
    let mut bad = d.clone();
    bad[0] = b'X';
    assert_eq!(TensorDescriptor::decode(&bad).unwrap_err().kind(), ErrorKind::InvalidMagic);
    bad = d.clone();
    bad[4] = 3; // versions 1 and 2 are read (descriptor.md §Version policy)
    assert_eq!(TensorDescriptor::decode(&bad).unwrap_err().kind(), ErrorKind::VersionMismatch);
    // Version 2 is read, but a descriptor has one encoding: one that uses no version-2
    // feature must be written as version 1.
    bad[4] = 2;
    assert_eq!(TensorDescriptor::decode(&bad).unwrap_err().kind(), ErrorKind::Corrupt);
    bad = d.clone();
    bad[6] = 1;
    assert_eq!(TensorDescriptor::decode(&bad).unwrap_err().kind(), ErrorKind::InvalidArgument);
    for cut in 0..d.len() {
        assert!(TensorDescriptor::decode(&d[..cut]).is_err());
    }
    bad = d.clone();
    bad.push(0);
    assert_eq!(TensorDescriptor::decode(&bad).unwrap_err().kind(), ErrorKind::Corrupt);
    let huge = vec![0u8; (16 << 20) + 1];
    assert_eq!(TensorDescriptor::decode(&huge).unwrap_err().kind(), ErrorKind::LimitExceeded);
}

#[test]
fn layouts_reaching_outside_buffer_0_are_refused() {
    let f32s = ElementType::Float32;
    let new = |dims: &[u64], off: u64, layout: LayoutDescriptor, size: u64| {
        TensorDescriptor::new(
            1,
            0,
            f32s,
            Shape::new(dims.to_vec()).unwrap(),
            off,
            layout,
            vec![cpu(size)],
            None,
            None,
            None,
            None,
        )
    };
    assert_eq!(new(&[2, 3], 0, LayoutDescriptor::RowMajor, 23).unwrap_err().kind(), ErrorKind::BufferTooSmall);
    assert_eq!(new(&[2, 3], 4, LayoutDescriptor::ColumnMajor, 24).unwrap_err().kind(), ErrorKind::BufferTooSmall);
    assert_eq!(new(&[2, 3], u64::MAX, LayoutDescriptor::RowMajor, 24).unwrap_err().kind(), ErrorKind::BufferTooSmall);
    assert_eq!(new(&[4], 0, LayoutDescriptor::Strided(vec![-1]), 16).unwrap_err().kind(), ErrorKind::BufferTooSmall);
    assert_eq!(new(&[4], 12, LayoutDescriptor::Strided(vec![-1]), 16).unwrap().byte_offset(), 12);
    assert_eq!(
        new(&[4], 0, LayoutDescriptor::Strided(vec![i64::MAX]), u64::MAX).unwrap_err().kind(),
        ErrorKind::BufferTooSmall
    );
    assert_eq!(new(&[4], 0, LayoutDescriptor::Strided(vec![1, 1]), 16).unwrap_err().kind(), ErrorKind::InvalidLayout);
    // Zero-size and broadcast (stride 0) views are fine.
    assert!(new(&[0, 5], 0, LayoutDescriptor::Strided(vec![i64::MIN, i64::MAX]), 0).is_ok());
    assert!(new(&[1000], 0, LayoutDescriptor::Strided(vec![0]), 4).is_ok());
    let e = TensorDescriptor::new(
        1,
        0,
        ElementType::Int4,
        Shape::new(vec![2]).unwrap(),
        0,
        LayoutDescriptor::Strided(vec![1]),
        vec![cpu(1)],
        None,
        None,
        None,
        None,
    );
    assert_eq!(e.unwrap_err().kind(), ErrorKind::InvalidLayout);
}

#[test]
fn empty_input_and_a_cut_header_say_so() {
    use hurray_core::stream::SliceSource;
    use hurray_core::{ErrorKind, ReaderOptions, StreamReader};
    let mut r = StreamReader::new(SliceSource::new(&[], 64), ReaderOptions::default()).unwrap();
    let e = r.next_tensor().unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Truncated);
    assert!(e.message().contains("input is empty"), "{}", e.message());
    let mut r = StreamReader::new(SliceSource::new(b"HRRYST", 64), ReaderOptions::default()).unwrap();
    let e = r.next_tensor().unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Truncated);
    assert!(e.message().contains("stream header after 6 bytes"), "{}", e.message());
}
