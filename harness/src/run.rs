//! Running an ablation: for each shape, random inputs and a reference once, then every kernel
//! of the workload: prepare, run on NaN-poisoned output, validate, time. Used by `harness run`,
//! `harness check` and the criterion bench alike.

use crate::config::Config;
use crate::reference;
use crate::resources::{self, LaunchResources};
use crate::results::{
    ReferenceBefore, Row, RunResults, ShapeResults, Status, Traffic, TrafficSource, WorkloadResults,
};
use crate::timing::{self, Timing, TimingConfig};
use crate::validate;
use anyhow::Result;
use kernel::{
    Activation, CudaPlan, DeviceError, DeviceKind, Executor, Kernel, Precision, Prepared, Role,
    Shape, Workload,
};

/// What the kernels of one shape are checked against.
pub struct Reference {
    pub values: Vec<f64>,
    /// Output indices of `values` when the reference is a sample.
    pub indices: Option<Vec<usize>>,
    pub label: String,
    /// Where `values` is whole but came from a library, too large to compute again: the
    /// elements a kernel with a reference of its own ([`Kernel::reference_of_its_own`]) is
    /// checked at, its reference worked out there alone.
    pub own_picks: Option<Vec<usize>>,
}

impl Reference {
    pub fn expected(&self) -> validate::Expected<'_> {
        validate::Expected {
            values: &self.values,
            indices: self.indices.as_deref(),
        }
    }

    /// What `kernel` is checked against: this reference, or for a kernel with a reference of
    /// its own, this one's values at [`Reference::own_picks`] where it has them.
    pub fn for_kernel(
        &self,
        kernel: &dyn Kernel,
    ) -> (std::borrow::Cow<'_, [f64]>, Option<&[usize]>) {
        match &self.own_picks {
            Some(picks) if kernel.reference_of_its_own() => {
                (picks.iter().map(|&i| self.values[i]).collect(), Some(picks))
            }
            _ => (self.values.as_slice().into(), self.indices.as_deref()),
        }
    }
}

/// The reference for `shape`: f64 on the CPU; above the configured size, cuBLAS FP32 for a
/// GEMM on the GPU (itself checked against f64 by `harness check`), else an f64 sample.
pub fn reference_for(
    dev: &dyn Executor,
    all: &[&dyn Kernel],
    shape: &Shape,
    inputs: &[Vec<f32>],
    config: &Config,
) -> Reference {
    let big = shape.flops() / 1e9 > config.cpu_reference_max_gflop;
    if big && dev.kind() == DeviceKind::Cuda && shape.workload() == Workload::Gemm {
        let cublas = all.iter().find(|k| k.info().id == "cublas-sgemm");
        if let Some(out) = cublas.and_then(|k| {
            let mut p = dev.prepare(*k, shape, inputs).ok()?;
            p.run().ok()?;
            p.output().ok()
        }) {
            return Reference {
                values: out.into_iter().map(f64::from).collect(),
                indices: None,
                label: format!(
                    "cuBLAS SGEMM on the GPU (above {} GFLOP the f64 CPU reference is skipped)",
                    config.cpu_reference_max_gflop
                ),
                own_picks: Some(reference::pick(
                    shape,
                    config.reference_samples,
                    config.seed,
                )),
            };
        }
    }
    if big {
        let (indices, values) =
            reference::sampled(shape, inputs, config.reference_samples, config.seed);
        return Reference {
            label: format!(
                "{} on {} sampled outputs (above {} GFLOP a full reference is skipped)",
                reference::describe(shape.workload()),
                indices.len(),
                config.cpu_reference_max_gflop
            ),
            values,
            indices: Some(indices),
            own_picks: None,
        };
    }
    Reference {
        values: reference::reference(shape, inputs),
        indices: None,
        label: reference::describe(shape.workload()).to_string(),
        own_picks: None,
    }
}

/// The fewest bytes a row moves: from its plan's element types, else its precision. A
/// network's input and output stay FP32 whatever precision its one swapped operator computes
/// in (the row's precision is that operator's).
pub(crate) fn min_bytes(shape: &Shape, plan: Option<&CudaPlan>, precision: Precision) -> f64 {
    match plan {
        Some(p) => {
            let inputs: usize = shape
                .inputs()
                .iter()
                .zip(&p.inputs)
                .map(|(t, d)| t.len() * d.bytes())
                .sum();
            (inputs + shape.output().len() * p.output.bytes()) as f64
        }
        None => shape.min_bytes(match precision {
            _ if shape.workload().is_network() => 4,
            Precision::Fp8 => 1,
            Precision::Fp16 | Precision::Bf16 => 2,
            Precision::Fp32 | Precision::Tf32 => 4,
        }),
    }
}

pub(crate) fn empty_row(kernel: &dyn Kernel, shape: &Shape, plan: Option<&CudaPlan>) -> Row {
    let i = kernel.info();
    Row {
        id: i.id.to_string(),
        stage: i.stage,
        precision: i.precision,
        role: i.role,
        rung: i.rung,
        summary: kernel
            .summary_at(shape)
            .unwrap_or_else(|| i.summary.to_string()),
        parent: kernel.lineage().and_then(|l| l.parent).map(str::to_string),
        status: Status::Unsupported,
        reason: None,
        min_bytes: min_bytes(shape, plan, i.precision),
        scratch_bytes: plan.map_or(0, |p| p.scratch_bytes() as u64),
        timing: None,
        check: None,
        resources: Vec::new(),
        traffic: None,
        banks: None,
        coalescing: None,
        kernel_accesses: Vec::new(),
        same_cpu_port_as: None,
        paired: None,
    }
}

/// The names of the inputs the last run of `prepared` wrote into; none where the device
/// cannot tell or failed to read them back (the check's own failure says more).
fn written_inputs(prepared: &mut dyn Prepared, shape: &Shape) -> Vec<&'static str> {
    let names = shape.inputs();
    prepared
        .inputs_written()
        .unwrap_or_default()
        .into_iter()
        .filter_map(|i| names.get(i).map(|t| t.name))
        .collect()
}

/// What a failed row says of an input its kernel wrote into: for a user's kernel, that one
/// working in place is given its output as a copy of the input (`output=NAME`).
fn input_written(name: &str, user: bool, shape: &Shape) -> String {
    let out = shape.output().name;
    let said = format!("the kernel wrote into its input {name}, which the reference is of");
    match user {
        true => format!(
            "{said}: a kernel that works in place takes output={name}, {out} starting each run \
             as a copy of {name}, and {out} in {name}'s place among its arguments"
        ),
        false => said,
    }
}

