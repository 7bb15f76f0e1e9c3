//! `harness run`: the ablation of the config (or the flags): validate and time every kernel,
//! then write a new run folder with the results, tables and charts.

use super::{Common, Outcome, Selection, load_config, open_device};
use crate::console::{Progress, Verbosity, print_run_folder};
use crate::results::RunResults;
use crate::run::Ablation;
use crate::runs::LabDir;
use crate::user_kernel::record::KernelRecord;
use crate::{calibrate, peers, report, runs, select, tune, user_kernel};
use kernel::{DeviceKind, Kernel};
use std::path::{Path, PathBuf};

#[derive(clap::Args)]
pub struct Args {
    #[command(flatten)]
    pub common: Common,
    #[command(flatten)]
    pub selection: Selection,
    /// The run folder to create (it must not exist, or be empty); default: a new folder under
    /// target/lab/runs/, named by date, device and workloads.
    #[arg(long)]
    pub out: Option<PathBuf>,
    /// PyTorch peer rows to merge (written by tools/torch_peers.py); default: the device's
    /// file in target/lab/peers/, if there is one.
    #[arg(long)]
    pub peers: Option<PathBuf>,
    /// Your own kernel as a row, `FILE.cu:ENTRY,block=256,grid=tile:64x64[,...]`
    /// (repeatable; see docs/your-kernel.md). Without a GPU it runs in the simulator.
    #[arg(long = "kernel")]
    pub user_kernels: Vec<String>,
    #[command(flatten)]
    pub isolation: crate::isolate::IsolationArgs,
    /// Print only the device lines (which device, why not a GPU, its ceilings), the run folder,
    /// its page and the rows that failed.
    #[arg(long, short, conflicts_with = "verbose")]
    pub quiet: bool,
    /// Also print a line per row as it finishes, and every file of the run folder.
    #[arg(long, short)]
    pub verbose: bool,
}

