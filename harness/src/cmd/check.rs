//! `harness check`: every kernel against the reference on several shapes, tails included.

use super::{Common, Outcome, Selection, load_config, open_device};
use crate::report::table::{self, status_word};
use crate::results::Status;
use crate::run::{Ablation, Event};
use crate::runs::LabDir;
use crate::{registry, select, tune, user_kernel};
use kernel::{DeviceKind, Kernel};

#[derive(clap::Args)]
pub struct Args {
    #[command(flatten)]
    pub common: Common,
    /// Default: the config's `check` shapes (`sim` shapes in the simulator).
    #[command(flatten)]
    pub selection: Selection,
    #[command(flatten)]
    pub isolation: crate::isolate::IsolationArgs,
    /// Your own kernel, as for `run --kernel` (repeatable), checked on the same shapes, beside
    /// the rungs `--kernels` names (none without it).
    #[arg(long = "kernel")]
    pub user_kernels: Vec<String>,
}

pub fn run(args: &Args) -> Outcome {
    let Args {
        common,
        selection,
        isolation,
        user_kernels,
    } = args;
    let config = load_config(&common.config)?;
    // The configuration's own kernels ([[kernel]]) and --kernel's.
    let specs = user_kernel::specs(&config.kernels, user_kernels)?;
    let cpu_asked = common
        .device
        .as_deref()
        .is_some_and(|d| crate::select::parse_kind(d).ok() == Some(DeviceKind::Cpu));
    let dev = match specs.is_empty() || (cpu_asked && user_kernels.is_empty()) {
        true => open_device(common.device.as_deref(), common.sim_blocks())?,
        // Your kernel is CUDA: checked on the GPU, or without one in the simulator, as `run`
        // runs it; never on the CPU, which has only the lab's ports.
        false => match user_kernel::run::open(common.device.as_deref(), common.sim_blocks())? {
            cpu if cpu.kind() == DeviceKind::Cpu => {
                println!(
                    "No GPU (`harness doctor` says why): {}",
                    user_kernel::run::sim_line()
                );
                crate::select::open(Some(DeviceKind::Sim), None)?.0
            }
            dev => dev,
        },
    };
    // Asked for the CPU, a configuration's kernels are said to be left out: the CPU runs the
    // lab's CPU ports alone.
    let users = match dev.kind() {
        DeviceKind::Cpu if !specs.is_empty() => {
            println!(
                "{} user kernel(s) ([[kernel]] sections of {}) are not checked on the CPU, which \
                 runs the lab's CPU ports only; without --device, the GPU checks them, or the \
                 simulator where there is none",
                specs.len(),
                config.source,
            );
            Vec::new()
        }
        _ => user_kernel::load_all(
            &specs,
            &selection.workload,
            &selection.sizes,
            Some(dev.info()),
        )?,
    };
    let user_ids = users.iter().map(|u| u.id().to_string()).collect();
    isolation.apply(
        dev.kind(),
        common.config.clone(),
        user_kernels,
        user_ids,
        common.sim_blocks(),
    );
    let all = tune::lab_kernels(dev.info(), &LabDir::locate());
    // With kernels of yours, as in a run: the rungs --kernels names (none unless it names some).
    let mut kernels = if users.is_empty() {
        registry::select(&all, &common.kernels)?
    } else {
        user_kernel::run::lab_kernels(&all, &common.kernels, &users)?
    };
    kernels.extend(users.iter().map(|u| u as &dyn Kernel));
    // Every workload with kernels to check, unless --workload says otherwise.
    let workloads = select::workloads(&selection.workload, &select::workloads_of(&kernels))?;
    if !common.kernels.is_empty() {
        select::kernels_in(&kernels, &workloads)?;
    }
    // The simulator is slow: it checks its own (small, awkward) shapes.
    let use_ = if dev.kind() == DeviceKind::Sim {
        "sim"
    } else {
        selection.use_("check")
    };
    let (shapes, notes) = select::shapes(
        &config,
        use_,
        &workloads,
        &selection.sizes,
        selection.lenient(),
    )?;
    for n in notes {
        println!("{n}");
    }
    let mut ok = true;
    let (mut passed, mut failed, mut skipped) = (0, 0, 0);
    // Your kernels that ran (passed or failed) at some shape: one skipped at every shape was
    // checked nowhere, which is no pass.
    let mut ran: Vec<String> = Vec::new();
    let mut failures = Vec::new();
    // Columns as wide as the longest id and shape label, so every reason starts in one column.
    let id_width = kernels.iter().map(|k| k.info().id.len()).max().unwrap_or(0);
    let shape_width = shapes
        .iter()
        .flat_map(|(_, list)| list)
        .map(|s| s.label().len())
        .max()
        .unwrap_or(0);
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
        let mut results = ablation.run(|e| {
            if let Event::Row { shape, row } = e {
                if row.status != Status::Unsupported && !ran.contains(&row.id) {
                    ran.push(row.id.clone());
                }
                let detail = match row.status {
                    Status::Passed => {
                        passed += 1;
                        let sample = table::sample_note(row)
                            .map(|n| format!("; {n}"))
                            .unwrap_or_default();
                        row.check
                            .map(|c| match c.tolerance {
                                0.0 => format!("exact{sample}"),
                                _ => format!(
                                    "rel error {:.1e} (bound {:.0e}){sample}",
                                    c.rel_error, c.tolerance
                                ),
                            })
                            .unwrap_or_default()
                    }
                    Status::Unsupported => {
                        skipped += 1;
                        row.reason.clone().unwrap_or_default()
                    }
                    Status::Failed | Status::Error => {
                        failed += 1;
                        ok = false;
                        let reason = row.reason.as_deref().unwrap_or_default();
                        match users.iter().find(|k| k.id() == row.id) {
                            Some(k) => user_kernel::run::as_written(k, reason),
                            None => reason.to_string(),
                        }
                    }
                };
                let line = format!(
                    "{:<5} {:<id_width$}  {:<shape_width$}  {detail}",
                    status_word(row.status),
                    row.id,
                    shape.label(),
                );
                println!("{}", line.trim_end());
            }
        })?;
        // The failures again, with what `run` says of your kernels' (a tail, an input not
        // given, an output to clear).
        // In the simulator, a failure that a grid with x and y swapped would not have.
        let swapped = match dev.kind() {
            DeviceKind::Sim => user_kernel::run::swapped_grids(
                common.sim_blocks(),
                &config,
                &users,
                &results,
                true,
            ),
            _ => Vec::new(),
        };
        user_kernel::run::annotate(&mut results, &[], &users, false, &swapped);
        for s in results.workloads.iter().flat_map(|w| &w.shapes) {
            for row in s.rows.iter().filter(|r| r.failed()) {
                failures.push(format!(
                    "{:<5} {:<id_width$}  {:<shape_width$}  {}",
                    status_word(row.status),
                    row.id,
                    s.label,
                    row.reason.as_deref().unwrap_or_default()
                ));
            }
        }
    }
    println!("{passed} passed, {failed} failed, {skipped} skipped");
    if !failures.is_empty() {
        println!("\nFailures:\n{}", failures.join("\n"));
    }
    let unchecked: Vec<&str> = users
        .iter()
        .map(|u| u.id())
        .filter(|id| !ran.iter().any(|r| r == id))
        .collect();
    if !unchecked.is_empty() {
        println!(
            "\n{} you asked for ran at no shape, so nothing of {} was checked (the reasons \
             are on its lines above):",
            table::count(unchecked.len(), "kernel"),
            if unchecked.len() == 1 { "it" } else { "them" },
        );
        for id in &unchecked {
            println!("  {id}");
        }
    }
    Ok(ok && unchecked.is_empty())
}
