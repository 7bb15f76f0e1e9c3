//! Measured figures in the walkthroughs (the crate READMEs, the top README, the pages under
//! `docs/`). Each sits between two markers that name what it shows and the published run it
//! comes from:
//!
//! ```text
//! <!-- figure: gemm 512x512x512 gemm-naive,gemm-tiled from results/cpu-intel-r-xeon-r-processor-2-threads -->
//! ...generated...
//! <!-- /figure -->
//! ```
//!
//! The name is a workload, one of its shape labels in that run, and optionally the kernel ids
//! to show (all rows otherwise). Figures derived from the code come `from code`: `sass ID,ID`
//! is the SASS instruction counts of those rungs, `resources ID,ID` their registers, shared
//! memory and occupancy; `breakdown WORKLOAD SHAPE` is a network's time by category and its
//! Amdahl table; `estimate ID,ID` from a GPU run sets each rung's measured medians beside the
//! H100 model's estimate at the same shapes. The block is the run's own Markdown table rows
//! (the report model renders them, nothing is recomputed here) under a line naming the device,
//! the date and the commit. `harness docs --figures` rewrites every block; a test regenerates
//! them and fails on any that differs, so a figure can never drift from its run.

use crate::cmd::explain;
use crate::report::{Report, table};
use crate::results::RunResults;
use crate::{registry, sass};
use anyhow::{Context, Result, anyhow, bail};
use kernel::{DeviceKind, Workload};
use std::fmt::Write as _;
use std::path::{Path, PathBuf};

/// The opening marker's prefix and the closing marker.
pub const OPEN: &str = "<!-- figure: ";
pub const CLOSE: &str = "<!-- /figure -->";

/// One figure block of a file.
#[derive(Debug, Clone, PartialEq)]
pub struct Block {
    /// What it shows: `WORKLOAD SHAPE [KERNEL,KERNEL...]`.
    pub name: String,
    /// The run folder, relative to the repository root (`results/<folder>`).
    pub run: String,
    /// 1-based line of the opening marker.
    pub line: usize,
    /// Byte range of the generated text between the two markers.
    pub body: std::ops::Range<usize>,
}

/// The figure blocks of `text`, in order: each marker on a line of its own. An opening marker
/// without its closing one, or with no `from`, is an error naming its line.
pub fn blocks(text: &str) -> Result<Vec<Block>> {
    let mut out = Vec::new();
    let mut at = 0;
    // A marker opens a line: one quoted in prose (`<!-- figure: ... -->`) is not a figure.
    while let Some(i) = text[at..]
        .match_indices(OPEN)
        .map(|(i, _)| at + i)
        .find(|&i| i == 0 || text.as_bytes()[i - 1] == b'\n')
    {
        let start = i;
        let line = text[..start].lines().count() + 1;
        let head_end = text[start..]
            .find("-->")
            .map(|j| start + j)
            .ok_or_else(|| anyhow!("line {line}: figure marker not closed by `-->`"))?;
        let head = text[start + OPEN.len()..head_end].trim();
        let (name, run) = head.rsplit_once(" from ").ok_or_else(|| {
            anyhow!("line {line}: figure `{head}` names no run (`from results/...`)")
        })?;
        let body_start = head_end + "-->".len();
        let close = text[body_start..]
            .match_indices(CLOSE)
            .map(|(j, _)| body_start + j)
            .find(|&j| text.as_bytes()[j - 1] == b'\n')
            .ok_or_else(|| anyhow!("line {line}: figure `{name}` has no closing `{CLOSE}`"))?;
        out.push(Block {
            name: name.trim().to_string(),
            run: run.trim().to_string(),
            line,
            body: body_start..close,
        });
        at = close + CLOSE.len();
    }
    Ok(out)
}

