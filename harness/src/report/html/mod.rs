//! The run in a browser: `index.html` in every run folder and sibling pages in its `html/`
//! folder, rendered from the report model and from `harness explain`'s document, computing no
//! figure of their own.
//!
//! Several pages rather than one: a full run has some sixty rungs, each with a source diff and
//! SASS tables; one page per rung keeps every page light and makes "the page of rung X" a
//! file a link can name. The pages are:
//! - `index.html`: the run (device, driver, commit, date, ceilings), per workload each
//!   shape's ablation chart and compact table, the ladders and every rung;
//! - `html/shape-<workload>-<shape>.html`: the full table (sortable and filterable by stage,
//!   precision and status), the ablation chart and the roofline whose points name their row,
//!   throughput, intensity and share of roof in an SVG `<title>` (a tooltip on hover or focus);
//! - `html/rung-<id>.html`: `harness explain` of the rung (diff coloured by line, SASS mix as
//!   bars beside the parent's) and the rung's rows in this run; the same for each of the
//!   user's kernels the run recorded, loaded again from its file ([`user_pages`]);
//! - `html/ladder-<workload>.html`: the rungs in order, each linked to its section of its
//!   crate's walkthrough;
//! - `html/walkthrough-<crate>.html`: a stage crate's README, rendered once for every ladder
//!   with rungs in it;
//! - `html/lab.css`, `html/lab.js`: one style sheet and one small script (sorting, filtering,
//!   tooltips); every page reads fully without the script.
//!
//! Everything works from `file://`: no server, no network, charts inline as SVG.
//!
//! `harness explain` compiles with NVRTC and disassembles with nvdisasm, seconds per rung, so a
//! run does not wait for it: rung pages take each rung's document from a cache under the lab
//! folder ([`explain_cache`]), keyed by everything the document depends on, and where it is
//! missing show the parts that need no compiler (lineage and source diff) with a pointer to
//! `harness report RUN --html`, which computes the rest (in parallel) and fills the cache.

pub mod check;
pub mod compare;
pub mod doc;
pub mod explain_cache;
mod markdown;
mod svg;
#[cfg(test)]
mod tests;
pub mod user_pages;

use super::model::{Report, RowReport, ShapeReport, WorkloadReport};
use super::table::{self, Col};
use crate::registry;
use crate::runs::LabDir;
use anyhow::{Context, Result};
use kernel::{Kernel, Role, Stage, Workload};
use minijinja::Environment;
use serde::Serialize;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// The run page's file name, in the run folder.
pub const INDEX: &str = "index.html";
/// The folder of every other page, beside it.
pub const PAGES: &str = "html";

pub(crate) const CSS: &str = include_str!("lab.css");
pub(crate) const JS: &str = include_str!("lab.js");

/// How rung pages get `harness explain`'s document.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Explain {
    /// From the cache only; a rung not cached shows what needs no compiler.
    Cached,
    /// Computed where not cached (NVRTC and nvdisasm, in parallel), and cached.
    Compute,
}

/// The template environment: every template embedded in the binary.
pub(crate) fn env() -> Environment<'static> {
    let mut env = Environment::new();
    for (name, text) in [
        ("base.html", include_str!("templates/base.html")),
        ("macros.html", include_str!("templates/macros.html")),
        ("run.html", include_str!("templates/run.html")),
        ("shape.html", include_str!("templates/shape.html")),
        ("rung.html", include_str!("templates/rung.html")),
        ("ladder.html", include_str!("templates/ladder.html")),
        ("compare.html", include_str!("templates/compare.html")),
        (
            "walkthrough.html",
            include_str!("templates/walkthrough.html"),
        ),
    ] {
        env.add_template(name, text)
            .expect("the embedded templates parse");
    }
    // Inline Markdown (code spans, emphasis) of the model's notes, as one line of HTML.
    env.add_filter("md", |text: String| {
        let html = markdown::to_html(&text);
        let inner = html
            .trim()
            .strip_prefix("<p>")
            .and_then(|h| h.strip_suffix("</p>"))
            .unwrap_or(html.trim())
            .to_string();
        minijinja::Value::from_safe_string(inner)
    });
    env
}

