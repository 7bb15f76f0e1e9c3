//! The CUDA device: runs a [`CudaPlan`] on a GPU through cudarc. Kernels are compiled by
//! [`super::nvrtc`] to CUBIN for the device's architecture; library steps go to cuBLAS. Time
//! comes from CUDA events around each run; before each run the output and scratch buffers are
//! filled and then the L2 is flushed, outside the timed span.
//!
//! A kernel that faults (an illegal address, a failed launch) leaves its CUDA context unusable
//! for good. Such a sticky error comes back as [`DeviceError::Lost`]; [`CudaDevice::recover`]
//! then builds a fresh context, stream, cuBLAS handle and module cache, so one faulty kernel
//! costs its own row only.

use super::discovery::{Found, discovery};
use super::nvrtc;
use crate::contract::{Kernel, Unsupported};
use crate::device::{DeviceError, DeviceInfo, DeviceKind, Executor, Prepared, slugify};
use crate::pipeline::Pipeline;
use crate::plan::{
    Arg, At, Buf, ConstantCopy, CudaPlan, CudaSource, Fill, GemmCall, GemmCompute, Launch, Step,
};
use crate::plan::{Dtype, LibraryCall};
use crate::tma::{TensorMap, TmaSwizzle};
use crate::workload::Shape;
use cudarc::cublas::CudaBlas;
use cudarc::driver::sys::{CUdevice_attribute, CUevent_flags, CUfunction_attribute, CUresult};
use cudarc::driver::{
    CudaContext, CudaEvent, CudaFunction, CudaModule, CudaSlice, CudaStream, DevicePtr,
    DriverError, LaunchConfig, PinnedHostSlice, PushKernelArg,
};
use std::collections::HashMap;
use std::sync::{Arc, Mutex, RwLock};
use std::time::Duration;

/// The oldest driver the CUDA 13.0 bindings and NVRTC 13 CUBINs work with: R580 reports
/// CUDA 13.0 (`cuDriverGetVersion` = 13000).
pub const MIN_DRIVER_CUDA: i32 = 13000;

/// Everything that dies with a CUDA context, rebuilt together by [`CudaDevice::recover`].
struct State {
    ctx: Arc<CudaContext>,
    stream: Arc<CudaStream>,
    blas: Result<CudaBlas, String>,
    modules: Mutex<HashMap<CudaSource, Arc<CudaModule>>>,
    /// Written before each timed run so that no input is still in L2.
    flush: Mutex<CudaSlice<u8>>,
}

pub struct CudaDevice {
    info: DeviceInfo,
    arch: String,
    /// Shared memory a block may have with the opt-in attribute (227 KB on an H100).
    smem_optin: u32,
    /// Why cuBLAS cannot be used, found once by discovery.
    cublas_missing: Option<String>,
    state: RwLock<Arc<State>>,
}

fn driver_err(what: impl Into<String>) -> impl FnOnce(DriverError) -> DeviceError {
    let what = what.into();
    move |e| {
        // cudarc's Debug asks libcuda for the message; name the code alone without it.
        // SAFETY: only probes whether libcuda can be opened.
        let detail = if unsafe { cudarc::driver::sys::is_culib_present() } {
            format!("{e:?}")
        } else {
            format!("{:?}", e.0)
        };
        if is_sticky(e.0) {
            DeviceError::Lost { what, detail }
        } else {
            DeviceError::Driver { what, detail }
        }
    }
}

/// Errors after which the context cannot be used again (CUDA's "sticky" errors).
pub fn is_sticky(code: CUresult) -> bool {
    use CUresult::*;
    matches!(
        code,
        CUDA_ERROR_ILLEGAL_ADDRESS
            | CUDA_ERROR_LAUNCH_TIMEOUT
            | CUDA_ERROR_ASSERT
            | CUDA_ERROR_HARDWARE_STACK_ERROR
            | CUDA_ERROR_ILLEGAL_INSTRUCTION
            | CUDA_ERROR_MISALIGNED_ADDRESS
            | CUDA_ERROR_INVALID_ADDRESS_SPACE
            | CUDA_ERROR_INVALID_PC
            | CUDA_ERROR_LAUNCH_FAILED
            | CUDA_ERROR_ECC_UNCORRECTABLE
            | CUDA_ERROR_CONTEXT_IS_DESTROYED
    )
}

/// `13.0` from the driver API's `13000`.
pub fn fmt_cuda(v: i32) -> String {
    format!("{}.{}", v / 1000, (v % 1000) / 10)
}

/// Refuses a driver older than the bindings need, naming both versions.
pub fn check_driver_version(found: i32, display: Option<&str>) -> Result<(), DeviceError> {
    if found >= MIN_DRIVER_CUDA {
        return Ok(());
    }
    Err(DeviceError::Unavailable(format!(
        "the NVIDIA driver{} supports CUDA {} but the lab is built for CUDA {} \
         (driver R580 or newer): update the driver",
        display.map(|d| format!(" {d}")).unwrap_or_default(),
        fmt_cuda(found),
        fmt_cuda(MIN_DRIVER_CUDA)
    )))
}

/// The driver's CUDA version, without opening a context.
pub fn driver_cuda_version() -> Result<i32, DeviceError> {
    // SAFETY: only probes whether libcuda can be opened. cudarc panics without it.
    if !unsafe { cudarc::driver::sys::is_culib_present() } {
        return Err(DeviceError::Unavailable(
            "no NVIDIA driver: libcuda cannot be opened".into(),
        ));
    }
    let mut v = 0;
    // SAFETY: plain out-parameter; the library is present.
    unsafe { cudarc::driver::sys::cuDriverGetVersion(&mut v) }
        .result()
        .map_err(driver_err("cuDriverGetVersion"))?;
    Ok(v)
}

impl State {
    fn new(
        ctx: Arc<CudaContext>,
        l2: u64,
        cublas_missing: Option<&str>,
    ) -> Result<Self, DeviceError> {
        // One stream, raw pointers: cudarc's cross-stream event tracking is not needed.
        // SAFETY: everything this device does is ordered on `stream`.
        unsafe { ctx.disable_event_tracking() };
        // A stream of its own, not the legacy default stream: a CUDA graph cannot be captured
        // from the legacy stream (CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED, seen on an H200).
        let stream = ctx
            .new_stream()
            .map_err(driver_err("creating the device's stream"))?;
        let flush_bytes = (2 * l2).max(8 << 20) as usize;
        let flush = stream
            .alloc_zeros::<u8>(flush_bytes)
            .map_err(driver_err("allocating the L2 flush buffer"))?;
        let blas = match cublas_missing {
            Some(why) => Err(why.to_string()),
            None => CudaBlas::new(stream.clone()).map_err(|e| format!("cublasCreate: {e:?}")),
        };
        Ok(Self {
            ctx,
            stream,
            blas,
            modules: Mutex::new(HashMap::new()),
            flush: Mutex::new(flush),
        })
    }
}

