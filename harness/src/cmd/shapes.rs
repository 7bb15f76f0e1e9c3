//! `harness shapes`: the shapes a run would use, as JSON (what `tools/torch_peers.py
//! --shapes` reads), or each workload's headline shape.

use super::{Outcome, Selection, load_config};
use crate::select;
use std::path::PathBuf;

#[derive(clap::Args)]
pub struct Args {
    /// TOML file overriding harness/ablation.toml.
    #[arg(long)]
    pub config: Option<PathBuf>,
    /// Whose shapes: cpu, cuda or sim; default: the device a run would use (the GPU if one
    /// works, else the CPU).
    #[arg(long)]
    pub device: Option<String>,
    #[command(flatten)]
    pub selection: Selection,
    /// Only each workload's headline shape (the largest), one label per line.
    #[arg(long)]
    pub headline: bool,
}

pub fn run(args: &Args) -> Outcome {
    let config = load_config(&args.config)?;
    let kind = match &args.device {
        Some(d) => select::parse_kind(d)?,
        None => select::open(None, None)?.0.kind(),
    };
    let sel = &args.selection;
    let workloads = select::workloads(&sel.workload, &config.device(kind).workloads)?;
    let use_ = sel.use_(kind.name());
    let (shapes, _) = select::shapes(&config, use_, &workloads, &sel.sizes, sel.lenient())?;
    if args.headline {
        for (w, list) in &shapes {
            if let Some(s) = list.iter().max_by(|a, b| a.cmp_size(b)) {
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
