//! The registers, spills, shared memory and occupancy that the walkthroughs' prose and the
//! rungs' header comments state in words, outside the tables `harness docs --figures`
//! generates: each sentence is quoted here as it stands, and NVRTC's ptxas report of the
//! rung (or of the copy of it the sentence describes: without `__launch_bounds__`, with the
//! filter in shared memory, with a loop unrolled) must give its figures. A sentence edited or
//! a compile that changes fails its test, so a figure in prose cannot drift from the code.
//! Needs NVRTC (tools/install-cuda-tools.sh), not a GPU.

use harness::cmd::inspect::inspect_shapes_of;
use harness::resources::{self, LaunchResources};
use kernel::{CudaPlan, Shape};
use restrict_unroll::{GemmTuned, TileConfig};
use std::path::Path;

/// Text as a sentence of it reads: a `.cu` file's `//` markers gone, every run of whitespace
/// one space.
fn prose(text: &str) -> String {
    text.lines()
        .map(|l| l.trim().trim_start_matches("//").trim())
        .collect::<Vec<_>>()
        .join(" ")
        .split_whitespace()
        .collect::<Vec<_>>()
        .join(" ")
}

/// Each `(file, sentence)` still says it: a sentence reworded needs its claim here reworded.
fn says(quotes: &[(&str, &str)]) {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    for (file, sentence) in quotes {
        let text =
            std::fs::read_to_string(root.join(file)).unwrap_or_else(|e| panic!("{file}: {e}"));
        assert!(
            prose(&text).contains(&prose(sentence)),
            "{file} no longer says \"{sentence}\": change the claim in this test with it"
        );
    }
}

/// A copy of a rung's source as a sentence describes it.
#[derive(Clone, Copy)]
enum Variant {
    /// The rung as it is.
    AsIs,
    /// Each `(from, to)` replaced in the source (each must occur), and each `(NAME, value)`
    /// define set.
    Edited(
        &'static [(&'static str, &'static str)],
        &'static [(&'static str, &'static str)],
    ),
}

/// The resources of rung `id`'s first launch on `arch` (`ID/ENTRY`: of its launch of ENTRY),
/// at the first shape `harness inspect` compiles it at (`ID[LABEL]`: at the shape `inspect`
/// labels so, as `attn-x[D=128]`), compiled from `variant`; `fresh` as [`first_launch`].
fn compile(id: &str, arch: &str, variant: Variant, fresh: Option<u32>) -> LaunchResources {
    let (id, entry) = match id.split_once('/') {
        Some((id, entry)) => (id, Some(entry)),
        None => (id, None),
    };
    let (rung, label) = match id.split_once('[') {
        Some((rung, label)) => (rung, Some(label.trim_end_matches(']'))),
        None => (id, None),
    };
    let all = harness::registry::all();
    let k = all
        .iter()
        .find(|k| k.info().id == rung)
        .unwrap_or_else(|| panic!("no kernel {rung} in the registry"));
    let (_, shape) = inspect_shapes_of(k.as_ref())
        .into_iter()
        .find(|(l, _)| label.is_none_or(|want| *l == want))
        .unwrap_or_else(|| panic!("{rung} is inspected at no shape labelled {label:?}"));
    let plan = k
        .cuda(&shape)
        .unwrap_or_else(|| panic!("{id} has no CUDA plan"));
    match entry {
        None => first_launch(id, plan, arch, variant, fresh),
        Some(entry) => launches(id, plan, arch, variant, fresh)
            .into_iter()
            .find(|l| l.entry == entry)
            .unwrap_or_else(|| panic!("{id} launches no {entry}")),
    }
}

/// The resources of `plan`'s first launch on `arch`, its sources edited as `variant` says.
/// `fresh`: `Some(n)` appends a comment naming `n` and this process, so that neither NVRTC's
/// memo nor the outputs kept on disk serve it.
fn first_launch(
    what: &str,
    plan: CudaPlan,
    arch: &str,
    variant: Variant,
    fresh: Option<u32>,
) -> LaunchResources {
    launches(what, plan, arch, variant, fresh)
        .into_iter()
        .next()
        .unwrap_or_else(|| panic!("{what} launches no kernel"))
}