/// A network's time by category and Amdahl table at one shape: `breakdown WORKLOAD SHAPE`.
fn render_breakdown(name: &str, run: &RunResults, folder: &str) -> Result<String> {
    let [_, w, label] = name.split_whitespace().collect::<Vec<_>>()[..] else {
        bail!("figure `{name}`: expected `breakdown WORKLOAD SHAPE`");
    };
    let n = run
        .networks
        .iter()
        .find(|n| n.workload.name() == w && n.label == label)
        .ok_or_else(|| anyhow!("figure `{name}`: {folder} has no breakdown of {w} {label}"))?;
    // The tables without their own title: the caption says what they are.
    let md = crate::report::network::markdown(n);
    let body = md.split_once("\n\n").map_or(md.as_str(), |(_, rest)| rest);
    let body = body.replace("\n### ", "\n#### ");
    Ok(format!(
        "\n{w} {label}, time by category: `{}`, measured {}, commit `{}` (generated from \
         `{folder}` by `harness docs --figures`).\n\n{body}",
        run.device.name, run.date, run.commit
    ))
}

/// Each rung's measured medians in a GPU run beside the H100 model's estimate at the same
/// shapes: `estimate ID[,ID...]`.
fn render_estimates(name: &str, run: &RunResults, folder: &str) -> Result<String> {
    let [_, ids] = name.split_whitespace().collect::<Vec<_>>()[..] else {
        bail!("figure `{name}`: expected `estimate ID[,ID...]`");
    };
    if run.device.kind != "cuda" {
        bail!("figure `{name}`: {folder} is not a GPU run");
    }
    let all = registry::all();
    let mut table = "| kernel | shape | bound by | estimate ms | measured ms | measured speed, % \
                     of the estimate's |\n"
        .to_string();
    table += "|---|---|---|---:|---:|---:|\n";
    for id in ids.split(',') {
        let k = registry::find(&all, id)?;
        let rows = explain::estimates_against(&all, k, run);
        if rows.is_empty() {
            bail!("figure `{name}`: {folder} has no passed, timed row of {id}");
        }
        for (shape, sol, ms) in rows {
            let _ = writeln!(
                table,
                "| `{id}` | {shape} | {} | {:.4} | {ms:.4} | {:.0}% |",
                sol.bound,
                sol.ms,
                sol.ms / ms * 100.0
            );
        }
    }
    Ok(format!(
        "\nThe speed of light on an H100 SXM of `harness explain` beside the medians `{}` \
         measured, {}, commit `{}` (generated from `{folder}` by `harness docs --figures`). \
         The estimate is a best case: a row near 100% runs at its binding ceiling.\n\n{table}",
        run.device.name, run.date, run.commit
    ))
}

