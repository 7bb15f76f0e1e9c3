//! A network's charts: each row's end-to-end time as one bar stacked by category, and the
//! time per image against the batch size (with and without a CUDA graph where there is one).

use super::axes::{Axis, fmt_num, x_axis, y_axis};
use super::canvas::{BLACK_TEXT, Canvas, Dash, LABEL, Layout, MARGIN, Marker, Rect, text_width};
use super::header::{Entry, Header, Mark};
use super::{Chart, PALETTE};
use crate::report::network::by_category;
use crate::results::{BatchSweep, NetworkResults};
use anyhow::Result;
use kernel::network::Category;
use plotters::coord::Shift;
use plotters::prelude::*;
use plotters::style::text_anchor::HPos;

const WIDTH: f64 = 1280.0;
const PITCH: f64 = 26.0;
const BAND: f64 = 18.0;

/// One colour per category; red is left out, as in every chart of the lab (it marks
/// slowdowns), and the gaps are grey.
fn color(c: Category) -> RGBColor {
    match c {
        Category::Gemm => PALETTE[0],
        Category::Attention => PALETTE[1],
        Category::Convolution => PALETTE[2],
        Category::Elementwise => PALETTE[4],
        Category::Copies => PALETTE[5],
        Category::Gaps => RGBColor(190, 190, 190),
    }
}

/// Each row's time, stacked by category, in milliseconds.
pub struct Stacked {
    header: Header,
    footer: String,
    /// Row names and their per-category times, in [`Category::ALL`] order.
    rows: Vec<(String, [f64; 6], f64)>,
}

impl Stacked {
    pub fn new(n: &NetworkResults, footer: String) -> Option<Self> {
        if n.rows.is_empty() {
            return None;
        }
        let used: Vec<Category> = Category::ALL
            .into_iter()
            .filter(|&c| n.rows.iter().any(|r| by_category(r)[idx(c)] > 0.0))
            .collect();
        Some(Self {
            header: Header {
                title: format!(
                    "{} {}: where the forward pass spends its time",
                    n.workload, n.label
                ),
                notes: vec![format!(
                    "One bar per row, each a choice of the swapped operator's rung; end-to-end ms at the bar's end. Steps: {}.",
                    n.method
                )],
                legend: used
                    .iter()
                    .map(|&c| Entry {
                        label: c.name().to_string(),
                        color: color(c),
                        mark: Mark::Bar,
                    })
                    .collect(),
            },
            footer,
            rows: n
                .rows
                .iter()
                .map(|r| (r.id.clone(), by_category(r), r.total_ms))
                .collect(),
        })
    }

    fn name_width(&self) -> f64 {
        self.rows
            .iter()
            .map(|(n, _, _)| text_width(n, LABEL))
            .fold(0.0, f64::max)
            + 12.0
    }
}

fn idx(c: Category) -> usize {
    Category::ALL.iter().position(|&x| x == c).unwrap_or(0)
}

impl Chart for Stacked {
    fn size(&self) -> (u32, u32) {
        let h = self.header.height(WIDTH) + 30.0 + PITCH * self.rows.len() as f64 + 80.0;
        (WIDTH as u32, h.ceil() as u32)
    }

    fn draw<DB: DrawingBackend>(&self, root: &DrawingArea<DB, Shift>) -> Result<Layout> {
        let mut c = Canvas::new(root)?;
        let top = self.header.draw(&mut c)? + 16.0;
        let x0 = MARGIN + self.name_width();
        let x1 = WIDTH - MARGIN - 90.0;
        let max = self
            .rows
            .iter()
            .map(|(_, cats, total)| cats.iter().sum::<f64>().max(*total))
            .fold(0.0, f64::max)
            .max(1e-9);
        let axis = Axis::new(0.0, max * 1.02, false, x0, x1);
        let plot = Rect::new(x0, top, x1, top + PITCH * self.rows.len() as f64 + 6.0);
        x_axis(
            &mut c,
            plot,
            &axis,
            &fmt_num,
            "milliseconds per forward pass",
        )?;
        for (i, (name, cats, total)) in self.rows.iter().enumerate() {
            let y = top + 6.0 + PITCH * i as f64 + BAND / 2.0;
            c.text(name, (x0 - 8.0, y), HPos::Right, LABEL, BLACK_TEXT)?;
            let mut at = 0.0;
            for (k, v) in cats.iter().enumerate() {
                if *v <= 0.0 {
                    continue;
                }
                let r = Rect::new(axis.px(at), y - BAND / 2.0, axis.px(at + v), y + BAND / 2.0);
                c.fill(r, color(Category::ALL[k]))?;
                at += v;
            }
            c.text(
                &format!("{} ms", fmt_num(*total)),
                (axis.px(at) + 6.0, y),
                HPos::Left,
                LABEL,
                BLACK_TEXT,
            )?;
        }
        c.footer(&self.footer)?;
        Ok(c.layout)
    }
}

