//! The CPU device: runs each kernel's CPU port on rayon's thread pool, timed with a monotonic
//! clock. It is the default on machines without a GPU and what CI runs end to end.

use super::{DeviceError, DeviceInfo, DeviceKind, Executor, Prepared, slugify};
use crate::contract::{Kernel, Unsupported};
use crate::workload::Shape;
use std::time::{Duration, Instant};

pub struct CpuDevice {
    info: DeviceInfo,
}

impl CpuDevice {
    pub fn new() -> Self {
        let model = cpu_model().unwrap_or_else(|| std::env::consts::ARCH.to_string());
        let threads = rayon::current_num_threads();
        let name = format!("{model} ({threads} threads)");
        Self {
            info: DeviceInfo {
                kind: DeviceKind::Cpu.name().to_string(),
                slug: format!("cpu-{}", slugify(&name)),
                name,
                driver: os_release(),
                cuda: None,
                compute_capability: None,
                units: threads as u32,
                memory_bytes: None,
                l2_bytes: None,
            },
        }
    }
}

impl Default for CpuDevice {
    fn default() -> Self {
        Self::new()
    }
}

fn cpu_model() -> Option<String> {
    let text = std::fs::read_to_string("/proc/cpuinfo").ok()?;
    let line = text.lines().find(|l| l.starts_with("model name"))?;
    Some(line.split_once(':')?.1.trim().to_string())
}

fn os_release() -> String {
    std::fs::read_to_string("/proc/sys/kernel/osrelease")
        .map(|s| format!("Linux {}", s.trim()))
        .unwrap_or_else(|_| std::env::consts::OS.to_string())
}

struct CpuRun<'a> {
    kernel: &'a dyn Kernel,
    shape: Shape,
    inputs: &'a [Vec<f32>],
    out: Vec<f32>,
}

impl CpuRun<'_> {
    fn once(&mut self) -> Result<(), DeviceError> {
        let inputs: Vec<&[f32]> = self.inputs.iter().map(Vec::as_slice).collect();
        Ok(self.kernel.run_cpu(&self.shape, &inputs, &mut self.out)?)
    }
}

impl Prepared for CpuRun<'_> {
    fn run(&mut self) -> Result<(), DeviceError> {
        self.out.fill(crate::POISON_F32);
        self.once()
    }

    fn output(&mut self) -> Result<Vec<f32>, DeviceError> {
        Ok(self.out.clone())
    }

    fn time(&mut self, iters: u64) -> Result<Duration, DeviceError> {
        let mut total = Duration::ZERO;
        for _ in 0..iters {
            self.out.fill(crate::POISON_F32);
            let start = Instant::now();
            self.once()?;
            total += start.elapsed();
        }
        Ok(total)
    }
}

impl Executor for CpuDevice {
    fn kind(&self) -> DeviceKind {
        DeviceKind::Cpu
    }

    fn info(&self) -> &DeviceInfo {
        &self.info
    }

    fn can_run(&self, kernel: &dyn Kernel) -> Result<(), Unsupported> {
        match kernel.has_cpu() {
            true => Ok(()),
            false => Err(Unsupported(format!(
                "{} has no CPU port (it runs on a GPU only)",
                kernel.info().id
            ))),
        }
    }

    fn prepare<'a>(
        &'a self,
        kernel: &'a dyn Kernel,
        shape: &Shape,
        inputs: &'a [Vec<f32>],
    ) -> Result<Box<dyn Prepared + 'a>, DeviceError> {
        self.can_run(kernel)?;
        kernel.supports(shape)?;
        Ok(Box::new(CpuRun {
            kernel,
            shape: *shape,
            inputs,
            out: vec![crate::POISON_F32; shape.output().len()],
        }))
    }
}
