//! Kernels a user brings (`harness run --kernel FILE.cu:ENTRY,...`): the examples run
//! unmodified as rows in the simulator, and each mistake a user can make shows the message
//! that teaches what went wrong.

use harness::config::Config;
use harness::results::{RunResults, Status};
use harness::run::Ablation;
use harness::user_kernel::{Block, Compiler, SIM_SMS, UserKernel, UserKernelSpec, run};
use kernel::cuda::nvrtc;
use kernel::sim::SimDevice;
use kernel::{Executor, Kernel, Shape, Workload};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::LazyLock;

/// The examples' rows as `examples/rows.txt` lists them: workload, sizes and `--kernel` spec.
fn example_rows() -> Vec<(String, String, String)> {
    let text = std::fs::read_to_string(root().join("examples/rows.txt")).unwrap();
    text.lines()
        .filter(|l| !l.trim().is_empty() && !l.starts_with('#'))
        .map(|l| {
            let mut f = l.split_whitespace().map(str::to_string);
            let mut next = || f.next().unwrap_or_else(|| panic!("rows.txt: {l}"));
            (next(), next(), next())
        })
        .collect()
}

/// The spec of the example in `file`.
fn example(file: &str) -> String {
    let prefix = format!("examples/{file}:");
    example_rows()
        .into_iter()
        .find(|(_, _, spec)| spec.starts_with(&prefix))
        .unwrap_or_else(|| panic!("examples/rows.txt has no row for {file}"))
        .2
}

static GEMM_EXAMPLE: LazyLock<String> = LazyLock::new(|| example("gemm_blocktile.cu"));
static ATTENTION_EXAMPLE: LazyLock<String> = LazyLock::new(|| example("attention_rows.cu"));
/// Serial split-K: slices take turns through semaphores in a zero-filled workspace, waiting
/// with ld.acquire and __nanosleep.
static SPLITK_SERIAL_EXAMPLE: LazyLock<String> =
    LazyLock::new(|| example("sgemm_splitk_serial.cu"));
/// The course's convolution: its own parameter list, the filter in a `__constant__` array the
/// lab fills.
static CONV_CONSTANT_EXAMPLE: LazyLock<String> = LazyLock::new(|| example("conv_constant_mask.cu"));
/// A Hopper GEMM as fast.cu writes it: TMA tensor maps from `tmap(...)`, mbarriers, wgmma, all
/// inline PTX.
static WGMMA_TMA_EXAMPLE: LazyLock<String> = LazyLock::new(|| example("hgemm_wgmma_tma.cu"));
/// A warp-specialized Hopper GEMM as the later fast.cu kernels write it: 3-D tensor maps, a
/// producer and two consumer warpgroups, a 2-CTA cluster sharing B by multicast, persistent
/// blocks, named barriers and a TMA store epilogue.
static WGMMA_WS_EXAMPLE: LazyLock<String> = LazyLock::new(|| example("hgemm_wgmma_ws.cu"));
/// Split-K in one cooperative launch: partials, grid.sync(), the slices added.
static SPLITK_GRID_EXAMPLE: LazyLock<String> = LazyLock::new(|| example("sgemm_splitk_grid.cu"));
/// FP16 operands, B column-major, FP32 C with alpha and beta.
static FP16_EXAMPLE: LazyLock<String> = LazyLock::new(|| example("hgemm_wmma.cu"));
/// BF16 operands and output, B column-major.
static BF16_EXAMPLE: LazyLock<String> = LazyLock::new(|| example("bf16_gemm_nt.cu"));

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
    UserKernel::load(
        &UserKernelSpec::parse(&spec).unwrap(),
        Some(workload),
        1,
        SIM_SMS,
    )
    .unwrap()
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
    let mut results = sim_rows_unannotated(users, shapes);
    let swapped = run::swapped_grids(None, &Config::defaults(), users, &results, false);
    run::annotate(&mut results, &[], users, false, &swapped);
    results
}

/// [`sim_rows`] before the lab adds its hints to the failures.
fn sim_rows_unannotated(users: &[UserKernel], shapes: &[Shape]) -> RunResults {
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
    ablation.run(|_| {}).unwrap()
}

fn harness(args: &[&str]) -> (bool, String) {
    let (code, text) = harness_code(args, &[]);
    (code == Some(0), text)
}

/// `harness COMMAND --device sim` of the kernel `spec` at `sizes` of `workload`, with `more`.
fn sim(command: &str, workload: &str, sizes: &str, spec: &str, more: &[&str]) -> (bool, String) {
    let mut args = vec![
        command,
        "--device",
        "sim",
        "--workload",
        workload,
        "--sizes",
        sizes,
        "--kernel",
        spec,
    ];
    args.extend(more);
    harness(&args)
}

/// `harness run --device sim` of the kernel `spec` at `sizes` of `workload`, into `out`.
fn sim_run(workload: &str, sizes: &str, spec: &str, out: &Path) -> (bool, String) {
    sim(
        "run",
        workload,
        sizes,
        spec,
        &["--out", out.to_str().unwrap()],
    )
}

/// `harness check` of `spec` on `workload` at `sizes` in the simulator: success and output.
fn sim_check(workload: &str, sizes: &str, spec: &str) -> (bool, String) {
    sim("check", workload, sizes, spec, &[])
}

/// The example of `spec` with `from` (which it must contain) replaced by `to`, written into
/// `dir`: the spec of that copy.
fn example_variant(dir: &Path, spec: &str, from: &str, to: &str) -> String {
    let (path, _) = spec.split_once(':').unwrap();
    let code = std::fs::read_to_string(root().join(path)).unwrap();
    assert!(code.contains(from), "{path} has no {from:?}");
    let copy = dir.join(Path::new(path).file_name().unwrap());
    std::fs::write(&copy, code.replace(from, to)).unwrap();
    spec.replacen(path, &copy.display().to_string(), 1)
}

/// docs/your-kernel.md quotes `printed` as the harness printed it (whitespace aside: prose
/// wraps a quote), so that the guide's messages are the program's.
fn the_guide_quotes(printed: &str) {
    let squash = |t: &str| t.split_whitespace().collect::<Vec<_>>().join(" ");
    let guide = std::fs::read_to_string(root().join("docs/your-kernel.md")).unwrap();
    assert!(
        squash(&guide).contains(&squash(printed)),
        "docs/your-kernel.md should quote what the harness printed:\n{printed}"
    );
}

/// [`the_guide_quotes`] for a message whose numbers depend on the simulator's schedule (which
/// block or thread meets a race or an out-of-bounds access first): its words must be quoted,
/// each number may differ.
fn the_guide_quotes_in_words(printed: &str) {
    let words = |t: &str| {
        let mut out = String::new();
        for c in t.split_whitespace().collect::<Vec<_>>().join(" ").chars() {
            match c.is_ascii_digit() {
                true if out.ends_with('#') => {}
                true => out.push('#'),
                false => out.push(c),
            }
        }
        out
    };
    let guide = std::fs::read_to_string(root().join("docs/your-kernel.md")).unwrap();
    assert!(
        words(&guide).contains(&words(printed)),
        "docs/your-kernel.md should quote, up to its numbers, what the harness printed:\n{printed}"
    );
}

/// The part of `text` from the first `from` to the end of the first `to` after it.
fn span<'a>(text: &'a str, from: &str, to: &str) -> &'a str {
    let a = text
        .find(from)
        .unwrap_or_else(|| panic!("no {from:?} in {text}"));
    let b = text[a..]
        .find(to)
        .unwrap_or_else(|| panic!("no {to:?} after {from:?} in {text}"));
    &text[a..a + b + to.len()]
}

/// The line of `text` starting with `prefix` and the `n` lines after it.
fn lines_from(text: &str, prefix: &str, n: usize) -> String {
    let lines: Vec<&str> = text.lines().collect();
    let at = lines
        .iter()
        .position(|l| l.starts_with(prefix))
        .unwrap_or_else(|| panic!("no line starting {prefix:?} in {text}"));
    lines[at..=at + n].join("\n")
}

/// The exit code and output of `harness args` run from the repository root, with `env` set.
fn harness_code(args: &[&str], env: &[(&str, &str)]) -> (Option<i32>, String) {
    let lab = std::env::temp_dir().join(format!("user-kernels-lab-{}", std::process::id()));
    let out = Command::new(env!("CARGO_BIN_EXE_harness"))
        .current_dir(root())
        .env("LAB_DIR", lab)
        .args(args)
        .envs(env.iter().copied())
        .output()
        .unwrap();
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    (out.status.code(), text)
}

/// The lines of a simulator table that show a passing user row.
fn passing_user_rows(text: &str) -> usize {
    text.lines()
        .filter(|l| l.starts_with("  user ") && l.trim_end().ends_with(" pass"))
        .count()
}

#[test]
fn the_examples_run_unmodified_as_user_rows_in_the_simulator() {
    let dir = scratch_dir("examples");
    let rows = example_rows();
    // Every example file has its row (but the bugs the simulator is shown finding).
    for entry in std::fs::read_dir(root().join("examples")).unwrap() {
        let name = entry.unwrap().file_name().to_string_lossy().into_owned();
        if name.ends_with(".cu")
            && !["gemm_halves_race.cu", "window_overrun.cu"].contains(&name.as_str())
        {
            example(&name);
        }
    }
    for (i, (workload, sizes, spec)) in rows.iter().enumerate() {
        let (ok, text) = sim_run(workload, sizes, spec, &dir.join(i.to_string()));
        assert!(ok, "{text}");
        assert!(text.contains(&run::sim_line()), "{text}");
        assert_eq!(passing_user_rows(&text), sizes.split(',').count(), "{text}");
        let json = std::fs::read_to_string(dir.join(i.to_string()).join("results.json")).unwrap();
        assert!(json.contains("\"role\": \"user\""), "{json}");
        // `inspect`: registers and shared memory of the instantiation the lab launched, for
        // sm_80, or sm_90a for a file of Hopper's instructions (compiled for nothing else).
        if nvrtc::version().is_ok() {
            let arch = if spec.contains("tmap(")
                || spec.contains("cluster=")
                || json.contains("compiled for sm_90a alone")
            {
                "sm_90a"
            } else {
                "sm_80"
            };
            assert!(json.contains("\"registers\""), "{spec}: {json}");
            assert!(
                json.contains(&format!("\"arch\": \"{arch}\"")),
                "{spec}: {json}"
            );
        }
    }
}

#[test]
fn the_tma_wgmma_example_runs_from_its_inline_ptx_and_declines_what_tma_cannot_map() {
    let dir = scratch_dir("wgmma");
    let (ok, text) = sim_run(
        "gemm",
        "100x72x136,64x128x64,130x260x392,100x37x129",
        &WGMMA_TMA_EXAMPLE,
        &dir.join("run"),
    );
    // A row asked for and declined fails the run, saying why.
    assert!(!ok, "{text}");
    assert_eq!(passing_user_rows(&text), 3, "{text}");
    assert!(
        text.contains(
            "gemm 100x37x129 hgemm_wgmma_tma.cu:hgemm_wgmma_tma<64,128,64,3>: could not run: \
             tmap(A): TMA tensor map: rows of 129 elements are 258 B apart; the TMA needs a \
             multiple of 16 B"
        ),
        "{text}"
    );
    if nvrtc::version().is_ok() {
        let spec = WGMMA_TMA_EXAMPLE.replacen(",dtype=", ",workload=gemm,dtype=", 1);
        let (ok, text) = harness(&["inspect", "--kernel", &spec]);
        assert!(ok, "{text}");
        let row = text
            .lines()
            .find(|l| l.contains("hgemm_wgmma_tma<64,128,64,3> sm_90a "))
            .unwrap_or_else(|| panic!("no sm_90a row: {text}"));
        assert!(row.contains(" 0/0 "), "spills: {row}");
        assert!(text.contains("is compiled for sm_90a only"), "{text}");
    }
}

/// The example with a transaction count short of its two boxes, and without its wgmma.fence:
/// each fails its row with what went wrong, even where no stage is reused (K = 136: three
/// k-tiles in a ring of three), where the short count leaves no deadlock behind.
#[test]
fn the_tma_wgmma_examples_planted_bugs_fail_with_their_reasons() {
    let dir = scratch_dir("wgmma-bugs");
    for (i, (from, to, want)) in [
        (
            "(BM + BN) * BK * sizeof(bf16)",
            "BM * BK * sizeof(bf16)",
            "ends the block with tx-count -16384: 16384 bytes landed on it that no expect_tx \
             announced",
        ),
        (
            "    warpgroup_arrive();\n",
            "",
            "wgmma.mma_async without a wgmma.fence before the warp's first wgmma",
        ),
    ]
    .into_iter()
    .enumerate()
    {
        let sub = dir.join(i.to_string());
        std::fs::create_dir_all(&sub).unwrap();
        let spec = example_variant(&sub, &WGMMA_TMA_EXAMPLE, from, to);
        let (ok, text) = sim_run("gemm", "100x72x136", &spec, &sub.join("run"));
        assert!(!ok, "{text}");
        assert!(text.contains(want), "{want}: {text}");
        if i == 0 {
            the_guide_quotes_in_words(span(&text, "the mbarrier at shared address", "announced"));
        }
    }
}

/// A kernel taking its tensor maps by address (`const CUtensorMap *`, as host code that copies
/// the encoded maps to the device passes them, fast.cu's kernels 2 to 5 among them) gets them
/// from `&tmap(...)`; given `tmap(...)` instead, it is told to write the `&`.
#[test]
fn tensor_maps_taken_by_address_come_from_an_ampersand() {
    let dir = scratch_dir("map-pointers");
    let (path, options) = WGMMA_TMA_EXAMPLE.split_once(':').unwrap();
    let code = std::fs::read_to_string(root().join(path)).unwrap();
    let by_value = "const __grid_constant__ CUtensorMap tensorMapA,\n                    \
                    const __grid_constant__ CUtensorMap tensorMapB)";
    assert!(code.contains(by_value), "{path}");
    let code = code
        .replace(
            by_value,
            "const CUtensorMap *tensorMapA, const CUtensorMap *tensorMapB)",
        )
        .replace("&tensorMapA", "tensorMapA")
        .replace("&tensorMapB", "tensorMapB");
    let file = dir.join("pointers.cu");
    std::fs::write(&file, code).unwrap();
    let spec = format!("{}:{options}", file.display());
    assert!(
        spec.contains(",tmap(A,") && spec.contains(",tmap(B,"),
        "{spec}"
    );
    let (ok, text) = sim_run("gemm", "100x72x136", &spec, &dir.join("value"));
    assert!(!ok);
    assert!(
        text.contains("parameters take a map in global memory") && text.contains("`&tmap(...)`"),
        "{text}"
    );
    let spec = spec.replace(",tmap(", ",&tmap(");
    let (ok, text) = sim_run("gemm", "100x72x136,64x128x64", &spec, &dir.join("address"));
    assert!(ok && passing_user_rows(&text) == 2, "{text}");
}

/// The three hand-overs the warp-specialized example makes, each removed: the rows fail
/// naming the hazard, a race a GPU's timing can hide. At 300x300x192 six tiles fall to four
/// clusters, so some compute two and reuse the C buffer. Then its register split overdrawn,
/// which hangs a GPU.
#[test]
fn the_warp_specialized_examples_planted_races_fail_with_their_reasons() {
    let dir = scratch_dir("ws-bugs");
    for (i, (from, to, want)) in [
        (
            "      asm volatile(\"fence.proxy.async.shared::cta;\\n\" ::: \"memory\");  // visible to the TMA\n",
            "",
            "cp.async.bulk.tensor.2d (a TMA store) reads",
        ),
        (
            "      if (tid == 0) asm volatile(\"cp.async.bulk.wait_group.read 0;\\n\" ::: \"memory\");\n",
            "",
            "which a TMA store (cp.async.bulk.tensor ... global.shared::cta) issued by thread (",
        ),
        (
            "  // No block leaves while its partner may still arrive on its mbarriers.\n  asm volatile(\"barrier.cluster.arrive;\\nbarrier.cluster.wait;\\n\" ::: \"memory\");\n",
            "",
            "whose threads have all exited (its shared memory is gone: end both blocks with a cluster barrier)",
        ),
        // Not a hand-over: consumers asking for more registers than the producer gave back.
        (
            "setmaxnreg.inc.sync.aligned.u32 232;",
            "setmaxnreg.inc.sync.aligned.u32 240;",
            "setmaxnreg.inc waits for registers the block's pool does not have",
        ),
    ]
    .into_iter()
    .enumerate()
    {
        let sub = dir.join(i.to_string());
        std::fs::create_dir_all(&sub).unwrap();
        let spec = example_variant(&sub, &WGMMA_WS_EXAMPLE, from, to);
        let (ok, text) = sim_run("gemm", "300x300x192", &spec, &sub.join("run"));
        assert!(!ok, "{text}");
        assert!(text.contains(want), "{want}: {text}");
        // Hazards of synchronization, which no tile's tail explains.
        assert!(!text.contains("not a whole number of"), "{text}");
        match i {
            0 => the_guide_quotes_in_words(span(
                &text,
                "cp.async.bulk.tensor.2d",
                "between that write and this read",
            )),
            // The guide shows the example edited in place.
            1 => the_guide_quotes_in_words(
                &span(&text, "shared address 0x", "completed")
                    .replace(&format!("{}/", sub.display()), "examples/"),
            ),
            2 => the_guide_quotes_in_words(span(&text, "whose threads have all exited", "barrier)")),
            _ => the_guide_quotes_in_words(span(&text, "setmaxnreg.inc waits", "(66560 in all)")),
        }
    }
}

/// An index into the dynamic shared memory far past what the launch gives (no `smem=`, or
/// too little) is named with its line, however far: past the red zone after the buffer it
/// faults in the guard the simulator keeps there, where it corrupted the allocator's memory
/// (a crash of the whole process) or landed unseen.
#[test]
fn an_index_far_past_the_dynamic_shared_memory_is_named() {
    let dir = scratch_dir("dyn-overrun");
    let code = "// Thread 0 writes OFF bytes into the dynamic shared memory.\n\
        __global__ void overrun(const float *A, const float *B, float *C, int M, int N, int K) {\n\
        \x20 extern __shared__ int4 s[];\n\
        \x20 if (threadIdx.x == 0 && blockIdx.x == 0) s[OFF / 16] = make_int4(1, 2, 3, 4);\n\
        \x20 __syncthreads();\n\
        \x20 const int i = blockIdx.x * blockDim.x + threadIdx.x;\n\
        \x20 if (i < M * N) C[i] = 1.0f;\n\
        }\n";
    let file = dir.join("dyn.cu");
    std::fs::write(&file, code).unwrap();
    for (off, smem) in [(65536, 0), (900 << 10, 0), (8192, 1024)] {
        let spec = format!(
            "{}:overrun,block=256,grid=(cdiv(M*N,256)),smem={smem},define=OFF={off}",
            file.display()
        );
        let (ok, text) = sim_check("gemm", "16x16x16", &spec);
        assert!(!ok, "{text}");
        let why = if smem == 0 {
            "no smem= was given"
        } else {
            "is smem= what the kernel needs?"
        };
        let want = format!(
            "overrun: writes at byte {off} of the dynamic shared memory (extern __shared__), which \
             the launch gives {smem} bytes: out of bounds ({why}); this thread's access is at {}:4 \
             (thread (0,0,0) of block (0,0,0))",
            file.display()
        );
        assert!(text.contains(&want), "{want}\n{text}");
    }
}

/// A `cp.async` into an `extern __shared__` array of a launch given no dynamic shared memory
/// (no `smem=`) says so: its address lies in none of the block's regions, which alone read as
/// a stray pointer.
#[test]
fn a_cp_async_into_dynamic_shared_memory_without_smem_says_none_was_given() {
    let dir = scratch_dir("cp-async-no-smem");
    let code = r#"// Each thread copies 16 bytes of A into the dynamic shared memory with cp.async.
__global__ void stage(const float *A, const float *B, float *C, int M, int N, int K) {
  extern __shared__ float4 tile[];
  const unsigned d = (unsigned)__cvta_generic_to_shared(&tile[threadIdx.x]);
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16;" ::"r"(d), "l"(A) : "memory");
  asm volatile("cp.async.wait_all;" ::: "memory");
  __syncthreads();
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < M * N) C[i] = tile[threadIdx.x % 4].x * 0.0f + 1.0f;
}
"#;
    std::fs::write(dir.join("cpa.cu"), code).unwrap();
    let spec = format!(
        "{}/cpa.cu:stage,block=256,grid=(cdiv(M*N,256))",
        dir.display()
    );
    let (ok, text) = sim_check("gemm", "16x16x16", &spec);
    assert!(!ok, "{text}");
    assert!(
        text.contains("is not in this block's shared memory")
            && text.contains("(the launch gives no dynamic shared memory: no smem= was given)"),
        "{text}"
    );
}

/// A multicast TMA copy into a block of the cluster that has exited fails where it lands, in
/// whatever the issuing thread does by then (here, waiting for it): the message names the
/// line that issued the copy, not the line that thread has gone on to.
#[test]
fn a_multicast_into_an_exited_block_names_the_line_that_issued_it() {
    let dir = scratch_dir("late-multicast");
    let code = r#"// Block 1 of each cluster signals block 0 and exits; block 0 then multicasts a box into both.
__global__ void __cluster_dims__(2, 1, 1) late_multicast(const __grid_constant__ CUtensorMap a, float *C, int M, int N) {
  __shared__ alignas(128) float tile[64];
  __shared__ alignas(8) unsigned long long bar, ready;
  unsigned rank;
  asm volatile("mov.u32 %0, %%cluster_ctarank;" : "=r"(rank));
  const unsigned b = (unsigned)__cvta_generic_to_shared(&bar), r = (unsigned)__cvta_generic_to_shared(&ready);
  if (threadIdx.x == 0) {
    asm volatile("mbarrier.init.shared.b64 [%0], 1;" ::"r"(b));
    asm volatile("mbarrier.init.shared.b64 [%0], 1;" ::"r"(r));
  }
  asm volatile("barrier.cluster.arrive;\nbarrier.cluster.wait;" ::: "memory");
  if (rank == 1) {
    if (threadIdx.x == 0) {
      unsigned remote;
      asm volatile("mapa.shared::cluster.u32 %0, %1, 0;" : "=r"(remote) : "r"(r));
      asm volatile("mbarrier.arrive.shared::cluster.b64 _, [%0];" ::"r"(remote) : "memory");
    }
    return;
  }
  if (threadIdx.x == 0) {
    asm volatile("{\n.reg .pred p;\nW: mbarrier.try_wait.parity.shared.b64 p, [%0], 0;\n@!p bra W;\n}" ::"r"(r) : "memory");
    asm volatile("mbarrier.arrive.expect_tx.shared.b64 _, [%0], 256;" ::"r"(b) : "memory");
    const unsigned dst = (unsigned)__cvta_generic_to_shared(tile);
    const unsigned short mask = 3;
    asm volatile(
        "cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes.multicast::cluster"
        " [%0], [%1, {%3, %4}], [%2], %5;" ::"r"(dst), "l"(&a), "r"(b), "r"(0), "r"(0), "h"(mask) : "memory");
    asm volatile("{\n.reg .pred p;\nV: mbarrier.try_wait.parity.shared.b64 p, [%0], 0;\n@!p bra V;\n}" ::"r"(b) : "memory");
  }
  __syncthreads();
  for (int i = threadIdx.x; i < M * N; i += blockDim.x) C[i] = tile[i % 64];
}
"#;
    std::fs::write(dir.join("mc.cu"), code).unwrap();
    // The line its `asm` statement starts at, the one before its text (lines count from 1).
    let issue = code
        .lines()
        .position(|l| l.contains("cp.async.bulk.tensor"))
        .unwrap();
    let spec = format!(
        "{}/mc.cu:late_multicast,block=32,grid=(2),args=(tmap(A,M,K,8,8),C,M,N)",
        dir.display()
    );
    let (ok, text) = sim_run("gemm", "16x16x16", &spec, &dir.join("run"));
    assert!(!ok, "{text}");
    assert!(
        text.contains("a multicast TMA copy targets block (1,0,0) of the cluster, whose threads have all exited")
            && text.contains(&format!("this thread's access is at {}/mc.cu:{issue} (thread (0,0,0)", dir.display())),
        "line {issue}: {text}"
    );
}

/// The SM count `SMS` stands for in the simulator is the one the guide and the examples'
/// comments give.
#[test]
fn the_simulators_sm_count_is_the_one_the_guide_and_examples_give() {
    let read = |path: &str| {
        let text = std::fs::read_to_string(root().join(path)).unwrap();
        // Words only: line breaks and comment markers fall away.
        text.split_whitespace()
            .filter(|w| *w != "//")
            .collect::<Vec<_>>()
            .join(" ")
    };
    for (path, phrase) in [
        (
            "docs/your-kernel.md",
            format!("(the simulator, `inspect`) it is {SIM_SMS},"),
        ),
        (
            "docs/your-kernel.md",
            format!("clusters of the simulator's {SIM_SMS} SMs"),
        ),
        (
            "docs/your-kernel.md",
            format!("the bank counts, which the simulator takes with its own {SIM_SMS}."),
        ),
        (
            "examples/sgemm_splitk_grid.cu",
            format!(
                "the simulator counts {SIM_SMS} SMs, so {} blocks",
                2 * SIM_SMS
            ),
        ),
    ] {
        assert!(read(path).contains(&phrase), "{path}: {phrase}");
    }
}

