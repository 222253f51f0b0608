//! The reader's buffer pool through the C ABI (`hurray_reader_set_buffer_pool_bytes`,
//! `hurray_file_reader_set_buffer_pool_bytes`; docs/spec/stream.md §Buffer pool): a destroyed
//! tensor's memory comes back for the next one, never while any handle to it lives (a
//! `hurray_buffer_clone` included), and tensors outlive their reader.

#[path = "../../hurray-core/tests/common/mod.rs"]
mod common;
mod ffi_common;

use std::ffi::c_void;
use std::ptr::null_mut;

use common::*;
use ffi_common::*;
use hurray_core::{ElementType, Shape, TensorDescriptor};
use hurray_ffi::buffer::*;
use hurray_ffi::buffer_list::*;
use hurray_ffi::reader::*;
use hurray_ffi::tensor::*;
use hurray_ffi::*;

fn items(n: u64, size: u64) -> Vec<Item> {
    (0..n)
        .map(|i| {
            let desc = TensorDescriptor::dense(ElementType::Uint8, Shape::new(vec![size]).unwrap()).unwrap();
            Item { desc, payloads: vec![Rng::new(i + 1).bytes(size as usize)] }
        })
        .collect()
}

/// The first buffer of `t` and its data pointer.
///
/// # Safety
/// `t` is a live tensor handle with at least one buffer.
unsafe fn first_buffer(t: *mut HurrayTensor) -> (*mut HurrayBuffer, *mut c_void) {
    // SAFETY: `t` is a live tensor with at least one buffer (this function's # Safety); out-pointers are live locals.
    unsafe {
        let mut list = null_mut();
        expect(hurray_tensor_buffers(t, &mut list), HURRAY_OK);
        let mut b = null_mut();
        expect(hurray_buffer_list_get(list, 0, &mut b), HURRAY_OK);
        let mut data = null_mut();
        expect(hurray_buffer_data_ptr(b, &mut data), HURRAY_OK);
        (b, data)
    }
}

/// The next tensor from `r` (asserting one comes).
///
/// # Safety
/// `r` is a live reader handle.
unsafe fn next(r: *mut HurrayReader) -> *mut HurrayTensor {
    let mut t = null_mut();
    // SAFETY: `r` is a live reader (this function's # Safety); `t` is a live local.
    unsafe { expect(hurray_reader_next_tensor(r, &mut t), HURRAY_OK) };
    t
}

#[test]
fn destroyed_tensors_memory_is_reused_and_live_memory_never_is() {
    let its = items(6, 100_000);
    let mut m = Mem::reading(encode_stream(&its, true), 0);
    let t = transport(&mut m);
    // SAFETY: `m` outlives `t` and the reader; handles are made and destroyed in this block; pointers passed are live
    // locals or slices valid for the lengths given.
    unsafe {
        let mut r = null_mut();
        expect(hurray_reader_new(&t, std::ptr::null(), &mut r), HURRAY_OK);
        expect(hurray_reader_set_buffer_pool_bytes(r, 1 << 20), HURRAY_OK);

        // Tensor 0 destroyed: tensor 1 gets the same memory, with its own bytes.
        let mut a = next(r);
        let (_, pa) = first_buffer(a);
        expect(hurray_tensor_destroy(&mut a), HURRAY_OK);
        let mut b = next(r);
        let (bb, pb) = first_buffer(b);
        assert_eq!(pb, pa, "the destroyed tensor's memory comes back");
        assert_eq!(copy_out(b).buffers[0], its[1].payloads[0]);

        // Tensor 1 destroyed while a clone of its buffer lives: not reused until the clone goes.
        let mut clone = null_mut();
        expect(hurray_buffer_clone(bb, &mut clone), HURRAY_OK);
        expect(hurray_tensor_destroy(&mut b), HURRAY_OK);
        let mut c = next(r);
        let (_, pc) = first_buffer(c);
        assert_ne!(pc, pb, "memory shared by a live clone is not reused");
        let mut data = null_mut();
        expect(hurray_buffer_data_ptr(clone, &mut data), HURRAY_OK);
        let kept = std::slice::from_raw_parts(data as *const u8, 100_000);
        assert_eq!(kept, &its[1].payloads[0][..], "the clone's bytes are intact");
        expect(hurray_buffer_destroy(&mut clone), HURRAY_OK);
        let mut d = next(r);
        let (_, pd) = first_buffer(d);
        assert_eq!(pd, pb, "reused once the last handle is destroyed");
        assert_eq!(copy_out(d).buffers[0], its[3].payloads[0]);
        assert_eq!(copy_out(c).buffers[0], its[2].payloads[0]);

        // 0 removes the pool: new memory from then on.
        expect(hurray_reader_set_buffer_pool_bytes(r, 0), HURRAY_OK);
        expect(hurray_tensor_destroy(&mut d), HURRAY_OK);
        let mut e = next(r);
        assert_eq!(copy_out(e).buffers[0], its[4].payloads[0]);

        // Tensors outlive the reader (and its pool).
        expect(hurray_reader_set_buffer_pool_bytes(r, 1 << 20), HURRAY_OK);
        let mut f = next(r);
        expect(hurray_reader_destroy(&mut r), HURRAY_OK);
        assert_eq!(copy_out(f).buffers[0], its[5].payloads[0]);
        assert_eq!(copy_out(c).buffers[0], its[2].payloads[0]);
        for t in [&mut c, &mut e, &mut f] {
            expect(hurray_tensor_destroy(t), HURRAY_OK);
        }
    }
    assert_eq!(m.released, 1);
}

