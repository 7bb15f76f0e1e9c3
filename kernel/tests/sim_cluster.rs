//! Thread block clusters in the simulator: the blocks of a kernel declared with
//! `__cluster_dims__` run as one unit, so that they can wait for each other at
//! `barrier.cluster`, read each other's shared memory through `mapa`, and signal each other's
//! mbarriers (the TMA multicast is exercised by the GEMM rung 24 in the tensorcore crate);
//! threads that exit count as arrived at a cluster barrier, and a block sample runs whole
//! clusters.
//! Each block of a cluster has its own copy of the static `__shared__` variables.
//! A block that exits while its partner still signals it, an arrival on a partner's mbarrier
//! whose init no cluster barrier has published, a deadlock across the blocks and a grid the
//! cluster does not divide are reported.

use kernel::cuda::nvrtc;
use kernel::sim::SimDevice;
use kernel::testing::{PlanKernel, inputs};
use kernel::{Arg, Buf, CudaPlan, CudaSource, DeviceError, Dtype, Executor, Launch, Shape, Step};

const CLUSTERS: &str = r#"
#include "lab/hopper.h"
#define THREADS 64

// Each block fills its shared memory, the cluster synchronizes, and each thread reads its
// partner's element through mapa. The second cluster_sync keeps the partner's memory alive
// until everyone has read it.
extern "C" __global__ void __cluster_dims__(2, 1, 1) exchange(float *out) {
    extern __shared__ float mine[];
    const unsigned rank = hopper::cluster_ctarank();
    mine[threadIdx.x] = 1000.0f * blockIdx.x + threadIdx.x;
    hopper::cluster_sync();
    const float *theirs = hopper::cluster_map(mine, rank ^ 1);
    out[blockIdx.x * THREADS + threadIdx.x] = theirs[threadIdx.x];
    if (threadIdx.x == 0) out[gridDim.x * THREADS + blockIdx.x] = (float)rank;
    hopper::cluster_sync();
}

// Half the threads of each block exit before the cluster barrier, which the others pass.
extern "C" __global__ void __cluster_dims__(2, 1, 1) half_exit(float *out) {
    if (threadIdx.x >= THREADS / 2) return;
    hopper::cluster_sync();
    out[blockIdx.x * THREADS + threadIdx.x] = 1.0f;
}

// Block 1 exits at once; block 0 then arrives on block 1's barrier.
extern "C" __global__ void __cluster_dims__(2, 1, 1) early_exit(float *out) {
    extern __shared__ unsigned long long bar[];
    if (threadIdx.x == 0) hopper::mbar_init(bar, 2);
    hopper::cluster_sync();
    if (hopper::cluster_ctarank() == 1) return;
    __syncthreads();
    if (threadIdx.x == 0) hopper::mbar_arrive_cluster(bar, 1);
    out[threadIdx.x] = 1.0f;
}

// Block 0 waits on a barrier nobody signals; block 1 waits for block 0 at the cluster barrier.
extern "C" __global__ void __cluster_dims__(2, 1, 1) stuck(float *out) {
    extern __shared__ unsigned long long bar[];
    if (threadIdx.x == 0) hopper::mbar_init(bar, 1);
    hopper::cluster_sync();
    if (hopper::cluster_ctarank() == 0) hopper::mbar_wait(bar, 0);
    hopper::cluster_sync();
    out[threadIdx.x] = 1.0f;
}
"#;

const STATIC_SHARED: &str = r#"
#include "lab/hopper.h"

__shared__ float at_file_scope[64];

// Each block fills a static __shared__ array of the kernel's and one at file scope, the
// cluster synchronizes, and each thread writes out its own element of the first and its
// partner's of both (through mapa). With one copy for the cluster, a block would read what
// the block that ran last wrote.
extern "C" __global__ void __cluster_dims__(2, 1, 1) with_static(float *out) {
    __shared__ float t[64];
    const unsigned rank = hopper::cluster_ctarank();
    t[threadIdx.x] = 1000.0f * blockIdx.x + threadIdx.x;
    at_file_scope[threadIdx.x] = -t[threadIdx.x];
    hopper::cluster_sync();
    float *row = out + 3 * 64 * blockIdx.x;
    row[threadIdx.x] = t[threadIdx.x];
    row[64 + threadIdx.x] = hopper::cluster_map(t, rank ^ 1)[threadIdx.x];
    row[128 + threadIdx.x] = hopper::cluster_map(at_file_scope, rank ^ 1)[threadIdx.x];
    hopper::cluster_sync();
}

