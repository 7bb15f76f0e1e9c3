//! The ablation of one shape: a bar per rung with its median throughput and the p10-p90
//! whisker, coloured by the stage crate it comes from; references and peers as labelled lines;
//! at each bar's end its throughput and its step against the rung it changes.

use super::axes::{fmt_num, sig3};
use super::bars::{Bar, Bars, VLine};
use super::canvas::{BLACK_TEXT, GREY};
use super::header::{Entry, Header, Mark};
use super::{
    GAIN, LOSS, colour_legend, footer, rate_unit, row_color, row_dash, rung_rows, stage_color,
};
use crate::report::model::{Measure, Report, RowReport, ShapeReport, Speedup};
use crate::results::Status;
use kernel::Role;
use plotters::prelude::RGBColor;

/// The ablation chart of `s`; `None` for a run without times (the simulator) or without rungs.
pub fn chart(report: &Report, s: &ShapeReport) -> Option<Bars> {
    let rungs = rung_rows(s);
    if !report.timed() || rungs.is_empty() {
        return None;
    }
    let measure = s.measure();
    let others: Vec<&RowReport> = s
        .timed_rows()
        .filter(|r| matches!(r.row.role, Role::Reference | Role::Peer))
        .collect();
    let max = rungs
        .iter()
        .chain(&others)
        .filter_map(|r| r.timed.map(|t| t.rate(measure).hi))
        .fold(0.0, f64::max);
    let (unit, scale) = rate_unit(max, measure);
    let rows = rungs
        .iter()
        .map(|r| Bar {
            name: format!("{} {}", r.tag, r.row.id),
            value: r.timed.map(|t| t.rate(measure).mid * scale),
            range: r.timed.map(|t| {
                let x = t.rate(measure);
                (x.lo * scale, x.hi * scale)
            }),
            color: stage_color(r.row.stage),
            notes: notes(r, measure, scale),
        })
        .collect();
    let lines = others
        .iter()
        .filter_map(|r| {
            let g = r.timed?.rate(measure).mid * scale;
            Some(VLine {
                value: g,
                label: format!("{} {}", r.row.id, sig3(g)),
                color: row_color(r.row.role, r.row.stage),
                dash: row_dash(r.row.role),
            })
        })
        .collect();
    let mut legend = colour_legend(
        rungs
            .iter()
            .chain(&others)
            .map(|r| (r.row.role, r.row.stage)),
        false,
    );
    legend.push(Entry {
        label: "p10-p90 of the samples".into(),
        color: BLACK_TEXT,
        mark: Mark::Whisker,
    });
    let steps: Vec<&Speedup> = s
        .rows
        .iter()
        .filter_map(|r| r.vs_parent.as_ref())
        .filter(|v| !v.same_code)
        .collect();
    let paired = steps.iter().filter(|v| v.rounds.is_some()).count();
    let noise = match (paired, steps.len() - paired) {
        (0, _) => {
            "▲ faster, ▼ slower, ≈ inside the noise (the two rows' p10-p90 time ranges overlap) \
             or under 1%"
        }
        (_, 0) => {
            "the rung and its parent timed side by side in alternating rounds, the median of \
             the rounds' ratios (▲ faster, ▼ slower, ≈ inside the noise, the p10-p90 range of \
             the ratios holds 1, or under 1%; ? rounds that disagree with the medians' ratio by more than a \
             quarter, or on the other side of 1)"
        }
        _ => {
            "the rung and its parent timed side by side in alternating rounds, the median of \
             the rounds' ratios, or where that failed the ratio of the medians \
             (▲ faster, ▼ slower, ≈ inside the noise, the ratios' p10-p90 range holds 1 or \
             the two rows' p10-p90 time ranges overlap, or under 1%; ? rounds that disagree with the \
             medians' ratio by more than a quarter, or on the other side of 1)"
        }
    };
    let lead = match measure {
        Measure::Flops => format!(
            "Median throughput of each rung ({:.3} GFLOP per run)",
            s.flops / 1e9
        ),
        Measure::Bytes => format!(
            "Median bandwidth of each rung: the bytes a run must move ({}: its inputs read once, \
             its output written once{}) over its median time",
            s.work(),
            if s.shape.workload().computes_nothing() {
                "; nothing is computed"
            } else {
                ""
            }
        ),
    };
    let mut notes = vec![format!(
        "{lead}, coloured by its stage crate. At each bar's end: its throughput and its step \
         against the rung it changes ({noise})."
    )];
    if report.cpu_ports() {
        notes.push(
            "A CPU run: each row is the Rust CPU port of its rung (the same idea, not the CUDA \
             code). A rung whose idea has no CPU analogue runs its parent's port: = at its bar's \
             end."
                .into(),
        );
    }
    Some(Bars {
        header: Header {
            title: format!(
                "{} ablation, {} on {}",
                s.shape.workload().title(),
                s.label,
                report.run.device.name
            ),
            notes,
            legend,
        },
        footer: footer(&report.run),
        axis_title: format!("throughput ({unit}), higher is better"),
        log: false,
        base: Some(0.0),
        format: fmt_num,
        rows,
        lines,
    })
}

/// What a bar's end says: its throughput and its step against its parent, or why it has none.
fn notes(r: &RowReport, measure: Measure, scale: f64) -> Vec<(String, RGBColor)> {
    let Some(t) = r.timed else {
        let why = match r.row.status {
            Status::Failed => "failed its check: no throughput shown",
            Status::Error => "could not run: the table says why",
            _ => "not timed",
        };
        return vec![(why.into(), LOSS)];
    };
    let mut v = vec![(sig3(t.rate(measure).mid * scale), BLACK_TEXT)];
    v.extend(r.vs_parent.as_ref().map(step));
    v
}

/// `▲ 2.31x vs 06`, `▼ 0.86x vs 06: slower`, `≈ 1.03x vs 06, inside the noise`, `≈ 1.00x vs
/// 06, under 1%`, `= 06's CPU port: the same code`.
pub(crate) fn step(s: &Speedup) -> (String, RGBColor) {
    let (x, tag) = (s.ratio_text(), &s.against_tag);
    if s.same_code {
        (format!("= {tag}'s CPU port: the same code"), GREY)
    } else if let Some(m) = s.medians_disagree {
        (
            format!("? {x} vs {tag}, {m:.2}x by the medians: the two disagree"),
            GREY,
        )
    } else if !s.significant {
        (format!("≈ {x} vs {tag}, {}", s.noise_words()), GREY)
    } else if s.ratio >= 1.0 {
        (format!("▲ {x} vs {tag}"), GAIN)
    } else {
        (format!("▼ {x} vs {tag}: slower"), LOSS)
    }
}
