//! Every row of both networks against the f64 forward pass of the same weights, through the
//! CPU ports, at awkward sizes; and a wrong binding between two layers is caught.

use kernel::network::Graph;
use kernel::{Kernel, Shape};
use std::sync::Arc;

/// Inputs as the harness draws them: uniform in [-scale, scale], never zero.
fn inputs(shape: &Shape) -> Vec<Vec<f32>> {
    shape
        .inputs()
        .iter()
        .enumerate()
        .map(|(t, spec)| {
            (0..spec.len())
                .map(|i| {
                    let u = kernel::Fill::random_value(0x5EED + t as u64, i);
                    let u = if u == 0.0 { 0.5 } else { u };
                    u * spec.scale
                })
                .collect()
        })
        .collect()
}

fn rel_error(out: &[f32], want: &[f64]) -> f64 {
    let (mut d, mut n) = (0.0f64, 0.0f64);
    for (o, w) in out.iter().zip(want) {
        d += (f64::from(*o) - w).powi(2);
        n += w * w;
    }
    (d / n).sqrt()
}

fn forward(g: &Graph, ins: &[Vec<f32>]) -> Vec<f32> {
    let refs: Vec<&[f32]> = ins.iter().map(Vec::as_slice).collect();
    let mut out = vec![f32::NAN; g.output_len];
    g.forward_cpu(&refs, &mut out)
        .expect("every layer has a CPU port");
    out
}

#[test]
fn every_row_matches_the_f64_forward_pass() {
    let shapes = [
        Shape::Cnn { b: 3 },
        Shape::Encoder {
            b: 2,
            s: 33,
            e: 128,
            h: 2,
        },
    ];
    for shape in shapes {
        let ins = inputs(&shape);
        let want = kernel::network::reference(&shape, &ins);
        let rows: Vec<_> = networks::rows()
            .into_iter()
            .filter(|r| r.info().workload == shape.workload())
            .collect();
        assert!(rows.len() > 5, "{shape}: {} rows", rows.len());
        for row in rows {
            let info = row.info();
            let g = row
                .graph(&shape)
                .unwrap_or_else(|why| panic!("{} at {shape}: {why}", info.id));
            let out = forward(&g, &ins);
            assert!(out.iter().all(|v| v.is_finite()), "{}: NaN", info.id);
            let e = rel_error(&out, &want);
            assert!(
                e <= info.precision.tolerance(),
                "{} at {shape}: relative error {e:e} above {}",
                info.id,
                info.precision.tolerance()
            );
        }
    }
}

#[test]
fn probabilities_sum_to_one() {
    let shape = Shape::Cnn { b: 2 };
    let want = kernel::network::reference(&shape, &inputs(&shape));
    for image in want.chunks(kernel::network::cnn::CLASSES) {
        assert!((image.iter().sum::<f64>() - 1.0).abs() < 1e-12);
    }
}

#[test]
fn a_layer_reading_the_wrong_weights_is_caught() {
    let shape = Shape::Encoder {
        b: 1,
        s: 16,
        e: 64,
        h: 1,
    };
    let ins = inputs(&shape);
    let want = kernel::network::reference(&shape, &ins);
    let row = networks::rows()
        .into_iter()
        .find(|r| r.info().workload == kernel::Workload::Encoder)
        .expect("an encoder row");
    let good = row.graph(&shape).unwrap();
    assert!(rel_error(&forward(&good, &ins), &want) < row.info().precision.tolerance());
    // FFN 2 reading FFN 1's bias as its own (same length prefix, wrong tensor).
    let mut bad: Graph = (*good).clone();
    let last = bad.layers.last_mut().unwrap();
    last.inputs[1].at = kernel::Buf::Input(10).at(0);
    let e = rel_error(&forward(&Arc::new(bad), &ins), &want);
    assert!(e > 1e-2, "a wrong bias went unnoticed: {e:e}");
}

#[test]
fn each_swap_changes_its_parent_row_in_one_slot() {
    use networks::Slot;
    let rows = networks::rows();
    let by_id = |id: &str| {
        rows.iter()
            .find(|r| r.info().id == id)
            .unwrap_or_else(|| panic!("no row {id}"))
    };
    let gemm_of = |r: &networks::NetworkRow| {
        r.choice()
            .iter()
            .find(|(s, _)| *s == Slot::Gemm)
            .map(|(_, id)| *id)
    };
    let mut attention_rows = 0;
    for r in &rows {
        let Some((slot, swapped)) = r.swapped() else {
            continue;
        };
        let parent = by_id(
            r.lineage()
                .and_then(|l| l.parent)
                .expect("a swap has a parent"),
        );
        // Every slot but the swapped one holds the parent's rung; the parent holds the
        // first rung of the swapped slot.
        for (s, id) in r.choice() {
            if *s != slot {
                assert!(parent.choice().contains(&(*s, *id)), "{}", r.info().id);
            } else {
                assert_eq!(*id, swapped);
                assert!(parent.swapped().is_none_or(|(ps, _)| ps != slot));
            }
        }
        if slot == Slot::Attention {
            attention_rows += 1;
            // The attention swaps sit on a GEMM fast enough not to hide them.
            assert_eq!(
                gemm_of(r),
                Some(networks::ATTENTION_ROWS_GEMM),
                "{}",
                r.info().id
            );
            assert_eq!(
                parent.info().id,
                format!("encoder-{}", networks::ATTENTION_ROWS_GEMM)
            );
        } else {
            assert!(
                parent.swapped().is_none(),
                "{}: {}",
                r.info().id,
                parent.info().id
            );
        }
    }
    assert!(attention_rows > 0);
}