/// Inline PTX the simulator does not know makes the row GPU-only, saying which instruction
/// at which line, instead of failing at the host's assembler.
#[test]
fn inline_ptx_the_simulator_does_not_know_skips_the_row_naming_it() {
    let dir = scratch_dir("unknown-ptx");
    let code = "__global__ void named(const float *A, const float *B, float *C, int M, int N, int K) {\n\
        \x20 unsigned m;\n\
        \x20 asm volatile(\"bfind.u32 %0, %1;\" : \"=r\"(m) : \"r\"(threadIdx.x));\n\
        \x20 C[threadIdx.x] = A[threadIdx.x] + m;\n\
        }\n";
    std::fs::write(dir.join("named.cu"), code).unwrap();
    let spec = format!("{}/named.cu:named,block=64,grid=tile:64", dir.display());
    let (ok, text) = sim_run("gemm", "64x1x1", &spec, &dir.join("run"));
    assert!(!ok, "{text}");
    assert!(
        text.contains("named.cu:named: could not run: not simulated: ")
            && text.contains("named.cu:3: inline PTX `bfind.u32`: not emulated"),
        "{text}"
    );
    assert!(!text.contains("Assembler messages"), "{text}");
    // Skipped at every shape, a check of it checked nothing: no success.
    let (ok, text) = sim_check("gemm", "64x1x1,64x2x1", &spec);
    assert!(!ok, "{text}");
    assert!(
        text.contains("0 passed, 0 failed, 2 skipped")
            && text
                .contains("1 kernel you asked for ran at no shape, so nothing of it was checked")
            && text.contains("named.cu:named"),
        "{text}"
    );
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
fn a_kernel_taking_fewer_parameters_than_the_lab_passes_is_refused_by_each_compiler() {
    // A GEMM kernel (A, B, C, M, N, K) run as a convolution, whose signature passes nine
    // arguments: the first six convert, and the three left over must not be dropped.
    let k = load(
        "examples/sgemm_guarded_ptx.cu:sgemm_guarded_ptx,block=256,grid=tile:64x64",
        Workload::Conv,
    );
    let mut compilers = vec![Compiler::Sim];
    if nvrtc::version().is_ok() {
        compilers.push(Compiler::Nvrtc("sm_80"));
    }
    for c in compilers {
        let e = k.compile_check(c).unwrap_err().to_string();
        assert!(e.contains("do not match the `conv` signature"), "{e}");
        assert!(
            e.contains("declares: sgemm_guarded_ptx(const float *A, const float *B, float *C, int M, int N, int K)"),
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

/// Wrong values, every element written: the failure names the element furthest from the
/// reference, with both values. A max pool without the workload's ReLU is off where a window
/// is all negative, and the reference's 0 there says what is missing.
#[test]
fn a_wrong_value_is_shown_beside_the_reference() {
    let dir = scratch_dir("worst-element");
    std::fs::write(
        dir.join("pool.cu"),
        "__global__ void max_pool(const float *x, float *y, int B, int C, int H, int W, int P) {\n\
         \x20 const int ho = H / P, wo = W / P, i = blockIdx.x * blockDim.x + threadIdx.x;\n\
         \x20 if (i >= B * C * ho * wo) return;\n\
         \x20 const int j = i % wo, r = i / wo % ho, bc = i / (wo * ho);\n\
         \x20 float m = -INFINITY;\n\
         \x20 for (int a = 0; a < P; ++a)\n\
         \x20   for (int b = 0; b < P; ++b) m = fmaxf(m, x[(bc * H + r * P + a) * W + j * P + b]);\n\
         \x20 y[i] = m;\n\
         }\n",
    )
    .unwrap();
    let spec = format!(
        "{}:max_pool,block=256,grid=(cdiv(B*C*(H/P)*(W/P),256))",
        dir.join("pool.cu").display()
    );
    let (ok, text) = sim_check("pool", "2x3x7x9x2", &spec);
    assert!(!ok, "{text}");
    let printed = span(
        &text,
        "2x3x7x9x2  relative error",
        "gives its largest where the reference has 0",
    );
    assert!(
        printed.contains("\n  the furthest from the reference is y[")
            && printed.contains(
                "\n  the output is that of a max pool of x itself: the kernel leaves out the \
                 workload's ReLU"
            ),
        "{printed}"
    );
    the_guide_quotes(printed);
}

#[test]
fn a_cluster_kernel_runs_with_its_cluster_dims_through_the_simulators_wrapper() {
    // Each block computes its partner's elements of C and writes them into the partner's
    // shared memory: right only if the two blocks run as one cluster.
    let dir = scratch_dir("cluster");
    let code = "#include <cooperative_groups.h>\n\
        namespace cg = cooperative_groups;\n\
        __global__ void __cluster_dims__(2, 1, 1) swapped(const float *A, const float *B, float *C,\n\
        \x20                                                int M, int N, int K) {\n\
        \x20 extern __shared__ float mine[];\n\
        \x20 cg::cluster_group cluster = cg::this_cluster();\n\
        \x20 const int i = (blockIdx.x ^ 1) * blockDim.x + threadIdx.x;\n\
        \x20 float acc = 0.0f;\n\
        \x20 if (i < M * N)\n\
        \x20   for (int k = 0; k < K; ++k) acc += A[i / N * K + k] * B[k * N + i % N];\n\
        \x20 cluster.sync();\n\
        \x20 cluster.map_shared_rank(mine, cluster.block_rank() ^ 1)[threadIdx.x] = acc;\n\
        \x20 cluster.sync();\n\
        \x20 const int j = blockIdx.x * blockDim.x + threadIdx.x;\n\
        \x20 if (j < M * N) C[j] = mine[threadIdx.x];\n\
        }\n";
    let users = [user_file(
        &dir,
        "cluster.cu",
        code,
        "swapped,block=64,grid=tile:64,smem=256",
    )];
    // 16 x 16 = 256 outputs: 4 blocks, 2 clusters.
    let results = sim_rows(&users, &[Shape::gemm(16, 16, 8)]);
    let row = &results.workloads[0].shapes[0].rows[0];
    assert_eq!(row.status, Status::Passed, "{row:?}");

    // Static __shared__ memory: each block of the cluster has its own, as on a GPU.
    let code = code.replace(
        "extern __shared__ float mine[];",
        "__shared__ float mine[64];",
    );
    let users = [user_file(
        &dir,
        "cluster_static.cu",
        &code,
        "swapped,block=64,grid=tile:64",
    )];
    let results = sim_rows(&users, &[Shape::gemm(16, 16, 8)]);
    let row = &results.workloads[0].shapes[0].rows[0];
    assert_eq!(row.status, Status::Passed, "{row:?}");
}

/// A cluster size that host code sets at launch (`cudaLaunchKernelEx` with
/// `cudaLaunchAttributeClusterDimension`) is given with `cluster=`: the kernel runs in
/// clusters in the simulator, and NVRTC builds it with them (for sm_90a alone, as clusters
/// need); without it the blocks run alone; a kernel with `__cluster_dims__` of its own is told
/// that it has them.
#[test]
fn a_cluster_size_set_by_host_code_is_given_with_cluster() {
    let dir = scratch_dir("host-cluster");
    let code = "#include <cooperative_groups.h>\n\
        namespace cg = cooperative_groups;\n\
        __global__ void swapped(const float *A, const float *B, float *C, int M, int N, int K) {\n\
        \x20 extern __shared__ float mine[];\n\
        \x20 cg::cluster_group cluster = cg::this_cluster();\n\
        \x20 if (cluster.num_blocks() != 2) __trap();\n\
        \x20 const int i = (blockIdx.x ^ 1) * blockDim.x + threadIdx.x;\n\
        \x20 float acc = 0.0f;\n\
        \x20 if (i < M * N)\n\
        \x20   for (int k = 0; k < K; ++k) acc += A[i / N * K + k] * B[k * N + i % N];\n\
        \x20 cluster.sync();\n\
        \x20 cluster.map_shared_rank(mine, cluster.block_rank() ^ 1)[threadIdx.x] = acc;\n\
        \x20 cluster.sync();\n\
        \x20 const int j = blockIdx.x * blockDim.x + threadIdx.x;\n\
        \x20 if (j < M * N) C[j] = mine[threadIdx.x];\n\
        }\n";
    let file = dir.join("swapped.cu");
    std::fs::write(&file, code).unwrap();
    let spec = |options: &str| {
        format!(
            "{}:swapped,block=64,grid=tile:64,smem=256{options}",
            file.display()
        )
    };
    // 16 x 16 = 256 outputs: 4 blocks, 2 clusters.
    let (ok, text) = sim_run("gemm", "16x16x8", &spec(",cluster=2"), &dir.join("pairs"));
    assert!(ok && passing_user_rows(&text) == 1, "{text}");
    let (ok, text) = sim_run("gemm", "16x16x8", &spec(""), &dir.join("alone"));
    assert!(!ok && text.contains("__trap()"), "{text}");
    let (ok, text) = harness(&[
        "inspect",
        "--kernel",
        &format!("{},workload=gemm", spec(",cluster=2")),
    ]);
    assert!(
        ok && text
            .lines()
            .any(|l| l.contains(" swapped ") && l.contains("sm_90a")),
        "{text}"
    );
    let own = dir.join("own.cu");
    std::fs::write(
        &own,
        code.replace("void swapped", "void __cluster_dims__(2, 1, 1) swapped"),
    )
    .unwrap();
    let (ok, text) = sim_run(
        "gemm",
        "16x16x8",
        &spec(",cluster=2").replace("swapped.cu", "own.cu"),
        &dir.join("own"),
    );
    assert!(
        !ok && text.contains("declares __cluster_dims__(2, 1, 1) itself")
            && text.contains("cluster= is for the size host code sets at launch"),
        "{text}"
    );
}

/// A kernel taking a struct by value (CUTLASS's `Params`) is given one in `args=` as its
/// fields in braces: a list that leaves a field out, or gives a field a value of another
/// kind, is refused naming the struct's definition; a kernel given no braces is told how.
#[test]
fn a_struct_taken_by_value_is_given_as_its_fields_in_braces() {
    let example = example("sgemm_params.cu");
    let definition = "parameter 1: GemmParams (examples/sgemm_params.cu:14): { const float *A, *B; \
                      float *C; size_t M, N, K; size_t lda, ldb, ldc; float alpha, beta; }";
    let (ok, text) = harness(&["inspect", "--kernel", &format!("{example},workload=gemm")]);
    assert!(
        ok && text.contains(
            "launched through a converting wrapper: parameter 1 is a struct built from \
             {A, B, C, M, N, K, K, N, N, alpha, beta}"
        ),
        "{text}"
    );
    // What follows needs NVRTC: the simulator's host compiler zero-fills a field left out, as
    // C++ does.
    if let Err(e) = nvrtc::version() {
        panic!("{e}\nThis test needs NVRTC: run tools/install-cuda-tools.sh first.");
    }
    let refused = |spec: &str| {
        let (ok, text) = harness(&["inspect", "--kernel", &format!("{spec},workload=gemm")]);
        assert!(!ok, "{text}");
        text
    };
    // beta left out: C++ would make it zero, and the row would pass only while beta is.
    let text = refused(
        &example
            .replace(",beta=-0.5", "")
            .replace(",alpha,beta})", ",alpha})"),
    );
    assert!(
        text.contains("every one of them") && text.contains(definition),
        "{text}"
    );
    // C and M swapped: a number does not convert to a pointer, nor a pointer to a size.
    let text = refused(&example.replace("{A,B,C,M,", "{A,B,M,C,"));
    assert!(
        text.contains("the lab calls:   sgemm_params({float * A, float * B, int M, float * C,"),
        "{text}"
    );
    // No args=: the kernel's struct and how to give it.
    let text = refused(&example.replace(
        ",alpha=1.5,beta=-0.5,args=({A,B,C,M,N,K,K,N,N,alpha,beta})",
        "",
    ));
    assert!(
        text.contains("is given in args= as its fields in braces") && text.contains(definition),
        "{text}"
    );
    // Braces inside braces are a struct field, which GemmParams does not have.
    let text = refused(&example.replace("{A,B,C,", "{A,{B,C},"));
    assert!(
        text.contains("the lab calls:   sgemm_params({float * A, {float * B, float * C}, int M,"),
        "{text}"
    );
}

/// `--sim-blocks` declines a kernel whose file (not the lab's unit, which only includes it)
/// adds into one address with atomics, since a sample of its blocks leaves the sum short; the
/// file's name (`stored.cu`) and a member named `stored` are no `red.` instruction.
#[test]
fn sim_blocks_reads_the_users_file_for_atomics() {
    let dir = scratch_dir("sim-blocks-atomics");
    std::fs::write(
        dir.join("sum.cu"),
        "__global__ void atomic_sum(const float *x, float *y, int n) {\n\
         \x20 int i = blockIdx.x * blockDim.x + threadIdx.x;\n\
         \x20 if (i < n) atomicAdd(y, x[i]);\n}\n",
    )
    .unwrap();
    let spec = format!(
        "{}:atomic_sum,block=256,grid=(cdiv(N,256)),args=(x,y,N),output=zero",
        dir.join("sum.cu").display()
    );
    let (ok, text) = sim("check", "reduce", "65536", &spec, &["--sim-blocks", "2"]);
    assert!(
        !ok && text.contains("--sim-blocks 2: the kernel's source uses atomicAdd"),
        "{text}"
    );
    std::fs::write(
        dir.join("stored.cu"),
        "struct cell { float stored; };\n\
         __global__ void transpose(const float *X, float *Y, int M, int N) {\n\
         \x20 int i = blockIdx.x * blockDim.x + threadIdx.x;\n\
         \x20 cell c; c.stored = i < M * N ? X[i] : 0.f;\n\
         \x20 if (i < M * N) Y[(i % N) * M + i / N] = c.stored;\n}\n",
    )
    .unwrap();
    let spec = format!(
        "{}:transpose,block=64,grid=(cdiv(M*N,64)),args=(X,Y,M,N)",
        dir.join("stored.cu").display()
    );
    let (ok, text) = sim("check", "transpose", "64x64", &spec, &["--sim-blocks", "2"]);
    assert!(ok && text.contains("1 passed"), "{text}");
}

/// A sum taken as one running FP32 total (one thread's loop, as an atomicAdd of every element
/// into one address is) misses the FP32 bound at a million terms by its rounding alone: the
/// failure says so, and what keeps a sum within the bound.
#[test]
fn a_serial_sums_rounding_is_told_apart_from_a_lost_element() {
    let dir = scratch_dir("serial-sum");
    std::fs::write(
        dir.join("serial.cu"),
        "__global__ void serial_sum(const float *x, float *y, int n) {\n\
         \x20 float s = 0.f;\n\
         \x20 for (int i = 0; i < n; ++i) s += x[i];\n\
         \x20 *y = s;\n}\n",
    )
    .unwrap();
    let spec = format!(
        "{}:serial_sum,block=1,grid=1,args=(x,y,N)",
        dir.join("serial.cu").display()
    );
    let (ok, text) = sim_check("reduce", "1048576", &spec);
    assert!(
        !ok && text.contains("above the fp32 bound")
            && text.contains(
                "that is the size of the rounding error of a sum taken as one FP32 running total \
                 (about 2^-24 x sqrt(N) = 6.1e-5 here)"
            ),
        "{text}"
    );
    // One element left out is no rounding: 1 in 4096 is far above 2^-24 x sqrt(4096).
    let (ok, text) = sim_check(
        "reduce",
        "4096",
        &spec.replace("args=(x,y,N)", "args=(x,y,N-1)"),
    );
    assert!(!ok && !text.contains("running total"), "{text}");
}

/// The last-warp unroll of older reductions, through volatile global memory and without
/// `__syncwarp()`: a warp's lanes do not run in lockstep, so it sums wrong numbers, and the
/// failure names volatile as the likely cause. A file whose only volatile is an `asm
/// volatile` is not told so.
#[test]
fn a_warp_synchronous_sum_through_volatile_global_memory_is_told_why_it_fails() {
    let dir = scratch_dir("volatile-warp");
    std::fs::write(
        dir.join("warp.cu"),
        "__global__ void warp_sum(int *x, int *y, unsigned n) {\n\
         \x20 const unsigned t = threadIdx.x;\n\
         \x20 if (t < 32) {\n\
         \x20   volatile int *v = x;\n\
         \x20   v[t] += v[t + 32]; v[t] += v[t + 16]; v[t] += v[t + 8];\n\
         \x20   v[t] += v[t + 4]; v[t] += v[t + 2]; v[t] += v[t + 1];\n\
         \x20 }\n\
         \x20 if (t == 0) y[0] = x[0];\n\
         }\n",
    )
    .unwrap();
    std::fs::write(
        dir.join("first.cu"),
        "__global__ void first_only(int *x, int *y, unsigned n) {\n\
         \x20 unsigned lane;\n\
         \x20 asm volatile(\"mov.u32 %0, %%laneid;\" : \"=r\"(lane));\n\
         \x20 if (threadIdx.x == 0 && lane == 0) y[0] = x[0];\n\
         }\n",
    )
    .unwrap();
    let spec = |file: &str, entry: &str| {
        format!(
            "{}:{entry},dtype=i32,block=64,grid=1,args=(x,y,N)",
            dir.join(file).display()
        )
    };
    let hint = "a warp's threads do not run in lockstep";
    let (ok, text) = sim_check("reduce", "64", &spec("warp.cu", "warp_sum"));
    assert!(
        !ok && text.contains("the integer output is not the exact result") && text.contains(hint),
        "{text}"
    );
    let (ok, text) = sim_check("reduce", "64", &spec("first.cu", "first_only"));
    assert!(!ok && !text.contains(hint), "{text}");
}

/// A kernel that launches a kernel (dynamic parallelism) is refused by the compiler with words
/// about undeclared runtime APIs; the message says what the launch needs and how the lab runs
/// such a pair instead.
#[test]
fn a_kernel_launching_a_kernel_is_told_what_that_needs() {
    let dir = scratch_dir("device-launch");
    std::fs::write(
        dir.join("nested.cu"),
        "__global__ void child(const float *x, float *y, int n) {\n\
         \x20 const int i = blockIdx.x * blockDim.x + threadIdx.x;\n\
         \x20 if (i < n) y[i] = x[i];\n\
         }\n\
         __global__ void parent(const float *x, float *y, int n) {\n\
         \x20 if (threadIdx.x == 0) child<<<(n + 255) / 256, 256>>>(x, y, n);\n\
         }\n",
    )
    .unwrap();
    let spec = format!(
        "{}:parent,block=32,grid=1,args=(X,Y,M*N)",
        dir.join("nested.cu").display()
    );
    let (ok, text) = sim_check("transpose", "1x64", &spec);
    assert!(
        !ok && text.contains("device-side kernel launch")
            && text.contains("A kernel here launches a kernel (dynamic parallelism)")
            && text.contains("then="),
        "{text}"
    );
}

/// A pointer to a vector of the buffer's element type (`float4 *`, through a typedef as
/// tuning examples write it) or to an FP8 element's storage takes the buffer as host code's
/// reinterpret_cast gives it, in the simulator and for NVRTC; one of another element type
/// (`half2 *` for floats) is refused, saying which buffer each vector takes.
#[test]
fn a_vector_pointer_takes_a_buffer_of_its_element_type() {
    let dir = scratch_dir("vector-pointers");
    std::fs::write(
        dir.join("sum4.cu"),
        "#include <cuda_fp16.h>\n\
         typedef float4 floatvector;\n\
         __global__ void sum4(float *y, const floatvector *x, int n) {\n\
         \x20 int i = blockIdx.x * blockDim.x + threadIdx.x;\n\
         \x20 if (i < n / 4) { floatvector v = x[i]; atomicAdd(y, v.x + v.y + v.z + v.w); }\n}\n\
         __global__ void sum2h(float *y, const half2 *x, int n) {\n\
         \x20 int i = blockIdx.x * blockDim.x + threadIdx.x;\n\
         \x20 if (i < n / 2) atomicAdd(y, __low2float(x[i]) + __high2float(x[i]));\n}\n",
    )
    .unwrap();
    let file = dir.join("sum4.cu").display().to_string();
    let spec = format!("{file}:sum4,block=256,grid=(cdiv(N,1024)),args=(y,x,N),output=zero");
    let (ok, text) = sim_check("reduce", "4096,1028", &spec);
    assert!(ok && text.contains("2 passed"), "{text}");
    let (ok, text) = harness(&["inspect", "--kernel", &format!("{spec},workload=reduce")]);
    assert!(ok && text.contains("sm_90"), "{text}");
    let (ok, text) = harness(&[
        "inspect",
        "--kernel",
        &format!(
            "{file}:sum2h,workload=reduce,block=256,grid=(cdiv(N,512)),args=(y,x,N),output=zero"
        ),
    ]);
    assert!(
        !ok && text.contains("half2 * one of f16")
            && text.contains("give each its type with dtype="),
        "{text}"
    );
    std::fs::write(
        dir.join("fp8_raw.cu"),
        "#include <cuda_bf16.h>\n#include <cuda_fp8.h>\n\
         __device__ float value(__nv_fp8_storage_t b) {\n\
         \x20 return __half2float(__half(__nv_cvt_fp8_to_halfraw(b, __NV_E4M3)));\n}\n\
         __global__ void fp8_raw(const __nv_fp8_storage_t *A, const __nv_fp8_storage_t *B,\n\
         \x20                       __nv_bfloat16 *C, int M, int N, int K) {\n\
         \x20 int r = blockIdx.y * blockDim.y + threadIdx.y, c = blockIdx.x * blockDim.x + threadIdx.x;\n\
         \x20 if (r >= M || c >= N) return;\n\
         \x20 float s = 0.f;\n\
         \x20 for (int k = 0; k < K; ++k) s += value(A[r * K + k]) * value(B[k * N + c]);\n\
         \x20 C[r * N + c] = __float2bfloat16(s);\n}\n",
    )
    .unwrap();
    let spec = format!(
        "{}:fp8_raw,dtype=e4m3,C:bf16,block=16x16,grid=tile:16x16",
        dir.join("fp8_raw.cu").display()
    );
    let (ok, text) = sim_check("gemm", "33x17x20", &spec);
    assert!(ok && text.contains("1 passed"), "{text}");
    let (ok, text) = harness(&["inspect", "--kernel", &format!("{spec},workload=gemm")]);
    assert!(ok && text.contains("sm_90"), "{text}");
}

/// An integer in `args=` reaches an enum parameter as host code's cast gives it (darknet's
/// `activate_array(x, n, RELU)`), in the simulator and for NVRTC, as it reaches a `size_t`.
#[test]
fn an_integer_reaches_an_enum_parameter() {
    let dir = scratch_dir("enum-parameter");
    std::fs::write(
        dir.join("order.cu"),
        "typedef enum { AS_IS, TRANSPOSED } ORDER;\n\
         enum class Scale : int { One = 1, Two = 2 };\n\
         __global__ void copy(const float *X, float *Y, int M, int N, ORDER o, Scale s, size_t n) {\n\
         \x20 int i = blockIdx.x * blockDim.x + threadIdx.x;\n\
         \x20 if (i >= n) return;\n\
         \x20 int j = o == TRANSPOSED ? (i % N) * M + i / N : i;\n\
         \x20 Y[j] = X[i] * (float)s;\n}\n",
    )
    .unwrap();
    let spec = format!(
        "{}:copy,block=64,grid=(cdiv(M*N,64)),args=(X,Y,M,N,1,1,M*N)",
        dir.join("order.cu").display()
    );
    let (ok, text) = sim_check("transpose", "8x8,33x7", &spec);
    assert!(ok && text.contains("2 passed"), "{text}");
    let (ok, text) = harness(&["inspect", "--kernel", &format!("{spec},workload=transpose")]);
    assert!(ok && text.contains("sm_90"), "{text}");
}

/// A kernel that rounds its operands to FP16 over f32 buffers misses FP32's bound by that
/// rounding alone: the failure says that TF32's and FP16's bound holds it and how to ask for
/// it, and with `precision=fp16` it passes.
#[test]
fn a_kernel_rounding_to_half_over_f32_buffers_is_told_of_precision() {
    let dir = scratch_dir("half-over-f32");
    std::fs::write(
        dir.join("conv_half.cu"),
        "#include <cuda_fp16.h>\n\
         __global__ void conv_half(const float *x, const float *k, float *y, int B, int C, int M, int H, int W, int K) {\n\
         \x20 int HO = H - K + 1, WO = W - K + 1;\n\
         \x20 int i = blockIdx.x * blockDim.x + threadIdx.x;\n\
         \x20 if (i >= B * M * HO * WO) return;\n\
         \x20 int w = i % WO, h = i / WO % HO, m = i / (WO * HO) % M, b = i / (WO * HO * M);\n\
         \x20 float acc = 0.f;\n\
         \x20 for (int c = 0; c < C; ++c)\n\
         \x20   for (int p = 0; p < K; ++p)\n\
         \x20     for (int q = 0; q < K; ++q)\n\
         \x20       acc += __half2float(__float2half(x[((b * C + c) * H + h + p) * W + w + q])) *\n\
         \x20              __half2float(__float2half(k[((m * C + c) * K + p) * K + q]));\n\
         \x20 y[i] = acc;\n}\n",
    )
    .unwrap();
    let spec = format!(
        "{}:conv_half,block=256,grid=(cdiv(B*M*(H-K+1)*(W-K+1),256))",
        dir.join("conv_half.cu").display()
    );
    let (ok, text) = sim_check("conv", "2x3x17x9x8x3", &spec);
    assert!(
        !ok && text.contains(
            "the error is within the 2e-3 bound of TF32 and FP16: a kernel that rounds its \
             operands or its sums to either"
        ),
        "{text}"
    );
    let (ok, text) = sim_check("conv", "2x3x17x9x8x3", &format!("{spec},precision=fp16"));
    assert!(ok && text.contains("1 passed"), "{text}");
}

/// A buffer from an element on is `X+EXPR` in `args=`, as host code passes `x + offset` to
/// work through a tensor in parts: two launches of one kernel each transpose half of X's rows.
/// An offset past the buffer, and one into a workspace, are refused saying why.
#[test]
fn a_buffer_from_an_element_on_is_given_with_an_offset() {
    let dir = scratch_dir("pointer-offsets");
    std::fs::write(
        dir.join("part.cu"),
        "// Transposes `rows` rows of X, the first of which is row `row0` of the whole.\n\
         __global__ void transpose_part(const float *X, float *Y, int rows, int M, int N, int row0) {\n\
         \x20 int i = blockIdx.x * blockDim.x + threadIdx.x;\n\
         \x20 if (i < rows * N) Y[(i % N) * M + row0 + i / N] = X[i];\n}\n",
    )
    .unwrap();
    let file = dir.join("part.cu").display().to_string();
    let spec = |second: &str| {
        format!(
            "{file}:transpose_part,block=64,grid=(cdiv(M*N,64)),args=(X,Y,M/2,M,N,0),\
             then=transpose_part,block=64,grid=(cdiv(M*N,64)),args=({second},Y,M-M/2,M,N,M/2)"
        )
    };
    let (ok, text) = sim_check("transpose", "8x8,33x7", &spec("X+(M/2)*N"));
    assert!(ok && text.contains("2 passed"), "{text}");
    let (ok, text) = sim_check("transpose", "8x8", &spec("X+M*N"));
    assert!(
        !ok && text.contains("X+M*N = X+64 is outside X, which holds 64 elements"),
        "{text}"
    );
    let (ok, text) = sim_check(
        "transpose",
        "8x8",
        &format!(
            "{file}:transpose_part,block=64,grid=1,args=(scratch(P,4*M*N),Y,M,M,N,0),then=transpose_part,block=64,grid=1,args=(P+N,Y,M,M,N,0)"
        ),
    );
    assert!(
        !ok && text.contains("P+N: an offset into a workspace is not given"),
        "{text}"
    );
}

/// A null pointer for a kernel's optional buffer is `nullptr` in `args=` (in a struct's
/// fields too), as host code passes one; a 0 is the int 0, and the mismatch says how to write
/// a null pointer.
#[test]
fn a_null_pointer_is_passed_as_nullptr() {
    let dir = scratch_dir("null-pointer");
    let code = r#"
// Y = X transposed, each element times scale[j] when a scale is given.
__global__ void transpose_scaled(const float *X, float *Y, const float *scale, int M, int N) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= M * N) return;
    int r = i / N, c = i % N;
    Y[c * M + r] = X[i] * (scale != nullptr ? scale[c] : 1.0f);
}
struct Args { const float *x; float *y; const float *scale; int m, n; };
__global__ void transpose_args(Args a) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= a.m * a.n) return;
    int r = i / a.n, c = i % a.n;
    a.y[c * a.m + r] = a.x[i] * (a.scale ? a.scale[c] : 1.0f);
}
"#;
    std::fs::write(dir.join("optional.cu"), code).unwrap();
    let file = dir.join("optional.cu").display().to_string();
    let launch = "block=64,grid=(cdiv(M*N,64))";
    let (ok, text) = sim_check(
        "transpose",
        "4x8,33x7",
        &format!("{file}:transpose_scaled,{launch},args=(X,Y,nullptr,M,N)"),
    );
    assert!(ok && text.contains("2 passed"), "{text}");
    let (ok, text) = sim_check(
        "transpose",
        "33x7",
        &format!("{file}:transpose_args,{launch},args=({{X,Y,NULL,M,N}})"),
    );
    assert!(ok && text.contains("1 passed"), "{text}");
    let (ok, text) = harness(&[
        "inspect",
        "--kernel",
        &format!("{file}:transpose_scaled,workload=transpose,{launch},args=(X,Y,0,M,N)"),
    ]);
    assert!(
        !ok && text.contains("A 0 in `args=` is the int 0; a null pointer is `nullptr`."),
        "{text}"
    );
}

/// A struct of structs (CUTLASS's way: the problem's sizes and pointers in one, an empty
/// epilogue and an empty tile order beside it) is built from braces inside braces, `{}` for
/// each empty one, and runs; braces that leave a struct out are refused by the check.
#[test]
fn a_struct_of_structs_is_given_as_braces_inside_braces() {
    let dir = scratch_dir("nested-struct");
    let file = dir.join("nested.cu");
    std::fs::write(
        &file,
        r#"struct Problem {
  int M, N, K;
  const float *A, *B;
  float *C;
};
struct Identity {};
struct RowMajorOrder {};
struct Params {
  Problem problem;
  Identity epilogue;
  RowMajorOrder order;
};
__global__ void nested_gemm(Params params) {
  const Problem &p = params.problem;
  const int row = blockIdx.y * 16 + threadIdx.y, col = blockIdx.x * 16 + threadIdx.x;
  if (row >= p.M || col >= p.N) return;
  float acc = 0.0f;
  for (int k = 0; k < p.K; ++k) acc += p.A[row * p.K + k] * p.B[k * p.N + col];
  p.C[row * p.N + col] = acc;
}
"#,
    )
    .unwrap();
    let spec = |args: &str| {
        format!(
            "{}:nested_gemm,block=16x16,grid=tile:16x16,args=({args})",
            file.display()
        )
    };
    let (ok, text) = sim_run(
        "gemm",
        "33x17x9",
        &spec("{{M,N,K,A,B,C},{},{}}"),
        &dir.join("run"),
    );
    assert!(ok, "{text}");
    assert_eq!(passing_user_rows(&text), 1, "{text}");
    // What follows needs NVRTC: the simulator's host compiler zero-fills a field left out, as
    // C++ does.
    if let Err(e) = nvrtc::version() {
        panic!("{e}\nThis test needs NVRTC: run tools/install-cuda-tools.sh first.");
    }
    let (ok, text) = sim_run(
        "gemm",
        "33x17x9",
        &spec("{{M,N,K,A,B,C},{}}"),
        &dir.join("short"),
    );
    assert!(
        !ok && text.contains(
            "the lab calls:   nested_gemm({{int M, int N, int K, float * A, \
                              float * B, float * C}, {}})"
        ) && text.contains("which holds Problem (")
            && text.contains("{ int M, N, K; const float *A, *B; float *C; }"),
        "{text}"
    );
}

/// With `cluster=`, each block of a cluster has its own static `__shared__` variables, in the
/// kernel's file and in a header it includes; one the simulator cannot give each block (a
/// declaration in a macro) costs the simulator's row, with its line, not the GPU's.
#[test]
fn static_shared_memory_is_each_blocks_own_in_clusters_given_with_cluster() {
    let dir = scratch_dir("cluster-static");
    std::fs::write(
        dir.join("partner.h"),
        "#include <cooperative_groups.h>\n\
         __device__ float *partners(float *mine) {\n\
         \x20 __shared__ unsigned arrived;\n\
         \x20 if (threadIdx.x == 0) arrived = 1;\n\
         \x20 auto cluster = cooperative_groups::this_cluster();\n\
         \x20 cluster.sync();\n\
         \x20 if (*cluster.map_shared_rank(&arrived, cluster.block_rank() ^ 1) != 1) __trap();\n\
         \x20 return cluster.map_shared_rank(mine, cluster.block_rank() ^ 1);\n\
         }\n",
    )
    .unwrap();
    let code = "#include \"partner.h\"\n\
        __global__ void swapped(const float *A, const float *B, float *C, int M, int N, int K) {\n\
        \x20 __shared__ float mine[64];\n\
        \x20 const int i = (blockIdx.x ^ 1) * blockDim.x + threadIdx.x;\n\
        \x20 float acc = 0.0f;\n\
        \x20 if (i < M * N)\n\
        \x20   for (int k = 0; k < K; ++k) acc += A[i / N * K + k] * B[k * N + i % N];\n\
        \x20 partners(mine)[threadIdx.x] = acc;\n\
        \x20 cooperative_groups::this_cluster().sync();\n\
        \x20 const int j = blockIdx.x * blockDim.x + threadIdx.x;\n\
        \x20 if (j < M * N) C[j] = mine[threadIdx.x];\n\
        }\n";
    let file = dir.join("static.cu");
    std::fs::write(&file, code).unwrap();
    let spec = format!("{}:swapped,block=64,grid=tile:64,cluster=2", file.display());
    let (ok, text) = sim_run("gemm", "16x16x8", &spec, &dir.join("out"));
    assert!(ok && passing_user_rows(&text) == 1, "{text}");

    let file = dir.join("macro.cu");
    std::fs::write(
        &file,
        code.replace(
            "\x20 __shared__ float mine[64];\n",
            "#define TILE __shared__ float mine[64]\n\x20 TILE;\n",
        ),
    )
    .unwrap();
    let (_, text) = sim_run(
        "gemm",
        "16x16x8",
        &spec.replace("static.cu", "macro.cu"),
        &dir.join("macro"),
    );
    assert!(
        text.contains(&format!(
            "not simulated: {}:3: a __shared__ variable declared in a preprocessor directive",
            file.display()
        )),
        "{text}"
    );
}

/// `a=col`: A column-major (element (m, k) at `k*M + m`), as CuTe's "NT" GEMM takes it; the
/// same kernel judged against a row-major A fails.
#[test]
fn a_column_major_a_is_given_with_a_col() {
    let dir = scratch_dir("a-col");
    std::fs::write(
        dir.join("nt.cu"),
        "__global__ void nt(const float *A, const float *B, float *C, int M, int N, int K) {\n\
         \x20 const int m = blockIdx.y * 16 + threadIdx.y, n = blockIdx.x * 16 + threadIdx.x;\n\
         \x20 if (m >= M || n >= N) return;\n\
         \x20 float acc = 0.f;\n\
         \x20 for (int k = 0; k < K; ++k) acc += A[k * M + m] * B[n * K + k];\n\
         \x20 C[m * N + n] = acc;\n\
         }\n",
    )
    .unwrap();
    let spec = format!(
        "{}:nt,block=16x16,grid=tile:16x16,b=col",
        dir.join("nt.cu").display()
    );
    let (ok, text) = sim_run(
        "gemm",
        "100x37x129,64x64x64",
        &format!("{spec},a=col"),
        &dir.join("col"),
    );
    assert!(ok && passing_user_rows(&text) == 2, "{text}");
    let (ok, text) = sim_run("gemm", "100x37x129", &spec, &dir.join("row"));
    assert!(!ok && passing_user_rows(&text) == 0, "{text}");
    let (ok, text) = sim_run(
        "softmax",
        "9x64",
        &format!(
            "{}:nt,block=16x16,grid=tile:16x16,a=col",
            dir.join("nt.cu").display()
        ),
        &dir.join("softmax"),
    );
    assert!(!ok && text.contains("a=col is for GEMM's A"), "{text}");
}

#[test]
fn device_code_behind_cuda_arch_runs_in_the_simulator() {
    // nvcc's guards: a body for architectures that have half arithmetic, nothing elsewhere.
    let dir = scratch_dir("cuda-arch");
    let code = "#ifndef __CUDACC__\n#error device code is compiled with __CUDACC__\n#endif\n\
        extern \"C\" __global__ void guarded(const float *A, const float *B, float *C, int M,\n\
        \x20                                   int N, int K) {\n\
        #if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 530\n\
        \x20 const int i = blockIdx.x * blockDim.x + threadIdx.x;\n\
        \x20 if (i >= M * N) return;\n\
        \x20 float acc = 0.0f;\n\
        \x20 for (int k = 0; k < K; ++k) acc += A[i / N * K + k] * B[k * N + i % N];\n\
        \x20 C[i] = acc;\n\
        #endif\n\
        }\n";
    let users = [user_file(
        &dir,
        "guarded.cu",
        code,
        "guarded,block=64,grid=tile:64",
    )];
    let results = sim_rows(&users, &[Shape::gemm(9, 10, 3)]);
    let row = &results.workloads[0].shapes[0].rows[0];
    assert_eq!(row.status, Status::Passed, "{row:?}");
}

#[test]
fn a_float_constant_of_an_args_list_reaches_the_kernel() {
    // LayerNorm with its epsilon as a parameter, as public kernels take it.
    let dir = scratch_dir("float-arg");
    let code = "__global__ void ln(const float *X, const float *g, const float *b, float *Y,\n\
        \x20                  int M, int N, float eps) {\n\
        \x20 int r = blockIdx.x * blockDim.x + threadIdx.x;\n\
        \x20 if (r >= M) return;\n\
        \x20 float mean = 0.f, var = 0.f;\n\
        \x20 for (int j = 0; j < N; ++j) mean += X[r * N + j];\n\
        \x20 mean /= N;\n\
        \x20 for (int j = 0; j < N; ++j) var += (X[r * N + j] - mean) * (X[r * N + j] - mean);\n\
        \x20 float inv = rsqrtf(var / N + eps);\n\
        \x20 for (int j = 0; j < N; ++j) Y[r * N + j] = (X[r * N + j] - mean) * inv * g[j] + b[j];\n\
        }\n";
    std::fs::write(dir.join("ln.cu"), code).unwrap();
    let user = |eps: &str| {
        load(
            &format!(
                "{}/ln.cu:ln,args=(X,gamma,beta,Y,M,N,{eps}),block=32,grid=(cdiv(M,32))",
                dir.display()
            ),
            Workload::Layernorm,
        )
    };
    // The reference's epsilon passes; one a thousand times larger moves every output past
    // the bound: the value the kernel gets is the one written.
    let shapes = [Shape::Layernorm { m: 37, n: 130 }];
    let row = |eps: &str| sim_rows(&[user(eps)], &shapes).workloads[0].shapes[0].rows[0].clone();
    assert_eq!(row("1e-5").status, Status::Passed, "{:?}", row("1e-5"));
    assert_eq!(row("1e-2f").status, Status::Failed);
}

#[test]
fn defines_are_evaluated_for_each_shape() {
    // The K loop's trip count is a macro: right at a shape only when compiled for its K.
    let dir = scratch_dir("defines");
    let code = "#ifndef KDIM\n#error compile with -D KDIM=<K>\n#endif\n\
        extern \"C\" __global__ void gemm_k(const float *A, const float *B, float *C, int M,\n\
        \x20                                   int N, int K) {\n\
        \x20 const int i = blockIdx.x * blockDim.x + threadIdx.x;\n\
        \x20 if (i >= M * N) return;\n\
        \x20 float acc = 0.0f;\n\
        \x20 for (int k = 0; k < KDIM; ++k) acc += A[i / N * KDIM + k] * B[k * N + i % N];\n\
        \x20 C[i] = acc * SCALE;\n\
        }\n";
    let users = [user_file(
        &dir,
        "gemm_k.cu",
        code,
        "gemm_k,block=64,grid=tile:64,define=KDIM=K,define=SCALE=2-1",
    )];
    let shapes = [Shape::gemm(9, 10, 3), Shape::gemm(20, 7, 33)];
    let results = sim_rows(&users, &shapes);
    for s in &results.workloads[0].shapes {
        let row = &s.rows[0];
        assert_eq!(row.status, Status::Passed, "{}: {row:?}", s.shape);
    }
    // Each shape's plan carries its own value; the one compiled first has the probe shape's.
    let plan = |shape: &Shape| users[0].cuda(shape).unwrap();
    let defines = |shape: &Shape| match &plan(shape).steps[0] {
        kernel::Step::Kernel(l) => l.source.defines.clone(),
        other => panic!("{other:?}"),
    };
    assert_eq!(
        defines(&shapes[1]),
        [
            ("KDIM".into(), "33".to_string()),
            ("SCALE".into(), "1".to_string())
        ]
    );
    let probe = Workload::Gemm.probe_shape().dims();
    let k = probe.iter().find(|(n, _)| *n == "K").unwrap().1;
    assert_eq!(users[0].source().defines[0].1, k.to_string());

    // A name the workload does not have is refused when the kernel is loaded.
    let spec = UserKernelSpec::parse(&format!(
        "{}/gemm_k.cu:gemm_k,block=64,grid=tile:64,define=KDIM=D",
        dir.display()
    ))
    .unwrap();
    let e = UserKernel::load(&spec, Some(Workload::Gemm), 1, SIM_SMS).unwrap_err();
    assert!(
        e.to_string()
            .contains("`D` uses D; expressions for gemm may use M, N, K"),
        "{e}"
    );

    // A name the file defines itself, outside any `#ifndef` (as cuda-samples fix their
    // sizes), would make define= change nothing: refused, naming the line.
    std::fs::write(
        dir.join("fixed.cu"),
        format!(
            "#define KDIM 16 // the sample's size\n{}",
            code.split_once("#endif\n").unwrap().1
        ),
    )
    .unwrap();
    let spec = UserKernelSpec::parse(&format!(
        "{}/fixed.cu:gemm_k,block=64,grid=tile:64,define=KDIM=K,define=SCALE=1",
        dir.display()
    ))
    .unwrap();
    let e = UserKernel::load(&spec, Some(Workload::Gemm), 1, SIM_SMS).unwrap_err();
    assert!(
        e.to_string().contains(
            "define=KDIM: {DIR}/fixed.cu:1 defines KDIM itself (`#define KDIM 16`), which \
             replaces the value define= passes"
                .replace("{DIR}", &dir.display().to_string())
                .as_str()
        ),
        "{e}"
    );
}

