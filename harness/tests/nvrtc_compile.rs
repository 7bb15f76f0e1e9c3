//! Every CUDA kernel of every stage compiles with NVRTC for sm_80 and sm_90 (a rung built for
//! one architecture-specific target, such as sm_90a, for that target alone), without register
//! spills beyond one the kernel declares with its reason (`Kernel::accepted_spill`). Needs NVRTC (tools/install-cuda-tools.sh), not a GPU. Without NVRTC this test fails:
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
        // Both head dimensions of the FlashAttention sweep: the flash kernels compile per D.
        Workload::Attention => vec![
            Shape::Attention {
                b: 2,
                h: 8,
                s: 512,
                d: 64,
                causal: true,
            },
            Shape::Attention {
                b: 1,
                h: 16,
                s: 4096,
                d: 128,
                causal: false,
            },
        ],
        // Both paths of the vectorized rung: N % 4 == 0 and not.
        Workload::Eltwise => vec![
            Shape::Eltwise { m: 8192, n: 4096 },
            Shape::Eltwise { m: 37, n: 130 },
        ],
        Workload::Rbf => vec![Shape::Rbf { n: 131_072, k: 64 }],
        Workload::Layernorm => vec![Shape::Layernorm { m: 8192, n: 1280 }],
        Workload::Softmax => vec![Shape::Softmax { m: 8192, n: 1280 }],
        Workload::Pool => vec![Shape::Pool {
            b: 10_000,
            c: 4,
            h: 80,
            w: 80,
            p: 2,
        }],
        // Both paths of the float4 rungs' tail: N % 4 == 0 and not.
        Workload::Reduce => vec![Shape::Reduce { n: 1 << 24 }, Shape::Reduce { n: 1_000_003 }],
        Workload::Transpose => vec![Shape::Transpose { m: 8192, n: 8192 }],
        // The composed forward passes: every rung at the network's own layer shapes, the
        // glue kernels and the conversions the FP16/BF16 rows insert.
        Workload::Cnn | Workload::Encoder => vec![w.probe_shape()],
    }
}

