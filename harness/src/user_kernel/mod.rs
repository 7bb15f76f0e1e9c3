//! A kernel the user brings: `harness run --kernel FILE.cu:ENTRY,block=..,grid=..` or a
//! `[[kernel]]` section of the config. The file (and the local headers it includes) is read
//! at run time, host code blanked, and the entry, which may be a template instantiation
//! (`sgemm<128,128,8>`), is launched with the workload's parameter list (see [`signature`])
//! or the kernel's own (`args=`), on buffers of the types it takes ([`buffers`]). From there
//! it is a row like any rung: compiled, validated on poisoned output, timed, reported as
//! `user`. `docs/your-kernel.md` is the user's guide.

pub mod buffers;
pub mod expr;
pub mod files;
pub mod hint;
pub mod layout;
pub mod overload;
pub mod record;
pub mod run;
pub mod scan;
pub mod signature;
pub mod source;
pub mod spec;
mod template_keyword;

use buffers::Buffers;
use files::LocalFiles;
use kernel::cuda::{nvrtc, ptx_entry};
use kernel::{
    Arg, At, CONSTANT_BYTES, ConstantCopy, CudaPlan, CudaSource, DeviceError, DeviceInfo,
    DeviceKind, Dtype, Fill, Kernel, KernelInfo, Launch, Lineage, OutputLayout, Precision, Role,
    Scratch, Shape, Stage, Step, Unsupported, Workload,
};
use scan::KernelDecl;
use signature::{ArgItem, ArgList, Param, Signature, Workspaces};
use std::path::{Path, PathBuf};

pub use spec::{
    Block, Grid, LaunchSpec, Layout, OutputStart, RawUserKernel, UserKernelSpec, locate,
};

/// The clusters `entry` runs in, as `__cluster_dims__` arguments: `cluster=`'s, which the lab
/// declares for it, or its own.
fn cluster_dims(spec: &UserKernelSpec, decl: &scan::KernelDecl, entry: &str) -> Option<String> {
    match spec.cluster {
        Some([x, y, z]) => Some(format!("{x}, {y}, {z}")),
        None => decl.cluster_dims_for(entry),
    }
}

/// Anything wrong with a user kernel, in words that say what to do.
#[derive(Debug, thiserror::Error)]
pub enum UserKernelError {
    /// `spec` is [`UserKernelSpec::label`] (quoted, and where a config wrote it).
    #[error("kernel {spec}: {message}")]
    Spec { spec: String, message: String },
    #[error("kernel {spec}: cannot read the kernel file {file}: {error}")]
    Read {
        spec: String,
        file: String,
        error: String,
    },
    #[error("kernel {spec}: {message}")]
    Entry { spec: String, message: String },
    #[error(
        "{compiler} could not compile {file} for {arch}; its log (lines are those of your \
         file):\n{log}"
    )]
    Compile {
        file: String,
        compiler: String,
        arch: String,
        log: String,
    },
    #[error("{0}")]
    Signature(Box<SignatureMismatch>),
    #[error("{0}")]
    Device(DeviceError),
    /// An option of the command that the kernels are loaded for, such as `--workload`.
    #[error("{0}")]
    Usage(String),
}

/// The template libraries a file may include, by the folder their headers are in.
const TEMPLATE_LIBRARIES: [(&str, &str); 4] = [
    ("cub/", "CUB"),
    ("thrust/", "Thrust"),
    ("cutlass/", "CUTLASS"),
    ("cute/", "CuTe"),
];

/// How many lines of a compile log that fails inside a template library are shown: its
/// first errors say as much as all of them (NVRTC stops at a hundred).
const LIBRARY_LOG_LINES: usize = 24;

/// A compile `log` of `files` as a user reads it: the copies' names turned back into the
/// user's paths, cut short where it fails inside a template library the lab does not provide,
/// and followed by [`compile_hints`] (`include`: the option that gives a folder).
pub fn explain_log(log: &str, include: &str, files: &LocalFiles) -> String {
    let mut log = files.translate(log);
    let libraries = files.template_libraries();
    let hints = compile_hints(&log, include, &libraries);
    let lines = log.lines().count();
    if missing_library(&log, &libraries).is_some() && lines > LIBRARY_LOG_LINES {
        let kept: Vec<&str> = log.lines().take(LIBRARY_LOG_LINES).collect();
        log = format!(
            "{}\n... ({} more lines of errors inside the library's headers)\n",
            kept.join("\n"),
            lines - LIBRARY_LOG_LINES
        );
    }
    format!("{log}{hints}")
}

/// What a compiler's `log` of a user's file leaves unsaid, a line each: a header not found
/// (named with `include`, the option that gives a folder: `include=DIR` or `--include DIR`),
/// a template library (`libraries`: those the files include, which a failure inside one of
/// them names first), more constant memory than a GPU has.
pub fn compile_hints(log: &str, include: &str, libraries: &[&'static str]) -> String {
    let mut out = String::new();
    if let Some(bytes) = constant_bytes(log).filter(|&b| b > kernel::CONSTANT_BYTES) {
        out.push_str(&format!(
            "\nIts __constant__ data is {bytes} bytes (ptxas's cmem[3]); a GPU has {} bytes of \
             constant memory: make the array smaller, or put it in global memory and pass a \
             pointer.",
            kernel::CONSTANT_BYTES
        ));
    }
    // NVRTC's lookup of an entry whose name a function of the toolkit also has (`norm`,
    // `erf`: CUDA's math library is declared for every file).
    let overloaded = "cannot determine which instance of overloaded function \"";
    if let Some(at) = log.find(overloaded) {
        let name = log[at + overloaded.len()..].split('"').next().unwrap_or("");
        out.push_str(&format!(
            "\n`{name}` is also the name of a function of CUDA's own headers (its math library is \
             declared for every file), so the kernel's name is ambiguous: rename the kernel."
        ));
    }
    let missing = ["cannot open source file", "No such file or directory"]
        .iter()
        .any(|m| log.contains(m));
    if let Some(library) = missing_library(log, libraries) {
        out.push_str(&format!(
            "\nThe file includes {library}, a library of templates the lab does not provide \
             (NVRTC finds CUB and Thrust among CUDA's headers but cannot compile their host \
             parts, and finds neither CUTLASS nor CuTe; the simulator has none of them): a \
             kernel built on it cannot run here unmodified. Where only \
             host code uses it (a thrust::device_vector of the inputs), a file of the header's \
             name in a folder given with {include}, holding nothing, lets the file compile."
        ));
    } else if missing {
        out.push_str(&format!(
            "\nA header the file includes was not found: if it lies in another folder of the \
             project (include/, common/), name that folder with {include}, as nvcc's -I does; \
             if it is a header of the host's alone that the lab has no stand-in for, a file of \
             its name in a folder given with {include} stands in for it (the host code that \
             needed it is blanked), holding `#ifdef KERNEL_LAB_SIM`, `#include_next <NAME>` \
             and `#endif` on three lines: NVRTC then reads nothing, and the simulator's host \
             compiler the real header (where the host has none either, leave the three lines \
             out). A type that the file names outside its host functions (in a typedef, a \
             class's member, a file-scope variable) must be declared there too, for NVRTC: \
             `typedef unsigned long pthread_t;`."
        ));
    }
    // Warp intrinsics without a mask, which CUDA 9 deprecated and CUDA 13 removed.
    let unmasked = [
        "__shfl_down",
        "__shfl_up",
        "__shfl_xor",
        "__shfl",
        "__ballot",
        "__any",
        "__all",
    ];
    if let Some(name) = unmasked
        .iter()
        .find(|n| log.contains(&format!("identifier \"{n}\" is undefined")))
    {
        out.push_str(&format!(
            "\n`{name}` is the warp intrinsic without a mask, which CUDA 9 deprecated and CUDA \
             13 removed (nvcc refuses it too): since Volta a warp's threads need not run \
             together, and the `_sync` form names those that take part, `{name}_sync(0xffffffff, \
             ...)` for the whole warp. The file cannot run unmodified."
        ));
    }
    // A kernel launching kernels: dynamic parallelism, which needs nvcc's -rdc=true and the
    // device runtime.
    if log.contains("device-side kernel launch") {
        out.push_str(
            "\nA kernel here launches a kernel (dynamic parallelism), which needs relocatable \
             device code and the device runtime (nvcc -rdc=true, linked with cudadevrt); the lab \
             compiles each file whole and launches its kernels from the host only. Give the \
             launches the host code makes in order with then=, each kernel launched from the \
             host.",
        );
    }
    out
}

/// The template library of a header a compile log says it could not find (NVRTC's `cannot
/// open source file "cub/cub.cuh"`, g++'s `cub/block/block_reduce.cuh: No such file`), or
/// whose own header could not find one (`.../cub/device/dispatch/dispatch_histogram.cuh(68):
/// catastrophic error: cannot open source file "iterator"`: CUB's host-side headers, which
/// NVRTC lacks the standard library for), or in whose headers the errors are (the toolkit's
/// Thrust, which NVRTC finds and cannot compile). Of `included`, the libraries the files
/// include, the first is named where the errors are in any: CUB's headers include Thrust's.
fn missing_library(log: &str, included: &[&'static str]) -> Option<&'static str> {
    // Or an error inside one of the toolkit's copies, which NVRTC finds but cannot compile
    // (`.../cccl/thrust/detail/...(49): error: ...`).
    let inside = |l: &str| {
        l.split(": error")
            .next()
            .is_some_and(|at| ["/cub/", "/thrust/"].iter().any(|dir| at.contains(dir)))
    };
    let found = log
        .lines()
        .filter(|l| {
            l.contains("cannot open source file") || l.contains("No such file") || inside(l)
        })
        .find_map(|l| {
            TEMPLATE_LIBRARIES.iter().find_map(|(dir, name)| {
                [
                    format!("\"{dir}"),
                    format!(" {dir}"),
                    format!("<{dir}"),
                    format!("/{dir}"),
                ]
                .iter()
                .any(|p| l.contains(p.as_str()))
                .then_some(*name)
            })
        });
    found.map(|name| included.first().copied().unwrap_or(name))
}

/// A kernel whose parameter list is not the signature's: both lists, and the compiler's words.
#[derive(Debug, thiserror::Error)]
#[error(
    "{file}: the parameters of `{entry}` do not match the `{signature}` signature of the \
     {workload} workload.\n  the lab calls:   {entry}{calls}\n  {declared}\nName the \
     signature the kernel was written for (`signature=NAME`; {workload}: {choices}), give its \
     buffer types (`dtype=`), or change its parameter list.{vectors}{structs}\n{compiler} said:\n{log}"
)]
pub struct SignatureMismatch {
    pub file: String,
    pub entry: String,
    pub signature: String,
    pub workload: Workload,
    pub calls: String,
    pub declared: String,
    pub choices: String,
    /// What to do about vector pointer parameters (`half2 *`), which no `dtype=` gives.
    pub vectors: String,
    /// How `args=` gives a struct taken by value, and the structs the kernel takes.
    pub structs: String,
    pub compiler: String,
    pub log: String,
}

/// The vector types a kernel's pointer parameters may name: each takes a buffer of its element
/// type, as host code's reinterpret_cast gives one.
const VECTOR_TYPES: [&str; 8] = [
    "half2",
    "__half2",
    "__nv_bfloat162",
    "nv_bfloat162",
    "float2",
    "float4",
    "int4",
    "double2",
];

/// How a kernel takes a tensor map, where `args=` passes one the other way: by address
/// (`const CUtensorMap *`, the map copied to device memory by its host code) or by value.
fn map_note(params: &str, list: &ArgList) -> String {
    let by_pointer = params.match_indices("CUtensorMap").any(|(at, _)| {
        params[at + "CUtensorMap".len()..]
            .trim_start()
            .starts_with('*')
    });
    let passed: Vec<bool> = list
        .items
        .iter()
        .filter_map(|i| match i {
            ArgItem::TensorMap(m) => Some(m.by_address),
            _ => None,
        })
        .collect();
    if by_pointer && passed.contains(&false) {
        " Its `const CUtensorMap *` parameters take a map in global memory, where host code \
         copies the encoded map with cudaMemcpy: pass each as `&tmap(...)`."
            .into()
    } else if !by_pointer && passed.contains(&true) {
        " Its tensor maps are taken by value (`const __grid_constant__ CUtensorMap`): pass \
         each as `tmap(...)`, without `&`."
            .into()
    } else {
        String::new()
    }
}

/// For a list passing the number 0, as host code passes a null pointer: how `args=` writes one.
fn null_note(list: &ArgList) -> String {
    let zero = (0..list.items.len())
        .any(|i| matches!(list.items[i], ArgItem::Int(_)) && list.item_text(i) == "0");
    match zero {
        true => " A 0 in `args=` is the int 0; a null pointer is `nullptr`.".into(),
        false => String::new(),
    }
}

/// A sentence for a parameter list with pointers to vector types, empty for one without: the
/// list gave such a pointer a buffer of another element type.
fn vector_note(params: &str) -> String {
    let named: Vec<&str> = VECTOR_TYPES
        .into_iter()
        .filter(|t| {
            params
                .split(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
                .any(|w| w == *t)
        })
        .collect();
    // Element types no buffer of the lab has: FP64 and 8-bit integer GEMMs.
    let pointer_to = |t: &str| {
        params.match_indices(t).any(|(at, _)| {
            let before = params[..at].chars().next_back();
            let after = params[at + t.len()..].trim_start();
            !before.is_some_and(|c| c.is_ascii_alphanumeric() || c == '_') && after.starts_with('*')
        })
    };
    let foreign: Vec<&str> = ["double", "uint8_t"]
        .into_iter()
        .filter(|t| pointer_to(t))
        .collect();
    let mut out = match named.as_slice() {
        [] => String::new(),
        some => format!(
            " Its {} parameters take a buffer of the vector's element type, as host code's \
             reinterpret_cast gives one (float2 * or float4 * a buffer of f32, half2 * one of \
             f16, __nv_bfloat162 * one of bf16, int2 * or int4 * one of i32): give each its \
             type with dtype=.",
            some.join(", ")
        ),
    };
    if !foreign.is_empty() {
        out.push_str(&format!(
            " Its {} pointers name elements no buffer of the lab holds (its buffers hold f32, \
             f16, bf16, e4m3, e5m2, i32 or s8 elements), so no dtype= fits them.",
            foreign.join(", ")
        ));
    }
    if pointer_to("__nv_fp8_storage_t") {
        out.push_str(
            " Its __nv_fp8_storage_t pointers take FP8 values as raw bytes: give those buffers \
             dtype=e4m3 or e5m2, whose elements they read.",
        );
    }
    out
}

/// The bytes of `__constant__` data ptxas reports in a log (`... 16777216 bytes cmem[3]`), the
/// largest if several kernels report it.
fn constant_bytes(log: &str) -> Option<usize> {
    log.match_indices(" bytes cmem[3]")
        .filter_map(|(at, _)| {
            let before = log[..at].trim_end();
            let digits = before.len() - before.bytes().rev().take_while(u8::is_ascii_digit).count();
            before[digits..].parse().ok()
        })
        .max()
}

/// The compiler a compile check uses.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Compiler<'a> {
    /// NVRTC for this architecture.
    Nvrtc(&'a str),
    /// The simulator's host C++ compiler.
    Sim,
}

/// The architecture a user kernel is compiled for to check it and read its parameters.
const CHECK_ARCH: &str = "sm_80";

/// The target a file is compiled for when ptxas refuses its [`CHECK_ARCH`] build for an
/// instruction of a later GPU: the latest family the lab runs and simulates.
const LATER_ARCH: &str = "sm_90a";

/// Why ptxas refused to build `files`, when its compile `log` says an instruction needs a
/// later target than the one compiled for: `ptxas says "Feature 'elect' requires .target
/// sm_90 or higher"`, with the `__CUDA_ARCH__` tests of the files that hold on every GPU alike.
pub fn refused_for(log: &str, files: &LocalFiles) -> Option<String> {
    let message = log.lines().find_map(|line| {
        let message = line.split_once("error   : ")?.1.trim();
        let later = message.contains("requires .target sm_")
            || message.contains("not supported on .target");
        later.then_some(message)
    })?;
    let slips = match files.arch_slips.as_slice() {
        [] => String::new(),
        slips => format!(
            " ({}: `__CUDA_ARCH__` is 800 on sm_80 and 900 on sm_90, so a test against a \
             two-digit number holds on every GPU alike)",
            slips.join(", ")
        ),
    };
    Some(format!("ptxas says \"{message}\"{slips}"))
}

/// What `C` holds at the start of a run with `beta` not 0: these seeded values.
const C_SEED: u64 = 0xBE7A;

/// A user kernel ready to run: its file read and turned into a compilation unit.
#[derive(Clone)]
pub struct UserKernel {
    pub spec: UserKernelSpec,
    pub workload: Workload,
    pub signature: &'static Signature,
    /// The launches of its plan, in order: the entry, then each `then=`.
    launches: Vec<Launcher>,
    /// The memory of its own that the launches' lists declare.
    workspaces: Workspaces,
    /// Element types, B's layout, alpha and beta.
    pub buffers: Buffers,
    precision: Precision,
    id: String,
    rung: u32,
    files: LocalFiles,
    /// One compilation unit for every launch: they share its module.
    source: CudaSource,
    /// Why the kernel is launched through a wrapper converting the lab's arguments, when it
    /// is (its registers are then the wrapper's, with the kernel's own launch bounds).
    pub wrapped: Option<String>,
    /// Why the kernel is compiled for sm_90a alone although nothing in its file says so:
    /// ptxas refused its sm_80 build for an instruction of a later GPU
    /// ([`UserKernel::nvrtc_check`]).
    pub arch_note: Option<String>,
    /// Why the simulator cannot run it (inline PTX it does not know), once per kernel loaded.
    sim_refusal: Option<&'static str>,
    /// What `SMS` stands for in its expressions ([`sms_on`]).
    sms: usize,
    /// The rung `against=` sets it beside: its parent in the tables and on its page.
    against: Option<&'static str>,
}

/// One launch of the plan ([`spec::LaunchSpec`]) as the file has it.
#[derive(Clone)]
struct Launcher {
    spec: LaunchSpec,
    /// The entry's declaration in the file.
    decl: KernelDecl,
    /// For an overloaded entry, the cast that names the overload it runs.
    overload: Option<String>,
    /// What the launch passes: the signature's list or the kernel's own.
    list: ArgList,
    /// The name the launch uses (the entry's, for NVRTC; the simulator's wrapper's).
    launch_name: String,
    /// The `__cluster_dims__` arguments it runs with.
    cluster_dims: Option<String>,
    /// The most threads a block may have, from the kernel's `__launch_bounds__` (read from
    /// NVRTC's build): a block computed from the shape is checked against it at each shape.
    max_threads: Option<u64>,
    /// Those bounds as attributes, for the wrapper a converting launch goes through.
    bounds: String,
}

/// How a shape launches the kernel.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Geometry {
    pub grid: [u32; 3],
    pub block: [u32; 3],
    /// Dynamic shared memory in bytes.
    pub smem: u32,
}

impl std::fmt::Debug for UserKernel {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.id)
    }
}

