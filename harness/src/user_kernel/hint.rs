//! Why a kernel that passes on round sizes fails on others: the dimensions of the shape that
//! are not a whole number of the kernel's tiles. The tiles come from the launch the user
//! wrote: `grid=tile:RxC`, or the expressions of `grid=(...)` and `args=(...)` (`cdiv(N,64)`
//! tiles N by 64, found by evaluating it), and for the reduction dimension K of GEMM and
//! linear, which no grid shows, the largest power of two it is a multiple of.

use super::expr::Expr;
use super::spec::{Grid, Layout};
use kernel::Shape;

/// A dimension that is not a whole number of tiles.
#[derive(Clone, Debug, PartialEq)]
struct Tail {
    /// A dimension, or the product of those an expression tiles together (`M*N`).
    dim: String,
    value: usize,
    tile: usize,
    /// Where the tile comes from: `grid x = cdiv(N,64)`.
    from: String,
}

/// A tail of a shape the kernel passed at: `dim` running `rem` past its last whole tile of
/// `tile`. A failure elsewhere with the same remainder is not that tail's doing.
#[derive(Clone, Debug, PartialEq)]
pub struct PassedTail {
    dim: String,
    rem: usize,
    tile: usize,
}

impl PassedTail {
    fn covers(passed: &[PassedTail], dim: &str, value: usize, tile: usize) -> bool {
        passed
            .iter()
            .any(|p| p.dim == dim && p.tile == tile && p.rem == value % tile)
    }
}

