//! The four transport rules, through the core reader and writer (docs/spec/stream.md
//! §Transport rules): short counts at every chunk size, resumption after a failed read at every
//! call index, retry of a write that failed before the item's first byte, poisoning after it,
//! 0 from read (truncated) and 0 from write (sink closed).

mod common;

use std::mem::MaybeUninit;

use common::*;
use hurray_core::stream::SliceSource;
use hurray_core::{ErrorKind, ReadTransport, ReaderOptions, Result, StreamReader, StreamWriter, WriterOptions};

fn corpus() -> Vec<Item> {
    let mut v = golden_items();
    v.extend(plain_items());
    v
}

#[test]
fn every_read_chunk_size_from_1_to_64_round_trips() {
    let mut items = corpus();
    items.push(big_item(70 * 1024 + 3));
    for checksums in [false, true] {
        let bytes = encode_stream(&items, checksums);
        for chunk in 1..=64 {
            let (read, end) = read_bytes(&bytes, chunk, ReaderOptions::default());
            end.unwrap_or_else(|e| panic!("chunk {chunk}: {e}"));
            assert_same(&read, &items);
        }
    }
}

#[test]
fn every_write_chunk_size_from_1_to_64_gives_the_same_bytes() {
    let mut items = corpus();
    items.push(big_item(70 * 1024 + 3));
    for checksums in [false, true] {
        let reference = encode_stream(&items, checksums);
        for chunk in 1..=64 {
            let mut w = StreamWriter::new(FlakySink::new(chunk), WriterOptions { payload_checksums: checksums });
            for it in &items {
                w.write_tensor(&it.desc, &it.slices()).unwrap();
            }
            w.finish().unwrap();
            assert!(w.finish().is_ok(), "finish is idempotent");
            let sink = w.into_transport();
            assert_eq!(sink.bytes, reference, "chunk {chunk}");
            let (read, end) = read_bytes(&sink.bytes, usize::MAX, ReaderOptions::default());
            end.unwrap();
            assert_same(&read, &items);
        }
    }
}

/// Reads everything, retrying after each `Transport` error; returns the tensors and the
/// number of transport errors seen.
fn read_resuming(src: FlakySource) -> (Tensors, usize, usize) {
    let mut r = StreamReader::new(src, ReaderOptions::default()).unwrap();
    let (mut out, mut errors) = (Vec::new(), 0);
    loop {
        match r.next_tensor() {
            Ok(Some(t)) => out.push((t.descriptor, t.buffers.iter().map(|b| b.as_slice().to_vec()).collect())),
            Ok(None) => break,
            Err(e) if e.kind() == ErrorKind::Transport => {
                errors += 1;
                assert!(errors < 3, "a failure injected once must not repeat");
            }
            Err(e) => panic!("unexpected {e}"),
        }
    }
    let calls = r.transport().calls;
    (out, errors, calls)
}

#[test]
fn a_read_failing_once_at_any_call_index_resumes_mid_tensor() {
    for (items, chunk) in [(corpus(), 16usize), (vec![big_item(200 * 1024), dense_item()], 4096)] {
        for checksums in [false, true] {
            let bytes = encode_stream(&items, checksums);
            let (_, _, total_calls) = read_resuming(FlakySource::new(bytes.clone(), chunk));
            assert!(total_calls > 20, "the test should cut the stream into many calls");
            for k in 0..total_calls {
                let mut src = FlakySource::new(bytes.clone(), chunk);
                src.fail_at = Some(k);
                let (read, errors, _) = read_resuming(src);
                assert_eq!(errors, 1, "failure at call {k} must surface exactly once");
                assert_same(&read, &items);
            }
        }
    }
}

fn dense_item() -> Item {
    dense(hurray_core::ElementType::Float64, &[3, 5])
}

#[test]
fn a_write_failing_before_the_items_first_byte_can_be_retried() {
    let items = corpus();
    for checksums in [false, true] {
        let reference = encode_stream(&items, checksums);
        // Fail the first transport call of item j (j == items.len(): of finish), once.
        for j in 0..=items.len() {
            let mut w = StreamWriter::new(FlakySink::new(7), WriterOptions { payload_checksums: checksums });
            for (i, it) in items.iter().enumerate() {
                if i == j {
                    let at = w.transport().calls;
                    w.transport_mut().fail_at = Some(at);
                    let e = w.write_tensor(&it.desc, &it.slices()).unwrap_err();
                    assert_eq!(e.kind(), ErrorKind::Transport);
                    assert!(!w.is_poisoned(), "no byte of item {j} was written");
                }
                w.write_tensor(&it.desc, &it.slices()).unwrap();
            }
            if j == items.len() {
                let at = w.transport().calls;
                w.transport_mut().fail_at = Some(at);
                assert_eq!(w.finish().unwrap_err().kind(), ErrorKind::Transport);
                assert!(!w.is_poisoned());
            }
            w.finish().unwrap();
            assert_eq!(w.into_transport().bytes, reference, "failure before item {j}");
        }
    }
}

