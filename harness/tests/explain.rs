//! `harness explain`: every kernel of `harness list` is explained, with every section, from
//! NVRTC and nvdisasm (tools/install-cuda-tools.sh), not a GPU; without them these tests fail.

use harness::cmd::explain::{self, Block};
use harness::{sass, sol};
use std::process::Command;

const SECTIONS: [&str; 8] = [
    "Lineage",
    "Source diff against the parent",
    "Resources",
    "SASS instruction mix",
    "Shared-memory banks in the simulator",
    "Global coalescing in the simulator",
    "Speed of light on an H100",
    "Measured",
];

/// The rows of the first table of a section.
fn table<'a>(doc: &'a explain::Doc, title: &str) -> Option<&'a Vec<Vec<String>>> {
    let (_, blocks) = doc.sections.iter().find(|(t, _)| t == title)?;
    blocks.iter().find_map(|b| match b {
        Block::Table(_, rows) => Some(rows),
        _ => None,
    })
}

fn text_of(doc: &explain::Doc, title: &str) -> String {
    let (_, blocks) = doc.sections.iter().find(|(t, _)| t == title).unwrap();
    blocks
        .iter()
        .map(|b| match b {
            Block::Text(t) | Block::Code(_, t) => t.clone(),
            Block::Table(..) => String::new(),
        })
        .collect::<Vec<_>>()
        .join("\n")
}

#[test]
fn every_kernel_is_explained_with_every_section() {
    let all = harness::registry::all();
    assert!(!all.is_empty());
    // A network row is explained as any rung (its plan is the whole forward pass): two of them
    // stand for the rest, each compiling every layer's source.
    let sampled = ["cnn-conv-fused", "encoder-gemm-wmma-fp16"];
    // The simulator's builds on every core first, as `harness docs` does.
    explain::prebuild(&all.iter().map(|k| k.as_ref()).collect::<Vec<_>>());
    for k in all
        .iter()
        .filter(|k| !k.info().workload.is_network() || sampled.contains(&k.info().id.as_ref()))
    {
        let id = k.info().id.to_string();
        let doc = explain::explain(&all, k.as_ref(), None, true);
        // A rung with a parent is diffed against it; a first rung shows its source alone.
        let mut sections = SECTIONS;
        if harness::registry::parent(&all, k.as_ref()).is_none() {
            sections[1] = "Source";
        }
        assert_eq!(doc.titles(), sections, "{id}");
        let md = doc.markdown();
        for s in sections {
            assert!(md.contains(&format!("#### {s}\n")), "{id}: no {s} in\n{md}");
            assert!(doc.text().contains(&format!("== {s}\n")), "{id}: no {s}");
        }
        // Prose reads as prose: no runs of spaces (a string continuation inside format!
        // keeps the next line's indent unless the line ends in a backslash).
        for (title, blocks) in &doc.sections {
            for b in blocks {
                if let Block::Text(t) = b {
                    assert!(!t.contains("  "), "{id}: {title}: double space in {t:?}");
                }
            }
        }
        let lineage = text_of(&doc, "Lineage");
        match k.lineage() {
            Some(l) => {
                assert!(lineage.contains(l.idea), "{id}: {lineage}");
                if let Some(p) = l.parent {
                    assert!(lineage.contains(p), "{id}: {lineage}");
                }
            }
            None => assert!(lineage.contains("Not a rung"), "{id}: {lineage}"),
        }
        let shape = kernel::Kernel::cuda(k.as_ref(), &first_shape(k.info().workload));
        let has_cu = shape.is_some_and(|p| p.launches().next().is_some());
        if !has_cu {
            assert!(
                text_of(&doc, sections[1]).contains("No CUDA source"),
                "{id}"
            );
            continue;
        }
        // The rung's own rows are there: compiled for at least one architecture, and its SASS.
        for section in ["Resources", "SASS instruction mix"] {
            let rows = table(&doc, section).unwrap_or_else(|| panic!("{id}: {section}"));
            assert!(
                rows.iter().any(|r| r[0] == id),
                "{id}: no row of its own in {section}: {rows:?}\n{}",
                text_of(&doc, section)
            );
        }
        // Counted at a shape the rung accepts: no note of the section gives its reason to
        // decline (a library call is not simulated at all).
        let banks = text_of(&doc, explain::BANKS);
        assert!(
            banks
                .lines()
                .filter_map(|l| l.strip_prefix(&format!("{id}: ")))
                .all(|note| note.starts_with("no LDS") || note.starts_with("not simulated")),
            "{id}: {banks}"
        );
        let sol = text_of(&doc, "Speed of light on an H100");
        assert!(
            sol.contains("Estimate: at best") || sol.contains("No per-rung model"),
            "{id}: {sol}"
        );
        let diff = text_of(&doc, sections[1]);
        let parent_has_cu = harness::registry::parent(&all, k.as_ref()).is_some_and(|p| {
            kernel::Kernel::cuda(p, &first_shape(p.info().workload))
                .is_some_and(|pl| pl.launches().next().is_some())
        });
        if parent_has_cu {
            assert!(
                diff.contains("+++ ") || diff.contains("identical"),
                "{id}: no diff against its parent:\n{diff}"
            );
        }
    }
}

fn first_shape(w: kernel::Workload) -> kernel::Shape {
    // The shape explain compiles at is inspect's first; the tests only need one with a plan.
    match w {
        kernel::Workload::Gemm => kernel::Shape::square_gemm(4096),
        kernel::Workload::Linear => kernel::Shape::Linear {
            m: 8192,
            n: 4096,
            k: 4096,
            act: kernel::Activation::Gelu,
        },
        kernel::Workload::Conv => kernel::Shape::Conv {
            b: 1000,
            c: 4,
            m: 16,
            h: 40,
            w: 40,
            k: 7,
        },
        kernel::Workload::Attention => kernel::Shape::Attention {
            b: 4,
            h: 16,
            s: 1024,
            d: 64,
            causal: false,
        },
        kernel::Workload::Eltwise => kernel::Shape::Eltwise { m: 8192, n: 4096 },
        kernel::Workload::Rbf => kernel::Shape::Rbf { n: 131_072, k: 64 },
        kernel::Workload::Layernorm => kernel::Shape::Layernorm { m: 8192, n: 1280 },
        kernel::Workload::Softmax => kernel::Shape::Softmax { m: 8192, n: 1280 },
        kernel::Workload::Pool => kernel::Shape::Pool {
            b: 10_000,
            c: 4,
            h: 80,
            w: 80,
            p: 2,
        },
        w => w.probe_shape(),
    }
}

