//! Charts with plotters, each written as SVG and PNG: the ablation bars of a workload's
//! largest shape, the roofline, and the size sweep. Every chart has a title, axes with units,
//! a legend in its own column (never over the data) and the device and date in a corner.

use super::legacy::{Derived, ceilings, derive_with, headline};
use super::roofline;
use super::roofline::{Ceilings, Source};
use super::table::throughput;
use crate::results::{Row, RunResults, ShapeResults, Status, WorkloadResults};
use anyhow::{Result, anyhow, bail};
use kernel::{Role, Workload};
use plotters::coord::Shift;
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

pub const WIDTH: u32 = 1280;
pub const HEIGHT: u32 = 760;
const LEGEND_WIDTH: u32 = 330;
pub(crate) const FONT_NAME: &str = "sans-serif";
const FONT: &str = FONT_NAME;

/// Tableau 10: distinct, print-safe colors.
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
const GREY: RGBColor = RGBColor(110, 110, 110);

/// PNG text needs a font and the build has no fontconfig: DejaVu Sans is embedded
/// (harness/assets, with its license).
pub fn ensure_font() -> Result<()> {
    static DONE: OnceLock<bool> = OnceLock::new();
    let ok = *DONE.get_or_init(|| {
        plotters::style::register_font(
            FONT,
            FontStyle::Normal,
            include_bytes!("../../assets/DejaVuSans.ttf"),
        )
        .is_ok()
    });
    if ok {
        Ok(())
    } else {
        bail!("the embedded chart font could not be loaded")
    }
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

/// A chart that can draw itself on any backend.
pub(crate) trait Chart {
    fn draw<DB: DrawingBackend>(&self, root: &DrawingArea<DB, Shift>) -> Result<()>;
}

/// Writes `<dir>/<stem>.svg` and `.png`.
pub(crate) fn save(chart: &impl Chart, dir: &Path, stem: &str) -> Result<Vec<PathBuf>> {
    ensure_font()?;
    let svg = dir.join(format!("{stem}.svg"));
    let png = dir.join(format!("{stem}.png"));
    let mut text = String::new();
    {
        let root = SVGBackend::with_string(&mut text, (WIDTH, HEIGHT)).into_drawing_area();
        chart.draw(&root)?;
        root.present().drawn()?;
    }
    crate::output::write_atomic(&svg, text)?;
    crate::output::replace_with(&png, |tmp| {
        let root = BitMapBackend::new(tmp, (WIDTH, HEIGHT)).into_drawing_area();
        chart.draw(&root)?;
        root.present().drawn()
    })?;
    Ok(vec![svg, png])
}

/// How a legend entry is drawn.
#[derive(Clone, Copy)]
pub(crate) enum Mark {
    Bar,
    Line,
    Dashed,
    Dot,
}

pub(crate) struct Entry {
    pub label: String,
    pub color: RGBColor,
    pub mark: Mark,
}

/// Title, subtitle, footer and legend column around the plot; returns the plot's area.
pub(crate) fn frame<DB: DrawingBackend>(
    root: &DrawingArea<DB, Shift>,
    title: &str,
    subtitle: &str,
    footer: &str,
    legend: &[Entry],
) -> Result<DrawingArea<DB, Shift>> {
    root.fill(&WHITE).drawn()?;
    let (head, rest) = root.split_vertically(70);
    let (body, foot) = rest.split_vertically(HEIGHT - 70 - 30);
    head.draw(&Text::new(
        title,
        (20, 12),
        (FONT, 26).into_font().color(&BLACK),
    ))
    .drawn()?;
    head.draw(&Text::new(
        subtitle,
        (20, 44),
        (FONT, 16).into_font().color(&GREY),
    ))
    .drawn()?;
    foot.draw(&Text::new(
        footer,
        (20, 6),
        (FONT, 14).into_font().color(&GREY),
    ))
    .drawn()?;
    let (plot, side) = body.split_horizontally(WIDTH - LEGEND_WIDTH);
    let mut y = 30;
    for e in legend {
        let c = e.color;
        match e.mark {
            Mark::Bar => side
                .draw(&Rectangle::new([(10, y - 7), (34, y + 7)], c.filled()))
                .drawn()?,
            Mark::Line => side
                .draw(&PathElement::new([(8, y), (36, y)], c.stroke_width(3)))
                .drawn()?,
            Mark::Dashed => {
                for x in [8, 20, 32] {
                    side.draw(&PathElement::new([(x, y), (x + 6, y)], c.stroke_width(3)))
                        .drawn()?;
                }
            }
            Mark::Dot => side.draw(&Circle::new((22, y), 6, c.filled())).drawn()?,
        }
        let lines = wrap(&e.label, 34);
        for (i, line) in lines.iter().enumerate() {
            side.draw(&Text::new(
                line.clone(),
                (44, y - 8 + 18 * i as i32),
                (FONT, 15).into_font().color(&BLACK),
            ))
            .drawn()?;
        }
        y += 28 + 18 * (lines.len() as i32 - 1);
    }
    Ok(plot)
}

/// Splits `s` into lines of at most `width` characters at spaces.
fn wrap(s: &str, width: usize) -> Vec<String> {
    let mut lines = vec![String::new()];
    for word in s.split(' ') {
        let last = lines.last_mut().expect("never empty");
        if !last.is_empty() && last.chars().count() + 1 + word.chars().count() > width {
            lines.push(word.to_string());
        } else {
            if !last.is_empty() {
                last.push(' ');
            }
            last.push_str(word);
        }
    }
    lines
}

pub(crate) fn footer(run: &RunResults) -> String {
    format!(
        "{} · driver {} · {} · commit {} · harness",
        run.device.name,
        run.device.driver,
        run.date.get(..10).unwrap_or(&run.date),
        run.commit
    )
}

/// A kernel's name without its workload prefix, for crowded axes.
pub(crate) fn short_id(id: &str, w: &WorkloadResults) -> String {
    id.strip_prefix(&format!("{}-", w.workload.name()))
        .unwrap_or(id)
        .to_string()
}

/// Series colors: the palette, then its darker shades, so a ladder of up to 20 rows has no two
/// series of the same color.
pub(crate) fn color(i: usize) -> RGBColor {
    let RGBColor(r, g, b) = PALETTE[i % PALETTE.len()];
    match (i / PALETTE.len()) % 2 {
        0 => RGBColor(r, g, b),
        _ => RGBColor(r / 2, g / 2, b / 2),
    }
}

/// Writes every chart of `run` into `dir`.
pub fn write_all(run: &RunResults, dir: &Path) -> Result<Vec<PathBuf>> {
    std::fs::create_dir_all(dir)?;
    let ceil = ceilings(run);
    let mut out = Vec::new();
    for w in &run.workloads {
        let name = w.workload.name();
        let Some(shape) = headline(&w.shapes) else {
            continue;
        };
        let stem = format!("{name}-ablation-{}", shape.label);
        out.extend(save(&Ablation { run, w, shape }, dir, &stem)?);
        out.extend(save(
            &Roofline {
                run,
                w,
                shape,
                ceilings: ceil.clone(),
            },
            dir,
            &format!("{name}-roofline"),
        )?);
        for (suffix, group) in sweep_groups(w) {
            if group.shapes.len() > 1 {
                let stem = format!("{name}-sweep{suffix}");
                out.extend(save(&Sweep { run, w: &group }, dir, &stem)?);
            }
        }
    }
    Ok(out)
}

/// The shapes a sweep chart draws together, with the suffix of its file name. Attention
/// sweeps over S once per head dimension and masking (`-d64`, `-d128-causal`), as the
/// FlashAttention papers plot them; other workloads sweep all their shapes together.
pub(crate) fn sweep_groups(w: &WorkloadResults) -> Vec<(String, WorkloadResults)> {
    if w.workload != Workload::Attention {
        return vec![(String::new(), w.clone())];
    }
    let mut groups: Vec<(String, WorkloadResults)> = Vec::new();
    for s in &w.shapes {
        let kernel::Shape::Attention { d, causal, .. } = s.shape else {
            continue;
        };
        let suffix = format!("-d{d}{}", if causal { "-causal" } else { "" });
        match groups.iter_mut().find(|(k, _)| *k == suffix) {
            Some((_, g)) => g.shapes.push(s.clone()),
            None => groups.push((
                suffix,
                WorkloadResults {
                    workload: w.workload,
                    shapes: vec![s.clone()],
                },
            )),
        }
    }
    groups
}

/// Time and cumulative speedup per rung of one shape; references as horizontal lines.
pub struct Ablation<'a> {
    pub run: &'a RunResults,
    pub w: &'a WorkloadResults,
    pub shape: &'a ShapeResults,
}

