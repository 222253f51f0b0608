//! Large payloads read through the C ABI come from the page allocator (`os/pages.rs`): the
//! bytes read back exactly, the buffers are aligned, every mapping is released with its
//! tensor, and a stream that declares more than it carries maps in proportion to the bytes
//! received (docs/spec/stream.md §Limits).

#[path = "../../hurray-core/tests/common/mod.rs"]
mod common;
mod ffi_common;

use common::*;
use ffi_common::*;
use hurray_core::stream::EAGER_RESERVE_BYTES;
use hurray_core::{ElementType, Shape, TensorDescriptor, POOLED_LARGE_ALLOC_MIN_BYTES};
use hurray_ffi::reader::hurray_reader_set_buffer_pool_bytes;
use hurray_ffi::*;
use std::ptr::null_mut;

const MIB: usize = 1 << 20;

/// One test: the counters are process-wide.
#[test]
fn large_tensors_are_mapped_by_the_bytes_received_and_unmapped_with_their_tensor() {
    if !page_allocator_supported() {
        return;
    }
    let len = 200 * MIB;
    let item = big_item(len as u64);
    let stream = encode_stream(std::slice::from_ref(&item), false);

    // In rising order of what they may map (the peak is a high-water mark). A 152-byte stream
    // declaring 60 GiB: the eager reserve at most, mapped but untouched, then TRUNCATED.
    let d = TensorDescriptor::dense(ElementType::Uint8, Shape::new(vec![60 << 30]).unwrap()).unwrap();
    let tiny = tensor_frame_stream(&d.encode().unwrap(), &[7; 48]);
    let base = page_stats().mapped_bytes;
    let (_, end, _, _) = ffi_read(Mem::reading(tiny, 0));
    assert_eq!(end, HURRAY_ERR_TRUNCATED, "{}", last_error());
    let s = page_stats();
    assert_eq!(s.mapped_bytes, base);
    assert!(s.peak_mapped_bytes - base <= EAGER_RESERVE_BYTES as u64, "{s:?}");

    // Cut short after 80 MiB of payload: the allocation is at most twice what arrived.
    let received = 80 * MIB;
    let header = stream.len() - len - 24; // stream header and frame before, end marker after
    let cut = header + received;
    let base = page_stats().mapped_bytes;
    let (_, end, _, _) = ffi_read(Mem::reading(stream[..cut].to_vec(), 0));
    assert_eq!(end, HURRAY_ERR_TRUNCATED, "{}", last_error());
    let s = page_stats();
    assert_eq!(s.mapped_bytes, base);
    let peak = s.peak_mapped_bytes - base;
    assert!(peak <= (2 * received + 2 * MIB) as u64, "peak {peak} bytes mapped for {received} received");
    assert!(peak >= EAGER_RESERVE_BYTES as u64, "the eager reserve is mapped, untouched");

    let before = page_stats();
    let (got, end, _, _) = ffi_read(Mem::reading(stream.clone(), 0));
    let after = page_stats();
    assert_eq!(end, HURRAY_END_OF_STREAM);
    assert_eq!(got.len(), 1);
    assert!(got[0].buffers[0] == item.payloads[0], "the bytes read back exactly");
    assert!(after.maps > before.maps, "{before:?} -> {after:?}");
    assert_eq!(after.mapped_bytes, before.mapped_bytes, "unmapped with the tensor");
    // Grown 64 -> 128 -> 200 MiB, the pages moved, never doubled: at most the tensor, rounded
    // up to 2 MiB, at once.
    assert!(after.peak_mapped_bytes <= before.mapped_bytes.max(before.peak_mapped_bytes) + (len + 2 * MIB) as u64);

    // With a buffer pool, from 4 MiB on (docs/spec/stream.md §Buffer pool): one map, which the
    // pool hands out again for the next tensor; without one, such a buffer stays with the C
    // allocator.
    let item = big_item(POOLED_LARGE_ALLOC_MIN_BYTES as u64);
    let two = encode_stream(&[item.clone(), item.clone()], false);
    let before = page_stats();
    let (got, end, _, _) = ffi_read(Mem::reading(two.clone(), 0));
    assert_eq!((end, got.len()), (HURRAY_END_OF_STREAM, 2));
    assert_eq!(page_stats().maps, before.maps, "no pool: no map below 32 MiB");
    let before = page_stats();
    let mut m = Mem::reading(two, 0);
    let t = transport(&mut m);
    // SAFETY: `t` is a live local whose `m` outlives the reader; every out-pointer is a live local.
    unsafe {
        let mut r = null_mut();
        expect(hurray_reader_new(&t, std::ptr::null(), &mut r), HURRAY_OK);
        expect(hurray_reader_set_buffer_pool_bytes(r, 256 << 20), HURRAY_OK);
        for _ in 0..2 {
            let mut tensor = null_mut();
            expect(hurray_reader_next_tensor(r, &mut tensor), HURRAY_OK);
            assert!(copy_out(tensor).buffers[0] == item.payloads[0], "the bytes read back exactly");
            expect(hurray_tensor_destroy(&mut tensor), HURRAY_OK);
        }
        let mut tensor = null_mut();
        expect(hurray_reader_next_tensor(r, &mut tensor), HURRAY_END_OF_STREAM);
        assert_eq!(page_stats().maps, before.maps + 1, "one map for both tensors");
        expect(hurray_reader_destroy(&mut r), HURRAY_OK);
    }
    assert_eq!(page_stats().mapped_bytes, before.mapped_bytes, "unmapped with the pool");
}