/// `sm_90` from a device's compute capability `9.0`.
pub fn device_arch(dev: &dyn Executor) -> Option<String> {
    dev.info()
        .compute_capability
        .as_ref()
        .map(|cc| format!("sm_{}", cc.replace('.', "")))
}

/// One kernel's row at `shape`: the config's random inputs, checked against the shape's
/// reference as a run checks it (`harness explain` and tests of a single row).
pub fn evaluate_alone(
    dev: &dyn Executor,
    all: &[Box<dyn Kernel>],
    k: &dyn Kernel,
    shape: &Shape,
    config: &Config,
) -> Row {
    let refs: Vec<&dyn Kernel> = all.iter().map(|k| k.as_ref()).collect();
    let x = crate::inputs::random_inputs(shape, config.seed);
    let reference = reference_for(dev, &refs, shape, &x, config);
    // The inputs as this kernel reads them (B column-major, say), as a run gives them.
    let own = k.device_inputs(shape, &x);
    evaluate(dev, k, shape, own.as_deref().unwrap_or(&x), &x, &reference).0
}

/// Prepares, runs and validates one kernel on one shape. The prepared run comes back with
/// the row when it ran, so the caller can time it. `inputs` are the kernel's own
/// ([`Kernel::device_inputs`]), `canonical` the workload's, which the reference is of.
pub fn evaluate<'a>(
    dev: &'a dyn Executor,
    kernel: &'a dyn Kernel,
    shape: &Shape,
    inputs: &'a [Vec<f32>],
    canonical: &[Vec<f32>],
    reference: &Reference,
) -> (Row, Option<Box<dyn Prepared + 'a>>) {
    let plan = if dev.kind() == DeviceKind::Cpu {
        None
    } else {
        kernel.cuda(shape)
    };
    let mut row = empty_row(kernel, shape, plan.as_ref());
    let declined = dev.can_run(kernel).and_then(|()| kernel.supports(shape));
    if let Err(why) = declined {
        row.reason = Some(why.0);
        return (row, None);
    }
    if let (Some(plan), Some(arch)) = (&plan, device_arch(dev)) {
        let sms = (dev.kind() == DeviceKind::Cuda).then_some(dev.info().units);
        row.resources = resources::of_plan(plan, &arch, sms).unwrap_or_else(|e| {
            note_missing_resources(kernel, &e);
            Vec::new()
        });
    }
    let mut prepared = match dev.prepare(kernel, shape, inputs) {
        Ok(p) => p,
        Err(e) => {
            fail_row(dev, &mut row, e);
            return (row, None);
        }
    };
    match prepared.run().and_then(|()| prepared.output()) {
        Ok(out) => {
            let sentinel = match plan.as_ref().map(|p| p.output_fill) {
                Some(kernel::Fill::Value(v)) => Some(v),
                _ => None,
            };
            let sample = prepared.sample();
            // Some of the blocks run, against a reference sampled at random: its picks seldom
            // fall where those blocks wrote, so it is worked out there instead, as many
            // elements as it has.
            let (whole, picks) = reference.for_kernel(kernel);
            let at_written = match (&sample, picks) {
                (Some(s), Some(picks)) => Some(kernel::reference::spread(
                    shape,
                    canonical,
                    &s.written,
                    picks.len(),
                )),
                _ => None,
            };
            let (values, indices) = match &at_written {
                Some((i, v)) => (v.as_slice(), Some(i.as_slice())),
                None => (whole.as_ref(), picks),
            };
            // A kernel whose output is not the workload's result itself (alpha, beta) says
            // what it must be.
            let own = kernel.expected(shape, canonical, values, indices);
            // An integer output is exact: each element must be the reference's, rounded as
            // its read-back into f32 rounds it (past 2^24).
            let integer = plan
                .as_ref()
                .is_some_and(|p| matches!(p.output, kernel::Dtype::I32 | kernel::Dtype::S8));
            let rounded: Option<Vec<f64>> = integer.then(|| {
                own.as_deref()
                    .unwrap_or(values)
                    .iter()
                    .map(|&v| f64::from(v as f32))
                    .collect()
            });
            let expected = validate::Expected {
                values: rounded.as_deref().or(own.as_deref()).unwrap_or(values),
                indices,
            };
            let tolerance = match integer {
                true => 0.0,
                false => row.precision.tolerance(),
            };
            let c = match &sample {
                Some(s) => validate::check_sample(&out, expected, s, sentinel, tolerance),
                None => validate::check_against(&out, expected, sentinel, tolerance),
            };
            row.status = if c.passed {
                Status::Passed
            } else {
                Status::Failed
            };
            if !c.passed {
                let layout = kernel.output_layout(shape);
                let mut reason = c.failure(row.precision, &shape.output(), layout.as_ref());
                for note in prepared.notes() {
                    let lead = match c.poisoned {
                        0 => "",
                        _ => "the NaN may be the fill of shared memory read before any write: ",
                    };
                    reason.push_str(&format!("\n  {lead}{note}"));
                }
                let user = kernel.info().role == Role::User;
                for name in written_inputs(prepared.as_mut(), shape) {
                    reason.push_str(&format!("\n  {}", input_written(name, user, shape)));
                }
                if kernel.info().role == Role::User && indices.is_none() {
                    let check = |other: &Shape| {
                        let values = kernel::reference::reference(other, canonical);
                        let own = kernel.expected(other, canonical, &values, None);
                        let expected = validate::Expected {
                            values: own.as_deref().unwrap_or(&values),
                            indices: None,
                        };
                        validate::check_against(&out, expected, sentinel, tolerance).passed
                    };
                    let other = other_activation(shape, check)
                        .or_else(|| other_masking(shape, check))
                        .or_else(|| {
                            pool_without_relu(shape, canonical, |values| {
                                let expected = validate::Expected {
                                    values,
                                    indices: None,
                                };
                                validate::check_against(&out, expected, sentinel, tolerance).passed
                            })
                        });
                    reason.push_str(&other.unwrap_or_default());
                }
                row.reason = Some(reason);
            }
            row.check = Some(c);
            // A sample's traffic is some blocks' against the whole shape's FLOP: no intensity.
            // Bank conflicts are a ratio: a sample of the blocks shows them as well.
            let traffic = prepared.traffic();
            row.banks = traffic.as_ref().map(|t| t.shared);
            row.coalescing = traffic.as_ref().map(|t| t.global);
            row.kernel_accesses = traffic
                .as_ref()
                .map(|t| t.kernels.clone())
                .filter(|k| k.len() > 1)
                .unwrap_or_default();
            row.traffic = traffic.filter(|_| sample.is_none()).map(|t| Traffic {
                load_bytes: t.load_bytes as f64,
                store_bytes: t.store_bytes as f64,
                source: TrafficSource::Simulator,
            });
            (row, Some(prepared))
        }
        Err(e) => {
            drop(prepared);
            let hint = plan.as_ref().filter(|_| e.is_lost()).and_then(trap_hint);
            fail_row(dev, &mut row, e);
            if let (Some(hint), Some(reason)) = (hint, row.reason.as_mut()) {
                reason.push_str(hint);
            }
            (row, None)
        }
    }
}

