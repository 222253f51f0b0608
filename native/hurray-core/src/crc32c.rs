//! CRC32C (Castagnoli, reflected polynomial 0x82F63B78). Used for every descriptor frame and
//! for payloads (docs/spec/stream.md §Checksums, docs/spec/hrryfile.md).
//!
//! Payload checks sit on the read path of every checksummed tensor, so the checksum has to run
//! near memory speed. [`Crc32c::update`] picks, once per process, the fastest kernel the CPU
//! supports (run-time detection, so one build serves every x86-64 CPU):
//!
//! | kernel | needs | how | GB/s, Zen 4 (1 MiB / 1 KiB) |
//! |---|---|---|---|
//! | `Avx512` | AVX-512F + VPCLMULQDQ (+ PCLMULQDQ, SSE4.2) | 16 × 128-bit lanes in 4 zmm registers folded by carry-less multiplication | 56 / 44 |
//! | `Crc32x3` | SSE4.2 + PCLMULQDQ | three interleaved `crc32` instruction streams, combined by one carry-less product each | 25 / 20 |
//! | `Sse42` | SSE4.2 | one stream of the `crc32` instruction | 9 / 11 |
//! | `Table` | nothing (every other architecture) | slicing-by-8 tables | 2 / 2 |
//!
//! (memcpy of the same buffers: 40–70 GB/s; `examples/crc_bench.rs` measures all of these in
//! one run.) An 8 × 128-bit-lane PCLMULQDQ folding kernel was measured too and dropped: 14 GB/s
//! on Zen 4, where the xmm form issues once per 2 cycles, against 25 for `Crc32x3` on the same
//! features.
//!
//! Folding: the register is a polynomial over GF(2); a 128-bit accumulator `A` standing for
//! `A(x)·x^e` (e = bits still to come) moves past `D` new bits as `A(x)·x^D mod P`, which
//! splits into two 64×32-bit carry-less products with the constants `x^(D+63) mod P` and
//! `x^(D-1) mod P` (the `-1` undoes the one-bit offset of a carry-less product of bit-reflected
//! operands). The constants are computed at compile time by `xpow`. The folded 128 bits are
//! reduced by feeding them to the `crc32` instruction starting from a zero register, which
//! yields exactly `A(x)·x^32 mod P`, the CRC register at that point; the last < 16 bytes go
//! through `crc32` too. Inputs under 64 bytes skip folding.
//!
//! All `unsafe` here is the unaligned vector loads (each reads exactly the bytes of a borrowed
//! array) and the calls into `#[target_feature]` functions, each guarded by the detection of
//! the features they enable.

const POLY: u32 = 0x82F6_3B78;

const fn make_tables() -> [[u32; 256]; 8] {
    let mut t = [[0u32; 256]; 8];
    let mut i = 0;
    while i < 256 {
        let mut c = i as u32;
        let mut k = 0;
        while k < 8 {
            c = if c & 1 != 0 { (c >> 1) ^ POLY } else { c >> 1 };
            k += 1;
        }
        t[0][i] = c;
        i += 1;
    }
    let mut s = 1;
    while s < 8 {
        let mut i = 0;
        while i < 256 {
            let prev = t[s - 1][i];
            t[s][i] = (prev >> 8) ^ t[0][(prev & 0xFF) as usize];
            i += 1;
        }
        s += 1;
    }
    t
}

static TABLES: [[u32; 256]; 8] = make_tables();

/// `x^n mod P` in the bit-reflected representation of the CRC register (bit `j` holds the
/// coefficient of `x^(31-j)`). Multiplying by `x` is a right shift; a coefficient leaving
/// `x^31` becomes `x^32 ≡ P - x^32`, i.e. XOR with [`POLY`].
#[cfg_attr(not(target_arch = "x86_64"), allow(dead_code))]
const fn xpow(n: u32) -> u32 {
    let mut v = 0x8000_0000u32; // x^0
    let mut i = 0;
    while i < n {
        v = if v & 1 != 0 { (v >> 1) ^ POLY } else { v >> 1 };
        i += 1;
    }
    v
}

