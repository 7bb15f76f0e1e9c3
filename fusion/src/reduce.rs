//! The sum of a vector, y = x[0] + ... + x[N-1], as a ladder of its own: the classic parallel
//! reduction. The first five rungs sum a block's elements by a tree and launch again on the
//! blocks' partial sums until one is left; each changes how the tree uses threads, banks and
//! barriers. The last three keep the grid fixed: each thread sums many elements first, then
//! two launches, then one. The lesson is what a DRAM-bound kernel must do besides reading
//! its bytes once.

use kernel::{
    Arg, Bound, Buf, CpuPort, CudaPlan, CudaSource, Dtype, Kernel, KernelInfo, Launch, Lineage,
    Precision, Role, Scratch, Shape, Stage, Step, Workload, cuda_source,
};
use rayon::prelude::*;

/// The reduction rungs of this crate, in ladder order.
pub fn kernels() -> Vec<Box<dyn Kernel>> {
    let mut all: Vec<Box<dyn Kernel>> = Vec::new();
    for rung in tree_rungs() {
        all.push(Box::new(rung));
    }
    for rung in two_launch_rungs() {
        all.push(Box::new(rung));
    }
    all.push(Box::new(ReduceOnePass));
    all
}

/// Threads per block of every launch (the kernels' `BLOCK`).
const BLOCK: usize = 256;
/// Lanes of a warp.
const LANES: usize = 32;
/// Blocks of the fixed-grid rungs (the kernels' grid, at most): as many 256-thread blocks as
/// an H100 holds at once (132 SMs of 8), rounded down to a power of two.
const GRID: usize = 1024;

/// `n` of a reduction shape. The harness only hands a kernel its own workload.
fn elements(shape: &Shape) -> usize {
    match *shape {
        Shape::Reduce { n } => n,
        other => panic!("a reduction kernel was given {other}"),
    }
}

fn info(id: &'static str, rung: u32, summary: &'static str) -> KernelInfo {
    KernelInfo {
        id: id.into(),
        workload: Workload::Reduce,
        stage: Stage::Fusion,
        precision: Precision::Fp32,
        role: Role::Rung,
        rung,
        summary: summary.into(),
    }
}

/// The launch `(src, dst, count)` of `entry` over `grid` blocks.
fn launch(
    source: CudaSource,
    entry: &'static str,
    grid: usize,
    src: Buf,
    dst: Buf,
    count: usize,
) -> Launch {
    Launch {
        source,
        entry: entry.into(),
        grid: [grid as u32, 1, 1],
        block: [BLOCK as u32, 1, 1],
        dynamic_smem: 0,
        args: vec![Arg::Ptr(src), Arg::Ptr(dst), Arg::I32(count as i32)],
    }
}

/// The plan of a tree rung: a block sums `per_block` elements into one partial sum, and the
/// kernel is launched again on the partial sums until one is left, the last launch writing y.
/// The passes alternate between two scratch buffers of partial sums.
fn tree_plan(source: CudaSource, entry: &'static str, n: usize, per_block: usize) -> CudaPlan {
    let mut steps = Vec::new();
    let (mut count, mut src) = (n, Buf::Input(0));
    loop {
        let grid = count.div_ceil(per_block);
        let dst = if grid == 1 {
            Buf::Output
        } else {
            Buf::Scratch(steps.len() % 2)
        };
        steps.push(Step::Kernel(launch(
            source.clone(),
            entry,
            grid,
            src,
            dst,
            count,
        )));
        if grid == 1 {
            break;
        }
        (count, src) = (grid, dst);
    }
    let first = n.div_ceil(per_block);
    let scratch = [
        ("partial sums", first),
        ("their partial sums", first.div_ceil(per_block)),
    ]
    .into_iter()
    .take(steps.len() - 1)
    .map(|(name, len)| Scratch::new(name, Dtype::F32, len))
    .collect();
    CudaPlan {
        inputs: vec![Dtype::F32],
        output: Dtype::F32,
        scratch,
        steps,
        ..Default::default()
    }
}