#[test]
fn the_command_prints_markdown_and_names_unknown_rungs() {
    let bin = env!("CARGO_BIN_EXE_harness");
    let o = Command::new(bin)
        .args(["explain", "gemm-tiled", "--markdown"])
        .output()
        .unwrap();
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(
        o.status.success(),
        "{out}{}",
        String::from_utf8_lossy(&o.stderr)
    );
    assert!(out.starts_with("### gemm-tiled"), "{out}");
    assert!(
        out.contains("```diff\n--- gemm-naive\n+++ gemm-tiled"),
        "{out}"
    );
    let o = Command::new(bin)
        .args(["explain", "gemm-nonexistent"])
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains("`harness list` names all"), "{err}");
}

/// `explain --kernel`: a user's kernel explained as a rung is, beside the rung `--against`
/// names (its file as written diffed against the rung's source); `--against` also sets a
/// rung beside another than its parent.
#[test]
fn your_kernel_is_explained_beside_the_rung_it_is_set_against() {
    let bin = env!("CARGO_BIN_EXE_harness");
    let file = concat!(env!("CARGO_MANIFEST_DIR"), "/../examples/gemm_blocktile.cu");
    let spec = format!(
        "{file}:sgemm_blocktile<64,64,8,8>,signature=gemm-blas,block=512,grid=tile:64x64,\
         smem=4096"
    );
    let explain = |args: &[&str]| {
        let o = Command::new(bin)
            .arg("explain")
            .args(args)
            .output()
            .unwrap();
        let out = String::from_utf8_lossy(&o.stdout).into_owned();
        let err = String::from_utf8_lossy(&o.stderr).into_owned();
        (o.status.code(), out, err)
    };
    let (code, out, err) = explain(&["--kernel", &spec, "--against", "gemm-regblock-2d"]);
    assert_eq!(code, Some(0), "{out}{err}");
    let id = "gemm_blocktile.cu:sgemm_blocktile<64,64,8,8>";
    assert!(
        out.starts_with(&format!("{id} (your gemm kernel)\n")),
        "{out}"
    );
    assert!(
        out.contains("Set beside: gemm-regblock-2d (gemm rung 05)")
            && out.contains("\n== Source diff against gemm-regblock-2d\n"),
        "{out}"
    );
    // The file as written (its comments too) against the rung's source, then the launches.
    assert!(
        out.contains(&format!("--- gemm-regblock-2d\n+++ {id}\n"))
            && out.contains(&format!("+// file: {file}\n"))
            && out.contains("+// A GEMM written the way public CUDA worklogs write them")
            && out.contains("-// file: restrict-unroll/kernels/05_regblock_2d.cu"),
        "{out}"
    );
    assert!(
        out.contains("+sgemm_blocktile<64,64,8,8> grid [64, 64, 1] block [512, 1, 1]"),
        "{out}"
    );
    // Resources and the bank model for both, the estimate from the kernel's own hot loop.
    for arch in ["sm_80", "sm_90"] {
        for who in [id, "gemm-regblock-2d"] {
            assert!(
                out.lines().any(|l| l.starts_with(who) && l.contains(arch)),
                "{who} {arch}: {out}"
            );
        }
    }
    for who in [id, "gemm-regblock-2d"] {
        assert!(
            out.lines()
                .any(|l| l.starts_with(who) && l.split_whitespace().nth(1) == Some("LDS")),
            "{who} LDS: {out}"
        );
    }
    assert!(
        out.contains("Model: the hot loop of sgemm_blocktile<64,64,8,8>"),
        "{out}"
    );

    // Alone: no diff, and how to get one.
    let (code, out, err) = explain(&["--kernel", &spec]);
    assert_eq!(code, Some(0), "{out}{err}");
    assert!(
        out.contains("Your kernel, not a rung")
            && out.contains("`--against RUNG` sets it beside a rung")
            && out.contains("\n== Source\n")
            && !out.contains("== Source diff"),
        "{out}"
    );
    // A rung beside another than its parent keeps its declared parent in words.
    let (code, out, err) = explain(&["gemm-vectorized", "--against", "gemm-regblock-1d"]);
    assert_eq!(code, Some(0), "{out}{err}");
    assert!(
        out.contains("(its parent is gemm-regblock-2d).")
            && out.contains("Set beside: gemm-regblock-1d (gemm rung 04)")
            && out.contains("--- gemm-regblock-1d\n+++ gemm-vectorized")
            && out.contains("\n== Source diff against gemm-regblock-1d\n"),
        "{out}"
    );
    // A kernel that fails at the larger simulator shapes is counted at the largest where it
    // passes, the others named with the failure.
    let dir = std::env::temp_dir().join(format!("explain-rows-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let code_text = std::fs::read_to_string(file).unwrap();
    assert!(code_text.contains("if (r < M && c < N)"));
    let clipped = dir.join("clipped.cu");
    std::fs::write(
        &clipped,
        code_text.replace("if (r < M && c < N)", "if (r < M && r < 100 && c < N)"),
    )
    .unwrap();
    let clipped_spec = spec.replace(file, clipped.to_str().unwrap());
    let (code, out, err) = explain(&["--kernel", &clipped_spec, "--against", "gemm-regblock-1d"]);
    assert_eq!(code, Some(0), "{out}{err}");
    assert!(
        out.contains("The simulator's bank model at the shape gemm 100x37x129 (the largest simulator shape where clipped.cu:sgemm_blocktile<64,64,8,8> passes: gemm 130x260x72, the one `tools/gpu-check.sh` profiles with Nsight Compute, fails (below))")
            && out.contains("Passed over: gemm 130x260x72, where clipped.cu:sgemm_blocktile<64,64,8,8> fails: ")
            && out.contains("Passed over: gemm 130x40x392, where "),
        "{out}"
    );
    assert!(
        out.lines()
            .any(|l| l.starts_with("gemm-regblock-1d") && l.contains(" LDS ")),
        "{out}"
    );
    // The guide gives the SM count `SMS` stands for here as the model sets it.
    let guide = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../docs/your-kernel.md"
    ))
    .unwrap();
    let words = guide.split_whitespace().collect::<Vec<_>>().join(" ");
    let phrase = format!("`SMS` stands for an H100's {} SMs there", sol::h100::SMS);
    assert!(words.contains(&phrase), "{phrase}");
    let (code, _, err) = explain(&["--kernel", &spec, "--against", "attn-naive"]);
    assert_eq!(code, Some(2));
    assert!(
        err.contains("your kernel computes gemm, and attn-naive is a rung of attention"),
        "{err}"
    );
    let (code, _, err) = explain(&["--kernel", &spec, "--against", "gemm-nonexistent"]);
    assert_eq!(code, Some(2));
    assert!(err.contains("unknown kernel \"gemm-nonexistent\""), "{err}");
}