/// Renders `template` with `ctx` and writes it to `path`.
pub(crate) fn render_to(
    env: &Environment<'_>,
    template: &str,
    ctx: impl Serialize,
    path: &Path,
) -> Result<PathBuf> {
    let html = env
        .get_template(template)?
        .render(ctx)
        .with_context(|| format!("cannot render {template}"))?;
    crate::output::write_atomic(path, html)?;
    Ok(path.to_path_buf())
}

/// Writes the style sheet and the script into `pages`.
pub(crate) fn write_assets(pages: &Path) -> Result<Vec<PathBuf>> {
    std::fs::create_dir_all(pages).with_context(|| format!("cannot create {}", pages.display()))?;
    let mut out = Vec::new();
    for (name, text) in [("lab.css", CSS), ("lab.js", JS)] {
        let p = pages.join(name);
        crate::output::write_atomic(&p, text)?;
        out.push(p);
    }
    Ok(out)
}

/// The page of a shape, relative to the pages folder.
pub fn shape_page(w: Workload, label: &str) -> String {
    format!("shape-{}-{}.html", w.name(), slug(label))
}

/// The page of a rung, relative to the pages folder.
pub fn rung_page(id: &str) -> String {
    format!("rung-{}.html", slug(id))
}

/// The page of a ladder, relative to the pages folder.
pub fn ladder_page(w: Workload) -> String {
    format!("ladder-{}.html", w.name())
}

/// The page of a stage crate's walkthrough (its README), one per crate however many ladders
/// have rungs in it.
pub fn walkthrough_page(s: Stage) -> String {
    format!("walkthrough-{}.html", s.name())
}

/// A file-name and anchor-safe form of a label (`1024x784x2048`, `b8h16s1024d64 causal`).
pub fn slug(s: &str) -> String {
    s.chars()
        .map(|c| match c {
            'a'..='z' | 'A'..='Z' | '0'..='9' | '-' | '_' | '.' => c,
            _ => '_',
        })
        .collect()
}

/// Where a page sits: the run folder or its pages folder; links are written relative to it.
#[derive(Debug, Clone, Copy, Serialize)]
pub(crate) struct Nav {
    /// From this page to the run folder (`""` or `"../"`).
    pub root: &'static str,
    /// From this page to the pages folder (`"html/"` or `""`).
    pub pages: &'static str,
}

pub(crate) const AT_INDEX: Nav = Nav {
    root: "",
    pages: "html/",
};
pub(crate) const AT_PAGE: Nav = Nav {
    root: "../",
    pages: "",
};

/// Where the figures came from, for the top of every page.
#[derive(Debug, Serialize)]
pub(crate) struct Meta {
    pub device: String,
    pub kind: String,
    pub driver: String,
    pub cuda: Option<String>,
    pub commit: String,
    pub date: String,
    pub tool: String,
    pub ceilings: String,
    pub debug_build: bool,
    /// What an unfinished run did not measure.
    pub unfinished: Option<String>,
}

impl Meta {
    pub fn of(report: &Report) -> Self {
        let run = &report.run;
        Self {
            device: run.device.name.clone(),
            kind: run.device.kind.clone(),
            driver: run.device.driver.clone(),
            cuda: run.device.cuda.clone(),
            commit: run.commit.clone(),
            date: run.date.clone(),
            tool: run.tool.clone(),
            ceilings: match report.timed() {
                true => table::roof_source(report.ceilings.as_ref()),
                false => "none: the run timed nothing, so no row has a place under a roof".into(),
            },
            debug_build: run.debug_build() && report.timed(),
            unfinished: run.unfinished.clone(),
        }
    }
}

/// A table cell: its text, a number to sort by, and a link.
#[derive(Debug, Serialize)]
pub(crate) struct Cell {
    pub text: String,
    pub sort: Option<f64>,
    pub href: Option<String>,
    pub left: bool,
}

#[derive(Debug, Serialize)]
pub(crate) struct Head {
    pub text: &'static str,
    pub left: bool,
    /// What the column holds: the header's tooltip.
    pub title: &'static str,
}

