//! What a user kernel's buffers hold: the element type of each (`dtype=`), their layouts
//! (GEMM's `a=`, `b=` and `c=`, attention's `layout=`, `k=` and `v=`), the BLAS scalars
//! (`alpha=`, `beta=`) and from them the precision the row is judged by.

use super::layout::{HeadMap, Relayout};
use super::signature::{Param, Signature};
use super::spec::{HeadLayout, Layout, UserKernelSpec};
use kernel::{Dtype, Precision, Shape, Workload};

/// The element type of every buffer the lab passes.
#[derive(Clone, Debug, PartialEq)]
pub struct Buffers {
    /// Per input of the workload ([`kernel::Shape::inputs`] order).
    pub inputs: Vec<Dtype>,
    pub output: Dtype,
    /// Per scratch buffer of the signature (attention's running `l` and `m`).
    pub scratch: Vec<Dtype>,
    /// A's, B's and C's layouts (GEMM; linear's X and W are passed as the workload holds
    /// them, `W[N][K]`).
    pub a: Layout,
    pub b: Layout,
    pub c: Layout,
    /// Attention's order of dimensions, and K's and V's layouts within a head.
    pub heads: HeadLayout,
    pub k: Layout,
    pub v: Layout,
    pub alpha: f32,
    pub beta: f32,
}

/// The C++ type of an element of `d`, as the wrapper declares its pointers.
pub fn c_name(d: Dtype) -> &'static str {
    match d {
        Dtype::F32 => "float",
        Dtype::F16 => "half",
        Dtype::Bf16 => "__nv_bfloat16",
        Dtype::E4m3 => "__nv_fp8_e4m3",
        Dtype::E5m2 => "__nv_fp8_e5m2",
        Dtype::I32 => "int",
        Dtype::S8 => "int8_t",
    }
}

/// The precision a buffer of `d` forces at least: its rounding.
fn precision_of(d: Dtype) -> Precision {
    match d {
        // Integer arithmetic is exact: FP32's bound holds it to the f32 read-back.
        Dtype::F32 | Dtype::I32 | Dtype::S8 => Precision::Fp32,
        Dtype::F16 => Precision::Fp16,
        Dtype::Bf16 => Precision::Bf16,
        Dtype::E4m3 | Dtype::E5m2 => Precision::Fp8,
    }
}

impl Buffers {
    /// Every buffer of `sig` in FP32, A and B row-major, alpha 1 and beta 0: the defaults.
    pub fn fp32(sig: &Signature) -> Self {
        let probe = sig.workload.probe_shape();
        Self {
            inputs: vec![Dtype::F32; probe.inputs().len()],
            output: Dtype::F32,
            scratch: vec![Dtype::F32; sig.scratch.len()],
            a: Layout::Row,
            b: Layout::Row,
            c: Layout::Row,
            heads: HeadLayout::Bhsd,
            k: Layout::Row,
            v: Layout::Row,
            alpha: 1.0,
            beta: 0.0,
        }
    }