/// The resources of each of `plan`'s launches, compiled as [`first_launch`] says.
fn launches(
    what: &str,
    mut plan: CudaPlan,
    arch: &str,
    variant: Variant,
    fresh: Option<u32>,
) -> Vec<LaunchResources> {
    for step in &mut plan.steps {
        let kernel::Step::Kernel(l) = step else {
            continue;
        };
        let mut code = l.source.code.to_string();
        if let Variant::Edited(edits, defines) = variant {
            for (from, to) in edits {
                assert!(code.contains(from), "{what}: the source has no `{from}`");
                code = code.replace(from, to);
            }
            for (name, value) in defines {
                let d = l
                    .source
                    .defines
                    .iter_mut()
                    .find(|(n, _)| n == name)
                    .unwrap_or_else(|| panic!("{what}: the plan defines no {name}"));
                d.1 = value.to_string();
            }
        }
        if let Some(n) = fresh {
            code.push_str(&format!(
                "\n// compile {n} in process {}\n",
                std::process::id()
            ));
        }
        l.source.code = code.into();
    }
    resources::of_plan(&plan, arch, None).unwrap_or_else(|e| panic!("{what} on {arch}: {e}"))
}

/// What a sentence says one compile gives; `None`: it says nothing of that figure.
#[derive(Clone, Copy, Default)]
struct Gives {
    registers: Option<u32>,
    /// A bound the registers stay within.
    at_most: Option<u32>,
    /// Bytes of spill stores.
    spill: Option<u32>,
    /// Shared memory per block, static and dynamic, in bytes.
    smem: Option<u32>,
    /// Theoretical occupancy, 0..=1.
    occupancy: Option<f64>,
}

impl Gives {
    fn regs(registers: u32) -> Self {
        Self {
            registers: Some(registers),
            ..Self::default()
        }
    }

    fn at_most(registers: u32) -> Self {
        Self {
            at_most: Some(registers),
            ..Self::default()
        }
    }

    fn spill(self, bytes: u32) -> Self {
        Self {
            spill: Some(bytes),
            ..self
        }
    }

    fn smem(self, bytes: u32) -> Self {
        Self {
            smem: Some(bytes),
            ..self
        }
    }

    fn occupancy(self, fraction: f64) -> Self {
        Self {
            occupancy: Some(fraction),
            ..self
        }
    }

    fn holds(&self, r: &LaunchResources) -> bool {
        self.registers.is_none_or(|n| n == r.registers)
            && self.at_most.is_none_or(|n| r.registers <= n)
            && self.spill.is_none_or(|s| s == r.spill_stores)
            && self.smem.is_none_or(|s| s == r.smem_bytes)
            && self
                .occupancy
                .is_none_or(|o| r.occupancy.is_some_and(|got| (got - o).abs() < 1e-9))
    }
}

/// Rung `id` compiled for `arch` from `variant` gives what `gives` says: in the compile this
/// process gets first (perhaps from the caches an earlier one filled), or, since ptxas now and then gives a second form of a program
/// depending on where its memory lies (`kernel::cuda::address_layout`), in one of two fresh
/// compiles. A claim true of no compile fails, showing what each gave.
fn gives(id: &str, arch: &str, variant: Variant, gives: Gives) {
    let first = compile(id, arch, variant, None);
    if gives.holds(&first) {
        return;
    }
    let again: Vec<LaunchResources> = (1..=2)
        .map(|n| compile(id, arch, variant, Some(n)))
        .collect();
    assert!(
        again.iter().any(|r| gives.holds(r)),
        "{id} on {arch}: the sentence's figures are not what ptxas gives:\n{}",
        std::iter::once(&first)
            .chain(&again)
            .map(|r| format!("  {}", r.columns()))
            .collect::<Vec<_>>()
            .join("\n")
    );
}

#[test]
fn rung_03_takes_the_registers_of_rung_02() {
    says(&[(
        "restrict-unroll/kernels/03_restrict_unroll.cu",
        "LDG.E.CONSTANT instead of LDG.E; registers (32) and every other instruction are the \
         same.",
    )]);
    for id in ["gemm-tiled", "gemm-restrict-unroll"] {
        gives(id, "sm_90", Variant::AsIs, Gives::regs(32));
    }
}

/// Rungs 05 and 08 without their `__launch_bounds__(256, 2)`.
const NO_BOUNDS: Variant = Variant::Edited(&[("__launch_bounds__(NTHREADS, 2)", "")], &[]);

