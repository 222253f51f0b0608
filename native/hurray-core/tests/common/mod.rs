//! Test support shared by hurray-core's and hurray-ffi's integration tests (the latter include
//! this file with `#[path]`): a seeded xorshift generator, the golden tensor corpus, typed
//! payload bytes, and in-memory transports that misbehave on request.
#![allow(dead_code)]

use std::mem::MaybeUninit;
use std::path::PathBuf;

use hurray_core::stream::SliceSource;
use hurray_core::{
    BufferHandle, DeviceTag, ElementType, Error, ErrorKind, LayoutDescriptor, Quantization, ReadTransport,
    ReaderOptions, Result, Shape, StreamReader, StreamWriter, SyncMode, TensorDescriptor, WriteTransport,
    WriterOptions,
};

// The one seeded generator of the Rust tests (unit tests include the same file from src/).
#[path = "rng.rs"]
mod rng;
pub use rng::Rng;

/// A tensor to write: its descriptor and one payload per buffer-table entry.
#[derive(Clone, Debug)]
pub struct Item {
    pub desc: TensorDescriptor,
    pub payloads: Vec<Vec<u8>>,
}

impl Item {
    pub fn slices(&self) -> Vec<&[u8]> {
        self.payloads.iter().map(|p| p.as_slice()).collect()
    }
}

pub fn handle(size: u64, align: u64, dev: DeviceTag, sync: SyncMode) -> BufferHandle {
    BufferHandle::new(size, align, dev, sync).unwrap()
}

pub fn cpu(size: u64) -> BufferHandle {
    handle(size, 64, DeviceTag::Cpu, SyncMode::ProducerSynced)
}

pub fn descriptor(
    et: ElementType,
    dims: &[u64],
    byte_offset: u64,
    layout: LayoutDescriptor,
    buffers: Vec<BufferHandle>,
    quantization: Option<Quantization>,
) -> TensorDescriptor {
    TensorDescriptor::new(
        1,
        0,
        et,
        Shape::new(dims.to_vec()).unwrap(),
        byte_offset,
        layout,
        buffers,
        quantization,
        None,
        None,
        None,
    )
    .unwrap()
}

