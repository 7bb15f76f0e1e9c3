//! The declarative description of a GPU run. One description feeds every executor: the CUDA
//! device launches it, the simulator executes its source on the CPU, and `inspect` compiles it
//! to read registers, shared memory and spills.

use crate::tma::TensorMap;
use crate::workload::Shape;
use serde::Serialize;
use std::borrow::Cow;
use std::fmt;
use std::path::PathBuf;

/// Text that is usually embedded in the binary (`&'static str`) but may come from a file at
/// run time (a user's kernel).
pub type Text = Cow<'static, str>;

/// One compilation unit: a CUDA C source, the name messages show for it, and what it is
/// compiled with. Two sources that differ in any field are different programs (the compile
/// caches key on all of it).
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct CudaSource {
    /// The name compile errors and reports show (`baseline/kernels/01_naive.cu`).
    pub file: Text,
    pub code: Text,
    /// `-D NAME=VALUE` definitions: compile-time specialization of one source (a filter size,
    /// a tile shape). Each distinct set is its own compiled module.
    pub defines: Vec<(Text, String)>,
    /// Folders searched by `#include "..."` besides the lab's own headers (`lab/*.h`), such as
    /// the folder of a user's kernel file.
    pub include_dirs: Vec<PathBuf>,
    /// The architecture-specific target (`sm_90a`) the source is compiled for, alone: it uses
    /// instructions only that GPU family has (wgmma, TMA). `None`: any architecture.
    pub arch: Option<Text>,
    /// With `arch`: whether other GPU families compile the source as asked too, because its
    /// instructions of `arch`'s family alone stand behind `__CUDA_ARCH__` conditionals.
    pub other_archs: bool,
    /// Entries launched through a C++ name rather than an `extern "C"` one: the name the plan's
    /// launches use, and the C++ name expression it stands for (`sgemm<128,128,8>`,
    /// `ns::kernel`). NVRTC instantiates each expression and a launch finds its mangled symbol
    /// ([`crate::cuda::nvrtc::Compiled::symbol`]); the simulator, which has no mangled
    /// symbols, finds the name as an `extern "C"` entry the source defines for it.
    pub cxx_entries: Vec<(Text, Text)>,
    /// A user's file rather than one of the lab's: NVRTC compiles it in a child process where
    /// the program allows ([`crate::cuda::nvrtc_child`]), since unusual code can crash NVRTC
    /// itself, and such a crash must cost that file's row, not the run.
    pub from_user: bool,
}

impl CudaSource {
    /// A source embedded in the binary, with no defines and no extra include folders.
    pub const fn embedded(file: &'static str, code: &'static str) -> Self {
        Self {
            file: Cow::Borrowed(file),
            code: Cow::Borrowed(code),
            defines: Vec::new(),
            include_dirs: Vec::new(),
            arch: None,
            other_archs: false,
            cxx_entries: Vec::new(),
            from_user: false,
        }
    }

    /// The same source, compiled only for the architecture-specific target `arch` (`sm_90a`).
    pub fn for_arch(mut self, arch: &'static str) -> Self {
        self.arch = Some(Cow::Borrowed(arch));
        self
    }

    /// The same source compiled with `-D name=value` as well.
    pub fn define(mut self, name: impl Into<Text>, value: impl fmt::Display) -> Self {
        self.defines.push((name.into(), value.to_string()));
        self
    }

    /// `file` with its defines, for messages: `conv/05_restrict.cu [K=7 C=1]`.
    pub fn label(&self) -> String {
        if self.defines.is_empty() {
            return self.file.to_string();
        }
        let defs: Vec<String> = self
            .defines
            .iter()
            .map(|(k, v)| format!("{k}={v}"))
            .collect();
        format!("{} [{}]", self.file, defs.join(" "))
    }
}

/// Embeds a stage crate's kernel file and remembers its path for messages.
#[macro_export]
macro_rules! cuda_source {
    ($crate_dir:literal, $file:literal) => {
        $crate::plan::CudaSource::embedded(
            concat!($crate_dir, "/kernels/", $file),
            include_str!(concat!(env!("CARGO_MANIFEST_DIR"), "/kernels/", $file)),
        )
    };
}

/// A rung's kernel file compiled after its parent's, whose functions it calls: both embedded,
/// each behind a `#line` that keeps compile errors and the simulator's source lines on the
/// right file and line.
#[macro_export]
macro_rules! cuda_source_after {
    ($crate_dir:literal, $parent:literal, $file:literal) => {
        $crate::plan::CudaSource::embedded(
            concat!($crate_dir, "/kernels/", $file),
            concat!(
                "#line 1 \"",
                $crate_dir,
                "/kernels/",
                $parent,
                "\"\n",
                include_str!(concat!(env!("CARGO_MANIFEST_DIR"), "/kernels/", $parent)),
                "\n#line 1 \"",
                $crate_dir,
                "/kernels/",
                $file,
                "\"\n",
                include_str!(concat!(env!("CARGO_MANIFEST_DIR"), "/kernels/", $file)),
            ),
        )
    };
}

