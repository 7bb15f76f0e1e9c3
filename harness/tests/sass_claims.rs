//! The claims of the rungs' header comments that the SASS can decide, one test each,
//! against `harness::sass::Summary` of the NVRTC CUBIN for sm_90 (and the listing where the
//! summary has no column for the instruction). Each rung is compiled and disassembled once
//! per test binary. Needs NVRTC and nvdisasm (tools/install-cuda-tools.sh), not a GPU; without
//! them these tests fail, they never pass without having disassembled anything.

use harness::cmd::inspect::inspect_shapes_of;
use harness::sass::{self, Function, Summary};
use std::collections::HashMap;
use std::sync::{Arc, Mutex, OnceLock};

/// A rung's functions by entry name.
type Entries = Arc<HashMap<String, Function>>;

/// The SASS of every launch entry of rung `id` on sm_90, compiled on first use.
fn sass_of(id: &str) -> Entries {
    static CACHE: OnceLock<Mutex<HashMap<String, Entries>>> = OnceLock::new();
    // One compile at a time: the tests share the cache and NVRTC's memo.
    let mut cache = CACHE.get_or_init(Default::default).lock().unwrap();
    if let Some(x) = cache.get(id) {
        return x.clone();
    }
    let tool = sass::Disassembler::find()
        .unwrap_or_else(|e| panic!("{e}: run tools/install-cuda-tools.sh first"));
    let all = harness::registry::all();
    let k = all
        .iter()
        .find(|k| k.info().id == id)
        .unwrap_or_else(|| panic!("no kernel {id} in the registry"));
    // The shape `harness inspect` compiles the rung at first (attention at D = 64, where the
    // headers count; rung 28 at 1024^3, where it splits).
    let (_, shape) = inspect_shapes_of(k.as_ref())
        .into_iter()
        .next()
        .expect("every workload has an inspect shape");
    let plan = k
        .cuda(&shape)
        .unwrap_or_else(|| panic!("{id} has no CUDA plan"));
    let listings = sass::of_plan(&tool, &plan, "sm_90").unwrap_or_else(|e| panic!("{id}: {e}"));
    let map: HashMap<String, Function> = listings
        .into_iter()
        .map(|l| (l.entry, l.function))
        .collect();
    let map = Arc::new(map);
    cache.insert(id.to_string(), map.clone());
    map
}

/// The function of the entry `entry` of rung `id`, compiled afresh: each source of its plan
/// with a comment appended (`// compile N in process P`), so that neither NVRTC's memo nor
/// the outputs kept on disk by an earlier process serve a compile made before. ptxas has, rarely, given a second form of one program: `linear_gemm_xwt` with
/// 33 LDS (and 127 registers) where every other compile gives 32 (and 125); a claim that
/// compares two compiled programs is checked on fresh compiles before it is called false.
fn recompiled(id: &str, entry: &str, n: u32) -> Function {
    edited(id, entry, &[], Some(n))
}

/// The function of the entry `entry` of a copy of rung `id` with each `(from, to)` replaced
/// in its sources (each must occur); `fresh: Some(n)` compiles it afresh as [`recompiled`].
fn edited(id: &str, entry: &str, edits: &[(&str, &str)], fresh: Option<u32>) -> Function {
    let tool = sass::Disassembler::find()
        .unwrap_or_else(|e| panic!("{e}: run tools/install-cuda-tools.sh first"));
    let all = harness::registry::all();
    let k = all.iter().find(|k| k.info().id == id).unwrap();
    let (_, shape) = inspect_shapes_of(k.as_ref()).into_iter().next().unwrap();
    let mut plan = k.cuda(&shape).unwrap();
    for step in &mut plan.steps {
        if let kernel::Step::Kernel(l) = step {
            let mut code = l.source.code.to_string();
            for (from, to) in edits {
                assert!(code.contains(from), "{id}: the source has no `{from}`");
                code = code.replace(from, to);
            }
            if let Some(n) = fresh {
                code.push_str(&format!(
                    "\n// compile {n} in process {}\n",
                    std::process::id()
                ));
            }
            l.source.code = code.into();
        }
    }
    let listings = sass::of_plan(&tool, &plan, "sm_90").unwrap_or_else(|e| panic!("{id}: {e}"));
    listings
        .into_iter()
        .find(|l| l.entry == entry)
        .map(|l| l.function)
        .unwrap_or_else(|| panic!("{id} launches no {entry}"))
}

/// The function of the entry `entry` of rung `id`.
fn function(id: &str, entry: &str) -> Function {
    sass_of(id)
        .get(entry)
        .cloned()
        .unwrap_or_else(|| panic!("{id} launches no {entry}"))
}

/// The summary of a rung launching one kernel.
fn summary(id: &str) -> Summary {
    let all = sass_of(id);
    assert_eq!(
        all.len(),
        1,
        "{id} launches several kernels: name the entry"
    );
    all.values().next().unwrap().summary
}

/// The executed instructions of a listing (no labels, no `@!PT` padding), opcode first.
fn instructions(f: &Function) -> Vec<String> {
    f.sass
        .lines()
        .filter_map(|l| l.split_once("*/").map(|(_, i)| i.trim().to_string()))
        .filter(|i| !i.starts_with("@!PT"))
        .map(|i| {
            // Drop a predicate (`@P0 `) so the opcode comes first.
            match i.strip_prefix('@') {
                Some(rest) => rest
                    .split_once(' ')
                    .map_or(rest.to_string(), |x| x.1.to_string()),
                None => i,
            }
        })
        .collect()
}

/// A listing's labels (as `.L_x_N`) and instructions (predicate dropped, no `@!PT` padding),
/// in order.
fn labelled_instructions(f: &Function) -> Vec<String> {
    f.sass
        .lines()
        .filter_map(|l| {
            let t = l.trim();
            match t.split_once("*/") {
                Some((_, i)) => {
                    let i = i.trim();
                    (!i.starts_with("@!PT")).then(|| {
                        i.strip_prefix('@')
                            .and_then(|r| r.split_once(' ').map(|x| x.1))
                            .unwrap_or(i)
                            .to_string()
                    })
                }
                None => t.strip_suffix(':').map(str::to_string),
            }
        })
        .collect()
}

/// The instructions of the innermost loop holding every instruction whose opcode starts with
/// `op`: from the label a backward branch jumps to, to that branch.
fn loop_around(f: &Function, op: &str) -> Vec<String> {
    let items = labelled_instructions(f);
    let hits: Vec<usize> = (0..items.len())
        .filter(|&i| items[i].starts_with(op))
        .collect();
    assert!(!hits.is_empty(), "no {op} in {}", f.name);
    loop_spanning(f, &items, hits[0], hits[hits.len() - 1], op)
}

/// The instructions of the first loop holding an instruction whose opcode is `op`: where a
/// kernel has several loops with such instructions, as rung 27's two copies of its k-tile.
fn loop_around_first(f: &Function, op: &str) -> Vec<String> {
    let items = labelled_instructions(f);
    let first = items
        .iter()
        .position(|x| opcode(x) == op)
        .unwrap_or_else(|| panic!("no {op} in {}", f.name));
    loop_spanning(f, &items, first, first, op)
}

/// The innermost loop of `items` holding positions `first..=last`: from the label a backward
/// branch jumps to, to that branch, labels left out.
fn loop_spanning(
    f: &Function,
    items: &[String],
    first: usize,
    last: usize,
    op: &str,
) -> Vec<String> {
    let (start, end) = loop_range(f, items, first, last, op);
    without_labels(&items[start..=end])
}

/// Where in `items` the loop of [`loop_spanning`] starts and ends.
fn loop_range(
    f: &Function,
    items: &[String],
    first: usize,
    last: usize,
    op: &str,
) -> (usize, usize) {
    (last..items.len())
        .filter(|&j| opcode(&items[j]) == "BRA")
        .filter_map(|j| {
            let t = branch_target(items, j)?;
            (t <= first).then_some((t, j))
        })
        .min_by_key(|(t, j)| j - t)
        .unwrap_or_else(|| panic!("no loop around the {op} of {}", f.name))
}

/// Where in `items` the label lies that the branch at `j` jumps to.
fn branch_target(items: &[String], j: usize) -> Option<usize> {
    let target = items[j].split(['(', ')']).nth(1)?;
    items.iter().position(|x| x == target)
}

fn without_labels(items: &[String]) -> Vec<String> {
    items
        .iter()
        .filter(|x| !x.starts_with(".L"))
        .cloned()
        .collect()
}

