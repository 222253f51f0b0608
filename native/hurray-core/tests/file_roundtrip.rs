//! Container round trips in the core: writer → bytes → read_at reader and span reader, in
//! eager and lazy index modes, plus the writer's and reader's failure rules.

mod file_support;

use file_support::*;
use hurray_core::file::{FileReaderOptions, Span, SpanBuffer, ENTRY_BYTES, HEADER_BYTES, OPEN_TAIL_BYTES};
use hurray_core::{
    BufferHandle, DeviceTag, ElementType, ErrorKind, FileReader, FileWriter, FileWriterOptions, LayoutDescriptor,
    Quantization, Shape, SyncMode, TensorDescriptor, DESCRIPTOR_VERSION,
};

fn long_name(tail: &str) -> String {
    format!("{}{tail}", "model.layers.0.self_attention.query_key_value.weight.shard.".repeat(2))
}

/// A varied set: several dtypes, zero-size and scalar shapes, packed int4, strided, per-channel
/// quantization (3 buffers), a 4096-aligned device buffer, and names longer than the 88-byte
/// inline prefix that share that prefix.
fn sample() -> Vec<(TensorDescriptor, Vec<Vec<u8>>)> {
    let mut v = Vec::new();
    let f = named("weights/f32", ElementType::Float32, vec![2, 3]);
    v.push((f, vec![pattern(24, 1)]));
    v.push((named("empty", ElementType::Float64, vec![0, 5]), vec![vec![]]));
    v.push((named("scalar", ElementType::Int64, vec![]), vec![pattern(8, 2)]));
    v.push((named("packed", ElementType::Int4, vec![7]), vec![pattern(4, 3)]));
    let strided = TensorDescriptor::new(
        DESCRIPTOR_VERSION,
        0,
        ElementType::Int16,
        Shape::new(vec![3, 2]).unwrap(),
        0,
        LayoutDescriptor::Strided(vec![1, 3]),
        vec![BufferHandle::new(12, 64, DeviceTag::Cpu, SyncMode::ProducerSynced).unwrap()],
        None,
        None,
        None,
        None,
    )
    .unwrap()
    .with_name("strided")
    .unwrap();
    v.push((strided, vec![pattern(12, 4)]));
    let h = |n| BufferHandle::new(n, 64, DeviceTag::Cpu, SyncMode::ProducerSynced).unwrap();
    let pc = TensorDescriptor::new(
        DESCRIPTOR_VERSION,
        0,
        ElementType::Int8,
        Shape::new(vec![4, 3]).unwrap(),
        0,
        LayoutDescriptor::RowMajor,
        vec![h(12), h(16), h(16)],
        Some(Quantization::PerChannelAffine { axis: 0, dequantized: ElementType::Float32 }),
        None,
        None,
        None,
    )
    .unwrap()
    .with_name("quantized")
    .unwrap()
    .with_metadata("source", b"test".to_vec())
    .unwrap();
    v.push((pc, vec![pattern(12, 5), pattern(16, 6), pattern(16, 7)]));
    v.push((bytes_tensor("gpu", 5000, 4096, DeviceTag::Cuda), vec![pattern(5000, 8)]));
    v.push((bytes_tensor(&long_name("b"), 100, 64, DeviceTag::Cpu), vec![pattern(100, 9)]));
    v.push((bytes_tensor(&long_name("a"), 70_000, 64, DeviceTag::Cpu), vec![pattern(70_000, 10)]));
    v.push((bytes_tensor(&long_name("ab"), 3, 64, DeviceTag::Cpu), vec![pattern(3, 11)]));
    v
}

const META: &[(&str, &[u8])] = &[("format", b"hurray"), ("created-by", b"test"), ("empty", b"")];

fn sorted_names(s: &[(TensorDescriptor, Vec<Vec<u8>>)]) -> Vec<String> {
    let mut n: Vec<String> = s.iter().map(|(d, _)| d.name().unwrap().to_string()).collect();
    n.sort_by(|a, b| a.as_bytes().cmp(b.as_bytes()));
    n
}

