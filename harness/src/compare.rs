//! Two results files side by side: per-row time ratios (before/after a change, or one device
//! against another), as a table and a chart.

use crate::report::charts::{
    self, Chart, Drawn, Entry, FONT_NAME, Mark, PALETTE, bar_label, frame, hline, log_bounds,
    short_id,
};
use crate::results::{RunResults, Status, WorkloadResults};
use anyhow::Result;
use kernel::Workload;
use plotters::coord::Shift;
use plotters::prelude::*;
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
    /// Why there is no ratio.
    pub note: Option<String>,
}

/// Every row of `a` and `b`, matched by workload, shape and kernel id.
pub fn ratios(a: &RunResults, b: &RunResults) -> Vec<Ratio> {
    let mut out = Vec::new();
    let find = |run: &RunResults, w: Workload, shape: &str, id: &str| {
        run.workloads
            .iter()
            .filter(|x| x.workload == w)
            .flat_map(|x| &x.shapes)
            .filter(|s| s.label == shape)
            .flat_map(|s| &s.rows)
            .find(|r| r.id == id)
            .cloned()
    };
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
        let time = |r: &Option<crate::results::Row>| {
            r.as_ref()
                .filter(|r| r.passed())
                .and_then(|r| r.median_ms())
        };
        let unsupported = |r: &Option<crate::results::Row>| {
            r.as_ref().is_none_or(|r| r.status == Status::Unsupported)
        };
        // Rows neither device could run (cuBLAS on two CPUs) say nothing.
        if unsupported(&ra) && unsupported(&rb) {
            continue;
        }
        let (a_ms, b_ms) = (time(&ra), time(&rb));
        let note = match (&ra, &rb) {
            (None, _) => Some("only in B".to_string()),
            (_, None) => Some("only in A".to_string()),
            (Some(x), Some(y)) => match (x.passed(), y.passed()) {
                (true, true) if a_ms.is_some() && b_ms.is_some() => None,
                (true, true) => Some("not timed".to_string()),
                (false, _) => Some(format!("{} in A", status_word(x.status))),
                (_, false) => Some(format!("{} in B", status_word(y.status))),
            },
        };
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
            note,
        });
    }
    out
}

fn status_word(s: crate::results::Status) -> String {
    format!("{s:?}").to_lowercase()
}

fn describe(run: &RunResults) -> String {
    format!("{} ({}, commit {})", run.device.name, run.date, run.commit)
}

/// The terminal table.
pub fn text(a: &RunResults, b: &RunResults, ratios: &[Ratio]) -> String {
    let mut s = format!("A: {}\nB: {}\n", describe(a), describe(b));
    let _ = writeln!(
        s,
        "\n{:<10} {:<18} {:<20} {:>11} {:>11} {:>9}  note",
        "workload", "shape", "kernel", "A ms", "B ms", "A/B"
    );
    let f = |v: Option<f64>| v.map(|x| format!("{x:.3}")).unwrap_or_else(|| "-".into());
    for r in ratios {
        let _ = writeln!(
            s,
            "{:<10} {:<18} {:<20} {:>11} {:>11} {:>9}  {}",
            r.workload.name(),
            r.shape,
            r.id,
            f(r.a_ms),
            f(r.b_ms),
            r.speedup
                .map(|x| format!("{x:.2}x"))
                .unwrap_or_else(|| "-".into()),
            r.note.as_deref().unwrap_or("")
        );
    }
    s.push_str("\nA/B above 1: B is faster.\n");
    s
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
    for w in &b.workloads {
        // The largest shape with a ratio in this workload.
        let best = w
            .shapes
            .iter()
            .filter(|s| {
                ratios
                    .iter()
                    .any(|r| r.workload == w.workload && r.shape == s.label && r.speedup.is_some())
            })
            .max_by(|x, y| x.flops.total_cmp(&y.flops));
        let Some(shape) = best else { continue };
        let rows: Vec<&Ratio> = ratios
            .iter()
            .filter(|r| r.workload == w.workload && r.shape == shape.label)
            .collect();
        let chart = CompareChart {
            a,
            b,
            w,
            shape: &shape.label,
            rows,
        };
        out.extend(charts::save(
            &chart,
            dir,
            &format!("compare-{}", w.workload.name()),
        )?);
    }
    Ok(out)
}

