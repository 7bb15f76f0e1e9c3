//! Tables, charts and bounds on a synthetic run: a ladder with a failed rung, references,
//! an unsupported row, and shapes of several sizes. The figures are made up, for tests only.

use super::roofline::Source;
use super::*;
use crate::resources::LaunchResources;
use crate::results::Row;
use crate::results::{ShapeResults, Status, WorkloadResults};
use crate::timing::Timing;
use crate::validate::Check;
use kernel::Role;
use kernel::{DeviceInfo, Precision, Shape, Stage, Workload};

fn row(
    id: &str,
    role: Role,
    rung: u32,
    precision: Precision,
    status: Status,
    ms: Option<f64>,
) -> Row {
    Row {
        id: id.into(),
        stage: if role == Role::Rung {
            Stage::Baseline
        } else {
            Stage::Reference
        },
        precision,
        role,
        rung,
        summary: String::new(),
        parent: match id {
            "gemm-tiled" => Some("gemm-naive".into()),
            // The failed rung and the rung after it both change the tiled one.
            "gemm-broken" | "gemm-regblock" => Some("gemm-tiled".into()),
            "gemm-wmma-fp16" => Some("gemm-regblock".into()),
            _ => None,
        },
        status,
        reason: (status != Status::Passed).then(|| format!("{id} did not pass")),
        scratch_bytes: 0,
        min_bytes: 3.0
            * 4096.0
            * 4096.0
            * if precision == Precision::Fp16 {
                2.0
            } else {
                4.0
            },
        timing: ms.map(|m| Timing::from_samples(vec![m * 0.98, m, m * 1.03], 1)),
        check: ms.map(|_| Check {
            rel_error: if status == Status::Failed { 0.5 } else { 1e-7 },
            max_abs_error: 0.0,
            nonfinite: 0,
            first_nonfinite: None,
            poisoned: 0,
            unwritten: 0,
            first_unwritten: None,
            sampled: None,
            blocks: None,
            worst: None,
            tolerance: precision.tolerance(),
            passed: status == Status::Passed,
        }),
        resources: if role == Role::Rung {
            vec![LaunchResources {
                entry: "k".into(),
                file: "k.cu".into(),
                arch: "sm_90".into(),
                threads_per_block: 256,
                registers: 40,
                smem_bytes: 8192,
                stack_bytes: 0,
                spill_stores: 0,
                spill_loads: 0,
                occupancy: Some(0.75),
                occupancy_limiter: Some("registers".into()),
                blocks: 1024,
                waves: Some(1024.0 / (132.0 * 6.0)),
                tiles: None,
                advisories: Vec::new(),
            }]
        } else {
            Vec::new()
        },
        traffic: None,
        banks: None,
        coalescing: None,
        kernel_accesses: Vec::new(),
        same_cpu_port_as: None,
        paired: None,
    }
}

fn shape(n: usize, scale: f64) -> ShapeResults {
    let s = Shape::square_gemm(n);
    let mut rows = vec![
        row(
            "gemm-naive",
            Role::Rung,
            1,
            Precision::Fp32,
            Status::Passed,
            Some(100.0 * scale),
        ),
        row(
            "gemm-tiled",
            Role::Rung,
            2,
            Precision::Fp32,
            Status::Passed,
            Some(20.0 * scale),
        ),
        row(
            "gemm-broken",
            Role::Rung,
            3,
            Precision::Fp32,
            Status::Failed,
            Some(1.0 * scale),
        ),
        row(
            "gemm-regblock",
            Role::Rung,
            4,
            Precision::Fp32,
            Status::Passed,
            Some(5.0 * scale),
        ),
        row(
            "gemm-wmma-fp16",
            Role::Rung,
            5,
            Precision::Fp16,
            Status::Passed,
            Some(1.25 * scale),
        ),
        row(
            "cublas-sgemm",
            Role::Reference,
            1,
            Precision::Fp32,
            Status::Passed,
            Some(4.0 * scale),
        ),
        row(
            "cublas-fp16",
            Role::Reference,
            3,
            Precision::Fp16,
            Status::Passed,
            Some(0.5 * scale),
        ),
        row(
            "cpu-only",
            Role::Reference,
            4,
            Precision::Fp32,
            Status::Unsupported,
            None,
        ),
    ];
    for r in &mut rows {
        r.min_bytes *= (n as f64 / 4096.0).powi(2);
    }
    ShapeResults {
        shape: s,
        label: s.label(),
        flops: s.flops(),
        reference: "f64 on the CPU".into(),
        rows,
        reference_before: None,
    }
}

