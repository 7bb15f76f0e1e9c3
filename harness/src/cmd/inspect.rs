//! `harness inspect`: NVRTC-compile every kernel (or a CUDA file, or a user kernel) and print
//! registers, shared memory, spills and occupancy, and with `--sass` the SASS and its
//! instruction mix.

use super::Outcome;
use crate::{registry, resources, sass, user_kernel};
use anyhow::Context;
use kernel::cuda::nvrtc;
use kernel::{Shape, Workload};
use std::path::{Path, PathBuf};

#[derive(clap::Args)]
pub struct Args {
    /// A CUDA file to compile instead of the lab's kernels; every `__global__` entry of it
    /// is reported.
    pub file: Option<PathBuf>,
    /// Architectures (comma-separated).
    #[arg(long, value_delimiter = ',', default_value = "sm_80,sm_90")]
    pub arch: Vec<String>,
    #[arg(long, value_delimiter = ',')]
    pub kernels: Vec<String>,
    /// Threads per block assumed for the occupancy of a FILE's kernels.
    #[arg(long, default_value_t = 256)]
    pub block: u32,
    /// Exit 1 if any kernel spills registers (beyond a spill the kernel declares).
    #[arg(long)]
    pub deny_spills: bool,
    /// Also print each kernel's SASS (nvdisasm or cuobjdump on the NVRTC CUBIN) and a
    /// count of its FFMA/HMMA, global, shared and local loads and stores.
    #[arg(long)]
    pub sass: bool,
    /// Your kernel, as for `run --kernel` (repeatable): the resources of the instantiation
    /// the lab launches.
    #[arg(long = "kernel")]
    pub user_kernels: Vec<String>,
}

pub fn run(args: &Args) -> Outcome {
    if !args.user_kernels.is_empty() {
        let users = user_kernel::load_all(&[], &args.user_kernels, &[])?;
        return user_kernel::run::inspect(&users, &args.arch);
    }
    match &args.file {
        Some(file) => inspect_file(file, &args.arch, args.block, args.deny_spills, args.sass),
        None => inspect(&args.arch, &args.kernels, args.deny_spills, args.sass),
    }
}

/// The shapes `harness inspect` compiles a workload's kernels at, each with its label (empty
/// where there is one). Attention compiles per head dimension: both the ladder supports, so
/// that register pressure (spills) at D=128 shows.
fn inspect_shapes(w: Workload) -> Vec<(&'static str, Shape)> {
    match w {
        Workload::Gemm => vec![("", Shape::square_gemm(4096))],
        Workload::Linear => vec![(
            "",
            Shape::Linear {
                m: 8192,
                n: 4096,
                k: 4096,
                act: kernel::Activation::Gelu,
            },
        )],
        Workload::Conv => vec![(
            "",
            Shape::Conv {
                b: 1000,
                c: 4,
                m: 16,
                h: 40,
                w: 40,
                k: 7,
            },
        )],
        Workload::Attention => [("D=64", 64), ("D=128", 128)]
            .into_iter()
            .map(|(label, d)| {
                (
                    label,
                    Shape::Attention {
                        b: 4,
                        h: 16,
                        s: 1024,
                        d,
                        causal: false,
                    },
                )
            })
            .collect(),
    }
}

