//! `harness explain RUNG`: one rung against its parent, from the code and the compiler rather
//! than from prose: the declared idea and bound, the source diff, registers, shared memory,
//! spills and occupancy on sm_80 and sm_90, the SASS instruction mix, and the latest
//! measured row. `--markdown` prints the same as Markdown (what `harness docs` writes).

mod speed_of_light;

use super::Outcome;
use super::inspect::inspect_shapes_of;
use crate::config::Config;
use crate::memo::Memo;
use crate::report::model::ShapeReport;
use crate::report::table::Col;
use crate::results::{RunResults, Status};
use crate::runs::LabDir;
use crate::user_kernel::{self, UserKernel};
use crate::{registry, resources, run, sass, select, sol};
use kernel::cuda::nvrtc;
use kernel::{
    Coalescing, CudaPlan, Executor, Kernel, KernelAccesses, Role, Shape, SharedBanks, Workload,
};
use speed_of_light::speed_of_light;
pub use speed_of_light::{Sol, bank_factors, estimate_of, estimates_against};
use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::PathBuf;

#[derive(clap::Args)]
pub struct Args {
    /// The rung's id (see `harness list`).
    #[arg(required_unless_present = "kernel", conflicts_with = "kernel")]
    pub rung: Option<String>,
    /// Your kernel instead of a rung, as for `run --kernel`: explained as a rung is, beside
    /// the rung `--against` names.
    #[arg(long)]
    pub kernel: Option<String>,
    /// The kernel it is set beside (diff, resources, SASS, banks): a rung's id; default: the
    /// rung's parent, for your kernel the rung its `against=` names, if any.
    #[arg(long)]
    pub against: Option<String>,
    /// The workload your kernel computes, when neither its options nor `--against` say it.
    #[arg(long)]
    pub workload: Option<String>,
    /// Shapes to count shared-memory banks at in the simulator before its own (comma
    /// separated, as `run --sizes` takes them): for a kernel that assumes sizes the
    /// simulator's shapes lack.
    #[arg(long, value_delimiter = ',')]
    pub sizes: Vec<String>,
    /// Print Markdown instead of plain text.
    #[arg(long)]
    pub markdown: bool,
    /// The run folder whose row is shown; default: the lab's latest run, if any.
    #[arg(long)]
    pub run: Option<PathBuf>,
}

/// The architectures whose resources are compared: the A100's and the H100's.
pub const ARCHS: [&str; 2] = ["sm_80", "sm_90"];

pub fn run(args: &Args) -> Outcome {
    let all = registry::all();
    let against = args
        .against
        .as_deref()
        .map(|id| registry::find(&all, id))
        .transpose()?;
    let user = match &args.kernel {
        Some(spec) => {
            let specs = user_kernel::specs(&[], std::slice::from_ref(spec))?;
            // Its workload: `--workload`, else its options', else the rung's it is set beside.
            let own = specs[0].workload.or_else(|| {
                let name = specs[0].signature.as_deref()?;
                Some(user_kernel::signature::Signature::named(name)?.workload)
            });
            let workload = match (&args.workload, own) {
                (Some(w), _) => Some(w.clone()),
                (None, Some(_)) => None,
                (None, None) => against.map(|a| a.info().workload.name().to_string()),
            };
            // Launched as on the H100 the estimate models: `SMS` is its SM count.
            let sms = sol::h100::SMS as usize;
            let workloads = Vec::from_iter(workload);
            let mut users = user_kernel::load_all_for(&specs, &workloads, &args.sizes, false, sms)?;
            users.pop()
        }
        None => None,
    };
    // Your file as you wrote it, where the plan's source is the unit that includes it.
    let shown = user.as_ref().map(UserKernel::as_written).transpose()?;
    let (k, parent) = match (&user, &args.rung) {
        (Some(u), _) => {
            if let Some(a) = against.filter(|a| a.info().workload != u.workload) {
                anyhow::bail!(
                    "your kernel computes {}, and {} is a rung of {}: set it beside a rung of \
                     {} (`harness list` names them)",
                    u.workload,
                    a.info().id,
                    a.info().workload,
                    u.workload
                );
            }
            (
                u as &dyn Kernel,
                against.or_else(|| registry::parent(&all, u)),
            )
        }
        (None, Some(rung)) => {
            let k = registry::find(&all, rung)?;
            if let Some(a) = against.filter(|a| a.info().workload != k.info().workload) {
                anyhow::bail!(
                    "{} is a rung of {}, and {} of {}: set it beside a rung of {} (`harness \
                     list` names them)",
                    k.info().id,
                    k.info().workload,
                    a.info().id,
                    a.info().workload,
                    k.info().workload
                );
            }
            (k, against.or_else(|| registry::parent(&all, k)))
        }
        (None, None) => anyhow::bail!("name a rung, or your kernel with --kernel"),
    };
    if user.is_none() && args.workload.is_some() {
        anyhow::bail!("--workload is for your kernel (--kernel): a rung's is its own");
    }
    let run = match &args.run {
        Some(p) => Some(RunResults::load(p)?),
        None => latest_run_with(&k.info().id),
    };
    let sizes = args
        .sizes
        .iter()
        .map(|s| {
            let shape = Shape::parse(k.info().workload, s)?;
            shape.validate()?;
            Ok(shape)
        })
        .collect::<anyhow::Result<Vec<Shape>>>()?;
    let doc = explain_beside(
        &all,
        k,
        parent,
        shown.as_deref(),
        BankSizes {
            shapes: &sizes,
            from: "given with --sizes",
        },
        run.as_ref(),
        args.run.is_none(),
    );
    print!(
        "{}",
        if args.markdown {
            doc.markdown()
        } else {
            doc.text()
        }
    );
    Ok(true)
}

