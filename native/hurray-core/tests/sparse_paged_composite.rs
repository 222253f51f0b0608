//! Sparse, block-paged and composite tensors: round trips through a stream (flat and item
//! views) and a container, densify and gather against values computed here, hostile inputs.

mod common;

use common::Rng;
use hurray_core::composite::{self, CompositeSpec, Item, ItemReader, Member, NodeRef};
use hurray_core::crc32c::crc32c;
use hurray_core::file::Span;
use hurray_core::paged::{self, PagingInfo};
use hurray_core::sparse::{self, IndexType, SparseInfo};
use hurray_core::stream::{ReadTransport, SliceSource};
use hurray_core::{
    BufferHandle, DeviceTag, ElementType, ErrorKind, FileReader, FileReaderOptions, FileWriter, FileWriterOptions,
    LayoutDescriptor, ReaderOptions, Shape, StreamReader, StreamWriter, SyncMode, TensorDescriptor, WriterOptions,
    DESCRIPTOR_VERSION_2,
};

fn cpu(n: usize) -> BufferHandle {
    BufferHandle::new(n as u64, 64, DeviceTag::Cpu, SyncMode::ProducerSynced).unwrap()
}

fn i32s(v: &[i32]) -> Vec<u8> {
    v.iter().flat_map(|x| x.to_le_bytes()).collect()
}
fn i64s(v: &[i64]) -> Vec<u8> {
    v.iter().flat_map(|x| x.to_le_bytes()).collect()
}
fn f32s(v: &[f32]) -> Vec<u8> {
    v.iter().flat_map(|x| x.to_le_bytes()).collect()
}
fn to_f32(b: &[u8]) -> Vec<f32> {
    b.chunks_exact(4).map(|c| f32::from_le_bytes(c.try_into().unwrap())).collect()
}

fn sparse_desc(
    et: ElementType,
    dims: &[u64],
    layout: LayoutDescriptor,
    info: SparseInfo,
    bufs: &[&[u8]],
) -> hurray_core::Result<TensorDescriptor> {
    TensorDescriptor::new(
        DESCRIPTOR_VERSION_2,
        0,
        et,
        Shape::new(dims.to_vec()).unwrap(),
        0,
        layout,
        bufs.iter().map(|b| cpu(b.len())).collect(),
        None,
        Some(info),
        None,
        None,
    )
}

/// A random dense matrix with about a third of its entries non-zero.
fn random_dense(rng: &mut Rng, rows: usize, cols: usize) -> Vec<f32> {
    (0..rows * cols).map(|_| if rng.below(3) == 0 { (rng.below(1000) as f32) - 500.0 } else { 0.0 }).collect()
}

/// CSR arrays of a dense row-major matrix, computed independently of the library.
fn to_csr(d: &[f32], rows: usize, cols: usize) -> (Vec<f32>, Vec<i32>, Vec<i32>) {
    let (mut v, mut ptr, mut idx) = (Vec::new(), vec![0], Vec::new());
    for r in 0..rows {
        for c in 0..cols {
            if d[r * cols + c] != 0.0 {
                v.push(d[r * cols + c]);
                idx.push(c as i32);
            }
        }
        ptr.push(v.len() as i32);
    }
    (v, ptr, idx)
}

fn densify(d: &TensorDescriptor, bufs: &[&[u8]]) -> hurray_core::Result<Vec<u8>> {
    let mut out = vec![0xAAu8; d.dense_byte_count() as usize];
    sparse::densify(d, bufs, &mut out)?;
    Ok(out)
}

