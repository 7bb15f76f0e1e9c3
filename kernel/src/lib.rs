//! The contract every stage crate implements, and the devices that run it.
//!
//! A stage crate describes each kernel once ([`Kernel`]): what it computes ([`Shape`]), which
//! shapes it takes, its CUDA source with launch geometry ([`plan::CudaPlan`]) and a CPU port.
//! Everything else (compiling, launching, timing, validating, reporting) lives here and in
//! the `harness` crate.

pub mod attention;
pub mod child_process;
pub mod contract;
pub mod conv;
pub mod cuda;
pub mod device;
pub mod disk_cache;
pub mod fp8;
pub mod network;
pub mod pipeline;
pub mod plan;
pub mod reference;
pub mod sim;
pub mod testing;
pub mod tma;
pub mod workload;

pub use attention::{AttentionDims, attention_args, attention_dims};
pub use contract::{
    AcceptedSpill, Bound, CpuPort, Kernel, KernelInfo, Lineage, Precision, Role, Stage,
    Unsupported, div_ceil,
};
pub use conv::{ConvDims, conv_args, conv_chunk, conv_dims};
pub use device::{
    BlockSample, Coalescing, DeviceError, DeviceInfo, DeviceKind, Executor, GlobalRequests,
    KernelAccesses, MemoryTraffic, Prepared, SharedBanks, Wavefronts,
};
pub use pipeline::{Chunk, Pipeline, Span};
pub use plan::{
    Arg, At, Buf, CONSTANT_BYTES, ConstantCopy, CudaPlan, CudaSource, Dtype, Fill, GemmCall,
    GemmCompute, Launch, LaunchBytes, LibraryCall, POISON_F32, Scratch, Step, Text, gemm_args,
    gemm_dims, is_poison,
};
pub use tma::{MAX_RANK as TMA_MAX_RANK, TensorMap, TmaSwizzle};
pub use workload::{
    Activation, OutputLayout, Shape, ShapeError, ShapeParseError, TensorSpec, Workload,
};