impl Chart for Ablation<'_> {
    fn draw<DB: DrawingBackend>(&self, root: &DrawingArea<DB, Shift>) -> Result<()> {
        let derived = derive_with(self.shape, None);
        let rows: Vec<(&Row, &Derived)> = self
            .shape
            .rows
            .iter()
            .zip(&derived)
            .filter(|(r, _)| matches!(r.role, Role::Rung | Role::User))
            .filter(|(r, _)| r.status != Status::Unsupported)
            .collect();
        let refs: Vec<(&Row, f64)> = self
            .shape
            .rows
            .iter()
            .filter(|r| matches!(r.role, Role::Reference | Role::Peer) && r.passed())
            .filter_map(|r| r.median_ms().map(|t| (r, t)))
            .collect();
        let first = rows.iter().find_map(|(_, d)| d.vs_first.map(|_| ()));
        let first_ms = rows
            .iter()
            .find(|(r, _)| r.passed() && r.median_ms().is_some())
            .and_then(|(r, _)| r.median_ms());
        let mut legend = vec![Entry {
            label: "rung (passed)".into(),
            color: PALETTE[0],
            mark: Mark::Bar,
        }];
        if rows.iter().any(|(r, _)| !r.passed()) {
            legend.push(Entry {
                label: "failed or error: no speedup".into(),
                color: PALETTE[3],
                mark: Mark::Bar,
            });
        }
        for (i, (r, t)) in refs.iter().enumerate() {
            let vs = first_ms
                .map(|f| format!(", {:.1}x rung 1", f / t))
                .unwrap_or_default();
            legend.push(Entry {
                label: format!("{} ({}): {t:.3} ms{vs}", r.id, r.role.name()),
                color: color(i + 1),
                mark: Mark::Dashed,
            });
        }
        let title = format!(
            "{} ablation, {} on {}",
            self.w.workload.name().to_uppercase(),
            self.shape.label,
            self.run.device.name
        );
        let subtitle = format!(
            "Median time per run (top, log scale) and cumulative speedup over rung 1 (bottom); \
             {:.2} GFLOP per run",
            self.shape.flops / 1e9
        );
        let plot = frame(root, &title, &subtitle, &footer(self.run), &legend)?;
        if rows.is_empty() {
            plot.draw(&Text::new(
                "no rung ran on this shape",
                (40, 40),
                (FONT, 20).into_font(),
            ))
            .drawn()?;
            return Ok(());
        }
        let n = rows.len() as i32;
        let labels: Vec<String> = rows
            .iter()
            .map(|(r, _)| format!("{} {}", r.rung, short_id(&r.id, self.w)))
            .collect();
        let (top, bottom) = plot.split_vertically(plot.dim_in_pixel().1 / 2);

        // Time panel.
        let times: Vec<f64> = rows
            .iter()
            .filter_map(|(r, _)| r.median_ms())
            .chain(refs.iter().map(|(_, t)| *t))
            .filter(|t| *t > 0.0)
            .collect();
        let (lo, hi) = log_bounds(&times, 0.5, 4.0);
        let mut chart = ChartBuilder::on(&top)
            .margin(12)
            .x_label_area_size(30)
            .y_label_area_size(80)
            .build_cartesian_2d(-0.5..n as f64 - 0.5, (lo..hi).log_scale())
            .drawn()?;
        chart
            .configure_mesh()
            .disable_x_mesh()
            .x_labels(0)
            .y_desc("median time per run (ms)")
            .y_label_formatter(&log_label)
            .label_style((FONT, 14))
            .axis_desc_style((FONT, 15))
            .light_line_style(WHITE)
            .bold_line_style(BLACK.mix(0.1))
            .draw()
            .drawn()?;
        category_labels(&top, &chart, &labels)?;
        for (i, (_, t)) in refs.iter().enumerate() {
            hline(&mut chart, n, *t, color(i + 1))?;
        }
        for (i, (r, _)) in rows.iter().enumerate() {
            let Some(t) = r.median_ms() else { continue };
            let c = if r.passed() { PALETTE[0] } else { PALETTE[3] };
            bar(&mut chart, i as i32, lo, t, c)?;
            let text = if r.passed() {
                format!("{t:.3} ms")
            } else {
                format!("{t:.3} ms FAILED")
            };
            bar_label(&mut chart, i as i32, t * 1.08, text)?;
        }

        // Speedup panel: only passing rungs have a bar.
        let speedups: Vec<f64> = rows.iter().filter_map(|(_, d)| d.vs_first).collect();
        let ref_speedups: Vec<f64> = match first_ms {
            Some(f) => refs.iter().map(|(_, t)| f / t).collect(),
            None => Vec::new(),
        };
        let all: Vec<f64> = speedups.iter().chain(&ref_speedups).copied().collect();
        let (slo, shi) = log_bounds(&all, 0.5, 4.0);
        let (slo, shi) = (slo.min(0.5), shi.max(2.0));
        let mut chart = ChartBuilder::on(&bottom)
            .margin(12)
            .x_label_area_size(30)
            .y_label_area_size(80)
            .build_cartesian_2d(-0.5..n as f64 - 0.5, (slo..shi).log_scale())
            .drawn()?;
        chart
            .configure_mesh()
            .disable_x_mesh()
            .x_labels(0)
            .y_desc("speedup over rung 1 (x)")
            .y_label_formatter(&|v| {
                let l = log_label(v);
                if l.is_empty() { l } else { format!("{l}x") }
            })
            .label_style((FONT, 14))
            .axis_desc_style((FONT, 15))
            .light_line_style(WHITE)
            .bold_line_style(BLACK.mix(0.1))
            .draw()
            .drawn()?;
        category_labels(&bottom, &chart, &labels)?;
        if first.is_some() {
            for (i, s) in ref_speedups.iter().enumerate() {
                hline(&mut chart, n, *s, color(i + 1))?;
            }
        }
        for (i, (r, d)) in rows.iter().enumerate() {
            match d.vs_first {
                Some(s) => {
                    bar(&mut chart, i as i32, slo, s, PALETTE[0])?;
                    bar_label(&mut chart, i as i32, s * 1.08, format!("{s:.1}x"))?;
                }
                None => {
                    let why = if r.passed() {
                        "no time"
                    } else {
                        "failed: no speedup"
                    };
                    bar_label(&mut chart, i as i32, slo * 1.15, why.to_string())?;
                }
            }
        }
        Ok(())
    }
}

