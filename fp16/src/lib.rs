//! Half precision: WMMA with FP16 inputs and FP32 accumulation (rung 11), the same kernel fed
//! by an on-GPU FP32 -> FP16 conversion inside the timed plan (rung 12), and that conversion
//! vectorized with `half2` (rung 13). The walkthrough is in this crate's README. Rung 06 of the
//! convolution ladder is in [`conv`].

pub mod conv;

use half::f16;
use half::slice::HalfFloatSliceExt;
use kernel::{
    Arg, Bound, Buf, CpuPort, CudaPlan, Dtype, Kernel, KernelInfo, Launch, Lineage, Precision,
    Role, Scratch, Shape, Stage, Step, Workload, cuda_source, div_ceil, gemm_args, gemm_dims,
};
use rayon::prelude::*;
use restrict_unroll::cpu::{BLayout, Operand, gemm_blocked};

/// Every kernel of this crate, in ladder order.
pub fn kernels() -> Vec<Box<dyn Kernel>> {
    let mut all: Vec<Box<dyn Kernel>> = vec![
        Box::new(GemmWmmaFp16),
        Box::new(GemmWmmaFp16Convert),
        Box::new(GemmWmmaFp16Half2),
    ];
    all.extend(conv::kernels());
    all
}

/// Block tile edge of `11_wmma_fp16.cu` and its threads (4 warps).
const TILE: usize = 64;
const THREADS: u32 = 128;
/// Threads per block of the conversion kernels.
const CONVERT_BLOCK: usize = 256;

/// The CPU ports keep operands in FP16 storage and widen them to f32 while packing, as WMMA
/// widens into FP32 accumulation.
#[derive(Clone, Copy)]
struct Half(f16);

impl Operand for Half {
    #[inline(always)]
    fn widen(self) -> f32 {
        self.0.to_f32()
    }
}

fn info(id: &'static str, rung: u32, summary: &'static str) -> KernelInfo {
    KernelInfo {
        id: id.into(),
        workload: Workload::Gemm,
        stage: Stage::Fp16,
        precision: Precision::Fp16,
        role: Role::Rung,
        rung,
        summary: summary.into(),
    }
}

/// Rung 11's launch reading FP16 operands from `a` and `b`.
fn wmma_launch(m: usize, n: usize, k: usize, a: Buf, b: Buf) -> Launch {
    let mut args = gemm_args(m, n, k);
    args[0] = Arg::Ptr(a);
    args[1] = Arg::Ptr(b);
    Launch {
        source: cuda_source!("fp16", "11_wmma_fp16.cu"),
        entry: "gemm_wmma_fp16".into(),
        grid: [div_ceil(n, TILE), div_ceil(m, TILE), 1],
        block: [THREADS, 1, 1],
        dynamic_smem: 0,
        args,
    }
}

/// A plan converting both FP32 inputs into FP16 scratch buffers with `convert`, then rung 11.
fn convert_plan(shape: &Shape, half2: bool) -> CudaPlan {
    let (m, n, k) = gemm_dims(shape);
    let convert = |src: usize, len: usize| {
        // half2 threads take two elements each (the odd last one is handled in the kernel).
        let (source, entry, work) = if half2 {
            (
                cuda_source!("fp16", "13_half2_convert.cu"),
                "f32_to_f16_half2",
                (len / 2).max(1),
            )
        } else {
            (
                cuda_source!("fp16", "12_wmma_fp16_convert.cu"),
                "f32_to_f16",
                len,
            )
        };
        Step::Kernel(Launch {
            source,
            entry: entry.into(),
            grid: [div_ceil(work, CONVERT_BLOCK), 1, 1],
            block: [CONVERT_BLOCK as u32, 1, 1],
            dynamic_smem: 0,
            args: vec![
                Arg::Ptr(Buf::Input(src)),
                Arg::Ptr(Buf::Scratch(src)),
                Arg::I32(len as i32),
            ],
        })
    };
    CudaPlan {
        inputs: vec![Dtype::F32, Dtype::F32],
        output: Dtype::F32,
        scratch: vec![
            Scratch::new("A (fp16)", Dtype::F16, m * k),
            Scratch::new("B (fp16)", Dtype::F16, k * n),
        ],
        steps: vec![
            convert(0, m * k),
            convert(1, k * n),
            Step::Kernel(wmma_launch(m, n, k, Buf::Scratch(0), Buf::Scratch(1))),
        ],
        ..Default::default()
    }
}

/// `11_wmma_fp16.cu`: FP16 inputs (converted by the executor before timing), FP32 out.
pub struct GemmWmmaFp16;

impl Kernel for GemmWmmaFp16 {
    fn lineage(&self) -> Option<Lineage> {
        Some(Lineage {
            parent: Some("gemm-wmma-tf32"),
            idea: "FP16 operands already in device memory: half the bytes per load, twice TF32's tensor-core rate",
            bound: Some(Bound::Compute),
        })
    }

    fn info(&self) -> KernelInfo {
        info(
            "gemm-wmma-fp16",
            11,
            "WMMA m16n16k16, FP16 inputs already in device memory, FP32 accumulate and out",
        )
    }

    fn cuda(&self, shape: &Shape) -> Option<CudaPlan> {
        let (m, n, k) = gemm_dims(shape);
        Some(CudaPlan {
            inputs: vec![Dtype::F16, Dtype::F16],
            output: Dtype::F32,
            scratch: Vec::new(),
            steps: vec![Step::Kernel(wmma_launch(
                m,
                n,
                k,
                Buf::Input(0),
                Buf::Input(1),
            ))],
            ..Default::default()
        })
    }

