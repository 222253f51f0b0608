//! The transport rules (docs/spec/stream.md §Transport rules) through the C ABI, with `extern "C"`
//! callbacks: every chunk size 1..=64 both ways, resumption after a failed read at every call
//! index, retry before the first byte, poisoning after it, TRUNCATED and SINK_CLOSED, and transport
//! release counts.

#[path = "../../hurray-core/tests/common/mod.rs"]
mod common;
mod ffi_common;

use std::ptr::null_mut;

use common::*;
use ffi_common::*;
use hurray_ffi::descriptor::*;
use hurray_ffi::writer::*;
use hurray_ffi::*;

fn corpus() -> Vec<Item> {
    let mut v = golden_items();
    v.extend(plain_items());
    v
}

fn encoded(items: &[Item]) -> Vec<(Vec<u8>, Vec<Vec<u8>>)> {
    items.iter().map(|it| (it.desc.encode().unwrap(), it.payloads.clone())).collect()
}

fn assert_back(back: &[Back], items: &[Item]) {
    assert_eq!(back.len(), items.len());
    for (i, (b, it)) in back.iter().zip(items).enumerate() {
        assert_eq!(b.encoded, it.desc.encode().unwrap(), "descriptor {i}");
        assert_eq!(b.buffers, it.payloads, "payloads {i}");
    }
}

#[test]
fn every_chunk_size_from_1_to_64_round_trips_through_the_c_abi() {
    let mut items = corpus();
    items.push(big_item(70 * 1024 + 1));
    let enc = encoded(&items);
    for checksums in [false, true] {
        let reference = encode_stream(&items, checksums);
        for chunk in 1..=64 {
            let wire = ffi_write(&enc, chunk, checksums);
            assert_eq!(wire, reference, "write chunk {chunk}");
            let (back, end, failures, _) = ffi_read(Mem::reading(wire, chunk));
            assert_eq!(end, HURRAY_END_OF_STREAM, "read chunk {chunk}: {}", status_name(end));
            assert_eq!(failures, 0);
            assert_back(&back, &items);
        }
    }
}

#[test]
fn a_read_failing_once_at_any_call_index_resumes_through_the_c_abi() {
    let items = corpus();
    let wire = encode_stream(&items, true);
    let (_, _, _, m) = ffi_read(Mem::reading(wire.clone(), 32));
    let total = m.calls;
    assert!(total > 20);
    for k in 0..total {
        let mut m = Mem::reading(wire.clone(), 32);
        m.fail_at = Some(k);
        let (back, end, failures, _) = ffi_read(m);
        assert_eq!(end, HURRAY_END_OF_STREAM);
        assert_eq!(failures, 1, "call {k}");
        assert_back(&back, &items);
    }
}

/// Writes item 0 and 1 through a writer whose transport fails at `fail_at`.
struct Wr {
    m: Box<Mem>,
    w: *mut HurrayWriter,
    descs: Vec<*mut HurrayDescriptor>,
    payloads: Vec<Vec<HurrayIoSlice>>,
}

impl Wr {
    fn new(items: &[Item], chunk: usize) -> Wr {
        let mut m = Mem::writing(chunk);
        let t = transport(&mut m);
        let mut w = null_mut();
        // SAFETY: `m` is boxed in the returned `Wr`, so it outlives `t` and the writer; `w` is a live local.
        expect(unsafe { hurray_writer_new(&t, std::ptr::null(), &mut w) }, HURRAY_OK);
        let descs = items.iter().map(|it| decode(&it.desc.encode().unwrap())).collect();
        let payloads = items.iter().map(|it| slices(&it.payloads)).collect();
        Wr { m, w, descs, payloads }
    }
    fn write(&mut self, i: usize) -> HurrayStatus {
        let s = &self.payloads[i];
        // SAFETY: `self.w` and `self.descs[i]` are live until `close`; `s` holds slices over the items' payloads, which
        // outlive the call.
        unsafe { hurray_writer_write_tensor(self.w, self.descs[i], s.as_ptr(), s.len()) }
    }
    fn finish(&mut self) -> HurrayStatus {
        // SAFETY: `self.w` is live until `close`.
        unsafe { hurray_writer_finish(self.w) }
    }
    fn close(mut self) -> Box<Mem> {
        // SAFETY: each handle is the live one made in `new`, destroyed once here.
        unsafe {
            expect(hurray_writer_destroy(&mut self.w), HURRAY_OK);
            for d in &self.descs {
                expect(hurray_descriptor_destroy(*d), HURRAY_OK);
            }
        }
        assert_eq!(self.m.released, 1);
        self.m
    }
}

#[test]
fn a_write_failing_before_its_first_byte_is_retried_by_the_same_call() {
    let items = corpus();
    let reference = encode_stream(&items, false);
    for j in 0..=items.len() {
        let mut wr = Wr::new(&items, 9);
        for i in 0..items.len() {
            if i == j {
                wr.m.fail_at = Some(wr.m.calls);
                expect(wr.write(i), HURRAY_ERR_TRANSPORT);
                assert!(last_error().contains("transport write callback failed"), "{}", last_error());
            }
            expect(wr.write(i), HURRAY_OK);
        }
        if j == items.len() {
            wr.m.fail_at = Some(wr.m.calls);
            expect(wr.finish(), HURRAY_ERR_TRANSPORT);
        }
        expect(wr.finish(), HURRAY_OK);
        expect(wr.finish(), HURRAY_OK);
        let m = wr.close();
        assert_eq!(m.bytes, reference, "failure before item {j}");
    }
}

