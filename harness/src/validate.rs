//! Judging an output against the reference: relative error in the Frobenius norm, NaN and
//! infinities never pass, and an element still holding the value it was filled with before
//! the run was never written.

use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Check {
    /// ||out - ref|| / ||ref||, Frobenius norms over the checked elements; infinite when any
    /// element is not finite or was never written.
    #[serde(with = "nonfinite_json")]
    pub rel_error: f64,
    /// NaN where the row's tool reports none (a PyTorch peer's relative error only).
    #[serde(with = "nonfinite_json")]
    pub max_abs_error: f64,
    /// Elements that are NaN or infinite (a NaN left from the poisoning means an element was
    /// never written).
    pub nonfinite: usize,
    /// The first such element (row-major index into the output).
    #[serde(default)]
    pub first_nonfinite: Option<usize>,
    /// Of those, the elements still holding the NaN the output was filled with
    /// ([`kernel::is_poison`]): never written, or computed from one that was.
    #[serde(default)]
    pub poisoned: usize,
    /// Elements still equal to a finite sentinel the output was filled with, and the first.
    #[serde(default)]
    pub unwritten: usize,
    #[serde(default)]
    pub first_unwritten: Option<usize>,
    /// How many elements were compared with the reference when it covers a sample only
    /// (every element is still checked for NaN).
    #[serde(default)]
    pub sampled: Option<usize>,
    /// When the device ran a sample of the blocks (`--sim-blocks`): blocks run, blocks in
    /// all, and the output elements they wrote, the only ones checked.
    #[serde(default)]
    pub blocks: Option<BlocksChecked>,
    /// The compared element furthest from its reference, for a failure to show.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub worst: Option<Worst>,
    pub tolerance: f64,
    pub passed: bool,
}

/// An element of the output and its reference value.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Worst {
    /// Row-major index into the output.
    pub index: usize,
    pub got: f32,
    /// The reference may be infinite where the output is finite.
    #[serde(with = "nonfinite_json")]
    pub want: f64,
}

/// A check restricted to what a sample of the blocks wrote.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct BlocksChecked {
    pub run: u64,
    pub of: u64,
    pub outputs_written: usize,
    /// The output's elements.
    pub outputs: usize,
}

/// What an output is compared with: every element, or a sample of them.
#[derive(Debug, Clone, Copy)]
pub struct Expected<'a> {
    pub values: &'a [f64],
    /// Output indices of `values` when they are a sample; `None` when they cover the output.
    pub indices: Option<&'a [usize]>,
}

/// Checks every element of `out` against a full reference.
pub fn check(out: &[f32], reference: &[f64], tolerance: f64) -> Check {
    check_against(
        out,
        Expected {
            values: reference,
            indices: None,
        },
        None,
        tolerance,
    )
}

