//! Roofline ceilings and bounds: the fastest a row could go at its arithmetic intensity,
//! min(peak compute for its precision, intensity x memory bandwidth). Ceilings come from the
//! device's calibration (measured) or, for known GPUs, from the datasheet.

use crate::calibrate::Calibration;
use kernel::Precision;
use serde::{Deserialize, Serialize};

/// Where a set of ceilings came from; tables and charts say which.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Source {
    Measured,
    Datasheet,
}

/// Memory bandwidth and compute peaks of one device, in GB/s and GFLOP/s.
#[derive(Debug, Clone, PartialEq)]
pub struct Ceilings {
    pub source: Source,
    /// "measured by `harness calibrate`" or "datasheet, H100 SXM".
    pub label: String,
    pub bandwidth_gbs: f64,
    pub fp32_gflops: f64,
    pub tf32_gflops: Option<f64>,
    pub fp16_gflops: Option<f64>,
    /// An in-core ceiling under the FP16/BF16 roof: the rate of mma.sync alone, measured. No
    /// row is judged against it; charts draw it, so that the mma.sync rungs read against what
    /// their instruction can do as well as against the tensor roof.
    pub mma_sync_gflops: Option<f64>,
}

/// Which compute roof: the units a precision's arithmetic runs on.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum RoofKind {
    /// FP32 FMA units (CUDA cores; on a CPU, its vector FMA units, which every CPU port uses).
    Fp32,
    /// Tensor cores on TF32 operands.
    Tf32Tensor,
    /// Tensor cores on FP16 or BF16 operands (the same rate).
    Fp16Tensor,
}

impl RoofKind {
    pub fn name(self) -> &'static str {
        match self {
            Self::Fp32 => "FP32",
            Self::Tf32Tensor => "TF32 tensor",
            Self::Fp16Tensor => "FP16/BF16 tensor",
        }
    }
}

/// One compute roof of a device.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Roof {
    pub kind: RoofKind,
    pub gflops: f64,
}

impl Roof {
    pub fn name(&self) -> &'static str {
        self.kind.name()
    }
}

impl Ceilings {
    /// The roof a row of `precision` is judged against. Without tensor ceilings (a CPU) every
    /// precision runs on the FP32 units.
    pub fn roof(&self, precision: Precision) -> Roof {
        let fp32 = Roof {
            kind: RoofKind::Fp32,
            gflops: self.fp32_gflops,
        };
        let tf32 = self.tf32_gflops.map(|g| Roof {
            kind: RoofKind::Tf32Tensor,
            gflops: g,
        });
        let fp16 = self.fp16_gflops.map(|g| Roof {
            kind: RoofKind::Fp16Tensor,
            gflops: g,
        });
        match precision {
            Precision::Fp32 => fp32,
            Precision::Tf32 => tf32.unwrap_or(fp32),
            // BF16 runs on the same tensor pipes at the same rate as FP16. FP8, twice as fast
            // on an H100, has no ceiling the lab measures: its rows are held to FP16's, the
            // fastest measured, and can pass 100% of it.
            Precision::Fp16 | Precision::Bf16 | Precision::Fp8 => fp16.or(tf32).unwrap_or(fp32),
        }
    }

    /// Peak compute a row of `precision` can use.
    pub fn peak_gflops(&self, precision: Precision) -> f64 {
        self.roof(precision).gflops
    }

    /// The roofline bound at `intensity` FLOP per byte, GFLOP/s.
    pub fn bound_gflops(&self, precision: Precision, intensity: f64) -> f64 {
        self.peak_gflops(precision)
            .min(intensity * self.bandwidth_gbs)
    }

    /// Intensity (FLOP/B) where the memory roof meets the compute roof.
    pub fn ridge(&self, precision: Precision) -> f64 {
        self.peak_gflops(precision) / self.bandwidth_gbs
    }

    /// The compute roofs present, for charts: (name, GFLOP/s).
    pub fn compute_roofs(&self) -> Vec<(&'static str, f64)> {
        self.roofs().iter().map(|r| (r.name(), r.gflops)).collect()
    }

    /// Every compute roof the device has, lowest first.
    pub fn roofs(&self) -> Vec<Roof> {
        let mut v: Vec<Roof> = [Precision::Fp32, Precision::Tf32, Precision::Fp16]
            .into_iter()
            .map(|p| self.roof(p))
            .collect();
        v.dedup_by_key(|r| r.kind);
        v
    }