pub(crate) type BarChart<'a, DB> = ChartContext<
    'a,
    DB,
    Cartesian2d<
        plotters::coord::types::RangedCoordf64,
        plotters::coord::combinators::LogCoord<f64>,
    >,
>;

/// A bar for category `i` (x from -0.5 to n - 0.5) from `lo` up (or down) to `v`.
pub(crate) fn bar<DB: DrawingBackend>(
    chart: &mut BarChart<'_, DB>,
    i: i32,
    lo: f64,
    v: f64,
    c: RGBColor,
) -> Result<()> {
    let x = f64::from(i);
    chart
        .draw_series(std::iter::once(Rectangle::new(
            [(x - 0.36, lo), (x + 0.36, v)],
            c.filled(),
        )))
        .drawn()?;
    Ok(())
}

pub(crate) fn bar_label<DB: DrawingBackend>(
    chart: &mut BarChart<'_, DB>,
    i: i32,
    y: f64,
    text: String,
) -> Result<()> {
    let style = (FONT, 14)
        .into_font()
        .color(&BLACK)
        .pos(Pos::new(HPos::Center, VPos::Bottom));
    chart
        .draw_series(std::iter::once(Text::new(text, (f64::from(i), y), style)))
        .drawn()?;
    Ok(())
}

pub(crate) fn hline<DB: DrawingBackend>(
    chart: &mut BarChart<'_, DB>,
    n: i32,
    y: f64,
    c: RGBColor,
) -> Result<()> {
    chart
        .draw_series(DashedLineSeries::new(
            [(-0.5, y), (f64::from(n) - 0.5, y)],
            10,
            6,
            c.stroke_width(2),
        ))
        .drawn()?;
    Ok(())
}

