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
    /// the device a run would use, or `build` (release or debug) of this harness.
    #[arg(long, value_parser = ["kind", "slug", "build"])]
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
    let (dev, _) = select::open(None)?;
    match what {
        "kind" => println!("{}", dev.kind()),
        _ => println!("{}", dev.info().slug),
    }
    Ok(true)
}

fn doctor() -> Outcome {
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
        Ok((a, b)) => println!("NVRTC version:      {a}.{b}"),
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
    match CudaDevice::open() {
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
            println!("\n`cargo bench -p harness` and `harness run` will use this GPU.");
        }
        Err(e) => {
            println!("GPU:                none: {e}");
            println!("\n`cargo bench -p harness` and `harness run` will use the CPU.");
        }
    }
    if !d.nvrtc.is_found() {
        println!(
            "Without NVRTC, `harness inspect` cannot compile kernels: run tools/install-cuda-tools.sh."
        );
    }
    Ok(true)
}