/// The name of the GPU's SM count in expressions (`grid=(2*SMS)` for a persistent kernel).
pub const SMS: &str = "SMS";

/// What `SMS` stands for where no GPU runs the kernel (the simulator, `inspect`): fixed, so
/// that a check does not depend on the machine, and small, so that a persistent kernel's loop
/// takes several tiles per block on the simulator's shapes.
pub const SIM_SMS: usize = 8;

/// Threads in a block of these dimensions.
fn count(dims: [u32; 3]) -> u64 {
    dims.iter().map(|&n| u64::from(n)).product()
}

/// What `SMS` stands for on `device`: its SM count on a GPU, [`SIM_SMS`] elsewhere (and for
/// `None`, a kernel only compiled).
pub fn sms_on(device: Option<&DeviceInfo>) -> usize {
    match device {
        Some(d) if d.kind == DeviceKind::Cuda.name() => d.units as usize,
        _ => SIM_SMS,
    }
}

/// The names of `vars` in words, for a message: `M, N, K and SMS, the GPU's SM count`.
pub fn names_in_words(vars: &[(&str, usize)]) -> String {
    let dims: Vec<&str> = vars.iter().map(|(n, _)| *n).filter(|n| *n != SMS).collect();
    format!("{} and {SMS}, the GPU's SM count", dims.join(", "))
}

/// The names an expression may use for `shape` on a GPU with `sms` SMs: the shape's
/// dimensions, a convolution's output size `HO`, `WO`, and `SMS`.
pub fn vars(shape: &Shape, sms: usize) -> Vec<(&'static str, usize)> {
    let mut v = shape.dims();
    if let Shape::Conv { h, w, k, .. } = *shape {
        let (ho, wo) = Shape::conv_out(h, w, k);
        v.extend([("HO", ho), ("WO", wo)]);
    }
    v.push((SMS, sms));
    v
}

/// Dynamic shared memory a block may have on the largest GPUs the lab knows (sm_90).
const MAX_SMEM: i64 = 227 * 1024;

/// The spec's `define=NAME=EXPR` options evaluated for `shape`, as `-D NAME=VALUE`.
fn defines_at(
    spec: &UserKernelSpec,
    shape: &Shape,
    sms: usize,
) -> Result<Vec<(kernel::Text, String)>, Unsupported> {
    let v = vars(shape, sms);
    spec.defines
        .iter()
        .map(|(name, e)| {
            let n = e
                .eval(&v)
                .map_err(|m| Unsupported(format!("define {name}={e}: {m}")))?;
            Ok((name.clone().into(), n.to_string()))
        })
        .collect()
}

/// `a pointer`, `an int`, `a float`: what the lab passes, in words.
fn arg_words(a: &Arg) -> &'static str {
    match a {
        Arg::Ptr(_) | Arg::PtrAt(_) => "a pointer",
        Arg::Null => "a null pointer",
        Arg::I32(_) => "a 32-bit int",
        Arg::I64(_) => "a 64-bit int",
        Arg::F32(_) => "a float",
        Arg::TensorMap(_) => "a tensor map",
        Arg::TensorMapAt(_) => "a pointer to a tensor map",
    }
}

/// Whether a kernel parameter (as PTX declares it) takes the lab's argument as it is.
fn same_abi(p: ptx_entry::Param, a: &Arg) -> bool {
    use ptx_entry::Param::{Float, Int};
    matches!(
        (p, a),
        (
            Int(8),
            Arg::Ptr(_) | Arg::PtrAt(_) | Arg::Null | Arg::TensorMapAt(_)
        ) | (Int(4), Arg::I32(_))
            | (Int(8), Arg::I64(_))
            | (Float(4), Arg::F32(_))
            | (ptx_entry::Param::Bytes(128), Arg::TensorMap(_))
    )
}

fn param_words(p: ptx_entry::Param) -> String {
    match p {
        ptx_entry::Param::Int(8) => "8 bytes (a size_t, a long or a pointer)".into(),
        ptx_entry::Param::Int(b) => format!("a {}-bit integer", b * 8),
        ptx_entry::Param::Float(8) => "a double".into(),
        ptx_entry::Param::Float(b) => format!("a {}-bit float", b * 8),
        ptx_entry::Param::Bytes(b) => format!("{b} bytes by value (a half or a struct)"),
    }
}

