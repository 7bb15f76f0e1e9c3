//! `lab/hopper.h` against the PTX ISA: the simulator's emulation of TMA tensor copies,
//! mbarriers and wgmma checked against the documented layouts (section numbers of PTX ISA 9.1):
//! the swizzle tables of 5.5.7 and out-of-bounds fill (5.5.3.3); mbarrier phases, arrivals and
//! transaction counts (9.7.13.15); wgmma's shared-memory matrix layouts through descriptors
//! for every swizzle mode and major-ness, written here as CuTe layouts (shape:stride) and the
//! worked examples of 9.7.15.5.1.2, and its register fragments (9.7.15.5.1.1); the misuse the
//! emulation reports; a second Hopper GEMM shape (m64n256k16, two consumer warpgroups, 64B
//! swizzle, setmaxnreg); and NVRTC compiling the kernels for sm_90a.

use kernel::cuda::nvrtc;
use kernel::sim::SimDevice;
use kernel::testing::{PlanKernel, gemm_f64, inputs, relative_error};
use kernel::{
    Arg, Buf, CudaPlan, CudaSource, DeviceError, Dtype, Executor, Launch, Precision, Shape, Step,
    TensorMap, TmaSwizzle,
};

fn source(code: &'static str) -> CudaSource {
    CudaSource::embedded("tests/hopper.cu", code)
}

fn launch(src: CudaSource, entry: &str, block: u32, smem: u32, args: Vec<Arg>) -> Launch {
    Launch {
        source: src,
        entry: entry.to_string().into(),
        grid: [1, 1, 1],
        block: [block, 1, 1],
        dynamic_smem: smem,
        args,
    }
}

/// Runs `l` in the simulator on a GEMM shape (inputs A and B of type `input`, output C).
fn run(
    dev: &SimDevice,
    l: Launch,
    input: Dtype,
    shape: Shape,
    data: &[Vec<f32>],
) -> Result<Vec<f32>, DeviceError> {
    let plan = CudaPlan {
        inputs: vec![input; 2],
        steps: vec![Step::Kernel(l)],
        ..Default::default()
    };
    let k = PlanKernel {
        plan,
        precision: Precision::Bf16,
    };
    let mut p = dev.prepare(&k, &shape, data)?;
    p.run()?;
    p.output()
}

fn sim() -> SimDevice {
    SimDevice::new().expect("the simulator needs a host C++ compiler")
}

fn sim_error(r: Result<Vec<f32>, DeviceError>) -> String {
    match r {
        Err(DeviceError::Sim(msg)) => msg,
        other => panic!("expected a simulator error, got {:?}", other.map(|_| ())),
    }
}

/// The swizzle of PTX ISA 5.5.7 on a byte address (an involution): the 16-byte chunk c of
/// 128-byte line L moves to c XOR (L mod W), W = span / 16.
fn swizzle(a: usize, span: usize) -> usize {
    if span == 0 {
        a
    } else {
        a ^ (((a >> 7) & (span / 16 - 1)) << 4)
    }
}

// ---- TMA ----

const TMA_BOX: &str = r#"
#include "lab/hopper.h"
extern "C" __global__ void tma_box(const __grid_constant__ CUtensorMap map, float *out, int c0, int c1,
                                   int floats) {
    extern __shared__ unsigned char raw[];
    const unsigned pad = (1024 - (hopper::smem(raw) & 1023)) & 1023;
    float *tile = reinterpret_cast<float *>(raw + pad);
    __shared__ __align__(8) unsigned long long bar;
    if (threadIdx.x == 0) {
        hopper::mbar_init(&bar, 1);
        hopper::fence_barrier_init();
    }
    __syncthreads();
    if (threadIdx.x == 0) {
        hopper::mbar_expect_tx(&bar, floats * 4);
        hopper::tma_load_2d(tile + MISALIGN, &map, &bar, c0, c1);
    }
#if !NO_WAIT
    hopper::mbar_wait(&bar, 0);
#endif
    for (int i = threadIdx.x; i < floats; i += blockDim.x) out[i] = tile[i];
#if NO_WAIT && !NEVER_WAIT
    hopper::mbar_wait(&bar, 0);  // after the reads, so that the copy lands before the block ends
#endif
}
"#;

fn tma_source(no_wait: bool, misalign: u32) -> CudaSource {
    source(TMA_BOX)
        .define("NO_WAIT", i32::from(no_wait))
        .define("NEVER_WAIT", 0)
        .define("MISALIGN", misalign)
}

/// A 40 x 44 f32 matrix with A[r][c] = 1 + 100 r + c (exact), as the GEMM's input A.
const ROWS: usize = 40;
const COLS: usize = 44;

fn code(r: i64, c: i64) -> f32 {
    (1 + 100 * r + c) as f32
}

fn tma_run(
    swz: TmaSwizzle,
    box_cols: u32,
    coords: (i32, i32),
    no_wait: bool,
) -> Result<Vec<f32>, DeviceError> {
    tma_run_source(tma_source(no_wait, 0), swz, box_cols, coords)
}

fn tma_run_source(
    src: CudaSource,
    swz: TmaSwizzle,
    box_cols: u32,
    (c0, c1): (i32, i32),
) -> Result<Vec<f32>, DeviceError> {
    let box_rows = 16u32;
    let floats = (box_rows * box_cols) as usize;
    let map = TensorMap::matrix(Buf::Input(0), ROWS, COLS, box_rows, box_cols, swz);
    let shape = Shape::gemm(ROWS, 13, COLS);
    let a: Vec<f32> = (0..ROWS * COLS)
        .map(|i| code((i / COLS) as i64, (i % COLS) as i64))
        .collect();
    let data = vec![a, vec![0.0; COLS * 13]];
    let l = launch(
        src,
        "tma_box",
        32,
        1024 + floats as u32 * 4,
        vec![
            Arg::TensorMap(map),
            Arg::Ptr(Buf::Output),
            Arg::I32(c0),
            Arg::I32(c1),
            Arg::I32(floats as i32),
        ],
    );
    let out = run(&sim(), l, Dtype::F32, shape, &data)?;
    Ok(out[..floats].to_vec())
}

