//! Seeded property tests of the descriptor encoding (docs/spec/descriptor.md): random valid
//! descriptors round-trip byte for byte, and decoding garbage or mutated encodings never panics
//! and never accepts a non-canonical encoding, and a stream decoder reading a descriptor after
//! a similar one gives what a full decode gives. Set HURRAY_PROPTEST_SEED to explore other seeds.

mod common;

use common::Rng;
use hurray_core::crc32c::crc32c;
use hurray_core::{
    BufferHandle, Decoded, DeviceTag, ElementType, ErrorKind, LayoutDescriptor, Quantization, ReaderOptions, Shape,
    StreamDecoder, SyncMode, TensorDescriptor, MAX_BUFFER_ALIGNMENT, MAX_RANK,
};

fn seed() -> u64 {
    std::env::var("HURRAY_PROPTEST_SEED").ok().and_then(|s| s.parse().ok()).unwrap_or(0x5EED_0001)
}

const DEVICES: [DeviceTag; 7] = [
    DeviceTag::Cpu,
    DeviceTag::Cuda,
    DeviceTag::CudaHost,
    DeviceTag::Rocm,
    DeviceTag::Metal,
    DeviceTag::Vulkan,
    DeviceTag::Ipc,
];
const SYNCS: [SyncMode; 3] = [SyncMode::ProducerSynced, SyncMode::Event, SyncMode::ConsumerStream];

fn random_handle(r: &mut Rng, min_size: u64) -> BufferHandle {
    let dev = DEVICES[r.below(7) as usize];
    let lo = dev.min_alignment().trailing_zeros() as u64;
    let hi = MAX_BUFFER_ALIGNMENT.trailing_zeros() as u64;
    let align = 1u64 << (lo + r.below(hi - lo + 1));
    let slack = if r.chance(3) { r.below(100) } else { 0 };
    let size = min_size.saturating_add(slack);
    BufferHandle::new(size, align, dev, SYNCS[r.below(3) as usize]).unwrap()
}

fn random_string(r: &mut Rng, max_chars: u64) -> String {
    const POOL: [char; 12] = ['a', 'Z', '0', '/', '.', '_', ' ', 'é', 'ß', '名', '🙂', '\u{7f}'];
    (0..r.below(max_chars + 1)).map(|_| POOL[r.below(POOL.len() as u64) as usize]).collect()
}

fn random_dims(r: &mut Rng, et: ElementType) -> Vec<u64> {
    let rank = if r.chance(10) { r.below(MAX_RANK as u64 + 1) } else { r.below(5) };
    loop {
        let dims: Vec<u64> = (0..rank)
            .map(|_| match r.below(20) {
                0 => 0,
                1 => r.next_u64(),
                2 => 1 << r.below(40),
                _ => 1 + r.below(6),
            })
            .collect();
        if let Ok(s) = Shape::new(dims.clone()) {
            if et.bytes_for(s.element_count()).is_some() {
                return dims;
            }
        }
    }
}

