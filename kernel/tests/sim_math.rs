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

/// The simulator's `math_constants.h` gives each of its `CUDART_` constants the value of the
/// CUDA toolkit's header: both compiled by the host compiler, every constant's bits printed
/// and compared (where the toolkit's headers are installed, as `tools/install-cuda-tools.sh`
/// does).
#[test]
fn the_math_constants_are_the_toolkits() {
    let Some(toolkit) = kernel::cuda::discovery::discovery().include_dir() else {
        eprintln!("skipped: no CUDA headers found");
        return;
    };
    let standin = include_str!("../sim/include/math_constants.h");
    let names: Vec<&str> = standin
        .lines()
        .filter_map(|l| l.strip_prefix("#define "))
        .filter_map(|l| l.split_whitespace().next())
        .collect();
    assert!(names.len() > 40, "{names:?}");
    let mut program = String::from(
        "#include <cstdio>\n#include <cstring>\n\
         static float __int_as_float(unsigned i) { float x; memcpy(&x, &i, 4); return x; }\n\
         static double __longlong_as_double(unsigned long long i) { double x; memcpy(&x, &i, 8); \
         return x; }\n#include <math_constants.h>\n\
         template <class T> void show(const char *n, T v) { unsigned long long b = 0; \
         memcpy(&b, &v, sizeof v); printf(\"%s %zu %llx\\n\", n, sizeof v, b); }\nint main() {\n",
    );
    for n in &names {
        program.push_str(&format!("  show(\"{n}\", {n});\n"));
    }
    program.push_str("}\n");
    let dir = std::env::temp_dir().join(format!("lab-math-constants-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("show.cpp"), &program).unwrap();
    let values = |include: &std::path::Path, exe: &str| {
        let out = std::process::Command::new(kernel::sim::compile::compiler())
            .arg("-I")
            .arg(include)
            .arg(dir.join("show.cpp"))
            .arg("-o")
            .arg(dir.join(exe))
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let run = std::process::Command::new(dir.join(exe)).output().unwrap();
        String::from_utf8(run.stdout).unwrap()
    };
    let sim = values(
        &std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("sim/include"),
        "sim",
    );
    let cuda = values(toolkit, "cuda");
    for (s, c) in sim.lines().zip(cuda.lines()) {
        assert_eq!(s, c, "the simulator's constant differs from the toolkit's");
    }
    assert_eq!(sim.lines().count(), names.len());
    std::fs::remove_dir_all(&dir).unwrap();
}