/// Blocks of a fixed-grid launch over `n` elements read `per_thread` at a time: no more than
/// [`GRID`], and none without work.
fn fixed_grid(n: usize, per_thread: usize) -> usize {
    n.div_ceil(per_thread * BLOCK).clamp(1, GRID)
}

/// The plan of a fixed-grid rung: one launch over x into the blocks' partial sums, then one
/// block over those into y (a single launch where one block covers x).
fn two_launch_plan(
    source: CudaSource,
    entry: &'static str,
    n: usize,
    per_thread: usize,
) -> CudaPlan {
    let grid = fixed_grid(n, per_thread);
    if grid == 1 {
        return CudaPlan::single(1, launch(source, entry, 1, Buf::Input(0), Buf::Output, n));
    }
    CudaPlan {
        inputs: vec![Dtype::F32],
        output: Dtype::F32,
        scratch: vec![Scratch::new("partial sums", Dtype::F32, grid)],
        steps: vec![
            Step::Kernel(launch(
                source.clone(),
                entry,
                grid,
                Buf::Input(0),
                Buf::Scratch(0),
                n,
            )),
            Step::Kernel(launch(source, entry, 1, Buf::Scratch(0), Buf::Output, grid)),
        ],
        ..Default::default()
    }
}

// The CPU ports mirror each rung's order of additions, so that a port's sum rounds as the
// rung's does: the tree of a block, the warp's shuffles, a thread's running sum.

/// A block's 256 values, loaded (zeros past the end).
fn load_block(chunk: &[f32]) -> [f32; BLOCK] {
    let mut s = [0.0f32; BLOCK];
    s[..chunk.len()].copy_from_slice(chunk);
    s
}

/// Rungs 01 and 02: at stride 1, 2, ..., 128 the element at each multiple of 2 x stride adds
/// the one `stride` to its right.
fn tree_of_pairs(mut s: [f32; BLOCK]) -> f32 {
    let mut stride = 1;
    while stride < BLOCK {
        for k in (0..BLOCK).step_by(2 * stride) {
            s[k] += s[k + stride];
        }
        stride *= 2;
    }
    s[0]
}

/// Rungs 03 and 04: at stride 128, 64, ..., 1 the first `stride` elements add the next.
fn tree_of_halves(mut s: [f32; BLOCK]) -> f32 {
    let mut stride = BLOCK / 2;
    while stride > 0 {
        for t in 0..stride {
            s[t] += s[t + stride];
        }
        stride /= 2;
    }
    s[0]
}

/// `__shfl_down_sync` by 16, 8, 4, 2, 1: lane l adds lane l + o; lane 0 ends with the sum. (A
/// lane whose l + o is past the warp adds its own value, which never reaches lane 0.)
fn warp_sum(mut lanes: [f32; LANES]) -> f32 {
    let mut o = LANES / 2;
    while o > 0 {
        for l in 0..LANES - o {
            lanes[l] += lanes[l + o];
        }
        o /= 2;
    }
    lanes[0]
}

/// Rungs 05 to 08: each warp's shuffles, then the first warp's over the 8 warps' sums.
fn block_sum(threads: &[f32; BLOCK]) -> f32 {
    let mut warps = [0.0f32; LANES];
    for (w, lanes) in threads.chunks_exact(LANES).enumerate() {
        warps[w] = warp_sum(lanes.try_into().expect("a warp is 32 lanes"));
    }
    warp_sum(warps)
}

/// The rounds of a tree rung: each round sums `per_block` values per block, until one is left.
fn by_passes(x: &[f32], per_block: usize, block: impl Fn(&[f32]) -> f32 + Sync) -> f32 {
    let mut partials = x
        .par_chunks(per_block)
        .with_min_len(64)
        .map(&block)
        .collect::<Vec<_>>();
    while partials.len() > 1 {
        partials = partials
            .par_chunks(per_block)
            .with_min_len(64)
            .map(&block)
            .collect();
    }
    partials[0]
}