#[test]
fn csr_csc_coo_bsr_densify_to_the_matrix_they_came_from() {
    let mut rng = Rng::new(0x5eed);
    for _ in 0..20 {
        let (rows, cols) = (2 * (1 + rng.below(6) as usize), 2 * (1 + rng.below(6) as usize));
        let dense = random_dense(&mut rng, rows, cols);
        let dims = [rows as u64, cols as u64];
        // CSR
        let (v, p, i) = to_csr(&dense, rows, cols);
        let (vb, pb, ib) = (f32s(&v), i32s(&p), i32s(&i));
        let bufs: [&[u8]; 3] = [&vb, &pb, &ib];
        let d = sparse_desc(
            ElementType::Float32,
            &dims,
            LayoutDescriptor::Csr,
            SparseInfo::new(IndexType::Int32, v.len() as u64, true),
            &bufs,
        )
        .unwrap();
        assert_eq!(to_f32(&densify(&d, &bufs).unwrap()), dense);
        // CSC = CSR of the transpose
        let t: Vec<f32> = (0..cols * rows).map(|k| dense[(k % rows) * cols + k / rows]).collect();
        let (v, p, i) = to_csr(&t, cols, rows);
        let (vb, pb, ib) = (
            f32s(&v),
            i64s(&p.iter().map(|&x| x as i64).collect::<Vec<_>>()),
            i64s(&i.iter().map(|&x| x as i64).collect::<Vec<_>>()),
        );
        let bufs: [&[u8]; 3] = [&vb, &pb, &ib];
        let d = sparse_desc(
            ElementType::Float32,
            &dims,
            LayoutDescriptor::Csc,
            SparseInfo::new(IndexType::Int64, v.len() as u64, true),
            &bufs,
        )
        .unwrap();
        assert_eq!(to_f32(&densify(&d, &bufs).unwrap()), dense);
        // COO, in reverse order (not canonical), one array per dimension
        let nz: Vec<(usize, usize)> = (0..rows)
            .flat_map(|r| (0..cols).map(move |c| (r, c)))
            .filter(|&(r, c)| dense[r * cols + c] != 0.0)
            .rev()
            .collect();
        let mut ix: Vec<i32> = nz.iter().map(|&(r, _)| r as i32).collect();
        ix.extend(nz.iter().map(|&(_, c)| c as i32));
        let vb = f32s(&nz.iter().map(|&(r, c)| dense[r * cols + c]).collect::<Vec<_>>());
        let ib = i32s(&ix);
        let bufs: [&[u8]; 2] = [&vb, &ib];
        let d = sparse_desc(
            ElementType::Float32,
            &dims,
            LayoutDescriptor::Coo,
            SparseInfo::new(IndexType::Int32, nz.len() as u64, false),
            &bufs,
        )
        .unwrap();
        assert_eq!(to_f32(&densify(&d, &bufs).unwrap()), dense);
        if nz.len() > 1 {
            // The same entries claimed canonical are refused: they are in decreasing order.
            let d = sparse_desc(
                ElementType::Float32,
                &dims,
                LayoutDescriptor::Coo,
                SparseInfo::new(IndexType::Int32, nz.len() as u64, true),
                &bufs,
            )
            .unwrap();
            assert_eq!(hurray_core::layouts::check_contents(&d, &bufs).unwrap_err().kind(), ErrorKind::Corrupt);
        }
        // BSR with 2x2 blocks: every block that has a non-zero is stored.
        let (br, bc) = (2usize, 2usize);
        let (mut vals, mut ptr, mut idx) = (Vec::new(), vec![0i32], Vec::new());
        for bi in 0..rows / br {
            for bj in 0..cols / bc {
                let blk: Vec<f32> = (0..br * bc).map(|k| dense[(bi * br + k / bc) * cols + bj * bc + k % bc]).collect();
                if blk.iter().any(|&x| x != 0.0) {
                    vals.extend(blk);
                    idx.push(bj as i32);
                }
            }
            ptr.push(idx.len() as i32);
        }
        let (vb, pb, ib) = (f32s(&vals), i32s(&ptr), i32s(&idx));
        let bufs: [&[u8]; 3] = [&vb, &pb, &ib];
        let d = sparse_desc(
            ElementType::Float32,
            &dims,
            LayoutDescriptor::Bsr,
            SparseInfo::bsr(IndexType::Int32, idx.len() as u64, 2, 2, true),
            &bufs,
        )
        .unwrap();
        assert_eq!(d.encode().unwrap()[4], 2, "sparse descriptors are version 2");
        assert_eq!(to_f32(&densify(&d, &bufs).unwrap()), dense);
    }
}

#[test]
fn non_canonical_duplicates_are_summed_like_scipy() {
    // 3-D COO with int64 indices; entry (1,0,2) appears twice.
    let idx = i64s(&[1, 0, 1, /* dim 1 */ 0, 1, 0, /* dim 2 */ 2, 0, 2]);
    let vals: Vec<u8> = [5i32, 7, -2].iter().flat_map(|x| x.to_le_bytes()).collect();
    let bufs: [&[u8]; 2] = [&vals, &idx];
    let d = sparse_desc(
        ElementType::Int32,
        &[2, 2, 3],
        LayoutDescriptor::Coo,
        SparseInfo::new(IndexType::Int64, 3, false),
        &bufs,
    )
    .unwrap();
    let out = densify(&d, &bufs).unwrap();
    let got: Vec<i32> = out.chunks_exact(4).map(|c| i32::from_le_bytes(c.try_into().unwrap())).collect();
    let mut want = vec![0i32; 12];
    want[3] = 7; // (0,1,0)
    want[6 + 2] = 3; // (1,0,2): 5 + -2
    assert_eq!(got, want);
    // float16 cannot be summed here: refused rather than silently wrong.
    let d = sparse_desc(
        ElementType::Float16,
        &[2, 2, 3],
        LayoutDescriptor::Coo,
        SparseInfo::new(IndexType::Int64, 3, false),
        &[&vals[..6], &idx],
    )
    .unwrap();
    assert_eq!(densify(&d, &[&vals[..6], &idx]).unwrap_err().kind(), ErrorKind::Unsupported);
}