/// Category names under the x axis at 0, 1, 2...: exactly under their bars or points,
/// shortened when there are too many to fit side by side.
pub(crate) fn category_labels<DB: DrawingBackend, Y: Ranged<ValueType = f64>>(
    area: &DrawingArea<DB, Shift>,
    chart: &ChartContext<'_, DB, Cartesian2d<plotters::coord::types::RangedCoordf64, Y>>,
    labels: &[String],
) -> Result<()> {
    let style = (FONT, 14)
        .into_font()
        .color(&BLACK)
        .pos(Pos::new(HPos::Center, VPos::Top));
    let (x0, _) = chart.backend_coord(&(0.0, 1.0));
    let (x1, _) = chart.backend_coord(&(1.0, 1.0));
    // About 8 pixels per character at 14 px.
    let room = if labels.len() > 1 {
        ((x1 - x0).max(0) / 8).max(4) as usize
    } else {
        usize::MAX
    };
    let (ox, oy) = area.get_base_pixel();
    let bottom =
        chart.plotting_area().get_base_pixel().1 + chart.plotting_area().dim_in_pixel().1 as i32;
    for (i, l) in labels.iter().enumerate() {
        let (x, _) = chart.backend_coord(&(i as f64, 1.0));
        let text = if l.chars().count() > room {
            let cut: String = l.chars().take(room.saturating_sub(1)).collect();
            format!("{cut}…")
        } else {
            l.clone()
        };
        area.draw(&Text::new(text, (x - ox, bottom - oy + 8), style.clone()))
            .drawn()?;
    }
    Ok(())
}

