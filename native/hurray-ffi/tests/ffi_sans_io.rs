//! The decoder and encoder through the C ABI (docs/spec/c-abi.md §Decoders and encoders):
//! one call per tensor, fields and buffer pointers in the result, input asked for in place,
//! batching, borrowing, take-back and poisoning, and misuse.

#[path = "../../hurray-core/tests/common/mod.rs"]
mod common;
mod ffi_common;

use std::ptr::{null, null_mut};

use common::*;
use ffi_common::*;
use hurray_ffi::decoder::*;
use hurray_ffi::descriptor::*;
use hurray_ffi::encoder::*;
use hurray_ffi::panic::hurray_last_error_message;
use hurray_ffi::reader::{hurray_reader_options_init, HURRAY_READER_REQUIRE_PAYLOAD_CHECKSUMS};
use hurray_ffi::writer::*;
use hurray_ffi::*;

fn corpus() -> Vec<Item> {
    let mut v = golden_items();
    v.extend(plain_items());
    v.push(big_item(300 * 1024));
    v
}

/// Encodes `items` through `hurray_encoder_*`, sending at most `chunk` bytes per "write",
/// draining only when the encoder borrows payloads or at the end (so small items batch).
fn ffi_encode(items: &[Item], chunk: usize, checksums: bool) -> Vec<u8> {
    let mut wire = Vec::new();
    // SAFETY: the encoder is made and destroyed here; each descriptor and payload slice outlives the calls that borrow
    // it; out-pointers are live locals.
    unsafe {
        let mut opts = HurrayWriterOptions { struct_size: 0, flags: 0 };
        expect(hurray_writer_options_init(&mut opts), HURRAY_OK);
        if checksums {
            opts.flags |= HURRAY_WRITER_PAYLOAD_CHECKSUMS;
        }
        let mut e = null_mut();
        expect(hurray_encoder_new(&opts, &mut e), HURRAY_OK);
        let mut st = HurrayEncoderState::default();
        for it in items {
            let d = decode(&it.desc.encode().unwrap());
            let s = slices(&it.payloads);
            expect(hurray_encoder_encode(e, d, s.as_ptr(), s.len(), &mut st), HURRAY_OK);
            expect(hurray_descriptor_destroy(d), HURRAY_OK);
            if st.borrows_payloads != 0 {
                drain(e, chunk, &mut wire);
            }
        }
        expect(hurray_encoder_finish(e, &mut st), HURRAY_OK);
        assert!(st.pending_bytes > 0);
        drain(e, chunk, &mut wire);
        expect(hurray_encoder_destroy(&mut e), HURRAY_OK);
        assert!(e.is_null());
    }
    wire
}

/// Drains the encoder's output `chunk` bytes at a time into `wire`.
///
/// # Safety
/// `e` is a live encoder handle.
unsafe fn drain(e: *mut HurrayEncoder, chunk: usize, wire: &mut Vec<u8>) {
    let mut st = HurrayEncoderState::default();
    loop {
        let mut pieces = [HurrayIoSlice { ptr: null(), len: 0 }; 4];
        let mut n = usize::MAX;
        // SAFETY: `e` is a live encoder (this function's # Safety); `pieces` holds 4 slices; `n` is a live local.
        expect(unsafe { hurray_encoder_output(e, pieces.as_mut_ptr(), pieces.len(), &mut n) }, HURRAY_OK);
        if n == 0 {
            return;
        }
        let p = pieces[0];
        let take = p.len.min(chunk);
        // SAFETY: the encoder's output piece stays valid for `p.len` >= `take` bytes until the consume below.
        wire.extend_from_slice(unsafe { std::slice::from_raw_parts(p.ptr, take) });
        // SAFETY: `e` is a live encoder (this function's # Safety); `st` is a live local.
        expect(unsafe { hurray_encoder_consume(e, take as u64, &mut st) }, HURRAY_OK);
    }
}

/// Decodes `bytes` through `hurray_decoder_*`, pushing at most `chunk` bytes per call; checks
/// the result's fields and buffer views against the tensor's own accessors.
fn ffi_decode(bytes: &[u8], chunk: usize) -> (Vec<Back>, HurrayStatus, usize) {
    let (out, end, calls, _) = ffi_decode_flags(bytes, chunk);
    (out, end, calls)
}

/// As `ffi_decode`, also returning each tensor's `HurrayDescriptorFields::flags`.
fn ffi_decode_flags(bytes: &[u8], chunk: usize) -> (Vec<Back>, HurrayStatus, usize, Vec<u32>) {
    // SAFETY: the decoder is made here, used by `decode_on` only, and destroyed here.
    unsafe {
        let mut d = null_mut();
        expect(hurray_decoder_new(null(), 1 << 20, &mut d), HURRAY_OK);
        let r = decode_on(d, bytes, chunk);
        expect(hurray_decoder_destroy(&mut d), HURRAY_OK);
        assert!(d.is_null());
        r
    }
}

/// Feeds `bytes` (at most `chunk` per call) to the live decoder `d` until it stops; each
/// tensor copied out, the final status, the call count and each tensor's fields flags.
///
/// # Safety
/// `d` a live decoder not used elsewhere meanwhile.
unsafe fn decode_on(d: *mut HurrayDecoder, bytes: &[u8], chunk: usize) -> (Vec<Back>, HurrayStatus, usize, Vec<u32>) {
    let mut out = Vec::new();
    let mut flag_bits = Vec::new();
    let mut calls = 0;
    // SAFETY: the input window is written within the length the decoder offers; the result's views (tensor, fields,
    // buffers) are read before the next call; all-zero results are NULL and 0.
    unsafe {
        let mut pos = 0;
        let mut filled = 0;
        let mut flags = 0;
        let end = loop {
            let mut r = std::mem::zeroed::<HurrayDecodeResult>();
            let s = hurray_decoder_next(d, filled, flags, &mut r);
            calls += 1;
            filled = 0;
            match s {
                HURRAY_OK => {
                    assert!(!r.tensor.is_null());
                    let back = copy_out(r.tensor);
                    assert_eq!(std::slice::from_raw_parts(r.fields.encoded, r.fields.encoded_len), &back.encoded[..]);
                    // The fields report the encoding's version field (bytes 4-5).
                    assert_eq!(r.fields.version, u16::from_le_bytes([back.encoded[4], back.encoded[5]]));
                    let bufs = std::slice::from_raw_parts(r.buffers, r.fields.buffer_count);
                    for (b, want) in bufs.iter().zip(&back.buffers) {
                        assert_eq!(b.spec.byte_size as usize, want.len());
                        assert_eq!(b.data as usize % b.spec.alignment as usize, 0);
                        assert_eq!(std::slice::from_raw_parts(b.data as *const u8, want.len()), &want[..]);
                    }
                    let mut td = null_mut();
                    expect(hurray_tensor_descriptor(r.tensor, &mut td), HURRAY_OK);
                    let md = std::slice::from_raw_parts(r.metadata, r.fields.metadata_count);
                    for (i, m) in md.iter().enumerate() {
                        let (mut k, mut kl, mut v, mut vl) = (null(), 0, null(), 0);
                        expect(hurray_descriptor_metadata_get(td, i, &mut k, &mut kl, &mut v, &mut vl), HURRAY_OK);
                        assert_eq!((m.key, m.key_len, m.value_len), (k, kl, vl));
                    }
                    let mut t = r.tensor;
                    expect(hurray_tensor_destroy(&mut t), HURRAY_OK);
                    out.push(back);
                    flag_bits.push(r.fields.flags);
                }
                HURRAY_NEED_INPUT => {
                    assert!(r.tensor.is_null() && !r.input.is_null() && r.input_len > 0);
                    let n = r.input_len.min(chunk).min(bytes.len() - pos);
                    if n == 0 {
                        flags = HURRAY_DECODE_END_OF_INPUT;
                    } else {
                        std::ptr::copy_nonoverlapping(bytes[pos..].as_ptr(), r.input, n);
                        pos += n;
                        filled = n;
                    }
                }
                other => {
                    assert!(r.tensor.is_null());
                    break other;
                }
            }
        };
        (out, end, calls, flag_bits)
    }
}