/// The blocks a loop's body branches out to and back from, as ptxas places a conditional part
/// of a loop (rung 19's copies) after the function's code: from each label that a branch
/// inside `start..=end` jumps to outside it, to the first branch after that label back into
/// the loop; labels left out.
fn blocks_out_of(items: &[String], (start, end): (usize, usize)) -> Vec<Vec<String>> {
    let inside = |t: usize| (start..=end).contains(&t);
    (start..=end)
        .filter(|&j| opcode(&items[j]) == "BRA")
        .filter_map(|j| branch_target(items, j).filter(|&t| !inside(t)))
        .map(|t| {
            let back = (t..items.len())
                .find(|&k| {
                    opcode(&items[k]) == "BRA" && branch_target(items, k).is_some_and(inside)
                })
                .expect("an out-of-line block returns to its loop");
            without_labels(&items[t..=back])
        })
        .collect()
}

fn count_in(instructions: &[String], prefix: &str) -> usize {
    instructions
        .iter()
        .filter(|i| opcode(i).starts_with(prefix))
        .count()
}

fn opcode(i: &str) -> &str {
    i.split([' ', ';']).next().unwrap_or("")
}

fn count_opcode(f: &Function, op: &str) -> usize {
    count_opcode_in(&instructions(f), op)
}

fn count_opcode_in(instructions: &[String], op: &str) -> usize {
    instructions.iter().filter(|i| opcode(i) == op).count()
}

#[test]
fn rung_01_ptxas_unrolls_the_k_loop_into_16_8_4_and_1_steps() {
    // "the sm_90 SASS has a 16-FFMA loop body and 8-, 4- and 1-step remainders"
    assert_eq!(summary("gemm-naive").ffma, 16 + 8 + 4 + 1);
}

#[test]
fn rung_02_tile_loop_is_unrolled_into_32_ffma_8_lds128_and_32_scalar_lds() {
    let s = summary("gemm-tiled");
    assert_eq!((s.ffma, s.lds128, s.lds - s.lds128), (32, 8, 32), "{s:?}");
}

#[test]
fn rung_03_changes_only_the_global_loads_of_rung_02_to_read_only() {
    let (a, b) = (summary("gemm-tiled"), summary("gemm-restrict-unroll"));
    assert_eq!(
        a.ldg_constant, 0,
        "rung 02 already reads through the read-only path"
    );
    assert_eq!(
        b.ldg_constant, b.ldg,
        "rung 03 has a load that is not read-only"
    );
    assert_eq!(b.ldg, 2, "the two global loads, of A and of B");
    // Every other count is the same: the unroll changed nothing.
    assert_eq!(
        Summary {
            ldg_constant: b.ldg_constant,
            ..a
        },
        b
    );
}

#[test]
fn rung_04_issues_3_shared_loads_per_8_ffma_against_5_per_4_in_rung_03() {
    let (a, b) = (summary("gemm-restrict-unroll"), summary("gemm-regblock-1d"));
    assert_eq!(
        (a.lds * 4, b.lds * 8),
        (a.ffma * 5, b.ffma * 3),
        "03 {a:?}\n04 {b:?}"
    );
    assert_eq!((b.ffma, b.lds128, b.lds - b.lds128), (64, 16, 8), "{b:?}");
}

#[test]
fn rung_05_shared_loads_are_all_128_bit_and_global_memory_stays_scalar() {
    let s = summary("gemm-regblock-2d");
    assert_eq!((s.ffma, s.lds, s.lds128), (512, 32, 32), "{s:?}");
    assert_eq!((s.ldg, s.ldg_constant, s.ldg128), (8, 8, 0), "{s:?}");
    assert_eq!((s.stg, s.stg128), (64, 0), "{s:?}");
    // The 12 spilled bytes: stored once, reloaded by 3 LDL per K step.
    assert_eq!(s.ldl, 3, "{s:?}");
}

#[test]
fn rung_06_moves_float4s_in_global_memory_and_issues_the_shared_loads_of_rung_05() {
    let (a, b) = (summary("gemm-regblock-2d"), summary("gemm-vectorized"));
    assert_eq!((b.ldg, b.ldg128, b.ldg_constant), (2, 2, 2), "{b:?}");
    assert_eq!((a.ldg, b.stg, b.stg128, a.stg), (8, 16, 16, 64));
    // "buys no shared-load instructions": 32 LDS.128 for 512 FFMA in both.
    assert_eq!((a.lds, a.lds128, a.ffma), (b.lds, b.lds128, b.ffma));
}

#[test]
fn rung_07_has_the_instruction_mix_of_rung_06() {
    let (a, b) = (summary("gemm-vectorized"), summary("gemm-warptile"));
    let mix = |s: Summary| (s.ffma, s.lds, s.lds128, s.ldg, s.ldg128, s.stg, s.stg128);
    assert_eq!(mix(a), mix(b));
    assert_eq!(mix(b), (512, 32, 32, 2, 2, 16, 16));
}

#[test]
fn rung_10_is_4_tf32_hmma_per_mma_sync_fed_by_generic_loads() {
    let f = function("gemm-wmma-tf32", "gemm_wmma_tf32");
    let s = f.summary;
    // 2 k8 steps of 2 x 2 fragments, 4 HMMA.1684 each, per K step of 16.
    assert_eq!(s.hmma, 32, "{s:?}");
    assert_eq!(count_opcode(&f, "HMMA.1684.F32.TF32"), 32);
    // The fragments come by generic LD.E, neither LDS nor ldmatrix.
    assert_eq!((s.ld_generic, s.ldsm), (32, 0), "{s:?}");
    // __float_to_tf32 is 2 instructions per value, a finite test and a rounding integer add:
    // 32 values of A and B fragments per thread and K step.
    let k_step = loop_around(&f, "HMMA");
    let count = |op: &str| k_step.iter().filter(|i| opcode(i) == op).count();
    assert_eq!((count("FSETP.GEU.AND"), count("IMAD.IADD.U32")), (32, 32));
    // Staging is scalar: one float per read-only LDG and per STS.
    assert!(
        s.ldg > 0 && s.ldg == count_opcode(&f, "LDG.E.CONSTANT") as u32,
        "{s:?}"
    );
    assert!(
        s.sts > 0 && s.sts == count_opcode(&f, "STS") as u32,
        "{s:?}"
    );
}

#[test]
fn rung_11_is_2_fp16_hmma_per_mma_sync_fed_by_ldmatrix_and_stages_one_element_per_load() {
    let (tf32, f) = (
        summary("gemm-wmma-tf32"),
        function("gemm-wmma-fp16", "gemm_wmma_fp16"),
    );
    let s = f.summary;
    assert_eq!(count_opcode(&f, "HMMA.16816.F32"), 16);
    // Per unit of K rung 10 issues 4x as many: 32 per 16 of K against 16 per 32.
    assert_eq!(tf32.hmma * 32, 4 * s.hmma * 16);
    assert_eq!((s.ldsm, s.ld_generic), (8, 0), "{s:?}");
    // Staging moves one 16-bit element per global load and per shared store (the STS.64
    // are the epilogue's).
    assert_eq!(
        count_opcode(&f, "LDG.E.U16.CONSTANT") as u32,
        s.ldg,
        "{s:?}"
    );
    assert!(count_opcode(&f, "STS.U16") > 0);
    assert_eq!(
        count_opcode(&f, "STS.U16") + count_opcode(&f, "STS.64"),
        s.sts as usize,
        "{s:?}"
    );
}

#[test]
fn rung_12_converts_an_element_with_one_load_one_pack_and_one_16_bit_store() {
    let f = function("gemm-wmma-fp16-convert", "f32_to_f16");
    assert_eq!(
        (
            count_opcode(&f, "LDG.E.CONSTANT"),
            count_opcode(&f, "F2FP.F16.F32.PACK_AB"),
            count_opcode(&f, "STG.E.U16")
        ),
        (1, 1, 1)
    );
    assert_eq!((f.summary.ldg, f.summary.stg), (1, 1), "{:?}", f.summary);
}

#[test]
fn rung_13_converts_a_pair_with_one_64_bit_load_one_pack_and_one_32_bit_store() {
    let f = function("gemm-wmma-fp16-half2", "f32_to_f16_half2");
    // The pair loop, plus the odd last element converted alone as in rung 12.
    assert_eq!(
        (
            count_opcode(&f, "LDG.E.64.CONSTANT"),
            count_opcode(&f, "STG.E")
        ),
        (1, 1)
    );
    assert_eq!(
        (
            count_opcode(&f, "LDG.E.CONSTANT"),
            count_opcode(&f, "STG.E.U16")
        ),
        (1, 1)
    );
    assert_eq!(count_opcode(&f, "F2FP.F16.F32.PACK_AB"), 2);
}

