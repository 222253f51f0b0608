//! Densify (CSR, COO, BSR) and paged gather throughput against memcpy of the output in the
//! same run. Not a test: run it with
//!
//! ```sh
//! cd native && cargo run --release --offline -p hurray-core --example sparse_bench [-- RUNS]
//! ```
//!
//! Cases (float32 values, int32 indices):
//! - CSR 2048 × 2048 at 10 % density and at 50 % density (canonical);
//! - COO of the same 10 % matrix (canonical), and the same entries non-canonical (summing);
//! - BSR 2048 × 2048 with 16 × 16 blocks, 25 % of blocks stored;
//! - paged gather of a KV cache of 4096 tokens × 8 heads × 128 features (16 MiB), pages of
//!   16 tokens in shuffled order.
//!
//! The baseline copies a buffer of the output's size (16 MiB) into the output buffer: the
//! least any routine producing that output must do. Each case alternates run by run with its
//! baseline; figures are medians of RUNS (default 15) after 3 warm-up runs, the ratio the
//! median of per-run ratios (routine time / memcpy time; lower is better). GB/s counts output
//! bytes (10^9 per second). Every routine checks all indices before writing, as it must for
//! untrusted input; that pass is included.

use std::hint::black_box;
use std::time::Instant;

use hurray_core::paged::{self, PagingInfo};
use hurray_core::sparse::{self, IndexType, SparseInfo};
use hurray_core::{
    BufferHandle, DeviceTag, ElementType, LayoutDescriptor, Shape, SyncMode, TensorDescriptor, DESCRIPTOR_VERSION_2,
};

const WARMUP: usize = 3;

struct Rng(u64);
impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
}

fn handle(n: usize) -> BufferHandle {
    BufferHandle::new(n as u64, 64, DeviceTag::Cpu, SyncMode::ProducerSynced).unwrap()
}

fn desc(
    dims: &[u64],
    layout: LayoutDescriptor,
    s: Option<SparseInfo>,
    p: Option<PagingInfo>,
    bufs: &[Vec<u8>],
) -> TensorDescriptor {
    TensorDescriptor::new(
        DESCRIPTOR_VERSION_2,
        0,
        ElementType::Float32,
        Shape::new(dims.to_vec()).unwrap(),
        0,
        layout,
        bufs.iter().map(|b| handle(b.len())).collect(),
        None,
        s,
        p,
        None,
    )
    .unwrap()
}

fn le32(v: impl IntoIterator<Item = i32>) -> Vec<u8> {
    v.into_iter().flat_map(|x| x.to_le_bytes()).collect()
}

/// Values, indptr and indices bytes of a CSR matrix, plus its coordinates.
type CsrParts = (Vec<u8>, Vec<u8>, Vec<u8>, Vec<(i32, i32)>);

/// CSR arrays (values, indptr, indices) of a random n × n matrix with `density` percent.
fn csr(n: usize, density: u64, rng: &mut Rng) -> CsrParts {
    let (mut vals, mut ptr, mut idx, mut coords) = (Vec::new(), vec![0i32], Vec::new(), Vec::new());
    for r in 0..n {
        for c in 0..n {
            if rng.next() % 100 < density {
                vals.extend_from_slice(&((r * n + c) as f32).to_le_bytes());
                idx.push(c as i32);
                coords.push((r as i32, c as i32));
            }
        }
        ptr.push(idx.len() as i32);
    }
    (vals, le32(ptr), le32(idx), coords)
}

fn median(v: &mut [f64]) -> f64 {
    v.sort_by(|a, b| a.partial_cmp(b).unwrap());
    v[v.len() / 2]
}

fn bench(name: &str, runs: usize, out_bytes: usize, mut f: impl FnMut(&mut [u8])) {
    let src = vec![1u8; out_bytes];
    let mut out = vec![0u8; out_bytes];
    let (mut t_f, mut t_m, mut ratio) = (Vec::new(), Vec::new(), Vec::new());
    for i in 0..WARMUP + runs {
        let a = Instant::now();
        f(&mut out);
        black_box(&out);
        let tf = a.elapsed().as_secs_f64();
        let b = Instant::now();
        out.copy_from_slice(black_box(&src));
        black_box(&out);
        let tm = b.elapsed().as_secs_f64();
        if i >= WARMUP {
            t_f.push(tf);
            t_m.push(tm);
            ratio.push(tf / tm);
        }
    }
    let (mf, mm, r) = (median(&mut t_f), median(&mut t_m), median(&mut ratio));
    let gb = |t: f64| out_bytes as f64 / t / 1e9;
    println!("{name:<34} {:>8.2} GB/s   memcpy {:>8.2} GB/s   time/memcpy {:>6.2}x", gb(mf), gb(mm), r);
}