pub(crate) fn synthetic() -> RunResults {
    RunResults {
        schema_version: crate::results::SCHEMA_VERSION,
        tool: "test".into(),
        device: DeviceInfo {
            kind: "cuda".into(),
            name: "NVIDIA H100 80GB HBM3".into(),
            slug: "nvidia-h100-80gb-hbm3".into(),
            driver: "580.65.06".into(),
            ..Default::default()
        },
        commit: "abc123".into(),
        date: "2026-11-22T15:00:00Z".into(),
        config: serde_json::Value::Null,
        workloads: vec![WorkloadResults {
            workload: Workload::Gemm,
            shapes: vec![
                shape(1024, 1.0 / 64.0),
                shape(2048, 1.0 / 8.0),
                shape(4096, 1.0),
            ],
        }],
        calibration: None,
        networks: Vec::new(),
        unfinished: None,
        user_kernels: Vec::new(),
    }
}

/// The derived rows of the headline shape (4096) of the synthetic run.
fn headline_rows(run: &RunResults) -> Vec<model::RowReport> {
    Report::new(run).workloads[0].shapes[2].rows.clone()
}

#[test]
fn speedups_follow_the_declared_parent_and_failed_rows_get_none() {
    let run = synthetic();
    let d = headline_rows(&run);
    let ratio = |r: &model::RowReport| r.vs_parent.as_ref().map(|s| s.ratio);
    assert_eq!(ratio(&d[1]), Some(5.0));
    assert_eq!(d[1].vs_parent.as_ref().unwrap().against_tag, "01");
    // The failed rung: no throughput, no speedup, no percentages.
    assert!(d[2].timed.is_none());
    assert_eq!((ratio(&d[2]), d[2].pct_of_ref), (None, None));
    assert!(d[2].vs_first.is_none() && d[2].roof.is_none());
    // The next rung compares with its declared parent (tiled), not the rung above it.
    assert_eq!(ratio(&d[3]), Some(4.0));
    assert_eq!(d[3].vs_parent.as_ref().unwrap().against, "gemm-tiled");
    assert_eq!(d[3].vs_first.as_ref().map(|s| s.ratio), Some(20.0));
    // % of the FP32 reference (cuBLAS SGEMM at 4 ms).
    assert_eq!(d[3].pct_of_ref, Some(80.0));
    assert_eq!(d[3].reference.as_deref(), Some("cublas-sgemm"));
    // References get no rung speedups; the first rung none over itself.
    assert!(d[5].vs_first.is_none() && d[5].vs_parent.is_none());
    assert!(d[0].vs_first.is_none());
}

#[test]
fn your_kernel_set_beside_a_rung_gets_its_speedup_over_it() {
    let mut run = synthetic();
    let rows = &mut run.workloads[0].shapes[2].rows;
    let mut mine = row(
        "mine.cu:k",
        Role::User,
        1,
        Precision::Fp32,
        Status::Passed,
        Some(10.0),
    );
    mine.parent = Some("gemm-tiled".into());
    rows.push(mine);
    let d = headline_rows(&run);
    let mine = d.last().unwrap();
    let vs = mine.vs_parent.as_ref().expect("a speedup over the rung");
    // gemm-tiled's 20 ms against 10 ms.
    assert_eq!((vs.against.as_str(), vs.ratio), ("gemm-tiled", 2.0));
    let report = Report::new(&run);
    let md = table::markdown(&report, &report.workloads[0]);
    assert!(
        md.contains("2.00x vs 02") && md.contains("for your kernel, the rung its `against=` names"),
        "{md}"
    );
}

#[test]
fn a_rung_timing_its_parents_cpu_port_shows_no_speedup() {
    let mut run = synthetic();
    let report = Report::new(&run);
    assert!(
        !table::markdown(&report, &report.workloads[0]).contains("Same code"),
        "no two rows run the same code"
    );
    // Regblock's port is tiled's, and timed 4x faster: drift of the machine, not an idea.
    for s in &mut run.workloads[0].shapes {
        s.rows[3].same_cpu_port_as = Some("gemm-tiled".into());
    }
    let d = headline_rows(&run);
    let s = d[3].vs_parent.clone().unwrap();
    assert!(s.same_code && s.significant, "{s:?}");
    assert_eq!(s.cell_against(), "same port as 02");
    assert!(charts::ablation::step(&s).0.contains("same code"));
    // Its step from the first rung, a port of its own, is still a speedup.
    assert!(!d[3].vs_first.as_ref().unwrap().same_code);
    assert!(!d[1].vs_parent.as_ref().unwrap().same_code);
    let report = Report::new(&run);
    let md = table::markdown(&report, &report.workloads[0]);
    assert!(md.contains("| same port as 02 |"), "{md}");
    assert!(!md.contains("4.00x vs 02"), "{md}");
    // The same code 4x apart: the tables say what the machine did between the two timings.
    assert!(
        md.contains("Same code, different times: `gemm-regblock` runs 02's CPU port and took ")
            && md
                .contains(" ms (4.00x apart, beyond both spreads). Nothing but the machine's pace"),
        "{md}"
    );
    assert!(
        table::terminal(&report).contains("same code, different times: gemm-regblock "),
        "terminal"
    );
    let csv = table::csv(&report, &report.workloads[0]);
    let ports = csv_column(&csv, "same_cpu_port_as");
    assert!(ports.iter().any(|(_, v)| *v == "gemm-tiled"), "{csv}");
}

