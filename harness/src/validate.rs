//! Judging an output against the reference: relative error in the Frobenius norm, NaN and
//! infinities never pass.

use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Check {
    /// ||out - ref|| / ||ref||, Frobenius norms; infinite when any element is not finite.
    pub rel_error: f64,
    pub max_abs_error: f64,
    /// Elements that are NaN or infinite (a NaN left from the poisoning means an element was
    /// never written).
    pub nonfinite: usize,
    pub tolerance: f64,
    pub passed: bool,
}

pub fn check(out: &[f32], reference: &[f64], tolerance: f64) -> Check {
    assert_eq!(
        out.len(),
        reference.len(),
        "output and reference lengths differ"
    );
    let (mut diff2, mut ref2, mut max_abs, mut nonfinite) = (0.0f64, 0.0f64, 0.0f64, 0usize);
    for (&o, &r) in out.iter().zip(reference) {
        if !o.is_finite() {
            nonfinite += 1;
            continue;
        }
        let d = f64::from(o) - r;
        diff2 += d * d;
        ref2 += r * r;
        max_abs = max_abs.max(d.abs());
    }
    let rel_error = if nonfinite > 0 {
        f64::INFINITY
    } else if ref2 > 0.0 {
        (diff2 / ref2).sqrt()
    } else {
        diff2.sqrt()
    };
    Check {
        rel_error,
        max_abs_error: if nonfinite > 0 {
            f64::INFINITY
        } else {
            max_abs
        },
        nonfinite,
        tolerance,
        passed: nonfinite == 0 && rel_error <= tolerance,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn exact_output_passes_and_nan_never_does() {
        let r = [1.0, -2.0, 3.0];
        assert!(check(&[1.0, -2.0, 3.0], &r, 1e-5).passed);
        let nan = check(&[1.0, f32::NAN, 3.0], &r, 1e-5);
        assert!(!nan.passed && nan.nonfinite == 1 && nan.rel_error.is_infinite());
        let off = check(&[1.0, -2.0, 3.1], &r, 1e-5);
        assert!(!off.passed && (off.rel_error - 0.1 / 14f64.sqrt()).abs() < 1e-6);
        assert!(check(&[1.0, -2.0, 3.1], &r, 0.1).passed);
    }
}
