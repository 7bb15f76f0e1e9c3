//! Turning a `.cu` source into a loaded shared object: scanning it for entries, rewriting
//! `extern __shared__` and inline PTX ([`super::inline_asm`]), compiling it with the host C++
//! compiler against the emulation headers (embedded, so a carried test binary works anywhere)
//! and caching the result.

use super::ffi::{FaultHook, GlobalBegin, GlobalEnd, RunUnits, SimKernel, Thunk, Trim};
use super::inline_asm;
use super::per_block_shared::{in_function, shared_per_block};
use crate::contract::Unsupported;
use crate::cuda::headers;
use crate::device::DeviceError;
use crate::disk_cache;
use crate::plan::CudaSource;
use std::collections::HashMap;
use std::ffi::{CStr, CString, OsStr};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::atomic::{AtomicU64, Ordering};

/// The emulation headers, written next to every generated translation unit.
const HEADERS: &[(&str, &str)] = &[
    (
        "sim_runtime.h",
        include_str!("../../sim/include/sim_runtime.h"),
    ),
    (
        "sim_builtins.h",
        include_str!("../../sim/include/sim_builtins.h"),
    ),
    (
        "sim_launch.h",
        include_str!("../../sim/include/sim_launch.h"),
    ),
    (
        "sim_hopper.h",
        include_str!("../../sim/include/sim_hopper.h"),
    ),
    ("sim_mma.h", include_str!("../../sim/include/sim_mma.h")),
    ("sim_asm.h", include_str!("../../sim/include/sim_asm.h")),
    (
        "sim_traffic.h",
        include_str!("../../sim/include/sim_traffic.h"),
    ),
    ("sim_banks.h", include_str!("../../sim/include/sim_banks.h")),
    (
        "sim_global.h",
        include_str!("../../sim/include/sim_global.h"),
    ),
    ("cuda_fp16.h", include_str!("../../sim/include/cuda_fp16.h")),
    ("cuda_bf16.h", include_str!("../../sim/include/cuda_bf16.h")),
    (
        "sim_half_api.h",
        include_str!("../../sim/include/sim_half_api.h"),
    ),
    (
        "sim_intrinsics.h",
        include_str!("../../sim/include/sim_intrinsics.h"),
    ),
    ("cuda_fp8.h", include_str!("../../sim/include/cuda_fp8.h")),
    (
        "sim_fp8_value.h",
        include_str!("../../sim/include/sim_fp8_value.h"),
    ),
    ("mma.h", include_str!("../../sim/include/mma.h")),
    (
        "cuda_runtime.h",
        include_str!("../../sim/include/cuda_runtime.h"),
    ),
    ("cuda.h", include_str!("../../sim/include/cuda.h")),
    (
        "cooperative_groups.h",
        include_str!("../../sim/include/cooperative_groups.h"),
    ),
    (
        "cooperative_groups/reduce.h",
        include_str!("../../sim/include/cooperative_groups/reduce.h"),
    ),
    (
        "cooperative_groups/memcpy_async.h",
        include_str!("../../sim/include/cooperative_groups/memcpy_async.h"),
    ),
    (
        "cuda_pipeline_primitives.h",
        include_str!("../../sim/include/cuda_pipeline_primitives.h"),
    ),
    (
        "sim_async_copy.h",
        include_str!("../../sim/include/sim_async_copy.h"),
    ),
    (
        "cuda/barrier",
        include_str!("../../sim/include/cuda/barrier"),
    ),
    (
        "cuda/pipeline",
        include_str!("../../sim/include/cuda/pipeline"),
    ),
    ("cuda/atomic", include_str!("../../sim/include/cuda/atomic")),
    (
        "cuda/std/atomic",
        include_str!("../../sim/include/cuda/std/atomic"),
    ),
    (
        "sim_cuda_std.h",
        include_str!("../../sim/include/sim_cuda_std.h"),
    ),
    (
        "cuda/std/limits",
        include_str!("../../sim/include/cuda/std/limits"),
    ),
    (
        "cuda/std/utility",
        include_str!("../../sim/include/cuda/std/utility"),
    ),
    (
        "cuda/std/array",
        include_str!("../../sim/include/cuda/std/array"),
    ),
    (
        "cuda/std/cmath",
        include_str!("../../sim/include/cuda/std/cmath"),
    ),
    (
        "cuda/std/type_traits",
        include_str!("../../sim/include/cuda/std/type_traits"),
    ),
    (
        "cuda/std/cstdint",
        include_str!("../../sim/include/cuda/std/cstdint"),
    ),
    (
        "cuda/std/cstddef",
        include_str!("../../sim/include/cuda/std/cstddef"),
    ),
    (
        "cuda/std/climits",
        include_str!("../../sim/include/cuda/std/climits"),
    ),
    (
        "cuda/std/cfloat",
        include_str!("../../sim/include/cuda/std/cfloat"),
    ),
    (
        "cuda/std/tuple",
        include_str!("../../sim/include/cuda/std/tuple"),
    ),
    (
        "cuda/std/bit",
        include_str!("../../sim/include/cuda/std/bit"),
    ),
    (
        "cuda_pipeline.h",
        include_str!("../../sim/include/cuda_pipeline.h"),
    ),
    (
        "math_constants.h",
        include_str!("../../sim/include/math_constants.h"),
    ),
    (
        "cuda_runtime_api.h",
        include_str!("../../sim/include/cuda_runtime_api.h"),
    ),
    (
        "builtin_types.h",
        include_str!("../../sim/include/builtin_types.h"),
    ),
    (
        "device_functions.h",
        include_str!("../../sim/include/device_functions.h"),
    ),
    (
        "device_types.h",
        include_str!("../../sim/include/device_types.h"),
    ),
    (
        "driver_types.h",
        include_str!("../../sim/include/driver_types.h"),
    ),
    (
        "host_defines.h",
        include_str!("../../sim/include/host_defines.h"),
    ),
    (
        "vector_types.h",
        include_str!("../../sim/include/vector_types.h"),
    ),
];

/// `-fno-strict-aliasing`: CUDA code reinterprets float arrays as float4 and the like.
/// `KERNEL_LAB_SIM` selects the emulation bodies of the lab's headers (`lab/*.h`).
/// `__CUDACC__` and `__CUDA_ARCH__` are what nvcc defines when it compiles device code: the
/// simulator compiles only device code, for the GPU it emulates (sm_90, Hopper's units
/// included), so a kernel guarded by `#if __CUDA_ARCH__ >= 530` runs its body, not its host
/// fallback. nvcc's version macros are those of the CUDA 13 toolkit whose headers the
/// simulator's follow, so code behind `#if __CUDACC_VER_MAJOR__ >= 11` is the code NVRTC
/// builds too.
/// `-g1`: line tables, from which a failure names the line of the access it stopped at
/// ([`super::site`]).
const FLAGS: &[&str] = &[
    "-O2",
    "-g1",
    "-std=c++20",
    "-shared",
    "-fPIC",
    "-fvisibility=hidden",
    "-fno-strict-aliasing",
    "-DKERNEL_LAB_SIM=1",
    "-D__CUDACC__=1",
    "-D__CUDA_ARCH__=900",
    "-D__CUDACC_VER_MAJOR__=13",
    "-D__CUDACC_VER_MINOR__=0",
    "-D__CUDACC_VER_BUILD__=0",
];