#[test]
fn tma_boxes_land_swizzled_with_out_of_bounds_zeros() {
    let cases = [
        (TmaSwizzle::None, 12, 0),
        (TmaSwizzle::B32, 8, 32),
        (TmaSwizzle::B64, 16, 64),
        (TmaSwizzle::B128, 32, 128),
    ];
    // Inside; past the right and bottom edges; before the left and top edges; wholly
    // outside (to the right, below).
    let corners = [
        (0, 0),
        (COLS as i32 - 5, ROWS as i32 - 3),
        (-3, -2),
        (COLS as i32 + 4, 0),
        (0, ROWS as i32),
    ];
    for (swz, box_cols, span) in cases {
        let row_bytes = box_cols as usize * 4;
        for (c0, c1) in corners {
            let out = tma_run(swz, box_cols, (c0, c1), false).unwrap();
            for (o, &got) in out.iter().enumerate() {
                let pre = swizzle(4 * o, span);
                let (r, c) = ((pre / row_bytes) as i64, ((pre % row_bytes) / 4) as i64);
                let (y, x) = (i64::from(c1) + r, i64::from(c0) + c);
                let inside = (0..ROWS as i64).contains(&y) && (0..COLS as i64).contains(&x);
                let want = if inside { code(y, x) } else { 0.0 };
                assert_eq!(got, want, "{swz:?} box at ({c0}, {c1}): shared float {o}");
            }
        }
    }
}

/// A destination line and, for each of its 16-byte chunks, the unswizzled chunk it holds.
type SwizzleRow = (usize, [usize; 8]);

#[test]
fn tma_swizzle_follows_the_ptx_tables() {
    // PTX ISA 5.5.7: in 128-byte line L of the destination, 16-byte chunk j holds the chunk
    // of the unswizzled box given by these rows (the pattern repeats every 8, 4, 2 lines).
    let tables: [(TmaSwizzle, u32, &[SwizzleRow]); 3] = [
        (
            TmaSwizzle::B128,
            32,
            &[
                (1, [1, 0, 3, 2, 5, 4, 7, 6]),
                (3, [3, 2, 1, 0, 7, 6, 5, 4]),
                (6, [6, 7, 4, 5, 2, 3, 0, 1]),
                (9, [1, 0, 3, 2, 5, 4, 7, 6]),
            ],
        ),
        (
            TmaSwizzle::B64,
            16,
            &[
                (1, [1, 0, 3, 2, 5, 4, 7, 6]),
                (2, [2, 3, 0, 1, 6, 7, 4, 5]),
                (4, [0, 1, 2, 3, 4, 5, 6, 7]),
                (7, [3, 2, 1, 0, 7, 6, 5, 4]),
            ],
        ),
        (
            TmaSwizzle::B32,
            8,
            &[
                (1, [1, 0, 3, 2, 5, 4, 7, 6]),
                (2, [0, 1, 2, 3, 4, 5, 6, 7]),
                (3, [1, 0, 3, 2, 5, 4, 7, 6]),
            ],
        ),
    ];
    for (swz, box_cols, rows) in tables {
        let out = tma_run(swz, box_cols, (0, 0), false).unwrap();
        let row_bytes = box_cols as usize * 4;
        for &(line, chunks) in rows {
            for (j, &t) in chunks.iter().enumerate() {
                let pre = line * 128 + 16 * t;
                let want = code((pre / row_bytes) as i64, ((pre % row_bytes) / 4) as i64);
                assert_eq!(
                    out[(line * 128 + 16 * j) / 4],
                    want,
                    "{swz:?} line {line} chunk {j}"
                );
            }
        }
    }
}

#[test]
fn reading_a_tma_box_without_its_mbarrier_wait_reads_the_poison_and_exiting_fails() {
    let out = tma_run(TmaSwizzle::None, 12, (0, 0), true).unwrap();
    // Thread 0 issued the copy and read its elements at once: nothing had landed.
    assert!(out[0].is_nan() && out[32].is_nan(), "{:?}", &out[..4]);
    let with_wait = tma_run(TmaSwizzle::None, 12, (0, 0), false).unwrap();
    assert!(with_wait.iter().all(|v| !v.is_nan()));
    // Without any wait the copy is still in flight when the block ends: its row fails.
    let mut never = tma_source(true, 0);
    never.defines.retain(|(d, _)| d != "NEVER_WAIT");
    let msg = sim_error(tma_run_source(
        never.define("NEVER_WAIT", 1),
        TmaSwizzle::None,
        12,
        (0, 0),
    ));
    assert!(
        msg.contains("1 TMA copy was still in flight when every thread of the block had exited"),
        "{msg}"
    );
}

#[test]
fn a_tma_destination_off_its_128_byte_alignment_is_reported() {
    let map = TensorMap::matrix(Buf::Input(0), ROWS, COLS, 16, 12, TmaSwizzle::None);
    let shape = Shape::gemm(ROWS, 13, COLS);
    let data = vec![vec![1.0; ROWS * COLS], vec![0.0; COLS * 13]];
    let l = launch(
        tma_source(false, 4),
        "tma_box",
        32,
        1024 + 2048,
        vec![
            Arg::TensorMap(map),
            Arg::Ptr(Buf::Output),
            Arg::I32(0),
            Arg::I32(0),
            Arg::I32(192),
        ],
    );
    let msg = sim_error(run(&sim(), l, Dtype::F32, shape, &data));
    assert!(
        msg.contains("cp.async.bulk.tensor.2d: the destination (shared address 0x")
            && msg.contains("must be 128-byte aligned"),
        "{msg}"
    );
}

/// Where the dynamic shared memory starts, modulo 1024: right after the static variables, as
/// ptxas lays them out (three mbarriers, 24 bytes, padded to 32; none: 0; padded to 1024 where
/// the `extern __shared__` declaration asks for that alignment). A kernel that puts a TMA
/// destination at its start unaligned fails there, as on a GPU.
const DYNAMIC_START: &str = r#"
#include "lab/hopper.h"
extern "C" __global__ void after_static(const float *x, float *r) {
    __shared__ __align__(8) unsigned long long bars[3];
    extern __shared__ unsigned char smem[];
    if (threadIdx.x == 0) {
        hopper::mbar_init(&bars[0], 1);
        r[0] = (float)(hopper::smem(smem) & 1023);
        r[1] = (float)hopper::smem(bars);  // the window addresses themselves
        r[2] = (float)hopper::smem(smem);
    }
}
extern "C" __global__ void alone(const float *x, float *r) {
    extern __shared__ unsigned char smem[];
    if (threadIdx.x == 0) r[0] = (float)(hopper::smem(smem) & 1023);
}
"#;

