//! Sparse, paged and composite tensors through the C ABI: a CSR descriptor built from C,
//! densify into a caller buffer, a nested composite written with
//! `hurray_writer_write_composite` and read back through both views, and the same composite
//! in a container by name.

#[path = "../../hurray-core/tests/common/mod.rs"]
mod common;
mod ffi_common;

use std::ptr::{null, null_mut};

use ffi_common::*;
use hurray_ffi::buffer_list::*;
use hurray_ffi::composite::*;
use hurray_ffi::descriptor::*;
use hurray_ffi::file::*;
use hurray_ffi::reader::*;
use hurray_ffi::sparse::*;
use hurray_ffi::tensor::*;
use hurray_ffi::writer::*;
use hurray_ffi::*;

fn le<T: Copy, const N: usize>(v: &[T], f: fn(T) -> [u8; N]) -> Vec<u8> {
    v.iter().flat_map(|&x| f(x)).collect()
}

/// The 2x4 matrix [[0, 1.5, 0, 0], [0, 0, -2, 3]] as CSR with int32 indices.
fn csr_parts() -> (Vec<Vec<u8>>, Vec<f32>) {
    let vals = le(&[1.5f32, -2.0, 3.0], f32::to_le_bytes);
    let ptr = le(&[0i32, 1, 3], i32::to_le_bytes);
    let idx = le(&[1i32, 2, 3], i32::to_le_bytes);
    (vec![vals, ptr, idx], vec![0.0, 1.5, 0.0, 0.0, 0.0, 0.0, -2.0, 3.0])
}

/// A CSR descriptor for `parts`, built through the C ABI.
///
/// # Safety
/// No requirement on the caller: every pointer it passes is a local (it could be a safe fn).
unsafe fn csr_descriptor(parts: &[Vec<u8>]) -> *mut HurrayDescriptor {
    // SAFETY: every array passed to the builder is a local or a slice of `parts`, valid for the count given; `b` is the
    // builder made here.
    unsafe {
        let mut b = null_mut();
        expect(hurray_descriptor_builder_new(HURRAY_DTYPE_FLOAT32, [2u64, 4].as_ptr(), 2, &mut b), HURRAY_OK);
        expect(hurray_descriptor_builder_set_layout(b, HURRAY_LAYOUT_CSR, null(), 0), HURRAY_OK);
        let sp = HurraySparse { index_type: HURRAY_DTYPE_INT32, canonical: 1, nnz: 3, ..Default::default() };
        expect(hurray_descriptor_builder_set_sparse(b, &sp), HURRAY_OK);
        for p in parts {
            let spec = hurray_ffi::HurrayBufferSpec {
                byte_size: p.len() as u64,
                alignment: 64,
                device_tag: 0,
                sync_mode: 0,
                reserved: 0,
            };
            expect(hurray_descriptor_builder_add_buffer(b, &spec), HURRAY_OK);
        }
        let mut d = null_mut();
        expect(hurray_descriptor_builder_build(b, &mut d), HURRAY_OK);
        expect(hurray_descriptor_builder_destroy(&mut b), HURRAY_OK);
        d
    }
}

/// The dense values of sparse tensor `t`, through `hurray_sparse_densify`.
///
/// # Safety
/// `t` is a live tensor handle.
unsafe fn densified(t: *mut HurrayTensor) -> Vec<f32> {
    // SAFETY: `t` is a live tensor (this function's # Safety); out-pointers are live locals, the buffer views read are
    // owned by `t` with the sizes it reports, and `out` holds 8 floats (32 bytes).
    unsafe {
        let (mut d, mut l) = (null_mut(), null_mut());
        expect(hurray_tensor_descriptor(t, &mut d), HURRAY_OK);
        expect(hurray_tensor_buffers(t, &mut l), HURRAY_OK);
        let mut n = 0usize;
        expect(hurray_buffer_list_len(l, &mut n), HURRAY_OK);
        let mut s = Vec::new();
        for i in 0..n {
            let (mut b, mut p, mut len) = (null_mut(), null_mut(), 0u64);
            expect(hurray_buffer_list_get(l, i, &mut b), HURRAY_OK);
            expect(hurray_ffi::buffer::hurray_buffer_data_ptr(b, &mut p), HURRAY_OK);
            expect(hurray_ffi::buffer::hurray_buffer_byte_size(b, &mut len), HURRAY_OK);
            s.push(HurrayIoSlice { ptr: p as *const u8, len: len as usize });
        }
        let mut out = vec![0f32; 8];
        let o = out.as_mut_ptr().cast();
        expect(hurray_sparse_densify(d, s.as_ptr(), n, o, 31), HURRAY_ERR_BUFFER_TOO_SMALL);
        expect(hurray_sparse_densify(d, s.as_ptr(), n - 1, o, 32), HURRAY_ERR_INVALID_ARGUMENT);
        expect(hurray_sparse_densify(d, s.as_ptr(), n, o, 32), HURRAY_OK);
        expect(hurray_paged_gather(d, s.as_ptr(), n, o, 32), HURRAY_ERR_INVALID_ARGUMENT);
        out
    }
}