/// The lab's latest run with a row of `id` (run folders are named by their start, so the
/// newest sorts last), else its latest run, if one reads.
fn latest_run_with(id: &str) -> Option<RunResults> {
    let runs = LabDir::locate().runs();
    let mut folders: Vec<std::path::PathBuf> = std::fs::read_dir(&runs)
        .ok()?
        .flatten()
        .map(|e| e.path())
        .filter(|p| {
            p.file_name()
                .is_some_and(|n| n != "latest" && !n.to_string_lossy().contains("-unfinished"))
        })
        .collect();
    folders.sort();
    let has_row = |r: &RunResults| {
        r.workloads
            .iter()
            .flat_map(|w| &w.shapes)
            .any(|s| s.rows.iter().any(|row| row.id == id))
    };
    let found = folders
        .iter()
        .rev()
        .filter_map(|f| RunResults::load(f).ok())
        .find(has_row);
    if found.is_some() {
        return found;
    }
    // A latest run that is there but does not read is said, not passed off as no run.
    let latest = runs.join("latest");
    match RunResults::load(&latest) {
        Ok(run) => Some(run),
        Err(e) => {
            if latest.exists() {
                eprintln!("note: the lab's latest run does not read, so no figures: {e:#}");
            }
            None
        }
    }
}

/// A document of titled sections, printed as plain text or as Markdown.
#[derive(Debug, Default)]
pub struct Doc {
    pub title: String,
    pub sections: Vec<(String, Vec<Block>)>,
}

#[derive(Debug)]
pub enum Block {
    Text(String),
    /// Preformatted text with its Markdown language (`diff`, `text`).
    Code(&'static str, String),
    Table(Vec<String>, Vec<Vec<String>>),
}

impl Doc {
    fn section(&mut self, title: &str, blocks: Vec<Block>) {
        self.sections.push((title.to_string(), blocks));
    }

    /// The titles of the sections, in order.
    pub fn titles(&self) -> Vec<&str> {
        self.sections.iter().map(|(t, _)| t.as_str()).collect()
    }

    pub fn text(&self) -> String {
        let mut s = format!("{}\n{}\n", self.title, "=".repeat(self.title.len()));
        for (title, blocks) in &self.sections {
            let _ = writeln!(s, "\n== {title}");
            for b in blocks {
                match b {
                    Block::Text(t) => {
                        let _ = writeln!(s, "{t}");
                    }
                    Block::Code(_, c) => {
                        s.push_str(c);
                        if !c.ends_with('\n') {
                            s.push('\n');
                        }
                    }
                    Block::Table(head, rows) => {
                        s.push_str(&crate::console::aligned(head, rows, |_| false))
                    }
                }
            }
        }
        s
    }

    pub fn markdown(&self) -> String {
        let mut s = format!("### {}\n", self.title);
        for (title, blocks) in &self.sections {
            let _ = writeln!(s, "\n#### {title}\n");
            s.push_str(&markdown(blocks));
        }
        s
    }
}

/// Blocks as Markdown, each followed by a blank line.
fn markdown(blocks: &[Block]) -> String {
    let mut s = String::new();
    for b in blocks {
        match b {
            Block::Text(t) => {
                let _ = writeln!(s, "{t}\n");
            }
            Block::Code(lang, c) => {
                let _ = writeln!(s, "```{lang}\n{}\n```\n", c.trim_end());
            }
            Block::Table(head, rows) => {
                let _ = writeln!(s, "| {} |", head.join(" | "));
                let _ = writeln!(s, "|{}", "---|".repeat(head.len()));
                for r in rows {
                    let _ = writeln!(s, "| {} |", r.join(" | "));
                }
                s.push('\n');
            }
        }
    }
    s
}

/// The shape, with its label, that `k`'s document compiles and estimates it at: the first of
/// its inspect shapes it accepts (a user's kernel may decline some), else the first.
pub fn shape_of(k: &dyn Kernel) -> (&'static str, Shape) {
    let shapes = inspect_shapes_of(k);
    shapes
        .iter()
        .find(|(_, s)| k.supports(s).is_ok())
        .or(shapes.first())
        .copied()
        .expect("every workload has an inspect shape")
}

/// The title of `k`'s document: `gemm-tiled (gemm rung 02, baseline crate)`.
pub fn title(k: &dyn Kernel) -> String {
    let i = k.info();
    match i.role {
        Role::User => format!("{} (your {} kernel)", i.id, i.workload),
        // Its number only orders it among the references; it is no rung of the ladder.
        Role::Reference | Role::Peer => format!(
            "{} ({} {}, {} crate)",
            i.id,
            i.workload,
            i.role.name(),
            i.stage
        ),
        Role::Rung => format!(
            "{} ({} rung {:02}, {} crate)",
            i.id, i.workload, i.rung, i.stage
        ),
    }
}

/// Everything `explain` says of `k`: its lineage, its source against its parent's, their
/// resources and SASS, and its rows in `run` (`latest`: that run is the lab's latest).
pub fn explain(
    all: &[Box<dyn Kernel>],
    k: &dyn Kernel,
    run: Option<&RunResults>,
    latest: bool,
) -> Doc {
    let sizes = BankSizes::default();
    explain_beside(all, k, registry::parent(all, k), None, sizes, run, latest)
}

/// Shapes the bank section counts at before the simulator's own, and where they come from,
/// in words.
#[derive(Debug, Clone, Copy, Default)]
pub struct BankSizes<'a> {
    pub shapes: &'a [Shape],
    pub from: &'a str,
}

