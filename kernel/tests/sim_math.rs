//! CUDA's math functions that C's library lacks (the pi forms, reciprocal roots and norms, the
//! normal distribution), run by the simulator against f64 values, and NVRTC compiling the
//! same source: a kernel that calls them must run in the simulator as on a GPU.

use kernel::cuda::nvrtc;
use kernel::sim::SimDevice;
use kernel::testing::{PlanKernel, inputs};
use kernel::{Arg, Buf, CudaPlan, CudaSource, Dtype, Executor, Launch, Shape, Step};

/// Thread i evaluates every function at X[i]; out[f * N + i] holds function f's value.
const MATH: &str = r#"
#define N 8
__device__ const float X[N] = {0.0f, 0.25f, -0.5f, 1.0f, 1.5f, -2.75f, 1000.5f, 3.0f};
extern "C" __global__ void math(float *out) {
    const int i = threadIdx.x;
    const float x = X[i];
    float s, c;
    sincospif(x, &s, &c);
    const float v[] = {sinpif(x), cospif(x), s, c, rcbrtf(x + 4.0f), rhypotf(x, 2.0f),
                       norm3df(x, 2.0f, -3.0f), rnorm3df(x, 2.0f, -3.0f), normcdff(x),
                       (float)sinpi((double)x), (float)cospi((double)x), (float)normcdf((double)x)};
    for (int f = 0; f < (int)(sizeof v / sizeof v[0]); ++f) out[f * N + i] = v[f];
}
"#;

const X: [f64; 8] = [0.0, 0.25, -0.5, 1.0, 1.5, -2.75, 1000.5, 3.0];

/// The functions in the kernel's order, in f64.
fn expected(x: f64) -> [f64; 12] {
    use std::f64::consts::PI;
    let normcdf = |x: f64| 0.5 * (1.0 + libm_erf(x / 2f64.sqrt()));
    let (s, c) = ((PI * x).sin(), (PI * x).cos());
    let norm = (x * x + 4.0 + 9.0).sqrt();
    [
        s,
        c,
        s,
        c,
        1.0 / (x + 4.0).cbrt(),
        1.0 / x.hypot(2.0),
        norm,
        1.0 / norm,
        normcdf(x),
        s,
        c,
        normcdf(x),
    ]
}

/// erf (the standard library has none): its Maclaurin series below 3, where it converges to
/// f64 in 200 terms, and +-1 above 6, where erf is 1 in f64.
fn libm_erf(x: f64) -> f64 {
    assert!(x.abs() < 3.0 || x.abs() > 6.0, "erf({x}) is not modelled");
    if x.abs() > 6.0 {
        return x.signum();
    }
    let (mut term, mut sum) = (x, x);
    for n in 1..200 {
        term *= -x * x / n as f64;
        sum += term / (2 * n + 1) as f64;
    }
    sum * 2.0 / std::f64::consts::PI.sqrt()
}

fn source() -> CudaSource {
    CudaSource::embedded("tests/math.cu", MATH)
}

#[test]
fn cuda_only_math_functions_run_in_the_simulator() {
    let n = X.len();
    let funcs = expected(0.0).len();
    let plan = CudaPlan {
        inputs: vec![Dtype::F32; 2],
        steps: vec![Step::Kernel(Launch {
            source: source(),
            entry: "math".into(),
            grid: [1, 1, 1],
            block: [n as u32, 1, 1],
            dynamic_smem: 0,
            args: vec![Arg::Ptr(Buf::Output)],
        })],
        ..Default::default()
    };
    let shape = Shape::gemm(1, n * funcs, 1);
    let dev = SimDevice::new().expect("the simulator needs a host C++ compiler");
    let k = PlanKernel::fp32(plan);
    let data = inputs(&shape, 3);
    let mut p = dev.prepare(&k, &shape, &data).unwrap();
    p.run().unwrap();
    let out = p.output().unwrap();
    for (i, &x) in X.iter().enumerate() {
        for (f, want) in expected(x).into_iter().enumerate() {
            let got = f64::from(out[f * n + i]);
            assert!(
                (got - want).abs() <= 1e-6 * want.abs().max(1.0),
                "function {f} at {x}: {got} against {want}"
            );
        }
    }
    // The pi forms' zeros are exact, as on the GPU: sin(pi) in f64 is 1.2e-16, not 0.
    let at = |f: usize, x: f32| out[f * n + X.iter().position(|&v| v as f32 == x).unwrap()];
    assert_eq!(at(0, 1.0), 0.0, "sinpif(1)");
    assert_eq!(at(0, 3.0), 0.0, "sinpif(3)");
    assert_eq!(at(1, -0.5), 0.0, "cospif(-0.5)");
    assert_eq!(at(1, 1000.5), 0.0, "cospif(1000.5)");
    assert_eq!(at(1, 1.5), 0.0, "cospif(1.5)");
}

#[test]
fn nvrtc_compiles_the_math_functions_for_sm80_and_sm90() {
    if let Err(e) = nvrtc::version() {
        panic!("{e}\nThis test needs NVRTC: run tools/install-cuda-tools.sh first.");
    }
    for arch in ["sm_80", "sm_90"] {
        nvrtc::compile(&source(), arch).unwrap_or_else(|e| panic!("{arch}: {e}"));
    }
}
