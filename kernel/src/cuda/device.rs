//! The CUDA device: runs a [`CudaPlan`] on a GPU through cudarc. Kernels are compiled by
//! [`super::nvrtc`] to CUBIN for the device's architecture; library steps go to cuBLAS. Time
//! comes from CUDA events around each run, with the L2 flushed and the output poisoned
//! before each run, outside the timed span.

use super::discovery::{Found, discovery};
use super::nvrtc;
use crate::contract::{Kernel, Unsupported};
use crate::device::{DeviceError, DeviceInfo, DeviceKind, Executor, Prepared, slugify};
use crate::plan::{Arg, Buf, CudaPlan, Dtype, GemmCompute, LibraryCall, Step};
use crate::workload::Shape;
use cudarc::cublas::CudaBlas;
use cudarc::driver::sys::{CUdevice_attribute, CUevent_flags, CUfunction_attribute};
use cudarc::driver::{
    CudaContext, CudaEvent, CudaFunction, CudaModule, CudaSlice, CudaStream, DevicePtr,
    DriverError, LaunchConfig, PushKernelArg,
};
use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

pub struct CudaDevice {
    ctx: Arc<CudaContext>,
    stream: Arc<CudaStream>,
    info: DeviceInfo,
    arch: String,
    blas: Result<CudaBlas, String>,
    modules: Mutex<HashMap<&'static str, Arc<CudaModule>>>,
    /// Written before each timed run so that no input is still in L2.
    flush: Mutex<CudaSlice<u8>>,
}

fn driver_err(what: impl Into<String>) -> impl FnOnce(DriverError) -> DeviceError {
    let what = what.into();
    move |e| DeviceError::Driver {
        what,
        detail: format!("{e:?}"),
    }
}

impl CudaDevice {
    /// Opens GPU 0, or says exactly why there is none. Never panics when the driver is absent.
    pub fn open() -> Result<Self, DeviceError> {
        let d = discovery();
        if let Found::Missing(why) = &d.driver {
            return Err(DeviceError::Unavailable(format!("no NVIDIA driver: {why}")));
        }
        // SAFETY: only probes whether libcuda can be opened. cudarc panics without it.
        if !unsafe { cudarc::driver::sys::is_culib_present() } {
            return Err(DeviceError::Unavailable(
                "no NVIDIA driver: libcuda cannot be opened".into(),
            ));
        }
        let count = CudaContext::device_count().map_err(driver_err("cuDeviceGetCount"))?;
        if count < 1 {
            return Err(DeviceError::Unavailable(
                "the NVIDIA driver is present but reports no GPU".into(),
            ));
        }
        let ctx = CudaContext::new(0).map_err(driver_err("creating the context of GPU 0"))?;
        // One stream, raw pointers: cudarc's cross-stream event tracking is not needed.
        // SAFETY: everything this device does is ordered on `stream`.
        unsafe { ctx.disable_event_tracking() };
        let stream = ctx.default_stream();
        let (major, minor) = ctx
            .compute_capability()
            .map_err(driver_err("reading the compute capability"))?;
        let attr = |a| ctx.attribute(a).unwrap_or(0);
        let sms = attr(CUdevice_attribute::CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT);
        let l2 = attr(CUdevice_attribute::CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE).max(0) as u64;
        let name = ctx.name().unwrap_or_else(|_| "unknown NVIDIA GPU".into());
        let mut cuda_version = 0;
        // SAFETY: plain out-parameter; the driver is loaded.
        let _ = unsafe { cudarc::driver::sys::cuDriverGetVersion(&mut cuda_version) };
        let nvrtc = nvrtc::version()
            .map(|(a, b)| format!("NVRTC {a}.{b}"))
            .unwrap_or_else(|e| e.to_string());
        let info = DeviceInfo {
            kind: DeviceKind::Cuda.name().to_string(),
            slug: slugify(&name),
            name,
            driver: display_driver_version()
                .unwrap_or_else(|| format!("CUDA driver API {}", fmt_cuda(cuda_version))),
            cuda: Some(format!(
                "CUDA {} (driver API), {nvrtc}",
                fmt_cuda(cuda_version)
            )),
            compute_capability: Some(format!("{major}.{minor}")),
            units: sms.max(0) as u32,
            memory_bytes: ctx.total_mem().ok().map(|b| b as u64),
            l2_bytes: Some(l2),
        };
        let flush_bytes = (2 * l2).max(8 << 20) as usize;
        let flush = stream
            .alloc_zeros::<u8>(flush_bytes)
            .map_err(driver_err("allocating the L2 flush buffer"))?;
        let blas = match &d.cublas {
            Found::Missing(why) => Err(why.clone()),
            // SAFETY: only probes whether libcublas can be opened.
            _ if !unsafe { cudarc::cublas::sys::is_culib_present() } => {
                Err("libcublas cannot be opened".to_string())
            }
            _ => CudaBlas::new(stream.clone()).map_err(|e| format!("cublasCreate: {e:?}")),
        };
        Ok(Self {
            arch: format!("sm_{major}{minor}"),
            ctx,
            stream,
            info,
            blas,
            modules: Mutex::new(HashMap::new()),
            flush: Mutex::new(flush),
        })
    }

