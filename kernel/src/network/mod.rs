//! Networks built from the ladders' kernels: a [`Graph`] of layers, each a kernel's plan (a
//! rung of some ladder, or a small glue kernel) bound to the network's tensors.
//!
//! One graph gives every executor its forward pass: [`Graph::compose`] joins the layers'
//! CUDA plans into one plan (the CUDA device and the simulator run it like any other), with a
//! conversion launch wherever a layer reads a narrower type than the layer before it wrote;
//! [`Graph::forward_cpu`] runs the layers' CPU ports in order and times each. The network's
//! own f64 forward pass ([`reference`]) is written apart from every kernel, from the
//! definitions in [`cnn`] and [`encoder`].

pub mod cnn;
pub mod encoder;

use crate::contract::{Kernel, Unsupported};
use crate::plan::{
    Arg, At, Buf, ConstantCopy, CudaPlan, CudaSource, Dtype, Fill, LibraryCall, Scratch, Step,
};
use crate::workload::{Shape, TensorSpec};
use rayon::prelude::*;
use serde::{Deserialize, Serialize};
use std::collections::HashMap;
use std::fmt;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// What a step of a network spends its time on, for the breakdown.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Category {
    Gemm,
    Attention,
    Convolution,
    /// Bias, activations, residuals, LayerNorm, softmax, pooling: memory-bound passes.
    Elementwise,
    /// Layout changes (splitting and merging heads) and type conversions.
    Copies,
    /// The end-to-end time the steps alone do not account for: the GPU idle between
    /// launches, launch latency, the host's own work between layers.
    Gaps,
}

impl Category {
    pub const ALL: [Category; 6] = [
        Self::Gemm,
        Self::Attention,
        Self::Convolution,
        Self::Elementwise,
        Self::Copies,
        Self::Gaps,
    ];

    pub fn name(self) -> &'static str {
        match self {
            Self::Gemm => "GEMM",
            Self::Attention => "attention",
            Self::Convolution => "convolution",
            Self::Elementwise => "element-wise",
            Self::Copies => "copies and conversions",
            Self::Gaps => "gaps between steps",
        }
    }
}

impl fmt::Display for Category {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// A layer's CPU port: its inputs (in the order of the layer's plan) into its output.
pub type LayerCpu = Arc<dyn Fn(&[&[f32]], &mut [f32]) + Send + Sync>;

/// A range of one of the network's buffers: its inputs ([`Buf::Input`]), its activations
/// ([`Buf::Scratch`], numbered as [`Graph::activation`] hands them out) or its output.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Binding {
    pub at: At,
    pub len: usize,
}

/// One layer: a plan over its own buffers (`Input(i)`, `Output`, `Scratch(j)`) and where
/// each of those lies in the network.
#[derive(Clone)]
pub struct Layer {
    /// "conv 1", "QKV projection".
    pub name: String,
    pub category: Category,
    /// The ladder rung that computes it, where it is one (`gemm-tiled`).
    pub rung: Option<String>,
    /// `None`: the kernel has no CUDA description (the network runs on the CPU only).
    pub plan: Option<CudaPlan>,
    pub cpu: Option<LayerCpu>,
    /// One per input of the plan, in its order.
    pub inputs: Vec<Binding>,
    pub output: Binding,
}

impl Layer {
    /// A layer computed by `kernel` at `shape`: its inputs are `shape`'s inputs, in order.
    pub fn rung(
        name: &str,
        category: Category,
        kernel: &dyn Kernel,
        shape: Shape,
        inputs: &[At],
        output: At,
    ) -> Result<Self, Unsupported> {
        kernel.supports(&shape).map_err(|why| {
            Unsupported(format!("{name}: {} at {shape}: {why}", kernel.info().id))
        })?;
        let specs = shape.inputs();
        assert_eq!(specs.len(), inputs.len(), "{name}: one binding per input");
        let cpu = kernel.cpu().map(|port| -> LayerCpu {
            Arc::new(move |ins: &[&[f32]], out: &mut [f32]| port(&shape, ins, out))
        });
        Ok(Self {
            name: name.to_string(),
            category,
            rung: Some(kernel.info().id.to_string()),
            plan: kernel.cuda(&shape),
            cpu,
            inputs: specs
                .iter()
                .zip(inputs)
                .map(|(t, &at)| Binding { at, len: t.len() })
                .collect(),
            output: Binding {
                at: output,
                len: shape.output().len(),
            },
        })
    }
}

