//! Low-precision element formats: the OCP/DLPack minifloats (FP8, FP6, FP4), the E8M0 scale
//! type, float16 and bfloat16, with exact decoding and round-to-nearest-even encoding
//! (docs/spec/descriptor.md §Low-precision element formats).
//!
//! Every format here decodes exactly to float32. Encoding rounds a float32 to the nearest
//! representable value, ties to the even code, and either saturates to the largest finite
//! value or, for formats that have them, overflows to infinity (or NaN).

use crate::types::ElementType;

/// How a minifloat spends its top codes on non-finite values.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Specials {
    /// IEEE 754 style: the all-ones exponent holds ±infinity (mantissa 0) and NaN.
    Ieee,
    /// "fn" (finite): no infinities; only the all-ones exponent *and* mantissa code is NaN.
    Fn,
    /// "fnuz": no infinities, no negative zero; the code `1000…0` is the one NaN.
    Fnuz,
    /// No infinities and no NaN: every code is finite (FP6, FP4).
    None,
}

/// A sign + exponent + mantissa format of at most 8 bits.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct MiniFloat {
    /// Exponent bits.
    pub ebits: u32,
    /// Mantissa (trailing significand) bits.
    pub mbits: u32,
    /// Exponent bias.
    pub bias: i32,
    /// Non-finite encoding.
    pub specials: Specials,
}

impl MiniFloat {
    /// OCP FP8 E4M3 (`float8_e4m3fn`): bias 7, max 448.
    pub const E4M3FN: MiniFloat = MiniFloat { ebits: 4, mbits: 3, bias: 7, specials: Specials::Fn };
    /// OCP FP8 E5M2 (`float8_e5m2`): bias 15, max 57344, with infinities.
    pub const E5M2: MiniFloat = MiniFloat { ebits: 5, mbits: 2, bias: 15, specials: Specials::Ieee };
    /// `float8_e4m3fnuz`: bias 8, max 240.
    pub const E4M3FNUZ: MiniFloat = MiniFloat { ebits: 4, mbits: 3, bias: 8, specials: Specials::Fnuz };
    /// `float8_e5m2fnuz`: bias 16, max 57344.
    pub const E5M2FNUZ: MiniFloat = MiniFloat { ebits: 5, mbits: 2, bias: 16, specials: Specials::Fnuz };
    /// `float8_e3m4`: bias 3, max 15.5, with infinities.
    pub const E3M4: MiniFloat = MiniFloat { ebits: 3, mbits: 4, bias: 3, specials: Specials::Ieee };
    /// OCP FP6 E2M3 (`float6_e2m3fn`): bias 1, max 7.5.
    pub const E2M3: MiniFloat = MiniFloat { ebits: 2, mbits: 3, bias: 1, specials: Specials::None };
    /// OCP FP6 E3M2 (`float6_e3m2fn`): bias 3, max 28.
    pub const E3M2: MiniFloat = MiniFloat { ebits: 3, mbits: 2, bias: 3, specials: Specials::None };
    /// OCP FP4 E2M1 (`float4_e2m1fn`): bias 1, max 6.
    pub const E2M1: MiniFloat = MiniFloat { ebits: 2, mbits: 1, bias: 1, specials: Specials::None };

    /// The minifloat format of an element type, if it is one.
    pub fn of(t: ElementType) -> Option<MiniFloat> {
        use ElementType::*;
        Some(match t {
            Float8E4m3fn => Self::E4M3FN,
            Float8E5m2 => Self::E5M2,
            Float8E4m3fnuz => Self::E4M3FNUZ,
            Float8E5m2fnuz => Self::E5M2FNUZ,
            Float8E3m4 => Self::E3M4,
            Float6E2m3fn => Self::E2M3,
            Float6E3m2fn => Self::E3M2,
            Float4E2m1fn => Self::E2M1,
            _ => return None,
        })
    }

    /// Total bits per code (1 + exponent + mantissa).
    pub fn bits(self) -> u32 {
        1 + self.ebits + self.mbits
    }

