//! User kernels in a run: their rows' extras (resources from NVRTC when no GPU ran them, the
//! tail hint on failure) and the run without a GPU, in the simulator.

use super::UserKernel;
use crate::config::Config;
use crate::results::{RunResults, Status};
use crate::run::Ablation;
use crate::{report, resources, select};
use anyhow::Result;
use kernel::{DeviceKind, Kernel, Role, Workload};
use std::path::Path;

/// The architecture whose resources are reported when no GPU ran the kernels.
pub const INSPECT_ARCH: &str = "sm_80";

/// The one line a run without a GPU prints, after what ran instead of the GPU.
pub const NO_GPU_LINE: &str = "no GPU timing was possible; your kernels ran in the CUDA \
     simulator for correctness, with registers and shared memory from NVRTC (sm_80).";

/// The device of a run with user kernels: `--device`, else the GPU if one works. Only a GPU is
/// announced; without one [`without_gpu`] says what happens instead.
pub fn open(device: Option<&str>) -> Result<Box<dyn kernel::Executor>> {
    let kind = device.map(select::parse_kind).transpose()?;
    let (dev, _) = select::open(kind)?;
    if dev.kind() == DeviceKind::Cuda {
        eprintln!("Device: {} ({})", dev.info().name, dev.kind());
    }
    Ok(dev)
}

/// Adds to the user rows of `results`: NVRTC's resources for `INSPECT_ARCH` when the row has
/// none (`inspect`), and on failure the tail hint.
pub fn annotate(results: &mut RunResults, users: &[UserKernel], inspect: bool) {
    for w in &mut results.workloads {
        for s in &mut w.shapes {
            for row in s.rows.iter_mut().filter(|r| r.role == Role::User) {
                let Some(k) = users.iter().find(|k| k.id() == row.id) else {
                    continue;
                };
                if inspect
                    && row.resources.is_empty()
                    && let Some(plan) = k.cuda(&s.shape)
                {
                    row.resources =
                        resources::of_plan(&plan, INSPECT_ARCH, None).unwrap_or_default();
                }
                if matches!(row.status, Status::Failed | Status::Error) {
                    let first_bad = row
                        .check
                        .and_then(|c| c.first_unwritten.or(c.first_nonfinite));
                    if let (Some(hint), Some(reason)) =
                        (k.tail_hint(&s.shape, first_bad), row.reason.as_mut())
                    {
                        reason.push_str("\n  ");
                        reason.push_str(&hint);
                    }
                }
            }
        }
    }
}

/// The workloads of a run with user kernels and no `--workload`: theirs.
pub fn workloads(users: &[UserKernel]) -> Vec<Workload> {
    let mut out: Vec<Workload> = users.iter().map(|u| u.workload).collect();
    out.sort();
    out.dedup();
    out
}

/// `harness run --kernel ...` without a GPU: the user kernels (and any lab kernels named with
/// `--kernels`) run in the simulator on its shapes (or `--sizes`), checked but not timed, the
/// resources from NVRTC. Writes a run folder (`out`, or a new one under target/lab/runs/).
/// `Ok(false)` when a row failed.
pub fn without_gpu(
    config: &Config,
    users: &[UserKernel],
    lab: Vec<&dyn Kernel>,
    workload_names: &[String],
    sizes: &[String],
    out: Option<&Path>,
    device: Option<&str>,
) -> Result<bool> {
    match device {
        Some(d) => println!("--device {d}: {NO_GPU_LINE}"),
        None => println!("No GPU (`harness doctor` says why): {NO_GPU_LINE}"),
    }
    let (dev, _) = select::open(Some(DeviceKind::Sim))?;
    let workloads = select::workloads(workload_names, &workloads(users))?;
    let lenient = workload_names.is_empty() && !sizes.is_empty();
    let (shapes, notes) = select::shapes(config, "sim", &workloads, sizes, lenient)?;
    for n in notes {
        println!("{n}");
    }
    let mut kernels = lab;
    kernels.extend(users.iter().map(|u| u as &dyn Kernel));
    let ablation = Ablation {
        dev: dev.as_ref(),
        config,
        kernels,
        shapes,
        timing: None,
        keep_unrunnable: true,
    };
    let mut results = ablation.run(|_| {})?;
    annotate(&mut results, users, kernel::cuda::nvrtc::version().is_ok());
    print!("{}", report::terminal(&results));
    let failures = report::failures(&results);
    let dir = crate::runs::save(&results, out, &crate::runs::LabDir::locate())?;
    crate::console::print_run_folder(&dir);
    Ok(failures.is_empty())
}

/// `harness inspect --kernel SPEC`: NVRTC's report for each user kernel's instantiation (the
/// wrapper the lab launches), on the workload's probe shape for the dynamic shared memory.
pub fn inspect(users: &[UserKernel], archs: &[String]) -> Result<bool> {
    kernel::cuda::nvrtc::version()
        .map_err(|e| anyhow::anyhow!("harness inspect needs NVRTC: {e}"))?;
    println!(
        "{:<44} {:<7} {:>7} {:>5} {:>9} {:>6} {:>11} {:>10}",
        "kernel", "arch", "threads", "regs", "smem B", "stack", "spill st/ld", "occupancy"
    );
    let mut ok = true;
    for u in users {
        let shape = u.workload.probe_shape();
        let Some(plan) = u.cuda(&shape) else { continue };
        for arch in archs {
            match resources::of_plan(&plan, arch, None) {
                Ok(list) => {
                    for r in list {
                        println!("{:<44} {:<7} {}", u.id(), arch, r.columns());
                    }
                }
                Err(e) => {
                    ok = false;
                    println!("{} {arch}: {e}", u.id());
                }
            }
        }
    }
    Ok(ok)
}
