//! Two results files side by side: per-row time ratios (before/after a change, or one device
//! against another), as a table and a chart.

use crate::report::charts::axes::fmt_num;
use crate::report::charts::bars::{Bar, Bars, VLine};
use crate::report::charts::canvas::{BLACK_TEXT, Dash, GREY};
use crate::report::charts::header::{Entry, Header, Mark};
use crate::report::charts::{self, PALETTE, REFERENCE};
use crate::report::table;
use crate::results::{Row, RunResults, Status, WorkloadResults};
use anyhow::Result;
use kernel::Workload;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};

/// One row present in either file.
#[derive(Debug, Clone, PartialEq)]
pub struct Ratio {
    pub workload: Workload,
    pub shape: String,
    pub id: String,
    pub a_ms: Option<f64>,
    pub b_ms: Option<f64>,
    /// A's time over B's: above 1, B is faster. Only when both passed.
    pub speedup: Option<f64>,
    /// False when the two rows' p10-p90 time ranges overlap (the difference is inside the
    /// noise of either run) or their medians differ by less than 1%.
    pub significant: bool,
    /// Why there is no ratio.
    pub note: Option<String>,
    /// B's row failed or could not run where A's passed, declined, or was not there: the
    /// change broke it.
    pub broke: bool,
}

/// What the `~` of [`Ratio::cell`] means, for every legend that shows it.
pub const NOISE_NOTE: &str = "~ marks a ratio inside the noise: the two rows' p10-p90 time ranges overlap, or the two \
     differ by less than 1%";

impl Ratio {
    /// `2.00x`, `~1.03x` inside the noise, `-` without a ratio.
    pub fn cell(&self) -> String {
        match self.speedup {
            Some(s) if self.significant => format!("{s:.2}x"),
            Some(s) => format!("~{s:.2}x"),
            None => "-".into(),
        }
    }
}

/// The row `id` of `run` at `shape` of workload `w`.
fn row_of<'a>(run: &'a RunResults, w: Workload, shape: &str, id: &str) -> Option<&'a Row> {
    run.workloads
        .iter()
        .filter(|x| x.workload == w)
        .flat_map(|x| &x.shapes)
        .filter(|s| s.label == shape)
        .flat_map(|s| &s.rows)
        .find(|r| r.id == id)
}

/// Every row of `a` and `b`, matched by workload, shape and kernel id.
pub fn ratios(a: &RunResults, b: &RunResults) -> Vec<Ratio> {
    let mut out = Vec::new();
    let find =
        |run: &RunResults, w: Workload, shape: &str, id: &str| row_of(run, w, shape, id).cloned();
    let mut keys: Vec<(Workload, String, String)> = Vec::new();
    for run in [a, b] {
        for w in &run.workloads {
            for s in &w.shapes {
                for r in &s.rows {
                    let k = (w.workload, s.label.clone(), r.id.clone());
                    if !keys.contains(&k) {
                        keys.push(k);
                    }
                }
            }
        }
    }
    for (w, shape, id) in keys {
        let ra = find(a, w, &shape, &id);
        let rb = find(b, w, &shape, &id);
        let timing = |r: &Option<crate::results::Row>| {
            r.as_ref()
                .filter(|r| r.passed())
                .and_then(|r| r.timing.clone())
        };
        let (ta, tb) = (timing(&ra), timing(&rb));
        let unsupported = |r: &Option<crate::results::Row>| {
            r.as_ref().is_none_or(|r| r.status == Status::Unsupported)
        };
        // Rows neither device could run (cuBLAS on two CPUs) say nothing.
        if unsupported(&ra) && unsupported(&rb) {
            continue;
        }
        let (a_ms, b_ms) = (
            ta.as_ref().map(|t| t.median_ms),
            tb.as_ref().map(|t| t.median_ms),
        );
        let note = match (&ra, &rb) {
            (None, _) => Some("only in B".to_string()),
            (_, None) => Some("only in A".to_string()),
            (Some(x), Some(y)) => match (x.passed(), y.passed()) {
                (true, true) if a_ms.is_some() && b_ms.is_some() => None,
                (true, true) => Some("not timed".to_string()),
                (false, false) if x.status != y.status => Some(format!(
                    "{} in A, {} in B",
                    status_word(x.status),
                    status_word(y.status)
                )),
                (false, false) => Some(format!("{} in A and B", status_word(x.status))),
                (false, _) => Some(format!("{} in A", status_word(x.status))),
                (_, false) => Some(format!("{} in B", status_word(y.status))),
            },
        };
        let fails = |r: &Option<Row>| r.as_ref().is_some_and(Row::failed);
        out.push(Ratio {
            workload: w,
            shape,
            id,
            a_ms,
            b_ms,
            speedup: match (a_ms, b_ms) {
                (Some(x), Some(y)) if y > 0.0 => Some(x / y),
                _ => None,
            },
            significant: ta
                .as_ref()
                .zip(tb.as_ref())
                .is_some_and(|(x, y)| x.stands_apart_from(y)),
            note,
            broke: fails(&rb) && !fails(&ra),
        });
    }
    out
}