/// How the words of [`other_activation`] and [`other_masking`] begin: a failure they explain
/// is no tail's or grid's.
pub(crate) const OTHER_RESULT: &str = "the output is that of ";

/// Where a linear layer's output fails its check but passes that of the same layer with
/// another activation (`check`), as a kernel with another epilogue than the shape's gives:
/// the words that say so.
pub(crate) fn other_activation(shape: &Shape, check: impl Fn(&Shape) -> bool) -> Option<String> {
    let &Shape::Linear { m, n, k, act } = shape else {
        return None;
    };
    let other = [Activation::None, Activation::Relu, Activation::Gelu]
        .into_iter()
        .filter(|&a| a != act)
        .find(|&a| check(&Shape::Linear { m, n, k, act: a }))?;
    let applied = match other {
        Activation::None => "no activation".to_string(),
        a => format!("{} instead", a.name()),
    };
    Some(format!(
        "\n  {OTHER_RESULT}the layer with {} instead of {}: the kernel applies {applied} (a \
         shape's last word, -{}, picks the activation the reference applies)",
        other.name(),
        act.name(),
        other.name()
    ))
}

/// Where an attention output fails its check but passes that of the same shape with the
/// other masking (`check`), as a kernel whose causal mask is fixed at compile time gives on a
/// shape of the other kind: the words that say so.
pub(crate) fn other_masking(shape: &Shape, check: impl Fn(&Shape) -> bool) -> Option<String> {
    let &Shape::Attention { b, h, s, d, causal } = shape else {
        return None;
    };
    if !check(&Shape::Attention {
        b,
        h,
        s,
        d,
        causal: !causal,
    }) {
        return None;
    }
    let (output, does, wanted) = match causal {
        true => ("attention without a mask", "attends to every key", "causal"),
        false => (
            "causal attention",
            "masks the keys past each query's position",
            "unmasked",
        ),
    };
    Some(format!(
        "\n  {OTHER_RESULT}{output}: the kernel {does}, where this shape asks for {wanted} \
         attention (a shape's -causal suffix picks causal attention for the reference)"
    ))
}

/// Where a max pool's output fails its check but passes against the maximum of each window
/// of x itself (`check`), as a pooling kernel without the workload's ReLU gives: the words
/// that say so.
pub(crate) fn pool_without_relu(
    shape: &Shape,
    inputs: &[Vec<f32>],
    check: impl Fn(&[f64]) -> bool,
) -> Option<String> {
    if !matches!(shape, Shape::Pool { .. }) {
        return None;
    }
    let plain: Vec<f64> = (0..shape.output().len())
        .map(|i| kernel::reference::window_max(shape, inputs, i, f64::NEG_INFINITY))
        .collect();
    check(&plain).then(|| {
        format!(
            "\n  {OTHER_RESULT}a max pool of x itself: the kernel leaves out the workload's ReLU \
             (the pool workload takes the maximum of each window of max(x, 0)), so a window \
             whose values are all negative gives its largest where the reference has 0"
        )
    })
}

/// What a failed launch of a kernel on `lab/hopper.h` most likely was: its mbarrier waits
/// trap instead of hanging, with no message on the GPU (a printf would serialize its wgmma).
fn trap_hint(plan: &kernel::CudaPlan) -> Option<&'static str> {
    plan.sources()
        .iter()
        .any(|s| s.code.contains("lab/hopper.h"))
        .then_some(
            ". The kernel uses lab/hopper.h, whose mbarrier waits trap after LAB_MBAR_TIMEOUT_NS \
             (4 s): a transaction count, descriptor or arrival that never completes. The \
             simulator (`--device sim`) names the barrier, its phase and its pending arrivals; a \
             kernel of your own can print them on the GPU with define=LAB_MBAR_REPORT=1",
        )
}

/// Records why a row could not run. A lost device (a kernel faulted and took its CUDA
/// context with it) is recovered here, so the next row runs on a fresh one.
pub fn fail_row(dev: &dyn Executor, row: &mut Row, e: DeviceError) {
    row.status = match e {
        DeviceError::Unsupported(_) => Status::Unsupported,
        _ => Status::Error,
    };
    let lost = e.is_lost();
    let mut reason = match e {
        DeviceError::Unsupported(u) => u.0,
        other => other.to_string(),
    };
    if lost && let Err(again) = dev.recover() {
        reason.push_str(&format!("; recovering the device failed too: {again}"));
    }
    row.reason = Some(reason);
}

/// How a row gets timed: by [`timing::measure`], or by the criterion bench.
pub type TimeRow<'t> =
    dyn FnMut(&Shape, &Row, &mut dyn Prepared, &TimingConfig) -> Result<Timing, DeviceError> + 't;

/// Progress of a run, for whoever prints it.
pub enum Event<'a> {
    Shape {
        workload: Workload,
        shape: &'a Shape,
        kernels: usize,
    },
    /// The shape's inputs and reference are ready (the rows come next).
    Reference {
        label: &'a str,
    },
    Row {
        shape: &'a Shape,
        row: &'a Row,
    },
    /// A shape's rows are all in: the results so far, for a run that must keep what it
    /// finished if it is stopped before the end.
    ShapeDone {
        so_far: &'a RunResults,
    },
}

/// One ablation: which kernels on which shapes, timed or only checked.
pub struct Ablation<'a> {
    pub dev: &'a dyn Executor,
    pub config: &'a Config,
    pub kernels: Vec<&'a dyn Kernel>,
    pub shapes: Vec<(Workload, Vec<Shape>)>,
    /// `None`: validate only.
    pub timing: Option<TimingConfig>,
    /// Keep rows for kernels the device cannot run at all (GPU-only rows on the CPU), marked
    /// unsupported; `check` lists them, ablation tables leave them out.
    pub keep_unrunnable: bool,
}

