//! Where a network's time goes: each step of every row that passed timed alone, and the
//! CNN's time per image against the batch size. The report turns these into the category
//! table, the stacked bars and Amdahl's prediction for each swap.
//!
//! On the CPU each layer's port is timed inside the forward pass, and what the layers do
//! not account for (allocating the activations) is the gap. On a GPU each step of the
//! composed plan is enqueued alone many times between two events; the gaps are the
//! end-to-end time less the steps' sum: the GPU idle between launches. The simulator never
//! times, so it has no breakdown.

use crate::results::{
    BatchPoint, BatchSweep, NetworkResults, NetworkRowTimes, RunResults, Status, StepTime,
};
use anyhow::Result;
use kernel::network::Graph;
use kernel::{DeviceKind, Executor, Kernel, Shape, Workload};
use networks::NetworkRow;
use std::time::{Duration, Instant};

/// Forward passes timed per CPU row (the median pass is kept, with its layers' times): at
/// least [`CPU_MIN_PASSES`], then more while they fit in [`CPU_PASSES_MS`], up to
/// [`CPU_MAX_PASSES`]. A pass of a small network takes a few milliseconds: five of them span
/// a moment of a busy machine, whose hiccups then decide the median.
const CPU_MIN_PASSES: usize = 5;
const CPU_MAX_PASSES: usize = 101;
const CPU_PASSES_MS: f64 = 100.0;

/// Whether `done` passes taking `elapsed_ms` in all are enough.
fn enough_passes(done: usize, elapsed_ms: f64) -> bool {
    done >= CPU_MAX_PASSES || (done >= CPU_MIN_PASSES && elapsed_ms >= CPU_PASSES_MS)
}

/// How the CPU passes are counted, for the method lines.
fn cpu_passes_method() -> String {
    format!(
        "the median of {CPU_MIN_PASSES} passes or as many as {CPU_PASSES_MS:.0} ms hold (at \
         most {CPU_MAX_PASSES})"
    )
}
/// Times each step is enqueued in a row on a GPU, at most; a slow row's steps fewer times,
/// so that timing its steps costs about [`GPU_STEPS_MS`].
const GPU_REPEATS: u64 = 20;
const GPU_STEPS_MS: f64 = 100.0;

/// How many times to repeat a pass (or each of its steps) that takes `ms`.
fn repeats(ms: Option<f64>) -> u64 {
    match ms {
        Some(t) if t > 0.0 => ((GPU_STEPS_MS / t).ceil() as u64).clamp(2, GPU_REPEATS),
        _ => GPU_REPEATS,
    }
}

/// The breakdown of every network shape of `run` on `dev`; what fails to be measured is
/// recorded in [`NetworkResults::failures`].
pub fn measure(dev: &dyn Executor, run: &RunResults, seed: u64) -> Vec<NetworkResults> {
    if dev.kind() == DeviceKind::Sim {
        return Vec::new();
    }
    let rows = networks::rows();
    let mut out = Vec::new();
    for w in run.workloads.iter().filter(|w| w.workload.is_network()) {
        for s in &w.shapes {
            // A step the device cannot time is reported with its reason; the run goes on.
            let mut failures = Vec::new();
            let mut times = Vec::new();
            for r in s.rows.iter().filter(|r| r.status == Status::Passed) {
                let Some(row) = rows.iter().find(|k| k.info().id == r.id) else {
                    continue;
                };
                let median = r.timing.as_ref().map(|t| t.median_ms);
                match row_times(dev, row, &s.shape, seed, median) {
                    Ok(t) => times.push(t),
                    Err(e) => failures.push(format!("{}: {e:#}", r.id)),
                }
            }
            let last = w.shapes.last().map_or(s.shape, |l| l.shape);
            let sweep = match (w.workload, fastest(&times)) {
                (Workload::Cnn, Some(id)) if s.shape == last => rows
                    .iter()
                    .find(|k| k.info().id == id)
                    .and_then(|row| match batch_sweep(dev, row, &s.shape, seed) {
                        Ok(sweep) => Some(sweep),
                        Err(e) => {
                            failures.push(format!("batch sweep of {id}: {e:#}"));
                            None
                        }
                    }),
                _ => None,
            };
            out.push(NetworkResults {
                workload: w.workload,
                shape: s.shape,
                label: s.label.clone(),
                method: method(dev.kind()),
                rows: times,
                batch_sweep: sweep,
                failures,
            });
        }
    }
    out
}

fn method(kind: DeviceKind) -> String {
    match kind {
        DeviceKind::Cuda => format!(
            "each step enqueued up to {GPU_REPEATS} times in a row between two CUDA events, the \
             mean of one; the gaps are the row's end-to-end median less the steps' sum"
        ),
        _ => format!(
            "each layer's CPU port timed inside the forward pass, in {}; the gaps are that \
             pass's time less its layers' (allocating the activations)",
            cpu_passes_method()
        ),
    }
}