/// A check of every index into an array whose size the compiler knows (local arrays, static
/// `__shared__` ones), and of every access through a pointer into an object it can see once
/// the callee is inlined (a local array passed to a `__device__` function), calling
/// `sim_runtime.h`'s handlers: the kernel is compiled with them, and linked without the
/// sanitizer's runtime.
const BOUNDS_FLAGS: &[&str] = &["-fsanitize=bounds,object-size"];

/// Instrumentation that calls `sim_traffic.h`'s hooks before every global access. gcc's
/// ThreadSanitizer pass is used for its hooks only: the object is linked without its runtime.
/// Volatile accesses call hooks of their own: in global memory they are strong, as in PTX.
/// Without scalar replacement of aggregates, a `float4` loaded into a local stays one 16-byte
/// access, as nvcc's `ld.v4` is, instead of four 4-byte ones: the hooks see its alignment.
const TRAFFIC_FLAGS: &[&str] = &[
    "-fsanitize=thread",
    "--param=tsan-instrument-func-entry-exit=0",
    "--param=tsan-distinguish-volatile=1",
    "-fno-tree-sra",
    "-DSIM_INSTRUMENTED=1",
];

/// How a module is built: plain, or counting the global-memory traffic it issues.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Build {
    Plain,
    Instrumented,
}

/// Instructions of this CPU the modules may use. F16C converts between `_Float16` and float
/// in one instruction; without it gcc calls a soft-float routine per conversion, which made
/// FP16 kernels several times slower than BF16 ones (bit shifts). No flag that could change a
/// result: `-mf16c` implies AVX, not FMA, so no multiply-add is ever contracted.
fn host_flags() -> &'static [&'static str] {
    #[cfg(target_arch = "x86_64")]
    if std::arch::is_x86_feature_detected!("f16c") {
        return &["-mf16c"];
    }
    &[]
}

/// What the line tables say for the working folder, so that a module is the same whichever
/// folder built it: it is cached across processes, and a relative `#line` name must read the
/// same in all of them (`site::frames` drops the `./`). Part of the cache key, not its value.
const WORKING_FOLDER_MAP: &str =
    "-fdebug-prefix-map=<working folder>=. -ffile-prefix-map=<build folder>=.";

/// [`WORKING_FOLDER_MAP`] for this process: the folder as the OS gives it and as `$PWD`
/// spells it (gcc records `$PWD` when it names the same folder, symbolic links and all).
fn working_folder_maps() -> Vec<String> {
    let pwd = std::env::var_os("PWD").map(PathBuf::from);
    let mut folders: Vec<PathBuf> = std::env::current_dir().into_iter().collect();
    folders.extend(pwd.filter(|p| p.is_absolute() && !folders.contains(p)));
    folders
        .iter()
        .filter(|f| f.parent().is_some())
        .map(|f| format!("-fdebug-prefix-map={}=.", f.display()))
        .collect()
}

/// The compiler flags of one source beyond [`FLAGS`]: the CPU's, its defines and include
/// folders.
fn source_flags(src: &CudaSource) -> Vec<String> {
    let mut out: Vec<String> = host_flags().iter().map(|f| f.to_string()).collect();
    for (name, value) in &src.defines {
        out.push(format!("-D{name}={value}"));
    }
    for dir in &src.include_dirs {
        out.push(format!("-I{}", dir.display()));
    }
    out
}

/// What the disk cache must also depend on for sources with include folders of their own:
/// the name, size and modification time of every file in them.
fn include_dirs_stamp(src: &CudaSource) -> String {
    let mut out = String::new();
    for dir in &src.include_dirs {
        let mut files: Vec<_> = std::fs::read_dir(dir)
            .into_iter()
            .flatten()
            .filter_map(|e| e.ok())
            .filter_map(|e| {
                let meta = e.metadata().ok()?;
                let mtime = meta
                    .modified()
                    .ok()?
                    .duration_since(std::time::UNIX_EPOCH)
                    .ok()?;
                meta.is_file()
                    .then(|| format!("{}:{}:{}", e.path().display(), meta.len(), mtime.as_nanos()))
            })
            .collect();
        files.sort();
        out.push_str(&files.join("\n"));
    }
    out
}

/// The host C++ compiler: `$CXX`, else `g++`.
pub fn compiler() -> String {
    std::env::var("CXX").unwrap_or_else(|_| "g++".to_string())
}

/// `g++ 12.2.0`, or why the compiler cannot be run.
pub fn compiler_version(cxx: &str) -> Result<String, String> {
    let out = Command::new(cxx)
        .arg("-dumpfullversion")
        .output()
        .map_err(|e| format!("cannot run {cxx}: {e}"))?;
    if !out.status.success() {
        return Err(format!("{cxx} -dumpfullversion failed"));
    }
    Ok(format!(
        "{cxx} {}",
        String::from_utf8_lossy(&out.stdout).trim()
    ))
}

/// The source with comments blanked out (newlines kept, so line numbers stay right).
pub fn strip_comments(code: &str) -> String {
    let b = code.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        match b[i] {
            b'/' if b.get(i + 1) == Some(&b'/') => {
                while i < b.len() && b[i] != b'\n' {
                    out.push(b' ');
                    i += 1;
                }
            }
            b'/' if b.get(i + 1) == Some(&b'*') => {
                out.extend_from_slice(b"  ");
                i += 2;
                while i < b.len() && !(b[i] == b'*' && b.get(i + 1) == Some(&b'/')) {
                    out.push(if b[i] == b'\n' { b'\n' } else { b' ' });
                    i += 1;
                }
                if i < b.len() {
                    out.extend_from_slice(b"  ");
                    i += 2;
                }
            }
            q @ (b'"' | b'\'') => {
                out.push(q);
                i += 1;
                while i < b.len() && b[i] != q && b[i] != b'\n' {
                    if b[i] == b'\\' && i + 1 < b.len() {
                        out.push(b[i]);
                        i += 1;
                    }
                    out.push(b[i]);
                    i += 1;
                }
                if i < b.len() {
                    out.push(b[i]);
                    i += 1;
                }
            }
            c => {
                out.push(c);
                i += 1;
            }
        }
    }
    // Only ASCII bytes were replaced, whole multi-byte characters were copied.
    String::from_utf8(out).unwrap_or_else(|e| String::from_utf8_lossy(e.as_bytes()).into_owned())
}

pub(super) fn is_ident(c: u8) -> bool {
    c.is_ascii_alphanumeric() || c == b'_'
}

/// Byte offsets where `word` occurs as a whole identifier.
pub(super) fn find_word(code: &str, word: &str) -> Vec<usize> {
    let b = code.as_bytes();
    code.match_indices(word)
        .map(|(i, _)| i)
        .filter(|&i| {
            (i == 0 || !is_ident(b[i - 1])) && b.get(i + word.len()).is_none_or(|&c| !is_ident(c))
        })
        .collect()
}

fn skip_ws(b: &[u8], mut i: usize) -> usize {
    while i < b.len() && b[i].is_ascii_whitespace() {
        i += 1;
    }
    i
}

fn ident_at(b: &[u8], i: usize) -> (usize, &[u8]) {
    let mut j = i;
    while j < b.len() && is_ident(b[j]) {
        j += 1;
    }
    (j, &b[i..j])
}

/// Skips a balanced `( ... )` starting at `i` (which must be `(`).
fn skip_parens(b: &[u8], i: usize) -> usize {
    let mut depth = 0;
    for (j, &c) in b.iter().enumerate().skip(i) {
        match c {
            b'(' => depth += 1,
            b')' => {
                depth -= 1;
                if depth == 0 {
                    return j + 1;
                }
            }
            _ => {}
        }
    }
    b.len()
}