impl Ablation<'_> {
    /// Runs everything; a row's failure is recorded in its row, never aborts the run.
    pub fn run(&self, mut progress: impl FnMut(Event<'_>)) -> Result<RunResults> {
        self.run_with(&mut progress, &mut |_, _, p, cfg| timing::measure(p, cfg))
    }

    /// Builds every source the rows of this process will load, on all cores (NVRTC on a GPU,
    /// the host compiler in the simulator): [`Ablation::run`] does it first. In the simulator
    /// the rows run in child processes (`--isolate`) are built too: the modules are kept on
    /// disk, where a child finds its own, and its time limit is left to the run. NVRTC's
    /// output here stays in this process (a concurrent compile, kept apart on disk), so on a
    /// GPU an isolated row compiles in its child.
    pub fn precompile(&self) {
        let kind = self.dev.kind();
        if kind == DeviceKind::Cpu {
            return;
        }
        let mut plans = Vec::new();
        for (workload, shapes) in &self.shapes {
            for shape in shapes {
                for &k in &self.kernels {
                    let runs_here = k.info().workload == *workload
                        && self.dev.can_run(k).is_ok()
                        && k.supports(shape).is_ok()
                        && (kind == DeviceKind::Sim
                            || crate::isolate::policy_for(self.dev, k, shape).is_none());
                    plans.extend(runs_here.then(|| k.cuda(shape)).flatten());
                }
            }
        }
        let mut sources: Vec<&kernel::CudaSource> = Vec::new();
        for s in plans.iter().flat_map(CudaPlan::sources) {
            if !sources.contains(&s) {
                sources.push(s);
            }
        }
        self.dev.precompile(&sources);
    }

    /// As [`Ablation::run`], with the timing method supplied (the criterion bench's).
    pub fn run_with(
        &self,
        progress: &mut dyn FnMut(Event<'_>),
        time: &mut TimeRow<'_>,
    ) -> Result<RunResults> {
        self.precompile();
        let mut run = RunResults {
            schema_version: crate::results::SCHEMA_VERSION,
            tool: crate::results::tool_name(),
            device: self.dev.info().clone(),
            commit: crate::results::current_commit(),
            date: crate::results::utc_now(),
            config: serde_json::to_value(self.config)?,
            workloads: Vec::new(),
            calibration: None,
            networks: Vec::new(),
            unfinished: None,
            user_kernels: Vec::new(),
        };
        for (workload, shapes) in &self.shapes {
            let kernels: Vec<&dyn Kernel> = self
                .kernels
                .iter()
                .copied()
                .filter(|k| k.info().workload == *workload)
                .filter(|k| self.keep_unrunnable || self.dev.can_run(*k).is_ok())
                .collect();
            run.workloads.push(WorkloadResults {
                workload: *workload,
                shapes: Vec::new(),
            });
            for shape in shapes {
                progress(Event::Shape {
                    workload: *workload,
                    shape,
                    kernels: kernels.len(),
                });
                let inputs = crate::inputs::random_inputs(shape, self.config.seed);
                let reference = reference_for(self.dev, &kernels, shape, &inputs, self.config);
                let reference_before = self.timing.and_then(|cfg| {
                    self.time_reference_before(&kernels, shape, &inputs, &reference, &cfg, time)
                });
                progress(Event::Reference {
                    label: &reference.label,
                });
                let mut rows = Vec::new();
                // Written for the first isolated row, read by every child of the shape.
                let shared = std::cell::OnceCell::new();
                for (i, &k) in kernels.iter().enumerate() {
                    // Rows that may hang or fault the process run in a child process.
                    let mut row = match crate::isolate::policy_for(self.dev, k, shape) {
                        Some(policy) => {
                            let plan = (self.dev.kind() != DeviceKind::Cpu)
                                .then(|| k.cuda(shape))
                                .flatten();
                            let row = empty_row(k, shape, plan.as_ref());
                            // A file that cannot be written leaves the child to compute it.
                            let file = shared
                                .get_or_init(|| {
                                    crate::isolate::ReferenceFile::write(&reference).ok()
                                })
                                .as_ref()
                                .map(crate::isolate::ReferenceFile::path);
                            crate::isolate::run_row(
                                &policy,
                                self.dev,
                                row,
                                shape,
                                self.timing,
                                file,
                            )
                        }
                        None => row_for(self.dev, k, shape, &inputs, &reference, self.timing, time),
                    };
                    if self.dev.kind() == DeviceKind::Cpu {
                        row.same_cpu_port_as = same_cpu_port(&kernels, i);
                    }
                    rows.push(row);
                    if let Some(cfg) = self.timing.filter(|c| c.pair_rounds > 0) {
                        self.pair_steps(&kernels, shape, &inputs, &mut rows, &cfg);
                    }
                    if let Some(row) = rows.last() {
                        progress(Event::Row { shape, row });
                    }
                }
                let done = ShapeResults {
                    shape: *shape,
                    label: shape.label(),
                    flops: shape.flops(),
                    reference: reference.label,
                    rows,
                    reference_before,
                };
                if let Some(w) = run.workloads.last_mut() {
                    w.shapes.push(done);
                }
                progress(Event::ShapeDone { so_far: &run });
            }
        }
        Ok(run)
    }

    /// The shape's first reference row (one that runs in this process), timed before any
    /// rung, when it passes its check: [`ShapeResults::reference_before`]. Its row, timed
    /// after the rungs, is the other end of the bracket.
    fn time_reference_before(
        &self,
        kernels: &[&dyn Kernel],
        shape: &Shape,
        inputs: &[Vec<f32>],
        reference: &Reference,
        cfg: &TimingConfig,
        time: &mut TimeRow<'_>,
    ) -> Option<ReferenceBefore> {
        let at = kernels.iter().position(|k| {
            k.info().role == Role::Reference
                && crate::isolate::policy_for(self.dev, *k, shape).is_none()
        })?;
        // Its own row must come after every rung for the two timings to bracket them.
        if kernels[at..].iter().any(|k| k.info().role == Role::Rung) {
            return None;
        }
        let k = kernels[at];
        let own = k.device_inputs(shape, inputs);
        let (mut row, prepared) = evaluate(
            self.dev,
            k,
            shape,
            own.as_deref().unwrap_or(inputs),
            inputs,
            reference,
        );
        let mut p = prepared.filter(|_| row.passed())?;
        let id = std::mem::replace(&mut row.id, format!("{} (before the rungs)", k.info().id));
        let timing = time(shape, &row, p.as_mut(), cfg).ok()?;
        Some(ReferenceBefore { id, timing })
    }

    /// Times the row just added against its parent, and any row before it whose parent it
    /// is, in alternating rounds ([`timing::measure_pair`]): whichever of a rung and its
    /// parent comes second in the run pairs them. `rows[i]` is `kernels[i]`'s row.
    fn pair_steps(
        &self,
        kernels: &[&dyn Kernel],
        shape: &Shape,
        inputs: &[Vec<f32>],
        rows: &mut [Row],
        cfg: &TimingConfig,
    ) {
        let last = rows.len() - 1;
        let find = |id: &str| rows.iter().position(|r| r.id == id);
        let mut pairs: Vec<(usize, usize)> = Vec::new();
        if let Some(j) = rows[last].parent.as_deref().and_then(find) {
            pairs.push((last, j));
        }
        let id = &rows[last].id;
        pairs.extend(
            (0..last)
                .filter(|&c| rows[c].parent.as_ref() == Some(id))
                .map(|c| (c, last)),
        );
        for (c, p) in pairs {
            if !self.pairable(rows, c, p) {
                continue;
            }
            let timed = |r: &Row| r.timing.clone();
            let (Some(row_t), Some(parent_t)) = (timed(&rows[c]), timed(&rows[p])) else {
                continue;
            };
            // A pair with a row that ran in a child process runs in one too: either kernel
            // could hang or fault this one.
            let policy = crate::isolate::policy_for(self.dev, kernels[c], shape)
                .or_else(|| crate::isolate::policy_for(self.dev, kernels[p], shape));
            let measured = match policy {
                Some(policy) => crate::isolate::run_pair(
                    &policy,
                    self.dev,
                    shape,
                    (&rows[c].id, &row_t),
                    (&rows[p].id, &parent_t),
                    *cfg,
                ),
                None => time_pair(
                    self.dev,
                    (kernels[p], &parent_t),
                    (kernels[c], &row_t),
                    shape,
                    inputs,
                    cfg,
                )
                .map_err(|e| {
                    if e.is_lost() {
                        let _ = self.dev.recover();
                    }
                    e.into()
                }),
            };
            match measured {
                Ok(pair) => rows[c].paired = Some(pair),
                Err(e) => eprintln!(
                    "note: timing {} against {} in alternation failed ({e:#}); its vs parent \
                     compares the two rows' medians",
                    rows[c].id, rows[p].id
                ),
            }
        }
    }

    /// Whether rung `c` (or a user's kernel set beside a rung) and its parent `p` can be
    /// timed side by side: both passed and were timed, and they run different code.
    fn pairable(&self, rows: &[Row], c: usize, p: usize) -> bool {
        let ready = |i: usize| rows[i].passed() && rows[i].timing.is_some();
        matches!(rows[c].role, kernel::Role::Rung | kernel::Role::User)
            && ready(c)
            && ready(p)
            && rows[c].port_id() != rows[p].port_id()
    }
}

/// A rung and its parent, each prepared on `shape` afresh, timed in alternating rounds
/// ([`timing::measure_pair`]), given the timings of their own rows.
pub fn time_pair(
    dev: &dyn Executor,
    parent: (&dyn Kernel, &Timing),
    row: (&dyn Kernel, &Timing),
    shape: &Shape,
    inputs: &[Vec<f32>],
    cfg: &TimingConfig,
) -> Result<timing::PairedTiming, DeviceError> {
    let ((pk, parent_t), (rk, row_t)) = (parent, row);
    let own_p = pk.device_inputs(shape, inputs);
    let own_r = rk.device_inputs(shape, inputs);
    let mut parent = dev.prepare(pk, shape, own_p.as_deref().unwrap_or(inputs))?;
    let mut row = dev.prepare(rk, shape, own_r.as_deref().unwrap_or(inputs))?;
    timing::measure_pair(
        (&pk.info().id, parent.as_mut(), parent_t),
        row.as_mut(),
        row_t,
        cfg,
    )
}

/// The id of the first of `kernels` whose CPU port is the same function as that of
/// `kernels[i]`, when that is another kernel: two rows that time the same code.
fn same_cpu_port(kernels: &[&dyn Kernel], i: usize) -> Option<String> {
    let port = kernels[i].cpu()?;
    let first = kernels
        .iter()
        .position(|k| k.cpu().is_some_and(|p| std::ptr::fn_addr_eq(p, port)))?;
    (first != i).then(|| kernels[first].info().id.to_string())
}

/// One kernel on one shape: validated, then timed when `timing` says so.
pub fn row_for(
    dev: &dyn Executor,
    k: &dyn Kernel,
    shape: &Shape,
    inputs: &[Vec<f32>],
    reference: &Reference,
    timing: Option<TimingConfig>,
    time: &mut TimeRow<'_>,
) -> Row {
    // The inputs as this kernel reads them (B column-major, say).
    let own = k.device_inputs(shape, inputs);
    let kernel_inputs = own.as_deref().unwrap_or(inputs);
    let (mut row, prepared) = evaluate(dev, k, shape, kernel_inputs, inputs, reference);
    if let (Some(mut p), Some(cfg)) = (prepared, &timing) {
        let timed = time(shape, &row, p.as_mut(), cfg);
        drop(p);
        match timed {
            Ok(t) => row.timing = Some(t),
            Err(e) => {
                fail_row(dev, &mut row, e);
                if let Some(why) = &mut row.reason {
                    why.insert_str(0, "timing failed: ");
                }
            }
        }
    }
    row
}

/// Says once per process why a row's launch resources (registers, shared memory, occupancy,
/// waves) are missing: an unread ptxas report would otherwise leave those columns silently
/// empty, as it did for some rows of the first GPU run.
fn note_missing_resources(kernel: &dyn Kernel, e: &DeviceError) {
    static SAID: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);
    if !SAID.swap(true, std::sync::atomic::Ordering::Relaxed) {
        // The whole reason, up to a screenful: its first line alone once hid an empty log.
        let why = e.to_string();
        let why: Vec<&str> = why
            .lines()
            .filter(|l| !l.trim().is_empty())
            .take(12)
            .collect();
        eprintln!(
            "note: no launch resources for {}; rows like it have empty registers, shared memory, \
             occupancy and waves columns (`harness doctor` checks the ptxas report):\n  {}",
            kernel.info().id,
            why.join("\n  ")
        );
    }
}