/// The tails of `shape`, at which the kernel passed.
pub fn passed_tails(
    grid: &Grid,
    args: &[&Expr],
    shape: &Shape,
    vars: &[(&'static str, usize)],
) -> Vec<PassedTail> {
    // A dimension shorter than one tile has no whole tile before its tail: its pass does not
    // show that a tail after whole tiles is handled.
    tails(grid, args, shape, vars)
        .into_iter()
        .filter(|t| t.value >= t.tile)
        .map(|t| PassedTail {
            rem: t.value % t.tile,
            dim: t.dim,
            tile: t.tile,
        })
        .collect()
}

/// The tile an expression divides `dim` into: `t` when the expression grows by the same step
/// every `t` of `dim` (as `cdiv(dim, t)`, `(dim + t - 1) / t` or `B*H*cdiv(dim, t)` do),
/// holding the other dimensions at `vars`'. Tiles up to `limit`.
fn tile_of_up_to(
    e: &Expr,
    dim: &'static str,
    vars: &[(&'static str, usize)],
    limit: usize,
) -> Option<usize> {
    let at = |v: usize| eval_at(e, dim, v, vars);
    let first = at(1)?;
    // The first size with one more tile: found by doubling, then halving (the expression
    // never shrinks as `dim` grows), checked below.
    let mut hi = 2;
    while at(hi)? == first {
        hi *= 2;
        if hi > 2 * limit {
            return None;
        }
    }
    let mut lo = hi / 2; // at(lo) == first < at(hi)
    while hi - lo > 1 {
        let mid = (lo + hi) / 2;
        if at(mid)? == first {
            lo = mid;
        } else {
            hi = mid;
        }
    }
    let tile = lo;
    let step = at(tile + 1)? - first;
    let tiles_at = |v: usize| first + step * (v.div_ceil(tile) as i64 - 1);
    // Every size up to four tiles for a small tile; the edges of each for a large one.
    let checked: Vec<usize> = if tile <= 1024 {
        (1..=4 * tile).collect()
    } else {
        (1..=4)
            .flat_map(|k| [k * tile - 1, k * tile, k * tile + 1, k * tile - tile / 2])
            .collect()
    };
    let steps = step > 0 && checked.iter().all(|&v| at(v) == Some(tiles_at(v)));
    (tile > 1 && tile <= limit && steps).then_some(tile)
}

/// [`tile_of_up_to`] for the tiles a grid axis gives one dimension.
fn tile_of(e: &Expr, dim: &'static str, vars: &[(&'static str, usize)]) -> Option<usize> {
    tile_of_up_to(e, dim, vars, 4096)
}

/// The grid axes that divide a dimension rounding down (`N/32`, where `cdiv(N,32)` rounds up):
/// at a size that is not a whole number of their tiles the last ones get no block.
fn rounded_down(grid: &Grid, vars: &[(&'static str, usize)]) -> Option<String> {
    let Grid::Exprs(exprs) = grid else {
        return None;
    };
    let each: Vec<String> = exprs
        .iter()
        .enumerate()
        .filter_map(|(axis, e)| {
            vars.iter()
                .filter(|(d, _)| *d != super::SMS)
                .find_map(|&(dim, value)| {
                    let at = |v: usize| eval_at(e, dim, v, vars);
                    // No block below one tile; then `step` more every `tile`.
                    if at(1)? != 0 {
                        return None;
                    }
                    let tile = (2..=4096).find(|&v| at(v).is_some_and(|b| b > 0))?;
                    let step = at(tile)?;
                    let floors = (1..=4 * tile).all(|v| at(v) == Some((v / tile) as i64 * step));
                    (floors && !value.is_multiple_of(tile)).then(|| {
                        format!(
                            "grid {} = {e} rounds down: at {dim} = {value} its blocks cover the \
                             first {} of {dim} and none the last {} (cdiv({dim},{tile}) rounds up)",
                            ["x", "y", "z"][axis],
                            value / tile * tile,
                            value % tile
                        )
                    })
                })
        })
        .collect();
    (!each.is_empty()).then(|| each.join("; "))
}

/// The output's last two dimensions by name: rows, columns.
pub(crate) fn output_axes(shape: &Shape) -> (&'static str, &'static str) {
    match shape {
        Shape::Gemm { .. }
        | Shape::Linear { .. }
        | Shape::Eltwise { .. }
        | Shape::Layernorm { .. }
        | Shape::Softmax { .. } => ("M", "N"),
        Shape::Rbf { .. } => ("n", "K"),
        Shape::Conv { .. } | Shape::Pool { .. } => ("HO", "WO"),
        Shape::Attention { .. } => ("S", "D"),
        // A network's output: class probabilities per image, features per token.
        Shape::Cnn { .. } => ("B", "classes"),
        Shape::Encoder { .. } => ("S", "E"),
        // One number out: a grid covers the N elements read.
        Shape::Reduce { .. } => ("", "N"),
        // Y[N][M]: a row of Y is a column of X.
        Shape::Transpose { .. } => ("N", "M"),
    }
}

/// `e` with `dim` at `v` and the other dimensions at `vars`'.
fn eval_at(e: &Expr, dim: &str, v: usize, vars: &[(&'static str, usize)]) -> Option<i64> {
    let with: Vec<(&str, usize)> = vars
        .iter()
        .map(|&(n, x)| (n, if n == dim { v } else { x }))
        .collect();
    e.eval(&with).ok()
}

/// Whether `e` changes with `dim`, the other dimensions held at `vars`'.
fn depends_on(e: &Expr, dim: &str, vars: &[(&'static str, usize)]) -> bool {
    eval_at(e, dim, 1, vars) != eval_at(e, dim, 4096, vars)
}

/// The tile `t` when `e` is `cdiv(product of dims, t)`: a flat grid such as `cdiv(M*N,256)`
/// tiles M*N by 256, not M by 32 and N by 64 at the shape's other dimension.
fn product_tile(
    e: &Expr,
    dims: &[(&'static str, usize)],
    vars: &[(&'static str, usize)],
) -> Option<usize> {
    let with = |values: &[usize]| -> Vec<(&'static str, usize)> {
        vars.iter()
            .map(|&(n, x)| match dims.iter().position(|(d, _)| *d == n) {
                Some(i) => (n, values[i]),
                None => (n, x),
            })
            .collect()
    };
    let mut ones = vec![1; dims.len()];
    ones[0] = dims[0].1;
    let tile = tile_of_up_to(e, dims[0].0, &with(&ones), 1 << 24)?;
    let shape: Vec<usize> = dims.iter().map(|d| d.1).collect();
    let samples = [
        shape,
        vec![3; dims.len()],
        vec![17; dims.len()],
        vec![64; dims.len()],
    ];
    samples
        .iter()
        .all(|values| {
            let product: usize = values.iter().product();
            e.eval(&with(values)).ok() == Some(product.div_ceil(tile) as i64)
        })
        .then_some(tile)
}

/// The tails of one expression: of the product of the dimensions it tiles together, or of
/// each dimension it tiles.
fn expr_tails(
    e: &Expr,
    from: String,
    dims: &[(&'static str, usize)],
    vars: &[(&'static str, usize)],
) -> Vec<Tail> {
    let involved: Vec<(&'static str, usize)> = dims
        .iter()
        .copied()
        .filter(|(d, _)| depends_on(e, d, vars))
        .collect();
    if involved.len() >= 2
        && let Some(tile) = product_tile(e, &involved, vars)
    {
        let names: Vec<&str> = involved.iter().map(|d| d.0).collect();
        return vec![Tail {
            dim: names.join("*"),
            value: involved.iter().map(|d| d.1).product(),
            tile,
            from,
        }];
    }
    // A dimension's tile is the same whatever the others are: `cdiv(M,64) * cdiv(N,64)` tiles
    // M by 64 at any N, where `cdiv(M*N,4096)` seems to tile M by 63 at N = 65 alone.
    let others_at_one: Vec<(&'static str, usize)> = vars
        .iter()
        .map(|&(n, x)| {
            let other = involved.iter().any(|d| d.0 == n);
            (n, if other { 1 } else { x })
        })
        .collect();
    dims.iter()
        .filter_map(|&(dim, value)| {
            let tile = tile_of(e, dim, vars)?;
            let alone: Vec<(&'static str, usize)> = others_at_one
                .iter()
                .map(|&(n, x)| (n, if n == dim { value } else { x }))
                .collect();
            (tile_of(e, dim, &alone) == Some(tile)).then(|| Tail {
                dim: dim.to_string(),
                value,
                tile,
                from: from.clone(),
            })
        })
        .collect()
}

/// Every tiled dimension of `shape` with a tail, from the grid and the integer arguments.
fn tails(grid: &Grid, args: &[&Expr], shape: &Shape, vars: &[(&'static str, usize)]) -> Vec<Tail> {
    let value = |d: &str| vars.iter().find(|(n, _)| *n == d).map(|(_, v)| *v);
    // The SM count is no dimension of the shape: a grid of it has no tail.
    let dims: Vec<(&'static str, usize)> = vars
        .iter()
        .copied()
        .filter(|(n, _)| *n != super::SMS)
        .collect();
    let mut out: Vec<Tail> = Vec::new();
    let mut push = |t: Tail| {
        if !t.value.is_multiple_of(t.tile) && !out.iter().any(|o| o.dim == t.dim) {
            out.push(t);
        }
    };
    match grid {
        Grid::Tile(t) => {
            if let [tr, tc] = t[..] {
                let (rows, cols) = output_axes(shape);
                for (dim, tile) in [(rows, tr), (cols, tc)] {
                    if let Some(v) = value(dim) {
                        push(Tail {
                            dim: dim.to_string(),
                            value: v,
                            tile,
                            from: format!("grid=tile:{tr}x{tc}"),
                        });
                    }
                }
            }
        }
        Grid::Exprs(exprs) => {
            for (axis, e) in exprs.iter().enumerate() {
                let from = format!("grid {} = {e}", ["x", "y", "z"][axis]);
                expr_tails(e, from, &dims, vars)
                    .into_iter()
                    .for_each(&mut push);
            }
        }
    }
    for e in args {
        expr_tails(e, format!("args: {e}"), &dims, vars)
            .into_iter()
            .for_each(&mut push);
    }
    out
}

/// A flat grid that counts the output's square 2-D tiles as one product (`cdiv(M*N,128*128)`
/// blocks for 128x128 tiles, the tile written as such: `cdiv(M*N,256)` is as likely 256
/// elements a block): where M or N is not a multiple of the tile's edge, the tiles outnumber
/// the blocks, and a kernel that gives each block one tile leaves the last ones unwritten,
/// whether or not M*N is a whole number of tiles.
fn flat_grid_coverage(
    grid: &Grid,
    shape: &Shape,
    vars: &[(&'static str, usize)],
) -> Option<String> {
    let Grid::Exprs(exprs) = grid else {
        return None;
    };
    let (row_dim, col_dim) = output_axes(shape);
    let value = |d: &str| vars.iter().find(|(n, _)| *n == d).map(|(_, v)| *v);
    let dims = [(row_dim, value(row_dim)?), (col_dim, value(col_dim)?)];
    exprs.iter().enumerate().find_map(|(axis, e)| {
        let tile = product_tile(e, &dims, vars)?;
        let edge = (1..=tile.isqrt()).rev().find(|s| s * s == tile)?;
        let written = e.to_string().replace(' ', "");
        if !written.contains(&format!("{edge}*{edge}")) {
            return None;
        }
        let blocks = (dims[0].1 * dims[1].1).div_ceil(tile);
        let tiles = dims[0].1.div_ceil(edge) * dims[1].1.div_ceil(edge);
        (edge > 1 && blocks < tiles).then(|| {
            format!(
                "grid {} = {e} is {blocks} block{}, but {} is {}x{}, {tiles} tiles of \
                 {edge}x{edge} (cdiv({row_dim},{edge})*cdiv({col_dim},{edge})): a kernel that \
                 gives each block one tile leaves the last {} unwritten; launch \
                 cdiv({row_dim},{edge})*cdiv({col_dim},{edge}) blocks",
                ["x", "y", "z"][axis],
                if blocks == 1 { "" } else { "s" },
                shape.output().name,
                dims[0].1,
                dims[1].1,
                tiles - blocks,
            )
        })
    })
}

/// The rows of a buffer as the lab lays it out: each `len` elements long, `dim` of the shape.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Rows {
    pub buffer: &'static str,
    pub dim: &'static str,
    pub len: usize,
}

impl Rows {
    /// The rows of the buffer `name` of `shape`, with A and B in the layouts `a` and `b`;
    /// `None` for a buffer of one row (a bias), or no buffer of the workload's.
    pub fn of(shape: &Shape, name: &str, a: Layout, b: Layout) -> Option<Self> {
        let buffer = shape
            .inputs()
            .into_iter()
            .chain([shape.output()])
            .find(|t| t.name == name && t.dims.len() > 1)?
            .name;
        let (dim, len) = match (*shape, buffer) {
            (Shape::Gemm { m, .. }, "A") if a == Layout::Col => ("M", m),
            (Shape::Gemm { k, .. }, "A") => ("K", k),
            (Shape::Gemm { k, .. }, "B") if b == Layout::Col => ("K", k),
            (Shape::Gemm { n, .. }, "B" | "C") => ("N", n),
            (Shape::Linear { k, .. }, "X" | "W") => ("K", k),
            (Shape::Conv { k, .. }, "filter") => ("K", k),
            (Shape::Conv { w, .. } | Shape::Pool { w, .. }, "x") => ("W", w),
            (Shape::Attention { d, .. }, _) => ("D", d),
            // The output's rows, and the inputs shaped as it is (X and R).
            _ => (output_axes(shape).1, *shape.output().dims.last()?),
        };
        Some(Self { buffer, dim, len })
    }
}

/// What a failed run saw of the reads a partial last tile of K would make.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum KReads {
    /// Nothing known: a GPU run, or the simulator stopped at a read past a buffer's end or at
    /// a wild address.
    Unseen,
    /// Every read was checked against its buffer and none went past one: a wrong result in
    /// the simulator.
    InBounds,
    /// The simulator stopped at a read of shared memory no thread had written, before any
    /// read past a buffer.
    UnwrittenShared,
    /// The simulator stopped at an access off its alignment, a read or (`write`) a write:
    /// where a buffer's rows are not a multiple of a vector's width long, a row starts off
    /// it. `rows`: the buffer's, when the message names one of the workload's.
    Misaligned { write: bool, rows: Option<Rows> },
    /// The simulator stopped at another error (a race, a deadlock at a barrier, a write out of
    /// bounds), before any read past a buffer: nothing points at K.
    OtherError,
    /// A result with elements never written (the output's fill left in place): a K tile
    /// dropped gives wrong values, not missing ones, so nothing points at K.
    Unwritten,
    /// The simulator stopped at a read past the end of a workload buffer whose extent is
    /// these dimensions (B of a GEMM: K and N): a tail of another dimension is not its cause.
    PastBuffer { dims: &'static [&'static str] },
}

/// The dimensions of the extent of buffer `name` of `shape`'s workload, where they are plain
/// (GEMM's A, B and C; a linear layer's X, W, bias and Y).
pub fn buffer_dims(shape: &Shape, name: &str) -> Option<&'static [&'static str]> {
    Some(match (shape, name) {
        (Shape::Gemm { .. }, "A") | (Shape::Linear { .. }, "X") => &["M", "K"],
        (Shape::Gemm { .. }, "B") => &["K", "N"],
        (Shape::Linear { .. }, "W") => &["N", "K"],
        (Shape::Linear { .. }, "bias") => &["N"],
        (Shape::Gemm { .. }, "C") | (Shape::Linear { .. }, "Y") => &["M", "N"],
        _ => return None,
    })
}

/// For rows `n` elements long (`dim = n`) laid end to end, how far their starts are from a
/// vector's alignment: what `dim` is a multiple of, and where the rows start, for a vector
/// `access` ("read", "write"); `None` when every row starts at a multiple of 64 elements.
fn row_alignment(dim: &str, n: usize, access: &str) -> Option<(String, String)> {
    let whole = 1usize << n.trailing_zeros().min(6);
    (whole < 64).then(|| {
        if whole == 1 {
            (
                format!("{dim} = {n} is odd"),
                format!("at odd elements too, where a vector {access} of 2 or more elements"),
            )
        } else {
            (
                format!("{dim} = {n} is a multiple of {whole} and of no larger power of two"),
                format!(
                    "at multiples of {whole} elements only, where a vector {access} of more than \
                     {whole} elements"
                ),
            )
        }
    })
}

/// The hint for a failed row on `shape`, or `None` when every tiled dimension is whole.
/// `first_bad` is the flat index of the first wrong output element, when known; `reads`, what
/// the run saw of the reads past a K tail.
/// `passed`: the tails of shapes the kernel passed at, which are left out here.
pub fn tail_hint(
    grid: &Grid,
    args: &[&Expr],
    shape: &Shape,
    vars: &[(&'static str, usize)],
    first_bad: Option<usize>,
    reads: KReads,
    passed: &[PassedTail],
) -> Option<String> {
    let out = shape.output();
    let cols = *out.dims.last()?;
    let rows = out.dims.len().checked_sub(2).map_or(1, |i| out.dims[i]);
    let (row_dim, col_dim) = output_axes(shape);
    // A misaligned access is no partial tile's doing: only the length of the rows it
    // accessed speaks to it.
    let misaligned = matches!(reads, KReads::Misaligned { .. });
    // The first bad element's row and column, and whether it lies in the tail of `dim` that
    // tiles of `tile` leave.
    let bad = first_bad.map(|i| (i, (i / cols) % rows, i % cols));
    let flat = format!("{row_dim}*{col_dim}");
    let bad_in = |dim: &str, tile: usize| {
        bad.is_some_and(|(i, r, c)| match dim {
            d if d == row_dim => r >= rows / tile * tile,
            d if d == col_dim => c >= cols / tile * tile,
            // A flat grid over the output (`cdiv(M*N,256)`): its last tile holds the last
            // elements.
            d if d == flat => i % (rows * cols) >= rows * cols / tile * tile,
            _ => false,
        })
    };
    // A tail the kernel passed at is no cause, unless the first bad element lies in it.
    let left_out = |dim: &str, n: usize, tile: usize| {
        PassedTail::covers(passed, dim, n, tile) && !bad_in(dim, tile)
    };
    // A read past a buffer: only tails of the dimensions of its extent can cause it.
    let of_buffer = |dim: &str| match reads {
        KReads::PastBuffer { dims } => dim.split('*').any(|d| dims.contains(&d.trim())),
        _ => true,
    };
    let found: Vec<Tail> = match misaligned {
        true => Vec::new(),
        false => tails(grid, args, shape, vars)
            .into_iter()
            .filter(|t| !left_out(&t.dim, t.value, t.tile) && of_buffer(&t.dim))
            .collect(),
    };
    let mut parts = Vec::new();
    // The output's partial dimensions under a `tile:` grid: a whole one has no last, partial
    // tile.
    let mut partial = Vec::new();
    if let Grid::Tile(t) = grid
        && t.len() == 2
        && !misaligned
    {
        // Where the partial tiles start; all of a dimension shorter than one tile is one.
        for (n, tile, what, dim) in [
            (rows, t[0], "rows", row_dim),
            (cols, t[1], "columns", col_dim),
        ] {
            if left_out(dim, n, tile) {
                continue;
            }
            if n < tile {
                partial.push(format!("all {n} {what}, fewer than a tile's {tile}"));
            } else if !n.is_multiple_of(tile) {
                partial.push(format!("{what} from {}", n / tile * tile));
            }
        }
    }
    if let Some(coverage) = flat_grid_coverage(grid, shape, vars).filter(|_| !misaligned) {
        parts.push(coverage);
    }
    parts.extend(rounded_down(grid, vars).filter(|_| !misaligned));
    match grid {
        Grid::Tile(t) if !partial.is_empty() => parts.push(format!(
            "{} is {rows}x{cols}, not a whole number of {}x{} tiles: a kernel that assumes \
                 divisible sizes fails in the last, partial tiles ({})",
            out.name,
            t[0],
            t[1],
            partial.join(", ")
        )),
        _ if !found.is_empty() => {
            let each: Vec<String> = found
                .iter()
                .map(|t| {
                    format!(
                        "{} = {} is not a multiple of {} ({})",
                        t.dim, t.value, t.tile, t.from
                    )
                })
                .collect();
            parts.push(format!(
                "{}: a kernel that assumes divisible sizes fails in the last, partial tiles",
                each.join("; ")
            ));
        }
        _ => {}
    }
    if let Some((_, r, c)) = bad {
        let in_tail = found.iter().any(|t| bad_in(&t.dim, t.tile));
        if !found.is_empty() {
            parts.push(format!(
                "the first bad element, row {r} column {c}, {}",
                if in_tail {
                    "is in that tail"
                } else {
                    "is not in the tail"
                }
            ));
        }
    }
    // The operands' names: A and B of a GEMM, X and W of a linear layer (W's rows are K long).
    let k_operands = match *shape {
        Shape::Gemm { k, .. } => Some((k, "A's rows and B's last row", "A or B")),
        Shape::Linear { k, .. } => Some((k, "X's rows and W's rows", "X or W")),
        _ => None,
    };
    if let KReads::Misaligned {
        write,
        rows: Some(r),
    } = reads
        && let Some((of, starts)) =
            row_alignment(r.dim, r.len, if write { "write" } else { "read" })
    {
        parts.push(format!(
            "{of}: the rows of {} that are {} elements long start {starts} is misaligned",
            r.buffer, r.dim
        ));
    }
    let k_operands = k_operands
        .filter(|_| {
            !matches!(
                reads,
                KReads::OtherError | KReads::Unwritten | KReads::Misaligned { .. }
            )
        })
        .filter(|_| of_buffer("K"));
    if let Some((k, rows, operands)) = k_operands
        && let Some((of, _)) = row_alignment("K", k, "read")
    {
        let whole = 1usize << k.trailing_zeros();
        let tiles = whole * 2;
        parts.push(match reads {
            KReads::InBounds => {
                // K / whole is odd: a kernel taking tiles of `whole` in pairs miscounts them.
                let pairs = if whole > 1 {
                    format!(
                        ", and one in tiles of {whole} has an odd number of them ({}), which a \
                         double buffer that takes them in pairs miscounts",
                        k / whole
                    )
                } else {
                    String::new()
                };
                format!(
                    "{of}, and no read went past the end of {operands}: a kernel that steps \
                     through K in tiles of {tiles} or more may drop the partial last tile (a \
                     loop bound rounded down){pairs}"
                )
            }
            KReads::UnwrittenShared => format!(
                "{of}: a kernel that steps through K in tiles of {tiles} or more and loads \
                 only the elements of a partial last tile that exist leaves the rest of that \
                 tile unwritten in shared memory (write zeros there)"
            ),
            KReads::Unseen
            | KReads::OtherError
            | KReads::Unwritten
            | KReads::Misaligned { .. }
            | KReads::PastBuffer { .. } => format!(
                "{of}: a kernel that steps through K in tiles of {tiles} or more without a \
                 bound check reads a partial last tile past the end of {rows}"
            ),
        });
    }
    (!parts.is_empty()).then(|| parts.join("; "))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn vars(shape: &Shape) -> Vec<(&'static str, usize)> {
        super::super::vars(shape, super::super::SIM_SMS)
    }

    /// [`tail_hint`] of `grid` at `shape`, with no integer arguments and no shape passed at.
    fn hint_at(
        grid: &Grid,
        shape: &Shape,
        first_bad: Option<usize>,
        reads: KReads,
    ) -> Option<String> {
        tail_hint(grid, &[], shape, &vars(shape), first_bad, reads, &[])
    }

    /// A wrong result where every read was checked against its buffer: the K tail was not
    /// read past the operands, and the hint says what else a K tail breaks.
    #[test]
    fn a_k_tail_read_in_bounds_is_not_blamed_on_reads_past_the_operands() {
        let grid = Grid::Tile(vec![16, 16]);
        let shape = Shape::gemm(32, 32, 24);
        let hint = hint_at(&grid, &shape, None, KReads::InBounds).unwrap();
        assert_eq!(
            hint,
            "K = 24 is a multiple of 8 and of no larger power of two, and no read went past the \
             end of A or B: a kernel that steps through K in tiles of 16 or more may drop the \
             partial last tile (a loop bound rounded down), and one in tiles of 8 has an odd \
             number of them (3), which a double buffer that takes them in pairs miscounts"
        );
        let odd = Shape::gemm(32, 32, 129);
        let hint = hint_at(&grid, &odd, None, KReads::InBounds).unwrap();
        assert!(
            hint.ends_with("may drop the partial last tile (a loop bound rounded down)"),
            "{hint}"
        );
        // Elements never written are no dropped K tile's doing.
        let unwritten = hint_at(&grid, &Shape::gemm(30, 32, 129), None, KReads::Unwritten);
        assert!(
            unwritten.as_deref().is_some_and(|h| !h.contains("K = 129")),
            "{unwritten:?}"
        );
    }

    /// The simulator stopped at an error before any read past a buffer: a read of unwritten
    /// shared memory is what a partial K tile loaded only where it exists leads to; a race
    /// says nothing of K, and only the output's tails are hinted at.
    #[test]
    fn a_k_tail_hint_follows_the_error_the_simulator_stopped_at() {
        let grid = Grid::Tile(vec![16, 16]);
        let shape = Shape::gemm(30, 32, 24);
        let hint = |reads| hint_at(&grid, &shape, None, reads);
        let unwritten = hint(KReads::UnwrittenShared).unwrap();
        assert!(
            unwritten.ends_with(
                "K = 24 is a multiple of 8 and of no larger power of two: a kernel that steps \
                 through K in tiles of 16 or more and loads only the elements of a partial last \
                 tile that exist leaves the rest of that tile unwritten in shared memory (write \
                 zeros there)"
            ),
            "{unwritten}"
        );
        let race = hint(KReads::OtherError).unwrap();
        assert!(
            race.starts_with("C is 30x32, not a whole number of 16x16 tiles")
                && !race.contains("K ="),
            "{race}"
        );
        let whole_output = Shape::gemm(32, 32, 24);
        assert_eq!(
            hint_at(&grid, &whole_output, None, KReads::OtherError),
            None
        );
    }

    #[test]
    fn a_misaligned_access_is_told_of_the_rows_of_the_buffer_it_names() {
        let grid = Grid::Tile(vec![16, 32]);
        let (row, col) = (Layout::Row, Layout::Col);
        let hint = |shape: &Shape, write: bool, buffer: &str, b: Layout| {
            let rows = Rows::of(shape, buffer, row, b);
            let reads = KReads::Misaligned { write, rows };
            tail_hint(&grid, &[], shape, &vars(shape), Some(0), reads, &[])
        };
        // A's rows are K long: not C's partial tiles, which misalign nothing.
        let gemm = Shape::gemm(100, 37, 129);
        assert_eq!(
            hint(&gemm, false, "A", row).as_deref(),
            Some(
                "K = 129 is odd: the rows of A that are K elements long start at odd elements \
                 too, where a vector read of 2 or more elements is misaligned"
            )
        );
        // B's rows are N long, or K long when it is column-major; C's are N long.
        assert!(
            hint(&gemm, false, "B", row)
                .unwrap()
                .starts_with("N = 37 is odd: the rows of B")
        );
        assert!(
            hint(&gemm, false, "B", col)
                .unwrap()
                .starts_with("K = 129 is odd: the rows of B")
        );
        assert_eq!(
            hint(&gemm, true, "C", row).as_deref(),
            Some(
                "N = 37 is odd: the rows of C that are N elements long start at odd elements \
                 too, where a vector write of 2 or more elements is misaligned"
            )
        );
        let k_of_4 = Shape::gemm(100, 37, 132);
        assert!(hint(&k_of_4, false, "A", row).is_some_and(|h| h.ends_with(
            "start at multiples of 4 elements only, where a vector read of more than 4 \
                 elements is misaligned"
        )),);
        // Rows of a multiple of 64 elements, a buffer of one row, or none of the workload's:
        // nothing to tell.
        assert_eq!(hint(&Shape::gemm(100, 37, 128), false, "A", row), None);
        let linear = Shape::Linear {
            m: 10,
            n: 30,
            k: 64,
            act: kernel::Activation::Relu,
        };
        assert_eq!(Rows::of(&linear, "bias", row, row), None);
        assert_eq!(Rows::of(&linear, "As", row, row), None);
        // The workloads' other buffers.
        let softmax = Shape::Softmax { m: 9, n: 130 };
        assert_eq!(
            hint(&softmax, false, "X", row).as_deref(),
            Some(
                "N = 130 is a multiple of 2 and of no larger power of two: the rows of X that \
                 are N elements long start at multiples of 2 elements only, where a vector \
                 read of more than 2 elements is misaligned"
            )
        );
        let attention = Shape::Attention {
            b: 1,
            h: 2,
            s: 37,
            d: 18,
            causal: false,
        };
        assert!(
            hint(&attention, false, "V", row)
                .unwrap()
                .starts_with("D = 18 is a multiple")
        );
        let conv = Shape::Conv {
            b: 2,
            c: 3,
            m: 4,
            h: 20,
            w: 19,
            k: 7,
        };
        let rows = |name| Rows::of(&conv, name, row, row).map(|r| (r.dim, r.len));
        assert_eq!(
            [rows("x"), rows("filter"), rows("y")],
            [Some(("W", 19)), Some(("K", 7)), Some(("WO", 13))]
        );
    }

    #[test]
    fn an_output_smaller_than_a_tile_is_one_partial_tile() {
        let grid = Grid::Tile(vec![16, 16]);
        let shape = Shape::gemm(8, 40, 64);
        let hint = hint_at(&grid, &shape, None, KReads::Unseen).unwrap();
        assert!(
            hint.starts_with(
                "C is 8x40, not a whole number of 16x16 tiles: a kernel that assumes divisible \
                 sizes fails in the last, partial tiles (all 8 rows, fewer than a tile's 16, \
                 columns from 32)"
            ),
            "{hint}"
        );
    }

    #[test]
    fn the_k_tail_names_the_operands_of_the_workload() {
        let grid = Grid::Tile(vec![16, 16]);
        let gemm = Shape::gemm(64, 64, 129);
        let g = hint_at(&grid, &gemm, None, KReads::Unseen).unwrap();
        assert!(
            g.ends_with("past the end of A's rows and B's last row"),
            "{g}"
        );
        let linear = Shape::Linear {
            m: 64,
            n: 64,
            k: 65,
            act: kernel::Activation::Gelu,
        };
        let l = hint_at(&grid, &linear, None, KReads::Unseen).unwrap();
        assert!(
            l.contains("K = 65 is odd") && l.ends_with("past the end of X's rows and W's rows"),
            "{l}"
        );
    }

    #[test]
    fn a_tile_grid_names_only_the_partial_dimensions() {
        let grid = Grid::Tile(vec![128, 256]);
        let shape = Shape::gemm(128, 128, 128);
        let hint = hint_at(&grid, &shape, None, KReads::Unseen).unwrap();
        assert!(
            hint.contains("not a whole number of 128x256 tiles")
                && hint.contains("partial tiles (all 128 columns, fewer than a tile's 256)"),
            "{hint}"
        );
        // Whole tiles, a K tail alone: no word of C's tiles.
        let k_only = Shape::gemm(128, 256, 100);
        let hint = hint_at(&grid, &k_only, None, KReads::Unseen).unwrap();
        assert!(
            !hint.contains("tiles (") && hint.starts_with("K = 100"),
            "{hint}"
        );
    }

    #[test]
    fn tiles_are_read_from_cdiv_expressions() {
        let v = [("M", 100), ("N", 37), ("K", 129)];
        let e = Expr::parse("cdiv(N, 64)").unwrap();
        assert_eq!(tile_of(&e, "N", &v), Some(64));
        assert_eq!(tile_of(&e, "M", &v), None);
        let e = Expr::parse("(M + 31) / 32").unwrap();
        assert_eq!(tile_of(&e, "M", &v), Some(32));
        assert_eq!(tile_of(&Expr::parse("M * 2").unwrap(), "M", &v), None);
        assert_eq!(tile_of(&Expr::parse("4").unwrap(), "M", &v), None);
        // A flat grid of blocks per batch and head: S by 64, whatever B*H is.
        let a = [("B", 2), ("H", 3), ("S", 70), ("D", 64)];
        let e = Expr::parse("B*H*cdiv(S,64)").unwrap();
        assert_eq!(tile_of(&e, "S", &a), Some(64));
        assert_eq!(tile_of(&e, "B", &a), None);
    }

    /// A read past B (K by N) is no M tail's doing: a GEMV's grid over M is left out of its
    /// hint, and K is what is named; a read past A keeps the M tail.
    #[test]
    fn a_read_past_a_buffer_names_only_the_tails_of_its_dimensions() {
        let shape = Shape::gemm(37, 1, 32);
        let grid = Grid::Exprs(vec![Expr::parse("cdiv(M,4)").unwrap()]);
        let past_b = KReads::PastBuffer {
            dims: buffer_dims(&shape, "B").unwrap(),
        };
        let hint = hint_at(&grid, &shape, None, past_b).unwrap();
        assert!(
            !hint.contains("M = 37") && hint.starts_with("K = 32 is a multiple of 32"),
            "{hint}"
        );
        let past_a = KReads::PastBuffer {
            dims: buffer_dims(&shape, "A").unwrap(),
        };
        let hint = hint_at(&grid, &shape, None, past_a).unwrap();
        assert!(
            hint.contains("M = 37 is not a multiple of 4") && hint.contains("K = 32"),
            "{hint}"
        );
        assert_eq!(buffer_dims(&Shape::gemm(2, 2, 2), "Z"), None);
    }

    #[test]
    fn explicit_grids_and_k_get_hints_too() {
        let shape = Shape::gemm(100, 37, 129);
        let grid = Grid::Exprs(vec![
            Expr::parse("cdiv(N,32)").unwrap(),
            Expr::parse("cdiv(M,64)").unwrap(),
        ]);
        let hint = hint_at(&grid, &shape, Some(99 * 37), KReads::Unseen).unwrap();
        assert!(
            hint.contains("N = 37 is not a multiple of 32 (grid x = cdiv(N,32))")
                && hint.contains("M = 100 is not a multiple of 64 (grid y = cdiv(M,64))"),
            "{hint}"
        );
        assert!(hint.contains("row 99 column 0, is in that tail"), "{hint}");
        assert!(
            hint.contains("K = 129 is odd: a kernel that steps through K in tiles of 2 or more"),
            "{hint}"
        );
        // Round M and N, a K tail alone.
        let round = Shape::gemm(64, 64, 100);
        let hint = hint_at(&grid, &round, Some(0), KReads::Unseen).unwrap();
        assert!(
            hint.starts_with(
                "K = 100 is a multiple of 4 and of no larger power of two: a kernel that steps \
                 through K in tiles of 8 or more"
            ),
            "{hint}"
        );
        let all_round = Shape::gemm(64, 64, 128);
        assert_eq!(hint_at(&grid, &all_round, Some(0), KReads::Unseen), None);
    }

    #[test]
    fn a_flat_grid_tiles_the_product_of_its_dimensions() {
        let shape = Shape::Eltwise { m: 4, n: 8 };
        let flat = |e: &str| Grid::Exprs(vec![Expr::parse(e).unwrap()]);
        let hint = hint_at(&flat("cdiv(M*N,256)"), &shape, None, KReads::Unseen).unwrap();
        assert_eq!(
            hint,
            "M*N = 32 is not a multiple of 256 (grid x = cdiv(M*N,256)): a kernel that assumes \
             divisible sizes fails in the last, partial tiles"
        );
        let whole = Shape::Eltwise { m: 32, n: 8 };
        assert_eq!(
            hint_at(&flat("cdiv(M*N,256)"), &whole, None, KReads::Unseen),
            None
        );
        // 2-D tiles counted as one product, as a flat launcher writes them: a tile of M*N,
        // never M by 63 and N by 126 (what the expression seems to give at 130 x 260).
        let gemm = Shape::gemm(130, 260, 72);
        let hint = hint_at(&flat("cdiv(M*N,128*128)"), &gemm, None, KReads::Unseen).unwrap();
        assert!(
            hint.contains("; M*N = 33800 is not a multiple of 16384 (grid x = cdiv(M*N,128*128))"),
            "{hint}"
        );
        assert!(
            !hint.contains("M = 130") && !hint.contains("N = 260"),
            "{hint}"
        );
        // 130 x 260 is 2 x 3 tiles of 128 x 128, for 3 blocks: the flat grid is short.
        assert!(
            hint.starts_with(
                "grid x = cdiv(M*N,128*128) is 3 blocks, but C is 130x260, 6 tiles of 128x128 \
                 (cdiv(M,128)*cdiv(N,128)): a kernel that gives each block one tile leaves the \
                 last 3 unwritten; launch cdiv(M,128)*cdiv(N,128) blocks"
            ),
            "{hint}"
        );
        // 64 x 256 is a whole 16384 elements, one block, and two tiles.
        let whole = Shape::gemm(64, 256, 64);
        let hint = hint_at(&flat("cdiv(M*N,128*128)"), &whole, None, KReads::Unseen).unwrap();
        assert!(
            hint.starts_with("grid x = cdiv(M*N,128*128) is 1 block, but C is 64x256, 2 tiles"),
            "{hint}"
        );
        // Square tiles that fit: nothing to say.
        let fits = Shape::gemm(256, 256, 64);
        assert_eq!(
            hint_at(&flat("cdiv(M*N,128*128)"), &fits, None, KReads::Unseen),
            None
        );
        // Its last 1032 elements are the partial tile.
        for (bad, where_) in [(33280, "is in that tail"), (100, "is not in the tail")] {
            let hint =
                hint_at(&flat("cdiv(M*N,128*128)"), &gemm, Some(bad), KReads::Unseen).unwrap();
            assert!(hint.contains(where_), "{bad}: {hint}");
        }
        // Blocks per batch and head times tiles of S: S's tail, at any B and H.
        let attention = Shape::Attention {
            b: 1,
            h: 2,
            s: 70,
            d: 64,
            causal: false,
        };
        let hint = hint_at(&flat("B*H*cdiv(S,64)"), &attention, None, KReads::Unseen).unwrap();
        assert!(
            hint.starts_with("S = 70 is not a multiple of 64 (grid x = B*H*cdiv(S,64))"),
            "{hint}"
        );
        // Not a product: each dimension's own tile.
        let grid = flat("cdiv(N,32) + cdiv(M,4)");
        let odd = Shape::Eltwise { m: 6, n: 40 };
        let hint = hint_at(&grid, &odd, None, KReads::Unseen).unwrap();
        assert!(
            hint.contains("N = 40 is not a multiple of 32")
                && hint.contains("M = 6 is not a multiple of 4"),
            "{hint}"
        );
    }

    #[test]
    fn an_args_list_shows_the_tiles_of_a_loop() {
        let shape = Shape::Attention {
            b: 1,
            h: 2,
            s: 37,
            d: 16,
            causal: false,
        };
        let grid = Grid::Exprs(vec![Expr::parse("B").unwrap(), Expr::parse("H").unwrap()]);
        let tc = Expr::parse("cdiv(S,32)").unwrap();
        let hint = tail_hint(
            &grid,
            &[&tc],
            &shape,
            &vars(&shape),
            None,
            KReads::Unseen,
            &[],
        )
        .unwrap();
        assert!(
            hint.contains("S = 37 is not a multiple of 32 (args: cdiv(S,32))"),
            "{hint}"
        );
    }

    /// A tail at a remainder the kernel passed at is no cause: after a pass at 68x100x64
    /// (M = 68, 4 past a whole tile of 64, and N = 100, 4 past a whole tile of 32), M = 132
    /// is left out and N = 37 kept, unless the first bad element lies in M's tail; a pass
    /// shorter than a tile counts for nothing; a tile grid leaves out its rows the same way.
    #[test]
    fn a_tail_at_a_remainder_the_kernel_passed_at_is_left_out() {
        let grid = Grid::Exprs(vec![
            Expr::parse("cdiv(N,32)").unwrap(),
            Expr::parse("cdiv(M,64)").unwrap(),
        ]);
        let passed = Shape::gemm(68, 100, 64);
        let handled = passed_tails(&grid, &[], &passed, &vars(&passed));
        let failed = Shape::gemm(132, 37, 64);
        let hint = |handled: &[PassedTail]| {
            tail_hint(
                &grid,
                &[],
                &failed,
                &vars(&failed),
                None,
                KReads::Unseen,
                handled,
            )
        };
        let all = hint(&[]).unwrap();
        assert!(all.contains("M = 132 is not a multiple of 64"), "{all}");
        let left = hint(&handled).unwrap();
        assert!(
            !left.contains("M = 132") && left.contains("N = 37 is not a multiple of 32"),
            "{left}"
        );
        // The first bad element in M's tail (row 130) keeps it.
        let bad_row = tail_hint(
            &grid,
            &[],
            &failed,
            &vars(&failed),
            Some(130 * 37),
            KReads::Unseen,
            &handled,
        )
        .unwrap();
        assert!(
            bad_row.contains("M = 132 is not a multiple of 64")
                && bad_row.contains("row 130 column 0, is in that tail"),
            "{bad_row}"
        );
        // A pass at M = 4, less than one tile, says nothing of a tail after whole tiles.
        let short = Shape::gemm(4, 100, 64);
        let none = passed_tails(&grid, &[], &short, &vars(&short));
        assert!(hint(&none).unwrap().contains("M = 132"));
        let tile = Grid::Tile(vec![64, 32]);
        let handled = passed_tails(&tile, &[], &passed, &vars(&passed));
        let left = tail_hint(
            &tile,
            &[],
            &failed,
            &vars(&failed),
            None,
            KReads::Unseen,
            &handled,
        )
        .unwrap();
        assert!(
            left.contains("not a whole number of 64x32 tiles")
                && left.contains("(columns from 32)"),
            "{left}"
        );
    }

    /// A grid that divides rounding down leaves the last rows or columns without a block.
    #[test]
    fn a_grid_that_rounds_down_is_named() {
        let grid = Grid::Exprs(vec![
            Expr::parse("N/32").unwrap(),
            Expr::parse("M/32").unwrap(),
        ]);
        let shape = Shape::gemm(100, 37, 128);
        let hint = hint_at(&grid, &shape, None, KReads::InBounds).unwrap();
        assert!(
            hint.contains(
                "grid x = N/32 rounds down: at N = 37 its blocks cover the first 32 of N and none \
                 the last 5 (cdiv(N,32) rounds up); grid y = M/32 rounds down: at M = 100 its \
                 blocks cover the first 96 of M and none the last 4"
            ),
            "{hint}"
        );
        let round = Shape::gemm(64, 96, 128);
        assert_eq!(hint_at(&grid, &round, None, KReads::InBounds), None);
        // cdiv rounds up: nothing to say of it.
        let up = Grid::Exprs(vec![Expr::parse("cdiv(N,32)").unwrap()]);
        assert!(
            !hint_at(&up, &shape, None, KReads::Unseen)
                .unwrap()
                .contains("rounds down")
        );
    }
}