#[test]
fn rung_05_spills_12_bytes_to_keep_two_blocks_where_sm_90_would_take_129_registers() {
    says(&[
        (
            "restrict-unroll/README.md",
            "Left to itself NVRTC gives it 128 registers on sm_80 but 129 on sm_90, where the \
             129th leaves room for one block of 256 threads per SM (12.5% occupancy) instead \
             of two.",
        ),
        (
            "restrict-unroll/README.md",
            "| no bounds | 128 registers, no spill, 2 blocks/SM | 129 registers, no spill, **1 \
             block/SM** |",
        ),
        (
            "restrict-unroll/README.md",
            "| `__launch_bounds__(256, 2)` (kept) | 128 registers, 12 B spill, 2 blocks/SM | 128 \
             registers, 12 B spill, 2 blocks/SM |",
        ),
        (
            "restrict-unroll/kernels/05_regblock_2d.cu",
            "Left to itself ptxas takes 128 a thread on sm_80 but 129 on sm_90, where the 129th \
             halves occupancy (one block of 256 per SM, 8 of 64 warps).",
        ),
        (
            "restrict-unroll/kernels/05_regblock_2d.cu",
            "so at most 128 registers everywhere; ptxas then spills 12 bytes",
        ),
    ]);
    let two_blocks = Gives::regs(128).spill(0).occupancy(0.25);
    gives("gemm-regblock-2d", "sm_80", NO_BOUNDS, two_blocks);
    let one_block = Gives::regs(129).spill(0).occupancy(0.125);
    gives("gemm-regblock-2d", "sm_90", NO_BOUNDS, one_block);
    for arch in ["sm_80", "sm_90"] {
        let kept = Gives::regs(128).spill(12).occupancy(0.25);
        gives("gemm-regblock-2d", arch, Variant::AsIs, kept);
    }
}

#[test]
fn rungs_06_and_07_take_127_registers_on_sm_90() {
    says(&[
        (
            "restrict-unroll/README.md",
            "(06 gets 127 registers, two blocks, by itself)",
        ),
        (
            "restrict-unroll/kernels/06_vectorized.cu",
            "Registers: 127 on sm_90 (rung 05: 128 with __launch_bounds__), 2 blocks of 256 per \
             SM on both",
        ),
        (
            "restrict-unroll/kernels/05_regblock_2d.cu",
            "as 06 gets 127 registers.",
        ),
        (
            "restrict-unroll/kernels/07_warptile.cu",
            "16 STG.E.128, 127 registers)",
        ),
        (
            "restrict-unroll/README.md",
            "with 256 threads of 127 registers only two blocks share an SM",
        ),
    ]);
    for id in ["gemm-vectorized", "gemm-warptile"] {
        gives(id, "sm_90", Variant::AsIs, Gives::regs(127).occupancy(0.25));
    }
    let two_blocks = Gives::default().occupancy(0.25);
    gives("gemm-vectorized", "sm_80", Variant::AsIs, two_blocks);
    // The same count as 06 on sm_90 only: on sm_80 07 takes 119 (the sentence of rung 08
    // below), 06 125.
    says(&[(
        "restrict-unroll/README.md",
        "(and the same register count on sm_90, `harness inspect`)",
    )]);
    gives("gemm-vectorized", "sm_80", Variant::AsIs, Gives::regs(125));
}

#[test]
fn rung_08_takes_151_registers_on_sm_90_without_its_bounds_and_123_with_them() {
    says(&[
        (
            "restrict-unroll/README.md",
            "it takes 151 registers on sm_90, 24 more than 07's 127 (129 on sm_80, against 07's \
             119), over the 128 that lets two 256-thread blocks share an SM",
        ),
        (
            "restrict-unroll/README.md",
            "the compiler then fits it in 123 registers on sm_90 and 127 on sm_80 with no \
             spills, 16384 B static shared memory, occupancy 25% (limited by registers), as 07.",
        ),
        (
            "restrict-unroll/kernels/08_double_buffer.cu",
            "shows 151 registers on sm_90, 24 more than 07's 127 and over the 128 that two \
             256-thread blocks per SM allow (129 on sm_80); __launch_bounds__(256, 2) holds it \
             to 123 (sm_90) and 127 (sm_80) without spilling, keeping 07's occupancy.",
        ),
    ]);
    gives("gemm-double-buffer", "sm_90", NO_BOUNDS, Gives::regs(151));
    gives("gemm-double-buffer", "sm_80", NO_BOUNDS, Gives::regs(129));
    gives("gemm-warptile", "sm_90", Variant::AsIs, Gives::regs(127));
    gives(
        "gemm-warptile",
        "sm_80",
        Variant::AsIs,
        Gives::regs(119).occupancy(0.25),
    );
    for (arch, registers) in [("sm_90", 123), ("sm_80", 127)] {
        let kept = Gives::regs(registers).spill(0).smem(16384).occupancy(0.25);
        gives("gemm-double-buffer", arch, Variant::AsIs, kept);
    }
}