    /// The buffers of `spec` for `workload` with `sig`'s scratch buffers, `params` being the
    /// parameters the kernel is passed. An error names the option at fault and what to write.
    pub fn of(
        spec: &UserKernelSpec,
        workload: Workload,
        sig: &Signature,
        params: &[Param],
    ) -> Result<Self, String> {
        let probe = workload.probe_shape();
        let tensors: Vec<&str> = probe
            .inputs()
            .iter()
            .map(|t| t.name)
            .chain([probe.output().name])
            .collect();
        let scratch: Vec<&str> = sig.scratch.iter().map(|s| s.name).collect();
        let mut out = Self {
            inputs: vec![Dtype::F32; tensors.len() - 1],
            output: Dtype::F32,
            scratch: vec![Dtype::F32; scratch.len()],
            a: spec.a.unwrap_or_default(),
            b: spec.b.unwrap_or_default(),
            c: spec.c.unwrap_or_default(),
            heads: spec.layout.unwrap_or_default(),
            k: spec.k.unwrap_or_default(),
            v: spec.v.unwrap_or_default(),
            alpha: spec.alpha.unwrap_or(1.0),
            beta: spec.beta.unwrap_or(0.0),
        };
        for (name, d) in &spec.dtype {
            match name {
                None => {
                    out.inputs.iter_mut().for_each(|t| *t = *d);
                    out.output = *d;
                }
                Some(n) => {
                    if let Some(i) = tensors.iter().position(|t| t == n) {
                        match out.inputs.get_mut(i) {
                            Some(t) => *t = *d,
                            None => out.output = *d,
                        }
                    } else if let Some(i) = scratch.iter().position(|s| s == n) {
                        out.scratch[i] = *d;
                    } else {
                        let all: Vec<&str> = tensors.iter().chain(&scratch).copied().collect();
                        return Err(format!(
                            "dtype: {workload} has no buffer {n:?}; its buffers: {}",
                            all.join(", ")
                        ));
                    }
                }
            }
        }
        // FP8 rounds each value by up to 6% (E4M3) or 12% (E5M2), and 8 bits cannot hold an
        // int8 kernel's sums: an output or a running statistic stored in them could not be
        // told from a wrong one.
        let wider = |name: &str, d: Dtype| match (d, out.inputs.iter().find_map(|d| d.fp8())) {
            (Dtype::S8, _) => format!(
                "s8 is for inputs: give {name} i32, as int8 kernels write their 32-bit sums \
                 (dtype=s8,{name}:i32)"
            ),
            (_, Some(_)) => format!(
                "FP8 is for inputs: give {name} a wider type, as FP8 kernels write theirs \
                 (dtype=e4m3,{name}:bf16)"
            ),
            (_, None) => format!("FP8 is for inputs: give {name} f32, f16 or bf16"),
        };
        // A transpose or a max pool only moves or picks values: an output of its inputs' own
        // 8-bit type holds the result exactly.
        let exact = matches!(workload, Workload::Transpose | Workload::Pool)
            && out.inputs.iter().all(|d| *d == out.output);
        if out.output.inputs_only() && !exact {
            return Err(format!(
                "dtype: {}",
                wider(tensors[tensors.len() - 1], out.output)
            ));
        }
        if let Some(i) = out.scratch.iter().position(|d| d.inputs_only()) {
            return Err(format!("dtype: {}", wider(scratch[i], out.scratch[i])));
        }
        for (key, layout) in [("a", out.a), ("c", out.c)] {
            if layout == Layout::Col && workload != Workload::Gemm {
                return Err(format!(
                    "{key}=col is for GEMM's {}; {workload} passes its operands as the workload \
                     holds them",
                    key.to_uppercase()
                ));
            }
        }
        if out.b == Layout::Col && workload != Workload::Gemm {
            return Err(format!(
                "b=col is for GEMM's B; {workload} passes its operands as the workload holds \
                 them{}",
                if workload == Workload::Linear {
                    " (W[N][K]: each output column's weights contiguous, as a column-major B)"
                } else {
                    ""
                }
            ));
        }
        let attention_options = [
            ("layout", spec.layout.is_some()),
            ("k", spec.k.is_some()),
            ("v", spec.v.is_some()),
        ];
        if let Some((key, _)) = attention_options.iter().find(|(_, given)| *given)
            && workload != Workload::Attention
        {
            return Err(format!(
                "{key}= is for attention's Q, K, V and O; {workload} passes its operands as the \
                 workload holds them{}",
                if workload == Workload::Gemm {
                    " (a=col, b=col and c=col lay out GEMM's A, B and C column-major)"
                } else {
                    ""
                }
            ));
        }
        if out.heads == HeadLayout::Bshd && (out.k == Layout::Col || out.v == Layout::Col) {
            return Err(
                "k=col and v=col transpose each head's [S][D] into [D][S], which lies \
                 contiguous only in the default layout=bhsd: give one or the other"
                    .into(),
            );
        }
        for (key, value, param) in [
            ("alpha", spec.alpha, Param::Alpha),
            ("beta", spec.beta, Param::Beta),
        ] {
            if value.is_some() && !params.contains(&param) {
                return Err(format!(
                    "{key}= is a parameter the kernel is not passed: only the gemm-blas \
                     signature (M, N, K, alpha, A, B, beta, C), or an args= list naming {key}, \
                     passes it"
                ));
            }
        }
        Ok(out)
    }