/// Deterministic, type-meaningful element bytes: `n` elements of `et`, little-endian, sub-byte
/// types packed low nibble first (an odd count leaves the last high nibble zero).
pub fn typed_payload(et: ElementType, n: u64) -> Vec<u8> {
    use ElementType::*;
    let n = n as usize;
    let mut out = Vec::new();
    if et.min_version() == 2 {
        // Version-2 types: codes (i·37 + 5) mod 2^w in a little-endian bit stream.
        let w = et.bit_width() as usize;
        out.resize(et.bytes_for(n as u64).unwrap() as usize, 0u8);
        for i in 0..n {
            let code = ((i * 37 + 5) % (1 << w)) as u16;
            let bit = i * w;
            let v = code << (bit % 8);
            out[bit / 8] |= v as u8;
            if bit % 8 + w > 8 {
                out[bit / 8 + 1] |= (v >> 8) as u8;
            }
        }
        return out;
    }
    for i in 0..n {
        let fi = i as f64;
        match et {
            Bool => out.push((i % 3 == 1) as u8),
            Int8 => out.push((i as i8).wrapping_mul(37).wrapping_sub(100) as u8),
            Uint8 => out.push((i as u8).wrapping_mul(53).wrapping_add(7)),
            Int16 => out.extend_from_slice(&((i as i16) * 1234 - 3000).to_le_bytes()),
            Uint16 => out.extend_from_slice(&((i as u16).wrapping_mul(40503)).to_le_bytes()),
            Int32 => out.extend_from_slice(&((i as i32) * -1_000_003 + 17).to_le_bytes()),
            Uint32 => out.extend_from_slice(&((i as u32).wrapping_mul(2_654_435_761)).to_le_bytes()),
            Int64 => out.extend_from_slice(&((i as i64) * -9_007_199_254_740_993 + 5).to_le_bytes()),
            Uint64 => out.extend_from_slice(&((i as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15)).to_le_bytes()),
            Float16 => {
                // 1.0, -2.0, 0.5, 0.0, 65504 (max), -smallest subnormal, +inf, 0.333
                const H: [u16; 8] = [0x3C00, 0xC000, 0x3800, 0x0000, 0x7BFF, 0x8001, 0x7C00, 0x3555];
                out.extend_from_slice(&H[i % H.len()].to_le_bytes())
            }
            Bfloat16 => out.extend_from_slice(&(((fi * 1.5 - 2.0) as f32).to_bits() >> 16).to_le_bytes()[..2]),
            Float32 => out.extend_from_slice(&((fi * 0.25 - 1.0) as f32).to_le_bytes()),
            Float64 => out.extend_from_slice(&(fi * -1.5 + 1e10).to_le_bytes()),
            Complex64 => {
                out.extend_from_slice(&(fi as f32).to_le_bytes());
                out.extend_from_slice(&((-fi * 0.5) as f32).to_le_bytes());
            }
            Complex128 => {
                out.extend_from_slice(&(fi + 0.125).to_le_bytes());
                out.extend_from_slice(&(-fi * 3.0).to_le_bytes());
            }
            // 1.0, -1.0, 2.0, 0.0, 448 (max), smallest subnormal
            Float8E4m3fn => out.push([0x38, 0xB8, 0x40, 0x00, 0x7E, 0x01][i % 6]),
            // 1.0, -1.0, 2.0, 0.0, +inf, smallest subnormal
            Float8E5m2 => out.push([0x3C, 0xBC, 0x40, 0x00, 0x7C, 0x01][i % 6]),
            Float8E4m3fnuz | Float8E5m2fnuz | Float8E3m4 | Float6E2m3fn | Float6E3m2fn | Float4E2m1fn
            | Float8E8m0fnu => unreachable!("handled above"),
            Int4 | Uint4 => {
                let nib = if et == Int4 { ((i as i8 % 8) - 4) as u8 & 0x0F } else { (i as u8 * 5 + 1) & 0x0F };
                if i % 2 == 0 {
                    out.push(nib);
                } else {
                    *out.last_mut().unwrap() |= nib << 4;
                }
            }
        }
    }
    assert_eq!(out.len() as u64, et.bytes_for(n as u64).unwrap());
    out
}

/// A dense row-major CPU tensor with typed contents.
pub fn dense(et: ElementType, dims: &[u64]) -> Item {
    let desc = TensorDescriptor::dense(et, Shape::new(dims.to_vec()).unwrap()).unwrap();
    let p = typed_payload(et, desc.shape().element_count());
    Item { desc, payloads: vec![p] }
}

fn named(mut item: Item, name: &str) -> Item {
    item.desc = item.desc.with_name(name).unwrap();
    item
}

