//! The speed-of-light section of `explain`: an H100 SXM estimate of a rung from its sm_90
//! SASS (the loop model for multiply-add loops, the launch model for kernels that move and
//! combine bytes, two ceilings where neither applies), and a GPU run's measured times
//! against it.

use super::{Block, SimBanks, plan_of, shape_of, simulator_banks};
use crate::results::{RunResults, Status};
use crate::run::min_bytes;
use crate::{resources, sass, sol};
use kernel::{CudaPlan, Kernel, Launch, LaunchBytes, Precision, Shape};

/// The speed of light of `k` at `shape` on an H100 SXM (see [`model`]), then, where the run is
/// a GPU run, the rung's measured time at every shape the run timed it against the estimate
/// at that shape.
pub(super) fn speed_of_light(
    k: &dyn Kernel,
    shape: &Shape,
    plan: Option<&CudaPlan>,
    banks: Option<&Result<SimBanks, String>>,
    run: Option<&RunResults>,
) -> Vec<Block> {
    let (mut out, sol) = model(k, shape, plan, banks);
    if let Some(run) = run.filter(|r| r.device.kind == "cuda") {
        out.extend(measured_against_estimated(k, shape, &sol, banks, run));
    }
    out
}

/// Each shape `run` timed `k` at and it passed: the shape, the model's estimate there (`sol`
/// at `shape`, computed again at the others) and the measured median in ms.
fn timed_against(
    k: &dyn Kernel,
    shape: &Shape,
    sol: &Sol,
    banks: Option<&Result<SimBanks, String>>,
    run: &RunResults,
) -> Vec<(Shape, Sol, f64)> {
    let id = k.info().id;
    run.workloads
        .iter()
        .flat_map(|w| &w.shapes)
        .filter_map(|s| {
            let row = s
                .rows
                .iter()
                .find(|row| row.id == id.as_ref() && row.status == Status::Passed)?;
            let ms = row.timing.as_ref()?.median_ms;
            let estimate = if s.shape == *shape {
                sol.clone()
            } else {
                model(k, &s.shape, plan_of(k, &s.shape).as_ref(), banks).1
            };
            Some((s.shape, estimate, ms))
        })
        .collect()
}

/// [`timed_against`] for `k` as `explain` estimates it ([`estimate_of`]).
pub fn estimates_against(
    all: &[Box<dyn Kernel>],
    k: &dyn Kernel,
    run: &RunResults,
) -> Vec<(Shape, Sol, f64)> {
    let (_, shape) = shape_of(k);
    let banks = simulator_banks(all, k);
    let (_, sol) = model(k, &shape, plan_of(k, &shape).as_ref(), Some(&banks));
    timed_against(k, &shape, &sol, Some(&banks), run)
}

/// A speed-of-light estimate: its time in ms and the ceiling that binds it.
#[derive(Clone, Debug, PartialEq)]
pub struct Sol {
    pub ms: f64,
    pub bound: String,
}

/// The speed of light of `k` as its section of `explain` computes it: at the shape explain
/// compiles the rung for, with the simulator's bank counts.
pub fn estimate_of(all: &[Box<dyn Kernel>], k: &dyn Kernel) -> (Shape, Sol) {
    let (_, shape) = shape_of(k);
    let banks = simulator_banks(all, k);
    let (_, sol) = model(k, &shape, plan_of(k, &shape).as_ref(), Some(&banks));
    (shape, sol)
}

/// The model's blocks for `k` at `shape` and its time in ms: from the hot loop of its SASS
/// where it has CUDA source that compiles (see [`sol`]), else from two ceilings (the FLOP at
/// the precision's dense peak, the compulsory bytes at DRAM bandwidth); then the Nsight
/// Compute metric of each ceiling. `banks`: the simulator's bank counts of the rung, or why
/// there are none.
fn model(
    k: &dyn Kernel,
    shape: &Shape,
    plan: Option<&CudaPlan>,
    banks: Option<&Result<SimBanks, String>>,
) -> (Vec<Block>, Sol) {
    let i = k.info();
    let bytes = min_bytes(shape, plan, i.precision);
    // The work the kernel does, which the model scales by: more than the workload's where it
    // computes what its output discards.
    let flops = k.computed_flops(shape);
    let discarded = if flops > shape.flops() {
        format!(
            " This rung computes {:.3} GFLOP: every score, those a causal mask discards too.",
            flops / 1e9
        )
    } else {
        String::new()
    };
    let mut out = vec![Block::Text(if shape.workload().computes_nothing() {
        format!(
            "At {shape}: no arithmetic, {:.1} MB compulsory (each input read once, the output \
             written once): only moving them takes time.",
            bytes / 1e6
        )
    } else {
        format!(
            "At {shape}: {:.3} GFLOP and {:.1} MB compulsory (each input read once, the output \
             written once): {:.1} FLOP/B.{discarded}",
            shape.flops() / 1e9,
            bytes / 1e6,
            shape.flops() / bytes
        )
    })];
    let modelled = match plan {
        Some(p) => loop_model(k, p, shape, flops, bytes, banks).or_else(|why| match why {
            NoLoopModel::NoMath(why) => launch_model(k, p, shape, bytes, banks)
                .map_err(|no| format!("{why}, and no launch model: {no}")),
            NoLoopModel::Other(why) => Err(why),
        }),
        None => Err("it has no CUDA source".to_string()),
    };
    let (blocks, sol) =
        modelled.unwrap_or_else(|why| two_ceilings(i.precision, flops, bytes, &why));
    out.extend(blocks);
    match plan.and_then(CudaPlan::host_copies) {
        Some(copies) => {
            let (text, sol) = with_host_copies(sol, copies);
            out.push(Block::Text(text));
            (out, sol)
        }
        None => (out, sol),
    }
}