#[test]
fn inline_ptx_the_simulator_does_not_emulate_is_named_with_its_file_and_line() {
    let dir = scratch_dir("ptx");
    let code = "__global__ void highest_bit(const float *A, const float *B, float *C,\n\
        \x20                             int M, int N, int K) {\n\
        \x20 unsigned m;\n\
        \x20 asm volatile(\"bfind.u32 %0, %1;\" : \"=r\"(m) : \"r\"(threadIdx.x));\n\
        \x20 C[threadIdx.x] = A[threadIdx.x] + m;\n\
        }\n";
    let users = [user_file(
        &dir,
        "mask.cu",
        code,
        "highest_bit,block=64,grid=(1,1)",
    )];
    let results = sim_rows(&users, &[Shape::gemm(8, 8, 8)]);
    let row = &results.workloads[0].shapes[0].rows[0];
    assert_eq!(row.status, Status::Unsupported, "{row:?}");
    let why = row.reason.as_deref().unwrap();
    assert!(
        why.contains("mask.cu:4: inline PTX `bfind.u32`: not emulated"),
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
            && why.contains("by thread (")
            && why.ends_with("oob.cu:3"),
        "{why}"
    );
    // Named as the user wrote it, not by the wrapper the lab launches.
    assert!(
        why.contains(" zero: ") && !why.contains("user_zero"),
        "{why}"
    );
}

/// `examples/gemm_halves_race.cu`: two threads per output, each summing half of K, the second
/// adding into what the first stored. Without a barrier between the store and the add, `harness
/// run` in the simulator fails the row and names both threads, in whichever order the schedule
/// ran them (and so whether or not the sums came out right); with it the row passes.
#[test]
fn a_race_on_global_memory_fails_the_row_naming_both_threads() {
    let dir = scratch_dir("race");
    let launch = "block=16x16x2,grid=tile:16x16";
    let racy = format!("examples/gemm_halves_race.cu:halves,{launch}");
    let synced = format!("examples/gemm_halves_race.cu:halves_synced,{launch}");
    let out = dir.join("run");
    let (code, text) = harness_code(
        &[
            "run",
            "--device",
            "sim",
            "--workload",
            "gemm",
            "--sizes",
            "100x37x129",
            "--kernel",
            &racy,
            "--kernel",
            &synced,
            "--out",
            out.to_str().unwrap(),
        ],
        &[],
    );
    assert_eq!(code, Some(1), "{text}");
    assert_eq!(passing_user_rows(&text), 1, "{text}");
    let lines: Vec<&str> = text.lines().collect();
    let at = lines
        .iter()
        .position(|l| l.starts_with("  gemm 100x37x129 gemm_halves_race.cu:halves: "))
        .unwrap_or_else(|| panic!("{text}"));
    let why = lines[at];
    the_guide_quotes_in_words(why);
    assert!(
        why.contains("race on global memory: this thread")
            && why.contains("of buffer 'C', which thread (")
            && why.contains("of this block")
            && why.contains("with no __syncthreads()"),
        "{why}"
    );
    // The store or the add, whichever the schedule ran second, by its line.
    let code = std::fs::read_to_string(root().join("examples/gemm_halves_race.cu")).unwrap();
    let sites: Vec<String> = code
        .lines()
        .enumerate()
        .filter(|(_, l)| l.contains("C[r * N + c] = acc") || l.contains("C[r * N + c] += acc"))
        .map(|(i, _)| {
            format!(
                "; this thread's access is at examples/gemm_halves_race.cu:{} (",
                i + 1
            )
        })
        .collect();
    assert!(
        sites.len() == 2 && sites.iter().any(|s| why.contains(s)),
        "{why}"
    );
    // Not a tail's doing: no hint about the shape's partial tiles follows it.
    let next = lines.get(at + 1).copied().unwrap_or_default();
    assert!(
        !next.contains("whole number") && !next.contains("multiple of"),
        "{text}"
    );
}

/// A race on shared memory names the lines of both accesses, and a shape with partial tiles
/// adds no hint about them: a missing barrier is no matter of sizes.
#[test]
fn a_race_names_its_line_and_not_the_shapes_tails() {
    let dir = scratch_dir("race-line");
    std::fs::write(
        dir.join("sgemm_tiled.cu"),
        "#define TILE 16\n\
         __global__ void sgemm_tiled(const float *A, const float *B, float *C, int M, int N, int K) {\n\
         \x20 __shared__ float As[TILE][TILE], Bs[TILE][TILE];\n\
         \x20 int ty = threadIdx.y, tx = threadIdx.x;\n\
         \x20 int row = blockIdx.y * TILE + ty, col = blockIdx.x * TILE + tx;\n\
         \x20 float acc = 0.f;\n\
         \x20 for (int t = 0; t < K; t += TILE) {\n\
         \x20   As[ty][tx] = row < M && t + tx < K ? A[row * K + t + tx] : 0.f;\n\
         \x20   Bs[ty][tx] = t + ty < K && col < N ? B[(t + ty) * N + col] : 0.f;\n\
         \x20   __syncthreads();\n\
         \x20   for (int k = 0; k < TILE; ++k) acc += As[ty][k] * Bs[k][tx];\n\
         \x20 }\n\
         \x20 if (row < M && col < N) C[row * N + col] = acc;\n\
         }\n",
    )
    .unwrap();
    let spec = format!(
        "{}:sgemm_tiled,block=16x16,grid=tile:16x16",
        dir.join("sgemm_tiled.cu").display()
    );
    let (ok, text) = sim_run("gemm", "100x37x129", &spec, &dir.join("run"));
    assert!(!ok, "{text}");
    let lines: Vec<&str> = text.lines().collect();
    let at = lines
        .iter()
        .position(|l| l.starts_with("  gemm 100x37x129 sgemm_tiled.cu:sgemm_tiled: "))
        .unwrap_or_else(|| panic!("{text}"));
    // Line 11: `acc += As[ty][k] * Bs[k][tx]`, the read that meets the next tile's write,
    // which the other thread made at line 8 or 9 (`As[ty][tx] = `, `Bs[ty][tx] = `).
    assert!(
        lines[at].contains("race on shared memory: this thread reads __shared__")
            && lines[at].contains("; this thread's access is at ")
            && lines[at].contains("sgemm_tiled.cu:11 (thread ("),
        "{text}"
    );
    assert!(
        lines[at].contains("sgemm_tiled.cu:8) in the same barrier interval")
            || lines[at].contains("sgemm_tiled.cu:9) in the same barrier interval"),
        "{text}"
    );
    let next = lines.get(at + 1).copied().unwrap_or_default();
    assert!(
        !next.contains("whole number") && !next.contains("multiple of"),
        "{text}"
    );
}

/// A write past C in a helper of the kernel's own header names the header's line and the
/// kernel's line that calls it, as both files are named.
#[test]
fn a_fault_in_a_local_headers_helper_names_both_lines() {
    let dir = scratch_dir("helper-fault");
    std::fs::create_dir_all(dir.join("inc")).unwrap();
    let header = "#pragma once\n\
                  __device__ inline void store(float *C, int N, int r, int c, float v) {\n\
                  \x20   C[r * N + c + 7] = v;\n\
                  }\n";
    let kernel = "#include \"inc/util.cuh\"\n\
                  __global__ void sg(const float *A, const float *B, float *C, int M, int N, int K) {\n\
                  \x20   int r = blockIdx.y * 16 + threadIdx.y, c = blockIdx.x * 16 + threadIdx.x;\n\
                  \x20   if (r >= M || c >= N) return;\n\
                  \x20   float acc = 0.f;\n\
                  \x20   for (int k = 0; k < K; ++k) acc += A[r * K + k] * B[k * N + c];\n\
                  \x20   store(C, N, r, c, acc);\n\
                  }\n";
    std::fs::write(dir.join("inc/util.cuh"), header).unwrap();
    std::fs::write(dir.join("k.cu"), kernel).unwrap();
    let spec = format!("{}/k.cu:sg,block=16x16,grid=tile:16x16", dir.display());
    let (ok, text) = sim_run("gemm", "100x37x129", &spec, &dir.join("run"));
    assert!(!ok, "{text}");
    let d = dir.display();
    assert!(
        text.contains("out-of-bounds write past the end of buffer 'C'")
            && text.contains(&format!(", at {d}/inc/util.cuh:3, called at {d}/k.cu:7\n")),
        "{text}"
    );
}

/// `examples/bf16_gemm_nt.cu` reads its rows in `__nv_bfloat162` pairs only when K is even, so
/// that every row starts on a 4-byte boundary. Without that test, a GPU faults at an odd K;
/// the simulator fails the row naming the buffer and the element, and the shape's hint says
/// that K is odd. An even K still passes.
#[test]
fn a_vector_cast_off_its_alignment_fails_the_row() {
    let dir = scratch_dir("misaligned");
    let spec = example_variant(&dir, &BF16_EXAMPLE, "  if (K % 2 == 0) {", "  {");
    let (ok, text) = sim_run("gemm", "100x37x129,64x64x64", &spec, &dir.join("run"));
    assert!(!ok, "{text}");
    assert_eq!(passing_user_rows(&text), 1, "{text}");
    let lines: Vec<&str> = text.lines().collect();
    let at = lines
        .iter()
        .position(|l| l.starts_with("  gemm 100x37x129 bf16_gemm_nt.cu:bf16_gemm_nt: "))
        .unwrap_or_else(|| panic!("{text}"));
    // The guide shows the example edited in place.
    the_guide_quotes_in_words(&lines[at].replace(&format!("{}/", dir.display()), "examples/"));
    // By a line of the loop reading the pairs (optimized code gives the unrolled loads to
    // the loop's line).
    let code = std::fs::read_to_string(root().join("examples/bf16_gemm_nt.cu")).unwrap();
    let the_loop = kernel::testing::source_line(&code, "for (; k < K / 2; ++k)");
    assert!(
        (the_loop..the_loop + 4).any(|n| lines[at].contains(&format!(
            "; this thread's access is at {}/bf16_gemm_nt.cu:{n} (",
            dir.display()
        ))),
        "{text}"
    );
    assert!(
        lines[at].contains("misaligned address: this thread reads 4 bytes at byte ")
            && lines[at].contains(" of buffer 'A', which is not a multiple of 4"),
        "{text}"
    );
    // The hint speaks of K alone: the partial tiles of M and N do not misalign a read.
    assert!(lines[at + 1].starts_with("  K = 129 is odd: "), "{text}");
    the_guide_quotes(lines[at + 1]);
}

/// `examples/hgemm_wmma.cu` pads its shared rows by 8 halves, keeping them 16-byte multiples
/// as the WMMA API asks; padded by 4, each row of `As` is 72 bytes, which ldmatrix cannot load
/// from. The simulator fails the row at the load, saying what ldm is in bytes.
#[test]
fn a_wmma_tile_whose_rows_are_not_16_byte_multiples_fails_at_its_load() {
    let dir = scratch_dir("wmma-ldm");
    std::fs::copy(
        root().join("examples/cuda_check.cuh"),
        dir.join("cuda_check.cuh"),
    )
    .unwrap();
    let spec = example_variant(
        &dir,
        &FP16_EXAMPLE,
        "constexpr int PAD = 8; ",
        "constexpr int PAD = 4; ",
    );
    let (ok, text) = sim_run("gemm", "64x64x64", &spec, &dir.join("run"));
    assert!(!ok, "{text}");
    let line = text
        .lines()
        .find(|l| l.starts_with("  gemm 64x64x64 hgemm_wmma.cu:hgemm_wmma<64,64>: "))
        .unwrap_or_else(|| panic!("{text}"));
    let code = std::fs::read_to_string(root().join("examples/hgemm_wmma.cu")).unwrap();
    let load = kernel::testing::source_line(&code, "wmma::load_matrix_sync(a[i], &As");
    assert!(
        line.contains(
            "wmma::load_matrix_sync: ldm 36 elements of 2 bytes is 72 bytes between rows"
        ) && line.contains(&format!("hgemm_wmma.cu:{load} (")),
        "{text}"
    );
    the_guide_quotes_in_words(&line.replace(&format!("{}/", dir.display()), "examples/"));
}

#[test]
fn a_misaligned_write_is_told_of_the_outputs_rows() {
    let dir = scratch_dir("misaligned-write");
    // Two columns of C a thread, stored as one float2 wherever both exist.
    let code = "__global__ void sgemm_pairs(const float *A, const float *B, float *C, int M, \
        int N, int K) {\n\
        \x20 const int row = blockIdx.y * 16 + threadIdx.y;\n\
        \x20 const int col = (blockIdx.x * 16 + threadIdx.x) * 2;\n\
        \x20 if (row >= M || col >= N) return;\n\
        \x20 float a0 = 0.0f, a1 = 0.0f;\n\
        \x20 for (int k = 0; k < K; ++k) {\n\
        \x20   a0 += A[row * K + k] * B[k * N + col];\n\
        \x20   if (col + 1 < N) a1 += A[row * K + k] * B[k * N + col + 1];\n\
        \x20 }\n\
        \x20 if (col + 1 < N)\n\
        \x20   *reinterpret_cast<float2 *>(&C[row * N + col]) = make_float2(a0, a1);  // store\n\
        \x20 else\n\
        \x20   C[row * N + col] = a0;\n\
        }\n";
    std::fs::write(dir.join("pairs.cu"), code).unwrap();
    let spec = format!(
        "{}/pairs.cu:sgemm_pairs,block=16x16,grid=tile:16x32",
        dir.display()
    );
    let (ok, text) = sim_run("gemm", "100x37x129,64x64x64", &spec, &dir.join("run"));
    assert!(!ok, "{text}");
    assert_eq!(passing_user_rows(&text), 1, "{text}");
    let row = lines_from(&text, "  gemm 100x37x129 pairs.cu:sgemm_pairs: ", 1);
    let store = kernel::testing::source_line(code, "// store");
    assert!(
        row.contains("misaligned address: this thread writes 8 bytes at byte ")
            && row.contains(&format!("pairs.cu:{store} (")),
        "{text}"
    );
    // Not of C's partial 16x32 tiles, nor of K, odd as it is: of C's rows, N long.
    let hint = row.lines().nth(1).unwrap();
    assert_eq!(
        hint,
        "  N = 37 is odd: the rows of C that are N elements long start at odd elements too, \
         where a vector write of 2 or more elements is misaligned"
    );
    the_guide_quotes(hint);
    // `check` lists the failure with the same hint.
    let (ok, text) = sim_check("gemm", "100x37x129", &spec);
    assert!(!ok && text.contains(&format!("\n{hint}\n")), "{text}");
}

/// `constant=SYMBOL:BUFFER` fills a `__constant__` array as `cudaMemcpyToSymbol` would: a
/// shape whose buffer is larger than constant memory is declined, one larger than the array
/// fails naming both sizes, and a name that is not a buffer is refused when the spec loads.
#[test]
fn a_constant_array_is_filled_from_its_buffer_and_held_to_its_size() {
    let dir = scratch_dir("constant");
    let spec = example_variant(
        &dir,
        &CONV_CONSTANT_EXAMPLE,
        "#define MAX_MASK (12 * 1024)",
        "#define MAX_MASK 64",
    );
    let sizes = "1x1x4x7x7x7,2x3x17x9x8x3,2x64x17x6x7x5";
    let (ok, text) = sim_run("conv", sizes, &spec, &dir.join("run"));
    assert!(!ok, "{text}");
    // 4 x 1 x 7 x 7 = 196 floats: more than 64; not a tile's tail, though the shape has one.
    let lines: Vec<&str> = text.lines().collect();
    let at = lines
        .iter()
        .position(|l| l.starts_with("  conv 1x1x4x7x7x7 ") && l.contains("__constant__ Mc"))
        .unwrap_or_else(|| panic!("{text}"));
    assert!(!lines[at + 1].contains("multiple of"), "{text}");
    assert!(
        text.contains("__constant__ Mc holds 256 bytes, and the plan copies 784 into it (196 elements of 'filter')"),
        "{text}"
    );
    // 17 x 64 x 5 x 5 floats: 108800 bytes.
    assert!(
        text.contains("constant=Mc:filter: filter is 108800 bytes here, more than the 64 KiB"),
        "{text}"
    );
    let refusal = |option: &str| {
        UserKernelSpec::parse(&format!(
            "{}/{},workload=conv",
            root().display(),
            CONV_CONSTANT_EXAMPLE.replace("constant=Mc:filter", option)
        ))
        .map_err(|e| e.to_string())
        .and_then(|s| {
            UserKernel::load(&s, None, 1, SIM_SMS)
                .map(|_| ())
                .map_err(|e| e.to_string())
        })
        .unwrap_err()
    };
    let e = refusal("constant=Mc:mask");
    assert!(
        e.contains("constant=Mc:mask: mask is not a buffer of the conv signature (x, filter, y)"),
        "{e}"
    );
    // A misspelt array is refused when the kernel is loaded, not row by row at run time.
    let e = refusal("constant=Mk:filter");
    assert!(
        e.contains("constant=Mk:filter: ")
            && e.contains(
                "conv_constant_mask.cu declares no __constant__ variable Mk; it declares: Mc"
            ),
        "{e}"
    );
}

/// `examples/sgemm_splitk_serial.cu` with its semaphore read relaxed instead of acquired:
/// the slices still take their turns, but nothing orders one slice's stores to C before the
/// next slice's reads, and the row fails naming both blocks.
#[test]
fn a_semaphore_read_without_acquire_is_a_race_between_the_blocks_it_orders() {
    let dir = scratch_dir("relaxed");
    let spec = example_variant(
        &dir,
        &SPLITK_SERIAL_EXAMPLE,
        "ld.global.acquire.gpu.b32",
        "ld.global.relaxed.gpu.b32",
    );
    let (ok, text) = sim_run("gemm", "64x64x64", &spec, &dir.join("run"));
    assert!(!ok, "{text}");
    let why = text
        .lines()
        .find(|l| l.starts_with("  gemm 64x64x64 sgemm_splitk_serial.cu:sgemm_splitk_serial: "))
        .unwrap_or_else(|| panic!("{text}"));
    the_guide_quotes_in_words(&why.replace(&format!("{}/", dir.display()), "examples/"));
    assert!(
        why.contains("race on global memory: this thread reads")
            && why.contains("of buffer 'C', which thread (")
            && why.contains("nothing orders the two blocks")
            && why.contains("ld.acquire carry their fences"),
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
    // Launched as the guide launches it, its grid's expressions name the dimensions.
    let spec = format!(
        "{}/tiled.cu:tiled,block=16x16,grid=(cdiv(N,16),cdiv(M,16))",
        dir.display()
    );
    let (ok, text) = sim_run("gemm", "64x32x48,100x37x129", &spec, &dir.join("run"));
    assert!(!ok, "{text}");
    // The guide launches the file from its folder.
    the_guide_quotes_in_words(
        &lines_from(&text, "  gemm 100x37x129 tiled.cu:tiled: ", 1)
            .replace(&format!("{}/", dir.display()), ""),
    );
}

/// A kernel wrong on every shape (B read as if column-major) is not blamed on the tails of an
/// awkward one: its failure there names the shape of whole tiles it fails on too, and both
/// suggest the operands' layouts and types.
#[test]
fn a_kernel_wrong_on_whole_tiles_too_is_not_blamed_on_its_tails() {
    let dir = scratch_dir("wrong-everywhere");
    let code = "__global__ void nt(const float *A, const float *B, float *C, int M, int N, int K) {\n\
        \x20 int r = blockIdx.y * 16 + threadIdx.y, c = blockIdx.x * 16 + threadIdx.x;\n\
        \x20 if (r >= M || c >= N) return;\n\
        \x20 float acc = 0;\n\
        \x20 for (int k = 0; k < K; ++k) acc += A[r * K + k] * B[c * K + k];\n\
        \x20 C[r * N + c] = acc;\n\
        }\n";
    let users = [user_file(
        &dir,
        "nt.cu",
        code,
        "nt,block=16x16,grid=tile:16x16",
    )];
    let results = sim_rows(
        &users,
        &[Shape::gemm(100, 37, 129), Shape::gemm(64, 64, 64)],
    );
    let shapes = &results.workloads[0].shapes;
    let why = |i: usize| {
        let row = &shapes[i].rows[0];
        assert_eq!(row.status, Status::Failed, "{row:?}");
        row.reason.clone().unwrap()
    };
    let awkward = why(0);
    let layouts = "is no rounding: check that the kernel reads A and B and writes C in the \
                   layouts it is given (row-major by default; a=col, b=col and c=col give \
                   column-major A, B and C) and types (dtype=)";
    assert!(
        awkward.contains("\n  it fails on 64x64x64 too, where the lab finds no partial tile")
            && awkward.contains(layouts)
            && !awkward.contains("partial tiles"),
        "{awkward}"
    );
    let whole = why(1);
    assert!(
        whole.contains("\n  a relative error of ") && whole.contains(layouts),
        "{whole}"
    );
    // On the awkward shape alone, nothing says it fails on whole tiles: the layouts come
    // first, then the tails.
    let results = sim_rows(&users, &[Shape::gemm(100, 37, 129)]);
    let alone = results.workloads[0].shapes[0].rows[0]
        .reason
        .clone()
        .unwrap();
    let (l, t) = (alone.find(layouts), alone.find("partial tiles"));
    assert!(l.is_some() && t.is_some() && l < t, "{alone}");
    // Given its B as it reads it, it passes.
    let users = [user_file(
        &dir,
        "nt.cu",
        code,
        "nt,block=16x16,grid=tile:16x16,b=col",
    )];
    let results = sim_rows(&users, &[Shape::gemm(64, 64, 64)]);
    let row = &results.workloads[0].shapes[0].rows[0];
    assert_eq!(row.status, Status::Passed, "{row:?}");
}

/// Split-K by `atomicAdd` into C, whose host code clears C first: without `output=zero` C
/// starts poisoned and the row fails, saying to give it; with it the row passes.
#[test]
fn a_kernel_adding_into_its_output_asks_for_output_zero() {
    let dir = scratch_dir("output-zero");
    let code = "__global__ void splitk(const float *A, const float *B, float *C, int M, int N, int K) {\n\
        \x20 int r = blockIdx.y * 16 + threadIdx.y, c = blockIdx.x * 16 + threadIdx.x;\n\
        \x20 if (r >= M || c >= N) return;\n\
        \x20 int k0 = blockIdx.z * K / gridDim.z, k1 = (blockIdx.z + 1) * K / gridDim.z;\n\
        \x20 float acc = 0;\n\
        \x20 for (int k = k0; k < k1; ++k) acc += A[r * K + k] * B[k * N + c];\n\
        \x20 atomicAdd(&C[r * N + c], acc);\n\
        }\n";
    std::fs::write(dir.join("splitk.cu"), code).unwrap();
    let spec = |extra: &str| {
        format!(
            "{}:splitk,block=16x16,grid=(cdiv(N,16),cdiv(M,16),3){extra}",
            dir.join("splitk.cu").display()
        )
    };
    let (ok, text) = sim_run("gemm", "100x37x129", &spec(""), &dir.join("poisoned"));
    assert!(!ok, "{text}");
    assert!(
        text.contains("this kernel adds into it with atomicAdd: give output=zero")
            && !text.contains("partial tiles"),
        "{text}"
    );
    let (ok, text) = sim_run(
        "gemm",
        "100x37x129",
        &spec(",output=zero"),
        &dir.join("zeroed"),
    );
    assert!(ok, "{text}");
    assert_eq!(passing_user_rows(&text), 1, "{text}");
    // A file that names atomicAdd only in a comment adds nothing: its unwritten elements are
    // not blamed on a poisoned start.
    let commented = code
        .replace(
            "  atomicAdd(&C[r * N + c], acc);",
            "  C[r * N + c] = acc;  // not atomicAdd",
        )
        .replace("blockIdx.z * K / gridDim.z", "0")
        .replace("(blockIdx.z + 1) * K / gridDim.z", "K")
        .replace("if (r >= M || c >= N)", "if (r >= M / 2 || c >= N)");
    std::fs::write(dir.join("half.cu"), commented).unwrap();
    let half = format!(
        "{}:splitk,block=16x16,grid=(cdiv(N,16),cdiv(M,16))",
        dir.join("half.cu").display()
    );
    let (ok, text) = sim_run("gemm", "100x37x129", &half, &dir.join("half"));
    assert!(!ok && text.contains("are NaN"), "{text}");
    assert!(!text.contains("adds into it with atomicAdd"), "{text}");
}

/// A softmax that works in place, as host code calls it on a copy of its input: given no
/// output, it is refused, saying what to give; with `output=X` and Y in X's place it passes.
/// A kernel that writes its softmax into X rather than Y is told it wrote into its input. A
/// copy of an input of another length is declined, and a name that is no input refused.
#[test]
fn a_kernel_working_in_place_is_given_a_copy_of_its_input() {
    let dir = scratch_dir("in-place");
    let code = r#"__device__ void softmax_row(float *x, int N) {
  float m = -INFINITY, s = 0.f;
  for (int i = 0; i < N; ++i) m = fmaxf(m, x[i]);
  for (int i = 0; i < N; ++i) { x[i] = expf(x[i] - m); s += x[i]; }
  for (int i = 0; i < N; ++i) x[i] /= s;
}

__global__ void softmax_inplace(float *data, int M, int N) {
  int r = blockIdx.x * blockDim.x + threadIdx.x;
  if (r < M) softmax_row(data + (size_t)r * N, N);
}

// Y is never written: the softmax goes into X.
__global__ void softmax_wrong_pointer(float *X, float *Y, int M, int N) {
  int r = blockIdx.x * blockDim.x + threadIdx.x;
  if (r < M) softmax_row(X + (size_t)r * N, N);
}
"#;
    let file = dir.join("inplace.cu");
    std::fs::write(&file, code).unwrap();
    let spec = |entry: &str, extra: &str| {
        format!(
            "{}:{entry},block=32,grid=(cdiv(M,32)),{extra}",
            file.display()
        )
    };
    let (ok, text) = sim_check(
        "softmax",
        "37x130",
        &spec("softmax_inplace", "args=(X,M,N)"),
    );
    assert!(!ok, "{text}");
    assert!(
        text.contains(
            "args: no launch is given Y, the output, so none can write it: pass Y where the \
             kernel takes its output; a kernel that works in place on an input takes Y in that \
             input's place, with output=NAME for the input, which starts Y as a copy of it"
        ),
        "{text}"
    );
    let (ok, text) = sim_check(
        "softmax",
        "37x130,3x5",
        &spec("softmax_inplace", "args=(Y,M,N),output=X"),
    );
    assert!(ok, "{text}");
    assert!(!text.contains("wrote into its input"), "{text}");
    // In a run too, whose summary names no input left unread.
    let (ok, text) = sim_run(
        "softmax",
        "37x130",
        &spec("softmax_inplace", "args=(Y,M,N),output=X"),
        &dir.join("run"),
    );
    assert!(ok, "{text}");
    assert_eq!(passing_user_rows(&text), 1, "{text}");
    assert!(!text.contains("is given no X"), "{text}");
    let (ok, text) = sim_check(
        "softmax",
        "37x130",
        &spec("softmax_wrong_pointer", "args=(X,Y,M,N)"),
    );
    assert!(!ok, "{text}");
    assert!(
        text.contains(
            "the kernel wrote into its input X, which the reference is of: a kernel that works \
             in place takes output=X, Y starting each run as a copy of X, and Y in X's place \
             among its arguments"
        ),
        "{text}"
    );
    // gamma has a row's N elements, Y all M*N.
    let (_, text) = sim_check(
        "layernorm",
        "4x8",
        &format!(
            "{}:softmax_inplace,block=32,grid=(1),args=(Y,M,N),output=gamma",
            file.display()
        ),
    );
    assert!(
        text.contains(
            "output=gamma: gamma has 8 elements and Y has 32, so Y cannot start as a copy of gamma"
        ),
        "{text}"
    );
    let (ok, text) = sim_check(
        "softmax",
        "37x130",
        &spec("softmax_inplace", "args=(Y,M,N),output=Z"),
    );
    assert!(
        !ok && text.contains("output=Z: Z is not an input of softmax (X)"),
        "{text}"
    );
}

/// A kernel that traps on purpose where N is no multiple of 16 is not told about tails: the
/// trap is its own word on the shape.
#[test]
fn a_trap_is_not_blamed_on_the_tails() {
    let dir = scratch_dir("trap");
    let code = "__global__ void picky(const float *A, const float *B, float *C, int M, int N, int K) {\n\
        \x20 if (N % 16) __trap();\n\
        \x20 int r = blockIdx.y * 16 + threadIdx.y, c = blockIdx.x * 16 + threadIdx.x;\n\
        \x20 if (r >= M || c >= N) return;\n\
        \x20 float acc = 0;\n\
        \x20 for (int k = 0; k < K; ++k) acc += A[r * K + k] * B[k * N + c];\n\
        \x20 C[r * N + c] = acc;\n\
        }\n";
    let users = [user_file(
        &dir,
        "picky.cu",
        code,
        "picky,block=16x16,grid=tile:16x16",
    )];
    let results = sim_rows(&users, &[Shape::gemm(100, 37, 129)]);
    let row = &results.workloads[0].shapes[0].rows[0];
    let why = row.reason.as_deref().unwrap();
    assert!(why.contains("__trap()") && !why.contains('\n'), "{why}");
}

/// The FP16 bound tells a GEMM that sums in half precision from one that sums in FP32, as the
/// tensor cores do: at K = 2048 the first is off by several times the bound, the second well
/// inside it.
#[test]
fn a_gemm_summing_in_half_precision_misses_the_fp16_bound() {
    let dir = scratch_dir("half-sums");
    let file = dir.join("hgemm.cu");
    std::fs::write(
        &file,
        "#include <cuda_fp16.h>\n\
         template <bool HALF_SUM>\n\
         __global__ void hgemm(const half *A, const half *B, half *C, int M, int N, int K) {\n\
         \x20 int n = blockIdx.x * blockDim.x + threadIdx.x, m = blockIdx.y * blockDim.y + threadIdx.y;\n\
         \x20 if (m >= M || n >= N) return;\n\
         \x20 half h = __float2half(0.f);\n\
         \x20 float f = 0.f;\n\
         \x20 for (int k = 0; k < K; ++k) {\n\
         \x20   if (HALF_SUM) h = __hfma(A[m * K + k], B[k * N + n], h);\n\
         \x20   else f += __half2float(A[m * K + k]) * __half2float(B[k * N + n]);\n\
         \x20 }\n\
         \x20 C[m * N + n] = HALF_SUM ? h : __float2half(f);\n\
         }\n",
    )
    .unwrap();
    let spec = |sum: &str| {
        format!(
            "{}:hgemm<{sum}>,dtype=f16,block=16x16,grid=tile:16x16",
            file.display()
        )
    };
    let (ok, text) = sim_check("gemm", "32x32x2048", &spec("true"));
    assert!(!ok && text.contains("above the fp16 bound"), "{text}");
    let (ok, text) = sim_check("gemm", "32x32x2048", &spec("false"));
    assert!(ok, "{text}");
}

/// The simulator's shapes of a workload include one without tails: a kernel that fails there
/// too (here a block sum whose tree starts at a quarter of the block, leaving half its
/// elements out) is told to look for another cause than the tails, at every shape, rather than
/// to mind its partial tiles.
#[test]
fn a_kernel_failing_without_tails_too_is_not_sent_to_its_tails() {
    let dir = scratch_dir("whole-shape");
    let file = dir.join("sum.cu");
    std::fs::write(
        &file,
        "template <int BS>\n\
         __global__ void block_sum(const float *x, float *y, int n) {\n\
         \x20 __shared__ float s[BS];\n\
         \x20 int i = blockIdx.x * BS + threadIdx.x;\n\
         \x20 s[threadIdx.x] = i < n ? x[i] : 0.f;\n\
         \x20 __syncthreads();\n\
         \x20 for (int h = BS / 4; h > 0; h >>= 1) {  // BS / 2: half the block is left out\n\
         \x20   if (threadIdx.x < h) s[threadIdx.x] += s[threadIdx.x + h];\n\
         \x20   __syncthreads();\n\
         \x20 }\n\
         \x20 if (threadIdx.x == 0) atomicAdd(y, s[0]);\n\
         }\n",
    )
    .unwrap();
    let spec = format!(
        "{}:block_sum<256>,block=256,grid=(cdiv(N,256)),args=(x,y,N),output=zero",
        file.display()
    );
    let (ok, text) = harness(&[
        "check",
        "--device",
        "sim",
        "--workload",
        "reduce",
        "--kernel",
        &spec,
    ]);
    assert!(!ok, "{text}");
    assert!(
        text.contains("it fails on 65536 too, where the lab finds no partial tile"),
        "{text}"
    );
    assert!(!text.contains("fails in the last, partial tiles"), "{text}");
}

