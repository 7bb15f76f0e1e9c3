//! `tools/ncu_summary.py`, which turns Nsight Compute's CSV into the profile tables, and the
//! metric list `tools/gpu-check.sh` asks ncu for (one list, in the script). ncu leaves out a
//! metric the GPU does not have without an error: on an H200 the LDS/STS conflict and GMMA
//! metrics of an earlier list came back absent, and the tables showed `-` with no word why.
//! The fixture is that run's real CSV.

use std::path::{Path, PathBuf};
use std::process::Command;

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

fn summary(args: &[&str]) -> String {
    let o = Command::new("python3")
        .arg(root().join("tools/ncu_summary.py"))
        .args(args)
        .output()
        .expect("python3 runs");
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    String::from_utf8(o.stdout).unwrap()
}

#[test]
fn the_summary_names_every_metric_ncu_left_out() {
    let hopper = summary(&["--metrics", "9"]);
    let ampere = summary(&["--metrics", "8"]);
    let asked: Vec<&str> = hopper.trim().split(',').collect();
    assert!(asked.iter().any(|m| m.contains("gmma")), "{hopper}");
    assert!(!ampere.contains("gmma"), "{ampere}");
    for op in ["op_ld.sum", "op_st.sum", "op_ldsm.sum", "op_ldgsts.sum"] {
        assert!(asked.iter().any(|m| m.ends_with(op)), "no {op} in {hopper}");
    }

    let csv = root().join("results/nvidia-h200/logs/ncu-gemm.csv");
    let text = std::fs::read_to_string(&csv).unwrap();
    let header = text.lines().find(|l| l.starts_with('"')).unwrap();
    let table = summary(&[csv.to_str().unwrap()]);
    let absent_line = table
        .lines()
        .find(|l| l.starts_with("Asked for but absent"))
        .unwrap_or("");
    for m in &asked {
        let in_csv = header.contains(&format!("\"{m}\""));
        assert_eq!(
            absent_line.contains(&format!("`{m}`")),
            !in_csv,
            "{m}: in the CSV {in_csv}; absent line: {absent_line}"
        );
    }
    // A metric the CSV holds is a number in its column: ldmatrix's conflicts of rung 15.
    let cells = |l: &str| -> Vec<String> { l.split('|').map(|c| c.trim().to_string()).collect() };
    let head = cells(table.lines().next().unwrap());
    let col = head.iter().position(|h| h == "LDSM conflicts").unwrap();
    let ldsm = table
        .lines()
        .find(|l| l.contains("`gemm_mma_ldmatrix`"))
        .unwrap();
    let cell = &cells(ldsm)[col];
    assert!(
        cell.replace(',', "").parse::<u64>().is_ok(),
        "{cell}: {ldsm}"
    );
}

#[test]
fn gpu_check_asks_ncu_for_the_summarys_metrics() {
    let script = std::fs::read_to_string(root().join("tools/gpu-check.sh")).unwrap();
    assert!(
        script.contains("metrics=$(python3 tools/ncu_summary.py --metrics"),
        "gpu-check.sh keeps its own metric list"
    );
    assert!(
        !script.contains("bank_conflicts"),
        "a metric name is spelled in gpu-check.sh"
    );
}