impl UserKernel {
    /// Reads the file of `spec`; `workload` is the one `--workload` named, used when the spec
    /// names neither a workload nor a signature. `rung` orders user rows. Checks, in this
    /// order: the file, the entry (a missing one lists the file's kernels), then the options
    /// that describe its parameters and buffers. Whether the kernel takes them is the
    /// compile check's ([`UserKernel::preflight`]); the launch options come last. `sms` is
    /// what `SMS` stands for ([`sms_on`]).
    pub fn load(
        spec: &UserKernelSpec,
        workload: Option<Workload>,
        rung: u32,
        sms: usize,
    ) -> Result<Self, UserKernelError> {
        let name = spec.label();
        let err = |message: String| UserKernelError::Spec {
            spec: name.clone(),
            message,
        };
        let file = spec.file.display().to_string();
        let files =
            LocalFiles::read(&spec.file, &spec.includes, spec.cluster.is_some()).map_err(|e| {
                UserKernelError::Read {
                    spec: name.clone(),
                    file: e.file,
                    error: e.error,
                }
            })?;
        let decl = scan::find(&files.kernels, &spec.entry, &file)
            .map_err(|message| UserKernelError::Entry {
                spec: name.clone(),
                message,
            })?
            .clone();
        let named = spec.signature.as_deref().and_then(Signature::named);
        // A column-major operand (a=col, b=col, c=col) is GEMM's alone.
        let col_major = [spec.a, spec.b, spec.c].contains(&Some(Layout::Col));
        let workload = spec
            .workload
            .or(named.map(|s| s.workload))
            .or(workload)
            .or(col_major.then_some(Workload::Gemm))
            .ok_or_else(|| {
                let all: Vec<&str> = Workload::ALL
                    .iter()
                    .filter(|w| Signature::default_for(**w).is_some())
                    .map(|w| w.name())
                    .collect();
                err(format!(
                    "which workload does it compute? add workload=NAME ({}), or run it with a \
                     single --workload",
                    all.join(", ")
                ))
            })?;
        let sig = match named {
            Some(s) if s.workload != workload => {
                return Err(err(format!(
                    "signature {} belongs to {}, not {workload}; {workload} has: {}",
                    s.name,
                    s.workload,
                    Signature::list_for(workload)
                )));
            }
            Some(s) => s,
            None => Signature::default_for(workload).ok_or_else(|| {
                err(format!(
                    "{workload} is a whole network built from the ladders' kernels, not one \
                     kernel's job: bring a kernel for one of its layers' workloads (conv, gemm, \
                     attention, layernorm, softmax, pool) instead"
                ))
            })?,
        };
        spec.check_names(workload)
            .map_err(|(key, m)| err(format!("{key}: {m}")))?;
        let probe = workload.probe_shape();
        let tensors: Vec<&str> = probe.inputs().iter().map(|t| t.name).collect();
        if let Some((name, _)) = spec
            .fixed_inputs
            .iter()
            .find(|(n, _)| !tensors.contains(&n.as_str()))
        {
            return Err(err(format!(
                "input={name}: {name} is not an input of {workload} ({})",
                tensors.join(", ")
            )));
        }
        if let Some(name) = spec.output_start.copy_of() {
            if !tensors.contains(&name) {
                return Err(err(format!(
                    "output={name}: {name} is not an input of {workload} ({}); the output \
                     starts as a copy of one of them",
                    tensors.join(", ")
                )));
            }
            if spec.beta.is_some_and(|b| b != 0.0) {
                return Err(err(format!(
                    "output={name} and beta= both say what the output starts as: beta * C \
                     reads C's own start; give one of them"
                )));
            }
        }
        let against = match &spec.against {
            Some(id) => Some(rung_beside(id, workload).map_err(&err)?),
            None => None,
        };
        // A `-D` the file's own `#define` replaces would change nothing it runs.
        if let Some((name, (_, at, text))) = spec.defines.iter().find_map(|(name, _)| {
            files
                .fixed_macros
                .iter()
                .find(|(m, ..)| m == name)
                .map(|found| (name, found))
        }) {
            return Err(err(format!(
                "define={name}: {at} defines {name} itself (`{text}`), which replaces the \
                 value define= passes (as a #define replaces a -D): put it inside `#ifndef \
                 {name}` ... `#endif`, or leave define={name} out"
            )));
        }
        // Compiled at first (the preflight, `inspect`) with the defines of the workload's
        // probe shape; each shape's plan carries its own.
        let defines = defines_at(spec, &workload.probe_shape(), sms)
            .map_err(|Unsupported(m)| err(format!("at {}: {m}", workload.probe_shape())))?;
        let launch_specs = spec.launches();
        let then = |at: usize, m: String| format!("{}{m}", launch_specs[at].prefix(at));
        let mut workspaces = Workspaces::default();
        let mut lists = Vec::new();
        for (at, l) in launch_specs.iter().enumerate() {
            lists.push(match &l.args {
                // Every error names the option, as the other options' do.
                Some(text) => {
                    ArgList::parse(text, workload, &mut workspaces)
                        .map_err(|m| match m.starts_with("args") {
                            true => err(then(at, m)),
                            false => err(then(at, format!("args: {m}"))),
                        })?
                        .0
                }
                None => ArgList::of(sig),
            });
        }
        // The signature whose buffers the lists name: every list's names in one.
        let sig = match lists.iter().any(|l| l.custom.is_some()) {
            true => {
                let used: Vec<&str> = lists.iter().flat_map(ArgList::names).collect();
                Signature::holding(workload, &used, named).map_err(&err)?
            }
            false => sig,
        };
        let params: Vec<Param> = lists.iter().flat_map(ArgList::params).collect();
        if !params.contains(&Param::Output) {
            let out = workload.probe_shape().output().name;
            let in_place = match spec.output_start.copy_of() {
                Some(x) => format!(
                    "with output={x}, {out} starts as a copy of {x}: pass {out} in {x}'s place"
                ),
                None => format!(
                    "a kernel that works in place on an input takes {out} in that input's place, \
                     with output=NAME for the input, which starts {out} as a copy of it"
                ),
            };
            return Err(err(format!(
                "args: no launch is given {out}, the output, so none can write it: pass {out} \
                 where the kernel takes its output; {in_place}"
            )));
        }
        let buffers = Buffers::of(spec, workload, sig, &params).map_err(&err)?;
        for (symbol, buffer) in &spec.constants {
            let name = symbol.rsplit("::").next().unwrap_or(symbol);
            if let Some(declared) = &files.constants
                && !declared.iter().any(|c| c == name)
            {
                return Err(err(format!(
                    "constant={symbol}:{buffer}: {file} declares no __constant__ variable \
                     {symbol}; it declares: {}",
                    match declared.as_slice() {
                        [] => "none".to_string(),
                        all => all.join(", "),
                    }
                )));
            }
            if sig.buffer(buffer, &workload.probe_shape()).is_none() {
                let names: Vec<&str> = sig
                    .params
                    .iter()
                    .filter(|(n, _)| sig.buffer(n, &workload.probe_shape()).is_some())
                    .map(|(n, _)| *n)
                    .collect();
                return Err(err(format!(
                    "constant={symbol}:{buffer}: {buffer} is not a buffer of the {} signature \
                     ({})",
                    sig.name,
                    names.join(", ")
                )));
            }
        }
        let precision = buffers.judge_by(spec.precision).map_err(&err)?;
        let standins = source::standin_dir().map_err(&err)?;
        let mut launches: Vec<Launcher> = Vec::new();
        for (at, (l, list)) in launch_specs.iter().zip(lists).enumerate() {
            let decl = match at {
                0 => decl.clone(),
                _ => scan::find(&files.kernels, &l.entry, &file)
                    .map_err(|message| UserKernelError::Entry {
                        spec: name.clone(),
                        message: then(at, message),
                    })?
                    .clone(),
            };
            // An overloaded entry: the overload that takes the lab's arguments.
            let overloads = overload::overloads(&files.kernels, &decl);
            let (decl, overload) = if overloads.len() > 1 {
                let lab: Vec<String> = (0..list.items.len())
                    .map(|i| list.c_type(i, &buffers))
                    .collect();
                let (chosen, cast) = overload::choose(&overloads, &l.entry, &lab, &file)
                    .map_err(|m| err(then(at, m)))?;
                (chosen.clone(), Some(cast))
            } else {
                (decl, None)
            };
            if let (Some(_), Some(own)) = (spec.cluster, &decl.cluster_dims) {
                return Err(err(then(
                    at,
                    format!(
                        "cluster= gives clusters to a kernel that declares \
                         __cluster_dims__({own}) itself ({}): cluster= is for the size host \
                         code sets at launch",
                        format_args!("{}:{}", decl.file, decl.line)
                    ),
                )));
            }
            // The same kernel launched twice (with other arguments) gets a wrapper per launch.
            let mut launch_name = source::wrapper_name(&l.entry);
            if launches.iter().any(|p| p.launch_name == launch_name) {
                launch_name = format!("{launch_name}_{}", at + 1);
            }
            launches.push(Launcher {
                cluster_dims: cluster_dims(spec, &decl, &l.entry),
                spec: l.clone(),
                decl,
                overload,
                list,
                launch_name,
                max_threads: None,
                bounds: String::new(),
            });
        }
        // `Kernel::gpu_only` speaks of the kernel's code, which lives as long as the process.
        let sim_refusal = files
            .sim_refusal
            .clone()
            .map(|r| &*Box::leak(r.into_boxed_str()));
        let mut k = Self {
            sim_refusal,
            sms,
            against,
            id: spec.id(),
            workload,
            signature: sig,
            rung,
            source: CudaSource {
                code: String::new().into(),
                file: file.into(),
                defines,
                include_dirs: files.include_dirs(&spec.file, &spec.includes, standins),
                // Clusters need sm_90 (NVRTC refuses __cluster_dims__ for sm_80).
                arch: (files.hopper || spec.cluster.is_some()).then_some("sm_90a".into()),
                other_archs: files.hopper_guarded && spec.cluster.is_none(),
                cxx_entries: launches
                    .iter()
                    .map(|l| {
                        let expr = l.overload.clone().unwrap_or_else(|| l.spec.entry.clone());
                        (l.launch_name.clone().into(), expr.into())
                    })
                    .collect(),
                from_user: true,
            },
            launches,
            workspaces,
            buffers,
            precision,
            files,
            spec: spec.clone(),
            wrapped: None,
            arch_note: None,
        };
        k.source.code = k.unit(false).into();
        Ok(k)
    }

    /// Compiles it first at `shape` rather than the workload's probe shape: a kernel
    /// specialized by `define=` may compile only at the sizes it is run at (an array of
    /// `H / 64` elements).
    pub fn probe_at(&mut self, shape: &Shape) -> Result<(), UserKernelError> {
        self.source.defines =
            defines_at(&self.spec, shape, self.sms).map_err(|Unsupported(m)| {
                UserKernelError::Spec {
                    spec: self.spec.label(),
                    message: format!("at {shape}: {m}"),
                }
            })?;
        Ok(())
    }

    /// The user's file as written, headed by its path: what a diff against a rung shows in
    /// its place (its plan's source is the unit that includes a prepared copy).
    pub fn as_written(&self) -> std::io::Result<String> {
        let text = std::fs::read_to_string(&self.spec.file)?;
        Ok(format!("// file: {}\n{text}", self.spec.file.display()))
    }

    /// Whether the kernel adds into an output that starts poisoned: its file calls atomicAdd
    /// (in its code, not a comment), and `output=zero` does not clear the output first, as
    /// its host code would.
    pub fn adds_into_poison(&self) -> bool {
        self.spec.output_start == OutputStart::Poison
            && std::fs::read_to_string(&self.spec.file)
                .is_ok_and(|t| kernel::sim::compile::strip_comments(&t).contains("atomicAdd"))
    }

    /// Whether the files access memory through `volatile` (not `asm volatile`): the
    /// warp-synchronous idiom of older reductions, which Volta's independent thread
    /// scheduling broke.
    pub fn uses_volatile_memory(&self) -> bool {
        let ident = |c: char| c == '_' || c.is_ascii_alphanumeric();
        // Outside directives, whose `#line` names the file.
        let volatile_access = |t: &str| {
            t.lines()
                .filter(|l| !l.trim_start().starts_with('#'))
                .any(|t| {
                    t.match_indices("volatile").any(|(at, w)| {
                        let (before, after) = (&t[..at], &t[at + w.len()..]);
                        !before.ends_with(ident)
                            && !after.starts_with(ident)
                            && !["asm", "__asm__", "__asm"]
                                .iter()
                                .any(|a| before.trim_end().ends_with(a))
                    })
                })
        };
        self.files.names.iter().any(|(copy, _)| {
            std::fs::read_to_string(self.files.dir.join(copy)).is_ok_and(|t| volatile_access(&t))
        })
    }

    /// Whether the files order blocks against one another (atomics, fences, volatile or
    /// acquire-release accesses, a grid barrier): a kernel whose blocks take turns at an
    /// element, as a serial split-K does, rather than each writing elements of its own.
    pub fn orders_blocks(&self) -> bool {
        const ORDERING: [&str; 7] = [
            "atomic",
            "volatile",
            "__threadfence",
            ".acquire",
            ".release",
            "grid.sync",
            "this_grid",
        ];
        self.files.names.iter().any(|(copy, _)| {
            std::fs::read_to_string(self.files.dir.join(copy)).is_ok_and(|t| {
                let code = kernel::sim::compile::strip_comments(&t);
                ORDERING.iter().any(|w| code.contains(w))
            })
        })
    }