#[test]
fn rung_09_at_08s_tile_shape_takes_127_registers_on_sm_90() {
    says(&[
        (
            "restrict-unroll/README.md",
            "(08's own shape: 127 registers, 16384 B)",
        ),
        (
            "restrict-unroll/README.md",
            "only differences in the resources table below are the registers (4 more on sm_90, \
             2 fewer on sm_80) at the same occupancy",
        ),
    ]);
    let own = Gives::regs(127).smem(16384).occupancy(0.25);
    gives("gemm-tuned", "sm_90", Variant::AsIs, own);
    gives(
        "gemm-double-buffer",
        "sm_90",
        Variant::AsIs,
        Gives::regs(123),
    );
    let on_sm_80 = Gives::regs(125).smem(16384).occupancy(0.25);
    gives("gemm-tuned", "sm_80", Variant::AsIs, on_sm_80);
    gives(
        "gemm-double-buffer",
        "sm_80",
        Variant::AsIs,
        Gives::regs(127),
    );
}

/// Conv rung 04 with its filter staged in shared memory, as for a filter over 64 KiB.
const FILTER_SHARED: Variant = Variant::Edited(&[], &[("FILTER_IN_CONSTANT", "0")]);

/// The same with the filter-row loop unrolled too (both of the file's loops over p).
const FILTER_SHARED_P_UNROLLED: Variant = Variant::Edited(
    &[(
        "#pragma unroll 1\n            for (int p = 0; p < KS; ++p)",
        "#pragma unroll\n            for (int p = 0; p < KS; ++p)",
    )],
    &[("FILTER_IN_CONSTANT", "0")],
);

#[test]
fn conv_rung_04_keeps_the_p_loop_rolled_and_pays_8_registers_for_its_constant_filter() {
    says(&[
        (
            "restrict-unroll/README.md",
            "With the filter in shared memory, unrolling all K*K taps hoists 49 loads and takes \
             98 registers (25% occupancy); unrolling one row takes 48 (62%), no spills:",
        ),
        (
            "restrict-unroll/kernels/conv/04_restrict_unroll.cu",
            "unrolling it too hoists all K*K loads and costs 98 registers (25% occupancy on \
             sm_90 for the second layer, filter in shared memory) instead of 48 (62%).",
        ),
        (
            "restrict-unroll/README.md",
            "The cost shows in `inspect`: 56 registers on sm_90 (50% occupancy) against 48 with \
             the shared-memory path.",
        ),
        (
            "restrict-unroll/README.md",
            "and so is the shared memory (0 B, against 4096 in rung 03 and 3136 in the \
             shared-memory path)",
        ),
        (
            "restrict-unroll/README.md",
            "`inspect` shows 56 registers, 0 B shared, 50% occupancy on sm_90 for both rows, \
             second layer",
        ),
    ]);
    let unrolled = Gives::regs(98).occupancy(0.25);
    gives(
        "conv-restrict-unroll",
        "sm_90",
        FILTER_SHARED_P_UNROLLED,
        unrolled,
    );
    let rolled = Gives::regs(48).spill(0).smem(3136).occupancy(0.625);
    gives("conv-restrict-unroll", "sm_90", FILTER_SHARED, rolled);
    gives(
        "conv-fused",
        "sm_90",
        Variant::AsIs,
        Gives::default().smem(4096),
    );
    for id in ["conv-restrict-unroll", "conv-streams"] {
        gives(
            id,
            "sm_90",
            Variant::AsIs,
            Gives::regs(56).smem(0).occupancy(0.5),
        );
    }
}

