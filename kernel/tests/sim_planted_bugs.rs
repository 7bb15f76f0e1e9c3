//! The simulator against small inline kernels: planted bugs it must catch (a missing barrier,
//! an off-by-one, out-of-bounds writes) and the CUDA features it must get right (warp
//! shuffles, atomics, dynamic shared memory, half, WMMA, barriers after threads exit).

use kernel::sim::SimDevice;
use kernel::testing::{gemm_f64, inputs, relative_error, source_line};
use kernel::{
    Arg, Buf, CudaPlan, CudaSource, DeviceError, Dtype, Executor, GemmCall, GemmCompute, Kernel,
    KernelInfo, Launch, LibraryCall, Precision, Role, Scratch, Shape, Stage, Step, Workload,
};

/// A kernel made of a fixed plan, as a test needs it.
struct TestKernel {
    id: &'static str,
    plan: CudaPlan,
    gpu_only: Option<&'static str>,
}

impl Kernel for TestKernel {
    fn info(&self) -> KernelInfo {
        KernelInfo {
            id: self.id.into(),
            workload: Workload::Gemm,
            stage: Stage::Baseline,
            precision: Precision::Fp32,
            role: Role::Rung,
            rung: 0,
            summary: "a simulator test kernel".into(),
        }
    }

    fn cuda(&self, _shape: &Shape) -> Option<CudaPlan> {
        Some(self.plan.clone())
    }

    fn gpu_only(&self) -> Option<&'static str> {
        self.gpu_only
    }
}

fn src(code: &'static str) -> CudaSource {
    CudaSource::embedded("tests/inline.cu", code)
}

fn launch(code: &'static str, entry: &'static str, grid: [u32; 3], block: [u32; 3]) -> Launch {
    Launch {
        source: src(code),
        entry: entry.into(),
        grid,
        block,
        dynamic_smem: 0,
        args: Vec::new(),
    }
}

fn gemm_args(m: usize, n: usize, k: usize) -> Vec<Arg> {
    vec![
        Arg::Ptr(Buf::Input(0)),
        Arg::Ptr(Buf::Input(1)),
        Arg::Ptr(Buf::Output),
        Arg::I32(m as i32),
        Arg::I32(n as i32),
        Arg::I32(k as i32),
    ]
}

/// Runs `plan` on `shape` in the simulator and returns the output.
fn run(plan: CudaPlan, shape: Shape, inputs: &[Vec<f32>]) -> Result<Vec<f32>, DeviceError> {
    let dev = SimDevice::new()?;
    let k = TestKernel {
        id: "test",
        plan,
        gpu_only: None,
    };
    let mut p = dev.prepare(&k, &shape, inputs)?;
    p.run()?;
    p.output()
}

fn sim_error(r: Result<Vec<f32>, DeviceError>) -> String {
    match r {
        Err(DeviceError::Sim(msg)) => {
            eprintln!("report: {msg}");
            msg
        }
        Err(other) => panic!("expected a simulator report, got {other}"),
        Ok(_) => panic!("expected a simulator report, the run succeeded"),
    }
}

// ---- Planted bugs ----

const TILED: &str = r#"
#define T 16
extern "C" __global__ void tiled(const float *A, const float *B, float *C, int M, int N, int K) {
    __shared__ float As[T][T];
    __shared__ float Bs[T][T];
    int tx = threadIdx.x, ty = threadIdx.y;
    int row = blockIdx.y * T + ty, col = blockIdx.x * T + tx;
    float acc = 0.0f;
    for (int k0 = 0; k0 < K; k0 += T) {
        As[ty][tx] = (row < M && k0 + tx < K) ? A[row * K + k0 + tx] : 0.0f;
        Bs[ty][tx] = (k0 + ty < K && col < N) ? B[(k0 + ty) * N + col] : 0.0f;
        __syncthreads();
        for (int k = 0; k < T; ++k) acc += As[ty][k] * Bs[k][tx];
        __syncthreads();
    }
    if (row < M && col < N) C[row * N + col] = acc;
}
"#;

const TILED_NO_FIRST_SYNC: &str = r#"
#define T 16
extern "C" __global__ void tiled_racy(const float *A, const float *B, float *C, int M, int N, int K) {
    __shared__ float As[T][T];
    __shared__ float Bs[T][T];
    int tx = threadIdx.x, ty = threadIdx.y;
    int row = blockIdx.y * T + ty, col = blockIdx.x * T + tx;
    float acc = 0.0f;
    for (int k0 = 0; k0 < K; k0 += T) {
        As[ty][tx] = (row < M && k0 + tx < K) ? A[row * K + k0 + tx] : 0.0f;
        Bs[ty][tx] = (k0 + ty < K && col < N) ? B[(k0 + ty) * N + col] : 0.0f;
        // BUG: no __syncthreads() here; other threads' elements may not be loaded yet.
        for (int k = 0; k < T; ++k) acc += As[ty][k] * Bs[k][tx];
        __syncthreads();
    }
    if (row < M && col < N) C[row * N + col] = acc;
}
"#;

fn tiled_plan(code: &'static str, entry: &'static str, m: usize, n: usize, k: usize) -> CudaPlan {
    let mut l = launch(
        code,
        entry,
        [n.div_ceil(16) as u32, m.div_ceil(16) as u32, 1],
        [16, 16, 1],
    );
    l.args = gemm_args(m, n, k);
    CudaPlan::single(2, l)
}

#[test]
fn tiled_gemm_is_right_and_a_missing_barrier_is_wrong() {
    let (m, n, k) = (40, 36, 50);
    let shape = Shape::gemm(m, n, k);
    let data = inputs(&shape, 0x1234_5678);
    let reference = gemm_f64((m, n, k), &data[0], &data[1], |x| x);
    let good = run(tiled_plan(TILED, "tiled", m, n, k), shape, &data).unwrap();
    assert!(relative_error(&good, &reference) <= 1e-5);
    let bad = run(
        tiled_plan(TILED_NO_FIRST_SYNC, "tiled_racy", m, n, k),
        shape,
        &data,
    )
    .unwrap();
    let err = relative_error(&bad, &reference);
    assert!(
        err > 1e-2,
        "the race went unnoticed: relative error {err:e}"
    );
}

const NAIVE_OFF_BY_ONE: &str = r#"
extern "C" __global__ void naive_obo(const float *A, const float *B, float *C, int M, int N, int K) {
    int row = blockIdx.y * blockDim.y + threadIdx.y, col = blockIdx.x * blockDim.x + threadIdx.x;
    if (row >= M || col >= N) return;
    float acc = 0.0f;
    for (int k = 0; k <= K; ++k) acc += A[row * K + k] * B[k * N + col];  // BUG: <= K
    C[row * N + col] = acc;
}
"#;

#[test]
fn an_off_by_one_is_caught() {
    let (m, n, k) = (20, 24, 12);
    let shape = Shape::gemm(m, n, k);
    let data = inputs(&shape, 0x1234_5678);
    let mut l = launch(NAIVE_OFF_BY_ONE, "naive_obo", [2, 3, 1], [16, 8, 1]);
    l.args = gemm_args(m, n, k);
    match run(CudaPlan::single(2, l), shape, &data) {
        Err(DeviceError::Sim(msg)) => {
            assert!(
                msg.contains("naive_obo") && msg.contains("out-of-bounds read"),
                "{msg}"
            )
        }
        Err(e) => panic!("unexpected error {e}"),
        Ok(out) => {
            let err = relative_error(&out, &gemm_f64((m, n, k), &data[0], &data[1], |x| x));
            assert!(err > 1e-3, "the off-by-one went unnoticed: {err:e}");
        }
    }
}

