//! `harness inspect --sass`: the SASS of the NVRTC CUBIN and its instruction counts. Needs
//! NVRTC and nvdisasm or cuobjdump (tools/install-cuda-tools.sh), not a GPU; without them these
//! tests fail, they never pass without having disassembled anything.

use std::process::Command;

/// Runs `harness inspect ARGS --sass --arch sm_90` and returns the summary rows, each split in
/// columns: label, entry, arch, then the counts of `Summary::header`.
fn summary_rows(args: &[&str]) -> Vec<Vec<String>> {
    let o = Command::new(env!("CARGO_BIN_EXE_harness"))
        .arg("inspect")
        .args(args)
        .args(["--sass", "--arch", "sm_90"])
        .output()
        .unwrap();
    let out = String::from_utf8_lossy(&o.stdout).to_string();
    let t = out.clone() + &String::from_utf8_lossy(&o.stderr);
    assert!(
        o.status.success(),
        "{t}\nRun tools/install-cuda-tools.sh first: NVRTC and nvdisasm are needed."
    );
    let table = out
        .split("SASS summary")
        .nth(1)
        .unwrap_or_else(|| panic!("no summary table:\n{t}"));
    table
        .lines()
        .skip(2) // the rest of the title line, then the column titles
        .filter(|l| !l.trim().is_empty())
        .map(|l| l.split_whitespace().map(str::to_string).collect())
        .collect()
}

/// The count under `column` (a title of `Summary::header`) in a summary row.
fn count(row: &[String], column: &str) -> String {
    let titles = [
        "instr", "FFMA", "HMMA", "HGMMA", "LDG", "LDG.128", "LDG.RO", "LDGSTS", "STG", "STG.128",
        "LDS", "LDS.128", "LDSM", "STS", "STS.128", "LD/ST", "LDL/STL",
    ];
    let i = titles.iter().position(|t| *t == column).unwrap();
    row[3 + i].clone()
}