/// A GEMM that takes blockIdx.x across C's rows, as many public naive GEMMs do, launched with
/// `grid=tile:32x32` (x across the columns): the simulator tries the grid with x and y swapped,
/// which passes, and says so in place of the tails' hints. A kernel whose failure the swap
/// does not cure (a tail without its bound check) keeps the tails' hint.
#[test]
fn a_grid_whose_axes_the_kernel_takes_the_other_way_round_is_named() {
    let dir = scratch_dir("swapped-grid");
    // `x` indexes C's rows and `y` its columns, each from the grid axis given.
    let body = |row: char, col: char, guard: &str| {
        format!(
            "__global__ void sgemm_naive(int M, int N, int K, float alpha, const float *A,\n\
             \x20   const float *B, float beta, float *C) {{\n\
             \x20 const unsigned x = blockIdx.{row} * blockDim.{row} + threadIdx.{row};\n\
             \x20 const unsigned y = blockIdx.{col} * blockDim.{col} + threadIdx.{col};\n\
             \x20 if ({guard}) {{\n\
             \x20   float t = 0.f;\n\
             \x20   for (int i = 0; i < K; ++i) t += A[x * K + i] * B[i * N + y];\n\
             \x20   C[x * N + y] = alpha * t + beta * C[x * N + y];\n\
             \x20 }}\n\
             }}\n"
        )
    };
    let rows_first = dir.join("rows_first.cu");
    std::fs::write(&rows_first, body('x', 'y', "x < M && y < N")).unwrap();
    let check = |file: &std::path::Path, grid: &str| {
        harness(&[
            "check",
            "--device",
            "sim",
            "--kernel",
            &format!(
                "{}:sgemm_naive,signature=gemm-blas,block=32x32,grid={grid}",
                file.display()
            ),
        ])
    };
    let (ok, text) = check(&rows_first, "tile:32x32");
    assert!(!ok, "{text}");
    assert!(
        text.contains(
            "with its grid's x and y swapped, grid=(cdiv(M,32),cdiv(N,32)), it passes at every \
             shape here: the kernel takes blockIdx.x across C's rows (M), where \
             grid=tile:32x32 sends x across its columns (N)"
        ) && !text.contains("partial tiles"),
        "{text}"
    );
    assert!(
        text.contains("trying rows_first.cu:sgemm_naive with its grid's x and y swapped")
            && text.contains("\n  it passes that way (see its failures below)"),
        "{text}"
    );
    let hint = text
        .lines()
        .find(|l| l.starts_with("  with its grid's x and y swapped"))
        .unwrap();
    the_guide_quotes(hint);
    // The grid it names passes.
    let (ok, text) = check(&rows_first, "(cdiv(M,32),cdiv(N,32))");
    assert!(ok, "{text}");
    // Columns first, as the lab's tile grid launches it, without the bound check on the rows:
    // no swap cures it, and the tails are named.
    let cols_first = dir.join("cols_first.cu");
    std::fs::write(&cols_first, body('y', 'x', "y < N")).unwrap();
    let (ok, text) = check(&cols_first, "tile:32x32");
    assert!(!ok, "{text}");
    assert!(
        !text.contains("it passes at every shape here") && text.contains("partial tiles"),
        "{text}"
    );
    assert!(
        text.contains(
            "with its grid's x and y swapped (grid=(cdiv(M,32),cdiv(N,32)))\n  it fails that \
             way too: the grid's axes are not what fails it"
        ),
        "{text}"
    );
    // A kernel that never ends is not tried again: no grid explains a hang, and the try
    // would wait as long again.
    let spins = dir.join("spins.cu");
    std::fs::write(
        &spins,
        "__global__ void sgemm_naive(int M, int N, int K, float alpha, const float *A,\n\
         \x20   const float *B, float beta, float *C) {\n\
         \x20 volatile int x = 0;\n\
         \x20 while (x == 0) {}\n\
         }\n",
    )
    .unwrap();
    let spec = format!(
        "{}:sgemm_naive,signature=gemm-blas,block=16x16,grid=tile:16x16",
        spins.display()
    );
    let (ok, text) = sim("check", "gemm", "64x32x16", &spec, &["--row-timeout", "3"]);
    assert!(!ok && text.contains("kernel did not finish"), "{text}");
    assert!(!text.contains("trying"), "{text}");
}

/// A user's kernel with static mbarriers finds its dynamic buffer where a GPU puts it: 32
/// bytes past a 1024-byte boundary after three of them (ptxas's count of its static bytes),
/// not on the boundary, so a TMA destination or swizzled tile put there unaligned fails in the
/// simulator as on a GPU. The example traps anywhere else; `tools/gpu-check.sh` runs the same
/// row on a GPU.
#[test]
fn a_users_dynamic_buffer_starts_after_its_static_variables_as_on_a_gpu() {
    if let Err(e) = kernel::cuda::nvrtc::version() {
        panic!("{e}\nThis test needs NVRTC: run tools/install-cuda-tools.sh first.");
    }
    let (ok, text) = sim_check("gemm", "5x7x3", &example("dynamic_after_static.cu"));
    assert!(ok, "{text}");
}

/// `check --config` with a `[[kernel]]` section and no GPU checks that kernel in the
/// simulator, as `check --kernel` and `run --config` do: it was once left out on the CPU, and
/// the check passed.
#[test]
fn check_takes_the_configs_kernels_to_the_simulator_without_a_gpu() {
    if kernel::cuda::CudaDevice::open().is_ok() {
        return; // with a GPU, the kernel runs there, where no race checker looks
    }
    let dir = scratch_dir("check-config");
    let file = root().join("examples/gemm_halves_race.cu");
    let cfg = dir.join("mine.toml");
    std::fs::write(
        &cfg,
        format!(
            "[[kernel]]\nfile = {:?}\nentry = \"halves\"\nworkload = \"gemm\"\n\
             block = \"16x16x2\"\ngrid = \"tile:16x16\"\n",
            file.display().to_string()
        ),
    )
    .unwrap();
    let (code, text) = harness_code(
        &[
            "check",
            "--config",
            cfg.to_str().unwrap(),
            "--workload",
            "gemm",
            "--sizes",
            "100x37x129",
        ],
        &[],
    );
    assert_eq!(code, Some(1), "{text}");
    assert!(text.contains("race on global memory"), "{text}");
    assert!(!text.contains("not checked"), "{text}");
}