/// Member `i` of `c`: its role, and its tensor or nested composite.
///
/// # Safety
/// `c` is a live composite handle with more than `i` members.
unsafe fn role(c: *const HurrayComposite, i: usize) -> (String, *mut HurrayTensor, *mut HurrayComposite) {
    // SAFETY: `c` is a live composite with more than `i` members (this function's # Safety); the role bytes are owned
    // by `c`, `rl` long.
    unsafe {
        let (mut rp, mut rl, mut t, mut k) = (null(), 0usize, null_mut(), null_mut());
        expect(hurray_composite_member(c, i, &mut rp, &mut rl, &mut t, &mut k), HURRAY_OK);
        (String::from_utf8(std::slice::from_raw_parts(rp, rl).to_vec()).unwrap(), t, k)
    }
}

/// Checks the layer built by `builder` against `dense`.
///
/// # Safety
/// `c` is a live composite handle.
unsafe fn check_composite(c: *mut HurrayComposite, dense: &[f32]) {
    // SAFETY: `c` is a live composite (this function's # Safety); member handles read from it are borrowed from `c`,
    // which outlives them here.
    unsafe {
        let mut n = 0usize;
        expect(hurray_composite_member_count(c, &mut n), HURRAY_OK);
        assert_eq!(n, 2);
        let mut head = null_mut();
        expect(hurray_composite_head(c, &mut head), HURRAY_OK);
        let mut m = HurrayCompositeMembership::default();
        expect(hurray_descriptor_composite(head, &mut m), HURRAY_OK);
        assert_eq!((m.present, m.depth, m.member_count), (1, 0, 2));
        let mut v = 0u16;
        expect(hurray_descriptor_version(head, &mut v), HURRAY_OK);
        assert_eq!(v, 2);
        let (r0, t0, k0) = role(c, 0);
        assert_eq!(r0, "weight");
        assert!(k0.is_null());
        assert_eq!(densified(t0), dense);
        let mut td = null_mut();
        expect(hurray_tensor_descriptor(t0, &mut td), HURRAY_OK);
        let mut sp = HurraySparse::default();
        expect(hurray_descriptor_sparse(td, &mut sp), HURRAY_OK);
        assert_eq!((sp.index_type, sp.canonical, sp.nnz), (HURRAY_DTYPE_INT32, 1, 3));
        let mut t0b = t0;
        expect(hurray_tensor_destroy(&mut t0b), HURRAY_ERR_INVALID_ARGUMENT); // borrowed
        let (r1, t1, k1) = role(c, 1);
        assert_eq!(r1, "inner");
        assert!(t1.is_null());
        let (r10, t10, _) = role(k1, 0);
        assert_eq!(r10, "again");
        assert_eq!(densified(t10), dense);
        let (mut rp, mut rl) = (null(), 0usize);
        expect(hurray_descriptor_composite_role(head, 1, &mut rp, &mut rl), HURRAY_OK);
        assert_eq!(std::slice::from_raw_parts(rp, rl), b"inner");
        expect(hurray_descriptor_composite_role(head, 2, &mut rp, &mut rl), HURRAY_ERR_INVALID_ARGUMENT);
    }
}

/// A composite "layer": weight (CSR) and a nested composite holding the same CSR again.
///
/// # Safety
/// `d` is a live descriptor handle, and `s`'s slices stay valid until the builder is written or destroyed.
unsafe fn builder(d: *const HurrayDescriptor, s: &[HurrayIoSlice]) -> *mut HurrayCompositeBuilder {
    // SAFETY: `d` is a live descriptor and `s`'s slices stay valid while the builder lives (this function's # Safety);
    // the names are literals of the lengths given.
    unsafe {
        let (mut b, mut inner) = (null_mut(), null_mut());
        expect(hurray_composite_builder_new(b"layer".as_ptr(), 5, &mut b), HURRAY_OK);
        expect(hurray_composite_builder_add_tensor(b, b"weight".as_ptr(), 6, d, s.as_ptr(), s.len()), HURRAY_OK);
        expect(hurray_composite_builder_new(null(), 0, &mut inner), HURRAY_OK);
        expect(hurray_composite_builder_add_tensor(inner, b"again".as_ptr(), 5, d, s.as_ptr(), s.len()), HURRAY_OK);
        expect(hurray_composite_builder_add_composite(b, b"inner".as_ptr(), 5, &mut inner), HURRAY_OK);
        assert!(inner.is_null());
        b
    }
}