/// Shared memory beyond 48 KB per block (static plus dynamic) needs the dynamic part opted in
/// with `CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES`; beyond the device's opt-in limit the
/// launch cannot run at all. Returns the attribute value to set, if one is needed.
pub fn dynamic_smem_opt_in(
    entry: &str,
    static_smem: u32,
    dynamic_smem: u32,
    limit: u32,
) -> Result<Option<u32>, DeviceError> {
    let total = static_smem + dynamic_smem;
    if total > limit {
        return Err(Unsupported(format!(
            "{entry} needs {total} B of shared memory per block ({static_smem} static + \
             {dynamic_smem} dynamic); this GPU allows {limit} B"
        ))
        .into());
    }
    Ok((total > 48 * 1024 && dynamic_smem > 0).then_some(dynamic_smem))
}

/// A cooperative launch needs every block resident at once: at most `per_sm` blocks of it fit
/// an SM (the driver's occupancy for its threads and shared memory), times `sms`. Beyond that
/// the driver refuses it; the row is declined with the arithmetic instead.
pub fn cooperative_fits(launch: &Launch, per_sm: u32, sms: u32) -> Result<(), Unsupported> {
    let (blocks, most) = (launch.blocks(), u64::from(per_sm) * u64::from(sms));
    if blocks <= most {
        return Ok(());
    }
    Err(Unsupported(format!(
        "{}: a cooperative launch needs all {blocks} blocks resident at once; {per_sm} fit an \
         SM ({} threads, {} B of dynamic shared memory) x {sms} SMs = {most}",
        launch.entry,
        launch.threads_per_block(),
        launch.dynamic_smem
    )))
}

impl CudaDevice {
    /// Whether every block of `launch`, a cooperative one, can be resident at once.
    fn check_cooperative(&self, launch: &Launch, f: &CudaFunction) -> Result<(), DeviceError> {
        let per_sm = f
            .occupancy_max_active_blocks_per_multiprocessor(
                launch.threads_per_block(),
                launch.dynamic_smem as usize,
                None,
            )
            .map_err(driver_err(format!("reading {}'s occupancy", launch.entry)))?;
        Ok(cooperative_fits(launch, per_sm, self.info.units)?)
    }

    /// Opens GPU 0, or says exactly why there is none. Never panics when the driver is absent.
    pub fn open() -> Result<Self, DeviceError> {
        let d = discovery();
        if let Found::Missing(why) = &d.driver {
            return Err(DeviceError::Unavailable(why.clone()));
        }
        let cuda_version = driver_cuda_version()?;
        let display = display_driver_version();
        check_driver_version(cuda_version, display.as_deref())?;
        let count = CudaContext::device_count().map_err(driver_err("cuDeviceGetCount"))?;
        if count < 1 {
            return Err(DeviceError::Unavailable(
                "the NVIDIA driver is present but reports no GPU".into(),
            ));
        }
        let ctx = CudaContext::new(0).map_err(driver_err("creating the context of GPU 0"))?;
        let (major, minor) = ctx
            .compute_capability()
            .map_err(driver_err("reading the compute capability"))?;
        let attr = |a| ctx.attribute(a).unwrap_or(0);
        let sms = attr(CUdevice_attribute::CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT);
        let l2 = attr(CUdevice_attribute::CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE).max(0) as u64;
        let smem_optin =
            attr(CUdevice_attribute::CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN)
                .max(48 * 1024) as u32;
        let name = ctx.name().unwrap_or_else(|_| "unknown NVIDIA GPU".into());
        let nvrtc = nvrtc::version()
            .map(|(a, b)| format!("NVRTC {a}.{b}"))
            .unwrap_or_else(|e| e.to_string());
        let info = DeviceInfo {
            kind: DeviceKind::Cuda.name().to_string(),
            slug: slugify(&name),
            name,
            driver: display
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
        let cublas_missing = match &d.cublas {
            Found::Missing(why) => Some(why.clone()),
            // SAFETY: only probes whether libcublas can be opened.
            _ if !unsafe { cudarc::cublas::sys::is_culib_present() } => {
                Some("libcublas cannot be opened".to_string())
            }
            _ => None,
        };
        let state = State::new(ctx, l2, cublas_missing.as_deref())?;
        Ok(Self {
            arch: format!("sm_{major}{minor}"),
            smem_optin,
            info,
            cublas_missing,
            state: RwLock::new(Arc::new(state)),
        })
    }

    /// `sm_90` for an H100.
    pub fn arch(&self) -> &str {
        &self.arch
    }

    fn state(&self) -> Arc<State> {
        self.state.read().unwrap_or_else(|p| p.into_inner()).clone()
    }

    pub fn cublas_status(&self) -> Result<(), String> {
        self.state().blas.as_ref().map(|_| ()).map_err(Clone::clone)
    }

    /// Free and total device memory in bytes.
    pub fn memory(&self) -> Option<(usize, usize)> {
        self.state().ctx.mem_get_info().ok()
    }
}

impl State {
    fn module(&self, source: &CudaSource, arch: &str) -> Result<Arc<CudaModule>, DeviceError> {
        let mut modules = self.modules.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(m) = modules.get(source) {
            return Ok(m.clone());
        }
        let compiled = nvrtc::compile(source, arch)?;
        let m = self
            .ctx
            .load_module(cudarc::nvrtc::Ptx::from_binary(compiled.cubin.clone()))
            .map_err(driver_err(format!("loading {}", source.label())))?;
        modules.insert(source.clone(), m.clone());
        Ok(m)
    }

    fn function(
        &self,
        source: &CudaSource,
        entry: &str,
        arch: &str,
    ) -> Result<CudaFunction, DeviceError> {
        // A C++ entry (a template instantiation) is loaded by its mangled symbol.
        let compiled = nvrtc::compile(source, arch)?;
        self.module(source, arch)?
            .load_function(compiled.symbol(entry))
            .map_err(driver_err(format!("finding {entry} in {}", source.label())))
    }

