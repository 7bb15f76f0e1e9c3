//! `harness tune`: sweeps rung 09's grid of tile shapes ([`TileConfig::grid`]) on the device
//! at hand. Each configuration is a row like any other (same validation, same timing) and the
//! fastest that passed at each size is recorded in `target/lab/tune/<device>/tune-gemm.json`, which
//! rung 09 then uses on that device ([`apply`]). In the simulator every configuration is
//! validated but none is chosen: simulated time says nothing about a GPU.

use crate::config::Config;
use crate::results::Status;
use crate::run::{Ablation, Event, primary_resources};
use crate::runs::LabDir;
use anyhow::{Context, Result, bail};
use kernel::{DeviceInfo, DeviceKind, Executor, Kernel, Shape, Workload, gemm_dims};
use restrict_unroll::{GemmTuned, TileConfig};
use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};

/// The file's name inside a device's results folder.
pub const FILE: &str = "tune-gemm.json";

/// Bumped whenever a field changes meaning or disappears.
pub const SCHEMA_VERSION: u32 = 1;

/// What one sweep found on one device.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TuneResults {
    pub schema_version: u32,
    pub device: DeviceInfo,
    pub commit: String,
    /// UTC, ISO 8601.
    pub date: String,
    /// Whether configurations were timed (a GPU); `false`: validated only (the simulator).
    pub timed: bool,
    pub sizes: Vec<TunedSize>,
}

/// Every configuration at one shape, and the one chosen there.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TunedSize {
    pub shape: Shape,
    pub label: String,
    /// The cube root of M x N x K: what the nearest-size selection compares.
    pub size: usize,
    pub configs: Vec<TunedConfig>,
    /// The fastest configuration that passed; `None` when nothing was timed.
    pub chosen: Option<TileConfig>,
}

/// One configuration's outcome at one shape.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TunedConfig {
    pub config: TileConfig,
    pub threads: u32,
    pub status: Status,
    pub reason: Option<String>,
    pub median_ms: Option<f64>,
    pub gflops: Option<f64>,
    pub registers: Option<u32>,
    pub occupancy: Option<f64>,
}

/// The size a shape is tuned and looked up at: the cube root of M x N x K.
pub fn size_of(shape: &Shape) -> usize {
    let (m, n, k) = gemm_dims(shape);
    ((m * n * k) as f64).cbrt().round() as usize
}

/// The fastest configuration that passed and was timed.
fn choose(configs: &[TunedConfig]) -> Option<TileConfig> {
    configs
        .iter()
        .filter(|c| c.status == Status::Passed)
        .filter_map(|c| c.median_ms.map(|t| (t, c.config)))
        .min_by(|a, b| a.0.total_cmp(&b.0))
        .map(|(_, c)| c)
}

/// Runs the first `limit` configurations of the grid (all by default) at each of `shapes`:
/// validated everywhere, timed unless in the simulator. `progress` gets every row.
pub fn sweep(
    dev: &dyn Executor,
    config: &Config,
    shapes: Vec<Shape>,
    limit: Option<usize>,
    mut progress: impl FnMut(&Shape, &TileConfig, &TunedConfig),
) -> Result<TuneResults> {
    if dev.kind() == DeviceKind::Cpu {
        bail!("{}", CPU_NOTE);
    }
    let mut grid = TileConfig::grid();
    grid.truncate(limit.unwrap_or(grid.len()));
    let kernels: Vec<GemmTuned> = grid.iter().map(|c| GemmTuned::fixed(*c)).collect();
    let timed = dev.kind() == DeviceKind::Cuda;
    let ablation = Ablation {
        dev,
        config,
        kernels: kernels.iter().map(|k| k as &dyn Kernel).collect(),
        shapes: vec![(Workload::Gemm, shapes)],
        timing: timed.then(|| config.device(dev.kind()).timing),
        keep_unrunnable: false,
    };
    // Rows come in grid order at each shape.
    let mut at = 0;
    let mut rows_seen = |e: Event<'_>| {
        if let Event::Row { shape, row } = e {
            let c = &grid[at % grid.len()];
            at += 1;
            progress(shape, c, &tuned(c, shape, row));
        }
    };
    let run = ablation.run(&mut rows_seen)?;
    let mut sizes = Vec::new();
    for s in run.workloads.into_iter().flat_map(|w| w.shapes) {
        let configs: Vec<TunedConfig> = grid
            .iter()
            .zip(&s.rows)
            .map(|(c, row)| tuned(c, &s.shape, row))
            .collect();
        sizes.push(TunedSize {
            size: size_of(&s.shape),
            chosen: choose(&configs),
            shape: s.shape,
            label: s.label,
            configs,
        });
    }
    Ok(TuneResults {
        schema_version: SCHEMA_VERSION,
        device: run.device,
        commit: run.commit,
        date: run.date,
        timed,
        sizes,
    })
}