/// The same static variables with an `extern __shared__` aligned to 1024 bytes: ptxas pads the
/// static block to it (a source of its own: every `extern __shared__` array of a module is the
/// same memory, at the largest alignment any of them asks).
const DYNAMIC_ALIGNED: &str = r#"
#include "lab/hopper.h"
extern "C" __global__ void after_static_aligned(const float *x, float *r) {
    __shared__ __align__(8) unsigned long long bars[3];
    extern __shared__ __align__(1024) unsigned char smem[];
    if (threadIdx.x == 0) {
        hopper::mbar_init(&bars[0], 1);
        r[0] = (float)(hopper::smem(smem) & 1023);
    }
}
"#;

#[test]
fn dynamic_shared_memory_starts_where_a_gpu_starts_it() {
    if let Err(e) = nvrtc::version() {
        panic!("{e}\nThis test needs NVRTC: run tools/install-cuda-tools.sh first.");
    }
    let start = |code: &'static str, entry: &str| {
        let l = launch(
            source(code),
            entry,
            32,
            4096,
            vec![Arg::Ptr(Buf::Input(0)), Arg::Ptr(Buf::Output)],
        );
        let data = vec![vec![0.0; 4], vec![0.0; 4]];
        run(&sim(), l, Dtype::F32, Shape::gemm(2, 2, 2), &data).unwrap()[0]
    };
    assert_eq!(start(DYNAMIC_START, "after_static"), 32.0);
    assert_eq!(start(DYNAMIC_START, "alone"), 0.0);
    assert_eq!(start(DYNAMIC_ALIGNED, "after_static_aligned"), 0.0);
}

/// A GPU lays out a kernel's shared memory the same way at every launch, and so must the
/// simulator: the addresses its messages give, and which barrier a race reaches first, must
/// not depend on where the host's allocator put a thread's copy of the static variables
/// (each launch runs on new OS threads, whose thread-local blocks the allocator places
/// anew).
#[test]
fn shared_addresses_are_the_same_at_every_launch() {
    if let Err(e) = nvrtc::version() {
        panic!("{e}\nThis test needs NVRTC: run tools/install-cuda-tools.sh first.");
    }
    let dev = sim();
    let addresses = |i: usize| {
        // Heap blocks of odd sizes, held while the launch runs, move where the allocator
        // puts what the launch's threads allocate.
        let held: Vec<Vec<u8>> = (0..i * 7).map(|k| vec![0; 40 + 24 * k]).collect();
        let l = launch(
            source(DYNAMIC_START),
            "after_static",
            32,
            4096,
            vec![Arg::Ptr(Buf::Input(0)), Arg::Ptr(Buf::Output)],
        );
        let data = vec![vec![0.0; 4], vec![0.0; 4]];
        let out = run(&dev, l, Dtype::F32, Shape::gemm(2, 2, 2), &data).unwrap();
        drop(held);
        (out[1], out[2])
    };
    let first = addresses(0);
    for i in 1..8 {
        assert_eq!(addresses(i), first, "launch {i} against the first");
    }
}

// ---- mbarrier ----

const MBAR: &str = r#"
#include "lab/hopper.h"
extern "C" __global__ void mbar_phases(const float *x, float *r) {
    __shared__ __align__(8) unsigned long long bar;
    if (threadIdx.x != 0) return;
    hopper::mbar_init(&bar, 2);
    r[0] = hopper::mbar_test_wait(&bar, 0);   // phase 0 is under way
    r[1] = hopper::mbar_test_wait(&bar, 1);   // the phase before init counts as complete
    hopper::mbar_arrive(&bar);
    r[2] = hopper::mbar_test_wait(&bar, 0);   // one arrival of two
    hopper::mbar_add_tx(&bar, 64);
    hopper::mbar_arrive(&bar);
    r[3] = hopper::mbar_test_wait(&bar, 0);   // arrivals done, 64 bytes outstanding
    hopper::mbar_complete_tx(&bar, 64);
    r[4] = hopper::mbar_test_wait(&bar, 0);   // phase 0 complete
    r[5] = hopper::mbar_test_wait(&bar, 1);   // phase 1 under way
    hopper::mbar_complete_tx(&bar, 32);       // bytes before their expect: tx-count -32
    r[6] = hopper::mbar_test_wait(&bar, 1);
    hopper::mbar_arrive(&bar);
    hopper::mbar_arrive(&bar);
    r[7] = hopper::mbar_test_wait(&bar, 1);   // arrivals done, tx-count still -32
    hopper::mbar_add_tx(&bar, 32);
    r[8] = hopper::mbar_test_wait(&bar, 1);   // phase 1 complete
    r[9] = hopper::mbar_test_wait(&bar, 0);   // phase 2 (parity 0) under way
    hopper::mbar_wait(&bar, 1);               // returns at once
    r[10] = 1.0f;
}
extern "C" __global__ void mbar_more_bytes(const float *x, float *r) {
    __shared__ __align__(8) unsigned long long bar;
    if (threadIdx.x != 0) return;
    hopper::mbar_init(&bar, 1);
    hopper::mbar_expect_tx(&bar, 16);         // 16 bytes no copy will bring
    hopper::mbar_wait(&bar, 0);
    r[0] = 1.0f;
}
extern "C" __global__ void mbar_uninitialized(const float *x, float *r) {
    __shared__ __align__(8) unsigned long long bar;
    hopper::mbar_arrive(&bar);
    r[threadIdx.x] = 1.0f;
}
extern "C" __global__ void mbar_extra_arrival(const float *x, float *r) {
    __shared__ __align__(8) unsigned long long bar;
    if (threadIdx.x != 0) return;
    hopper::mbar_init(&bar, 1);
    hopper::mbar_add_tx(&bar, 16);
    hopper::mbar_arrive(&bar);                // arrivals done, the phase waits for 16 bytes
    hopper::mbar_arrive(&bar);                // one too many
    r[0] = 1.0f;
}
"#;

fn mbar_run(entry: &str) -> Result<Vec<f32>, DeviceError> {
    let shape = Shape::gemm(32, 1, 1);
    let data = vec![vec![0.0; 32], vec![0.0]];
    let l = launch(
        source(MBAR),
        entry,
        32,
        0,
        vec![Arg::Ptr(Buf::Input(0)), Arg::Ptr(Buf::Output)],
    );
    run(&sim(), l, Dtype::F32, shape, &data)
}

