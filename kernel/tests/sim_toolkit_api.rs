//! The simulator's headers against the toolkit's: every function the toolkit's `cuda_fp16.h`,
//! `cuda_bf16.h`, `cuda_fp8.h`, math and device intrinsics headers declare takes the same arguments and
//! gives the same type in the simulator, and the families whose rounding, NaN, saturation or lane rules
//! differ from plain arithmetic give what the toolkit documents, bit for bit.

use half::{bf16, f16};
use kernel::CudaSource;
use kernel::testing::sim_one_block;

/// Runs `entry` of `code` as one block of `threads` threads whose only argument is the
/// output, `len` floats.
fn one_block(code: String, entry: &str, threads: u32, len: usize) -> Vec<f32> {
    let src = CudaSource {
        file: "tests/toolkit_api.cu".into(),
        code: code.into(),
        ..CudaSource::embedded("", "")
    };
    sim_one_block(src, entry, threads, len)
}

/// A declaration of the toolkit's header: its return type, name and parameter types.
struct Declaration {
    ret: String,
    name: String,
    params: Vec<String>,
}

/// The functions a toolkit header declares for device code, each on a line of its own that
/// starts with `mark` (`__CUDA_FP16_DECL__ __half __hadd(const __half a, const __half b);`,
/// `__SM_61_INTRINSICS_DECL__ int __dp4a(int srcA, int srcB, int c) __DEF_IF_HOST`), but the
/// deprecated ones.
fn declarations(text: &str, mark: &str) -> Vec<Declaration> {
    const ATTRIBUTES: [&str; 8] = [
        "__device_builtin__",
        "__cudart_builtin__",
        "__DEF_IF_HOST",
        "__cdecl",
        "__THROW",
        "NV_MATH_NOEXCEPT_OR_THROW",
        "throw()",
        "__CUDA_MATH_CRTIMP",
    ];
    let mut out = Vec::new();
    for (at, _) in text.match_indices(mark) {
        let line_start = text[..at].rfind('\n').map_or(0, |i| i + 1);
        if !text[line_start..at].trim().is_empty() {
            continue; // inside a #define, or after a template head
        }
        let rest = &text[at + mark.len()..];
        let end = [";", "{", "__DEF_IF_HOST", "\n#"]
            .iter()
            .filter_map(|t| rest.find(t))
            .min()
            .unwrap_or(rest.len());
        let mut decl = rest[..end].to_string();
        for a in ATTRIBUTES {
            decl = decl.replace(a, " ");
        }
        let decl = decl.trim().trim_start_matches("constexpr ").trim();
        if decl.contains("DEPRECAT") || decl.contains("__NV_ATOMIC_RET_TYPE") || !decl.contains('(')
        {
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
                // `const float a`, `unsigned int *p`; unnamed: `float`, `unsigned int`.
                const TYPE_WORDS: [&str; 9] = [
                    "int", "float", "double", "char", "short", "long", "unsigned", "signed", "bool",
                ];
                match p.rfind(|c: char| !(c.is_alphanumeric() || c == '_')) {
                    Some(at) if !TYPE_WORDS.contains(&&p[at + 1..]) => p[..=at].trim().to_string(),
                    _ => p.to_string(),
                }
            })
            .collect();
        // `void *f(...)`: the stars are the result's.
        let stars = name.trim().len() - name.trim().trim_start_matches(['*', '&']).len();
        out.push(Declaration {
            ret: format!("{}{}", ret.trim(), &name.trim()[..stars]),
            name: name.trim()[stars..].to_string(),
            params,
        });
    }
    out
}