/// A network's layers over its tensors.
#[derive(Clone)]
pub struct Graph {
    pub inputs: Vec<TensorSpec>,
    /// Name and length (f32 elements) of each intermediate tensor.
    pub activations: Vec<(String, usize)>,
    pub output_len: usize,
    pub layers: Vec<Layer>,
}

/// One step of a composed plan, as the breakdown names it.
#[derive(Clone, Debug, PartialEq)]
pub struct StepTag {
    /// The layer the step belongs to; a conversion belongs to the layer that needs it.
    pub layer: usize,
    pub category: Category,
    /// "conv 1", or "conv 1: input 0 to fp16" for a conversion.
    pub label: String,
}

/// A graph joined into one plan, with what each of its steps is.
#[derive(Clone, Debug)]
pub struct Composed {
    pub plan: CudaPlan,
    pub steps: Vec<StepTag>,
}

impl Graph {
    pub fn new(shape: &Shape) -> Self {
        Self {
            inputs: shape.inputs(),
            activations: Vec::new(),
            output_len: shape.output().len(),
            layers: Vec::new(),
        }
    }

    /// A new intermediate tensor of `len` f32 elements.
    pub fn activation(&mut self, name: &str, len: usize) -> Buf {
        self.activations.push((name.to_string(), len));
        Buf::Scratch(self.activations.len() - 1)
    }

    pub fn push(&mut self, layer: Layer) {
        assert!(
            layer.inputs.iter().all(|b| b.at.buf != layer.output.at.buf),
            "{}: a layer never reads the tensor it writes",
            layer.name
        );
        self.layers.push(layer);
    }

    /// The rungs the layers use, each once, in order.
    pub fn rungs(&self) -> Vec<&str> {
        let mut out: Vec<&str> = Vec::new();
        for r in self.layers.iter().filter_map(|l| l.rung.as_deref()) {
            if !out.contains(&r) {
                out.push(r);
            }
        }
        out
    }

    /// The device type of each network input: a weight is stored in the type its layers
    /// read (converted once, before timing, as a deployed model keeps its weights); the data
    /// (input 0) stays FP32, so converting it is part of the forward pass.
    fn input_dtypes(&self) -> Vec<Dtype> {
        let mut wanted: Vec<Option<Dtype>> = vec![None; self.inputs.len()];
        let mut mixed = vec![false; self.inputs.len()];
        for l in &self.layers {
            let Some(plan) = &l.plan else { continue };
            for (b, &d) in l.inputs.iter().zip(&plan.inputs) {
                if let Buf::Input(k) = b.at.buf {
                    match wanted[k] {
                        None => wanted[k] = Some(d),
                        Some(w) if w != d => mixed[k] = true,
                        Some(_) => {}
                    }
                }
            }
        }
        wanted
            .iter()
            .zip(&mixed)
            .enumerate()
            .map(|(k, (w, &mixed))| match (k, w, mixed) {
                (0, _, _) | (_, None, _) | (_, _, true) => Dtype::F32,
                (_, Some(d), false) => *d,
            })
            .collect()
    }

