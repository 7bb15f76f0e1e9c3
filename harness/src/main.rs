//! `harness`: list, run, check, inspect and diagnose the lab's kernels.

use anyhow::{Context, Result};
use clap::{Parser, Subcommand};
use harness::calibrate::{self, Calibration};
use harness::config::Config;
use harness::results::{RunResults, Status};
use harness::run::{Ablation, Event};
use harness::{
    compare, output, peers, registry, report, resources, sass, select, tune, user_kernel,
};
use indicatif::{ProgressBar, ProgressStyle};
use kernel::cuda::discovery::discovery;
use kernel::cuda::{CudaDevice, nvrtc};
use kernel::{DeviceKind, Executor, Kernel, Role, Shape, Workload};
use std::io::IsTerminal;
use std::path::Path;
use std::path::PathBuf;
use std::process::ExitCode;

#[derive(Parser)]
#[command(
    name = "harness",
    version,
    about = "The GPU kernel ablation lab: run, check and inspect every kernel"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(clap::Args, Clone)]
struct Common {
    /// TOML file overriding harness/ablation.toml.
    #[arg(long)]
    config: Option<PathBuf>,
    /// cpu, cuda or sim; default: the GPU if one works, else the CPU.
    #[arg(long)]
    device: Option<String>,
    /// Only these kernels (comma-separated ids, see `harness list`).
    #[arg(long, value_delimiter = ',')]
    kernels: Vec<String>,
}

/// Which workloads and shapes.
#[derive(clap::Args, Clone, Default)]
struct Selection {
    /// Workloads (comma-separated); default from the config.
    #[arg(long, value_delimiter = ',')]
    workload: Vec<String>,
    /// Shapes (comma-separated, each workload's syntax, e.g. 512,1024 or 100x37x129).
    #[arg(long, value_delimiter = ',')]
    sizes: Vec<String>,
    /// The config's small, awkward simulator shapes (`sim`) on whatever device runs: for
    /// quick runs and for tools that slow kernels down (compute-sanitizer).
    #[arg(long, conflicts_with = "sizes")]
    small: bool,
}

impl Selection {
    /// Which of the config's shape lists to use when no `--sizes` are given.
    fn use_<'a>(&self, default: &'a str) -> &'a str {
        if self.small { "sim" } else { default }
    }
}