#[test]
fn rung_14s_padded_ring_takes_75776_bytes_where_15s_swizzled_one_takes_65536() {
    says(&[
        (
            "tensorcore/kernels/14_wmma_cp_async.cu",
            "Shared memory: 4 stages x (128x40 + 32x136) halves = 75776 B",
        ),
        (
            "tensorcore/kernels/15_mma_ldmatrix_swizzle.cu",
            "the padding keeps ldmatrix conflict-free but costs space (75776 B against 65536 B)",
        ),
        (
            "tensorcore/kernels/15_mma_ldmatrix_swizzle.cu",
            "a 4-stage cp.async ring (4 x 16 KB = 64 KB dynamic)",
        ),
    ]);
    for arch in ["sm_80", "sm_90"] {
        let g = Gives::default().smem(75776).spill(0);
        gives("gemm-wmma-cp-async", arch, Variant::AsIs, g);
        let g = Gives::default().smem(65536).spill(0);
        gives("gemm-mma-ldmatrix", arch, Variant::AsIs, g);
    }
}

/// Rung 14 loads its B fragments one at a time in the source; ptxas schedules the loads
/// itself, so loading all four first changes nothing in the registers.
#[test]
fn rung_14_takes_the_same_registers_with_its_b_fragments_loaded_all_at_once() {
    says(&[(
        "tensorcore/README.md",
        "a version that loads all four B fragments first takes the same registers",
    )]);
    const ALL_B_FIRST: Variant = Variant::Edited(
        &[
            (
                "#pragma unroll\n            for (int j = 0; j < 4; ++j) {",
                "wmma::fragment<wmma::matrix_b, 16, 16, 16, __half, wmma::row_major> bj[4];\n\
                 #pragma unroll\n            for (int j = 0; j < 4; ++j) \
                 wmma::load_matrix_sync(bj[j], bs + kk * LDB + j * 16, LDB);\n\
                 #pragma unroll\n            for (int j = 0; j < 4; ++j) {",
            ),
            (
                "wmma::fragment<wmma::matrix_b, 16, 16, 16, __half, wmma::row_major> b;",
                "",
            ),
            (
                "wmma::load_matrix_sync(b, bs + kk * LDB + j * 16, LDB);",
                "",
            ),
            (
                "wmma::mma_sync(acc[i][j], a[i], b, acc[i][j]);",
                "wmma::mma_sync(acc[i][j], a[i], bj[j], acc[i][j]);",
            ),
        ],
        &[],
    );
    for arch in ["sm_80", "sm_90"] {
        let as_is = compile("gemm-wmma-cp-async", arch, Variant::AsIs, None);
        let g = Gives::regs(as_is.registers).spill(0);
        gives("gemm-wmma-cp-async", arch, ALL_B_FIRST, g);
    }
}

#[test]
fn the_128x256_mma_rungs_take_one_block_per_sm_by_registers() {
    says(&[
        (
            "tensorcore/README.md",
            "256 threads, 98304 B dynamic shared memory, no stack, no spills; 237 registers on \
             sm_80, 240 on sm_90; occupancy 12% on both",
        ),
        (
            "tensorcore/README.md",
            "256 threads, 98432 B of shared memory (the ring and the arrival word), no spills; \
             254 registers on sm_80, 255 on sm_90",
        ),
    ]);
    for (arch, registers) in [("sm_80", 237), ("sm_90", 240)] {
        let g = Gives::regs(registers).spill(0).smem(98304).occupancy(0.125);
        gives("gemm-mma-128x256", arch, Variant::AsIs, g);
    }
    for (arch, registers) in [("sm_80", 254), ("sm_90", 255)] {
        let g = Gives::regs(registers).spill(0).smem(98432).occupancy(0.125);
        gives("gemm-mma-split-k", arch, Variant::AsIs, g);
    }
}