    /// Each launch's name in the plan (the lab's wrapper's, for the simulator) and its entry
    /// as the user wrote it, in order.
    pub fn entries(&self) -> impl Iterator<Item = (&str, &str)> {
        self.launches
            .iter()
            .map(|l| (l.launch_name.as_str(), l.spec.entry.as_str()))
    }

    /// The names of its workspaces that start as NaN (`scratch()`).
    pub fn nan_workspaces(&self) -> Vec<String> {
        self.workspaces.nan_names()
    }

    /// The rung `against=` sets it beside.
    pub fn against(&self) -> Option<&'static str> {
        self.against
    }

    pub fn id(&self) -> &str {
        &self.id
    }

    /// Whether an expression of its launch (grid, shared memory, defines, arguments) uses
    /// `SMS`, so that its rows depend on the GPU's SM count.
    pub fn uses_sms(&self) -> bool {
        let mut exprs: Vec<&expr::Expr> = self.spec.defines.iter().map(|(_, e)| e).collect();
        exprs.extend(self.workspaces.exprs());
        for l in &self.launches {
            exprs.extend(l.spec.smem.iter());
            if let Some(Grid::Exprs(g)) = &l.spec.grid {
                exprs.extend(g);
            }
            exprs.extend(l.spec.block.iter().flat_map(|b| b.exprs()));
            for item in &l.list.items {
                match item {
                    ArgItem::Int(e) | ArgItem::Named(_, _, Some(e)) => exprs.push(e),
                    ArgItem::TensorMap(m) => exprs.extend(m.exprs()),
                    ArgItem::Named(..)
                    | ArgItem::Float(_)
                    | ArgItem::Null
                    | ArgItem::Workspace(..) => {}
                }
            }
        }
        exprs
            .iter()
            .any(|e| e.unknown_names(&[]).iter().any(|n| n == SMS))
    }

    /// The architecture the kernel is compiled for to check it: [`CHECK_ARCH`], or `sm_90a`
    /// for a file with Hopper's instructions outside `__CUDA_ARCH__` conditionals.
    fn check_arch(&self) -> &str {
        match self.source.arch.as_deref() {
            Some(only) if !self.source.other_archs => only,
            _ => CHECK_ARCH,
        }
    }

    /// The compilation unit the lab builds (the user's file, blanked host code, wrapper).
    pub fn source(&self) -> &CudaSource {
        &self.source
    }

    /// The user's kernels and local headers as the lab compiles them.
    pub fn files(&self) -> &LocalFiles {
        &self.files
    }

    /// Grid, block and dynamic shared memory of each launch for `shape`, in order, or why one
    /// cannot be launched.
    pub fn geometry(&self, shape: &Shape) -> Result<Vec<Geometry>, Unsupported> {
        let geometry = self
            .launches
            .iter()
            .enumerate()
            .map(|(at, l)| {
                self.launch_geometry(l, shape)
                    .map_err(|Unsupported(m)| Unsupported(format!("{}{m}", l.spec.prefix(at))))
            })
            .collect::<Result<Vec<_>, _>>()?;
        let workspaces = self.workspaces.at(shape, self.sms).map_err(Unsupported)?;
        // A workspace the machine cannot hold is declined, not allocated until the process
        // aborts (in the simulator it lives in host memory).
        let bytes = workspaces
            .iter()
            .fold(0u64, |sum, (_, words, _)| sum.saturating_add(*words as u64))
            .saturating_mul(4);
        if let Some(available) = crate::footprint::available().filter(|&a| bytes > a) {
            return Err(Unsupported(format!(
                "args: the workspaces are {bytes} bytes here, more than the {available} bytes of \
                 memory this machine has available"
            )));
        }
        for (symbol, buffer) in &self.spec.constants {
            let Some((p, len)) = self.signature.buffer(buffer, shape) else {
                continue; // checked at load
            };
            let bytes = len * self.buffers.of_param(p).map_or(4, Dtype::bytes);
            if bytes > CONSTANT_BYTES {
                return Err(Unsupported(format!(
                    "constant={symbol}:{buffer}: {buffer} is {bytes} bytes here, more than the \
                     {} KiB of __constant__ memory a module may have",
                    CONSTANT_BYTES / 1024
                )));
            }
        }
        Ok(geometry)
    }

    /// One launch's grid, block and dynamic shared memory for `shape`.
    fn launch_geometry(&self, l: &Launcher, shape: &Shape) -> Result<Geometry, Unsupported> {
        let (block, grid) = l.spec.launch().map_err(|(_, m)| Unsupported(m))?;
        let v = vars(shape, self.sms);
        let block = block.at(&v).map_err(Unsupported)?;
        let threads = count(block);
        if let Some(most) = l.max_threads.filter(|&m| threads > m) {
            return Err(Unsupported(format!(
                "block {} is {threads} threads here, more than the {most} its \
                 __launch_bounds__ allow: a GPU refuses the launch",
                spec::block_text(block)
            )));
        }
        let grid = match grid {
            Grid::Tile(t) => {
                let dims = shape.output().dims;
                if let [n] = t[..] {
                    [kernel::div_ceil(shape.output().len(), n), 1, 1]
                } else {
                    let cols = dims.last().copied().unwrap_or(1);
                    let rows = dims.len().checked_sub(2).map_or(1, |i| dims[i]);
                    let rest: usize = dims.iter().rev().skip(2).product();
                    [
                        kernel::div_ceil(cols, t[1]),
                        kernel::div_ceil(rows, t[0]),
                        rest as u32,
                    ]
                }
            }
            Grid::Exprs(exprs) => {
                let mut g = [1u32; 3];
                for (axis, (slot, e)) in g.iter_mut().zip(exprs).enumerate() {
                    let limit = if axis == 0 {
                        i64::from(i32::MAX)
                    } else {
                        65535
                    };
                    let n = e.eval(&v).map_err(|m| Unsupported(format!("grid {m}")))?;
                    if !(1..=limit).contains(&n) {
                        return Err(Unsupported(format!(
                            "grid {} = {e} = {n} is outside 1..={limit}",
                            ["x", "y", "z"][axis]
                        )));
                    }
                    *slot = n as u32;
                }
                g
            }
        };
        if grid[1] > 65535 || grid[2] > 65535 {
            return Err(Unsupported(format!(
                "grid {grid:?}: y and z are limited to 65535 blocks"
            )));
        }
        l.list
            .args(shape, self.sms, &self.buffers)
            .map_err(Unsupported)?;
        for m in l.list.tensor_maps() {
            let len = self.signature.buffer(m.buffer, shape).map_or(0, |(_, l)| l);
            m.at(shape, self.sms, &self.buffers, len)
                .map_err(Unsupported)?;
        }
        let smem = match &l.spec.smem {
            None => 0,
            Some(e) => {
                let n = e.eval(&v).map_err(|m| Unsupported(format!("smem {m}")))?;
                if !(0..=MAX_SMEM).contains(&n) {
                    return Err(Unsupported(format!(
                        "dynamic shared memory {e} = {n} bytes is outside 0..={MAX_SMEM}"
                    )));
                }
                n as u32
            }
        };
        Ok(Geometry { grid, block, smem })
    }

    /// Compiles the kernel once, turning a failure into the message a user can act on: the
    /// compiler's log with their file and line, or both parameter lists when the kernel does
    /// not take the signature's arguments.
    pub fn compile_check(&self, with: Compiler<'_>) -> Result<(), UserKernelError> {
        let result = match with {
            Compiler::Nvrtc(arch) => nvrtc::compile(&self.source, arch).map(|_| ()),
            Compiler::Sim => {
                kernel::sim::compile::translation_unit(&self.source).and_then(|(tu, _)| {
                    let cxx = kernel::sim::compile::compiler();
                    // Built as `run` runs it (counting traffic), so the run finds it cached.
                    let how = kernel::sim::compile::Build::Instrumented;
                    kernel::sim::compile::build(&self.source, &tu, &cxx, how).map(|_| ())
                })
            }
        };
        match result {
            Ok(()) => Ok(()),
            Err(DeviceError::Compile {
                compiler,
                file,
                arch,
                log,
            }) => Err(self.explain(compiler, file, arch, log)),
            Err(e) => Err(UserKernelError::Device(e)),
        }
    }

    /// Compiles the kernel with every compiler the run will use (NVRTC when it is installed,
    /// the simulator's when `sim`), so that a compile error shows once, before anything runs.
    /// With NVRTC, the kernel's own parameters are read from the build: a kernel that takes
    /// the lab's arguments as they are is launched itself; one that needs them converted (a
    /// `size_t` where the lab passes an `int`) through a wrapper with its launch bounds.
    pub fn preflight(&mut self, sim: bool) -> Result<(), UserKernelError> {
        if nvrtc::version().is_ok() {
            self.nvrtc_check()?;
            self.choose_launch()?;
        }
        // A file with inline PTX the simulator does not know is a GPU-only row, which says
        // why; compiling it for the simulator would only fail at the host's assembler.
        if sim && self.sim_refusal.is_none() {
            self.compile_check(Compiler::Sim)?;
        }
        Ok(())
    }

    /// The NVRTC compile of [`UserKernel::preflight`]. A file that ptxas refuses for sm_80
    /// because an instruction needs a later target (a conditional that is true on sm_80 too,
    /// `__CUDA_ARCH__ >= 90`) is compiled for sm_90a alone when that builds, as a GPU of that
    /// family compiles it, and says why on its row.
    fn nvrtc_check(&mut self) -> Result<(), UserKernelError> {
        let arch = self.check_arch().to_string();
        let refusal = match nvrtc::compile(&self.source, &arch) {
            Ok(_) => return Ok(()),
            Err(DeviceError::Compile { log, .. }) if arch != LATER_ARCH => {
                refused_for(&log, &self.files)
            }
            Err(_) => None,
        };
        if let Some(refusal) = refusal {
            let later = CudaSource {
                arch: Some(LATER_ARCH.into()),
                other_archs: false,
                ..self.source.clone()
            };
            if nvrtc::compile(&later, LATER_ARCH).is_ok() {
                self.source = later;
                self.arch_note = Some(format!(
                    "compiled for {LATER_ARCH} alone: for {arch}, {refusal}"
                ));
                return Ok(());
            }
        }
        self.compile_check(Compiler::Nvrtc(&arch))
    }

    /// Launches the kernels themselves when their parameters take the lab's arguments byte
    /// for byte; else switches to the converting wrappers, each with its kernel's own bounds.
    fn choose_launch(&mut self) -> Result<(), UserKernelError> {
        let compiled =
            nvrtc::compile(&self.source, self.check_arch()).map_err(UserKernelError::Device)?;
        let shape = self.workload.probe_shape();
        let several = self.launches.len() > 1;
        // Why a wrapper converts the arguments, for each launch that needs one.
        let mut why: Vec<String> = Vec::new();
        let mut widened = false;
        for (at, l) in self.launches.iter_mut().enumerate() {
            let symbol = compiled.symbol(&l.launch_name);
            let Some(entry) = ptx_entry::entry(&compiled.ptx, symbol) else {
                continue;
            };
            // Messages of a plan of several launches name the kernel.
            let whose = match several {
                true => format!("{}: ", l.spec.entry),
                false => String::new(),
            };
            // A GPU refuses a launch of more threads than the kernel's bounds; the simulator
            // would run it, and the row would pass. A block computed from the shape is checked
            // at each.
            l.max_threads = entry.max_threads.map(count);
            l.bounds = entry.bounds_attributes();
            if let (Some(most), Some(Block::Fixed(block))) = (entry.max_threads, &l.spec.block) {
                let block = *block;
                if count(block) > count(most) {
                    return Err(UserKernelError::Spec {
                        spec: self.spec.label(),
                        message: format!(
                            "{}block={} is {} threads, more than the {} its __launch_bounds__ \
                             allow: a GPU refuses the launch",
                            l.spec.prefix(at),
                            spec::block_text(block),
                            count(block),
                            count(most)
                        ),
                    });
                }
            }
            // A struct taken by value: the wrapper builds it from its fields, as host code
            // would before the launch.
            let structs = l.list.struct_notes();
            if !structs.is_empty() {
                why.extend(structs.into_iter().map(|n| format!("{whose}{n}")));
                continue;
            }
            let args = l
                .list
                .args(&shape, self.sms, &self.buffers)
                .unwrap_or_default();
            // Each parameter that does not take the lab's argument as it is.
            let mismatched: Vec<(usize, (&ptx_entry::Param, &Arg))> = entry
                .params
                .iter()
                .zip(&args)
                .enumerate()
                .filter(|(_, (p, a))| !same_abi(**p, a))
                .collect();
            let differ: Vec<String> = mismatched
                .iter()
                .map(|&(i, (p, a))| {
                    let name = l.list.item_text(i);
                    format!(
                        "{whose}parameter {} ({name}) takes {}, the lab passes {}",
                        i + 1,
                        param_words(*p),
                        arg_words(a)
                    )
                })
                .collect();
            // 64-bit integer parameters (`size_t M`) alone: the lab passes 64-bit values and
            // launches the kernel as it is, registers and all. Any other conversion: a wrapper.
            let wide: Vec<usize> = mismatched
                .iter()
                .map(|&(i, (p, a))| {
                    (*p == ptx_entry::Param::Int(8) && matches!(a, Arg::I32(_))).then_some(i)
                })
                .collect::<Option<_>>()
                .unwrap_or_default();
            if differ.is_empty() {
                continue;
            }
            if wide.is_empty() {
                why.extend(differ);
            } else {
                for &i in &wide {
                    l.list.widen(i);
                }
                widened = true;
            }
        }
        if !why.is_empty() {
            self.source.code = self.unit(true).into();
            self.source.cxx_entries.clear();
            self.wrapped = Some(why.join("; "));
        } else if widened {
            self.source.code = self.unit(false).into();
        } else {
            return Ok(());
        }
        self.compile_check(Compiler::Nvrtc(self.check_arch()))
    }

    /// The unit NVRTC compiles: the kernels launched as they are, or (`wrapped`, with each
    /// kernel's own bounds) through the converting wrappers.
    fn unit(&self, wrapped: bool) -> String {
        let parts = source::UnitParts {
            main: &self.files.main,
            host_cluster: self.spec.cluster.is_some(),
            sig: self.signature,
            buffers: &self.buffers,
            launches: self
                .launches
                .iter()
                .enumerate()
                .map(|(at, l)| source::LaunchParts {
                    entry: &l.spec.entry,
                    name: &l.launch_name,
                    at,
                    overload: l.overload.as_deref(),
                    cluster_dims: l.cluster_dims.as_deref(),
                    list: &l.list,
                    bounds: &l.bounds,
                })
                .collect(),
        };
        match wrapped {
            true => parts.through_wrapper(),
            false => parts.direct(),
        }
    }

    fn explain(
        &self,
        compiler: String,
        file: String,
        arch: String,
        log: String,
    ) -> UserKernelError {
        // `k<N>`: a dimension of the shape where a compile-time constant belongs.
        let dims = vars(&self.workload.probe_shape(), self.sms);
        let defined = |w: &str| self.spec.defines.iter().any(|(n, _)| n == w);
        for (at, l) in self.launches.iter().enumerate() {
            let entry = &l.spec.entry;
            let targs = entry.split_once('<').map_or("", |(_, rest)| {
                rest.rsplit_once('>').map_or(rest, |(a, _)| a)
            });
            let words = targs.split(|c: char| !(c.is_ascii_alphanumeric() || c == '_'));
            if let Some(dim) = words.into_iter().find(|w| {
                dims.iter().any(|(d, _)| d == w)
                    && !defined(w)
                    && log.contains(&format!("identifier \"{w}\" is undefined"))
            }) {
                return UserKernelError::Spec {
                    spec: self.spec.label(),
                    message: format!(
                        "{}the entry's template argument {dim} is a dimension of the shape, \
                         which the kernel only gets at run time; a template argument is fixed \
                         when the kernel is compiled: give it a name of your own with define=, \
                         as `{}<..H..>,define=H={dim}` (one module is compiled per size)",
                        l.spec.prefix(at),
                        entry.split('<').next().unwrap_or(entry)
                    ),
                };
            }
        }
        let explained = explain_log(&log, "include=DIR", &self.files);
        let log = self.files.translate(&log);
        let markers: Vec<String> = self
            .launches
            .iter()
            .enumerate()
            .map(|(at, l)| source::wrapper_file(&l.list, self.signature, at))
            .collect();
        let is_error = |l: &str| {
            [": error", ": fatal error", ": catastrophic error"]
                .iter()
                .any(|e| l.contains(e))
        };
        // A line of the wrapper's file: `[args list](2): error` (NVRTC) or `[args list]:2:20:
        // error` (g++), not `[args list of launch 2]`'s.
        let at = |l: &str, m: &str| l.strip_prefix(m).is_some_and(|r| r.starts_with(['(', ':']));
        // The first launch whose wrapper has an error: its list is not what its kernel takes.
        let at_wrapper = markers
            .iter()
            .position(|m| log.lines().any(|l| at(l, m) && is_error(l)));
        // An error in the file itself (an undefined name, a missing header) is what to
        // fix first: the lab's call may fail only because of it.
        let in_file = log
            .lines()
            .any(|l| !markers.iter().any(|m| at(l, m)) && is_error(l));
        // NVRTC checks the arguments through `kernel_lab::accepts`; another error at the
        // lab's line is the entry itself (template arguments its template does not take).
        let mismatch = at_wrapper
            .filter(|_| !in_file && (!compiler.starts_with("NVRTC") || log.contains("accepts")));
        let Some(l) = mismatch.map(|at| &self.launches[at]) else {
            return UserKernelError::Compile {
                file,
                compiler,
                arch,
                log: explained,
            };
        };
        let decl = &l.decl;
        let base = decl.name.rsplit("::").next().unwrap_or(&decl.name);
        let declared = format!(
            "{}:{} declares: {base}{}",
            decl.file, decl.line, decl.params
        );
        UserKernelError::Signature(Box::new(SignatureMismatch {
            file: self.spec.file.display().to_string(),
            entry: l.spec.entry.clone(),
            signature: l
                .list
                .custom
                .as_ref()
                .map_or(self.signature.name.to_string(), |c| format!("args={c}")),
            workload: self.workload,
            calls: l.list.c_params(&self.buffers),
            declared,
            choices: Signature::list_for(self.workload),
            vectors: vector_note(&decl.params)
                + &map_note(&decl.params, &l.list)
                + &null_note(&l.list),
            structs: self.struct_note(l),
            compiler: format!("{compiler} ({arch})"),
            log,
        }))
    }

    /// For a kernel taking a struct by value, or a list giving one: how `args=` builds a
    /// struct, and the definitions of those the kernel takes. Empty for neither.
    fn struct_note(&self, l: &Launcher) -> String {
        let defined: Vec<(usize, String)> = scan::by_value_types(&l.decl.params)
            .into_iter()
            .filter_map(|(i, ty)| Some((i, self.files.struct_definition(&ty)?)))
            .collect();
        if defined.is_empty() && !l.list.has_structs() {
            return String::new();
        }
        let mut out = String::from(
            " A struct the kernel takes by value is given in args= as its fields in braces, \
             in the order it declares them, every one of them (`args=({A, B, C, M, N, K})`; a \
             struct field in braces of its own, `{}` for an empty one): a number converts to \
             its field's type, a buffer only to a pointer to its element type.",
        );
        for (i, definition) in defined {
            out.push_str(&format!("\n  parameter {}: {definition}", i + 1));
            // The structs it holds, each once, as braces inside the braces build them.
            let mut shown = vec![definition];
            let mut at = 0;
            while at < shown.len() {
                for ty in scan::field_types(&shown[at]) {
                    if let Some(inner) = self.files.struct_definition(&ty)
                        && !shown.contains(&inner)
                    {
                        out.push_str(&format!("\n    which holds {inner}"));
                        shown.push(inner);
                    }
                }
                at += 1;
            }
        }
        out
    }

    /// Whether the kernel's parameters take `param` (its signature's list or its `args=`).
    pub fn passes(&self, param: Param) -> bool {
        self.launches
            .iter()
            .any(|l| l.list.params().contains(&param))
    }

    /// The inputs the kernel reads, where they differ from `inputs`: those `input=` fixes
    /// filled with their values, those it takes in FP8 rounded to it (which moves each value
    /// too far for a reference of the unrounded ones to judge the kernel by), and those it
    /// takes as integers drawn as such ([`Dtype::input_value`]). `None` when they are
    /// `inputs` themselves.
    fn own_inputs(&self, shape: &Shape, inputs: &[Vec<f32>]) -> Option<Vec<Vec<f32>>> {
        if !self.has_own_inputs() {
            return None;
        }
        let names = shape.inputs();
        let mut out = inputs.to_vec();
        for (name, value) in &self.spec.fixed_inputs {
            // The names were checked when the kernel was loaded.
            if let Some(i) = names.iter().position(|t| t.name == name) {
                out[i].fill(*value);
            }
        }
        for (values, d) in out.iter_mut().zip(&self.buffers.inputs) {
            if d.holds_inputs_of_its_own() {
                values.iter_mut().for_each(|v| *v = d.input_value(*v));
            }
        }
        Some(out)
    }

    /// How the row's summary says what its reference is, where it is its own: the table's
    /// "Checked against" line names the workload's.
    fn own_reference_note(&self) -> String {
        let mut what = Vec::new();
        if self.buffers.inputs.iter().any(|d| d.fp8().is_some()) {
            what.push("its inputs rounded to FP8");
        }
        if self.buffers.inputs.contains(&Dtype::I32) {
            what.push("its integer inputs (even, in [-1000, 1000])");
        }
        if self.buffers.inputs.contains(&Dtype::S8) {
            what.push("its int8 inputs (even, in [-126, 126])");
        }
        if !self.spec.fixed_inputs.is_empty() {
            what.push("the inputs `input=` fixes");
        }
        match what.is_empty() {
            true => String::new(),
            false => format!(", checked against the f64 result of {}", what.join(" and ")),
        }
    }

    /// Whether the kernel reads inputs of its own ([`UserKernel::own_inputs`]), so that its
    /// reference is its own too.
    fn has_own_inputs(&self) -> bool {
        !self.spec.fixed_inputs.is_empty()
            || self
                .buffers
                .inputs
                .iter()
                .any(|d| d.holds_inputs_of_its_own())
    }

    /// The inputs of `shape` the kernel is given neither as a parameter, nor as a
    /// `__constant__` array the lab fills (`constant=`), nor as a value (`input=`): the
    /// reference reads every one.
    pub fn unread_inputs(&self, shape: &Shape) -> Vec<String> {
        shape
            .inputs()
            .into_iter()
            .enumerate()
            .filter(|(i, t)| {
                !self.passes(Param::Input(*i))
                    && self.spec.output_start.copy_of() != Some(t.name)
                    && !self.spec.constants.iter().any(|(_, b)| *b == t.name)
                    && !self.spec.fixed_inputs.iter().any(|(n, _)| *n == t.name)
            })
            .map(|(_, t)| t.name.to_string())
            .collect()
    }

    /// The same kernel launched with its grid's x and y swapped, and that grid as an option
    /// (`grid=(cdiv(M,32),cdiv(N,32))` for `grid=tile:32x32` at a GEMM): the experiment that
    /// tells a kernel taking `blockIdx.x` across rows, as many public GEMMs do, from one with
    /// a tail bug. `None` for a plan of several launches, a grid of one axis, or a tile grid
    /// over an output of more than two dimensions.
    pub fn with_grid_swapped(&self, shape: &Shape) -> Option<(UserKernel, String)> {
        if !self.spec.then.is_empty() {
            return None;
        }
        let grid = match self.spec.grid.as_ref()? {
            Grid::Tile(t) => match t[..] {
                [r, c] if shape.output().dims.len() == 2 => {
                    let (rows, cols) = hint::output_axes(shape);
                    vec![
                        expr::Expr::parse(&format!("cdiv({rows},{r})")).ok()?,
                        expr::Expr::parse(&format!("cdiv({cols},{c})")).ok()?,
                    ]
                }
                _ => return None,
            },
            Grid::Exprs(e) if e.len() >= 2 => {
                let mut e = e.clone();
                e.swap(0, 1);
                e
            }
            Grid::Exprs(_) => return None,
        };
        let grid = Grid::Exprs(grid);
        let text = grid.option();
        let mut spec = self.spec.clone();
        spec.grid = Some(grid);
        // An id of its own: the variant is no row of the run, and never isolated as one.
        spec.id = Some(format!("{} (grid swapped)", self.id));
        let k = UserKernel::load(&spec, Some(self.workload), self.rung, self.sms).ok()?;
        Some((k, text))
    }

    /// When `shape` is not a whole number of the kernel's tiles, a line saying which
    /// dimensions are not, naming the first bad element when it lies in the partial tiles:
    /// the usual reason a kernel that passes on round sizes fails.
    /// `passed`: shapes the kernel passed at, whose tails are no cause (at the same remainder).
    pub fn tail_hint(
        &self,
        shape: &Shape,
        first_bad: Option<usize>,
        reads: hint::KReads,
        passed: &[&Shape],
    ) -> Option<String> {
        // The workload's element, whose row and column the tails are of.
        let first_bad = match self.buffers.relayout(shape, shape.inputs().len()) {
            Some(map) => first_bad.map(|p| map.element(p)),
            None => first_bad,
        };
        let several = self.launches.len() > 1;
        // Each launch's tails, named by its kernel where there are several.
        let hints: Vec<String> = self
            .launches
            .iter()
            .filter_map(|l| {
                let grid = l.spec.grid.as_ref()?;
                let ints: Vec<&expr::Expr> = l
                    .list
                    .items
                    .iter()
                    .filter_map(|i| match i {
                        ArgItem::Int(e) => Some(e),
                        ArgItem::Named(..)
                        | ArgItem::Float(_)
                        | ArgItem::Null
                        | ArgItem::Workspace(..)
                        | ArgItem::TensorMap(_) => None,
                    })
                    .collect();
                let v = vars(shape, self.sms);
                let handled: Vec<hint::PassedTail> = passed
                    .iter()
                    .flat_map(|p| hint::passed_tails(grid, &ints, p, &vars(p, self.sms)))
                    .collect();
                let hint = hint::tail_hint(grid, &ints, shape, &v, first_bad, reads, &handled)?;
                Some(match several {
                    true => format!("{}: {hint}", l.spec.entry),
                    false => hint,
                })
            })
            .collect();
        (!hints.is_empty()).then(|| hints.join("\n  "))
    }

    /// What C holds when a run starts: zero with `output=zero`, a copy of input x with
    /// `output=x`, a sentinel when beta is 0 (an element still holding it was never written),
    /// known random values otherwise (`beta * C` must read them).
    fn output_fill(&self) -> Fill {
        let passes_beta = self.passes(Param::Beta);
        let copied = self.spec.output_start.copy_of().and_then(|name| {
            let names = self.workload.probe_shape().inputs();
            names.iter().position(|t| t.name == name)
        });
        match self.signature.output_fill {
            _ if self.spec.output_start == OutputStart::Zero => Fill::Zero,
            // The name was checked when the kernel was loaded.
            _ if copied.is_some() => copied.map_or(Fill::Nan, Fill::Input),
            _ if passes_beta && self.buffers.beta != 0.0 => Fill::Random(C_SEED),
            // The sentinel as the output's type holds it, so that the check recognizes it.
            Fill::Value(v) => Fill::Value(Fill::Value(v).values(self.buffers.output, 1)[0]),
            other => other,
        }
    }
}

