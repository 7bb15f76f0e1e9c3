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
    /// Threads per block assumed for the occupancy of a FILE's kernels (1 to 1024).
    #[arg(long, default_value_t = 256, value_parser = clap::value_parser!(u32).range(1..=1024))]
    pub block: u32,
    /// Dynamic shared memory per block (bytes) a FILE's kernels are launched with, added to
    /// their static shared memory for the occupancy (at most 1 MiB; a block that asks more than
    /// its GPU gives has no occupancy).
    #[arg(long, default_value_t = 0, value_parser = clap::value_parser!(u32).range(0..=1 << 20))]
    pub smem: u32,
    /// A folder a FILE's headers lie in, as nvcc's `-I` (repeatable).
    #[arg(long = "include", value_name = "DIR")]
    pub includes: Vec<PathBuf>,
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
    /// With --kernel: the shape to launch it at (the first that reads as a shape of its
    /// workload, in that workload's syntax, e.g. 1x8x1024x128 for attention), for a kernel
    /// written for other sizes than the lab's inspection shape; `block=`, `smem=`, `grid=`
    /// and `define=` are evaluated there.
    #[arg(long, value_delimiter = ',')]
    pub sizes: Vec<String>,
    /// With --kernel: the workload of a spec that names none (`workload=` in the spec, or a
    /// `signature=` of that workload, says it otherwise), as for `run`.
    #[arg(long, value_delimiter = ',')]
    pub workload: Vec<String>,
}

pub fn run(args: &Args) -> Outcome {
    // One thing to inspect: a file, your kernels, or the lab's (all, or those named).
    let asked: Vec<&str> = [
        (args.file.is_some(), "a FILE"),
        (!args.user_kernels.is_empty(), "--kernel"),
        (!args.kernels.is_empty(), "--kernels"),
    ]
    .iter()
    .filter_map(|&(given, what)| given.then_some(what))
    .collect();
    if asked.len() > 1 {
        anyhow::bail!(
            "inspect takes one of a FILE (its kernels), --kernel (your kernels as the lab \
             launches them) or --kernels (the lab's rungs); {} were given",
            asked.join(" and ")
        );
    }
    if !args.workload.is_empty() && args.user_kernels.is_empty() {
        anyhow::bail!("--workload names the workload of a --kernel spec that names none");
    }
    if !args.user_kernels.is_empty() {
        let specs = user_kernel::specs(&[], &args.user_kernels)?;
        let users = user_kernel::load_all(&specs, &args.workload, &args.sizes, None)?;
        // At the first shape the rungs of its workload are inspected at, or --sizes'.
        let shape_of = |w: Workload| -> anyhow::Result<(Shape, &'static str)> {
            if args.sizes.is_empty() {
                return Ok((
                    inspect_shapes(w)[0].1,
                    "the shape the lab's rungs are inspected at",
                ));
            }
            args.sizes
                .iter()
                .find_map(|s| Shape::parse(w, s).ok())
                .map(|s| (s, "from --sizes"))
                .ok_or_else(|| {
                    anyhow::anyhow!(
                        "--sizes: none of {} reads as a shape of {w}",
                        args.sizes.join(", ")
                    )
                })
        };
        for u in &users {
            shape_of(u.workload)?;
        }
        nvrtc_for(&args.arch)?;
        return user_kernel::run::inspect(&users, &args.arch, shape_of, args.sass);
    }
    if !args.sizes.is_empty() {
        anyhow::bail!(
            "--sizes sets the shape a --kernel is launched at; the lab's kernels are inspected \
             at their workloads' shapes"
        );
    }
    match &args.file {
        Some(file) => inspect_file(file, &args.arch, args, args.sass),
        None => inspect(&args.arch, &args.kernels, args.deny_spills, args.sass),
    }
}

/// NVRTC, and every architecture asked for one it compiles machine code for.
fn nvrtc_for(archs: &[String]) -> anyhow::Result<()> {
    nvrtc::version().context("harness inspect needs NVRTC")?;
    for arch in archs {
        nvrtc::check_arch(arch).map_err(|e| anyhow::anyhow!("--arch: {e}"))?;
    }
    Ok(())
}

/// The shapes `harness inspect` compiles `k` at: its own ([`Kernel::inspect_shape`]), else
/// its workload's ([`inspect_shapes`]).
pub fn inspect_shapes_of(k: &dyn kernel::Kernel) -> Vec<(&'static str, Shape)> {
    match k.inspect_shape() {
        Some(own) => vec![own],
        None => inspect_shapes(k.info().workload),
    }
}