#[test]
fn mbarrier_phases_follow_arrivals_and_transaction_bytes() {
    let r = mbar_run("mbar_phases").unwrap();
    assert_eq!(
        &r[..11],
        &[0.0, 1.0, 0.0, 0.0, 1.0, 0.0, 0.0, 0.0, 1.0, 0.0, 1.0]
    );
}

#[test]
fn mbarrier_misuse_is_reported_with_the_barrier_state() {
    let msg = sim_error(mbar_run("mbar_more_bytes"));
    for want in [
        "mbar_more_bytes: deadlock at an mbarrier wait in block (0,0,0): 1 thread waits, 31 exited",
        "1 wait for parity 0 of the mbarrier at shared address 0x",
        "phase parity 0, 0 of 1 arrivals pending, tx-count 16",
    ] {
        assert!(msg.contains(want), "lacks {want:?}: {msg}");
    }
    let msg = sim_error(mbar_run("mbar_uninitialized"));
    assert!(
        msg.contains("mbarrier.arrive on the mbarrier at shared address 0x")
            && msg.contains("which mbarrier.init has not initialized"),
        "{msg}"
    );
    let msg = sim_error(mbar_run("mbar_extra_arrival"));
    assert!(
        msg.contains(
            "1 arrival(s), but only 0 of 1 are pending in this phase (phase parity 0, tx-count 16)"
        ),
        "{msg}"
    );
}

// ---- wgmma: shared-memory layouts through descriptors, register fragments ----

/// A probe of one wgmma.mma_async: the host lays A and B out in a shared-memory image (as a
/// CuTe layout in elements, then the swizzle on byte addresses), the kernel copies the image
/// into 1024-aligned shared memory, builds the descriptors from the parameters and writes
/// every thread's accumulators (and d[0] read before the wait) to C.
const WGMMA_PROBE: &str = r#"
#include <cuda_fp8.h>
#include "lab/hopper.h"
extern "C" __global__ void wgmma_probe(const float *img, const float *p, float *out, int M, int N, int K) {
    extern __shared__ unsigned char raw[];
    const unsigned pad = (1024 - (hopper::smem(raw) & 1023)) & 1023;
    unsigned char *tile = raw + pad;
    const int words = (int)p[14];
    for (int i = threadIdx.x; i < words; i += blockDim.x) memcpy(tile + 4 * i, img + i, 4);
    __syncthreads();
    const int n = (int)p[8], t = threadIdx.x % 128, w = t / 32, g = t % 32 / 4, q = t % 4;
    const unsigned long long da = hopper::smem_desc(tile + (int)p[0], (unsigned)p[1], (unsigned)p[2],
                                                    (hopper::Swizzle)(int)p[3]);
    unsigned long long db = hopper::smem_desc(tile + (int)p[4], (unsigned)p[5], (unsigned)p[6],
                                              (hopper::Swizzle)(int)p[7]);
#if DIVERGE
    if (w == 1) db += 1;  // warp 1 points B 16 bytes further
#endif
#if BASE_OFFSET
    db |= (unsigned long long)BASE_OFFSET << 49;
#endif
    float d[128];
    for (int i = 0; i < n / 2; ++i) d[i] = 1000.0f * t + i;  // C, for scale-d = 1
    // A from registers (the RS form): a[r] = A[16w + g + 8 (r % 2)][2q + 8 (r / 2) + {0, 1}],
    // the lower column in the low half; for FP8 A[16w + g + 8 (r % 2)][4q + 16 (r / 2) + {0..3}],
    // the lowest in the low byte. A dense row-major (64 x K) in p[32..], K = p[15].
    unsigned a[4];
    const int type = (int)p[9], ka = (int)p[15];
    const bool f16 = type == 0, fp8 = type >= 3;
    for (int r = 0; r < 4; ++r) {
        const int row = 16 * w + g + 8 * (r % 2);
        if (fp8) {
            a[r] = 0;
            for (int j = 0; j < 4; ++j) {
                const float v = p[32 + row * ka + 4 * q + 16 * (r / 2) + j];
                a[r] |= (unsigned)__nv_cvt_float_to_fp8(v, __NV_SATFINITE, type == 3 ? __NV_E4M3 : __NV_E5M2) << (8 * j);
            }
            continue;
        }
        const int col = 2 * q + 8 * (r / 2);
        const float lo = p[32 + row * ka + col], hi = p[32 + row * ka + col + 1];
        a[r] = f16 ? (unsigned)__half_as_ushort(__float2half_rn(lo)) | ((unsigned)__half_as_ushort(__float2half_rn(hi)) << 16)
                   : (unsigned)__bfloat16_as_ushort(__float2bfloat16_rn(lo)) |
                         ((unsigned)__bfloat16_as_ushort(__float2bfloat16_rn(hi)) << 16);
    }
#if !NO_FENCE
    hopper::wgmma_fence();
#endif
    sim::wgmma_issue(d, p[13] != 0.0f ? a : nullptr, da, db, n, (sim::WgType)(int)p[9], p[12] != 0.0f, 1, 1,
                     p[10] != 0.0f, p[11] != 0.0f);
    hopper::wgmma_commit();
    // Before the wait, which PTX leaves undefined: an instrumented build fails this read (its
    // hooks see it); this plain one has not run the wgmma yet.
    out[t * 130 + 128] = d[0];
    hopper::wgmma_wait<0>();
    for (int i = 0; i < n / 2; ++i) out[t * 130 + i] = d[i];
}
"#;

/// A CuTe layout in elements: the M/N mode and the K mode, each a shape and its strides
/// (coordinates split column-major, the first sub-mode fastest).
struct Layout {
    mn: (&'static [usize], &'static [usize]),
    k: (&'static [usize], &'static [usize]),
}

fn eval((shape, stride): (&[usize], &[usize]), mut x: usize) -> usize {
    let mut off = 0;
    for (s, d) in shape.iter().zip(stride) {
        off += (x % s) * d;
        x /= s;
    }
    off
}

#[derive(Clone, Copy, PartialEq)]
enum Ty {
    F16,
    Bf16,
    Tf32,
    E4m3,
    E5m2,
}

