//! Fault injection through the C ABI over the golden vectors (docs/reliability.md): a transport
//! that fails (`HURRAY_ERR_TRANSPORT`, having moved nothing) at call k, for every k of a
//! fault-free run.
//! - Stream reader: retried, it reads output identical to a fault-free run.
//! - Container reader (`read_at`): opening and reading every tensor, each failing call retried,
//!   gives output identical to a fault-free run.
//! - Stream writer: a failure before the item's first byte is retried and the bytes on the wire
//!   are identical to a fault-free run; one after it poisons the writer (`POISONED` from then
//!   on) and the reader sees exactly the items completed before.
//! - Nothing leaks: live bytes of the library's aligned allocations (payload buffers, read-ahead
//!   buffers) return to their level before each run, counted by a global allocator. (Handle
//!   shells are deliberately kept in debug builds; LeakSanitizer checks them in the fuzz builds,
//!   which free them.)

#[path = "../../hurray-core/tests/common/mod.rs"]
mod common;
mod ffi_common;

use std::alloc::{GlobalAlloc, Layout, System};
use std::ffi::c_void;
use std::ptr::{null, null_mut};
use std::sync::atomic::{AtomicI64, Ordering};

use common::*;
use ffi_common::*;
use hurray_ffi::descriptor::hurray_descriptor_destroy;
use hurray_ffi::file::*;
use hurray_ffi::tensor::*;
use hurray_ffi::writer::*;
use hurray_ffi::*;

struct Counting;
static ALIGNED_LIVE: AtomicI64 = AtomicI64::new(0);

// SAFETY: every method forwards to `System` unchanged and only counts bytes on the side, so
// `System`'s guarantees are this allocator's.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, l: Layout) -> *mut u8 {
        // SAFETY: forwarded unchanged: the caller's `GlobalAlloc::alloc` contract (non-zero size) holds for System too.
        let p = unsafe { System.alloc(l) };
        if !p.is_null() && l.align() >= 64 {
            ALIGNED_LIVE.fetch_add(l.size() as i64, Ordering::SeqCst);
        }
        p
    }
    unsafe fn dealloc(&self, p: *mut u8, l: Layout) {
        if l.align() >= 64 {
            ALIGNED_LIVE.fetch_sub(l.size() as i64, Ordering::SeqCst);
        }
        // SAFETY: forwarded unchanged: `p` was allocated by System (every allocation goes through `alloc`) with layout
        // `l`.
        unsafe { System.dealloc(p, l) }
    }
    unsafe fn realloc(&self, p: *mut u8, l: Layout, new: usize) -> *mut u8 {
        // SAFETY: forwarded unchanged: `p` was allocated by System with layout `l`, and `new` meets realloc's contract.
        let q = unsafe { System.realloc(p, l, new) };
        if !q.is_null() && l.align() >= 64 {
            ALIGNED_LIVE.fetch_add(new as i64 - l.size() as i64, Ordering::SeqCst);
        }
        q
    }
}

#[global_allocator]
static ALLOC: Counting = Counting;

// The counter is process-wide: tests in this file run one at a time.
static SERIAL: std::sync::Mutex<()> = std::sync::Mutex::new(());

fn no_leak<R>(what: &str, f: impl FnOnce() -> R) -> R {
    let before = ALIGNED_LIVE.load(Ordering::SeqCst);
    let r = f();
    let after = ALIGNED_LIVE.load(Ordering::SeqCst);
    assert_eq!(after, before, "{what}: {} aligned bytes still live", after - before);
    r
}

fn golden(name: &str) -> Vec<u8> {
    std::fs::read(golden_dir().join(name)).unwrap()
}

#[test]
fn stream_reads_fail_at_every_call_and_resume_to_identical_output() {
    let _g = SERIAL.lock().unwrap_or_else(|p| p.into_inner());
    for file in ["stream_v1_checksums.hrry", "stream_v1_plain.hrry", "stream_v1_empty.hrry"] {
        let wire = golden(file);
        for chunk in [4096, 61, 7] {
            let (clean, end, _, m) = no_leak(file, || ffi_read(Mem::reading(wire.clone(), chunk)));
            assert_eq!(end, HURRAY_END_OF_STREAM);
            let total = m.calls;
            eprintln!("fault injection: {file}, {chunk}-byte reads: {total} runs, each failing one call");
            for k in 0..total {
                let mut m = Mem::reading(wire.clone(), chunk);
                m.fail_at = Some(k);
                let (back, end, failures, _) = no_leak(file, || ffi_read(m));
                assert_eq!((end, failures), (HURRAY_END_OF_STREAM, 1), "{file} chunk {chunk} call {k}");
                assert!(back.len() == clean.len(), "{file} call {k}");
                for (a, b) in back.iter().zip(&clean) {
                    assert!(a.encoded == b.encoded && a.buffers == b.buffers, "{file} chunk {chunk} call {k}");
                }
            }
        }
    }
}