/// Rungs 04 and 05: thread t of a block of 512 elements holds element t plus element t + 256.
fn first_add(chunk: &[f32]) -> [f32; BLOCK] {
    let mut s = load_block(&chunk[..chunk.len().min(BLOCK)]);
    for (v, &w) in s.iter_mut().zip(chunk.iter().skip(BLOCK)) {
        *v += w;
    }
    s
}

/// The running sums of the `grid` x 256 threads of a fixed-grid launch over `x`: thread g adds
/// its items g, g + T, g + 2T, ... (T threads) in order, `item` giving an item's value. The
/// items are walked T at a time, so that memory is read in order; rayon splits the threads.
fn thread_sums(items: usize, grid: usize, item: impl Fn(usize) -> f32 + Sync) -> Vec<f32> {
    let threads = grid * BLOCK;
    let mut sums = vec![0.0f32; threads];
    sums.par_chunks_mut(BLOCK)
        .enumerate()
        .for_each(|(b, block)| {
            for round in (0..items).step_by(threads) {
                let first = round + b * BLOCK;
                for (t, v) in block
                    .iter_mut()
                    .enumerate()
                    .take(items.saturating_sub(first))
                {
                    *v += item(first + t);
                }
            }
        });
    sums
}

/// The partial sums of the blocks of a fixed-grid launch, from its threads' running sums.
fn block_sums(threads: &[f32]) -> Vec<f32> {
    threads
        .chunks_exact(BLOCK)
        .map(|b| block_sum(b.try_into().expect("a block is 256 threads")))
        .collect()
}

/// Rung 06's launch over `x`: running sums of single elements.
fn grid_stride_launch(x: &[f32], grid: usize) -> Vec<f32> {
    block_sums(&thread_sums(x.len(), grid, |i| x[i]))
}

/// Rungs 07 and 08's launch over `x`: running sums of float4s as (x0 + x1) + (x2 + x3), then
/// thread g adds element 4 (N / 4) + g of the last N % 4.
fn float4_launch(x: &[f32], grid: usize) -> Vec<f32> {
    let quads = x.len() / 4;
    let mut threads = thread_sums(quads, grid, |i| {
        let q = &x[4 * i..4 * i + 4];
        (q[0] + q[1]) + (q[2] + q[3])
    });
    for (v, &w) in threads.iter_mut().zip(&x[4 * quads..]) {
        *v += w;
    }
    block_sums(&threads)
}

/// One block over the partial sums, as rungs 06 and 07 launch it last (or alone).
fn last_launch(partials: &[f32], launch: fn(&[f32], usize) -> Vec<f32>) -> f32 {
    launch(partials, 1)[0]
}

/// How a rung of 01 to 07 launches: its plan and the elements that plan's unit covers.
#[derive(Clone, Copy)]
enum Passes {
    /// A tree per block of `per_block` elements (256, or 512 where each thread adds two as it
    /// loads), launched again on the partial sums until one is left.
    Tree { per_block: usize },
    /// A fixed grid whose threads read `per_thread` elements a trip (1, or 4 as a float4),
    /// then one block over its partial sums.
    TwoLaunches { per_thread: usize },
}

/// Rungs 01 to 07: they differ in their source, how they launch and their port.
pub struct SumRung {
    id: &'static str,
    rung: u32,
    summary: &'static str,
    lineage: Lineage,
    source: fn() -> CudaSource,
    entry: &'static str,
    passes: Passes,
    port: CpuPort,
}

impl Kernel for SumRung {
    fn lineage(&self) -> Option<Lineage> {
        Some(self.lineage)
    }

    fn info(&self) -> KernelInfo {
        info(self.id, self.rung, self.summary)
    }

    fn cuda(&self, shape: &Shape) -> Option<CudaPlan> {
        let (source, n) = ((self.source)(), elements(shape));
        Some(match self.passes {
            Passes::Tree { per_block } => tree_plan(source, self.entry, n, per_block),
            Passes::TwoLaunches { per_thread } => {
                two_launch_plan(source, self.entry, n, per_thread)
            }
        })
    }