/// What the CPU device says: its port has no tile parameters.
pub const CPU_NOTE: &str = "nothing to tune on the CPU: rung 09's CPU port has no tile parameters (tune runs on a GPU, or validates the grid with --device sim)";

fn tuned(c: &TileConfig, shape: &Shape, row: &crate::results::Row) -> TunedConfig {
    let median_ms = row.timing.as_ref().map(|t| t.median_ms);
    let res = primary_resources(row);
    TunedConfig {
        config: *c,
        threads: c.threads(),
        status: row.status,
        reason: row.reason.clone(),
        median_ms,
        gflops: median_ms.map(|ms| shape.flops() / (ms * 1e6)),
        registers: res.map(|r| r.registers),
        occupancy: res.and_then(|r| r.occupancy),
    }
}

impl TuneResults {
    /// Writes `<out>/<device slug>/tune-gemm.json`.
    pub fn save(&self, lab: &LabDir) -> Result<PathBuf> {
        let dir = lab.tune(&self.device.slug);
        let path = dir.join(FILE);
        // Atomic: a tune cut short keeps the previous file whole.
        crate::output::write_atomic(&path, serde_json::to_string_pretty(self)? + "\n")?;
        Ok(path)
    }

    /// Reads a device's tune file from its results folder; `None` when there is none.
    pub fn load(dir: &Path) -> Result<Option<Self>> {
        let path = dir.join(FILE);
        let text = match std::fs::read_to_string(&path) {
            Ok(t) => t,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
            Err(e) => return Err(e).with_context(|| format!("reading {}", path.display())),
        };
        let t: Self =
            serde_json::from_str(&text).with_context(|| format!("parsing {}", path.display()))?;
        if t.schema_version != SCHEMA_VERSION {
            bail!(
                "{}: schema version {}, this harness reads {SCHEMA_VERSION}; rerun `harness tune`",
                path.display(),
                t.schema_version
            );
        }
        Ok(Some(t))
    }

    /// Rung 09 with the configuration chosen at each size.
    pub fn kernel(&self) -> GemmTuned {
        GemmTuned::with_choices(
            self.sizes
                .iter()
                .filter_map(|s| s.chosen.map(|c| (s.size, c)))
                .collect(),
        )
    }

    /// One line per size: the chosen configuration and its time, or why none.
    pub fn summary(&self) -> String {
        let mut out = String::new();
        for s in &self.sizes {
            let passed = s
                .configs
                .iter()
                .filter(|c| c.status == Status::Passed)
                .count();
            let line = match (&s.chosen, self.timed) {
                (Some(c), _) => {
                    let t = s.configs.iter().find(|x| x.config == *c);
                    let ms = t.and_then(|t| t.median_ms).unwrap_or(f64::NAN);
                    let gf = t.and_then(|t| t.gflops).unwrap_or(f64::NAN);
                    format!("{}: chosen {c}: {ms:.3} ms, {gf:.0} GFLOP/s", s.label)
                }
                (None, false) => format!("{}: validated only, no speed claimed", s.label),
                (None, true) => format!("{}: no configuration passed", s.label),
            };
            out.push_str(&format!(
                "{line} ({passed}/{} configurations passed)\n",
                s.configs.len()
            ));
        }
        out
    }
}

/// Every lab kernel as `dev` runs it: rung 09 with the device's tune file, if there is one, and
/// on a GPU each kernel configured for it ([`Kernel::for_device`]: split-K sized by the SM
/// count). `run`, `check` and the bench take their kernels from here.
pub fn lab_kernels(dev: &DeviceInfo, lab: &LabDir) -> Vec<Box<dyn Kernel>> {
    let mut all = crate::registry::all();
    apply(&mut all, &lab.tune(&dev.slug));
    if dev.kind == DeviceKind::Cuda.name() {
        for k in all.iter_mut() {
            if let Some(configured) = k.for_device(dev) {
                *k = configured;
            }
        }
    }
    all
}