struct AtSource {
    bytes: Vec<u8>,
    chunk: usize,
    calls: usize,
    fail_at: Option<usize>,
    released: usize,
}

unsafe extern "C" fn at_read(ctx: *mut c_void, offset: u64, dst: *mut u8, len: usize, out: *mut usize) -> HurrayStatus {
    // SAFETY: `ctx` is the `AtSource` this test registered, which outlives the reader; one callback at a time.
    let s = unsafe { &mut *(ctx as *mut AtSource) };
    let call = s.calls;
    s.calls += 1;
    if s.fail_at == Some(call) {
        // SAFETY: Hurray passes `out` valid for one write (the transport callback contract).
        unsafe { *out = 0 };
        return HURRAY_ERR_TRANSPORT;
    }
    let at = (offset as usize).min(s.bytes.len());
    let n = len.min(s.chunk).min(s.bytes.len() - at);
    // SAFETY: `dst` is valid for `len` >= `n` bytes (callback contract); `at + n` <= `bytes.len()` by the clamps above.
    unsafe { std::ptr::copy_nonoverlapping(s.bytes.as_ptr().add(at), dst, n) };
    // SAFETY: Hurray passes `out` valid for one write (the transport callback contract).
    unsafe { *out = n };
    HURRAY_OK
}

unsafe extern "C" fn at_size(ctx: *mut c_void, out: *mut u64) -> HurrayStatus {
    // SAFETY: `ctx` is the registered `AtSource`, alive for the reader's lifetime; `out` is valid for one write
    // (the transport callback contract).
    unsafe { *out = (*(ctx as *mut AtSource)).bytes.len() as u64 };
    HURRAY_OK
}

unsafe extern "C" fn at_release(ctx: *mut c_void) {
    // SAFETY: `ctx` is the registered `AtSource`, still alive when the reader releases it.
    unsafe { (*(ctx as *mut AtSource)).released += 1 };
}

/// Opens and reads every tensor of a container through `read_at`, retrying each call that
/// fails with TRANSPORT. Returns the tensors in index order and the failures seen.
fn read_container(src: &mut AtSource) -> (Vec<Back>, usize) {
    let t = HurrayTransport {
        ctx: src as *mut AtSource as *mut c_void,
        read_at: Some(at_read),
        size: Some(at_size),
        release: Some(at_release),
        ..HurrayTransport::default()
    };
    let mut failures = 0;
    let mut retry = |s: HurrayStatus| -> bool {
        if s == HURRAY_ERR_TRANSPORT {
            failures += 1;
            assert!(failures < 3);
            return true;
        }
        expect(s, HURRAY_OK);
        false
    };
    let mut out = Vec::new();
    // SAFETY: `src` outlives the reader; the handles used are the ones made here, destroyed once; out-pointers are live
    // locals; all-zero options are plain integers.
    unsafe {
        let mut opts: HurrayFileReaderOptions = std::mem::zeroed();
        expect(hurray_file_reader_options_init(&mut opts), HURRAY_OK);
        opts.flags |= HURRAY_FILE_READER_VERIFY_PAYLOADS;
        let mut r = null_mut();
        while retry(hurray_file_reader_open(&t, &opts, &mut r)) {}
        let mut count = 0u64;
        expect(hurray_file_reader_count(r, &mut count), HURRAY_OK);
        for i in 0..count {
            let mut e = null_mut();
            while retry(hurray_file_reader_entry(r, i, &mut e)) {}
            let mut tensor = null_mut();
            while retry(hurray_file_reader_read_tensor(r, e, &mut tensor)) {}
            out.push(copy_out(tensor));
            expect(hurray_tensor_destroy(&mut tensor), HURRAY_OK);
            expect(hurray_file_entry_destroy(&mut e), HURRAY_OK);
        }
        expect(hurray_file_reader_destroy(&mut r), HURRAY_OK);
    }
    (out, failures)
}

#[test]
fn container_reads_fail_at_every_call_and_resume_to_identical_output() {
    let _g = SERIAL.lock().unwrap_or_else(|p| p.into_inner());
    for file in ["file_v1.hrryfile", "file_v1_paged.hrryfile"] {
        let bytes = golden(file);
        for chunk in [usize::MAX, 1000] {
            let mut src = AtSource { bytes: bytes.clone(), chunk, calls: 0, fail_at: None, released: 0 };
            let (clean, _) = no_leak(file, || read_container(&mut src));
            assert_eq!(src.released, 1);
            assert!(!clean.is_empty());
            eprintln!(
                "fault injection: {file}, read_at of at most {chunk} bytes: {} runs, each failing one call",
                src.calls
            );
            for k in 0..src.calls {
                let mut s = AtSource { bytes: bytes.clone(), chunk, calls: 0, fail_at: Some(k), released: 0 };
                let (back, failures) = no_leak(file, || read_container(&mut s));
                assert_eq!((failures, s.released), (1, 1), "{file} chunk {chunk} call {k}");
                assert_eq!(back.len(), clean.len());
                for (a, b) in back.iter().zip(&clean) {
                    assert!(a.encoded == b.encoded && a.buffers == b.buffers, "{file} chunk {chunk} call {k}");
                }
            }
        }
    }
}