    /// `sm_90` for an H100.
    pub fn arch(&self) -> &str {
        &self.arch
    }

    pub fn cublas_status(&self) -> Result<(), &str> {
        self.blas.as_ref().map(|_| ()).map_err(String::as_str)
    }

    /// Free and total device memory in bytes.
    pub fn memory(&self) -> Option<(usize, usize)> {
        self.ctx.mem_get_info().ok()
    }

    fn function(
        &self,
        source: &crate::plan::CudaSource,
        entry: &str,
    ) -> Result<CudaFunction, DeviceError> {
        let module = {
            let mut modules = self.modules.lock().unwrap_or_else(|p| p.into_inner());
            match modules.get(source.file) {
                Some(m) => m.clone(),
                None => {
                    let compiled = nvrtc::compile(source, &self.arch)?;
                    let m = self
                        .ctx
                        .load_module(cudarc::nvrtc::Ptx::from_binary(compiled.cubin.clone()))
                        .map_err(driver_err(format!("loading {}", source.file)))?;
                    modules.insert(source.file, m.clone());
                    m
                }
            }
        };
        module
            .load_function(entry)
            .map_err(driver_err(format!("finding {entry} in {}", source.file)))
    }

    fn upload(&self, data: &[f32], dtype: Dtype, what: &str) -> Result<CudaSlice<u8>, DeviceError> {
        let bytes = to_bytes(data, dtype);
        self.stream
            .clone_htod(&bytes)
            .map_err(driver_err(format!("uploading {what}")))
    }

    fn alloc(&self, bytes: usize, what: &str) -> Result<CudaSlice<u8>, DeviceError> {
        self.stream
            .alloc_zeros::<u8>(bytes.max(1))
            .map_err(driver_err(format!("allocating {what}")))
    }
}

fn fmt_cuda(v: i32) -> String {
    format!("{}.{}", v / 1000, (v % 1000) / 10)
}

/// The kernel module's version (`580.65.06`), which the driver API does not give.
fn display_driver_version() -> Option<String> {
    let text = std::fs::read_to_string("/proc/driver/nvidia/version").ok()?;
    let line = text.lines().next()?;
    let v = line
        .split_whitespace()
        .find(|w| w.chars().next().is_some_and(|c| c.is_ascii_digit()) && w.contains('.'))?;
    Some(v.to_string())
}

pub(crate) fn to_bytes(data: &[f32], dtype: Dtype) -> Vec<u8> {
    match dtype {
        Dtype::F32 => data.iter().flat_map(|v| v.to_le_bytes()).collect(),
        Dtype::F16 => data
            .iter()
            .flat_map(|&v| half::f16::from_f32(v).to_le_bytes())
            .collect(),
    }
}