#[test]
fn a_files_sass_counts_vector_and_read_only_loads() {
    let dir = std::env::temp_dir().join(format!("lab-sass-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join("vec.cu");
    std::fs::write(
        &file,
        "extern \"C\" __global__ void copy4(const float4 *__restrict__ a, float4 *__restrict__ b) {\n\
         \x20   b[threadIdx.x] = a[threadIdx.x];\n}\n\
         extern \"C\" __global__ void axpy(const float *x, float *y, float s) {\n\
         \x20   y[threadIdx.x] = s * x[threadIdx.x] + y[threadIdx.x];\n}\n",
    )
    .unwrap();
    let rows = summary_rows(&[file.to_str().unwrap()]);
    std::fs::remove_dir_all(&dir).unwrap();
    let row = |entry: &str| {
        rows.iter()
            .find(|r| r[1] == entry)
            .unwrap_or_else(|| panic!("no {entry} in {rows:?}"))
            .clone()
    };
    let copy4 = row("copy4");
    let counts: Vec<String> = ["LDG", "LDG.128", "LDG.RO", "STG", "STG.128", "FFMA"]
        .iter()
        .map(|c| count(&copy4, c))
        .collect();
    assert_eq!(counts, ["1", "1", "1", "1", "1", "0"], "{copy4:?}");
    let axpy = row("axpy");
    // Without __restrict__ nothing is known to be read-only: plain 32-bit loads.
    let counts: Vec<String> = ["LDG", "LDG.128", "LDG.RO", "FFMA", "LDL/STL"]
        .iter()
        .map(|c| count(&axpy, c))
        .collect();
    assert_eq!(counts, ["2", "0", "0", "1", "0/0"], "{axpy:?}");
}

#[test]
fn rung_03_differs_from_rung_02_only_in_read_only_loads() {
    // What restrict-unroll/README.md teaches: ptxas already unrolled rung 02's loop, so the
    // pragma of rung 03 changes nothing and __restrict__ only makes the loads read-only.
    let rows = summary_rows(&["--kernels", "gemm-tiled,gemm-restrict-unroll"]);
    assert_eq!(rows.len(), 2, "{rows:?}");
    let (tiled, restrict) = (&rows[0], &rows[1]);
    assert_eq!(
        (count(tiled, "LDG.RO"), count(restrict, "LDG.RO")),
        ("0".to_string(), count(restrict, "LDG")),
        "{rows:?}"
    );
    for column in ["instr", "FFMA", "LDG", "LDS", "LDS.128", "STS", "STG"] {
        assert_eq!(
            count(tiled, column),
            count(restrict, column),
            "{column}: {rows:?}"
        );
    }
    assert_eq!(
        count(tiled, "FFMA"),
        "32",
        "the tile loop is unrolled: {rows:?}"
    );
}

/// Rung 18's SASS is Hopper's: warpgroup MMA (HGMMA) and TMA tensor loads (UTMALDG), no
/// ldmatrix, HMMA or shared-memory loads in its main loop (wgmma reads shared memory itself).
#[test]
fn the_hopper_rung_is_hgmma_fed_by_utmaldg() {
    let tool = harness::sass::Disassembler::find()
        .expect("Run tools/install-cuda-tools.sh first: NVRTC and nvdisasm are needed.");
    let plan =
        kernel::Kernel::cuda(&tensorcore::GemmWgmmaTma, &kernel::Shape::square_gemm(4096)).unwrap();
    let listings = harness::sass::of_plan(&tool, &plan, "sm_90a").unwrap();
    let f = &listings[0].function;
    assert_eq!(listings[0].arch, "sm_90a");
    let count = |op: &str| f.sass.lines().filter(|l| l.contains(op)).count();
    // 4 k16 steps of m64n128k16 per k-tile; 1 box of A and 2 of B per stage.
    assert!(count("HGMMA.64x128x16.F32.BF16") >= 4, "{}", f.sass);
    assert!(count("UTMALDG.2D") >= 2, "{}", f.sass);
    assert!(count("SYNCS") >= 1, "mbarrier operations: {}", f.sass);
    assert_eq!((f.summary.ldsm, f.summary.hmma, f.summary.lds), (0, 0, 0));
    assert!(f.summary.hgmma >= 4, "{}", f.summary);
}

/// The cp.async rungs: their copies are LDGSTS (not LDG + STS), and the `@!PT LDS RZ, [RZ]`
/// placeholders the compiler leaves after them are not counted as shared loads. Rung 15's
/// main loop issues what rung 14's does (WMMA FP16 already compiles to ldmatrix and HMMA), as
/// tensorcore/README.md says.
#[test]
fn cp_async_copies_are_ldgsts_and_predicated_off_loads_are_not_counted() {
    let rows = summary_rows(&[
        "--kernels",
        "gemm-wmma-cp-async,gemm-mma-ldmatrix,attn-flash2-mma-fp16",
    ]);
    let row = |entry: &str| {
        rows.iter()
            .find(|r| r[1] == entry)
            .unwrap_or_else(|| panic!("no {entry} in {rows:?}"))
            .clone()
    };
    let (r14, r15) = (row("gemm_wmma_cp_async"), row("gemm_mma_ldmatrix"));
    assert_ne!(count(&r14, "LDGSTS"), "0", "{r14:?}");
    for c in ["HMMA", "LDSM", "LDGSTS"] {
        assert_eq!(count(&r14, c), count(&r15, c), "{c}: {r14:?} {r15:?}");
    }
    let attn = row("attn_flash2_mma_fp16");
    assert_ne!(count(&attn, "LDGSTS"), "0", "{attn:?}");
    assert_eq!(
        count(&attn, "LDS"),
        "0",
        "@!PT placeholders counted: {attn:?}"
    );
}

/// What flash-attn/README.md says of rung 07: P and the output stay in registers, so where
/// rung 05 stores scores, P and output rows to shared memory every tile, rung 07 stores
/// nothing there (its copies are cp.async) and spills nothing; at D = 64 a tile is 64 HMMA.
#[test]
fn attention_rung_07_keeps_p_and_o_out_of_shared_memory() {
    let rows = summary_rows(&["--kernels", "attn-flash2-wmma-fp16,attn-flash2-mma-fp16"]);
    let row = |entry: &str| {
        rows.iter()
            .find(|r| r[1] == entry)
            .unwrap_or_else(|| panic!("no {entry} in {rows:?}"))
            .clone()
    };
    let (wmma, mma) = (row("attn_flash2_wmma_fp16"), row("attn_flash2_mma_fp16"));
    assert_ne!(count(&wmma, "STS"), "0", "{wmma:?}");
    let counts: Vec<String> = ["STS", "STS.128", "LD/ST", "LDL/STL", "HMMA"]
        .iter()
        .map(|c| count(&mma, c))
        .collect();
    assert_eq!(counts, ["0", "0", "0/0", "0/0", "64"], "{mma:?}");
}
