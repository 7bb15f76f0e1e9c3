//! Inline PTX in kernel files, as public tensor-core tutorials write it (`asm volatile(...)`
//! with register constraints), run by the simulator through the same emulation as
//! `lab/ptx.h`: every recognised form checked against the PTX ISA's documented layouts and
//! semantics (ldmatrix x1/x2/x4 and .trans; mma.sync m16n8k16 and m16n8k8 f16/bf16 with f32
//! or f16 accumulators and m16n8k8 tf32; wmma m16n16k16 load, mma and store; cp.async ca/cg with src-size and ignore-src
//! zero-fill and its groups; shfl.sync; the cvta idiom, mov, cvt and selp), anything else
//! refused naming the instruction, its file and line, and NVRTC compiling the same sources
//! for sm_80 and sm_90.

use kernel::cuda::nvrtc;
use kernel::sim::SimDevice;
use kernel::testing::{PlanKernel, gemm_f64};
use kernel::{CudaPlan, CudaSource, DeviceError, Dtype, Executor, Launch, Shape};

fn source(code: &'static str) -> CudaSource {
    CudaSource::embedded("tests/inline_ptx.cu", code)
}

/// Runs `entry` of `src` on one block of `threads` with the GEMM arguments of `shape`.
fn run(
    src: CudaSource,
    entry: &str,
    threads: u32,
    shape: Shape,
    data: &[Vec<f32>],
) -> Result<Vec<f32>, DeviceError> {
    let (m, n, k) = kernel::gemm_dims(&shape);
    let plan = CudaPlan {
        inputs: vec![Dtype::F32; 2],
        steps: vec![kernel::Step::Kernel(Launch {
            source: src,
            entry: entry.to_string().into(),
            grid: [1, 1, 1],
            block: [threads, 1, 1],
            dynamic_smem: 0,
            args: kernel::gemm_args(m, n, k),
        })],
        ..Default::default()
    };
    let dev = SimDevice::new()?;
    let k = PlanKernel::fp32(plan);
    let mut p = dev.prepare(&k, &shape, data)?;
    p.run()?;
    p.output()
}

/// Small integers in [-4, 4] (exact in FP16, BF16, TF32 and every FP32 sum of a product).
fn ints(len: usize, seed: u64) -> Vec<f32> {
    let mut s = seed;
    (0..len)
        .map(|_| {
            s = s
                .wrapping_mul(6_364_136_223_846_793_005)
                .wrapping_add(1_442_695_040_888_963_407);
            ((s >> 33) % 9) as f32 - 4.0
        })
        .collect()
}

// ---- ldmatrix ----

/// A 32 x 8 tile of 16-bit codes (row j, column c holds 8j + c); lane l points at row
/// perm(l), so matrix i's row r is tile row perm(8i + r). Lanes past the last matrix give a
/// misaligned address, which ldmatrix never reads. The address comes from the cvta idiom.
/// C[(lane * 4 + reg) * 2 + half].
const LDMATRIX: &str = r#"
__device__ int perm(int l) { return (l * 7 + 3) % 32; }
__device__ __forceinline__ unsigned smem_u32(const void *ptr) {
    unsigned addr;
    asm("{ .reg .u64 u64addr; cvta.to.shared.u64 u64addr, %1; cvt.u32.u64 %0, u64addr; }\n"
        : "=r"(addr) : "l"(ptr));
    return addr;
}
template <int N, bool T>
__device__ void load(float *out) {
    __shared__ __align__(16) unsigned short tile[32][8];
    const int l = threadIdx.x;
    for (int c = 0; c < 8; ++c) tile[l][c] = (unsigned short)(8 * l + c);
    __syncwarp();
    unsigned a = smem_u32(&tile[perm(l)][0]);
    if (l >= 8 * N) a += 2;
    unsigned r[4] = {0, 0, 0, 0};
    if (N == 1 && !T) asm volatile("ldmatrix.sync.aligned.m8n8.x1.shared.b16 {%0}, [%1];\n" : "=r"(r[0]) : "r"(a));
    if (N == 2 && !T) asm volatile("ldmatrix.sync.aligned.m8n8.x2.shared::cta.b16 {%0, %1}, [%2];\n"
                                   : "=r"(r[0]), "=r"(r[1]) : "r"(a));
    if (N == 4 && !T) asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0, %1, %2, %3}, [%4];\n"
                                   : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3]) : "r"(a));
    if (N == 1 && T) asm volatile("ldmatrix.sync.aligned.m8n8.x1.trans.shared.b16 {%0}, [%1];\n" : "=r"(r[0]) : "r"(a));
    if (N == 2 && T) asm volatile("ldmatrix.sync.aligned.m8n8.x2.trans.shared.b16 {%0, %1}, [%2];\n"
                                  : "=r"(r[0]), "=r"(r[1]) : "r"(a));
    if (N == 4 && T) asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0, %1, %2, %3}, [%4];\n"
                                  : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3]) : "r"(a));
    for (int i = 0; i < N; ++i) {
        out[(l * 4 + i) * 2] = (float)(r[i] & 0xFFFF);
        out[(l * 4 + i) * 2 + 1] = (float)(r[i] >> 16);
    }
}
extern "C" __global__ void ld_x1(const float *A, const float *B, float *C, int M, int N, int K) { load<1, false>(C); }
extern "C" __global__ void ld_x2(const float *A, const float *B, float *C, int M, int N, int K) { load<2, false>(C); }
extern "C" __global__ void ld_x4(const float *A, const float *B, float *C, int M, int N, int K) { load<4, false>(C); }
extern "C" __global__ void ld_x1_trans(const float *A, const float *B, float *C, int M, int N, int K) { load<1, true>(C); }
extern "C" __global__ void ld_x2_trans(const float *A, const float *B, float *C, int M, int N, int K) { load<2, true>(C); }
extern "C" __global__ void ld_x4_trans(const float *A, const float *B, float *C, int M, int N, int K) { load<4, true>(C); }
"#;

#[test]
fn inline_ldmatrix_gives_each_lane_the_documented_elements() {
    let perm = |l: usize| (l * 7 + 3) % 32;
    let shape = Shape::gemm(256, 1, 1);
    let data = vec![vec![0.0; 256], vec![0.0]];
    for (n, trans) in [
        (1, false),
        (2, false),
        (4, false),
        (1, true),
        (2, true),
        (4, true),
    ] {
        let entry = format!("ld_x{n}{}", if trans { "_trans" } else { "" });
        let out = run(source(LDMATRIX), &entry, 32, shape, &data).unwrap();
        let code = |i: usize, r: usize, c: usize| (8 * perm(8 * i + r) + c) as f32;
        for lane in 0..32 {
            let (g, t) = (lane / 4, lane % 4);
            for i in 0..4 {
                let got = [out[(lane * 4 + i) * 2], out[(lane * 4 + i) * 2 + 1]];
                if i >= n {
                    assert!(got[0].is_nan() && got[1].is_nan(), "{entry}: register {i}");
                    continue;
                }
                let want = if trans {
                    [code(i, 2 * t, g), code(i, 2 * t + 1, g)]
                } else {
                    [code(i, g, 2 * t), code(i, g, 2 * t + 1)]
                };
                assert_eq!(got, want, "{entry}: lane {lane}, register {i}");
            }
        }
    }
}

// ---- mma.sync ----

/// One warp: D = A * B + C with every register filled by the documented layouts; A 16 x K
/// and B K x 8 row-major in A and B, C[r][c] = 100 r + c, D 16 x 8 row-major.
const MMA: &str = r#"
#include <cuda_fp16.h>
#include <cuda_bf16.h>
__device__ unsigned h2(float lo, float hi) {
    return (unsigned)__half_as_ushort(__float2half_rn(lo)) | ((unsigned)__half_as_ushort(__float2half_rn(hi)) << 16);
}
__device__ unsigned b2(float lo, float hi) {
    return (unsigned)__bfloat16_as_ushort(__float2bfloat16_rn(lo)) |
           ((unsigned)__bfloat16_as_ushort(__float2bfloat16_rn(hi)) << 16);
}
__device__ float lo_of(unsigned r) { return __half2float(__ushort_as_half((unsigned short)(r & 0xFFFF))); }
__device__ float hi_of(unsigned r) { return __half2float(__ushort_as_half((unsigned short)(r >> 16))); }