#[test]
fn rung_15_main_loop_issues_the_hmma_ldsm_and_ldgsts_of_rung_14() {
    let (a, b) = (summary("gemm-wmma-cp-async"), summary("gemm-mma-ldmatrix"));
    let main = |s: Summary| (s.hmma, s.ldsm, s.ldgsts);
    assert_eq!(main(a), main(b));
    assert_eq!(main(b), (64, 16, 32), "in each function");
    // Per k-tile: 8 of the 32 copies; the other 24 fill the ring's first three stages.
    for (id, entry) in [
        ("gemm-wmma-cp-async", "gemm_wmma_cp_async"),
        ("gemm-mma-ldmatrix", "gemm_mma_ldmatrix"),
    ] {
        let l = loop_around(&function(id, entry), "HMMA");
        let k_tile = ["HMMA", "LDSM", "LDGSTS"].map(|op| count_in(&l, op));
        assert_eq!(k_tile, [64, 16, 8], "{id}");
    }
}

#[test]
fn rung_19_k_tile_is_64_hmma_with_one_barrier_after_the_first_33() {
    let f = function("gemm-mma-128x256", "gemm_mma_128x256");
    let ins = instructions(&f);
    let hmma: Vec<usize> = (0..ins.len())
        .filter(|&i| opcode(&ins[i]) == "HMMA.16816.F32")
        .collect();
    assert_eq!(hmma.len(), 64);
    let (first, last) = (hmma[0], hmma[63]);
    let bars: Vec<usize> = (first..last)
        .filter(|&i| opcode(&ins[i]).starts_with("BAR.SYNC"))
        .collect();
    assert_eq!(bars.len(), 1, "barriers among the HMMA: {bars:?}");
    assert_eq!(hmma.iter().filter(|&&h| h < bars[0]).count(), 33);
    // The k-tile's loop: 8 LDSM and 8 LDSM.MT (x4), 6 LDGSTS, and (rung 27's header) several
    // other instructions per HMMA.
    let tile = loop_around_first(&f, "HMMA.16816.F32");
    let count = |op: &str| tile.iter().filter(|i| opcode(i) == op).count();
    assert_eq!((count("LDSM.16.M88.4"), count("LDSM.16.MT88.4")), (8, 8));
    assert_eq!(count_in(&tile, "LDGSTS"), 6);
    let other = tile.len() - 64 - 16 - 6 - 1;
    assert!(other >= 3 * 64, "{other} other instructions per 64 HMMA");
}

/// `LDSM` of a k-tile's loop issued before its first `HMMA`, and in all.
fn ldsm_before_first_hmma(f: &Function) -> (usize, usize) {
    let l = loop_around(f, "HMMA");
    let first = l
        .iter()
        .position(|i| opcode(i).starts_with("HMMA"))
        .unwrap();
    (count_in(&l[..first], "LDSM"), count_in(&l, "LDSM"))
}

/// Rung 16's header and walkthrough: ptxas overlaps 15's loads by itself, 11 of a k-tile's 16
/// `LDSM` before the first `HMMA` (one k16 step needs 8), the rest among them; 16's k-tile
/// issues 8 before its first `HMMA` and the other 24 among its 128.
#[test]
fn rung_15s_ldmatrix_already_overlap_its_hmma_as_16s_double_buffering_writes_out() {
    let rungs = [
        ("gemm-mma-ldmatrix", "gemm_mma_ldmatrix"),
        ("gemm-mma-dbuf", "gemm_mma_double_buffer"),
    ];
    let told = [(11, 16), (8, 32)];
    let now = rungs.map(|(id, entry)| ldsm_before_first_hmma(&function(id, entry)));
    if now != told {
        // Either program may have come out in ptxas's second form: compile both again.
        let again = rungs.map(|(id, entry)| ldsm_before_first_hmma(&recompiled(id, entry, 1)));
        assert_eq!(
            again, told,
            "(LDSM before the first HMMA, LDSM) per k-tile; first {now:?}"
        );
    }
}

/// Rungs 16 and 19 with the 2-byte fallback of their copies compiled out (K and N multiples
/// of 8, aligned bases), as their walkthrough counts them.
const VECTOR_COPIES: [(&str, &str); 2] = [
    (
        "const bool a_vec = K % 8 == 0 && (size_t)A % 16 == 0;",
        "const bool a_vec = true;",
    ),
    (
        "const bool b_vec = N % 8 == 0 && (size_t)B % 16 == 0;",
        "const bool b_vec = true;",
    ),
];

/// The walkthrough under rung 19: the loop around its 64 HMMA is 146 instructions, the copy
/// block it branches to 161 with its 6 LDGSTS, where 16's loop is 733 per 128 HMMA (366 per
/// 64) with its copies inside.
#[test]
fn rung_19_issues_fewer_instructions_per_hmma_than_rung_16() {
    let loop_of = |id: &str, entry: &str, fresh| {
        let f = edited(id, entry, &VECTOR_COPIES, fresh);
        let items = labelled_instructions(&f);
        let first = items
            .iter()
            .position(|x| opcode(x) == "HMMA.16816.F32")
            .unwrap();
        let range = loop_range(&f, &items, first, first, "HMMA.16816.F32");
        let l = without_labels(&items[range.0..=range.1]);
        let out: Vec<(usize, usize)> = blocks_out_of(&items, range)
            .iter()
            .map(|b| (count_in(b, "LDGSTS"), b.len()))
            .collect();
        (count_in(&l, "HMMA.16816.F32"), l.len(), out)
    };
    let told = [(64, 146, vec![(6, 161)]), (128, 733, vec![])];
    let now = |fresh| {
        [
            loop_of("gemm-mma-128x256", "gemm_mma_128x256", fresh),
            loop_of("gemm-mma-dbuf", "gemm_mma_double_buffer", fresh),
        ]
    };
    // Either program may have come out in ptxas's second form: compile both again.
    let first = now(None);
    if first != told {
        let again = now(Some(1));
        assert_eq!(
            again, told,
            "(HMMA, instructions, and (LDGSTS, instructions) of each block branched to) of 19's and 16's loops; first {first:?}"
        );
    }
}

/// Rung 27's header: the loop of k-tiles whose refill lies inside A and B is the k-tile's 64
/// HMMA, 16 LDSM, 6 plain 16-byte LDGSTS (no zero-fill: no byte count to work out) and one
/// barrier, with fewer than one other instruction per HMMA (rung 19's loop, copies included,
/// has several). The edge loop keeps 19's bounds-checked copies.
#[test]
fn rung_27_inner_k_tile_loop_is_its_hmma_ldsm_and_copies_with_little_else() {
    let f = function("gemm-mma-hoisted", "gemm_mma_hoisted");
    let inner = loop_around_first(&f, "HMMA.16816.F32");
    let count = |op: &str| inner.iter().filter(|i| opcode(i) == op).count();
    assert_eq!(count("HMMA.16816.F32"), 64, "{inner:#?}");
    assert_eq!((count("LDSM.16.M88.4"), count("LDSM.16.MT88.4")), (8, 8));
    assert_eq!(count("LDGSTS.E.BYPASS.LTC128B.128"), 6);
    assert_eq!(
        count_in(&inner, "LDGSTS"),
        6,
        "only plain copies in this loop"
    );
    assert_eq!(count_in(&inner, "BAR.SYNC"), 1);
    assert_eq!(
        count_in(&inner, "LDG.E"),
        0,
        "no 2-byte fallback in this loop"
    );
    let other = inner.len() - 64 - 16 - 6 - 1;
    assert!(
        other < 64,
        "{other} other instructions in the loop: {inner:#?}"
    );
    // The edge loop still zero-fills its tails.
    assert!(count_opcode(&f, "LDGSTS.E.BYPASS.LTC128B.128.ZFILL") > 0);
}

