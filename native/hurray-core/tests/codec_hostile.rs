//! Dequantize, quantize, densify and gather on hostile or unusual descriptors: every call
//! ends (loops bounded by the elements or the input), allocates no more than the caller's
//! memory backs, never panics, agrees with the other calls on every layout, and returns a
//! status that depends on the descriptor, not on spare buffer bytes.

use std::sync::mpsc;
use std::time::Duration;

use hurray_core::composite;
use hurray_core::paged::{self, PagingInfo};
use hurray_core::quantize;
use hurray_core::sparse::{self, IndexType, SparseInfo};
use hurray_core::{
    BlockQuant, BufferHandle, DeviceTag, ElementType, ErrorKind, LayoutDescriptor, Quantization, Shape, SyncMode,
    TensorDescriptor, DESCRIPTOR_VERSION, DESCRIPTOR_VERSION_2,
};

fn cpu(n: u64) -> BufferHandle {
    BufferHandle::new(n, 64, DeviceTag::Cpu, SyncMode::ProducerSynced).unwrap()
}

/// A version-1 strided descriptor of `et[dims]` with one buffer of `buffer` bytes.
fn strided(
    et: ElementType,
    dims: &[u64],
    strides: &[i64],
    offset: u64,
    buffer: u64,
) -> hurray_core::Result<TensorDescriptor> {
    TensorDescriptor::new(
        DESCRIPTOR_VERSION,
        0,
        et,
        Shape::new(dims.to_vec()).unwrap(),
        offset,
        LayoutDescriptor::Strided(strides.to_vec()),
        vec![cpu(buffer)],
        None,
        None,
        None,
        None,
    )
}

/// Runs `f` on a thread and fails the test if it has not returned within 20 s (a hang).
fn within_time<R: Send + 'static>(what: &str, f: impl FnOnce() -> R + Send + 'static) -> R {
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        let _ = tx.send(f());
    });
    rx.recv_timeout(Duration::from_secs(20)).unwrap_or_else(|_| panic!("{what} did not return within 20 s"))
}

/// Buffers of exactly the sizes a descriptor's table declares, filled with `fill`.
fn table_buffers(d: &hurray_core::TensorDescriptor, fill: u8) -> Vec<Vec<u8>> {
    d.buffers().iter().map(|b| vec![fill; b.byte_size() as usize]).collect()
}

#[test]
fn block_kinds_without_elements_return_at_once() {
    // outer 2^40 rows of an axis of 32, inner dimension 0: no element, no block.
    let dims = vec![1u64 << 40, 32, 0];
    let kinds = [
        (ElementType::Float8E4m3fn, BlockQuant::mx(1, 32)),
        (ElementType::Float4E2m1fn, BlockQuant::nvfp4(1, 16)),
        (ElementType::Int8, BlockQuant::group_affine(1, 8, ElementType::Float32)),
    ];
    for (et, bq) in kinds {
        let shape = Shape::new(dims.clone()).unwrap();
        let d = quantize::plan(et, shape, Some(Quantization::Block(bq))).unwrap();
        let out = within_time("dequantize_into of a zero-element tensor", move || {
            let bufs = table_buffers(&d, 0);
            let views: Vec<&[u8]> = bufs.iter().map(|b| b.as_slice()).collect();
            let mut out = [0u8; 8];
            quantize::dequantize_into(&d, &views, ElementType::Float32, &mut out).map(|_| ())?;
            let mut f = [0f32; 0];
            quantize::dequantize(&d, &views, &mut f)?;
            let mut w = table_buffers(&d, 0);
            let mut wv: Vec<&mut [u8]> = w.iter_mut().map(|b| b.as_mut_slice()).collect();
            quantize::quantize(&d, &[], &mut wv)
        });
        out.unwrap_or_else(|e| panic!("{}: {e}", bq.kind.name()));
    }
}

#[test]
fn a_composite_head_is_refused_not_indexed() {
    let head = composite::head_descriptor(Some("layer"), vec!["w".into(), "b".into()]).unwrap();
    let mut out = [0f32; 1];
    assert_eq!(quantize::dequantize(&head, &[], &mut out).unwrap_err().kind(), ErrorKind::InvalidArgument);
    let mut bytes = [0u8; 8];
    let e = quantize::dequantize_into(&head, &[], ElementType::Float32, &mut bytes).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::InvalidArgument);
    assert_eq!(quantize::quantize(&head, &[1.0], &mut []).unwrap_err().kind(), ErrorKind::InvalidArgument);
    assert_eq!(quantize::dequantize_to_vec(&head, &[]).unwrap_err().kind(), ErrorKind::InvalidArgument);
}

