//! The C interface of a compiled kernel module, mirroring `kernel/sim/include/sim_runtime.h`.

use std::ffi::{CStr, c_char, c_void};

/// `SimLaunch`: one launch, as every block of it sees it.
#[repr(C)]
pub struct SimLaunch {
    pub thunk: Thunk,
    pub args: *mut *mut c_void,
    pub grid: [u32; 3],
    pub block: [u32; 3],
    /// The kernel's `__cluster_dims__`, `[1, 1, 1]` without.
    pub cluster: [u32; 3],
    pub dynamic_smem: u32,
    /// Where a GPU starts the dynamic shared memory, modulo 1024 ([`super::EntryFacts`]).
    pub dyn_lead: u32,
    /// The registers a thread has at entry, for `setmaxnreg`'s pool; 0 when unknown.
    pub regs: u32,
    pub kernel: *const c_char,
    /// Where a module built to count traffic counts it; null otherwise.
    pub traffic: *mut SimTraffic,
    /// A cooperative launch's grid barrier (every block resident at once); null otherwise.
    pub grid_sync: *mut SimGrid,
}

/// `SimGrid`: the grid-wide barrier of a cooperative launch, the blocks arrived in the current
/// phase, the phases completed and the blocks that have exited. Starts zeroed; the blocks
/// update it atomically.
#[repr(C)]
#[derive(Default)]
pub struct SimGrid {
    pub arrived: u64,
    pub phase: u64,
    pub exited: u64,
}

/// Most buffers a launch's traffic is counted in.
pub const MAX_TRAFFIC_RANGES: usize = 64;

/// `SimTraffic` (sim_traffic.h): one launch's device buffers and the bytes its blocks loaded
/// from and stored to them.
#[repr(C)]
pub struct SimTraffic {
    pub pairs: [u64; 2 * MAX_TRAFFIC_RANGES],
    pub ranges: i32,
    pub lowest: u64,
    pub highest: u64,
    pub loads: u64,
    pub stores: u64,
    /// The bank model's counts (`SimBankKind` order: LDS, STS, LDSM, LDGSTS), each requests,
    /// wavefronts and ideal wavefronts.
    pub banks: [[u64; 3]; 4],
    /// Plain global loads and stores (`SimGlobalKind` order), each of all requests, then of
    /// whole warps': requests, distinct 32-byte sectors, distinct 128-byte lines, ideal lines,
    /// the bytes of each request's widest lane.
    pub coalescing: [[[u64; 5]; 2]; 2],
    /// For the race checker of global memory (`sim_global.h`): each buffer's name (borrowed
    /// for the launch) and element size, the grid and cluster dims, whether every block runs
    /// (1) or a sample (0), and its state between [`GlobalBegin`] and [`GlobalEnd`].
    pub names: [*const c_char; MAX_TRAFFIC_RANGES],
    pub elem_bytes: [u32; MAX_TRAFFIC_RANGES],
    pub grid: [u32; 3],
    pub cluster: [u32; 3],
    pub every_block: u32,
    pub global: *mut c_void,
}

/// One device buffer of a launch, as [`SimTraffic::over`] takes it.
pub struct TrafficBuffer<'a> {
    pub start: u64,
    pub end: u64,
    pub name: &'a CStr,
    pub elem_bytes: u32,
}

impl SimTraffic {
    /// Counting in `buffers` for a launch of `grid` blocks in clusters of `cluster`; more
    /// than [`MAX_TRAFFIC_RANGES`] buffers is refused.
    pub fn over<'a>(
        buffers: impl Iterator<Item = TrafficBuffer<'a>>,
        grid: [u32; 3],
        cluster: [u32; 3],
    ) -> Option<Self> {
        let mut t = Self {
            pairs: [0; 2 * MAX_TRAFFIC_RANGES],
            ranges: 0,
            lowest: u64::MAX,
            highest: 0,
            loads: 0,
            stores: 0,
            banks: [[0; 3]; 4],
            coalescing: [[[0; 5]; 2]; 2],
            names: [std::ptr::null(); MAX_TRAFFIC_RANGES],
            elem_bytes: [0; MAX_TRAFFIC_RANGES],
            grid,
            cluster,
            every_block: 1,
            global: std::ptr::null_mut(),
        };
        for (i, b) in buffers.enumerate() {
            if i == MAX_TRAFFIC_RANGES {
                return None;
            }
            t.pairs[2 * i] = b.start;
            t.pairs[2 * i + 1] = b.end;
            t.names[i] = b.name.as_ptr();
            t.elem_bytes[i] = b.elem_bytes;
            t.lowest = t.lowest.min(b.start);
            t.highest = t.highest.max(b.end);
            t.ranges += 1;
        }
        Some(t)
    }
}