/// An `extern "C" __global__ void NAME(...)` entry of a source.
#[derive(Debug, PartialEq, Eq)]
pub struct EntryDecl {
    pub name: String,
    /// The text between the parentheses of its `__cluster_dims__(...)`, if it has one (the
    /// compiler evaluates it: it may name macros).
    pub cluster_dims: Option<String>,
}

/// Names of the `extern "C" __global__ void NAME(...)` entries of a comment-free source.
pub fn entries(code: &str) -> Vec<String> {
    entry_decls(code).into_iter().map(|e| e.name).collect()
}

/// The `extern "C" __global__ void NAME(...)` entries of a comment-free source.
pub fn entry_decls(code: &str) -> Vec<EntryDecl> {
    let b = code.as_bytes();
    let mut out = Vec::new();
    for at in find_word(code, "__global__") {
        let before = code[..at].trim_end();
        if !before.ends_with("extern \"C\"") {
            continue;
        }
        // `__launch_bounds__(...)` and `__cluster_dims__(...)` may come before or after `void`.
        let mut i = skip_ws(b, at + "__global__".len());
        let mut seen_void = false;
        let mut cluster_dims = None;
        loop {
            let (end, word) = ident_at(b, i);
            match word {
                b"__launch_bounds__" => i = skip_ws(b, skip_parens(b, skip_ws(b, end))),
                b"__cluster_dims__" => {
                    let open = skip_ws(b, end);
                    let close = skip_parens(b, open);
                    cluster_dims = code
                        .get(open + 1..close.saturating_sub(1))
                        .map(str::to_string);
                    i = skip_ws(b, close);
                }
                b"void" => {
                    seen_void = true;
                    i = skip_ws(b, end);
                }
                _ => break,
            }
        }
        if !seen_void {
            continue;
        }
        let (end, name) = ident_at(b, i);
        if !name.is_empty() && b.get(skip_ws(b, end)) == Some(&b'(') {
            out.push(EntryDecl {
                name: String::from_utf8_lossy(name).into_owned(),
                cluster_dims,
            });
        }
    }
    out
}

/// The line and file a compiler would report for byte `at` of `code` shown as `file`: its
/// line number, unless a `#line N "F"` directive before it says otherwise (a source made of
/// several files, each after its own `#line`).
pub(super) fn presumed_line(code: &str, at: usize, file: &str) -> (usize, String) {
    let here = code[..at].matches('\n').count();
    let mut best = (here + 1, file.to_string());
    for (i, line) in code[..at].split('\n').enumerate() {
        let Some(rest) = line.trim_start().strip_prefix("#line") else {
            continue;
        };
        let mut words = rest.split_whitespace();
        let Some(n) = words.next().and_then(|w| w.parse::<usize>().ok()) else {
            continue;
        };
        let name = words
            .next()
            .map(|w| w.trim_matches('"').to_string())
            .unwrap_or_else(|| best.1.clone());
        // `#line N` on line i names line i + 1 as N.
        best = (n + here - (i + 1), name);
    }
    best
}

/// Whether the `extern __shared__` declaration at `at` (the word `extern`) declares a whole
/// object, `extern __shared__ T name;`, rather than an array of unknown size: CUDA's compilers
/// allocate such an object statically, as if `extern` were not there (NVRTC counts its bytes as
/// static shared memory), so the simulator declares it as a static `__shared__` variable.
fn extern_is_static(code: &str, at: usize) -> bool {
    code[at..]
        .find(';')
        .is_some_and(|semi| !code[at..at + semi].contains('['))
}

/// Blanks the `extern` of each `extern __shared__ T name;` ([`extern_is_static`]).
fn drop_extern_of_static_shared(code: &str) -> String {
    let mut out = code.to_string();
    for at in find_word(code, "extern") {
        let after = skip_ws(code.as_bytes(), at + "extern".len());
        if code[after..].starts_with("__shared__") && extern_is_static(code, at) {
            out.replace_range(at..at + "extern".len(), "      ");
        }
    }
    out
}

/// Rewrites each `extern __shared__ T name[];` (which no macro can express) into a pointer to
/// the block's dynamic shared memory buffer.
pub fn rewrite_extern_shared(code: &str, file: &str) -> Result<String, String> {
    let mut out = String::with_capacity(code.len());
    let mut rest = 0;
    for at in find_word(code, "extern") {
        if at < rest {
            continue;
        }
        let after = skip_ws(code.as_bytes(), at + "extern".len());
        if !code[after..].starts_with("__shared__") {
            continue;
        }
        let decl_start = after + "__shared__".len();
        let semi = code[decl_start..]
            .find(';')
            .map(|j| decl_start + j)
            .ok_or_else(|| format!("{file}: unterminated extern __shared__ declaration"))?;
        let mut decl = code[decl_start..semi].to_string();
        for attr in ["__align__", "alignas"] {
            while let Some(p) = decl.find(attr) {
                let end = skip_parens(decl.as_bytes(), skip_ws(decl.as_bytes(), p + attr.len()));
                decl.replace_range(p..end, " ");
            }
        }
        let decl = decl.trim();
        let bad = || {
            format!(
                "{file}: cannot read `extern __shared__ {decl};` (expected `T name[]`, \
                 `T name[][N]` or `T name`)"
            )
        };
        // `T name[]`, or `T name[][N]...`: a pointer to rows of the trailing dimensions.
        let open = decl.find('[').ok_or_else(bad)?;
        let rows = decl[open..].trim_start_matches('[').trim_start();
        let rows = rows.strip_prefix(']').ok_or_else(bad)?.trim();
        let head = decl[..open].trim_end();
        let name_start = head
            .bytes()
            .rposition(|c| !is_ident(c))
            .map_or(0, |p| p + 1);
        let (ty, name) = (head[..name_start].trim(), &head[name_start..]);
        if ty.is_empty() || name.is_empty() {
            return Err(bad());
        }
        out.push_str(&code[rest..at]);
        let (pointer, local) = if rows.is_empty() {
            (format!("{ty} *"), format!("{ty} *const {name}"))
        } else {
            (
                format!("{ty} (*){rows}"),
                format!("{ty} (*const {name}){rows}"),
            )
        };
        let smem = format!("reinterpret_cast<{pointer}>(::sim::dynamic_smem())");
        if in_function(code, at) {
            out.push_str(&format!("{local} = {smem};"));
        } else {
            // At file scope (or a namespace's) a macro reads the buffer of whichever block is
            // running: a pointer there would be set once, when the module loads.
            let (line, file) = presumed_line(code, semi, file);
            out.push_str(&format!(
                "\n#define {name} ({smem})\n#line {line} \"{file}\"\n"
            ));
        }
        rest = semi + 1;
    }
    out.push_str(&code[rest..]);
    Ok(out)
}