#[test]
fn rung_24_multicasts_half_of_b_and_releases_each_stage_in_both_blocks() {
    let f = function("gemm-wgmma-cluster", "gemm_wgmma_cluster");
    let ins = instructions(&f);
    let count = |op: &str| ins.iter().filter(|i| opcode(i) == op).count();
    // Per k-tile: the block's own A box, and two of B's four boxes multicast to the cluster.
    assert_eq!((count("UTMALDG.2D"), count("UTMALDG.2D.MULTICAST")), (1, 2));
    // Each consumer warp arrives on the stage's `empty` barrier in both blocks (mapa + a
    // remote arrive compile to one SYNCS.ARRIVE...RED each).
    let arrive = ins
        .iter()
        .filter(|i| opcode(i).starts_with("SYNCS.ARRIVE.TRANS64.RED"))
        .count();
    assert_eq!(arrive, 2);
    // Two cluster barriers (after the init, before the exit).
    assert!(
        count("UCGABAR_ARV") >= 2 && count("UCGABAR_WAIT") >= 2,
        "{ins:?}"
    );
    // Rung 23 has neither the multicast nor the cluster barrier.
    let parent = instructions(&function("gemm-wgmma-l2-order", "gemm_wgmma_l2_order"));
    assert!(
        !parent
            .iter()
            .any(|i| opcode(i).contains("MULTICAST") || opcode(i).starts_with("UCGABAR"))
    );
}

/// The wgmma of a k-tile issue back to back: no `WARPGROUP.DEPBAR` between two HGMMA, only
/// after the last (lab/hopper.h has no call that would make ptxas serialize them).
#[test]
fn every_wgmma_rung_issues_a_k_tiles_wgmma_back_to_back() {
    for (id, entry) in [
        ("gemm-wgmma-tma", "gemm_wgmma_tma"),
        ("gemm-wgmma-n256", "gemm_wgmma_n256"),
        ("gemm-wgmma-persistent", "gemm_wgmma_persistent"),
        ("gemm-wgmma-l2-order", "gemm_wgmma_l2_order"),
        ("gemm-wgmma-cluster", "gemm_wgmma_cluster"),
        ("gemm-wgmma-overlap", "gemm_wgmma_overlap"),
        ("gemm-wgmma-cluster-cta", "gemm_wgmma_cluster_cta"),
    ] {
        let ins = instructions(&function(id, entry));
        let hgmma: Vec<usize> = (0..ins.len())
            .filter(|&i| opcode(&ins[i]).starts_with("HGMMA"))
            .collect();
        assert_eq!(
            hgmma.len(),
            4,
            "{id}: one k-tile of BK = 64 is four k16 steps"
        );
        let waits = (hgmma[0]..hgmma[3])
            .filter(|&i| opcode(&ins[i]).starts_with("WARPGROUP.DEPBAR"))
            .count();
        assert_eq!(waits, 0, "{id}: {:?}", &ins[hgmma[0]..=hgmma[3]]);
    }
}

/// Rung 18's header: a warpgroup multiplies "a 64x128x16 step" per wgmma and there is "no
/// __syncthreads in the main loop" (the stages are handed over by mbarriers); rung 21's: "one
/// wgmma m64n256k16 a k16 step instead of m64n128k16".
#[test]
fn rungs_18_and_21_issue_their_wgmma_shape_with_no_barrier_in_the_k_tile_loop() {
    for (id, entry, shape) in [
        (
            "gemm-wgmma-tma",
            "gemm_wgmma_tma",
            "HGMMA.64x128x16.F32.BF16",
        ),
        (
            "gemm-wgmma-n256",
            "gemm_wgmma_n256",
            "HGMMA.64x256x16.F32.BF16",
        ),
    ] {
        let f = function(id, entry);
        assert_eq!(count_opcode(&f, shape), 4, "{id}");
        let k_loop = loop_around(&f, "HGMMA");
        assert_eq!(count_in(&k_loop, "HGMMA"), 4, "{id}");
        assert_eq!(count_in(&k_loop, "BAR"), 0, "{id}: {k_loop:#?}");
        assert!(
            count_in(&k_loop, "SYNCS") > 0,
            "{id}: the loop waits on and frees its stages through mbarriers"
        );
    }
}

/// Rung 18's header: a consumer warp's k-tile loop is about 25 instructions per k16 step,
/// where 17's k-tile loop holds about 390 per k16 step (ldmatrix, mma.sync, the copies with
/// their guarded fallbacks, addresses): the instructions in the loop, not those an aligned
/// shape issues.
#[test]
fn rung_18s_loop_holds_a_fifteenth_of_17s_instructions_per_k16_step() {
    let per_step = |id: &str, entry: &str, op: &str, per_step: usize| {
        let l = loop_around(&function(id, entry), op);
        l.len() as f64 / (count_in(&l, op) / per_step) as f64
    };
    let wgmma = per_step("gemm-wgmma-tma", "gemm_wgmma_tma", "HGMMA", 1);
    let mma = per_step("gemm-mma-bf16", "gemm_mma_bf16", "HMMA", 32);
    assert!(
        (22.5..27.5).contains(&wgmma),
        "{wgmma} instructions per k16 step"
    );
    assert!(
        (370.0..410.0).contains(&mma),
        "{mma} instructions per k16 step"
    );
}

/// The walkthrough under rung 18: `HGMMA ... gdesc[..].tnspB` (4 per k-tile), `UTMALDG.2D`
/// for the copies, `SYNCS.*` for the mbarriers, "and no `LDG`, `LDS`, `LDSM` or `HMMA` at all".
#[test]
fn rung_18_reads_its_operands_through_tma_and_descriptors_alone() {
    let f = function("gemm-wgmma-tma", "gemm_wgmma_tma");
    let ins = instructions(&f);
    let hgmma: Vec<&String> = ins
        .iter()
        .filter(|i| opcode(i).starts_with("HGMMA"))
        .collect();
    assert!(
        hgmma.len() == 4
            && hgmma
                .iter()
                .all(|i| i.contains("gdesc[") && i.contains(".tnspB")),
        "{hgmma:?}"
    );
    // One box of A and two of B (64 columns each) per k-tile.
    assert_eq!(count_opcode(&f, "UTMALDG.2D"), 3);
    assert!(count_in(&ins, "SYNCS") > 0);
    for op in ["LDG", "LDS", "LDSM", "HMMA"] {
        assert_eq!(count_in(&ins, op), 0, "{op}");
    }
}

/// Rung 21's header: "no setmaxnreg here"; rung 22's: "no barrier separates two tiles" (its
/// one `BAR.SYNC` follows the mbarriers' initialisation).
#[test]
fn rung_21_sets_no_register_split_and_22_no_barrier_between_tiles() {
    let n256 = instructions(&function("gemm-wgmma-n256", "gemm_wgmma_n256"));
    assert_eq!(count_in(&n256, "USETMAXREG"), 0);
    let persistent = function("gemm-wgmma-persistent", "gemm_wgmma_persistent");
    let ins = instructions(&persistent);
    let bars: Vec<usize> = (0..ins.len())
        .filter(|&i| opcode(&ins[i]).starts_with("BAR"))
        .collect();
    let first_hgmma = ins
        .iter()
        .position(|i| opcode(i).starts_with("HGMMA"))
        .unwrap();
    assert!(
        bars.len() == 1 && bars[0] < first_hgmma,
        "barriers at {bars:?}, first HGMMA at {first_hgmma}"
    );
}

/// Rung 17's header: the ring, the swizzle, ldmatrix and the double buffering stay 16's, "only
/// the instruction becomes mma.sync...bf16": the two functions issue the same instructions
/// but for the HMMA's type.
#[test]
fn rung_17_is_rung_16_with_bf16_hmma() {
    let histogram = |f: &Function| {
        let mut h = std::collections::BTreeMap::<String, usize>::new();
        for i in instructions(f) {
            let op = opcode(&i).replace("HMMA.16816.F32.BF16", "HMMA.16816.F32");
            *h.entry(op).or_default() += 1;
        }
        h
    };
    let (fp16, bf16) = (
        function("gemm-mma-dbuf", "gemm_mma_double_buffer"),
        function("gemm-mma-bf16", "gemm_mma_bf16"),
    );
    assert_eq!(count_opcode(&bf16, "HMMA.16816.F32.BF16"), 128);
    if histogram(&fp16) != histogram(&bf16) {
        // Either program may have come out in ptxas's second form: compile both again.
        let again = (
            recompiled("gemm-mma-dbuf", "gemm_mma_double_buffer", 1),
            recompiled("gemm-mma-bf16", "gemm_mma_bf16", 1),
        );
        assert_eq!(histogram(&again.0), histogram(&again.1));
    }
}