/// `harness explain --kernel SPEC EXTRA...`'s output, which must succeed.
fn explain_kernel(spec: &str, extra: &[&str]) -> String {
    let o = Command::new(env!("CARGO_BIN_EXE_harness"))
        .args(["explain", "--kernel", spec])
        .args(extra)
        .output()
        .unwrap();
    let out = String::from_utf8_lossy(&o.stdout).into_owned();
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(o.status.success(), "{out}{err}");
    out
}

#[test]
fn your_kernel_is_counted_with_its_inputs_laid_out_as_it_reads_them_and_at_the_sizes_given() {
    // B column-major (`b=col`): the bank count runs the kernel on the inputs a run gives it.
    let file = concat!(env!("CARGO_MANIFEST_DIR"), "/../examples/hgemm_wmma.cu");
    let spec = format!(
        "{file}:hgemm_wmma<64,64>,signature=gemm-blas,dtype=f16,C:f32,b=col,alpha=1.5,\
         beta=-0.5,block=128,grid=tile:64x64"
    );
    let id = "hgemm_wmma.cu:hgemm_wmma<64,64>";
    let counted = |out: &str| {
        out.lines()
            .any(|l| l.starts_with(id) && l.split_whitespace().nth(1) == Some("STS"))
    };
    let out = explain_kernel(&spec, &[]);
    assert!(
        out.contains(
            "The simulator's bank model at the shape gemm 130x260x72 (the one \
             `tools/gpu-check.sh` profiles with Nsight Compute)"
        ) && !out.contains("Passed over")
            && counted(&out),
        "{out}"
    );
    let out = explain_kernel(&spec, &["--sizes", "64x64x64"]);
    assert!(
        out.contains("The simulator's bank model at the shape gemm 64x64x64 (given with --sizes)")
            && counted(&out),
        "{out}"
    );
}

#[test]
fn a_cooperative_kernel_sized_by_the_sm_count_is_counted_at_the_simulators() {
    // Two blocks per SM: 264 at an H100's 132, more than the simulator keeps resident; its
    // banks are counted as a simulator run launches it, at 2 * 8.
    let file = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../examples/sgemm_splitk_grid.cu"
    );
    let spec = format!(
        "{file}:sgemm_splitk_grid,workload=gemm,block=256,grid=2*SMS,launch=cooperative,\
         args=(A,B,C,M,N,K,zeros(4*4*M*N))"
    );
    let out = explain_kernel(&spec, &[]);
    let id = "sgemm_splitk_grid.cu:sgemm_splitk_grid";
    assert!(
        out.lines()
            .any(|l| l.starts_with(id) && l.split_whitespace().nth(1) == Some("LDS")),
        "{out}"
    );
    assert!(!out.contains("resident"), "{out}");
    // The launch and the estimate stay the H100's.
    assert!(out.contains("264 blocks of sgemm_splitk_grid"), "{out}");
}

/// A kernel of several launches is shown by the entries as written, in every table and line,
/// not by the names of the wrappers the lab launches them through.
#[test]
fn your_kernels_launches_are_named_as_you_wrote_them() {
    let file = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../examples/sgemm_splitk_reduce.cu"
    );
    let spec = format!(
        "{file}:sgemm_splitk_partial,workload=gemm,block=16x16,grid=(cdiv(N,16),cdiv(M,16),3),\
         args=(A,B,M,N,K,scratch(P,4*3*M*N)),then=splitk_reduce,block=256,\
         grid=(cdiv(M*N,256)),args=(P,C,M*N,3)"
    );
    let out = explain_kernel(&spec, &["--against", "gemm-tiled"]);
    assert!(!out.contains("user_"), "{out}");
    for entry in ["sgemm_splitk_partial", "splitk_reduce"] {
        for arch in ["sm_80", "sm_90"] {
            assert!(
                out.lines()
                    .any(|l| l.split_whitespace().nth(1) == Some(entry)
                        && l.split_whitespace().nth(2) == Some(arch)),
                "{entry} on {arch}: {out}"
            );
        }
        assert!(out.contains(&format!("{entry} grid [")), "{entry}: {out}");
    }
}

/// What explain scales the shared-memory wavefronts and global lines of `k`'s hot loop by:
/// the simulator's bank conflicts and coalescing, kind by kind, where the simulator runs `k`
/// (none where `k` declines the simulator's shape).
fn bank_factors(
    all: &[Box<dyn kernel::Kernel>],
    k: &dyn kernel::Kernel,
    plan: &kernel::CudaPlan,
    pass: &sass::Summary,
) -> sol::BankFactors {
    explain::bank_factors(Some(&explain::simulator_banks(all, k)), plan, pass, None)
}

/// The per-rung estimate of a GEMM rung at 4096^3, from its hot loop on sm_90.
fn gemm_estimate(id: &str) -> (sass::Loop, sol::Estimate) {
    let all = harness::registry::all();
    let k = all.iter().find(|k| k.info().id == id).unwrap();
    let shape = first_shape(kernel::Workload::Gemm);
    let plan = kernel::Kernel::cuda(k.as_ref(), &shape).unwrap();
    let tool = sass::Disassembler::find().unwrap();
    let hot = sol::hot_loop_of_plan(&tool, &plan, "sm_90")
        .unwrap()
        .unwrap_or_else(|| panic!("{id}: no hot loop"));
    let banks = bank_factors(&all, k.as_ref(), &plan, &hot.hot.summary);
    let e = sol::estimate(shape.flops(), shape.min_bytes(4), &hot.hot.summary, &banks)
        .unwrap_or_else(|| panic!("{id}: no estimate from {:?}", hot.hot));
    // What explain prints is this estimate.
    let doc = explain::explain(&all, k.as_ref(), None, true);
    let text = text_of(&doc, "Speed of light on an H100");
    assert!(
        text.contains(&format!("bound by {}", e.bound().name)),
        "{id}: {text}"
    );
    (hot.hot, e)
}

