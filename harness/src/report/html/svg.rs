//! The lab's charts (plotters, SVG backend) inline in a page, and the roofline's points made
//! to name themselves: an invisible, focusable circle over each with an SVG `<title>` (the
//! browser's own tooltip, no script needed) and the same words in `data-tip` for the script's
//! faster tooltip.

use super::Figure;
use crate::report::charts::{self, Chart, ablation, access, intensity, roofline, sweep};
use crate::report::model::{Report, ShapeReport, WorkloadReport};
use crate::report::table::throughput;
use anyhow::Result;

/// `text` with `&`, `<`, `>` and `"` escaped for XML.
pub(crate) fn esc(text: &str) -> String {
    text.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

/// Plotters' SVG with what the page says once instead of on every element: the font family
/// (the style sheet names the one the charts measure their labels with), `opacity="1"`,
/// font sizes to 0.01 px and the line breaks around each text; the picture is the same.
pub(crate) fn compact(svg: &str) -> String {
    let mut out = String::with_capacity(svg.len());
    let mut rest = svg;
    while let Some(i) = rest.find(" font-family=\"") {
        out.push_str(&rest[..i]);
        rest = &rest[i + " font-family=\"".len()..];
        rest = rest.find('"').map_or("", |j| &rest[j + 1..]);
    }
    out.push_str(rest);
    let mut sized = String::with_capacity(out.len());
    let mut rest = out.as_str();
    while let Some(i) = rest.find(" font-size=\"") {
        let start = i + " font-size=\"".len();
        sized.push_str(&rest[..start]);
        rest = &rest[start..];
        let end = rest.find('"').unwrap_or(rest.len());
        match rest[..end].parse::<f64>() {
            Ok(v) => sized.push_str(&format!("{}", (v * 100.0).round() / 100.0)),
            Err(_) => sized.push_str(&rest[..end]),
        }
        rest = &rest[end..];
    }
    sized.push_str(rest);
    sized
        .replace(" opacity=\"1\"", "")
        .replace(">\n</text>", "></text>")
        .replace("\n</text>", "</text>")
        .replace("\">\n", "\">")
}

/// The chart's SVG, ready to sit in a page: without an XML declaration, scaling to its box.
pub(crate) fn inline(chart: &impl Chart, label: &str) -> Result<String> {
    let (text, _) = charts::svg(chart)?;
    let start = text.find("<svg").unwrap_or(0);
    let (w, h) = chart.size();
    let mut svg = compact(&text[start..]);
    if !svg[..svg.find('>').unwrap_or(0)].contains("viewBox") {
        svg = svg.replacen("<svg", &format!("<svg viewBox=\"0 0 {w} {h}\""), 1);
    }
    Ok(svg.replacen(
        "<svg",
        &format!("<svg role=\"img\" aria-label=\"{}\"", esc(label)),
        1,
    ))
}

/// The ablation bars of a timed run, or the intensity bars of a simulator run.
pub(crate) fn ablation(report: &Report, s: &ShapeReport) -> Result<Option<Figure>> {
    let w = s.shape.workload().name();
    if let Some(c) = ablation::chart(report, s) {
        let title = format!("{w} {}: throughput per rung", s.label);
        return Ok(Some(Figure {
            svg: inline(&c, &title)?,
            title,
        }));
    }
    if let Some(c) = intensity::chart(report, s) {
        let title = format!("{w} {}: FLOP per byte of traffic per rung", s.label);
        return Ok(Some(Figure {
            svg: inline(&c, &title)?,
            title,
        }));
    }
    Ok(None)
}

/// The simulator's L1 wavefronts per rung, over the fewest possible.
pub(crate) fn access(report: &Report, s: &ShapeReport) -> Result<Option<Figure>> {
    let Some(c) = access::chart(report, s) else {
        return Ok(None);
    };
    let title = format!(
        "{} {}: L1 wavefronts per rung over the fewest possible",
        s.shape.workload().name(),
        s.label
    );
    Ok(Some(Figure {
        svg: inline(&c, &title)?,
        title,
    }))
}

/// The words of one roofline point: row, throughput, intensity and share of its roof.
fn point_text(key: &str, r: &crate::report::model::RowReport) -> String {
    let mut s = format!("{key} {}", r.row.id);
    if let Some(t) = r.timed {
        s.push_str(&format!(": {}", throughput(t.gflops)));
    }
    s.push_str(&format!(" at {:.3} FLOP/B", r.intensity()));
    if let Some(x) = &r.roof {
        s.push_str(&format!(
            ", {:.0}% of the {} roof ({} here)",
            x.pct,
            x.roof.name(),
            throughput(x.bound_gflops)
        ));
    }
    s
}

/// The roofline of a timed shape, each point named.
pub(crate) fn roofline(report: &Report, s: &ShapeReport) -> Result<Option<Figure>> {
    let Some(c) = roofline::Roofline::new(report, s) else {
        return Ok(None);
    };
    let title = format!("{} {}: roofline", s.shape.workload().name(), s.label);
    let svg = inline(&c, &title)?;
    let mut hits = String::from("<g class=\"hits\">");
    for (r, key, (x, y)) in c.points() {
        let text = esc(&point_text(key, r));
        hits.push_str(&format!(
            "<circle class=\"pt\" cx=\"{x:.1}\" cy=\"{y:.1}\" r=\"9\" tabindex=\"0\" \
             data-tip=\"{text}\"><title>{text}</title></circle>"
        ));
    }
    hits.push_str("</g></svg>");
    let end = svg.rfind("</svg>").unwrap_or(svg.len());
    Ok(Some(Figure {
        svg: format!("{}{hits}", &svg[..end]),
        title,
    }))
}

/// The size sweeps of a workload.
pub(crate) fn sweeps(report: &Report, w: &WorkloadReport) -> Result<Vec<Figure>> {
    sweep::charts(report, w)
        .iter()
        .map(|c| {
            let title = format!(
                "{} sweep{}: throughput against size",
                w.workload.name(),
                c.suffix
            );
            Ok(Figure {
                svg: inline(c, &title)?,
                title,
            })
        })
        .collect()
}

/// A network shape's stacked time per category and, for the CNN, its batch sweep.
pub(crate) fn network(report: &Report, n: &crate::results::NetworkResults) -> Result<Vec<Figure>> {
    use crate::report::charts::network::{BatchChart, Stacked};
    let footer = charts::footer(&report.run);
    let mut out = Vec::new();
    if let Some(c) = Stacked::new(n, footer.clone()) {
        let title = format!("{} {}: time by category", n.workload, n.label);
        out.push(Figure {
            svg: inline(&c, &title)?,
            title,
        });
    }
    if let Some(c) = n
        .batch_sweep
        .as_ref()
        .and_then(|s| BatchChart::new(n, s, footer))
    {
        let title = format!("{}: time per image against the batch size", n.workload);
        out.push(Figure {
            svg: inline(&c, &title)?,
            title,
        });
    }
    Ok(out)
}