/// The walkthrough under rung 20: "In the SASS the main loop is 19's (64 HMMA, 16 LDSM, 6
/// LDGSTS, one BAR per k-tile)".
#[test]
fn rung_20_main_loop_is_rung_19s() {
    let k_tile = |id: &str, entry: &str| {
        let l = loop_around_first(&function(id, entry), "HMMA.16816.F32");
        ["HMMA", "LDSM", "LDGSTS", "BAR"].map(|op| count_in(&l, op))
    };
    let split = k_tile("gemm-mma-split-k", "gemm_mma_split_k");
    assert_eq!(split, [64, 16, 6, 1]);
    assert_eq!(split, k_tile("gemm-mma-128x256", "gemm_mma_128x256"));
}

#[test]
fn rung_26_frees_the_partners_stage_without_the_fence_of_rung_24() {
    // "a release at cluster scope compiles to a fence first, MEMBAR.ALL.CTA, MEMBAR.ALL.GPU,
    // ERRBAR and CGAERRBAR, before each of the two arrivals ... in the SASS the two arrivals
    // follow each other with no fence (the fences of the cluster barriers at the kernel's
    // start and end stay)"
    let arrivals = |ins: &[String]| -> Vec<usize> {
        (0..ins.len())
            .filter(|&i| opcode(&ins[i]).starts_with("SYNCS.ARRIVE.TRANS64.RED"))
            .collect()
    };
    let fences = |ins: &[String]| {
        let n = count_opcode_in(ins, "ERRBAR");
        assert_eq!(
            count_opcode_in(ins, "MEMBAR.ALL.GPU"),
            n,
            "each fence is whole"
        );
        n
    };
    let ins = instructions(&function("gemm-wgmma-cluster", "gemm_wgmma_cluster"));
    let at = arrivals(&ins);
    assert_eq!(at.len(), 2);
    for &i in &at {
        assert_eq!(
            [i - 4, i - 3, i - 2, i - 1].map(|j| opcode(&ins[j])),
            ["MEMBAR.ALL.CTA", "MEMBAR.ALL.GPU", "ERRBAR", "CGAERRBAR"],
            "24 fences each arrival"
        );
    }
    let fenced = fences(&ins);
    let ins = instructions(&function(
        "gemm-wgmma-cluster-cta",
        "gemm_wgmma_cluster_cta",
    ));
    let at = arrivals(&ins);
    assert_eq!(at.len(), 2);
    assert_eq!(at[1], at[0] + 1, "26's arrivals follow each other");
    assert_eq!(
        (fenced, fences(&ins)),
        (4, 2),
        "24's two fences at the start and end and one per arrival; 26's at the start and end"
    );
}

#[test]
fn rung_25_leaves_one_group_of_wgmma_in_flight() {
    // "the consumer waits with wait_group 1": the k-tile's wait lets one group run on; the
    // tile's last wait (before the epilogue) is wait_group 0. Rung 23 waits for none.
    let waits = |id: &str, entry: &str| -> Vec<String> {
        instructions(&function(id, entry))
            .into_iter()
            .filter(|i| opcode(i).starts_with("WARPGROUP.DEPBAR"))
            .collect()
    };
    let w = waits("gemm-wgmma-overlap", "gemm_wgmma_overlap");
    assert!(w.iter().any(|i| i.contains("gsb0, 0x1")), "{w:?}");
    assert!(w.iter().any(|i| i.contains("gsb0, 0x0")), "{w:?}");
    let parent = waits("gemm-wgmma-l2-order", "gemm_wgmma_l2_order");
    assert!(parent.iter().all(|i| i.contains("gsb0, 0x0")), "{parent:?}");
}

#[test]
fn rung_20_each_threadfence_is_membar_sc_gpu_errbar_cgaerrbar_then_cctl_ivall() {
    let f = function("gemm-mma-split-k", "gemm_mma_split_k");
    let ins = instructions(&f);
    let fences: Vec<usize> = (0..ins.len())
        .filter(|&i| opcode(&ins[i]) == "MEMBAR.SC.GPU")
        .collect();
    // Two __threadfence() in the source.
    assert_eq!(fences.len(), 2);
    for &m in &fences {
        // The fence's other two instructions, then the invalidation of L1.
        assert_eq!(
            [m + 1, m + 2, m + 3].map(|j| opcode(&ins[j])),
            ["ERRBAR", "CGAERRBAR", "CCTL.IVALL"],
            "after the fence at {m}"
        );
    }
}

#[test]
fn rung_09_tile_loop_drops_07s_range_tests_and_folds_the_scale_into_one_ffma_per_score() {
    let (a, b) = (
        function("attn-flash2-mma-fp16", "attn_flash2_mma_fp16"),
        function("attn-flash2-br128-fp16", "attn_flash2_br128_fp16"),
    );
    let (la, lb) = (loop_around(&a, "MUFU.EX2"), loop_around(&b, "MUFU.EX2"));
    // 07: 164 FMUL, 64 FADD and 34 range tests (FSETP.GEU against -126) around 34 MUFU.EX2.
    assert_eq!(
        (
            count_in(&la, "MUFU.EX2"),
            count_in(&la, "FMUL"),
            count_in(&la, "FADD"),
            count_in(&la, "FSETP.GEU")
        ),
        (34, 164, 64, 34)
    );
    // 09: 34 FMUL, 30 FADD, 36 FFMA and no range test.
    assert_eq!(
        (
            count_in(&lb, "MUFU.EX2"),
            count_in(&lb, "FMUL"),
            count_in(&lb, "FADD"),
            count_in(&lb, "FFMA"),
            count_in(&lb, "FSETP.GEU")
        ),
        (34, 34, 30, 36, 0)
    );
    // Its only FSETP compare row maxima with -inf, as 2 of 07's do.
    let not_against_inf = |l: &[String]| {
        l.iter()
            .filter(|i| opcode(i).starts_with("FSETP"))
            .filter(|i| !i.contains("-INF"))
            .count()
    };
    assert_eq!(not_against_inf(&lb), 0);
    assert_eq!(
        (count_in(&lb, "FSETP"), count_in(&la, "FSETP") - 34),
        (4, 2)
    );
}

#[test]
fn rung_09_issues_one_barrier_per_tile_where_07_issues_two() {
    let (a, b) = (
        function("attn-flash2-mma-fp16", "attn_flash2_mma_fp16"),
        function("attn-flash2-br128-fp16", "attn_flash2_br128_fp16"),
    );
    let (la, lb) = (loop_around(&a, "MUFU.EX2"), loop_around(&b, "MUFU.EX2"));
    assert_eq!(
        (count_in(&la, "BAR.SYNC"), count_in(&lb, "BAR.SYNC")),
        (2, 1)
    );
}

#[test]
fn attention_rung_11_tile_loop_is_wgmma_from_shared_memory_without_ldmatrix() {
    let (a, b) = (
        function("attn-flash2-br128-fp16", "attn_flash2_br128_fp16"),
        function("attn-flash-wgmma-fp16", "attn_flash_wgmma_fp16"),
    );
    let (la, lb) = (loop_around(&a, "MUFU.EX2"), loop_around(&b, "MUFU.EX2"));
    // HEAD_DIM 64, a tile of 64 keys. 09, per warp: S in 32 mma.sync and 16 ldmatrix of K
    // (and Q's 4, on the first tile), P V in 32 mma.sync and 16 ldmatrix.trans of V.
    assert_eq!(
        (
            count_in(&la, "HMMA"),
            count_in(&la, "LDSM.16.M88"),
            count_in(&la, "LDSM.16.MT88")
        ),
        (64, 20, 16)
    );
    // 11, per warpgroup: S in 4 wgmma m64n64k16 (a k16 step each), P V in 4 (16 keys each)
    // with P from registers; no ldmatrix, no mma.sync, still one barrier per tile.
    let p_from_registers = lb
        .iter()
        .filter(|i| opcode(i).starts_with("HGMMA"))
        .filter(|i| {
            i.split(',')
                .nth(1)
                .is_some_and(|o| o.trim().starts_with('R'))
        })
        .count();
    // The descriptors are built before the loop from warp-uniform values: none is moved from a
    // thread's registers into the uniform registers wgmma reads (R2UR) inside it.
    assert_eq!(
        (
            count_in(&lb, "HGMMA.64x64x16"),
            p_from_registers,
            count_in(&lb, "LDSM"),
            count_in(&lb, "HMMA"),
            count_in(&lb, "BAR.SYNC"),
            count_in(&lb, "R2UR")
        ),
        (8, 4, 0, 0, 1, 0)
    );
}