#[test]
fn a_write_failing_after_the_items_first_byte_poisons_the_writer() {
    let items = corpus();
    for j in [0, 1, items.len() / 2, items.len() - 1] {
        for after in 1..=3 {
            let mut w = StreamWriter::new(FlakySink::new(5), WriterOptions { payload_checksums: true });
            for it in &items[..j] {
                w.write_tensor(&it.desc, &it.slices()).unwrap();
            }
            let at = w.transport().calls + after;
            w.transport_mut().fail_at = Some(at);
            let it = &items[j];
            let e = w.write_tensor(&it.desc, &it.slices()).unwrap_err();
            assert_eq!(e.kind(), ErrorKind::Transport, "item {j}");
            assert!(w.is_poisoned());
            assert_eq!(w.write_tensor(&it.desc, &it.slices()).unwrap_err().kind(), ErrorKind::Poisoned);
            assert_eq!(w.finish().unwrap_err().kind(), ErrorKind::Poisoned);
            assert_eq!(w.write_tensor(&items[0].desc, &items[0].slices()).unwrap_err().kind(), ErrorKind::Poisoned);
            // The wire holds j complete items and then a truncated one.
            let wire = w.into_transport().bytes;
            let (read, end) = read_bytes(&wire, usize::MAX, ReaderOptions::default());
            assert_eq!(end.unwrap_err().kind(), ErrorKind::Truncated);
            assert_same(&read, &items[..j]);
        }
    }
    // finish failing after its first byte poisons too.
    let mut w = StreamWriter::new(FlakySink::new(5), WriterOptions::default());
    w.transport_mut().fail_at = Some(2);
    assert_eq!(w.finish().unwrap_err().kind(), ErrorKind::Transport);
    assert!(w.is_poisoned());
    assert_eq!(w.finish().unwrap_err().kind(), ErrorKind::Poisoned);
}

#[test]
fn read_returning_0_inside_an_item_is_truncated_and_sticky() {
    let items = vec![big_item(100 * 1024), dense_item()];
    let bytes = encode_stream(&items, false);
    // Cut inside the big payload, inside the second descriptor, and before the end marker.
    let first = encode_stream(&items[..1], false).len() - 24; // without its end marker
    for cut in [16 + 24 + 10, 5000, 90 * 1024, first + 30, first + 24 + 60, bytes.len() - 24, bytes.len() - 1] {
        let mut r = StreamReader::new(SliceSource::new(&bytes[..cut], 1000), ReaderOptions::default()).unwrap();
        let (_, end) = read_all(&mut r);
        let e = end.unwrap_err();
        assert_eq!(e.kind(), ErrorKind::Truncated, "cut {cut}");
        // Sticky: the same error again, no transport call needed, no hang.
        assert_eq!(r.next_tensor().unwrap_err(), e);
    }
}

#[test]
fn the_end_marker_is_sticky_and_bytes_after_it_are_ignored() {
    let items = vec![dense_item()];
    let mut bytes = encode_stream(&items, true);
    bytes.extend_from_slice(b"trailing bytes that are not a stream");
    let mut r = StreamReader::new(SliceSource::new(&bytes, 3), ReaderOptions::default()).unwrap();
    let (read, end) = read_all(&mut r);
    end.unwrap();
    assert_same(&read, &items);
    for _ in 0..3 {
        assert!(r.next_tensor().unwrap().is_none());
    }
}

#[test]
fn write_returning_0_is_sink_closed() {
    let items = corpus();
    let it = &items[0];
    // Closed before anything: SINK_CLOSED, and the writer is not poisoned (nothing went out).
    let mut w = StreamWriter::new(FlakySink::new(4), WriterOptions::default());
    w.transport_mut().zero_at = Some(0);
    assert_eq!(w.write_tensor(&it.desc, &it.slices()).unwrap_err().kind(), ErrorKind::SinkClosed);
    assert!(!w.is_poisoned());
    assert_eq!(w.finish().unwrap_err().kind(), ErrorKind::SinkClosed);
    // Closed mid-item: SINK_CLOSED, then POISONED.
    let mut w = StreamWriter::new(FlakySink::new(4), WriterOptions::default());
    w.transport_mut().zero_at = Some(3);
    assert_eq!(w.write_tensor(&it.desc, &it.slices()).unwrap_err().kind(), ErrorKind::SinkClosed);
    assert!(w.is_poisoned());
    assert_eq!(w.write_tensor(&it.desc, &it.slices()).unwrap_err().kind(), ErrorKind::Poisoned);
    assert_eq!(w.finish().unwrap_err().kind(), ErrorKind::Poisoned);
}

/// A transport that claims to have read more than it was asked for.
struct Liar;
impl ReadTransport for Liar {
    fn read(&mut self, dst: &mut [MaybeUninit<u8>]) -> Result<usize> {
        Ok(dst.len() + 1)
    }
}

#[test]
fn a_transport_reporting_more_than_asked_is_an_error_not_a_panic() {
    let mut r = StreamReader::new(Liar, ReaderOptions::default()).unwrap();
    assert_eq!(r.next_tensor().unwrap_err().kind(), ErrorKind::Transport);
}

#[test]
fn nothing_is_written_before_the_first_item_and_an_empty_stream_is_valid() {
    let w = StreamWriter::new(Vec::new(), WriterOptions::default());
    assert!(w.transport().is_empty());
    let bytes = encode_stream(&[], true);
    let (read, end) = read_bytes(&bytes, 1, ReaderOptions::default());
    end.unwrap();
    assert!(read.is_empty());
}

#[test]
fn write_after_finish_is_invalid_state() {
    let mut w = StreamWriter::new(Vec::new(), WriterOptions::default());
    w.finish().unwrap();
    let it = dense_item();
    assert_eq!(w.write_tensor(&it.desc, &it.slices()).unwrap_err().kind(), ErrorKind::InvalidState);
}