/// The text between the markers of figure `name` drawn from `run`, new lines around it.
pub fn render(name: &str, run: &RunResults, folder: &str) -> Result<String> {
    if name.starts_with("breakdown ") {
        return render_breakdown(name, run, folder);
    }
    if name.starts_with("estimate ") {
        return render_estimates(name, run, folder);
    }
    let mut words = name.split_whitespace();
    let (Some(w), Some(label)) = (words.next(), words.next()) else {
        bail!("figure `{name}`: expected `WORKLOAD SHAPE [KERNEL,...]`");
    };
    let kernels: Vec<&str> = words.next().map_or(Vec::new(), |k| k.split(',').collect());
    if words.next().is_some() {
        bail!("figure `{name}`: expected `WORKLOAD SHAPE [KERNEL,...]`");
    }
    let workload = Workload::parse(w).ok_or_else(|| anyhow!("figure `{name}`: no workload {w}"))?;
    let report = Report::new(run);
    let of_workload = report.workloads.iter().find(|x| x.workload == workload);
    let shape = of_workload
        .into_iter()
        .flat_map(|x| &x.shapes)
        .find(|s| s.label == label)
        .ok_or_else(|| anyhow!("figure `{name}`: {folder} has no {w} shape {label}"))?;
    let rows =
        if kernels.is_empty() {
            shape.rows.iter().collect()
        } else {
            kernels
                .iter()
                .map(|k| {
                    shape.rows.iter().find(|r| r.row.id == *k).ok_or_else(|| {
                        anyhow!("figure `{name}`: {folder} has no row {k} at {label}")
                    })
                })
                .collect::<Result<Vec<_>>>()?
        };
    // How far the machine drifted over the shape, where the figure shows the row it was
    // measured on.
    let drift = shape
        .drift
        .as_ref()
        .filter(|d| rows.iter().any(|r| r.row.id == d.id))
        .map(|d| format!("\n{}\n", d.sentence()))
        .unwrap_or_default();
    // A `?` the figure shows, said in words: the table's note is not beside it here.
    let disagree: String = rows
        .iter()
        .filter_map(|r| {
            let s = r.vs_parent.as_ref()?;
            let medians = s.medians_disagree?;
            Some(format!(
                "\n`{}`: `{}` timed in alternating rounds with its parent `{}` gives {}, the \
                 ratio of their medians {medians:.2}x. Either the machine changed pace \
                 between the two rows' timings, which the rounds cancel and the medians do \
                 not, or the rung ran slower right after its parent than back to back, which \
                 the medians avoid; neither figure is sure.\n",
                s.cell_against(),
                r.row.id,
                s.against,
                s.ratio_text()
            ))
        })
        .collect();
    let drift = format!("{drift}{disagree}");
    let dev = &run.device;
    let what = match report.kind {
        DeviceKind::Cpu => {
            "the CPU ports of the rungs (Rust that mirrors each rung's idea), not the CUDA code, on"
        }
        DeviceKind::Sim => {
            "the CUDA sources executed for correctness and counted traffic, never a speed, by the"
        }
        DeviceKind::Cuda => "the kernels on",
    };
    Ok(format!(
        "\n{workload} {label}: {what} `{}`, measured {}, commit `{}` (generated from \
         `{folder}` by `harness docs --figures`).\n\n{}{drift}",
        dev.name,
        run.date,
        run.commit,
        table::markdown_rows(
            &of_workload.map_or_else(
                || table::columns(&report, false),
                |x| table::columns_for(table::columns(&report, false), x)
            ),
            rows
        )
    ))
}

/// What the figure block `b` holds now: a run's rows, or for `from code` the compiler's.
pub fn generate(b: &Block, root: &Path) -> Result<String> {
    let what = || format!("line {}: figure `{}`", b.line, b.name);
    if b.run == FROM_CODE {
        return from_code(&b.name).with_context(what);
    }
    let run = RunResults::load(&root.join(&b.run)).with_context(what)?;
    render(&b.name, &run, &b.run).with_context(what)
}

/// What the block `b` of `text` holds now ([`generate`]), except that a figure from code that
/// differs from the text is compiled again, afresh, by `harness` (the binary) in processes of
/// their own. ptxas inside NVRTC compiles some programs differently depending on where its
/// memory lies; the harness and the tests run with the addresses fixed
/// ([`kernel::cuda::address_layout`]), which gives one form, but where the system keeps them
/// randomized a compile now and then comes out with a register or an instruction more (6 of
/// 70 processes compiling fusion's rungs), and the output kept on disk hands that form to
/// every later process. So the text is kept while a fresh compile still gives it, and a new
/// figure is taken only when two compiles agree on it.
pub fn settled(b: &Block, text: &str, root: &Path, harness: &Path) -> Result<String> {
    let was = &text[b.body.clone()];
    let now = generate(b, root)?;
    if now == was || b.run != FROM_CODE {
        return Ok(now);
    }
    let mut answers = vec![now];
    for _ in 0..FRESH_COMPILES {
        let again = from_code_in_child(&b.name, harness)
            .with_context(|| format!("line {}: figure `{}`", b.line, b.name))?;
        if again == was || answers.contains(&again) {
            return Ok(again);
        }
        answers.push(again);
    }
    bail!(
        "line {}: figure `{}` from code came out differently in {} processes; run again:\n{}",
        b.line,
        b.name,
        answers.len(),
        answers.join("\n")
    )
}