/// [`explain`] with `parent` in the parent's place: the rung's own, another rung, or the rung
/// a user's kernel is set beside. `shown`: the source the diff shows for `k` where it is not
/// its plan's (a user's file, which the plan's unit includes). `sizes`: where to count banks
/// first.
pub fn explain_beside(
    all: &[Box<dyn Kernel>],
    k: &dyn Kernel,
    parent: Option<&dyn Kernel>,
    shown: Option<&str>,
    sizes: BankSizes,
    run: Option<&RunResults>,
    latest: bool,
) -> Doc {
    let i = k.info();
    let mut doc = from_sources(k, parent, shown);
    let (label, shape) = shape_of(k);
    let plan = plan_of(k, &shape);
    let parent_plan = parent.and_then(|p| plan_of(p, &shape));
    let at = if label.is_empty() {
        format!("compiled for the shape {shape}")
    } else {
        format!("compiled for the shape {shape} ({label})")
    };
    let mut both = vec![(i.id.to_string(), plan)];
    if let Some(p) = parent {
        both.push((p.info().id.to_string(), parent_plan));
    }
    doc.section("Resources", resources_of(&both, &at));
    doc.section("SASS instruction mix", sass_of(&both, &at));
    let mut kernels = vec![k];
    kernels.extend(parent);
    let banks = bank_counts(all, &kernels, sizes.shapes);
    doc.section(BANKS, banks_of(&banks, sizes));
    doc.section(COALESCING, coalescing_of(&banks));
    let counted = match banks {
        Counted::Rows(shape, rows, _) => {
            rows.into_iter().next().map(|(_, b)| b.map(|c| c.at(shape)))
        }
        Counted::Not(why) => Some(Err(why)),
    };
    doc.section(
        "Speed of light on an H100",
        speed_of_light(k, &shape, both[0].1.as_ref(), counted.as_ref(), run),
    );
    doc.section("Measured", measured(k, run, latest));
    doc
}

/// The first sections of [`explain_beside`]'s document, those the code alone decides: the
/// lineage and the source diff against `parent`. A ladder page holds them as they are until a
/// source or a lineage changes, whatever the compiler gives.
pub fn from_sources(k: &dyn Kernel, parent: Option<&dyn Kernel>, shown: Option<&str>) -> Doc {
    let mut doc = Doc {
        title: title(k),
        ..Doc::default()
    };
    doc.section("Lineage", lineage(k, parent));
    let shape = shape_of(k).1;
    let (plan, parent_plan) = (plan_of(k, &shape), parent.and_then(|p| plan_of(p, &shape)));
    doc.section(
        &diff_title(k, parent),
        diff(k, parent, &plan, &parent_plan, shown),
    );
    doc
}

/// The title of the source section: what the diff is taken against, the declared parent or
/// the kernel `--against` set beside it, or "Source" where there is none.
pub fn diff_title(k: &dyn Kernel, parent: Option<&dyn Kernel>) -> String {
    let declared = k.lineage().and_then(|l| l.parent);
    match parent {
        Some(p) if Some(p.info().id.as_ref()) == declared && k.info().role != Role::User => {
            DIFF.to_string()
        }
        Some(p) => format!("Source diff against {}", p.info().id),
        None => "Source".to_string(),
    }
}

pub fn plan_of(k: &dyn Kernel, shape: &Shape) -> Option<CudaPlan> {
    k.cuda(shape).filter(|p| p.launches().next().is_some())
}

