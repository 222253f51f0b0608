//! Sparse layouts COO, CSR, CSC and BSR (docs/spec/descriptor.md §Sparse layouts): the checks
//! of index contents, and densify. The sparse block itself and the descriptor rules of these
//! layouts are part of the descriptor (`descriptor/blocks.rs`, `descriptor/validate.rs`).
//!
//! Buffer tables (each buffer exactly as long as the block says; byte offset 0):
//!
//! | layout | buffer 0 | buffer 1 | buffer 2 |
//! |---|---|---|---|
//! | COO | nnz values | indices, `[rank, nnz]` (one array per dimension) | — |
//! | CSR | nnz values | indptr, `rows + 1` | column indices, nnz |
//! | CSC | nnz values | indptr, `cols + 1` | row indices, nnz |
//! | BSR | nnz blocks of `br × bc` values, each row-major | block indptr, `rows / br + 1` | block column indices, nnz |

use crate::descriptor::{compressed_dims, LayoutDescriptor, TensorDescriptor};
use crate::error::{bail, err, Result};
use crate::types::ElementType;

pub use crate::descriptor::{IndexType, SparseInfo};
pub use crate::wire::SPARSE_BLOCK_BYTES;

/// Reads index `i` of an index buffer as i64 (int32 sign-extends). `buf` must hold it.
#[inline]
pub(crate) fn read_index(buf: &[u8], it: IndexType, i: usize) -> i64 {
    match it {
        IndexType::Int32 => i64::from(i32::from_le_bytes(buf[i * 4..i * 4 + 4].try_into().unwrap())),
        IndexType::Int64 => i64::from_le_bytes(buf[i * 8..i * 8 + 8].try_into().unwrap()),
    }
}

/// Checks the index contents of a sparse tensor whose descriptor is valid: indices in range,
/// indptr from 0 to nnz without decreasing, and the canonical promise. `bufs` are the
/// payloads in buffer-table order. Errors: `Corrupt` naming the first offending position,
/// `BufferTooSmall` if a payload is shorter than declared.
pub fn check_contents(d: &TensorDescriptor, bufs: &[&[u8]]) -> Result<()> {
    let s = d.sparse().ok_or_else(|| err!(InvalidArgument, "not a sparse tensor"))?;
    check_payload_lengths(d, bufs)?;
    let it = s.index_type();
    let nnz = s.nnz() as usize; // fits: the buffers of this size exist in memory
    let dims = d.shape().dims();
    if *d.layout() == LayoutDescriptor::Coo {
        let idx = bufs[1];
        let rank = dims.len();
        for (k, &dim) in dims.iter().enumerate() {
            for j in 0..nnz {
                let v = read_index(idx, it, k * nnz + j);
                if v < 0 || v as u64 >= dim {
                    bail!(Corrupt, "COO index {v} of entry {j} in dimension {k} is outside 0..{dim}");
                }
            }
        }
        if s.is_canonical() {
            for j in 1..nnz {
                let mut ord = std::cmp::Ordering::Equal;
                for k in 0..rank {
                    ord = read_index(idx, it, k * nnz + j - 1).cmp(&read_index(idx, it, k * nnz + j));
                    if ord != std::cmp::Ordering::Equal {
                        break;
                    }
                }
                if ord != std::cmp::Ordering::Less {
                    bail!(
                        Corrupt,
                        "COO entry {j} is not after entry {} although the tensor is marked canonical",
                        j - 1
                    );
                }
            }
        }
        return Ok(());
    }
    let (outer, inner) = compressed_dims(d, s);
    let (ptr, idx) = (bufs[1], bufs[2]);
    let first = read_index(ptr, it, 0);
    if first != 0 {
        bail!(Corrupt, "indptr starts at {first}, not 0");
    }
    let mut prev = 0i64;
    for r in 0..outer as usize {
        let end = read_index(ptr, it, r + 1);
        if end < prev {
            bail!(Corrupt, "indptr decreases at {}: {prev} then {end}", r + 1);
        }
        if end as u64 > s.nnz() {
            bail!(Corrupt, "indptr[{}] = {end} exceeds nnz {}", r + 1, s.nnz());
        }
        let mut last = -1i64;
        for j in prev as usize..end as usize {
            let c = read_index(idx, it, j);
            if c < 0 || c as u64 >= inner {
                bail!(Corrupt, "index {c} of entry {j} is outside 0..{inner}");
            }
            if s.is_canonical() && c <= last {
                bail!(
                    Corrupt,
                    "indices of row/column {r} are not strictly increasing although the tensor is marked canonical"
                );
            }
            last = c;
        }
        prev = end;
    }
    if prev as u64 != s.nnz() {
        bail!(Corrupt, "indptr ends at {prev}, but nnz is {}", s.nnz());
    }
    Ok(())
}

pub(crate) fn check_payload_lengths(d: &TensorDescriptor, bufs: &[&[u8]]) -> Result<()> {
    if bufs.len() != d.buffers().len() {
        bail!(InvalidArgument, "{} payloads for {} buffers", bufs.len(), d.buffers().len());
    }
    for (i, (b, h)) in bufs.iter().zip(d.buffers()).enumerate() {
        if (b.len() as u64) < h.byte_size() {
            bail!(BufferTooSmall, "payload {i} has {} bytes, the descriptor declares {}", b.len(), h.byte_size());
        }
    }
    Ok(())
}

/// True for element types densify can sum duplicates of (bool sums as logical or).
fn summable(et: ElementType) -> bool {
    use ElementType::*;
    matches!(
        et,
        Bool | Int8
            | Int16
            | Int32
            | Int64
            | Uint8
            | Uint16
            | Uint32
            | Uint64
            | Float32
            | Float64
            | Complex64
            | Complex128
    )
}