fn check_all<R: hurray_core::ReadAt>(r: &mut FileReader<R>, s: &[(TensorDescriptor, Vec<Vec<u8>>)]) {
    assert_eq!(r.entry_count(), s.len() as u64);
    let names = sorted_names(s);
    for (i, n) in names.iter().enumerate() {
        assert_eq!(&r.name_at(i as u64).unwrap(), n);
        let e = r.entry(i as u64).unwrap();
        assert_eq!(e.index(), i as u64);
        assert_eq!(e.name(), n);
    }
    for (d, payloads) in s {
        let e = r.find(d.name().unwrap().as_bytes()).unwrap().expect("present");
        assert_eq!(e.descriptor(), d);
        for (loc, h) in e.buffers().iter().zip(d.buffers()) {
            assert_eq!(loc.offset % h.alignment(), 0);
            assert!(loc.offset >= HEADER_BYTES);
            assert!(loc.crc32c.is_some());
        }
        let t = r.read_tensor(&e).unwrap();
        assert_eq!(&t.descriptor, d);
        for ((b, p), h) in t.buffers.iter().zip(payloads).zip(d.buffers()) {
            assert_eq!(b.as_slice(), &p[..]);
            assert_eq!(b.as_ptr() as usize % h.alignment() as usize, 0);
        }
    }
    for missing in ["", "zzz", "weights", "weights/f32x", "a"] {
        assert!(r.find(missing.as_bytes()).unwrap().is_none(), "{missing}");
    }
    assert!(r.find(long_name("").as_bytes()).unwrap().is_none());
    assert!(r.find(long_name("c").as_bytes()).unwrap().is_none());
    let md: Vec<(String, Vec<u8>)> = r.metadata().unwrap().to_vec();
    let mut want: Vec<(String, Vec<u8>)> = META.iter().map(|(k, v)| (k.to_string(), v.to_vec())).collect();
    want.sort();
    assert_eq!(md, want);
    assert_eq!(r.metadata_value("format").unwrap(), Some(&b"hurray"[..]));
    assert_eq!(r.metadata_value("nope").unwrap(), None);
    r.verify().unwrap();
}

/// Open reads one range from the end first: a container of at most `OPEN_TAIL_BYTES` opens in
/// one read, one whose index fits the tail in two, a larger index takes the third; never a
/// byte outside the input, whatever the source's short counts.
#[test]
fn open_coalesces_its_reads_at_the_end() {
    let one = vec![(named("t", ElementType::Float32, vec![16]), vec![pattern(64, 1)])];
    let small = build(&one, &[], FileWriterOptions::default());
    assert!(small.len() as u64 <= OPEN_TAIL_BYTES);
    let many: Vec<_> = (0..100)
        .map(|i| (named(&format!("t{i:03}"), ElementType::Float32, vec![16]), vec![pattern(64, i as u8)]))
        .collect();
    let big_index = build(&many, &[], FileWriterOptions::default());
    let mut huge_tensor = one.clone();
    huge_tensor[0] = (named("t", ElementType::Float32, vec![4096]), vec![pattern(16384, 2)]);
    let far = build(&huge_tensor, &[], FileWriterOptions::default());
    for (bytes, want, what) in [(&small, 1, "small"), (&far, 2, "small index"), (&big_index, 3, "index over 4 KiB")] {
        for chunk in [usize::MAX, 7] {
            let mut src = VecSource::new(bytes.clone());
            src.chunk = chunk;
            let mut r = FileReader::open(src, FileReaderOptions::default()).unwrap();
            assert!(r.is_index_loaded(), "{what}");
            if chunk == usize::MAX {
                assert_eq!(r.read_calls(), want, "{what}: {} bytes", bytes.len());
            }
            let before = r.read_calls();
            let e = r.find(b"t").unwrap().or_else(|| r.find(b"t042").unwrap()).unwrap();
            assert_eq!(r.read_calls(), before, "{what}: the index is loaded");
            r.read_tensor(&e).unwrap();
            r.verify().unwrap();
            assert!(!r.source().out_of_range, "{what}");
        }
    }
}