#[test]
fn attention_rung_13_computes_the_next_softmax_while_its_p_v_runs() {
    let f = function(
        "attn-flash-wgmma-overlap-fp16",
        "attn_flash_wgmma_overlap_fp16",
    );
    let items = labelled_instructions(&f);
    // The tile loop is the loop around P V, the wgmma with P from registers (the scores of
    // tile 0 come before the loop).
    let pv = items
        .iter()
        .position(|i| {
            opcode(i).starts_with("HGMMA")
                && i.split(',')
                    .nth(1)
                    .is_some_and(|o| o.trim().starts_with('R'))
        })
        .expect("a wgmma with A from registers");
    let l = loop_spanning(&f, &items, pv, pv, "HGMMA");
    // HEAD_DIM 64: the next tile's scores (4 wgmma) and this tile's P V (4) issued together,
    // then a wait that leaves one group (P V) in flight, the exponentials of the next softmax,
    // and only then the wait for everything.
    let at = |text: &str| {
        l.iter()
            .position(|i| opcode(i) == "WARPGROUP.DEPBAR.LE" && i.contains(text))
            .unwrap_or_else(|| panic!("no wait on `{text}` in the tile loop"))
    };
    let (one_left, none_left) = (at("gsb0, 0x1"), at("gsb0, 0x0"));
    assert_eq!(count_in(&l, "HGMMA.64x64x16"), 8);
    assert_eq!(
        count_in(&l[..one_left], "HGMMA"),
        8,
        "every wgmma before the first wait"
    );
    assert!(
        one_left < none_left && count_in(&l[one_left..none_left], "MUFU.EX2") == 34,
        "the softmax's 34 exponentials per thread (32 for P, 2 for the rescale) between the two waits"
    );
    // "once with one group left in flight (gsb0, 0x1) and once for all": no other wait.
    assert_eq!(count_in(&l, "WARPGROUP.DEPBAR"), 2, "{l:#?}");
    assert_eq!(count_in(&l, "BAR.SYNC"), 1);
}

#[test]
fn conv_rung_04_decodes_its_taps_without_integer_divisions_in_the_inner_loop() {
    // A division by a runtime value is an I2F.U32.RP / MUFU.RCP sequence; by a define, a
    // multiply-high.
    let (a, b) = (
        function("conv-fused", "conv_fused"),
        function("conv-restrict-unroll", "conv_restrict_unroll"),
    );
    let (la, lb) = (loop_around(&a, "FFMA"), loop_around(&b, "FFMA"));
    assert!(
        count_in(&la, "MUFU.RCP") > 0,
        "rung 03 divides in its tap loop"
    );
    assert_eq!(count_in(&lb, "MUFU.RCP") + count_in(&lb, "I2F.U32.RP"), 0);
}

#[test]
fn conv_rung_04_reads_weights_from_constant_memory_without_shared_memory_or_barriers() {
    let (a, b) = (
        function("conv-fused", "conv_fused"),
        function("conv-restrict-unroll", "conv_restrict_unroll"),
    );
    // Rung 03 stages the filter in shared memory behind two barriers per 64 filter columns.
    assert!(a.summary.sts > 0 && a.summary.lds > 0, "{:?}", a.summary);
    assert_eq!(count_opcode(&a, "BAR.SYNC.DEFER_BLOCKING"), 2);
    assert_eq!((b.summary.lds, b.summary.sts), (0, 0), "{:?}", b.summary);
    assert_eq!(count_in(&instructions(&b), "BAR"), 0);
}

#[test]
fn conv_rung_04_global_loads_all_take_the_read_only_path() {
    let (a, b) = (summary("conv-fused"), summary("conv-restrict-unroll"));
    assert_eq!(a.ldg_constant, 0, "rung 03 has no __restrict__");
    assert!(b.ldg > 0);
    assert_eq!(b.ldg_constant, b.ldg, "{b:?}");
}

/// The SASS of rung 04's kernel compiled for one layer (`C`, `M`, 7 x 7 filter): its
/// defines, not the batch or the image size, decide the code.
fn conv_04_at(c: usize, m: usize) -> Function {
    let all = harness::registry::all();
    let k = all
        .iter()
        .find(|k| k.info().id == "conv-restrict-unroll")
        .expect("rung 04 is registered");
    let shape = kernel::Shape::Conv {
        b: 1,
        c,
        m,
        h: 40,
        w: 40,
        k: 7,
    };
    let plan = k.cuda(&shape).expect("rung 04 has a CUDA plan");
    let tool = sass::Disassembler::find()
        .unwrap_or_else(|e| panic!("{e}: run tools/install-cuda-tools.sh first"));
    sass::of_plan(&tool, &plan, "sm_90")
        .unwrap_or_else(|e| panic!("{e}"))
        .into_iter()
        .find(|l| l.entry == "conv_restrict_unroll")
        .expect("rung 04 launches conv_restrict_unroll")
        .function
}

#[test]
fn conv_rung_04_loads_every_weight_with_its_own_register_addressed_ldc_on_both_layers() {
    // The walkthrough's explanation of the second layer on the H200: the weight index
    // depends on blockIdx.y (the map clamp) and on the rolled p and c loops, so each weight
    // of the unrolled filter row is an `LDC R, c[0x3][R+imm]` and no FFMA reads it as an
    // immediate constant operand. The same on the first layer (C = 1, M = 4) at a quarter
    // of the width.
    for (c, m) in [(1, 4), (4, 16)] {
        let f = conv_04_at(c, m);
        let l = loop_around(&f, "FFMA");
        let ffma = count_in(&l, "FFMA");
        let ldc_indexed = l
            .iter()
            .filter(|i| opcode(i) == "LDC" && i.contains("c[0x3][R"))
            .count();
        assert_eq!(ffma, 7 * m, "one filter row of BM = {m} maps per pass");
        assert_eq!(ldc_indexed, ffma, "C = {c}, M = {m}: one LDC per FFMA");
        assert!(
            !l.iter()
                .any(|i| opcode(i) == "FFMA" && i.contains("c[0x3]")),
            "no weight as a constant-bank operand"
        );
        assert_eq!(count_in(&l, "LDS"), 0);
    }
    // Rung 03 loads its weights from shared memory, one LDS per FFMA, and each gathered value
    // goes into BM = 16 of them.
    let l = loop_around(&function("conv-fused", "conv_fused"), "FFMA");
    assert_eq!(count_in(&l, "LDS"), count_in(&l, "FFMA"));
    assert_eq!(
        (count_in(&l, "LDG"), count_in(&l, "FFMA")),
        (1, 16),
        "{l:#?}"
    );
}

/// conv 05's header: per step of 16 taps each warp multiplies the filter fragment by two U
/// fragments per k8 (m16n16k8 TF32); conv 06's: "One m16n16k16 MMA covers a whole BK = 16
/// step where TF32 needed two k8 steps". A TF32 m16n16k8 is 4 HMMA.1684, an FP16 m16n16k16 2
/// HMMA.16816.
#[test]
fn conv_rung_06_covers_a_step_with_one_k16_mma_per_fragment_where_05_needs_two_k8() {
    let tf32 = function("conv-wmma-tf32", "conv_wmma_tf32");
    let fp16 = function("conv-wmma-fp16", "conv_wmma_fp16");
    assert_eq!(count_opcode(&tf32, "HMMA.1684.F32.TF32"), 2 * 2 * 4);
    assert_eq!(tf32.summary.hmma, 16, "{:?}", tf32.summary);
    assert_eq!(count_opcode(&fp16, "HMMA.16816.F32"), 2 * 2);
    assert_eq!(fp16.summary.hmma, 4, "{:?}", fp16.summary);
}

#[test]
fn conv_rung_05_decodes_its_taps_by_constants() {
    let f = function("conv-wmma-tf32", "conv_wmma_tf32");
    let l = loop_around(&f, "HMMA");
    assert_eq!(count_in(&l, "MUFU.RCP") + count_in(&l, "I2F.U32.RP"), 0);
}

#[test]
fn attention_rung_07_keeps_scores_p_and_the_output_in_registers() {
    let (a, b) = (
        summary("attn-flash2-wmma-fp16"),
        summary("attn-flash2-mma-fp16"),
    );
    // Rung 05 goes through shared memory for the softmax; 07 reads shared memory only by
    // ldmatrix (Q, K and V, which cp.async put there) and never stores to it.
    assert!(a.sts > 0 && a.lds > 0, "{a:?}");
    assert_eq!((b.lds, b.sts), (0, 0), "{b:?}");
    assert!(b.ldsm > 0 && b.ldgsts > 0, "{b:?}");
}

