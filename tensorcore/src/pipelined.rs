//! The 16-bit tensor-core rungs past WMMA's basics: 128x128 block tiles, 64x64 warp tiles
//! (4 warps) and a multi-stage `cp.async` ring in dynamic shared memory. Rung 14 multiplies
//! with WMMA; 15 with `mma.sync` fed by `ldmatrix` from an XOR-swizzled ring; 16 adds register
//! double buffering of the fragments and a K step of 64; 17 is 16 on BF16 operands. A and B
//! reach the kernels in 16-bit storage (the executor converts them before timing, as for rung
//! 11); C is FP32.

use half::{bf16, f16};
use kernel::{
    Bound, CpuPort, CudaPlan, CudaSource, Dtype, Kernel, KernelInfo, Launch, Lineage, Precision,
    Role, Shape, Stage, Step, Workload, cuda_source, cuda_source_after, div_ceil, gemm_args,
    gemm_dims,
};
use rayon::prelude::*;
use restrict_unroll::cpu::{BLayout, Operand, gemm_blocked};

/// The rungs of this module, in ladder order.
pub(crate) fn kernels() -> Vec<Box<dyn Kernel>> {
    vec![
        Box::new(GemmWmmaCpAsync),
        Box::new(GemmMmaLdmatrix),
        Box::new(GemmMmaDoubleBuffer),
        Box::new(GemmMmaBf16),
    ]
}

/// Block tile edge (BM = BN) and threads (4 warps of 64x64) of every rung here.
const TILE: usize = 128;
const THREADS: u32 = 128;

/// Bytes of one 16-bit element.
const HALF: usize = 2;

/// Rung 14's dynamic shared memory: `STAGES` x (A: BM x (BK + 8), B: BK x (BN + 8)) halves,
/// the constants of `14_wmma_cp_async.cu`. Its epilogue's FP32 tile, BM x (BN + 4) floats,
/// reuses the ring and is smaller.
const WMMA_STAGES: usize = 4;
const WMMA_BK: usize = 32;
const WMMA_SMEM: usize = WMMA_STAGES * (TILE * (WMMA_BK + 8) + WMMA_BK * (TILE + 8)) * HALF;

/// Rung 15's ring: 4 stages of unpadded (swizzled) 128x32 A and 32x128 B tiles.
const LDMATRIX_STAGES: usize = 4;
const LDMATRIX_BK: usize = 32;
const LDMATRIX_SMEM: usize = LDMATRIX_STAGES * 2 * TILE * LDMATRIX_BK * HALF;

/// Rungs 16 and 17's ring: 3 stages of 128x64 A and 64x128 B tiles.
const DBUF_STAGES: usize = 3;
const DBUF_BK: usize = 64;
const DBUF_SMEM: usize = DBUF_STAGES * 2 * TILE * DBUF_BK * HALF;

/// One launch of `entry` over 128x128 tiles of C, 16-bit A and B of type `input`.
fn plan(source: CudaSource, entry: &str, smem: usize, input: Dtype, shape: &Shape) -> CudaPlan {
    let (m, n, k) = gemm_dims(shape);
    CudaPlan {
        inputs: vec![input, input],
        output: Dtype::F32,
        steps: vec![Step::Kernel(Launch {
            source,
            entry: entry.to_string().into(),
            grid: [div_ceil(n, TILE), div_ceil(m, TILE), 1],
            block: [THREADS, 1, 1],
            dynamic_smem: smem as u32,
            args: gemm_args(m, n, k),
        })],
        ..Default::default()
    }
}

fn info(id: &'static str, rung: u32, precision: Precision, summary: &'static str) -> KernelInfo {
    KernelInfo {
        id: id.into(),
        workload: Workload::Gemm,
        stage: Stage::Tensorcore,
        precision,
        role: Role::Rung,
        rung,
        summary: summary.into(),
    }
}

/// `14_wmma_cp_async.cu`: WMMA m16n16k16 FP16, 16-byte `cp.async` copies into a 4-stage ring.
pub struct GemmWmmaCpAsync;