fn paged_desc(dims: &[u64], page_size: u32, pages: usize, table: &[i32]) -> (TensorDescriptor, Vec<u8>, Vec<u8>) {
    let row: u64 = dims[1..].iter().product();
    let page_bytes = (row * u64::from(page_size)) as usize * 4;
    let data: Vec<u8> = (0..pages * page_bytes / 4).flat_map(|k| (k as f32).to_le_bytes()).collect();
    let tb = i32s(table);
    let d = TensorDescriptor::new(
        DESCRIPTOR_VERSION_2,
        0,
        ElementType::Float32,
        Shape::new(dims.to_vec()).unwrap(),
        0,
        LayoutDescriptor::BlockPaged,
        vec![cpu(data.len()), cpu(tb.len())],
        None,
        None,
        Some(PagingInfo::new(IndexType::Int32, page_size, table.len() as u64, pages as u64)),
        None,
    )
    .unwrap();
    (d, data, tb)
}

#[test]
fn paged_gather_follows_the_page_table() {
    // 7 tokens, 2 heads x 3 features, pages of 3 tokens: blocks 0,1,2 in pages 4,0,2.
    let (d, data, tb) = paged_desc(&[7, 2, 3], 3, 5, &[4, 0, 2]);
    let mut out = vec![0u8; d.dense_byte_count() as usize];
    paged::gather(&d, &[&data, &tb], &mut out).unwrap();
    let got = to_f32(&out);
    let row = 6;
    let want: Vec<f32> = (0..7 * row)
        .map(|k| {
            let (tok, f) = (k / row, k % row);
            let page = [4, 0, 2][tok / 3];
            (page * 3 * row + (tok % 3) * row + f) as f32
        })
        .collect();
    assert_eq!(got, want);
    // An entry past the page buffer is refused, by the check and by gather.
    let (d, data, tb) = paged_desc(&[7, 2, 3], 3, 5, &[4, 5, 2]);
    let e = paged::gather(&d, &[&data, &tb], &mut out).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Corrupt);
    assert!(e.message().contains("page-table entry 1"), "{}", e.message());
    let (_, _, tb) = paged_desc(&[7, 2, 3], 3, 5, &[4, -1, 2]);
    assert_eq!(paged::check_contents(&d, &[&data, &tb]).unwrap_err().kind(), ErrorKind::Corrupt);
}

struct Fixture {
    dense: Vec<f32>,
    csr: (TensorDescriptor, Vec<Vec<u8>>),
    paged: (TensorDescriptor, Vec<Vec<u8>>),
    scales: (TensorDescriptor, Vec<Vec<u8>>),
}

fn fixture() -> Fixture {
    let dense = vec![0.0, 1.5, 0.0, 0.0, 0.0, 0.0, -2.0, 3.0];
    let (v, p, i) = to_csr(&dense, 2, 4);
    let bufs = vec![f32s(&v), i32s(&p), i32s(&i)];
    let refs: Vec<&[u8]> = bufs.iter().map(|b| b.as_slice()).collect();
    let d = sparse_desc(
        ElementType::Float32,
        &[2, 4],
        LayoutDescriptor::Csr,
        SparseInfo::new(IndexType::Int32, 3, true),
        &refs,
    )
    .unwrap();
    let (pd, pdata, ptb) = paged_desc(&[5, 4], 2, 4, &[3, 1, 0]);
    let sd = TensorDescriptor::dense(ElementType::Float32, Shape::new(vec![4]).unwrap()).unwrap();
    Fixture { dense, csr: (d, bufs), paged: (pd, vec![pdata, ptb]), scales: (sd, vec![f32s(&[0.5, 0.25, 2.0, 1.0])]) }
}

/// A model layer: a sparse weight, a nested KV cache composite (pages + a plain tensor), scales.
fn layer_spec(f: &Fixture) -> CompositeSpec<'_> {
    fn refs(b: &[Vec<u8>]) -> Vec<&[u8]> {
        b.iter().map(|x| x.as_slice()).collect()
    }
    CompositeSpec {
        name: Some("layer0".into()),
        members: vec![
            ("weight".into(), Member::Tensor(&f.csr.0, refs(&f.csr.1))),
            (
                "kv".into(),
                Member::Composite(CompositeSpec {
                    name: None,
                    members: vec![
                        ("cache".into(), Member::Tensor(&f.paged.0, refs(&f.paged.1))),
                        ("scales".into(), Member::Tensor(&f.scales.0, refs(&f.scales.1))),
                    ],
                }),
            ),
            ("bias".into(), Member::Tensor(&f.scales.0, refs(&f.scales.1))),
        ],
    }
}

