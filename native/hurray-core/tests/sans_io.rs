//! The transport-free decoder and encoder (docs/spec/stream.md §Decoding and encoding without a
//! transport): the decoder fed in arbitrary pieces gives what the callback reader gives; the
//! encoder batches small items, borrows large payloads, takes back an item none of whose bytes
//! left, and poisons after a partial write.

mod common;

use common::*;
use hurray_core::{
    Decoded, ErrorKind, OutSeg, ReaderOptions, StreamDecoder, StreamEncoder, TensorDescriptor, WriterOptions,
};

type Tensors = Vec<(TensorDescriptor, Vec<Vec<u8>>)>;

fn corpus() -> Vec<Item> {
    let mut v = golden_items();
    v.extend(plain_items());
    v.push(big_item(300 * 1024));
    v.push(dense_item_small());
    v
}

fn dense_item_small() -> Item {
    dense(hurray_core::ElementType::Float32, &[3])
}

/// Feeds `bytes` to a decoder, at most `piece(i)` bytes per commit.
fn decode(bytes: &[u8], mut piece: impl FnMut(usize) -> usize) -> (Tensors, hurray_core::Result<()>, usize) {
    let mut d = StreamDecoder::new(ReaderOptions::default()).unwrap();
    let mut out = Vec::new();
    let mut pos = 0;
    let mut commits = 0;
    loop {
        match d.poll() {
            Ok(Decoded::Tensor(t)) => {
                out.push((t.descriptor, t.buffers.iter().map(|b| b.as_slice().to_vec()).collect()));
            }
            Ok(Decoded::End) => return (out, Ok(()), commits),
            Ok(Decoded::NeedInput) => {
                let dst = d.input_buffer().unwrap();
                assert!(!dst.is_empty(), "NeedInput with nowhere to put input");
                let n = dst.len().min(bytes.len() - pos).min(piece(commits).max(1));
                dst[..n].write_copy_of_slice(&bytes[pos..pos + n]);
                pos += n;
                commits += 1;
                d.commit(n).unwrap();
            }
            Err(e) => return (out, Err(e), commits),
        }
    }
}

#[test]
fn the_decoder_fed_in_any_pieces_reads_what_was_written() {
    let items = corpus();
    for crc in [false, true] {
        let bytes = encode_stream(&items, crc);
        let mut rng = Rng::new(7);
        for max in [1usize, 3, 24, 1000, 70_000, usize::MAX] {
            let (read, end, _) = decode(&bytes, |_| 1 + rng.below(max.min(1 << 20) as u64) as usize);
            end.unwrap();
            assert_same(&read, &items);
        }
    }
}

#[test]
fn a_large_payload_arrives_in_place_with_few_commits() {
    let items = vec![big_item(8 << 20)];
    let bytes = encode_stream(&items, false);
    let (read, end, commits) = decode(&bytes, |_| usize::MAX);
    end.unwrap();
    assert_same(&read, &items);
    // One commit fills the read-ahead, one the rest of the payload in place, one the end marker.
    assert!(commits <= 3, "{commits} commits for one 8 MiB tensor");
}

#[test]
fn input_ending_inside_an_item_is_truncated_and_sticky() {
    let items = corpus();
    let bytes = encode_stream(&items, false);
    for cut in [0, 5, 16, 16 + 10, 200, bytes.len() / 2, bytes.len() - 24, bytes.len() - 1] {
        let mut d = StreamDecoder::new(ReaderOptions::default()).unwrap();
        let mut pos = 0;
        let err = loop {
            match d.poll() {
                Ok(Decoded::NeedInput) => {
                    let dst = d.input_buffer().unwrap();
                    let n = dst.len().min(cut - pos);
                    dst[..n].write_copy_of_slice(&bytes[pos..pos + n]);
                    pos += n;
                    d.commit(n).unwrap();
                }
                Ok(_) => {}
                Err(e) => break e,
            }
        };
        assert_eq!(err.kind(), ErrorKind::Truncated, "cut {cut}");
        assert_eq!(d.poll().unwrap_err(), err, "sticky at cut {cut}");
        assert!(d.input_buffer().unwrap().is_empty());
    }
}

#[test]
fn committing_more_than_offered_is_refused_and_takes_nothing() {
    let mut d = StreamDecoder::new(ReaderOptions::default()).unwrap();
    assert!(matches!(d.poll().unwrap(), Decoded::NeedInput));
    let len = d.input_buffer().unwrap().len();
    assert_eq!(d.commit(len + 1).unwrap_err().kind(), ErrorKind::InvalidArgument);
    assert_eq!(d.buffered(), 0);
}

/// Feeds `bytes` to a decoder, each commit filling the whole region offered, and records each
/// region's length and whether it was in place (inside the tensor's allocation).
fn offered_regions(bytes: &[u8]) -> (Tensors, Vec<(usize, bool)>) {
    let mut d = StreamDecoder::new(ReaderOptions::default()).unwrap();
    let (mut out, mut regions, mut pos) = (Vec::new(), Vec::new(), 0);
    loop {
        match d.poll().unwrap() {
            Decoded::Tensor(t) => out.push((t.descriptor, t.buffers.iter().map(|b| b.as_slice().to_vec()).collect())),
            Decoded::End => return (out, regions),
            Decoded::NeedInput => {
                let ahead_before = d.buffered();
                let dst = d.input_buffer().unwrap();
                let n = dst.len().min(bytes.len() - pos);
                let len = dst.len();
                dst[..n].write_copy_of_slice(&bytes[pos..pos + n]);
                pos += n;
                d.commit(n).unwrap();
                // Bytes committed to the read-ahead are buffered; in-place ones are not.
                regions.push((len, n > 0 && d.buffered() == ahead_before));
            }
        }
    }
}

