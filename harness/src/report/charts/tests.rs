//! The charts read back: every rung named in full, no two labels overlapping or leaving the
//! picture, one roof per precision, points at their counted intensity, slowdowns and steps
//! inside the noise marked as such. The runs are synthetic, their figures made up.

use super::axes::Axis;
use super::canvas::{Kind, Layout, Rect, text_box, text_width};
use super::*;
use crate::report::model::Report;
use crate::report::tests::synthetic;
use crate::results::{RunResults, Status, Traffic, TrafficSource};
use crate::timing::Timing;
use kernel::{Precision, Role, Stage};
use plotters::style::text_anchor::HPos;

/// Times with a 4% p10-p90 range around `ms`.
fn timing(ms: f64) -> Option<Timing> {
    Some(Timing::from_samples(vec![ms * 0.98, ms, ms * 1.03], 1))
}

/// A GPU run shaped like the real GEMM ladder: several stages and precisions, a slowdown, a
/// step inside the noise, a failed rung, references of three precisions and a peer, and
/// traffic counted by the simulator.
pub(crate) fn ladder() -> RunResults {
    let mut run = synthetic();
    for s in &mut run.workloads[0].shapes {
        s.rows
            .retain(|r| r.id != "gemm-wmma-fp16" && r.role == Role::Rung);
        s.rows[3].stage = Stage::RestrictUnroll;
        let naive = s.rows[0].clone();
        let scale = naive.timing.as_ref().unwrap().median_ms / 100.0;
        let fp32_bytes = naive.min_bytes;
        let mut add = |id: &str, role, n, stage, p, parent: Option<&str>, ms: f64| {
            let mut r = naive.clone();
            (r.id, r.role, r.rung, r.stage, r.precision) = (id.into(), role, n, stage, p);
            r.parent = parent.map(Into::into);
            r.timing = timing(ms * scale);
            if matches!(p, Precision::Fp16 | Precision::Bf16) {
                r.min_bytes = fp32_bytes / 2.0;
            }
            s.rows.push(r);
        };
        use Precision::*;
        add(
            "gemm-vectorized-with-a-long-descriptive-name",
            Role::Rung,
            5,
            Stage::RestrictUnroll,
            Fp32,
            Some("gemm-regblock"),
            6.0,
        );
        add(
            "gemm-warptile",
            Role::Rung,
            6,
            Stage::RestrictUnroll,
            Fp32,
            Some("gemm-regblock"),
            4.9,
        );
        add(
            "gemm-wmma-tf32",
            Role::Rung,
            7,
            Stage::Tensorcore,
            Tf32,
            Some("gemm-regblock"),
            1.0,
        );
        add(
            "gemm-wmma-fp16",
            Role::Rung,
            8,
            Stage::Fp16,
            Fp16,
            Some("gemm-wmma-tf32"),
            0.6,
        );
        add(
            "gemm-mma-bf16",
            Role::Rung,
            9,
            Stage::Fp16,
            Bf16,
            Some("gemm-wmma-fp16"),
            0.55,
        );
        add(
            "cublas-sgemm",
            Role::Reference,
            1,
            Stage::Reference,
            Fp32,
            None,
            4.0,
        );
        add(
            "cublas-tf32",
            Role::Reference,
            2,
            Stage::Reference,
            Tf32,
            None,
            0.9,
        );
        add(
            "cublas-fp16",
            Role::Reference,
            3,
            Stage::Reference,
            Fp16,
            None,
            0.5,
        );
        add(
            "torch-matmul",
            Role::Peer,
            1,
            Stage::Reference,
            Fp32,
            None,
            4.2,
        );
        let flops = s.flops;
        for (r, intensity) in s
            .rows
            .iter_mut()
            .zip([0.5, 8.0, 10.0, 32.0, 40.0, 60.0, 60.0, 120.0, 120.0])
        {
            r.traffic = Some(Traffic {
                load_bytes: 0.9 * flops / intensity,
                store_bytes: 0.1 * flops / intensity,
                source: TrafficSource::Simulator,
            });
        }
    }
    run
}

