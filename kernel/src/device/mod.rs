//! Executors: the things that run a [`Kernel`] on a [`Shape`]. The harness speaks only this
//! interface, so the CPU, the CUDA device and the simulator are interchangeable rows sources.

pub mod cpu;

use crate::contract::{Kernel, Unsupported};
use crate::plan::CudaSource;
use crate::workload::Shape;
use serde::{Deserialize, Serialize};
use std::fmt;
use std::time::Duration;

/// Which executor.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum DeviceKind {
    Cpu,
    Cuda,
    /// The CUDA C source executed on the CPU (functional only, never timed for speed claims).
    Sim,
}

impl DeviceKind {
    pub const ALL: [DeviceKind; 3] = [Self::Cpu, Self::Cuda, Self::Sim];

    pub fn name(self) -> &'static str {
        match self {
            Self::Cpu => "cpu",
            Self::Cuda => "cuda",
            Self::Sim => "sim",
        }
    }

    pub fn parse(s: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|d| d.name() == s)
    }
}

impl fmt::Display for DeviceKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// What a run's results record about the machine that produced them.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct DeviceInfo {
    pub kind: String,
    /// "NVIDIA H100 80GB HBM3", or the CPU model.
    pub name: String,
    /// Folder-safe name for `results/<slug>/`.
    pub slug: String,
    /// Driver version (GPU) or the OS kernel (CPU).
    pub driver: String,
    /// CUDA driver API version and NVRTC version, when there is a GPU.
    pub cuda: Option<String>,
    pub compute_capability: Option<String>,
    /// Streaming multiprocessors (GPU) or worker threads (CPU).
    pub units: u32,
    pub memory_bytes: Option<u64>,
    pub l2_bytes: Option<u64>,
}

/// Everything that can go wrong while preparing or running a kernel.
#[derive(Debug, thiserror::Error)]
pub enum DeviceError {
    #[error("not supported: {0}")]
    Unsupported(#[from] Unsupported),
    #[error(
        "out of GPU memory for {shape}: needed {needed_mib} MiB more, {free_mib} MiB free of {total_mib} MiB"
    )]
    OutOfMemory {
        shape: String,
        needed_mib: u64,
        free_mib: u64,
        total_mib: u64,
    },
    #[error(
        "too much pinned host memory for {shape}: the batch pipeline needs {needed_mib} MiB \
         page-locked, over the limit of {limit_mib} MiB (half of {ram_mib} MiB of RAM)"
    )]
    PinnedMemory {
        shape: String,
        needed_mib: u64,
        limit_mib: u64,
        ram_mib: u64,
    },
    #[error("{compiler} could not compile {file} for {arch}:\n{log}")]
    Compile {
        /// `NVRTC 13.0`, or the simulator's host compiler (`g++ 12.2.0`).
        compiler: String,
        file: String,
        arch: String,
        log: String,
    },
    #[error("{0}")]
    Unavailable(String),
    #[error("CUDA driver error in {what}: {detail}")]
    Driver { what: String, detail: String },
    /// A sticky error (an illegal address, a failed launch): the CUDA context is unusable
    /// until it is recreated, which [`Executor::recover`] does before the next row.
    #[error("{what}: {detail}; the CUDA context was lost (the next row gets a fresh one)")]
    Lost { what: String, detail: String },
    #[error("simulator: {0}")]
    Sim(String),
}

impl DeviceError {
    /// Whether the device must be recovered before it runs anything else.
    pub fn is_lost(&self) -> bool {
        matches!(self, Self::Lost { .. })
    }
}