#[test]
fn kernel_sections_of_the_config_are_read_and_bad_keys_point_at_their_line() {
    let good = "seed = 3\n\n[[kernel]]\nfile = \"k.cu\"\nentry = \"sgemm<64,64,8>\"\n\
        workload = \"gemm\"\nblock = 256\ngrid = [\"cdiv(N,64)\", \"cdiv(M,64)\"]\nsmem = 4096\n";
    let c = Config::from_sources(Some(("cfg/mine.toml", good))).unwrap();
    assert_eq!(c.kernels.len(), 1);
    assert_eq!(c.kernels[0].file, PathBuf::from("cfg/k.cu"));
    assert_eq!(c.kernels[0].block, Some(Block::Fixed([256, 1, 1])));
    assert!(!c.kernels[0].cooperative);
    let coop = format!("{good}launch = \"cooperative\"\n");
    let c = Config::from_sources(Some(("cfg/mine.toml", &coop))).unwrap();
    assert!(c.kernels[0].cooperative);
    let e = Config::from_sources(Some((
        "mine.toml",
        &coop.replace("\"cooperative", "\"coop"),
    )))
    .unwrap_err()
    .to_string();
    assert!(
        e.starts_with("mine.toml:10: [[kernel]] k.cu, key `launch`: launch \"coop\""),
        "{e}"
    );
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

/// Attention kernels written for other layouts than the workload's `[B][H][S][D]`: FlashAttention's
/// `[B][S][H][D]` (`layout=bshd`) and a head's V transposed, `[D][S]` (`v=col`), as kernels that
/// read V with the same ldmatrix as K take it. Each passes with its option and fails without,
/// told which options exist.
#[test]
fn attention_kernels_read_and_write_the_layouts_they_are_given() {
    let dir = scratch_dir("attention-layouts");
    let code = "template <bool BSHD, bool VT>\n\
        __global__ void rows(const float *Q, const float *K, const float *V, float *O, int H,\n\
        \x20 int S, int D, float scale) {\n\
        \x20 int bh = blockIdx.y, b = bh / H, h = bh % H, i = blockIdx.x * blockDim.x + threadIdx.x;\n\
        \x20 if (i >= S) return;\n\
        \x20 auto at = [&](int s, int d) -> size_t {\n\
        \x20   return BSHD ? (((size_t)b * S + s) * H + h) * D + d : ((size_t)bh * S + s) * D + d;\n\
        \x20 };\n\
        \x20 auto v_at = [&](int s, int d) { return VT ? ((size_t)bh * D + d) * S + s : at(s, d); };\n\
        \x20 float o[64] = {}, m = -INFINITY, l = 0;\n\
        \x20 for (int j = 0; j < S; ++j) {\n\
        \x20   float x = 0;\n\
        \x20   for (int d = 0; d < D; ++d) x += Q[at(i, d)] * K[at(j, d)];\n\
        \x20   x *= scale;\n\
        \x20   float mn = fmaxf(m, x), c = expf(m - mn), p = expf(x - mn);\n\
        \x20   for (int d = 0; d < D; ++d) o[d] = o[d] * c + p * V[v_at(j, d)];\n\
        \x20   l = l * c + p;\n\
        \x20   m = mn;\n\
        \x20 }\n\
        \x20 for (int d = 0; d < D; ++d) O[at(i, d)] = o[d] / l;\n\
        }\n";
    std::fs::write(dir.join("rows.cu"), code).unwrap();
    let spec = |entry: &str, options: &str| {
        load(
            &format!(
                "{}/rows.cu:{entry},args=(Q,K,V,O,H,S,D,scale),block=32,grid=(cdiv(S,32),B*H){options}",
                dir.display()
            ),
            Workload::Attention,
        )
    };
    let shapes = [
        Shape::parse(Workload::Attention, "1x2x37x16").unwrap(),
        Shape::parse(Workload::Attention, "2x3x64x8").unwrap(),
    ];
    let users = [
        spec("rows<true,false>", ",layout=bshd"),
        spec("rows<false,true>", ",v=col"),
        spec("rows<true,false>", ""),
        spec("rows<false,true>", ",k=col"),
    ];
    assert_eq!(
        users[0].buffers.describe(Workload::Attention),
        "Q:f32 [B][S][H][D], K:f32 [B][S][H][D], V:f32 [B][S][H][D], O:f32 [B][S][H][D]"
    );
    assert_eq!(
        users[1].buffers.describe(Workload::Attention),
        "Q:f32, K:f32, V:f32 [B][H][D][S], O:f32"
    );
    let results = sim_rows(&users, &shapes);
    for s in &results.workloads[0].shapes {
        for row in &s.rows[..2] {
            assert_eq!(row.status, Status::Passed, "{row:?}");
        }
        for row in &s.rows[2..] {
            assert_eq!(row.status, Status::Failed, "{row:?}");
            let why = row.reason.as_deref().unwrap();
            assert!(
                why.contains("layout=bshd gives [B][S][H][D], k=col and v=col a head's K or V"),
                "{why}"
            );
        }
    }
    // The options belong to attention, and a transposed head lies whole only in [B][H][S][D].
    let refused = |workload: &str, options: &str| {
        let text = format!(
            "{}/rows.cu:rows<true,false>,block=32,grid=(1){options}",
            dir.display()
        );
        let spec = UserKernelSpec::parse(&text).unwrap();
        let workload = Workload::parse(workload).unwrap();
        UserKernel::load(&spec, Some(workload), 1, SIM_SMS)
            .err()
            .unwrap_or_else(|| panic!("{options} was taken"))
            .to_string()
    };
    let e = refused("gemm", ",signature=gemm,layout=bshd");
    assert!(
        e.contains("layout= is for attention's Q, K, V and O"),
        "{e}"
    );
    let e = refused("attention", ",args=(Q,K,V,O,H,S,D,scale),layout=bshd,v=col");
    assert!(
        e.contains("which lies contiguous only in the default layout=bhsd"),
        "{e}"
    );
    let e = UserKernelSpec::parse("k.cu:k,layout=sbhd")
        .unwrap_err()
        .to_string();
    assert!(e.contains("expected bhsd"), "{e}");
}

/// A GEMM in BLAS's column-major convention, A, B and C each stored by columns: it passes with
/// `a=col,b=col,c=col` and fails without `c=col`, its first wrong element named as it indexes C.
#[test]
fn a_column_major_gemm_writes_c_by_columns() {
    let dir = scratch_dir("column-major-c");
    let code = "__global__ void sgemm_cm(int M, int N, int K, const float *A, const float *B,\n\
        \x20 float *C) {\n\
        \x20 int m = blockIdx.x * blockDim.x + threadIdx.x, n = blockIdx.y;\n\
        \x20 if (m >= M) return;\n\
        \x20 float s = 0;\n\
        \x20 for (int k = 0; k < K; ++k) s += A[(size_t)k * M + m] * B[(size_t)n * K + k];\n\
        \x20 C[(size_t)n * M + m] = s;\n\
        }\n";
    std::fs::write(dir.join("cm.cu"), code).unwrap();
    let spec = |options: &str| {
        load(
            &format!(
                "{}/cm.cu:sgemm_cm,args=(M,N,K,A,B,C),a=col,b=col{options},block=64,grid=(cdiv(M,64),N)",
                dir.display()
            ),
            Workload::Gemm,
        )
    };
    let users = [spec(",c=col"), spec("")];
    assert_eq!(
        users[0].buffers.describe(Workload::Gemm),
        "A:f32 column-major, B:f32 column-major, C:f32 column-major"
    );
    let results = sim_rows(&users, &[Shape::gemm(70, 33, 20), Shape::gemm(64, 64, 64)]);
    for s in &results.workloads[0].shapes {
        assert_eq!(s.rows[0].status, Status::Passed, "{:?}", s.rows[0]);
        let why = s.rows[1].reason.as_deref().unwrap();
        assert!(why.contains("c=col give column-major A, B and C"), "{why}");
    }
    let e = UserKernelSpec::parse(&format!(
        "{}/cm.cu:sgemm_cm,c=col,block=1,grid=1",
        dir.display()
    ))
    .map(|s| {
        UserKernel::load(&s, Some(Workload::Softmax), 1, SIM_SMS)
            .err()
            .unwrap()
            .to_string()
    })
    .unwrap();
    assert!(e.contains("c=col is for GEMM's C"), "{e}");
}

/// A `zeros()` workspace larger than the machine's memory declines the shape with its size,
/// where allocating it aborted the process.
#[test]
fn a_workspace_larger_than_memory_is_declined() {
    if harness::footprint::available().is_none() {
        eprintln!("skipped: this machine does not say how much memory it has");
        return;
    }
    let spec = SPLITK_SERIAL_EXAMPLE.replace("zeros(", "zeros(M*100000000000+");
    let k = load(&spec, Workload::Gemm);
    let why = k
        .supports(&Shape::gemm(64, 64, 64))
        .unwrap_err()
        .to_string();
    assert!(
        why.contains("workspaces are 6400000000064 bytes here, more than the")
            && why.contains("bytes of memory this machine has available"),
        "{why}"
    );
    assert!(
        load(&SPLITK_SERIAL_EXAMPLE, Workload::Gemm)
            .supports(&Shape::gemm(64, 64, 64))
            .is_ok()
    );
}

#[test]
fn a_linear_kernel_gets_the_activation_code_the_guide_gives() {
    let dir = scratch_dir("linear-act");
    // Y = act(X W^T + b), `act` as docs/your-kernel.md gives it: 0 relu, 1 gelu (tanh), 2 none.
    let code = "__global__ void lin(const float *X, const float *W, const float *b, float *Y,\n\
        \x20 int M, int N, int K, int act) {\n\
        \x20 int n = blockIdx.x * blockDim.x + threadIdx.x, m = blockIdx.y * blockDim.y + threadIdx.y;\n\
        \x20 if (m >= M || n >= N) return;\n\
        \x20 float s = b[n];\n\
        \x20 for (int k = 0; k < K; ++k) s += X[(size_t)m * K + k] * W[(size_t)n * K + k];\n\
        \x20 if (act == 0) s = fmaxf(s, 0.0f);\n\
        \x20 else if (act == 1) s = 0.5f * s * (1.0f + tanhf(0.7978845608f * (s + 0.044715f * s * s * s)));\n\
        \x20 else if (act != 2) s = NAN;\n\
        \x20 Y[(size_t)m * N + n] = s;\n\
        }\n";
    std::fs::write(dir.join("lin.cu"), code).unwrap();
    let spec = format!(
        "{}/lin.cu:lin,block=16x16,grid=(cdiv(N,16),cdiv(M,16))",
        dir.display()
    );
    let users = [load(&spec, Workload::Linear)];
    let shapes = ["33x17x65-relu", "33x17x65-gelu", "33x17x65-none"]
        .map(|s| Shape::parse(Workload::Linear, s).unwrap());
    let results = sim_rows(&users, &shapes);
    for s in &results.workloads[0].shapes {
        assert_eq!(
            s.rows[0].status,
            Status::Passed,
            "{}: {:?}",
            s.shape,
            s.rows[0]
        );
    }
}

#[test]
fn inspect_compiles_an_unmodified_file_with_host_code() {
    if let Err(e) = nvrtc::version() {
        panic!("{e}\nThis test needs NVRTC: run tools/install-cuda-tools.sh first.");
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

/// A file whose kernel is overloaded (an FP32 and an FP16 `gemm`, declared before they are
/// defined): the buffers' types choose the overload that runs, a type neither takes is
/// refused naming both, and `inspect` compiles each, named by its line.
#[test]
fn an_overloaded_kernel_runs_the_overload_that_takes_the_buffers() {
    let dir = scratch_dir("overloaded");
    let body = |t: &str, load: &str| {
        format!(
            "__global__ void gemm(const {t} *A, const {t} *B, float *C, int M, int N, int K) {{\n\
             \x20 int r = blockIdx.y * 16 + threadIdx.y, c = blockIdx.x * 16 + threadIdx.x;\n\
             \x20 if (r >= M || c >= N) return;\n\
             \x20 float acc = 0;\n\
             \x20 for (int k = 0; k < K; ++k) acc += {load};\n\
             \x20 C[r * N + c] = acc;\n\
             }}\n"
        )
    };
    let code = format!(
        "#include <cuda_fp16.h>\n\
         __global__ void gemm(const float *, const float *, float *, int, int, int);\n{}{}",
        body("float", "A[r * K + k] * B[k * N + c]"),
        body(
            "__half",
            "__half2float(A[r * K + k]) * __half2float(B[k * N + c])"
        )
    );
    let file = dir.join("overloaded.cu");
    std::fs::write(&file, code).unwrap();
    let spec = |dtype: &str| format!("{}:gemm{dtype},block=16x16,grid=tile:16x16", file.display());
    for (i, dtype) in ["", ",dtype=f16,C:f32"].into_iter().enumerate() {
        let (ok, text) = sim_run("gemm", "100x37x129", &spec(dtype), &dir.join(i.to_string()));
        assert!(ok, "{text}");
        assert_eq!(passing_user_rows(&text), 1, "{text}");
    }
    let (ok, text) = sim_run(
        "gemm",
        "100x37x129",
        &spec(",dtype=bf16,C:f32"),
        &dir.join("bf16"),
    );
    assert!(!ok, "{text}");
    assert!(
        text.contains("`gemm` is overloaded, and none of its overloads takes the lab's arguments (__nv_bfloat16 *, __nv_bfloat16 *, float *, int, int, int): gemm(const float *A, ")
            && text.contains("(line 3); gemm(const __half *A, "),
        "{text}"
    );
    if nvrtc::version().is_ok() {
        let (ok, text) = harness(&["inspect", file.to_str().unwrap(), "--arch", "sm_80"]);
        assert!(ok, "{text}");
        assert!(
            text.contains("gemm (line 3)  sm_80") && text.contains("gemm (line 10) sm_80"),
            "{text}"
        );
    }
}

/// What public kernels include and write compiles in the simulator as with NVRTC: the
/// toolkit's `math_constants.h`, libcu++'s `cuda/std` headers, `cuda_pipeline.h` for its
/// primitives, and `__shared__ alignas(16)` (the attribute after `__shared__`).
#[test]
fn public_headers_and_spellings_compile_in_the_simulator() {
    let dir = scratch_dir("public-headers");
    let code = "#include <math_constants.h>\n#include <cuda/std/limits>\n\
        #include <cuda/std/cstdint>\n#include <cuda/std/type_traits>\n#include <cuda_pipeline.h>\n\
        __global__ void tiled(const float *A, const float *B, float *C, int M, int N, int K) {\n\
        \x20 __shared__ alignas(16) float As[16][16];\n\
        \x20 __shared__ alignas(16) float Bs[16][16];\n\
        \x20 static_assert(cuda::std::is_same<cuda::std::int32_t, int>::value, \"int32_t\");\n\
        \x20 const int r = blockIdx.y * 16 + threadIdx.y, c = blockIdx.x * 16 + threadIdx.x;\n\
        \x20 float acc = 0;\n\
        \x20 for (int k0 = 0; k0 < K; k0 += 16) {\n\
        \x20   const int ka = k0 + threadIdx.x, kb = k0 + threadIdx.y;\n\
        \x20   As[threadIdx.y][threadIdx.x] = r < M && ka < K ? A[r * K + ka] : 0.f;\n\
        \x20   Bs[threadIdx.y][threadIdx.x] = kb < K && c < N ? B[kb * N + c] : 0.f;\n\
        \x20   __syncthreads();\n\
        \x20   for (int k = 0; k < 16; ++k) acc += As[threadIdx.y][k] * Bs[k][threadIdx.x];\n\
        \x20   __syncthreads();\n\
        \x20 }\n\
        \x20 // Scaled by pi and back, and never above float's largest.\n\
        \x20 acc = fminf(acc * CUDART_PI_F / CUDART_PI_F, cuda::std::numeric_limits<float>::max());\n\
        \x20 if (r < M && c < N) C[r * N + c] = acc;\n\
        }\n";
    std::fs::write(dir.join("public.cu"), code).unwrap();
    let spec = format!(
        "{}:tiled,block=16x16,grid=tile:16x16",
        dir.join("public.cu").display()
    );
    let (ok, text) = sim_run("gemm", "100x37x129", &spec, &dir.join("run"));
    assert!(ok, "{text}");
    assert_eq!(passing_user_rows(&text), 1, "{text}");
    // cuda_pipeline.h's C++ class, which only NVRTC compiles: the simulator's log says why,
    // first, with no warning of the simulator's own headers before it.
    let classes = code.replace(
        "  float acc = 0;\n",
        "  float acc = 0;\n  nvcuda::experimental::pipeline pipe;\n",
    );
    std::fs::write(dir.join("classes.cu"), classes).unwrap();
    let spec = spec.replace("public.cu", "classes.cu");
    let (ok, text) = sim_run("gemm", "100x37x129", &spec, &dir.join("classes"));
    assert!(!ok, "{text}");
    let log = span(&text, "could not compile", "is not simulated");
    assert!(
        log.contains("cuda_pipeline.h's nvcuda::experimental::pipeline")
            && !log.contains("warning"),
        "{text}"
    );
}

/// A project laid out as public code lays it out, run unmodified: its headers in `include/`
/// (`include=`, nvcc's `-I`), one of them a class of host launchers; cuBLASLt's header and an
/// `extern` host variable, as llm.c's common header has them; a host member instantiated
/// through the header's macros, as caffe's layer files end; a BLAS kernel passing the
/// leading dimensions (`K` and `N` twice in `args=`); a 2-D dynamic shared array; cache-hint
/// loads and stores, `min` of an int and an unsigned, and `M_PI`.
#[test]
fn a_project_laid_out_as_public_code_runs_unmodified() {
    let dir = scratch_dir("project");
    std::fs::create_dir_all(dir.join("src")).unwrap();
    std::fs::create_dir_all(dir.join("include")).unwrap();
    std::fs::write(
        dir.join("include/launchers.h"),
        "#pragma once\n#include <cmath>\n#include <time.h>\n#include <unistd.h>\n\
         #include <type_traits>\n#include <sys/stat.h>\n#include <dirent.h>\n#include <arpa/inet.h>\n\
         #include <nvtx3/nvToolsExt.h>\n#include <cuda_profiler_api.h>\n\
         #include \"device_launch_parameters.h\"\n\
         constexpr std::bool_constant<true> Scaled;\n\
         __device__ inline float scaled(float a, float x) {\n\
         \x20 static_assert(std::is_same_v<decltype(a), float>);\n\
         \x20 return Scaled ? a * x * (float)(M_PI / M_PI) : 0.f;\n}\n\
         class GemmInterface {\n public:\n  GemmInterface() : ready(false) { init(); }\n\
         \x20 void init();\n\
         \x20 void launch(const float *A, const float *B, float *C, int M, int N, int K) const;\n\
         private:\n  bool ready;\n};\n\
         #define INSTANTIATE_LAYER(cls) \\\n  template void cls<float>::forward(const float *x); \\\n\
         \x20 template void cls<double>::forward(const double *x)\n\
         #define INSTANTIATE_ALL(cls) INSTANTIATE_LAYER(cls)\n\
         template <typename T> class Layer {\n public:\n  void forward(const T *x);\n};\n",
    )
    .unwrap();
    std::fs::write(
        dir.join("src/gemm.cu"),
        "#include <cublasLt.h>\n#include \"launchers.h\"\n\
         extern cudaDeviceProp deviceProp;\n#define TILE 16\n\
         __global__ void sgemm_lda(int M, int N, int K, float alpha, const float *A, int lda,\n\
         \x20                         const float *B, int ldb, float beta, float *C, int ldc) {\n\
         \x20 extern __shared__ float tiles[][TILE];  // A's tile, then B's\n\
         \x20 const int r = blockIdx.y * TILE + threadIdx.y, c = blockIdx.x * TILE + threadIdx.x;\n\
         \x20 float acc = 0.f;\n\
         \x20 for (int k0 = 0; k0 < K; k0 += TILE) {\n\
         \x20   const int ka = k0 + threadIdx.x, kb = k0 + threadIdx.y;\n\
         \x20   tiles[threadIdx.y][threadIdx.x] = r < M && ka < K ? __ldcs(&A[r * lda + ka]) : 0.f;\n\
         \x20   tiles[TILE + threadIdx.y][threadIdx.x] = kb < K && c < N ? B[kb * ldb + c] : 0.f;\n\
         \x20   __syncthreads();\n\
         \x20   for (int k = 0; k < TILE; ++k) acc += tiles[threadIdx.y][k] * tiles[TILE + k][threadIdx.x];\n\
         \x20   __syncthreads();\n\
         \x20 }\n\
         \x20 const unsigned last = N - 1;\n\
         \x20 if (r < M && c < N)\n\
         \x20   __stcs(&C[r * ldc + min(c, last)], scaled(alpha, acc) + beta * C[r * ldc + c]);\n\
         }\n\
         template <typename T> void Layer<T>::forward(const T *x) {}\n\
         INSTANTIATE_ALL(Layer);\n",
    )
    .unwrap();
    let file = dir.join("src/gemm.cu");
    let include = dir.join("include");
    let spec = format!(
        "{}:sgemm_lda,args=(M,N,K,alpha,A,K,B,N,beta,C,N),alpha=1.5,beta=-0.5,block=16x16,\
         grid=tile:16x16,smem=2048,include={}",
        file.display(),
        include.display()
    );
    let (ok, text) = sim_run("gemm", "100x37x129,64x64x64", &spec, &dir.join("run"));
    assert!(ok, "{text}");
    assert_eq!(passing_user_rows(&text), 2, "{text}");
    // Without its include folder, the header is not found, and the message says what to give.
    let alone = spec.split(",include=").next().unwrap();
    let (ok, text) = sim_run("gemm", "64x64x64", alone, &dir.join("alone"));
    assert!(
        !ok && text.contains("name that folder with include=DIR"),
        "{text}"
    );
    let (ok, text) = harness(&[
        "inspect",
        file.to_str().unwrap(),
        "--include",
        include.to_str().unwrap(),
    ]);
    assert!(ok && text.contains("sgemm_lda"), "{text}");
}

/// Stand-ins that add to the header they stand in for, each through `#include_next`, in two
/// `include=` folders: the first reaches the second's, the second the lab's (or, in the
/// simulator, the system's), and neither its own original again.
#[test]
fn a_stand_in_reaches_the_next_header_with_include_next() {
    let dir = scratch_dir("include-next");
    for (folder, name, value) in [("first", "from_first", 1), ("second", "from_second", 2)] {
        std::fs::create_dir_all(dir.join(folder)).unwrap();
        std::fs::write(
            dir.join(folder).join("vector"),
            format!(
                "#pragma once\n#include_next <vector>\n\
                 namespace extra {{ constexpr int {name} = {value}; }}\n"
            ),
        )
        .unwrap();
    }
    std::fs::write(
        dir.join("copy.cu"),
        "#include <vector>\n\
         struct Host { std::vector<float> staging; };\n\
         __global__ void copy(const float *X, float *Y, int M, int N) {\n\
         \x20 const int i = blockIdx.x * blockDim.x + threadIdx.x;\n\
         \x20 if (i < M * N) Y[(i % N) * M + i / N] = X[i] * (extra::from_second - extra::from_first);\n\
         }\n",
    )
    .unwrap();
    let spec = format!(
        "{}:copy,block=256,grid=(cdiv(M*N,256)),include={},include={}",
        dir.join("copy.cu").display(),
        dir.join("first").display(),
        dir.join("second").display()
    );
    let (ok, text) = sim_check("transpose", "33x65", &spec);
    assert!(ok && text.contains("1 passed"), "{text}");
    let (ok, text) = harness(&["inspect", "--kernel", &format!("{spec},workload=transpose")]);
    assert!(
        ok && text.contains("sm_80") && text.contains("sm_90"),
        "{text}"
    );
    // The file alone, with the folders as options, searches them the same way.
    let (ok, text) = harness(&[
        "inspect",
        dir.join("copy.cu").to_str().unwrap(),
        "--include",
        dir.join("first").to_str().unwrap(),
        "--include",
        dir.join("second").to_str().unwrap(),
    ]);
    assert!(
        ok && text.contains("copy ") && text.contains("sm_90"),
        "{text}"
    );
}

/// An attention kernel run without its causal flag (`args=` passes 0) on a causal shape: the
/// row says the kernel takes no causal flag, and a tail bug on another shape is not blamed on
/// something other than the tails because the causal row failed too.
#[test]
fn a_causal_shape_for_a_kernel_told_nothing_of_it_says_so() {
    let dir = scratch_dir("causal");
    let spec = example_variant(
        &dir,
        &ATTENTION_EXAMPLE,
        "for (int jj = 0; jj < BR && j0 + jj < S; ++jj) {",
        "for (int jj = 0; jj < BR; ++jj) {  // BUG: the last tile's keys past S",
    );
    let spec = format!("{spec},args=(Q,K,V,O,B,H,S,D,scale,0)");
    let (ok, text) = sim_run(
        "attention",
        "1x2x37x16,1x1x64x16-causal",
        &spec,
        &dir.join("run"),
    );
    assert!(!ok, "{text}");
    assert!(
        text.contains(
            "this shape is causal (each query attends to the keys up to its own \
                       position) and the kernel's parameters take no causal flag"
        ),
        "{text}"
    );
    assert!(
        !text.contains("it fails on 1x1x64x16-causal too") && text.contains("S = 37"),
        "{text}"
    );
}

/// Spellings of a public collection of learning kernels, each of which once stopped its file
/// from compiling or its row from running: device functions marked by macros of a header
/// (`#define HOST_DEVICE_INLINE __device__ __host__ inline`), `static __shared__` in a device
/// function, `cp.async` from the address of an element of a `__restrict__` operand in a
/// template kernel, `<cuda_fp8.h>`, glibc's `M_SQRT2` without `<math.h>`, inline PTX the
/// simulator does not run in a macro and a helper no kernel calls, and `stmatrix` behind an
/// architecture conditional in a template never instantiated (which leaves the file for every
/// GPU, sm_80 included). The header has Windows line ends, its macros continued across them.
#[test]
fn spellings_of_public_learning_kernels_compile_and_run() {
    let dir = scratch_dir("public-spellings");
    let utils = "#pragma once\n#include <cuda_fp8.h>\n\
         #define HOST_DEVICE_INLINE __device__ __host__ inline\n\
         #define DEVICE_INLINE __device__ inline\n\
         #define CP_ASYNC_WAIT_ALL() \\\n  asm volatile(\"cp.async.wait_all;\\n\" ::)\n\
         #define CP_ASYNC_BULK_WAIT_ALL() asm volatile(\"cp.async.bulk.wait_all;\\n\" ::)\n\
         HOST_DEVICE_INLINE\nint div_ceil(int a, int b) { return (a + b - 1) / b; }\n\
         DEVICE_INLINE unsigned active() { unsigned m; asm volatile(\"activemask.b32 %0;\" : \"=r\"(m)); return m; }\n\
         template <int R> DEVICE_INLINE float (*tile_a())[16] {\n\
         \x20 static __shared__ float t[R][16];\n  return t;\n}\n\
         template <int R> __device__ inline float (*tile_b())[16] {\n\
         \x20 __shared__ static float t[R][16];\n  return t;\n}\n\
         template <int N> __device__ void store_fragments(unsigned short *s) {\n\
         #if defined(__CUDA_ARCH__) && (__CUDA_ARCH__ >= 900)\n\
         \x20 unsigned a = (unsigned)__cvta_generic_to_shared(s);\n\
         \x20 asm volatile(\"stmatrix.sync.aligned.x1.m8n8.shared.b16 [%0], {%1};\\n\" :: \"r\"(a), \"r\"(0u));\n\
         #endif\n}\n";
    std::fs::write(dir.join("utils.h"), utils.replace('\n', "\r\n")).unwrap();
    std::fs::write(
        dir.join("gemm.cu"),
        "#include <cuda_runtime.h>\n#include \"utils.h\"\n\
         template <int BK>\n\
         __global__ void gemm(const float *__restrict__ A, const float *__restrict__ B,\n\
         \x20                    float *__restrict__ C, int M, int N, int K) {\n\
         \x20 static_assert(sizeof(__nv_fp8_e4m3) == 1, \"one byte\");\n\
         \x20 float (*As)[16] = tile_a<16>(), (*Bs)[16] = tile_b<BK>();\n\
         \x20 const int tx = threadIdx.x, ty = threadIdx.y;\n\
         \x20 const int r = blockIdx.y * 16 + ty, c = blockIdx.x * 16 + tx;\n\
         \x20 float acc = 0.f;\n\
         \x20 for (int t = 0; t < div_ceil(K, BK); ++t) {\n\
         \x20   const int ka = t * BK + tx, kb = t * BK + ty;\n\
         \x20   const unsigned sa = (unsigned)__cvta_generic_to_shared(&As[ty][tx]);\n\
         \x20   if (r < M && ka < K)\n\
         \x20     asm volatile(\"cp.async.ca.shared.global [%0], [%1], 4;\\n\" :: \"r\"(sa), \"l\"(&A[r * K + ka]));\n\
         \x20   else\n      As[ty][tx] = 0.f;\n\
         \x20   Bs[ty][tx] = kb < K && c < N ? B[kb * N + c] : 0.f;\n\
         \x20   CP_ASYNC_WAIT_ALL();\n\
         \x20   __syncthreads();\n\
         \x20   for (int k = 0; k < BK; ++k) acc += As[ty][k] * Bs[k][tx];\n\
         \x20   __syncthreads();\n\
         \x20 }\n\
         \x20 if (r < M && c < N) C[r * N + c] = acc * (float)(M_SQRT2 * M_SQRT1_2);\n\
         }\n",
    )
    .unwrap();
    let file = dir.join("gemm.cu");
    let spec = format!("{}:gemm<16>,block=16x16,grid=tile:16x16", file.display());
    passes_in_the_simulator_and_compiles_for_both_archs(&spec, "gemm<16>", &dir);
}

/// `spec`, a GEMM kernel, passes in the simulator on a shape with tails and one without, and
/// NVRTC compiles it (`entry`) for an A100 and an H100 alike.
fn passes_in_the_simulator_and_compiles_for_both_archs(spec: &str, entry: &str, dir: &Path) {
    let (ok, text) = sim_run("gemm", "100x37x129,64x64x64", spec, &dir.join("run"));
    assert!(ok, "{text}");
    assert_eq!(passing_user_rows(&text), 2, "{text}");
    let (ok, text) = harness(&["inspect", "--kernel", &format!("{spec},workload=gemm")]);
    assert!(ok, "{text}");
    for arch in ["sm_80", "sm_90"] {
        assert!(
            text.lines().any(|l| l.contains(entry) && l.contains(arch)),
            "{arch}: {text}"
        );
    }
}

/// What C headers shared with CUDA and files written for C++20 take for granted:
/// `<stdbool.h>`, `<initializer_list>`, `<bit>`, `<concepts>`, libstdc++'s `<bits/stdc++.h>`,
/// the toolkit's `<driver_types.h>` and `<vector_types.h>` by name, gcc's `__extension__`, the `register` storage class of older course code, a host struct of
/// `std::unique_ptr`s, and data members whose alignment attribute follows their names. The file compiles and runs as written, in the simulator and
/// with NVRTC; a compile error in a file including `<climits>` and `<type_traits>` shows no
/// warning about the lab's own headers.
#[test]
fn what_c_headers_and_cxx20_files_take_for_granted_compiles_and_runs() {
    let dir = scratch_dir("cxx20-headers");
    let code = "#include <stdbool.h>\n\
         #include <initializer_list>\n\
         #include <bit>\n\
         #include <concepts>\n\
         #include <bits/stdc++.h>\n\
         #include <memory>\n\
         #include <driver_types.h>\n\
         #include <vector_types.h>\n\
         // A C header shared with CUDA: gcc's __extension__ on an anonymous union.\n\
         typedef struct { __extension__ union { struct { float lo, hi; }; float both[2]; }; } pair_t;\n\
         // A host context held in a header beside device code, its pools owned by smart pointers.\n\
         struct pool_t { void *base; };\n\
         struct context { std::unique_ptr<pool_t> pools[4]; std::shared_ptr<pool_t> shared; bool ready = false; };\n\
         static bool any_of(std::initializer_list<int> xs, int v) { for (int x : xs) if (x == v) return true; return false; }\n\
         // Shared storage whose buffers are aligned by an attribute after their names.\n\
         struct tile_t {\n\
         \x20 float a[16][17];\n\
         \x20 float b[16][16] __attribute__((aligned(16)));\n\
         \x20 int count __align__(8);\n\
         };\n\
         template <std::integral I> __device__ I cdiv(I a, I b) { return (a + b - 1) / b; }\n\
         __global__ void tiled(const float *A, const float *B, float *C, int M, int N, int K) {\n\
         \x20 __shared__ tile_t t;\n\
         \x20 const int r = blockIdx.y * 16 + threadIdx.y, c = blockIdx.x * 16 + threadIdx.x;\n\
         \x20 register pair_t acc; acc.both[0] = 0.f; acc.both[1] = 0.f;\n\
         \x20 for (int k0 = 0; k0 < cdiv(K, 16) * 16; k0 += 16) {\n\
         \x20   t.a[threadIdx.y][threadIdx.x] = r < M && k0 + (int)threadIdx.x < K ? A[r * K + k0 + threadIdx.x] : 0.f;\n\
         \x20   t.b[threadIdx.y][threadIdx.x] = k0 + (int)threadIdx.y < K && c < N ? B[(k0 + threadIdx.y) * N + c] : 0.f;\n\
         \x20   __syncthreads();\n\
         \x20   for (int i = 0; i < 16; ++i) (i % 2 ? acc.hi : acc.lo) += t.a[threadIdx.y][i] * t.b[i][threadIdx.x];\n\
         \x20   __syncthreads();\n\
         \x20 }\n\
         \x20 static_assert(std::popcount(16u) == 1 && INT_MAX > 0 && CHAR_BIT == 8 && __bool_true_false_are_defined);\n\
         \x20 if (r < M && c < N) C[r * N + c] = acc.lo + acc.hi;\n\
         }\n\
         int main() { context ctx; return any_of({1, 2}, 3) && ctx.ready; }\n";
    std::fs::write(dir.join("gemm.cu"), code).unwrap();
    let spec = format!(
        "{}:tiled,block=16x16,grid=tile:16x16",
        dir.join("gemm.cu").display()
    );
    passes_in_the_simulator_and_compiles_for_both_archs(&spec, "tiled", &dir);
    std::fs::write(
        dir.join("broken.cu"),
        "#include <climits>\n#include <type_traits>\n\
         __global__ void broken(const float *A, const float *B, float *C, int M, int N, int K) {\n\
         \x20 if (M < INT_MAX && std::is_same_v<float, float>) C[0] = undeclared;\n}\n",
    )
    .unwrap();
    let (ok, text) = harness(&[
        "inspect",
        "--kernel",
        &format!("{}:broken,workload=gemm", dir.join("broken.cu").display()),
    ]);
    assert!(
        !ok && text.contains("\"undeclared\" is undefined"),
        "{text}"
    );
    assert!(!text.contains("redefinition"), "{text}");
}

/// What the kernel files of inference libraries and textbooks take for granted: the rest of
/// the C and C++ standard headers, `<pthread.h>`, `<sys/types.h>`, `<cudnn.h>` and a course's `<wb.h>` (whose types a host typedef
/// or member names), host members of standard types with initializers in their class, a
/// host member defined `const` outside its class and a derived class's using-declaration of a
/// base's host operator, `std::numeric_limits` specialized for the file's own type, a type
/// aligned before its body, the
/// toolkit's version macros (an old-toolkit branch left compiled would be code the simulator
/// does not run), `std::exp` without `<cmath>` and `std::fmaxf`, placement new, a constructor
/// initializing its members in braces and a member initialized in parentheses, a constant
/// marked `constexpr` through a macro, `half` through cuBLAS's header, and what a PyTorch
/// extension's kernels take from ATen and c10 (`at::acc_type`, `c10::Half`, `WARP_SHFL_XOR`),
/// and the CUDA samples' helper headers for host code (`StopWatchInterface`,
/// `checkCudaErrors`). The file compiles and runs as written, in the simulator and with NVRTC.
#[test]
fn what_library_and_textbook_files_take_for_granted_compiles_and_runs() {
    let dir = scratch_dir("library-headers");
    let headers = [
        "cuda.h",
        "ostream",
        "istream",
        "ios",
        "iosfwd",
        "cctype",
        "ctype.h",
        "cstdarg",
        "stdarg.h",
        "cerrno",
        "errno.h",
        "cinttypes",
        "inttypes.h",
        "csignal",
        "signal.h",
        "queue",
        "deque",
        "list",
        "stack",
        "optional",
        "variant",
        "string_view",
        "unordered_set",
        "atomic",
        "condition_variable",
        "future",
        "typeinfo",
        "new",
        "pthread.h",
        "cudnn.h",
        "string",
        "map",
        "vector",
        "memory",
        "functional",
        "limits",
        "sys/types.h",
        "wb.h",
        "cublas_v2.h",
        "ATen/ATen.h",
        "ATen/cuda/CUDAContext.h",
        "ATen/cuda/DeviceUtils.cuh",
        "c10/cuda/CUDAGuard.h",
        "c10/util/Half.h",
        "torch/extension.h",
        "algorithm",
        "helper_cuda.h",
        "helper_functions.h",
    ];
    let includes: String = headers
        .iter()
        .map(|h| format!("#include <{h}>\n"))
        .collect();
    let code = r#"typedef pthread_t CUTThread;
StopWatchInterface *timer = NULL;
void time_it() { checkCudaErrors(cudaDeviceSynchronize()); sdkCreateTimer(&timer); }
class Logger {
 public:
  int level() const;
 private:
  const std::string prefix_ = "[FT]";
  const std::map<const int, const std::string> names_ = {{0, "TRACE"}, {1, "DEBUG"}};
  std::vector<int> sizes_ = {1, 2, 3};
  std::deque<int> pending_;
  std::optional<int> limit_;
  std::atomic<int> count_{0};
  std::unique_ptr<int> owned_ = nullptr;
  std::function<void(int)> callback_ = nullptr;
  std::string_view name_ = "x";
  cudnnHandle_t handle_;
  int level_ = 0;
};
inline int Logger::level() const { return level_; }
struct UnaryOp { virtual void operator()(const float *x, float *y) const = 0; };
struct SoftMax : UnaryOp { using UnaryOp::operator(); void operator()(float *x) const; };
typedef struct __align__(8) { float lo, hi; } pair_t;
struct bf16_t { unsigned short bits; };
namespace std {
template <> class numeric_limits<bf16_t> { public: static constexpr bool is_specialized = true; };
}
static_assert(std::numeric_limits<bf16_t>::is_specialized && std::numeric_limits<float>::max() > 0.f);
static_assert(std::is_same<at::acc_type<c10::Half, true>, float>::value, "PyTorch's");
struct Launcher {
  unsigned tile_;
  float scale_ = (1.f);
  explicit Launcher(unsigned tile) : tile_{tile}, scale_(2.f) {}
};
template <typename T> struct DevVector { explicit DevVector(unsigned n); unsigned n_; };
template <typename T> DevVector<T>::DevVector(unsigned n)
    : n_{n} {}
#define HALF_CONSTEXPR_CONST constexpr
HALF_CONSTEXPR_CONST float kOne = 1.0f;
#if __CUDACC_VER_MAJOR__ < 11
#error the file takes its pre-CUDA 11 branch
#endif
__device__ half through_cublas_header(half h) { return h; }
#if CUDA_VERSION < 12000 || CUDART_VERSION < 12000
#error the file takes its pre-CUDA 12 branch
#endif
__global__ void naive(const float *A, const float *B, float *C, int M, int N, int K) {
  const int r = blockIdx.y * 16 + threadIdx.y, c = blockIdx.x * 16 + threadIdx.x;
  __shared__ pair_t slots[256];
  pair_t *acc = new (&slots[threadIdx.y * 16 + threadIdx.x]) pair_t{0.f, 0.f};
  for (int k = 0; r < M && c < N && k < K; ++k)
    (k % 2 ? acc->hi : acc->lo) += A[r * K + k] * B[k * N + c];
  if (r == -1) printf("%" PRId64 "\n", (int64_t)r);
  const float sum = WARP_SHFL_XOR(0.f, 1) + std::fmaxf(acc->lo + acc->hi, -INFINITY) * kOne;
  if (r < M && c < N) C[r * N + c] = std::log(std::exp(sum));
}
"#;
    std::fs::write(dir.join("gemm.cu"), format!("{includes}{code}")).unwrap();
    let spec = format!(
        "{}:naive,block=16x16,grid=tile:16x16",
        dir.join("gemm.cu").display()
    );
    passes_in_the_simulator_and_compiles_for_both_archs(&spec, "naive", &dir);
}

/// What NVIDIA's CUDA samples take for granted, as their `Common/` helper headers and their
/// tensor-core GEMMs write it: host-only C++ headers (streams, exceptions, `<ctime>`,
/// `<strings.h>`; `<memory>`, whose shared_ptr spells `__noinline__` as the simulator's
/// device code does), a host timer class holding a `struct timeval`, a table of kernel names
/// behind pointers to const, and the sizes as macros `M`, `N` and `K`, the names of the
/// lab's own arguments. The file compiles and runs as written, in the simulator and with
/// NVRTC.
#[test]
fn what_the_cuda_samples_take_for_granted_compiles_and_runs() {
    let dir = scratch_dir("cuda-samples");
    std::fs::write(
        dir.join("helper.h"),
        "#ifndef HELPER_H\n#define HELPER_H\n\
         #include <fstream>\n#include <sstream>\n#include <iomanip>\n#include <exception>\n\
         #include <stdexcept>\n#include <ctime>\n#include <strings.h>\n#include <sys/time.h>\n\
         #include <string>\n#include <memory>\n\
         class StopWatch {\n public:\n  StopWatch() : diff(0) {}\n\
         \x20 void start() { gettimeofday(&start_time, 0); }\n\
         \x20 float seconds() const { std::ostringstream s; s << diff; return diff; }\n\
         \x20private:\n  struct timeval start_time;\n  struct timespec last;\n  float diff;\n};\n\
         inline bool exists(const char *p) { auto f = std::make_shared<std::ifstream>(p); return f->good(); }\n\
         inline void need(bool ok) { if (!ok) throw std::runtime_error(\"no\"); }\n\
         #endif\n",
    )
    .unwrap();
    std::fs::write(
        dir.join("gemm.cu"),
        "#include \"helper.h\"\n\
         #define M 16\n#define N 16\n#define K 16\n\
         const char *kernelNames[] = {\"tiled\", \"naive\"};\n\
         __global__ void tiled(const float *A, const float *B, float *C, int m, int n, int k) {\n\
         \x20 __shared__ float As[M][K], Bs[K][N];\n\
         \x20 const int r = blockIdx.y * M + threadIdx.y, c = blockIdx.x * N + threadIdx.x;\n\
         \x20 float acc = 0.f;\n\
         \x20 for (int t = 0; t < k; t += K) {\n\
         \x20   As[threadIdx.y][threadIdx.x] = r < m && t + threadIdx.x < k ? A[r * k + t + threadIdx.x] : 0.f;\n\
         \x20   Bs[threadIdx.y][threadIdx.x] = t + threadIdx.y < k && c < n ? B[(t + threadIdx.y) * n + c] : 0.f;\n\
         \x20   __syncthreads();\n\
         \x20   for (int i = 0; i < K; ++i) acc += As[threadIdx.y][i] * Bs[i][threadIdx.x];\n\
         \x20   __syncthreads();\n\
         \x20 }\n\
         \x20 if (r < m && c < n) C[r * n + c] = acc;\n\
         }\n\
         int main() { StopWatch w; w.start(); need(exists(kernelNames[0])); return 0; }\n",
    )
    .unwrap();
    let spec = format!(
        "{}:tiled,block=16x16,grid=tile:16x16",
        dir.join("gemm.cu").display()
    );
    passes_in_the_simulator_and_compiles_for_both_archs(&spec, "tiled", &dir);
}

/// What learning repositories' GEMM files take for granted: their own float atomicMax (CUDA
/// has none, so the simulator must not define one), a host `constexpr` helper only a
/// launcher's assert calls (NVRTC refuses host functions), host headers of the standard
/// library (a timer struct's members of `std::chrono`, container, mutex and function types,
/// a `std::string` that comes through `<iostream>`, `<random>` for the inputs), and
/// `std::numeric_limits`, `std::max` and `std::min` in device code; the row address of every
/// lane of an `ldmatrix .x1` converted, those of the lanes it ignores past the end of the
/// tile; and the m16n8k8 FP16 mma of Turing-era tutorials.
#[test]
fn what_learning_repositories_take_for_granted_compiles_and_runs() {
    let dir = scratch_dir("learning-repos");
    std::fs::write(
        dir.join("common.h"),
        "#pragma once\n#include <chrono>\n#include <random>\n#include <map>\n#include <thread>\n\
         #include <functional>\n#include <numeric>\n#include <utility>\n#include <limits>\n\
         #include <array>\n#include <tuple>\n#include <unordered_map>\n#include <set>\n#include <mutex>\n\
         #include <vector>\n#include <iostream>\n\
         struct Timer {\n  std::chrono::high_resolution_clock::time_point start;\n\
         \x20 std::chrono::steady_clock::time_point steady;\n  std::vector<float> times_ms;\n\
         \x20 std::map<int, double> by_size;\n  std::mutex lock;\n  std::function<void()> launch;\n\
         \x20 std::string name;\n\
         \x20 void tick() { start = std::chrono::high_resolution_clock::now(); }\n};\n\
         constexpr bool is_power_of_two(int x) { return x > 0 && (x & (x - 1)) == 0; }\n\
         __device__ float atomicMax(float *address, float val) {\n\
         \x20 return !signbit(val) ? __int_as_float(atomicMax((int *)address, __float_as_int(val)))\n\
         \x20                      : __uint_as_float(atomicMin((unsigned *)address, __float_as_uint(val)));\n}\n",
    )
    .unwrap();
    std::fs::write(
        dir.join("gemm.cu"),
        "#include <cassert>\n#include <cuda_fp16.h>\n#include \"common.h\"\n\
         __device__ unsigned pack(float lo, float hi) {\n\
         \x20 return (unsigned)__half_as_ushort(__float2half(lo)) | ((unsigned)__half_as_ushort(__float2half(hi)) << 16);\n}\n\
         // One warp per 16 x 8 tile of C, K in steps of 8: A's fragment from global memory, B's\n\
         // through ldmatrix.x1.trans from an 8 x 8 tile in shared memory.\n\
         __global__ void mma_k8(const float *A, const float *B, float *C, int M, int N, int K) {\n\
         \x20 __shared__ __align__(16) __half bs[8][8];\n\
         \x20 const int lane = threadIdx.x, g = lane / 4, t = lane % 4;\n\
         \x20 const int m0 = blockIdx.y * 16, n0 = blockIdx.x * 8;\n\
         \x20 auto a_at = [&](int r, int k) { return r < M && k < K ? A[r * K + k] : 0.f; };\n\
         \x20 float d[4] = {0.f, 0.f, 0.f, 0.f};\n\
         \x20 float largest = std::numeric_limits<float>::lowest();\n\
         \x20 for (int k0 = 0; k0 < K; k0 += 8) {\n\
         \x20   for (int i = lane; i < 64; i += 32) {\n\
         \x20     const int k = k0 + i / 8, n = n0 + i % 8;\n\
         \x20     bs[i / 8][i % 8] = __float2half(k < K && n < N ? B[k * N + n] : 0.f);\n\
         \x20   }\n\
         \x20   __syncwarp();\n\
         \x20   unsigned b;\n\
         \x20   const unsigned row = (unsigned)__cvta_generic_to_shared(&bs[0][0] + lane * 8);\n\
         \x20   asm volatile(\"ldmatrix.sync.aligned.m8n8.x1.trans.shared.b16 {%0}, [%1];\" : \"=r\"(b) : \"r\"(row));\n\
         \x20   const unsigned a0 = pack(a_at(m0 + g, k0 + 2 * t), a_at(m0 + g, k0 + 2 * t + 1));\n\
         \x20   const unsigned a1 = pack(a_at(m0 + g + 8, k0 + 2 * t), a_at(m0 + g + 8, k0 + 2 * t + 1));\n\
         \x20   asm volatile(\"mma.sync.aligned.m16n8k8.row.col.f32.f16.f16.f32 {%0, %1, %2, %3}, {%4, %5}, {%6}, {%0, %1, %2, %3};\"\n\
         \x20                : \"+f\"(d[0]), \"+f\"(d[1]), \"+f\"(d[2]), \"+f\"(d[3]) : \"r\"(a0), \"r\"(a1), \"r\"(b));\n\
         \x20   __syncwarp();\n\
         \x20 }\n\
         \x20 for (int i = 0; i < 4; ++i) {\n\
         \x20   const int r = m0 + g + 8 * (i / 2), c = n0 + 2 * t + i % 2;\n\
         \x20   largest = std::max(largest, d[i]);\n\
         \x20   if (r < M && c < N) C[r * N + c] = std::min(d[i], largest);\n\
         \x20 }\n\
         }\n\
         void launch(const float *A, const float *B, float *C, int M, int N, int K) {\n\
         \x20 assert(is_power_of_two(K));\n\
         \x20 std::mt19937 gen(0);\n\
         \x20 mma_k8<<<dim3((N + 7) / 8, (M + 15) / 16), 32>>>(A, B, C, M, N, K);\n\
         }\n",
    )
    .unwrap();
    let spec = format!(
        "{}:mma_k8,block=32,grid=(cdiv(N,8),cdiv(M,16)),precision=fp16",
        dir.join("gemm.cu").display()
    );
    passes_in_the_simulator_and_compiles_for_both_archs(&spec, "mma_k8", &dir);
}

/// A pipelined kernel that loads the next stage's fragments with ldmatrix on its last k-step
/// too, never to use them, reads shared memory nothing wrote: no GPU cares, and the row passes.
/// A fragment of such memory that is used carries the simulator's NaN fill into the output,
/// which fails the row.
#[test]
fn a_discarded_fragment_of_an_unwritten_stage_passes_and_a_used_one_fails() {
    let dir = scratch_dir("fragment-prefetch");
    let code = "__global__ void prefetch(const float *A, const float *B, float *C, int M, int N, int K) {\n\
        \x20 __shared__ __align__(16) float sa[2][16][16], sb[16][16];\n\
        \x20 const int tx = threadIdx.x, ty = threadIdx.y;\n\
        \x20 const int r = blockIdx.y * 16 + ty, c = blockIdx.x * 16 + tx;\n\
        \x20 float acc = 0.f;\n\
        \x20 unsigned next = 0;\n\
        \x20 for (int t = 0; t < K / 16; ++t) {\n\
        \x20   const int s = t % 2;\n\
        \x20   sa[s][ty][tx] = r < M ? A[r * K + t * 16 + tx] : 0.f;\n\
        \x20   sb[ty][tx] = c < N ? B[(t * 16 + ty) * N + c] : 0.f;\n\
        \x20   __syncthreads();\n\
        \x20   for (int k = 0; k < 16; ++k) acc += sa[s][ty][k] * sb[k][tx];\n\
        \x20   const unsigned row = (unsigned)__cvta_generic_to_shared(&sa[1 - s][(ty * 16 + tx) % 8][0]);\n\
        \x20   asm volatile(\"ldmatrix.sync.aligned.x1.m8n8.shared.b16 {%0}, [%1];\" : \"=r\"(next) : \"r\"(row));\n\
        \x20   __syncthreads();\n\
        \x20 }\n\
        \x20 if (r < M && c < N) C[r * N + c] = acc;\n\
        }\n";
    std::fs::write(dir.join("prefetch.cu"), code).unwrap();
    let spec = format!(
        "{}:prefetch,block=16x16,grid=tile:16x16",
        dir.join("prefetch.cu").display()
    );
    // One k-tile: stage 1 is never written, and its fragment is dropped.
    let (ok, text) = sim_run("gemm", "32x32x16,32x32x32", &spec, &dir.join("run"));
    assert!(ok, "{text}");
    assert_eq!(passing_user_rows(&text), 2, "{text}");
    let used = "#include <cuda_fp16.h>\n".to_string()
        + &code.replace(
            "C[r * N + c] = acc;",
            "C[r * N + c] = acc + __half2float(__ushort_as_half((unsigned short)next)) * 0.f;",
        );
    std::fs::write(dir.join("used.cu"), used).unwrap();
    let (ok, text) = sim_run(
        "gemm",
        "32x32x16",
        &spec.replace("prefetch.cu", "used.cu"),
        &dir.join("used"),
    );
    assert!(!ok, "{text}");
    assert!(
        text.lines()
            .any(|l| l.starts_with("  user ") && l.contains("NaN") && l.contains("fail")),
        "{text}"
    );
}

/// A 16-byte cp.async from the start of each row of A: aligned while K is a multiple of 4,
/// and at K = 5 the message says which address is off its boundary, by how much, and which
/// element of which buffer it is.
#[test]
fn a_misaligned_cp_async_names_the_address_its_buffer_and_element() {
    let dir = scratch_dir("cp-async-align");
    let code = "__global__ void rowcopy(const float *A, const float *B, float *C, int M, int N, int K) {\n\
        \x20 __shared__ __align__(16) float s[4];\n\
        \x20 const int r = blockIdx.x;\n\
        \x20 if (threadIdx.x == 0) {\n\
        \x20   const unsigned dst = (unsigned)__cvta_generic_to_shared(s);\n\
        \x20   asm volatile(\"cp.async.cg.shared.global [%0], [%1], 16;\\n\" :: \"r\"(dst), \"l\"(&A[r * K]));\n\
        \x20   asm volatile(\"cp.async.wait_all;\\n\" ::);\n\
        \x20 }\n\
        \x20 __syncthreads();\n\
        \x20 for (int c = threadIdx.x; c < N; c += blockDim.x) {\n\
        \x20   float acc = 0.f * s[0];\n\
        \x20   for (int k = 0; k < K; ++k) acc += A[r * K + k] * B[k * N + c];\n\
        \x20   C[r * N + c] = acc;\n\
        \x20 }\n\
        }\n";
    std::fs::write(dir.join("rowcopy.cu"), code).unwrap();
    let spec = format!(
        "{}:rowcopy,block=32,grid=(M)",
        dir.join("rowcopy.cu").display()
    );
    let (ok, text) = sim_run("gemm", "8x8x8,8x8x5", &spec, &dir.join("run"));
    assert!(!ok, "{text}");
    assert_eq!(passing_user_rows(&text), 1, "{text}");
    // Row r starts at element 5r, 4r bytes past a 16-byte boundary (mod 16).
    let line = text
        .lines()
        .find(|l| l.contains("cp.async of 16 bytes from byte "))
        .unwrap_or_else(|| panic!("{text}"));
    let r = (1..8)
        .find(|r| {
            line.contains(&format!(
                "from byte {} (element {}) of buffer 'A', ",
                20 * r,
                5 * r
            ))
        })
        .unwrap_or_else(|| panic!("{line}"));
    assert!(!line.contains("0x"), "{line}");
    assert!(
        line.contains(&format!(", {} bytes past a 16-byte boundary", 20 * r % 16))
            && line.contains(&format!("of block ({r},0,0)")),
        "{line}"
    );
    // A source just past A's end is named as such.
    std::fs::write(
        dir.join("pastend.cu"),
        code.replace("&A[r * K]", "&A[M * K + 1 + r * 0]"),
    )
    .unwrap();
    let (ok, text) = sim_run(
        "gemm",
        "8x8x8",
        &spec.replace("rowcopy.cu", "pastend.cu"),
        &dir.join("pastend"),
    );
    assert!(
        !ok && text.contains("byte 260 of buffer 'A', past its end (it holds 256 bytes)"),
        "{text}"
    );
}

/// A layer normalization without the scale and shift (their scalars fixed in the kernel, as
/// some public kernels have them) cannot match a reference that applies gamma and beta: the
/// failure says which inputs the kernel is never given, in place of a tail hint.
#[test]
fn a_kernel_given_no_gamma_or_beta_is_told_the_reference_applies_them() {
    let dir = scratch_dir("unread-inputs");
    let code = "__global__ void plain_norm(const float *X, float *Y, int M, int N) {\n\
        \x20 const int r = blockIdx.x * blockDim.x + threadIdx.x;\n\
        \x20 if (r >= M) return;\n\
        \x20 float mean = 0.f, var = 0.f;\n\
        \x20 for (int c = 0; c < N; ++c) mean += X[r * N + c];\n\
        \x20 mean /= N;\n\
        \x20 for (int c = 0; c < N; ++c) var += (X[r * N + c] - mean) * (X[r * N + c] - mean);\n\
        \x20 const float inv = rsqrtf(var / N + 1e-5f);\n\
        \x20 for (int c = 0; c < N; ++c) Y[r * N + c] = (X[r * N + c] - mean) * inv;\n\
        }\n";
    std::fs::write(dir.join("norm.cu"), code).unwrap();
    let spec = format!(
        "{}:plain_norm,args=(X,Y,M,N),block=32,grid=cdiv(M,32)",
        dir.join("norm.cu").display()
    );
    let (ok, text) = sim_run("layernorm", "37x100", &spec, &dir.join("run"));
    assert!(!ok, "{text}");
    assert!(
        text.contains(
            "the kernel is given no gamma or beta: the reference applies every input of the \
             layernorm workload"
        ) && !text.contains("not a multiple of 32"),
        "{text}"
    );
}

/// A kernel named as a function of CUDA's math library (`norm`) is ambiguous to NVRTC's
/// lookup of the entry: the message says so, after the compiler's.
#[test]
fn a_kernel_named_as_a_cuda_math_function_is_told_to_rename_it() {
    let dir = scratch_dir("math-name");
    std::fs::write(
        dir.join("norm.cu"),
        "__global__ void norm(const float *X, float *Y, int M, int N) {\n\
         \x20 const int i = blockIdx.x * blockDim.x + threadIdx.x;\n\
         \x20 if (i < M * N) Y[i] = X[i];\n}\n",
    )
    .unwrap();
    let spec = format!(
        "{}:norm,args=(X,Y,M,N),block=32,grid=cdiv(M*N,32)",
        dir.join("norm.cu").display()
    );
    let (ok, text) = sim_run("softmax", "3x40", &spec, &dir.join("run"));
    assert!(!ok, "{text}");
    assert!(
        text.contains("`norm` is also the name of a function of CUDA's own headers")
            && text.contains("rename the kernel"),
        "{text}"
    );
}

/// The guide's table of signatures lists every one the lab has, with its parameters in order.
#[test]
fn the_guide_lists_every_signature_with_its_parameters() {
    let guide = std::fs::read_to_string(root().join("docs/your-kernel.md")).unwrap();
    for sig in harness::user_kernel::signature::ALL {
        let names: Vec<&str> = sig.params.iter().map(|(n, _)| *n).collect();
        let row = format!("| `{}` | `{}` |", sig.name, names.join(", "));
        assert!(
            guide.contains(&row),
            "docs/your-kernel.md lacks the row {row}"
        );
    }
}

/// Kernels of two workloads in one run: each row's child process loads the kernel it runs,
/// not the others (which another workload's check would refuse).
#[test]
fn kernels_of_two_workloads_run_in_one_run() {
    let dir = scratch_dir("two-workloads");
    let attention = format!("{},workload=attention", *ATTENTION_EXAMPLE);
    let (ok, text) = harness(&[
        "run",
        "--device",
        "sim",
        "--kernel",
        &GEMM_EXAMPLE,
        "--kernel",
        &attention,
        "--out",
        dir.join("run").to_str().unwrap(),
    ]);
    assert!(ok, "{text}");
    for entry in ["sgemm_blocktile<64,64,8,8>", "attention_rows<32,64>"] {
        assert!(
            text.lines()
                .any(|l| l.contains(entry) && l.trim_end().ends_with(" pass")),
            "{text}"
        );
    }
}

#[test]
fn two_kernels_with_one_name_must_be_told_apart() {
    let spec = format!("{}/{}", root().display(), *GEMM_EXAMPLE);
    let twice = [spec.clone(), spec.clone()];
    let specs = harness::user_kernel::specs(&[], &twice).unwrap();
    let e = harness::user_kernel::load_all(&specs, &["gemm".to_string()], &[], None)
        .unwrap_err()
        .to_string();
    assert!(e.contains("already called") && e.contains("id=NAME"), "{e}");
    let named = [spec.clone(), format!("{spec},id=mine")];
    let specs = harness::user_kernel::specs(&[], &named).unwrap();
    let users = harness::user_kernel::load_all(&specs, &["gemm".to_string()], &[], None).unwrap();
    assert_eq!(users[1].id(), "mine");
    // Two ids that one page name would hold.
    let paged = [format!("{spec},id=a/b"), format!("{spec},id=a_b")];
    let specs = harness::user_kernel::specs(&[], &paged).unwrap();
    let e = harness::user_kernel::load_all(&specs, &["gemm".to_string()], &[], None)
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("its id \"a_b\" and \"a/b\"'s would share the page rung-a_b.html"),
        "{e}"
    );
    // A lab kernel's name would put two rows under one id in the tables and the results.
    let lab = [format!("{spec},id=gemm-tiled")];
    let specs = harness::user_kernel::specs(&[], &lab).unwrap();
    let e = harness::user_kernel::load_all(&specs, &["gemm".to_string()], &[], None)
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("\"gemm-tiled\" names a kernel of the lab") && e.contains("another id=NAME"),
        "{e}"
    );
    let e = harness::user_kernel::specs(&[], &[format!("{spec},id=")])
        .unwrap_err()
        .to_string();
    assert!(e.contains("id= needs a name"), "{e}");
}

#[test]
fn a_block_larger_than_the_launch_bounds_is_refused() {
    if let Err(e) = nvrtc::version() {
        panic!("{e}\nThis test needs NVRTC: run tools/install-cuda-tools.sh first.");
    }
    let dir = scratch_dir("bounds");
    let code = "__global__ void __launch_bounds__(64) bounded(const float *A, const float *B, \
        float *C, int M, int N, int K) {\n\
        \x20 int i = blockIdx.x * blockDim.x + threadIdx.x;\n\
        \x20 if (i < M * N) C[i] = A[i / N * K] * B[i % N];\n\
        }\n";
    std::fs::write(dir.join("bounded.cu"), code).unwrap();
    let spec = |block: &str| {
        format!(
            "{}/bounded.cu:bounded,block={block},grid=tile:{block}",
            dir.display()
        )
    };
    let load = |block: &str| {
        let specs = harness::user_kernel::specs(&[], &[spec(block)]).unwrap();
        harness::user_kernel::load_all(&specs, &["gemm".to_string()], &[], None).map(|_| ())
    };
    load("64").unwrap();
    let e = load("128").unwrap_err().to_string();
    assert!(
        e.contains("block=128 is 128 threads, more than the 64 its __launch_bounds__ allow: a GPU refuses the launch"),
        "{e}"
    );
    // A block computed from the shape is checked at each shape: declined where it is larger.
    let specs = harness::user_kernel::specs(
        &[],
        &[format!(
            "{}/bounded.cu:bounded,block=(min(N,128)),grid=tile:64",
            dir.display()
        )],
    )
    .unwrap();
    let k = &harness::user_kernel::load_all(&specs, &["gemm".to_string()], &[], None).unwrap()[0];
    assert_eq!(k.supports(&Shape::gemm(10, 64, 8)), Ok(()));
    assert_eq!(
        k.supports(&Shape::gemm(10, 100, 8)).unwrap_err().0,
        "block 100 is 100 threads here, more than the 64 its __launch_bounds__ allow: a GPU \
         refuses the launch"
    );
}

#[test]
fn a_block_computed_from_the_shape_launches_each_shape_with_its_own() {
    let spec = example("softmax_rows.cu");
    assert!(spec.contains("block=(min(cdiv(N,32)*32,1024))"), "{spec}");
    // Rows of 5, 130 and 1500 elements: 1, 5 and 32 warps.
    let k = load(&spec, Workload::Softmax);
    let blocks: Vec<[u32; 3]> = [5, 130, 1500]
        .iter()
        .map(|&n| k.geometry(&Shape::Softmax { m: 3, n }).unwrap()[0].block)
        .collect();
    assert_eq!(blocks, [[32, 1, 1], [160, 1, 1], [1024, 1, 1]]);
    let plan = k.cuda(&Shape::Softmax { m: 3, n: 130 }).unwrap();
    assert_eq!(plan.launches().next().unwrap().block, [160, 1, 1]);
    // A shape whose block no GPU launches is declined with the arithmetic.
    let k = load(
        &spec.replace("min(cdiv(N,32)*32,1024)", "cdiv(N,32)*32"),
        Workload::Softmax,
    );
    let why = k.supports(&Shape::Softmax { m: 3, n: 1500 }).unwrap_err().0;
    assert_eq!(
        why,
        "block (cdiv(N,32)*32) = 1504 has 1504 threads; a block holds at most 1024"
    );
    // The run records each shape's block beside its registers.
    if nvrtc::version().is_ok() {
        let dir = scratch_dir("block-exprs");
        let (ok, text) = sim_run("softmax", "3x5,37x130,2x1500", &spec, &dir);
        assert!(ok, "{text}");
        assert_eq!(passing_user_rows(&text), 3, "{text}");
        let json = std::fs::read_to_string(dir.join("results.json")).unwrap();
        for threads in [32, 160, 1024] {
            assert!(
                json.contains(&format!("\"threads_per_block\": {threads}")),
                "{json}"
            );
        }
    }
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

/// The FP16 and BF16 examples pass because the lab hands them what they take: with B
/// row-major (no `b=col`) or beta ignored, the same kernels fail. The layout and the epilogue
/// are checked, not assumed.
#[test]
fn half_and_bfloat16_kernels_are_judged_on_their_own_layout_and_epilogue() {
    let shapes = [Shape::gemm(100, 37, 129), Shape::gemm(64, 64, 64)];
    for spec in [FP16_EXAMPLE.as_str(), BF16_EXAMPLE.as_str()] {
        let users = [load(spec, Workload::Gemm)];
        let results = sim_rows(&users, &shapes);
        for s in &results.workloads[0].shapes {
            let row = &s.rows[0];
            assert_eq!(row.status, Status::Passed, "{spec} {}: {row:?}", s.label);
        }
        let row_major = [load(&spec.replace(",b=col", ""), Workload::Gemm)];
        let results = sim_rows(&row_major, &shapes);
        let row = &results.workloads[0].shapes[0].rows[0];
        assert_eq!(
            row.status,
            Status::Failed,
            "{spec} with B row-major: {row:?}"
        );
    }
    let fp16 = &load(&FP16_EXAMPLE, Workload::Gemm);
    assert_eq!(fp16.info().precision, kernel::Precision::Fp16);
    assert!(
        fp16.info()
            .summary
            .contains("A:f16, B:f16 column-major, C:f32, alpha 1.5 beta -0.5"),
        "{}",
        fp16.info().summary
    );
    // A kernel that drops `beta * C` fails when beta is not 0: C starts at known values.
    let dir = scratch_dir("beta");
    let code = std::fs::read_to_string(root().join("examples/hgemm_wmma.cu"))
        .unwrap()
        .replace("alpha * Cs[r][c] + beta * *out", "alpha * Cs[r][c]");
    std::fs::write(dir.join("hgemm_wmma.cu"), code).unwrap();
    std::fs::copy(
        root().join("examples/cuda_check.cuh"),
        dir.join("cuda_check.cuh"),
    )
    .unwrap();
    let spec = FP16_EXAMPLE.replace("examples/", &format!("{}/", dir.display()));
    let users = [load(&spec, Workload::Gemm)];
    let results = sim_rows(&users, &shapes[1..]);
    let row = &results.workloads[0].shapes[0].rows[0];
    assert_eq!(row.status, Status::Failed, "beta ignored: {row:?}");
    let with_zero_beta = [load(&spec.replace("beta=-0.5", "beta=0"), Workload::Gemm)];
    let results = sim_rows(&with_zero_beta, &shapes[1..]);
    let row = &results.workloads[0].shapes[0].rows[0];
    assert_eq!(row.status, Status::Passed, "beta = 0: {row:?}");
}

/// A kernel in the style of the minimal public flash-attention kernel: no launch bounds of its
/// own, `const int` tile counts, accumulating into O, l and m.
const FA_STYLE: &str = "__global__ void fa_rows(const float *__restrict__ Q, const float *__restrict__ K,\n\
    \x20   const float *__restrict__ V, const int N, const int d, const int Tc, const int Bc,\n\
    \x20   const float scale, float *l, float *m, float *O) {\n\
    \x20 extern __shared__ float kv[];\n\
    \x20 int tx = threadIdx.x, bh = blockIdx.x * gridDim.y + blockIdx.y, r = bh * N + blockIdx.z * Bc + tx;\n\
    \x20 for (int j = 0; j < Tc; j++) {\n\
    \x20   for (int x = 0; x < d; x++) kv[tx * d + x] = K[(size_t)(bh * N + j * Bc + tx) * d + x];\n\
    \x20   __syncthreads();\n\
    \x20   float mi = m[r], li = l[r];\n\
    \x20   for (int y = 0; y < Bc; y++) {\n\
    \x20     float s = 0;\n\
    \x20     for (int x = 0; x < d; x++) s += Q[(size_t)r * d + x] * kv[y * d + x];\n\
    \x20     float mn = fmaxf(mi, s * scale), c = __expf(mi - mn), p = __expf(s * scale - mn);\n\
    \x20     for (int x = 0; x < d; x++) O[(size_t)r * d + x] = O[(size_t)r * d + x] * c + p * V[(size_t)(bh * N + j * Bc + y) * d + x];\n\
    \x20     li = li * c + p;\n\
    \x20     mi = mn;\n\
    \x20   }\n\
    \x20   m[r] = mi;\n\
    \x20   l[r] = li;\n\
    \x20   __syncthreads();\n\
    \x20 }\n\
    \x20 for (int x = 0; x < d; x++) O[(size_t)r * d + x] /= l[r];\n\
    }\n";

/// A BLAS-style template with launch bounds that depend on its parameters and `__restrict__`
/// operands, in the style of the public SGEMM worklogs' 2D block tiling.
const BLOCKTILE_STYLE: &str = "template <int BM, int BN, int BK, int TM, int TN>\n\
    __global__ void __launch_bounds__((BM * BN) / (TM * TN), 1)\n\
    \x20   tile2d(int M, int N, int K, float alpha, const float *__restrict__ A,\n\
    \x20          const float *__restrict__ B, float beta, float *__restrict__ C) {\n\
    \x20 __shared__ float As[BM * BK], Bs[BK * BN];\n\
    \x20 const int tr = threadIdx.x / (BN / TN), tc = threadIdx.x % (BN / TN);\n\
    \x20 const int r0 = blockIdx.y * BM, c0 = blockIdx.x * BN;\n\
    \x20 float acc[TM * TN] = {0.0f}, ra[TM], rb[TN];\n\
    \x20 for (int k0 = 0; k0 < K; k0 += BK) {\n\
    \x20   for (int e = threadIdx.x; e < BM * BK; e += blockDim.x) {\n\
    \x20     int r = r0 + e / BK, c = k0 + e % BK;\n\
    \x20     As[e] = (r < M && c < K) ? A[(size_t)r * K + c] : 0.0f;\n\
    \x20   }\n\
    \x20   for (int e = threadIdx.x; e < BK * BN; e += blockDim.x) {\n\
    \x20     int r = k0 + e / BN, c = c0 + e % BN;\n\
    \x20     Bs[e] = (r < K && c < N) ? B[(size_t)r * N + c] : 0.0f;\n\
    \x20   }\n\
    \x20   __syncthreads();\n\
    \x20   for (int k = 0; k < BK; ++k) {\n\
    \x20     for (int i = 0; i < TM; ++i) ra[i] = As[(tr * TM + i) * BK + k];\n\
    \x20     for (int j = 0; j < TN; ++j) rb[j] = Bs[k * BN + tc * TN + j];\n\
    \x20     for (int i = 0; i < TM; ++i)\n\
    \x20       for (int j = 0; j < TN; ++j) acc[i * TN + j] += ra[i] * rb[j];\n\
    \x20   }\n\
    \x20   __syncthreads();\n\
    \x20 }\n\
    \x20 for (int i = 0; i < TM; ++i)\n\
    \x20   for (int j = 0; j < TN; ++j) {\n\
    \x20     int r = r0 + tr * TM + i, c = c0 + tc * TN + j;\n\
    \x20     if (r < M && c < N) C[(size_t)r * N + c] = alpha * acc[i * TN + j] + beta * C[(size_t)r * N + c];\n\
    \x20   }\n\
    }\n";

/// The registers, shared memory and spills the lab reports for a user kernel are those of a
/// plain NVRTC build of the same file: the kernel keeps its own launch bounds and parameter
/// types, because the lab launches it itself.
#[test]
fn resources_of_a_user_kernel_equal_a_plain_nvrtc_build_of_its_file() {
    if let Err(e) = nvrtc::version() {
        panic!("{e}\nThis test needs NVRTC: run tools/install-cuda-tools.sh first.");
    }
    let dir = scratch_dir("registers");
    let cases = [
        (
            "fa_rows.cu",
            FA_STYLE,
            "fa_rows",
            "fa_rows,workload=attention,args=(Q,K,V,S,D,cdiv(S,32),32,scale,l,m,O),block=32,\
             grid=(B,H,cdiv(S,32)),smem=32*D*4",
            Shape::Attention {
                b: 4,
                h: 16,
                s: 1024,
                d: 64,
                causal: false,
            },
        ),
        (
            "tile2d.cu",
            BLOCKTILE_STYLE,
            "tile2d<128,128,8,8,8>",
            "tile2d<128,128,8,8,8>,signature=gemm-blas,block=256,grid=tile:128x128",
            Shape::square_gemm(4096),
        ),
    ];
    for (name, code, entry, options, shape) in cases {
        std::fs::write(dir.join(name), code).unwrap();
        let spec = format!("{}/{name}:{options}", dir.display());
        let specs = harness::user_kernel::specs(&[], &[spec]).unwrap();
        let users = harness::user_kernel::load_all(&specs, &[], &[], None).unwrap();
        assert!(users[0].wrapped.is_none(), "{:?}", users[0].wrapped);
        let plan = users[0].cuda(&shape).unwrap();
        let plain = kernel::CudaSource {
            cxx_entries: vec![(entry.to_string().into(), entry.to_string().into())],
            ..kernel::CudaSource::embedded("plain.cu", code)
        };
        for arch in ["sm_80", "sm_90"] {
            let lab = &harness::resources::of_plan(&plan, arch, None).unwrap()[0];
            let own = nvrtc::compile(&plain, arch).unwrap().resources[entry];
            eprintln!(
                "{name} {arch}: {} registers in the lab, {} in a plain build",
                lab.registers, own.registers
            );
            assert_eq!(
                (
                    lab.registers,
                    lab.stack_bytes,
                    lab.spill_stores,
                    lab.spill_loads
                ),
                (
                    own.registers,
                    own.stack_frame,
                    own.spill_stores,
                    own.spill_loads
                ),
                "{name} on {arch}"
            );
            assert_eq!(
                lab.smem_bytes,
                own.static_smem + plan.launches().next().unwrap().dynamic_smem
            );
        }
    }
}

/// A kernel whose sizes are `size_t` gets them as 64-bit values and is launched as it is,
/// registers and all; one whose parameters take the lab's arguments only through a conversion
/// (a `double` alpha) runs through a converting wrapper that carries the kernel's own launch
/// bounds, and says so.
#[test]
fn a_kernel_taking_size_t_gets_64_bit_sizes_and_a_double_alpha_a_wrapper() {
    let dir = scratch_dir("size_t");
    let code = "#include <cstddef>\n\
        __global__ void __launch_bounds__(128, 4) naive(const float *A, const float *B, float *C,\n\
        \x20   size_t M, size_t N, size_t K) {\n\
        \x20 size_t r = blockIdx.y, c = blockIdx.x * blockDim.x + threadIdx.x;\n\
        \x20 if (r >= M || c >= N) return;\n\
        \x20 float s = 0;\n\
        \x20 for (size_t k = 0; k < K; ++k) s += A[r * K + k] * B[k * N + c];\n\
        \x20 C[r * N + c] = s;\n\
        }\n\
        __global__ void __launch_bounds__(128, 4) scaled(int M, int N, int K, double alpha,\n\
        \x20   const float *A, const float *B, double beta, float *C) {\n\
        \x20 int r = blockIdx.y, c = blockIdx.x * blockDim.x + threadIdx.x;\n\
        \x20 if (r >= M || c >= N) return;\n\
        \x20 float s = 0;\n\
        \x20 for (int k = 0; k < K; ++k) s += A[r * K + k] * B[k * N + c];\n\
        \x20 C[r * N + c] = alpha * s + beta * C[r * N + c];\n\
        }\n";
    std::fs::write(dir.join("naive.cu"), code).unwrap();
    let specs = harness::user_kernel::specs(
        &[],
        &[
            format!(
                "{}/naive.cu:naive,block=128,grid=(cdiv(N,128),M)",
                dir.display()
            ),
            format!(
                "{}/naive.cu:scaled,signature=gemm-blas,block=128,grid=(cdiv(N,128),M)",
                dir.display()
            ),
        ],
    )
    .unwrap();
    let sim = SimDevice::new().unwrap();
    let users =
        harness::user_kernel::load_all(&specs, &["gemm".into()], &[], Some(sim.info())).unwrap();
    let shape = Shape::gemm(33, 130, 17);
    if nvrtc::version().is_ok() {
        // The sizes as the kernel reads them, the kernel itself launched.
        assert_eq!(users[0].wrapped, None);
        let plan = users[0].cuda(&shape).unwrap();
        let kernel::Step::Kernel(l) = &plan.steps[0] else {
            panic!("{plan:?}")
        };
        assert_eq!(
            l.args[3..],
            [
                kernel::Arg::I64(33),
                kernel::Arg::I64(130),
                kernel::Arg::I64(17)
            ]
        );
        assert_eq!(l.source.cxx_entries.len(), 1, "launched by its own name");
        let why = users[1].wrapped.as_deref().unwrap();
        assert!(
            why.contains("parameter 4 (alpha) takes a double, the lab passes a float"),
            "{why}"
        );
        assert!(
            users[1]
                .source()
                .code
                .contains("__launch_bounds__(128, 4) user_scaled("),
            "{}",
            users[1].source().code
        );
        assert!(users[1].info().summary.contains("converting wrapper"));
    }
    let results = sim_rows(&users, &[shape]);
    for row in &results.workloads[0].shapes[0].rows {
        assert_eq!(row.status, Status::Passed, "{row:?}");
    }
}

/// `uint32_t`, `int64_t`, `std::min` and `std::max` need no include, as under nvcc; a local
/// header is prepared like the file (its host code blanked) and its errors point at its lines.
#[test]
fn the_prelude_and_local_headers_cover_what_public_kernels_take_for_granted() {
    let dir = scratch_dir("prelude");
    std::fs::create_dir_all(dir.join("include")).unwrap();
    std::fs::write(
        dir.join("include/helpers.cuh"),
        "#pragma once\n#include <vector>\n\
         __device__ inline float load(const float *p, int64_t i) { return p[i]; }\n\
         std::vector<float> host_copy(const float *p, size_t n) { return {p, p + n}; }\n",
    )
    .unwrap();
    let code = "#include \"include/helpers.cuh\"\n\
        __global__ void mm(const float *A, const float *B, float *C, int M, int N, int K) {\n\
        \x20 const uint32_t r = blockIdx.y * blockDim.y + threadIdx.y;\n\
        \x20 const uint32_t c = blockIdx.x * blockDim.x + threadIdx.x;\n\
        \x20 if (r >= (uint32_t)std::max(M, 0) || c >= (uint32_t)std::min(N, 1 << 30)) return;\n\
        \x20 float s = 0;\n\
        \x20 for (int k = 0; k < K; ++k) s += load(A, (int64_t)r * K + k) * load(B, (int64_t)k * N + c);\n\
        \x20 C[r * N + c] = s;\n\
        }\n";
    let users = [user_file(
        &dir,
        "mm.cu",
        code,
        "mm,block=16x16,grid=tile:16x16",
    )];
    let mut compilers = vec![Compiler::Sim];
    if nvrtc::version().is_ok() {
        compilers.push(Compiler::Nvrtc("sm_80"));
    }
    for c in &compilers {
        users[0].compile_check(*c).unwrap();
    }
    let results = sim_rows(&users, &[Shape::gemm(20, 33, 7)]);
    assert_eq!(
        results.workloads[0].shapes[0].rows[0].status,
        Status::Passed
    );
    // An error in the header is reported at the header's line.
    std::fs::write(
        dir.join("include/helpers.cuh"),
        "#pragma once\n\n__device__ inline float load(const float *p, int64_t i) { return p[i] + oops; }\n",
    )
    .unwrap();
    let k = user_file(&dir, "mm.cu", code, "mm,block=16x16,grid=tile:16x16");
    for c in compilers {
        let e = k.compile_check(c).unwrap_err().to_string();
        let at = match c {
            Compiler::Sim => "include/helpers.cuh:3:",
            Compiler::Nvrtc(_) => "include/helpers.cuh(3): error",
        };
        assert!(e.contains(at) && e.contains("oops"), "{e}");
        assert!(!e.contains("kl_"), "the prepared copy's name leaked: {e}");
    }
}

/// Errors come in the order a user fixes them, each once, with exit code 2 (a run that could
/// not start): a missing entry first, listing the file's kernels; then a parameter list that
/// does not match; then the launch options.
#[test]
fn errors_come_in_the_order_a_user_fixes_them() {
    let out = scratch_dir("order");
    let out = out.to_str().unwrap();
    let run = |spec: &str| {
        harness_code(
            &[
                "run",
                "--device",
                "sim",
                "--workload",
                "gemm",
                "--kernel",
                spec,
                "--out",
                out,
            ],
            &[],
        )
    };
    let (code, text) = run("examples/gemm_blocktile.cu:sgemm_blocktil<64,64,8,8>");
    assert_eq!(code, Some(2), "{text}");
    the_guide_quotes(&lines_from(&text, "error: ", 0));
    assert!(
        text.contains(
            "examples/gemm_blocktile.cu has no kernel `sgemm_blocktil`; did you mean \
             `sgemm_blocktile`? (its kernels: sgemm_blocktile<int BM, int BN, int BK, int TM> \
             (line 18))"
        ),
        "{text}"
    );
    let (code, text) = run("examples/gemm_blocktile.cu:nothing_here");
    assert_eq!(code, Some(2), "{text}");
    assert!(
        text.contains("has no kernel `nothing_here`; its kernels: sgemm_blocktile<int BM"),
        "{text}"
    );
    // No block= and the default signature: the parameter list is reported, not block=.
    let (code, text) = run("examples/gemm_blocktile.cu:sgemm_blocktile<64,64,8,8>");
    assert_eq!(code, Some(2), "{text}");
    assert!(
        text.contains("do not match the `gemm` signature") && !text.contains("missing block"),
        "{text}"
    );
    the_guide_quotes(&lines_from(&text, "error: ", 3));
    // The right signature: now the launch options.
    let (code, text) =
        run("examples/gemm_blocktile.cu:sgemm_blocktile<64,64,8,8>,signature=gemm-blas");
    assert_eq!(code, Some(2), "{text}");
    assert!(text.contains("missing block=THREADS"), "{text}");
    the_guide_quotes(&lines_from(&text, "error: ", 0));
    let (code, text) =
        run("examples/gemm_blocktile.cu:sgemm_blocktile<64,64,8,8>,signature=gemm-blas,block=512");
    assert_eq!(code, Some(2), "{text}");
    assert!(text.contains("missing grid: grid=tile:64x64"), "{text}");
    assert!(
        !Path::new(out).join("sim").exists(),
        "a run that could not start wrote files"
    );
}

/// A compile error is shown once, before any shape runs, with the user's file and line.
#[test]
fn a_compile_error_is_reported_once_for_the_whole_run() {
    let dir = scratch_dir("once");
    std::fs::write(
        dir.join("bad.cu"),
        "__global__ void bad(const float *A, const float *B, float *C, int M, int N, int K) {\n\
         \x20 C[0] = A[0] + missing_name;\n}\n",
    )
    .unwrap();
    let spec = format!("{}/bad.cu:bad,block=64,grid=tile:64", dir.display());
    let out = dir.join("out");
    let (code, text) = harness_code(
        &[
            "run",
            "--device",
            "sim",
            "--workload",
            "gemm",
            "--sizes",
            "33x17x9,64x64x64",
            "--kernel",
            &spec,
            "--out",
            out.to_str().unwrap(),
        ],
        &[],
    );
    assert_eq!(code, Some(2), "{text}");
    assert_eq!(text.matches("could not compile").count(), 1, "{text}");
    assert!(
        text.contains("bad.cu") && text.contains("missing_name"),
        "{text}"
    );
    assert!(
        text.contains("(2)") || text.contains(":2:"),
        "line 2: {text}"
    );
}

/// A row that cannot run (here a launch the shape makes impossible) fails the run with why,
/// as a failed check does.
#[test]
fn a_row_that_could_not_run_fails_the_run_and_says_why() {
    let out = scratch_dir("unrunnable");
    let spec = GEMM_EXAMPLE.replace("grid=tile:64x64", "grid=(cdiv(N,64),M-99)");
    let (code, text) = harness_code(
        &[
            "run",
            "--device",
            "sim",
            "--workload",
            "gemm",
            "--sizes",
            "100x37x129,64x64x64",
            "--kernel",
            &spec,
            "--out",
            out.to_str().unwrap(),
        ],
        &[],
    );
    assert_eq!(code, Some(1), "{text}");
    assert!(
        text.contains("could not run: grid y = M-99 = -35 is outside 1..=65535"),
        "{text}"
    );
    // The guide shows both rows of this run: 100x37x129 leaves outputs unwritten.
    the_guide_quotes(&lines_from(&text, "1 row you asked for could not run:", 1));
    let unwritten = "  gemm 100x37x129 gemm_blocktile.cu:sgemm_blocktile<64,64,8,8>: ";
    the_guide_quotes(&lines_from(&text, unwritten, 1));
}

/// `--kernels none` runs the user's kernel alone; without one it has nothing to run. A lab
/// kernel of another workload is refused, naming its workload, before anything runs.
#[test]
fn kernel_selection_errors_name_what_to_do() {
    let out = scratch_dir("selection");
    let out = out.to_str().unwrap();
    let (code, text) = harness_code(
        &[
            "run",
            "--device",
            "sim",
            "--workload",
            "gemm",
            "--sizes",
            "33x17x9",
            "--kernels",
            "none",
            "--kernel",
            &GEMM_EXAMPLE,
            "--out",
            out,
        ],
        &[],
    );
    assert_eq!(code, Some(0), "{text}");
    assert_eq!(passing_user_rows(&text), 1, "{text}");
    assert!(!text.contains("gemm-naive"), "{text}");
    let fresh = format!("{out}-2");
    let (code, text) = harness_code(&["run", "--kernels", "none", "--out", &fresh], &[]);
    assert_eq!(code, Some(2), "{text}");
    assert!(
        text.contains("--kernels none leaves nothing to run"),
        "{text}"
    );
    the_guide_quotes(&lines_from(&text, "error: ", 0));
    let empty = scratch_dir("selection-empty");
    for device in ["cpu", "sim"] {
        let (code, text) = harness_code(
            &[
                "run",
                "--device",
                device,
                "--workload",
                "gemm",
                "--kernels",
                "conv-direct",
                "--out",
                empty.to_str().unwrap(),
            ],
            &[],
        );
        assert_eq!(code, Some(2), "{device}: {text}");
        assert!(
            text.contains(
                "conv-direct is a conv kernel, and this run's workloads are gemm: add --workload conv"
            ),
            "{device}: {text}"
        );
        the_guide_quotes(&lines_from(&text, "error: ", 0));
    }
    assert_eq!(
        std::fs::read_dir(&empty).unwrap().count(),
        0,
        "files were written"
    );
    // A user kernel of another workload than --workload's.
    let (code, text) = harness_code(
        &[
            "run",
            "--device",
            "sim",
            "--workload",
            "gemm",
            "--kernel",
            &format!("{},workload=attention", *ATTENTION_EXAMPLE),
            "--out",
            &format!("{out}-3"),
        ],
        &[],
    );
    assert_eq!(code, Some(2), "{text}");
    assert!(text.contains("it computes attention"), "{text}");
}

/// The simulator never shows a speed, and its rows carry NVRTC's registers and shared memory.
#[test]
fn simulator_rows_show_resources_and_no_speed() {
    let out = scratch_dir("sim-table");
    let (code, text) = harness_code(
        &[
            "run",
            "--device",
            "sim",
            "--workload",
            "gemm",
            "--sizes",
            "33x17x9",
            "--kernels",
            "gemm-naive,gemm-tiled",
            "--out",
            out.to_str().unwrap(),
        ],
        &[],
    );
    assert_eq!(code, Some(0), "{text}");
    for speed in ["median ms", "GFLOP/s", "vs prev", "throughput"] {
        assert!(!text.contains(speed), "{speed} in {text}");
    }
    let lines: Vec<&str> = text.lines().collect();
    let at = lines
        .iter()
        .position(|l| l.contains("gemm-tiled"))
        .unwrap_or_else(|| panic!("no gemm-tiled row: {text}"));
    let row = lines[at];
    let header = lines[..at]
        .iter()
        .rev()
        .find(|l| l.contains("kernel") && l.contains("status"))
        .unwrap_or_else(|| panic!("no header above the row: {text}"));
    assert!(row.trim_end().ends_with("pass"), "{row}");
    if nvrtc::version().is_ok() {
        // Numbers are right-aligned under their header: the cell of a column ends where its
        // name does. Registers and shared memory (the tiles of A and B) are there.
        let cell = |name: &str| {
            let end = header
                .find(name)
                .unwrap_or_else(|| panic!("{name}: {header}"))
                + name.len();
            row[..end]
                .split_whitespace()
                .last()
                .unwrap_or_default()
                .to_string()
        };
        assert!(
            cell("regs").parse::<u32>().is_ok_and(|r| r > 0),
            "{header}\n{row}"
        );
        assert!(
            cell("smem B").parse::<u32>().is_ok_and(|b| b > 0),
            "{header}\n{row}"
        );
        assert!(cell("traffic").contains('B'), "{header}\n{row}");
    }
}

/// A wrong or missing CUDA installation is explained, in `doctor` and in a run's first line.
#[test]
fn a_cuda_home_that_does_not_exist_is_reported() {
    let (code, text) = harness_code(&["doctor"], &[("CUDA_HOME", "/opt/cuda-typo")]);
    assert_eq!(code, Some(0), "{text}");
    assert!(
        text.contains(
            "ignored:            CUDA_HOME=/opt/cuda-typo is not a folder; it is ignored"
        ),
        "{text}"
    );
    the_guide_quotes(&lines_from(&text, "ignored: ", 0));
    // A copy of the binary away from the repository finds no NVRTC where none is installed:
    // its rows say why they have no registers.
    let away = scratch_dir("no-nvrtc");
    let exe = away.join("harness");
    std::fs::copy(env!("CARGO_BIN_EXE_harness"), &exe).unwrap();
    std::fs::write(away.join("k.cu"), "__global__ void k(const float *A, const float *B, float *C, int M, int N, int K) {\n  int i = blockIdx.x * blockDim.x + threadIdx.x;\n  if (i < M * N) { float s = 0; for (int k = 0; k < K; ++k) s += A[i / N * K + k] * B[k * N + i % N]; C[i] = s; }\n}\n").unwrap();
    let o = Command::new(&exe)
        .current_dir(&away)
        .args([
            "run",
            "--device",
            "sim",
            "--workload",
            "gemm",
            "--sizes",
            "9x7x5",
            "--kernel",
            "k.cu:k,block=64,grid=tile:64",
            "--out",
            "out",
        ])
        .env("CUDA_HOME", "/opt/cuda-typo")
        .env_remove("LD_LIBRARY_PATH")
        .env_remove("LAB_CUDA_TOOLS")
        .output()
        .unwrap();
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    );
    if text.contains("with registers and shared memory from NVRTC") {
        eprintln!("skipped: this machine has NVRTC installed outside the repository");
        return;
    }
    assert!(o.status.success(), "{text}");
    assert!(
        text.contains("no registers or shared memory: NVRTC unavailable")
            && text.contains("CUDA_HOME=/opt/cuda-typo is not a folder"),
        "{text}"
    );
    assert_eq!(passing_user_rows(&text), 1, "{text}");
}

/// A shape too large for this machine's memory is refused before anything is allocated, with
/// the bytes it needs; the process does not abort.
#[test]
fn a_shape_too_large_for_memory_is_refused_with_its_size() {
    let shape = Shape::square_gemm(46000);
    let need = harness::footprint::host_bytes(&shape, &Config::defaults());
    if harness::footprint::available().is_none_or(|a| a >= need) {
        eprintln!("skipped: this machine has room for {need} bytes");
        return;
    }
    let out = scratch_dir("too-big");
    let (code, text) = harness_code(
        &[
            "run",
            "--device",
            "cpu",
            "--workload",
            "gemm",
            "--sizes",
            "46000",
            "--kernels",
            "gemm-naive",
            "--out",
            out.to_str().unwrap(),
        ],
        &[],
    );
    assert_eq!(code, Some(2), "{text}");
    assert!(
        text.contains(&format!(
            "gemm 46000x46000x46000 needs about {:.1} GB ({need} bytes) of host memory",
            need as f64 / 1e9
        )),
        "{text}"
    );
    // What is available differs from machine to machine; the guide quotes the rest.
    the_guide_quotes(span(&text, "error: gemm 46000", "or in the CPU port);"));
    assert!(
        !text.contains("panicked") && !text.contains("memory allocation of"),
        "{text}"
    );
    assert_eq!(
        std::fs::read_dir(&out).unwrap().count(),
        0,
        "files were written"
    );
}

/// `inspect FILE.cu` names kernels as written, adds `--smem` to their shared memory and prints
/// the rungs' columns; `inspect --kernel` evaluates `smem=` at the shape it states.
#[test]
fn inspect_names_kernels_and_counts_dynamic_shared_memory() {
    if let Err(e) = nvrtc::version() {
        panic!("{e}\nThis test needs NVRTC: run tools/install-cuda-tools.sh first.");
    }
    let dir = scratch_dir("inspect-names");
    std::fs::write(
        dir.join("two.cu"),
        "namespace ops { __global__ void scale(float *x, int n) { extern __shared__ float s[]; \
         s[threadIdx.x] = x[threadIdx.x]; __syncthreads(); if (threadIdx.x < n) x[threadIdx.x] = 2 * s[threadIdx.x]; } }\n\
         template <int T> __global__ void tiled(float *x) { x[T] = 0; }\n",
    )
    .unwrap();
    let file = dir.join("two.cu");
    let (ok, text) = harness(&[
        "inspect",
        file.to_str().unwrap(),
        "--arch",
        "sm_80",
        "--block",
        "128",
        "--smem",
        "4096",
    ]);
    assert!(ok, "{text}");
    let header = text.lines().next().unwrap();
    for col in [
        "kernel",
        "arch",
        "threads",
        "regs",
        "smem B",
        "stack",
        "spill st/ld",
        "occupancy",
    ] {
        assert!(header.contains(col), "{header}");
    }
    let row = text
        .lines()
        .find(|l| l.starts_with("ops::scale"))
        .unwrap_or_default();
    let cells: Vec<&str> = row.split_whitespace().collect();
    assert_eq!(
        (cells.get(1), cells.get(2)),
        (Some(&"sm_80"), Some(&"128")),
        "{text}"
    );
    assert_eq!(cells.get(4), Some(&"4096"), "{text}");
    assert!(!text.contains("_Z"), "mangled names: {text}");
    assert!(
        text.contains("tiled<int T>: a template has no code until it is instantiated"),
        "{text}"
    );
    let (ok, text) = harness(&[
        "inspect",
        "--arch",
        "sm_80",
        "--kernel",
        ATTENTION_EXAMPLE
            .replace("block=32", "workload=attention,block=32")
            .as_str(),
    ]);
    assert!(ok, "{text}");
    // smem = 2*32*D*4 at D = 64.
    assert!(text.contains(" 16384 "), "{text}");
    assert!(
        text.contains("(attention 4x16x1024x64, dynamic shared memory 2*32*D*4"),
        "{text}"
    );
    // At a shape of --sizes (a kernel written for D = 128): smem = 2*32*128*4.
    let attention = ATTENTION_EXAMPLE.replace("block=32", "workload=attention,block=32");
    let (ok, text) = harness(&[
        "inspect",
        "--arch",
        "sm_80",
        "--kernel",
        &attention,
        "--sizes",
        "100x37x129,1x8x1024x128",
    ]);
    assert!(ok, "{text}");
    assert!(
        text.contains(" 32768 ")
            && text
                .contains("(attention 1x8x1024x128, dynamic shared memory 2*32*D*4: from --sizes)"),
        "{text}"
    );
    let (ok, text) = harness(&["inspect", "--kernel", &attention, "--sizes", "100x37x129"]);
    assert!(
        !ok && text.contains("--sizes: none of 100x37x129 reads as a shape of attention"),
        "{text}"
    );
    // A file of Hopper alone (here its clusters) is compiled for sm_90a, and said so for sm_80.
    std::fs::write(
        dir.join("pairs.cu"),
        "__global__ void __cluster_dims__(2, 1, 1) pairs(float *x) { x[blockIdx.x] = 1.f; }\n",
    )
    .unwrap();
    let (ok, text) = harness(&["inspect", dir.join("pairs.cu").to_str().unwrap()]);
    assert!(
        ok && text.contains("is compiled for sm_90a only")
            && text
                .lines()
                .any(|l| l.starts_with("pairs") && l.contains("sm_90a")),
        "{text}"
    );
}

#[test]
fn a_kernel_for_a_whole_network_is_refused_with_what_to_bring_instead() {
    let dir = scratch_dir("network");
    let file = dir.join("scale.cu");
    let code = "__global__ void scale(const float *x, float *y, int n) {\n\
        \x20   int i = blockIdx.x * blockDim.x + threadIdx.x;\n\
        \x20   if (i < n) y[i] = 2.0f * x[i];\n}\n";
    std::fs::write(&file, code).unwrap();
    let spec = format!("{}:scale", file.display());
    let specs = harness::user_kernel::specs(&[], &[spec]).unwrap();
    let e = harness::user_kernel::load_all(&specs, &["encoder".to_string()], &[], None)
        .unwrap_err()
        .to_string();
    assert!(e.contains("whole network") && e.contains("gemm"), "{e}");
}

/// `examples/sgemm_splitk_grid.cu` needs its cooperative launch, and every block at its
/// grid.sync(): each way of breaking that fails the row with its reason, where a GPU would
/// hang, refuse the launch or add partials not yet written.
#[test]
fn a_grid_sync_kernel_needs_its_cooperative_launch_and_every_block_at_the_barrier() {
    let dir = scratch_dir("grid-sync");
    let spec = SPLITK_GRID_EXAMPLE.as_str();
    let why_of = |spec: &str, run: &str| {
        let (ok, text) = sim_run("gemm", "100x37x129", spec, &dir.join(run));
        assert!(!ok, "{text}");
        // Its grid is 2*SMS: the run says what SMS stood for.
        assert!(text.contains("SMS is 8 here"), "{text}");
        // The row's line and the one after it, where a hint would be.
        let lines: Vec<&str> = text.lines().collect();
        let at = lines
            .iter()
            .position(|l| l.starts_with("  gemm 100x37x129 ") && l.contains("sgemm_splitk_grid: "))
            .unwrap_or_else(|| panic!("{text}"));
        lines[at..lines.len().min(at + 2)].join("\n")
    };
    let plain = why_of(&spec.replace(",launch=cooperative", ""), "plain");
    assert!(
        plain.contains("grid_group::sync() needs a cooperative launch")
            && plain.contains("launch=cooperative"),
        "{plain}"
    );
    // Not a tail's doing: no hint follows it.
    assert!(!plain.contains("multiple of"), "{plain}");
    // SMS is the simulator's 8: 1600 blocks.
    let wide = why_of(&spec.replace("grid=2*SMS", "grid=200*SMS"), "wide");
    // Declined, as a GPU declines a grid its SMs cannot hold at once: the row could not run.
    assert!(
        wide.contains(
            "sgemm_splitk_grid: could not run: sgemm_splitk_grid: a cooperative launch \
             needs all 1600 blocks resident at once"
        ),
        "{wide}"
    );
    let unsynced = why_of(
        &example_variant(&dir, spec, "  grid.sync();", "  // no barrier"),
        "unsynced",
    );
    // Whichever pair the checker meets first: two blocks, or two threads of one block (a
    // block reads in phase 2 what another of its threads wrote in phase 1).
    assert!(
        unsynced.contains("race on global memory")
            && unsynced.contains("'zeros(4*4*M*N)'")
            && (unsynced.contains("nothing orders the two blocks")
                || unsynced.contains("with no __syncthreads()")),
        "{unsynced}"
    );
    let deserter = why_of(
        &example_variant(
            &dir,
            spec,
            "  grid.sync();",
            "  if (blockIdx.x == 7) return;\n  grid.sync();",
        ),
        "deserter",
    );
    assert!(
        deserter.contains("grid.sync(): 1 of the grid's 16 blocks exited without arriving"),
        "{deserter}"
    );
}

#[test]
fn an_access_past_a_local_array_of_a_users_kernel_is_shown_at_its_line() {
    let dir = scratch_dir("local-array");
    let file = dir.join("window.cu");
    std::fs::write(
        &file,
        "__global__ void add1(const float *X, float *Y, int M, int N) {\n\
         \x20   int i = blockIdx.x * blockDim.x + threadIdx.x;\n\
         \x20   float w[4];\n\
         \x20   for (int k = 0; k < 4; ++k) w[k] = X[(i + k) % (M * N)];\n\
         \x20   if (i < M * N) Y[i] = w[i % 5] + 1;  // BUG: i % 5 reaches 4\n\
         }\n",
    )
    .unwrap();
    let spec = format!(
        "{}:add1,block=256,grid=cdiv(M*N,256),args=(X,Y,M,N)",
        file.display()
    );
    let run = |spec: &str, out: &str| {
        let out = dir.join(out);
        let args = [
            "run",
            "--device",
            "sim",
            "--workload",
            "eltwise",
            "--sizes",
            "4x8",
        ];
        harness_code(
            &[
                &args[..],
                &["--kernel", spec, "--out", out.to_str().unwrap()],
            ]
            .concat(),
            &[],
        )
    };
    let (code, text) = run(&spec, "run");
    assert_eq!(code, Some(1), "{text}");
    assert!(
        text.contains(&format!(
            "{}:5: index 4 is outside the array `w` (of type 'float [4]'), in \
             `if (i < M * N) Y[i] = w[i % 5] + 1;  // BUG: i % 5 reaches 4`",
            file.display()
        )),
        "{text}"
    );
    // Through a helper's pointer: the array's size is known once the call is inlined
    // (the example the guide shows).
    let spec = "examples/window_overrun.cu:sum4,block=256,grid=cdiv(M*N,256),args=(X,Y,M,N)";
    let (code, text) = run(spec, "run2");
    assert_eq!(code, Some(1), "{text}");
    assert!(
        text.contains(
            "examples/window_overrun.cu:12: a write of 'float' to `vals[r][c]` goes past the end \
             of the array or variable its pointer points into, in `for (int c = 0; c < WIDTH; \
             ++c) vals[r][c] = x[(i + r * WIDTH + c) % n];`"
        ),
        "{text}"
    );
    // The flat grid tiles M*N, not M and N each.
    assert!(
        text.contains("M*N = 32 is not a multiple of 256 (grid x = cdiv(M*N,256))"),
        "{text}"
    );
    std::fs::remove_dir_all(&dir).unwrap();
}

/// A kernel specialized by `define=` that compiles only at the sizes it is written for is
/// compiled first at the first size asked for, not at the workload's probe shape, where its
/// array would have no elements.
#[test]
fn a_kernel_specialized_for_its_sizes_is_compiled_first_at_the_sizes_asked_for() {
    let dir = scratch_dir("probe-at");
    let code = "template <int W>\n\
        __global__ void wide_rows(const float *X, float *Y, int M, int N) {\n\
        \x20 __shared__ float row[W - 100];  // rows of more than 100 only\n\
        \x20 const float *x = X + blockIdx.x * N;\n\
        \x20 float m = x[0], s = 0.0f;\n\
        \x20 for (int i = 0; i < N; ++i) m = fmaxf(m, x[i]);\n\
        \x20 for (int i = 0; i < N; ++i) s += expf(x[i] - m);\n\
        \x20 row[0] = s;\n\
        \x20 for (int i = 0; i < N; ++i) Y[blockIdx.x * N + i] = expf(x[i] - m) / row[0];\n\
        }\n";
    std::fs::write(dir.join("wide.cu"), code).unwrap();
    let spec = format!(
        "{}:wide_rows<H>,define=H=N,block=1,grid=(M)",
        dir.join("wide.cu").display()
    );
    let check = |sizes: &str| sim_check("softmax", sizes, &spec);
    let (ok, text) = check("3x128");
    assert!(ok && text.contains("1 passed, 0 failed"), "{text}");
    // Where it cannot compile, it says so with the defines of that size.
    let (ok, text) = check("3x64");
    assert!(!ok && text.contains("wide.cu [H=64]"), "{text}");
    // A dimension itself as the template argument is told to go through define=.
    if nvrtc::version().is_ok() {
        let (ok, text) = sim_check(
            "softmax",
            "3x128",
            &format!(
                "{}:wide_rows<N>,block=1,grid=(M)",
                dir.join("wide.cu").display()
            ),
        );
        assert!(
            !ok && text.contains(
                "the entry's template argument N is a dimension of the shape, which the kernel \
                 only gets at run time; a template argument is fixed when the kernel is \
                 compiled: give it a name of your own with define=, as \
                 `wide_rows<..H..>,define=H=N`"
            ),
            "{text}"
        );
    }
}

/// Parallel split-K in two launches (`examples/sgemm_splitk_reduce.cu`): the partials go
/// through a `scratch()` workspace that starts as NaN, so a reduction reading a slice no
/// launch wrote fails, saying so; and the launches share one module, so a `__device__`
/// variable the first kernel sets is what the second reads.
#[test]
fn the_launches_of_a_plan_share_their_workspaces_and_their_module() {
    let dir = scratch_dir("then");
    let spec = example("sgemm_splitk_reduce.cu");
    // Three slices written, four added: the fourth plane holds the NaN it started as.
    let four = spec
        .replace("scratch(P,4*3*M*N)", "scratch(P,4*4*M*N)")
        .replace("args=(P,C,M*N,3)", "args=(P,C,M*N,4)");
    assert_ne!(four, spec);
    let (ok, text) = sim_run("gemm", "64x64x64", &four, &dir.join("unwritten"));
    assert!(!ok, "{text}");
    assert!(
        text.contains("4096 of 4096 elements are NaN or infinite, all of them the NaN")
            && text.contains("a scratch() workspace starts as NaN too"),
        "{text}"
    );
    the_guide_quotes(&lines_from(
        &text,
        "  a scratch() workspace starts as NaN too",
        0,
    ));
    // A launch after the first that is missing its grid is told which launch.
    let no_grid = spec.replace(",grid=(cdiv(M*N,256))", "");
    let (ok, text) = sim_run("gemm", "64x64x64", &no_grid, &dir.join("no-grid"));
    assert!(
        !ok && text.contains("then=splitk_reduce: missing grid"),
        "{text}"
    );
    let missing = spec.replace("then=splitk_reduce", "then=splitk_reduc");
    let (ok, text) = sim_run("gemm", "64x64x64", &missing, &dir.join("missing"));
    assert!(
        !ok && text.contains("then=splitk_reduc: ") && text.contains("splitk_reduce"),
        "the kernels of the file are listed: {text}"
    );
    // One module: `half` is set by the first launch and read by the second.
    let file = dir.join("two_kernels.cu");
    std::fs::write(
        &file,
        r#"__device__ float half_of;

__global__ void product_twice(const float *A, const float *B, float *P, int M, int N, int K) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i == 0) half_of = 0.5f;
  if (i >= M * N) return;
  float acc = 0.f;
  for (int k = 0; k < K; ++k) acc += A[i / N * K + k] * B[k * N + i % N];
  P[i] = 2.f * acc;
}

__global__ void scale(const float *P, float *C, int n) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) C[i] = half_of * P[i];
}

