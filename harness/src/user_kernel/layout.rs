//! Where a user kernel reads and writes each element of its tensors, where that is not the
//! workload's own row-major layout: GEMM operands column-major (`a=col`, `b=col`), attention
//! in `[B][S][H][D]` order (`layout=bshd`) or a head's K or V transposed (`k=col`, `v=col`).
//! The lab lays the inputs out so before a launch and reads the output back through the same
//! map, so the reference stays the workload's.

use super::spec::HeadLayout;
use kernel::Shape;

/// Row-major `rows x cols` as column-major: element (r, c) at `c * rows + r`.
fn column_major(x: &[f32], rows: usize, cols: usize) -> Vec<f32> {
    let mut col = vec![0.0f32; x.len()];
    for (r, row) in x.chunks_exact(cols).enumerate() {
        for (c, &v) in row.iter().enumerate() {
            col[c * rows + r] = v;
        }
    }
    col
}

/// How the lab lays one input out for a kernel.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Relayout {
    /// A row-major `rows x cols` matrix, column-major.
    ColumnMajor {
        rows: usize,
        cols: usize,
    },
    Heads(HeadMap),
}

impl Relayout {
    pub fn apply(&self, x: &[f32]) -> Vec<f32> {
        match *self {
            Self::ColumnMajor { rows, cols } => column_major(x, rows, cols),
            Self::Heads(map) => map.lay_out(x),
        }
    }
}

/// An attention tensor `[B][H][S][D]` as a kernel lays it out.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct HeadMap {
    pub order: HeadLayout,
    /// Each head's `[S][D]` column-major, `[D][S]`: K or V transposed (only in `Bhsd` order).
    pub transposed: bool,
    b: usize,
    h: usize,
    s: usize,
    d: usize,
}

impl HeadMap {
    /// The map of `shape`'s tensors, `None` for a shape that is not attention's.
    pub fn of(shape: &Shape, order: HeadLayout, transposed: bool) -> Option<Self> {
        let Shape::Attention { b, h, s, d, .. } = *shape else {
            return None;
        };
        Some(Self {
            order,
            transposed,
            b,
            h,
            s,
            d,
        })
    }

    /// Whether the map moves anything.
    pub fn is_identity(&self) -> bool {
        self.order == HeadLayout::Bhsd && !self.transposed
    }

    /// Where the kernel keeps the workload's element `i` (of `[B][H][S][D]`).
    pub fn position(&self, i: usize) -> usize {
        let Self { h, s, d, .. } = *self;
        let (bh, row, col) = (i / (s * d), i / d % s, i % d);
        let (bi, hi) = (bh / h, bh % h);
        match (self.order, self.transposed) {
            (HeadLayout::Bhsd, false) => i,
            (HeadLayout::Bhsd, true) => bh * s * d + col * s + row,
            (HeadLayout::Bshd, _) => ((bi * s + row) * h + hi) * d + col,
        }
    }

    /// The workload's element the kernel keeps at `position`: [`Self::position`]'s inverse.
    pub fn element(&self, position: usize) -> usize {
        let Self { h, s, d, .. } = *self;
        match (self.order, self.transposed) {
            (HeadLayout::Bhsd, false) => position,
            (HeadLayout::Bhsd, true) => {
                let (bh, col, row) = (position / (s * d), position / s % d, position % s);
                (bh * s + row) * d + col
            }
            (HeadLayout::Bshd, _) => {
                let (bi, row, hi, col) = (
                    position / (s * h * d),
                    position / (h * d) % s,
                    position / d % h,
                    position % d,
                );
                ((bi * h + hi) * s + row) * d + col
            }
        }
    }

    /// `x` (the workload's `[B][H][S][D]`) laid out as the kernel reads it.
    pub fn lay_out(&self, x: &[f32]) -> Vec<f32> {
        debug_assert_eq!(x.len(), self.b * self.h * self.s * self.d);
        let mut out = vec![0.0f32; x.len()];
        for (i, &v) in x.iter().enumerate() {
            out[self.position(i)] = v;
        }
        out
    }

    /// How a row's summary says it: `[B][S][H][D]`, `[B][H][D][S]`.
    pub fn describe(order: HeadLayout, transposed: bool) -> &'static str {
        match (order, transposed) {
            (HeadLayout::Bhsd, false) => "[B][H][S][D]",
            (HeadLayout::Bhsd, true) => "[B][H][D][S]",
            (HeadLayout::Bshd, _) => "[B][S][H][D]",
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn shape() -> Shape {
        Shape::parse(kernel::Workload::Attention, "2x3x5x4").unwrap()
    }

    #[test]
    fn each_map_is_a_permutation_that_element_inverts() {
        for (order, t) in [
            (HeadLayout::Bhsd, false),
            (HeadLayout::Bhsd, true),
            (HeadLayout::Bshd, false),
        ] {
            let map = HeadMap::of(&shape(), order, t).unwrap();
            let n = 2 * 3 * 5 * 4;
            let mut seen = vec![false; n];
            for i in 0..n {
                let p = map.position(i);
                assert!(!seen[p], "{order:?} {t}: {p} twice");
                seen[p] = true;
                assert_eq!(map.element(p), i, "{order:?} {t}");
            }
        }
    }

    #[test]
    fn positions_follow_the_named_order() {
        // Element (b, h, s, d) = (1, 2, 3, 1) of [2][3][5][4].
        let i = ((3 + 2) * 5 + 3) * 4 + 1;
        let bshd = HeadMap::of(&shape(), HeadLayout::Bshd, false).unwrap();
        assert_eq!(bshd.position(i), ((5 + 3) * 3 + 2) * 4 + 1);
        let vt = HeadMap::of(&shape(), HeadLayout::Bhsd, true).unwrap();
        assert_eq!(vt.position(i), (3 + 2) * 20 + 5 + 3);
        let x: Vec<f32> = (0..120).map(|v| v as f32).collect();
        assert_eq!(bshd.lay_out(&x)[bshd.position(i)], i as f32);
        assert!(HeadMap::of(&Shape::gemm(2, 2, 2), HeadLayout::Bshd, false).is_none());
    }

    #[test]
    fn column_major_puts_each_column_together() {
        assert_eq!(
            column_major(&[1.0, 2.0, 3.0, 4.0, 5.0, 6.0], 2, 3),
            vec![1.0, 4.0, 2.0, 5.0, 3.0, 6.0]
        );
    }
}