    /// Decodes one code (only the low [`bits`](Self::bits) bits are used) exactly.
    pub fn decode(self, code: u8) -> f32 {
        let (e, m) = (self.ebits, self.mbits);
        let code = u32::from(code) & ((1 << self.bits()) - 1);
        let sign = code >> (e + m) & 1;
        let exp = (code >> m) & ((1 << e) - 1);
        let man = code & ((1 << m) - 1);
        let emax_field = (1 << e) - 1;
        match self.specials {
            Specials::Fnuz if code == 1 << (e + m) => return f32::NAN,
            Specials::Fn if exp == emax_field && man == (1 << m) - 1 => return f32::NAN,
            Specials::Ieee if exp == emax_field => {
                return match (man, sign) {
                    (0, 0) => f32::INFINITY,
                    (0, _) => f32::NEG_INFINITY,
                    _ => f32::NAN,
                }
            }
            _ => {}
        }
        let mag = if exp == 0 {
            f64::from(man) * pow2(1 - self.bias - m as i32)
        } else {
            f64::from((1 << m) + man) * pow2(exp as i32 - self.bias - m as i32)
        };
        (if sign == 1 { -mag } else { mag }) as f32
    }

    /// The largest finite value.
    pub fn max_finite(self) -> f64 {
        let (e, m) = (self.ebits as i32, self.mbits as i32);
        let top = (1 << e) - 1; // all-ones exponent field
        let (exp, man) = match self.specials {
            Specials::Ieee => (top - 1, (1 << m) - 1),
            Specials::Fn => (top, (1 << m) - 2),
            Specials::Fnuz | Specials::None => (top, (1 << m) - 1),
        };
        f64::from((1 << m) + man) * pow2(exp - self.bias - m)
    }

    /// floor(log2(max_finite)): the `emax_elem` of OCP Microscaling §5.
    pub fn emax(self) -> i32 {
        floor_log2(self.max_finite())
    }

    /// Encodes `v` to the nearest code, ties to even. Out-of-range finite values and
    /// infinities saturate to ±max when `saturate` is set or the format has no infinity;
    /// otherwise they become ±infinity (`Ieee`) or NaN (`Fn`, `Fnuz`). NaN becomes the
    /// format's NaN, or 0 for formats without one.
    pub fn encode(self, v: f32, saturate: bool) -> u8 {
        let (e, m) = (self.ebits, self.mbits);
        let sign_bit = 1u32 << (e + m);
        let nan_code = match self.specials {
            Specials::Ieee => ((1 << e) - 1) << m | 1 << (m - 1),
            Specials::Fn => (1 << (e + m)) - 1,
            Specials::Fnuz => sign_bit,
            Specials::None => 0,
        };
        if v.is_nan() {
            return nan_code as u8;
        }
        let neg = v.is_sign_negative();
        let sign = if neg { sign_bit } else { 0 };
        let a = f64::from(v).abs();
        let max = self.max_finite();
        let emin = 1 - self.bias;
        let r = if a == 0.0 || a.is_infinite() {
            a
        } else {
            let ex = floor_log2(a).max(emin);
            let q = pow2(m as i32 - ex);
            rne_f64(a * q) / q
        };
        if r > max {
            let code = match self.specials {
                _ if saturate => self.encode_mag(max),
                Specials::Ieee => ((1 << e) - 1) << m,
                Specials::Fn | Specials::Fnuz => return nan_code as u8,
                Specials::None => self.encode_mag(max),
            };
            return (sign | code) as u8;
        }
        if r == 0.0 {
            // fnuz formats have no negative zero (its code is the NaN).
            return if self.specials == Specials::Fnuz { 0 } else { sign as u8 };
        }
        (sign | self.encode_mag(r)) as u8
    }

    /// The code of a representable positive magnitude `r`.
    fn encode_mag(self, r: f64) -> u32 {
        let m = self.mbits as i32;
        let emin = 1 - self.bias;
        if r < pow2(emin) {
            (r * pow2(m - emin)) as u32
        } else {
            let ex = floor_log2(r);
            let man = (r * pow2(m - ex)) as u32 - (1 << m);
            ((ex + self.bias) as u32) << m | man
        }
    }

    /// The 256-entry decode table (codes above `bits` wrap).
    pub fn table(self) -> [f32; 256] {
        let mut t = [0f32; 256];
        for (i, x) in t.iter_mut().enumerate() {
            *x = self.decode(i as u8);
        }
        t
    }
}

/// A saturating encoder for one minifloat format, equal to `MiniFloat::encode(v, true)` but
/// table-driven: a binary search of |v|'s float32 bit pattern among the rounding boundaries
/// (midpoints between neighbouring values, exact in float32), so it needs no float64 maths.
#[derive(Clone, Debug)]
pub struct SatEncoder {
    f: MiniFloat,
    bounds: Vec<u32>,
    up_on_tie: Vec<bool>,
    codes: Vec<u8>,
    sign_bit: u8,
}