#[test]
fn a_reset_decoder_reads_the_next_stream_whatever_state_it_was_left_in() {
    let items = corpus();
    let whole = encode_stream(&items, true);
    let small: Vec<Item> = (0..3).map(|_| dense(hurray_core::ElementType::Float32, &[8])).collect();
    let one = encode_stream(&small, false);
    // SAFETY: the decoder is made and destroyed here and only used by `decode_on` in between; out-pointers are live
    // locals.
    unsafe {
        let mut d = null_mut();
        expect(hurray_decoder_new(null(), 1 << 20, &mut d), HURRAY_OK);
        // After a whole stream (ended): the next stream reads as on a new decoder.
        let (back, end, _, _) = decode_on(d, &whole, 4096);
        expect(end, HURRAY_END_OF_STREAM);
        assert_back(&back, &items);
        expect(hurray_decoder_reset(d), HURRAY_OK);
        let (back, end, _, flags) = decode_on(d, &one, usize::MAX);
        expect(end, HURRAY_END_OF_STREAM);
        assert_back(&back, &small);
        assert_eq!(flags[0], 0, "no 'same as previous' across a reset");
        // In the middle of a tensor (input cut short, end of input not yet said).
        expect(hurray_decoder_reset(d), HURRAY_OK);
        let mut r = std::mem::zeroed::<HurrayDecodeResult>();
        expect(hurray_decoder_next(d, 0, 0, &mut r), HURRAY_NEED_INPUT);
        let n = r.input_len.min(whole.len() / 2);
        std::ptr::copy_nonoverlapping(whole.as_ptr(), r.input, n);
        let mut got = 0;
        loop {
            let s = hurray_decoder_next(d, if got == 0 { n } else { 0 }, 0, &mut r);
            if s == HURRAY_OK {
                let mut t = r.tensor;
                expect(hurray_tensor_destroy(&mut t), HURRAY_OK);
                got += 1;
                continue;
            }
            expect(s, HURRAY_NEED_INPUT);
            break;
        }
        expect(hurray_decoder_reset(d), HURRAY_OK);
        let (back, end, _, _) = decode_on(d, &one, 5);
        expect(end, HURRAY_END_OF_STREAM);
        assert_back(&back, &small);
        // After a (sticky) failure.
        expect(hurray_decoder_reset(d), HURRAY_OK);
        let (_, end, _, _) = decode_on(d, b"garbage garbage garbage", usize::MAX);
        expect(end, HURRAY_ERR_INVALID_MAGIC);
        let (_, end, _, _) = decode_on(d, &one, usize::MAX);
        expect(end, HURRAY_ERR_INVALID_MAGIC);
        expect(hurray_decoder_reset(d), HURRAY_OK);
        let (back, end, _, _) = decode_on(d, &one, usize::MAX);
        expect(end, HURRAY_END_OF_STREAM);
        assert_back(&back, &small);
        expect(hurray_decoder_reset(null_mut()), HURRAY_ERR_NULL_POINTER);
        expect(hurray_decoder_destroy(&mut d), HURRAY_OK);
    }
}

#[test]
fn the_decoder_flags_descriptors_that_repeat_the_previous_one_but_the_name() {
    use hurray_core::ElementType::{Float32, Int8};
    use hurray_ffi::descriptor::HURRAY_FIELDS_SAME_EXCEPT_NAME as SAME;
    let named = |et, dims: &[u64], name: Option<&str>, md: &str| {
        let mut it = dense(et, dims);
        if let Some(n) = name {
            it.desc = it.desc.with_name(n).unwrap();
        }
        it.desc = it.desc.with_metadata("k", md).unwrap();
        it
    };
    let items = vec![
        named(Float32, &[4], Some("a"), "v"),
        named(Float32, &[4], Some("b"), "v"),
        named(Float32, &[4], None, "v"),
        named(Float32, &[4], Some("c"), "other"),
        named(Float32, &[4], Some("d"), "other"),
        named(Float32, &[5], Some("e"), "other"),
        named(Int8, &[5], Some("f"), "other"),
        named(Int8, &[5], Some("f"), "other"),
    ];
    let bytes = encode_stream(&items, false);
    let (back, end, _, flags) = ffi_decode_flags(&bytes, 7);
    expect(end, HURRAY_END_OF_STREAM);
    assert_back(&back, &items);
    assert_eq!(flags, vec![0, SAME, SAME, 0, SAME, 0, 0, SAME]);
    // One stream per message on a reset decoder: the first tensor of the next stream is
    // compared with the last one before the reset (limits changed or not).
    let one = |it: Item| encode_stream(&[it], false);
    // SAFETY: the decoder is made here, used by `decode_on` only, and destroyed here.
    unsafe {
        let mut d = null_mut();
        expect(hurray_decoder_new(null(), 0, &mut d), HURRAY_OK);
        let mut got = Vec::new();
        for (k, it) in [
            named(Float32, &[4], Some("a"), "v"),
            named(Float32, &[4], Some("b"), "v"),
            named(Float32, &[4], Some("b"), "v"),
            named(Int8, &[4], Some("b"), "v"),
        ]
        .into_iter()
        .enumerate()
        {
            expect(hurray_decoder_reset(d), HURRAY_OK);
            if k == 2 {
                expect(hurray_decoder_set_options(d, &reader_options(1 << 20, 0)), HURRAY_OK);
            }
            let bytes = one(it.clone());
            let (back, end, _, f) = decode_on(d, &bytes, usize::MAX);
            expect(end, HURRAY_END_OF_STREAM);
            assert_back(&back, &[it]);
            got.extend(f);
        }
        assert_eq!(got, vec![0, SAME, SAME, 0]);
        expect(hurray_decoder_destroy(&mut d), HURRAY_OK);
    }
    // Affine parameters that differ only in the sign of a zero encode differently: not the same.
    let affine = |name: &str, bias: f64| {
        let mut it = dense(Int8, &[4]);
        it.desc = hurray_core::TensorDescriptor::new(
            1,
            0,
            Int8,
            it.desc.shape().clone(),
            0,
            hurray_core::LayoutDescriptor::RowMajor,
            it.desc.buffers().to_vec(),
            Some(hurray_core::Quantization::PerTensorAffine { scale: 0.5, bias, dequantized: Float32 }),
            None,
            None,
            None,
        )
        .unwrap()
        .with_name(name)
        .unwrap();
        it
    };
    let affines = vec![affine("p", 0.0), affine("q", -0.0), affine("r", -0.0), affine("s", 0.0)];
    let (back, end, _, flags) = ffi_decode_flags(&encode_stream(&affines, false), usize::MAX);
    expect(end, HURRAY_END_OF_STREAM);
    assert_back(&back, &affines);
    assert_eq!(flags, vec![0, 0, SAME, 0]);
    // hurray_descriptor_fields on a descriptor never sets it.
    let d = decode(&items[1].desc.encode().unwrap());
    // SAFETY: `d` is live; `f` is a live local.
    unsafe {
        let mut f = std::mem::zeroed::<hurray_ffi::descriptor::HurrayDescriptorFields>();
        expect(hurray_ffi::descriptor::hurray_descriptor_fields(d, &mut f), HURRAY_OK);
        assert_eq!(f.flags, 0);
        expect(hurray_descriptor_destroy(d), HURRAY_OK);
    }
}