// One element past the end of its array.
extern "C" __global__ void __cluster_dims__(2, 1, 1) past_end(float *out) {
    __shared__ float tile[64];
    tile[threadIdx.x + 1] = 1.0f;
    __syncthreads();
    out[blockIdx.x * 64 + threadIdx.x] = tile[threadIdx.x];
}

// The same exchange through the CUDA runtime's cluster functions (sm_90_rt.h), with where
// the partner's element lies: 100 x cluster size + 10 x cluster index + its rank, plus 1000
// when it is the cluster's shared memory and not this block's.
extern "C" __global__ void __cluster_dims__(2, 1, 1) runtime(float *out) {
    __shared__ float t[64];
    const unsigned rank = __clusterRelativeBlockRank();
    t[threadIdx.x] = 1000.0f * blockIdx.x + threadIdx.x;
    __cluster_barrier_arrive();
    __cluster_barrier_wait();
    const float *theirs = (const float *)__cluster_map_shared_rank(t, rank ^ 1);
    float *row = out + 3 * 64 * blockIdx.x;
    row[threadIdx.x] = t[threadIdx.x];
    row[64 + threadIdx.x] = theirs[threadIdx.x];
    const bool remote = __isClusterShared(theirs) && !__isCtaShared(theirs) && __isCtaShared(t);
    row[128 + threadIdx.x] = 100 * __clusterSizeInBlocks() + 10 * __clusterIdx().x +
                             __cluster_query_shared_rank(theirs) + (remote ? 1000 : 0);
    __cluster_barrier_arrive();
    __cluster_barrier_wait();
}

// Every thread writes the same element, with no barrier between.
extern "C" __global__ void __cluster_dims__(2, 1, 1) racy(float *out) {
    __shared__ float tile[64];
    tile[5] = threadIdx.x;
    out[blockIdx.x * 64 + threadIdx.x] = 0.0f;
}
"#;

/// Apart from [`CLUSTERS`]: its atomics would keep a block sample from running the others.
const UNPUBLISHED: &str = r#"
#include "lab/hopper.h"
#define THREADS 64

// Block 0 initializes its barrier and raises a flag in global memory; block 1 waits for the
// flag and arrives on block 0's barrier: no cluster barrier orders the init before the arrival.
extern "C" __global__ void __cluster_dims__(2, 1, 1) unpublished(float *out) {
    extern __shared__ unsigned long long bar[];
    int *flag = (int *)out + 2 * THREADS;
    const unsigned rank = hopper::cluster_ctarank();
    if (rank == 0 && threadIdx.x == 0) {
        hopper::mbar_init(bar, 1);
        atomicExch(flag, 1);
    }
    if (rank == 1 && threadIdx.x == 0) {
        while (atomicAdd(flag, 0) != 1) __nanosleep(100);
        hopper::mbar_arrive_cluster(bar, 0);
    }
    if (rank == 0 && threadIdx.x == 0) hopper::mbar_wait(bar, 0);
    hopper::cluster_sync();
    out[blockIdx.x * THREADS + threadIdx.x] = 1.0f;
}
"#;

const THREADS: u32 = 64;

fn launch(code: &'static str, entry: &str, grid: u32) -> Launch {
    Launch {
        source: CudaSource::embedded("tests/cluster.cu", code),
        entry: entry.to_string().into(),
        grid: [grid, 1, 1],
        block: [THREADS, 1, 1],
        dynamic_smem: THREADS * 4,
        args: vec![Arg::Ptr(Buf::Output)],
    }
}