/// A random descriptor that `TensorDescriptor::new` accepts (retries until it does).
fn random_descriptor(r: &mut Rng) -> TensorDescriptor {
    use ElementType::*;
    loop {
        let et = ElementType::ALL[r.below(19) as usize];
        let dims = random_dims(r, et);
        let shape = Shape::new(dims.clone()).unwrap();
        let elements = shape.element_count();
        let esize = u64::from(et.bit_width() / 8);
        let mut byte_offset = if r.chance(4) { r.below(64) } else { 0 };
        let (layout, need) = match r.below(3) {
            0 => (LayoutDescriptor::RowMajor, et.bytes_for(elements).and_then(|b| b.checked_add(byte_offset))),
            1 => (LayoutDescriptor::ColumnMajor, et.bytes_for(elements).and_then(|b| b.checked_add(byte_offset))),
            _ if et.is_sub_byte() => continue,
            _ => {
                let strides: Vec<i64> = dims
                    .iter()
                    .map(|_| if r.chance(8) { r.next_u64() as i64 } else { r.below(11) as i64 - 5 })
                    .collect();
                let need = if elements == 0 {
                    Some(byte_offset)
                } else {
                    let (mut lo, mut hi) = (0i128, 0i128);
                    for (&d, &s) in dims.iter().zip(&strides) {
                        let reach = i128::from(d - 1) * i128::from(s);
                        if reach < 0 {
                            lo += reach
                        } else {
                            hi += reach
                        }
                    }
                    byte_offset =
                        byte_offset.saturating_add(u64::try_from(-lo * i128::from(esize)).unwrap_or(u64::MAX));
                    u64::try_from(i128::from(byte_offset) + (hi + 1) * i128::from(esize)).ok()
                };
                (LayoutDescriptor::Strided(strides), need)
            }
        };
        let Some(need) = need else { continue };
        let is_int = matches!(et, Int4 | Uint4 | Int8 | Uint8 | Int16 | Uint16 | Int32 | Uint32);
        let is_float = matches!(et, Float16 | Bfloat16 | Float8E4m3fn | Float8E5m2 | Float32);
        let dq = loop {
            let t = ElementType::ALL[r.below(19) as usize];
            if !t.is_sub_byte() && t != Bool {
                break t;
            }
        };
        let quant = match r.below(5) {
            0 if is_int => Some(Quantization::PerTensorAffine {
                scale: f64::from_bits(r.next_u64() >> 2), // finite
                bias: r.below(1000) as f64 - 500.25,
                dequantized: dq,
            }),
            1 if is_int && !dims.is_empty() => {
                Some(Quantization::PerChannelAffine { axis: r.below(dims.len() as u64) as u32, dequantized: dq })
            }
            2 if is_float => Some(Quantization::Cast { dequantized: dq }),
            _ => None,
        };
        let mut buffers = vec![random_handle(r, need)];
        if let Some(Quantization::PerChannelAffine { axis, .. }) = quant {
            let Some(p) = dims[axis as usize].checked_mul(4) else { continue };
            buffers.push(random_handle(r, p));
            buffers.push(random_handle(r, p));
        }
        let Ok(mut d) = TensorDescriptor::new(1, 0, et, shape, byte_offset, layout, buffers, quant, None, None, None)
        else {
            continue;
        };
        if r.chance(2) {
            let name = if r.chance(50) { "n".repeat(4096) } else { random_string(r, 24) };
            d = d.with_name(name).unwrap();
        }
        for i in 0..r.below(5) {
            let key = format!("k{i}{}", random_string(r, 8));
            let value = if r.chance(40) {
                vec![7u8; 64 * 1024]
            } else {
                let n = r.below(50) as usize;
                r.bytes(n)
            };
            d = d.with_metadata(key, value).unwrap();
        }
        return d;
    }
}

#[test]
fn random_descriptors_round_trip_exactly() {
    let mut r = Rng::new(seed());
    for i in 0..3000 {
        let d = random_descriptor(&mut r);
        let enc = d.encode().unwrap();
        let dec = TensorDescriptor::decode(&enc).unwrap_or_else(|e| panic!("case {i}: {d:?}: {e}"));
        assert_eq!(dec, d, "case {i}");
        assert_eq!(dec.encode().unwrap(), enc, "case {i}");
        let _ = d.to_string();
        // Every strict prefix is rejected (the encoding is self-delimiting).
        for cut in [0, 1, 4, 8, 23, enc.len() / 2, enc.len() - 1] {
            if cut < enc.len() {
                assert!(TensorDescriptor::decode(&enc[..cut]).is_err(), "case {i} prefix {cut}");
            }
        }
        // Trailing bytes are rejected.
        let mut longer = enc.clone();
        longer.push(0);
        assert!(TensorDescriptor::decode(&longer).is_err(), "case {i} trailing byte");
    }
}

#[test]
fn random_garbage_never_panics() {
    let mut r = Rng::new(seed() ^ 0xBAD);
    for _ in 0..20_000 {
        let len = r.below(300) as usize;
        let mut b = r.bytes(len);
        if r.chance(2) && b.len() >= 8 {
            // Get past the magic and version so the deeper fields are exercised.
            b[..6].copy_from_slice(b"HRDS\x01\x00");
        }
        if let Ok(d) = TensorDescriptor::decode(&b) {
            assert_eq!(d.encode().unwrap(), b, "accepted garbage must be canonical");
        }
    }
}

