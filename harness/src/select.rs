//! Choosing the device: the GPU when there is one, else the CPU with one line saying why.

use anyhow::{Result, anyhow};
use kernel::cuda::CudaDevice;
use kernel::device::cpu::CpuDevice;
use kernel::{DeviceError, DeviceKind, Executor};

/// Opens the requested device. With `None`, the GPU if one works, else the CPU; the second
/// value is the line explaining a fallback.
pub fn open(kind: Option<DeviceKind>) -> Result<(Box<dyn Executor>, Option<String>)> {
    match kind {
        Some(DeviceKind::Cpu) => Ok((Box::new(CpuDevice::new()), None)),
        Some(DeviceKind::Cuda) => match CudaDevice::open() {
            Ok(d) => Ok((Box::new(d), None)),
            Err(e) => Err(anyhow!("--device cuda: {e}")),
        },
        Some(DeviceKind::Sim) => match kernel::sim::SimDevice::new() {
            Ok(d) => Ok((Box::new(d), None)),
            Err(e) => Err(anyhow!("--device sim: {e}")),
        },
        None => match CudaDevice::open() {
            Ok(d) => Ok((Box::new(d), None)),
            Err(DeviceError::Unavailable(why)) => Ok((
                Box::new(CpuDevice::new()),
                Some(format!("No GPU ({why}); running the CPU ladder.")),
            )),
            Err(e) => Ok((
                Box::new(CpuDevice::new()),
                Some(format!(
                    "The GPU could not be used ({e}); running the CPU ladder."
                )),
            )),
        },
    }
}

/// Parses a `--device` value, listing the valid ones on error.
pub fn parse_kind(s: &str) -> Result<DeviceKind> {
    DeviceKind::parse(s).ok_or_else(|| {
        anyhow!(
            "unknown device {s:?}; valid devices: {}",
            DeviceKind::ALL.map(DeviceKind::name).join(", ")
        )
    })
}
