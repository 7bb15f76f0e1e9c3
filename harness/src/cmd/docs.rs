//! `harness docs`: writes one page per ladder (`docs/ladders/WORKLOAD.md`) from the code and
//! the compiler: the rungs in order with parent, idea and bound, then `harness explain
//! --markdown` of each. Nothing on the pages is typed by hand, so regenerating them is how
//! they stay true; the lab's own runs depend on the machine and are left out: the pages link
//! the published tables of `results/` and show each rung's rows of the published GPU runs
//! instead. `--figures` rewrites the figures of the
//! walkthroughs, measured ones from the runs they name and the others from the code
//! (`crate::figures`).

use super::Outcome;
use super::explain::{self, Block};
use crate::registry;
use crate::results::RunResults;
use anyhow::Context;
use kernel::{Kernel, Role, Shape, Workload};
use std::fmt::Write as _;
use std::path::{Path, PathBuf};

#[derive(clap::Args)]
pub struct Args {
    /// Where the pages go [default: docs/ladders].
    #[arg(long, conflicts_with = "figures")]
    pub out: Option<PathBuf>,
    /// The folder of published runs the pages link (one folder per device).
    #[arg(long, default_value = "results")]
    pub results: PathBuf,
    /// Rewrite only the figures of the READMEs and of the pages under docs/ (the blocks
    /// between `<!-- figure: ... -->` and `<!-- /figure -->`): a measured one from the
    /// published run it names (`from results/FOLDER`), one `from code` from the compiler and
    /// the simulator; the ladder pages are not regenerated.
    #[arg(long)]
    pub figures: bool,
    /// The repository root the walkthroughs and the runs they name are under (--figures).
    #[arg(long, default_value = ".")]
    pub root: PathBuf,
    /// Print one figure from code (`resources ID,ID`, `sass ID,ID`) as --figures writes it:
    /// the second compile, in a process of its own, that a changed figure must agree with.
    #[arg(long, hide = true)]
    pub from_code: Option<String>,
}

pub fn run(args: &Args) -> Outcome {
    if let Some(name) = &args.from_code {
        print!("{}", crate::figures::from_code(name)?);
        return Ok(true);
    }
    if args.figures {
        return figures(&args.root);
    }
    if !args.results.is_dir() {
        anyhow::bail!(
            "--results {}: no such folder of published runs (the repository's is results/)",
            args.results.display()
        );
    }
    let out = args
        .out
        .clone()
        .unwrap_or_else(|| PathBuf::from("docs/ladders"));
    std::fs::create_dir_all(&out).with_context(|| format!("cannot create {}", out.display()))?;
    let all = registry::all();
    explain::prebuild(&all.iter().map(|k| k.as_ref()).collect::<Vec<_>>());
    for w in Workload::ALL {
        let file = out.join(format!("{}.md", w.name()));
        crate::output::write_atomic(&file, page(w, &args.results))?;
        println!("wrote {}", file.display());
    }
    Ok(true)
}

/// Rewrites the figure blocks of every walkthrough under `root` from their runs; says which
/// files changed.
fn figures(root: &Path) -> Outcome {
    let harness = std::env::current_exe().context("locating the harness binary")?;
    for file in crate::figures::walkthroughs(root)? {
        let text = std::fs::read_to_string(&file)
            .with_context(|| format!("cannot read {}", file.display()))?;
        let new = crate::figures::rewrite(&text, root, &harness)
            .with_context(|| format!("in {}", file.display()))?;
        if new != text {
            crate::output::write_atomic(&file, new)?;
            println!("rewrote the figures of {}", file.display());
        }
    }
    Ok(true)
}

/// A published run with tables of a workload: the link to them from a page two folders down,
/// and its results (`None` where they do not load, as after a change of their schema).
struct Published {
    link: String,
    run: Option<RunResults>,
}

impl Published {
    /// Whether the run has a row of `id` in `workload`'s tables; a run whose results do not
    /// load may have.
    fn may_have(&self, workload: Workload, id: &str) -> bool {
        self.run.as_ref().is_none_or(|run| {
            run.workloads
                .iter()
                .filter(|w| w.workload == workload)
                .flat_map(|w| &w.shapes)
                .flat_map(|s| &s.rows)
                .any(|r| r.id == id)
        })
    }
}

