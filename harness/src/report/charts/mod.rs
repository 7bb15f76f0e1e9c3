//! Charts rendered from the report model, each written as SVG and PNG from one draw function:
//! per shape, the ablation bars and the roofline (on the simulator, which never times, the
//! intensity each rung issues instead); per family of shapes, the size sweep. Every chart
//! returns the [`canvas::Layout`] of the labels it placed, so tests can check that none
//! overlap.

pub(crate) mod ablation;
pub(crate) mod access;
pub(crate) mod axes;
pub(crate) mod bars;
pub(crate) mod canvas;
pub(crate) mod header;
pub(crate) mod intensity;
pub(crate) mod network;
pub(crate) mod raster;
pub(crate) mod roofline;
pub(crate) mod sweep;
#[cfg(test)]
pub(crate) mod tests;

use super::model::{Measure, Report, RowReport, ShapeReport};
use super::roofline::RoofKind;
use crate::results::RunResults;
use anyhow::Result;
use canvas::{Drawn, Layout};
use kernel::{Role, Stage};
use plotters::coord::Shift;
use plotters::prelude::*;
use std::path::{Path, PathBuf};

/// A chart that can draw itself on any backend.
pub(crate) trait Chart {
    /// Width and height in pixels.
    fn size(&self) -> (u32, u32);
    /// Draws the chart; returns the box of every label it placed.
    fn draw<DB: DrawingBackend>(&self, root: &DrawingArea<DB, Shift>) -> Result<Layout>;
}

/// The chart as SVG text, with its layout.
pub(crate) fn svg(chart: &impl Chart) -> Result<(String, Layout)> {
    let mut text = String::new();
    let layout = {
        let root = SVGBackend::with_string(&mut text, chart.size()).into_drawing_area();
        let layout = chart.draw(&root)?;
        root.present().drawn()?;
        layout
    };
    Ok((text, layout))
}

/// Writes `<dir>/<stem>.svg` and `.png`.
pub(crate) fn save(chart: &impl Chart, dir: &Path, stem: &str) -> Result<Vec<PathBuf>> {
    let svg_path = dir.join(format!("{stem}.svg"));
    let png_path = dir.join(format!("{stem}.png"));
    crate::output::write_atomic(&svg_path, svg(chart)?.0)?;
    crate::output::replace_with(&png_path, |tmp| {
        let root = raster::GlyphBitmap(BitMapBackend::new(tmp, chart.size())).into_drawing_area();
        chart.draw(&root)?;
        root.present().drawn()
    })?;
    Ok(vec![svg_path, png_path])
}

/// One chart of a run, whichever kind.
pub(crate) enum AnyChart<'a> {
    Bars(bars::Bars),
    Roofline(roofline::Roofline<'a>),
    Sweep(sweep::Sweep<'a>),
}

impl Chart for AnyChart<'_> {
    fn size(&self) -> (u32, u32) {
        match self {
            Self::Bars(c) => c.size(),
            Self::Roofline(c) => c.size(),
            Self::Sweep(c) => c.size(),
        }
    }

    fn draw<DB: DrawingBackend>(&self, root: &DrawingArea<DB, Shift>) -> Result<Layout> {
        match self {
            Self::Bars(c) => c.draw(root),
            Self::Roofline(c) => c.draw(root),
            Self::Sweep(c) => c.draw(root),
        }
    }
}