#[test]
fn a_write_failing_after_its_first_byte_poisons_the_writer() {
    let items = corpus();
    for j in [0, 3, items.len() - 1] {
        let mut wr = Wr::new(&items, 9);
        for i in 0..j {
            expect(wr.write(i), HURRAY_OK);
        }
        wr.m.fail_at = Some(wr.m.calls + 2);
        expect(wr.write(j), HURRAY_ERR_TRANSPORT);
        assert!(last_error().contains("poisoned"), "{}", last_error());
        expect(wr.write(j), HURRAY_ERR_POISONED);
        expect(wr.write(0), HURRAY_ERR_POISONED);
        expect(wr.finish(), HURRAY_ERR_POISONED);
        let bytes_before_destroy = wr.m.bytes.len();
        let m = wr.close();
        // Destroying a poisoned writer writes no end marker.
        assert_eq!(m.bytes.len(), bytes_before_destroy);
        let (back, end, _, _) = ffi_read(Mem::reading(m.bytes.clone(), 0));
        assert_eq!(end, HURRAY_ERR_TRUNCATED);
        assert_back(&back, &items[..j]);
    }
}

#[test]
fn read_returning_0_mid_item_is_truncated() {
    let items = vec![big_item(100 * 1024)];
    let wire = encode_stream(&items, false);
    for cut_call in [0, 1, 2, 5, 20] {
        let mut m = Mem::reading(wire.clone(), 4096);
        m.zero_at = Some(cut_call);
        let (back, end, _, _) = ffi_read(m);
        expect(end, HURRAY_ERR_TRUNCATED);
        assert!(back.is_empty());
    }
}

#[test]
fn write_returning_0_is_sink_closed() {
    let items = corpus();
    // Closed at the first call: nothing went out, not poisoned.
    let mut wr = Wr::new(&items, 9);
    wr.m.zero_at = Some(0);
    expect(wr.write(0), HURRAY_ERR_SINK_CLOSED);
    expect(wr.write(0), HURRAY_ERR_SINK_CLOSED);
    expect(wr.finish(), HURRAY_ERR_SINK_CLOSED);
    wr.close();
    // Closed mid-item: SINK_CLOSED, then POISONED.
    let mut wr = Wr::new(&items, 9);
    wr.m.zero_at = Some(4);
    expect(wr.write(0), HURRAY_ERR_SINK_CLOSED);
    expect(wr.write(0), HURRAY_ERR_POISONED);
    expect(wr.finish(), HURRAY_ERR_POISONED);
    wr.close();
}

#[test]
fn destroying_an_unfinished_writer_writes_the_end_marker() {
    let items = corpus();
    let mut wr = Wr::new(&items, 0);
    for i in 0..items.len() {
        expect(wr.write(i), HURRAY_OK);
    }
    let m = wr.close();
    assert_eq!(m.bytes, encode_stream(&items, false));
    // A writer destroyed before any item still leaves a valid empty stream.
    let wr = Wr::new(&items, 0);
    let m = wr.close();
    assert_eq!(m.bytes, encode_stream(&[], false));
}

#[test]
fn the_committed_golden_streams_read_identically_through_the_c_abi() {
    for (file, items) in [("stream_v1_checksums.hrry", golden_items()), ("stream_v1_plain.hrry", plain_items())] {
        let bytes = std::fs::read(golden_dir().join(file)).unwrap();
        let (back, end, _, _) = ffi_read(Mem::reading(bytes, 0));
        expect(end, HURRAY_END_OF_STREAM);
        assert_back(&back, &items);
    }
}

#[test]
fn reader_options_limits_apply_through_the_c_abi() {
    use hurray_ffi::reader::*;
    let items = vec![dense(hurray_core::ElementType::Float32, &[4, 4])];
    let wire = encode_stream(&items, false);
    let mut opts = HurrayReaderOptions {
        struct_size: 0,
        max_rank: 0,
        max_descriptor_bytes: 0,
        max_tensor_bytes: 0,
        flags: 0,
        reserved: 0,
    };
    // SAFETY: `opts` and the out-pointers are live locals; handles are made and destroyed in this block; pointers
    // passed are live locals or slices valid for the lengths given.
    unsafe {
        expect(hurray_reader_options_init(&mut opts), HURRAY_OK);
        assert_eq!(opts.struct_size as usize, std::mem::size_of::<HurrayReaderOptions>());
        assert_eq!(
            (opts.max_rank, opts.max_descriptor_bytes, opts.max_tensor_bytes, opts.flags),
            (32, 1 << 20, 64 << 30, 0)
        );
        for (edit, want) in [
            (
                &(|o: &mut HurrayReaderOptions| o.max_tensor_bytes = 63) as &dyn Fn(&mut HurrayReaderOptions),
                HURRAY_ERR_LIMIT_EXCEEDED,
            ),
            (&|o: &mut HurrayReaderOptions| o.max_rank = 1, HURRAY_ERR_LIMIT_EXCEEDED),
            (&|o: &mut HurrayReaderOptions| o.max_descriptor_bytes = 10, HURRAY_ERR_LIMIT_EXCEEDED),
            (&|o: &mut HurrayReaderOptions| o.flags = HURRAY_READER_REQUIRE_PAYLOAD_CHECKSUMS, HURRAY_ERR_CORRUPT),
            (&|o: &mut HurrayReaderOptions| o.max_tensor_bytes = 64, HURRAY_OK),
        ] {
            let mut o = opts;
            edit(&mut o);
            let mut m = Mem::reading(wire.clone(), 0);
            let t = transport(&mut m);
            let mut r = null_mut();
            expect(hurray_reader_new(&t, &o, &mut r), HURRAY_OK);
            let mut tensor = null_mut();
            expect(hurray_reader_next_tensor(r, &mut tensor), want);
            hurray_tensor_destroy(&mut tensor);
            expect(hurray_reader_destroy(&mut r), HURRAY_OK);
            assert_eq!(m.released, 1);
        }
    }
}