/// Incremental CRC32C state. `Crc32c::new().update(a).update(b).finish()` equals
/// `crc32c(a ++ b)`.
#[derive(Clone, Copy, Debug)]
pub struct Crc32c(u32);

impl Default for Crc32c {
    fn default() -> Self {
        Self::new()
    }
}

impl Crc32c {
    /// A fresh state.
    pub const fn new() -> Self {
        Crc32c(!0)
    }

    /// Feeds `data`.
    pub fn update(&mut self, data: &[u8]) -> &mut Self {
        self.0 = update_with(Kernel::best(), self.0, data);
        self
    }

    /// The checksum of everything fed so far.
    pub fn finish(&self) -> u32 {
        !self.0
    }
}

/// CRC32C of `data` in one call.
pub fn crc32c(data: &[u8]) -> u32 {
    Crc32c::new().update(data).finish()
}

/// One implementation of the register update. Every kernel computes the same function; they
/// differ only in speed and in the CPU features they need. Public only for the benchmark
/// (`examples/crc_bench.rs`); not part of the supported API.
#[doc(hidden)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kernel {
    Table,
    #[cfg(target_arch = "x86_64")]
    Sse42,
    #[cfg(target_arch = "x86_64")]
    Crc32x3,
    #[cfg(target_arch = "x86_64")]
    Avx512,
}

impl Kernel {
    /// Every kernel, slowest first (the order [`Kernel::best`] prefers the last available).
    pub const ALL: &'static [Kernel] = &[
        Kernel::Table,
        #[cfg(target_arch = "x86_64")]
        Kernel::Sse42,
        #[cfg(target_arch = "x86_64")]
        Kernel::Crc32x3,
        #[cfg(target_arch = "x86_64")]
        Kernel::Avx512,
    ];

    /// Whether this CPU can run the kernel (one relaxed atomic load once detected).
    pub fn available(self) -> bool {
        detected() & (1 << self as u8) != 0
    }

    /// The fastest kernel this CPU can run.
    pub fn best() -> Kernel {
        Kernel::ALL[usize::from(detected() >> 4 & 7)]
    }

    fn detect(self) -> bool {
        match self {
            Kernel::Table => true,
            #[cfg(target_arch = "x86_64")]
            Kernel::Sse42 => std::arch::is_x86_feature_detected!("sse4.2"),
            #[cfg(target_arch = "x86_64")]
            Kernel::Crc32x3 => {
                std::arch::is_x86_feature_detected!("sse4.2") && std::arch::is_x86_feature_detected!("pclmulqdq")
            }
            #[cfg(target_arch = "x86_64")]
            Kernel::Avx512 => {
                Kernel::Crc32x3.detect()
                    && std::arch::is_x86_feature_detected!("avx512f")
                    && std::arch::is_x86_feature_detected!("vpclmulqdq")
            }
        }
    }
}

/// Bits 0..4: bit `k` set when this CPU can run `Kernel::ALL[k]`; bits 4..7: the index of the
/// fastest of those; bit 7: detection done.
fn detected() -> u8 {
    use std::sync::atomic::{AtomicU8, Ordering};
    static MASK: AtomicU8 = AtomicU8::new(0);
    let m = MASK.load(Ordering::Relaxed);
    if m != 0 {
        return m;
    }
    let mut m = 0x80;
    for (i, k) in Kernel::ALL.iter().enumerate() {
        if k.detect() {
            m = (m & 0x8F) | 1 << i | (i as u8) << 4;
        }
    }
    MASK.store(m, Ordering::Relaxed);
    m
}

