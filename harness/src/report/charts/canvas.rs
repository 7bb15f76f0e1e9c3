//! Pixel-space drawing for every chart. Each text is measured with the embedded font before it
//! is drawn, so its box is known: labels go where no other label is, and the boxes come back
//! to the caller as a [`Layout`] (tests check that none overlap and none leave the picture).

use ab_glyph::{Font, FontRef};
use anyhow::{Result, anyhow};
use plotters::coord::Shift;
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};
use std::sync::OnceLock;

/// The family plotters registers the embedded font under, and the one the SVG asks its viewer
/// for: DejaVu Sans where installed (the metrics the layout used), else any sans-serif.
pub(crate) const FONT: &str = "DejaVu Sans, sans-serif";
const FONT_BYTES: &[u8] = include_bytes!("../../../assets/DejaVuSans.ttf");

pub const BLACK_TEXT: RGBColor = RGBColor(20, 20, 20);
pub const GREY: RGBColor = RGBColor(105, 105, 105);
pub const GRID: RGBColor = RGBColor(228, 228, 228);

/// Margin around the picture, pixels.
pub const MARGIN: f64 = 20.0;
/// The size of every label in a plot.
pub const LABEL: f64 = 13.0;

/// The font's vertical metrics in font units.
struct Metrics {
    font: FontRef<'static>,
    units_per_em: f64,
    ascent: f64,
    descent: f64,
    x_height: f64,
}

/// The embedded font, registered with plotters on first use.
fn metrics() -> Result<&'static Metrics> {
    static METRICS: OnceLock<Option<Metrics>> = OnceLock::new();
    METRICS
        .get_or_init(|| {
            plotters::style::register_font(FONT, FontStyle::Normal, FONT_BYTES).ok()?;
            let font = FontRef::try_from_slice(FONT_BYTES).ok()?;
            let x = font.outline(font.glyph_id('x'))?.bounds;
            Some(Metrics {
                units_per_em: f64::from(font.units_per_em()?),
                ascent: f64::from(font.ascent_unscaled()),
                descent: f64::from(font.descent_unscaled()),
                x_height: f64::from((x.max.y - x.min.y).abs()),
                font,
            })
        })
        .as_ref()
        .ok_or_else(|| anyhow!("the embedded chart font could not be loaded"))
}

/// The embedded font, for the PNG backend's text.
pub(crate) fn font() -> Result<&'static FontRef<'static>> {
    metrics().map(|m| &m.font)
}

/// Width of `s` at `size` (plotters' font size), pixels: the wider of the PNG (ab_glyph scales
/// ascent to descent to `size`) and the SVG (its viewer's em is `size / 1.24`).
pub fn text_width(s: &str, size: f64) -> f64 {
    let Ok(m) = metrics() else {
        return 0.6 * size * s.chars().count() as f64;
    };
    let mut units = 0.0;
    let mut prev = None;
    for c in s.chars() {
        let id = m.font.glyph_id(c);
        if let Some(p) = prev {
            units += f64::from(m.font.kern_unscaled(p, id));
        }
        units += f64::from(m.font.h_advance_unscaled(id));
        prev = Some(id);
    }
    let png = units * size / (m.ascent - m.descent);
    let svg = units * size / 1.24 / m.units_per_em;
    png.max(svg).ceil() + 1.0
}

/// How far a line of text drawn vertically centred at y reaches above and below y: the union
/// of where the PNG and the SVG put its ascenders and descenders.
fn extent(size: f64) -> (f64, f64) {
    let Ok(m) = metrics() else {
        return (0.7 * size, 0.5 * size);
    };
    // PNG: plotters shifts by half its box (size / 1.24, truncated) and puts the baseline at
    // size / 2 below the glyphs' origin; the glyphs span ascent..descent over `size` pixels.
    let scale = size / (m.ascent - m.descent);
    let base = size / 2.0 - ((size / 1.24).floor() / 2.0).floor();
    let png = (base - m.ascent * scale, base - m.descent * scale);
    // SVG: `dy = 0.5ex` puts the baseline half an x-height below y.
    let em = size / 1.24 / m.units_per_em;
    let base = 0.5 * m.x_height * em;
    let svg = (base - m.ascent * em, base - m.descent * em);
    (-(png.0.min(svg.0)), png.1.max(svg.1))
}