/// Each published run with tables of `workload` under `results` (relative to the repository
/// root), by folder name.
fn published_runs(workload: Workload, results: &Path) -> Vec<Published> {
    let mut devices: Vec<String> = std::fs::read_dir(results)
        .map(|d| {
            d.filter_map(|e| e.ok())
                .filter(|e| e.path().join(format!("{}.md", workload.name())).is_file())
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .collect()
        })
        .unwrap_or_default();
    devices.sort();
    devices
        .into_iter()
        .map(|d| Published {
            run: RunResults::load(&results.join(&d)).ok(),
            link: format!("[{d}](../../results/{d}/{}.md)", workload.name()),
        })
        .collect()
}

/// Where a rung's page sends its reader for measured rows: the published runs that hold one
/// (or whose rows could not be read), or, where none does, that no run has measured it yet.
fn measured_note(workload: Workload, id: &str, runs: &[Published]) -> String {
    let with_row: Vec<&str> = runs
        .iter()
        .filter(|p| p.may_have(workload, id))
        .map(|p| p.link.as_str())
        .collect();
    let links: Vec<&str> = runs.iter().map(|p| p.link.as_str()).collect();
    match (links.is_empty(), with_row.is_empty()) {
        (true, _) => "No published run yet.".to_string(),
        (false, true) => format!(
            "No published run has a row of {id} yet; the workload's tables: {}.",
            links.join(", ")
        ),
        (false, false) => format!("In the published tables: {}.", with_row.join(", ")),
    }
}

/// A rung page's measured section: where the published tables are, then the rung's rows of
/// each published GPU run, with their speedup over the parent in that run.
fn measured_section(workload: Workload, k: &dyn Kernel, runs: &[Published]) -> Vec<Block> {
    let mut blocks = vec![Block::Text(measured_note(workload, &k.info().id, runs))];
    for p in runs {
        let Some(run) = p.run.as_ref().filter(|r| r.device.kind == "cuda") else {
            continue;
        };
        if let Some(table) = explain::measured_table(k, run) {
            let legend = match k.lineage().and_then(|l| l.parent) {
                Some(_) => {
                    ": `vs parent` is the speedup over the parent rung timed in the same run, \
                     `~` one inside the noise"
                }
                None => "",
            };
            blocks.push(Block::Text(format!(
                "On {} ({}), {}, commit `{}`{legend}.",
                run.device.name, p.link, run.date, run.commit
            )));
            blocks.push(table);
        }
    }
    blocks
}

/// The first published GPU run under `results` (by folder name): the pages set its measured
/// time beside each rung's speed-of-light estimate.
fn published_gpu_run(results: &Path) -> Option<RunResults> {
    let mut dirs: Vec<PathBuf> = std::fs::read_dir(results)
        .ok()?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.is_dir())
        .collect();
    dirs.sort();
    dirs.iter()
        .filter_map(|d| RunResults::load(d).ok())
        .find(|r| r.device.kind == "cuda")
}

/// A network's rows, each with its layers at the workload's small probe shape: which rung or
/// glue kernel computes each and in which category its time is counted.
fn network_layers(workload: Workload) -> String {
    let shape = workload.probe_shape();
    let mut s = String::new();
    for row in networks::rows()
        .into_iter()
        .filter(|r| r.info().workload == workload)
    {
        let id = row.info().id;
        let _ = write!(s, "\n<a id=\"{id}\"></a>\n\n### {id}\n\n");
        match row.graph(&shape) {
            Ok(g) => {
                let _ = writeln!(
                    s,
                    "Layers at {shape}:\n\n| layer | computed by | category |\n|---|---|---|"
                );
                for l in &g.layers {
                    let by = l
                        .rung
                        .as_deref()
                        .map_or("a glue kernel of `networks`".to_string(), |r| {
                            format!("`{r}`")
                        });
                    let _ = writeln!(s, "| {} | {by} | {} |", l.name, l.category);
                }
            }
            Err(why) => {
                let _ = writeln!(s, "Not built at {shape}: {why}");
            }
        }
    }
    s
}

