//! `harness calibrate`: measure the device's ceilings (bandwidth, FP32, tensor rates) for the
//! roofline and cache them in target/lab/calibration/, where runs on this device find them.

use super::{Outcome, open_device};
use crate::calibrate;
use crate::runs::LabDir;

#[derive(clap::Args)]
pub struct Args {
    /// cpu or cuda; default: the GPU if one works, else the CPU.
    #[arg(long)]
    pub device: Option<String>,
    /// The short calibration `harness run` takes when none is cached.
    #[arg(long)]
    pub quick: bool,
}

pub fn run(args: &Args) -> Outcome {
    let lab = LabDir::locate();
    let dev = open_device(args.device.as_deref(), None)?;
    if dev.kind() == kernel::DeviceKind::Sim {
        anyhow::bail!(
            "--device sim: the simulator checks kernels and times nothing, so it has no ceilings \
             to measure; calibrate the CPU (--device cpu) or a GPU (--device cuda)"
        );
    }
    eprintln!(
        "Measuring ceilings{}...",
        if args.quick { " (quick)" } else { "" }
    );
    let c = calibrate::measure(dev.as_ref(), args.quick)?;
    let path = calibrate::path(&lab, dev.info());
    c.write(&path)?;
    println!("{}", c.describe());
    for note in &c.notes {
        println!("  {note}");
    }
    println!("wrote {}", path.display());
    Ok(true)
}