/// The estimate of a row whose timed span holds its pipeline's copies between host and device
/// (`up` and `down` bytes): the kernels' `sol`, or the copies' time at PCIe's rate each way
/// where that is longer, as the streams overlap one with the other at best.
fn with_host_copies(sol: Sol, (up, down): (usize, usize)) -> (String, Sol) {
    let ms = up.max(down) as f64 / sol::h100::PCIE_BYTES_PER_S * 1e3;
    let row = if ms > sol.ms {
        Sol {
            ms,
            bound: sol::HOST_COPIES.to_string(),
        }
    } else {
        sol.clone()
    };
    let text = format!(
        "The row's time includes its pipeline's copies between host and device: {:.1} MB \
         host-to-device and {:.1} MB device-to-host, at least {ms:.4} ms at PCIe Gen5 x16's \
         {:.0} GB/s each way (the H100 data sheet's 128 GB/s counts both ways), however well \
         the streams overlap them with the kernels. Estimate of the row: at best {:.4} ms, \
         bound by {}.",
        up as f64 / 1e6,
        down as f64 / 1e6,
        sol::h100::PCIE_BYTES_PER_S / 1e9,
        row.ms,
        row.bound
    );
    (text, row)
}

/// The rung's passed, timed rows of a GPU run, one line per shape: the time measured, the
/// model's estimate at that shape (see [`timed_against`]) and the measured speed as a share
/// of the estimate's.
fn measured_against_estimated(
    k: &dyn Kernel,
    shape: &Shape,
    sol: &Sol,
    banks: Option<&Result<SimBanks, String>>,
    run: &RunResults,
) -> Vec<Block> {
    let rows: Vec<Vec<String>> = timed_against(k, shape, sol, banks, run)
        .into_iter()
        .map(|(s, e, ms)| {
            vec![
                s.to_string(),
                format!("{:.4}", e.ms),
                format!("{ms:.4}"),
                format!("{:.0}%", e.ms / ms * 100.0),
            ]
        })
        .collect();
    if rows.is_empty() {
        return Vec::new();
    }
    let beaten = rows
        .iter()
        .any(|r| r[3].trim_end_matches('%').parse().unwrap_or(0.0) > 100.0);
    let mut out = vec![
        Block::Text(format!(
            "Measured against estimated, on {} (the estimate is the H100 model above, computed \
             at each shape the run timed):",
            run.device.name
        )),
        Block::Table(
            [
                "shape",
                "estimate ms",
                "measured ms",
                "measured speed, % of the estimate's",
            ]
            .map(String::from)
            .to_vec(),
            rows,
        ),
    ];
    if beaten {
        // The run's own bandwidth, where it calibrated, against the model's.
        let dram = match &run.calibration {
            Some(c) => format!(
                "the run measured {:.2} TB/s of DRAM bandwidth, the model assumes the H100 \
                 SXM's {:.2}",
                c.bandwidth_gbs / 1e3,
                sol::h100::DRAM_BYTES_PER_S / 1e12
            ),
            None => format!(
                "the model assumes the H100 SXM's {:.2} TB/s of DRAM bandwidth",
                sol::h100::DRAM_BYTES_PER_S / 1e12
            ),
        };
        out.push(Block::Text(format!(
            "Over 100%: the run beat the estimate, because less moved than the model's binding \
             ceiling counts (L1 hits and broadcasts, as the caveats above say; for the L1's \
             lines, the simulator's small shape, whose rows may be shorter than a warp's run, \
             coalescing worse than this one), or because the GPU's ceilings are higher \
             ({dram})."
        )));
    }
    out
}

const TIME_METRIC: &str = "time, gpu__time_duration.sum";
const OCCUPANCY_METRIC: &str = "occupancy, sm__warps_active.avg.pct_of_peak_sustained_active";

