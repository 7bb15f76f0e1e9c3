//! `harness doctor`: what was found (GPU, driver, CUDA, NVRTC, headers, cuBLAS) or exactly
//! why not.

use super::Outcome;
use crate::select;
use kernel::Executor;
use kernel::cuda::discovery::discovery;
use kernel::cuda::{CudaDevice, nvrtc};

#[derive(clap::Args)]
pub struct Args {
    /// Print only one fact, for scripts: `kind` (cuda or cpu) or `slug` (its folder name) of
    /// the device a run would use, `build` (release or debug) of this harness, `glibc`: the
    /// newest glibc version this binary needs, `commit`: the commit a run records, or
    /// `layout`: whether this process's addresses are `fixed` or `randomized` (NVRTC's output
    /// depends on them).
    #[arg(long, value_parser = ["kind", "slug", "build", "glibc", "commit", "layout"])]
    pub print: Option<String>,
}

pub fn run(args: &Args) -> Outcome {
    match &args.print {
        Some(what) => doctor_print(what),
        None => doctor(),
    }
}

/// One fact of the device a run would use, for scripts.
fn doctor_print(what: &str) -> Outcome {
    if what == "build" {
        println!(
            "{}",
            if cfg!(debug_assertions) {
                "debug"
            } else {
                "release"
            }
        );
        return Ok(true);
    }
    if what == "glibc" {
        println!("{}", glibc_needed().map_err(anyhow::Error::msg)?);
        return Ok(true);
    }
    if what == "commit" {
        println!("{}", crate::results::current_commit());
        return Ok(true);
    }
    if what == "layout" {
        use kernel::cuda::address_layout::{Layout, current};
        let layout = match current() {
            Layout::Fixed => "fixed",
            Layout::Randomized => "randomized",
        };
        println!("{layout}");
        return Ok(true);
    }
    let (dev, _) = select::open(None, None)?;
    match what {
        "kind" => println!("{}", dev.kind()),
        _ => println!("{}", dev.info().slug),
    }
    Ok(true)
}

/// Whether this NVRTC's ptxas report is read: the registers, shared memory and spills of every
/// row come from it, and a report the parser does not understand leaves those columns empty.
fn ptxas_report() -> String {
    const PROBE: &str = "extern \"C\" __global__ void doctor_probe(float *x) {\n\
                         __shared__ float s[64];\n\
                         s[threadIdx.x] = x[threadIdx.x];\n\
                         __syncthreads();\n\
                         x[threadIdx.x] = 2.0f * s[63 - threadIdx.x];\n}\n";
    let source = kernel::CudaSource::embedded("doctor_probe.cu", PROBE);
    match nvrtc::compile(&source, "sm_90") {
        Ok(c) => match c.resources.get("doctor_probe") {
            Some(r) if r.registers > 0 => format!(
                "read (a probe kernel: {} registers, {} B shared memory on sm_90)",
                r.registers, r.static_smem
            ),
            _ => format!(
                "NOT READ: the registers, shared memory and occupancy columns will be empty; \
                 NVRTC's log was:\n{}",
                c.log
            ),
        },
        Err(e) => format!("the probe kernel did not compile: {e}"),
    }
}

