//! Batch encoding and decoding through the C ABI (docs/spec/c-abi.md §Decoders and encoders):
//! `hurray_encoder_encode_batch` writes the same bytes as one tensor at a time, a refused item
//! leaves the others staged, `hurray_decoder_next_batch` returns what one call each would, stops
//! before composites, and offers the next input region; `hurray_tensor_destroy_many` frees many.

#[path = "../../hurray-core/tests/common/mod.rs"]
mod common;
mod ffi_common;

use std::ptr::{null, null_mut};

use common::*;
use ffi_common::*;
use hurray_core::{ElementType, Shape, StreamWriter, TensorDescriptor, WriterOptions};
use hurray_ffi::buffer::HurrayBufferSpec;
use hurray_ffi::decoder::*;
use hurray_ffi::descriptor_spec::HurrayDescriptorSpec;
use hurray_ffi::encoder::*;
use hurray_ffi::tensor::*;
use hurray_ffi::writer::HurrayIoSlice;
use hurray_ffi::*;

/// A named float32 embedding with one metadata entry, as the spec's fields and its payload.
struct Named {
    dims: Vec<u64>,
    name: Vec<u8>,
    key: Vec<u8>,
    value: Vec<u8>,
    payload: Vec<u8>,
}

fn named(i: usize, elems: u64) -> Named {
    Named {
        dims: vec![elems],
        name: format!("emb-{i}").into_bytes(),
        key: b"doc".to_vec(),
        value: format!("d{i}").into_bytes(),
        payload: typed_payload(ElementType::Float32, elems),
    }
}

/// The same tensor as the core writes it (the reference encoding).
fn core_desc(n: &Named) -> TensorDescriptor {
    TensorDescriptor::dense(ElementType::Float32, Shape::new(n.dims.clone()).unwrap())
        .unwrap()
        .with_name(String::from_utf8(n.name.clone()).unwrap())
        .unwrap()
        .with_metadata("doc", n.value.clone())
        .unwrap()
}

/// Specs pointing into `items`, with their metadata views and payload slices kept in `keep`.
fn specs(items: &[Named], keep: &mut Vec<(Box<HurrayMetadataView>, Box<HurrayIoSlice>)>) -> Vec<HurrayTensorSpec> {
    items
        .iter()
        .map(|n| {
            let md = Box::new(HurrayMetadataView {
                key: n.key.as_ptr(),
                key_len: n.key.len(),
                value: n.value.as_ptr(),
                value_len: n.value.len(),
            });
            let p = Box::new(HurrayIoSlice { ptr: n.payload.as_ptr(), len: n.payload.len() });
            let spec = HurrayTensorSpec {
                descriptor: HurrayDescriptorSpec {
                    element_type: HURRAY_DTYPE_FLOAT32,
                    layout: HURRAY_LAYOUT_ROW_MAJOR,
                    reserved: 0,
                    reserved2: 0,
                    rank: n.dims.len(),
                    dims: n.dims.as_ptr(),
                    strides: null(),
                    stride_count: 0,
                    byte_offset: 0,
                    buffer_count: 0,
                    buffers: null::<HurrayBufferSpec>(),
                    name: n.name.as_ptr(),
                    name_len: n.name.len(),
                    metadata_count: 1,
                    metadata: &*md,
                    quantization: Default::default(),
                },
                payloads: &*p,
                payload_count: 1,
            };
            keep.push((md, p));
            spec
        })
        .collect()
}

/// Encodes `specs` in batches of `per_call`, sending every listed piece; returns the wire.
///
/// # Safety
/// Every pointer in `specs` is live for the call.
unsafe fn encode_batches(specs: &[HurrayTensorSpec], per_call: usize) -> Vec<u8> {
    let mut wire = Vec::new();
    // SAFETY: the encoder is made and destroyed here; pieces are read before the next call; the caller keeps the
    // specs' memory live.
    unsafe {
        let mut e = null_mut();
        expect(hurray_encoder_new(null(), &mut e), HURRAY_OK);
        let mut pieces = [HurrayIoSlice { ptr: null(), len: 0 }; 8];
        let mut sent = 0u64;
        let mut at = 0;
        loop {
            let n = per_call.min(specs.len() - at);
            let flags = if at + n == specs.len() { HURRAY_ENCODE_FINISH } else { 0 };
            let mut r = HurrayEncodeBatchResult::default();
            let s = hurray_encoder_encode_batch(
                e,
                sent,
                specs[at..].as_ptr(),
                n,
                flags,
                pieces.as_mut_ptr(),
                pieces.len(),
                &mut r,
            );
            expect(s, HURRAY_OK);
            sent = 0;
            for p in &pieces[..r.piece_count] {
                wire.extend_from_slice(std::slice::from_raw_parts(p.ptr, p.len));
                sent += p.len as u64;
            }
            assert_eq!(sent, r.state.pending_bytes, "every pending piece is listed");
            at += r.encoded;
            if at == specs.len() && flags != 0 && r.encoded == n {
                break;
            }
        }
        expect(hurray_encoder_destroy(&mut e), HURRAY_OK);
    }
    wire
}