impl Ty {
    fn bytes(self) -> usize {
        match self {
            Ty::Tf32 => 4,
            Ty::F16 | Ty::Bf16 => 2,
            Ty::E4m3 | Ty::E5m2 => 1,
        }
    }
    /// K of one instruction: 32 bytes of each row.
    fn k(self) -> usize {
        32 / self.bytes()
    }
    /// sim::WgType.
    fn code(self) -> f32 {
        match self {
            Ty::F16 => 0.0,
            Ty::Bf16 => 1.0,
            Ty::Tf32 => 2.0,
            Ty::E4m3 => 3.0,
            Ty::E5m2 => 4.0,
        }
    }
    fn bits(self, v: f32) -> u32 {
        match self {
            Ty::F16 => u32::from(half::f16::from_f32(v).to_bits()),
            Ty::Bf16 => u32::from(half::bf16::from_f32(v).to_bits()),
            Ty::Tf32 => v.to_bits(),
            Ty::E4m3 => u32::from(kernel::fp8::Fp8::E4m3.encode(v)),
            Ty::E5m2 => u32::from(kernel::fp8::Fp8::E5m2.encode(v)),
        }
    }
}

/// One operand through a descriptor: its layout, byte offsets and swizzle mode (descriptor
/// encoding: 0 none, 1 128B, 2 64B, 3 32B), and whether it is M/N-major.
struct Operand {
    layout: Layout,
    lbo: usize,
    sbo: usize,
    mode: usize,
    mn_major: bool,
}

struct Case {
    name: &'static str,
    ty: Ty,
    n: usize,
    /// None: A from registers.
    a: Option<Operand>,
    b: Operand,
    scale_d: bool,
}

fn span(mode: usize) -> usize {
    [0, 128, 64, 32][mode]
}

/// Small integers, exact in every type and in every FP32 sum of a product.
fn a_val(m: usize, k: usize) -> f32 {
    ((m * 3 + k * 5 + m * k) % 7) as f32 - 3.0
}
fn b_val(k: usize, n: usize) -> f32 {
    ((k * 5 + n * 11 + k * n) % 5) as f32 - 2.0
}

/// Where B starts in the image (A at 0), and the image's size.
const B_AT: usize = 16384;
const IMAGE: usize = 65536;

/// The shared-memory image (as f32 words) and the kernel's parameters for `c`.
fn probe_inputs(c: &Case) -> (Vec<f32>, Vec<f32>) {
    probe_inputs_at(c, B_AT)
}

/// The same with B at byte `b_at` of the image, which starts on a 1024-byte boundary: each
/// element where the swizzle of its absolute address puts it, as the TMA writes a tile.
fn probe_inputs_at(c: &Case, b_at: usize) -> (Vec<f32>, Vec<f32>) {
    let e = c.ty.bytes();
    let mut img = vec![0u8; IMAGE];
    let mut put = |base: usize, op: &Operand, i: usize, k: usize, v: f32| {
        let at = swizzle(
            base + eval(op.layout.mn, i) * e + eval(op.layout.k, k) * e,
            span(op.mode),
        );
        img[at..at + e].copy_from_slice(&c.ty.bits(v).to_le_bytes()[..e]);
    };
    for k in 0..c.ty.k() {
        if let Some(a) = &c.a {
            for m in 0..64 {
                put(0, a, m, k, a_val(m, k));
            }
        }
        for n in 0..c.n {
            put(b_at, &c.b, n, k, b_val(k, n));
        }
    }
    let words: Vec<f32> = img
        .chunks_exact(4)
        .map(|w| f32::from_bits(u32::from_le_bytes([w[0], w[1], w[2], w[3]])))
        .collect();
    let mut p = vec![0.0f32; 32 + 64 * c.ty.k()];
    let desc = |op: &Operand| [op.lbo as f32, op.sbo as f32, op.mode as f32];
    if let Some(a) = &c.a {
        p[0] = 0.0;
        p[1..4].copy_from_slice(&desc(a));
        p[10] = f32::from(u8::from(a.mn_major));
    }
    p[4] = b_at as f32;
    p[5..8].copy_from_slice(&desc(&c.b));
    p[8] = c.n as f32;
    p[9] = c.ty.code();
    p[11] = f32::from(u8::from(c.b.mn_major));
    p[12] = f32::from(u8::from(c.scale_d));
    p[13] = f32::from(u8::from(c.a.is_none()));
    p[14] = words.len() as f32;
    p[15] = c.ty.k() as f32;
    for m in 0..64 {
        for k in 0..c.ty.k() {
            p[32 + m * c.ty.k() + k] = a_val(m, k);
        }
    }
    (words, p)
}

