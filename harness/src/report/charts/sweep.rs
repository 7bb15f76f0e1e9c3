//! Throughput against size within one family of shapes (shapes that differ in one dimension:
//! square GEMMs by N, one convolution layer by batch, attention of one head count, head
//! dimension and masking by sequence length), one line per kernel, log-log, each series with
//! its own colour and marker, the legend beside the plot.

use super::axes::{Axis, fmt_num, x_axis, y_axis};
use super::canvas::{
    BLACK_TEXT, Canvas, Dash, GREY, LABEL, Layout, MARGIN, Marker, Rect, text_width,
};
use super::header::{Entry, Header, Mark, SWATCH, swatch};
use super::{Chart, PALETTE, footer, rate_unit};
use crate::report::model::{Report, ShapeReport, Timed, WorkloadReport};
use crate::results::Status;
use anyhow::Result;
use kernel::{Role, Shape};
use plotters::coord::Shift;
use plotters::prelude::*;
use plotters::style::text_anchor::HPos;

const WIDTH: f64 = 1280.0;
const ENTRY: f64 = 20.0;

/// Which family a shape belongs to, and where it sits in it.
#[derive(Debug, Clone, PartialEq)]
pub struct Family {
    /// The file name's suffix: `""` for square GEMMs, `-d64-causal`, `-Bx1x4x86x86x7`.
    pub suffix: String,
    /// A longer suffix for when two families would share the short one.
    long: String,
    /// The swept dimension's value for this shape.
    pub x: f64,
    pub x_title: &'static str,
}

pub fn family(shape: &Shape) -> Family {
    let f = |suffix: String, x: usize, x_title| Family {
        long: suffix.clone(),
        suffix,
        x: x as f64,
        x_title,
    };
    match *shape {
        Shape::Gemm { m, n, k } if m == n && n == k => f(String::new(), n, "N (M = N = K)"),
        Shape::Gemm { m, n, k } => f(format!("-{m}x{n}xK"), k, "K"),
        Shape::Linear { m, n, k, act } => f(format!("-Mx{n}x{k}-{}", act.name()), m, "batch M"),
        Shape::Conv { b, c, m, h, w, k } => f(format!("-Bx{c}x{m}x{h}x{w}x{k}"), b, "batch B"),
        Shape::Attention {
            h, s, d, causal, ..
        } => {
            let mask = if causal { "-causal" } else { "" };
            Family {
                suffix: format!("-d{d}{mask}"),
                long: format!("-h{h}-d{d}{mask}"),
                x: s as f64,
                x_title: "sequence length S",
            }
        }
        Shape::Eltwise { m, n } => f(format!("-Mx{n}"), m, "rows M"),
        Shape::Rbf { n, k } => f(format!("-nx{k}"), n, "distances n"),
        Shape::Layernorm { m, n } | Shape::Softmax { m, n } => f(format!("-Mx{n}"), m, "rows M"),
        Shape::Pool { b, c, h, w, p } => f(format!("-Bx{c}x{h}x{w}x{p}"), b, "batch B"),
        Shape::Cnn { b } => f(String::new(), b, "batch B"),
        Shape::Encoder { b, s, e, h } => f(format!("-Bx{s}x{e}x{h}"), b, "batch B"),
    }
}

/// The shapes of `w` by family, in order of first appearance, each sorted by its swept size.
pub fn sweep_groups(w: &WorkloadReport) -> Vec<(Family, Vec<&ShapeReport>)> {
    let mut groups: Vec<(Family, Vec<&ShapeReport>)> = Vec::new();
    for s in &w.shapes {
        let f = family(&s.shape);
        match groups.iter_mut().find(|(g, _)| g.long == f.long) {
            Some((_, shapes)) => shapes.push(s),
            None => groups.push((f, vec![s])),
        }
    }
    let suffixes: Vec<String> = groups.iter().map(|(f, _)| f.suffix.clone()).collect();
    for (f, shapes) in &mut groups {
        if suffixes.iter().filter(|s| **s == f.suffix).count() > 1 {
            f.suffix = f.long.clone();
        }
        shapes.sort_by(|a, b| family(&a.shape).x.total_cmp(&family(&b.shape).x));
    }
    groups
}

