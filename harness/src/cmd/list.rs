//! `harness list`: every kernel with its workload, rung, stage, precision and summary.

use super::Outcome;
use crate::registry;
use kernel::Role;

#[derive(clap::Args)]
pub struct Args {
    /// As JSON, each kernel with its lineage (parent, idea, bound).
    #[arg(long)]
    pub json: bool,
    /// Only the ids of the kernels whose rows could hang or fault the process on a GPU (GPU-only
    /// rungs, rungs compiled for sm_90a alone), one a line with the reason: on a GPU they run
    /// in a child process, and `tools/gpu-check.sh` runs each alone first.
    #[arg(long, conflicts_with = "json")]
    pub risky: bool,
}

pub fn run(args: &Args) -> Outcome {
    let all = registry::all();
    if args.risky {
        for k in &all {
            let shape = k.info().workload.probe_shape();
            if let Some(why) = crate::isolate::risk(k.as_ref(), &shape) {
                println!("{}\t{why}", k.info().id);
            }
        }
        return Ok(true);
    }
    if args.json {
        let infos: Vec<_> = all
            .iter()
            .map(|k| {
                let mut v = serde_json::to_value(k.info())?;
                v["lineage"] = serde_json::to_value(k.lineage())?;
                Ok(v)
            })
            .collect::<serde_json::Result<_>>()?;
        println!(
            "{}",
            serde_json::to_string_pretty(&serde_json::Value::Array(infos))?
        );
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
        let cpu = if k.has_cpu() { "yes" } else { "-" };
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