#[derive(Subcommand)]
enum Command {
    /// Every kernel with its workload, stage, precision and summary.
    List {
        #[arg(long)]
        json: bool,
    },
    /// Run the ablation: validate and time every kernel, write results/<device>/.
    Run {
        #[command(flatten)]
        common: Common,
        #[command(flatten)]
        selection: Selection,
        /// Results folder (a subfolder per device is created).
        #[arg(long, default_value = "results")]
        out: PathBuf,
        /// Your own kernel as a row, `FILE.cu:ENTRY,block=256,grid=tile:64x64[,...]`
        /// (repeatable; see docs/your-kernel.md). Without a GPU it runs in the simulator.
        #[arg(long = "kernel")]
        user_kernels: Vec<String>,
    },
    /// The shapes a run would use, as JSON (what `tools/torch_peers.py --shapes` reads).
    Shapes {
        /// TOML file overriding harness/ablation.toml.
        #[arg(long)]
        config: Option<PathBuf>,
        /// Whose shapes: cpu, cuda or sim.
        #[arg(long, default_value = "cuda")]
        device: String,
        #[command(flatten)]
        selection: Selection,
        /// Only each workload's headline shape (the largest), one label per line.
        #[arg(long)]
        headline: bool,
    },
    /// Measure the device's ceilings (bandwidth, FP32, tensor rates) for the roofline and
    /// cache them in results/<device>/calibration.json.
    Calibrate {
        /// cpu or cuda; default: the GPU if one works, else the CPU.
        #[arg(long)]
        device: Option<String>,
        /// Results folder (a subfolder per device is created).
        #[arg(long, default_value = "results")]
        out: PathBuf,
        /// The short calibration `harness run` takes when none is cached.
        #[arg(long)]
        quick: bool,
    },
    /// Rebuild every table and chart of a results JSON without rerunning anything.
    Report {
        /// A results file written by `harness run` (results/<device>/<workload>.json).
        results: PathBuf,
        /// Where to write; default: the folder of the results file.
        #[arg(long)]
        out: Option<PathBuf>,
    },
    /// Per-row time ratios of two results files (before/after, or two devices), and a chart.
    Compare {
        a: PathBuf,
        b: PathBuf,
        /// Where to write the chart; default: the folder of B.
        #[arg(long)]
        out: Option<PathBuf>,
    },
    /// Sweep rung 09's grid of tile shapes on this device: validate and time each, record the
    /// fastest per size in results/<device>/tune-gemm.json, which rung 09 then uses there. In
    /// the simulator every shape is validated, none chosen; on the CPU there is nothing to tune.
    Tune {
        #[command(flatten)]
        common: Common,
        #[command(flatten)]
        selection: Selection,
        /// Results folder (a subfolder per device is created).
        #[arg(long, default_value = "results")]
        out: PathBuf,
        /// Only the first N configurations of the grid (the first is rung 08's shape).
        #[arg(long)]
        limit: Option<usize>,
    },
    /// Check every kernel against the reference on several shapes, tails included.
    Check {
        #[command(flatten)]
        common: Common,
        /// Default: the config's `check` shapes (`sim` shapes in the simulator).
        #[command(flatten)]
        selection: Selection,
        /// Results folder whose device subfolder's tune file rung 09 uses, as `run` does.
        #[arg(long, default_value = "results")]
        out: PathBuf,
    },
    /// What was found: GPU, driver, CUDA, NVRTC, headers, cuBLAS, or exactly why not.
    Doctor {
        /// Print only this fact of the device a run would use: `kind` (cuda or cpu) or `slug`
        /// (its results folder name), for scripts.
        #[arg(long, value_parser = ["kind", "slug"])]
        print: Option<String>,
    },
    /// NVRTC-compile every kernel (or a CUDA file) and print registers, shared memory,
    /// spills and occupancy.
    Inspect {
        /// A CUDA file to compile instead of the lab's kernels; every `__global__` entry of it
        /// is reported.
        file: Option<PathBuf>,
        /// Architectures (comma-separated).
        #[arg(long, value_delimiter = ',', default_value = "sm_80,sm_90")]
        arch: Vec<String>,
        #[arg(long, value_delimiter = ',')]
        kernels: Vec<String>,
        /// Threads per block assumed for the occupancy of a FILE's kernels.
        #[arg(long, default_value_t = 256)]
        block: u32,
        /// Exit 1 if any kernel spills registers (beyond a spill the kernel declares).
        #[arg(long)]
        deny_spills: bool,
        /// Also print each kernel's SASS (nvdisasm or cuobjdump on the NVRTC CUBIN) and a
        /// count of its FFMA/HMMA, global, shared and local loads and stores.
        #[arg(long)]
        sass: bool,
        /// Your kernel, as for `run --kernel` (repeatable): the resources of the instantiation
        /// the lab launches.
        #[arg(long = "kernel")]
        user_kernels: Vec<String>,
    },
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let result = match cli.command {
        Command::List { json } => list(json),
        Command::Run {
            common,
            selection,
            out,
            user_kernels,
        } => run(&common, &selection, &out, &user_kernels),
        Command::Shapes {
            config,
            device,
            selection,
            headline,
        } => shapes_cmd(&config, &device, &selection, headline),
        Command::Calibrate { device, out, quick } => calibrate_cmd(device, &out, quick),
        Command::Report { results, out } => report_cmd(&results, out),
        Command::Compare { a, b, out } => compare_cmd(&a, &b, out),
        Command::Tune {
            common,
            selection,
            out,
            limit,
        } => tune_cmd(&common, &selection, &out, limit),
        Command::Check {
            common,
            selection,
            out,
        } => check(&common, &selection, &out),
        Command::Doctor { print: None } => doctor(),
        Command::Doctor { print: Some(what) } => doctor_print(&what),
        Command::Inspect {
            user_kernels, arch, ..
        } if !user_kernels.is_empty() => user_kernel::load_all(&[], &user_kernels, &[])
            .map_err(anyhow::Error::from)
            .and_then(|users| user_kernel::run::inspect(&users, &arch)),
        Command::Inspect {
            file: Some(file),
            arch,
            block,
            deny_spills,
            sass,
            ..
        } => inspect_file(&file, &arch, block, deny_spills, sass),
        Command::Inspect {
            file: None,
            arch,
            kernels,
            deny_spills,
            sass,
            ..
        } => inspect(&arch, &kernels, deny_spills, sass),
    };
    match result {
        Ok(true) => ExitCode::SUCCESS,
        Ok(false) => ExitCode::from(1),
        Err(e) => {
            eprintln!("error: {e:#}");
            ExitCode::from(2)
        }
    }
}

