//! Turning a user's kernel file into a compilation unit the lab can launch: host code removed,
//! a prelude for names host headers usually provide, and the entry launched as it is written
//! (NVRTC) or through an `extern "C"` wrapper with the workload's parameter list (the
//! simulator, or a kernel whose parameter types need converting).

use super::buffers::Buffers;
use super::signature::{ArgList, Signature};
use kernel::Dtype;
use kernel::sim::compile::strip_comments;
use std::path::PathBuf;
use std::sync::OnceLock;

/// The stand-in headers (`harness/user-include/`), served to NVRTC and the simulator through
/// an include folder that comes after the user's own.
const STANDINS: &[(&str, &str)] = &[
    (
        "kernel_lab_user.h",
        include_str!("../../user-include/kernel_lab_user.h"),
    ),
    (
        "kernel_lab_wrap_begin.h",
        include_str!("../../user-include/kernel_lab_wrap_begin.h"),
    ),
    (
        "kernel_lab_wrap_end.h",
        include_str!("../../user-include/kernel_lab_wrap_end.h"),
    ),
    ("algorithm", include_str!("../../user-include/algorithm")),
    (
        "arpa/inet.h",
        include_str!("../../user-include/arpa/inet.h"),
    ),
    ("assert.h", include_str!("../../user-include/assert.h")),
    ("bit", include_str!("../../user-include/bit")),
    (
        "bits/stdc++.h",
        include_str!("../../user-include/bits/stdc++.h"),
    ),
    ("cassert", include_str!("../../user-include/cassert")),
    ("cfloat", include_str!("../../user-include/cfloat")),
    ("climits", include_str!("../../user-include/climits")),
    ("concepts", include_str!("../../user-include/concepts")),
    ("cstddef", include_str!("../../user-include/cstddef")),
    ("cmath", include_str!("../../user-include/cmath")),
    ("cstdint", include_str!("../../user-include/cstdint")),
    ("cstdio", include_str!("../../user-include/cstdio")),
    ("cstdlib", include_str!("../../user-include/cstdlib")),
    ("cstring", include_str!("../../user-include/cstring")),
    ("ctime", include_str!("../../user-include/ctime")),
    ("cublas.h", include_str!("../../user-include/cublas.h")),
    (
        "cublas_v2.h",
        include_str!("../../user-include/cublas_v2.h"),
    ),
    ("cublasLt.h", include_str!("../../user-include/cublasLt.h")),
    ("cuda.h", include_str!("../../user-include/cuda.h")),
    ("curand.h", include_str!("../../user-include/curand.h")),
    (
        "curand_kernel.h",
        include_str!("../../user-include/curand_kernel.h"),
    ),
    (
        "cuda_profiler_api.h",
        include_str!("../../user-include/cuda_profiler_api.h"),
    ),
    (
        "device_launch_parameters.h",
        include_str!("../../user-include/device_launch_parameters.h"),
    ),
    (
        "cudaTypedefs.h",
        include_str!("../../user-include/cudaTypedefs.h"),
    ),
    ("dirent.h", include_str!("../../user-include/dirent.h")),
    ("exception", include_str!("../../user-include/exception")),
    ("float.h", include_str!("../../user-include/float.h")),
    ("fstream", include_str!("../../user-include/fstream")),
    (
        "initializer_list",
        include_str!("../../user-include/initializer_list"),
    ),
    ("iomanip", include_str!("../../user-include/iomanip")),
    ("iostream", include_str!("../../user-include/iostream")),
    ("limits.h", include_str!("../../user-include/limits.h")),
    ("math.h", include_str!("../../user-include/math.h")),
    ("memory", include_str!("../../user-include/memory")),
    (
        "nvtx3/nvToolsExt.h",
        include_str!("../../user-include/nvtx3/nvToolsExt.h"),
    ),
    (
        "nvtx3/nvToolsExtCudaRt.h",
        include_str!("../../user-include/nvtx3/nvToolsExtCudaRt.h"),
    ),
    ("omp.h", include_str!("../../user-include/omp.h")),
    ("sstream", include_str!("../../user-include/sstream")),
    ("stdbool.h", include_str!("../../user-include/stdbool.h")),
    ("stddef.h", include_str!("../../user-include/stddef.h")),
    ("stdexcept", include_str!("../../user-include/stdexcept")),
    ("stdint.h", include_str!("../../user-include/stdint.h")),
    ("stdio.h", include_str!("../../user-include/stdio.h")),
    ("stdlib.h", include_str!("../../user-include/stdlib.h")),
    ("string", include_str!("../../user-include/string")),
    ("string.h", include_str!("../../user-include/string.h")),
    ("strings.h", include_str!("../../user-include/strings.h")),
    (
        "sys/syscall.h",
        include_str!("../../user-include/sys/syscall.h"),
    ),
    ("sys/stat.h", include_str!("../../user-include/sys/stat.h")),
    ("sys/time.h", include_str!("../../user-include/sys/time.h")),
    ("time.h", include_str!("../../user-include/time.h")),
    (
        "torch/extension.h",
        include_str!("../../user-include/torch/extension.h"),
    ),
    (
        "torch/python.h",
        include_str!("../../user-include/torch/python.h"),
    ),
    (
        "torch/torch.h",
        include_str!("../../user-include/torch/torch.h"),
    ),
    (
        "torch/types.h",
        include_str!("../../user-include/torch/types.h"),
    ),
    (
        "type_traits",
        include_str!("../../user-include/type_traits"),
    ),
    ("unistd.h", include_str!("../../user-include/unistd.h")),
    ("vector", include_str!("../../user-include/vector")),
    ("utility", include_str!("../../user-include/utility")),
    ("iterator", include_str!("../../user-include/iterator")),
    ("numeric", include_str!("../../user-include/numeric")),
    ("functional", include_str!("../../user-include/functional")),
    ("chrono", include_str!("../../user-include/chrono")),
    ("array", include_str!("../../user-include/array")),
    ("tuple", include_str!("../../user-include/tuple")),
    ("limits", include_str!("../../user-include/limits")),
    ("random", include_str!("../../user-include/random")),
    ("map", include_str!("../../user-include/map")),
    (
        "unordered_map",
        include_str!("../../user-include/unordered_map"),
    ),
    ("set", include_str!("../../user-include/set")),
    ("thread", include_str!("../../user-include/thread")),
    ("mutex", include_str!("../../user-include/mutex")),
    (
        "helper_cuda.h",
        include_str!("../../user-include/helper_cuda.h"),
    ),
    (
        "helper_functions.h",
        include_str!("../../user-include/helper_functions.h"),
    ),
    (
        "helper_string.h",
        include_str!("../../user-include/helper_string.h"),
    ),
    (
        "helper_timer.h",
        include_str!("../../user-include/helper_timer.h"),
    ),
    (
        "kernel_lab_host_type.h",
        include_str!("../../user-include/kernel_lab_host_type.h"),
    ),
    (
        "kernel_lab_streams.h",
        include_str!("../../user-include/kernel_lab_streams.h"),
    ),
    ("atomic", include_str!("../../user-include/atomic")),
    ("cctype", include_str!("../../user-include/cctype")),
    ("cerrno", include_str!("../../user-include/cerrno")),
    ("cinttypes", include_str!("../../user-include/cinttypes")),
    (
        "condition_variable",
        include_str!("../../user-include/condition_variable"),
    ),
    ("csignal", include_str!("../../user-include/csignal")),
    ("cstdarg", include_str!("../../user-include/cstdarg")),
    ("ctype.h", include_str!("../../user-include/ctype.h")),
    ("cudnn.h", include_str!("../../user-include/cudnn.h")),
    ("deque", include_str!("../../user-include/deque")),
    ("errno.h", include_str!("../../user-include/errno.h")),
    ("future", include_str!("../../user-include/future")),
    ("inttypes.h", include_str!("../../user-include/inttypes.h")),
    ("ios", include_str!("../../user-include/ios")),
    ("iosfwd", include_str!("../../user-include/iosfwd")),
    ("istream", include_str!("../../user-include/istream")),
    ("list", include_str!("../../user-include/list")),
    ("optional", include_str!("../../user-include/optional")),
    ("ostream", include_str!("../../user-include/ostream")),
    ("pthread.h", include_str!("../../user-include/pthread.h")),
    ("queue", include_str!("../../user-include/queue")),
    ("signal.h", include_str!("../../user-include/signal.h")),
    ("stack", include_str!("../../user-include/stack")),
    ("stdarg.h", include_str!("../../user-include/stdarg.h")),
    (
        "string_view",
        include_str!("../../user-include/string_view"),
    ),
    ("typeinfo", include_str!("../../user-include/typeinfo")),
    ("new", include_str!("../../user-include/new")),
    ("wb.h", include_str!("../../user-include/wb.h")),
    (
        "ATen/ATen.h",
        include_str!("../../user-include/ATen/ATen.h"),
    ),
    (
        "ATen/AccumulateType.h",
        include_str!("../../user-include/ATen/AccumulateType.h"),
    ),
    (
        "ATen/cuda/CUDAContext.h",
        include_str!("../../user-include/ATen/cuda/CUDAContext.h"),
    ),
    (
        "ATen/cuda/DeviceUtils.cuh",
        include_str!("../../user-include/ATen/cuda/DeviceUtils.cuh"),
    ),
    (
        "c10/macros/Macros.h",
        include_str!("../../user-include/c10/macros/Macros.h"),
    ),
    (
        "c10/cuda/CUDAGuard.h",
        include_str!("../../user-include/c10/cuda/CUDAGuard.h"),
    ),
    (
        "c10/util/Half.h",
        include_str!("../../user-include/c10/util/Half.h"),
    ),
    (
        "c10/util/BFloat16.h",
        include_str!("../../user-include/c10/util/BFloat16.h"),
    ),
    (
        "c10/util/kernel_lab_float16.h",
        include_str!("../../user-include/c10/util/kernel_lab_float16.h"),
    ),
    (
        "sys/types.h",
        include_str!("../../user-include/sys/types.h"),
    ),
    (
        "unordered_set",
        include_str!("../../user-include/unordered_set"),
    ),
    ("variant", include_str!("../../user-include/variant")),
];