/// Element type of a device buffer. Host data is always f32; the executor converts.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Dtype {
    #[default]
    F32,
    F16,
    Bf16,
    /// FP8 E4M3 (`__nv_fp8_e4m3`): inputs of FP8 kernels ([`crate::fp8`]).
    E4m3,
    /// FP8 E5M2 (`__nv_fp8_e5m2`).
    E5m2,
    /// 32-bit integers (`int`): kernels of integer data, a transpose of `int` elements. Inputs
    /// hold even integers ([`Dtype::input_value`]), so that no right answer of a sum or a copy
    /// of them is -1, the all-ones poison.
    I32,
    /// 8-bit integers (`int8_t`): inputs of int8 kernels (`mma` on `.s8`, `__dp4a`), which
    /// write 32-bit sums. Inputs hold even integers in [-126, 126] ([`Dtype::input_value`]).
    S8,
}

impl Dtype {
    pub fn bytes(self) -> usize {
        match self {
            Self::F32 | Self::I32 => 4,
            Self::F16 | Self::Bf16 => 2,
            Self::E4m3 | Self::E5m2 | Self::S8 => 1,
        }
    }

    /// `f32`, `f16`, `bf16`, `e4m3`, `e5m2`: as messages and `dtype=` spell it.
    pub fn name(self) -> &'static str {
        match self {
            Self::F32 => "f32",
            Self::F16 => "f16",
            Self::Bf16 => "bf16",
            Self::E4m3 => "e4m3",
            Self::E5m2 => "e5m2",
            Self::I32 => "i32",
            Self::S8 => "s8",
        }
    }

    /// The FP8 format of an 8-bit type.
    pub fn fp8(self) -> Option<crate::fp8::Fp8> {
        match self {
            Self::E4m3 => Some(crate::fp8::Fp8::E4m3),
            Self::E5m2 => Some(crate::fp8::Fp8::E5m2),
            Self::F32 | Self::F16 | Self::Bf16 | Self::I32 | Self::S8 => None,
        }
    }

    /// Whether an input of this type cannot hold the lab's random draws closely enough to be
    /// checked against a reference of them: FP8 (a rounding of up to 12%) and integers.
    pub fn holds_inputs_of_its_own(self) -> bool {
        self.fp8().is_some() || matches!(self, Self::I32 | Self::S8)
    }

    /// Whether this type is for inputs alone: FP8 and 8-bit integers, whose kernels write a
    /// wider type (a sum rounded to 8 bits could not be told from a wrong one).
    pub fn inputs_only(self) -> bool {
        self.fp8().is_some() || self == Self::S8
    }

    /// The value an input of this type holds for the random draw `v` in [-1, 1]: `v` rounded
    /// to the type, or for integers an even one, never 0: in [-1000, 1000] for `i32`, in
    /// [-126, 126] for `s8`.
    pub fn input_value(self, v: f32) -> f32 {
        let even = |half_range: f32| {
            let k = (v * half_range).round();
            2.0 * if k == 0.0 { v.signum() } else { k }
        };
        match self {
            Self::I32 => even(500.0),
            Self::S8 => even(63.0),
            _ => self.round(v),
        }
    }

    /// The value a buffer of this type holds for `v`: `v` rounded to it.
    pub fn round(self, v: f32) -> f32 {
        self.decode(&self.encode(&[v]))[0]
    }

    /// The little-endian device bytes of `data` in this type (round to nearest even).
    pub fn encode(self, data: &[f32]) -> Vec<u8> {
        match self {
            Self::F32 => data.iter().flat_map(|v| v.to_le_bytes()).collect(),
            Self::F16 => data
                .iter()
                .flat_map(|&v| half::f16::from_f32(v).to_le_bytes())
                .collect(),
            Self::Bf16 => data
                .iter()
                .flat_map(|&v| half::bf16::from_f32(v).to_le_bytes())
                .collect(),
            Self::E4m3 | Self::E5m2 => {
                let f = self.fp8().expect("an 8-bit type");
                data.iter().map(|&v| f.encode(v)).collect()
            }
            // Rounded and saturated (`as`); NaN to the all-ones poison.
            Self::S8 => data
                .iter()
                .map(|&v| match v.is_nan() {
                    true => 0xFF,
                    false => v.round() as i8 as u8,
                })
                .collect(),
            Self::I32 => data
                .iter()
                .flat_map(|&v| match v.is_nan() {
                    true => [0xFF; 4],
                    false => (v.round() as i32).to_le_bytes(),
                })
                .collect(),
        }
    }

    /// The f32 values of device bytes in this type.
    pub fn decode(self, bytes: &[u8]) -> Vec<f32> {
        match self {
            Self::F32 => bytes
                .chunks_exact(4)
                .map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]]))
                .collect(),
            Self::F16 => bytes
                .chunks_exact(2)
                .map(|c| half::f16::from_le_bytes([c[0], c[1]]).to_f32())
                .collect(),
            Self::Bf16 => bytes
                .chunks_exact(2)
                .map(|c| half::bf16::from_le_bytes([c[0], c[1]]).to_f32())
                .collect(),
            Self::E4m3 | Self::E5m2 => {
                let f = self.fp8().expect("an 8-bit type");
                bytes.iter().map(|&b| f.decode(b)).collect()
            }
            Self::S8 => bytes.iter().map(|&b| f32::from(b as i8)).collect(),
            // All ones is the poison, as in the float types; no input makes -1 a right answer.
            Self::I32 => bytes
                .chunks_exact(4)
                .map(|c| match i32::from_le_bytes([c[0], c[1], c[2], c[3]]) {
                    -1 => POISON_F32,
                    i => i as f32,
                })
                .collect(),
        }
    }
}