/// Puts `__shared__` right after `extern` in the other orders CUDA accepts, `__shared__ extern
/// T name[];` and `extern T __shared__ name[];` (an NVIDIA sample writes `extern float __shared__
/// smem[];`), so that the rewrites below read one form. Each line keeps its length.
pub fn shared_after_extern(code: &str) -> String {
    let b = code.as_bytes();
    let mut out = code.to_string();
    for at in find_word(code, "__shared__") {
        let end = at + "__shared__".len();
        let next = skip_ws(b, end);
        if code[next..].starts_with("extern") && b.get(next + 6).is_none_or(|&c| !is_ident(c)) {
            // `__shared__ extern`: the two words swap, the space between them stays.
            let gap = &code[end..next];
            out.replace_range(at..next + 6, &format!("extern{gap}__shared__"));
            continue;
        }
        // `extern T __shared__`: back over the type's words to an `extern` of the same
        // declaration.
        let mut i = at;
        while i > 0
            && (is_ident(b[i - 1])
                || matches!(
                    b[i - 1],
                    b' ' | b'\t' | b'\n' | b'\r' | b':' | b'<' | b'>' | b',' | b'*'
                ))
        {
            i -= 1;
        }
        let Some(e) = find_word(&code[i..at], "extern").first().map(|e| i + e) else {
            continue;
        };
        let ty = code[e + "extern".len()..at].trim();
        if ty.is_empty() || code[e..at].contains('\n') {
            continue;
        }
        let moved = format!("extern __shared__ {ty}");
        let width = end - e;
        if moved.len() <= width {
            out.replace_range(e..end, &format!("{moved:<width$}"));
        }
    }
    out
}

/// Drops the `static` of each `static __shared__` (or `__shared__ static`) declaration, legal
/// and redundant in CUDA (public block reductions write it): the simulator's `__shared__` is
/// already `static`, and C++ refuses the word twice. Blanked with spaces, so columns stay.
pub fn drop_static_of_shared(code: &str) -> String {
    let b = code.as_bytes();
    let mut out = b.to_vec();
    let is_static_at = |i: usize| {
        code.get(i..).is_some_and(|r| r.starts_with("static"))
            && (i == 0 || !is_ident(b[i - 1]))
            && b.get(i + 6).is_none_or(|&c| !is_ident(c))
    };
    for at in find_word(code, "__shared__") {
        let before = code[..at].trim_end().len();
        if before >= 6 && is_static_at(before - 6) {
            out[before - 6..before].fill(b' ');
        }
        let after = skip_ws(b, at + "__shared__".len());
        if is_static_at(after) {
            out[after..after + 6].fill(b' ');
        }
    }
    String::from_utf8(out).unwrap_or_else(|_| code.to_string())
}

/// Moves each `alignas(...)` written after `__shared__` (`__shared__ alignas(16) float t[64];`,
/// as public kernels write it) in front of it: the simulator's `__shared__` begins with `static
/// thread_local`, after which no standard attribute may stand. `extern __shared__` declarations
/// are left to [`rewrite_extern_shared`], which drops their alignment.
pub fn hoist_shared_alignas(code: &str) -> String {
    let b = code.as_bytes();
    let mut out = String::with_capacity(code.len() + 1);
    let mut rest = 0;
    for at in find_word(code, "__shared__") {
        if at < rest || code[..at].trim_end().ends_with("extern") {
            continue;
        }
        let attr = skip_ws(b, at + "__shared__".len());
        let (name_end, word) = ident_at(b, attr);
        let open = skip_ws(b, name_end);
        if word != b"alignas" || b.get(open) != Some(&b'(') {
            continue;
        }
        let close = skip_parens(b, open);
        out.push_str(&code[rest..at]);
        out.push_str(&code[attr..close]);
        out.push_str(" __shared__");
        rest = close;
    }
    out.push_str(&code[rest..]);
    out
}

/// Raises a declared alignment of 128 bytes or more (`alignas(128)`, `__align__(256)`,
/// `__attribute__((aligned(128)))`) of each static `__shared__` variable to 1024. A tile that
/// the TMA or `wgmma` reads with the 128-byte swizzle must start on a 1024-byte boundary, and a
/// GPU's compiler packs static shared variables from such a boundary, so kernels declaring
/// `alignas(128)` tiles find them there. The simulator's variables lie elsewhere (a redzone
/// after each), so it places such a variable where the GPU's packing would have, on a
/// 1024-byte boundary: a kernel whose tiles a GPU would put off that boundary goes uncaught,
/// but none is failed for the simulator's own placement.
fn widen_swizzle_alignment(code: &str) -> String {
    let mut out = code.to_string();
    for at in find_word(code, "__shared__").into_iter().rev() {
        let before = code[..at].trim_end();
        if before.ends_with("extern") && !extern_is_static(code, before.len() - "extern".len()) {
            continue;
        }
        let start = code[..at].rfind([';', '{', '}']).map_or(0, |i| i + 1);
        let Some(end) = code[at..].find(';').map(|j| at + j) else {
            continue;
        };
        let mut decl = code[start..end].to_string();
        let word = at - start;
        // One object of a type of its own (`__shared__ SMem<BM, BN> s;`): aligned as that type
        // asks, raised as above when that is 128 bytes or more.
        if let Some(ty) = object_type(&decl[word + "__shared__".len()..]) {
            decl.insert_str(
                word,
                &format!("alignas(::sim::placed_align(alignof({ty}))) "),
            );
        }
        for attr in ["alignas", "__align__", "aligned"] {
            for p in find_word(&decl.clone(), attr).into_iter().rev() {
                let open = skip_ws(decl.as_bytes(), p + attr.len());
                if decl.as_bytes().get(open) != Some(&b'(') {
                    continue;
                }
                let close = skip_parens(decl.as_bytes(), open);
                let n = decl[open + 1..close - 1].trim();
                if n.parse::<u64>().is_ok_and(|n| n >= 128) {
                    decl.replace_range(open + 1..close - 1, "1024");
                }
            }
        }
        out.replace_range(start..end, &decl);
    }
    out
}

/// The type of a declaration of one object with no initializer, `T name` after `__shared__`
/// and its attributes (`SMem<BM, BN> s`): `None` for an array, several names or a builtin
/// type, whose alignment is never 128 bytes.
fn object_type(decl: &str) -> Option<&str> {
    let b = decl.as_bytes();
    let mut i = skip_ws(b, 0);
    loop {
        let (end, word) = ident_at(b, i);
        match word {
            b"alignas" | b"__align__" | b"__attribute__" => {
                i = skip_ws(b, skip_parens(b, skip_ws(b, end)))
            }
            _ => break,
        }
    }
    let rest = decl[i..].trim_end();
    // A comma outside template arguments declares several names.
    let mut depth = 0i32;
    let several = rest.bytes().any(|c| {
        depth += i32::from(c == b'<') - i32::from(c == b'>');
        c == b',' && depth == 0
    });
    if several || rest.contains(['[', '=', '(', '{']) {
        return None;
    }
    let name_start = rest.bytes().rposition(|c| !is_ident(c))? + 1;
    let ty = rest[..name_start].trim();
    let builtin = ty.split_whitespace().all(|w| {
        matches!(
            w,
            "int"
                | "unsigned"
                | "float"
                | "double"
                | "char"
                | "short"
                | "long"
                | "bool"
                | "const"
                | "volatile"
                | "signed"
                | "*"
        )
    });
    (!ty.is_empty() && !builtin && !ty.ends_with('*')).then_some(ty)
}

/// Bytes of the redzone after each `__shared__` variable (see [`add_shared_redzones`]): an
/// overrun of up to this much past a variable's end lands there, not in the next variable.
pub const SHARED_REDZONE_BYTES: usize = 256;