fn assert_back(back: &[Back], items: &[Item]) {
    assert_eq!(back.len(), items.len());
    for (i, (b, it)) in back.iter().zip(items).enumerate() {
        assert_eq!(b.encoded, it.desc.encode().unwrap(), "descriptor {i}");
        assert_eq!(b.buffers, it.payloads, "payloads {i}");
    }
}

#[test]
fn encoder_output_equals_the_writers_and_the_decoder_reads_it_in_any_chunking() {
    let items = corpus();
    for checksums in [false, true] {
        let want = encode_stream(&items, checksums);
        for chunk in [1, 7, 4096, usize::MAX] {
            assert_eq!(ffi_encode(&items, chunk, checksums), want, "chunk {chunk}");
        }
        for chunk in [1, 13, 1000, usize::MAX] {
            let (back, end, _) = ffi_decode(&want, chunk);
            expect(end, HURRAY_END_OF_STREAM);
            assert_back(&back, &items);
        }
    }
}

#[test]
fn small_tensors_cost_about_one_call_each() {
    let items: Vec<Item> = (0..1000).map(|_| dense(hurray_core::ElementType::Float32, &[256])).collect();
    let bytes = encode_stream(&items, false);
    let (back, end, calls) = ffi_decode(&bytes, usize::MAX);
    expect(end, HURRAY_END_OF_STREAM);
    assert_eq!(back.len(), 1000);
    // 1000 tensor results + one input request per 64 KiB of stream + the end.
    let refills = bytes.len() / (64 * 1024) + 2;
    assert!(calls <= 1000 + 2 * refills + 1, "{calls} calls for 1000 tensors");
}

#[test]
fn a_scatter_read_through_input_after_takes_one_read_per_large_tensor() {
    let items: Vec<Item> = (0..6).map(|_| big_item(1 << 20)).collect();
    for checksums in [false, true] {
        let bytes = encode_stream(&items, checksums);
        let (mut pos, mut reads, mut got) = (0, 0, 0);
        // SAFETY: the decoder is made and destroyed here; out-pointers are live locals; the
        // regions are written within the lengths the decoder gave, before the next call.
        unsafe {
            let mut d = null_mut();
            expect(hurray_decoder_new(null(), 0, &mut d), HURRAY_OK);
            let mut r = std::mem::zeroed::<HurrayDecodeResult>();
            let mut filled = 0;
            loop {
                let s = hurray_decoder_next(d, filled, 0, &mut r);
                filled = 0;
                if s == HURRAY_END_OF_STREAM {
                    break;
                }
                if s == HURRAY_OK {
                    let b = *r.buffers;
                    let data = std::slice::from_raw_parts(b.data as *const u8, b.spec.byte_size as usize);
                    assert_eq!(data, items[got].payloads[0].as_slice(), "tensor {got}");
                    got += 1;
                    let mut t = r.tensor;
                    expect(hurray_tensor_destroy(&mut t), HURRAY_OK);
                    continue;
                }
                expect(s, HURRAY_NEED_INPUT);
                let (mut after, mut after_len): (*mut u8, usize) = (null_mut(), 0);
                expect(hurray_decoder_input_after(d, &mut after, &mut after_len), HURRAY_OK);
                assert_eq!(after.is_null(), after_len == 0);
                if after_len > 0 {
                    assert!(r.input_len >= 64 * 1024, "a region after a read-ahead");
                }
                for (dst, len) in [(r.input, r.input_len), (after, after_len)] {
                    let n = len.min(bytes.len() - pos);
                    if n > 0 {
                        std::ptr::copy_nonoverlapping(bytes[pos..].as_ptr(), dst, n);
                    }
                    pos += n;
                    filled += n;
                }
                reads += 1;
            }
            expect(hurray_decoder_destroy(&mut d), HURRAY_OK);
        }
        assert_eq!(got, items.len());
        // The read-ahead and the first payload's rest, then one read per tensor (the end
        // marker comes with the last payload).
        assert_eq!(reads, 2 + items.len() - 1, "checksums {checksums}");
    }
}

#[test]
fn truncated_input_is_sticky_and_misuse_is_refused() {
    let items = corpus();
    let bytes = encode_stream(&items, false);
    let (_, end, _) = ffi_decode(&bytes[..bytes.len() - 1], usize::MAX);
    expect(end, HURRAY_ERR_TRUNCATED);
    // SAFETY: the decoder is made and destroyed here; out-pointers are live locals; an all-zero `HurrayDecodeResult` is
    // NULL pointers and zero integers.
    unsafe {
        let mut d = null_mut();
        expect(hurray_decoder_new(null(), 0, &mut d), HURRAY_OK);
        let mut r = std::mem::zeroed::<HurrayDecodeResult>();
        expect(hurray_decoder_next(d, 0, 0, &mut r), HURRAY_NEED_INPUT);
        // More than offered: refused, nothing taken, the decoder still usable.
        expect(hurray_decoder_next(d, r.input_len + 1, 0, &mut r), HURRAY_ERR_INVALID_ARGUMENT);
        expect(hurray_decoder_next(d, 0, 0x80, &mut r), HURRAY_ERR_INVALID_ARGUMENT);
        expect(hurray_decoder_next(d, 0, 0, null_mut()), HURRAY_ERR_NULL_POINTER);
        expect(hurray_decoder_next(null_mut(), 0, 0, &mut r), HURRAY_ERR_NULL_POINTER);
        // Garbage: a clear, sticky error.
        expect(hurray_decoder_next(d, 0, 0, &mut r), HURRAY_NEED_INPUT);
        std::ptr::write_bytes(r.input, b'x', 16);
        expect(hurray_decoder_next(d, 16, 0, &mut r), HURRAY_ERR_INVALID_MAGIC);
        expect(hurray_decoder_next(d, 0, 0, &mut r), HURRAY_ERR_INVALID_MAGIC);
        expect(hurray_decoder_destroy(&mut d), HURRAY_OK);
        expect(hurray_decoder_destroy(&mut d), HURRAY_OK);
        expect(hurray_decoder_destroy(null_mut()), HURRAY_OK);
    }
}

