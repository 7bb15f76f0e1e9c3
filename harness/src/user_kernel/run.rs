//! Runs in the CUDA simulator (`--device sim`, or user kernels where no GPU is): what the rows
//! carry besides their check (resources from NVRTC, the tail hint on failure), the table they
//! are printed in (correctness and resources, never a speed: the simulator gives none), and
//! which rows make the run fail. Also `inspect --kernel`.

use super::hint::{self, KReads, Rows};
use super::signature::Param;
use super::{SIM_SMS, SMS, UserKernel};
use crate::config::Config;
use crate::console::{Progress, Verbosity};
use crate::results::{Row, RunResults, Status};
use crate::run::Ablation;
use crate::{registry, report, resources, select};
use anyhow::{Result, bail};
use kernel::cuda::nvrtc;
use kernel::{DeviceKind, Executor, Kernel, Role, Shape, Workload};
use std::path::Path;

/// The FLOP of a shape from which a run in the simulator says it will be slow: 512^3 GEMM
/// (0.27 GFLOP) takes it seconds a row on two cores.
const LARGE_FOR_THE_SIMULATOR: f64 = 1e9;

/// The architecture whose resources are reported when no GPU ran the kernels.
pub const INSPECT_ARCH: &str = "sm_80";

/// What a run in the simulator gives, in one line: where the resources come from, or why
/// there are none.
pub fn sim_line() -> String {
    match nvrtc::version() {
        Ok(_) => format!(
            "the kernels run in the CUDA simulator for correctness (it never gives a speed), \
             with registers and shared memory from NVRTC ({INSPECT_ARCH}; sm_90a for kernels \
             of that family alone)."
        ),
        Err(e) => format!(
            "the kernels run in the CUDA simulator for correctness (it never gives a speed); no \
             registers or shared memory: {e} (`harness doctor` says what was searched)."
        ),
    }
}

/// The device of a run with user kernels: `--device`, else the GPU if one works. Only a GPU is
/// announced; without one [`in_simulator`] says what happens instead.
pub fn open(device: Option<&str>, sim_blocks: Option<usize>) -> Result<Box<dyn kernel::Executor>> {
    let kind = device.map(select::parse_kind).transpose()?;
    if kind == Some(DeviceKind::Cpu) {
        bail!(
            "--device cpu runs the lab's CPU ports, and a kernel of yours is CUDA: run it with \
             --device sim (the simulator checks it, without a speed) or on a GPU (--device cuda, \
             or no --device)"
        );
    }
    // Without --device, a sample applies to the simulator the user kernels fall back to.
    let (dev, _) = select::open(kind, sim_blocks.filter(|_| kind.is_some()))?;
    if dev.kind() == DeviceKind::Cuda {
        eprintln!("Device: {}", dev.info().name);
    }
    Ok(dev)
}

/// The lab kernels `--kernels` names: all of them when it names none (none at all in a run of
/// the user's kernels, which asks for rungs by name), and none for `--kernels none`; then the
/// rungs the user's kernels are set beside (`against=`), which run with them.
pub fn lab_kernels<'a>(
    all: &'a [Box<dyn Kernel>],
    ids: &[String],
    users: &[UserKernel],
) -> Result<Vec<&'a dyn Kernel>> {
    let mut lab = match ids {
        [none] if none == "none" => {
            if users.is_empty() {
                bail!(
                    "--kernels none leaves nothing to run: give your kernel with --kernel \
                     FILE.cu:ENTRY,... (see docs/your-kernel.md), or name lab kernels"
                );
            }
            return Ok(Vec::new());
        }
        [] if !users.is_empty() => Vec::new(),
        _ => registry::select(all, ids)?,
    };
    for rung in users.iter().filter_map(UserKernel::against) {
        if !lab.iter().any(|k| k.info().id == rung) {
            lab.push(registry::find(all, rung)?);
        }
    }
    Ok(lab)
}

/// `reason` with the name the simulator gives a user's kernel, that of the lab's wrapper it
/// launched, replaced by the entry as its author wrote it.
pub fn as_written(k: &UserKernel, reason: &str) -> String {
    k.entries()
        .fold(reason.to_string(), |reason, (name, entry)| {
            reason.replace(&format!("{name}: "), &format!("{entry}: "))
        })
}