/// Colour, marker and stroke of series `i`: ten colours, and a marker that changes with each
/// pass through them, so no two of the first fifty series look alike.
pub(crate) fn style_of(i: usize, role: Role) -> (RGBColor, Marker, Dash) {
    let dash = match role {
        Role::Rung | Role::User => Dash::Solid,
        _ => Dash::Dashed,
    };
    (
        PALETTE[i % PALETTE.len()],
        Marker::ALL[(i + i / PALETTE.len()) % Marker::ALL.len()],
        dash,
    )
}

/// One kernel's line.
struct Series {
    name: String,
    role: Role,
    /// Its median figures at each size of the family, `None` where it has none.
    points: Vec<Option<Timed>>,
}

pub struct Sweep<'a> {
    report: &'a Report,
    pub suffix: String,
    family: Family,
    xs: Vec<f64>,
    series: Vec<Series>,
    /// Rows that appear in the family but never passed.
    never: Vec<String>,
    header: Header,
}

/// The sweep charts of `w`: one per family of two or more sizes, in a timed run.
pub fn charts<'a>(report: &'a Report, w: &'a WorkloadReport) -> Vec<Sweep<'a>> {
    if !report.timed() {
        return Vec::new();
    }
    sweep_groups(w)
        .into_iter()
        .filter(|(_, shapes)| shapes.len() > 1)
        .map(|(f, shapes)| Sweep::new(report, w, f, &shapes))
        .filter(|s| !s.series.is_empty())
        .collect()
}

impl<'a> Sweep<'a> {
    fn new(report: &'a Report, w: &WorkloadReport, fam: Family, shapes: &[&ShapeReport]) -> Self {
        let mut rows: Vec<(&str, &str, Role, u32)> = Vec::new();
        for s in shapes {
            for r in &s.rows {
                if !rows.iter().any(|x| x.0 == r.row.id) {
                    rows.push((&r.row.id, &r.tag, r.row.role, r.row.rung));
                }
            }
        }
        rows.sort_by_key(|(.., role, rung)| (*role != Role::Rung, *rung));
        let all: Vec<Series> = rows
            .iter()
            .map(|(id, tag, role, _)| Series {
                name: format!("{tag} {id}"),
                role: *role,
                points: shapes
                    .iter()
                    .map(|s| {
                        s.rows
                            .iter()
                            .find(|r| r.row.id == *id)
                            .and_then(|r| r.timed)
                    })
                    .collect(),
            })
            .collect();
        let (series, never): (Vec<Series>, Vec<Series>) = all
            .into_iter()
            .partition(|s| s.points.iter().any(Option::is_some));
        // Rows that failed or could not run at every size; those that do not apply (a GPU
        // library on the CPU) are left out.
        let never = never
            .into_iter()
            .filter(|s| {
                shapes.iter().flat_map(|sh| &sh.rows).any(|r| {
                    format!("{} {}", r.tag, r.row.id) == s.name
                        && matches!(r.row.status, Status::Failed | Status::Error)
                })
            })
            .map(|s| s.name)
            .collect();
        let mut chart = Self {
            report,
            suffix: fam.suffix.clone(),
            xs: shapes.iter().map(|s| family(&s.shape).x).collect(),
            family: fam,
            series,
            never,
            header: Header::default(),
        };
        chart.header = Header {
            title: format!(
                "{} throughput by size{} on {}",
                w.workload.name().to_uppercase(),
                match chart.suffix.as_str() {
                    "" => String::new(),
                    s => format!(" ({})", s.trim_start_matches('-')),
                },
                report.run.device.name
            ),
            notes: vec![format!(
                "Median throughput of every passing row at each {} of the family (log-log); a \
                 missing point is a size where the row failed or does not apply.",
                chart.family.x_title
            )],
            legend: Vec::new(),
        };
        chart
    }

    fn unit(&self) -> (&'static str, f64) {
        let max = self
            .series
            .iter()
            .flat_map(|s| s.points.iter().flatten())
            .map(|t| t.gflops)
            .fold(0.0, f64::max);
        rate_unit(max)
    }