extern "C" __global__ void mma16(const float *A, const float *B, float *D, int M, int N, int K) {
    const int l = threadIdx.x, g = l / 4, t = l % 4;
#if BF16
#define PK b2
#else
#define PK h2
#endif
    unsigned a0 = PK(A[g * 16 + 2 * t], A[g * 16 + 2 * t + 1]), a1 = PK(A[(g + 8) * 16 + 2 * t], A[(g + 8) * 16 + 2 * t + 1]);
    unsigned a2 = PK(A[g * 16 + 2 * t + 8], A[g * 16 + 2 * t + 9]), a3 = PK(A[(g + 8) * 16 + 2 * t + 8], A[(g + 8) * 16 + 2 * t + 9]);
    unsigned b0 = PK(B[2 * t * 8 + g], B[(2 * t + 1) * 8 + g]), b1 = PK(B[(2 * t + 8) * 8 + g], B[(2 * t + 9) * 8 + g]);
    const float c[4] = {100.0f * g + 2 * t, 100.0f * g + 2 * t + 1, 100.0f * (g + 8) + 2 * t, 100.0f * (g + 8) + 2 * t + 1};
    float d[4];
#if F16_ACC   // C and D as .f16x2: c0 = C[g][2t..2t+1], c1 = C[g+8][2t..2t+1]
    unsigned dh[2];
    asm volatile("mma.sync.aligned.m16n8k16.row.col.f16.f16.f16.f16 {%0, %1}, {%2, %3, %4, %5}, {%6, %7}, {%8, %9};\n"
                 : "=r"(dh[0]), "=r"(dh[1])
                 : "r"(a0), "r"(a1), "r"(a2), "r"(a3), "r"(b0), "r"(b1), "r"(h2(c[0], c[1])), "r"(h2(c[2], c[3])));
    d[0] = lo_of(dh[0]); d[1] = hi_of(dh[0]); d[2] = lo_of(dh[1]); d[3] = hi_of(dh[1]);
#elif BF16
    asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, {%10, %11, %12, %13};\n"
                 : "=f"(d[0]), "=f"(d[1]), "=f"(d[2]), "=f"(d[3])
                 : "r"(a0), "r"(a1), "r"(a2), "r"(a3), "r"(b0), "r"(b1), "f"(c[0]), "f"(c[1]), "f"(c[2]), "f"(c[3]));
#else         // the accumulators in place ("+f")
    for (int i = 0; i < 4; ++i) d[i] = c[i];
    asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, {%0, %1, %2, %3};\n"
                 : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
                 : "r"(a0), "r"(a1), "r"(a2), "r"(a3), "r"(b0), "r"(b1));
#endif
    D[g * 8 + 2 * t] = d[0];
    D[g * 8 + 2 * t + 1] = d[1];
    D[(g + 8) * 8 + 2 * t] = d[2];
    D[(g + 8) * 8 + 2 * t + 1] = d[3];
}

// m16n8k8 with 16-bit operands (A 16 x 8, B 8 x 8): a0 = A[g][2t..2t+1], a1 = A[g+8][2t..2t+1];
// b0 = B[2t..2t+1][g]: the first half of m16n8k16's fragments.
extern "C" __global__ void mma8(const float *A, const float *B, float *D, int M, int N, int K) {
    const int l = threadIdx.x, g = l / 4, t = l % 4;
    unsigned a0 = PK(A[g * 8 + 2 * t], A[g * 8 + 2 * t + 1]), a1 = PK(A[(g + 8) * 8 + 2 * t], A[(g + 8) * 8 + 2 * t + 1]);
    unsigned b0 = PK(B[2 * t * 8 + g], B[(2 * t + 1) * 8 + g]);
    float d[4] = {100.0f * g + 2 * t, 100.0f * g + 2 * t + 1, 100.0f * (g + 8) + 2 * t, 100.0f * (g + 8) + 2 * t + 1};
#if F16_ACC
    unsigned dh[2] = {h2(d[0], d[1]), h2(d[2], d[3])};
    asm volatile("mma.sync.aligned.m16n8k8.row.col.f16.f16.f16.f16 {%0, %1}, {%2, %3}, {%4}, {%0, %1};\n"
                 : "+r"(dh[0]), "+r"(dh[1]) : "r"(a0), "r"(a1), "r"(b0));
    d[0] = lo_of(dh[0]); d[1] = hi_of(dh[0]); d[2] = lo_of(dh[1]); d[3] = hi_of(dh[1]);
#elif BF16
    asm volatile("mma.sync.aligned.m16n8k8.row.col.f32.bf16.bf16.f32 {%0, %1, %2, %3}, {%4, %5}, {%6}, {%0, %1, %2, %3};\n"
                 : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]) : "r"(a0), "r"(a1), "r"(b0));
#else
    asm volatile("mma.sync.aligned.m16n8k8.row.col.f32.f16.f16.f32 {%0, %1, %2, %3}, {%4, %5}, {%6}, {%0, %1, %2, %3};\n"
                 : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]) : "r"(a0), "r"(a1), "r"(b0));
#endif
    D[g * 8 + 2 * t] = d[0];
    D[g * 8 + 2 * t + 1] = d[1];
    D[(g + 8) * 8 + 2 * t] = d[2];
    D[(g + 8) * 8 + 2 * t + 1] = d[3];
}

// m16n8k8 TF32: a0 = A[g][t], a1 = A[g+8][t], a2 = A[g][t+4], a3 = A[g+8][t+4]; b0 = B[t][g], b1 = B[t+4][g].
extern "C" __global__ void mma_tf32(const float *A, const float *B, float *D, int M, int N, int K) {
    const int l = threadIdx.x, g = l / 4, t = l % 4;
    float d[4] = {100.0f * g + 2 * t, 100.0f * g + 2 * t + 1, 100.0f * (g + 8) + 2 * t, 100.0f * (g + 8) + 2 * t + 1};
    asm volatile("mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, {%0, %1, %2, %3};\n"
                 : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
                 : "r"(__float_as_uint(A[g * 8 + t])), "r"(__float_as_uint(A[(g + 8) * 8 + t])),
                   "r"(__float_as_uint(A[g * 8 + t + 4])), "r"(__float_as_uint(A[(g + 8) * 8 + t + 4])),
                   "r"(__float_as_uint(B[t * 8 + g])), "r"(__float_as_uint(B[(t + 4) * 8 + g])));
    D[g * 8 + 2 * t] = d[0];
    D[g * 8 + 2 * t + 1] = d[1];
    D[(g + 8) * 8 + 2 * t] = d[2];
    D[(g + 8) * 8 + 2 * t + 1] = d[3];
}
"#;

fn mma_source(bf16: bool, f16_acc: bool) -> CudaSource {
    source(MMA)
        .define("BF16", i32::from(bf16))
        .define("F16_ACC", i32::from(f16_acc))
}

#[test]
fn inline_mma_follows_the_fragment_layouts_for_every_accumulator_type() {
    let (a, b) = (ints(256, 1), ints(128, 2));
    let c = |i: usize| (100 * (i / 8) + i % 8) as f64;
    let want: Vec<f32> = gemm_f64((16, 8, 16), &a, &b, |x| x)
        .iter()
        .enumerate()
        .map(|(i, v)| (v + c(i)) as f32)
        .collect();
    for (name, bf16, f16_acc) in [
        ("f32.f16.f16.f32 with +f accumulators", false, false),
        ("f32.bf16.bf16.f32", true, false),
        ("f16.f16.f16.f16", false, true),
    ] {
        let out = run(
            mma_source(bf16, f16_acc),
            "mma16",
            32,
            Shape::gemm(16, 8, 16),
            &[a.clone(), b.clone()],
        )
        .unwrap();
        assert_eq!(out, want, "{name}");
    }
    // m16n8k8: A 16 x 8, B 8 x 8.
    let (a, b) = (ints(128, 3), ints(64, 4));
    let want: Vec<f32> = gemm_f64((16, 8, 8), &a, &b, |x| x)
        .iter()
        .enumerate()
        .map(|(i, v)| (v + c(i)) as f32)
        .collect();
    for (name, bf16, f16_acc) in [
        ("m16n8k8 f32.f16.f16.f32", false, false),
        ("m16n8k8 f32.bf16.bf16.f32", true, false),
        ("m16n8k8 f16.f16.f16.f16", false, true),
    ] {
        let out = run(
            mma_source(bf16, f16_acc),
            "mma8",
            32,
            Shape::gemm(16, 8, 8),
            &[a.clone(), b.clone()],
        )
        .unwrap();
        assert_eq!(out, want, "{name}");
    }
    let out = run(
        mma_source(false, false),
        "mma_tf32",
        32,
        Shape::gemm(16, 8, 8),
        &[a, b],
    )
    .unwrap();
    assert_eq!(out, want, "m16n8k8 tf32");
}

// ---- wmma ----

/// One warp, D = A B + C at m16n16k16 through inline `wmma`: A from shared memory row-major
/// with a leading dimension of 24, B from shared memory column-major, C (100 r + c) from
/// shared memory column-major, D stored row-major to global memory through a generic address.
/// F16_ACC: C loaded and D stored as f16 pairs (through shared memory, then copied out).
const WMMA: &str = r#"
#include <cuda_fp16.h>
#include <cuda_bf16.h>
#if BF16
typedef __nv_bfloat16 elem;
#define CVT __float2bfloat16_rn
#else
typedef __half elem;
#define CVT __float2half_rn
#endif
extern "C" __global__ void wmma16(const float *A, const float *B, float *D, int M, int N, int K) {
    __shared__ __align__(32) elem As[16 * 24];
    __shared__ __align__(32) elem Bs[16 * 16];
    __shared__ __align__(32) float Cs[16 * 16];
    __shared__ __align__(32) __half Ch[16 * 16];
    for (int i = threadIdx.x; i < 256; i += 32) {
        const int r = i / 16, c = i % 16;
        As[r * 24 + c] = CVT(A[i]);
        Bs[c * 16 + r] = CVT(B[i]);
        Cs[c * 16 + r] = 100.0f * r + c;
        Ch[r * 16 + c] = __float2half_rn(100.0f * r + c);
    }
    __syncwarp();
    const unsigned as = (unsigned)__cvta_generic_to_shared(As), bs = (unsigned)__cvta_generic_to_shared(Bs);
    const unsigned cs = (unsigned)__cvta_generic_to_shared(Cs), ch = (unsigned)__cvta_generic_to_shared(Ch);
    const int lda = 24;
    unsigned a[8], b[8], h[4];
    float d[8];
#if BF16
    asm volatile("wmma.load.a.sync.aligned.row.m16n16k16.shared.bf16 {%0, %1, %2, %3}, [%4], %5;"
                 : "=r"(a[0]), "=r"(a[1]), "=r"(a[2]), "=r"(a[3]) : "r"(as), "r"(lda));
    asm volatile("wmma.load.b.sync.aligned.col.m16n16k16.shared.bf16 {%0, %1, %2, %3}, [%4];"
                 : "=r"(b[0]), "=r"(b[1]), "=r"(b[2]), "=r"(b[3]) : "r"(bs));
    asm volatile("wmma.load.c.sync.aligned.col.m16n16k16.shared.f32 {%0, %1, %2, %3, %4, %5, %6, %7}, [%8], 16;"
                 : "=f"(d[0]), "=f"(d[1]), "=f"(d[2]), "=f"(d[3]), "=f"(d[4]), "=f"(d[5]), "=f"(d[6]), "=f"(d[7]) : "r"(cs));
    asm volatile("wmma.mma.sync.aligned.row.col.m16n16k16.f32.bf16.bf16.f32 {%0, %1, %2, %3, %4, %5, %6, %7}, "
                 "{%8, %9, %10, %11}, {%12, %13, %14, %15}, {%0, %1, %2, %3, %4, %5, %6, %7};"
                 : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7])
                 : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]), "r"(b[2]), "r"(b[3]));
