//! `harness`: list, run, check, inspect and diagnose the lab's kernels. This file only parses
//! the command line and dispatches; each command lives in its module of `harness::cmd`.

use clap::{Parser, Subcommand};
use harness::cmd;
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

#[derive(Subcommand)]
enum Command {
    /// Every kernel with its workload, stage, precision and summary.
    List(cmd::list::Args),
    /// Run the ablation: validate and time every kernel, write a new run folder under
    /// target/lab/runs/.
    Run(cmd::run::Args),
    /// The shapes a run would use, as JSON (what `tools/torch_peers.py --shapes` reads).
    Shapes(cmd::shapes::Args),
    /// Measure the device's ceilings (bandwidth, FP32, tensor rates) for the roofline and
    /// cache them in target/lab/calibration/.
    Calibrate(cmd::calibrate::Args),
    /// Rebuild the tables and charts of a run folder without rerunning anything.
    Report(cmd::report::Args),
    /// Per-row time ratios of two runs (before/after, or two devices), and a chart.
    Compare(cmd::compare::Args),
    /// Copy a run folder into results/<device>/, the runs the repository publishes.
    Publish(cmd::publish::Args),
    /// Sweep rung 09's grid of tile shapes on this device: validate and time each, record the
    /// fastest per size in target/lab/tune/<device>/, which rung 09 then uses there. In
    /// the simulator every shape is validated, none chosen; on the CPU there is nothing to tune.
    Tune(cmd::tune::Args),
    /// Check every kernel against the reference on several shapes, tails included.
    Check(cmd::check::Args),
    /// What was found: GPU, driver, CUDA, NVRTC, headers, cuBLAS, or exactly why not.
    Doctor(cmd::doctor::Args),
    /// NVRTC-compile every kernel (or a CUDA file) and print registers, shared memory,
    /// spills and occupancy.
    Inspect(cmd::inspect::Args),
    /// One rung against its parent: idea and bound, source diff, resources, SASS mix, bank
    /// conflicts, speed of light and its latest measured row (`--markdown` for Markdown); or
    /// your kernel (`--kernel`) beside a rung (`--against`).
    Explain(cmd::explain::Args),
    /// Write the ladder pages docs/ladders/WORKLOAD.md: each rung's `explain --markdown`.
    Docs(cmd::docs::Args),
    /// One row in a child process of `run` or `check` (JSON on stdin and stdout).
    #[command(name = "isolated-row", hide = true)]
    IsolatedRow,
    /// One user's file compiled by NVRTC for another harness process (JSON on stdin, NVRTC's
    /// output on stdout), so that a crash inside NVRTC ends only this child.
    #[command(name = NVRTC_CHILD, hide = true)]
    NvrtcChild,
}

/// The hidden subcommand that compiles a user's file in a child.
const NVRTC_CHILD: &str = "nvrtc-child";

fn main() -> ExitCode {
    // Output piped into `head` and closed early ends the program quietly, as in other Unix
    // tools, instead of a panic on the next print.
    // SAFETY: restoring a signal's default action, before any thread starts.
    unsafe { libc::signal(libc::SIGPIPE, libc::SIG_DFL) };
    // NVRTC's output depends on where its memory lies: this program runs with the addresses
    // fixed where the system allows it (`harness doctor` says which), else as it is.
    let _ = kernel::cuda::address_layout::start_fixed();
    if let Ok(exe) = std::env::current_exe() {
        kernel::cuda::nvrtc_child::set_program(kernel::cuda::nvrtc_child::Program {
            exe,
            args: vec![NVRTC_CHILD.to_string()],
        });
    }
    let result = match Cli::parse().command {
        Command::List(a) => cmd::list::run(&a),
        Command::Run(a) => cmd::run::run(&a),
        Command::Shapes(a) => cmd::shapes::run(&a),
        Command::Calibrate(a) => cmd::calibrate::run(&a),
        Command::Report(a) => cmd::report::run(&a),
        Command::Compare(a) => cmd::compare::run(&a),
        Command::Publish(a) => cmd::publish::run(&a),
        Command::Tune(a) => cmd::tune::run(&a),
        Command::Check(a) => cmd::check::run(&a),
        Command::Doctor(a) => cmd::doctor::run(&a),
        Command::Inspect(a) => cmd::inspect::run(&a),
        Command::Explain(a) => cmd::explain::run(&a),
        Command::Docs(a) => cmd::docs::run(&a),
        Command::IsolatedRow => harness::isolate::child(),
        Command::NvrtcChild => Ok(kernel::cuda::nvrtc_child::serve()),
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