    fn cpu(&self) -> Option<CpuPort> {
        Some(self.port)
    }
}

/// Rungs 01 to 05, in ladder order.
fn tree_rungs() -> [SumRung; 5] {
    [
        SumRung {
            id: "reduce-interleaved",
            rung: 1,
            summary: "a tree of pairs in shared memory per 256 elements, the active threads spread over every warp; launched again on the partial sums",
            lineage: Lineage {
                parent: None,
                idea: "a block of 256 threads sums 256 elements by a tree of pairs in shared memory, the threads at multiples of 2s adding at stride s; the kernel is launched again on the partial sums until one is left",
                bound: None,
            },
            source: || cuda_source!("fusion", "reduce/01_interleaved.cu"),
            entry: "reduce_interleaved",
            passes: Passes::Tree { per_block: BLOCK },
            port: cpu_pairs,
        },
        SumRung {
            id: "reduce-strided",
            rung: 2,
            summary: "rung 01's pairs added by threads 0, 1, 2, ...: whole warps idle, but strided shared-memory accesses conflict",
            lineage: Lineage {
                parent: Some("reduce-interleaved"),
                idea: "the same pairs added by the first threads of the block (thread t at 2st): whole warps leave the tree's shared-memory requests instead of every warp keeping a few lanes, at the price of 2- to 16-way bank conflicts",
                bound: Some(Bound::SharedTraffic),
            },
            source: || cuda_source!("fusion", "reduce/02_strided.cu"),
            entry: "reduce_strided",
            passes: Passes::Tree { per_block: BLOCK },
            port: cpu_pairs,
        },
        SumRung {
            id: "reduce-sequential",
            rung: 3,
            summary: "the block's halves added, then the first half's halves, ...: no bank conflicts",
            lineage: Lineage {
                parent: Some("reduce-strided"),
                idea: "sequential addressing: thread t < s adds element t + s at s = 128, 64, ..., 1, so a warp's lanes touch consecutive words, one per bank",
                bound: Some(Bound::SharedTraffic),
            },
            source: || cuda_source!("fusion", "reduce/03_sequential.cu"),
            entry: "reduce_sequential",
            passes: Passes::Tree { per_block: BLOCK },
            port: cpu_halves,
        },
        SumRung {
            id: "reduce-first-add",
            rung: 4,
            summary: "rung 03 with each thread loading and adding two elements: 512 per block",
            lineage: Lineage {
                parent: Some("reduce-sequential"),
                idea: "the first step while loading: each thread adds two elements 256 apart, so a block covers 512 and half the blocks pay the tree",
                bound: Some(Bound::Issue),
            },
            source: || cuda_source!("fusion", "reduce/04_first_add.cu"),
            entry: "reduce_first_add",
            passes: Passes::Tree {
                per_block: 2 * BLOCK,
            },
            port: cpu_first_add,
        },
        SumRung {
            id: "reduce-warp-shuffle",
            rung: 5,
            summary: "rung 04 with warp shuffles instead of the shared-memory tree: one __syncthreads",
            lineage: Lineage {
                parent: Some("reduce-first-add"),
                idea: "each warp sums its 32 values in registers with __shfl_down_sync, shared memory holding only the 8 warps' sums: one barrier per block instead of 9",
                bound: Some(Bound::Issue),
            },
            source: || cuda_source!("fusion", "reduce/05_warp_shuffle.cu"),
            entry: "reduce_warp_shuffle",
            passes: Passes::Tree {
                per_block: 2 * BLOCK,
            },
            port: cpu_warp_shuffle,
        },
    ]
}

fn cpu_pairs(shape: &Shape, inputs: &[&[f32]], out: &mut [f32]) {
    debug_assert_eq!(inputs[0].len(), elements(shape));
    out[0] = by_passes(inputs[0], BLOCK, |c| tree_of_pairs(load_block(c)));
}

