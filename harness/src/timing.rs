//! The one timing method every row obeys: warm up, then many samples, report the median and
//! the spread. The device supplies the clock (CUDA events on a GPU, a monotonic clock on the
//! CPU) through [`Prepared::time`], which also poisons the output and flushes caches outside
//! the timed span.

use kernel::{DeviceError, Prepared};
use serde::{Deserialize, Serialize};
use std::time::Instant;

#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct TimingConfig {
    /// Warm-up before the first sample (at least one run).
    pub warmup_ms: f64,
    /// Samples taken (at least 3 even when a row is slow).
    pub samples: u32,
    /// Each sample runs the kernel enough times to last this long.
    pub min_sample_ms: f64,
    /// Budget for one row's samples; slow rows take fewer samples (never fewer than 3).
    pub max_row_ms: f64,
}

impl TimingConfig {
    pub fn validate(&self) -> Result<(), String> {
        let finite = [self.warmup_ms, self.min_sample_ms, self.max_row_ms];
        if finite.iter().any(|v| !v.is_finite() || *v < 0.0) {
            return Err("times must be finite and not negative".into());
        }
        if self.samples == 0 || self.samples > 100_000 {
            return Err(format!("samples must be 1..=100000, got {}", self.samples));
        }
        Ok(())
    }
}

/// Median and spread of one row, per run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Timing {
    pub median_ms: f64,
    pub min_ms: f64,
    pub max_ms: f64,
    /// 10th and 90th percentiles: the spread the tables show.
    pub p10_ms: f64,
    pub p90_ms: f64,
    /// Runs per sample (each sample is the mean of that many back-to-back timed runs).
    pub runs_per_sample: u64,
    pub samples_ms: Vec<f64>,
}

impl Timing {
    /// Summarizes per-run sample times (ms).
    pub fn from_samples(mut samples_ms: Vec<f64>, runs_per_sample: u64) -> Self {
        let kept = samples_ms.clone();
        samples_ms.sort_by(f64::total_cmp);
        let q = |p: f64| percentile(&samples_ms, p);
        Self {
            median_ms: q(0.5),
            min_ms: samples_ms.first().copied().unwrap_or(f64::NAN),
            max_ms: samples_ms.last().copied().unwrap_or(f64::NAN),
            p10_ms: q(0.1),
            p90_ms: q(0.9),
            runs_per_sample,
            samples_ms: kept,
        }
    }

    /// Half the p10-p90 range relative to the median, in percent.
    pub fn spread_pct(&self) -> f64 {
        50.0 * (self.p90_ms - self.p10_ms) / self.median_ms
    }
}

/// Linear interpolation between order statistics of sorted `v`.
fn percentile(v: &[f64], p: f64) -> f64 {
    match v.len() {
        0 => f64::NAN,
        1 => v[0],
        n => {
            let x = p * (n - 1) as f64;
            let (i, f) = (x.floor() as usize, x.fract());
            if i + 1 < n {
                v[i] * (1.0 - f) + v[i + 1] * f
            } else {
                v[n - 1]
            }
        }
    }
}

/// Times a prepared kernel per `cfg`.
pub fn measure(p: &mut dyn Prepared, cfg: &TimingConfig) -> Result<Timing, DeviceError> {
    // Warm up: at least one run, until warmup_ms have passed; keep the fastest run as the
    // estimate of one run's cost.
    let start = Instant::now();
    let mut one_ms = f64::INFINITY;
    loop {
        one_ms = one_ms.min(p.time(1)?.as_secs_f64() * 1e3);
        if start.elapsed().as_secs_f64() * 1e3 >= cfg.warmup_ms {
            break;
        }
    }
    let one_ms = one_ms.max(1e-6);
    let runs = ((cfg.min_sample_ms / one_ms).ceil() as u64).clamp(1, 1_000_000);
    let affordable = (cfg.max_row_ms / (one_ms * runs as f64)).floor() as u32;
    let samples = cfg.samples.min(affordable).max(3.min(cfg.samples));
    let mut out = Vec::with_capacity(samples as usize);
    for _ in 0..samples {
        out.push(p.time(runs)?.as_secs_f64() * 1e3 / runs as f64);
    }
    Ok(Timing::from_samples(out, runs))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn summary_statistics() {
        let t = Timing::from_samples(vec![5.0, 1.0, 3.0, 2.0, 4.0], 2);
        assert_eq!((t.median_ms, t.min_ms, t.max_ms), (3.0, 1.0, 5.0));
        assert!((t.p10_ms - 1.4).abs() < 1e-12 && (t.p90_ms - 4.6).abs() < 1e-12);
        assert_eq!(
            t.samples_ms,
            vec![5.0, 1.0, 3.0, 2.0, 4.0],
            "samples keep their order"
        );
    }

    #[test]
    fn bad_timing_is_refused() {
        let ok = TimingConfig {
            warmup_ms: 1.0,
            samples: 3,
            min_sample_ms: 1.0,
            max_row_ms: 10.0,
        };
        assert!(ok.validate().is_ok());
        assert!(TimingConfig { samples: 0, ..ok }.validate().is_err());
        assert!(
            TimingConfig {
                warmup_ms: f64::NAN,
                ..ok
            }
            .validate()
            .is_err()
        );
    }
}