#[test]
fn a_failed_send_takes_the_item_back_or_poisons() {
    let items = corpus();
    // SAFETY: the encoder is made and destroyed here; descriptors and payload slices outlive the calls that borrow
    // them; out-pointers are live locals.
    unsafe {
        let mut e = null_mut();
        expect(hurray_encoder_new(null(), &mut e), HURRAY_OK);
        let d0 = decode(&items[0].desc.encode().unwrap());
        let s0 = slices(&items[0].payloads);
        let mut st = HurrayEncoderState::default();
        expect(hurray_encoder_encode(e, d0, s0.as_ptr(), s0.len(), &mut st), HURRAY_OK);
        // Nothing sent: the item is taken back and can be staged again.
        expect(hurray_encoder_abort(e, 1, &mut st), HURRAY_OK);
        assert_eq!(st.pending_bytes, 0);
        expect(hurray_encoder_encode(e, d0, s0.as_ptr(), s0.len(), &mut st), HURRAY_OK);
        // Part sent: poisoned.
        expect(hurray_encoder_consume(e, 3, &mut st), HURRAY_OK);
        expect(hurray_encoder_consume(e, st.pending_bytes + 1, null_mut()), HURRAY_ERR_INVALID_ARGUMENT);
        expect(hurray_encoder_abort(e, 1, &mut st), HURRAY_ERR_POISONED);
        expect(hurray_encoder_encode(e, d0, s0.as_ptr(), s0.len(), &mut st), HURRAY_ERR_POISONED);
        expect(hurray_encoder_finish(e, &mut st), HURRAY_ERR_POISONED);
        expect(hurray_encoder_encode(e, d0, s0.as_ptr(), 65, &mut st), HURRAY_ERR_INVALID_ARGUMENT);
        expect(hurray_encoder_destroy(&mut e), HURRAY_OK);
        expect(hurray_descriptor_destroy(d0), HURRAY_OK);
    }
}

#[test]
fn a_reset_encoder_writes_one_stream_per_item_and_recovers_from_poisoning() {
    let items = corpus();
    // SAFETY: the encoder is made and destroyed here; descriptors and payload slices outlive the calls that borrow
    // them; out-pointers are live locals.
    unsafe {
        let mut e = null_mut();
        expect(hurray_encoder_new(null(), &mut e), HURRAY_OK);
        let mut st = HurrayEncoderState::default();
        for it in &items {
            // Each stream, after a reset, is what a fresh encoder makes of that item alone.
            expect(hurray_encoder_reset(e, &mut st), HURRAY_OK);
            assert_eq!(st, HurrayEncoderState::default());
            let d = decode(&it.desc.encode().unwrap());
            let s = slices(&it.payloads);
            let mut wire = Vec::new();
            expect(hurray_encoder_encode(e, d, s.as_ptr(), s.len(), &mut st), HURRAY_OK);
            drain(e, 1000, &mut wire);
            expect(hurray_encoder_finish(e, &mut st), HURRAY_OK);
            drain(e, 1000, &mut wire);
            expect(hurray_descriptor_destroy(d), HURRAY_OK);
            assert_eq!(wire, ffi_encode(std::slice::from_ref(it), 1000, false));
        }
        // A poisoned encoder, and one whose pending output borrows a payload, start afresh.
        let d0 = decode(&items[0].desc.encode().unwrap());
        let s0 = slices(&items[0].payloads);
        expect(hurray_encoder_encode(e, d0, s0.as_ptr(), s0.len(), &mut st), HURRAY_ERR_INVALID_STATE);
        expect(hurray_encoder_reset(e, null_mut()), HURRAY_OK);
        expect(hurray_encoder_encode(e, d0, s0.as_ptr(), s0.len(), &mut st), HURRAY_OK);
        expect(hurray_encoder_consume(e, 3, &mut st), HURRAY_OK);
        expect(hurray_encoder_abort(e, 1, &mut st), HURRAY_ERR_POISONED);
        expect(hurray_encoder_reset(e, &mut st), HURRAY_OK);
        assert_eq!(st, HurrayEncoderState::default());
        let mut wire = Vec::new();
        expect(hurray_encoder_encode(e, d0, s0.as_ptr(), s0.len(), &mut st), HURRAY_OK);
        expect(hurray_encoder_finish(e, &mut st), HURRAY_OK);
        drain(e, 1000, &mut wire);
        assert_eq!(wire, ffi_encode(&items[..1], 1000, false));
        expect(hurray_descriptor_destroy(d0), HURRAY_OK);
        expect(hurray_encoder_destroy(&mut e), HURRAY_OK);
        expect(hurray_encoder_reset(null_mut(), null_mut()), HURRAY_ERR_NULL_POINTER);
    }
}

#[test]
fn with_name_renames_and_validates() {
    let mut it = dense(hurray_core::ElementType::Float32, &[4]);
    it.desc = it.desc.with_name("old").unwrap().with_metadata("k", "v").unwrap();
    let d = decode(&it.desc.encode().unwrap());
    // SAFETY: `d` is the live descriptor from `decode`; the name is a live 8-byte literal; out-pointers are live
    // locals.
    unsafe {
        let mut r = null_mut();
        expect(hurray_descriptor_with_name(d, b"new-name".as_ptr(), 8, &mut r), HURRAY_OK);
        let want = it.desc.clone().with_name("new-name").unwrap().encode().unwrap();
        let (mut p, mut n) = (null(), 0usize);
        expect(hurray_descriptor_encoded(r, &mut p, &mut n), HURRAY_OK);
        assert_eq!(std::slice::from_raw_parts(p, n), &want[..]);
        expect(hurray_descriptor_destroy(r), HURRAY_OK);
        let mut r = null_mut();
        expect(hurray_descriptor_with_name(d, b"a\0b".as_ptr(), 3, &mut r), HURRAY_ERR_INVALID_ARGUMENT);
        expect(hurray_descriptor_with_name(d, [0xffu8, 0xfe].as_ptr(), 2, &mut r), HURRAY_ERR_INVALID_ARGUMENT);
        let long = vec![b'x'; 4097];
        expect(hurray_descriptor_with_name(d, long.as_ptr(), long.len(), &mut r), HURRAY_ERR_LIMIT_EXCEEDED);
        assert!(r.is_null());
        expect(hurray_descriptor_destroy(d), HURRAY_OK);
    }
}

#[test]
fn encode_with_name_writes_the_renamed_encoding_into_the_callers_buffer() {
    let mut it = dense(hurray_core::ElementType::Float32, &[4]);
    it.desc = it.desc.with_name("old").unwrap().with_metadata("k", "v").unwrap();
    let d = decode(&it.desc.encode().unwrap());
    // SAFETY: `d` is the live descriptor from `decode`; names and buffers are live locals of the
    // lengths passed.
    unsafe {
        let want = it.desc.clone().with_name("ünï-7").unwrap().encode().unwrap();
        let name = "ünï-7".as_bytes();
        let mut out = vec![0xAAu8; 512];
        let mut n = 0usize;
        expect(
            hurray_descriptor_encode_with_name(d, name.as_ptr(), name.len(), out.as_mut_ptr(), out.len(), &mut n),
            HURRAY_OK,
        );
        assert_eq!(&out[..n], &want[..]);
        assert!(out[n..].iter().all(|&b| b == 0xAA), "nothing written past the encoding");
        // The empty name (NULL allowed with length 0) equals with_name("").
        let empty = it.desc.clone().with_name("").unwrap().encode().unwrap();
        expect(hurray_descriptor_encode_with_name(d, null(), 0, out.as_mut_ptr(), out.len(), &mut n), HURRAY_OK);
        assert_eq!(&out[..n], &empty[..]);
        // Too small: the size needed, the buffer untouched; capacity 0 may pass NULL.
        let mut small = vec![0x55u8; want.len() - 1];
        let mut need = 0usize;
        expect(
            hurray_descriptor_encode_with_name(
                d,
                name.as_ptr(),
                name.len(),
                small.as_mut_ptr(),
                small.len(),
                &mut need,
            ),
            HURRAY_ERR_BUFFER_TOO_SMALL,
        );
        assert_eq!(need, want.len());
        assert!(small.iter().all(|&b| b == 0x55));
        expect(
            hurray_descriptor_encode_with_name(d, name.as_ptr(), name.len(), null_mut(), 0, &mut need),
            HURRAY_ERR_BUFFER_TOO_SMALL,
        );
        assert_eq!(need, want.len());
        // The name rule of hurray_descriptor_with_name.
        expect(
            hurray_descriptor_encode_with_name(d, b"a\0b".as_ptr(), 3, out.as_mut_ptr(), out.len(), &mut n),
            HURRAY_ERR_INVALID_ARGUMENT,
        );
        expect(
            hurray_descriptor_encode_with_name(d, [0xffu8, 0xfe].as_ptr(), 2, out.as_mut_ptr(), out.len(), &mut n),
            HURRAY_ERR_INVALID_ARGUMENT,
        );
        let long = vec![b'x'; 4097];
        expect(
            hurray_descriptor_encode_with_name(d, long.as_ptr(), long.len(), out.as_mut_ptr(), out.len(), &mut n),
            HURRAY_ERR_LIMIT_EXCEEDED,
        );
        // NULL arguments.
        expect(
            hurray_descriptor_encode_with_name(null(), null(), 0, out.as_mut_ptr(), out.len(), &mut n),
            HURRAY_ERR_NULL_POINTER,
        );
        expect(
            hurray_descriptor_encode_with_name(d, null(), 0, out.as_mut_ptr(), out.len(), null_mut()),
            HURRAY_ERR_NULL_POINTER,
        );
        expect(
            hurray_descriptor_encode_with_name(d, null(), 2, out.as_mut_ptr(), out.len(), &mut n),
            HURRAY_ERR_NULL_POINTER,
        );
        expect(hurray_descriptor_encode_with_name(d, null(), 0, null_mut(), 8, &mut n), HURRAY_ERR_NULL_POINTER);
        expect(hurray_descriptor_destroy(d), HURRAY_OK);
    }
}

