//! The `Kernel` trait: what every rung of every stage says about itself and how it runs.

use crate::device::DeviceInfo;
use crate::plan::{CudaPlan, Text};
use crate::workload::{OutputLayout, Shape, Workload};
use serde::{Deserialize, Serialize};
use std::fmt;

/// The stage crate a kernel comes from, in the order the lab teaches them.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Stage {
    Baseline,
    RestrictUnroll,
    Fusion,
    Tensorcore,
    Fp16,
    FlashAttn,
    /// Whole networks built from the other stages' kernels, one row per rung swapped in.
    Networks,
    /// Not a rung: a library or peer implementation shown beside the ladder (cuBLAS, a CPU crate).
    Reference,
    /// A kernel the user brought (`harness run --kernel FILE.cu:ENTRY`).
    User,
}

impl Stage {
    pub fn name(self) -> &'static str {
        match self {
            Self::Baseline => "baseline",
            Self::RestrictUnroll => "restrict-unroll",
            Self::Fusion => "fusion",
            Self::Tensorcore => "tensorcore",
            Self::Fp16 => "fp16",
            Self::FlashAttn => "flash-attn",
            Self::Networks => "networks",
            Self::Reference => "reference",
            Self::User => "user",
        }
    }
}

impl fmt::Display for Stage {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// The arithmetic a kernel uses; it decides the error bound its output is judged by.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Precision {
    /// FP32 inputs, FP32 arithmetic.
    Fp32,
    /// FP32 inputs rounded to TF32 (10-bit mantissa) in the tensor cores, FP32 accumulation.
    Tf32,
    /// FP16 inputs (or storage), FP32 accumulation.
    Fp16,
    /// BF16 inputs (or storage), FP32 accumulation: FP32's range with an 8-bit mantissa.
    Bf16,
    /// FP8 inputs (E4M3 or E5M2), FP32 accumulation, the output in a wider type: checked
    /// against a reference of the FP8 values themselves, since rounding to 3 or 2 mantissa
    /// bits moves each input by up to 6% or 12%, more than any bound that still catches a
    /// wrong kernel.
    Fp8,
}

impl Precision {
    pub fn name(self) -> &'static str {
        match self {
            Self::Fp32 => "fp32",
            Self::Tf32 => "tf32",
            Self::Fp16 => "fp16",
            Self::Bf16 => "bf16",
            Self::Fp8 => "fp8",
        }
    }

    /// Largest accepted relative error ||out - ref|| / ||ref|| (Frobenius norms) against an f64
    /// reference on the unrounded FP32 inputs. FP32 sums of K products drift by about
    /// sqrt(K) * 2^-24 relative; TF32 and FP16 inputs carry 2^-11 rounding each, and share a
    /// bound; BF16 inputs 2^-8, eight times as much, and so eight times the bound. The 16-bit
    /// rows of the published runs stay within a quarter of these bounds (`harness/tests/
    /// walkthroughs.rs` holds them to it), while a GEMM that keeps its sums in half precision
    /// misses the FP16 one at K = 2048 (`harness/tests/user_kernels.rs`). FP8's reference is
    /// of the FP8 values (see
    /// [`Precision::Fp8`]): its bound covers the output a BF16 rounds to and the tensor
    /// cores' FP8 accumulation, which keeps fewer bits than FP32.
    pub fn tolerance(self) -> f64 {
        match self {
            Self::Fp32 => 1e-5,
            Self::Tf32 | Self::Fp16 => 2e-3,
            Self::Bf16 => 1.6e-2,
            Self::Fp8 => 3e-2,
        }
    }

    /// From the finest to the coarsest.
    pub const ALL: [Precision; 5] = [Self::Fp32, Self::Tf32, Self::Fp16, Self::Bf16, Self::Fp8];

    /// Orders precisions by their bounds, and two of one bound (TF32 and FP16) by [`Self::ALL`]:
    /// the looser of two is the greater, and no order depends on which comes first.
    pub fn cmp_looseness(&self, other: &Self) -> std::cmp::Ordering {
        let at = |p: &Self| Self::ALL.iter().position(|q| q == p);
        self.tolerance()
            .total_cmp(&other.tolerance())
            .then(at(self).cmp(&at(other)))
    }

    pub fn parse(s: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|p| p.name() == s)
    }
}