/// `SimResult`: what went wrong in a block, if anything.
#[repr(C)]
pub struct SimResult {
    pub code: i32,
    pub signal: i32,
    pub is_write: i32,
    pub has_thread: i32,
    /// Stopped at the time limit: whether the thread named was looping without a switch (0),
    /// switching and polling memory (1), or switching at barriers without a volatile access or
    /// an atomic (2, told apart from 1 in an instrumented build).
    pub spinning: i32,
    pub block: [u32; 3],
    pub thread: [u32; 3],
    pub addr: u64,
    pub message: [c_char; 1024],
    /// What the run noticed without stopping: the first read of shared memory no thread of
    /// its block had written.
    pub note: [c_char; 1024],
}

impl Default for SimResult {
    fn default() -> Self {
        Self {
            code: 0,
            signal: 0,
            is_write: 0,
            has_thread: 0,
            spinning: 0,
            block: [0; 3],
            thread: [0; 3],
            addr: 0,
            message: [0; 1024],
            note: [0; 1024],
        }
    }
}

impl SimResult {
    pub fn message(&self) -> String {
        text(&self.message)
    }

    /// [`SimResult::note`], empty when the run noticed nothing.
    pub fn note(&self) -> String {
        text(&self.note)
    }
}

/// A NUL-terminated C string of a fixed buffer.
fn text(chars: &[c_char]) -> String {
    let bytes: Vec<u8> = chars
        .iter()
        .take_while(|&&c| c != 0)
        .map(|&c| c as u8)
        .collect();
    String::from_utf8_lossy(&bytes).into_owned()
}

pub const SIM_OK: i32 = 0;
pub const SIM_FAULT: i32 = 2;
/// The OS thread stopped because the host asked it to (another unit failed, or time ran out).
pub const SIM_STOPPED: i32 = 3;
/// `kMaxResident`: the most units one OS thread runs side by side.
pub const MAX_RESIDENT: u32 = 64;

/// `SimKernel`: an entry of the module's `sim_kernels` table (ends with a null name).
#[repr(C)]
pub struct SimKernel {
    pub name: *const c_char,
    pub thunk: Option<Thunk>,
    pub params: *const c_char,
    pub cluster: [u32; 3],
}

pub type Thunk = unsafe extern "C" fn(args: *mut *mut c_void);
/// `SimNextUnit`: the next unit to run and its schedule seed (`want` 1; returns 1, or 0 when
/// none is left), or only whether to stop (`want` 0); -1 says stop.
pub type NextUnit =
    unsafe extern "C" fn(ctx: *mut c_void, want: i32, unit: *mut u64, seed: *mut u64) -> i32;
/// `sim_run_units`: runs units on the calling OS thread as `next` hands them out, up to
/// `max_resident` side by side when they spin; the `watchdog` signal is let through only
/// while the kernel's threads run.
pub type RunUnits = unsafe extern "C" fn(
    launch: *const SimLaunch,
    next: NextUnit,
    ctx: *mut c_void,
    max_resident: u32,
    watchdog: i32,
    out: *mut SimResult,
) -> i32;
/// `sim_fault`: the faulting address, whether it was a write and the faulting instruction's.
pub type FaultHook = unsafe extern "C" fn(sig: i32, addr: u64, is_write: i32, pc: u64);
/// `sim_trim`: the idle workers' guard pages and touched stack pages given back.
pub type Trim = unsafe extern "C" fn();
/// `sim_global_begin` (instrumented modules): the race checker of global memory set up for
/// one launch's buffers.
pub type GlobalBegin = unsafe extern "C" fn(traffic: *mut SimTraffic);
/// `sim_global_end`: what `sim_global_begin` set up, freed.
pub type GlobalEnd = unsafe extern "C" fn(traffic: *mut SimTraffic);