/// Advances the (pre-inverted) register `crc` over `data` with `kernel`, or with the table
/// when this CPU cannot run `kernel`. For tests and the benchmark.
#[doc(hidden)]
#[inline]
pub fn update_with(kernel: Kernel, crc: u32, data: &[u8]) -> u32 {
    match kernel {
        #[cfg(target_arch = "x86_64")]
        Kernel::Avx512 if Kernel::Avx512.available() => {
            // SAFETY: the CPU has every feature `update_avx512` enables (checked just above).
            unsafe { x86::update_avx512(crc, data) }
        }
        #[cfg(target_arch = "x86_64")]
        Kernel::Crc32x3 if Kernel::Crc32x3.available() => {
            // SAFETY: the CPU has every feature `update_crc32x3` enables (checked just above).
            unsafe { x86::update_crc32x3(crc, data) }
        }
        #[cfg(target_arch = "x86_64")]
        Kernel::Sse42 if Kernel::Sse42.available() => {
            // SAFETY: the CPU has SSE4.2, all `update_sse42` enables (checked just above).
            unsafe { x86::update_sse42(crc, data) }
        }
        _ => update_table(crc, data),
    }
}

fn update_table(crc: u32, data: &[u8]) -> u32 {
    let t = &TABLES;
    let mut c = crc;
    let (words, rest) = data.as_chunks::<8>();
    for ch in words {
        let lo = u32::from_le_bytes([ch[0], ch[1], ch[2], ch[3]]) ^ c;
        let hi = u32::from_le_bytes([ch[4], ch[5], ch[6], ch[7]]);
        c = t[7][(lo & 0xFF) as usize]
            ^ t[6][((lo >> 8) & 0xFF) as usize]
            ^ t[5][((lo >> 16) & 0xFF) as usize]
            ^ t[4][(lo >> 24) as usize]
            ^ t[3][(hi & 0xFF) as usize]
            ^ t[2][((hi >> 8) & 0xFF) as usize]
            ^ t[1][((hi >> 16) & 0xFF) as usize]
            ^ t[0][(hi >> 24) as usize];
    }
    for &b in rest {
        c = (c >> 8) ^ t[0][((c ^ b as u32) & 0xFF) as usize];
    }
    c
}

#[cfg(target_arch = "x86_64")]
mod x86 {
    use std::arch::x86_64::*;

    use super::xpow;

    /// Below this many bytes the 512-bit kernel hands over to the `crc32` streams.
    const AVX512_MIN: usize = 64;

    /// The multiplier pair that moves a 128-bit accumulator `bits` further (see the module
    /// docs): low qword `x^(bits+63) mod P` for the accumulator's low (earlier) half, high
    /// qword `x^(bits-1) mod P` for its high half, each as a 64-bit reflected value (degree
    /// `d` at bit `63-d`, so the 32-bit residue sits in the upper half).
    const fn fold_constants(bits: u32) -> [u64; 2] {
        [(xpow(bits + 63) as u64) << 32, (xpow(bits - 1) as u64) << 32]
    }

    const K128: [u64; 2] = fold_constants(128);
    const K512: [u64; 2] = fold_constants(512);
    const K2048: [u64; 2] = fold_constants(2048);

    #[target_feature(enable = "sse2")]
    fn k128(k: [u64; 2]) -> __m128i {
        _mm_set_epi64x(k[1] as i64, k[0] as i64)
    }

    fn load128(chunk: &[u8; 16]) -> __m128i {
        // SAFETY: reads exactly the 16 bytes of `chunk`; `loadu` has no alignment requirement
        // (and SSE2 is part of the x86-64 baseline).
        unsafe { _mm_loadu_si128(chunk.as_ptr().cast()) }
    }

    /// `acc·x^D + data`, with `k` the constants for `D`.
    #[inline]
    #[target_feature(enable = "pclmulqdq")]
    fn fold128(acc: __m128i, k: __m128i, data: __m128i) -> __m128i {
        let lo = _mm_clmulepi64_si128(acc, k, 0x00);
        let hi = _mm_clmulepi64_si128(acc, k, 0x11);
        _mm_xor_si128(_mm_xor_si128(lo, data), hi)
    }

