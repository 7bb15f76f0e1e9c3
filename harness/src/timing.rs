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
    /// Rounds in which a rung and its parent are timed in alternation for `vs parent`
    /// ([`measure_pair`]); 0 leaves `vs parent` to the two rows' medians.
    #[serde(default)]
    pub pair_rounds: u32,
}

/// The longest warm-up, sample or row budget a configuration may ask for.
const MAX_TIME_MS: f64 = 3_600_000.0;

impl TimingConfig {
    pub fn validate(&self) -> Result<(), String> {
        // An hour bounds each: a row asked to warm up for 1e300 ms would never end.
        let times = [self.warmup_ms, self.min_sample_ms, self.max_row_ms];
        if times.iter().any(|v| !(0.0..=MAX_TIME_MS).contains(v)) {
            return Err(format!(
                "times (warmup_ms, min_sample_ms, max_row_ms) must be from 0 to {MAX_TIME_MS} ms \
                 (an hour)"
            ));
        }
        if self.samples == 0 || self.samples > 100_000 {
            return Err(format!("samples must be 1..=100000, got {}", self.samples));
        }
        if self.pair_rounds > 10_000 {
            return Err(format!(
                "pair_rounds must be 0..=10000, got {}",
                self.pair_rounds
            ));
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

    /// Whether the two p10-p90 ranges are disjoint and the medians differ by more than
    /// [`NEGLIGIBLE`]: a difference that the samples' scatter does not explain, and one worth
    /// a word.
    pub fn stands_apart_from(&self, other: &Timing) -> bool {
        (self.p90_ms < other.p10_ms || other.p90_ms < self.p10_ms)
            && matters(self.median_ms / other.median_ms)
    }
}

/// The smallest change of speed the tables call faster or slower: many samples with a tiny
/// spread make a 0.1% difference stand out of the noise, and "slower" beside 0.999x would
/// send a reader after nothing. Criterion ignores changes under the same 1% by default.
pub const NEGLIGIBLE: f64 = 0.01;

/// Whether a ratio of two times is further from 1 than [`NEGLIGIBLE`], either way.
pub fn matters(ratio: f64) -> bool {
    ratio.ln().abs() > (1.0 + NEGLIGIBLE).ln()
}

/// Linear interpolation between order statistics of sorted `v`. Held between the two it
/// interpolates, so that it rises with `p` to the last bit: `a * (1 - f) + b * f` of two equal
/// samples can come out a bit above or below them, which put a row's p10 above its p90, and a
/// run compared with itself differed "beyond the noise".
fn percentile(v: &[f64], p: f64) -> f64 {
    match v.len() {
        0 => f64::NAN,
        1 => v[0],
        n => {
            let x = p * (n - 1) as f64;
            let (i, f) = (x.floor() as usize, x.fract());
            if i + 1 < n {
                (v[i] + (v[i + 1] - v[i]) * f).clamp(v[i], v[i + 1])
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

/// A rung and its parent timed in alternation: each round takes one sample of each, the
/// order swapped every round, so that the machine's drift over the run (a shared host, a
/// clock that moves) falls on both alike instead of on whichever row happened to run later.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PairedTiming {
    /// The other row (the parent).
    pub against: String,
    /// Per-run time of the parent's sample in each round, ms.
    pub against_ms: Vec<f64>,
    /// Per-run time of this row's sample in the same round, ms.
    pub row_ms: Vec<f64>,
}

impl PairedTiming {
    /// The parent's time over this row's, round by round: above 1 this row is faster.
    pub fn ratios(&self) -> Vec<f64> {
        self.against_ms
            .iter()
            .zip(&self.row_ms)
            .map(|(a, r)| a / r)
            .collect()
    }

    /// Median, 10th and 90th percentiles of [`Self::ratios`].
    pub fn ratio_summary(&self) -> (f64, f64, f64) {
        let mut v = self.ratios();
        v.sort_by(f64::total_cmp);
        (
            percentile(&v, 0.5),
            percentile(&v, 0.1),
            percentile(&v, 0.9),
        )
    }

    pub fn rounds(&self) -> usize {
        self.row_ms.len()
    }
}

/// Times `row` against `parent` in alternating rounds (see [`PairedTiming`]). A round lasts
/// about `min_sample_ms`: each of its two samples runs its kernel enough times (by its own
/// row's median) to last half of it, after one untimed run, so that it starts as warm as its
/// row's own samples did. Without that run a sample of one run starts cold, in caches and
/// pages the other kernel left: on the CPU a 2.6 ms port timed right after its 48 ms parent
/// took 5 ms, and `vs parent` halved. The rounds take no longer than the row's own samples
/// did, nor than `max_row_ms` (at least 3 when `pair_rounds` allows as many): a slow row's
/// long samples already average the short hiccups that many rounds would.
pub fn measure_pair(
    parent: (&str, &mut dyn Prepared, &Timing),
    row: &mut dyn Prepared,
    row_timing: &Timing,
    cfg: &TimingConfig,
) -> Result<PairedTiming, DeviceError> {
    let (against, parent, parent_timing) = parent;
    let runs = |t: &Timing| {
        ((cfg.min_sample_ms / 2.0 / t.median_ms.max(1e-6)).ceil() as u64).clamp(1, 1_000_000)
    };
    let (runs_a, runs_r) = (runs(parent_timing), runs(row_timing));
    let cost = |t: &Timing, n: u64| t.median_ms * (n + 1) as f64;
    let round_ms = cost(parent_timing, runs_a) + cost(row_timing, runs_r);
    let own_ms: f64 = row_timing.samples_ms.iter().sum::<f64>() * row_timing.runs_per_sample as f64;
    let budget_ms = cfg.max_row_ms.min(own_ms);
    let affordable = (budget_ms / round_ms.max(1e-6)).floor() as u32;
    let rounds = cfg.pair_rounds.min(affordable).max(3.min(cfg.pair_rounds));
    let sample = |p: &mut dyn Prepared, n: u64| -> Result<f64, DeviceError> {
        p.time(1)?;
        Ok(p.time(n)?.as_secs_f64() * 1e3 / n as f64)
    };
    let mut out = PairedTiming {
        against: against.to_string(),
        against_ms: Vec::with_capacity(rounds as usize),
        row_ms: Vec::with_capacity(rounds as usize),
    };
    for round in 0..rounds {
        let (a, r) = if round % 2 == 0 {
            let a = sample(parent, runs_a)?;
            (a, sample(row, runs_r)?)
        } else {
            let r = sample(row, runs_r)?;
            (sample(parent, runs_a)?, r)
        };
        out.against_ms.push(a);
        out.row_ms.push(r);
    }
    Ok(out)
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

    /// Equal samples give that value at every percentile (three samples of 6e-5 ms gave a p10
    /// one bit above the p90 before), and percentiles never fall as `p` rises.
    #[test]
    fn percentiles_of_equal_samples_are_the_sample_and_rise_with_p() {
        let same = 5.999_999_999_999_999_5e-5;
        let t = Timing::from_samples(vec![same; 3], 1);
        assert_eq!((t.p10_ms, t.median_ms, t.p90_ms), (same, same, same));
        assert!(!t.stands_apart_from(&t), "a row is inside its own noise");
        let mut rng = 0x2545_f491_4f6c_dd1du64;
        for _ in 0..200 {
            let mut v: Vec<f64> = (0..1 + (rng % 9) as usize)
                .map(|_| {
                    rng ^= rng << 13;
                    rng ^= rng >> 7;
                    rng ^= rng << 17;
                    // Few distinct values, many repeats, as short samples have.
                    1e-4 * (1 + rng % 4) as f64 / 3.0
                })
                .collect();
            v.sort_by(f64::total_cmp);
            let q: Vec<f64> = (0..=20).map(|k| percentile(&v, k as f64 / 20.0)).collect();
            assert!(q.windows(2).all(|w| w[0] <= w[1]), "{v:?}: {q:?}");
            assert!(q[0] == v[0] && q[20] == v[v.len() - 1], "{v:?}: {q:?}");
        }
    }

    #[test]
    fn bad_timing_is_refused() {
        let ok = TimingConfig {
            warmup_ms: 1.0,
            samples: 3,
            min_sample_ms: 1.0,
            max_row_ms: 10.0,
            pair_rounds: 5,
        };
        assert!(ok.validate().is_ok());
        assert!(TimingConfig { samples: 0, ..ok }.validate().is_err());
        assert!(
            TimingConfig {
                pair_rounds: 10_001,
                ..ok
            }
            .validate()
            .is_err()
        );
        assert!(
            TimingConfig {
                warmup_ms: f64::NAN,
                ..ok
            }
            .validate()
            .is_err()
        );
    }

    /// A kernel of fixed cost on a machine that slows down as it goes: each run costs
    /// `cost_ms` times a factor that grows by `drift` per run of either kernel.
    struct Drifting<'c> {
        cost_ms: f64,
        clock: &'c std::cell::Cell<f64>,
        drift: f64,
    }

    /// A kernel of `cost_ms` a run on a clock that does not drift.
    fn steady(cost_ms: f64, clock: &std::cell::Cell<f64>) -> Drifting<'_> {
        Drifting {
            cost_ms,
            clock,
            drift: 0.0,
        }
    }

    impl Prepared for Drifting<'_> {
        fn run(&mut self) -> Result<(), DeviceError> {
            Ok(())
        }
        fn output(&mut self) -> Result<Vec<f32>, DeviceError> {
            Ok(Vec::new())
        }
        fn time(&mut self, iters: u64) -> Result<std::time::Duration, DeviceError> {
            let mut ms = 0.0;
            for _ in 0..iters {
                ms += self.cost_ms * self.clock.get();
                self.clock.set(self.clock.get() + self.drift);
            }
            Ok(std::time::Duration::from_secs_f64(ms / 1e3))
        }
    }

    #[test]
    fn alternating_rounds_cancel_the_drift_that_separate_rows_suffer() {
        let cfg = TimingConfig {
            warmup_ms: 0.0,
            samples: 80,
            min_sample_ms: 1.0,
            max_row_ms: 1e6,
            pair_rounds: 20,
        };
        // The rung is truly 10% faster than its parent (1.11x), but the machine slows by
        // 1% a run: timed one after the other, it reads as slower.
        let clock = std::cell::Cell::new(1.0);
        let mut parent = Drifting {
            cost_ms: 1.0,
            clock: &clock,
            drift: 0.01,
        };
        let mut rung = Drifting {
            cost_ms: 0.9,
            clock: &clock,
            drift: 0.01,
        };
        let parent_alone = measure(&mut parent, &cfg).unwrap();
        let rung_alone = measure(&mut rung, &cfg).unwrap();
        let apart = parent_alone.median_ms / rung_alone.median_ms;
        assert!(
            apart < 1.0,
            "timed apart, the drift hides the gain: {apart}"
        );

        let pair = measure_pair(
            ("parent", &mut parent, &parent_alone),
            &mut rung,
            &rung_alone,
            &cfg,
        )
        .unwrap();
        assert_eq!(pair.rounds(), 20);
        assert_eq!(pair.against, "parent");
        let (median, p10, p90) = pair.ratio_summary();
        let truth = 1.0 / 0.9;
        assert!(
            (median - truth).abs() < 0.01,
            "paired: {median}, truth {truth}"
        );
        assert!(
            p10 > 1.0 && p90 > p10,
            "every round sees the gain: {p10}..{p90}"
        );
    }

    #[test]
    fn paired_rounds_fit_the_row_budget() {
        let cfg = TimingConfig {
            warmup_ms: 0.0,
            samples: 3,
            min_sample_ms: 1.0,
            max_row_ms: 100.0,
            pair_rounds: 50,
        };
        // 20 ms a run each, after an untimed one: a round costs 80 ms, so 100 ms hold one,
        // and three is the floor.
        let clock = std::cell::Cell::new(1.0);
        let mut a = steady(20.0, &clock);
        let mut b = steady(20.0, &clock);
        let t = Timing::from_samples(vec![20.0; 3], 1);
        let pair = measure_pair(("a", &mut a, &t), &mut b, &t, &cfg).unwrap();
        assert_eq!(pair.rounds(), 3);
        assert_eq!(pair.ratio_summary(), (1.0, 1.0, 1.0));
        // Nor longer than the row's own samples: 24 of 20 ms (480 ms) hold six 80 ms rounds
        // of the 100 000 ms a row may take.
        let slow = Timing::from_samples(vec![20.0; 24], 1);
        let roomy = TimingConfig {
            max_row_ms: 100_000.0,
            ..cfg
        };
        let pair = measure_pair(("a", &mut a, &slow), &mut b, &slow, &roomy).unwrap();
        assert_eq!(pair.rounds(), 6);
        // A fast row's rounds are `pair_rounds`: 12 samples of 250 runs of 0.04 ms (120 ms)
        // hold more than 50 rounds of 1.12 ms (13 runs a side after an untimed one).
        let mut c = steady(0.04, &clock);
        let mut d = steady(0.04, &clock);
        let fast = Timing::from_samples(vec![0.04; 12], 250);
        let pair = measure_pair(("c", &mut c, &fast), &mut d, &fast, &roomy).unwrap();
        assert_eq!(pair.rounds(), 50);
        let none = TimingConfig {
            pair_rounds: 0,
            ..cfg
        };
        assert_eq!(
            measure_pair(("a", &mut a, &t), &mut b, &t, &none)
                .unwrap()
                .rounds(),
            0
        );
    }

    /// A kernel whose first run after another kernel's costs `cold_ms` more: caches and pages
    /// the other left, as a CPU port finds them after its parent.
    struct Cold<'c> {
        id: u8,
        cost_ms: f64,
        cold_ms: f64,
        last: &'c std::cell::Cell<u8>,
    }

    impl Prepared for Cold<'_> {
        fn run(&mut self) -> Result<(), DeviceError> {
            Ok(())
        }
        fn output(&mut self) -> Result<Vec<f32>, DeviceError> {
            Ok(Vec::new())
        }
        fn time(&mut self, iters: u64) -> Result<std::time::Duration, DeviceError> {
            let mut ms = iters as f64 * self.cost_ms;
            if iters > 0 && self.last.replace(self.id) != self.id {
                ms += self.cold_ms;
            }
            Ok(std::time::Duration::from_secs_f64(ms / 1e3))
        }
    }