impl Kernel for UserKernel {
    fn info(&self) -> KernelInfo {
        let types = self.buffers.describe(self.workload);
        KernelInfo {
            id: self.id.clone().into(),
            workload: self.workload,
            stage: Stage::User,
            precision: self.precision,
            role: Role::User,
            rung: self.rung,
            summary: format!(
                "{} ({}{}), your kernel{}{}{}{}",
                self.spec.file.display(),
                match &self.launches[0].list.custom {
                    // In backticks: Markdown would read `4*M*N`'s stars as emphasis.
                    Some(c) => format!("`args={c}`"),
                    None => format!("{} signature", self.signature.name),
                },
                if types.is_empty() {
                    String::new()
                } else {
                    format!("; {types}")
                },
                match &self.wrapped {
                    Some(why) => format!(", launched through a converting wrapper: {why}"),
                    None => String::new(),
                },
                match &self.arch_note {
                    Some(why) => format!(", {why}"),
                    None => String::new(),
                },
                self.own_reference_note(),
                self.launches[1..]
                    .iter()
                    .map(|l| match &l.list.custom {
                        Some(c) => format!(", then `{}` (`args={c}`)", l.spec.entry),
                        None => format!(", then `{}`", l.spec.entry),
                    })
                    .collect::<String>()
            )
            .into(),
        }
    }