#else
    asm volatile("wmma.load.a.sync.aligned.row.m16n16k16.shared.f16 {%0, %1, %2, %3, %4, %5, %6, %7}, [%8], %9;"
                 : "=r"(a[0]), "=r"(a[1]), "=r"(a[2]), "=r"(a[3]), "=r"(a[4]), "=r"(a[5]), "=r"(a[6]), "=r"(a[7])
                 : "r"(as), "r"(lda));
    asm volatile("wmma.load.b.sync.aligned.col.m16n16k16.shared.f16 {%0, %1, %2, %3, %4, %5, %6, %7}, [%8], 16;"
                 : "=r"(b[0]), "=r"(b[1]), "=r"(b[2]), "=r"(b[3]), "=r"(b[4]), "=r"(b[5]), "=r"(b[6]), "=r"(b[7])
                 : "r"(bs));
#if F16_ACC
    asm volatile("wmma.load.c.sync.aligned.row.m16n16k16.shared.f16 {%0, %1, %2, %3}, [%4], 16;"
                 : "=r"(h[0]), "=r"(h[1]), "=r"(h[2]), "=r"(h[3]) : "r"(ch));
    asm volatile("wmma.mma.sync.aligned.row.col.m16n16k16.f16.f16 {%0, %1, %2, %3}, "
                 "{%4, %5, %6, %7, %8, %9, %10, %11}, {%12, %13, %14, %15, %16, %17, %18, %19}, {%0, %1, %2, %3};"
                 : "+r"(h[0]), "+r"(h[1]), "+r"(h[2]), "+r"(h[3])
                 : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(a[4]), "r"(a[5]), "r"(a[6]), "r"(a[7]),
                   "r"(b[0]), "r"(b[1]), "r"(b[2]), "r"(b[3]), "r"(b[4]), "r"(b[5]), "r"(b[6]), "r"(b[7]));
    asm volatile("wmma.store.d.sync.aligned.row.m16n16k16.shared.f16 [%0], {%1, %2, %3, %4}, 16;"
                 :: "r"(ch), "r"(h[0]), "r"(h[1]), "r"(h[2]), "r"(h[3]) : "memory");
    __syncwarp();
    for (int i = threadIdx.x; i < 256; i += 32) D[i] = __half2float(Ch[i]);
    return;
#else
    asm volatile("wmma.load.c.sync.aligned.col.m16n16k16.shared.f32 {%0, %1, %2, %3, %4, %5, %6, %7}, [%8], 16;"
                 : "=f"(d[0]), "=f"(d[1]), "=f"(d[2]), "=f"(d[3]), "=f"(d[4]), "=f"(d[5]), "=f"(d[6]), "=f"(d[7]) : "r"(cs));
    asm volatile("wmma.mma.sync.aligned.row.col.m16n16k16.f32.f32 {%0, %1, %2, %3, %4, %5, %6, %7}, "
                 "{%8, %9, %10, %11, %12, %13, %14, %15}, {%16, %17, %18, %19, %20, %21, %22, %23}, {%0, %1, %2, %3, %4, %5, %6, %7};"
                 : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7])
                 : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(a[4]), "r"(a[5]), "r"(a[6]), "r"(a[7]),
                   "r"(b[0]), "r"(b[1]), "r"(b[2]), "r"(b[3]), "r"(b[4]), "r"(b[5]), "r"(b[6]), "r"(b[7]));
#endif
#endif
    asm volatile("wmma.store.d.sync.aligned.row.m16n16k16.f32 [%0], {%1, %2, %3, %4, %5, %6, %7, %8}, %9;"
                 :: "l"(D), "f"(d[0]), "f"(d[1]), "f"(d[2]), "f"(d[3]), "f"(d[4]), "f"(d[5]), "f"(d[6]), "f"(d[7]), "r"(N)
                 : "memory");
}
"#;

#[test]
fn inline_wmma_loads_multiplies_and_stores_in_every_layout() {
    let (a, b) = (ints(256, 5), ints(256, 6));
    let want: Vec<f32> = gemm_f64((16, 16, 16), &a, &b, |x| x)
        .iter()
        .enumerate()
        .map(|(i, v)| (v + (100 * (i / 16) + i % 16) as f64) as f32)
        .collect();
    for (name, bf16, f16_acc) in [
        ("f16 with f32 accumulators", false, false),
        ("bf16", true, false),
        ("f16 with f16 accumulators", false, true),
    ] {
        let out = run(
            wmma_source(bf16, f16_acc),
            "wmma16",
            32,
            Shape::gemm(16, 16, 16),
            &[a.clone(), b.clone()],
        )
        .unwrap();
        assert_eq!(out, want, "{name}");
    }
}

fn wmma_source(bf16: bool, f16_acc: bool) -> CudaSource {
    source(WMMA)
        .define("BF16", i32::from(bf16))
        .define("F16_ACC", i32::from(f16_acc))
}

#[test]
fn inline_mma_with_f16_accumulators_rounds_d_to_f16() {
    // Values whose sums are not FP16 numbers: D is the FP32 sum rounded once to FP16.
    let a: Vec<f32> = (0..256).map(|i| 0.1 + (i % 13) as f32 * 0.37).collect();
    let b: Vec<f32> = (0..128).map(|i| 0.2 - (i % 7) as f32 * 0.29).collect();
    let f16 = |v: f32| half::f16::from_f32(v).to_f32();
    let out = run(
        mma_source(false, true),
        "mma16",
        32,
        Shape::gemm(16, 8, 16),
        &[a.clone(), b.clone()],
    )
    .unwrap();
    for (i, &got) in out.iter().enumerate() {
        let (r, col) = (i / 8, i % 8);
        let mut acc = f16((100 * r + col) as f32);
        for k in 0..16 {
            acc += f16(a[r * 16 + k]) * f16(b[k * 8 + col]);
        }
        assert_eq!(got, f16(acc), "D[{r}][{col}]");
        assert_eq!(got, f16(got), "D[{r}][{col}] is an FP16 number");
    }
}

// ---- cp.async ----

/// Each thread copies into its own 64 bytes of shared memory and snapshots them as groups
/// complete (the cp.async test of lab/ptx.h, written as public code writes it).
const ASYNC: &str = r#"
#define CP_ASYNC_CA(dst, src, bytes) asm volatile("cp.async.ca.shared.global [%0], [%1], %2;\n" ::"r"(dst), "l"(src), "n"(bytes))
#define CP_ASYNC_CG_ZFILL(dst, src, src_bytes) \
    asm volatile("cp.async.cg.shared.global.L2::128B [%0], [%1], 16, %2;\n" ::"r"(dst), "l"(src), "r"(src_bytes))
#define CP_ASYNC_COMMIT() asm volatile("cp.async.commit_group;\n" ::)
#define CP_ASYNC_WAIT(n) asm volatile("cp.async.wait_group %0;\n" ::"n"(n))
extern "C" __global__ void async_groups(const float *x, const float *unused, float *out, int M, int N, int K) {
    __shared__ __align__(16) float s[32][4][4];
    const int t = threadIdx.x;
    const float *src = x + t * 16;
    float *o = out + t * 16;
    const unsigned base = static_cast<unsigned>(__cvta_generic_to_shared(&s[t][0][0]));
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16;\n" ::"r"(base), "l"(src));  // group 0: x[0..4]
    CP_ASYNC_COMMIT();
    CP_ASYNC_CA(base + 16, src + 4, 8);                                                  // group 1: x[4..6]
    CP_ASYNC_CA(base + 24, src + 6, 4);                                                  //          x[6]
    CP_ASYNC_COMMIT();
    CP_ASYNC_CG_ZFILL(base + 32, src + 8, 8);                                            // not committed: x[8..10], 0, 0
    asm volatile("{ .reg .pred p; setp.eq.u32 p, %2, 0;\n"                            // even threads: zeros,
                 "cp.async.ca.shared.global [%0], [%1], 16, p; }\n"                      // odd: x[12..16]
                 ::"r"(base + 48), "l"(src + 12), "r"(t % 2));
    o[0] = s[t][0][0];
    CP_ASYNC_WAIT(1);
    o[1] = s[t][0][3];
    o[2] = s[t][1][0];
    CP_ASYNC_WAIT(0);
    o[3] = s[t][1][1];
    o[4] = s[t][1][2];
    o[5] = s[t][2][0];
    o[6] = s[t][3][0];
    asm volatile("cp.async.wait_all;\n" ::: "memory");
    for (int i = 0; i < 4; ++i) o[7 + i] = s[t][2][i];
    for (int i = 0; i < 4; ++i) o[11 + i] = s[t][3][i];
    o[15] = 0.0f;
}
"#;