/// What a device buffer holds when each run starts (set outside the timed span).
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Fill {
    /// NaN (all bits set, NaN in every float type): an element the kernel forgets to write
    /// shows in the check. The default for outputs.
    #[default]
    Nan,
    /// Zeros: for buffers a kernel accumulates into (atomics, split-K). Unwritten elements of
    /// an output filled this way cannot be detected.
    Zero,
    /// This value, for kernels that read the buffer first (a running maximum starting at
    /// minus infinity, `beta * C` with a finite sentinel). An output element still equal to a
    /// finite non-zero fill after the run counts as unwritten.
    Value(f32),
    /// Seeded values in [-1, 1], one per element ([`Fill::random_value`]): for an output a
    /// kernel reads before writing (`C = alpha A B + beta C` with beta not 0), so that reading
    /// the wrong element of it shows in the check.
    Random(u64),
    /// A copy of the workload's input `i` as uploaded, in the buffer's type: for a kernel that
    /// works in place, whose output starts as its input. Unwritten elements cannot be
    /// detected. Its bytes need the inputs: [`CudaPlan::start_bytes`].
    Input(usize),
}

/// [`Fill::Nan`]'s value as an `f32`: all bits set.
pub const POISON_F32: f32 = f32::from_bits(u32::MAX);

/// Whether an output element, decoded to `f32`, still holds [`Fill::Nan`]'s bits, in any of
/// the element types (all ones decode to a NaN whose top 16 bits are all set): an element
/// never written, or computed from one that was (a NaN operand passes its bits on). A NaN an
/// operation makes has other bits: a GPU's canonical 0x7FFFFFFF, x86's 0xFFC00000.
pub fn is_poison(v: f32) -> bool {
    v.is_nan() && v.to_bits() >> 16 == 0xFFFF
}

impl Fill {
    /// The buffer's bytes after the fill, `len` elements of `dtype`; for [`Fill::Input`],
    /// which only the executor can copy ([`CudaPlan::start_bytes`]), the poison's.
    pub fn bytes(self, dtype: Dtype, len: usize) -> Vec<u8> {
        match self {
            Self::Nan | Self::Input(_) => vec![0xFF; len * dtype.bytes()],
            Self::Zero => vec![0; len * dtype.bytes()],
            Self::Value(v) => dtype.encode(&[v]).repeat(len),
            Self::Random(seed) => {
                let values: Vec<f32> = (0..len).map(|i| Self::random_value(seed, i)).collect();
                dtype.encode(&values)
            }
        }
    }

    /// The values `len` elements of `dtype` hold after the fill, as a kernel reads them.
    pub fn values(self, dtype: Dtype, len: usize) -> Vec<f32> {
        dtype.decode(&self.bytes(dtype, len))
    }

    /// Element `i` of a [`Fill::Random`] with `seed`: a hash of both (splitmix64), so any
    /// element can be computed alone, mapped to [-1, 1].
    pub fn random_value(seed: u64, i: usize) -> f32 {
        let mut z = seed ^ (i as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15);
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^= z >> 31;
        // 24 random bits: every value is exactly representable in f32.
        ((z >> 40) as f32 / (1u64 << 23) as f32) - 1.0
    }

    /// The single byte every byte of the buffer holds after the fill, when there is one (so a
    /// device can use a byte memset).
    pub fn byte(self, dtype: Dtype) -> Option<u8> {
        match self {
            Self::Nan => Some(0xFF),
            Self::Zero => Some(0),
            Self::Value(v) => {
                let b = dtype.encode(&[v]);
                b.iter().all(|&x| x == b[0]).then_some(b[0])
            }
            Self::Random(_) | Self::Input(_) => None,
        }
    }
}

/// A device buffer a step reads or writes.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Buf {
    /// The workload's input `i`, in [`crate::Shape::inputs`] order.
    Input(usize),
    /// The workload's output.
    Output,
    /// The plan's scratch buffer `i` (intermediates of a multi-kernel pipeline).
    Scratch(usize),
}

impl Buf {
    /// This buffer from element `offset` on (for a pipeline that works through a batch in
    /// chunks).
    pub fn at(self, offset: usize) -> At {
        At { buf: self, offset }
    }
}

