//! Value axes: values to pixels on a linear or log scale, ticks at round values, and the
//! grid, tick labels and titles of a plot, placed so that no two tick labels collide.

use super::canvas::{BLACK_TEXT, Canvas, Dash, GREY, GRID, Kind, MARGIN, Rect, text_box};
use anyhow::Result;
use plotters::prelude::*;
use plotters::style::text_anchor::HPos;

/// A value axis: maps values to pixels, linearly or on a log scale.
#[derive(Debug, Clone, PartialEq)]
pub struct Axis {
    pub lo: f64,
    pub hi: f64,
    pub log: bool,
    /// Pixels of `lo` and `hi` (for a vertical axis `from` is the bottom).
    pub from: f64,
    pub to: f64,
    /// Tick values, when the chart knows better than 1-2-5 (the sizes of a sweep).
    pub ticks: Option<Vec<f64>>,
}

impl Axis {
    pub fn new(lo: f64, hi: f64, log: bool, from: f64, to: f64) -> Self {
        Self {
            lo,
            hi,
            log,
            from,
            to,
            ticks: None,
        }
    }

    fn t(&self, v: f64) -> f64 {
        if self.log { v.max(1e-300).log10() } else { v }
    }

    pub fn px(&self, v: f64) -> f64 {
        let (a, b) = (self.t(self.lo), self.t(self.hi));
        self.from + (self.t(v) - a) / (b - a) * (self.to - self.from)
    }

    /// Tick values: the chart's own, else 1-2-5 steps (log) or round steps (linear).
    pub fn tick_values(&self) -> Vec<f64> {
        if let Some(t) = &self.ticks {
            return t.clone();
        }
        let inside = |v: f64| v >= self.lo * (1.0 - 1e-9) && v <= self.hi * (1.0 + 1e-9);
        if self.log {
            // Through `t`, which takes a zero (or NaN) bound as 1e-300, and with an infinite top
            // as f64::MAX: at most about 600 decades, where log10(0) would be 2^31 of them.
            let (a, b) = (
                self.t(self.lo).floor() as i32,
                self.t(self.hi.min(f64::MAX)).ceil() as i32,
            );
            let every = if b - a <= 9 { 1 } else { (b - a + 7) / 8 };
            // The sparsest steps that give five ticks, else the densest if that gives three.
            let sets: [&[f64]; 3] = [&[1.0], &[1.0, 2.0, 5.0], &[1.0, 1.5, 2.0, 3.0, 5.0, 7.0]];
            let mut v = Vec::new();
            for set in sets {
                v = (a..=b)
                    .filter(|d| (d - a) % every == 0)
                    .flat_map(|d| set.iter().map(move |m| m * 10f64.powi(d)))
                    .filter(|v| inside(*v))
                    .collect();
                if v.len() >= 5 {
                    return v;
                }
            }
            if v.len() >= 3 {
                return v;
            }
        }
        let raw = (self.hi - self.lo) / 6.0;
        if !(raw.is_finite() && raw > 0.0) {
            return Vec::new();
        }
        let mag = 10f64.powf(raw.log10().floor());
        let step = [1.0, 2.0, 5.0, 10.0]
            .iter()
            .map(|m| m * mag)
            .find(|s| *s >= raw)
            .unwrap_or(raw);
        let first = (self.lo / step).ceil() as i64;
        (first..)
            .map(|i| i as f64 * step)
            .take_while(|v| *v <= self.hi * (1.0 + 1e-9))
            .take(20)
            .filter(|v| inside(*v))
            .collect()
    }
}