/// The launch whose resources stand for `row` in a table's columns: the one with the most
/// registers, then the most shared memory, then the most blocks (the most work, where the
/// kernels are alike), then the first (the launch the row is named after: a split-K GEMM
/// rather than the reduction after it).
pub fn primary_resources(row: &Row) -> Option<&LaunchResources> {
    primary(&row.resources)
}

fn primary(launches: &[LaunchResources]) -> Option<&LaunchResources> {
    // `max_by_key` keeps the last of equals: over the launches reversed, the first.
    launches
        .iter()
        .rev()
        .max_by_key(|r| (r.registers, r.smem_bytes, r.blocks))
}

#[cfg(test)]
mod tests {
    use super::*;
    use kernel::device::cpu::CpuDevice;
    use kernel::{DeviceInfo, KernelInfo, Role, Stage, Unsupported};
    use std::cell::Cell;
    use std::time::Duration;

    /// A kernel whose run faults the way an illegal address does on a GPU.
    struct Faulty;

    impl Kernel for Faulty {
        fn info(&self) -> KernelInfo {
            KernelInfo {
                id: "gemm-faulty".into(),
                workload: Workload::Gemm,
                stage: Stage::Baseline,
                precision: kernel::Precision::Fp32,
                role: Role::Rung,
                rung: 1,
                summary: "writes through a wild pointer".into(),
            }
        }