/// Checks `out`: finiteness (and, with `sentinel`, that no element still holds the finite
/// value it was filled with) over every element, the error over what `expected` covers.
pub fn check_against(
    out: &[f32],
    expected: Expected<'_>,
    sentinel: Option<f32>,
    tolerance: f64,
) -> Check {
    let mut c = Check {
        rel_error: 0.0,
        max_abs_error: 0.0,
        nonfinite: 0,
        first_nonfinite: None,
        poisoned: 0,
        unwritten: 0,
        first_unwritten: None,
        sampled: expected.indices.map(<[usize]>::len),
        blocks: None,
        worst: None,
        tolerance,
        passed: false,
    };
    let sentinel = sentinel.filter(|s| s.is_finite() && *s != 0.0);
    for (i, &o) in out.iter().enumerate() {
        if !o.is_finite() {
            c.nonfinite += 1;
            c.poisoned += usize::from(kernel::is_poison(o));
            c.first_nonfinite.get_or_insert(i);
        } else if sentinel.is_some_and(|s| s.to_bits() == o.to_bits()) {
            c.unwritten += 1;
            c.first_unwritten.get_or_insert(i);
        }
    }
    // Each compared element: its output index, value and reference.
    let pairs: Box<dyn Iterator<Item = (usize, f32, f64)>> = match expected.indices {
        Some(idx) => {
            assert_eq!(idx.len(), expected.values.len(), "sample lengths differ");
            Box::new(
                idx.iter()
                    .map(|&i| (i, out[i]))
                    .zip(expected.values.iter().copied())
                    .map(|((i, o), r)| (i, o, r)),
            )
        }
        None => {
            assert_eq!(
                out.len(),
                expected.values.len(),
                "output and reference lengths differ"
            );
            Box::new(
                out.iter()
                    .copied()
                    .zip(expected.values.iter().copied())
                    .enumerate()
                    .map(|(i, (o, r))| (i, o, r)),
            )
        }
    };
    let (mut diff2, mut ref2) = (0.0f64, 0.0f64);
    for (i, o, r) in pairs {
        if !o.is_finite() {
            continue;
        }
        let d = f64::from(o) - r;
        diff2 += d * d;
        ref2 += r * r;
        if d.abs() > c.max_abs_error {
            c.max_abs_error = d.abs();
            c.worst = Some(Worst {
                index: i,
                got: o,
                want: r,
            });
        }
    }
    if c.nonfinite > 0 || c.unwritten > 0 {
        c.rel_error = f64::INFINITY;
        c.max_abs_error = f64::INFINITY;
    } else if ref2 > 0.0 {
        c.rel_error = (diff2 / ref2).sqrt();
    } else {
        c.rel_error = diff2.sqrt();
    }
    c.passed = c.nonfinite == 0 && c.unwritten == 0 && c.rel_error <= tolerance;
    c
}

/// Checks what a sample of the blocks wrote: the elements in `sample.written` (ascending)
/// against the reference where it has them. The others were never run and are not judged;
/// a sample that wrote nothing fails.
pub fn check_sample(
    out: &[f32],
    expected: Expected<'_>,
    sample: &kernel::BlockSample,
    sentinel: Option<f32>,
    tolerance: f64,
) -> Check {
    let written = &sample.written;
    // The compared elements: output index, value, reference.
    let picked: Vec<(usize, f32, f64)> = match expected.indices {
        None => written
            .iter()
            .map(|&i| (i, out[i], expected.values[i]))
            .collect(),
        Some(idx) => idx
            .iter()
            .zip(expected.values)
            .filter(|(i, _)| written.binary_search(i).is_ok())
            .map(|(&i, &v)| (i, out[i], v))
            .collect(),
    };
    let values: Vec<f32> = picked.iter().map(|p| p.1).collect();
    let reference: Vec<f64> = picked.iter().map(|p| p.2).collect();
    let mut c = check_against(
        &values,
        Expected {
            values: &reference,
            indices: None,
        },
        sentinel,
        tolerance,
    );
    let at = |j: Option<usize>| j.map(|j| picked[j].0);
    c.first_nonfinite = at(c.first_nonfinite);
    c.first_unwritten = at(c.first_unwritten);
    if let Some(w) = c.worst.as_mut() {
        w.index = picked[w.index].0;
    }
    c.sampled = Some(picked.len());
    c.blocks = Some(BlocksChecked {
        run: sample.blocks_run,
        of: sample.blocks,
        outputs_written: written.len(),
        outputs: out.len(),
    });
    c.passed &= !picked.is_empty();
    c
}