/// A kernel with its inputs in place on a device, ready to run repeatedly.
pub trait Prepared {
    /// Fills the output (NaN unless the plan says otherwise) and the scratch buffers, runs
    /// once and waits for completion.
    fn run(&mut self) -> Result<(), DeviceError>;
    /// The output of the last run, as f32.
    fn output(&mut self) -> Result<Vec<f32>, DeviceError>;
    /// Runs `iters` times and returns the summed time of the runs alone. Before each run the
    /// output and scratch buffers are filled and then, on a GPU, the L2 cache is flushed, so
    /// neither the fill nor any input is still in L2 when the timed span starts.
    fn time(&mut self, iters: u64) -> Result<Duration, DeviceError>;
    /// The global-memory traffic of the last run, on a device that counts it (the simulator
    /// when asked to).
    fn traffic(&self) -> Option<MemoryTraffic> {
        None
    }
    /// Each step of the plan timed alone, in order: the step enqueued `iters` times in a row
    /// after a full run (so its inputs hold real values), the mean of one. `None` where the
    /// device cannot (the CPU and the simulator run no steps; a batch pipeline overlaps them).
    fn time_steps(&mut self, _iters: u64) -> Option<Result<Vec<Duration>, DeviceError>> {
        None
    }
    /// The whole plan run `iters` times back to back, first enqueued step by step, then
    /// captured once as a CUDA graph and replayed: the mean of one run each way. What the
    /// graph saves is the launch overhead. `None` on devices without graphs.
    fn time_replay(&mut self, _iters: u64) -> Option<Result<(Duration, Duration), DeviceError>> {
        None
    }
    /// What the last run noticed without stopping, which explains an output that fails its
    /// check: in the simulator, the first read of shared memory no thread of its block had
    /// written (a correct kernel may make one, whose value goes unused).
    fn notes(&self) -> Vec<String> {
        Vec::new()
    }
    /// The inputs (indices into [`crate::Shape::inputs`]) whose device copy the last run
    /// changed: a kernel that works in place on its input, or writes through the wrong
    /// pointer. Meant for a failed check: on a GPU it downloads every input. Empty where the
    /// device cannot tell (the CPU's kernels take their inputs read-only) and for inputs a
    /// batch pipeline copies over in chunks.
    fn inputs_written(&mut self) -> Result<Vec<usize>, DeviceError> {
        Ok(Vec::new())
    }
    /// When the device ran a sample of the blocks of the last run (the simulator's
    /// `--sim-blocks`): how many, and which output elements they wrote. `None`: every block ran.
    fn sample(&self) -> Option<BlockSample> {
        None
    }
}

/// A run of some of a plan's blocks: the output elements outside `written` still hold their
/// fill, and only those in it can be checked.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BlockSample {
    pub blocks_run: u64,
    pub blocks: u64,
    /// Output elements (row-major indices, ascending) whose bytes differ from the fill.
    pub written: Vec<usize>,
}

/// Bytes a run's kernels loaded from and stored to global memory, every access counted (what
/// the SMs ask of the memory system, before any cache filters it).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct MemoryTraffic {
    pub load_bytes: u64,
    pub store_bytes: u64,
    /// What the warps asked of shared memory, as the simulator's bank model counts it.
    pub shared: SharedBanks,
    /// How the warps' plain global loads and stores coalesce, as the simulator counts them.
    pub global: Coalescing,
    /// `shared` and `global` kernel by kernel, in the order of their first launch: a plan of
    /// several kernels mixes the patterns of each (a naive attention's scores read K a row a
    /// lane, its product with V reads V coalesced).
    pub kernels: Vec<KernelAccesses>,
}

/// One kernel's part of a run's shared and global counts, its launches summed.
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct KernelAccesses {
    /// The entry launched, as its author wrote it (`CudaPlan::written_entry`).
    pub entry: String,
    pub shared: SharedBanks,
    pub global: Coalescing,
}

impl MemoryTraffic {
    /// Adds one launch of `entry` to the run's counts and to its kernel's.
    pub fn add_launch(&mut self, entry: &str, shared: SharedBanks, global: Coalescing) {
        self.shared = self.shared.plus(shared);
        self.global = self.global.plus(global);
        match self.kernels.iter_mut().find(|k| k.entry == entry) {
            Some(k) => {
                k.shared = k.shared.plus(shared);
                k.global = k.global.plus(global);
            }
            None => self.kernels.push(KernelAccesses {
                entry: entry.to_string(),
                shared,
                global,
            }),
        }
    }
}