impl Kernel for GemmWmmaCpAsync {
    fn lineage(&self) -> Option<Lineage> {
        Some(Lineage {
            parent: Some("gemm-wmma-fp16"),
            idea: "three ideas: 128x128 block tiles of 64x64 warp tiles, 16-byte cp.async copies, and a 4-stage ring keeping three tiles in flight",
            bound: Some(Bound::Latency),
        })
    }

    fn info(&self) -> KernelInfo {
        info(
            "gemm-wmma-cp-async",
            14,
            Precision::Fp16,
            "WMMA FP16, 128x128 blocks of 64x64 warp tiles, 16-byte cp.async into a 4-stage ring",
        )
    }

    fn cuda(&self, shape: &Shape) -> Option<CudaPlan> {
        Some(plan(
            cuda_source!("tensorcore", "14_wmma_cp_async.cu"),
            "gemm_wmma_cp_async",
            WMMA_SMEM,
            Dtype::F16,
            shape,
        ))
    }

    fn cpu(&self) -> Option<CpuPort> {
        Some(cpu_fp16)
    }
}

/// `15_mma_ldmatrix_swizzle.cu`: `mma.sync` m16n8k16 + `ldmatrix` from an XOR-swizzled ring.
pub struct GemmMmaLdmatrix;

impl Kernel for GemmMmaLdmatrix {
    fn lineage(&self) -> Option<Lineage> {
        Some(Lineage {
            parent: Some("gemm-wmma-cp-async"),
            idea: "mma.sync and ldmatrix in place of WMMA, an XOR swizzle in place of padded rows, C stored from the accumulator registers",
            bound: Some(Bound::SharedTraffic),
        })
    }

    fn info(&self) -> KernelInfo {
        info(
            "gemm-mma-ldmatrix",
            15,
            Precision::Fp16,
            "mma.sync m16n8k16 FP16 fed by ldmatrix from an XOR-swizzled ring, its ldmatrix reads conflict-free",
        )
    }

    fn cuda(&self, shape: &Shape) -> Option<CudaPlan> {
        Some(plan(
            cuda_source!("tensorcore", "15_mma_ldmatrix_swizzle.cu"),
            "gemm_mma_ldmatrix",
            LDMATRIX_SMEM,
            Dtype::F16,
            shape,
        ))
    }

    fn cpu(&self) -> Option<CpuPort> {
        Some(cpu_fp16)
    }
}

/// `16_mma_double_buffer.cu`: rung 15 with fragments double-buffered in registers, BK = 64.
pub struct GemmMmaDoubleBuffer;

impl Kernel for GemmMmaDoubleBuffer {
    fn lineage(&self) -> Option<Lineage> {
        Some(Lineage {
            parent: Some("gemm-mma-ldmatrix"),
            idea: "two ideas: fragments double-buffered in registers (the next k16 step's ldmatrix before this step's mma.sync), and a K step of 64",
            bound: Some(Bound::Latency),
        })
    }

    fn info(&self) -> KernelInfo {
        info(
            "gemm-mma-dbuf",
            16,
            Precision::Fp16,
            "rung 15 with fragments double-buffered in registers and a K step of 64 (3 stages)",
        )
    }

    fn cuda(&self, shape: &Shape) -> Option<CudaPlan> {
        Some(plan(
            cuda_source!("tensorcore", "16_mma_double_buffer.cu"),
            "gemm_mma_double_buffer",
            DBUF_SMEM,
            Dtype::F16,
            shape,
        ))
    }

    fn cpu(&self) -> Option<CpuPort> {
        Some(cpu_fp16)
    }
}

/// `17_mma_bf16.cu`: rung 16 on BF16 operands. The file holds only the BF16 entry and is
/// compiled after rung 16's source, whose template body it instantiates: the rung differs
/// from 16 by its element type alone, so it shares 16's code instead of copying it.
pub struct GemmMmaBf16;

impl Kernel for GemmMmaBf16 {
    fn lineage(&self) -> Option<Lineage> {
        Some(Lineage {
            parent: Some("gemm-mma-dbuf"),
            idea: "BF16 operands: FP32's exponent range at FP16's tensor-core rate",
            bound: None,
        })
    }