/// The box of `s` drawn at (x, y), y its vertical centre, x its left, middle or right end.
pub fn text_box(s: &str, (x, y): (f64, f64), h: HPos, size: f64) -> Rect {
    let w = text_width(s, size);
    let x0 = match h {
        HPos::Left => x,
        HPos::Center => x - w / 2.0,
        HPos::Right => x - w,
    };
    let (above, below) = extent(size);
    Rect::new(x0, y - above, x0 + w, y + below)
}

/// A box in pixels, x to the right and y down.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Rect {
    pub x0: f64,
    pub y0: f64,
    pub x1: f64,
    pub y1: f64,
}

impl Rect {
    pub fn new(x0: f64, y0: f64, x1: f64, y1: f64) -> Self {
        Self { x0, y0, x1, y1 }
    }

    #[cfg(test)]
    pub fn height(&self) -> f64 {
        self.y1 - self.y0
    }

    /// Whether the two boxes share any area.
    pub fn overlaps(&self, o: &Rect) -> bool {
        self.x0 < o.x1 && o.x0 < self.x1 && self.y0 < o.y1 && o.y0 < self.y1
    }

    pub fn contains(&self, o: &Rect) -> bool {
        o.x0 >= self.x0 && o.x1 <= self.x1 && o.y0 >= self.y0 && o.y1 <= self.y1
    }

    /// Grown by `d` on every side.
    pub fn grow(&self, d: f64) -> Rect {
        Rect::new(self.x0 - d, self.y0 - d, self.x1 + d, self.y1 + d)
    }

    /// The point of the box nearest to (x, y): where a leader line ends.
    pub fn nearest(&self, (x, y): (f64, f64)) -> (f64, f64) {
        (x.clamp(self.x0, self.x1), y.clamp(self.y0, self.y1))
    }
}

/// What a label is, for tests that check ticks apart from the rest.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    Text,
    XTick,
    YTick,
}

/// One text the chart drew, with its box.
#[derive(Debug, Clone, PartialEq)]
pub struct Label {
    pub text: String,
    pub rect: Rect,
    pub kind: Kind,
}

/// Every text box a chart placed, and the boxes of marks labels must keep off (points).
#[derive(Debug, Clone, Default)]
pub struct Layout {
    pub width: f64,
    pub height: f64,
    pub labels: Vec<Label>,
    pub marks: Vec<Rect>,
}

impl Layout {
    /// Pairs of labels whose boxes overlap; empty when the chart reads cleanly.
    #[cfg(test)]
    pub fn overlaps(&self) -> Vec<(&Label, &Label)> {
        let mut v = Vec::new();
        for (i, a) in self.labels.iter().enumerate() {
            for b in &self.labels[i + 1..] {
                if a.rect.overlaps(&b.rect) {
                    v.push((a, b));
                }
            }
        }
        v
    }

    /// Labels that reach outside the picture.
    #[cfg(test)]
    pub fn outside(&self) -> Vec<&Label> {
        let all = Rect::new(0.0, 0.0, self.width, self.height);
        self.labels
            .iter()
            .filter(|l| !all.contains(&l.rect))
            .collect()
    }

    /// Whether a label could go at `r`: inside `within`, off every other label and mark.
    fn free(&self, r: &Rect, within: &Rect) -> bool {
        within.contains(r)
            && !self.labels.iter().any(|l| l.rect.grow(1.0).overlaps(r))
            && !self.marks.iter().any(|m| m.overlaps(r))
    }
}

/// How a line is stroked.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Dash {
    Solid,
    Dashed,
    Dotted,
}