/// One row of a results table, with what the filters select on.
#[derive(Debug, Serialize)]
pub(crate) struct TableRow {
    pub anchor: String,
    pub stage: String,
    pub precision: String,
    pub status: String,
    pub role: String,
    pub cells: Vec<Cell>,
}

#[derive(Debug, Serialize)]
pub(crate) struct Table {
    pub head: Vec<Head>,
    pub rows: Vec<TableRow>,
}

/// The figure a column sorts by: the model's number, where the cell shows one.
fn sort_key(col: Col, r: &RowReport) -> Option<f64> {
    let t = r.timed;
    match col {
        Col::Tag => Some(match r.row.role {
            Role::Rung => f64::from(r.row.rung),
            _ => 1000.0 + f64::from(r.row.rung),
        }),
        Col::Median => t.map(|t| t.median_ms),
        Col::Spread => t.map(|t| t.spread_pct),
        Col::Throughput => t.map(|t| t.gflops),
        Col::Intensity => Some(r.compulsory_intensity),
        Col::Traffic => r.row.traffic.map(|x| x.bytes()),
        Col::TrafficIntensity => r.traffic_intensity.map(|x| x.0),
        Col::Banks => super::table::bank_ratio(&r.row),
        Col::VsParent => r.vs_parent.as_ref().map(|s| s.ratio),
        Col::VsFirst => r.vs_first.as_ref().map(|s| s.ratio),
        Col::PctRef => r.pct_of_ref,
        Col::PctRoof => r.roof.as_ref().map(|x| x.pct),
        Col::Error => r.row.check.as_ref().map(|c| c.rel_error),
        Col::Scratch => Some(r.row.scratch_bytes as f64),
        _ => None,
    }
}

/// The rows of `s` as a table of `cols`, each kernel linking to its rung page when it has one.
pub(crate) fn table_of(s: &ShapeReport, cols: &[Col], nav: Nav, rung_pages: &[String]) -> Table {
    rows_table(s.rows.iter(), cols, nav, rung_pages)
}

/// `rows` as a table of `cols`.
pub(crate) fn rows_table<'a>(
    rows: impl Iterator<Item = &'a RowReport>,
    cols: &[Col],
    nav: Nav,
    rung_pages: &[String],
) -> Table {
    let head = cols
        .iter()
        .map(|c| Head {
            text: c.header(),
            left: c.left(),
            title: c.meaning(),
        })
        .collect();
    let rows = rows
        .map(|r| {
            let has_page = rung_pages.contains(&r.row.id);
            TableRow {
                anchor: format!("row-{}", slug(&r.row.id)),
                stage: r.row.stage.name().into(),
                precision: r.row.precision.name().into(),
                status: table::status_word(r.row.status).into(),
                role: r.row.role.name().into(),
                cells: cols
                    .iter()
                    .map(|&c| Cell {
                        text: c.cell(r, false),
                        sort: sort_key(c, r).filter(|v| v.is_finite()),
                        href: (c == Col::Kernel && has_page)
                            .then(|| format!("{}{}", nav.pages, rung_page(&r.row.id))),
                        left: c.left(),
                    })
                    .collect(),
            }
        })
        .collect();
    Table { head, rows }
}

/// A chart, inline.
#[derive(Debug, Serialize)]
pub(crate) struct Figure {
    pub title: String,
    pub svg: String,
}

/// One shape, as the run page and the shape page show it.
#[derive(Debug, Serialize)]
struct ShapeCtx {
    label: String,
    anchor: String,
    page: String,
    /// `0.134 GFLOP`, or what a shape that computes nothing moves.
    work: String,
    checked_against: String,
    notes: Vec<String>,
    /// How far the machine drifted over the shape (Markdown), where it was measured.
    drift: Option<String>,
    same_code_gap: Option<String>,
    ablation: Option<Figure>,
    roofline: Option<Figure>,
    /// The simulator's L1 wavefronts per rung.
    access: Option<Figure>,
    compact: Table,
    full: Table,
    filters: BTreeMap<&'static str, Vec<String>>,
}

#[derive(Debug, Serialize)]
struct WorkloadCtx {
    name: String,
    title: String,
    ladder: String,
    shapes: Vec<ShapeCtx>,
    sweeps: Vec<Figure>,
    /// A network's time by category, Amdahl table and charts, per shape.
    networks: Vec<NetworkCtx>,
    rungs: Vec<RungLink>,
}