#[test]
fn descriptor_new_equals_the_builder_and_reports_the_failing_step() {
    use hurray_ffi::decoder::HurrayMetadataView;
    use hurray_ffi::descriptor_spec::*;
    let mut it = dense(hurray_core::ElementType::Float32, &[2, 3]);
    it.desc = it.desc.with_name("w").unwrap().with_metadata("k", "v").unwrap();
    let dims = [2u64, 3];
    let md = [HurrayMetadataView { key: b"k".as_ptr(), key_len: 1, value: b"v".as_ptr(), value_len: 1 }];
    let spec = HurrayDescriptorSpec {
        element_type: hurray_core::ElementType::Float32.code(),
        layout: 0,
        reserved: 0,
        reserved2: 0,
        rank: 2,
        dims: dims.as_ptr(),
        strides: null(),
        stride_count: 0,
        byte_offset: 0,
        buffer_count: 0,
        buffers: null(),
        name: b"w".as_ptr(),
        name_len: 1,
        metadata_count: 1,
        metadata: md.as_ptr(),
        quantization: HurrayQuantization::default(),
    };
    // SAFETY: `spec` and the arrays it points at are live locals; out-pointers are live locals.
    unsafe {
        let mut d = null_mut();
        expect(hurray_descriptor_new(&spec, &mut d), HURRAY_OK);
        let (mut p, mut n) = (null(), 0usize);
        expect(hurray_descriptor_encoded(d, &mut p, &mut n), HURRAY_OK);
        assert_eq!(std::slice::from_raw_parts(p, n), &it.desc.encode().unwrap()[..]);
        expect(hurray_descriptor_destroy(d), HURRAY_OK);
        // A duplicate metadata key fails in the metadata step, with its message.
        let md2 = [md[0], md[0]];
        let bad = HurrayDescriptorSpec { metadata_count: 2, metadata: md2.as_ptr(), ..spec };
        let mut d = null_mut();
        expect(hurray_descriptor_new(&bad, &mut d), HURRAY_ERR_DUPLICATE_NAME);
        assert!(d.is_null());
        assert!(last_error().contains("metadata"), "{}", last_error());
        // A wrong length is an error before anything is copied (never an abort or an overread).
        let bad = HurrayDescriptorSpec { name_len: usize::MAX, ..spec };
        expect(hurray_descriptor_new(&bad, &mut d), HURRAY_ERR_LIMIT_EXCEEDED);
        let huge = [HurrayMetadataView { key: b"k".as_ptr(), key_len: usize::MAX, value: b"v".as_ptr(), value_len: 1 }];
        let bad = HurrayDescriptorSpec { metadata: huge.as_ptr(), ..spec };
        expect(hurray_descriptor_new(&bad, &mut d), HURRAY_ERR_LIMIT_EXCEEDED);
        let bad = HurrayDescriptorSpec { rank: usize::MAX, ..spec };
        expect(hurray_descriptor_new(&bad, &mut d), HURRAY_ERR_INVALID_SHAPE);
        let bad = HurrayDescriptorSpec { element_type: 200, ..spec };
        expect(hurray_descriptor_new(&bad, &mut d), HURRAY_ERR_INVALID_TYPE);
        let strides = [1i64];
        let bad = HurrayDescriptorSpec { layout: 2, strides: strides.as_ptr(), stride_count: 1, ..spec };
        expect(hurray_descriptor_new(&bad, &mut d), HURRAY_ERR_INVALID_LAYOUT);
        let bad = HurrayDescriptorSpec { reserved: 1, ..spec };
        expect(hurray_descriptor_new(&bad, &mut d), HURRAY_ERR_INVALID_ARGUMENT);
        let bad = HurrayDescriptorSpec { buffer_count: 1, ..spec };
        expect(hurray_descriptor_new(&bad, &mut d), HURRAY_ERR_NULL_POINTER);
        expect(hurray_descriptor_new(null(), &mut d), HURRAY_ERR_NULL_POINTER);
        expect(hurray_descriptor_new(&spec, null_mut()), HURRAY_ERR_NULL_POINTER);
    }
}