/// Point marker shapes, so series differ by more than colour.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Marker {
    Circle,
    Square,
    Triangle,
    Diamond,
    TriangleDown,
}

impl Marker {
    pub const ALL: [Marker; 5] = [
        Self::Circle,
        Self::Square,
        Self::Triangle,
        Self::Diamond,
        Self::TriangleDown,
    ];
}

/// A drawing area in pixels that records every label it draws.
pub struct Canvas<'a, DB: DrawingBackend> {
    area: &'a DrawingArea<DB, Shift>,
    pub layout: Layout,
}

/// Plotters errors carry the backend's error type; the message is what matters here.
pub(crate) trait Drawn<T> {
    fn drawn(self) -> Result<T>;
}

impl<T, E: std::fmt::Display> Drawn<T> for std::result::Result<T, E> {
    fn drawn(self) -> Result<T> {
        self.map_err(|e| anyhow!("drawing failed: {e}"))
    }
}

fn pt((x, y): (f64, f64)) -> (i32, i32) {
    (x.round() as i32, y.round() as i32)
}

impl<'a, DB: DrawingBackend> Canvas<'a, DB> {
    /// A white canvas over `area`.
    pub fn new(area: &'a DrawingArea<DB, Shift>) -> Result<Self> {
        metrics()?;
        area.fill(&WHITE).drawn()?;
        let (w, h) = area.dim_in_pixel();
        Ok(Self {
            area,
            layout: Layout {
                width: f64::from(w),
                height: f64::from(h),
                ..Layout::default()
            },
        })
    }

    /// Draws `s` vertically centred at `at` and records its box.
    pub fn text(
        &mut self,
        s: &str,
        at: (f64, f64),
        h: HPos,
        size: f64,
        color: RGBColor,
    ) -> Result<Rect> {
        self.text_as(s, at, h, size, color, Kind::Text)
    }

    /// Draws `s` like [`Canvas::text`] on a white box, so that grid and lines drawn before it
    /// stop short of its letters.
    pub fn label(
        &mut self,
        s: &str,
        at: (f64, f64),
        h: HPos,
        size: f64,
        color: RGBColor,
    ) -> Result<Rect> {
        self.fill(text_box(s, at, h, size), WHITE)?;
        self.text(s, at, h, size, color)
    }

    pub fn text_as(
        &mut self,
        s: &str,
        at: (f64, f64),
        h: HPos,
        size: f64,
        color: RGBColor,
        kind: Kind,
    ) -> Result<Rect> {
        let rect = text_box(s, at, h, size);
        let style = (FONT, size)
            .into_font()
            .color(&color)
            .pos(Pos::new(h, VPos::Center));
        self.area
            .draw(&Text::new(s.to_string(), pt(at), style))
            .drawn()?;
        self.layout.labels.push(Label {
            text: s.to_string(),
            rect,
            kind,
        });
        Ok(rect)
    }

    /// Draws `s` at the first of `spots` where its box is inside `within` and off every other
    /// label and mark; `None` (nothing drawn) when no spot is free.
    pub fn place(
        &mut self,
        s: &str,
        size: f64,
        color: RGBColor,
        within: Rect,
        spots: impl IntoIterator<Item = ((f64, f64), HPos)>,
    ) -> Result<Option<Rect>> {
        for (at, h) in spots {
            if self.layout.free(&text_box(s, at, h, size), &within) {
                return self.label(s, at, h, size, color).map(Some);
            }
        }
        Ok(None)
    }

    /// A box labels must keep off (a point, a marker).
    pub fn mark(&mut self, r: Rect) {
        self.layout.marks.push(r);
    }