/// A position inside a buffer: `offset` elements (of the buffer's type) from its start.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct At {
    pub buf: Buf,
    pub offset: usize,
}

impl From<Buf> for At {
    fn from(buf: Buf) -> Self {
        buf.at(0)
    }
}

/// One kernel parameter, in the order of the `__global__` function's parameter list.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Arg {
    /// A device pointer to a buffer.
    Ptr(Buf),
    /// A device pointer into a buffer, `offset` elements from its start.
    PtrAt(At),
    /// A null pointer: an optional buffer a kernel takes and skips when given none.
    Null,
    I32(i32),
    /// A 64-bit integer, for a parameter that wide (a user's kernel taking `size_t` sizes).
    I64(i64),
    F32(f32),
    /// A TMA tensor map over a buffer, passed by value (`const __grid_constant__ CUtensorMap`),
    /// encoded by the device that runs the plan.
    TensorMap(TensorMap),
    /// The same map in global memory, passed by its address (`const CUtensorMap *`), as host
    /// code that copies the encoded map to the device passes it.
    TensorMapAt(TensorMap),
}

/// One launch of an `extern "C" __global__` function.
#[derive(Clone, Debug, PartialEq)]
pub struct Launch {
    pub source: CudaSource,
    pub entry: Text,
    pub grid: [u32; 3],
    pub block: [u32; 3],
    /// Dynamic (`extern __shared__`) shared memory in bytes.
    pub dynamic_smem: u32,
    pub args: Vec<Arg>,
}

impl Launch {
    pub fn threads_per_block(&self) -> u32 {
        self.block.iter().product()
    }

    pub fn blocks(&self) -> u64 {
        self.grid.iter().map(|&g| u64::from(g)).product()
    }

    /// Warps launched: every block's threads in warps of 32, the last one part-filled.
    pub fn warps(&self) -> u64 {
        self.blocks() * u64::from(self.threads_per_block().div_ceil(32))
    }
}

/// Compute mode of a library GEMM.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum GemmCompute {
    /// FP32 in, FP32 compute (cublasSgemm).
    Fp32,
    /// FP32 in, TF32 tensor cores (CUBLAS_COMPUTE_32F_FAST_TF32).
    Tf32,
    /// FP16 in, FP32 compute and out (cublasGemmEx).
    Fp16,
    /// BF16 in, FP32 compute and out (cublasGemmEx).
    Bf16,
}

impl GemmCompute {
    /// The element type of A and B.
    pub fn input(self) -> Dtype {
        match self {
            Self::Fp32 | Self::Tf32 => Dtype::F32,
            Self::Fp16 => Dtype::F16,
            Self::Bf16 => Dtype::Bf16,
        }
    }
}

/// A library GEMM: row-major `C[M,N] = alpha * A[M,K] * B[K,N]` (or `B[N,K]^T` when
/// `b_transposed`), `batch` times with operands `stride_*` elements apart (a stride of 0
/// shares that operand across the batch). C is FP32.
#[derive(Clone, Debug, PartialEq)]
pub struct GemmCall {
    pub m: usize,
    pub n: usize,
    pub k: usize,
    pub a: At,
    pub b: At,
    pub c: At,
    pub b_transposed: bool,
    pub compute: GemmCompute,
    pub alpha: f32,
    pub batch: usize,
    pub stride_a: usize,
    pub stride_b: usize,
    pub stride_c: usize,
}

impl GemmCall {
    /// One product, `alpha` = 1, B not transposed.
    pub fn new(
        (m, n, k): (usize, usize, usize),
        a: impl Into<At>,
        b: impl Into<At>,
        c: impl Into<At>,
        compute: GemmCompute,
    ) -> Self {
        Self {
            m,
            n,
            k,
            a: a.into(),
            b: b.into(),
            c: c.into(),
            b_transposed: false,
            compute,
            alpha: 1.0,
            batch: 1,
            stride_a: 0,
            stride_b: 0,
            stride_c: 0,
        }
    }
}

/// A library call (cuBLAS) as a step, so reference rows run through the same executor.
#[derive(Clone, Debug, PartialEq)]
pub enum LibraryCall {
    Gemm(GemmCall),
}

/// Constant memory a module may use: 64 KiB on every architecture since sm_20.
pub const CONSTANT_BYTES: usize = 64 * 1024;

/// A copy of `len` elements of a buffer into the `__constant__` array `symbol` of `source`'s
/// module, ordered before the launches that follow it (weights in constant memory). The
/// array must hold at least `len` elements of the buffer's type.
#[derive(Clone, Debug, PartialEq)]
pub struct ConstantCopy {
    pub source: CudaSource,
    pub symbol: Text,
    pub from: At,
    pub len: usize,
}

#[derive(Clone, Debug, PartialEq)]
pub enum Step {
    Kernel(Launch),
    Library(LibraryCall),
    Constant(ConstantCopy),
}