#[test]
fn round_trip_eager_and_lazy_with_short_reads() {
    let s = sample();
    let bytes = build(&s, META, FileWriterOptions::default());
    assert_eq!(&bytes[0..8], b"HRRYFILE");

    let mut r = FileReader::open(VecSource::new(bytes.clone()), FileReaderOptions::default()).unwrap();
    assert!(r.is_index_loaded());
    assert!(bytes.len() as u64 > OPEN_TAIL_BYTES);
    assert_eq!(r.read_calls(), 2, "the end (trailer, index and metadata), then the header");
    assert_eq!(r.source().size_calls, 1);
    let before = r.read_calls();
    let e = r.find(long_name("a").as_bytes()).unwrap().unwrap();
    assert_eq!(r.read_calls(), before, "a loaded index needs no reads for a lookup");
    r.read_tensor(&e).unwrap();
    assert_eq!(r.read_calls(), before + 1, "one read per buffer");
    check_all(&mut r, &s);
    assert!(!r.source().out_of_range);

    let lazy = FileReaderOptions { eager_index_bytes: 0, ..Default::default() };
    let mut r = FileReader::open(VecSource::new(bytes.clone()), lazy).unwrap();
    assert!(!r.is_index_loaded());
    assert_eq!(r.read_calls(), 2, "the end and the header only");
    check_all(&mut r, &s);
    assert!(!r.source().out_of_range);

    // Short counts are normal: every call moves at most 7 bytes.
    let mut src = VecSource::new(bytes);
    src.chunk = 7;
    let mut r = FileReader::open(src, lazy).unwrap();
    check_all(&mut r, &s);
    assert!(!r.source().out_of_range);
}

#[test]
fn writer_short_writes_produce_identical_bytes() {
    let s = sample();
    let reference = build(&s, META, FileWriterOptions::default());
    let mut sink = VecSink::new();
    sink.chunk = 5;
    let mut w = FileWriter::new(sink, FileWriterOptions::default()).unwrap();
    for (d, p) in &s {
        let sl: Vec<&[u8]> = p.iter().map(|v| v.as_slice()).collect();
        w.add_tensor(d, &sl).unwrap();
        assert!(w.bytes_written() <= w.position());
    }
    for (k, v) in META {
        w.set_metadata(k, v).unwrap();
    }
    let size = w.finish().unwrap();
    assert_eq!(w.bytes_written(), size);
    assert_eq!(w.finish().unwrap(), size, "finish is idempotent");
    assert_eq!(w.into_transport().bytes, reference);
}

#[test]
fn span_reader_borrows_aligned_payloads_and_copies_otherwise() {
    let s = sample();
    let bytes = build(&s, META, FileWriterOptions::default());
    // A region starting on a 4096 boundary: every payload is in place.
    let mut backing = vec![0u8; bytes.len() + 4096];
    let skew = backing.as_ptr().align_offset(4096);
    backing[skew..skew + bytes.len()].copy_from_slice(&bytes);
    let region = &backing[skew..skew + bytes.len()];
    let lo = region.as_ptr() as usize;
    let hi = lo + region.len();
    let mut r =
        FileReader::open_span(region, FileReaderOptions { verify_payloads: true, ..Default::default() }).unwrap();
    check_all(&mut r, &s);
    for (d, payloads) in &s {
        let e = r.find(d.name().unwrap().as_bytes()).unwrap().unwrap();
        let t = r.span_tensor(&e).unwrap();
        for (b, p) in t.buffers.iter().zip(payloads) {
            assert!(b.is_borrowed(), "{} should be zero copy", d.name().unwrap());
            let a = b.as_slice().as_ptr() as usize;
            assert!(a >= lo && a + p.len() <= hi);
            assert_eq!(b.as_slice(), &p[..]);
        }
    }
    // A region one byte off alignment: payloads come back as aligned copies.
    let mut backing = vec![0u8; bytes.len() + 4097];
    let skew = backing.as_ptr().align_offset(4096) + 1;
    backing[skew..skew + bytes.len()].copy_from_slice(&bytes);
    let region = &backing[skew..skew + bytes.len()];
    let mut r = FileReader::open(Span::new(region), FileReaderOptions::default()).unwrap();
    let e = r.find(b"gpu").unwrap().unwrap();
    let t = r.span_tensor(&e).unwrap();
    match &t.buffers[0] {
        SpanBuffer::Copied(c) => {
            assert_eq!(c.as_ptr() as usize % 4096, 0);
            assert_eq!(c.as_slice(), &pattern(5000, 8)[..]);
        }
        SpanBuffer::Borrowed(_) => panic!("a misaligned region must not be handed out in place"),
    }
    // Corrupt a payload byte: caught only when payload checks are on.
    let off = e.buffers()[0].offset as usize;
    backing[skew + off] ^= 0xFF;
    let region = &backing[skew..skew + bytes.len()];
    let quiet = FileReaderOptions { verify_payloads: false, ..Default::default() };
    let mut r = FileReader::open_span(region, quiet).unwrap();
    let e = r.find(b"gpu").unwrap().unwrap();
    assert!(r.span_tensor(&e).is_ok());
    let mut r = FileReader::open_span(region, FileReaderOptions::default()).unwrap();
    let e = r.find(b"gpu").unwrap().unwrap();
    assert_eq!(r.span_tensor(&e).unwrap_err().kind(), ErrorKind::Corrupt);
}

