//! libcu++'s asynchronous copies in the simulator, as the CUDA Programming Guide teaches them:
//! `cuda::memcpy_async` tied to a block-scope `cuda::barrier`, a block-scope `cuda::pipeline`
//! (unified, and partitioned into a producer warp and a consumer warp), and a thread-scope
//! pipeline, each on the simulator's mbarrier and cp.async, each checked against the data it
//! must deliver and run again with the race checkers on. NVRTC compiles the same sources
//! against the real headers.

use kernel::cuda::nvrtc;
use kernel::sim::SimDevice;
use kernel::testing::{PlanKernel, inputs, source_line};
use kernel::{Arg, Buf, CudaPlan, CudaSource, DeviceError, Dtype, Executor, Launch, Shape, Step};

const KERNELS: &str = r#"
#include <cooperative_groups.h>
#include <cuda/barrier>
#include <cuda/pipeline>
namespace cg = cooperative_groups;

// Four batches of 256 floats, each copied by the block and completed by the barrier's phase;
// each thread then sums four floats other threads copied.
extern "C" __global__ void with_barrier(const float *x, float *out) {
    cg::thread_block block = cg::this_thread_block();
    __shared__ __align__(16) float s[256];
    __shared__ cuda::barrier<cuda::thread_scope_block> bar;
    const unsigned t = block.thread_rank();
    if (t == 0) init(&bar, block.size());
    block.sync();
    for (cuda::std::size_t batch = 0; batch < 4; ++batch) {
        cuda::memcpy_async(block, s, x + 256 * batch, sizeof(float) * 256, bar);
        bar.arrive_and_wait();
        float v = 0.f;
        for (int k = 0; k < 4; ++k) v += s[(4 * t + k + 7) % 256];
        out[64 * batch + t] = v;
        bar.arrive_and_wait();
    }
}

// The bug: a thread reads the batch before waiting for the barrier's phase.
extern "C" __global__ void barrier_read_early(const float *x, float *out) {
    cg::thread_block block = cg::this_thread_block();
    __shared__ __align__(16) float s[256];
    __shared__ cuda::barrier<cuda::thread_scope_block> bar;
    const unsigned t = block.thread_rank();
    if (t == 0) init(&bar, block.size());
    block.sync();
    cuda::memcpy_async(block, s, x, sizeof(float) * 256, bar);
    out[t] = s[(4 * t + 7) % 256];
    bar.arrive_and_wait();
}

// Six batches of 64 floats through two stages of a unified block-scope pipeline.
extern "C" __global__ void with_pipeline(const float *x, float *out) {
    cg::thread_block block = cg::this_thread_block();
    constexpr int stages = 2, batches = 6;
    __shared__ __align__(16) float s[stages][64];
    __shared__ cuda::pipeline_shared_state<cuda::thread_scope_block, stages> state;
    auto pipe = cuda::make_pipeline(block, &state);
    const unsigned t = block.thread_rank();
    for (int b = 0; b < stages; ++b) {
        pipe.producer_acquire();
        cuda::memcpy_async(block, s[b], x + 64 * b, cuda::aligned_size_t<16>(sizeof(float) * 64), pipe);
        pipe.producer_commit();
    }
    for (int b = 0; b < batches; ++b) {
        pipe.consumer_wait();
        out[64 * b + t] = 2.f * s[b % stages][63 - t];
        pipe.consumer_release();
        if (b + stages < batches) {
            pipe.producer_acquire();
            cuda::memcpy_async(block, s[b % stages], x + 64 * (b + stages), sizeof(float) * 64, pipe);
            pipe.producer_commit();
        }
    }
}

