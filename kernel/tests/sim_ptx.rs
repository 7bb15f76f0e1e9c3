//! `lab/ptx.h` against the PTX ISA: the simulator's emulation of cp.async, ldmatrix and
//! mma.sync checked lane by lane against the documented fragment layouts, cp.async's group
//! semantics, misuse it must report, planted bugs (a wrong lane mapping, a wait that is one
//! group short) that must fail against a host reference, and NVRTC compiling every
//! instruction for sm_80 and sm_90.

use kernel::cuda::nvrtc;
use kernel::sim::SimDevice;
use kernel::testing::{PlanKernel, gemm_f64, relative_error};
use kernel::{Arg, Buf, CudaPlan, CudaSource, DeviceError, Dtype, Executor, Launch, Shape};

fn source(code: &'static str) -> CudaSource {
    CudaSource::embedded("tests/ptx.cu", code)
}

/// One launch of `entry` on a `block`-thread 1-D block.
fn launch(src: CudaSource, entry: &str, grid: [u32; 3], block: u32, args: Vec<Arg>) -> Launch {
    Launch {
        source: src,
        entry: entry.to_string().into(),
        grid,
        block: [block, 1, 1],
        dynamic_smem: 0,
        args,
    }
}

/// Runs `l` in the simulator on a GEMM shape (its inputs A and B of type `input`, its output
/// C) and returns C.
fn run(l: Launch, input: Dtype, shape: Shape, data: &[Vec<f32>]) -> Result<Vec<f32>, DeviceError> {
    let plan = CudaPlan {
        inputs: vec![input; 2],
        steps: vec![kernel::Step::Kernel(l)],
        ..Default::default()
    };
    let dev = SimDevice::new()?;
    let k = PlanKernel::fp32(plan);
    let mut p = dev.prepare(&k, &shape, data)?;
    p.run()?;
    p.output()
}

fn gemm_args(m: usize, n: usize, k: usize) -> Vec<Arg> {
    kernel::gemm_args(m, n, k)
}

/// Seeded values in [-1, 1), or small integers in [-4, 4] (exact in FP16, BF16 and in every
/// FP32 sum of a 16-deep product, so results can be compared bit for bit).
fn values(len: usize, seed: u64, integers: bool) -> Vec<f32> {
    let mut s = seed;
    (0..len)
        .map(|_| {
            s = s
                .wrapping_mul(6_364_136_223_846_793_005)
                .wrapping_add(1_442_695_040_888_963_407);
            let u = (s >> 40) as f32 / (1u64 << 24) as f32;
            if integers {
                (u * 9.0).floor() - 4.0
            } else {
                u * 2.0 - 1.0
            }
        })
        .collect()
}

fn tf32(v: f32) -> f32 {
    f32::from_bits((v.to_bits() + 0x1000) & !0x1FFF)
}

fn f16(v: f32) -> f32 {
    half::f16::from_f32(v).to_f32()
}

// ---- ldmatrix ----

/// A 32 x 8 tile of 16-bit codes (row j, column c holds 8j + c). Lane l points at row
/// perm(l), so matrix i's row r is tile row perm(8i + r); lanes past the last matrix give a
/// misaligned address, which ldmatrix never reads. out[(lane * 4 + reg) * 2 + half].
const LDMATRIX: &str = r#"
#include "lab/ptx.h"
__device__ int perm(int l) { return (l * 7 + 3) % 32; }
template <int N, bool T>
__device__ void load(float *out) {
    __shared__ __align__(16) unsigned short tile[32][8];
    const int l = threadIdx.x;
    for (int c = 0; c < 8; ++c) tile[l][c] = (unsigned short)(8 * l + c);
    __syncwarp();
    ptx::smem_t a = ptx::smem_addr(&tile[perm(l)][0]);
    if (l >= 8 * N) a += 2;
    unsigned r[N];
    if constexpr (N == 1) { if constexpr (T) ptx::ldmatrix_x1_trans(r, a); else ptx::ldmatrix_x1(r, a); }
    if constexpr (N == 2) { if constexpr (T) ptx::ldmatrix_x2_trans(r, a); else ptx::ldmatrix_x2(r, a); }
    if constexpr (N == 4) { if constexpr (T) ptx::ldmatrix_x4_trans(r, a); else ptx::ldmatrix_x4(r, a); }
    for (int i = 0; i < N; ++i) {
        out[(l * 4 + i) * 2] = (float)(r[i] & 0xFFFF);
        out[(l * 4 + i) * 2 + 1] = (float)(r[i] >> 16);
    }
}
extern "C" __global__ void ld_x1(float *out) { load<1, false>(out); }
extern "C" __global__ void ld_x2(float *out) { load<2, false>(out); }
extern "C" __global__ void ld_x4(float *out) { load<4, false>(out); }
extern "C" __global__ void ld_x1_trans(float *out) { load<1, true>(out); }
extern "C" __global__ void ld_x2_trans(float *out) { load<2, true>(out); }
extern "C" __global__ void ld_x4_trans(float *out) { load<4, true>(out); }
"#;

