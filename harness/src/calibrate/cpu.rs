//! CPU ceilings: STREAM triad bandwidth and an FMA loop, both on every rayon worker.

use super::Measurement;
use rayon::prelude::*;
use std::hint::black_box;
use std::time::Instant;

pub(super) fn measure(quick: bool) -> Measurement {
    let (bw, bw_note) = bandwidth_gbs(quick);
    let (fp32, fma_note) = fma_gflops(quick);
    Measurement {
        bandwidth_gbs: bw,
        fp32_gflops: fp32,
        tf32_gflops: None,
        fp16_gflops: None,
        mma_sync_gflops: None,
        notes: vec![bw_note, fma_note],
    }
}

/// Elements of each array: 64 MiB, the input of the sum's larger CPU shape (2^24 floats), so
/// that the ceiling is measured where such a row runs: in DRAM on most machines, in the
/// last-level cache of one that holds it (the note says which).
const STREAM_ELEMENTS: usize = 1 << 24;
/// Elements per rayon task.
const STREAM_CHUNK: usize = 1 << 16;

/// The DRAM ceiling: the faster of the STREAM triad and a read-only sum. A kernel that only
/// reads (a reduction) moves bytes faster than the triad counts them, as the triad's write
/// also reads its line first (write-allocate) and that traffic goes uncounted.
fn bandwidth_gbs(quick: bool) -> (f64, String) {
    let reps = if quick { 4 } else { 10 };
    // A read-only pass is a third of a triad's bytes: five times the tries for the same time.
    let (triad, read) = (triad_gbs(reps), read_gbs(5 * reps));
    let mib = (4 * STREAM_ELEMENTS) >> 20;
    let note = format!(
        "bandwidth: the faster of the STREAM triad a = b + s*c, {triad:.1} GB/s (3 x {mib} MiB \
         arrays, 12 bytes per element, write-allocate not counted, best of {reps}), and a \
         read-only sum of a {mib} MiB array, {read:.1} GB/s (best of {}); on {} threads{}",
        5 * reps,
        rayon::current_num_threads(),
        last_level_cache().map_or(String::new(), |c| where_arrays_live(c, 4 * STREAM_ELEMENTS))
    );
    (triad.max(read), note)
}

/// The last-level cache Linux reports for CPU 0: its level and size in bytes.
fn last_level_cache() -> Option<(u32, u64)> {
    let dir = std::fs::read_dir("/sys/devices/system/cpu/cpu0/cache").ok()?;
    dir.filter_map(|e| {
        let p = e.ok()?.path();
        let read = |f: &str| std::fs::read_to_string(p.join(f)).ok();
        let level = read("level")?.trim().parse().ok()?;
        Some((level, cache_bytes(&read("size")?)?))
    })
    .max()
}

/// A sysfs cache size (`491520K`, `32M`) in bytes.
fn cache_bytes(size: &str) -> Option<u64> {
    let s = size.trim();
    let (digits, unit) = match s.strip_suffix('K') {
        Some(d) => (d, 1 << 10),
        None => match s.strip_suffix('M') {
            Some(d) => (d, 1 << 20),
            None => (s, 1),
        },
    };
    digits.parse::<u64>().ok().map(|n| n * unit)
}

/// Where an array of `bytes` lives, said after the bandwidth: a last-level cache that holds
/// it serves the probe, and the rows of that working set, at its own rate.
fn where_arrays_live((level, size): (u32, u64), bytes: usize) -> String {
    let (array, cache) = (bytes >> 20, size >> 20);
    if bytes as u64 <= size {
        format!(
            "; a {array} MiB array fits in this machine's {cache} MiB level-{level} cache, so \
             this is that cache's bandwidth, which rows of that working set see too, not \
             DRAM's"
        )
    } else {
        format!(
            "; a {array} MiB array is larger than this machine's {cache} MiB level-{level} cache"
        )
    }
}

/// A 64 MiB array filled in parallel, so that its pages land near the threads that use them.
fn stream_array(v: f32) -> Vec<f32> {
    let mut x = vec![0f32; STREAM_ELEMENTS];
    x.par_chunks_mut(STREAM_CHUNK).for_each(|c| c.fill(v));
    x
}

