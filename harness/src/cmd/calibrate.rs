//! `harness calibrate`: measure the device's ceilings (bandwidth, FP32, tensor rates) for the
//! roofline and cache them.

use super::{Outcome, open_device};
use crate::{calibrate, output};
use std::path::PathBuf;

#[derive(clap::Args)]
pub struct Args {
    /// cpu or cuda; default: the GPU if one works, else the CPU.
    #[arg(long)]
    pub device: Option<String>,
    /// Results folder (a subfolder per device is created).
    #[arg(long, default_value = "results")]
    pub out: PathBuf,
    /// The short calibration `harness run` takes when none is cached.
    #[arg(long)]
    pub quick: bool,
}

pub fn run(args: &Args) -> Outcome {
    output::ensure_writable(&args.out)?;
    let dev = open_device(args.device.as_deref())?;
    eprintln!(
        "Measuring ceilings{}...",
        if args.quick { " (quick)" } else { "" }
    );
    let c = calibrate::measure(dev.as_ref(), args.quick)?;
    let path = calibrate::path(&args.out, dev.info());
    c.write(&path)?;
    println!("{}", c.describe());
    for note in &c.notes {
        println!("  {note}");
    }
    println!("wrote {}", path.display());
    Ok(true)
}