    /// Every layer's plan in one: buffers renumbered into the network's, conversions
    /// inserted where a layer reads a type its input is not stored in.
    pub fn compose(&self) -> Result<Composed, Unsupported> {
        let input_dtypes = self.input_dtypes();
        let mut scratch: Vec<Scratch> = self
            .activations
            .iter()
            .map(|(name, len)| Scratch {
                fill: Fill::Nan,
                ..Scratch::new(name.clone(), Dtype::F32, *len)
            })
            .collect();
        let mut steps = Vec::new();
        let mut tags = Vec::new();
        let mut persistent = Vec::new();
        let mut cooperative = Vec::new();
        let mut written = Vec::new();
        // (source range, type) -> the scratch holding it converted, shared by later readers.
        let mut converted: HashMap<(Binding, Dtype), At> = HashMap::new();
        let dtype_of = |at: At| match at.buf {
            Buf::Input(k) => input_dtypes[k],
            Buf::Output | Buf::Scratch(_) => Dtype::F32,
        };
        for (li, l) in self.layers.iter().enumerate() {
            let plan = l.plan.as_ref().ok_or_else(|| {
                let rung = l.rung.as_deref().unwrap_or("its kernel");
                Unsupported(format!("{}: {rung} has no CUDA description", l.name))
            })?;
            if plan.pipeline.is_some() {
                return Err(Unsupported(format!(
                    "{}: {} copies its input in from host memory chunk by chunk; inside a \
                     network the input is already on the device",
                    l.name,
                    l.rung.as_deref().unwrap_or("the kernel")
                )));
            }
            if plan.output_fill != Fill::Nan {
                return Err(Unsupported(format!(
                    "{}: reads its output's initial values ({:?}); a network's tensors start \
                     unwritten",
                    l.name, plan.output_fill
                )));
            }
            if plan.output != Dtype::F32 {
                return Err(Unsupported(format!(
                    "{}: writes {:?}; a network's layers hand FP32 to the next",
                    l.name, plan.output
                )));
            }
            let mut bound = Vec::with_capacity(l.inputs.len());
            for (i, (b, &want)) in l.inputs.iter().zip(&plan.inputs).enumerate() {
                let have = dtype_of(b.at);
                if have == want {
                    bound.push(b.at);
                    continue;
                }
                if have != Dtype::F32 {
                    return Err(Unsupported(format!(
                        "{}: input {i} is stored as {have:?} and read as {want:?}",
                        l.name
                    )));
                }
                let at = match converted.get(&(*b, want)) {
                    Some(&at) => at,
                    None => {
                        let name = format!("{} input {i} as {want:?}", l.name);
                        scratch.push(Scratch {
                            fill: Fill::Nan,
                            ..Scratch::new(name, want, b.len)
                        });
                        let at = Buf::Scratch(scratch.len() - 1).at(0);
                        steps.push(Step::Kernel(convert_launch(b.at, at, b.len, want)));
                        tags.push(StepTag {
                            layer: li,
                            category: Category::Copies,
                            label: format!("{}: input {i} to {}", l.name, dtype_name(want)),
                        });
                        converted.insert((*b, want), at);
                        at
                    }
                };
                bound.push(at);
            }
            let base = scratch.len();
            scratch.extend(plan.scratch.iter().cloned());
            let map = |at: At| -> At {
                let to = match at.buf {
                    Buf::Input(i) => bound[i],
                    Buf::Output => l.output.at,
                    Buf::Scratch(j) => Buf::Scratch(base + j).at(0),
                };
                to.buf.at(to.offset + at.offset)
            };
            for s in &plan.steps {
                steps.push(remap_step(s, &map, &l.name)?);
                tags.push(StepTag {
                    layer: li,
                    category: l.category,
                    label: l.name.clone(),
                });
            }
            persistent.extend(plan.persistent.iter().cloned());
            cooperative.extend(plan.cooperative.iter().cloned());
            written.extend(plan.written.iter().cloned());
        }
        Ok(Composed {
            plan: CudaPlan {
                inputs: input_dtypes,
                output: Dtype::F32,
                output_fill: Fill::Nan,
                scratch,
                steps,
                pipeline: None,
                persistent,
                cooperative,
                written,
            },
            steps: tags,
        })
    }

    /// Whether every layer has a CPU port.
    pub fn has_cpu(&self) -> bool {
        self.layers.iter().all(|l| l.cpu.is_some())
    }

    /// The forward pass through the layers' CPU ports; each layer's time, in order.
    pub fn forward_cpu(
        &self,
        inputs: &[&[f32]],
        out: &mut [f32],
    ) -> Result<Vec<Duration>, Unsupported> {
        let mut acts: Vec<Vec<f32>> = self
            .activations
            .iter()
            .map(|(_, len)| vec![f32::NAN; *len])
            .collect();
        let mut times = Vec::with_capacity(self.layers.len());
        for l in &self.layers {
            let port = l.cpu.as_ref().ok_or_else(|| {
                Unsupported(format!(
                    "{}: {} has no CPU port",
                    l.name,
                    l.rung.as_deref().unwrap_or("its kernel")
                ))
            })?;
            // The output leaves its place while the inputs are borrowed (it is never one).
            let mut target = match l.output.at.buf {
                Buf::Scratch(j) => std::mem::take(&mut acts[j]),
                Buf::Output => out.to_vec(),
                Buf::Input(_) => unreachable!("a layer never writes a network input"),
            };
            let ins: Vec<&[f32]> = l
                .inputs
                .iter()
                .map(|b| {
                    let whole: &[f32] = match b.at.buf {
                        Buf::Input(k) => inputs[k],
                        Buf::Scratch(j) => &acts[j],
                        Buf::Output => unreachable!("no layer reads the network's output"),
                    };
                    &whole[b.at.offset..b.at.offset + b.len]
                })
                .collect();
            let range = l.output.at.offset..l.output.at.offset + l.output.len;
            let start = Instant::now();
            port(&ins, &mut target[range]);
            times.push(start.elapsed());
            match l.output.at.buf {
                Buf::Scratch(j) => acts[j] = target,
                _ => out.copy_from_slice(&target),
            }
        }
        Ok(times)
    }
}

