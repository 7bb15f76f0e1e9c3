//! The CUDA simulator: runs the real CUDA C source of a [`CudaPlan`] on the CPU, so tests catch
//! wrong indexing, missing barriers and out-of-bounds accesses without a GPU.
//!
//! Each `.cu` file is compiled by the host C++ compiler against the emulation headers of
//! `kernel/sim/include` ([`compile`]). Every CUDA thread is a fiber; a block's fibers interleave
//! at barriers and warp operations in forward, reverse or random order, blocks run in a
//! shuffled order on several OS threads, shared memory starts as NaN, and every global buffer
//! sits between guard pages ([`memory`], [`fault`]). Functional only: never timed for claims.
//!
//! An [`SimDevice::instrumented`] device builds the kernels with gcc's ThreadSanitizer
//! instrumentation, whose hooks (`sim_traffic.h`) count each launch's global-memory traffic
//! ([`Prepared::traffic`]), hand shared-memory accesses to a race checker
//! (`sim_shared_access` in `sim_runtime.h`: a race fails the launch), check global-memory
//! accesses for races within a block and between blocks (`sim_global.h`: each launch's state
//! is set up and freed around it) and rebuild each warp's shared-memory instructions for the
//! bank model (`sim_banks.h`).

mod bounds_report;
pub mod compile;
mod fault;
mod ffi;
mod gpu_bodies;
pub mod inline_asm;
pub mod memory;
mod per_block_shared;
mod site;

pub use gpu_bodies::gpu_bodies;

use crate::contract::{Kernel, Unsupported};
use crate::device::{
    BlockSample, Coalescing, DeviceError, DeviceInfo, DeviceKind, Executor, MemoryTraffic,
    Prepared, SharedBanks,
};
use crate::pipeline::Span;
use crate::plan::{Arg, Buf, CudaPlan, CudaSource, Fill, Launch, Step};
use crate::tma::TensorMap;
use crate::workload::Shape;
use compile::Module;
use ffi::{
    SIM_FAULT, SIM_OK, SIM_STOPPED, SimGrid, SimLaunch, SimResult, SimTraffic, Thunk, TrafficBuffer,
};
use memory::{GuardedBuf, Placement};
use std::collections::HashMap;
use std::ffi::{CString, c_void};
use std::path::Path;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// Seed of the block order and thread schedules unless `KERNEL_LAB_SIM_SEED` says otherwise.
const DEFAULT_SEED: u64 = 0x5EED_CAFE;
/// The simulator is for small shapes; a huge grid is a mistake, not a test.
const MAX_BLOCKS: usize = 1 << 22;
/// How long one launch may run unless `LAB_SIM_TIMEOUT_S` says otherwise: far more than any
/// lab rung needs at the simulator's shapes.
const DEFAULT_TIMEOUT: Duration = Duration::from_secs(300);

pub struct SimDevice {
    info: DeviceInfo,
    compiler: String,
    seed: u64,
    threads: usize,
    /// The watchdog's limit for one launch.
    timeout: Duration,
    /// When every launch must have ended (a row's time limit, in the child process that runs
    /// it), so that a hang is stopped by the watchdog, which says where threads wait, before
    /// the row's process is killed, which cannot.
    deadline: Option<Instant>,
    build: compile::Build,
    /// Blocks run per launch when a launch has more (`None`: all of them).
    sample: Option<usize>,
    modules: Mutex<HashMap<CudaSource, Arc<Module>>>,
}

impl SimDevice {
    /// Finds the host C++ compiler; fails (without panicking) when there is none.
    pub fn new() -> Result<Self, DeviceError> {
        let compiler = compile::compiler();
        let version = compile::compiler_version(&compiler)
            .map_err(|e| DeviceError::Unavailable(format!("CUDA simulator: {e}")))?;
        // Every kernel is built there: a folder it cannot write fails every row alike.
        let cache = compile::cache_dir();
        crate::disk_cache::check_writable(&cache).map_err(|e| {
            DeviceError::Unavailable(format!(
                "CUDA simulator: cannot write its builds into {}: {e}; set {} to a writable folder",
                cache.display(),
                compile::CACHE_VARIABLE
            ))
        })?;
        let threads = std::thread::available_parallelism().map_or(1, |n| n.get());
        let seed = env_value("KERNEL_LAB_SIM_SEED", "a whole number", |s| s.parse().ok())?
            .unwrap_or(DEFAULT_SEED);
        let timeout = env_value("LAB_SIM_TIMEOUT_S", "seconds above 0", |s| {
            s.parse::<f64>()
                .ok()
                .filter(|s| s.is_finite() && *s > 0.0)
                .and_then(|s| Duration::try_from_secs_f64(s).ok())
        })?
        .unwrap_or(DEFAULT_TIMEOUT);
        fault::install();
        Ok(Self {
            info: DeviceInfo {
                kind: DeviceKind::Sim.name().to_string(),
                name: format!("CUDA simulator ({version}, {threads} threads)"),
                slug: "sim".to_string(),
                driver: version,
                cuda: None,
                compute_capability: None,
                units: threads as u32,
                memory_bytes: None,
                l2_bytes: None,
            },
            compiler,
            seed,
            threads,
            timeout,
            deadline: None,
            build: compile::Build::Plain,
            sample: None,
            modules: Mutex::new(HashMap::new()),
        })
    }

    /// The same device with another limit on the time one launch may run.
    pub fn with_timeout(mut self, timeout: Duration) -> Self {
        self.timeout = timeout;
        self
    }

    /// The same device, stopping every launch still running at `deadline`.
    pub fn with_deadline(mut self, deadline: Instant) -> Self {
        self.deadline = Some(deadline);
        self
    }

    /// How long a launch starting now may run: the time limit, or less before the deadline;
    /// and whether the deadline is what limits it.
    fn launch_limit(&self) -> (Duration, bool) {
        match self.deadline {
            Some(d) if d.saturating_duration_since(Instant::now()) < self.timeout => {
                (d.saturating_duration_since(Instant::now()), true)
            }
            _ => (self.timeout, false),
        }
    }

    /// The same device running each launch's blocks on `threads` OS threads (at least one)
    /// rather than one per core.
    pub fn with_threads(mut self, threads: usize) -> Self {
        self.threads = threads.max(1);
        self
    }

    /// The same device with another schedule seed (block order, thread orders).
    pub fn with_seed(mut self, seed: u64) -> Self {
        self.seed = seed;
        self
    }

    /// The same device, counting every global load and store its kernels issue
    /// ([`Prepared::traffic`]): the kernels are built instrumented, which makes them slower.
    pub fn instrumented(mut self) -> Self {
        self.build = compile::Build::Instrumented;
        self
    }

    /// The same device running at most `blocks` blocks of each launch: the grid's corners
    /// (where the tails are) and blocks drawn at random, the same for every run of a row.
    /// The output elements the other blocks own keep their fill; [`Prepared::sample`] says
    /// which were written. Plans whose result needs every block (several launches, one
    /// reading what another wrote; atomics) are declined when a launch would be sampled.
    pub fn with_block_sample(mut self, blocks: usize) -> Self {
        self.sample = Some(blocks.max(1));
        self
    }

    fn module(&self, src: &CudaSource) -> Result<Arc<Module>, DeviceError> {
        let mut modules = self.modules.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(m) = modules.get(src) {
            return Ok(m.clone());
        }
        let (tu, _) = compile::translation_unit(src)?;
        let path = compile::build(src, &tu, &self.compiler, self.build)?;
        let m = Arc::new(Module::load(&path)?);
        modules.insert(src.clone(), m.clone());
        Ok(m)
    }
}