fn check_layer(c: &composite::Composite, f: &Fixture) {
    assert_eq!(c.roles(), ["weight", "kv", "bias"]);
    let Item::Tensor(w) = c.get("weight").unwrap() else { panic!("weight is a tensor") };
    assert_eq!(w.descriptor.layout(), &LayoutDescriptor::Csr);
    let views: Vec<&[u8]> = w.buffers.iter().map(|b| b.as_slice()).collect();
    assert_eq!(to_f32(&densify(&w.descriptor, &views).unwrap()), f.dense);
    let walk = c.walk();
    let roles: Vec<(usize, &str, Option<usize>)> = walk.iter().map(|n| (n.depth, n.role, n.parent)).collect();
    assert_eq!(
        roles,
        [
            (0, "", None),
            (1, "weight", Some(0)),
            (1, "kv", Some(0)),
            (2, "cache", Some(2)),
            (2, "scales", Some(2)),
            (1, "bias", Some(0))
        ]
    );
    let NodeRef::Tensor(cache) = walk[3].item else { panic!("cache is a tensor") };
    assert_eq!(cache.descriptor.paging().unwrap().page_size(), 2);
    let views: Vec<&[u8]> = cache.buffers.iter().map(|b| b.as_slice()).collect();
    let mut out = vec![0u8; cache.descriptor.dense_byte_count() as usize];
    paged::gather(&cache.descriptor, &views, &mut out).unwrap();
    let mut want = Vec::new();
    for b in [3usize, 1, 0] {
        want.extend_from_slice(&f.paged.1[0][b * 32..b * 32 + 32]);
    }
    assert_eq!(out, want[..out.len()]);
}

#[test]
fn nested_composite_round_trips_through_a_stream_in_both_views() {
    let f = fixture();
    let mut w = StreamWriter::new(Vec::new(), WriterOptions::default());
    w.write_tensor(&f.scales.0, &[&f.scales.1[0]]).unwrap();
    composite::write_composite(&mut w, &layer_spec(&f)).unwrap();
    w.write_tensor(&f.csr.0, &f.csr.1.iter().map(|b| b.as_slice()).collect::<Vec<_>>()).unwrap();
    w.finish().unwrap();
    let bytes = w.into_transport();

    // Flat view: the head is a buffer-less tensor, then the members in preorder.
    let mut r = StreamReader::new(SliceSource::new(&bytes, 4096), ReaderOptions::default()).unwrap();
    let mut flat = Vec::new();
    while let Some(t) = r.next_tensor().unwrap() {
        let c = t.descriptor.composite();
        flat.push((t.descriptor.layout().name(), t.buffers.len(), c.map(|c| (c.depth(), c.index(), c.member_count()))));
    }
    assert_eq!(
        flat,
        [
            ("row-major", 1, None),
            ("row-major", 0, Some((0, 0, 3))),
            ("csr", 3, Some((1, 0, 0))),
            ("row-major", 0, Some((1, 1, 2))),
            ("paged", 2, Some((2, 0, 0))),
            ("row-major", 1, Some((2, 1, 0))),
            ("row-major", 1, Some((1, 2, 0))),
            ("csr", 3, None),
        ]
    );

    // Item view.
    let mut r = StreamReader::new(SliceSource::new(&bytes, 4096), ReaderOptions::default()).unwrap();
    let mut items = ItemReader::new();
    assert!(matches!(items.next_item(&mut r).unwrap(), Some(Item::Tensor(_))));
    let Some(Item::Composite(c)) = items.next_item(&mut r).unwrap() else { panic!("a composite") };
    assert_eq!(c.name(), Some("layer0"));
    check_layer(&c, &f);
    assert!(matches!(items.next_item(&mut r).unwrap(), Some(Item::Tensor(_))));
    assert!(items.next_item(&mut r).unwrap().is_none());
}

#[test]
fn composite_round_trips_through_a_container_by_name() {
    let f = fixture();
    let mut w = FileWriter::new(Vec::new(), FileWriterOptions::default()).unwrap();
    composite::add_composite(&mut w, &layer_spec(&f)).unwrap();
    let plain =
        TensorDescriptor::dense(ElementType::Uint8, Shape::new(vec![3]).unwrap()).unwrap().with_name("zzz").unwrap();
    w.add_tensor(&plain, &[&[1, 2, 3]]).unwrap();
    w.finish().unwrap();
    let bytes = w.into_transport();
    let mut r = FileReader::open(Span::new(&bytes), FileReaderOptions::default()).unwrap();
    let c = composite::read_composite(&mut r, "layer0").unwrap();
    check_layer(&c, &f);
    assert!(r.find(b"layer0/kv/cache").unwrap().is_some());
    assert_eq!(composite::read_composite(&mut r, "nope").unwrap_err().kind(), ErrorKind::NotFound);
    assert_eq!(composite::read_composite(&mut r, "zzz").unwrap_err().kind(), ErrorKind::InvalidArgument);
    assert_eq!(composite::read_composite(&mut r, "layer0/kv").unwrap_err().kind(), ErrorKind::InvalidArgument);
}

#[test]
fn sparse_descriptors_round_trip_their_encoding() {
    let f = fixture();
    for d in [&f.csr.0, &f.paged.0] {
        let e = d.encode().unwrap();
        assert_eq!(&TensorDescriptor::decode(&e).unwrap(), d);
        // The same bytes labelled version 1 use a reserved layout there.
        let mut v1 = e.clone();
        v1[4] = 1;
        assert_eq!(TensorDescriptor::decode(&v1).unwrap_err().kind(), ErrorKind::Unsupported);
    }
    // A version-2 descriptor without a version-2 block has a version-1 encoding instead.
    let mut e = f.scales.0.encode().unwrap();
    e[4] = 2;
    assert_eq!(TensorDescriptor::decode(&e).unwrap_err().kind(), ErrorKind::Corrupt);
    // Version 1 passed for a sparse tensor is refused by the constructor.
    let refs: Vec<&[u8]> = f.csr.1.iter().map(|b| b.as_slice()).collect();
    let e = TensorDescriptor::new(
        1,
        0,
        ElementType::Float32,
        Shape::new(vec![2, 4]).unwrap(),
        0,
        LayoutDescriptor::Csr,
        refs.iter().map(|b| cpu(b.len())).collect(),
        None,
        Some(SparseInfo::new(IndexType::Int32, 3, true)),
        None,
        None,
    )
    .unwrap_err();
    assert_eq!(e.kind(), ErrorKind::VersionMismatch);
}