/// Adds to the rows of `results`: NVRTC's resources for [`INSPECT_ARCH`] (or the one family a
/// kernel is compiled for alone) where a row has none and `inspect` (a run without a GPU), and
/// on a user row's failure the tail hint, or, when the kernel fails on a shape of whole tiles
/// too, that shape.
pub fn annotate(
    results: &mut RunResults,
    kernels: &[&dyn Kernel],
    users: &[UserKernel],
    inspect: bool,
    swapped: &[(String, String)],
) {
    // Each user kernel's first failure on a shape without tails: its failures elsewhere are
    // not a tail's doing. (Unless the kernel is not given every input, which explains that
    // failure, its own line says, or the failure is a race, which says nothing of the tails.)
    let mut whole_failures: Vec<(String, String)> = Vec::new();
    for w in &results.workloads {
        for s in &w.shapes {
            for row in &s.rows {
                if row.role == Role::User
                    && row.failed()
                    && !whole_failures.iter().any(|(id, _)| *id == row.id)
                    && let Some(k) = users.iter().find(|k| k.id() == row.id)
                    && k.tail_hint(&s.shape, None, KReads::Unseen, &[]).is_none()
                    && !row.reason.as_deref().is_some_and(is_synchronization)
                    && !untold_causal(k, &s.shape, masks_itself(k, results))
                    && k.unread_inputs(&s.shape).is_empty()
                {
                    whole_failures.push((row.id.clone(), s.shape.label()));
                }
            }
        }
    }
    // The shapes each user kernel passed at: their tails are no cause of a failure elsewhere.
    let passes: Vec<(String, Shape)> = results
        .workloads
        .iter()
        .flat_map(|w| &w.shapes)
        .flat_map(|s| {
            s.rows
                .iter()
                .filter(|r| r.role == Role::User && r.passed())
                .map(|r| (r.id.clone(), s.shape))
        })
        .collect();
    let sim = results.device.kind == kernel::DeviceKind::Sim.name();
    let masking: Vec<&str> = users
        .iter()
        .filter(|k| masks_itself(k, results))
        .map(UserKernel::id)
        .collect();
    for w in &mut results.workloads {
        for s in &mut w.shapes {
            for row in &mut s.rows {
                if inspect
                    && row.resources.is_empty()
                    && let Some(k) = kernels.iter().find(|k| k.info().id == row.id)
                    && k.supports(&s.shape).is_ok()
                    && let Some(plan) = k.cuda(&s.shape)
                {
                    // A kernel of one GPU family alone (sm_90a's wgmma) is reported for it.
                    let arch = plan.required_arch().unwrap_or(INSPECT_ARCH).to_string();
                    row.resources = resources::of_plan(&plan, &arch, None).unwrap_or_default();
                    for r in &mut row.resources {
                        r.entry = plan.written_entry(&r.entry).to_string();
                    }
                }
                if row.role != Role::User || !row.failed() {
                    continue;
                }
                let Some(k) = users.iter().find(|k| k.id() == row.id) else {
                    continue;
                };
                if let Some(reason) = row.reason.as_mut() {
                    *reason = as_written(k, reason);
                }
                // A causal shape for a kernel told nothing of it: it attends to every key. (Its
                // output matching unmasked attention, if the check said so, is said here.)
                if untold_causal(k, &s.shape, masking.contains(&k.id()))
                    && let Some(reason) = row.reason.as_mut()
                {
                    if let Some(at) = reason.find(&format!("\n  {}", crate::run::OTHER_RESULT)) {
                        let end = reason[at + 1..]
                            .find("\n  ")
                            .map_or(reason.len(), |e| at + 1 + e);
                        reason.replace_range(at..end, "");
                    }
                    reason.push_str(
                        "\n  this shape is causal (each query attends to the keys up to its own \
                         position) and the kernel's parameters take no causal flag: a kernel that \
                         attends to every key fails here; pass causal in args= if the kernel \
                         takes one, or run shapes without -causal",
                    );
                    continue;
                }
                // Threads ordered wrongly are not a tile's tail (threads a tail leaves out of
                // a barrier or of shared memory's writes are: those keep the hint), nor is a
                // `__constant__` array too small for the buffer that fills it, a grid barrier
                // without a cooperative launch, a trap the kernel chose, or an epilogue or a
                // mask other than the shape's.
                const NOT_TAILS: [&str; 5] = [
                    ": race on ",
                    "__constant__ ",
                    "needs a cooperative launch",
                    "__trap()",
                    crate::run::OTHER_RESULT,
                ];
                // Two blocks storing the same output element: the output's index, not the
                // order of the stores, is what is wrong.
                let out = s.shape.output().name;
                if let Some(reason) = row.reason.as_mut()
                    && reason.contains(": race on global memory: this thread writes ")
                    && reason
                        .split_once(&format!(" of buffer '{out}', which thread "))
                        .is_some_and(|(_, rest)| {
                            rest.split_once(") wrote")
                                .is_some_and(|(by, _)| by.contains(" of block ("))
                        })
                    && !k.orders_blocks()
                {
                    reason.push_str(&format!(
                        "\n  two blocks store the same element of {out}, the output, where each \
                         element is one block's to write: the kernel's output index maps both \
                         onto it at this shape (does it assume a square output, or sizes that are \
                         whole tiles?). Fences would only order the two stores"
                    ));
                    continue;
                }
                if row
                    .reason
                    .as_deref()
                    .is_some_and(|r| NOT_TAILS.iter().any(|n| r.contains(n)))
                {
                    continue;
                }
                // An output added into while it holds the poison: not a tail's doing either.
                if k.adds_into_poison()
                    && let Some(reason) = row.reason.as_mut()
                    && reason.contains("NaN or infinite")
                {
                    reason.push_str(
                        "\n  the output starts as NaN (each run poisons it, so that an element \
                         never written shows), and this kernel adds into it with atomicAdd: give \
                         output=zero, the clearing its host code does before the launch",
                    );
                    continue;
                }
                // The poison came through a workspace that starts as NaN: an element of it that
                // no launch wrote was read.
                let poisoned = k.nan_workspaces();
                if !poisoned.is_empty()
                    && let Some(reason) = row.reason.as_mut()
                    && reason.contains("the NaN the output was filled with")
                {
                    reason.push_str(&format!(
                        "\n  a scratch() workspace starts as NaN too ({}), as memory cudaMalloc \
                         returns holds whatever was there: an element of it that no launch wrote \
                         and a launch read shows the same way",
                        poisoned.join(", ")
                    ));
                    continue;
                }
                // A sum's one number written past, as a kernel leaving a partial sum per block
                // in y[blockIdx.x] does: its host code launches it again on them.
                if let Some(again) = sum_again(k)
                    && s.shape.workload() == kernel::Workload::Reduce
                    && let Some(reason) = row.reason.as_mut()
                    && reason.contains("past the end of buffer 'y'")
                {
                    reason.push_str(&again);
                    continue;
                }
                // A sum off by no more than FP32's rounding of one running total gives: no
                // element lost, the order of its additions. Integers add exactly.
                if let Shape::Reduce { n } = s.shape
                    && !matches!(k.buffers.output, kernel::Dtype::I32 | kernel::Dtype::S8)
                    && let Some(c) = row.check
                    && c.nonfinite == 0
                    && c.unwritten == 0
                    && c.rel_error <= 2.0 * serial_sum_scale(n)
                    && let Some(reason) = row.reason.as_mut()
                {
                    reason.push_str(&format!(
                        "\n  that is the size of the rounding error of a sum taken as one FP32 \
                         running total (about 2^-24 x sqrt(N) = {:.1e} here): each addition \
                         rounds at the size of the whole sum. An atomicAdd of every element into \
                         one address, or one thread's loop, adds so; a tree of partial sums (per \
                         warp, per block, then across blocks) stays within the bound",
                        serial_sum_scale(n)
                    ));
                    continue;
                }
                // An error within TF32's and FP16's bound, every element written: a kernel that
                // rounds in one of them (tensor cores, __half arithmetic) over f32 buffers.
                let coarse = kernel::Precision::Fp16.tolerance();
                if row.precision == kernel::Precision::Fp32
                    && let Some(c) = row.check
                    && c.nonfinite == 0
                    && c.unwritten == 0
                    && c.rel_error <= coarse
                    && let Some(reason) = row.reason.as_mut()
                {
                    reason.push_str(&format!(
                        "\n  the error is within the {coarse:.0e} bound of TF32 and FP16: a kernel \
                         that rounds its operands or its sums to either (tensor cores, __half \
                         arithmetic) while its buffers are f32 is judged by that bound with \
                         precision=tf32 or precision=fp16"
                    ));
                }
                // Wrong numbers from a warp-synchronous step through volatile memory: a race the
                // simulator reports in shared memory, and cannot tell in global memory from a
                // flag another block sets.
                if row.status == Status::Failed
                    && let Some(c) = row.check
                    && c.nonfinite == 0
                    && c.unwritten == 0
                    && k.uses_volatile_memory()
                    && let Some(reason) = row.reason.as_mut()
                {
                    reason.push_str(
                        "\n  the kernel's files access memory through volatile: a warp's threads do not \
                         run in lockstep (on Volta and later GPUs, and in the simulator), and \
                         volatile orders nothing, so a warp-synchronous step that reads what \
                         another lane of its warp wrote, with no __syncwarp() between the write \
                         and the read, may read the old value. In shared memory the simulator \
                         reports such a read as a race; in global memory it cannot tell one from \
                         a flag that another block sets",
                    );
                }
                // Inputs the kernel is never given: the reference applies them all.
                let unread = k.unread_inputs(&s.shape);
                if row.status == Status::Failed
                    && !unread.is_empty()
                    && let Some(reason) = row.reason.as_mut()
                {
                    reason.push_str(&format!(
                        "\n  the kernel is given no {}: the reference applies every input of the \
                         {} workload, so a kernel that leaves one out cannot match it; pass it in \
                         args= if the kernel takes it, or, for a kernel that takes one number in \
                         its place (a scale g, a shift b), give that number as a float in args= \
                         and the same with input={}:VALUE, which fills the input with it",
                        unread.join(" or "),
                        w.workload,
                        unread[0]
                    ));
                    continue;
                }
                // A grid whose x and y the kernel takes the other way round: the experiment
                // ([`swapped_grids`]) says so, and no tail is to blame.
                if let Some((_, hint)) = swapped.iter().find(|(id, _)| *id == row.id)
                    && let Some(reason) = row.reason.as_mut()
                {
                    reason.push_str("\n  ");
                    reason.push_str(hint);
                    continue;
                }
                let first_bad = row
                    .check
                    .and_then(|c| c.first_unwritten.or(c.first_nonfinite));
                let layouts = layout_hint(w.workload, row);
                // (A shape with no tails of its own gets no word of them.)
                let tails_here = || k.tail_hint(&s.shape, None, KReads::Unseen, &[]).is_some();
                let hint = match whole_failures.iter().find(|(id, _)| *id == row.id) {
                    Some((_, whole)) if *whole != s.shape.label() && tails_here() => Some(format!(
                        "it fails on {whole} too, where the lab finds no partial tile: look for a \
                         cause other than the tails{}",
                        layouts.map(|l| format!("; {l}")).unwrap_or_default()
                    )),
                    Some(_) => layouts,
                    // A race or a read of a copy not landed is a fault of synchronization,
                    // which the message shows at its line: sizes do not explain it.
                    None if sim && row.reason.as_deref().is_some_and(is_synchronization) => None,
                    // Nor a file that did not compile.
                    None if row.reason.as_deref().is_some_and(is_compile_error) => None,
                    // A result wrong through and through points at the layouts first, then at
                    // tails the grid suggests (which a grid of other tiles than the kernel's
                    // can suggest where there are none).
                    None => {
                        let passed: Vec<&Shape> = (passes.iter())
                            .filter(|(id, _)| *id == row.id)
                            .map(|(_, shape)| shape)
                            .collect();
                        let reads = k_reads(sim, row, k, &s.shape);
                        let tails = k.tail_hint(&s.shape, first_bad, reads, &passed);
                        match (layouts, tails) {
                            (Some(l), Some(t)) => Some(format!("{l}\n  {t}")),
                            (l, t) => l.or(t),
                        }
                    }
                };
                let ldm = row
                    .reason
                    .as_deref()
                    .and_then(|r| wmma_ldm_dims(r, &s.shape));
                let hint = match (ldm, hint) {
                    (Some(l), Some(h)) => Some(format!("{l}\n  {h}")),
                    (l, h) => l.or(h),
                };
                if let (Some(hint), Some(reason)) = (hint, row.reason.as_mut()) {
                    reason.push_str("\n  ");
                    reason.push_str(&hint);
                }
            }
        }
    }
}