/// Refuses what cannot be simulated: library calls, and inline PTX the front end does not
/// know (named with its file and line).
/// The value of the environment variable `name` read by `parse`; `None` when unset or empty,
/// an error naming the variable when set to something `parse` refuses (rather than a
/// default the user did not ask for).
fn env_value<T>(
    name: &str,
    expected: &str,
    parse: impl Fn(&str) -> Option<T>,
) -> Result<Option<T>, DeviceError> {
    match std::env::var(name) {
        Ok(v) if !v.trim().is_empty() => parse(v.trim()).map(Some).ok_or_else(|| {
            DeviceError::Unavailable(format!("CUDA simulator: {name}={v:?}: expected {expected}"))
        }),
        _ => Ok(None),
    }
}

/// `300`, `0.5`, `0.000001`: whole seconds, or the digits a limit under a second needs not to
/// read 0.
fn seconds(s: f64) -> String {
    if s >= 1.0 {
        format!("{s:.0}")
    } else {
        let digits = (-s.log10()).ceil().clamp(1.0, 9.0) as usize;
        format!("{s:.digits$}")
    }
}

fn check_plan(plan: &CudaPlan) -> Result<(), Unsupported> {
    if plan.uses_library() {
        return Err(Unsupported("not simulated: cuBLAS library call".into()));
    }
    for src in plan.sources() {
        inline_asm::rewrite(&compile::strip_comments(&src.code), &src.file)
            .map_err(|r| Unsupported(format!("not simulated: {r}")))?;
    }
    Ok(())
}

impl Executor for SimDevice {
    fn kind(&self) -> DeviceKind {
        DeviceKind::Sim
    }

    /// The host compiler on every core, into the cache on disk that [`SimDevice::module`]
    /// reads.
    fn precompile(&self, sources: &[&CudaSource]) {
        use rayon::prelude::*;
        sources.par_iter().for_each(|src| {
            if let Ok((tu, _)) = compile::translation_unit(src) {
                let _ = compile::build(src, &tu, &self.compiler, self.build);
            }
        });
    }

    fn info(&self) -> &DeviceInfo {
        &self.info
    }

    fn can_run(&self, kernel: &dyn Kernel) -> Result<(), Unsupported> {
        if let Some(why) = kernel.gpu_only() {
            return Err(Unsupported(format!("not simulated: {why}")));
        }
        let info = kernel.info();
        match kernel.cuda(&info.workload.probe_shape()) {
            Some(plan) => check_plan(&plan),
            None => Err(Unsupported(format!("{} has no CUDA description", info.id))),
        }
    }

    fn prepare<'a>(
        &'a self,
        kernel: &'a dyn Kernel,
        shape: &Shape,
        inputs: &'a [Vec<f32>],
    ) -> Result<Box<dyn Prepared + 'a>, DeviceError> {
        if let Some(why) = kernel.gpu_only() {
            return Err(Unsupported(format!("not simulated: {why}")).into());
        }
        kernel.supports(shape)?;
        let plan = kernel
            .cuda(shape)
            .ok_or_else(|| Unsupported(format!("{} has no CUDA description", kernel.info().id)))?;
        check_plan(&plan)?;
        if let Some(n) = self.sample {
            check_sample(&plan, n)?;
        }
        SimRun::new(self, plan, shape, inputs).map(|r| Box::new(r) as Box<dyn Prepared + 'a>)
    }
}

/// Declines a plan whose result a sample of `n` blocks per launch cannot give, when one of its
/// launches has more than `n` blocks.
fn check_sample(plan: &CudaPlan, n: usize) -> Result<(), Unsupported> {
    let blocks = |l: &Launch| l.grid.iter().map(|&g| g as usize).product::<usize>();
    let Some(big) = plan.launches().map(blocks).filter(|&b| b > n).max() else {
        return Ok(());
    };
    let launches = plan.launches().count();
    if launches > 1 || plan.pipeline.is_some() {
        return Err(Unsupported(format!(
            "--sim-blocks {n}: this plan has {launches} launches, and a sample of one \
             launch's {big} blocks would leave the next one's input incomplete; run it without \
             --sim-blocks"
        )));
    }
    let texts: Vec<String> = plan
        .sources()
        .into_iter()
        .flat_map(compile::texts_read)
        .collect();
    // A PTX instruction's name after a quote, a space or a brace: not `stored.x`.
    let ptx = |code: &str, name: &str| {
        code.match_indices(name)
            .any(|(i, _)| i == 0 || !compile::is_ident(code.as_bytes()[i - 1]))
    };
    let atomic = texts.iter().find_map(|code| {
        [
            "atomicAdd",
            "atomicSub",
            "atomicCAS",
            "atomicExch",
            "atomicMax",
            "atomicMin",
            "atomicInc",
            "atomicDec",
            "atomicAnd",
            "atomicOr",
            "atomicXor",
            "atom.",
            "red.",
        ]
        .into_iter()
        .find(|a| ptx(code, a))
    });
    if let Some(a) = atomic {
        return Err(Unsupported(format!(
            "--sim-blocks {n}: the kernel's source uses {a}, whose result may need every one \
             of its {big} blocks; run it without --sim-blocks"
        )));
    }
    let wait = texts.iter().find_map(|code| {
        let cxx_volatile = code.match_indices("volatile").any(|(i, _)| {
            let before = code[..i].trim_end();
            !(before.ends_with("asm") || before.ends_with("__asm__") || before.ends_with("__asm"))
        });
        if cxx_volatile {
            return Some("volatile");
        }
        [".acquire", "ld.volatile", "ld.relaxed", "__nanosleep"]
            .into_iter()
            .find(|w| code.contains(w))
    });
    if let Some(w) = wait {
        return Err(Unsupported(format!(
            "--sim-blocks {n}: the kernel's source uses {w}, as a block waiting for another \
             does, and a sample of its {big} blocks may leave out the block it waits for; run \
             it without --sim-blocks"
        )));
    }
    Ok(())
}

/// The name a launch's messages give its kernel: the user's own entry (`sgemm<128,128,8>`)
/// rather than the wrapper the lab launches it by, else the entry.
fn shown_name(l: &Launch) -> &str {
    l.source
        .cxx_entries
        .iter()
        .find(|(wrapper, _)| *wrapper == l.entry)
        .map_or(&l.entry, |(_, entry)| entry)
}

/// A cluster is at most 8 blocks (CUDA's portable limit) and its dims divide the grid's.
fn check_cluster(l: &Launch, cluster: [u32; 3]) -> Result<(), DeviceError> {
    let size: u32 = cluster.iter().product();
    let divides = l
        .grid
        .iter()
        .zip(cluster)
        .all(|(&g, c)| c > 0 && g % c == 0);
    if (1..=8).contains(&size) && divides {
        return Ok(());
    }
    Err(DeviceError::Sim(format!(
        "{}: grid {:?} in clusters of {:?} blocks: a cluster holds 1 to 8 blocks and its dims \
         must divide the grid's",
        shown_name(l),
        l.grid,
        cluster
    )))
}

/// Which blocks of a `grid` run when at most `n` may: every corner of the grid (the tails of
/// each dimension meet there), then blocks drawn from `seed` until there are `n`, ascending.
fn sample_blocks(grid: [u32; 3], n: usize, seed: u64) -> Vec<u64> {
    let [gx, gy, gz] = grid.map(u64::from);
    let total = gx * gy * gz;
    if total as usize <= n {
        return (0..total).collect();
    }
    let mut picked = std::collections::BTreeSet::new();
    for z in [0, gz - 1] {
        for y in [0, gy - 1] {
            for x in [0, gx - 1] {
                if picked.len() < n {
                    picked.insert(x + gx * (y + gy * z));
                }
            }
        }
    }
    let mut s = seed;
    while picked.len() < n {
        s = mix(s);
        picked.insert(s % total);
    }
    picked.into_iter().collect()
}