/// The two-ceiling model, for rows whose SASS cannot be read (`why`): the FLOP at the
/// precision's dense peak and the compulsory bytes at DRAM bandwidth. Returns its blocks and
/// its estimate.
fn two_ceilings(precision: Precision, flops: f64, bytes: f64, why: &str) -> (Vec<Block>, Sol) {
    let (peak, unit) = match precision {
        Precision::Fp32 => (sol::h100::FP32_FLOPS, "FP32 CUDA cores"),
        Precision::Tf32 => (sol::h100::TF32_FLOPS, "TF32 tensor cores"),
        Precision::Fp16 | Precision::Bf16 => (sol::h100::FP16_FLOPS, "FP16/BF16 tensor cores"),
        Precision::Fp8 => (sol::h100::FP8_FLOPS, "FP8 tensor cores"),
    };
    let t_math = flops / peak * 1e3;
    let t_dram = bytes / sol::h100::DRAM_BYTES_PER_S * 1e3;
    let (t, bound) = if t_math >= t_dram {
        (t_math, "compute")
    } else {
        (t_dram, "DRAM")
    };
    let mut blocks = vec![Block::Text(format!(
        "No per-rung model: {why}. Two ceilings instead (NVIDIA H100 SXM data sheet, dense): \
         math on the {unit} at {:.0} TFLOP/s, {t_math:.4} ms; DRAM at {:.2} TB/s, {t_dram:.4} \
         ms; so at best {t:.4} ms, {bound}-bound.",
        peak / 1e12,
        sol::h100::DRAM_BYTES_PER_S / 1e12
    ))];
    blocks.push(Block::Text(format!(
        "Nsight Compute metrics that measure them: {TIME_METRIC}; math, \
         sm__throughput.avg.pct_of_peak_sustained_elapsed; DRAM, dram__bytes.sum."
    )));
    let bound = if bound == "DRAM" { "DRAM" } else { unit };
    (
        blocks,
        Sol {
            ms: t,
            bound: bound.to_string(),
        },
    )
}