/// Runs `l` with an output of `n` floats (NaN before the run).
fn run(dev: &SimDevice, l: Launch, n: usize) -> Result<Vec<f32>, DeviceError> {
    let plan = CudaPlan {
        inputs: vec![Dtype::F32; 2],
        steps: vec![Step::Kernel(l)],
        ..Default::default()
    };
    let shape = Shape::gemm(1, n, 1);
    let data = inputs(&shape, 7);
    let k = PlanKernel::fp32(plan);
    let mut p = dev.prepare(&k, &shape, &data)?;
    p.run()?;
    p.output()
}

fn sim() -> SimDevice {
    SimDevice::new().expect("the simulator needs a host C++ compiler")
}

fn error(r: Result<Vec<f32>, DeviceError>) -> String {
    match r {
        Err(e) => e.to_string(),
        Ok(_) => panic!("expected an error"),
    }
}

#[test]
fn the_blocks_of_a_cluster_read_each_others_shared_memory_after_a_cluster_barrier() {
    // Two clusters of two blocks, under several schedules (which block runs first, thread
    // orders, when copies land).
    let blocks = 4;
    for seed in 0..6 {
        let dev = sim().with_seed(seed);
        let n = (blocks * THREADS + blocks) as usize;
        let out = run(&dev, launch(CLUSTERS, "exchange", blocks), n).unwrap();
        for b in 0..blocks {
            for t in 0..THREADS {
                let want = 1000.0 * f64::from(b ^ 1) + f64::from(t);
                let got = out[(b * THREADS + t) as usize];
                assert_eq!(f64::from(got), want, "seed {seed}: block {b} thread {t}");
            }
            let rank = out[(blocks * THREADS + b) as usize];
            assert_eq!(rank, (b % 2) as f32, "seed {seed}: block {b}'s rank");
        }
    }
}

#[test]
fn threads_that_exit_count_as_arrived_at_a_cluster_barrier() {
    for seed in 0..4 {
        let out = run(
            &sim().with_seed(seed),
            launch(CLUSTERS, "half_exit", 2),
            128,
        )
        .unwrap_or_else(|e| panic!("seed {seed}: {e}"));
        for (i, v) in out.iter().enumerate() {
            assert_eq!(v.is_nan(), i % 64 >= 32, "seed {seed}: element {i} is {v}");
        }
    }
}

#[test]
fn a_block_sample_runs_whole_clusters() {
    // Four clusters; a sample of 3 blocks runs 2 whole clusters (the grid's two corners),
    // each block reading its partner's memory.
    let blocks = 8;
    let n = (blocks * THREADS + blocks) as usize;
    let out = run(
        &sim().with_block_sample(3),
        launch(CLUSTERS, "exchange", blocks),
        n,
    )
    .unwrap();
    for b in 0..blocks {
        let ran = !(2..6).contains(&b);
        let got = out[(b * THREADS) as usize];
        if ran {
            assert_eq!(f64::from(got), 1000.0 * f64::from(b ^ 1), "block {b}");
        } else {
            assert!(got.is_nan(), "block {b} ran: {got}");
        }
    }
}

#[test]
fn an_arrival_on_a_block_that_has_exited_is_reported() {
    for seed in 0..3 {
        let msg = error(run(
            &sim().with_seed(seed),
            launch(CLUSTERS, "early_exit", 2),
            64,
        ));
        assert!(
            msg.contains("early_exit: mbarrier.arrive.shared::cluster targets block (1,0,0)")
                && msg.contains("whose threads have all exited"),
            "{msg}"
        );
    }
}

/// An mbarrier another block of the cluster arrives on must be initialized before a cluster
/// barrier both have passed since: on a GPU the init may not be visible to the other block
/// otherwise, and an init landing after the arrival wipes it.
#[test]
fn an_arrival_on_a_partners_mbarrier_no_cluster_barrier_published_is_reported() {
    for seed in 0..3 {
        let msg = error(run(
            &sim().with_seed(seed),
            launch(UNPUBLISHED, "unpublished", 2),
            2 * THREADS as usize + 1,
        ));
        assert!(
            msg.contains("mbarrier.arrive.shared::cluster on the mbarrier at shared address 0x")
                && msg.contains(
                    "of the cluster's block of rank 0, and no cluster barrier has completed \
                     since that block's mbarrier.init"
                ),
            "seed {seed}: {msg}"
        );
    }
}