fn load_config(path: &Option<PathBuf>) -> Result<Config> {
    Ok(match path {
        Some(p) => Config::load(p)?,
        None => Config::defaults(),
    })
}

fn open_device(common: &Common) -> Result<Box<dyn Executor>> {
    let kind = common
        .device
        .as_deref()
        .map(select::parse_kind)
        .transpose()?;
    let (dev, why) = select::open(kind)?;
    if let Some(why) = why {
        eprintln!("{why}");
    }
    eprintln!("Device: {} ({})", dev.info().name, dev.kind());
    Ok(dev)
}

fn list(json: bool) -> Result<bool> {
    let all = registry::all();
    if json {
        let infos: Vec<_> = all.iter().map(|k| k.info()).collect();
        println!("{}", serde_json::to_string_pretty(&infos)?);
        return Ok(true);
    }
    // The kernel column fits the longest id, so every summary starts in one column.
    let width = all.iter().map(|k| k.info().id.len()).max().unwrap_or(0);
    println!(
        "{:<10} {:<4} {:<width$} {:<16} {:<5} {:<4} summary",
        "workload", "rung", "kernel", "stage", "prec", "cpu"
    );
    for k in &all {
        let i = k.info();
        let rung = if i.role == Role::Rung {
            format!("{:02}", i.rung)
        } else {
            "ref".into()
        };
        let cpu = if k.cpu().is_some() { "yes" } else { "-" };
        println!(
            "{:<10} {:<4} {:<width$} {:<16} {:<5} {:<4} {}",
            i.workload.name(),
            rung,
            i.id,
            i.stage.name(),
            i.precision.name(),
            cpu,
            i.summary
        );
    }
    Ok(true)
}

fn run(common: &Common, selection: &Selection, out: &Path, user: &[String]) -> Result<bool> {
    let config = load_config(&common.config)?;
    // Nothing is computed unless its results can be saved.
    output::ensure_writable(out)?;
    let users = user_kernel::load_all(&config.kernels, user, &selection.workload)?;
    let dev = match users.is_empty() {
        true => open_device(common)?,
        false => user_kernel::run::open(common.device.as_deref())?,
    };
    let all = tune::lab_kernels(dev.info(), out);
    if !users.is_empty() && dev.kind() != DeviceKind::Cuda {
        let lab = match common.kernels.is_empty() {
            true => Vec::new(),
            false => registry::select(&all, &common.kernels)?,
        };
        let (w, sizes) = (&selection.workload, &selection.sizes);
        let device = common.device.as_deref();
        return user_kernel::run::without_gpu(&config, &users, lab, w, sizes, out, device);
    }
    let mut kernels = registry::select(&all, &common.kernels)?;
    kernels.extend(users.iter().map(|u| u as &dyn Kernel));
    let default_workloads = match users.is_empty() {
        true => config.device(dev.kind()).workloads.clone(),
        false => user_kernel::run::workloads(&users),
    };
    let workloads = select::workloads(&selection.workload, &default_workloads)?;
    let lenient = selection.workload.is_empty() && !selection.sizes.is_empty();
    let (shapes, notes) = select::shapes(
        &config,
        selection.use_(dev.kind().name()),
        &workloads,
        &selection.sizes,
        lenient,
    )?;
    for n in notes {
        println!("{n}");
    }
    let calibration = match calibrate::load_or_measure(dev.as_ref(), out) {
        Ok((c, cached)) => {
            let how = if cached {
                "cached calibration"
            } else {
                "quick calibration (run `harness calibrate` for a full one)"
            };
            eprintln!("Ceilings, {how}: {}", c.describe());
            Some(c)
        }
        Err(why) => {
            eprintln!("No measured ceilings: {why}");
            None
        }
    };
    let rows: usize = shapes
        .iter()
        .map(|(w, list)| {
            let runnable = kernels
                .iter()
                .filter(|k| k.info().workload == *w && dev.can_run(**k).is_ok());
            list.len() * runnable.count()
        })
        .sum();
    let ablation = Ablation {
        dev: dev.as_ref(),
        config: &config,
        kernels,
        shapes,
        timing: Some(config.device(dev.kind()).timing),
        keep_unrunnable: false,
    };
    let mut progress = Progress::new(rows);
    let mut results = ablation.run(|e| progress.event(e))?;
    progress.finish();
    results.calibration = calibration;
    user_kernel::run::annotate(&mut results, &users, false);
    let dir = out.join(&results.device.slug);
    merge_peers(&mut results, &dir);
    print!("{}", report::terminal(&results));
    let files = report::write_all(&results, out)?;
    println!();
    for f in files {
        println!("wrote {}", f.display());
    }
    Ok(report::failures(&results).is_empty())
}

