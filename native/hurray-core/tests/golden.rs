//! Golden vectors (src/golden/, format in src/golden/README.md): this test writes them from
//! the corpus in `common` and fails when the committed files differ. Regenerate after an
//! intended format change with `HURRAY_REGEN_GOLDEN=1 cargo test --offline -p hurray-core
//! --test golden`, and say why in the commit.
//!
//! It also reads the committed streams back, cuts them at every byte and flips every bit, and
//! reads the committed HRRYFILE containers back through both container readers (read_at and
//! span).

mod common;

use std::fmt::Write as _;

use common::*;
use hurray_core::crc32c::crc32c;
use hurray_core::file::{FileReader, FileReaderOptions, Span};
use hurray_core::{
    DeviceTag, ErrorKind, FileWriter, FileWriterOptions, LayoutDescriptor, Quantization, ReaderOptions, SyncMode,
};

const CHECKSUMS: &str = "stream_v1_checksums.hrry";
const PLAIN: &str = "stream_v1_plain.hrry";
const EMPTY: &str = "stream_v1_empty.hrry";
const MANIFEST: &str = "manifest.json";
const CONTAINER: &str = "file_v1.hrryfile";
const CONTAINER_PAGED: &str = "file_v1_paged.hrryfile";

fn hex(b: &[u8]) -> String {
    b.iter().map(|x| format!("{x:02x}")).collect()
}

fn json_str(s: &str) -> String {
    let mut o = String::from("\"");
    for c in s.chars() {
        match c {
            '"' => o.push_str("\\\""),
            '\\' => o.push_str("\\\\"),
            c if (c as u32) < 0x20 => write!(o, "\\u{:04x}", c as u32).unwrap(),
            c => o.push(c),
        }
    }
    o.push('"');
    o
}

fn device_name(d: DeviceTag) -> &'static str {
    match d {
        DeviceTag::Cpu => "cpu",
        DeviceTag::Cuda => "cuda",
        DeviceTag::CudaHost => "cuda_host",
        DeviceTag::Rocm => "rocm",
        DeviceTag::Metal => "metal",
        DeviceTag::Vulkan => "vulkan",
        DeviceTag::Ipc => "ipc",
    }
}

fn sync_name(s: SyncMode) -> &'static str {
    match s {
        SyncMode::ProducerSynced => "producer_synced",
        SyncMode::Event => "event",
        SyncMode::ConsumerStream => "consumer_stream",
    }
}

