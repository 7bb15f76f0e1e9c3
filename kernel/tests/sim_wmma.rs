//! WMMA in the simulator: every lane holds the whole tiles, so one lane computes a product and
//! the others copy it from their warp's memo when their inputs are the same bytes. Lanes whose
//! inputs differ (not portable CUDA, but the emulation must stay exact) compute their own, and
//! an accumulator that is also the destination accumulates. Loads and stores hold the warp to
//! what the WMMA API asks of their arguments.

use kernel::sim::SimDevice;
use kernel::testing::PlanKernel;
use kernel::{CudaPlan, CudaSource, Dtype, Executor, Fill, Launch, Shape, Step};

const KERNEL: &str = r#"
#include <mma.h>
using namespace nvcuda;

// One warp. Even lanes multiply the first 16x16 tile of A by B, odd lanes the second (a
// fragment picked by the lane: the simulator's whole tiles allow it), twice into the same
// accumulator; each lane writes its product, element by element, at C + 256 * lane.
extern "C" __global__ void lanes(const half *A, const half *B, float *C, int M, int N, int K) {
    int lane = threadIdx.x;
    wmma::fragment<wmma::matrix_a, 16, 16, 16, half, wmma::row_major> a0, a1;
    wmma::fragment<wmma::matrix_b, 16, 16, 16, half, wmma::row_major> b;
    wmma::fragment<wmma::accumulator, 16, 16, 16, float> acc;
    wmma::fill_fragment(acc, 0.0f);
    wmma::load_matrix_sync(a0, A, 16);
    wmma::load_matrix_sync(a1, A + 256, 16);
    wmma::load_matrix_sync(b, B, 16);
    const auto &a = lane % 2 ? a1 : a0;
    wmma::mma_sync(acc, a, b, acc);
    wmma::mma_sync(acc, a, b, acc);
    for (int i = 0; i < acc.num_elements; ++i) C[256 * lane + i] = acc.x[i];
}
"#;

/// Small integers: exact in FP16, and their products and sums exact in FP32.
fn ints(n: usize, salt: usize) -> Vec<f32> {
    (0..n)
        .map(|i| ((i * 7 + salt * 13) % 9) as f32 - 4.0)
        .collect()
}

/// Runs `entry` of `code` as one warp on FP16 A and B of a GEMM of `shape`, C filled with
/// `fill`: the output.
fn one_warp(
    code: &'static str,
    entry: &str,
    shape: Shape,
    fill: Fill,
    data: &[Vec<f32>],
) -> Vec<f32> {
    let Shape::Gemm { m, n, k } = shape else {
        unreachable!("a GEMM shape")
    };
    let plan = CudaPlan {
        inputs: vec![Dtype::F16; 2],
        output_fill: fill,
        steps: vec![Step::Kernel(Launch {
            source: CudaSource::embedded("tests/wmma.cu", code),
            entry: entry.to_string().into(),
            grid: [1, 1, 1],
            block: [32, 1, 1],
            dynamic_smem: 0,
            args: kernel::gemm_args(m, n, k),
        })],
        ..Default::default()
    };
    let dev = SimDevice::new().unwrap();
    let kernel = PlanKernel::fp32(plan);
    let mut p = dev.prepare(&kernel, &shape, data).unwrap();
    p.run().unwrap();
    p.output().unwrap()
}

#[test]
fn lanes_with_other_inputs_get_their_own_product_and_accumulators_accumulate() {
    // C is 32 tiles of 16x16 (512 x 16); A as many rows of K = 16, of which two tiles are read.
    let (a, b) = (ints(512 * 16, 1), ints(16 * 16, 2));
    let data = [a.clone(), b.clone()];
    let out = one_warp(KERNEL, "lanes", Shape::gemm(512, 16, 16), Fill::Nan, &data);
    for lane in 0..32 {
        let tile = &a[256 * (lane % 2)..][..256];
        for i in 0..16 {
            for j in 0..16 {
                let dot: f32 = (0..16).map(|k| tile[i * 16 + k] * b[k * 16 + j]).sum();
                let got = out[256 * lane + i * 16 + j];
                assert_eq!(got, 2.0 * dot, "lane {lane}, element ({i}, {j})");
            }
        }
    }
}

/// The BLAS epilogue as NVIDIA's WMMA sample writes it: C loaded into an accumulator fragment,
/// scaled by beta, the product added with alpha, stored back in place. The loads and stores of
/// a warp happen together on a GPU; a lane that stored before another had loaded would have
/// the other scale C twice.
const READ_MODIFY_WRITE: &str = r#"
#include <mma.h>
using namespace nvcuda;

