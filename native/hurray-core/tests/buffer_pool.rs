//! Readers with a buffer pool (docs/spec/stream.md §Buffer pool): a dropped tensor's
//! allocation comes back for the next tensor of a fitting size, never while a tensor still
//! owns it; the cap holds; tensors outlive their reader; data read into reused memory is right
//! (including after a resumed transport failure).

mod common;
mod file_support;

use common::*;
use file_support::{bytes_tensor, pattern, VecSource};
use hurray_core::stream::SliceSource;
use hurray_core::{
    BufferPool, DeviceTag, ElementType, FileReader, FileReaderOptions, FileWriterOptions, ReaderOptions, Shape,
    StreamReader, TensorDescriptor,
};

fn uint8_item(n: u64, seed: u64) -> Item {
    let desc = TensorDescriptor::dense(ElementType::Uint8, Shape::new(vec![n]).unwrap()).unwrap();
    Item { desc, payloads: vec![Rng::new(seed).bytes(n as usize)] }
}

fn pooled(cap: u64) -> ReaderOptions {
    ReaderOptions { pool_bytes: cap, ..Default::default() }
}

#[test]
fn equal_tensors_reuse_one_allocation() {
    // Both the direct-read path (≥ 64 KiB) and the read-ahead path (small payloads).
    for size in [200 * 1024u64, 1000] {
        let items: Vec<Item> = (0..20).map(|i| uint8_item(size, i)).collect();
        for checksums in [false, true] {
            let bytes = encode_stream(&items, checksums);
            let mut r = StreamReader::new(SliceSource::new(&bytes, 7777), pooled(1 << 20)).unwrap();
            let mut first = None;
            for it in &items {
                let t = r.next_tensor().unwrap().unwrap();
                assert_eq!(t.buffers[0].as_slice(), &it.payloads[0][..]);
                assert_eq!(t.buffers[0].as_ptr() as usize % 64, 0);
                let p = t.buffers[0].as_ptr();
                assert_eq!(*first.get_or_insert(p), p, "size {size}: the same allocation every time");
            }
            assert!(r.next_tensor().unwrap().is_none());
            let s = r.buffer_pool().unwrap().stats();
            assert_eq!((s.misses, s.hits), (1, 19), "size {size}: {s:?}");
        }
    }
}

#[test]
fn live_tensors_keep_their_memory() {
    let items: Vec<Item> = (0..8).map(|i| uint8_item(100_000, i)).collect();
    let bytes = encode_stream(&items, false);
    let mut r = StreamReader::new(SliceSource::new(&bytes, usize::MAX), pooled(64 << 20)).unwrap();
    let mut held = Vec::new();
    for _ in 0..4 {
        held.push(r.next_tensor().unwrap().unwrap());
    }
    let mut ptrs: Vec<_> = held.iter().map(|t| t.buffers[0].as_ptr()).collect();
    ptrs.sort();
    ptrs.dedup();
    assert_eq!(ptrs.len(), 4, "no two live tensors share memory");
    // Drop two; the next two reuse exactly those, and the survivors are untouched.
    let dropped: Vec<_> = held.drain(..2).map(|t| t.buffers[0].as_ptr()).collect();
    let next: Vec<_> = (0..2).map(|_| r.next_tensor().unwrap().unwrap()).collect();
    for t in &next {
        assert!(dropped.contains(&t.buffers[0].as_ptr()));
    }
    for (t, it) in held.iter().zip(&items[2..4]) {
        assert_eq!(t.buffers[0].as_slice(), &it.payloads[0][..], "a live tensor's bytes never change");
    }
    for (t, it) in next.iter().zip(&items[4..6]) {
        assert_eq!(t.buffers[0].as_slice(), &it.payloads[0][..]);
    }
}

#[test]
fn cap_bounds_what_the_pool_keeps() {
    let items: Vec<Item> = (0..10).map(|i| uint8_item(100_000, i)).collect();
    let bytes = encode_stream(&items, false);
    let mut r = StreamReader::new(SliceSource::new(&bytes, usize::MAX), pooled(250_000)).unwrap();
    let all: Vec<_> = (0..10).map(|_| r.next_tensor().unwrap().unwrap()).collect();
    drop(all);
    let s = r.buffer_pool().unwrap().stats();
    assert_eq!(s.held_buffers, 2, "{s:?}");
    assert!(s.held_bytes <= 250_000);
    r.set_buffer_pool_bytes(0);
    assert!(r.buffer_pool().is_none());
}