    fn info(&self) -> KernelInfo {
        info(
            "gemm-mma-bf16",
            17,
            Precision::Bf16,
            "rung 16 on BF16 operands: mma.sync m16n8k16 BF16, FP32 accumulate",
        )
    }

    fn cuda(&self, shape: &Shape) -> Option<CudaPlan> {
        let source = cuda_source_after!("tensorcore", "16_mma_double_buffer.cu", "17_mma_bf16.cu");
        Some(plan(source, "gemm_mma_bf16", DBUF_SMEM, Dtype::Bf16, shape))
    }

    fn cpu(&self) -> Option<CpuPort> {
        Some(cpu_bf16)
    }
}

/// FP16 storage, widened to f32 while the blocked GEMM packs it.
#[derive(Clone, Copy)]
pub(crate) struct F16(pub(crate) f16);

impl Operand for F16 {
    #[inline(always)]
    fn widen(self) -> f32 {
        self.0.to_f32()
    }
}

/// CPU port of the FP16 rungs: the tensor cores' numerics, not their schedule (a CPU has no
/// shared-memory ring to fill). A and B are rounded to FP16 (to nearest even, as the executor
/// converts them for the GPU), then multiplied with FP32 accumulation by rung 07's packed,
/// blocked GEMM.
pub(crate) fn cpu_fp16(shape: &Shape, inputs: &[&[f32]], out: &mut [f32]) {
    let (m, n, k) = gemm_dims(shape);
    let conv = |x: &[f32]| -> Vec<F16> { x.par_iter().map(|&v| F16(f16::from_f32(v))).collect() };
    let (a, b) = (conv(inputs[0]), conv(inputs[1]));
    gemm_blocked(m, n, k, &a, &b, BLayout::KxN, out, &|_, v| v);
}

/// BF16 storage, widened to f32 while packing (exact: a BF16 is the top half of an f32).
#[derive(Clone, Copy)]
struct Bf16(bf16);

impl Operand for Bf16 {
    #[inline(always)]
    fn widen(self) -> f32 {
        self.0.to_f32()
    }
}