pub fn lineage(k: &dyn Kernel, parent: Option<&dyn Kernel>) -> Vec<Block> {
    let i = k.info();
    let mut out = vec![Block::Text(format!("Summary: {}", i.summary))];
    let declared = k.lineage().and_then(|l| l.parent);
    // A kernel set beside one that is not its declared parent (`--against`).
    let beside = parent.filter(|p| Some(p.info().id.as_ref()) != declared);
    match k.lineage() {
        // A user's kernel declares no idea: at most the rung its `against=` names.
        _ if i.role == Role::User => out.push(Block::Text(match (declared, parent) {
            (Some(_), Some(p)) if beside.is_none() => format!(
                "Your kernel, not a rung, set beside {} ({} rung {:02}) by its option \
                 `against=`, as a rung beside its parent: the tables show it `vs parent`. {}: {}",
                p.info().id,
                p.info().workload,
                p.info().rung,
                p.info().id,
                p.info().summary
            ),
            (Some(d), _) => format!(
                "Your kernel, not a rung; its option `against={d}` sets it beside that rung."
            ),
            (None, _) => "Your kernel, not a rung: no parent, idea or bound is declared.".into(),
        })),
        Some(l) if beside.is_none() => {
            out.push(Block::Text(format!("Idea: {}", l.idea)));
            out.push(Block::Text(format!(
                "Bound attacked: {}",
                l.bound
                    .map_or("none (see the idea)".to_string(), |b| b.to_string())
            )));
            out.push(Block::Text(match (l.parent, parent) {
                (None, _) => "Parent: none, the first rung of its ladder".to_string(),
                (Some(_), Some(p)) => format!(
                    "Parent: {} ({} rung {:02}): {}",
                    p.info().id,
                    p.info().workload,
                    p.info().rung,
                    p.info().summary
                ),
                (Some(id), None) => format!("Parent: {id} (not in this build's registry)"),
            }));
        }
        Some(l) => out.push(Block::Text(format!(
            "Idea: {} (its parent is {}).",
            l.idea,
            l.parent.unwrap_or("none: the first rung of its ladder")
        ))),
        None => out.push(Block::Text(format!(
            "Not a rung ({:?}): no parent, idea or bound is declared.",
            i.role
        ))),
    }
    if let Some(p) = beside {
        let pi = p.info();
        out.push(Block::Text(format!(
            "Set beside: {} ({} rung {:02}): {}",
            pi.id, pi.workload, pi.rung, pi.summary
        )));
    }
    out
}

/// The distinct sources of a plan, concatenated, each preceded by its file name.
fn source_text(plan: &CudaPlan) -> String {
    let mut s = String::new();
    for src in plan.sources() {
        let _ = writeln!(s, "// file: {}", src.file);
        for (name, value) in &src.defines {
            let _ = writeln!(s, "// -D {name}={value}");
        }
        s.push_str(&src.code);
        if !s.ends_with('\n') {
            s.push('\n');
        }
    }
    s
}

/// The launches of a plan, one line each (entry, grid, block, dynamic shared memory), the
/// repeated launches of a chunked pipeline counted once.
fn launch_text(plan: &CudaPlan) -> String {
    let mut lines: Vec<String> = Vec::new();
    for l in plan.launches() {
        let line = format!(
            "{} grid {:?} block {:?} dynamic smem {} B",
            plan.written_entry(&l.entry),
            l.grid,
            l.block,
            l.dynamic_smem
        );
        if !lines.contains(&line) {
            lines.push(line);
        }
    }
    lines.join("\n") + "\n"
}

fn unified(old: &str, new: &str, old_name: &str, new_name: &str) -> String {
    similar::TextDiff::from_lines(old, new)
        .unified_diff()
        .context_radius(3)
        .header(old_name, new_name)
        .to_string()
}

pub fn diff(
    k: &dyn Kernel,
    parent: Option<&dyn Kernel>,
    plan: &Option<CudaPlan>,
    parent_plan: &Option<CudaPlan>,
    shown: Option<&str>,
) -> Vec<Block> {
    let Some(plan) = plan else {
        return vec![Block::Text(
            "No CUDA source: this row runs on the CPU only or calls a library (cuBLAS), so \
             there is no .cu to diff."
                .into(),
        )];
    };
    let files = plan
        .sources()
        .iter()
        .map(|s| s.file.to_string())
        .collect::<Vec<_>>()
        .join(", ");
    let (Some(p), Some(pp)) = (parent, parent_plan) else {
        let why = match (parent, k.info().role) {
            (Some(_), _) => "its parent has no CUDA source",
            (None, Role::User) => "`--against RUNG` sets it beside a rung of the lab",
            (None, _) => "it has no parent",
        };
        return vec![Block::Text(format!("Source: {files}; no diff, {why}."))];
    };
    let id = k.info().id;
    let pid = p.info().id;
    let mut out = vec![Block::Text(format!(
        "{pid} -> {id}: the .cu sources (with their -D defines), then the launches of the plan."
    ))];
    let src = unified(
        &source_text(pp),
        &shown.map_or_else(|| source_text(plan), str::to_string),
        pid.as_ref(),
        id.as_ref(),
    );
    out.push(if src.is_empty() {
        Block::Text("The sources are identical.".into())
    } else {
        Block::Code("diff", src)
    });
    let (old, new) = (launch_text(pp), launch_text(plan));
    out.push(if old == new {
        Block::Text(format!("Launch plan unchanged:\n{}", new.trim_end()))
    } else {
        Block::Code(
            "diff",
            unified(
                &old,
                &new,
                &format!("{pid} launches"),
                &format!("{id} launches"),
            ),
        )
    });
    out
}

