//! Tables from the report model: Markdown and CSV per workload, and the terminal summary.
//! Which columns appear depends on the device: a CPU run has no registers or occupancy, the
//! simulator has no times; the CSV keeps every column so its schema never changes.

use super::model::{DRIFT_NOTE, Report, RowReport, SAME_PORT_NOTE, ShapeReport, WorkloadReport};
use super::roofline::{Ceilings, MMA_SYNC_CEILING, Source};
use crate::results::{Row, Status, TrafficSource};
use crate::run::primary_resources;
use kernel::{DeviceKind, Precision, Role, Workload};
use std::fmt::Write as _;

/// A table column.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Col {
    Tag,
    Kernel,
    Precision,
    Median,
    Spread,
    Throughput,
    /// Compulsory bytes per second: what a memory-bound ladder is judged by.
    Bandwidth,
    Intensity,
    Traffic,
    TrafficIntensity,
    Banks,
    /// Cache lines of global accesses over those coalesced ones touch (the simulator's).
    Lines,
    VsParent,
    VsFirst,
    PctRef,
    PctRoof,
    Error,
    Status,
    Scratch,
    Regs,
    Smem,
    Occupancy,
    Waves,
}

impl Col {
    pub(crate) fn header(self) -> &'static str {
        match self {
            Self::Tag => "#",
            Self::Kernel => "kernel",
            Self::Precision => "prec",
            Self::Median => "median ms",
            Self::Spread => "spread",
            Self::Throughput => "throughput",
            Self::Bandwidth => "bandwidth",
            Self::Intensity => "ideal FLOP/B",
            Self::Traffic => "traffic",
            Self::TrafficIntensity => "FLOP/B",
            Self::Banks => "bank conflicts",
            Self::Lines => "global lines",
            Self::VsParent => "vs parent",
            Self::VsFirst => "vs first",
            Self::PctRef => "% of ref",
            Self::PctRoof => "% roof",
            Self::Error => "rel. error",
            Self::Status => "status",
            Self::Scratch => "scratch",
            Self::Regs => "regs",
            Self::Smem => "smem B",
            Self::Occupancy => "occupancy",
            Self::Waves => "waves",
        }
    }

    /// What the column holds, in a line: the tooltip of the web pages' headers (the README's
    /// table of columns says it at length).
    pub(crate) fn meaning(self) -> &'static str {
        match self {
            Self::Tag => {
                "the rung's number; ref: a reference (a library), peer: another framework, user: your kernel"
            }
            Self::Kernel => "the row's kernel",
            Self::Precision => "the precision it computes in",
            Self::Median => "median time of one run over the samples",
            Self::Spread => "half the p10-p90 range of the samples, relative to the median",
            Self::Throughput => "FLOPs per second at the median time",
            Self::Bandwidth => {
                "bytes per second at the median time, counting each input read once and the output written once"
            }
            Self::Intensity => {
                "FLOPs per byte of a kernel reading each input once and writing the output once"
            }
            Self::Traffic => "global-memory bytes the kernel really moved",
            Self::TrafficIntensity => "FLOPs per byte of that traffic",
            Self::Banks => {
                "shared-memory wavefronts over those the same accesses take without bank conflicts"
            }
            Self::Lines => {
                "cache lines the global loads and stores of whole warps touched over those coalesced requests touch"
            }
            Self::VsParent => {
                "speedup over the rung this one changes; ~ inside the noise or under 1%, ? rounds that disagree with the medians"
            }
            Self::VsFirst => "speedup over the ladder's first rung; ~ inside the noise or under 1%",
            Self::PctRef => {
                "throughput over that of the reference of the row's precision (the line above the table names it); above 100%: faster than it"
            }
            Self::PctRoof => {
                "throughput over the roofline bound min(peak of the precision, FLOP/B x bandwidth); where nothing is computed, bytes per second over the bandwidth"
            }
            Self::Error => "||out - ref|| / ||ref|| against the f64 reference",
            Self::Status => "pass or fail against the precision's error bound",
            Self::Scratch => "device memory the row allocates besides its inputs and output",
            Self::Regs => "registers per thread (ptxas)",
            Self::Smem => "shared memory per block, static plus dynamic",
            Self::Occupancy => "theoretical occupancy: resident warps over the SM's maximum",
            Self::Waves => "blocks over the blocks the GPU holds at once",
        }
    }

    /// Text columns are left-aligned, figures right-aligned.
    pub(crate) fn left(self) -> bool {
        matches!(
            self,
            Self::Tag | Self::Kernel | Self::Precision | Self::Status
        )
    }

    pub(crate) fn cell(self, r: &RowReport, markdown: bool) -> String {
        let row = &r.row;
        let res = primary_resources(row);
        let t = r.timed;
        match self {
            Self::Tag => r.tag.clone(),
            Self::Kernel if markdown => format!("`{}`", row.id),
            Self::Kernel => row.id.clone(),
            Self::Precision => row.precision.to_string(),
            Self::Median => opt(t.map(|t| t.median_ms), |v| format!("{v:.3}")),
            Self::Spread => opt(t.map(|t| t.spread_pct), |v| format!("±{v:.1}%")),
            Self::Throughput => opt(t.map(|t| t.gflops), throughput),
            Self::Bandwidth => opt(t.map(|t| t.gbps), super::charts::bandwidth),
            Self::Intensity => format!("{:.1}", r.compulsory_intensity),
            Self::Traffic => opt(row.traffic.map(|t| t.bytes()), |b| bytes(b as u64)),
            Self::TrafficIntensity => opt(r.traffic_intensity.map(|x| x.0), |v| format!("{v:.2}")),
            Self::Banks => bank_cell(row),
            Self::Lines => lines_cell(row),
            Self::VsParent => r
                .vs_parent
                .as_ref()
                .map_or("-".into(), |s| s.cell_against()),
            Self::VsFirst => r.vs_first.as_ref().map_or("-".into(), |s| s.cell()),
            Self::PctRef => opt(r.pct_of_ref, |v| format!("{v:.0}%")),
            Self::PctRoof => opt(r.roof.as_ref().map(|x| x.pct), |v| format!("{v:.0}%")),
            Self::Error => error_cell(row),
            Self::Status => status_word(row.status).to_string(),
            Self::Scratch => match row.scratch_bytes {
                0 => "-".into(),
                b => bytes(b),
            },
            Self::Regs => opt(res.map(|x| f64::from(x.registers)), |v| format!("{v}")),
            Self::Smem => opt(res.map(|x| f64::from(x.smem_bytes)), |v| format!("{v}")),
            Self::Occupancy => opt(res.and_then(|x| x.occupancy), |v| {
                format!("{:.0}%", v * 100.0)
            }),
            Self::Waves => opt(res.and_then(|x| x.waves), |v| format!("{v:.2}")),
        }
    }
}