    fn entries(&self) -> Vec<Entry> {
        (0..self.series.len())
            .map(|i| {
                let (color, m, d) = style_of(i, self.series[i].role);
                Entry {
                    label: self.series[i].name.clone(),
                    color,
                    mark: Mark::Series(m, d),
                }
            })
            .collect()
    }

    /// Left edge of the legend column.
    pub(crate) fn legend_left(&self) -> f64 {
        let w = self
            .entries()
            .iter()
            .map(|e| text_width(&e.label, LABEL))
            .chain(self.never.iter().map(|n| text_width(n, LABEL)))
            .fold(text_width("no passing point:", LABEL), f64::max);
        WIDTH - MARGIN - SWATCH - 6.0 - w
    }

    fn height(&self) -> f64 {
        let lines = self.series.len() + self.never.len() + 1;
        (self.header.height(WIDTH) + 30.0 + ENTRY * lines as f64 + 90.0).max(720.0)
    }
}

impl Chart for Sweep<'_> {
    fn size(&self) -> (u32, u32) {
        (WIDTH as u32, self.height().ceil() as u32)
    }

    fn draw<DB: DrawingBackend>(&self, root: &DrawingArea<DB, Shift>) -> Result<Layout> {
        let (unit, scale) = self.unit();
        let mut c = Canvas::new(root)?;
        self.header.draw(&mut c)?;
        let top = self.header.height(WIDTH) + 30.0;
        let legend_x = self.legend_left();
        let plot = Rect::new(MARGIN + 52.0, top, legend_x - 30.0, self.height() - 90.0);
        let (xlo, xhi) = self
            .xs
            .iter()
            .fold((f64::INFINITY, 0.0f64), |(a, b), x| (a.min(*x), b.max(*x)));
        let mut x = Axis::new(xlo / 1.4, xhi * 1.4, true, plot.x0, plot.x1);
        x.ticks = Some(self.xs.clone());
        let figures = self.series.iter().flat_map(|s| s.points.iter().flatten());
        let ylo = figures
            .clone()
            .map(|t| t.gflops)
            .fold(f64::INFINITY, f64::min);
        let yhi = figures.map(|t| t.gflops).fold(0.0, f64::max);
        let y = Axis::new(ylo / 2.0, yhi * 2.0, true, plot.y1, plot.y0);
        x_axis(
            &mut c,
            plot,
            &x,
            &|v| format!("{v:.0}"),
            self.family.x_title,
        )?;
        y_axis(
            &mut c,
            plot,
            &y,
            &|v| fmt_num(v * scale),
            &format!("throughput ({unit})"),
        )?;
        for (i, s) in self.series.iter().enumerate() {
            let (color, marker, dash) = style_of(i, s.role);
            let mut run: Vec<(f64, f64)> = Vec::new();
            for (xv, t) in self
                .xs
                .iter()
                .zip(&s.points)
                .map(|(xv, t)| (*xv, *t))
                .chain([(0.0, None)])
            {
                match t {
                    Some(t) => run.push((x.px(xv), y.px(t.gflops))),
                    None => {
                        if run.len() > 1 {
                            c.line(&run, color, 2, dash)?;
                        }
                        for p in run.drain(..) {
                            c.marker(marker, p, 5.0, color, true)?;
                        }
                    }
                }
            }
        }
        let mut ly = top + ENTRY / 2.0;
        for e in self.entries() {
            swatch(&mut c, &e, (legend_x, ly))?;
            c.text(
                &e.label,
                (legend_x + SWATCH + 6.0, ly),
                HPos::Left,
                LABEL,
                BLACK_TEXT,
            )?;
            ly += ENTRY;
        }
        if !self.never.is_empty() {
            c.text("no passing point:", (legend_x, ly), HPos::Left, LABEL, GREY)?;
            for n in &self.never {
                ly += ENTRY;
                c.text(n, (legend_x + SWATCH + 6.0, ly), HPos::Left, LABEL, GREY)?;
            }
        }
        c.footer(&footer(&self.report.run))?;
        Ok(c.layout)
    }
}
