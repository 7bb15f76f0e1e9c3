//! One module per `harness` subcommand, each with its arguments and its body, as cargo and
//! ripgrep lay theirs out; `main.rs` only parses and dispatches. What commands share lives
//! here: the device, workload and shape options, and opening the device they name.

pub mod calibrate;
pub mod check;
pub mod compare;
pub mod docs;
pub mod doctor;
pub mod explain;
pub mod inspect;
pub mod list;
pub mod publish;
pub mod report;
pub mod run;
pub mod shapes;
pub mod tune;

use crate::config::Config;
use crate::select;
use anyhow::Result;
use kernel::Executor;
use std::path::PathBuf;

/// What a command returns: `Ok(true)` exits 0, `Ok(false)` (something checked failed) exits
/// 1, an error exits 2 with its message.
pub type Outcome = Result<bool>;

/// The device and kernel options of the commands that run kernels.
#[derive(clap::Args, Clone, Default)]
pub struct Common {
    /// TOML file overriding harness/ablation.toml.
    #[arg(long)]
    pub config: Option<PathBuf>,
    /// cpu, cuda or sim; default: the GPU if one works, else the CPU (the simulator for kernels
    /// of yours, which are CUDA).
    #[arg(long)]
    pub device: Option<String>,
    /// Only these kernels (comma-separated ids, see `harness list`); without --workload, only
    /// their workloads.
    #[arg(long, value_delimiter = ',')]
    pub kernels: Vec<String>,
    /// In the simulator, run at most N blocks of each launch (the grid's corners, where the
    /// tails are, and random others) and check only the outputs they write: real shapes in
    /// seconds. Plans of several launches, or with atomics, are skipped when sampled.
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..))]
    pub sim_blocks: Option<u32>,
}

impl Common {
    /// `--sim-blocks` as a count.
    pub fn sim_blocks(&self) -> Option<usize> {
        self.sim_blocks.map(|n| n as usize)
    }
}

/// Which workloads and shapes.
#[derive(clap::Args, Clone, Default)]
pub struct Selection {
    /// Workloads (comma-separated); default from the config.
    #[arg(long, value_delimiter = ',')]
    pub workload: Vec<String>,
    /// Shapes (comma-separated, each workload's syntax, e.g. 512,1024 or 100x37x129).
    #[arg(long, value_delimiter = ',')]
    pub sizes: Vec<String>,
    /// The config's small, awkward simulator shapes (`sim`) on whatever device runs: for
    /// quick runs and for tools that slow kernels down (compute-sanitizer).
    #[arg(long, conflicts_with = "sizes")]
    pub small: bool,
}

impl Selection {
    /// Which of the config's shape lists to use when no `--sizes` are given.
    pub fn use_<'a>(&self, default: &'a str) -> &'a str {
        if self.small { "sim" } else { default }
    }

    /// Whether shapes given without `--workload` may skip workloads whose syntax they do not
    /// match (`--sizes 64` names GEMM shapes, not convolution ones).
    pub fn lenient(&self) -> bool {
        self.workload.is_empty() && !self.sizes.is_empty()
    }
}

pub fn load_config(path: &Option<PathBuf>) -> Result<Config> {
    Ok(match path {
        Some(p) => Config::load(p)?,
        None => Config::defaults(),
    })
}

/// The device `--device` names, or the best available; says on stderr which and why.
pub fn open_device(device: Option<&str>, sim_blocks: Option<usize>) -> Result<Box<dyn Executor>> {
    let kind = device.map(select::parse_kind).transpose()?;
    let (dev, why) = select::open(kind, sim_blocks)?;
    if let Some(why) = why {
        eprintln!("{why}");
    }
    eprintln!("Device: {}", dev.info().name);
    Ok(dev)
}