/// The names of the stand-in headers, for the docs and `harness` messages.
pub fn standin_names() -> Vec<&'static str> {
    STANDINS
        .iter()
        .map(|(n, _)| *n)
        .filter(|n| !n.starts_with("kernel_lab_"))
        .collect()
}

/// The folder holding the stand-in headers, written once per process (a folder per content,
/// so the simulator's cache stamp stays stable across runs).
pub fn standin_dir() -> Result<PathBuf, String> {
    static DIR: OnceLock<Result<PathBuf, String>> = OnceLock::new();
    DIR.get_or_init(|| {
        let mut h = 0xcbf2_9ce4_8422_2325u64;
        for (name, text) in STANDINS {
            for &b in name.as_bytes().iter().chain(text.as_bytes()) {
                h ^= u64::from(b);
                h = h.wrapping_mul(0x0100_0000_01b3);
            }
        }
        let dir = std::env::temp_dir().join(format!("kernel-lab-user-include-{h:016x}"));
        for (name, text) in STANDINS {
            let path = dir.join(name);
            if std::fs::read_to_string(&path).is_ok_and(|t| t == *text) {
                continue;
            }
            // Another process may be reading the folder.
            crate::output::write_atomic(&path, text).map_err(|e| format!("{e:#}"))?;
        }
        Ok(dir)
    })
    .clone()
}

/// The file name compile logs show for the wrapper of launch `at` (0 for the entry, 1 for
/// the first `then=`): an error there is a parameter mismatch.
pub fn wrapper_file(list: &ArgList, sig: &Signature, at: usize) -> String {
    let then = match at {
        0 => String::new(),
        n => format!(" of launch {}", n + 1),
    };
    match list.custom {
        Some(_) => format!("[args list{then}]"),
        None => format!("[{} signature{then}]", sig.name),
    }
}

/// `user_sgemm_128_128_8` for `sgemm<128,128,8>`: the name the lab launches the entry by.
pub fn wrapper_name(entry: &str) -> String {
    let mut out = String::from("user_");
    for c in entry.chars() {
        if c.is_ascii_alphanumeric() {
            out.push(c);
        } else if !out.ends_with('_') {
            out.push('_');
        }
    }
    out.trim_end_matches('_').to_string()
}

/// What a compilation unit is made of: the prepared user's file and, for each launch, the
/// wrapper's terms. Every launch of a plan is in one unit, so that they share one module and
/// its `__device__` variables, as the kernels of one file do in host code.
pub struct UnitParts<'a> {
    /// The prepared copy of the user's file, as `#include` names it.
    pub main: &'a str,
    /// Whether the clusters come from `cluster=` rather than the kernels' declarations: a
    /// direct build then declares them on the file's kernels, as a launch attribute would
    /// give them.
    pub host_cluster: bool,
    pub sig: &'a Signature,
    pub buffers: &'a Buffers,
    pub launches: Vec<LaunchParts<'a>>,
}

/// One launch's part of a unit.
pub struct LaunchParts<'a> {
    pub entry: &'a str,
    /// The name the lab launches it by ([`wrapper_name`]).
    pub name: &'a str,
    /// Its place in the plan, for the wrapper's file name ([`wrapper_file`]).
    pub at: usize,
    /// For an overloaded entry, the cast that names the overload the lab runs
    /// ([`super::overload`]); calls and the argument check go through it.
    pub overload: Option<&'a str>,
    /// The entry's `__cluster_dims__` arguments: the wrapper, which is what the simulator
    /// (and a converting launch) launches, declares the same clusters.
    pub cluster_dims: Option<&'a str>,
    pub list: &'a ArgList,
    /// The entry's launch bounds, for the wrapper through which a kernel whose parameters
    /// need converting is launched ([`UnitParts::through_wrapper`]).
    pub bounds: &'a str,
}

impl UnitParts<'_> {
    /// The prelude and the headers of the wrapper's parameter types.
    fn head(&self) -> String {
        let mut out = String::from("#include \"kernel_lab_user.h\"\n");
        let types: Vec<Dtype> = self
            .buffers
            .inputs
            .iter()
            .chain(&self.buffers.scratch)
            .chain([&self.buffers.output])
            .copied()
            .collect();
        if types.contains(&Dtype::F16) {
            out.push_str("#include <cuda_fp16.h>\n");
        }
        if types.contains(&Dtype::Bf16) {
            out.push_str("#include <cuda_bf16.h>\n");
        }
        if types.iter().any(|d| d.fp8().is_some()) {
            out.push_str("#include <cuda_fp8.h>\n");
        }
        out
    }

    /// `extern "C" __global__ void BOUNDS user_x(float * A, ...) {\n  entry(A, ...);\n}`.
    fn wrapper(&self, l: &LaunchParts, bounds: &str) -> String {
        let mut bounds = if bounds.is_empty() {
            String::new()
        } else {
            format!("{bounds} ")
        };
        if let Some(dims) = l.cluster_dims {
            bounds.push_str(&format!("__cluster_dims__({dims}) "));
        }
        format!(
            "#line 1 \"{file}\"\nextern \"C\" __global__ void {bounds}{name}{params} \
             {{\n  {entry}({args});\n}}\n",
            file = wrapper_file(l.list, self.sig, l.at),
            name = l.name,
            params = l.list.wrapper_params(self.buffers),
            entry = l.overload.unwrap_or(l.entry),
            args = l.list.call(self.buffers),
        )
    }

    /// The unit that launches the user's kernel itself: NVRTC compiles the file as written
    /// (its `__launch_bounds__`, `__restrict__` and parameter types as they are), so its
    /// registers are those of a plain build, and checks that the kernel takes the lab's
    /// arguments; the plan names the entry through [`kernel::CudaSource::cxx_entries`].
    /// The simulator, which needs an `extern "C"` entry, gets a wrapper that calls it.
    pub fn direct(&self) -> String {
        // `cluster=`: every kernel of the file declared with the clusters, for NVRTC (the
        // simulator launches the wrapper, which declares them); only the entry is launched.
        let dims = self.launches.first().and_then(|l| l.cluster_dims);
        let (clusters, plain) = match (self.host_cluster, dims) {
            (true, Some(dims)) => (
                format!(
                    "#ifndef KERNEL_LAB_SIM\n#undef __global__\n\
                     #define __global__ __location__(global) __cluster_dims__({dims})\n#endif\n"
                ),
                "#ifndef KERNEL_LAB_SIM\n#undef __global__\n#define __global__ __location__(global)\n#endif\n",
            ),
            _ => (String::new(), ""),
        };
        let mut out = format!(
            "{head}{clusters}#include \"{main}\"\n{plain}",
            head = self.head(),
            main = self.main,
        );
        for l in &self.launches {
            out.push_str(&format!(
                "#ifdef KERNEL_LAB_SIM\n{wrapper}#else\n#line 1 \"{file}\"\n\
                 static_assert(sizeof(::kernel_lab::accepts(::kernel_lab::params_of({address}), \
                 {values})), \"the lab's arguments\");\n#endif\n",
                wrapper = self.wrapper(l, ""),
                file = wrapper_file(l.list, self.sig, l.at),
                address = l
                    .overload
                    .map_or_else(|| format!("&{}", l.entry), str::to_string),
                values = l.list.sample_values(self.buffers).join(", "),
            ));
        }
        out
    }

    /// The unit for a kernel whose parameters cannot take the lab's arguments as they are
    /// (a `size_t` where the lab passes an `int`): its kernels become device functions and an
    /// `extern "C"` wrapper with the lab's parameters, declared with the kernel's own launch
    /// bounds (each launch's `bounds`, read from a direct build), converts and calls it. The
    /// file's kernels are all device functions then, so every launch of the plan goes
    /// through its wrapper.
    pub fn through_wrapper(&self) -> String {
        let mut out = format!(
            "{head}#include \"kernel_lab_wrap_begin.h\"\n#include \"{main}\"\n\
             #include \"kernel_lab_wrap_end.h\"\n",
            head = self.head(),
            main = self.main,
        );
        for l in &self.launches {
            out.push_str(&self.wrapper(l, l.bounds));
        }
        out
    }
}

/// The unit `harness inspect FILE.cu` compiles: the prelude and the prepared file, its
/// kernels left as they are (a template has no code until instantiated).
pub fn for_inspect(main: &str) -> String {
    format!("#include \"kernel_lab_user.h\"\n#include \"{main}\"\n")
}

fn is_ident(c: u8) -> bool {
    c.is_ascii_alphanumeric() || c == b'_'
}

pub(crate) fn has_word(text: &str, word: &str) -> bool {
    let b = text.as_bytes();
    text.match_indices(word).any(|(i, _)| {
        (i == 0 || !is_ident(b[i - 1])) && b.get(i + word.len()).is_none_or(|&c| !is_ident(c))
    })
}

/// Index just past the `}` matching the `{` at `open` (strings and characters skipped).
fn matching_brace(b: &[u8], open: usize) -> usize {
    matching(b, open, b'{', b'}')
}

/// Index just past the bracket closing the `opening` one at `open` (`(` and `)`, `{` and
/// `}`), literals skipped.
pub(super) fn matching(b: &[u8], open: usize, opening: u8, closing: u8) -> usize {
    let mut depth = 0usize;
    let mut i = open;
    while i < b.len() {
        match b[i] {
            c if c == opening => depth += 1,
            c if c == closing => {
                depth -= 1;
                if depth == 0 {
                    return i + 1;
                }
            }
            q @ (b'"' | b'\'') => i = skip_literal(b, i, q),
            _ => {}
        }
        i += 1;
    }
    b.len()
}

/// Index of the closing quote of the literal opening at `i`.
fn skip_literal(b: &[u8], mut i: usize, q: u8) -> usize {
    i += 1;
    while i < b.len() && b[i] != q && b[i] != b'\n' {
        if b[i] == b'\\' {
            i += 1;
        }
        i += 1;
    }
    i
}

/// Whether a declaration is device code (or not a function at all) and stays: marked
/// `__global__`, `__device__` or `constexpr`, itself or through one of `macros`, the files'
/// macros that expand to `__device__` or `__global__` (`#define DEVICE_INLINE __device__
/// inline`, [`device_macros`]).
fn is_device(decl: &str, macros: &[String]) -> bool {
    ["__global__", "__device__", "constexpr"]
        .iter()
        .any(|w| has_word(decl, w))
        || macros.iter().any(|m| has_word(decl, m))
}