#[test]
fn a_strided_tensor_at_a_huge_offset_is_an_error_not_an_overflow() {
    // Valid: elements at offset 2^64 − 8 and 4 bytes before it (stride −1).
    let off = u64::MAX - 7;
    let d = strided(ElementType::Float32, &[2], &[-1], off, u64::MAX).unwrap();
    let data = [0u8; 8];
    let mut out = [0f32; 2];
    assert_eq!(quantize::dequantize(&d, &[&data], &mut out).unwrap_err().kind(), ErrorKind::Unsupported);
    let mut bytes = [0u8; 16];
    let e = quantize::dequantize_into(&d, &[&data], ElementType::Float64, &mut bytes).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Unsupported);
    let mut w = [0u8; 8];
    assert_eq!(quantize::quantize(&d, &[1.0, 2.0], &mut [&mut w[..]]).unwrap_err().kind(), ErrorKind::Unsupported);
}

#[test]
fn the_status_depends_on_the_descriptor_not_on_spare_buffer_bytes() {
    // Elements at bytes 4 and 0 (offset 4, stride −1): the exact buffer is 8 bytes.
    let d = strided(ElementType::Float32, &[2], &[-1], 4, 8).unwrap();
    for len in [0usize, 8, 12, 64] {
        let data = vec![0u8; len];
        let mut out = [0f32; 2];
        assert_eq!(quantize::dequantize(&d, &[&data], &mut out).unwrap_err().kind(), ErrorKind::Unsupported, "{len}");
        let mut bytes = [0u8; 8];
        let e = quantize::dequantize_into(&d, &[&data], ElementType::Float32, &mut bytes).unwrap_err();
        assert_eq!(e.kind(), ErrorKind::Unsupported, "{len}");
        let mut w = vec![0u8; len];
        let e = quantize::quantize(&d, &[1.0, 2.0], &mut [&mut w[..]]).unwrap_err();
        assert_eq!(e.kind(), ErrorKind::Unsupported, "{len}");
    }
    // Complex elements cannot be dequantized, and int32 cannot be quantized to, whatever
    // the buffers hold.
    let c = TensorDescriptor::dense(ElementType::Complex64, Shape::new(vec![2]).unwrap()).unwrap();
    let i = TensorDescriptor::dense(ElementType::Int32, Shape::new(vec![2]).unwrap()).unwrap();
    for len in [0usize, 16] {
        let data = vec![0u8; len];
        let mut out = [0f32; 2];
        assert_eq!(quantize::dequantize(&c, &[&data], &mut out).unwrap_err().kind(), ErrorKind::Unsupported, "{len}");
        let mut w = vec![0u8; len];
        let e = quantize::quantize(&i, &[1.0, 2.0], &mut [&mut w[..]]).unwrap_err();
        assert_eq!(e.kind(), ErrorKind::Unsupported, "{len}");
    }
}

fn v2(
    et: ElementType,
    dims: &[u64],
    layout: LayoutDescriptor,
    bufs: &[&[u8]],
    sparse: Option<SparseInfo>,
    paging: Option<PagingInfo>,
) -> TensorDescriptor {
    let handles = bufs.iter().map(|b| cpu(b.len() as u64)).collect();
    let shape = Shape::new(dims.to_vec()).unwrap();
    TensorDescriptor::new(DESCRIPTOR_VERSION_2, 0, et, shape, 0, layout, handles, None, sparse, paging, None).unwrap()
}

fn le<T: Copy, const N: usize>(v: &[T], f: impl Fn(T) -> [u8; N]) -> Vec<u8> {
    v.iter().flat_map(|&x| f(x)).collect()
}