/// The typical relative error of an FP32 sum of `n` terms of one sign added one after
/// another: each rounding is up to half an ulp of the running total, and they add as a random
/// walk, 2^-24 x sqrt(n).
fn serial_sum_scale(n: usize) -> f64 {
    (n as f64).sqrt() * f64::from(f32::EPSILON) / 2.0
}

/// For each user kernel that failed in the simulator, whether the same launch with its grid's
/// x and y swapped ([`UserKernel::with_grid_swapped`]) passes at every shape it ran; for each
/// that does, its id and the hint that says so, which [`annotate`] gives its failures in place
/// of a tail's. Only failures a grid can explain are tried: a wrong or unwritten result, an
/// access out of bounds; not a hang, a race, a trap or a compile error. The variant runs in
/// a simulator of its own, each launch limited to [`SWAP_LAUNCH_LIMIT`]. `say`: whether to
/// print a line before each try.
pub fn swapped_grids(
    sim_blocks: Option<usize>,
    config: &Config,
    users: &[UserKernel],
    results: &RunResults,
    say: bool,
) -> Vec<(String, String)> {
    // Opened at the first kernel to try.
    let mut sim: Option<kernel::sim::SimDevice> = None;
    let mut out = Vec::new();
    for k in users {
        let rows: Vec<(&Shape, &Row)> = results
            .workloads
            .iter()
            .flat_map(|w| &w.shapes)
            .flat_map(|s| s.rows.iter().map(move |r| (&s.shape, r)))
            .filter(|(_, r)| r.id == k.id() && r.status != Status::Unsupported)
            .collect();
        // Every failure is one a grid can explain, at a shape whose inputs the kernel is given.
        let explained = rows.iter().filter(|(_, r)| !r.passed()).all(|(s, r)| {
            let out_of_bounds = r.reason.as_deref().is_some_and(|m| {
                m.contains("out-of-bounds") && !is_synchronization(m) && !is_compile_error(m)
            });
            (r.status == Status::Failed || out_of_bounds)
                && !r
                    .reason
                    .as_deref()
                    .is_some_and(|m| m.contains(crate::run::OTHER_RESULT))
                && k.unread_inputs(s).is_empty()
                && !untold_causal(k, s, masks_itself(k, results))
        });
        // Swapping x and y changes nothing where the output and the tile are both square:
        // the first failure tried is at an output that is not.
        let square = |s: &Shape| {
            let d = s.output().dims;
            d.len() < 2 || d[d.len() - 1] == d[d.len() - 2]
        };
        let first = rows.iter().find(|(s, r)| !r.passed() && !square(s));
        let Some(&(first, _)) = first.filter(|_| explained) else {
            continue;
        };
        let (Some(given), Some((variant, grid))) = (&k.spec.grid, k.with_grid_swapped(first))
        else {
            continue;
        };
        if sim.is_none() {
            sim = select::simulator(sim_blocks)
                .ok()
                .map(|d| d.with_timeout(SWAP_LAUNCH_LIMIT));
        }
        let Some(dev) = &sim else {
            return out;
        };
        if say {
            println!("trying {} with its grid's x and y swapped ({grid})", k.id());
        }
        // The first failure first: most kernels fail there again, and the rest need no run.
        let passes = |shapes: Vec<Shape>| {
            let ablation = Ablation {
                dev,
                config,
                kernels: vec![&variant],
                shapes: vec![(k.workload, shapes)],
                timing: None,
                keep_unrunnable: true,
            };
            ablation.run(|_| {}).is_ok_and(|r| {
                r.workloads
                    .iter()
                    .flat_map(|w| &w.shapes)
                    .flat_map(|s| &s.rows)
                    .all(Row::passed)
            })
        };
        let rest: Vec<Shape> = rows
            .iter()
            .map(|(s, _)| **s)
            .filter(|s| s != first)
            .collect();
        if !passes(vec![*first]) || !passes(rest) {
            if say {
                println!("  it fails that way too: the grid's axes are not what fails it");
            }
            continue;
        }
        if say {
            println!("  it passes that way (see its failures below)");
        }
        let given_text = given.option();
        let axes = match given {
            super::Grid::Tile(_) => {
                let (r, c) = super::hint::output_axes(first);
                format!(
                    "the kernel takes blockIdx.x across {}'s rows ({r}), where {given_text} \
                     sends x across its columns ({c})",
                    first.output().name
                )
            }
            super::Grid::Exprs(_) => format!(
                "the kernel takes blockIdx.x and blockIdx.y across the other axes than \
                 {given_text} gives them"
            ),
        };
        out.push((
            k.id().to_string(),
            format!(
                "with its grid's x and y swapped, {grid}, it passes at every shape here: \
                 {axes}; launch it with {grid}, or swap blockIdx.x and blockIdx.y in the kernel"
            ),
        ));
    }
    out
}

