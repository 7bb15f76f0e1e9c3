//! The pipelined rungs (14..17) executed from their CUDA source by the simulator on shapes the
//! harness's simulator matrix does not reach: K and N multiples of 8, so the 16-byte
//! `cp.async` path runs (the matrix's shapes take the guarded 2-byte path), with row, column
//! and K tails, and K long enough for the ring to wrap around. Each output must agree with
//! the rung's CPU port (same rounded operands, FP32 sums in another order) far inside the
//! precision's bound, and with the f64 reference within it.

use kernel::sim::SimDevice;
use kernel::{Executor, Kernel, Shape};

/// Deterministic inputs in [-1, 1).
fn inputs(shape: &Shape, seed: u64) -> Vec<Vec<f32>> {
    let mut s = seed;
    shape
        .inputs()
        .iter()
        .map(|t| {
            (0..t.len())
                .map(|_| {
                    s = s
                        .wrapping_mul(6_364_136_223_846_793_005)
                        .wrapping_add(1_442_695_040_888_963_407);
                    ((s >> 40) as f32 / (1u64 << 24) as f32) * 2.0 - 1.0
                })
                .collect()
        })
        .collect()
}

fn reference(m: usize, n: usize, k: usize, a: &[f32], b: &[f32]) -> Vec<f64> {
    let mut c = vec![0.0f64; m * n];
    for i in 0..m {
        for kk in 0..k {
            let aik = f64::from(a[i * k + kk]);
            for j in 0..n {
                c[i * n + j] += aik * f64::from(b[kk * n + j]);
            }
        }
    }
    c
}

/// Relative Frobenius error; NaN (an unwritten, poisoned output) counts as infinite.
fn rel_error(out: &[f32], reference: impl Iterator<Item = f64>) -> f64 {
    let (mut diff, mut norm) = (0.0f64, 0.0f64);
    for (&o, r) in out.iter().zip(reference) {
        diff += (f64::from(o) - r).powi(2);
        norm += r * r;
    }
    let e = (diff / norm.max(f64::MIN_POSITIVE)).sqrt();
    if e.is_nan() { f64::INFINITY } else { e }
}

/// M, N and K with tails: 136 = 128 + 8 rows, 264 = 2 x 128 + 8 columns, K = 200 is 7 tiles
/// of 32 (rung 14 and 15's 4-stage rings wrap) or 4 of 64 (16 and 17's 3-stage ring wraps)
/// with a partial last tile.
const SHAPES: [(usize, usize, usize); 2] = [(136, 264, 200), (8, 16, 24)];

fn check(kernel: &dyn Kernel) {
    let dev = SimDevice::new().expect("the simulator needs a C++ compiler");
    let id = kernel.info().id;
    let port = kernel.cpu().expect("every rung has a CPU port");
    let bound = kernel.info().precision.tolerance();
    for (m, n, k) in SHAPES {
        let shape = Shape::gemm(m, n, k);
        let data = inputs(&shape, (m * 31 + n * 7 + k) as u64);
        let mut run = dev.prepare(kernel, &shape, &data).expect("prepare");
        run.run().unwrap_or_else(|e| panic!("{id} on {shape}: {e}"));
        let out = run.output().expect("output");
        assert_eq!(out.len(), m * n);
        let mut cpu = vec![f32::NAN; m * n];
        port(&shape, &[&data[0], &data[1]], &mut cpu);
        let vs_port = rel_error(&out, cpu.iter().map(|&v| f64::from(v)));
        assert!(
            vs_port < 1e-5,
            "{id} on {shape}: {vs_port:e} from its CPU port"
        );
        let vs_f64 = rel_error(&out, reference(m, n, k, &data[0], &data[1]).into_iter());
        assert!(vs_f64 < bound, "{id} on {shape}: {vs_f64:e} from f64");
    }
}

#[test]
fn wmma_cp_async_ring_on_aligned_tails() {
    check(&tensorcore::GemmWmmaCpAsync);
}

#[test]
fn mma_ldmatrix_swizzle_on_aligned_tails() {
    check(&tensorcore::GemmMmaLdmatrix);
}

#[test]
fn mma_double_buffer_on_aligned_tails() {
    check(&tensorcore::GemmMmaDoubleBuffer);
}

#[test]
fn mma_bf16_on_aligned_tails() {
    check(&tensorcore::GemmMmaBf16);
}