/// A scratch buffer of a plan.
#[derive(Clone, Debug, PartialEq)]
pub struct Scratch {
    pub name: Text,
    pub dtype: Dtype,
    pub len: usize,
    /// Set before every run, outside the timed span.
    pub fill: Fill,
}

impl Scratch {
    /// A buffer of `len` elements that starts every run as zeros.
    pub fn new(name: impl Into<Text>, dtype: Dtype, len: usize) -> Self {
        Self {
            name: name.into(),
            dtype,
            len,
            fill: Fill::Zero,
        }
    }

    pub fn bytes(&self) -> usize {
        self.len * self.dtype.bytes()
    }
}

/// The bytes one launch reads and writes, as [`CudaPlan::launch_bytes`] counts them.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct LaunchBytes {
    pub read: usize,
    pub written: usize,
    /// Of what it reads, each intermediate an earlier launch wrote (a scratch buffer).
    pub intermediates: Vec<usize>,
}

/// Everything an executor needs to run a kernel on one shape. Build it with
/// `CudaPlan { .., ..Default::default() }` so that later fields keep their defaults.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct CudaPlan {
    /// Device element type of each input (converted from the host's f32 before timing starts).
    pub inputs: Vec<Dtype>,
    pub output: Dtype,
    /// What the output holds when each run starts.
    pub output_fill: Fill,
    pub scratch: Vec<Scratch>,
    /// Launched in order on one stream; the whole sequence is what gets timed.
    pub steps: Vec<Step>,
    /// A batch pipeline over the steps: inputs copied in and the output copied out chunk by
    /// chunk on several streams, inside the timed span. `None`: inputs are on the device
    /// before timing starts and the steps run on one stream.
    pub pipeline: Option<crate::pipeline::Pipeline>,
    /// Launches whose blocks each walk several tiles (a persistent schedule): the entry and
    /// its tiles. Their waves count tiles, not blocks: 512 tiles over 132 blocks leave the
    /// same part-empty last round as 512 blocks.
    pub persistent: Vec<(Text, u64)>,
    /// Entries launched cooperatively (`cudaLaunchCooperativeKernel`): all their blocks
    /// resident at once, as `cooperative_groups::this_grid().sync()` needs; a grid larger
    /// than the device can hold is refused, not run.
    pub cooperative: Vec<Text>,
    /// Entries launched under another name than their author wrote (a user's kernel through
    /// the lab's wrapper), with the name as written: what tables and messages show.
    pub written: Vec<(Text, Text)>,
}

impl CudaPlan {
    /// `entry`, a launch's entry, as its author wrote it ([`CudaPlan::written`]).
    pub fn written_entry<'a>(&'a self, entry: &'a str) -> &'a str {
        self.written
            .iter()
            .find(|(launched, _)| launched == entry)
            .map_or(entry, |(_, written)| written)
    }

    /// The common case: FP32 inputs and output, one launch.
    pub fn single(n_inputs: usize, launch: Launch) -> Self {
        Self {
            inputs: vec![Dtype::F32; n_inputs],
            steps: vec![Step::Kernel(launch)],
            ..Self::default()
        }
    }

    /// The bytes a buffer of `len` elements of `dtype` filled with `fill` starts each run
    /// with; [`Fill::Input`] copies `inputs[i]` (the host's values) as the input's own type
    /// holds them, converted to `dtype`. An error names an input the plan lacks or one of
    /// another length.
    pub fn start_bytes(
        &self,
        fill: Fill,
        dtype: Dtype,
        len: usize,
        inputs: &[Vec<f32>],
    ) -> Result<Vec<u8>, String> {
        let Fill::Input(i) = fill else {
            return Ok(fill.bytes(dtype, len));
        };
        let (Some(data), Some(&from)) = (inputs.get(i), self.inputs.get(i)) else {
            return Err(format!(
                "a buffer starts as a copy of input {i}, and the plan has {}",
                self.inputs.len()
            ));
        };
        if data.len() != len {
            return Err(format!(
                "a buffer of {len} elements cannot start as a copy of input {i}, which has {}",
                data.len()
            ));
        }
        Ok(match from == dtype {
            true => dtype.encode(data),
            false => dtype.encode(&from.decode(&from.encode(data))),
        })
    }

    /// The inputs a batch pipeline uploads in chunks ([`crate::pipeline::Pipeline::uploaded`]);
    /// none without a pipeline.
    pub fn uploaded_inputs(&self) -> Vec<usize> {
        self.pipeline
            .as_ref()
            .map(|p| p.uploaded())
            .unwrap_or_default()
    }

    /// The device element type of buffer `b`.
    pub fn dtype(&self, b: Buf) -> Dtype {
        match b {
            Buf::Input(i) => self.inputs[i],
            Buf::Output => self.output,
            Buf::Scratch(i) => self.scratch[i].dtype,
        }
    }

