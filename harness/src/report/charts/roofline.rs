//! The roofline of one shape: each timed row at its arithmetic intensity (its counted traffic
//! where something counted it, else the compulsory bytes) against its median throughput, under
//! one roof per precision the device has; a point takes the marker of the roof it is judged
//! by and the colour of its stage crate, as in every chart. Each point carries a short key (its rung number) placed where no other label is, with a
//! leader line when it had to move away; the key table beside the plot names every row.

use super::axes::{Axis, fmt_num, sig3, x_axis, y_axis};
use super::canvas::{
    BLACK_TEXT, Canvas, Dash, GREY, LABEL, Layout, MARGIN, Marker, Rect, spots_around, text_width,
};
use super::header::{Entry, Header, Mark};
use super::{Chart, bandwidth, footer, rate_unit, roof_marker, row_color};
use crate::report::model::{Measure, Report, RowReport, ShapeReport};
use crate::report::roofline::{Ceilings, MMA_SYNC_CEILING};
use crate::report::table::{roof_source, throughput};
use crate::results::Status;
use anyhow::Result;
use kernel::{Precision, Role};
use plotters::coord::Shift;
use plotters::prelude::*;
use plotters::style::text_anchor::HPos;

const WIDTH: f64 = 1280.0;
const KEY_ROW: f64 = 19.0;
/// Point radius.
const R: f64 = 6.0;