/// The cells of the CSV column `name`, each with its line (none of these cells is quoted).
fn csv_column<'a>(csv: &'a str, name: &str) -> Vec<(&'a str, &'a str)> {
    let mut lines = csv.lines();
    let header = lines.next().unwrap();
    let i = header.split(',').position(|h| h == name).unwrap();
    lines.map(|l| (l, l.split(',').nth(i).unwrap())).collect()
}

/// The cells of `col` of the first three rows of the first workload's third shape.
fn first_cells(report: &Report, col: table::Col) -> Vec<String> {
    report.workloads[0].shapes[2].rows[..3]
        .iter()
        .map(|r| col.cell(r, true))
        .collect()
}

/// The CSV field `name` of the third row of the first workload's third shape.
fn third_row_csv<'a>(csv: &'a str, run: &RunResults, name: &str) -> Option<&'a str> {
    let shape = &run.workloads[0].shapes[2];
    csv_column(csv, name)
        .into_iter()
        .find(|(l, _)| {
            l.starts_with(&shape.label) && l.contains(&format!(",{},", shape.rows[2].id))
        })
        .map(|(_, v)| v)
}

#[test]
fn vs_parent_comes_from_the_alternating_rounds_when_the_run_has_them() {
    use crate::timing::PairedTiming;
    let mut run = synthetic();
    let pair = |against: &str, against_ms: Vec<f64>, row_ms: Vec<f64>| PairedTiming {
        against: against.into(),
        against_ms,
        row_ms,
    };
    let rows = &mut run.workloads[0].shapes[2].rows;
    // The medians say regblock is 4x tiled; timed side by side, the two are within a few
    // percent of each other, round by round on either side of 1.
    rows[3].paired = Some(pair(
        "gemm-tiled",
        vec![1.00, 1.00, 1.00, 1.00, 1.00],
        vec![0.97, 1.04, 0.99, 1.03, 0.98],
    ));
    // Rounds against another row than the parent are not its step.
    rows[1].paired = Some(pair("gemm-tuned", vec![2.0; 3], vec![1.0; 3]));
    let d = headline_rows(&run);
    let s = d[3].vs_parent.clone().unwrap();
    assert_eq!(s.rounds, Some(5));
    assert!(
        (s.ratio - 1.0 / 0.99).abs() < 1e-12,
        "the median round: {s:?}"
    );
    // So far apart (4x against 1.01x) that the step says so: no quiet machine drifts 4x.
    assert!(
        !s.significant && s.cell_against().starts_with("~1.01x? vs 02"),
        "{s:?}"
    );
    let first = d[1].vs_parent.clone().unwrap();
    assert_eq!((first.ratio, first.rounds), (5.0, None));
    // The run's legends say how vs parent was measured, and that one row was not paired.
    let report = Report::new(&run);
    let note = report.significance_note();
    assert!(note.starts_with(model::PAIRED_NOTE) && note.contains(model::UNPAIRED_NOTE));
    let md = table::markdown(&report, &report.workloads[0]);
    assert!(
        md.contains(&note) && md.contains("| ~1.01x? vs 02 |"),
        "{md}"
    );
    let csv = table::csv(&report, &report.workloads[0]);
    let rounds: Vec<&str> = csv_column(&csv, "parent_rounds")
        .into_iter()
        .filter(|(l, _)| l.starts_with("4096x4096x4096,"))
        .map(|(_, v)| v)
        .collect();
    assert_eq!(
        rounds.iter().filter(|r| !r.is_empty()).collect::<Vec<_>>(),
        [&"5"],
        "{csv}"
    );
    assert_eq!(rounds[3], "5", "{csv}");
    // Tiled timed side by side with naive, its parent and the first rung: `vs parent` is the
    // rounds' ratio, `vs first` still the medians' (5x), as for every other row.
    run.workloads[0].shapes[2].rows[1].paired =
        Some(pair("gemm-naive", vec![3.0; 3], vec![1.0; 3]));
    let d = headline_rows(&run);
    let (parent, first) = (
        d[1].vs_parent.clone().unwrap(),
        d[1].vs_first.clone().unwrap(),
    );
    assert_eq!((parent.ratio, parent.rounds), (3.0, Some(3)));
    assert_eq!((first.ratio, first.rounds), (5.0, None));
    // 3x by the rounds, 5x by the medians, both steady: a machine that changed pace between
    // the two timings, or a rung slower right after its parent, which the step says instead
    // of choosing one.
    assert_eq!(parent.medians_disagree, Some(5.0), "{parent:?}");
    assert_eq!(parent.cell(), "3.00x?");
    assert_eq!(
        crate::report::charts::ablation::step(&parent).0,
        "? 3.00x vs 01, 5.00x by the medians: the two disagree"
    );
    // Within a quarter of each other, the rounds correct the drift, as they are there to.
    run.workloads[0].shapes[2].rows[1].paired =
        Some(pair("gemm-naive", vec![4.5; 3], vec![1.0; 3]));
    let near = headline_rows(&run)[1].vs_parent.clone().unwrap();
    assert_eq!((near.ratio, near.medians_disagree), (4.5, None));
    // Closer than a quarter, but on either side of 1, each out of its noise: the rounds call
    // the rung slower (0.90x) where its bar is longer (medians 1.10x). The step says so.
    let tight = |ms: f64| crate::timing::Timing::from_samples(vec![ms * 0.99, ms, ms * 1.01], 1);
    let rows = &mut run.workloads[0].shapes[2].rows;
    let naive_ms = rows[0].timing.as_ref().unwrap().median_ms;
    rows[0].timing = Some(tight(naive_ms));
    rows[1].timing = Some(tight(naive_ms / 1.1));
    rows[1].paired = Some(pair("gemm-naive", vec![0.9; 3], vec![1.0; 3]));
    let opposed = headline_rows(&run)[1].vs_parent.clone().unwrap();
    assert!((opposed.ratio - 0.9).abs() < 1e-12, "{opposed:?}");
    assert!(
        opposed
            .medians_disagree
            .is_some_and(|m| (m - 1.1).abs() < 1e-9),
        "{opposed:?}"
    );
    assert_eq!(opposed.cell(), "0.90x?");
    // Both on the same side, as close: the rounds correct the medians, no mark.
    run.workloads[0].shapes[2].rows[1].paired =
        Some(pair("gemm-naive", vec![1.0; 3], vec![0.95; 3]));
    let same_side = headline_rows(&run)[1].vs_parent.clone().unwrap();
    assert_eq!(same_side.medians_disagree, None, "{same_side:?}");
    // Every step paired: no word of unpaired rows.
    for s in &mut run.workloads[0].shapes {
        for r in &mut s.rows {
            r.paired = r
                .parent
                .clone()
                .map(|p| pair(&p, vec![1.0; 3], vec![0.5; 3]));
        }
    }
    assert_eq!(Report::new(&run).significance_note(), model::PAIRED_NOTE);
}

