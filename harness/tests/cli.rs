//! The `harness` binary end to end on the CPU: a small ablation whose rows all pass, `check`,
//! `list`, and bad input that must be refused clearly, never with a panic.

use std::path::PathBuf;
use std::process::{Command, Output};

/// The harness with its generated files (runs, calibration, tune files) in a folder of this
/// test process, never in the workspace's target/lab.
fn harness(args: &[&str]) -> Output {
    let lab = std::env::temp_dir().join(format!("lab-cli-home-{}", std::process::id()));
    harness_in(&lab, args)
}

fn harness_in(lab: &std::path::Path, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_harness"))
        .args(args)
        .env("LAB_DIR", lab)
        .output()
        .expect("the harness binary runs")
}

fn text(o: &Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    )
}

fn temp_dir(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("lab-cli-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

#[test]
fn a_cpu_run_writes_results_where_every_row_passes() {
    let out = temp_dir("run");
    let dir = out.join("first");
    let o = harness(&[
        "run",
        "--device",
        "cpu",
        "--sizes",
        "64,100x37x129",
        "--out",
        dir.to_str().unwrap(),
    ]);
    let t = text(&o);
    assert!(o.status.success(), "{t}");
    // The last lines name the run folder and what it holds: each file that is not a table or
    // a chart by name, those by count.
    let tail = t.rsplit("Run folder: ").next().unwrap();
    assert!(tail.starts_with(dir.to_str().unwrap()), "{t}");
    let (mut tables, mut charts) = (0, 0);
    for f in std::fs::read_dir(&dir).unwrap() {
        let name = f.unwrap().file_name().into_string().unwrap();
        match name.rsplit('.').next().unwrap() {
            "md" | "csv" => tables += 1,
            "svg" | "png" => charts += 1,
            _ => assert!(tail.contains(&name), "{name:?} not listed: {t}"),
        }
    }
    assert!(
        tail.contains(&format!(", {tables} tables ("))
            && tail.contains(&format!(", {charts} charts ("))
            && tail.contains("(--verbose lists every file)"),
        "{t}"
    );
    let json: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("results.json")).unwrap()).unwrap();
    assert_eq!(json["schema_version"], 1);
    assert!(!json["commit"].as_str().unwrap().is_empty());
    let shapes = json["workloads"][0]["shapes"].as_array().unwrap();
    assert_eq!(shapes.len(), 2);
    let mut rows = 0;
    for s in shapes {
        for r in s["rows"].as_array().unwrap() {
            // Rows either pass or decline the shape with its constraint; none fail.
            if r["status"] == "unsupported" {
                assert!(!r["reason"].as_str().unwrap().is_empty(), "{r}");
                continue;
            }
            rows += 1;
            assert_eq!(r["status"], "passed", "{r}");
            assert!(r["timing"]["median_ms"].as_f64().unwrap() > 0.0);
            let c = &r["check"];
            assert!(
                c["rel_error"].as_f64().unwrap() <= c["tolerance"].as_f64().unwrap(),
                "{r}"
            );
        }
    }
    assert!(rows >= 4, "both shapes have the CPU ladder");
    let md = std::fs::read_to_string(dir.join("gemm.md")).unwrap();
    assert!(
        md.contains("gemm-tiled") && md.contains("100x37x129"),
        "{md}"
    );
    let csv = std::fs::read_to_string(dir.join("gemm.csv")).unwrap();
    let cols = csv.lines().next().unwrap().split(',').count();
    assert!(csv.lines().all(|l| l.split(',').count() == cols), "{csv}");
    // `harness report` renders the same tables from the results file, digit for digit: the
    // JSON gives back every number as the run held it.
    let again = out.join("again");
    let o = harness(&[
        "report",
        dir.to_str().unwrap(),
        "--out",
        again.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", text(&o));
    for file in ["gemm.csv", "gemm.md"] {
        assert_eq!(
            std::fs::read_to_string(dir.join(file)).unwrap(),
            std::fs::read_to_string(again.join(file)).unwrap(),
            "{file} rendered again differs"
        );
    }
    std::fs::remove_dir_all(&out).unwrap();
}

#[test]
fn a_quiet_run_names_its_folder_and_a_verbose_log_times_each_row() {
    let out = temp_dir("verbosity");
    let run = |device: &str, flag: &str| {
        let dir = out.join(format!("{device}{flag}"));
        let o = harness(&[
            "run",
            "--device",
            device,
            "--workload",
            "softmax",
            "--sizes",
            "37x129",
            flag,
            "--out",
            dir.to_str().unwrap(),
        ]);
        assert!(o.status.success(), "{}", text(&o));
        (
            dir,
            String::from_utf8_lossy(&o.stdout).into_owned(),
            text(&o),
        )
    };
    for device in ["cpu", "sim"] {
        let (dir, stdout, _) = run(device, "--quiet");
        // The folder and its page, not the file list.
        assert!(
            stdout.ends_with(&format!(
                "\nRun folder: {}\nOpen in a browser: {}\n",
                dir.display(),
                dir.join("index.html").display()
            )),
            "{stdout}"
        );
        assert!(!stdout.contains("results.json"), "{stdout}");
        // stderr is not a terminal here, so the progress is plain lines: each row with the
        // time it took, the reference's, and each shape's.
        let (dir, stdout, t) = run(device, "--verbose");
        // Verbose: every file of the folder, one a line.
        for f in std::fs::read_dir(&dir).unwrap() {
            let name = f.unwrap().file_name().into_string().unwrap();
            assert!(
                stdout.lines().any(|l| l == format!("  {name}")),
                "{name} not listed: {stdout}"
            );
        }
        let timed = |l: &str| l.ends_with(" s)") && l.contains(" (");
        for id in ["softmax-naive", "softmax-warp"] {
            assert!(
                t.lines()
                    .any(|l| l.trim_start().starts_with(id) && timed(l)),
                "{device}: {t}"
            );
        }
        assert!(
            t.lines()
                .any(|l| l.contains("inputs and reference: ") && timed(l)),
            "{device}: {t}"
        );
        assert!(
            t.lines()
                .any(|l| l.starts_with("softmax 37x129 done in ") && l.ends_with(" s")),
            "{device}: {t}"
        );
    }
    std::fs::remove_dir_all(&out).unwrap();
}

#[test]
fn check_passes_on_the_cpu_and_lists_every_kernel() {
    let o = harness(&["check", "--device", "cpu"]);
    let t = text(&o);
    assert!(o.status.success(), "{t}");
    assert!(
        t.contains("pass  gemm-naive ") && t.contains("pass  gemm-tiled "),
        "{t}"
    );
    assert!(t.contains("17x33x65"), "awkward shapes are checked: {t}");
    assert!(
        t.contains("skip  cublas-sgemm "),
        "GPU-only rows say why they are skipped: {t}"
    );
    assert!(!t.contains("\nfail "), "{t}");
}

#[test]
fn check_takes_workload_sizes_and_kernels_like_run() {
    let o = harness(&[
        "check",
        "--device",
        "cpu",
        "--workload",
        "gemm",
        "--sizes",
        "17x33x65,5",
        "--kernels",
        "gemm-naive,gemm-tiled",
    ]);
    let t = text(&o);
    assert!(o.status.success(), "{t}");
    let rows: Vec<&str> = t.lines().filter(|l| l.starts_with("pass ")).collect();
    assert_eq!(rows.len(), 4, "two kernels on two shapes: {t}");
    assert!(t.contains("5x5x5") && t.contains("17x33x65"), "{t}");
    assert!(
        !t.contains("100x37x129"),
        "the config's shapes are not used: {t}"
    );
    // A kernel named twice is checked once, and so is a shape given twice.
    let o = harness(&[
        "check",
        "--device",
        "cpu",
        "--workload",
        "gemm",
        "--sizes",
        "5,5x5x5",
        "--kernels",
        "gemm-naive,gemm-naive",
    ]);
    let t = text(&o);
    assert!(o.status.success(), "{t}");
    assert_eq!(
        t.lines().filter(|l| l.starts_with("pass ")).count(),
        1,
        "{t}"
    );
    assert!(t.contains("gemm 5x5x5: listed twice; runs once"), "{t}");
    // A time limit for rows that no child process runs is said to limit nothing; with
    // --isolate each row has its process, and the limit holds.
    let limited = |isolate: bool| {
        let mut args = vec![
            "check",
            "--device",
            "cpu",
            "--workload",
            "gemm",
            "--sizes",
            "5",
        ];
        args.extend(["--kernels", "gemm-naive", "--row-timeout", "30"]);
        if isolate {
            args.push("--isolate");
        }
        let o = harness(&args);
        let t = text(&o);
        assert!(o.status.success() && t.contains("pass  gemm-naive "), "{t}");
        t
    };
    let note = "--row-timeout: no row of this run has a process of its own to limit";
    assert!(limited(false).contains(note));
    assert!(!limited(true).contains(note));
}

/// A run of kernels named with `--kernels` covers their workloads alone: `--sizes 64` is not
/// also read as a CNN batch, and no other workload writes an empty table.
#[test]
fn a_run_of_named_kernels_covers_only_their_workloads() {
    for device in ["cpu", "sim"] {
        let out = temp_dir(&format!("named-{device}"));
        let dir = out.join("run");
        let o = harness(&[
            "run",
            "--device",
            device,
            "--sizes",
            "64",
            "--kernels",
            "gemm-naive,gemm-tiled",
            "--out",
            dir.to_str().unwrap(),
        ]);
        let t = text(&o);
        assert!(o.status.success(), "{device}: {t}");
        assert!(dir.join("gemm.md").exists(), "{device}: {t}");
        let tables: Vec<String> = std::fs::read_dir(&dir)
            .unwrap()
            .filter_map(|e| e.ok()?.file_name().into_string().ok())
            .filter(|n| n.ends_with(".md"))
            .collect();
        assert_eq!(tables, ["gemm.md"], "{device}: {t}");
        assert!(!t.contains("cnn"), "{device}: {t}");
    }
}

/// Runs with different flags each get their own folder under the lab's runs, `latest` points at
/// the newest, and neither overwrites the other.
#[test]
fn runs_never_overwrite_each_other() {
    let lab = temp_dir("two-runs");
    for size in ["16", "24"] {
        let o = harness_in(
            &lab,
            &[
                "run",
                "--device",
                "cpu",
                "--kernels",
                "gemm-naive",
                "--sizes",
                size,
            ],
        );
        assert!(o.status.success(), "{}", text(&o));
    }
    let runs: Vec<_> = std::fs::read_dir(lab.join("runs"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| !p.is_symlink())
        .collect();
    assert_eq!(runs.len(), 2, "{runs:?}");
    for run in &runs {
        let md = std::fs::read_to_string(run.join("gemm.md")).unwrap();
        assert!(md.contains("16x16x16") || md.contains("24x24x24"), "{md}");
    }
    let latest = std::fs::read_to_string(lab.join("runs/latest/gemm.md")).unwrap();
    assert!(latest.contains("24x24x24"), "{latest}");
    // A folder that holds files is never a run's target.
    let o = harness_in(
        &lab,
        &[
            "run",
            "--device",
            "cpu",
            "--sizes",
            "16",
            "--out",
            runs[0].to_str().unwrap(),
        ],
    );
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    assert!(text(&o).contains("never overwrites"), "{}", text(&o));
    std::fs::remove_dir_all(&lab).unwrap();
}

#[test]
fn a_run_that_cannot_write_its_results_fails_before_computing() {
    let dir = temp_dir("out-file");
    let file = dir.join("results");
    std::fs::write(&file, "a file").unwrap();
    let o = harness(&[
        "run",
        "--device",
        "cpu",
        "--sizes",
        "64",
        "--out",
        file.to_str().unwrap(),
    ]);
    let t = text(&o);
    assert_eq!(o.status.code(), Some(2), "{t}");
    assert!(t.contains("already exists"), "{t}");
    assert!(!t.contains("gemm-naive"), "nothing ran: {t}");
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn shapes_lists_what_a_run_would_use_as_json() {
    let o = harness(&["shapes", "--device", "cpu", "--workload", "gemm"]);
    assert!(o.status.success(), "{}", text(&o));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let labels: Vec<&str> = v
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["label"].as_str().unwrap())
        .collect();
    assert_eq!(labels, vec!["256x256x256", "512x512x512"]);
    assert_eq!(v[0]["shape"]["workload"], "gemm");
    assert_eq!(v[0]["shape"]["m"], 256);
    // Without --device, the device a run would use: the GPU if one works, else the CPU.
    let here = if kernel::cuda::CudaDevice::open().is_ok() {
        "cuda"
    } else {
        "cpu"
    };
    let default = harness(&["shapes", "--workload", "gemm"]);
    let explicit = harness(&["shapes", "--device", here, "--workload", "gemm"]);
    assert!(default.status.success(), "{}", text(&default));
    assert_eq!(default.stdout, explicit.stdout);
}

#[test]
fn list_shows_the_ladder_in_order() {
    let o = harness(&["list", "--json"]);
    assert!(o.status.success(), "{}", text(&o));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let ids: Vec<&str> = v
        .as_array()
        .unwrap()
        .iter()
        .map(|k| k["id"].as_str().unwrap())
        .collect();
    let naive = ids.iter().position(|i| *i == "gemm-naive").unwrap();
    let tiled = ids.iter().position(|i| *i == "gemm-tiled").unwrap();
    assert!(naive < tiled, "{ids:?}");

    // The plain listing keeps its columns aligned however long an id is: each row's summary
    // starts where the header's `summary` does.
    let o = harness(&["list"]);
    let out = text(&o);
    let mut lines = out.lines();
    let start = lines.next().and_then(|h| h.find("summary")).unwrap();
    for (line, info) in lines.zip(v.as_array().unwrap()) {
        let summary = info["summary"].as_str().unwrap();
        assert_eq!(line.find(summary), Some(start), "{line}");
    }
}

#[test]
fn bad_input_is_refused_clearly() {
    let cases: [(&[&str], &str); 18] = [
        (
            &["inspect", "--include", "/no-such-folder", "Cargo.toml"],
            "--include /no-such-folder: no such folder",
        ),
        (
            &[
                "explain",
                "--kernel",
                "x.cu:k,block=32,grid=1",
                "--workload",
                "gem",
            ],
            "--workload: unknown workload \"gem\"; valid: gemm",
        ),
        // A peers file named but unreadable fails before the run, not after it.
        (
            &["run", "--device", "cpu", "--peers", "/no-such-peers.json"],
            "cannot read peers file /no-such-peers.json",
        ),
        (
            &[
                "run",
                "--device",
                "cpu",
                "--kernel",
                "x.cu:k,block=32,grid=1",
            ],
            "--device cpu runs the lab's CPU ports, and a kernel of yours is CUDA",
        ),
        (&["tune", "--limit", "0"], "0 is not in 1..="),
        (
            &["docs", "--results", "/no-such-results"],
            "--results /no-such-results: no such folder of published runs",
        ),
        (
            &["run", "--device", "cpu", "--sizes", "64,bogus"],
            "--sizes: \"bogus\" reads as a shape of none of this run's workloads",
        ),
        (&["run", "--device", "tpu"], "valid devices: cpu, cuda, sim"),
        // The figures go where the README and walkthroughs are; the ladder pages alone move.
        (
            &["docs", "--figures", "--out", "/tmp/elsewhere"],
            "the argument '--figures' cannot be used with '--out <OUT>'",
        ),
        (
            &["explain", "gemm-tiled", "--against", "conv-direct"],
            "gemm-tiled is a rung of gemm, and conv-direct of conv: set it beside a rung of gemm",
        ),
        (
            &["run", "--device", "cpu", "--row-timeout", "1e20"],
            "a row's time limit is from 0.1 to 86400 seconds",
        ),
        (
            &["check", "--device", "cpu", "--row-timeout", "1e-300"],
            "a row's time limit is from 0.1 to 86400 seconds",
        ),
        (
            &["inspect", "--block", "4294967295", "x.cu"],
            "4294967295 is not in 1..=1024",
        ),
        (
            &["inspect", "--smem", "4294962048", "x.cu"],
            "4294962048 is not in 0..=1048576",
        ),
        (
            &["run", "--device", "cpu", "--kernels", "gemm-tiles"],
            "unknown kernel \"gemm-tiles\"; did you mean gemm-tiled",
        ),
        (
            &["run", "--device", "cpu", "--sizes", "0"],
            "dimension M is 0",
        ),
        (&["run", "--device", "cpu", "--sizes", "9999999"], "limit"),
        (
            &["run", "--device", "cpu", "--workload", "fft"],
            "valid: gemm",
        ),
    ];
    for (args, want) in cases {
        let o = harness(args);
        let t = text(&o);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {t}");
        assert!(t.contains(want), "{args:?} should say {want:?}: {t}");
        assert!(!t.contains("panicked"), "{t}");
    }
    // A simulator setting that does not read is refused, naming it, not replaced by a default.
    let o = Command::new(env!("CARGO_BIN_EXE_harness"))
        .args([
            "check",
            "--device",
            "sim",
            "--kernels",
            "gemm-naive",
            "--sizes",
            "32",
        ])
        .env("LAB_SIM_TIMEOUT_S", "soon")
        .output()
        .unwrap();
    let t = text(&o);
    assert_eq!(o.status.code(), Some(2), "{t}");
    assert!(
        t.contains("LAB_SIM_TIMEOUT_S=\"soon\": expected seconds above 0"),
        "{t}"
    );
    // A lab folder that is a file is named as the variable that set it, not as --out.
    let file = temp_dir("lab-is-a-file").join("lab");
    std::fs::write(&file, "").unwrap();
    let o = harness_in(&file, &["run", "--device", "cpu", "--sizes", "32"]);
    let t = text(&o);
    assert_eq!(o.status.code(), Some(2), "{t}");
    assert!(
        t.contains("the lab's folder (LAB_DIR)") && !t.contains("--out"),
        "{t}"
    );
    let _ = std::fs::remove_dir_all(file.parent().unwrap());
}

#[test]
fn inspect_refuses_an_architecture_without_machine_code() {
    if let Err(e) = kernel::cuda::nvrtc::version() {
        panic!("{e}\nThis test needs NVRTC: run tools/install-cuda-tools.sh first.");
    }
    let file = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../examples/sgemm_guarded_ptx.cu"
    );
    for (arch, want) in [
        ("sm_99", "does not compile for sm_99; it compiles for "),
        ("compute_80", "compute_80 is a virtual architecture"),
        (
            "80",
            "\"80\" is not a GPU architecture; write it as sm_90 or sm_90a",
        ),
    ] {
        let o = harness(&["inspect", file, "--arch", arch]);
        let t = text(&o);
        assert_eq!(o.status.code(), Some(2), "{arch}: {t}");
        assert!(
            t.contains("error: --arch: ") && t.contains(want),
            "{arch}: {t}"
        );
    }
    let o = harness(&["inspect", file, "--arch", "sm_90a"]);
    assert!(o.status.success(), "{}", text(&o));
    // A header not found says how inspect is given its folder.
    let dir = temp_dir("inspect-header");
    let cu = dir.join("k.cu");
    std::fs::write(
        &cu,
        "#include \"x.cuh\"\n__global__ void k(float *a) { a[0] = 1; }\n",
    )
    .unwrap();
    let o = harness(&["inspect", cu.to_str().unwrap()]);
    let t = text(&o);
    assert_eq!(o.status.code(), Some(2), "{t}");
    assert!(t.contains("name that folder with --include DIR"), "{t}");
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn a_cache_folder_that_cannot_be_written_is_one_clear_error() {
    // A folder below a plain file cannot be made, even by root.
    let dir = temp_dir("cache");
    let file = dir.join("plain-file");
    std::fs::write(&file, "").unwrap();
    let cache = file.join("sim");
    let o = Command::new(env!("CARGO_BIN_EXE_harness"))
        .args([
            "check",
            "--device",
            "sim",
            "--workload",
            "softmax",
            "--sizes",
            "3x5",
        ])
        .env("LAB_DIR", dir.join("lab"))
        .env("KERNEL_LAB_SIM_CACHE", &cache)
        .output()
        .unwrap();
    let t = text(&o);
    assert_eq!(o.status.code(), Some(2), "{t}");
    assert!(
        t.contains(&format!("cannot write its builds into {}", cache.display()))
            && t.contains("set KERNEL_LAB_SIM_CACHE to a writable folder"),
        "{t}"
    );
    let o = Command::new(env!("CARGO_BIN_EXE_harness"))
        .arg("doctor")
        .env("KERNEL_LAB_SIM_CACHE", &cache)
        .output()
        .unwrap();
    let t = text(&o);
    assert!(
        t.contains("CANNOT WRITE there") && t.contains("point KERNEL_LAB_SIM_CACHE at"),
        "{t}"
    );
}

#[test]
fn check_checks_the_kernels_of_the_configuration() {
    let dir = temp_dir("check-config");
    let example = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../examples/sgemm_guarded_ptx.cu"
    );
    let cfg = dir.join("mine.toml");
    std::fs::write(
        &cfg,
        format!(
            "[[kernel]]\nfile = \"{example}\"\nentry = \"sgemm_guarded_ptx\"\nblock = 256\n\
             grid = \"tile:64x64\"\n"
        ),
    )
    .unwrap();
    let check = |device: &str| {
        harness(&[
            "check",
            "--config",
            cfg.to_str().unwrap(),
            "--device",
            device,
            "--workload",
            "gemm",
            "--sizes",
            "33x17x20",
            "--kernels",
            "gemm-naive",
        ])
    };
    let o = check("sim");
    let t = text(&o);
    assert!(o.status.success(), "{t}");
    assert!(
        t.lines().any(|l| l.starts_with("pass ") && l.contains("sgemm_guarded_ptx.cu:sgemm_guarded_ptx")),
        "{t}"
    );
    assert!(t.contains("2 passed, 0 failed"), "{t}");
    // The CPU runs CUDA code of no kind: asked for, it says so rather than passing over them
    // (without --device, the simulator checks them: user_kernels.rs).
    let o = check("cpu");
    let t = text(&o);
    assert!(o.status.success(), "{t}");
    assert!(
        t.contains("1 user kernel(s) ([[kernel]] sections of")
            && t.contains(") are not checked on the CPU")
            && t.contains(
                "without --device, the GPU checks them, or the simulator where there is none"
            ),
        "{t}"
    );
    // The same kernel given with --kernel, alone.
    let o = harness(&[
        "check",
        "--device",
        "sim",
        "--workload",
        "gemm",
        "--sizes",
        "33x17x20",
        "--kernel",
        &format!("{example}:sgemm_guarded_ptx,block=256,grid=tile:64x64"),
    ]);
    let t = text(&o);
    assert!(
        o.status.success() && t.contains("1 passed, 0 failed"),
        "{t}"
    );
    // Without --device it is checked where `run` runs it: on the GPU, or without one in the
    // simulator; alone either way, not beside every CPU port of the lab.
    let spec = format!("{example}:sgemm_guarded_ptx,block=256,grid=tile:64x64");
    let o = harness(&[
        "check",
        "--workload",
        "gemm",
        "--sizes",
        "33x17x20",
        "--kernel",
        &spec,
    ]);
    let t = text(&o);
    assert!(
        o.status.success() && t.contains("1 passed, 0 failed"),
        "{t}"
    );
    if t.contains("No GPU") {
        assert!(t.contains("the kernels run in the CUDA simulator"), "{t}");
    }
    // The CPU has only the lab's ports: asked for by name, it is refused with the devices that
    // do run it.
    let o = harness(&["check", "--device", "cpu", "--kernel", &spec]);
    let t = text(&o);
    assert_eq!(o.status.code(), Some(2), "{t}");
    assert!(
        t.contains("--device cpu runs the lab's CPU ports, and a kernel of yours is CUDA"),
        "{t}"
    );
}

#[test]
fn a_broken_config_names_file_line_and_key() {
    let dir = temp_dir("config");
    let cfg = dir.join("bad.toml");
    std::fs::write(&cfg, "seed = 1\n[shapes.gemm]\ncpu = [\"64\", \"12x-4\"]\n").unwrap();
    let o = harness(&["run", "--config", cfg.to_str().unwrap(), "--device", "cpu"]);
    let t = text(&o);
    assert_eq!(o.status.code(), Some(2), "{t}");
    assert!(
        t.contains("bad.toml:3") && t.contains("shapes.gemm.cpu"),
        "{t}"
    );
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn doctor_explains_what_it_found() {
    let o = harness(&["doctor"]);
    let t = text(&o);
    assert!(o.status.success(), "{t}");
    assert!(t.contains("NVRTC") && t.contains("GPU:"), "{t}");
}

/// `tune` in the simulator validates a few configurations of rung 09's grid on a tiny awkward
/// shape and writes the tune file without choosing one; with a configuration chosen in that
/// file, `run` names and uses it for rung 09. On the CPU there is nothing to tune.
#[test]
fn tune_in_the_simulator_writes_the_file_and_run_uses_its_choice() {
    let out = temp_dir("tune");
    let o = harness_in(
        &out,
        &[
            "tune", "--device", "sim", "--sizes", "36x20x44", "--limit", "3",
        ],
    );
    let t = text(&o);
    assert!(o.status.success(), "{t}");
    assert!(t.contains("validated only, no speed claimed (3/3"), "{t}");
    let path = out.join("tune").join("sim").join("tune-gemm.json");
    let mut file: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
    let size = &mut file["sizes"][0];
    assert_eq!(size["configs"].as_array().unwrap().len(), 3);
    assert!(size["chosen"].is_null(), "{size}");

    // Choose the third configuration (64x128x8, 128 threads) as if a GPU had timed it.
    size["chosen"] = size["configs"][2]["config"].clone();
    std::fs::write(&path, serde_json::to_string(&file).unwrap()).unwrap();
    let run = out.join("run");
    let o = harness_in(
        &out,
        &[
            "run",
            "--device",
            "sim",
            "--kernels",
            "gemm-tuned",
            "--workload",
            "gemm",
            "--sizes",
            "36x20x44",
            "--out",
            run.to_str().unwrap(),
        ],
    );
    let t = text(&o);
    assert!(o.status.success(), "{t}");
    let results = std::fs::read_to_string(run.join("results.json")).unwrap();
    assert!(
        results.contains("64x128x8 warp 32x64/2 (128 threads)"),
        "{results}"
    );

    let o = harness(&["tune", "--device", "cpu"]);
    let t = text(&o);
    assert!(
        o.status.success() && t.contains("nothing to tune on the CPU"),
        "{t}"
    );
    std::fs::remove_dir_all(&out).unwrap();
}

/// `check` takes rung 09 from the device's tune file, as `run` does: an unreadable one is
/// reported (and the default configuration used) by both.
#[test]
fn check_reads_the_devices_tune_file_as_run_does() {
    let dir = temp_dir("check-tune");
    std::fs::create_dir_all(dir.join("tune/sim")).unwrap();
    std::fs::write(dir.join("tune/sim/tune-gemm.json"), "{ not json").unwrap();
    let o = harness_in(
        &dir,
        &[
            "check",
            "--device",
            "sim",
            "--kernels",
            "gemm-tuned",
            "--sizes",
            "3x5x7",
        ],
    );
    let t = text(&o);
    assert!(
        t.contains("rung 09 uses its default configuration") && t.contains("tune-gemm.json"),
        "{t}"
    );
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn output_closed_early_ends_quietly() {
    use std::process::Stdio;
    let mut child = Command::new(env!("CARGO_BIN_EXE_harness"))
        .arg("list")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // The reader is gone before the first line, as in `harness list | head -0`.
    drop(child.stdout.take());
    let o = child.wait_with_output().unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(!err.contains("panicked"), "{err}");
}

#[test]
fn publish_copies_a_run_with_its_provenance() {
    let lab = temp_dir("publish-lab");
    let to = temp_dir("publish-to");
    let o = harness_in(
        &lab,
        &[
            "run",
            "--device",
            "cpu",
            "--workload",
            "gemm",
            "--sizes",
            "48",
            "--quiet",
        ],
    );
    assert!(o.status.success(), "{}", text(&o));
    let latest = lab.join("runs").join("latest");
    let real = std::fs::canonicalize(&latest).unwrap();
    let o = harness_in(
        &lab,
        &[
            "publish",
            latest.to_str().unwrap(),
            "--to",
            to.to_str().unwrap(),
        ],
    );
    assert!(o.status.success(), "{}", text(&o));
    let device = std::fs::read_dir(&to)
        .unwrap()
        .next()
        .unwrap()
        .unwrap()
        .path();
    for f in ["results.json", "gemm.md", "gemm.csv", "README.md"] {
        assert!(device.join(f).is_file(), "{f} not published");
    }
    // The web pages are not: `harness report` writes them from the results.
    assert!(real.join("index.html").is_file());
    assert!(!device.join("index.html").exists() && !device.join("html").exists());
    let readme = std::fs::read_to_string(device.join("README.md")).unwrap();
    let name = real.file_name().unwrap().to_str().unwrap();
    // The folder `latest` points at, not the link's name.
    assert!(readme.contains(&format!("Run folder `{name}`")), "{readme}");
    assert!(readme.contains("commit `"), "{readme}");
    assert!(!readme.contains("Also here"), "{readme}");

    // A second run published there replaces the first run's files and keeps what else the
    // folder holds: logs, an earlier run kept in a subfolder, notes.
    std::fs::create_dir_all(device.join("logs")).unwrap();
    std::fs::write(device.join("logs/gpu-check.log"), "log").unwrap();
    std::fs::write(device.join("NOTES.md"), "notes").unwrap();
    std::fs::write(device.join("gemm-roofline-48x48x48.svg"), "the first run's").unwrap();
    let o = harness_in(
        &lab,
        &[
            "run",
            "--device",
            "cpu",
            "--workload",
            "softmax",
            "--sizes",
            "3x5",
            "--quiet",
        ],
    );
    assert!(o.status.success(), "{}", text(&o));
    let publish = |run: &std::path::Path| {
        harness_in(
            &lab,
            &[
                "publish",
                run.to_str().unwrap(),
                "--to",
                to.to_str().unwrap(),
            ],
        )
    };
    let o = publish(&latest);
    let t = text(&o);
    assert!(o.status.success(), "{t}");
    assert!(
        t.contains("kept from the folder published before: NOTES.md, logs/"),
        "{t}"
    );
    assert!(device.join("logs/gpu-check.log").is_file() && device.join("NOTES.md").is_file());
    assert!(device.join("softmax.md").is_file());
    // The README names what is there besides this run.
    let readme = std::fs::read_to_string(device.join("README.md")).unwrap();
    assert!(
        readme.contains("Also here, kept from what was published for this device before (not written by this run): `NOTES.md`, `logs/`."),
        "{readme}"
    );
    assert!(
        !device.join("gemm.md").exists() && !device.join("gemm-roofline-48x48x48.svg").exists()
    );
    // The published folder onto itself would only rewrite its provenance.
    let o = publish(&device);
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    assert!(
        text(&o).contains("is already the published run of"),
        "{}",
        text(&o)
    );
    std::fs::remove_dir_all(&lab).unwrap();
    std::fs::remove_dir_all(&to).unwrap();
}

/// `--sim-blocks`: a real shape in the simulator checks what a sample of the blocks wrote and
/// says so on the row; a plan that needs every block is skipped with the reason; the flag is
/// refused off the simulator.
#[test]
fn a_sampled_simulator_run_says_what_it_checked() {
    let out = temp_dir("sim-blocks");
    let dir = out.join("run");
    let o = harness(&[
        "run",
        "--device",
        "sim",
        "--sim-blocks",
        "4",
        "--workload",
        "gemm",
        "--kernels",
        "gemm-tiled,gemm-wmma-fp16-convert",
        "--sizes",
        "200x230x70",
        "--out",
        dir.to_str().unwrap(),
    ]);
    let t = text(&o);
    // A kernel asked for by name that could not run makes the run exit 1.
    assert_eq!(o.status.code(), Some(1), "{t}");
    // 32x32 tiles over 200 x 230: 8 x 7 blocks; the 4 that ran are the corners, which write
    // 32x32, 32x6 (the last 6 columns), 8x32 (the last 8 rows) and 8x6 outputs.
    let corners = 32 * 32 + 32 * 6 + 8 * 32 + 8 * 6;
    assert!(
        t.contains(&format!(
            "pass (4 of 56 blocks run (--sim-blocks), {corners} of 46000 outputs checked"
        )),
        "{t}"
    );
    assert!(
        t.contains("skip gemm-wmma-fp16-convert: --sim-blocks 4: this plan has"),
        "{t}"
    );
    let md = std::fs::read_to_string(dir.join("gemm.md")).unwrap();
    assert!(md.contains("4 of 56 blocks run"), "{md}");
    // `check` says it too. Above the size where the CPU reference is sampled at random (275
    // GFLOP here), the reference is worked out where the sampled blocks wrote: the four corner
    // tiles' 4096 outputs, not the two of its random picks that fall in them.
    for (sizes, says) in [
        (
            "200x230x70",
            format!("; 4 of 56 blocks run (--sim-blocks), {corners} of 46000"),
        ),
        (
            "8192x4096x4096",
            "; 4 of 32768 blocks run (--sim-blocks), 4096 of 33554432".to_string(),
        ),
    ] {
        let o = harness(&[
            "check",
            "--device",
            "sim",
            "--sim-blocks",
            "4",
            "--workload",
            "gemm",
            "--kernels",
            "gemm-tiled",
            "--sizes",
            sizes,
        ]);
        assert!(o.status.success(), "{}", text(&o));
        assert!(text(&o).contains(&says), "{}", text(&o));
    }
    let o = harness(&["check", "--device", "cpu", "--sim-blocks", "4"]);
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    assert!(text(&o).contains("add --device sim"), "{}", text(&o));
}

/// What a run in the simulator will not do is said before it starts: time peers, or finish a
/// large shape quickly.
#[test]
fn a_simulator_run_says_what_it_will_not_do() {
    let out = temp_dir("sim-notes");
    let peers = format!(
        "{}/../results/nvidia-h200/logs/4-peers.json",
        env!("CARGO_MANIFEST_DIR")
    );
    let o = harness(&[
        "run",
        "--device",
        "sim",
        "--workload",
        "softmax",
        "--sizes",
        "8x16",
        "--kernels",
        "softmax-naive",
        "--peers",
        &peers,
        "--out",
        out.join("peers").to_str().unwrap(),
    ]);
    let t = text(&o);
    assert!(o.status.success(), "{t}");
    assert!(
        t.contains("--peers: the simulator times nothing, so no peer rows join its run"),
        "{t}"
    );
    // cuBLAS is not simulated: the row is skipped, and the shape's size is still said.
    let o = harness(&[
        "run",
        "--device",
        "sim",
        "--workload",
        "gemm",
        "--sizes",
        "1100",
        "--kernels",
        "cublas-sgemm",
        "--out",
        out.join("large").to_str().unwrap(),
    ]);
    let t = text(&o);
    assert!(
        t.contains("gemm 1100x1100x1100: 2.7 GFLOP is large for the simulator")
            && t.contains("--sim-blocks N"),
        "{t}"
    );
    std::fs::remove_dir_all(&out).unwrap();
}

/// A simulator run keeps its results so far as each shape ends, as a CPU or GPU run does: a
/// run stopped partway leaves the shapes it finished, and a finished run leaves only its folder.
#[test]
fn a_simulator_run_keeps_the_shapes_it_finished_while_it_runs() {
    let dir = temp_dir("sim-checkpoint");
    let out = dir.join("run");
    let unfinished = dir.join("run-unfinished");
    let lab = dir.join("lab");
    let run = |sizes| {
        let naive = [
            "run",
            "--device",
            "sim",
            "--workload",
            "gemm",
            "--kernels",
            "gemm-naive",
        ];
        [
            &naive[..],
            &["--sizes", sizes, "--out", out.to_str().unwrap()],
        ]
        .concat()
    };
    // A small shape, then one the simulator takes a while over: stopped during the second.
    let mut child = Command::new(env!("CARGO_BIN_EXE_harness"))
        .args(run("9x7x5,700x700x700"))
        .env("LAB_DIR", &lab)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let kept = unfinished.join("results.json");
    let start = std::time::Instant::now();
    while !kept.exists() && start.elapsed() < std::time::Duration::from_secs(300) {
        std::thread::sleep(std::time::Duration::from_millis(100));
    }
    child.kill().unwrap();
    let o = child.wait_with_output().unwrap();
    let printed = String::from_utf8_lossy(&o.stdout);
    assert!(
        printed.contains(&format!(
            "Until the run is saved, its results so far are in {}",
            unfinished.display()
        )),
        "{printed}"
    );
    let json = std::fs::read_to_string(&kept).unwrap();
    assert!(json.contains("\"label\": \"9x7x5\""), "{json}");
    assert!(!json.contains("\"label\": \"700x700x700\""), "{json}");
    assert!(
        json.contains("it stopped after 1 of 2 shapes; not measured: gemm 700x700x700"),
        "{json}"
    );
    // Run to its end, the run is saved and its unfinished copy goes.
    let _ = std::fs::remove_dir_all(&unfinished);
    let o = harness_in(&lab, &run("9x7x5"));
    assert!(o.status.success(), "{}", text(&o));
    assert!(out.join("results.json").exists() && !unfinished.exists());
}

/// `inspect` looks at one thing: a file, your kernels or the lab's. Given two, it says so
/// rather than show one and pass over the other; `--workload` names a spec's workload, as in
/// `run`.
#[test]
fn inspect_takes_one_thing_to_look_at() {
    let example = concat!(env!("CARGO_MANIFEST_DIR"), "/../examples/softmax_rows.cu");
    let spec = format!("{example}:softmax_rows,block=(min(cdiv(N,32)*32,1024)),grid=(M)");
    let o = harness(&["inspect", example, "--kernel", &spec]);
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    assert!(
        text(&o).contains(
            "inspect takes one of a FILE (its kernels), --kernel (your kernels as \
             the lab launches them) or --kernels (the lab's rungs); a FILE and --kernel were given"
        ),
        "{}",
        text(&o)
    );
    let o = harness(&["inspect", example, "--kernels", "gemm-tiled"]);
    assert!(
        text(&o).contains("a FILE and --kernels were given"),
        "{}",
        text(&o)
    );
    let o = harness(&["inspect", "--kernels", "gemm-tiled", "--workload", "gemm"]);
    assert!(
        text(&o).contains("--workload names the workload of a --kernel spec that names none"),
        "{}",
        text(&o)
    );
    // Without a workload the spec is told to name one, in the words inspect takes.
    let o = harness(&["inspect", "--kernel", &spec]);
    assert!(
        text(&o).contains("or run it with a single --workload"),
        "{}",
        text(&o)
    );
    if kernel::cuda::nvrtc::version().is_ok() {
        let o = harness(&[
            "inspect",
            "--workload",
            "softmax",
            "--kernel",
            &spec,
            "--sizes",
            "3x130",
        ]);
        assert!(o.status.success(), "{}", text(&o));
        assert!(
            text(&o).contains("softmax_rows sm_80       160"),
            "{}",
            text(&o)
        );
        // With --sass, the SASS of the kernel as the lab launches it, after the table.
        if harness::sass::Disassembler::find().is_ok() {
            let mut args = vec!["inspect", "--workload", "softmax", "--kernel", &spec];
            args.extend(["--sizes", "3x130", "--arch", "sm_90", "--sass"]);
            let o = harness(&args);
            let t = text(&o);
            assert!(o.status.success(), "{t}");
            let listing = t
                .find("== softmax_rows.cu:softmax_rows: ")
                .unwrap_or_else(|| panic!("no SASS heading in {t}"));
            assert!(t[listing..].contains("EXIT"), "{t}");
        }
    }
}

/// The simulator times nothing: calibrating it is refused before anything is measured.
#[test]
fn calibrating_the_simulator_is_refused() {
    let o = harness(&["calibrate", "--device", "sim"]);
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    assert!(
        text(&o).contains("--device sim: the simulator checks kernels and times nothing"),
        "{}",
        text(&o)
    );
    assert!(!text(&o).contains("Measuring"), "{}", text(&o));
}