fn resources_of(both: &[(String, Option<CudaPlan>)], at: &str) -> Vec<Block> {
    if both[0].1.is_none() {
        return vec![Block::Text(
            "No CUDA source: nothing to compile, so no registers or occupancy.".into(),
        )];
    }
    if let Err(e) = nvrtc::version() {
        return vec![Block::Text(format!(
            "NVRTC is not available, so nothing was compiled: {e}"
        ))];
    }
    let head = [
        "kernel",
        "entry",
        "arch",
        "threads",
        "registers",
        "smem B",
        "spill st/ld B",
        "occupancy",
    ]
    .map(String::from)
    .to_vec();
    let mut rows = Vec::new();
    let mut notes = Vec::new();
    for (id, plan) in both {
        let Some(plan) = plan else {
            notes.push(format!("{id}: no CUDA source."));
            continue;
        };
        for arch in ARCHS {
            if let Err(why) = nvrtc::check_target(plan, arch) {
                notes.push(format!("{id} on {arch}: skipped: {why}"));
                continue;
            }
            match resources::of_plan(plan, arch, None) {
                Ok(list) => rows.extend(list.into_iter().map(|r| {
                    let entry = plan.written_entry(&r.entry);
                    // What ptxas compiled knowing it costs speed, said only in its report.
                    notes.extend(
                        r.advisories
                            .iter()
                            .map(|a| format!("{id} ({entry}) on {}: ptxas: {a}", r.arch)),
                    );
                    let mut row = vec![id.clone(), entry.to_string()];
                    row.extend(r.cells());
                    row
                })),
                Err(e) => notes.push(format!("{id} on {arch}: {e}")),
            }
        }
    }
    let mut out = vec![Block::Text(format!(
        "NVRTC's ptxas report, {at}; occupancy is theoretical, with the limit that binds it."
    ))];
    out.push(Block::Table(head, rows));
    out.extend(notes.into_iter().map(Block::Text));
    out
}

fn sass_of(both: &[(String, Option<CudaPlan>)], at: &str) -> Vec<Block> {
    if both[0].1.is_none() {
        return vec![Block::Text("No CUDA source: no SASS.".into())];
    }
    let tool = match sass::Disassembler::find() {
        Ok(t) => t,
        Err(e) => {
            return vec![Block::Text(format!("No SASS: nvdisasm is missing ({e})."))];
        }
    };
    let mut head = vec!["kernel".to_string(), "entry".into(), "arch".into()];
    head.extend(sass::Summary::header().split_whitespace().map(String::from));
    let mut rows = Vec::new();
    let mut notes = Vec::new();
    for (id, plan) in both {
        let Some(plan) = plan else { continue };
        // The H100's architecture, or the one the source is built for (sm_90a).
        let arch = "sm_90";
        match sass::of_plan(&tool, plan, arch) {
            Ok(list) => rows.extend(list.into_iter().map(|l| {
                let mut r = vec![id.clone(), plan.written_entry(&l.entry).to_string(), l.arch];
                r.extend(
                    l.function
                        .summary
                        .row()
                        .split_whitespace()
                        .map(String::from),
                );
                r
            })),
            Err(e) => notes.push(format!("{id}: {e}")),
        }
    }
    let mut out = vec![Block::Text(format!(
        "Whole-function counts from nvdisasm on the NVRTC CUBIN, {at}, instructions \
         predicated off with @!PT excluded (LDG.RO: read-only loads; LDGSTS: cp.async; \
         LD/ST: generic; LDL/STL: local memory)."
    ))];
    out.push(Block::Table(head, rows));
    out.extend(notes.into_iter().map(Block::Text));
    out
}

/// The source section's title where the diff is against the rung's own parent.
pub const DIFF: &str = "Source diff against the parent";
/// The section of the simulator's bank counts.
pub const BANKS: &str = "Shared-memory banks in the simulator";
pub const COALESCING: &str = "Global coalescing in the simulator";

/// The simulator's bank counts of a rung and its parent, or why there are none.
enum Counted {
    /// The shape they ran at, then per kernel (the rung first) its id and its counts, or why
    /// the simulator has none; last, the larger shapes passed over because the first kernel
    /// fails there, each with the reason.
    Rows(
        Shape,
        Vec<(String, Result<SimCounts, String>)>,
        Vec<(Shape, String)>,
    ),
    Not(String),
}

