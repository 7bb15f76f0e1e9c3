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
    let ldsm = table
        .lines()
        .find(|l| l.contains("`gemm_mma_ldmatrix`"))
        .unwrap();
    assert!(!ldsm.contains("| - | - | - | - |"), "{ldsm}");
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