/// The least of `reps` timings of `f`, in seconds.
fn best_of(reps: usize, mut f: impl FnMut()) -> f64 {
    (0..reps)
        .map(|_| {
            let t = Instant::now();
            f();
            t.elapsed().as_secs_f64()
        })
        .fold(f64::INFINITY, f64::min)
}

/// a[i] = b[i] + s * c[i]; 12 bytes per element (two reads, one write; write-allocate traffic
/// is not counted, as STREAM does not).
fn triad_gbs(reps: usize) -> f64 {
    let (mut a, b, c) = (stream_array(0.0), stream_array(1.0), stream_array(2.0));
    let s = black_box(3.0f32);
    let best = best_of(reps, || {
        a.par_chunks_mut(STREAM_CHUNK)
            .zip(b.par_chunks(STREAM_CHUNK).zip(c.par_chunks(STREAM_CHUNK)))
            .for_each(|(a, (b, c))| {
                for ((a, b), c) in a.iter_mut().zip(b).zip(c) {
                    *a = b + s * c;
                }
            });
        black_box(&a);
    });
    12.0 * STREAM_ELEMENTS as f64 / best / 1e9
}

/// The sum of an array in 16 independent lanes (which the compiler keeps in vector
/// registers); 4 bytes per element.
fn read_gbs(reps: usize) -> f64 {
    let x = stream_array(1.0);
    let best = best_of(reps, || {
        let total: f32 = x
            .par_chunks(STREAM_CHUNK)
            .map(|c| {
                let mut lanes = [0f32; 16];
                for v in c.chunks_exact(16) {
                    for (l, &e) in lanes.iter_mut().zip(v) {
                        *l += e;
                    }
                }
                lanes.iter().sum::<f32>()
            })
            .sum();
        black_box(total);
    });
    4.0 * STREAM_ELEMENTS as f64 / best / 1e9
}

/// Independent FMA chains in registers on every worker: the FP32 compute ceiling.
fn fma_gflops(quick: bool) -> (f64, String) {
    let (kernel, name, flops_per_iter, per_cycle) = fma_kernel();
    let threads = rayon::current_num_threads();
    // Size one pass to ~50 ms, then take the best of a few passes.
    let mut iters = 1u64 << 16;
    loop {
        let t = Instant::now();
        black_box(kernel(iters));
        if t.elapsed().as_secs_f64() > 0.02 || iters > 1 << 34 {
            break;
        }
        iters *= 2;
    }
    iters *= 2;
    let reps = if quick { 3 } else { 8 };
    let mut best = f64::INFINITY;
    for _ in 0..reps {
        let t = Instant::now();
        let sum: f32 = (0..threads)
            .into_par_iter()
            .map(|_| kernel(black_box(iters)))
            .sum();
        black_box(sum);
        best = best.min(t.elapsed().as_secs_f64());
    }
    let gflops = threads as f64 * iters as f64 * flops_per_iter / best / 1e9;
    let mut note = format!(
        "FP32: {name} FMA chains on {threads} threads, best of {reps}: {gflops:.1} GFLOP/s"
    );
    if let Some(mhz) = cpu_mhz() {
        // Two FMA pipes of the vector width is the common server core; above 100% means the
        // cores ran above the clock /proc/cpuinfo reports (turbo), or have more pipes.
        let theory = threads as f64 * mhz * 1e-3 * per_cycle;
        note += &format!(
            "; {:.0}% of {theory:.0} GFLOP/s theoretical at the reported {mhz:.0} MHz with \
             {per_cycle:.0} FP32 FLOP per cycle per thread (two {name} FMA pipes); that rate \
             implies {:.2} GHz",
            100.0 * gflops / theory,
            gflops / (threads as f64 * per_cycle)
        );
    }
    (gflops, note)
}

fn cpu_mhz() -> Option<f64> {
    let text = std::fs::read_to_string("/proc/cpuinfo").ok()?;
    let line = text.lines().find(|l| l.starts_with("cpu MHz"))?;
    line.split_once(':')?.1.trim().parse().ok()
}

type FmaKernel = fn(u64) -> f32;