// The same batches, the first warp producing and the second consuming. With no more batches
// than stages (producers_exit) the producers never wait in producer_acquire, and may exit
// before a consumer has left make_pipeline.
template <int BATCHES>
__device__ void roles(const float *x, float *out) {
    cg::thread_block block = cg::this_thread_block();
    constexpr int stages = 2;
    __shared__ __align__(16) float s[stages][64];
    __shared__ cuda::pipeline_shared_state<cuda::thread_scope_block, stages> state;
    const unsigned t = block.thread_rank();
    const bool producer = t < 32;
    auto pipe = cuda::make_pipeline(block, &state,
                                    producer ? cuda::pipeline_role::producer : cuda::pipeline_role::consumer);
    cg::thread_block_tile<32> warp = cg::tiled_partition<32>(block);
    for (int b = 0; b < BATCHES; ++b) {
        if (producer) {
            pipe.producer_acquire();
            cuda::memcpy_async(warp, s[b % stages], x + 64 * b, sizeof(float) * 64, pipe);
            pipe.producer_commit();
        } else {
            pipe.consumer_wait();
            const unsigned l = t - 32;
            out[64 * b + l] = s[b % stages][l] + s[b % stages][l + 32];
            pipe.consumer_release();
        }
    }
}
extern "C" __global__ void with_roles(const float *x, float *out) { roles<6>(x, out); }
extern "C" __global__ void producers_exit(const float *x, float *out) { roles<2>(x, out); }

// Two stages of each thread's own 16 bytes through a thread-scope pipeline: consumer_wait
// completes the oldest only, pipeline_consumer_wait_prior<0> the rest.
extern "C" __global__ void thread_scope(const float *x, float *out) {
    __shared__ __align__(16) float d[2][256];
    const unsigned t = threadIdx.x;
    auto pipe = cuda::make_pipeline();
    for (int b = 0; b < 2; ++b) {
        pipe.producer_acquire();
        cuda::memcpy_async(&d[b][4 * t], x + 4 * t + 256 * b, cuda::aligned_size_t<16>(16), pipe);
        pipe.producer_commit();
    }
    pipe.consumer_wait();
    for (int k = 0; k < 4; ++k) out[4 * t + k] = d[0][4 * t + k];
    out[256 + t] = d[1][4 * t];  // still pending
    pipe.consumer_release();
    cuda::pipeline_consumer_wait_prior<0>(pipe);
    for (int k = 0; k < 4; ++k) out[320 + 4 * t + k] = d[1][4 * t + k];
}

// Half the block returns before the pipeline is made, which counts all 64 threads' arrivals.
extern "C" __global__ void pipeline_after_exit(const float *x, float *out) {
    cg::thread_block block = cg::this_thread_block();
    __shared__ cuda::pipeline_shared_state<cuda::thread_scope_block, 2> state;
    if (block.thread_rank() >= 32) return;
    auto pipe = cuda::make_pipeline(block, &state);  // the pipeline
    (void)pipe;
    out[block.thread_rank()] = x[0];
}
"#;

/// Runs `entry` on one block of 64 threads with 1536 random inputs (none zero) and `out`
/// outputs (NaN before the run): the inputs and the outputs.
fn run(dev: &SimDevice, entry: &str, out: usize) -> Result<(Vec<f32>, Vec<f32>), DeviceError> {
    let plan = CudaPlan {
        inputs: vec![Dtype::F32; 2],
        steps: vec![Step::Kernel(Launch {
            source: CudaSource::embedded("tests/cuda_barrier_pipeline.cu", KERNELS),
            entry: entry.to_string().into(),
            grid: [1, 1, 1],
            block: [64, 1, 1],
            dynamic_smem: 0,
            args: vec![Arg::Ptr(Buf::Input(0)), Arg::Ptr(Buf::Output)],
        })],
        ..Default::default()
    };
    let shape = Shape::gemm(1, out, 1536);
    let data = inputs(&shape, 5);
    let x = data[0].clone();
    let k = PlanKernel::fp32(plan);
    let mut p = dev.prepare(&k, &shape, &data)?;
    p.run()?;
    Ok((x, p.output()?))
}

/// Both runs, plain and race-checked, which must agree bit for bit.
fn both(entry: &str, out: usize) -> (Vec<f32>, Vec<f32>) {
    let dev = SimDevice::new().expect("the simulator needs a host C++ compiler");
    let (x, plain) = run(&dev, entry, out).unwrap();
    let (_, checked) = run(&dev.instrumented(), entry, out).unwrap();
    let bits = |v: &[f32]| v.iter().map(|f| f.to_bits()).collect::<Vec<_>>();
    assert_eq!(
        bits(&plain),
        bits(&checked),
        "{entry}: the race-checked run differs"
    );
    (x, plain)
}

#[test]
fn memcpy_async_with_a_barrier_lands_by_the_phase_its_waiters_wait_for() {
    let (x, out) = both("with_barrier", 256);
    for batch in 0..4 {
        for t in 0..64 {
            let want: f32 = (0..4).map(|k| x[256 * batch + (4 * t + k + 7) % 256]).sum();
            assert_eq!(out[64 * batch + t], want, "batch {batch}, thread {t}");
        }
    }
}