/// Draws the x axis under `plot`: grid lines, tick labels (thinned until none collide) and the
/// axis title; returns the bottom of what it drew.
pub fn x_axis<DB: DrawingBackend>(
    c: &mut Canvas<'_, DB>,
    plot: Rect,
    axis: &Axis,
    fmt: &dyn Fn(f64) -> String,
    title: &str,
) -> Result<f64> {
    let y = plot.y1 + 13.0;
    let mut kept: Vec<(f64, String, Rect)> = Vec::new();
    for v in axis.tick_values() {
        let (x, s) = (axis.px(v), fmt(v));
        let r = text_box(&s, (x, y), HPos::Center, 13.0);
        let clear = kept.last().is_none_or(|(_, _, last)| r.x0 > last.x1 + 10.0);
        if clear && r.x0 >= 0.0 && r.x1 <= c.layout.width && !s.is_empty() {
            kept.push((x, s, r));
        }
    }
    for (x, s, _) in &kept {
        c.line(&[(*x, plot.y0), (*x, plot.y1)], GRID, 1, Dash::Solid)?;
        c.text_as(s, (*x, y), HPos::Center, 13.0, BLACK_TEXT, Kind::XTick)?;
    }
    c.line(
        &[(plot.x0, plot.y1), (plot.x1, plot.y1)],
        GREY,
        1,
        Dash::Solid,
    )?;
    let r = c.text(
        title,
        ((plot.x0 + plot.x1) / 2.0, y + 22.0),
        HPos::Center,
        14.0,
        BLACK_TEXT,
    )?;
    Ok(r.y1)
}

/// Draws the y axis left of `plot`: grid lines, tick labels and the title above the axis.
pub fn y_axis<DB: DrawingBackend>(
    c: &mut Canvas<'_, DB>,
    plot: Rect,
    axis: &Axis,
    fmt: &dyn Fn(f64) -> String,
    title: &str,
) -> Result<()> {
    let mut last: Option<Rect> = None;
    for v in axis.tick_values() {
        let (y, s) = (axis.px(v), fmt(v));
        let r = text_box(&s, (plot.x0 - 7.0, y), HPos::Right, 13.0);
        if s.is_empty() || last.is_some_and(|l| r.y1 > l.y0 - 4.0) {
            continue;
        }
        c.line(&[(plot.x0, y), (plot.x1, y)], GRID, 1, Dash::Solid)?;
        c.text_as(
            &s,
            (plot.x0 - 7.0, y),
            HPos::Right,
            13.0,
            BLACK_TEXT,
            Kind::YTick,
        )?;
        last = Some(r);
    }
    c.line(
        &[(plot.x0, plot.y0), (plot.x0, plot.y1)],
        GREY,
        1,
        Dash::Solid,
    )?;
    c.text(
        title,
        (MARGIN, plot.y0 - 16.0),
        HPos::Left,
        14.0,
        BLACK_TEXT,
    )?;
    Ok(())
}

/// Axis numbers without noise: 0.001, 0.5, 12, 3.4k, 1.2M.
pub fn fmt_num(v: f64) -> String {
    let a = v.abs();
    if a >= 1e6 {
        format!("{}M", trim(v / 1e6))
    } else if a >= 1e3 {
        format!("{}k", trim(v / 1e3))
    } else {
        trim(v)
    }
}

fn trim(v: f64) -> String {
    let s = if v.abs() >= 100.0 || v == v.round() {
        format!("{v:.0}")
    } else if v.abs() >= 1.0 {
        format!("{v:.1}")
    } else if v.abs() >= 0.01 {
        format!("{v:.3}")
    } else {
        format!("{v:.1e}")
    };
    if s.contains('.') && !s.contains('e') {
        s.trim_end_matches('0').trim_end_matches('.').to_string()
    } else {
        s
    }
}

/// A figure with three significant digits: 0.0123, 1.23, 12.3, 123, 1234.
pub fn sig3(v: f64) -> String {
    let a = v.abs();
    if a >= 100.0 || a == 0.0 {
        format!("{v:.0}")
    } else if a >= 10.0 {
        format!("{v:.1}")
    } else if a >= 1.0 {
        format!("{v:.2}")
    } else {
        let decimals = (2 - a.log10().floor() as i32).clamp(3, 8) as usize;
        format!("{v:.decimals$}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn log_ticks_take_round_values_and_end_on_any_range() {
        let t = Axis::new(3.0, 900.0, true, 0.0, 100.0).tick_values();
        assert_eq!(t, [5.0, 10.0, 20.0, 50.0, 100.0, 200.0, 500.0]);
        // A zero, infinite or NaN bound (a row of zero FLOP, a corrupt results file) gives a
        // few ticks at once, not a loop over 2^31 decades.
        for (lo, hi) in [
            (0.0, 1e3),
            (1.0, f64::INFINITY),
            (0.0, 1e308),
            (f64::NAN, 10.0),
        ] {
            let t = Axis::new(lo, hi, true, 0.0, 100.0).tick_values();
            assert!(t.len() <= 100, "{lo}..{hi}: {} ticks", t.len());
        }
    }
}
