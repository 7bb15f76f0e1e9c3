//! Running an ablation: for each shape, random inputs and a reference once, then every kernel
//! of the workload: prepare, run on NaN-poisoned output, validate, time. Used by `harness run`,
//! `harness check` and the criterion bench alike.

use crate::config::Config;
use crate::reference;
use crate::resources::{self, LaunchResources};
use crate::results::{Row, RunResults, ShapeResults, Status, WorkloadResults};
use crate::timing::{self, Timing, TimingConfig};
use crate::validate;
use anyhow::Result;
use kernel::{
    CudaPlan, DeviceError, DeviceKind, Executor, Kernel, Precision, Prepared, Shape, Workload,
};

/// What the kernels of one shape are checked against.
pub struct Reference {
    pub values: Vec<f64>,
    /// Output indices of `values` when the reference is a sample.
    pub indices: Option<Vec<usize>>,
    pub label: String,
}

impl Reference {
    pub fn expected(&self) -> validate::Expected<'_> {
        validate::Expected {
            values: &self.values,
            indices: self.indices.as_deref(),
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
        };
    }
    Reference {
        values: reference::reference(shape, inputs),
        indices: None,
        label: reference::describe(shape.workload()).to_string(),
    }
}

/// The fewest bytes a row moves: from its plan's element types, else its precision.
fn min_bytes(shape: &Shape, plan: Option<&CudaPlan>, precision: Precision) -> f64 {
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
        None => shape.min_bytes(if precision == Precision::Fp16 { 2 } else { 4 }),
    }
}

fn empty_row(kernel: &dyn Kernel, shape: &Shape, plan: Option<&CudaPlan>) -> Row {
    let i = kernel.info();
    Row {
        id: i.id.to_string(),
        stage: i.stage,
        precision: i.precision,
        role: i.role,
        rung: i.rung,
        summary: i.summary.to_string(),
        status: Status::Unsupported,
        reason: None,
        min_bytes: min_bytes(shape, plan, i.precision),
        scratch_bytes: plan.map_or(0, |p| p.scratch_bytes() as u64),
        timing: None,
        check: None,
        resources: Vec::new(),
    }
}

/// `sm_90` from a device's compute capability `9.0`.
pub fn device_arch(dev: &dyn Executor) -> Option<String> {
    dev.info()
        .compute_capability
        .as_ref()
        .map(|cc| format!("sm_{}", cc.replace('.', "")))
}

/// Prepares, runs and validates one kernel on one shape. The prepared run comes back with
/// the row when it ran, so the caller can time it.
pub fn evaluate<'a>(
    dev: &'a dyn Executor,
    kernel: &'a dyn Kernel,
    shape: &Shape,
    inputs: &'a [Vec<f32>],
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
        row.resources = resources::of_plan(plan, &arch).unwrap_or_default();
    }
    let fail = |row: &mut Row, e: DeviceError| {
        row.status = match e {
            DeviceError::Unsupported(_) => Status::Unsupported,
            _ => Status::Error,
        };
        row.reason = Some(match e {
            DeviceError::Unsupported(u) => u.0,
            other => other.to_string(),
        });
    };
    let mut prepared = match dev.prepare(kernel, shape, inputs) {
        Ok(p) => p,
        Err(e) => {
            fail(&mut row, e);
            return (row, None);
        }
    };
    match prepared.run().and_then(|()| prepared.output()) {
        Ok(out) => {
            let sentinel = match plan.as_ref().map(|p| p.output_fill) {
                Some(kernel::Fill::Value(v)) => Some(v),
                _ => None,
            };
            let c = validate::check_against(
                &out,
                reference.expected(),
                sentinel,
                row.precision.tolerance(),
            );
            row.status = if c.passed {
                Status::Passed
            } else {
                Status::Failed
            };
            if !c.passed {
                row.reason = Some(c.failure(row.precision, &shape.output()));
            }
            row.check = Some(c);
            (row, Some(prepared))
        }
        Err(e) => {
            fail(&mut row, e);
            (row, None)
        }
    }
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
    Row {
        shape: &'a Shape,
        row: &'a Row,
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

    /// As [`Ablation::run`], with the timing method supplied (the criterion bench's).
    pub fn run_with(
        &self,
        progress: &mut dyn FnMut(Event<'_>),
        time: &mut TimeRow<'_>,
    ) -> Result<RunResults> {
        let mut workloads = Vec::new();
        for (workload, shapes) in &self.shapes {
            let kernels: Vec<&dyn Kernel> = self
                .kernels
                .iter()
                .copied()
                .filter(|k| k.info().workload == *workload)
                .filter(|k| self.keep_unrunnable || self.dev.can_run(*k).is_ok())
                .collect();
            let mut shape_results = Vec::new();
            for shape in shapes {
                progress(Event::Shape {
                    workload: *workload,
                    shape,
                    kernels: kernels.len(),
                });
                let inputs = crate::inputs::random_inputs(shape, self.config.seed);
                let reference = reference_for(self.dev, &kernels, shape, &inputs, self.config);
                let mut rows = Vec::new();
                for &k in &kernels {
                    let (mut row, prepared) = evaluate(self.dev, k, shape, &inputs, &reference);
                    if let (Some(mut p), Some(cfg)) = (prepared, &self.timing) {
                        match time(shape, &row, p.as_mut(), cfg) {
                            Ok(t) => row.timing = Some(t),
                            Err(e) => {
                                row.status = Status::Error;
                                row.reason = Some(format!("timing failed: {e}"));
                            }
                        }
                    }
                    progress(Event::Row { shape, row: &row });
                    rows.push(row);
                }
                shape_results.push(ShapeResults {
                    shape: *shape,
                    label: shape.label(),
                    flops: shape.flops(),
                    reference: reference.label,
                    rows,
                });
            }
            workloads.push(WorkloadResults {
                workload: *workload,
                shapes: shape_results,
            });
        }
        Ok(RunResults {
            schema_version: crate::results::SCHEMA_VERSION,
            tool: format!("harness {}", env!("CARGO_PKG_VERSION")),
            device: self.dev.info().clone(),
            commit: crate::results::current_commit(),
            date: crate::results::utc_now(),
            config: serde_json::to_value(self.config)?,
            workloads,
            calibration: None,
        })
    }
}

/// Whether `row` has launch resources worth a column.
pub fn primary_resources(row: &Row) -> Option<&LaunchResources> {
    row.resources.iter().max_by_key(|r| r.registers)
}