fn dtype_name(d: Dtype) -> &'static str {
    match d {
        Dtype::F32 => "fp32",
        Dtype::F16 => "fp16",
        Dtype::Bf16 => "bf16",
        Dtype::E4m3 | Dtype::E5m2 | Dtype::I32 | Dtype::S8 => d.name(),
    }
}

/// The network composition's one kernel of its own: FP32 to FP16 or BF16.
fn convert_launch(from: At, to: At, len: usize, to_type: Dtype) -> crate::plan::Launch {
    let entry = match to_type {
        Dtype::F16 => "convert_f32_to_f16",
        Dtype::Bf16 => "convert_f32_to_bf16",
        Dtype::F32 | Dtype::E4m3 | Dtype::E5m2 | Dtype::I32 | Dtype::S8 => {
            unreachable!("only conversions to FP16 and BF16 are inserted")
        }
    };
    const THREADS: usize = 256;
    crate::plan::Launch {
        source: CudaSource::embedded(
            "kernel/cuda/network/convert.cu",
            include_str!("../../cuda/network/convert.cu"),
        ),
        entry: entry.into(),
        grid: [len.div_ceil(THREADS).clamp(1, 65_535) as u32, 1, 1],
        block: [THREADS as u32, 1, 1],
        dynamic_smem: 0,
        args: vec![Arg::PtrAt(from), Arg::PtrAt(to), Arg::I32(len as i32)],
    }
}

/// `step` with its buffers moved to where the network keeps them.
fn remap_step(step: &Step, map: &dyn Fn(At) -> At, layer: &str) -> Result<Step, Unsupported> {
    Ok(match step {
        Step::Kernel(l) => {
            let mut l = l.clone();
            for a in &mut l.args {
                *a = match *a {
                    Arg::Ptr(b) => Arg::PtrAt(map(b.into())),
                    Arg::PtrAt(at) => Arg::PtrAt(map(at)),
                    Arg::TensorMap(mut m) | Arg::TensorMapAt(mut m) => {
                        let to = map(m.buf.into());
                        if to.offset != 0 {
                            return Err(Unsupported(format!(
                                "{layer}: a TMA tensor map must start at its buffer's start"
                            )));
                        }
                        m.buf = to.buf;
                        match *a {
                            Arg::TensorMapAt(_) => Arg::TensorMapAt(m),
                            _ => Arg::TensorMap(m),
                        }
                    }
                    other => other,
                };
            }
            Step::Kernel(l)
        }
        Step::Library(LibraryCall::Gemm(g)) => {
            let mut g = g.clone();
            (g.a, g.b, g.c) = (map(g.a), map(g.b), map(g.c));
            Step::Library(LibraryCall::Gemm(g))
        }
        Step::Constant(c) => Step::Constant(ConstantCopy {
            from: map(c.from),
            ..c.clone()
        }),
    })
}

/// The inputs of a network shape.
pub fn inputs(shape: &Shape) -> Vec<TensorSpec> {
    match *shape {
        Shape::Cnn { b } => cnn::inputs(b),
        Shape::Encoder { b, s, e, .. } => encoder::inputs(b, s, e),
        other => unreachable!("{other} is not a network"),
    }
}

/// The intermediate tensors of a network shape larger than its input: the kernels that
/// write them index them with 32-bit integers, as they do the inputs.
pub fn inner_tensors(shape: &Shape) -> Vec<TensorSpec> {
    match *shape {
        Shape::Cnn { b } => {
            let out = |s: &Shape| s.output().dims.clone();
            let [c1, c2] = cnn::conv_shapes(b);
            vec![
                TensorSpec::new("conv 1 out", &out(&c1)),
                TensorSpec::new("conv 2 out", &out(&c2)),
            ]
        }
        Shape::Encoder { b, s, e, .. } => vec![
            TensorSpec::new("QKV", &[b * s, 3 * e]),
            TensorSpec::new("FFN 1", &[b * s, encoder::FFN * e]),
        ],
        other => unreachable!("{other} is not a network"),
    }
}