    fn supports(&self, shape: &Shape) -> Result<(), Unsupported> {
        defines_at(&self.spec, shape, self.sms)?;
        if let Some(name) = self.spec.output_start.copy_of() {
            let out = shape.output();
            let from = shape.inputs().into_iter().find(|t| t.name == name);
            if let Some(t) = from.filter(|t| t.len() != out.len()) {
                return Err(Unsupported(format!(
                    "output={name}: {name} has {} elements and {} has {}, so {} cannot start \
                     as a copy of {name}",
                    t.len(),
                    out.name,
                    out.len(),
                    out.name
                )));
            }
        }
        self.geometry(shape).map(|_| ())
    }

    /// Inline PTX the simulator's front end does not know: the row says which and where.
    fn gpu_only(&self) -> Option<&'static str> {
        self.sim_refusal
    }

    fn cuda(&self, shape: &Shape) -> Option<CudaPlan> {
        // A shape the geometry refuses is declined by `supports`; the plan still exists.
        let geometry = self.geometry(shape).unwrap_or_else(|_| {
            let one = |l: &Launcher| Geometry {
                grid: [1, 1, 1],
                block: match l.spec.block {
                    Some(Block::Fixed(b)) => b,
                    _ => [1, 1, 1],
                },
                smem: 0,
            };
            self.launches.iter().map(one).collect()
        });
        let len = self.signature.scratch_len(shape);
        let source = CudaSource {
            defines: defines_at(&self.spec, shape, self.sms).unwrap_or_default(),
            ..self.source.clone()
        };
        // The `__constant__` arrays the host code would fill, filled before the launches.
        let mut steps: Vec<Step> = self
            .spec
            .constants
            .iter()
            .filter_map(|(symbol, buffer)| {
                let (p, len) = self.signature.buffer(buffer, shape)?;
                let Arg::Ptr(buf) = p.arg(shape, &self.buffers) else {
                    return None;
                };
                Some(Step::Constant(ConstantCopy {
                    source: source.clone(),
                    symbol: symbol.clone().into(),
                    from: At { buf, offset: 0 },
                    len,
                }))
            })
            .collect();
        let mut cooperative = Vec::new();
        for (l, Geometry { grid, block, smem }) in self.launches.iter().zip(geometry) {
            let entry: kernel::Text = l.launch_name.clone().into();
            if l.spec.cooperative {
                cooperative.push(entry.clone());
            }
            steps.push(Step::Kernel(Launch {
                source: source.clone(),
                entry,
                grid,
                block,
                dynamic_smem: smem,
                args: l
                    .list
                    .args(shape, self.sms, &self.buffers)
                    .unwrap_or_default(),
            }));
        }
        Some(CudaPlan {
            inputs: self.buffers.inputs.clone(),
            output: self.buffers.output,
            output_fill: self.output_fill(),
            scratch: self
                .signature
                .scratch
                .iter()
                .zip(&self.buffers.scratch)
                .map(|(s, &dtype)| Scratch {
                    name: s.name.into(),
                    dtype,
                    len,
                    fill: s.fill,
                })
                // The workspaces, in 4-byte words (their type is the kernel's business).
                .chain(
                    self.workspaces
                        .at(shape, self.sms)
                        .unwrap_or_default()
                        .into_iter()
                        .map(|(name, words, fill)| Scratch {
                            name: name.into(),
                            dtype: Dtype::F32,
                            len: words,
                            fill,
                        }),
                )
                .collect(),
            steps,
            cooperative,
            written: self
                .entries()
                .filter(|(launched, written)| launched != written)
                .map(|(l, w)| (l.to_string().into(), w.to_string().into()))
                .collect(),
            ..Default::default()
        })
    }

    /// Set beside the rung `against=` names, as a rung beside its parent.
    fn lineage(&self) -> Option<Lineage> {
        self.against.map(|rung| Lineage {
            parent: Some(rung),
            idea: "your kernel, set beside this rung with against=",
            bound: None,
        })
    }

    /// Its `SMS` as `device` has it ([`sms_on`]), where that differs from the one it was
    /// loaded with.
    fn for_device(&self, device: &DeviceInfo) -> Option<Box<dyn Kernel>> {
        let sms = sms_on(Some(device));
        (self.uses_sms() && sms != self.sms).then(|| {
            Box::new(Self {
                sms,
                ..self.clone()
            }) as Box<dyn Kernel>
        })
    }

    fn device_inputs(&self, shape: &Shape, inputs: &[Vec<f32>]) -> Option<Vec<Vec<f32>>> {
        let fixed = self.own_inputs(shape, inputs);
        let moved: Vec<(usize, layout::Relayout)> = (0..inputs.len())
            .filter_map(|i| Some((i, self.buffers.relayout(shape, i)?)))
            .collect();
        if moved.is_empty() {
            return fixed;
        }
        let inputs = fixed.as_deref().unwrap_or(inputs);
        let mut out = inputs.to_vec();
        for (i, relayout) in moved {
            out[i] = relayout.lay_out(inputs.get(i)?);
        }
        Some(out)
    }

    fn output_layout(&self, shape: &Shape) -> Option<OutputLayout> {
        let map = self.buffers.relayout(shape, shape.inputs().len())?;
        Some(OutputLayout {
            axes: map.axes(),
            order: map.describe(),
        })
    }

    fn reference_of_its_own(&self) -> bool {
        self.has_own_inputs()
    }

    fn expected(
        &self,
        shape: &Shape,
        inputs: &[Vec<f32>],
        result: &[f64],
        indices: Option<&[usize]>,
    ) -> Option<Vec<f64>> {
        // Inputs of its own (`input=`, FP8): the result of those instead.
        let fixed = self.own_inputs(shape, inputs);
        let map = self.buffers.relayout(shape, shape.inputs().len());
        let (alpha, beta) = (f64::from(self.buffers.alpha), f64::from(self.buffers.beta));
        if fixed.is_none() && map.is_none() && alpha == 1.0 && beta == 0.0 {
            return None;
        }
        // The workload's result at each position the kernel is checked at: where it lays its
        // output out otherwise (C column-major, O as [B][S][H][D]), at the element it keeps
        // there.
        let x = fixed.as_deref().unwrap_or(inputs);
        let at_positions: Vec<f64> = match (map, indices) {
            (Some(map), Some(ix)) => {
                let elements: Vec<usize> = ix.iter().map(|&p| map.element(p)).collect();
                kernel::reference::at(shape, x, &elements)
            }
            (Some(map), None) => {
                let own = fixed
                    .as_ref()
                    .map(|x| kernel::reference::reference(shape, x));
                let result = own.as_deref().unwrap_or(result);
                (0..result.len()).map(|p| result[map.element(p)]).collect()
            }
            (None, Some(ix)) if fixed.is_some() => kernel::reference::at(shape, x, ix),
            (None, None) if fixed.is_some() => kernel::reference::reference(shape, x),
            (None, _) => result.to_vec(),
        };
        if alpha == 1.0 && beta == 0.0 {
            return Some(at_positions);
        }
        // C's initial values, as the kernel holds them: by position.
        let c0 = (beta != 0.0).then(|| {
            self.output_fill()
                .values(self.buffers.output, shape.output().len())
        });
        Some(
            at_positions
                .iter()
                .enumerate()
                .map(|(j, &r)| {
                    let i = indices.map_or(j, |ix| ix[j]);
                    alpha * r + c0.as_ref().map_or(0.0, |c| beta * f64::from(c[i]))
                })
                .collect(),
        )
    }
}