#[test]
fn rung_16s_3_stage_ring_keeps_two_blocks_per_sm_on_an_h100_and_one_on_an_a100() {
    says(&[
        (
            "tensorcore/kernels/16_mma_double_buffer.cu",
            "The ring shrinks to 3 stages to stay at two blocks per SM on an H100: 3 x 32 KB = \
             96 KB of dynamic shared memory (an A100, 164 KB per SM, fits one).",
        ),
        (
            "tensorcore/README.md",
            "To stay at two blocks per SM on an H100 the ring shrinks to 3 stages: 3 x 32 KB = \
             96 KB.",
        ),
        (
            "tensorcore/README.md",
            "On sm_80 one block fits per SM: an A100 has 164 KB of shared memory per SM (at most \
             163 KB a block), and two 96 KB rings do not fit.",
        ),
    ]);
    // Blocks of 4 warps: two per SM are 8 of 64 warps, one is 4.
    let two = Gives::default().smem(98304).occupancy(0.125);
    gives("gemm-mma-dbuf", "sm_90", Variant::AsIs, two);
    let one = Gives::default().smem(98304).occupancy(0.0625);
    gives("gemm-mma-dbuf", "sm_80", Variant::AsIs, one);
}

#[test]
fn rung_25_keeps_23s_shared_memory_and_occupancy_with_one_register_fewer() {
    says(&[(
        "tensorcore/README.md",
        "Shared memory and occupancy stay 23's, with one register fewer:",
    )]);
    // 197696 B and one block of 12 warps per SM (19%) for both; 157 registers, then 156.
    for (id, registers) in [("gemm-wgmma-l2-order", 157), ("gemm-wgmma-overlap", 156)] {
        let g = Gives::regs(registers).smem(197696).occupancy(0.1875);
        gives(id, "sm_90", Variant::AsIs, g);
    }
}

#[test]
fn the_wgmma_rungs_fit_their_accumulators_in_the_registers_their_warps_have() {
    says(&[
        (
            "tensorcore/kernels/21_wgmma_n256.cu",
            "they fit in the 168 registers each of the block's 384 threads may have (65536 / \
             384, rounded down to 8): `harness inspect` shows a count below that and no spill.",
        ),
        (
            "tensorcore/README.md",
            "the 168 registers each of 384 threads may have, without a spill",
        ),
        (
            "flash-attn/kernels/11_flash_wgmma.cu",
            "Without Q's fragments 128 registers suffice (__launch_bounds__(256, 2), no \
             spills), so two blocks fit per SM at HEAD_DIM 128",
        ),
        (
            "flash-attn/README.md",
            "Without Q's fragments the kernel fits in 128 registers, so `__launch_bounds__(256, \
             2)` gives two blocks per SM at D = 128 without spills",
        ),
    ]);
    // 384 threads share the register file of 65536: 170 each, 168 in the steps of 8 that
    // registers are allocated in.
    assert_eq!(65536 / 384 / 8 * 8, 168);
    gives(
        "gemm-wgmma-n256",
        "sm_90",
        Variant::AsIs,
        Gives::at_most(167).spill(0),
    );
    for id in [
        "attn-flash-wgmma-fp16[D=128]",
        "attn-flash-wgmma-bf16[D=128]",
    ] {
        let two_blocks = Gives::at_most(128).spill(0).occupancy(0.25);
        gives(id, "sm_90", Variant::AsIs, two_blocks);
    }
}

/// Attention rung 13 issues the next tile's scores on every step, its last tile's too; issued
/// only when a next tile exists, the groups of wgmma in flight depend on a branch and ptxas
/// serializes every wgmma of the kernel.
#[test]
fn attention_rung_13_issuing_scores_only_when_a_next_tile_exists_serializes_its_wgmma() {
    says(&[
        (
            "flash-attn/README.md",
            "issuing them only when there were made the number of `wgmma` groups in flight \
             depend on a branch, and ptxas then serialized every `wgmma` of the kernel (its \
             advisory C7515, which the compile tests refuse).",
        ),
        (
            "flash-attn/kernels/13_flash_wgmma_overlap.cu",
            "with the scores issued only when a next tile exists it serialized every wgmma of \
             the kernel",
        ),
    ]);
    const BRANCH: Variant = Variant::Edited(
        &[(
            "issue_scores(next ? it + 1 : it);",
            "if (next) issue_scores(it + 1);",
        )],
        &[],
    );
    for id in [
        "attn-flash-wgmma-overlap-fp16",
        "attn-flash-wgmma-overlap-bf16",
    ] {
        let as_is = compile(id, "sm_90", Variant::AsIs, None);
        assert!(as_is.advisories.is_empty(), "{id}: {:?}", as_is.advisories);
        let branch = compile(id, "sm_90", BRANCH, None);
        assert!(
            branch.advisories.iter().any(|a| a.starts_with("(C7515)")
                && a.contains("wgmma.mma_async instructions are serialized")),
            "{id}: {:?}",
            branch.advisories
        );
    }
}