#[test]
fn the_speed_of_light_is_modelled_per_rung_from_the_hot_loop() {
    let flops = first_shape(kernel::Workload::Gemm).flops();
    let (naive_loop, naive) = gemm_estimate("gemm-naive");
    assert!(naive_loop.summary.ffma > 0 && naive_loop.summary.shared_load_bytes == 0);
    assert_eq!(
        naive.bound().name,
        sol::L1,
        "uncoalesced operands from global memory: {:?}",
        naive.bound()
    );
    let (tiled_loop, tiled) = gemm_estimate("gemm-tiled");
    assert!(tiled_loop.summary.lds > 0, "{:?}", tiled_loop.summary);
    assert!(
        tiled.bound().ms < naive.bound().ms,
        "tiled {:?} vs naive {:?}",
        tiled.bound(),
        naive.bound()
    );
    assert!(tiled.ceiling(sol::L2).unwrap().ms < naive.ceiling(sol::L2).unwrap().ms);
    // Tensor-core rungs: their math runs at the tensor peak of their input type.
    let (_, fp16) = gemm_estimate("gemm-mma-ldmatrix");
    let t = fp16.ceiling(sol::TENSOR).expect("an HMMA loop");
    assert!(
        (t.ms - flops / sol::h100::FP16_FLOPS * 1e3).abs() < 1e-6,
        "{t:?}"
    );
    let (_, tf32) = gemm_estimate("gemm-wmma-tf32");
    let t = tf32.ceiling(sol::TENSOR).expect("an HMMA loop");
    assert!(
        (t.ms - flops / sol::h100::TF32_FLOPS * 1e3).abs() < 1e-6,
        "{t:?}"
    );
    let (wgmma_loop, _) = gemm_estimate("gemm-wgmma-tma");
    assert!(wgmma_loop.summary.hgmma > 0, "{:?}", wgmma_loop.summary);
    // Not one estimate for every GEMM rung.
    let mut bounds: Vec<f64> = [naive, tiled, fp16, tf32]
        .iter()
        .map(|e| e.bound().ms)
        .collect();
    bounds.sort_by(f64::total_cmp);
    bounds.dedup();
    assert_eq!(bounds.len(), 4, "{bounds:?}");
}

/// Rung 07 changes nothing in rung 06's hot loop but which shared-memory words its lanes
/// read: the model without bank conflicts cannot tell the two apart. With the simulator's
/// conflicts it sets 06 behind 07, as the H200 measured them, each bound still under the
/// time the H200 took.
#[test]
fn bank_conflicts_set_rung_06_behind_rung_07_as_the_h200_measured_them() {
    let shape = first_shape(kernel::Workload::Gemm);
    let (l06, e06) = gemm_estimate("gemm-vectorized");
    let (l07, e07) = gemm_estimate("gemm-warptile");
    let blind = |l: &sass::Loop| {
        let banks = sol::BankFactors::default();
        let e = sol::estimate(shape.flops(), shape.min_bytes(4), &l.summary, &banks);
        e.unwrap().bound().ms
    };
    // The same loads without their conflicts, give or take the one LDS that ptxas's output
    // for these two rungs sometimes gains with where NVRTC's memory lies (address_layout.rs).
    let near = |a: f64, b: f64| (a - b).abs() <= 0.01 * a.max(b);
    assert!(
        near(
            l06.summary.shared_wavefronts.total() as f64,
            l07.summary.shared_wavefronts.total() as f64
        ),
        "06 {:?} against 07 {:?}",
        l06.summary.shared_wavefronts,
        l07.summary.shared_wavefronts
    );
    assert!(near(blind(&l06), blind(&l07)));
    assert_eq!(e06.bound().name, sol::SHARED, "{:?}", e06.bound());
    assert!(
        e06.bound().ms > 1.2 * e07.bound().ms,
        "06 {:?}\n07 {:?}",
        e06.bound(),
        e07.bound()
    );
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../results/nvidia-h200");
    let run = harness::results::RunResults::load(&dir).unwrap();
    let measured = |id: &str| {
        run.workloads
            .iter()
            .flat_map(|w| &w.shapes)
            .filter(|s| s.shape == shape)
            .flat_map(|s| &s.rows)
            .find(|r| r.id == id && r.passed())
            .and_then(|r| r.median_ms())
            .unwrap_or_else(|| panic!("no {id} at {shape} on the H200"))
    };
    let (m06, m07) = (measured("gemm-vectorized"), measured("gemm-warptile"));
    assert!(m06 > m07, "the H200: 06 {m06} ms, 07 {m07} ms");
    assert!(e06.bound().ms < m06 && e07.bound().ms < m07);
}

/// A rung timed with its pipeline's copies between host and device (conv rung 07) is
/// estimated with them: its output alone takes longer to come back over PCIe than its
/// parent's kernel takes on the device.
#[test]
fn a_pipelined_rows_estimate_counts_its_copies_between_host_and_device() {
    let all = harness::registry::all();
    let sol_of = |id: &str| {
        let k = all.iter().find(|k| k.info().id == id).unwrap();
        explain::estimate_of(&all, k.as_ref())
    };
    let (shape, streams) = sol_of("conv-streams");
    let (_, kernel) = sol_of("conv-restrict-unroll");
    assert_eq!(streams.bound, sol::HOST_COPIES, "{streams:?}");
    let download_ms = (shape.output().len() * 4) as f64 / sol::h100::PCIE_BYTES_PER_S * 1e3;
    assert!(
        (streams.ms - download_ms).abs() < 1e-9 * download_ms,
        "{streams:?}"
    );
    assert!(streams.ms > kernel.ms, "{streams:?} against {kernel:?}");
}

/// The sum's rungs do no multiply-add: the launch model estimates them, launch by launch,
/// with the shared-memory wavefronts the simulator's warps asked. Its bounds are those the
/// walkthrough (fusion/README.md, "What the H100 model sees") names.
#[test]
fn the_sums_rungs_are_estimated_launch_by_launch_as_the_walkthrough_says() {
    let all = harness::registry::all();
    let estimate = |id: &str| {
        let k = all.iter().find(|k| k.info().id == id).unwrap();
        let doc = explain::explain(&all, k.as_ref(), None, true);
        let (_, sol) = explain::estimate_of(&all, k.as_ref());
        (text_of(&doc, "Speed of light on an H100"), sol, doc)
    };
    let (text, tree, doc) = estimate("reduce-interleaved");
    assert!(
        text.contains("Model: each of the plan's 3 launches"),
        "{text}"
    );
    // The launches: 2^24 elements, 256 a block, then 65536 and 256 partial sums.
    let (_, blocks) = doc
        .sections
        .iter()
        .find(|(t, _)| t == "Speed of light on an H100")
        .unwrap();
    let launches: Vec<String> = blocks
        .iter()
        .find_map(|b| match b {
            Block::Table(head, rows) if head[0] == "launch" => {
                Some(rows.iter().map(|r| r[1].clone()).collect())
            }
            _ => None,
        })
        .unwrap();
    assert_eq!(launches, ["65536 x 8", "256 x 8", "1 x 8"]);
    assert!(
        text.contains("as the simulator's warps asked them")
            || text.contains("what the simulator's warps asked"),
        "{text}"
    );
    assert_eq!(tree.bound, sol::SHARED, "{text}");
    for id in ["reduce-strided", "reduce-sequential"] {
        let (text, e, _) = estimate(id);
        assert_eq!(e.bound, sol::ISSUE, "{id}: {text}");
    }
    for id in [
        "reduce-first-add",
        "reduce-warp-shuffle",
        "reduce-grid-stride",
        "reduce-float4",
        "reduce-one-pass",
    ] {
        let (text, e, _) = estimate(id);
        assert!(
            [sol::DRAM, sol::DRAM_LAUNCHES].contains(&e.bound.as_str()),
            "{id}: {text}"
        );
        // x read once, and a little more for the partial sums.
        let x = (1u64 << 24) as f64 * 4.0 / sol::h100::DRAM_BYTES_PER_S * 1e3;
        assert!(e.ms >= x && e.ms < 1.01 * x, "{id}: {text}");
    }
}

