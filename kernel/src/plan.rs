//! The declarative description of a GPU run. One description feeds every executor: the CUDA
//! device launches it, the simulator executes its source on the CPU, and `inspect` compiles it
//! to read registers, shared memory and spills.

use crate::workload::Shape;
use serde::Serialize;

/// A CUDA C source file of a stage crate, embedded with `include_str!`. `file` is the name
/// compile errors and reports show (`baseline/kernels/01_naive.cu`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct CudaSource {
    pub file: &'static str,
    pub code: &'static str,
}

/// Embeds a stage crate's kernel file and remembers its path for messages.
#[macro_export]
macro_rules! cuda_source {
    ($crate_dir:literal, $file:literal) => {
        $crate::plan::CudaSource {
            file: concat!($crate_dir, "/kernels/", $file),
            code: include_str!(concat!(env!("CARGO_MANIFEST_DIR"), "/kernels/", $file)),
        }
    };
}

/// Element type of a device buffer. Host data is always f32; the executor converts.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Dtype {
    F32,
    F16,
}

impl Dtype {
    pub fn bytes(self) -> usize {
        match self {
            Self::F32 => 4,
            Self::F16 => 2,
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

/// One kernel parameter, in the order of the `__global__` function's parameter list.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Arg {
    /// A device pointer to a buffer.
    Ptr(Buf),
    I32(i32),
    F32(f32),
}

/// One launch of an `extern "C" __global__` function.
#[derive(Clone, Debug, PartialEq)]
pub struct Launch {
    pub source: CudaSource,
    pub entry: &'static str,
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
}

/// A library call (cuBLAS) as a step, so reference rows run through the same executor.
#[derive(Clone, Debug, PartialEq)]
pub enum LibraryCall {
    /// Row-major C[M,N] = A[M,K] * B[K,N] (or B[N,K]^T when `b_transposed`).
    Gemm {
        m: usize,
        n: usize,
        k: usize,
        a: Buf,
        b: Buf,
        c: Buf,
        b_transposed: bool,
        compute: GemmCompute,
    },
}

#[derive(Clone, Debug, PartialEq)]
pub enum Step {
    Kernel(Launch),
    Library(LibraryCall),
}

/// A scratch buffer of a plan.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Scratch {
    pub name: &'static str,
    pub dtype: Dtype,
    pub len: usize,
}

/// Everything an executor needs to run a kernel on one shape.
#[derive(Clone, Debug, PartialEq)]
pub struct CudaPlan {
    /// Device element type of each input (converted from the host's f32 before timing starts).
    pub inputs: Vec<Dtype>,
    pub output: Dtype,
    pub scratch: Vec<Scratch>,
    /// Launched in order on one stream; the whole sequence is what gets timed.
    pub steps: Vec<Step>,
}

impl CudaPlan {
    /// The common case: FP32 inputs and output, one launch.
    pub fn single(n_inputs: usize, launch: Launch) -> Self {
        Self {
            inputs: vec![Dtype::F32; n_inputs],
            output: Dtype::F32,
            scratch: Vec::new(),
            steps: vec![Step::Kernel(launch)],
        }
    }

    pub fn launches(&self) -> impl Iterator<Item = &Launch> {
        self.steps.iter().filter_map(|s| match s {
            Step::Kernel(l) => Some(l),
            Step::Library(_) => None,
        })
    }

    /// Distinct sources the plan needs compiled.
    pub fn sources(&self) -> Vec<CudaSource> {
        let mut out: Vec<CudaSource> = Vec::new();
        for l in self.launches() {
            if !out.contains(&l.source) {
                out.push(l.source);
            }
        }
        out
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