#[test]
fn payload_checksum_mismatch_and_checksums_off() {
    let s = sample();
    let mut bytes = build(&s, &[], FileWriterOptions::default());
    let mut r = FileReader::open(VecSource::new(bytes.clone()), FileReaderOptions::default()).unwrap();
    let e = r.find(b"weights/f32").unwrap().unwrap();
    bytes[e.buffers()[0].offset as usize] ^= 1;
    let mut r = FileReader::open(VecSource::new(bytes.clone()), FileReaderOptions::default()).unwrap();
    let e = r.find(b"weights/f32").unwrap().unwrap();
    assert_eq!(r.read_tensor(&e).unwrap_err().kind(), ErrorKind::Corrupt);
    let mut r =
        FileReader::open(VecSource::new(bytes), FileReaderOptions { verify_payloads: false, ..Default::default() })
            .unwrap();
    assert!(r.read_tensor(&e).is_err(), "an entry of another reader is refused");
    let e = r.find(b"weights/f32").unwrap().unwrap();
    assert!(r.read_tensor(&e).is_ok());

    let bytes = build(&s, &[], FileWriterOptions { payload_checksums: false, ..Default::default() });
    let mut r = FileReader::open(VecSource::new(bytes), FileReaderOptions::default()).unwrap();
    let e = r.find(b"gpu").unwrap().unwrap();
    assert_eq!(e.buffers()[0].crc32c, None);
    assert_eq!(r.read_tensor(&e).unwrap().buffers[0].as_slice(), &pattern(5000, 8)[..]);
}

#[test]
fn min_payload_alignment_places_payloads_on_pages() {
    let s = sample();
    let bytes = build(&s, &[], FileWriterOptions { min_payload_alignment: 4096, ..Default::default() });
    let mut r = FileReader::open(VecSource::new(bytes), FileReaderOptions::default()).unwrap();
    for i in 0..r.entry_count() {
        for b in r.entry(i).unwrap().buffers() {
            assert_eq!(b.offset % 4096, 0);
        }
    }
    assert!(FileWriter::new(VecSink::new(), FileWriterOptions { min_payload_alignment: 100, ..Default::default() })
        .is_err());
    assert!(
        FileWriter::new(VecSink::new(), FileWriterOptions { min_payload_alignment: 32, ..Default::default() }).is_err()
    );
}

#[test]
fn empty_container() {
    let bytes = build(&[], &[], FileWriterOptions::default());
    assert_eq!(bytes.len(), 64 + 8 + 72, "header padded to 64, empty metadata block, trailer");
    let mut r = FileReader::open(VecSource::new(bytes), FileReaderOptions::default()).unwrap();
    assert_eq!(r.entry_count(), 0);
    assert!(r.find(b"x").unwrap().is_none());
    assert!(r.metadata().unwrap().is_empty());
    assert_eq!(r.entry(0).unwrap_err().kind(), ErrorKind::InvalidArgument);
    r.verify().unwrap();
}

