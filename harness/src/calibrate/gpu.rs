//! GPU ceilings through the CUDA executor: each probe is a [`Kernel`] whose plan the device
//! compiles, launches and times with CUDA events exactly as it does the rows (L2 flushed and
//! output poisoned outside the timed span). Probes borrow GEMM shapes as plain buffer sizes.

use super::Measurement;
use crate::library_rows::CublasGemm;
use crate::timing::{self, TimingConfig};
use kernel::{
    Arg, Buf, CudaPlan, CudaSource, Executor, GemmCompute, Kernel, KernelInfo, Launch, Precision,
    Role, Shape, Stage, Workload,
};

const SOURCE: CudaSource = CudaSource::embedded(
    "harness/calibrate.cu",
    r#"
#include <cuda_fp16.h>
#include "lab/ptx.h"

// Device-to-device copy, 16 bytes per thread per step, grid-stride.
extern "C" __global__ void lab_copy(const float4* __restrict__ in, float4* __restrict__ out, int n4) {
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n4; i += gridDim.x * blockDim.x)
        out[i] = in[i];
}

// Read-only: each thread sums its float4s at a grid stride and writes its sum (so that the
// loads stay), 16 bytes per thread per step. A kernel that only reads (a reduction) moves
// bytes faster than a copy, whose writes share the DRAM's time with its reads.
extern "C" __global__ void lab_read(const float4* __restrict__ in, float* __restrict__ out, int n4) {
    float4 s = make_float4(0.0f, 0.0f, 0.0f, 0.0f);
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n4; i += gridDim.x * blockDim.x) {
        const float4 v = in[i];
        s.x += v.x; s.y += v.y; s.z += v.z; s.w += v.w;
    }
    out[blockIdx.x * blockDim.x + threadIdx.x] = (s.x + s.y) + (s.z + s.w);
}

// Eight independent FMA chains per thread: the FP32 issue rate, no memory traffic.
extern "C" __global__ void lab_fma(const float* __restrict__ seed, float* __restrict__ out, int iters) {
    int t = blockIdx.x * blockDim.x + threadIdx.x;
    float s = seed[0];
    float a0 = t, a1 = t + 1, a2 = t + 2, a3 = t + 3, a4 = t + 4, a5 = t + 5, a6 = t + 6, a7 = t + 7;
    const float m = 0.999999f;
    for (int i = 0; i < iters; ++i) {
        #pragma unroll
        for (int j = 0; j < 16; ++j) {
            a0 = fmaf(a0, m, s); a1 = fmaf(a1, m, s); a2 = fmaf(a2, m, s); a3 = fmaf(a3, m, s);
            a4 = fmaf(a4, m, s); a5 = fmaf(a5, m, s); a6 = fmaf(a6, m, s); a7 = fmaf(a7, m, s);
        }
    }
    out[t] = a0 + a1 + a2 + a3 + a4 + a5 + a6 + a7;
}

// mma.sync m16n8k16 (FP16 operands, FP32 accumulators) on operands held in registers, eight
// independent accumulators per warp: the rate of the instruction itself, which no kernel that
// also loads its operands can pass. Every element of A is x[0] and of B x[1], so each mma adds
// 16 * x[0] * x[1] to every accumulator.
#define MMA_CHAINS 8
extern "C" __global__ void lab_mma(const float* __restrict__ x, float* __restrict__ out, int iters) {
    __half2 ha = __floats2half2_rn(x[0], x[0]), hb = __floats2half2_rn(x[1], x[1]);
    unsigned a0 = *reinterpret_cast<unsigned*>(&ha), b0 = *reinterpret_cast<unsigned*>(&hb);
    const unsigned a[4] = {a0, a0, a0, a0}, b[2] = {b0, b0};
    float acc[MMA_CHAINS][4] = {};
    for (int i = 0; i < iters; ++i) {
        #pragma unroll
        for (int c = 0; c < MMA_CHAINS; ++c) ptx::mma_m16n8k16_f16(acc[c], a, b, acc[c]);
    }
    float s = 0.0f;
    #pragma unroll
    for (int c = 0; c < MMA_CHAINS; ++c) s += acc[c][0] + acc[c][1] + acc[c][2] + acc[c][3];
    out[blockIdx.x * blockDim.x + threadIdx.x] = s;
}
"#,
);