fn cpu_halves(shape: &Shape, inputs: &[&[f32]], out: &mut [f32]) {
    debug_assert_eq!(inputs[0].len(), elements(shape));
    out[0] = by_passes(inputs[0], BLOCK, |c| tree_of_halves(load_block(c)));
}

fn cpu_first_add(shape: &Shape, inputs: &[&[f32]], out: &mut [f32]) {
    debug_assert_eq!(inputs[0].len(), elements(shape));
    out[0] = by_passes(inputs[0], 2 * BLOCK, |c| tree_of_halves(first_add(c)));
}

fn cpu_warp_shuffle(shape: &Shape, inputs: &[&[f32]], out: &mut [f32]) {
    debug_assert_eq!(inputs[0].len(), elements(shape));
    out[0] = by_passes(inputs[0], 2 * BLOCK, |c| block_sum(&first_add(c)));
}

/// Rungs 06 and 07, in ladder order.
fn two_launch_rungs() -> [SumRung; 2] {
    [
        SumRung {
            id: "reduce-grid-stride",
            rung: 6,
            summary: "a fixed grid, each thread summing many elements (grid-stride loop) before rung 05's shuffles; at most 2 launches",
            lineage: Lineage {
                parent: Some("reduce-warp-shuffle"),
                idea: "a fixed grid of at most 1024 blocks, each thread first summing its elements i, i + T, i + 2T, ... in a register: the tree paid once per thread instead of once per 2 elements, and at most 2 launches whatever N (1 where one block covers x)",
                bound: Some(Bound::Issue),
            },
            source: || cuda_source!("fusion", "reduce/06_grid_stride.cu"),
            entry: "reduce_grid_stride",
            passes: Passes::TwoLaunches { per_thread: 1 },
            port: cpu_grid_stride,
        },
        SumRung {
            id: "reduce-float4",
            rung: 7,
            summary: "rung 06 with 16-byte float4 loads; at most 2 launches",
            lineage: Lineage {
                parent: Some("reduce-grid-stride"),
                idea: "float4 loads: one 16-byte load instruction per 4 elements, a quarter of the loop's trips",
                bound: Some(Bound::Issue),
            },
            source: || cuda_source!("fusion", "reduce/07_float4.cu"),
            entry: "reduce_float4",
            passes: Passes::TwoLaunches { per_thread: 4 },
            port: cpu_float4,
        },
    ]
}

fn cpu_grid_stride(_shape: &Shape, inputs: &[&[f32]], out: &mut [f32]) {
    let x = inputs[0];
    out[0] = last_launch(
        &grid_stride_launch(x, fixed_grid(x.len(), 1)),
        grid_stride_launch,
    );
}

fn cpu_float4(_shape: &Shape, inputs: &[&[f32]], out: &mut [f32]) {
    let x = inputs[0];
    out[0] = last_launch(&float4_launch(x, fixed_grid(x.len(), 4)), float4_launch);
}

/// `reduce/08_one_pass.cu`: rung 07 in one launch, the last block to finish summing the
/// blocks' partial sums.
pub struct ReduceOnePass;

impl Kernel for ReduceOnePass {
    fn lineage(&self) -> Option<Lineage> {
        Some(Lineage {
            parent: Some("reduce-float4"),
            idea: "one launch: each block publishes its partial sum (__threadfence, then an atomic count), and the block that counts last sums them",
            bound: Some(Bound::LaunchOverhead),
        })
    }

    fn info(&self) -> KernelInfo {
        info(
            "reduce-one-pass",
            8,
            "rung 07 in one launch: the last block to finish sums the partial sums",
        )
    }