/// `dst += src` for one element of `et` (integers wrap; floats in their own precision).
fn accumulate(et: ElementType, dst: &mut [u8], src: &[u8]) {
    use ElementType::*;
    macro_rules! add {
        ($t:ty, $op:ident) => {{
            let n = std::mem::size_of::<$t>();
            for (d, s) in dst.chunks_exact_mut(n).zip(src.chunks_exact(n)) {
                let a = <$t>::from_le_bytes(d.try_into().unwrap());
                let b = <$t>::from_le_bytes(s.try_into().unwrap());
                d.copy_from_slice(&add!(@ $op a b).to_le_bytes());
            }
        }};
        (@ wrap $a:ident $b:ident) => { $a.wrapping_add($b) };
        (@ plain $a:ident $b:ident) => { $a + $b };
    }
    match et {
        Bool => dst[0] |= src[0],
        Int8 => add!(i8, wrap),
        Int16 => add!(i16, wrap),
        Int32 => add!(i32, wrap),
        Int64 => add!(i64, wrap),
        Uint8 => add!(u8, wrap),
        Uint16 => add!(u16, wrap),
        Uint32 => add!(u32, wrap),
        Uint64 => add!(u64, wrap),
        Float32 | Complex64 => add!(f32, plain),
        Float64 | Complex128 => add!(f64, plain),
        _ => unreachable!("checked by summable"),
    }
}

/// The refusals of [`densify`] that depend on the descriptor alone (made before any buffer is
/// looked at): not sparse (`InvalidArgument`), duplicates it cannot sum (`Unsupported`).
pub(crate) fn densify_supported(d: &TensorDescriptor) -> Result<&SparseInfo> {
    let s =
        d.sparse().ok_or_else(|| err!(InvalidArgument, "densify needs a sparse tensor, not {}", d.layout().name()))?;
    if !s.is_canonical() && !summable(d.element_type()) {
        bail!(
            Unsupported,
            "densify of a non-canonical {} tensor would have to sum duplicates",
            d.element_type().name()
        );
    }
    Ok(s)
}

/// Writes the dense row-major form of a sparse tensor into `out` (at least the dense byte
/// count of the shape; exactly that many bytes are written, zeros where nothing is stored).
/// Duplicates of a non-canonical tensor are summed, as scipy's `toarray` does; that needs
/// an element type with addition (not float16, bfloat16 or fp8: `Unsupported`).
///
/// The contents are checked first ([`check_contents`]), so hostile indices are an error,
/// never a write out of bounds. Errors: `InvalidArgument` (not sparse), `BufferTooSmall`
/// (`out` or a payload too short), `Corrupt`, `Unsupported`.
pub fn densify(d: &TensorDescriptor, bufs: &[&[u8]], out: &mut [u8]) -> Result<()> {
    let s = densify_supported(d)?;
    let et = d.element_type();
    let dense = d.dense_byte_count();
    if (out.len() as u64) < dense {
        bail!(BufferTooSmall, "densify needs {dense} output bytes, got {}", out.len());
    }
    check_contents(d, bufs)?;
    let out = &mut out[..dense as usize];
    out.fill(0);
    let es = (et.bit_width() / 8) as usize;
    let it = s.index_type();
    let nnz = s.nnz() as usize;
    let dims = d.shape().dims();
    let vals = bufs[0];
    let canonical = s.is_canonical();
    let put = |out: &mut [u8], pos: usize, v: &[u8]| {
        let dst = &mut out[pos * es..pos * es + es];
        if canonical {
            dst.copy_from_slice(v);
        } else {
            accumulate(et, dst, v);
        }
    };
    match d.layout() {
        LayoutDescriptor::Coo => {
            let idx = bufs[1];
            for j in 0..nnz {
                let mut pos = 0usize;
                for (k, &dim) in dims.iter().enumerate() {
                    pos = pos * dim as usize + read_index(idx, it, k * nnz + j) as usize;
                }
                put(out, pos, &vals[j * es..j * es + es]);
            }
        }
        LayoutDescriptor::Csr | LayoutDescriptor::Csc => {
            let (ptr, idx) = (bufs[1], bufs[2]);
            let cols = dims[1] as usize;
            let csr = *d.layout() == LayoutDescriptor::Csr;
            let (outer, _) = compressed_dims(d, s);
            for r in 0..outer as usize {
                let (a, b) = (read_index(ptr, it, r) as usize, read_index(ptr, it, r + 1) as usize);
                for j in a..b {
                    let c = read_index(idx, it, j) as usize;
                    let pos = if csr { r * cols + c } else { c * cols + r };
                    put(out, pos, &vals[j * es..j * es + es]);
                }
            }
        }
        LayoutDescriptor::Bsr => {
            let (ptr, idx) = (bufs[1], bufs[2]);
            let cols = dims[1] as usize;
            let (br, bc) = (s.block_shape()[0] as usize, s.block_shape()[1] as usize);
            let (outer, _) = compressed_dims(d, s);
            for r in 0..outer as usize {
                let (a, b) = (read_index(ptr, it, r) as usize, read_index(ptr, it, r + 1) as usize);
                for j in a..b {
                    let c = read_index(idx, it, j) as usize;
                    let block = &vals[j * br * bc * es..(j + 1) * br * bc * es];
                    for i in 0..br {
                        let row = (r * br + i) * cols + c * bc;
                        let src = &block[i * bc * es..(i + 1) * bc * es];
                        if s.is_canonical() {
                            out[row * es..(row + bc) * es].copy_from_slice(src);
                        } else {
                            for k in 0..bc {
                                put(out, row + k, &src[k * es..k * es + es]);
                            }
                        }
                    }
                }
            }
        }
        _ => unreachable!("sparse block implies a sparse layout"),
    }
    Ok(())
}