/// Log-axis labels at 1, 2 and 5 times powers of ten only, so minor ticks stay unlabelled.
pub(crate) fn log_label(v: &f64) -> String {
    if *v <= 0.0 {
        return String::new();
    }
    let m = v / 10f64.powf(v.log10().floor());
    if [1.0, 2.0, 5.0, 10.0]
        .iter()
        .any(|k| (m - k).abs() < 1e-6 * k)
    {
        fmt_num(*v)
    } else {
        String::new()
    }
}

/// Log-axis bounds around `v`, widened by the factors.
pub(crate) fn log_bounds(v: &[f64], below: f64, above: f64) -> (f64, f64) {
    let lo = v
        .iter()
        .copied()
        .filter(|x| *x > 0.0)
        .fold(f64::INFINITY, f64::min);
    let hi = v.iter().copied().fold(0.0, f64::max);
    if !lo.is_finite() || hi <= 0.0 {
        return (0.1, 10.0);
    }
    (lo * below, hi * above)
}

/// The unit a throughput axis reads best in, and the factor from GFLOP/s.
pub(crate) fn rate_unit(max_gflops: f64) -> (&'static str, f64) {
    if max_gflops >= 2e3 {
        ("TFLOP/s", 1e-3)
    } else {
        ("GFLOP/s", 1.0)
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

/// Axis numbers without noise: 0.001, 0.5, 12, 3.4k, 1.2M.
pub(crate) fn fmt_num(v: f64) -> String {
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
    } else {
        format!("{v:.3}")
    };
    if s.contains('.') {
        s.trim_end_matches('0').trim_end_matches('.').to_string()
    } else {
        s
    }
}

/// Arithmetic intensity against achieved FLOP/s, under the measured and datasheet roofs.
pub struct Roofline<'a> {
    pub run: &'a RunResults,
    pub w: &'a WorkloadResults,
    pub shape: &'a ShapeResults,
    /// The ceilings the tables use (measured when calibrated).
    pub ceilings: Option<Ceilings>,
}