#[test]
fn after_a_large_payload_the_read_ahead_ends_where_the_next_payload_starts() {
    let desc = |name: &str| {
        TensorDescriptor::dense(hurray_core::ElementType::Uint8, hurray_core::Shape::new(vec![1 << 20]).unwrap())
            .unwrap()
            .with_name(name)
            .unwrap()
    };
    let mut rng = Rng::new(3);
    // Same-length names, then a longer one (the guess falls short), a shorter one (it reaches
    // into the payload), a small tensor, and large ones again.
    let mut items: Vec<Item> = ["a/1", "a/2", "a/3", "a/longer-name", "a", "a/4"]
        .iter()
        .map(|n| Item { desc: desc(n), payloads: vec![rng.bytes(1 << 20)] })
        .collect();
    items.insert(5, dense_item_small());
    items.push(Item { desc: desc("a/5"), payloads: vec![rng.bytes(1 << 20)] });
    for crc in [false, true] {
        let bytes = encode_stream(&items, crc);
        let (read, regions) = offered_regions(&bytes);
        assert_same(&read, &items);
        let frame = |i: usize| 24 + items[i].desc.encode().unwrap().len();
        let payload = 1 << 20;
        let crc_bytes = if crc { 4 } else { 0 };
        // Tensor 0: the whole read-ahead (stream header, frame, descriptor, the payload's
        // first bytes), then the payload's rest in place.
        assert_eq!(regions[0], (64 * 1024, false));
        assert!(regions[1].1 && regions[1].0 < payload);
        // Tensors 1 and 2 (descriptors as long as the last): the read-ahead (the last
        // checksum, the frame header and descriptor) ends at the payload, which then arrives
        // whole in place.
        for k in [1, 2] {
            assert_eq!(regions[2 * k], (crc_bytes + frame(k), false), "tensor {k}: {regions:?}");
            assert_eq!(regions[2 * k + 1], (payload, true), "tensor {k}: {regions:?}");
        }
        // Whole in place: tensors 1, 2, 3 (its longer descriptor's rest is asked for exactly)
        // and 7; not 4 (its shorter descriptor's region reaches into the payload) nor 6 (after
        // the small tensor 5, the whole read-ahead again).
        assert_eq!(regions.iter().filter(|&&r| r == (payload, true)).count(), 4, "{regions:?}");
        assert!(regions.iter().all(|&(len, _)| len >= 1));
    }
}

#[test]
fn payloads_just_above_the_read_ahead_arrive_in_place_after_the_first() {
    // 64 KiB and 100 KiB payloads back to back: the first arrives partly through the
    // read-ahead; the read-ahead offered for its rest ends where the next payload starts, so
    // every later one arrives whole in place (no copy out of the read-ahead).
    for size in [64 * 1024usize, 100 * 1024] {
        let mut rng = Rng::new(11);
        let items: Vec<Item> = (0..6)
            .map(|i| Item {
                desc: TensorDescriptor::dense(
                    hurray_core::ElementType::Uint8,
                    hurray_core::Shape::new(vec![size as u64]).unwrap(),
                )
                .unwrap()
                .with_name(format!("t/{i}"))
                .unwrap(),
                payloads: vec![rng.bytes(size)],
            })
            .collect();
        for crc in [false, true] {
            let bytes = encode_stream(&items, crc);
            let (read, regions) = offered_regions(&bytes);
            assert_same(&read, &items);
            let whole = regions.iter().filter(|&&r| r == (size, true)).count();
            assert_eq!(whole, 5, "payload {size}, checksums {crc}: {regions:?}");
            // Two reads per tensor after the first, as a hand-written loop would make.
            assert!(regions.len() <= 2 * items.len() + 2, "payload {size}, checksums {crc}: {regions:?}");
        }
    }
}

/// Feeds `bytes` with scatter reads: each commit fills the offered region and then the one
/// `input_after` offers, as far as the bytes go; returns the tensors and the commit count.
fn decode_scattered(bytes: &[u8]) -> (Tensors, usize) {
    let mut d = StreamDecoder::new(ReaderOptions::default()).unwrap();
    let (mut out, mut pos, mut commits) = (Vec::new(), 0, 0);
    loop {
        match d.poll().unwrap() {
            Decoded::Tensor(t) => out.push((t.descriptor, t.buffers.iter().map(|b| b.as_slice().to_vec()).collect())),
            Decoded::End => return (out, commits),
            Decoded::NeedInput => {
                let first = d.input_buffer().unwrap();
                let n1 = first.len().min(bytes.len() - pos);
                first[..n1].write_copy_of_slice(&bytes[pos..pos + n1]);
                pos += n1;
                let mut n = n1;
                let after = d.input_after().unwrap();
                let n2 = after.len().min(bytes.len() - pos);
                after[..n2].write_copy_of_slice(&bytes[pos..pos + n2]);
                pos += n2;
                n += n2;
                commits += 1;
                d.commit(n).unwrap();
            }
        }
    }
}

#[test]
fn a_scatter_read_takes_a_payloads_rest_and_the_next_frame_in_one_commit() {
    let desc = |name: &str| {
        TensorDescriptor::dense(hurray_core::ElementType::Uint8, hurray_core::Shape::new(vec![1 << 20]).unwrap())
            .unwrap()
            .with_name(name)
            .unwrap()
    };
    let mut rng = Rng::new(5);
    let mut items: Vec<Item> = ["b/1", "b/2", "b/3", "b/4", "b/longer-name", "b", "b/5", "b/6"]
        .iter()
        .map(|n| Item { desc: desc(n), payloads: vec![rng.bytes(1 << 20)] })
        .collect();
    items.insert(6, dense_item_small());
    for crc in [false, true] {
        let bytes = encode_stream(&items, crc);
        let (read, commits) = decode_scattered(&bytes);
        assert_same(&read, &items);
        // Plain reads take two commits per large tensor; scattered ones one per large tensor
        // after the first whose descriptor is as long as the last one's.
        let plain = offered_regions(&bytes).1.len();
        assert!(commits + 6 <= plain, "{commits} scattered commits, {plain} plain (checksums {crc})");
    }
    // Nothing follows the payload region before the next payload of the same tensor when
    // there are no checksums: a two-buffer tensor offers no region after its first payload.
    let mut d = StreamDecoder::new(ReaderOptions::default()).unwrap();
    assert!(d.input_after().unwrap().is_empty(), "no region before any input_buffer");
    assert!(matches!(d.poll().unwrap(), Decoded::NeedInput));
    assert_eq!(d.input_buffer().unwrap().len(), 64 * 1024);
    assert!(d.input_after().unwrap().is_empty(), "no region after the read-ahead");
}