#[test]
fn ldmatrix_gives_each_lane_the_documented_elements() {
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
        let out = run(
            launch(
                source(LDMATRIX),
                &entry,
                [1, 1, 1],
                32,
                vec![Arg::Ptr(Buf::Output)],
            ),
            Dtype::F32,
            shape,
            &data,
        )
        .unwrap();
        // Element (r, c) of matrix i: tile row perm(8i + r), column c.
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

/// One warp: D = A * B + C with every register filled from global memory by the documented
/// layout; C[r][c] = 100 r + c. A 16x16 and B 16x8 (K x N) row-major; D 16x8 row-major.
/// SWAP_KHALF plants a1 <-> a2 (rows g + 8 and columns 8.. confused); B_ROWMAJOR reads B as
/// if the fragment were row-major (B[g][2t] instead of B[2t][g]).
const MMA16: &str = r#"
#include "lab/ptx.h"
template <bool BF>
__device__ void mma16(const float *A, const float *B, float *D) {
    const int l = threadIdx.x, g = l / 4, t = l % 4;
    auto pk = [](float lo, float hi) { return BF ? ptx::pack_bf162(lo, hi) : ptx::pack_half2(lo, hi); };
    unsigned a[4] = {pk(A[g * 16 + 2 * t], A[g * 16 + 2 * t + 1]),
                     pk(A[(g + 8) * 16 + 2 * t], A[(g + 8) * 16 + 2 * t + 1]),
                     pk(A[g * 16 + 2 * t + 8], A[g * 16 + 2 * t + 9]),
                     pk(A[(g + 8) * 16 + 2 * t + 8], A[(g + 8) * 16 + 2 * t + 9])};
#if SWAP_KHALF
    unsigned s = a[1]; a[1] = a[2]; a[2] = s;
#endif
#if B_ROWMAJOR
    unsigned b[2] = {pk(B[g * 8 + 2 * t], B[g * 8 + 2 * t + 1]), pk(B[(g + 8) * 8 + 2 * t], B[(g + 8) * 8 + 2 * t + 1])};
#else
    unsigned b[2] = {pk(B[2 * t * 8 + g], B[(2 * t + 1) * 8 + g]), pk(B[(2 * t + 8) * 8 + g], B[(2 * t + 9) * 8 + g])};
#endif
    float c[4] = {100.0f * g + 2 * t, 100.0f * g + 2 * t + 1, 100.0f * (g + 8) + 2 * t, 100.0f * (g + 8) + 2 * t + 1};
    float d[4];
    if (BF) ptx::mma_m16n8k16_bf16(d, a, b, c);
    else ptx::mma_m16n8k16_f16(d, a, b, c);
    D[g * 8 + 2 * t] = d[0];
    D[g * 8 + 2 * t + 1] = d[1];
    D[(g + 8) * 8 + 2 * t] = d[2];
    D[(g + 8) * 8 + 2 * t + 1] = d[3];
}
extern "C" __global__ void mma_f16(const float *A, const float *B, float *D, int M, int N, int K) { mma16<false>(A, B, D); }
extern "C" __global__ void mma_bf16(const float *A, const float *B, float *D, int M, int N, int K) { mma16<true>(A, B, D); }
// FP16 accumulators: c0 = C[g][2t..2t+1], c1 = C[g+8][2t..2t+1], the same for D.
extern "C" __global__ void mma_f16_acc(const float *A, const float *B, float *D, int M, int N, int K) {
    const int l = threadIdx.x, g = l / 4, t = l % 4;
    auto pk = [](float lo, float hi) { return ptx::pack_half2(lo, hi); };
    unsigned a[4] = {pk(A[g * 16 + 2 * t], A[g * 16 + 2 * t + 1]), pk(A[(g + 8) * 16 + 2 * t], A[(g + 8) * 16 + 2 * t + 1]),
                     pk(A[g * 16 + 2 * t + 8], A[g * 16 + 2 * t + 9]), pk(A[(g + 8) * 16 + 2 * t + 8], A[(g + 8) * 16 + 2 * t + 9])};
    unsigned b[2] = {pk(B[2 * t * 8 + g], B[(2 * t + 1) * 8 + g]), pk(B[(2 * t + 8) * 8 + g], B[(2 * t + 9) * 8 + g])};
    unsigned c[2] = {pk(100.0f * g + 2 * t, 100.0f * g + 2 * t + 1), pk(100.0f * (g + 8) + 2 * t, 100.0f * (g + 8) + 2 * t + 1)};
    unsigned d[2];
    ptx::mma_m16n8k16_f16_f16(d, a, b, c);
    for (int r = 0; r < 2; ++r)
        for (int h = 0; h < 2; ++h)
            D[(g + 8 * r) * 8 + 2 * t + h] = __half2float(__ushort_as_half((unsigned short)(d[r] >> (16 * h))));
}
"#;

fn mma16(entry: &str, bug: Option<&str>, a: &[f32], b: &[f32]) -> Vec<f32> {
    let mut src = source(MMA16)
        .define("SWAP_KHALF", 0)
        .define("B_ROWMAJOR", 0);
    if let Some(bug) = bug {
        src.defines.retain(|(k, _)| k != bug);
        src = src.define(bug.to_string(), 1);
    }
    let shape = Shape::gemm(16, 8, 16);
    run(
        launch(src, entry, [1, 1, 1], 32, gemm_args(16, 8, 16)),
        Dtype::F32,
        shape,
        &[a.to_vec(), b.to_vec()],
    )
    .unwrap()
}

/// A * B + C with C[r][c] = 100 r + c, in f64.
fn mma_ref(a: &[f32], b: &[f32], round: impl Fn(f32) -> f32) -> Vec<f64> {
    let mut d = gemm_f64((16, 8, 16), a, b, round);
    for (i, v) in d.iter_mut().enumerate() {
        *v += (100 * (i / 8) + i % 8) as f64;
    }
    d
}

#[test]
fn mma_m16n8k16_f16_and_bf16_follow_the_fragment_layouts_exactly() {
    let (a, b) = (values(256, 1, true), values(128, 2, true));
    let want: Vec<f32> = mma_ref(&a, &b, |x| x).iter().map(|&v| v as f32).collect();
    for entry in ["mma_f16", "mma_bf16", "mma_f16_acc"] {
        assert_eq!(mma16(entry, None, &a, &b), want, "{entry}");
    }
    // One-hot operands pin single elements: A = e(r, k), B = e(k, c) puts 1 at D(r, c).
    for (r, k, c) in [(0, 0, 0), (9, 3, 5), (15, 15, 7), (4, 8, 2), (11, 12, 1)] {
        let mut a = vec![0.0; 256];
        let mut b = vec![0.0; 128];
        a[r * 16 + k] = 1.0;
        b[k * 8 + c] = 1.0;
        let got = mma16("mma_f16", None, &a, &b);
        for (i, &v) in got.iter().enumerate() {
            let base = (100 * (i / 8) + i % 8) as f32;
            let one = if i == r * 8 + c { 1.0 } else { 0.0 };
            assert_eq!(v, base + one, "A=e({r},{k}) B=e({k},{c}): D element {i}");
        }
    }
}

#[test]
fn mma_inputs_round_to_their_type_and_accumulate_in_fp32() {
    let (a, b) = (values(256, 3, false), values(128, 4, false));
    let bf = |v: f32| half::bf16::from_f32(v).to_f32();
    let got16 = mma16("mma_f16", None, &a, &b);
    let gotbf = mma16("mma_bf16", None, &a, &b);
    assert!(relative_error(&got16, &mma_ref(&a, &b, f16)) < 1e-6);
    assert!(relative_error(&gotbf, &mma_ref(&a, &b, bf)) < 1e-6);
    // Against the other type's rounding they differ: the emulation really narrows.
    assert!(relative_error(&gotbf, &mma_ref(&a, &b, f16)) > 1e-6);
}

#[test]
fn planted_lane_mapping_bugs_fail_against_the_reference() {
    let (a, b) = (values(256, 5, false), values(128, 6, false));
    // The product alone (D - C): C's large entries would hide an error in it (and leave
    // about 1e-4 of FP32 rounding in D - C, far from what a wrong mapping does).
    let c = |i: usize| (100 * (i / 8) + i % 8) as f64;
    let product = |d: Vec<f32>| -> Vec<f32> {
        d.iter()
            .enumerate()
            .map(|(i, &v)| (f64::from(v) - c(i)) as f32)
            .collect()
    };
    let reference = gemm_f64((16, 8, 16), &a, &b, f16);
    assert!(relative_error(&product(mma16("mma_f16", None, &a, &b)), &reference) < 1e-3);
    for bug in ["SWAP_KHALF", "B_ROWMAJOR"] {
        let err = relative_error(&product(mma16("mma_f16", Some(bug), &a, &b)), &reference);
        assert!(err > 1e-1, "{bug} went unnoticed: relative error {err:e}");
    }
}

/// m16n8k8 TF32: A 16x8, B 8x8, C = 0; operands rounded with to_tf32.
const MMA_TF32: &str = r#"
#include "lab/ptx.h"
extern "C" __global__ void mma_tf32(const float *A, const float *B, float *D, int M, int N, int K) {
    const int l = threadIdx.x, g = l / 4, t = l % 4;
    unsigned a[4] = {ptx::to_tf32(A[g * 8 + t]), ptx::to_tf32(A[(g + 8) * 8 + t]), ptx::to_tf32(A[g * 8 + t + 4]),
                     ptx::to_tf32(A[(g + 8) * 8 + t + 4])};
    unsigned b[2] = {ptx::to_tf32(B[t * 8 + g]), ptx::to_tf32(B[(t + 4) * 8 + g])};
    float c[4] = {0.0f, 0.0f, 0.0f, 0.0f};
    ptx::mma_m16n8k8_tf32(c, a, b, c);
    D[g * 8 + 2 * t] = c[0];
    D[g * 8 + 2 * t + 1] = c[1];
    D[(g + 8) * 8 + 2 * t] = c[2];
    D[(g + 8) * 8 + 2 * t + 1] = c[3];
    D[128 + l] = __uint_as_float(ptx::to_tf32(A[l]));
}
"#;

#[test]
fn mma_m16n8k8_tf32_follows_its_layout_and_rounds_operands() {
    let (a, b) = (values(128, 7, false), values(64, 8, false));
    // C is 16 x 10: the product in columns 0..8 of its first 128 elements, then to_tf32 of A.
    let shape = Shape::gemm(16, 10, 8);
    let mut a_in = a.clone();
    a_in.resize(16 * 8, 0.0);
    let mut b_in = b.clone();
    b_in.resize(8 * 10, 0.0);
    let out = run(
        launch(
            source(MMA_TF32),
            "mma_tf32",
            [1, 1, 1],
            32,
            gemm_args(16, 10, 8),
        ),
        Dtype::F32,
        shape,
        &[a_in, b_in],
    )
    .unwrap();
    let product = &out[..128];
    let exact = gemm_f64((16, 8, 8), &a, &b, tf32);
    assert!(relative_error(product, &exact) < 1e-6);
    let unrounded = relative_error(product, &gemm_f64((16, 8, 8), &a, &b, |x| x));
    assert!(unrounded > 1e-6 && unrounded < 2e-3, "{unrounded:e}");
    for l in 0..32 {
        assert_eq!(
            out[128 + l].to_bits(),
            tf32(a[l]).to_bits(),
            "to_tf32 of A[{l}]"
        );
    }
}

// ---- cp.async ----

/// Each thread copies into its own 64 bytes of shared memory and snapshots them as groups
/// complete. out[t * 16 + i], x[t * 16 + j].
const ASYNC_GROUPS: &str = r#"
#include "lab/ptx.h"
extern "C" __global__ void async_groups(const float *x, const float *unused, float *out, int M, int N, int K) {
    __shared__ __align__(16) float s[32][4][4];
    const int t = threadIdx.x;
    const float *src = x + t * 16;
    float *o = out + t * 16;
    ptx::cp_async_cg(ptx::smem_addr(s[t][0]), src);                 // group 0: x[0..4]
    ptx::cp_async_commit();
    ptx::cp_async_ca<8>(ptx::smem_addr(&s[t][1][0]), src + 4);      // group 1: x[4..6]
    ptx::cp_async_ca<4>(ptx::smem_addr(&s[t][1][2]), src + 6);      //          x[6]
    ptx::cp_async_commit();
    ptx::cp_async_cg_zfill(ptx::smem_addr(s[t][2]), src + 8, 8);    // not committed: x[8..10], 0, 0
    ptx::cp_async_ca_zfill<16>(ptx::smem_addr(s[t][3]), src + 12, 0);  // nothing read: zeros
    o[0] = s[t][0][0];            // before any wait: the poison
    ptx::cp_async_wait_group<1>();
    o[1] = s[t][0][3];            // group 0 landed
    o[2] = s[t][1][0];            // group 1 still pending
    ptx::cp_async_wait_group<0>();
    o[3] = s[t][1][1];            // group 1 landed
    o[4] = s[t][1][2];
    o[5] = s[t][2][0];            // the uncommitted copies are not waited for
    o[6] = s[t][3][0];
    ptx::cp_async_wait_all();     // commits them and waits
    for (int i = 0; i < 4; ++i) o[7 + i] = s[t][2][i];
    for (int i = 0; i < 4; ++i) o[11 + i] = s[t][3][i];
    o[15] = 0.0f;
}
"#;

#[test]
fn cp_async_lands_only_when_a_wait_covers_its_group() {
    let shape = Shape::gemm(32, 16, 16);
    let x = values(32 * 16, 9, false);
    let out = run(
        launch(
            source(ASYNC_GROUPS),
            "async_groups",
            [1, 1, 1],
            32,
            gemm_args(32, 16, 16),
        ),
        Dtype::F32,
        shape,
        &[x.clone(), vec![0.0; 256]],
    )
    .unwrap();
    for t in 0..32 {
        let (o, x) = (&out[t * 16..t * 16 + 16], &x[t * 16..t * 16 + 16]);
        assert!(o[0].is_nan(), "thread {t}: read before any wait");
        assert_eq!(o[1], x[3], "thread {t}: wait_group<1> completes group 0");
        assert!(
            o[2].is_nan(),
            "thread {t}: wait_group<1> leaves the newest group pending"
        );
        assert_eq!([o[3], o[4]], [x[5], x[6]], "thread {t}: wait_group<0>");
        assert!(
            o[5].is_nan() && o[6].is_nan(),
            "thread {t}: uncommitted copies"
        );
        assert_eq!(
            &o[7..15],
            &[x[8], x[9], 0.0, 0.0, 0.0, 0.0, 0.0, 0.0],
            "thread {t}: wait_all and zero-fill"
        );
    }
}

// ---- A pipelined tensor-core GEMM, and planted bugs in it ----

/// One warp per 16x16 tile of C, K in steps of 16 through a 3-stage cp.async ring: each lane
/// copies 16 bytes of A's and of B's tile per stage; ldmatrix.x4 gives A's fragment,
/// ldmatrix.x4.trans B's for two n8 tiles; two mma.sync per step. FP16 inputs, M, N, K
/// multiples of 16. Planted: WAIT_ONE_SHORT waits for one group too few (reads a stage in
/// flight); NO_TRANS loads B without .trans; SWAP_KHALF swaps a1 and a2.
const PIPELINE: &str = r#"
#include <cuda_fp16.h>
#include "lab/ptx.h"
#define STAGES 3
extern "C" __global__ void pipelined(const __half *A, const __half *B, float *C, int M, int N, int K) {
    __shared__ __align__(16) __half As[STAGES][16][16];
    __shared__ __align__(16) __half Bs[STAGES][16][16];
    const int l = threadIdx.x, g = l / 4, t = l % 4;
    const int row0 = blockIdx.y * 16, col0 = blockIdx.x * 16, tiles = K / 16;
    auto issue = [&](int kt) {
        if (kt < tiles) {
            const int r = l / 2, c = (l % 2) * 8;
            ptx::cp_async_cg(ptx::smem_addr(&As[kt % STAGES][r][c]), A + (row0 + r) * K + kt * 16 + c);
            ptx::cp_async_cg(ptx::smem_addr(&Bs[kt % STAGES][r][c]), B + (kt * 16 + r) * N + col0 + c);
        }
        ptx::cp_async_commit();
    };
    for (int kt = 0; kt < STAGES - 1; ++kt) issue(kt);
    float acc[2][4] = {};
    for (int kt = 0; kt < tiles; ++kt) {
#if WAIT_ONE_SHORT
        ptx::cp_async_wait_group<STAGES - 1>();
#else
        ptx::cp_async_wait_group<STAGES - 2>();
#endif
        __syncwarp();
        issue(kt + STAGES - 1);
        const int s = kt % STAGES;
        unsigned a[4], b[4];
        ptx::ldmatrix_x4(a, ptx::smem_addr(&As[s][l % 16][8 * (l / 16)]));
#if SWAP_KHALF
        unsigned x = a[1]; a[1] = a[2]; a[2] = x;
#endif
        const ptx::smem_t bp = ptx::smem_addr(&Bs[s][l % 8 + 8 * ((l / 8) % 2)][8 * (l / 16)]);
#if NO_TRANS
        ptx::ldmatrix_x4(b, bp);
#else
        ptx::ldmatrix_x4_trans(b, bp);
#endif
        ptx::mma_m16n8k16_f16(acc[0], a, {b[0], b[1]}, acc[0]);
        ptx::mma_m16n8k16_f16(acc[1], a, {b[2], b[3]}, acc[1]);
    }
    for (int j = 0; j < 2; ++j)
        for (int i = 0; i < 4; ++i)
            C[(row0 + g + 8 * (i / 2)) * N + col0 + 8 * j + 2 * t + i % 2] = acc[j][i];
}
"#;

fn pipelined(bug: Option<&str>, m: usize, n: usize, k: usize, data: &[Vec<f32>]) -> Vec<f32> {
    let mut src = source(PIPELINE);
    for b in ["WAIT_ONE_SHORT", "NO_TRANS", "SWAP_KHALF"] {
        src = src.define(b, i32::from(bug == Some(b)));
    }
    let grid = [(n / 16) as u32, (m / 16) as u32, 1];
    let l = launch(src, "pipelined", grid, 32, gemm_args(m, n, k));
    run(l, Dtype::F16, Shape::gemm(m, n, k), data).unwrap()
}

#[test]
fn a_cp_async_ldmatrix_mma_pipeline_is_right_and_planted_bugs_are_wrong() {
    let (m, n, k) = (32, 48, 128);
    let data = vec![values(m * k, 10, false), values(k * n, 11, false)];
    let reference = gemm_f64((m, n, k), &data[0], &data[1], f16);
    let err = relative_error(&pipelined(None, m, n, k, &data), &reference);
    assert!(err < 1e-6, "the correct pipeline: {err:e}");
    for bug in ["WAIT_ONE_SHORT", "NO_TRANS", "SWAP_KHALF"] {
        let err = relative_error(&pipelined(Some(bug), m, n, k, &data), &reference);
        assert!(err > 1e-2, "{bug} went unnoticed: relative error {err:e}");
    }
}

// ---- Misuse the emulation reports ----

const MISUSE: &str = r#"
#include "lab/ptx.h"
extern "C" __global__ void ldmatrix_global(const float *x, float *out) {
    unsigned r[1];
    ptx::ldmatrix_x1(r, ptx::smem_addr(x));  // a global address
    out[threadIdx.x] = (float)r[0];
}
extern "C" __global__ void ldmatrix_misaligned(const float *x, float *out) {
    __shared__ __align__(16) unsigned short tile[8][16];
    tile[threadIdx.x % 8][threadIdx.x / 8 * 4] = 0;
    unsigned r[1];
    ptx::ldmatrix_x1(r, ptx::smem_addr(&tile[threadIdx.x % 8][4]));  // 8-byte aligned rows
    out[threadIdx.x] = (float)r[0];
}
extern "C" __global__ void mma_partial_warp(const float *x, float *out) {
    unsigned a[4] = {0, 0, 0, 0}, b[2] = {0, 0};
    float c[4] = {0, 0, 0, 0};
    ptx::mma_m16n8k16_f16(c, a, b, c);
    out[threadIdx.x] = c[0];
}
extern "C" __global__ void cp_async_to_global(const float *x, float *out) {
    ptx::cp_async_cg(ptx::smem_addr(out + 4 * threadIdx.x), x + 4 * threadIdx.x);
    ptx::cp_async_wait_all();
}
"#;

#[test]
fn misuse_is_reported_with_the_instruction_and_the_thread() {
    let shape = Shape::gemm(64, 1, 4);
    let data = vec![vec![0.5; 256], vec![0.0; 4]];
    let cases = [
        (
            "ldmatrix_global",
            32,
            "ldmatrix row address",
            "is not in this block's shared memory",
        ),
        (
            "ldmatrix_misaligned",
            32,
            "ldmatrix row address",
            "is not 16-byte aligned",
        ),
        (
            "mma_partial_warp",
            48,
            "mma.sync.m16n8k16.f16 needs all 32 lanes",
            "warp 1 of this block has 16",
        ),
        (
            "cp_async_to_global",
            16,
            "cp.async destination",
            "is not in this block's shared memory",
        ),
    ];
    for (entry, threads, a, b) in cases {
        let r = run(
            launch(
                source(MISUSE),
                entry,
                [1, 1, 1],
                threads,
                vec![Arg::Ptr(Buf::Input(0)), Arg::Ptr(Buf::Output)],
            ),
            Dtype::F32,
            shape,
            &data,
        );
        match r {
            Err(DeviceError::Sim(msg)) => {
                assert!(
                    msg.starts_with(entry) && msg.contains(a) && msg.contains(b),
                    "{msg}"
                );
                assert!(
                    msg.contains("thread (") && msg.contains("block (0,0,0)"),
                    "{msg}"
                );
            }
            other => panic!("{entry}: expected a report, got {:?}", other.map(|_| ())),
        }
    }
}

// ---- NVRTC ----

#[test]
fn nvrtc_compiles_every_instruction_for_sm80_and_sm90() {
    if let Err(e) = nvrtc::version() {
        panic!("{e}\nThis test needs NVRTC: run tools/install-cuda-tools.sh first.");
    }
    let sources = [
        (source(LDMATRIX), 6),
        (
            source(MMA16)
                .define("SWAP_KHALF", 0)
                .define("B_ROWMAJOR", 0),
            3,
        ),
        (source(MMA_TF32), 1),
        (source(ASYNC_GROUPS), 1),
        (
            source(PIPELINE)
                .define("WAIT_ONE_SHORT", 0)
                .define("NO_TRANS", 0)
                .define("SWAP_KHALF", 0),
            1,
        ),
    ];
    for arch in ["sm_80", "sm_90"] {
        for (src, entries) in &sources {
            let c = nvrtc::compile(src, arch).unwrap_or_else(|e| panic!("{arch}: {e}"));
            assert_eq!(c.resources.len(), *entries, "{arch}: {:?}", c.resources);
            for (name, r) in &c.resources {
                assert!(!r.spills(), "{name} spills on {arch}");
            }
        }
    }
    // The sizes cp.async accepts are checked where the call is compiled, on both sides.
    const BAD: &str = r#"
#include "lab/ptx.h"
extern "C" __global__ void bad(const float *x) {
    __shared__ __align__(16) float s[4];
    ptx::cp_async_ca<12>(ptx::smem_addr(s), x);
}
"#;
    match nvrtc::compile(&source(BAD), "sm_90") {
        Err(DeviceError::Compile { log, .. }) => {
            assert!(log.contains("cp.async.ca copies 4, 8 or 16 bytes"), "{log}")
        }
        other => panic!("expected a compile error, got {:?}", other.map(|_| ())),
    }
}
