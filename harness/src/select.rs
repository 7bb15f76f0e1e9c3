//! Choosing what runs: the device (the GPU when there is one, else the CPU with one line saying
//! why), the workloads and their shapes.

use crate::config::Config;
use anyhow::{Result, anyhow, bail};
use kernel::cuda::CudaDevice;
use kernel::device::cpu::CpuDevice;
use kernel::{DeviceError, DeviceKind, Executor, Kernel, Shape, Workload};

/// The simulator as every command opens it: instrumented (every run checks for shared-memory
/// races, counts traffic and bank conflicts), and running a sample of each launch's blocks
/// with `sim_blocks`.
pub fn simulator(sim_blocks: Option<usize>) -> Result<kernel::sim::SimDevice> {
    let dev = kernel::sim::SimDevice::new()
        .map_err(|e| anyhow!("--device sim: {e}"))?
        .instrumented();
    Ok(match sim_blocks {
        Some(n) => dev.with_block_sample(n),
        None => dev,
    })
}

/// Opens the requested device. With `None`, the GPU if one works, else the CPU; the second
/// value is the line explaining a fallback. `sim_blocks` (`--sim-blocks`) applies to the
/// simulator only.
pub fn open(
    kind: Option<DeviceKind>,
    sim_blocks: Option<usize>,
) -> Result<(Box<dyn Executor>, Option<String>)> {
    if let Some(n) = sim_blocks
        && kind != Some(DeviceKind::Sim)
    {
        bail!("--sim-blocks {n} samples the simulator's blocks: add --device sim");
    }
    match kind {
        Some(DeviceKind::Cpu) => Ok((Box::new(CpuDevice::new()), None)),
        Some(DeviceKind::Cuda) => match CudaDevice::open() {
            Ok(d) => Ok((Box::new(d), None)),
            Err(e) => Err(anyhow!("--device cuda: {e}")),
        },
        Some(DeviceKind::Sim) => Ok((Box::new(simulator(sim_blocks)?), None)),
        None => match CudaDevice::open() {
            Ok(d) => Ok((Box::new(d), None)),
            Err(DeviceError::Unavailable(why)) => Ok((
                Box::new(CpuDevice::new()),
                Some(format!(
                    "No GPU: {why}; running the CPU ports of the rungs."
                )),
            )),
            Err(e) => Ok((
                Box::new(CpuDevice::new()),
                Some(format!(
                    "The GPU could not be used ({e}); running the CPU ladder."
                )),
            )),
        },
    }
}

/// The workloads of `kernels`, in run order: what a run or a check of kernels named with
/// `--kernels` covers when `--workload` does not say (the others would have no rows).
pub fn workloads_of(kernels: &[&dyn Kernel]) -> Vec<Workload> {
    Workload::ALL
        .into_iter()
        .filter(|w| kernels.iter().any(|k| k.info().workload == *w))
        .collect()
}

/// Refuses kernels named with `--kernels` that no workload of the run computes, naming
/// theirs: such a run would measure nothing.
pub fn kernels_in(named: &[&dyn Kernel], workloads: &[Workload]) -> Result<()> {
    for k in named {
        let i = k.info();
        if !workloads.contains(&i.workload) {
            let ours: Vec<&str> = workloads.iter().map(|w| w.name()).collect();
            bail!(
                "{} is a {} kernel, and this run's workloads are {}: add --workload {}, or \
                 leave --workload out",
                i.id,
                i.workload,
                ours.join(", "),
                i.workload
            );
        }
    }
    Ok(())
}

/// Parses a `--device` value, listing the valid ones on error.
pub fn parse_kind(s: &str) -> Result<DeviceKind> {
    DeviceKind::parse(s).ok_or_else(|| {
        anyhow!(
            "unknown device {s:?}; valid devices: {}",
            DeviceKind::ALL.map(DeviceKind::name).join(", ")
        )
    })
}

/// What an unknown workload's name is told: the workloads there are, and where the name is a
/// signature of one of them (`attention-lm`), that workload.
pub fn unknown_workload(name: &str) -> String {
    let signature = crate::user_kernel::signature::Signature::named(name)
        .filter(|s| s.name != s.workload.name())
        .map(|s| {
            format!(
                " ({name} is a signature of the {w} workload: give {w}, and signature={name} \
                 or an args= list naming its buffers)",
                w = s.workload.name()
            )
        })
        .unwrap_or_default();
    format!(
        "unknown workload {name:?}; valid: {}{signature}",
        Workload::ALL.map(Workload::name).join(", ")
    )
}