fn doctor() -> Outcome {
    println!(
        "code:               commit {}",
        crate::results::current_commit()
    );
    match glibc_needed() {
        Ok(v) => {
            println!("this binary needs:  glibc {v} or newer (`ldd --version` shows the machine's)")
        }
        Err(why) => println!("this binary needs:  glibc version unknown: {why}"),
    }
    let d = discovery();
    println!(
        "CUDA folders searched: {}",
        if d.searched.is_empty() {
            "none exist".into()
        } else {
            d.searched
                .iter()
                .map(|p| p.display().to_string())
                .collect::<Vec<_>>()
                .join(", ")
        }
    );
    for i in &d.ignored {
        println!("ignored:            {i}");
    }
    println!("driver (libcuda):   {}", d.driver.describe());
    if d.driver.is_found() {
        use kernel::cuda::device::{MIN_DRIVER_CUDA, driver_cuda_version, fmt_cuda};
        match driver_cuda_version() {
            Ok(v) => println!(
                "driver supports:    CUDA {} ({}; the lab needs CUDA {}, driver R580+)",
                fmt_cuda(v),
                if v >= MIN_DRIVER_CUDA {
                    "ok"
                } else {
                    "TOO OLD"
                },
                fmt_cuda(MIN_DRIVER_CUDA)
            ),
            Err(e) => println!("driver supports:    unknown: {e}"),
        }
    }
    println!("NVRTC:              {}", d.nvrtc.describe());
    println!("NVRTC builtins:     {}", d.nvrtc_builtins.describe());
    match nvrtc::version() {
        Ok((a, b)) => {
            println!("NVRTC version:      {a}.{b}");
            println!("ptxas report:       {}", ptxas_report());
            println!(
                "address layout:     {}",
                kernel::cuda::address_layout::describe()
            );
            println!(
                "NVRTC outputs kept: {}",
                kept(
                    &kernel::cuda::nvrtc_cache::dir(),
                    "programs",
                    kernel::cuda::nvrtc_cache::LIMIT_BYTES,
                    kernel::cuda::nvrtc_cache::DIR_VARIABLE
                )
            );
        }
        Err(e) => println!("NVRTC version:      {e}"),
    }
    println!("CUDA headers:       {}", d.headers.describe());
    if let Some(dir) = d.include_dir() {
        let cccl = [dir.join("cccl"), dir.to_path_buf()]
            .into_iter()
            .find(|p| p.join("cuda/pipeline").is_file());
        match cccl {
            Some(p) => println!("libcu++ headers:    {}", p.display()),
            None => println!(
                "libcu++ headers:    missing: no cuda/pipeline in {} or its cccl folder; \
                 kernels including <cuda/pipeline>, <cuda/barrier> or <cooperative_groups.h> \
                 cannot compile",
                dir.display()
            ),
        }
    }
    println!("cuBLAS:             {}", d.cublas.describe());
    let cxx = kernel::sim::compile::compiler();
    match kernel::sim::compile::compiler_version(&cxx) {
        Ok(version) => println!("CUDA simulator:     {version} (`--device sim`)"),
        Err(e) => println!(
            "CUDA simulator:     unavailable: {e}; `--device sim` builds each kernel with a host \
             C++ compiler (g++, or $CXX)"
        ),
    }
    println!(
        "simulator builds:   {}",
        kept(
            &kernel::sim::compile::cache_dir(),
            "builds",
            kernel::sim::compile::CACHE_LIMIT_BYTES,
            kernel::sim::compile::CACHE_VARIABLE
        )
    );
    let uses = match CudaDevice::open() {
        Ok(dev) => {
            let i = dev.info();
            println!(
                "GPU:                {} (compute capability {}, {})",
                i.name,
                i.compute_capability.as_deref().unwrap_or("?"),
                dev.arch()
            );
            println!("SMs:                {}", i.units);
            if let Some((free, total)) = dev.memory() {
                println!(
                    "memory:             {:.1} GiB free of {:.1} GiB",
                    free as f64 / (1u64 << 30) as f64,
                    total as f64 / (1u64 << 30) as f64
                );
            }
            println!("L2:                 {} MiB", i.l2_bytes.unwrap_or(0) >> 20);
            println!("driver version:     {}", i.driver);
            println!("CUDA:               {}", i.cuda.as_deref().unwrap_or("?"));
            match dev.cublas_status() {
                Ok(()) => println!("cuBLAS handle:      ok"),
                Err(why) => println!("cuBLAS handle:      unavailable: {why}"),
            }
            "this GPU"
        }
        Err(e) => {
            println!("GPU:                none: {e}");
            "the CPU"
        }
    };
    // What the process has mapped now, after cudarc opened its libraries by name: a second
    // copy of a library means a bare name found another toolkit's file first.
    let loaded = kernel::cuda::discovery::loaded_libraries();
    for path in &loaded {
        println!("loaded:             {}", path.display());
    }
    for (lib, paths) in kernel::cuda::discovery::conflicting(&loaded) {
        let list: Vec<String> = paths.iter().map(|p| p.display().to_string()).collect();
        println!(
            "CONFLICT:           {lib} is loaded from {} files: {}; put the wanted toolkit's \
             folder first in LD_LIBRARY_PATH (or set CUDA_HOME)",
            paths.len(),
            list.join(", ")
        );
    }
    println!("\n`cargo bench -p harness` and `harness run` will use {uses}.");
    if !d.nvrtc.is_found() {
        println!(
            "Without NVRTC, `harness inspect` cannot compile kernels: run tools/install-cuda-tools.sh."
        );
    }
    Ok(true)
}

