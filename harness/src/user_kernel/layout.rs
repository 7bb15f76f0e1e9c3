//! Where a user kernel reads and writes each element of its tensors, where that is not the
//! workload's own row-major layout: a GEMM's A, B or C column-major (`a=col`, `b=col`,
//! `c=col`), attention in `[B][S][H][D]` order (`layout=bshd`) or a head's K or V transposed
//! (`k=col`, `v=col`). The lab lays the inputs out so before a launch and reads the output
//! back through the same map, so the reference stays the workload's.

use super::spec::HeadLayout;
use kernel::Shape;

/// A tensor of the workload as a kernel lays it out: a permutation of its elements.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Relayout {
    /// A row-major `rows x cols` matrix stored column-major: element (r, c) at `c * rows + r`.
    ColumnMajor { rows: usize, cols: usize },
    /// An attention tensor `[B][H][S][D]` in another order.
    Heads(HeadMap),
}

impl Relayout {
    /// Where the kernel keeps the workload's element `i`.
    pub fn position(&self, i: usize) -> usize {
        match *self {
            Self::ColumnMajor { rows, cols } => i % cols * rows + i / cols,
            Self::Heads(map) => map.position(i),
        }
    }

    /// The workload's element the kernel keeps at `position`: [`Self::position`]'s inverse.
    pub fn element(&self, position: usize) -> usize {
        match *self {
            Self::ColumnMajor { rows, cols } => position % rows * cols + position / rows,
            Self::Heads(map) => map.element(position),
        }
    }

    /// `x`, the workload's tensor, laid out as the kernel reads it.
    pub fn lay_out(&self, x: &[f32]) -> Vec<f32> {
        let mut out = vec![0.0f32; x.len()];
        for (i, &v) in x.iter().enumerate() {
            out[self.position(i)] = v;
        }
        out
    }

    /// How a row's summary says it: `column-major`, `[B][S][H][D]`.
    pub fn describe(&self) -> &'static str {
        match self {
            Self::ColumnMajor { .. } => "column-major",
            Self::Heads(map) => match (map.order, map.transposed) {
                (HeadLayout::Bhsd, false) => "[B][H][S][D]",
                (HeadLayout::Bhsd, true) => "[B][H][D][S]",
                (HeadLayout::Bshd, _) => "[B][S][H][D]",
            },
        }
    }

    /// The dimensions the kernel indexes the tensor by, outermost first, with their names,
    /// for a failure to name an element as the kernel writes it (`C[column n, row m]`,
    /// `O[b, s, h, d]`).
    pub fn axes(&self) -> Vec<(&'static str, usize)> {
        match *self {
            Self::ColumnMajor { rows, cols } => vec![("column", cols), ("row", rows)],
            Self::Heads(HeadMap {
                order: HeadLayout::Bshd,
                b,
                h,
                s,
                d,
                ..
            }) => vec![("b", b), ("s", s), ("h", h), ("d", d)],
            Self::Heads(HeadMap {
                transposed: true,
                b,
                h,
                s,
                d,
                ..
            }) => vec![("b", b), ("h", h), ("d", d), ("s", s)],
            Self::Heads(HeadMap { b, h, s, d, .. }) => vec![("b", b), ("h", h), ("s", s), ("d", d)],
        }
    }
}

/// An attention tensor `[B][H][S][D]` as a kernel lays it out.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct HeadMap {
    order: HeadLayout,
    /// Each head's `[S][D]` column-major, `[D][S]`: K or V transposed (only in `Bhsd` order).
    transposed: bool,
    b: usize,
    h: usize,
    s: usize,
    d: usize,
}

impl HeadMap {
    /// The map of `shape`'s tensors where it moves anything; `None` for the workload's own
    /// layout or a shape that is not attention's.
    pub fn of(shape: &Shape, order: HeadLayout, transposed: bool) -> Option<Self> {
        let Shape::Attention { b, h, s, d, .. } = *shape else {
            return None;
        };
        (order != HeadLayout::Bhsd || transposed).then_some(Self {
            order,
            transposed,
            b,
            h,
            s,
            d,
        })
    }

    fn position(&self, i: usize) -> usize {
        let Self { h, s, d, .. } = *self;
        let (bh, row, col) = (i / (s * d), i / d % s, i % d);
        match (self.order, self.transposed) {
            (HeadLayout::Bhsd, false) => i,
            (HeadLayout::Bhsd, true) => bh * s * d + col * s + row,
            (HeadLayout::Bshd, _) => ((bh / h * s + row) * h + bh % h) * d + col,
        }
    }

    fn element(&self, position: usize) -> usize {
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
}

#[cfg(test)]
mod tests {
    use super::*;

    fn heads(order: HeadLayout, transposed: bool) -> Relayout {
        let shape = Shape::parse(kernel::Workload::Attention, "2x3x5x4").unwrap();
        Relayout::Heads(HeadMap::of(&shape, order, transposed).unwrap())
    }

    #[test]
    fn each_map_is_a_permutation_that_element_inverts() {
        let maps = [
            heads(HeadLayout::Bhsd, true),
            heads(HeadLayout::Bshd, false),
            Relayout::ColumnMajor { rows: 8, cols: 15 },
        ];
        for map in maps {
            let n = 120;
            let mut seen = vec![false; n];
            for i in 0..n {
                let p = map.position(i);
                assert!(!seen[p], "{map:?}: {p} twice");
                seen[p] = true;
                assert_eq!(map.element(p), i, "{map:?}");
            }
            assert_eq!(map.axes().iter().map(|a| a.1).product::<usize>(), n);
        }
    }

    #[test]
    fn positions_follow_the_named_order() {
        // Element (b, h, s, d) = (1, 2, 3, 1) of [2][3][5][4].
        let i = ((3 + 2) * 5 + 3) * 4 + 1;
        let bshd = heads(HeadLayout::Bshd, false);
        assert_eq!(bshd.position(i), ((5 + 3) * 3 + 2) * 4 + 1);
        assert_eq!(bshd.axes(), vec![("b", 2), ("s", 5), ("h", 3), ("d", 4)]);
        let vt = heads(HeadLayout::Bhsd, true);
        assert_eq!(vt.position(i), (3 + 2) * 20 + 5 + 3);
        assert_eq!(vt.describe(), "[B][H][D][S]");
        let x: Vec<f32> = (0..120).map(|v| v as f32).collect();
        assert_eq!(bshd.lay_out(&x)[bshd.position(i)], i as f32);
        let shape = Shape::parse(kernel::Workload::Attention, "2x3x5x4").unwrap();
        assert!(HeadMap::of(&shape, HeadLayout::Bhsd, false).is_none());
        assert!(HeadMap::of(&Shape::gemm(2, 2, 2), HeadLayout::Bshd, false).is_none());
    }

    #[test]
    fn column_major_puts_each_column_together() {
        let col = Relayout::ColumnMajor { rows: 2, cols: 3 };
        assert_eq!(
            col.lay_out(&[1.0, 2.0, 3.0, 4.0, 5.0, 6.0]),
            vec![1.0, 4.0, 2.0, 5.0, 3.0, 6.0]
        );
    }
}
