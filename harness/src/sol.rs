//! A speed-of-light estimate on an H100 SXM, per rung, from the compiler's output rather than
//! from the rung's name: the hot loop of the kernel's SASS (see [`sass::Function::hot_loop`])
//! says what one warp does per pass (FLOP, bytes requested from global and shared memory,
//! instructions issued); the workload's FLOP count says how many passes the whole shape takes;
//! each of the H100's ceilings turns that into a time, and the largest is the bound. A kernel
//! whose loops do no multiply-add (a sum, an element-wise chain) is counted launch by launch
//! instead ([`estimate_launches`]): every warp runs its SASS once, a streaming loop makes the
//! passes that read the launch's inputs once, and each launch's buffers cross DRAM.
//!
//! It is a model, not a measurement: each line of the loop counts once (of an if/else the
//! shorter arm, a nested loop once), bytes are what a warp requests (no caching or broadcast),
//! shared memory is counted in wavefronts with the bank conflicts the simulator found where it
//! found them ([`BankFactors`]), global loads and stores in the 128-byte lines the L1 serves
//! them in, as coalesced or not as the simulator found them, TMA copies are invisible (their
//! size is in the tensor map), and latency is not modelled beyond an occupancy note. The
//! Nsight Compute metrics listed with it measure each ceiling on a GPU.

use crate::sass::{self, Disassembler, Loop, SassError, SharedWavefronts, Summary};
use kernel::{Coalescing, CudaPlan, GlobalRequests, SharedBanks};

/// The H100 SXM's ceilings.
pub mod h100 {
    /// Streaming multiprocessors (NVIDIA H100 data sheet, SXM5).
    pub const SMS: f64 = 132.0;
    /// Dense peaks from NVIDIA's H100 data sheet (SXM): FP32 on the CUDA cores, TF32,
    /// FP16/BF16 and FP8 (FP32 accumulate) on the tensor cores.
    pub const FP32_FLOPS: f64 = 67e12;
    pub const TF32_FLOPS: f64 = 495e12;
    pub const FP16_FLOPS: f64 = 989e12;
    pub const FP8_FLOPS: f64 = 1979e12;
    /// INT8 tensor operations a second, dense: the data sheet's 1979 TOPS (SXM).
    pub const INT8_OPS: f64 = 1979e12;
    /// HBM3 bandwidth, NVIDIA H100 data sheet (SXM).
    pub const DRAM_BYTES_PER_S: f64 = 3.35e12;
    /// L2 cache, NVIDIA H100 data sheet (SXM): 50 MB.
    pub const L2_BYTES: f64 = 50e6;
    /// PCIe Gen5 x16 between host and device, each way: the data sheet's 128 GB/s counts both
    /// directions together.
    pub const PCIE_BYTES_PER_S: f64 = 64e9;
    /// FP32 lanes per SM (NVIDIA H100 architecture whitepaper); with the FP32 peak it gives
    /// the clock the data sheet assumes (see [`clock_hz`]).
    pub const FP32_LANES_PER_SM: f64 = 128.0;
    /// L2 bandwidth: NVIDIA publishes no figure. The Chips and Cheese microbenchmarks
    /// ("Nvidia's H100: Funny L2, and Tons of Bandwidth", 2023) read about 5.5 TB/s on an H100
    /// PCIe (114 SMs, a 350 W part whose clock dropped under that test), but this lab's wgmma
    /// GEMM rungs moved more through the L2 of an H200, the same GH100 chip with 132 SMs: at
    /// 8192^3 rung 25's 2048 tiles of 128x256 read 12.9 GB of A and B at 8.6 TB/s (the test
    /// `l2_rate_is_the_fastest_a_published_gpu_run_read` recomputes it). The rate is that
    /// measured floor: the model's L2 bound is one the lab has seen a kernel reach.
    pub const L2_BYTES_PER_S: f64 = 8.6e12;
    /// Shared memory (and L1) bandwidth per SM: 32 banks of 4 bytes a clock (CUDA C++
    /// Programming Guide, compute capability 9.0), one wavefront of 128 bytes.
    pub const SHARED_BYTES_PER_CLOCK: f64 = 128.0;
    /// Warp instructions issued per SM per clock: 4 schedulers, one each (whitepaper).
    pub const ISSUE_PER_CLOCK: f64 = 4.0;
    pub const SCHEDULERS: f64 = 4.0;
    pub const MAX_WARPS_PER_SM: f64 = 64.0;

    /// The boost clock behind the data sheet's FP32 peak: FP32 FLOP/s over (SMs x lanes x 2
    /// FLOP per FMA), 1.98 GHz, NVIDIA's maximum boost clock for the SXM part.
    pub fn clock_hz() -> f64 {
        FP32_FLOPS / (SMS * FP32_LANES_PER_SM * 2.0)
    }
}

/// One ceiling: what it is, the work it counts at the whole shape, its rate, and the time.
#[derive(Clone, Debug, PartialEq)]
pub struct Ceiling {
    pub name: &'static str,
    /// The work at the whole shape, in words (`1.2 TB requested`).
    pub work: String,
    /// The rate it runs at, in words, with its source.
    pub rate: String,
    pub ms: f64,
    /// The Nsight Compute metric that measures it on a GPU.
    pub metric: &'static str,
}

/// The estimate for one shape from one hot loop, or from a plan's launches.
#[derive(Clone, Debug, PartialEq)]
pub struct Estimate {
    /// Passes of one warp through the loop that the shape's FLOP take (the launch model:
    /// the warps its launches start).
    pub warp_passes: f64,
    pub ceilings: Vec<Ceiling>,
}

impl Estimate {
    /// The largest time: the ceiling that bounds the kernel.
    pub fn bound(&self) -> &Ceiling {
        self.ceilings
            .iter()
            .max_by(|a, b| a.ms.total_cmp(&b.ms))
            .expect("an estimate has ceilings")
    }

    /// The time once `units` blocks (of a persistent launch, tiles) of equal work are shared
    /// out over the H100's SMs: the largest of the ceilings' times, each per-SM one stretched.
    /// A per-SM ceiling (math, shared memory, the L1, issue) is a rate each SM has for itself,
    /// whatever the number of blocks it holds (the model leaves latency out): the kernel ends
    /// when the SMs given the most blocks, ceil(units / SMs), are done, so its time grows by
    /// that over the average. The blocks an SM holds at once do not enter: a short last wave
    /// spreads its blocks one to an SM. The L2 counts among them: its rate was measured with
    /// every SM drawing on it, and the model gives each SM that share, so an idle SM leaves its
    /// share unused (one SM cannot pull the whole L2's rate). DRAM serves whichever SMs ask, so
    /// a few blocks can leave a per-SM ceiling above a DRAM bound that binds a full grid.
    pub fn spread_over_sms(&self, units: u64) -> f64 {
        let (c, stretch) = self.bound_over_sms(units);
        c.ms * stretch
    }

    /// The ceiling that binds once `units` blocks are shared out over the SMs (see
    /// [`Estimate::spread_over_sms`]), and the stretch its time takes (1 for DRAM).
    pub fn bound_over_sms(&self, units: u64) -> (&Ceiling, f64) {
        let per_sm = units as f64 / h100::SMS;
        let stretch = |c: &Ceiling| {
            if units > 0 && PER_SM.contains(&c.name) {
                per_sm.ceil() / per_sm
            } else {
                1.0
            }
        };
        self.ceilings
            .iter()
            .map(|c| (c, stretch(c)))
            .max_by(|a, b| (a.0.ms * a.1).total_cmp(&(b.0.ms * b.1)))
            .expect("an estimate has ceilings")
    }