/// The element-wise chain's unfused rung moves each intermediate through DRAM twice: the
/// launch model counts seven accesses per element where the fused rungs' bound is the
/// compulsory three (fusion/README.md, the element-wise chain).
#[test]
fn the_unfused_chains_launches_move_seven_accesses_where_fusion_moves_three() {
    let all = harness::registry::all();
    let estimate = |id: &str| sol_of(&all, id);
    let (unfused, fused) = (estimate("eltwise-unfused"), estimate("eltwise-fused"));
    assert_eq!(unfused.bound, sol::DRAM_LAUNCHES, "{unfused:?}");
    assert_eq!(fused.bound, sol::DRAM, "{fused:?}");
    assert_eq!(estimate("eltwise-fused-vec4").bound, sol::DRAM);
    let ratio = unfused.ms / fused.ms;
    assert!((ratio - 7.0 / 3.0).abs() < 0.01, "{ratio}");
}

/// A rung whose streaming loop lies inside another (the pooling window's rows and columns,
/// their counts set at run time) gets no launch model, and says why.
#[test]
fn nested_loops_of_unknown_trips_get_no_launch_model() {
    let all = harness::registry::all();
    let k = all.iter().find(|k| k.info().id == "pool-fused").unwrap();
    let doc = explain::explain(&all, k.as_ref(), None, true);
    let text = text_of(&doc, "Speed of light on an H100");
    assert!(
        text.contains("no launch model: the loop of pool_fused that streams its inputs lies inside another loop"),
        "{text}"
    );
}

/// The rows of the section's tables.
fn table_rows(doc: &explain::Doc, title: &str) -> Vec<Vec<String>> {
    let (_, blocks) = doc.sections.iter().find(|(t, _)| t == title).unwrap();
    blocks
        .iter()
        .flat_map(|b| match b {
            Block::Table(_, rows) => rows.clone(),
            _ => Vec::new(),
        })
        .collect()
}

#[test]
fn every_gpu_row_is_measured_against_the_estimate_at_its_shape() {
    // The published CPU run, relabelled as a GPU run: one row at the shape explain compiles
    // at, slower than the estimate, one at another shape, whose estimate must be computed
    // there, faster than it.
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../results/cpu-intel-r-xeon-r-processor-2-threads");
    let mut run = harness::results::RunResults::load(&dir).unwrap();
    run.device.kind = "cuda".into();
    run.device.name = "a GPU".into();
    let gemm = run
        .workloads
        .iter_mut()
        .find(|w| w.workload == kernel::Workload::Gemm)
        .unwrap();
    let measured = [40.0, 1e-4];
    gemm.shapes[0].shape = first_shape(kernel::Workload::Gemm);
    let other = gemm.shapes[1].shape;
    assert_ne!(other, gemm.shapes[0].shape);
    for (s, ms) in gemm.shapes.iter_mut().zip(measured) {
        let row = s.rows.iter_mut().find(|r| r.id == "gemm-tiled").unwrap();
        assert_eq!(row.status, harness::results::Status::Passed);
        row.timing.as_mut().unwrap().median_ms = ms;
    }
    let (hot, e) = gemm_estimate("gemm-tiled");
    let all = harness::registry::all();
    let k = all.iter().find(|k| k.info().id == "gemm-tiled").unwrap();
    let doc = explain::explain(&all, k.as_ref(), Some(&run), false);
    let text = text_of(&doc, "Speed of light on an H100");
    let blocks_at = |shape: &kernel::Shape| {
        let plan = kernel::Kernel::cuda(k.as_ref(), shape).unwrap();
        harness::resources::of_plan(&plan, "sm_90", Some(132)).unwrap()[0].blocks
    };
    let first = first_shape(kernel::Workload::Gemm);
    let estimate_ms = e.spread_over_sms(blocks_at(&first));
    assert!(
        text.contains(&format!("at best {estimate_ms:.4} ms")),
        "{text}"
    );
    assert!(
        text.contains("Measured against estimated, on a GPU"),
        "{text}"
    );
    let plan = kernel::Kernel::cuda(k.as_ref(), &other).unwrap();
    let banks = bank_factors(&all, k.as_ref(), &plan, &hot.summary);
    let at_other = sol::estimate(other.flops(), other.min_bytes(4), &hot.summary, &banks)
        .unwrap()
        .spread_over_sms(blocks_at(&other));
    let expected: Vec<Vec<String>> = [
        (&first, estimate_ms, measured[0]),
        (&other, at_other, measured[1]),
    ]
    .iter()
    .map(|(shape, est, ms)| {
        vec![
            shape.to_string(),
            format!("{est:.4}"),
            format!("{ms:.4}"),
            format!("{:.0}%", est / ms * 100.0),
        ]
    })
    .collect();
    let rows = table_rows(&doc, "Speed of light on an H100");
    for want in &expected {
        assert!(rows.contains(want), "{want:?} not in {rows:?}");
    }
    let bandwidth = run.calibration.as_ref().unwrap().bandwidth_gbs / 1e3;
    assert!(
        text.contains(&format!(
            "Over 100%: the run beat the estimate, because less moved than the model's binding \
             ceiling counts (L1 hits and broadcasts, as the caveats above say; for the L1's \
             lines, the simulator's small shape, whose rows may be shorter than a warp's run, \
             coalescing worse than this one), or because the GPU's ceilings are higher (the run \
             measured {bandwidth:.2} TB/s of DRAM bandwidth"
        )),
        "{text}"
    );
    // Without a GPU run there is no such line.
    let doc = explain::explain(&all, k.as_ref(), None, false);
    assert!(!text_of(&doc, "Speed of light on an H100").contains("Measured against"));
}

/// The bank section sets the rung's counts beside its parent's, per instruction kind: warp
/// tiling (07) removes the LDS conflicts of the float4 layout it changes (06).
#[test]
fn the_bank_section_sets_a_rung_beside_its_parent() {
    let all = harness::registry::all();
    let k = harness::registry::find(&all, "gemm-warptile").unwrap();
    let doc = explain::explain(&all, k, None, true);
    let rows = table(&doc, explain::BANKS).expect("a table of counts");
    let lds_conflicts = |id: &str| {
        rows.iter()
            .find(|r| r[0] == id && r[1] == "LDS")
            .map(|r| r[5].parse::<u64>().unwrap())
    };
    assert_eq!(lds_conflicts("gemm-warptile"), Some(0), "{rows:?}");
    assert!(
        lds_conflicts("gemm-vectorized").is_some_and(|c| c > 0),
        "{rows:?}"
    );
}