pub fn run(args: &Args) -> Outcome {
    let Args {
        common,
        selection,
        out,
        peers,
        user_kernels: user,
        isolation,
        quiet,
        verbose,
    } = args;
    let verbosity = Verbosity::from_flags(*quiet, *verbose);
    let config = load_config(&common.config)?;
    let lab_dir = LabDir::locate();
    // Nothing is computed unless its results can be saved, nor before a peers file asked for
    // by name is known to read.
    runs::check_target(out.as_deref(), &lab_dir)?;
    if let Some(f) = peers {
        peers::PeerFile::read(f)?;
    }
    let specs = user_kernel::specs(&config.kernels, user)?;
    let dev = match specs.is_empty() {
        true => open_device(common.device.as_deref(), common.sim_blocks())?,
        false => user_kernel::run::open(common.device.as_deref(), common.sim_blocks())?,
    };
    // Without a GPU, the user's kernels run in the simulator: compile-checked for it too.
    let in_sim = dev.kind() != DeviceKind::Cuda;
    let users = user_kernel::load_all(
        &specs,
        &selection.workload,
        &selection.sizes,
        Some(dev.info()),
    )?;
    let user_ids = users.iter().map(|u| u.id().to_string()).collect();
    isolation.apply(
        dev.kind(),
        common.config.clone(),
        user,
        user_ids,
        common.sim_blocks(),
    );
    let all = tune::lab_kernels(dev.info(), &lab_dir);
    let named = !common.kernels.is_empty();
    let lab = user_kernel::run::lab_kernels(&all, &common.kernels, &users)?;
    // The simulator checks, never times: its table has no speed columns.
    if dev.kind() == DeviceKind::Sim || (!users.is_empty() && in_sim) {
        let (w, sizes) = (&selection.workload, &selection.sizes);
        let device = common.device.as_deref();
        if peers.is_some() {
            println!("--peers: the simulator times nothing, so no peer rows join its run");
        }
        return user_kernel::run::in_simulator(
            &config,
            &users,
            lab,
            named,
            w,
            sizes,
            out.as_deref(),
            device,
            common.sim_blocks(),
            verbosity,
        );
    }
    let mut kernels = lab;
    kernels.extend(users.iter().map(|u| u as &dyn Kernel));
    let default_workloads = if !users.is_empty() {
        user_kernel::run::workloads(&users)
    } else if named {
        select::workloads_of(&kernels)
    } else {
        config.device(dev.kind()).workloads.clone()
    };
    let workloads = select::workloads(&selection.workload, &default_workloads)?;
    if named {
        let lab = &kernels[..kernels.len() - users.len()];
        select::kernels_in(lab, &workloads)?;
    }
    let (shapes, notes) = select::shapes(
        &config,
        selection.use_(dev.kind().name()),
        &workloads,
        &selection.sizes,
        selection.lenient(),
    )?;
    for n in notes {
        println!("{n}");
    }
    let calibration = ceilings(dev.as_ref(), &lab_dir);
    let rows: usize = shapes
        .iter()
        .map(|(w, list)| {
            let runnable = kernels
                .iter()
                .filter(|k| k.info().workload == *w && dev.can_run(**k).is_ok());
            list.len() * runnable.count()
        })
        .sum();
    let planned = runs::Checkpoint::planned(&shapes);
    let slug = &dev.info().slug;
    // The kept results carry the peers' rows too (a file that does not read is said at the end).
    let peer_rows =
        peers_file(peers.as_deref(), &lab_dir, slug).and_then(|f| peers::PeerFile::read(&f).ok());
    let checkpoint = runs::Checkpoint::new(
        out.as_deref(),
        &lab_dir,
        slug,
        &planned,
        calibration.clone(),
    )
    .with_peers(peer_rows);
    checkpoint.announce(verbosity);
    let ablation = Ablation {
        dev: dev.as_ref(),
        config: &config,
        kernels,
        shapes,
        timing: Some(config.device(dev.kind()).timing),
        keep_unrunnable: false,
    };
    let mut progress = Progress::new(rows, verbosity);
    let mut results = checkpoint.run(&ablation, |e| progress.event(e))?;
    progress.finish();
    results.calibration = calibration;
    results.networks = crate::breakdown::measure(dev.as_ref(), &results, config.seed);
    user_kernel::run::annotate(&mut results, &[], &users, false, &[]);
    results.user_kernels = users.iter().map(KernelRecord::of).collect();
    merge_peers(&mut results, peers.as_deref(), &lab_dir);
    match verbosity {
        Verbosity::Quiet => print!("{}", report::failures_text(&results)),
        _ => print!("{}", report::terminal(&results)),
    }
    // Rows asked for by name (the user's kernels, `--kernels`) that could not run fail the
    // run as a failed check does.
    let mut wanted: Vec<String> = users.iter().map(|u| u.id().to_string()).collect();
    if named {
        wanted.extend(common.kernels.iter().cloned());
    }
    let unrun: Vec<String> = user_kernel::run::did_not_pass(&results, &wanted)
        .into_iter()
        .filter(|l| l.contains(": could not run: "))
        .collect();
    if !unrun.is_empty() {
        println!(
            "
{} you asked for could not run:",
            report::table::count(unrun.len(), "row")
        );
        for u in &unrun {
            println!("  {u}");
        }
    }
    let dir = runs::save(&results, out.as_deref(), &lab_dir)?;
    checkpoint.finish();
    print_run_folder(&dir, verbosity);
    Ok(report::failures(&results).is_empty() && unrun.is_empty())
}

/// The device's ceilings for the roofline: the cached calibration, else a quick one; says
/// which on stderr. `None` where the device has none (the simulator).
pub fn ceilings(dev: &dyn kernel::Executor, lab: &LabDir) -> Option<calibrate::Calibration> {
    if dev.kind() == DeviceKind::Sim {
        return None;
    }
    match calibrate::load_or_measure(dev, lab) {
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
    }
}

/// Merges peer rows into `run`: from `file`, else from the device's file in the lab folder if
/// there is one, saying what happened.
pub fn merge_peers(run: &mut RunResults, file: Option<&Path>, lab: &LabDir) {
    if let Some(path) = peers_file(file, lab, &run.device.slug) {
        eprintln!("{}", peers::merge_file(run, &path));
    }
}

/// The peers file a run merges: the one named, else the lab's for this device if there is one.
fn peers_file(file: Option<&Path>, lab: &LabDir, slug: &str) -> Option<PathBuf> {
    let default = lab.peers(slug);
    match file {
        Some(f) => Some(f.to_path_buf()),
        None => default.is_file().then_some(default),
    }
}