/// How many processes compile a changed figure from code again before [`settled`] gives up.
const FRESH_COMPILES: usize = 3;

/// `text` with every figure block regenerated from what it names under `root` ([`settled`]),
/// `harness` being the binary that computes a changed figure from code a second time.
pub fn rewrite(text: &str, root: &Path, harness: &Path) -> Result<String> {
    let mut out = String::with_capacity(text.len());
    let mut at = 0;
    for b in blocks(text)? {
        out.push_str(&text[at..b.body.start]);
        out.push_str(&settled(&b, text, root, harness)?);
        at = b.body.end;
    }
    out.push_str(&text[at..]);
    Ok(out)
}

/// The option of `harness docs` that prints one figure from code (hidden: [`settled`]'s
/// second opinion).
const FROM_CODE_OPTION: &str = "--from-code";

/// The figure from code `name` as `harness docs --from-code NAME` prints it, compiled afresh:
/// the child keeps NVRTC's outputs in a folder of its own, deleted after.
fn from_code_in_child(name: &str, harness: &Path) -> Result<String> {
    static NEXT: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    let n = NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let fresh = std::env::temp_dir().join(format!("kernel-lab-figure-{}-{n}", std::process::id()));
    let out = std::process::Command::new(harness)
        .args(["docs", FROM_CODE_OPTION, name])
        .env(kernel::cuda::nvrtc_cache::DIR_VARIABLE, &fresh)
        .output();
    let _ = std::fs::remove_dir_all(&fresh);
    let out = out.with_context(|| format!("cannot run {}", harness.display()))?;
    if !out.status.success() {
        bail!(
            "`{} docs {FROM_CODE_OPTION} '{name}'` failed: {}",
            harness.display(),
            String::from_utf8_lossy(&out.stderr).trim()
        );
    }
    String::from_utf8(out.stdout).context("a figure that is not UTF-8")
}

/// The source of static figures: `<!-- figure: sass ID,ID from code -->`,
/// `<!-- figure: resources ID,ID from code -->`, `banks ID,ID`, `coalescing ID,ID`,
/// `estimate ID,ID`.
pub const FROM_CODE: &str = "code";

/// The architecture static SASS figures are compiled for: the H100's.
const SASS_ARCH: &str = "sm_90";
/// Those of the resource figures: the A100's and the H100's.
const RESOURCE_ARCHS: [&str; 2] = ["sm_80", "sm_90"];