const FMA_PER_ITER: f64 = 16.0 * 8.0;

/// Bytes the read probe moves over `n` floats: each read once, one float written per thread.
fn read_bytes(n: usize, blocks: u32) -> f64 {
    4.0 * (n + blocks as usize * 256) as f64
}
/// `MMA_CHAINS` in the source: mma.sync instructions per warp per iteration.
const MMA_CHAINS: u64 = 8;
/// Warps per block of the mma probe (256 threads).
const MMA_WARPS_PER_BLOCK: u64 = 8;

/// FLOP the mma probe does: 2 x 16 x 8 x 16 per mma.sync m16n8k16, `MMA_CHAINS` per warp per
/// iteration.
fn mma_flop(blocks: u32, iters: i32) -> f64 {
    let mmas = u64::from(blocks) * MMA_WARPS_PER_BLOCK * MMA_CHAINS * iters.max(0) as u64;
    mmas as f64 * 2.0 * 16.0 * 8.0 * 16.0
}

enum Probe {
    /// Copies `n` floats: A (n x 1) to C (n x 1).
    Copy { blocks: u32 },
    /// Reads `n` floats of A, one sum per thread into C.
    Read { blocks: u32 },
    /// `threads` threads of FMA chains, one output each.
    Fma { blocks: u32, iters: i32 },
    /// Blocks of 8 warps of mma.sync chains, one output per thread; A holds the operands.
    Mma { blocks: u32, iters: i32 },
}

impl Kernel for Probe {
    fn info(&self) -> KernelInfo {
        KernelInfo {
            id: match self {
                Probe::Copy { .. } => "calibrate-copy".into(),
                Probe::Read { .. } => "calibrate-read".into(),
                Probe::Fma { .. } => "calibrate-fma".into(),
                Probe::Mma { .. } => "calibrate-mma".into(),
            },
            workload: Workload::Gemm,
            stage: Stage::Reference,
            precision: Precision::Fp32,
            role: Role::Reference,
            rung: 0,
            summary: "calibration probe".into(),
        }
    }

    fn cuda(&self, shape: &Shape) -> Option<CudaPlan> {
        let Shape::Gemm { m, .. } = *shape else {
            return None;
        };
        let launch = match *self {
            // The two streaming probes take the same arguments: A, C and the float4s of A.
            Probe::Copy { blocks } | Probe::Read { blocks } => Launch {
                source: SOURCE,
                entry: match self {
                    Probe::Copy { .. } => "lab_copy".into(),
                    _ => "lab_read".into(),
                },
                grid: [blocks, 1, 1],
                block: [256, 1, 1],
                dynamic_smem: 0,
                args: vec![
                    Arg::Ptr(Buf::Input(0)),
                    Arg::Ptr(Buf::Output),
                    Arg::I32((m / 4) as i32),
                ],
            },
            Probe::Fma { blocks, iters } => Launch {
                source: SOURCE,
                entry: "lab_fma".into(),
                grid: [blocks, 1, 1],
                block: [256, 1, 1],
                dynamic_smem: 0,
                args: vec![
                    Arg::Ptr(Buf::Input(1)),
                    Arg::Ptr(Buf::Output),
                    Arg::I32(iters),
                ],
            },
            Probe::Mma { blocks, iters } => Launch {
                source: SOURCE,
                entry: "lab_mma".into(),
                grid: [blocks, 1, 1],
                block: [32 * MMA_WARPS_PER_BLOCK as u32, 1, 1],
                dynamic_smem: 0,
                args: vec![
                    Arg::Ptr(Buf::Input(0)),
                    Arg::Ptr(Buf::Output),
                    Arg::I32(iters),
                ],
            },
        };
        Some(CudaPlan::single(2, launch))
    }
}

fn timing() -> TimingConfig {
    TimingConfig {
        warmup_ms: 100.0,
        samples: 10,
        min_sample_ms: 2.0,
        max_row_ms: 2000.0,
        pair_rounds: 0,
    }
}