    /// The device address of `c`'s `__constant__` array, checked to hold `bytes`.
    fn symbol(&self, c: &ConstantCopy, bytes: usize, arch: &str) -> Result<u64, DeviceError> {
        let module = self.module(&c.source, arch)?;
        let what = format!("finding __constant__ {} in {}", c.symbol, c.source.label());
        let view = module
            .get_global(&c.symbol, &self.stream)
            .map_err(driver_err(what.clone()))?;
        if view.len() < bytes {
            return Err(DeviceError::Driver {
                what,
                detail: format!("it holds {} bytes, the plan copies {bytes}", view.len()),
            });
        }
        let (ptr, _sync) = view.device_ptr(&self.stream);
        Ok(ptr)
    }

    fn upload(&self, data: &[f32], dtype: Dtype, what: &str) -> Result<CudaSlice<u8>, DeviceError> {
        self.stream
            .clone_htod(&dtype.encode(data))
            .map_err(driver_err(format!("uploading {what}")))
    }

    fn alloc(&self, bytes: usize, what: &str) -> Result<CudaSlice<u8>, DeviceError> {
        self.stream
            .alloc_zeros::<u8>(bytes.max(1))
            .map_err(driver_err(format!("allocating {what}")))
    }
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

/// A device buffer with what it holds at the start of each run.
struct DevBuf {
    slice: CudaSlice<u8>,
    dtype: Dtype,
    fill: Fill,
    /// The fill's bytes, when no byte memset can write it.
    pattern: Option<CudaSlice<u8>>,
}

struct CudaRun<'a> {
    state: Arc<State>,
    plan: CudaPlan,
    /// The host's inputs, which [`Prepared::inputs_written`] compares the device's with.
    host_inputs: &'a [Vec<f32>],
    functions: Vec<Option<CudaFunction>>,
    /// Device address of each `Step::Constant`'s `__constant__` array, by step.
    symbols: Vec<Option<u64>>,
    inputs: Vec<CudaSlice<u8>>,
    output: DevBuf,
    scratch: Vec<DevBuf>,
    events: Vec<(CudaEvent, CudaEvent)>,
    /// The plan's TMA tensor maps, encoded once the buffers exist (outside the timed span).
    maps: HashMap<TensorMap, [u64; 16]>,
    /// Those passed by address ([`Arg::TensorMapAt`]), copied to device memory.
    map_copies: HashMap<TensorMap, CudaSlice<u64>>,
    /// The streams and pinned host buffers of a batch pipeline.
    pipe: Option<PipeRun>,
}

/// A page-locked host buffer, its address taken once: the copies of a pipeline read and
/// write it asynchronously, so it must not move, and only a synchronized stream reads it.
struct Pinned {
    _slice: PinnedHostSlice<u8>,
    ptr: *mut u8,
    len: usize,
}

impl Pinned {
    fn new(ctx: &Arc<CudaContext>, bytes: &[u8], what: &str) -> Result<Self, DeviceError> {
        // Flags 0: cached, not write-combined, since the host reads the output back.
        // SAFETY: the memory is written in full right below before anything reads it.
        let mut slice = unsafe { ctx.alloc_pinned_with_flags::<u8>(bytes.len().max(1), 0) }
            .map_err(driver_err(format!(
                "allocating pinned host memory for {what}"
            )))?;
        let ptr = slice
            .as_mut_ptr()
            .map_err(driver_err(format!("mapping pinned host memory for {what}")))?;
        // SAFETY: `ptr` holds at least `bytes.len()` bytes and nothing else uses it yet.
        unsafe { std::ptr::copy_nonoverlapping(bytes.as_ptr(), ptr, bytes.len()) };
        Ok(Self {
            _slice: slice,
            ptr,
            len: bytes.len(),
        })
    }
}

struct PipeRun {
    pipeline: Pipeline,
    streams: Vec<Arc<CudaStream>>,
    /// Recorded on the main stream after the once-only steps; every pipeline stream waits on it.
    fork: CudaEvent,
    /// Recorded on each pipeline stream after its last chunk; the main stream waits on them
    /// before the timing event that ends the run.
    joins: Vec<CudaEvent>,
    /// Host copies of the uploaded inputs (in device element type), by input index.
    inputs: Vec<Option<Pinned>>,
    output: Pinned,
}

impl CudaRun<'_> {
    fn dtype(&self, b: Buf) -> Dtype {
        self.plan.dtype(b)
    }

    /// Encodes every tensor map the plan's launches take.
    fn encode_maps(&mut self) -> Result<(), DeviceError> {
        for l in self.plan.launches() {
            for a in &l.args {
                if let Arg::TensorMap(m) | Arg::TensorMapAt(m) = *a
                    && !self.maps.contains_key(&m)
                {
                    let (slice, dtype) = match m.buf {
                        Buf::Input(i) => (&self.inputs[i], self.plan.inputs[i]),
                        Buf::Output => (&self.output.slice, self.output.dtype),
                        Buf::Scratch(i) => (&self.scratch[i].slice, self.scratch[i].dtype),
                    };
                    m.fits(slice.len() / dtype.bytes())?;
                    let encoded = encode_tensor_map(&m, dtype, self.ptr(m.buf.into()))?;
                    self.maps.insert(m, encoded);
                }
                if let Arg::TensorMapAt(m) = *a
                    && !self.map_copies.contains_key(&m)
                {
                    let copy = self
                        .state
                        .stream
                        .clone_htod(&self.maps[&m])
                        .map_err(driver_err("copying a tensor map to device memory"))?;
                    self.map_copies.insert(m, copy);
                }
            }
        }
        Ok(())
    }

    fn ptr(&self, at: At) -> u64 {
        let s = &self.state.stream;
        let (slice, dtype) = match at.buf {
            Buf::Input(i) => (&self.inputs[i], self.plan.inputs[i]),
            Buf::Output => (&self.output.slice, self.output.dtype),
            Buf::Scratch(i) => (&self.scratch[i].slice, self.scratch[i].dtype),
        };
        slice.device_ptr(s).0 + (at.offset * dtype.bytes()) as u64
    }

    fn memset(&self, slice: &CudaSlice<u8>, byte: u8, what: &str) -> Result<(), DeviceError> {
        let (ptr, _guard) = slice.device_ptr(&self.state.stream);
        // SAFETY: `ptr` is a live allocation of `num_bytes()` bytes ordered on this stream.
        unsafe {
            cudarc::driver::result::memset_d8_async(
                ptr,
                byte,
                slice.num_bytes(),
                self.state.stream.cu_stream(),
            )
        }
        .map_err(driver_err(what))
    }

