//! The ablation configuration: `harness/ablation.toml` (embedded as the defaults), optionally
//! overlaid by a user file. Every error names the file, the line and the key.

use crate::timing::TimingConfig;
use kernel::{DeviceKind, Shape, Workload};
use serde::Deserialize;
use std::collections::BTreeMap;
use std::path::Path;

/// The defaults, as shipped.
pub const DEFAULT_TOML: &str = include_str!("../ablation.toml");
const DEFAULT_NAME: &str = "harness/ablation.toml";

#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawTiming {
    warmup_ms: Option<f64>,
    samples: Option<u32>,
    min_sample_ms: Option<f64>,
    max_row_ms: Option<f64>,
    pair_rounds: Option<u32>,
}

#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawDevice {
    workloads: Option<Vec<String>>,
    timing: Option<RawTiming>,
}

#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawShapes {
    cpu: Option<Vec<String>>,
    cuda: Option<Vec<String>>,
    sim: Option<Vec<String>>,
    check: Option<Vec<String>>,
}

#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawConfig {
    seed: Option<u64>,
    cpu_reference_max_gflop: Option<f64>,
    reference_samples: Option<usize>,
    cpu: Option<RawDevice>,
    cuda: Option<RawDevice>,
    sim: Option<RawDevice>,
    shapes: Option<BTreeMap<String, RawShapes>>,
    /// `[[kernel]]` sections: the user's own kernels.
    kernel: Option<Vec<crate::user_kernel::RawUserKernel>>,
}

/// Per-device settings, resolved.
#[derive(Debug, Clone, serde::Serialize)]
pub struct DeviceConfig {
    pub workloads: Vec<Workload>,
    pub timing: TimingConfig,
}

/// The resolved configuration.
#[derive(Debug, Clone, serde::Serialize)]
pub struct Config {
    /// Where it came from, for the results.
    pub source: String,
    pub seed: u64,
    pub cpu_reference_max_gflop: f64,
    /// Outputs compared with an f64 reference when a run is too large for a full one.
    pub reference_samples: usize,
    pub cpu: DeviceConfig,
    pub cuda: DeviceConfig,
    pub sim: DeviceConfig,
    /// Shapes per workload per use (`cpu`, `cuda`, `sim`, `check`).
    pub shapes: BTreeMap<Workload, BTreeMap<String, Vec<Shape>>>,
    /// The user's kernels (`[[kernel]]` sections), files relative to the config's folder.
    pub kernels: Vec<crate::user_kernel::UserKernelSpec>,
}

/// A configuration error that points at its place.
#[derive(Debug, thiserror::Error)]
#[error("{file}{}: {message}", line.map(|l| format!(":{l}")).unwrap_or_default())]
pub struct ConfigError {
    pub file: String,
    pub line: Option<usize>,
    pub message: String,
}

impl Config {
    /// The shipped defaults.
    pub fn defaults() -> Self {
        Self::from_sources(None).expect("the shipped ablation.toml is valid")
    }

    /// The defaults overlaid by the TOML file at `path`.
    pub fn load(path: &Path) -> Result<Self, ConfigError> {
        let text = std::fs::read_to_string(path).map_err(|e| ConfigError {
            file: path.display().to_string(),
            line: None,
            message: format!("cannot read the config file: {e}"),
        })?;
        Self::from_sources(Some((&path.display().to_string(), &text)))
    }