/// The tensors of `src/golden/stream_v1_checksums.hrry`, in stream order: every element type,
/// rank 0, zero-size dimensions, strided (incl. a negative stride), column-major, a byte offset,
/// non-CPU device tags and sync modes, a name with metadata, a non-ASCII name, and the three
/// quantization kinds (per-channel with its three buffers).
pub fn golden_items() -> Vec<Item> {
    use ElementType::*;
    let mut v = Vec::new();
    // The version-1 corpus: element types 0–18 only (its bytes are frozen).
    for et in ElementType::ALL.into_iter().filter(|t| t.min_version() == 1) {
        let dims: &[u64] = if et.is_sub_byte() { &[5] } else { &[2, 3] };
        v.push(named(dense(et, dims), &format!("dtype/{}", et.name())));
    }
    // Rank 0 (one element), unnamed.
    v.push(Item {
        desc: TensorDescriptor::dense(Float32, Shape::scalar()).unwrap(),
        payloads: vec![3.5f32.to_le_bytes().to_vec()],
    });
    // Zero-size dimensions: zero-byte payloads, one unnamed.
    v.push(dense(Float64, &[3, 0, 2]));
    v.push(named(dense(Int32, &[0]), "zero/int32"));
    // Strided: the transpose of a 2x3 row-major float32 matrix, strides in elements.
    {
        let p = typed_payload(Float32, 6);
        let d = descriptor(Float32, &[3, 2], 0, LayoutDescriptor::Strided(vec![1, 3]), vec![cpu(24)], None);
        v.push(Item { desc: d.with_name("strided/transposed").unwrap(), payloads: vec![p] });
    }
    // Strided with a negative stride: a reversed view, element 0 at byte 6 of an 8-byte buffer.
    {
        let p = typed_payload(Int16, 4);
        let d = descriptor(Int16, &[4], 6, LayoutDescriptor::Strided(vec![-1]), vec![cpu(8)], None);
        v.push(Item { desc: d.with_name("strided/reversed").unwrap(), payloads: vec![p] });
    }
    // Column-major.
    {
        let p = typed_payload(Int32, 6);
        let d = descriptor(Int32, &[2, 3], 0, LayoutDescriptor::ColumnMajor, vec![cpu(24)], None);
        v.push(Item { desc: d.with_name("column_major/int32").unwrap(), payloads: vec![p] });
    }
    // A byte offset into a larger buffer.
    {
        let mut p = vec![0xEEu8; 8];
        p.extend_from_slice(&typed_payload(Float32, 2));
        p.extend_from_slice(&[0xEE; 4]);
        let d = descriptor(Float32, &[2], 8, LayoutDescriptor::RowMajor, vec![cpu(20)], None);
        v.push(Item { desc: d.with_name("offset/float32").unwrap(), payloads: vec![p] });
    }
    // Device tags and sync modes other than the defaults (the stream carries bytes; the reader
    // allocates host memory at the declared alignment).
    {
        let p = typed_payload(Uint8, 100);
        let d = descriptor(
            Uint8,
            &[100],
            0,
            LayoutDescriptor::RowMajor,
            vec![handle(100, 4096, DeviceTag::Ipc, SyncMode::ProducerSynced)],
            None,
        );
        v.push(Item { desc: d.with_name("device/ipc_4096").unwrap(), payloads: vec![p] });
        let p = typed_payload(Float16, 4);
        let d = descriptor(
            Float16,
            &[4],
            0,
            LayoutDescriptor::RowMajor,
            vec![handle(8, 8192, DeviceTag::Cuda, SyncMode::Event)],
            None,
        );
        v.push(Item { desc: d.with_name("device/cuda_event_8192").unwrap(), payloads: vec![p] });
        let p = typed_payload(Bfloat16, 3);
        let d = descriptor(
            Bfloat16,
            &[3],
            0,
            LayoutDescriptor::RowMajor,
            vec![handle(6, 4096, DeviceTag::Rocm, SyncMode::ConsumerStream)],
            None,
        );
        v.push(Item { desc: d.with_name("device/rocm_consumer_stream").unwrap(), payloads: vec![p] });
    }
    // Named, with metadata (text, binary and empty values).
    {
        let mut it = dense(Float32, &[2, 2]);
        it.desc = it
            .desc
            .with_name("named/with_metadata")
            .unwrap()
            .with_metadata("origin", "hurray golden vectors")
            .unwrap()
            .with_metadata("binary", vec![0x00, 0x01, 0xFF, 0x80])
            .unwrap()
            .with_metadata("empty", Vec::new())
            .unwrap();
        v.push(it);
    }
    v.push(named(dense(Float32, &[1]), "ünïcødé/名前"));
    // Quantization.
    {
        let q = Quantization::PerTensorAffine { scale: 0.5, bias: -1.0, dequantized: Float32 };
        let d = descriptor(Uint8, &[4], 0, LayoutDescriptor::RowMajor, vec![cpu(4)], Some(q));
        v.push(Item { desc: d.with_name("quant/per_tensor_affine").unwrap(), payloads: vec![typed_payload(Uint8, 4)] });
    }
    {
        let q = Quantization::PerChannelAffine { axis: 0, dequantized: Float32 };
        let d = descriptor(Int8, &[2, 3], 0, LayoutDescriptor::RowMajor, vec![cpu(6), cpu(8), cpu(8)], Some(q));
        let scales: Vec<u8> = [0.25f32, 0.125].iter().flat_map(|f| f.to_le_bytes()).collect();
        let biases: Vec<u8> = [0.0f32, -3.0].iter().flat_map(|f| f.to_le_bytes()).collect();
        v.push(Item {
            desc: d.with_name("quant/per_channel_affine").unwrap(),
            payloads: vec![typed_payload(Int8, 6), scales, biases],
        });
    }
    {
        let q = Quantization::Cast { dequantized: Float32 };
        let d = descriptor(Float16, &[3], 0, LayoutDescriptor::RowMajor, vec![cpu(6)], Some(q));
        v.push(Item { desc: d.with_name("quant/cast").unwrap(), payloads: vec![typed_payload(Float16, 3)] });
    }
    {
        let q = Quantization::PerTensorAffine { scale: 0.0625, bias: 0.0, dequantized: Float16 };
        let d = descriptor(Int4, &[5], 0, LayoutDescriptor::RowMajor, vec![cpu(3)], Some(q));
        v.push(Item { desc: d.with_name("quant/int4_affine").unwrap(), payloads: vec![typed_payload(Int4, 5)] });
    }
    v
}