#[test]
fn speedups_inside_the_spread_are_not_significant() {
    let mut run = synthetic();
    let rows = &mut run.workloads[0].shapes[2].rows;
    // Tiled at 20 ms with samples 19.6..20.6; regblock 3% faster with the same spread.
    rows[3].timing = Some(Timing::from_samples(vec![19.0, 19.4, 20.0], 1));
    let d = headline_rows(&run);
    let s = d[3].vs_parent.clone().unwrap();
    assert!(s.ratio > 1.0 && !s.significant, "{s:?}");
    assert!(s.cell().starts_with('~'), "{}", s.cell());
    assert!(d[1].vs_parent.as_ref().unwrap().significant);
    let md = table::markdown(&Report::new(&run), &Report::new(&run).workloads[0]);
    assert!(md.contains(model::SIGNIFICANCE_NOTE), "{md}");
    assert!(md.contains("~1.03x vs 02"), "{md}");
}

#[test]
fn a_difference_under_one_percent_is_not_called_slower_however_tight_the_rounds() {
    use crate::timing::PairedTiming;
    let mut run = synthetic();
    let rows = &mut run.workloads[0].shapes[2].rows;
    // Every round puts regblock 0.1% behind tiled, with almost no scatter: the rounds' range
    // excludes 1, yet nobody should chase a 0.999x.
    rows[2].timing = Some(Timing::from_samples(vec![20.0, 20.1, 20.2], 1));
    rows[3].timing = Some(Timing::from_samples(vec![20.02, 20.12, 20.22], 1));
    rows[3].paired = Some(PairedTiming {
        against: "gemm-tiled".into(),
        against_ms: vec![1.000; 5],
        row_ms: vec![1.0010, 1.0011, 1.0009, 1.0010, 1.0012],
    });
    let d = headline_rows(&run);
    let s = d[3].vs_parent.clone().unwrap();
    assert!(!s.significant, "{s:?}");
    assert_eq!(s.cell(), "~1.00x");
    assert_eq!(
        crate::report::charts::ablation::step(&s).0,
        "≈ 1.00x vs 02, under 1%"
    );
    // Two percent is a step, and its two decimals never read 1.00.
    run.workloads[0].shapes[2].rows[3].paired = Some(PairedTiming {
        against: "gemm-tiled".into(),
        against_ms: vec![1.000; 5],
        row_ms: vec![1.020, 1.021, 1.019, 1.020, 1.022],
    });
    let s = headline_rows(&run)[3].vs_parent.clone().unwrap();
    assert!(s.significant, "{s:?}");
    assert_eq!(
        crate::report::charts::ablation::step(&s).0,
        "▼ 0.98x vs 02: slower"
    );
    // Two timings a hair apart with disjoint ranges are not apart either.
    let a = crate::timing::Timing::from_samples(vec![1.000, 1.0001, 1.0002], 1);
    let b = crate::timing::Timing::from_samples(vec![1.003, 1.0031, 1.0032], 1);
    assert!(!a.stands_apart_from(&b) && !b.stands_apart_from(&a));
    let c = crate::timing::Timing::from_samples(vec![1.05, 1.0501, 1.0502], 1);
    assert!(a.stands_apart_from(&c) && c.stands_apart_from(&a));
}