    /// The element type of the buffer `p` passes, `None` for a scalar.
    pub fn of_param(&self, p: Param) -> Option<Dtype> {
        match p {
            Param::Input(i) => self.inputs.get(i).copied(),
            Param::Output => Some(self.output),
            Param::Scratch(i) => self.scratch.get(i).copied(),
            _ => None,
        }
    }

    /// The coarsest precision the buffers allow: FP16 inputs or output cannot meet FP32's
    /// bound whatever the kernel does.
    pub fn precision(&self) -> Precision {
        self.inputs
            .iter()
            .chain([&self.output])
            .map(|&d| precision_of(d))
            .max_by(Precision::cmp_looseness)
            .unwrap_or(Precision::Fp32)
    }

    /// The row's precision: `asked`, or the buffers'. One finer than the buffers allow is
    /// refused, naming the buffer that rounds more.
    pub fn judge_by(&self, asked: Option<Precision>) -> Result<Precision, String> {
        let floor = self.precision();
        match asked {
            None => Ok(floor),
            Some(p) if p.tolerance() >= floor.tolerance() => Ok(p),
            Some(p) => Err(format!(
                "precision={p} is finer than the buffers allow: {floor} storage rounds each \
                 value by more than the {p} bound (leave precision= out to be judged as {floor})"
            )),
        }
    }

    /// How tensor `i` of `shape` (its inputs, then its output) lies in the kernel's memory,
    /// where not as the workload holds it: a GEMM's A, B or C column-major, attention's Q, K,
    /// V or O in another order.
    pub fn relayout(&self, shape: &Shape, i: usize) -> Option<Relayout> {
        let col = |l: Layout| l == Layout::Col;
        match *shape {
            Shape::Gemm { m, n, k } => {
                let (layout, rows, cols) = [(self.a, m, k), (self.b, k, n), (self.c, m, n)]
                    .get(i)
                    .copied()?;
                col(layout).then_some(Relayout::ColumnMajor { rows, cols })
            }
            Shape::Attention { .. } if i < 4 => {
                let transposed = (i == 1 && col(self.k)) || (i == 2 && col(self.v));
                HeadMap::of(shape, self.heads, transposed).map(Relayout::Heads)
            }
            _ => None,
        }
    }