#[test]
fn mutated_encodings_are_rejected_or_canonical() {
    let mut r = Rng::new(seed() ^ 0x0DD);
    let mut accepted = 0;
    for _ in 0..1500 {
        let enc = random_descriptor(&mut r).encode().unwrap();
        for _ in 0..8 {
            let mut m = enc.clone();
            mutate(&mut r, &mut m);
            if let Ok(d) = TensorDescriptor::decode(&m) {
                assert_eq!(d.encode().unwrap(), m, "an accepted mutation must be canonical");
                accepted += 1;
            }
        }
    }
    // Some mutations land in free-form bytes (names, metadata values, dims) and stay valid.
    assert!(accepted > 0);
}

/// One random change to an encoding: a bit flip, a byte set, a cut, an inserted or removed
/// byte, or a huge length or count.
fn mutate(r: &mut Rng, m: &mut Vec<u8>) {
    match r.below(6) {
        0 => {
            let bit = r.below(m.len() as u64 * 8) as usize;
            m[bit / 8] ^= 1 << (bit % 8);
        }
        1 => {
            let at = r.below(m.len() as u64) as usize;
            m[at] = [0x00, 0xFF, 0x7F, 0x80, 0x20, 0x21][r.below(6) as usize];
        }
        2 => m.truncate(r.below(m.len() as u64) as usize),
        3 => {
            let at = r.below(m.len() as u64 + 1) as usize;
            m.insert(at, r.next_u64() as u8);
        }
        4 => {
            let at = r.below(m.len() as u64) as usize;
            m.remove(at);
        }
        _ => {
            // A length or count field set to something huge.
            let at = r.below(m.len().saturating_sub(4) as u64) as usize;
            m[at..at + 4].copy_from_slice(&(r.next_u64() as u32 | 0x8000_0000).to_le_bytes());
        }
    }
}

/// What a stream decoder made of a frame: its descriptor, or its error's kind and message.
type Outcome = Result<TensorDescriptor, (ErrorKind, String)>;

/// A stream of frames with these descriptor bytes, each followed by as many zero payload bytes
/// as a full decode of it declares (none when that fails or exceeds `max_tensor_bytes`), read
/// by one new decoder with those limits: the outcome of the last frame.
fn last_outcome(opts: ReaderOptions, descs: &[&[u8]]) -> Outcome {
    let mut s = b"HRRYSTRM".to_vec();
    s.extend_from_slice(&1u16.to_le_bytes());
    s.extend_from_slice(&0u16.to_le_bytes());
    s.extend_from_slice(&crc32c(&s).to_le_bytes());
    let frame_header = |s: &mut Vec<u8>, kind: &[u8; 4], len: usize, dcrc: u32| {
        let start = s.len();
        s.extend_from_slice(kind);
        s.extend_from_slice(&0u32.to_le_bytes());
        s.extend_from_slice(&(len as u64).to_le_bytes());
        s.extend_from_slice(&dcrc.to_le_bytes());
        let c = crc32c(&s[start..]);
        s.extend_from_slice(&c.to_le_bytes());
    };
    for d in descs {
        frame_header(&mut s, b"HRTN", d.len(), crc32c(d));
        s.extend_from_slice(d);
        if let Ok(t) = TensorDescriptor::decode(d) {
            if t.total_buffer_bytes() <= opts.max_tensor_bytes {
                s.resize(s.len() + t.total_buffer_bytes() as usize, 0);
            }
        }
    }
    frame_header(&mut s, b"HREN", 0, 0);
    let mut dec = StreamDecoder::new(opts).unwrap();
    let (mut pos, mut out) = (0, Vec::new());
    loop {
        match dec.poll() {
            Ok(Decoded::Tensor(t)) => out.push(Ok(t.descriptor)),
            Ok(Decoded::End) => break,
            Ok(Decoded::NeedInput) => {
                let dst = dec.input_buffer().unwrap();
                let n = dst.len().min(s.len() - pos);
                dst[..n].write_copy_of_slice(&s[pos..pos + n]);
                pos += n;
                dec.commit(n).unwrap();
            }
            Err(e) => {
                out.push(Err((e.kind(), e.to_string())));
                break;
            }
        }
    }
    assert_eq!(out.len(), descs.len(), "one outcome per frame");
    out.pop().unwrap()
}