#[test]
fn a_deadlock_across_the_blocks_of_a_cluster_names_where_each_block_waits() {
    let msg = error(run(&sim(), launch(CLUSTERS, "stuck", 2), 64));
    for want in [
        "stuck: deadlock at an mbarrier wait in block (0,0,0)",
        "1 of 1 arrivals pending",
        "block (1,0,0) of its cluster: 0 of 64 threads exited",
        "64 at barrier.cluster.wait",
    ] {
        assert!(msg.contains(want), "lacks {want:?}: {msg}");
    }
}

#[test]
fn a_grid_the_cluster_does_not_divide_is_refused() {
    let msg = error(run(&sim(), launch(CLUSTERS, "exchange", 3), 64));
    assert!(
        msg.contains("grid [3, 1, 1] in clusters of [2, 1, 1] blocks") && msg.contains("divide"),
        "{msg}"
    );
}

#[test]
fn each_block_of_a_cluster_has_its_own_static_shared_variables() {
    let blocks = 4;
    for seed in 0..4 {
        let dev = sim().with_seed(seed);
        let out = run(
            &dev,
            launch(STATIC_SHARED, "with_static", blocks),
            3 * 64 * 4,
        )
        .unwrap();
        for b in 0..blocks {
            for t in 0..THREADS {
                let row = |part: u32| out[((3 * b + part) * THREADS + t) as usize];
                let own = 1000.0 * b as f32 + t as f32;
                let partner = 1000.0 * (b ^ 1) as f32 + t as f32;
                let at = format!("seed {seed}: block {b} thread {t}");
                assert_eq!(row(0), own, "{at}: its own element");
                assert_eq!(row(1), partner, "{at}: its partner's");
                assert_eq!(row(2), -partner, "{at}: its partner's, at file scope");
            }
        }
    }
}

#[test]
fn the_cuda_runtimes_cluster_functions_reach_the_partners_shared_memory() {
    let blocks = 4;
    let out = run(&sim(), launch(STATIC_SHARED, "runtime", blocks), 3 * 64 * 4).unwrap();
    for b in 0..blocks {
        for t in 0..THREADS {
            let row = |part: u32| out[((3 * b + part) * THREADS + t) as usize];
            assert_eq!(row(0), 1000.0 * b as f32 + t as f32, "block {b} thread {t}");
            assert_eq!(
                row(1),
                1000.0 * (b ^ 1) as f32 + t as f32,
                "block {b} thread {t}"
            );
            let place = 1000 + 200 + 10 * (b / 2) + ((b % 2) ^ 1);
            assert_eq!(row(2), place as f32, "block {b} thread {t}");
        }
    }
}

#[test]
fn misuse_of_a_blocks_copy_of_a_static_array_names_the_array_as_written() {
    let dev = sim().instrumented();
    let msg = error(run(&dev, launch(STATIC_SHARED, "past_end", 2), 128));
    assert!(
        msg.contains("index 64 is outside the array `tile`"),
        "{msg}"
    );
    let msg = error(run(&dev, launch(STATIC_SHARED, "racy", 2), 128));
    assert!(
        msg.contains("race on shared memory")
            && msg.contains("__shared__ 'tile' (in racy), byte 20"),
        "{msg}"
    );
}

#[test]
fn nvrtc_compiles_the_cluster_kernels_for_sm90a() {
    if let Err(e) = nvrtc::version() {
        panic!("{e}\nThis test needs NVRTC: run tools/install-cuda-tools.sh first.");
    }
    let src = CudaSource::embedded("tests/cluster.cu", CLUSTERS).for_arch("sm_90a");
    let c = nvrtc::compile(&src, "sm_90").unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(c.resources.len(), 4, "{:?}", c.resources);
    for want in [
        "mapa",
        "barrier.cluster.arrive",
        "mbarrier.arrive.release.cluster.shared::cluster",
    ] {
        assert!(c.ptx.contains(want), "no {want} in the PTX");
    }
    let src = CudaSource::embedded("tests/cluster.cu", UNPUBLISHED).for_arch("sm_90a");
    let c = nvrtc::compile(&src, "sm_90").unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(c.resources.len(), 1, "{:?}", c.resources);
}