    /// The defaults overlaid by `user` (file name, text).
    pub fn from_sources(user: Option<(&str, &str)>) -> Result<Self, ConfigError> {
        let defaults = parse(DEFAULT_NAME, DEFAULT_TOML)?;
        let (name, text, raw) = match user {
            Some((name, text)) => (name, text, Some(parse(name, text)?)),
            None => (DEFAULT_NAME, DEFAULT_TOML, None),
        };
        let merged = match &raw {
            Some(u) => merge(defaults, u.clone()),
            None => defaults,
        };
        let here = |table: &str, key: &str, message: String| ConfigError {
            file: name.to_string(),
            line: locate(text, table, key),
            message,
        };
        let device = |d: &Option<RawDevice>, table: &str| -> Result<DeviceConfig, ConfigError> {
            let d = d.clone().unwrap_or_default();
            let mut workloads = Vec::new();
            for w in d.workloads.unwrap_or_default() {
                workloads.push(Workload::parse(&w).ok_or_else(|| {
                    here(
                        table,
                        "workloads",
                        format!(
                            "key `{table}.workloads`: {}",
                            crate::select::unknown_workload(&w)
                        ),
                    )
                })?);
            }
            let t = d.timing.unwrap_or_default();
            let timing = TimingConfig {
                warmup_ms: t.warmup_ms.unwrap_or(100.0),
                samples: t.samples.unwrap_or(10),
                min_sample_ms: t.min_sample_ms.unwrap_or(1.0),
                max_row_ms: t.max_row_ms.unwrap_or(5000.0),
                pair_rounds: t.pair_rounds.unwrap_or(0),
            };
            timing
                .validate()
                .map_err(|m| here(table, "timing", format!("key `{table}.timing`: {m}")))?;
            Ok(DeviceConfig { workloads, timing })
        };
        let mut shapes = BTreeMap::new();
        for (wname, lists) in merged.shapes.clone().unwrap_or_default() {
            let table = format!("shapes.{wname}");
            let workload = Workload::parse(&wname).ok_or_else(|| {
                here(
                    "shapes",
                    &wname,
                    format!(
                        "table `[{table}]`: {}",
                        crate::select::unknown_workload(&wname)
                    ),
                )
            })?;
            let mut per_use = BTreeMap::new();
            for (use_, list) in [
                ("cpu", lists.cpu),
                ("cuda", lists.cuda),
                ("sim", lists.sim),
                ("check", lists.check),
            ] {
                let mut parsed = Vec::new();
                for text_shape in list.unwrap_or_default() {
                    let shape = Shape::parse(workload, &text_shape)
                        .map_err(|e| here(&table, use_, format!("key `{table}.{use_}`: {e}")))?;
                    shape
                        .validate()
                        .map_err(|e| here(&table, use_, format!("key `{table}.{use_}`: {e}")))?;
                    parsed.push(shape);
                }
                per_use.insert(use_.to_string(), parsed);
            }
            shapes.insert(workload, per_use);
        }
        let max_gflop = merged.cpu_reference_max_gflop.unwrap_or(150.0);
        if !(max_gflop.is_finite() && max_gflop > 0.0) {
            return Err(here(
                "",
                "cpu_reference_max_gflop",
                format!(
                    "key `cpu_reference_max_gflop`: must be a positive number, got {max_gflop}"
                ),
            ));
        }
        let samples = merged.reference_samples.unwrap_or(4096);
        if !(16..=10_000_000).contains(&samples) {
            return Err(here(
                "",
                "reference_samples",
                format!("key `reference_samples`: must be 16..=10000000, got {samples}"),
            ));
        }
        let base = Path::new(name).parent().unwrap_or(Path::new(""));
        let mut kernels = Vec::new();
        for (i, raw) in merged.kernel.iter().flatten().enumerate() {
            let mut spec = raw.resolve(base).map_err(|(key, message)| ConfigError {
                file: name.to_string(),
                line: crate::user_kernel::locate(text, i, &key),
                message: format!("[[kernel]] {}, key `{key}`: {message}", raw.file),
            })?;
            // Errors found once the kernel is read (its file, entry, launch) name the section.
            spec.origin =
                crate::user_kernel::locate(text, i, "file").map(|l| format!("{name}:{l}"));
            kernels.push(spec);
        }
        Ok(Config {
            source: name.to_string(),
            seed: merged.seed.unwrap_or(20251122),
            cpu_reference_max_gflop: max_gflop,
            reference_samples: samples,
            cpu: device(&merged.cpu, "cpu")?,
            cuda: device(&merged.cuda, "cuda")?,
            sim: device(&merged.sim, "sim")?,
            shapes,
            kernels,
        })
    }