#[test]
fn attention_rung_07_reduces_a_row_over_the_4_lanes_of_a_quad() {
    let f = function("attn-flash2-mma-fp16", "attn_flash2_mma_fp16");
    let shuffles: Vec<String> = instructions(&f)
        .into_iter()
        .filter(|i| opcode(i).starts_with("SHFL"))
        .collect();
    assert!(!shuffles.is_empty());
    for i in &shuffles {
        // `SHFL.BFLY PT, Rd, Rs, LANEMASK, 0x1f`: xor 1 or 2 only.
        let mask = i.split(',').nth(3).map(str::trim);
        assert!(
            opcode(i) == "SHFL.BFLY" && matches!(mask, Some("0x1" | "0x2")),
            "{i}"
        );
    }
}

/// Whether `holds` is true of the function `entry` of rung `id` as first compiled or, where
/// not, of one of two fresh compiles: this binary's tests compile while others run beside
/// them, and ptxas, which NVRTC runs in the process, turns out a few programs in a rare
/// second form depending on where its memory lies (a linear rung's main loop once had an
/// extra scalar LDS in CI). A claim true of no compile fails.
fn holds_in_a_compile(id: &str, entry: &str, holds: impl Fn(&Function) -> bool) -> bool {
    holds(&function(id, entry)) || (1..=2).any(|n| holds(&recompiled(id, entry, n)))
}

/// The main loops of two kernels (`(rung, entry)`) issue the same instructions: FFMA, shared
/// and global loads, shared stores and barriers.
fn same_main_loop(a: (&str, &str), b: (&str, &str)) {
    let mix = |f: &Function| {
        let l = loop_around(f, "LDS");
        ["FFMA", "LDS", "LDG", "STS", "BAR"].map(|op| count_in(&l, op))
    };
    let (ma, mb) = (mix(&function(a.0, a.1)), mix(&function(b.0, b.1)));
    assert!(ma[0] > 0);
    if ma != mb {
        // Either program may have come out in ptxas's rare second form: compile both again.
        eprintln!("main loops {ma:?} and {mb:?} differ; compiling both again");
        let again = (1..=2).map(|n| (mix(&recompiled(a.0, a.1, n)), mix(&recompiled(b.0, b.1, n))));
        let seen: Vec<_> = again.collect();
        assert!(
            seen.iter().any(|(a, b)| a == b),
            "the main loops differ in every compile: {ma:?} vs {mb:?}, then {seen:?}"
        );
    }
}

#[test]
fn linear_rung_03_main_loop_is_rung_02s_gemm_unchanged() {
    same_main_loop(
        ("linear-unfused", "linear_gemm_xwt"),
        ("linear-fused", "linear_fused"),
    );
}

/// Rungs 04 and 05 change addresses, not instructions: padding moves the rows of the tiles,
/// warp tiling which thread reads which float4. Their main loops issue rung 03's.
#[test]
fn linear_rungs_04_and_05_move_addresses_not_instructions() {
    same_main_loop(
        ("linear-fused", "linear_fused"),
        ("linear-fused-padded", "linear_fused_padded"),
    );
    same_main_loop(
        ("linear-fused-padded", "linear_fused_padded"),
        ("linear-fused-warptile", "linear_fused_warptile"),
    );
    let float4 = |f: &Function| f.summary.lds128 > 0 && f.summary.lds == f.summary.lds128;
    assert!(
        holds_in_a_compile("linear-fused-warptile", "linear_fused_warptile", float4),
        "float4 reads stay LDS.128: {:?}",
        summary("linear-fused-warptile")
    );
}

/// The `SHFL` instructions of a function, as `(opcode, lane mask)`.
fn shuffles(f: &Function) -> Vec<(String, String)> {
    instructions(f)
        .into_iter()
        .filter(|i| opcode(i).starts_with("SHFL"))
        .map(|i| {
            // `SHFL.BFLY PT, Rd, Rs, LANEMASK, 0x1f`
            let mask = i.split(',').nth(3).map_or("", str::trim).to_string();
            (opcode(&i).to_string(), mask)
        })
        .collect()
}

/// The element-wise rung 03's header: per four elements "one 128-bit load of X, one of R and
/// one of b and one 128-bit store of Y"; the scalar path for N % 4 != 0 keeps 02's loads.
#[test]
fn eltwise_rung_03_moves_four_elements_per_128_bit_load_and_store() {
    let f = function("eltwise-fused-vec4", "eltwise_fused_vec4");
    assert_eq!(count_opcode(&f, "LDG.E.128.CONSTANT"), 3);
    assert_eq!(count_opcode(&f, "STG.E.128"), 1);
    let parent = function("eltwise-fused", "eltwise_fused");
    assert_eq!((parent.summary.ldg128, parent.summary.stg128), (0, 0));
}

#[test]
fn row_rungs_02_reduce_a_row_in_five_butterfly_steps_without_shared_memory() {
    // layernorm-warp: two sums (the mean's, the variance's), one value each per step;
    // softmax-warp: one merge of two values (the maximum and the sum) per step.
    for (id, entry, per_step) in [
        ("layernorm-warp", "layernorm_warp", 2),
        ("softmax-warp", "softmax_warp", 2),
    ] {
        let f = function(id, entry);
        let sh = shuffles(&f);
        assert_eq!(sh.len(), 5 * per_step, "{id}: {sh:?}");
        for (op, mask) in &sh {
            assert!(
                op == "SHFL.BFLY"
                    && matches!(mask.as_str(), "0x10" | "0x8" | "0x4" | "0x2" | "0x1"),
                "{id}: {op} {mask}"
            );
        }
        let s = f.summary;
        assert_eq!((s.lds, s.sts), (0, 0), "{id}: {s:?}");
        assert_eq!(count_in(&instructions(&f), "BAR"), 0, "{id}");
    }
    // The thread-per-row rungs reduce in one thread: no shuffles.
    for (id, entry) in [
        ("layernorm-naive", "layernorm_naive"),
        ("softmax-naive", "softmax_naive"),
    ] {
        assert!(shuffles(&function(id, entry)).is_empty(), "{id}");
    }
}

#[test]
fn rung_28_reduces_through_generic_128_bit_loads_after_one_named_and_one_cluster_barrier() {
    // "block z reads rows ... of every block's partial through distributed shared memory
    // (mapa), adds them in block order ... and stores those rows of C as float4"; "a named
    // barrier of its two consumers", "then two of the cluster".
    let f = function("gemm-wgmma-split-k", "gemm_wgmma_split_k");
    let ins = instructions(&f);
    let loads: Vec<&String> = ins
        .iter()
        .filter(|i| opcode(i).starts_with("LD."))
        .collect();
    assert!(
        !loads.is_empty() && loads.iter().all(|i| opcode(i) == "LD.E.128"),
        "{loads:?}"
    );
    let stores: Vec<&String> = ins
        .iter()
        .filter(|i| opcode(i).starts_with("STG"))
        .collect();
    assert!(
        !stores.is_empty() && stores.iter().all(|i| opcode(i) == "STG.E.128"),
        "{stores:?}"
    );
    let named = ins
        .iter()
        .filter(|i| i.starts_with("BAR.SYNC") && i.contains("0x1, 0x100"))
        .count();
    assert_eq!(
        (
            named,
            count_opcode(&f, "UCGABAR_ARV"),
            count_opcode(&f, "UCGABAR_WAIT")
        ),
        (1, 2, 2)
    );
    // "after MEMBAR.ALL.CTA, MEMBAR.ALL.GPU, ERRBAR and CGAERRBAR ..., then CCTL.IVALL"
    for a in (0..ins.len()).filter(|&i| opcode(&ins[i]) == "UCGABAR_ARV") {
        assert_eq!(
            [a - 4, a - 3, a - 2, a - 1, a + 1, a + 2].map(|j| opcode(&ins[j])),
            [
                "MEMBAR.ALL.CTA",
                "MEMBAR.ALL.GPU",
                "ERRBAR",
                "CGAERRBAR",
                "UCGABAR_WAIT",
                "CCTL.IVALL"
            ],
            "around the cluster barrier at {a}"
        );
    }
    // Its parent, rung 25, stores C from the registers as float2s and has no cluster.
    let parent = instructions(&function("gemm-wgmma-overlap", "gemm_wgmma_overlap"));
    assert!(
        !parent
            .iter()
            .any(|i| opcode(i).starts_with("UCGABAR") || opcode(i).starts_with("LD."))
    );
}