/// A rung that declines the shape Nsight Compute profiles (the wgmma rungs: N = 260 is no
/// multiple of 8) is counted, beside its parent, at the largest simulator shape both accept,
/// and the section says why.
#[test]
fn the_bank_section_counts_a_rung_at_a_shape_it_accepts() {
    let all = harness::registry::all();
    let k = harness::registry::find(&all, "gemm-wgmma-tma").unwrap();
    let doc = explain::explain(&all, k, None, true);
    let text = text_of(&doc, explain::BANKS);
    assert!(
        text.contains(
            "at the shape gemm 130x40x392 (the largest simulator shape accepted: gemm 130x260x72"
        ),
        "{text}"
    );
    assert!(text.contains("gemm-wgmma-tma: no LDS"), "{text}");
    let rows = table(&doc, explain::BANKS).expect("the parent's counts");
    assert!(
        rows.iter()
            .any(|r| r[0] == "gemm-mma-bf16" && r[1] == "LDSM"),
        "{rows:?}"
    );
    // The speed of light reads the same counts: its wgmma operands are said to be uncounted.
    let sol = text_of(&doc, "Speed of light on an H100");
    assert!(sol.contains("HGMMA operands: not counted"), "{sol}");
}

/// Without `--run`, a rung's measured rows come from the lab's latest run that has them, not
/// only from the latest run (which may have measured another workload).
#[test]
fn the_measured_rows_come_from_the_latest_run_that_has_them() {
    let bin = env!("CARGO_BIN_EXE_harness");
    let lab = std::env::temp_dir().join(format!("explain-latest-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&lab);
    let run = |args: &[&str]| {
        let o = Command::new(bin)
            .env("LAB_DIR", &lab)
            .args(["run", "--device", "cpu", "-q"])
            .args(args)
            .output()
            .unwrap();
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    };
    run(&[
        "--workload",
        "gemm",
        "--sizes",
        "64",
        "--kernels",
        "gemm-tiled",
    ]);
    // Run folders are named by the second they start: the second run sorts after the first.
    std::thread::sleep(std::time::Duration::from_millis(1100));
    run(&["--workload", "softmax", "--sizes", "8x16"]);
    let o = Command::new(bin)
        .env("LAB_DIR", &lab)
        .args(["explain", "gemm-tiled"])
        .output()
        .unwrap();
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(o.status.success(), "{out}");
    assert!(
        out.contains("From the lab's latest run with its rows:") && out.contains("64x64x64"),
        "{out}"
    );
    std::fs::remove_dir_all(&lab).unwrap();
    // A latest run that does not read is said, not taken for no run at all.
    let broken = lab.join("runs").join("latest");
    std::fs::create_dir_all(&broken).unwrap();
    std::fs::write(broken.join("results.json"), "{ not json").unwrap();
    let o = Command::new(bin)
        .env("LAB_DIR", &lab)
        .args(["explain", "gemm-tiled"])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(o.status.success(), "{err}");
    assert!(
        err.contains("note: the lab's latest run does not read, so no figures: "),
        "{err}"
    );
    std::fs::remove_dir_all(&lab).unwrap();
}

/// A ladder page's table gives each rung's H100 estimate, as its section computes it, at the
/// shape the column names.
#[test]
fn a_ladder_page_lists_each_rungs_estimate() {
    let all = harness::registry::all();
    let results = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../results");
    let page = harness::cmd::docs::page(kernel::Workload::Reduce, &results);
    assert!(
        page.contains("| bound | H100 estimate at reduce 16777216 | walkthrough |"),
        "{}",
        &page[..page.len().min(2000)]
    );
    for k in harness::registry::for_workload(&all, kernel::Workload::Reduce)
        .into_iter()
        .filter(|k| k.info().role == kernel::Role::Rung)
    {
        let (shape, sol) = explain::estimate_of(&all, k);
        assert_eq!(shape.to_string(), "reduce 16777216");
        let cell = format!("| {:.4} ms, {} |", sol.ms, sol.bound);
        let id = k.info().id;
        let row = page
            .lines()
            .find(|l| l.contains(&format!("[`{id}`](#{id}) |")))
            .unwrap_or_else(|| panic!("no row of {id}"));
        assert!(row.contains(&cell), "{id}: {cell} not in {row}");
    }
}

/// A plan's launches beside the hot loop's, where they do no multiply-add, take the launch
/// model and add their time: rung 12 converts A and B to FP16 (each element read as 4 bytes
/// and written as 2) before rung 11's kernel.
#[test]
fn other_launches_without_multiply_adds_add_the_launch_models_time() {
    let all = harness::registry::all();
    let estimate = |id: &str| sol_of(&all, id);
    let (wmma, convert) = (
        estimate("gemm-wmma-fp16"),
        estimate("gemm-wmma-fp16-convert"),
    );
    let n = 4096.0 * 4096.0;
    let conversions = 2.0 * n * (4.0 + 2.0) / sol::h100::DRAM_BYTES_PER_S * 1e3;
    assert!(
        ((convert.ms - wmma.ms) - conversions).abs() < 1e-9,
        "{convert:?} against {wmma:?}: {conversions} ms of conversions"
    );
    assert_eq!(
        convert.bound, wmma.bound,
        "the GEMM is still the larger part"
    );
    let k = all
        .iter()
        .find(|k| k.info().id == "linear-unfused")
        .unwrap();
    let doc = explain::explain(&all, k.as_ref(), None, true);
    let text = text_of(&doc, "Speed of light on an H100");
    assert!(
        text.contains("other launches (bias_act; 1 launch) do no multiply-add"),
        "{text}"
    );
    assert!(!text.contains("not in this model"), "{text}");
}

/// The radial basis's unfused rung writes its Gaussians E to DRAM and, at the shape explain
/// estimates, reads them back from the L2 (fusion/README.md, the radial-basis expansion):
/// about twice the compulsory bytes, and more instructions than the fused rung, which the
/// compulsory bytes bind.
#[test]
fn the_unfused_radial_basis_writes_its_gaussians_and_reads_them_from_the_l2() {
    let all = harness::registry::all();
    let k = all.iter().find(|k| k.info().id == "rbf-unfused").unwrap();
    let plan = kernel::Kernel::cuda(k.as_ref(), &explain::estimate_of(&all, k.as_ref()).0).unwrap();
    let e = plan
        .scratch
        .iter()
        .map(kernel::Scratch::bytes)
        .max()
        .unwrap();
    assert!((e as f64) < sol::h100::L2_BYTES, "E fits in the L2: {e} B");
    let doc = explain::explain(&all, k.as_ref(), None, true);
    let text = text_of(&doc, "Speed of light on an H100");
    let (_, blocks) = doc
        .sections
        .iter()
        .find(|(t, _)| t == "Speed of light on an H100")
        .unwrap();
    let ms = |name: &str| -> f64 {
        blocks
            .iter()
            .find_map(|b| match b {
                Block::Table(head, rows) if head[0] == "ceiling" => rows
                    .iter()
                    .find(|r| r[0] == name)
                    .map(|r| r[3].parse().unwrap()),
                _ => None,
            })
            .unwrap_or_else(|| panic!("no {name} in {text}"))
    };
    let ratio = ms(sol::DRAM_LAUNCHES) / ms(sol::DRAM);
    assert!((1.9..2.1).contains(&ratio), "{ratio}: {text}");
    let estimate = |id: &str| sol_of(&all, id);
    let (unfused, fused) = (estimate("rbf-unfused"), estimate("rbf-fused"));
    assert_eq!(fused.bound, sol::DRAM, "{fused:?}");
    assert_eq!(unfused.bound, sol::ISSUE, "{unfused:?}");
    assert!(unfused.ms > fused.ms);
}

/// The speed of light of rung `id` as `explain` estimates it.
fn sol_of(all: &[Box<dyn kernel::Kernel>], id: &str) -> explain::Sol {
    let k = all.iter().find(|k| k.info().id == id).unwrap();
    explain::estimate_of(all, k.as_ref()).1
}

/// The simulator's counts of `id`'s plain global loads by whole warps.
fn whole_warp_loads(all: &[Box<dyn kernel::Kernel>], id: &str) -> kernel::GlobalRequests {
    let k = all.iter().find(|k| k.info().id == id).unwrap();
    explain::simulator_banks(all, k.as_ref())
        .unwrap_or_else(|e| panic!("{id}: {e}"))
        .global
        .whole_warp_loads
}

/// The naive GEMM's walkthrough (baseline/README.md, "What the H100 model sees"): a whole
/// warp's load of A touches 32 lines and one of B a line, the L1's lines bound the naive
/// rung's estimate and the H200's medians come within 3% of it; the tiled rung's loads are
/// coalesced, its estimate bound by shared memory, and the H200 beats it.
#[test]
fn the_naive_gemm_runs_at_the_speed_of_its_uncoalesced_loads() {
    let all = harness::registry::all();
    let naive = whole_warp_loads(&all, "gemm-naive");
    assert_eq!(naive.ideal_lines, naive.requests, "{naive:?}");
    assert_eq!(2 * naive.lines, 33 * naive.requests, "{naive:?}");
    let tiled = whole_warp_loads(&all, "gemm-tiled");
    assert_eq!(tiled.lines, tiled.ideal_lines, "{tiled:?}");

    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../results/nvidia-h200");
    let run = harness::results::RunResults::load(&dir).unwrap();
    let against = |id: &str| {
        let k = all.iter().find(|k| k.info().id == id).unwrap();
        let rows = explain::estimates_against(&all, k.as_ref(), &run);
        assert_eq!(rows.len(), 3, "{id}: the three sizes");
        rows
    };
    for (shape, sol, ms) in against("gemm-naive") {
        assert_eq!(sol.bound, sol::L1, "{shape}: {sol:?}");
        let share = sol.ms / ms;
        assert!((0.97..=1.0).contains(&share), "{shape}: {share}");
    }
    for (shape, sol, ms) in against("gemm-tiled") {
        assert_eq!(sol.bound, sol::SHARED, "{shape}: {sol:?}");
        assert!(sol.ms > ms, "{shape}: the H200 beats {sol:?} with {ms} ms");
    }
}

/// The row-wise rungs' walkthrough (fusion/README.md, "What the H100 model sees in the
/// row-wise rungs"): a naive rung's whole warp touches a line per lane loading its rows (the
/// layer normalization's gamma and beta a line), a warp rung's one or two; the naive rungs
/// are bound by the L1 and estimated slower than the warp rungs, which the L2 (layer
/// normalization) and DRAM (softmax) bound.
#[test]
fn the_naive_row_rungs_are_bound_by_the_l1_and_slower_than_the_warp_rungs() {
    let all = harness::registry::all();
    let softmax = whole_warp_loads(&all, "softmax-naive");
    assert_eq!(softmax.lines, 32 * softmax.requests, "{softmax:?}");
    // Per element: three loads of x (32 lines each), one of gamma and one of beta (1 each).
    let layernorm = whole_warp_loads(&all, "layernorm-naive");
    assert_eq!(
        5 * layernorm.lines,
        98 * layernorm.requests,
        "{layernorm:?}"
    );
    for id in ["layernorm-warp", "softmax-warp"] {
        let w = whole_warp_loads(&all, id);
        assert!(w.requests > 0 && w.lines <= 2 * w.requests, "{id}: {w:?}");
    }
    let estimate = |id: &str| sol_of(&all, id);
    for (naive, warp, bytes) in [
        ("layernorm-naive", "layernorm-warp", sol::L2),
        ("softmax-naive", "softmax-warp", sol::DRAM),
    ] {
        let (n, w) = (estimate(naive), estimate(warp));
        assert_eq!(n.bound, sol::L1, "{naive}: {n:?}");
        assert_eq!(w.bound, bytes, "{warp}: {w:?}");
        assert!(n.ms > w.ms, "{naive} {n:?}, {warp} {w:?}");
    }
}

/// Rungs 01 to 03 of attention compute every score of a causal shape and mask those past the
/// diagonal; rung 04 skips the masked tiles. The estimate scales by the work each does, so the
/// first three are estimated at a causal shape as at the full one, and rung 04 at about half.
#[test]
fn rungs_that_compute_masked_scores_are_estimated_at_the_work_they_do() {
    let all = harness::registry::all();
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../results/nvidia-h200");
    let run = harness::results::RunResults::load(&dir).unwrap();
    let by_mask = |id: &str| {
        let k = all.iter().find(|k| k.info().id == id).unwrap();
        let rows = explain::estimates_against(&all, k.as_ref(), &run);
        let at = |causal: bool| {
            rows.iter()
                .find(|(s, _, _)| {
                    matches!(s, kernel::Shape::Attention { causal: c, .. } if *c == causal)
                })
                .map(|(_, sol, _)| sol.ms)
                .unwrap_or_else(|| panic!("{id}: no timed shape with causal = {causal}"))
        };
        (at(false), at(true))
    };
    for id in ["attn-naive", "attn-flash-fp32", "attn-flash2-fp32"] {
        let (full, causal) = by_mask(id);
        assert_eq!(full, causal, "{id}");
    }
    let (full, causal) = by_mask("attn-flash2-causal");
    assert!(causal < 0.6 * full, "{full} {causal}");
}

/// The naive attention runs two kernels of multiply-adds: its scores read K a row a lane, its
/// product with V reads V coalesced. Each is modelled at its own half of the work with the
/// simulator's counts of that kernel alone, and the estimate is their sum.
#[test]
fn each_kernel_of_a_plan_is_modelled_at_its_own_work_and_coalescing() {
    let all = harness::registry::all();
    let k = all.iter().find(|k| k.info().id == "attn-naive").unwrap();
    let sim = explain::simulator_banks(&all, k.as_ref()).unwrap();
    let entries: Vec<&str> = sim.kernels.iter().map(|k| k.entry.as_str()).collect();
    assert_eq!(entries, ["attn_scores", "attn_softmax", "attn_pv"]);
    let over_ideal = |entry: &str| {
        let c = sim.kernels.iter().find(|k| k.entry == entry).unwrap();
        let l = c.global.whole_warp_loads;
        l.lines as f64 / l.ideal_lines as f64
    };
    assert!(over_ideal("attn_scores") > 4.0, "{sim:?}");
    assert_eq!(over_ideal("attn_pv"), 1.0, "{sim:?}");
    let doc = explain::explain(&all, k.as_ref(), None, true);
    let (_, coalescing) = doc
        .sections
        .iter()
        .find(|(t, _)| t == "Global coalescing in the simulator")
        .unwrap();
    let named: Vec<&str> = coalescing
        .iter()
        .flat_map(|b| match b {
            Block::Table(_, rows) => rows.iter().map(|r| r[0].as_str()).collect(),
            _ => Vec::new(),
        })
        .collect();
    assert!(named.contains(&"attn-naive: attn_scores"), "{named:?}");
    assert!(named.contains(&"attn-naive: attn_pv"), "{named:?}");
    let text = text_of(&doc, "Speed of light on an H100");
    let half = k.computed_flops(&explain::shape_of(k.as_ref()).1) / 2.0 / 1e9;
    assert!(
        text.contains(&format!(
            "The plan runs 2 kernels whose loops do multiply-adds: each is modelled by its own \
             hot loop at its part of the work (attn_scores {half:.3} GFLOP, attn_pv {half:.3} \
             GFLOP)"
        )),
        "{text}"
    );
    // Each kernel's line, and the sum of the two.
    let part = |entry: &str| -> (f64, String) {
        let line = text
            .lines()
            .find(|l| l.starts_with(&format!("{entry}: at best ")))
            .unwrap_or_else(|| panic!("no line of {entry}: {text}"));
        let ms = line[entry.len() + 10..].split(' ').next().unwrap();
        let bound = line
            .split("bound by ")
            .nth(1)
            .unwrap()
            .split(" at ")
            .next()
            .unwrap();
        (ms.parse().unwrap(), bound.to_string())
    };
    let (scores, scores_bound) = part("attn_scores");
    let (pv, pv_bound) = part("attn_pv");
    assert_eq!(scores_bound, sol::L1);
    assert_ne!(pv_bound, sol::L1);
    assert!(scores > pv, "{scores} {pv}");
    // The softmax's exp is multiply-adds too, but none of the workload's: the launch model
    // takes it.
    let softmax: f64 = text
        .split(
            "The plan's other launches (attn_softmax; 1 launch) do none of the workload's \
             multiply-adds: the launch model, each warp running its kernel once and each \
             launch's buffers crossing DRAM, puts them at ",
        )
        .nth(1)
        .unwrap_or_else(|| panic!("no softmax line: {text}"))
        .split(' ')
        .next()
        .unwrap()
        .parse()
        .unwrap();
    assert!(!text.contains("not in this model"), "{text}");
    // Its thread a row reads a line a lane: the launch model takes the softmax's own counts.
    assert!(text.contains("attn_softmax LDG x32.00"), "{text}");
    let sol = sol_of(&all, "attn-naive");
    assert!(
        text.contains(&format!(
            "Estimate: at best {:.4} ms, the sum of its kernels' (attn_scores {scores:.4} + \
             attn_pv {pv:.4} ms).",
            sol.ms
        )),
        "{text}"
    );
    assert!(
        (sol.ms - scores - pv - softmax).abs() < 1e-3,
        "{} {scores} {pv} {softmax}",
        sol.ms
    );
    assert_eq!(sol.bound, sol::L1);
}

/// A rung that splits its FLOP between kernels names kernels its plan launches, and its parts
/// add up to the work it does.
#[test]
fn a_rungs_flop_by_kernel_add_up_to_its_work() {
    let all = harness::registry::all();
    let mut split = 0;
    for k in &all {
        let shape = explain::shape_of(k.as_ref()).1;
        let parts = k.flops_by_kernel(&shape);
        if parts.is_empty() {
            continue;
        }
        split += 1;
        let id = k.info().id;
        let plan = k.cuda(&shape).unwrap_or_else(|| panic!("{id}: no plan"));
        for (entry, _) in &parts {
            assert!(
                plan.launches().any(|l| l.entry == *entry),
                "{id}: its plan launches no {entry}"
            );
        }
        let sum: f64 = parts.iter().map(|(_, f)| f).sum();
        let work = k.computed_flops(&shape);
        assert!((sum - work).abs() <= 1e-9 * work, "{id}: {sum} of {work}");
    }
    assert!(split > 0, "no rung splits its FLOP");
}

/// What the transpose rungs' headers say of their accesses, held to the simulator's counts:
/// rung 01's warps write 32 lines a store, rung 02's read their tile at 32 wavefronts a
/// request, and rungs 03 and 04 read and write it at one; so the model bounds 01 by the L1,
/// 02 by shared memory and 03 and 04 by DRAM.
#[test]
fn the_transpose_rungs_move_lines_and_banks_as_their_headers_say() {
    let all = harness::registry::all();
    let counts = |id: &str| {
        let k = all.iter().find(|k| k.info().id == id).unwrap();
        let sim = explain::simulator_banks(&all, k.as_ref()).unwrap();
        let (_, e) = explain::estimate_of(&all, k.as_ref());
        let stores = sim.global.whole_warp_stores;
        let lds = sim.banks.lds;
        (
            stores.lines as f64 / stores.requests as f64,
            lds.wavefronts as f64 / lds.requests.max(1) as f64,
            e.bound,
        )
    };
    assert_eq!(counts("transpose-naive"), (32.0, 0.0, sol::L1.to_string()));
    assert_eq!(
        counts("transpose-shared-tile"),
        (1.0, 32.0, sol::SHARED.to_string())
    );
    for id in ["transpose-padded", "transpose-swizzled"] {
        assert_eq!(counts(id), (1.0, 1.0, sol::DRAM.to_string()), "{id}");
    }
}