#[test]
fn hostile_sparse_inputs_get_clear_errors() {
    let csr = |ptr: &[i32], idx: &[i32], nnz: u64, vals: usize| -> hurray_core::Result<()> {
        let (vb, pb, ib) = (vec![0u8; vals * 4], i32s(ptr), i32s(idx));
        let bufs: [&[u8]; 3] = [&vb, &pb, &ib];
        let d = sparse_desc(
            ElementType::Float32,
            &[2, 3],
            LayoutDescriptor::Csr,
            SparseInfo::new(IndexType::Int32, nnz, true),
            &bufs,
        )?;
        hurray_core::layouts::check_contents(&d, &bufs)
    };
    assert!(csr(&[0, 1, 2], &[2, 0], 2, 2).is_ok());
    let msg = |e: hurray_core::Error| (e.kind(), e.message().to_string());
    // Index out of range.
    let (k, m) = msg(csr(&[0, 1, 2], &[3, 0], 2, 2).unwrap_err());
    assert_eq!(k, ErrorKind::Corrupt);
    assert!(m.contains("outside 0..3"), "{m}");
    // Decreasing indptr.
    let (k, m) = msg(csr(&[0, 2, 1], &[0, 1], 2, 2).unwrap_err());
    assert_eq!(k, ErrorKind::Corrupt);
    assert!(m.contains("decreases"), "{m}");
    // indptr not starting at 0, not ending at nnz.
    assert!(msg(csr(&[1, 1, 2], &[0, 1], 2, 2).unwrap_err()).1.contains("starts at 1"));
    assert!(msg(csr(&[0, 1, 1], &[0, 1], 2, 2).unwrap_err()).1.contains("ends at 1"));
    // nnz disagreeing between buffers: the values buffer has 3 entries, nnz says 2.
    assert_eq!(csr(&[0, 1, 2], &[2, 0], 2, 3).unwrap_err().kind(), ErrorKind::InvalidLayout);
    assert_eq!(csr(&[0, 1, 2], &[2, 0], 2, 1).unwrap_err().kind(), ErrorKind::BufferTooSmall);
    // Unsorted indices in a row promised canonical; duplicates too.
    assert!(msg(csr(&[0, 2, 2], &[2, 0], 2, 2).unwrap_err()).1.contains("strictly increasing"));
    assert!(msg(csr(&[0, 2, 2], &[1, 1], 2, 2).unwrap_err()).1.contains("strictly increasing"));
    // nnz overflowing: as many values as a u64 cannot count bytes of.
    let d = TensorDescriptor::new(
        DESCRIPTOR_VERSION_2,
        0,
        ElementType::Float32,
        Shape::new(vec![1 << 40, 1 << 20]).unwrap(),
        0,
        LayoutDescriptor::Csr,
        vec![cpu(0), cpu(0), cpu(0)],
        None,
        Some(SparseInfo::new(IndexType::Int64, u64::MAX / 2, false)),
        None,
        None,
    );
    assert_eq!(d.unwrap_err().kind(), ErrorKind::LimitExceeded);
    // int32 indices cannot count past i32::MAX.
    let d = TensorDescriptor::new(
        DESCRIPTOR_VERSION_2,
        0,
        ElementType::Int8,
        Shape::new(vec![1 << 20, 1 << 20]).unwrap(),
        0,
        LayoutDescriptor::Csr,
        vec![cpu(0), cpu(0), cpu(0)],
        None,
        Some(SparseInfo::new(IndexType::Int32, 1 << 31, false)),
        None,
        None,
    );
    assert_eq!(d.unwrap_err().kind(), ErrorKind::LimitExceeded);
    // Canonical nnz larger than the shape has positions.
    let d = TensorDescriptor::new(
        DESCRIPTOR_VERSION_2,
        0,
        ElementType::Int8,
        Shape::new(vec![2, 2]).unwrap(),
        0,
        LayoutDescriptor::Csr,
        vec![cpu(5), cpu(12), cpu(20)],
        None,
        Some(SparseInfo::new(IndexType::Int32, 5, true)),
        None,
        None,
    );
    assert_eq!(d.unwrap_err().kind(), ErrorKind::Corrupt);
    // A BSR shape that is not a multiple of the block; a block shape on CSR.
    let d = TensorDescriptor::new(
        DESCRIPTOR_VERSION_2,
        0,
        ElementType::Int8,
        Shape::new(vec![3, 4]).unwrap(),
        0,
        LayoutDescriptor::Bsr,
        vec![cpu(0), cpu(8), cpu(0)],
        None,
        Some(SparseInfo::bsr(IndexType::Int32, 0, 2, 2, true)),
        None,
        None,
    );
    assert_eq!(d.unwrap_err().kind(), ErrorKind::InvalidLayout);
    let d = TensorDescriptor::new(
        DESCRIPTOR_VERSION_2,
        0,
        ElementType::Int8,
        Shape::new(vec![4, 4]).unwrap(),
        0,
        LayoutDescriptor::Csr,
        vec![cpu(0), cpu(20), cpu(0)],
        None,
        Some(SparseInfo::bsr(IndexType::Int32, 0, 2, 2, true)),
        None,
        None,
    );
    assert_eq!(d.unwrap_err().kind(), ErrorKind::InvalidLayout);
    // A sparse layout without its block, and a block on a dense layout.
    let d = TensorDescriptor::new(
        DESCRIPTOR_VERSION_2,
        0,
        ElementType::Int8,
        Shape::new(vec![4]).unwrap(),
        0,
        LayoutDescriptor::RowMajor,
        vec![cpu(4)],
        None,
        Some(SparseInfo::new(IndexType::Int32, 0, true)),
        None,
        None,
    );
    assert_eq!(d.unwrap_err().kind(), ErrorKind::InvalidLayout);
}