    /// The ceiling called `name`, if the estimate has it.
    pub fn ceiling(&self, name: &str) -> Option<&Ceiling> {
        self.ceilings.iter().find(|c| c.name == name)
    }
}

pub const TENSOR: &str = "tensor cores";
pub const FP32: &str = "FP32 pipes";
pub const DRAM: &str = "DRAM (compulsory)";
/// What each launch of a plan reads and writes, intermediates included (the launch model).
pub const DRAM_LAUNCHES: &str = "DRAM (every launch's buffers)";
pub const L2: &str = "L2 (global requested)";
pub const SHARED: &str = "shared memory";
/// Global loads and stores in the cache lines the L1 serves them in.
pub const L1: &str = "L1 (global lines)";
pub const ISSUE: &str = "instruction issue";
/// A pipeline's copies between host and device (`CudaPlan::host_copies`).
pub const HOST_COPIES: &str = "host-device copies";
/// The ceilings each SM pays for itself (of the L2, its share).
const PER_SM: [&str; 6] = [TENSOR, FP32, L2, SHARED, L1, ISSUE];

fn si(x: f64, unit: &str) -> String {
    let (v, p) = [(1e12, "T"), (1e9, "G"), (1e6, "M"), (1e3, "k")]
        .into_iter()
        .find(|(s, _)| x >= *s)
        .unwrap_or((1.0, ""));
    format!("{:.2} {p}{unit}", x / v)
}

/// How many times its conflict-free wavefronts each kind of shared-memory instruction takes:
/// the simulator's count of the kernel (see `kernel::SharedBanks`) set against the hot loop's
/// SASS. A kind's factor is taken only where both issue requests of about the same width
/// (conflict-free wavefronts a request within 1.5x of each other): where the host compiler
/// split or merged the accesses otherwise than nvcc did, the conflicts it shows are those of
/// other code. A kind the simulator did not count (WMMA's loads and stores) stays at 1.
///
/// Global loads and stores likewise ([`BankFactors::with_coalescing`]): how many times the
/// 128-byte lines of a coalesced request each takes, from the simulator's requests of whole
/// warps, set against the loop's `LDG` and `STG`.
#[derive(Clone, Debug, PartialEq)]
pub struct BankFactors {
    /// LDS, STS, LDSM, LDGSTS (the order of `SharedBanks::kinds`).
    by_kind: [f64; 4],
    /// LDG, STG (the order of `Coalescing::kinds`): lines over a coalesced request's.
    lines: [f64; 2],
    /// LDG, STG: the share of the bytes the lanes request that their distinct sectors hold,
    /// at most 1. A request sends the L2 no more than its sectors, so a broadcast (lanes
    /// reading the same word) moves its bytes once.
    moved: [f64; 2],
    /// A line per kind of the hot loop: the factor taken, or why none.
    pub notes: Vec<String>,
    /// Likewise for its global loads and stores.
    pub line_notes: Vec<String>,
}

impl Default for BankFactors {
    /// No simulator count: every access conflict-free, every global request coalesced.
    fn default() -> Self {
        Self {
            by_kind: [1.0; 4],
            lines: [1.0; 2],
            moved: [1.0; 2],
            notes: Vec::new(),
            line_notes: Vec::new(),
        }
    }
}

/// The 128-byte lines one warp's `n` global accesses (`n128` of them 128-bit, `n64` 64-bit)
/// touch when each is coalesced: 32 lanes of 16 bytes fill 4, of 8 bytes 2, narrower 1.
fn coalesced_lines(n: u32, n128: u32, n64: u32) -> u64 {
    u64::from(n) + 3 * u64::from(n128) + u64::from(n64)
}

/// The coalesced lines of `s`'s global loads and of its stores.
fn ideal_lines(s: &Summary) -> [u64; 2] {
    [
        coalesced_lines(s.ldg, s.ldg128, s.ldg64),
        coalesced_lines(s.stg, s.stg128, s.stg64),
    ]
}

/// The mean bytes a lane of `n` global accesses (`n128` of them 128-bit, `n64` 64-bit) moves,
/// counting the narrower ones as 4.
fn lane_width(n: u32, n128: u32, n64: u32) -> f64 {
    f64::from(16 * n128 + 8 * n64 + 4 * (n - n128 - n64)) / f64::from(n)
}

/// Two counts of one kind "of about the same width": within this factor of each other.
const SAME_WIDTH: f64 = 1.5;

impl BankFactors {
    pub fn from_simulator(sim: &SharedBanks, pass: &Summary) -> Self {
        let w = &pass.shared_wavefronts;
        let sass = [
            (pass.lds, w.lds),
            (pass.sts, w.sts),
            (pass.ldsm, w.ldsm),
            (pass.ldgsts, w.ldgsts),
        ];
        let mut out = Self::default();
        for (i, ((kind, c), (n, ideal))) in sim.kinds().into_iter().zip(sass).enumerate() {
            if n == 0 {
                continue;
            }
            if c.requests == 0 || c.ideal == 0 {
                out.notes.push(format!(
                    "{kind}: none counted by the simulator, taken as conflict-free"
                ));
                continue;
            }
            let (sim_width, sass_width) = (
                c.ideal as f64 / c.requests as f64,
                ideal as f64 / f64::from(n),
            );
            if sim_width.max(sass_width) > SAME_WIDTH * sim_width.min(sass_width) {
                out.notes.push(format!(
                    "{kind}: not scaled (the simulator's requests take {sim_width:.2} \
                     conflict-free wavefronts each, this loop's {sass_width:.2}: the host \
                     compiler split or merged them otherwise than nvcc, so its conflicts are \
                     those of other code)"
                ));
                continue;
            }
            let f = c.wavefronts as f64 / c.ideal as f64;
            out.by_kind[i] = f;
            out.notes.push(if c.conflicts() == 0 {
                format!("{kind}: conflict-free")
            } else {
                format!(
                    "{kind}: x{f:.2} ({} wavefronts for {} conflict-free)",
                    c.wavefronts, c.ideal
                )
            });
        }
        if w.wgmma > 0 {
            out.notes.push(
                "HGMMA operands: not counted by the simulator, taken as conflict-free (their \
                 tiles are swizzled as the descriptors say)"
                    .into(),
            );
        }
        out
    }

