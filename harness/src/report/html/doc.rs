//! A rung's page: `harness explain`'s document as HTML (diffs coloured line by line, the SASS
//! instruction mix also as bars, the rung's beside its parent's), then the rung's rows in this
//! run, as the run's tables show them.

use super::explain_cache::{CachedBlock, RungDoc};
use super::{AT_PAGE, Meta, Nav, Table, markdown, slug};
use crate::report::model::Report;
use crate::report::table;
use anyhow::Result;
use kernel::Kernel;
use serde::Serialize;

#[derive(Debug, Serialize)]
pub(crate) struct Line {
    pub class: &'static str,
    pub text: String,
}

#[derive(Debug, Serialize)]
pub(crate) struct Bar {
    pub label: String,
    pub value: String,
    pub pct: f64,
    pub first: bool,
}

#[derive(Debug, Serialize)]
pub(crate) struct BarGroup {
    pub name: String,
    pub bars: Vec<Bar>,
}

#[derive(Debug, Serialize)]
#[serde(tag = "kind", rename_all = "lowercase")]
pub(crate) enum BlockCtx {
    Text {
        html: String,
    },
    Code {
        lang: String,
        text: String,
    },
    Diff {
        lines: Vec<Line>,
    },
    Table {
        head: Vec<String>,
        rows: Vec<Vec<String>>,
    },
    Bars {
        groups: Vec<BarGroup>,
    },
}

#[derive(Debug, Serialize)]
pub(crate) struct SectionCtx {
    pub title: String,
    pub anchor: String,
    pub blocks: Vec<BlockCtx>,
}

/// The class of a unified diff's line.
fn diff_class(line: &str) -> &'static str {
    if line.starts_with("+++") || line.starts_with("---") {
        "file"
    } else if line.starts_with("@@") {
        "hunk"
    } else if line.starts_with('+') {
        "add"
    } else if line.starts_with('-') {
        "del"
    } else {
        "ctx"
    }
}

/// The numeric columns of a SASS table as bar groups: one group per instruction class, a bar
/// per row (the rung's entries, then its parent's), scaled to the longest in the group.
fn sass_bars(head: &[String], rows: &[Vec<String>]) -> Vec<BarGroup> {
    let first_kernel = rows.first().and_then(|r| r.first()).cloned();
    let several_entries = {
        let mut e: Vec<&String> = rows.iter().filter_map(|r| r.get(1)).collect();
        e.sort();
        e.dedup();
        e.len()
            > rows
                .iter()
                .filter_map(|r| r.first())
                .collect::<std::collections::BTreeSet<_>>()
                .len()
    };
    (3..head.len())
        .filter_map(|c| {
            let values: Vec<f64> = rows
                .iter()
                .map(|r| r.get(c).and_then(|v| v.parse::<f64>().ok()))
                .collect::<Option<Vec<f64>>>()?;
            let max = values.iter().copied().fold(0.0, f64::max);
            (max > 0.0).then(|| BarGroup {
                name: head[c].clone(),
                bars: rows
                    .iter()
                    .zip(&values)
                    .map(|(r, v)| {
                        let kernel = r.first().cloned().unwrap_or_default();
                        let label = if several_entries {
                            format!("{kernel} {}", r.get(1).map_or("", String::as_str))
                        } else {
                            kernel.clone()
                        };
                        Bar {
                            label,
                            value: r[c].clone(),
                            pct: 100.0 * v / max,
                            first: Some(&kernel) == first_kernel.as_ref(),
                        }
                    })
                    .collect(),
            })
        })
        .collect()
}