/// The per-rung model from the hot loop of the plan's SASS on the H100's architecture (or,
/// where the rung splits its FLOP between several kernels, [`Kernel::flops_by_kernel`], the
/// hot loop of each), its shared-memory wavefronts and global lines scaled by the simulator's
/// bank conflicts and coalescing where it counted them: its blocks and its time in ms, or why
/// there is none.
fn loop_model(
    k: &dyn Kernel,
    plan: &CudaPlan,
    shape: &Shape,
    flops: f64,
    bytes: f64,
    banks: Option<&Result<SimBanks, String>>,
) -> Result<(Vec<Block>, Sol), NoLoopModel> {
    let arch = "sm_90";
    let no_sass = |e: &dyn std::fmt::Display| NoLoopModel::Other(format!("no SASS ({e})"));
    let tool = sass::Disassembler::find().map_err(|e| no_sass(&e))?;
    let listings = sass::of_plan(&tool, plan, arch).map_err(|e| no_sass(&e))?;
    let split = k.flops_by_kernel(shape);
    let math = math_loops(&listings, &split, flops)?;
    let several = math.len() > 1;
    let mut out = Vec::new();
    if several {
        let parts: Vec<String> = math
            .iter()
            .map(|(h, f)| {
                format!(
                    "{} {:.3} GFLOP",
                    plan.written_entry(&h.listing.entry),
                    f / 1e9
                )
            })
            .collect();
        out.push(Block::Text(format!(
            "The plan runs {} kernels whose loops do multiply-adds: each is modelled by its own \
             hot loop at its part of the work ({}), with the simulator's counts of that kernel \
             and the bytes of its own buffers, and their times add (launches run one after the \
             other).",
            math.len(),
            parts.join(", ")
        )));
    }
    let mut loops = Vec::new();
    for (hot, f) in &math {
        let moved = if several {
            entry_bytes(plan, shape, &hot.listing.entry)
        } else {
            bytes
        };
        let mut l = kernel_loop(plan, hot, *f, moved, banks)?;
        out.append(&mut l.blocks);
        if several {
            out.push(Block::Text(format!(
                "{}: at best {:.4} ms, bound by {} at {:.4} ms.{}{}",
                l.entry, l.ms, l.bound, l.bound_ms, l.tail, l.occupancy
            )));
            out.push(Block::Text(l.caveats.join(" ")));
        }
        loops.push(l);
    }
    // The other launches, without multiply-adds or, where the rung names the kernels that do
    // its FLOP, not among them, take the launch model; launches run one after the other, so
    // their time adds to the math launches'.
    // (Launches that each take a chunk of the buffers do not say how large.)
    let (mut modelled, mut unmodelled) = (Vec::new(), Vec::new());
    for (x, moved) in plan.launches().zip(plan.launch_bytes(shape)) {
        if math.iter().any(|(h, _)| x.entry == h.listing.entry) {
            continue;
        }
        let work = if plan.chunked() {
            None
        } else {
            launch_work(plan, &listings, x, moved, !split.is_empty(), banks).ok()
        };
        match work {
            Some(w) => modelled.push(w),
            None => unmodelled.push(plan.written_entry(&x.entry).to_string()),
        }
    }
    let others = sol::estimate_launches(0.0, &modelled, &sol::BankFactors::default(), None);
    let (extra, others_line) = match &others {
        Some(e) => {
            let b = e.bound();
            let names = distinct(modelled.iter().map(|w| w.entry.clone()));
            let n = modelled.len();
            (
                b.ms,
                format!(
                    " The plan's other launches ({}; {n} launch{}) do {}: the launch model, \
                     each warp running its kernel once and each launch's buffers crossing DRAM, \
                     puts them at {:.4} ms at best, bound by {} ({}), which the estimate adds.",
                    names.join(", "),
                    if n == 1 { "" } else { "es" },
                    if split.is_empty() {
                        "no multiply-add"
                    } else {
                        "none of the workload's multiply-adds"
                    },
                    b.ms,
                    b.name,
                    b.work
                ),
            )
        }
        None => (0.0, String::new()),
    };
    let loops_ms: f64 = loops.iter().map(|l| l.ms).sum();
    let mut caveats = Vec::new();
    match loops.as_slice() {
        [l] => {
            out.push(Block::Text(format!(
                "Estimate: at best {:.4} ms, bound by {} at {:.4} ms.{}{}{others_line}",
                l.ms + extra,
                l.bound,
                l.bound_ms,
                l.tail,
                l.occupancy
            )));
            caveats.clone_from(&l.caveats);
        }
        _ => {
            let each: Vec<String> = loops
                .iter()
                .map(|l| format!("{} {:.4}", l.entry, l.ms))
                .collect();
            out.push(Block::Text(format!(
                "Estimate: at best {:.4} ms, the sum of its kernels' ({} ms).{others_line}",
                loops_ms + extra,
                each.join(" + ")
            )));
        }
    }
    if !unmodelled.is_empty() {
        caveats.push(format!(
            "The plan's other launches ({}) are not in this model.",
            distinct(unmodelled).join(", ")
        ));
    }
    if !caveats.is_empty() {
        out.push(Block::Text(caveats.join(" ")));
    }
    out.push(metrics(&loops[0].estimate));
    // The bound of the largest part.
    let largest = loops
        .iter()
        .max_by(|a, b| a.ms.total_cmp(&b.ms))
        .map_or("", |l| l.bound);
    let bound = match &others {
        Some(e) if extra > loops_ms => e.bound().name,
        _ => largest,
    };
    Ok((
        out,
        Sol {
            ms: loops_ms + extra,
            bound: bound.to_string(),
        },
    ))
}

/// The loops the model scales, each with its FLOP: the kernels `split` names, or where it
/// names none, the launch whose hot loop does the most FLOP a pass (the matrix product rather
/// than a conversion kernel), with all of `flops`.
fn math_loops(
    listings: &[sass::Listing],
    split: &[(&str, f64)],
    flops: f64,
) -> Result<Vec<(sol::HotLoop, f64)>, NoLoopModel> {
    if split.is_empty() {
        let hot = sol::hottest(listings)
            .ok_or(NoLoopModel::NoMath("no launch of the plan has a loop"))?;
        return Ok(vec![(hot, flops)]);
    }
    split
        .iter()
        .map(|&(entry, f)| {
            let listing = listings
                .iter()
                .find(|l| l.entry == entry)
                .ok_or_else(|| NoLoopModel::Other(format!("the plan launches no {entry}")))?;
            let hot = sol::hot_loop(listing)
                .ok_or_else(|| NoLoopModel::Other(format!("{entry} has no loop")))?;
            Ok((hot, f))
        })
        .collect()
}

/// The bytes of the buffers every launch of `entry` reads and writes, as DRAM moves them.
fn entry_bytes(plan: &CudaPlan, shape: &Shape, entry: &str) -> f64 {
    plan.launches()
        .zip(plan.launch_bytes(shape))
        .filter(|(l, _)| l.entry == entry)
        .map(|(_, b)| sol::dram_bytes(b.read, b.written, &b.intermediates))
        .sum()
}

/// One kernel's hot loop scaled to its FLOP: the blocks that show it (the pass, the ceilings),
/// its time, the ceiling that binds it and what the estimate line says of its waves and
/// occupancy, and the caveats of its counts.
struct KernelLoop {
    entry: String,
    blocks: Vec<Block>,
    estimate: sol::Estimate,
    ms: f64,
    bound: &'static str,
    bound_ms: f64,
    tail: String,
    occupancy: String,
    caveats: Vec<String>,
}