impl fmt::Display for Precision {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// Whether a kernel is a rung of its workload's ladder or a row shown beside the ladder.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Role {
    Rung,
    /// A library row the rungs are compared with (cuBLAS, a CPU crate).
    Reference,
    /// Another framework measured on the same machine by its own script (PyTorch), merged
    /// into the tables from its JSON.
    Peer,
    /// A kernel the user brought.
    User,
}

impl Role {
    pub fn name(self) -> &'static str {
        match self {
            Self::Rung => "rung",
            Self::Reference => "reference",
            Self::Peer => "peer",
            Self::User => "user",
        }
    }
}

/// What a kernel says about itself. `rung` orders a workload's ladder across stage crates.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct KernelInfo {
    /// Unique, stable, kebab-case: `gemm-naive`, `gemm-tiled`, `cublas-sgemm`.
    pub id: Text,
    pub workload: Workload,
    pub stage: Stage,
    pub precision: Precision,
    pub role: Role,
    /// Position in the workload's ladder (rungs) or among references; matches the `NN_` of
    /// the kernel's `.cu` file for rungs.
    pub rung: u32,
    /// One line: the idea this rung adds.
    pub summary: Text,
}

/// What limits a kernel, as the roofline and the profiler see it: the bound a rung's idea
/// attacks.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Bound {
    /// Bytes between DRAM (or L2) and the SMs: reuse through tiles, narrower types, no
    /// intermediates written and read back.
    MemoryTraffic,
    /// Shared-memory bandwidth: loads per FMA or MMA, bank conflicts.
    SharedTraffic,
    /// Waiting on loads in flight: overlapping copies with arithmetic.
    Latency,
    /// Instructions the SM must issue per useful FLOP: wider accesses, fewer index
    /// computations, asynchronous instructions.
    Issue,
    /// The arithmetic units' peak: moving the math to faster units (tensor cores).
    Compute,
    /// Occupancy and wave quantization: how many warps and blocks keep the SMs busy.
    Occupancy,
    /// Fixed costs per launch: fewer launches, fewer round trips through the host.
    LaunchOverhead,
    /// Copies between the host and the device.
    Transfers,
    /// Work whose result is thrown away (masked tiles).
    WastedWork,
}

impl Bound {
    pub const ALL: [Bound; 9] = [
        Self::MemoryTraffic,
        Self::SharedTraffic,
        Self::Latency,
        Self::Issue,
        Self::Compute,
        Self::Occupancy,
        Self::LaunchOverhead,
        Self::Transfers,
        Self::WastedWork,
    ];

    pub fn name(self) -> &'static str {
        match self {
            Self::MemoryTraffic => "memory-traffic",
            Self::SharedTraffic => "shared-traffic",
            Self::Latency => "latency",
            Self::Issue => "issue",
            Self::Compute => "compute",
            Self::Occupancy => "occupancy",
            Self::LaunchOverhead => "launch-overhead",
            Self::Transfers => "transfers",
            Self::WastedWork => "wasted-work",
        }
    }

    /// In words, for tables and `explain`.
    pub fn describe(self) -> &'static str {
        match self {
            Self::MemoryTraffic => "global-memory traffic (DRAM and L2)",
            Self::SharedTraffic => "shared-memory traffic",
            Self::Latency => "memory latency",
            Self::Issue => "instruction issue",
            Self::Compute => "arithmetic throughput",
            Self::Occupancy => "occupancy and waves",
            Self::LaunchOverhead => "launch overhead",
            Self::Transfers => "host-device transfers",
            Self::WastedWork => "wasted work",
        }
    }
}