#[derive(Debug, Serialize)]
struct NetworkCtx {
    figures: Vec<Figure>,
    /// The breakdown and Amdahl tables, as HTML.
    tables: String,
}

#[derive(Debug, Serialize)]
pub(crate) struct RungLink {
    pub tag: String,
    pub id: String,
    pub href: Option<String>,
    pub summary: String,
    pub parent: Option<String>,
    pub parent_href: Option<String>,
    pub idea: String,
    pub bound: String,
    pub stage: String,
}

/// The rung ids of `report`, in ladder order per workload: each gets a page.
pub fn rungs_of(report: &Report) -> Vec<String> {
    let mut ids: Vec<String> = Vec::new();
    for w in &report.workloads {
        let mut rungs: Vec<(u32, &str)> = w
            .shapes
            .iter()
            .flat_map(|s| &s.rows)
            .filter(|r| r.row.role == Role::Rung)
            .map(|r| (r.row.rung, r.row.id.as_str()))
            .collect();
        rungs.sort();
        rungs.dedup();
        for (_, id) in rungs {
            if !ids.iter().any(|x| x == id) {
                ids.push(id.to_string());
            }
        }
    }
    ids
}

/// The notes under a shape's heading: what `% of ref` compares with, and why rows have none.
fn shape_notes(s: &ShapeReport) -> Vec<String> {
    s.rows
        .iter()
        .filter_map(|r| {
            r.row
                .reason
                .as_ref()
                .map(|why| format!("{} ({}): {why}", r.row.id, table::status_word(r.row.status)))
        })
        .collect()
}

fn filters(s: &ShapeReport) -> BTreeMap<&'static str, Vec<String>> {
    let mut f: BTreeMap<&'static str, Vec<String>> = BTreeMap::new();
    for r in &s.rows {
        for (k, v) in [
            ("stage", r.row.stage.name().to_string()),
            ("precision", r.row.precision.name().to_string()),
            ("status", table::status_word(r.row.status).to_string()),
        ] {
            let list = f.entry(k).or_default();
            if !list.contains(&v) {
                list.push(v);
            }
        }
    }
    f
}

fn shape_ctx(
    report: &Report,
    w: &WorkloadReport,
    s: &ShapeReport,
    nav: Nav,
    rung_pages: &[String],
) -> Result<ShapeCtx> {
    let full_cols = table::columns_for(table::columns(report, false), w);
    let compact_cols = table::compact_columns_for(table::columns(report, true), w);
    Ok(ShapeCtx {
        label: s.label.clone(),
        anchor: format!("{}-{}", w.workload.name(), slug(&s.label)),
        page: format!("{}{}", nav.pages, shape_page(w.workload, &s.label)),
        work: s.work(),
        checked_against: s.checked_against.clone(),
        notes: shape_notes(s),
        drift: s.drift.as_ref().map(|d| d.sentence()),
        same_code_gap: s.same_code_gap.as_ref().map(|g| g.sentence()),
        ablation: svg::ablation(report, s)?,
        roofline: svg::roofline(report, s)?,
        access: svg::access(report, s)?,
        compact: table_of(s, &compact_cols, nav, rung_pages),
        full: table_of(s, &full_cols, nav, rung_pages),
        filters: filters(s),
    })
}

/// The rungs of a workload's ladder from the registry, in order, linked where the run has them.
pub(crate) fn ladder_rungs(
    all: &[Box<dyn Kernel>],
    w: Workload,
    nav: Nav,
    rung_pages: &[String],
) -> Vec<RungLink> {
    let link = |id: &str| {
        rung_pages
            .iter()
            .any(|x| x == id)
            .then(|| format!("{}{}", nav.pages, rung_page(id)))
    };
    registry::for_workload(all, w)
        .into_iter()
        .filter(|k| k.info().role == Role::Rung)
        .map(|k| {
            let i = k.info();
            let l = k.lineage();
            let parent = l.and_then(|l| l.parent).map(str::to_string);
            RungLink {
                tag: format!("{:02}", i.rung),
                id: i.id.to_string(),
                href: link(&i.id),
                summary: i.summary.to_string(),
                parent_href: parent.as_deref().and_then(link),
                parent,
                idea: l.map_or(String::new(), |l| l.idea.to_string()),
                bound: l
                    .and_then(|l| l.bound)
                    .map_or("-".to_string(), |b| b.to_string()),
                stage: i.stage.name().to_string(),
            }
        })
        .collect()
}