#[test]
fn inline_cp_async_lands_only_at_a_wait_covering_its_group_and_zero_fills() {
    let x: Vec<f32> = (0..512).map(|i| 0.5 + i as f32).collect();
    let out = run(
        source(ASYNC),
        "async_groups",
        32,
        Shape::gemm(32, 16, 16),
        &[x.clone(), vec![0.0; 256]],
    )
    .unwrap();
    for t in 0..32 {
        let (o, x) = (&out[t * 16..t * 16 + 16], &x[t * 16..t * 16 + 16]);
        assert!(o[0].is_nan(), "thread {t}: read before any wait");
        assert_eq!(o[1], x[3], "thread {t}: wait_group 1 completes group 0");
        assert!(
            o[2].is_nan(),
            "thread {t}: the newest group is still pending"
        );
        assert_eq!([o[3], o[4]], [x[5], x[6]], "thread {t}: wait_group 0");
        assert!(
            o[5].is_nan() && o[6].is_nan(),
            "thread {t}: uncommitted copies"
        );
        let last = match t % 2 {
            0 => [0.0; 4],
            _ => [x[12], x[13], x[14], x[15]],
        };
        assert_eq!(
            &o[7..15],
            &[x[8], x[9], 0.0, 0.0, last[0], last[1], last[2], last[3]],
            "thread {t}: wait_all, the src-size zero-fill and ignore-src"
        );
    }
}

// ---- shfl.sync, mov, cvt, selp ----

/// Each mode of shfl.sync against the CUDA intrinsic that compiles to it, with segments
/// narrower than the warp; the .up predicate; %laneid; packing and unpacking with mov; cvt.
/// C[row * 32 + lane].
const MISC: &str = r#"
extern "C" __global__ void misc(const float *x, const float *unused, float *out, int M, int N, int K) {
    const unsigned l = threadIdx.x, v = 100 + 3 * l;
    unsigned r[6];
    int row = 0;
    auto put = [&](float a) { out[row++ * 32 + l] = a; };
    asm volatile("shfl.sync.idx.b32 %0, %1, %2, %3, %4;" : "=r"(r[0]) : "r"(v), "r"(5), "r"(0x1f), "r"(0xffffffffu));
    put(r[0]); put(__shfl_sync(0xffffffffu, v, 5));
    asm volatile("shfl.sync.idx.b32 %0, %1, %2, %3, %4;" : "=r"(r[1]) : "r"(v), "r"(3), "r"(((32 - 8) << 8) | 0x1f), "r"(0xffffffffu));
    put(r[1]); put(__shfl_sync(0xffffffffu, v, 3, 8));
    unsigned p;
    asm volatile("{ .reg .pred q; shfl.sync.up.b32 %0|q, %2, %3, %4, %5; selp.u32 %1, 1, 0, q; }"
                 : "=r"(r[2]), "=r"(p) : "r"(v), "r"(3), "r"((32 - 16) << 8), "r"(0xffffffffu));
    put(r[2]); put(__shfl_up_sync(0xffffffffu, v, 3, 16)); put(p);
    asm volatile("shfl.sync.down.b32 %0, %1, %2, %3, %4;" : "=r"(r[3]) : "r"(v), "r"(2), "r"(((32 - 16) << 8) | 0x1f), "r"(0xffffffffu));
    put(r[3]); put(__shfl_down_sync(0xffffffffu, v, 2, 16));
    asm volatile("shfl.sync.bfly.b32 %0, %1, %2, %3, %4;" : "=r"(r[4]) : "r"(v), "r"(6), "r"(0x1f), "r"(0xffffffffu));
    put(r[4]); put(__shfl_xor_sync(0xffffffffu, v, 6));
    unsigned lane;
    asm("mov.u32 %0, %%laneid;" : "=r"(lane));
    put(lane);
    unsigned packed;
    unsigned short lo = (unsigned short)(l + 1), hi = (unsigned short)(2 * l), lo2, hi2;
    asm("mov.b32 %0, {%1, %2};" : "=r"(packed) : "h"(lo), "h"(hi));
    asm("mov.b32 {%0, %1}, %2;" : "=h"(lo2), "=h"(hi2) : "r"(packed + 0x00010001u));
    put(packed == ((unsigned)lo | ((unsigned)hi << 16))); put(lo2); put(hi2);
    unsigned long long wide;
    int neg = -(int)l;
    asm("cvt.s64.s32 %0, %1;" : "=l"(wide) : "r"(neg));
    put((float)(long long)wide);
    unsigned active;
    asm volatile("activemask.b32 %0;" : "=r"(active));
    put(active == 0xffffffffu && active == __activemask());
}
"#;

#[test]
fn inline_shfl_mov_cvt_selp_and_activemask_follow_the_isa() {
    let out = run(
        source(MISC),
        "misc",
        32,
        Shape::gemm(32, 17, 1),
        &[vec![0.0; 32], vec![0.0; 17]],
    )
    .unwrap();
    let row = |r: usize| &out[r * 32..r * 32 + 32];
    // Each asm shuffle equals its intrinsic.
    for (asm, intrinsic) in [(0, 1), (2, 3), (4, 5), (7, 8), (9, 10)] {
        assert_eq!(row(asm), row(intrinsic), "rows {asm} and {intrinsic}");
    }
    let v = |l: usize| (100 + 3 * l) as f32;
    for l in 0..32 {
        assert_eq!(row(0)[l], v(5), "idx: every lane reads lane 5");
        assert_eq!(row(2)[l], v(l / 8 * 8 + 3), "idx in segments of 8");
        let up_ok = l % 16 >= 3;
        assert_eq!(row(4)[l], v(if up_ok { l - 3 } else { l }), "up by 3 in 16");
        assert_eq!(row(6)[l], f32::from(u8::from(up_ok)), "up: the predicate");
        assert_eq!(
            row(7)[l],
            v(if l % 16 < 14 { l + 2 } else { l }),
            "down by 2 in 16"
        );
        assert_eq!(row(9)[l], v(l ^ 6), "bfly by 6");
        assert_eq!(row(11)[l], l as f32, "%laneid");
        assert_eq!(row(12)[l], 1.0, "mov packs lo | hi << 16");
        assert_eq!(
            [row(13)[l], row(14)[l]],
            [(l + 2) as f32, (2 * l + 1) as f32],
            "mov unpacks"
        );
        assert_eq!(row(15)[l], -(l as f32), "cvt.s64.s32 sign-extends");
        assert_eq!(row(16)[l], 1.0, "activemask: every lane of a whole warp");
    }
}

// ---- ld, st, atom, red, setp and guards, fences ----

/// The memory instructions as public kernels write them: vector loads and stores through
/// both state spaces, CUTLASS's guarded load (a default moved in, then `@p ld`), sign and zero
/// extension, setp's signed, unsigned and unordered comparisons, the atomics on shared and
/// global memory, and the strong and fenced forms. out[row * 32 + lane]; x holds 64 inputs.
const MEMORY: &str = r#"
__device__ unsigned window(const void *p) { return (unsigned)__cvta_generic_to_shared(p); }