    /// `A:f16, B:f16 column-major, C:f32`, for the row's summary; empty when every buffer
    /// is f32 and laid out as the workload's.
    pub fn describe(&self, workload: Workload) -> String {
        let probe = workload.probe_shape();
        let mut parts = Vec::new();
        let plain = self
            .inputs
            .iter()
            .chain([&self.output])
            .all(|&d| d == Dtype::F32);
        let tensors = probe.inputs().len() + 1;
        if !plain || (0..tensors).any(|i| self.relayout(&probe, i).is_some()) {
            for (i, t) in probe.inputs().iter().chain([&probe.output()]).enumerate() {
                let d = self.inputs.get(i).copied().unwrap_or(self.output);
                let layout = self.relayout(&probe, i);
                parts.push(format!(
                    "{}:{}{}",
                    t.name,
                    d.name(),
                    layout
                        .map(|l| format!(" {}", l.describe()))
                        .unwrap_or_default()
                ));
            }
        }
        if self.alpha != 1.0 || self.beta != 0.0 {
            parts.push(format!("alpha {} beta {}", self.alpha, self.beta));
        }
        parts.join(", ")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec(options: &str) -> UserKernelSpec {
        UserKernelSpec::parse(&format!("k.cu:k,{options}")).unwrap()
    }

    fn params(sig: &Signature) -> Vec<Param> {
        sig.params.iter().map(|(_, p)| *p).collect()
    }

    /// FP8 is for inputs: a row with FP8 inputs is judged as FP8 whatever its output's type,
    /// and an FP8 output or scratch buffer is refused, saying what to write.
    #[test]
    fn fp8_inputs_name_the_rows_precision_and_fp8_outputs_are_refused() {
        let sig = Signature::named("gemm").unwrap();
        let of = |options: &str| Buffers::of(&spec(options), Workload::Gemm, sig, &params(sig));
        for options in [
            "dtype=e4m3,C:bf16",
            "dtype=e5m2,C:f32",
            "dtype=A:e4m3,B:bf16,C:bf16",
        ] {
            let b = of(options).unwrap();
            assert_eq!(b.precision(), Precision::Fp8, "{options}");
        }
        let e = of("dtype=e4m3").unwrap_err();
        assert!(
            e.contains("FP8 is for inputs: give C a wider type") && e.contains("dtype=e4m3,C:bf16"),
            "{e}"
        );
        let lm = Signature::named("attention-lm").unwrap();
        let e = Buffers::of(
            &spec("dtype=e4m3,O:bf16,l:e4m3"),
            Workload::Attention,
            lm,
            &params(lm),
        )
        .unwrap_err();
        assert!(e.contains("FP8 is for inputs: give l a wider type"), "{e}");
    }

    #[test]
    fn a_default_type_covers_the_tensors_and_names_override_it() {
        let sig = Signature::named("gemm").unwrap();
        let b = Buffers::of(&spec("dtype=f16,C:f32"), Workload::Gemm, sig, &params(sig)).unwrap();
        assert_eq!(b.inputs, vec![Dtype::F16, Dtype::F16]);
        assert_eq!(b.output, Dtype::F32);
        assert_eq!(b.precision(), Precision::Fp16);
        assert_eq!(b.judge_by(None), Ok(Precision::Fp16));
        assert_eq!(b.judge_by(Some(Precision::Bf16)), Ok(Precision::Bf16));
        let e = b.judge_by(Some(Precision::Fp32)).unwrap_err();
        assert!(e.contains("finer than the buffers allow"), "{e}");
        let lm = Signature::named("attention-lm").unwrap();
        let a = Buffers::of(
            &spec("dtype=bf16,m:f32"),
            Workload::Attention,
            lm,
            &params(lm),
        );
        let a = a.unwrap();
        assert_eq!(
            (a.output, a.scratch.clone()),
            (Dtype::Bf16, vec![Dtype::F32; 2])
        );
        assert_eq!(a.precision(), Precision::Bf16);
    }

    #[test]
    fn wrong_names_layouts_and_scalars_say_what_fits() {
        let gemm = Signature::named("gemm").unwrap();
        let e = Buffers::of(&spec("dtype=Z:f16"), Workload::Gemm, gemm, &params(gemm));
        assert!(
            e.unwrap_err()
                .contains("gemm has no buffer \"Z\"; its buffers: A, B, C")
        );
        let linear = Signature::named("linear").unwrap();
        let e = Buffers::of(&spec("b=col"), Workload::Linear, linear, &params(linear));
        assert!(e.unwrap_err().contains("W[N][K]"));
        let e = Buffers::of(&spec("alpha=2"), Workload::Gemm, gemm, &params(gemm));
        assert!(e.unwrap_err().contains("gemm-blas"));
        let blas = Signature::named("gemm-blas").unwrap();
        let b = Buffers::of(
            &spec("alpha=2,beta=0.5"),
            Workload::Gemm,
            blas,
            &params(blas),
        );
        assert_eq!(b.unwrap().describe(Workload::Gemm), "alpha 2 beta 0.5");
    }
}