    pub fn line(
        &mut self,
        pts: &[(f64, f64)],
        color: RGBColor,
        width: u32,
        dash: Dash,
    ) -> Result<()> {
        let style = color.stroke_width(width);
        let (on, off) = match dash {
            Dash::Solid => {
                let path: Vec<(i32, i32)> = pts.iter().copied().map(pt).collect();
                return self.area.draw(&PathElement::new(path, style)).drawn();
            }
            Dash::Dashed => (8.0, 5.0),
            Dash::Dotted => (2.0, 4.0),
        };
        for w in pts.windows(2) {
            let ((x0, y0), (x1, y1)) = (w[0], w[1]);
            let len = (x1 - x0).hypot(y1 - y0);
            let mut t = 0.0;
            while t < len {
                let t1 = (t + on).min(len);
                let at = |t: f64| (x0 + (x1 - x0) * t / len, y0 + (y1 - y0) * t / len);
                self.area
                    .draw(&PathElement::new(vec![pt(at(t)), pt(at(t1))], style))
                    .drawn()?;
                t += on + off;
            }
        }
        Ok(())
    }

    pub fn fill(&mut self, r: Rect, color: RGBColor) -> Result<()> {
        self.area
            .draw(&Rectangle::new(
                [pt((r.x0, r.y0)), pt((r.x1, r.y1))],
                color.filled(),
            ))
            .drawn()
    }

    pub fn marker(
        &mut self,
        m: Marker,
        (x, y): (f64, f64),
        r: f64,
        color: RGBColor,
        filled: bool,
    ) -> Result<()> {
        let style = if filled {
            color.filled()
        } else {
            color.stroke_width(2)
        };
        let poly = |pts: &[(f64, f64)]| -> Vec<(i32, i32)> {
            pts.iter()
                .map(|(dx, dy)| pt((x + dx * r, y + dy * r)))
                .collect()
        };
        let shape = match m {
            Marker::Circle => {
                return self
                    .area
                    .draw(&Circle::new(pt((x, y)), r.round() as i32, style))
                    .drawn();
            }
            Marker::Square => poly(&[(-0.85, -0.85), (0.85, -0.85), (0.85, 0.85), (-0.85, 0.85)]),
            Marker::Triangle => poly(&[(0.0, -1.15), (1.05, 0.75), (-1.05, 0.75)]),
            Marker::TriangleDown => poly(&[(0.0, 1.15), (1.05, -0.75), (-1.05, -0.75)]),
            Marker::Diamond => poly(&[(0.0, -1.2), (1.2, 0.0), (0.0, 1.2), (-1.2, 0.0)]),
        };
        if filled {
            self.area.draw(&Polygon::new(shape, style)).drawn()
        } else {
            let mut closed = shape.clone();
            closed.push(shape[0]);
            self.area.draw(&PathElement::new(closed, style)).drawn()
        }
    }

    /// The footer line: where the figures came from.
    pub fn footer(&mut self, text: &str) -> Result<()> {
        let y = self.layout.height - MARGIN / 2.0 - 6.0;
        self.text(text, (MARGIN, y), HPos::Left, 12.0, GREY)?;
        Ok(())
    }
}

/// Spots around a point for its label, nearest first: right, left, above, below, then
/// further out (the caller draws a leader line to those).
pub fn spots_around((x, y): (f64, f64), r: f64) -> Vec<((f64, f64), HPos)> {
    let mut v: Vec<(f64, (f64, f64), HPos)> = Vec::new();
    for dx in [r + 4.0, r + 28.0, r + 56.0, r + 96.0, r + 150.0] {
        for k in -8i32..=8 {
            let dy = f64::from(k) * 9.0;
            let d = dx.hypot(dy);
            v.push((d, (x + dx, y + dy), HPos::Left));
            v.push((d + 0.5, (x - dx, y + dy), HPos::Right));
        }
    }
    for dy in [r + 10.0, r + 28.0] {
        v.push((dy + 0.2, (x, y - dy), HPos::Center));
        v.push((dy + 0.3, (x, y + dy), HPos::Center));
    }
    v.sort_by(|a, b| a.0.total_cmp(&b.0));
    v.into_iter().map(|(_, at, h)| (at, h)).collect()
}