/// Declares a redzone, `__sim_redzone_N`, after each `__shared__` declaration that ends its line
/// (`__shared__ float As[T][T];`): gcc lays a function's static variables out in pairs, so one
/// lies between every two variables, and the race checker reports an access there as out of
/// bounds of the variable before it. Without it an index past the end of one array lands in the
/// next, silently, as on a GPU. Declarations in a preprocessor line, or followed on their line
/// by more code, are left as they are.
pub fn add_shared_redzones(code: &str) -> String {
    let b = code.as_bytes();
    let mut out = String::with_capacity(code.len() + 256);
    let mut rest = 0;
    let mut n = 0;
    for at in find_word(code, "__shared__") {
        if at < rest || code[..at].trim_end().ends_with("extern") {
            continue;
        }
        let line_start = code[..at].rfind('\n').map_or(0, |i| i + 1);
        let continued = code[..line_start.saturating_sub(1)].trim_end_matches([' ', '\t', '\r']);
        if code[line_start..].trim_start().starts_with('#') || continued.ends_with('\\') {
            continue;
        }
        let Some(semi) = code[at..].find([';', '{', '}', '\n']).map(|j| at + j) else {
            continue;
        };
        let decl = &code[at..semi];
        let after = code[semi + 1..].split('\n').next().unwrap_or("").trim();
        let balanced = decl.matches('(').count() == decl.matches(')').count();
        if b[semi] != b';'
            || !balanced
            || decl.contains('=')
            || !(after.is_empty() || after.starts_with("//"))
        {
            continue;
        }
        out.push_str(&code[rest..=semi]);
        out.push_str(&format!(
            " __shared__ unsigned char __sim_redzone_{n}[{SHARED_REDZONE_BYTES}] __attribute__((used));"
        ));
        n += 1;
        rest = semi + 1;
    }
    out.push_str(&code[rest..]);
    out
}

/// The simulator's copy of a source's `__shared__` declarations: `alignas` hoisted, a redzone
/// after each variable, `extern` arrays as pointers to the dynamic shared memory, and, with
/// `per_block` (kernels launched in clusters), each static variable's name the running
/// block's copy ([`shared_per_block`]).
pub fn rewrite_shared(code: &str, file: &str, per_block: bool) -> Result<String, String> {
    let code = shared_after_extern(code);
    let code =
        widen_swizzle_alignment(&drop_extern_of_static_shared(&drop_static_of_shared(&code)));
    let code = add_shared_redzones(&hoist_shared_alignas(&code));
    let code = if per_block {
        shared_per_block(&code, file)?
    } else {
        code
    };
    rewrite_extern_shared(&code, file)
}

/// The code of `src` and of each file it includes by `#include "..."` from its include
/// folders (a user's file and its local headers, which the unit only names), each once and
/// without comments: the text the checks of what a kernel does read. The lab's prelude for a
/// user's file (`kernel_lab_*.h`) is no kernel's code and is left out.
pub fn texts_read(src: &CudaSource) -> Vec<String> {
    let mut seen: Vec<std::path::PathBuf> = Vec::new();
    let mut out = vec![strip_comments(&src.code)];
    let mut at = 0;
    while at < out.len() {
        let included: Vec<String> = out[at]
            .lines()
            .filter_map(|l| {
                let rest = l.trim_start().strip_prefix('#')?.trim_start();
                let name = rest.strip_prefix("include")?.trim().strip_prefix('"')?;
                let name = name.split('"').next()?;
                (!name.starts_with("kernel_lab_")).then(|| name.to_string())
            })
            .collect();
        for name in included {
            let Some(path) = src
                .include_dirs
                .iter()
                .map(|d| d.join(&name))
                .find(|p| p.is_file())
            else {
                continue;
            };
            if seen.contains(&path) {
                continue;
            }
            if let Ok(text) = std::fs::read_to_string(&path) {
                out.push(strip_comments(&text));
            }
            seen.push(path);
        }
        at += 1;
    }
    out
}

/// Whether a comment-free source declares a `__shared__` variable other than `extern` arrays.
pub fn has_static_shared(code: &str) -> bool {
    let code = &shared_after_extern(code);
    find_word(code, "__shared__").into_iter().any(|at| {
        let before = code[..at].trim_end();
        !before.ends_with("extern") || extern_is_static(code, before.len() - "extern".len())
    })
}

/// The translation unit compiled for `src`, and its entries.
pub fn translation_unit(src: &CudaSource) -> Result<(String, Vec<String>), DeviceError> {
    let code = strip_comments(&src.code);
    let decls = entry_decls(&code);
    let names: Vec<String> = decls.iter().map(|d| d.name.clone()).collect();
    if names.is_empty() {
        return Err(DeviceError::Sim(format!(
            "{}: no `extern \"C\" __global__ void name(...)` kernel found",
            src.file
        )));
    }
    let (code, asm) = match inline_asm::rewrite(&code, &src.file) {
        Ok(Some(rewritten)) => (rewritten, true),
        Ok(None) => (code, false),
        Err(r) => return Err(Unsupported(format!("not simulated: {r}")).into()),
    };
    // The blocks of a cluster run together on one OS thread: each needs its own copy of the
    // static __shared__ variables, which a thread-local alone would not give.
    let per_block = decls.iter().any(|d| d.cluster_dims.is_some()) && has_static_shared(&code);
    let body = rewrite_shared(&code, &src.file, per_block).map_err(|why| {
        if per_block {
            Unsupported(format!("not simulated: {why}")).into()
        } else {
            DeviceError::Sim(why)
        }
    })?;
    let table: Vec<String> = decls
        .iter()
        .map(|d| match &d.cluster_dims {
            Some(dims) => format!("SIM_KERNEL_CLUSTER({}, {dims}),", d.name),
            None => format!("SIM_KERNEL({}),", d.name),
        })
        .collect();
    let tu = format!(
        "#include \"cuda_runtime.h\"\n{asm}#line 1 \"{file}\"\n{body}\n\
         SIM_EXPORT const SimKernel sim_kernels[] = {{{table} {{nullptr, nullptr, nullptr}}}};\n",
        asm = if asm { "#include \"sim_asm.h\"\n" } else { "" },
        file = src.file,
        table = table.join(" ")
    );
    Ok((tu, names))
}

/// FNV-1a: a stable hash for cache keys (std's hasher may change between releases).
fn fnv1a(parts: &[&str]) -> u64 {
    let mut h = 0xcbf2_9ce4_8422_2325u64;
    for p in parts {
        for &b in p.as_bytes().iter().chain([0xffu8].iter()) {
            h ^= u64::from(b);
            h = h.wrapping_mul(0x0100_0000_01b3);
        }
    }
    h
}

/// The most the cache of built modules keeps ([`crate::disk_cache`]): a module is about
/// 100 kB, and the whole test suite leaves about 17 MB.
pub const CACHE_LIMIT_BYTES: u64 = 256 << 20;

/// The environment variable that names the folder of built modules.
pub const CACHE_VARIABLE: &str = "KERNEL_LAB_SIM_CACHE";

/// Where built modules are cached: `$KERNEL_LAB_SIM_CACHE`, else `kernel-lab-sim` in the
/// temporary folder.
pub fn cache_dir() -> PathBuf {
    crate::disk_cache::folder_from_env(CACHE_VARIABLE)
        .unwrap_or_else(|| std::env::temp_dir().join("kernel-lab-sim"))
}

fn io_err(what: String) -> impl FnOnce(std::io::Error) -> DeviceError {
    move |e| DeviceError::Sim(format!("{what}: {e}"))
}

