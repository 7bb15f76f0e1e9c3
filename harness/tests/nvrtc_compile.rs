//! Every CUDA kernel of every stage compiles with NVRTC for sm_80 and sm_90, without register
//! spills. Needs NVRTC (tools/install-cuda-tools.sh), not a GPU. Without NVRTC this test fails:
//! it must never pass without having compiled anything.

use harness::{registry, resources};
use kernel::cuda::nvrtc;
use kernel::{Activation, Shape, Workload};

fn shapes(w: Workload) -> Vec<Shape> {
    match w {
        Workload::Gemm => vec![Shape::square_gemm(4096), Shape::gemm(100, 37, 129)],
        Workload::Linear => vec![
            Shape::Linear {
                m: 1024,
                n: 2048,
                k: 784,
                act: Activation::Relu,
            },
            Shape::Linear {
                m: 33,
                n: 17,
                k: 65,
                act: Activation::Gelu,
            },
        ],
        Workload::Conv => vec![Shape::Conv {
            b: 100,
            c: 4,
            m: 16,
            h: 40,
            w: 40,
            k: 7,
        }],
        Workload::Attention => vec![Shape::Attention {
            b: 2,
            h: 8,
            s: 512,
            d: 64,
            causal: true,
        }],
    }
}

#[test]
fn every_kernel_compiles_for_sm80_and_sm90_without_spills() {
    if let Err(e) = nvrtc::version() {
        panic!(
            "{e}\nThis test compiles every kernel with NVRTC: run tools/install-cuda-tools.sh first."
        );
    }
    let mut compiled = 0;
    let mut problems = Vec::new();
    for k in registry::all() {
        let info = k.info();
        for shape in shapes(info.workload) {
            if k.supports(&shape).is_err() {
                continue;
            }
            let Some(plan) = k.cuda(&shape) else { continue };
            for arch in ["sm_80", "sm_90"] {
                match resources::of_plan(&plan, arch) {
                    Ok(list) => {
                        for r in list {
                            compiled += 1;
                            if r.spill_stores + r.spill_loads > 0 {
                                problems.push(format!(
                                    "{} ({}) spills on {arch}: {} B stores, {} B loads",
                                    info.id, r.entry, r.spill_stores, r.spill_loads
                                ));
                            }
                            if r.occupancy == Some(0.0) {
                                problems.push(format!("{} ({}) cannot launch on {arch}: {} threads, {} B shared memory", info.id, r.entry, r.threads_per_block, r.smem_bytes));
                            }
                        }
                    }
                    Err(e) => problems.push(format!("{} on {arch}: {e}", info.id)),
                }
            }
        }
    }
    assert!(problems.is_empty(), "{}", problems.join("\n"));
    assert!(
        compiled >= 4,
        "only {compiled} launches compiled: the registry lost its kernels?"
    );
    println!("compiled {compiled} launches for sm_80 and sm_90, no spills");
}

#[test]
fn a_broken_kernel_reports_the_nvrtc_log_with_its_file_name() {
    if nvrtc::version().is_err() {
        panic!("NVRTC unavailable: run tools/install-cuda-tools.sh first.");
    }
    let src = kernel::CudaSource::embedded(
        "tests/broken.cu",
        "extern \"C\" __global__ void broken(float *x) { x[0] = undefined_name; }",
    );
    let e = nvrtc::compile(&src, "sm_90").unwrap_err().to_string();
    assert!(
        e.contains("tests/broken.cu") && e.contains("undefined_name"),
        "{e}"
    );
}