/// The columns a table of `report` shows: only those this device can fill.
pub fn columns(report: &Report, terminal: bool) -> Vec<Col> {
    use Col::*;
    let any_row = |has: fn(&Row) -> bool| {
        report
            .workloads
            .iter()
            .flat_map(|w| &w.shapes)
            .flat_map(|s| &s.rows)
            .any(|r| has(&r.row))
    };
    let traffic = any_row(|r| r.traffic.is_some());
    let banks = any_row(|r| r.banks.is_some());
    let lines = any_row(|r| r.coalescing.is_some());
    let mut cols = vec![Tag, Kernel];
    if !terminal {
        cols.push(Precision);
    }
    match report.kind {
        DeviceKind::Sim => {
            if traffic {
                cols.extend([Traffic, TrafficIntensity]);
            }
            cols.push(Intensity);
            if banks {
                cols.push(Banks);
            }
            if lines {
                cols.push(Lines);
            }
            cols.extend([Regs, Smem, Occupancy]);
            if !terminal {
                cols.push(Scratch);
            }
        }
        DeviceKind::Cpu => {
            cols.extend([Median, Spread, Throughput]);
            if !terminal {
                cols.push(Intensity);
            }
            cols.extend([VsParent, VsFirst, PctRef, PctRoof]);
        }
        DeviceKind::Cuda => {
            cols.extend([Median, Spread, Throughput]);
            if !terminal {
                if traffic {
                    cols.extend([Traffic, TrafficIntensity]);
                }
                cols.push(Intensity);
            }
            cols.extend([VsParent, VsFirst, PctRef, PctRoof]);
            if !terminal {
                cols.extend([Scratch, Regs, Smem, Occupancy, Waves]);
            }
        }
    }
    // The status last: in the terminal it carries the reason of a row that did not pass.
    cols.extend([Error, Status]);
    cols
}

