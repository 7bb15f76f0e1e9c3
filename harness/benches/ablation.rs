//! `cargo bench -p harness`: the lab's main job. Runs every workload's ladder on the best
//! available device (the GPU, else the CPU), validates each row, times it with criterion
//! (whose clock is the device's own: CUDA events on a GPU) and writes a new run folder under
//! `target/lab/runs/` with the results, tables, charts and web pages (`index.html`, which the
//! last line names).
//!
//! Environment: `LAB_DEVICE` (cpu, cuda, sim), `LAB_CONFIG` (a TOML file over
//! harness/ablation.toml), `LAB_OUT` (the run folder to create instead of a new one under
//! target/lab/runs/). `cargo bench -p harness -- --quiet` prints only the run folder and the
//! rows that failed; `-- --verbose` a line per row and criterion's own analysis of each (its
//! HTML report is in target/criterion/ either way).

use criterion::{Criterion, SamplingMode};
use harness::cmd::run::{ceilings, merge_peers};
use harness::config::Config;
use harness::console::{Progress, Verbosity, print_run_folder};
use harness::run::Ablation;
use harness::runs::{self, LabDir};
use harness::timing::Timing;
use harness::{report, select, tune};
use kernel::DeviceError;
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

fn main() -> ExitCode {
    match bench() {
        Ok(true) => ExitCode::SUCCESS,
        Ok(false) => ExitCode::from(1),
        Err(e) => {
            eprintln!("error: {e:#}");
            ExitCode::from(2)
        }
    }
}

fn bench() -> anyhow::Result<bool> {
    let config = match std::env::var_os("LAB_CONFIG") {
        Some(p) => Config::load(&PathBuf::from(p))?,
        None => Config::defaults(),
    };
    let kind = std::env::var("LAB_DEVICE")
        .ok()
        .filter(|s| !s.is_empty())
        .map(|s| select::parse_kind(&s))
        .transpose()?;
    let out = std::env::var_os("LAB_OUT")
        .filter(|o| !o.is_empty())
        .map(PathBuf::from);
    let lab = LabDir::locate();
    // Nothing is computed unless its results can be saved.
    runs::check_target(out.as_deref(), &lab)?;
    let (dev, why) = select::open(kind, None)?;
    if let Some(why) = why {
        eprintln!("{why}");
    }
    eprintln!("Device: {}", dev.info().name);
    let calibration = ceilings(dev.as_ref(), &lab);
    let all = tune::lab_kernels(dev.info(), &lab);
    let dev_config = config.device(dev.kind());
    let shapes: Vec<_> = dev_config
        .workloads
        .iter()
        .map(|&w| (w, config.shapes(w, dev.kind().name())))
        .filter(|(_, s)| !s.is_empty())
        .collect();
    let kernels: Vec<_> = all.iter().map(|k| k.as_ref()).collect();
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
        timing: Some(dev_config.timing),
        keep_unrunnable: false,
    };

    // `cargo bench -p harness -- --quiet` or `-- --verbose`: criterion reads the same flags.
    let flag = |names: [&str; 2]| std::env::args().any(|a| names.contains(&a.as_str()));
    let verbosity = Verbosity::from_flags(flag(["--quiet", "-q"]), flag(["--verbose", "-v"]));
    let verbose = verbosity == Verbosity::Verbose;
    // The run's own tables and charts are the report: criterion's plots and its bootstrap
    // statistics (100000 resamples a row by default) would cost more than the timing itself
    // on a CPU run of some 130 rows. (Criterion warns on the console at 1000 or fewer.)
    let mut criterion = Criterion::default()
        .without_plots()
        .nresamples(1001)
        .configure_from_args();
    let mut progress = Progress::new(rows, verbosity);
    let mut on_event = |e: harness::run::Event<'_>| progress.event(e);
    // Criterion drives the sampling; the device's `time` is its clock. The per-run times of
    // criterion's samples (the last `sample_size` calls, after its warm-up) become the row's.
    let mut time = |shape: &kernel::Shape,
                    row: &harness::results::Row,
                    p: &mut dyn kernel::Prepared,
                    cfg: &harness::timing::TimingConfig| {
        let samples = cfg.samples.max(10) as usize;
        // Criterion takes at least 10 samples and warns unless each holds two runs or more;
        // one timed run first says how long a run takes. A row whose one run already lasts a
        // sample (`min_sample_ms`), or too slow for criterion within its budget, is timed by
        // the lab's own sampler, one run a sample, as `harness run` does: criterion would
        // spend three times as many runs on it to learn nothing more.
        let one_ms = p.time(1)?.as_secs_f64() * 1e3;
        let needed_ms = samples as f64 * one_ms * 3.0;
        if one_ms >= cfg.min_sample_ms || needed_ms > cfg.max_row_ms.max(50.0) {
            return harness::timing::measure(p, cfg);
        }
        let budget =
            (samples as f64 * cfg.min_sample_ms * 5.0).clamp(50.0, cfg.max_row_ms.max(50.0));
        let measure_ms = budget.max(needed_ms);
        let mut calls: Vec<(u64, Duration)> = Vec::new();
        let mut failure: Option<DeviceError> = None;
        {
            // Criterion's own per-row report goes to its HTML report, not the console, unless
            // asked for with --verbose.
            let _quiet = (!verbose).then(harness::console::Muted::new);
            let mut group =
                criterion.benchmark_group(format!("{}/{}", shape.workload(), shape.label()));
            group
                .sampling_mode(SamplingMode::Flat)
                .sample_size(samples)
                .warm_up_time(Duration::from_secs_f64((cfg.warmup_ms / 1e3).max(0.01)))
                .measurement_time(Duration::from_secs_f64(measure_ms / 1e3));
            group.bench_function(&row.id, |b| {
                b.iter_custom(|iters| match p.time(iters) {
                    Ok(d) => {
                        calls.push((iters, d));
                        d
                    }
                    Err(e) => {
                        failure.get_or_insert(e);
                        Duration::from_nanos(1)
                    }
                })
            });
            group.finish();
        }
        if let Some(e) = failure {
            return Err(e);
        }
        let kept = &calls[calls.len().saturating_sub(samples)..];
        let per_run: Vec<f64> = kept
            .iter()
            .map(|(n, d)| d.as_secs_f64() * 1e3 / *n as f64)
            .collect();
        let runs = kept.iter().map(|(n, _)| *n).min().unwrap_or(1);
        Ok::<Timing, DeviceError>(Timing::from_samples(per_run, runs))
    };
    let mut results = ablation.run_with(&mut on_event, &mut time)?;
    progress.finish();
    results.calibration = calibration;
    results.networks = harness::breakdown::measure(dev.as_ref(), &results, config.seed);
    merge_peers(&mut results, None, &lab);
    match verbosity {
        Verbosity::Quiet => print!("{}", report::failures_text(&results)),
        _ => print!("{}", report::terminal(&results)),
    }
    let dir = runs::save(&results, out.as_deref(), &lab)?;
    print_run_folder(&dir, verbosity);
    Ok(report::failures(&results).is_empty())
}
