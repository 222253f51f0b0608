//! Dequantize, quantize, densify and gather on hostile or unusual descriptors: every call
//! ends (loops bounded by the elements or the input), allocates no more than the caller's
//! memory backs, never panics, agrees with the other calls on every layout, and returns a
//! status that depends on the descriptor, not on spare buffer bytes.

use std::sync::mpsc;
use std::time::Duration;

use hurray_core::codec;
use hurray_core::composite;
use hurray_core::{
    BlockQuant, BufferHandle, DeviceTag, ElementType, ErrorKind, LayoutDescriptor, Quantization, Shape, SyncMode,
    TensorDescriptor, DESCRIPTOR_VERSION,
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
        let d = codec::plan(et, shape, Some(Quantization::Block(bq))).unwrap();
        let out = within_time("dequantize_into of a zero-element tensor", move || {
            let bufs = table_buffers(&d, 0);
            let views: Vec<&[u8]> = bufs.iter().map(|b| b.as_slice()).collect();
            let mut out = [0u8; 8];
            codec::dequantize_into(&d, &views, ElementType::Float32, &mut out).map(|_| ())?;
            let mut f = [0f32; 0];
            codec::dequantize(&d, &views, &mut f)?;
            let mut w = table_buffers(&d, 0);
            let mut wv: Vec<&mut [u8]> = w.iter_mut().map(|b| b.as_mut_slice()).collect();
            codec::quantize(&d, &[], &mut wv)
        });
        out.unwrap_or_else(|e| panic!("{}: {e}", bq.kind.name()));
    }
}

#[test]
fn a_composite_head_is_refused_not_indexed() {
    let head = composite::head_descriptor(Some("layer"), vec!["w".into(), "b".into()]).unwrap();
    let mut out = [0f32; 1];
    assert_eq!(codec::dequantize(&head, &[], &mut out).unwrap_err().kind(), ErrorKind::InvalidArgument);
    let mut bytes = [0u8; 8];
    let e = codec::dequantize_into(&head, &[], ElementType::Float32, &mut bytes).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::InvalidArgument);
    assert_eq!(codec::quantize(&head, &[1.0], &mut []).unwrap_err().kind(), ErrorKind::InvalidArgument);
    assert_eq!(codec::dequantize_to_vec(&head, &[]).unwrap_err().kind(), ErrorKind::InvalidArgument);
}

#[test]
fn a_strided_tensor_at_a_huge_offset_is_an_error_not_an_overflow() {
    // Valid: elements at offset 2^64 − 8 and 4 bytes before it (stride −1).
    let off = u64::MAX - 7;
    let d = strided(ElementType::Float32, &[2], &[-1], off, u64::MAX).unwrap();
    let data = [0u8; 8];
    let mut out = [0f32; 2];
    assert_eq!(codec::dequantize(&d, &[&data], &mut out).unwrap_err().kind(), ErrorKind::Unsupported);
    let mut bytes = [0u8; 16];
    let e = codec::dequantize_into(&d, &[&data], ElementType::Float64, &mut bytes).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Unsupported);
    let mut w = [0u8; 8];
    assert_eq!(codec::quantize(&d, &[1.0, 2.0], &mut [&mut w[..]]).unwrap_err().kind(), ErrorKind::Unsupported);
}

#[test]
fn the_status_depends_on_the_descriptor_not_on_spare_buffer_bytes() {
    // Elements at bytes 4 and 0 (offset 4, stride −1): the exact buffer is 8 bytes.
    let d = strided(ElementType::Float32, &[2], &[-1], 4, 8).unwrap();
    for len in [0usize, 8, 12, 64] {
        let data = vec![0u8; len];
        let mut out = [0f32; 2];
        assert_eq!(codec::dequantize(&d, &[&data], &mut out).unwrap_err().kind(), ErrorKind::Unsupported, "{len}");
        let mut bytes = [0u8; 8];
        let e = codec::dequantize_into(&d, &[&data], ElementType::Float32, &mut bytes).unwrap_err();
        assert_eq!(e.kind(), ErrorKind::Unsupported, "{len}");
        let mut w = vec![0u8; len];
        let e = codec::quantize(&d, &[1.0, 2.0], &mut [&mut w[..]]).unwrap_err();
        assert_eq!(e.kind(), ErrorKind::Unsupported, "{len}");
    }
    // Complex elements cannot be dequantized, and int32 cannot be quantized to, whatever
    // the buffers hold.
    let c = TensorDescriptor::dense(ElementType::Complex64, Shape::new(vec![2]).unwrap()).unwrap();
    let i = TensorDescriptor::dense(ElementType::Int32, Shape::new(vec![2]).unwrap()).unwrap();
    for len in [0usize, 16] {
        let data = vec![0u8; len];
        let mut out = [0f32; 2];
        assert_eq!(codec::dequantize(&c, &[&data], &mut out).unwrap_err().kind(), ErrorKind::Unsupported, "{len}");
        let mut w = vec![0u8; len];
        let e = codec::quantize(&i, &[1.0, 2.0], &mut [&mut w[..]]).unwrap_err();
        assert_eq!(e.kind(), ErrorKind::Unsupported, "{len}");
    }
}