extern "C" __global__ void memory(const float *x, const float *unused, float *out, int M, int N, int K) {
    __shared__ __align__(16) float tile[64];
    __shared__ unsigned counters[4];
    __shared__ unsigned char bytes[32];
    const unsigned l = threadIdx.x;
    int row = 0;
    auto put = [&](float a) { out[row++ * 32 + l] = a; };
    if (l < 4) counters[l] = l == 3 ? 5u : 0u;
    if (l < 2) out[20 * 32 + l] = 0.f;
    float4 v = {0.f, 0.f, 0.f, 0.f};
    if (l < 16) {
        asm volatile("ld.global.nc.L1::no_allocate.v4.f32 {%0, %1, %2, %3}, [%4];"
                     : "=f"(v.x), "=f"(v.y), "=f"(v.z), "=f"(v.w) : "l"(x + 4 * l));
        asm volatile("st.shared.v4.f32 [%0], {%1, %2, %3, %4};"
                     :: "r"(window(tile + 4 * l)), "f"(v.x), "f"(v.y), "f"(v.z), "f"(v.w) : "memory");
    }
    asm volatile("st.shared.u8 [%0], %1;" :: "r"(window(bytes + l)), "r"(250u + l) : "memory");
    __syncthreads();
    float r;
    asm volatile("ld.shared.f32 %0, [%1+4];" : "=f"(r) : "r"(window(tile + 62 - 2 * l)));
    put(r);                                                   // 0: x[63 - 2l]
    unsigned bits;
    asm volatile("{\n  .reg .pred p;\n  setp.ne.b32 p, %1, 0;\n  mov.b32 %0, %2;\n"
                 "  @p ld.global.u32 %0, [%3];\n}\n"
                 : "=r"(bits) : "r"((int)(l % 3 != 0)), "r"(__float_as_uint(-1.f)), "l"(x + l));
    put(__uint_as_float(bits));                               // 1: x[l], or -1 where l % 3 == 0
    int s8;
    unsigned u8;
    asm volatile("ld.shared.s8 %0, [%1];" : "=r"(s8) : "r"(window(bytes + l)));
    asm volatile("ld.shared.u8 %0, [%1];" : "=r"(u8) : "r"(window(bytes + l)));
    put((float)s8); put((float)u8);                          // 2, 3: (250 + l) mod 256 signed, unsigned
    unsigned lt, lo, ltu, lt_nan, guard = 0;
    const int a = (int)l - 16;
    const float nan = __int_as_float(0x7fc00000), f = (float)l;
    asm("{ .reg .pred p; setp.lt.s32 p, %1, 0; selp.u32 %0, 1, 0, p; }" : "=r"(lt) : "r"(a));
    asm("{ .reg .pred p; setp.lo.u32 p, %1, 16; selp.u32 %0, 1, 0, p; }" : "=r"(lo) : "r"(a));
    asm("{ .reg .pred p; setp.ltu.f32 p, %1, %2; selp.u32 %0, 1, 0, p; }" : "=r"(ltu) : "f"(l % 2 ? nan : f), "f"(8.f));
    asm("{ .reg .pred p; setp.lt.f32 p, %1, %2; selp.u32 %0, 1, 0, p; }" : "=r"(lt_nan) : "f"(l % 2 ? nan : f), "f"(8.f));
    asm("{ .reg .pred p, q; setp.ge.u32 p|q, %1, 8; @!q mov.u32 %0, 7; }" : "+r"(guard) : "r"(l));
    put(lt); put(lo); put(ltu); put(lt_nan); put(guard);      // 4..8
    unsigned old, won;
    asm volatile("atom.shared.add.u32 %0, [%1], 1;" : "=r"(old) : "r"(window(&counters[0])) : "memory");
    asm volatile("red.shared.min.s32 [%0], %1;" :: "r"(window(&counters[1])), "r"(a) : "memory");
    asm volatile("atom.shared.cas.b32 %0, [%1], 0, %2;" : "=r"(won) : "r"(window(&counters[2])), "r"(l + 1) : "memory");
    unsigned inc;
    asm volatile("atom.shared.inc.u32 %0, [%1], 7;" : "=r"(inc) : "r"(window(&counters[3])) : "memory");
    float *acc = out + 20 * 32;
    asm volatile("red.relaxed.gpu.global.add.f32 [%0], %1;" :: "l"(acc), "f"(0.5f * l) : "memory");
    unsigned prev;
    asm volatile("atom.acq_rel.gpu.global.exch.b32 %0, [%1], %2;" : "=r"(prev) : "l"(acc + 1), "r"(l + 1) : "memory");
    asm volatile("fence.acq_rel.gpu;\n membar.cta;\n prefetch.global.L2 [%0];" :: "l"(x) : "memory");
#if __CUDA_ARCH__ >= 900
    asm volatile("prefetch.tensormap [%0];" :: "l"(x) : "memory");  // a hint, as for a TMA map
#endif
    __syncthreads();
    put(old); put(won == 0 ? 1.f : 0.f); put(inc);            // 9, 10, 11
    put((float)(int)counters[1]); put((float)counters[2]); put((float)counters[3]); // 12, 13, 14
    put(prev == 0 ? 1.f : 0.f);                               // 15: one lane exchanged the zero
    unsigned seen;
    asm volatile("st.release.gpu.global.u32 [%0], %1;" :: "l"(out + 16 * 32 + l), "r"(l * 3) : "memory");
    asm volatile("ld.acquire.gpu.global.u32 %0, [%1];" : "=r"(seen) : "l"(out + 16 * 32 + l) : "memory");
    row = 17;
    put((float)seen);                                         // 17: 3l (16 holds its bits)
    if (l % 2 == 0)                                           // 18: l
        asm volatile("st.volatile.global.v2.u32 [%0], {%1, %2};"
                     :: "l"(out + 18 * 32 + l), "r"(__float_as_uint(l)), "r"(__float_as_uint(l + 1.f)) : "memory");
}
"#;

#[test]
fn inline_memory_instructions_follow_the_isa() {
    let x: Vec<f32> = (0..64).map(|i| 0.25 + i as f32).collect();
    let out = run(
        source(MEMORY),
        "memory",
        32,
        Shape::gemm(32, 32, 2),
        &[x.clone(), vec![0.0; 64]],
    )
    .unwrap();
    let row = |r: usize| &out[r * 32..r * 32 + 32];
    let mut olds: Vec<f32> = row(9).to_vec();
    olds.sort_by(f32::total_cmp);
    assert_eq!(
        olds,
        (0..32).map(|i| i as f32).collect::<Vec<_>>(),
        "atom.add gives every lane a distinct old value"
    );
    assert_eq!(row(10).iter().sum::<f32>(), 1.0, "one cas wins");
    let winner = row(13)[0] - 1.0;
    assert!((0.0..32.0).contains(&winner), "{winner}");
    let mut incs: Vec<f32> = row(11).to_vec();
    incs.sort_by(f32::total_cmp);
    // From 5, wrapping to 0 after 7: 5, 6, 7, 0, 1, ...
    let want: Vec<f32> = {
        let mut v: Vec<f32> = (0..32).map(|i| ((5 + i) % 8) as f32).collect();
        v.sort_by(f32::total_cmp);
        v
    };
    assert_eq!(incs, want, "atom.inc wraps at its operand");
    for l in 0..32 {
        let a = l as i32 - 16;
        let byte = ((250 + l) % 256) as u8;
        assert_eq!(
            row(0)[l],
            x[63 - 2 * l],
            "lane {l}: vector load, store, offset load"
        );
        let guarded = if l % 3 == 0 { -1.0 } else { x[l] };
        assert_eq!(row(1)[l], guarded, "lane {l}: the guarded load");
        assert_eq!(
            row(2)[l],
            f32::from(byte as i8),
            "lane {l}: ld.s8 sign-extends"
        );
        assert_eq!(row(3)[l], f32::from(byte), "lane {l}: ld.u8 zero-extends");
        assert_eq!(
            row(4)[l],
            f32::from(u8::from(a < 0)),
            "lane {l}: setp.lt.s32"
        );
        assert_eq!(
            row(5)[l],
            f32::from(u8::from((a as u32) < 16)),
            "lane {l}: setp.lo.u32"
        );
        let is_nan = l % 2 == 1;
        assert_eq!(
            row(6)[l],
            f32::from(u8::from(is_nan || l < 8)),
            "lane {l}: setp.ltu.f32"
        );
        assert_eq!(
            row(7)[l],
            f32::from(u8::from(!is_nan && l < 8)),
            "lane {l}: setp.lt.f32"
        );
        assert_eq!(
            row(8)[l],
            if l >= 8 { 7.0 } else { 0.0 },
            "lane {l}: @!q, q = !(l >= 8)"
        );
        assert_eq!(row(12)[l], -16.0, "lane {l}: red.min.s32 compares signed");
        assert_eq!(row(14)[l], ((5 + 32) % 8) as f32, "lane {l}: atom.inc");
        assert_eq!(
            row(17)[l],
            (3 * l) as f32,
            "lane {l}: st.release, ld.acquire"
        );
        assert_eq!(row(18)[l], l as f32, "lane {l}: st.volatile.v2");
    }
    let sum: f32 = (0..32).map(|l| 0.5 * l as f32).sum();
    assert_eq!(row(20)[0], sum, "red.add.f32");
    assert_eq!(row(15).iter().sum::<f32>(), 1.0, "one exch finds the zero");
    let last = row(20)[1].to_bits();
    assert!(
        (1..=32).contains(&last),
        "exch leaves one lane's value: {last}"
    );
}

/// Operands a GPU would fault on or misread, one kernel each.
const MEMORY_FAULTS: &str = r#"
extern "C" __global__ void misaligned(const float *x, const float *unused, float *out, int M, int N, int K) {
    float a, b, c, d;
    asm volatile("ld.global.v4.f32 {%0, %1, %2, %3}, [%4];" : "=f"(a), "=f"(b), "=f"(c), "=f"(d) : "l"(x + 2));
    out[threadIdx.x] = a + b + c + d;
}
extern "C" __global__ void shared_as_global(const float *x, const float *unused, float *out, int M, int N, int K) {
    __shared__ float s[32];
    s[threadIdx.x] = 1.f;
    __syncthreads();
    float a;
    asm volatile("ld.global.f32 %0, [%1];" : "=f"(a) : "l"(s + threadIdx.x));
    out[threadIdx.x] = a;
}
extern "C" __global__ void generic_as_shared(const float *x, const float *unused, float *out, int M, int N, int K) {
    __shared__ float s[32];
    s[threadIdx.x] = 1.f;
    __syncthreads();
    float a;
    asm volatile("ld.shared.f32 %0, [%1];" : "=f"(a) : "l"(s + threadIdx.x));
    out[threadIdx.x] = a;
}
"#;