/// Plain global requests of one kind as the simulator rebuilds them into warp instructions
/// (`kernel/sim/include/sim_traffic.h`): the requests, the distinct 32-byte sectors and
/// 128-byte cache lines they touch, and the lines each request's distinct bytes fill, or
/// where they are one contiguous run, the lines it touches (the ideal: a coalesced request,
/// which a row starting mid-line leaves as it is). Nsight Compute counts the first two as
/// `l1tex__t_requests_pipe_lsu_mem_global_op_ld` and `..._sectors_...`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct GlobalRequests {
    pub requests: u64,
    pub sectors: u64,
    pub lines: u64,
    pub ideal_lines: u64,
    /// The bytes of each request's widest lane, summed: over `requests`, the access width
    /// (4 for floats, 16 for a float4).
    pub lane_bytes: u64,
}

impl GlobalRequests {
    pub fn plus(self, o: Self) -> Self {
        Self {
            requests: self.requests + o.requests,
            sectors: self.sectors + o.sectors,
            lines: self.lines + o.lines,
            ideal_lines: self.ideal_lines + o.ideal_lines,
            lane_bytes: self.lane_bytes + o.lane_bytes,
        }
    }
}

/// Plain global loads (`LDG`) and stores (`STG`) as the simulator counts them, all requests
/// and, apart, those all 32 lanes of a warp made: a small shape's partial warps at its edges
/// touch fewer lines than a large shape's whole warps mostly do. Atomics, the global side of
/// `cp.async` and TMA copies are not counted.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Coalescing {
    pub loads: GlobalRequests,
    pub stores: GlobalRequests,
    pub whole_warp_loads: GlobalRequests,
    pub whole_warp_stores: GlobalRequests,
}

impl Coalescing {
    /// From the simulator's counts, in `SimGlobalKind` order, each all requests then whole
    /// warps'.
    pub fn from_counts(c: [[[u64; 5]; 2]; 2]) -> Self {
        let r = |k: usize, w: usize| GlobalRequests {
            requests: c[k][w][0],
            sectors: c[k][w][1],
            lines: c[k][w][2],
            ideal_lines: c[k][w][3],
            lane_bytes: c[k][w][4],
        };
        Self {
            loads: r(0, 0),
            stores: r(1, 0),
            whole_warp_loads: r(0, 1),
            whole_warp_stores: r(1, 1),
        }
    }

    /// Each kind with the name of its SASS instruction: all requests, then whole warps'.
    pub fn kinds(&self) -> [(&'static str, GlobalRequests, GlobalRequests); 2] {
        [
            ("LDG", self.loads, self.whole_warp_loads),
            ("STG", self.stores, self.whole_warp_stores),
        ]
    }

    pub fn plus(self, o: Self) -> Self {
        Self {
            loads: self.loads.plus(o.loads),
            stores: self.stores.plus(o.stores),
            whole_warp_loads: self.whole_warp_loads.plus(o.whole_warp_loads),
            whole_warp_stores: self.whole_warp_stores.plus(o.whole_warp_stores),
        }
    }
}

/// Shared-memory requests of one kind as the simulator's bank model counts them
/// (`kernel/sim/include/sim_banks.h`): warp instructions, the wavefronts the 32 banks took
/// to serve them, and the wavefronts they would take without conflicts (one per 128
/// distinct bytes; one per 8x8 matrix of an ldmatrix).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Wavefronts {
    pub requests: u64,
    pub wavefronts: u64,
    pub ideal: u64,
}

impl Wavefronts {
    /// Wavefronts beyond the ideal: what Nsight Compute calls bank conflicts.
    pub fn conflicts(&self) -> u64 {
        self.wavefronts.saturating_sub(self.ideal)
    }