pub fn flops(shape: &Shape) -> f64 {
    match *shape {
        Shape::Cnn { b } => cnn::flops(b),
        Shape::Encoder { b, s, e, .. } => encoder::flops(b, s, e),
        other => unreachable!("{other} is not a network"),
    }
}

/// The network's output in f64, computed from its own definition, not from any kernel.
pub fn reference(shape: &Shape, inputs: &[Vec<f32>]) -> Vec<f64> {
    match *shape {
        Shape::Cnn { b } => cnn::forward_f64(b, inputs),
        Shape::Encoder { b, s, e, h } => encoder::forward_f64(b, s, e, h, inputs),
        other => unreachable!("{other} is not a network"),
    }
}

/// Row-major `A[M,K] B[K,N]` in f64, by the GEMM reference's blocked product: blocks of B stay
/// in cache across rows of A (these products are most of an encoder's reference).
pub(crate) fn matmul_f64(a: &[f64], m: usize, k: usize, b: &[f64], n: usize) -> Vec<f64> {
    crate::reference::gemm_blocked(m, n, k, a, b)
}

/// LayerNorm of each row of `n` features: biased variance, eps 1e-5, then gamma and beta.
pub(crate) fn layernorm_f64(x: &[f64], n: usize, gamma: &[f64], beta: &[f64]) -> Vec<f64> {
    x.par_chunks(n)
        .flat_map_iter(|row| {
            let mean = row.iter().sum::<f64>() / n as f64;
            let var = row.iter().map(|v| (v - mean).powi(2)).sum::<f64>() / n as f64;
            let inv = 1.0 / (var + 1e-5).sqrt();
            row.iter()
                .zip(gamma.iter().zip(beta))
                .map(move |(v, (g, b))| (v - mean) * inv * g + b)
        })
        .collect()
}