#[test]
fn a_composite_round_trips_through_the_c_abi_in_both_views() {
    let (parts, dense) = csr_parts();
    // SAFETY: `parts` outlives `s` and every builder, writer and reader made here; handles are made and destroyed in
    // this block; pointers passed are live locals or slices valid for the lengths given.
    unsafe {
        let d = csr_descriptor(&parts);
        let s = slices(&parts);
        let mut b = builder(d, &s);
        let mut m = Mem::writing(0);
        let t = transport(&mut m);
        let mut w = null_mut();
        expect(hurray_writer_new(&t, null(), &mut w), HURRAY_OK);
        expect(hurray_writer_write_tensor(w, d, s.as_ptr(), s.len()), HURRAY_OK);
        expect(hurray_writer_write_composite(w, b), HURRAY_OK);
        expect(hurray_writer_finish(w), HURRAY_OK);
        expect(hurray_writer_destroy(&mut w), HURRAY_OK);
        expect(hurray_composite_builder_destroy(&mut b), HURRAY_OK);
        let bytes = std::mem::take(&mut m.bytes);

        // Flat view: tensor, head (no buffers), weight, nested head, again.
        let mut rm = Mem::reading(bytes.clone(), 7);
        let rt = transport(&mut rm);
        let mut r = null_mut();
        expect(hurray_reader_new(&rt, null(), &mut r), HURRAY_OK);
        let mut counts = Vec::new();
        loop {
            let mut t = null_mut();
            let st = hurray_reader_next_tensor(r, &mut t);
            if st == HURRAY_END_OF_STREAM {
                break;
            }
            expect(st, HURRAY_OK);
            let mut l = null_mut();
            expect(hurray_tensor_buffers(t, &mut l), HURRAY_OK);
            let mut n = 0usize;
            expect(hurray_buffer_list_len(l, &mut n), HURRAY_OK);
            counts.push(n);
            expect(hurray_tensor_destroy(&mut t), HURRAY_OK);
        }
        assert_eq!(counts, [3, 0, 3, 0, 3]);
        expect(hurray_reader_destroy(&mut r), HURRAY_OK);

        // Item view.
        let mut rm = Mem::reading(bytes, 7);
        let rt = transport(&mut rm);
        expect(hurray_reader_new(&rt, null(), &mut r), HURRAY_OK);
        let (mut t, mut c) = (null_mut(), null_mut());
        expect(hurray_reader_next_item(r, &mut t, &mut c), HURRAY_OK);
        assert!(!t.is_null() && c.is_null());
        assert_eq!(densified(t), dense);
        expect(hurray_tensor_destroy(&mut t), HURRAY_OK);
        expect(hurray_reader_next_item(r, &mut t, &mut c), HURRAY_OK);
        assert!(t.is_null() && !c.is_null());
        check_composite(c, &dense);
        expect(hurray_composite_destroy(&mut c), HURRAY_OK);
        assert!(c.is_null());
        expect(hurray_reader_next_item(r, &mut t, &mut c), HURRAY_END_OF_STREAM);
        expect(hurray_reader_destroy(&mut r), HURRAY_OK);
        expect(hurray_descriptor_destroy(d), HURRAY_OK);
    }
}

#[test]
fn a_composite_is_found_by_name_in_a_container_through_the_c_abi() {
    let (parts, dense) = csr_parts();
    // SAFETY: `parts` outlives `s` and every builder, writer and reader made here; handles are made and destroyed in
    // this block; pointers passed are live locals or slices valid for the lengths given.
    unsafe {
        let d = csr_descriptor(&parts);
        let s = slices(&parts);
        let mut b = builder(d, &s);
        let mut m = Mem::writing(0);
        let t = transport(&mut m);
        let mut w = null_mut();
        expect(hurray_file_writer_new(&t, null(), &mut w), HURRAY_OK);
        expect(hurray_file_writer_add_composite(w, b), HURRAY_OK);
        expect(hurray_file_writer_finish(w, null_mut()), HURRAY_OK);
        expect(hurray_file_writer_destroy(&mut w), HURRAY_OK);
        expect(hurray_composite_builder_destroy(&mut b), HURRAY_OK);
        let bytes = std::mem::take(&mut m.bytes);
        let mut r = null_mut();
        expect(hurray_file_reader_open_span(bytes.as_ptr().cast(), bytes.len() as u64, null(), &mut r), HURRAY_OK);
        let mut c = null_mut();
        expect(hurray_file_reader_read_composite(r, b"layer".as_ptr(), 5, &mut c), HURRAY_OK);
        check_composite(c, &dense);
        expect(hurray_composite_destroy(&mut c), HURRAY_OK);
        expect(hurray_file_reader_read_composite(r, b"layer/weight".as_ptr(), 12, &mut c), HURRAY_ERR_INVALID_ARGUMENT);
        expect(hurray_file_reader_read_composite(r, b"nope".as_ptr(), 4, &mut c), HURRAY_ERR_NOT_FOUND);
        assert!(c.is_null());
        expect(hurray_file_reader_check_composites(r), HURRAY_OK);
        expect(hurray_file_reader_verify(r), HURRAY_OK);
        expect(hurray_file_reader_destroy(&mut r), HURRAY_OK);
        expect(hurray_descriptor_destroy(d), HURRAY_OK);
    }
}