#[test]
fn every_kernel_compiles_for_sm80_and_sm90_without_spills_or_ptxas_advisories() {
    if let Err(e) = nvrtc::version() {
        panic!(
            "{e}\nThis test compiles every kernel with NVRTC: run tools/install-cuda-tools.sh first."
        );
    }
    let mut compiled = 0;
    let mut problems = Vec::new();
    for k in registry::all() {
        let info = k.info();
        let mut spilled = false;
        for shape in shapes(info.workload) {
            if k.supports(&shape).is_err() {
                continue;
            }
            let Some(plan) = k.cuda(&shape) else { continue };
            let archs = match plan.required_arch() {
                Some(only) => vec![only.to_string()],
                None => vec!["sm_80".to_string(), "sm_90".to_string()],
            };
            for arch in &archs {
                let arch = arch.as_str();
                match resources::of_plan(&plan, arch, None) {
                    Ok(list) => {
                        for r in list {
                            compiled += 1;
                            spilled |= r.spill_stores + r.spill_loads > 0;
                            let accepted = k
                                .accepted_spill()
                                .is_some_and(|a| a.covers(r.spill_stores, r.spill_loads));
                            if r.spill_stores + r.spill_loads > 0 && !accepted {
                                problems.push(format!(
                                    "{} ({}) spills on {arch}: {} B stores, {} B loads",
                                    info.id, r.entry, r.spill_stores, r.spill_loads
                                ));
                            }
                            // ptxas compiles code it knows to be slow and says so only in
                            // its report: serialized wgmma (a call in the kernel) and the like.
                            for a in &r.advisories {
                                problems.push(format!(
                                    "{} ({}) on {arch}: ptxas: {a}",
                                    info.id, r.entry
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
        if let Some(a) = k.accepted_spill().filter(|_| !spilled) {
            problems.push(format!(
                "{} declares an accepted spill it no longer has: {}",
                info.id, a.reason
            ));
        }
    }
    assert!(problems.is_empty(), "{}", problems.join("\n"));
    assert!(
        compiled >= 4,
        "only {compiled} launches compiled: the registry lost its kernels?"
    );
    println!(
        "compiled {compiled} launches for sm_80 and sm_90, no unaccepted spills, no advisories"
    );
}

/// The Hopper rungs (18, 21-25) compile for sm_90a, asked as sm_90 or sm_90a: one block of 384
/// threads per SM, no spill, no stack (no call: a call would serialize their wgmma), registers
/// within the 168 their launch bounds allow. On sm_80 there is no code to make: declined with
/// the reason, not a compile error.
#[test]
fn the_hopper_rungs_compile_for_sm90a_alone() {
    if nvrtc::version().is_err() {
        panic!("NVRTC unavailable: run tools/install-cuda-tools.sh first.");
    }
    let rungs: [(&dyn kernel::Kernel, &str); 7] = [
        (&tensorcore::GemmWgmmaTma, "gemm_wgmma_tma"),
        (&tensorcore::GemmWgmmaN256, "gemm_wgmma_n256"),
        (
            &tensorcore::GemmWgmmaPersistent::default(),
            "gemm_wgmma_persistent",
        ),
        (
            &tensorcore::GemmWgmmaL2Order::default(),
            "gemm_wgmma_l2_order",
        ),
        (
            &tensorcore::GemmWgmmaCluster::default(),
            "gemm_wgmma_cluster",
        ),
        (
            &tensorcore::GemmWgmmaOverlap::default(),
            "gemm_wgmma_overlap",
        ),
        (
            &tensorcore::GemmWgmmaClusterCta::default(),
            "gemm_wgmma_cluster_cta",
        ),
    ];
    for (rung, entry) in rungs {
        hopper_rung_compiles_for_sm90a_alone(rung, entry);
    }
}

fn hopper_rung_compiles_for_sm90a_alone(rung: &dyn kernel::Kernel, entry: &str) {
    let plan = rung.cuda(&Shape::square_gemm(4096)).unwrap();
    for arch in ["sm_90", "sm_90a"] {
        let r = resources::of_plan(&plan, arch, None).unwrap();
        assert_eq!(r.len(), 1);
        let r = &r[0];
        assert_eq!((r.entry.as_str(), r.arch.as_str()), (entry, "sm_90a"));
        assert_eq!((r.spill_stores, r.spill_loads), (0, 0), "{r:?}");
        assert_eq!(r.stack_bytes, 0, "{r:?}");
        assert!(r.advisories.is_empty(), "{r:?}");
        assert!(r.registers <= 168, "{r:?}");
        assert_eq!(r.threads_per_block, 384);
        assert_eq!(r.occupancy, Some(12.0 / 64.0), "{r:?}");
    }
    let e = resources::of_plan(&plan, "sm_80", None).unwrap_err();
    assert!(
        matches!(e, kernel::DeviceError::Unsupported(_))
            && e.to_string().contains("compiled for sm_90a only"),
        "{e}"
    );
}

/// The trade `lab/hopper.h` makes: `-DLAB_MBAR_REPORT` prints a timed-out wait's block,
/// thread and barrier, and the printf call serializes the kernel's wgmma, which ptxas reports
/// (C7510) and the resources carry; without it the kernel has no call and no advisory.
#[test]
fn a_printf_in_a_wgmma_kernel_serializes_its_wgmma_and_ptxas_says_so() {
    if nvrtc::version().is_err() {
        panic!("NVRTC unavailable: run tools/install-cuda-tools.sh first.");
    }
    let plan = kernel::Kernel::cuda(
        &tensorcore::GemmWgmmaL2Order::default(),
        &Shape::square_gemm(4096),
    )
    .unwrap();
    let mut reporting = plan.clone();
    let kernel::Step::Kernel(launch) = &mut reporting.steps[0] else {
        panic!("rung 23 is one launch")
    };
    launch.source = launch.source.clone().define("LAB_MBAR_REPORT", 1);
    let quiet = &resources::of_plan(&plan, "sm_90a", None).unwrap()[0];
    let loud = &resources::of_plan(&reporting, "sm_90a", None).unwrap()[0];
    assert!(quiet.advisories.is_empty(), "{quiet:?}");
    assert!(
        loud.advisories.len() == 1
            && loud.advisories[0].contains("wgmma.mma_async instructions are serialized"),
        "{loud:?}"
    );
    assert!(loud.stack_bytes > 0 && quiet.stack_bytes == 0);
}

/// A persistent launch counts its waves in tiles: 4096^2 in 128x256 tiles is 512 tiles for the
/// 132 blocks of one wave, 3.88 waves as 512 blocks would be.
#[test]
fn a_persistent_launch_counts_waves_in_tiles() {
    let plan = kernel::Kernel::cuda(
        &tensorcore::GemmWgmmaPersistent::default(),
        &Shape::square_gemm(4096),
    )
    .unwrap();
    let r = &resources::of_plan(&plan, "sm_90", Some(132)).unwrap()[0];
    assert_eq!((r.blocks, r.tiles), (132, Some(512)));
    assert!((r.waves.unwrap() - 512.0 / 132.0).abs() < 1e-9, "{r:?}");
    let wide = kernel::Kernel::cuda(&tensorcore::GemmWgmmaN256, &Shape::square_gemm(4096)).unwrap();
    let w = &resources::of_plan(&wide, "sm_90", Some(132)).unwrap()[0];
    assert_eq!((w.blocks, w.tiles, w.waves), (512, None, r.waves));
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

#[test]
fn two_sources_with_one_name_are_two_programs() {
    if nvrtc::version().is_err() {
        panic!("NVRTC unavailable: run tools/install-cuda-tools.sh first.");
    }
    let a = kernel::CudaSource::embedded(
        "tests/same_name.cu",
        "extern \"C\" __global__ void first(float *x) { x[0] = 1.0f; }",
    );
    let b = kernel::CudaSource::embedded(
        "tests/same_name.cu",
        "extern \"C\" __global__ void second(float *x) { x[1] = 2.0f; }",
    );
    let ra = nvrtc::compile(&a, "sm_90").unwrap();
    let rb = nvrtc::compile(&b, "sm_90").unwrap();
    assert!(ra.resources.contains_key("first") && !ra.resources.contains_key("second"));
    assert!(rb.resources.contains_key("second") && !rb.resources.contains_key("first"));
    // Defines make a different program of the same text, too.
    let t = "extern \"C\" __global__ void sized(float *x) { __shared__ float s[N]; s[threadIdx.x] = 1; __syncthreads(); x[threadIdx.x] = s[N - 1 - threadIdx.x]; }";
    let small = kernel::CudaSource::embedded("tests/sized.cu", t).define("N", 32);
    let big = kernel::CudaSource::embedded("tests/sized.cu", t).define("N", 1024);
    let s = nvrtc::compile(&small, "sm_90").unwrap().resources["sized"].static_smem;
    let l = nvrtc::compile(&big, "sm_90").unwrap().resources["sized"].static_smem;
    assert_eq!((s, l), (128, 4096));
}

/// What NVRTC made is kept on disk for the next process: a serial compile under the name
/// every compile reads, a run's concurrent precompile under its own, which a serial compile
/// (the form the lab reports) never reads; a source with include folders is not kept.
#[test]
fn compiles_are_kept_on_disk_serial_and_concurrent_apart() {
    nvrtc::version().expect("NVRTC unavailable: run tools/install-cuda-tools.sh");
    let dir = kernel::cuda::nvrtc_cache::dir();
    // Texts no earlier process compiled.
    let nonce = format!(
        "{}_{}",
        std::process::id(),
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_nanos()
    );
    let source = |what: &str| {
        kernel::CudaSource::embedded(
            "tests/kept.cu",
            "extern \"C\" __global__ void kept(float *x) { x[threadIdx.x] += 1.0f; }",
        )
        .define("NONCE", format!("{what}_{nonce}"))
    };
    let kept = |src: &kernel::CudaSource, suffix: &str| {
        let key = nvrtc::disk_key(src, "sm_90").expect("a lab source is kept");
        dir.join(format!("{key}{suffix}")).is_file()
    };
    let serial = source("serial");
    let compiled = nvrtc::compile(&serial, "sm_90").unwrap();
    assert!(kept(&serial, "") && !kept(&serial, "-concurrent"));
    let back =
        kernel::cuda::nvrtc_cache::load(&dir, &nvrtc::disk_key(&serial, "sm_90").unwrap()).unwrap();
    assert_eq!(
        (back.cubin, back.log),
        (compiled.cubin.clone(), compiled.log.clone())
    );

    let concurrent = source("concurrent");
    nvrtc::precompile(&[&concurrent], "sm_90");
    assert!(kept(&concurrent, "-concurrent") && !kept(&concurrent, ""));

    let mut user = source("user");
    user.include_dirs.push(std::env::temp_dir());
    assert_eq!(nvrtc::disk_key(&user, "sm_90"), None);
}

/// A program compiled a second time, by this process or a later one, still carries its ptxas
/// report. NVRTC 12.9 and later serve a repeated compile from the CUDA driver's compute cache,
/// which outlives the process and skips ptxas: on the GPU, rows whose program an earlier
/// process had compiled came out without registers or occupancy. Where a driver is found
/// the option that keeps the cache off must be passed; without one the cache is off anyway.
#[test]
fn a_repeated_compile_still_reports_its_resources() {
    let version = nvrtc::version().expect("NVRTC unavailable: run tools/install-cuda-tools.sh");
    let text = "extern \"C\" __global__ void again(float *x) { x[threadIdx.x] *= 2.0f; }";
    let first = kernel::CudaSource::embedded("tests/again.cu", text);
    let options = nvrtc::options(&first, "sm_90");
    let driver = kernel::cuda::discovery::discovery().driver.is_found();
    if let (true, Some(no_cache)) = (driver, nvrtc::no_cache_option(version)) {
        assert!(options.iter().any(|o| o == no_cache), "{options:?}");
    }
    // Another name is another entry of the lab's memo, not of the driver's cache.
    let second = kernel::CudaSource::embedded("tests/again_too.cu", text);
    for source in [&first, &second] {
        let compiled = nvrtc::compile(source, "sm_90").unwrap();
        assert!(
            compiled
                .resources
                .get("again")
                .is_some_and(|r| r.registers > 0),
            "no ptxas report for {}: {:?}",
            source.file,
            compiled.log
        );
    }
}

/// `inspect FILE.cu` prints ptxas's performance advisories under its table: a wgmma kernel
/// with a printf call has its wgmma serialized, and says so; without the call, nothing.
#[test]
fn inspect_prints_what_ptxas_says_costs_speed() {
    if nvrtc::version().is_err() {
        panic!("NVRTC unavailable: run tools/install-cuda-tools.sh first.");
    }
    let dir = std::env::temp_dir().join(format!("lab-advisory-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let kernel = |report: &str| {
        format!(
            "#include <cstdio>\n#include \"lab/hopper.h\"\n\
             extern \"C\" __global__ void k(float *out, unsigned long long desc) {{\n\
             float d[64];\n\
             for (int i = 0; i < 64; ++i) d[i] = 0.0f;\n\
             hopper::wgmma_fence();\n\
             hopper::wgmma_m64n128k16_bf16(d, desc, desc, 1);\n\
             hopper::wgmma_m64n128k16_bf16(d, desc, desc, 1);\n\
             hopper::wgmma_commit();\n\
             hopper::wgmma_wait<0>();\n\
             {report}\n\
             out[threadIdx.x] = d[0];\n}}\n"
        )
    };
    let inspect = |name: &str, code: String| {
        let file = dir.join(name);
        std::fs::write(&file, code).unwrap();
        let o = std::process::Command::new(env!("CARGO_BIN_EXE_harness"))
            .args([
                "inspect",
                file.to_str().unwrap(),
                "--arch",
                "sm_90a",
                "--block",
                "128",
            ])
            .output()
            .unwrap();
        let t = String::from_utf8_lossy(&o.stdout).to_string();
        assert!(
            o.status.success(),
            "{t}{}",
            String::from_utf8_lossy(&o.stderr)
        );
        t
    };
    let loud = inspect(
        "loud.cu",
        kernel("if (d[1] > 1.0f) printf(\"%f\\n\", d[1]);"),
    );
    assert!(
        loud.contains("ptxas reports a loss of speed")
            && loud.contains(
                "k: (C7510) Potential Performance Loss: wgmma.mma_async instructions are serialized"
            ),
        "{loud}"
    );
    let quiet = inspect("quiet.cu", kernel(""));
    assert!(!quiet.contains("ptxas reports"), "{quiet}");
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn inspect_compiles_any_cuda_file_with_its_folder_on_the_include_path() {
    if nvrtc::version().is_err() {
        panic!("NVRTC unavailable: run tools/install-cuda-tools.sh first.");
    }
    let dir = std::env::temp_dir().join(format!("lab-inspect-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("tile.cuh"), "#define TILE 16\n").unwrap();
    std::fs::write(
        dir.join("mine.cu"),
        "#include \"tile.cuh\"\nextern \"C\" __global__ void mine(float *x) {\n  __shared__ float s[TILE * TILE];\n  s[threadIdx.x] = x[threadIdx.x];\n  __syncthreads();\n  x[threadIdx.x] = s[TILE * TILE - 1 - threadIdx.x];\n}\n",
    )
    .unwrap();
    let o = std::process::Command::new(env!("CARGO_BIN_EXE_harness"))
        .args([
            "inspect",
            dir.join("mine.cu").to_str().unwrap(),
            "--arch",
            "sm_90",
        ])
        .output()
        .unwrap();
    let t = String::from_utf8_lossy(&o.stdout).to_string() + &String::from_utf8_lossy(&o.stderr);
    assert!(o.status.success(), "{t}");
    let line = t
        .lines()
        .find(|l| l.starts_with("mine "))
        .unwrap_or_else(|| panic!("{t}"));
    assert!(
        line.contains("sm_90") && line.contains(" 1024 "),
        "TILE came from the include: {line}"
    );
    std::fs::write(
        dir.join("broken.cu"),
        "extern \"C\" __global__ void b() { nope; }\n",
    )
    .unwrap();
    let o = std::process::Command::new(env!("CARGO_BIN_EXE_harness"))
        .args(["inspect", dir.join("broken.cu").to_str().unwrap()])
        .output()
        .unwrap();
    let t = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{t}");
    assert!(t.contains("broken.cu") && t.contains("nope"), "{t}");
    std::fs::remove_dir_all(&dir).unwrap();
}

/// A user's file that crashes NVRTC itself costs that file's compile for that architecture,
/// not the program: the compile ran in a child process, the crash is reported by its signal,
/// and the architectures and kernels after it are inspected. The trigger is a crash of the
/// NVRTC `tools/install-cuda-tools.sh` pins (13.0.88): `ldmatrix` from the constant shared
/// address 0, compiled for sm_90. An NVRTC that compiles it needs another trigger here.
#[test]
fn a_crash_inside_nvrtc_fails_one_compile_and_the_rest_goes_on() {
    if nvrtc::version().is_err() {
        panic!("NVRTC unavailable: run tools/install-cuda-tools.sh first.");
    }
    let dir = std::env::temp_dir().join(format!("lab-nvrtc-crash-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let crash = dir.join("crash.cu");
    std::fs::write(
        &crash,
        "extern \"C\" __global__ void k(float *out) {\n\
         unsigned u;\n\
         asm volatile(\"ldmatrix.sync.aligned.x1.m8n8.shared.b16 {%0}, [%1];\" : \"=r\"(u) : \"r\"(0u));\n\
         out[threadIdx.x] = __uint_as_float(u);\n}\n",
    )
    .unwrap();
    let fine = dir.join("fine.cu");
    std::fs::write(
        &fine,
        "extern \"C\" __global__ void ok(float *out) { out[threadIdx.x] = 1.0f; }\n",
    )
    .unwrap();
    let spec = |file: &std::path::Path, entry: &str| {
        format!(
            "{}:{entry},workload=eltwise,args=(Y),block=64,grid=(1)",
            file.display()
        )
    };
    let o = std::process::Command::new(env!("CARGO_BIN_EXE_harness"))
        .args(["inspect", "--arch", "sm_90,sm_80", "--kernel"])
        .arg(spec(&crash, "k"))
        .arg("--kernel")
        .arg(spec(&fine, "ok"))
        .output()
        .unwrap();
    let t = String::from_utf8_lossy(&o.stdout).to_string() + &String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(1), "one compile failed: {t}");
    assert!(
        t.contains("crashed with signal 11 (SIGSEGV")
            && t.contains("while compiling this file for sm_90")
            && t.contains("nothing else was lost"),
        "{t}"
    );
    // What came after the crash: the same file for sm_80, the other file for both.
    let row = |who: &str, arch: &str| {
        t.lines()
            .any(|l| l.starts_with(who) && l.split_whitespace().nth(2) == Some(arch))
    };
    assert!(row("crash.cu:k", "sm_80"), "{t}");
    assert!(
        row("fine.cu:ok", "sm_90") && row("fine.cu:ok", "sm_80"),
        "{t}"
    );
    std::fs::remove_dir_all(&dir).unwrap();
}

/// Every configuration of rung 09's tuning grid compiles for sm_80 and sm_90 without spills
/// and can launch: `harness tune` never times a configuration the grid should have excluded.
#[test]
fn every_tuning_configuration_compiles_without_spills() {
    if nvrtc::version().is_err() {
        panic!("NVRTC unavailable: run tools/install-cuda-tools.sh first.");
    }
    let mut problems = Vec::new();
    let grid = restrict_unroll::TileConfig::grid();
    for c in &grid {
        let k = restrict_unroll::GemmTuned::fixed(*c);
        let plan = kernel::Kernel::cuda(&k, &Shape::square_gemm(4096)).unwrap();
        for arch in ["sm_80", "sm_90"] {
            match resources::of_plan(&plan, arch, None) {
                Ok(list) => {
                    for r in list {
                        println!(
                            "{c} {arch}: {} registers, {} B shared, occupancy {:?} ({})",
                            r.registers,
                            r.smem_bytes,
                            r.occupancy,
                            r.occupancy_limiter.as_deref().unwrap_or("?")
                        );
                        if r.spill_stores + r.spill_loads > 0 || r.occupancy.unwrap_or(0.0) == 0.0 {
                            problems.push(format!("{c} on {arch}: {r:?}"));
                        }
                    }
                }
                Err(e) => problems.push(format!("{c} on {arch}: {e}")),
            }
        }
    }
    assert!(problems.is_empty(), "{}", problems.join("\n"));
    println!("{} configurations compiled for sm_80 and sm_90", grid.len());
}

/// The source asserts what `TileConfig::check` rejects: a configuration the grid excludes
/// fails to compile with the constraint it breaks, so the two cannot drift apart silently.
#[test]
fn invalid_tuning_configurations_fail_the_sources_static_asserts() {
    if nvrtc::version().is_err() {
        panic!("NVRTC unavailable: run tools/install-cuda-tools.sh first.");
    }
    let base = restrict_unroll::TileConfig::default();
    for (c, why) in [
        (
            restrict_unroll::TileConfig { wniter: 3, ..base },
            "whole number of 32-lane sub-tiles",
        ),
        (
            restrict_unroll::TileConfig { bk: 64, ..base },
            "48 KB of static shared memory",
        ),
    ] {
        assert!(c.check().is_err(), "{c}");
        let e = nvrtc::compile(&c.source(), "sm_90")
            .unwrap_err()
            .to_string();
        assert!(e.contains(why), "{c}: {e}");
    }
}

/// `harness inspect` reports an attention kernel at both head dimensions of the ladder, each
/// labelled, so that what D=128 costs in registers (and any spill) shows beside D=64.
#[test]
fn inspect_reports_attention_kernels_at_both_head_dimensions() {
    if nvrtc::version().is_err() {
        panic!("NVRTC unavailable: run tools/install-cuda-tools.sh first.");
    }
    let o = std::process::Command::new(env!("CARGO_BIN_EXE_harness"))
        .args([
            "inspect",
            "--kernels",
            "attn-flash2-fp32,gemm-naive",
            "--arch",
            "sm_90",
        ])
        .output()
        .unwrap();
    let t = String::from_utf8_lossy(&o.stdout).to_string() + &String::from_utf8_lossy(&o.stderr);
    assert!(o.status.success(), "{t}");
    for label in ["attn-flash2-fp32[D=64] ", "attn-flash2-fp32[D=128] "] {
        assert!(
            t.lines()
                .any(|l| l.starts_with(label) && l.contains("sm_90")),
            "no row for {label}:\n{t}"
        );
    }
    // Other workloads compile at one shape, unlabelled.
    assert!(t.lines().any(|l| l.starts_with("gemm-naive ")), "{t}");
    assert!(!t.contains("gemm-naive["), "{t}");
}

/// NVRTC called from several threads at once does not always make what it makes alone (one of
/// six concurrent compiles of `linear_fused` had 3857 instructions and 34 LDS, not 3851 and
/// 32), so `nvrtc::compile` runs one compile at a time: the same source, compiled from eight
/// threads (each under its own unused define, so that none is served from the memo), gives
/// one SASS. Without the serialization this fails most of the time, not always.
#[test]
fn compiles_from_several_threads_give_the_sass_of_a_compile_alone() {
    if nvrtc::version().is_err() {
        panic!("NVRTC unavailable: run tools/install-cuda-tools.sh first.");
    }
    let tool = harness::sass::Disassembler::find()
        .unwrap_or_else(|e| panic!("{e}: run tools/install-cuda-tools.sh first"));
    let all = registry::all();
    let fused = all.iter().find(|k| k.info().id == "linear-fused").unwrap();
    let plan = fused.cuda(&shapes(Workload::Linear)[0]).unwrap();
    let listings: Vec<Vec<String>> = std::thread::scope(|s| {
        let threads: Vec<_> = (0..8)
            .map(|i| {
                let (tool, mut plan) = (&tool, plan.clone());
                s.spawn(move || {
                    for step in &mut plan.steps {
                        if let kernel::Step::Kernel(l) = step {
                            l.source = l.source.clone().define("LAB_UNUSED_NONCE", i);
                        }
                    }
                    let l = harness::sass::of_plan(tool, &plan, "sm_90").unwrap();
                    l[0].function
                        .sass
                        .lines()
                        .filter_map(|x| x.split_once("*/").map(|(_, i)| i.trim().to_string()))
                        .collect()
                })
            })
            .collect();
        threads.into_iter().map(|t| t.join().unwrap()).collect()
    });
    let lengths: Vec<usize> = listings.iter().map(Vec::len).collect();
    assert!(
        listings.iter().all(|l| *l == listings[0]),
        "different SASS from one source: {lengths:?} instructions"
    );
}