pub struct Roofline<'a> {
    report: &'a Report,
    s: &'a ShapeReport,
    /// Every row the key lists, with its key: the timed ones and the rungs that failed.
    keyed: Vec<(&'a RowReport, String)>,
    header: Header,
    /// Throughput unit and its factor from GFLOP/s.
    unit: (&'static str, f64),
}

/// Where everything goes.
struct Plan {
    plot: Rect,
    x: Axis,
    y: Axis,
    /// Left edge of the key table and its column offsets (name, figures).
    key: (f64, f64, f64),
    height: f64,
}

impl<'a> Roofline<'a> {
    /// The roofline of `s`; `None` for a run without times, a shape where nothing was timed
    /// or one that computes nothing (no intensity to place it at).
    pub fn new(report: &'a Report, s: &'a ShapeReport) -> Option<Self> {
        if !report.timed()
            || s.timed_rows().next().is_none()
            || s.shape.workload().computes_nothing()
        {
            return None;
        }
        let mut keys = super::Keys::default();
        let keyed = s
            .rows
            .iter()
            .filter(|r| {
                r.timed.is_some()
                    || (matches!(r.row.role, Role::Rung | Role::User)
                        && r.row.status != Status::Unsupported)
            })
            .map(|r| (r, keys.next(r.row.role, &r.tag)))
            .collect::<Vec<_>>();
        let max = s
            .timed_rows()
            .filter_map(|r| r.timed.map(|t| t.gflops_hi))
            .fold(0.0, f64::max);
        let mut chart = Self {
            report,
            s,
            keyed,
            header: Header::default(),
            unit: rate_unit(max, Measure::Flops),
        };
        chart.header = chart.header();
        Some(chart)
    }

    /// Each timed row's point, in the chart's pixels, with its key: what a page overlays to
    /// name a point on hover.
    pub(crate) fn points(&self) -> Vec<(&'a RowReport, &str, (f64, f64))> {
        let p = self.plan();
        self.keyed
            .iter()
            .filter_map(|(r, key)| {
                let t = r.timed?;
                Some((*r, key.as_str(), (p.x.px(r.intensity()), p.y.px(t.gflops))))
            })
            .collect()
    }

    fn counted(&self) -> bool {
        self.s.rows.iter().any(|r| r.traffic_intensity.is_some())
    }

    fn header(&self) -> Header {
        let ceilings = self.report.ceilings.as_ref();
        let mut legend: Vec<Entry> = Vec::new();
        if let Some(c) = ceilings {
            legend.push(Entry {
                label: format!("memory roof {}", bandwidth(c.bandwidth_gbs)),
                color: BLACK_TEXT,
                mark: Mark::Line(Dash::Solid),
            });
            // FP8, which only a kernel of yours computes in, is named where such a row is.
            let fp8 = self
                .s
                .rows
                .iter()
                .any(|r| r.row.precision == Precision::Fp8);
            for roof in c.roofs() {
                let judged: Vec<&str> = Precision::ALL
                    .into_iter()
                    .filter(|p| c.roof(*p).kind == roof.kind && (fp8 || *p != Precision::Fp8))
                    .map(|p| p.name())
                    .collect();
                legend.push(Entry {
                    label: format!("{} roof: {} rows", roof.name(), judged.join(", ")),
                    color: BLACK_TEXT,
                    mark: Mark::Series(roof_marker(roof.kind), true, Dash::Solid),
                });
            }
            if c.mma_sync().is_some() {
                legend.push(Entry {
                    label: format!("{MMA_SYNC_CEILING}: the most an mma.sync rung can reach"),
                    color: BLACK_TEXT,
                    mark: Mark::Line(Dash::Dashed),
                });
            }
        }
        let source = self.s.traffic_source();
        let x_note = match (source, self.counted()) {
            (Some(src), _) => format!("x: FLOP per byte of the {}.", src.describe()),
            (None, false) => "x: FLOP per compulsory byte (each input read once, the output \
                written once). Without counted traffic every row of a precision sits at that \
                same x; a profile on the GPU, or the simulator's count, places each row at the \
                intensity it really reaches."
                .into(),
            (None, true) => {
                let src = self.s.rows.iter().find_map(|r| r.traffic_intensity);
                for (filled, label) in [(true, "counted traffic"), (false, "compulsory bytes")] {
                    legend.push(Entry {
                        label: label.into(),
                        color: GREY,
                        mark: Mark::Point(Marker::Circle, filled),
                    });
                }
                format!(
                    "x: FLOP per byte of the {} (filled dots), or of the compulsory bytes where \
                     nothing counted it (hollow dots).",
                    src.map_or("counted traffic", |(_, s)| s.describe())
                )
            }
        };
        legend.extend(super::colour_legend(
            self.keyed
                .iter()
                .filter(|(r, _)| r.timed.is_some())
                .map(|(r, _)| (r.row.role, r.row.stage)),
            true,
        ));
        let mut notes = vec![
            "Median throughput against arithmetic intensity (log-log), each row under the \
             roof of its own precision, whose marker it has: on the slope memory bandwidth \
             bounds a row, under a flat roof compute does. A point's colour is its stage crate, \
             as in the ablation chart; it carries its rung number (R reference, P peer, U your \
             kernel), named in the key."
                .into(),
            format!("{x_note} Roofs: {}.", roof_source(ceilings)),
        ];
        // A point above its roof: the ceiling is a measurement, which a kernel can beat.
        let above: Vec<&str> = self
            .keyed
            .iter()
            .filter(|(r, _)| r.roof.as_ref().is_some_and(|x| x.pct > 100.0))
            .map(|(_, key)| key.as_str())
            .collect();
        if !above.is_empty() {
            let (verb, roof) = match above.len() {
                1 => ("lies", "its roof"),
                _ => ("lie", "their roofs"),
            };
            notes.push(format!(
                "{} {verb} above {roof}: a roof is a ceiling measured by a benchmark kernel (or \
                 a datasheet's), and a kernel can run closer to the hardware's peak than that \
                 kernel did.",
                above.join(", ")
            ));
        }
        Header {
            title: format!(
                "{} roofline, {} on {}",
                self.s.shape.workload().title(),
                self.s.label,
                self.report.run.device.name
            ),
            notes,
            legend,
        }
    }

    /// The key table's lines: key, name, figures; the first is the header.
    fn key_lines(&self) -> Vec<(String, String, String)> {
        let (unit, scale) = self.unit;
        let head = (
            "key".into(),
            "row".into(),
            "throughput · % of its roof".into(),
        );
        let rows = self.keyed.iter().map(|(r, key)| {
            let figures = match (r.timed, &r.roof) {
                (Some(t), Some(roof)) => {
                    format!("{} {unit} · {:.0}%", sig3(t.gflops * scale), roof.pct)
                }
                (Some(t), None) => format!("{} {unit}", sig3(t.gflops * scale)),
                (None, _) if r.row.status == Status::Failed => "failed its check".into(),
                (None, _) => "not timed".into(),
            };
            (key.clone(), r.row.id.clone(), figures)
        });
        std::iter::once(head).chain(rows).collect()
    }

    fn plan(&self) -> Plan {
        let lines = self.key_lines();
        let width = |f: fn(&(String, String, String)) -> &String| {
            lines
                .iter()
                .map(|l| text_width(f(l), LABEL))
                .fold(0.0, f64::max)
        };
        let (kw, nw, fw) = (width(|l| &l.0), width(|l| &l.1), width(|l| &l.2));
        let key_x = WIDTH - MARGIN - (kw + 10.0 + nw + 14.0 + fw);
        let top = self.header.height(WIDTH) + 30.0;
        let height = (top + KEY_ROW * lines.len() as f64 + 90.0).max(780.0);
        let plot = Rect::new(MARGIN + 52.0, top, key_x - 36.0, height - 90.0);

        let points: Vec<&RowReport> = self.s.timed_rows().collect();
        let mut xs: Vec<f64> = points.iter().map(|r| r.intensity()).collect();
        let mut ys: Vec<f64> = points
            .iter()
            .filter_map(|r| r.timed.map(|t| t.gflops_lo))
            .collect();
        if let Some(c) = &self.report.ceilings {
            for roof in c.roofs() {
                xs.push(roof.gflops / c.bandwidth_gbs);
                ys.push(roof.gflops);
            }
        }
        if self.counted() {
            xs.extend(self.s.rows.iter().map(|r| r.compulsory_intensity));
        }
        let (xlo, xhi) = bounds(&xs);
        let (ylo, yhi) = bounds(&ys);
        Plan {
            x: Axis::new(xlo / 4.0, xhi * 4.0, true, plot.x0, plot.x1),
            y: Axis::new(ylo / 4.0, yhi * 3.0, true, plot.y1, plot.y0),
            key: (key_x, kw + 10.0, kw + 10.0 + nw + 14.0),
            plot,
            height,
        }
    }

    /// Draws the memory roof and one compute roof per precision; returns their labels, each
    /// with the spots along its line where it may go.
    fn roofs<DB: DrawingBackend>(
        &self,
        c: &mut Canvas<'_, DB>,
        p: &Plan,
        ceil: &Ceilings,
    ) -> Result<Vec<Pending>> {
        let bw = ceil.bandwidth_gbs;
        let roofs = ceil.roofs();
        let top = roofs.iter().map(|r| r.gflops).fold(0.0, f64::max);
        let xa = p.x.lo.max(p.y.lo / bw);
        let xb = (top / bw).min(p.x.hi);
        let at = |x: f64, y: f64| (p.x.px(x), p.y.px(y));
        c.line(
            &[at(xa, xa * bw), at(xb, xb * bw)],
            BLACK_TEXT,
            2,
            Dash::Solid,
        )?;
        let mut labels = Vec::new();
        for roof in &roofs {
            let ridge = (roof.gflops / bw).max(p.x.lo);
            let color = BLACK_TEXT;
            let (left, y) = at(ridge, roof.gflops);
            c.line(&[(left, y), at(p.x.hi, roof.gflops)], color, 2, Dash::Solid)?;
            // Above or below the flat part, from its right end; a short roof's label may
            // reach left past its ridge.
            let label = format!("{} {}", roof.name(), throughput(roof.gflops));
            let w = text_width(&label, LABEL);
            let along = (0..16).map(|k| p.plot.x1 - 6.0 - 45.0 * f64::from(k));
            let (over, past): (Vec<f64>, Vec<f64>) = along.partition(|x| x - w > left);
            let spots = over
                .into_iter()
                .chain(past)
                .flat_map(|x| [((x, y - 11.0), HPos::Right), ((x, y + 11.0), HPos::Right)])
                .collect();
            labels.push((label, color, spots));
        }
        // The mma.sync ceiling: dashed, under the FP16 tensor roof.
        if let Some(g) = ceil.mma_sync() {
            let color = BLACK_TEXT;
            let (left, y) = at((g / bw).max(p.x.lo), g);
            c.line(&[(left, y), at(p.x.hi, g)], color, 2, Dash::Dashed)?;
            let spots = (0..16)
                .map(|k| p.plot.x1 - 6.0 - 45.0 * f64::from(k))
                .flat_map(|x| [((x, y + 11.0), HPos::Right), ((x, y - 11.0), HPos::Right)])
                .collect();
            labels.push((
                format!("{MMA_SYNC_CEILING} {}", throughput(g)),
                color,
                spots,
            ));
        }
        // Above the slope (a box whose right end touches the line clears it) or below it.
        let spots = (1..10)
            .flat_map(|k| {
                let x = xa * (xb / xa).powf(f64::from(k) / 10.0);
                let (px, py) = at(x, x * bw);
                [
                    ((px - 4.0, py - 12.0), HPos::Right),
                    ((px + 6.0, py + 12.0), HPos::Left),
                ]
            })
            .collect();
        labels.push((format!("memory {}", bandwidth(bw)), BLACK_TEXT, spots));
        Ok(labels)
    }

    /// Draws a dotted line at the compulsory intensity of each precision, where counted
    /// traffic moved points off it; returns their labels.
    fn compulsory<DB: DrawingBackend>(
        &self,
        c: &mut Canvas<'_, DB>,
        p: &Plan,
    ) -> Result<Vec<Pending>> {
        let mut seen: Vec<(f64, Vec<&str>)> = Vec::new();
        for r in &self.s.rows {
            let (x, name) = (r.compulsory_intensity, r.row.precision.name());
            match seen.iter_mut().find(|(v, _)| (v - x).abs() <= 1e-9 * x) {
                Some((_, names)) if !names.contains(&name) => names.push(name),
                Some(_) => {}
                None => seen.push((x, vec![name])),
            }
        }
        let mut labels = Vec::new();
        for (x, names) in seen {
            let px = p.x.px(x);
            c.line(&[(px, p.plot.y0), (px, p.plot.y1)], GREY, 1, Dash::Dotted)?;
            let spots = (0..20)
                .flat_map(|k| {
                    let y = p.plot.y0 + 10.0 + 18.0 * f64::from(k);
                    [((px + 4.0, y), HPos::Left), ((px - 4.0, y), HPos::Right)]
                })
                .collect();
            labels.push((format!("compulsory, {}", names.join(", ")), GREY, spots));
        }
        Ok(labels)
    }
}

/// A line's label waiting for the points to be drawn: its words, colour and candidate spots.
type Pending = (String, RGBColor, Vec<((f64, f64), HPos)>);

/// The smallest and largest positive value, or a default range.
fn bounds(v: &[f64]) -> (f64, f64) {
    let pos = v.iter().copied().filter(|x| x.is_finite() && *x > 0.0);
    let lo = pos.clone().fold(f64::INFINITY, f64::min);
    let hi = pos.fold(0.0, f64::max);
    if lo.is_finite() {
        (lo, hi)
    } else {
        (0.1, 10.0)
    }
}

impl Chart for Roofline<'_> {
    fn size(&self) -> (u32, u32) {
        (WIDTH as u32, self.plan().height.ceil() as u32)
    }

    fn draw<DB: DrawingBackend>(&self, root: &DrawingArea<DB, Shift>) -> Result<Layout> {
        let p = self.plan();
        let (unit, scale) = self.unit;
        let mut c = Canvas::new(root)?;
        self.header.draw(&mut c)?;
        x_axis(
            &mut c,
            p.plot,
            &p.x,
            &fmt_num,
            "arithmetic intensity (FLOP/byte)",
        )?;
        y_axis(
            &mut c,
            p.plot,
            &p.y,
            &|v| fmt_num(v * scale),
            &format!("throughput ({unit})"),
        )?;
        // Lines first, then the points, then every label where no point is.
        let mut pending = Vec::new();
        if self.counted() {
            pending.extend(self.compulsory(&mut c, &p)?);
        }
        if let Some(ceil) = &self.report.ceilings {
            pending.extend(self.roofs(&mut c, &p, ceil)?);
        }
        let color = |r: &RowReport| row_color(r.row.role, r.row.stage);
        let shape = |r: &RowReport| {
            r.roof
                .as_ref()
                .map_or(Marker::Circle, |x| roof_marker(x.roof.kind))
        };
        let mut points = Vec::new();
        for (r, key) in &self.keyed {
            let Some(t) = r.timed else { continue };
            let at = (p.x.px(r.intensity()), p.y.px(t.gflops));
            let (lo, hi) = (p.y.px(t.gflops_lo), p.y.px(t.gflops_hi));
            // The p10-p90 whisker, capped so that it never reads as a leader line.
            c.line(&[(at.0, lo), (at.0, hi)], color(r), 1, Dash::Solid)?;
            for end in [lo, hi] {
                c.line(
                    &[(at.0 - 3.0, end), (at.0 + 3.0, end)],
                    color(r),
                    1,
                    Dash::Solid,
                )?;
            }
            let counted = r.traffic_intensity.is_some() || !self.counted();
            c.marker(shape(r), at, R, color(r), counted)?;
            c.mark(Rect::new(at.0 - R, at.1 - R, at.0 + R, at.1 + R));
            points.push((at, key, color(r)));
        }
        for (label, color, spots) in pending {
            c.place(&label, LABEL, color, p.plot, spots)?;
        }
        for (at, key, color) in points {
            let within = Rect::new(p.plot.x0 + 2.0, p.plot.y0, p.plot.x1, p.plot.y1 - 2.0);
            let Some(r) = c.place(key, LABEL, color, within, spots_around(at, R))? else {
                continue;
            };
            let end = r.nearest(at);
            let d = (end.0 - at.0).hypot(end.1 - at.1);
            if d > R + 7.0 {
                let from = (at.0 + (end.0 - at.0) * R / d, at.1 + (end.1 - at.1) * R / d);
                c.line(&[from, end], GREY, 1, Dash::Solid)?;
            }
        }
        let (kx, name_dx, fig_dx) = p.key;
        let mut y = p.plot.y0 + KEY_ROW / 2.0;
        for (i, (key, name, figures)) in self.key_lines().into_iter().enumerate() {
            // The header line is grey, and so is the key of a row with no point.
            let row = i.checked_sub(1).map(|i| self.keyed[i].0);
            let shade = row.filter(|r| r.timed.is_some()).map_or(GREY, color);
            let ink = if row.is_some() { BLACK_TEXT } else { GREY };
            c.text(&key, (kx, y), HPos::Left, LABEL, shade)?;
            c.text(&name, (kx + name_dx, y), HPos::Left, LABEL, ink)?;
            c.text(&figures, (kx + fig_dx, y), HPos::Left, LABEL, GREY)?;
            y += KEY_ROW;
        }
        c.footer(&footer(&self.report.run))?;
        Ok(c.layout)
    }
}