/// CPU port of rungs 17 and 18: A and B rounded to BF16 (to nearest even, as the executor converts
/// them), FP32 accumulation.
pub(crate) fn cpu_bf16(shape: &Shape, inputs: &[&[f32]], out: &mut [f32]) {
    let (m, n, k) = gemm_dims(shape);
    let conv =
        |x: &[f32]| -> Vec<Bf16> { x.par_iter().map(|&v| Bf16(bf16::from_f32(v))).collect() };
    let (a, b) = (conv(inputs[0]), conv(inputs[1]));
    gemm_blocked(m, n, k, &a, &b, BLayout::KxN, out, &|_, v| v);
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The value of `#define NAME value` in a kernel source.
    fn define(source: &str, name: &str) -> usize {
        source
            .lines()
            .find_map(|l| {
                let mut w = l.split_whitespace();
                (w.next() == Some("#define") && w.next() == Some(name))
                    .then(|| w.next().and_then(|v| v.parse().ok()))
                    .flatten()
            })
            .unwrap_or_else(|| panic!("no numeric #define {name}"))
    }

    /// Rung 17 compiles as rung 16's text followed by its own: an error in either names its
    /// own file and line.
    #[test]
    fn compile_errors_of_rung_17_point_at_the_right_file_and_line() {
        if let Err(e) = kernel::cuda::nvrtc::version() {
            panic!("{e}\nThis test needs NVRTC: run tools/install-cuda-tools.sh first.");
        }
        let plan = GemmMmaBf16.cuda(&Shape::gemm(128, 128, 128)).unwrap();
        let source = plan.launches().next().unwrap().source.clone();
        let own = include_str!("../kernels/17_mma_bf16.cu");
        let line = 1 + own
            .lines()
            .position(|l| l.contains("gemm_mma_body<true>("))
            .unwrap();
        let code = source.code.replace(
            "gemm_mma_body<true>(",
            "gemm_mma_body<true>(undeclared_here, ",
        );
        let broken = CudaSource {
            code: code.into(),
            ..source
        };
        let e = kernel::cuda::nvrtc::compile(&broken, "sm_80")
            .unwrap_err()
            .to_string();
        assert!(
            e.contains(&format!("tensorcore/kernels/17_mma_bf16.cu({line}): error")),
            "{e}"
        );
    }

    #[test]
    fn launch_constants_match_the_kernel_sources() {
        let wmma = include_str!("../kernels/14_wmma_cp_async.cu");
        let ldmatrix = include_str!("../kernels/15_mma_ldmatrix_swizzle.cu");
        let dbuf = include_str!("../kernels/16_mma_double_buffer.cu");
        for src in [wmma, ldmatrix, dbuf] {
            assert_eq!(define(src, "BM"), TILE);
            assert_eq!(define(src, "BN"), TILE);
            assert_eq!(define(src, "NTHREADS"), THREADS as usize);
        }
        assert_eq!(define(wmma, "BK"), WMMA_BK);
        assert_eq!(define(wmma, "STAGES"), WMMA_STAGES);
        assert_eq!(define(ldmatrix, "BK"), LDMATRIX_BK);
        assert_eq!(define(ldmatrix, "STAGES"), LDMATRIX_STAGES);
        assert_eq!(define(dbuf, "BK"), DBUF_BK);
        assert_eq!(define(dbuf, "STAGES"), DBUF_STAGES);
        let epilogue = TILE * (TILE + 4) * 4;
        assert!(
            epilogue <= WMMA_SMEM,
            "rung 14's FP32 epilogue tile fits in its ring"
        );
        for smem in [WMMA_SMEM, LDMATRIX_SMEM, DBUF_SMEM] {
            assert!(smem > 48 * 1024, "each ring needs the dynamic opt-in");
            // Two blocks per SM on an H100: 228 KB per SM, 1 KB of it reserved per block.
            assert!(2 * (smem + 1024) <= 228 * 1024, "{smem} B");
        }
    }

    #[test]
    fn bf16_plan_holds_rung_16s_body_and_its_own_entry() {
        let plan = GemmMmaBf16.cuda(&Shape::gemm(3, 5, 7)).unwrap();
        let launch = plan.launches().next().unwrap();
        assert_eq!(plan.inputs, vec![Dtype::Bf16, Dtype::Bf16]);
        assert!(launch.source.code.contains("gemm_mma_body"));
        assert!(
            launch
                .source
                .code
                .contains("gemm_mma_bf16(const __nv_bfloat16")
        );
    }

    fn relative_error(port: CpuPort) -> f64 {
        let (m, n, k) = (33, 17, 65);
        let a: Vec<f32> = (0..m * k)
            .map(|i| ((i * 37) % 101) as f32 / 50.0 - 1.0)
            .collect();
        let b: Vec<f32> = (0..k * n)
            .map(|i| ((i * 53) % 97) as f32 / 48.0 - 1.0)
            .collect();
        let mut out = vec![f32::NAN; m * n];
        port(&Shape::gemm(m, n, k), &[&a, &b], &mut out);
        let (mut num, mut den) = (0.0f64, 0.0f64);
        for i in 0..m {
            for j in 0..n {
                let e: f64 = (0..k)
                    .map(|kk| a[i * k + kk] as f64 * b[kk * n + j] as f64)
                    .sum();
                num += (out[i * n + j] as f64 - e).powi(2);
                den += e * e;
            }
        }
        (num / den).sqrt()
    }

    #[test]
    fn ports_are_within_their_bounds_and_bf16_is_coarser() {
        let (e16, eb16) = (relative_error(cpu_fp16), relative_error(cpu_bf16));
        assert!(e16 > 0.0 && e16 < Precision::Fp16.tolerance(), "fp16 {e16}");
        assert!(eb16 < Precision::Bf16.tolerance(), "bf16 {eb16}");
        // 8 mantissa bits against 11: the BF16 port really rounds to BF16.
        assert!(eb16 > 2.0 * e16, "bf16 {eb16} vs fp16 {e16}");
    }
}