struct CompareChart<'a> {
    a: &'a RunResults,
    b: &'a RunResults,
    w: &'a WorkloadResults,
    shape: &'a str,
    rows: Vec<&'a Ratio>,
}

impl Chart for CompareChart<'_> {
    fn draw<DB: DrawingBackend>(&self, root: &DrawingArea<DB, Shift>) -> Result<()> {
        let legend = vec![
            Entry {
                label: format!("A: {}", describe(self.a)),
                color: PALETTE[7],
                mark: Mark::Bar,
            },
            Entry {
                label: format!("B: {}", describe(self.b)),
                color: PALETTE[7],
                mark: Mark::Bar,
            },
            Entry {
                label: "B faster (A time / B time > 1)".into(),
                color: PALETTE[2],
                mark: Mark::Bar,
            },
            Entry {
                label: "B slower".into(),
                color: PALETTE[3],
                mark: Mark::Bar,
            },
            Entry {
                label: "parity".into(),
                color: RGBColor(40, 40, 40),
                mark: Mark::Dashed,
            },
        ];
        let title = format!(
            "{} {}: A time / B time per kernel",
            self.w.workload.name().to_uppercase(),
            self.shape
        );
        let footer = format!(
            "A {} · B {} · harness compare",
            self.a.date.get(..10).unwrap_or(&self.a.date),
            self.b.date.get(..10).unwrap_or(&self.b.date)
        );
        let plot = frame(
            root,
            &title,
            "Ratio of median times (log scale); rows that failed or ran on one side only have no bar",
            &footer,
            &legend,
        )?;
        let n = self.rows.len() as i32;
        let values: Vec<f64> = self.rows.iter().filter_map(|r| r.speedup).collect();
        let (lo, hi) = log_bounds(&values, 0.6, 1.8);
        let (lo, hi) = (lo.min(0.5), hi.max(2.0));
        let labels: Vec<String> = self.rows.iter().map(|r| short_id(&r.id, self.w)).collect();
        let mut chart = ChartBuilder::on(&plot)
            .margin(15)
            .x_label_area_size(40)
            .y_label_area_size(80)
            .build_cartesian_2d(-0.5..f64::from(n) - 0.5, (lo..hi).log_scale())
            .drawn()?;
        chart
            .configure_mesh()
            .disable_x_mesh()
            .x_labels(0)
            .y_desc("A time / B time (x)")
            .y_label_formatter(&|v| {
                let l = charts::log_label(v);
                if l.is_empty() { l } else { format!("{l}x") }
            })
            .label_style((FONT_NAME, 14))
            .axis_desc_style((FONT_NAME, 15))
            .light_line_style(WHITE)
            .bold_line_style(BLACK.mix(0.1))
            .draw()
            .drawn()?;
        charts::category_labels(&plot, &chart, &labels)?;
        for (i, r) in self.rows.iter().enumerate() {
            let i = i as i32;
            match r.speedup {
                Some(s) => {
                    let c = if s >= 1.0 { PALETTE[2] } else { PALETTE[3] };
                    // Bars grow from parity, up for faster and down for slower.
                    charts::bar(&mut chart, i, 1.0, s, c)?;
                    let y = if s >= 1.0 { s * 1.06 } else { 1.06 };
                    bar_label(&mut chart, i, y, format!("{s:.2}x"))?;
                }
                None => {
                    let note = r.note.clone().unwrap_or_else(|| "no ratio".into());
                    bar_label(&mut chart, i, 1.06, note)?;
                }
            }
        }
        hline(&mut chart, n, 1.0, RGBColor(40, 40, 40))?;
        Ok(())
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
                t.median_ms /= 2.0;
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
        assert_eq!(at("gemm-broken").note.as_deref(), Some("failed in A"));
        assert_eq!(at("cublas-fp16").note.as_deref(), Some("only in A"));
        // Every row of either file appears once, except the one neither could run.
        assert_eq!(all.len(), 3 * 7);
        let t = text(&a, &b, &all);
        assert!(t.contains("2.00x") && t.contains("B is faster"));
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