/// The loop model of `hot`, a loop of one of `plan`'s kernels, doing `flops` and moving
/// `bytes` through DRAM.
fn kernel_loop(
    plan: &CudaPlan,
    hot: &sol::HotLoop,
    flops: f64,
    bytes: f64,
    banks: Option<&Result<SimBanks, String>>,
) -> Result<KernelLoop, NoLoopModel> {
    let arch = "sm_90";
    let pass = &hot.hot.summary;
    let l = &hot.listing;
    let entry = plan.written_entry(&l.entry).to_string();
    let factors = bank_factors(banks, plan, pass, Some(&entry));
    let estimate = sol::estimate(flops, bytes, pass, &factors).ok_or(NoLoopModel::NoMath(
        "the hot loop does no multiply-add, so nothing scales it to the shape",
    ))?;
    let mut blocks = vec![Block::Text(format!(
        "Model: the hot loop of {entry} ({}, {}), the innermost loop doing math ({}, {:#06x} to \
         {:#06x}). One warp's pass, each line once (of an if/else the shorter arm, nested \
         loops once): {}.",
        l.file,
        l.arch,
        hot.hot.label,
        hot.hot.start,
        hot.hot.end,
        sol::describe(pass)
    ))];
    let tma_unseen = l.function.summary.utmaldg > 0 && pass.global_load_bytes == 0;
    blocks.push(Block::Text(format!(
        "The shape's FLOP take {:.3e} such passes. H100 SXM ceilings: {} SMs at the {:.2} GHz \
         boost clock behind NVIDIA's data sheet FP32 peak; rates as below.",
        estimate.warp_passes,
        sol::h100::SMS,
        sol::h100::clock_hz() / 1e9
    )));
    let launch = resources::of_plan(plan, arch, Some(sol::h100::SMS as u32))
        .ok()
        .and_then(|list| list.into_iter().find(|r| r.entry == l.entry));
    let waves = launch
        .as_ref()
        .and_then(|r| Some((r.blocks, r.tiles, r.waves?)));
    // The ceiling that binds once the blocks are shared out over the SMs.
    let bound = match waves {
        Some((blocks, tiles, _)) => estimate.bound_over_sms(tiles.unwrap_or(blocks)).0,
        None => estimate.bound(),
    };
    blocks.push(ceilings_table(&estimate, bound, tma_unseen));
    let occupancy = launch.and_then(|r| Some((r.occupancy?, r.occupancy_limiter?)));
    let occupancy = match occupancy {
        Some((o, limiter)) => {
            let per_scheduler = o * sol::h100::MAX_WARPS_PER_SM / sol::h100::SCHEDULERS;
            let low = if per_scheduler < 2.0 {
                ": too few to hide the latency of loads and tensor instructions, so the kernel \
                 stays well short of this bound"
            } else {
                ""
            };
            format!(
                " Occupancy on {arch}: {:.0}% ({limiter}), {per_scheduler:.1} warps per \
                 scheduler{low}.",
                o * 100.0
            )
        }
        None => String::new(),
    };
    let (ms, tail) = match waves {
        Some((launched, tiles, w)) => {
            let units = tiles.unwrap_or(launched);
            let t = estimate.spread_over_sms(units);
            let idle = if t > bound.ms {
                let per_sm = units as f64 / sol::h100::SMS;
                let unit = if tiles.is_some() { "tiles" } else { "blocks" };
                format!(
                    "; the SMs given the most {unit} ({}, against {per_sm:.2} on average) \
                     stretch the bound x{:.3}",
                    per_sm.ceil(),
                    t / bound.ms
                )
            } else {
                String::new()
            };
            let what = match tiles {
                Some(tiles) => format!("{tiles} tiles shared out by {launched} persistent blocks"),
                None => format!("{launched} blocks"),
            };
            (
                t,
                format!(
                    " {what} of {entry} make {w:.2} waves over the {} SMs at this occupancy{idle}.",
                    sol::h100::SMS
                ),
            )
        }
        None => (bound.ms, String::new()),
    };
    let shared = pass.shared_wavefronts.total() > 0;
    let mut caveats = vec![bytes_caveat(banks, shared, &factors)];
    if pass.hmma > 0 {
        caveats.push(
            "mma.sync (HMMA) does not reach the dense tensor peak on Hopper; only wgmma \
             (HGMMA) does."
                .into(),
        );
    }
    if tma_unseen {
        caveats.push(
            "Its global loads are TMA copies (UTMALDG) issued by another loop, their sizes in \
             the tensor map rather than the instruction: the L2 time counts none of them."
                .into(),
        );
    }
    let (bound, bound_ms) = (bound.name, bound.ms);
    Ok(KernelLoop {
        entry,
        blocks,
        estimate,
        ms,
        bound,
        bound_ms,
        tail,
        occupancy,
        caveats,
    })
}