extern "C" __global__ void rmw(const half *A, const half *B, float *C, int M, int N, int K) {
    wmma::fragment<wmma::matrix_a, 16, 16, 16, half, wmma::row_major> a;
    wmma::fragment<wmma::matrix_b, 16, 16, 16, half, wmma::row_major> b;
    wmma::fragment<wmma::accumulator, 16, 16, 16, float> acc, c;
    wmma::fill_fragment(acc, 0.0f);
    wmma::load_matrix_sync(a, A, 16);
    wmma::load_matrix_sync(b, B, 16);
    wmma::mma_sync(acc, a, b, acc);
    wmma::load_matrix_sync(c, C, 16, wmma::mem_row_major);
    for (int i = 0; i < c.num_elements; ++i) c.x[i] = 2.0f * acc.x[i] - 0.5f * c.x[i];
    wmma::store_matrix_sync(C, c, 16, wmma::mem_row_major);
}
"#;

#[test]
fn a_warp_loads_c_before_any_lane_stores_it_back() {
    let (a, b) = (ints(256, 1), ints(256, 2));
    let data = [a.clone(), b.clone()];
    let out = one_warp(
        READ_MODIFY_WRITE,
        "rmw",
        Shape::gemm(16, 16, 16),
        Fill::Value(1.0),
        &data,
    );
    for i in 0..16 {
        for j in 0..16 {
            let dot: f32 = (0..16).map(|k| a[i * 16 + k] * b[k * 16 + j]).sum();
            // C started at 1: scaled by -0.5 once, not once per lane.
            assert_eq!(out[i * 16 + j], 2.0 * dot - 0.5, "C[{i}][{j}]");
        }
    }
}

/// A load whose arguments break the WMMA API's rules: `how` picks which.
const MISUSE: &str = r#"
#include <mma.h>
using namespace nvcuda;

extern "C" __global__ void misuse(const half *A, const half *B, float *C, int M, int N, int K) {
    __shared__ __align__(32) half s[16 * 24 + 8];
    for (int i = threadIdx.x; i < 16 * 24 + 8; i += 32) s[i] = A[i % 256];
    __syncwarp();
    wmma::fragment<wmma::matrix_a, 16, 16, 16, half, wmma::row_major> a;
    wmma::fragment<wmma::matrix_b, 16, 16, 16, half, wmma::row_major> b;
    wmma::fragment<wmma::accumulator, 16, 16, 16, float> acc;
    wmma::fill_fragment(acc, 0.0f);
#if HOW == 0
    wmma::load_matrix_sync(a, s, 24);  // 48-byte rows: allowed
#elif HOW == 1
    wmma::load_matrix_sync(a, s, 20);  // 40-byte rows
#elif HOW == 2
    wmma::load_matrix_sync(a, s + 4, 24);  // a tile 8 bytes into the array
#else
    wmma::load_matrix_sync(a, s + 16 * (threadIdx.x / 16), 24);  // a tile per half-warp
#endif
    wmma::load_matrix_sync(b, B, 16);
    wmma::mma_sync(acc, a, b, acc);
    wmma::store_matrix_sync(C, acc, 16, wmma::mem_row_major);
}
"#;

/// Runs MISUSE with `HOW` defined as `how`: the simulator's report, if any.
fn misuse(how: u32) -> Option<String> {
    let (m, n, k) = (16, 16, 16);
    let plan = CudaPlan {
        inputs: vec![Dtype::F16; 2],
        output_fill: Fill::Nan,
        steps: vec![Step::Kernel(Launch {
            source: CudaSource {
                defines: vec![("HOW".into(), how.to_string())],
                ..CudaSource::embedded("tests/wmma_misuse.cu", MISUSE)
            },
            entry: "misuse".to_string().into(),
            grid: [1, 1, 1],
            block: [32, 1, 1],
            dynamic_smem: 0,
            args: kernel::gemm_args(m, n, k),
        })],
        ..Default::default()
    };
    let shape = Shape::gemm(m, n, k);
    let data = [ints(256, 1), ints(256, 2)];
    let dev = SimDevice::new().unwrap();
    let kernel = PlanKernel::fp32(plan);
    let mut p = dev.prepare(&kernel, &shape, &data).unwrap();
    match p.run() {
        Ok(()) => None,
        Err(kernel::DeviceError::Sim(msg)) => Some(msg),
        Err(other) => panic!("expected a simulator report, got {other}"),
    }
}

#[test]
fn a_wmma_load_with_rows_off_16_bytes_or_lanes_that_disagree_is_named() {
    assert_eq!(
        misuse(0),
        None,
        "48-byte rows of a 32-byte aligned tile are allowed"
    );
    let stride = misuse(1).expect("40-byte rows");
    assert!(
        stride
            .contains("ldm 20 elements of 2 bytes is 40 bytes between rows, not a multiple of 16")
            && stride.contains("wmma_misuse.cu:"),
        "{stride}"
    );
    let address = misuse(2).expect("a tile 8 bytes into the array");
    assert!(
        address
            .contains("(__shared__ 's' (in misuse), byte 8) lies 8 bytes past a 16-byte boundary"),
        "{address}"
    );
    let lanes = misuse(3).expect("a tile per half-warp");
    assert!(
        lanes.contains("the lanes of the warp pass different tiles")
            && lanes.contains("lane 16 another pointer, ldm or layout than lane 0 (ldm 24)"),
        "{lanes}"
    );
}