/// A launch with its kernel found in its module.
struct Resolved {
    module: Arc<Module>,
    thunk: Thunk,
    /// The kernel's `__cluster_dims__`: the blocks that run together as one unit.
    cluster: [u32; 3],
    launch: Launch,
    /// The launch's index in the plan's steps.
    step: usize,
    /// Launched cooperatively: every block resident at once, with a grid barrier.
    cooperative: bool,
    /// `Step::Constant` copies that come right before this launch in the plan.
    constants: Vec<ConstantSlot>,
    /// What ptxas's compile of the entry says a GPU starts the launch with ([`EntryFacts`]).
    facts: EntryFacts,
}

/// What a GPU starts a launch with that only ptxas's compile of its entry tells (NVRTC for
/// the source's own target, else sm_90, or sm_90a for a source that names setmaxnreg); zeros
/// without NVRTC, or where the launch needs neither, as for a kernel without static variables.
#[derive(Clone, Copy, Default)]
struct EntryFacts {
    /// Where the dynamic shared memory starts, modulo 1024: right after the entry's static
    /// `__shared__` variables as ptxas counts them (their bytes, padded to 16 or to the
    /// alignment the module's `extern __shared__` declarations ask for; in the SASS the dynamic
    /// buffer is at 0x400 plus that count, past the 1 KB the driver reserves). A kernel that
    /// puts a TMA destination at the start of a dynamic buffer declared without 128-byte
    /// alignment works only without static variables.
    dyn_lead: u32,
    /// The registers each thread has at entry, which `setmaxnreg`'s pool starts from: for a
    /// kernel that uses it, ptxas's count (the launch bounds' limit). 0 where ptxas drops
    /// setmaxnreg (advisory C7508: no register count at entry; C7507: a count below what the
    /// code after it needs).
    regs: u32,
}

fn entry_facts(l: &Launch) -> EntryFacts {
    // setmaxnreg exists on sm_90a alone: a source that may use it says so (lab sources and
    // users' alike; a user's is compiled through a wrapper, so its text is not the kernel's).
    let hopper = l.source.arch.is_some() || l.source.code.contains("setmaxnreg");
    if l.dynamic_smem == 0 && !hopper {
        return EntryFacts::default();
    }
    let arch = (l.source.arch.as_deref()).unwrap_or(if hopper { "sm_90a" } else { "sm_90" });
    let Some((compiled, r)) = crate::cuda::nvrtc::compile(&l.source, arch)
        .ok()
        .and_then(|c| {
            let r = *c.resources.get(l.entry.as_ref())?;
            Some((c, r))
        })
    else {
        return EntryFacts::default();
    };
    // ptxas honors setmaxnreg only in an entry whose register count at entry it can tell: one
    // with a minimum of blocks per SM in its `__launch_bounds__`, or `__maxnreg__`; elsewhere
    // it drops the instruction (advisory C7508), as the GPU then never sees it.
    // It also ignores every setmaxnreg of an entry whose code after one needs more registers
    // than it leaves (advisory C7507: "'setmaxnreg' ignored to maintain minimum register
    // requirements"), such as wgmma accumulators that every warpgroup runs. The advisory
    // names no entry; an entry whose setmaxnreg ptxas keeps starts with the bounds' whole
    // count (168 for 384 threads and one block) or, under looser bounds, the largest `.inc`
    // (232 for 256 threads), one whose setmaxnreg it ignored with what its code needs.
    let entry = crate::cuda::ptx_entry::entry(&compiled.ptx, compiled.symbol(&l.entry));
    let kept = entry
        .as_ref()
        .and_then(register_limit)
        .map(|limit| largest_inc(&compiled.ptx).map_or(limit, |inc| limit.min(inc)));
    let ignored = compiled
        .advisories(&l.entry)
        .iter()
        .any(|a| a.contains("(C7507)"))
        && kept.is_some_and(|kept| r.registers < kept);
    let setmaxnreg = compiled.ptx.contains("setmaxnreg.")
        && entry.is_some_and(|e| e.min_blocks.is_some() || e.max_registers.is_some())
        && !ignored;
    EntryFacts {
        dyn_lead: match l.dynamic_smem {
            0 => 0,
            _ => r.static_smem.next_multiple_of(16) % 1024,
        },
        regs: if setmaxnreg { r.registers } else { 0 },
    }
}

/// The code of `source` a failure's line may be named in: its file and the headers of its
/// own ([`site::Own`]).
fn own_code(source: &CudaSource) -> site::Own<'_> {
    site::Own {
        file: &source.file,
        dirs: &source.include_dirs,
    }
}

/// The registers a thread may have by an entry's bounds: `__maxnreg__`, else what 64K
/// registers give each of the threads of its minimum of blocks, in ptxas's steps of 8 (at
/// most 255, which a thread cannot pass).
fn register_limit(e: &crate::cuda::ptx_entry::Entry) -> Option<u32> {
    if let Some(n) = e.max_registers {
        return Some(n);
    }
    let threads: u32 = e.max_threads?.iter().product();
    let per_thread = 65536 / (threads * e.min_blocks?).max(1);
    Some((per_thread / 8 * 8).min(255))
}

/// The largest count a `setmaxnreg.inc` of the module asks for.
fn largest_inc(ptx: &str) -> Option<u32> {
    ptx.match_indices("setmaxnreg.inc.sync.aligned.u32")
        .filter_map(|(at, op)| {
            let rest = ptx[at + op.len()..].trim_start();
            let digits: String = rest.chars().take_while(char::is_ascii_digit).collect();
            digits.parse().ok()
        })
        .max()
}

/// A `__constant__` array of a loaded module and what the plan copies into it.
struct ConstantSlot {
    /// Keeps the array's module loaded.
    _module: Arc<Module>,
    addr: usize,
    /// Index into `SimRun::bufs`, byte offset and byte count of the copied range.
    buf: usize,
    offset: usize,
    bytes: usize,
}

struct SimRun<'a> {
    dev: &'a SimDevice,
    plan: CudaPlan,
    launches: Vec<Resolved>,
    inputs: Vec<Vec<u8>>,
    /// What the output and each scratch buffer hold at the start of a run, in `bufs` order.
    fills: Vec<Vec<u8>>,
    /// Inputs, then the output, then scratch buffers.
    bufs: Vec<GuardedBuf>,
    /// The host copy of the output a pipeline downloads into (NaN at the start of each run).
    host_out: Vec<u8>,
    runs: u64,
    /// What the last pass over the plan loaded and stored, when its modules count it.
    traffic: Option<MemoryTraffic>,
    /// Blocks the last pass ran and the blocks of its launches, when it ran a sample.
    sampled: Option<(u64, u64)>,
    /// The first thing the last run noticed without stopping ([`Prepared::notes`]).
    note: Option<String>,
}