#[test]
fn descriptor_check_names_the_stride_count_and_refuses_parameters_under_no_quantization() {
    use hurray_ffi::descriptor_spec::*;
    let dims = [2u64, 3];
    let spec = float32_spec_named_w(&dims);
    let strides = [1i64; 40];
    // SAFETY: `spec` and the arrays it points at are live locals; out-pointers are live locals.
    unsafe {
        let mut n = 0usize;
        // 33 strides for a rank-2 strided tensor: the message names the stride count, not the rank.
        let bad = HurrayDescriptorSpec { layout: 2, strides: strides.as_ptr(), stride_count: 33, ..spec };
        expect(hurray_descriptor_check(&bad, null_mut(), &mut n), HURRAY_ERR_INVALID_LAYOUT);
        assert!(last_error().contains("spec.stride_count"), "{}", last_error());
        assert!(!last_error().contains("spec.rank"), "{}", last_error());
        let mut d = null_mut();
        expect(hurray_descriptor_new(&bad, &mut d), HURRAY_ERR_INVALID_LAYOUT);
        assert!(d.is_null());
        // An oversized rank is still named as the rank.
        let bad = HurrayDescriptorSpec { rank: 33, ..spec };
        expect(hurray_descriptor_check(&bad, null_mut(), &mut n), HURRAY_ERR_INVALID_SHAPE);
        assert!(last_error().contains("spec.rank"), "{}", last_error());
        // Kind NONE with a parameter set would drop it silently: each one is refused.
        let none = HurrayQuantization::default();
        for q in [
            HurrayQuantization { dequantized_type: HURRAY_DTYPE_FLOAT32, ..none },
            HurrayQuantization { axis: 1, ..none },
            HurrayQuantization { scale: 0.5, ..none },
            HurrayQuantization { bias: -0.0, ..none },
        ] {
            let bad = HurrayDescriptorSpec { quantization: q, ..spec };
            expect(hurray_descriptor_check(&bad, null_mut(), &mut n), HURRAY_ERR_INVALID_ARGUMENT);
            assert!(last_error().contains("kind NONE"), "{}", last_error());
            expect(hurray_descriptor_new(&bad, &mut d), HURRAY_ERR_INVALID_ARGUMENT);
            let mut b = null_mut();
            expect(hurray_descriptor_builder_new(HURRAY_DTYPE_FLOAT32, dims.as_ptr(), 2, &mut b), HURRAY_OK);
            expect(hurray_descriptor_builder_set_quantization(b, &q), HURRAY_ERR_INVALID_ARGUMENT);
            expect(hurray_descriptor_builder_destroy(&mut b), HURRAY_OK);
        }
        // All zero is no quantization.
        let mut table = [hurray_ffi::buffer::HurrayBufferSpec::default(); 1];
        n = 1;
        expect(hurray_descriptor_check(&spec, table.as_mut_ptr(), &mut n), HURRAY_OK);
        // Every name and metadata limit at once encodes past HURRAY_MAX_DESCRIPTOR_BYTES: check
        // refuses it as new does, naming the encoded size.
        let name = vec![b'n'; HURRAY_MAX_NAME_BYTES as usize];
        let keys: Vec<String> = (0..HURRAY_MAX_METADATA_ENTRIES).map(|i| format!("key-{i:03}")).collect();
        let value = vec![7u8; HURRAY_MAX_METADATA_VALUE_BYTES as usize];
        let md: Vec<HurrayMetadataView> = keys
            .iter()
            .map(|k| HurrayMetadataView {
                key: k.as_ptr(),
                key_len: k.len(),
                value: value.as_ptr(),
                value_len: value.len(),
            })
            .collect();
        let big = HurrayDescriptorSpec {
            name: name.as_ptr(),
            name_len: name.len(),
            metadata: md.as_ptr(),
            metadata_count: md.len(),
            ..spec
        };
        n = 1;
        expect(hurray_descriptor_check(&big, table.as_mut_ptr(), &mut n), HURRAY_ERR_LIMIT_EXCEEDED);
        assert!(last_error().contains(&HURRAY_MAX_DESCRIPTOR_BYTES.to_string()), "{}", last_error());
        expect(hurray_descriptor_new(&big, &mut d), HURRAY_ERR_LIMIT_EXCEEDED);
    }
}

#[test]
fn descriptor_check_agrees_with_descriptor_new_and_writes_the_buffer_table() {
    use hurray_ffi::buffer::HurrayBufferSpec;
    use hurray_ffi::descriptor_spec::*;
    let dims = [2u64, 3];
    let spec = float32_spec_named_w(&dims);
    let zero = HurrayBufferSpec { byte_size: 0, alignment: 0, device_tag: 9, sync_mode: 9, reserved: 7 };
    // SAFETY: `spec` and the arrays it points at are live locals; out-pointers are live locals
    // with room for the counts passed.
    unsafe {
        // The default table: one CPU buffer of exactly 2 * 3 * 4 bytes, as hurray_descriptor_new chooses.
        let mut table = [zero; 4];
        let mut n = 4usize;
        expect(hurray_descriptor_check(&spec, table.as_mut_ptr(), &mut n), HURRAY_OK);
        assert_eq!(n, 1);
        let mut d = null_mut();
        expect(hurray_descriptor_new(&spec, &mut d), HURRAY_OK);
        let mut b = zero;
        expect(hurray_descriptor_buffer_spec(d, 0, &mut b), HURRAY_OK);
        expect(hurray_descriptor_destroy(d), HURRAY_OK);
        assert_eq!((table[0].byte_size, table[0].alignment), (24, 64));
        assert_eq!(
            (table[0].byte_size, table[0].alignment, table[0].device_tag, table[0].sync_mode, table[0].reserved),
            (b.byte_size, b.alignment, b.device_tag, b.sync_mode, b.reserved)
        );
        assert_eq!(table[1].reserved, 7, "nothing is written past the table");
        // A given table comes back as given.
        let given = [HurrayBufferSpec { byte_size: 100, alignment: 128, device_tag: 0, sync_mode: 0, reserved: 0 }];
        let with_table = HurrayDescriptorSpec { buffer_count: 1, buffers: given.as_ptr(), ..spec };
        n = 4;
        expect(hurray_descriptor_check(&with_table, table.as_mut_ptr(), &mut n), HURRAY_OK);
        assert_eq!((n, table[0].byte_size, table[0].alignment), (1, 100, 128));
        // Too little room: the count needed, nothing written.
        let mut none = [zero; 1];
        n = 0;
        expect(hurray_descriptor_check(&spec, none.as_mut_ptr(), &mut n), HURRAY_ERR_BUFFER_TOO_SMALL);
        assert_eq!(n, 1);
        assert_eq!(none[0].reserved, 7);
        n = 0;
        expect(hurray_descriptor_check(&spec, null_mut(), &mut n), HURRAY_ERR_BUFFER_TOO_SMALL);
        assert_eq!(n, 1);
        // Every refusal of hurray_descriptor_new, with the same status.
        let small = [HurrayBufferSpec { byte_size: 23, alignment: 64, device_tag: 0, sync_mode: 0, reserved: 0 }];
        let bads = [
            HurrayDescriptorSpec { name_len: usize::MAX, ..spec },
            HurrayDescriptorSpec { rank: usize::MAX, ..spec },
            HurrayDescriptorSpec { element_type: 200, ..spec },
            HurrayDescriptorSpec { reserved: 1, ..spec },
            HurrayDescriptorSpec { buffer_count: 1, ..spec },
            HurrayDescriptorSpec { buffer_count: 1, buffers: small.as_ptr(), ..spec },
            HurrayDescriptorSpec { name: b"\xff".as_ptr(), ..spec },
        ];
        for bad in &bads {
            let mut d = null_mut();
            let want = hurray_descriptor_new(bad, &mut d);
            assert!(want < 0 && d.is_null());
            n = 4;
            expect(hurray_descriptor_check(bad, table.as_mut_ptr(), &mut n), want);
            assert_eq!(n, 4, "a refused spec leaves the count as it was");
        }
        expect(hurray_descriptor_check(null(), table.as_mut_ptr(), &mut n), HURRAY_ERR_NULL_POINTER);
        expect(hurray_descriptor_check(&spec, table.as_mut_ptr(), null_mut()), HURRAY_ERR_NULL_POINTER);
        n = 4;
        expect(hurray_descriptor_check(&spec, null_mut(), &mut n), HURRAY_ERR_NULL_POINTER);
    }
}