fn main() {
    let runs: usize = std::env::args().nth(1).and_then(|a| a.parse().ok()).unwrap_or(15);
    let mut rng = Rng(0x5eed_cafe);
    let n = 2048usize;
    let out_bytes = n * n * 4;
    println!("output {} MiB per call, {runs} runs, medians", out_bytes >> 20);

    for density in [10u64, 50] {
        let (v, p, i, coords) = csr(n, density, &mut rng);
        let nnz = coords.len() as u64;
        let bufs = vec![v, p, i];
        let d = desc(
            &[n as u64, n as u64],
            LayoutDescriptor::Csr,
            Some(SparseInfo::new(IndexType::Int32, nnz, true)),
            None,
            &bufs,
        );
        let views: Vec<&[u8]> = bufs.iter().map(|b| b.as_slice()).collect();
        bench(&format!("densify CSR {density}% (nnz {nnz})"), runs, out_bytes, |o| {
            sparse::densify(&d, &views, o).unwrap()
        });
        if density == 10 {
            let mut idx = le32(coords.iter().map(|c| c.0));
            idx.extend(le32(coords.iter().map(|c| c.1)));
            let coo = vec![bufs[0].clone(), idx];
            let cv: Vec<&[u8]> = coo.iter().map(|b| b.as_slice()).collect();
            for canonical in [true, false] {
                let d = desc(
                    &[n as u64, n as u64],
                    LayoutDescriptor::Coo,
                    Some(SparseInfo::new(IndexType::Int32, nnz, canonical)),
                    None,
                    &coo,
                );
                let label = if canonical { "densify COO 10% canonical" } else { "densify COO 10% summing" };
                bench(label, runs, out_bytes, |o| sparse::densify(&d, &cv, o).unwrap());
            }
        }
    }

    // BSR: 16 × 16 blocks, a quarter stored.
    let (br, nb) = (16usize, n / 16);
    let (mut vals, mut ptr, mut idx) = (Vec::new(), vec![0i32], Vec::new());
    for _ in 0..nb {
        for bc in 0..nb {
            if rng.next().is_multiple_of(4) {
                vals.extend(std::iter::repeat_n(1.5f32.to_le_bytes(), br * br).flatten());
                idx.push(bc as i32);
            }
        }
        ptr.push(idx.len() as i32);
    }
    let nnzb = idx.len() as u64;
    let bufs = vec![vals, le32(ptr), le32(idx)];
    let d = desc(
        &[n as u64, n as u64],
        LayoutDescriptor::Bsr,
        Some(SparseInfo::bsr(IndexType::Int32, nnzb, 16, 16, true)),
        None,
        &bufs,
    );
    let views: Vec<&[u8]> = bufs.iter().map(|b| b.as_slice()).collect();
    bench("densify BSR 16x16, 25% of blocks", runs, out_bytes, |o| sparse::densify(&d, &views, o).unwrap());

    // Paged KV cache: 4096 tokens × 8 × 128 float32 = 16 MiB, pages of 16 tokens, shuffled.
    let (tokens, ps, row) = (4096usize, 16usize, 8 * 128usize);
    let blocks = tokens / ps;
    let pages = vec![0u8; tokens * row * 4];
    let mut table: Vec<i32> = (0..blocks as i32).collect();
    for k in (1..blocks).rev() {
        table.swap(k, (rng.next() % (k as u64 + 1)) as usize);
    }
    let bufs = vec![pages, le32(table)];
    let d = desc(
        &[tokens as u64, 8, 128],
        LayoutDescriptor::BlockPaged,
        None,
        Some(PagingInfo::new(IndexType::Int32, ps as u32, blocks as u64, blocks as u64)),
        &bufs,
    );
    let views: Vec<&[u8]> = bufs.iter().map(|b| b.as_slice()).collect();
    bench("gather paged 4096x8x128, page 16", runs, tokens * row * 4, |o| paged::gather(&d, &views, o).unwrap());
}
