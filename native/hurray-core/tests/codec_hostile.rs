//! Dequantize, quantize, densify and gather on hostile or unusual descriptors: every call
//! ends (loops bounded by the elements or the input), allocates no more than the caller's
//! memory backs, never panics, agrees with the other calls on every layout, and returns a
//! status that depends on the descriptor, not on spare buffer bytes.

use std::sync::mpsc;
use std::time::Duration;

use hurray_core::codec;
use hurray_core::{BlockQuant, ElementType, ErrorKind, Quantization, Shape};

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
