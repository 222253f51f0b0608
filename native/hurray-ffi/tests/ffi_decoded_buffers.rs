//! A tensor from `hurray_decoder_next_batch` keeps its buffers as read until
//! `hurray_tensor_buffers` first asks for the list (docs/spec/c-abi.md §Decoders and encoders):
//! the list then names the same memory the result's buffer views gave, on every call; a buffer
//! cloned from it outlives the tensor and the decoder; tensors listed and never listed are
//! destroyed in any order after the decoder; and a decoded tensor costs few heap blocks.

mod ffi_common;

use std::alloc::{GlobalAlloc, Layout, System};
use std::ffi::c_void;
use std::ptr::{null, null_mut};
use std::sync::atomic::{AtomicU64, Ordering};

use ffi_common::*;
use hurray_core::{ElementType, OutSeg, Shape, StreamEncoder, TensorDescriptor, WriterOptions};
use hurray_ffi::buffer::HurrayBuffer;
use hurray_ffi::buffer_list::{hurray_buffer_list_data_ptrs, hurray_buffer_list_get, hurray_buffer_list_len};
use hurray_ffi::decoder::*;
use hurray_ffi::tensor::*;
use hurray_ffi::*;

struct Counting;
static ALLOCS: AtomicU64 = AtomicU64::new(0);

// SAFETY: every method forwards to `System` unchanged and only counts calls on the side, so
// `System`'s guarantees are this allocator's.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, l: Layout) -> *mut u8 {
        ALLOCS.fetch_add(1, Ordering::SeqCst);
        // SAFETY: forwarded unchanged: the caller's `GlobalAlloc::alloc` contract holds for System too.
        unsafe { System.alloc(l) }
    }
    unsafe fn dealloc(&self, p: *mut u8, l: Layout) {
        // SAFETY: forwarded unchanged: `p` was allocated by System with layout `l`.
        unsafe { System.dealloc(p, l) }
    }
    unsafe fn realloc(&self, p: *mut u8, l: Layout, new: usize) -> *mut u8 {
        ALLOCS.fetch_add(1, Ordering::SeqCst);
        // SAFETY: forwarded unchanged: `p` was allocated by System with layout `l`; `new` meets realloc's contract.
        unsafe { System.realloc(p, l, new) }
    }
}

#[global_allocator]
static ALLOC: Counting = Counting;

// The counter is process-wide: tests in this file run one at a time.
static SERIAL: std::sync::Mutex<()> = std::sync::Mutex::new(());

const ELEMS: usize = 64;

/// Tensor `i`'s payload: float32 values `i * 1000 + k`.
fn payload(i: usize) -> Vec<u8> {
    (0..ELEMS).flat_map(|k| ((i * 1000 + k) as f32).to_le_bytes()).collect()
}

/// A stream of `n` float32[64] tensors named `emb-i`, each with one metadata entry.
fn wire(n: usize) -> Vec<u8> {
    wire_of(n, |_| "d".to_owned())
}

/// As `wire`, tensor `i`'s metadata value `value(i)`.
fn wire_of(n: usize, value: fn(usize) -> String) -> Vec<u8> {
    let template = TensorDescriptor::dense(ElementType::Float32, Shape::new(vec![ELEMS as u64]).unwrap()).unwrap();
    let mut e = StreamEncoder::new(WriterOptions::default());
    let mut out = Vec::new();
    for i in 0..n {
        let d = template.clone().with_name(format!("emb-{i}")).unwrap().with_metadata("doc", value(i)).unwrap();
        let enc = d.encode().unwrap();
        e.encode(&d, &enc, &[&payload(i)]).unwrap();
    }
    e.finish().unwrap();
    while e.pending_bytes() > 0 {
        let off = e.offset();
        let k = match e.segments()[0] {
            OutSeg::Staged { start, end } => {
                out.extend_from_slice(&e.staged()[start + off..end]);
                end - start - off
            }
            OutSeg::Borrowed { .. } => unreachable!("small payloads are staged"),
        };
        e.consume(k as u64).unwrap();
    }
    out
}

/// One decoded tensor: its handle, name and the result's view of buffer 0.
struct Got {
    tensor: *mut HurrayTensor,
    name: String,
    data: *mut c_void,
    size: u64,
}