#[test]
fn a_commit_past_the_region_after_a_payload_is_refused() {
    let bytes = encode_stream(&[big_item(1 << 20), big_item(1 << 20)], false);
    let mut d = StreamDecoder::new(ReaderOptions::default()).unwrap();
    let mut pos = 0;
    loop {
        assert!(matches!(d.poll().unwrap(), Decoded::NeedInput));
        let first = d.input_buffer().unwrap();
        let n1 = first.len();
        first.iter_mut().zip(&bytes[pos..pos + n1]).for_each(|(d, s)| {
            d.write(*s);
        });
        let after = d.input_after().unwrap().len();
        if after > 0 {
            assert_eq!(d.commit(n1 + after + 1).unwrap_err().kind(), ErrorKind::InvalidArgument);
            // The same region, asked for again, takes the payload's rest and the region after.
            let first = d.input_buffer().unwrap();
            assert_eq!(first.len(), n1);
            first.iter_mut().zip(&bytes[pos..pos + n1]).for_each(|(d, s)| {
                d.write(*s);
            });
            let after = d.input_after().unwrap();
            after.iter_mut().zip(&bytes[pos + n1..]).for_each(|(d, s)| {
                d.write(*s);
            });
            let k = after.len();
            d.commit(n1 + k).unwrap();
            assert!(matches!(d.poll().unwrap(), Decoded::Tensor(_)));
            // The next frame header and descriptor came with it: the next poll asks for the
            // whole next payload in place.
            assert_eq!(d.buffered(), k);
            assert!(matches!(d.poll().unwrap(), Decoded::NeedInput));
            assert_eq!(d.buffered(), 0);
            assert_eq!(d.input_buffer().unwrap().len(), 1 << 20);
            return;
        }
        d.commit(n1).unwrap();
        pos += n1;
    }
}

#[test]
fn a_commit_past_a_shortened_read_ahead_is_refused() {
    let bytes = encode_stream(&[big_item(1 << 20), big_item(1 << 20)], false);
    let mut d = StreamDecoder::new(ReaderOptions::default()).unwrap();
    let mut pos = 0;
    let mut tensors = 0;
    loop {
        match d.poll().unwrap() {
            Decoded::Tensor(_) => tensors += 1,
            Decoded::NeedInput => {
                let dst = d.input_buffer().unwrap();
                let len = dst.len();
                if tensors == 1 && len < 64 * 1024 {
                    // The region before the second payload: one byte more is refused.
                    assert_eq!(d.commit(len + 1).unwrap_err().kind(), ErrorKind::InvalidArgument);
                    assert_eq!(d.buffered(), 0);
                    return;
                }
                let n = len.min(bytes.len() - pos);
                let dst = d.input_buffer().unwrap();
                dst[..n].write_copy_of_slice(&bytes[pos..pos + n]);
                pos += n;
                d.commit(n).unwrap();
            }
            Decoded::End => panic!("no shortened region was offered"),
        }
    }
}

/// Drains the encoder's whole pending output into `wire`.
fn drain(e: &mut StreamEncoder, payloads: &[&[u8]], wire: &mut Vec<u8>) {
    while e.pending_bytes() > 0 {
        let seg = e.segments()[0];
        let off = e.offset();
        let bytes = match seg {
            OutSeg::Staged { start, end } => e.staged()[start + off..end].to_vec(),
            OutSeg::Borrowed { index, .. } => payloads[index][off..].to_vec(),
        };
        let n = bytes.len().min(777);
        wire.extend_from_slice(&bytes[..n]);
        e.consume(n as u64).unwrap();
    }
}

#[test]
fn small_items_batch_and_large_payloads_are_borrowed() {
    let items = corpus();
    for crc in [false, true] {
        let mut e = StreamEncoder::new(WriterOptions { payload_checksums: crc });
        let mut wire = Vec::new();
        let mut batched = 0;
        for it in &items {
            e.encode(&it.desc, &it.desc.encode().unwrap(), &it.slices()).unwrap();
            if e.borrows_payloads() {
                assert!(e.segments().iter().any(|s| matches!(s, OutSeg::Borrowed { .. })));
                drain(&mut e, &it.slices(), &mut wire);
            } else {
                batched += 1;
            }
        }
        e.finish().unwrap();
        drain(&mut e, &[], &mut wire);
        assert!(e.is_done());
        assert!(batched > 1);
        // The same bytes as the callback writer's.
        assert_eq!(wire, encode_stream(&items, crc));
    }
}

