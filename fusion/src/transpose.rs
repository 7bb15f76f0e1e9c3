//! The transpose of a matrix, Y[N,M] = X[M,N]^T, as a ladder of its own. No arithmetic: every
//! element is read once and written once, so the only question is how the bytes move. The
//! first rung reads rows of X and writes columns of Y; the second stages a tile in shared
//! memory so that both sides move whole lines, at the price of bank conflicts; the last two
//! remove those, by padding and by an XOR swizzle.

use kernel::{
    Arg, Bound, Buf, CpuPort, CudaPlan, CudaSource, Kernel, KernelInfo, Launch, Lineage, Precision,
    Role, Shape, Stage, Unsupported, Workload, cuda_source, div_ceil,
};
use rayon::prelude::*;

/// The tile a block moves: 32 x 32 elements (the kernels' `TILE`).
const TILE: usize = 32;
/// Rows of threads in a block (the kernels' `ROWS`): 32 x 8 threads, four elements each.
const ROWS: usize = 8;
/// The most blocks a grid's y dimension holds: the tiles down the M rows of X.
const MAX_GRID_Y: usize = 65535;

/// The ladder's rungs, in order.
pub fn kernels() -> Vec<Box<dyn Kernel>> {
    rungs()
        .into_iter()
        .map(|r| Box::new(r) as Box<dyn Kernel>)
        .collect()
}

/// `(m, n)` of a transpose shape. The harness only hands a kernel its own workload.
fn dims(shape: &Shape) -> (usize, usize) {
    match *shape {
        Shape::Transpose { m, n } => (m, n),
        other => panic!("a transpose kernel was given {other}"),
    }
}

/// A rung: its source, entry point and CPU port; one launch of 32 x 8 threads per tile.
pub struct TransposeRung {
    id: &'static str,
    rung: u32,
    summary: &'static str,
    lineage: Lineage,
    source: fn() -> CudaSource,
    entry: &'static str,
    port: CpuPort,
}

impl Kernel for TransposeRung {
    fn lineage(&self) -> Option<Lineage> {
        Some(self.lineage)
    }

    fn info(&self) -> KernelInfo {
        KernelInfo {
            id: self.id.into(),
            workload: Workload::Transpose,
            stage: Stage::Fusion,
            precision: Precision::Fp32,
            role: Role::Rung,
            rung: self.rung,
            summary: self.summary.into(),
        }
    }

    fn supports(&self, shape: &Shape) -> Result<(), Unsupported> {
        let (m, _) = dims(shape);
        if m.div_ceil(TILE) > MAX_GRID_Y {
            return Err(Unsupported(format!(
                "M = {m} needs {} tiles of {TILE} rows, past the {MAX_GRID_Y} blocks of a grid's \
                 y dimension",
                m.div_ceil(TILE)
            )));
        }
        Ok(())
    }

    fn cuda(&self, shape: &Shape) -> Option<CudaPlan> {
        let (m, n) = dims(shape);
        Some(CudaPlan::single(
            1,
            Launch {
                source: (self.source)(),
                entry: self.entry.into(),
                grid: [div_ceil(n, TILE), div_ceil(m, TILE), 1],
                block: [TILE as u32, ROWS as u32, 1],
                dynamic_smem: 0,
                args: vec![
                    Arg::Ptr(Buf::Input(0)),
                    Arg::Ptr(Buf::Output),
                    Arg::I32(m as i32),
                    Arg::I32(n as i32),
                ],
            },
        ))
    }

    fn cpu(&self) -> Option<CpuPort> {
        Some(self.port)
    }
}

/// The four rungs, in ladder order.
fn rungs() -> [TransposeRung; 4] {
    [
        TransposeRung {
            id: "transpose-naive",
            rung: 1,
            summary: "each thread copies elements of X to their places in Y: rows of X read whole, columns of Y written one element a line",
            lineage: Lineage {
                parent: None,
                idea: "a block of 32 x 8 threads per 32 x 32 tile, each thread copying four elements straight from X to Y: a warp reads 32 consecutive floats of a row of X and writes them M floats apart down a column of Y",
                bound: None,
            },
            source: || cuda_source!("fusion", "transpose/01_naive.cu"),
            entry: "transpose_naive",
            port: cpu_naive,
        },
        TransposeRung {
            id: "transpose-shared-tile",
            rung: 2,
            summary: "the tile staged in shared memory, so that rows of Y are written whole; its columns read with 32-way bank conflicts",
            lineage: Lineage {
                parent: Some("transpose-naive"),
                idea: "the block reads its tile of X into shared memory by rows and writes the tile's columns as rows of Y: every global store a whole line, the transposition moved into shared memory, whose columns fall in one bank",
                bound: Some(Bound::MemoryTraffic),
            },
            source: || cuda_source!("fusion", "transpose/02_shared_tile.cu"),
            entry: "transpose_shared_tile",
            port: cpu_tiled,
        },
        TransposeRung {
            id: "transpose-padded",
            rung: 3,
            summary: "rung 02 with a 32 x 33 tile: a column's 32 words in 32 banks",
            lineage: Lineage {
                parent: Some("transpose-shared-tile"),
                idea: "one float of padding per row of the tile, so that element (i, j) lies in bank (i + j) % 32 and a column's 32 words fall in 32 banks: no bank conflicts",
                bound: Some(Bound::SharedTraffic),
            },
            source: || cuda_source!("fusion", "transpose/03_padded.cu"),
            entry: "transpose_padded",
            port: cpu_tiled,
        },
        TransposeRung {
            id: "transpose-swizzled",
            rung: 4,
            summary: "rung 03's conflict-free tile without padding: element (i, j) in column j ^ i",
            lineage: Lineage {
                parent: Some("transpose-padded"),
                idea: "an XOR swizzle instead of padding: element (i, j) of a 32 x 32 tile stored in column j ^ i of row i, so that rows and columns alike spread over the 32 banks while rows stay 128 bytes, as ldmatrix and TMA boxes need (the tensor-core rungs swizzle 16-byte chunks the same way)",
                bound: Some(Bound::SharedTraffic),
            },
            source: || cuda_source!("fusion", "transpose/04_swizzled.cu"),
            entry: "transpose_swizzled",
            port: cpu_tiled,
        },
    ]
}