/// The ladder as the CPU runs it: measured FP32 ceilings only, no counted traffic, no GPU
/// references.
pub(crate) fn cpu() -> RunResults {
    let mut run = ladder();
    run.device.kind = kernel::DeviceKind::Cpu.name().into();
    run.device.name = "AMD EPYC (2 threads)".into();
    let mut cal = crate::calibrate::tests_support::sample(&run.device);
    (cal.tf32_gflops, cal.fp16_gflops) = (None, None);
    run.calibration = Some(cal);
    for r in run
        .workloads
        .iter_mut()
        .flat_map(|w| &mut w.shapes)
        .flat_map(|s| &mut s.rows)
    {
        r.traffic = None;
        if r.id.starts_with("cublas") {
            (r.status, r.timing) = (Status::Unsupported, None);
        }
    }
    run
}

/// The ladder as the simulator runs it: checked, counted, never timed.
pub(crate) fn sim() -> RunResults {
    let mut run = ladder();
    run.device.kind = kernel::DeviceKind::Sim.name().into();
    for r in run
        .workloads
        .iter_mut()
        .flat_map(|w| &mut w.shapes)
        .flat_map(|s| &mut s.rows)
    {
        r.timing = None;
        if r.role != Role::Rung {
            r.status = Status::Unsupported;
        }
    }
    run
}

/// Every text element of an SVG: (attributes, content).
fn svg_texts(svg: &str) -> Vec<(String, String)> {
    svg.split("<text ")
        .skip(1)
        .filter_map(|t| {
            let (attrs, rest) = t.split_once('>')?;
            let content = rest.split("</text>").next()?.trim();
            let unescaped = content
                .replace("&lt;", "<")
                .replace("&gt;", ">")
                .replace("&quot;", "\"")
                .replace("&apos;", "'")
                .replace("&amp;", "&");
            Some((attrs.to_string(), unescaped))
        })
        .collect()
}

/// Draws every chart of `run`; checks that no label overlaps another or leaves the picture,
/// that every label drawn is in the SVG, and that no axis repeats a tick label.
fn drawn(run: &RunResults) -> Vec<(String, String, Layout)> {
    let report = Report::new(run);
    let mut out = Vec::new();
    for (stem, chart) in all(&report) {
        let (svg, layout) = svg(&chart).unwrap();
        let clashes: Vec<String> = layout
            .overlaps()
            .iter()
            .map(|(a, b)| format!("{:?} over {:?}", a.text, b.text))
            .collect();
        assert!(clashes.is_empty(), "{stem}: {clashes:#?}");
        let outside: Vec<&str> = layout.outside().iter().map(|l| l.text.as_str()).collect();
        assert!(
            outside.is_empty(),
            "{stem}: outside the picture: {outside:?}"
        );
        let texts: Vec<String> = svg_texts(&svg).into_iter().map(|t| t.1).collect();
        for l in &layout.labels {
            assert!(
                texts.contains(&l.text),
                "{stem}: {:?} not in the SVG",
                l.text
            );
        }
        for kind in [Kind::XTick, Kind::YTick] {
            let mut ticks: Vec<&str> = layout
                .labels
                .iter()
                .filter(|l| l.kind == kind)
                .map(|l| l.text.as_str())
                .collect();
            let n = ticks.len();
            ticks.sort();
            ticks.dedup();
            assert_eq!(ticks.len(), n, "{stem}: repeated tick labels {ticks:?}");
        }
        out.push((stem, svg, layout));
    }
    out
}

fn chart<'a>(charts: &'a [(String, String, Layout)], stem: &str) -> &'a (String, String, Layout) {
    charts.iter().find(|c| c.0 == stem).unwrap_or_else(|| {
        panic!(
            "no {stem} among {:?}",
            charts.iter().map(|c| &c.0).collect::<Vec<_>>()
        )
    })
}

fn labels(layout: &Layout) -> Vec<&str> {
    layout.labels.iter().map(|l| l.text.as_str()).collect()
}

#[test]
fn every_chart_of_gpu_cpu_and_simulator_runs_reads_cleanly() {
    for run in [synthetic(), ladder(), cpu(), sim()] {
        assert!(!drawn(&run).is_empty(), "{}", run.device.kind);
    }
    // A run where every row failed still draws its ablation, saying so on each row.
    let mut broken = cpu();
    for r in broken
        .workloads
        .iter_mut()
        .flat_map(|w| &mut w.shapes)
        .flat_map(|s| &mut s.rows)
    {
        r.status = Status::Failed;
    }
    let charts = drawn(&broken);
    assert_eq!(
        charts.len(),
        3,
        "ablations only: nothing to place on a roofline or a sweep"
    );
    let l = labels(&charts[0].2);
    assert_eq!(
        l.iter()
            .filter(|t| **t == "failed its check: no throughput shown")
            .count(),
        9
    );
}