/// The widest FMA loop this CPU runs, its name, the FLOPs of one iteration, and the FLOPs
/// per cycle of two pipes of that width.
fn fma_kernel() -> (FmaKernel, &'static str, f64, f64) {
    #[cfg(target_arch = "x86_64")]
    {
        if std::arch::is_x86_feature_detected!("avx512f") {
            return (
                x86::avx512,
                "AVX-512",
                (x86::CHAINS_512 * 16 * 2) as f64,
                64.0,
            );
        }
        if std::arch::is_x86_feature_detected!("avx2") && std::arch::is_x86_feature_detected!("fma")
        {
            return (x86::avx2, "AVX2", (x86::CHAINS_256 * 8 * 2) as f64, 32.0);
        }
    }
    (portable, "scalar", (PORTABLE_CHAINS * 2) as f64, 4.0)
}

const PORTABLE_CHAINS: usize = 8;

/// Fallback: `mul_add` is a fused instruction on aarch64 and others with hardware FMA.
fn portable(iters: u64) -> f32 {
    let mut acc = [1.0f32; PORTABLE_CHAINS];
    let (m, a) = (black_box(0.999_999f32), black_box(1e-7f32));
    for _ in 0..iters {
        for x in &mut acc {
            *x = x.mul_add(m, a);
        }
    }
    acc.iter().sum()
}

// Explicit intrinsics: written as plain loops over arrays, LLVM interchanges the loops and
// turns the independent chains into one dependent chain (latency-bound, a fraction of peak).
// The AVX-512 intrinsics are stable since Rust 1.89; the workspace already needs 1.88 for
// let chains, so its declared rust-version (1.85) understates the real minimum anyway.
#[cfg(target_arch = "x86_64")]
#[allow(clippy::incompatible_msrv)]
mod x86 {
    use std::arch::x86_64::*;
    use std::hint::black_box;

    /// Enough independent chains to cover FMA latency (4 cycles) on two pipes, within the
    /// 16 (AVX2) or 32 (AVX-512) vector registers.
    pub const CHAINS_256: usize = 12;
    pub const CHAINS_512: usize = 16;

    pub fn avx2(iters: u64) -> f32 {
        // SAFETY: chosen only after `is_x86_feature_detected!("avx2")` and `("fma")`.
        unsafe { avx2_impl(iters) }
    }

    pub fn avx512(iters: u64) -> f32 {
        // SAFETY: chosen only after `is_x86_feature_detected!("avx512f")`.
        unsafe { avx512_impl(iters) }
    }

    #[target_feature(enable = "avx2,fma")]
    fn avx2_impl(iters: u64) -> f32 {
        let m = _mm256_set1_ps(black_box(0.999_999));
        let a = _mm256_set1_ps(black_box(1e-7));
        let mut acc = [_mm256_set1_ps(1.0); CHAINS_256];
        for _ in 0..iters {
            for x in &mut acc {
                *x = _mm256_fmadd_ps(*x, m, a);
            }
        }
        let mut out = [0f32; 8];
        let sum = acc
            .iter()
            .fold(_mm256_setzero_ps(), |s, x| _mm256_add_ps(s, *x));
        // SAFETY: `out` holds 8 floats.
        unsafe { _mm256_storeu_ps(out.as_mut_ptr(), sum) };
        out.iter().sum()
    }

    #[target_feature(enable = "avx512f")]
    fn avx512_impl(iters: u64) -> f32 {
        let m = _mm512_set1_ps(black_box(0.999_999));
        let a = _mm512_set1_ps(black_box(1e-7));
        let mut acc = [_mm512_set1_ps(1.0); CHAINS_512];
        for _ in 0..iters {
            for x in &mut acc {
                *x = _mm512_fmadd_ps(*x, m, a);
            }
        }
        let sum = acc
            .iter()
            .fold(_mm512_setzero_ps(), |s, x| _mm512_add_ps(s, *x));
        _mm512_reduce_add_ps(sum)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_note_says_whether_the_arrays_fit_in_the_last_level_cache() {
        assert_eq!(cache_bytes("491520K\n"), Some(480 << 20));
        assert_eq!(cache_bytes("32M"), Some(32 << 20));
        assert_eq!(cache_bytes("big"), None);
        let array = 4 * STREAM_ELEMENTS;
        assert!(where_arrays_live((3, 480 << 20), array).contains("480 MiB level-3 cache, so"));
        assert!(where_arrays_live((3, 32 << 20), array).contains("larger than"));
    }
}