/// Compiles `tu` (the translation unit of `src`, or finds it in the cache) and returns the
/// shared object's path. Several processes may build the same module at once: each builds in
/// its own folder and renames the result into place, which is atomic.
pub fn build(
    src: &CudaSource,
    tu: &str,
    compiler: &str,
    how: Build,
) -> Result<PathBuf, DeviceError> {
    build_in(&cache_dir(), src, tu, compiler, how)
}

/// [`build`] with the modules kept in `dir`.
fn build_in(
    dir: &Path,
    src: &CudaSource,
    tu: &str,
    compiler: &str,
    how: Build,
) -> Result<PathBuf, DeviceError> {
    let mut flags = source_flags(src);
    flags.extend(BOUNDS_FLAGS.iter().map(|f| f.to_string()));
    if how == Build::Instrumented {
        flags.extend(TRAFFIC_FLAGS.iter().map(|f| f.to_string()));
    }
    let stamp = include_dirs_stamp(src);
    let mut parts = vec![compiler, tu, &stamp];
    parts.extend(FLAGS);
    parts.extend(flags.iter().map(String::as_str));
    parts.extend(HEADERS.iter().map(|(_, text)| *text));
    parts.extend(headers::all().iter().map(|h| h.text));
    parts.push(WORKING_FOLDER_MAP);
    let key = format!("{:016x}", fnv1a(&parts));
    flags.extend(working_folder_maps());
    let target = dir.join(format!("{key}.so"));
    if target.exists() {
        disk_cache::touch(&target);
        return Ok(target);
    }
    static SEQ: AtomicU64 = AtomicU64::new(0);
    let work = dir.join(format!(
        "build-{key}-{}-{}",
        std::process::id(),
        SEQ.fetch_add(1, Ordering::Relaxed)
    ));
    std::fs::create_dir_all(&work).map_err(io_err(format!("creating {}", work.display())))?;
    // The headers it writes there read as they are included (`lab/ptx.h`), in line tables and
    // in `__builtin_FILE()` (a site named in a header); the last map that matches wins,
    // should `work` lie in the working folder.
    flags.push(format!("-ffile-prefix-map={}=.", work.display()));
    let result = write_headers(&work).and_then(|()| match how {
        Build::Plain => Ok(None),
        Build::Instrumented => traffic_hooks(dir, &work, compiler).map(Some),
    });
    let result = result
        .and_then(|hooks| compile_in(&work, src, &flags, tu, compiler, hooks.as_deref(), &target));
    let _ = std::fs::remove_dir_all(&work);
    // Only the modules used longest ago go: this one, and any that another process has just
    // found, are the newest.
    disk_cache::trim(dir, CACHE_LIMIT_BYTES);
    result.map(|()| target)
}

/// Whether `name` is a header the simulator or the lab provides (`sim_runtime.h`, `mma.h`,
/// `lab/ptx.h`), as the line tables name it.
pub fn provided_header(name: &str) -> bool {
    HEADERS.iter().any(|(n, _)| *n == name) || headers::all().iter().any(|h| h.name == name)
}

/// Writes the simulator's headers and the lab's into `work`, where the builds include them.
fn write_headers(work: &Path) -> Result<(), DeviceError> {
    let lab = headers::all().iter().map(|h| (h.name, h.text));
    for (name, text) in HEADERS.iter().copied().chain(lab) {
        let path = work.join(name);
        if let Some(dir) = path.parent() {
            std::fs::create_dir_all(dir).map_err(io_err(format!("creating {}", dir.display())))?;
        }
        std::fs::write(&path, text).map_err(io_err(format!("writing {name}")))?;
    }
    Ok(())
}

/// The compiled traffic hooks (`sim_traffic.h`) every instrumented module links, built once
/// per compiler and header text and kept in `dir` beside the modules: compiling them took
/// longer than a kernel (1.4 s against 0.8 s for a GEMM rung). `work` holds the headers.
fn traffic_hooks(dir: &Path, work: &Path, compiler: &str) -> Result<PathBuf, DeviceError> {
    let mut parts = vec![compiler, "traffic hooks"];
    parts.extend(FLAGS);
    parts.extend(HEADERS.iter().map(|(_, text)| *text));
    let target = dir.join(format!("hooks-{:016x}.o", fnv1a(&parts)));
    if target.exists() {
        disk_cache::touch(&target);
        return Ok(target);
    }
    let (cpp, obj) = (work.join("hooks.cpp"), work.join("hooks.o"));
    std::fs::write(&cpp, "#include \"sim_traffic.h\"\n")
        .map_err(io_err("writing the traffic hooks".into()))?;
    let out = Command::new(compiler)
        .args(FLAGS)
        .arg("-I")
        .arg(work)
        .args([
            "-c".as_ref(),
            cpp.as_os_str(),
            "-o".as_ref(),
            obj.as_os_str(),
        ])
        .output()
        .map_err(io_err(format!("running {compiler}")))?;
    if !out.status.success() {
        return Err(DeviceError::Compile {
            compiler: compiler_version(compiler).unwrap_or_else(|_| compiler.to_string()),
            file: "sim_traffic.h".to_string(),
            arch: "the CUDA simulator".to_string(),
            log: String::from_utf8_lossy(&out.stderr).into_owned(),
        });
    }
    // Renamed into place: another process building the same hooks finds a whole file or none.
    std::fs::rename(&obj, &target).map_err(io_err(format!("caching {}", target.display())))?;
    Ok(target)
}

/// Compiles `tu` in `work` (which holds the headers) into the module `target`; an
/// instrumented build links the compiled traffic `hooks`.
fn compile_in(
    work: &Path,
    src: &CudaSource,
    flags: &[String],
    tu: &str,
    compiler: &str,
    hooks: Option<&Path>,
    target: &Path,
) -> Result<(), DeviceError> {
    let cpp = work.join("kernel.cpp");
    std::fs::write(&cpp, tu).map_err(io_err("writing the translation unit".into()))?;
    let so = work.join("kernel.so");
    let compile = |args: Vec<&OsStr>| {
        Command::new(compiler)
            .args(FLAGS)
            .arg("-I")
            .arg(work)
            .args(args)
            .output()
            .map_err(io_err(format!("running {compiler}")))
    };
    // Compiled with the sanitizers' checks, then linked without their runtimes (the link
    // names no -fsanitize): the module's own handlers and hooks serve them. An instrumented
    // module links the traffic hooks, compiled apart, and `-z defs` turns a hook the
    // instrumentation wants and the file lacks into a build error rather than a failure to load.
    let obj = work.join("kernel.o");
    let out = compile(
        flags
            .iter()
            .map(OsStr::new)
            .chain([
                "-c".as_ref(),
                cpp.as_os_str(),
                "-o".as_ref(),
                obj.as_os_str(),
            ])
            .collect(),
    )?;
    let out = if out.status.success() {
        let mut link: Vec<&OsStr> = hooks.map(Path::as_os_str).into_iter().collect();
        link.push(obj.as_os_str());
        if hooks.is_some() {
            link.push("-Wl,-z,defs".as_ref());
        }
        link.extend(["-o".as_ref(), so.as_os_str()]);
        compile(link)?
    } else {
        out
    };
    if !out.status.success() {
        let log = String::from_utf8_lossy(&out.stderr).replace(&format!("{}/", work.display()), "");
        return Err(DeviceError::Compile {
            compiler: compiler_version(compiler).unwrap_or_else(|_| compiler.to_string()),
            file: src.label(),
            arch: "the CUDA simulator".to_string(),
            log,
        });
    }
    std::fs::rename(&so, target).map_err(io_err(format!("caching {}", target.display())))
}