const WRITE_PAST_END: &str = r#"
extern "C" __global__ void scale_oob(const float *x, float *y, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i <= n) y[i] = 2.0f * (float)i;  // BUG: i <= n
}
"#;

const WRITE_BEFORE_START: &str = r#"
extern "C" __global__ void shift_oob(const float *x, float *y, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i - 1] = x[i];  // BUG: i - 1 is -1 for the first thread
}
"#;

/// `x` and `y` of `n` elements: input A of shape n x 1, output C of n x 1.
fn vector_plan(code: &'static str, entry: &'static str, n: usize, block: u32) -> CudaPlan {
    let mut l = launch(
        code,
        entry,
        [n.div_ceil(block as usize) as u32, 1, 1],
        [block, 1, 1],
    );
    l.args = vec![
        Arg::Ptr(Buf::Input(0)),
        Arg::Ptr(Buf::Output),
        Arg::I32(n as i32),
    ];
    CudaPlan::single(2, l)
}

#[test]
fn a_write_past_the_end_is_reported_with_buffer_thread_and_index() {
    let n = 1000;
    let shape = Shape::gemm(n, 1, 1);
    let msg = sim_error(run(
        vector_plan(WRITE_PAST_END, "scale_oob", n, 128),
        shape,
        &inputs(&shape, 0x1234_5678),
    ));
    for want in [
        "scale_oob",
        "out-of-bounds write past the end of buffer 'C'",
        "element 1000",
        "thread (104,0,0)",
        "block (7,0,0)",
    ] {
        assert!(msg.contains(want), "{want:?} missing from: {msg}");
    }
}

const READ_ONE_PAST_END: &str = r#"
extern "C" __global__ void copy_obo(const float *x, float *y, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i <= n) y[i] = 2.0f * x[i];  // BUG: i <= n
}
"#;

/// One element past the end of a buffer whose size is not a multiple of 16 bytes lies in the
/// padding before its guard page, where nothing faults (a GPU's allocations are rounded up
/// too): the instrumented build names the read, its buffer, element and line.
#[test]
fn a_read_one_past_the_end_into_the_alignment_padding_is_reported() {
    for n in [1, 3, 1001] {
        let shape = Shape::gemm(n, 1, 1);
        let k = TestKernel {
            id: "test",
            plan: vector_plan(READ_ONE_PAST_END, "copy_obo", n, 128),
            gpu_only: None,
        };
        let dev = SimDevice::new().unwrap().instrumented();
        let msg = sim_error(
            dev.prepare(&k, &shape, &inputs(&shape, 7))
                .and_then(|mut p| p.run().and_then(|()| p.output())),
        );
        let line = READ_ONE_PAST_END
            .lines()
            .position(|l| l.contains("x[i]"))
            .unwrap();
        for want in [
            format!("out-of-bounds read past the end of buffer 'A' at element {n}"),
            format!("the buffer holds {n} element"),
            format!("inline.cu:{}", line + 1),
        ] {
            assert!(msg.contains(&want), "{want:?} missing from: {msg}");
        }
    }
}

const EVERY_BLOCK_WRITES_PAST_END: &str = r#"
extern "C" __global__ void every_block_oob(const float *x, float *y, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    float s = 0.0f;
    for (int k = 0; k < 64; ++k) s += x[(i + k) % n];
    // BUG: one thread of every block writes past the end, each block at its own element.
    if (threadIdx.x == 3) y[n + blockIdx.x] = s;
    else if (i < n) y[i] = s;
}
"#;

/// Every block fails: the report names the block a run on one OS thread meets first, however
/// many OS threads share the blocks and whichever of them fails first.
#[test]
fn a_failure_reported_is_the_same_however_many_threads_run_the_blocks() {
    let n = 64 * 64;
    let shape = Shape::gemm(n, 1, 1);
    let data = inputs(&shape, 0x5eed);
    let report = |threads: usize| {
        let dev = SimDevice::new().unwrap().with_threads(threads);
        let k = TestKernel {
            id: "test",
            plan: vector_plan(EVERY_BLOCK_WRITES_PAST_END, "every_block_oob", n, 64),
            gpu_only: None,
        };
        let mut p = dev.prepare(&k, &shape, &data).unwrap();
        sim_error(p.run().and_then(|_| p.output()))
    };
    let alone = report(1);
    assert!(
        alone.contains("out-of-bounds write past the end of buffer 'C'"),
        "{alone}"
    );
    for _ in 0..6 {
        assert_eq!(report(8), alone);
    }
}

#[test]
fn a_write_before_the_start_is_reported() {
    let n = 300;
    let shape = Shape::gemm(n, 1, 1);
    let msg = sim_error(run(
        vector_plan(WRITE_BEFORE_START, "shift_oob", n, 64),
        shape,
        &inputs(&shape, 0x1234_5678),
    ));
    for want in [
        "shift_oob",
        "before the start of buffer 'C'",
        "element -1",
        "thread (0,0,0)",
        "block (0,0,0)",
    ] {
        assert!(msg.contains(want), "{want:?} missing from: {msg}");
    }
}

/// A window of eight values in a local array, read back at an offset: `shift` -1 reads one
/// before it, 8 one past it.
const LOCAL_WINDOW: &str = r#"
extern "C" __global__ void window(const float *x, float *y, int n, int shift) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    float w[8];
    for (int k = 0; k < 8; ++k) w[k] = x[(i + k) % n];
    int at = threadIdx.x % 8;
    if (threadIdx.x == 3) at = shift < 0 ? shift : 7 + shift;  // BUG for shift != 0
    if (i < n) y[i] = w[at];
}
"#;

#[test]
fn an_index_outside_a_local_array_is_reported_where_it_happens() {
    let n = 64;
    let shape = Shape::gemm(n, 1, 1);
    let plan = |shift: i32| {
        let mut plan = vector_plan(LOCAL_WINDOW, "window", n, 32);
        if let Some(Step::Kernel(l)) = plan.steps.first_mut() {
            l.args.push(Arg::I32(shift));
        }
        plan
    };
    let x = inputs(&shape, 0x5eed);
    // In bounds, the window reads its own values.
    let y = run(plan(0), shape, &x).expect("shift 0 stays in the window");
    assert_eq!(y[5], x[0][10]);
    for (shift, index) in [(-1, "-1"), (1, "8")] {
        let msg = sim_error(run(plan(shift), shape, &x));
        for want in [
            "window: tests/inline.cu:8: index ",
            &format!(
                "index {index} is outside the array `w` (of type 'float [8]'), in \
                 `if (i < n) y[i] = w[at];`"
            ),
            "thread (3,0,0)",
        ] {
            assert!(msg.contains(want), "{want:?} missing from: {msg}");
        }
    }
}

/// A local array filled by a `__device__` function through a pointer: `extra` values past
/// its end. Inside the callee the array is a pointer, whose size only the inlined call shows.
const FILL_THROUGH_POINTER: &str = r#"
__device__ void fill(float *vals, const float *x, int count) {
    for (int k = 0; k < count; ++k) vals[k] = x[k];
}
extern "C" __global__ void through(const float *x, float *y, int n, int extra) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    float w[4];
    fill(w, x, threadIdx.x == 5 ? 4 + extra : 4);  // BUG for extra > 0
    if (i < n) y[i] = w[0] + w[3];
}
"#;