/// The names of the macros among `defines` (each `#define`'s text after the keyword) that
/// expand to `__device__`, `__global__` or `constexpr` (half.hpp's `HALF_CONSTEXPR_CONST`, before
/// a file-scope constant device code reads), directly or through another such macro.
pub fn device_macros<'a>(defines: impl IntoIterator<Item = &'a str>) -> Vec<String> {
    let parsed: Vec<(&str, &str)> = defines
        .into_iter()
        .filter_map(|d| {
            let d = d.trim_start();
            let end = d
                .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
                .unwrap_or(d.len());
            let body = d[end..].strip_prefix('(').map_or(&d[end..], |rest| {
                rest.split_once(')').map_or("", |(_, body)| body)
            });
            (end > 0).then(|| (&d[..end], body))
        })
        .collect();
    let mut found: Vec<String> = Vec::new();
    loop {
        let before = found.len();
        for (name, body) in &parsed {
            if !found.iter().any(|f| f == name)
                && (["__device__", "__global__", "constexpr"]
                    .iter()
                    .any(|w| has_word(body, w))
                    || found.iter().any(|f| has_word(body, f)))
            {
                found.push((*name).to_string());
            }
        }
        if found.len() == before {
            return found;
        }
    }
}

/// The macros of a project's files that blanking must know: those that mark device code and
/// those whose call is host code. A header may define one that another file uses, so they are
/// read from every local file before any is prepared.
#[derive(Debug, Default, Clone, PartialEq)]
pub struct Macros {
    /// Expand to `__device__`, `__global__` or `constexpr` ([`device_macros`]).
    pub device: Vec<String>,
    /// Function-like macros whose call is host code ([`host_macros`]).
    pub host: Vec<String>,
    /// The names of the host member functions the files declare, which a derived class's
    /// using-declaration may name (`using UnaryOp::operator();`): it goes with them.
    pub host_members: Vec<String>,
}

impl Macros {
    /// The macros among `defines`, each `#define`'s text after the keyword, and the host
    /// member functions of `codes`, the files' texts.
    pub fn of(defines: &[String], codes: &[String]) -> Self {
        let device = device_macros(defines.iter().map(String::as_str));
        let host = host_macros(defines, &device);
        let mut macros = Self {
            device,
            host,
            host_members: Vec::new(),
        };
        let mut members: Vec<String> = codes
            .iter()
            .flat_map(|c| blank_host_code_naming_members(c, &macros).1)
            .collect();
        members.sort();
        members.dedup();
        macros.host_members = members;
        macros
    }
}

/// The function-like macros among `defines` whose call is host code:
/// - one that defines a host function, as PyTorch extensions generate a binding per type
///   (`#define BIND(tag, T) void run_##tag(torch::Tensor x) { ... }`, then `BIND(f32, float)`
///   at file scope);
/// - one that explicitly instantiates a host function, which goes with the function: caffe's
///   `INSTANTIATE_LAYER_GPU_FORWARD(cls)` is `template void cls<float>::Forward_gpu(...);`;
/// - one whose text calls such a macro (caffe's `INSTANTIATE_LAYER_GPU_FUNCS`).
fn host_macros(defines: &[String], device: &[String]) -> Vec<String> {
    let parsed: Vec<(&str, &str)> = defines
        .iter()
        .filter_map(|d| {
            let d = d.trim_start();
            let end = d
                .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
                .unwrap_or(d.len());
            let (_, body) = d[end..].strip_prefix('(')?.split_once(')')?;
            (end > 0).then(|| (&d[..end], body))
        })
        .collect();
    let defines_host_function = |body: &str| {
        body.find('{').is_some_and(|open| {
            let head = body[..open].trim();
            head.ends_with(')')
                && words_before_paren(head) >= 2
                && !is_class_head(head)
                && !is_device(head, device)
        })
    };
    let instantiates_host_function = |statement: &str| {
        let s = statement.trim();
        let s = s.strip_prefix("extern").map_or(s, str::trim_start);
        // `template void f<float>(...)`, not a template's head `template <...>`.
        s.strip_prefix("template")
            .filter(|rest| rest.starts_with(char::is_whitespace))
            .map(str::trim_start)
            .is_some_and(|rest| {
                !rest.starts_with('<') && rest.contains('(') && !is_device(rest, device)
            })
    };
    let mut found: Vec<String> = Vec::new();
    loop {
        let before = found.len();
        for (name, body) in &parsed {
            if found.iter().any(|f| f == name) {
                continue;
            }
            let calls_host_macro = |statement: &str| {
                let s = statement.trim_start();
                let end = s
                    .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
                    .unwrap_or(s.len());
                s[end..].trim_start().starts_with('(') && found.iter().any(|f| *f == s[..end])
            };
            let statements = || body.split(';').filter(|s| !s.trim().is_empty());
            if defines_host_function(body)
                || (!body.contains('{')
                    && statements().any(|s| instantiates_host_function(s) || calls_host_macro(s)))
            {
                found.push((*name).to_string());
            }
        }
        if found.len() == before {
            return found;
        }
    }
}

/// `code` with each `abs(` (or `std::abs(`, `::abs(`) in a `static_assert`'s parentheses read
/// as `kernel_lab::constant_abs(`: nvcc folds the host's `abs` in a constant expression, and
/// NVRTC's is no constexpr function (MatmulTutorial's `Swizzle` asserts on `abs(SShift)`).
/// Lines are kept.
pub fn constant_abs_in_static_asserts(code: &str) -> String {
    let b = code.as_bytes();
    let mut out = String::with_capacity(code.len());
    let mut done = 0;
    let mut at = 0;
    while let Some(found) = code[at..].find("static_assert") {
        let start = at + found;
        at = start + "static_assert".len();
        let word = |i: usize| {
            b.get(i)
                .is_some_and(|&c| c.is_ascii_alphanumeric() || c == b'_')
        };
        let open = at + (code[at..].len() - code[at..].trim_start().len());
        if (start > 0 && word(start - 1)) || word(at) || b.get(open) != Some(&b'(') {
            continue;
        }
        let close = matching(b, open, b'(', b')');
        let mut i = open + 1;
        while i < close {
            if let q @ (b'"' | b'\'') = b[i] {
                i = skip_literal(b, i, q) + 1;
                continue;
            }
            let after = i + 3;
            let paren = after
                + b[after.min(close)..]
                    .iter()
                    .take_while(|c| c.is_ascii_whitespace())
                    .count();
            if !b[i..].starts_with(b"abs")
                || word(i - 1)
                || word(after)
                || b.get(paren) != Some(&b'(')
            {
                i += 1;
                continue;
            }
            let from = ["std::", "::"]
                .iter()
                .find(|q| b[..i].ends_with(q.as_bytes()))
                .map_or(i, |q| i - q.len());
            out.push_str(&code[done..from]);
            out.push_str("kernel_lab::constant_abs");
            done = after;
            i = after;
        }
        at = close;
    }
    out.push_str(&code[done..]);
    out
}

/// `code` with the execution spaces of lambdas (`[] __device__ (float a) { ... }`) blanked:
/// nvcc takes them with `--extended-lambda`, which NVRTC lacks, and in device code a lambda is
/// a device one without them. `[[attribute]] __device__ int f()` keeps its own. Lines and
/// columns are kept.
pub fn lambda_annotations_blanked(code: &str) -> String {
    let b = code.as_bytes();
    let mut out = b.to_vec();
    for (at, _) in code.match_indices(']') {
        if at > 0 && b[at - 1] == b']' {
            continue;
        }
        let mut i = at + 1;
        loop {
            while b.get(i).is_some_and(|c| c.is_ascii_whitespace()) {
                i += 1;
            }
            let Some(word) = ["__device__", "__host__"].into_iter().find(|w| {
                b[i..].starts_with(w.as_bytes())
                    && !b.get(i + w.len()).is_some_and(|&c| is_ident(c))
            }) else {
                break;
            };
            blank(&mut out, i, i + word.len());
            i += word.len();
        }
    }
    String::from_utf8(out).unwrap_or_else(|_| code.to_string())
}

/// `code` with the storage class `register` blanked (`register float acc[8];`): C++17 removed
/// it, nvcc and g++ warn of it in C++20, and NVRTC refuses it. It never changed what a GPU
/// does. Literals and preprocessor lines are left as they are; lines and columns are kept.
pub fn register_keyword_blanked(code: &str) -> String {
    let b = code.as_bytes();
    let mut out = b.to_vec();
    let word = b"register";
    let mut i = 0;
    let mut line_start = true;
    while i < b.len() {
        match b[i] {
            b'\n' => line_start = true,
            b'#' if line_start => {
                while i < b.len() && !(b[i] == b'\n' && b[i - 1] != b'\\') {
                    i += 1;
                }
                continue;
            }
            c if c.is_ascii_whitespace() => {}
            q @ (b'"' | b'\'') => {
                line_start = false;
                i = skip_literal(b, i, q) + 1;
                continue;
            }
            _ => {
                line_start = false;
                if b[i..].starts_with(word)
                    && (i == 0 || !is_ident(b[i - 1]))
                    && !b.get(i + word.len()).is_some_and(|&c| is_ident(c))
                {
                    blank(&mut out, i, i + word.len());
                    i += word.len();
                    continue;
                }
                if is_ident(b[i]) {
                    while i < b.len() && is_ident(b[i]) {
                        i += 1;
                    }
                    continue;
                }
            }
        }
        i += 1;
    }
    String::from_utf8(out).unwrap_or_else(|_| code.to_string())
}

/// The text after `#define` of each definition in `code`, continuation lines joined.
pub fn defines(code: &str) -> impl Iterator<Item = String> + '_ {
    let mut lines = code.lines();
    std::iter::from_fn(move || {
        for line in lines.by_ref() {
            let Some(rest) = line
                .trim_start()
                .strip_prefix('#')
                .map(str::trim_start)
                .and_then(|r| r.strip_prefix("define"))
                .filter(|r| r.starts_with(char::is_whitespace))
            else {
                continue;
            };
            let mut text = rest.to_string();
            while text.ends_with('\\') {
                text.pop();
                text.push(' ');
                text.push_str(lines.next().unwrap_or(""));
            }
            return Some(text);
        }
        None
    })
}