#[test]
fn inline_memory_operands_a_gpu_would_fault_on_fail_the_run() {
    for (entry, want) in [
        // An address in a buffer is named by its place there.
        ("misaligned", "ld.global.v4.f32: address byte "),
        ("shared_as_global", "ld.global.f32: 0x"),
        ("generic_as_shared", "ld.shared.f32: shared address 0x"),
    ] {
        let e = run(
            source(MEMORY_FAULTS),
            entry,
            32,
            Shape::gemm(32, 1, 4),
            &[vec![1.0; 128], vec![0.0; 4]],
        )
        .unwrap_err()
        .to_string();
        assert!(e.contains(want), "{entry}: {e}");
        let why = match entry {
            "misaligned" => "is not 16-byte aligned (a GPU faults: misaligned address)",
            "shared_as_global" => {
                "is in this block's shared memory; .global takes a global address"
            }
            _ => "is not in this block's shared memory",
        };
        assert!(e.contains(why), "{entry}: {e}");
    }
}

/// Row addresses of ldmatrix made by converting pointers past the end of a tile, as tutorial
/// kernels do for the lanes an .x1 or .x2 ignores: converting is arithmetic on a GPU, and
/// only an address an instruction uses must lie in shared memory. `lanes` is 8 for .x1 and
/// 32 for .x4, whose lanes 8-31 use theirs; `global` converts a global pointer.
const STRAY_ADDRESSES: &str = r#"
template <int X, bool Dynamic, bool Global, bool Far = false>
__device__ void rows(const float *x, float *out) {
    __shared__ __align__(16) unsigned short fixed[8][8];
    extern __shared__ __align__(16) unsigned short dynamic[];
    unsigned short (*tile)[8] = Dynamic ? (unsigned short (*)[8])dynamic : fixed;
    const int l = threadIdx.x;
    if (l < 8)
        for (int c = 0; c < 8; ++c) tile[l][c] = (unsigned short)(8 * l + c);
    __syncwarp();
    const void *row = Global ? (const void *)(x + 4 * l) : Far ? (const void *)&tile[512 + l][0] : (const void *)&tile[l][0];
    unsigned a = (unsigned)__cvta_generic_to_shared(row), r[4] = {0, 0, 0, 0};
    if (X == 1) asm volatile("ldmatrix.sync.aligned.m8n8.x1.shared.b16 {%0}, [%1];\n" : "=r"(r[0]) : "r"(a));
    else asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0, %1, %2, %3}, [%4];\n"
                      : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3]) : "r"(a));
    out[l] = (float)(r[0] & 0xFFFF);
}
extern "C" __global__ void x1_static(const float *x, const float *u, float *out, int M, int N, int K) { rows<1, false, false>(x, out); }
extern "C" __global__ void x1_dynamic(const float *x, const float *u, float *out, int M, int N, int K) { rows<1, true, false>(x, out); }
extern "C" __global__ void x4_dynamic(const float *x, const float *u, float *out, int M, int N, int K) { rows<4, true, false>(x, out); }
extern "C" __global__ void x1_global(const float *x, const float *u, float *out, int M, int N, int K) { rows<1, false, true>(x, out); }
extern "C" __global__ void x1_far(const float *x, const float *u, float *out, int M, int N, int K) { rows<1, false, false, true>(x, out); }
"#;

#[test]
fn a_shared_address_is_checked_where_an_instruction_uses_it_not_where_it_is_converted() {
    let data = [vec![1.0; 128], vec![0.0; 4]];
    let run_dyn = |entry: &str| {
        let plan = CudaPlan {
            inputs: vec![Dtype::F32; 2],
            steps: vec![kernel::Step::Kernel(Launch {
                source: source(STRAY_ADDRESSES),
                entry: entry.to_string().into(),
                grid: [1, 1, 1],
                block: [32, 1, 1],
                dynamic_smem: 128,
                args: kernel::gemm_args(32, 1, 4),
            })],
            ..Default::default()
        };
        let dev = SimDevice::new().unwrap();
        let k = PlanKernel::fp32(plan);
        let mut p = dev.prepare(&k, &Shape::gemm(32, 1, 4), &data).unwrap();
        p.run().and_then(|_| p.output())
    };
    // Lanes 8-31 convert pointers up to 24 rows past an 8-row tile; .x1 reads lanes 0-7 alone.
    for entry in ["x1_static", "x1_dynamic"] {
        let out = run_dyn(entry).unwrap();
        // Lane l holds row l / 4's element 2 (l % 4) (the m8n8 fragment layout).
        let want: Vec<f32> = (0..32)
            .map(|l| (8 * (l / 4) + 2 * (l % 4)) as f32)
            .collect();
        assert_eq!(out, want, "{entry}");
    }
    for (entry, why) in [
        (
            "x4_dynamic",
            "bytes past the end of this block's dynamic shared memory (the launch gives it 128 bytes)",
        ),
        (
            "x1_global",
            "from a pointer nowhere near this block's shared memory (a global or local address?)",
        ),
        // 8 KiB on from an 8-row tile: past the end of a static array or of the dynamic
        // buffer, whichever lies nearer in the host's memory.
        ("x1_far", "bytes past the end of "),
    ] {
        let e = run_dyn(entry).unwrap_err().to_string();
        assert!(
            e.contains("ldmatrix: shared address 0x")
                && e.contains("is not in this block's shared memory: it was converted")
                && e.contains(why),
            "{entry}: {e}"
        );
    }
}

// ---- Arithmetic and conversions ----

/// Arithmetic as attention and quantized kernels write it, each row one instruction (or two,
/// compared) on per-lane operands: the expected values are computed here from the PTX ISA's
/// definitions. out[row * 32 + lane] as bits (`put`) or values; x holds 64 inputs.
const ARITH: &str = r#"
#include <cuda_bf16.h>
#include <cuda_fp16.h>

extern "C" __global__ void arith(const float *x, const float *unused, float *out, int M, int N, int K) {
    const unsigned l = threadIdx.x;
    int row = 0;
    auto put = [&](unsigned bits) { out[row++ * 32 + l] = __uint_as_float(bits); };
    const float a = x[l], b = x[32 + l], nan = __int_as_float(0x7fc00000);
    float f;
    unsigned u, v;
    asm("ex2.approx.ftz.f32 %0, %1;" : "=f"(f) : "f"(a)); put(__float_as_uint(f));              // 0
    asm("fma.rn.f32 %0, %1, %2, %3;" : "=f"(f) : "f"(a), "f"(b), "f"(a * 0.5f)); put(__float_as_uint(f)); // 1
    asm("max.f32 %0, %1, %2;" : "=f"(f) : "f"(l % 2 ? nan : a), "f"(b)); put(__float_as_uint(f)); // 2
    asm("max.NaN.f32 %0, %1, %2;" : "=f"(f) : "f"(l % 2 ? nan : a), "f"(b)); put(__float_as_uint(f)); // 3
    asm("rcp.approx.ftz.f32 %0, %1;" : "=f"(f) : "f"(b)); put(__float_as_uint(f));             // 4
    asm("add.sat.s32 %0, %1, %2;" : "=r"(u) : "r"(0x7ffffff0 + l % 16), "r"(8)); put(u);        // 5
    asm("mul.hi.u32 %0, %1, %2;" : "=r"(u) : "r"(0x9e3779b9u * (l + 1)), "r"(0x85ebca6bu)); put(u); // 6
    unsigned long long w;
    asm("mul.wide.s32 %0, %1, %2;" : "=l"(w) : "r"((int)l - 16), "r"(0x7fffffff)); put((unsigned)w); put((unsigned)(w >> 32)); // 7, 8
    asm("mad.lo.s32 %0, %1, %2, %3;" : "=r"(u) : "r"(l), "r"(-7), "r"(100)); put(u);           // 9
    const unsigned p = 0x9e3779b9u * (l + 3), q = 0x85ebca6bu ^ (l << 7), r = 0xc2b2ae35u + l;
    asm("lop3.b32 %0, %1, %2, %3, 0xE8;" : "=r"(u) : "r"(p), "r"(q), "r"(r)); put(u);           // 10: majority
    asm("prmt.b32 %0, %1, %2, %3;" : "=r"(u) : "r"(p), "r"(q), "r"(0x1f84u + 0x1111u * (l % 8))); put(u); // 11
    asm("shf.l.wrap.b32 %0, %1, %2, %3;" : "=r"(u) : "r"(p), "r"(q), "r"(l + 20)); put(u);     // 12
    asm("shf.r.clamp.b32 %0, %1, %2, %3;" : "=r"(u) : "r"(p), "r"(q), "r"(l + 20)); put(u);    // 13
    asm("bfe.s32 %0, %1, %2, %3;" : "=r"(u) : "r"(p), "r"(l), "r"(5)); put(u);                 // 14
    asm("bfe.u32 %0, %1, %2, %3;" : "=r"(u) : "r"(p), "r"(l), "r"(5)); put(u);                 // 15
    asm("shr.s32 %0, %1, %2;" : "=r"(u) : "r"(p), "r"(l + 16)); put(u);                        // 16
    asm("shl.b32 %0, %1, %2;" : "=r"(u) : "r"(p), "r"(l + 16)); put(u);                        // 17
    asm("popc.b32 %0, %1;" : "=r"(u) : "r"(p)); put(u);                                        // 18
    asm("clz.b32 %0, %1;" : "=r"(u) : "r"(p >> l)); put(u);                                    // 19
    asm("brev.b32 %0, %1;" : "=r"(u) : "r"(p)); put(u);                                        // 20
    asm("cvt.rn.f16x2.f32 %0, %1, %2;" : "=r"(u) : "f"(a), "f"(b));
    __half2 h2 = __floats2half2_rn(b, a);
    memcpy(&v, &h2, 4); put(u == v);                                                            // 21
    asm("cvt.rn.relu.bf16x2.f32 %0, %1, %2;" : "=r"(u) : "f"(a), "f"(-b));
    __nv_bfloat162 g2 = __floats2bfloat162_rn(-b > 0.f ? -b : 0.f, a > 0.f ? a : 0.f);
    memcpy(&v, &g2, 4); put(u == v);                                                            // 22
    const float c = (float)((int)l - 16) * 0.75f;
    int i;
    asm("cvt.rni.s32.f32 %0, %1;" : "=r"(i) : "f"(c)); put(i);                                 // 23
    asm("cvt.rmi.s32.f32 %0, %1;" : "=r"(i) : "f"(c)); put(i);                                 // 24
    asm("cvt.rzi.s32.f32 %0, %1;" : "=r"(i) : "f"(l % 4 == 0 ? nan : c * 1e9f)); put(i);       // 25
    unsigned short h;
    asm("cvt.rn.f16.f32 %0, %1;" : "=h"(h) : "f"(a));
    asm("cvt.f32.f16 %0, %1;" : "=f"(f) : "h"(h)); put(__float_as_uint(f) == __float_as_uint(__half2float(__float2half_rn(a)))); // 26
    asm("cvt.rn.f32.s32 %0, %1;" : "=f"(f) : "r"(16777217 + (int)l)); put(__float_as_uint(f)); // 27
    asm("cvt.sat.u8.s32 %0, %1;" : "=r"(u) : "r"((int)l * 20 - 100)); put(u);                  // 28
    asm("{ .reg .pred p, q; setp.lt.u32 p, %1, 20; setp.ge.u32 q, %1, 10; and.pred p, p, q; not.pred q, p;"
        " selp.u32 %0, 1, 0, q; }" : "=r"(u) : "r"(l)); put(u);                                 // 29: !(10 <= l < 20)
    asm("abs.s32 %0, %1;" : "=r"(i) : "r"((int)l - 16)); put(i);                                // 30
    unsigned short m16, w16 = (unsigned short)(65535 - l);
    asm("mul.lo.u16 %0, %1, %1;" : "=h"(m16) : "h"(w16)); put(m16);                            // 31
}
"#;