__global__ void scale_unguarded(const float *P, float *C) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  C[i] = half_of * P[i];
}
"#,
    )
    .unwrap();
    let spec = format!(
        "{}:product_twice,block=128,grid=(cdiv(M*N,128)),args=(A,B,scratch(P,4*M*N),M,N,K),\
         then=scale,block=128,grid=(cdiv(M*N,128)),args=(P,C,M*N)",
        file.display()
    );
    let (ok, text) = sim_run("gemm", "33x17x9,64x64x64", &spec, &dir.join("module"));
    assert!(ok, "{text}");
    assert_eq!(passing_user_rows(&text), 2, "{text}");
    // The run records the spec, then= and all, and its summary names both launches.
    let json = std::fs::read_to_string(dir.join("module/results.json")).unwrap();
    assert!(
        json.contains("your kernel, then `scale` (`args=(P,C,M*N)`)"),
        "{json}"
    );
    // A launch after the first with a tail is the one the hint names, with its own grid.
    let unguarded = spec
        .replace("then=scale,", "then=scale_unguarded,")
        .replace("args=(P,C,M*N)", "args=(P,C)");
    let (ok, text) = sim_run("gemm", "33x17x9", &unguarded, &dir.join("tail"));
    assert!(
        !ok && text.contains(
            "scale_unguarded: M*N = 561 is not a multiple of 128 (grid x = cdiv(M*N,128))"
        ),
        "{text}"
    );
}