/// The bank model's counts for `kernels` (the rung, then its parent) at the workload's
/// largest simulator shape: the one `tools/gpu-check.sh` profiles with Nsight Compute, so
/// that the two can be set side by side. Where the first kernel fails there (a user's kernel
/// that assumes sizes the shape does not have), at the next shape they all accept. The shapes
/// of `first` that the first kernel accepts are tried before all of them.
fn bank_counts(all: &[Box<dyn Kernel>], kernels: &[&dyn Kernel], first: &[Shape]) -> Counted {
    let w = kernels[0].info().workload;
    if w.is_network() {
        return Counted::Not(
            "a network's layers are rungs of their own ladders: their pages count their banks"
                .into(),
        );
    }
    let config = Config::defaults();
    let mut shapes: Vec<Shape> = first
        .iter()
        .filter(|s| kernels[0].supports(s).is_ok())
        .copied()
        .collect();
    for s in bank_shapes(&config, kernels) {
        if !shapes.contains(&s) {
            shapes.push(s);
        }
    }
    if shapes.is_empty() {
        return Counted::Not(format!("no simulator shape for {w}"));
    }
    let dev = match select::simulator(None) {
        Ok(d) => d,
        Err(e) => return Counted::Not(format!("no simulator: {e}")),
    };
    // Each kernel as a simulator run has it: a user's kernel with the simulator's `SMS` (a
    // cooperative grid of 2*SMS blocks at an H100's 132 is more than the simulator keeps
    // resident).
    let configured: Vec<Option<Box<dyn Kernel>>> = kernels
        .iter()
        .map(|k| match k.info().role {
            Role::User => k.for_device(dev.info()),
            _ => None,
        })
        .collect();
    let kernels: Vec<&dyn Kernel> = kernels
        .iter()
        .zip(&configured)
        .map(|(k, c)| c.as_deref().unwrap_or(*k))
        .collect();
    // Once per process: a rung is counted again as the parent of the next (`explain` of
    // every rung, `docs`), and the simulator's counts do not change from run to run.
    // With the row's status: only a kernel that ran and failed is tried at another shape.
    static COUNTED: Memo<(String, String), (Status, Result<SimCounts, String>)> = Memo::new();
    let count = |k: &dyn Kernel, shape: &Shape| {
        COUNTED.get_or((k.info().id.to_string(), shape.to_string()), || {
            let row = run::evaluate_alone(&dev, all, k, shape, &config);
            let kernels = row.kernel_accesses.clone();
            let counts = row
                .banks
                .zip(row.coalescing)
                .filter(|_| row.passed())
                .map(|(banks, global)| SimCounts {
                    banks,
                    global,
                    kernels,
                })
                .ok_or_else(|| {
                    row.reason
                        .clone()
                        .unwrap_or_else(|| "the simulator counted nothing".into())
                });
            (row.status, counts)
        })
    };
    let mut failed = Vec::new();
    let mut shape = shapes[0];
    for (i, s) in shapes.iter().enumerate() {
        shape = *s;
        match count(kernels[0], s) {
            (Status::Failed, Err(why)) if i + 1 < shapes.len() => failed.push((*s, why)),
            _ => break,
        }
    }
    let rows = kernels
        .iter()
        .map(|k| (k.info().id.to_string(), count(*k, &shape).1))
        .collect();
    Counted::Rows(shape, rows, failed)
}

/// The shape the bank section counts `kernels` (of one workload) at: the workload's largest
/// simulator shape, which `tools/gpu-check.sh` profiles, unless one of them declines it; then
/// the largest they all accept, else the largest the first (the rung) accepts.
fn bank_shape(config: &Config, kernels: &[&dyn Kernel]) -> Option<Shape> {
    bank_shapes(config, kernels).into_iter().next()
}

/// [`bank_shape`] first, then the other shapes to try where the first kernel fails there:
/// those all the kernels accept, then those the first accepts, each largest first.
fn bank_shapes(config: &Config, kernels: &[&dyn Kernel]) -> Vec<Shape> {
    let Some(first) = kernels.first() else {
        return Vec::new();
    };
    let mut shapes = config.shapes(first.info().workload, "sim");
    shapes.sort_by(|a, b| b.cmp_size(a));
    let accepted = |ks: &[&dyn Kernel]| -> Vec<Shape> {
        shapes
            .iter()
            .filter(|s| ks.iter().all(|k| k.supports(s).is_ok()))
            .cloned()
            .collect()
    };
    let mut out = accepted(kernels);
    for s in accepted(&kernels[..1]) {
        if !out.contains(&s) {
            out.push(s);
        }
    }
    if out.is_empty() {
        out = shapes;
    }
    out
}

/// The largest simulator shape of `w`: the one `tools/gpu-check.sh` profiles with Nsight
/// Compute.
fn profiled_shape(config: &Config, w: Workload) -> Option<Shape> {
    config
        .shapes(w, "sim")
        .into_iter()
        .max_by(|a, b| a.cmp_size(b))
}

/// Builds, on all cores, the simulator modules that the bank sections of `kernels` load, so
/// that explaining them one after another (`harness docs`, the tests) does not wait on the
/// host compiler one rung at a time.
pub fn prebuild(kernels: &[&dyn Kernel]) {
    let Ok(dev) = select::simulator(None) else {
        return;
    };
    let config = Config::defaults();
    // Each rung's section counts it with its parent, its estimate counts it alone.
    let all = registry::all();
    let mut shapes: BTreeMap<Workload, Vec<Shape>> = BTreeMap::new();
    for k in kernels.iter().filter(|k| !k.info().workload.is_network()) {
        let mut with_parent = vec![*k];
        with_parent.extend(registry::parent(&all, *k));
        for s in [
            bank_shape(&config, &[*k]),
            bank_shape(&config, &with_parent),
        ]
        .into_iter()
        .flatten()
        {
            let listed = shapes.entry(k.info().workload).or_default();
            if !listed.contains(&s) {
                listed.push(s);
            }
        }
    }
    run::Ablation {
        dev: &dev,
        config: &config,
        kernels: kernels.to_vec(),
        shapes: shapes.into_iter().collect(),
        timing: None,
        keep_unrunnable: false,
    }
    .precompile();
}

/// The section on banks for `kernels` of one workload, in Markdown (a walkthrough's figure).
pub fn banks_markdown(all: &[Box<dyn Kernel>], kernels: &[&dyn Kernel]) -> String {
    markdown(&banks_of(
        &bank_counts(all, kernels, &[]),
        BankSizes::default(),
    ))
}