impl fmt::Display for Bound {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// Where a rung sits in its ladder: the rung it changes, what it changes and why. Tables
/// compare a rung with its parent ("vs parent"), and `harness explain` diffs the two.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub struct Lineage {
    /// The id of the rung this one changes (not necessarily the one numbered before it);
    /// `None` for the first rung of a ladder.
    pub parent: Option<&'static str>,
    /// The one idea this rung adds over its parent, in one line. A rung that bundles two
    /// says so ("two ideas: ...").
    pub idea: &'static str,
    /// The bound the idea attacks; `None` where it attacks none (the first rung, a rung that
    /// shows a cost, a change of number format for range rather than speed).
    pub bound: Option<Bound>,
}

/// A kernel declining a shape, with the constraint it needs.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct Unsupported(pub String);

/// A register spill a kernel accepts on purpose, with why it is worth it: the NVRTC compile
/// test and `harness inspect --deny-spills` let through at most `bytes` of spill stores and
/// of spill loads per launch, and print the reason.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct AcceptedSpill {
    pub bytes: u32,
    pub reason: &'static str,
}

impl AcceptedSpill {
    /// Whether a launch's spill (bytes stored, bytes loaded) stays within what is accepted.
    pub fn covers(&self, stores: u32, loads: u32) -> bool {
        stores <= self.bytes && loads <= self.bytes
    }
}

/// A CPU port: computes the kernel's output from the workload's f32 inputs (in
/// [`Shape::inputs`] order) into `out` (of [`Shape::output`] length), mirroring the kernel's idea.
pub type CpuPort = fn(shape: &Shape, inputs: &[&[f32]], out: &mut [f32]);

/// One rung (or reference) of a ladder. Stage crates implement this with small unit structs;
/// all compiling, launching, timing and validating lives in `kernel`'s devices and `harness`.
pub trait Kernel: Send + Sync {
    fn info(&self) -> KernelInfo;

    /// Whether this kernel handles `shape`; declining names the constraint. Shapes reaching
    /// here have passed [`Shape::validate`] and belong to this kernel's workload.
    fn supports(&self, _shape: &Shape) -> Result<(), Unsupported> {
        Ok(())
    }

    /// What this kernel runs at `shape`, where that depends on the shape (a tile shape tuned
    /// per size); `None`: [`KernelInfo::summary`] says it for every shape.
    fn summary_at(&self, _shape: &Shape) -> Option<String> {
        None
    }

    /// The FLOP the kernel computes at `shape`: the workload's ([`Shape::flops`]), unless it
    /// computes more than its output needs, as an attention rung does that computes every
    /// score of a causal shape and masks those past the diagonal instead of skipping them
    /// ([`Shape::unmasked`]). Throughput counts the workload's FLOP; the speed-of-light
    /// estimate, the work done.
    fn computed_flops(&self, shape: &Shape) -> f64 {
        shape.flops()
    }

    /// Where the plan runs several kernels whose loops do multiply-adds, each one's entry and
    /// its part of [`computed_flops`](Self::computed_flops), so that the speed-of-light
    /// estimate models each kernel's loop at its own work. Empty, the default: one kernel does
    /// them all.
    fn flops_by_kernel(&self, _shape: &Shape) -> Vec<(&'static str, f64)> {
        Vec::new()
    }

    /// The declarative GPU description for `shape`, or `None` for CPU-only rows.
    fn cuda(&self, _shape: &Shape) -> Option<CudaPlan> {
        None
    }

    /// The CPU port, or `None` for GPU-only rows (such as cuBLAS).
    fn cpu(&self) -> Option<CpuPort> {
        None
    }

    /// Whether this kernel runs on the CPU ([`Kernel::run_cpu`]).
    fn has_cpu(&self) -> bool {
        self.cpu().is_some()
    }