    /// The register after the bytes an accumulator stands for: `A(x)·x^32 mod P`.
    #[inline]
    #[target_feature(enable = "sse4.2")]
    fn reduce128(acc: __m128i) -> u32 {
        let lo = _mm_cvtsi128_si64(acc) as u64;
        let hi = _mm_extract_epi64::<1>(acc) as u64;
        _mm_crc32_u64(_mm_crc32_u64(0, lo), hi) as u32
    }

    /// One stream of the SSE4.2 `crc32` instruction, which implements exactly the table's
    /// reflected CRC32C step.
    #[target_feature(enable = "sse4.2")]
    pub(super) fn update_sse42(crc: u32, data: &[u8]) -> u32 {
        let mut c = u64::from(crc);
        let (words, rest) = data.as_chunks::<8>();
        for w in words {
            c = _mm_crc32_u64(c, u64::from_le_bytes(*w));
        }
        let mut c = c as u32;
        for &b in rest {
            c = _mm_crc32_u8(c, b);
        }
        c
    }

    /// Folds whole 16-byte chunks into `acc`, reduces, and finishes the tail with `crc32`.
    #[target_feature(enable = "pclmulqdq,sse4.2")]
    fn finish128(mut acc: __m128i, data: &[u8]) -> u32 {
        let (chunks, rest) = data.as_chunks::<16>();
        let k = k128(K128);
        for c in chunks {
            acc = fold128(acc, k, load128(c));
        }
        update_sse42(reduce128(acc), rest)
    }

    /// `r(x)·x^(8·bytes) mod P`: the register `r` moved past `bytes` zero bytes. One 32×32-bit
    /// carry-less product with `x^(8·bytes-33) mod P` (32-bit reflected), whose 64 bits the
    /// `crc32` instruction reduces while multiplying by `x^32`; the one-bit offset of the
    /// reflected product supplies the last `x`.
    #[inline]
    #[target_feature(enable = "pclmulqdq,sse4.2")]
    fn shift(r: u32, k: u32) -> u32 {
        let p = _mm_clmulepi64_si128(_mm_cvtsi32_si128(r as i32), _mm_cvtsi32_si128(k as i32), 0x00);
        _mm_crc32_u64(0, _mm_cvtsi128_si64(p) as u64) as u32
    }

    /// Three `crc32` streams over consecutive thirds of each block of `3·B` bytes: the
    /// instruction has a latency of 3 cycles and a throughput of 1, so three independent
    /// streams keep it busy. The thirds' registers are combined with [`shift`].
    #[inline]
    #[target_feature(enable = "pclmulqdq,sse4.2")]
    fn blocks3<const B: usize>(mut crc: u32, data: &[u8], k1: u32, k2: u32) -> (u32, &[u8]) {
        let mut rest = data;
        while rest.len() >= 3 * B {
            let (a, tail) = rest.split_at(B);
            let (b, tail) = tail.split_at(B);
            let (c, tail) = tail.split_at(B);
            let (a, b, c) = (a.as_chunks::<8>().0, b.as_chunks::<8>().0, c.as_chunks::<8>().0);
            let (mut ra, mut rb, mut rc) = (u64::from(crc), 0u64, 0u64);
            for i in 0..B / 8 {
                ra = _mm_crc32_u64(ra, u64::from_le_bytes(a[i]));
                rb = _mm_crc32_u64(rb, u64::from_le_bytes(b[i]));
                rc = _mm_crc32_u64(rc, u64::from_le_bytes(c[i]));
            }
            crc = shift(ra as u32, k2) ^ shift(rb as u32, k1) ^ rc as u32;
            rest = tail;
        }
        (crc, rest)
    }

    const X3_BIG: usize = 4096;
    const X3_SMALL: usize = 256;

