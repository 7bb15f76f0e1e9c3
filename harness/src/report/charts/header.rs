//! What sits around a plot: the title, the notes wrapped to the picture's width, and legend
//! entries with their swatches.

use super::canvas::{BLACK_TEXT, Canvas, Dash, GREY, LABEL, MARGIN, Marker, Rect, text_width};
use anyhow::{Result, bail};
use plotters::prelude::*;
use plotters::style::text_anchor::HPos;

/// Breaks `text` into lines no wider than `width` pixels, at spaces.
pub fn wrap(text: &str, size: f64, width: f64) -> Vec<String> {
    let mut lines: Vec<String> = Vec::new();
    let mut line = String::new();
    for word in text.split(' ') {
        let longer = if line.is_empty() {
            word.to_string()
        } else {
            format!("{line} {word}")
        };
        if !line.is_empty() && text_width(&longer, size) > width {
            lines.push(std::mem::replace(&mut line, word.to_string()));
        } else {
            line = longer;
        }
    }
    lines.push(line);
    lines
}

/// A legend entry: a swatch and its words.
#[derive(Debug, Clone)]
pub struct Entry {
    pub label: String,
    pub color: RGBColor,
    pub mark: Mark,
}

/// How a legend entry's swatch is drawn.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Mark {
    Bar,
    Line(Dash),
    Point(Marker, bool),
    /// A marker, filled or hollow, on a line: a series of a sweep.
    Series(Marker, bool, Dash),
    /// The p10-p90 whisker.
    Whisker,
}

/// Width of a legend swatch.
pub const SWATCH: f64 = 30.0;

/// Draws a legend swatch in the `SWATCH`-wide box left of its label, centred at y.
pub fn swatch<DB: DrawingBackend>(
    c: &mut Canvas<'_, DB>,
    e: &Entry,
    (x, y): (f64, f64),
) -> Result<()> {
    let mid = (x + SWATCH / 2.0, y);
    match e.mark {
        Mark::Bar => c.fill(
            Rect::new(x + 4.0, y - 6.0, x + SWATCH - 4.0, y + 6.0),
            e.color,
        ),
        Mark::Line(d) => c.line(&[(x, y), (x + SWATCH, y)], e.color, 2, d),
        Mark::Point(m, filled) => c.marker(m, mid, 5.0, e.color, filled),
        Mark::Series(m, filled, d) => {
            c.line(&[(x, y), (x + SWATCH, y)], e.color, 2, d)?;
            c.marker(m, mid, 5.0, e.color, filled)
        }
        Mark::Whisker => {
            c.line(
                &[(x + 3.0, y), (x + SWATCH - 3.0, y)],
                BLACK_TEXT,
                1,
                Dash::Solid,
            )?;
            for end in [x + 3.0, x + SWATCH - 3.0] {
                c.line(
                    &[(end, y - 5.0), (end, y + 5.0)],
                    BLACK_TEXT,
                    1,
                    Dash::Solid,
                )?;
            }
            Ok(())
        }
    }
}

/// Title, notes and a legend laid out in rows across the top of a chart.
#[derive(Debug, Clone, Default)]
pub struct Header {
    pub title: String,
    pub notes: Vec<String>,
    pub legend: Vec<Entry>,
}

const TITLE: f64 = 22.0;
const NOTE: f64 = 14.0;
const LINE: f64 = 19.0;

impl Header {
    fn note_lines(&self, width: f64) -> Vec<String> {
        self.notes
            .iter()
            .flat_map(|n| wrap(n, NOTE, width))
            .collect()
    }

    /// Legend entries in rows: (row, x offset) per entry.
    fn legend_spots(&self, width: f64) -> Vec<(usize, f64)> {
        let (mut row, mut x) = (0, 0.0);
        self.legend
            .iter()
            .map(|e| {
                let w = SWATCH + 6.0 + text_width(&e.label, LABEL);
                if x > 0.0 && x + w > width {
                    (row, x) = (row + 1, 0.0);
                }
                let spot = (row, x);
                x += w + 24.0;
                spot
            })
            .collect()
    }

    /// Height of the header for a picture `width` wide.
    pub fn height(&self, width: f64) -> f64 {
        let inner = width - 2.0 * MARGIN;
        let legend_rows = self
            .legend_spots(inner)
            .last()
            .map_or(0, |(row, _)| row + 1);
        MARGIN + 26.0 + LINE * self.note_lines(inner).len() as f64 + 24.0 * legend_rows as f64 + 8.0
    }

    /// Draws the header; returns its bottom.
    pub fn draw<DB: DrawingBackend>(&self, c: &mut Canvas<'_, DB>) -> Result<f64> {
        let inner = c.layout.width - 2.0 * MARGIN;
        c.text(
            &self.title,
            (MARGIN, MARGIN + 8.0),
            HPos::Left,
            TITLE,
            BLACK_TEXT,
        )?;
        let mut y = MARGIN + 26.0 + LINE / 2.0;
        for line in self.note_lines(inner) {
            c.text(&line, (MARGIN, y), HPos::Left, NOTE, GREY)?;
            y += LINE;
        }
        let spots = self.legend_spots(inner);
        let top = y - LINE / 2.0 + 12.0;
        for (e, (row, x)) in self.legend.iter().zip(spots) {
            let (x, y) = (MARGIN + x, top + 24.0 * row as f64);
            swatch(c, e, (x, y))?;
            c.text(
                &e.label,
                (x + SWATCH + 6.0, y),
                HPos::Left,
                LABEL,
                BLACK_TEXT,
            )?;
        }
        let bottom = self.height(c.layout.width);
        if bottom > c.layout.height {
            bail!("the chart header is taller than the chart");
        }
        Ok(bottom)
    }
}