pub(crate) fn from_bytes(bytes: &[u8], dtype: Dtype) -> Vec<f32> {
    match dtype {
        Dtype::F32 => bytes
            .chunks_exact(4)
            .map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]]))
            .collect(),
        Dtype::F16 => bytes
            .chunks_exact(2)
            .map(|c| half::f16::from_le_bytes([c[0], c[1]]).to_f32())
            .collect(),
    }
}

/// Bytes a plan allocates on the device.
fn plan_bytes(plan: &CudaPlan, shape: &Shape) -> usize {
    let inputs: usize = shape
        .inputs()
        .iter()
        .zip(&plan.inputs)
        .map(|(t, d)| t.len() * d.bytes())
        .sum();
    let scratch: usize = plan.scratch.iter().map(|s| s.len * s.dtype.bytes()).sum();
    inputs + scratch + shape.output().len() * plan.output.bytes()
}

struct CudaRun<'a> {
    dev: &'a CudaDevice,
    plan: CudaPlan,
    functions: Vec<Option<CudaFunction>>,
    inputs: Vec<CudaSlice<u8>>,
    output: CudaSlice<u8>,
    scratch: Vec<CudaSlice<u8>>,
    events: Vec<(CudaEvent, CudaEvent)>,
}

impl CudaRun<'_> {
    fn ptr(&self, buf: Buf) -> u64 {
        let s = &self.dev.stream;
        let slice = match buf {
            Buf::Input(i) => &self.inputs[i],
            Buf::Output => &self.output,
            Buf::Scratch(i) => &self.scratch[i],
        };
        slice.device_ptr(s).0
    }

    fn poison_output(&self) -> Result<(), DeviceError> {
        let (ptr, _guard) = self.output.device_ptr(&self.dev.stream);
        // 0xFF bytes are NaN in both f32 and f16.
        // SAFETY: `ptr` is a live allocation of `num_bytes()` bytes ordered on this stream.
        unsafe {
            cudarc::driver::result::memset_d8_async(
                ptr,
                0xFF,
                self.output.num_bytes(),
                self.dev.stream.cu_stream(),
            )
        }
        .map_err(driver_err("poisoning the output"))
    }

    fn flush_l2(&self, round: u64) -> Result<(), DeviceError> {
        let flush = self.dev.flush.lock().unwrap_or_else(|p| p.into_inner());
        let (ptr, _guard) = flush.device_ptr(&self.dev.stream);
        // SAFETY: as in `poison_output`.
        unsafe {
            cudarc::driver::result::memset_d8_async(
                ptr,
                round as u8,
                flush.num_bytes(),
                self.dev.stream.cu_stream(),
            )
        }
        .map_err(driver_err("flushing L2"))
    }

    /// Enqueues every step of the plan.
    fn enqueue(&self) -> Result<(), DeviceError> {
        for (step, func) in self.plan.steps.iter().zip(&self.functions) {
            match step {
                Step::Kernel(launch) => {
                    let func = func.as_ref().expect("prepared with the plan");
                    let values: Vec<ArgValue> = launch
                        .args
                        .iter()
                        .map(|a| match *a {
                            Arg::Ptr(b) => ArgValue::Ptr(self.ptr(b)),
                            Arg::I32(v) => ArgValue::I32(v),
                            Arg::F32(v) => ArgValue::F32(v),
                        })
                        .collect();
                    let mut builder = self.dev.stream.launch_builder(func);
                    for v in &values {
                        match v {
                            ArgValue::Ptr(p) => builder.arg(p),
                            ArgValue::I32(i) => builder.arg(i),
                            ArgValue::F32(f) => builder.arg(f),
                        };
                    }
                    let cfg = LaunchConfig {
                        grid_dim: (launch.grid[0], launch.grid[1], launch.grid[2]),
                        block_dim: (launch.block[0], launch.block[1], launch.block[2]),
                        shared_mem_bytes: launch.dynamic_smem,
                    };
                    // SAFETY: the argument list follows the kernel's parameter list, as its
                    // stage crate declares it; buffers are live for the whole run.
                    unsafe { builder.launch(cfg) }
                        .map_err(driver_err(format!("launching {}", launch.entry)))?;
                }
                Step::Library(call) => self.library(call)?,
            }
        }
        Ok(())
    }

    fn library(&self, call: &LibraryCall) -> Result<(), DeviceError> {
        use cudarc::cublas::sys::{
            cublasComputeType_t, cublasGemmAlgo_t, cublasOperation_t, cudaDataType,
        };
        let blas = self
            .dev
            .blas
            .as_ref()
            .map_err(|why| DeviceError::Unavailable(format!("cuBLAS unavailable: {why}")))?;
        let LibraryCall::Gemm {
            m,
            n,
            k,
            a,
            b,
            c,
            b_transposed,
            compute,
        } = *call;
        // cuBLAS is column-major: row-major C = A*B is column-major C^T = B^T * A^T, so the
        // operands swap; a transposed B (W[N,K]) becomes op = T with leading dimension K.
        let (op_b, ldb) = if b_transposed {
            (cublasOperation_t::CUBLAS_OP_T, k)
        } else {
            (cublasOperation_t::CUBLAS_OP_N, n)
        };
        let (alpha, beta) = (1.0f32, 0.0f32);
        let (in_type, compute_type) = match compute {
            GemmCompute::Fp32 => (
                cudaDataType::CUDA_R_32F,
                cublasComputeType_t::CUBLAS_COMPUTE_32F,
            ),
            GemmCompute::Tf32 => (
                cudaDataType::CUDA_R_32F,
                cublasComputeType_t::CUBLAS_COMPUTE_32F_FAST_TF32,
            ),
            GemmCompute::Fp16 => (
                cudaDataType::CUDA_R_16F,
                cublasComputeType_t::CUBLAS_COMPUTE_32F,
            ),
        };
        let (pa, pb, pc) = (self.ptr(a), self.ptr(b), self.ptr(c));
        // SAFETY: pointers are live device buffers sized for this shape by the plan.
        let r = unsafe {
            if compute == GemmCompute::Fp32 {
                cudarc::cublas::result::sgemm(
                    *blas.handle(),
                    op_b,
                    cublasOperation_t::CUBLAS_OP_N,
                    n as i32,
                    m as i32,
                    k as i32,
                    &alpha,
                    pb as *const f32,
                    ldb as i32,
                    pa as *const f32,
                    k as i32,
                    &beta,
                    pc as *mut f32,
                    n as i32,
                )
            } else {
                cudarc::cublas::result::gemm_ex(
                    *blas.handle(),
                    op_b,
                    cublasOperation_t::CUBLAS_OP_N,
                    n as i32,
                    m as i32,
                    k as i32,
                    (&alpha as *const f32).cast(),
                    pb as *const _,
                    in_type,
                    ldb as i32,
                    pa as *const _,
                    in_type,
                    k as i32,
                    (&beta as *const f32).cast(),
                    pc as *mut _,
                    cudaDataType::CUDA_R_32F,
                    n as i32,
                    compute_type,
                    cublasGemmAlgo_t::CUBLAS_GEMM_DEFAULT,
                )
            }
        };
        r.map_err(|e| DeviceError::Driver {
            what: format!("cuBLAS GEMM {m}x{n}x{k} ({compute:?})"),
            detail: format!("{e:?}"),
        })
    }

    fn sync(&self) -> Result<(), DeviceError> {
        self.dev
            .stream
            .synchronize()
            .map_err(driver_err("running the plan"))
    }
}