    /// Runs the CPU port. A kernel made of others (a network's forward pass through its
    /// layers' ports) overrides this and [`Kernel::has_cpu`] instead of giving one port.
    fn run_cpu(
        &self,
        shape: &Shape,
        inputs: &[&[f32]],
        out: &mut [f32],
    ) -> Result<(), Unsupported> {
        let port = self.cpu().ok_or_else(|| {
            Unsupported(format!(
                "{} has no CPU port (it runs on a GPU only)",
                self.info().id
            ))
        })?;
        port(shape, inputs, out);
        Ok(())
    }

    /// The rung's parent, idea and bound; every rung has one, references and user rows
    /// have none.
    fn lineage(&self) -> Option<Lineage> {
        None
    }

    /// The shape, with its label, that `inspect`, `explain` and the ladder pages compile this
    /// rung at, where the workload's own would not run the rung's code: a split-K rung
    /// launches its parent's plan on shapes whose tiles fill the GPU. `None`: the workload's.
    fn inspect_shape(&self) -> Option<(&'static str, Shape)> {
        None
    }

    /// A register spill this kernel accepts, with the reason; `None`: any spill is a defect.
    fn accepted_spill(&self) -> Option<AcceptedSpill> {
        None
    }

    /// Why this kernel can only run on a real GPU (inline PTX, Hopper-only features), or
    /// `None` when the simulator can execute its source.
    fn gpu_only(&self) -> Option<&'static str> {
        None
    }

    /// This kernel configured for the GPU that runs it (a plan that sizes its grid by the
    /// GPU's SM count, [`DeviceInfo::units`]), or `None` when it runs the same on every GPU.
    /// The harness asks only CUDA devices for the lab's kernels: the CPU and the simulator
    /// keep their default, so their checks do not depend on the machine that runs them. A
    /// user's kernel answers for the simulator too (its `SMS` is a fixed 8 there), which
    /// `explain` asks before counting its banks.
    fn for_device(&self, _device: &DeviceInfo) -> Option<Box<dyn Kernel>> {
        None
    }

    /// The inputs laid out as this kernel reads them, where that differs from the workload's
    /// own (row-major) layout: a user's kernel taking B column-major. `None`: as given.
    fn device_inputs(&self, _shape: &Shape, _inputs: &[Vec<f32>]) -> Option<Vec<Vec<f32>>> {
        None
    }

    /// The output as this kernel lays it out, where that differs from the workload's own
    /// (a user's attention kernel writing O as `[B][S][H][D]`): a failure names an element by
    /// the indices the kernel writes it at. `None`: the workload's.
    fn output_layout(&self, _shape: &Shape) -> Option<OutputLayout> {
        None
    }

    /// The output this kernel must produce, where it is not the workload's result itself: a
    /// BLAS-style kernel writes `alpha * result + beta * C` from C's initial values; one given
    /// some inputs as fixed values computes the result of those. `result` holds the
    /// workload's result of `inputs` (the workload's own, row-major) at `indices` (every
    /// output when `None`). `None`: the result itself.
    fn expected(
        &self,
        _shape: &Shape,
        _inputs: &[Vec<f32>],
        _result: &[f64],
        _indices: Option<&[usize]>,
    ) -> Option<Vec<f64>> {
        None
    }

    /// Whether [`Kernel::expected`] works out a reference of inputs of the kernel's own (FP8
    /// rounding, `input=` values), at the cost of the workload's reference again: where the
    /// shape's reference came whole from a library, too large to compute again, such a kernel
    /// is checked at a sample of its elements instead.
    fn reference_of_its_own(&self) -> bool {
        false
    }
}

impl fmt::Debug for dyn Kernel {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.info().id)
    }
}

/// Ceiling division for launch geometry.
pub const fn div_ceil(a: usize, b: usize) -> u32 {
    a.div_ceil(b) as u32
}