/// Reads the `--kernel` options and the config's `[[kernel]]` sections, in that order of
/// rows: the config's first.
pub fn specs(
    config_kernels: &[UserKernelSpec],
    cli: &[String],
) -> Result<Vec<UserKernelSpec>, UserKernelError> {
    let mut specs = config_kernels.to_vec();
    for text in cli {
        specs.push(UserKernelSpec::parse(text)?);
    }
    Ok(specs)
}

/// The user kernels of a run on `device` (`None`: only compiled, as `inspect` does), loaded
/// and compile-checked with the compilers the run uses (the simulator's too, when it runs
/// them); an error stops the run before anything is measured. For each kernel the errors
/// come in the order a user fixes them: the file and the entry, its parameter list, then the
/// launch options.
/// A kernel specialized by `define=` is compiled first at the first of `sizes` that is a
/// shape of its workload (else at the workload's probe shape).
pub fn load_all(
    specs: &[UserKernelSpec],
    workloads: &[String],
    sizes: &[String],
    device: Option<&DeviceInfo>,
) -> Result<Vec<UserKernel>, UserKernelError> {
    let sim = device.is_some_and(|d| d.kind != DeviceKind::Cuda.name());
    load_all_for(specs, workloads, sizes, sim, sms_on(device))
}

/// Of `specs`, the kernels whose ids are `ids`, loaded for `workload` (a child process runs
/// one row: the run's other kernels may compute other workloads). Each keeps its place in
/// `specs` as its rung.
pub fn load_only(
    specs: &[UserKernelSpec],
    ids: &[&str],
    shape: &Shape,
    device: Option<&DeviceInfo>,
) -> Result<Vec<UserKernel>, UserKernelError> {
    let sim = device.is_some_and(|d| d.kind != DeviceKind::Cuda.name());
    let sms = sms_on(device);
    let mut out = Vec::new();
    for (i, spec) in specs.iter().enumerate() {
        if ids.contains(&spec.id().as_str()) {
            let mut k = UserKernel::load(spec, Some(shape.workload()), i as u32 + 1, sms)?;
            k.probe_at(shape)?;
            k.preflight(sim)?;
            out.push(k);
        }
    }
    Ok(out)
}

/// [`load_all`] for a GPU of `sms` SMs, compile-checked for the simulator too when `sim`.
pub fn load_all_for(
    specs: &[UserKernelSpec],
    workloads: &[String],
    sizes: &[String],
    sim: bool,
    sms: usize,
) -> Result<Vec<UserKernel>, UserKernelError> {
    if let Some(bad) = workloads
        .iter()
        .find(|w| Workload::parse(w.trim()).is_none())
    {
        return Err(UserKernelError::Usage(format!(
            "--workload: {}",
            crate::select::unknown_workload(bad)
        )));
    }
    let single = match workloads {
        [w] => Workload::parse(w.trim()),
        _ => None,
    };
    let mut out = Vec::new();
    for (i, spec) in specs.iter().enumerate() {
        let mut k = UserKernel::load(spec, single, i as u32 + 1, sms)?;
        let asked: Vec<Workload> = workloads
            .iter()
            .filter_map(|w| Workload::parse(w.trim()))
            .collect();
        if !asked.is_empty() && !asked.contains(&k.workload) {
            return Err(UserKernelError::Spec {
                spec: spec.label(),
                message: format!(
                    "it computes {} (its signature or workload= says so), and --workload names \
                     {}: add --workload {}, or leave --workload out",
                    k.workload,
                    workloads.join(", "),
                    k.workload
                ),
            });
        }
        if let Some(lab) = crate::registry::all().iter().find(|r| r.info().id == k.id) {
            return Err(UserKernelError::Spec {
                spec: spec.label(),
                message: format!(
                    "{:?} names a kernel of the lab ({}): give yours another id=NAME",
                    k.id,
                    lab.info().summary
                ),
            });
        }
        if out.iter().any(|o: &UserKernel| o.id == k.id) {
            return Err(UserKernelError::Spec {
                spec: spec.label(),
                message: format!(
                    "another kernel is already called {:?}: give one of them another id=NAME",
                    k.id
                ),
            });
        }
        // Ids that differ only in characters a file name cannot hold would share a page.
        let page = crate::report::html::rung_page(&k.id);
        if let Some(o) = out
            .iter()
            .find(|o: &&UserKernel| crate::report::html::rung_page(&o.id) == page)
        {
            return Err(UserKernelError::Spec {
                spec: spec.label(),
                message: format!(
                    "its id {:?} and {:?}'s would share the page {page}: give one of them \
                     another id=NAME",
                    k.id, o.id
                ),
            });
        }
        if let Some(shape) = sizes
            .iter()
            .find_map(|s| Shape::parse(k.workload, s.trim()).ok())
        {
            k.probe_at(&shape)?;
        }
        k.preflight(sim)?;
        for (at, l) in spec.launches().iter().enumerate() {
            l.launch().map_err(|(key, message)| {
                let then = l.prefix(at);
                UserKernelError::Spec {
                    spec: spec.label(),
                    message: match &spec.origin {
                        Some(_) => format!("key `{key}`: {then}{message}"),
                        None => format!("{then}{message}"),
                    },
                }
            })?;
        }
        out.push(k);
    }
    Ok(out)
}

/// The rung `against=ID` names: a rung of the lab that computes `workload`.
fn rung_beside(id: &str, workload: Workload) -> Result<&'static str, String> {
    let all = crate::registry::all();
    let rungs: Vec<String> = all
        .iter()
        .map(|k| k.info())
        .filter(|i| i.role == Role::Rung && i.workload == workload)
        .map(|i| i.id.to_string())
        .collect();
    match all.iter().map(|k| k.info()).find(|i| i.id == id) {
        Some(i) if i.role == Role::Rung && i.workload == workload => {
            // A lineage names its parent for the life of the process.
            Ok(Box::leak(id.to_string().into_boxed_str()))
        }
        Some(i) if i.role == Role::Rung => Err(format!(
            "against={id}: your kernel computes {workload}, and {id} is a rung of {}; the rungs \
             of {workload}: {}",
            i.workload,
            rungs.join(", ")
        )),
        found => Err(format!(
            "against={id}: {} the rungs of {workload}: {}",
            match found {
                Some(_) => format!("{id} is not a rung (a reference or a peer);"),
                None => "no kernel of the lab has that id;".to_string(),
            },
            rungs.join(", ")
        )),
    }
}