    pub fn device(&self, kind: DeviceKind) -> &DeviceConfig {
        match kind {
            DeviceKind::Cpu => &self.cpu,
            DeviceKind::Cuda => &self.cuda,
            DeviceKind::Sim => &self.sim,
        }
    }

    /// The shapes of `workload` listed under `use_` (`cpu`, `cuda`, `sim` or `check`).
    pub fn shapes(&self, workload: Workload, use_: &str) -> Vec<Shape> {
        self.shapes
            .get(&workload)
            .and_then(|m| m.get(use_))
            .cloned()
            .unwrap_or_default()
    }
}

fn parse(name: &str, text: &str) -> Result<RawConfig, ConfigError> {
    toml::from_str(text).map_err(|e| {
        let at = e.span().map(|s| s.start.min(text.len()));
        let mut message = plain_types(e.message().trim());
        // The parser's "duplicate key" names no key: the span is the key (or table) itself.
        if message.starts_with("duplicate key")
            && let Some(name) = e.span().and_then(|s| text.get(s))
        {
            let name = name.trim().trim_matches(['[', ']']).trim();
            message = format!("`{name}` is given twice: give it once");
        }
        ConfigError {
            file: name.to_string(),
            line: at.map(|at| text[..at].matches('\n').count() + 1),
            message: match at.and_then(|at| key_at(text, at)) {
                // A workload's shapes are a table of lists by use; serde reads a list given
                // there as the table's fields in order, and says the first is no list.
                Some(key) if key.matches('.').count() == 1 && key.starts_with("shapes.") => {
                    format!(
                        "key `{key}`: expected a table of sizes by use (cpu, cuda, sim, check), \
                         as [{key}] with cpu = [\"512\", \"1024\"] on the lines after it"
                    )
                }
                Some(key) => format!("key `{key}`: {message}"),
                None => message,
            },
        }
    })
}

/// A deserializer's message in the words of the file: "expected u64" means a whole number.
fn plain_types(message: &str) -> String {
    [
        ("expected u64", "expected a whole number from 0"),
        ("expected u32", "expected a whole number from 0"),
        ("expected usize", "expected a whole number from 0"),
        ("expected f64", "expected a number"),
        ("expected a sequence", "expected a list"),
        // The `[[kernel]]` values that take more than one form.
        (
            "data did not match any variant of untagged enum Scalar",
            "expected a whole number or words in quotes (\"16x16\", \"cdiv(N,16)\")",
        ),
        (
            "data did not match any variant of untagged enum Number",
            "expected a number",
        ),
        (
            "data did not match any variant of untagged enum BlockValue",
            "expected a number of threads, words in quotes (\"16x16\", \"min(N,1024)\") or a \
             list of up to three sizes ([32, \"cdiv(N,32)\"])",
        ),
        (
            "data did not match any variant of untagged enum GridValue",
            "expected \"tile:64x64\" or a list of up to three sizes ([\"cdiv(N,64)\", 8])",
        ),
        (
            "data did not match any variant of untagged enum DtypeValue",
            "expected \"f16\" for every buffer or a table per buffer ({ A = \"f16\" })",
        ),
    ]
    .iter()
    .fold(message.to_string(), |m, (rust, words)| {
        m.replace(rust, words)
    })
}