/// What the simulator counted of one rung's accesses: shared memory's banks and how its
/// global loads and stores coalesce, in all and, where its plan runs several kernels, kernel
/// by kernel.
#[derive(Clone, Debug, PartialEq)]
pub struct SimCounts {
    pub banks: SharedBanks,
    pub global: Coalescing,
    pub kernels: Vec<KernelAccesses>,
}

impl SimCounts {
    fn at(self, shape: Shape) -> SimBanks {
        SimBanks {
            shape,
            banks: self.banks,
            global: self.global,
            kernels: self.kernels,
        }
    }

    /// The counts a table shows on a line each: the rung's, or, where its plan runs several
    /// kernels, each kernel's, named after the rung (`attn-naive: attn_scores`).
    fn parts(&self, id: &str) -> Vec<(String, SharedBanks, Coalescing)> {
        match self.kernels.as_slice() {
            [_, _, ..] => self
                .kernels
                .iter()
                .map(|k| (format!("{id}: {}", k.entry), k.shared, k.global))
                .collect(),
            _ => vec![(id.to_string(), self.banks, self.global)],
        }
    }
}

/// The section on coalescing for `kernels` of one workload, in Markdown (a walkthrough's
/// figure).
pub fn coalescing_markdown(all: &[Box<dyn Kernel>], kernels: &[&dyn Kernel]) -> String {
    markdown(&coalescing_of(&bank_counts(all, kernels, &[])))
}

/// The simulator's counts of a kernel and the shape it ran at.
#[derive(Clone, Debug, PartialEq)]
pub struct SimBanks {
    pub shape: Shape,
    pub banks: SharedBanks,
    pub global: Coalescing,
    /// Each kernel's counts, where the plan runs several.
    pub kernels: Vec<KernelAccesses>,
}

/// The simulator's bank counts of `k` alone, as its speed of light takes them.
pub fn simulator_banks(all: &[Box<dyn Kernel>], k: &dyn Kernel) -> Result<SimBanks, String> {
    match bank_counts(all, &[k], &[]) {
        Counted::Rows(shape, rows, _) => rows.into_iter().next().map_or_else(
            || Err("the simulator counted nothing".into()),
            |(_, b)| b.map(|c| c.at(shape)),
        ),
        Counted::Not(why) => Err(why),
    }
}

/// The section of [`bank_counts`]: a line per kernel and kind of instruction.
fn banks_of(counted: &Counted, sizes: BankSizes) -> Vec<Block> {
    let (shape, counts, failed) = match counted {
        Counted::Rows(shape, counts, failed) => (shape, counts, failed),
        Counted::Not(why) => return vec![Block::Text(format!("No bank counts: {why}."))],
    };
    let head = [
        "kernel",
        "instruction",
        "requests",
        "wavefronts",
        "ideal",
        "conflicts",
        "per request",
    ]
    .map(String::from)
    .to_vec();
    let mut rows = Vec::new();
    let mut notes = Vec::new();
    for (id, banks) in counts {
        let banks = match banks {
            Ok(b) => b,
            Err(why) => {
                notes.push(format!("{id}: {why}"));
                continue;
            }
        };
        let before = rows.len();
        for (name, shared, _) in banks.parts(id) {
            for (kind, c) in shared.kinds() {
                if c.requests == 0 {
                    continue;
                }
                rows.push(vec![
                    name.clone(),
                    kind.to_string(),
                    c.requests.to_string(),
                    c.wavefronts.to_string(),
                    c.ideal.to_string(),
                    c.conflicts().to_string(),
                    format!("{:.2}", c.conflicts() as f64 / c.requests as f64),
                ]);
            }
        }
        if rows.len() == before {
            notes.push(format!("{id}: no LDS, STS, ldmatrix or cp.async to count."));
        }
    }
    let first = counts.first().map_or("", |(id, _)| id.as_str());
    notes.extend(
        failed
            .iter()
            .map(|(s, why)| format!("Passed over: {s}, where {first} fails: {why}")),
    );
    // Where the shape comes from: given, or the simulator's (and which of its shapes).
    let fails_here = counts.first().is_some_and(|(_, b)| b.is_err());
    let profiled = if sizes.shapes.contains(shape) {
        sizes.from.to_string()
    } else if fails_here && !failed.is_empty() {
        format!("the last shape tried: {first} fails at each, as below")
    } else {
        profiled_shape(&Config::defaults(), shape.workload())
            .filter(|p| p != shape)
            .map_or_else(
                || "the one `tools/gpu-check.sh` profiles with Nsight Compute".to_string(),
                |p| {
                    let (largest, fate) = match (failed.is_empty(), failed.iter().any(|f| f.0 == p))
                    {
                        (true, _) => ("accepted".to_string(), "is declined"),
                        (false, at_p) => (
                            format!("where {first} passes"),
                            if at_p { "fails (below)" } else { "is declined" },
                        ),
                    };
                    format!(
                        "the largest simulator shape {largest}: {p}, the one `tools/gpu-check.sh` \
                         profiles with Nsight Compute, {fate}"
                    )
                },
            )
    };
    let mut out = vec![Block::Text(format!(
        "The simulator's bank model at the shape {shape} ({profiled}): each warp instruction \
         rebuilt from its lanes' addresses and served in 128-byte phases by 32 banks of 4-byte \
         words; a phase takes a wavefront per distinct word of its busiest bank, and the \
         wavefronts beyond one a phase are conflicts (WMMA's loads and stores, TMA and wgmma are \
         not counted). `harness/tests/bank_model.rs` holds it to the counts Nsight Compute took \
         on an H200."
    ))];
    if !rows.is_empty() {
        out.push(Block::Table(head, rows));
    }
    out.extend(notes.into_iter().map(Block::Text));
    out
}