/// The workloads named on the command line, or `defaults` when none is; each once, in the
/// order first named (a workload run twice would write its tables twice, one over the other).
pub fn workloads(names: &[String], defaults: &[Workload]) -> Result<Vec<Workload>> {
    let named: Vec<Workload> = if names.is_empty() {
        defaults.to_vec()
    } else {
        names
            .iter()
            .map(|w| Workload::parse(w.trim()).ok_or_else(|| anyhow!(unknown_workload(w))))
            .collect::<Result<_>>()?
    };
    let mut once = Vec::new();
    for w in named {
        if !once.contains(&w) {
            once.push(w);
        }
    }
    Ok(once)
}

/// Shapes to run, per workload, in run order.
pub type WorkloadShapes = Vec<(Workload, Vec<Shape>)>;

/// The shapes of each workload: `--sizes` when given, else the configuration's list for
/// `use_` (`cpu`, `cuda`, `sim` or `check`). With `--sizes` but no `--workload` (`lenient`),
/// each size goes to the workloads whose syntax reads it (`1024` is a GEMM, `1024x2048x784-relu`
/// a linear layer) and the others are skipped with a note; a size no workload reads is an error.
pub fn shapes(
    config: &Config,
    use_: &str,
    workloads: &[Workload],
    sizes: &[String],
    lenient: bool,
) -> Result<(WorkloadShapes, Vec<String>)> {
    if workloads.is_empty() {
        bail!(
            "no workload to run: give --workload, or list some in the configuration's `workloads`"
        );
    }
    let mut out = Vec::new();
    let mut notes = Vec::new();
    let mut unread = Vec::new();
    // Whether some workload read each size: one that none reads is a mistake, not skipped.
    let mut read = vec![false; sizes.len()];
    for &w in workloads {
        let mut list = Vec::new();
        if sizes.is_empty() {
            list = config.shapes(w, use_);
        } else {
            for (i, s) in sizes.iter().enumerate() {
                match Shape::parse(w, s) {
                    Ok(shape) => {
                        shape.validate()?;
                        list.push(shape);
                        read[i] = true;
                    }
                    Err(e) if lenient => unread.push((i, e.to_string())),
                    Err(e) => return Err(e.into()),
                }
            }
            if list.is_empty() && lenient {
                notes.push(format!(
                    "{w}: none of --sizes reads as a shape of {w}; skipped"
                ));
                continue;
            }
        }
        // A shape listed twice (`64,64x64x64`) would be two rows of one measurement.
        let mut seen = std::collections::HashSet::new();
        list.retain(|shape| {
            let first = seen.insert(*shape);
            if !first {
                notes.push(format!("{shape}: listed twice; runs once"));
            }
            first
        });
        if list.is_empty() {
            bail!(
                "no {w} shapes for `{use_}` in {}; give --sizes",
                config.source
            );
        }
        out.push((w, list));
    }
    let why = |which: &dyn Fn(usize) -> bool| {
        let all: Vec<&str> = unread
            .iter()
            .filter(|(i, _)| which(*i))
            .map(|(_, e)| e.as_str())
            .collect();
        all.join("; ")
    };
    if out.is_empty() {
        bail!("no workload reads --sizes: {}", why(&|_| true));
    }
    if let Some(i) = read.iter().position(|r| !r) {
        let names: Vec<&str> = workloads.iter().map(|w| w.name()).collect();
        bail!(
            "--sizes: {:?} reads as a shape of none of this run's workloads ({}): {}",
            sizes[i],
            names.join(", "),
            why(&|j| j == i)
        );
    }
    // Refused here, before any buffer exists, rather than by an abort halfway through.
    crate::footprint::check(&out, config, crate::footprint::available())?;
    Ok((out, notes))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_workload_named_twice_runs_once() {
        let names = |v: &[&str]| v.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        assert_eq!(
            workloads(&names(&["gemm", " conv", "gemm"]), &[]).unwrap(),
            [Workload::Gemm, Workload::Conv]
        );
        assert_eq!(
            workloads(&[], &[Workload::Conv, Workload::Conv]).unwrap(),
            [Workload::Conv]
        );
        let e = workloads(&names(&["gem"]), &[]).unwrap_err().to_string();
        assert!(e.contains("unknown workload \"gem\"; valid: gemm"), "{e}");
        assert!(!e.contains("signature"), "{e}");
        let e = workloads(&names(&["attention-lm"]), &[])
            .unwrap_err()
            .to_string();
        assert!(
            e.contains(
                "(attention-lm is a signature of the attention workload: give attention, and \
                 signature=attention-lm or an args= list naming its buffers)"
            ),
            "{e}"
        );
    }
}
