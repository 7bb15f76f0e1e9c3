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