/// The rows B broke ([`Ratio::broke`]), for the end of either table: empty when there are
/// none, else what makes `compare` exit with 1.
pub fn broken_text(ratios: &[Ratio]) -> String {
    let broke: Vec<String> = ratios
        .iter()
        .filter(|r| r.broke)
        .map(|r| format!("{} {} {}", r.workload.name(), r.shape, r.id))
        .collect();
    match broke.len() {
        0 => String::new(),
        n => format!(
            "B fails {n} row{} that A passed, declined or did not run: {}\n",
            if n == 1 { "" } else { "s" },
            broke.join(", ")
        ),
    }
}

fn status_word(s: crate::results::Status) -> String {
    format!("{s:?}").to_lowercase()
}

fn describe(run: &RunResults) -> String {
    format!("{} ({}, commit {})", run.device.name, run.date, run.commit)
}

/// What a reader must know before reading the ratios as the code's: A and B ran on different
/// devices (and code).
pub fn caveat(a: &RunResults, b: &RunResults) -> Option<String> {
    (a.device.name != b.device.name).then(|| {
        format!(
            "A and B ran on different devices ({} and {}){}: each ratio is the two machines' \
             difference as much as the code's",
            a.device.name,
            b.device.name,
            if a.commit == b.commit {
                ""
            } else {
                " and different commits"
            }
        )
    })
}

/// The terminal table, its columns as wide as their longest cell, and a count of the rows B
/// runs faster and slower beyond the noise.
pub fn text(a: &RunResults, b: &RunResults, ratios: &[Ratio]) -> String {
    let mut s = format!("A: {}\nB: {}\n", describe(a), describe(b));
    if let Some(c) = caveat(a, b) {
        let _ = writeln!(s, "{c}.");
    }
    s.push('\n');
    let f = |v: Option<f64>| v.map(|x| format!("{x:.3}")).unwrap_or_else(|| "-".into());
    let head = ["workload", "shape", "kernel", "A ms", "B ms", "A/B", "note"].map(String::from);
    let rows: Vec<Vec<String>> = ratios
        .iter()
        .map(|r| {
            vec![
                r.workload.name().to_string(),
                r.shape.clone(),
                r.id.clone(),
                f(r.a_ms),
                f(r.b_ms),
                r.cell(),
                r.note.clone().unwrap_or_default(),
            ]
        })
        .collect();
    // Names left, figures right.
    s.push_str(&crate::console::aligned(&head, &rows, |c| {
        (3..=5).contains(&c)
    }));
    let count = |faster: bool| {
        ratios
            .iter()
            .filter(|r| r.significant && r.speedup.is_some_and(|x| (x > 1.0) == faster))
            .count()
    };
    let with_ratio = ratios.iter().filter(|r| r.speedup.is_some()).count();
    let _ = writeln!(
        s,
        "\nA/B above 1: B is faster; {NOISE_NOTE}.\nOf {with_ratio} rows with a ratio, B is \
         faster in {} and slower in {} beyond the noise.",
        count(true),
        count(false)
    );
    s
}

/// Whether `run` comes from the simulator, which counts and times nothing.
pub fn simulated(run: &RunResults) -> bool {
    run.device.kind == kernel::DeviceKind::Sim.name()
}