#[test]
fn encode_encoded_equals_encode_and_refuses_bad_bytes() {
    let items = corpus();
    let want = encode_stream(&items, false);
    let mut wire = Vec::new();
    // SAFETY: the encoder is made and destroyed here; descriptors and payload slices outlive the calls that borrow
    // them; out-pointers are live locals.
    unsafe {
        let mut e = null_mut();
        expect(hurray_encoder_new(null(), &mut e), HURRAY_OK);
        let mut st = HurrayEncoderState::default();
        for it in &items {
            let enc = it.desc.encode().unwrap();
            let s = slices(&it.payloads);
            expect(hurray_encoder_encode_encoded(e, enc.as_ptr(), enc.len(), s.as_ptr(), s.len(), &mut st), HURRAY_OK);
            drain(e, usize::MAX, &mut wire);
        }
        expect(hurray_encoder_finish(e, &mut st), HURRAY_OK);
        drain(e, usize::MAX, &mut wire);
        assert_eq!(wire, want);
        let mut e2 = null_mut();
        expect(hurray_encoder_new(null(), &mut e2), HURRAY_OK);
        let garbage = [0u8; 40];
        expect(
            hurray_encoder_encode_encoded(e2, garbage.as_ptr(), garbage.len(), null(), 0, &mut st),
            HURRAY_ERR_INVALID_MAGIC,
        );
        let mut enc = items[0].desc.encode().unwrap();
        enc.push(0);
        let s = slices(&items[0].payloads);
        expect(
            hurray_encoder_encode_encoded(e2, enc.as_ptr(), enc.len(), s.as_ptr(), s.len(), &mut st),
            HURRAY_ERR_CORRUPT,
        );
        let mut n = usize::MAX;
        expect(hurray_encoder_output(e2, null_mut(), 0, &mut n), HURRAY_OK);
        assert_eq!(n, 0, "nothing staged by the failed calls");
        expect(hurray_encoder_destroy(&mut e), HURRAY_OK);
        expect(hurray_encoder_destroy(&mut e2), HURRAY_OK);
    }
}

#[test]
fn stream_metadata_through_the_encoder_and_decoder() {
    use hurray_ffi::decoder::HurrayMetadataView;
    use hurray_ffi::stream_metadata::*;
    let items = corpus();
    let md = [
        HurrayMetadataView { key: b"format".as_ptr(), key_len: 6, value: b"pt".as_ptr(), value_len: 2 },
        HurrayMetadataView { key: b"empty".as_ptr(), key_len: 5, value: null(), value_len: 0 },
    ];
    let mut wire = Vec::new();
    // SAFETY: every handle comes from the call that made it and is destroyed once; `md` and the
    // payload slices outlive the calls that read them.
    unsafe {
        let mut e = null_mut();
        expect(hurray_encoder_new(null(), &mut e), HURRAY_OK);
        expect(hurray_encoder_set_metadata(e, md.as_ptr(), md.len()), HURRAY_OK);
        let mut st = HurrayEncoderState::default();
        for it in &items[..3] {
            let d = decode(&it.desc.encode().unwrap());
            let s = slices(&it.payloads);
            expect(hurray_encoder_encode(e, d, s.as_ptr(), s.len(), &mut st), HURRAY_OK);
            expect(hurray_descriptor_destroy(d), HURRAY_OK);
            drain(e, usize::MAX, &mut wire);
        }
        // After the first item: too late.
        expect(hurray_encoder_set_metadata(e, md.as_ptr(), md.len()), HURRAY_ERR_INVALID_STATE);
        expect(hurray_encoder_finish(e, &mut st), HURRAY_OK);
        drain(e, usize::MAX, &mut wire);
        expect(hurray_encoder_destroy(&mut e), HURRAY_OK);

        let mut d = null_mut();
        expect(hurray_decoder_new(null(), 0, &mut d), HURRAY_OK);
        let mut r = std::mem::zeroed::<HurrayDecodeResult>();
        let (mut pos, mut filled) = (0usize, 0usize);
        loop {
            let s = hurray_decoder_next_header(d, filled, 0, &mut r);
            if s == HURRAY_OK {
                break;
            }
            expect(s, HURRAY_NEED_INPUT);
            let n = r.input_len.min(10).min(wire.len() - pos);
            std::ptr::copy_nonoverlapping(wire[pos..].as_ptr(), r.input, n);
            pos += n;
            filled = n;
        }
        assert_eq!(r.fields.metadata_count, 2);
        let got = std::slice::from_raw_parts(r.metadata, 2);
        assert_eq!(std::slice::from_raw_parts(got[0].key, got[0].key_len), b"format");
        assert_eq!(std::slice::from_raw_parts(got[0].value, got[0].value_len), b"pt");
        assert_eq!(got[1].value_len, 0);
        expect(hurray_decoder_destroy(&mut d), HURRAY_OK);
    }
    // The flat view reads the same tensors as the callback reader.
    let (back, end, _) = ffi_decode(&wire, 1000);
    expect(end, HURRAY_END_OF_STREAM);
    assert_back(&back, &items[..3]);
}

/// Reader options from `hurray_reader_options_init` with `max_tensor_bytes` and `flags` set.
fn reader_options(max_tensor_bytes: u64, flags: u32) -> HurrayReaderOptions {
    // SAFETY: `HurrayReaderOptions` is plain integers, for which all-zero bytes are a valid value; `o` is a live
    // local.
    unsafe {
        let mut o = std::mem::zeroed::<HurrayReaderOptions>();
        expect(hurray_reader_options_init(&mut o), HURRAY_OK);
        o.max_tensor_bytes = max_tensor_bytes;
        o.flags = flags;
        o
    }
}

#[test]
fn options_set_on_a_reset_decoder_apply_to_the_next_stream() {
    // float32[8]: 32-byte tensors; two equal frames per stream, so the decoder keeps the
    // descriptor's model (which skips the limit checks for the same bytes under unchanged limits).
    let small: Vec<Item> = (0..2).map(|_| dense(hurray_core::ElementType::Float32, &[8])).collect();
    let plain = encode_stream(&small, false);
    let checked = encode_stream(&small, true);
    let tight = reader_options(16, 0);
    // SAFETY: the decoders are made and destroyed here and only used by `decode_on` in between; option structs and
    // out-pointers are live locals.
    unsafe {
        // What a new decoder with the tight limit says.
        let mut fresh = null_mut();
        expect(hurray_decoder_new(&tight, 0, &mut fresh), HURRAY_OK);
        let (_, refused, _, _) = decode_on(fresh, &plain, usize::MAX);
        expect(refused, HURRAY_ERR_LIMIT_EXCEEDED);
        expect(hurray_decoder_destroy(&mut fresh), HURRAY_OK);

        let mut d = null_mut();
        expect(hurray_decoder_new(null(), 1 << 20, &mut d), HURRAY_OK);
        for _ in 0..2 {
            let (back, end, _, _) = decode_on(d, &plain, usize::MAX);
            expect(end, HURRAY_END_OF_STREAM);
            assert_back(&back, &small);
            expect(hurray_decoder_reset(d), HURRAY_OK);
        }
        // Set on a reset decoder: the same refusal as the new decoder's, in every chunking.
        expect(hurray_decoder_set_options(d, &tight), HURRAY_OK);
        let (back, end, _, _) = decode_on(d, &plain, usize::MAX);
        assert!(back.is_empty());
        expect(end, refused);
        expect(hurray_decoder_reset(d), HURRAY_OK);
        let (_, end, _, _) = decode_on(d, &plain, 3);
        expect(end, refused);
        // Back to the defaults (NULL): accepted again.
        expect(hurray_decoder_reset(d), HURRAY_OK);
        expect(hurray_decoder_set_options(d, null()), HURRAY_OK);
        let (back, end, _, _) = decode_on(d, &plain, usize::MAX);
        expect(end, HURRAY_END_OF_STREAM);
        assert_back(&back, &small);
        // The flag is an option like the limits.
        expect(hurray_decoder_reset(d), HURRAY_OK);
        expect(
            hurray_decoder_set_options(d, &reader_options(64 << 30, HURRAY_READER_REQUIRE_PAYLOAD_CHECKSUMS)),
            HURRAY_OK,
        );
        let (_, end, _, _) = decode_on(d, &plain, usize::MAX);
        expect(end, HURRAY_ERR_CORRUPT);
        expect(hurray_decoder_reset(d), HURRAY_OK);
        let (back, end, _, _) = decode_on(d, &checked, usize::MAX);
        expect(end, HURRAY_END_OF_STREAM);
        assert_back(&back, &small);
        // A new decoder takes options at once, before its first call.
        let mut n = null_mut();
        expect(hurray_decoder_new(null(), 0, &mut n), HURRAY_OK);
        expect(hurray_decoder_set_options(n, &tight), HURRAY_OK);
        let (_, end, _, _) = decode_on(n, &plain, usize::MAX);
        expect(end, refused);
        expect(hurray_decoder_destroy(&mut n), HURRAY_OK);
        expect(hurray_decoder_destroy(&mut d), HURRAY_OK);
    }
}