/// How long one launch of a kernel tried with its grid swapped may run in the simulator: the
/// small shapes it is tried at take seconds, and a launch the swap sends into a loop that
/// never ends must not hold the run.
const SWAP_LAUNCH_LIMIT: std::time::Duration = std::time::Duration::from_secs(20);

/// For a GEMM or an attention whose result is wrong through and through (every element
/// written, a relative error past 10%), the usual cause: an operand read in another layout or
/// type than given.
fn layout_hint(workload: Workload, row: &Row) -> Option<String> {
    let check = row.check.as_ref()?;
    let wrong = row.status == Status::Failed
        && check.rel_error.is_finite()
        && check.rel_error > 0.1
        && check.nonfinite == 0
        && check.unwritten == 0;
    let layouts = match workload {
        Workload::Gemm => {
            "reads A and B and writes C in the layouts it is given (row-major by default; \
             a=col, b=col and c=col give column-major A, B and C)"
        }
        Workload::Attention => {
            "reads Q, K and V and writes O in the layouts it is given ([B][H][S][D] by \
             default; layout=bshd gives [B][S][H][D], k=col and v=col a head's K or V \
             transposed, [D][S])"
        }
        _ => return None,
    };
    wrong.then(|| {
        format!(
            "a relative error of {:.1} is no rounding: check that the kernel {layouts} and \
             types (dtype=)",
            check.rel_error
        )
    })
}

