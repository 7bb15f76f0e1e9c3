//! The simulator's `cuda_fp16.h` and `cuda_bf16.h` against the toolkit's: every function the
//! toolkit's headers declare takes the same arguments and gives the same type in the
//! simulator, and the families whose rounding, NaN and saturation rules differ from plain
//! arithmetic give what the toolkit documents, bit for bit.

use half::{bf16, f16};
use kernel::sim::SimDevice;
use kernel::testing::{PlanKernel, inputs};
use kernel::{Arg, Buf, CudaPlan, CudaSource, Dtype, Executor, Launch, Shape, Step};

/// Runs `entry` of `code` as one block of `threads` threads whose only argument is the
/// output, `len` floats.
fn one_block(code: String, entry: &str, threads: u32, len: usize) -> Vec<f32> {
    let plan = CudaPlan {
        inputs: vec![Dtype::F32; 2],
        steps: vec![Step::Kernel(Launch {
            source: CudaSource {
                file: "tests/half_api.cu".into(),
                code: code.into(),
                ..CudaSource::embedded("", "")
            },
            entry: entry.to_string().into(),
            grid: [1, 1, 1],
            block: [threads, 1, 1],
            dynamic_smem: 0,
            args: vec![Arg::Ptr(Buf::Output)],
        })],
        ..Default::default()
    };
    let shape = Shape::gemm(1, len, 1);
    let dev = SimDevice::new().expect("the simulator needs a host C++ compiler");
    let k = PlanKernel::fp32(plan);
    let data = inputs(&shape, 3);
    let mut p = dev
        .prepare(&k, &shape, &data)
        .unwrap_or_else(|e| panic!("{e}"));
    p.run().unwrap_or_else(|e| panic!("{e}"));
    p.output().unwrap()
}

/// A declaration of the toolkit's header: its return type, name and parameter types.
struct Declaration {
    ret: String,
    name: String,
    params: Vec<String>,
}

/// The functions a toolkit header declares for device code (`__CUDA_FP16_DECL__ __half
/// __hadd(const __half a, const __half b);`), but the deprecated ones.
fn declarations(text: &str, mark: &str) -> Vec<Declaration> {
    let mut out = Vec::new();
    for (at, _) in text.match_indices(mark) {
        let line_start = text[..at].rfind('\n').map_or(0, |i| i + 1);
        if !text[line_start..at].trim().is_empty() {
            continue; // inside a #define
        }
        let Some(end) = text[at..].find([';', '{']).map(|j| at + j) else {
            continue;
        };
        let decl = text[at + mark.len()..end].trim();
        if text.as_bytes()[end] != b';' || decl.contains("DEPRECAT") || !decl.contains('(') {
            continue;
        }
        let (head, params) = decl.split_once('(').unwrap();
        let params = params.rsplit_once(')').unwrap().0;
        let (ret, name) = head.trim().rsplit_once(char::is_whitespace).unwrap();
        let params = params
            .split(',')
            .map(|p| p.split('=').next().unwrap().trim())
            .filter(|p| !p.is_empty() && *p != "void")
            .map(|p| {
                let name_at = p
                    .rfind(|c: char| !(c.is_alphanumeric() || c == '_'))
                    .unwrap();
                p[..=name_at].trim().to_string()
            })
            .collect();
        out.push(Declaration {
            ret: ret.trim().to_string(),
            name: name.trim().to_string(),
            params,
        });
    }
    out
}