fn mix(mut x: u64) -> u64 {
    x = x.wrapping_add(0x9E37_79B9_7F4A_7C15);
    x = (x ^ (x >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    x = (x ^ (x >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    x ^ (x >> 31)
}

/// The kernel's parameter list must match the plan's arguments, or the launch would read
/// garbage: catch that before running.
fn check_args(l: &Launch, params: &str) -> Result<(), DeviceError> {
    let want: String = l
        .args
        .iter()
        .map(|a| match a {
            Arg::Ptr(_) | Arg::PtrAt(_) | Arg::Null | Arg::TensorMapAt(_) => 'p',
            Arg::I32(_) => 'i',
            Arg::I64(_) => 'l',
            Arg::F32(_) => 'f',
            Arg::TensorMap(_) => 'm',
        })
        .collect();
    if want != params {
        return Err(DeviceError::Sim(format!(
            "{}: the plan passes arguments ({want}) but the kernel takes ({params}) \
             (p pointer, i 32-bit integer, l 64-bit integer, f float, ? other)",
            l.entry
        )));
    }
    Ok(())
}

impl<'a> SimRun<'a> {
    fn new(
        dev: &'a SimDevice,
        plan: CudaPlan,
        shape: &Shape,
        inputs: &[Vec<f32>],
    ) -> Result<Self, DeviceError> {
        let specs = shape.inputs();
        if inputs.len() != specs.len() || plan.inputs.len() != specs.len() {
            return Err(DeviceError::Sim(format!(
                "{shape} takes {} inputs; {} given, the plan declares {}",
                specs.len(),
                inputs.len(),
                plan.inputs.len()
            )));
        }
        let mut bufs = Vec::new();
        let mut bytes = Vec::new();
        for ((spec, data), &dtype) in specs.iter().zip(inputs).zip(&plan.inputs) {
            if data.len() != spec.len() {
                return Err(DeviceError::Sim(format!(
                    "input {} has {} elements, {shape} needs {}",
                    spec.name,
                    data.len(),
                    spec.len()
                )));
            }
            bufs.push(GuardedBuf::new(spec.name, dtype, spec.len())?);
            bytes.push(dtype.encode(data));
        }
        let out = shape.output();
        bufs.push(GuardedBuf::new(out.name, plan.output, out.len())?);
        let start = |fill, dtype, len| {
            plan.start_bytes(fill, dtype, len, inputs)
                .map_err(DeviceError::Sim)
        };
        let mut fills = vec![start(plan.output_fill, plan.output, out.len())?];
        for s in &plan.scratch {
            bufs.push(GuardedBuf::new(&s.name, s.dtype, s.len)?);
            fills.push(start(s.fill, s.dtype, s.len)?);
        }
        let mut launches = Vec::new();
        let mut constants = Vec::new();
        for (si, step) in plan.steps.iter().enumerate() {
            let l = match step {
                Step::Kernel(l) => l,
                Step::Constant(c) => {
                    let (buf, dtype, len) = match c.from.buf {
                        Buf::Input(i) => (i, plan.inputs.get(i), specs.get(i).map(|s| s.len())),
                        Buf::Output => (specs.len(), Some(&plan.output), Some(out.len())),
                        Buf::Scratch(i) => {
                            let s = plan.scratch.get(i);
                            (specs.len() + 1 + i, s.map(|s| &s.dtype), s.map(|s| s.len))
                        }
                    };
                    let (Some(&dtype), Some(len)) = (dtype, len) else {
                        return Err(DeviceError::Sim(format!(
                            "__constant__ {}: {:?} names no buffer of the plan",
                            c.symbol, c.from.buf
                        )));
                    };
                    if c.from.offset + c.len > len {
                        return Err(DeviceError::Sim(format!(
                            "__constant__ {}: {} elements from {} pass the end of {:?} ({len})",
                            c.symbol, c.len, c.from.offset, c.from.buf
                        )));
                    }
                    let module = dev.module(&c.source)?;
                    let (addr, size) = module.symbol(&c.symbol).ok_or_else(|| {
                        DeviceError::Sim(format!(
                            "{} has no __constant__ array {}",
                            c.source.label(),
                            c.symbol
                        ))
                    })?;
                    let bytes = c.len * dtype.bytes();
                    if bytes > size {
                        return Err(DeviceError::Sim(format!(
                            "__constant__ {} holds {size} bytes, and the plan copies {bytes} into \
                             it ({} elements of '{}')",
                            c.symbol, c.len, bufs[buf].name
                        )));
                    }
                    constants.push(ConstantSlot {
                        _module: module,
                        addr,
                        buf,
                        offset: c.from.offset * dtype.bytes(),
                        bytes,
                    });
                    continue;
                }
                Step::Library(_) => continue, // refused by check_plan
            };
            let threads = l.threads_per_block();
            if threads == 0 || threads > 1024 || l.grid.contains(&0) {
                return Err(DeviceError::Sim(format!(
                    "{}: invalid launch geometry grid {:?} block {:?}",
                    l.entry, l.grid, l.block
                )));
            }
            let module = dev.module(&l.source)?;
            let entry = module.entries.get(l.entry.as_ref()).ok_or_else(|| {
                let mut names: Vec<&str> = module.entries.keys().map(String::as_str).collect();
                names.sort_unstable();
                DeviceError::Sim(format!(
                    "{} has no kernel {} (it defines {})",
                    l.source.label(),
                    l.entry,
                    names.join(", ")
                ))
            })?;
            check_args(l, &entry.params)?;
            check_cluster(l, entry.cluster)?;
            for a in &l.args {
                let at = match *a {
                    Arg::Ptr(b) => b.at(0),
                    Arg::PtrAt(at) => at,
                    Arg::TensorMap(m) | Arg::TensorMapAt(m) => {
                        check_tensor_map(&m, &plan, &specs, out.len(), &l.entry)?;
                        continue;
                    }
                    _ => continue,
                };
                let len = match at.buf {
                    Buf::Input(i) => specs.get(i).map(|s| s.len()),
                    Buf::Output => Some(out.len()),
                    Buf::Scratch(i) => plan.scratch.get(i).map(|s| s.len),
                };
                match len {
                    None => {
                        return Err(DeviceError::Sim(format!(
                            "{}: argument {:?} names no buffer of the plan",
                            l.entry, at.buf
                        )));
                    }
                    Some(len) if at.offset > len => {
                        return Err(DeviceError::Sim(format!(
                            "{}: argument {:?} + {} starts past the end of its {len} elements",
                            l.entry, at.buf, at.offset
                        )));
                    }
                    Some(_) => {}
                }
            }
            launches.push(Resolved {
                thunk: entry.thunk,
                cluster: entry.cluster,
                module: module.clone(),
                launch: l.clone(),
                step: si,
                cooperative: plan.cooperative.contains(&l.entry),
                constants: std::mem::take(&mut constants),
                facts: entry_facts(l),
            });
        }
        if let Some(p) = &plan.pipeline {
            let len_of = |b: Buf| match b {
                Buf::Input(i) => specs.get(i).map_or(0, |s| s.len()),
                Buf::Output => out.len(),
                Buf::Scratch(i) => plan.scratch.get(i).map_or(0, |s| s.len),
            };
            p.check(&plan, len_of)
                .map_err(|why| DeviceError::Sim(format!("pipeline: {why}")))?;
        }
        let host_out = match plan.pipeline {
            Some(_) => Fill::Nan.bytes(plan.output, out.len()),
            None => Vec::new(),
        };
        Ok(Self {
            dev,
            plan,
            launches,
            inputs: bytes,
            fills,
            bufs,
            host_out,
            runs: 0,
            traffic: None,
            sampled: None,
            note: None,
        })
    }

    fn buf_index(&self, b: Buf) -> usize {
        match b {
            Buf::Input(i) => i,
            Buf::Output => self.inputs.len(),
            Buf::Scratch(i) => self.inputs.len() + 1 + i,
        }
    }

    /// Places every buffer, uploads the inputs and fills the output and scratch buffers as
    /// the plan says (the output with NaN unless told otherwise), as the GPU path does.
    /// A pipeline's uploaded inputs start as NaN on the device, as does its host output: only
    /// the chunks' copies bring the data in and the results out.
    fn reset(&mut self, p: Placement) {
        let n_in = self.inputs.len();
        let uploaded = self.plan.uploaded_inputs();
        self.host_out.fill(0xFF);
        for (i, b) in self.bufs.iter_mut().enumerate() {
            b.place(p);
            if uploaded.contains(&i) {
                b.fill(0xFF);
            } else if i < n_in {
                b.write(&self.inputs[i]);
            } else {
                b.write(&self.fills[i - n_in]);
            }
        }
    }

    /// Copies a pipeline chunk's input ranges in (`upload`) or its output ranges out, one
    /// chunk after the other: the simulator has one stream.
    fn copy_spans(&mut self, spans: &[Span], upload: bool) {
        for s in spans {
            let idx = self.buf_index(s.at.buf);
            let b = &mut self.bufs[idx];
            let (from, bytes) = (s.at.offset * b.dtype.bytes(), s.len * b.dtype.bytes());
            // SAFETY: the ranges lie inside the buffers (checked at prepare).
            unsafe {
                if upload {
                    let src = &self.inputs[idx][from..from + bytes];
                    std::ptr::copy_nonoverlapping(src.as_ptr(), b.ptr().add(from), bytes);
                } else {
                    let dst = &mut self.host_out[from..from + bytes];
                    std::ptr::copy_nonoverlapping(b.ptr().add(from), dst.as_mut_ptr(), bytes);
                }
            }
        }
    }

    fn launch_all(&mut self) -> Result<(), DeviceError> {
        let mut traffic = MemoryTraffic::default();
        let mut counted = true;
        let mut sampled = (0u64, 0u64);
        // For the race checker's messages.
        let names: Vec<CString> = self
            .bufs
            .iter()
            .map(|b| CString::new(b.name.replace('\0', "")).unwrap_or_default())
            .collect();
        for i in 0..self.launches.len() {
            let step = self.launches[i].step;
            let chunk = self.plan.pipeline.as_ref().and_then(|p| p.starts_at(step));
            if let Some(c) = chunk.map(|c| c.upload.clone()) {
                self.copy_spans(&c, true);
            }
            let r = &self.launches[i];
            for c in &r.constants {
                // SAFETY: the range lies inside the buffer (checked at prepare) and the array
                // is a writable global of a loaded module; no block runs during the copy.
                unsafe {
                    std::ptr::copy_nonoverlapping(
                        self.bufs[c.buf].ptr().add(c.offset),
                        c.addr as *mut u8,
                        c.bytes,
                    );
                }
            }
            let seed = mix(self.dev.seed ^ mix(self.runs) ^ (i as u64).rotate_left(32));
            let mut counter = match self.dev.build {
                compile::Build::Instrumented => SimTraffic::over(
                    self.bufs.iter().zip(&names).map(|(b, name)| TrafficBuffer {
                        start: b.ptr() as u64,
                        end: b.ptr() as u64 + b.bytes as u64,
                        name,
                        elem_bytes: b.dtype.bytes() as u32,
                    }),
                    r.launch.grid,
                    r.cluster,
                ),
                compile::Build::Plain => None,
            };
            let blocks: u64 = r.launch.grid.iter().map(|&g| u64::from(g)).product();
            if let Some(c) = counter.as_mut() {
                c.every_block =
                    u32::from(r.cooperative || self.dev.sample.is_none_or(|n| n as u64 >= blocks));
            }
            if let Some((c, (begin, _))) = counter.as_mut().zip(r.module.global) {
                // SAFETY: `c` outlives the launch; the module was built from our headers.
                unsafe { begin(c) };
            }
            let ran = self.execute(r, seed, counter.as_mut()).map(|(ran, note)| {
                if self.note.is_none() {
                    self.note = note;
                }
                ran
            });
            if let Some((c, (_, end))) = counter.as_mut().zip(r.module.global) {
                // SAFETY: every block of the launch has finished; `begin` set `c` up.
                unsafe { end(c) };
            }
            let ran = ran?;
            sampled.0 += ran;
            sampled.1 += blocks;
            match counter {
                Some(c) => {
                    traffic.load_bytes += c.loads;
                    traffic.store_bytes += c.stores;
                    traffic.add_launch(
                        self.plan.written_entry(&r.launch.entry),
                        SharedBanks::from_counts(c.banks),
                        Coalescing::from_counts(c.coalescing),
                    );
                }
                None => counted = false,
            }
            // Writes into the alignment padding do not fault: the canary shows them.
            for b in &mut self.bufs {
                if b.padding_written() {
                    return Err(DeviceError::Sim(format!(
                        "{}: out-of-bounds write past the end of buffer '{}' (into the padding \
                         that keeps its start 16-byte aligned; the thread is not known)",
                        shown_name(&r.launch),
                        b.name
                    )));
                }
            }
            let chunk = self.plan.pipeline.as_ref().and_then(|p| p.ends_at(step));
            if let Some(c) = chunk.map(|c| c.download.clone()) {
                self.copy_spans(&c, false);
            }
        }
        self.traffic = counted.then_some(traffic);
        self.sampled = (sampled.0 < sampled.1).then_some(sampled);
        Ok(())
    }

    /// Runs every block of one launch; a module built to count traffic counts into `traffic`.
    /// The blocks run, and what the run noticed without stopping, with its line.
    fn execute(
        &self,
        r: &Resolved,
        seed: u64,
        traffic: Option<&mut SimTraffic>,
    ) -> Result<(u64, Option<String>), DeviceError> {
        let l = &r.launch;
        // Each argument in its own 8-byte cell; x86-64 is little-endian, so an i32 or f32
        // parameter reads the low 4 bytes.
        let mut cells: Vec<u64> = l
            .args
            .iter()
            .map(|a| match *a {
                Arg::Ptr(b) => self.bufs[self.buf_index(b)].ptr() as u64,
                Arg::PtrAt(at) => {
                    let b = &self.bufs[self.buf_index(at.buf)];
                    b.ptr() as u64 + (at.offset * b.dtype.bytes()) as u64
                }
                Arg::Null => 0,
                Arg::I32(v) => u64::from(v as u32),
                Arg::I64(v) => v as u64,
                Arg::F32(v) => u64::from(v.to_bits()),
                Arg::TensorMap(_) | Arg::TensorMapAt(_) => 0, // from `maps` below
            })
            .collect();
        // A tensor map is 128 bytes, 64-byte aligned, in a cell of its own: passed by value,
        // or by the cell's address (the cell standing for the device memory holding it).
        let mut maps: Vec<MapCell> = Vec::new();
        for a in &l.args {
            maps.push(MapCell(match a {
                Arg::TensorMap(m) | Arg::TensorMapAt(m) => self.tensor_map_words(m)?,
                _ => [0; 16],
            }));
        }
        for ((c, m), a) in cells.iter_mut().zip(&maps).zip(&l.args) {
            if let Arg::TensorMapAt(_) = a {
                *c = m as *const MapCell as u64;
            }
        }
        let mut argv: Vec<*mut c_void> = cells
            .iter_mut()
            .zip(maps.iter_mut())
            .zip(&l.args)
            .map(|((c, m), a)| match a {
                Arg::TensorMap(_) => (m as *mut MapCell).cast::<c_void>(),
                _ => (c as *mut u64).cast::<c_void>(),
            })
            .collect();
        let name = CString::new(shown_name(l).as_bytes())
            .map_err(|_| DeviceError::Sim(format!("bad kernel name {:?}", l.entry)))?;
        let mut grid_sync = SimGrid::default();
        let launch = SimLaunch {
            thunk: r.thunk,
            args: argv.as_mut_ptr(),
            grid: l.grid,
            block: l.block,
            cluster: r.cluster,
            dynamic_smem: l.dynamic_smem,
            dyn_lead: r.facts.dyn_lead,
            regs: r.facts.regs,
            kernel: name.as_ptr(),
            traffic: traffic.map_or(std::ptr::null_mut(), |t| t as *mut SimTraffic),
            grid_sync: if r.cooperative {
                &raw mut grid_sync
            } else {
                std::ptr::null_mut()
            },
        };
        let blocks = l.grid.iter().map(|&g| g as usize).product::<usize>();
        // A cooperative launch runs every block: one left out would never reach grid.sync().
        let sample = self.dev.sample.filter(|_| !r.cooperative);
        if blocks > MAX_BLOCKS && sample.is_none_or(|n| n > MAX_BLOCKS) {
            return Err(DeviceError::Sim(format!(
                "{}: {blocks} blocks is more than the simulator runs ({MAX_BLOCKS}); use a smaller shape",
                l.entry
            )));
        }
        // What runs on one OS thread at a time: a cluster of blocks (a block without
        // __cluster_dims__), numbered over the grid of clusters.
        let per_unit: u32 = r.cluster.iter().product();
        let units_grid = [0, 1, 2].map(|d| l.grid[d] / r.cluster[d]);
        let units = blocks / per_unit as usize;
        let mut order: Vec<u64> = match sample {
            // The same blocks on every pass: the seed depends on the launch, not on the run.
            Some(n) => sample_blocks(
                units_grid,
                n.div_ceil(per_unit as usize),
                mix(self.dev.seed ^ blocks as u64),
            ),
            None => (0..units as u64).collect(),
        };
        let ran = order.len() as u64 * u64::from(per_unit);
        let mut s = seed;
        for i in (1..order.len()).rev() {
            s = mix(s);
            order.swap(i, (s % (i as u64 + 1)) as usize);
        }
        let next = AtomicUsize::new(0);
        let stop = AtomicBool::new(false);
        // The failure of the unit handed out first, with its place in `order`: the units
        // before it were handed out before it, and those on other OS threads run to their
        // ends (only one that spins, waiting for another unit, is stopped), so which failure
        // a run reports does not depend on which OS thread got there first.
        let failure: Mutex<Option<(usize, SimResult)>> = Mutex::new(None);
        let place = |res: &SimResult| -> usize {
            if res.has_thread == 0 {
                return usize::MAX;
            }
            let [x, y, z] = [0, 1, 2].map(|d| u64::from(res.block[d] / r.cluster[d]));
            let unit = x + u64::from(units_grid[0]) * (y + u64::from(units_grid[1]) * z);
            order.iter().position(|&u| u == unit).unwrap_or(usize::MAX)
        };
        // Where a thread that stopped when asked was (its spinning thread).
        let stopped: Mutex<Option<SimResult>> = Mutex::new(None);
        let shared = SharedLaunch(&launch);
        let run_units = r.module.run_units;
        let hook = r.module.fault;
        let workers = self.dev.threads.min(order.len()).max(1);
        let per_unit_threads = l.block.iter().product::<u32>() as usize * per_unit as usize;
        let resident = resident_units(per_unit_threads, workers);
        let in_flight = resident as usize * workers * per_unit as usize;
        // Declined as a GPU declines a grid its SMs cannot hold at once.
        if r.cooperative && blocks > in_flight {
            return Err(DeviceError::Unsupported(crate::Unsupported(format!(
                "{}: a cooperative launch needs all {blocks} blocks resident at once, and the \
                 simulator keeps up to {in_flight} blocks of {} threads in flight \
                 ({RESIDENT_THREADS} threads in all); launch fewer blocks, as a GPU's occupancy \
                 times its SMs also bounds them",
                shown_name(l),
                l.threads_per_block()
            ))));
        }
        let feed = UnitFeed {
            next: &next,
            order: &order,
            stop: &stop,
            seed,
        };
        // The watchdog's view of the workers: the pthread of each one still in its loop (a
        // worker leaves it under the lock, so a signal never reaches a finished thread).
        let running: Mutex<Vec<Option<libc::pthread_t>>> = Mutex::new(vec![None; workers]);
        // Each OS thread's first note; the least of them is kept. Which blocks an OS thread
        // runs first depends on timing, so with several the note may name another block.
        let notes: Mutex<Vec<String>> = Mutex::new(Vec::new());
        let done = std::sync::Condvar::new();
        let mut timed_out = false;
        let (limit, by_deadline) = self.dev.launch_limit();
        std::thread::scope(|scope| {
            for slot in 0..workers {
                let (failure, stopped, shared, feed, running, done, place, notes) = (
                    &failure, &stopped, &shared, &feed, &running, &done, &place, &notes,
                );
                scope.spawn(move || {
                    let _armed = fault::Armed::new(hook);
                    // SAFETY: pthread_self has no preconditions.
                    lock(running)[slot] = Some(unsafe { libc::pthread_self() });
                    let mut res = SimResult::default();
                    let ctx = std::ptr::from_ref(feed).cast_mut().cast::<c_void>();
                    // SAFETY: `launch` points to live arguments and buffers for the whole
                    // scope, `ctx` to the feed `next_unit` reads; the module was built from
                    // our headers.
                    let rc = unsafe {
                        run_units(
                            shared.get(),
                            next_unit,
                            ctx,
                            resident,
                            fault::WATCHDOG,
                            &mut res,
                        )
                    };
                    let note = res.note();
                    if !note.is_empty() {
                        lock(notes).push(note);
                    }
                    if rc == SIM_STOPPED && res.has_thread != 0 {
                        lock(stopped).get_or_insert(res);
                    } else if rc != SIM_OK && rc != SIM_STOPPED {
                        feed.stop.store(true, Ordering::Relaxed);
                        let at = place(&res);
                        let mut first = lock(failure);
                        if first.as_ref().is_none_or(|(before, _)| at < *before) {
                            *first = Some((at, res));
                        }
                    }
                    lock(running)[slot] = None;
                    done.notify_all();
                });
            }
            // The watchdog: past the limit, every worker still running is stopped, and sent
            // the signal again until it has left (one that arrives between two units, where
            // it is dropped, would leave a unit that never polls running).
            let deadline = Instant::now() + limit;
            let mut alive = lock(&running);
            loop {
                if alive.iter().all(Option::is_none) && next.load(Ordering::Relaxed) > 0 {
                    break;
                }
                let now = Instant::now();
                if now >= deadline {
                    timed_out = true;
                    stop.store(true, Ordering::Relaxed);
                    for tid in alive.iter().flatten() {
                        // SAFETY: the thread is alive: it clears its slot under this lock
                        // before it ends.
                        unsafe { libc::pthread_kill(*tid, fault::WATCHDOG) };
                    }
                }
                let wait = if timed_out {
                    Duration::from_millis(100)
                } else {
                    (deadline - now).min(Duration::from_millis(100))
                };
                alive = done
                    .wait_timeout(alive, wait)
                    .unwrap_or_else(|p| p.into_inner())
                    .0;
            }
        });
        // Every worker of this launch is back in the module's pool: what they hold beyond one
        // mapping each goes back to the system, so that a process running many modules stays
        // far from the limit on mappings.
        // SAFETY: a function of the loaded module with no arguments; it takes the pool's lock.
        unsafe { (r.module.trim)() };
        // Blocks beyond those in flight start only as others finish: one can wait for
        // another only if both fit.
        let residency = if blocks > in_flight {
            format!(
                "; a block can wait only for blocks in flight beside it, and the simulator keeps \
                 up to {in_flight} in flight at once"
            )
        } else {
            String::new()
        };
        // Only an instrumented build sees volatile accesses and atomics, and so tells a thread
        // spinning on them from one looping without any.
        let instrumented = self.dev.build == compile::Build::Instrumented;
        let timeout = |res: Option<&SimResult>| {
            let why = match res {
                Some(r) if instrumented && r.has_thread != 0 && r.spinning == 0 => {
                    "without reaching a barrier, a volatile load or an atomic: a loop that never \
                     ends, or a wait on a flag read with plain loads, which the compiler may read \
                     once (a GPU hangs on it too: declare the flag volatile, or read it with an \
                     atomic)"
                        .to_string()
                }
                // Switching at barriers without a volatile access or an atomic since the
                // watchdog's first look: work left, not a wait on another thread.
                Some(r) if instrumented && r.has_thread != 0 && r.spinning == 2 => {
                    "its threads still passing barriers, not waiting on memory: a kernel making \
                     progress, with more work at this shape than the simulator finishes in the \
                     time (a persistent kernel walks every tile however few blocks \
                     --sim-blocks runs); try a smaller shape"
                        .to_string()
                }
                Some(r) if instrumented && r.has_thread != 0 => format!(
                    "waiting on memory no other thread changes: it keeps reading it with \
                     volatile loads or atomics{residency}"
                ),
                _ => format!(
                    "a loop that never ends, such as a spin wait no other thread can \
                     satisfy{residency}"
                ),
            };
            DeviceError::Sim(format!(
                "{}: kernel did not finish: {} still running after {} s ({why}; the limit \
                 is {})",
                shown_name(l),
                res.map_or_else(|| "a block".to_string(), who),
                seconds(limit.as_secs_f64()),
                if by_deadline {
                    "the row's, --row-timeout"
                } else {
                    "LAB_SIM_TIMEOUT_S"
                }
            ))
        };
        match failure
            .into_inner()
            .unwrap_or_else(|p| p.into_inner())
            .map(|(_, res)| res)
        {
            None if timed_out => Err(timeout(lock(&stopped).as_ref())),
            None => {
                let note = lock(&notes).iter().min().map(|n| {
                    site::name_lines(
                        &self.name_buffer_addresses(n),
                        &r.module.path,
                        own_code(&l.source),
                    )
                });
                Ok((ran, note))
            }
            Some(res) if res.code == SIM_FAULT && res.signal == fault::WATCHDOG => {
                Err(timeout(Some(&res)))
            }
            Some(res) if res.code == SIM_FAULT => Err(DeviceError::Sim(self.describe_fault(
                l,
                &res,
                &r.module.path,
            ))),
            Some(res) => {
                let message = res.message();
                // Inline PTX the simulator does not run, reached: the row is not simulated.
                if let Some(refusal) = inline_asm::reached_refusal(&message) {
                    return Err(Unsupported(refusal).into());
                }
                let message = site::name_lines(
                    &self.name_buffer_addresses(&message),
                    &r.module.path,
                    own_code(&l.source),
                );
                Err(DeviceError::Sim(bounds_report::explain(message, &l.source)))
            }
        }
    }

    /// The simulator's encoding of `m` over its buffer where it now lies.
    fn tensor_map_words(&self, m: &TensorMap) -> Result<[u64; 16], DeviceError> {
        let b = &self.bufs[self.buf_index(m.buf)];
        Ok(m.sim_words(b.dtype, b.ptr() as u64)?)
    }

    /// How far past a buffer's end an address in a message is still named as that buffer's:
    /// well inside its guard, past the rows a grid's tail overruns by (`kNearEnd` of
    /// sim_traffic.h).
    const NEAR_END: i64 = 1 << 20;

    /// `message` with each address that lies in one of the launch's buffers, or just past its
    /// end (in its guard), named by its place there in place of its digits (an address of
    /// the simulator's memory, which tells a user nothing and changes from run to run): "byte
    /// 140 (element 35) of buffer 'A'", "byte 22 of buffer 'A', past its end (it holds 2
    /// bytes)". Other addresses are left as they are.
    fn name_buffer_addresses(&self, message: &str) -> String {
        let mut out = String::with_capacity(message.len());
        let mut rest = message;
        while let Some(at) = rest.find("0x") {
            let digits = rest[at + 2..]
                .find(|c: char| !c.is_ascii_hexdigit())
                .map_or(rest.len(), |n| at + 2 + n);
            let addr = u64::from_str_radix(&rest[at + 2..digits], 16).ok();
            let place = addr.and_then(|addr| {
                self.bufs.iter().find_map(|b| {
                    let off = b
                        .offset_of(addr)
                        .filter(|&o| o >= 0 && (o as usize) < b.bytes)?;
                    let size = b.dtype.bytes() as i64;
                    let elem = off / size;
                    Some(match off % size {
                        0 => format!("byte {off} (element {elem}) of buffer '{}'", b.name),
                        into => format!(
                            "byte {off} (byte {into} of element {elem}) of buffer '{}'",
                            b.name
                        ),
                    })
                })
            });
            let past = || {
                self.bufs.iter().find_map(|b| {
                    let off = b.offset_of(addr?).filter(|&o| {
                        o >= b.bytes as i64 && o - (b.bytes as i64) < Self::NEAR_END
                    })?;
                    Some(format!(
                        "byte {off} of buffer '{}', past its end (it holds {} bytes)",
                        b.name, b.bytes
                    ))
                })
            };
            out.push_str(&rest[..at]);
            match place.or_else(past) {
                Some(named) => out.push_str(&named),
                None => out.push_str(&rest[at..digits]),
            }
            rest = &rest[digits..];
        }
        out.push_str(rest);
        out
    }

    /// A fault's message: what the address is, the thread, and the line of the faulting
    /// instruction when it is in the kernel's file (read from `module`'s line tables).
    fn describe_fault(&self, l: &Launch, r: &SimResult, module: &Path) -> String {
        let message = r.message();
        let at = site::line_in(&message, module, own_code(&l.source))
            .or_else(|| site::emulated_at(&message, own_code(&l.source)))
            .map(|line| format!(", at {line}"))
            .unwrap_or_default();
        format!("{}{at}", self.fault_words(l, r))
    }

    fn fault_words(&self, l: &Launch, r: &SimResult) -> String {
        let who = who(r);
        let kernel = shown_name(l);
        if r.signal == libc::SIGFPE {
            return format!("{kernel}: arithmetic exception (integer division by zero?) in {who}");
        }
        let access = match r.is_write {
            -1 => {
                return format!(
                    "{kernel}: invalid access at an address the CPU could not name (a \
                     general-protection fault: an address far outside memory, such as an index \
                     far out of bounds or overflowed, or a wild pointer) by {who}"
                );
            }
            0 => "read",
            _ => "write",
        };
        for b in &self.bufs {
            if let Some(off) = b.offset_of(r.addr) {
                let size = b.dtype.bytes() as i64;
                let elems = b.bytes as i64 / size;
                let where_ = if off < 0 {
                    "before the start of"
                } else {
                    "past the end of"
                };
                return format!(
                    "{kernel}: out-of-bounds {access} {where_} buffer '{}' at element {} \
                     (byte offset {off}; the buffer holds {elems} {} elements) by {who}",
                    b.name,
                    off.div_euclid(size),
                    b.dtype.name(),
                );
            }
        }
        format!(
            "{kernel}: invalid {access} at address {:#x} (in no buffer: a wild or null pointer, \
             a misaligned vector access or a fiber stack overflow) by {who}",
            r.addr
        )
    }
}

/// The thread and block a fault or the watchdog stopped.
fn who(r: &SimResult) -> String {
    let [bx, by, bz] = r.block;
    if r.has_thread != 0 {
        let [tx, ty, tz] = r.thread;
        format!("thread ({tx},{ty},{tz}) of block ({bx},{by},{bz})")
    } else {
        format!("block ({bx},{by},{bz})")
    }
}

/// A mutex's guard, whether or not a thread panicked holding it.
fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

/// A `CUtensorMap` argument's 128 bytes, aligned as the type is.
#[repr(C, align(64))]
struct MapCell([u64; 16]);

/// A tensor map must name a buffer of the plan, follow the driver's constraints and view no
/// more than its buffer holds (the emulated TMA reads wherever the map says).
fn check_tensor_map(
    m: &TensorMap,
    plan: &CudaPlan,
    specs: &[crate::workload::TensorSpec],
    out_len: usize,
    entry: &str,
) -> Result<(), DeviceError> {
    let (dtype, len) = match m.buf {
        Buf::Input(i) => (plan.inputs.get(i), specs.get(i).map(|s| s.len())),
        Buf::Output => (Some(&plan.output), Some(out_len)),
        Buf::Scratch(i) => {
            let s = plan.scratch.get(i);
            (s.map(|s| &s.dtype), s.map(|s| s.len))
        }
    };
    let (Some(&dtype), Some(len)) = (dtype, len) else {
        return Err(DeviceError::Sim(format!(
            "{entry}: tensor map over {:?}, which names no buffer of the plan",
            m.buf
        )));
    };
    m.encoding(dtype)?;
    m.fits(len)?;
    Ok(())
}

/// Threads whose blocks the simulator keeps in flight at once over all its OS threads when
/// blocks spin waiting for others. Each resident thread's stack has a guard page, which costs
/// two of the process's memory mappings (vm.max_map_count, 65530 by default).
const RESIDENT_THREADS: usize = 16384;

/// How many units (of `unit_threads` threads each) one of `workers` OS threads may run side
/// by side.
fn resident_units(unit_threads: usize, workers: usize) -> u32 {
    let units = RESIDENT_THREADS / (unit_threads.max(1) * workers.max(1));
    u32::try_from(units).map_or(ffi::MAX_RESIDENT, |u| u.clamp(1, ffi::MAX_RESIDENT))
}

/// What the worker threads take their units from: the shuffled order, the next index in it,
/// and whether to stop.
struct UnitFeed<'a> {
    next: &'a AtomicUsize,
    order: &'a [u64],
    stop: &'a AtomicBool,
    seed: u64,
}

/// `SimNextUnit` over a [`UnitFeed`].
unsafe extern "C" fn next_unit(ctx: *mut c_void, want: i32, unit: *mut u64, seed: *mut u64) -> i32 {
    // SAFETY: `ctx` is the feed the launch's scope holds for as long as its threads run.
    let feed = unsafe { &*ctx.cast::<UnitFeed>() };
    if feed.stop.load(Ordering::Relaxed) {
        return -1;
    }
    if want == 0 {
        return 0;
    }
    let Some(&u) = feed.order.get(feed.next.fetch_add(1, Ordering::Relaxed)) else {
        return 0;
    };
    // SAFETY: the runtime passes pointers to two locals.
    unsafe {
        *unit = u;
        *seed = mix(feed.seed ^ u);
    }
    1
}

/// The launch description, shared read-only by the worker threads.
struct SharedLaunch<'a>(&'a SimLaunch);
// SAFETY: the runtime only reads the launch; its pointers stay valid for the scope.
unsafe impl Sync for SharedLaunch<'_> {}
impl SharedLaunch<'_> {
    fn get(&self) -> *const SimLaunch {
        self.0
    }
}

impl Prepared for SimRun<'_> {
    /// Runs the plan twice, buffers against their rear guards and then against their front
    /// guards, so overruns and underruns both fault; the output is the second pass's.
    fn run(&mut self) -> Result<(), DeviceError> {
        self.note = None;
        for p in [Placement::AgainstEnd, Placement::AgainstStart] {
            self.reset(p);
            self.launch_all()?;
            self.runs += 1;
        }
        Ok(())
    }

    fn output(&mut self) -> Result<Vec<f32>, DeviceError> {
        if self.plan.pipeline.is_some() {
            return Ok(self.plan.output.decode(&self.host_out));
        }
        let out = &self.bufs[self.inputs.len()];
        Ok(self.plan.output.decode(&out.read()))
    }

    fn inputs_written(&mut self) -> Result<Vec<usize>, DeviceError> {
        let uploaded = self.plan.uploaded_inputs();
        Ok((0..self.inputs.len())
            .filter(|i| !uploaded.contains(i) && self.bufs[*i].read() != self.inputs[*i])
            .collect())
    }

    fn time(&mut self, iters: u64) -> Result<Duration, DeviceError> {
        let mut total = Duration::ZERO;
        for _ in 0..iters {
            self.reset(Placement::AgainstEnd);
            let start = Instant::now();
            self.launch_all()?;
            total += start.elapsed();
            self.runs += 1;
        }
        Ok(total)
    }

    fn traffic(&self) -> Option<MemoryTraffic> {
        self.traffic.clone()
    }

    fn notes(&self) -> Vec<String> {
        self.note.iter().cloned().collect()
    }

    fn sample(&self) -> Option<BlockSample> {
        let (blocks_run, blocks) = self.sampled?;
        let out = &self.bufs[self.inputs.len()];
        let (now, fill) = (out.read(), &self.fills[0]);
        let size = self.plan.output.bytes();
        let written = (0..now.len() / size)
            .filter(|i| now[i * size..(i + 1) * size] != fill[i * size..(i + 1) * size])
            .collect();
        Some(BlockSample {
            blocks_run,
            blocks,
            written,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tma::{TensorMap, TmaSwizzle};

    /// The two counts a kernel whose setmaxnreg ptxas keeps starts with the smaller of: its
    /// bounds' (what 64K registers give each thread, in steps of 8, at most 255) and its
    /// largest `.inc`.
    #[test]
    fn the_bounds_count_and_the_largest_inc_are_read_from_the_ptx() {
        let ptx = |threads: u32| {
            format!(
                ".visible .entry k(\n.param .u64 k_param_0\n)\n.maxntid {threads}, 1, 1\n\
                 .minnctapersm 1\n{{\nsetmaxnreg.dec.sync.aligned.u32 40;\n\
                 setmaxnreg.inc.sync.aligned.u32 232;\nret;\n}}\n"
            )
        };
        for (threads, limit) in [(384, 168), (256, 255), (128, 255)] {
            let text = ptx(threads);
            let e = crate::cuda::ptx_entry::entry(&text, "k").expect("the entry parses");
            assert_eq!(register_limit(&e), Some(limit), "{threads} threads");
            assert_eq!(largest_inc(&text), Some(232));
        }
        assert_eq!(largest_inc("setmaxnreg.dec.sync.aligned.u32 40;"), None);
    }

    #[test]
    fn a_time_limit_under_a_second_never_reads_zero() {
        assert_eq!(seconds(300.0), "300");
        assert_eq!(seconds(0.5), "0.5");
        assert_eq!(seconds(0.000001), "0.000001");
        assert_eq!(seconds(0.02), "0.02");
    }

    /// Unknown inline PTX is no reason to refuse a plan: only a launch that reaches it is
    /// (`an_unknown_instruction_fails_the_launch_that_reaches_it`).
    #[test]
    fn tensor_maps_pass_and_unknown_inline_ptx_is_left_to_the_launch() {
        let map = TensorMap::matrix(Buf::Input(0), 64, 64, 64, 64, TmaSwizzle::B128);
        let launch = |code: &'static str, args| Launch {
            source: CudaSource::embedded("k.cu", code),
            entry: "k".into(),
            grid: [1, 1, 1],
            block: [32, 1, 1],
            dynamic_smem: 0,
            args,
        };
        let plain = "extern \"C\" __global__ void k() {}";
        let tma = CudaPlan::single(1, launch(plain, vec![Arg::TensorMap(map)]));
        assert!(check_plan(&tma).is_ok());
        let ptx = "extern \"C\" __global__ void k() {\n  asm volatile(\"bar.red.popc.u32 %0, 1, 64, 1;\" : \"=r\"(n));\n}";
        assert!(check_plan(&CudaPlan::single(1, launch(ptx, vec![]))).is_ok());
    }
}
