//! Throughput against size within one family of shapes (shapes that differ in one dimension:
//! square GEMMs by N, one convolution layer by batch, attention of one head count, head
//! dimension and masking by sequence length), one line per kernel, log-log. A line takes its
//! stage crate's colour, as the rung's bar does in the ablation chart, and a marker of its
//! own within that colour; it ends at its key (the rung's number, `R1` for a reference), and
//! the legend beside the plot names every key.

use super::axes::{Axis, fmt_num, x_axis, y_axis};
use super::canvas::{
    BLACK_TEXT, Canvas, Dash, GREY, LABEL, Layout, MARGIN, Marker, Rect, spots_around, text_width,
};
use super::header::{Entry, Header, Mark, SWATCH, swatch};
use super::{Chart, Keys, colour_legend, footer, rate_unit, row_color, row_dash};
use crate::report::model::{Measure, Report, ShapeReport, Timed, WorkloadReport};
use anyhow::Result;
use kernel::{Role, Shape, Stage};
use plotters::coord::Shift;
use plotters::prelude::*;
use plotters::style::text_anchor::HPos;

const WIDTH: f64 = 1280.0;
/// Above the rows the legend names without a line ([`Sweep::same_code`]).
const SAME_CODE_HEADING: &str = "not drawn, the same code as:";
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
        Shape::Reduce { n } => f(String::new(), n, "elements N"),
        Shape::Transpose { m, n } if m == n => f(String::new(), n, "N (M = N)"),
        Shape::Transpose { n, m } => f(format!("-Mx{n}"), m, "rows M"),
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

/// `series` split into the lines to draw and the rows that, wherever they were timed, ran the
/// CPU port of another line (named `10 gemm-wmma-tf32 = 09`).
fn without_same_code(series: Vec<Series>, shapes: &[&ShapeReport]) -> (Vec<Series>, Vec<String>) {
    let port_of = |id: &str| -> Option<&str> {
        let mut ports = shapes
            .iter()
            .filter_map(|s| s.rows.iter().find(|r| r.row.id == id && r.timed.is_some()))
            .map(|r| r.row.port_id());
        let first = ports.next()?;
        (first != id && ports.all(|p| p == first)).then_some(first)
    };
    let key_of = |id: &str| series.iter().find(|s| s.id == id).map(|s| s.key.clone());
    let names: Vec<Option<String>> = series
        .iter()
        .map(|s| {
            let port = key_of(port_of(&s.id)?)?;
            Some(format!("{} = {port}", s.name))
        })
        .collect();
    let mut drawn = Vec::new();
    let mut same = Vec::new();
    for (s, name) in series.into_iter().zip(names) {
        match name {
            Some(n) => same.push(n),
            None => drawn.push(s),
        }
    }
    (drawn, same)
}

/// How a series is drawn: colour, marker, whether the marker is filled, stroke.
pub(crate) type Style = (RGBColor, Marker, bool, Dash);

/// The style of the `k`-th series of its colour: the colour says the stage crate (references
/// and peers have their own, dashed and dotted, as in the ablation chart); within it, five
/// markers, then hollow ones, then the same on a dotted line: twenty series of one stage
/// before two look alike.
pub(crate) fn style_of(stage: Stage, role: Role, k: usize) -> Style {
    let dash = match role {
        Role::Rung | Role::User => [Dash::Solid, Dash::Dotted][(k / 10) % 2],
        other => row_dash(other),
    };
    let n = Marker::ALL.len();
    (
        row_color(role, stage),
        Marker::ALL[k % n],
        (k / n).is_multiple_of(2),
        dash,
    )
}

/// One kernel's line.
struct Series {
    id: String,
    name: String,
    /// What its line ends at: the rung's number, `R1`, `P1`, `U1`.
    key: String,
    style: Style,
    role: Role,
    stage: Stage,
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
    /// Rows that ran another drawn row's CPU port at every size (a rung whose idea has no CPU
    /// analogue): the same code, so their lines would only trace the machine's drift; the
    /// legend names each with the row whose code it ran.
    same_code: Vec<String>,
    header: Header,
    /// FLOP/s, or bytes/s for a memory-bound workload.
    measure: Measure,
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
        let mut rows: Vec<(&str, &str, Role, u32, Stage)> = Vec::new();
        for s in shapes {
            for r in &s.rows {
                if !rows.iter().any(|x| x.0 == r.row.id) {
                    rows.push((&r.row.id, &r.tag, r.row.role, r.row.rung, r.row.stage));
                }
            }
        }
        rows.sort_by_key(|&(_, _, role, rung, _)| (role != Role::Rung, rung));
        let mut keys = Keys::default();
        // How many series each colour has had so far.
        let mut seen: Vec<(Stage, Role)> = Vec::new();
        let all: Vec<Series> = rows
            .iter()
            .map(|&(id, tag, role, _, stage)| {
                let key = keys.next(role, tag);
                let group = match role {
                    Role::Rung | Role::User => (stage, Role::Rung),
                    other => (Stage::Reference, other),
                };
                let k = seen.iter().filter(|g| **g == group).count();
                seen.push(group);
                Series {
                    id: id.to_string(),
                    name: format!("{key} {id}"),
                    key,
                    style: style_of(stage, role, k),
                    role,
                    stage,
                    points: shapes
                        .iter()
                        .map(|s| {
                            s.rows
                                .iter()
                                .find(|r| r.row.id == *id)
                                .and_then(|r| r.timed)
                        })
                        .collect(),
                }
            })
            .collect();
        let (series, never): (Vec<Series>, Vec<Series>) = all
            .into_iter()
            .partition(|s| s.points.iter().any(Option::is_some));
        let (series, same_code) = without_same_code(series, shapes);
        // Rows that failed or could not run at every size; those that do not apply (a GPU
        // library on the CPU) are left out.
        let never = never
            .into_iter()
            .filter(|s| {
                shapes
                    .iter()
                    .flat_map(|sh| &sh.rows)
                    .any(|r| s.name.ends_with(&format!(" {}", r.row.id)) && r.row.failed())
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
            same_code,
            header: Header::default(),
            measure: shapes.first().map_or(Measure::Flops, |s| s.measure()),
        };
        chart.header = Header {
            title: format!(
                "{} throughput by size{} on {}",
                w.workload.title(),
                match chart.suffix.as_str() {
                    "" => String::new(),
                    s => format!(" ({})", s.trim_start_matches('-')),
                },
                report.run.device.name
            ),
            notes: vec![format!(
                "Median throughput of every passing row at each {} of the family (log-log); a \
                 missing point is a size where the row failed or does not apply. A line's colour \
                 is its stage crate, as in the ablation chart, and it ends at its key.{}",
                chart.family.x_title,
                if chart.same_code.is_empty() {
                    ""
                } else {
                    " A rung whose idea has no CPU analogue runs another rung's CPU port: the same \
                     code as a line drawn, so it is named under the legend and not drawn again."
                }
            )],
            legend: colour_legend(chart.series.iter().map(|s| (s.role, s.stage)), false),
        };
        chart
    }