/// The crate READMEs: each stage crate's walkthrough.
pub(crate) fn readme(stage: Stage) -> Option<&'static str> {
    Some(match stage {
        Stage::Baseline => include_str!("../../../../baseline/README.md"),
        Stage::RestrictUnroll => include_str!("../../../../restrict-unroll/README.md"),
        Stage::Fusion => include_str!("../../../../fusion/README.md"),
        Stage::Tensorcore => include_str!("../../../../tensorcore/README.md"),
        Stage::Fp16 => include_str!("../../../../fp16/README.md"),
        Stage::FlashAttn => include_str!("../../../../flash-attn/README.md"),
        Stage::Networks => include_str!("../../../../networks/README.md"),
        Stage::Reference | Stage::User => return None,
    })
}

#[derive(Serialize)]
struct RunPage<'a> {
    nav: Nav,
    title: String,
    meta: &'a Meta,
    device_note: Option<String>,
    /// How `vs parent` was measured and what `~` means (Markdown).
    speed_note: Option<String>,
    workloads: Vec<WorkloadCtx>,
    failures: Vec<String>,
    explain_note: Option<String>,
    /// Whether every kernel page has its resources and SASS mix.
    explained: bool,
}

#[derive(Serialize)]
struct ShapePage<'a> {
    nav: Nav,
    title: String,
    meta: &'a Meta,
    workload: String,
    ladder: String,
    shape: ShapeCtx,
}

#[derive(Serialize)]
struct LadderPage<'a> {
    nav: Nav,
    title: String,
    meta: &'a Meta,
    rungs: Vec<RungLink>,
    /// The crates of the ladder's rungs: (crate, page).
    walkthroughs: Vec<(String, String)>,
    /// Whether every kernel page has its resources and SASS mix.
    explained: bool,
}

#[derive(Serialize)]
struct WalkthroughPage<'a> {
    nav: Nav,
    title: String,
    meta: &'a Meta,
    /// The README as HTML.
    html: String,
}

/// What a run page says of its device's rows.
fn device_note(report: &Report) -> Option<String> {
    match report.kind {
        kernel::DeviceKind::Cpu => Some(format!(
            "These rows time the CPU ports of the kernels: Rust code that mirrors each rung's \
             idea, not the CUDA code. {}.",
            crate::report::model::SAME_PORT_NOTE
        )),
        kernel::DeviceKind::Sim => Some(
            "The CUDA simulator executed each kernel's source on the CPU to check its output; \
             it gives no speeds: the charts show the arithmetic intensity of the global-memory \
             traffic each rung issued, and the L1 wavefronts its global and shared-memory \
             accesses took over the fewest they could take."
                .into(),
        ),
        kernel::DeviceKind::Cuda => None,
    }
}

