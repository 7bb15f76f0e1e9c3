//! Rows in child processes: a kernel that never ends and one that kills its process are each
//! recorded on their own row, and the row after them still runs and passes. User kernels run
//! so in the simulator and on a GPU without being asked, and so does every `gpu_only` rung on
//! a GPU; `--isolate` extends it to every row.

use std::path::{Path, PathBuf};
use std::process::Command;

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

/// What a finished command printed, stdout then stderr.
fn said(o: &std::process::Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    )
}

fn scratch_dir(test: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("isolate-{test}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

const SIGNATURE: &str = "(const float *A, const float *B, float *C, int M, int N, int K)";

/// A naive GEMM: one thread per output.
const GOOD: &str = "{\n\
    \x20 int row = blockIdx.y * 8 + threadIdx.x / 8, col = blockIdx.x * 8 + threadIdx.x % 8;\n\
    \x20 if (row >= M || col >= N) return;\n\
    \x20 float acc = 0.0f;\n\
    \x20 for (int k = 0; k < K; ++k) acc += A[row * K + k] * B[k * N + col];\n\
    \x20 C[row * N + col] = acc;\n\
    }\n";

/// Writes a kernel `name` with `body` into `dir` and returns its `--kernel` spec.
fn kernel(dir: &Path, name: &str, body: &str) -> String {
    let file = dir.join(format!("{name}.cu"));
    let code = format!(
        "#include <cstdlib>\n#ifdef KERNEL_LAB_SIM\n#include <pthread.h>\n#include <signal.h>\n#endif\n\
         __global__ void {name}{SIGNATURE} {body}"
    );
    std::fs::write(&file, code).unwrap();
    format!("{}:{name},block=64,grid=tile:8x8", file.display())
}

/// `harness run` in the simulator of GEMM 16x16x16 with no lab kernel and `args`, into
/// `dir`'s `run` folder.
fn sim_gemm_16(dir: &Path, args: &[&str]) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_harness"))
        .current_dir(root())
        .env("LAB_DIR", dir.join("lab"))
        .args([
            "run",
            "--device",
            "sim",
            "--workload",
            "gemm",
            "--sizes",
            "16",
        ])
        .args(["--kernels", "none"])
        .args(args)
        .arg("--out")
        .arg(dir.join("run"))
        .output()
        .unwrap()
}

#[test]
fn a_hanging_and_a_crashing_kernel_cost_their_own_rows_only() {
    let dir = scratch_dir("rows");
    // The simulator runs a kernel's threads on the CPU: this one loops forever, and the
    // simulator's watchdog stops it before the row's limit, saying where it is.
    let spin = kernel(&dir, "spin", "{\n  while (1) {\n  }\n}\n");
    // This one also blocks the signals the watchdog stops threads with: only the parent's
    // limit, which kills the row's process, ends it.
    let stuck = kernel(
        &dir,
        "stuck",
        "{\n#ifdef KERNEL_LAB_SIM\n  sigset_t all;\n  sigfillset(&all);\n  \
         pthread_sigmask(SIG_BLOCK, &all, nullptr);\n#endif\n  while (1) {\n  }\n}\n",
    );
    // The simulator catches memory faults as a row's error; abort() kills its process (SIGABRT),
    // as a fault can end a process on a GPU. (For NVRTC, which compile-checks it too: a trap.)
    let crash = kernel(
        &dir,
        "crash",
        "{\n#ifdef KERNEL_LAB_SIM\n  abort();\n#else\n  __trap();\n#endif\n}\n",
    );
    let good = kernel(&dir, "good", GOOD);
    let out = dir.join("run");
    // The run builds every row's module before the children start (`Ablation::precompile`),
    // so the limit covers a child's run alone: the good kernel's takes milliseconds.
    let timeout = "5";
    // No --isolate: a user's kernel is isolated as it is.
    let o = sim_gemm_16(
        &dir,
        &[
            "--row-timeout",
            timeout,
            "--kernel",
            &spin,
            "--kernel",
            &stuck,
            "--kernel",
            &crash,
            "--kernel",
            &good,
        ],
    );
    let text = said(&o);
    // Two rows failed: the run says so in its exit code, and still saved every row.
    assert_eq!(o.status.code(), Some(1), "{text}");
    let json = std::fs::read_to_string(out.join("results.json")).expect(&text);
    let results: serde_json::Value = serde_json::from_str(&json).unwrap();
    let rows = results["workloads"][0]["shapes"][0]["rows"]
        .as_array()
        .unwrap()
        .clone();
    let row = |name: &str| {
        rows.iter()
            .find(|r| r["id"].as_str().is_some_and(|id| id.contains(name)))
            .unwrap_or_else(|| panic!("no row {name}: {json}"))
            .clone()
    };
    let (spin, stuck) = (row("spin"), row("stuck"));
    let (crash, good) = (row("crash"), row("good"));
    assert_eq!(spin["status"], "error", "{spin}");
    let why = spin["reason"].as_str().unwrap();
    assert!(
        why.contains("kernel did not finish: thread (")
            && why.contains("the limit is the row's, --row-timeout"),
        "{spin}"
    );
    assert_eq!(stuck["status"], "error", "{stuck}");
    assert!(
        stuck["reason"]
            .as_str()
            .unwrap()
            .contains(&format!("timed out after {timeout} s")),
        "{stuck}"
    );
    assert_eq!(crash["status"], "error", "{crash}");
    let why = crash["reason"].as_str().unwrap();
    assert!(
        why.contains("crashed") && why.contains("SIGABRT"),
        "{crash}"
    );
    assert_eq!(good["status"], "passed", "{good}");
}

/// The child subcommand given `request` on stdin, run to its end.
fn ask_child(request: &[u8]) -> std::process::Output {
    use std::io::Write;
    let mut child = Command::new(env!("CARGO_BIN_EXE_harness"))
        .arg("isolated-row")
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    child.stdin.take().unwrap().write_all(request).unwrap();
    child.wait_with_output().unwrap()
}

#[test]
fn the_child_refuses_a_request_it_cannot_read() {
    let o = ask_child(br#"{"protocol": 999}"#);
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(err.contains("runs one row"), "{err}");
    assert!(o.stdout.is_empty());
}

/// The rows isolated on a GPU without `--isolate`: the Hopper rung (sm_90a alone: wgmma, TMA,
/// mbarrier waits) is among them, with its reason; a plain rung is not.
#[test]
fn list_risky_names_the_hopper_rung_with_its_reason() {
    let o = Command::new(env!("CARGO_BIN_EXE_harness"))
        .args(["list", "--risky"])
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&o.stdout);
    assert!(o.status.success(), "{text}");
    let hopper = text
        .lines()
        .find(|l| l.starts_with("gemm-wgmma-tma\t"))
        .unwrap_or_else(|| panic!("{text}"));
    assert!(hopper.contains("sm_90a"), "{hopper}");
    assert!(
        !text.lines().any(|l| l.starts_with("gemm-naive\t")),
        "{text}"
    );
}

/// Rows that ran in child processes are timed side by side with their parents in one too, so
/// their `vs parent` cancels the machine's drift as the other rows' does.
#[test]
fn isolated_rows_are_timed_against_their_parents_in_a_child() {
    let dir = scratch_dir("pairs");
    let config = dir.join("lab.toml");
    std::fs::write(
        &config,
        "[cpu]\ntiming = { warmup_ms = 1.0, samples = 5, min_sample_ms = 0.5, \
         max_row_ms = 1000.0, pair_rounds = 3 }\n",
    )
    .unwrap();
    let out = dir.join("run");
    let o = Command::new(env!("CARGO_BIN_EXE_harness"))
        .current_dir(root())
        .env("LAB_DIR", dir.join("lab"))
        .arg("run")
        .arg("--config")
        .arg(&config)
        .args([
            "--device",
            "cpu",
            "--workload",
            "gemm",
            "--sizes",
            "40x24x36",
        ])
        .args(["--kernels", "gemm-naive,gemm-tiled,matrixmultiply-sgemm"])
        .args(["--isolate", "--quiet", "--out"])
        .arg(&out)
        .output()
        .unwrap();
    let text = said(&o);
    assert!(o.status.success(), "{text}");
    let json = std::fs::read_to_string(out.join("results.json")).expect(&text);
    let results: serde_json::Value = serde_json::from_str(&json).unwrap();
    let rows = results["workloads"][0]["shapes"][0]["rows"]
        .as_array()
        .unwrap();
    let paired = |id: &str| {
        let row = rows.iter().find(|r| r["id"] == id).unwrap();
        row["paired"].clone()
    };
    let tiled = paired("gemm-tiled");
    assert_eq!(tiled["against"], "gemm-naive", "{json}");
    for side in ["against_ms", "row_ms"] {
        let ms = tiled[side].as_array().unwrap();
        assert_eq!(ms.len(), 3, "{tiled}");
        assert!(ms.iter().all(|t| t.as_f64().unwrap() > 0.0), "{tiled}");
    }
    assert!(paired("gemm-naive").is_null() && paired("matrixmultiply-sgemm").is_null());
    assert!(!text.contains("in alternation failed"), "{text}");
}

/// The children of a shape's isolated rows check against the reference the parent computed
/// (at the headline shapes a network's takes every core tens of seconds, and a GPU run isolates
/// a dozen of its rows), not one of their own: a reference scaled by 2 fails the same row.
#[test]
fn an_isolated_row_is_checked_against_the_parents_reference() {
    use harness::isolate::{Answer, PROTOCOL, ReferenceFile, Request, Response};
    let shape = kernel::Shape::Gemm {
        m: 33,
        n: 20,
        k: 17,
    };
    let seed = harness::config::Config::defaults().seed;
    let inputs = harness::inputs::random_inputs(&shape, seed);
    let exact = harness::reference::reference(&shape, &inputs);
    // A sampled reference reads back whole, and a library's with the picks of kernels that
    // have their own; a cut file is refused.
    let library = ReferenceFile::write(&harness::run::Reference {
        values: vec![1.5, -2.0, 4.0],
        indices: None,
        label: "library".into(),
        own_picks: Some(vec![0, 2]),
    })
    .unwrap();
    let back = ReferenceFile::read(library.path()).unwrap();
    assert_eq!(
        (back.values, back.indices, back.own_picks),
        (vec![1.5, -2.0, 4.0], None, Some(vec![0, 2]))
    );
    let sampled = ReferenceFile::write(&harness::run::Reference {
        values: vec![1.5, -2.0],
        indices: Some(vec![3, 7]),
        label: "sampled".into(),
        own_picks: None,
    })
    .unwrap();
    let back = ReferenceFile::read(sampled.path()).unwrap();
    assert_eq!(
        (back.values, back.indices, back.label, back.own_picks),
        (
            vec![1.5, -2.0],
            Some(vec![3, 7]),
            "sampled".to_string(),
            None
        )
    );
    let bytes = std::fs::read(sampled.path()).unwrap();
    std::fs::write(sampled.path(), &bytes[..bytes.len() - 1]).unwrap();
    assert!(ReferenceFile::read(sampled.path()).is_err());
    let status = |scale: f64| {
        let file = ReferenceFile::write(&harness::run::Reference {
            values: exact.iter().map(|v| v * scale).collect(),
            indices: None,
            label: "the parent's".into(),
            own_picks: None,
        })
        .unwrap();
        let request = Request {
            protocol: PROTOCOL,
            device: "cpu".into(),
            config: None,
            user_kernels: Vec::new(),
            kernel: "gemm-tiled".into(),
            shape,
            timing: None,
            sim_blocks: None,
            pair: None,
            reference: Some(file.path().to_path_buf()),
            row_timeout_s: None,
        };
        let o = ask_child(serde_json::to_string(&request).unwrap().as_bytes());
        let out = String::from_utf8_lossy(&o.stdout);
        let line = out
            .lines()
            .find_map(|l| l.strip_prefix("harness-isolated-row "))
            .unwrap_or_else(|| panic!("{}", said(&o)));
        match serde_json::from_str::<Response>(line).unwrap().answer {
            Answer::Row(row) => row.status,
            Answer::Paired(_) => panic!("a pair for a row"),
        }
    };
    assert_eq!(status(1.0), harness::results::Status::Passed);
    assert_eq!(status(2.0), harness::results::Status::Failed);
}

/// A run killed in the middle of a shape cannot delete its reference file (at 8192 a GEMM's is
/// 512 MB); the next one written deletes the files of harnesses that no longer run and leaves
/// those of running ones, this one's included.
#[cfg(target_os = "linux")]
#[test]
fn a_reference_file_left_by_an_ended_run_is_deleted_by_the_next() {
    use harness::isolate::ReferenceFile;
    let mut ended = Command::new("true").spawn().unwrap();
    ended.wait().unwrap();
    let tmp = std::env::temp_dir();
    let orphan = tmp.join(format!("lab-reference-{}-0.bin", ended.id()));
    let running = tmp.join(format!("lab-reference-{}-999999.bin", std::process::id()));
    for f in [&orphan, &running] {
        std::fs::write(f, b"left").unwrap();
    }
    let file = ReferenceFile::write(&harness::run::Reference {
        values: vec![1.0],
        indices: None,
        label: "new".into(),
        own_picks: None,
    })
    .unwrap();
    assert!(!orphan.exists(), "{} was left", orphan.display());
    assert!(
        running.exists(),
        "{} of a running harness was deleted",
        running.display()
    );
    assert!(file.path().exists());
    std::fs::remove_file(&running).unwrap();
}

/// A kernel's `printf` in a row run in a child process is shown under the row's name, its
/// first lines only.
#[test]
fn a_kernels_printf_in_a_child_is_shown() {
    let dir = scratch_dir("printf");
    let body = format!(
        "{{\n  if (blockIdx.x == 0 && blockIdx.y == 0) printf(\"thread %d says hello\\n\", (int)threadIdx.x);\n{}",
        &GOOD[2..]
    );
    let spec = kernel(&dir, "chatty", &body);
    let o = sim_gemm_16(&dir, &["--kernel", &spec]);
    let text = said(&o);
    assert!(o.status.success(), "{text}");
    assert!(
        text.contains("chatty.cu:chatty at 16x16x16 printed:")
            && text.contains(" says hello")
            && text
                .lines()
                .filter(|l| l.starts_with("  | thread "))
                .count()
                == 20
            && text.contains("more lines"),
        "{text}"
    );
}