    /// Output and scratch buffers as the plan wants them at the start of a run.
    fn fill_buffers(&self) -> Result<(), DeviceError> {
        for b in std::iter::once(&self.output).chain(&self.scratch) {
            match (&b.pattern, b.fill.byte(b.dtype)) {
                (_, Some(byte)) => self.memset(&b.slice, byte, "filling a buffer")?,
                (Some(pattern), None) => {
                    let (dst, _g1) = b.slice.device_ptr(&self.state.stream);
                    let (src, _g2) = pattern.device_ptr(&self.state.stream);
                    // SAFETY: both are live allocations of the same size on this stream.
                    unsafe {
                        cudarc::driver::result::memcpy_dtod_async(
                            dst,
                            src,
                            b.slice.num_bytes(),
                            self.state.stream.cu_stream(),
                        )
                    }
                    .map_err(driver_err("filling a buffer"))?;
                }
                (None, None) => unreachable!("a pattern is made for every multi-byte fill"),
            }
        }
        if let Some(p) = &self.pipe {
            // Only the chunks' copies bring the data: a range none copies stays NaN.
            for i in p.pipeline.uploaded() {
                self.memset(&self.inputs[i], 0xFF, "poisoning an uploaded input")?;
            }
        }
        Ok(())
    }

    fn flush_l2(&self, round: u64) -> Result<(), DeviceError> {
        let flush = self.state.flush.lock().unwrap_or_else(|p| p.into_inner());
        self.memset(&flush, round as u8, "flushing L2")
    }

    /// Enqueues every step of the plan.
    fn enqueue(&self) -> Result<(), DeviceError> {
        for i in 0..self.plan.steps.len() {
            if self.pipe.as_ref().is_some_and(|p| p.pipeline.in_chunk(i)) {
                continue; // enqueued by `enqueue_chunks` on the chunk's stream
            }
            self.enqueue_step(i)?;
        }
        if let Some(p) = &self.pipe {
            self.enqueue_chunks(p)?;
        }
        Ok(())
    }

    /// Enqueues step `i` of the plan on the main stream.
    fn enqueue_step(&self, i: usize) -> Result<(), DeviceError> {
        match &self.plan.steps[i] {
            Step::Kernel(launch) => self.launch(launch, &self.functions[i], &self.state.stream)?,
            Step::Library(LibraryCall::Gemm(g)) => self.gemm(g)?,
            Step::Constant(c) => {
                let dst = self.symbols[i].expect("prepared with the plan");
                let bytes = c.len * self.dtype(c.from.buf).bytes();
                // SAFETY: `dst` holds at least `bytes` (checked at prepare), the source
                // range lies in a live buffer of this run, both ordered on this stream.
                unsafe {
                    cudarc::driver::result::memcpy_dtod_async(
                        dst,
                        self.ptr(c.from),
                        bytes,
                        self.state.stream.cu_stream(),
                    )
                }
                .map_err(driver_err(format!(
                    "copying into __constant__ {}",
                    c.symbol
                )))?;
            }
        }
        Ok(())
    }

    fn event(&self) -> Result<CudaEvent, DeviceError> {
        self.state
            .ctx
            .new_event(Some(CUevent_flags::CU_EVENT_DEFAULT))
            .map_err(driver_err("creating a timing event"))
    }

    /// Milliseconds between two recorded events, once the stream is synchronized.
    fn elapsed(&self, start: &CudaEvent, end: &CudaEvent) -> Result<f64, DeviceError> {
        Ok(f64::from(
            start
                .elapsed_ms(end)
                .map_err(driver_err("reading an event"))?,
        ))
    }

    /// Each step enqueued `iters` times in a row between two events, after a full run left
    /// every buffer holding real values.
    fn steps_alone(&self, iters: u64) -> Result<Vec<Duration>, DeviceError> {
        self.fill_buffers()?;
        self.enqueue()?;
        let mut spans = Vec::with_capacity(self.plan.steps.len());
        for i in 0..self.plan.steps.len() {
            let (start, end) = (self.event()?, self.event()?);
            start
                .record(&self.state.stream)
                .map_err(driver_err("recording an event"))?;
            for _ in 0..iters {
                self.enqueue_step(i)?;
            }
            end.record(&self.state.stream)
                .map_err(driver_err("recording an event"))?;
            spans.push((start, end));
        }
        self.sync()?;
        spans
            .iter()
            .map(|(a, b)| {
                Ok(Duration::from_secs_f64(
                    self.elapsed(a, b)? / 1e3 / iters as f64,
                ))
            })
            .collect()
    }

    /// The plan run `iters` times back to back, enqueued step by step and then as one CUDA
    /// graph captured from the same enqueueing: the mean time of one run each way.
    fn streamed_and_graphed(&self, iters: u64) -> Result<(Duration, Duration), DeviceError> {
        use cudarc::driver::sys::{CUgraphInstantiate_flags, CUstreamCaptureMode};
        let stream = &self.state.stream;
        let timed = |body: &dyn Fn() -> Result<(), DeviceError>| -> Result<Duration, DeviceError> {
            body()?; // once untimed: first-launch costs stay out
            let (start, end) = (self.event()?, self.event()?);
            start
                .record(stream)
                .map_err(driver_err("recording an event"))?;
            for _ in 0..iters {
                body()?;
            }
            end.record(stream)
                .map_err(driver_err("recording an event"))?;
            self.sync()?;
            Ok(Duration::from_secs_f64(
                self.elapsed(&start, &end)? / 1e3 / iters as f64,
            ))
        };
        self.fill_buffers()?;
        let streamed = timed(&|| self.enqueue())?;
        stream
            .begin_capture(CUstreamCaptureMode::CU_STREAM_CAPTURE_MODE_THREAD_LOCAL)
            .map_err(driver_err("starting a graph capture"))?;
        let captured = self.enqueue();
        // The capture ends whatever happened inside it, so the stream is usable after.
        let graph = stream.end_capture(CUgraphInstantiate_flags(0));
        captured?;
        let graph = graph
            .map_err(driver_err("capturing the forward pass as a CUDA graph"))?
            .ok_or_else(|| DeviceError::Driver {
                what: "capturing the forward pass as a CUDA graph".into(),
                detail: "the capture holds no work".into(),
            })?;
        graph
            .upload()
            .map_err(driver_err("uploading a CUDA graph"))?;
        let graphed = timed(&|| graph.launch().map_err(driver_err("launching a CUDA graph")))?;
        Ok((streamed, graphed))
    }