    fn cuda(&self, shape: &Shape) -> Option<CudaPlan> {
        let n = elements(shape);
        let grid = fixed_grid(n, 4);
        let mut plan = CudaPlan::single(
            1,
            Launch {
                source: cuda_source!("fusion", "reduce/08_one_pass.cu"),
                entry: "reduce_one_pass".into(),
                grid: [grid as u32, 1, 1],
                block: [BLOCK as u32, 1, 1],
                dynamic_smem: 0,
                args: vec![
                    Arg::Ptr(Buf::Input(0)),
                    Arg::Ptr(Buf::Scratch(0)),
                    Arg::Ptr(Buf::Scratch(1)),
                    Arg::Ptr(Buf::Output),
                    Arg::I32(n as i32),
                ],
            },
        );
        // The counter is an unsigned int, zero at the start of the first run; the kernel sets
        // it back to zero for the next (zero bits are 0 in either type).
        plan.scratch = vec![
            Scratch::new("partial sums", Dtype::F32, grid),
            Scratch::new("blocks done", Dtype::F32, 1),
        ];
        Some(plan)
    }

    fn cpu(&self) -> Option<CpuPort> {
        Some(cpu_one_pass)
    }
}

/// The last block reads the partial sums one per thread at a stride of 256, not as float4.
fn cpu_one_pass(_shape: &Shape, inputs: &[&[f32]], out: &mut [f32]) {
    let x = inputs[0];
    out[0] = last_launch(
        &float4_launch(x, fixed_grid(x.len(), 4)),
        grid_stride_launch,
    );
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every port against the f64 reference on random inputs (never zeros): one element,
    /// fewer than a warp, a block plus one, sizes that take one, two and three passes of the
    /// tree rungs and the fixed-grid rungs' full grid with an N % 4 tail.
    #[test]
    fn ports_agree_with_the_reference() {
        for n in [1, 7, 257, 513, 70_001, 300_000, 1_048_579] {
            let shape = Shape::Reduce { n };
            let x = kernel::testing::inputs(&shape, 5);
            let want = kernel::reference::reference(&shape, &x);
            for k in kernels() {
                let mut out = [f32::NAN];
                (k.cpu().expect("every rung has a port"))(&shape, &[&x[0]], &mut out);
                let err = kernel::testing::relative_error(&out, &want);
                assert!(
                    err < 1e-6,
                    "{} at N = {n}: {} against {}, error {err}",
                    k.info().id,
                    out[0],
                    want[0]
                );
            }
        }
    }

    /// The plans: how many launches each needs, and that each launch reads what the one
    /// before wrote.
    #[test]
    fn the_tree_rungs_launch_until_one_sum_is_left() {
        let [interleaved, _, sequential, first_add, _] = tree_rungs();
        let [grid_stride, _] = two_launch_rungs();
        let launches = |k: &dyn Kernel, n| k.cuda(&Shape::Reduce { n }).unwrap().steps.len();
        assert_eq!(launches(&sequential, 256), 1);
        assert_eq!(launches(&sequential, 257), 2);
        assert_eq!(launches(&sequential, 1 << 24), 3);
        assert_eq!(launches(&first_add, 1 << 17), 2);
        assert_eq!(launches(&sequential, 1 << 17), 3);
        assert_eq!(launches(&grid_stride, 256), 1);
        assert_eq!(launches(&grid_stride, 1 << 24), 2);
        assert_eq!(launches(&ReduceOnePass, 1 << 24), 1);
        let plan = interleaved.cuda(&Shape::Reduce { n: 1 << 24 }).unwrap();
        let bufs: Vec<(Buf, Buf)> = plan
            .steps
            .iter()
            .map(|s| match s {
                Step::Kernel(l) => match l.args[..2] {
                    [Arg::Ptr(a), Arg::Ptr(b)] => (a, b),
                    _ => panic!("{l:?}"),
                },
                other => panic!("{other:?}"),
            })
            .collect();
        assert_eq!(
            bufs,
            [
                (Buf::Input(0), Buf::Scratch(0)),
                (Buf::Scratch(0), Buf::Scratch(1)),
                (Buf::Scratch(1), Buf::Output)
            ]
        );
        assert_eq!(
            plan.scratch.iter().map(|s| s.len).collect::<Vec<_>>(),
            [65536, 256]
        );
    }
}