fn probe_run(c: &Case, defines: &[(&'static str, i32)]) -> Result<Vec<f32>, DeviceError> {
    probe_run_with(c, defines, |_| {})
}

/// The probe's inputs for `c` with B at `b_at`.
fn probe_run_at(
    c: &Case,
    b_at: usize,
    defines: &[(&'static str, i32)],
) -> Result<Vec<f32>, DeviceError> {
    let (img, p) = probe_inputs_at(c, b_at);
    probe_launch(img, p, defines)
}

/// The probe with its parameters changed by `tweak` after they were derived from `c`.
fn probe_run_with(
    c: &Case,
    defines: &[(&'static str, i32)],
    tweak: impl Fn(&mut Vec<f32>),
) -> Result<Vec<f32>, DeviceError> {
    let (img, mut p) = probe_inputs(c);
    tweak(&mut p);
    probe_launch(img, p, defines)
}

fn probe_launch(
    img: Vec<f32>,
    p: Vec<f32>,
    defines: &[(&'static str, i32)],
) -> Result<Vec<f32>, DeviceError> {
    // A: 64 x K holds the image, B: K x N the parameters, C: 64 x 260 the accumulators.
    let (m, n, k) = (64, 260, img.len() / 64);
    let mut img = img;
    img.resize(m * k, 0.0);
    let mut params = p;
    params.resize(k * n, 0.0);
    let mut src = source(WGMMA_PROBE)
        .define("DIVERGE", 0)
        .define("NO_FENCE", 0)
        .define("BASE_OFFSET", 0);
    for &(name, v) in defines {
        src.defines.retain(|(d, _)| d != name);
        src = src.define(name, v);
    }
    let l = launch(
        src,
        "wgmma_probe",
        128,
        1024 + 4 * img.len() as u32,
        kernel::gemm_args(m, n, k),
    );
    run(&sim(), l, Dtype::F32, Shape::gemm(m, n, k), &[img, params])
}

/// Thread t's register i holds D[16w + g + 8a][8j + 2q + b] with i = 4j + 2a + b, w = t / 32,
/// g = t % 32 / 4, q = t % 4 (PTX ISA 9.7.15.5.1.1.1, the m64nNk16 D fragment).
fn d_position(t: usize, i: usize) -> (usize, usize) {
    let (w, g, q) = (t / 32, t % 32 / 4, t % 4);
    let (j, a, b) = (i / 4, i / 2 % 2, i % 2);
    (16 * w + g + 8 * a, 8 * j + 2 * q + b)
}

fn check_probe(c: &Case) {
    check_probe_output(
        c,
        &probe_run(c, &[]).unwrap_or_else(|e| panic!("{}: {e}", c.name)),
    );
}

fn check_probe_output(c: &Case, out: &[f32]) {
    for t in 0..128 {
        for i in 0..c.n / 2 {
            let (row, col) = d_position(t, i);
            let mut want = if c.scale_d {
                1000.0 * t as f64 + i as f64
            } else {
                0.0
            };
            for k in 0..c.ty.k() {
                want += f64::from(a_val(row, k)) * f64::from(b_val(k, col));
            }
            assert_eq!(
                f64::from(out[t * 130 + i]),
                want,
                "{}: thread {t} register {i} (D[{row}][{col}])",
                c.name
            );
        }
        // Read before wgmma.wait_group, in a build without access hooks: still what the
        // thread wrote (the wgmma runs at the wait, where the stage-release checks need it).
        assert_eq!(
            out[t * 130 + 128],
            1000.0 * t as f32,
            "{}: thread {t}",
            c.name
        );
    }
}

/// K-major with a swizzle of W 16-byte chunks: 8-row groups SBO bytes apart, rows 16 W bytes
/// apart, K contiguous (CuTe make_gmma_desc, Major::K: ((8,n),2):((W,SBO),1) in 16-byte units).
macro_rules! k_major_swizzled {
    ($rows_per_chunk_el:expr, $sbo_el:expr, $t:expr) => {
        Layout {
            mn: (&[8, 32], &[$rows_per_chunk_el, $sbo_el]),
            k: (&[$t, 2], &[1, $t]),
        }
    };
}

fn cases() -> Vec<Case> {
    vec![
        // The rung's configuration: A K-major and B N-major in the 128B swizzle.
        Case {
            name: "bf16 A K-major 128B, B N-major 128B, N 128",
            ty: Ty::Bf16,
            n: 128,
            a: Some(Operand {
                layout: k_major_swizzled!(64, 512, 8),
                lbo: 16,
                sbo: 1024,
                mode: 1,
                mn_major: false,
            }),
            // ((64, n),(8, 2)):((1, LBO),(64, SBO)): 64 columns a 128-byte row.
            b: Operand {
                layout: Layout {
                    mn: (&[64, 4], &[1, 1024]),
                    k: (&[8, 2], &[64, 512]),
                },
                lbo: 2048,
                sbo: 1024,
                mode: 1,
                mn_major: true,
            },
            scale_d: false,
        },
        Case {
            name: "bf16 A K-major 64B, B K-major 64B, N 64, accumulating",
            ty: Ty::Bf16,
            n: 64,
            a: Some(Operand {
                layout: k_major_swizzled!(32, 256, 8),
                lbo: 16,
                sbo: 512,
                mode: 2,
                mn_major: false,
            }),
            b: Operand {
                layout: k_major_swizzled!(32, 256, 8),
                lbo: 16,
                sbo: 512,
                mode: 2,
                mn_major: false,
            },
            scale_d: true,
        },
        // B: the worked example "MN-major 32B bf16" of PTX ISA 9.7.15.5.1.2.1.3.
        Case {
            name: "bf16 A K-major 32B, B N-major 32B (worked example), N 32",
            ty: Ty::Bf16,
            n: 32,
            a: Some(Operand {
                layout: k_major_swizzled!(16, 128, 8),
                lbo: 16,
                sbo: 256,
                mode: 3,
                mn_major: false,
            }),
            b: Operand {
                layout: Layout {
                    mn: (&[8, 2, 2], &[1, 8, 128]),
                    k: (&[8, 2], &[16, 256]),
                },
                lbo: 256,
                sbo: 512,
                mode: 3,
                mn_major: true,
            },
            scale_d: false,
        },
        // No swizzle: 8x16-byte core matrices. B: the worked example "MN-major none bf16".
        Case {
            name: "bf16 A K-major none, B N-major none (worked example), N 16",
            ty: Ty::Bf16,
            n: 16,
            a: Some(Operand {
                layout: Layout {
                    mn: (&[8, 8], &[8, 128]),
                    k: (&[8, 2], &[1, 64]),
                },
                lbo: 128,
                sbo: 256,
                mode: 0,
                mn_major: false,
            }),
            b: Operand {
                layout: Layout {
                    mn: (&[8, 1, 2], &[1, 8, 64]),
                    k: (&[8, 2], &[8, 128]),
                },
                lbo: 256,
                sbo: 128,
                mode: 0,
                mn_major: true,
            },
            scale_d: false,
        },
        // B: the worked example "MN-major 64B bf16"; A M-major in the 128B swizzle.
        Case {
            name: "f16 A M-major 128B, B N-major 64B (worked example), N 64",
            ty: Ty::F16,
            n: 64,
            a: Some(Operand {
                layout: Layout {
                    mn: (&[64], &[1]),
                    k: (&[8, 2], &[64, 512]),
                },
                lbo: 8192,
                sbo: 1024,
                mode: 1,
                mn_major: true,
            }),
            b: Operand {
                layout: Layout {
                    mn: (&[8, 4, 2], &[1, 8, 256]),
                    k: (&[8, 2], &[32, 512]),
                },
                lbo: 512,
                sbo: 1024,
                mode: 2,
                mn_major: true,
            },
            scale_d: false,
        },
        // TF32, K = 8: B the worked example "K-major none tf32" (its first 8 columns of K,
        // N = 16); A K-major in the 128B swizzle.
        Case {
            name: "tf32 A K-major 128B, B K-major none (worked example), N 16",
            ty: Ty::Tf32,
            n: 16,
            a: Some(Operand {
                layout: k_major_swizzled!(32, 256, 4),
                lbo: 16,
                sbo: 1024,
                mode: 1,
                mn_major: false,
            }),
            b: Operand {
                layout: Layout {
                    mn: (&[8, 2], &[4, 32]),
                    k: (&[4, 2], &[1, 64]),
                },
                lbo: 256,
                sbo: 128,
                mode: 0,
                mn_major: false,
            },
            scale_d: false,
        },
        // K-major without swizzle for both, N = 24 (not a power of two).
        Case {
            name: "tf32 A and B K-major none, N 24",
            ty: Ty::Tf32,
            n: 24,
            a: Some(Operand {
                layout: Layout {
                    mn: (&[8, 8], &[4, 32]),
                    k: (&[4, 2], &[1, 256]),
                },
                lbo: 1024,
                sbo: 128,
                mode: 0,
                mn_major: false,
            }),
            b: Operand {
                layout: Layout {
                    mn: (&[8, 3], &[4, 32]),
                    k: (&[4, 2], &[1, 96]),
                },
                lbo: 384,
                sbo: 128,
                mode: 0,
                mn_major: false,
            },
            scale_d: false,
        },
        // FP8, K = 32 (32 bytes of each row, as every type): A and B K-major in the 128B
        // swizzle, 128 elements a row.
        Case {
            name: "e4m3 A K-major 128B, B K-major 128B, N 128",
            ty: Ty::E4m3,
            n: 128,
            a: Some(Operand {
                layout: k_major_swizzled!(128, 1024, 16),
                lbo: 16,
                sbo: 1024,
                mode: 1,
                mn_major: false,
            }),
            b: Operand {
                layout: k_major_swizzled!(128, 1024, 16),
                lbo: 16,
                sbo: 1024,
                mode: 1,
                mn_major: false,
            },
            scale_d: true,
        },
        Case {
            name: "e5m2 A in registers, B K-major none, N 24",
            ty: Ty::E5m2,
            n: 24,
            a: None,
            b: Operand {
                layout: Layout {
                    mn: (&[8, 3], &[16, 128]),
                    k: (&[16, 2], &[1, 384]),
                },
                lbo: 384,
                sbo: 128,
                mode: 0,
                mn_major: false,
            },
            scale_d: false,
        },
        // A from registers, N = 256.
        Case {
            name: "bf16 A in registers, B K-major 128B, N 256",
            ty: Ty::Bf16,
            n: 256,
            a: None,
            b: Operand {
                layout: k_major_swizzled!(64, 512, 8),
                lbo: 16,
                sbo: 1024,
                mode: 1,
                mn_major: false,
            },
            scale_d: true,
        },
    ]
}

#[test]
fn wgmma_reads_every_layout_through_its_descriptor_and_fills_the_d_fragment() {
    for c in cases() {
        check_probe(&c);
    }
}

/// B one 128-byte line past a 1024-byte boundary, written in the swizzle of its absolute
/// addresses as the TMA writes it: read right with the base offset PTX asks for (the phase,
/// 1) and with 0, as public kernels whose tiles lie there leave it.
#[test]
fn a_swizzled_tile_off_its_pattern_is_read_in_the_swizzle_of_its_absolute_address() {
    let c = cases().into_iter().next().unwrap();
    assert_eq!(c.b.mode, 1, "{}: the 128B swizzle", c.name);
    for base in [0, 1] {
        let out = probe_run_at(&c, B_AT + 128, &[("BASE_OFFSET", base)])
            .unwrap_or_else(|e| panic!("base offset {base}: {e}"));
        check_probe_output(&c, &out);
    }
}

#[test]
fn wgmma_misuse_is_reported() {
    let rung = || cases().into_iter().next().unwrap();
    let expect = |r: Result<Vec<f32>, DeviceError>, want: &[&str]| {
        let msg = sim_error(r);
        for w in want {
            assert!(msg.contains(w), "lacks {w:?}: {msg}");
        }
    };
    expect(
        probe_run(&rung(), &[("NO_FENCE", 1)]),
        &["wgmma.mma_async without a wgmma.fence before the warp's first wgmma"],
    );
    expect(
        probe_run(&rung(), &[("DIVERGE", 1)]),
        &["every warp of a warpgroup must give the same", "warp 1"],
    );
    // B starting one 128-byte line off its swizzle pattern, with a base offset that is neither
    // 0 nor that phase.
    expect(
        probe_run_with(&rung(), &[("BASE_OFFSET", 3)], |p| p[4] += 128.0),
        &[
            "the B descriptor",
            "phase 1 of the 128B swizzle pattern, but its base offset is 3",
        ],
    );
    // B's stride between 8-row groups past the end of shared memory.
    let mut far = rung();
    far.b.sbo = 65520;
    expect(
        probe_run(&far, &[]),
        &[
            "wgmma: element (",
            "of B lies at shared address 0x",
            "outside this block's shared memory",
            "SBO 65520",
        ],
    );
}

// ---- A second Hopper GEMM: m64n256k16, two consumer warpgroups, the 64B swizzle ----

/// BM 128 (two consumer warpgroups of 64 rows), BN 256 (one wgmma m64n256k16 a k16 step),
/// BK 32 (one 64-byte swizzle row of BF16), a 3-stage ring, setmaxnreg moving registers from
/// the producer to the consumers. B arrives in boxes of 32 columns (64 B), LBO apart.
const N256: &str = r#"
#include <cuda_bf16.h>
#include "lab/hopper.h"
#define BM 128
#define BN 256
#define BK 32
#define STAGES 3
#define CONSUMERS 2
#define A_TILE (BM * BK)
#define B_BOX (BK * 32)
#define B_TILE (BK * BN)
#define STAGE_BYTES ((A_TILE + B_TILE) * 2)
extern "C" __global__ void __launch_bounds__(128 * (CONSUMERS + 1), 1)
    gemm_n256_sw64(const __grid_constant__ CUtensorMap tma_a, const __grid_constant__ CUtensorMap tma_b,
                   float *__restrict__ C, int M, int N, int K) {
    extern __shared__ unsigned char smem_raw[];
    const unsigned pad = (1024 - (hopper::smem(smem_raw) & 1023)) & 1023;
    __nv_bfloat16 *as = reinterpret_cast<__nv_bfloat16 *>(smem_raw + pad);
    __nv_bfloat16 *bs = as + STAGES * A_TILE;
    unsigned long long *full = reinterpret_cast<unsigned long long *>(bs + STAGES * B_TILE);
    unsigned long long *empty = full + STAGES;
    const int wg = threadIdx.x / 128;
    const int m0 = blockIdx.y * BM, n0 = blockIdx.x * BN;
    const int ktiles = (K + BK - 1) / BK;
    if (threadIdx.x == 0) {
        for (int s = 0; s < STAGES; ++s) {
            hopper::mbar_init(&full[s], 1);
            hopper::mbar_init(&empty[s], CONSUMERS * 4);
        }
        hopper::fence_barrier_init();
    }
    __syncthreads();
    if (wg == 0) {
        hopper::setmaxnreg_dec<40>();
        if (threadIdx.x == 0) {
            for (int kt = 0; kt < ktiles; ++kt) {
                const int s = kt % STAGES;
                if (kt >= STAGES) hopper::mbar_wait(&empty[s], ((kt / STAGES) - 1) & 1);
                hopper::mbar_expect_tx(&full[s], STAGE_BYTES);
                hopper::tma_load_2d(as + s * A_TILE, &tma_a, &full[s], kt * BK, m0);
                for (int j = 0; j < BN / 32; ++j)
                    hopper::tma_load_2d(bs + s * B_TILE + j * B_BOX, &tma_b, &full[s], n0 + 32 * j, kt * BK);
            }
        }
        return;
    }
    hopper::setmaxnreg_inc<232>();
    const int c = wg - 1;
    float d[128];
#pragma unroll
    for (int i = 0; i < 128; ++i) d[i] = 0.0f;
    for (int kt = 0; kt < ktiles; ++kt) {
        const int s = kt % STAGES;
        hopper::mbar_wait(&full[s], (kt / STAGES) & 1);
        const __nv_bfloat16 *a = as + s * A_TILE + c * 64 * BK;
        const __nv_bfloat16 *b = bs + s * B_TILE;
        hopper::wgmma_fence();
#pragma unroll
        for (int kk = 0; kk < BK / 16; ++kk) {
            // A K-major, rows of 64 B: 8-row groups 512 B apart; a k16 step is 32 B.
            const unsigned long long da = hopper::smem_desc(a + kk * 16, 16, 512, hopper::SWIZZLE_64B);
            // B N-major: 32-column boxes B_BOX * 2 B apart (LBO), 8-row groups of K 512 B
            // apart (SBO); a k16 step is 16 rows of 64 B.
            const unsigned long long db = hopper::smem_desc(b + kk * 16 * 32, B_BOX * 2, 512, hopper::SWIZZLE_64B);
            hopper::wgmma_m64n256k16_bf16(d, da, db, 1);
        }
        hopper::wgmma_commit();
        hopper::wgmma_wait<0>();
        if (threadIdx.x % 32 == 0) hopper::mbar_arrive(&empty[s]);
    }
    const int lane = threadIdx.x % 32, warp = (threadIdx.x % 128) / 32;
    const int row = m0 + c * 64 + warp * 16 + lane / 4;
#pragma unroll
    for (int j = 0; j < BN / 8; ++j) {
        const int col = n0 + 8 * j + 2 * (lane % 4);
        if (col >= N) continue;
        if (row < M) *reinterpret_cast<float2 *>(&C[(size_t)row * N + col]) = make_float2(d[4 * j], d[4 * j + 1]);
        if (row + 8 < M)
            *reinterpret_cast<float2 *>(&C[(size_t)(row + 8) * N + col]) = make_float2(d[4 * j + 2], d[4 * j + 3]);
    }
}
"#;

fn n256_plan(m: usize, n: usize, k: usize) -> CudaPlan {
    let map = |buf, rows, cols, box_rows| {
        Arg::TensorMap(TensorMap::matrix(
            buf,
            rows,
            cols,
            box_rows,
            32,
            TmaSwizzle::B64,
        ))
    };
    let smem = 1024 + 3 * (128 * 32 + 32 * 256) * 2 + 2 * 3 * 8;
    CudaPlan {
        inputs: vec![Dtype::Bf16; 2],
        steps: vec![Step::Kernel(Launch {
            source: source(N256).for_arch("sm_90a"),
            entry: "gemm_n256_sw64".into(),
            grid: [n.div_ceil(256) as u32, m.div_ceil(128) as u32, 1],
            block: [384, 1, 1],
            dynamic_smem: smem as u32,
            args: vec![
                map(Buf::Input(0), m, k, 128),
                map(Buf::Input(1), k, n, 32),
                Arg::Ptr(Buf::Output),
                Arg::I32(m as i32),
                Arg::I32(n as i32),
                Arg::I32(k as i32),
            ],
        })],
        ..Default::default()
    }
}

#[test]
fn a_two_consumer_m64n256k16_gemm_in_the_64b_swizzle_matches_the_reference() {
    let dev = sim();
    let bf16 = |v: f32| half::bf16::from_f32(v).to_f32();
    for (m, n, k) in [(128, 256, 64), (130, 264, 104), (64, 40, 200)] {
        let shape = Shape::gemm(m, n, k);
        let data = inputs(&shape, (m + n + k) as u64);
        let kern = PlanKernel {
            plan: n256_plan(m, n, k),
            precision: Precision::Bf16,
        };
        let out = dev
            .prepare(&kern, &shape, &data)
            .and_then(|mut r| {
                r.run()?;
                r.output()
            })
            .unwrap_or_else(|e| panic!("{m}x{n}x{k}: {e}"));
        let err = relative_error(&out, &gemm_f64((m, n, k), &data[0], &data[1], bf16));
        assert!(err < 1e-6, "{m}x{n}x{k}: relative error {err:e}");
    }
}

// ---- NVRTC ----

#[test]
fn nvrtc_compiles_the_hopper_kernels_for_sm90a() {
    if let Err(e) = nvrtc::version() {
        panic!("{e}\nThis test needs NVRTC: run tools/install-cuda-tools.sh first.");
    }
    let sources = [
        (tma_source(false, 0).for_arch("sm_90a"), 1),
        (source(MBAR).for_arch("sm_90a"), 4),
        (source(N256).for_arch("sm_90a"), 1),
    ];
    for (src, entries) in &sources {
        let c = nvrtc::compile(src, "sm_90").unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(c.arch, "sm_90a");
        assert_eq!(c.resources.len(), *entries, "{:?}", c.resources);
        for (name, r) in &c.resources {
            assert!(!r.spills(), "{name} spills");
        }
    }
}