/// One kernel of a loaded module.
pub struct Entry {
    pub thunk: Thunk,
    /// One code per parameter: `p` pointer, `i` 32-bit integer, `f` float, `?` other.
    pub params: String,
    /// Its `__cluster_dims__`: the blocks that run together as one unit (`[1, 1, 1]`: alone).
    pub cluster: [u32; 3],
}

/// A loaded kernel module.
pub struct Module {
    pub entries: HashMap<String, Entry>,
    pub run_units: RunUnits,
    pub fault: FaultHook,
    pub trim: Trim,
    /// The race checker of global memory's setup and teardown around a launch (instrumented
    /// modules only).
    pub global: Option<(GlobalBegin, GlobalEnd)>,
    /// The loaded file, whose line tables name the source line of an access a failure
    /// names ([`super::site`]).
    pub path: PathBuf,
    // Last: the functions above point into it.
    _lib: libloading::Library,
}

impl Module {
    /// The address and size in bytes of a global of the module (a `__constant__` array), if
    /// it defines one.
    pub fn symbol(&self, name: &str) -> Option<(usize, usize)> {
        let name = CString::new(name).ok()?;
        // SAFETY: only the symbol's address is read, never called or dereferenced here.
        let addr = unsafe {
            self._lib
                .get::<*mut u8>(name.as_bytes_with_nul())
                .ok()
                .map(|s| *s as usize)
        }?;
        // glibc's RTLD_DL_SYMENT: dladdr1 also gives the symbol's ELF entry, whose size it is.
        const RTLD_DL_SYMENT: libc::c_int = 1;
        let mut info = std::mem::MaybeUninit::<libc::Dl_info>::uninit();
        let mut sym: *mut libc::c_void = std::ptr::null_mut();
        // SAFETY: `addr` lies in the loaded library; dladdr1 fills `info` and points `sym` at
        // the library's own symbol table entry, which stays mapped while the library is.
        let size = unsafe {
            let found = libc::dladdr1(
                addr as *const libc::c_void,
                info.as_mut_ptr(),
                &mut sym,
                RTLD_DL_SYMENT,
            );
            (found != 0 && !sym.is_null())
                .then(|| (*sym.cast::<libc::Elf64_Sym>()).st_size as usize)
        }?;
        Some((addr, size))
    }

