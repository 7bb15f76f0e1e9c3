//! Host memory a shape needs, checked before anything is allocated: a shape too large for the
//! machine is refused with the bytes it needs and the bytes there are, instead of the process
//! aborting halfway through a run.

use crate::config::Config;
use anyhow::{Result, bail};
use kernel::{Shape, Workload};

/// Bytes of host memory a run of `shape` holds at its peak: the inputs and the output in f32
/// twice (the host's copy, and the device's or a CPU port's), and the f64 reference unless it
/// is sampled (above `cpu_reference_max_gflop`).
pub fn host_bytes(shape: &Shape, config: &Config) -> u64 {
    let inputs: u64 = shape.inputs().iter().map(|t| t.len() as u64).sum();
    let output = shape.output().len() as u64;
    let sampled = shape.flops() / 1e9 > config.cpu_reference_max_gflop;
    (inputs + output) * 4 * 2 + if sampled { 0 } else { output * 8 }
}

/// Bytes this process can still allocate: the kernel's estimate of available memory, capped
/// by the control group's limit where there is one; `None` where neither can be read.
pub fn available() -> Option<u64> {
    let meminfo = std::fs::read_to_string("/proc/meminfo").ok();
    let available = meminfo.as_deref().and_then(|m| {
        m.lines()
            .find_map(|l| l.strip_prefix("MemAvailable:"))
            .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<u64>().ok())
            .map(|kb| kb * 1024)
    });
    let read = |p: &str| {
        std::fs::read_to_string(p)
            .ok()
            .and_then(|t| t.trim().parse::<u64>().ok())
    };
    let cgroup = read("/sys/fs/cgroup/memory.max")
        .map(|max| max.saturating_sub(read("/sys/fs/cgroup/memory.current").unwrap_or(0)));
    match (available, cgroup) {
        (Some(a), Some(c)) => Some(a.min(c)),
        (a, c) => a.or(c),
    }
}

fn gb(bytes: u64) -> String {
    format!("{:.1} GB", bytes as f64 / 1e9)
}

/// Refuses the first shape of `shapes` that needs more than `available` bytes (no check when
/// that is unknown).
pub fn check(
    shapes: &[(Workload, Vec<Shape>)],
    config: &Config,
    available: Option<u64>,
) -> Result<()> {
    let Some(available) = available else {
        return Ok(());
    };
    for (w, list) in shapes {
        for s in list {
            let need = host_bytes(s, config);
            if need > available {
                bail!(
                    "{w} {} needs about {} ({need} bytes) of host memory: its inputs and output \
                     in f32, on the host and on the device (or in the CPU port){}; {} ({available} \
                     bytes) are available. Choose smaller --sizes.",
                    s.label(),
                    gb(need),
                    if s.flops() / 1e9 > config.cpu_reference_max_gflop {
                        ""
                    } else {
                        ", and the f64 reference"
                    },
                    gb(available)
                );
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_shape_larger_than_memory_is_refused_with_its_bytes() {
        let config = Config::defaults();
        let big = Shape::square_gemm(40000);
        // 3 x 1.6e9 f32 elements, twice; the reference is sampled at this size.
        assert_eq!(host_bytes(&big, &config), 3 * 1_600_000_000 * 8);
        let shapes = vec![(Workload::Gemm, vec![Shape::square_gemm(64), big])];
        let e = check(&shapes, &config, Some(24_000_000_000))
            .unwrap_err()
            .to_string();
        assert!(
            e.starts_with(
                "gemm 40000x40000x40000 needs about 38.4 GB (38400000000 bytes) of host memory"
            ) && e.contains("24.0 GB (24000000000 bytes) are available"),
            "{e}"
        );
        let small = vec![(Workload::Gemm, vec![Shape::square_gemm(64)])];
        assert!(check(&small, &config, Some(24_000_000_000)).is_ok());
        assert!(check(&shapes, &config, None).is_ok());
        // Small shapes keep their full f64 reference in the count.
        let small = Shape::gemm(10, 20, 30);
        assert_eq!(host_bytes(&small, &config), (300 + 600 + 200) * 8 + 200 * 8);
    }
}