/// The shapes `harness inspect` compiles a workload's kernels at, each with its label (empty
/// where there is one). Attention compiles per head dimension: both the ladder supports, so
/// that register pressure (spills) at D=128 shows.
pub fn inspect_shapes(w: Workload) -> Vec<(&'static str, Shape)> {
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
        Workload::Eltwise => vec![("", Shape::Eltwise { m: 8192, n: 4096 })],
        Workload::Rbf => vec![("", Shape::Rbf { n: 131_072, k: 64 })],
        Workload::Layernorm => vec![("", Shape::Layernorm { m: 8192, n: 1280 })],
        Workload::Softmax => vec![("", Shape::Softmax { m: 8192, n: 1280 })],
        Workload::Pool => vec![(
            "",
            Shape::Pool {
                b: 10_000,
                c: 4,
                h: 80,
                w: 80,
                p: 2,
            },
        )],
        // The networks at their GPU shapes: every launch of the forward pass.
        Workload::Cnn => vec![("", Shape::Cnn { b: 10_000 })],
        Workload::Encoder => vec![(
            "",
            Shape::Encoder {
                b: 8,
                s: 1024,
                e: 1280,
                h: 20,
            },
        )],
        Workload::Reduce => vec![("", Shape::Reduce { n: 1 << 24 })],
        Workload::Transpose => vec![("", Shape::Transpose { m: 8192, n: 8192 })],
    }
}