/// Swaps rung 09 in `all` for one that uses the tune file in `dir` (a device's results
/// folder), if there is one; a file that cannot be read is reported and the default used.
pub fn apply(all: &mut [Box<dyn Kernel>], dir: &Path) {
    let tuned = match TuneResults::load(dir) {
        Ok(Some(t)) => t.kernel(),
        Ok(None) => return,
        Err(e) => {
            eprintln!("rung 09 uses its default configuration: {e:#}");
            return;
        }
    };
    for k in all.iter_mut() {
        if k.info().id == "gemm-tuned" {
            *k = Box::new(tuned.clone());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn config(ms: Option<f64>, status: Status, c: TileConfig) -> TunedConfig {
        TunedConfig {
            config: c,
            threads: c.threads(),
            status,
            reason: None,
            median_ms: ms,
            gflops: ms.map(|m| 1.0 / m),
            registers: Some(128),
            occupancy: Some(0.25),
        }
    }

    fn sample() -> TuneResults {
        let grid = TileConfig::grid();
        let size = |n: usize, best: usize| {
            let configs = vec![
                config(Some(2.0), Status::Passed, grid[0]),
                config(Some(1.0), Status::Passed, grid[best]),
                config(Some(0.5), Status::Failed, grid[7]),
                config(None, Status::Error, grid[8]),
            ];
            TunedSize {
                shape: Shape::square_gemm(n),
                label: Shape::square_gemm(n).label(),
                size: n,
                chosen: choose(&configs),
                configs,
            }
        };
        TuneResults {
            schema_version: SCHEMA_VERSION,
            device: DeviceInfo {
                kind: "cuda".into(),
                name: "Test GPU".into(),
                slug: "test-gpu".into(),
                driver: "1.0".into(),
                cuda: None,
                compute_capability: Some("9.0".into()),
                units: 132,
                memory_bytes: None,
                l2_bytes: None,
            },
            commit: "abc".into(),
            date: "2026-01-01T00:00:00Z".into(),
            timed: true,
            sizes: vec![size(1024, 3), size(4096, 5)],
        }
    }

    #[test]
    fn the_fastest_passing_configuration_is_chosen() {
        let t = sample();
        let grid = TileConfig::grid();
        assert_eq!(t.sizes[0].chosen, Some(grid[3]));
        assert_eq!(t.sizes[1].chosen, Some(grid[5]));
        let none = [config(Some(0.1), Status::Failed, grid[0])];
        assert_eq!(choose(&none), None);
    }

    #[test]
    fn the_file_round_trips_and_rung_09_takes_the_nearest_size() {
        let dir = std::env::temp_dir().join(format!("tune-test-{}", std::process::id()));
        let t = sample();
        let path = t.save(&LabDir::at(&dir)).unwrap();
        assert!(path.ends_with("tune/test-gpu/tune-gemm.json"));
        let dir = dir.join("tune");
        let back = TuneResults::load(&dir.join("test-gpu")).unwrap().unwrap();
        assert_eq!(back, t);
        assert!(TuneResults::load(&dir).unwrap().is_none());

        let grid = TileConfig::grid();
        let mut all = crate::registry::all();
        crate::tune::apply(&mut all, &dir.join("test-gpu"));
        let k = all.iter().find(|k| k.info().id == "gemm-tuned").unwrap();
        let label = |n| {
            k.cuda(&Shape::square_gemm(n))
                .unwrap()
                .launches()
                .next()
                .unwrap()
                .source
                .label()
        };
        let bm = |c: TileConfig| {
            let TileConfig {
                bm,
                bn,
                bk,
                wm,
                wn,
                wniter,
            } = c;
            format!("BM={bm} BN={bn} BK={bk} WM={wm} WN={wn} WNITER={wniter}")
        };
        assert!(label(800).contains(&bm(grid[3])), "{}", label(800));
        assert!(label(8192).contains(&bm(grid[5])), "{}", label(8192));
        assert!(
            k.info().summary.contains("tuned per size"),
            "{}",
            k.info().summary
        );

        std::fs::write(dir.join("test-gpu").join(FILE), "{ not json").unwrap();
        assert!(TuneResults::load(&dir.join("test-gpu")).is_err());
        std::fs::remove_dir_all(dir.parent().unwrap()).unwrap();
    }
}