/// A line of the batch chart: its name, its (batch, ms per image) points and its colour.
type Series = (String, Vec<(f64, f64)>, RGBColor);

/// Time per image against the batch size, log-log.
pub struct BatchChart {
    header: Header,
    footer: String,
    series: Vec<Series>,
}

impl BatchChart {
    pub fn new(n: &NetworkResults, s: &BatchSweep, footer: String) -> Option<Self> {
        if s.points.len() < 2 {
            return None;
        }
        let graphs = s.points.iter().any(|p| p.graph_ms_per_item.is_some());
        let plain = match graphs {
            true => "steps enqueued one by one",
            false => "the forward pass",
        };
        let mut series = vec![(
            plain.to_string(),
            s.points
                .iter()
                .map(|p| (p.batch as f64, p.ms_per_item))
                .collect::<Vec<_>>(),
            PALETTE[0],
        )];
        let graphed: Vec<(f64, f64)> = s
            .points
            .iter()
            .filter_map(|p| Some((p.batch as f64, p.graph_ms_per_item?)))
            .collect();
        if !graphed.is_empty() {
            series.push(("one CUDA graph".to_string(), graphed, PALETTE[1]));
        }
        Some(Self {
            header: Header {
                title: format!("{}: time per image against the batch size", n.workload),
                notes: vec![s.method.clone()],
                legend: series
                    .iter()
                    .map(|(l, _, c)| Entry {
                        label: l.clone(),
                        color: *c,
                        mark: Mark::Line(Dash::Solid),
                    })
                    .collect(),
            },
            footer,
            series,
        })
    }
}

impl Chart for BatchChart {
    fn size(&self) -> (u32, u32) {
        (960, (self.header.height(960.0) + 480.0) as u32)
    }

    fn draw<DB: DrawingBackend>(&self, root: &DrawingArea<DB, Shift>) -> Result<Layout> {
        let mut c = Canvas::new(root)?;
        let (w, h) = (c.layout.width, c.layout.height);
        let top = self.header.draw(&mut c)? + 30.0;
        let plot = Rect::new(MARGIN + 70.0, top, w - MARGIN - 20.0, h - 80.0);
        let pts = self.series.iter().flat_map(|(_, p, _)| p.iter());
        let (mut xlo, mut xhi, mut ylo, mut yhi) = (f64::MAX, 0.0f64, f64::MAX, 0.0f64);
        for &(x, y) in pts {
            (xlo, xhi, ylo, yhi) = (xlo.min(x), xhi.max(x), ylo.min(y), yhi.max(y));
        }
        let mut xa = Axis::new(xlo, xhi.max(xlo * 2.0), true, plot.x0, plot.x1);
        xa.ticks = Some(self.series[0].1.iter().map(|p| p.0).collect());
        let ya = Axis::new(ylo / 1.5, yhi * 1.5, true, plot.y1, plot.y0);
        y_axis(&mut c, plot, &ya, &fmt_num, "ms per image")?;
        x_axis(&mut c, plot, &xa, &fmt_num, "batch size (images)")?;
        for (_, points, color) in &self.series {
            let line: Vec<(f64, f64)> = points.iter().map(|&(x, y)| (xa.px(x), ya.px(y))).collect();
            c.line(&line, *color, 2, Dash::Solid)?;
            for &p in &line {
                c.marker(Marker::Circle, p, 4.0, *color, true)?;
            }
        }
        c.footer(&self.footer)?;
        Ok(c.layout)
    }
}