/// Merges the peers file beside a device's results into `run`, saying what happened.
fn merge_peers(run: &mut RunResults, dir: &Path) {
    if let Some(note) = peers::merge_beside(run, dir) {
        eprintln!("{note}");
    }
}

fn shapes_cmd(
    config: &Option<PathBuf>,
    device: &str,
    selection: &Selection,
    headline: bool,
) -> Result<bool> {
    let config = load_config(config)?;
    let kind = select::parse_kind(device)?;
    let workloads = select::workloads(&selection.workload, &config.device(kind).workloads)?;
    let lenient = selection.workload.is_empty() && !selection.sizes.is_empty();
    let use_ = selection.use_(kind.name());
    let (shapes, _) = select::shapes(&config, use_, &workloads, &selection.sizes, lenient)?;
    if headline {
        for (w, list) in &shapes {
            if let Some(s) = list.iter().max_by(|a, b| a.flops().total_cmp(&b.flops())) {
                println!("{w} {}", s.label());
            }
        }
        return Ok(true);
    }
    let list: Vec<serde_json::Value> = shapes
        .iter()
        .flat_map(|(_, list)| list)
        .map(|s| serde_json::json!({ "label": s.label(), "shape": s }))
        .collect();
    println!("{}", serde_json::to_string_pretty(&list)?);
    Ok(true)
}

/// A bar on a terminal; plain lines when stderr is a file or a pipe (CI logs).
struct Progress {
    bar: Option<ProgressBar>,
}

impl Progress {
    fn new(rows: usize) -> Self {
        let bar = std::io::stderr().is_terminal().then(|| {
            let bar = ProgressBar::new(rows as u64);
            let style = ProgressStyle::with_template(
                "{spinner} [{elapsed_precise}] {bar:30} {pos}/{len} rows  {msg}",
            )
            .unwrap_or_else(|_| ProgressStyle::default_bar());
            bar.set_style(style);
            bar.enable_steady_tick(std::time::Duration::from_millis(120));
            bar
        });
        Self { bar }
    }

    fn event(&mut self, e: Event<'_>) {
        let line = match e {
            Event::Shape {
                workload,
                shape,
                kernels,
            } => {
                if let Some(bar) = &self.bar {
                    bar.set_message(format!("{workload} {}", shape.label()));
                }
                format!("{workload} {}: {kernels} kernels", shape.label())
            }
            Event::Row { row, .. } => {
                if let Some(bar) = &self.bar {
                    bar.inc(1);
                }
                format!(
                    "  {:<18} {:?}{}",
                    row.id,
                    row.status,
                    row.median_ms()
                        .map(|ms| format!(" {ms:.3} ms"))
                        .unwrap_or_default()
                )
            }
        };
        match &self.bar {
            Some(bar) => bar.println(line),
            None => eprintln!("{line}"),
        }
    }

    fn finish(&self) {
        if let Some(bar) = &self.bar {
            bar.finish_and_clear();
        }
    }
}

fn calibrate_cmd(device: Option<String>, out: &Path, quick: bool) -> Result<bool> {
    let common = Common {
        config: None,
        device,
        kernels: Vec::new(),
    };
    output::ensure_writable(out)?;
    let dev = open_device(&common)?;
    eprintln!(
        "Measuring ceilings{}...",
        if quick { " (quick)" } else { "" }
    );
    let c = calibrate::measure(dev.as_ref(), quick)?;
    let path = calibrate::path(out, dev.info());
    c.write(&path)?;
    println!("{}", c.describe());
    for note in &c.notes {
        println!("  {note}");
    }
    println!("wrote {}", path.display());
    Ok(true)
}

/// The calibration cached beside a results file, if it belongs to that file's device.
fn calibration_beside(file: &Path, run: &RunResults) -> Option<Calibration> {
    let dir = file.parent()?;
    Calibration::read(&dir.join("calibration.json"))
        .ok()
        .filter(|c| c.matches(&run.device))
}

fn report_cmd(file: &Path, out: Option<PathBuf>) -> Result<bool> {
    let mut run = RunResults::read(file)?;
    if run.calibration.is_none() {
        run.calibration = calibration_beside(file, &run);
    }
    merge_peers(&mut run, &parent_dir(file));
    let dir = out.unwrap_or_else(|| parent_dir(file));
    output::ensure_writable(&dir)?;
    print!("{}", report::terminal(&run));
    let mut files = report::write_tables(&run, &dir, false)?;
    files.extend(report::charts::write_all(&run, &dir)?);
    println!();
    for f in files {
        println!("wrote {}", f.display());
    }
    Ok(true)
}