/// The tensors of `src/golden/stream_v1_plain.hrry` (written without payload checksums).
pub fn plain_items() -> Vec<Item> {
    use ElementType::*;
    let mut v = vec![named(dense(Float32, &[2, 2]), "plain/float32")];
    v.push(dense(Uint8, &[0]));
    let q = Quantization::PerChannelAffine { axis: 1, dequantized: Float64 };
    let d = descriptor(Uint8, &[3, 2], 0, LayoutDescriptor::RowMajor, vec![cpu(6), cpu(8), cpu(8)], Some(q));
    let scales: Vec<u8> = [2.0f32, 4.0].iter().flat_map(|f| f.to_le_bytes()).collect();
    let biases: Vec<u8> = [1.0f32, -1.0].iter().flat_map(|f| f.to_le_bytes()).collect();
    v.push(Item {
        desc: d.with_name("plain/per_channel").unwrap(),
        payloads: vec![typed_payload(Uint8, 6), scales, biases],
    });
    v.push(Item {
        desc: TensorDescriptor::dense(Int64, Shape::scalar()).unwrap(),
        payloads: vec![(-42i64).to_le_bytes().to_vec()],
    });
    v
}

/// A tensor whose payload is large enough (> 64 KiB) for the reader's direct-read path.
pub fn big_item(bytes: u64) -> Item {
    let desc = TensorDescriptor::dense(ElementType::Uint8, Shape::new(vec![bytes]).unwrap()).unwrap();
    let mut r = Rng::new(bytes);
    Item { desc: desc.with_name("big").unwrap(), payloads: vec![r.bytes(bytes as usize)] }
}

/// Writes `items` and the end marker into memory through the core writer.
pub fn encode_stream(items: &[Item], payload_checksums: bool) -> Vec<u8> {
    let mut w = StreamWriter::new(Vec::new(), WriterOptions { payload_checksums });
    for it in items {
        w.write_tensor(&it.desc, &it.slices()).unwrap();
    }
    w.finish().unwrap();
    w.into_transport()
}

/// Tensors as read back: each descriptor with its buffers' bytes.
pub type Tensors = Vec<(TensorDescriptor, Vec<Vec<u8>>)>;

/// Reads every tensor until the end marker; returns what was read and how it ended.
pub fn read_all<T: ReadTransport>(reader: &mut StreamReader<T>) -> (Tensors, Result<()>) {
    let mut out = Vec::new();
    loop {
        match reader.next_tensor() {
            Ok(Some(t)) => {
                for (b, h) in t.buffers.iter().zip(t.descriptor.buffers()) {
                    assert_eq!(b.as_ptr() as u64 % h.alignment(), 0, "buffer not aligned to {}", h.alignment());
                    assert!(b.is_full());
                }
                let bufs = t.buffers.iter().map(|b| b.as_slice().to_vec()).collect();
                out.push((t.descriptor, bufs));
            }
            Ok(None) => return (out, Ok(())),
            Err(e) => return (out, Err(e)),
        }
    }
}

/// Reads a whole in-memory stream, `chunk` bytes per transport call.
pub fn read_bytes(bytes: &[u8], chunk: usize, opts: ReaderOptions) -> (Tensors, Result<()>) {
    let mut r = StreamReader::new(SliceSource::new(bytes, chunk), opts).unwrap();
    read_all(&mut r)
}

