//! Index width: no kernel counts a grid-stride loop in 32 bits.
//!
//! A shape is accepted up to `i32::MAX` elements per tensor (`Shape::validate`), so a product
//! of in-range indices (`row * K + k` with `row < M`, `k < K`) stays below that bound and fits
//! an `int`. A grid-stride loop does not: its grid covers the whole length `n`, so `i + stride`
//! reaches about `2n` and wraps an `int` once `n` passes 2^30, after which the loop reads and
//! writes out of bounds. Running a kernel at 2^30 elements is out of reach of the simulator,
//! so this reads every kernel source the registry launches and requires 64-bit counters in
//! every loop whose step is the grid's size.

use harness::registry;
use std::collections::BTreeMap;

/// The `for` headers of `code` (text between the parentheses) with their line numbers.
fn for_headers(code: &str) -> Vec<(usize, String)> {
    let bytes = code.as_bytes();
    let mut out = Vec::new();
    let mut at = 0;
    while let Some(pos) = code[at..].find("for") {
        let start = at + pos;
        at = start + 3;
        let word_before = start > 0 && {
            let c = bytes[start - 1];
            c.is_ascii_alphanumeric() || c == b'_'
        };
        let rest = code[at..].trim_start();
        if word_before || !rest.starts_with('(') {
            continue;
        }
        let open = code.len() - rest.len();
        let mut depth = 0;
        for (i, c) in code[open..].char_indices() {
            match c {
                '(' => depth += 1,
                ')' => {
                    depth -= 1;
                    if depth == 0 {
                        let line = code[..start].matches('\n').count() + 1;
                        out.push((line, code[open + 1..open + i].to_string()));
                        break;
                    }
                }
                _ => {}
            }
        }
    }
    out
}

/// Grid-stride loops of `code` whose counter is narrower than 64 bits, as `line: header`.
fn narrow_grid_stride_loops(code: &str) -> Vec<String> {
    // Comments may quote code; only code counts.
    let code: String = code
        .lines()
        .map(|l| l.split("//").next().unwrap_or(""))
        .collect::<Vec<_>>()
        .join("\n");
    for_headers(&code)
        .into_iter()
        .filter(|(_, h)| {
            let parts: Vec<&str> = h.split(';').collect();
            let step = parts.get(2).copied().unwrap_or("");
            let grid_stride = step.contains("gridDim") || step.contains("lab_grid_stride");
            let init = parts[0].trim_start();
            let wide = ["long long", "int64_t", "uint64_t", "size_t", "long "]
                .iter()
                .any(|t| init.starts_with(t) || init.starts_with(&format!("const {t}")));
            grid_stride && !wide
        })
        .map(|(line, h)| format!("{line}: for ({})", h.trim()))
        .collect()
}

#[test]
fn the_check_finds_a_32_bit_grid_stride_loop() {
    // The conversion kernel as it was: its `int` counter wraps past 2^30 elements.
    let old = "extern \"C\" __global__ void f(const float *src, __half *dst, int n) {\n\
               \x20   for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x)\n\
               \x20       dst[i] = __float2half_rn(src[i]);\n}\n";
    assert_eq!(narrow_grid_stride_loops(old).len(), 1);
    let unsigned = "for (unsigned i = threadIdx.x; i < n; i += blockDim.x * gridDim.x) {}";
    assert_eq!(narrow_grid_stride_loops(unsigned).len(), 1);
    let fixed = "for (long long i = lab_global_index(); i < n; i += lab_grid_stride()) {}";
    assert!(narrow_grid_stride_loops(fixed).is_empty());
    // A loop over a block's tile steps by the block, not the grid: its bound is small.
    let tile = "for (int idx = tid; idx < BM * BK; idx += NTHREADS) {} // gridDim";
    assert!(narrow_grid_stride_loops(tile).is_empty());
}

#[test]
fn no_kernel_counts_a_grid_stride_loop_in_32_bits() {
    let mut sources = BTreeMap::new();
    for k in registry::all() {
        let shape = k.info().workload.probe_shape();
        let Some(plan) = k.cuda(&shape) else { continue };
        for l in plan.launches() {
            sources.insert(l.source.file.to_string(), l.source.code.to_string());
        }
    }
    assert!(
        sources.len() >= 10,
        "only {} kernel sources found: the registry lost its kernels?",
        sources.len()
    );
    assert!(
        sources
            .values()
            .any(|c| c.contains("lab_grid_stride") || c.contains("gridDim")),
        "no grid-stride loop left to check: the FP16 conversion kernels changed?"
    );
    let mut problems = Vec::new();
    for (file, code) in &sources {
        for hit in narrow_grid_stride_loops(code) {
            problems.push(format!("{file}:{hit}"));
        }
    }
    assert!(
        problems.is_empty(),
        "grid-stride loops must count in 64 bits (lab/index.h: lab_global_index, \
         lab_grid_stride), or i + stride wraps past 2^31:\n{}",
        problems.join("\n")
    );
}

#[test]
fn the_largest_accepted_operand_drives_the_conversion_kernels_past_2_pow_31() {
    use kernel::{Arg, Shape};
    // Tensors are accepted up to i32::MAX elements: 46340^2 is just under, 46341^2 over.
    let shape = Shape::gemm(1, 46340, 46340);
    shape.validate().unwrap();
    assert!(Shape::gemm(1, 46341, 46341).validate().is_err());
    let n = 46340usize * 46340;
    let all = registry::all();
    for (id, per_thread) in [("gemm-wmma-fp16-convert", 1), ("gemm-wmma-fp16-half2", 2)] {
        let k = all.iter().find(|k| k.info().id == id).unwrap();
        k.supports(&shape).unwrap();
        let plan = k.cuda(&shape).unwrap();
        // The second launch converts B, k x n elements.
        let convert_b = plan.launches().nth(1).unwrap();
        assert_eq!(convert_b.args.get(2), Some(&Arg::I32(n as i32)), "{id}");
        let threads = convert_b.blocks() * u64::from(convert_b.threads_per_block());
        assert!(threads * per_thread >= n as u64, "{id}: the grid covers B");
        // A thread's second index, first index + stride, passes i32::MAX for the scalar
        // kernel: only a 64-bit counter (checked above in every source) stays in bounds.
        if per_thread == 1 {
            assert!(2 * threads - 1 > i32::MAX as u64, "{id}");
        }
    }
}