/// Median seconds per run of `kernel` on `shape`.
fn seconds(
    dev: &dyn Executor,
    kernel: &dyn Kernel,
    shape: Shape,
    inputs: &[Vec<f32>],
) -> anyhow::Result<f64> {
    let mut p = dev.prepare(kernel, &shape, inputs)?;
    p.run()?;
    Ok(timing::measure(p.as_mut(), &timing())?.median_ms / 1e3)
}

pub(super) fn measure(dev: &dyn Executor, quick: bool) -> anyhow::Result<Measurement> {
    let sms = dev.info().units.max(1);
    let mut notes = Vec::new();

    // Bandwidth: 256 MiB copied, then read, far beyond L2; the faster of the two.
    let n = 1usize << 26;
    let blocks = sms * 16;
    let shape = Shape::Gemm { m: n, n: 1, k: 1 };
    let buffers = [vec![1.0; n], vec![0.0]];
    let t = seconds(dev, &Probe::Copy { blocks }, shape, &buffers)?;
    let copy_gbs = 2.0 * 4.0 * n as f64 / t / 1e9;
    let read_gbs = match seconds(dev, &Probe::Read { blocks }, shape, &buffers) {
        Ok(t) => Some(read_bytes(n, blocks) / t / 1e9),
        Err(e) => {
            notes.push(format!("read-only bandwidth: {e:#}"));
            None
        }
    };
    let bandwidth_gbs = read_gbs.map_or(copy_gbs, |r| r.max(copy_gbs));
    notes.push(format!(
        "bandwidth: the faster of a device-to-device copy kernel, {copy_gbs:.0} GB/s (read \
         plus written bytes), and a read-only kernel, {} (256 MiB each, median of CUDA-event \
         timings): {bandwidth_gbs:.0} GB/s",
        read_gbs.map_or("failed".to_string(), |r| format!("{r:.0} GB/s"))
    ));

    // FP32: 8 resident blocks of 256 threads per SM.
    let blocks = sms * 8;
    let threads = blocks as usize * 256;
    let iters = 2048;
    let fma = Probe::Fma { blocks, iters };
    let fma_shape = Shape::Gemm {
        m: threads,
        n: 1,
        k: 1,
    };
    let t = seconds(dev, &fma, fma_shape, &[vec![1.0; threads], vec![1e-7]])?;
    let fp32_gflops = 2.0 * FMA_PER_ITER * f64::from(iters) * threads as f64 / t / 1e9;
    notes.push(format!(
        "FP32: FMA kernel, 8 independent chains per thread, {blocks} blocks of 256: \
         {fp32_gflops:.0} GFLOP/s"
    ));

    // mma.sync: 4 blocks of 8 warps per SM (8 warps per scheduler), operands in registers.
    let blocks = sms * 4;
    let threads = blocks as usize * 32 * MMA_WARPS_PER_BLOCK as usize;
    let iters = if quick { 1024 } else { 8192 };
    let mma = Probe::Mma { blocks, iters };
    let mma_shape = Shape::Gemm {
        m: threads,
        n: 1,
        k: 1,
    };
    let mut operands = vec![1.0 / 64.0; threads];
    operands[1] = 1.0 / 128.0;
    let mma_sync_gflops = match seconds(dev, &mma, mma_shape, &[operands, vec![0.0]]) {
        Ok(t) => {
            let g = mma_flop(blocks, iters) / t / 1e9;
            notes.push(format!(
                "mma.sync FP16: m16n8k16 with FP32 accumulators on operands in registers, 8 \
                 independent accumulators per warp, {blocks} blocks of 8 warps: {g:.0} GFLOP/s \
                 (what the mma.sync rungs can reach at most)"
            ));
            Some(g)
        }
        Err(e) => {
            notes.push(format!("mma.sync FP16: {e:#}"));
            None
        }
    };

    // Tensor rates: cuBLAS on random data (zeros run faster) at the largest size that fits.
    let mut tensor = |compute: GemmCompute, name: &str| -> Option<f64> {
        let k = CublasGemm {
            id: "calibrate-cublas",
            compute,
            summary: "calibration probe",
        };
        let sizes: &[usize] = if quick { &[4096] } else { &[8192, 4096] };
        for &size in sizes {
            let shape = Shape::square_gemm(size);
            let inputs = crate::inputs::random_inputs(&shape, 1);
            match seconds(dev, &k, shape, &inputs) {
                Ok(t) => {
                    let g = shape.flops() / t / 1e9;
                    notes.push(format!(
                        "{name}: cuBLAS GemmEx {size}^3 on random data: {g:.0} GFLOP/s"
                    ));
                    return Some(g);
                }
                Err(e) => notes.push(format!("{name} at {size}: {e:#}")),
            }
        }
        None
    };
    let tf32_gflops = tensor(GemmCompute::Tf32, "TF32");
    let fp16 = tensor(GemmCompute::Fp16, "FP16");
    let bf16 = tensor(GemmCompute::Bf16, "BF16");
    let fp16_gflops = sixteen_bit_ceiling(fp16, bf16, &mut notes);
    Ok(Measurement {
        bandwidth_gbs,
        fp32_gflops,
        tf32_gflops,
        fp16_gflops,
        mma_sync_gflops,
        notes,
    })
}