impl Check {
    /// Why a failed check failed, in words a user can act on.
    /// `layout`: the output as the kernel lays it out, where that is not the workload's own.
    pub fn failure(
        &self,
        precision: kernel::Precision,
        output: &kernel::TensorSpec,
        layout: Option<&kernel::OutputLayout>,
    ) -> String {
        let at = |i: usize| {
            let axes: Vec<(&str, usize)> = match layout {
                Some(l) => l.axes.clone(),
                None => output.dims.iter().map(|&d| ("", d)).collect(),
            };
            let mut rem = i;
            let mut coords = vec![String::new(); axes.len()];
            for (c, (name, d)) in coords.iter_mut().zip(&axes).rev() {
                *c = match name.is_empty() {
                    true => (rem % d).to_string(),
                    false => format!("{name} {}", rem % d),
                };
                rem /= d;
            }
            let name = output.name;
            let coords = coords.join(", ");
            match layout {
                Some(l) => format!("{name}[{coords}] (index {i} of {name} stored {})", l.order),
                None => format!("{name}[{coords}] (index {i})"),
            }
        };
        if self.blocks.is_some() && self.sampled == Some(0) {
            return "the sampled blocks wrote no output element that could be checked (none \
                    of the reference's sampled elements, if it is sampled)"
                .into();
        }
        // Every element before the first unwritten one written and none from it on (`missing`
        // of them), at the start of a slice of the first dimension (an image of a batch, a
        // row): the launch stops short of that dimension's end.
        let cover = |i: usize, missing: usize| {
            let outer = output.dims.first().copied().unwrap_or(1);
            let slice = output.len() / outer.max(1);
            let short = layout.is_none()
                && outer > 1
                && i > 0
                && slice > 0
                && i.is_multiple_of(slice)
                && missing == output.len() - i
                && self.blocks.is_none();
            match short {
                true => format!(
                    "every element before it was written and none from it on: the kernel \
                     wrote {} of the {outer} along {}'s first dimension; do its launch and its \
                     bounds checks cover them all?",
                    i / slice,
                    output.name
                ),
                false => "does the launch cover the whole output?".to_string(),
            }
        };
        if let Some(i) = self.first_unwritten {
            format!(
                "{} of {} elements were never written (they still hold the fill value); the \
                 first is {}: {}",
                self.unwritten,
                output.len(),
                at(i),
                cover(i, self.unwritten)
            )
        } else if let Some(i) = self.first_nonfinite {
            // The fill's NaN is told from one the kernel computed by its bits.
            let why = if self.poisoned == self.nonfinite {
                "all of them the NaN the output was filled with: never written, or computed \
                 from an element that was"
                    .to_string()
            } else if self.poisoned == 0 {
                "computed by the kernel (an overflow, 0/0, infinity minus infinity, a NaN \
                 input), none left unwritten"
                    .to_string()
            } else {
                format!(
                    "{} of them the NaN the output was filled with (never written), {} computed \
                     by the kernel",
                    self.poisoned,
                    self.nonfinite - self.poisoned
                )
            };
            let cover = match self.poisoned {
                0 => String::new(),
                // All of them the fill, the first a poisoned one: never written.
                p if p == self.nonfinite => format!(": {}", cover(i, p)),
                _ => ": does the launch cover the whole output?".to_string(),
            };
            format!(
                "{} of {} elements are NaN or infinite, {why}; the first is {}{cover}",
                self.nonfinite,
                output.len(),
                at(i)
            )
        } else {
            // The element furthest from its reference: where to start looking.
            let worst = self.worst.map_or(String::new(), |w| {
                format!(
                    "\n  the furthest from the reference is {}: {} where the reference has {}",
                    at(w.index),
                    w.got,
                    w.want as f32
                )
            });
            let error = if self.tolerance == 0.0 {
                format!(
                    "the integer output is not the exact result: an element is off by {:.0} \
                     (relative error {:.2e}{})",
                    self.max_abs_error,
                    self.rel_error,
                    self.sampled
                        .map(|n| format!(" over {n} sampled elements"))
                        .unwrap_or_default()
                )
            } else {
                format!(
                    "relative error {:.2e} above the {precision} bound {:.0e}{}",
                    self.rel_error,
                    self.tolerance,
                    self.sampled
                        .map(|n| format!(" (over {n} sampled elements)"))
                        .unwrap_or_default()
                )
            };
            error + &worst
        }
    }
}

