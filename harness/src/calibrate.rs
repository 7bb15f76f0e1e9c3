//! Measured ceilings for the roofline: memory bandwidth and peak compute of the device, taken
//! once and cached with the device's fingerprint in `target/lab/calibration/<slug>.json`; each
//! run folder keeps a copy of the one its roofline used.
//!
//! CPU: the faster of a STREAM triad and a read-only sum on rayon, and an FMA loop in
//! explicit SIMD (AVX-512 or AVX2+FMA when present). GPU: a device-to-device copy kernel, a
//! peak FP32 FMA kernel, an mma.sync kernel on operands in registers and cuBLAS
//! TF32/FP16/BF16 GEMMs, all through the same executor and CUDA-event timing as the rows.

mod cpu;
mod gpu;

use crate::runs::LabDir;
use anyhow::{Result, bail};
use kernel::{DeviceInfo, DeviceKind, Executor};
use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};

/// Bumped whenever a field of the calibration file changes meaning or disappears.
pub const CALIBRATION_VERSION: u32 = 1;

/// What a calibration is valid for: the same device, named the same, on the same driver.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Fingerprint {
    pub slug: String,
    pub name: String,
    pub driver: String,
}

impl Fingerprint {
    pub fn of(info: &DeviceInfo) -> Self {
        Self {
            slug: info.slug.clone(),
            name: info.name.clone(),
            driver: info.driver.clone(),
        }
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Calibration {
    pub schema_version: u32,
    pub fingerprint: Fingerprint,
    /// UTC, ISO 8601.
    pub date: String,
    /// A short calibration taken on the way into `harness run`, not by `harness calibrate`.
    pub quick: bool,
    /// Bytes read plus written per second, GB/s.
    pub bandwidth_gbs: f64,
    /// FP32 FMA rate, GFLOP/s.
    pub fp32_gflops: f64,
    /// Tensor-core rates through cuBLAS (GPU only), GFLOP/s.
    pub tf32_gflops: Option<f64>,
    /// FP16 and BF16 share it: the faster of the two cuBLAS measurements.
    pub fp16_gflops: Option<f64>,
    /// mma.sync m16n8k16 FP16 on operands in registers (GPU only), GFLOP/s: the most the
    /// mma.sync rungs can reach, which on Hopper is below the tensor ceiling that wgmma (and
    /// cuBLAS) reach. Absent from calibrations taken before it was measured.
    #[serde(default)]
    pub mma_sync_gflops: Option<f64>,
    /// How each figure was measured, and how it compares with theory where that is known.
    pub notes: Vec<String>,
}

/// Where a device's calibration is cached.
pub fn path(lab: &LabDir, info: &DeviceInfo) -> PathBuf {
    lab.calibration(&info.slug)
}

impl Calibration {
    pub fn read(path: &Path) -> Result<Self> {
        crate::output::read_versioned(
            path,
            "calibration",
            CALIBRATION_VERSION,
            "run `harness calibrate` again",
        )
    }

    pub fn write(&self, path: &Path) -> Result<()> {
        crate::output::write_atomic(path, serde_json::to_string_pretty(self)? + "\n")
    }

    pub fn matches(&self, info: &DeviceInfo) -> bool {
        self.fingerprint == Fingerprint::of(info)
    }

    /// One line per figure, for the terminal.
    pub fn describe(&self) -> String {
        let mut s = format!(
            "bandwidth {:.1} GB/s, FP32 {}",
            self.bandwidth_gbs,
            rate(self.fp32_gflops)
        );
        if let Some(t) = self.tf32_gflops {
            s += &format!(", TF32 tensor {}", rate(t));
        }
        if let Some(h) = self.fp16_gflops {
            s += &format!(", FP16/BF16 tensor {}", rate(h));
        }
        if let Some(m) = self.mma_sync_gflops {
            s += &format!(", mma.sync FP16 {}", rate(m));
        }
        s
    }
}

fn rate(gflops: f64) -> String {
    if gflops >= 1e3 {
        format!("{:.1} TFLOP/s", gflops / 1e3)
    } else {
        format!("{gflops:.1} GFLOP/s")
    }
}

/// The cached calibration of `info`, if one exists and its fingerprint matches.
pub fn cached(lab: &LabDir, info: &DeviceInfo) -> Option<Calibration> {
    Calibration::read(&path(lab, info))
        .ok()
        .filter(|c| c.matches(info))
}

/// Measures `dev`'s ceilings. `quick` keeps it to about a second on a CPU (the way into a
/// run); the simulator has no ceilings worth measuring.
pub fn measure(dev: &dyn Executor, quick: bool) -> Result<Calibration> {
    if cfg!(debug_assertions) {
        bail!(
            "this harness is a debug build, whose own code is not optimized: its measurements \
             would say nothing about the machine (build with --release)"
        );
    }
    let m = match dev.kind() {
        DeviceKind::Cpu => cpu::measure(quick),
        DeviceKind::Cuda => gpu::measure(dev, quick)?,
        DeviceKind::Sim => bail!("the simulator has no speed to calibrate (it is functional only)"),
    };
    Ok(Calibration {
        schema_version: CALIBRATION_VERSION,
        fingerprint: Fingerprint::of(dev.info()),
        date: crate::results::utc_now(),
        quick,
        bandwidth_gbs: m.bandwidth_gbs,
        fp32_gflops: m.fp32_gflops,
        tf32_gflops: m.tf32_gflops,
        fp16_gflops: m.fp16_gflops,
        mma_sync_gflops: m.mma_sync_gflops,
        notes: m.notes,
    })
}

/// What a device-specific calibration returns.
struct Measurement {
    bandwidth_gbs: f64,
    fp32_gflops: f64,
    tf32_gflops: Option<f64>,
    fp16_gflops: Option<f64>,
    mma_sync_gflops: Option<f64>,
    notes: Vec<String>,
}

/// The cached calibration when it matches the device, else a quick one, cached for next time.
/// `None` (with the reason) where the device cannot be calibrated.
pub fn load_or_measure(dev: &dyn Executor, lab: &LabDir) -> Result<(Calibration, bool), String> {
    if let Some(c) = cached(lab, dev.info()) {
        return Ok((c, true));
    }
    let c = measure(dev, true).map_err(|e| format!("{e:#}"))?;
    // A cache that cannot be written only costs the next run a second.
    let _ = c.write(&path(lab, dev.info()));
    Ok((c, false))
}

#[cfg(test)]
pub(crate) mod tests_support {
    use super::*;

    pub(crate) fn sample(info: &DeviceInfo) -> Calibration {
        Calibration {
            schema_version: CALIBRATION_VERSION,
            fingerprint: Fingerprint::of(info),
            date: "2026-11-22T15:00:00Z".into(),
            quick: false,
            bandwidth_gbs: 21.5,
            fp32_gflops: 180.25,
            tf32_gflops: None,
            fp16_gflops: Some(1.5e5),
            mma_sync_gflops: None,
            notes: vec!["synthetic".into()],
        }
    }
}

#[cfg(test)]
mod tests {
    use super::tests_support::sample;
    use super::*;

    fn info(driver: &str) -> DeviceInfo {
        DeviceInfo {
            kind: "cpu".into(),
            name: "Test CPU (2 threads)".into(),
            slug: "cpu-test".into(),
            driver: driver.into(),
            ..Default::default()
        }
    }

    #[test]
    fn round_trip_and_fingerprint() {
        let dir = std::env::temp_dir().join(format!("lab-cal-{}", std::process::id()));
        let lab = LabDir::at(&dir);
        let a = info("Linux 6.1");
        let c = sample(&a);
        c.write(&path(&lab, &a)).unwrap();
        assert_eq!(Calibration::read(&path(&lab, &a)).unwrap(), c);
        assert_eq!(cached(&lab, &a), Some(c));
        // A driver update changes the fingerprint: the cache no longer applies.
        assert_eq!(cached(&lab, &info("Linux 6.2")), None);
        std::fs::remove_dir_all(&dir).unwrap();
    }

    /// Calibrations taken before mma.sync was measured (the first H200 run's) still read.
    #[test]
    fn calibrations_without_the_mma_sync_figure_still_read() {
        let p = Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../results/nvidia-h200/first-run/calibration.json");
        let text = std::fs::read_to_string(&p).unwrap();
        assert!(
            !text.contains("mma_sync"),
            "the fixture has the field now: pick another"
        );
        let c = Calibration::read(&p).unwrap();
        assert_eq!(c.mma_sync_gflops, None);
        assert!(c.fp16_gflops.is_some());
        assert!(!c.describe().contains("mma.sync"), "{}", c.describe());
    }

    #[test]
    fn other_versions_are_refused() {
        let dir = std::env::temp_dir().join(format!("lab-calv-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let p = dir.join("calibration.json");
        std::fs::write(&p, r#"{"schema_version": 7}"#).unwrap();
        let e = Calibration::read(&p).unwrap_err().to_string();
        assert!(e.contains("version 7"), "{e}");
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