/// A stream decoder reads a descriptor that follows a similar one (the same structure under
/// other strings, possibly mutated anywhere) from the last one's template: the result is the
/// descriptor, or the error, that a decoder reading it first gives.
#[test]
fn a_descriptor_after_a_similar_one_decodes_as_on_its_own() {
    let mut r = Rng::new(seed() ^ 0x7E3);
    let opts = ReaderOptions { max_tensor_bytes: 1 << 16, ..ReaderOptions::default() };
    let (mut cases, mut ok, mut failed) = (0, 0, 0);
    while cases < 3000 {
        let prev = random_descriptor(&mut r);
        if prev.total_buffer_bytes() > opts.max_tensor_bytes {
            continue;
        }
        cases += 1;
        let mut next = prev.clone();
        let name = match r.below(4) {
            0 => prev.name().map(str::to_owned),
            1 => None,
            _ => Some(random_string(&mut r, 12)),
        };
        let entries: Vec<(String, Vec<u8>)> = match r.below(3) {
            // The same keys with other values.
            0 => prev.metadata().iter().map(|(k, v)| (k.clone(), r.bytes(v.len().min(20)))).collect(),
            1 => prev.metadata().to_vec(),
            _ => (0..r.below(3))
                .map(|k| {
                    let n = r.below(9) as usize;
                    (format!("m{k}"), r.bytes(n))
                })
                .collect(),
        };
        let pairs: Vec<(&str, &[u8])> = entries.iter().map(|(k, v)| (k.as_str(), v.as_slice())).collect();
        next.renew_strings(name.as_deref(), pairs.iter().copied()).unwrap();
        let mut m = next.encode().unwrap();
        if r.chance(2) {
            mutate(&mut r, &mut m);
        }
        let prev_enc = prev.encode().unwrap();
        let after = last_outcome(opts, &[&prev_enc, &m]);
        assert_eq!(after, last_outcome(opts, &[&m]), "case {cases}: {prev:?} then {m:?}");
        if after.is_ok() {
            ok += 1
        } else {
            failed += 1
        }
    }
    // Both kinds of outcome are exercised.
    assert!(ok > 500 && failed > 500, "{ok} accepted, {failed} refused");
}

/// `renew_strings` gives what a descriptor of the same structure with those strings is, and a
/// refused set of strings leaves the descriptor as it was.
#[test]
fn renewed_strings_equal_a_descriptor_built_with_them() {
    let mut r = Rng::new(seed() ^ 0x5712);
    let mut buf = Vec::new();
    for i in 0..2000 {
        let mut d = random_descriptor(&mut r);
        let name = if r.chance(4) { None } else { Some(random_string(&mut r, 12)) };
        let entries: Vec<(String, Vec<u8>)> = (0..r.below(4))
            .map(|k| (format!("{}{k}", random_string(&mut r, 3)), vec![k as u8; r.below(9) as usize]))
            .collect();
        // The expectation: `d` without strings (by the builder's own path: rebuilt from its
        // encoding with the name and metadata blocks cleared), then exactly these strings.
        let none: [(&str, &[u8]); 0] = [];
        let mut expected = d.clone();
        expected.renew_strings(None, none.iter().copied()).unwrap();
        assert!(expected.name().is_none() && expected.metadata().is_empty(), "case {i}");
        if let Some(n) = &name {
            expected = expected.with_name(n.clone()).unwrap();
        }
        for (k, v) in &entries {
            expected = expected.with_metadata(k.clone(), v.clone()).unwrap();
        }
        let pairs: Vec<(&str, &[u8])> = entries.iter().map(|(k, v)| (k.as_str(), v.as_slice())).collect();
        d.renew_strings(name.as_deref(), pairs.iter().copied()).unwrap_or_else(|e| panic!("case {i}: {e}"));
        assert_eq!(d, expected, "case {i}");
        d.encode_into(&mut buf).unwrap();
        assert_eq!(buf, expected.encode().unwrap(), "case {i}");
        // Refusals: a duplicate key, an empty key, a NUL in the name; the descriptor is unchanged.
        let before = d.clone();
        let dup: Vec<(&str, &[u8])> = vec![("k", b"1"), ("k", b"2")];
        assert!(d.renew_strings(Some("ok"), dup.into_iter()).is_err(), "case {i}");
        let empty: Vec<(&str, &[u8])> = vec![("", b"1")];
        assert!(d.renew_strings(None, empty.into_iter()).is_err(), "case {i}");
        assert!(d.renew_strings(Some("a\0b"), none.iter().copied()).is_err(), "case {i}");
        assert_eq!(d, before, "case {i}: a refusal changed the descriptor");
    }
}

