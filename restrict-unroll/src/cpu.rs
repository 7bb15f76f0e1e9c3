//! The CPU ports of this stage, and the packed, cache-blocked GEMM driver (`gemm_blocked`) the
//! later stages (tensor cores, FP16, fusion) reuse for their CPU ports.
//!
//! Each port mirrors its kernel's idea as far as a CPU has an analogue: unrolling, a column of
//! outputs per thread (1D register blocking), a 2D tile of accumulators in registers, packed
//! operands read with wide vector loads, and one more level of blocking.

use rayon::prelude::*;

/// How the right-hand operand is stored: `B[K,N]` row-major (GEMM) or `W[N,K]` (linear).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BLayout {
    KxN,
    NxK,
}

/// An element type [`gemm_blocked`] reads its operands in: f32, or a storage type (such as
/// the FP16 stage's `half::f16`) widened to f32 as the packing routines copy it.
pub trait Operand: Copy + Send + Sync {
    fn widen(self) -> f32;
}

impl Operand for f32 {
    #[inline(always)]
    fn widen(self) -> f32 {
        self
    }
}

#[inline(always)]
fn b_at<T: Operand>(b: &[T], layout: BLayout, n: usize, k: usize, kk: usize, j: usize) -> f32 {
    match layout {
        BLayout::KxN => b[kk * n + j].widen(),
        BLayout::NxK => b[j * k + kk].widen(),
    }
}

/// `a * b + c`, as one fused instruction when the caller was compiled with FMA.
#[inline(always)]
fn fmadd<const FMA: bool>(a: f32, b: f32, c: f32) -> f32 {
    if FMA { a.mul_add(b, c) } else { a * b + c }
}

/// Whether this CPU runs the AVX2 + FMA micro-kernel (checked once per call, cached by std).
fn has_avx2_fma() -> bool {
    #[cfg(target_arch = "x86_64")]
    {
        is_x86_feature_detected!("avx2") && is_x86_feature_detected!("fma")
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        false
    }
}

// ---------------------------------------------------------------------------------------------
// Rung 03: the tiled port with its inner loop unrolled by four.

const T_M: usize = 32;
const T_K: usize = 128;
const T_N: usize = 512;

/// Rung 03. Rust's `&mut` is already what `__restrict__` promises (no aliasing), so the only
/// new idea on a CPU is the unroll: four rows of B are folded into each pass over a segment of
/// C, so C is loaded and stored a quarter as often as in the tiled port.
pub fn restrict_unroll(m: usize, n: usize, k: usize, a: &[f32], b: &[f32], c: &mut [f32]) {
    debug_assert_eq!(c.len(), m * n);
    c.par_chunks_mut(T_M * n)
        .enumerate()
        .for_each(|(band, cb)| {
            cb.fill(0.0);
            let row0 = band * T_M;
            for k0 in (0..k).step_by(T_K) {
                let k1 = (k0 + T_K).min(k);
                for n0 in (0..n).step_by(T_N) {
                    let n1 = (n0 + T_N).min(n);
                    for (i, c_row) in cb.chunks_mut(n).enumerate() {
                        let a_row = &a[(row0 + i) * k..(row0 + i + 1) * k];
                        let c_seg = &mut c_row[n0..n1];
                        let mut kk = k0;
                        while kk + 4 <= k1 {
                            let (a0, a1, a2, a3) =
                                (a_row[kk], a_row[kk + 1], a_row[kk + 2], a_row[kk + 3]);
                            let b0 = &b[kk * n + n0..kk * n + n1];
                            let b1 = &b[(kk + 1) * n + n0..(kk + 1) * n + n1];
                            let b2 = &b[(kk + 2) * n + n0..(kk + 2) * n + n1];
                            let b3 = &b[(kk + 3) * n + n0..(kk + 3) * n + n1];
                            for j in 0..c_seg.len() {
                                c_seg[j] += a0 * b0[j] + a1 * b1[j] + a2 * b2[j] + a3 * b3[j];
                            }
                            kk += 4;
                        }
                        for kk in kk..k1 {
                            let aik = a_row[kk];
                            for (cv, &bv) in c_seg.iter_mut().zip(&b[kk * n + n0..kk * n + n1]) {
                                *cv += aik * bv;
                            }
                        }
                    }
                }
            }
        });
}

// ---------------------------------------------------------------------------------------------
// Rung 04: 1D register blocking, TM rows of C per pass.

const RB1_TM: usize = 4;