/// Two simulator runs side by side, which have no times: for each row of either, what the
/// simulator counted in A and in B (the global-memory bytes the kernel issued, its
/// shared-memory wavefronts and global cache lines over the fewest, its registers) and its
/// error against the reference, each `A -> B`.
pub fn counts_text(a: &RunResults, b: &RunResults, ratios: &[Ratio]) -> String {
    let mut s = format!("A: {}\nB: {}\n\n", describe(a), describe(b));
    // A row of one run alone shows its own figures (its note says which run).
    let pair = |ra: Option<&Row>, rb: Option<&Row>, cell: &dyn Fn(&Row) -> String| match (ra, rb) {
        (Some(x), Some(y)) if cell(x) != cell(y) => format!("{} -> {}", cell(x), cell(y)),
        (Some(x), _) => cell(x),
        (None, Some(y)) => cell(y),
        (None, None) => "-".into(),
    };
    let traffic = |r: &Row| {
        r.traffic
            .map_or("-".into(), |t| table::bytes(t.bytes() as u64))
    };
    let regs =
        |r: &Row| crate::run::primary_resources(r).map_or("-".into(), |x| x.registers.to_string());
    let error = |r: &Row| {
        r.check
            .as_ref()
            .map_or("-".into(), |c| format!("{:.1e}", c.rel_error))
    };
    let head = [
        "workload",
        "shape",
        "kernel",
        "traffic",
        "bank conflicts",
        "global lines",
        "regs",
        "rel. error",
        "note",
    ]
    .map(String::from);
    let rows: Vec<Vec<String>> = ratios
        .iter()
        .map(|r| {
            let ra = row_of(a, r.workload, &r.shape, &r.id);
            let rb = row_of(b, r.workload, &r.shape, &r.id);
            vec![
                r.workload.name().to_string(),
                r.shape.clone(),
                r.id.clone(),
                pair(ra, rb, &traffic),
                pair(ra, rb, &table::bank_cell),
                pair(ra, rb, &table::lines_cell),
                pair(ra, rb, &regs),
                pair(ra, rb, &error),
                r.note
                    .clone()
                    .filter(|n| n != "not timed")
                    .unwrap_or_default(),
            ]
        })
        .collect();
    s.push_str(&crate::console::aligned(&head, &rows, |c| {
        (3..=7).contains(&c)
    }));
    let _ = writeln!(
        s,
        "\nA simulator run times nothing: each cell is what it counted in A, then `-> B` where B \
         differs. traffic: the global-memory bytes the kernel issued; bank conflicts: its \
         shared-memory wavefronts over the conflict-free count; global lines: the cache lines \
         its plain global accesses touched over the coalesced count; regs: registers per thread \
         (NVRTC's)."
    );
    s
}

/// The comparison chart of each workload with a ratio, on its largest such shape, with its
/// file stem `compare-<workload>`.
pub(crate) fn ratio_charts(
    a: &RunResults,
    b: &RunResults,
    ratios: &[Ratio],
) -> Vec<(String, Bars)> {
    let mut out = Vec::new();
    for w in &b.workloads {
        let best = w
            .shapes
            .iter()
            .filter(|s| {
                ratios
                    .iter()
                    .any(|r| r.workload == w.workload && r.shape == s.label && r.speedup.is_some())
            })
            .max_by(|x, y| x.shape.cmp_size(&y.shape));
        let Some(shape) = best else { continue };
        let rows: Vec<&Ratio> = ratios
            .iter()
            .filter(|r| r.workload == w.workload && r.shape == shape.label)
            .collect();
        out.push((
            format!("compare-{}", w.workload.name()),
            chart(a, b, w, &shape.label, &rows),
        ));
    }
    out
}

/// Writes `compare-<workload>.{svg,png}` for each workload with a ratio, into `dir`.
pub fn write_charts(
    a: &RunResults,
    b: &RunResults,
    ratios: &[Ratio],
    dir: &Path,
) -> Result<Vec<PathBuf>> {
    std::fs::create_dir_all(dir)?;
    let mut out = Vec::new();
    for (stem, chart) in ratio_charts(a, b, ratios) {
        out.extend(charts::save(&chart, dir, &stem)?);
    }
    Ok(out)
}