/// Asserts that what was read is exactly `items`.
pub fn assert_same(read: &[(TensorDescriptor, Vec<Vec<u8>>)], items: &[Item]) {
    assert_eq!(read.len(), items.len(), "tensor count");
    for (i, ((d, bufs), it)) in read.iter().zip(items).enumerate() {
        assert_eq!(d, &it.desc, "descriptor {i}");
        assert_eq!(bufs, &it.payloads, "payloads of tensor {i}");
    }
}

/// A source that serves `bytes` at most `chunk` per call and fails (moving nothing) once, at
/// call index `fail_at`, or returns 0 (end of input) from byte `eof_at` on.
pub struct FlakySource {
    pub bytes: Vec<u8>,
    pub pos: usize,
    pub chunk: usize,
    pub calls: usize,
    pub fail_at: Option<usize>,
    pub failures: usize,
}

impl FlakySource {
    pub fn new(bytes: Vec<u8>, chunk: usize) -> Self {
        FlakySource { bytes, pos: 0, chunk, calls: 0, fail_at: None, failures: 0 }
    }
}

impl ReadTransport for FlakySource {
    fn read(&mut self, dst: &mut [MaybeUninit<u8>]) -> Result<usize> {
        let call = self.calls;
        self.calls += 1;
        if self.fail_at == Some(call) {
            self.failures += 1;
            return Err(Error::new(ErrorKind::Transport, "injected read failure"));
        }
        let n = dst.len().min(self.chunk).min(self.bytes.len() - self.pos);
        for (d, s) in dst[..n].iter_mut().zip(&self.bytes[self.pos..self.pos + n]) {
            d.write(*s);
        }
        self.pos += n;
        Ok(n)
    }
}

/// A sink that takes at most `chunk` bytes per call; `fail_at` makes call index N fail having
/// taken nothing; `zero_at` makes call index N (and every later call) accept 0 bytes.
pub struct FlakySink {
    pub bytes: Vec<u8>,
    pub chunk: usize,
    pub calls: usize,
    pub fail_at: Option<usize>,
    pub zero_at: Option<usize>,
}

impl FlakySink {
    pub fn new(chunk: usize) -> Self {
        FlakySink { bytes: Vec::new(), chunk, calls: 0, fail_at: None, zero_at: None }
    }
}

impl WriteTransport for FlakySink {
    fn write(&mut self, src: &[u8]) -> Result<usize> {
        let call = self.calls;
        self.calls += 1;
        if self.fail_at == Some(call) {
            return Err(Error::new(ErrorKind::Transport, "injected write failure"));
        }
        if self.zero_at.is_some_and(|z| call >= z) {
            return Ok(0);
        }
        let n = src.len().min(self.chunk);
        self.bytes.extend_from_slice(&src[..n]);
        Ok(n)
    }
}

/// `<repo>/src/golden`.
pub fn golden_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../src/golden")
}

/// A stream header and one tensor frame carrying the encoded descriptor `descriptor`, then
/// `payload` as it stands (it may be shorter or longer than the descriptor declares), no end
/// marker: for inputs a writer would not produce.
pub fn tensor_frame_stream(descriptor: &[u8], payload: &[u8]) -> Vec<u8> {
    use hurray_core::crc32c::crc32c;
    use hurray_core::stream::{FRAME_TENSOR, STREAM_MAGIC};
    let mut s = STREAM_MAGIC.to_vec();
    s.extend_from_slice(&1u16.to_le_bytes());
    s.extend_from_slice(&0u16.to_le_bytes());
    let c = crc32c(&s);
    s.extend_from_slice(&c.to_le_bytes());
    let mut f = FRAME_TENSOR.to_vec();
    f.extend_from_slice(&0u32.to_le_bytes());
    f.extend_from_slice(&(descriptor.len() as u64).to_le_bytes());
    f.extend_from_slice(&crc32c(descriptor).to_le_bytes());
    let c = crc32c(&f);
    f.extend_from_slice(&c.to_le_bytes());
    s.extend(f);
    s.extend_from_slice(descriptor);
    s.extend_from_slice(payload);
    s
}