fn parent_dir(file: &Path) -> PathBuf {
    match file.parent() {
        Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
        _ => PathBuf::from("."),
    }
}

fn compare_cmd(a: &Path, b: &Path, out: Option<PathBuf>) -> Result<bool> {
    let ra = RunResults::read(a)?;
    let rb = RunResults::read(b)?;
    let ratios = compare::ratios(&ra, &rb);
    print!("{}", compare::text(&ra, &rb, &ratios));
    let dir = out.unwrap_or_else(|| parent_dir(b));
    for f in compare::write_charts(&ra, &rb, &ratios, &dir)? {
        println!("wrote {}", f.display());
    }
    Ok(true)
}

fn tune_cmd(common: &Common, sel: &Selection, out: &Path, limit: Option<usize>) -> Result<bool> {
    if !common.kernels.is_empty() {
        anyhow::bail!("tune sweeps rung 09 (gemm-tuned) alone: --kernels does not apply");
    }
    let config = load_config(&common.config)?;
    let dev = open_device(common)?;
    if dev.kind() == DeviceKind::Cpu {
        println!("{}", tune::CPU_NOTE);
        return Ok(true);
    }
    output::ensure_writable(out)?;
    let workloads = select::workloads(&sel.workload, &[Workload::Gemm])?;
    if workloads != [Workload::Gemm] {
        anyhow::bail!("only the gemm workload has a rung to tune (rung 09)");
    }
    let (shapes, _) = select::shapes(
        &config,
        sel.use_(dev.kind().name()),
        &workloads,
        &sel.sizes,
        false,
    )?;
    let rung = restrict_unroll::GemmTuned::default();
    let shapes: Vec<Shape> = shapes
        .into_iter()
        .flat_map(|(_, l)| l)
        .filter(|s| rung.supports(s).is_ok())
        .collect();
    if shapes.is_empty() {
        anyhow::bail!("no shape rung 09 supports (it needs N % 4 == 0 and K % 4 == 0)");
    }
    let t = tune::sweep(dev.as_ref(), &config, shapes, limit, |s, c, r| {
        let time = r
            .median_ms
            .map_or(String::new(), |ms| format!(" {ms:.3} ms"));
        eprintln!("{} {c}: {:?}{time}", s.label(), r.status);
    })?;
    print!("{}", t.summary());
    println!("wrote {}", t.save(out)?.display());
    Ok(t.sizes
        .iter()
        .all(|s| s.configs.iter().all(|c| c.status == Status::Passed)))
}

fn check(common: &Common, selection: &Selection, out: &Path) -> Result<bool> {
    let config = load_config(&common.config)?;
    let dev = open_device(common)?;
    let all = tune::lab_kernels(dev.info(), out);
    let kernels = registry::select(&all, &common.kernels)?;
    // Every workload with kernels to check, unless --workload says otherwise.
    let with_kernels: Vec<Workload> = Workload::ALL
        .into_iter()
        .filter(|w| kernels.iter().any(|k| k.info().workload == *w))
        .collect();
    let workloads = select::workloads(&selection.workload, &with_kernels)?;
    // The simulator is slow: it checks its own (small, awkward) shapes.
    let use_ = if dev.kind() == DeviceKind::Sim {
        "sim"
    } else {
        selection.use_("check")
    };
    let lenient = selection.workload.is_empty() && !selection.sizes.is_empty();
    let (shapes, notes) = select::shapes(&config, use_, &workloads, &selection.sizes, lenient)?;
    for n in notes {
        println!("{n}");
    }
    let mut ok = true;
    let (mut passed, mut failed, mut skipped) = (0, 0, 0);
    let mut failures = Vec::new();
    for (w, shapes) in shapes {
        let ks: Vec<&dyn Kernel> = kernels
            .iter()
            .copied()
            .filter(|k| k.info().workload == w)
            .collect();
        if ks.is_empty() {
            continue;
        }
        let ablation = Ablation {
            dev: dev.as_ref(),
            config: &config,
            kernels: ks,
            shapes: vec![(w, shapes)],
            timing: None,
            keep_unrunnable: true,
        };
        ablation.run(|e| {
            if let Event::Row { shape, row } = e {
                let err = row
                    .check
                    .map(|c| format!("rel error {:.1e} (bound {:.0e})", c.rel_error, c.tolerance));
                let line = match row.status {
                    Status::Passed => {
                        passed += 1;
                        format!(
                            "PASS  {:<18} {:<22} {}",
                            row.id,
                            shape.label(),
                            err.unwrap_or_default()
                        )
                    }
                    Status::Unsupported => {
                        skipped += 1;
                        format!(
                            "SKIP  {:<18} {:<22} {}",
                            row.id,
                            shape.label(),
                            row.reason.as_deref().unwrap_or("")
                        )
                    }
                    Status::Failed | Status::Error => {
                        failed += 1;
                        ok = false;
                        let line = format!(
                            "FAIL  {:<18} {:<22} {}",
                            row.id,
                            shape.label(),
                            row.reason.as_deref().unwrap_or("")
                        );
                        failures.push(line.clone());
                        line
                    }
                };
                println!("{line}");
            }
        })?;
    }
    println!("{passed} passed, {failed} failed, {skipped} skipped");
    if !failures.is_empty() {
        println!("\nFailures:\n{}", failures.join("\n"));
    }
    Ok(ok)
}