#[test]
fn reading_a_copy_before_the_barrier_phase_fails_the_run() {
    // Under each schedule the first such read is of bytes no copy has landed in yet, or of
    // bytes another thread's copy is still writing: an uninitialized read or a race.
    for seed in 0..3 {
        let dev = SimDevice::new().unwrap().instrumented().with_seed(seed);
        let e = run(&dev, "barrier_read_early", 64).unwrap_err().to_string();
        assert!(
            e.contains("uninitialized shared memory: this thread reads __shared__ 's'")
                || e.contains("race"),
            "{e}"
        );
    }
}

#[test]
fn a_block_scope_pipeline_delivers_each_stage_unified_or_partitioned() {
    let (x, out) = both("with_pipeline", 384);
    for b in 0..6 {
        for t in 0..64 {
            assert_eq!(
                out[64 * b + t],
                2.0 * x[64 * b + 63 - t],
                "unified: batch {b}, thread {t}"
            );
        }
    }
    let (x, out) = both("with_roles", 384);
    for b in 0..6 {
        for l in 0..32 {
            let want = x[64 * b + l] + x[64 * b + l + 32];
            assert_eq!(
                out[64 * b + l],
                want,
                "partitioned: batch {b}, consumer {l}"
            );
        }
    }
}

/// Producers that finish their stages and exit while consumers are still leaving
/// make_pipeline have made their call: under every schedule the pipeline delivers.
#[test]
fn producers_may_exit_once_the_pipeline_is_made() {
    for seed in 0..6 {
        let dev = || SimDevice::new().unwrap().with_seed(seed);
        for dev in [dev(), dev().instrumented()] {
            let (x, out) =
                run(&dev, "producers_exit", 128).unwrap_or_else(|e| panic!("seed {seed}: {e}"));
            for b in 0..2 {
                for l in 0..32 {
                    let want = x[64 * b + l] + x[64 * b + l + 32];
                    assert_eq!(
                        out[64 * b + l],
                        want,
                        "seed {seed}: batch {b}, consumer {l}"
                    );
                }
            }
        }
    }
}

#[test]
fn a_thread_scope_pipeline_completes_its_oldest_stage_first() {
    let (x, out) = both("thread_scope", 576);
    assert_eq!(&out[..256], &x[..256], "consumer_wait completes stage 0");
    assert!(
        out[256..320].iter().all(|v| v.is_nan()),
        "stage 1 is still pending: {:?}",
        &out[256..320]
    );
    assert_eq!(
        &out[320..576],
        &x[256..512],
        "pipeline_consumer_wait_prior<0> completes it"
    );
}

/// A pipeline made by part of the block fails where it is made, naming the kernel's line, not
/// the stand-in header's: the barrier inside make_pipeline does not wait for threads that have
/// exited (as on a GPU), but the pipeline's stages would.
#[test]
fn a_pipeline_made_by_part_of_the_block_fails_at_its_line() {
    let dev = SimDevice::new().expect("the simulator needs a host C++ compiler");
    let msg = run(&dev, "pipeline_after_exit", 64)
        .map(|_| ())
        .expect_err("the pipeline made by half the block is reported")
        .to_string();
    let line = source_line(KERNELS, "// the pipeline");
    assert!(
        msg.contains(
            "cuda::make_pipeline over the block is collective, but 32 of its 64 threads have \
             exited"
        ) && msg.contains(&format!("at tests/cuda_barrier_pipeline.cu:{line} (thread")),
        "{msg}"
    );
}

#[test]
fn nvrtc_compiles_the_libcudacxx_kernels_for_sm80_and_sm90() {
    if let Err(e) = nvrtc::version() {
        panic!("{e}\nThis test needs NVRTC: run tools/install-cuda-tools.sh first.");
    }
    let src = CudaSource::embedded("tests/cuda_barrier_pipeline.cu", KERNELS);
    for arch in ["sm_80", "sm_90"] {
        let c = nvrtc::compile(&src, arch).unwrap_or_else(|e| panic!("{arch}: {e}"));
        assert_eq!(c.resources.len(), 7, "{arch}: {:?}", c.resources);
    }
}