    pub fn from_calibration(c: &Calibration) -> Self {
        Self {
            source: Source::Measured,
            label: format!(
                "measured by `harness calibrate` on {}",
                &c.date[..10.min(c.date.len())]
            ),
            bandwidth_gbs: c.bandwidth_gbs,
            fp32_gflops: c.fp32_gflops,
            tf32_gflops: c.tf32_gflops,
            fp16_gflops: c.fp16_gflops,
            mma_sync_gflops: c.mma_sync_gflops,
        }
    }

    /// The mma.sync ceiling, where it was measured and lies under the FP16/BF16 roof.
    pub fn mma_sync(&self) -> Option<f64> {
        let roof = self.fp16_gflops?;
        self.mma_sync_gflops.filter(|&g| g > 0.0 && g < roof)
    }
}

/// What the mma.sync ceiling is called in charts and headers.
pub const MMA_SYNC_CEILING: &str = "mma.sync FP16, registers only";

/// Datasheet ceilings (dense) for the GPUs in shared/HARDWARE.md, matched by device name.
pub fn datasheet(device_name: &str) -> Option<Ceilings> {
    let n = device_name.to_ascii_uppercase();
    // PCIe and NVL parts have other clocks and memory: no guess rather than a wrong roof.
    if n.contains("PCIE") || n.contains("NVL") {
        return None;
    }
    let (model, bw, fp32, tf32, fp16) = if n.contains("H100") {
        ("H100 SXM", 3350.0, 67e3, 495e3, 989e3)
    } else if n.contains("H200") {
        ("H200 SXM", 4800.0, 67e3, 495e3, 989e3)
    } else if n.contains("A100") && n.contains("80GB") {
        ("A100 SXM 80 GB", 2000.0, 19.5e3, 156e3, 312e3)
    } else {
        return None;
    };
    Some(Ceilings {
        source: Source::Datasheet,
        label: format!("datasheet, {model}"),
        bandwidth_gbs: bw,
        fp32_gflops: fp32,
        tf32_gflops: Some(tf32),
        fp16_gflops: Some(fp16),
        // The data sheets give no rate for mma.sync apart from the tensor peak.
        mma_sync_gflops: None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bound_is_the_lower_roof() {
        let h100 = datasheet("NVIDIA H100 80GB HBM3").unwrap();
        // Memory-bound side: 1 FLOP/B at 3.35 TB/s is 3350 GFLOP/s.
        assert_eq!(h100.bound_gflops(Precision::Fp32, 1.0), 3350.0);
        // Compute-bound side: FP32 caps at 67 TFLOP/s, FP16 tensor at 989.
        assert_eq!(h100.bound_gflops(Precision::Fp32, 1000.0), 67e3);
        assert_eq!(h100.bound_gflops(Precision::Fp16, 1000.0), 989e3);
        assert!((h100.ridge(Precision::Fp32) - 20.0).abs() < 0.1);
        assert!((h100.ridge(Precision::Fp16) - 295.2).abs() < 0.1);
    }

    #[test]
    fn cpu_ceilings_fall_back_to_fp32() {
        let c = Ceilings {
            source: Source::Measured,
            label: "test".into(),
            bandwidth_gbs: 20.0,
            fp32_gflops: 200.0,
            tf32_gflops: None,
            fp16_gflops: None,
            mma_sync_gflops: None,
        };
        assert_eq!(c.bound_gflops(Precision::Fp16, 100.0), 200.0);
        assert_eq!(c.bound_gflops(Precision::Tf32, 2.0), 40.0);
        assert_eq!(c.ridge(Precision::Fp32), 10.0);
    }

    #[test]
    fn only_known_parts_get_datasheet_roofs() {
        assert!(datasheet("NVIDIA H200").is_some());
        assert!(datasheet("NVIDIA H100 PCIe").is_none());
        assert!(datasheet("AMD EPYC 9B14 (2 threads)").is_none());
        assert_eq!(datasheet("NVIDIA H200").unwrap().bandwidth_gbs, 4800.0);
    }

    #[test]
    fn the_mma_sync_ceiling_is_drawn_only_under_the_sixteen_bit_roof() {
        let mut c = datasheet("NVIDIA H100 80GB HBM3").unwrap();
        assert_eq!(c.mma_sync(), None);
        c.mma_sync_gflops = Some(495e3);
        assert_eq!(c.mma_sync(), Some(495e3));
        // It judges no row: FP16 rows keep the tensor roof.
        assert_eq!(c.peak_gflops(Precision::Fp16), 989e3);
        // A measurement at or over the roof says nothing the roof does not.
        c.mma_sync_gflops = Some(989e3);
        assert_eq!(c.mma_sync(), None);
        c.fp16_gflops = None;
        c.mma_sync_gflops = Some(495e3);
        assert_eq!(c.mma_sync(), None);
    }
}