    pub fn load(path: &Path) -> Result<Self, DeviceError> {
        let err =
            |e: libloading::Error| DeviceError::Sim(format!("loading {}: {e}", path.display()));
        // SAFETY: the library is one this module built from the emulation headers; its
        // initialisers only set up statics.
        let lib = unsafe { libloading::Library::new(path) }.map_err(err)?;
        // SAFETY: the symbols have the types sim_runtime.h declares.
        unsafe {
            let run_units = *lib.get::<RunUnits>(b"sim_run_units\0").map_err(err)?;
            let fault = *lib.get::<FaultHook>(b"sim_fault\0").map_err(err)?;
            let trim = *lib.get::<Trim>(b"sim_trim\0").map_err(err)?;
            let global = match (
                lib.get::<GlobalBegin>(b"sim_global_begin\0"),
                lib.get::<GlobalEnd>(b"sim_global_end\0"),
            ) {
                (Ok(begin), Ok(end)) => Some((*begin, *end)),
                _ => None,
            };
            let table = *lib.get::<*const SimKernel>(b"sim_kernels\0").map_err(err)?;

            let mut entries = HashMap::new();
            let mut k = table;
            while !(*k).name.is_null() {
                let name = CStr::from_ptr((*k).name).to_string_lossy().into_owned();
                let params = CStr::from_ptr((*k).params).to_string_lossy().into_owned();
                if let Some(thunk) = (*k).thunk {
                    let cluster = (*k).cluster;
                    entries.insert(
                        name,
                        Entry {
                            thunk,
                            params,
                            cluster,
                        },
                    );
                }
                k = k.add(1);
            }
            Ok(Self {
                entries,
                run_units,
                fault,
                trim,
                global,
                path: path.to_path_buf(),
                _lib: lib,
            })
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Instrumented modules link one compiled copy of the traffic hooks, built by the first
    /// and found by the next (the same file: a second build would rename a new one into
    /// place); each module still has the hooks (`-z defs` fails a module that lacks one).
    #[test]
    fn instrumented_modules_share_one_compiled_copy_of_the_hooks() {
        use std::os::unix::fs::MetadataExt;
        let dir = std::env::temp_dir().join(format!("kernel-lab-sim-hooks-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        let hooks = || -> Vec<u64> {
            std::fs::read_dir(&dir)
                .unwrap()
                .filter_map(|e| e.ok())
                .filter(|e| e.file_name().to_string_lossy().starts_with("hooks-"))
                .map(|e| e.metadata().unwrap().ino())
                .collect()
        };
        let mut built = Vec::new();
        for body in ["p[0] = 1.0f;", "p[threadIdx.x] += p[0];"] {
            let code = format!("extern \"C\" __global__ void k(float *p) {{ {body} }}");
            let src = CudaSource::embedded("tests/hooks.cu", Box::leak(code.into_boxed_str()));
            let (tu, _) = translation_unit(&src).unwrap();
            built.push(build_in(&dir, &src, &tu, &compiler(), Build::Instrumented).unwrap());
            built.dedup();
            assert_eq!(hooks().len(), 1, "{:?}", std::fs::read_dir(&dir));
        }
        assert_eq!(built.len(), 2, "two kernels, two modules");
        let first = hooks();
        let code = "extern \"C\" __global__ void k(float *p) { p[1] = 2.0f; }";
        let src = CudaSource::embedded("tests/hooks.cu", code);
        let (tu, _) = translation_unit(&src).unwrap();
        built.push(build_in(&dir, &src, &tu, &compiler(), Build::Instrumented).unwrap());
        assert_eq!(hooks(), first, "the hooks were built again");
        for so in &built {
            // SAFETY: a module built above; loading it runs only the runtime's initializers.
            let lib = unsafe { libloading::Library::new(so) };
            assert!(lib.is_ok(), "{so:?}: {:?}", lib.err());
        }
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn finds_entries() {
        let code = strip_comments(
            "// asm(\"x\") in a comment\nextern \"C\" __global__ void __launch_bounds__(256) k1(int a) {}\n\
             __global__ void not_c(int) {}\nextern \"C\" __global__ void k2 (float *p) { asm volatile(\"\"); }",
        );
        assert_eq!(entries(&code), vec!["k1", "k2"]);
    }

    #[test]
    fn reads_cluster_dims_before_or_after_void() {
        let code = "extern \"C\" __global__ void __cluster_dims__(2, 1, 1) __launch_bounds__(384, 1)\n\
                    a(int x) {}\nextern \"C\" __global__ __cluster_dims__(CLUSTER) void b() {}\n\
                    extern \"C\" __global__ void c() {}";
        let decls = entry_decls(code);
        let dims: Vec<_> = decls
            .iter()
            .map(|d| (d.name.as_str(), d.cluster_dims.as_deref()))
            .collect();
        assert_eq!(
            dims,
            [("a", Some("2, 1, 1")), ("b", Some("CLUSTER")), ("c", None)]
        );
        assert!(has_static_shared(
            "__global__ void k() { __shared__ float t[4]; }"
        ));
        assert!(!has_static_shared(
            "void k() { extern __shared__ float t[]; }"
        ));
    }

    #[test]
    fn hoists_alignas_written_after_shared() {
        let code = "__shared__ alignas(128) half a[64], b[64];\n\
                    __shared__  alignas ( sizeof(float4) ) float c[4];\n\
                    alignas(16) __shared__ float d[4];\n\
                    extern __shared__ alignas(16) float e[];";
        let out = hoist_shared_alignas(code);
        assert_eq!(
            out,
            "alignas(128) __shared__ half a[64], b[64];\n\
             alignas ( sizeof(float4) ) __shared__ float c[4];\n\
             alignas(16) __shared__ float d[4];\n\
             extern __shared__ alignas(16) float e[];"
        );
    }

    /// A header added to sim/include but not to [`HEADERS`] would be missing from the folder
    /// the simulator compiles against.
    #[test]
    fn every_header_of_the_simulator_is_served() {
        let base = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("sim/include");
        let files = crate::testing::files_below(&base);
        assert!(files.len() > 10, "{files:?}");
        for f in files {
            assert!(
                HEADERS.iter().any(|(name, _)| *name == f),
                "sim/include/{f} is not in HEADERS"
            );
        }
    }

    #[test]
    fn puts_a_redzone_after_each_shared_declaration_that_ends_its_line() {
        let code = "void f() {\n  __shared__ float As[16][17];  // a tile\n  \
                    __shared__ float s[(N + 1) * 2], t[4];\n  \
                    #define TILE __shared__ float u[4];\n  __shared__ int x; int y = x;\n  \
                    extern __shared__ float d[];\n}\n__shared__ double g[8];\n";
        let out = add_shared_redzones(code);
        let rz = |n: usize| {
            format!(
                " __shared__ unsigned char __sim_redzone_{n}[{SHARED_REDZONE_BYTES}] __attribute__((used));"
            )
        };
        assert_eq!(
            out,
            format!(
                "void f() {{\n  __shared__ float As[16][17];{}  // a tile\n  \
                 __shared__ float s[(N + 1) * 2], t[4];{}\n  \
                 #define TILE __shared__ float u[4];\n  __shared__ int x; int y = x;\n  \
                 extern __shared__ float d[];\n}}\n__shared__ double g[8];{}\n",
                rz(0),
                rz(1),
                rz(2)
            )
        );
    }

    #[test]
    fn reads_extern_shared_in_each_word_order() {
        let code = "void f() {\n  extern float __shared__ a[];\n  __shared__ extern float b[];\n  \
                    extern unsigned int  __shared__ c[];\n  float __shared__ d[4];\n  \
                    extern int x; __shared__ float e[4];\n}";
        let out = shared_after_extern(code);
        assert_eq!(
            out,
            "void f() {\n  extern __shared__ float a[];\n  extern __shared__ float b[];\n  \
             extern __shared__ unsigned int  c[];\n  float __shared__ d[4];\n  \
             extern int x; __shared__ float e[4];\n}"
        );
        assert_eq!(
            out.lines().map(str::len).collect::<Vec<_>>(),
            code.lines().map(str::len).collect::<Vec<_>>()
        );
    }

    #[test]
    fn rewrites_extern_shared() {
        let code = "void f() { extern __shared__ __align__(16) float smem[]; smem[0] = 1; }";
        let out = rewrite_extern_shared(code, "x.cu").unwrap();
        assert!(
            out.contains("float *const smem = reinterpret_cast<float *>(::sim::dynamic_smem());"),
            "{out}"
        );
        let rows = rewrite_extern_shared(
            "void f() { extern __shared__ half smem[][AB_SMEM_STRIDE]; }",
            "x.cu",
        )
        .unwrap();
        assert!(
            rows.contains(
                "half (*const smem)[AB_SMEM_STRIDE] = \
                 reinterpret_cast<half (*)[AB_SMEM_STRIDE]>(::sim::dynamic_smem());"
            ),
            "{rows}"
        );
        // The type before `__shared__`, as an NVIDIA sample writes it (users' files are
        // rewritten by rewrite_shared alone).
        let after = rewrite_shared(
            "void f() { extern float __shared__ smem[]; }",
            "x.cu",
            false,
        )
        .unwrap();
        assert!(
            after.contains("float *const smem = reinterpret_cast<float *>(::sim::dynamic_smem());"),
            "{after}"
        );
        // A whole object, as fast.cu's kernel 3 declares its tiles: allocated statically.
        let whole = "void f() { extern __shared__ __align__(128) SMem<BM, BN, BK> s; s.A[0] = 1; }";
        assert!(has_static_shared(whole) && !has_static_shared("extern __shared__ int b[];"));
        let out = rewrite_shared(whole, "x.cu", false).unwrap();
        assert!(
            !out.contains("extern") && !out.contains("dynamic_smem"),
            "{out}"
        );
        assert!(
            out.contains(
                "alignas(::sim::placed_align(alignof(SMem<BM, BN, BK>))) __shared__ \
                 __align__(1024) SMem<BM, BN, BK> s;"
            ),
            "{out}"
        );
        let e = rewrite_extern_shared("void f() { extern __shared__ float s[4]; }", "x.cu");
        assert!(e.unwrap_err().contains("expected `T name[]`"));
        // Swizzled tiles land on 1024-byte boundaries, as a GPU's packing puts them.
        let tiles = "__shared__ alignas(128) bf16 sA[64]; __shared__ __align__(16) float b[4];\n\
                     alignas(256) __shared__ int c[8]; __shared__ __attribute__((aligned(128))) int d;";
        let wide = widen_swizzle_alignment(tiles);
        assert_eq!(
            wide,
            "__shared__ alignas(1024) bf16 sA[64]; __shared__ __align__(16) float b[4];\n\
             alignas(1024) __shared__ int c[8]; __shared__ __attribute__((aligned(1024))) int d;"
        );
        let dynamic = "extern __shared__ __align__(128) float d[];";
        assert_eq!(widen_swizzle_alignment(dynamic), dynamic);
        // One object of a type of its own takes that type's alignment, raised as above.
        assert_eq!(
            widen_swizzle_alignment("void f() { __shared__ SMem<BM, BN> s; __shared__ int i; }"),
            "void f() { alignas(::sim::placed_align(alignof(SMem<BM, BN>))) __shared__ SMem<BM, \
             BN> s; __shared__ int i; }"
        );
        for plain in [
            "__shared__ barrier a, b;",
            "__shared__ float *p;",
            "__shared__ T x[4];",
        ] {
            assert_eq!(widen_swizzle_alignment(plain), plain);
        }
        for code in [
            "extern __shared__ int buf[];\nvoid g() {}",
            "namespace detail { extern __shared__ int buf[]; }\nvoid g() {}",
        ] {
            let top = rewrite_extern_shared(code, "x.cu").unwrap();
            assert!(top.contains("#define buf ("), "{top}");
            assert!(top.contains("#line 1 \"x.cu\""), "{top}");
        }
        // After a `#line` directive the line and file are the directive's.
        let joined = "int a;\n#line 1 \"b.cu\"\nint b;\nextern __shared__ int s[];\nvoid g() {}";
        let out = rewrite_extern_shared(joined, "joined.cu").unwrap();
        assert!(out.contains("#line 2 \"b.cu\""), "{out}");
    }
}
