//! What the simulator shows without times: the arithmetic intensity each rung really issues
//! (FLOP per byte of the global-memory traffic it counted), one bar per rung on a log axis,
//! with the compulsory intensity (each input read once, the output written once) marked. The
//! rungs of a GEMM sit at different intensities: tiling is data reuse.

use super::axes::{fmt_num, sig3};
use super::bars::{Bar, Bars, VLine};
use super::canvas::{BLACK_TEXT, Dash, GREY};
use super::header::{Entry, Header, Mark};
use super::{LOSS, REFERENCE, colour_legend, footer, rung_rows, stage_color};
use crate::report::model::{Report, ShapeReport};
use crate::report::table::bytes;

/// The intensity chart of `s`; `None` for timed runs (the roofline shows intensity there),
/// when no row's traffic was counted, and for a shape that computes nothing.
pub fn chart(report: &Report, s: &ShapeReport) -> Option<Bars> {
    if s.shape.workload().computes_nothing() {
        return None;
    }
    let rungs = rung_rows(s);
    let source = rungs.iter().find_map(|r| r.traffic_intensity)?.1;
    if report.timed() {
        return None;
    }
    let rows = rungs
        .iter()
        .map(|r| {
            let counted = r.traffic_intensity.filter(|_| r.row.passed());
            let notes = match (counted, r.row.traffic) {
                (Some((x, _)), Some(t)) => vec![
                    (format!("{} FLOP/B", sig3(x)), BLACK_TEXT),
                    (format!("{} moved", bytes(t.bytes() as u64)), GREY),
                ],
                _ if !r.row.passed() => vec![("failed its check".into(), LOSS)],
                _ => vec![("traffic not counted".into(), GREY)],
            };
            Bar {
                name: format!("{} {}", r.tag, r.row.id),
                value: counted.map(|x| x.0),
                range: None,
                color: stage_color(r.row.stage),
                notes,
            }
        })
        .collect();
    // One line per distinct compulsory intensity (rows of another precision move other bytes).
    let mut compulsory: Vec<(f64, Vec<&str>)> = Vec::new();
    for r in &rungs {
        let (x, p) = (r.compulsory_intensity, r.row.precision.name());
        match compulsory
            .iter_mut()
            .find(|(v, _)| (v - x).abs() <= 1e-9 * x)
        {
            Some((_, ps)) if !ps.contains(&p) => ps.push(p),
            Some(_) => {}
            None => compulsory.push((x, vec![p])),
        }
    }
    let lines = compulsory
        .into_iter()
        .map(|(x, ps)| VLine {
            value: x,
            label: format!("compulsory, {} rows: {} FLOP/B", ps.join(", "), sig3(x)),
            color: REFERENCE,
            dash: Dash::Dashed,
        })
        .collect();
    let mut legend = colour_legend(rungs.iter().map(|r| (r.row.role, r.row.stage)), false);
    legend.push(Entry {
        label: "compulsory intensity: every input read once, the output written once".into(),
        color: REFERENCE,
        mark: Mark::Line(Dash::Dashed),
    });
    Some(Bars {
        header: Header {
            title: format!(
                "{} arithmetic intensity, {} in the simulator",
                s.shape.workload().title(),
                s.label
            ),
            notes: vec![format!(
                "FLOP per byte of the {} ({:.3} GFLOP per run). A rung that reuses data on chip \
                 (tiling, register blocking) issues fewer bytes and sits further right, towards \
                 the compulsory intensity. The simulator gives no times: a GPU run places these \
                 rows on its roofline.",
                source.describe(),
                s.flops / 1e9
            )],
            legend,
        },
        footer: footer(&report.run),
        axis_title: "FLOP per byte of global-memory traffic (log scale), higher is more reuse"
            .into(),
        log: true,
        base: None,
        format: fmt_num,
        rows,
        lines,
    })
}