/// Whether a simulator error is one of synchronization: a race, or an access to bytes a
/// `cp.async` has not landed in.
fn is_synchronization(reason: &str) -> bool {
    [
        "race on shared memory",
        "race on global memory",
        "cp.async not landed",
        // A block of a cluster that exits while its partner still arrives on its barriers or
        // multicasts into it: the message says to end both with a cluster barrier.
        "whose threads have all exited",
    ]
    .iter()
    .any(|e| reason.contains(e))
}

/// The dimensions of `shape` a WMMA tile's `ldm` in global memory equals, which the simulator
/// failed for not being a multiple of 16 bytes: "ldm 37 is N here: ...".
fn wmma_ldm_dims(reason: &str, shape: &Shape) -> Option<String> {
    if !reason.contains("the tile is not in shared memory, so ldm is") {
        return None;
    }
    let (_, rest) = reason.split_once("_matrix_sync: ldm ")?;
    let mut words = rest.split(' ');
    let ldm: usize = words.next()?.parse().ok()?;
    let elem: usize = words.nth(2)?.parse().ok()?;
    let dims: Vec<&str> = super::vars(shape, SIM_SMS)
        .into_iter()
        .filter(|&(d, v)| d != SMS && v == ldm)
        .map(|(d, _)| d)
        .collect();
    let named = match dims.as_slice() {
        [] => return None,
        [d] => d.to_string(),
        [d, rest @ ..] => format!("{d} (or {})", rest.join(", ")),
    };
    Some(format!(
        "ldm {ldm} is {named} here: a kernel that loads or stores its WMMA tiles straight from \
         global memory needs {named} to be a multiple of {} elements",
        16 / elem.max(1)
    ))
}

/// Whether a row's reason is a compiler's log ([`kernel::DeviceError::Compile`]).
fn is_compile_error(reason: &str) -> bool {
    reason
        .lines()
        .next()
        .is_some_and(|l| l.contains(" could not compile ") && l.ends_with(':'))
}

/// What `row`'s run saw of the reads past a K tail. The simulator checks every read against
/// its buffer and stops at the first error: a wrong result means no read went past one; a
/// read past a buffer, of shared memory no thread wrote (noted beside a wrong result, where
/// the run went on) or off its alignment may be a K tail's doing; any other error stopped
/// the run before such a read.
fn k_reads(sim: bool, row: &Row, k: &UserKernel, shape: &Shape) -> KReads {
    match row.status {
        _ if !sim => KReads::Unseen,
        Status::Failed
            if row
                .reason
                .as_deref()
                .is_some_and(|r| r.contains("uninitialized shared memory")) =>
        {
            KReads::UnwrittenShared
        }
        Status::Failed if row.check.is_some_and(|c| c.poisoned > 0 || c.unwritten > 0) => {
            KReads::Unwritten
        }
        Status::Failed => KReads::InBounds,
        Status::Error => {
            let said = row.reason.as_deref().unwrap_or("");
            match error_reads(said) {
                KReads::Misaligned { write, .. } => KReads::Misaligned {
                    write,
                    rows: misaligned_buffer(said)
                        .and_then(|b| Rows::of(shape, b, k.buffers.a, k.buffers.b)),
                },
                KReads::Unseen => past_buffer(said)
                    .and_then(|b| hint::buffer_dims(shape, b))
                    .map_or(KReads::Unseen, |dims| KReads::PastBuffer { dims }),
                reads => reads,
            }
        }
        _ => KReads::Unseen,
    }
}

/// The buffer a read out of bounds names: "out-of-bounds read past the end of buffer 'B'".
fn past_buffer(said: &str) -> Option<&str> {
    let (_, rest) = said.split_once("out-of-bounds read ")?;
    let (_, name) = rest.split_once(" of buffer '")?;
    name.split_once('\'').map(|(name, _)| name)
}

/// The buffer a misaligned access names: "... at byte 7998 (element 3999) of buffer 'A', ...",
/// or a misaligned `cp.async`'s source: "cp.async of 16 bytes from byte 140 (element 35) of
/// buffer 'A', ...".
fn misaligned_buffer(said: &str) -> Option<&str> {
    let (_, rest) = said
        .split_once("misaligned address: ")
        .or_else(|| said.split_once(CP_ASYNC_FROM))?;
    let (_, name) = rest.split_once(" of buffer '")?;
    name.split_once('\'').map(|(name, _)| name)
}

/// How the simulator names a `cp.async`'s global source in its errors.
const CP_ASYNC_FROM: &str = " bytes from byte ";

/// [`k_reads`] of a simulator error that said `said` (a misaligned access's rows are told by
/// [`misaligned_buffer`]).
fn error_reads(said: &str) -> KReads {
    /// Errors of a read a K tail may explain: past a buffer, or at no buffer's address.
    const PAST: [&str; 2] = ["out-of-bounds read", "invalid read at address"];
    // A read out of bounds of shared memory ("reads 4 bytes at byte 512 of __shared__ 'As',
    // which has 512 bytes: out of bounds").
    let past_shared = said.contains(": reads ") && said.contains(": out of bounds");
    if said.contains("uninitialized shared memory") {
        KReads::UnwrittenShared
    } else if said.contains("misaligned address: this thread reads")
        || (said.contains(CP_ASYNC_FROM) && said.contains("-byte boundary: both addresses"))
    {
        KReads::Misaligned {
            write: false,
            rows: None,
        }
    } else if said.contains("misaligned address: this thread writes") {
        KReads::Misaligned {
            write: true,
            rows: None,
        }
    } else if past_shared || PAST.iter().any(|e| said.contains(e)) {
        KReads::Unseen
    } else {
        // A race, a deadlock at a barrier, an mbarrier or cluster misused, a write out of bounds,
        // a launch that did not finish: nothing points at K.
        KReads::OtherError
    }
}

