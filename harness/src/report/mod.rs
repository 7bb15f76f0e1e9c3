//! Everything generated from a run's results: the report model (every derived figure,
//! computed once), the Markdown/CSV tables, the terminal summary and the charts, all rendered
//! from that model. Nothing here reruns a kernel, so `harness report` can rebuild it all
//! later from the JSON alone.

pub mod charts;
pub mod html;
pub mod model;
pub mod network;
pub mod roofline;
pub mod table;

use crate::results::RunResults;
use anyhow::Result;
use kernel::Workload;
use std::path::{Path, PathBuf};

pub use model::Report;

/// The compact tables printed at the end of a run, then the rows that failed or could not run.
/// Then each network's time by category and Amdahl table.
pub fn terminal(run: &RunResults) -> String {
    let nets: String = run
        .networks
        .iter()
        .map(|n| format!("\n{}", network::markdown(n)))
        .collect();
    let unfinished = match &run.unfinished {
        Some(why) => format!("An unfinished run: {why}.\n\n"),
        None => String::new(),
    };
    unfinished
        + &table::terminal(&Report::new(run))
        + &nets
        + &failures_text(run)
        + &all_passed(run)
}

/// The closing line of a run none of whose rows failed: how many passed their check.
fn all_passed(run: &RunResults) -> String {
    if !failures(run).is_empty() {
        return String::new();
    }
    let passed = (run.workloads.iter().flat_map(|w| &w.shapes))
        .flat_map(|s| &s.rows)
        .filter(|r| r.passed())
        .count();
    match passed {
        0 => String::new(),
        n => format!(
            "\n{} passed the check against the reference; none failed.\n",
            table::count(n, "row")
        ),
    }
}

/// The rows that failed or could not run, one per line under a count; empty when none.
pub fn failures_text(run: &RunResults) -> String {
    let failed = failures(run);
    if failed.is_empty() {
        return String::new();
    }
    let mut s = format!(
        "\n{} failed or could not run:\n",
        table::count(failed.len(), "row")
    );
    for f in failed {
        s.push_str(&format!("  {f}\n"));
    }
    s
}

/// One line per row that failed its check or could not run: `gemm 4096 gemm-x: why`.
pub fn failures(run: &RunResults) -> Vec<String> {
    Report::new(run)
        .failures()
        .map(|(w, shape, r)| {
            format!(
                "{w} {shape} {}: {}",
                r.id,
                r.reason.as_deref().unwrap_or("no reason recorded")
            )
        })
        .collect()
}

/// Writes each workload's Markdown and CSV tables, its charts and the HTML pages into `dir`
/// (rung pages from the explain cache only); returns the files written.
pub fn write_report(run: &RunResults, dir: &Path) -> Result<Vec<PathBuf>> {
    write_report_with(run, dir, html::Explain::Cached)
}

/// [`write_report`], with the rung pages' `harness explain` documents computed where not
/// cached when `explain` says so.
pub fn write_report_with(
    run: &RunResults,
    dir: &Path,
    explain: html::Explain,
) -> Result<Vec<PathBuf>> {
    let report = Report::new(run);
    let mut written = Vec::new();
    for w in &report.workloads {
        let name = w.workload.name();
        for (file, text) in [
            (format!("{name}.md"), table::markdown(&report, w)),
            (format!("{name}.csv"), table::csv(&report, w)),
        ] {
            let path = dir.join(file);
            crate::output::write_atomic(&path, text)?;
            written.push(path);
        }
    }
    for w in Workload::ALL.into_iter().filter(|w| w.is_network()) {
        let nets: Vec<_> = run.networks.iter().filter(|n| n.workload == w).collect();
        if nets.is_empty() {
            continue;
        }
        let text: String = nets.iter().map(|n| network::markdown(n) + "\n").collect();
        let path = dir.join(format!("{}-breakdown.md", w.name()));
        crate::output::write_atomic(&path, text)?;
        written.push(path);
    }
    written.extend(charts::write_all(&report, dir)?);
    written.extend(html::write(
        &report,
        dir,
        explain,
        &crate::runs::LabDir::locate(),
    )?);
    Ok(written)
}

#[cfg(test)]
pub(crate) mod tests;