enum ArgValue {
    Ptr(u64),
    I32(i32),
    F32(f32),
}

impl Prepared for CudaRun<'_> {
    fn run(&mut self) -> Result<(), DeviceError> {
        self.poison_output()?;
        self.enqueue()?;
        self.sync()
    }

    fn output(&mut self) -> Result<Vec<f32>, DeviceError> {
        let bytes = self
            .dev
            .stream
            .clone_dtoh(&self.output)
            .map_err(driver_err("downloading the output"))?;
        Ok(from_bytes(&bytes, self.plan.output))
    }

    fn time(&mut self, iters: u64) -> Result<Duration, DeviceError> {
        let iters = iters as usize;
        while self.events.len() < iters {
            let ev = |ctx: &Arc<CudaContext>| {
                ctx.new_event(Some(CUevent_flags::CU_EVENT_DEFAULT))
                    .map_err(driver_err("creating a timing event"))
            };
            self.events.push((ev(&self.dev.ctx)?, ev(&self.dev.ctx)?));
        }
        for (i, (start, end)) in self.events.iter().take(iters).enumerate() {
            self.flush_l2(i as u64)?;
            self.poison_output()?;
            start
                .record(&self.dev.stream)
                .map_err(driver_err("recording an event"))?;
            self.enqueue()?;
            end.record(&self.dev.stream)
                .map_err(driver_err("recording an event"))?;
        }
        self.sync()?;
        let mut total_ms = 0.0f64;
        for (start, end) in self.events.iter().take(iters) {
            total_ms += f64::from(
                start
                    .elapsed_ms(end)
                    .map_err(driver_err("reading an event"))?,
            );
        }
        Ok(Duration::from_secs_f64(total_ms / 1e3))
    }
}