/// Dequantize (both entry points) of `d` must equal dequantize of its dense form `dense`.
fn agrees_with_dense_form(d: &TensorDescriptor, bufs: &[&[u8]], dense: &[u8]) -> Vec<f32> {
    let plain = TensorDescriptor::dense(d.element_type(), d.shape().clone()).unwrap();
    let want = quantize::dequantize_to_vec(&plain, &[dense]).unwrap();
    let got = quantize::dequantize_to_vec(d, bufs).unwrap();
    assert_eq!(got, want, "dequantize of {} != dequantize of its dense form", d.layout().name());
    for target in [ElementType::Float64, ElementType::Int16, ElementType::Float16] {
        let w = (target.bit_width() / 8) as usize * want.len();
        let (mut a, mut b) = (vec![0u8; w], vec![0u8; w]);
        quantize::dequantize_into(d, bufs, target, &mut a).unwrap();
        quantize::dequantize_into(&plain, &[dense], target, &mut b).unwrap();
        assert_eq!(a, b, "dequantize_into {} of {}", target.name(), d.layout().name());
    }
    got
}

#[test]
fn dequantize_of_a_paged_tensor_follows_the_page_table() {
    // Four rows, one per page, stored as pages 0..3 holding 0, 1, 2, 3; the table says logical
    // row b lives in page [2, 3, 0, 1][b], so the tensor is 2 3 0 1 (not storage order).
    let pages = le(&[0f32, 1.0, 2.0, 3.0], f32::to_le_bytes);
    let table = le(&[2i32, 3, 0, 1], i32::to_le_bytes);
    let d = v2(
        ElementType::Float32,
        &[4, 1],
        LayoutDescriptor::BlockPaged,
        &[&pages, &table],
        None,
        Some(PagingInfo::new(IndexType::Int32, 1, 4, 4)),
    );
    let mut dense = vec![0u8; 16];
    paged::gather(&d, &[&pages, &table], &mut dense).unwrap();
    assert_eq!(agrees_with_dense_form(&d, &[&pages, &table], &dense), [2.0, 3.0, 0.0, 1.0]);
    // Shared pages, a partly used last page, int16 elements.
    let pages = le(&[1i16, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12], i16::to_le_bytes);
    let table = le(&[1i64, 1, 0], i64::to_le_bytes);
    let d = v2(
        ElementType::Int16,
        &[5, 2],
        LayoutDescriptor::BlockPaged,
        &[&pages, &table],
        None,
        Some(PagingInfo::new(IndexType::Int64, 2, 3, 3)),
    );
    let mut dense = vec![0u8; 20];
    paged::gather(&d, &[&pages, &table], &mut dense).unwrap();
    let got = agrees_with_dense_form(&d, &[&pages, &table], &dense);
    assert_eq!(got, [5.0, 6.0, 7.0, 8.0, 5.0, 6.0, 7.0, 8.0, 1.0, 2.0]);
}

#[test]
fn dequantize_of_a_sparse_tensor_is_its_dense_form() {
    // CSR [[0, 7], [0, 0], [5, 0]]: nnz 2 of 6 elements; dequantize was sized as if dense.
    let vals = le(&[7f32, 5.0], f32::to_le_bytes);
    let ptr = le(&[0i32, 1, 1, 2], i32::to_le_bytes);
    let idx = le(&[1i32, 0], i32::to_le_bytes);
    let bufs: [&[u8]; 3] = [&vals, &ptr, &idx];
    let d = v2(
        ElementType::Float32,
        &[3, 2],
        LayoutDescriptor::Csr,
        &bufs,
        Some(SparseInfo::new(IndexType::Int32, 2, true)),
        None,
    );
    let mut dense = vec![0u8; 24];
    sparse::densify(&d, &bufs, &mut dense).unwrap();
    assert_eq!(agrees_with_dense_form(&d, &bufs, &dense), [0.0, 7.0, 0.0, 0.0, 5.0, 0.0]);
    // The values buffer alone is 8 bytes: dense-sized slack must not be needed.
    let mut out = [0f32; 6];
    quantize::dequantize(&d, &bufs, &mut out).unwrap();
    // Non-canonical COO int8 with a duplicate: summed in int8 (wrapping), as densify does.
    let vals = [100u8, 100, 3];
    let coords = le(&[0i64, 0, 2, 1, 1, 0], i64::to_le_bytes); // rows then columns
    let bufs: [&[u8]; 2] = [&vals, &coords];
    let d = v2(
        ElementType::Int8,
        &[3, 2],
        LayoutDescriptor::Coo,
        &bufs,
        Some(SparseInfo::new(IndexType::Int64, 3, false)),
        None,
    );
    let mut dense = vec![0u8; 6];
    sparse::densify(&d, &bufs, &mut dense).unwrap();
    assert_eq!(agrees_with_dense_form(&d, &bufs, &dense), [0.0, -56.0, 0.0, 0.0, 3.0, 0.0]);
    // A bad index is the densify error, not a value.
    let bad = le(&[0i64, 0, 9, 1, 1, 0], i64::to_le_bytes);
    let mut out = [0f32; 6];
    assert_eq!(quantize::dequantize(&d, &[&vals, &bad], &mut out).unwrap_err().kind(), ErrorKind::Corrupt);
    // Quantize writes dense tensors only.
    let (mut a, mut b) = (vec![0u8; 3], vec![0u8; 48]);
    let e = quantize::quantize(&d, &[0.0; 6], &mut [&mut a[..], &mut b[..]]).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Unsupported);
}