/// Decodes `bytes` with `hurray_decoder_next_batch`, `chunk` bytes per fill, filling the region
/// an OK result offers without a call just to ask; returns each tensor's name and payload, and
/// the largest batch seen.
/// Each decoded tensor's name and payload bytes.
type NamesAndPayloads = Vec<(Vec<u8>, Vec<u8>)>;

fn decode_batches(bytes: &[u8], chunk: usize) -> (NamesAndPayloads, usize) {
    let mut out = Vec::new();
    let mut largest = 0;
    // SAFETY: the decoder is made and destroyed here; each result is read before the next call; input is written
    // within the offered length.
    unsafe {
        let mut d = null_mut();
        expect(hurray_decoder_new(null(), 0, &mut d), HURRAY_OK);
        let mut results: Vec<HurrayDecodeResult> = (0..16).map(|_| std::mem::zeroed()).collect();
        let (mut pos, mut filled, mut flags) = (0, 0, 0);
        let mut fill = |input: *mut u8, len: usize, filled: &mut usize, flags: &mut u32| {
            let n = len.min(chunk).min(bytes.len() - pos);
            if n == 0 {
                *flags = HURRAY_DECODE_END_OF_INPUT;
            } else {
                std::ptr::copy_nonoverlapping(bytes[pos..].as_ptr(), input, n);
                pos += n;
                *filled = n;
            }
        };
        loop {
            let mut count = usize::MAX;
            let s = hurray_decoder_next_batch(d, filled, flags, results.as_mut_ptr(), results.len(), &mut count);
            filled = 0;
            match s {
                HURRAY_OK => {
                    assert!(count >= 1);
                    largest = largest.max(count);
                    let mut handles = Vec::new();
                    for r in &results[..count] {
                        let name = std::slice::from_raw_parts(r.fields.name as *const u8, r.fields.name_len).to_vec();
                        let b = &*r.buffers;
                        let data = std::slice::from_raw_parts(b.data as *const u8, b.spec.byte_size as usize).to_vec();
                        out.push((name, data));
                        handles.push(r.tensor);
                    }
                    expect(hurray_tensor_destroy_many(handles.as_mut_ptr(), handles.len()), HURRAY_OK);
                    assert!(handles.iter().all(|h| h.is_null()), "destroy_many writes NULL over each");
                    if results[0].input_len > 0 {
                        fill(results[0].input, results[0].input_len, &mut filled, &mut flags);
                    }
                }
                HURRAY_NEED_INPUT => {
                    assert_eq!(count, 0);
                    fill(results[0].input, results[0].input_len, &mut filled, &mut flags);
                }
                other => {
                    expect(other, HURRAY_END_OF_STREAM);
                    break;
                }
            }
        }
        expect(hurray_decoder_destroy(&mut d), HURRAY_OK);
    }
    (out, largest)
}

fn reference_wire(items: &[Named]) -> Vec<u8> {
    let mut w = StreamWriter::new(Vec::new(), WriterOptions { payload_checksums: false });
    for n in items {
        w.write_tensor(&core_desc(n), &[&n.payload]).unwrap();
    }
    w.finish().unwrap();
    w.into_transport()
}

#[test]
fn a_batch_encodes_the_bytes_of_one_call_per_tensor_and_decodes_in_batches() {
    let items: Vec<Named> = (0..100).map(|i| named(i, 1 + (i as u64 % 7) * 100)).collect();
    let mut keep = Vec::new();
    let s = specs(&items, &mut keep);
    let want = reference_wire(&items);
    for per_call in [1, 3, 100] {
        // SAFETY: `items` and `keep` outlive the call.
        let wire = unsafe { encode_batches(&s, per_call) };
        assert_eq!(wire, want, "batches of {per_call}");
    }
    for chunk in [1, 7, 4096, usize::MAX] {
        let (back, largest) = decode_batches(&want, chunk);
        assert_eq!(back.len(), items.len());
        for (b, n) in back.iter().zip(&items) {
            assert_eq!(b.0, n.name);
            assert_eq!(b.1, n.payload);
        }
        if chunk == usize::MAX {
            assert!(largest > 1, "buffered tensors come several per call");
        }
    }
}