#[test]
fn a_bad_index_on_the_wire_is_refused_before_the_tensor_is_handed_out() {
    let f = fixture();
    let mut w = StreamWriter::new(Vec::new(), WriterOptions::default());
    let refs: Vec<&[u8]> = f.csr.1.iter().map(|b| b.as_slice()).collect();
    w.write_tensor(&f.csr.0, &refs).unwrap();
    w.write_tensor(&f.scales.0, &[&f.scales.1[0]]).unwrap();
    w.finish().unwrap();
    let mut bytes = w.into_transport();
    // The column indices are the last 12 bytes of the first frame's payloads; find [1,2,3].
    let pat = i32s(&[1, 2, 3]);
    let at = bytes.windows(12).position(|x| x == pat.as_slice()).unwrap();
    bytes[at..at + 4].copy_from_slice(&9i32.to_le_bytes());
    let mut r = StreamReader::new(SliceSource::new(&bytes, 4096), ReaderOptions::default()).unwrap();
    let e = r.next_tensor().unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Corrupt);
    assert!(e.message().contains("outside 0..4"), "{}", e.message());
    // Like every error but TRANSPORT, it is sticky.
    assert_eq!(r.next_tensor().unwrap_err().kind(), ErrorKind::Corrupt);
    // A writer refuses to put the bad tensor on the wire at all.
    let bad = i32s(&[9, 2, 3]);
    let mut w = StreamWriter::new(Vec::new(), WriterOptions::default());
    assert_eq!(w.write_tensor(&f.csr.0, &[refs[0], refs[1], &bad]).unwrap_err().kind(), ErrorKind::Corrupt);
    assert!(!w.is_poisoned());
}

/// Frames one descriptor's bytes as a buffer-less tensor frame.
fn frame(desc: &[u8]) -> Vec<u8> {
    let mut f = b"HRTN".to_vec();
    f.extend_from_slice(&0u32.to_le_bytes());
    f.extend_from_slice(&(desc.len() as u64).to_le_bytes());
    f.extend_from_slice(&crc32c(desc).to_le_bytes());
    let c = crc32c(&f);
    f.extend_from_slice(&c.to_le_bytes());
    f.extend_from_slice(desc);
    f
}

/// A stream of one million nested heads, generated as it is read (never held in memory).
struct Deep {
    head: Vec<u8>,
    next: u32,
    pending: Vec<u8>,
    served: u64,
}
impl ReadTransport for Deep {
    fn read(&mut self, dst: &mut [std::mem::MaybeUninit<u8>]) -> hurray_core::Result<usize> {
        if self.pending.is_empty() && self.next < 1_000_000 {
            let mut d = self.head.clone();
            // Composite block at offset 24: count u32, depth u16.
            d[28..30].copy_from_slice(&(self.next.min(65535) as u16).to_le_bytes());
            self.pending = frame(&d);
            self.next += 1;
        }
        let n = dst.len().min(self.pending.len());
        dst[..n].write_copy_of_slice(&self.pending[..n]);
        self.pending.drain(..n);
        self.served += n as u64;
        Ok(n)
    }
}

fn stream_header() -> Vec<u8> {
    let mut h = b"HRRYSTRM".to_vec();
    h.extend_from_slice(&1u16.to_le_bytes());
    h.extend_from_slice(&0u16.to_le_bytes());
    let c = crc32c(&h);
    h.extend_from_slice(&c.to_le_bytes());
    h
}