#[test]
fn hostile_sparse_tensors_are_refused_through_the_c_abi() {
    let (mut parts, _) = csr_parts();
    parts[2] = le(&[1i32, 2, 4], i32::to_le_bytes); // column 4 of a 4-column matrix

    // SAFETY: `parts` outlives `s` and `m` outlives the writer and reader made here; handles are made and destroyed in
    // this block; pointers passed are live locals or slices valid for the lengths given.
    unsafe {
        let d = csr_descriptor(&parts);
        let s = slices(&parts);
        let mut m = Mem::writing(0);
        let t = transport(&mut m);
        let mut w = null_mut();
        expect(hurray_writer_new(&t, null(), &mut w), HURRAY_OK);
        expect(hurray_writer_write_tensor(w, d, s.as_ptr(), s.len()), HURRAY_ERR_CORRUPT);
        assert!(last_error().contains("outside 0..4"), "{}", last_error());
        let mut b = null_mut();
        expect(hurray_composite_builder_new(null(), 0, &mut b), HURRAY_OK);
        expect(hurray_composite_builder_add_tensor(b, b"w".as_ptr(), 1, d, s.as_ptr(), s.len()), HURRAY_OK);
        expect(hurray_composite_builder_add_tensor(b, b"w".as_ptr(), 1, d, s.as_ptr(), s.len()), HURRAY_OK);
        // Everything is checked before the first byte: the duplicate role, then the index.
        expect(hurray_writer_write_composite(w, b), HURRAY_ERR_DUPLICATE_NAME);
        expect(hurray_composite_builder_destroy(&mut b), HURRAY_OK);
        expect(hurray_writer_destroy(&mut w), HURRAY_OK);
        // A sparse block with a non-integer index type is refused at build time.
        let mut bl = null_mut();
        expect(hurray_descriptor_builder_new(HURRAY_DTYPE_FLOAT32, [2u64, 4].as_ptr(), 2, &mut bl), HURRAY_OK);
        let sp = HurraySparse { index_type: HURRAY_DTYPE_FLOAT32, nnz: 3, ..Default::default() };
        expect(hurray_descriptor_builder_set_sparse(bl, &sp), HURRAY_OK);
        let mut out = null_mut();
        expect(hurray_descriptor_builder_build(bl, &mut out), HURRAY_ERR_INVALID_ARGUMENT);
        expect(hurray_descriptor_builder_destroy(&mut bl), HURRAY_OK);
        expect(hurray_descriptor_destroy(d), HURRAY_OK);
    }
}

#[test]
fn a_container_composite_missing_a_member_fails_the_structure_check_and_verify() {
    use hurray_core::composite::{head_descriptor, CompositeInfo};
    use hurray_core::{ElementType, FileWriter, FileWriterOptions, Shape, TensorDescriptor};
    // Head "x" lists two members; only "x/a" is stored.
    let mut w = FileWriter::new(Vec::new(), FileWriterOptions::default()).unwrap();
    let head = head_descriptor(Some("x"), vec!["a".into(), "b".into()]).unwrap();
    w.add_tensor(&head, &[]).unwrap();
    let a = TensorDescriptor::dense(ElementType::Uint8, Shape::new(vec![1]).unwrap()).unwrap();
    let a = a.with_composite(Some(CompositeInfo::member(1, 0))).unwrap().with_name("x/a").unwrap();
    w.add_tensor(&a, &[&[7]]).unwrap();
    w.finish().unwrap();
    let bytes = w.into_transport();
    // SAFETY: `bytes` outlives the reader made and destroyed here.
    unsafe {
        let mut r = null_mut();
        expect(hurray_file_reader_open_span(bytes.as_ptr().cast(), bytes.len() as u64, null(), &mut r), HURRAY_OK);
        expect(hurray_file_reader_check_composites(r), HURRAY_ERR_CORRUPT);
        assert!(last_error().contains("\"x/b\""), "{}", last_error());
        expect(hurray_file_reader_verify(r), HURRAY_ERR_CORRUPT);
        expect(hurray_file_reader_destroy(&mut r), HURRAY_OK);
        expect(hurray_file_reader_check_composites(null_mut()), HURRAY_ERR_NULL_POINTER);
    }
}
