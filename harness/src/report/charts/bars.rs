//! Horizontal bars with full row names, the figures written at each bar's end and labelled
//! vertical lines: the ablation (throughput per rung), the simulator's intensity per rung and
//! the comparison of two runs are all this one chart. The value axis is sized so that every
//! bar's notes fit beside it, so nothing is cut or drawn over.

use super::Chart;
use super::axes::{Axis, x_axis};
use super::canvas::{BLACK_TEXT, Canvas, Dash, LABEL, Layout, MARGIN, Rect, text_box, text_width};
use super::header::Header;
use anyhow::Result;
use plotters::coord::Shift;
use plotters::prelude::*;
use plotters::style::text_anchor::HPos;

pub struct Bars {
    pub header: Header,
    pub footer: String,
    pub axis_title: String,
    pub log: bool,
    /// Where bars grow from: 0 on a linear axis, 1 for ratios; the axis' left end when `None`.
    pub base: Option<f64>,
    pub format: fn(f64) -> String,
    pub rows: Vec<Bar>,
    pub lines: Vec<VLine>,
}

/// One row: its bar, its whisker and its notes.
pub struct Bar {
    pub name: String,
    pub value: Option<f64>,
    /// The p10-p90 range, drawn as a whisker.
    pub range: Option<(f64, f64)>,
    pub color: RGBColor,
    /// Texts after the bar's end, or where the bar would start when it has no value.
    pub notes: Vec<(String, RGBColor)>,
}

/// A labelled vertical line across the rows (a reference row, a compulsory intensity).
pub struct VLine {
    pub value: f64,
    pub label: String,
    pub color: RGBColor,
    pub dash: Dash,
}

const WIDTH: f64 = 1280.0;
const PITCH: f64 = 26.0;
const BAND: f64 = 20.0;
const GAP: f64 = 8.0;

/// Where everything goes, computed before drawing so that the picture's height is known.
struct Plan {
    axis: Axis,
    plot: Rect,
    /// Band row of each line's label, counted from the plot upwards.
    band: Vec<usize>,
}

impl Bars {
    fn notes_width(b: &Bar) -> f64 {
        b.notes
            .iter()
            .map(|(s, _)| text_width(s, LABEL) + 10.0)
            .sum()
    }

    /// The value axis from `x0` to `x1`: long enough for every value, short enough that each
    /// bar's notes fit right of it.
    fn axis(&self, x0: f64, x1: f64) -> Axis {
        let width = x1 - x0;
        let mut values: Vec<f64> = self.lines.iter().map(|l| l.value).collect();
        for b in &self.rows {
            values.extend(b.value);
            values.extend(b.range.iter().flat_map(|(lo, hi)| [*lo, *hi]));
        }
        values.extend(self.base);
        values.retain(|v| v.is_finite() && (!self.log || *v > 0.0));
        let max = values.iter().copied().fold(f64::NAN, f64::max);
        let min = values.iter().copied().fold(f64::NAN, f64::min);
        let (lo, top) = match (self.log, max.is_nan()) {
            (true, true) => (0.1, 10.0),
            (false, true) => (0.0, 1.0),
            // Bars that all grow rightwards from their base start the axis there, and a log
            // axis spans at least a factor of two: ten bars at 1x fill no 0.6..1.2 window.
            (true, false) => {
                let lo = match self.base {
                    Some(b) if min >= b => b,
                    _ => min / 1.6,
                };
                (lo, (max * 1.15).max(lo * 2.0))
            }
            (false, false) => (min.min(0.0), max * 1.04),
        };
        // Nothing but the base to show (every row failed): any range will do.
        let top = if top > lo { top } else { lo + 1.0 };
        let t = |v: f64| if self.log { v.log10() } else { v };
        let mut th = t(top);
        // Room right of each line for half its label, so that the label centres on it.
        for l in &self.lines {
            let room = width - text_width(&l.label, LABEL) / 2.0 - 2.0;
            if room > 0.5 * width && l.value > lo {
                th = th.max(t(lo) + (t(l.value) - t(lo)) * width / room);
            }
        }
        for b in &self.rows {
            let Some(v) = b.value else { continue };
            let end = [Some(v), b.range.map(|r| r.1), self.base]
                .into_iter()
                .flatten()
                .fold(v, f64::max);
            let room = width - Self::notes_width(b) - GAP - 4.0;
            if room > 0.2 * width {
                th = th.max(t(lo) + (t(end) - t(lo)) * width / room);
            }
        }
        let hi = if self.log { 10f64.powf(th) } else { th };
        Axis::new(lo, hi, self.log, x0, x1)
    }