#[test]
fn a_million_deep_composite_stops_at_the_depth_limit() {
    let head = composite::head_descriptor(None, vec!["x".into()]).unwrap().encode().unwrap();
    assert_eq!(head.len(), 24 + 16 + 3);
    let mut deep = Deep { head, next: 0, pending: stream_header(), served: 0 };
    deep.pending.extend(frame(&deep.head.clone()));
    deep.next = 1;
    let mut r = StreamReader::new(deep, ReaderOptions::default()).unwrap();
    let mut items = ItemReader::new();
    let e = items.next_item(&mut r).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::LimitExceeded, "{}", e.message());
    assert!(e.message().contains("depth"), "{}", e.message());
    assert!(r.transport().served < 100_000, "read only what the limit allows");
}

fn write_frames(frames: &[Vec<u8>]) -> Vec<u8> {
    let mut s = stream_header();
    for f in frames {
        s.extend(frame(f));
    }
    s.extend_from_slice(b"HREN");
    s.extend_from_slice(&[0; 16]);
    let c = crc32c(&s[s.len() - 20..]);
    s.extend_from_slice(&c.to_le_bytes());
    s
}

#[test]
fn member_counts_that_lie_either_way_are_corrupt_and_cut_composites_truncated() {
    let two = composite::head_descriptor(None, vec!["a".into(), "b".into()]).unwrap().encode().unwrap();
    let one = composite::head_descriptor(None, vec!["a".into()]).unwrap().encode().unwrap();
    // Members are empty bool tensors (one zero-length buffer), stamped with depth and index.
    let leaf_at = |depth: u16, index: u32| {
        let t = TensorDescriptor::dense(ElementType::Bool, Shape::new(vec![0]).unwrap()).unwrap();
        t.with_composite(Some(composite::CompositeInfo::member(depth, index))).unwrap().encode().unwrap()
    };
    let leaf = |depth: u16| leaf_at(depth, 0);
    // Count says 2, one member follows, then a top-level tensor: too few arrived.
    let s = write_frames(&[
        two.clone(),
        leaf(1),
        TensorDescriptor::dense(ElementType::Bool, Shape::new(vec![0]).unwrap()).unwrap().encode().unwrap(),
    ]);
    let run = |s: &[u8]| {
        let mut r = StreamReader::new(SliceSource::new(s, 4096), ReaderOptions::default()).unwrap();
        ItemReader::new().next_item(&mut r).map(|_| ())
    };
    let e = run(&s).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Corrupt);
    assert!(e.message().contains("declares 2 members but only 1"), "{}", e.message());
    // Count says 1, two members follow: the second arrives outside any composite.
    let s2 = write_frames(&[one.clone(), leaf(1), leaf_at(1, 1)]);
    let mut r = StreamReader::new(SliceSource::new(&s2, 4096), ReaderOptions::default()).unwrap();
    let mut items = ItemReader::new();
    assert!(matches!(items.next_item(&mut r).unwrap(), Some(Item::Composite(_))));
    let e = items.next_item(&mut r).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Corrupt);
    assert!(e.message().contains("outside any composite"), "{}", e.message());
    // Cut mid-member: the stream ends (end marker) after the head.
    let s = write_frames(&[two.clone(), leaf(1)]);
    assert_eq!(run(&s).unwrap_err().kind(), ErrorKind::Truncated);
    // Cut mid-member: the input stops inside a member's bytes.
    let s = write_frames(&[two, leaf(1), leaf(1)]);
    assert_eq!(run(&s[..s.len() - 30]).unwrap_err().kind(), ErrorKind::Truncated);
}

/// The golden stream shared with the Java tests (src/golden/stream_v2_sparse_composite.hrry):
/// a CSR tensor, then the nested composite "layer0" of `layer_spec`. Regenerate with
/// HURRAY_REGEN_GOLDEN=1 after an intended format change.
#[test]
fn the_v2_golden_stream_is_what_the_code_writes() {
    let f = fixture();
    let mut w = StreamWriter::new(Vec::new(), WriterOptions { payload_checksums: true });
    let refs: Vec<&[u8]> = f.csr.1.iter().map(|b| b.as_slice()).collect();
    w.write_tensor(&f.csr.0.clone().with_name("csr").unwrap(), &refs).unwrap();
    composite::write_composite(&mut w, &layer_spec(&f)).unwrap();
    w.finish().unwrap();
    let bytes = w.into_transport();
    let path =
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../src/golden/stream_v2_sparse_composite.hrry");
    if std::env::var("HURRAY_REGEN_GOLDEN").is_ok_and(|v| v == "1") {
        std::fs::write(&path, &bytes).unwrap();
    }
    let committed = std::fs::read(&path).expect("committed golden stream (regenerate with HURRAY_REGEN_GOLDEN=1)");
    assert!(committed == bytes, "src/golden/stream_v2_sparse_composite.hrry differs from what the code writes");
}

/// A head listing `roles`, at `depth` and `index` (a nested head when depth > 0).
fn head_at(roles: &[String], depth: u16, index: u32) -> TensorDescriptor {
    let h = composite::head_descriptor(None, roles.to_vec()).unwrap();
    let info = h.composite().unwrap().clone().at(depth, index);
    h.with_composite(Some(info)).unwrap()
}