#[test]
fn each_row_is_compared_with_the_reference_of_its_precision() {
    let run = synthetic();
    let d = headline_rows(&run);
    // The FP16 rung (1.25 ms) against cuBLAS FP16 (0.5 ms), not against SGEMM (4 ms), where
    // it would show 320%.
    assert_eq!(d[4].reference.as_deref(), Some("cublas-fp16"));
    assert_eq!(d[4].pct_of_ref, Some(40.0));
    assert_eq!(
        d[6].pct_of_ref, None,
        "a reference is not a percentage of itself"
    );
    // A TF32 row with no TF32 reference in the table (the CPU's case) falls back to FP32.
    let mut cpu = run.clone();
    cpu.workloads[0].shapes[2].rows[3].precision = Precision::Tf32;
    assert_eq!(
        headline_rows(&cpu)[3].reference.as_deref(),
        Some("cublas-sgemm")
    );
    // No library row computes in FP8: an FP8 row is held to the FP16 tensor-core library,
    // and to its roof.
    let mut fp8 = run.clone();
    fp8.workloads[0].shapes[2].rows[4].precision = Precision::Fp8;
    let d = headline_rows(&fp8);
    assert_eq!(d[4].reference.as_deref(), Some("cublas-fp16"));
    assert_eq!(
        d[4].roof.as_ref().map(|r| r.roof.name()),
        Some("FP16/BF16 tensor")
    );
    // A reference of the row's precision that failed leaves the column empty: no fallback.
    let mut broken = run.clone();
    broken.workloads[0].shapes[2].rows[6].status = Status::Failed;
    let d = headline_rows(&broken);
    assert_eq!((d[4].pct_of_ref, d[4].reference.clone()), (None, None));
    let report = Report::new(&run);
    let md = table::markdown(&report, &report.workloads[0]);
    assert!(
        md.contains("fp32 rows against `cublas-sgemm`")
            && md.contains("fp16 rows against `cublas-fp16`"),
        "{md}"
    );
}

#[test]
fn roofline_percent_uses_the_roof_of_the_rows_precision() {
    let run = synthetic();
    let report = Report::new(&run);
    let c = report.ceilings.clone().unwrap();
    assert_eq!(c.source, Source::Datasheet);
    let d = &report.workloads[0].shapes[2].rows;
    let s = &run.workloads[0].shapes[2];
    // FP32 at 4096^3: compute bound, 67 TFLOP/s.
    let g = s.flops / (5.0 * 1e6);
    let roof = d[3].roof.clone().unwrap();
    assert_eq!(roof.roof.name(), "FP32");
    assert!((roof.pct - 100.0 * g / 67e3).abs() < 1e-9);
    // FP16 rung: the FP16 tensor roof.
    let g16 = s.flops / (1.25 * 1e6);
    let roof = d[4].roof.clone().unwrap();
    assert_eq!(roof.roof.name(), "FP16/BF16 tensor");
    assert!((roof.pct - 100.0 * g16 / 989e3).abs() < 1e-9);
}

#[test]
fn counted_traffic_moves_a_row_on_the_roofline() {
    let mut run = synthetic();
    let flops = run.workloads[0].shapes[2].flops;
    run.workloads[0].shapes[2].rows[0].traffic = Some(crate::results::Traffic {
        load_bytes: flops * 4.0,
        store_bytes: 0.0,
        source: crate::results::TrafficSource::Simulator,
    });
    let d = headline_rows(&run);
    assert_eq!(d[0].traffic_intensity.map(|x| x.0), Some(0.25));
    // The roofline places a counted row at its counted intensity, the others at compulsory.
    assert_eq!(d[0].intensity(), 0.25);
    assert_eq!(d[1].intensity(), d[1].compulsory_intensity);
    // Memory bound at 0.25 FLOP/B: 3.35 TB/s x 0.25.
    assert!((d[0].roof.clone().unwrap().bound_gflops - 837.5).abs() < 1e-9);
    assert!(d[1].traffic_intensity.is_none());
}