#[test]
fn tensors_outlive_the_reader_and_its_pool() {
    let items: Vec<Item> = (0..3).map(|i| uint8_item(70_000, i)).collect();
    let bytes = encode_stream(&items, true);
    let mut r = StreamReader::new(SliceSource::new(&bytes, usize::MAX), pooled(1 << 20)).unwrap();
    let kept: Vec<_> = (0..3).map(|_| r.next_tensor().unwrap().unwrap()).collect();
    assert!(kept[0].buffers[0].is_pooled());
    drop(r);
    for (t, it) in kept.iter().zip(&items) {
        assert!(!t.buffers[0].is_pooled(), "the pool went with the reader");
        assert_eq!(t.buffers[0].as_slice(), &it.payloads[0][..]);
    }
    drop(kept); // simply freed
}

#[test]
fn mixed_sizes_alignments_and_resumption_round_trip() {
    let mut items = golden_items();
    items.extend(plain_items());
    items.push(big_item(70 * 1024 + 3));
    items.push(uint8_item(300_000, 5));
    items.push(big_item(70 * 1024 + 3));
    let bytes = encode_stream(&items, true);
    // Reading everything (each tensor dropped right after being copied out) through a flaky
    // source must give exactly what the unpooled reader gives.
    for fail_at in [3usize, 17, 40] {
        let mut src = FlakySource::new(bytes.clone(), 4096);
        src.fail_at = Some(fail_at);
        let mut r = StreamReader::new(src, pooled(1 << 20)).unwrap();
        let mut out = Vec::new();
        loop {
            match r.next_tensor() {
                Ok(Some(t)) => {
                    for (b, h) in t.buffers.iter().zip(t.descriptor.buffers()) {
                        assert_eq!(b.as_ptr() as u64 % h.alignment(), 0);
                    }
                    out.push((t.descriptor.clone(), t.buffers.iter().map(|b| b.as_slice().to_vec()).collect()));
                }
                Ok(None) => break,
                Err(e) if e.kind() == hurray_core::ErrorKind::Transport => continue,
                Err(e) => panic!("{e}"),
            }
        }
        assert_same(&out, &items);
        assert!(r.buffer_pool().unwrap().stats().hits > 0);
    }
}

#[test]
fn a_pool_shared_by_two_readers() {
    let items: Vec<Item> = (0..4).map(|i| uint8_item(80_000, i)).collect();
    let bytes = encode_stream(&items, false);
    let pool = BufferPool::new(1 << 20);
    let mut a = StreamReader::new(SliceSource::new(&bytes, usize::MAX), ReaderOptions::default()).unwrap();
    let mut b = StreamReader::new(SliceSource::new(&bytes, usize::MAX), ReaderOptions::default()).unwrap();
    a.set_buffer_pool(Some(pool.clone()));
    b.set_buffer_pool(Some(pool.clone()));
    let p = a.next_tensor().unwrap().unwrap().buffers[0].as_ptr();
    let t = b.next_tensor().unwrap().unwrap();
    assert_eq!(t.buffers[0].as_ptr(), p, "b reuses what a's tensor returned");
    assert_eq!(t.buffers[0].as_slice(), &items[0].payloads[0][..]);
}

#[test]
fn file_reader_reuses_allocations() {
    let tensors: Vec<_> = (0..6u8)
        .map(|i| (bytes_tensor(&format!("t{i}"), 50_000, 4096, DeviceTag::Cpu), vec![pattern(50_000, i)]))
        .collect();
    let file = file_support::build(&tensors, &[], FileWriterOptions::default());
    let mut r = FileReader::open(VecSource::new(file), FileReaderOptions::default()).unwrap();
    r.set_buffer_pool_bytes(1 << 20);
    let mut first = None;
    for i in 0..6u8 {
        let e = r.find(format!("t{i}").as_bytes()).unwrap().unwrap();
        let t = r.read_tensor(&e).unwrap();
        assert_eq!(t.buffers[0].as_slice(), &pattern(50_000, i)[..]);
        assert_eq!(t.buffers[0].as_ptr() as usize % 4096, 0);
        let p = t.buffers[0].as_ptr();
        assert_eq!(*first.get_or_insert(p), p);
    }
    let s = r.buffer_pool().unwrap().stats();
    assert_eq!((s.misses, s.hits), (1, 5));
    // Held across the reader's end: freed normally.
    let e = r.find(b"t0").unwrap().unwrap();
    let t = r.read_tensor(&e).unwrap();
    drop(r);
    assert_eq!(t.buffers[0].as_slice(), &pattern(50_000, 0)[..]);
}
