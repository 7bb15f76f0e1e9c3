//! The two 8-bit float formats of sm_89 and later, as CUDA's `cuda_fp8.h` defines them: E4M3
//! (4 exponent bits, bias 7, 3 mantissa bits, no infinity, `S.1111.111` NaN, largest 448) and
//! E5M2 (5 exponent bits, bias 15, 2 mantissa bits, IEEE infinities and NaNs, largest 57344).
//! The host side of an FP8 buffer: the values a kernel reads, encoded as its types'
//! constructors encode a float (round to nearest even, saturating to the largest finite
//! value), and read back exactly.

/// One FP8 format.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Fp8 {
    E4m3,
    E5m2,
}

impl Fp8 {
    fn mantissa_bits(self) -> i32 {
        match self {
            Self::E4m3 => 3,
            Self::E5m2 => 2,
        }
    }

    fn bias(self) -> i32 {
        match self {
            Self::E4m3 => 7,
            Self::E5m2 => 15,
        }
    }

    /// The largest finite value.
    pub fn largest(self) -> f64 {
        match self {
            Self::E4m3 => 448.0,
            Self::E5m2 => 57344.0,
        }
    }

    /// `x` in this format: to nearest, ties to even; past the largest finite value, that
    /// value (`__NV_SATFINITE`, what `__nv_fp8_e4m3(float)` does); NaN as 0x7F.
    pub fn encode(self, x: f32) -> u8 {
        if x.is_nan() {
            return 0x7F;
        }
        let sign = if x.is_sign_negative() { 0x80 } else { 0 };
        let a = f64::from(x.abs());
        let (mant, emin) = (self.mantissa_bits(), 1 - self.bias());
        // `a`'s binary exponent (every nonzero f32 is a normal f64); subnormals share the
        // smallest normal exponent's quantum.
        let exponent = |v: f64| ((v.to_bits() >> 52) & 0x7FF) as i32 - 1023;
        let e = if a == 0.0 {
            emin
        } else {
            exponent(a).max(emin)
        };
        let quantum = 2f64.powi(e - mant);
        let q = ((a / quantum).round_ties_even() * quantum).min(self.largest());
        let bits = if q < 2f64.powi(emin) {
            (q / 2f64.powi(emin - mant)) as u8
        } else {
            // Rounding may have carried into the next binade: its exponent, again.
            let e = exponent(q);
            let m = (q / 2f64.powi(e - mant)) as i32 - (1 << mant);
            (((e + self.bias()) << mant) | m) as u8
        };
        sign | bits
    }

    /// The value of `byte`, exactly. All bits set (the lab's poison) reads as the f32 with all
    /// bits set, as it does in every other type; another NaN as a NaN.
    pub fn decode(self, byte: u8) -> f32 {
        if byte == 0xFF {
            return crate::plan::POISON_F32;
        }
        let sign = if byte & 0x80 != 0 { -1.0 } else { 1.0 };
        let mant = self.mantissa_bits();
        let e = i32::from((byte & 0x7F) >> mant);
        let m = f64::from(byte & ((1 << mant) - 1));
        let top = (1 << (7 - mant)) - 1;
        match self {
            Self::E4m3 if e == top && m == f64::from((1 << mant) - 1) => return f32::NAN,
            Self::E5m2 if e == top && m == 0.0 => return sign as f32 * f32::INFINITY,
            Self::E5m2 if e == top => return f32::NAN,
            _ => {}
        }
        let v = if e == 0 {
            m * 2f64.powi(1 - self.bias() - mant)
        } else {
            (1.0 + m / f64::from(1 << mant)) * 2f64.powi(e - self.bias())
        };
        (sign * v) as f32
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every code reads back as itself, the codes count up in value, and the values the
    /// formats are known by land where `cuda_fp8.h` puts them.
    #[test]
    fn every_code_round_trips_and_known_values_land_on_their_codes() {
        for f in [Fp8::E4m3, Fp8::E5m2] {
            let mut last = -1.0f32;
            for byte in 0..0x80u8 {
                let v = f.decode(byte);
                if v.is_nan() || v.is_infinite() {
                    continue;
                }
                assert!(v > last, "{f:?} {byte:#x}: {v} after {last}");
                last = v;
                assert_eq!(f.encode(v), byte, "{f:?} {v}");
                assert_eq!(f.encode(-v), byte | 0x80, "{f:?} -{v}");
            }
            assert_eq!(f64::from(last), f.largest(), "{f:?}");
        }
        assert_eq!(Fp8::E4m3.encode(1.0), 0x38);
        assert_eq!(Fp8::E4m3.encode(448.0), 0x7E);
        assert_eq!(
            Fp8::E4m3.encode(2f32.powi(-9)),
            0x01,
            "the smallest subnormal"
        );
        assert_eq!(Fp8::E5m2.encode(1.0), 0x3C);
        assert_eq!(Fp8::E5m2.encode(57344.0), 0x7B);
        assert_eq!(
            Fp8::E5m2.encode(2f32.powi(-16)),
            0x01,
            "the smallest subnormal"
        );
        assert!(Fp8::E4m3.decode(0x7F).is_nan());
        assert_eq!(Fp8::E5m2.decode(0xFC), f32::NEG_INFINITY);
        assert!(crate::plan::is_poison(Fp8::E4m3.decode(0xFF)));
        assert!(crate::plan::is_poison(Fp8::E5m2.decode(0xFF)));
    }

    /// Halfway between two codes goes to the even one; past the largest value, saturation.
    #[test]
    fn rounding_is_to_nearest_even_and_saturates() {
        let f = Fp8::E4m3;
        // 1.0625 is halfway between 1 (0x38, even) and 1.125 (0x39).
        assert_eq!(f.encode(1.0625), 0x38);
        // 1.1875 is halfway between 1.125 (0x39) and 1.25 (0x3A, even).
        assert_eq!(f.encode(1.1875), 0x3A);
        assert_eq!(f.encode(1.07), 0x39);
        // 1.9375 rounds up into the next binade: 2.0.
        assert_eq!(f.decode(f.encode(1.97)), 2.0);
        assert_eq!(f.encode(1e6), 0x7E);
        assert_eq!(f.encode(-1e6), 0xFE);
        assert_eq!(Fp8::E5m2.encode(f32::INFINITY), 0x7B);
        assert_eq!(f.encode(0.0), 0x00);
        assert_eq!(f.encode(-0.0), 0x80);
        assert_eq!(
            f.encode(2f32.powi(-11)),
            0x00,
            "a quarter of the smallest subnormal"
        );
        assert_eq!(f.encode(f32::NAN), 0x7F);
    }
}
