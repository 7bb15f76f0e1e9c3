//! What the simulator shows of a rung's memory accesses: the wavefronts the L1's data pipe
//! takes for its global loads and stores (a cache line each) and its shared-memory
//! instructions, over the fewest those accesses could take. Scattered lanes and bank
//! conflicts are the excess, which a transpose's rungs remove one at a time, and the one
//! picture of a workload that computes nothing.

use super::axes::fmt_num;
use super::bars::{Bar, Bars};
use super::canvas::{BLACK_TEXT, GREY};
use super::header::Header;
use super::{LOSS, colour_legend, footer, rung_rows, stage_color};
use crate::report::model::{Report, ShapeReport};
use crate::report::table::{bank_cell, l1_ratio, lines_cell};
use crate::results::Row;

/// The access chart of `s`; `None` for timed runs and where no rung's accesses were counted.
pub fn chart(report: &Report, s: &ShapeReport) -> Option<Bars> {
    let rungs = rung_rows(s);
    if report.timed() || !rungs.iter().any(|r| l1_ratio(&r.row).is_some()) {
        return None;
    }
    let rows = rungs
        .iter()
        .map(|r| {
            let ratio = l1_ratio(&r.row).filter(|_| r.row.passed());
            let notes = match ratio {
                Some(x) => vec![(format!("{x:.2}x"), BLACK_TEXT), (parts(&r.row), GREY)],
                None if !r.row.passed() => vec![("failed its check".into(), LOSS)],
                None => vec![("no global or shared access counted".into(), GREY)],
            };
            Bar {
                name: format!("{} {}", r.tag, r.row.id),
                value: ratio,
                range: None,
                color: stage_color(r.row.stage),
                notes,
            }
        })
        .collect();
    Some(Bars {
        header: Header {
            title: format!(
                "{} memory accesses, {} in the simulator",
                s.shape.workload().title(),
                s.label
            ),
            notes: vec![
                "The L1 serves a global request a cache line a wavefront and a shared-memory \
                 instruction a wavefront per conflict-free pass over its 32 banks, through one \
                 data pipe. Each bar is the wavefronts a rung's plain global loads and stores \
                 and shared-memory instructions took over the fewest the same accesses could \
                 take: 1x is coalesced and free of bank conflicts. At its end, the two figures \
                 of the table. WMMA's loads, TMA copies, wgmma and the global side of cp.async \
                 are not counted."
                    .into(),
            ],
            legend: colour_legend(rungs.iter().map(|r| (r.row.role, r.row.stage)), false),
        },
        footer: footer(&report.run),
        axis_title: "L1 wavefronts over the fewest possible (log scale), lower is better".into(),
        log: true,
        base: Some(1.0),
        format: fmt_num,
        rows,
        lines: Vec::new(),
    })
}

/// The table's two figures of `row`, each said where the row made that kind of access:
/// `global lines 16.50x, no shared memory`.
fn parts(row: &Row) -> String {
    let lines = match lines_cell(row) {
        c if c == "-" => "no plain global access".to_string(),
        c => format!("global lines {c}"),
    };
    let banks = match bank_cell(row) {
        c if c == "-" => "no shared memory".to_string(),
        c => format!("bank conflicts {c}"),
    };
    format!("{lines}, {banks}")
}
