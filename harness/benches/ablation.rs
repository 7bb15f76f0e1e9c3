//! `cargo bench -p harness`: the lab's main job. Runs every workload's ladder on the best
//! available device (the GPU, else the CPU), validates each row, times it with criterion
//! (whose clock is the device's own: CUDA events on a GPU) and writes
//! `results/<device-slug>/<workload>.{json,md,csv}`.
//!
//! Environment: `LAB_DEVICE` (cpu, cuda, sim), `LAB_CONFIG` (a TOML file over
//! harness/ablation.toml), `LAB_OUT` (results folder; default the repository's `results/`).

use criterion::{Criterion, SamplingMode};
use harness::config::Config;
use harness::results::Status;
use harness::run::{Ablation, Event};
use harness::timing::Timing;
use harness::{calibrate, output, peers, report, select, tune};
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
        .map(PathBuf::from)
        .unwrap_or_else(|| {
            let manifest = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
            manifest.parent().unwrap_or(manifest).join("results")
        });
    // Nothing is computed unless its results can be saved.
    output::ensure_writable(&out)?;
    let (dev, why) = select::open(kind)?;
    if let Some(why) = why {
        eprintln!("{why}");
    }
    eprintln!("Device: {} ({})", dev.info().name, dev.kind());

    // The roofline columns and charts use the device's measured ceilings (cached per device).
    let calibration = match calibrate::load_or_measure(dev.as_ref(), &out) {
        Ok((c, _)) => {
            eprintln!("Ceilings: {}", c.describe());
            Some(c)
        }
        Err(why) => {
            eprintln!("No measured ceilings: {why}");
            None
        }
    };
    let all = tune::lab_kernels(dev.info(), &out);
    let dev_config = config.device(dev.kind());
    let shapes = dev_config
        .workloads
        .iter()
        .map(|&w| (w, config.shapes(w, dev.kind().name())))
        .filter(|(_, s)| !s.is_empty())
        .collect();
    let ablation = Ablation {
        dev: dev.as_ref(),
        config: &config,
        kernels: all.iter().map(|k| k.as_ref()).collect(),
        shapes,
        timing: Some(dev_config.timing),
        keep_unrunnable: false,
    };

    let mut criterion = Criterion::default().configure_from_args();
    let mut progress = |e: Event<'_>| {
        if let Event::Row { row, .. } = e
            && row.status != Status::Passed
        {
            eprintln!(
                "  {}: {:?} {}",
                row.id,
                row.status,
                row.reason.as_deref().unwrap_or("")
            );
        }
    };
    // Criterion drives the sampling; the device's `time` is its clock. The per-run times of
    // criterion's samples (the last `sample_size` calls, after its warm-up) become the row's.
    let mut time = |shape: &kernel::Shape,
                    row: &harness::results::Row,
                    p: &mut dyn kernel::Prepared,
                    cfg: &harness::timing::TimingConfig| {
        let samples = cfg.samples.max(10) as usize;
        let measure_ms =
            (samples as f64 * cfg.min_sample_ms * 5.0).clamp(50.0, cfg.max_row_ms.max(50.0));
        let mut calls: Vec<(u64, Duration)> = Vec::new();
        let mut failure: Option<DeviceError> = None;
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
    let mut results = ablation.run_with(&mut progress, &mut time)?;
    results.calibration = calibration;
    let dir = out.join(&results.device.slug);
    if let Some(note) = peers::merge_beside(&mut results, &dir) {
        eprintln!("{note}");
    }
    print!("{}", report::terminal(&results));
    for f in report::write_all(&results, &out)? {
        println!("wrote {}", f.display());
    }
    Ok(report::failures(&results).is_empty())
}