impl Roofline<'_> {
    /// Measured and datasheet roofs to draw, the table's first.
    fn roofs(&self) -> Vec<Ceilings> {
        let mut v: Vec<Ceilings> = self.ceilings.iter().cloned().collect();
        if let Some(d) = roofline::datasheet(&self.run.device.name)
            && !v.iter().any(|c| c.source == Source::Datasheet)
        {
            v.push(d);
        }
        v
    }
}

fn roof_color(name: &str) -> RGBColor {
    match name {
        "FP32" => PALETTE[0],
        "TF32 tensor" => PALETTE[1],
        _ => PALETTE[3],
    }
}

impl Chart for Roofline<'_> {
    fn draw<DB: DrawingBackend>(&self, root: &DrawingArea<DB, Shift>) -> Result<()> {
        let roofs = self.roofs();
        let derived = derive_with(self.shape, None);
        let points: Vec<(&Row, f64, f64)> = self
            .shape
            .rows
            .iter()
            .zip(&derived)
            .filter_map(|(r, d)| d.gflops.map(|g| (r, d.intensity, g)))
            .collect();
        let mut legend = Vec::new();
        for c in &roofs {
            let mark = if c.source == Source::Measured {
                Mark::Line
            } else {
                Mark::Dashed
            };
            let tag = if c.source == Source::Measured {
                "measured"
            } else {
                "datasheet"
            };
            legend.push(Entry {
                label: format!("memory {} ({tag})", bandwidth(c.bandwidth_gbs)),
                color: RGBColor(40, 40, 40),
                mark,
            });
            for (name, g) in c.compute_roofs() {
                legend.push(Entry {
                    label: format!("{name} {} ({tag})", throughput(g)),
                    color: roof_color(name),
                    mark,
                });
            }
        }
        if roofs.is_empty() {
            legend.push(Entry {
                label: "no ceilings: run `harness calibrate`".into(),
                color: GREY,
                mark: Mark::Line,
            });
        }
        for (i, (r, _, g)) in points.iter().enumerate() {
            legend.push(Entry {
                label: format!("{} {}", r.id, throughput(*g)),
                color: color(i + 4),
                mark: Mark::Dot,
            });
        }
        let source = match roofs.first() {
            Some(c) if c.source == Source::Measured => {
                "roofs measured on this device (solid)".to_string()
            }
            Some(c) => format!("{} roofs only, not measured here", c.label),
            None => "no roofs".to_string(),
        };
        let title = format!(
            "{} roofline, {} on {}",
            self.w.workload.name().to_uppercase(),
            self.shape.label,
            self.run.device.name
        );
        let subtitle = format!(
            "Achieved throughput against FLOP per minimal DRAM byte (log-log); {source}{}",
            match roofs.get(1) {
                Some(d) => format!(", {} dashed", d.label),
                None => String::new(),
            }
        );
        let plot = frame(root, &title, &subtitle, &footer(self.run), &legend)?;

        let mut xs: Vec<f64> = points.iter().map(|p| p.1).collect();
        let mut ys: Vec<f64> = points.iter().map(|p| p.2).collect();
        for c in &roofs {
            for (_, g) in c.compute_roofs() {
                xs.push(g / c.bandwidth_gbs);
                ys.push(g);
            }
        }
        let (xlo, xhi) = log_bounds(&xs, 0.1, 8.0);
        let (ylo, yhi) = log_bounds(&ys, 0.2, 3.0);
        let (unit, scale) = rate_unit(yhi / 3.0);
        let mut chart = ChartBuilder::on(&plot)
            .margin(15)
            .x_label_area_size(50)
            .y_label_area_size(80)
            .build_cartesian_2d((xlo..xhi).log_scale(), (ylo..yhi).log_scale())
            .drawn()?;
        chart
            .configure_mesh()
            .x_desc("arithmetic intensity (FLOP per byte of minimal DRAM traffic)")
            .y_desc(format!("throughput ({unit})"))
            .x_label_formatter(&log_label)
            .y_label_formatter(&|v| log_label(&(v * scale)))
            .label_style((FONT, 14))
            .axis_desc_style((FONT, 15))
            .light_line_style(WHITE)
            .bold_line_style(BLACK.mix(0.08))
            .draw()
            .drawn()?;
        for c in &roofs {
            let solid = c.source == Source::Measured;
            let top = c.compute_roofs().iter().map(|r| r.1).fold(0.0, f64::max);
            let ridge_top = top / c.bandwidth_gbs;
            let mem = [(xlo, xlo * c.bandwidth_gbs), (ridge_top, top)];
            line(&mut chart, &mem, RGBColor(40, 40, 40), solid)?;
            for (name, g) in c.compute_roofs() {
                let ridge = g / c.bandwidth_gbs;
                line(&mut chart, &[(ridge, g), (xhi, g)], roof_color(name), solid)?;
                if solid || roofs.len() == 1 {
                    let style = (FONT, 13).into_font().color(&GREY);
                    chart
                        .draw_series(std::iter::once(
                            EmptyElement::at((ridge, g))
                                + Cross::new((0, 0), 5, BLACK.stroke_width(2))
                                + Text::new(
                                    format!("ridge {} FLOP/B", fmt_num(ridge)),
                                    (8, 10),
                                    style,
                                ),
                        ))
                        .drawn()?;
                }
            }
        }
        // Labels go right of their points, nudged apart vertically when they would collide.
        let pixel: Vec<(i32, i32)> = points
            .iter()
            .map(|(_, x, y)| chart.backend_coord(&(*x, *y)))
            .collect();
        let offsets = spread_labels(&pixel, 18, 220);
        for (i, ((r, x, y), dy)) in points.iter().zip(offsets).enumerate() {
            let c = color(i + 4);
            let style = (FONT, 14).into_font().color(&BLACK);
            chart
                .draw_series(std::iter::once(
                    EmptyElement::at((*x, *y))
                        + Circle::new((0, 0), 6, c.filled())
                        + Text::new(short_id(&r.id, self.w), (10, dy - 7), style),
                ))
                .drawn()?;
        }
        Ok(())
    }
}