    /// With the simulator's coalescing of global loads and stores set against `pass`'s: each
    /// kind's lines over the ideal, from the requests of whole warps where there are any (a
    /// large shape's are), taken where the simulator's requests and the loop's are about as
    /// wide (see [`SAME_WIDTH`]).
    pub fn with_coalescing(mut self, sim: &Coalescing, pass: &Summary) -> Self {
        let counts = [
            (pass.ldg, pass.ldg128, pass.ldg64),
            (pass.stg, pass.stg128, pass.stg64),
        ];
        for (i, (kind, all, whole)) in sim.kinds().into_iter().enumerate() {
            let (n, n128, n64) = counts[i];
            if n == 0 {
                continue;
            }
            let c: GlobalRequests = if whole.requests > 0 { whole } else { all };
            let whose = if whole.requests > 0 {
                "whole warps' requests"
            } else {
                "requests (none of a whole warp)"
            };
            if c.requests == 0 || c.ideal_lines == 0 {
                self.line_notes.push(format!(
                    "{kind}: none counted by the simulator, taken as coalesced"
                ));
                continue;
            }
            // Lanes of 1 or 2 bytes count as 4, as the loop's narrower accesses do: a warp's
            // fill a line at most.
            let (sim_width, sass_width) = (
                (c.lane_bytes as f64 / c.requests as f64).max(4.0),
                lane_width(n, n128, n64),
            );
            if sim_width.max(sass_width) > SAME_WIDTH * sim_width.min(sass_width) {
                self.line_notes.push(format!(
                    "{kind}: taken as coalesced (the simulator's lanes move {sim_width:.1} \
                     bytes a request, this loop's {sass_width:.1}: the host compiler split or \
                     merged them otherwise than nvcc)"
                ));
                continue;
            }
            let f = c.lines as f64 / c.ideal_lines as f64;
            self.lines[i] = f;
            // A whole warp's lanes request 32 times a lane's bytes.
            let moved = match whole.requests {
                0 => 1.0,
                _ => (whole.sectors as f64 / whole.lane_bytes as f64).min(1.0),
            };
            self.moved[i] = moved;
            let broadcast = if moved < 1.0 {
                format!(
                    "; their distinct sectors hold {:.0}% of the bytes their lanes request \
                     (lanes reading the same words), what the L2 term counts",
                    moved * 100.0
                )
            } else {
                String::new()
            };
            self.line_notes.push(if c.lines == c.ideal_lines {
                format!("{kind}: coalesced{broadcast}")
            } else {
                format!(
                    "{kind}: x{f:.2} ({} lines for {} coalesced, the simulator's \
                     {whose}){broadcast}",
                    c.lines, c.ideal_lines
                )
            });
        }
        self
    }

    /// The 128-byte lines `s`'s global loads and stores take with these factors.
    fn lines(&self, s: &Summary) -> f64 {
        let [ld, st] = ideal_lines(s);
        ld as f64 * self.lines[0] + st as f64 * self.lines[1]
    }

    /// The bytes `s`'s global accesses move through the L2 with these factors: what the lanes
    /// request, less what broadcasts repeat of the plain loads and stores.
    fn l2_bytes(&self, s: &Summary) -> f64 {
        let requested = (s.global_load_bytes + s.global_store_bytes) as f64;
        let repeated: f64 = ideal_lines(s)
            .into_iter()
            .zip(self.moved)
            .map(|(lines, m)| lines as f64 * 128.0 * (1.0 - m))
            .sum();
        (requested - repeated).max(0.0)
    }

    /// What the ceilings' words say of these factors: the kinds they scale.
    fn labels(&self) -> Labels {
        Labels {
            conflicts: self.taken(),
            uncoalesced: self.uncoalesced(),
            broadcasts: self.moved.iter().any(|&m| m < 1.0),
        }
    }

    /// The wavefronts `w` take with these factors (`HGMMA`'s operands unscaled).
    fn wavefronts(&self, w: &SharedWavefronts) -> f64 {
        let [lds, sts, ldsm, ldgsts] = self.by_kind;
        w.lds as f64 * lds
            + w.sts as f64 * sts
            + w.ldsm as f64 * ldsm
            + w.ldgsts as f64 * ldgsts
            + w.wgmma as f64
    }

    /// The line factors above 1, by kind (`LDG x16.50`).
    fn uncoalesced(&self) -> Vec<String> {
        ["LDG", "STG"]
            .into_iter()
            .zip(self.lines)
            .filter(|(_, f)| *f > 1.0)
            .map(|(k, f)| format!("{k} x{f:.2}"))
            .collect()
    }

    /// The factors above 1, by kind (`LDS x1.50`).
    fn taken(&self) -> Vec<String> {
        ["LDS", "STS", "LDSM", "LDGSTS"]
            .into_iter()
            .zip(self.by_kind)
            .filter(|(_, f)| *f > 1.0)
            .map(|(k, f)| format!("{k} x{f:.2}"))
            .collect()
    }
}

/// What the ceilings' words name of the factors an estimate took: the kinds of shared-memory
/// instruction scaled by bank conflicts (`LDS x1.50`), of global access by lines over the
/// coalesced (`LDG x16.50`), and whether broadcasts lowered the L2's bytes.
#[derive(Default)]
struct Labels {
    conflicts: Vec<String>,
    uncoalesced: Vec<String>,
    broadcasts: bool,
}

impl Labels {
    /// These and `o`'s, each named `entry: ` where given (a launch's own factors).
    fn with(mut self, o: Labels, entry: Option<&str>) -> Self {
        let named = |v: Vec<String>| -> Vec<String> {
            match entry {
                Some(e) => v.into_iter().map(|x| format!("{e} {x}")).collect(),
                None => v,
            }
        };
        for x in named(o.conflicts) {
            if !self.conflicts.contains(&x) {
                self.conflicts.push(x);
            }
        }
        for x in named(o.uncoalesced) {
            if !self.uncoalesced.contains(&x) {
                self.uncoalesced.push(x);
            }
        }
        self.broadcasts |= o.broadcasts;
        self
    }
}

/// The estimate for a shape of `flops` FLOP and `compulsory_bytes` bytes (each input read
/// once, the output written once) done by passes of `pass`, one warp's pass through the hot
/// loop, its shared-memory wavefronts scaled by `banks`. `None` when the loop does no math:
/// then nothing says how many passes the shape takes.
pub fn estimate(
    flops: f64,
    compulsory_bytes: f64,
    pass: &Summary,
    banks: &BankFactors,
) -> Option<Estimate> {
    // The workload's FLOP are its multiply-adds: on the tensor cores when the loop has any,
    // else on the FMA pipes. FMA work beside tensor work (softmax, scaling) is extra.
    let per_pass = if pass.flop_tensor > 0 {
        pass.flop_tensor
    } else {
        pass.flop_fma
    };
    if per_pass == 0 || flops <= 0.0 {
        return None;
    }
    let w = flops / per_pass as f64;
    let work = Work::default().plus(pass, w, banks);
    Some(Estimate {
        warp_passes: w,
        ceilings: ceilings(
            &work,
            &work,
            compulsory_bytes,
            pass.hgmma > 0,
            &banks.labels(),
        ),
    })
}

/// What warps do in all, summed over their passes: FLOP, bytes, shared-memory wavefronts
/// (with the bank factors) and warp instructions.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
struct Work {
    tf32: f64,
    half: f64,
    fp8: f64,
    int8: f64,
    fma: f64,
    global: f64,
    shared: f64,
    wavefronts: f64,
    /// Cache lines of global loads and stores (see [`BankFactors::with_coalescing`]).
    lines: f64,
    issued: f64,
    /// The wavefronts are the simulator's count, not the SASS's (and the bytes unknown).
    served: bool,
}

impl Work {
    /// This work and `times` runs of `s`.
    fn plus(self, s: &Summary, times: f64, banks: &BankFactors) -> Self {
        Self {
            tf32: self.tf32 + times * s.flop_tf32 as f64,
            half: self.half
                + times * (s.flop_tensor - s.flop_tf32 - s.flop_fp8 - s.flop_int8) as f64,
            fp8: self.fp8 + times * s.flop_fp8 as f64,
            int8: self.int8 + times * s.flop_int8 as f64,
            fma: self.fma + times * s.flop_fma as f64,
            global: self.global + times * banks.l2_bytes(s),
            shared: self.shared + times * (s.shared_load_bytes + s.shared_store_bytes) as f64,
            wavefronts: self.wavefronts + times * banks.wavefronts(&s.shared_wavefronts),
            lines: self.lines + times * banks.lines(s),
            issued: self.issued + times * f64::from(s.instructions),
            served: self.served,
        }
    }