/// Every outcome of a stream of these frames (as in `last_outcome`) read by one decoder fed at
/// most `piece` bytes per commit, up to the first error.
fn all_outcomes(opts: ReaderOptions, descs: &[Vec<u8>], piece: usize) -> Vec<Outcome> {
    let mut s = b"HRRYSTRM".to_vec();
    s.extend_from_slice(&1u16.to_le_bytes());
    s.extend_from_slice(&0u16.to_le_bytes());
    s.extend_from_slice(&crc32c(&s).to_le_bytes());
    let frame_header = |s: &mut Vec<u8>, kind: &[u8; 4], len: usize, dcrc: u32| {
        let start = s.len();
        s.extend_from_slice(kind);
        s.extend_from_slice(&0u32.to_le_bytes());
        s.extend_from_slice(&(len as u64).to_le_bytes());
        s.extend_from_slice(&dcrc.to_le_bytes());
        let c = crc32c(&s[start..]);
        s.extend_from_slice(&c.to_le_bytes());
    };
    for d in descs {
        frame_header(&mut s, b"HRTN", d.len(), crc32c(d));
        s.extend_from_slice(d);
        if let Ok(t) = TensorDescriptor::decode(d) {
            if t.total_buffer_bytes() <= opts.max_tensor_bytes {
                s.resize(s.len() + t.total_buffer_bytes() as usize, 0);
            }
        }
    }
    frame_header(&mut s, b"HREN", 0, 0);
    let mut dec = StreamDecoder::new(opts).unwrap();
    let (mut pos, mut out) = (0, Vec::new());
    loop {
        match dec.poll() {
            Ok(Decoded::Tensor(t)) => out.push(Ok(t.descriptor)),
            Ok(Decoded::End) => break,
            Ok(Decoded::NeedInput) => {
                let dst = dec.input_buffer().unwrap();
                let n = dst.len().min(s.len() - pos).min(piece);
                dst[..n].write_copy_of_slice(&s[pos..pos + n]);
                pos += n;
                dec.commit(n).unwrap();
            }
            Err(e) => {
                out.push(Err((e.kind(), e.to_string())));
                break;
            }
        }
    }
    out
}

/// Chains of up to seven frames, each derived from the last accepted one (other names, none,
/// names up to 300 bytes, other metadata values, entries dropped or added), a third of them
/// mutated anywhere, fed in pieces of 1, 7, 64 bytes or whole: every frame's outcome, value or
/// error, is what a new decoder reading that frame alone gives.
#[test]
fn a_chain_of_similar_descriptors_decodes_frame_by_frame_as_each_alone() {
    let mut r = Rng::new(seed() ^ 0xC4A1);
    let opts = ReaderOptions { max_tensor_bytes: 1 << 16, ..ReaderOptions::default() };
    let (mut ok, mut failed) = (0, 0);
    for case in 0..1500 {
        let first = random_descriptor(&mut r);
        if first.total_buffer_bytes() > opts.max_tensor_bytes {
            continue;
        }
        let mut frames = vec![first.encode().unwrap()];
        let mut cur = first;
        for _ in 0..r.below(6) + 1 {
            let mut next = cur.clone();
            let name = match r.below(5) {
                0 => cur.name().map(str::to_owned),
                1 => None,
                2 => Some("x".repeat(r.below(300) as usize)),
                _ => Some(random_string(&mut r, 12)),
            };
            let entries: Vec<(String, Vec<u8>)> = match r.below(4) {
                0 => cur.metadata().iter().map(|(k, v)| (k.clone(), r.bytes(v.len().min(20)))).collect(),
                1 => cur.metadata().to_vec(),
                2 => Vec::new(),
                _ => (0..r.below(4))
                    .map(|k| {
                        let n = r.below(9) as usize;
                        (format!("m{k}"), r.bytes(n))
                    })
                    .collect(),
            };
            let pairs: Vec<(&str, &[u8])> = entries.iter().map(|(k, v)| (k.as_str(), v.as_slice())).collect();
            if next.renew_strings(name.as_deref(), pairs.iter().copied()).is_err() {
                continue;
            }
            let mut m = next.encode().unwrap();
            let mutated = r.chance(3);
            if mutated {
                mutate(&mut r, &mut m);
            }
            frames.push(m);
            if !mutated {
                cur = next;
            } else if let Ok(d) = TensorDescriptor::decode(frames.last().unwrap()) {
                cur = d;
            }
        }
        let piece = [1usize, 7, 64, usize::MAX][r.below(4) as usize];
        let outs = all_outcomes(opts, &frames, piece);
        for (i, o) in outs.iter().enumerate() {
            let alone = all_outcomes(opts, &frames[i..i + 1], usize::MAX);
            assert_eq!(o, &alone[0], "case {case} frame {i}");
            if o.is_ok() {
                ok += 1
            } else {
                failed += 1
            }
        }
    }
    assert!(ok > 1000 && failed > 300, "{ok} accepted, {failed} refused");
}