/// Every chart of `report` with its file stem: `<workload>-ablation-<shape>` and
/// `<workload>-roofline-<shape>` per shape of a timed run, `<workload>-intensity-<shape>` per
/// shape of a simulator run with counted traffic and `<workload>-access-<shape>` per shape of
/// one with counted lines or banks, `<workload>-sweep[-family]` per family of two or more
/// sizes.
pub(crate) fn all(report: &Report) -> Vec<(String, AnyChart<'_>)> {
    let mut out = Vec::new();
    for w in &report.workloads {
        let name = w.workload.name();
        for s in &w.shapes {
            let stem = |what: &str| format!("{name}-{what}-{}", s.label);
            if let Some(c) = ablation::chart(report, s) {
                out.push((stem("ablation"), AnyChart::Bars(c)));
            }
            if let Some(c) = roofline::Roofline::new(report, s) {
                out.push((stem("roofline"), AnyChart::Roofline(c)));
            }
            if let Some(c) = intensity::chart(report, s) {
                out.push((stem("intensity"), AnyChart::Bars(c)));
            }
            if let Some(c) = access::chart(report, s) {
                out.push((stem("access"), AnyChart::Bars(c)));
            }
        }
        for c in sweep::charts(report, w) {
            out.push((format!("{name}-sweep{}", c.suffix), AnyChart::Sweep(c)));
        }
    }
    out
}

/// The rows a shape's bar charts draw a bar for: its rungs and users' kernels, but those the
/// device could not run.
pub(crate) fn rung_rows(s: &ShapeReport) -> Vec<&RowReport> {
    s.rows
        .iter()
        .filter(|r| matches!(r.row.role, Role::Rung | Role::User))
        .filter(|r| r.row.status != crate::results::Status::Unsupported)
        .collect()
}

/// Writes every chart of `report` into `dir` as SVG and PNG; returns the files.
pub fn write_all(report: &Report, dir: &Path) -> Result<Vec<PathBuf>> {
    std::fs::create_dir_all(dir)?;
    let mut out = Vec::new();
    for (stem, chart) in all(report) {
        out.extend(save(&chart, dir, &stem)?);
    }
    for n in &report.run.networks {
        let name = n.workload.name();
        if let Some(c) = network::Stacked::new(n, footer(&report.run)) {
            out.extend(save(&c, dir, &format!("{name}-breakdown-{}", n.label))?);
        }
        if let Some(c) = n
            .batch_sweep
            .as_ref()
            .and_then(|s| network::BatchChart::new(n, s, footer(&report.run)))
        {
            out.extend(save(&c, dir, &format!("{name}-batch-sweep"))?);
        }
    }
    Ok(out)
}

/// Where the figures came from, for every chart's footer.
pub(crate) fn footer(run: &RunResults) -> String {
    format!(
        "{} · driver {} · {} · commit {} · harness",
        run.device.name,
        run.device.driver,
        run.date.get(..10).unwrap_or(&run.date),
        run.commit
    )
}

/// Tableau 10: distinct, print-safe colours.
pub const PALETTE: [RGBColor; 10] = [
    RGBColor(31, 119, 180),
    RGBColor(255, 127, 14),
    RGBColor(44, 160, 44),
    RGBColor(214, 39, 40),
    RGBColor(148, 103, 189),
    RGBColor(140, 86, 75),
    RGBColor(227, 119, 194),
    RGBColor(127, 127, 127),
    RGBColor(188, 189, 34),
    RGBColor(23, 190, 207),
];

/// A step forward, a step back, and a step inside the noise.
pub const GAIN: RGBColor = RGBColor(24, 120, 24);
pub const LOSS: RGBColor = RGBColor(200, 24, 24);
pub const REFERENCE: RGBColor = RGBColor(60, 60, 60);
/// A dark teal, unlike every stage's colour (tensor-core rungs and peers meet in one chart).
pub const PEER: RGBColor = RGBColor(0, 105, 105);

/// One colour per stage crate, so a bar says which stage its rung comes from. Red is left out:
/// it marks slowdowns.
pub fn stage_color(s: Stage) -> RGBColor {
    match s {
        Stage::Baseline => PALETTE[0],
        Stage::RestrictUnroll => PALETTE[1],
        Stage::Fusion => PALETTE[2],
        Stage::Tensorcore => PALETTE[4],
        Stage::Fp16 => PALETTE[5],
        Stage::FlashAttn => PALETTE[6],
        Stage::Networks => PALETTE[9],
        Stage::User => PALETTE[8],
        Stage::Reference => PALETTE[7],
    }
}