    fn scaled(self, f: f64) -> Self {
        Self {
            tf32: self.tf32 * f,
            half: self.half * f,
            fp8: self.fp8 * f,
            int8: self.int8 * f,
            fma: self.fma * f,
            global: self.global * f,
            shared: self.shared * f,
            wavefronts: self.wavefronts * f,
            lines: self.lines * f,
            issued: self.issued * f,
            served: self.served,
        }
    }

    fn sum(self, o: Self) -> Self {
        Self {
            tf32: self.tf32 + o.tf32,
            half: self.half + o.half,
            fp8: self.fp8 + o.fp8,
            int8: self.int8 + o.int8,
            fma: self.fma + o.fma,
            global: self.global + o.global,
            shared: self.shared + o.shared,
            wavefronts: self.wavefronts + o.wavefronts,
            lines: self.lines + o.lines,
            issued: self.issued + o.issued,
            served: self.served || o.served,
        }
    }
}

/// The ceilings of `work`, each per-SM one timed at `timed` (the work stretched by the SMs
/// a launch leaves idle, where the model counts them), DRAM at the compulsory bytes.
fn ceilings(
    work: &Work,
    timed: &Work,
    compulsory_bytes: f64,
    wgmma: bool,
    labels: &Labels,
) -> Vec<Ceiling> {
    let clock = h100::clock_hz();
    let ms = |seconds: f64| seconds * 1e3;
    let mut ceilings = Vec::new();
    let floating = work.tf32 + work.half + work.fp8;
    if floating + work.int8 > 0.0 {
        // The rate of each kind of tensor operation the work has: FLOP, or int8's OP.
        let rates: Vec<String> = [
            (work.tf32, "TF32", h100::TF32_FLOPS, "FLOP/s"),
            (work.half, "FP16/BF16", h100::FP16_FLOPS, "FLOP/s"),
            (work.fp8, "FP8", h100::FP8_FLOPS, "FLOP/s"),
            (work.int8, "INT8", h100::INT8_OPS, "OP/s"),
        ]
        .iter()
        .filter(|(ops, ..)| *ops > 0.0)
        .map(|(_, name, rate, unit)| format!("{name} {}", si(*rate, unit)))
        .collect();
        ceilings.push(Ceiling {
            name: TENSOR,
            work: match floating > 0.0 {
                true => si(floating + work.int8, "FLOP"),
                false => si(work.int8, "OP"),
            },
            rate: format!("{} dense (data sheet)", rates.join(", ")),
            ms: ms(timed.tf32 / h100::TF32_FLOPS
                + timed.half / h100::FP16_FLOPS
                + timed.fp8 / h100::FP8_FLOPS
                + timed.int8 / h100::INT8_OPS),
            // wgmma runs on its own pipe counter; mma.sync on the HMMA one.
            metric: if wgmma {
                "sm__inst_executed_pipe_tensor_op_gmma.avg.pct_of_peak_sustained_active"
            } else {
                "sm__pipe_tensor_op_hmma_cycles_active.avg.pct_of_peak_sustained_active"
            },
        });
    }
    if work.fma > 0.0 {
        ceilings.push(Ceiling {
            name: FP32,
            work: si(work.fma, "FLOP"),
            rate: format!("{} (data sheet)", si(h100::FP32_FLOPS, "FLOP/s")),
            ms: ms(timed.fma / h100::FP32_FLOPS),
            metric: "sm__pipe_fma_cycles_active.avg.pct_of_peak_sustained_active",
        });
    }
    ceilings.push(Ceiling {
        name: DRAM,
        work: si(compulsory_bytes, "B"),
        rate: format!("{} (data sheet)", si(h100::DRAM_BYTES_PER_S, "B/s")),
        ms: ms(compulsory_bytes / h100::DRAM_BYTES_PER_S),
        metric: "dram__bytes.sum",
    });
    ceilings.push(Ceiling {
        name: L2,
        work: if labels.broadcasts {
            format!("{}, broadcasts moved once", si(work.global, "B"))
        } else {
            si(work.global, "B")
        },
        rate: format!(
            "{} (at least: what the lab's wgmma GEMM rungs read through an H200's L2)",
            si(h100::L2_BYTES_PER_S, "B/s")
        ),
        ms: ms(timed.global / h100::L2_BYTES_PER_S),
        metric: "lts__t_bytes.sum",
    });
    let wavefront_rate = h100::SMS * clock;
    let conflicts = if labels.conflicts.is_empty() {
        String::new()
    } else {
        format!(
            " with the simulator's bank conflicts ({})",
            labels.conflicts.join(", ")
        )
    };
    ceilings.push(Ceiling {
        name: SHARED,
        work: if work.served && work.wavefronts > 0.0 {
            format!(
                "{} wavefronts, as the simulator's warps asked them",
                si(work.wavefronts, "").trim_end()
            )
        } else if work.wavefronts > 0.0 {
            format!(
                "{} requested, {} wavefronts{conflicts}",
                si(work.shared, "B"),
                si(work.wavefronts, "").trim_end()
            )
        } else {
            "none".into()
        },
        rate: format!(
            "a wavefront ({} B) a clock per SM (CUDA programming guide: 32 banks of 4 B), {}",
            h100::SHARED_BYTES_PER_CLOCK,
            si(wavefront_rate * h100::SHARED_BYTES_PER_CLOCK, "B/s")
        ),
        ms: ms(timed.wavefronts / wavefront_rate),
        metric: "l1tex__data_pipe_lsu_wavefronts_mem_shared.sum (bank conflicts: \
                 l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ld.sum)",
    });
    if work.lines > 0.0 {
        let uncoalesced = &labels.uncoalesced;
        ceilings.push(Ceiling {
            name: L1,
            work: if uncoalesced.is_empty() {
                format!("{} lines, coalesced", si(work.lines, "").trim_end())
            } else {
                format!(
                    "{} lines, as the simulator's warps coalesced them ({})",
                    si(work.lines, "").trim_end(),
                    uncoalesced.join(", ")
                )
            },
            rate: format!(
                "a 128-byte line a clock per SM (the L1's data pipe, which shared memory also \
                 uses), {}",
                si(wavefront_rate * h100::SHARED_BYTES_PER_CLOCK, "B/s")
            ),
            ms: ms(timed.lines / wavefront_rate),
            metric: "l1tex__data_pipe_lsu_wavefronts.sum less \
                     l1tex__data_pipe_lsu_wavefronts_mem_shared.sum (sectors a request: \
                     l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum over \
                     l1tex__t_requests_pipe_lsu_mem_global_op_ld.sum)",
        });
    }
    let issue_rate = h100::SMS * h100::ISSUE_PER_CLOCK * clock;
    ceilings.push(Ceiling {
        name: ISSUE,
        work: format!("{} warp instructions", si(work.issued, "")),
        rate: format!(
            "{} per clock per SM (one per scheduler, H100 whitepaper), {}",
            h100::ISSUE_PER_CLOCK,
            si(issue_rate, "/s")
        ),
        ms: ms(timed.issued / issue_rate),
        metric: "sm__inst_issued.sum",
    });
    ceilings
}

/// One launch of a plan for the launch model ([`estimate_launches`]): its blocks and warps,
/// one warp's run through its kernel outside the hot loop, and the hot loop, if any, with the
/// passes all the launch's warps make through it.
#[derive(Clone, Debug, PartialEq)]
pub struct LaunchWork {
    pub entry: String,
    pub blocks: u64,
    pub warps_per_block: u64,
    /// One warp's run outside the hot loop, the body of every if counted: what it moves.
    pub once: Summary,
    /// The instructions of its shortest path (every if's body skipped): what it must issue.
    pub shortest: u32,
    pub hot: Option<(Summary, f64)>,
    /// Bytes of the buffers the launch reads and writes (see `CudaPlan::launch_bytes`) that
    /// cross DRAM: an intermediate an earlier launch wrote is read from the L2 where the L2
    /// can hold it ([`dram_bytes`]).
    pub buffer_bytes: f64,
    /// The simulator's counts of this launch's kernel as factors, where it counted the plan's
    /// kernels apart, in place of the estimate's.
    pub own: Option<BankFactors>,
}