pub(crate) fn blocks(section: &str, blocks: &[CachedBlock]) -> Vec<BlockCtx> {
    let mut out = Vec::new();
    for b in blocks {
        match b {
            CachedBlock::Text(t) => out.push(BlockCtx::Text {
                html: markdown::to_html(t),
            }),
            CachedBlock::Code(lang, t) if lang == "diff" => out.push(BlockCtx::Diff {
                lines: t
                    .lines()
                    .map(|l| Line {
                        class: diff_class(l),
                        text: l.to_string(),
                    })
                    .collect(),
            }),
            CachedBlock::Code(lang, t) => out.push(BlockCtx::Code {
                lang: lang.clone(),
                text: t.clone(),
            }),
            CachedBlock::Table(head, rows) => {
                out.push(BlockCtx::Table {
                    head: head.clone(),
                    rows: rows.clone(),
                });
                if section.contains("SASS") {
                    let groups = sass_bars(head, rows);
                    if !groups.is_empty() {
                        out.push(BlockCtx::Bars { groups });
                    }
                }
            }
        }
    }
    out
}

/// The rows of the rung (and of its parent, beside it) in one shape of the run.
#[derive(Debug, Serialize)]
pub(crate) struct RunRows {
    pub shape: String,
    pub href: String,
    pub table: Table,
}

#[derive(Serialize)]
pub(crate) struct RungPage<'a> {
    nav: Nav,
    title: String,
    meta: &'a Meta,
    id: String,
    workload: String,
    ladder: String,
    parent: Option<(String, Option<String>)>,
    complete: bool,
    /// The command that prints the page's document.
    explain: String,
    sections: Vec<SectionCtx>,
    rows: Vec<RunRows>,
}

/// The page context of rung `id`.
pub(crate) fn rung_ctx<'a>(
    report: &Report,
    meta: &'a Meta,
    all: &[Box<dyn Kernel>],
    id: &str,
    d: &RungDoc,
    rung_pages: &[String],
) -> Result<RungPage<'a>> {
    let k = all.iter().find(|k| k.info().id == id);
    let record = report.run.user_kernels.iter().find(|r| r.id == id);
    // A rung's declared parent, or the rung a user's kernel is set beside.
    let declared = k
        .and_then(|k| k.lineage())
        .and_then(|l| l.parent)
        .or_else(|| record.and_then(|r| r.against()));
    let parent = declared.map(|p| {
        let href = rung_pages
            .iter()
            .any(|x| x == p)
            .then(|| super::rung_page(p));
        (p.to_string(), href)
    });
    let cols = table::columns(report, false);
    let mut rows = Vec::new();
    let mut workload = None;
    for w in &report.workloads {
        for s in &w.shapes {
            let Some(mine) = s.rows.iter().find(|r| r.row.id == id) else {
                continue;
            };
            workload = Some(w.workload);
            let mut shown = vec![mine];
            if let Some(p) = mine.row.parent.as_deref()
                && let Some(pr) = s.rows.iter().find(|r| r.row.id == p)
            {
                shown.push(pr);
            }
            rows.push(RunRows {
                shape: s.label.clone(),
                href: format!(
                    "{}#row-{}",
                    super::shape_page(w.workload, &s.label),
                    slug(id)
                ),
                table: super::rows_table(
                    shown.into_iter(),
                    &table::compact_columns_for(cols.clone(), w),
                    AT_PAGE,
                    rung_pages,
                ),
            });
        }
    }
    let workload = workload
        .or_else(|| k.map(|k| k.info().workload))
        .unwrap_or(kernel::Workload::Gemm);
    Ok(RungPage {
        nav: AT_PAGE,
        title: id.to_string(),
        meta,
        id: id.to_string(),
        workload: workload.name().to_string(),
        ladder: super::ladder_page(workload),
        parent,
        complete: d.complete,
        explain: record.map_or_else(|| format!("harness explain {id}"), |r| r.explain_command()),
        sections: d
            .doc
            .sections
            .iter()
            .map(|(t, b)| SectionCtx {
                title: t.clone(),
                anchor: slug(&t.to_lowercase()),
                blocks: blocks(t, b),
            })
            .collect(),
        rows,
    })
}