#[test]
fn charts_are_written_per_shape_as_svg_and_png() {
    let dir = std::env::temp_dir().join(format!("lab-charts-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let mut names = Vec::new();
    for (sub, run) in [("gpu", ladder()), ("cpu", cpu()), ("sim", sim())] {
        let files = crate::report::write_report(&run, &dir.join(sub)).unwrap();
        for f in &files {
            assert!(std::fs::metadata(f).unwrap().len() > 1000, "{f:?} is tiny");
            if f.extension().is_some_and(|e| e == "png") {
                assert_eq!(&std::fs::read(f).unwrap()[1..4], b"PNG");
            }
            names.push(format!(
                "{sub}/{}",
                f.file_name().unwrap().to_string_lossy()
            ));
        }
    }
    for shape in ["1024x1024x1024", "2048x2048x2048", "4096x4096x4096"] {
        for want in [
            format!("gpu/gemm-ablation-{shape}.svg"),
            format!("gpu/gemm-roofline-{shape}.png"),
            format!("cpu/gemm-roofline-{shape}.svg"),
            format!("sim/gemm-intensity-{shape}.png"),
        ] {
            assert!(names.contains(&want), "{want} missing from {names:?}");
        }
    }
    assert!(names.contains(&"gpu/gemm-sweep.svg".to_string()));
    assert!(
        !names.iter().any(|n| n.starts_with("sim/")
            && (n.contains("ablation") || n.contains("roofline") || n.contains("sweep"))),
        "the simulator never times: {names:?}"
    );
    // Kept for eyes when LAB_KEEP_CHARTS is set.
    if std::env::var_os("LAB_KEEP_CHARTS").is_none() {
        std::fs::remove_dir_all(&dir).unwrap();
    } else {
        eprintln!("charts kept in {}", dir.display());
    }
}

#[test]
fn ablation_names_every_rung_in_full_and_marks_each_step() {
    let charts = drawn(&ladder());
    let (_, svg, layout) = chart(&charts, "gemm-ablation-4096x4096x4096");
    let l = labels(layout);
    for name in [
        "01 gemm-naive",
        "03 gemm-broken",
        "05 gemm-vectorized-with-a-long-descriptive-name",
        "09 gemm-mma-bf16",
    ] {
        assert!(l.contains(&name), "{name} not in full: {l:?}");
    }
    // A slowdown reads as one, a step inside the noise as noise, a gain as a gain.
    assert!(l.contains(&"▼ 0.83x vs 04: slower"), "{l:?}");
    assert!(l.contains(&"≈ 1.02x vs 04, inside the noise"), "{l:?}");
    assert!(l.contains(&"▲ 4.00x vs 02"), "{l:?}");
    assert!(
        l.contains(&"failed its check: no throughput shown"),
        "{l:?}"
    );
    // The legend names stages, not rungs; references and the peer are labelled lines.
    for want in [
        "baseline",
        "restrict-unroll",
        "tensorcore",
        "fp16",
        "reference row",
        "peer row",
    ] {
        assert!(l.contains(&want), "{want}: {l:?}");
    }
    assert!(l.iter().any(|t| t.starts_with("cublas-fp16 ")), "{l:?}");
    assert!(l.iter().any(|t| t.starts_with("torch-matmul ")), "{l:?}");
    // The slowdown's words are red, the gain's green.
    let fill = |text: &str| {
        svg_texts(svg)
            .into_iter()
            .find(|t| t.1 == text)
            .map(|t| t.0)
            .unwrap()
    };
    assert!(
        fill("▼ 0.83x vs 04: slower").contains("#C81818"),
        "{}",
        fill("▼ 0.83x vs 04: slower")
    );
    assert!(fill("▲ 4.00x vs 02").contains("#187818"));
}

#[test]
fn the_ablation_note_says_how_each_step_was_timed() {
    let note = |run: &RunResults| {
        let report = Report::new(run);
        let bars = ablation::chart(&report, &report.workloads[0].shapes[2]).unwrap();
        bars.header.notes[0].clone()
    };
    let mut run = ladder();
    assert!(
        note(&run).contains("p10-p90 time ranges overlap") && !note(&run).contains("side by side")
    );
    // Rounds for every step but one (whose side-by-side timing failed, say).
    let pair = |against: &str| crate::timing::PairedTiming {
        against: against.into(),
        against_ms: vec![1.0; 3],
        row_ms: vec![0.5; 3],
    };
    let rows = &mut run.workloads[0].shapes[2].rows;
    for r in rows.iter_mut().skip(2) {
        r.paired = r.parent.as_deref().map(pair);
    }
    let mixed = note(&run);
    assert!(
        mixed.contains("side by side") && mixed.contains("where that failed"),
        "{mixed}"
    );
    let rows = &mut run.workloads[0].shapes[2].rows;
    rows[1].paired = rows[1].parent.as_deref().map(pair);
    let all = note(&run);
    assert!(
        all.contains("side by side") && !all.contains("where that failed"),
        "{all}"
    );
}

#[test]
fn ablation_values_sit_after_their_bars_in_order() {
    // Notes start right after each bar's whisker: a faster rung's notes start further right.
    let charts = drawn(&ladder());
    let (_, _, layout) = chart(&charts, "gemm-ablation-4096x4096x4096");
    let at = |prefix: &str| {
        let name = layout
            .labels
            .iter()
            .find(|l| l.text.starts_with(prefix))
            .unwrap();
        // The first label right of the name on its row: the throughput.
        layout
            .labels
            .iter()
            .filter(|l| (l.rect.y0 - name.rect.y0).abs() < 1.0 && l.rect.x0 > name.rect.x1)
            .map(|l| l.rect.x0)
            .fold(f64::INFINITY, f64::min)
    };
    assert!(at("01 ") < at("02 ") && at("02 ") < at("04 ") && at("04 ") < at("07 "));
    assert!(at("05 ") < at("04 "), "the slower rung's bar is shorter");
}

#[test]
fn roofline_draws_one_roof_per_precision_and_points_at_their_counted_intensity() {
    let charts = drawn(&ladder());
    let (_, svg, layout) = chart(&charts, "gemm-roofline-4096x4096x4096");
    let l = labels(layout);
    for roof in [
        "memory 3.35 TB/s",
        "FP32 67.0 TFLOP/s",
        "TF32 tensor 495.0 TFLOP/s",
        "FP16/BF16 tensor 989.0 TFLOP/s",
    ] {
        assert!(l.contains(&roof), "{roof} missing: {l:?}");
    }
    assert!(
        l.join(" ")
            .contains("global-memory bytes the kernel issues"),
        "{l:?}"
    );
    // Every row in the key, in full, and every point's key drawn twice: beside it and in the key.
    for id in [
        "gemm-naive",
        "gemm-broken",
        "gemm-vectorized-with-a-long-descriptive-name",
        "cublas-tf32",
        "torch-matmul",
    ] {
        assert!(l.contains(&id), "{id}: {l:?}");
    }
    for key in ["01", "09", "R3", "P1"] {
        assert_eq!(l.iter().filter(|t| **t == key).count(), 2, "{key}: {l:?}");
    }
    // Each point takes its stage's colour, as its bar does, and the shape of its roof: the
    // BF16 rung of the fp16 stage is a brown triangle, as its bar is brown.
    let brown = svg_texts(svg)
        .into_iter()
        .filter(|(a, t)| t == "09" && a.contains("#8C564B"))
        .count();
    assert_eq!(brown, 2, "{svg}");
    let triangles = svg
        .split("<polygon")
        .skip(1)
        .filter(|p| p.contains("fill=\"#8C564B\""))
        .filter_map(|p| p.split("points=\"").nth(1)?.split('"').next())
        .filter(|pts| pts.split_whitespace().count() == 3)
        .count();
    assert!(triangles >= 1, "{svg}");
    assert!(l.contains(&"FP16/BF16 tensor roof: fp16, bf16 rows") && l.contains(&"fp16"));
    // Points sit at their counted intensities: naive (0.5 FLOP/B) far left of tiled (8).
    let x = |i: usize| (layout.marks[i].x0 + layout.marks[i].x1) / 2.0;
    assert!(
        x(0) + 150.0 < x(1),
        "naive at {} and tiled at {}",
        x(0),
        x(1)
    );
}

/// The ladder with measured ceilings like an H100's, mma.sync's among them.
fn measured_with_mma_sync() -> RunResults {
    let mut run = ladder();
    let mut cal = crate::calibrate::tests_support::sample(&run.device);
    cal.bandwidth_gbs = 3350.0;
    cal.fp32_gflops = 67e3;
    (cal.tf32_gflops, cal.fp16_gflops) = (Some(495e3), Some(989e3));
    cal.mma_sync_gflops = Some(495e3);
    run.calibration = Some(cal);
    run
}

#[test]
fn points_above_their_roof_are_named_and_explained() {
    let mut run = measured_with_mma_sync();
    let charts = drawn(&run);
    let (_, _, layout) = chart(&charts, "gemm-roofline-4096x4096x4096");
    assert!(!labels(layout).join(" ").contains("above"));
    // An FP32 ceiling far below what the FP32 rows reach.
    run.calibration.as_mut().unwrap().fp32_gflops = 1.0;
    let charts = drawn(&run);
    let (_, _, layout) = chart(&charts, "gemm-roofline-4096x4096x4096");
    let text = labels(layout).join(" ");
    assert!(
        text.contains("01, 02, ") && text.contains(" lie above their roofs: a roof is a ceiling"),
        "{text}"
    );
}

#[test]
fn a_measured_mma_sync_ceiling_is_drawn_dashed_under_the_sixteen_bit_roof() {
    let charts = drawn(&measured_with_mma_sync());
    let (_, svg, layout) = chart(&charts, "gemm-roofline-4096x4096x4096");
    let l = labels(layout);
    for text in [
        "FP16/BF16 tensor 989.0 TFLOP/s",
        "mma.sync FP16, registers only 495.0 TFLOP/s",
        "mma.sync FP16, registers only: the most an mma.sync rung can reach",
    ] {
        assert!(l.contains(&text), "{text} missing: {l:?}");
    }
    assert!(
        l.join(" ")
            .contains("under the FP16/BF16 roof, mma.sync FP16, registers only 495.0 TFLOP/s"),
        "{l:?}"
    );
    // The FP16 rows keep the tensor roof: the BF16 rung's share is of 989, not of 495.
    let report = Report::new(&measured_with_mma_sync());
    let row = report.workloads[0].shapes[0]
        .rows
        .iter()
        .find(|r| r.row.id == "gemm-mma-bf16")
        .unwrap();
    assert_eq!(row.roof.as_ref().unwrap().roof.gflops, 989e3);
    // Dashed, like the roofs in black; without the measurement, no dashed black line at all.
    // (A dashed line is drawn as its dashes: short horizontal red segments.)
    let dashed_red = |svg: &str| {
        svg.split("<polyline")
            .skip(1)
            .filter(|p| p.contains("stroke=\"#141414\""))
            .filter_map(|p| {
                let pts = p.split("points=\"").nth(1)?.split('"').next()?;
                let xy: Vec<f64> = pts
                    .split([' ', ','])
                    .filter_map(|v| v.parse().ok())
                    .collect();
                // 8 px dashes; the whiskers' caps are 6 px.
                let dash =
                    xy.len() == 4 && xy[1] == xy[3] && (7.0..=8.5).contains(&(xy[2] - xy[0]).abs());
                dash.then_some(())
            })
            .count()
    };
    assert!(dashed_red(svg) >= 10, "{svg}");
    let plain = drawn(&ladder());
    assert_eq!(
        dashed_red(&chart(&plain, "gemm-roofline-4096x4096x4096").1),
        0
    );
}

#[test]
fn a_cpu_roofline_has_its_measured_fp32_roof_only() {
    let charts = drawn(&cpu());
    let (_, _, layout) = chart(&charts, "gemm-roofline-4096x4096x4096");
    let l = labels(layout);
    assert!(
        l.contains(&"FP32 180.2 GFLOP/s") || l.contains(&"FP32 180.3 GFLOP/s"),
        "{l:?}"
    );
    assert!(!l.iter().any(|t| t.contains("tensor roof")), "{l:?}");
    assert!(
        l.iter()
            .any(|t| t.contains("FP32 roof: fp32, tf32, fp16, bf16 rows")),
        "{l:?}"
    );
    assert!(l.join(" ").contains("FLOP per compulsory byte"), "{l:?}");
    let (_, _, ablation) = chart(&charts, "gemm-ablation-4096x4096x4096");
    assert!(labels(ablation).join(" ").contains("CPU port of its rung"));
}

#[test]
fn the_simulator_charts_each_rungs_counted_intensity() {
    let charts = drawn(&sim());
    let (_, _, layout) = chart(&charts, "gemm-intensity-4096x4096x4096");
    let l = labels(layout);
    for want in [
        "0.500 FLOP/B",
        "8.00 FLOP/B",
        "120 FLOP/B",
        "01 gemm-naive",
        "09 gemm-mma-bf16",
    ] {
        assert!(l.contains(&want), "{want}: {l:?}");
    }
    assert!(
        l.iter()
            .any(|t| t.starts_with("compulsory, fp32, tf32 rows: 683 FLOP/B")),
        "{l:?}"
    );
    assert!(
        l.iter()
            .any(|t| t.starts_with("compulsory, fp16, bf16 rows: 1365 FLOP/B")),
        "{l:?}"
    );
    // Each rung's figure sits at the end of its bar: more reuse, further right.
    let x = |t: &str| layout.labels.iter().find(|l| l.text == t).unwrap().rect.x0;
    assert!(x("0.500 FLOP/B") + 200.0 < x("8.00 FLOP/B") && x("8.00 FLOP/B") < x("32.0 FLOP/B"));
}

/// The simulator's lines and bank conflicts, drawn as the L1 wavefronts each rung took over
/// the fewest possible: a naive rung's scattered lanes, a tiled one's conflicts, a padded one
/// at 1x; timed runs and rows without counts draw none.
#[test]
fn the_simulator_charts_each_rungs_l1_wavefronts_over_the_fewest() {
    use kernel::{Coalescing, GlobalRequests, SharedBanks, Wavefronts};
    let global = |lines, ideal_lines| {
        let r = GlobalRequests {
            requests: 64,
            lines,
            ideal_lines,
            ..Default::default()
        };
        Some(Coalescing {
            whole_warp_loads: r,
            loads: r,
            ..Default::default()
        })
    };
    let shared = |wavefronts, ideal| {
        Some(SharedBanks {
            lds: Wavefronts {
                requests: ideal,
                wavefronts,
                ideal,
            },
            ..Default::default()
        })
    };
    let mut run = sim();
    for s in &mut run.workloads[0].shapes {
        (s.rows[0].coalescing, s.rows[0].banks) = (global(528, 32), None);
        (s.rows[1].coalescing, s.rows[1].banks) = (global(32, 32), shared(160, 32));
        // Row 2 fails its check: counted or not, it shows no figure.
        (s.rows[2].coalescing, s.rows[2].banks) = (global(64, 32), None);
        (s.rows[3].coalescing, s.rows[3].banks) = (global(32, 32), shared(32, 32));
    }
    let charts = drawn(&run);
    let (_, _, layout) = chart(&charts, "gemm-access-4096x4096x4096");
    let l = labels(layout);
    for want in [
        "16.50x",
        "global lines 16.50x, no shared memory",
        "3.00x",
        "global lines coalesced, bank conflicts 5.00x",
        "1.00x",
        "global lines coalesced, bank conflicts none",
        "no global or shared access counted",
        "failed its check",
    ] {
        assert!(l.contains(&want), "{want}: {l:?}");
    }
    let x = |t: &str| layout.labels.iter().find(|l| l.text == t).unwrap().rect.x0;
    assert!(x("1.00x") < x("3.00x") && x("3.00x") < x("16.50x"));
    let timed = drawn(&ladder());
    assert!(!timed.iter().any(|(stem, _, _)| stem.contains("access")));
    assert!(
        !drawn(&sim())
            .iter()
            .any(|(stem, _, _)| stem.contains("access")),
        "no counts, no chart"
    );
}

#[test]
fn sweep_families_join_only_shapes_that_differ_in_one_size() {
    let attn = |text: &str| kernel::Shape::parse(kernel::Workload::Attention, text).unwrap();
    let conv = |text: &str| kernel::Shape::parse(kernel::Workload::Conv, text).unwrap();
    let f = |s| sweep::family(&s);
    assert_eq!(
        f(attn("2x32x512x64")).suffix,
        f(attn("1x32x1024x64")).suffix
    );
    assert_ne!(
        f(attn("2x32x512x64")).suffix,
        f(attn("2x32x512x64-causal")).suffix
    );
    assert_eq!(f(attn("2x32x512x64-causal")).suffix, "-d64-causal");
    assert_eq!(
        f(conv("100x1x4x86x86x7")).suffix,
        f(conv("1000x1x4x86x86x7")).suffix
    );
    assert_ne!(
        f(conv("100x1x4x86x86x7")).suffix,
        f(conv("100x4x16x40x40x7")).suffix
    );
    assert_eq!(f(kernel::Shape::square_gemm(512)).suffix, "");
    assert_eq!(f(kernel::Shape::square_gemm(512)).x, 512.0);
}

#[test]
fn sweep_series_differ_by_colour_or_marker_and_the_legend_sits_beside_the_plot() {
    let charts = drawn(&ladder());
    let (_, _, layout) = chart(&charts, "gemm-sweep");
    let l = labels(layout);
    assert!(
        l.contains(&"05 gemm-vectorized-with-a-long-descriptive-name"),
        "{l:?}"
    );
    assert!(
        l.contains(&"no passing point:") && l.contains(&"03 gemm-broken"),
        "{l:?}"
    );
    // The x axis is the size, with a tick at each size of the family.
    for n in ["1024", "2048", "4096"] {
        assert!(
            layout
                .labels
                .iter()
                .any(|x| x.kind == Kind::XTick && x.text == n),
            "{l:?}"
        );
    }
    let report = Report::new(&ladder());
    let s = &sweep::charts(&report, &report.workloads[0])[0];
    // Twenty rungs of one stage before two look alike.
    let styles: Vec<_> = (0..20)
        .map(|k| sweep::style_of(Stage::Tensorcore, Role::Rung, k))
        .collect();
    for (i, a) in styles.iter().enumerate() {
        assert!(
            !styles[i + 1..].contains(a),
            "series {i} looks like a later one"
        );
    }
    // In the chart, each series has its own swatch; a rung's colour is its stage's, as its
    // bar's is in the ablation chart.
    let entries = s.entries();
    for (i, a) in entries.iter().enumerate() {
        assert!(
            !entries[i + 1..]
                .iter()
                .any(|b| (b.color, b.mark) == (a.color, a.mark)),
            "{} looks like a later series",
            a.label
        );
    }
    let vectorized = entries.iter().find(|e| e.label.starts_with("05 ")).unwrap();
    assert_eq!(vectorized.color, stage_color(Stage::RestrictUnroll));
    // The header says which colour is which stage.
    assert!(
        l.contains(&"restrict-unroll") && l.contains(&"baseline"),
        "{l:?}"
    );
    // Every line ends at its key, and no label overlaps another.
    for e in &entries {
        let key = e.label.split(' ').next().unwrap();
        assert!(l.contains(&key), "no key {key} in {l:?}");
    }
    assert!(layout.overlaps().is_empty(), "{:?}", layout.overlaps());
    assert!(
        s.legend_left()
            > layout
                .labels
                .iter()
                .filter(|x| x.kind == Kind::XTick)
                .map(|x| x.rect.x1)
                .fold(0.0, f64::max)
    );
}

#[test]
fn a_sweep_draws_a_cpu_port_once_and_names_the_rungs_that_share_it() {
    let mut run = cpu();
    for s in &mut run.workloads[0].shapes {
        let r = s
            .rows
            .iter_mut()
            .find(|r| r.id == "gemm-wmma-fp16")
            .unwrap();
        r.same_cpu_port_as = Some("gemm-wmma-tf32".into());
    }
    let charts = drawn(&run);
    let (_, _, layout) = chart(&charts, "gemm-sweep");
    let l = labels(layout);
    assert!(l.contains(&"not drawn, the same code as:"), "{l:?}");
    assert!(l.contains(&"08 gemm-wmma-fp16 = 07"), "{l:?}");
    assert!(!l.contains(&"08"), "rung 08 still has a line: {l:?}");
    assert!(
        l.contains(&"07 gemm-wmma-tf32") && l.contains(&"07"),
        "{l:?}"
    );
    // Rows of their own code at some size only keep their line.
    run.workloads[0].shapes[0]
        .rows
        .iter_mut()
        .find(|r| r.id == "gemm-wmma-fp16")
        .unwrap()
        .same_cpu_port_as = None;
    let charts = drawn(&run);
    let l = labels(&chart(&charts, "gemm-sweep").2);
    assert!(
        l.contains(&"08") && !l.contains(&"not drawn, the same code as:"),
        "{l:?}"
    );
}

#[test]
fn a_memory_bound_ladder_is_charted_and_tabled_in_bytes_per_second() {
    let mut run = ladder();
    let w = &mut run.workloads[0];
    w.workload = kernel::Workload::Reduce;
    for s in &mut w.shapes {
        let n = s.flops.cbrt().round() as usize * 1000;
        s.shape = kernel::Shape::Reduce { n };
        s.label = s.shape.label();
        s.flops = s.shape.flops();
        for r in &mut s.rows {
            (r.min_bytes, r.traffic) = (s.shape.min_bytes(4), None);
        }
    }
    let charts = drawn(&run);
    for (stem, _, layout) in &charts {
        let l = labels(layout);
        if stem.contains("ablation") || stem.contains("sweep") {
            assert!(l.iter().any(|t| t.contains("B/s")), "{stem}: {l:?}");
            assert!(!l.iter().any(|t| t.contains("FLOP/s")), "{stem}: {l:?}");
        }
    }
    // The sum still computes: its rows keep their place on the roofline.
    assert!(charts.iter().any(|c| c.0.starts_with("reduce-roofline")));
    let report = Report::new(&run);
    let md = crate::report::table::markdown(&report, &report.workloads[0]);
    let header = md.lines().find(|l| l.starts_with("| #")).unwrap();
    let (bw, fl) = (header.find("bandwidth"), header.find("throughput"));
    assert!(bw.is_some() && fl.is_some() && bw < fl, "{header}");
}

#[test]
fn compare_charts_give_each_series_its_own_legend_entry() {
    let (a, mut b) = (synthetic(), synthetic());
    b.workloads[0].shapes[2].rows[1].timing = timing(10.0);
    let ratios = crate::compare::ratios(&a, &b);
    let charts = crate::compare::ratio_charts(&a, &b, &ratios);
    let (_, layout) = svg(&charts[0].1).unwrap();
    assert!(layout.overlaps().is_empty());
    let l = labels(&layout);
    assert!(
        l.contains(&"B faster than A")
            && l.contains(&"B slower than A")
            && l.contains(&"inside the noise"),
        "{l:?}"
    );
    assert!(l.contains(&"2.00x") && l.contains(&"gemm-tiled"), "{l:?}");
    // The rows that did not change: their ratio says so.
    assert!(l.contains(&"~1.00x"), "{l:?}");
}

#[test]
fn text_boxes_cover_what_either_backend_draws() {
    // At least as wide as plotters' own estimate for the PNG, and taller than the font size
    // (ascenders and descenders of both renderings).
    let style = (canvas::FONT, 13.0).into_font();
    for s in ["gemm-naive", "▼ 0.83x vs 04: slower", "WWW", "i"] {
        let (w, _) = style.box_size(s).unwrap();
        assert!(text_width(s, 13.0) >= f64::from(w), "{s}");
    }
    let r = text_box("Ag", (100.0, 50.0), HPos::Right, 13.0);
    assert!(
        r.x1 == 100.0 && r.height() > 13.0 && r.y0 < 50.0 - 6.0 && r.y1 > 50.0 + 4.0,
        "{r:?}"
    );
    assert!(text_width("gemm-naive-longer", 13.0) > text_width("gemm-naive", 13.0));
}

#[test]
fn placed_labels_never_overlap() {
    let mut text = String::new();
    let layout = {
        let root =
            plotters::prelude::SVGBackend::with_string(&mut text, (400, 300)).into_drawing_area();
        let mut c = canvas::Canvas::new(&root).unwrap();
        let within = Rect::new(0.0, 0.0, 400.0, 300.0);
        c.mark(Rect::new(194.0, 144.0, 206.0, 156.0));
        for _ in 0..12 {
            let placed = c
                .place(
                    "07",
                    13.0,
                    canvas::BLACK_TEXT,
                    within,
                    canvas::spots_around((200.0, 150.0), 6.0),
                )
                .unwrap();
            assert!(placed.is_some());
        }
        c.layout
    };
    assert_eq!(layout.labels.len(), 12);
    assert!(layout.overlaps().is_empty());
    assert!(
        layout
            .labels
            .iter()
            .all(|l| !l.rect.overlaps(&layout.marks[0]))
    );
}

#[test]
fn log_ticks_step_1_2_5_and_linear_ticks_round() {
    let ticks = Axis::new(0.7, 300.0, true, 0.0, 100.0).tick_values();
    assert_eq!(ticks.len(), 8, "{ticks:?}");
    assert!(
        (ticks[0] - 1.0).abs() < 1e-9 && (ticks[7] - 200.0).abs() < 1e-9,
        "{ticks:?}"
    );
    // Many decades: decades only.
    let ticks = Axis::new(0.05, 2e5, true, 0.0, 100.0).tick_values();
    assert!(
        ticks
            .iter()
            .all(|t| (t.log10() - t.log10().round()).abs() < 1e-9),
        "{ticks:?}"
    );
    assert_eq!(
        Axis::new(0.0, 9.5, false, 0.0, 100.0).tick_values(),
        [0.0, 2.0, 4.0, 6.0, 8.0]
    );
    // A narrow log range still gets three ticks.
    assert!(Axis::new(0.8, 1.3, true, 0.0, 100.0).tick_values().len() >= 3);
}