/// `cols` for the tables of `w`: a memory-bound workload's have its bandwidth first, then its
/// FLOP rate unless it computes nothing ([`columns_of_rates`]).
pub fn columns_for(cols: Vec<Col>, w: &WorkloadReport) -> Vec<Col> {
    let mut cols = compact_columns_for(cols, w);
    if w.workload.memory_bound()
        && !w.workload.computes_nothing()
        && let Some(at) = cols.iter().position(|c| *c == Col::Bandwidth)
    {
        cols.insert(at + 1, Col::Throughput);
    }
    cols
}

/// `cols` for the compact tables of `w` (the terminal's, a page's few rows): without `% of
/// ref` where no row of the workload has one (no library computes a fused chain or a
/// reduction here), and with [`columns_of_rates`]'s rates.
pub fn compact_columns_for(mut cols: Vec<Col>, w: &WorkloadReport) -> Vec<Col> {
    if w.shapes
        .iter()
        .flat_map(|s| &s.rows)
        .all(|r| r.pct_of_ref.is_none())
    {
        cols.retain(|c| *c != Col::PctRef);
    }
    columns_of_rates(cols, w.workload)
}

/// `cols` for a table of `workload`: a memory-bound one has its bandwidth in place of its FLOP
/// rate ([`Workload::memory_bound`]), and one that computes nothing (the transpose) no
/// intensities either.
pub fn columns_of_rates(mut cols: Vec<Col>, workload: Workload) -> Vec<Col> {
    if workload.computes_nothing() {
        cols.retain(|c| !matches!(c, Col::Intensity | Col::TrafficIntensity));
    }
    if workload.memory_bound()
        && let Some(at) = cols.iter().position(|c| *c == Col::Throughput)
    {
        cols[at] = Col::Bandwidth;
    }
    cols
}

/// Shared-memory wavefronts over the conflict-free count: `2.00x` is a two-way conflict on
/// average; `none` without conflicts, `-` where the row asked nothing of shared memory.
pub fn bank_ratio(row: &Row) -> Option<f64> {
    let t = row.banks?.total();
    (t.ideal > 0).then(|| t.wavefronts as f64 / t.ideal as f64)
}

/// The wavefronts the L1's data pipe takes for `row`'s plain global requests (a cache line
/// each, whole warps' where there are any, as [`lines_cell`] counts them) and its shared-memory
/// instructions, over the fewest the same accesses could take: 1 coalesced and conflict-free.
/// `None` where the row made neither kind of access.
pub fn l1_ratio(row: &Row) -> Option<f64> {
    let global = global_requests(row).unwrap_or_default();
    let shared = row.banks.map(|b| b.total()).unwrap_or_default();
    let ideal = global.ideal_lines + shared.ideal;
    (ideal > 0).then(|| (global.lines + shared.wavefronts) as f64 / ideal as f64)
}

pub(crate) fn bank_cell(row: &Row) -> String {
    match row.banks.map(|b| b.total()) {
        Some(t) if t.ideal > 0 && t.conflicts() == 0 => "none".into(),
        _ => opt(bank_ratio(row), |v| format!("{v:.2}x")),
    }
}

/// The requests of `row`'s global loads and stores together, whole warps' where there are
/// any (a large shape's requests mostly are), else all.
fn global_requests(row: &Row) -> Option<kernel::GlobalRequests> {
    let c = row.coalescing?;
    let whole = c.whole_warp_loads.plus(c.whole_warp_stores);
    Some(if whole.requests > 0 {
        whole
    } else {
        c.loads.plus(c.stores)
    })
}