/// Blocks of `threads` threads that `r`'s registers alone leave room for on an SM of 65536
/// registers (allocated per warp in steps of 256).
fn blocks_by_registers(r: &LaunchResources) -> u32 {
    let per_warp = (r.registers * 32).div_ceil(256) * 256;
    65536 / (per_warp * r.threads_per_block.div_ceil(32))
}

#[test]
fn attention_rung_07s_blocks_per_sm_are_what_its_walkthrough_says() {
    says(&[(
        "flash-attn/README.md",
        "on sm_80 at D = 64 the registers allow 3 blocks of 4 warps per multiprocessor; at D = \
         128 the block's shared memory leaves room for only one block in an A100's 164 KB, \
         although its registers would allow 2. On sm_90 (228 KB of shared memory) D = 128 fits \
         2 blocks.",
    )]);
    let r = compile("attn-flash2-mma-fp16[D=64]", "sm_80", Variant::AsIs, None);
    assert_eq!(
        (r.occupancy, blocks_by_registers(&r)),
        (Some(0.1875), 3),
        "{r:?}"
    );
    let r = compile("attn-flash2-mma-fp16[D=128]", "sm_80", Variant::AsIs, None);
    assert_eq!(
        (r.occupancy, blocks_by_registers(&r)),
        (Some(0.0625), 2),
        "{r:?}"
    );
    assert_eq!(r.occupancy_limiter.as_deref(), Some("shared memory"));
    let two_blocks = Gives::default().occupancy(0.125);
    gives(
        "attn-flash2-mma-fp16[D=128]",
        "sm_90",
        Variant::AsIs,
        two_blocks,
    );
}

#[test]
fn attention_rung_09_keeps_one_block_per_sm_and_spills_when_capped_for_two() {
    says(&[
        (
            "flash-attn/README.md",
            "One block of 8 warps per SM at both D, bound by registers: a second block would \
             need 128 registers a thread, and `__launch_bounds__(256, 2)` spills at D = 64 \
             already (48 B of spill stores on sm_90).",
        ),
        (
            "flash-attn/kernels/09_flash2_br128.cu",
            "One block of 8 warps per SM at either HEAD_DIM",
        ),
    ]);
    for d in ["D=64", "D=128"] {
        for arch in ["sm_80", "sm_90"] {
            let r = compile(
                &format!("attn-flash2-br128-fp16[{d}]"),
                arch,
                Variant::AsIs,
                None,
            );
            assert_eq!(r.threads_per_block, 256);
            assert_eq!(r.occupancy, Some(0.125), "{d} on {arch}: {r:?}");
            assert_eq!(r.occupancy_limiter.as_deref(), Some("registers"));
        }
    }
    const TWO_BLOCKS: Variant = Variant::Edited(
        &[(
            "__launch_bounds__(WARPS * 32)",
            "__launch_bounds__(WARPS * 32, 2)",
        )],
        &[],
    );
    let capped = Gives::at_most(128).spill(48);
    gives("attn-flash2-br128-fp16[D=64]", "sm_90", TWO_BLOCKS, capped);
}

#[test]
fn attention_rung_13_takes_129_kb_at_d_128_for_one_block_per_sm() {
    says(&[(
        "flash-attn/kernels/13_flash_wgmma_overlap.cu",
        "At HEAD_DIM 128 the stages and Q take 128 KB (129 KB with the alignment slack): one \
         block per SM",
    )]);
    // 128 KB of stages and Q, and 1 KB for aligning them to the swizzle's 1024 bytes.
    let one_block = Gives::default().smem(129 * 1024).occupancy(0.125);
    for id in [
        "attn-flash-wgmma-overlap-fp16[D=128]",
        "attn-flash-wgmma-overlap-bf16[D=128]",
    ] {
        gives(id, "sm_90", Variant::AsIs, one_block);
    }
}