    /// A sample of one run taken right after the other kernel's starts cold, which its row's
    /// back-to-back samples never do: the rounds warm each kernel up first, or a fast rung
    /// after a slow parent reads as slower than it is.
    #[test]
    fn each_round_warms_its_kernel_up_before_timing_it() {
        let cfg = TimingConfig {
            warmup_ms: 0.0,
            samples: 10,
            min_sample_ms: 1.0,
            max_row_ms: 1e6,
            pair_rounds: 8,
        };
        let last = std::cell::Cell::new(0);
        let mut parent = Cold {
            id: 1,
            cost_ms: 48.0,
            cold_ms: 2.5,
            last: &last,
        };
        let mut rung = Cold {
            id: 2,
            cost_ms: 2.6,
            cold_ms: 2.5,
            last: &last,
        };
        let parent_alone = measure(&mut parent, &cfg).unwrap();
        let rung_alone = measure(&mut rung, &cfg).unwrap();
        assert_eq!(rung_alone.median_ms, 2.6, "its own samples run warm");
        let pair = measure_pair(
            ("parent", &mut parent, &parent_alone),
            &mut rung,
            &rung_alone,
            &cfg,
        )
        .unwrap();
        let (median, p10, p90) = pair.ratio_summary();
        let truth = 48.0 / 2.6;
        assert!(pair.rounds() >= 3);
        assert!(
            (median - truth).abs() < 1e-9 && (p10 - truth).abs() < 1e-9 && p90 == p10,
            "paired: {p10}..{median}..{p90}, truth {truth}"
        );
    }
}