#[test]
fn element_bytes_overflowing_u64_are_refused_on_every_layout() {
    // float32 COO of 2^62 elements (2^64 bytes dense) with nothing stored.
    let e = TensorDescriptor::new(
        DESCRIPTOR_VERSION_2,
        0,
        ElementType::Float32,
        Shape::new(vec![1 << 62]).unwrap(),
        0,
        LayoutDescriptor::Coo,
        vec![cpu(0), cpu(0)],
        None,
        Some(SparseInfo::new(IndexType::Int64, 0, true)),
        None,
        None,
    )
    .unwrap_err();
    assert_eq!(e.kind(), ErrorKind::InvalidShape);
    // float64 paged of 2^62 rows (2^65 bytes): one page of 2^31 rows that all 2^31 page-table
    // entries share (both buffers 16 GiB, so the descriptor is otherwise consistent).
    let e = TensorDescriptor::new(
        DESCRIPTOR_VERSION_2,
        0,
        ElementType::Float64,
        Shape::new(vec![1 << 62, 1]).unwrap(),
        0,
        LayoutDescriptor::BlockPaged,
        vec![cpu(8 << 31), cpu(8 << 31)],
        None,
        None,
        Some(PagingInfo::new(IndexType::Int64, 1 << 31, 1 << 31, 1)),
        None,
    )
    .unwrap_err();
    assert_eq!(e.kind(), ErrorKind::InvalidShape);
    // The same through the decoder: 2^61 float32 elements (2^63 bytes) decode; with the
    // dimension patched to 2^62 the decoder refuses the descriptor.
    let ok = TensorDescriptor::new(
        DESCRIPTOR_VERSION_2,
        0,
        ElementType::Float32,
        Shape::new(vec![1 << 61]).unwrap(),
        0,
        LayoutDescriptor::Coo,
        vec![cpu(0), cpu(0)],
        None,
        Some(SparseInfo::new(IndexType::Int64, 0, true)),
        None,
        None,
    )
    .unwrap();
    let mut bytes = ok.encode().unwrap();
    assert!(TensorDescriptor::decode(&bytes).is_ok());
    // Dimension 0 is the first u64 after the 24-byte fixed header.
    assert_eq!(bytes[24..32], (1u64 << 61).to_le_bytes());
    bytes[24..32].copy_from_slice(&(1u64 << 62).to_le_bytes());
    assert_eq!(TensorDescriptor::decode(&bytes).unwrap_err().kind(), ErrorKind::InvalidShape);
}

#[test]
fn a_sparse_tensor_densify_cannot_sum_is_unsupported_whatever_its_buffers() {
    // Non-canonical float16 COO: duplicates would need float16 addition.
    let vals = [0u8; 4];
    let coords = le(&[0i32, 1], i32::to_le_bytes);
    let d = v2(
        ElementType::Float16,
        &[4],
        LayoutDescriptor::Coo,
        &[&vals, &coords],
        Some(SparseInfo::new(IndexType::Int32, 2, false)),
        None,
    );
    for cut in [0usize, 1, 4] {
        let (v, c) = (&vals[..4 - cut.min(4)], &coords[..8 - cut]);
        let mut out = [0f32; 4];
        assert_eq!(quantize::dequantize(&d, &[v, c], &mut out).unwrap_err().kind(), ErrorKind::Unsupported, "{cut}");
        let mut dense = [0u8; 8];
        assert_eq!(sparse::densify(&d, &[v, c], &mut dense).unwrap_err().kind(), ErrorKind::Unsupported, "{cut}");
    }
}