#[test]
fn a_refused_item_is_reported_by_index_and_the_others_stay_staged() {
    let mut items: Vec<Named> = (0..5).map(|i| named(i, 4)).collect();
    items[2].name = vec![b'x'; 5000];
    let mut keep = Vec::new();
    let s = specs(&items, &mut keep);
    // SAFETY: the encoder is made and destroyed here; `items` and `keep` outlive every call.
    unsafe {
        let mut e = null_mut();
        expect(hurray_encoder_new(null(), &mut e), HURRAY_OK);
        let mut r = HurrayEncodeBatchResult::default();
        let st = hurray_encoder_encode_batch(e, 0, s.as_ptr(), s.len(), 0, null_mut(), 0, &mut r);
        expect(st, HURRAY_ERR_LIMIT_EXCEEDED);
        assert_eq!(r.encoded, 2);
        assert!(last_error().contains("batch item 2: "), "{}", last_error());
        expect(
            hurray_encoder_encode_batch(e, 0, s[3..].as_ptr(), 2, HURRAY_ENCODE_FINISH, null_mut(), 0, &mut r),
            HURRAY_OK,
        );
        assert_eq!(r.encoded, 2);
        let mut pieces = [HurrayIoSlice { ptr: null(), len: 0 }; 4];
        let mut n = 0;
        expect(hurray_encoder_output(e, pieces.as_mut_ptr(), pieces.len(), &mut n), HURRAY_OK);
        let mut wire = Vec::new();
        for p in &pieces[..n] {
            wire.extend_from_slice(std::slice::from_raw_parts(p.ptr, p.len));
        }
        expect(hurray_encoder_destroy(&mut e), HURRAY_OK);
        let kept: Vec<Named> = items.into_iter().enumerate().filter(|(i, _)| *i != 2).map(|(_, n)| n).collect();
        assert_eq!(wire, reference_wire(&kept));
    }
}

#[test]
fn a_large_payload_stops_the_batch_after_it_so_it_is_sent_first() {
    let items = vec![named(0, 4), named(1, 40_000), named(2, 4)];
    let mut keep = Vec::new();
    let s = specs(&items, &mut keep);
    // SAFETY: the encoder is made and destroyed here; `items` and `keep` outlive every call.
    unsafe {
        let mut e = null_mut();
        expect(hurray_encoder_new(null(), &mut e), HURRAY_OK);
        let mut r = HurrayEncodeBatchResult::default();
        let mut pieces = [HurrayIoSlice { ptr: null(), len: 0 }; 8];
        expect(
            hurray_encoder_encode_batch(e, 0, s.as_ptr(), 3, 0, pieces.as_mut_ptr(), pieces.len(), &mut r),
            HURRAY_OK,
        );
        assert_eq!(r.encoded, 2, "stops after the item that borrows its payload");
        assert_eq!(r.state.borrows_payloads, 1);
        let sent: u64 = pieces[..r.piece_count].iter().map(|p| p.len as u64).sum();
        assert_eq!(sent, r.state.pending_bytes);
        // Reporting the sent bytes in the next call lets it stage the rest.
        expect(
            hurray_encoder_encode_batch(e, sent, s[2..].as_ptr(), 1, 0, pieces.as_mut_ptr(), pieces.len(), &mut r),
            HURRAY_OK,
        );
        assert_eq!((r.encoded, r.state.borrows_payloads), (1, 0));
        // Reporting more than is pending is refused, and nothing is staged.
        let st = hurray_encoder_encode_batch(e, 1 << 40, s.as_ptr(), 1, 0, null_mut(), 0, &mut r);
        expect(st, HURRAY_ERR_INVALID_ARGUMENT);
        assert_eq!(r.encoded, 0);
        expect(hurray_encoder_destroy(&mut e), HURRAY_OK);
    }
}