/// The folder of `file`, `.` for a bare name.
pub fn folder_of(file: &Path) -> PathBuf {
    file.parent()
        .filter(|d| !d.as_os_str().is_empty())
        .unwrap_or(Path::new("."))
        .to_path_buf()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_template_library_not_found_is_named_as_one() {
        let nvrtc = "k.cu(2): catastrophic error: cannot open source file \"cub/cub.cuh\"";
        let gcc = "k.cu:2:10: fatal error: cub/block/block_reduce.cuh: No such file or directory";
        for log in [nvrtc, gcc] {
            let hint = compile_hints(log, "include=DIR", &[]);
            assert!(
                hint.contains("includes CUB, a library of templates the lab does not provide")
                    && !hint.contains("name that folder"),
                "{hint}"
            );
        }
        let own = "k.cu:2:10: fatal error: common/helpers.cuh: No such file or directory";
        assert!(
            compile_hints(own, "include=DIR", &[]).contains("name that folder with include=DIR")
        );
        let umbrella = "/opt/cccl/cub/device/dispatch/dispatch_histogram.cuh(68): catastrophic \
                        error: cannot open source file \"iterator\"";
        assert!(compile_hints(umbrella, "include=DIR", &[]).contains("includes CUB"));
        let cute = "k.cu(1): catastrophic error: cannot open source file \"cute/tensor.hpp\"";
        assert!(compile_hints(cute, "include=DIR", &[]).contains("includes CuTe"));
        // The toolkit's Thrust is found, and fails to compile in NVRTC.
        let thrust = "/cuda/include/cccl/thrust/detail/allocator/allocator_traits.inl(49): \
                      error: namespace \"std\" has no member class \"allocator_traits\"";
        assert!(compile_hints(thrust, "include=DIR", &[]).contains("includes Thrust"));
        let shfl = "k.cu(9): error: identifier \"__shfl_down\" is undefined";
        assert!(compile_hints(shfl, "include=DIR", &[]).contains("`__shfl_down_sync(0xffffffff,"));
        // Inside Thrust's headers, reached through CUB's, which the file includes.
        assert!(compile_hints(thrust, "include=DIR", &["CUB"]).contains("includes CUB"));
    }

    fn example(options: &str, workload: Workload) -> UserKernel {
        let file = concat!(env!("CARGO_MANIFEST_DIR"), "/../examples/attention_rows.cu");
        let spec = UserKernelSpec::parse(&format!("{file}:attention_rows<32,64>,{options}"));
        UserKernel::load(&spec.unwrap(), Some(workload), 1, SIM_SMS).unwrap()
    }

    #[test]
    fn an_expressions_error_names_its_option() {
        let file = concat!(env!("CARGO_MANIFEST_DIR"), "/../examples/attention_rows.cu");
        let e = |options: &str| {
            let spec = UserKernelSpec::parse(&format!("{file}:attention_rows<32,64>,{options}"));
            UserKernel::load(&spec.unwrap(), Some(Workload::Attention), 1, SIM_SMS)
                .unwrap_err()
                .to_string()
        };
        let smem = e("block=32,grid=(S),smem=abc");
        assert!(
            smem.contains(": smem: `abc` uses abc; expressions for attention"),
            "{smem}"
        );
        let args = e("block=32,grid=(S),args=()");
        assert!(
            args.contains(": args: cannot read the expression"),
            "{args}"
        );
    }

    /// A column-major operand is GEMM's alone: a spec with one needs no workload=.
    #[test]
    fn a_column_major_operand_says_the_workload_is_gemm() {
        let file = concat!(env!("CARGO_MANIFEST_DIR"), "/../examples/bf16_gemm_nt.cu");
        let load = |options: &str| {
            let spec = UserKernelSpec::parse(&format!("{file}:bf16_gemm_nt,{options}")).unwrap();
            UserKernel::load(&spec, None, 1, SIM_SMS)
        };
        let k = load("b=col,dtype=bf16,block=16x16,grid=tile:16x16").unwrap();
        assert_eq!(k.workload, Workload::Gemm);
        let e = load("dtype=bf16,block=16x16,grid=tile:16x16").unwrap_err();
        assert!(
            e.to_string().contains("which workload does it compute?"),
            "{e}"
        );
    }

    #[test]
    fn constant_data_is_read_from_ptxas_lines() {
        let log = "ptxas info    : Used 40 registers, 16777216 bytes cmem[3], 380 bytes cmem[0]\n\
                   ptxas info    : Used 8 registers, 1024 bytes cmem[3]";
        assert_eq!(constant_bytes(log), Some(16_777_216));
        assert_eq!(constant_bytes("ptxas info : Used 8 registers"), None);
    }

    #[test]
    fn vector_pointer_parameters_get_a_note_of_their_own() {
        let note = vector_note("(const half2 *__restrict__ X, float4* Y, int M, int n_half2)");
        assert_eq!(
            note,
            " Its half2, float4 parameters take a buffer of the vector's element type, as host \
             code's reinterpret_cast gives one (float2 * or float4 * a buffer of f32, half2 * \
             one of f16, __nv_bfloat162 * one of bf16, int2 * or int4 * one of i32): give each \
             its type with dtype=."
        );
        assert_eq!(vector_note("(const half *X, float *Y, int M)"), "");
        // FP64 and unsigned 8-bit kernels (the CUDA samples' dmma and imma GEMMs): no dtype=
        // fits; a signed 8-bit one takes dtype=s8.
        let note = vector_note("(double *a, double* b, const uint8_t *c, int m_double)");
        assert_eq!(
            note,
            " Its double, uint8_t pointers name elements no buffer of the lab holds (its buffers \
             hold f32, f16, bf16, e4m3, e5m2, i32 or s8 elements), so no dtype= fits them."
        );
        assert_eq!(vector_note("(const int8_t *x, int *y, int n)"), "");
        // FP8 as raw bytes (LeetCUDA's FP8 reductions).
        assert!(
            vector_note("(__nv_fp8_storage_t *x, float *y, int N)")
                .contains("give those buffers dtype=e4m3 or e5m2, whose elements they read"),
        );
        assert_eq!(vector_note("(float *doubled, int8_t n)"), "");
    }

    #[test]
    fn geometry_follows_the_shape_and_declines_what_cannot_launch() {
        let attention = Shape::Attention {
            b: 2,
            h: 3,
            s: 100,
            d: 24,
            causal: false,
        };
        // Tiles over (S, D) of O[B,H,S,D], the leading B*H on z.
        let k = example(
            "block=32,grid=tile:32x24,smem=2*32*D*4",
            Workload::Attention,
        );
        assert_eq!(
            k.geometry(&attention).map(|g| (g[0].grid, g[0].smem)),
            Ok(([1, 4, 6], 2 * 32 * 24 * 4))
        );
        let k = example("block=32,grid=(cdiv(S,32),B*H)", Workload::Attention);
        assert_eq!(
            k.geometry(&attention).map(|g| (g[0].grid, g[0].smem)),
            Ok(([4, 6, 1], 0))
        );
        let k = example("block=32,grid=(1,S*1000)", Workload::Attention);
        let why = k.supports(&attention).unwrap_err().0;
        assert!(
            why.contains("grid y = S*1000 = 100000 is outside 1..=65535"),
            "{why}"
        );
        let k = example("block=32,grid=tile:32,smem=S*D*1000", Workload::Attention);
        let why = k.supports(&attention).unwrap_err().0;
        assert!(why.contains("dynamic shared memory"), "{why}");
        let file = concat!(env!("CARGO_MANIFEST_DIR"), "/../examples/attention_rows.cu");
        let e = UserKernel::load(
            &UserKernelSpec::parse(&format!(
                "{file}:attention_rows<32,64>,block=32,grid=(cdiv(N,32))"
            ))
            .unwrap(),
            Some(Workload::Attention),
            1,
            SIM_SMS,
        )
        .unwrap_err()
        .to_string();
        assert!(
            e.contains("`cdiv(N,32)` uses N; expressions for attention may use B, H, S, D"),
            "{e}"
        );
    }

    #[test]
    fn sms_is_the_gpus_sm_count_in_every_expression_and_fixed_elsewhere() {
        let on = |kind: DeviceKind, units| DeviceInfo {
            kind: kind.name().to_string(),
            units,
            ..Default::default()
        };
        assert_eq!(sms_on(Some(&on(DeviceKind::Cuda, 132))), 132);
        // The simulator's and the CPU's worker threads are no SMs.
        assert_eq!(sms_on(Some(&on(DeviceKind::Sim, 2))), SIM_SMS);
        assert_eq!(sms_on(Some(&on(DeviceKind::Cpu, 64))), SIM_SMS);
        assert_eq!(sms_on(None), SIM_SMS);
        assert!(!example("block=32,grid=(cdiv(S,32),B*H)", Workload::Attention).uses_sms());
        let file = concat!(env!("CARGO_MANIFEST_DIR"), "/../examples/attention_rows.cu");
        let spec = UserKernelSpec::parse(&format!(
            "{file}:attention_rows<32,64>,block=256,grid=(2*SMS),smem=SMS*16,\
             define=WAVES=SMS/4,args=(A,B,C,M,N,K,SMS,zeros(SMS*M*4))"
        ))
        .unwrap();
        let shape = Shape::gemm(100, 37, 129);
        for sms in [132, SIM_SMS] {
            let k = UserKernel::load(&spec, Some(Workload::Gemm), 1, sms).unwrap();
            assert!(k.uses_sms());
            assert_eq!(
                k.geometry(&shape).map(|g| (g[0].grid, g[0].smem)),
                Ok(([2 * sms as u32, 1, 1], 16 * sms as u32))
            );
            let plan = k.cuda(&shape).unwrap();
            let Some(Step::Kernel(launch)) = plan.steps.last() else {
                panic!("{:?}", plan.steps)
            };
            assert_eq!(launch.args[6], Arg::I32(sms as i32));
            assert_eq!(launch.source.defines[0].1, (sms / 4).to_string());
            assert_eq!(plan.scratch.last().unwrap().len, sms * 100);
            // A grid of the SM count has no tail to blame.
            let hint = k
                .tail_hint(&shape, Some(0), hint::KReads::Unseen, &[])
                .unwrap_or_default();
            assert!(!hint.contains(SMS), "{hint}");
        }
    }

    #[test]
    fn against_sets_it_beside_a_rung_of_its_own_workload_as_its_parent() {
        let k = example(
            "block=32,grid=tile:16x16,against=attn-naive",
            Workload::Attention,
        );
        assert_eq!(k.against(), Some("attn-naive"));
        let l = k.lineage().expect("a lineage");
        assert_eq!((l.parent, l.bound), (Some("attn-naive"), None));
        // Its row carries the rung as its parent: the tables pair them.
        let row = crate::run::empty_row(&k, &Workload::Attention.probe_shape(), None);
        assert_eq!(row.parent.as_deref(), Some("attn-naive"));
        // The rung runs with it, named or not.
        let all = crate::registry::all();
        let lab = run::lab_kernels(&all, &[], std::slice::from_ref(&k)).unwrap();
        let ids: Vec<String> = lab.iter().map(|k| k.info().id.to_string()).collect();
        assert_eq!(ids, ["attn-naive"]);
        let named = run::lab_kernels(&all, &["attn-naive".into()], std::slice::from_ref(&k));
        assert_eq!(named.unwrap().len(), 1);
        let err = |options: &str| {
            let file = concat!(env!("CARGO_MANIFEST_DIR"), "/../examples/attention_rows.cu");
            let text = format!("{file}:attention_rows<32,64>,{options}");
            let spec = UserKernelSpec::parse(&text).unwrap();
            UserKernel::load(&spec, Some(Workload::Attention), 1, SIM_SMS)
                .unwrap_err()
                .to_string()
        };
        let other = err("against=gemm-tiled");
        assert!(
            other.contains("your kernel computes attention, and gemm-tiled is a rung of gemm")
                && other.contains("attn-naive, "),
            "{other}"
        );
        let unknown = err("against=attn-nope");
        assert!(
            unknown.contains(
                "against=attn-nope: no kernel of the lab has that id; the rungs of \
                              attention: attn-naive,"
            ),
            "{unknown}"
        );
    }

    #[test]
    fn the_tail_hint_says_whether_the_first_bad_element_is_in_the_tail() {
        let k = example("block=32,grid=tile:16x16", Workload::Gemm);
        let shape = Shape::gemm(100, 37, 8);
        let hint = k
            .tail_hint(&shape, Some(99 * 37), hint::KReads::Unseen, &[])
            .unwrap();
        assert!(hint.contains("row 99 column 0, is in that tail"), "{hint}");
        let hint = k
            .tail_hint(&shape, Some(0), hint::KReads::Unseen, &[])
            .unwrap();
        assert!(hint.contains("is not in the tail"), "{hint}");
        assert_eq!(
            k.tail_hint(&Shape::gemm(64, 32, 64), Some(0), hint::KReads::Unseen, &[]),
            None
        );
    }

    #[test]
    fn column_major_b_and_beta_change_the_inputs_and_the_expected_output() {
        let k = example(
            "signature=gemm-blas,b=col,alpha=2,beta=0.5,block=32,grid=tile:16x16",
            Workload::Gemm,
        );
        let shape = Shape::gemm(2, 3, 4);
        let a: Vec<f32> = (0..8).map(|v| v as f32).collect();
        let b: Vec<f32> = (0..12).map(|v| v as f32).collect();
        let moved = k.device_inputs(&shape, &[a.clone(), b]).unwrap();
        assert_eq!(moved[0], a);
        // B[k][n] = 3k + n; column-major: column n holds B[0..4][n].
        assert_eq!(moved[1][..4], [0.0, 3.0, 6.0, 9.0]);
        assert_eq!(moved[1][4..8], [1.0, 4.0, 7.0, 10.0]);
        let plan = k.cuda(&shape).unwrap();
        assert_eq!(plan.output_fill, Fill::Random(C_SEED));
        let c0 = plan.output_fill.values(kernel::Dtype::F32, 6);
        let want = k.expected(&shape, &[], &[1.0; 6], None).unwrap();
        assert_eq!(want[5], 2.0 + 0.5 * f64::from(c0[5]));
        let sampled = k.expected(&shape, &[], &[1.0], Some(&[4])).unwrap();
        assert_eq!(sampled, vec![2.0 + 0.5 * f64::from(c0[4])]);
        // C column-major too, as BLAS lays out every matrix: element (m, n) at n*M + m, and
        // beta's C by the kernel's positions.
        let k = example(
            "signature=gemm-blas,a=col,b=col,c=col,alpha=2,beta=0.5,block=32,grid=tile:16x16",
            Workload::Gemm,
        );
        let result: Vec<f64> = (0..6).map(f64::from).collect();
        let want = k.expected(&shape, &[], &result, None).unwrap();
        // Position 1 holds (m, n) = (1, 0), the workload's element 3.
        assert_eq!(want[1], 2.0 * 3.0 + 0.5 * f64::from(c0[1]));
        assert_eq!(
            k.output_layout(&shape).unwrap().axes,
            vec![("column", 3), ("row", 2)]
        );
        let plain = example(
            "signature=gemm-blas,block=32,grid=tile:16x16",
            Workload::Gemm,
        );
        assert_eq!(plain.expected(&shape, &[], &[1.0; 6], None), None);
        assert!(matches!(
            plain.cuda(&shape).unwrap().output_fill,
            Fill::Value(_)
        ));
    }

    #[test]
    fn a_bshd_kernel_is_given_its_layout_and_checked_at_its_positions() {
        let k = example(
            "layout=bshd,block=32,grid=(cdiv(S,32),B*H)",
            Workload::Attention,
        );
        let shape = Shape::parse(Workload::Attention, "2x3x4x2").unwrap();
        let x = crate::inputs::random_inputs(&shape, 7);
        let map = k.buffers.relayout(&shape, 0).unwrap();
        let moved = k.device_inputs(&shape, &x).unwrap();
        for (t, m) in x.iter().zip(&moved) {
            assert_eq!(*m, map.lay_out(t));
        }
        // Element (b, h, s, d) = (1, 2, 3, 1) lies at ((b*S + s)*H + h)*D + d.
        let element = ((3 + 2) * 4 + 3) * 2 + 1;
        let position = ((4 + 3) * 3 + 2) * 2 + 1;
        assert_eq!(moved[1][position], x[1][element]);
        let result = kernel::reference::reference(&shape, &x);
        let want = k.expected(&shape, &x, &result, None).unwrap();
        assert_eq!(want[position], result[element]);
        let sampled = k.expected(&shape, &x, &[0.0], Some(&[position])).unwrap();
        assert_eq!(sampled, vec![result[element]]);
        // A failure names an element by the kernel's own indices, [B][S][H][D].
        assert_eq!(
            k.output_layout(&shape).unwrap().axes,
            vec![("b", 2), ("s", 4), ("h", 3), ("d", 2)]
        );
        let plain = example("block=32,grid=(cdiv(S,32),B*H)", Workload::Attention);
        assert_eq!(plain.output_layout(&shape), None);
        assert_eq!(plain.device_inputs(&shape, &x), None);
    }

    #[test]
    fn a_half_output_keeps_a_sentinel_it_can_hold() {
        let k = example(
            "signature=gemm-blas,dtype=f16,block=32,grid=tile:16x16",
            Workload::Gemm,
        );
        let plan = k.cuda(&Shape::gemm(2, 3, 4)).unwrap();
        assert_eq!(plan.inputs, vec![kernel::Dtype::F16; 2]);
        assert_eq!(plan.output, kernel::Dtype::F16);
        let Fill::Value(v) = plan.output_fill else {
            panic!("{:?}", plan.output_fill)
        };
        assert_eq!(
            kernel::Dtype::F16.decode(&kernel::Dtype::F16.encode(&[v]))[0],
            v
        );
        assert_eq!(k.info().precision, Precision::Fp16);
    }
}