impl LaunchWork {
    pub fn warps(&self) -> u64 {
        self.blocks * self.warps_per_block
    }

    /// The launch's per-SM times over its work's: a launch of fewer blocks than SMs, or a
    /// last wave that leaves SMs idle, runs at the rate of the SMs it keeps busy (the SMs
    /// given the most blocks, ceil(blocks / SMs), end last; see
    /// [`Estimate::spread_over_sms`]).
    pub fn stretch(&self) -> f64 {
        let per_sm = self.blocks as f64 / h100::SMS;
        if self.blocks == 0 {
            1.0
        } else {
            per_sm.ceil() / per_sm
        }
    }
}

/// The bytes of a launch's buffers that cross DRAM, at best: all it reads and writes but the
/// intermediates earlier launches wrote that fit in the H100's L2, which it reads from there.
pub fn dram_bytes(read: usize, written: usize, intermediates: &[usize]) -> f64 {
    let from_l2: usize = intermediates
        .iter()
        .filter(|&&b| b as f64 <= h100::L2_BYTES)
        .sum();
    (read + written - from_l2) as f64
}

/// The launch model, for plans whose work is moving and combining bytes rather than
/// multiply-adds (element-wise chains, pooling, reductions): each launch's warps each run its
/// kernel once outside the hot loop (moving the bytes of every access, issuing the
/// instructions of the shortest path), and make the loop's passes between them; the work of
/// every launch adds up, each per-SM ceiling stretched by the SMs its launch leaves idle
/// (launches run one after the other), and DRAM moves the plan's compulsory bytes, or, where
/// they are more, the bytes of every launch's buffers (`LaunchWork::buffer_bytes`).
/// `served`: the shared-memory wavefronts per warp launched that the simulator counted, bank
/// conflicts included, in place of the SASS's (which count an if's body for every warp).
/// `None` without launches.
pub fn estimate_launches(
    compulsory_bytes: f64,
    launches: &[LaunchWork],
    banks: &BankFactors,
    served: Option<f64>,
) -> Option<Estimate> {
    if launches.is_empty() {
        return None;
    }
    let (mut work, mut timed) = (Work::default(), Work::default());
    let mut labels = banks.labels();
    for l in launches {
        let banks = match &l.own {
            Some(own) => {
                labels = labels.with(own.labels(), Some(&l.entry));
                own
            }
            None => banks,
        };
        let mut w = Work::default().plus(&l.once, l.warps() as f64, banks);
        // An if's body issues only in warps with a lane that takes it: at best, none.
        w.issued = l.warps() as f64 * f64::from(l.shortest);
        if let Some((pass, passes)) = &l.hot {
            w = w.plus(pass, *passes, banks);
        }
        if let Some(per_warp) = served {
            (w.wavefronts, w.shared, w.served) = (per_warp * l.warps() as f64, 0.0, true);
        }
        work = work.sum(w);
        timed = timed.sum(w.scaled(l.stretch()));
    }
    let wgmma = launches.iter().any(|l| l.once.hgmma > 0);
    let mut ceilings = ceilings(&work, &timed, compulsory_bytes, wgmma, &labels);
    // Intermediates written by one launch and read by the next cross DRAM twice unless the L2
    // holds them: where the launches move more than the compulsory bytes, what they move.
    let buffers: f64 = launches.iter().map(|l| l.buffer_bytes).sum();
    if buffers > compulsory_bytes {
        let at = ceilings
            .iter()
            .position(|c| c.name == DRAM)
            .map_or(0, |i| i + 1);
        ceilings.insert(
            at,
            Ceiling {
                name: DRAM_LAUNCHES,
                work: si(buffers, "B"),
                rate: format!("{} (data sheet)", si(h100::DRAM_BYTES_PER_S, "B/s")),
                ms: buffers / h100::DRAM_BYTES_PER_S * 1e3,
                metric: "dram__bytes.sum",
            },
        );
    }
    Some(Estimate {
        warp_passes: launches.iter().map(|l| l.warps() as f64).sum(),
        ceilings,
    })
}

/// The launch of a plan that does the math, with its hot loop.
#[derive(Clone, Debug)]
pub struct HotLoop {
    pub listing: sass::Listing,
    pub hot: Loop,
}

/// Compiles each launch of `plan` for `arch` and returns the one whose hot loop does the
/// most FLOP per pass (see [`hottest`]), or `None` if no launch has a loop.
pub fn hot_loop_of_plan(
    tool: &Disassembler,
    plan: &CudaPlan,
    arch: &str,
) -> Result<Option<HotLoop>, SassError> {
    Ok(hottest(&sass::of_plan(tool, plan, arch)?))
}

/// Of `listings`, the hot loop that does the most FLOP per pass (the matrix product rather
/// than a conversion kernel), or `None` if none has a loop.
pub fn hottest(listings: &[sass::Listing]) -> Option<HotLoop> {
    let flop = |l: &Loop| l.summary.flop_tensor + l.summary.flop_fma;
    listings
        .iter()
        .filter_map(hot_loop)
        .max_by_key(|h| flop(&h.hot))
}

/// The hot loop of `listing`'s function, if it has a loop.
pub fn hot_loop(listing: &sass::Listing) -> Option<HotLoop> {
    let hot = listing.function.hot_loop()?;
    Some(HotLoop {
        listing: listing.clone(),
        hot,
    })
}

