//! The simulator's count of how global loads and stores coalesce: each warp instruction rebuilt
//! from its lanes' accesses, as the bank model rebuilds shared-memory ones, and counted in the
//! distinct 32-byte sectors and 128-byte lines it touches. Every expected figure follows from
//! the addresses (lane t reads float t * K of a buffer whose start is 128-byte aligned), so a
//! miscount (a broadcast charged per lane, a float4 counted as four requests or four floats as
//! one, a partial warp taken for a whole one) fails.

use kernel::sim::SimDevice;
use kernel::testing::{PlanKernel, gemm_launch};
use kernel::{Coalescing, CudaPlan, Executor, GlobalRequests, Shape};

const KERNELS: &str = r#"
// Lane t reads A[t * K] and writes C[t]: K = 1 contiguous, 0 one word for all (a broadcast),
// 2 and 8 floats apart, 32 a line apart.
extern "C" __global__ void strided(const float *A, const float *B, float *C, int M, int N, int K) {
    int t = threadIdx.x;
    C[t] = A[t * K];
}

// The same a float4 a lane: lane t reads float4 t * K.
extern "C" __global__ void vec4(const float *A, const float *B, float *C, int M, int N, int K) {
    int t = threadIdx.x;
    float4 v = reinterpret_cast<const float4 *>(A)[t * K];
    C[t] = v.x + v.y * 2.f + v.z * 3.f + v.w * 4.f;
}

// Four scalar loads of one float4 per lane: nvcc, which cannot prove a global pointer's
// alignment, leaves them four loads.
extern "C" __global__ void scalars(const float *A, const float *B, float *C, int M, int N, int K) {
    int t = threadIdx.x;
    const float *p = A + 4 * t;
    C[t] = p[0] + p[1] * 2.f + p[2] * 3.f + p[3] * 4.f;
}

// 32 contiguous floats from float K on: K = 1 straddles two lines.
extern "C" __global__ void offset(const float *A, const float *B, float *C, int M, int N, int K) {
    int t = threadIdx.x;
    C[t] = A[K + t];
}

// Only lanes below K read (the others skip the load); every lane writes.
extern "C" __global__ void partial(const float *A, const float *B, float *C, int M, int N, int K) {
    int t = threadIdx.x;
    float v = 0.f;
    if (t < K) v = A[t * 32];
    C[t] = v;
}
"#;

/// A plan that launches `entry` as one warp with M = 32, N = 1 and K = `k`.
fn one_warp(entry: &str, k: usize) -> CudaPlan {
    gemm_launch(
        "tests/coalescing.cu",
        KERNELS,
        entry,
        [1, 1, 1],
        [32, 1, 1],
        (32, 1, k),
    )
}

/// Runs `entry` as one warp with K = `k` and returns the simulator's coalescing counts.
fn counts(entry: &str, k: usize) -> Coalescing {
    let dev = SimDevice::new().unwrap().instrumented();
    let (m, n) = (32, 1);
    let plan = one_warp(entry, k);
    // A holds M x 4K floats, 128 at least: lane 31 reads float 31 * K, or float4 31 * K.
    let rows = (4 * k).max(4);
    let shape = Shape::gemm(m, n, rows);
    let inputs = vec![vec![1.5f32; m * rows], vec![0.5f32; rows * n]];
    let kernel = PlanKernel::fp32(plan);
    let mut p = dev.prepare(&kernel, &shape, &inputs).expect("prepares");
    p.run().expect("runs");
    p.traffic()
        .expect("the simulator counts when instrumented")
        .global
}

/// `requests` of lanes `width` bytes wide.
fn r(requests: u64, sectors: u64, lines: u64, ideal_lines: u64, width: u64) -> GlobalRequests {
    GlobalRequests {
        requests,
        sectors,
        lines,
        ideal_lines,
        lane_bytes: requests * width,
    }
}