    /// Where a line's label goes across: centred on the line, kept inside the plot.
    fn line_label(l: &VLine, axis: &Axis, y: f64) -> (f64, f64) {
        let w = text_width(&l.label, LABEL);
        let x = axis
            .px(l.value)
            .min(axis.to - w / 2.0)
            .max(axis.from + w / 2.0);
        (x, y)
    }

    fn plan(&self) -> Plan {
        let names = self
            .rows
            .iter()
            .map(|b| text_width(&b.name, LABEL))
            .fold(0.0, f64::max);
        let (x0, x1) = (MARGIN + names + 14.0, WIDTH - MARGIN);
        let axis = self.axis(x0, x1);
        // Line labels in rows above the plot: each goes in the lowest row it fits in.
        let mut taken: Vec<(Rect, usize)> = Vec::new();
        let band = self
            .lines
            .iter()
            .map(|l| {
                let r = text_box(
                    &l.label,
                    Self::line_label(l, &axis, 0.0),
                    HPos::Center,
                    LABEL,
                );
                let row = (0..)
                    .find(|row| {
                        !taken
                            .iter()
                            .any(|(t, tr)| tr == row && t.grow(6.0).overlaps(&r))
                    })
                    .unwrap_or(0);
                taken.push((r, row));
                row
            })
            .collect::<Vec<_>>();
        let rows = band.iter().max().map_or(0, |m| m + 1);
        let top = self.header.height(WIDTH) + BAND * rows as f64 + 8.0;
        let plot = Rect::new(x0, top, x1, top + PITCH * self.rows.len().max(1) as f64);
        Plan { axis, plot, band }
    }
}

impl Chart for Bars {
    fn size(&self) -> (u32, u32) {
        let plot = self.plan().plot;
        (WIDTH as u32, (plot.y1 + 80.0).ceil() as u32)
    }

    fn draw<DB: DrawingBackend>(&self, root: &DrawingArea<DB, Shift>) -> Result<Layout> {
        let Plan { axis, plot, band } = self.plan();
        let mut c = Canvas::new(root)?;
        self.header.draw(&mut c)?;
        x_axis(&mut c, plot, &axis, &self.format, &self.axis_title)?;
        // Every line first, then every label on its white box: a line that runs up past
        // the labels of lower rows to its own passes behind them, not through their text.
        let labels: Vec<(&VLine, (f64, f64))> = self
            .lines
            .iter()
            .zip(band)
            .map(|(l, row)| {
                let y = plot.y0 - 8.0 - BAND * (row as f64 + 0.5);
                (l, Self::line_label(l, &axis, y))
            })
            .collect();
        for (l, at) in &labels {
            let r = text_box(&l.label, *at, HPos::Center, LABEL);
            let x = axis.px(l.value);
            c.line(&[(x, r.y1 + 1.0), (x, plot.y1)], l.color, 2, l.dash)?;
        }
        for (l, at) in &labels {
            c.label(&l.label, *at, HPos::Center, LABEL, l.color)?;
        }
        let base = axis.px(self.base.unwrap_or(axis.lo));
        for (i, b) in self.rows.iter().enumerate() {
            let y = plot.y0 + PITCH * (i as f64 + 0.5);
            c.text(&b.name, (plot.x0 - 8.0, y), HPos::Right, LABEL, BLACK_TEXT)?;
            let mut x = plot.x0 + GAP;
            if let Some(v) = b.value {
                let end = axis.px(v);
                let h = 0.31 * PITCH;
                c.fill(
                    Rect::new(base.min(end), y - h, base.max(end), y + h),
                    b.color,
                )?;
                x = x.max(end.max(base) + GAP);
                if let Some((lo, hi)) = b.range {
                    let (a, z) = (axis.px(lo), axis.px(hi));
                    c.line(&[(a, y), (z, y)], BLACK_TEXT, 1, Dash::Solid)?;
                    for e in [a, z] {
                        c.line(&[(e, y - 5.0), (e, y + 5.0)], BLACK_TEXT, 1, Dash::Solid)?;
                    }
                    x = x.max(z + GAP);
                }
            }
            for (s, color) in &b.notes {
                x = c.label(s, (x, y), HPos::Left, LABEL, *color)?.x1 + 10.0;
            }
        }
        c.footer(&self.footer)?;
        Ok(c.layout)
    }
}