    fn unit(&self) -> (&'static str, f64) {
        let max = self
            .series
            .iter()
            .flat_map(|s| s.points.iter().flatten())
            .map(|t| t.rate(self.measure).mid)
            .fold(0.0, f64::max);
        rate_unit(max, self.measure)
    }

    pub(crate) fn entries(&self) -> Vec<Entry> {
        self.series
            .iter()
            .map(|s| {
                let (color, m, filled, d) = s.style;
                Entry {
                    label: s.name.clone(),
                    color,
                    mark: Mark::Series(m, filled, d),
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
            .chain(self.same_code.iter().map(|n| text_width(n, LABEL)))
            .chain((!self.same_code.is_empty()).then(|| text_width(SAME_CODE_HEADING, LABEL)))
            .fold(text_width("no passing point:", LABEL), f64::max);
        WIDTH - MARGIN - SWATCH - 6.0 - w
    }

    fn height(&self) -> f64 {
        let same_code = match self.same_code.len() {
            0 => 0,
            n => n + 1,
        };
        let lines = self.series.len() + self.never.len() + 1 + same_code;
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
            .map(|t| t.rate(self.measure).mid)
            .fold(f64::INFINITY, f64::min);
        let yhi = figures
            .map(|t| t.rate(self.measure).mid)
            .fold(0.0, f64::max);
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
        let mut ends = Vec::new();
        for s in &self.series {
            let (color, marker, filled, dash) = s.style;
            let mut run: Vec<(f64, f64)> = Vec::new();
            for (xv, t) in self
                .xs
                .iter()
                .zip(&s.points)
                .map(|(xv, t)| (*xv, *t))
                .chain([(0.0, None)])
            {
                match t {
                    Some(t) => run.push((x.px(xv), y.px(t.rate(self.measure).mid))),
                    None => {
                        if run.len() > 1 {
                            c.line(&run, color, 2, dash)?;
                        }
                        for p in run.drain(..) {
                            c.marker(marker, p, 5.0, color, filled)?;
                            c.mark(Rect::new(p.0 - 5.0, p.1 - 5.0, p.0 + 5.0, p.1 + 5.0));
                        }
                    }
                }
            }
        }
        // Each line's key at its last point, right of it where there is room, with a leader
        // line where the key had to move away.
        for s in &self.series {
            if let Some((xv, t)) = self
                .xs
                .iter()
                .zip(&s.points)
                .rev()
                .find_map(|(xv, t)| Some((*xv, (*t)?)))
            {
                ends.push((
                    (x.px(xv), y.px(t.rate(self.measure).mid)),
                    &s.key,
                    s.style.0,
                ));
            }
        }
        for (at, key, color) in ends {
            let within = Rect::new(plot.x0 + 2.0, plot.y0, plot.x1, plot.y1 - 2.0);
            let right = spots_around(at, 5.0)
                .into_iter()
                .filter(|(_, h)| matches!(h, HPos::Left));
            let Some(r) = c.place(key, LABEL, color, within, right)? else {
                continue;
            };
            let end = r.nearest(at);
            let d = (end.0 - at.0).hypot(end.1 - at.1);
            if d > 12.0 {
                let from = (
                    at.0 + (end.0 - at.0) * 5.0 / d,
                    at.1 + (end.1 - at.1) * 5.0 / d,
                );
                c.line(&[from, end], GREY, 1, Dash::Solid)?;
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
        for (heading, names) in [
            ("no passing point:", &self.never),
            (SAME_CODE_HEADING, &self.same_code),
        ] {
            if names.is_empty() {
                continue;
            }
            c.text(heading, (legend_x, ly), HPos::Left, LABEL, GREY)?;
            for n in names {
                ly += ENTRY;
                c.text(n, (legend_x + SWATCH + 6.0, ly), HPos::Left, LABEL, GREY)?;
            }
            ly += ENTRY;
        }
        c.footer(&footer(&self.report.run))?;
        Ok(c.layout)
    }
}