        fn cpu(&self) -> Option<kernel::CpuPort> {
            Some(|_, _, _| {})
        }
    }

    #[test]
    fn a_rows_columns_come_from_its_heaviest_launch_then_its_largest_then_its_first() {
        let launch = |entry: &str, registers, smem_bytes, blocks| LaunchResources {
            entry: entry.into(),
            file: "k.cu".into(),
            arch: "sm_80".into(),
            threads_per_block: 256,
            registers,
            smem_bytes,
            stack_bytes: 0,
            spill_stores: 0,
            spill_loads: 0,
            occupancy: None,
            occupancy_limiter: None,
            blocks,
            waves: None,
            tiles: None,
            advisories: Vec::new(),
        };
        let pick = |l: &[LaunchResources]| primary(l).map(|r| r.entry.clone());
        let partial = launch("partial", 32, 2048, 40);
        let reduce = launch("reduce", 32, 0, 40);
        assert_eq!(
            pick(&[partial.clone(), reduce.clone()]).as_deref(),
            Some("partial")
        );
        assert_eq!(
            pick(&[reduce.clone(), partial.clone()]).as_deref(),
            Some("partial")
        );
        let again = launch("again", 32, 0, 40);
        assert_eq!(pick(&[reduce.clone(), again]).as_deref(), Some("reduce"));
        // Alike kernels (attention's three launches): the one of the most blocks.
        let scores = launch("scores", 32, 0, 4096);
        assert_eq!(pick(&[reduce, scores]).as_deref(), Some("scores"));
        assert_eq!(
            pick(&[partial, launch("gemm", 64, 0, 1)]).as_deref(),
            Some("gemm")
        );
        assert_eq!(pick(&[]), None);
    }

    #[test]
    fn a_networks_fewest_bytes_are_fp32_whatever_its_swapped_operator_computes_in() {
        let net = Shape::Encoder {
            b: 1,
            s: 64,
            e: 128,
            h: 2,
        };
        let gemm = Shape::gemm(64, 64, 64);
        assert_eq!(
            min_bytes(&net, None, Precision::Fp16),
            min_bytes(&net, None, Precision::Fp32)
        );
        assert_eq!(
            2.0 * min_bytes(&gemm, None, Precision::Fp16),
            min_bytes(&gemm, None, Precision::Fp32)
        );
    }

    #[test]
    fn rows_that_run_one_cpu_port_name_the_first_of_them() {
        let all = crate::registry::all();
        let pick = |ids: &[&str]| -> Vec<&dyn Kernel> {
            ids.iter()
                .map(|id| {
                    all.iter()
                        .find(|k| k.info().id == *id)
                        .unwrap_or_else(|| panic!("no {id}"))
                        .as_ref()
                })
                .collect()
        };
        // 17 is BF16 on mma.sync, 18 and 21 the Hopper rungs whose CPU port is 17's; 16 is
        // FP16, a port of its own.
        let ks = pick(&[
            "gemm-mma-dbuf",
            "gemm-mma-bf16",
            "gemm-wgmma-tma",
            "gemm-wgmma-n256",
        ]);
        let got: Vec<Option<String>> = (0..ks.len()).map(|i| same_cpu_port(&ks, i)).collect();
        let bf16 = Some("gemm-mma-bf16".to_string());
        assert_eq!(got, vec![None, None, bf16.clone(), bf16]);
        // 08 and 09 run 07's port: their ideas (a second buffer, the tile shape) are a GPU's.
        let ks = pick(&["gemm-warptile", "gemm-double-buffer", "gemm-tuned"]);
        let got: Vec<Option<String>> = (0..ks.len()).map(|i| same_cpu_port(&ks, i)).collect();
        let warptile = Some("gemm-warptile".to_string());
        assert_eq!(got, vec![None, warptile.clone(), warptile]);
    }

    /// Few short samples: timing tests of what is timed, not of how fast.
    fn quick_timing(pair_rounds: u32) -> TimingConfig {
        TimingConfig {
            warmup_ms: 0.0,
            samples: 3,
            min_sample_ms: 0.2,
            max_row_ms: 1000.0,
            pair_rounds,
        }
    }

