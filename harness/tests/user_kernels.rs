//! Kernels a user brings (`harness run --kernel FILE.cu:ENTRY,...`): the examples run
//! unmodified as rows in the simulator, and each mistake a user can make shows the message
//! that teaches what went wrong.

use harness::config::Config;
use harness::results::{RunResults, Status};
use harness::run::Ablation;
use harness::user_kernel::{Compiler, UserKernel, UserKernelSpec, run};
use kernel::cuda::nvrtc;
use kernel::sim::SimDevice;
use kernel::{Kernel, Shape, Workload};
use std::path::{Path, PathBuf};
use std::process::Command;

const GEMM_EXAMPLE: &str = "examples/gemm_blocktile.cu:sgemm_blocktile<64,64,8,8>,\
    signature=gemm-blas,block=512,grid=tile:64x64,smem=4096";
const MMA_PTX_EXAMPLE: &str =
    "examples/mma_ptx.cu:mma_ptx_gemm,block=128,grid=tile:64x64,precision=fp16";
const ATTENTION_EXAMPLE: &str = "examples/attention_rows.cu:attention_rows<32,64>,block=32,\
    grid=(cdiv(S,32),B*H),smem=2*32*D*4";

/// The repository root: the examples' paths are relative to it.
fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

/// A fresh folder for this test's files.
fn scratch_dir(test: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("user-kernels-{test}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// Loads `spec` (a path relative to the repository root, or absolute) for `workload`.
fn load(spec: &str, workload: Workload) -> UserKernel {
    let spec = if spec.starts_with('/') {
        spec.to_string()
    } else {
        format!("{}/{spec}", root().display())
    };
    UserKernel::load(&UserKernelSpec::parse(&spec).unwrap(), Some(workload), 1).unwrap()
}

/// Writes `code` as `name` into `dir` and loads it with `options`.
fn user_file(dir: &Path, name: &str, code: &str, options: &str) -> UserKernel {
    std::fs::write(dir.join(name), code).unwrap();
    load(
        &format!("{}/{name}:{options}", dir.display()),
        Workload::Gemm,
    )
}

/// The rows of `kernels` on `shapes` in the simulator, as `harness run` reports them.
fn sim_rows(users: &[UserKernel], shapes: &[Shape]) -> RunResults {
    let dev = SimDevice::new().expect("the simulator needs a host C++ compiler (g++)");
    let config = Config::defaults();
    let ablation = Ablation {
        dev: &dev,
        config: &config,
        kernels: users.iter().map(|u| u as &dyn Kernel).collect(),
        shapes: vec![(users[0].workload, shapes.to_vec())],
        timing: None,
        keep_unrunnable: true,
    };
    let mut results = ablation.run(|_| {}).unwrap();
    run::annotate(&mut results, users, false);
    results
}

fn harness(args: &[&str]) -> (bool, String) {
    let lab = std::env::temp_dir().join(format!("user-kernels-lab-{}", std::process::id()));
    let out = Command::new(env!("CARGO_BIN_EXE_harness"))
        .current_dir(root())
        .env("LAB_DIR", lab)
        .args(args)
        .output()
        .unwrap();
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    (out.status.success(), text)
}

#[test]
fn the_examples_run_unmodified_as_user_rows_in_the_simulator() {
    let dir = scratch_dir("examples");
    for (workload, sizes, spec) in [
        ("gemm", "100x37x129,64x64x64", GEMM_EXAMPLE),
        // Inline PTX (cp.async, ldmatrix, mma.sync) as tensor-core tutorials write it.
        ("gemm", "100x37x129,64x64x64", MMA_PTX_EXAMPLE),
        ("attention", "1x2x37x16,2x1x50x24-causal", ATTENTION_EXAMPLE),
    ] {
        let args = [
            "run",
            "--device",
            "sim",
            "--workload",
            workload,
            "--sizes",
            sizes,
            "--kernel",
            spec,
            "--out",
            &format!("{}/{workload}", dir.display()),
        ];
        let (ok, text) = harness(&args);
        assert!(ok, "{text}");
        assert!(text.contains(run::NO_GPU_LINE), "{text}");
        let passed = text
            .lines()
            .filter(|l| l.starts_with("  user ") && l.ends_with(" pass"));
        assert_eq!(passed.count(), 2, "{text}");
        assert!(text.contains("user "), "{text}");
        let json = std::fs::read_to_string(dir.join(workload).join("results.json")).unwrap();
        assert!(json.contains("\"role\": \"user\""), "{json}");
        if nvrtc::version().is_ok() {
            // `inspect`: registers and shared memory of the instantiation the lab launched.
            assert!(json.contains("\"registers\""), "{json}");
        }
    }
}

#[test]
fn a_compile_error_shows_the_compiler_log_with_the_users_file_and_line() {
    let dir = scratch_dir("compile");
    let code = "#include <cstdio>\n\
        __global__ void broken(const float *A, const float *B, float *C, int M, int N, int K) {\n\
        \x20 int i = threadIdx.x;\n\
        \x20 C[i] = A[i] + undeclared_name;\n\
        }\n";
    let k = user_file(&dir, "broken.cu", code, "broken,block=64,grid=tile:64");
    let file = dir.join("broken.cu").display().to_string();
    let e = k.compile_check(Compiler::Sim).unwrap_err().to_string();
    assert!(e.contains(&format!("{file}:4:")), "{e}");
    assert!(
        e.contains("undeclared_name") && e.contains("could not compile"),
        "{e}"
    );
    if nvrtc::version().is_ok() {
        let e = k
            .compile_check(Compiler::Nvrtc("sm_80"))
            .unwrap_err()
            .to_string();
        assert!(e.contains(&format!("{file}(4): error")), "{e}");
        assert!(e.contains("undeclared_name"), "{e}");
    }
}

#[test]
fn a_parameter_list_not_matching_the_signature_fails_to_compile_showing_both() {
    // The BLAS-style example run with the default GEMM signature (A, B, C, M, N, K).
    let spec = GEMM_EXAMPLE.replace("signature=gemm-blas,", "");
    let k = load(&spec, Workload::Gemm);
    let mut compilers = vec![Compiler::Sim];
    if nvrtc::version().is_ok() {
        compilers.push(Compiler::Nvrtc("sm_80"));
    }
    for c in compilers {
        let e = k.compile_check(c).unwrap_err().to_string();
        assert!(e.contains("do not match the `gemm` signature"), "{e}");
        assert!(
            e.contains(
                "the lab calls:   sgemm_blocktile<64,64,8,8>(float * A, float * B, float * C, \
                 int M, int N, int K)"
            ),
            "{e}"
        );
        assert!(
            e.contains(
                "gemm_blocktile.cu:18 declares: sgemm_blocktile(int M, int N, int K, float alpha, \
                 const float *A, const float *B, float beta, float *C)"
            ),
            "{e}"
        );
        assert!(
            e.contains("gemm-blas (M, N, K, alpha, A, B, beta, C)"),
            "{e}"
        );
    }
}

#[test]
fn a_launch_leaving_outputs_unwritten_names_the_first_unwritten_element() {
    // One block where 2 x 1 are needed: rows 64.. of C keep their fill value.
    let spec = GEMM_EXAMPLE.replace("grid=tile:64x64", "grid=(1,1)");
    let users = [load(&spec, Workload::Gemm)];
    let results = sim_rows(&users, &[Shape::gemm(100, 37, 129)]);
    let row = &results.workloads[0].shapes[0].rows[0];
    assert_eq!(row.status, Status::Failed, "{row:?}");
    let why = row.reason.as_deref().unwrap();
    assert!(
        why.contains("1332 of 3700 elements were never written")
            && why.contains("C[64, 0] (index 2368)"),
        "{why}"
    );
}

#[test]
fn inline_ptx_the_simulator_does_not_emulate_is_named_with_its_file_and_line() {
    let dir = scratch_dir("ptx");
    let code = "__global__ void named_barrier(const float *A, const float *B, float *C,\n\
        \x20                             int M, int N, int K) {\n\
        \x20 C[threadIdx.x] = A[threadIdx.x];\n\
        \x20 asm volatile(\"bar.sync 1, 64;\");\n\
        }\n";
    let users = [user_file(
        &dir,
        "barrier.cu",
        code,
        "named_barrier,block=64,grid=(1,1)",
    )];
    let results = sim_rows(&users, &[Shape::gemm(8, 8, 8)]);
    let row = &results.workloads[0].shapes[0].rows[0];
    assert_eq!(row.status, Status::Unsupported, "{row:?}");
    let why = row.reason.as_deref().unwrap();
    assert!(
        why.contains("barrier.cu:4: inline PTX `bar.sync`: not emulated"),
        "{why}"
    );
}

#[test]
fn an_out_of_bounds_access_in_the_simulator_names_thread_block_and_index() {
    let dir = scratch_dir("oob");
    let code = "extern \"C\" __global__ void zero(const float *A, const float *B, float *C,\n\
        \x20                                    int M, int N, int K) {\n\
        \x20 C[blockIdx.x * blockDim.x + threadIdx.x] = 0.0f; // no `if (i < M * N)`\n\
        }\n";
    let users = [user_file(
        &dir,
        "oob.cu",
        code,
        "zero,block=256,grid=tile:256",
    )];
    // 100 x 37 = 3700 outputs, 15 blocks of 256 threads: the last 140 threads write past C.
    let results = sim_rows(&users, &[Shape::gemm(100, 37, 1)]);
    let row = &results.workloads[0].shapes[0].rows[0];
    assert_eq!(row.status, Status::Error, "{row:?}");
    let why = row.reason.as_deref().unwrap();
    assert!(
        why.contains("out-of-bounds write past the end of buffer")
            && why.contains("at element 37")
            && why.contains("of block (14,0,0)")
            && why.contains("by thread ("),
        "{why}"
    );
}

#[test]
fn a_kernel_assuming_divisible_sizes_passes_on_them_and_shows_its_tail_failure() {
    let dir = scratch_dir("tail");
    // The classic shared-memory tiling with no bounds checks: right when M, N and K are
    // multiples of 16, wrong (or out of bounds) otherwise.
    let code = "#define T 16\n\
        __global__ void tiled(const float *A, const float *B, float *C, int M, int N, int K) {\n\
        \x20 __shared__ float As[T][T], Bs[T][T];\n\
        \x20 int r = blockIdx.y * T + threadIdx.y, c = blockIdx.x * T + threadIdx.x;\n\
        \x20 float acc = 0;\n\
        \x20 for (int k0 = 0; k0 < K; k0 += T) {\n\
        \x20   As[threadIdx.y][threadIdx.x] = A[r * K + k0 + threadIdx.x];\n\
        \x20   Bs[threadIdx.y][threadIdx.x] = B[(k0 + threadIdx.y) * N + c];\n\
        \x20   __syncthreads();\n\
        \x20   for (int k = 0; k < T; ++k) acc += As[threadIdx.y][k] * Bs[k][threadIdx.x];\n\
        \x20   __syncthreads();\n\
        \x20 }\n\
        \x20 C[r * N + c] = acc;\n\
        }\n";
    let users = [user_file(
        &dir,
        "tiled.cu",
        code,
        "tiled,block=16x16,grid=tile:16x16",
    )];
    let results = sim_rows(
        &users,
        &[Shape::gemm(64, 32, 48), Shape::gemm(100, 37, 129)],
    );
    let shapes = &results.workloads[0].shapes;
    assert_eq!(
        shapes[0].rows[0].status,
        Status::Passed,
        "{:?}",
        shapes[0].rows[0]
    );
    let tail = &shapes[1].rows[0];
    assert_ne!(tail.status, Status::Passed, "{tail:?}");
    let why = tail.reason.as_deref().unwrap();
    assert!(
        why.contains("C is 100x37, not a whole number of 16x16 tiles")
            && why.contains("rows from 96, columns from 32"),
        "{why}"
    );
}

#[test]
fn kernel_sections_of_the_config_are_read_and_bad_keys_point_at_their_line() {
    let good = "seed = 3\n\n[[kernel]]\nfile = \"k.cu\"\nentry = \"sgemm<64,64,8>\"\n\
        workload = \"gemm\"\nblock = 256\ngrid = [\"cdiv(N,64)\", \"cdiv(M,64)\"]\nsmem = 4096\n";
    let c = Config::from_sources(Some(("cfg/mine.toml", good))).unwrap();
    assert_eq!(c.kernels.len(), 1);
    assert_eq!(c.kernels[0].file, PathBuf::from("cfg/k.cu"));
    assert_eq!(c.kernels[0].block, [256, 1, 1]);
    let typo = good.replace("smem = 4096", "smme = 4096");
    let e = Config::from_sources(Some(("mine.toml", &typo)))
        .unwrap_err()
        .to_string();
    assert!(e.starts_with("mine.toml:9:") && e.contains("smme"), "{e}");
    let names = good.replace("smem = 4096", "smem = \"64*Q\"");
    let e = Config::from_sources(Some(("mine.toml", &names)))
        .unwrap_err()
        .to_string();
    assert!(
        e.starts_with("mine.toml:9: [[kernel]] k.cu, key `smem`: `64*Q` uses Q; expressions for gemm may use M, N, K"),
        "{e}"
    );
    let bad = format!(
        "{good}\n[[kernel]]\nfile = \"b.cu\"\nentry = \"b\"\nblock = 64\ngrid = \"tile:8\"\nprecision = \"fp64\"\n"
    );
    let e = Config::from_sources(Some(("mine.toml", &bad)))
        .unwrap_err()
        .to_string();
    assert!(
        e.starts_with("mine.toml:16: [[kernel]] b.cu, key `precision`: unknown precision \"fp64\""),
        "{e}"
    );
}

#[test]
fn attention_lm_kernels_find_o_at_zero_and_their_running_max_at_minus_infinity() {
    let dir = scratch_dir("attention-lm");
    // One thread per query row, accumulating straight into O, l and m as the minimal public
    // flash-attention kernels do: correct only if the lab filled them as documented.
    let code = "__global__ void rows(const float *Q, const float *K, const float *V, float *O,\n\
        \x20 float *l, float *m, int B, int H, int S, int D, float scale, int causal) {\n\
        \x20 int bh = blockIdx.y, i = blockIdx.x * blockDim.x + threadIdx.x;\n\
        \x20 if (i >= S) return;\n\
        \x20 int r = bh * S + i;\n\
        \x20 const float *q = Q + (size_t)r * D;\n\
        \x20 float *o = O + (size_t)r * D;\n\
        \x20 if (m[r] != -INFINITY || l[r] != 0.0f || o[0] != 0.0f) { o[0] = NAN; return; }\n\
        \x20 for (int j = 0; j < (causal ? i + 1 : S); ++j) {\n\
        \x20   const float *k = K + ((size_t)bh * S + j) * D, *v = V + ((size_t)bh * S + j) * D;\n\
        \x20   float s = 0;\n\
        \x20   for (int d = 0; d < D; ++d) s += q[d] * k[d];\n\
        \x20   s *= scale;\n\
        \x20   float mn = fmaxf(m[r], s), c = expf(m[r] - mn), p = expf(s - mn);\n\
        \x20   for (int d = 0; d < D; ++d) o[d] = o[d] * c + p * v[d];\n\
        \x20   l[r] = l[r] * c + p;\n\
        \x20   m[r] = mn;\n\
        \x20 }\n\
        \x20 for (int d = 0; d < D; ++d) o[d] /= l[r];\n\
        }\n";
    std::fs::write(dir.join("rows.cu"), code).unwrap();
    let spec = format!(
        "{}/rows.cu:rows,signature=attention-lm,block=32,grid=(cdiv(S,32),B*H)",
        dir.display()
    );
    let users = [load(&spec, Workload::Attention)];
    let shapes = [
        Shape::parse(Workload::Attention, "1x2x37x16").unwrap(),
        Shape::parse(Workload::Attention, "2x1x20x8-causal").unwrap(),
    ];
    let results = sim_rows(&users, &shapes);
    for s in &results.workloads[0].shapes {
        assert_eq!(s.rows[0].status, Status::Passed, "{:?}", s.rows[0]);
    }
}

#[test]
fn inspect_compiles_an_unmodified_file_with_host_code() {
    if nvrtc::version().is_err() {
        eprintln!("skipped: NVRTC not found");
        return;
    }
    let dir = scratch_dir("inspect");
    let code = "#include <cstdio>\n#include <vector>\n#include <cublas_v2.h>\n\
        __global__ void scale(float *x, uint n) { uint i = threadIdx.x; if (i < n) x[i] *= 2; }\n\
        int main() {\n  std::vector<float> h(4);\n  cublasHandle_t handle;\n\
        \x20 scale<<<1, 4>>>(nullptr, 4);\n  printf(\"%f\\n\", h[0]);\n}\n";
    std::fs::write(dir.join("host.cu"), code).unwrap();
    let file = dir.join("host.cu");
    let (ok, text) = harness(&["inspect", file.to_str().unwrap(), "--arch", "sm_80"]);
    assert!(ok, "{text}");
    assert!(text.contains("sm_80") && text.contains("scale"), "{text}");
}

#[test]
fn two_kernels_with_one_name_must_be_told_apart() {
    let spec = format!("{}/{GEMM_EXAMPLE}", root().display());
    let twice = [spec.clone(), spec.clone()];
    let e = harness::user_kernel::load_all(&[], &twice, &["gemm".to_string()])
        .unwrap_err()
        .to_string();
    assert!(e.contains("already called") && e.contains("id=NAME"), "{e}");
    let named = [spec.clone(), format!("{spec},id=mine")];
    let users = harness::user_kernel::load_all(&[], &named, &["gemm".to_string()]).unwrap();
    assert_eq!(users[1].id(), "mine");
}

#[test]
fn a_kernel_with_its_own_parameter_list_runs_through_args() {
    let dir = scratch_dir("args");
    // In the style of the minimal public flash-attention kernels: tile counts computed by the
    // host, running l and m in global memory, O accumulated in place, a PyTorch host function;
    // it assumes S is a multiple of the tile (32).
    let code = "#include <torch/types.h>\n#include <cuda.h>\n#include <cuda_runtime.h>\n\
        __global__ void fa_forward(const float *Q, const float *K, const float *V, const int N,\n\
        \x20   const int d, const int Tc, const int Tr, const int Bc, const int Br,\n\
        \x20   const float softmax_scale, float *l, float *m, float *O) {\n\
        \x20 int tx = threadIdx.x, bh = blockIdx.x * gridDim.y + blockIdx.y;\n\
        \x20 for (int j = 0; j < Tc; j++)\n\
        \x20   for (int i = 0; i < Tr; i++) {\n\
        \x20     int r = bh * N + i * Br + tx;\n\
        \x20     float mi = m[r], li = l[r], *o = O + (size_t)r * d;\n\
        \x20     for (int y = 0; y < Bc; y++) {\n\
        \x20       int c = bh * N + j * Bc + y;\n\
        \x20       float s = 0;\n\
        \x20       for (int x = 0; x < d; x++) s += Q[(size_t)r * d + x] * K[(size_t)c * d + x];\n\
        \x20       s *= softmax_scale;\n\
        \x20       float mn = fmaxf(mi, s), cr = __expf(mi - mn), p = __expf(s - mn);\n\
        \x20       for (int x = 0; x < d; x++) o[x] = o[x] * cr + p * V[(size_t)c * d + x];\n\
        \x20       li = li * cr + p;\n\
        \x20       mi = mn;\n\
        \x20     }\n\
        \x20     m[r] = mi;\n\
        \x20     l[r] = li;\n\
        \x20   }\n\
        \x20 for (int i = 0; i < Tr; i++)\n\
        \x20   for (int x = 0; x < d; x++) O[(size_t)(bh * N + i * Br + tx) * d + x] /= l[bh * N + i * Br + tx];\n\
        }\n\
        std::vector<torch::Tensor> forward(torch::Tensor Q, torch::Tensor K, torch::Tensor V) {\n\
        \x20 auto O = torch::zeros_like(Q);\n\
        \x20 fa_forward<<<dim3(1, 1), 32>>>(Q.data_ptr<float>());\n\
        \x20 return {O};\n\
        }\n";
    std::fs::write(dir.join("fa.cu"), code).unwrap();
    let spec = format!(
        "{}/fa.cu:fa_forward,args=(Q,K,V,S,D,cdiv(S,32),cdiv(S,32),32,32,scale,l,m,O),\
         block=32,grid=(B,H)",
        dir.display()
    );
    let users = [load(&spec, Workload::Attention)];
    assert_eq!(
        users[0].signature.name, "attention-lm",
        "l and m start at 0 and -inf"
    );
    let shapes = [
        Shape::parse(Workload::Attention, "2x3x64x16").unwrap(),
        Shape::parse(Workload::Attention, "1x2x37x16").unwrap(),
    ];
    let results = sim_rows(&users, &shapes);
    let rows: Vec<_> = results.workloads[0]
        .shapes
        .iter()
        .map(|s| &s.rows[0])
        .collect();
    assert_eq!(rows[0].status, Status::Passed, "{:?}", rows[0]);
    assert_ne!(
        rows[1].status,
        Status::Passed,
        "S = 37 is not a multiple of 32"
    );
    // A list the kernel does not take fails to compile, showing both.
    let wrong = spec.replace("32,32,scale", "32,scale");
    let e = load(&wrong, Workload::Attention)
        .compile_check(Compiler::Sim)
        .unwrap_err()
        .to_string();
    assert!(
        e.contains(
            "the lab calls:   fa_forward(float * Q, float * K, float * V, int S, int D, \
                    int arg5, int arg6, int arg7, float scale, float * l, float * m, float * O)"
        ) && e.contains("fa.cu:4 declares: fa_forward(const float *Q,"),
        "{e}"
    );
}