    /// Three interleaved `crc32` streams: blocks of 3 × 4 KiB, then of 3 × 256 bytes, then
    /// one stream.
    #[target_feature(enable = "pclmulqdq,sse4.2")]
    pub(super) fn update_crc32x3(crc: u32, data: &[u8]) -> u32 {
        const BIG1: u32 = xpow(8 * X3_BIG as u32 - 33);
        const BIG2: u32 = xpow(16 * X3_BIG as u32 - 33);
        const SMALL1: u32 = xpow(8 * X3_SMALL as u32 - 33);
        const SMALL2: u32 = xpow(16 * X3_SMALL as u32 - 33);
        let (crc, rest) = blocks3::<X3_BIG>(crc, data, BIG1, BIG2);
        let (crc, rest) = blocks3::<X3_SMALL>(crc, rest, SMALL1, SMALL2);
        update_sse42(crc, rest)
    }

    #[inline]
    #[target_feature(enable = "avx512f")]
    fn load512(chunk: &[u8; 64]) -> __m512i {
        // SAFETY: reads exactly the 64 bytes of `chunk`; `loadu` has no alignment requirement,
        // and the caller's target features include AVX-512F.
        unsafe { _mm512_loadu_si512(chunk.as_ptr().cast()) }
    }

    /// `acc·x^D + data` in each of the four 128-bit lanes, with `k` the constants for `D`
    /// broadcast to every lane.
    #[inline]
    #[target_feature(enable = "avx512f,vpclmulqdq")]
    fn fold512(acc: __m512i, k: __m512i, data: __m512i) -> __m512i {
        let lo = _mm512_clmulepi64_epi128(acc, k, 0x00);
        let hi = _mm512_clmulepi64_epi128(acc, k, 0x11);
        _mm512_ternarylogic_epi64::<0x96>(lo, hi, data) // three-way XOR
    }

    #[target_feature(enable = "avx512f")]
    fn k512(k: [u64; 2]) -> __m512i {
        _mm512_broadcast_i32x4(k128(k))
    }