/// `tools/ncu_gap.py` on a report of two launches, a rung and a library kernel, in the layout
/// of Nsight Compute's details and source pages (CSV, 2023 and later): the fixture's values are
/// made up, its columns are ncu's.
#[test]
fn the_gap_summary_sets_each_rung_beside_the_library_kernel() {
    let fixtures = root().join("harness/tests/fixtures");
    let details = fixtures.join("ncu-gap-details.csv");
    let source = fixtures.join("ncu-gap-source.csv");
    let md = Command::new("python3")
        .arg(root().join("tools/ncu_gap.py"))
        .args([&details, &source])
        .output()
        .expect("python3 runs");
    assert!(
        md.status.success(),
        "{}",
        String::from_utf8_lossy(&md.stderr)
    );
    let md = String::from_utf8(md.stdout).unwrap();

    // One column per launch; a cutlass wrapper is labelled by its template argument.
    let header = md.lines().find(|l| l.starts_with("| section |")).unwrap();
    assert!(header.contains("#0 `gemm_mma_128x256`"), "{header}");
    assert!(
        header.contains("#1 `cutlass_80_tensorop_f16_s16816gemm"),
        "{header}"
    );
    let busy = md
        .lines()
        .find(|l| l.contains("Issue Slots Busy (%)"))
        .unwrap();
    assert!(busy.ends_with("| 41.20 | 78.90 |"), "{busy}");

    // Rules with an estimated speedup, largest first; one without an estimate is left out.
    let issue = md.find("IssueSlotUtilization (est. 59%)").expect(&md);
    let cpi = md.find("CPIStall (est. 31%)").expect(&md);
    assert!(issue < cpi, "{md}");
    assert!(!md.contains("SOLBottleneck"), "{md}");

    // The rung's SASS lines by stall samples: its HMMA first, with the samples by opcode; the
    // `selected` samples (issuing, not stalled) and `_not_issued` columns are not reasons.
    let rung = md.split("### #0 `gemm_mma_128x256`").nth(2).expect(&md);
    assert!(
        rung.contains("500 samples; by opcode: HMMA 60%, LDSM 24%, LDGSTS 12%, BAR 4%"),
        "{rung}"
    );
    let first = rung.lines().find(|l| l.starts_with("| 0x")).unwrap();
    assert!(
        first.contains("HMMA.16816.F32")
            && first.contains("| 300 | 60.0% | math_pipe_throttle 67% |"),
        "{first}"
    );
    let ldsm = rung.lines().find(|l| l.contains("LDSM.16.M88.4")).unwrap();
    assert!(ldsm.ends_with("| long_scoreboard 83% |"), "{ldsm}");
    assert!(
        !md.contains("selected") && !md.contains("not_issued"),
        "{md}"
    );
}

/// The `gap` step's profiles name kernels and shapes the harness knows: a renamed rung or a
/// misspelt shape would otherwise be found only on a GPU, in the middle of its hour.
#[test]
fn gpu_checks_gap_profiles_name_kernels_and_shapes_the_harness_has() {
    let script = std::fs::read_to_string(root().join("tools/gpu-check.sh")).unwrap();
    let block = script
        .split("gap_profiles=(")
        .nth(1)
        .and_then(|rest| rest.split("\n)").next())
        .expect("gpu-check.sh has gap_profiles=( ... )");
    let harness = env!("CARGO_BIN_EXE_harness");
    let list = Command::new(harness).arg("list").output().unwrap();
    let list = String::from_utf8(list.stdout).unwrap();
    let mut profiles = 0;
    for line in block.lines().map(str::trim).filter(|l| l.starts_with('"')) {
        let words: Vec<&str> = line.trim_matches('"').split_whitespace().collect();
        let [_name, workload, size, ids] = words[..] else {
            panic!("a gap profile is NAME WORKLOAD SHAPE KERNELS: {line}")
        };
        let shapes = Command::new(harness)
            .args([
                "shapes",
                "--device",
                "cuda",
                "--workload",
                workload,
                "--sizes",
                size,
            ])
            .output()
            .unwrap();
        assert!(
            shapes.status.success(),
            "{line}: {}",
            String::from_utf8_lossy(&shapes.stderr)
        );
        for id in ids.split(',') {
            assert!(
                list.lines().any(|l| {
                    let cols: Vec<&str> = l.split_whitespace().collect();
                    cols.first() == Some(&workload) && cols.get(2) == Some(&id)
                }),
                "{line}: `harness list` has no {workload} kernel {id}"
            );
        }
        profiles += 1;
    }
    assert!(profiles >= 2, "{block}");
}