    /// Launches `launch` on `stream`.
    fn launch(
        &self,
        launch: &Launch,
        func: &Option<CudaFunction>,
        stream: &CudaStream,
    ) -> Result<(), DeviceError> {
        let func = func.as_ref().expect("prepared with the plan");
        let values: Vec<ArgValue> = launch
            .args
            .iter()
            .map(|a| match *a {
                Arg::Ptr(b) => ArgValue::Ptr(self.ptr(b.into())),
                Arg::PtrAt(at) => ArgValue::Ptr(self.ptr(at)),
                Arg::Null => ArgValue::Ptr(0),
                Arg::I32(v) => ArgValue::I32(v),
                Arg::I64(v) => ArgValue::I64(v),
                Arg::F32(v) => ArgValue::F32(v),
                Arg::TensorMap(m) => ArgValue::TensorMap(self.maps[&m]),
                Arg::TensorMapAt(m) => {
                    ArgValue::Ptr(self.map_copies[&m].device_ptr(&self.state.stream).0)
                }
            })
            .collect();
        let cooperative = self.plan.cooperative.contains(&launch.entry);
        let mut builder = stream.launch_builder(func);
        for v in &values {
            match v {
                ArgValue::Ptr(p) => builder.arg(p),
                ArgValue::I32(i) => builder.arg(i),
                ArgValue::I64(i) => builder.arg(i),
                ArgValue::F32(f) => builder.arg(f),
                ArgValue::TensorMap(m) => builder.arg(m),
            };
        }
        let cfg = LaunchConfig {
            grid_dim: (launch.grid[0], launch.grid[1], launch.grid[2]),
            block_dim: (launch.block[0], launch.block[1], launch.block[2]),
            shared_mem_bytes: launch.dynamic_smem,
        };
        // SAFETY: the argument list follows the kernel's parameter list, as its stage crate
        // declares it; buffers are live for the whole run; a cooperative launch's grid was
        // found to fit the device at prepare.
        let launched = unsafe {
            if cooperative {
                builder.launch_cooperative(cfg)
            } else {
                builder.launch(cfg)
            }
        };
        let how = if cooperative { " cooperatively" } else { "" };
        launched.map_err(driver_err(format!("launching {}{how}", launch.entry)))?;
        Ok(())
    }

    /// Enqueues a pipeline's chunks: each on its stream, its input ranges copied in from
    /// pinned host memory, its launches, its output ranges copied back. The pipeline streams
    /// start after the once-only steps of the main stream (fork) and the main stream goes on,
    /// to the event that ends the timed span, only once every chunk is back (join). Chunks
    /// touch disjoint ranges of the buffers, so streams need no other ordering.
    fn enqueue_chunks(&self, p: &PipeRun) -> Result<(), DeviceError> {
        let main = &self.state.stream;
        let err = || driver_err("ordering the pipeline's streams");
        p.fork.record(main).map_err(err())?;
        for s in &p.streams {
            s.wait(&p.fork).map_err(err())?;
        }
        for (j, c) in p.pipeline.chunks.iter().enumerate() {
            let stream = &p.streams[p.pipeline.stream_of(j)];
            for s in &c.upload {
                let Buf::Input(i) = s.at.buf else {
                    unreachable!("checked at prepare: uploads go into inputs")
                };
                let host = p.inputs[i]
                    .as_ref()
                    .expect("a pinned copy of every uploaded input");
                let width = self.plan.inputs[i].bytes();
                let (from, bytes) = (s.at.offset * width, s.len * width);
                assert!(from + bytes <= host.len, "checked at prepare");
                // SAFETY: the range lies inside the pinned buffer (asserted) and the device
                // buffer (checked at prepare); both stay alive and unmoved for the whole run.
                unsafe {
                    let src = std::slice::from_raw_parts(host.ptr.add(from), bytes);
                    cudarc::driver::result::memcpy_htod_async(
                        self.ptr(s.at),
                        src,
                        stream.cu_stream(),
                    )
                }
                .map_err(driver_err(format!("copying chunk {j} in")))?;
            }
            for k in c.steps.clone() {
                let Step::Kernel(l) = &self.plan.steps[k] else {
                    unreachable!("checked at prepare: chunks hold launches only")
                };
                self.launch(l, &self.functions[k], stream)?;
            }
            for s in &c.download {
                let width = self.output.dtype.bytes();
                let (from, bytes) = (s.at.offset * width, s.len * width);
                assert!(from + bytes <= p.output.len, "checked at prepare");
                // SAFETY: as for the upload; the host reads this buffer only after the main
                // stream, which waits for every chunk, is synchronized.
                unsafe {
                    let dst = std::slice::from_raw_parts_mut(p.output.ptr.add(from), bytes);
                    cudarc::driver::result::memcpy_dtoh_async(
                        dst,
                        self.ptr(s.at),
                        stream.cu_stream(),
                    )
                }
                .map_err(driver_err(format!("copying chunk {j} out")))?;
            }
        }
        for (s, e) in p.streams.iter().zip(&p.joins) {
            e.record(s).map_err(err())?;
            main.wait(e).map_err(err())?;
        }
        Ok(())
    }