#[test]
fn a_failure_before_any_byte_takes_the_item_back_and_after_one_poisons() {
    let items = corpus();
    let a = &items[0];
    let b = &items[1];
    let mut e = StreamEncoder::new(WriterOptions::default());
    e.encode(&a.desc, &a.desc.encode().unwrap(), &a.slices()).unwrap();
    let after_a = e.pending_bytes();
    e.encode(&b.desc, &b.desc.encode().unwrap(), &b.slices()).unwrap();
    // Two small items leave as one piece.
    assert_eq!(e.segments().len(), 1);
    // Nothing left: b is taken back, a stays pending.
    assert!(!e.abort(true));
    assert_eq!(e.pending_bytes(), after_a);
    assert_eq!(e.segments().iter().map(|s| s.len() as u64).sum::<u64>(), after_a);
    e.encode(&b.desc, &b.desc.encode().unwrap(), &b.slices()).unwrap();
    e.finish().unwrap();
    let mut wire = Vec::new();
    drain(&mut e, &[], &mut wire);
    assert_eq!(wire, encode_stream(&items[..2], false));

    // Part of the pending output left: poisoned, and everything after is refused.
    let mut e = StreamEncoder::new(WriterOptions::default());
    e.encode(&a.desc, &a.desc.encode().unwrap(), &a.slices()).unwrap();
    e.consume(5).unwrap();
    assert!(e.abort(true));
    assert!(e.is_poisoned());
    assert_eq!(e.encode(&a.desc, &a.desc.encode().unwrap(), &a.slices()).unwrap_err().kind(), ErrorKind::Poisoned);
    assert_eq!(e.finish().unwrap_err().kind(), ErrorKind::Poisoned);
}

#[test]
fn encoder_misuse_is_refused() {
    let items = [big_item(200 * 1024), dense_item_small()];
    let mut e = StreamEncoder::new(WriterOptions::default());
    let big = &items[0];
    e.encode(&big.desc, &big.desc.encode().unwrap(), &big.slices()).unwrap();
    assert!(e.borrows_payloads());
    // The next item must wait until the borrowed output was written.
    let small = &items[1];
    assert_eq!(
        e.encode(&small.desc, &small.desc.encode().unwrap(), &small.slices()).unwrap_err().kind(),
        ErrorKind::InvalidState
    );
    assert_eq!(e.finish().unwrap_err().kind(), ErrorKind::InvalidState);
    assert_eq!(e.consume(e.pending_bytes() + 1).unwrap_err().kind(), ErrorKind::InvalidArgument);
    // Wrong payload sizes stage nothing.
    let mut e = StreamEncoder::new(WriterOptions::default());
    assert_eq!(
        e.encode(&small.desc, &small.desc.encode().unwrap(), &[&[0u8; 3]]).unwrap_err().kind(),
        ErrorKind::BufferTooSmall
    );
    assert_eq!(
        e.encode(&small.desc, &small.desc.encode().unwrap(), &[]).unwrap_err().kind(),
        ErrorKind::InvalidArgument
    );
    assert_eq!(e.pending_bytes(), 0);
    e.finish().unwrap();
    assert_eq!(
        e.encode(&small.desc, &small.desc.encode().unwrap(), &small.slices()).unwrap_err().kind(),
        ErrorKind::InvalidState
    );
}

#[test]
fn a_lower_coalesce_limit_borrows_more_and_keeps_the_bytes() {
    let items = corpus();
    let mut e = StreamEncoder::new(WriterOptions::default());
    e.set_coalesce_bytes(16);
    let mut wire = Vec::new();
    let mut borrowed = 0;
    for it in &items {
        e.encode(&it.desc, &it.desc.encode().unwrap(), &it.slices()).unwrap();
        if e.borrows_payloads() {
            borrowed += 1;
        }
        drain(&mut e, &it.slices(), &mut wire);
    }
    e.finish().unwrap();
    drain(&mut e, &[], &mut wire);
    assert!(borrowed > 5, "{borrowed} items borrowed");
    assert_eq!(wire, encode_stream(&items, false));
}

#[test]
fn a_failed_composite_item_is_sticky() {
    use hurray_core::{CompositeInfo, ItemReader, ReadTensor};
    let member = |depth, index| ReadTensor {
        descriptor: TensorDescriptor::dense(
            hurray_core::ElementType::Float32,
            hurray_core::Shape::new(vec![1]).unwrap(),
        )
        .unwrap()
        .with_composite(Some(CompositeInfo::member(depth, index)))
        .unwrap(),
        buffers: Vec::new(),
    };
    let mut items = ItemReader::new();
    // A member outside any composite: CORRUPT, and the same error on every later call,
    // including the end of the stream (never a clean end after a lost item).
    let e = items.push_tensor(member(1, 0)).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Corrupt);
    assert_eq!(items.push_tensor(member(1, 0)).unwrap_err(), e);
    assert_eq!(items.end_of_stream().unwrap_err(), e);
    assert_eq!(items.failure(), Some(&e));
}