#[test]
fn options_are_refused_once_input_was_taken_and_bad_ones_leave_the_decoder_as_it_was() {
    let small: Vec<Item> = (0..2).map(|_| dense(hurray_core::ElementType::Float32, &[8])).collect();
    let plain = encode_stream(&small, false);
    let tight = reader_options(16, 0);
    // SAFETY: the decoder is made and destroyed here; the input window is written within the length it offers;
    // option structs and out-pointers are live locals.
    unsafe {
        let mut d = null_mut();
        expect(hurray_decoder_new(null(), 0, &mut d), HURRAY_OK);
        // Offered input but none reported: still allowed.
        let mut r = std::mem::zeroed::<HurrayDecodeResult>();
        expect(hurray_decoder_next(d, 0, 0, &mut r), HURRAY_NEED_INPUT);
        expect(hurray_decoder_set_options(d, &tight), HURRAY_OK);
        // Three bytes reported: refused, and the limits stay the tight ones.
        std::ptr::copy_nonoverlapping(plain.as_ptr(), r.input, 3);
        expect(hurray_decoder_next(d, 3, 0, &mut r), HURRAY_NEED_INPUT);
        expect(hurray_decoder_set_options(d, null()), HURRAY_ERR_INVALID_STATE);
        let mut len = 0;
        expect(hurray_last_error_message(null_mut(), 0, &mut len), HURRAY_ERR_BUFFER_TOO_SMALL);
        assert!(len > 0);
        let rest = &plain[3..];
        let (_, end, _, _) = decode_on(d, rest, usize::MAX);
        expect(end, HURRAY_ERR_LIMIT_EXCEEDED);
        expect(hurray_decoder_set_options(d, null()), HURRAY_ERR_INVALID_STATE);
        // After a whole stream, too.
        expect(hurray_decoder_reset(d), HURRAY_OK);
        expect(hurray_decoder_set_options(d, null()), HURRAY_OK);
        let (_, end, _, _) = decode_on(d, &plain, usize::MAX);
        expect(end, HURRAY_END_OF_STREAM);
        expect(hurray_decoder_set_options(d, &tight), HURRAY_ERR_INVALID_STATE);
        // Bad options: what hurray_decoder_new says for them, and nothing changes.
        expect(hurray_decoder_reset(d), HURRAY_OK);
        expect(hurray_decoder_set_options(d, &tight), HURRAY_OK);
        let mut bads = Vec::new();
        let mut o = tight;
        o.struct_size -= 1;
        bads.push(o);
        let mut o = tight;
        o.flags = 2;
        bads.push(o);
        let mut o = tight;
        o.reserved = 1;
        bads.push(o);
        let mut o = reader_options(64 << 30, 0);
        o.max_rank = 33;
        bads.push(o);
        let mut o = reader_options(64 << 30, 0);
        o.max_descriptor_bytes = (16 << 20) + 1;
        bads.push(o);
        for bad in &bads {
            let mut n = null_mut();
            let want = hurray_decoder_new(bad, 0, &mut n);
            assert!(n.is_null());
            expect(want, HURRAY_ERR_INVALID_ARGUMENT);
            expect(hurray_decoder_set_options(d, bad), want);
        }
        let (_, end, _, _) = decode_on(d, &plain, usize::MAX);
        expect(end, HURRAY_ERR_LIMIT_EXCEEDED);
        // Still usable: reset, defaults, a whole stream.
        expect(hurray_decoder_reset(d), HURRAY_OK);
        expect(hurray_decoder_set_options(d, null()), HURRAY_OK);
        let (back, end, _, _) = decode_on(d, &plain, 7);
        expect(end, HURRAY_END_OF_STREAM);
        assert_back(&back, &small);
        expect(hurray_decoder_set_options(null_mut(), null()), HURRAY_ERR_NULL_POINTER);
        expect(hurray_decoder_destroy(&mut d), HURRAY_OK);
    }
}

#[test]
fn buffered_reports_the_bytes_after_the_end_marker() {
    let small: Vec<Item> = (0..2).map(|_| dense(hurray_core::ElementType::Float32, &[8])).collect();
    let one = encode_stream(&small, false);
    let junk = b"trailing junk";
    let mut with_junk = one.clone();
    with_junk.extend_from_slice(junk);
    // SAFETY: the decoder is made and destroyed here and only used by `decode_on` and the calls below in between;
    // out-pointers are live locals.
    unsafe {
        let mut d = null_mut();
        expect(hurray_decoder_new(null(), 0, &mut d), HURRAY_OK);
        let mut n = usize::MAX;
        expect(hurray_decoder_buffered(d, &mut n), HURRAY_OK);
        assert_eq!(n, 0, "a new decoder holds nothing");
        // The stream and the junk in one input: the stream decodes, the junk stays buffered.
        let (back, end, _, _) = decode_on(d, &with_junk, usize::MAX);
        expect(end, HURRAY_END_OF_STREAM);
        assert_back(&back, &small);
        expect(hurray_decoder_buffered(d, &mut n), HURRAY_OK);
        assert_eq!(n, junk.len(), "the bytes after the end marker");
        // A clean stream leaves nothing, and a reset forgets the junk.
        expect(hurray_decoder_reset(d), HURRAY_OK);
        expect(hurray_decoder_buffered(d, &mut n), HURRAY_OK);
        assert_eq!(n, 0);
        let (_, end, _, _) = decode_on(d, &one, 7);
        expect(end, HURRAY_END_OF_STREAM);
        expect(hurray_decoder_buffered(d, &mut n), HURRAY_OK);
        assert_eq!(n, 0, "nothing after the end marker");
        // Mid-stream: the bytes taken but not decoded yet.
        expect(hurray_decoder_reset(d), HURRAY_OK);
        let mut r = std::mem::zeroed::<HurrayDecodeResult>();
        expect(hurray_decoder_next(d, 0, 0, &mut r), HURRAY_NEED_INPUT);
        std::ptr::copy_nonoverlapping(one.as_ptr(), r.input, 3);
        expect(hurray_decoder_next(d, 3, 0, &mut r), HURRAY_NEED_INPUT);
        expect(hurray_decoder_buffered(d, &mut n), HURRAY_OK);
        assert_eq!(n, 0, "a partial stream header is decoded as far as it goes");
        expect(hurray_decoder_buffered(null(), &mut n), HURRAY_ERR_NULL_POINTER);
        expect(hurray_decoder_buffered(d, null_mut()), HURRAY_ERR_NULL_POINTER);
        let msg = last_error();
        assert!(msg.contains("out_bytes"), "{msg}");
        expect(hurray_decoder_destroy(&mut d), HURRAY_OK);
    }
}
