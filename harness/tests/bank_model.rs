//! The simulator's shared-memory bank model against the GPU that measured it: the published
//! H200 run profiled every rung with Nsight Compute at the workloads' small shapes
//! (`results/nvidia-h200/logs/4-ncu-*.md`), which the simulator runs in full. For each row
//! below, the bank conflicts the model counts per instruction kind must come within 1% of
//! what ncu counted for the same kernel at the same shape.
//!
//! Left out, because the model cannot see them the way the GPU does:
//! - rows whose shared-memory traffic goes through WMMA's loads and stores (not counted), and
//!   the stores of `gemm-wmma-cp-async`, whose tile of C goes through WMMA's;
//! - `gemm-regblock-2d`, whose A reads nvcc merges across unrolled k iterations into 16-byte
//!   loads while the host compiler keeps them 4 bytes wide;
//! - the cp.async conflicts of `gemm-mma-ldmatrix` and `gemm-mma-128x256`: each quarter-warp
//!   of their copies touches each bank at most once, yet the H200 counted a few hundred there
//!   (and none for `gemm-mma-dbuf`): what it counts is not in the addresses as this model
//!   reads them.

use harness::config::Config;
use harness::registry;
use harness::run::evaluate_alone;
use kernel::{Shape, Workload};
use std::collections::HashMap;

const ALL: &[&str] = &["LDS", "STS", "LDSM", "LDGSTS"];
const NO_LDGSTS: &[&str] = &["LDS", "STS", "LDSM"];
const NO_STS: &[&str] = &["LDS", "LDSM", "LDGSTS"];

/// (workload, row, the kernel's entry as ncu names it, the kinds compared)
const ROWS: &[(&str, &str, &str, &[&str])] = &[
    ("gemm", "gemm-tiled", "gemm_tiled", ALL),
    ("gemm", "gemm-regblock-1d", "gemm_regblock_1d", ALL),
    ("gemm", "gemm-vectorized", "gemm_vectorized", ALL),
    ("gemm", "gemm-warptile", "gemm_warptile", ALL),
    ("gemm", "gemm-double-buffer", "gemm_double_buffer", ALL),
    ("gemm", "gemm-tuned", "gemm_tuned", ALL),
    ("gemm", "gemm-wmma-cp-async", "gemm_wmma_cp_async", NO_STS),
    ("gemm", "gemm-mma-ldmatrix", "gemm_mma_ldmatrix", NO_LDGSTS),
    ("gemm", "gemm-mma-dbuf", "gemm_mma_double_buffer", ALL),
    ("gemm", "gemm-mma-128x256", "gemm_mma_128x256", NO_LDGSTS),
    ("linear", "linear-fused", "linear_fused", ALL),
    ("attention", "attn-flash2-fp32", "attn_flash2_fp32", ALL),
    (
        "attention",
        "attn-flash2-mma-fp16",
        "attn_flash2_mma_fp16",
        ALL,
    ),
];

/// The conflicts per kind of each kernel of a profile summary (its first row of that name).
fn profile(workload: &str) -> HashMap<String, HashMap<String, Option<u64>>> {
    let path = format!(
        "{}/../results/nvidia-h200/logs/4-ncu-{workload}.md",
        env!("CARGO_MANIFEST_DIR")
    );
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path}: {e}"));
    let cells = |line: &str| -> Vec<String> {
        line.trim()
            .trim_matches('|')
            .split('|')
            .map(|c| c.trim().trim_matches('`').to_string())
            .collect()
    };
    let mut lines = text.lines().filter(|l| l.starts_with('|'));
    let header = cells(lines.next().expect("a table"));
    let col = |name: &str| header.iter().position(|h| h == name);
    let kernel = col("kernel").expect("a kernel column");
    let mut out: HashMap<String, HashMap<String, Option<u64>>> = HashMap::new();
    for line in lines.skip(1) {
        let c = cells(line);
        let counts = ALL
            .iter()
            .map(|k| {
                let v = col(&format!("{k} conflicts"))
                    .and_then(|i| c[i].replace(',', "").parse::<u64>().ok());
                (k.to_string(), v)
            })
            .collect();
        out.entry(c[kernel].clone()).or_insert(counts);
    }
    out
}