#[test]
fn inline_arithmetic_and_conversions_follow_the_isa() {
    let x: Vec<f32> = (0..64)
        .map(|i| {
            let t = (i % 32) as f32;
            if i < 32 {
                t * 0.37 - 5.0
            } else {
                0.5 + t * 1.25
            }
        })
        .collect();
    let out = run(
        source(ARITH),
        "arith",
        32,
        Shape::gemm(32, 32, 2),
        &[x.clone(), vec![0.0; 64]],
    )
    .unwrap();
    let bits = |r: usize, l: usize| out[r * 32 + l].to_bits();
    for l in 0..32u32 {
        let i = l as usize;
        let (a, b) = (x[i], x[32 + i]);
        let e = a.exp2();
        let got = f32::from_bits(bits(0, i));
        assert!(
            (got - e).abs() <= 1e-6 * e,
            "lane {l}: ex2 {got} against {e}"
        );
        assert_eq!(
            bits(1, i),
            a.mul_add(b, a * 0.5).to_bits(),
            "lane {l}: fma.rn"
        );
        let other = if l % 2 == 1 { b } else { a.max(b) };
        assert_eq!(
            bits(2, i),
            other.to_bits(),
            "lane {l}: max gives the number"
        );
        if l % 2 == 1 {
            assert!(f32::from_bits(bits(3, i)).is_nan(), "lane {l}: max.NaN");
        }
        assert_eq!(bits(4, i), (1.0 / b).to_bits(), "lane {l}: rcp");
        assert_eq!(
            bits(5, i),
            (0x7fff_fff0 + l % 16 + 8).min(0x7fff_ffff),
            "lane {l}: add.sat"
        );
        let hi = ((u64::from(0x9e37_79b9u32.wrapping_mul(l + 1)) * 0x85eb_ca6b) >> 32) as u32;
        assert_eq!(bits(6, i), hi, "lane {l}: mul.hi.u32");
        let wide = (i64::from(l as i32 - 16) * 0x7fff_ffff) as u64;
        assert_eq!(
            [bits(7, i), bits(8, i)],
            [wide as u32, (wide >> 32) as u32],
            "lane {l}: mul.wide.s32"
        );
        assert_eq!(bits(9, i), (l as i32 * -7 + 100) as u32, "lane {l}: mad.lo");
        let (p, q, r) = (
            0x9e37_79b9u32.wrapping_mul(l + 3),
            0x85eb_ca6bu32 ^ (l << 7),
            0xc2b2_ae35u32.wrapping_add(l),
        );
        assert_eq!(
            bits(10, i),
            (p & q) | (p & r) | (q & r),
            "lane {l}: lop3 0xE8"
        );
        let sel = 0x1f84u32 + 0x1111 * (l % 8);
        let both = (u64::from(q) << 32) | u64::from(p);
        let prmt = (0..4).fold(0u32, |d, k| {
            let s = (sel >> (4 * k)) & 0xf;
            let mut byte = ((both >> (8 * (s & 7))) & 0xff) as u32;
            if s & 8 != 0 {
                byte = if byte & 0x80 != 0 { 0xff } else { 0 };
            }
            d | (byte << (8 * k))
        });
        assert_eq!(bits(11, i), prmt, "lane {l}: prmt");
        let n = (l + 20) & 31;
        assert_eq!(
            bits(12, i),
            ((both << n) >> 32) as u32,
            "lane {l}: shf.l.wrap"
        );
        let n = (l + 20).min(32);
        assert_eq!(bits(13, i), (both >> n) as u32, "lane {l}: shf.r.clamp");
        let field = if l < 32 {
            (u64::from(p) >> l) & 0x1f
        } else {
            0
        };
        let top = (l + 4).min(31);
        let sign = (p >> top) & 1;
        let sext = (0..32).fold(0u32, |d, k| {
            let bit = if k < 5 && l + k <= 31 {
                (p >> (l + k)) & 1
            } else {
                sign
            };
            d | (bit << k)
        });
        assert_eq!(bits(14, i), sext, "lane {l}: bfe.s32");
        let zext = if l + 5 <= 32 { field as u32 } else { p >> l };
        assert_eq!(bits(15, i), zext, "lane {l}: bfe.u32");
        let shr = if l + 16 >= 32 {
            ((p as i32) >> 31) as u32
        } else {
            ((p as i32) >> (l + 16)) as u32
        };
        assert_eq!(bits(16, i), shr, "lane {l}: shr.s32");
        let shl = if l + 16 >= 32 { 0 } else { p << (l + 16) };
        assert_eq!(bits(17, i), shl, "lane {l}: shl.b32");
        assert_eq!(bits(18, i), p.count_ones(), "lane {l}: popc");
        assert_eq!(bits(19, i), (p >> l).leading_zeros(), "lane {l}: clz");
        assert_eq!(bits(20, i), p.reverse_bits(), "lane {l}: brev");
        assert_eq!(bits(21, i), 1, "lane {l}: cvt.rn.f16x2.f32 packs a above b");
        assert_eq!(bits(22, i), 1, "lane {l}: cvt.rn.relu.bf16x2.f32");
        let c = (l as i32 - 16) as f32 * 0.75;
        assert_eq!(
            bits(23, i) as i32,
            c.round_ties_even() as i32,
            "lane {l}: cvt.rni"
        );
        assert_eq!(bits(24, i) as i32, c.floor() as i32, "lane {l}: cvt.rmi");
        let rzi = if l % 4 == 0 { 0 } else { (c * 1e9) as i32 };
        assert_eq!(
            bits(25, i) as i32,
            rzi,
            "lane {l}: cvt.rzi saturates, NaN to 0"
        );
        assert_eq!(bits(26, i), 1, "lane {l}: cvt f16 and back");
        assert_eq!(
            bits(27, i),
            ((16_777_217 + l as i32) as f32).to_bits(),
            "lane {l}: cvt.rn.f32.s32"
        );
        assert_eq!(
            bits(28, i),
            (l as i32 * 20 - 100).clamp(0, 255) as u32,
            "lane {l}: cvt.sat.u8"
        );
        assert_eq!(
            bits(29, i),
            u32::from(!(10..20).contains(&l)),
            "lane {l}: and.pred, not.pred"
        );
        assert_eq!(
            bits(30, i),
            (l as i32 - 16).unsigned_abs(),
            "lane {l}: abs.s32"
        );
        let w = 65535 - l;
        assert_eq!(bits(31, i), (w * w) & 0xffff, "lane {l}: mul.lo.u16");
    }
}

// ---- Conditional directives inside a statement ----