/// Keys of a chart's points beside their rows: a rung's own number, `R1`, `R2` for
/// references, `P1` for peers, `U1` for the user's kernels, numbered in the order asked.
#[derive(Default)]
pub(crate) struct Keys([usize; 3]);

impl Keys {
    pub fn next(&mut self, role: Role, tag: &str) -> String {
        let (i, letter) = match role {
            Role::Rung => return tag.to_string(),
            Role::Reference => (0, 'R'),
            Role::Peer => (1, 'P'),
            Role::User => (2, 'U'),
        };
        self.0[i] += 1;
        format!("{letter}{}", self.0[i])
    }
}

/// One marker per compute roof: a roofline point takes the shape of the roof it is judged
/// by, so that its colour can say its stage crate, as everywhere else.
pub fn roof_marker(k: RoofKind) -> canvas::Marker {
    match k {
        RoofKind::Fp32 => canvas::Marker::Circle,
        RoofKind::Tf32Tensor => canvas::Marker::Square,
        RoofKind::Fp16Tensor => canvas::Marker::Triangle,
    }
}

/// The legend of [`row_color`] for the rows of a chart: a patch per stage crate, then the
/// references' and peers', as patches too where the chart draws them as points, else as
/// their lines (dashed and dotted, as [`row_dash`] draws them).
pub(crate) fn colour_legend(
    rows: impl IntoIterator<Item = (Role, Stage)>,
    points: bool,
) -> Vec<header::Entry> {
    use header::{Entry, Mark};
    let rows: Vec<(Role, Stage)> = rows.into_iter().collect();
    let mut stages: Vec<Stage> = rows
        .iter()
        .filter(|(role, _)| matches!(role, Role::Rung | Role::User))
        .map(|(_, s)| *s)
        .collect();
    stages.sort();
    stages.dedup();
    let mut legend: Vec<Entry> = stages
        .into_iter()
        .map(|st| Entry {
            label: st.name().to_string(),
            color: stage_color(st),
            mark: Mark::Bar,
        })
        .collect();
    for (role, label) in [(Role::Reference, "reference row"), (Role::Peer, "peer row")] {
        if rows.iter().any(|(r, _)| *r == role) {
            legend.push(Entry {
                label: label.into(),
                color: row_color(role, Stage::Reference),
                mark: if points {
                    Mark::Bar
                } else {
                    Mark::Line(row_dash(role))
                },
            });
        }
    }
    legend
}

/// How a row's line is drawn: references dashed, peers dotted, the rest solid.
pub fn row_dash(role: Role) -> canvas::Dash {
    match role {
        Role::Rung | Role::User => canvas::Dash::Solid,
        Role::Reference => canvas::Dash::Dashed,
        Role::Peer => canvas::Dash::Dotted,
    }
}

/// A row's colour in every chart: its stage crate's for rungs and the user's kernels, one
/// of its own for references and for peers.
pub fn row_color(role: Role, stage: Stage) -> RGBColor {
    match role {
        Role::Rung | Role::User => stage_color(stage),
        Role::Reference => REFERENCE,
        Role::Peer => PEER,
    }
}

/// The unit a throughput axis of `measure` reads best in, and the factor from GFLOP/s (GB/s).
pub(crate) fn rate_unit(max: f64, measure: Measure) -> (&'static str, f64) {
    match (measure, max >= 2e3) {
        (Measure::Flops, true) => ("TFLOP/s", 1e-3),
        (Measure::Flops, false) => ("GFLOP/s", 1.0),
        (Measure::Bytes, true) => ("TB/s", 1e-3),
        (Measure::Bytes, false) => ("GB/s", 1.0),
    }
}

/// `3.35 TB/s` or `17.5 GB/s`.
pub(crate) fn bandwidth(gbs: f64) -> String {
    if gbs >= 1e3 {
        format!("{:.2} TB/s", gbs / 1e3)
    } else {
        format!("{gbs:.1} GB/s")
    }
}