fn inspect(archs: &[String], ids: &[String], deny_spills: bool, sass: bool) -> Outcome {
    let all = registry::all();
    let kernels = registry::select(&all, ids)?;
    nvrtc::version().context("harness inspect needs NVRTC")?;
    let tool = sass.then(sass::Disassembler::find).transpose()?;
    let mut listings = Vec::new();
    let mut ok = true;
    println!(
        "{:<28} {:<22} {:<7} {:>7} {:>5} {:>9} {:>6} {:>11} {:>10}",
        "kernel", "entry", "arch", "threads", "regs", "smem B", "stack", "spill st/ld", "occupancy"
    );
    for k in kernels {
        let i = k.info();
        for (label, shape) in inspect_shapes(i.workload) {
            // Labelled by shape where a workload compiles at several (attention per head dimension).
            let id = if label.is_empty() {
                i.id.to_string()
            } else {
                format!("{}[{label}]", i.id)
            };
            let Some(plan) = k.cuda(&shape) else { continue };
            if plan.launches().next().is_none() {
                continue; // library rows (cuBLAS) have nothing to compile
            }
            for arch in archs {
                // A rung built for one architecture-specific target (sm_90a) has no code elsewhere.
                if let Err(why) = nvrtc::check_target(&plan, arch) {
                    println!("{:<28} {arch}: skipped: {why}", id);
                    continue;
                }
                match resources::of_plan(&plan, arch, None) {
                    Ok(list) => {
                        for r in list {
                            if r.spill_stores + r.spill_loads > 0 {
                                match k.accepted_spill() {
                                    Some(a) if a.covers(r.spill_stores, r.spill_loads) => {
                                        println!(
                                            "{:<28} accepted spill on {arch}: {}",
                                            id, a.reason
                                        )
                                    }
                                    _ => ok &= !deny_spills,
                                }
                            }
                            println!("{:<28} {:<22} {:<7} {}", id, r.entry, r.arch, r.columns());
                        }
                    }
                    Err(e) => {
                        ok = false;
                        println!("{:<28} {arch}: {e}", id);
                    }
                }
                if let Some(tool) = &tool {
                    match sass::of_plan(tool, &plan, arch) {
                        Ok(list) => listings.extend(list.into_iter().map(|l| (id.clone(), l))),
                        Err(e) => {
                            ok = false;
                            println!("{:<28} {arch}: {e}", id);
                        }
                    }
                }
            }
        }
    }
    sass::print(&listings);
    Ok(ok)
}

/// `harness inspect FILE.cu`: compiles any CUDA file (its folder on the include path) and
/// prints the resources of each of its kernels, occupancy at `block` threads per block.
fn inspect_file(
    file: &Path,
    archs: &[String],
    block: u32,
    deny_spills: bool,
    sass: bool,
) -> Outcome {
    let code =
        std::fs::read_to_string(file).with_context(|| format!("cannot read {}", file.display()))?;
    nvrtc::version().context("harness inspect needs NVRTC")?;
    let tool = sass.then(sass::Disassembler::find).transpose()?;
    let mut listings = Vec::new();
    let dir = file
        .parent()
        .filter(|d| !d.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    // Host code blanked and host-only headers served by stand-ins, as for `run --kernel`.
    let standins = user_kernel::source::standin_dir().map_err(anyhow::Error::msg)?;
    let name = file.display().to_string();
    let source = kernel::CudaSource {
        code: user_kernel::source::for_inspect(&code, &name).into(),
        file: name.into(),
        defines: Vec::new(),
        include_dirs: vec![dir.to_path_buf(), standins],
        arch: None,
    };
    println!(
        "{:<32} {:<7} {:>5} {:>9} {:>6} {:>11} {:>16}",
        "entry",
        "arch",
        "regs",
        "smem B",
        "stack",
        "spill st/ld",
        format!("occupancy @{block}")
    );
    let mut ok = true;
    for arch in archs {
        let compiled = nvrtc::compile(&source, arch)?;
        let limits =
            kernel::cuda::occupancy::parse_arch(arch).and_then(kernel::cuda::occupancy::limits);
        let mut entries: Vec<_> = compiled.resources.iter().collect();
        entries.sort_by(|a, b| a.0.cmp(b.0));
        if entries.is_empty() {
            println!(
                "{}: no __global__ function in {arch}'s report (a template has no code until \
                 instantiated: `harness inspect --kernel FILE.cu:name<args>,block=..,grid=..`)",
                file.display()
            );
        }
        for (entry, r) in entries {
            if r.spills() {
                ok &= !deny_spills;
            }
            let occ = limits
                .map(|l| kernel::cuda::occupancy::occupancy(&l, block, r.registers, r.static_smem));
            println!(
                "{:<32} {:<7} {:>5} {:>9} {:>6} {:>11} {:>16}",
                entry,
                arch,
                r.registers,
                r.static_smem,
                r.stack_frame,
                format!("{}/{}", r.spill_stores, r.spill_loads),
                occ.map(|o| format!("{:.0}% {}", o.fraction * 100.0, o.limiter))
                    .unwrap_or_else(|| "?".into())
            );
        }
        if let Some(tool) = &tool {
            let list = sass::of_file(tool, &source, arch)?;
            let name = file.file_name().unwrap_or_default().to_string_lossy();
            listings.extend(list.into_iter().map(|l| (name.to_string(), l)));
        }
    }
    sass::print(&listings);
    Ok(ok)
}