/// An empty bool tensor stamped as member `index` at `depth`.
fn leaf_member(depth: u16, index: u32) -> TensorDescriptor {
    let t = TensorDescriptor::dense(ElementType::Bool, Shape::new(vec![0]).unwrap()).unwrap();
    t.with_composite(Some(composite::CompositeInfo::member(depth, index))).unwrap()
}

fn roles(names: &[&str]) -> Vec<String> {
    names.iter().map(|r| r.to_string()).collect()
}

/// A composite of 1 + 1,024 + 1,024 × 64 = 66,561 descriptors: a head of 1,024 nested heads of
/// 64 members each, in preorder, each with its container path.
fn oversized_composite() -> Vec<(String, TensorDescriptor)> {
    let outer: Vec<String> = (0..1024).map(|i| format!("m{i}")).collect();
    let inner: Vec<String> = (0..64).map(|i| format!("l{i}")).collect();
    let mut out = Vec::with_capacity(66_561);
    out.push(("big".to_string(), head_at(&outer, 0, 0)));
    for (i, r) in outer.iter().enumerate() {
        out.push((format!("big/{r}"), head_at(&inner, 1, i as u32)));
        for (j, l) in inner.iter().enumerate() {
            out.push((format!("big/{r}/{l}"), leaf_member(2, j as u32)));
        }
    }
    assert_eq!(out.len(), 66_561);
    out
}

#[test]
fn an_item_of_66561_descriptors_exceeds_the_limit_in_the_item_view() {
    let frames: Vec<Vec<u8>> = oversized_composite().into_iter().map(|(_, d)| d.encode().unwrap()).collect();
    let s = write_frames(&frames);
    let mut r = StreamReader::new(SliceSource::new(&s, 1 << 16), ReaderOptions::default()).unwrap();
    let e = ItemReader::new().next_item(&mut r).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::LimitExceeded, "{}", e.message());
}

/// Named descriptors to store in a container.
type Entries = Vec<(String, TensorDescriptor)>;

/// A container of the given entries (empty payloads), finished.
fn container(entries: &[(String, TensorDescriptor)]) -> Vec<u8> {
    let mut w = FileWriter::new(Vec::new(), FileWriterOptions::default()).unwrap();
    for (name, d) in entries {
        let d = d.clone().with_name(name.clone()).unwrap();
        let payloads: Vec<&[u8]> = d.buffers().iter().map(|_| &[][..]).collect();
        w.add_tensor(&d, &payloads).unwrap();
    }
    w.finish().unwrap();
    w.into_transport()
}

fn check(bytes: &[u8]) -> hurray_core::Result<()> {
    let mut r = FileReader::open(Span::new(bytes), FileReaderOptions::default()).unwrap();
    composite::check_container(&mut r)
}

#[test]
fn container_composite_structure_is_checked_from_the_index() {
    let f = fixture();
    // A well-formed nested composite and a plain tensor pass.
    let mut w = FileWriter::new(Vec::new(), FileWriterOptions::default()).unwrap();
    composite::add_composite(&mut w, &layer_spec(&f)).unwrap();
    w.finish().unwrap();
    check(&w.into_transport()).unwrap();

    let e =
        |s: &str| (s.to_string(), TensorDescriptor::dense(ElementType::Bool, Shape::new(vec![0]).unwrap()).unwrap());
    let head3 = ("x".to_string(), head_at(&roles(&["a", "b", "c"]), 0, 0));
    let member = |name: &str, depth, index| (name.to_string(), leaf_member(depth, index));
    let cases: Vec<(&str, Entries, &str)> = vec![
        (
            "3 promised, 1 stored",
            vec![head3.clone(), member("x/a", 1, 0), e("y")],
            "\"x/b\" of composite \"x\" is missing",
        ),
        (
            "a member at the wrong index",
            vec![head3.clone(), member("x/a", 1, 0), member("x/b", 1, 2), member("x/c", 1, 2)],
            "\"x/b\" is not member 1",
        ),
        (
            "a member at the wrong depth",
            vec![head3.clone(), member("x/a", 1, 0), member("x/b", 2, 1), member("x/c", 1, 2)],
            "\"x/b\" is not member 1",
        ),
        (
            "a member of no composite",
            vec![head3.clone(), member("x/a", 1, 0), member("x/b", 1, 1), member("x/c", 1, 2), member("x/d", 1, 3)],
            "\"x/d\" is marked as member 3",
        ),
        ("an orphan without a head", vec![e("plain"), member("lone/w", 1, 0)], "\"lone/w\""),
    ];
    for (what, entries, msg) in cases {
        let err = check(&container(&entries)).unwrap_err();
        assert_eq!(err.kind(), ErrorKind::Corrupt, "{what}: {}", err.message());
        assert!(err.message().contains(msg), "{what}: {}", err.message());
    }
    let err = check(&container(&oversized_composite())).unwrap_err();
    assert_eq!(err.kind(), ErrorKind::LimitExceeded, "{}", err.message());
}