/// The store of C: 32 contiguous floats, 4 sectors of one line.
const STORE: GlobalRequests = GlobalRequests {
    requests: 1,
    sectors: 4,
    lines: 1,
    ideal_lines: 1,
    lane_bytes: 4,
};

#[test]
fn a_warps_loads_touch_the_sectors_and_lines_of_their_addresses() {
    for (k, sectors, lines) in [(1, 4, 1), (0, 1, 1), (2, 8, 2), (8, 32, 8), (32, 32, 32)] {
        let c = counts("strided", k);
        assert_eq!(c.loads, r(1, sectors, lines, 1, 4), "stride {k}");
        assert_eq!(c.whole_warp_loads, c.loads, "stride {k}: a whole warp");
        assert_eq!(c.stores, STORE, "stride {k}");
    }
}

#[test]
fn float4_loads_fill_four_lines_when_coalesced() {
    assert_eq!(counts("vec4", 1).loads, r(1, 16, 4, 4, 16));
    // A broadcast of one float4: half a sector, one line.
    assert_eq!(counts("vec4", 0).loads, r(1, 1, 1, 1, 16));
    // Lanes 32 bytes apart: a sector each, eight lines, for 512 bytes that fill four.
    assert_eq!(counts("vec4", 2).loads, r(1, 32, 8, 4, 16));
}

#[test]
fn scalar_loads_of_a_float4_stay_four_requests() {
    // Each: 32 lanes 16 bytes apart, 16 sectors of 4 lines, for 128 bytes that fill one.
    assert_eq!(counts("scalars", 0).loads, r(4, 64, 16, 4, 4));
}

/// A run that starts mid-line touches two, as coalesced as it can be from there: its ideal is
/// two lines too.
#[test]
fn a_run_from_mid_line_straddles_two_lines_as_its_ideal_does() {
    assert_eq!(counts("offset", 0).loads, r(1, 4, 1, 1, 4));
    assert_eq!(counts("offset", 1).loads, r(1, 5, 2, 2, 4));
    assert_eq!(counts("offset", 31).loads, r(1, 5, 2, 2, 4));
}

#[test]
fn requests_of_part_of_a_warp_are_counted_apart_from_whole_warps() {
    let c = counts("partial", 8);
    assert_eq!(c.loads, r(1, 8, 8, 1, 4));
    assert_eq!(c.whole_warp_loads, GlobalRequests::default());
    assert_eq!(c.whole_warp_stores, STORE);
}

/// A plan of several kernels: each kernel's counts apart, its launches summed, in the order of
/// their first launch, beside the plan's total.
#[test]
fn a_plans_kernels_are_counted_apart_and_in_all() {
    let dev = SimDevice::new().unwrap().instrumented();
    let (m, n, rows) = (32, 1, 128);
    let mut plan = one_warp("strided", 32);
    plan.steps.extend(
        [("offset", 0), ("strided", 0)].map(|(entry, k)| one_warp(entry, k).steps.remove(0)),
    );
    let shape = Shape::gemm(m, n, rows);
    let inputs = vec![vec![1.5f32; m * rows], vec![0.5f32; rows * n]];
    let kernel = PlanKernel::fp32(plan);
    let mut p = dev.prepare(&kernel, &shape, &inputs).expect("prepares");
    p.run().expect("runs");
    let t = p.traffic().expect("the simulator counts when instrumented");
    let entries: Vec<&str> = t.kernels.iter().map(|k| k.entry.as_str()).collect();
    assert_eq!(entries, ["strided", "offset"]);
    // A line a lane, then a broadcast.
    assert_eq!(
        t.kernels[0].global.loads,
        r(1, 32, 32, 1, 4).plus(r(1, 1, 1, 1, 4))
    );
    assert_eq!(t.kernels[1].global.loads, r(1, 4, 1, 1, 4));
    assert_eq!(
        t.global.loads,
        t.kernels[0].global.loads.plus(t.kernels[1].global.loads)
    );
    assert_eq!(t.global.stores, STORE.plus(STORE).plus(STORE));
}