#[test]
fn the_radial_basis_cutoff_has_no_stack_frame_where_cosf_would_keep_one() {
    says(&[(
        "fusion/kernels/rbf/01_unfused.cu",
        "The cutoff's cosine is cospif(d / r_c): cos(pi x) takes its argument in periods, so \
         the reduction is exact and has no slow path for large arguments, nor the stack frame \
         that cosf(pi * d / r_c) keeps for one.",
    )]);
    const COSF: Variant = Variant::Edited(&[("cospif(v / rc)", "cosf(3.14159265f * v / rc)")], &[]);
    for arch in ["sm_80", "sm_90"] {
        let r = compile("rbf-unfused/rbf_cutoff", arch, Variant::AsIs, None);
        assert_eq!(r.stack_bytes, 0, "{arch}: {r:?}");
        let r = compile("rbf-unfused/rbf_cutoff", arch, COSF, None);
        assert!(r.stack_bytes > 0, "{arch}: {r:?}");
    }
}

#[test]
fn a_sentence_reads_the_same_across_lines_and_comment_markers() {
    let header = "// Left to itself ptxas takes 128 a thread on sm_80\n//   but 129 on sm_90.\n";
    assert!(prose(header).contains(&prose("takes 128 a thread on sm_80 but 129 on sm_90.")));
    assert!(!prose(header).contains("takes 129"));
}

/// Rung 09's tuning grid on sm_90, each configuration compiled as `harness tune` compiles it.
fn tuning_grid(fresh: Option<u32>) -> Vec<(TileConfig, LaunchResources)> {
    TileConfig::grid()
        .into_iter()
        .map(|c| {
            let plan = kernel::Kernel::cuda(&GemmTuned::fixed(c), &Shape::square_gemm(4096))
                .unwrap_or_else(|| panic!("{c} has no CUDA plan"));
            (
                c,
                first_launch(&c.to_string(), plan, "sm_90", Variant::AsIs, fresh),
            )
        })
        .collect()
}

/// What the walkthrough says of the grid's compiles, or why it does not hold.
fn grid_as_told(grid: &[(TileConfig, LaunchResources)]) -> Result<(), String> {
    let regs = grid.iter().map(|(_, r)| r.registers);
    let smem = grid.iter().map(|(_, r)| r.smem_bytes);
    let span = (
        regs.clone().min(),
        regs.max(),
        smem.clone().min(),
        smem.max(),
    );
    if span != (Some(125), Some(250), Some(12 * 1024), Some(48 * 1024)) {
        return Err(format!("registers and shared memory span {span:?}"));
    }
    for (c, r) in grid {
        // 25% at 128 registers or fewer, 18.75% for 128-thread shapes up to 167, 12.5% above.
        let told = match (r.registers, r.threads_per_block) {
            (..=128, _) => 0.25,
            (..=167, 128) => 0.1875,
            _ => 0.125,
        };
        if r.occupancy != Some(told) || r.occupancy_limiter.as_deref() != Some("registers") {
            return Err(format!("{c}: {}", r.columns()));
        }
    }
    let example: Vec<(u32, u32)> = grid
        .iter()
        .filter(|(c, _)| (c.bm, c.bn, c.bk, c.wm, c.wn) == (256, 128, 16, 64, 64))
        .map(|(_, r)| (r.registers, r.smem_bytes))
        .collect();
    if !example.contains(&(225, 49152)) {
        return Err(format!(
            "256x128x16 with 64x64 warp tiles: (registers, shared bytes) {example:?}"
        ));
    }
    Ok(())
}

#[test]
fn rung_09s_tuning_grid_spans_the_registers_and_occupancies_the_walkthrough_gives() {
    says(&[(
        "restrict-unroll/README.md",
        "On sm_90 they span 125 to 250 registers and 12 to 48 KB of shared memory; theoretical \
         occupancy (limited by registers in every case) is 25% at 128 registers or fewer (08's \
         own shape: 127 registers, 16384 B), 18.75% for 128-thread shapes up to 167 registers, \
         and 12.5% above, for example 256x128x16 with 64x64 warp tiles at 225 registers and \
         49152 B.",
    )]);
    // Any configuration may have come out in ptxas's second form: the whole grid compiled
    // afresh once more decides.
    if let Err(first) = grid_as_told(&tuning_grid(None))
        && let Err(again) = grid_as_told(&tuning_grid(Some(1)))
    {
        panic!("the grid is not as told: {first}; compiled again: {again}");
    }
}