#[test]
fn pooled_reads_equal_unpooled_reads_for_the_whole_corpus() {
    let mut corpus = golden_items();
    corpus.extend(plain_items());
    corpus.push(big_item(70 * 1024 + 3));
    corpus.push(big_item(70 * 1024 + 3));
    for checksums in [false, true] {
        let bytes = encode_stream(&corpus, checksums);
        let mut m = Mem::reading(bytes, 1000);
        let t = transport(&mut m);
        // SAFETY: `m` outlives `t` and the reader; handles are made and destroyed in this block; pointers passed are
        // live locals or slices valid for the lengths given.
        unsafe {
            let mut r = null_mut();
            expect(hurray_reader_new(&t, std::ptr::null(), &mut r), HURRAY_OK);
            expect(hurray_reader_set_buffer_pool_bytes(r, 64 << 20), HURRAY_OK);
            for (i, it) in corpus.iter().enumerate() {
                let mut tensor = next(r);
                let back = copy_out(tensor); // also checks every buffer's alignment
                assert_eq!(back.encoded, it.desc.encode().unwrap(), "descriptor {i}");
                assert_eq!(back.buffers, it.payloads, "payloads {i}");
                expect(hurray_tensor_destroy(&mut tensor), HURRAY_OK);
            }
            let mut end = null_mut();
            expect(hurray_reader_next_tensor(r, &mut end), HURRAY_END_OF_STREAM);
            expect(hurray_reader_destroy(&mut r), HURRAY_OK);
        }
    }
}

struct Region {
    bytes: Vec<u8>,
}

unsafe extern "C" fn region_read_at(
    ctx: *mut c_void,
    offset: u64,
    dst: *mut u8,
    len: usize,
    out: *mut usize,
) -> HurrayStatus {
    // SAFETY: `ctx` is the `Region` registered below, which outlives the reader; it is only read.
    let r = unsafe { &*(ctx as *const Region) };
    let at = (offset as usize).min(r.bytes.len());
    let n = len.min(r.bytes.len() - at);
    // SAFETY: `dst` is valid for `len` >= `n` bytes and `out` for one write (callback contract); `at + n` <=
    // `bytes.len()` by the clamps above.
    unsafe {
        std::ptr::copy_nonoverlapping(r.bytes.as_ptr().add(at), dst, n);
        *out = n;
    }
    HURRAY_OK
}

unsafe extern "C" fn region_size(ctx: *mut c_void, out: *mut u64) -> HurrayStatus {
    // SAFETY: `ctx` is the registered `Region`, alive for the reader's lifetime; `out` is valid for one write (callback
    // contract).
    unsafe { *out = (*(ctx as *const Region)).bytes.len() as u64 };
    HURRAY_OK
}

#[test]
fn file_reader_reuses_destroyed_tensors_memory() {
    use hurray_core::{FileWriter, FileWriterOptions};
    use hurray_ffi::file::*;
    let its = items(3, 50_000);
    let mut w = FileWriter::new(Vec::new(), FileWriterOptions::default()).unwrap();
    for (i, it) in its.iter().enumerate() {
        let d = it.desc.clone().with_name(format!("t{i}")).unwrap();
        w.add_tensor(&d, &it.slices()).unwrap();
    }
    w.finish().unwrap();
    let mut region = Region { bytes: w.into_transport() };
    let t = HurrayTransport {
        ctx: &mut region as *mut Region as *mut c_void,
        read_at: Some(region_read_at),
        size: Some(region_size),
        ..HurrayTransport::default()
    };
    // SAFETY: the region outlives `t` and the reader; handles are made and destroyed in this block; pointers passed are
    // live locals or slices valid for the lengths given.
    unsafe {
        let mut r = null_mut();
        expect(hurray_file_reader_open(&t, std::ptr::null(), &mut r), HURRAY_OK);
        expect(hurray_file_reader_set_buffer_pool_bytes(r, 1 << 20), HURRAY_OK);
        let mut first = None;
        for (i, it) in its.iter().enumerate() {
            let mut e = null_mut();
            let name = format!("t{i}");
            expect(hurray_file_reader_find(r, name.as_ptr(), name.len() as u64, &mut e), HURRAY_OK);
            let mut tensor = null_mut();
            expect(hurray_file_reader_read_tensor(r, e, &mut tensor), HURRAY_OK);
            let (_, p) = first_buffer(tensor);
            assert_eq!(*first.get_or_insert(p), p, "tensor {i} reuses the first allocation");
            assert_eq!(copy_out(tensor).buffers[0], it.payloads[0]);
            expect(hurray_tensor_destroy(&mut tensor), HURRAY_OK);
            expect(hurray_file_entry_destroy(&mut e), HURRAY_OK);
        }
        expect(hurray_file_reader_destroy(&mut r), HURRAY_OK);
    }
}