#[test]
fn a_write_past_a_local_array_through_a_pointer_is_reported_at_its_line() {
    let n = 64;
    let shape = Shape::gemm(n, 1, 1);
    let plan = |extra: i32| {
        let mut plan = vector_plan(FILL_THROUGH_POINTER, "through", n, 32);
        if let Some(Step::Kernel(l)) = plan.steps.first_mut() {
            l.args.push(Arg::I32(extra));
        }
        plan
    };
    let x = inputs(&shape, 0x5eed);
    let y = run(plan(0), shape, &x).expect("four values fill the array");
    assert_eq!(y[5], x[0][0] + x[0][3]);
    let msg = sim_error(run(plan(1), shape, &x));
    for want in [
        "through: tests/inline.cu:3: a write of 'float' to `vals[k]` goes past the end of the \
         array or variable its pointer points into, in `for (int k = 0; k < count; ++k) vals[k] \
         = x[k];`",
        "thread (5,0,0)",
    ] {
        assert!(msg.contains(want), "{want:?} missing from: {msg}");
    }
}

/// float4 copies with a scalar tail; `extra` planted elements written past the end.
const COPY4: &str = r#"
extern "C" __global__ void copy4(const float *x, float *y, int n, int extra) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n / 4) reinterpret_cast<float4 *>(y)[i] = __ldg(reinterpret_cast<const float4 *>(x) + i);
    if (i < n % 4) y[n / 4 * 4 + i] = x[n / 4 * 4 + i];
    if (i < extra) y[n + i] = 0.0f;  // BUG when extra > 0
}
"#;

#[test]
fn float4_on_odd_sizes_works_and_a_write_into_the_padding_is_caught() {
    let n = 1001; // 4004 bytes: the aligned start leaves 12 bytes of padding
    let shape = Shape::gemm(n, 1, 1);
    let data = inputs(&shape, 0x1234_5678);
    let plan = |extra: i32| {
        let mut p = vector_plan(COPY4, "copy4", n, 64);
        if let Step::Kernel(l) = &mut p.steps[0] {
            l.args.push(Arg::I32(extra));
        }
        p
    };
    let out = run(plan(0), shape, &data).unwrap();
    assert_eq!(out, data[0]);
    let msg = sim_error(run(plan(1), shape, &data));
    assert!(
        msg.contains("copy4: out-of-bounds write past the end of buffer 'C'"),
        "{msg}"
    );
}

/// Four floats a thread through cp.async, with no bounds check: the last block's copies read
/// past the end of x.
const COPY4_ASYNC: &str = r#"
extern "C" __global__ void copy4_async(const float *x, float *y, int n) {
    __shared__ float4 s[64];
    const int t = threadIdx.x, i = 4 * (blockIdx.x * 64 + t);
    const unsigned dst = (unsigned)__cvta_generic_to_shared(&s[t]);
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16;\n" ::"r"(dst), "l"(x + i));  // BUG
    asm volatile("cp.async.wait_all;\n" ::);
    for (int k = 0; k < 4; ++k)
        if (i + k < n) y[i + k] = (&s[t].x)[k];
}
"#;

/// A read that faults inside the simulator's emulation of the kernel's instruction (the copy
/// of a cp.async, outside the kernel's module under the sanitizer) names that instruction's
/// line, as a plain load's fault names its own.
#[test]
fn a_cp_async_reading_past_its_buffer_names_its_line() {
    let n = 300;
    let shape = Shape::gemm(n, 1, 1);
    let data = inputs(&shape, 0x1234_5678);
    let mut plan = vector_plan(COPY4_ASYNC, "copy4_async", n / 4, 64);
    if let Step::Kernel(l) = &mut plan.steps[0] {
        l.args[2] = Arg::I32(n as i32);
    }
    let k = TestKernel {
        id: "test",
        plan,
        gpu_only: None,
    };
    let dev = SimDevice::new().unwrap().instrumented();
    let msg = sim_error(
        dev.prepare(&k, &shape, &data)
            .and_then(|mut p| p.run().and_then(|()| p.output())),
    );
    let line = COPY4_ASYNC
        .lines()
        .position(|l| l.contains("// BUG"))
        .unwrap()
        + 1;
    assert!(
        msg.contains("copy4_async: out-of-bounds read past the end of buffer 'A'")
            && msg.ends_with(&format!(", at tests/inline.cu:{line}")),
        "{msg}"
    );
}

const BARRIER_AFTER_EXIT: &str = r#"
extern "C" __global__ void early_exit(const float *x, float *y, int n) {
    __shared__ float s[64];
    if (threadIdx.x >= 40) return;  // the barriers below wait for the 40 threads left
    s[threadIdx.x] = x[threadIdx.x];
    __syncthreads();
    const int count = __syncthreads_count(1), all = __syncthreads_and(1);
    y[threadIdx.x] = s[39 - threadIdx.x] + count + all;
}
// The same with a barrier of an id: without a count it is the whole block's, and goes on; a
// count of 64 waits for 64 threads, which 40 never make.
template <bool COUNTED>
__device__ void named(const float *x, float *y) {
    __shared__ float s[64];
    if (threadIdx.x >= 40) return;
    s[threadIdx.x] = x[threadIdx.x];
    if (COUNTED) asm volatile("bar.sync 2, 64;" ::: "memory");
    else asm volatile("bar.sync 1;" ::: "memory");
    y[threadIdx.x] = s[39 - threadIdx.x];
}
extern "C" __global__ void early_exit_named(const float *x, float *y, int n) { named<false>(x, y); }
extern "C" __global__ void early_exit_counted(const float *x, float *y, int n) { named<true>(x, y); }
"#;

/// Threads that have exited do not hold up a block's barrier (PTX ISA, exit: "If the exiting
/// threads are holding up the barrier, the barrier is released"), so the common
/// `if (i >= n) return;` before `__syncthreads()` runs as on a GPU, and the barrier reductions
/// count the threads that reached them.
#[test]
fn a_barrier_does_not_wait_for_threads_that_have_exited() {
    let shape = Shape::gemm(64, 1, 1);
    let x = inputs(&shape, 0x1234_5678);
    let y = run(
        vector_plan(BARRIER_AFTER_EXIT, "early_exit", 64, 64),
        shape,
        &x,
    )
    .unwrap();
    for t in 0..40 {
        assert_eq!(y[t], x[0][39 - t] + 40.0 + 1.0, "y[{t}]");
    }
    assert!(y[40..].iter().all(|v| v.is_nan()), "{:?}", &y[40..]);
    let plan = |entry| vector_plan(BARRIER_AFTER_EXIT, entry, 64, 64);
    let y = run(plan("early_exit_named"), shape, &x).unwrap();
    for t in 0..40 {
        assert_eq!(y[t], x[0][39 - t], "y[{t}]");
    }
    let e = sim_error(run(plan("early_exit_counted"), shape, &x));
    assert!(
        e.contains("deadlock at a named barrier") && e.contains("named barrier 2: 40 of 64"),
        "{e}"
    );
}