/// The dotted key whose value holds byte `at`: its table header, the key on its line, and
/// the keys of the inline tables (`timing = { samples = ... }`) open at that point.
fn key_at(text: &str, at: usize) -> Option<String> {
    let line_start = text[..at].rfind('\n').map_or(0, |i| i + 1);
    let table = text[..line_start]
        .lines()
        .filter_map(|l| header(l.trim()))
        .next_back()
        .unwrap_or_default();
    let (mut path, mut pending, mut seg) = (Vec::new(), None::<String>, line_start);
    for (i, c) in text[line_start..at]
        .char_indices()
        .map(|(i, c)| (i + line_start, c))
    {
        match c {
            '=' => pending = Some(dotted(&text[seg..i])),
            '{' => {
                path.extend(pending.take());
                seg = i + 1;
            }
            '}' => {
                path.pop();
                pending = None;
            }
            // The key of the value before the comma is done with.
            ',' => {
                seg = i + 1;
                pending = None;
            }
            _ => {}
        }
    }
    path.extend(pending);
    if path.is_empty() {
        return None;
    }
    let key = path.join(".");
    Some(if table.is_empty() {
        key
    } else {
        format!("{table}.{key}")
    })
}

/// `a . "b".c` as `a.b.c`.
fn dotted(key: &str) -> String {
    key.split('.')
        .map(|p| p.trim().trim_matches('"'))
        .collect::<Vec<_>>()
        .join(".")
}

/// The table a `[table]` or `[[table]]` line opens.
fn header(line: &str) -> Option<String> {
    let name = line.strip_prefix('[')?.trim_start_matches('[');
    Some(dotted(name.split(']').next()?))
}

fn merge(base: RawConfig, user: RawConfig) -> RawConfig {
    let device = |b: Option<RawDevice>, u: Option<RawDevice>| -> Option<RawDevice> {
        match (b, u) {
            (b, None) => b,
            (None, u) => u,
            (Some(b), Some(u)) => Some(RawDevice {
                workloads: u.workloads.or(b.workloads),
                timing: match (b.timing, u.timing) {
                    (bt, None) => bt,
                    (None, ut) => ut,
                    (Some(bt), Some(ut)) => Some(RawTiming {
                        warmup_ms: ut.warmup_ms.or(bt.warmup_ms),
                        samples: ut.samples.or(bt.samples),
                        min_sample_ms: ut.min_sample_ms.or(bt.min_sample_ms),
                        max_row_ms: ut.max_row_ms.or(bt.max_row_ms),
                        pair_rounds: ut.pair_rounds.or(bt.pair_rounds),
                    }),
                },
            }),
        }
    };
    let mut shapes = base.shapes.unwrap_or_default();
    for (w, u) in user.shapes.unwrap_or_default() {
        let b = shapes.remove(&w).unwrap_or_default();
        shapes.insert(
            w,
            RawShapes {
                cpu: u.cpu.or(b.cpu),
                cuda: u.cuda.or(b.cuda),
                sim: u.sim.or(b.sim),
                check: u.check.or(b.check),
            },
        );
    }
    RawConfig {
        seed: user.seed.or(base.seed),
        cpu_reference_max_gflop: user
            .cpu_reference_max_gflop
            .or(base.cpu_reference_max_gflop),
        reference_samples: user.reference_samples.or(base.reference_samples),
        cpu: device(base.cpu, user.cpu),
        cuda: device(base.cuda, user.cuda),
        sim: device(base.sim, user.sim),
        shapes: Some(shapes),
        kernel: user.kernel.or(base.kernel),
    }
}