    #[test]
    fn a_rung_and_its_parent_are_timed_side_by_side_whichever_runs_first() {
        let all = crate::registry::all();
        let pick = |id: &str| all.iter().find(|k| k.info().id == id).unwrap().as_ref();
        let config = Config::defaults();
        let dev = CpuDevice::new();
        let timing = quick_timing(4);
        // Tiled before its parent, naive; 12 (its parent 11's port) and the reference after.
        let kernels = vec![
            pick("gemm-tiled"),
            pick("gemm-naive"),
            pick("gemm-wmma-fp16"),
            pick("gemm-wmma-fp16-convert"),
            pick("matrixmultiply-sgemm"),
        ];
        let ablation = Ablation {
            dev: &dev,
            config: &config,
            kernels,
            shapes: vec![(Workload::Gemm, vec![Shape::gemm(40, 24, 36)])],
            timing: Some(timing),
            keep_unrunnable: false,
        };
        let results = ablation.run(|_| {}).unwrap();
        let rows = &results.workloads[0].shapes[0].rows;
        let paired: Vec<(&str, Option<&str>)> = rows
            .iter()
            .map(|r| (r.id.as_str(), r.paired.as_ref().map(|p| p.against.as_str())))
            .collect();
        assert_eq!(
            paired,
            [
                ("gemm-tiled", Some("gemm-naive")),
                ("gemm-naive", None),
                // Its parent, 10, is not in this run.
                ("gemm-wmma-fp16", None),
                ("gemm-wmma-fp16-convert", None),
                ("matrixmultiply-sgemm", None),
            ]
        );
        let tiled = rows[0].paired.as_ref().unwrap();
        // At most `pair_rounds`, at least 3 (how many fit is `timing`'s to test).
        assert!((3..=4).contains(&tiled.rounds()), "{}", tiled.rounds());
        assert!(
            tiled
                .against_ms
                .iter()
                .chain(&tiled.row_ms)
                .all(|t| *t > 0.0)
        );
        // Without rounds, nothing is paired.
        let plain = Ablation {
            timing: Some(TimingConfig {
                pair_rounds: 0,
                ..timing
            }),
            ..ablation
        };
        let results = plain.run(|_| {}).unwrap();
        assert!(
            results.workloads[0].shapes[0]
                .rows
                .iter()
                .all(|r| r.paired.is_none())
        );
    }

    /// A rung dressed as a user's kernel set beside another rung (`against=`).
    struct Beside(&'static dyn Kernel, &'static str);

    impl Kernel for Beside {
        fn info(&self) -> kernel::KernelInfo {
            kernel::KernelInfo {
                id: "mine.cu:k".into(),
                role: kernel::Role::User,
                ..self.0.info()
            }
        }
        fn cpu(&self) -> Option<kernel::CpuPort> {
            self.0.cpu()
        }
        fn lineage(&self) -> Option<kernel::Lineage> {
            Some(kernel::Lineage {
                parent: Some(self.1),
                idea: "set beside",
                bound: None,
            })
        }
    }

    #[test]
    fn your_kernel_is_timed_side_by_side_with_the_rung_it_is_set_beside() {
        let all: &'static [Box<dyn Kernel>] = Box::leak(crate::registry::all().into_boxed_slice());
        let pick = |id: &str| all.iter().find(|k| k.info().id == id).unwrap().as_ref();
        let mine = Beside(pick("gemm-tiled"), "gemm-naive");
        let config = Config::defaults();
        let dev = CpuDevice::new();
        let ablation = Ablation {
            dev: &dev,
            config: &config,
            kernels: vec![pick("gemm-naive"), &mine],
            shapes: vec![(Workload::Gemm, vec![Shape::gemm(40, 24, 36)])],
            timing: Some(quick_timing(3)),
            keep_unrunnable: false,
        };
        let results = ablation.run(|_| {}).unwrap();
        let row = &results.workloads[0].shapes[0].rows[1];
        assert_eq!(row.parent.as_deref(), Some("gemm-naive"));
        let paired = row.paired.as_ref().expect("timed beside its rung");
        assert_eq!(paired.against, "gemm-naive");
    }

    #[test]
    fn the_reference_is_timed_before_the_rungs_when_its_row_comes_after_them() {
        let all = crate::registry::all();
        let pick = |id: &str| all.iter().find(|k| k.info().id == id).unwrap().as_ref();
        let config = Config::defaults();
        let dev = CpuDevice::new();
        let timing = quick_timing(0);
        let run = |ids: &[&str], timing: Option<TimingConfig>| {
            let ablation = Ablation {
                dev: &dev,
                config: &config,
                kernels: ids.iter().map(|id| pick(id)).collect(),
                shapes: vec![(Workload::Gemm, vec![Shape::gemm(40, 24, 36)])],
                timing,
                keep_unrunnable: false,
            };
            let mut r = ablation.run(|_| {}).unwrap();
            r.workloads.remove(0).shapes.remove(0)
        };
        let shape = run(&["gemm-naive", "matrixmultiply-sgemm"], Some(timing));
        let before = shape.reference_before.expect("a bracket");
        assert_eq!(before.id, "matrixmultiply-sgemm");
        assert!(before.timing.median_ms > 0.0 && before.timing.samples_ms.len() >= 3);
        // Timed before a rung, the reference brackets nothing; untimed, there is no drift.
        let shape = run(&["matrixmultiply-sgemm", "gemm-naive"], Some(timing));
        assert!(shape.reference_before.is_none());
        let shape = run(&["gemm-naive", "matrixmultiply-sgemm"], None);
        assert!(shape.reference_before.is_none());
    }

    #[test]
    fn a_lost_hopper_kernel_is_explained_as_a_trapped_mbarrier_wait() {
        use kernel::Kernel;
        let shape = Shape::square_gemm(256);
        let hopper = tensorcore::GemmWgmmaL2Order::default()
            .cuda(&shape)
            .unwrap();
        let hint = trap_hint(&hopper).unwrap();
        assert!(hint.contains("LAB_MBAR_TIMEOUT_NS") && hint.contains("--device sim"));
        let mma = tensorcore::GemmMma128x256.cuda(&shape).unwrap();
        assert_eq!(trap_hint(&mma), None);
    }

    /// The CPU device with a CUDA context's failure mode: after a sticky fault every call
    /// fails until `recover` builds a fresh context.
    struct StickyDevice {
        cpu: CpuDevice,
        lost: Cell<bool>,
        recoveries: Cell<u32>,
    }

    struct FaultingRun;

    impl Prepared for FaultingRun {
        fn run(&mut self) -> Result<(), DeviceError> {
            Err(DeviceError::Lost {
                what: "running gemm_faulty".into(),
                detail: "CUDA_ERROR_ILLEGAL_ADDRESS".into(),
            })
        }
        fn output(&mut self) -> Result<Vec<f32>, DeviceError> {
            unreachable!("the run failed")
        }
        fn time(&mut self, _: u64) -> Result<Duration, DeviceError> {
            unreachable!("the run failed")
        }
    }