/// A static figure: `sass ID[,ID...]`, the whole-function SASS counts of each rung's kernels
/// on sm_90 (`sass::Summary`, the columns of `harness inspect --sass`), or `resources
/// ID[,ID...]`, registers, shared memory, spills and occupancy on sm_80 and sm_90 (the
/// ptxas report of `harness inspect`); both compiled at the shape `harness inspect` uses.
/// `banks ID[,ID...]`, `coalescing ID[,ID...]` and `estimate ID[,ID...]` are those sections
/// of `harness explain`: the simulator's bank counts, its counts of how global accesses
/// coalesce, and the speed-of-light estimate on an H100.
pub fn from_code(name: &str) -> Result<String> {
    let (kind, ids) = match name.split_whitespace().collect::<Vec<_>>()[..] {
        [
            kind @ ("sass" | "resources" | "banks" | "coalescing" | "estimate"),
            ids,
        ] => (kind, ids),
        _ => bail!(
            "a figure from code is `sass ID[,ID...]`, `resources ID[,ID...]`, `banks \
             ID[,ID...]`, `coalescing ID[,ID...]` or `estimate ID[,ID...]`"
        ),
    };
    let all = registry::all();
    let kernels = ids
        .split(',')
        .map(|id| registry::find(&all, id))
        .collect::<Result<Vec<_>>>()?;
    // The simulator counts a rung beside others at one shape of one workload.
    if matches!(kind, "banks" | "coalescing")
        && let Some(other) = kernels
            .iter()
            .find(|k| k.info().workload != kernels[0].info().workload)
    {
        bail!(
            "a `{kind}` figure counts kernels of one workload at one shape: {} is {}, {} is {}",
            kernels[0].info().id,
            kernels[0].info().workload,
            other.info().id,
            other.info().workload
        );
    }
    match kind {
        "banks" => {
            return Ok(format!(
                "\nThe simulator's bank counts of `harness explain`, generated by `harness docs \
                 --figures`. {}",
                explain::banks_markdown(&all, &kernels)
            ));
        }
        "coalescing" => {
            return Ok(format!(
                "\nThe simulator's coalescing counts of `harness explain`, generated by `harness \
                 docs --figures`. {}",
                explain::coalescing_markdown(&all, &kernels)
            ));
        }
        "estimate" => return Ok(estimates(&all, &kernels)),
        _ => {}
    }
    // One plan per rung and inspect shape, labelled by the shape where there are several
    // (attention at D = 64 and 128).
    let mut plans = Vec::new();
    for k in &kernels {
        let id = k.info().id;
        for (label, shape) in crate::cmd::inspect::inspect_shapes_of(*k) {
            let plan = k
                .cuda(&shape)
                .ok_or_else(|| anyhow!("{id} has no CUDA source"))?;
            let id = if label.is_empty() {
                format!("`{id}`")
            } else {
                format!("`{id}` {label}")
            };
            plans.push((id, plan));
        }
    }
    let mut head = vec!["kernel".to_string(), "entry".to_string()];
    let mut rows = Vec::new();
    let caption = if kind == "sass" {
        let tool = sass::Disassembler::find()?;
        head.extend(sass::Summary::header().split_whitespace().map(String::from));
        for (id, plan) in &plans {
            for l in sass::of_plan(&tool, plan, SASS_ARCH)? {
                let mut cells = vec![id.clone(), format!("`{}`", l.entry)];
                cells.extend(
                    l.function
                        .summary
                        .row()
                        .split_whitespace()
                        .map(String::from),
                );
                rows.push(cells);
            }
        }
        format!(
            "Whole-function SASS counts on {SASS_ARCH} from NVRTC and nvdisasm (`harness inspect \
             --sass`; LDG.RO: read-only loads, LDGSTS: cp.async, LD/ST: generic, LDL/STL: local \
             memory)"
        )
    } else {
        head.extend(
            [
                "arch",
                "threads",
                "regs",
                "smem B",
                "spill st/ld",
                "occupancy",
            ]
            .map(String::from),
        );
        for (id, plan) in &plans {
            for arch in RESOURCE_ARCHS {
                let list = match crate::resources::of_plan(plan, arch, None) {
                    // An sm_90a-only rung has no code for sm_80: no row, not an error.
                    Err(kernel::DeviceError::Unsupported(_)) => continue,
                    other => other?,
                };
                for r in list {
                    let mut row = vec![id.clone(), format!("`{}`", r.entry)];
                    row.extend(r.cells());
                    rows.push(row);
                }
            }
        }
        "Registers, shared memory (static and dynamic) per block, spills and theoretical \
         occupancy with the limit that binds it, from NVRTC's ptxas report (`harness inspect`)"
            .to_string()
    };
    // Kernel, entry (and arch) are text, the rest counts.
    let text_columns = if kind == "sass" { 2 } else { 3 };
    let mut table = format!(
        "| {} |\n|{}|\n",
        head.join(" | "),
        (0..head.len())
            .map(|i| if i < text_columns { "---" } else { "---:" })
            .collect::<Vec<_>>()
            .join("|")
    );
    for r in rows {
        let _ = writeln!(table, "| {} |", r.join(" | "));
    }
    Ok(format!(
        "\n{caption}, generated by `harness docs --figures`.\n\n{table}"
    ))
}