/// Vertical offsets (pixels) for labels placed right of `points` so that labels within
/// `reach` pixels horizontally stay at least `gap` apart.
pub(crate) fn spread_labels(points: &[(i32, i32)], gap: i32, reach: i32) -> Vec<i32> {
    let mut order: Vec<usize> = (0..points.len()).collect();
    order.sort_by_key(|&i| points[i].1);
    let mut placed: Vec<(i32, i32)> = Vec::new();
    let mut offsets = vec![0; points.len()];
    for i in order {
        let (x, mut y) = points[i];
        for &(px, py) in &placed {
            if (px - x).abs() < reach && y < py + gap {
                y = py + gap;
            }
        }
        placed.push((x, y));
        offsets[i] = y - points[i].1;
    }
    offsets
}

type LogChart<'a, DB> = ChartContext<
    'a,
    DB,
    Cartesian2d<
        plotters::coord::combinators::LogCoord<f64>,
        plotters::coord::combinators::LogCoord<f64>,
    >,
>;

fn line<DB: DrawingBackend>(
    chart: &mut LogChart<'_, DB>,
    pts: &[(f64, f64)],
    c: RGBColor,
    solid: bool,
) -> Result<()> {
    if solid {
        chart
            .draw_series(LineSeries::new(pts.iter().copied(), c.stroke_width(3)))
            .drawn()?;
    } else {
        chart
            .draw_series(DashedLineSeries::new(
                pts.iter().copied(),
                10,
                7,
                c.mix(0.7).stroke_width(2),
            ))
            .drawn()?;
    }
    Ok(())
}

/// Throughput against size, one line per rung plus the references (the SGEMM worklog plot).
pub struct Sweep<'a> {
    pub run: &'a RunResults,
    pub w: &'a WorkloadResults,
}