    impl Executor for StickyDevice {
        fn kind(&self) -> DeviceKind {
            DeviceKind::Cpu
        }
        fn info(&self) -> &DeviceInfo {
            self.cpu.info()
        }
        fn can_run(&self, kernel: &dyn Kernel) -> Result<(), Unsupported> {
            self.cpu.can_run(kernel)
        }
        fn prepare<'a>(
            &'a self,
            kernel: &'a dyn Kernel,
            shape: &Shape,
            inputs: &'a [Vec<f32>],
        ) -> Result<Box<dyn Prepared + 'a>, DeviceError> {
            if self.lost.get() {
                return Err(DeviceError::Driver {
                    what: "allocating".into(),
                    detail: "CUDA_ERROR_ILLEGAL_ADDRESS (sticky)".into(),
                });
            }
            if kernel.info().id == "gemm-faulty" {
                self.lost.set(true);
                return Ok(Box::new(FaultingRun));
            }
            self.cpu.prepare(kernel, shape, inputs)
        }
        fn recover(&self) -> Result<(), DeviceError> {
            self.lost.set(false);
            self.recoveries.set(self.recoveries.get() + 1);
            Ok(())
        }
    }

    #[test]
    fn a_faulting_kernel_costs_its_own_row_only() {
        let dev = StickyDevice {
            cpu: CpuDevice::new(),
            lost: Cell::new(false),
            recoveries: Cell::new(0),
        };
        let all = crate::registry::all();
        let naive = all.iter().find(|k| k.info().id == "gemm-naive").unwrap();
        let tiled = all.iter().find(|k| k.info().id == "gemm-tiled").unwrap();
        let config = Config::defaults();
        let ablation = Ablation {
            dev: &dev,
            config: &config,
            kernels: vec![naive.as_ref(), &Faulty, tiled.as_ref()],
            shapes: vec![(Workload::Gemm, vec![Shape::gemm(33, 17, 9)])],
            timing: None,
            keep_unrunnable: false,
        };
        let results = ablation.run(|_| {}).unwrap();
        let rows = &results.workloads[0].shapes[0].rows;
        let status: Vec<(&str, Status)> = rows.iter().map(|r| (r.id.as_str(), r.status)).collect();
        assert_eq!(
            status,
            vec![
                ("gemm-naive", Status::Passed),
                ("gemm-faulty", Status::Error),
                ("gemm-tiled", Status::Passed),
            ]
        );
        let why = rows[1].reason.as_deref().unwrap();
        assert!(
            why.contains("gemm_faulty") && why.contains("ILLEGAL_ADDRESS") && why.contains("lost"),
            "{why}"
        );
        assert_eq!(dev.recoveries.get(), 1);
        let failures = crate::report::failures(&results);
        assert_eq!(failures.len(), 1);
        assert!(
            failures[0].starts_with("gemm 33x17x9 gemm-faulty:"),
            "{failures:?}"
        );
    }

    #[test]
    fn a_run_stopped_midway_leaves_the_shapes_it_finished_marked_unfinished() {
        let dev = CpuDevice::new();
        let all = crate::registry::all();
        let naive = all.iter().find(|k| k.info().id == "gemm-naive").unwrap();
        let config = Config::defaults();
        let shapes = vec![Shape::gemm(33, 17, 9), Shape::gemm(5, 70, 3)];
        let ablation = Ablation {
            dev: &dev,
            config: &config,
            kernels: vec![naive.as_ref()],
            shapes: vec![(Workload::Gemm, shapes.clone())],
            timing: None,
            keep_unrunnable: false,
        };
        let lab = std::env::temp_dir().join(format!("lab-checkpoint-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&lab);
        let out = lab.join("runs/the-run");
        let planned = vec![(Workload::Gemm, shapes.iter().map(Shape::label).collect())];
        let lab_dir = crate::runs::LabDir::at(lab.clone());
        // A PyTorch row for the first shape: kept with the rows it joins.
        let peer = crate::peers::PeerFile {
            schema_version: crate::peers::PEERS_VERSION,
            tool: "torch".into(),
            device: dev.info().name.clone(),
            date: "2026-11-28T00:00:00Z".into(),
            rows: vec![crate::peers::PeerRow {
                workload: "gemm".into(),
                shape: "33x17x9".into(),
                id: "torch-matmul-fp32".into(),
                precision: "fp32".into(),
                summary: "torch.matmul".into(),
                samples_ms: vec![1.0],
                rel_error: Some(1e-7),
                error: None,
            }],
        };
        let checkpoint = crate::runs::Checkpoint::new(Some(&out), &lab_dir, "cpu", &planned, None)
            .with_peers(Some(peer));
        assert_eq!(checkpoint.dir(), lab.join("runs/the-run-unfinished"));
        // The process "stops" after the first shape: what is on disk then is what it leaves.
        let mut kept = None;
        ablation
            .run(|e| {
                if let Event::ShapeDone { so_far } = e {
                    checkpoint.write(so_far).unwrap();
                    kept.get_or_insert_with(|| RunResults::load(checkpoint.dir()).unwrap());
                }
            })
            .unwrap();
        let kept = kept.expect("a checkpoint after the first shape");
        let labels: Vec<&str> = kept.workloads[0]
            .shapes
            .iter()
            .map(|s| s.label.as_str())
            .collect();
        assert_eq!(labels, ["33x17x9"]);
        let ids: Vec<&str> = kept.workloads[0].shapes[0]
            .rows
            .iter()
            .map(|r| r.id.as_str())
            .collect();
        assert_eq!(ids, ["gemm-naive", "torch-matmul-fp32"]);
        assert_eq!(kept.workloads[0].shapes[0].rows[0].status, Status::Passed);
        let why = kept.unfinished.as_deref().unwrap();
        assert!(
            why.contains("1 of 2 shapes") && why.contains("gemm 5x70x3"),
            "{why}"
        );
        assert!(crate::report::terminal(&kept).starts_with("An unfinished run: "));
        // `harness report` of the kept folder says so on every page and table.
        crate::report::write_report(&kept, checkpoint.dir()).unwrap();
        for page in ["index.html", "gemm.md"] {
            let text = std::fs::read_to_string(checkpoint.dir().join(page)).unwrap();
            assert!(text.contains("An unfinished run"), "{page}");
        }
        // A second run to the same folder keeps the first one's unfinished results.
        let again = crate::runs::Checkpoint::new(Some(&out), &lab_dir, "cpu", &planned, None);
        assert_eq!(again.dir(), lab.join("runs/the-run-unfinished-2"));
        again.write(&kept).unwrap();
        again.finish();
        assert!(lab.join("runs/the-run-unfinished/results.json").exists());
        assert!(!lab.join("runs/the-run-unfinished-2").exists());
        checkpoint.finish();
        assert!(!lab.join("runs/the-run-unfinished").exists());
        let _ = std::fs::remove_dir_all(&lab);
    }
}