fn fastest(rows: &[NetworkRowTimes]) -> Option<&str> {
    rows.iter()
        .min_by(|a, b| a.total_ms.total_cmp(&b.total_ms))
        .map(|r| r.id.as_str())
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1e3
}

/// The row's steps, each with its median time, and the end-to-end median.
fn row_times(
    dev: &dyn Executor,
    row: &NetworkRow,
    shape: &Shape,
    seed: u64,
    end_to_end_ms: Option<f64>,
) -> Result<NetworkRowTimes> {
    let graph = row.graph(shape)?;
    let inputs = crate::inputs::random_inputs(shape, seed);
    let (total_ms, steps) = match dev.kind() {
        DeviceKind::Cuda => {
            let tags = graph.compose()?.steps;
            let mut p = dev.prepare(row, shape, &inputs)?;
            let spans = p
                .time_steps(repeats(end_to_end_ms))
                .ok_or_else(|| anyhow::anyhow!("{} cannot time steps alone", dev.info().name))??;
            let steps = tags
                .iter()
                .zip(spans)
                .map(|(t, d)| StepTime {
                    label: t.label.clone(),
                    category: t.category,
                    ms: ms(d),
                })
                .collect();
            let total = match end_to_end_ms {
                Some(t) => t,
                None => ms(p.time(3)?) / 3.0,
            };
            (total, steps)
        }
        _ => cpu_passes(&graph, &inputs)?,
    };
    Ok(NetworkRowTimes {
        id: row.info().id.to_string(),
        swapped: row
            .swapped()
            .map(|(slot, id)| (id.to_string(), slot.category())),
        parent: row.lineage().and_then(|l| l.parent).map(String::from),
        total_ms,
        steps,
    })
}

/// Forward passes through the layers' ports ([`enough_passes`]): the median pass, with its
/// own layers' times (medians taken layer by layer could add up to more than the pass).
fn cpu_passes(graph: &Graph, inputs: &[Vec<f32>]) -> Result<(f64, Vec<StepTime>)> {
    let ins: Vec<&[f32]> = inputs.iter().map(Vec::as_slice).collect();
    let mut out = vec![f32::NAN; graph.output_len];
    // One pass untimed: first-touch page faults and the thread pool's wake-up stay out.
    graph.forward_cpu(&ins, &mut out)?;
    let mut passes = Vec::new();
    let first = Instant::now();
    while !enough_passes(passes.len(), ms(first.elapsed())) {
        let start = Instant::now();
        let layers = graph.forward_cpu(&ins, &mut out)?;
        passes.push((ms(start.elapsed()), layers));
    }
    passes.sort_by(|a, b| a.0.total_cmp(&b.0));
    let (total, layers) = passes.swap_remove(passes.len() / 2);
    let steps = graph
        .layers
        .iter()
        .zip(layers)
        .map(|(l, t)| StepTime {
            label: l.name.clone(),
            category: l.category,
            ms: ms(t),
        })
        .collect();
    Ok((total, steps))
}

/// Batch sizes of the sweep, up to the shape's batch.
fn batches(kind: DeviceKind, max: usize) -> Vec<usize> {
    let ladder: &[usize] = match kind {
        DeviceKind::Cuda => &[1, 4, 16, 64, 256, 1024, 4096, 10_000],
        _ => &[1, 2, 4, 8, 16, 32, 64],
    };
    let mut v: Vec<usize> = ladder.iter().copied().filter(|&b| b <= max).collect();
    if v.last() != Some(&max) && max <= *ladder.last().unwrap_or(&max) {
        v.push(max);
    }
    v
}