/// Decodes all of `bytes` with `hurray_decoder_next_batch` (up to `capacity` per call), then
/// destroys the decoder; the tensors stay with the caller.
fn decode_all(bytes: &[u8], capacity: usize, pool_bytes: u64) -> Vec<Got> {
    let mut got = Vec::new();
    // SAFETY: the decoder is made and destroyed here; each offered region is written within its
    // length; every result read is one the call just wrote.
    unsafe {
        let mut d = null_mut();
        expect(hurray_decoder_new(null(), pool_bytes, &mut d), HURRAY_OK);
        let mut results = vec![std::mem::zeroed::<HurrayDecodeResult>(); capacity];
        let (mut pos, mut filled) = (0, 0);
        loop {
            let mut count = 0;
            let s = hurray_decoder_next_batch(d, filled, 0, results.as_mut_ptr(), capacity, &mut count);
            filled = 0;
            match s {
                HURRAY_OK => {
                    for r in &results[..count] {
                        assert_eq!(r.fields.buffer_count, 1);
                        let name = std::slice::from_raw_parts(r.fields.name.cast::<u8>(), r.fields.name_len);
                        let b = &*r.buffers;
                        got.push(Got {
                            tensor: r.tensor,
                            name: String::from_utf8(name.to_vec()).unwrap(),
                            data: b.data,
                            size: b.spec.byte_size,
                        });
                    }
                    if results[0].input_len == 0 {
                        continue;
                    }
                }
                HURRAY_NEED_INPUT => {}
                HURRAY_END_OF_STREAM => break,
                other => panic!("status {}: {}", status_name(other), last_error()),
            }
            let k = results[0].input_len.min(bytes.len() - pos);
            std::ptr::copy_nonoverlapping(bytes[pos..].as_ptr(), results[0].input, k);
            pos += k;
            filled = k;
        }
        expect(hurray_decoder_destroy(&mut d), HURRAY_OK);
    }
    got
}

/// A permutation of `0..n` from a seeded generator (xorshift), the same on every run.
fn shuffled(n: usize, mut seed: u64) -> Vec<usize> {
    let mut v: Vec<usize> = (0..n).collect();
    for i in (1..n).rev() {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        v.swap(i, (seed % (i as u64 + 1)) as usize);
    }
    v
}

#[test]
fn the_list_is_made_on_first_use_over_the_memory_the_result_named() {
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let n = 200;
    let got = decode_all(&wire(n), 64, 1 << 20);
    assert_eq!(got.len(), n);
    let mut clones: Vec<(usize, *mut HurrayBuffer)> = Vec::new();
    // SAFETY: every tensor is live until destroyed below, once; list and buffer pointers are
    // borrowed from live tensors; each clone is an owned handle destroyed once.
    unsafe {
        for (i, g) in got.iter().enumerate() {
            assert_eq!(g.name, format!("emb-{i}"));
            assert_eq!(g.size, (ELEMS * 4) as u64);
            assert_eq!(std::slice::from_raw_parts(g.data.cast::<u8>(), ELEMS * 4), payload(i).as_slice());
            if i % 3 == 0 {
                continue; // never listed
            }
            let mut list = null_mut();
            expect(hurray_tensor_buffers(g.tensor, &mut list), HURRAY_OK);
            let mut again = null_mut();
            expect(hurray_tensor_buffers(g.tensor, &mut again), HURRAY_OK);
            assert_eq!(list, again, "one list per tensor");
            let mut len = 0;
            expect(hurray_buffer_list_len(list, &mut len), HURRAY_OK);
            assert_eq!(len, 1);
            let mut ptrs = [null_mut::<c_void>(); 1];
            expect(hurray_buffer_list_data_ptrs(list, ptrs.as_mut_ptr(), 1, &mut len), HURRAY_OK);
            assert_eq!(ptrs[0], g.data, "the list names the memory the result named");
            let mut b = null_mut();
            expect(hurray_buffer_list_get(list, 0, &mut b), HURRAY_OK);
            let mut size = 0;
            expect(hurray_ffi::buffer::hurray_buffer_byte_size(b, &mut size), HURRAY_OK);
            assert_eq!(size, g.size);
            if i % 3 == 1 {
                let mut c = null_mut();
                expect(hurray_ffi::buffer::hurray_buffer_clone(b, &mut c), HURRAY_OK);
                clones.push((i, c));
            }
        }
        // The decoder is gone; tensors listed and not are destroyed in a scrambled order.
        for k in shuffled(n, 0x9E37_79B9_7F4A_7C15) {
            let mut t = got[k].tensor;
            expect(hurray_tensor_destroy(&mut t), HURRAY_OK);
            assert!(t.is_null());
        }
        // A clone keeps its buffer's memory past the tensor.
        for (i, mut c) in clones {
            let mut p = null_mut();
            expect(hurray_ffi::buffer::hurray_buffer_data_ptr(c, &mut p), HURRAY_OK);
            assert_eq!(std::slice::from_raw_parts(p.cast::<u8>(), ELEMS * 4), payload(i).as_slice());
            expect(hurray_ffi::buffer::hurray_buffer_destroy(&mut c), HURRAY_OK);
        }
    }
}