#[test]
fn stream_metadata_travels_with_the_header() {
    use hurray_core::{StreamReader, StreamWriter};
    let items = corpus();
    let md = vec![("format".to_string(), b"pt".to_vec()), ("source".to_string(), vec![0u8, 1, 2])];
    let mut w = StreamWriter::new(Vec::new(), WriterOptions { payload_checksums: true });
    w.set_metadata(&md).unwrap();
    for it in &items {
        w.write_tensor(&it.desc, &it.slices()).unwrap();
    }
    // Too late once the header left, and refused before it when invalid.
    assert_eq!(w.set_metadata(&md).unwrap_err().kind(), ErrorKind::InvalidState);
    w.finish().unwrap();
    let wire = w.into_transport();
    let mut e = StreamEncoder::new(WriterOptions::default());
    assert_eq!(e.set_metadata(&[]).unwrap_err().kind(), ErrorKind::InvalidArgument);
    let dup = vec![("k".to_string(), vec![]), ("k".to_string(), vec![])];
    assert_eq!(e.set_metadata(&dup).unwrap_err().kind(), ErrorKind::DuplicateName);

    // The callback reader sees the metadata before the first tensor, and the same tensors.
    let mut r = StreamReader::new(hurray_core::stream::SliceSource::new(&wire, 7), ReaderOptions::default()).unwrap();
    assert_eq!(r.metadata().unwrap(), &md[..]);
    let (read, end) = read_all(&mut r);
    end.unwrap();
    assert_same(&read, &items);
    // The decoder, fed in small pieces, the same; metadata is None before the header.
    let mut d = StreamDecoder::new(ReaderOptions::default()).unwrap();
    assert!(d.metadata().is_none());
    let mut pos = 0;
    while !d.poll_header().unwrap() {
        let dst = d.input_buffer().unwrap();
        let n = dst.len().min(5).min(wire.len() - pos);
        dst[..n].write_copy_of_slice(&wire[pos..pos + n]);
        pos += n;
        d.commit(n).unwrap();
    }
    assert_eq!(d.metadata().unwrap(), &md[..]);
    let (flat, end, _) = decode(&wire, |_| 4096);
    end.unwrap();
    assert_same(&flat, &items);
    // A stream without metadata reports none; a damaged metadata frame is CORRUPT.
    let plain = encode_stream(&items[..1], false);
    let mut r = StreamReader::new(hurray_core::stream::SliceSource::new(&plain, 64), ReaderOptions::default()).unwrap();
    assert!(r.metadata().unwrap().is_empty());
    let mut bad = wire.clone();
    bad[16 + 24 + 2] ^= 1; // inside the metadata body
    let (_, end, _) = decode(&bad, |_| 4096);
    assert_eq!(end.unwrap_err().kind(), ErrorKind::Corrupt);
}

/// Byte offsets of every occurrence of `needle` in `hay`.
fn occurrences(hay: &[u8], needle: &[u8]) -> Vec<usize> {
    (0..=hay.len() - needle.len()).filter(|&i| hay[i..i + needle.len()] == *needle).collect()
}

/// Same-shaped tensors in a row, then a different one, then the first shape again: the
/// decoder reuses a repeated descriptor; each tensor reads back exactly, and
/// `last_descriptor_bytes` is the tensor's encoding.
fn repeating_items() -> Vec<Item> {
    let a = dense_item_small();
    let mut b = dense_item_small();
    b.desc = b.desc.with_name("b").unwrap();
    vec![a.clone(), a.clone(), a.clone(), a.clone(), b.clone(), b, a.clone(), a]
}

#[test]
fn repeated_descriptors_read_back_exactly_and_expose_their_bytes() {
    let items = repeating_items();
    for crc in [false, true] {
        let bytes = encode_stream(&items, crc);
        for max in [1usize, 7, usize::MAX] {
            let (read, end, _) = decode(&bytes, |_| max);
            end.unwrap();
            assert_same(&read, &items);
        }
        let mut d = StreamDecoder::new(ReaderOptions::default()).unwrap();
        assert!(d.last_descriptor_bytes().is_empty());
        let (mut pos, mut n) = (0, 0);
        loop {
            match d.poll().unwrap() {
                Decoded::Tensor(t) => {
                    assert_eq!(d.last_descriptor_bytes(), &t.descriptor.encode().unwrap()[..], "tensor {n}");
                    assert_eq!(t.descriptor, items[n].desc);
                    n += 1;
                }
                Decoded::End => break,
                Decoded::NeedInput => {
                    let dst = d.input_buffer().unwrap();
                    let k = dst.len().min(bytes.len() - pos).min(5);
                    dst[..k].write_copy_of_slice(&bytes[pos..pos + k]);
                    pos += k;
                    d.commit(k).unwrap();
                }
            }
        }
        assert_eq!(n, items.len());
    }
}

#[test]
fn a_repeated_descriptor_is_still_checksummed() {
    let items = repeating_items();
    let clean = encode_stream(&items, true);
    let enc = items[0].desc.encode().unwrap();
    let at = occurrences(&clean, &enc);
    assert_eq!(at.len(), 6, "the first shape's descriptor is written 6 times");
    // Frames 3 and 4 repeat frames 1–2 (the decoder then holds the model); frame 7 follows
    // other descriptors. Corrupt each once: its descriptor bytes, or the stored descriptor CRC
    // in its frame header (the header's own CRC recomputed, so only the descriptor check can
    // notice).
    for (k, &p) in at.iter().enumerate().skip(1) {
        let mut flipped = clean.clone();
        flipped[p + enc.len() - 1] ^= 0x01;
        let mut restamped = clean.clone();
        let h = p - 24;
        restamped[h + 16] ^= 0x01;
        let hc = hurray_core::crc32c::crc32c(&restamped[h..h + 20]);
        restamped[h + 20..h + 24].copy_from_slice(&hc.to_le_bytes());
        let tensor_index = if k < 4 { k } else { k + 2 };
        for bytes in [flipped, restamped] {
            for max in [3usize, usize::MAX] {
                let (read, end, _) = decode(&bytes, |_| max);
                let e = end.unwrap_err();
                assert_eq!(e.kind(), ErrorKind::Corrupt, "occurrence {k}: {e}");
                assert_eq!(read.len(), tensor_index, "occurrence {k}: tensors before the bad one");
                assert_same(&read, &items[..tensor_index]);
            }
        }
    }
}

/// Feeds the whole of `bytes` to `d` in pieces of at most 5 bytes; the tensors read and how
/// the stream ended.
fn feed(d: &mut StreamDecoder, bytes: &[u8]) -> (Tensors, hurray_core::Result<()>) {
    let mut out = Vec::new();
    let mut pos = 0;
    loop {
        match d.poll() {
            Ok(Decoded::Tensor(t)) => {
                out.push((t.descriptor, t.buffers.iter().map(|b| b.as_slice().to_vec()).collect()))
            }
            Ok(Decoded::End) => return (out, Ok(())),
            Ok(Decoded::NeedInput) => {
                let dst = d.input_buffer().unwrap();
                let n = dst.len().min(bytes.len() - pos).min(5);
                dst[..n].write_copy_of_slice(&bytes[pos..pos + n]);
                pos += n;
                d.commit(n).unwrap();
            }
            Err(e) => return (out, Err(e)),
        }
    }
}