#[test]
fn a_decode_batch_stops_before_a_composite_so_the_item_view_can_take_it() {
    let a = dense(ElementType::Float32, &[3]);
    let f = dense(ElementType::Int32, &[2]);
    let mut w = StreamWriter::new(Vec::new(), WriterOptions { payload_checksums: false });
    w.write_tensor(&a.desc, &a.slices()).unwrap();
    let spec = hurray_core::CompositeSpec {
        name: Some("pair".into()),
        members: vec![
            ("x".into(), hurray_core::Member::Tensor(&f.desc, f.slices())),
            ("y".into(), hurray_core::Member::Tensor(&f.desc, f.slices())),
        ],
    };
    hurray_core::composite::write_composite(&mut w, &spec).unwrap();
    w.write_tensor(&a.desc, &a.slices()).unwrap();
    w.finish().unwrap();
    let wire = w.into_transport();
    // SAFETY: the decoder is made and destroyed here; results are read before the next call.
    unsafe {
        let mut d = null_mut();
        expect(hurray_decoder_new(null(), 0, &mut d), HURRAY_OK);
        let mut results: Vec<HurrayDecodeResult> = (0..8).map(|_| std::mem::zeroed()).collect();
        let mut count = 0;
        expect(hurray_decoder_next_batch(d, 0, 0, results.as_mut_ptr(), 8, &mut count), HURRAY_NEED_INPUT);
        assert!(results[0].input_len >= wire.len());
        std::ptr::copy_nonoverlapping(wire.as_ptr(), results[0].input, wire.len());
        expect(hurray_decoder_next_batch(d, wire.len(), 0, results.as_mut_ptr(), 8, &mut count), HURRAY_OK);
        assert_eq!(count, 1, "the batch stops before the composite");
        let mut t = results[0].tensor;
        expect(hurray_tensor_destroy(&mut t), HURRAY_OK);
        let mut single = std::mem::zeroed::<HurrayDecodeResult>();
        let mut c = null_mut();
        expect(hurray_decoder_next_item(d, 0, HURRAY_DECODE_END_OF_INPUT, &mut single, &mut c), HURRAY_OK);
        assert!(!c.is_null() && single.tensor.is_null(), "the composite comes whole in the item view");
        expect(hurray_ffi::composite::hurray_composite_destroy(&mut c), HURRAY_OK);
        expect(hurray_decoder_next_batch(d, 0, 0, results.as_mut_ptr(), 8, &mut count), HURRAY_OK);
        assert_eq!(count, 1);
        let mut t = results[0].tensor;
        expect(hurray_tensor_destroy(&mut t), HURRAY_OK);
        expect(hurray_decoder_next_batch(d, 0, 0, results.as_mut_ptr(), 8, &mut count), HURRAY_END_OF_STREAM);
        expect(hurray_decoder_destroy(&mut d), HURRAY_OK);
    }
}

#[test]
fn tensors_with_the_same_descriptor_share_one_copy_of_its_encoding() {
    let same = TensorDescriptor::dense(ElementType::Float32, Shape::new(vec![4]).unwrap()).unwrap();
    let other = TensorDescriptor::dense(ElementType::Float32, Shape::new(vec![5]).unwrap()).unwrap();
    let descs = [&same, &same, &same, &other];
    let mut w = StreamWriter::new(Vec::new(), WriterOptions { payload_checksums: false });
    for d in descs {
        let payload = typed_payload(ElementType::Float32, d.shape().element_count());
        w.write_tensor(d, &[&payload]).unwrap();
    }
    w.finish().unwrap();
    let wire = w.into_transport();
    // SAFETY: the decoder and every tensor are made and destroyed here; the encodings are read
    // while their tensors (or a tensor sharing the bytes) are alive; input is written within the
    // offered length.
    unsafe {
        let mut d = null_mut();
        expect(hurray_decoder_new(null(), 0, &mut d), HURRAY_OK);
        let mut results: Vec<HurrayDecodeResult> = (0..8).map(|_| std::mem::zeroed()).collect();
        let mut count = 0;
        expect(hurray_decoder_next_batch(d, 0, 0, results.as_mut_ptr(), 8, &mut count), HURRAY_NEED_INPUT);
        assert!(results[0].input_len >= wire.len());
        std::ptr::copy_nonoverlapping(wire.as_ptr(), results[0].input, wire.len());
        expect(hurray_decoder_next_batch(d, wire.len(), 0, results.as_mut_ptr(), 8, &mut count), HURRAY_OK);
        assert_eq!(count, 4);
        let enc = |r: &HurrayDecodeResult| (r.fields.encoded, r.fields.encoded_len);
        assert_eq!(enc(&results[0]), enc(&results[1]), "one copy for equal descriptors");
        assert_eq!(enc(&results[1]), enc(&results[2]));
        assert_ne!(enc(&results[2]).0, enc(&results[3]).0);
        // The first tensor gone, the others still see the shared bytes.
        let mut first = results[0].tensor;
        expect(hurray_tensor_destroy(&mut first), HURRAY_OK);
        let (p, n) = enc(&results[2]);
        assert_eq!(std::slice::from_raw_parts(p, n), &same.encode().unwrap()[..]);
        let (p, n) = enc(&results[3]);
        assert_eq!(std::slice::from_raw_parts(p, n), &other.encode().unwrap()[..]);
        let mut rest: Vec<_> = results[1..4].iter().map(|r| r.tensor).collect();
        expect(hurray_tensor_destroy_many(rest.as_mut_ptr(), rest.len()), HURRAY_OK);
        expect(hurray_decoder_destroy(&mut d), HURRAY_OK);
    }
}