/// Writes `items` with a sink failing at call `fail_at`: retried when nothing of the item went
/// out, else the writer must be poisoned. Returns the bytes, items completed, and whether it
/// was poisoned.
fn write_failing(items: &[(Vec<u8>, Vec<Vec<u8>>)], chunk: usize, fail_at: Option<usize>) -> (Vec<u8>, usize, bool) {
    let mut m = Mem::writing(chunk);
    m.fail_at = fail_at;
    let t = transport(&mut m);
    let mut done = 0;
    let mut poisoned = false;
    // SAFETY: `m` outlives `t` and the writer; each descriptor and payload slice outlives its call; out-pointers are
    // live locals.
    unsafe {
        let mut w = null_mut();
        expect(hurray_writer_new(&t, null(), &mut w), HURRAY_OK);
        for (enc, payloads) in items {
            let d = decode(enc);
            let s = slices(payloads);
            loop {
                let before = m.bytes.len();
                let st = hurray_writer_write_tensor(w, d, s.as_ptr(), s.len());
                if st == HURRAY_OK {
                    done += 1;
                    break;
                }
                expect(st, HURRAY_ERR_TRANSPORT);
                if m.bytes.len() == before {
                    continue; // nothing of the item went out: the same call again
                }
                poisoned = true;
                expect(hurray_writer_write_tensor(w, d, s.as_ptr(), s.len()), HURRAY_ERR_POISONED);
                expect(hurray_writer_finish(w), HURRAY_ERR_POISONED);
                break;
            }
            expect(hurray_descriptor_destroy(d), HURRAY_OK);
            if poisoned {
                break;
            }
        }
        if !poisoned {
            let before = m.bytes.len();
            loop {
                let st = hurray_writer_finish(w);
                if st == HURRAY_OK {
                    break;
                }
                expect(st, HURRAY_ERR_TRANSPORT);
                if m.bytes.len() != before {
                    poisoned = true;
                    break;
                }
            }
        }
        expect(hurray_writer_destroy(&mut w), HURRAY_OK);
    }
    assert_eq!(m.released, 1);
    (std::mem::take(&mut m.bytes), done, poisoned)
}

#[test]
fn stream_writes_fail_at_every_call_and_retry_or_poison() {
    let _g = SERIAL.lock().unwrap_or_else(|p| p.into_inner());
    let (items, end, _, _) = ffi_read(Mem::reading(golden("stream_v1_checksums.hrry"), 0));
    assert_eq!(end, HURRAY_END_OF_STREAM);
    let items: Vec<(Vec<u8>, Vec<Vec<u8>>)> = items.into_iter().map(|b| (b.encoded, b.buffers)).collect();
    for chunk in [0usize, 100] {
        let (clean, done, poisoned) = no_leak("clean write", || write_failing(&items, chunk, None));
        assert!(!poisoned && done == items.len());
        // The fault-free run's write calls: every one of them is made to fail once.
        let calls = {
            let mut probe = Mem::writing(chunk);
            let t = transport(&mut probe);
            // SAFETY: `probe` outlives `t` and the writer; each descriptor and payload slice outlives its call;
            // out-pointers are live locals.
            unsafe {
                let mut w = null_mut();
                expect(hurray_writer_new(&t, null(), &mut w), HURRAY_OK);
                for (enc, payloads) in &items {
                    let d = decode(enc);
                    let s = slices(payloads);
                    expect(hurray_writer_write_tensor(w, d, s.as_ptr(), s.len()), HURRAY_OK);
                    expect(hurray_descriptor_destroy(d), HURRAY_OK);
                }
                expect(hurray_writer_finish(w), HURRAY_OK);
                expect(hurray_writer_destroy(&mut w), HURRAY_OK);
            }
            probe.calls
        };
        let (mut retried, mut poisonings) = (0, 0);
        for k in 0..calls {
            let (bytes, done, poisoned) = no_leak("failing write", || write_failing(&items, chunk, Some(k)));
            if poisoned {
                poisonings += 1;
                let (back, end, _, _) = ffi_read(Mem::reading(bytes, 0));
                assert!(end < 0, "call {k}: a poisoned stream must not end cleanly");
                assert_eq!(back.len(), done, "call {k}: exactly the items completed before");
            } else {
                retried += 1;
                assert!(done == items.len() && bytes == clean, "call {k}: a retried write changes nothing");
            }
        }
        eprintln!("fault injection: writer, chunk {chunk}: {calls} runs ({retried} retried, {poisonings} poisoned)");
        // With whole writes every item is one call, so every failure is before its first byte;
        // with 100-byte writes most are mid-item.
        assert!(retried > 0, "chunk {chunk}");
        if chunk != 0 {
            assert!(poisonings > 0, "chunk {chunk}");
        }
    }
}