#[test]
fn options_set_on_a_reset_decoder_are_enforced_even_for_a_descriptor_it_kept() {
    // Two equal frames: the decoder keeps the descriptor's model, which skips the limit checks
    // for the same bytes later (they passed under the old limits).
    let items = vec![dense_item_small(), dense_item_small()];
    let bytes = encode_stream(&items, false);
    let mut d = StreamDecoder::new(ReaderOptions::default()).unwrap();
    let (read, end) = feed(&mut d, &bytes);
    end.unwrap();
    assert_same(&read, &items);

    // 12-byte tensors against an 8-byte limit: refused as a new decoder with that limit refuses them.
    let small = ReaderOptions { max_tensor_bytes: 8, ..ReaderOptions::default() };
    let fresh = feed(&mut StreamDecoder::new(small).unwrap(), &bytes).1.unwrap_err();
    assert_eq!(fresh.kind(), ErrorKind::LimitExceeded);
    d.reset();
    d.set_options(small).unwrap();
    assert_eq!(*d.options(), small);
    let (read, end) = feed(&mut d, &bytes);
    assert!(read.is_empty());
    assert_eq!(end.unwrap_err().kind(), fresh.kind());

    // And back: the defaults accept them again, twice in a row (the model kept anew).
    for _ in 0..2 {
        d.reset();
        d.set_options(ReaderOptions::default()).unwrap();
        let (read, end) = feed(&mut d, &bytes);
        end.unwrap();
        assert_same(&read, &items);
    }

    // The payload-checksum requirement is an option too.
    d.reset();
    d.set_options(ReaderOptions { require_payload_checksums: true, ..ReaderOptions::default() }).unwrap();
    assert_eq!(feed(&mut d, &bytes).1.unwrap_err().kind(), ErrorKind::Corrupt);
    d.reset();
    let (read, end) = feed(&mut d, &encode_stream(&items, true));
    end.unwrap();
    assert_same(&read, &items);
}

#[test]
fn options_are_set_only_before_any_input_and_bad_ones_change_nothing() {
    let items = vec![dense_item_small()];
    let bytes = encode_stream(&items, false);
    let mut d = StreamDecoder::new(ReaderOptions::default()).unwrap();
    let small = ReaderOptions { max_tensor_bytes: 8, ..ReaderOptions::default() };
    // Input offered but none committed yet: still allowed.
    assert!(matches!(d.poll().unwrap(), Decoded::NeedInput));
    assert!(!d.input_buffer().unwrap().is_empty());
    d.set_options(small).unwrap();
    // One byte committed: refused, limits unchanged.
    d.input_buffer().unwrap()[0].write(bytes[0]);
    d.commit(1).unwrap();
    assert_eq!(d.set_options(ReaderOptions::default()).unwrap_err().kind(), ErrorKind::InvalidState);
    assert_eq!(*d.options(), small);
    assert!(matches!(d.poll().unwrap(), Decoded::NeedInput));
    assert_eq!(d.set_options(ReaderOptions::default()).unwrap_err().kind(), ErrorKind::InvalidState);
    // The end of input reported with nothing taken: refused too.
    d.reset();
    d.commit(0).unwrap();
    assert_eq!(d.set_options(small).unwrap_err().kind(), ErrorKind::InvalidState);
    // Options new() refuses are refused the same way, and the decoder still reads with its own.
    d.reset();
    for bad in [
        ReaderOptions { max_rank: 33, ..ReaderOptions::default() },
        ReaderOptions { max_descriptor_bytes: (16 << 20) + 1, ..ReaderOptions::default() },
    ] {
        let want = StreamDecoder::new(bad).err().unwrap().kind();
        assert_eq!(want, ErrorKind::InvalidArgument);
        assert_eq!(d.set_options(bad).unwrap_err().kind(), want);
        assert_eq!(*d.options(), small);
    }
    assert_eq!(feed(&mut d, &bytes).1.unwrap_err().kind(), ErrorKind::LimitExceeded);
    d.reset();
    d.set_options(ReaderOptions::default()).unwrap();
    let (read, end) = feed(&mut d, &bytes);
    end.unwrap();
    assert_same(&read, &items);
}

#[test]
fn a_reset_encoder_writes_each_stream_as_a_fresh_encoder_would() {
    let items = corpus();
    for crc in [false, true] {
        let mut e = StreamEncoder::new(WriterOptions { payload_checksums: crc });
        // One stream per item, one encoder: each equals the stream a new writer makes of it.
        for it in &items {
            e.reset();
            e.encode(&it.desc, &it.desc.encode().unwrap(), &it.slices()).unwrap();
            let mut wire = Vec::new();
            drain(&mut e, &it.slices(), &mut wire);
            e.finish().unwrap();
            drain(&mut e, &it.slices(), &mut wire);
            assert_eq!(wire, encode_stream(std::slice::from_ref(it), crc));
        }
    }
    let (a, b) = (&items[0], &items[1]);
    let one = |it: &Item| encode_stream(std::slice::from_ref(it), false);

    // A reset drops pending output, the finished state and a poisoning.
    let mut e = StreamEncoder::new(WriterOptions::default());
    e.encode(&a.desc, &a.desc.encode().unwrap(), &a.slices()).unwrap();
    e.consume(5).unwrap();
    assert!(e.abort(false));
    assert_eq!(e.finish().unwrap_err().kind(), ErrorKind::Poisoned);
    e.reset();
    assert!(!e.is_poisoned() && !e.is_finished());
    assert_eq!(e.pending_bytes(), 0);
    e.encode(&b.desc, &b.desc.encode().unwrap(), &b.slices()).unwrap();
    e.finish().unwrap();
    let mut wire = Vec::new();
    drain(&mut e, &b.slices(), &mut wire);
    assert_eq!(wire, one(b));

    // Output borrowing a large payload is dropped too: the next item need not wait for it.
    let big = big_item(200 * 1024);
    e.reset();
    e.encode(&big.desc, &big.desc.encode().unwrap(), &big.slices()).unwrap();
    assert!(e.borrows_payloads());
    e.reset();
    assert!(!e.borrows_payloads());
    e.encode(&a.desc, &a.desc.encode().unwrap(), &a.slices()).unwrap();
    e.finish().unwrap();
    let mut wire = Vec::new();
    drain(&mut e, &a.slices(), &mut wire);
    assert_eq!(wire, one(a));

    // Stream metadata belongs to one stream: after a reset the header carries none.
    e.reset();
    e.set_metadata(&[("k".to_string(), b"v".to_vec())]).unwrap();
    e.reset();
    e.encode(&a.desc, &a.desc.encode().unwrap(), &a.slices()).unwrap();
    e.finish().unwrap();
    let mut wire = Vec::new();
    drain(&mut e, &a.slices(), &mut wire);
    assert_eq!(wire, one(a));
}

