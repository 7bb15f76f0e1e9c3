//! `harness tune`: sweep rung 09's grid of tile shapes on this device, validate and time each,
//! and record the fastest per size in target/lab/tune/<device>/, which rung 09 then uses there.

use super::{Common, Outcome, Selection, load_config, open_device};
use crate::results::Status;
use crate::runs::LabDir;
use crate::{select, tune};
use anyhow::bail;
use kernel::{DeviceKind, Kernel, Shape, Workload};

#[derive(clap::Args)]
pub struct Args {
    #[command(flatten)]
    pub common: Common,
    #[command(flatten)]
    pub selection: Selection,
    /// Only the first N configurations of the grid (the first is rung 08's shape).
    #[arg(long, value_parser = clap::builder::TypedValueParser::map(clap::value_parser!(u32).range(1..), |n| n as usize))]
    pub limit: Option<usize>,
}

pub fn run(args: &Args) -> Outcome {
    let Args {
        common,
        selection: sel,
        limit,
    } = args;
    if !common.kernels.is_empty() {
        bail!("tune sweeps rung 09 (gemm-tuned) alone: --kernels does not apply");
    }
    let config = load_config(&common.config)?;
    let dev = open_device(common.device.as_deref(), common.sim_blocks())?;
    if dev.kind() == DeviceKind::Cpu {
        println!("{}", tune::CPU_NOTE);
        return Ok(true);
    }
    let lab = LabDir::locate();
    let workloads = select::workloads(&sel.workload, &[Workload::Gemm])?;
    if workloads != [Workload::Gemm] {
        bail!("only the gemm workload has a rung to tune (rung 09)");
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
        bail!("no shape rung 09 supports (it needs N % 4 == 0 and K % 4 == 0)");
    }
    let t = tune::sweep(dev.as_ref(), &config, shapes, *limit, |s, c, r| {
        let time = r
            .median_ms
            .map_or(String::new(), |ms| format!(" {ms:.3} ms"));
        eprintln!("{} {c}: {:?}{time}", s.label(), r.status);
    })?;
    print!("{}", t.summary());
    println!("wrote {}", t.save(&lab)?.display());
    Ok(t.sizes
        .iter()
        .all(|s| s.configs.iter().all(|c| c.status == Status::Passed)))
}