#[test]
fn measured_ceilings_win_when_the_fingerprint_matches() {
    let mut run = synthetic();
    let mut cal = crate::calibrate::tests_support::sample(&run.device);
    run.calibration = Some(cal.clone());
    assert_eq!(Report::new(&run).ceilings.unwrap().source, Source::Measured);
    cal.fingerprint.driver = "other".into();
    run.calibration = Some(cal);
    assert_eq!(
        Report::new(&run).ceilings.unwrap().source,
        Source::Datasheet
    );
}

#[test]
fn markdown_marks_failures_and_names_the_ceilings() {
    let run = synthetic();
    let report = Report::new(&run);
    let md = table::markdown(&report, &report.workloads[0]);
    assert!(md.contains("datasheet, H100 SXM"), "{md}");
    let broken = md.lines().find(|l| l.contains("`gemm-broken`")).unwrap();
    assert!(broken.contains("| fail |"), "{broken}");
    let cells: Vec<&str> = broken.split('|').map(str::trim).collect();
    // median, spread, throughput, vs parent, vs first, % of ref, % roof: all empty.
    assert!(
        [4, 5, 6, 8, 9, 10, 11].iter().all(|&i| cells[i] == "-"),
        "a failed row shows no speedup: {broken}"
    );
    let regblock = md.lines().rfind(|l| l.contains("`gemm-regblock`")).unwrap();
    assert!(
        regblock.contains("4.00x vs 02") && regblock.contains("20.00x") && regblock.contains("80%"),
        "{regblock}"
    );
    // Every table line has the same number of cells as its header.
    for table in md.split("\n\n").filter(|t| t.starts_with("| #")) {
        let cells: Vec<usize> = table.lines().map(|l| l.matches('|').count()).collect();
        assert!(cells.iter().all(|c| *c == cells[0]), "{table}");
    }
}

#[test]
fn csv_lines_have_the_header_column_count() {
    let mut run = synthetic();
    // A label with a comma must be quoted, not split.
    run.workloads[0].shapes[0].label = "1024,odd".into();
    let report = Report::new(&run);
    let text = table::csv(&report, &report.workloads[0]);
    let header = text.lines().next().unwrap();
    let n = header.split(',').count();
    assert_eq!(n, table::CSV_HEADER.split(',').count());
    for line in text.lines().skip(1) {
        let unquoted = line.replace("\"1024,odd\"", "x");
        assert_eq!(unquoted.split(',').count(), n, "{line}");
    }
    assert_eq!(text.lines().count(), 1 + 3 * 8);
    assert!(text.contains(",datasheet,"));
    assert!(
        text.contains(",gemm-tiled,pass,"),
        "the parent column: {text}"
    );
    // A rung has its number; a reference none (its `rung` is only its place among them).
    let run = synthetic();
    let report = Report::new(&run);
    let text = table::csv(&report, &report.workloads[0]);
    for (line, rung) in csv_column(&text, "rung") {
        assert_eq!(rung.is_empty(), line.contains(",reference,"), "{line}");
    }
}

#[test]
fn terminal_summary_lists_every_row() {
    let run = synthetic();
    let t = terminal(&run);
    assert!(t.contains("gemm-broken") && t.contains("fail: gemm-broken did not pass"));
    assert!(t.contains("% roof against datasheet, H100 SXM"), "{t}");
    assert!(t.contains("3 rows failed or could not run"), "{t}");
    assert!(!t.contains("none failed"), "{t}");
    // A run whose rows all passed says so in its last line.
    let mut run = synthetic();
    for s in &mut run.workloads[0].shapes {
        s.rows.retain(|r| r.passed());
    }
    let passed: usize = run.workloads[0].shapes.iter().map(|s| s.rows.len()).sum();
    assert!(
        terminal(&run).ends_with(&format!(
            "\n{passed} rows passed the check against the reference; none failed.\n"
        )),
        "{}",
        terminal(&run)
    );
}

#[test]
fn terminal_keeps_reasons_as_written_and_aligns_long_ids() {
    let mut run = synthetic();
    let rows = &mut run.workloads[0].shapes[0].rows;
    rows[2].reason = Some("C holds NaN at 'A'[3]".into());
    rows[1].id = "gemm_blocktile<64,64,8>_with_a_long_name".into();
    let t = terminal(&run);
    assert!(t.contains("fail: C holds NaN at 'A'[3]"), "{t}");
    // Every line of the first shape's table starts its median column at the same place.
    let block: Vec<&str> = t
        .lines()
        .skip_while(|l| !l.trim_start().starts_with("# "))
        .take_while(|l| !l.trim().is_empty() && !l.trim_start().starts_with("skip "))
        .collect();
    assert!(block.len() >= 5, "{t}");
    let header = block[0];
    let col = header.find("median ms").expect("header") + "median ms".len();
    for l in &block[1..] {
        // The median cell is right-aligned, so it ends where the header's does.
        let cell_end = l[..col].trim_end().len();
        assert_eq!(cell_end, col, "misaligned:\n{header}\n{l}");
    }
}

