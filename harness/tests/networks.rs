//! The networks through the harness: a CPU run writes the time by category, the Amdahl table
//! and the charts, with figures that add up; the simulator runs the composed plans, FP16
//! conversions and glue kernels included, and checks them against the f64 forward pass.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

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

fn temp_dir(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("lab-networks-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

#[test]
fn a_cpu_run_writes_the_breakdown_amdahl_and_charts() {
    let lab = temp_dir("cpu");
    let dir = lab.join("run");
    let o = harness(
        &lab,
        &[
            "run",
            "--device",
            "cpu",
            "--workload",
            "cnn",
            "--sizes",
            "5",
            "--out",
            dir.to_str().unwrap(),
        ],
    );
    let t = text(&o);
    assert!(o.status.success(), "{t}");
    assert!(t.contains("Amdahl's law"), "{t}");
    for f in [
        "cnn-breakdown.md",
        "cnn-breakdown-5.svg",
        "cnn-batch-sweep.svg",
        "index.html",
    ] {
        assert!(dir.join(f).is_file(), "{f} missing: {t}");
    }
    let json: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("results.json")).unwrap()).unwrap();
    let nets = json["networks"].as_array().expect("a networks section");
    assert_eq!(nets.len(), 1);
    let rows = nets[0]["rows"].as_array().unwrap();
    assert!(rows.len() >= 5, "one row per convolution rung");
    for r in rows {
        let total = r["total_ms"].as_f64().unwrap();
        let steps: f64 = r["steps"]
            .as_array()
            .unwrap()
            .iter()
            .map(|s| s["ms"].as_f64().unwrap())
            .sum();
        // On the CPU the layers are timed inside the pass they add up to.
        assert!(steps > 0.0 && steps <= total * 1.0001, "{r}");
        assert_eq!(r["steps"].as_array().unwrap().len(), 7, "seven layers");
    }
    let sweep = &nets[0]["batch_sweep"]["points"];
    let batches: Vec<u64> = sweep
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["batch"].as_u64().unwrap())
        .collect();
    assert_eq!(batches, [1, 2, 4, 5]);
    let md = std::fs::read_to_string(dir.join("cnn-breakdown.md")).unwrap();
    assert!(
        md.contains("| cnn-conv-fused | cnn-conv-direct | conv-fused | convolution |"),
        "{md}"
    );
}

#[test]
fn the_simulator_runs_the_composed_networks_with_their_conversions() {
    let lab = temp_dir("sim");
    for (workload, size, kernels) in [
        ("cnn", "1", "cnn-conv-direct,cnn-conv-wmma-fp16"),
        (
            "encoder",
            "1x16x64x1",
            "encoder-gemm-naive,encoder-gemm-wmma-fp16,encoder-attn-flash2-mma-bf16",
        ),
    ] {
        let o = harness(
            &lab,
            &[
                "check",
                "--device",
                "sim",
                "--workload",
                workload,
                "--sizes",
                size,
                "--kernels",
                kernels,
            ],
        );
        let t = text(&o);
        assert!(o.status.success(), "{workload}: {t}");
        for k in kernels.split(',') {
            let line = t
                .lines()
                .find(|l| l.contains(k))
                .unwrap_or_else(|| panic!("{k}: {t}"));
            assert!(line.contains("pass"), "{k}: {line}");
        }
    }
}
