//! The C interface of a compiled kernel module, mirroring `kernel/sim/include/sim_runtime.h`.

use std::ffi::{c_char, c_void};

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
    pub kernel: *const c_char,
    /// Where a module built to count traffic counts it; null otherwise.
    pub traffic: *mut SimTraffic,
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
}

impl SimTraffic {
    /// Counting in the buffers `[start, end)`; more than [`MAX_TRAFFIC_RANGES`] is refused.
    pub fn over(buffers: impl Iterator<Item = (u64, u64)>) -> Option<Self> {
        let mut t = Self {
            pairs: [0; 2 * MAX_TRAFFIC_RANGES],
            ranges: 0,
            lowest: u64::MAX,
            highest: 0,
            loads: 0,
            stores: 0,
            banks: [[0; 3]; 4],
        };
        for (i, (start, end)) in buffers.enumerate() {
            if i == MAX_TRAFFIC_RANGES {
                return None;
            }
            t.pairs[2 * i] = start;
            t.pairs[2 * i + 1] = end;
            t.lowest = t.lowest.min(start);
            t.highest = t.highest.max(end);
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
    pub block: [u32; 3],
    pub thread: [u32; 3],
    pub addr: u64,
    pub message: [c_char; 512],
}

impl Default for SimResult {
    fn default() -> Self {
        Self {
            code: 0,
            signal: 0,
            is_write: 0,
            has_thread: 0,
            block: [0; 3],
            thread: [0; 3],
            addr: 0,
            message: [0; 512],
        }
    }
}

impl SimResult {
    pub fn message(&self) -> String {
        let bytes: Vec<u8> = self
            .message
            .iter()
            .take_while(|&&c| c != 0)
            .map(|&c| c as u8)
            .collect();
        String::from_utf8_lossy(&bytes).into_owned()
    }
}

pub const SIM_OK: i32 = 0;
pub const SIM_FAULT: i32 = 2;

/// `SimKernel`: an entry of the module's `sim_kernels` table (ends with a null name).
#[repr(C)]
pub struct SimKernel {
    pub name: *const c_char,
    pub thunk: Option<Thunk>,
    pub params: *const c_char,
    pub cluster: [u32; 3],
}

pub type Thunk = unsafe extern "C" fn(args: *mut *mut c_void);
pub type RunBlock = unsafe extern "C" fn(
    launch: *const SimLaunch,
    block: u64,
    seed: u64,
    out: *mut SimResult,
) -> i32;
pub type FaultHook = unsafe extern "C" fn(sig: i32, addr: u64, is_write: i32);
/// `sim_trim`: the idle workers' guard pages and touched stack pages given back.
pub type Trim = unsafe extern "C" fn();