/// Softmax of one row, its maximum subtracted.
pub(crate) fn softmax_f64(row: &[f64]) -> Vec<f64> {
    let max = row.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    let e: Vec<f64> = row.iter().map(|v| (v - max).exp()).collect();
    let sum: f64 = e.iter().sum();
    e.iter().map(|v| v / sum).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::contract::{CpuPort, KernelInfo, Precision, Role, Stage};
    use crate::plan::Launch;
    use crate::workload::Workload;

    /// Y = X + bias + R on an element-wise shape, its inputs read as `dtype`.
    struct Add {
        dtype: Dtype,
        pipeline: bool,
    }

    fn add_port(shape: &Shape, ins: &[&[f32]], out: &mut [f32]) {
        let Shape::Eltwise { n, .. } = *shape else {
            unreachable!()
        };
        for (i, y) in out.iter_mut().enumerate() {
            *y = ins[0][i] + ins[1][i % n] + ins[2][i];
        }
    }

    impl Kernel for Add {
        fn info(&self) -> KernelInfo {
            KernelInfo {
                id: "add".into(),
                workload: Workload::Eltwise,
                stage: Stage::Fusion,
                precision: Precision::Fp32,
                role: Role::Rung,
                rung: 1,
                summary: "".into(),
            }
        }

        fn cuda(&self, shape: &Shape) -> Option<CudaPlan> {
            let launch = Launch {
                source: CudaSource::embedded("add.cu", ""),
                entry: "add".into(),
                grid: [1, 1, 1],
                block: [32, 1, 1],
                dynamic_smem: 0,
                args: vec![
                    Arg::Ptr(Buf::Input(0)),
                    Arg::PtrAt(Buf::Input(2).at(3)),
                    Arg::Ptr(Buf::Scratch(0)),
                    Arg::Ptr(Buf::Output),
                ],
            };
            let mut plan = CudaPlan::single(3, launch);
            plan.inputs = vec![self.dtype; 3];
            plan.scratch = vec![Scratch::new("tmp", Dtype::F32, shape.output().len())];
            if self.pipeline {
                plan.pipeline = Some(crate::pipeline::Pipeline::chunked(1, 1, 1, &[], 1, 0, 0));
            }
            Some(plan)
        }

        fn cpu(&self) -> Option<CpuPort> {
            Some(add_port)
        }
    }

    const SHAPE: Shape = Shape::Eltwise { m: 2, n: 3 };

    /// x -> add(x, w, x) -> a -> add(a, w, a) -> out, over a network with inputs x and w.
    fn chain(k: &dyn Kernel) -> Graph {
        let mut g = Graph::new(&Shape::Eltwise { m: 2, n: 3 });
        g.inputs.truncate(2);
        let a = g.activation("a", 6);
        let (x, w) = (Buf::Input(0).at(0), Buf::Input(1).at(0));
        g.push(
            Layer::rung(
                "first",
                Category::Elementwise,
                k,
                SHAPE,
                &[x, w, x],
                a.at(0),
            )
            .unwrap(),
        );
        let last = Layer::rung(
            "second",
            Category::Gemm,
            k,
            SHAPE,
            &[a.at(0), w, a.at(0)],
            Buf::Output.at(0),
        );
        g.push(last.unwrap());
        g
    }

    #[test]
    fn layers_run_in_order_on_the_cpu() {
        let k = Add {
            dtype: Dtype::F32,
            pipeline: false,
        };
        let g = chain(&k);
        let x = [1.0, 2.0, 3.0, 4.0, 5.0, 6.0];
        let w = [10.0, 20.0, 30.0];
        let mut out = [f32::NAN; 6];
        let times = g.forward_cpu(&[&x, &w], &mut out).unwrap();
        assert_eq!(times.len(), 2);
        // a = 2x + w; out = 2a + w = 4x + 3w.
        let want: Vec<f32> = (0..6).map(|i| 4.0 * x[i] + 3.0 * w[i % 3]).collect();
        assert_eq!(out.to_vec(), want);
    }

    #[test]
    fn composition_renumbers_buffers_and_converts_each_activation_once() {
        let k = Add {
            dtype: Dtype::F16,
            pipeline: false,
        };
        let c = chain(&k).compose().unwrap();
        let plan = &c.plan;
        // The data stays FP32 (converted inside the pass); the weight is stored as FP16.
        assert_eq!(plan.inputs, vec![Dtype::F32, Dtype::F16]);
        // Scratch: the activation, x as FP16, layer 1's tmp, a as FP16, layer 2's tmp.
        let names: Vec<&str> = plan.scratch.iter().map(|s| s.name.as_ref()).collect();
        assert_eq!(
            names,
            [
                "a",
                "first input 0 as F16",
                "tmp",
                "second input 0 as F16",
                "tmp"
            ]
        );
        let cats: Vec<Category> = c.steps.iter().map(|s| s.category).collect();
        // x is read twice by the first layer and a twice by the second: one conversion each.
        assert_eq!(
            cats,
            [
                Category::Copies,
                Category::Elementwise,
                Category::Copies,
                Category::Gemm
            ]
        );
        let Step::Kernel(first) = &plan.steps[1] else {
            panic!()
        };
        assert_eq!(
            first.args,
            vec![
                Arg::PtrAt(Buf::Scratch(1).at(0)),
                Arg::PtrAt(Buf::Scratch(1).at(3)),
                Arg::PtrAt(Buf::Scratch(2).at(0)),
                Arg::PtrAt(Buf::Scratch(0).at(0)),
            ]
        );
        let Step::Kernel(second) = &plan.steps[3] else {
            panic!()
        };
        assert_eq!(second.args[2], Arg::PtrAt(Buf::Scratch(4).at(0)));
        assert_eq!(second.args[3], Arg::PtrAt(Buf::Output.at(0)));
    }

    #[test]
    fn a_host_pipeline_cannot_sit_inside_a_network() {
        let k = Add {
            dtype: Dtype::F32,
            pipeline: true,
        };
        let e = chain(&k).compose().unwrap_err();
        assert!(e.0.contains("already on the device"), "{e}");
    }

    #[test]
    fn f64_helpers_normalize() {
        let y = layernorm_f64(&[1.0, 2.0, 3.0, 4.0], 4, &[1.0; 4], &[0.0; 4]);
        let mean: f64 = y.iter().sum::<f64>() / 4.0;
        let var: f64 = y.iter().map(|v| v * v).sum::<f64>() / 4.0;
        assert!(mean.abs() < 1e-12 && (var - 1.0).abs() < 1e-4, "{var}");
        let p = softmax_f64(&[1000.0, 1000.0]);
        assert_eq!(p, vec![0.5, 0.5]);
        assert_eq!(matmul_f64(&[1.0, 2.0], 1, 2, &[3.0, 4.0], 1), vec![11.0]);
    }
}