/// Half of each warp skips a full-mask shuffle and exits: CUDA waits only for the lanes of a mask
/// that have not exited, so the shuffle completes, and lane 15 then reads lane 16, which has
/// exited (an undefined value on a GPU). Lanes that skip it without exiting, to wait at
/// `__syncthreads()`, hold the shuffle up for ever.
const DIVERGENT_SHUFFLE: &str = r#"
extern "C" __global__ void half_warp_shuffle(const float *x, float *y, int n) {
    float v = x[threadIdx.x];
    if (threadIdx.x % 32 < 16) v += __shfl_down_sync(0xffffffffu, v, 1);  // BUG: full mask
    y[threadIdx.x] = v;
}
extern "C" __global__ void half_warp_waits(const float *x, float *y, int n) {
    float v = x[threadIdx.x];
    if (threadIdx.x % 32 < 16) v += __shfl_down_sync(0xffffffffu, v, 1);  // BUG: full mask
    else __syncthreads();
    y[threadIdx.x] = v;
}
"#;

#[test]
fn a_shuffle_reading_a_lane_that_skipped_it_is_reported() {
    let shape = Shape::gemm(64, 1, 1);
    let plan = vector_plan(DIVERGENT_SHUFFLE, "half_warp_shuffle", 64, 64);
    let msg = sim_error(run(plan, shape, &inputs(&shape, 0x1234_5678)));
    // By the shuffle's line.
    let shuffle = source_line(DIVERGENT_SHUFFLE, "// BUG");
    assert!(
        msg.contains("a warp shuffle of lane 15 reads lane 16, which has exited")
            // The lanes skipped the branch; they did not return: the advice fits both.
            && msg.contains("skipped the branch that holds the shuffle")
            && msg.contains(&format!(
                "; this thread's access is at tests/inline.cu:{shuffle} ("
            )),
        "{msg}"
    );
    let plan = vector_plan(DIVERGENT_SHUFFLE, "half_warp_waits", 64, 64);
    let msg = sim_error(run(plan, shape, &inputs(&shape, 0x1234_5678)));
    // The waits at the shuffle and at the barrier (half_warp_waits' lines 2 and 3).
    let waits = source_line(
        DIVERGENT_SHUFFLE,
        "extern \"C\" __global__ void half_warp_waits",
    ) + 2;
    assert!(
        msg.contains("half_warp_waits: deadlock at __syncthreads")
            && msg.contains("32 threads wait at __syncthreads, 32 at a warp operation")
            && msg.ends_with(&format!(
                "; waiting at tests/inline.cu:{waits} (32 threads), tests/inline.cu:{} (32 threads)",
                waits + 1
            )),
        "{msg}"
    );
}