/// A layer normalization taking one scale and one shift (`examples/layernorm_scalar_affine.cu`)
/// passes with `input=`, which fills gamma and beta with its numbers for the reference too.
/// Without it the row fails, saying which inputs the kernel is never given and how to give a
/// number for one; a number in `input=` other than the kernel's fails the check.
#[test]
fn a_kernel_taking_one_number_for_an_input_is_checked_with_the_input_filled_with_it() {
    let dir = scratch_dir("input");
    let spec = example("layernorm_scalar_affine.cu");
    let bare = spec.replace(",input=gamma:1.5,input=beta:-0.25", "");
    assert_ne!(bare, spec);
    // Its row says what it is checked against: not the table's reference.
    let summary = load(&spec, Workload::Layernorm).info().summary;
    assert!(
        summary.contains("checked against the f64 result of the inputs `input=` fixes"),
        "{summary}"
    );
    let (ok, text) = sim_run("layernorm", "3x256", &bare, &dir.join("bare"));
    assert!(
        !ok && text.contains("the kernel is given no gamma or beta")
            && text.contains("the same with input=gamma:VALUE, which fills the input with it"),
        "{text}"
    );
    let bias = spec.replace("input=beta", "input=bias");
    let (ok, text) = sim_run("layernorm", "3x256", &bias, &dir.join("bias"));
    assert!(
        !ok && text.contains("input=bias: bias is not an input of layernorm (X, gamma, beta)"),
        "{text}"
    );
    let other = spec.replace("input=gamma:1.5", "input=gamma:2");
    let (ok, text) = sim_run("layernorm", "3x256", &other, &dir.join("other"));
    assert!(!ok && text.contains("above the fp32 bound"), "{text}");
}

/// A sum of one launch whose blocks each write a partial sum to y[blockIdx.x] writes past
/// the one number y holds: it is told to launch the kernel again on a workspace of them, and
/// passes when it does as told.
#[test]
fn a_sum_leaving_a_partial_sum_per_block_is_told_to_launch_again() {
    let dir = scratch_dir("block-sums");
    let file = dir.join("block_sums.cu");
    std::fs::write(
        &file,
        r#"__global__ void block_sums(const float *x, float *y, int n) {
  __shared__ float s[256];
  const unsigned t = threadIdx.x, i = blockIdx.x * 256 + t;
  s[t] = i < (unsigned)n ? x[i] : 0.0f;
  __syncthreads();
  for (unsigned k = 128; k > 0; k /= 2) {
    if (t < k) s[t] += s[t + k];
    __syncthreads();
  }
  if (t == 0) y[blockIdx.x] = s[0];
}
"#,
    )
    .unwrap();
    let once = format!("{}:block_sums,block=256,grid=(cdiv(N,256))", file.display());
    let (ok, text) = sim_run("reduce", "1000", &once, &dir.join("once"));
    assert!(!ok, "{text}");
    let told = "args=(x,scratch(part,4*cdiv(N,256)),N),then=block_sums,grid=1,\
                args=(part,y,cdiv(N,256))";
    assert!(
        text.contains("y holds one number, the sum") && text.contains(told),
        "{text}"
    );
    assert!(
        !text.contains("is not a multiple of 256"),
        "no tail hint: {text}"
    );
    let twice = format!(
        "{}:block_sums,block=256,grid=(cdiv(N,256)),args=(x,scratch(part,4*cdiv(N,256)),N),\
         then=block_sums,block=256,grid=1,args=(part,y,cdiv(N,256))",
        file.display()
    );
    let (ok, text) = sim_run("reduce", "1000,65536", &twice, &dir.join("twice"));
    assert!(ok, "{text}");
    // A cooperative kernel that adds the partial sums itself after grid.sync(): a second
    // launch would count the sum twice, so it is told to run as one block.
    let file = dir.join("grid_sum.cu");
    std::fs::write(
        &file,
        r#"#include <cooperative_groups.h>
namespace cg = cooperative_groups;
__global__ void grid_sum(const float *x, float *y, int n) {
  __shared__ float s[256];
  const unsigned t = threadIdx.x;
  float v = 0.0f;
  for (unsigned i = blockIdx.x * 256 + t; i < (unsigned)n; i += gridDim.x * 256) v += x[i];
  s[t] = v;
  __syncthreads();
  for (unsigned k = 128; k > 0; k /= 2) {
    if (t < k) s[t] += s[t + k];
    __syncthreads();
  }
  if (t == 0) y[blockIdx.x] = s[0];
  cg::this_grid().sync();
  if (blockIdx.x == 0 && t == 0)
    for (unsigned b = 1; b < gridDim.x; ++b) y[0] += y[b];
}
"#,
    )
    .unwrap();
    let spread = format!(
        "{}:grid_sum,block=256,grid=4,launch=cooperative",
        file.display()
    );
    let (ok, text) = sim_run("reduce", "1000", &spread, &dir.join("spread"));
    assert!(
        !ok && text.contains("after its grid.sync(), adds them into y[0]")
            && text.contains("run it with grid=1")
            && !text.contains("then="),
        "{text}"
    );
    let (ok, text) = sim_run(
        "reduce",
        "1000,65536",
        &spread.replace("grid=4", "grid=1"),
        &dir.join("one"),
    );
    assert!(ok, "{text}");
}

/// A Hopper instruction behind `#if __CUDA_ARCH__ >= 90` (900 was meant: the test holds on
/// sm_80 too) makes ptxas refuse the file's sm_80 build. The kernel is then compiled for
/// sm_90a alone, as an H100 compiles it, runs, and its row says why, naming the test.
#[test]
fn a_file_ptxas_refuses_for_sm_80_is_compiled_for_sm_90a_and_says_why() {
    if let Err(e) = nvrtc::version() {
        panic!("{e}\nThis test needs NVRTC: run tools/install-cuda-tools.sh first.");
    }
    let dir = scratch_dir("arch-slip");
    let file = dir.join("elect_sum.cu");
    std::fs::write(
        &file,
        r#"__device__ __forceinline__ bool leader() {
#if __CUDA_ARCH__ >= 90
  unsigned p;
  asm volatile("{\n .reg .pred e;\n elect.sync _|e, 0xffffffff;\n selp.u32 %0, 1, 0, e;\n}" : "=r"(p));
  return p != 0;
#else
  return threadIdx.x % 32 == 0;
#endif
}
__global__ void elect_sum(const float *x, float *y, int n) {
  float v = 0.0f;
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) v += x[i];
  for (int o = 16; o > 0; o /= 2) v += __shfl_xor_sync(0xffffffffu, v, o);
  if (leader()) atomicAdd(y, v);
}
"#,
    )
    .unwrap();
    let spec = format!(
        "{}:elect_sum,block=256,grid=(8),output=zero",
        file.display()
    );
    let (ok, text) = sim_run("reduce", "70001", &spec, &dir.join("run"));
    assert!(ok, "{text}");
    assert_eq!(passing_user_rows(&text), 1, "{text}");
    let json = std::fs::read_to_string(dir.join("run/results.json")).unwrap();
    assert!(
        json.contains("compiled for sm_90a alone: for sm_80, ptxas says")
            && json.contains("requires .target sm_90")
            && json.contains("elect_sum.cu:2: `__CUDA_ARCH__ >= 90`"),
        "{json}"
    );
    // `inspect` of the file reports sm_90 and says why sm_80 is not built.
    let (ok, text) = harness(&["inspect", file.to_str().unwrap()]);
    assert!(
        text.contains("sm_80   not built: ptxas says") && text.contains("elect_sum sm_90"),
        "{ok} {text}"
    );
}

/// FP8 inputs (`examples/fp8_gemm_nt.cu`): the lab rounds the inputs to the kernel's format
/// and checks against a reference of those values, so the E5M2 twin of the example passes too
/// (against the unrounded inputs its error would be about 10%, past any bound), while a kernel
/// that skips the last product of each sum fails.
#[test]
fn fp8_inputs_are_checked_against_a_reference_of_the_fp8_values() {
    let dir = scratch_dir("fp8");
    let spec = example("fp8_gemm_nt.cu");
    let e5m2 = example_variant(&dir, &spec, "e4m3", "e5m2").replace("dtype=e4m3", "dtype=e5m2");
    let (ok, text) = sim_run("gemm", "100x37x129,64x64x64", &e5m2, &dir.join("e5m2"));
    assert!(ok, "{text}");
    assert_eq!(passing_user_rows(&text), 2, "{text}");
    let json = std::fs::read_to_string(dir.join("e5m2/results.json")).unwrap();
    assert!(
        json.contains("\"precision\": \"fp8\"")
            && json.contains("A:e5m2, B:e5m2 column-major, C:bf16")
            && json.contains("checked against the f64 result of its inputs rounded to FP8"),
        "{json}"
    );
    let short = example_variant(&dir, &spec, "for (; k < K; ++k)", "for (; k < K - 1; ++k)");
    let (ok, text) = sim_run("gemm", "100x37x129", &short, &dir.join("short"));
    assert!(!ok && text.contains("above the fp8 bound"), "{text}");
    // An FP8 output is refused, saying what to write.
    let (ok, text) = sim_run(
        "gemm",
        "64x64x64",
        &spec.replace("dtype=e4m3,C:bf16", "dtype=e4m3"),
        &dir.join("fp8-out"),
    );
    assert!(
        !ok && text.contains("FP8 is for inputs: give C a wider type"),
        "{text}"
    );
}

/// Above 150 GFLOP on a GPU a GEMM's reference is cuBLAS's, whole, too large to work out
/// again on the CPU for a kernel that reads inputs of its own (FP8): such a kernel is checked
/// at the reference's random picks, its own f64 reference computed there alone, while every
/// other row is checked whole. Here the simulator stands in for the GPU, and the f64 result
/// of the unrounded inputs for cuBLAS's.
#[test]
fn an_fp8_kernel_beside_a_library_reference_is_checked_at_a_sample_of_its_own() {
    let dir = scratch_dir("fp8-picks");
    let dev = SimDevice::new().expect("the simulator needs a host C++ compiler (g++)");
    let config = Config::defaults();
    let shape = Shape::gemm(100, 37, 129);
    let x = harness::inputs::random_inputs(&shape, config.seed);
    let picks = kernel::reference::pick(&shape, 64, config.seed);
    let library = harness::run::Reference {
        values: harness::reference::reference(&shape, &x),
        indices: None,
        label: "a library's".into(),
        own_picks: Some(picks.clone()),
    };
    let row = |k: &dyn Kernel| {
        let own = k.device_inputs(&shape, &x);
        harness::run::evaluate(&dev, k, &shape, own.as_deref().unwrap_or(&x), &x, &library).0
    };
    let spec = example("fp8_gemm_nt.cu");
    let fp8 = row(&load(&spec, Workload::Gemm));
    let check = fp8.check.as_ref().unwrap();
    assert!(
        fp8.passed() && check.sampled == Some(picks.len()),
        "{fp8:?}"
    );
    let short = example_variant(&dir, &spec, "for (; k < K; ++k)", "for (; k < K - 1; ++k)");
    let short = row(&load(&short, Workload::Gemm));
    assert_eq!(short.status, Status::Failed, "{short:?}");
    let plain = row(&load(&example("sgemm_guarded_ptx.cu"), Workload::Gemm));
    assert!(plain.passed() && plain.check.unwrap().sampled.is_none());
}

/// A transpose kernel takes the `transpose` signature by default; its PyTorch bindings,
/// defined by a macro and called at file scope without semicolons, are left out as host code.
/// One whose bounds check tests the element it reads, not the one it writes, passes on whole
/// tiles and writes out of bounds on a tail, the simulator naming the line. (The barrier inside
/// the check is no deadlock: the threads past the edge exit, which releases it, as on a GPU.)
#[test]
fn a_transpose_with_torch_bindings_runs_and_its_unguarded_write_is_named() {
    let dir = scratch_dir("transpose");
    let code = r#"#include <torch/extension.h>
#define TILE 16
__global__ void transpose_tiled(float *x, float *y, const int row, const int col) {
  __shared__ float tile[TILE][TILE + 1];
  const int c = blockIdx.x * TILE + threadIdx.x, r = blockIdx.y * TILE + threadIdx.y;
  if (r < row && c < col) {
    tile[threadIdx.y][threadIdx.x] = x[r * col + c];
    __syncthreads();
    const int oc = blockIdx.y * TILE + threadIdx.x, orow = blockIdx.x * TILE + threadIdx.y;
    y[orow * row + oc] = tile[threadIdx.x][threadIdx.y];
  }
}
#define BINDING(tag)                                         \
  void run_##tag(torch::Tensor x, torch::Tensor y) {         \
    throw std::runtime_error("host code: " #tag);            \
  }
BINDING(tiled)
BINDING(again)
"#;
    std::fs::write(dir.join("transpose_tiled.cu"), code).unwrap();
    let k = load(
        &format!(
            "{}/transpose_tiled.cu:transpose_tiled,block=16x16,grid=(cdiv(N,16),cdiv(M,16))",
            dir.display()
        ),
        Workload::Transpose,
    );
    let results = sim_rows(
        &[k],
        &[
            Shape::Transpose { m: 64, n: 32 },
            Shape::Transpose { m: 33, n: 20 },
        ],
    );
    let rows: Vec<_> = results.workloads[0]
        .shapes
        .iter()
        .map(|s| &s.rows[0])
        .collect();
    assert!(rows[0].passed(), "{:?}", rows[0]);
    let why = rows[1].reason.as_deref().unwrap_or_default();
    assert!(
        rows[1].status == Status::Error
            && why.contains("out-of-bounds write past the end of buffer 'Y'")
            && why.contains("transpose_tiled.cu:10"),
        "{why}"
    );
}

/// A kernel of `int` data (`dtype=i32`) gets even integers, and is checked against the f64
/// result of those: a transpose of them, and a GEMM whose integer sums are exact; a kernel
/// that leaves an element unwritten shows it, the all-ones poison being no right answer. An
/// int8 GEMM on the tensor cores (`dtype=s8,C:i32`, `mma.sync` on `.s8`) is exact too.
#[test]
fn integer_kernels_are_given_integers_and_checked_against_their_result() {
    let dir = scratch_dir("i32");
    let code = r#"__global__ void transpose_int(const int *x, int *y, int M, int N) {
  const int i = blockIdx.y * 16 + threadIdx.y, j = blockIdx.x * 16 + threadIdx.x;
  if (i < M && j < N) y[j * M + i] = x[i * N + j];
}
__global__ void gemm_int(const int *A, const int *B, int *C, int M, int N, int K) {
  const int r = blockIdx.y * 16 + threadIdx.y, c = blockIdx.x * 16 + threadIdx.x;
  if (r >= M || c >= N) return;
  int acc = 0;
  for (int k = 0; k < K; ++k) acc += A[r * K + k] * B[k * N + c];
  C[r * N + c] = acc;
}
"#;
    std::fs::write(dir.join("ints.cu"), code).unwrap();
    let short_code = code.replace("if (i < M && j < N)", "if (i < M && j < N && i + j > 0)");
    std::fs::write(dir.join("short.cu"), short_code).unwrap();
    // X's columns across the grid: tile:16x16 would lay the grid over Y's.
    let spec = |file: &str, entry: &str| {
        format!(
            "{}/{file}:{entry},dtype=i32,block=16x16,grid=(cdiv(N,16),cdiv(M,16))",
            dir.display()
        )
    };
    let transpose = load(&spec("ints.cu", "transpose_int"), Workload::Transpose);
    assert!(
        transpose.info().summary.contains(
            "X:i32, Y:i32), your kernel, checked against the f64 result of its integer inputs"
        ),
        "{}",
        transpose.info().summary
    );
    let gemm = load(&spec("ints.cu", "gemm_int"), Workload::Gemm);
    let short = load(&spec("short.cu", "transpose_int"), Workload::Transpose);
    let rows = |k: UserKernel, shape: Shape| {
        sim_rows(&[k], &[shape]).workloads[0].shapes[0].rows[0].clone()
    };
    let ok = rows(transpose, Shape::Transpose { m: 33, n: 20 });
    assert!(ok.passed(), "{ok:?}");
    let ok = rows(gemm, Shape::gemm(100, 37, 129));
    assert!(ok.passed() && ok.check.unwrap().rel_error == 0.0, "{ok:?}");
    let short = rows(short, Shape::Transpose { m: 33, n: 20 });
    let why = short.reason.unwrap_or_default();
    assert!(why.contains("1 of 660 elements are NaN"), "{why}");
    // int8 inputs: the example's tensor-core GEMM is exact; an int8 output is refused.
    let spec = example("int8_mma_ptx.cu");
    let int8 = load(&spec, Workload::Gemm);
    assert!(
        int8.info()
            .summary
            .contains("its int8 inputs (even, in [-126, 126])"),
        "{}",
        int8.info().summary
    );
    let ok = rows(int8, Shape::gemm(100, 37, 129));
    assert!(ok.passed() && ok.check.unwrap().rel_error == 0.0, "{ok:?}");
    let (ok, text) = sim_run(
        "gemm",
        "64x64x64",
        &spec.replace("dtype=s8,C:i32", "dtype=s8"),
        &dir.join("s8-out"),
    );
    assert!(
        !ok && text.contains("s8 is for inputs: give C i32"),
        "{text}"
    );
}

/// `std::enable_if` and `std::aligned_storage` come with the host's `<algorithm>`, `<vector>`
/// and stream headers, and OneFlow's softmax counts on them; `min`, `max` and `swap` stay
/// unambiguous under `using namespace std`. Host code's names are there too: `using
/// std::generate;` (a device function of the file named `copy` still called), a logger
/// deriving from `std::ostream` and holding a `std::stringbuf`, an exception class deriving
/// from `std::exception`. NVRTC compiles the file and the simulator runs it.
#[test]
fn type_traits_come_with_the_headers_that_bring_them_on_the_host() {
    let dir = scratch_dir("traits");
    let code = r#"#include <algorithm>
#include <iostream>
#include <sstream>
#include <stdexcept>
#include <vector>
using std::generate;
using std::copy;
class LogStream : public std::ostream {
  class Buf : public std::stringbuf {};
  Buf buffer;
 public:
  LogStream() : std::ostream(&buffer) {}
};
class PluginError : public std::runtime_error {
 public:
  PluginError(const char *m) : std::runtime_error(m), msg(m) {}
  std::string msg;
};
__device__ float copy(float v) { return v; }
using namespace std;
template <typename T, int N>
union Pack {
  typename std::aligned_storage<N * sizeof(T), N * sizeof(T)>::type storage;
  T elem[N];
};
template <typename T>
__device__ typename std::enable_if<sizeof(T) == 4, T>::type twice(T v) { return v + v; }
__global__ void copy_row(const float *x, float *y, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  float a = 1.f, b = 2.f;
  swap(a, b);
  std::swap(a, b);
  if (i < n) { Pack<float, 1> p; p.elem[0] = x[i]; y[i] = copy(twice(p.elem[0])) - p.elem[0] + max(a, b) - std::min(a, b) - 1.f; }
}
int main() { std::vector<float> v(4); generate(v.begin(), v.end(), [] { return 1.f; }); }
"#;
    let file = dir.join("traits.cu");
    std::fs::write(&file, code).unwrap();
    let spec = format!(
        "{}:copy_row,args=(X,Y,N),block=64,grid=(cdiv(N,64))",
        file.display()
    );
    let (ok, text) = sim_check("transpose", "1x37", &spec);
    assert!(ok, "{text}");
}