#[test]
fn tables_show_only_the_columns_their_device_fills() {
    let mut run = synthetic();
    let headers = |run: &RunResults| {
        let report = Report::new(run);
        let md = table::markdown(&report, &report.workloads[0]);
        md.lines()
            .find(|l| l.starts_with("| #"))
            .unwrap()
            .to_string()
    };
    let gpu = headers(&run);
    assert!(gpu.contains("regs") && gpu.contains("waves") && gpu.contains("median ms"));
    run.device.kind = kernel::DeviceKind::Cpu.name().into();
    let cpu = headers(&run);
    assert!(!cpu.contains("regs") && !cpu.contains("waves") && !cpu.contains("scratch"));
    let report = Report::new(&run);
    let md = table::markdown(&report, &report.workloads[0]);
    assert!(md.contains("**CPU ports**"), "{md}");
    assert!(md.contains("above 100% means"), "{md}");
    run.device.kind = kernel::DeviceKind::Sim.name().into();
    let sim = headers(&run);
    assert!(sim.contains("regs") && !sim.contains("median") && !sim.contains("% roof"));
    assert!(
        !terminal(&run).contains("GFLOP/s"),
        "the simulator never prints speeds"
    );
}

/// A simulator run's coalescing counts: a column of global lines over the coalesced count,
/// whole warps' requests where there are any, `coalesced` at the ideal, `-` for a row without
/// plain global accesses; the CSV keeps the totals.
#[test]
fn simulator_tables_show_global_lines_over_the_coalesced_count() {
    use kernel::{Coalescing, GlobalRequests};
    let mut run = synthetic();
    run.device.kind = kernel::DeviceKind::Sim.name().into();
    let r = |requests, lines, ideal_lines| GlobalRequests {
        requests,
        sectors: lines,
        lines,
        ideal_lines,
        lane_bytes: 4 * requests,
    };
    let rows = &mut run.workloads[0].shapes[2].rows;
    rows[0].coalescing = Some(Coalescing::default());
    rows[1].coalescing = Some(Coalescing {
        loads: r(10, 12, 12),
        whole_warp_loads: r(8, 8, 8),
        ..Coalescing::default()
    });
    // Whole warps: 33 lines of loads and 1 of stores for 3 coalesced; partial ones left out.
    rows[2].coalescing = Some(Coalescing {
        loads: r(5, 40, 4),
        whole_warp_loads: r(2, 33, 2),
        stores: r(3, 3, 3),
        whole_warp_stores: r(1, 1, 1),
    });
    let report = Report::new(&run);
    let md = table::markdown(&report, &report.workloads[0]);
    assert!(md.contains("| global lines |"), "{md}");
    assert!(md.contains("32.00x is a line per lane"), "{md}");
    assert_eq!(
        first_cells(&report, table::Col::Lines),
        ["-", "coalesced", "11.33x"]
    );
    let csv = table::csv(&report, &report.workloads[0]);
    let of_row = |name| third_row_csv(&csv, &run, name);
    assert_eq!(of_row("global_lines"), Some("34"), "{csv}");
    assert_eq!(of_row("global_ideal_lines"), Some("3"), "{csv}");
    // A run without the simulator's counts has no such column.
    run.workloads[0].shapes[2]
        .rows
        .iter_mut()
        .for_each(|r| r.coalescing = None);
    let report = Report::new(&run);
    let md = table::markdown(&report, &report.workloads[0]);
    assert!(!md.contains("global lines |"), "{md}");
}

/// A simulator run's bank counts: a column of wavefronts over the conflict-free count, `none`
/// without conflicts, `-` for a row that asked nothing of shared memory; the CSV keeps the
/// totals.
#[test]
fn simulator_tables_show_bank_conflicts_as_wavefronts_over_the_ideal() {
    use kernel::{SharedBanks, Wavefronts};
    let mut run = synthetic();
    run.device.kind = kernel::DeviceKind::Sim.name().into();
    let w = |requests, wavefronts, ideal| Wavefronts {
        requests,
        wavefronts,
        ideal,
    };
    let rows = &mut run.workloads[0].shapes[2].rows;
    rows[0].banks = Some(SharedBanks::default());
    rows[1].banks = Some(SharedBanks {
        lds: w(10, 40, 40),
        ..SharedBanks::default()
    });
    // Two-way conflicts on the loads, none on the stores: 60 wavefronts for 40.
    rows[2].banks = Some(SharedBanks {
        lds: w(10, 40, 20),
        sts: w(20, 20, 20),
        ..SharedBanks::default()
    });
    let report = Report::new(&run);
    let md = table::markdown(&report, &report.workloads[0]);
    assert!(md.contains("| bank conflicts |"), "{md}");
    assert!(
        md.contains("wavefronts"),
        "the note says what the column is:\n{md}"
    );
    assert_eq!(
        first_cells(&report, table::Col::Banks),
        ["-", "none", "1.50x"]
    );
    let csv = table::csv(&report, &report.workloads[0]);
    let of_row = |name| third_row_csv(&csv, &run, name);
    assert_eq!(of_row("smem_wavefronts"), Some("60"), "{csv}");
    assert_eq!(of_row("smem_ideal_wavefronts"), Some("40"), "{csv}");
    // A run without the model's counts has no such column.
    run.workloads[0].shapes[2]
        .rows
        .iter_mut()
        .for_each(|r| r.banks = None);
    let report = Report::new(&run);
    let md = table::markdown(&report, &report.workloads[0]);
    assert!(!md.contains("bank conflicts |"), "{md}");
}