#[test]
fn the_bank_model_counts_the_conflicts_the_h200_measured() {
    let dev = harness::select::simulator(None).expect("the simulator needs g++");
    let config = Config::defaults();
    let all = registry::all();
    // Their modules built on every core first (the profiled shapes are the bank sections').
    let rows: Vec<&dyn kernel::Kernel> = ROWS
        .iter()
        .filter_map(|&(_, id, _, _)| registry::find(&all, id).ok())
        .collect();
    harness::cmd::explain::prebuild(&rows);
    let mut compared = Vec::new();
    let mut wrong = Vec::new();
    for &(w, id, entry, kinds) in ROWS {
        let workload = Workload::parse(w).expect("a workload");
        // The shape the profile was taken at: the small headline shape of `gpu-check.sh`.
        let shape: Shape = config
            .shapes(workload, "sim")
            .into_iter()
            .find(|s| {
                let label = s.label();
                profile_shape(w).is_some_and(|p| p == label)
            })
            .unwrap_or_else(|| panic!("{w}: the profiled shape is not a simulator shape"));
        let measured = profile(w);
        let gpu = measured
            .get(entry)
            .unwrap_or_else(|| panic!("{entry} is not in the {w} profile"));
        let k = registry::find(&all, id).expect("a registered row");
        let row = evaluate_alone(&dev, &all, k, &shape, &config);
        assert!(row.passed(), "{id}: {:?}", row.reason);
        let banks = row.banks.expect("the simulator counts bank conflicts");
        for (kind, count) in banks.kinds() {
            if !kinds.contains(&kind) {
                continue;
            }
            let gpu = gpu[kind].unwrap_or_else(|| panic!("{entry}: ncu has no {kind} count"));
            let sim = count.conflicts();
            compared.push(format!("{id} {kind}: simulator {sim}, H200 {gpu}"));
            if sim.abs_diff(gpu) as f64 > 0.01 * gpu as f64 {
                wrong.push(format!("{id} {kind}: simulator {sim}, H200 {gpu}"));
            }
        }
    }
    println!("{}", compared.join("\n"));
    assert!(compared.len() >= 40, "compared only {}", compared.len());
    assert!(
        wrong.is_empty(),
        "off by more than 1%:\n{}",
        wrong.join("\n")
    );
}

/// Linear rung 04 pads the tiles whose transposed stores the H200 counted 7 conflicts a request
/// for in rung 03 (the test above), and rung 05 takes GEMM rung 07's warp tiles for the reads:
/// in the model each takes its kind of conflict away, the other kind as its parent's.
#[test]
fn padding_then_warp_tiles_take_the_linear_layers_conflicts_away_one_kind_at_a_time() {
    let dev = harness::select::simulator(None).expect("the simulator needs g++");
    let config = Config::defaults();
    let all = registry::all();
    let shape = config.shapes(Workload::Linear, "sim")[0];
    let banks = |id: &str| {
        let k = registry::find(&all, id).expect("a registered row");
        let row = evaluate_alone(&dev, &all, k, &shape, &config);
        assert!(row.passed(), "{id}: {:?}", row.reason);
        row.banks.expect("the simulator counts bank conflicts")
    };
    let fused = banks("linear-fused");
    let padded = banks("linear-fused-padded");
    let warptile = banks("linear-fused-warptile");
    assert_eq!(fused.sts.conflicts(), 7 * fused.sts.requests, "{fused:?}");
    assert!(fused.lds.conflicts() > 0, "{fused:?}");
    assert!(padded.sts.requests > 0, "{padded:?}");
    assert_eq!(padded.sts.conflicts(), 0, "{padded:?}");
    assert_eq!(padded.lds, fused.lds);
    assert_eq!(warptile.sts, padded.sts);
    assert_eq!(warptile.lds.requests, padded.lds.requests);
    assert_eq!(warptile.lds.conflicts(), 0, "{warptile:?}");
}

/// The shape `gpu-check.sh` profiled a workload at, from its log.
fn profile_shape(workload: &str) -> Option<String> {
    let path = format!(
        "{}/../results/nvidia-h200/logs/4-gpu-check.log",
        env!("CARGO_MANIFEST_DIR")
    );
    let log = std::fs::read_to_string(path).ok()?;
    log.lines()
        .find_map(|l| l.strip_prefix(&format!("-- ncu: {workload} ")))
        .map(str::to_string)
}

/// Rung 28's header: its FP32 partial tiles, written over the ring in rows padded to 264
/// floats, take the float2 stores of each half-warp (four rows) across the 32 banks once.
#[test]
fn the_split_k_partials_are_stored_without_bank_conflicts() {
    let dev = harness::select::simulator(None).expect("the simulator needs g++");
    let config = Config::defaults();
    let all = registry::all();
    let k = registry::find(&all, "gemm-wgmma-split-k").expect("a registered row");
    let shape = Shape::gemm(130, 40, 392);
    let row = evaluate_alone(&dev, &all, k, &shape, &config);
    assert!(row.passed(), "{:?}", row.reason);
    let banks = row.banks.expect("the simulator counts bank conflicts");
    assert!(banks.sts.requests > 0, "no partial stored: {banks:?}");
    assert_eq!(banks.sts.conflicts(), 0, "{banks:?}");
}