/// A PyTorch extension's kernel instantiated for `c10::Half`, as its host code's dispatch does:
/// `<torch/extension.h>` (and `<torch/python.h>`) bring c10's 16-bit types, which compute in
/// float (`max(h, h)` is `max(float, float)`, as with PyTorch, where CUDA's `__half` would be
/// ambiguous), and the kernel takes the lab's FP16 buffers. BF16 too.
#[test]
fn a_pytorch_extensions_kernel_for_c10_half_takes_the_labs_half_buffers() {
    let dir = scratch_dir("c10-half");
    let code = r#"#include <torch/extension.h>
#include <torch/python.h>
template <typename T>
__global__ void rowmax_softmax(const T *X, T *Y, int M, int N) {
  int row = blockIdx.x;
  if (threadIdx.x != 0 || row >= M) return;
  T mx = X[row * N];
  for (int j = 1; j < N; ++j) mx = max(mx, X[row * N + j]);
  T one = 1;
  float sum = 0.f;
  for (int j = 0; j < N; ++j) sum += expf(X[row * N + j] - mx);
  for (int j = 0; j < N; ++j)
    Y[row * N + j] = (X[row * N + j] < mx || X[row * N + j] == mx) ? T(expf(X[row * N + j] - mx) / sum) * one : -one;
}
torch::Tensor forward(torch::Tensor x) { return x; }
PYBIND11_MODULE(TORCH_EXTENSION_NAME, m) { m.def("forward", &forward); }
"#;
    let file = dir.join("ext.cu");
    std::fs::write(&file, code).unwrap();
    for (t, dtype) in [("c10::Half", "f16"), ("c10::BFloat16", "bf16")] {
        let spec = format!(
            "{}:rowmax_softmax<{t}>,dtype={dtype},block=32,grid=(M)",
            file.display()
        );
        let (ok, text) = sim_check("softmax", "3x5,4x33", &spec);
        assert!(ok, "{t}: {text}");
    }
}

/// A file including CUB, whose device-wide parts NVRTC cannot compile: the failure names CUB
/// (its errors lie in Thrust's headers, which CUB's include), shows the first errors only, and
/// says what to do.
#[test]
fn a_file_including_cub_is_told_so_in_a_short_log() {
    let dir = scratch_dir("cub");
    let file = dir.join("k.cu");
    std::fs::write(
        &file,
        "#include <cub/cub.cuh>\n\
         __global__ void copy_row(const float *x, float *y, int n) {\n\
         \x20 int i = blockIdx.x * blockDim.x + threadIdx.x;\n\
         \x20 if (i < n) y[i] = x[i];\n\
         }\n",
    )
    .unwrap();
    let spec = format!(
        "{}:copy_row,args=(X,Y,N),block=64,grid=(cdiv(N,64))",
        file.display()
    );
    let (ok, text) = sim_check("transpose", "1x37", &spec);
    assert!(!ok, "{text}");
    assert!(
        text.contains("The file includes CUB, a library of templates the lab does not provide")
            && text.contains("more lines of errors inside the library's headers)"),
        "{text}"
    );
    assert!(text.lines().count() < 60, "{text}");
}

/// An integer sum off by a little is no rounding: integers add exactly, and the failure does
/// not blame FP32's running total, as it does for a float sum off by as much.
#[test]
fn an_integer_sum_off_by_a_little_is_not_blamed_on_rounding() {
    let dir = scratch_dir("int-sum");
    let file = dir.join("sum.cu");
    std::fs::write(
        &file,
        "template <typename T>\n\
         __global__ void sum_plus(const T *x, T *y, int n) {\n\
         \x20 int i = blockIdx.x * blockDim.x + threadIdx.x;\n\
         \x20 if (i < n) atomicAdd(y, x[i] + (i == 0 ? T(2) : T(0)));\n\
         }\n",
    )
    .unwrap();
    let spec = |t: &str, dtype: &str| {
        format!(
            "{}:sum_plus<{t}>,block=256,grid=(cdiv(N,256)),output=zero,dtype={dtype}",
            file.display()
        )
    };
    let (ok, text) = sim_check("reduce", "65536", &spec("int", "i32"));
    assert!(
        !ok && text.contains("the integer output is not the exact result"),
        "{text}"
    );
    assert!(!text.contains("rounding error of a sum"), "{text}");
}

/// A kernel whose causal mask is its own (no flag among its parameters) and that passes a
/// causal shape is not told, where it fails another causal shape, that it attends to every
/// key: its failure there (a read past K) is its own.
#[test]
fn a_kernel_masking_on_its_own_is_not_told_it_lacks_a_causal_flag() {
    let dir = scratch_dir("own-mask");
    let code = r#"__global__ void causal_rows(const float *Q, const float *K, const float *V, float *O,
                            int S, int D, float scale) {
    int bh = blockIdx.x, q = threadIdx.x;      // one block per (batch, head), S <= blockDim.x
    const float *Qh = Q + (size_t)bh * S * D, *Kh = K + (size_t)bh * S * D, *Vh = V + (size_t)bh * S * D;
    float *Oh = O + (size_t)bh * S * D;
    float tail = 0.f;
    for (int k = 0; k < ((S + 31) / 32) * 32; ++k) tail += Kh[k * D] * 0.f;   // bug: no k < S check
    if (q >= S) return;
    float m = -INFINITY, l = 0.f, acc[64];
    for (int d = 0; d < D; ++d) acc[d] = 0.f;
    for (int k = 0; k <= q; ++k) {
        float s = 0.f;
        for (int d = 0; d < D; ++d) s += Qh[q * D + d] * Kh[k * D + d];
        s *= scale;
        float mn = fmaxf(m, s), c = __expf(m - mn), p = __expf(s - mn);
        l = l * c + p;
        for (int d = 0; d < D; ++d) acc[d] = acc[d] * c + p * Vh[k * D + d];
        m = mn;
    }
    for (int d = 0; d < D; ++d) Oh[q * D + d] = acc[d] / l + tail;
}
"#;
    let file = dir.join("k.cu");
    std::fs::write(&file, code).unwrap();
    let spec = format!(
        "{}:causal_rows,block=64,grid=(B*H),args=(Q,K,V,O,S,D,scale)",
        file.display()
    );
    let (ok, text) = sim_check("attention", "1x1x64x16-causal,2x1x50x24-causal", &spec);
    assert!(!ok && text.contains("1 passed, 1 failed"), "{text}");
    assert!(
        text.contains("out-of-bounds read past the end of buffer 'K'")
            && !text.contains("take no causal flag"),
        "{text}"
    );
}

/// A transpose that takes the output's rows as N long, as one written for square matrices
/// does: at 48x16 two blocks store the same element of Y, and the failure says that the
/// output index, not the order of the stores, is what is wrong.
#[test]
fn two_blocks_storing_one_output_element_are_told_of_the_index() {
    let dir = scratch_dir("same-element");
    let file = dir.join("t.cu");
    std::fs::write(
        &file,
        "__global__ void transpose_square(const float *X, float *Y, int M, int N) {\n\
         \x20 int c = blockIdx.x * 16 + threadIdx.x, r = blockIdx.y * 16 + threadIdx.y;\n\
         \x20 if (r < M && c < N) Y[c * N + r] = X[r * N + c];  // c * M + r\n\
         }\n",
    )
    .unwrap();
    let spec = format!(
        "{}:transpose_square,block=16x16,grid=(cdiv(N,16),cdiv(M,16))",
        file.display()
    );
    let (ok, text) = sim_check("transpose", "48x16", &spec);
    assert!(!ok && text.contains("race on global memory"), "{text}");
    assert!(
        text.contains(
            "two blocks store the same element of Y, the output, where each element is one \
             block's to write: the kernel's output index maps both onto it at this shape"
        ),
        "{text}"
    );
    let (ok, text) = sim_check("transpose", "16x16", &spec);
    assert!(ok, "{text}");
}

/// A transpose only moves values: its output may be of its inputs' 8-bit type (int8 or
/// FP8), checked exactly; a GEMM's may not.
#[test]
fn an_eight_bit_transpose_writes_its_inputs_type_exactly() {
    let dir = scratch_dir("s8-transpose");
    let code = r#"#include <cstdint>
#include <cuda_fp8.h>
template <typename T>
__global__ void transpose(const T *X, T *Y, int M, int N) {
  int c = blockIdx.x * blockDim.x + threadIdx.x, r = blockIdx.y * blockDim.y + threadIdx.y;
  if (r < M && c < N) Y[(size_t)c * M + r] = X[(size_t)r * N + c];
}
template __global__ void transpose<int8_t>(const int8_t *, int8_t *, int, int);
template __global__ void transpose<__nv_fp8_e4m3>(const __nv_fp8_e4m3 *, __nv_fp8_e4m3 *, int, int);
"#;
    let file = dir.join("t8.cu");
    std::fs::write(&file, code).unwrap();
    let spec = |t: &str, dtype: &str| {
        format!(
            "{}:transpose<{t}>,block=16x16,grid=(cdiv(N,16),cdiv(M,16)),dtype={dtype}",
            file.display()
        )
    };
    for (t, dtype) in [("int8_t", "s8"), ("__nv_fp8_e4m3", "e4m3")] {
        let (ok, text) = sim_check("transpose", "37x29,16x48", &spec(t, dtype));
        assert!(ok, "{dtype}: {text}");
    }
    // A transpose that drops the last row is off by whole values, exactly.
    std::fs::write(&file, code.replace("r < M &&", "r < M - 1 &&")).unwrap();
    let (ok, text) = sim_check("transpose", "37x29", &spec("int8_t", "s8"));
    assert!(
        !ok && text.contains("the integer output is not the exact result"),
        "{text}"
    );
}

/// What a file written for nvcc leans on, as MatmulTutorial's Hopper GEMMs do: an include of
/// `<curand_kernel.h>` (for a kernel that fills inputs, never launched here), `abs` in a
/// `static_assert`, a `const` member function template whose body is device code, and a host
/// timer whose data members are runtime handles. The file compiles with NVRTC and runs in the
/// simulator.
#[test]
fn a_file_written_for_nvcc_with_curand_abs_and_member_templates_runs() {
    let dir = scratch_dir("nvcc-isms");
    let code = r#"#include <curand_kernel.h>
#define HD __host__ __device__
struct Timer {
  cudaEvent_t events_[2];
  cudaStream_t stream_;
  void start() { cudaEventRecord(events_[0], stream_); }
};
template <int S> struct Twice {
  static_assert(abs(S) >= 1, "abs(S) must be at least 1");
  template <class T> HD static constexpr T apply(T v) { return v * S; }
  template <class T> HD constexpr T operator()(T const& v) const { return apply(v); }
};
__global__ void fill(float *x, int n, unsigned long long seed) {
  curandState st;
  curand_init(seed, blockIdx.x * blockDim.x + threadIdx.x, 0, &st);
  for (int i = threadIdx.x; i < n; i += blockDim.x) x[i] = curand_uniform(&st);
}
__global__ void gemm_twice(const float *A, const float *B, float *C, int M, int N, int K) {
  const int r = blockIdx.y * 16 + threadIdx.y, c = blockIdx.x * 16 + threadIdx.x;
  if (r >= M || c >= N) return;
  float acc = 0.0f;
  for (int k = 0; k < K; ++k) acc += A[r * K + k] * B[k * N + c];
  C[r * N + c] = Twice<-1>{}(acc) * -1.0f;
}
"#;
    std::fs::write(dir.join("isms.cu"), code).unwrap();
    let k = load(
        &format!(
            "{}/isms.cu:gemm_twice,block=16x16,grid=tile:16x16",
            dir.display()
        ),
        Workload::Gemm,
    );
    let results = sim_rows(&[k], &[Shape::gemm(33, 20, 17)]);
    let row = &results.workloads[0].shapes[0].rows[0];
    assert!(row.passed(), "{row:?}");
}

/// A member template called on a type parameter without `template` (`P::by<T>(acc)`), as
/// nvcc and NVRTC accept and g++ refuses (MatmulTutorial's ping-pong GEMM calls
/// `WGMMA::wgmma<...>` so): the simulator's copy gets the keyword and the row runs.
#[test]
fn a_member_template_of_a_type_parameter_called_without_template_runs() {
    let dir = scratch_dir("template-keyword");
    let code = r#"struct Scale {
  template <int S> __device__ static float by(float v) { return v * S; }
};
template <class P, int T> __device__ void store(float *C, int i, float acc) {
  C[i] = P::by<T>(acc) * 0.5f;
}
template <class P>
__global__ void gemm_policy(const float *A, const float *B, float *C, int M, int N, int K) {
  const int r = blockIdx.y * 16 + threadIdx.y, c = blockIdx.x * 16 + threadIdx.x;
  if (r >= M || c >= N) return;
  float acc = 0.0f;
  for (int k = 0; k < K; ++k) acc += A[r * K + k] * B[k * N + c];
  store<P, 2>(C, r * N + c, acc);
}
"#;
    std::fs::write(dir.join("policy.cu"), code).unwrap();
    let spec = format!(
        "{}/policy.cu:gemm_policy<Scale>,block=16x16,grid=tile:16x16",
        dir.display()
    );
    let k = load(&spec, Workload::Gemm);
    let results = sim_rows(&[k], &[Shape::gemm(33, 20, 17)]);
    let row = &results.workloads[0].shapes[0].rows[0];
    assert!(row.passed(), "{row:?}");
    // Spaced as a comparison is, the call keeps what it says: g++ refuses it, and the row
    // shows g++'s log without a word of tiles, which have nothing to do with it.
    let spaced = code.replace("P::by<T>(acc)", "P::by < T > (acc)");
    std::fs::write(dir.join("spaced.cu"), spaced).unwrap();
    let k = load(&spec.replace("policy.cu", "spaced.cu"), Workload::Gemm);
    let results = sim_rows(&[k], &[Shape::gemm(33, 20, 17)]);
    let row = &results.workloads[0].shapes[0].rows[0];
    let reason = row.reason.as_deref().unwrap_or_default();
    assert!(
        reason.contains("could not compile") && reason.contains("-Wmissing-template-keyword"),
        "{reason}"
    );
    assert!(!reason.contains("tiles"), "{reason}");
}

/// What `examples/fp8_mma_ptx.cu` says sm_90 makes of FP8 mma.sync, from its SASS: the bytes
/// unpacked to FP16 and FP16 HMMA, no FP8 tensor instruction; and what
/// `examples/int8_mma_ptx.cu` says of int8's: IMMA.
#[test]
fn fp8_mma_sync_runs_as_fp16_hmma_on_sm_90_as_its_example_says() {
    if let Err(e) = nvrtc::version() {
        panic!("{e}\nThis test needs NVRTC: run tools/install-cuda-tools.sh first.");
    }
    let file = root().join("examples/fp8_mma_ptx.cu");
    let header = std::fs::read_to_string(&file).unwrap();
    assert!(
        header.contains("F2FP.F16.E4M3.UNPACK_B") && header.contains("HMMA.16816.F32"),
        "the claim this test holds the SASS to is in the header"
    );
    let (ok, text) = harness(&[
        "inspect",
        "--sass",
        "--arch",
        "sm_90",
        file.to_str().unwrap(),
    ]);
    assert!(ok, "{text}");
    assert!(
        text.contains("F2FP.F16.E4M3.UNPACK_B") && text.contains("HMMA.16816.F32 "),
        "{text}"
    );
    assert!(
        !text.contains("E4M3.E4M3"),
        "an FP8 tensor instruction: {text}"
    );
    // The int8 example's mma.sync is a tensor instruction of its own: IMMA.
    let int8 = root().join("examples/int8_mma_ptx.cu");
    let header = std::fs::read_to_string(&int8).unwrap();
    assert!(header.contains("IMMA.16832.S8.S8"));
    let (ok, text) = harness(&[
        "inspect",
        "--sass",
        "--arch",
        "sm_90",
        int8.to_str().unwrap(),
    ]);
    assert!(ok && text.contains("IMMA.16832.S8.S8 "), "{text}");
    // ... whose operations the speed of light holds to the INT8 rate.
    let (ok, text) = harness(&[
        "explain",
        "--kernel",
        &format!("{},workload=gemm", example("int8_mma_ptx.cu")),
    ]);
    assert!(
        ok && text.contains("2 HMMA") && text.contains("INT8 1979.00 TOP/s dense"),
        "{text}"
    );
    // The wgmma example's does: QGMMA, held to the FP8 peak.
    let wgmma = example("fp8_wgmma_tma.cu");
    let header = std::fs::read_to_string(root().join("examples/fp8_wgmma_tma.cu")).unwrap();
    assert!(header.contains("QGMMA.64x128x32.F32.E4M3.E4M3"));
    let (ok, text) = harness(&["explain", "--kernel", &format!("{wgmma},workload=gemm")]);
    assert!(ok, "{text}");
    assert!(
        text.contains("4 HGMMA") && text.contains("FP8 1979.00 TFLOP/s dense"),
        "{text}"
    );
}

/// A kernel the lab calls through a wrapper that converts its scalars (`size_t` sizes, a
/// `__half` alpha) is named as its author wrote it on the line `check` prints as the row
/// runs, as in the summary after, not by the wrapper's name.
#[test]
fn a_wrapped_kernels_failure_names_it_as_written_while_it_runs() {
    let dir = scratch_dir("wrapped-name");
    let code = "template <typename T>\n\
        __global__ void naive(size_t m, size_t n, size_t k, T alpha, T const *A, T const *B, T *C) {\n\
        \x20 size_t r = blockIdx.y * 16 + threadIdx.y, c = blockIdx.x * 16 + threadIdx.x;\n\
        \x20 if (c >= n) return;  // no row check: rows past M read past A\n\
        \x20 float acc = 0;\n\
        \x20 for (size_t i = 0; i < k; ++i) acc += float(A[r * k + i]) * float(B[i * n + c]);\n\
        \x20 if (r < m) C[r * n + c] = T(float(alpha) * acc);\n\
        }\n";
    std::fs::write(dir.join("k.cu"), code).unwrap();
    let spec = format!(
        "{}/k.cu:naive<__half>,dtype=f16,args=(M,N,K,alpha,A,B,C),alpha=1.5,block=16x16,\
         grid=tile:16x16",
        dir.display()
    );
    let (ok, text) = sim_check("gemm", "100x37x64", &spec);
    let first = text.lines().next().unwrap_or_default();
    assert!(
        !ok && first
            .contains("simulator: naive<__half>: out-of-bounds read past the end of buffer 'A'")
            && !text.contains("user_naive"),
        "{text}"
    );
}

/// A race at a shape of whole tiles says nothing of a failure at a tail, which keeps its hint
/// (a failure of the same kind there would send the user away from the tails); nor does a
/// shape the kernel passed at with the same remainder, whose tail is left out of the hint.
#[test]
fn a_tails_hint_weighs_only_the_shapes_that_speak_to_it() {
    let dir = scratch_dir("race-whole");
    let code = "__global__ void tiled(const float *A, const float *B, float *C, int M, int N, int K) {\n\
        \x20 const int r = blockIdx.y * 16 + threadIdx.y, c = blockIdx.x * 16 + threadIdx.x;\n\
        \x20 if (c >= N) return;  // no row check\n\
        \x20 float acc = 0;\n\
        \x20 for (int k = 0; k < K; ++k) acc += A[r * K + k] * B[k * N + c];\n\
        \x20 if (r < M) C[r * N + c] = acc;\n\
        }\n";
    let users = [user_file(
        &dir,
        "t.cu",
        code,
        "tiled,block=16x16,grid=tile:16x16",
    )];
    // K = 64, a whole number of any tile K could have: 32x32x64 has no tail at all.
    let shapes = [
        Shape::gemm(32, 32, 64),
        Shape::gemm(20, 20, 64),
        Shape::gemm(32, 20, 64),
    ];
    let mut results = sim_rows_unannotated(&users, &shapes);
    let rows: Vec<Status> = (results.workloads[0].shapes.iter())
        .map(|s| s.rows[0].status)
        .collect();
    assert_eq!(
        rows,
        [Status::Passed, Status::Error, Status::Passed],
        "{results:?}"
    );
    // The whole shape's row as a race would leave it.
    let whole = &mut results.workloads[0].shapes[0].rows[0];
    whole.status = Status::Error;
    whole.reason = Some("tiled: race on shared memory: this thread reads __shared__ 's'".into());
    run::annotate(&mut results, &[], &users, false, &[]);
    let tail = results.workloads[0].shapes[1].rows[0]
        .reason
        .clone()
        .unwrap();
    // Rows past M read past A; N = 20 has the remainder 32x20x64 passed with.
    assert!(
        tail.contains("C is 20x20, not a whole number of 16x16 tiles")
            && tail.contains("(rows from 16)")
            && !tail.contains("columns from")
            && !tail.contains("it fails on"),
        "{tail}"
    );
}

/// A WMMA tile loaded straight from global memory has the matrix's row length for its ldm: at
/// N = 36 (72 bytes a row of B) the load fails, and the failure names N.
#[test]
fn a_wmma_ldm_off_16_bytes_in_global_memory_names_its_dimension() {
    let dir = scratch_dir("wmma-ldm-global");
    let code = "#include <mma.h>\n\
        using namespace nvcuda;\n\
        __global__ void wmma_direct(const half *A, const half *B, float *C, int M, int N, int K) {\n\
        \x20 const int tm = blockIdx.y * 16, tn = blockIdx.x * 16;\n\
        \x20 wmma::fragment<wmma::matrix_a, 16, 16, 16, half, wmma::row_major> a;\n\
        \x20 wmma::fragment<wmma::matrix_b, 16, 16, 16, half, wmma::row_major> b;\n\
        \x20 wmma::fragment<wmma::accumulator, 16, 16, 16, float> c;\n\
        \x20 wmma::fill_fragment(c, 0.0f);\n\
        \x20 for (int k = 0; k < K; k += 16) {\n\
        \x20   wmma::load_matrix_sync(a, A + tm * K + k, K);\n\
        \x20   wmma::load_matrix_sync(b, B + k * N + tn, N);\n\
        \x20   wmma::mma_sync(c, a, b, c);\n\
        \x20 }\n\
        \x20 wmma::store_matrix_sync(C + tm * N + tn, c, N, wmma::mem_row_major);\n\
        }\n";
    std::fs::write(dir.join("wmma_direct.cu"), code).unwrap();
    let spec = format!(
        "{}/wmma_direct.cu:wmma_direct,dtype=f16,C:f32,block=32,grid=tile:16x16",
        dir.display()
    );
    let (ok, text) = sim_check("gemm", "32x48x32,32x36x32", &spec);
    assert!(
        !ok && text.starts_with("pass  wmma_direct.cu:wmma_direct  32x48x32"),
        "{text}"
    );
    assert!(
        text.contains(
            "the tile is not in shared memory, so ldm is the length of the matrix's rows"
        ),
        "{text}"
    );
    the_guide_quotes(span(&text, "ldm 36 is N here", "multiple of 8 elements"));
}

/// A fault in a header found through an `include=` folder outside the kernel file's own is
/// named at the header's line, as one beside the file is: that header is the user's code.
#[test]
fn a_fault_in_a_header_of_an_include_folder_names_its_line() {
    let dir = scratch_dir("include-fault");
    let (main, inc) = (dir.join("main"), dir.join("inc"));
    std::fs::create_dir_all(&main).unwrap();
    std::fs::create_dir_all(&inc).unwrap();
    std::fs::write(main.join("k.cu"), "#include \"past.cuh\"\n").unwrap();
    std::fs::write(
        inc.join("past.cuh"),
        "__global__ void past(const float *A, const float *B, float *C, int M, int N, int K) {\n\
         \x20 int r = blockIdx.y * 16 + threadIdx.y, c = blockIdx.x * 16 + threadIdx.x;\n\
         \x20 if (r < M && c < N) {\n\
         \x20   float acc = B[K * N + c];  // one row past the end of B\n\
         \x20   for (int k = 0; k < K; ++k) acc += A[r * K + k] * B[k * N + c];\n\
         \x20   C[r * N + c] = acc;\n\
         \x20 }\n\
         }\n",
    )
    .unwrap();
    let spec = format!(
        "{}:past,block=16x16,grid=tile:16x16,include={}",
        main.join("k.cu").display(),
        inc.display()
    );
    let (ok, text) = sim_check("gemm", "32x32x16", &spec);
    assert!(!ok, "{text}");
    assert!(
        text.contains("out-of-bounds read past the end of buffer 'B'")
            && text.contains(&format!(", at {}:4", inc.join("past.cuh").display())),
        "{text}"
    );
}

/// A linear kernel with no activation, run at a shape whose reference applies ReLU: its row
/// says the output is the layer's without it, and no tail or grid is blamed.
#[test]
fn a_linear_kernel_without_the_shapes_activation_is_told_so() {
    let dir = scratch_dir("no-activation");
    let file = dir.join("linear_plain.cu");
    std::fs::write(
        &file,
        "__global__ void linear_plain(const float *X, const float *W, const float *bias, float *Y,\n\
         \x20                            int M, int N, int K) {\n\
         \x20 int r = blockIdx.y * 16 + threadIdx.y, c = blockIdx.x * 16 + threadIdx.x;\n\
         \x20 if (r >= M || c >= N) return;\n\
         \x20 float acc = bias[c];\n\
         \x20 for (int k = 0; k < K; ++k) acc += X[r * K + k] * W[c * K + k];\n\
         \x20 Y[r * N + c] = acc;\n\
         }\n",
    )
    .unwrap();
    let spec = format!(
        "{}:linear_plain,args=(X,W,bias,Y,M,N,K),block=16x16,grid=tile:16x16",
        file.display()
    );
    let (ok, text) = sim_check("linear", "33x17x9-relu,33x17x9-none", &spec);
    assert!(!ok, "{text}");
    assert!(
        text.contains(
            "the output is that of the layer with none instead of relu: the kernel applies no \
             activation"
        ),
        "{text}"
    );
    assert!(
        !text.contains("tile") && !text.contains("swapped"),
        "{text}"
    );
    assert!(
        text.contains("1 passed, 1 failed"),
        "the -none shape passes: {text}"
    );
}

/// `#include <cstdint>` gives `std::int64_t` as the standard header does, for NVRTC (the
/// lab's stand-in) as for the simulator (the host's header).
#[test]
fn cstdint_declares_its_types_in_std_too() {
    let dir = scratch_dir("cstdint");
    let file = dir.join("transpose64.cu");
    std::fs::write(
        &file,
        "#include <cstdint>\n\
         __global__ void transpose64(const float *X, float *Y, std::int64_t M, std::int64_t N) {\n\
         \x20 const std::int64_t i = blockIdx.x * (std::int64_t)blockDim.x + threadIdx.x;\n\
         \x20 if (i < M * N) Y[(i % N) * M + i / N] = X[i];\n\
         }\n",
    )
    .unwrap();
    let spec = format!(
        "{}:transpose64,block=256,grid=(cdiv(M*N,256))",
        file.display()
    );
    let (ok, text) = sim_check("transpose", "33x65", &spec);
    assert!(ok && text.contains("1 passed"), "{text}");
}

/// A file written for `nvcc -std=c++20` (an abbreviated function template) and one for
/// `nvcc --extended-lambda` (`[] __device__ (...)`) compile unmodified, for NVRTC and the
/// simulator alike.
#[test]
fn files_for_cxx20_and_extended_lambdas_compile_unmodified() {
    let dir = scratch_dir("cxx20");
    let file = dir.join("rows.cu");
    std::fs::write(
        &file,
        "__device__ float warp_max(float v, const auto &width) {\n\
         \x20 for (int o = width / 2; o; o >>= 1) v = fmaxf(v, __shfl_xor_sync(0xffffffff, v, o));\n\
         \x20 return v;\n\
         }\n\
         template <typename Op> __device__ float warp_all(float v, Op op) {\n\
         \x20 for (int o = 16; o; o >>= 1) v = op(v, __shfl_xor_sync(0xffffffff, v, o));\n\
         \x20 return v;\n\
         }\n\
         __global__ void softmax_row(const float *X, float *Y, int M, int N) {\n\
         \x20 const float *x = X + (size_t)blockIdx.x * N;\n\
         \x20 float m = -1e30f, s = 0.f;\n\
         \x20 for (int j = threadIdx.x; j < N; j += 32) m = fmaxf(m, x[j]);\n\
         \x20 m = warp_max(m, 32);\n\
         \x20 for (int j = threadIdx.x; j < N; j += 32) s += expf(x[j] - m);\n\
         \x20 s = warp_all(s, [] __device__ (float a, float b) { return a + b; });\n\
         \x20 for (int j = threadIdx.x; j < N; j += 32) Y[(size_t)blockIdx.x * N + j] = expf(x[j] - m) / s;\n\
         }\n",
    )
    .unwrap();
    let spec = format!("{}:softmax_row,block=32,grid=(M)", file.display());
    let (ok, text) = sim_check("softmax", "3x100", &spec);
    assert!(ok && text.contains("1 passed"), "{text}");
}

/// An integer output is held to the exact result: a sum that leaves out one element of a
/// million is off by a relative 1e-7, inside FP32's bound, and fails all the same.
#[test]
fn an_integer_output_must_be_exact() {
    let dir = scratch_dir("exact");
    let file = dir.join("sum.cu");
    std::fs::write(
        &file,
        "__global__ void sum_i32(const int *x, int *y, int N) {\n\
         \x20 int acc = 0;\n\
         \x20 for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < N - DROP; i += gridDim.x * blockDim.x)\n\
         \x20   acc += x[i];\n\
         \x20 atomicAdd(y, acc);\n\
         }\n",
    )
    .unwrap();
    let spec = |drop: u32| {
        format!(
            "{}:sum_i32,dtype=i32,output=zero,block=256,grid=(64),define=DROP={drop}",
            file.display()
        )
    };
    let (ok, text) = sim_check("reduce", "1000000", &spec(0));
    assert!(ok && text.contains("exact"), "{text}");
    let (ok, text) = sim_check("reduce", "1000000", &spec(1));
    assert!(
        !ok && text.contains("the integer output is not the exact result: an element is off by"),
        "{text}"
    );
}

/// An attention kernel whose mask is fixed at compile time, run on shapes of the other kind:
/// the row says what its output is, and blames no tail.
#[test]
fn an_attention_kernel_with_the_other_mask_is_told_so() {
    let dir = scratch_dir("other-mask");
    let file = dir.join("attn_rows.cu");
    std::fs::write(
        &file,
        "template <bool CAUSAL>\n\
         __global__ void attn_rows(const float *Q, const float *K, const float *V, float *O, int B,\n\
         \x20                         int H, int S, int D, float scale, int causal) {\n\
         \x20 const int bh = blockIdx.y, i = blockIdx.x * blockDim.x + threadIdx.x;\n\
         \x20 if (i >= S) return;\n\
         \x20 const float *q = Q + ((size_t)bh * S + i) * D, *k = K + (size_t)bh * S * D;\n\
         \x20 const float *v = V + (size_t)bh * S * D;\n\
         \x20 float *o = O + ((size_t)bh * S + i) * D;\n\
         \x20 const int keys = CAUSAL ? i + 1 : S;  // the flag the lab passes is not read\n\
         \x20 float m = -INFINITY, l = 0.f;\n\
         \x20 for (int j = 0; j < keys; ++j) {\n\
         \x20   float s = 0.f;\n\
         \x20   for (int d = 0; d < D; ++d) s += q[d] * k[j * D + d];\n\
         \x20   m = fmaxf(m, s * scale);\n\
         \x20 }\n\
         \x20 for (int d = 0; d < D; ++d) o[d] = 0.f;\n\
         \x20 for (int j = 0; j < keys; ++j) {\n\
         \x20   float s = 0.f;\n\
         \x20   for (int d = 0; d < D; ++d) s += q[d] * k[j * D + d];\n\
         \x20   const float p = expf(s * scale - m);\n\
         \x20   l += p;\n\
         \x20   for (int d = 0; d < D; ++d) o[d] += p * v[j * D + d];\n\
         \x20 }\n\
         \x20 for (int d = 0; d < D; ++d) o[d] /= l;\n\
         }\n",
    )
    .unwrap();
    let spec = |causal: bool| {
        format!(
            "{}:attn_rows<{causal}>,block=32,grid=(cdiv(S,32),B*H)",
            file.display()
        )
    };
    let sizes = "1x2x37x16,1x2x37x16-causal";
    let (ok, text) = sim_check("attention", sizes, &spec(true));
    assert!(!ok && text.contains("1 passed, 1 failed"), "{text}");
    assert!(
        text.contains(
            "the output is that of causal attention: the kernel masks the keys past each query's \
             position, where this shape asks for unmasked attention"
        ) && !text.contains("multiple of"),
        "{text}"
    );
    let (ok, text) = sim_check("attention", sizes, &spec(false));
    assert!(!ok && text.contains("1 passed, 1 failed"), "{text}");
    assert!(
        text.contains(
            "the output is that of attention without a mask: the kernel attends to every key, \
             where this shape asks for causal attention"
        ),
        "{text}"
    );
}