// The ports write Y in bands of whole rows, one rayon task a band, as the rungs' blocks write
// the tiles of Y; within a band they move the elements as their rung does.

/// Runs `band` on each band of rows of Y (columns of X), one per thread: with X, the band's
/// rows of Y, its first row (a column of X) and `(m, n)`.
fn by_bands(
    shape: &Shape,
    inputs: &[&[f32]],
    out: &mut [f32],
    band: impl Fn(&[f32], &mut [f32], usize, (usize, usize)) + Sync,
) {
    let (m, n) = dims(shape);
    let rows = n.div_ceil(rayon::current_num_threads());
    out.par_chunks_mut(rows * m)
        .enumerate()
        .for_each(|(b, y)| band(inputs[0], y, b * rows, (m, n)));
}

/// Rung 01: down the rows of X in order, each element to its column of Y: the writes of one
/// row of X land a row of Y apart.
fn cpu_naive(shape: &Shape, inputs: &[&[f32]], out: &mut [f32]) {
    by_bands(shape, inputs, out, |x, y, j0, (m, n)| {
        let cols = y.len() / m;
        for i in 0..m {
            for (dj, &v) in x[i * n + j0..i * n + j0 + cols].iter().enumerate() {
                y[dj * m + i] = v;
            }
        }
    });
}

/// Rungs 02 to 04: 32 x 32 tiles, each read by rows into a tile and written by columns, so
/// that both sides touch a few lines at a time.
fn cpu_tiled(shape: &Shape, inputs: &[&[f32]], out: &mut [f32]) {
    by_bands(shape, inputs, out, |x, y, j0, (m, n)| {
        let cols = y.len() / m;
        let mut tile = [[0.0f32; TILE]; TILE];
        for i0 in (0..m).step_by(TILE) {
            let rows = TILE.min(m - i0);
            for dj0 in (0..cols).step_by(TILE) {
                let width = TILE.min(cols - dj0);
                for (di, t) in tile.iter_mut().enumerate().take(rows) {
                    let at = (i0 + di) * n + j0 + dj0;
                    t[..width].copy_from_slice(&x[at..at + width]);
                }
                for dj in 0..width {
                    let row = &mut y[(dj0 + dj) * m + i0..(dj0 + dj) * m + i0 + rows];
                    for (di, v) in row.iter_mut().enumerate() {
                        *v = tile[di][dj];
                    }
                }
            }
        }
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every port against the reference: a single element, shapes narrower and shorter than a
    /// tile, tails on both sides, and a square of whole tiles.
    #[test]
    fn ports_agree_with_the_reference() {
        for (m, n) in [
            (1, 1),
            (1, 7),
            (5, 1),
            (33, 65),
            (100, 37),
            (64, 64),
            (257, 300),
        ] {
            let shape = Shape::Transpose { m, n };
            let x = kernel::testing::inputs(&shape, 3);
            let want = kernel::reference::reference(&shape, &x);
            for k in kernels() {
                let mut out = vec![f32::NAN; m * n];
                (k.cpu().expect("every rung has a port"))(&shape, &[&x[0]], &mut out);
                assert!(
                    out.iter().zip(&want).all(|(a, b)| f64::from(*a) == *b),
                    "{} at {m}x{n}",
                    k.info().id
                );
            }
        }
    }

    /// The grid's y dimension holds the tiles down M: a taller X is declined, naming it.
    #[test]
    fn a_matrix_taller_than_the_grid_is_declined() {
        let k = &kernels()[0];
        let m = MAX_GRID_Y * TILE;
        assert!(k.supports(&Shape::Transpose { m, n: 1 }).is_ok());
        let why = k
            .supports(&Shape::Transpose { m: m + 1, n: 1 })
            .unwrap_err();
        assert!(why.0.contains("past the 65535 blocks"), "{}", why.0);
    }
}