/// Global cache lines over the coalesced count: `16.50x` is sixteen and a half times the
/// lines; `coalesced` at the ideal, `-` where the row made no plain global access.
pub(crate) fn lines_cell(row: &Row) -> String {
    match global_requests(row) {
        Some(r) if r.ideal_lines > 0 && r.lines == r.ideal_lines => "coalesced".into(),
        Some(r) if r.ideal_lines > 0 => format!("{:.2}x", r.lines as f64 / r.ideal_lines as f64),
        _ => "-".into(),
    }
}

fn opt(v: Option<f64>, f: impl Fn(f64) -> String) -> String {
    v.map(f).unwrap_or_else(|| "-".into())
}

/// One word per status, the same everywhere: `pass`, `fail`, `skip`, `error`.
pub fn status_word(s: Status) -> &'static str {
    match s {
        Status::Passed => "pass",
        Status::Failed => "fail",
        Status::Unsupported => "skip",
        Status::Error => "error",
    }
}

/// `1.2 TFLOP/s` or `345.6 GFLOP/s`.
pub fn throughput(gflops: f64) -> String {
    if gflops >= 1000.0 {
        format!("{:.1} TFLOP/s", gflops / 1e3)
    } else {
        format!("{gflops:.1} GFLOP/s")
    }
}

/// What a row checked when the simulator ran a sample of its blocks (`--sim-blocks`).
pub fn sample_note(r: &Row) -> Option<String> {
    let c = r.check?;
    let b = c.blocks?;
    Some(format!(
        "{} of {} blocks run (--sim-blocks), {} of {} outputs checked, traffic not counted",
        b.run,
        b.of,
        c.sampled.unwrap_or(b.outputs_written),
        b.outputs
    ))
}

fn error_cell(r: &Row) -> String {
    opt(r.check.map(|c| c.rel_error), |v| {
        // Bit for bit the reference's (a cuBLAS row against the f64 reference rounded alike).
        if v == 0.0 {
            "0".into()
        } else if v.is_finite() {
            format!("{v:.1e}")
        } else {
            "NaN".into()
        }
    })
}

/// `12.0 MiB`, `12 B` below a KiB, `-` for none.
pub fn bytes(b: u64) -> String {
    match b {
        0 => "-".into(),
        b if b >= 1 << 30 => format!("{:.2} GiB", b as f64 / (1u64 << 30) as f64),
        b if b >= 1 << 20 => format!("{:.1} MiB", b as f64 / (1u64 << 20) as f64),
        b if b >= 1 << 10 => format!("{:.1} KiB", b as f64 / 1024.0),
        b => format!("{b} B"),
    }
}

/// `1 row`, `3 rows`.
pub fn count(n: usize, word: &str) -> String {
    format!("{n} {word}{}", if n == 1 { "" } else { "s" })
}

/// Which reference each precision of a shape's rows is compared with, and why `% of ref` can
/// pass 100%; `None` where the shape has no reference at all.
fn references_used(report: &Report, shape: &ShapeReport) -> Option<String> {
    let mut by_ref: Vec<(Option<&str>, Vec<Precision>)> = Vec::new();
    for u in &shape.references {
        match by_ref.iter_mut().find(|(id, _)| *id == u.id.as_deref()) {
            Some((_, ps)) => ps.push(u.precision),
            None => by_ref.push((u.id.as_deref(), vec![u.precision])),
        }
    }
    let parts: Vec<String> = by_ref
        .iter()
        .map(|(id, ps)| {
            let ps = ps.iter().map(|p| p.name()).collect::<Vec<_>>().join(", ");
            match id {
                Some(id) => {
                    let what = shape
                        .rows
                        .iter()
                        .find(|r| r.row.id == *id)
                        .map(|r| r.row.summary.as_str())
                        .unwrap_or("");
                    format!("{ps} rows against `{id}` ({what})")
                }
                None => {
                    format!("{ps} rows against nothing (no passing reference of that precision)")
                }
            }
        })
        .collect();
    if by_ref.iter().all(|(id, _)| id.is_none()) {
        return None;
    }
    let mut s = parts.join("; ");
    if report.cpu_ports() {
        s.push_str(
            ". On the CPU the reference is a general-purpose library composed the usual way; a \
             port that fuses or skips steps can beat it, so above 100% means faster than that \
             composition, not faster than the CPU allows",
        );
    }
    Some(s)
}