/// Writes `index.html` and the `html/` pages of `report` into `dir`; returns the files.
pub fn write(report: &Report, dir: &Path, mode: Explain, lab: &LabDir) -> Result<Vec<PathBuf>> {
    let env = env();
    let pages = dir.join(PAGES);
    let mut written = write_assets(&pages)?;
    let meta = Meta::of(report);
    let all = registry::all();
    let mut rung_ids = rungs_of(report);

    // The rung pages first: the others link them. The user's kernels get theirs too.
    let none = explain_cache::Extras::default();
    let mut docs = explain_cache::docs(&all, &rung_ids, &none, mode, lab);
    let users = user_pages::docs(&report.run, mode, lab);
    rung_ids.extend(users.iter().map(|(id, _)| id.clone()));
    docs.extend(users);
    let missing = docs.iter().filter(|(_, d)| !d.complete).count();
    for (id, d) in &docs {
        let ctx = doc::rung_ctx(report, &meta, &all, id, d, &rung_ids)?;
        written.push(render_to(
            &env,
            "rung.html",
            ctx,
            &pages.join(rung_page(id)),
        )?);
    }

    let mut workloads = Vec::new();
    for w in &report.workloads {
        let mut shapes = Vec::new();
        for s in &w.shapes {
            let page_ctx = ShapePage {
                nav: AT_PAGE,
                title: format!("{} {}", w.workload.name(), s.label),
                meta: &meta,
                workload: w.workload.name().into(),
                ladder: ladder_page(w.workload),
                shape: shape_ctx(report, w, s, AT_PAGE, &rung_ids)?,
            };
            written.push(render_to(
                &env,
                "shape.html",
                page_ctx,
                &pages.join(shape_page(w.workload, &s.label)),
            )?);
            shapes.push(shape_ctx(report, w, s, AT_INDEX, &rung_ids)?);
        }
        let ladder = LadderPage {
            nav: AT_PAGE,
            title: format!("The {} ladder", w.workload.name()),
            meta: &meta,
            rungs: ladder_rungs(&all, w.workload, AT_PAGE, &rung_ids),
            walkthroughs: crates(&all, w.workload)
                .into_iter()
                .map(|s| (s.name().to_string(), walkthrough_page(s)))
                .collect(),
            explained: missing == 0,
        };
        written.push(render_to(
            &env,
            "ladder.html",
            ladder,
            &pages.join(ladder_page(w.workload)),
        )?);
        workloads.push(WorkloadCtx {
            name: w.workload.name().into(),
            title: w.workload.title().into(),
            ladder: format!("{}{}", AT_INDEX.pages, ladder_page(w.workload)),
            shapes,
            sweeps: svg::sweeps(report, w)?,
            networks: report
                .run
                .networks
                .iter()
                .filter(|n| n.workload == w.workload)
                .map(|n| {
                    Ok(NetworkCtx {
                        figures: svg::network(report, n)?,
                        tables: markdown::to_html_under(&crate::report::network::markdown(n), 1),
                    })
                })
                .collect::<Result<_>>()?,
            rungs: ladder_rungs(&all, w.workload, AT_INDEX, &rung_ids)
                .into_iter()
                .filter(|r| r.href.is_some())
                .collect(),
        });
    }
    let run_page = RunPage {
        nav: AT_INDEX,
        title: format!("Ablation on {}", meta.device),
        meta: &meta,
        device_note: device_note(report),
        speed_note: report
            .timed()
            .then(|| format!("{}.", report.significance_note())),
        workloads,
        failures: super::failures(&report.run),
        explain_note: (missing > 0).then(|| {
            format!(
                "{} of {} kernel pages show only the lineage and the source diff: `harness report \
                 RUN --html`, RUN being this folder, adds registers, occupancy and the SASS mix \
                 (NVRTC and nvdisasm, cached for later runs).",
                missing,
                docs.len(),
            )
        }),
        explained: missing == 0,
    };
    written.push(render_to(&env, "run.html", run_page, &dir.join(INDEX))?);
    let mut stages: Vec<Stage> = Vec::new();
    for w in &report.workloads {
        for s in crates(&all, w.workload) {
            if !stages.contains(&s) {
                stages.push(s);
            }
        }
    }
    for s in stages {
        let text = readme(s).expect("crates() keeps crates with a README");
        let page = WalkthroughPage {
            nav: AT_PAGE,
            title: format!("The {} crate's walkthrough", s.name()),
            meta: &meta,
            html: markdown::to_html_under(text, 1),
        };
        written.push(render_to(
            &env,
            "walkthrough.html",
            page,
            &pages.join(walkthrough_page(s)),
        )?);
    }
    Ok(written)
}

/// The crates holding `w`'s rungs, in ladder order.
fn crates(all: &[Box<dyn Kernel>], w: Workload) -> Vec<Stage> {
    let mut stages: Vec<Stage> = Vec::new();
    for k in registry::for_workload(all, w) {
        let s = k.info().stage;
        if k.info().role == Role::Rung && readme(s).is_some() && !stages.contains(&s) {
            stages.push(s);
        }
    }
    stages
}
