//! `harness compare A B --html`: the two runs side by side on one page (where each came from,
//! the ratio charts and a table per shape), from the same ratios the terminal prints.

use super::{AT_INDEX, Figure, Meta, Nav, render_to, slug, write_assets};
use crate::compare::{Ratio, ratio_charts};
use crate::report::Report;
use crate::results::RunResults;
use anyhow::Result;
use serde::Serialize;
use std::path::{Path, PathBuf};

#[derive(Serialize)]
struct RunSide {
    name: String,
    meta: Meta,
}

#[derive(Serialize)]
struct RatioRow {
    id: String,
    a: String,
    a_sort: Option<f64>,
    b: String,
    b_sort: Option<f64>,
    speedup: String,
    s_sort: Option<f64>,
    note: String,
}

#[derive(Serialize)]
struct Group {
    title: String,
    anchor: String,
    rows: Vec<RatioRow>,
}

#[derive(Serialize)]
struct ComparePage<'a> {
    nav: Nav,
    home: &'static str,
    title: String,
    meta: &'a Meta,
    runs: Vec<RunSide>,
    charts: Vec<Figure>,
    groups: Vec<Group>,
    noise: &'static str,
    /// A and B ran on different devices: [`crate::compare::caveat`].
    caveat: Option<String>,
}

fn ms(v: Option<f64>) -> String {
    v.map_or("-".into(), |v| format!("{v:.3}"))
}

/// Writes `index.html` (and its style sheet and script under `html/`) into `dir`.
pub fn write(
    a: &RunResults,
    b: &RunResults,
    names: (&str, &str),
    ratios: &[Ratio],
    dir: &Path,
) -> Result<Vec<PathBuf>> {
    let env = super::env();
    let mut written = write_assets(&dir.join(super::PAGES))?;
    let (ma, mb) = (Meta::of(&Report::new(a)), Meta::of(&Report::new(b)));
    let mut charts = Vec::new();
    for (stem, c) in ratio_charts(a, b, ratios) {
        // `compare-<workload>`: the chart's file stem.
        let workload = stem.strip_prefix("compare-").unwrap_or(&stem);
        let title = format!("{workload}: A's time over B's, per kernel");
        charts.push(Figure {
            svg: super::svg::inline(&c, &title)?,
            title,
        });
    }
    let mut groups: Vec<Group> = Vec::new();
    for r in ratios {
        let title = format!("{} {}", r.workload.name(), r.shape);
        let row = RatioRow {
            id: r.id.clone(),
            a: ms(r.a_ms),
            a_sort: r.a_ms,
            b: ms(r.b_ms),
            b_sort: r.b_ms,
            speedup: r.cell(),
            s_sort: r.speedup,
            note: r.note.clone().unwrap_or_default(),
        };
        match groups.iter_mut().find(|g| g.title == title) {
            Some(g) => g.rows.push(row),
            None => groups.push(Group {
                anchor: slug(&title),
                title,
                rows: vec![row],
            }),
        }
    }
    let page = ComparePage {
        nav: AT_INDEX,
        home: "Comparison",
        title: format!("{} (A) against {} (B)", names.0, names.1),
        meta: &mb,
        runs: vec![
            RunSide {
                name: format!("A: {}", names.0),
                meta: ma,
            },
            RunSide {
                name: format!("B: {}", names.1),
                meta: Meta::of(&Report::new(b)),
            },
        ],
        charts,
        groups,
        noise: crate::compare::NOISE_NOTE,
        caveat: crate::compare::caveat(a, b),
    };
    written.push(render_to(
        &env,
        "compare.html",
        page,
        &dir.join(super::INDEX),
    )?);
    Ok(written)
}
