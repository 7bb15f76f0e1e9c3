//! `harness run`: the ablation of the config (or the flags): validate and time every kernel,
//! write the tables and charts.

use super::{Common, Outcome, Selection, load_config, open_device};
use crate::console::Progress;
use crate::results::RunResults;
use crate::run::Ablation;
use crate::{calibrate, output, peers, report, select, tune, user_kernel};
use kernel::{DeviceKind, Kernel};
use std::path::{Path, PathBuf};

#[derive(clap::Args)]
pub struct Args {
    #[command(flatten)]
    pub common: Common,
    #[command(flatten)]
    pub selection: Selection,
    /// Results folder (a subfolder per device is created).
    #[arg(long, default_value = "results")]
    pub out: PathBuf,
    /// Your own kernel as a row, `FILE.cu:ENTRY,block=256,grid=tile:64x64[,...]`
    /// (repeatable; see docs/your-kernel.md). Without a GPU it runs in the simulator.
    #[arg(long = "kernel")]
    pub user_kernels: Vec<String>,
}

pub fn run(args: &Args) -> Outcome {
    let Args {
        common,
        selection,
        out,
        user_kernels: user,
    } = args;
    let config = load_config(&common.config)?;
    // Nothing is computed unless its results can be saved.
    output::ensure_writable(out)?;
    let specs = user_kernel::specs(&config.kernels, user)?;
    let dev = match specs.is_empty() {
        true => open_device(common.device.as_deref())?,
        false => user_kernel::run::open(common.device.as_deref())?,
    };
    // Without a GPU, the user's kernels run in the simulator: compile-checked for it too.
    let in_sim = dev.kind() != DeviceKind::Cuda;
    let users = user_kernel::load_all(&specs, &selection.workload, in_sim)?;
    let all = tune::lab_kernels(dev.info(), out);
    let named = !common.kernels.is_empty();
    let lab = user_kernel::run::lab_kernels(&all, &common.kernels, !users.is_empty())?;
    // The simulator checks, never times: its own table, without speed columns.
    if dev.kind() == DeviceKind::Sim || (!users.is_empty() && in_sim) {
        let (w, sizes) = (&selection.workload, &selection.sizes);
        let device = common.device.as_deref();
        return user_kernel::run::in_simulator(&config, &users, lab, named, w, sizes, out, device);
    }
    let mut kernels = lab;
    kernels.extend(users.iter().map(|u| u as &dyn Kernel));
    let default_workloads = match users.is_empty() {
        true => config.device(dev.kind()).workloads.clone(),
        false => user_kernel::run::workloads(&users),
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
    user_kernel::run::annotate(&mut results, &[], &users, false);
    let dir = out.join(&results.device.slug);
    merge_peers(&mut results, &dir);
    print!("{}", report::terminal(&results));
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
        println!("\n{} rows you asked for could not run:", unrun.len());
        for u in &unrun {
            println!("  {u}");
        }
    }
    let files = report::write_all(&results, out)?;
    println!();
    for f in files {
        println!("wrote {}", f.display());
    }
    Ok(report::failures(&results).is_empty() && unrun.is_empty())
}

/// Merges the peers file beside a device's results into `run`, saying what happened.
pub fn merge_peers(run: &mut RunResults, dir: &Path) {
    if let Some(note) = peers::merge_beside(run, dir) {
        eprintln!("{note}");
    }
}