/// Time per image of `row` from batch 1 up to `shape`'s batch.
fn batch_sweep(
    dev: &dyn Executor,
    row: &NetworkRow,
    shape: &Shape,
    seed: u64,
) -> Result<BatchSweep> {
    let Shape::Cnn { b: max } = *shape else {
        unreachable!("only the CNN is swept")
    };
    let mut points = Vec::new();
    for b in batches(dev.kind(), max) {
        let s = Shape::Cnn { b };
        let inputs = crate::inputs::random_inputs(&s, seed);
        let point = match dev.kind() {
            DeviceKind::Cuda => {
                let mut p = dev.prepare(row, &s, &inputs)?;
                let once = ms(p.time(1)?);
                let (streamed, graphed) = p
                    .time_replay(repeats(Some(once)))
                    .ok_or_else(|| anyhow::anyhow!("no CUDA graph on {}", dev.info().name))??;
                BatchPoint {
                    batch: b,
                    ms_per_item: ms(streamed) / b as f64,
                    graph_ms_per_item: Some(ms(graphed) / b as f64),
                }
            }
            _ => {
                let graph = row.graph(&s)?;
                let (total, _) = cpu_passes(&graph, &inputs)?;
                BatchPoint {
                    batch: b,
                    ms_per_item: total / b as f64,
                    graph_ms_per_item: None,
                }
            }
        };
        points.push(point);
    }
    let method = match dev.kind() {
        DeviceKind::Cuda => format!(
            "{}: the forward pass run up to {GPU_REPEATS} times back to back, its steps \
             enqueued one by one, then captured once as a CUDA graph and replayed",
            row.info().id
        ),
        _ => format!(
            "{}: the CPU ports' forward pass (no CUDA graph on a CPU), {}",
            row.info().id,
            cpu_passes_method()
        ),
    };
    Ok(BatchSweep {
        id: row.info().id.to_string(),
        method,
        points,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cpu_rows_take_at_least_five_passes_then_fill_their_time() {
        assert!(!enough_passes(4, 10_000.0));
        assert!(enough_passes(5, CPU_PASSES_MS));
        assert!(!enough_passes(5, CPU_PASSES_MS - 1.0));
        assert!(!enough_passes(100, 1.0));
        assert!(enough_passes(CPU_MAX_PASSES, 1.0));
    }

    #[test]
    fn sweeps_end_at_the_shapes_batch() {
        assert_eq!(batches(DeviceKind::Cpu, 8), vec![1, 2, 4, 8]);
        assert_eq!(batches(DeviceKind::Cpu, 12), vec![1, 2, 4, 8, 12]);
        assert_eq!(batches(DeviceKind::Cuda, 10_000).last(), Some(&10_000));
        assert_eq!(batches(DeviceKind::Cpu, 1), vec![1]);
    }

    /// A CUDA device whose graph capture fails, as the legacy default stream's did on an
    /// H200: everything else times (1 ms a run, 0.1 ms a step).
    struct NoGraphs {
        info: kernel::DeviceInfo,
        cpu: kernel::device::cpu::CpuDevice,
    }

    struct FakeRun;

    impl kernel::Prepared for FakeRun {
        fn run(&mut self) -> Result<(), kernel::DeviceError> {
            Ok(())
        }
        fn output(&mut self) -> Result<Vec<f32>, kernel::DeviceError> {
            Ok(Vec::new())
        }
        fn time(&mut self, iters: u64) -> Result<Duration, kernel::DeviceError> {
            Ok(Duration::from_millis(iters))
        }
        fn time_steps(&mut self, _: u64) -> Option<Result<Vec<Duration>, kernel::DeviceError>> {
            Some(Ok(vec![Duration::from_micros(100); 16]))
        }
        fn time_replay(
            &mut self,
            _: u64,
        ) -> Option<Result<(Duration, Duration), kernel::DeviceError>> {
            Some(Err(kernel::DeviceError::Driver {
                what: "starting a graph capture".into(),
                detail: "CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED".into(),
            }))
        }
    }

    impl Executor for NoGraphs {
        fn kind(&self) -> DeviceKind {
            DeviceKind::Cuda
        }
        fn info(&self) -> &kernel::DeviceInfo {
            &self.info
        }
        fn can_run(&self, _: &dyn Kernel) -> Result<(), kernel::Unsupported> {
            Ok(())
        }
        fn prepare<'a>(
            &'a self,
            _: &'a dyn Kernel,
            _: &Shape,
            _: &'a [Vec<f32>],
        ) -> Result<Box<dyn kernel::Prepared + 'a>, kernel::DeviceError> {
            Ok(Box::new(FakeRun))
        }
    }

    #[test]
    fn a_step_the_device_cannot_time_is_recorded_and_the_rest_kept() {
        let cpu = kernel::device::cpu::CpuDevice::new();
        let dev = NoGraphs {
            info: cpu.info().clone(),
            cpu,
        };
        let config = crate::config::Config::defaults();
        let all = networks::rows();
        let kernels: Vec<&dyn Kernel> = all
            .iter()
            .map(|r| r as &dyn Kernel)
            .filter(|k| k.info().workload == Workload::Cnn)
            .collect();
        // The rows validated on the CPU, as a run would have them.
        let run = crate::run::Ablation {
            dev: &dev.cpu,
            config: &config,
            kernels,
            shapes: vec![(Workload::Cnn, vec![Shape::Cnn { b: 3 }])],
            timing: None,
            keep_unrunnable: false,
        }
        .run(|_| {})
        .unwrap();
        let nets = measure(&dev, &run, config.seed);
        assert_eq!(nets.len(), 1);
        let n = &nets[0];
        assert!(!n.rows.is_empty(), "the rows' steps were timed");
        assert!(n.batch_sweep.is_none());
        assert_eq!(n.failures.len(), 1, "{:?}", n.failures);
        assert!(
            n.failures[0].starts_with("batch sweep of ")
                && n.failures[0].contains("CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED"),
            "{}",
            n.failures[0]
        );
        let md = crate::report::network::markdown(n);
        assert!(md.contains("Not measured: batch sweep of "), "{md}");
    }
}