/// The `#define`s of `code` that no conditional encloses but an include guard (`#ifndef
/// X_H` followed by `#define X_H`): each macro's name, its line (from 1) and the directive.
/// Such a definition replaces a `-D` of the same name (`define=`), where one inside `#ifndef
/// NAME` defers to it.
pub fn unconditional_defines(code: &str) -> Vec<(String, usize, String)> {
    let code = strip_comments(code);
    let lines: Vec<&str> = code.lines().collect();
    let directive = |line: &str| -> Option<(String, String)> {
        let rest = line.trim_start().strip_prefix('#')?.trim_start();
        let end = rest
            .find(|c: char| !c.is_ascii_alphabetic())
            .unwrap_or(rest.len());
        Some((rest[..end].to_string(), rest[end..].trim().to_string()))
    };
    let first_word = |text: &str| -> String {
        text.split(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
            .next()
            .unwrap_or("")
            .to_string()
    };
    // The open conditionals: whether each is an include guard.
    let mut open: Vec<bool> = Vec::new();
    let mut out = Vec::new();
    for (i, line) in lines.iter().enumerate() {
        let Some((word, rest)) = directive(line) else {
            continue;
        };
        match word.as_str() {
            "ifndef" => {
                // An include guard: the next directive defines the name tested.
                let tested = first_word(&rest);
                let next = lines[i + 1..].iter().find_map(|l| directive(l));
                open.push(next.is_some_and(|(w, r)| w == "define" && first_word(&r) == tested));
            }
            "if" | "ifdef" => open.push(false),
            "else" | "elif" | "elifdef" | "elifndef" => {
                if let Some(top) = open.last_mut() {
                    *top = false;
                }
            }
            "endif" => {
                open.pop();
            }
            "define" if open.iter().all(|&guard| guard) => {
                let name = first_word(&rest);
                // The guard's own definition is the guard's.
                let guarding = i > 0
                    && lines[..i]
                        .iter()
                        .rev()
                        .find_map(|l| directive(l))
                        .is_some_and(|(w, r)| w == "ifndef" && first_word(&r) == name);
                if !name.is_empty() && !guarding {
                    out.push((name, i + 1, line.trim().to_string()));
                }
            }
            _ => {}
        }
    }
    out
}

fn idents(text: &str) -> impl Iterator<Item = &str> {
    text.split(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
        .filter(|w| !w.is_empty())
}

/// Whether a file-scope declaration ending in `;` defines or declares a host variable
/// (`CUtensorMap map_a;`, `int prev_m = 0, prev_n = 0;`, `std::vector<int> v;`, `extern
/// cudaDeviceProp prop;`): a type and a name, no memory space, not itself `const` or
/// `constexpr` (device code may read those) and no type, alias, template or assertion. NVRTC
/// refuses host variables; the host code that used them is gone.
fn is_host_variable(decl: &str) -> bool {
    const KEEP: &[&str] = &[
        "typedef",
        "using",
        "static_assert",
        "template",
        "struct",
        "class",
        "union",
        "enum",
        "namespace",
        "friend",
        "constexpr",
        "__device__",
        "__constant__",
        "__shared__",
        "__managed__",
        "__global__",
    ];
    let head = decl.split(['=', '{', '[', '(']).next().unwrap_or("");
    let words: Vec<&str> = idents(head).collect();
    words.len() >= 2 && !words.iter().any(|w| KEEP.contains(w)) && !is_const_variable(head)
}

/// Whether the variable a declaration's head names is itself const (`const int N`, `const
/// char *const names`), which NVRTC accepts at file scope, rather than a pointer or reference
/// to const data (`const char *names[]`, cuda-samples' table of kernel names), which it
/// refuses as a host variable.
fn is_const_variable(head: &str) -> bool {
    let b = head.as_bytes();
    let ident = |i: usize| {
        b.get(i)
            .is_some_and(|c| c.is_ascii_alphanumeric() || *c == b'_')
    };
    head.match_indices("const")
        .filter(|&(i, w)| (i == 0 || !ident(i - 1)) && !ident(i + w.len()))
        .last()
        .is_some_and(|(i, w)| !head[i + w.len()..].contains(['*', '&']))
}

/// The function a `using NS::f;` declaration brings in (not a `using X = ...` alias).
fn using_name(decl: &str) -> Option<String> {
    let rest = decl.strip_prefix("using")?;
    if rest.contains('=') || !rest.starts_with(char::is_whitespace) {
        return None;
    }
    idents(rest).last().map(str::to_string)
}

/// Names of the standard library that only host code uses, which the stand-ins give NVRTC
/// none of (an object or a function of the host cannot be declared for it): streams, string
/// conversions, and the base class of a host container's iterators. A `using std::cout;` of
/// the file's host code goes with that code.
const HOST_ONLY_STD_NAMES: &[&str] = &[
    "cout",
    "cerr",
    "clog",
    "cin",
    "endl",
    "flush",
    "ends",
    "ios",
    "ios_base",
    "ostream",
    "istream",
    "iostream",
    "ostringstream",
    "istringstream",
    "stringstream",
    "ofstream",
    "ifstream",
    "fstream",
    "setw",
    "setprecision",
    "setfill",
    "fixed",
    "scientific",
    "getline",
    "to_string",
    "stoi",
    "stof",
    "iterator",
];

/// Whether a declaration is `using std::NAME;` of [`HOST_ONLY_STD_NAMES`].
fn is_host_only_using(decl: &str) -> bool {
    let Some(rest) = decl.strip_prefix("using") else {
        return false;
    };
    let rest = rest.trim_start();
    let name = rest.strip_prefix("::").unwrap_or(rest);
    name.strip_prefix("std::")
        .map(str::trim)
        .is_some_and(|n| HOST_ONLY_STD_NAMES.contains(&n))
}

/// Identifiers before the first `(` of a declaration: `void f(` has two, a macro call `F(`
/// one.
fn words_before_paren(decl: &str) -> usize {
    idents(decl.split('(').next().unwrap_or("")).count()
}

/// Replaces `out[from..to]` by spaces, line breaks and preprocessor directives kept: a host
/// function or prototype spanning an `#if` keeps the conditional whole.
fn blank(out: &mut [u8], from: usize, to: usize) {
    let mut line_start = out[..from]
        .iter()
        .rposition(|&c| c == b'\n')
        .map_or(0, |n| n + 1);
    let mut directive = is_directive_at(out, line_start);
    for i in from..to {
        if out[i] == b'\n' {
            // A directive continued with a backslash goes on.
            let continued = directive && i > 0 && out[i - 1] == b'\\';
            line_start = i + 1;
            directive = continued || is_directive_at(out, line_start);
        } else if !directive {
            out[i] = b' ';
        }
    }
}

/// Whether the line starting at `at` is a preprocessor directive.
fn is_directive_at(b: &[u8], at: usize) -> bool {
    b[at.min(b.len())..]
        .iter()
        .find(|c| !matches!(c, b' ' | b'\t'))
        .is_some_and(|&c| c == b'#')
}

/// The directive a line holds (`if`, `ifdef`, `else`, `endif`...), if any.
fn directive_name(line: &str) -> Option<&str> {
    let rest = line.trim_start().strip_prefix('#')?.trim_start();
    let end = rest
        .find(|c: char| !c.is_ascii_alphabetic())
        .unwrap_or(rest.len());
    Some(&rest[..end])
}

/// `code` as blanking reads it: where a branch of an `#if` group opens a brace or parenthesis
/// that only the group's end closes (`#ifdef BF16` `else if (a || b) {` `#else` `else if (a)
/// {` `#endif`, a prototype whose last parameter and `);` differ per branch), the branches
/// after the first are spaces, so that brackets balance as in one preprocessed text. Lines and
/// lengths are kept; groups whose branches each balance are read whole, as before.
pub(super) fn one_branch_view(code: &str) -> String {
    let lines: Vec<&str> = code.split_inclusive('\n').collect();
    let mut hide = vec![false; lines.len()];
    // Open groups: the line of their `#if` and of each later branch's directive.
    let mut groups: Vec<Vec<usize>> = Vec::new();
    let balance = |from: usize, to: usize| -> i64 {
        lines[from..to]
            .iter()
            .filter(|l| directive_name(l).is_none())
            .flat_map(|l| l.bytes())
            .map(|c| match c {
                b'{' | b'(' => 1,
                b'}' | b')' => -1,
                _ => 0,
            })
            .sum()
    };
    for (n, line) in lines.iter().enumerate() {
        match directive_name(line) {
            Some("if" | "ifdef" | "ifndef") => groups.push(vec![n]),
            Some("elif" | "else") => {
                if let Some(g) = groups.last_mut() {
                    g.push(n);
                }
            }
            Some("endif") => {
                let Some(mut g) = groups.pop() else { continue };
                g.push(n);
                let unbalanced = g.windows(2).any(|w| balance(w[0] + 1, w[1]) != 0);
                if unbalanced && g.len() > 2 {
                    for line in (g[1] + 1)..n {
                        hide[line] = directive_name(lines[line]).is_none();
                    }
                }
            }
            _ => {}
        }
    }
    lines
        .iter()
        .zip(&hide)
        .map(|(l, &h)| match h {
            true => l
                .chars()
                .map(|c| if c == '\n' { c } else { ' ' })
                .collect::<String>(),
            false => (*l).to_string(),
        })
        .collect()
}

/// `to` moved past the `#endif` of every conditional opened in `code[from..to]` and not closed
/// there: a prototype blanked up to its `;` in the first branch takes the other branches too.
fn through_open_conditionals(code: &str, from: usize, to: usize) -> usize {
    let mut depth = 0usize;
    let mut at = from;
    for line in code[from..].split_inclusive('\n') {
        let end = at + line.len();
        match directive_name(line) {
            Some("if" | "ifdef" | "ifndef") => depth += 1,
            Some("endif") if depth > 0 => {
                depth -= 1;
                if depth == 0 && end > to {
                    return end;
                }
            }
            _ => {}
        }
        if end >= to && depth == 0 {
            return to;
        }
        at = end;
    }
    to
}

/// `decl` without its leading `template <...>` parameter lists, whose `class T` names no class.
fn without_template_heads(decl: &str) -> &str {
    let mut d = decl.trim_start();
    while let Some(rest) = d.strip_prefix("template") {
        let rest = rest.trim_start();
        if !rest.starts_with('<') {
            break;
        }
        let mut depth = 0usize;
        let Some(end) = rest.char_indices().find_map(|(i, c)| {
            match c {
                '<' => depth += 1,
                '>' => depth -= 1,
                _ => {}
            }
            (depth == 0).then_some(i)
        }) else {
            break;
        };
        d = rest[end + 1..].trim_start();
    }
    d
}

/// Whether the text before a `{` opens a class, struct or union definition (not an enum's):
/// not a member function template (`template <class T> auto f(T) const`).
fn is_class_head(decl: &str) -> bool {
    let head = without_template_heads(decl).split('(').next().unwrap_or("");
    // `typedef struct __align__(16) {` is a class, `struct P make_p(int) {` a function.
    let mut d = decl.trim_end();
    while let Some(rest) = without_trailing_attribute(d) {
        d = rest;
    }
    ["class", "struct", "union"]
        .iter()
        .any(|w| has_word(head, w))
        && !has_word(head, "enum")
        && !d.ends_with(')')
}

/// A member declaration without what may precede it in a class body: preprocessor lines and
/// access labels (`public:`). Returns the offset of what is left within `text`, and it.
fn member_text(text: &str) -> (usize, &str) {
    let mut at = 0;
    loop {
        let rest = &text[at..];
        let lead = rest.len() - rest.trim_start().len();
        let body = &rest[lead..];
        if body.starts_with('#') {
            at += lead + body.find('\n').map_or(body.len(), |n| n + 1);
            continue;
        }
        let label = ["public", "private", "protected"].iter().find_map(|w| {
            let after = body.strip_prefix(w)?.trim_start();
            after
                .strip_prefix(':')
                .filter(|a| !a.starts_with(':'))
                .map(|a| body.len() - a.len())
        });
        match label {
            Some(n) => at += lead + n,
            None => return (at + lead, body.trim_end()),
        }
    }
}

/// Whether a member declaration (what comes before its `;` or its body's `{`) is a function
/// of the host: a parameter list, no `__device__`, `__global__` or `constexpr`, and not a
/// pointer to a function, a type alias or a macro call (`NO_COPY(T)`).
fn is_host_member_function(decl: &str, macros: &[String]) -> bool {
    let d = without_trailing_qualifiers(decl);
    let Some(open) = d.find('(') else {
        return false;
    };
    let words: Vec<&str> = idents(&d[..open]).collect();
    let macro_call = words.len() == 1
        && words[0]
            .bytes()
            .all(|c| c.is_ascii_uppercase() || c.is_ascii_digit() || c == b'_');
    d.ends_with(')')
        && !words.is_empty()
        && !macro_call
        && !is_device(decl, macros)
        && !["typedef", "using", "static_assert"]
            .iter()
            .any(|w| words.contains(w))
        && !d[open + 1..].trim_start().starts_with(['*', '&'])
        && !initialized_variable(&d[..open])
}

/// Whether the text before a declaration's first `(` holds an `=` of an initializer, not of
/// an operator's name: `float u = (0.f)` and `static const int s = (int)(1)` are variables.
fn initialized_variable(before_paren: &str) -> bool {
    before_paren.contains('=') && !has_word(before_paren, "operator")
}

/// A function declaration without what may follow its parameter list: `const`, `noexcept`,
/// `override`, `= 0`, reference qualifiers and attributes.
fn without_trailing_qualifiers(decl: &str) -> &str {
    let mut d = decl.trim_end();
    loop {
        let before = d;
        for q in [
            "const", "override", "final", "noexcept", "volatile", "&&", "&", "= 0", "=0",
        ] {
            if let Some(rest) = d.strip_suffix(q) {
                d = rest.trim_end();
            }
        }
        if let Some(rest) = without_trailing_attribute(d) {
            d = rest;
        }
        if d == before {
            return d;
        }
    }
}

/// `decl` without the attribute that ends it (`float c[4] __attribute__((aligned(16)))`,
/// `__align__(16)`): a data member's or a function's, whose parentheses are no parameter list.
fn without_trailing_attribute(decl: &str) -> Option<&str> {
    let b = decl.as_bytes();
    if b.last() != Some(&b')') {
        return None;
    }
    let mut depth = 0usize;
    let open = (0..b.len()).rev().find(|&i| {
        match b[i] {
            b')' => depth += 1,
            b'(' => depth -= 1,
            _ => {}
        }
        depth == 0
    })?;
    let head = decl[..open].trim_end();
    ["__attribute__", "__align__", "__declspec", "alignas"]
        .iter()
        .find_map(|w| head.strip_suffix(w))
        .filter(|rest| !rest.ends_with(|c: char| c.is_ascii_alphanumeric() || c == '_'))
        .map(str::trim_end)
}

/// `decl` without a constructor's member initializer list (`Launcher(unsigned t) : tile_{t}`
/// is `Launcher(unsigned t)`), where it has one.
fn without_initializers(decl: &str) -> &str {
    let Some(open) = decl.find('(') else {
        return decl;
    };
    let close = matching(decl.as_bytes(), open, b'(', b')');
    let rest = decl[close..].trim_start();
    let rest = rest.strip_prefix("noexcept").map_or(rest, str::trim_start);
    match rest.starts_with(':') && !rest.starts_with("::") {
        true => decl[..close].trim_end(),
        false => decl,
    }
}

/// Whether the `{` after `decl` opens a member's braced initializer (`tile_{t}` in
/// `Launcher(unsigned t) : tile_{t} {}`), not the constructor's body.
fn opens_braced_initializer(decl: &str) -> bool {
    without_initializers(decl).len() < decl.len()
        && decl
            .trim_end()
            .ends_with(|c: char| c.is_ascii_alphanumeric() || c == '_' || c == '>')
}

/// The name of the function `decl` declares, `operator` for every operator.
fn function_name(decl: &str) -> Option<String> {
    idents(decl.split('(').next()?).last().map(str::to_string)
}

/// The member a class's using-declaration names (`forward` of `using Base::forward`,
/// `operator` of `using Base::operator()`); none for an alias (`using T = float`).
fn member_using_name(decl: &str) -> Option<String> {
    let named = decl.strip_prefix("using")?;
    if !named.starts_with(char::is_whitespace) || named.contains('=') {
        return None;
    }
    let (_, last) = named.rsplit_once("::")?;
    let end = last
        .trim_start()
        .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
        .unwrap_or(last.trim_start().len());
    Some(last.trim_start()[..end].to_string()).filter(|n| !n.is_empty())
}

/// Blanks the host member functions of the class body between `open` (its `{`) and `end`
/// (past its `}`), nested classes' included: NVRTC refuses a member function without
/// `__device__` as it refuses any host function, and device code cannot call one.
/// The host member functions blanked are added to `blanked`; a using-declaration of one of
/// `host_members` (`using UnaryOp::operator();` in a derived class) goes with it.
fn blank_host_members(
    code: &str,
    (open, end): (usize, usize),
    macros: &Macros,
    blanked: &mut Vec<String>,
    out: &mut [u8],
) {
    let device = &macros.device[..];
    let b = code.as_bytes();
    let mut start = open + 1;
    let mut i = open + 1;
    let last = end.saturating_sub(1);
    while i < last {
        match b[i] {
            q @ (b'"' | b'\'') => i = skip_literal(b, i, q),
            b'#' if code[start..i].trim().is_empty() => {
                while i < last && !(b[i] == b'\n' && b[i - 1] != b'\\') {
                    i += 1;
                }
            }
            b';' => {
                let (lead, decl) = member_text(&code[start..i]);
                if is_host_member_function(decl, device) {
                    blank(out, start + lead, i + 1);
                    blanked.extend(function_name(decl));
                } else if member_using_name(decl).is_some_and(|n| macros.host_members.contains(&n))
                {
                    blank(out, start + lead, i + 1);
                }
                start = i + 1;
            }
            b'{' => {
                let close = matching_brace(b, i);
                let (lead, decl) = member_text(&code[start..i]);
                if opens_braced_initializer(decl) {
                    i = close;
                    continue;
                }
                if is_class_head(decl) {
                    blank_host_members(code, (i, close), macros, blanked, out);
                } else if is_host_member_function(without_initializers(decl), device) {
                    blank(out, start + lead, close);
                    blanked.extend(function_name(decl));
                }
                i = close;
                start = close;
                continue;
            }
            _ => {}
        }
        i += 1;
    }
}

/// The source with its host code blanked out, lines kept so compile errors point at the right
/// line: every file-scope function definition not marked `__global__`, `__device__` or
/// `constexpr` (host functions, `main`, `PYBIND11_MODULE(...) { }`) and every such function
/// prototype. NVRTC refuses host functions outright and the simulator has no host API to call.
/// Comments are blanked too. `macros` are those of the project's files ([`Macros`]); the
/// file's own are read here too.
pub fn blank_host_code(code: &str, macros: &Macros) -> String {
    blank_host_code_naming_members(code, macros).0
}

/// [`blank_host_code`], with the names of the host member functions it blanked.
fn blank_host_code_naming_members(code: &str, macros: &Macros) -> (String, Vec<String>) {
    let mut members = Vec::new();
    let original = strip_comments(code);
    // Read with one branch of a conditional whose branches each open what its end closes;
    // blanked in the text as written.
    let code = one_branch_view(&original);
    let b = code.as_bytes();
    let mut out = original.as_bytes().to_vec();
    // The host functions blanked so far, whose `using` declarations go too.
    let mut blanked: Vec<String> = Vec::new();
    let own: Vec<String> = defines(&code).collect();
    let mut host_macros = host_macros(&own, &macros.device);
    host_macros.extend(macros.host.iter().cloned());
    let all = macros;
    let macros = &macros.device[..];
    // Open braces of namespaces and `extern "C" { }` blocks: their contents are file scope.
    let mut open_scopes = 0usize;
    let mut start = 0; // start of the current file-scope declaration
    let mut line_start = true;
    let mut i = 0;
    while i < b.len() {
        let c = b[i];
        if line_start && c == b'#' {
            // A preprocessor directive, continuation lines included.
            while i < b.len() && !(b[i] == b'\n' && b[i - 1] != b'\\') {
                i += 1;
            }
            if code[start..i.min(b.len())].trim_start().starts_with('#') {
                start = i;
            }
            continue;
        }
        if c == b'\n' {
            line_start = true;
            i += 1;
            continue;
        }
        let first_on_line = line_start;
        if !c.is_ascii_whitespace() {
            line_start = false;
        }
        // A file-scope call of a macro that defines a host function, first on its line (such
        // calls end without a semicolon, one after another).
        if (c.is_ascii_alphabetic() || c == b'_') && first_on_line {
            let name_end = code[i..]
                .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
                .map_or(b.len(), |n| i + n);
            let open = name_end + (code[name_end..].len() - code[name_end..].trim_start().len());
            if host_macros.iter().any(|m| *m == code[i..name_end]) && b.get(open) == Some(&b'(') {
                let close = matching(b, open, b'(', b')');
                blank(&mut out, i, close);
                i = close;
                start = close;
                continue;
            }
        }
        match c {
            b'"' | b'\'' => i = skip_literal(b, i, c),
            b';' => {
                let decl = code[start..i].trim();
                let lead = start + (code[start..i].len() - code[start..i].trim_start().len());
                if decl.ends_with(')')
                    && !is_device(decl, macros)
                    && words_before_paren(decl) >= 2
                    && !initialized_variable(decl.split('(').next().unwrap_or(""))
                {
                    let keep = ["typedef", "using", "static_assert"]
                        .iter()
                        .any(|w| has_word(decl.split('(').next().unwrap_or(""), w));
                    if !keep {
                        let to = through_open_conditionals(&original, lead, i + 1);
                        blank(&mut out, lead, to);
                    }
                } else if (is_host_variable(decl) && !is_device(decl, macros))
                    || using_name(decl).is_some_and(|n| blanked.contains(&n))
                    || is_host_only_using(decl)
                {
                    blank(&mut out, lead, i + 1);
                }
                start = i + 1;
            }
            b'{' => {
                let decl = code[start..i].trim();
                if decl.starts_with("namespace") || decl.ends_with("extern \"C\"") {
                    open_scopes += 1;
                    start = i + 1;
                } else if opens_braced_initializer(decl) {
                    i = matching_brace(b, i);
                    continue;
                } else {
                    let end = matching_brace(b, i);
                    if decl.ends_with('=') && is_host_variable(decl) && !is_device(decl, macros) {
                        // A host variable with a braced initializer (a table of names).
                        let lead =
                            start + (code[start..i].len() - code[start..i].trim_start().len());
                        let semi = code[end..].find(';').map_or(end, |s| end + s + 1);
                        blank(&mut out, lead, semi);
                        i = semi;
                        start = semi;
                        continue;
                    }
                    // A concept's requires-expression (`concept C = requires(F f) { f(1); }`)
                    // reads as a function, and is none.
                    let concept = has_word(decl.split('(').next().unwrap_or(""), "concept");
                    if is_class_head(decl) {
                        blank_host_members(&code, (i, end), all, &mut members, &mut out);
                    } else if without_trailing_qualifiers(without_initializers(decl)).ends_with(')')
                        && !is_device(decl, macros)
                        && !concept
                    {
                        let lead =
                            start + (code[start..i].len() - code[start..i].trim_start().len());
                        blank(&mut out, lead, end);
                        if let Some(name) = idents(decl.split('(').next().unwrap_or("")).last() {
                            blanked.push(name.to_string());
                        }
                    }
                    i = end;
                    start = end;
                    continue;
                }
            }
            b'}' if open_scopes > 0 => {
                open_scopes -= 1;
                start = i + 1;
            }
            _ => {}
        }
        i += 1;
    }
    let text = String::from_utf8(out)
        .unwrap_or_else(|e| String::from_utf8_lossy(e.as_bytes()).into_owned());
    (text, members)
}

#[cfg(test)]
mod tests {
    use super::*;
    use kernel::Workload;

    #[test]
    fn host_functions_and_prototypes_are_blanked_lines_kept() {
        let code = "#include <cstdio>\n\
            namespace lab {\n\
            template <int B> __global__ void __launch_bounds__(B) k(float *x) { x[0] = 1; }\n\
            __device__ float f(float a) { return a; }\n\
            }\n\
            void launch(float *x) {\n  lab::k<64><<<1, 64>>>(x);\n}\n\
            int helper(int);\n\
            dim3 grid(4);\n\
            CHECK_SIZES(64);\n\
            struct P { int a; };\n\
            PYBIND11_MODULE(name, m) { m.def(\"f\", &launch); }\n\
            int main() { return 0; }\n";
        let out = blank_host_code(code, &Macros::default());
        assert_eq!(out.lines().count(), code.lines().count());
        assert!(
            out.contains("__launch_bounds__(B) k(float *x) { x[0] = 1; }"),
            "{out}"
        );
        assert!(
            out.contains("__device__ float f(float a) { return a; }"),
            "{out}"
        );
        assert!(out.contains("CHECK_SIZES(64);") && out.contains("struct P { int a; };"));
        for gone in ["launch(", "<<<", "helper", "grid", "PYBIND11", "main"] {
            assert!(!out.contains(gone), "{gone} left in:\n{out}");
        }
    }

    /// Device functions marked through macros, as public collections of kernels write them,
    /// stay; a macro that only names a host function's attribute marks nothing.
    #[test]
    fn functions_marked_device_by_a_macro_are_kept() {
        let code = "#define HOST_DEVICE_INLINE __device__ __host__ inline\n\
            #define DEVICE_INLINE __device__ \\\n    inline\n\
            #define FN(T) DEVICE_INLINE T\n\
            #define HOST_ONLY __host__ inline\n\
            #define CONSTEXPR_CONST constexpr\n\
            HOST_DEVICE_INLINE\nint div_ceil(int a, int b) { return (a + b - 1) / b; }\n\
            FN(float) twice(float v) { return v + v; }\n\
            HOST_ONLY int host_side(int a) { return a; }\n\
            CONSTEXPR_CONST float kScale = 1.0f;\n";
        let defines: Vec<String> = defines(code).collect();
        let macros = Macros::of(&defines, &[]);
        assert_eq!(
            macros.device,
            [
                "HOST_DEVICE_INLINE",
                "DEVICE_INLINE",
                "FN",
                "CONSTEXPR_CONST"
            ]
        );
        let out = blank_host_code(code, &macros);
        assert_eq!(out.lines().count(), code.lines().count());
        // A constant marked constexpr through a macro (half.hpp's) stays for device code.
        assert!(
            out.contains("CONSTEXPR_CONST float kScale = 1.0f;"),
            "{out}"
        );
        assert!(out.contains("int div_ceil(int a, int b)"), "{out}");
        assert!(out.contains("FN(float) twice(float v)"), "{out}");
        assert!(!out.contains("host_side"), "{out}");
        // Without the macros, the three functions look like host code.
        assert!(!blank_host_code(code, &Macros::default()).contains("div_ceil"));
    }

    /// A member function template whose parameter list says `class` and whose head ends in
    /// `const` is no nested class: its body stays as written (MatmulTutorial's `Swizzle`).
    #[test]
    fn a_const_member_function_template_keeps_its_body() {
        let code = "#define HD __host__ __device__\n\
            template <int B> struct Swizzle {\n\
              template <class Offset> HD static constexpr auto apply(Offset o) { return o ^ B; }\n\
              template <class Offset> HD constexpr auto operator()(Offset const& o) const {\n\
                return apply(o);\n\
              }\n\
              template <class T> struct Inner { void host_only() {} };\n\
            };\n";
        let defs: Vec<String> = defines(code).collect();
        let out = blank_host_code(code, &Macros::of(&defs, &[]));
        assert!(out.contains("return apply(o);"), "{out}");
        assert!(!out.contains("host_only"), "{out}");
        assert_eq!(
            without_template_heads("template <class T, class U> template <int N> auto f()"),
            "auto f()"
        );
    }

    #[test]
    fn a_concepts_requires_expression_is_kept() {
        let code = "template <typename F>\n\
            concept BinaryF = requires(F f, float a, float b) { f(a, b); };\n\
            template <typename F> requires BinaryF<F> void host_apply(F f) { f(1, 2); }\n";
        let out = blank_host_code(code, &Macros::default());
        assert!(
            out.contains("concept BinaryF = requires(F f, float a, float b) { f(a, b); };"),
            "{out}"
        );
        assert!(!out.contains("host_apply"), "{out}");
    }

    #[test]
    fn lambdas_lose_their_execution_spaces_and_functions_keep_theirs() {
        let code = "v = reduce(v, [] __device__ (float a, float b) { return a + b; });\n\
            auto f = [&, n] __host__  __device__(int i) { return x[i] * n; };\n\
            [[nodiscard]] __device__ int g(int x[4]) { return x[3]; }\n\
            float y = x[2] + __device__var;\n";
        let out = lambda_annotations_blanked(code);
        assert_eq!(
            out,
            "v = reduce(v, []            (float a, float b) { return a + b; });\n\
             auto f = [&, n]                     (int i) { return x[i] * n; };\n\
             [[nodiscard]] __device__ int g(int x[4]) { return x[3]; }\n\
             float y = x[2] + __device__var;\n"
        );
    }

    #[test]
    fn the_register_storage_class_is_blanked_and_nothing_else() {
        let code = "register float acc[8];\n\
            for (register int i = 0; i < 8; ++i) registers[i] = 0;\n\
            #include <register.h>\n\
            asm(\"mov.b32 %0, %1; // register\" : \"=r\"(x) : \"r\"(y));\n";
        assert_eq!(
            register_keyword_blanked(code),
            "         float acc[8];\n\
             for (         int i = 0; i < 8; ++i) registers[i] = 0;\n\
             #include <register.h>\n\
             asm(\"mov.b32 %0, %1; // register\" : \"=r\"(x) : \"r\"(y));\n"
        );
    }

    #[test]
    fn abs_in_a_static_assert_is_read_as_the_constant_one() {
        let code = "static_assert(abs(S) >= B, \"abs(SShift) must be more\");\n\
            static_assert(std::abs(S) > 0 && ::abs (B) > 0);\n\
            static_assert_like(abs(S));\n\
            int f() { return abs(-1) + fabs(2.0f) + labs(3); }\n";
        let out = constant_abs_in_static_asserts(code);
        assert_eq!(
            out,
            "static_assert(kernel_lab::constant_abs(S) >= B, \"abs(SShift) must be more\");\n\
             static_assert(kernel_lab::constant_abs(S) > 0 && kernel_lab::constant_abs (B) > 0);\n\
             static_assert_like(abs(S));\n\
             int f() { return abs(-1) + fabs(2.0f) + labs(3); }\n"
        );
    }

    /// PyTorch bindings generated by a macro per type, called at file scope without a
    /// semicolon (LeetCUDA's `TORCH_BINDING_*`): the calls are host code and go; a macro whose
    /// function is a device one, and other calls, stay.
    #[test]
    fn calls_of_macros_that_define_host_functions_are_blanked() {
        let code = r#"#define BIND(tag, T) \
  void run_##tag(torch::Tensor x) { \
    k_##tag<<<1, 1>>>((T *)x.data_ptr()); \
  }
#define DEV(tag) __device__ float f_##tag(float v) { return v; }
__global__ void k_f32(float *x) { x[0] = 1; }
DEV(one)
BIND(f32, float)
BIND(f16,
     half)
CHECK_SIZES(64);
"#;
        let out = blank_host_code(code, &Macros::default());
        assert_eq!(out.lines().count(), code.lines().count());
        assert!(
            out.contains("DEV(one)") && out.contains("CHECK_SIZES(64);"),
            "{out}"
        );
        assert!(out.contains("__global__ void k_f32"), "{out}");
        assert!(!out.contains("BIND(f") && !out.contains("half)"), "{out}");
    }

    /// A derived class's using-declaration of a base's host member goes with the member, the
    /// base in another file (CTranslate2's op headers); one of a device member, or of a type,
    /// stays.
    #[test]
    fn using_declarations_of_blanked_members_go_too() {
        let base = "struct UnaryOp {\n\
            \x20 virtual void operator()(const float *x, float *y) const = 0;\n\
            \x20 void forward(float *x);\n\
            \x20 __device__ float scale(float v) const { return v; }\n\
            \x20 using value_type = float;\n\
            };\n";
        let derived = "struct SoftMax : UnaryOp {\n\
            \x20 using UnaryOp::operator();\n\
            \x20 using UnaryOp::forward;\n\
            \x20 using UnaryOp::scale;\n\
            \x20 using typename UnaryOp::value_type;\n\
            \x20 void operator()(float *x) const;\n\
            };\n";
        let macros = Macros::of(&[], &[base.to_string(), derived.to_string()]);
        assert_eq!(macros.host_members, ["forward", "operator"]);
        let out = blank_host_code(derived, &macros);
        assert_eq!(out.lines().count(), derived.lines().count());
        for gone in ["operator", "forward"] {
            assert!(!out.contains(gone), "{gone} left in:\n{out}");
        }
        for kept in [
            "using UnaryOp::scale;",
            "using typename UnaryOp::value_type;",
        ] {
            assert!(out.contains(kept), "{kept} gone from:\n{out}");
        }
    }

    /// A host function whose branches each open a brace that the conditional's end closes,
    /// and a prototype whose last parameter differs per branch (FasterTransformer's and
    /// DeepSpeed's): both go whole, their directives kept, and the kernel after them stays.
    #[test]
    fn host_code_whose_branches_balance_only_together_goes_whole() {
        let code = "void launch(int t) {\n\
            \x20 if (t == 0) {\n\
            \x20 }\n\
            #ifdef ENABLE_BF16\n\
            \x20 else if (t == 1 || t == 2) {\n\
            #else\n\
            \x20 else if (t == 1) {\n\
            #endif\n\
            \x20 }\n\
            }\n\
            int host_gemm(int m,\n\
            #if defined(USE_ALT)\n\
            \x20             int algo = 1);\n\
            #else\n\
            \x20             int algo = 0);\n\
            #endif\n\
            #ifdef _WIN32\n\
            void host_win() {}\n\
            #else\n\
            void host_posix() {}\n\
            #endif\n\
            __global__ void k(float *x) { x[0] = 1; }\n";
        let out = blank_host_code(code, &Macros::default());
        assert_eq!(out.lines().count(), code.lines().count());
        for gone in [
            "launch",
            "else if",
            "host_gemm",
            "algo",
            "host_win",
            "host_posix",
        ] {
            assert!(!out.contains(gone), "{gone} left in:\n{out}");
        }
        for kept in [
            "#ifdef ENABLE_BF16",
            "#if defined(USE_ALT)",
            "#else",
            "#endif",
            "__global__ void k",
        ] {
            assert!(out.contains(kept), "{kept} gone from:\n{out}");
        }
        assert_eq!(out.matches("#endif").count(), 3, "{out}");
    }

    /// caffe's layer files end in `INSTANTIATE_LAYER_GPU_FUNCS(PoolingLayer);`, defined in a
    /// header through two macros that instantiate the host members `Forward_gpu` and
    /// `Backward_gpu`: the members go, so the calls go too. A macro instantiating a kernel, or
    /// a whole class, stays.
    #[test]
    fn calls_of_macros_that_instantiate_host_functions_are_blanked() {
        let header = "#define INST_FWD(cls) \\\n  template void cls<float>::Forward_gpu( \\\n      \
            const float *in); \\\n  template void cls<double>::Forward_gpu(const double *in);\n\
            #define INST_BWD(cls) template void cls<float>::Backward_gpu(float *g)\n\
            #define INST_FUNCS(cls) \\\n  INST_FWD(cls); \\\n  INST_BWD(cls)\n\
            #define INST_KERNEL(T) template __global__ void k<T>(T *x)\n\
            #define INST_CLASS(cls) template class cls<float>\n";
        let defines: Vec<String> = defines(header).collect();
        let macros = Macros::of(&defines, &[]);
        assert_eq!(macros.host, ["INST_FWD", "INST_BWD", "INST_FUNCS"]);
        let code = "namespace caffe {\n\
            template <typename T> __global__ void k(T *x) { x[0] = 1; }\n\
            INST_FUNCS(PoolingLayer);\n\
            INST_KERNEL(float);\n\
            INST_CLASS(Blob);\n\
            }\n";
        let out = blank_host_code(code, &macros);
        assert!(!out.contains("INST_FUNCS"), "{out}");
        assert!(
            out.contains("INST_KERNEL(float);") && out.contains("INST_CLASS(Blob);"),
            "{out}"
        );
        // Without the header's macros the call looks like any other.
        assert!(blank_host_code(code, &Macros::default()).contains("INST_FUNCS"));
    }

    #[test]
    fn unconditional_defines_are_those_outside_every_conditional_but_a_guard() {
        let header = "#ifndef TILES_H\n#define TILES_H\n#define M_TILES 256 // fixed\n\
            #ifndef N_TILES\n#define N_TILES 256\n#endif\n\
            #ifdef _WIN32\n#define K_TILES 8\n#else\n#define K_TILES 16\n#endif\n\
            #define WARPS \\\n  8\n#endif\n";
        let found: Vec<(String, usize)> = unconditional_defines(header)
            .into_iter()
            .map(|(n, l, _)| (n, l))
            .collect();
        assert_eq!(
            found,
            [("M_TILES".to_string(), 3), ("WARPS".to_string(), 12)]
        );
        let plain = "#pragma once\n#define M 16\n";
        assert_eq!(
            unconditional_defines(plain),
            [("M".to_string(), 2, "#define M 16".to_string())]
        );
    }

    #[test]
    fn host_variables_and_using_declarations_of_blanked_functions_go_too() {
        // The state fast.cu's kernels keep beside their launchers, and the `using` that
        // exports a launcher from its namespace.
        let code = "namespace M10 {\n\
            CUtensorMap d_tma_map_A;\n\
            int _prev_m=0, _prev_n=0;\n\
            std::vector<int> order;\n\
            constexpr int SPACE_LEN = 128;\n\
            const float scale = 0.5f;\n\
            const char *kernelNames[] = {\"naive\", \"tiled\"};\n\
            const float *const table[] = {0};\n\
            int const &ref = _prev_n;\n\
            __constant__ float mask[16];\n\
            __device__ int counter;\n\
            extern __device__ int flags[];\n\
            extern cudaDeviceProp deviceProp;\n\
            extern __shared__ float dyn[];\n\
            typedef unsigned short u16;\n\
            template <int N> struct Tile;\n\
            __device__ void helper() {}\n\
            void runKernel10(int M) { _prev_m = M; }\n\
            }\n\
            using M10::runKernel10;\n\
            using M10::helper;\n\
            using Index = int;\n\
            using std::cout;\n\
            using ::std::ostringstream;\n\
            using std::isnan;\n";
        let out = blank_host_code(code, &Macros::default());
        assert_eq!(out.lines().count(), code.lines().count());
        for gone in [
            "d_tma_map_A",
            "_prev_m",
            "order",
            "runKernel10",
            "deviceProp",
            // Pointers to const data and references, not const variables: cuda-samples'
            // table of kernel names.
            "kernelNames",
            "&ref",
            // The host's streams, which no stand-in gives NVRTC.
            "cout",
            "ostringstream",
        ] {
            assert!(!out.contains(gone), "{gone} left in:\n{out}");
        }
        for kept in [
            "constexpr int SPACE_LEN = 128;",
            "const float scale = 0.5f;",
            "const float *const table[] = {0};",
            "__constant__ float mask[16];",
            "__device__ int counter;",
            "extern __device__ int flags[];",
            "extern __shared__ float dyn[];",
            "typedef unsigned short u16;",
            "template <int N> struct Tile;",
            "using M10::helper;",
            "using Index = int;",
            "using std::isnan;",
        ] {
            assert!(out.contains(kept), "{kept} gone from:\n{out}");
        }
    }

    /// A stand-in added to harness/user-include but not to [`STANDINS`] would never be served.
    #[test]
    fn every_stand_in_is_served() {
        let base = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("user-include");
        let files = kernel::testing::files_below(&base);
        assert!(files.len() > 10, "{files:?}");
        for f in files {
            assert!(
                STANDINS.iter().any(|(name, _)| *name == f),
                "harness/user-include/{f} is not in STANDINS"
            );
        }
    }

    /// The constants the <math.h> stand-in gives NVRTC are glibc's, digit for digit.
    #[test]
    fn the_math_stand_ins_constants_are_glibcs() {
        let Ok(glibc) = std::fs::read_to_string("/usr/include/math.h") else {
            return;
        };
        let defines = |text: &str| -> Vec<(String, String)> {
            text.lines()
                .filter_map(|l| {
                    let l = l.trim_start().strip_prefix('#')?.trim_start();
                    let mut w = l.strip_prefix("define")?.split_whitespace();
                    let (name, value) = (w.next()?, w.next()?);
                    name.starts_with("M_")
                        .then(|| (name.to_string(), value.to_string()))
                })
                .collect()
        };
        let theirs = defines(&glibc);
        for file in ["math.h", "cmath"] {
            let (_, text) = STANDINS.iter().find(|(n, _)| *n == file).unwrap();
            let ours = defines(text);
            assert!(ours.iter().any(|(n, _)| n == "M_PI"), "{file}");
            for (name, value) in ours {
                assert!(
                    theirs.iter().any(|(n, v)| *n == name && *v == value),
                    "{file}: {name} {value} is not glibc's"
                );
            }
        }
    }

    #[test]
    fn host_member_functions_are_blanked_device_members_kept() {
        // A course project's header: a class of host launchers beside a struct device code
        // uses.
        let code = "class GPUInterface {\n\
            public:\n\
            void get_device_properties();\n\
            void conv_forward_gpu_prolog(const float *host_y, float **device_y) const;\n\
            GPUInterface() : ready(false) { init(); }\n\
            ~GPUInterface() {}\n\
            private:\n\
            bool ready;\n\
            void (*callback)(int);\n\
            };\n\
            template <class T> struct Vec {\n\
            T x, y;\n\
            Vec() = default;\n\
            __host__ __device__ T dot(const Vec &o) const { return x * o.x + y * o.y; }\n\
            constexpr int size() const { return 2; }\n\
            typedef void (*fn)(T);\n\
            NO_COPY(Vec);\n\
            struct Inner { void host_only(); __device__ void dev(); };\n\
            std::string name() const;\n\
            float c[4] __attribute__((aligned(16)));\n\
            float d[4] __align__(16);\n\
            void flush() __attribute__((noinline));\n\
            };\n\
            inline int GPUInterface::error_count() const { return 0; }\n\
            typedef struct __align__(16) { float a, b, c, d; } half4;\n\
            struct Launcher {\n\
            unsigned tile_;\n\
            float u = (0.f);\n\
            static const int style = (int)(1);\n\
            explicit Launcher(unsigned tile) : tile_{tile}, u(1.f) {}\n\
            };\n\
            template <typename T> DevVector<T>::DevVector(unsigned n)\n    : n_{n}\n{\n}\n";
        let out = blank_host_code(code, &Macros::default());
        assert_eq!(out.lines().count(), code.lines().count());
        for gone in [
            "get_device_properties",
            "conv_forward_gpu_prolog",
            "GPUInterface()",
            "init()",
            "~GPUInterface",
            "host_only",
            "name()",
            "flush",
            "error_count",
            // Constructors with braced member initializers, in their class and out of it.
            "explicit Launcher",
            "tile_{tile}",
            "DevVector",
            "n_{n}",
        ] {
            assert!(!out.contains(gone), "{gone} left in:\n{out}");
        }
        for kept in [
            "class GPUInterface {",
            "public:",
            "bool ready;",
            "void (*callback)(int);",
            "T x, y;",
            "Vec() = default;",
            "__host__ __device__ T dot(const Vec &o) const { return x * o.x + y * o.y; }",
            "constexpr int size() const { return 2; }",
            "typedef void (*fn)(T);",
            "NO_COPY(Vec);",
            "__device__ void dev();",
            // Data members whose attribute follows the name, as shared-memory structs align
            // a buffer.
            "float c[4] __attribute__((aligned(16)));",
            "float d[4] __align__(16);",
            // A type with its alignment before its body (FasterTransformer's `half4`).
            "typedef struct __align__(16) { float a, b, c, d; } half4;",
            // Members whose initializers hold parentheses are no functions.
            "float u = (0.f);",
            "static const int style = (int)(1);",
        ] {
            assert!(out.contains(kept), "{kept} gone from:\n{out}");
        }
    }

    fn launch<'a>(list: &'a ArgList, cluster_dims: Option<&'a str>) -> LaunchParts<'a> {
        LaunchParts {
            entry: "sgemm<64,64,8>",
            name: "user_sgemm_64_64_8",
            at: 0,
            overload: None,
            cluster_dims,
            list,
            bounds: "__launch_bounds__(256, 2)",
        }
    }

    fn parts<'a>(
        launches: Vec<LaunchParts<'a>>,
        sig: &'a Signature,
        buffers: &'a Buffers,
    ) -> UnitParts<'a> {
        UnitParts {
            main: "kl_0_my.cu",
            host_cluster: false,
            sig,
            buffers,
            launches,
        }
    }

    #[test]
    fn the_direct_unit_checks_the_arguments_and_wraps_only_for_the_simulator() {
        let sig = Signature::named("gemm").unwrap();
        let list = ArgList::of(sig);
        let mut buffers = Buffers::fp32(sig);
        buffers.inputs = vec![Dtype::F16, Dtype::F16];
        let u = parts(vec![launch(&list, None)], sig, &buffers).direct();
        assert!(
            u.contains("#include <cuda_fp16.h>") && !u.contains("cuda_bf16"),
            "{u}"
        );
        assert!(
            u.contains(
                "#include \"kl_0_my.cu\"\n#ifdef KERNEL_LAB_SIM\n#line 1 \"[gemm signature]\"\n\
                 extern \"C\" __global__ void user_sgemm_64_64_8(half * lab_A, \
                 half * lab_B, float * lab_C, int lab_M, int lab_N, int lab_K) {\n  \
                 sgemm<64,64,8>(::kernel_lab::elements<half>{lab_A}, \
                 ::kernel_lab::elements<half>{lab_B}, ::kernel_lab::elements<float>{lab_C}, \
                 ::kernel_lab::loose<int>{lab_M}, ::kernel_lab::loose<int>{lab_N}, \
                 ::kernel_lab::loose<int>{lab_K});"
            ),
            "{u}"
        );
        assert!(
            u.contains(
                "#else\n#line 1 \"[gemm signature]\"\nstatic_assert(sizeof(::kernel_lab::accepts(\
                 ::kernel_lab::params_of(&sgemm<64,64,8>), ::kernel_lab::elements<half>{}, \
                 ::kernel_lab::elements<half>{}, ::kernel_lab::elements<float>{}, \
                 ::kernel_lab::loose<int>{}"
            ),
            "{u}"
        );
        let w = parts(vec![launch(&list, None)], sig, &buffers).through_wrapper();
        assert!(
            w.contains("kernel_lab_wrap_begin.h") && !w.contains("static_assert"),
            "{w}"
        );
        assert!(
            w.contains("__global__ void __launch_bounds__(256, 2) user_sgemm_64_64_8("),
            "{w}"
        );
        let clustered = parts(vec![launch(&list, Some("2, 1, 1"))], sig, &buffers);
        assert!(
            clustered
                .direct()
                .contains("__global__ void __cluster_dims__(2, 1, 1) user_sgemm_64_64_8("),
            "the simulator's wrapper runs the kernel's clusters"
        );
        assert!(!clustered.direct().contains("#define __global__"));
        // cluster=: NVRTC's build declares them on the file's kernels, and only there.
        let host = UnitParts {
            host_cluster: true,
            ..clustered
        }
        .direct();
        let (before, after) = host.split_once("#include \"kl_0_my.cu\"").unwrap();
        assert!(
            before.contains(
                "#ifndef KERNEL_LAB_SIM\n#undef __global__\n\
                 #define __global__ __location__(global) __cluster_dims__(2, 1, 1)\n#endif"
            ) && after.starts_with(
                "\n#ifndef KERNEL_LAB_SIM\n#undef __global__\n#define __global__ __location__(global)\n"
            ),
            "{host}"
        );
        assert_eq!(wrapper_name("ns::k"), "user_ns_k");
    }

    #[test]
    fn the_launches_of_a_plan_share_one_unit_each_with_its_own_wrapper() {
        let sig = Signature::named("gemm").unwrap();
        let buffers = Buffers::fp32(sig);
        let mut workspaces = super::super::signature::Workspaces::default();
        let (partial, _) = ArgList::parse(
            "(A, B, M, N, K, scratch(P, 4*M*N))",
            Workload::Gemm,
            &mut workspaces,
        )
        .unwrap();
        let (reduce, _) = ArgList::parse("(P, C, M*N)", Workload::Gemm, &mut workspaces).unwrap();
        let reduce_launch = LaunchParts {
            entry: "reduce",
            name: "user_reduce",
            at: 1,
            list: &reduce,
            bounds: "",
            ..launch(&partial, None)
        };
        let two = parts(vec![launch(&partial, None), reduce_launch], sig, &buffers);
        let u = two.direct();
        // The file once, then each launch's wrapper and check, named by its place.
        assert_eq!(u.matches("#include \"kl_0_my.cu\"").count(), 1, "{u}");
        assert!(
            u.contains(
                "#line 1 \"[args list of launch 2]\"\nextern \"C\" __global__ void \
                 user_reduce(void * lab_P, float * lab_C, int lab_arg2) {\n  \
                 reduce(::kernel_lab::workspace{lab_P}, ::kernel_lab::elements<float>{lab_C}, \
                 ::kernel_lab::loose<int>{lab_arg2});"
            ),
            "{u}"
        );
        assert!(
            u.contains(
                "params_of(&reduce), ::kernel_lab::workspace{}, ::kernel_lab::elements<float>{}, \
                 ::kernel_lab::loose<int>{}"
            ),
            "{u}"
        );
        let w = two.through_wrapper();
        assert!(
            w.contains("void __launch_bounds__(256, 2) user_sgemm_64_64_8(")
                && w.contains("void user_reduce("),
            "each wrapper with its own kernel's bounds:\n{w}"
        );
    }
}