/// A tensor object of the manifest; `offsets` (containers only) adds each payload's absolute
/// file offset to its buffer object.
fn tensor_json(index: usize, it: &Item, offsets: Option<&[u64]>) -> String {
    let d = &it.desc;
    let mut o = String::new();
    let dims: Vec<String> = d.shape().dims().iter().map(|x| x.to_string()).collect();
    write!(o, "        {{\n          \"index\": {index},\n").unwrap();
    let name = d.name().map(json_str).unwrap_or_else(|| "null".into());
    writeln!(o, "          \"name\": {name},").unwrap();
    write!(
        o,
        "          \"dtype\": \"{}\",\n          \"dtype_code\": {},\n",
        d.element_type().name(),
        d.element_type().code()
    )
    .unwrap();
    write!(
        o,
        "          \"shape\": [{}],\n          \"element_count\": {},\n",
        dims.join(", "),
        d.shape().element_count()
    )
    .unwrap();
    write!(o, "          \"layout\": \"{}\",\n          \"layout_code\": {},\n", d.layout().name(), d.layout().code())
        .unwrap();
    let strides = match d.layout() {
        LayoutDescriptor::Strided(s) => format!("[{}]", s.iter().map(|x| x.to_string()).collect::<Vec<_>>().join(", ")),
        _ => "null".into(),
    };
    write!(o, "          \"strides\": {strides},\n          \"byte_offset\": {},\n", d.byte_offset()).unwrap();
    let q = match d.quantization() {
        None => "null".to_string(),
        Some(q) => {
            let (kind, axis, scale, bias) = match *q {
                Quantization::PerTensorAffine { scale, bias, .. } => ("per_tensor_affine", 0, scale, bias),
                Quantization::PerChannelAffine { axis, .. } => ("per_channel_affine", axis, 0.0, 0.0),
                Quantization::Cast { .. } => ("cast", 0, 0.0, 0.0),
                Quantization::Block(b) => (b.kind.name(), b.axis, 0.0, 0.0),
            };
            format!(
                "{{\"kind\": \"{kind}\", \"kind_code\": {}, \"dequantized\": \"{}\", \"dequantized_code\": {}, \"axis\": {axis}, \"scale\": {scale:?}, \"bias\": {bias:?}}}",
                q.code(),
                q.dequantized().name(),
                q.dequantized().code()
            )
        }
    };
    writeln!(o, "          \"quantization\": {q},").unwrap();
    let md: Vec<String> = d
        .metadata()
        .iter()
        .map(|(k, v)| format!("{{\"key\": {}, \"value_hex\": \"{}\"}}", json_str(k), hex(v)))
        .collect();
    writeln!(o, "          \"metadata\": [{}],", md.join(", ")).unwrap();
    writeln!(o, "          \"descriptor_hex\": \"{}\",", hex(&d.encode().unwrap())).unwrap();
    o.push_str("          \"buffers\": [\n");
    let bufs: Vec<String> = d
        .buffers()
        .iter()
        .zip(&it.payloads)
        .enumerate()
        .map(|(b, (h, p))| {
            let offset = offsets.map(|o| format!("\"offset\": {}, ", o[b])).unwrap_or_default();
            format!(
                "            {{{offset}\"byte_size\": {}, \"alignment\": {}, \"device\": \"{}\", \"device_tag\": {}, \"sync_mode\": \"{}\", \"sync_mode_code\": {}, \"crc32c\": \"{:08x}\", \"hex\": \"{}\"}}",
                h.byte_size(),
                h.alignment(),
                device_name(h.device_tag()),
                h.device_tag().code(),
                sync_name(h.sync_mode()),
                h.sync_mode().code(),
                crc32c(p),
                hex(p)
            )
        })
        .collect();
    o.push_str(&bufs.join(",\n"));
    o.push_str("\n          ]\n        }");
    o
}

fn stream_json(file: &str, bytes: &[u8], checksums: bool, items: &[Item]) -> String {
    let mut o = String::new();
    write!(
        o,
        "    {{\n      \"file\": \"{file}\",\n      \"bytes\": {},\n      \"crc32c\": \"{:08x}\",\n",
        bytes.len(),
        crc32c(bytes)
    )
    .unwrap();
    write!(
        o,
        "      \"payload_checksums\": {checksums},\n      \"tensor_count\": {},\n      \"tensors\": [",
        items.len()
    )
    .unwrap();
    let ts: Vec<String> = items.iter().enumerate().map(|(i, it)| tensor_json(i, it, None)).collect();
    if ts.is_empty() {
        o.push_str("]\n    }");
    } else {
        o.push('\n');
        o.push_str(&ts.join(",\n"));
        o.push_str("\n      ]\n    }");
    }
    o
}