    fn plus(self, o: Self) -> Self {
        Self {
            requests: self.requests + o.requests,
            wavefronts: self.wavefronts + o.wavefronts,
            ideal: self.ideal + o.ideal,
        }
    }
}

/// Shared-memory requests by instruction, as Nsight Compute separates them: plain loads
/// (`LDS`) and stores (`STS`, with `stmatrix`), `ldmatrix` (`LDSM`) and `cp.async`
/// (`LDGSTS`). WMMA's loads, TMA and wgmma are not counted.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct SharedBanks {
    pub lds: Wavefronts,
    pub sts: Wavefronts,
    pub ldsm: Wavefronts,
    pub ldgsts: Wavefronts,
}

impl SharedBanks {
    /// From the simulator's counts, in `SimBankKind` order.
    pub fn from_counts(c: [[u64; 3]; 4]) -> Self {
        let w = |k: usize| Wavefronts {
            requests: c[k][0],
            wavefronts: c[k][1],
            ideal: c[k][2],
        };
        Self {
            lds: w(0),
            sts: w(1),
            ldsm: w(2),
            ldgsts: w(3),
        }
    }

    /// Each kind with the name of its SASS instruction.
    pub fn kinds(&self) -> [(&'static str, Wavefronts); 4] {
        [
            ("LDS", self.lds),
            ("STS", self.sts),
            ("LDSM", self.ldsm),
            ("LDGSTS", self.ldgsts),
        ]
    }

    pub fn total(&self) -> Wavefronts {
        self.kinds()
            .iter()
            .fold(Wavefronts::default(), |a, (_, w)| a.plus(*w))
    }

    pub fn plus(self, o: Self) -> Self {
        Self {
            lds: self.lds.plus(o.lds),
            sts: self.sts.plus(o.sts),
            ldsm: self.ldsm.plus(o.ldsm),
            ldgsts: self.ldgsts.plus(o.ldgsts),
        }
    }
}

/// A device that runs kernels.
pub trait Executor {
    fn kind(&self) -> DeviceKind;
    fn info(&self) -> &DeviceInfo;
    /// Whether this device can run `kernel` at all (a CPU port, a CUDA plan, a simulable source).
    fn can_run(&self, kernel: &dyn Kernel) -> Result<(), Unsupported>;
    /// Uploads `inputs` (f32, [`Shape::inputs`] order) and readies `kernel` for `shape`.
    fn prepare<'a>(
        &'a self,
        kernel: &'a dyn Kernel,
        shape: &Shape,
        inputs: &'a [Vec<f32>],
    ) -> Result<Box<dyn Prepared + 'a>, DeviceError>;
    /// Builds `sources` on all cores before the rows that load them run one after another (a
    /// compile takes up to seconds): each row then finds its build done. Failures are left for
    /// the row that loads the source to report. Devices that build nothing do nothing.
    fn precompile(&self, _sources: &[&CudaSource]) {}
    /// After a [`DeviceError::Lost`]: rebuilds what the failure broke (a fresh CUDA context),
    /// once every prepared run of the old state is dropped. Devices that cannot be lost have
    /// nothing to do.
    fn recover(&self) -> Result<(), DeviceError> {
        Ok(())
    }
}

/// Turns a device name into a folder name: `NVIDIA H100 80GB HBM3` -> `nvidia-h100-80gb-hbm3`.
pub fn slugify(name: &str) -> String {
    let mut out = String::new();
    for c in name.chars() {
        if c.is_ascii_alphanumeric() {
            out.push(c.to_ascii_lowercase());
        } else if !out.ends_with('-') && !out.is_empty() {
            out.push('-');
        }
    }
    out.trim_end_matches('-').to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn slugs_are_folder_safe() {
        assert_eq!(slugify("NVIDIA H100 80GB HBM3"), "nvidia-h100-80gb-hbm3");
        assert_eq!(
            slugify("  AMD EPYC (R) 9B14, 2 threads "),
            "amd-epyc-r-9b14-2-threads"
        );
    }
}