/// One fact of the device a run would use, for scripts.
fn doctor_print(what: &str) -> Result<bool> {
    let (dev, _) = select::open(None)?;
    match what {
        "kind" => println!("{}", dev.kind()),
        _ => println!("{}", dev.info().slug),
    }
    Ok(true)
}

fn doctor() -> Result<bool> {
    let d = discovery();
    println!(
        "CUDA folders searched: {}",
        if d.searched.is_empty() {
            "none exist".into()
        } else {
            d.searched
                .iter()
                .map(|p| p.display().to_string())
                .collect::<Vec<_>>()
                .join(", ")
        }
    );
    println!("driver (libcuda):   {}", d.driver.describe());
    if d.driver.is_found() {
        use kernel::cuda::device::{MIN_DRIVER_CUDA, driver_cuda_version, fmt_cuda};
        match driver_cuda_version() {
            Ok(v) => println!(
                "driver supports:    CUDA {} ({}; the lab needs CUDA {}, driver R580+)",
                fmt_cuda(v),
                if v >= MIN_DRIVER_CUDA {
                    "ok"
                } else {
                    "TOO OLD"
                },
                fmt_cuda(MIN_DRIVER_CUDA)
            ),
            Err(e) => println!("driver supports:    unknown: {e}"),
        }
    }
    println!("NVRTC:              {}", d.nvrtc.describe());
    println!("NVRTC builtins:     {}", d.nvrtc_builtins.describe());
    match nvrtc::version() {
        Ok((a, b)) => println!("NVRTC version:      {a}.{b}"),
        Err(e) => println!("NVRTC version:      {e}"),
    }
    println!("CUDA headers:       {}", d.headers.describe());
    println!("cuBLAS:             {}", d.cublas.describe());
    match CudaDevice::open() {
        Ok(dev) => {
            let i = dev.info();
            println!(
                "GPU:                {} (compute capability {}, {})",
                i.name,
                i.compute_capability.as_deref().unwrap_or("?"),
                dev.arch()
            );
            println!("SMs:                {}", i.units);
            if let Some((free, total)) = dev.memory() {
                println!(
                    "memory:             {:.1} GiB free of {:.1} GiB",
                    free as f64 / (1u64 << 30) as f64,
                    total as f64 / (1u64 << 30) as f64
                );
            }
            println!("L2:                 {} MiB", i.l2_bytes.unwrap_or(0) >> 20);
            println!("driver version:     {}", i.driver);
            println!("CUDA:               {}", i.cuda.as_deref().unwrap_or("?"));
            match dev.cublas_status() {
                Ok(()) => println!("cuBLAS handle:      ok"),
                Err(why) => println!("cuBLAS handle:      unavailable: {why}"),
            }
            println!("\n`cargo bench -p harness` and `harness run` will use this GPU.");
        }
        Err(e) => {
            println!("GPU:                none: {e}");
            println!("\n`cargo bench -p harness` and `harness run` will use the CPU.");
        }
    }
    if !d.nvrtc.is_found() {
        println!(
            "Without NVRTC, `harness inspect` cannot compile kernels: run tools/install-cuda-tools.sh."
        );
    }
    Ok(true)
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

fn inspect(archs: &[String], ids: &[String], deny_spills: bool, sass: bool) -> Result<bool> {
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
) -> Result<bool> {
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