impl Executor for CudaDevice {
    fn kind(&self) -> DeviceKind {
        DeviceKind::Cuda
    }

    fn info(&self) -> &DeviceInfo {
        &self.info
    }

    fn can_run(&self, kernel: &dyn Kernel) -> Result<(), Unsupported> {
        let info = kernel.info();
        // A probe shape only tells whether the kernel has a GPU description at all.
        match kernel.cuda(&info.workload.probe_shape()) {
            Some(plan) => {
                let library = plan.steps.iter().any(|s| matches!(s, Step::Library(_)));
                if library && let Err(why) = &self.blas {
                    return Err(Unsupported(format!(
                        "needs cuBLAS, which is unavailable: {why}"
                    )));
                }
                Ok(())
            }
            None => Err(Unsupported(format!("{} has no CUDA description", info.id))),
        }
    }

    fn prepare<'a>(
        &'a self,
        kernel: &'a dyn Kernel,
        shape: &Shape,
        inputs: &'a [Vec<f32>],
    ) -> Result<Box<dyn Prepared + 'a>, DeviceError> {
        kernel.supports(shape)?;
        let plan = kernel
            .cuda(shape)
            .ok_or_else(|| Unsupported(format!("{} has no CUDA description", kernel.info().id)))?;
        if let Some((free, total)) = self.memory() {
            let need = plan_bytes(&plan, shape);
            if need + (64 << 20) > free {
                return Err(DeviceError::OutOfMemory {
                    shape: shape.to_string(),
                    needed_mib: (need >> 20) as u64,
                    free_mib: (free >> 20) as u64,
                    total_mib: (total >> 20) as u64,
                });
            }
        }
        let mut functions = Vec::new();
        for step in &plan.steps {
            functions.push(match step {
                Step::Kernel(l) => {
                    let f = self.function(&l.source, l.entry)?;
                    if l.dynamic_smem > 48 * 1024 {
                        f.set_attribute(
                            CUfunction_attribute::CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
                            l.dynamic_smem as i32,
                        )
                        .map_err(driver_err(format!(
                            "opting {} into {} B of shared memory",
                            l.entry, l.dynamic_smem
                        )))?;
                    }
                    Some(f)
                }
                Step::Library(_) => None,
            });
        }
        let specs = shape.inputs();
        let mut dev_inputs = Vec::new();
        for ((data, dtype), spec) in inputs.iter().zip(&plan.inputs).zip(&specs) {
            dev_inputs.push(self.upload(data, *dtype, spec.name)?);
        }
        let output = self.alloc(shape.output().len() * plan.output.bytes(), "the output")?;
        let mut scratch = Vec::new();
        for s in &plan.scratch {
            scratch.push(self.alloc(s.len * s.dtype.bytes(), s.name)?);
        }
        Ok(Box::new(CudaRun {
            dev: self,
            plan,
            functions,
            inputs: dev_inputs,
            output,
            scratch,
            events: Vec::new(),
        }))
    }
}