/// A named one-buffer tensor of a size around the read-ahead (64 KiB - 1, 64 KiB, a little
/// more, 200,000 bytes), empty, or small; names of the same or other lengths.
fn read_ahead_item(r: &mut Rng) -> Item {
    use hurray_core::{ElementType, LayoutDescriptor};
    let sizes: Vec<u64> = match r.below(6) {
        0 => vec![200_000],
        1 => vec![64 * 1024],
        2 => vec![64 * 1024 - 1],
        3 => vec![0],
        4 => vec![65_536 + r.below(3)],
        _ => vec![r.below(300)],
    };
    let bufs: Vec<_> = sizes.iter().map(|&s| cpu(s)).collect();
    let d = descriptor(ElementType::Uint8, &[sizes[0]], 0, LayoutDescriptor::RowMajor, bufs, None);
    let name = match r.below(4) {
        0 => "t".to_string(),
        1 => "t/longer/name/here".to_string(),
        2 => "x".repeat(r.below(200) as usize + 1),
        _ => format!("t{}", r.below(10)),
    };
    let d = d.with_name(name).unwrap();
    let payloads = sizes.iter().map(|&s| r.bytes(s as usize)).collect();
    Item { desc: d, payloads }
}

/// Reads `bytes` committing the whole offered region or a random part of it, and after a
/// region filled whole, sometimes also all or part of the region `input_after` offers.
fn decode_randomly(bytes: &[u8], r: &mut Rng) -> (Tensors, hurray_core::Result<()>) {
    let mut d = StreamDecoder::new(ReaderOptions::default()).unwrap();
    let (mut out, mut pos) = (Vec::new(), 0);
    loop {
        match d.poll() {
            Ok(Decoded::Tensor(t)) => {
                out.push((t.descriptor, t.buffers.iter().map(|b| b.as_slice().to_vec()).collect()))
            }
            Ok(Decoded::End) => return (out, Ok(())),
            Err(e) => return (out, Err(e)),
            Ok(Decoded::NeedInput) => {
                let first = d.input_buffer().unwrap();
                assert!(!first.is_empty());
                let first_len = first.len();
                let full = r.chance(2);
                let want = if full { first.len() } else { 1 + r.below(first.len() as u64) as usize };
                let n1 = want.min(bytes.len() - pos);
                first[..n1].write_copy_of_slice(&bytes[pos..pos + n1]);
                let mut n = n1;
                pos += n1;
                if n1 == first_len && r.chance(2) {
                    let after = d.input_after().unwrap();
                    let w2 = if r.chance(2) { after.len() } else { r.below(after.len() as u64 + 1) as usize };
                    let n2 = w2.min(bytes.len() - pos);
                    after[..n2].write_copy_of_slice(&bytes[pos..pos + n2]);
                    pos += n2;
                    n += n2;
                }
                d.commit(n).unwrap();
            }
        }
    }
}

/// Streams of tensors around the read-ahead size, with and without payload checksums, read
/// with short and scattered commits: the tensors as written; cut anywhere, `Truncated` after
/// a prefix of them; with a flipped bit, the same tensors and outcome as a whole-input read.
#[test]
fn streams_around_the_read_ahead_size_read_alike_with_short_and_scattered_commits() {
    let mut r = Rng::new(77);
    for case in 0..150 {
        let items: Vec<Item> = (0..1 + r.below(8)).map(|_| read_ahead_item(&mut r)).collect();
        let crc = r.chance(2);
        let bytes = encode_stream(&items, crc);
        let (read, res) = decode_randomly(&bytes, &mut r);
        res.unwrap_or_else(|e| panic!("case {case}: {e}"));
        assert_same(&read, &items);
        // Truncated somewhere.
        let cut = r.below(bytes.len() as u64) as usize;
        let (read2, res2) = decode_randomly(&bytes[..cut], &mut r);
        let e = res2.expect_err("truncated");
        assert_eq!(e.kind(), ErrorKind::Truncated, "case {case} cut {cut}: {e}");
        assert!(read2.len() <= items.len());
        assert_same(&read2, &items[..read2.len()]);
        // A flipped byte: an error or the same tensors... compare with whole-input decode.
        let mut flipped = bytes.clone();
        let at = r.below(bytes.len() as u64) as usize;
        flipped[at] ^= 1 << r.below(8);
        let (a, ra) = decode_randomly(&flipped, &mut r);
        let (b, rb, _) = decode(&flipped, |_| usize::MAX);
        assert_eq!(a, b, "case {case} flip {at}");
        assert_eq!(
            ra.map_err(|e| (e.kind(), e.to_string())),
            rb.map_err(|e| (e.kind(), e.to_string())),
            "case {case} flip {at}"
        );
    }
}