impl Chart for Sweep<'_> {
    fn draw<DB: DrawingBackend>(&self, root: &DrawingArea<DB, Shift>) -> Result<()> {
        let mut shapes: Vec<&ShapeResults> = self.w.shapes.iter().collect();
        shapes.sort_by(|a, b| a.flops.total_cmp(&b.flops));
        // One series per kernel id, in ladder order, references last.
        let mut ids: Vec<(&str, Role, u32)> = Vec::new();
        for s in &shapes {
            for r in &s.rows {
                if !ids.iter().any(|(id, ..)| *id == r.id) {
                    ids.push((&r.id, r.role, r.rung));
                }
            }
        }
        ids.sort_by_key(|(_, role, rung)| (*role != Role::Rung, *rung));
        let derived: Vec<Vec<Derived>> = shapes.iter().map(|s| derive_with(s, None)).collect();
        let series: Vec<(&str, Role, Vec<Option<f64>>)> = ids
            .iter()
            .map(|(id, role, _)| {
                let ys = shapes
                    .iter()
                    .zip(&derived)
                    .map(|(s, d)| {
                        s.rows
                            .iter()
                            .position(|r| r.id == *id)
                            .and_then(|i| d[i].gflops)
                    })
                    .collect();
                (*id, *role, ys)
            })
            .filter(|(.., ys): &(&str, Role, Vec<Option<f64>>)| ys.iter().any(Option::is_some))
            .collect();
        let never: Vec<&str> = ids
            .iter()
            .map(|(id, ..)| *id)
            .filter(|id| !series.iter().any(|s| s.0 == *id))
            .collect();
        let mut legend: Vec<Entry> = series
            .iter()
            .enumerate()
            .map(|(i, (id, role, _))| Entry {
                label: if *role == Role::Rung {
                    id.to_string()
                } else {
                    format!("{id} ({})", role.name())
                },
                color: color(i),
                mark: if matches!(role, Role::Rung | Role::User) {
                    Mark::Line
                } else {
                    Mark::Dashed
                },
            })
            .collect();
        if !never.is_empty() {
            legend.push(Entry {
                label: format!("no passing run: {}", never.join(", ")),
                color: GREY,
                mark: Mark::Dot,
            });
        }
        let title = format!(
            "{} throughput by size on {}",
            self.w.workload.name().to_uppercase(),
            self.run.device.name
        );
        let plot = frame(
            root,
            &title,
            "Achieved throughput of every passing row at each size; gaps are failed or unsupported runs",
            &footer(self.run),
            &legend,
        )?;
        let n = shapes.len() as i32;
        let ymax = series
            .iter()
            .flat_map(|s| s.2.iter().flatten())
            .copied()
            .fold(0.0, f64::max);
        let labels: Vec<String> = shapes.iter().map(|s| s.label.clone()).collect();
        let (unit, scale) = rate_unit(ymax);
        let mut chart = ChartBuilder::on(&plot)
            .margin(15)
            .x_label_area_size(50)
            .y_label_area_size(80)
            .build_cartesian_2d(-0.3f64..f64::from(n - 1) + 0.3, 0.0..(ymax * 1.1).max(1e-9))
            .drawn()?;
        chart
            .configure_mesh()
            .x_desc("problem size")
            .y_desc(format!("throughput ({unit})"))
            .x_labels(0)
            .y_label_formatter(&|v| fmt_num(v * scale))
            .label_style((FONT, 14))
            .axis_desc_style((FONT, 15))
            .light_line_style(WHITE)
            .bold_line_style(BLACK.mix(0.08))
            .draw()
            .drawn()?;
        category_labels(&plot, &chart, &labels)?;
        for (i, (_, role, ys)) in series.iter().enumerate() {
            let c = color(i);
            // Break the line at missing points.
            let mut run: Vec<(f64, f64)> = Vec::new();
            let mut segments = Vec::new();
            for (x, y) in ys.iter().enumerate() {
                match y {
                    Some(y) => run.push((x as f64, *y)),
                    None => segments.push(std::mem::take(&mut run)),
                }
            }
            segments.push(run);
            for seg in segments.into_iter().filter(|s| !s.is_empty()) {
                if matches!(role, Role::Rung | Role::User) {
                    chart
                        .draw_series(LineSeries::new(seg.clone(), c.stroke_width(3)))
                        .drawn()?;
                } else {
                    chart
                        .draw_series(DashedLineSeries::new(seg.clone(), 10, 6, c.stroke_width(2)))
                        .drawn()?;
                }
                chart
                    .draw_series(seg.iter().map(|p| Circle::new(*p, 5, c.filled())))
                    .drawn()?;
            }
        }
        Ok(())
    }
}