#[test]
fn reduce_04_waits_at_9_barriers_and_reduce_05_at_one() {
    // reduce/05_warp_shuffle.cu: "one barrier instead of 9": rung 04's barrier after the
    // store and one per step of its 8-step tree, against the one before the warps' sums.
    let bars = |id, entry| count_in(&instructions(&function(id, entry)), "BAR.SYNC");
    assert_eq!(bars("reduce-first-add", "reduce_first_add"), 9);
    assert_eq!(bars("reduce-warp-shuffle", "reduce_warp_shuffle"), 1);
}

#[test]
fn reduce_06_loads_4_bytes_a_trip_and_reduce_07_16() {
    // reduce/07_float4.cu: "Rung 06's loop is not unrolled (its SASS has one LDG a trip, and
    // the trip's FADD waits for it)"; "one 16-byte load covers four elements".
    let trip = loop_around(&function("reduce-grid-stride", "reduce_grid_stride"), "LDG");
    assert_eq!(
        (
            count_in(&trip, "LDG"),
            count_in(&trip, "LDG.E.CONSTANT"),
            count_in(&trip, "FADD")
        ),
        (1, 1, 1),
        "{trip:?}"
    );
    let f = function("reduce-float4", "reduce_float4");
    let trip = loop_around_first(&f, "LDG.E.128.CONSTANT");
    assert_eq!(
        (count_in(&trip, "LDG"), count_in(&trip, "LDG.E.128")),
        (1, 1),
        "{trip:?}"
    );
}

#[test]
fn reduce_trees_predicate_every_step_so_every_warp_issues_it() {
    // reduce/01_interleaved.cu, 02_strided.cu, 03_sequential.cu: ptxas predicates each step's
    // body rather than branching round it, so every warp issues every step; a warp whose
    // lanes are all off makes no shared-memory request.
    for (id, entry) in [
        ("reduce-interleaved", "reduce_interleaved"),
        ("reduce-strided", "reduce_strided"),
        ("reduce-sequential", "reduce_sequential"),
    ] {
        let f = function(id, entry);
        let raw: Vec<&str> = f
            .sass
            .lines()
            .filter_map(|l| l.split_once("*/").map(|(_, i)| i.trim()))
            .filter(|i| {
                !i.starts_with("@!PT")
                    && i.chars()
                        .next()
                        .is_some_and(|c| c == '@' || c.is_ascii_uppercase())
            })
            .collect();
        let op = |i: &str| -> String {
            let i = if i.starts_with('@') {
                i.split_once(' ').map_or(i, |x| x.1.trim())
            } else {
                i
            };
            opcode(i).to_string()
        };
        let exit = raw
            .iter()
            .rposition(|i| op(i) == "EXIT" && !i.starts_with('@'))
            .unwrap_or_else(|| panic!("{id}: no EXIT"));
        assert!(
            !raw[..exit].iter().any(|i| op(i).starts_with("BRA")),
            "{id}: a branch before the last EXIT"
        );
        // The steps: between the barrier after the first store and the last barrier.
        let bars: Vec<usize> = (0..raw.len())
            .filter(|&i| op(raw[i]).starts_with("BAR.SYNC"))
            .collect();
        let (first, last) = (bars[0], *bars.last().unwrap());
        let steps: Vec<&str> = raw[first..last]
            .iter()
            .copied()
            .filter(|i| op(i) == "LDS" || op(i) == "STS")
            .collect();
        assert!(steps.len() >= 3 * 7, "{id}: {steps:?}");
        assert!(
            steps.iter().all(|i| i.starts_with('@')),
            "{id}: a step's shared access not predicated: {steps:?}"
        );
    }
}

/// A kernel that stores (MODE 0) or doubles (MODE 1) a wgmma's accumulators before any
/// wgmma.wait_group, or (MODE 2) stores them after a second wgmma into them and a
/// `wait_group 1` that leaves that one in flight: each undefined in PTX.
const ACCUMULATORS_UNWAITED: &str = r#"
template <int MODE>
__device__ void body(float *C) {
    __shared__ __align__(128) float a[64 * 8], b[8 * 8];
    for (int i = threadIdx.x; i < 64 * 8; i += 128) a[i] = C[i];
    if (threadIdx.x < 64) b[threadIdx.x] = C[threadIdx.x];
    asm volatile("fence.proxy.async.shared::cta;" ::: "memory");
    __syncthreads();
    const unsigned long long da = (__cvta_generic_to_shared(a) & 0x3FFFF) >> 4 | 8ull << 16 | 16ull << 32;
    const unsigned long long db = (__cvta_generic_to_shared(b) & 0x3FFFF) >> 4 | 8ull << 16 | 16ull << 32;
    float d[4] = {0, 0, 0, 0};
    asm volatile("wgmma.fence.sync.aligned;" ::: "memory");
    asm volatile("wgmma.mma_async.sync.aligned.m64n8k8.f32.tf32.tf32 {%0, %1, %2, %3}, %4, %5, 0, 1, 1;"
                 : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]) : "l"(da), "l"(db));
    asm volatile("wgmma.commit_group.sync.aligned;" ::: "memory");
    if (MODE == 1)
        for (int i = 0; i < 4; ++i) d[i] *= 2.0f;
    if (MODE == 2) {
        asm volatile("wgmma.mma_async.sync.aligned.m64n8k8.f32.tf32.tf32 {%0, %1, %2, %3}, %4, %5, 1, 1, 1;"
                     : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]) : "l"(da), "l"(db));
        asm volatile("wgmma.commit_group.sync.aligned;" ::: "memory");
        asm volatile("wgmma.wait_group.sync.aligned 1;" ::: "memory");
    }
    for (int i = 0; i < 4; ++i) C[threadIdx.x * 4 + i] = d[i];
}
extern "C" __global__ void stored(float *C) { body<0>(C); }
extern "C" __global__ void doubled(float *C) { body<1>(C); }
extern "C" __global__ void after_wait_1(float *C) { body<2>(C); }
"#;

/// Why the simulator fails accumulators touched before a wait covers their wgmma
/// (kernel/sim/include/sim_hopper.h, wgmma_accessed) rather than follow ptxas: ptxas puts a
/// WARPGROUP.DEPBAR that waits for every wgmma between the last HGMMA and the first
/// instruction that reads its accumulators where the kernel has no wgmma.wait_group there,
/// but after a `wait_group 1` it waits for one group less, and the stores read accumulators
/// the second wgmma may still be writing.
#[test]
fn ptxas_waits_for_a_wgmma_before_an_unwaited_read_but_not_after_a_wait_group_1() {
    let tool = sass::Disassembler::find()
        .unwrap_or_else(|e| panic!("{e}: run tools/install-cuda-tools.sh first"));
    let source = kernel::CudaSource::embedded("accumulators_unwaited.cu", ACCUMULATORS_UNWAITED);
    let listings =
        sass::of_file(&tool, &source.for_arch("sm_90a"), "sm_90").unwrap_or_else(|e| panic!("{e}"));
    for (entry, first_use, waits) in [
        ("stored", "STG", true),
        ("doubled", "FADD", true),
        ("after_wait_1", "STG", false),
    ] {
        let f = &listings
            .iter()
            .find(|l| l.entry == entry)
            .unwrap_or_else(|| panic!("no {entry}"))
            .function;
        let ops: Vec<String> = instructions(f)
            .iter()
            .map(|i| opcode(i).to_string())
            .collect();
        let hgmma = ops
            .iter()
            .rposition(|o| o.starts_with("HGMMA"))
            .unwrap_or_else(|| panic!("{entry}: no HGMMA in {}", f.sass));
        let used = hgmma
            + ops[hgmma..]
                .iter()
                .position(|o| o.starts_with(first_use))
                .unwrap_or_else(|| panic!("{entry}: no {first_use} after the HGMMA"));
        // The wait for every wgmma: `.LE gsb0, 0x0`.
        let waited = instructions(f)[hgmma..used]
            .iter()
            .any(|i| i.starts_with("WARPGROUP.DEPBAR.LE gsb0, 0x0"));
        assert_eq!(
            waited,
            waits,
            "{entry}: between the last HGMMA and the {first_use}: {:?}",
            &instructions(f)[hgmma..=used]
        );
    }
}