/// What the roofline column is measured against, for headers.
pub fn roof_source(c: Option<&Ceilings>) -> String {
    match c {
        Some(c) if c.source == Source::Measured => format!(
            "measured ceilings ({}, {}{})",
            super::charts::bandwidth(c.bandwidth_gbs),
            c.roofs()
                .iter()
                .map(|r| format!("{} {}", r.name(), throughput(r.gflops)))
                .collect::<Vec<_>>()
                .join(", "),
            c.mma_sync().map_or(String::new(), |g| format!(
                "; under the FP16/BF16 roof, {MMA_SYNC_CEILING} {}",
                throughput(g)
            ))
        ),
        Some(c) => format!("{} ceilings (not measured here)", c.label),
        None => "no ceilings: run `harness calibrate`".into(),
    }
}

/// What the rows of a run are, in one paragraph for the top of its tables.
fn device_note(report: &Report) -> String {
    match report.kind {
        DeviceKind::Cpu => "These rows time the **CPU ports** of the kernels: Rust code on the \
            CPU that mirrors each rung's idea (cache tiling, fusion, half storage, online softmax), \
            not the CUDA code. A GPU run times the kernels themselves and adds registers, shared \
            memory, occupancy, waves and scratch, which a CPU port does not have."
            .into(),
        DeviceKind::Sim => format!(
            "The **CUDA simulator** executed each kernel's CUDA source on the CPU to check its \
             output; it gives no speeds. `traffic` is every global-memory byte the kernel loaded \
             or stored, counted as it ran, and `FLOP/B` the arithmetic intensity that traffic \
             gives; `ideal FLOP/B` is the intensity of a kernel that reads each input once and \
             writes the output once. Tiling shows as a higher intensity. `bank conflicts` is \
             the shared-memory wavefronts the simulator's bank model counts for the kernel's \
             warp instructions (LDS, STS with stmatrix, ldmatrix, cp.async: 32 banks of 4-byte \
             words) over \
             those the same requests take without conflicts: 2.00x is a two-way conflict on \
             average (WMMA's loads, TMA and wgmma are not counted; `ncu` measures them on a \
             GPU). `global lines` is the 128-byte cache lines its plain global loads and stores \
             touched, each warp instruction rebuilt from its lanes' addresses, over those the \
             same bytes touch in coalesced requests (whole warps' requests, where there are \
             any): 32.00x is a line per lane. Registers, shared memory and occupancy are NVRTC's ({}; sm_90a for kernels \
             of that family alone).",
            crate::user_kernel::run::INSPECT_ARCH
        ),
        DeviceKind::Cuda => String::new(),
    }
}

/// The warning on tables timed by a debug build.
pub const DEBUG_NOTE: &str = "**Timed by a debug build of the harness**: its own code is not \
    optimized, so these times compare nothing; build with `--release` (`cargo bench` and \
    `cargo run --release` do).";

/// The legend of the speed columns, when the table has them.
fn speed_note(report: &Report, ceilings: Option<&Ceilings>) -> String {
    if !report.timed() {
        return String::new();
    }
    let same_port = if report.cpu_ports() {
        format!("; {SAME_PORT_NOTE}")
    } else {
        String::new()
    };
    let beside = report
        .workloads
        .iter()
        .flat_map(|w| &w.shapes)
        .flat_map(|s| &s.rows)
        .any(|r| r.row.role == kernel::Role::User && r.row.parent.is_some());
    format!(
        "Times are medians of per-run samples; `spread` is half the p10-p90 range. `vs parent` \
         is the speedup over the rung this one changes (named by its number{}), `vs first` over \
         the ladder's first rung; {}{same_port}. `% roof` is the share of the roofline bound \
         min(peak of the row's precision, FLOP/B x bandwidth) from {}.\n\n",
        match beside {
            true => "; for your kernel, the rung its `against=` names",
            false => "",
        },
        report.significance_note(),
        roof_source(ceilings)
    )
}