/// The one ceiling FP16 and BF16 rows share (the tensor cores run both at one rate): the
/// faster of the two cuBLAS measurements. cuBLAS does not pick equally fast kernels for the
/// two types (in the H200 run, BF16 GemmEx was the faster at 4096 and at 8192), and a
/// ceiling taken from the slower one puts the faster above 100% of its roof.
fn sixteen_bit_ceiling(
    fp16: Option<f64>,
    bf16: Option<f64>,
    notes: &mut Vec<String>,
) -> Option<f64> {
    match (fp16, bf16) {
        (Some(h), Some(b)) => {
            let (name, g) = if b > h { ("BF16", b) } else { ("FP16", h) };
            notes.push(format!(
                "FP16/BF16 tensor ceiling: the faster of the two, {name}: {g:.0} GFLOP/s"
            ));
            Some(g)
        }
        (one, other) => one.or(other),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_sixteen_bit_ceiling_is_the_faster_of_fp16_and_bf16() {
        let mut notes = Vec::new();
        assert_eq!(
            sixteen_bit_ceiling(Some(674_658.0), Some(768_100.0), &mut notes),
            Some(768_100.0)
        );
        assert_eq!(
            notes,
            ["FP16/BF16 tensor ceiling: the faster of the two, BF16: 768100 GFLOP/s"]
        );
        notes.clear();
        assert_eq!(
            sixteen_bit_ceiling(Some(700.0), Some(600.0), &mut notes),
            Some(700.0)
        );
        assert!(notes[0].contains("FP16: 700"), "{notes:?}");
        // One failed measurement leaves the other; none leaves no ceiling (the data sheet's).
        assert_eq!(
            sixteen_bit_ceiling(None, Some(600.0), &mut notes),
            Some(600.0)
        );
        assert_eq!(
            sixteen_bit_ceiling(Some(700.0), None, &mut notes),
            Some(700.0)
        );
        assert_eq!(sixteen_bit_ceiling(None, None, &mut notes), None);
    }

    /// The mma probe does the FLOP its rate is computed from: run in the simulator, every
    /// thread's sum is CHAINS x 4 accumulators x iters x 16 x a x b, so each warp ran
    /// `MMA_CHAINS` mma.sync m16n8k16 per iteration and each did its 16-deep products.
    #[test]
    fn the_mma_probe_does_the_flop_it_is_credited_with() {
        let sim = kernel::sim::SimDevice::new().unwrap();
        let (blocks, iters) = (2, 3);
        let threads = blocks as usize * 32 * MMA_WARPS_PER_BLOCK as usize;
        let shape = Shape::Gemm {
            m: threads,
            n: 1,
            k: 1,
        };
        let (a, b) = (0.5f32, 0.25f32);
        let mut operands = vec![a; threads];
        operands[1] = b;
        let inputs = [operands, vec![0.0]];
        let probe = Probe::Mma { blocks, iters };
        let mut run = sim.prepare(&probe, &shape, &inputs).unwrap();
        run.run().unwrap();
        let out = run.output().unwrap();
        let each = MMA_CHAINS as f32 * 4.0 * iters as f32 * 16.0 * a * b;
        assert!(out.iter().all(|&v| v == each), "{:?} != {each}", &out[..8]);
        // 2 x 16 x 8 x 16 FLOP per mma.sync, per warp.
        let warps = f64::from(blocks) * MMA_WARPS_PER_BLOCK as f64;
        assert_eq!(
            mma_flop(blocks, iters),
            warps * MMA_CHAINS as f64 * f64::from(iters) * 4096.0
        );
    }

    /// The read probe reads every element once and writes one sum per thread: run in the
    /// simulator on more float4s than its threads, so that some take one more trip.
    #[test]
    fn the_read_probe_reads_each_float_once() {
        let sim = kernel::sim::SimDevice::new().unwrap();
        let blocks = 2;
        let n = 4 * (blocks as usize * 256 * 3 + 17);
        let shape = Shape::Gemm { m: n, n: 1, k: 1 };
        let x: Vec<f32> = (0..n).map(|i| (i % 7) as f32).collect();
        let (probe, inputs) = (Probe::Read { blocks }, [x.clone(), vec![0.0]]);
        let mut run = sim.prepare(&probe, &shape, &inputs).unwrap();
        run.run().unwrap();
        let out = run.output().unwrap();
        let threads = blocks as usize * 256;
        let total: f32 = out[..threads].iter().sum();
        assert_eq!(total, x.iter().sum::<f32>());
        assert!(
            out[threads..].iter().all(|v| v.is_nan()),
            "only a sum per thread"
        );
        assert_eq!(read_bytes(n, blocks), 4.0 * (n + threads) as f64);
    }

    /// The mma probe's loop is mma.sync and little else: no operand loads, no spills, so it
    /// times the instruction, not memory. Needs NVRTC and nvdisasm (CI installs both).
    #[test]
    fn the_mma_probes_loop_is_mma_sync_from_registers() {
        let Ok(tool) = crate::sass::Disassembler::find() else {
            return;
        };
        if kernel::cuda::nvrtc::version().is_err() {
            return;
        }
        let shape = Shape::Gemm {
            m: 1 << 16,
            n: 1,
            k: 1,
        };
        let plan = Probe::Mma {
            blocks: 132,
            iters: 4,
        }
        .cuda(&shape)
        .unwrap();
        for arch in ["sm_80", "sm_90"] {
            let listing = crate::sass::of_plan(&tool, &plan, arch).unwrap();
            let pass = listing[0].function.inner_loop().unwrap();
            assert!(pass.hmma >= MMA_CHAINS as u32, "{arch}: {pass:?}");
            let memory = pass.ldg + pass.lds + pass.ldsm + pass.ldl + pass.stl + pass.ld_generic;
            assert_eq!(memory, 0, "{arch}: {pass:?}");
            // Loop control aside (ptxas unrolls the loop), every instruction is an HMMA.
            assert!(pass.instructions <= pass.hmma + 8, "{arch}: {pass:?}");
        }
    }

    /// The probes compile for the GPUs we measure on, wherever NVRTC is installed (CI);
    /// without it the test has nothing to check.
    #[test]
    fn probes_compile_where_nvrtc_exists() {
        if kernel::cuda::nvrtc::version().is_err() {
            return;
        }
        let shape = Shape::Gemm {
            m: 1 << 20,
            n: 1,
            k: 1,
        };
        for probe in [
            Probe::Copy { blocks: 132 },
            Probe::Read { blocks: 132 },
            Probe::Fma {
                blocks: 132,
                iters: 4,
            },
            Probe::Mma {
                blocks: 132,
                iters: 4,
            },
        ] {
            let plan = probe.cuda(&shape).unwrap();
            for arch in ["sm_80", "sm_90"] {
                let r = crate::resources::of_plan(&plan, arch, None).unwrap();
                assert_eq!(r[0].spill_stores, 0, "{arch}");
            }
        }
    }
}