#[test]
fn every_function_of_the_toolkits_half_and_bf16_headers_is_declared_alike() {
    let Some(toolkit) = kernel::cuda::discovery::discovery().include_dir() else {
        eprintln!("skipped: no CUDA headers found");
        return;
    };
    let mut checks = String::new();
    let mut count = 0;
    for (header, mark) in [
        ("cuda_fp16.h", "__CUDA_FP16_DECL__"),
        ("cuda_fp16.h", "__CUDA_HOSTDEVICE_FP16_DECL__"),
        ("cuda_bf16.h", "__CUDA_BF16_DECL__"),
        ("cuda_bf16.h", "__CUDA_HOSTDEVICE_BF16_DECL__"),
    ] {
        let text = std::fs::read_to_string(toolkit.join(header)).unwrap();
        for d in declarations(&text, mark) {
            let args: Vec<String> = d
                .params
                .iter()
                .map(|t| format!("std::declval<{t}>()"))
                .collect();
            let call = format!("{}({})", d.name, args.join(", "));
            checks.push_str(&format!(
                "static_assert(std::is_same_v<decltype({call}), {ret}>, \"{header}: {ret} {name}({params})\");\n",
                ret = d.ret,
                name = d.name,
                params = d.params.join(", "),
            ));
            count += 1;
        }
    }
    // The toolkit's 13.0 headers declare about 470; fewer means the reading above broke.
    assert!(count > 400, "{count} declarations read");
    let mut constants = Vec::new();
    for kind in ["FP16", "BF16"] {
        for c in [
            "INF",
            "NAN",
            "MIN_DENORM",
            "MAX_NORMAL",
            "NEG_ZERO",
            "ZERO",
            "ONE",
        ] {
            constants.push(format!("CUDART_{c}_{kind}"));
        }
    }
    let code = format!(
        "#include <cuda_fp16.h>\n#include <cuda_bf16.h>\n#include <type_traits>\n#include <utility>\n\
         {checks}\
         extern \"C\" __global__ void constants(float *out) {{\n\
         \x20 const float v[] = {{{}}};\n\
         \x20 for (int i = 0; i < (int)(sizeof v / sizeof v[0]); ++i) out[i] = v[i];\n}}\n",
        constants
            .iter()
            .map(|c| format!("(float){c}"))
            .collect::<Vec<_>>()
            .join(", ")
    );
    let out = one_block(code, "constants", 1, constants.len());
    let want = [
        f32::INFINITY,
        f32::NAN,
        f16::from_bits(1).to_f32(),
        f16::MAX.to_f32(),
        -0.0,
        0.0,
        1.0,
        f32::INFINITY,
        f32::NAN,
        bf16::from_bits(1).to_f32(),
        bf16::MAX.to_f32(),
        -0.0,
        0.0,
        1.0,
    ];
    for ((c, got), want) in constants.iter().zip(&out).zip(want) {
        assert!(
            got.to_bits() == want.to_bits() || (got.is_nan() && want.is_nan()),
            "{c}: {got} ({:#x}), not {want}",
            got.to_bits()
        );
    }
}