/// The ratio of each row's times as a bar from parity: right of it B is faster.
fn chart(
    a: &RunResults,
    b: &RunResults,
    w: &WorkloadResults,
    shape: &str,
    rows: &[&Ratio],
) -> Bars {
    let (faster, slower, noise) = (PALETTE[2], PALETTE[3], PALETTE[7]);
    let bars = rows
        .iter()
        .map(|r| Bar {
            name: r.id.clone(),
            value: r.speedup,
            range: None,
            color: match r.speedup {
                _ if !r.significant => noise,
                Some(s) if s >= 1.0 => faster,
                _ => slower,
            },
            notes: match r.speedup {
                Some(_) => vec![(r.cell(), BLACK_TEXT)],
                None => vec![(r.note.clone().unwrap_or_else(|| "no ratio".into()), GREY)],
            },
        })
        .collect();
    Bars {
        header: Header {
            title: format!("{} {shape}: A time / B time per kernel", w.workload.title()),
            notes: vec![
                format!("A: {}", describe(a)),
                format!("B: {}", describe(b)),
                format!(
                    "Ratio of median times (log scale): right of parity B is faster, left of it \
                     slower; rows that failed or ran on one side only have no bar. {NOISE_NOTE}."
                ),
            ],
            legend: vec![
                Entry {
                    label: "B faster than A".into(),
                    color: faster,
                    mark: Mark::Bar,
                },
                Entry {
                    label: "B slower than A".into(),
                    color: slower,
                    mark: Mark::Bar,
                },
                Entry {
                    label: "inside the noise".into(),
                    color: noise,
                    mark: Mark::Bar,
                },
            ],
        },
        footer: format!(
            "A {} · B {} · harness compare",
            a.date.get(..10).unwrap_or(&a.date),
            b.date.get(..10).unwrap_or(&b.date)
        ),
        axis_title: "A time / B time (log scale)".into(),
        log: true,
        base: Some(1.0),
        format: |v| format!("{}x", fmt_num(v)),
        rows: bars,
        lines: vec![VLine {
            value: 1.0,
            label: "parity".into(),
            color: REFERENCE,
            dash: Dash::Dashed,
        }],
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::tests::synthetic;

    #[test]
    fn ratios_match_rows_and_refuse_failures() {
        let a = synthetic();
        let mut b = synthetic();
        let shape = &mut b.workloads[0].shapes[2];
        // B: tiled twice as fast, naive failed, one row gone.
        for r in &mut shape.rows {
            if r.id == "gemm-tiled" {
                let t = r.timing.as_mut().unwrap();
                for ms in [&mut t.median_ms, &mut t.p10_ms, &mut t.p90_ms] {
                    *ms /= 2.0;
                }
            }
            if r.id == "gemm-naive" {
                r.status = Status::Failed;
            }
        }
        shape.rows.retain(|r| r.id != "cublas-fp16");
        let all = ratios(&a, &b);
        let at = |id: &str| {
            all.iter()
                .find(|r| r.shape == "4096x4096x4096" && r.id == id)
                .unwrap()
        };
        assert_eq!(at("gemm-tiled").speedup, Some(2.0));
        assert_eq!(at("gemm-regblock").speedup, Some(1.0));
        assert_eq!(at("gemm-naive").speedup, None);
        assert_eq!(at("gemm-naive").note.as_deref(), Some("failed in B"));
        assert_eq!(at("gemm-broken").note.as_deref(), Some("failed in A and B"));
        assert_eq!(at("cublas-fp16").note.as_deref(), Some("only in A"));
        // Every row of either file appears once, except the one neither could run.
        assert_eq!(all.len(), 3 * 7);
        let t = text(&a, &b, &all);
        assert!(t.contains("2.00x") && t.contains("B is faster"));
        // The same rows in both runs: every other ratio is inside the noise, and said so.
        assert!(at("gemm-tiled").significant && !at("gemm-regblock").significant);
        assert_eq!(at("gemm-regblock").cell(), "~1.00x");
        assert!(
            t.contains("B is faster in 1 and slower in 0 beyond the noise"),
            "{t}"
        );
        // Every row's A/B cell ends under the header's, whatever the kernel's name.
        let table: Vec<&str> = t
            .lines()
            .skip_while(|l| !l.starts_with("workload"))
            .take_while(|l| !l.is_empty())
            .collect();
        let end = table[0].find("A/B").unwrap() + 3;
        assert_eq!(table.len(), all.len() + 1);
        for l in &table[1..] {
            assert!(matches!(l.as_bytes()[end - 1], b'x' | b'-'), "{l}");
        }
        // One device: no caveat; two: said before any ratio.
        assert!(caveat(&a, &b).is_none() && !t.contains("different devices"));
        let mut other = b.clone();
        other.device.name = "Another GPU".into();
        let t = text(&a, &other, &all);
        assert!(
            t.contains("A and B ran on different devices (") && t.contains(" and Another GPU)"),
            "{t}"
        );
    }

    /// Two simulator runs compare by what the simulator counted: each cell A's, then B's
    /// where it differs.
    #[test]
    fn simulator_runs_compare_by_their_counts() {
        let a = crate::report::charts::tests::sim();
        let mut b = a.clone();
        for s in &mut b.workloads[0].shapes {
            let r = s.rows.iter_mut().find(|r| r.id == "gemm-tiled").unwrap();
            let t = r.traffic.as_mut().unwrap();
            (t.load_bytes, t.store_bytes) = (t.load_bytes / 2.0, t.store_bytes / 2.0);
        }
        assert!(simulated(&a) && simulated(&b) && !simulated(&synthetic()));
        let t = counts_text(&a, &b, &ratios(&a, &b));
        let row = |id: &str| {
            t.lines()
                .find(|l| l.contains("4096x4096x4096") && l.contains(&format!(" {id} ")))
                .unwrap_or_else(|| panic!("{t}"))
        };
        // The halved traffic reads `A -> B`; the same registers, one figure.
        assert!(row("gemm-tiled").contains(" -> "), "{t}");
        assert!(
            !row("gemm-naive").contains(" -> ") && row("gemm-naive").contains(" 40 "),
            "{t}"
        );
        assert!(t.contains("A simulator run times nothing"), "{t}");
        assert!(!t.contains("not timed"), "{t}");
    }

    #[test]
    fn a_row_failing_in_b_only_is_what_b_broke() {
        let mut a = crate::report::charts::tests::sim();
        let fail = |run: &mut RunResults, id: &str, status: Status| {
            let shape = &mut run.workloads[0].shapes[0];
            shape.rows.iter_mut().find(|r| r.id == id).unwrap().status = status;
            shape.label.clone()
        };
        let mut b = a.clone();
        let shape = fail(&mut b, "gemm-tiled", Status::Failed);
        fail(&mut a, "gemm-naive", Status::Error);
        fail(&mut b, "gemm-naive", Status::Failed);
        let r = ratios(&a, &b);
        let of = |id: &str| r.iter().find(|x| x.id == id && x.shape == shape).unwrap();
        assert!(of("gemm-tiled").broke && of("gemm-tiled").note.as_deref() == Some("failed in B"));
        // Failing in both is not B's doing.
        assert!(!of("gemm-naive").broke);
        assert_eq!(
            of("gemm-naive").note.as_deref(),
            Some("error in A, failed in B")
        );
        assert_eq!(
            broken_text(&r),
            format!(
                "B fails 1 row that A passed, declined or did not run: gemm {shape} gemm-tiled\n"
            )
        );
        // The other way round, B fixed them.
        assert!(broken_text(&ratios(&b, &a)).is_empty());
    }

    #[test]
    fn comparison_chart_is_written() {
        let (a, b) = (synthetic(), synthetic());
        let dir = std::env::temp_dir().join(format!("lab-compare-{}", std::process::id()));
        let files = write_charts(&a, &b, &ratios(&a, &b), &dir).unwrap();
        assert_eq!(files.len(), 2);
        let svg = std::fs::read_to_string(dir.join("compare-gemm.svg")).unwrap();
        assert!(svg.contains("A time / B time per kernel"));
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
