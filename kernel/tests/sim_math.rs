//! CUDA's math functions that C's library lacks (the pi forms, reciprocal roots and norms, the
//! normal distribution) and its stores with cache hints, run by the simulator against f64
//! values, and NVRTC compiling the same source: a kernel that calls them must run in the
//! simulator as on a GPU.

use kernel::CudaSource;
use kernel::cuda::nvrtc;
use kernel::testing::sim_one_block;

/// Thread i evaluates every function at X[i]; out[f * N + i] holds function f's value.
const MATH: &str = r#"
#include <cuda_bf16.h>
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

// Stores with a cache hint take a value of another type, as CUDA's overloads for the
// pointer's type do: a float into a bf16, a double into a float.
extern "C" __global__ void hinted(float *out) {
    __nv_bfloat16 b[2];
    __stwt(&b[0], 1.5f);
    __stcs(&b[1], -2.25f);
    __stcg(&out[0], 0.5);
    __stwb(&out[1], __bfloat162float(b[0]));
    out[2] = __bfloat162float(b[1]);
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
    let out = sim_one_block(source(), "math", n as u32, n * funcs);
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
fn stores_with_a_cache_hint_convert_the_value_to_the_pointers_type() {
    assert_eq!(sim_one_block(source(), "hinted", 1, 3), [0.5, 1.5, -2.25]);
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
        panic!(
            "no CUDA headers found: this test needs them; run tools/install-cuda-tools.sh first"
        );
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

/// Thread b decodes the byte b in both FP8 formats; thread i < 64 also encodes VALUES[i] in
/// both, saturating and not. out: [e4m3 decode x256, e5m2 decode x256, then per value the
/// four encodings as floats].
const FP8: &str = r#"
#include <cuda_fp8.h>
#define NV 20
__device__ const float VALUES[NV] = {0.0f, -0.0f, 1.0f, -1.5f, 0.3f, 448.0f, 460.0f, 464.0f, 500.0f,
                                      -1000.0f, 0.0009765625f, 0.001f, 0.0029296875f, 1e-9f, 57344.0f,
                                      61440.0f, 70000.0f, 3.0e-5f, 1.0625f, 1.1875f};
extern "C" __global__ void fp8(float *out) {
    const int b = threadIdx.x;
    __nv_fp8_e4m3 e4;
    e4.__x = (__nv_fp8_storage_t)b;
    __nv_fp8_e5m2 e5;
    e5.__x = (__nv_fp8_storage_t)b;
    out[b] = (float)e4;
    out[256 + b] = (float)e5;
    if (b < NV) {
        const float x = VALUES[b];
        out[512 + 4 * b] = __nv_cvt_float_to_fp8(x, __NV_SATFINITE, __NV_E4M3);
        out[512 + 4 * b + 1] = __nv_cvt_float_to_fp8(x, __NV_NOSAT, __NV_E4M3);
        out[512 + 4 * b + 2] = __nv_cvt_float_to_fp8(x, __NV_SATFINITE, __NV_E5M2);
        out[512 + 4 * b + 3] = __nv_cvt_float_to_fp8(x, __NV_NOSAT, __NV_E5M2);
    }
}
"#;

const FP8_VALUES: [f32; 20] = [
    0.0,
    -0.0,
    1.0,
    -1.5,
    0.3,
    448.0,
    460.0,
    464.0,
    500.0,
    -1000.0,
    0.000_976_562_5,
    0.001,
    0.002_929_687_5,
    1e-9,
    57344.0,
    61440.0,
    70000.0,
    3.0e-5,
    1.0625,
    1.1875,
];

/// An FP8 byte's value by the formats' definitions (OCP 8-bit floating point): `mant`
/// mantissa bits, exponent bias `bias`, and E4M3's lone NaN pattern or E5M2's IEEE top
/// exponent.
fn fp8_value(b: u8, mant: u32, bias: i32) -> f64 {
    let sign = if b & 0x80 != 0 { -1.0 } else { 1.0 };
    let exp = i32::from((b & 0x7f) >> mant);
    let m = f64::from(b & ((1 << mant) - 1));
    let top = (1 << (7 - mant)) - 1;
    if mant == 3 && b & 0x7f == 0x7f {
        return f64::NAN;
    }
    if mant == 2 && exp == top {
        return if m > 0.0 {
            f64::NAN
        } else {
            sign * f64::INFINITY
        };
    }
    let scale = 2f64.powi(1 - bias - mant as i32);
    sign * if exp == 0 {
        m * scale
    } else {
        (m + f64::from(1u32 << mant)) * 2f64.powi(exp - bias - mant as i32)
    }
}

/// The byte nearest `x` among the format's finite values, ties to the even byte; past the
/// largest (rounding to the value a step above it), the largest (`sat`) or E4M3's NaN and
/// E5M2's infinity.
fn fp8_nearest(x: f64, mant: u32, bias: i32, sat: bool) -> u8 {
    let finite: Vec<(u8, f64)> = (0..=0x7fu8)
        .map(|b| (b, fp8_value(b, mant, bias)))
        .filter(|(_, v)| v.is_finite())
        .collect();
    let sign = if x.is_sign_negative() { 0x80 } else { 0 };
    let a = x.abs();
    let (top, largest) = *finite.last().unwrap();
    let step = largest - finite[finite.len() - 2].1;
    let tie = largest + step / 2.0;
    if a > tie || (a == tie && top % 2 == 1) {
        return sign
            | match (sat, mant) {
                (true, _) => top,
                (false, 3) => 0x7f,
                (false, _) => 0x7c,
            };
    }
    let mut best = finite[0];
    for &(b, v) in &finite {
        let (d, db) = ((v - a).abs(), (best.1 - a).abs());
        if d < db || (d == db && b % 2 == 0) {
            best = (b, v);
        }
    }
    sign | best.0
}

#[test]
fn fp8_conversions_follow_the_formats() {
    let src = CudaSource::embedded("tests/fp8.cu", FP8);
    let out = sim_one_block(src.clone(), "fp8", 256, 512 + 4 * FP8_VALUES.len());
    for (format, mant, bias) in [(0, 3, 7), (1, 2, 15)] {
        for b in 0..=255u8 {
            let (got, want) = (
                f64::from(out[format * 256 + b as usize]),
                fp8_value(b, mant, bias),
            );
            assert!(
                got == want || (got.is_nan() && want.is_nan()),
                "format {format}, byte {b:#04x}: {got} against {want}"
            );
        }
    }
    for (i, &x) in FP8_VALUES.iter().enumerate() {
        for (j, (mant, bias, sat)) in [(3, 7, true), (3, 7, false), (2, 15, true), (2, 15, false)]
            .into_iter()
            .enumerate()
        {
            let got = out[512 + 4 * i + j] as u32;
            let want = u32::from(fp8_nearest(f64::from(x), mant, bias, sat));
            assert_eq!(got, want, "{x} as e{}m{mant} (saturating: {sat})", 7 - mant);
        }
    }
    if nvrtc::version().is_ok() {
        nvrtc::compile(&src, "sm_90").unwrap_or_else(|e| panic!("{e}"));
    }
}