impl SatEncoder {
    /// Builds the tables (at most 128 entries).
    pub fn new(f: MiniFloat) -> Self {
        let mut vals: Vec<(f32, u8)> = (0..(1u32 << (f.bits() - 1)))
            .map(|c| (f.decode(c as u8), c as u8))
            .filter(|(v, _)| v.is_finite())
            .collect();
        vals.sort_by(|a, b| a.0.total_cmp(&b.0));
        let mut bounds = Vec::with_capacity(vals.len());
        let mut up_on_tie = Vec::with_capacity(vals.len());
        for w in vals.windows(2) {
            let mid = ((f64::from(w[0].0) + f64::from(w[1].0)) / 2.0) as f32;
            bounds.push(mid.to_bits());
            up_on_tie.push(w[1].1 % 2 == 0);
        }
        SatEncoder { f, bounds, up_on_tie, codes: vals.iter().map(|v| v.1).collect(), sign_bit: 1 << (f.bits() - 1) }
    }

    /// The nearest code to `v`, ties to even, saturating; NaN as `MiniFloat::encode`.
    #[inline]
    pub fn encode(&self, v: f32) -> u8 {
        let bits = v.to_bits();
        let a = bits & 0x7fff_ffff;
        if a > 0x7f80_0000 {
            return self.f.encode(v, true);
        }
        let mut i = self.bounds.partition_point(|&b| b < a);
        if i < self.bounds.len() && self.bounds[i] == a && self.up_on_tie[i] {
            i += 1;
        }
        let code = self.codes[i];
        if bits >> 31 == 1 && !(code == 0 && self.f.specials == Specials::Fnuz) {
            code | self.sign_bit
        } else {
            code
        }
    }
}

/// Round half to even, for any finite f64 (the magic-number trick: exact for |x| < 2^52, and
/// larger values are already integers). Baseline x86-64 has no rounding instruction, so
/// `f64::round_ties_even` is a library call; this is two additions.
#[inline]
pub fn rne_f64(x: f64) -> f64 {
    const M: f64 = 4_503_599_627_370_496.0; // 2^52
    let a = x.abs();
    if a < M {
        ((a + M) - M).copysign(x)
    } else {
        x
    }
}

/// Round half to even, for any finite f32 (see [`rne_f64`]; 2^23 for f32).
#[inline]
pub fn rne_f32(x: f32) -> f32 {
    const M: f32 = 8_388_608.0; // 2^23
    let a = x.abs();
    if a < M {
        ((a + M) - M).copysign(x)
    } else {
        x
    }
}

/// 2^i as f64 for |i| < 1000.
#[inline]
pub(crate) fn pow2(i: i32) -> f64 {
    f64::from_bits(((i + 1023) as u64) << 52)
}

/// floor(log2(x)) for a positive normal f64.
#[inline]
pub(crate) fn floor_log2(x: f64) -> i32 {
    ((x.to_bits() >> 52) & 0x7ff) as i32 - 1023
}

/// Decodes an E8M0 scale: 2^(code − 127); `0xFF` is NaN.
#[inline]
pub fn e8m0_decode(code: u8) -> f32 {
    if code == 0xFF {
        f32::NAN
    } else {
        pow2(i32::from(code) - 127) as f32
    }
}

/// Encodes 2^e as E8M0, clamping e to the representable range −127…127.
#[inline]
pub fn e8m0_encode(e: i32) -> u8 {
    (e.clamp(-127, 127) + 127) as u8
}

/// IEEE binary16 to float32, exactly.
#[inline]
pub fn f16_to_f32(h: u16) -> f32 {
    let sign = u32::from(h & 0x8000) << 16;
    let exp = u32::from(h >> 10) & 0x1f;
    let man = u32::from(h) & 0x3ff;
    let bits = match exp {
        0 => {
            if man == 0 {
                sign
            } else {
                // Subnormal: renormalise.
                let shift = man.leading_zeros() - 21;
                let man = (man << shift) & 0x3ff;
                sign | ((113 - shift) << 23) | (man << 13)
            }
        }
        0x1f => sign | 0x7f80_0000 | (man << 13),
        _ => sign | ((exp + 112) << 23) | (man << 13),
    };
    f32::from_bits(bits)
}