/// The Markdown tables of one workload.
pub fn markdown(report: &Report, w: &WorkloadReport) -> String {
    let run = &report.run;
    let dev = &run.device;
    let mut s = String::new();
    let _ = writeln!(s, "# {} ablation on {}\n", w.workload.title(), dev.name);
    let _ = writeln!(
        s,
        "Device `{}`, driver {}{}; commit `{}`; {}. Generated by the harness from this run's \
         `results.json`.\n",
        dev.name,
        dev.driver,
        dev.cuda
            .as_ref()
            .map(|c| format!(", {c}"))
            .unwrap_or_default(),
        run.commit,
        run.date,
    );
    let note = device_note(report);
    if !note.is_empty() {
        let _ = writeln!(s, "{note}\n");
    }
    if let Some(why) = &run.unfinished {
        let _ = writeln!(s, "**An unfinished run**: {why}.\n");
    }
    if report.run.debug_build() && report.timed() {
        let _ = writeln!(s, "{DEBUG_NOTE}\n");
    }
    s.push_str(&speed_note(report, report.ceilings.as_ref()));
    let cols = columns_for(columns(report, false), w);
    for shape in &w.shapes {
        let _ = writeln!(
            s,
            "## {} ({})\n\nChecked against: {}.\n",
            shape.label,
            shape.work(),
            shape.checked_against
        );
        if report.timed()
            && let Some(refs) = references_used(report, shape)
        {
            let _ = writeln!(s, "`% of ref`: {refs}.\n");
        }
        s.push_str(&markdown_rows(&cols, &shape.rows));
        let notes: Vec<String> = shape
            .rows
            .iter()
            .filter_map(|r| {
                let why = r.row.reason.clone().or_else(|| sample_note(&r.row))?;
                Some(format!(
                    "- `{}` ({}): {why}",
                    r.row.id,
                    status_word(r.row.status)
                ))
            })
            .collect();
        if !notes.is_empty() {
            let _ = writeln!(s, "\n{}", notes.join("\n"));
        }
        if let Some(drift) = &shape.drift {
            let _ = writeln!(s, "\n{}", drift.sentence());
        }
        if let Some(gap) = &shape.same_code_gap {
            let _ = writeln!(s, "\n{}", gap.sentence());
        }
        s.push('\n');
    }
    s
}

/// A Markdown table of `rows` in the columns `cols`: the header, the alignment line and one
/// line per row (the tables of a run and the figures of the walkthroughs).
pub fn markdown_rows<'a>(cols: &[Col], rows: impl IntoIterator<Item = &'a RowReport>) -> String {
    let mut s = format!(
        "| {} |\n|{}|\n",
        cols.iter()
            .map(|c| c.header())
            .collect::<Vec<_>>()
            .join(" | "),
        cols.iter()
            .map(|c| if c.left() { "---" } else { "---:" })
            .collect::<Vec<_>>()
            .join("|")
    );
    for r in rows {
        let cells: Vec<String> = cols.iter().map(|c| c.cell(r, true)).collect();
        let _ = writeln!(s, "| {} |", cells.join(" | "));
    }
    s
}

/// The CSV header; every line has exactly these columns, whatever the device.
pub const CSV_HEADER: &str = "shape,rung,kernel,role,stage,precision,parent,status,median_ms,p10_ms,p90_ms,gflops,gbps,flop_per_byte,traffic_bytes,traffic_source,flop_per_traffic_byte,speedup_parent,parent_significant,speedup_first,first_significant,pct_of_ref,reference,roof,roof_gflops,pct_of_roof,roof_source,rel_error,scratch_bytes,registers,smem_bytes,occupancy,waves,same_cpu_port_as,parent_rounds,smem_wavefronts,smem_ideal_wavefronts,global_lines,global_ideal_lines";