#[test]
fn writer_rejects_bad_tensors_without_writing() {
    let mut w = FileWriter::new(VecSink::new(), FileWriterOptions::default()).unwrap();
    let unnamed = TensorDescriptor::dense(ElementType::Uint8, Shape::new(vec![4]).unwrap()).unwrap();
    assert_eq!(w.add_tensor(&unnamed, &[&[0; 4]]).unwrap_err().kind(), ErrorKind::InvalidArgument);
    let empty_name = unnamed.clone().with_name("").unwrap();
    assert_eq!(w.add_tensor(&empty_name, &[&[0; 4]]).unwrap_err().kind(), ErrorKind::InvalidArgument);
    let d = named("x", ElementType::Uint8, vec![4]);
    assert_eq!(w.add_tensor(&d, &[&[0; 3]]).unwrap_err().kind(), ErrorKind::BufferTooSmall);
    assert_eq!(w.add_tensor(&d, &[&[0; 5]]).unwrap_err().kind(), ErrorKind::InvalidArgument);
    assert_eq!(w.add_tensor(&d, &[]).unwrap_err().kind(), ErrorKind::InvalidArgument);
    w.add_tensor(&d, &[&[1, 2, 3, 4]]).unwrap();
    assert_eq!(w.add_tensor(&d, &[&[1, 2, 3, 4]]).unwrap_err().kind(), ErrorKind::DuplicateName);
    assert_eq!(w.set_metadata("", b"v").unwrap_err().kind(), ErrorKind::InvalidArgument);
    w.set_metadata("k", b"old").unwrap();
    w.set_metadata("k", b"new").unwrap();
    assert_eq!(w.tensor_count(), 1);
    w.finish().unwrap();
    assert_eq!(
        w.add_tensor(&named("y", ElementType::Uint8, vec![1]), &[&[0]]).unwrap_err().kind(),
        ErrorKind::InvalidState
    );
    assert_eq!(w.set_metadata("k", b"").unwrap_err().kind(), ErrorKind::InvalidState);
    let bytes = w.into_transport().bytes;
    let mut r = FileReader::open(VecSource::new(bytes), FileReaderOptions::default()).unwrap();
    assert_eq!(r.entry_count(), 1);
    assert_eq!(r.metadata_value("k").unwrap(), Some(&b"new"[..]));
}

#[test]
fn writer_failures_before_a_tensor_starts_are_retryable() {
    let s = sample();
    let reference = build(&s, META, FileWriterOptions::default());
    let mut w = FileWriter::new(VecSink::new(), FileWriterOptions::default()).unwrap();
    let mut refused = 0;
    for (d, p) in &s {
        let sl: Vec<&[u8]> = p.iter().map(|v| v.as_slice()).collect();
        // Fail the very next write call: only bytes of earlier tensors (or none) can be
        // in flight, so the tensor is refused and a retry adds it.
        w.transport_mut().fail_after = Some(0);
        match w.add_tensor(d, &sl) {
            Ok(()) => {}
            Err(e) => {
                assert_eq!(e.kind(), ErrorKind::Transport);
                assert!(!w.is_poisoned());
                refused += 1;
                w.transport_mut().fail_after = None;
                w.add_tensor(d, &sl).unwrap();
            }
        }
        w.transport_mut().fail_after = None;
    }
    assert!(refused >= 1, "the 70,000-byte payload forces a flush that fails");
    for (k, v) in META {
        w.set_metadata(k, v).unwrap();
    }
    w.transport_mut().fail_after = Some(10);
    assert_eq!(w.finish().unwrap_err().kind(), ErrorKind::Transport);
    w.transport_mut().fail_after = None;
    w.finish().unwrap();
    assert_eq!(w.into_transport().bytes, reference);
}

#[test]
fn writer_failure_inside_a_large_payload_poisons() {
    let mut w = FileWriter::new(VecSink::new(), FileWriterOptions::default()).unwrap();
    let big = pattern(200_000, 1);
    w.transport_mut().fail_after = Some(100_000);
    let e = w.add_tensor(&bytes_tensor("big", 200_000, 64, DeviceTag::Cpu), &[&big]).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Transport);
    assert!(w.is_poisoned());
    w.transport_mut().fail_after = None;
    let d = named("x", ElementType::Uint8, vec![1]);
    assert_eq!(w.add_tensor(&d, &[&[0]]).unwrap_err().kind(), ErrorKind::Poisoned);
    assert_eq!(w.finish().unwrap_err().kind(), ErrorKind::Poisoned);
}