    fn gemm(&self, g: &GemmCall) -> Result<(), DeviceError> {
        use cudarc::cublas::sys::{
            cublasComputeType_t, cublasGemmAlgo_t, cublasOperation_t, cudaDataType,
        };
        let blas = self
            .state
            .blas
            .as_ref()
            .map_err(|why| DeviceError::Unavailable(format!("cuBLAS unavailable: {why}")))?;
        let (m, n, k) = (g.m as i32, g.n as i32, g.k as i32);
        // cuBLAS is column-major: row-major C = A*B is column-major C^T = B^T * A^T, so the
        // operands swap; a transposed B (W[N,K]) becomes op = T with leading dimension K.
        let (op_b, ldb) = if g.b_transposed {
            (cublasOperation_t::CUBLAS_OP_T, k)
        } else {
            (cublasOperation_t::CUBLAS_OP_N, n)
        };
        let (alpha, beta) = (g.alpha, 0.0f32);
        let (in_type, compute_type) = match g.compute {
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
            GemmCompute::Bf16 => (
                cudaDataType::CUDA_R_16BF,
                cublasComputeType_t::CUBLAS_COMPUTE_32F,
            ),
        };
        let (pa, pb, pc) = (self.ptr(g.a), self.ptr(g.b), self.ptr(g.c));
        // SAFETY: pointers are live device buffers sized for this shape by the plan.
        let r = unsafe {
            if g.compute == GemmCompute::Fp32 && g.batch == 1 {
                cudarc::cublas::result::sgemm(
                    *blas.handle(),
                    op_b,
                    cublasOperation_t::CUBLAS_OP_N,
                    n,
                    m,
                    k,
                    &alpha,
                    pb as *const f32,
                    ldb,
                    pa as *const f32,
                    k,
                    &beta,
                    pc as *mut f32,
                    n,
                )
            } else {
                cudarc::cublas::result::gemm_strided_batched_ex(
                    *blas.handle(),
                    op_b,
                    cublasOperation_t::CUBLAS_OP_N,
                    n,
                    m,
                    k,
                    (&alpha as *const f32).cast(),
                    pb as *const _,
                    in_type,
                    ldb,
                    g.stride_b as i64,
                    pa as *const _,
                    in_type,
                    k,
                    g.stride_a as i64,
                    (&beta as *const f32).cast(),
                    pc as *mut _,
                    cudaDataType::CUDA_R_32F,
                    n,
                    g.stride_c as i64,
                    g.batch as i32,
                    compute_type,
                    cublasGemmAlgo_t::CUBLAS_GEMM_DEFAULT,
                )
            }
        };
        r.map_err(|e| DeviceError::Driver {
            what: format!(
                "cuBLAS GEMM {}x{}x{} x{} ({:?})",
                g.m, g.n, g.k, g.batch, g.compute
            ),
            detail: format!("{e:?}"),
        })
    }

    fn sync(&self) -> Result<(), DeviceError> {
        let mut names: Vec<String> = self.plan.launches().map(|l| l.entry.to_string()).collect();
        names.dedup(); // a pipeline launches one kernel per chunk
        self.state
            .stream
            .synchronize()
            .map_err(driver_err(format!("running {}", names.join(" + "))))
    }
}

enum ArgValue {
    Ptr(u64),
    I32(i32),
    I64(i64),
    F32(f32),
    /// The 128 opaque bytes of a `CUtensorMap`, passed by value.
    TensorMap([u64; 16]),
}

/// Encodes a TMA tensor map over `map`'s buffer at device address `ptr`
/// (`cuTensorMapEncodeTiled`): interleave none, L2 promotion by 256 B, zeros for elements
/// outside the view (the kernels' tails).
fn encode_tensor_map(map: &TensorMap, dtype: Dtype, ptr: u64) -> Result<[u64; 16], DeviceError> {
    use cudarc::driver::sys::{
        CUtensorMap, CUtensorMapDataType, CUtensorMapFloatOOBfill, CUtensorMapInterleave,
        CUtensorMapL2promotion, CUtensorMapSwizzle, cuTensorMapEncodeTiled,
    };
    let e = map.encoding(dtype)?;
    let data_type = match dtype {
        Dtype::F32 => CUtensorMapDataType::CU_TENSOR_MAP_DATA_TYPE_FLOAT32,
        Dtype::F16 => CUtensorMapDataType::CU_TENSOR_MAP_DATA_TYPE_FLOAT16,
        Dtype::Bf16 => CUtensorMapDataType::CU_TENSOR_MAP_DATA_TYPE_BFLOAT16,
        // The TMA moves FP8 as bytes.
        Dtype::E4m3 | Dtype::E5m2 | Dtype::S8 => CUtensorMapDataType::CU_TENSOR_MAP_DATA_TYPE_UINT8,
        Dtype::I32 => CUtensorMapDataType::CU_TENSOR_MAP_DATA_TYPE_INT32,
    };
    let swizzle = match map.swizzle {
        TmaSwizzle::None => CUtensorMapSwizzle::CU_TENSOR_MAP_SWIZZLE_NONE,
        TmaSwizzle::B32 => CUtensorMapSwizzle::CU_TENSOR_MAP_SWIZZLE_32B,
        TmaSwizzle::B64 => CUtensorMapSwizzle::CU_TENSOR_MAP_SWIZZLE_64B,
        TmaSwizzle::B128 => CUtensorMapSwizzle::CU_TENSOR_MAP_SWIZZLE_128B,
    };
    let mut out = std::mem::MaybeUninit::<CUtensorMap>::zeroed();
    // SAFETY: every array holds at least the rank's entries (and one stride fewer); `out` is
    // a writable CUtensorMap; `ptr` is a live device allocation holding the whole view.
    unsafe {
        cuTensorMapEncodeTiled(
            out.as_mut_ptr(),
            data_type,
            e.rank,
            ptr as *mut std::ffi::c_void,
            e.global_dim.as_ptr(),
            e.global_strides.as_ptr(),
            e.box_dim.as_ptr(),
            e.element_strides.as_ptr(),
            CUtensorMapInterleave::CU_TENSOR_MAP_INTERLEAVE_NONE,
            swizzle,
            CUtensorMapL2promotion::CU_TENSOR_MAP_L2_PROMOTION_L2_256B,
            CUtensorMapFloatOOBfill::CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE,
        )
    }
    .result()
    .map_err(driver_err(format!("encoding a tensor map ({map:?})")))?;
    // SAFETY: zero-initialized, then written by the driver; plain integers.
    Ok(unsafe { out.assume_init() }.opaque)
}