/// float32 to IEEE binary16, round to nearest even; overflow gives ±infinity.
pub fn f32_to_f16(v: f32) -> u16 {
    let x = v.to_bits();
    let sign = ((x >> 16) & 0x8000) as u16;
    let exp = ((x >> 23) & 0xff) as i32;
    let man = x & 0x7f_ffff;
    if exp == 0xff {
        return sign | 0x7c00 | if man != 0 { 0x200 } else { 0 };
    }
    let e = exp - 127 + 15;
    if e >= 0x1f {
        return sign | 0x7c00;
    }
    if e <= 0 {
        if e < -10 {
            return sign;
        }
        let m = man | 0x80_0000;
        let shift = (14 - e) as u32;
        let half = 1u32 << (shift - 1);
        let rest = m & ((1 << shift) - 1);
        let mut r = m >> shift;
        if rest > half || (rest == half && r & 1 == 1) {
            r += 1;
        }
        return sign | r as u16;
    }
    let rest = man & 0x1fff;
    let mut r = ((e as u32) << 10) | (man >> 13);
    if rest > 0x1000 || (rest == 0x1000 && r & 1 == 1) {
        r += 1; // may carry into the exponent, up to infinity: correct
    }
    sign | r as u16
}

/// bfloat16 to float32, exactly.
#[inline]
pub fn bf16_to_f32(h: u16) -> f32 {
    f32::from_bits(u32::from(h) << 16)
}

/// float32 to bfloat16, round to nearest even (NaN stays NaN).
pub fn f32_to_bf16(v: f32) -> u16 {
    let x = v.to_bits();
    if v.is_nan() {
        return ((x >> 16) | 0x40) as u16;
    }
    let round = 0x7fff + ((x >> 16) & 1);
    (x.wrapping_add(round) >> 16) as u16
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn table_encoder_equals_the_arithmetic_one() {
        let mut rng = crate::test_rng::Rng::new(0x1234_5678);
        for f in [
            MiniFloat::E4M3FN,
            MiniFloat::E5M2,
            MiniFloat::E4M3FNUZ,
            MiniFloat::E5M2FNUZ,
            MiniFloat::E3M4,
            MiniFloat::E2M3,
            MiniFloat::E3M2,
            MiniFloat::E2M1,
        ] {
            let e = SatEncoder::new(f);
            // Every value and every midpoint (and its neighbours) of the format, plus random floats.
            for c in 0..(1u32 << f.bits()) {
                let v = f.decode(c as u8);
                for d in [-1i32, 0, 1] {
                    let w = f32::from_bits(v.to_bits().wrapping_add_signed(d));
                    assert_eq!(e.encode(w), f.encode(w, true), "{f:?} {w}");
                }
            }
            for &b in &e.bounds {
                for d in [-1i32, 0, 1] {
                    let w = f32::from_bits(b.wrapping_add_signed(d));
                    assert_eq!(e.encode(w), f.encode(w, true), "{f:?} {w}");
                    assert_eq!(e.encode(-w), f.encode(-w, true), "{f:?} -{w}");
                }
            }
            for _ in 0..200_000 {
                let w = f32::from_bits(rng.next_u64() as u32);
                assert_eq!(e.encode(w), f.encode(w, true), "{f:?} {w}");
            }
        }
    }

    #[test]
    fn rne_matches_the_library() {
        for x in [0.5f64, 1.5, 2.5, -0.5, -2.5, 3.49999, 1e300, -7.5, 0.0, -0.0, 4503599627370495.5] {
            assert_eq!(rne_f64(x).to_bits(), x.round_ties_even().to_bits(), "{x}");
        }
        for x in [0.5f32, 1.5, 2.5, -0.5, -2.5, 8388607.5, 1e30, -126.5, 0.0, -0.0] {
            assert_eq!(rne_f32(x).to_bits(), x.round_ties_even().to_bits(), "{x}");
        }
    }

    #[test]
    fn f16_exhaustive_round_trip() {
        for h in 0..=u16::MAX {
            let f = f16_to_f32(h);
            if f.is_nan() {
                assert!(f32_to_f16(f) & 0x7c00 == 0x7c00);
            } else {
                assert_eq!(f32_to_f16(f), h, "{h:#06x}");
            }
        }
        assert_eq!(f32_to_f16(65520.0), 0x7c00);
        assert_eq!(f32_to_f16(65519.0), 0x7bff);
    }

    #[test]
    fn minifloat_codes_round_trip() {
        for f in [
            MiniFloat::E4M3FN,
            MiniFloat::E5M2,
            MiniFloat::E4M3FNUZ,
            MiniFloat::E5M2FNUZ,
            MiniFloat::E3M4,
            MiniFloat::E2M3,
            MiniFloat::E3M2,
            MiniFloat::E2M1,
        ] {
            for c in 0..(1u32 << f.bits()) {
                let v = f.decode(c as u8);
                if v.is_nan() || (v == 0.0 && v.is_sign_negative() && f.specials == Specials::Fnuz) {
                    continue;
                }
                assert_eq!(f.encode(v, false), c as u8, "{f:?} code {c:#x} value {v}");
            }
        }
    }
}
