//! Inline PTX in kernel files, as public tensor-core tutorials write it (`asm volatile(...)`
//! with register constraints), run by the simulator through the same emulation as
//! `lab/ptx.h`: every recognised form checked against the PTX ISA's documented layouts and
//! semantics (ldmatrix x1/x2/x4 and .trans; mma.sync m16n8k16 f16/bf16 with f32 or f16
//! accumulators and m16n8k8 tf32; cp.async ca/cg with src-size zero-fill and its groups;
//! shfl.sync; the cvta idiom, mov, cvt and selp), anything else refused naming the
//! instruction, its file and line, and NVRTC compiling the same sources for sm_80 and sm_90.

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
    // TF32: A 16 x 8, B 8 x 8.
    let (a, b) = (ints(128, 3), ints(64, 4));
    let want: Vec<f32> = gemm_f64((16, 8, 8), &a, &b, |x| x)
        .iter()
        .enumerate()
        .map(|(i, v)| (v + c(i)) as f32)
        .collect();
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
    asm volatile("cp.async.ca.shared.global [%0], [%1], 16, 0;\n" ::"r"(base + 48), "l"(src + 12));  // zeros
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
        assert_eq!(
            &o[7..15],
            &[x[8], x[9], 0.0, 0.0, 0.0, 0.0, 0.0, 0.0],
            "thread {t}: wait_all and the src-size zero-fill"
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
}
"#;

#[test]
fn inline_shfl_mov_cvt_and_selp_follow_the_isa() {
    let out = run(
        source(MISC),
        "misc",
        32,
        Shape::gemm(32, 16, 1),
        &[vec![0.0; 32], vec![0.0; 16]],
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
    }
}

// ---- Refused ----

#[test]
fn inline_ptx_the_simulator_does_not_know_is_refused_naming_it() {
    const REFUSED: [(&str, &str, usize, &str); 5] = [
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
             asm volatile(\"red.global.add.f32 [%0], %1;\" :: \"l\"(C), \"f\"(1.0f));\n}",
            "red.global.add.f32",
            2,
            "not emulated",
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
             asm volatile(\"{ .reg .pred p; setp.ne.u32 p, %0, 0; @p st.global.f32 [%1], %2; }\" :: \"r\"(M), \"l\"(C), \"f\"(1.0f));\n}",
            "setp.ne.u32",
            2,
            "not emulated",
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
        let msg = dev
            .can_run(&PlanKernel::fp32(plan))
            .unwrap_err()
            .to_string();
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
        (mma_source(false, false), 2),
        (mma_source(true, false), 2),
        (mma_source(false, true), 2),
        (source(ASYNC), 1),
        (source(MISC), 1),
    ];
    for arch in ["sm_80", "sm_90"] {
        for (src, entries) in &sources {
            let c = nvrtc::compile(src, arch).unwrap_or_else(|e| panic!("{arch}: {e}"));
            assert_eq!(c.resources.len(), *entries, "{arch}: {:?}", c.resources);
        }
    }
}