/// A decoder that read a stream, reset and given lower limits (tensor bytes, rank, descriptor
/// bytes), reads the same stream again, whose descriptors repeat the kept one's but for the
/// name: it fails as a new decoder with those limits does, not through the kept template.
#[test]
fn lower_limits_after_a_reset_apply_to_descriptors_read_from_the_kept_template() {
    let it = |name: &str| {
        let d =
            TensorDescriptor::dense(hurray_core::ElementType::Float32, hurray_core::Shape::new(vec![2, 125]).unwrap())
                .unwrap()
                .with_name(name)
                .unwrap();
        Item { desc: d, payloads: vec![vec![0u8; 1000]] }
    };
    let bytes = encode_stream(&[it("a"), it("b")], false);
    let feed = |d: &mut StreamDecoder| -> (usize, hurray_core::Result<()>) {
        let (mut pos, mut n) = (0, 0);
        loop {
            match d.poll() {
                Ok(Decoded::Tensor(_)) => n += 1,
                Ok(Decoded::End) => return (n, Ok(())),
                Err(e) => return (n, Err(e)),
                Ok(Decoded::NeedInput) => {
                    let dst = d.input_buffer().unwrap();
                    let k = dst.len().min(bytes.len() - pos);
                    dst[..k].write_copy_of_slice(&bytes[pos..pos + k]);
                    pos += k;
                    d.commit(k).unwrap();
                }
            }
        }
    };
    for which in 0..3 {
        let mut d = StreamDecoder::new(ReaderOptions::default()).unwrap();
        assert_eq!(feed(&mut d).0, 2);
        d.reset();
        let mut o = ReaderOptions::default();
        match which {
            0 => o.max_tensor_bytes = 999,
            1 => o.max_rank = 1,
            _ => o.max_descriptor_bytes = 40,
        }
        d.set_options(o).unwrap();
        let (n, r) = feed(&mut d);
        let e = r.expect_err("limit");
        let mut fresh = StreamDecoder::new(o).unwrap();
        let (n2, r2) = feed(&mut fresh);
        assert_eq!(
            (n, e.kind(), e.to_string()),
            (n2, r2.as_ref().unwrap_err().kind(), r2.unwrap_err().to_string()),
            "limit {which}"
        );
    }
}

/// A decoded tensor is moved by value several times on its way out of the decoder (and the C
/// ABI's result); above 128 bytes each move is a `memcpy` call, which cost about a tenth of a
/// small tensor's decode. A plain descriptor keeps its layout and optional blocks out of line.
#[test]
fn decoded_tensor_moves_inline() {
    assert!(std::mem::size_of::<TensorDescriptor>() <= 96, "{}", std::mem::size_of::<TensorDescriptor>());
    assert!(
        std::mem::size_of::<hurray_core::ReadTensor>() <= 128,
        "{}",
        std::mem::size_of::<hurray_core::ReadTensor>()
    );
    assert!(std::mem::size_of::<Decoded>() <= 128, "{}", std::mem::size_of::<Decoded>());
}

/// Removing the only optional block gives the descriptor a plain one has (equal, same
/// encoding), and adding it back gives the original.
#[test]
fn composite_block_removed_equals_plain() {
    let plain =
        TensorDescriptor::dense(hurray_core::ElementType::Float32, hurray_core::Shape::new(vec![4]).unwrap()).unwrap();
    let member = plain.clone().with_composite(Some(hurray_core::CompositeInfo::member(1, 0))).unwrap();
    assert_ne!(member, plain);
    assert!(!member.eq_except_name(&plain));
    let back = member.clone().with_composite(None).unwrap();
    assert_eq!(back, plain);
    assert!(back.eq_except_name(&plain));
    assert_eq!(back.encode().unwrap(), plain.encode().unwrap());
    assert_eq!(back.with_composite(Some(hurray_core::CompositeInfo::member(1, 0))).unwrap(), member);
}

/// A descriptor byte-identical to the last one is that descriptor again (shared as it is, not
/// decoded); one that differs in its name or metadata, or a named one, is decoded; each equals
/// what a full decode of its own bytes gives, whatever the pieces the input came in.
#[test]
fn repeated_descriptors_decode_to_themselves() {
    use hurray_core::{ElementType, Shape, StreamWriter};
    let plain = TensorDescriptor::dense(ElementType::Float32, Shape::new(vec![2, 3]).unwrap()).unwrap();
    let a = plain.clone().with_metadata("k", b"a".to_vec()).unwrap();
    let b = plain.clone().with_metadata("k", b"b".to_vec()).unwrap();
    let n = plain.clone().with_name("n").unwrap();
    let descs = [&a, &a, &a, &b, &b, &plain, &plain, &n, &n, &a];
    let mut w = StreamWriter::new(Vec::new(), WriterOptions { payload_checksums: false });
    for (i, d) in descs.iter().enumerate() {
        w.write_tensor(d, &[&[i as u8; 24]]).unwrap();
    }
    w.finish().unwrap();
    let bytes = w.into_transport();
    for max in [1usize, 7, usize::MAX] {
        let (read, end, _) = decode(&bytes, |_| max);
        end.unwrap();
        assert_eq!(read.len(), descs.len());
        for (i, ((got, payloads), want)) in read.iter().zip(descs).enumerate() {
            assert_eq!(got, want, "tensor {i}");
            assert_eq!(got, &TensorDescriptor::decode(&want.encode().unwrap()).unwrap());
            assert_eq!(got.metadata(), want.metadata());
            assert_eq!(payloads, &vec![vec![i as u8; 24]]);
        }
        // Equal unnamed descriptors in a row share their dimensions.
        assert_eq!(read[0].0.shape().dims().as_ptr(), read[1].0.shape().dims().as_ptr());
    }
}