/// The tail of a grid that returns early, then reduces by shuffles with the full mask, as public
/// code often does: the shuffles wait only for the lanes still running (CUDA: "all non-exited
/// threads named in mask"). `groups` reads lanes within groups of 8, all running (24 of 32 lanes
/// run); its ballot and `__all_sync` see the running lanes only. `sums` reads
/// lanes that have exited: an undefined value on a GPU.
const EXITED_LANES: &str = r#"
extern "C" __global__ void groups(const float *x, float *y, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    y[i] = 0.0f;
    if (threadIdx.x % 32 >= 24) return;
    float v = x[i];
    for (int o = 4; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
    __syncwarp();
    unsigned ballot = __ballot_sync(0xffffffffu, 1);
    int all = __all_sync(0xffffffffu, 1);
    if (ballot == 0x00ffffffu && all) y[i] = v;
}
extern "C" __global__ void sums(const float *x, float *y, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    float v = x[i];
    for (int o = 16; o > 0; o >>= 1) v += __shfl_down_sync(0xffffffffu, v, o);
    if (threadIdx.x % 32 == 0) y[i] = v;
}
"#;

#[test]
fn lanes_that_exit_leave_a_warp_operation_to_the_others() {
    let shape = Shape::gemm(64, 1, 1);
    let x = inputs(&shape, 0x1234_5678);
    let y = run(vector_plan(EXITED_LANES, "groups", 64, 64), shape, &x).unwrap();
    for (i, got) in y.iter().enumerate() {
        let want: f32 = if i % 32 >= 24 {
            0.0
        } else {
            let g = i / 8 * 8;
            x[0][g..g + 8].iter().sum()
        };
        assert!(
            (got - want).abs() <= 1e-5 * want.abs().max(1.0),
            "y[{i}] = {got}, not {want}"
        );
    }
    // 40 of 64 threads run: lane 7 of the second warp reads lane 23, which has exited.
    let msg = sim_error(run(vector_plan(EXITED_LANES, "sums", 40, 64), shape, &x));
    assert!(
        msg.contains("reads lane ") && msg.contains(", which has exited"),
        "{msg}"
    );
}

/// A reduction by xor shuffles in a block of 48 threads: its second warp has 16 lanes, whose
/// reads of lanes 16 to 31 (which lane reads first depends on the schedule) get undefined
/// values on a GPU; and lanes reading a lane the mask leaves out.
const PARTIAL_WARP_SHUFFLE: &str = r#"
extern "C" __global__ void partial_warp(const float *x, float *y, int n) {
    float v = x[threadIdx.x];
    for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
    y[threadIdx.x] = v;
}
extern "C" __global__ void outside_mask(const float *x, float *y, int n) {
    float v = x[threadIdx.x];
    if (threadIdx.x < 16) v += __shfl_sync(0x0000ffffu, v, 20);  // BUG: 20 is not in the mask
    y[threadIdx.x] = v;
}
"#;

#[test]
fn a_shuffle_reading_a_lane_that_takes_no_part_is_reported() {
    let shape = Shape::gemm(48, 1, 1);
    let x = inputs(&shape, 0x1234_5678);
    let msg = sim_error(run(
        vector_plan(PARTIAL_WARP_SHUFFLE, "partial_warp", 48, 48),
        shape,
        &x,
    ));
    assert!(
        msg.contains("a warp shuffle reads lane ")
            && msg.contains(
                ", which this warp does not have (a block of 48 threads: warp 1 has lanes 0 to 15)"
            ),
        "{msg}"
    );
    // A block of one thread: its warp has lane 0 alone.
    let shape = Shape::gemm(1, 1, 1);
    let x = inputs(&shape, 0x1234_5678);
    let msg = sim_error(run(
        vector_plan(PARTIAL_WARP_SHUFFLE, "partial_warp", 1, 1),
        shape,
        &x,
    ));
    assert!(
        msg.contains(
            ", which this warp does not have (a block of 1 thread: warp 0 has lane 0 alone)"
        ),
        "{msg}"
    );
    let shape = Shape::gemm(32, 1, 1);
    let x = inputs(&shape, 0x1234_5678);
    let msg = sim_error(run(
        vector_plan(PARTIAL_WARP_SHUFFLE, "outside_mask", 32, 32),
        shape,
        &x,
    ));
    assert!(
        msg.contains("a warp shuffle reads lane 20, which the shuffle's mask leaves out"),
        "{msg}"
    );
}

// ---- Features ----

/// Even threads write their slot, odd ones never do: odd outputs must read the poison, in
/// every block (a block must not see what the previous block on its OS thread left).
const HALF_WRITTEN: &str = r#"
extern "C" __global__ void half_written(const float *x, float *y, int n) {
    __shared__ float s[64];
    extern __shared__ float dyn[];
    int t = threadIdx.x;
    if (t % 2 == 0) { s[t] = 1.0f; dyn[t] = 2.0f; }
    __syncthreads();
    y[blockIdx.x * 64 + t] = s[t] + dyn[t];
}
"#;

#[test]
fn shared_memory_starts_poisoned_in_every_block() {
    let blocks = 8;
    let shape = Shape::gemm(64 * blocks, 1, 1);
    let mut plan = vector_plan(HALF_WRITTEN, "half_written", 64 * blocks, 64);
    if let Step::Kernel(l) = &mut plan.steps[0] {
        l.dynamic_smem = 64 * 4;
    }
    let out = run(plan, shape, &inputs(&shape, 0x1234_5678)).unwrap();
    for (i, v) in out.iter().enumerate() {
        if i % 2 == 0 {
            assert_eq!(*v, 3.0, "element {i}");
        } else {
            assert!(v.is_nan(), "element {i} read {v}, not the poison");
        }
    }
}

/// Row sums of A (m x k, k = 256), by warp shuffles then a second warp over the warp sums.
const ROW_SUM: &str = r#"
__device__ __forceinline__ float warp_sum_down(float v) {
    #pragma unroll
    for (int o = 16; o > 0; o >>= 1) v += __shfl_down_sync(0xffffffffu, v, o);
    return v;
}
__device__ __forceinline__ float warp_sum_xor(float v) {
    for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
    return v;
}
extern "C" __global__ void row_sum(const float *__restrict__ A, const float *B, float *out, int M, int N, int K) {
    __shared__ float partial[32];
    const int row = blockIdx.x, t = threadIdx.x, lane = t % warpSize, warp = t / warpSize;
    float v = 0.0f;
    for (int k = t; k < K; k += blockDim.x) v += __ldg(&A[row * K + k]);
    v = warp_sum_down(v);
    if (lane == 0) partial[warp] = v;
    __syncthreads();
    if (warp == 0) {
        float w = lane < blockDim.x / warpSize ? partial[lane] : 0.0f;
        w = warp_sum_xor(w);
        // Every lane holds the sum now; lane 5 broadcasts it, and the ballot counts lanes.
        float b = __shfl_sync(0xffffffffu, w, 5);
        unsigned votes = __ballot_sync(0xffffffffu, b == w);
        int up = __shfl_up_sync(0xffffffffu, lane, 1, 16);  // within 16-lane groups
        if (lane == 0) out[row * N] = b;
        if (lane == 17) out[row * N + 1] = (float)(__popc(votes) * 100 + up);
    }
}
"#;

#[test]
fn warp_shuffles_reduce_rows() {
    let (m, k) = (5, 256);
    let shape = Shape::gemm(m, 2, k);
    let data = inputs(&shape, 0x1234_5678);
    let mut l = launch(ROW_SUM, "row_sum", [m as u32, 1, 1], [128, 1, 1]);
    l.args = gemm_args(m, 2, k);
    let out = run(CudaPlan::single(2, l), shape, &data).unwrap();
    for r in 0..m {
        let want: f64 = data[0][r * k..(r + 1) * k]
            .iter()
            .map(|&v| f64::from(v))
            .sum();
        assert!(
            (f64::from(out[r * 2]) - want).abs() < 1e-4,
            "row {r}: {} vs {want}",
            out[r * 2]
        );
        // 32 lanes agree; lane 17 (lane 1 of its 16-group) got lane 16's index.
        assert_eq!(out[r * 2 + 1], 3216.0, "row {r}");
    }
}

/// Stage 1: every thread adds its element to a global float sum and a global count (scratch,
/// zeroed) and a per-block shared maximum. Stage 2 copies the totals out.
const ATOMICS: &str = r#"
extern "C" __global__ void accumulate(const float *x, float *sum, int *count, float *out, int n) {
    __shared__ int best;
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (threadIdx.x == 0) best = -1000000;
    __syncthreads();
    if (i < n) {
        atomicAdd(sum, x[i]);
        atomicAdd(count, 1);
        atomicMax(&best, (int)(x[i] * 1000.0f));
    }
    __syncthreads();
    if (threadIdx.x == 0) out[2 + blockIdx.x] = (float)best;
}
extern "C" __global__ void finish(const float *sum, const int *count, float *out) {
    out[0] = *sum;
    out[1] = (float)*count;
}
"#;

#[test]
fn atomics_add_and_max_across_blocks() {
    let (n, block) = (1000usize, 128u32);
    let blocks = n.div_ceil(block as usize);
    // A holds x (10 x 100 = n); C holds the two totals and one maximum per block.
    let shape = Shape::gemm(2 + blocks, 1, n / (2 + blocks));
    let mut data = inputs(&shape, 0x1234_5678);
    let x: Vec<f32> = (0..n)
        .map(|i| ((i * 37) % 101) as f32 / 100.0 - 0.5)
        .collect();
    data[0][..n].copy_from_slice(&x);
    let mut stage1 = launch(ATOMICS, "accumulate", [blocks as u32, 1, 1], [block, 1, 1]);
    stage1.args = vec![
        Arg::Ptr(Buf::Input(0)),
        Arg::Ptr(Buf::Scratch(0)),
        Arg::Ptr(Buf::Scratch(1)),
        Arg::Ptr(Buf::Output),
        Arg::I32(n as i32),
    ];
    let mut stage2 = launch(ATOMICS, "finish", [1, 1, 1], [1, 1, 1]);
    stage2.args = vec![
        Arg::Ptr(Buf::Scratch(0)),
        Arg::Ptr(Buf::Scratch(1)),
        Arg::Ptr(Buf::Output),
    ];
    let plan = CudaPlan {
        inputs: vec![Dtype::F32; 2],
        output: Dtype::F32,
        scratch: vec![
            Scratch::new("sum", Dtype::F32, 1),
            Scratch::new("count", Dtype::F32, 1),
        ],
        steps: vec![Step::Kernel(stage1), Step::Kernel(stage2)],
        ..Default::default()
    };
    let out = run(plan, shape, &data).unwrap();
    let want: f64 = x.iter().map(|&v| f64::from(v)).sum();
    assert!(
        (f64::from(out[0]) - want).abs() < 1e-3,
        "{} vs {want}",
        out[0]
    );
    assert_eq!(out[1], n as f32);
    for b in 0..blocks {
        let chunk = &x[b * block as usize..((b + 1) * block as usize).min(n)];
        let best = chunk.iter().map(|&v| (v * 1000.0) as i32).max().unwrap();
        assert_eq!(out[2 + b], best as f32, "block {b}");
    }
}

/// Reverses each row of A through dynamic shared memory.
const REVERSE: &str = r#"
extern "C" __global__ void reverse_rows(const float *A, const float *B, float *C, int M, int N, int K) {
    extern __shared__ __align__(16) float buf[];
    int row = blockIdx.x, t = threadIdx.x;
    buf[t] = A[row * K + t];
    __syncthreads();
    C[row * N + t] = buf[K - 1 - t];
}
"#;

/// The same, its buffer declared in a namespace (which a pointer set when the module loads
/// would get wrong).
const REVERSE_IN_NAMESPACE: &str = r#"
namespace rows {
extern __shared__ float buf[];
__device__ void reverse(const float *A, float *C, int N, int K) {
    int row = blockIdx.x, t = threadIdx.x;
    buf[t] = A[row * K + t];
    __syncthreads();
    C[row * N + t] = buf[K - 1 - t];
}
}
extern "C" __global__ void reverse_rows(const float *A, const float *B, float *C, int M, int N, int K) {
    rows::reverse(A, C, N, K);
}
"#;

/// A whole object declared `extern __shared__` (`extern __shared__ Rows<96> s;`, as some
/// Hopper kernels declare their tiles and barriers): CUDA's compilers allocate it statically.
const REVERSE_AS_STRUCT: &str = r#"
template <int K> struct Rows { float row[K]; };
extern "C" __global__ void reverse_rows(const float *A, const float *B, float *C, int M, int N, int K) {
    extern __shared__ __align__(128) Rows<96> s;
    int row = blockIdx.x, t = threadIdx.x;
    s.row[t] = A[row * K + t];
    __syncthreads();
    C[row * N + t] = s.row[K - 1 - t];
}
"#;

#[test]
fn extern_shared_memory_is_per_block() {
    let (m, k) = (6, 96);
    let shape = Shape::gemm(m, k, k);
    let data = inputs(&shape, 0x1234_5678);
    for code in [REVERSE, REVERSE_IN_NAMESPACE, REVERSE_AS_STRUCT] {
        let mut l = launch(code, "reverse_rows", [m as u32, 1, 1], [k as u32, 1, 1]);
        l.dynamic_smem = (k * 4) as u32;
        l.args = gemm_args(m, k, k);
        let out = run(CudaPlan::single(2, l), shape, &data).unwrap();
        for r in 0..m {
            for t in 0..k {
                assert_eq!(out[r * k + t], data[0][r * k + k - 1 - t]);
            }
        }
    }
}

/// `xy` holds x then y (n each). Column 0: x through half and back; column 1:
/// __hfma(x, x, y), one rounding; column 2: half2 packing and __hadd2; column 3: __hmul then
/// __hadd, two roundings.
const HALVES: &str = r#"
#include <cuda_fp16.h>
extern "C" __global__ void halves(const float *xy, float *out, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    const float *x = xy, *y = xy + n;
    half h = __float2half(x[i]);
    half c = __float2half(y[i]);
    out[i * 4] = __half2float(h);
    out[i * 4 + 1] = __half2float(__hfma(h, h, c));
    half2 p = __floats2half2_rn(x[i], y[i]);
    float2 f = __half22float2(__hadd2(p, p));
    out[i * 4 + 2] = f.x;
    if (__high2float(p) != __half2float(c) || f.y != 2.0f * __half2float(c)) out[i * 4 + 2] = 12345.0f;
    out[i * 4 + 3] = __half2float(__hadd(__hmul(h, h), c));
}
"#;

#[test]
fn half_conversions_round_to_nearest_even() {
    let one = 1.0f32;
    let x: Vec<f32> = vec![
        one + 2f32.powi(-11),       // a tie: to even, 1.0
        one + 3.0 * 2f32.powi(-11), // a tie: to even, up
        65519.0,                    // below the overflow threshold: 65504
        65520.0,                    // overflows to inf
        2f32.powi(-25),             // a tie between 0 and the smallest subnormal: 0
        2f32.powi(-25) * 1.5,       // above the tie: the smallest subnormal
        -0.1,
        one + 2f32.powi(-10), // x * x + 2^-11 rounds differently fused and unfused
        f32::NAN,
    ];
    let mut y = vec![0.5f32; x.len()];
    y[7] = 2f32.powi(-11);
    let n = x.len();
    let shape = Shape::gemm(2 * n, 2, 1);
    let mut xy = x.clone();
    xy.extend(&y);
    let data = vec![xy, vec![0.0; 2]];
    let mut l = launch(HALVES, "halves", [1, 1, 1], [32, 1, 1]);
    l.args = vec![
        Arg::Ptr(Buf::Input(0)),
        Arg::Ptr(Buf::Output),
        Arg::I32(n as i32),
    ];
    let out = run(CudaPlan::single(2, l), shape, &data).unwrap();
    let h = |v: f32| half::f16::from_f32(v);
    for i in 0..n {
        let (hx, hy) = (h(x[i]), h(y[i]));
        let same = |a: f32, b: f32| a.to_bits() == b.to_bits() || (a.is_nan() && b.is_nan());
        let conv = hx.to_f32();
        assert!(
            same(out[i * 4], conv),
            "x = {:e}: {} vs {conv}",
            x[i],
            out[i * 4]
        );
        let fused = half::f16::from_f64(hx.to_f64() * hx.to_f64() + hy.to_f64()).to_f32();
        assert!(
            same(out[i * 4 + 1], fused),
            "hfma at {i}: {} vs {fused}",
            out[i * 4 + 1]
        );
        let doubled = half::f16::from_f64(2.0 * hx.to_f64()).to_f32();
        assert!(same(out[i * 4 + 2], doubled), "hadd2 at {i}");
        let twice = half::f16::from_f64(
            half::f16::from_f64(hx.to_f64() * hx.to_f64()).to_f64() + hy.to_f64(),
        )
        .to_f32();
        assert!(same(out[i * 4 + 3], twice), "hmul+hadd at {i}");
    }
    // The fused and the twice-rounded results differ where it matters.
    assert_ne!(out[7 * 4 + 1], out[7 * 4 + 3]);
    assert_eq!(out[0], 1.0);
    assert_eq!(out[4], 1.0 + 2f32.powi(-9));
    assert_eq!(out[2 * 4], 65504.0);
    assert_eq!(out[3 * 4], f32::INFINITY);
    assert_eq!(out[4 * 4], 0.0);
    assert_eq!(out[5 * 4], 2f32.powi(-24));
}

/// One warp per 16x16 tile of C; M, N, K multiples of 16; A row-major, B row-major.
const WMMA_HALF: &str = r#"
#include <mma.h>
using namespace nvcuda;
extern "C" __global__ void wmma_half(const half *A, const half *B, float *C, int M, int N, int K) {
    int tm = blockIdx.y * 16, tn = blockIdx.x * 16;
    wmma::fragment<wmma::matrix_a, 16, 16, 16, half, wmma::row_major> a;
    wmma::fragment<wmma::matrix_b, 16, 16, 16, half, wmma::col_major> b;
    wmma::fragment<wmma::accumulator, 16, 16, 16, float> c;
    wmma::fill_fragment(c, 0.0f);
    __shared__ half bt[16 * 16];  // B's tile transposed, to exercise col_major
    for (int k0 = 0; k0 < K; k0 += 16) {
        for (int e = threadIdx.x; e < 256; e += 32) {
            int kk = e / 16, j = e % 16;
            bt[j * 16 + kk] = B[(k0 + kk) * N + tn + j];
        }
        __syncwarp();
        wmma::load_matrix_sync(a, A + tm * K + k0, K);
        wmma::load_matrix_sync(b, bt, 16);
        wmma::mma_sync(c, a, b, c);
        __syncwarp();
    }
    for (int i = 0; i < c.num_elements; ++i) c.x[i] *= 1.0f;
    wmma::store_matrix_sync(C + tm * N + tn, c, N, wmma::mem_row_major);
}
"#;

#[test]
fn wmma_half_m16n16k16_gemm() {
    let (m, n, k) = (32, 48, 64);
    let shape = Shape::gemm(m, n, k);
    let data = inputs(&shape, 0x1234_5678);
    let mut l = launch(
        WMMA_HALF,
        "wmma_half",
        [(n / 16) as u32, (m / 16) as u32, 1],
        [32, 1, 1],
    );
    l.args = gemm_args(m, n, k);
    let mut plan = CudaPlan::single(2, l);
    plan.inputs = vec![Dtype::F16, Dtype::F16];
    let out = run(plan, shape, &data).unwrap();
    let to_half = |v: f32| half::f16::from_f32(v).to_f32();
    let err = relative_error(&out, &gemm_f64((m, n, k), &data[0], &data[1], to_half));
    assert!(err <= 1e-5, "{err:e}");
}

/// BF16: conversions round to nearest even, __hfma rounds once, and WMMA takes bf16 tiles.
const BF16: &str = r#"
#include <cuda_bf16.h>
#include <mma.h>
using namespace nvcuda;
extern "C" __global__ void bf16_round(const float *x, float *out, int n) {
    int i = threadIdx.x;
    if (i >= n) return;
    __nv_bfloat16 h = __float2bfloat16(x[i]);
    out[i * 2] = __bfloat162float(h);
    out[i * 2 + 1] = __bfloat162float(__hfma(h, h, __float2bfloat16(x[n + i])));
}
extern "C" __global__ void wmma_bf16(const __nv_bfloat16 *A, const __nv_bfloat16 *B, float *C,
                                     int M, int N, int K) {
    int tm = blockIdx.y * 16, tn = blockIdx.x * 16;
    wmma::fragment<wmma::matrix_a, 16, 16, 16, __nv_bfloat16, wmma::row_major> a;
    wmma::fragment<wmma::matrix_b, 16, 16, 16, __nv_bfloat16, wmma::row_major> b;
    wmma::fragment<wmma::accumulator, 16, 16, 16, float> c;
    wmma::fill_fragment(c, 0.0f);
    for (int k0 = 0; k0 < K; k0 += 16) {
        wmma::load_matrix_sync(a, A + tm * K + k0, K);
        wmma::load_matrix_sync(b, B + k0 * N + tn, N);
        wmma::mma_sync(c, a, b, c);
    }
    wmma::store_matrix_sync(C + tm * N + tn, c, N, wmma::mem_row_major);
}
"#;

#[test]
fn bf16_rounds_to_nearest_even_and_feeds_wmma() {
    let x: Vec<f32> = vec![
        1.0 + 2f32.powi(-8),       // a tie: to even, 1.0
        1.0 + 3.0 * 2f32.powi(-8), // a tie: to even, up
        -0.1,
        3.0e38, // stays finite in BF16 (FP32's exponent range)
        1.0 + 2f32.powi(-7),
        f32::NAN,
    ];
    let mut y = vec![0.5f32; x.len()];
    y[4] = 2f32.powi(-8);
    let n = x.len();
    let shape = Shape::gemm(2 * n, 1, 1);
    let mut xy = x.clone();
    xy.extend(&y);
    let mut l = launch(BF16, "bf16_round", [1, 1, 1], [32, 1, 1]);
    l.args = vec![
        Arg::Ptr(Buf::Input(0)),
        Arg::Ptr(Buf::Output),
        Arg::I32(n as i32),
    ];
    let out = run(CudaPlan::single(2, l), shape, &[xy, vec![0.0]]).unwrap();
    let b = |v: f32| half::bf16::from_f32(v);
    for i in 0..n {
        let same = |a: f32, c: f32| a.to_bits() == c.to_bits() || (a.is_nan() && c.is_nan());
        assert!(same(out[2 * i], b(x[i]).to_f32()), "x = {:e}", x[i]);
        let fused = half::bf16::from_f64(b(x[i]).to_f64().powi(2) + b(y[i]).to_f64()).to_f32();
        assert!(
            same(out[2 * i + 1], fused),
            "hfma at {i}: {}",
            out[2 * i + 1]
        );
    }
    assert_eq!(out[0], 1.0);
    assert_eq!(out[2], 1.0 + 2f32.powi(-6));
    assert!(out[6].is_finite());

    let (m, nn, k) = (32, 16, 48);
    let shape = Shape::gemm(m, nn, k);
    let data = inputs(&shape, 0x1234_5678);
    let mut l = launch(BF16, "wmma_bf16", [1, (m / 16) as u32, 1], [32, 1, 1]);
    l.args = gemm_args(m, nn, k);
    let mut plan = CudaPlan::single(2, l);
    plan.inputs = vec![Dtype::Bf16, Dtype::Bf16];
    let out = run(plan, shape, &data).unwrap();
    let to_bf16 = |v: f32| half::bf16::from_f32(v).to_f32();
    let err = relative_error(&out, &gemm_f64((m, nn, k), &data[0], &data[1], to_bf16));
    assert!(err <= 1e-5, "{err:e}");
}

const WMMA_TF32: &str = r#"
#include <mma.h>
using namespace nvcuda;
extern "C" __global__ void wmma_tf32(const float *A, const float *B, float *C, int M, int N, int K) {
    int tm = blockIdx.y * 16, tn = blockIdx.x * 16;
    wmma::fragment<wmma::matrix_a, 16, 16, 8, wmma::precision::tf32, wmma::row_major> a;
    wmma::fragment<wmma::matrix_b, 16, 16, 8, wmma::precision::tf32, wmma::row_major> b;
    wmma::fragment<wmma::accumulator, 16, 16, 8, float> c;
    wmma::fill_fragment(c, 0.0f);
    for (int k0 = 0; k0 < K; k0 += 8) {
        wmma::load_matrix_sync(a, A + tm * K + k0, K);
        wmma::load_matrix_sync(b, B + k0 * N + tn, N);
        for (int i = 0; i < a.num_elements; ++i) a.x[i] = wmma::__float_to_tf32(a.x[i]);
        wmma::mma_sync(c, a, b, c);
    }
    wmma::store_matrix_sync(C + tm + tn * M, c, M, wmma::mem_col_major);
}
"#;

/// TF32 rounding: 10 mantissa bits, to nearest, ties away from zero.
fn tf32(v: f32) -> f32 {
    f32::from_bits((v.to_bits() + 0x1000) & !0x1FFF)
}

#[test]
fn wmma_tf32_m16n16k8_gemm_rounds_inputs() {
    let (m, n, k) = (32, 32, 24);
    let shape = Shape::gemm(m, n, k);
    let data = inputs(&shape, 0x1234_5678);
    let mut l = launch(
        WMMA_TF32,
        "wmma_tf32",
        [(n / 16) as u32, (m / 16) as u32, 1],
        [32, 1, 1],
    );
    l.args = gemm_args(m, n, k);
    let out_cm = run(CudaPlan::single(2, l), shape, &data).unwrap();
    // The kernel stored C column-major.
    let out: Vec<f32> = (0..m * n).map(|e| out_cm[(e % n) * m + e / n]).collect();
    let err = relative_error(&out, &gemm_f64((m, n, k), &data[0], &data[1], tf32));
    assert!(err <= 1e-5, "against TF32-rounded inputs: {err:e}");
    let unrounded = relative_error(&out, &gemm_f64((m, n, k), &data[0], &data[1], |x| x));
    assert!(
        unrounded > 1e-5 && unrounded < 2e-3,
        "against FP32 inputs: {unrounded:e}"
    );
}

// ---- Honest limits ----

#[test]
fn gpu_only_kernels_inline_ptx_and_cublas_are_refused() {
    let dev = SimDevice::new().unwrap();
    let shape = Shape::gemm(16, 16, 16);
    let data = inputs(&shape, 0x1234_5678);
    let plan = tiled_plan(TILED, "tiled", 16, 16, 16);
    let declared = TestKernel {
        id: "hopper",
        plan: plan.clone(),
        gpu_only: Some("uses TMA (Hopper only)"),
    };
    let why = dev.can_run(&declared).unwrap_err().to_string();
    assert_eq!(why, "not simulated: uses TMA (Hopper only)");
    assert!(matches!(
        dev.prepare(&declared, &shape, &data),
        Err(DeviceError::Unsupported(_))
    ));

    // Inline PTX the simulator knows runs (here `mov` from %laneid); any other instruction
    // fails the launch that reaches it as not simulated, with its file, line and name.
    const PTX: &str = r#"
extern "C" __global__ void lane_id(const float *x, float *y, int n) {
    unsigned l;
    asm volatile("mov.u32 %0, %%laneid;" : "=r"(l));
    y[threadIdx.x] = (float)l;
}
"#;
    const BAR: &str = r#"
extern "C" __global__ void highest_bit(const float *x, float *y, int n) {
    unsigned m;
    asm volatile("bfind.u32 %0, %1;" : "=r"(m) : "r"(threadIdx.x));
    y[threadIdx.x] = x[threadIdx.x] + m;
}
"#;
    let shape32 = Shape::gemm(64, 1, 1);
    let lanes = run(
        vector_plan(PTX, "lane_id", 64, 64),
        shape32,
        &inputs(&shape32, 1),
    )
    .unwrap();
    let want: Vec<f32> = (0..64).map(|i| (i % 32) as f32).collect();
    assert_eq!(lanes, want);
    let ptx = TestKernel {
        id: "ptx",
        plan: vector_plan(BAR, "highest_bit", 32, 32),
        gpu_only: None,
    };
    assert!(dev.can_run(&ptx).is_ok());
    let why = match run(ptx.plan, shape32, &inputs(&shape32, 1)) {
        Err(DeviceError::Unsupported(u)) => u.0,
        other => panic!("{:?}", other.map(|_| ())),
    };
    assert!(
        why.starts_with("not simulated: tests/inline.cu:4: inline PTX `bfind.u32`: not emulated"),
        "{why}"
    );

    let cublas = TestKernel {
        id: "cublas",
        plan: CudaPlan {
            inputs: vec![Dtype::F32; 2],
            output: Dtype::F32,
            scratch: Vec::new(),
            steps: vec![Step::Library(LibraryCall::Gemm(GemmCall::new(
                (16, 16, 16),
                Buf::Input(0),
                Buf::Input(1),
                Buf::Output,
                GemmCompute::Fp32,
            )))],
            ..Default::default()
        },
        gpu_only: None,
    };
    match dev.prepare(&cublas, &shape, &data) {
        Err(DeviceError::Unsupported(u)) => {
            assert_eq!(u.to_string(), "not simulated: cuBLAS library call")
        }
        Err(e) => panic!("unexpected error {e}"),
        Ok(_) => panic!("a cuBLAS step cannot be simulated"),
    }
}

#[test]
fn mismatched_arguments_and_compile_errors_are_reported() {
    let shape = Shape::gemm(16, 16, 16);
    let data = inputs(&shape, 0x1234_5678);
    let mut plan = tiled_plan(TILED, "tiled", 16, 16, 16);
    if let Step::Kernel(l) = &mut plan.steps[0] {
        l.args.pop();
    }
    let msg = sim_error(run(plan, shape, &data));
    assert!(msg.contains("the plan passes arguments (pppii)"), "{msg}");

    const BROKEN: &str = "extern \"C\" __global__ void broken(float *x) { x[0] = undefined_name; }";
    let mut l = launch(BROKEN, "broken", [1, 1, 1], [1, 1, 1]);
    l.args = vec![Arg::Ptr(Buf::Output)];
    match run(CudaPlan::single(2, l), shape, &data) {
        Err(e @ DeviceError::Compile { .. }) => {
            let text = e.to_string();
            let DeviceError::Compile { file, log, .. } = e else {
                unreachable!()
            };
            assert_eq!(file, "tests/inline.cu");
            assert!(log.contains("undefined_name"), "{log}");
            // The message names the compiler that failed (the host's), not NVRTC.
            let cxx = kernel::sim::compile::compiler();
            assert!(
                text.starts_with(&format!("{cxx} ")) && !text.contains("NVRTC"),
                "{text}"
            );
        }
        other => panic!("expected a compile error, got {:?}", other.map(|_| ())),
    }
}

/// Unbounded recursion in the last thread of a block: its fiber runs into the guard page
/// below its stack (set when the stack is first used), which must come back as a report.
const TOO_DEEP: &str = r#"
__device__ __attribute__((noinline)) float deep(const float *x, int n) {
    volatile float pad[1024];  // 4 KB a frame: a few dozen frames overflow a fiber's stack
    pad[n % 1024] = x[0];
    return n == 0 ? pad[0] : deep(x, n - 1) + pad[(n + 1) % 1024];
}
extern "C" __global__ void too_deep(const float *x, float *y, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = threadIdx.x == blockDim.x - 1 ? deep(x, 1 << 20) : x[i];
}
"#;

#[test]
fn a_fiber_stack_overflow_is_reported() {
    let n = 96;
    let shape = Shape::gemm(n, 1, 1);
    let msg = sim_error(run(
        vector_plan(TOO_DEEP, "too_deep", n, 96),
        shape,
        &inputs(&shape, 0x1234_5678),
    ));
    for want in ["too_deep", "fiber stack overflow", "thread (95,0,0)"] {
        assert!(msg.contains(want), "{want:?} missing from: {msg}");
    }
}

/// `__shared__ alignas(N)`, as public kernels write it, compiles in the simulator (its
/// `__shared__` is a storage class after which C++ allows no `alignas`) and keeps the
/// alignment: each block stores its arrays' addresses modulo 128 and 16.
const SHARED_ALIGNAS: &str = r#"
extern "C" __global__ void aligned_shared(const float *x, float *y, int n) {
    __shared__ alignas(128) float a[3];
    __shared__ alignas(16) float b[5];
    a[threadIdx.x % 3] = x[0];
    b[threadIdx.x % 5] = x[0];
    __syncthreads();
    if (threadIdx.x == 0) {
        y[2 * blockIdx.x] = (float)((unsigned long long)a % 128) + a[0] - x[0];
        y[2 * blockIdx.x + 1] = (float)((unsigned long long)b % 16) + b[0] - x[0];
    }
}
"#;

#[test]
fn shared_arrays_declared_with_alignas_after_shared_keep_their_alignment() {
    let n = 8;
    let shape = Shape::gemm(n, 1, 1);
    let mut l = launch(SHARED_ALIGNAS, "aligned_shared", [4, 1, 1], [32, 1, 1]);
    l.args = vec![
        Arg::Ptr(Buf::Input(0)),
        Arg::Ptr(Buf::Output),
        Arg::I32(n as i32),
    ];
    let out = run(CudaPlan::single(2, l), shape, &inputs(&shape, 7)).unwrap();
    assert_eq!(out, vec![0.0; n]);
}