/// One line on a pass of the hot loop: its FLOP and the widths of its memory accesses.
pub fn describe(s: &Summary) -> String {
    let mut parts = vec![format!("{} instructions", s.instructions)];
    let mut count = |n: u32, what: &str| {
        if n > 0 {
            parts.push(format!("{n} {what}"));
        }
    };
    count(s.ffma, "FFMA");
    count(s.hmma, "HMMA");
    count(s.hgmma, "HGMMA");
    count(s.ldg - s.ldg128 - s.ldg64, "LDG.32 or narrower");
    count(s.ldg64, "LDG.64");
    count(s.ldg128, "LDG.128");
    count(s.ldgsts, "LDGSTS");
    count(s.utmaldg, "UTMALDG (TMA)");
    count(s.stg - s.stg128 - s.stg64, "STG.32 or narrower");
    count(s.stg64, "STG.64");
    count(s.stg128, "STG.128");
    count(s.lds - s.lds128 - s.lds64, "LDS.32 or narrower");
    count(s.lds64, "LDS.64");
    count(s.lds128, "LDS.128");
    count(s.ldsm, "LDSM");
    count(s.sts - s.sts128 - s.sts64, "STS.32 or narrower");
    count(s.sts64, "STS.64");
    count(s.sts128, "STS.128");
    count(s.ld_generic + s.st_generic, "generic LD/ST");
    count(s.ldl + s.stl, "local LDL/STL");
    format!(
        "{}; per warp: {} FLOP on tensor cores, {} on FMA pipes; global {} B loaded, {} B \
         stored; shared {} B loaded, {} B stored",
        parts.join(", "),
        s.flop_tensor,
        s.flop_fma,
        s.global_load_bytes,
        s.global_store_bytes,
        s.shared_load_bytes,
        s.shared_store_bytes
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pass(f: impl FnOnce(&mut Summary)) -> Summary {
        let mut s = Summary::default();
        f(&mut s);
        s
    }

    /// Whole warps' requests of `width`-byte lanes, `lines` lines over `ideal` each.
    fn requests(n: u64, width: u64, lines: u64, ideal: u64) -> GlobalRequests {
        GlobalRequests {
            requests: n,
            sectors: n * lines,
            lines: n * lines,
            ideal_lines: n * ideal,
            lane_bytes: n * width,
        }
    }

    /// A loop of 16 FFMA and 32 scalar loads, as the naive GEMM's: the simulator's whole warps
    /// touch 16.5 lines a load (A's 32, B's 1), so the L1 ceiling counts 528 lines a pass and
    /// binds; partial warps' requests do not enter, and where the simulator's lanes are of
    /// another width than the loop's, the loads are taken as coalesced.
    #[test]
    fn uncoalesced_loads_cost_the_lines_the_simulators_whole_warps_touched() {
        let naive = pass(|s| {
            s.instructions = 64;
            s.ffma = 16;
            s.flop_fma = 16 * 64;
            s.ldg = 32;
            s.global_load_bytes = 32 * 128;
        });
        let mut sim = Coalescing {
            loads: requests(3, 4, 9, 1),
            whole_warp_loads: GlobalRequests {
                requests: 2,
                lines: 33,
                ideal_lines: 2,
                sectors: 33,
                lane_bytes: 8,
            },
            ..Coalescing::default()
        };
        let f = BankFactors::default().with_coalescing(&sim, &naive);
        assert_eq!(f.lines, [16.5, 1.0]);
        assert!(f.line_notes[0].contains("x16.50"), "{:?}", f.line_notes);
        let passes = 1e6;
        let e = estimate(passes * 1024.0, 1.0, &naive, &f).unwrap();
        let l1 = e.ceiling(L1).unwrap();
        let clocks = passes * 32.0 * 16.5 / h100::SMS;
        assert!(
            (l1.ms - clocks / h100::clock_hz() * 1e3).abs() < 1e-9,
            "{l1:?}"
        );
        assert_eq!(e.bound().name, L1);
        // Without the simulator, every load is coalesced: a line each.
        let blind = estimate(passes * 1024.0, 1.0, &naive, &BankFactors::default()).unwrap();
        assert!((blind.ceiling(L1).unwrap().ms * 16.5 - l1.ms).abs() < 1e-9);
        // Only partial warps: their requests stand in.
        sim.whole_warp_loads = GlobalRequests::default();
        let f = BankFactors::default().with_coalescing(&sim, &naive);
        assert_eq!(f.lines[0], 9.0);
        assert!(
            f.line_notes[0].contains("none of a whole warp"),
            "{:?}",
            f.line_notes
        );
        // float4 lanes in the simulator against scalar loads in the loop.
        sim.loads = requests(3, 16, 32, 4);
        let f = BankFactors::default().with_coalescing(&sim, &naive);
        assert_eq!(f.lines[0], 1.0);
        assert!(
            f.line_notes[0].contains("taken as coalesced"),
            "{:?}",
            f.line_notes
        );
    }

    /// Lanes that read the same words send the L2 their distinct sectors once: a loop whose
    /// whole warps' loads touch 5 sectors for 32 lanes of 4 bytes (a broadcast of one word and
    /// 16 consecutive floats read twice) moves 5/8 of the bytes they request. Scattered lanes
    /// (more sectors than 4-byte words' worth) stay at what they request.
    #[test]
    fn broadcasts_move_their_bytes_through_the_l2_once() {
        let pv = pass(|s| {
            s.instructions = 64;
            s.ffma = 16;
            s.flop_fma = 16 * 64;
            s.ldg = 32;
            s.global_load_bytes = 32 * 128;
        });
        let whole = |requests, sectors| GlobalRequests {
            requests,
            sectors,
            lines: requests,
            ideal_lines: requests,
            lane_bytes: 4 * requests,
        };
        let broadcast = Coalescing {
            loads: whole(2, 5),
            whole_warp_loads: whole(2, 5),
            ..Coalescing::default()
        };
        let passes = 1e6;
        let l2 = |c: &Coalescing| {
            let f = BankFactors::default().with_coalescing(c, &pv);
            let e = estimate(passes * 1024.0, 1.0, &pv, &f).unwrap();
            (e.ceiling(L2).unwrap().clone(), f.line_notes)
        };
        let (moved, notes) = l2(&broadcast);
        let requested = passes * 32.0 * 128.0;
        assert!(
            (moved.ms - requested * 5.0 / 8.0 / h100::L2_BYTES_PER_S * 1e3).abs() < 1e-9,
            "{moved:?}"
        );
        assert!(moved.work.ends_with("broadcasts moved once"), "{moved:?}");
        assert!(notes[0].contains("hold 62% of the bytes"), "{notes:?}");
        let (scattered, notes) = l2(&Coalescing {
            whole_warp_loads: whole(2, 33),
            ..broadcast
        });
        assert!(
            (scattered.ms - requested / h100::L2_BYTES_PER_S * 1e3).abs() < 1e-9,
            "{scattered:?}"
        );
        assert!(!scattered.work.contains("broadcasts"), "{scattered:?}");
        assert!(!notes[0].contains("hold"), "{notes:?}");
    }

    /// A launch that takes its own kernel's counts pays its own lines; the others the
    /// estimate's. The L1 ceiling names whose factor it took.
    #[test]
    fn a_launch_with_its_own_counts_pays_its_own_lines() {
        let body = pass(|s| {
            s.instructions = 10;
            s.ldg = 1;
            s.global_load_bytes = 128;
        });
        let launch = |entry: &str, own: Option<BankFactors>| LaunchWork {
            entry: entry.into(),
            blocks: 132 * 100,
            warps_per_block: 8,
            once: body,
            shortest: body.instructions,
            hot: None,
            buffer_bytes: 1e6,
            own,
        };
        let line_a_lane = GlobalRequests {
            requests: 1,
            sectors: 32,
            lines: 32,
            ideal_lines: 1,
            lane_bytes: 4,
        };
        let rows = Coalescing {
            loads: line_a_lane,
            whole_warp_loads: line_a_lane,
            ..Coalescing::default()
        };
        let own = BankFactors::default().with_coalescing(&rows, &body);
        let l1 = |ls: &[LaunchWork]| {
            estimate_launches(1.0, ls, &BankFactors::default(), None)
                .unwrap()
                .ceiling(L1)
                .unwrap()
                .clone()
        };
        let coalesced = l1(&[launch("rows", None), launch("cols", None)]);
        let mixed = l1(&[launch("rows", Some(own)), launch("cols", None)]);
        assert!(
            (mixed.ms - coalesced.ms * 33.0 / 2.0).abs() < 1e-9,
            "{mixed:?} {coalesced:?}"
        );
        assert!(mixed.work.contains("(rows LDG x32.00)"), "{mixed:?}");
    }

    #[test]
    fn the_clock_is_the_data_sheet_fp32_clock() {
        let ghz = h100::clock_hz() / 1e9;
        assert!((1.9..2.0).contains(&ghz), "{ghz}");
    }

    #[test]
    fn a_loop_without_math_gives_no_estimate() {
        let s = pass(|s| {
            s.instructions = 10;
            s.global_load_bytes = 512;
        });
        assert!(estimate(1e9, 1e6, &s, &BankFactors::default()).is_none());
    }

    #[test]
    fn global_loads_per_fma_bind_at_l2_and_shared_tiles_move_the_bound() {
        // One FFMA per global load per lane: far below the ridge, the L2 binds.
        let naive = pass(|s| {
            s.instructions = 4;
            s.ffma = 1;
            s.flop_fma = 64;
            s.ldg = 2;
            s.global_load_bytes = 256;
        });
        let e = estimate(1e12, 1e7, &naive, &BankFactors::default()).unwrap();
        assert_eq!(e.bound().name, L2);
        assert_eq!(e.warp_passes, 1e12 / 64.0);
        // The same FMA fed from shared memory, one global load per 32 of them.
        let tiled = pass(|s| {
            s.instructions = 4 * 32;
            s.ffma = 32;
            s.flop_fma = 64 * 32;
            s.lds = 64;
            s.shared_load_bytes = 64 * 128;
            s.shared_wavefronts.lds = 64;
            s.global_load_bytes = 256;
            s.shared_store_bytes = 256;
            s.shared_wavefronts.sts = 2;
        });
        let t = estimate(1e12, 1e7, &tiled, &BankFactors::default()).unwrap();
        assert_eq!(t.bound().name, SHARED);
        assert!(t.bound().ms < e.bound().ms);
        assert!(t.ceiling(L2).unwrap().ms < e.ceiling(L2).unwrap().ms / 10.0);
    }

    /// The simulator's counts of one kind: `requests` taking `ideal` wavefronts without
    /// conflicts and `wavefronts` with them.
    fn counted(requests: u64, wavefronts: u64, ideal: u64) -> kernel::Wavefronts {
        kernel::Wavefronts {
            requests,
            wavefronts,
            ideal,
        }
    }

    #[test]
    fn bank_conflicts_scale_the_wavefronts_of_their_own_kind_of_instruction() {
        // A loop of 8 LDS.128 (4 wavefronts each), 4 STS (1 each), 2 LDSM .4, one HGMMA's
        // operands (16 wavefronts) and 64 FFMA.
        let loop_ = pass(|s| {
            s.instructions = 80;
            s.flop_fma = 64 * 64;
            (s.lds, s.lds128, s.sts, s.ldsm) = (8, 8, 4, 2);
            s.shared_wavefronts = SharedWavefronts {
                lds: 32,
                sts: 4,
                ldsm: 8,
                ldgsts: 0,
                wgmma: 16,
            };
        });
        let sim = SharedBanks {
            // Quarter-warp float4 loads as in the loop, every one served twice.
            lds: counted(100, 800, 400),
            // The stores conflict-free.
            sts: counted(50, 50, 50),
            // ldmatrix of 1 matrix a request where the loop's take 4: other code.
            ldsm: counted(10, 30, 10),
            // cp.async the loop does not issue.
            ldgsts: counted(7, 70, 7),
        };
        let b = BankFactors::from_simulator(&sim, &loop_);
        assert_eq!(b.by_kind, [2.0, 1.0, 1.0, 1.0]);
        assert_eq!(
            b.notes.len(),
            4,
            "a line per kind of the loop: {:?}",
            b.notes
        );
        assert!(b.notes[0].starts_with("LDS: x2.00"), "{:?}", b.notes);
        assert_eq!(b.notes[1], "STS: conflict-free");
        assert!(b.notes[2].starts_with("LDSM: not scaled"), "{:?}", b.notes);
        assert!(
            b.notes[3].starts_with("HGMMA operands: not counted"),
            "{:?}",
            b.notes
        );
        // 32 LDS wavefronts twice, the rest once.
        assert_eq!(
            b.wavefronts(&loop_.shared_wavefronts),
            64.0 + 4.0 + 8.0 + 16.0
        );
        let with = estimate(1e9, 1.0, &loop_, &b).unwrap();
        let without = estimate(1e9, 1.0, &loop_, &BankFactors::default()).unwrap();
        let ratio = with.ceiling(SHARED).unwrap().ms / without.ceiling(SHARED).unwrap().ms;
        assert!((ratio - 92.0 / 60.0).abs() < 1e-12, "{ratio}");
        assert!(with.ceiling(SHARED).unwrap().work.contains("(LDS x2.00)"));
        // A kind of the loop the simulator did not count is taken conflict-free, and said so.
        let none = BankFactors::from_simulator(&SharedBanks::default(), &loop_);
        assert_eq!(none.by_kind, [1.0; 4]);
        assert!(
            none.notes[..3].iter().all(|n| n.contains("none counted")),
            "{:?}",
            none.notes
        );
    }

    #[test]
    fn launches_add_up_each_at_the_rate_of_the_sms_it_keeps_busy() {
        let body = pass(|s| {
            s.instructions = 100;
            s.global_load_bytes = 128;
            s.lds = 2;
            s.shared_wavefronts.lds = 2;
        });
        let launch = |blocks: u64| LaunchWork {
            entry: "k".into(),
            blocks,
            warps_per_block: 8,
            once: body,
            shortest: body.instructions,
            hot: None,
            buffer_bytes: 1e6,
            own: None,
        };
        let issue = |ls: &[LaunchWork], served: Option<f64>| {
            let e = estimate_launches(1.0, ls, &BankFactors::default(), served).unwrap();
            let (i, s) = (e.ceiling(ISSUE).unwrap(), e.ceiling(SHARED).unwrap());
            (i.ms, s.ms, s.work.clone())
        };
        let full = issue(&[launch(132 * 100)], None);
        // One block: its warps' work on one SM of the 132, a 13200th of the work in a
        // 100th of the time.
        let one = issue(&[launch(1)], None);
        assert!((one.0 / full.0 - 1.0 / 100.0).abs() < 1e-9, "{one:?}");
        // Two launches one after the other: their times add.
        let both = issue(&[launch(132 * 100), launch(1)], None);
        assert!((both.0 - full.0 - one.0).abs() < 1e-12);
        // A loop's passes add their work; the simulator's wavefronts replace the SASS's.
        let mut looped = launch(132 * 100);
        looped.hot = Some((body, 132.0 * 100.0 * 8.0));
        let l = issue(&[looped], Some(1.0));
        assert!((l.0 - 2.0 * full.0).abs() < 1e-12);
        assert!(
            (l.1 - full.1 / 2.0).abs() < 1e-12,
            "1 wavefront a warp, not 2"
        );
        assert!(
            l.2.contains("as the simulator's warps asked them"),
            "{}",
            l.2
        );
        assert!(estimate_launches(1.0, &[], &BankFactors::default(), None).is_none());
        // The launches' buffers cross DRAM, each launch's: two launches, twice the bytes.
        let dram = |ls: &[LaunchWork]| {
            estimate_launches(1e6, ls, &BankFactors::default(), None)
                .unwrap()
                .ceilings
                .iter()
                .filter(|c| c.name == DRAM || c.name == DRAM_LAUNCHES)
                .map(|c| c.ms)
                .collect::<Vec<f64>>()
        };
        let two = dram(&[launch(1), launch(1)]);
        assert!(
            two.len() == 2 && (two[1] - 2.0 * two[0]).abs() < 1e-12,
            "{two:?}"
        );
        assert_eq!(
            dram(&[launch(1)]).len(),
            1,
            "no more than the compulsory bytes"
        );
        // An intermediate the L2 holds is read from there; a larger one from DRAM.
        assert_eq!(dram_bytes(100, 10, &[40]), 70.0);
        assert_eq!(dram_bytes(100_000_000, 10, &[60_000_000]), 100e6 + 10.0);
    }

    #[test]
    fn tensor_flop_run_at_the_tensor_peak_of_their_type() {
        let fp16 = pass(|s| {
            s.instructions = 1;
            s.hmma = 1;
            s.flop_tensor = 4096;
        });
        let e = estimate(1e12, 1.0, &fp16, &BankFactors::default()).unwrap();
        let t = e.ceiling(TENSOR).unwrap();
        assert!((t.ms - 1e12 / h100::FP16_FLOPS * 1e3).abs() < 1e-9);
        assert!(e.ceiling(FP32).is_none());
        let tf32 = pass(|s| {
            s.instructions = 1;
            s.hmma = 1;
            s.flop_tensor = 4096;
            s.flop_tf32 = 4096;
        });
        let e = estimate(1e12, 1.0, &tf32, &BankFactors::default()).unwrap();
        assert!((e.ceiling(TENSOR).unwrap().ms - 1e12 / h100::TF32_FLOPS * 1e3).abs() < 1e-9);
    }

    #[test]
    fn fma_work_beside_tensor_work_is_extra() {
        let s = pass(|s| {
            s.instructions = 2;
            s.flop_tensor = 4096;
            s.flop_fma = 64;
        });
        let e = estimate(4096.0 * 1e6, 1.0, &s, &BankFactors::default()).unwrap();
        assert_eq!(e.warp_passes, 1e6, "passes scale by the tensor FLOP");
        let f = e.ceiling(FP32).unwrap();
        assert!((f.ms - 64e6 / h100::FP32_FLOPS * 1e3).abs() < 1e-12);
    }

    #[test]
    fn uneven_blocks_per_sm_cost_every_ceiling_but_dram() {
        let math = pass(|s| {
            s.instructions = 1;
            s.flop_tensor = 4096;
        });
        let e = estimate(1e12, 1.0, &math, &BankFactors::default()).unwrap();
        assert_eq!(e.bound().name, TENSOR);
        let sms = h100::SMS as u64;
        let ms = e.bound().ms;
        assert_eq!(e.spread_over_sms(4 * sms), ms, "as many blocks on every SM");
        // 2.5 blocks an SM on average, 3 on the busiest.
        assert!((e.spread_over_sms(5 * sms / 2) - ms * 3.0 / 2.5).abs() < 1e-12);
        // 64 blocks (a 1024^2 GEMM in 128x128 tiles): 64 of the 132 SMs work, one block each,
        // however many each could hold.
        assert!((e.spread_over_sms(64) - ms * h100::SMS / 64.0).abs() < 1e-12);
        // An SM draws its share of the L2, not the whole: idle SMs slow an L2-bound loop too.
        let l2 = pass(|s| {
            s.instructions = 1;
            s.flop_fma = 64;
            s.global_load_bytes = 4096;
        });
        let e = estimate(1e12, 1.0, &l2, &BankFactors::default()).unwrap();
        assert_eq!(e.bound().name, L2);
        assert!((e.spread_over_sms(64) - e.bound().ms * h100::SMS / 64.0).abs() < 1e-12);
        // DRAM serves whichever SMs ask.
        let dram = pass(|s| {
            s.instructions = 1;
            s.flop_fma = 64;
        });
        let e = estimate(1e6, 1e9, &dram, &BankFactors::default()).unwrap();
        assert_eq!(e.bound().name, DRAM);
        assert_eq!(e.spread_over_sms(64), e.bound().ms);
        // A per-SM ceiling just under DRAM's binds once half the SMs idle (a thread a row of
        // 8192 rows: 64 blocks).
        let mut close = e.clone();
        let dram_ms = close.bound().ms;
        close
            .ceilings
            .iter_mut()
            .find(|c| c.name == ISSUE)
            .unwrap()
            .ms = 0.8 * dram_ms;
        let (c, stretch) = close.bound_over_sms(64);
        assert_eq!(c.name, ISSUE);
        assert!((close.spread_over_sms(64) - 0.8 * dram_ms * stretch).abs() < 1e-12);
        assert!(close.spread_over_sms(64) > dram_ms);
        assert_eq!(close.spread_over_sms(4 * sms), dram_ms);
    }

    #[test]
    fn the_description_names_widths() {
        let s = pass(|s| {
            s.instructions = 3;
            s.ldg = 2;
            s.ldg128 = 1;
            s.lds = 1;
            s.lds64 = 1;
        });
        let d = describe(&s);
        assert!(d.contains("1 LDG.32 or narrower, 1 LDG.128"), "{d}");
        assert!(d.contains("1 LDS.64"), "{d}");
        assert!(!d.contains("STS"), "{d}");
    }

    /// The model's L2 rate is the fastest that a published GPU run read through the L2, not
    /// less (a measurement would beat the bound) and not more (nothing shows it): the wgmma
    /// GEMM rungs that load every tile's A and B by TMA without a cluster's multicast read
    /// K x (BM + BN) x 2 bytes a tile from the L2, BM and BN as their sources define them.
    #[test]
    fn l2_rate_is_the_fastest_a_published_gpu_run_read() {
        const UNICAST_TMA: [&str; 4] = [
            "gemm-wgmma-n256",
            "gemm-wgmma-persistent",
            "gemm-wgmma-l2-order",
            "gemm-wgmma-overlap",
        ];
        let define = |code: &str, name: &str| -> usize {
            let line = code
                .lines()
                .find_map(|l| l.strip_prefix(&format!("#define {name} ")))
                .unwrap_or_else(|| panic!("no #define {name}"));
            line.split_whitespace().next().unwrap().parse().unwrap()
        };
        let kernels = crate::registry::all();
        let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../results");
        let mut fastest: Option<(f64, String)> = None;
        for dir in std::fs::read_dir(&root).unwrap() {
            let file = dir.unwrap().path().join(crate::runs::RESULTS_FILE);
            let Ok(run) = crate::results::RunResults::read(&file) else {
                continue;
            };
            if run.device.kind != "cuda" {
                continue;
            }
            let gemm = run
                .workloads
                .iter()
                .filter(|w| w.workload == kernel::Workload::Gemm);
            for shape in gemm.flat_map(|w| &w.shapes) {
                let kernel::Shape::Gemm { m, n, k } = shape.shape else {
                    continue;
                };
                for row in shape
                    .rows
                    .iter()
                    .filter(|r| UNICAST_TMA.contains(&r.id.as_str()))
                {
                    let (Some(ms), true) = (row.median_ms(), row.passed()) else {
                        continue;
                    };
                    let kernel = kernels.iter().find(|k| k.info().id == row.id).unwrap();
                    let plan = kernel.cuda(&shape.shape).unwrap();
                    let code = &plan.sources()[0].code;
                    let (bm, bn) = (define(code, "BM"), define(code, "BN"));
                    let tiles = m.div_ceil(bm) * n.div_ceil(bn);
                    let rate = (tiles * k * (bm + bn) * 2) as f64 / (ms * 1e-3);
                    if fastest.as_ref().is_none_or(|(r, _)| rate > *r) {
                        let what = format!("{} at {} on {}", row.id, shape.label, run.device.name);
                        fastest = Some((rate, what));
                    }
                }
            }
        }
        let (rate, what) = fastest.expect("a published GPU run with the wgmma GEMM rungs");
        let ratio = h100::L2_BYTES_PER_S / rate;
        assert!(
            (0.97..1.03).contains(&ratio),
            "{what} read {:.2} TB/s from L2; h100::L2_BYTES_PER_S is {:.2} TB/s: set it to \
             the measured rate (and say which row in its comment)",
            rate / 1e12,
            h100::L2_BYTES_PER_S / 1e12
        );
    }
}
