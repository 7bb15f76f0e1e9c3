//! The run pages end to end: a CPU run of every workload and a small simulator run (with a
//! kernel of examples/ as your kernel, which gets a page) write `index.html` and its pages,
//! the console names it, `harness report` and `harness compare --html` write theirs; every
//! link resolves, the pages stay within their budget; then
//! Chromium (tools/html_check.py, through Playwright) opens every page: no console error, no
//! broken link, a row per rung, charts with a size, a tooltip on hover, and a screenshot of the
//! run page. tools/install-browser.sh installs the browser; without it this test fails.

use harness::report::html::check::{BUDGET_BYTES, Site, html_bytes};
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

fn harness(lab: &Path, args: &[&str]) -> Output {
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

/// Runs `args` into `dir` and checks the pages there without a browser.
fn run_into(lab: &Path, dir: &Path, args: &[&str]) {
    let mut all = vec!["run"];
    all.extend_from_slice(args);
    all.extend(["--out", dir.to_str().unwrap()]);
    let o = harness(lab, &all);
    let t = text(&o);
    assert!(o.status.success(), "{t}");
    let index = dir.join("index.html");
    let stdout = String::from_utf8_lossy(&o.stdout);
    assert!(
        stdout
            .trim_end()
            .ends_with(&format!("Open in a browser: {}", index.display())),
        "the last line names the page: {t}"
    );
    pages_hold(dir);
}

fn pages_hold(dir: &Path) {
    let site = Site::read(dir).unwrap();
    let broken = site.broken_links();
    assert!(broken.is_empty(), "{dir:?}: {broken:#?}");
    assert!(site.unreached("index.html").is_empty(), "{dir:?}");
    let bytes = html_bytes(dir).unwrap();
    assert!(bytes < BUDGET_BYTES, "{dir:?}: {bytes} bytes of pages");
}

#[test]
fn run_pages_load_in_a_browser() {
    let root = std::env::temp_dir().join(format!("lab-html-report-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&root);
    std::fs::create_dir_all(&root).unwrap();
    let lab = root.join("lab");

    // Every workload on the CPU, at the small shapes, timed only as much as the pages need; the
    // simulator on one small GEMM.
    let cpu = root.join("cpu");
    let quick = repo().join("harness/tests/fixtures/quick-timing.toml");
    run_into(
        &lab,
        &cpu,
        &[
            "--device",
            "cpu",
            "--small",
            "--config",
            quick.to_str().unwrap(),
            "-q",
        ],
    );
    let sim = root.join("sim");
    let guarded = repo().join("examples/sgemm_guarded_ptx.cu");
    run_into(
        &lab,
        &sim,
        &[
            "--device",
            "sim",
            "--workload",
            "gemm",
            "--sizes",
            "100x37x129",
            "--kernels",
            "gemm-naive,gemm-tiled,gemm-wmma-tf32",
            "--kernel",
            &format!(
                "{}:sgemm_guarded_ptx,block=256,grid=tile:64x64,against=gemm-tiled",
                guarded.display()
            ),
            "-q",
        ],
    );
    // Your kernel's page: the run recorded it, and the report loads it again from its file.
    let mine =
        std::fs::read_to_string(sim.join("html/rung-sgemm_guarded_ptx.cu_sgemm_guarded_ptx.html"))
            .unwrap();
    assert!(mine.contains("Run with this option"), "{mine}");
    // Set beside a rung (`against=`): the page diffs the file as written against the rung's.
    let diff = mine.replace("&#x2f;", "/");
    assert!(
        diff.contains("set beside gemm-tiled (gemm rung 02)")
            && diff.contains("--- gemm-tiled")
            && diff.contains("-// file: baseline/kernels/02_tiled.cu")
            && diff.contains("+// file: ")
            && diff.contains("examples/sgemm_guarded_ptx.cu")
            && mine.contains("Parent: <a href=\"rung-gemm-tiled.html\">gemm-tiled</a>"),
        "{mine}"
    );

    // `harness report` writes the pages again from the results alone.
    let again = root.join("again");
    let o = harness(
        &lab,
        &[
            "report",
            cpu.to_str().unwrap(),
            "--out",
            again.to_str().unwrap(),
        ],
    );
    assert!(o.status.success(), "{}", text(&o));
    pages_hold(&again);

    // Two runs side by side (here the same one twice).
    let cmp = root.join("compare");
    let o = harness(
        &lab,
        &[
            "compare",
            cpu.to_str().unwrap(),
            cpu.to_str().unwrap(),
            "--html",
            "--out",
            cmp.to_str().unwrap(),
        ],
    );
    assert!(o.status.success(), "{}", text(&o));
    let page = std::fs::read_to_string(cmp.join("index.html")).unwrap();
    assert!(page.contains("gemm-naive"), "{page}");
    // A run against itself: no row differs beyond the noise, and the page and console say so.
    assert!(page.contains("~1.00x") && page.contains("inside the noise"));
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(
        out.contains("B is faster in 0 and slower in 0 beyond the noise"),
        "{out}"
    );

    // The folder holds the run's results: the same report again is welcome there...
    let o = harness(&lab, &["report", again.to_str().unwrap()]);
    assert!(o.status.success(), "{}", text(&o));
    // ...and what would overwrite another run's files is refused, saying why, and writes
    // nothing: another run's report into the folder of the first...
    let o = harness(
        &lab,
        &[
            "report",
            sim.to_str().unwrap(),
            "--out",
            again.to_str().unwrap(),
        ],
    );
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    assert!(
        text(&o).contains("holds the report of another run (")
            && text(&o).contains("give --out an empty or new folder"),
        "{}",
        text(&o)
    );
    // ...a comparison into a run folder, and two runs with no timed row in common (a
    // simulator run times nothing).
    let o = harness(
        &lab,
        &[
            "compare",
            cpu.to_str().unwrap(),
            cpu.to_str().unwrap(),
            "--out",
            sim.to_str().unwrap(),
        ],
    );
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    assert!(text(&o).contains("is a run folder"), "{}", text(&o));
    let none = root.join("compare-none");
    let o = harness(
        &lab,
        &[
            "compare",
            cpu.to_str().unwrap(),
            sim.to_str().unwrap(),
            "--out",
            none.to_str().unwrap(),
        ],
    );
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    assert!(text(&o).contains("share no timed row"), "{}", text(&o));
    assert!(!none.exists());
    // Two simulator runs compare by their counts, in the terminal.
    let o = harness(
        &lab,
        &["compare", sim.to_str().unwrap(), sim.to_str().unwrap()],
    );
    assert!(o.status.success(), "{}", text(&o));
    assert!(
        text(&o).contains("A simulator run times nothing: each cell is what it counted in A"),
        "{}",
        text(&o)
    );
    // A row that passed in A and fails in B is a change that broke it: named, and the exit
    // code says so; the other way round, B fixed it.
    let broken = root.join("sim-broken");
    std::fs::create_dir_all(&broken).unwrap();
    let mut json: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(sim.join("results.json")).unwrap()).unwrap();
    let rows = json["workloads"][0]["shapes"][0]["rows"]
        .as_array_mut()
        .unwrap();
    let row = rows.iter_mut().find(|r| r["id"] == "gemm-tiled").unwrap();
    row["status"] = "failed".into();
    std::fs::write(broken.join("results.json"), json.to_string()).unwrap();
    let o = harness(
        &lab,
        &["compare", sim.to_str().unwrap(), broken.to_str().unwrap()],
    );
    assert_eq!(o.status.code(), Some(1), "{}", text(&o));
    assert!(
        text(&o).contains("failed in B")
            && String::from_utf8_lossy(&o.stderr).contains(
                "B fails 1 row that A passed, declined or did not run: gemm 100x37x129 gemm-tiled"
            ),
        "{}",
        text(&o)
    );
    let o = harness(
        &lab,
        &["compare", broken.to_str().unwrap(), sim.to_str().unwrap()],
    );
    assert!(o.status.success(), "{}", text(&o));
    assert!(text(&o).contains("failed in A"), "{}", text(&o));
    // Two timed runs, every row failing in B: no time to compare, the failures named.
    let all_broken = root.join("cpu-broken");
    std::fs::create_dir_all(&all_broken).unwrap();
    let mut json: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(cpu.join("results.json")).unwrap()).unwrap();
    for w in json["workloads"].as_array_mut().unwrap() {
        for s in w["shapes"].as_array_mut().unwrap() {
            for r in s["rows"].as_array_mut().unwrap() {
                if r["status"] == "passed" {
                    r["status"] = "failed".into();
                }
            }
        }
    }
    std::fs::write(all_broken.join("results.json"), json.to_string()).unwrap();
    let o = harness(
        &lab,
        &[
            "compare",
            cpu.to_str().unwrap(),
            all_broken.to_str().unwrap(),
        ],
    );
    assert_eq!(o.status.code(), Some(1), "{}", text(&o));
    assert!(
        text(&o).contains("share no timed row: B fails where A passed")
            && String::from_utf8_lossy(&o.stderr).contains("gemm-naive"),
        "{}",
        text(&o)
    );

    // Chromium.
    let python = std::env::var("LAB_PYTHON").unwrap_or_else(|_| "python3".into());
    let o = Command::new(&python)
        .arg(repo().join("tools/html_check.py"))
        .args([&cpu, &sim])
        .output()
        .unwrap_or_else(|e| panic!("{python} does not run ({e}): run tools/install-browser.sh"));
    assert!(
        o.status.success(),
        "the browser check failed (tools/install-browser.sh installs Chromium and \
         Playwright):\n{}",
        text(&o)
    );
    for run in [&cpu, &sim] {
        let shot = std::fs::read(run.join("index-screenshot.png")).unwrap();
        assert_eq!(&shot[1..4], b"PNG");
    }
    // Kept for eyes when LAB_KEEP_PAGES is set.
    if std::env::var_os("LAB_KEEP_PAGES").is_none() {
        std::fs::remove_dir_all(&root).unwrap();
    } else {
        eprintln!("pages kept in {}", root.display());
    }
}
