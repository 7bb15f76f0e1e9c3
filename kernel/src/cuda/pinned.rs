//! The limit on pinned (page-locked) host memory. A plan with a batch pipeline keeps its
//! inputs and output in host memory the OS cannot swap out; the device refuses a plan whose
//! pinned bytes pass half of the machine's RAM (from `/proc/meminfo`) rather than let the
//! allocation starve the rest of the machine. Device memory is checked apart.

use crate::device::DeviceError;

/// `MemTotal` of a `/proc/meminfo` text, in bytes.
pub fn parse_mem_total(meminfo: &str) -> Option<u64> {
    let line = meminfo.lines().find(|l| l.starts_with("MemTotal:"))?;
    let mut words = line["MemTotal:".len()..].split_whitespace();
    let value: u64 = words.next()?.parse().ok()?;
    match words.next() {
        Some("kB") | None => value.checked_mul(1024),
        Some(_) => None,
    }
}

/// The machine's RAM in bytes; `None` where `/proc/meminfo` cannot be read.
pub fn ram_bytes() -> Option<u64> {
    parse_mem_total(&std::fs::read_to_string("/proc/meminfo").ok()?)
}

/// The most pinned host memory a plan may hold: half of the RAM.
pub fn limit(ram: u64) -> u64 {
    ram / 2
}

/// Refuses `needed` bytes of pinned host memory for `shape` over the limit of `ram`; with
/// the RAM unknown, nothing is refused here (the allocation itself still reports failure).
pub fn check(shape: &str, needed: usize, ram: Option<u64>) -> Result<(), DeviceError> {
    let Some(ram) = ram else { return Ok(()) };
    if needed as u64 > limit(ram) {
        return Err(DeviceError::PinnedMemory {
            shape: shape.to_string(),
            needed_mib: (needed as u64).div_ceil(1 << 20),
            limit_mib: limit(ram) >> 20,
            ram_mib: ram >> 20,
        });
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mem_total_is_read_in_bytes() {
        let text = "MemTotal:       131072000 kB\nMemFree:         1000 kB\n";
        assert_eq!(parse_mem_total(text), Some(131_072_000 * 1024));
        assert_eq!(parse_mem_total("MemFree: 1 kB\n"), None);
        assert_eq!(parse_mem_total("MemTotal: lots kB\n"), None);
    }

    #[test]
    fn pinned_bytes_over_half_the_ram_are_refused_naming_both() {
        let ram = 8u64 << 30;
        assert!(check("conv", 4 << 30, Some(ram)).is_ok());
        let e = check("conv b=1000", (4 << 30) + 1, Some(ram))
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("4097 MiB") && e.contains("4096 MiB") && e.contains("8192 MiB of RAM"),
            "{e}"
        );
        assert!(e.contains("conv b=1000"), "{e}");
        assert!(check("conv", usize::MAX / 2, None).is_ok());
    }
}