/// CUTLASS's guarded 16-byte load as arch/memory.h writes it, the L2 prefetch hint chosen by
/// `#if` in the middle of the template; with `#define BROKEN` on the line above it, line 23
/// refers to something undeclared.
const CONDITIONAL: &str = r#"
template <typename AccessType>
__device__ void global_load(AccessType &D, void const *ptr, bool pred_guard) {
    uint4 &data = reinterpret_cast<uint4 &>(D);
    asm volatile(
        "{\n"
        "  .reg .pred p;\n"
        "  setp.ne.b32 p, %5, 0;\n"
        "  mov.b32 %0, %6;\n"
        "  mov.b32 %1, %7;\n"
        "  mov.b32 %2, %8;\n"
        "  mov.b32 %3, %9;\n"
#if CUTLASS_ENABLE_L2_PREFETCH
        "  @p ld.global.L2::128B.v4.u32 {%0, %1, %2, %3}, [%4];\n"
#else
        "  @p ld.global.v4.u32 {%0, %1, %2, %3}, [%4];\n"
#endif
        "}\n"
        : "=r"(data.x), "=r"(data.y), "=r"(data.z), "=r"(data.w)
        : "l"(ptr), "r"((int)pred_guard), "r"(data.x), "r"(data.y), "r"(data.z), "r"(data.w));
#ifdef BROKEN
    int after = undeclared_after_the_statement;
#endif
}

extern "C" __global__ void guarded(const float *x, const float *unused, float *out, int M, int N, int K) {
    const unsigned l = threadIdx.x;
    float4 v = {7.f, 7.f, 7.f, 7.f};
    global_load(v, x + 4 * l, l < 12);
    out[4 * l] = v.x; out[4 * l + 1] = v.y; out[4 * l + 2] = v.z; out[4 * l + 3] = v.w;
}
"#;

#[test]
fn an_if_inside_a_statement_runs_the_branch_the_preprocessor_picks() {
    let x: Vec<f32> = (0..128).map(|i| 0.5 + i as f32).collect();
    for head in ["", "#define CUTLASS_ENABLE_L2_PREFETCH 1\n"] {
        let code: &'static str = Box::leak(format!("{head}{CONDITIONAL}").into_boxed_str());
        let out = run(
            source(code),
            "guarded",
            32,
            Shape::gemm(32, 4, 4),
            &[x.clone(), vec![0.0; 16]],
        )
        .unwrap();
        for (i, &o) in out.iter().enumerate() {
            let want = if i < 48 { x[i] } else { 7.0 };
            assert_eq!(o, want, "{head:?} element {i}");
        }
    }
    // The lines after the statement keep their numbers: an error on line 23 says 23.
    let broken: &'static str = Box::leak(format!("#define BROKEN\n{CONDITIONAL}").into_boxed_str());
    let e = run(
        source(broken),
        "guarded",
        32,
        Shape::gemm(32, 4, 4),
        &[x, vec![0.0; 16]],
    )
    .unwrap_err()
    .to_string();
    assert!(
        e.contains("inline_ptx.cu:23:") && e.contains("undeclared_after_the_statement"),
        "{e}"
    );
}

// ---- Refused ----

/// Each statement the simulator does not run fails the launch that reaches it as not
/// simulated, naming the instruction, its line and why; the plan itself is not refused, so a
/// helper no kernel calls costs nothing.
#[test]
fn inline_ptx_the_simulator_does_not_know_is_refused_naming_it() {
    const REFUSED: [(&str, &str, usize, &str); 8] = [
        (
            "extern \"C\" __global__ void k(const float *A, const float *B, float *C, int M, int N, int K) {\n\
             float d[8] = {};\n\
             unsigned a = 0;\n\
             asm volatile(\"mma.sync.aligned.m8n8k4.row.col.f32.f16.f16.f32 {%0,%1,%2,%3,%4,%5,%6,%7}, {%8,%8}, {%8,%8}, {%0,%1,%2,%3,%4,%5,%6,%7};\"\n\
             : \"+f\"(d[0]), \"+f\"(d[1]), \"+f\"(d[2]), \"+f\"(d[3]), \"+f\"(d[4]), \"+f\"(d[5]), \"+f\"(d[6]), \"+f\"(d[7]) : \"r\"(a));\n\
             C[0] = d[0];\n}",
            "mma.sync.aligned.m8n8k4.row.col.f32.f16.f16.f32",
            4,
            "this shape or type of mma is not emulated",
        ),
        (
            "extern \"C\" __global__ void k(const float *A, const float *B, float *C, int M, int N, int K) {\n\
             float d[4] = {};\n\
             unsigned a = 0;\n\
             asm volatile(\"mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f16 {%0,%1,%2,%3}, {%4,%4,%4,%4}, {%4,%4}, {%4,%4};\"\n\
             : \"=f\"(d[0]), \"=f\"(d[1]), \"=f\"(d[2]), \"=f\"(d[3]) : \"r\"(a));\n\
             C[0] = d[0];\n}",
            "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f16",
            4,
            "this shape or type of mma is not emulated",
        ),
        (
            "extern \"C\" __global__ void k(const float *A, const float *B, float *C, int M, int N, int K) {\n\
             asm volatile(\"red.global.add.noftz.bf16x2 [%0], %1;\" :: \"l\"(C), \"r\"(0x3f803f80u));\n}",
            "red.global.add.noftz.bf16x2",
            2,
            ".noftz is not emulated",
        ),
        (
            "extern \"C\" __global__ void k(const float *A, const float *B, float *C, int M, int N, int K) {\n\
             unsigned long long r;\n\
             asm volatile(\"ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0, %0, %0, %0}, [%1];\" : \"=l\"(r) : \"r\"(M));\n\
             C[0] = r;\n}",
            "ldmatrix.sync.aligned.m8n8.x4.shared.b16",
            3,
            "a destination register is a 64-bit operand (%0, constraint \"=l\"); the instruction writes 32 bits",
        ),
        (
            "extern \"C\" __global__ void k(const float *A, const float *B, float *C, int M, int N, int K) {\n\
             asm volatile(\"{ .reg .pred p; setp.ne.u32 p, %0, 0; @p ret; st.global.f32 [%1], %2; }\" :: \"r\"(M), \"l\"(C), \"f\"(1.0f));\n}",
            "ret",
            2,
            "calls, returns and indirect branches are not emulated",
        ),
        (
            "extern \"C\" __global__ void k(const float *A, const float *B, float *C, int M, int N, int K) {\n\
             float f;\n\
             asm volatile(\"atom.global.min.f32 %0, [%1], %2;\" : \"=f\"(f) : \"l\"(C), \"f\"(1.0f));\n\
             C[0] = f;\n}",
            "atom.global.min.f32",
            3,
            "this operation on .f32 is not emulated (atom with .u32, .s32, .u64, .s64)",
        ),
        (
            "extern \"C\" __global__ void k(const float *A, const float *B, float *C, int M, int N, int K) {\n\
             unsigned u;\n\
             asm volatile(\"ld.local.u32 %0, [%1];\" : \"=r\"(u) : \"l\"(C));\n\
             C[0] = u;\n}",
            "ld.local.u32",
            3,
            "the .local state space is not emulated",
        ),
        (
            "extern \"C\" __global__ void k(const float *A, const float *B, float *C, int M, int N, int K) {\n\
             float f;\n\
             asm volatile(\"add.rz.f32 %0, %1, %2;\" : \"=f\"(f) : \"f\"(A[0]), \"f\"(A[1]));\n\
             C[0] = f;\n}",
            "add.rz.f32",
            3,
            ".rz: only round-to-nearest-even (.rn) is emulated",
        ),
    ];
    let dev = SimDevice::new().unwrap();
    for (code, instruction, line, why) in REFUSED {
        let plan = CudaPlan::single(
            2,
            Launch {
                source: CudaSource::embedded("user/refused.cu", code),
                entry: "k".into(),
                grid: [1, 1, 1],
                block: [32, 1, 1],
                dynamic_smem: 0,
                args: kernel::gemm_args(1, 1, 1),
            },
        );
        let k = PlanKernel::fp32(plan);
        assert!(dev.can_run(&k).is_ok(), "{instruction}");
        let shape = Shape::gemm(1, 1, 1);
        let data = vec![vec![1.0f32], vec![1.0f32]];
        let mut p = dev.prepare(&k, &shape, &data).unwrap();
        let msg = match p.run() {
            Err(DeviceError::Unsupported(u)) => u.0,
            other => panic!("{instruction}: {:?}", other.map(|_| ())),
        };
        let head = format!("not simulated: user/refused.cu:{line}: inline PTX `{instruction}`: ");
        assert!(msg.starts_with(&head) && msg.contains(why), "{msg}");
    }
}

// ---- NVRTC ----

#[test]
fn nvrtc_compiles_the_inline_ptx_for_sm80_and_sm90() {
    if let Err(e) = nvrtc::version() {
        panic!("{e}\nThis test needs NVRTC: run tools/install-cuda-tools.sh first.");
    }
    let sources = [
        (source(LDMATRIX), 6),
        (mma_source(false, false), 3),
        (mma_source(true, false), 3),
        (mma_source(false, true), 3),
        (wmma_source(false, false), 1),
        (wmma_source(true, false), 1),
        (wmma_source(false, true), 1),
        (source(ASYNC), 1),
        (source(MISC), 1),
        (source(MEMORY), 1),
        (source(MEMORY_FAULTS), 3),
        (source(STRAY_ADDRESSES), 5),
        (source(ARITH), 1),
        (source(CONDITIONAL), 1),
    ];
    for arch in ["sm_80", "sm_90"] {
        for (src, entries) in &sources {
            let c = nvrtc::compile(src, arch).unwrap_or_else(|e| panic!("{arch}: {e}"));
            assert_eq!(c.resources.len(), *entries, "{arch}: {:?}", c.resources);
        }
    }
}