fn inspect(archs: &[String], ids: &[String], deny_spills: bool, sass: bool) -> Outcome {
    let all = registry::all();
    let kernels = registry::select(&all, ids)?;
    nvrtc_for(archs)?;
    let tool = sass.then(sass::Disassembler::find).transpose()?;
    let mut listings = Vec::new();
    let mut advised = Vec::new();
    let mut ok = true;
    println!(
        "{:<28} {:<22} {:<7} {:>7} {:>5} {:>9} {:>6} {:>11} {:>10}",
        "kernel", "entry", "arch", "threads", "regs", "smem B", "stack", "spill st/ld", "occupancy"
    );
    for k in kernels {
        let i = k.info();
        for (label, shape) in inspect_shapes_of(k) {
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
                            advised.extend(r.advisories.iter().map(|a| (id.clone(), a.clone())));
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
    print_advisories(&advised);
    sass::print(&listings);
    Ok(ok)
}

/// ptxas's performance advisories under the resources table, one line each.
pub(crate) fn print_advisories(advised: &[(String, String)]) {
    if advised.is_empty() {
        return;
    }
    println!("\nptxas reports a loss of speed it compiled in anyway:");
    for (who, what) in advised {
        println!("  {who}: {what}");
    }
}

/// `harness inspect FILE.cu`: compiles any CUDA file (its folder on the include path, host
/// code blanked and its local headers prepared as for `run --kernel`) and prints the
/// resources of each of its kernels by name, in the columns of the rungs' report: occupancy
/// at `--block` threads and `--smem` bytes of dynamic shared memory per block.
fn inspect_file(file: &Path, archs: &[String], args: &Args, sass: bool) -> Outcome {
    if let Some(d) = args.includes.iter().find(|d| !d.is_dir()) {
        anyhow::bail!("--include {}: no such folder", d.display());
    }
    let files = user_kernel::files::LocalFiles::read(file, &args.includes, false)
        .map_err(|e| anyhow::anyhow!("cannot read {}: {}", e.file, e.error))?;
    nvrtc_for(archs)?;
    let tool = sass.then(sass::Disassembler::find).transpose()?;
    let mut listings = Vec::new();
    let standins = user_kernel::source::standin_dir().map_err(anyhow::Error::msg)?;
    let name = file.display().to_string();
    // Each non-template kernel by its C++ name, so the report shows it rather than the
    // mangled symbol; a template has no code until it is instantiated.
    let (templates, plain): (Vec<_>, Vec<_>) =
        files.kernels.iter().partition(|k| k.template.is_some());
    // Overloads by name and line, each compiled by the cast that names it.
    let plain: Vec<(String, String)> = plain
        .iter()
        .map(|k| {
            if user_kernel::overload::overloads(&files.kernels, k).len() > 1 {
                (
                    format!("{} ({})", k.name, k.at(&name)),
                    user_kernel::overload::cast(k, &k.name),
                )
            } else {
                (k.name.clone(), k.name.clone())
            }
        })
        .collect();
    let source = kernel::CudaSource {
        code: user_kernel::source::for_inspect(&files.main).into(),
        file: name.clone().into(),
        defines: Vec::new(),
        include_dirs: files.include_dirs(file, &args.includes, standins),
        // Instructions of Hopper alone (wgmma, a cluster's registers): sm_90a, and no other
        // family unless they stand behind __CUDA_ARCH__ conditionals.
        arch: files.hopper.then_some("sm_90a".into()),
        other_archs: files.hopper_guarded,
        cxx_entries: plain
            .iter()
            .map(|(label, e)| (label.clone().into(), e.clone().into()))
            .collect(),
        from_user: true,
    };
    let width = plain.iter().map(|(l, _)| l.len()).max().unwrap_or(6).max(6);
    let mut advised = Vec::new();
    println!(
        "{:<width$} {:<7} {:>7} {:>5} {:>9} {:>6} {:>11} {:>10}",
        "kernel", "arch", "threads", "regs", "smem B", "stack", "spill st/ld", "occupancy"
    );
    let mut ok = true;
    for arch in archs {
        if let Err(kernel::Unsupported(why)) = nvrtc::target(&source, arch) {
            println!("{why}");
            continue;
        }
        let compiled = match nvrtc::compile(&source, arch) {
            // An instruction of a later GPU (behind a conditional that holds here too): this
            // architecture's line says so, and the others are reported.
            Err(kernel::DeviceError::Compile { log, .. })
                if let Some(why) = user_kernel::refused_for(&log, &files) =>
            {
                println!("{:<width$} {arch:<7} not built: {why}", "");
                ok = false;
                continue;
            }
            other => other,
        };
        let compiled = compiled.map_err(|e| match e {
            kernel::DeviceError::Compile {
                compiler,
                file,
                arch,
                log,
            } => {
                anyhow::anyhow!(
                    "{compiler} could not compile {file} for {arch}; its log (lines are those \
                     of your file):\n{}",
                    user_kernel::explain_log(&log, "--include DIR", &files)
                )
            }
            other => other.into(),
        })?;
        let limits =
            kernel::cuda::occupancy::parse_arch(arch).and_then(kernel::cuda::occupancy::limits);
        for (label, _) in &plain {
            let Some(r) = compiled.resources.get(label) else {
                continue;
            };
            if r.spills() {
                ok &= !args.deny_spills;
            }
            let smem = r.static_smem + args.smem;
            let occ = limits
                .map(|l| kernel::cuda::occupancy::occupancy(&l, args.block, r.registers, smem));
            let row = resources::LaunchResources {
                entry: label.clone(),
                file: name.clone(),
                arch: compiled.arch.clone(),
                threads_per_block: args.block,
                registers: r.registers,
                smem_bytes: smem,
                stack_bytes: r.stack_frame,
                spill_stores: r.spill_stores,
                spill_loads: r.spill_loads,
                occupancy: occ.map(|o| o.fraction),
                occupancy_limiter: occ.map(|o| o.limiter.to_string()),
                blocks: 0,
                waves: None,
                tiles: None,
                advisories: compiled.advisories(label),
            };
            println!("{label:<width$} {:<7} {}", row.arch, row.columns());
            advised.extend(row.advisories.iter().map(|a| (label.clone(), a.clone())));
        }
        if let Some(tool) = &tool {
            let list = sass::of_file(tool, &source, arch)?;
            let name = file.file_name().unwrap_or_default().to_string_lossy();
            listings.extend(list.into_iter().map(|l| (name.to_string(), l)));
        }
    }
    if plain.is_empty() {
        println!("{name}: no kernel to compile on its own");
    }
    for t in templates {
        println!(
            "{}{}: a template has no code until it is instantiated: harness inspect --kernel \
             '{name}:{}<...>,workload=..,block=..,grid=..'",
            t.name,
            t.template.as_deref().unwrap_or(""),
            t.name
        );
    }
    if args.smem > 0 {
        println!("(smem B includes the {} bytes of --smem)", args.smem);
    }
    print_advisories(&advised);
    sass::print(&listings);
    Ok(ok)
}