pub fn page(workload: Workload, results: &Path) -> String {
    let all = registry::all();
    let rungs: Vec<_> = registry::for_workload(&all, workload)
        .into_iter()
        .filter(|k| k.info().role == Role::Rung)
        .collect();
    let about = match workload.is_network() {
        true => {
            "Each row is the whole network with one rung of its main operator swapped in over \
             its parent row, every other layer unchanged; each section below lists the row's \
             layers, what computes each and the category its time counts in. The walkthrough, \
             with the why, is in the networks crate's README."
        }
        false => {
            "Each rung changes its parent in one idea (or says it bundles more) to attack one \
             bound. Follow them in order; each section below is `harness explain RUNG \
             --markdown`: the source diff against the parent, the compiler's resources and the \
             SASS instruction mix of both, and the speed of light on an H100 that the table's \
             estimate column comes from, with the ceiling that binds it. The walkthrough of \
             each rung, with the why, is in its crate's README."
        }
    };
    let mut s = format!(
        "# The {workload} ladder\n\n<!-- Generated by `cargo run -p harness -- docs`; edit the \
         code, the rungs' lineage or the crate READMEs, not this file. -->\n\n{about}\n\n"
    );
    let runs = published_runs(workload, results);
    let links: Vec<String> = runs.iter().map(|p| p.link.clone()).collect();
    let gpu = published_gpu_run(results);
    if links.is_empty() {
        s.push_str("No published run of this workload yet: `harness run` measures it.\n\n");
    } else {
        let _ = writeln!(
            s,
            "Measured rows, charts and each run's device, date and commit: {}.\n",
            links.join(", ")
        );
    }
    // A network's rows are whole networks, which the speed-of-light model does not estimate.
    let estimates: Vec<Option<(Shape, explain::Sol)>> = rungs
        .iter()
        .map(|k| (!workload.is_network()).then(|| explain::estimate_of(&all, *k)))
        .collect();
    // The shape most rungs are estimated at heads the column; a rung estimated at another
    // (one that declines it) says its own.
    let shapes: Vec<Shape> = estimates.iter().flatten().map(|(s, _)| *s).collect();
    let common = shapes
        .iter()
        .max_by_key(|s| shapes.iter().filter(|t| t == s).count())
        .copied();
    let (head, rule) = match common {
        None => (String::new(), ""),
        Some(shape) => (format!(" H100 estimate at {shape} |"), "---|"),
    };
    let _ = writeln!(
        s,
        "| rung | id | parent | idea | bound |{head} walkthrough |\n|---|---|---|---|---|{rule}---|"
    );
    for (k, estimate) in rungs.iter().zip(&estimates) {
        let i = k.info();
        let l = k.lineage();
        let estimate = match estimate {
            None => String::new(),
            Some((shape, sol)) => {
                let at = if Some(*shape) == common {
                    String::new()
                } else {
                    format!(" at {shape}")
                };
                format!(" {:.4} ms{at}, {} |", sol.ms, sol.bound)
            }
        };
        let _ = writeln!(
            s,
            "| {:02} | [`{}`](#{}) | {} | {} | {} |{estimate} [{}](../../{}/README.md#{}) |",
            i.rung,
            i.id,
            i.id,
            l.and_then(|l| l.parent)
                .map_or("-".to_string(), |p| format!("[`{p}`](#{p})")),
            l.map_or("", |l| l.idea).replace('|', "\\|"),
            l.and_then(|l| l.bound)
                .map_or("-".to_string(), |b| b.to_string()),
            i.stage,
            i.stage,
            i.id
        );
    }
    if workload.is_network() {
        s.push_str(&network_layers(workload));
        return s;
    }
    for k in &rungs {
        let mut doc = explain::explain(&all, *k, gpu.as_ref(), false);
        // Measured rows depend on the machine that runs this; the page links the published
        // ones instead, and shows the rung's rows of each published GPU run.
        if let Some((_, blocks)) = doc.sections.iter_mut().find(|(t, _)| t == "Measured") {
            *blocks = measured_section(workload, *k, &runs);
        }
        let _ = write!(s, "\n<a id=\"{}\"></a>\n\n{}", k.info().id, doc.markdown());
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A rung no published run measured says so, rather than linking tables without its row.
    #[test]
    fn a_rung_page_links_only_the_runs_that_measured_it() {
        let dir = std::env::temp_dir().join(format!("lab-docs-runs-{}", std::process::id()));
        let run_dir = dir.join("some-gpu");
        std::fs::create_dir_all(&run_dir).unwrap();
        let run = crate::report::charts::tests::sim();
        std::fs::write(
            crate::runs::results_file(&run_dir),
            serde_json::to_string(&run).unwrap(),
        )
        .unwrap();
        std::fs::write(run_dir.join("gemm.md"), "").unwrap();
        let runs = published_runs(Workload::Gemm, &dir);
        assert_eq!(runs.len(), 1);
        let link = "[some-gpu](../../results/some-gpu/gemm.md)";
        assert_eq!(
            measured_note(Workload::Gemm, "gemm-tiled", &runs),
            format!("In the published tables: {link}.")
        );
        assert_eq!(
            measured_note(Workload::Gemm, "gemm-not-there", &runs),
            format!(
                "No published run has a row of gemm-not-there yet; the workload's tables: {link}."
            )
        );
        assert_eq!(
            measured_note(Workload::Gemm, "gemm-tiled", &[]),
            "No published run yet."
        );
        // Results that no longer load say nothing of the rung: their tables stay linked.
        std::fs::write(crate::runs::results_file(&run_dir), "{}").unwrap();
        let runs = published_runs(Workload::Gemm, &dir);
        assert_eq!(
            measured_note(Workload::Gemm, "gemm-not-there", &runs),
            format!("In the published tables: {link}.")
        );
        std::fs::remove_dir_all(&dir).unwrap();
    }

    /// A rung's page shows its rows of a published GPU run, with their speedup over the
    /// parent; a CPU or simulator run's rows stay behind the link.
    #[test]
    fn a_rung_page_shows_its_rows_of_the_published_gpu_runs() {
        let dir = std::env::temp_dir().join(format!("lab-docs-gpu-{}", std::process::id()));
        let all = registry::all();
        let tiled = registry::find(&all, "gemm-tiled").unwrap();
        let mut runs = Vec::new();
        for (name, run) in [
            ("a-cpu", crate::report::charts::tests::cpu()),
            ("a-gpu", crate::report::charts::tests::ladder()),
        ] {
            assert_eq!(run.device.kind == "cuda", name == "a-gpu");
            let run_dir = dir.join(name);
            std::fs::create_dir_all(&run_dir).unwrap();
            std::fs::write(
                crate::runs::results_file(&run_dir),
                serde_json::to_string(&run).unwrap(),
            )
            .unwrap();
            std::fs::write(run_dir.join("gemm.md"), "").unwrap();
            runs.push(run);
        }
        let published = published_runs(Workload::Gemm, &dir);
        let blocks = measured_section(Workload::Gemm, tiled, &published);
        let tables: Vec<&Block> = blocks
            .iter()
            .filter(|b| matches!(b, Block::Table(..)))
            .collect();
        assert_eq!(tables.len(), 1, "{blocks:?}");
        let Block::Table(head, rows) = tables[0] else {
            unreachable!()
        };
        assert_eq!(head[4], "vs parent");
        let shapes = &runs[1].workloads[0].shapes;
        assert_eq!(rows.len(), shapes.len());
        for (row, shape) in rows.iter().zip(shapes) {
            let report = crate::report::model::ShapeReport::new(shape, None);
            let tiled = report
                .rows
                .iter()
                .find(|r| r.row.id == "gemm-tiled")
                .unwrap();
            let speedup = tiled.vs_parent.as_ref().unwrap();
            assert_eq!(row[0], shape.label);
            assert_eq!(row[4], speedup.cell_against(), "{row:?}");
        }
        assert!(
            blocks
                .iter()
                .any(|b| matches!(b, Block::Text(t) if t.contains("[a-gpu](../../results/a-gpu/gemm.md)"))),
            "{blocks:?}"
        );
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