/// Rung 04. Rung 03's four-deep unroll over k, now for `RB1_TM` = 4 rows of C at once: each
/// value of B loaded feeds 4 outputs of its column, as each GPU thread reuses one `Bs` value
/// for its TM outputs. Per 4 columns x 4 k the pass loads 4 B and 4 C values and stores 4 C
/// for 16 multiply-adds (rung 03: 4 B, 1 C, 1 C for 4). Leftover rows (M % 4) take rung 03's
/// one-row path.
pub fn regblock_1d(m: usize, n: usize, k: usize, a: &[f32], b: &[f32], c: &mut [f32]) {
    debug_assert_eq!(c.len(), m * n);
    c.par_chunks_mut(T_M * n)
        .enumerate()
        .for_each(|(band, cb)| {
            cb.fill(0.0);
            let row0 = band * T_M;
            let rows = cb.len() / n;
            for k0 in (0..k).step_by(T_K) {
                let k1 = (k0 + T_K).min(k);
                for n0 in (0..n).step_by(T_N) {
                    let n1 = (n0 + T_N).min(n);
                    let w = n1 - n0;
                    let mut i = 0;
                    while i + RB1_TM <= rows {
                        let quad = &mut cb[i * n..(i + RB1_TM) * n];
                        let (r0, rest) = quad.split_at_mut(n);
                        let (r1, rest) = rest.split_at_mut(n);
                        let (r2, r3) = rest.split_at_mut(n);
                        let (c0, c1, c2, c3) = (
                            &mut r0[n0..n1],
                            &mut r1[n0..n1],
                            &mut r2[n0..n1],
                            &mut r3[n0..n1],
                        );
                        let g = row0 + i;
                        let ar: [&[f32]; RB1_TM] =
                            std::array::from_fn(|t| &a[(g + t) * k..(g + t + 1) * k]);
                        let mut kk = k0;
                        while kk + 4 <= k1 {
                            let av: [[f32; 4]; RB1_TM] =
                                std::array::from_fn(|t| std::array::from_fn(|u| ar[t][kk + u]));
                            let b0 = &b[kk * n + n0..kk * n + n1];
                            let b1 = &b[(kk + 1) * n + n0..(kk + 1) * n + n1];
                            let b2 = &b[(kk + 2) * n + n0..(kk + 2) * n + n1];
                            let b3 = &b[(kk + 3) * n + n0..(kk + 3) * n + n1];
                            for j in 0..w {
                                let (x0, x1, x2, x3) = (b0[j], b1[j], b2[j], b3[j]);
                                c0[j] +=
                                    av[0][0] * x0 + av[0][1] * x1 + av[0][2] * x2 + av[0][3] * x3;
                                c1[j] +=
                                    av[1][0] * x0 + av[1][1] * x1 + av[1][2] * x2 + av[1][3] * x3;
                                c2[j] +=
                                    av[2][0] * x0 + av[2][1] * x1 + av[2][2] * x2 + av[2][3] * x3;
                                c3[j] +=
                                    av[3][0] * x0 + av[3][1] * x1 + av[3][2] * x2 + av[3][3] * x3;
                            }
                            kk += 4;
                        }
                        for kk in kk..k1 {
                            let bs = &b[kk * n + n0..kk * n + n1];
                            let (a0, a1, a2, a3) = (ar[0][kk], ar[1][kk], ar[2][kk], ar[3][kk]);
                            for j in 0..w {
                                let bv = bs[j];
                                c0[j] += a0 * bv;
                                c1[j] += a1 * bv;
                                c2[j] += a2 * bv;
                                c3[j] += a3 * bv;
                            }
                        }
                        i += RB1_TM;
                    }
                    for i in i..rows {
                        let g = row0 + i;
                        let cs = &mut cb[i * n + n0..i * n + n1];
                        for kk in k0..k1 {
                            let av = a[g * k + kk];
                            for (cv, &bv) in cs.iter_mut().zip(&b[kk * n + n0..kk * n + n1]) {
                                *cv += av * bv;
                            }
                        }
                    }
                }
            }
        });
}

// ---------------------------------------------------------------------------------------------
// Rung 05: 2D register blocking, a 4x16 tile of accumulators.

const RB2_M: usize = 4;
const RB2_N: usize = 16;
const RB2_BAND: usize = 64;
const RB2_KC: usize = 256;