#[test]
fn unfinished_output_is_rejected() {
    let mut w = FileWriter::new(VecSink::new(), FileWriterOptions::default()).unwrap();
    w.add_tensor(&bytes_tensor("a", 100_000, 64, DeviceTag::Cpu), &[&pattern(100_000, 1)]).unwrap();
    w.add_tensor(&named("b", ElementType::Uint8, vec![3]), &[&[1, 2, 3]]).unwrap();
    w.flush().unwrap();
    let bytes = w.into_transport().bytes;
    assert!(bytes.len() > 100_000);
    let e = FileReader::open(VecSource::new(bytes), FileReaderOptions::default()).err().unwrap();
    assert_eq!(e.kind(), ErrorKind::InvalidMagic);
    // Dropping a writer before anything was flushed leaves no bytes at all.
    let mut w = FileWriter::new(VecSink::new(), FileWriterOptions::default()).unwrap();
    w.add_tensor(&named("b", ElementType::Uint8, vec![3]), &[&[1, 2, 3]]).unwrap();
    let bytes = w.into_transport().bytes;
    let e = FileReader::open(VecSource::new(bytes), FileReaderOptions::default()).err().unwrap();
    assert_eq!(e.kind(), ErrorKind::Truncated);
}

#[test]
fn reader_transport_failures_are_retryable() {
    let s = sample();
    let bytes = build(&s, META, FileWriterOptions::default());
    let lazy = FileReaderOptions { eager_index_bytes: 0, ..Default::default() };
    for k in 0..3 {
        let mut src = VecSource::new(bytes.clone());
        src.fail_next = 1;
        // Skip k successful calls first by opening once more when k > 0.
        if k == 0 {
            let e = FileReader::open(src, lazy).err().unwrap();
            assert_eq!(e.kind(), ErrorKind::Transport);
            continue;
        }
        src.fail_next = 0;
        let mut r = FileReader::open(src, lazy).unwrap();
        r.source_mut().fail_next = k;
        let name = long_name("a");
        let mut tries = 0;
        let e = loop {
            match r.find(name.as_bytes()) {
                Ok(e) => break e.unwrap(),
                Err(err) => {
                    assert_eq!(err.kind(), ErrorKind::Transport);
                    tries += 1;
                }
            }
        };
        assert_eq!(tries, k);
        r.source_mut().fail_next = 1;
        assert_eq!(r.read_tensor(&e).unwrap_err().kind(), ErrorKind::Transport);
        assert_eq!(r.read_tensor(&e).unwrap().buffers[0].as_slice(), &pattern(70_000, 10)[..]);
        r.source_mut().fail_next = 1;
        assert_eq!(r.metadata().unwrap_err().kind(), ErrorKind::Transport);
        assert_eq!(r.metadata().unwrap().len(), 3);
    }
}

#[test]
fn lazy_lookup_read_counts() {
    let s = sample();
    let bytes = build(&s, META, FileWriterOptions::default());
    let lazy = FileReaderOptions { eager_index_bytes: 0, ..Default::default() };
    let mut r = FileReader::open(VecSource::new(bytes), lazy).unwrap();
    let n = r.entry_count();
    let probes = 64 - n.leading_zeros() as u64; // ceil(log2(n + 1))
    for name in sorted_names(&s) {
        let before = r.read_calls();
        r.find(name.as_bytes()).unwrap().unwrap();
        let used = r.read_calls() - before;
        // Long names sharing their first 88 bytes cost a second read per tying probe.
        let bound = if name.len() > 88 { 2 * probes + 1 } else { probes + 1 };
        assert!(used <= bound, "{name}: {used} reads > {bound}");
    }
    let before = r.read_calls();
    r.entry(0).unwrap();
    assert_eq!(r.read_calls() - before, 2, "an entry and its record");
    assert_eq!(ENTRY_BYTES, 128);
}