/// Whether `shape` is causal and the kernel's parameters take no causal flag: it attends to
/// every key there, whatever its tiles. Not for a kernel that passed a causal shape
/// ([`masks_itself`]): its mask is its own (fixed when it was written or compiled).
fn untold_causal(k: &UserKernel, shape: &Shape, masks_itself: bool) -> bool {
    matches!(shape, Shape::Attention { causal: true, .. })
        && !k.passes(Param::Causal)
        && !masks_itself
}

/// Whether the kernel passed a causal shape of `results`.
fn masks_itself(k: &UserKernel, results: &RunResults) -> bool {
    results
        .workloads
        .iter()
        .flat_map(|w| &w.shapes)
        .filter(|s| matches!(s.shape, Shape::Attention { causal: true, .. }))
        .flat_map(|s| &s.rows)
        .any(|r| r.id == k.id() && r.passed())
}

/// The workloads of a run with user kernels and no `--workload`: theirs.
pub fn workloads(users: &[UserKernel]) -> Vec<Workload> {
    let mut out: Vec<Workload> = users.iter().map(|u| u.workload).collect();
    out.sort();
    out.dedup();
    out
}

/// One line per row that did not pass and should have: failed or errored rows, and rows that
/// could not run among `wanted` (the user's kernels and the lab kernels named on the command
/// line). `gemm 100x37x129 id: why`.
pub fn did_not_pass(results: &RunResults, wanted: &[String]) -> Vec<String> {
    let mut out = Vec::new();
    for w in &results.workloads {
        for s in &w.shapes {
            for r in &s.rows {
                let bad = match r.status {
                    Status::Failed | Status::Error => true,
                    Status::Unsupported => wanted.contains(&r.id),
                    Status::Passed => false,
                };
                if bad {
                    out.push(format!(
                        "{} {} {}: {}{}",
                        w.workload,
                        s.label,
                        r.id,
                        if r.status == Status::Unsupported {
                            "could not run: "
                        } else {
                            ""
                        },
                        r.reason.as_deref().unwrap_or("no reason recorded")
                    ));
                }
            }
        }
    }
    out
}

/// A run in the simulator: the user kernels and the lab kernels `lab` on the simulator's
/// shapes (or `--sizes`), checked, never timed, the resources from NVRTC. Writes a run folder
/// (`out`, or a new one under target/lab/runs/). `Ok(false)` when a row failed, or one that
/// was asked for could not run.
#[allow(clippy::too_many_arguments)]
pub fn in_simulator(
    config: &Config,
    users: &[UserKernel],
    lab: Vec<&dyn Kernel>,
    named: bool,
    workload_names: &[String],
    sizes: &[String],
    out: Option<&Path>,
    device: Option<&str>,
    sim_blocks: Option<usize>,
    verbosity: Verbosity,
) -> Result<bool> {
    match device {
        Some(d) => println!("--device {d}: {}", sim_line()),
        None => println!(
            "No GPU (`harness doctor` says why): no GPU timing was possible; {}",
            sim_line()
        ),
    }
    for note in kernel::cuda::discovery::discovery().notes() {
        eprintln!("{note}");
    }
    let sized_by_sms: Vec<&str> = users
        .iter()
        .filter(|u| u.uses_sms())
        .map(|u| u.id())
        .collect();
    if !sized_by_sms.is_empty() {
        println!(
            "{SMS} is {SIM_SMS} here, where on a GPU it is the GPU's SM count ({}).",
            sized_by_sms.join(", ")
        );
    }
    // Every row's global-memory traffic counted, for the roofline's intensity.
    let dev = select::simulator(sim_blocks)?;
    let default_workloads = if !users.is_empty() {
        workloads(users)
    } else if named {
        select::workloads_of(&lab)
    } else {
        config.device(DeviceKind::Sim).workloads.clone()
    };
    let workloads = select::workloads(workload_names, &default_workloads)?;
    if named {
        select::kernels_in(&lab, &workloads)?;
    }
    let lenient = workload_names.is_empty() && !sizes.is_empty();
    let (shapes, notes) = select::shapes(config, "sim", &workloads, sizes, lenient)?;
    for n in notes {
        println!("{n}");
    }
    // The simulator runs every thread on the CPU: a shape a GPU finishes in a millisecond can
    // take it minutes a row, which is better said before than found out.
    if sim_blocks.is_none() {
        for (w, list) in &shapes {
            for s in list.iter().filter(|s| s.flops() > LARGE_FOR_THE_SIMULATOR) {
                println!(
                    "{w} {}: {:.1} GFLOP is large for the simulator, which runs every thread on \
                     the CPU: expect minutes a row, or check a sample of each launch's blocks \
                     with --sim-blocks N",
                    s.label(),
                    s.flops() / 1e9
                );
            }
        }
    }
    let mut wanted: Vec<String> = users.iter().map(|u| u.id().to_string()).collect();
    if named {
        wanted.extend(lab.iter().map(|k| k.info().id.to_string()));
    }
    let mut kernels = lab;
    kernels.extend(users.iter().map(|u| u as &dyn Kernel));
    // Rows kept even where the simulator cannot run them: each one is an event.
    let rows = shapes
        .iter()
        .map(|(w, list)| list.len() * kernels.iter().filter(|k| k.info().workload == *w).count())
        .sum();
    let planned = crate::runs::Checkpoint::planned(&shapes);
    let lab_dir = crate::runs::LabDir::locate();
    let checkpoint = crate::runs::Checkpoint::new(out, &lab_dir, &dev.info().slug, &planned, None);
    checkpoint.announce(verbosity);
    let ablation = Ablation {
        dev: &dev,
        config,
        kernels: kernels.clone(),
        shapes,
        timing: None,
        keep_unrunnable: true,
    };
    let mut progress = Progress::new(rows, verbosity);
    let mut results = checkpoint.run(&ablation, |e| progress.event(e))?;
    progress.finish();
    let swapped = swapped_grids(
        sim_blocks,
        config,
        users,
        &results,
        !matches!(verbosity, Verbosity::Quiet),
    );
    annotate(
        &mut results,
        &kernels,
        users,
        nvrtc::version().is_ok(),
        &swapped,
    );
    results.user_kernels = users.iter().map(super::record::KernelRecord::of).collect();
    // The report's simulator table: correctness and resources, never a speed; rows that
    // failed are listed under it, skipped ones by reason within each shape.
    match verbosity {
        Verbosity::Quiet => print!("{}", report::failures_text(&results)),
        _ => print!("{}", report::terminal(&results)),
    }
    let bad = did_not_pass(&results, &wanted);
    let unrun: Vec<&String> = bad
        .iter()
        .filter(|l| l.contains(": could not run: "))
        .collect();
    if !unrun.is_empty() {
        println!(
            "\n{} you asked for could not run:",
            crate::report::table::count(unrun.len(), "row")
        );
        for u in unrun {
            println!("  {u}");
        }
    }
    let dir = crate::runs::save(&results, out, &lab_dir)?;
    checkpoint.finish();
    crate::console::print_run_folder(&dir, verbosity);
    Ok(bad.is_empty())
}