impl Prepared for CudaRun<'_> {
    fn run(&mut self) -> Result<(), DeviceError> {
        if let Some(p) = &self.pipe {
            // SAFETY: no copy is in flight (every run ends synchronized); the buffer holds
            // `len` bytes.
            unsafe { std::ptr::write_bytes(p.output.ptr, 0xFF, p.output.len) };
        }
        self.fill_buffers()?;
        self.enqueue()?;
        self.sync()
    }

    fn output(&mut self) -> Result<Vec<f32>, DeviceError> {
        if let Some(p) = &self.pipe {
            self.sync()?;
            // SAFETY: the run is synchronized, so every download into the buffer is done.
            let bytes = unsafe { std::slice::from_raw_parts(p.output.ptr, p.output.len) };
            return Ok(self.output.dtype.decode(bytes));
        }
        let bytes = self
            .state
            .stream
            .clone_dtoh(&self.output.slice)
            .map_err(driver_err("downloading the output"))?;
        Ok(self.output.dtype.decode(&bytes))
    }

    fn inputs_written(&mut self) -> Result<Vec<usize>, DeviceError> {
        self.sync()?;
        let uploaded = self.plan.uploaded_inputs();
        let mut written = Vec::new();
        for (i, (slice, dtype)) in self.inputs.iter().zip(&self.plan.inputs).enumerate() {
            if uploaded.contains(&i) {
                continue;
            }
            let now = self
                .state
                .stream
                .clone_dtoh(slice)
                .map_err(driver_err("downloading an input"))?;
            if now != dtype.encode(&self.host_inputs[i]) {
                written.push(i);
            }
        }
        Ok(written)
    }

    fn time(&mut self, iters: u64) -> Result<Duration, DeviceError> {
        let iters = iters as usize;
        while self.events.len() < iters {
            let ev = |ctx: &Arc<CudaContext>| {
                ctx.new_event(Some(CUevent_flags::CU_EVENT_DEFAULT))
                    .map_err(driver_err("creating a timing event"))
            };
            self.events
                .push((ev(&self.state.ctx)?, ev(&self.state.ctx)?));
        }
        for (i, (start, end)) in self.events.iter().take(iters).enumerate() {
            // Fill first, flush second: the filled output must not sit dirty in L2 when the
            // timed span starts.
            self.fill_buffers()?;
            self.flush_l2(i as u64)?;
            start
                .record(&self.state.stream)
                .map_err(driver_err("recording an event"))?;
            self.enqueue()?;
            end.record(&self.state.stream)
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

    fn time_steps(&mut self, iters: u64) -> Option<Result<Vec<Duration>, DeviceError>> {
        // A pipeline's chunks overlap on several streams: its steps have no time alone.
        (self.pipe.is_none()).then(|| self.steps_alone(iters.max(1)))
    }

    fn time_replay(&mut self, iters: u64) -> Option<Result<(Duration, Duration), DeviceError>> {
        (self.pipe.is_none()).then(|| self.streamed_and_graphed(iters.max(1)))
    }
}

impl Executor for CudaDevice {
    fn kind(&self) -> DeviceKind {
        DeviceKind::Cuda
    }

    fn precompile(&self, sources: &[&CudaSource]) {
        nvrtc::precompile(sources, &self.arch);
    }

    fn info(&self) -> &DeviceInfo {
        &self.info
    }

    fn can_run(&self, kernel: &dyn Kernel) -> Result<(), Unsupported> {
        let info = kernel.info();
        // A probe shape only tells whether the kernel has a GPU description at all.
        match kernel.cuda(&info.workload.probe_shape()) {
            Some(plan) => {
                // An sm_90a rung on an A100 or a Blackwell: no code for this GPU.
                nvrtc::check_target(&plan, &self.arch)?;
                if plan.uses_library()
                    && let Err(why) = self.cublas_status()
                {
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
        let state = self.state();
        if let Ok((free, total)) = state.ctx.mem_get_info() {
            let need = plan.device_bytes(shape);
            if need + (64 << 20) > free {
                return Err(DeviceError::OutOfMemory {
                    shape: shape.to_string(),
                    needed_mib: (need >> 20) as u64,
                    free_mib: (free >> 20) as u64,
                    total_mib: (total >> 20) as u64,
                });
            }
        }
        // A batch pipeline's host buffers are page-locked: limited apart from device memory.
        super::pinned::check(
            &shape.to_string(),
            plan.pinned_host_bytes(shape),
            super::pinned::ram_bytes(),
        )?;
        let mut functions = Vec::new();
        let mut symbols = Vec::new();
        for step in &plan.steps {
            symbols.push(match step {
                Step::Constant(c) => {
                    let dtype = match c.from.buf {
                        Buf::Input(i) => plan.inputs.get(i).copied().unwrap_or_default(),
                        Buf::Output => plan.output,
                        Buf::Scratch(i) => plan.scratch.get(i).map(|s| s.dtype).unwrap_or_default(),
                    };
                    Some(state.symbol(c, c.len * dtype.bytes(), &self.arch)?)
                }
                _ => None,
            });
            functions.push(match step {
                Step::Kernel(l) => {
                    let f = state.function(&l.source, &l.entry, &self.arch)?;
                    let static_smem = f
                        .shared_size_bytes()
                        .map_err(driver_err(format!("reading {}'s shared memory", l.entry)))?;
                    let opt_in = dynamic_smem_opt_in(
                        &l.entry,
                        static_smem.max(0) as u32,
                        l.dynamic_smem,
                        self.smem_optin,
                    )?;
                    if let Some(bytes) = opt_in {
                        f.set_attribute(
                            CUfunction_attribute::CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
                            bytes as i32,
                        )
                        .map_err(driver_err(format!(
                            "opting {} into {bytes} B of dynamic shared memory",
                            l.entry
                        )))?;
                    }
                    if plan.cooperative.contains(&l.entry) {
                        self.check_cooperative(l, &f)?;
                    }
                    Some(f)
                }
                Step::Library(_) | Step::Constant(_) => None,
            });
        }
        let specs = shape.inputs();
        if let Some(p) = &plan.pipeline {
            let len_of = |b: Buf| match b {
                Buf::Input(i) => specs.get(i).map_or(0, |s| s.len()),
                Buf::Output => shape.output().len(),
                Buf::Scratch(i) => plan.scratch.get(i).map_or(0, |s| s.len),
            };
            p.check(&plan, len_of)
                .map_err(|why| Unsupported(format!("pipeline: {why}")))?;
        }
        let uploaded = plan.uploaded_inputs();
        let mut dev_inputs = Vec::new();
        let mut pinned_inputs = Vec::new();
        for (i, ((data, dtype), spec)) in inputs.iter().zip(&plan.inputs).zip(&specs).enumerate() {
            if uploaded.contains(&i) {
                // A pipeline's input starts in pinned host memory; the chunks copy it over.
                let bytes = dtype.encode(data);
                dev_inputs.push(state.alloc(bytes.len(), spec.name)?);
                pinned_inputs.push(Some(Pinned::new(&state.ctx, &bytes, spec.name)?));
            } else {
                dev_inputs.push(state.upload(data, *dtype, spec.name)?);
                pinned_inputs.push(None);
            }
        }
        let pipe = match &plan.pipeline {
            None => None,
            Some(p) => {
                let out_len = shape.output().len();
                let event = || {
                    state
                        .ctx
                        .new_event(Some(CUevent_flags::CU_EVENT_DISABLE_TIMING))
                        .map_err(driver_err("creating a pipeline event"))
                };
                let mut streams = Vec::new();
                let mut joins = Vec::new();
                for _ in 0..p.streams {
                    streams.push(
                        state
                            .ctx
                            .new_stream()
                            .map_err(driver_err("creating a pipeline stream"))?,
                    );
                    joins.push(event()?);
                }
                let output = Fill::Nan.bytes(plan.output, out_len);
                Some(PipeRun {
                    pipeline: p.clone(),
                    streams,
                    fork: event()?,
                    joins,
                    inputs: pinned_inputs,
                    output: Pinned::new(&state.ctx, &output, "the output")?,
                })
            }
        };
        let buffer = |len: usize, dtype: Dtype, fill: Fill, what: &str| {
            let slice = state.alloc(len * dtype.bytes(), what)?;
            let pattern = match fill.byte(dtype) {
                Some(_) => None,
                None => Some(
                    state
                        .stream
                        .clone_htod(
                            &plan
                                .start_bytes(fill, dtype, len, inputs)
                                .map_err(|why| DeviceError::Unsupported(Unsupported(why)))?,
                        )
                        .map_err(driver_err(format!("uploading the fill of {what}")))?,
                ),
            };
            Ok::<_, DeviceError>(DevBuf {
                slice,
                dtype,
                fill,
                pattern,
            })
        };
        let output = buffer(
            shape.output().len(),
            plan.output,
            plan.output_fill,
            "the output",
        )?;
        let mut scratch = Vec::new();
        for s in &plan.scratch {
            scratch.push(buffer(s.len, s.dtype, s.fill, &s.name)?);
        }
        let mut run = CudaRun {
            state,
            plan,
            host_inputs: inputs,
            functions,
            symbols,
            inputs: dev_inputs,
            output,
            scratch,
            events: Vec::new(),
            maps: HashMap::new(),
            map_copies: HashMap::new(),
            pipe,
        };
        run.encode_maps()?;
        Ok(Box::new(run))
    }

    fn recover(&self) -> Result<(), DeviceError> {
        // A fresh (non-primary) context: the faulted one is destroyed once the last prepared
        // run still holding it is dropped, and nothing of it is reused.
        let ctx = CudaContext::new_non_primary(0, 0)
            .map_err(driver_err("creating a fresh context after a fault"))?;
        let fresh = State::new(
            ctx,
            self.info.l2_bytes.unwrap_or(0),
            self.cublas_missing.as_deref(),
        )?;
        *self.state.write().unwrap_or_else(|p| p.into_inner()) = Arc::new(fresh);
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_cooperative_grid_must_fit_the_device_at_once() {
        let launch = Launch {
            source: CudaSource::embedded("k.cu", ""),
            entry: "reduce_all".into(),
            grid: [133, 2, 1],
            block: [256, 1, 1],
            dynamic_smem: 4096,
            args: Vec::new(),
        };
        assert!(cooperative_fits(&launch, 2, 133).is_ok());
        let why = cooperative_fits(&launch, 2, 132).unwrap_err().0;
        assert_eq!(
            why,
            "reduce_all: a cooperative launch needs all 266 blocks resident at once; 2 fit an SM \
             (256 threads, 4096 B of dynamic shared memory) x 132 SMs = 264"
        );
    }

    #[test]
    fn faults_are_sticky_and_ordinary_errors_are_not() {
        assert!(is_sticky(CUresult::CUDA_ERROR_ILLEGAL_ADDRESS));
        assert!(is_sticky(CUresult::CUDA_ERROR_LAUNCH_FAILED));
        assert!(is_sticky(CUresult::CUDA_ERROR_MISALIGNED_ADDRESS));
        assert!(!is_sticky(CUresult::CUDA_ERROR_OUT_OF_MEMORY));
        assert!(!is_sticky(CUresult::CUDA_ERROR_INVALID_VALUE));
        let lost = driver_err("launching k")(DriverError(CUresult::CUDA_ERROR_ILLEGAL_ADDRESS));
        assert!(lost.is_lost(), "{lost}");
        assert!(lost.to_string().contains("launching k"), "{lost}");
        let plain = driver_err("launching k")(DriverError(CUresult::CUDA_ERROR_INVALID_VALUE));
        assert!(!plain.is_lost());
    }

    #[test]
    fn shared_memory_over_48k_is_opted_in_counting_static_and_dynamic() {
        let k = 1024;
        assert_eq!(
            dynamic_smem_opt_in("k", 16 * k, 32 * k, 227 * k).unwrap(),
            None
        );
        // 40 KB static + 16 KB dynamic passes 48 KB although the dynamic part alone does not.
        assert_eq!(
            dynamic_smem_opt_in("k", 40 * k, 16 * k, 227 * k).unwrap(),
            Some(16 * k)
        );
        assert_eq!(
            dynamic_smem_opt_in("k", 0, 100 * k, 227 * k).unwrap(),
            Some(100 * k)
        );
        let e = dynamic_smem_opt_in("gemm_big", 8 * k, 224 * k, 227 * k).unwrap_err();
        assert!(
            e.to_string().contains("gemm_big needs 237568 B") && e.to_string().contains("232448"),
            "{e}"
        );
    }

    #[test]
    fn an_old_driver_is_refused_with_both_versions() {
        let e = check_driver_version(12040, Some("550.54.15")).unwrap_err();
        let t = e.to_string();
        assert!(
            t.contains("550.54.15") && t.contains("CUDA 12.4") && t.contains("CUDA 13.0"),
            "{t}"
        );
        assert!(t.contains("R580"), "{t}");
        assert!(check_driver_version(13000, None).is_ok());
        assert!(check_driver_version(13010, None).is_ok());
    }

    /// The device's work runs on a stream it creates: the legacy default stream refuses graph
    /// capture (`CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED`, which stopped the CNN's batch sweep
    /// on an H200), so no code here may take it.
    #[test]
    fn no_work_goes_to_the_legacy_stream() {
        let source = include_str!("device.rs");
        let call = concat!(".default", "_stream(");
        let per_thread = concat!(".per_thread", "_stream(");
        for (n, line) in source.lines().enumerate() {
            assert!(
                !line.contains(call) && !line.contains(per_thread),
                "device.rs:{}: {line}",
                n + 1
            );
        }
        assert!(source.contains(".new_stream()"));
    }
}