/// Heap blocks the core's `StreamDecoder` (without a buffer pool: each payload is a block of its
/// own, as when every tensor is kept) makes per tensor of `bytes`.
fn core_blocks_per_tensor(bytes: &[u8], n: usize) -> f64 {
    let mut d = hurray_core::StreamDecoder::new(hurray_core::ReaderOptions {
        pool_bytes: 0,
        ..hurray_core::ReaderOptions::default()
    })
    .unwrap();
    let (mut pos, mut count) = (0, 0);
    let mut at = |d: &mut hurray_core::StreamDecoder| loop {
        match d.poll().unwrap() {
            hurray_core::Decoded::Tensor(t) => {
                count += 1;
                drop(t);
            }
            hurray_core::Decoded::End => return,
            hurray_core::Decoded::NeedInput => {
                let dst = d.input_buffer().unwrap();
                let k = dst.len().min(bytes.len() - pos);
                dst[..k].write_copy_of_slice(&bytes[pos..pos + k]);
                pos += k;
                d.commit(k).unwrap();
            }
        }
    };
    let before = ALLOCS.load(Ordering::SeqCst);
    at(&mut d);
    let blocks = ALLOCS.load(Ordering::SeqCst) - before;
    assert_eq!(count, n);
    blocks as f64 / n as f64
}

/// A tensor whose descriptor differs from the last one's only in its strings shares the rest of
/// the last one's model (docs/spec/c-abi.md §Decoders and encoders): the core then allocates
/// its payload, its name and its buffer list, and, when the metadata differs too, the new
/// metadata list (the list, its entries' key and value, and the shared handle on them).
#[test]
fn a_tensor_like_the_last_but_for_its_strings_costs_the_core_its_name_and_payload() {
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let n = 1024;
    let same = core_blocks_per_tensor(&wire(n), n);
    assert!(same <= 3.1, "{same:.2} heap blocks per tensor of the core, named alike");
    let other = core_blocks_per_tensor(&wire_of(n, |i| format!("doc {i}")), n);
    assert!(other <= 7.1, "{other:.2} heap blocks per tensor of the core, with its own metadata");
}

#[test]
fn a_decoded_tensor_never_listed_costs_three_heap_blocks_over_the_cores() {
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let n = 1024;
    let bytes = wire(n);
    let core = core_blocks_per_tensor(&bytes, n);
    let before = ALLOCS.load(Ordering::SeqCst);
    let got = decode_all(&bytes, 64, 0);
    let during = ALLOCS.load(Ordering::SeqCst) - before;
    let mut handles: Vec<*mut HurrayTensor> = got.iter().map(|g| g.tensor).collect();
    // SAFETY: each handle is a live tensor, destroyed once here.
    unsafe { expect(hurray_tensor_destroy_many(handles.as_mut_ptr(), handles.len()), HURRAY_OK) };
    // Less the test's own name `String` per tensor (`Got`); the decoder, its views and `results`
    // add a few per call, `got`'s growth a few in all.
    let ffi = (during - n as u64) as f64 / n as f64;
    // The C ABI's own: the tensor and descriptor handles and the descriptor's encoding (and, in
    // debug builds, the encoding `DescInner::with_encoding` checks against).
    let own = if cfg!(debug_assertions) { 4.0 } else { 3.0 };
    assert!(ffi - core <= own + 0.1, "{ffi:.2} heap blocks per decoded tensor, the core's {core:.2}");
}