/// Whether a declaration stands in the toolkit's math header for another platform's C
/// library, behind conditions the reading above does not evaluate: MSVC's and libc++'s
/// (`_FSinx`, `_Dsign`, `int isnan(double)`, `__libcpp_isnan`), macOS's (`__isnand`), or a
/// template over a type the header names only there (`T`, `NV_INT_OR_BOOL`).
fn for_another_platform(d: &Declaration) -> bool {
    let msvc = ["_F", "_D", "_L", "_fdsign", "_dsign", "_ldsign"];
    let apple = [
        "__isnand",
        "__isinfd",
        "__signbitd",
        "__isfinite",
        "__isfinitef",
        "__isfinited",
    ];
    msvc.iter().any(|p| d.name.starts_with(p))
        || apple.contains(&d.name.as_str())
        || d.name.starts_with("__libcpp")
        || d.params
            .iter()
            .chain([&d.ret])
            .any(|t| t == "T" || t.contains("NV_INT_OR_BOOL"))
        || (["isnan", "isinf", "isfinite", "signbit"].contains(&d.name.as_str()) && d.ret == "int")
}

/// A static_assert a call of each declaration of `headers` (a header of the toolkit and the
/// mark its declarations start with) for the simulator's compiler: the call takes the
/// declaration's argument types and gives its type. With the number of declarations.
fn signature_checks(toolkit: &std::path::Path, headers: &[(&str, &str)]) -> (String, usize) {
    let mut checks = String::new();
    let mut count = 0;
    for (header, mark) in headers {
        let text = std::fs::read_to_string(toolkit.join(header)).unwrap();
        for d in declarations(&text, mark) {
            if for_another_platform(&d) {
                continue;
            }
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
    (checks, count)
}

#[test]
fn every_function_of_the_toolkits_half_bf16_and_fp8_headers_is_declared_alike() {
    let Some(toolkit) = kernel::cuda::discovery::discovery().include_dir() else {
        panic!(
            "no CUDA headers found: this test needs them; run tools/install-cuda-tools.sh first"
        );
    };
    let (checks, count) = signature_checks(
        toolkit,
        &[
            ("cuda_fp16.h", "__CUDA_FP16_DECL__"),
            ("cuda_fp16.h", "__CUDA_HOSTDEVICE_FP16_DECL__"),
            ("cuda_bf16.h", "__CUDA_BF16_DECL__"),
            ("cuda_bf16.h", "__CUDA_HOSTDEVICE_BF16_DECL__"),
            ("cuda_fp8.h", "__CUDA_HOSTDEVICE_FP8_DECL__"),
        ],
    );
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
        "#include <cuda_fp16.h>\n#include <cuda_bf16.h>\n#include <cuda_fp8.h>\n#include <type_traits>\n#include <utility>\n\
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
    // E8M0 scales: a power of two in the rounding direction, past 2^127 the largest or NaN.
    (
        "__nv_cvt_float_to_e8m0(3.0f, __NV_SATFINITE, cudaRoundZero)",
        128.0,
    ),
    (
        "__nv_cvt_float_to_e8m0(-3.0f, __NV_SATFINITE, cudaRoundPosInf)",
        129.0,
    ),
    (
        "__nv_cvt_float_to_e8m0(3e38f, __NV_SATFINITE, cudaRoundPosInf)",
        254.0,
    ),
    (
        "__nv_cvt_float_to_e8m0(3e38f, __NV_NOSAT, cudaRoundPosInf)",
        255.0,
    ),
    ("__nv_cvt_e8m0_to_bf16raw(130).x", 0x4100 as f64),
    (
        "__nv_cvt_fp8x2_to_halfraw2(0x3C38, __NV_E4M3).y",
        0x3E00 as f64,
    ),
];

#[test]
fn half_and_bf16_functions_round_saturate_and_compare_as_the_toolkit_documents() {
    let body: String = CASES
        .iter()
        .enumerate()
        .map(|(i, (expr, _))| format!("  out[{i}] = (float)({expr});\n"))
        .collect();
    let code = format!(
        "#include <cuda_fp16.h>\n#include <cuda_bf16.h>\n#include <cuda_fp8.h>\n#include <math.h>\n\
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

/// The half and bfloat16 types' constructors and conversions that the toolkit's headers give
/// them besides the functions: from and to their raw bits, a pair from two halves (DeepSpeed
/// builds its zeros so).
#[test]
fn half_types_convert_from_and_to_their_raw_bits_as_the_toolkits_do() {
    let code = "#include <cuda_fp16.h>\n#include <cuda_bf16.h>\n\
        extern \"C\" __global__ void raw(float *out) {\n\
        \x20 constexpr __half2_raw two = {0x4000, 0x3C00};\n\
        \x20 __half2 h2 = __half2(two);\n\
        \x20 __half one = __half(__half_raw{0x3C00});\n\
        \x20 __nv_bfloat162_raw b2r; b2r.x = 0x4040; b2r.y = 0x3F80;\n\
        \x20 __nv_bfloat162 b2 = __nv_bfloat162(b2r);\n\
        \x20 __half2 set; set = __half2_raw{0x4200, 0x0000};\n\
        \x20 __half2_raw back = h2;\n\
        \x20 __nv_bfloat16_raw b1 = __nv_bfloat16(2.5f);\n\
        \x20 const __half2 pair(__float2half(4.0f), one);\n\
        \x20 out[0] = __low2float(h2); out[1] = __high2float(h2); out[2] = one;\n\
        \x20 out[3] = __low2float(b2); out[4] = __high2float(b2); out[5] = __low2float(set);\n\
        \x20 out[6] = (float)back.x; out[7] = (float)b1.x; out[8] = __low2float(pair);\n\
        }\n";
    assert_eq!(
        one_block(code.into(), "raw", 1, 9),
        [2.0, 1.0, 1.0, 3.0, 1.0, 3.0, 16384.0, 16416.0, 4.0]
    );
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

#[test]
fn every_intrinsic_of_the_toolkits_device_headers_is_declared_alike() {
    assert_declared_alike(
        &[
            ("crt/device_functions.h", "__DEVICE_FUNCTIONS_DECL__"),
            ("crt/device_functions.h", "__DEVICE_FUNCTIONS_STATIC_DECL__"),
            (
                "crt/device_functions.h",
                "__DEVICE_HOST_FUNCTIONS_STATIC_DECL__",
            ),
            (
                "crt/device_double_functions.h",
                "__DEVICE_DOUBLE_FUNCTIONS_DECL__",
            ),
            (
                "crt/device_double_functions.h",
                "extern __device__ __device_builtin__",
            ),
            ("sm_20_intrinsics.h", "extern __device__ __device_builtin__"),
            (
                "device_atomic_functions.h",
                "extern __device__ __device_builtin__",
            ),
            ("vector_functions.h", "__VECTOR_FUNCTIONS_DECL__"),
            (
                "device_atomic_functions.h",
                "__DEVICE_ATOMIC_FUNCTIONS_DECL__",
            ),
            (
                "sm_20_atomic_functions.h",
                "__SM_20_ATOMIC_FUNCTIONS_DECL__",
            ),
            (
                "sm_32_atomic_functions.h",
                "__SM_32_ATOMIC_FUNCTIONS_DECL__",
            ),
            (
                "sm_60_atomic_functions.h",
                "__SM_60_ATOMIC_FUNCTIONS_DECL__",
            ),
            ("sm_20_intrinsics.h", "__SM_20_INTRINSICS_DECL__"),
            ("sm_30_intrinsics.h", "__SM_30_INTRINSICS_DECL__"),
            ("sm_32_intrinsics.h", "__SM_32_INTRINSICS_DECL__"),
            ("sm_61_intrinsics.h", "__SM_61_INTRINSICS_DECL__"),
            ("crt/sm_70_rt.h", "__SM_70_RT_DECL__"),
            ("crt/sm_80_rt.h", "__SM_80_RT_DECL__"),
            ("crt/sm_90_rt.h", "__SM_90_RT_DECL__"),
        ],
        300,
    );
}

/// Compiles a call of every declaration of `headers` in the simulator (see
/// [`signature_checks`]), at least `at_least` of them, where the toolkit's headers are found.
fn assert_declared_alike(headers: &[(&str, &str)], at_least: usize) {
    let Some(toolkit) = kernel::cuda::discovery::discovery().include_dir() else {
        panic!(
            "no CUDA headers found: this test needs them; run tools/install-cuda-tools.sh first"
        );
    };
    let (checks, count) = signature_checks(toolkit, headers);
    assert!(count > at_least, "{count} declarations read");
    let code = format!(
        "#include <type_traits>\n#include <utility>\n{checks}\
         extern \"C\" __global__ void none(float *out) {{ out[0] = 1.0f; }}\n"
    );
    one_block(code, "none", 1, 1);
}

/// Each case: an expression of the kernel and, as C, the value it must equal.
const INTRINSICS: &[(&str, &str)] = &[
    // Directed rounding and conversions.
    ("__fadd_rd(1.0f, 1e-8f)", "1.0f"),
    ("__fadd_ru(1.0f, 1e-8f)", "nextafterf(1.0f, 2.0f)"),
    ("__fadd_rz(-1.0f, -1e-8f)", "-1.0f"),
    ("__fadd_rd(-1.0f, -1e-8f)", "nextafterf(-1.0f, -2.0f)"),
    (
        "__fdiv_ru(1.0f, 3.0f)",
        "nextafterf(__fdiv_rd(1.0f, 3.0f), 1.0f)",
    ),
    ("__fsqrt_ru(2.0f)", "nextafterf(__fsqrt_rd(2.0f), 2.0f)"),
    (
        "__fmaf_rz(1.0f + 0x1p-23f, 1.0f + 0x1p-23f, -1.0f)",
        "0x1p-22f",
    ),
    ("__dadd_ru(1.0, 1e-20)", "nextafter(1.0, 2.0)"),
    (
        "__double2float_rd(0.1)",
        "nextafterf(__double2float_ru(0.1), 0.0f)",
    ),
    ("__ull2float_ru(16777217ull)", "16777218.0f"),
    ("__ll2float_rz(-16777217ll)", "-16777216.0f"),
    ("__float2int_rn(2.5f)", "2"),
    ("__float2int_rz(NAN)", "0"),
    ("__float2int_rd(-3e10f)", "INT_MIN"),
    ("__float2ll_rz(NAN)", "LLONG_MIN"),
    ("__float2uint_ru(-0.5f)", "0u"),
    ("__double2ull_rd(1e30)", "ULLONG_MAX"),
    (
        "__hiloint2double(__double2hiint(-2.5), __double2loint(-2.5))",
        "-2.5",
    ),
    ("dadd(1.0, 1e-20, cudaRoundPosInf)", "nextafter(1.0, 2.0)"),
    ("__saturatef(NAN)", "0.0f"),
    // Integers.
    (
        "__byte_perm(0x33221100u, 0x77665544u, 0x5410u)",
        "0x55441100u",
    ),
    ("__funnelshift_l(0x80000000u, 0x1u, 4u)", "0x18u"),
    ("__funnelshift_r(0u, 0xFFFFFFFFu, 40u)", "0xFF000000u"),
    ("__funnelshift_rc(0u, 0xFFFFFFFFu, 40u)", "0xFFFFFFFFu"),
    ("__dp4a(0x01FF0203, 0x02020202, 10)", "20"),
    ("__dp2a_hi(0x0002FFFF, 0x03040000, 1)", "1 - 4 + 6"),
    ("__umul64hi(0x8000000000000000ull, 4ull)", "2ull"),
    ("__mul64hi(-1ll, 1ll)", "-1ll"),
    ("__mul24(0x01000003, 2)", "6"),
    ("__sad(-5, 3, 1u)", "9u"),
    ("__rhadd(-3, 0)", "-1"),
    ("__hadd(-3, 0)", "-2"),
    ("__urhadd(0xFFFFFFFFu, 0xFFFFFFFFu)", "0xFFFFFFFFu"),
    ("__fns(0x16u, 0u, 2)", "2u"),
    ("__fns(0x16u, 4u, -2)", "2u"),
    ("__fns(0u, 3u, 0)", "0xFFFFFFFFu"),
    ("__nv_bswap32(0x11223344u)", "0x44332211u"),
    // SIMD lanes: wrapping, saturating, comparisons as masks and as ones.
    ("__vadd2(0xFFFF0001u, 0x00010001u)", "0x00000002u"),
    ("__vaddss2(0x7FFF8000u, 0x00010001u)", "0x7FFF8001u"),
    ("__vsubus4(0x01020304u, 0x02020202u)", "0x00000102u"),
    ("__vcmpgtu4(0x01FF0000u, 0u)", "0xFFFF0000u"),
    ("__vsetgts2(0xFFFF0001u, 0u)", "0x00000001u"),
    ("__vavgs2(0xFFFF0003u, 0u)", "0x00000002u"),
    ("__vsads4(0x0000FF01u, 0x00000102u)", "3u"),
    ("__vabsss2(0x80000001u)", "0x7FFF0001u"),
    ("__vabs2(0x80000001u)", "0x80000001u"),
    ("__vhaddu4(0xFF000003u, 0x01000001u)", "0x80000002u"),
    // DPX: the sum wraps before the max; relu; max with its predicate.
    ("__viaddmax_s32(2, 3, 4)", "5"),
    ("__viaddmax_s32(INT_MAX, 1, 0)", "0"),
    (
        "__vimax3_s16x2_relu(0xFFFE0005u, 0xFFFF0001u, 0xFFFD0002u)",
        "0x00000005u",
    ),
    (
        "__viaddmin_u16x2(0xFFFF0001u, 0x00020001u, 0x00050005u)",
        "0x00010002u",
    ),
    (
        "[] { bool p = false; return __vibmin_s32(3, 3, &p) == 3 && p; }()",
        "true",
    ),
    // Math functions C's library lacks, against known values.
    ("fabs(erfinv(erf(0.5)) - 0.5) < 1e-15", "true"),
    ("fabs(erfcinv(1e-300) - 26.209469960516428) < 1e-12", "true"),
    ("fabs(erfcx(30.0) - 0.018795888861416751) < 1e-15", "true"),
    ("fabs(erfcx(1e3) - 5.641893014533877e-4) < 1e-18", "true"),
    (
        "fabs(normcdfinv(0.975) - 1.959963984540054) < 1e-14",
        "true",
    ),
    (
        "fabs(cyl_bessel_i0(1.0) - 1.2660658777520082) < 1e-15",
        "true",
    ),
    (
        "fabs(cyl_bessel_i1(-1.0) + 0.5651591039924851) < 1e-15",
        "true",
    ),
    ("norm4d(1.0, 2.0, 2.0, 4.0)", "5.0"),
    (
        "[] { const double v[3] = {3, 4, 12}; return rnorm(3, v); }()",
        "1.0 / 13.0",
    ),
    ("erfinvf(0.0f) + umin(3u, 7u) + ullmax(2ull, 9ull)", "12.0f"),
];

#[test]
fn device_intrinsics_round_saturate_and_split_lanes_as_the_toolkit_documents() {
    let body: String = INTRINSICS
        .iter()
        .enumerate()
        .map(|(i, (expr, want))| format!("  out[{i}] = ({expr}) == ({want});\n"))
        .collect();
    let code = format!(
        "#include <math.h>\n#include <limits.h>\n\
         extern \"C\" __global__ void cases(float *out) {{\n{body}}}\n"
    );
    let out = one_block(code, "cases", 1, INTRINSICS.len());
    let wrong: Vec<String> = INTRINSICS
        .iter()
        .zip(&out)
        .filter(|&(_, &ok)| ok != 1.0)
        .map(|((expr, want), _)| format!("{expr} is not {want}"))
        .collect();
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
}

/// The atomics a block shares and the warp's matches: each of 64 threads adds, decrements,
/// takes a maximum and swaps; lanes holding equal values find each other.
#[test]
fn scoped_atomics_and_warp_matches_count_every_thread() {
    let code = "\
        extern \"C\" __global__ void atomics(float *out) {\n\
        \x20 __shared__ float4 sum;\n\
        \x20 __shared__ unsigned down;\n\
        \x20 __shared__ long long low;\n\
        \x20 __shared__ unsigned short flag;\n\
        \x20 __shared__ unsigned swaps;\n\
        \x20 const int t = threadIdx.x;\n\
        \x20 if (t == 0) { sum = make_float4(0, 0, 0, 0); down = 100; low = 0; flag = 0; swaps = 0; }\n\
        \x20 __syncthreads();\n\
        \x20 atomicAdd_block(&sum, make_float4(1, 2, 3, 4));\n\
        \x20 atomicDec_system(&down, 1000u);\n\
        \x20 atomicMin(&low, -(long long)t * 1000000000000ll);\n\
        \x20 if (atomicCAS(&flag, (unsigned short)0, (unsigned short)(t + 1)) == 0) atomicAdd(&swaps, 1u);\n\
        \x20 const unsigned same = __match_any_sync(0xFFFFFFFFu, t % 3);\n\
        \x20 int all = -1;\n\
        \x20 const unsigned every = __match_all_sync(0xFFFFFFFFu, t / 32, &all);\n\
        \x20 int differ = -1;\n\
        \x20 const unsigned none = __match_all_sync(0xFFFFFFFFu, t, &differ);\n\
        \x20 __syncthreads();\n\
        \x20 if (t == 0) {\n\
        \x20   out[0] = sum.x; out[1] = sum.w; out[2] = down; out[3] = low / 1000000000000ll;\n\
        \x20   out[4] = swaps; out[5] = same == 0x49249249u; out[6] = every == 0xFFFFFFFFu && all == 1;\n\
        \x20 }\n\
        \x20 if (t == 1) out[7] = same == 0x92492492u && none == 0 && differ == 0;\n\
        }\n";
    assert_eq!(
        one_block(code.into(), "atomics", 64, 8),
        [64.0, 256.0, 36.0, -63.0, 1.0, 1.0, 1.0, 1.0]
    );
}

#[test]
fn every_math_function_of_the_toolkit_is_declared_alike() {
    let math = "crt/math_functions.h";
    assert_declared_alike(
        &[
            (math, "extern __DEVICE_FUNCTIONS_DECL__ __device_builtin__"),
            (
                math,
                "extern __CUDA_MATH_CRTIMP __DEVICE_FUNCTIONS_DECL__ __device_builtin__",
            ),
            (
                math,
                "extern __DEVICE_FUNCTIONS_DECL__ __cudart_builtin__ __device_builtin__",
            ),
            (math, "extern __device__ __device_builtin__"),
            (math, "__MATH_FUNCTIONS_DECL__"),
            (math, "__DEVICE_FUNCTIONS_DECL__"),
        ],
        300,
    );
}

/// A file built with `-D N=...` for a letter (as `define=` gives one) leaves the simulator's
/// headers alone: their own names of one letter would turn into the number.
#[test]
fn defines_of_one_letter_do_not_reach_the_simulators_headers() {
    let code = "#include <cuda_fp16.h>\n#include <cuda_bf16.h>\n#include <cuda_fp8.h>\n\
        #include <mma.h>\n#include <cooperative_groups.h>\n#include <cooperative_groups/reduce.h>\n\
        #include <cuda/barrier>\n#include <cuda/pipeline>\n#include <cuda_pipeline.h>\n\
        extern \"C\" __global__ void letters(float *out) { out[0] = A + Z; }\n";
    let src = ('A'..='Z').fold(
        CudaSource {
            file: "tests/letters.cu".into(),
            code: code.into(),
            ..CudaSource::embedded("", "")
        },
        |src, c| src.define(c.to_string(), 7),
    );
    assert_eq!(sim_one_block(src, "letters", 1, 1), [14.0]);
}