/// Each case: an expression of the kernel and the number it must give (a half's or a bf16's
/// bits where its sign or NaN matters: `bits(...)`).
const CASES: &[(&str, f64)] = &[
    // Rounding modes: 1 + 0.75 ulp, its negative, past the largest finite, below half the
    // least subnormal.
    ("bits(__float2half_rn(X))", 0x3C01 as f64),
    ("bits(__float2half_rz(X))", 0x3C00 as f64),
    ("bits(__float2half_rd(X))", 0x3C00 as f64),
    ("bits(__float2half_ru(X))", 0x3C01 as f64),
    ("bits(__float2half_rz(-X))", 0xBC00 as f64),
    ("bits(__float2half_rd(-X))", 0xBC01 as f64),
    ("bits(__float2half_ru(-X))", 0xBC00 as f64),
    ("bits(__float2half_rn(1e6f))", 0x7C00 as f64),
    ("bits(__float2half_rz(1e6f))", 0x7BFF as f64),
    ("bits(__float2half_rd(-1e6f))", 0xFC00 as f64),
    ("bits(__float2half_ru(-1e6f))", 0xFBFF as f64),
    ("bits(__float2half_ru(TINY))", 0x0001 as f64),
    ("bits(__float2half_rn(TINY))", 0x0000 as f64),
    ("bits(__float2half_rd(-TINY))", 0x8001 as f64),
    ("bits(__float2half_ru(-TINY))", 0x8000 as f64),
    ("bits(__float2bfloat16_rn(XB))", 0x3F81 as f64),
    ("bits(__float2bfloat16_rz(XB))", 0x3F80 as f64),
    ("bits(__float2bfloat16_rd(-XB))", 0xBF81 as f64),
    ("bits(__float2bfloat16_ru(-XB))", 0xBF80 as f64),
    // Integers to the types: 65520 ties between 65504 and where the next would be (to inf);
    // 2^63 + 2^55 + 1 lies past the tie a conversion through double would see.
    ("bits(__int2half_rn(65520))", 0x7C00 as f64),
    ("bits(__int2half_rz(70000))", 0x7BFF as f64),
    ("bits(__uint2half_ru(2049u))", 0x6801 as f64),
    (
        "bits(__ull2bfloat16_rn(0x8080000000000001ull))",
        0x5F01 as f64,
    ),
    ("bits(__ll2bfloat16_rd(-257))", 0xC381 as f64),
    // The types to integers: ties to even, saturation, NaN.
    ("__half2int_rn(__float2half(2.5f))", 2.0),
    ("__half2int_rd(__float2half(-2.5f))", -3.0),
    ("__half2short_ru(__float2half(65504.0f))", 32767.0),
    ("__half2uint_rz(__float2half(-3.5f))", 0.0),
    ("__half2uchar_rz(__float2half(300.0f))", 255.0),
    ("__half2char_rz(__float2half(-200.0f))", -128.0),
    ("__half2int_rz(CUDART_NAN_FP16)", 0.0),
    ("__half2ll_rz(CUDART_NAN_FP16)", -9223372036854775808.0),
    ("__bfloat162int_ru(__float2bfloat16(1.5f))", 2.0),
    // Saturation and relu.
    ("__hadd_sat(__float2half(0.75f), __float2half(0.5f))", 1.0),
    (
        "bits(__hsub_sat(__float2half(0.25f), __float2half(0.5f)))",
        0.0,
    ),
    ("bits(__hmul_sat(CUDART_INF_FP16, CUDART_ZERO_FP16))", 0.0),
    (
        "__hfma_sat(__float2half(0.5f), __float2half(0.5f), __float2half(0.5f))",
        0.75,
    ),
    (
        "bits(__hfma_relu(__float2half(2.0f), __float2half(-3.0f), __float2half(1.0f)))",
        0.0,
    ),
    (
        "bits(__hfma_relu(CUDART_INF_FP16, CUDART_ZERO_FP16, CUDART_ONE_FP16))",
        0x7FFF as f64,
    ),
    (
        "__hfma_relu(__float2bfloat16(2.0f), __float2bfloat16(3.0f), __float2bfloat16(1.0f))",
        7.0,
    ),
    // max and min: NaN gives way unless _nan, +0 above -0.
    ("__hmax(CUDART_NAN_FP16, __float2half(2.0f))", 2.0),
    ("__hmax(__float2half(2.0f), CUDART_NAN_FP16)", 2.0),
    ("bits(__hmax(CUDART_NEG_ZERO_FP16, CUDART_ZERO_FP16))", 0.0),
    (
        "bits(__hmin(CUDART_ZERO_FP16, CUDART_NEG_ZERO_FP16))",
        0x8000 as f64,
    ),
    (
        "bits(__hmax_nan(__float2half(2.0f), CUDART_NAN_FP16))",
        0x7FFF as f64,
    ),
    (
        "bits(__hmin(CUDART_NAN_FP16, CUDART_NAN_FP16))",
        0x7FFF as f64,
    ),
    (
        "bits(__hmin_nan(CUDART_NAN_BF16, __float2bfloat16(1.0f)))",
        0x7FFF as f64,
    ),
    // Comparisons: ordered and not, pairs, masks, both-lanes; operators as the toolkit's.
    ("__hne(CUDART_NAN_FP16, CUDART_ONE_FP16)", 0.0),
    ("__hneu(CUDART_NAN_FP16, CUDART_ONE_FP16)", 1.0),
    ("__hgeu(CUDART_NAN_BF16, CUDART_ONE_BF16)", 1.0),
    ("(float)(CUDART_NAN_FP16 != CUDART_NAN_FP16)", 1.0),
    ("(float)(CUDART_NAN_FP16 == CUDART_NAN_FP16)", 0.0),
    ("__hlt2_mask(P(1.0f, NAN), P(2.0f, 0.0f))", 65535.0),
    (
        "__hltu2_mask(P(1.0f, NAN), P(2.0f, 0.0f)) == 0xFFFFFFFFu",
        1.0,
    ),
    ("__high2float(__hgt2(P(1.0f, 3.0f), P(2.0f, 2.0f)))", 1.0),
    ("__low2float(__hgt2(P(1.0f, 3.0f), P(2.0f, 2.0f)))", 0.0),
    ("__hbge2(P(2.0f, 3.0f), P(2.0f, 2.0f))", 1.0),
    ("__hbgtu2(P(2.0f, 3.0f), P(2.0f, 2.0f))", 0.0),
    ("__hisinf(-CUDART_INF_FP16)", -1.0),
    ("__hisinf(CUDART_INF_BF16)", 1.0),
    ("__high2float(__hisnan2(P(1.0f, NAN)))", 1.0),
    // Complex multiply-add: (1 + 2i)(3 + 4i) + (5 + 6i) = 0 + 16i.
    (
        "__low2float(__hcmadd(P(1.0f, 2.0f), P(3.0f, 4.0f), P(5.0f, 6.0f)))",
        0.0,
    ),
    (
        "__high2float(__hcmadd(P(1.0f, 2.0f), P(3.0f, 4.0f), P(5.0f, 6.0f)))",
        16.0,
    ),
    // Math, rounded once.
    ("hexp10(__float2half(2.0f))", 100.0),
    ("bits(hrcp(__float2half(3.0f)))", 0x3555 as f64),
    ("hrint(__float2half(2.5f))", 2.0),
    ("hrint(__float2half(3.5f))", 4.0),
    ("htrunc(__float2half(-2.75f))", -2.0),
    ("hceil(__float2half(-2.75f))", -2.0),
    ("hfloor(__float2half(-2.75f))", -3.0),
    ("__high2float(h2sqrt(P(4.0f, 9.0f)))", 3.0),
    (
        "__low2float(h2log2(__floats2bfloat162_rn(8.0f, 2.0f)))",
        3.0,
    ),
    ("__lowhigh2highlow(P(1.0f, 2.0f)).x", 2.0),
];