/// Quotes a CSV field when it needs it (RFC 4180).
fn field(s: &str) -> String {
    if s.contains([',', '"', '\n']) {
        format!("\"{}\"", s.replace('"', "\"\""))
    } else {
        s.to_string()
    }
}

/// One CSV line per row, all shapes of a workload.
pub fn csv(report: &Report, w: &WorkloadReport) -> String {
    let mut s = format!("{CSV_HEADER}\n");
    let f = |v: Option<f64>| v.map(|x| format!("{x}")).unwrap_or_default();
    let b = |v: Option<bool>| v.map(|x| x.to_string()).unwrap_or_default();
    let source = match report.ceilings.as_ref().map(|c| c.source) {
        Some(Source::Measured) => "measured",
        Some(Source::Datasheet) => "datasheet",
        None => "",
    };
    for shape in &w.shapes {
        for r in &shape.rows {
            let row = &r.row;
            let res = primary_resources(row);
            let t = r.timed;
            let cells = [
                field(&shape.label),
                // The number of a rung only: other rows' `rung` is their place among themselves.
                if row.role == Role::Rung {
                    row.rung.to_string()
                } else {
                    String::new()
                },
                field(&row.id),
                row.role.name().to_string(),
                row.stage.to_string(),
                row.precision.to_string(),
                field(row.parent.as_deref().unwrap_or("")),
                status_word(row.status).to_string(),
                f(t.map(|t| t.median_ms)),
                f(t.map(|t| t.p10_ms)),
                f(t.map(|t| t.p90_ms)),
                f(t.map(|t| t.gflops)),
                f(t.map(|t| t.gbps)),
                format!("{}", r.compulsory_intensity),
                f(row.traffic.map(|t| t.bytes())),
                match row.traffic.map(|t| t.source) {
                    Some(TrafficSource::Simulator) => "simulator".into(),
                    Some(TrafficSource::Profiler) => "profiler".into(),
                    None => String::new(),
                },
                f(r.traffic_intensity.map(|x| x.0)),
                f(r.vs_parent.as_ref().map(|s| s.ratio)),
                b(r.vs_parent.as_ref().map(|s| s.significant)),
                f(r.vs_first.as_ref().map(|s| s.ratio)),
                b(r.vs_first.as_ref().map(|s| s.significant)),
                f(r.pct_of_ref),
                field(r.reference.as_deref().unwrap_or("")),
                field(r.roof.as_ref().map_or("", |x| x.roof.name())),
                f(r.roof.as_ref().map(|x| x.bound_gflops)),
                f(r.roof.as_ref().map(|x| x.pct)),
                source.to_string(),
                f(row.check.map(|c| c.rel_error)),
                row.scratch_bytes.to_string(),
                f(res.map(|x| f64::from(x.registers))),
                f(res.map(|x| f64::from(x.smem_bytes))),
                f(res.and_then(|x| x.occupancy)),
                f(res.and_then(|x| x.waves)),
                field(row.same_cpu_port_as.as_deref().unwrap_or("")),
                r.vs_parent
                    .as_ref()
                    .and_then(|s| s.rounds)
                    .map_or(String::new(), |n| n.to_string()),
                row.banks
                    .map_or(String::new(), |b| b.total().wavefronts.to_string()),
                row.banks
                    .map_or(String::new(), |b| b.total().ideal.to_string()),
                global_requests(row).map_or(String::new(), |r| r.lines.to_string()),
                global_requests(row).map_or(String::new(), |r| r.ideal_lines.to_string()),
            ];
            let _ = writeln!(s, "{}", cells.join(","));
        }
    }
    s
}