/// The section on coalescing, from the counts of [`bank_counts`]: a line per kernel and kind
/// of global access.
fn coalescing_of(counted: &Counted) -> Vec<Block> {
    let (shape, counts) = match counted {
        Counted::Rows(shape, counts, _) => (shape, counts),
        Counted::Not(why) => return vec![Block::Text(format!("No coalescing counts: {why}."))],
    };
    let head = [
        "kernel",
        "instruction",
        "requests",
        "sectors per request",
        "lines per request",
        "ideal lines per request",
        "whole warps' requests",
        "their lines over the ideal",
    ]
    .map(String::from)
    .to_vec();
    let mut rows = Vec::new();
    let mut notes = Vec::new();
    for (id, counts) in counts {
        let Ok(c) = counts else {
            continue; // the bank section says why
        };
        let before = rows.len();
        let per = |n: u64, of: u64| match of {
            0 => "-".to_string(),
            _ => format!("{:.2}", n as f64 / of as f64),
        };
        for (name, _, global) in c.parts(id) {
            for (kind, r, whole) in global.kinds() {
                if r.requests == 0 {
                    continue;
                }
                rows.push(vec![
                    name.clone(),
                    kind.to_string(),
                    r.requests.to_string(),
                    per(r.sectors, r.requests),
                    per(r.lines, r.requests),
                    per(r.ideal_lines, r.requests),
                    whole.requests.to_string(),
                    per(whole.lines, whole.ideal_lines),
                ]);
            }
        }
        if rows.len() == before {
            notes.push(format!(
                "{id}: no plain global loads or stores to count (cp.async, TMA and atomics are \
                 not counted)."
            ));
        }
    }
    let mut out = vec![Block::Text(format!(
        "The simulator's count at the shape {shape}: each warp's plain global loads and stores \
         rebuilt into warp instructions. A request's sectors are the distinct 32-byte pieces \
         its lanes touch, its lines the distinct 128-byte cache lines; the L1 serves a request \
         a line a wavefront, so lines beyond the ideal (the lines the request's distinct bytes \
         fill, or a contiguous run's, from wherever it starts) are what scattered lanes cost. \
         A warp's 32 consecutive floats are 4 sectors of one line; 32 floats a row apart are \
         32 of each. The requests all 32 lanes of a warp made are counted apart: a small \
         shape's partial warps, at its edges, touch fewer lines than a large shape's whole \
         warps, and the speed of light takes whole warps' lines over the ideal."
    ))];
    if !rows.is_empty() {
        out.push(Block::Table(head, rows));
    }
    out.extend(notes.into_iter().map(Block::Text));
    out
}

fn measured(k: &dyn Kernel, run: Option<&RunResults>, latest: bool) -> Vec<Block> {
    let Some(run) = run else {
        return vec![Block::Text(
            "No run of this lab to read figures from: `harness run` measures the rows, and \
             `harness explain RUNG --run FOLDER` reads another run."
                .into(),
        )];
    };
    let table = measured_table(k, run);
    let which = match (latest, table.is_none()) {
        (true, false) => "the lab's latest run with its rows",
        (true, true) => "the lab's latest run",
        (false, _) => "the run given",
    };
    let mut out = vec![Block::Text(format!(
        "From {which}: {} ({}), {}, commit {}.",
        run.device.name, run.device.kind, run.date, run.commit
    ))];
    out.push(
        table.unwrap_or_else(|| Block::Text(format!("That run has no row of {}.", k.info().id))),
    );
    out
}

/// `k`'s rows in `run`, a line per shape as the run's tables show them (status, median,
/// throughput, `vs parent`); `None` where the run has none.
pub fn measured_table(k: &dyn Kernel, run: &RunResults) -> Option<Block> {
    let id = k.info().id;
    let mut rows = Vec::new();
    for w in &run.workloads {
        for s in &w.shapes {
            // The row as the run's tables show it: one derivation of its figures.
            let shape = ShapeReport::new(s, None);
            let Some(r) = shape.rows.iter().find(|r| r.row.id == id.as_ref()) else {
                continue;
            };
            let mut row = vec![s.label.clone()];
            row.extend(
                [Col::Status, Col::Median, Col::Throughput, Col::VsParent]
                    .map(|c| c.cell(r, false)),
            );
            rows.push(row);
        }
    }
    (!rows.is_empty()).then(|| {
        Block::Table(
            ["shape", "status", "median ms", "throughput", "vs parent"]
                .map(String::from)
                .to_vec(),
            rows,
        )
    })
}