#[test]
fn reports_read_results_through_the_schema_check() {
    let run = synthetic();
    let dir = std::env::temp_dir().join(format!("lab-schema-rt-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let p = dir.join("gemm.json");
    std::fs::write(&p, serde_json::to_string(&run).unwrap()).unwrap();
    let back = RunResults::read(&p).unwrap();
    assert_eq!(back.workloads[0].shapes.len(), 3);
    let mut v: serde_json::Value = serde_json::to_value(&run).unwrap();
    v["schema_version"] = 2.into();
    std::fs::write(&p, v.to_string()).unwrap();
    let e = RunResults::read(&p).unwrap_err().to_string();
    assert!(e.contains("schema version 2"), "{e}");
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn byte_counts_read_in_the_unit_that_fits() {
    use table::bytes;
    assert_eq!(bytes(0), "-");
    assert_eq!(bytes(12), "12 B");
    assert_eq!(bytes(1536), "1.5 KiB");
    assert_eq!(bytes(3 << 20), "3.0 MiB");
    assert_eq!(bytes(5 << 30), "5.00 GiB");
}

/// A reference timed before the rungs as well as after them: the shape's tables say how far
/// the machine drifted in between, and whether the samples' scatter explains it.
#[test]
fn a_reference_timed_before_the_rungs_says_how_far_the_machine_drifted() {
    let mut run = synthetic();
    let before = |ms: f64| crate::results::ReferenceBefore {
        id: "cublas-sgemm".into(),
        timing: Timing::from_samples(vec![ms * 0.98, ms, ms * 1.03], 1),
    };
    // After the rungs its row took 4.0 ms at 4096 and 0.5 ms at 2048 (samples within +-3%).
    let shapes = &mut run.workloads[0].shapes;
    shapes[2].reference_before = Some(before(3.2));
    shapes[1].reference_before = Some(before(0.5 * 1.02));
    let report = Report::new(&run);
    let drift = |i: usize| report.workloads[0].shapes[i].drift.clone();
    assert_eq!(drift(0), None, "no timing before the rungs, no drift");
    let apart = drift(2).unwrap();
    assert!(apart.significant);
    assert!((apart.ratio() - 1.25).abs() < 1e-12);
    let close = drift(1).unwrap();
    assert!(!close.significant);

    let md = table::markdown(&report, &report.workloads[0]);
    assert!(
        md.contains(
            "Drift: `cublas-sgemm` took 3.200 ms a run timed before the rungs and 4.000 ms \
             after them (1.25x, beyond the noise). `% of ref` and `vs first` divide times"
        ),
        "{md}"
    );
    assert!(md.contains("after them (~0.98x, inside the noise)"), "{md}");
    assert_eq!(md.matches("Drift:").count(), 2, "{md}");
    let text = table::terminal(&report);
    assert!(
        text.contains("drift: cublas-sgemm 3.200 ms before the rungs, 4.000 ms after (1.25x, beyond the noise)"),
        "{text}"
    );
    assert_eq!(
        text.matches(&format!(
            "drift: the first reference row timed before the rungs and after them; {}",
            model::DRIFT_NOTE.replace('`', "")
        ))
        .count(),
        1,
        "{text}"
    );

    // A reference whose row failed after the rungs has nothing to set beside.
    let shapes = &mut run.workloads[0].shapes;
    let r = shapes[2]
        .rows
        .iter_mut()
        .find(|r| r.id == "cublas-sgemm")
        .unwrap();
    r.status = Status::Failed;
    assert_eq!(Report::new(&run).workloads[0].shapes[2].drift, None);
}

#[test]
fn a_workload_with_no_reference_row_has_no_percent_of_ref() {
    let mut run = synthetic();
    let with = Report::new(&run);
    let md = table::markdown(&with, &with.workloads[0]);
    assert!(
        md.contains("| % of ref |") && md.contains("`% of ref`: fp32 rows against `cublas-sgemm`"),
        "{md}"
    );
    for s in &mut run.workloads[0].shapes {
        s.rows.retain(|r| r.role != Role::Reference);
    }
    let without = Report::new(&run);
    let md = table::markdown(&without, &without.workloads[0]);
    assert!(
        !md.contains("% of ref") && !md.contains("against nothing"),
        "{md}"
    );
    assert!(!table::terminal(&without).contains("% of ref"));
}