/// The 4x16 register tile of rung 05 over one K block: `ar` holds 4 rows of A (`kc` values
/// each), `strip` the `kc` x 16 strip of B.
#[inline(always)]
fn rb2_tile<const FMA: bool>(ar: &[&[f32]; RB2_M], strip: &[f32]) -> [[f32; RB2_N]; RB2_M] {
    let mut acc = [[0.0f32; RB2_N]; RB2_M];
    for (kk, bs) in strip.chunks_exact(RB2_N).enumerate() {
        for (acc_row, a_row) in acc.iter_mut().zip(ar) {
            let av = a_row[kk];
            for j in 0..RB2_N {
                acc_row[j] = fmadd::<FMA>(av, bs[j], acc_row[j]);
            }
        }
    }
    acc
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2,fma")]
unsafe fn rb2_tile_avx2(ar: &[&[f32]; RB2_M], strip: &[f32]) -> [[f32; RB2_N]; RB2_M] {
    rb2_tile::<true>(ar, strip)
}

fn rb2_dispatch(fast: bool, ar: &[&[f32]; RB2_M], strip: &[f32]) -> [[f32; RB2_N]; RB2_M] {
    #[cfg(target_arch = "x86_64")]
    if fast {
        // SAFETY: `fast` is only true when `has_avx2_fma()` confirmed the CPU features.
        return unsafe { rb2_tile_avx2(ar, strip) };
    }
    let _ = fast;
    rb2_tile::<false>(ar, strip)
}

/// Rung 05. A fixed-size `[[f32; 16]; 4]` accumulator array (the thread's TMxTN outputs) that
/// the compiler keeps in eight 256-bit registers for a whole K block (AVX2 + FMA, chosen at run
/// time; the fixed tile is what lets it use them): per k, 4 values of A and two 8-wide vectors
/// of B feed 64 fused multiply-adds and C is not touched at all (rung 04 loads and stores C
/// every 4 k, and its loops over whole rows stay in the baseline ISA).
/// A is read in place; the KC x 16 strip of B is first copied into a small contiguous buffer
/// (the `Bs` tile of the GPU kernel) that stays in L1 while all 4-row tiles of a 64-row band
/// use it: read in place, its rows sit N floats apart, which at power-of-two N all map to the
/// same L1 set and evict each other. Edge tiles (M % 4, N % 16) take a scalar path.
pub fn regblock_2d(m: usize, n: usize, k: usize, a: &[f32], b: &[f32], c: &mut [f32]) {
    debug_assert_eq!(c.len(), m * n);
    c.par_chunks_mut(RB2_BAND * n)
        .enumerate()
        .for_each(|(band, cb)| {
            cb.fill(0.0);
            let row0 = band * RB2_BAND;
            let rows = cb.len() / n;
            let full_rows = rows - rows % RB2_M;
            let full_cols = n - n % RB2_N;
            let fast = has_avx2_fma();
            let mut strip = vec![0.0f32; RB2_KC * RB2_N];
            for k0 in (0..k).step_by(RB2_KC) {
                let k1 = (k0 + RB2_KC).min(k);
                for j0 in (0..full_cols).step_by(RB2_N) {
                    for (kk, dst) in strip.chunks_exact_mut(RB2_N).take(k1 - k0).enumerate() {
                        dst.copy_from_slice(&b[(k0 + kk) * n + j0..(k0 + kk) * n + j0 + RB2_N]);
                    }
                    for i0 in (0..full_rows).step_by(RB2_M) {
                        let ar: [&[f32]; RB2_M] = std::array::from_fn(|t| {
                            &a[(row0 + i0 + t) * k + k0..(row0 + i0 + t) * k + k1]
                        });
                        let acc = rb2_dispatch(fast, &ar, &strip[..(k1 - k0) * RB2_N]);
                        for (i, acc_row) in acc.iter().enumerate() {
                            let dst = &mut cb[(i0 + i) * n + j0..(i0 + i) * n + j0 + RB2_N];
                            for (cv, &v) in dst.iter_mut().zip(acc_row) {
                                *cv += v;
                            }
                        }
                    }
                }
                // Tails: rows past the last full 4-row tile, columns past the last full 16.
                for i in 0..rows {
                    let j_start = if i < full_rows { full_cols } else { 0 };
                    for j in j_start..n {
                        let mut s = 0.0f32;
                        for kk in k0..k1 {
                            s += a[(row0 + i) * k + kk] * b[kk * n + j];
                        }
                        cb[i * n + j] += s;
                    }
                }
            }
        });
}

// ---------------------------------------------------------------------------------------------
// Rungs 06 and 07: packed operands and a 6x16 micro-kernel on 256-bit FMA vectors.

/// Micro-tile: 6 rows x 16 columns = twelve 8-wide accumulators, in AVX2's 16 registers.
pub const MR: usize = 6;
pub const NR: usize = 16;

/// The micro-kernel: `kc` steps over a packed A micro-panel (MR values per k, the transposed
/// `As` of the GPU kernel) and a packed B micro-panel (NR per k): both read sequentially.
#[inline(always)]
fn micro<const FMA: bool>(kc: usize, ap: &[f32], bp: &[f32]) -> [[f32; NR]; MR] {
    let mut acc = [[0.0f32; NR]; MR];
    for (av, bv) in ap.chunks_exact(MR).zip(bp.chunks_exact(NR)).take(kc) {
        for i in 0..MR {
            let x = av[i];
            for j in 0..NR {
                acc[i][j] = fmadd::<FMA>(x, bv[j], acc[i][j]);
            }
        }
    }
    acc
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2,fma")]
unsafe fn micro_avx2(kc: usize, ap: &[f32], bp: &[f32]) -> [[f32; NR]; MR] {
    micro::<true>(kc, ap, bp)
}

/// Runs the micro-kernel, on AVX2 + FMA when the CPU has them.
#[inline]
fn micro_dispatch(fast: bool, kc: usize, ap: &[f32], bp: &[f32]) -> [[f32; NR]; MR] {
    #[cfg(target_arch = "x86_64")]
    if fast {
        // SAFETY: `fast` is only true when `has_avx2_fma()` confirmed the CPU features.
        return unsafe { micro_avx2(kc, ap, bp) };
    }
    let _ = fast;
    micro::<false>(kc, ap, bp)
}

/// Packs rows `i0..i0+rows` x columns `k0..k0+kc` of A into MR-row micro-panels, k-major (the
/// transposed A tile of the GPU kernel), zero-padding the last panel.
fn pack_a<T: Operand>(
    a: &[T],
    k: usize,
    i0: usize,
    rows: usize,
    k0: usize,
    kc: usize,
    out: &mut Vec<f32>,
) {
    let panels = rows.div_ceil(MR);
    out.clear();
    out.resize(panels * MR * kc, 0.0);
    for p in 0..panels {
        let dst = &mut out[p * MR * kc..(p + 1) * MR * kc];
        for i in 0..MR.min(rows - p * MR) {
            let src = &a[(i0 + p * MR + i) * k + k0..(i0 + p * MR + i) * k + k0 + kc];
            for (kk, &v) in src.iter().enumerate() {
                dst[kk * MR + i] = v.widen();
            }
        }
    }
}

/// Packs columns `j0..j0+cols` x rows `k0..k0+kc` of B into NR-column micro-panels, k-major,
/// zero-padding the last panel. Panels are packed in parallel.
#[allow(clippy::too_many_arguments)] // the block's coordinates, named rather than bundled
fn pack_b<T: Operand>(
    b: &[T],
    layout: BLayout,
    n: usize,
    k: usize,
    j0: usize,
    cols: usize,
    k0: usize,
    kc: usize,
) -> Vec<f32> {
    let panels = cols.div_ceil(NR);
    let mut out = vec![0.0f32; panels * NR * kc];
    out.par_chunks_mut(NR * kc)
        .enumerate()
        .for_each(|(p, dst)| {
            let jn = NR.min(cols - p * NR);
            for kk in 0..kc {
                for j in 0..jn {
                    dst[kk * NR + j] = b_at(b, layout, n, k, k0 + kk, j0 + p * NR + j);
                }
            }
        });
    out
}

/// Adds (or stores, on the first K block) a micro-tile into C, applying `epi(col, value)` on
/// the last K block: that is where a fused epilogue runs, while the tile is still hot.
#[allow(clippy::too_many_arguments)] // tile coordinates and flags, named rather than bundled
#[inline(always)]
fn write_tile<E: Fn(usize, f32) -> f32>(
    c: &mut [f32],
    n: usize,
    r0: usize,
    rows: usize,
    c0: usize,
    cols: usize,
    acc: &[[f32; NR]; MR],
    first: bool,
    last: bool,
    epi: &E,
) {
    for (i, acc_row) in acc.iter().enumerate().take(rows) {
        let dst = &mut c[(r0 + i) * n + c0..(r0 + i) * n + c0 + cols];
        for (j, d) in dst.iter_mut().enumerate() {
            let mut v = if first { acc_row[j] } else { *d + acc_row[j] };
            if last {
                v = epi(c0 + j, v);
            }
            *d = v;
        }
    }
}

/// Rung 06. Packing plus wide vectors: B is packed once into 16-column panels, each task packs
/// its 6 rows of A transposed (k-major), and the 6x16 micro-kernel reads both sequentially
/// with 256-bit loads and FMAs (AVX2, chosen at run time; the float4 of the GPU kernel). The
/// whole K is streamed per micro-tile: no K blocking yet, so the panels spill out of L1.
pub fn vectorized(m: usize, n: usize, k: usize, a: &[f32], b: &[f32], c: &mut [f32]) {
    debug_assert_eq!(c.len(), m * n);
    let fast = has_avx2_fma();
    let bp = pack_b(b, BLayout::KxN, n, k, 0, n, 0, k);
    let panels = n.div_ceil(NR);
    c.par_chunks_mut(MR * n).enumerate().for_each(|(band, cb)| {
        let rows = cb.len() / n;
        let mut ap = Vec::new();
        pack_a(a, k, band * MR, rows, 0, k, &mut ap);
        for p in 0..panels {
            let acc = micro_dispatch(fast, k, &ap, &bp[p * NR * k..(p + 1) * NR * k]);
            let cols = NR.min(n - p * NR);
            write_tile(cb, n, 0, rows, p * NR, cols, &acc, true, true, &|_, v| v);
        }
    });
}

/// Rows of A per task block (a multiple of MR), depth of a K block, and width of an N block:
/// the A block (MC x KC, 72 KiB) stays in L2, a B micro-panel (KC x NR, 16 KiB) in L1.
const MC: usize = 72;
const KC: usize = 256;
const NC: usize = 3072;

/// Rung 07 and the CPU GEMM the later stages reuse: `C = A * B` (B as `layout` says), then
/// `epi(col, value)` on every element. Three-level blocking (N blocks, K blocks, M blocks), a
/// B block packed once and shared by all threads, the 6x16 micro-kernel inside. Warp tiling
/// itself has no CPU analogue (there are no warps); its nearest relative is this extra level
/// of the tile hierarchy that keeps one B micro-panel in L1 while A's micro-panels sweep it.
#[allow(clippy::too_many_arguments)] // a GEMM's operands and dimensions, as in BLAS
pub fn gemm_blocked<T: Operand, E: Fn(usize, f32) -> f32 + Sync>(
    m: usize,
    n: usize,
    k: usize,
    a: &[T],
    b: &[T],
    layout: BLayout,
    c: &mut [f32],
    epi: &E,
) {
    debug_assert_eq!(c.len(), m * n);
    let fast = has_avx2_fma();
    // Short M: smaller bands, so every thread gets several (a fused epilogue's work included).
    let mc = m
        .div_ceil(rayon::current_num_threads() * 4)
        .next_multiple_of(MR)
        .clamp(MR, MC);
    for j0 in (0..n).step_by(NC) {
        let nc = NC.min(n - j0);
        for k0 in (0..k).step_by(KC) {
            let kc = KC.min(k - k0);
            let (first, last) = (k0 == 0, k0 + kc == k);
            let bp = pack_b(b, layout, n, k, j0, nc, k0, kc);
            let panels = nc.div_ceil(NR);
            c.par_chunks_mut(mc * n).enumerate().for_each(|(band, cb)| {
                let rows = cb.len() / n;
                let mut ap = Vec::new();
                pack_a(a, k, band * mc, rows, k0, kc, &mut ap);
                let mpanels = rows.div_ceil(MR);
                for p in 0..panels {
                    let bpanel = &bp[p * NR * kc..(p + 1) * NR * kc];
                    let cols = NR.min(nc - p * NR);
                    for q in 0..mpanels {
                        let acc =
                            micro_dispatch(fast, kc, &ap[q * MR * kc..(q + 1) * MR * kc], bpanel);
                        let r = MR.min(rows - q * MR);
                        write_tile(cb, n, q * MR, r, j0 + p * NR, cols, &acc, first, last, epi);
                    }
                }
            });
        }
    }
}

/// Rung 07's port: [`gemm_blocked`] with no epilogue.
pub fn warptile(m: usize, n: usize, k: usize, a: &[f32], b: &[f32], c: &mut [f32]) {
    gemm_blocked(m, n, k, a, b, BLayout::KxN, c, &|_, v| v);
}

/// Rounds an f32 to TF32 (10 mantissa bits), to nearest with ties away from zero, as
/// `cvt.rna.tf32.f32` (what `wmma::__float_to_tf32` compiles to) does. Inf and NaN pass.
pub fn round_tf32(x: f32) -> f32 {
    let bits = x.to_bits();
    if (bits >> 23) & 0xff == 0xff {
        return x;
    }
    f32::from_bits(bits.wrapping_add(0x1000) & 0xffff_e000)
}