    fn cpu(&self) -> Option<CpuPort> {
        Some(cpu_fp16_scalar)
    }
}

/// `12_wmma_fp16_convert.cu` + rung 11: FP32 inputs converted on the GPU inside the timing.
pub struct GemmWmmaFp16Convert;

impl Kernel for GemmWmmaFp16Convert {
    fn lineage(&self) -> Option<Lineage> {
        Some(Lineage {
            parent: Some("gemm-wmma-fp16"),
            idea: "the FP32 to FP16 conversion of the inputs inside the timed plan: what FP16 costs when the data is FP32",
            bound: None,
        })
    }

    fn info(&self) -> KernelInfo {
        info(
            "gemm-wmma-fp16-convert",
            12,
            "rung 11 fed FP32 inputs: an FP32->FP16 conversion kernel runs inside the timed plan",
        )
    }

    fn cuda(&self, shape: &Shape) -> Option<CudaPlan> {
        Some(convert_plan(shape, false))
    }

    fn cpu(&self) -> Option<CpuPort> {
        Some(cpu_fp16_scalar)
    }
}

/// `13_half2_convert.cu` + rung 11: the conversion with float2 loads and half2 stores.
pub struct GemmWmmaFp16Half2;

impl Kernel for GemmWmmaFp16Half2 {
    fn lineage(&self) -> Option<Lineage> {
        Some(Lineage {
            parent: Some("gemm-wmma-fp16-convert"),
            idea: "the conversion vectorized: a float2 in and a half2 out per thread and step",
            bound: Some(Bound::Issue),
        })
    }

    fn info(&self) -> KernelInfo {
        info(
            "gemm-wmma-fp16-half2",
            13,
            "rung 12 with the conversion vectorized: float2 in, __floats2half2_rn, half2 out",
        )
    }

    fn cuda(&self, shape: &Shape) -> Option<CudaPlan> {
        Some(convert_plan(shape, true))
    }

    fn cpu(&self) -> Option<CpuPort> {
        Some(cpu_fp16_vector)
    }
}

/// The FP16 GEMM on operands already in FP16 storage: widened while packing, FP32 FMAs.
fn gemm_f16(shape: &Shape, a: &[Half], b: &[Half], out: &mut [f32]) {
    let (m, n, k) = gemm_dims(shape);
    gemm_blocked(m, n, k, a, b, BLayout::KxN, out, &|_, v| v);
}

/// CPU port of rungs 11 and 12: an element-by-element FP32 -> FP16 conversion (`f16::from_f32`,
/// round to nearest even, as `__float2half_rn`), then the GEMM on FP16 storage. A CPU run
/// receives FP32 inputs for every row, so unlike the GPU plan of rung 11 its port must convert
/// inside the timing too: on a CPU rows 11 and 12 do the same work.
fn cpu_fp16_scalar(shape: &Shape, inputs: &[&[f32]], out: &mut [f32]) {
    let conv = |x: &[f32]| -> Vec<Half> { x.par_iter().map(|&v| Half(f16::from_f32(v))).collect() };
    let (a, b) = (conv(inputs[0]), conv(inputs[1]));
    gemm_f16(shape, &a, &b, out);
}

/// CPU port of rung 13: the conversion vectorized, as half2 does on the GPU: `half`'s slice
/// conversion converts several floats per instruction (F16C on x86-64 when present).
fn cpu_fp16_vector(shape: &Shape, inputs: &[&[f32]], out: &mut [f32]) {
    let conv = |x: &[f32]| -> Vec<Half> {
        let mut h = vec![f16::ZERO; x.len()];
        h.par_chunks_mut(1 << 14)
            .zip(x.par_chunks(1 << 14))
            .for_each(|(d, s)| d.convert_from_f32_slice(s));
        h.into_iter().map(Half).collect()
    };
    let (a, b) = (conv(inputs[0]), conv(inputs[1]));
    gemm_f16(shape, &a, &b, out);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ports_are_within_the_fp16_bound_and_agree() {
        let (m, n, k) = (33, 17, 65);
        let a: Vec<f32> = (0..m * k)
            .map(|i| ((i * 37) % 101) as f32 / 50.0 - 1.0)
            .collect();
        let b: Vec<f32> = (0..k * n)
            .map(|i| ((i * 53) % 97) as f32 / 48.0 - 1.0)
            .collect();
        let shape = Shape::gemm(m, n, k);
        let mut o1 = vec![f32::NAN; m * n];
        let mut o2 = vec![f32::NAN; m * n];
        cpu_fp16_scalar(&shape, &[&a, &b], &mut o1);
        cpu_fp16_vector(&shape, &[&a, &b], &mut o2);
        assert_eq!(o1, o2, "both conversions round to nearest even");
        let (mut num, mut den) = (0.0f64, 0.0f64);
        for i in 0..m {
            for j in 0..n {
                let e: f64 = (0..k)
                    .map(|kk| a[i * k + kk] as f64 * b[kk * n + j] as f64)
                    .sum();
                num += (o1[i * n + j] as f64 - e).powi(2);
                den += e * e;
            }
        }
        let err = (num / den).sqrt();
        assert!(
            err < Precision::Fp16.tolerance() && err > 0.0,
            "error {err}"
        );
    }

    #[test]
    fn conversion_plans_cover_both_inputs_and_odd_lengths() {
        let plan = GemmWmmaFp16Half2
            .cuda(&Shape::gemm(3, 5, 7))
            .map(|p| p.steps.len());
        assert_eq!(plan, Some(3));
    }
}