/// The 1-based line where `table.key` is set: by a `[table.key]` header, a `key =` line
/// under `[table]`, a dotted key (`gemm.cpu =` under `[shapes]`, `shapes.gemm.cpu =` at the
/// top), or else the line of the inline table that holds it (`shapes = { gemm = ... }`).
fn locate(text: &str, table: &str, key: &str) -> Option<usize> {
    let target = if table.is_empty() {
        key.to_string()
    } else {
        format!("{table}.{key}")
    };
    let mut current = String::new();
    let mut holder = None;
    for (i, line) in text.lines().enumerate() {
        let l = line.trim();
        if l.starts_with('#') {
            continue;
        }
        if let Some(name) = header(l) {
            if name == target {
                return Some(i + 1);
            }
            current = name;
            continue;
        }
        let Some((k, _)) = l.split_once('=') else {
            continue;
        };
        let full = match dotted(k) {
            k if current.is_empty() => k,
            k => format!("{current}.{k}"),
        };
        if full == target {
            return Some(i + 1);
        }
        if holder.is_none() && target.starts_with(&format!("{full}.")) {
            holder = Some(i + 1);
        }
    }
    holder
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_shipped_defaults_are_valid() {
        let c = Config::defaults();
        assert!(!c.shapes(Workload::Gemm, "check").is_empty());
        assert!(c.cpu.workloads.contains(&Workload::Gemm));
    }

    #[test]
    fn user_values_override_defaults() {
        let c = Config::from_sources(Some((
            "mine.toml",
            "seed = 7\n[shapes.gemm]\ncpu = [\"64\"]\n",
        )))
        .unwrap();
        assert_eq!(c.seed, 7);
        assert_eq!(
            c.shapes(Workload::Gemm, "cpu"),
            vec![Shape::square_gemm(64)]
        );
        assert!(
            !c.shapes(Workload::Gemm, "cuda").is_empty(),
            "untouched keys keep defaults"
        );
    }

    #[test]
    fn a_kernel_sections_later_errors_name_its_place_in_the_file() {
        let text = "seed = 1\n\n[[kernel]]\nfile = \"nothere.cu\"\nentry = \"k\"\n";
        let cfg = Config::from_sources(Some(("cfg/k.toml", text))).unwrap();
        let e = crate::user_kernel::load_all(&cfg.kernels, &[], &[], None)
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("(the [[kernel]] at cfg/k.toml:4)") && e.contains("cannot read"),
            "{e}"
        );
    }

    #[test]
    fn a_later_launchs_bad_option_names_the_then_line() {
        let text = "[[kernel]]\nfile = \"k.cu\"\nentry = \"k\"\nblock = 256\ngrid = [8]\n\
                    then = [{ entry = \"r\", block = \"2048\", grid = [1] }]\n";
        let e = Config::from_sources(Some(("k.toml", text)))
            .unwrap_err()
            .to_string();
        assert!(e.starts_with("k.toml:6: "), "{e}");
        assert!(e.contains("key `then`: then=r: "), "{e}");
    }

    #[test]
    fn a_workloads_shapes_given_as_a_list_say_they_are_a_table() {
        let e = Config::from_sources(Some(("s.toml", "[shapes]\ngemm = [\"5\"]\n")))
            .unwrap_err()
            .to_string();
        assert!(
            e.starts_with("s.toml:2: key `shapes.gemm`: expected a table of sizes by use"),
            "{e}"
        );
        // Within the table, the key of the list at fault.
        let e = Config::from_sources(Some(("s.toml", "[shapes.gemm]\ncpu = 5\n")))
            .unwrap_err()
            .to_string();
        assert!(e.contains("key `shapes.gemm.cpu`"), "{e}");
    }

    #[test]
    fn a_key_or_table_given_twice_is_named() {
        let e = |text: &str| {
            Config::from_sources(Some(("d.toml", text)))
                .unwrap_err()
                .to_string()
        };
        let key = e("seed = 1\nseed = 2\n");
        assert!(
            key.starts_with("d.toml:2:") && key.contains("`seed` is given twice"),
            "{key}"
        );
        let table = e("[cpu]\n[cpu]\n");
        assert!(
            table.starts_with("d.toml:2:") && table.contains("`cpu` is given twice"),
            "{table}"
        );
    }

    #[test]
    fn errors_name_file_line_and_key() {
        let bad_shape = "seed = 1\n\n[shapes.gemm]\ncpu = [\"0\"]\n";
        let e = Config::from_sources(Some(("a.toml", bad_shape)))
            .unwrap_err()
            .to_string();
        assert!(e.starts_with("a.toml:4:"), "{e}");
        assert!(
            e.contains("shapes.gemm.cpu") && e.contains("dimension"),
            "{e}"
        );

        let typo = "[cpu]\ntiming = { warmup_ms = 1.0, sampels = 3 }\n";
        let e = Config::from_sources(Some(("b.toml", typo)))
            .unwrap_err()
            .to_string();
        assert!(e.starts_with("b.toml:2:") && e.contains("sampels"), "{e}");
        // The key before the comma is not the one at fault.
        assert!(
            e.contains("key `cpu.timing`: unknown field `sampels`"),
            "{e}"
        );

        // A value of the wrong form is said in the file's words, not the parser's types.
        let kernel = "[[kernel]]\nfile = \"k.cu\"\nentry = \"k\"\nblock = 1.5\n";
        let e = Config::from_sources(Some(("k.toml", kernel)))
            .unwrap_err()
            .to_string();
        assert!(
            e.starts_with("k.toml:4:")
                && e.contains("kernel.block")
                && e.contains("expected a number of threads, words in quotes")
                && !e.contains("untagged"),
            "{e}"
        );

        // A warm-up no run would finish is refused, naming the key.
        let forever = "[cpu]\ntiming = { warmup_ms = 1e300 }\n";
        let e = Config::from_sources(Some(("t.toml", forever)))
            .unwrap_err()
            .to_string();
        assert!(
            e.starts_with("t.toml:2:") && e.contains("cpu.timing") && e.contains("an hour"),
            "{e}"
        );

        let syntax = "seed = \n";
        let e = Config::from_sources(Some(("c.toml", syntax)))
            .unwrap_err()
            .to_string();
        assert!(e.starts_with("c.toml:1:"), "{e}");

        let workload = "[cuda]\nworkloads = [\"gemm\", \"fft\"]\n";
        let e = Config::from_sources(Some(("d.toml", workload)))
            .unwrap_err()
            .to_string();
        assert!(
            e.starts_with("d.toml:2:") && e.contains("valid: gemm"),
            "{e}"
        );

        let timing = "[cpu]\ntiming = { samples = 0 }\n";
        let e = Config::from_sources(Some(("e.toml", timing)))
            .unwrap_err()
            .to_string();
        assert!(
            e.starts_with("e.toml:2:") && e.contains("cpu.timing"),
            "{e}"
        );

        // However the file spells the key, dotted or inline, the error finds its line.
        for (text, line) in [
            ("seed = 1\nshapes.gemm.cpu = [\"64\", \"0\"]\n", 2),
            ("seed = 1\n[shapes]\ngemm.cpu = [\"0\"]\n", 3),
            ("seed = 1\n\nshapes = { gemm = { cpu = [\"0\"] } }\n", 3),
        ] {
            let e = Config::from_sources(Some(("s.toml", text)))
                .unwrap_err()
                .to_string();
            assert!(
                e.starts_with(&format!("s.toml:{line}: key `shapes.gemm.cpu`")),
                "{text}: {e}"
            );
        }

        // A value of the wrong type names its key, and the type in the file's words.
        for (text, want) in [
            (
                "seed = \"x\"\n",
                "w.toml:1: key `seed`: invalid type: string \"x\", expected a whole number",
            ),
            (
                "[cpu]\nworkloads = \"gemm\"\n",
                "w.toml:2: key `cpu.workloads`: invalid type: string \"gemm\", expected a list",
            ),
            (
                "[cuda]\ntiming = { samples = 3, warmup_ms = \"fast\" }\n",
                "w.toml:2: key `cuda.timing.warmup_ms`: invalid type: string \"fast\", \
                 expected a number",
            ),
        ] {
            let e = Config::from_sources(Some(("w.toml", text)))
                .unwrap_err()
                .to_string();
            assert!(e.starts_with(want), "{text}: {e}");
        }

        let big = "[shapes.gemm]\ncheck = [\"1000000\"]\n";
        let e = Config::from_sources(Some(("f.toml", big)))
            .unwrap_err()
            .to_string();
        assert!(e.starts_with("f.toml:2:") && e.contains("limit"), "{e}");
    }
}