#[test]
fn half_and_bf16_functions_round_saturate_and_compare_as_the_toolkit_documents() {
    let body: String = CASES
        .iter()
        .enumerate()
        .map(|(i, (expr, _))| format!("  out[{i}] = (float)({expr});\n"))
        .collect();
    let code = format!(
        "#include <cuda_fp16.h>\n#include <cuda_bf16.h>\n#include <math.h>\n\
         __device__ float bits(__half h) {{ return (float)__half_as_ushort(h); }}\n\
         __device__ float bits(__nv_bfloat16 h) {{ return (float)__bfloat16_as_ushort(h); }}\n\
         __device__ __half2 P(float a, float b) {{ return __floats2half2_rn(a, b); }}\n\
         #define X 1.000732421875f\n#define XB 1.005859375f\n#define TINY ldexpf(1.0f, -26)\n\
         extern \"C\" __global__ void cases(float *out) {{\n{body}}}\n"
    );
    let out = one_block(code, "cases", 1, CASES.len());
    let wrong: Vec<String> = CASES
        .iter()
        .zip(&out)
        .filter(|&(&(_, want), &got)| f64::from(got) != want)
        .map(|((expr, want), got)| format!("{expr} = {got}, not {want}"))
        .collect();
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
}

/// atomicAdd on a half and a half2 in shared memory: every thread's add lands.
#[test]
fn atomic_adds_of_halves_are_each_counted() {
    let code = "#include <cuda_fp16.h>\n\
        extern \"C\" __global__ void adds(float *out) {\n\
        \x20 __shared__ __half h;\n\
        \x20 __shared__ __half2 h2;\n\
        \x20 if (threadIdx.x == 0) { h = __float2half(0.0f); h2 = __floats2half2_rn(0.0f, 0.0f); }\n\
        \x20 __syncthreads();\n\
        \x20 atomicAdd(&h, __float2half(1.0f));\n\
        \x20 atomicAdd(&h2, __floats2half2_rn(1.0f, 2.0f));\n\
        \x20 __syncthreads();\n\
        \x20 if (threadIdx.x == 0) { out[0] = h; out[1] = __low2float(h2); out[2] = __high2float(h2); }\n\
        }\n";
    assert_eq!(one_block(code.into(), "adds", 64, 3), [64.0, 64.0, 128.0]);
}