    /// Bytes a [`Self::pipeline`] copies host-to-device and device-to-host in one run, inside
    /// the timed span; `None` for a plan whose data stays on the device.
    pub fn host_copies(&self) -> Option<(usize, usize)> {
        let p = self.pipeline.as_ref()?;
        let bytes = |spans: &[crate::pipeline::Span]| -> usize {
            spans
                .iter()
                .map(|s| s.len * self.dtype(s.at.buf).bytes())
                .sum()
        };
        Some(p.chunks.iter().fold((0, 0), |(up, down), c| {
            (up + bytes(&c.upload), down + bytes(&c.download))
        }))
    }

    pub fn launches(&self) -> impl Iterator<Item = &Launch> {
        self.steps.iter().filter_map(|s| match s {
            Step::Kernel(l) => Some(l),
            Step::Library(_) | Step::Constant(_) => None,
        })
    }

    /// Distinct sources the plan needs compiled.
    pub fn sources(&self) -> Vec<&CudaSource> {
        let mut out: Vec<&CudaSource> = Vec::new();
        for l in self.launches() {
            if !out.contains(&&l.source) {
                out.push(&l.source);
            }
        }
        out
    }

    /// The architecture-specific target one of the plan's sources is compiled for alone
    /// ([`CudaSource::arch`], not for other GPUs too), if any.
    pub fn required_arch(&self) -> Option<&str> {
        self.launches()
            .find_map(|l| l.source.arch.as_deref().filter(|_| !l.source.other_archs))
    }

    /// Whether any step calls a library (cuBLAS).
    pub fn uses_library(&self) -> bool {
        self.steps.iter().any(|s| matches!(s, Step::Library(_)))
    }

    /// Whether the launches work through the buffers in chunks: a batch pipeline, or pointers
    /// into a buffer past its start. How far each launch reads is then not in the plan.
    pub fn chunked(&self) -> bool {
        self.pipeline.is_some()
            || self
                .launches()
                .flat_map(|l| &l.args)
                .any(|a| matches!(a, Arg::PtrAt(at) if at.offset > 0))
    }

    /// For each launch, the bytes of the buffers it reads and writes as far as the plan says,
    /// each buffer from the element the pointer starts at to its end (for a [`chunked`]
    /// plan, more than the launch's chunk): it reads the workload's inputs it is passed and
    /// the scratch buffers an earlier launch was passed (an intermediate that launch wrote);
    /// it writes the output and the scratch buffers no earlier launch was passed.
    ///
    /// [`chunked`]: Self::chunked
    pub fn launch_bytes(&self, shape: &crate::Shape) -> Vec<LaunchBytes> {
        let inputs = shape.inputs();
        let output = shape.output().len();
        let mut seen: Vec<usize> = Vec::new();
        let mut out = Vec::new();
        for l in self.launches() {
            let mut bytes = LaunchBytes::default();
            let mut passed = Vec::new();
            for a in &l.args {
                let at = match *a {
                    Arg::Ptr(b) => b.at(0),
                    Arg::PtrAt(at) => at,
                    _ => continue,
                };
                let from = |len: usize, elem: usize| len.saturating_sub(at.offset) * elem;
                match at.buf {
                    Buf::Input(i) => {
                        let len = inputs.get(i).map_or(0, |t| t.len());
                        bytes.read += from(len, self.inputs.get(i).map_or(0, |d| d.bytes()));
                    }
                    Buf::Scratch(j) => {
                        let b = self
                            .scratch
                            .get(j)
                            .map_or(0, |s| from(s.len, s.dtype.bytes()));
                        if seen.contains(&j) {
                            bytes.read += b;
                            bytes.intermediates.push(b);
                        } else {
                            passed.push(j);
                            bytes.written += b;
                        }
                    }
                    Buf::Output => bytes.written += from(output, self.output.bytes()),
                }
            }
            seen.extend(passed);
            out.push(bytes);
        }
        out
    }

    /// Bytes of scratch memory the plan allocates besides its inputs and output.
    pub fn scratch_bytes(&self) -> usize {
        self.scratch.iter().map(Scratch::bytes).sum()
    }

    /// Bytes the plan allocates on the device for `shape`: inputs, output and scratch.
    /// Pinned host memory is not counted here: see [`pinned_host_bytes`](Self::pinned_host_bytes).
    pub fn device_bytes(&self, shape: &Shape) -> usize {
        let inputs: usize = shape
            .inputs()
            .iter()
            .zip(&self.inputs)
            .map(|(t, d)| t.len() * d.bytes())
            .sum();
        inputs + shape.output().len() * self.output.bytes() + self.scratch_bytes()
    }

    /// Bytes the plan keeps in pinned (page-locked) host memory for `shape`: a batch
    /// pipeline's uploaded inputs and its output; 0 without a pipeline. Page-locked memory
    /// cannot be swapped out, so it is limited apart from device memory.
    pub fn pinned_host_bytes(&self, shape: &Shape) -> usize {
        let Some(p) = &self.pipeline else { return 0 };
        let specs = shape.inputs();
        let inputs: usize = p
            .uploaded()
            .iter()
            .map(|&i| {
                let len = specs.get(i).map_or(0, |s| s.len());
                len * self.inputs.get(i).map_or(0, |d| d.bytes())
            })
            .sum();
        inputs + shape.output().len() * self.output.bytes()
    }
}