/// An error that is not a number in JSON: JSON has no NaN or infinity, and serde_json writes
/// both as `null`, which a `f64` field does not read back, so a run with a failed row (an
/// infinite error) or a PyTorch peer (no absolute error) would write results it cannot load.
/// Written as `"inf"`, `"-inf"` or `"nan"`; `null` still reads as NaN.
mod nonfinite_json {
    use serde::{Deserialize, Deserializer, Serializer};

    pub fn serialize<S: Serializer>(v: &f64, s: S) -> Result<S::Ok, S::Error> {
        match *v {
            v if v.is_finite() => s.serialize_f64(v),
            v if v.is_nan() => s.serialize_str("nan"),
            v if v > 0.0 => s.serialize_str("inf"),
            _ => s.serialize_str("-inf"),
        }
    }

    #[derive(Deserialize)]
    #[serde(untagged)]
    enum Repr {
        Number(f64),
        Word(String),
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<f64, D::Error> {
        match Option::<Repr>::deserialize(d)? {
            Some(Repr::Number(v)) => Ok(v),
            None => Ok(f64::NAN),
            Some(Repr::Word(w)) => match w.as_str() {
                "nan" => Ok(f64::NAN),
                "inf" => Ok(f64::INFINITY),
                "-inf" => Ok(f64::NEG_INFINITY),
                _ => Err(serde::de::Error::custom(format!(
                    "`{w}` is not an error: a number, \"inf\", \"-inf\" or \"nan\""
                ))),
            },
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_check_with_errors_that_are_not_numbers_reads_back_as_it_was_written() {
        // A NaN output (infinite error) and a PyTorch peer's row (no absolute error).
        let mut c = check(&[1.0, f32::NAN], &[1.0, 2.0], 1e-5);
        c.max_abs_error = f64::NAN;
        let json = serde_json::to_string(&c).unwrap();
        assert!(json.contains(r#""rel_error":"inf""#), "{json}");
        let back: Check = serde_json::from_str(&json).unwrap();
        assert!(back.rel_error == f64::INFINITY && back.max_abs_error.is_nan());
        // Files written before: `null` where serde_json put a NaN.
        let old = json.replace(r#""max_abs_error":"nan""#, r#""max_abs_error":null"#);
        let back: Check = serde_json::from_str(&old).unwrap();
        assert!(back.max_abs_error.is_nan());
        let bad = json.replace(r#""inf""#, r#""lots""#);
        let err = serde_json::from_str::<Check>(&bad).unwrap_err().to_string();
        assert!(err.contains("`lots` is not an error"), "{err}");
    }

    /// The element furthest from its reference is named by its place in the output, a
    /// sample's too, and an infinite reference there reads back as it was written.
    #[test]
    fn the_furthest_element_is_named_by_its_place_in_the_output() {
        let c = check(&[1.0, 2.5, 3.0], &[1.0, 2.0, 3.25], 1e-5);
        let w = c.worst.unwrap();
        assert_eq!((w.index, w.got, w.want), (1, 2.5, 2.0));
        let out = [0.0, 7.0, 1.0, 1.0];
        let c = check_against(
            &out,
            Expected {
                values: &[1.0, 1.0],
                indices: Some(&[3, 1]),
            },
            None,
            1e-5,
        );
        assert_eq!(c.worst.map(|w| w.index), Some(1));
        let mut c = check(&[1.0], &[f64::INFINITY], 1e-5);
        assert_eq!(c.worst.map(|w| w.want), Some(f64::INFINITY));
        c.rel_error = 1.0;
        let back: Check = serde_json::from_str(&serde_json::to_string(&c).unwrap()).unwrap();
        assert_eq!(back.worst, c.worst);
    }

    #[test]
    fn the_fills_nan_is_told_from_a_computed_one() {
        let r = [1.0, -2.0, 3.0, 4.0];
        let spec = kernel::TensorSpec {
            name: "C",
            dims: vec![4],
            scale: 1.0,
            positive: false,
        };
        let fp32 = kernel::Precision::Fp32;
        // The fill's bits, as each element type decodes them.
        for d in [kernel::Dtype::F32, kernel::Dtype::F16, kernel::Dtype::Bf16] {
            let poison = d.decode(&kernel::Fill::Nan.bytes(d, 1))[0];
            let c = check(&[1.0, poison, 3.0, 4.0], &r, 1e-5);
            assert_eq!((c.nonfinite, c.poisoned), (1, 1), "{d:?}");
            let why = c.failure(fp32, &spec, None);
            assert!(
                why.contains("the NaN the output was filled with: never written"),
                "{why}"
            );
        }
        // 0/0 on this machine, and a GPU's canonical NaN.
        let zero = std::hint::black_box(0.0f32);
        for computed in [zero / zero, f32::from_bits(0x7FFF_FFFF), f32::INFINITY] {
            let c = check(&[1.0, computed, 3.0, 4.0], &r, 1e-5);
            assert_eq!(c.poisoned, 0, "{:08x}", computed.to_bits());
            let why = c.failure(fp32, &spec, None);
            assert!(why.contains("computed by the kernel (an overflow"), "{why}");
            assert!(!why.contains("cover the whole output"), "{why}");
        }
        let both = check(&[kernel::POISON_F32, zero / zero, 3.0, 4.0], &r, 1e-5);
        let why = both.failure(fp32, &spec, None);
        assert!(
            why.starts_with(
                "2 of 4 elements are NaN or infinite, 1 of them the NaN the output \
                             was filled with (never written), 1 computed by the kernel"
            ),
            "{why}"
        );
        // The second of two images never written: the launch covered the first.
        let images = kernel::TensorSpec {
            name: "y",
            dims: vec![2, 1, 2],
            ..spec
        };
        let poison = kernel::POISON_F32;
        let c = check(&[1.0, -2.0, poison, poison], &r, 1e-5);
        let why = c.failure(fp32, &images, None);
        assert!(
            why.contains(
                "the first is y[1, 0, 0] (index 2): every element before it was written and \
                 none from it on: the kernel wrote 1 of the 2 along y's first dimension"
            ),
            "{why}"
        );
    }

    #[test]
    fn exact_output_passes_and_nan_never_does() {
        let r = [1.0, -2.0, 3.0];
        assert!(check(&[1.0, -2.0, 3.0], &r, 1e-5).passed);
        let nan = check(&[1.0, f32::NAN, 3.0], &r, 1e-5);
        assert!(!nan.passed && nan.nonfinite == 1 && nan.rel_error.is_infinite());
        assert_eq!(nan.first_nonfinite, Some(1));
        let off = check(&[1.0, -2.0, 3.1], &r, 1e-5);
        assert!(!off.passed && (off.rel_error - 0.1 / 14f64.sqrt()).abs() < 1e-6);
        assert!(check(&[1.0, -2.0, 3.1], &r, 0.1).passed);
    }

    #[test]
    fn samples_are_compared_and_every_element_is_checked_for_nan() {
        let vals = [1.0, 3.0];
        let idx = [0usize, 2];
        let e = Expected {
            values: &vals,
            indices: Some(&idx),
        };
        let ok = check_against(&[1.0, 99.0, 3.0], e, None, 1e-6);
        assert!(
            ok.passed && ok.sampled == Some(2),
            "element 1 is not in the sample"
        );
        let nan = check_against(&[1.0, f32::NAN, 3.0], e, None, 1e-6);
        assert!(!nan.passed && nan.first_nonfinite == Some(1));
    }

    #[test]
    fn a_finite_sentinel_left_in_place_is_an_unwritten_element() {
        let r = [1.0, 2.0, 3.0, 4.0];
        let e = Expected {
            values: &r,
            indices: None,
        };
        let c = check_against(&[1.0, 2.0, -7.5, -7.5], e, Some(-7.5), 1e-2);
        assert!(!c.passed && c.unwritten == 2 && c.first_unwritten == Some(2));
        let spec = kernel::TensorSpec {
            name: "C",
            dims: vec![2, 2],
            scale: 1.0,
            positive: false,
        };
        let why = c.failure(kernel::Precision::Fp32, &spec, None);
        assert!(
            why.contains("C[1, 0] (index 2)") && why.contains("2 of 4"),
            "{why}"
        );
        // A kernel storing C column-major writes index 2 as column 1, row 0: named so, with
        // each index's name, not as the row-major C[1, 0].
        let col = kernel::OutputLayout {
            axes: vec![("column", 2), ("row", 2)],
            order: "column-major",
        };
        let why = c.failure(kernel::Precision::Fp32, &spec, Some(&col));
        assert!(
            why.contains("the first is C[column 1, row 0] (index 2 of C stored column-major)"),
            "{why}"
        );
        // The first of the two rows whole and the second never written: the launch stops
        // after one row.
        let c = check_against(&[1.0, 2.0, -7.5, -7.5], e, Some(-7.5), 1e-2);
        let why = c.failure(kernel::Precision::Fp32, &spec, None);
        assert!(
            why.contains(
                "the first is C[1, 0] (index 2): every element before it was written and none \
                 from it on: the kernel wrote 1 of the 2 along C's first dimension"
            ),
            "{why}"
        );
        // Zero is a legitimate result: a zero fill detects nothing.
        assert!(check_against(&[1.0, 2.0, 3.0, 4.0], e, Some(0.0), 1e-6).passed);
    }

    #[test]
    fn a_block_sample_is_judged_on_what_it_wrote() {
        let r = [1.0, 2.0, 3.0, 4.0, 5.0, 6.0];
        let full = Expected {
            values: &r,
            indices: None,
        };
        let sample = |written: Vec<usize>| kernel::BlockSample {
            blocks_run: 1,
            blocks: 3,
            written,
        };
        let nan = f32::NAN;
        // Elements 2 and 3 written, right; the others never ran.
        let out = [nan, nan, 3.0, 4.0, nan, nan];
        let c = check_sample(&out, full, &sample(vec![2, 3]), None, 1e-6);
        assert!(c.passed && c.sampled == Some(2), "{c:?}");
        let b = c.blocks.unwrap();
        assert_eq!((b.run, b.of, b.outputs_written, b.outputs), (1, 3, 2, 6));
        // A written element that is wrong, or NaN, fails, named by its output index.
        let wrong = check_sample(
            &[nan, nan, 3.0, 9.0, nan, nan],
            full,
            &sample(vec![2, 3]),
            None,
            1e-6,
        );
        assert!(!wrong.passed);
        let bad = [nan, nan, 3.0, 4.0, nan, 1.0 / 0.0];
        let inf = check_sample(&bad, full, &sample(vec![2, 3, 5]), None, 1e-6);
        assert!(!inf.passed && inf.first_nonfinite == Some(5), "{inf:?}");
        // Against a sampled reference: only elements both written and sampled count.
        let (vals, idx) = ([2.0, 4.0], [1usize, 3]);
        let sampled = Expected {
            values: &vals,
            indices: Some(&idx),
        };
        let c = check_sample(&out, sampled, &sample(vec![2, 3]), None, 1e-6);
        assert!(c.passed && c.sampled == Some(1), "{c:?}");
        // Nothing to compare is a failure, said as such.
        let none = check_sample(&out, sampled, &sample(vec![2]), None, 1e-6);
        assert!(!none.passed);
        let spec = kernel::TensorSpec {
            name: "C",
            dims: vec![2, 3],
            scale: 1.0,
            positive: false,
        };
        assert!(
            none.failure(kernel::Precision::Fp32, &spec, None)
                .contains("wrote no output")
        );
    }
}