/// The compact tables printed at the end of a run: columns sized to their widest cell.
pub fn terminal(report: &Report) -> String {
    let mut s = String::new();
    for w in &report.workloads {
        let cols = compact_columns_for(columns(report, true), w);
        for shape in &w.shapes {
            let _ = writeln!(
                s,
                "\n{} {}  ({})",
                w.workload, shape.label, report.run.device.name
            );
            // Rows that cannot run here (no CPU port, say) go on one line below the table.
            let shown: Vec<&RowReport> = shape
                .rows
                .iter()
                .filter(|r| r.row.status != Status::Unsupported)
                .collect();
            // Skipped rows, grouped by their reason.
            let mut skipped: Vec<(&str, Vec<&str>)> = Vec::new();
            for r in shape
                .rows
                .iter()
                .filter(|r| r.row.status == Status::Unsupported)
            {
                let why = r.row.reason.as_deref().unwrap_or("not supported here");
                match skipped.iter_mut().find(|(w, _)| *w == why) {
                    Some((_, ids)) => ids.push(&r.row.id),
                    None => skipped.push((why, vec![&r.row.id])),
                }
            }
            let cells: Vec<Vec<String>> = shown
                .iter()
                .map(|r| {
                    cols.iter()
                        .map(|c| match c {
                            // Only the status word is lowercased: reasons quote code and
                            // identifiers (`C`, `'A'`) and stay as written.
                            Col::Status => match (&r.row.reason, sample_note(&r.row)) {
                                (Some(why), _) if r.row.status != Status::Passed => {
                                    format!("{}: {why}", status_word(r.row.status))
                                }
                                (_, Some(note)) => {
                                    format!("{} ({note})", status_word(r.row.status))
                                }
                                _ => status_word(r.row.status).into(),
                            },
                            c => c.cell(r, false),
                        })
                        .collect()
                })
                .collect();
            let widths: Vec<usize> = cols
                .iter()
                .enumerate()
                .map(|(i, c)| {
                    // The status column is last and may hold a long reason: not padded.
                    if *c == Col::Status {
                        return 0;
                    }
                    cells
                        .iter()
                        .map(|row| row[i].chars().count())
                        .chain([c.header().chars().count()])
                        .max()
                        .unwrap_or(0)
                })
                .collect();
            let line = |items: Vec<String>| -> String {
                let mut l = String::from(" ");
                for ((c, w), item) in cols.iter().zip(&widths).zip(items) {
                    l.push(' ');
                    if c.left() {
                        let _ = write!(l, "{item:<w$}");
                    } else {
                        let _ = write!(l, "{item:>w$}");
                    }
                }
                l.trim_end().to_string()
            };
            let _ = writeln!(
                s,
                "{}",
                line(cols.iter().map(|c| c.header().to_string()).collect())
            );
            for row in cells {
                let _ = writeln!(s, "{}", line(row));
            }
            for (why, ids) in skipped {
                let _ = writeln!(s, "  skip {}: {why}", ids.join(", "));
            }
            if let Some(drift) = &shape.drift {
                let _ = writeln!(s, "  {}", drift.short());
            }
            if let Some(gap) = &shape.same_code_gap {
                let _ = writeln!(s, "  {}", gap.short());
            }
        }
    }
    if !s.is_empty() && report.timed() {
        let _ = writeln!(
            s,
            "\nvs parent: over the rung each one changes (its number). {}. % roof against {}.",
            report.significance_note().replace('`', ""),
            roof_source(report.ceilings.as_ref())
        );
        if report
            .workloads
            .iter()
            .flat_map(|w| &w.shapes)
            .any(|s| s.drift.is_some())
        {
            let _ = writeln!(
                s,
                "drift: the first reference row timed before the rungs and after them; {}",
                DRIFT_NOTE.replace('`', "")
            );
        }
        if report.cpu_ports() {
            let _ = writeln!(
                s,
                "These are the CPU ports of the kernels, not the CUDA code: a GPU run times the \
                 kernels themselves. {}.",
                SAME_PORT_NOTE.replace('`', "")
            );
        }
        if report.run.debug_build() {
            let _ = writeln!(s, "{}", DEBUG_NOTE.replace("**", ""));
        }
    }
    s
}