/// `(m, n, k)` of a GEMM shape. The harness only hands a kernel shapes of its own workload.
pub fn gemm_dims(shape: &Shape) -> (usize, usize, usize) {
    match *shape {
        Shape::Gemm { m, n, k } => (m, n, k),
        other => panic!("a GEMM kernel was given {other}"),
    }
}

/// The parameter list `(A, B, C, M, N, K)` every GEMM kernel of the ladder takes.
pub fn gemm_args(m: usize, n: usize, k: usize) -> Vec<Arg> {
    vec![
        Arg::Ptr(Buf::Input(0)),
        Arg::Ptr(Buf::Input(1)),
        Arg::Ptr(Buf::Output),
        Arg::I32(m as i32),
        Arg::I32(n as i32),
        Arg::I32(k as i32),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_pipelines_pinned_host_bytes_are_its_uploaded_inputs_and_output() {
        let shape = Shape::Conv {
            b: 10,
            c: 2,
            m: 3,
            h: 5,
            w: 5,
            k: 3,
        };
        let specs = shape.inputs();
        let mut plan = CudaPlan {
            inputs: vec![Dtype::F16, Dtype::F32],
            output: Dtype::F32,
            ..CudaPlan::default()
        };
        assert_eq!(plan.pinned_host_bytes(&shape), 0);
        plan.pipeline = Some(crate::pipeline::Pipeline::chunked(
            2,
            10,
            4,
            &[(0, specs[0].len() / 10)],
            shape.output().len() / 10,
            0,
            1,
        ));
        // Input 0 (F16) and the output are pinned; input 1 (the weights) goes to the device
        // directly.
        let out = shape.output().len() * 4;
        assert_eq!(plan.pinned_host_bytes(&shape), 500 * 2 + out);
        assert_eq!(
            plan.device_bytes(&shape),
            500 * 2 + specs[1].len() * 4 + out
        );
    }

    #[test]
    fn a_launch_reads_its_inputs_and_what_earlier_launches_wrote_and_writes_the_rest() {
        let shape = Shape::Reduce { n: 1000 };
        let launch = |args: Vec<Arg>| {
            Step::Kernel(Launch {
                source: CudaSource::embedded("r.cu", ""),
                entry: "r".into(),
                grid: [1; 3],
                block: [32, 1, 1],
                dynamic_smem: 0,
                args,
            })
        };
        let plan = CudaPlan {
            inputs: vec![Dtype::F32],
            scratch: vec![
                Scratch::new("partials", Dtype::F32, 8),
                Scratch::new("count", Dtype::F32, 1),
            ],
            steps: vec![
                // Writes the partial sums, counts in `count`.
                launch(vec![
                    Arg::Ptr(Buf::Input(0)),
                    Arg::Ptr(Buf::Scratch(0)),
                    Arg::Ptr(Buf::Scratch(1)),
                    Arg::I32(1000),
                ]),
                // Reads the partial sums from the third on, writes the output.
                launch(vec![
                    Arg::PtrAt(Buf::Scratch(0).at(2)),
                    Arg::Ptr(Buf::Output),
                    Arg::I32(6),
                ]),
            ],
            ..CudaPlan::default()
        };
        assert!(
            plan.chunked(),
            "a pointer past the start of the partial sums"
        );
        let bytes = |read, written, intermediates: &[usize]| LaunchBytes {
            read,
            written,
            intermediates: intermediates.to_vec(),
        };
        assert_eq!(
            plan.launch_bytes(&shape),
            [bytes(4000, 8 * 4 + 4, &[]), bytes(6 * 4, 4, &[6 * 4])]
        );
    }

    #[test]
    fn dtypes_round_trip_and_round_to_nearest_even() {
        let x = [1.0f32, -2.5, 1.0 + 2f32.powi(-12), 3.0e38];
        for d in [Dtype::F32, Dtype::F16, Dtype::Bf16] {
            let back = d.decode(&d.encode(&x));
            assert_eq!(back.len(), x.len());
            assert_eq!(back[0], 1.0);
            assert_eq!(back[1], -2.5);
        }
        assert_eq!(Dtype::F16.decode(&Dtype::F16.encode(&x))[2], 1.0);
        assert!(Dtype::F16.decode(&Dtype::F16.encode(&x))[3].is_infinite());
        assert!(Dtype::Bf16.decode(&Dtype::Bf16.encode(&x))[3].is_finite());
        // FP8: a byte each, 1.0625 to the even 1.0 (E4M3), 3e38 saturated to the largest.
        for (d, largest) in [(Dtype::E4m3, 448.0), (Dtype::E5m2, 57344.0)] {
            let bytes = d.encode(&[1.0, -2.5, 1.0625, 3.0e38]);
            assert_eq!(bytes.len(), 4);
            assert_eq!(d.decode(&bytes), vec![1.0, -2.5, 1.0, largest]);
            assert!(is_poison(d.decode(&Fill::Nan.bytes(d, 1))[0]));
        }
        assert_eq!(Dtype::E4m3.round(0.3), 0.3125);
        // Integers: rounded, saturated, the all-ones poison read back as such; inputs even.
        let i = Dtype::I32;
        assert_eq!(
            i.decode(&i.encode(&[2.4, -7.0, 3.0e10])),
            vec![2.0, -7.0, i32::MAX as f32]
        );
        assert!(is_poison(i.decode(&Fill::Nan.bytes(i, 1))[0]));
        assert_eq!(
            [0.3, -0.0001, 0.0009, -1.0].map(|v| i.input_value(v)),
            [300.0, -2.0, 2.0, -1000.0]
        );
        let s = Dtype::S8;
        assert_eq!(
            s.decode(&s.encode(&[-7.4, 200.0, -300.0])),
            vec![-7.0, 127.0, -128.0]
        );
        assert_eq!(
            [0.5, -0.001, 1.0].map(|v| s.input_value(v)),
            [64.0, -2.0, 126.0]
        );
        assert!(s.inputs_only() && !i.inputs_only());
    }

    #[test]
    fn fills_give_nan_zero_or_the_value_in_every_type() {
        for d in [Dtype::F32, Dtype::F16, Dtype::Bf16] {
            assert!(
                d.decode(&Fill::Nan.bytes(d, 3))
                    .iter()
                    .all(|v| is_poison(*v))
            );
            assert_eq!(d.decode(&Fill::Zero.bytes(d, 2)), vec![0.0, 0.0]);
            assert_eq!(
                d.decode(&Fill::Value(f32::NEG_INFINITY).bytes(d, 2)),
                vec![f32::NEG_INFINITY; 2]
            );
            assert_eq!(Fill::Nan.byte(d), Some(0xFF));
        }
        assert_eq!(Fill::Value(-2.0).byte(Dtype::F32), None);
    }

    #[test]
    fn random_fills_are_seeded_per_element_and_read_back_in_their_type() {
        let a = Fill::Random(7).values(Dtype::F32, 1000);
        assert_eq!(a, Fill::Random(7).values(Dtype::F32, 1000));
        assert_ne!(a, Fill::Random(8).values(Dtype::F32, 1000));
        assert!(a.iter().all(|v| (-1.0..1.0).contains(v)));
        let distinct: std::collections::HashSet<u32> = a.iter().map(|v| v.to_bits()).collect();
        assert!(distinct.len() > 990, "{}", distinct.len());
        assert!(a.iter().any(|&v| v < -0.5) && a.iter().any(|&v| v > 0.5));
        // In FP16 the values are those of the FP32 fill, rounded.
        let h = Fill::Random(7).values(Dtype::F16, 1000);
        assert!(
            h.iter()
                .zip(&a)
                .all(|(h, a)| (h - a).abs() <= 2f32.powi(-11))
        );
        assert_eq!(Fill::Random(7).byte(Dtype::F32), None);
    }

    #[test]
    fn a_copy_of_an_input_holds_it_as_its_type_does_in_the_buffers_type() {
        let plan = CudaPlan {
            inputs: vec![Dtype::F32, Dtype::F16],
            ..CudaPlan::default()
        };
        let x = vec![0.1f32, -3.0, 1e-3];
        let inputs = [x.clone(), x.clone()];
        let f32_copy = plan.start_bytes(Fill::Input(0), Dtype::F32, 3, &inputs);
        assert_eq!(f32_copy, Ok(Dtype::F32.encode(&x)));
        // Input 1 is FP16 on the device: an FP32 copy holds its rounded values.
        let from_half = plan
            .start_bytes(Fill::Input(1), Dtype::F32, 3, &inputs)
            .unwrap();
        assert_eq!(
            Dtype::F32.decode(&from_half),
            Dtype::F16.decode(&Dtype::F16.encode(&x))
        );
        assert_ne!(Dtype::F32.decode(&from_half), x);
        let short = plan.start_bytes(Fill::Input(0), Dtype::F32, 4, &inputs);
        assert!(short.unwrap_err().contains("4 elements"));
        assert!(
            plan.start_bytes(Fill::Input(2), Dtype::F32, 3, &inputs)
                .is_err()
        );
        // The other fills need no inputs.
        assert_eq!(
            plan.start_bytes(Fill::Zero, Dtype::F16, 2, &[]),
            Ok(vec![0; 4])
        );
        assert_eq!(Fill::Input(0).byte(Dtype::F32), None);
    }

    #[test]
    fn defines_make_a_different_source_with_a_label() {
        let a = CudaSource::embedded("x.cu", "int x;");
        let b = a.clone().define("K", 7).define("C", 1);
        assert_ne!(a, b);
        assert_eq!(b.label(), "x.cu [K=7 C=1]");
        assert_eq!(a.label(), "x.cu");
    }
}