/// The `estimate` figure: a line per rung, its estimate and the ceiling that binds it.
fn estimates(all: &[Box<dyn kernel::Kernel>], kernels: &[&dyn kernel::Kernel]) -> String {
    let mut table = "| kernel | shape | bound by | estimate ms |\n|---|---|---|---:|\n".to_string();
    for k in kernels {
        let (shape, sol) = explain::estimate_of(all, *k);
        let _ = writeln!(
            table,
            "| `{}` | {shape} | {} | {:.4} |",
            k.info().id,
            sol.bound,
            sol.ms
        );
    }
    format!(
        "\nThe speed of light on an H100 SXM of `harness explain` (each rung's hot loop in its \
         sm_90 SASS, or for a rung without multiply-adds each of its launches, against the \
         H100's ceilings, shared memory in wavefronts with the simulator's bank conflicts, \
         global loads and stores in the cache lines the simulator's warps touched), generated \
         by `harness docs --figures`.\n\n{table}"
    )
}

/// The walkthroughs that may hold figures: the top README, each crate's README and the
/// Markdown pages under `docs/`, relative to `root`, sorted.
pub fn walkthroughs(root: &Path) -> Result<Vec<PathBuf>> {
    let mut files = vec![root.join("README.md")];
    let entries =
        std::fs::read_dir(root).with_context(|| format!("cannot read {}", root.display()))?;
    for e in entries {
        let e = e?;
        // Hidden folders (tools' caches) and build output hold no walkthroughs.
        let name = e.file_name();
        let name = name.to_string_lossy();
        if name.starts_with('.') || name == "target" {
            continue;
        }
        let readme = e.path().join("README.md");
        if readme.is_file() {
            files.push(readme);
        }
    }
    let mut dirs = vec![root.join("docs")];
    while let Some(d) = dirs.pop() {
        let Ok(entries) = std::fs::read_dir(&d) else {
            continue;
        };
        for e in entries {
            let p = e?.path();
            if p.is_dir() {
                dirs.push(p);
            } else if p.extension().is_some_and(|x| x == "md") {
                files.push(p);
            }
        }
    }
    files.sort();
    Ok(files)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The published CPU run and its folder.
    fn published_cpu_run() -> (&'static str, RunResults) {
        let folder = "results/cpu-intel-r-xeon-r-processor-2-threads";
        let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
        (folder, RunResults::load(&root.join(folder)).unwrap())
    }

    /// The simulator counts a figure's kernels at one shape of one workload: a figure mixing
    /// workloads is refused, naming both, not run at a shape one of them cannot take. An
    /// estimate beside a run's medians needs a GPU run.
    #[test]
    fn figures_that_cannot_be_drawn_say_why() {
        let e = from_code("coalescing layernorm-naive,softmax-naive").unwrap_err();
        assert!(
            e.to_string()
                .contains("layernorm-naive is layernorm, softmax-naive is softmax"),
            "{e}"
        );
        let (folder, run) = published_cpu_run();
        let e = render("estimate gemm-naive", &run, folder).unwrap_err();
        assert!(e.to_string().contains("is not a GPU run"), "{e}");
    }

    /// A figure with the reference row the drift was measured on says how far the machine
    /// drifted over the shape; one without it does not (its rows' `% of ref` are not shown
    /// against that row).
    #[test]
    fn a_figure_with_the_drifting_reference_row_carries_the_drift() {
        let (folder, run) = published_cpu_run();
        let shape = &run.workloads[0].shapes[0];
        let before = shape
            .reference_before
            .as_ref()
            .expect("the published CPU run has one");
        let name = format!("gemm {}", shape.label);
        let whole = render(&name, &run, folder).unwrap();
        assert!(
            whole.contains(&format!("Drift: `{}` took", before.id)),
            "{whole}"
        );
        let with_ref = render(&format!("{name} gemm-naive,{}", before.id), &run, folder).unwrap();
        assert!(with_ref.contains("Drift:"), "{with_ref}");
        let rungs = render(&format!("{name} gemm-naive,gemm-tiled"), &run, folder).unwrap();
        assert!(!rungs.contains("Drift:"), "{rungs}");
    }
}