/// Every golden file as (name, bytes), written by the current code.
fn golden_files() -> Vec<(&'static str, Vec<u8>)> {
    let (g, p) = (golden_items(), plain_items());
    let streams = [
        (CHECKSUMS, encode_stream(&g, true), true, g),
        (PLAIN, encode_stream(&p, false), false, p),
        (EMPTY, encode_stream(&[], false), false, Vec::new()),
    ];
    let mut manifest = String::from("{\n  \"format\": \"hurray-golden-manifest\",\n  \"manifest_version\": 1,\n  \"stream_version\": 1,\n  \"descriptor_version\": 1,\n  \"streams\": [\n");
    let js: Vec<String> = streams.iter().map(|(f, b, c, items)| stream_json(f, b, *c, items)).collect();
    manifest.push_str(&js.join(",\n"));
    manifest.push_str("\n  ],\n  \"containers\": [\n");
    let containers = golden_containers();
    let cs: Vec<String> = containers.iter().map(container_json).collect();
    manifest.push_str(&cs.join(",\n"));
    manifest.push_str("\n  ]\n}\n");
    let mut files: Vec<(&'static str, Vec<u8>)> = streams.into_iter().map(|(f, b, _, _)| (f, b)).collect();
    files.extend(containers.into_iter().map(|c| (c.file, c.bytes)));
    files.push((MANIFEST, manifest.into_bytes()));
    files
}

/// A golden HRRYFILE container (docs/spec/hrryfile.md): its corpus, metadata, writer options
/// and the bytes the writer produced.
struct Container {
    file: &'static str,
    items: Vec<Item>,
    metadata: Vec<(&'static str, Vec<u8>)>,
    opts: FileWriterOptions,
    bytes: Vec<u8>,
}

/// The stream corpora with every tensor named (a container's keys are names): the unnamed
/// ones become `unnamed/<stream index>`.
fn named_items(items: Vec<Item>) -> Vec<Item> {
    items
        .into_iter()
        .enumerate()
        .map(|(i, mut it)| {
            if it.desc.name().is_none() {
                it.desc = it.desc.with_name(format!("unnamed/{i}")).unwrap();
            }
            it
        })
        .collect()
}

/// `file_v1.hrryfile`: the checksummed stream's 35 tensors with payload checksums and the
/// default 64-byte minimum alignment (the IPC/CUDA/ROCm buffers still sit at 4096/8192), plus
/// text, binary and empty file metadata. `file_v1_paged.hrryfile`: the plain stream's 4
/// tensors without payload checksums, every payload page-aligned (4096).
fn golden_containers() -> Vec<Container> {
    let meta = vec![
        ("created_by", b"hurray golden vectors".to_vec()),
        ("binary", vec![0x00, 0x01, 0xFF, 0x80]),
        ("empty", Vec::new()),
        ("ünïcødé", "名前".as_bytes().to_vec()),
    ];
    let specs = [
        (
            CONTAINER,
            named_items(golden_items()),
            meta,
            FileWriterOptions { payload_checksums: true, min_payload_alignment: 64 },
        ),
        (
            CONTAINER_PAGED,
            named_items(plain_items()),
            vec![("page_size", b"4096".to_vec())],
            FileWriterOptions { payload_checksums: false, min_payload_alignment: 4096 },
        ),
    ];
    specs
        .into_iter()
        .map(|(file, items, metadata, opts)| {
            let mut w = FileWriter::new(Vec::new(), opts).unwrap();
            for it in &items {
                w.add_tensor(&it.desc, &it.slices()).unwrap();
            }
            for (k, v) in &metadata {
                w.set_metadata(k, v).unwrap();
            }
            let size = w.finish().unwrap();
            let bytes = w.into_transport();
            assert_eq!(bytes.len() as u64, size);
            Container { file, items, metadata, opts, bytes }
        })
        .collect()
}

/// The items of a container in index order (sorted by name bytes).
fn by_name(items: &[Item]) -> Vec<&Item> {
    let mut v: Vec<&Item> = items.iter().collect();
    v.sort_by(|a, b| a.desc.name().unwrap().as_bytes().cmp(b.desc.name().unwrap().as_bytes()));
    v
}

fn container_json(c: &Container) -> String {
    let mut r = FileReader::open(Span::new(&c.bytes), FileReaderOptions::default()).unwrap();
    let mut o = String::new();
    write!(
        o,
        "    {{\n      \"file\": \"{}\",\n      \"bytes\": {},\n      \"crc32c\": \"{:08x}\",\n",
        c.file,
        c.bytes.len(),
        crc32c(&c.bytes)
    )
    .unwrap();
    write!(
        o,
        "      \"container_version\": 1,\n      \"payload_checksums\": {},\n      \"min_payload_alignment\": {},\n",
        c.opts.payload_checksums, c.opts.min_payload_alignment
    )
    .unwrap();
    let mut md: Vec<&(&str, Vec<u8>)> = c.metadata.iter().collect();
    md.sort_by(|a, b| a.0.as_bytes().cmp(b.0.as_bytes()));
    let md: Vec<String> =
        md.iter().map(|(k, v)| format!("{{\"key\": {}, \"value_hex\": \"{}\"}}", json_str(k), hex(v))).collect();
    writeln!(o, "      \"metadata\": [{}],", md.join(", ")).unwrap();
    write!(o, "      \"tensor_count\": {},\n      \"tensors\": [\n", c.items.len()).unwrap();
    let ts: Vec<String> = by_name(&c.items)
        .into_iter()
        .enumerate()
        .map(|(i, it)| {
            let e = r.entry(i as u64).unwrap();
            assert_eq!(e.descriptor(), &it.desc);
            let offsets: Vec<u64> = e.buffers().iter().map(|b| b.offset).collect();
            tensor_json(i, it, Some(&offsets))
        })
        .collect();
    o.push_str(&ts.join(",\n"));
    o.push_str("\n      ]\n    }");
    o
}

fn committed(name: &str) -> Vec<u8> {
    let path = golden_dir().join(name);
    std::fs::read(&path).unwrap_or_else(|e| panic!("{}: {e} (regenerate with HURRAY_REGEN_GOLDEN=1)", path.display()))
}

#[test]
fn golden_files_are_what_the_code_writes() {
    let regen = std::env::var("HURRAY_REGEN_GOLDEN").is_ok_and(|v| v == "1");
    let mut drift = Vec::new();
    for (name, bytes) in golden_files() {
        let path = golden_dir().join(name);
        if regen {
            // Write-then-rename, so the other tests of this run never see a half-written file.
            let tmp = path.with_extension("tmp");
            std::fs::write(&tmp, &bytes).unwrap();
            std::fs::rename(&tmp, &path).unwrap();
            continue;
        }
        if std::fs::read(&path).ok().as_deref() != Some(&bytes[..]) {
            drift.push(name);
        }
    }
    assert!(
        drift.is_empty(),
        "golden files differ from what the code writes: {drift:?}. If the format change is \
         intended, run HURRAY_REGEN_GOLDEN=1 cargo test --offline -p hurray-core --test golden \
         and commit src/golden/"
    );
}

#[test]
fn golden_files_are_deterministic() {
    assert_eq!(golden_files(), golden_files());
}

#[test]
fn committed_streams_read_back_as_the_corpus() {
    for (name, items) in [(CHECKSUMS, golden_items()), (PLAIN, plain_items()), (EMPTY, Vec::new())] {
        let bytes = committed(name);
        for chunk in [1, 7, usize::MAX] {
            let (read, end) = read_bytes(&bytes, chunk, ReaderOptions::default());
            end.unwrap_or_else(|e| panic!("{name}: {e}"));
            assert_same(&read, &items);
        }
    }
    // The corpus covers every element type.
    let items = golden_items();
    for et in hurray_core::ElementType::ALL.into_iter().filter(|t| t.min_version() == 1) {
        assert!(items.iter().any(|it| it.desc.element_type() == et), "{et:?} missing");
    }
}

#[test]
fn committed_containers_read_back_as_the_corpus() {
    for c in golden_containers() {
        let bytes = committed(c.file);
        assert_eq!(bytes, c.bytes, "{}", c.file);
        let want = by_name(&c.items);
        // Through read_at (payload checksums checked when stored) and over a span.
        let mut io = FileReader::open(Span::new(&bytes), FileReaderOptions::default()).unwrap();
        let mut span =
            FileReader::open_span(&bytes, FileReaderOptions { verify_payloads: true, ..FileReaderOptions::default() })
                .unwrap();
        io.verify().unwrap();
        assert_eq!(io.entry_count(), want.len() as u64);
        for (i, it) in want.iter().enumerate() {
            let name = it.desc.name().unwrap();
            let e = io.find(name.as_bytes()).unwrap().expect(name);
            assert_eq!(e.index(), i as u64);
            assert_eq!(e.descriptor(), &it.desc);
            for (b, loc) in e.buffers().iter().enumerate() {
                assert!(loc.offset.is_multiple_of(it.desc.buffers()[b].alignment().max(c.opts.min_payload_alignment)));
                assert_eq!(loc.crc32c, c.opts.payload_checksums.then(|| crc32c(&it.payloads[b])));
            }
            let t = io.read_tensor(&e).unwrap();
            let got: Vec<&[u8]> = t.buffers.iter().map(|b| b.as_slice()).collect();
            assert_eq!(got, it.slices(), "{name}");
            let se = span.entry(i as u64).unwrap();
            let st = span.span_tensor(&se).unwrap();
            for (b, sb) in st.buffers.iter().enumerate() {
                assert_eq!(sb.as_slice(), &it.payloads[b][..], "{name} buffer {b}");
            }
        }
        let mut md: Vec<(String, Vec<u8>)> = c.metadata.iter().map(|(k, v)| (k.to_string(), v.clone())).collect();
        md.sort_by(|a, b| a.0.as_bytes().cmp(b.0.as_bytes()));
        assert_eq!(io.metadata().unwrap(), &md[..]);
    }
}

#[test]
fn every_prefix_of_a_golden_stream_is_truncated() {
    for name in [CHECKSUMS, PLAIN, EMPTY] {
        let bytes = committed(name);
        for cut in 0..bytes.len() {
            let (_, end) = read_bytes(&bytes[..cut], usize::MAX, ReaderOptions::default());
            let e = end.expect_err("a strict prefix must not end cleanly");
            assert_eq!(e.kind(), ErrorKind::Truncated, "{name} cut at {cut}: {e}");
        }
        read_bytes(&bytes, usize::MAX, ReaderOptions::default()).1.unwrap();
    }
}

#[test]
fn every_bit_flip_of_the_checksummed_stream_is_detected() {
    let bytes = committed(CHECKSUMS);
    let mut flipped = bytes.clone();
    for bit in 0..bytes.len() * 8 {
        flipped[bit / 8] ^= 1 << (bit % 8);
        let (_, end) = read_bytes(&flipped, usize::MAX, ReaderOptions::default());
        let e = end.expect_err(&format!("flip of bit {bit} went undetected"));
        assert!(
            matches!(
                e.kind(),
                ErrorKind::Corrupt | ErrorKind::InvalidMagic | ErrorKind::VersionMismatch | ErrorKind::Unsupported
            ),
            "bit {bit}: {e}"
        );
        flipped[bit / 8] ^= 1 << (bit % 8);
    }
}

#[test]
fn every_bit_flip_of_the_plain_stream_is_detected_or_only_changes_payload_bytes() {
    let bytes = committed(PLAIN);
    let items = plain_items();
    let mut flipped = bytes.clone();
    let (mut detected, mut undetected) = (0, 0);
    for bit in 0..bytes.len() * 8 {
        flipped[bit / 8] ^= 1 << (bit % 8);
        let (read, end) = read_bytes(&flipped, usize::MAX, ReaderOptions::default());
        match end {
            Err(e) => {
                assert_ne!(e.kind(), ErrorKind::Truncated, "bit {bit}: a flip cannot shorten the stream");
                detected += 1;
            }
            Ok(()) => {
                // Still a valid stream: the structure is intact, only one payload bit differs.
                assert_eq!(read.len(), items.len(), "bit {bit}");
                let mut diffs = 0;
                for ((d, bufs), it) in read.iter().zip(&items) {
                    assert_eq!(d, &it.desc, "bit {bit}: a descriptor changed undetected");
                    for (a, b) in bufs.iter().zip(&it.payloads) {
                        diffs += a.iter().zip(b).map(|(x, y)| (x ^ y).count_ones()).sum::<u32>();
                    }
                }
                assert_eq!(diffs, 1, "bit {bit}");
                undetected += 1;
            }
        }
        flipped[bit / 8] ^= 1 << (bit % 8);
    }
    let payload_bits: usize = items.iter().flat_map(|it| &it.payloads).map(|p| p.len() * 8).sum();
    assert_eq!(undetected, payload_bits, "exactly the payload bits go undetected without checksums");
    assert!(detected > 0);
}