/// `harness inspect --kernel SPEC`: NVRTC's report for each user kernel's launch, in the
/// columns of the rungs' report, at the shape `shape_of` gives its workload (with where that
/// shape comes from), which the dynamic shared memory is evaluated for.
pub fn inspect(
    users: &[UserKernel],
    archs: &[String],
    shape_of: impl Fn(Workload) -> Result<(Shape, &'static str)>,
    sass: bool,
) -> Result<bool> {
    kernel::cuda::nvrtc::version()
        .map_err(|e| anyhow::anyhow!("harness inspect needs NVRTC: {e}"))?;
    let tool = sass.then(crate::sass::Disassembler::find).transpose()?;
    let mut listings = Vec::new();
    let width = users.iter().map(|u| u.id().len()).max().unwrap_or(6).max(6);
    let entry = users
        .iter()
        .flat_map(|u| u.entries().map(|(_, e)| e.len()))
        .max()
        .unwrap_or(5)
        .max(5);
    println!(
        "{:<width$} {:<entry$} {:<7} {:>7} {:>5} {:>9} {:>6} {:>11} {:>10}",
        "kernel", "entry", "arch", "threads", "regs", "smem B", "stack", "spill st/ld", "occupancy"
    );
    let mut ok = true;
    let mut advised = Vec::new();
    for u in users {
        let (shape, whence) = shape_of(u.workload)?;
        if let Err(why) = u.supports(&shape) {
            ok = false;
            println!("{:<width$} {}: {why}", u.id(), shape.label());
            continue;
        }
        let Some(plan) = u.cuda(&shape) else { continue };
        for arch in archs {
            // A kernel of one GPU family (sm_90a's wgmma) has no build for the others: said,
            // not a failure.
            if let Err(kernel::Unsupported(why)) = nvrtc::check_target(&plan, arch) {
                println!("{:<width$} {arch}: {why}", u.id());
                continue;
            }
            match resources::of_plan(&plan, arch, None) {
                Ok(list) => {
                    for r in list {
                        let written = plan.written_entry(&r.entry);
                        println!(
                            "{:<width$} {:<entry$} {:<7} {}",
                            u.id(),
                            written,
                            r.arch,
                            r.columns()
                        );
                        advised
                            .extend(r.advisories.iter().map(|a| (u.id().to_string(), a.clone())));
                    }
                }
                Err(e) => {
                    ok = false;
                    println!("{:<width$} {arch}: {e}", u.id());
                }
            }
            if let Some(tool) = &tool {
                match crate::sass::of_plan(tool, &plan, arch) {
                    Ok(list) => listings.extend(list.into_iter().map(|l| (u.id().to_string(), l))),
                    Err(e) => {
                        ok = false;
                        println!("{:<width$} {arch}: {e}", u.id());
                    }
                }
            }
        }
        let smem = match &u.spec.smem {
            Some(e) => format!(", dynamic shared memory {e}"),
            None => String::new(),
        };
        println!("  ({} {}{smem}: {whence})", u.workload, shape.label());
        if let Some(why) = &u.wrapped {
            println!("  launched through a converting wrapper: {why}");
        }
        if let Some(why) = &u.arch_note {
            println!("  {why}");
        }
    }
    crate::cmd::inspect::print_advisories(&advised);
    crate::sass::print(&listings);
    Ok(ok)
}

/// The hint for a sum of one launch that writes past y: the launches its host code adds.
fn sum_again(k: &UserKernel) -> Option<String> {
    if !k.spec.then.is_empty() {
        return None;
    }
    if k.spec.cooperative {
        // A kernel that meets its whole grid at a grid.sync() adds the partial sums itself,
        // into y[0]: a second launch on them would count the sum twice.
        return Some(
            "\n  y holds one number, the sum, and this kernel writes past it: a cooperative \
             kernel like this one leaves a partial sum per block in y[blockIdx.x] and, after \
             its grid.sync(), adds them into y[0], so its host code gives y a number per block. \
             The lab's y has room for one: run it with grid=1, where its one block adds the \
             whole vector"
                .to_string(),
        );
    }
    let grid = match &k.spec.grid {
        Some(super::spec::Grid::Exprs(e)) => e.first()?.to_string().replace(' ', ""),
        _ => "GRID".into(),
    };
    Some(format!(
        "\n  y holds one number, the sum, and this kernel writes past it, as a kernel that leaves \
         a partial sum per block in y[blockIdx.x] does; its host code launches it again on \
         them. Give the first launch a workspace for them and launch the kernel again on it, \
         as docs/your-kernel.md shows for NVIDIA's reduction sample: \
         args=(x,scratch(part,4*{grid}),N),then={entry},grid=1,args=(part,y,{grid}), each \
         launch with its block= and smem=. One block of a kernel that reads an element per \
         thread sums only a block's worth: such a kernel takes as many launches as its host \
         code's loop makes",
        entry = k.spec.entry,
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Hazards of synchronization get no word of tiles: a tail does not explain them, and at
    /// the simulator's awkward shapes every kernel has one.
    #[test]
    fn synchronization_hazards_are_told_apart() {
        for said in [
            "k: race on shared memory: thread (3,0,0) reads",
            "k: mbarrier.arrive.shared::cluster targets block (0,0,0) of the cluster, whose \
             threads have all exited (its shared memory is gone: end both blocks with a cluster \
             barrier)",
        ] {
            assert!(is_synchronization(said), "{said}");
        }
        assert!(!is_synchronization(
            "k: out-of-bounds read past the end of buffer 'A' at element 9"
        ));
    }

    /// A WMMA ldm off 16 bytes in global memory is named by the dimensions it equals.
    #[test]
    fn a_wmma_ldm_in_global_memory_names_its_dimension() {
        let said = "k: wmma::load_matrix_sync: ldm 37 elements of 2 bytes is 74 bytes between \
                    rows, not a multiple of 16 (...): the tile is not in shared memory, so ldm is \
                    the length of the matrix's rows: ...";
        assert_eq!(
            wmma_ldm_dims(said, &Shape::gemm(100, 37, 129)).as_deref(),
            Some(
                "ldm 37 is N here: a kernel that loads or stores its WMMA tiles straight from \
                 global memory needs N to be a multiple of 8 elements"
            )
        );
        let both = wmma_ldm_dims(said, &Shape::gemm(100, 37, 37)).unwrap();
        assert!(both.starts_with("ldm 37 is N (or K) here"), "{both}");
        // In shared memory the padding is the kernel's: no dimension is to blame.
        let shared = said.replace(
            "the tile is not in shared memory, so ldm is",
            "pad the rows",
        );
        assert_eq!(wmma_ldm_dims(&shared, &Shape::gemm(100, 37, 129)), None);
    }

    #[test]
    fn a_misaligned_access_names_its_buffer() {
        let said = "k: misaligned address: this thread reads 4 bytes at byte 7998 (element \
                    3999) of buffer 'A', which is not a multiple of 4 (...)";
        assert_eq!(misaligned_buffer(said), Some("A"));
        let shared = "k: misaligned address: this thread reads 16 bytes at byte 8 of \
                      __shared__ 'As', which is not a multiple of 16";
        assert_eq!(misaligned_buffer(shared), None);
        assert_eq!(
            misaligned_buffer("k: race on global memory of buffer 'C'"),
            None
        );
        let copy = "k: cp.async of 16 bytes from byte 140 (element 35) of buffer 'A', 12 bytes \
                    past a 16-byte boundary: both addresses must be 16-byte aligned";
        assert_eq!(misaligned_buffer(copy), Some("A"));
    }

    #[test]
    fn only_reads_a_k_tail_can_explain_point_at_k() {
        let cases = [
            (
                "k: out-of-bounds read past the end of buffer 'A' at element 9",
                KReads::Unseen,
            ),
            (
                "k: invalid read at address 0x10 (in no buffer: ...)",
                KReads::Unseen,
            ),
            (
                "k: reads 4 bytes at byte 512 of __shared__ 'As', which has 512 bytes: out of \
                 bounds",
                KReads::Unseen,
            ),
            (
                "k: uninitialized shared memory: this thread reads __shared__ 'Bs'",
                KReads::UnwrittenShared,
            ),
            (
                "k: misaligned address: this thread reads 4 bytes at byte 7998",
                KReads::Misaligned {
                    write: false,
                    rows: None,
                },
            ),
            (
                "k: misaligned address: this thread writes 8 bytes at byte 11804 (element \
                 2951) of buffer 'C'",
                KReads::Misaligned {
                    write: true,
                    rows: None,
                },
            ),
            (
                "k: cp.async of 16 bytes from byte 140 (element 35) of buffer 'A', 12 bytes past \
                 a 16-byte boundary: both addresses must be 16-byte aligned",
                KReads::Misaligned {
                    write: false,
                    rows: None,
                },
            ),
            (
                "k: cp.async of 16 bytes to shared memory at 0x7f00, 8 bytes past a 16-byte \
                 boundary: both addresses must be 16-byte aligned",
                KReads::OtherError,
            ),
            (
                "k: writes 4 bytes at byte 512 of __shared__ 'As', which has 512 bytes: out of \
                 bounds",
                KReads::OtherError,
            ),
            (
                "k: out-of-bounds write past the end of buffer 'C'",
                KReads::OtherError,
            ),
            (
                "k: mbarrier.inval of a barrier with arrivals pending",
                KReads::OtherError,
            ),
            (
                "k: deadlock at __syncthreads in block (0,0,0): 48 threads wait",
                KReads::OtherError,
            ),
        ];
        for (said, want) in cases {
            assert_eq!(error_reads(said), want, "{said}");
        }
    }
}