    /// Sixteen 128-bit lanes in four zmm registers (256 bytes a round), folded by 2048 bits
    /// each round; then one zmm (64 bytes a round); then 16-byte chunks.
    #[target_feature(enable = "avx512f,vpclmulqdq,pclmulqdq,sse4.2")]
    pub(super) fn update_avx512(crc: u32, data: &[u8]) -> u32 {
        if data.len() < AVX512_MIN {
            return update_crc32x3(crc, data);
        }
        let init = _mm512_zextsi128_si512(_mm_cvtsi32_si128(crc as i32));
        let (rounds, _) = data.as_chunks::<256>();
        let k = k512(K512);
        let mut acc;
        let rest;
        if let Some((first, more)) = rounds.split_first() {
            let first = first.as_chunks::<64>().0;
            let mut x: [__m512i; 4] = std::array::from_fn(|i| load512(&first[i]));
            x[0] = _mm512_xor_si512(x[0], init);
            let k4 = k512(K2048);
            for round in more {
                let (blocks, _) = round.as_chunks::<64>();
                for (xi, b) in x.iter_mut().zip(blocks) {
                    *xi = fold512(*xi, k4, load512(b));
                }
            }
            acc = fold512(fold512(fold512(x[0], k, x[1]), k, x[2]), k, x[3]);
            rest = &data[rounds.len() * 256..];
        } else {
            let (first, tail) = data.split_first_chunk::<64>().expect("at least AVX512_MIN bytes");
            acc = _mm512_xor_si512(load512(first), init);
            rest = tail;
        }
        let (blocks, _) = rest.as_chunks::<64>();
        for b in blocks {
            acc = fold512(acc, k, load512(b));
        }
        let k = k128(K128);
        let mut lane = _mm512_extracti32x4_epi32::<0>(acc);
        lane = fold128(lane, k, _mm512_extracti32x4_epi32::<1>(acc));
        lane = fold128(lane, k, _mm512_extracti32x4_epi32::<2>(acc));
        lane = fold128(lane, k, _mm512_extracti32x4_epi32::<3>(acc));
        finish128(lane, &rest[blocks.len() * 64..])
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A deterministic pseudo-random byte sequence.
    fn bytes(n: usize, seed: u64) -> Vec<u8> {
        crate::test_rng::Rng::new(seed).bytes(n)
    }

    fn kernels() -> impl Iterator<Item = Kernel> {
        Kernel::ALL.iter().copied().filter(|k| k.available())
    }

    #[test]
    fn known_vectors() {
        // RFC 3720 B.4 and the common "123456789" check value.
        for k in kernels() {
            let c = |d: &[u8]| !update_with(k, !0, d);
            assert_eq!(c(b"123456789"), 0xE306_9283, "{k:?}");
            assert_eq!(c(&[0u8; 32]), 0x8A91_36AA, "{k:?}");
            assert_eq!(c(&[0xFFu8; 32]), 0x62A8_AB43, "{k:?}");
            assert_eq!(c(b""), 0, "{k:?}");
        }
        assert_eq!(crc32c(b"123456789"), 0xE306_9283);
    }

    #[test]
    fn xpow_matches_shifting_the_register() {
        // Feeding a zero byte to register r gives r·x^8 mod P, so n zero bytes after x^0
        // give x^(8n) mod P.
        let mut r = xpow(0);
        for n in 1..=64u32 {
            r = update_table(r, &[0]);
            assert_eq!(r, xpow(8 * n));
        }
    }

    #[test]
    fn detection_prints_paths() {
        // Not an assertion: shows in `cargo test -- --nocapture` which paths this CPU checks.
        let avail: Vec<Kernel> = kernels().collect();
        eprintln!("crc32c kernels available here: {avail:?}, chosen: {:?}", Kernel::best());
        assert!(avail.contains(&Kernel::best()));
    }

    #[test]
    fn every_kernel_agrees_with_the_table_for_every_length_up_to_4096() {
        let data = bytes(4096 + 64, 1);
        for k in kernels() {
            for len in 0..=4096 {
                for (off, init) in [(0usize, !0u32), (1, 0), (7, 0x1234_5678)] {
                    let d = &data[off..off + len];
                    assert_eq!(update_with(k, init, d), update_table(init, d), "{k:?} len {len} off {off}");
                }
            }
        }
    }

    #[test]
    fn every_kernel_agrees_on_random_lengths_and_offsets() {
        let data = bytes(1 << 20, 2);
        let mut rng = crate::test_rng::Rng::new(0x9E37_79B9_7F4A_7C15);
        let mut next = |m: usize| rng.below(m as u64) as usize;
        for _ in 0..300 {
            let len = if next(4) == 0 { next(data.len() / 2) } else { next(70_000) };
            let off = next(data.len() - len);
            let init = next(1 << 30) as u32;
            let want = update_table(init, &data[off..off + len]);
            for k in kernels() {
                assert_eq!(update_with(k, init, &data[off..off + len]), want, "{k:?} len {len} off {off}");
            }
        }
    }

    #[test]
    fn incremental_equals_one_shot_at_every_split() {
        for (n, seed) in [(0usize, 3u64), (1, 4), (300, 5), (1100, 6), (2500, 7)] {
            let data = bytes(n, seed);
            let whole = crc32c(&data);
            for split in 0..=n {
                let mut c = Crc32c::new();
                c.update(&data[..split]).update(&data[split..]);
                assert_eq!(c.finish(), whole, "n {n} split {split}");
                for k in kernels() {
                    let r = update_with(k, update_with(k, !0, &data[..split]), &data[split..]);
                    assert_eq!(!r, whole, "{k:?} n {n} split {split}");
                }
            }
        }
    }
}