/// A folder of kept compiler outputs, with how many and how much of its limit they take.
/// `variable` is the environment variable that moves it.
fn kept(dir: &std::path::Path, what: &str, limit: u64, variable: &str) -> String {
    if let Err(e) = kernel::disk_cache::check_writable(dir) {
        return format!(
            "{}: CANNOT WRITE there ({e}); point {variable} at a writable folder",
            dir.display()
        );
    }
    let (n, bytes) = kernel::disk_cache::contents(dir);
    format!(
        "{} ({n} {what}, {:.1} MB of at most {:.0}; deleting it costs only time)",
        dir.display(),
        bytes as f64 / 1e6,
        limit as f64 / 1e6
    )
}

/// The newest `GLIBC_x.y` symbol version the ELF file `bytes` needs (its `.gnu.version_r`
/// section), as `(x, y)`; `None` when it is no 64-bit little-endian ELF or needs no glibc
/// version (a static binary).
pub fn newest_glibc_needed(bytes: &[u8]) -> Option<(u32, u32)> {
    const SHT_GNU_VERNEED: u32 = 0x6fff_fffe;
    let u16_at = |o: usize| Some(u16::from_le_bytes(bytes.get(o..o + 2)?.try_into().ok()?));
    let u32_at = |o: usize| Some(u32::from_le_bytes(bytes.get(o..o + 4)?.try_into().ok()?));
    let u64_at = |o: usize| Some(u64::from_le_bytes(bytes.get(o..o + 8)?.try_into().ok()?));
    // ELF64, little-endian.
    if bytes.get(..6)? != b"\x7fELF\x02\x01" {
        return None;
    }
    let shoff = u64_at(0x28)? as usize;
    let shentsize = u16_at(0x3a)? as usize;
    let shnum = u16_at(0x3c)? as usize;
    let section = |i: usize| {
        let h = shoff.checked_add(i.checked_mul(shentsize)?)?;
        // (type, offset, link, info)
        Some((
            u32_at(h + 4)?,
            u64_at(h + 0x18)? as usize,
            u32_at(h + 0x28)? as usize,
            u32_at(h + 0x2c)?,
        ))
    };
    let (_, mut need, strtab, count) = (0..shnum)
        .filter_map(section)
        .find(|(kind, ..)| *kind == SHT_GNU_VERNEED)?;
    let (_, strings, ..) = section(strtab)?;
    let name_at = |o: usize| {
        let start = strings.checked_add(o)?;
        let rest = bytes.get(start..)?;
        let end = rest.iter().position(|&b| b == 0)?;
        std::str::from_utf8(&rest[..end]).ok()
    };
    let mut newest = None;
    // Verneed entries (one per library), each with its Vernaux list (one per version).
    for _ in 0..count {
        let (cnt, aux, next) = (u16_at(need + 2)?, u32_at(need + 8)?, u32_at(need + 12)?);
        let mut a = need.checked_add(aux as usize)?;
        for _ in 0..cnt {
            let version = name_at(u32_at(a + 8)? as usize)?;
            if let Some((x, y)) = version
                .strip_prefix("GLIBC_")
                .and_then(|v| v.split_once('.'))
                .and_then(|(x, y)| Some((x.parse().ok()?, y.split('.').next()?.parse().ok()?)))
            {
                newest = newest.max(Some((x, y)));
            }
            let next_aux = u32_at(a + 12)?;
            if next_aux == 0 {
                break;
            }
            a = a.checked_add(next_aux as usize)?;
        }
        if next == 0 {
            break;
        }
        need = need.checked_add(next as usize)?;
    }
    newest
}

/// The newest glibc version this running binary needs, as `2.28`, or why it is not known.
pub fn glibc_needed() -> Result<String, String> {
    let bytes =
        std::fs::read("/proc/self/exe").map_err(|e| format!("reading /proc/self/exe: {e}"))?;
    newest_glibc_needed(&bytes)
        .map(|(x, y)| format!("{x}.{y}"))
        .ok_or_else(|| "no GLIBC symbol versions in this binary".into())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn this_binary_needs_a_glibc_version_and_garbage_needs_none() {
        let exe = std::fs::read("/proc/self/exe").unwrap();
        let (major, minor) = newest_glibc_needed(&exe).expect("a test binary links glibc");
        assert_eq!(major, 2);
        // Every glibc a Rust binary links needs at least GLIBC_2.2.5 symbols.
        assert!(minor >= 2, "{major}.{minor}");
        assert_eq!(newest_glibc_needed(b"not an ELF file"), None);
        // A truncated ELF reads as unknown, never as a panic.
        assert_eq!(newest_glibc_needed(&exe[..exe.len().min(4096)]), None);
    }
}