/// Why the loop model gives no estimate: the plan's loops do no multiply-add (the launch
/// model may), or something else (no SASS).
enum NoLoopModel {
    NoMath(&'static str),
    Other(String),
}

/// The simulator's bank conflicts and coalescing as factors for `pass`, or none where it
/// counted none. Where `pass` is a loop of `plan`'s kernel `entry` (as written: see
/// [`CudaPlan::written_entry`]) and the simulator counted the plan's kernels apart, that
/// kernel's counts (a naive attention's scores read K a row a lane, its product with V reads
/// V coalesced); else the plan's, where its global accesses are taken as coalesced if it runs
/// several kernels, since their counts are not this loop's.
pub fn bank_factors(
    banks: Option<&Result<SimBanks, String>>,
    plan: &CudaPlan,
    pass: &sass::Summary,
    entry: Option<&str>,
) -> sol::BankFactors {
    let Some(Ok(sim)) = banks else {
        return sol::BankFactors::default();
    };
    if let Some(k) = sim.kernels.iter().find(|k| Some(k.entry.as_str()) == entry) {
        return sol::BankFactors::from_simulator(&k.shared, pass).with_coalescing(&k.global, pass);
    }
    let factors = sol::BankFactors::from_simulator(&sim.banks, pass);
    let kernels = distinct(
        plan.launches()
            .map(|l| plan.written_entry(&l.entry).to_string()),
    );
    if kernels.len() == 1 {
        return factors.with_coalescing(&sim.global, pass);
    }
    let mut factors = factors;
    if pass.ldg + pass.stg > 0 {
        factors.line_notes.push(format!(
            "taken as coalesced (the simulator counts the accesses of the plan's {} kernels \
             together: {})",
            kernels.len(),
            kernels.join(", ")
        ));
    }
    factors
}

/// The estimate's ceilings, `bound` marked; an L2 row that cannot see TMA copies says so.
fn ceilings_table(estimate: &sol::Estimate, bound: &sol::Ceiling, tma_unseen: bool) -> Block {
    Block::Table(
        ["ceiling", "work at this shape", "rate", "ms", "bound"]
            .map(String::from)
            .to_vec(),
        estimate
            .ceilings
            .iter()
            .map(|c| {
                let work = if c.name == sol::L2 && tma_unseen {
                    format!("{} (TMA copies not visible)", c.work)
                } else {
                    c.work.clone()
                };
                vec![
                    c.name.to_string(),
                    work,
                    c.rate.clone(),
                    format!("{:.4}", c.ms),
                    if std::ptr::eq(c, bound) { "yes" } else { "" }.to_string(),
                ]
            })
            .collect(),
    )
}

/// What the model's bytes, shared-memory wavefronts and global lines leave out.
fn bytes_caveat(
    banks: Option<&Result<SimBanks, String>>,
    shared: bool,
    factors: &sol::BankFactors,
) -> String {
    let mut out = match banks {
        Some(Ok(_)) if shared => format!(
            "Shared memory is counted in wavefronts, each kind of instruction's scaled by its \
             bank conflicts in the simulator (the section on banks): {}. ",
            factors.notes.join("; ")
        ),
        Some(Err(why)) if shared => {
            format!("Shared memory is counted in wavefronts without bank conflicts ({why}). ")
        }
        _ => String::new(),
    };
    out += &match banks {
        Some(Ok(_)) if !factors.line_notes.is_empty() => format!(
            "Global loads and stores are counted in the 128-byte lines the L1 serves, each \
             kind's scaled by how the simulator's warps coalesced it (the section on \
             coalescing): {}. ",
            factors.line_notes.join("; ")
        ),
        Some(Err(why)) => format!(
            "Global loads and stores are counted in 128-byte lines as if coalesced ({why}). "
        ),
        _ => String::new(),
    };
    out + "Bytes are what the warps request: L1 hits and broadcasts change what moves."
}

/// The Nsight Compute metrics that measure each of the estimate's ceilings.
fn metrics(estimate: &sol::Estimate) -> Block {
    let metrics: Vec<String> = estimate
        .ceilings
        .iter()
        .map(|c| format!("{}, {}", c.name, c.metric))
        .collect();
    Block::Text(format!(
        "Nsight Compute metrics that measure each ceiling: {TIME_METRIC}; {}; \
         {OCCUPANCY_METRIC}.",
        metrics.join("; ")
    ))
}

/// The launch model (see [`sol::estimate_launches`]), for plans whose loops do no
/// multiply-add: every launch at its grid, each warp running its kernel's SASS for the H100's
/// architecture once outside the hot loop, and the loop's passes those that read the launch's
/// inputs once.
fn launch_model(
    k: &dyn Kernel,
    plan: &CudaPlan,
    shape: &Shape,
    bytes: f64,
    banks: Option<&Result<SimBanks, String>>,
) -> Result<(Vec<Block>, Sol), String> {
    if plan.chunked() {
        return Err(
            "its launches each take a chunk of the buffers, whose size the plan does \
                    not say"
                .into(),
        );
    }
    let arch = "sm_90";
    let tool = sass::Disassembler::find().map_err(|e| format!("no SASS ({e})"))?;
    let listings = sass::of_plan(&tool, plan, arch).map_err(|e| format!("no SASS ({e})"))?;
    let launches = plan
        .launches()
        .zip(plan.launch_bytes(shape))
        .map(|(l, moved)| launch_work(plan, &listings, l, moved, false, banks))
        .collect::<Result<Vec<_>, _>>()?;
    // The bank factors of the launch that takes the most shared-memory wavefronts.
    let heaviest = launches
        .iter()
        .max_by_key(|l| l.warps() * l.once.shared_wavefronts.total())
        .map(|l| l.once)
        .unwrap_or_default();
    // For launches the simulator did not count apart: the plan's counts, all its kernels
    // together.
    let factors = bank_factors(banks, plan, &heaviest, None);
    // What the simulator's warps asked of shared memory, per warp launched at its shape.
    let served = match banks {
        Some(Ok(sim)) => k.cuda(&sim.shape).and_then(|p| {
            let warps: u64 = p.launches().map(kernel::Launch::warps).sum();
            (warps > 0).then(|| {
                let w = sim.banks.total().wavefronts as f64 / warps as f64;
                (sim.shape, w)
            })
        }),
        _ => None,
    };
    let estimate = sol::estimate_launches(bytes, &launches, &factors, served.map(|(_, w)| w))
        .ok_or("no launches")?;
    let n = launches.len();
    let which = if n == 1 {
        "the plan's one launch".to_string()
    } else {
        format!("each of the plan's {n} launches, one after the other")
    };
    let mut out = vec![Block::Text(format!(
        "Model: {which}, on {arch}. Each warp runs its kernel's SASS once up to the last \
         EXIT, after which the compiler puts cold code, each line once and of an if/else the \
         shorter arm. It issues the shortest path, without the body of an if that a branch \
         skips (a predicated instruction, which every warp issues, counts), and moves the \
         bytes of every access, those in such bodies too. Where the kernel has loops \
         loading global memory, the warps make between them the passes of the one loading \
         the most that read the launch's inputs once (the workload's inputs and what earlier \
         launches wrote); other loops count once. Per-SM ceilings are paid launch by launch, \
         a launch of fewer blocks than the {} SMs, or with a short last wave, at the rate of \
         the SMs it keeps busy. Each launch reads its buffers from DRAM and writes them back, \
         so an intermediate one launch writes and the next reads crosses it twice, unless it \
         fits in the {:.0} MB L2, which then serves the read.",
        sol::h100::SMS,
        sol::h100::L2_BYTES / 1e6
    ))];
    out.push(Block::Table(
        [
            "launch",
            "blocks x warps",
            "a warp, outside the loop",
            "the loop: passes, all warps",
            "a pass",
        ]
        .map(String::from)
        .to_vec(),
        launches
            .iter()
            .map(|l| {
                let (passes, pass) = match &l.hot {
                    Some((s, p)) => (format!("{p:.3e}"), summary_cell(s, None)),
                    None => ("no loop".into(), String::new()),
                };
                vec![
                    l.entry.clone(),
                    format!("{} x {}", l.blocks, l.warps_per_block),
                    summary_cell(&l.once, Some(l.shortest)),
                    passes,
                    pass,
                ]
            })
            .collect(),
    ));
    let bound = estimate.bound();
    out.push(ceilings_table(&estimate, bound, false));
    out.push(Block::Text(format!(
        "Estimate: at best {:.4} ms, bound by {}.",
        bound.ms, bound.name
    )));
    let shared = launches.iter().any(|l| {
        l.once.shared_wavefronts.total() > 0
            || l.hot
                .as_ref()
                .is_some_and(|(s, _)| s.shared_wavefronts.total() > 0)
    });
    let launches_word = if n == 1 {
        "its launch".to_string()
    } else {
        format!("each of its {n} launches")
    };
    let bytes = match served {
        Some((at, _)) if shared => format!(
            "Shared memory is what the simulator's warps asked of it at {at}, per warp \
             launched: the wavefronts of the requests of warps with an active lane, bank \
             conflicts included. Bytes are what the warps request: coalescing, L1 hits and \
             broadcasts change what moves."
        ),
        _ => bytes_caveat(banks, shared, &each_launchs(&launches, factors)),
    };
    out.push(Block::Text(format!(
        "{bytes} Latency is not modelled: {launches_word} also pays the GPU's launch latency, \
         and a block waits at each barrier for its slowest warp."
    )));
    out.push(metrics(&estimate));
    let bound = Sol {
        ms: bound.ms,
        bound: bound.name.to_string(),
    };
    Ok((out, bound))
}

/// The factors whose notes the launch model's caveat gives: `plan_wide`'s, or where launches
/// take their own kernel's counts, each kernel's notes named after it.
fn each_launchs(launches: &[sol::LaunchWork], plan_wide: sol::BankFactors) -> sol::BankFactors {
    let mut named = sol::BankFactors::default();
    let mut seen = Vec::new();
    for l in launches {
        let Some(own) = &l.own else {
            return plan_wide;
        };
        if seen.contains(&&l.entry) {
            continue;
        }
        seen.push(&l.entry);
        let name = |notes: &[String]| notes.iter().map(|n| format!("{} {n}", l.entry)).collect();
        named.notes.extend::<Vec<String>>(name(&own.notes));
        named
            .line_notes
            .extend::<Vec<String>>(name(&own.line_notes));
    }
    named
}

/// The names, each once, in their first order.
fn distinct(names: impl IntoIterator<Item = String>) -> Vec<String> {
    names.into_iter().fold(Vec::new(), |mut v, n| {
        if !v.contains(&n) {
            v.push(n);
        }
        v
    })
}

/// One launch of `plan` as the launch model counts it, from its SASS in `listings`, or why it
/// cannot: a loop of multiply-adds (the loop model's, unless `math_elsewhere`: the rung
/// declares the kernels that do its FLOP, and this one's are an exp's polynomial), or a
/// streaming loop inside another loop, whose trip counts the SASS does not give. Where the
/// simulator counted the plan's kernels apart, the launch takes its own kernel's counts.
fn launch_work(
    plan: &CudaPlan,
    listings: &[sass::Listing],
    l: &Launch,
    moved: LaunchBytes,
    math_elsewhere: bool,
    banks: Option<&Result<SimBanks, String>>,
) -> Result<sol::LaunchWork, String> {
    let entry = plan.written_entry(&l.entry);
    let listing = listings
        .iter()
        .find(|x| x.file == l.source.label() && x.entry == l.entry.as_ref())
        .ok_or_else(|| format!("no SASS of {entry}"))?;
    let f = &listing.function;
    if !math_elsewhere
        && f.loops()
            .iter()
            .any(|o| o.summary.flop_fma + o.summary.flop_tensor > 0)
    {
        return Err(format!("the loop of {entry} does multiply-adds"));
    }
    let hot = f.streaming_loop();
    if let Some(h) = &hot
        && f.loops().iter().any(|o| o.contains(h))
    {
        return Err(format!(
            "the loop of {entry} that streams its inputs lies inside another loop, so nothing \
             says how many passes each makes"
        ));
    }
    let read = moved.read as f64;
    let once = f.once_outside(hot.as_ref(), sass::Ifs::Taken);
    let counted_apart =
        matches!(banks, Some(Ok(sim)) if sim.kernels.iter().any(|k| k.entry == entry));
    let own = counted_apart.then(|| {
        let accesses = hot
            .as_ref()
            .map_or(once, |h| once.with_accesses_of(&h.summary));
        bank_factors(banks, plan, &accesses, Some(entry))
    });
    Ok(sol::LaunchWork {
        entry: entry.to_string(),
        blocks: l.blocks(),
        warps_per_block: u64::from(l.threads_per_block().div_ceil(32)),
        once,
        shortest: f
            .once_outside(hot.as_ref(), sass::Ifs::Skipped)
            .instructions,
        hot: hot.map(|h| (h.summary, read / h.summary.global_load_bytes as f64)),
        buffer_bytes: sol::dram_bytes(moved.read, moved.written, &moved.intermediates),
        own,
    })
}

/// A warp's run through some SASS in a table cell: instructions (and those of its shortest
/// path, where fewer), global bytes, shared wavefronts.
fn summary_cell(s: &sass::Summary, shortest: Option<u32>) -> String {
    let mut parts = vec![match shortest.filter(|&n| n < s.instructions) {
        Some(n) => format!("{} instructions ({n} on the shortest path)", s.instructions),
        None => format!("{} instructions", s.instructions),
    }];
    let global = s.global_load_bytes + s.global_store_bytes;
    if global > 0 {
        parts.push(format!("{global} B global"));
    }
    let w = s.shared_wavefronts.total();
    if w > 0 {
        parts.push(format!("{w} shared wavefronts"));
    }
    parts.join(", ")
}
