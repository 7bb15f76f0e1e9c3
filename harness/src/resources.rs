//! Registers, shared memory, spills and theoretical occupancy of a plan's launches, from the
//! NVRTC/ptxas report for one architecture. Needs NVRTC, not a GPU.

use kernel::cuda::{nvrtc, occupancy};
use kernel::{CudaPlan, DeviceError};
use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LaunchResources {
    pub entry: String,
    pub file: String,
    pub arch: String,
    pub threads_per_block: u32,
    pub registers: u32,
    /// Static plus dynamic shared memory per block, in bytes.
    pub smem_bytes: u32,
    pub stack_bytes: u32,
    pub spill_stores: u32,
    pub spill_loads: u32,
    /// Theoretical occupancy (0..=1) and the limit that binds it; `None` for unknown archs.
    pub occupancy: Option<f64>,
    pub occupancy_limiter: Option<String>,
    /// Blocks of the launch.
    #[serde(default)]
    pub blocks: u64,
    /// Blocks / (SMs x resident blocks per SM) on the device that ran it: below 1 some SMs
    /// idle; just above a whole number, the last wave runs mostly empty. `None` off a GPU.
    /// Of a persistent launch, tiles rather than blocks.
    #[serde(default)]
    pub waves: Option<f64>,
    /// The tiles a persistent launch's blocks share out (`CudaPlan::persistent`).
    #[serde(default)]
    pub tiles: Option<u64>,
    /// What ptxas reported as costing this entry speed ("Potential Performance Loss: ...").
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub advisories: Vec<String>,
}

impl LaunchResources {
    /// The cells of a resources table after the kernel and its entry: arch, threads,
    /// registers, shared memory, spill stores/loads and occupancy with its limiter.
    pub fn cells(&self) -> Vec<String> {
        vec![
            self.arch.clone(),
            self.threads_per_block.to_string(),
            self.registers.to_string(),
            self.smem_bytes.to_string(),
            format!("{}/{}", self.spill_stores, self.spill_loads),
            self.occupancy.map_or("?".into(), |o| {
                format!(
                    "{:.0}% ({})",
                    o * 100.0,
                    self.occupancy_limiter.as_deref().unwrap_or("?")
                )
            }),
        ]
    }

    /// The columns `inspect` prints after a kernel's name: threads, registers, shared memory,
    /// stack, spill stores/loads and occupancy with its limiter.
    pub fn columns(&self) -> String {
        let occupancy = self.occupancy.map_or_else(
            || "?".to_string(),
            |o| {
                let limiter = self.occupancy_limiter.as_deref().unwrap_or("");
                format!("{:.0}% {limiter}", o * 100.0)
            },
        );
        format!(
            "{:>7} {:>5} {:>9} {:>6} {:>11} {:>10}",
            self.threads_per_block,
            self.registers,
            self.smem_bytes,
            self.stack_bytes,
            format!("{}/{}", self.spill_stores, self.spill_loads),
            occupancy
        )
    }
}

/// Compiles each launch of `plan` for `arch` and reads its resources; with `sms`, the SM count
/// of the GPU it runs on, also its waves. A pipeline that walks a batch in chunks repeats its
/// launches: each distinct kernel and geometry is reported once, at its first launch.
pub fn of_plan(
    plan: &CudaPlan,
    arch: &str,
    sms: Option<u32>,
) -> Result<Vec<LaunchResources>, DeviceError> {
    let limits = occupancy::parse_arch(arch).and_then(occupancy::limits);
    let mut out = Vec::new();
    let mut seen = Vec::new();
    for l in plan.launches() {
        let key = (&l.source, &l.entry, l.block, l.dynamic_smem);
        if seen.contains(&key) {
            continue;
        }
        seen.push(key);
        let compiled = nvrtc::compile(&l.source, arch)?;
        let r = compiled
            .resources
            .get(l.entry.as_ref())
            .copied()
            .ok_or_else(|| DeviceError::Compile {
                compiler: "NVRTC".into(),
                file: l.source.label(),
                arch: arch.to_string(),
                log: format!(
                    "entry {} not in the ptxas report; is it declared extern \"C\" __global__?\n{}",
                    l.entry, compiled.log
                ),
            })?;
        let smem = r.static_smem + l.dynamic_smem;
        let tiles = plan
            .persistent
            .iter()
            .find(|(entry, _)| *entry == l.entry)
            .map(|&(_, t)| t);
        let occ =
            limits.map(|lim| occupancy::occupancy(&lim, l.threads_per_block(), r.registers, smem));
        out.push(LaunchResources {
            entry: l.entry.to_string(),
            file: l.source.file.to_string(),
            arch: compiled.arch.clone(),
            threads_per_block: l.threads_per_block(),
            registers: r.registers,
            smem_bytes: smem,
            stack_bytes: r.stack_frame,
            spill_stores: r.spill_stores,
            spill_loads: r.spill_loads,
            occupancy: occ.map(|o| o.fraction),
            occupancy_limiter: occ.map(|o| o.limiter.to_string()),
            blocks: l.blocks(),
            waves: match (sms, occ) {
                (Some(sms), Some(o)) if sms > 0 && o.blocks_per_sm > 0 => {
                    Some(tiles.unwrap_or(l.blocks()) as f64 / f64::from(sms * o.blocks_per_sm))
                }
                _ => None,
            },
            tiles,
            advisories: compiled.advisories(&l.entry),
        });
    }
    Ok(out)
}