/// After a descriptor with a name of the maximum length (with and without metadata), one that
/// differs only around the name block: another maximal name, two-byte characters, a short
/// name, a name one byte over the limit, invalid UTF-8 or a NUL at the start, middle and end,
/// a length one short or long, a metadata count of 0 or 2: each decodes, or fails, exactly as
/// on its own.
#[test]
fn names_at_the_limit_after_a_template_decode_as_on_their_own() {
    let opts = ReaderOptions { max_tensor_bytes: 1 << 16, ..ReaderOptions::default() };
    let max = hurray_core::MAX_NAME_BYTES;
    let base = TensorDescriptor::dense(ElementType::Float32, Shape::new(vec![4]).unwrap()).unwrap();
    for md in [false, true] {
        let mk = |name: &str| {
            let mut d = base.clone().with_name(name).unwrap();
            if md {
                d = d.with_metadata("k", b"v".to_vec()).unwrap();
            }
            d.encode().unwrap()
        };
        let prev = mk(&"n".repeat(max));
        let at = prev.windows(4).position(|w| w == (max as u32).to_le_bytes()).unwrap();
        let mut cases: Vec<Vec<u8>> = vec![mk(&"m".repeat(max)), mk(&"é".repeat(max / 2)), mk("a")];
        // One byte over the limit.
        let mut over = prev.clone();
        over[at..at + 4].copy_from_slice(&(max as u32 + 1).to_le_bytes());
        over.insert(at + 4, b'x');
        cases.push(over);
        // Invalid UTF-8 at the start, middle and end; a NUL; a lone continuation byte.
        for (off, b) in [(0, 0xFF), (max / 2, 0xC3), (max - 1, 0xE2), (7, 0), (9, 0x80)] {
            let mut m = prev.clone();
            m[at + 4 + off] = b;
            cases.push(m);
        }
        // Length shorter or longer by one with the same bytes.
        for delta in [-1i64, 1] {
            let mut m = prev.clone();
            m[at..at + 4].copy_from_slice(&((max as i64 + delta) as u32).to_le_bytes());
            cases.push(m);
        }
        // Metadata count changes.
        if md {
            let mut m = prev.clone();
            let mc = at + 4 + max;
            m[mc..mc + 4].copy_from_slice(&0u32.to_le_bytes());
            cases.push(m.clone());
            m[mc..mc + 4].copy_from_slice(&2u32.to_le_bytes());
            cases.push(m);
        }
        for (i, c) in cases.iter().enumerate() {
            let chain = all_outcomes(opts, &[prev.clone(), c.clone()], usize::MAX);
            let alone = all_outcomes(opts, std::slice::from_ref(c), usize::MAX);
            assert!(chain[0].is_ok());
            assert_eq!(chain[1], alone[0], "md {md} case {i}");
        }
    }
}
