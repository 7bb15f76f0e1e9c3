//! TMA tensor maps: the 128-byte `CUtensorMap` a Hopper kernel takes as a
//! `const __grid_constant__ CUtensorMap` parameter, from which the Tensor Memory Accelerator
//! generates every address of a box copy (`cp.async.bulk.tensor`) in hardware.
//!
//! A plan names the map declaratively ([`TensorMap`], passed as [`crate::Arg::TensorMap`]);
//! [`TensorMap::encoding`] turns it into the arguments of the driver's
//! `cuTensorMapEncodeTiled`, checking the driver's constraints first so that a bad map is a
//! clear message instead of `CUDA_ERROR_INVALID_VALUE`. The CUDA simulator checks the same
//! constraints and writes its own encoding of the same fields ([`TensorMap::sim_words`]), which
//! its emulation of the copies (`kernel/sim/include/sim_hopper.h`) reads.

use crate::contract::Unsupported;
use crate::plan::{Buf, Dtype};

/// How the TMA swizzles a box as it writes it to shared memory. The span is the width of the
/// swizzle pattern: a box's inner dimension may be at most that many bytes.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum TmaSwizzle {
    None,
    B32,
    B64,
    /// 16-byte chunks of each 128-byte row XORed with the row's index mod 8: the layout the
    /// `wgmma` shared-memory descriptors call 128B swizzle.
    B128,
}

impl TmaSwizzle {
    /// The widest inner box dimension in bytes (`None`: the TMA's own limit of 256 elements).
    pub fn span(self) -> Option<usize> {
        match self {
            Self::None => None,
            Self::B32 => Some(32),
            Self::B64 => Some(64),
            Self::B128 => Some(128),
        }
    }

    /// The driver's `CUtensorMapSwizzle` value.
    pub fn code(self) -> u32 {
        match self {
            Self::None => 0,
            Self::B32 => 1,
            Self::B64 => 2,
            Self::B128 => 3,
        }
    }
}

/// The TMA's most dimensions.
pub const MAX_RANK: usize = 5;

/// A tiled tensor map of rank 1 to 5 over a buffer, as `cuTensorMapEncodeTiled` takes it:
/// `dims` elements per dimension, innermost first, the innermost contiguous and dimension `i`
/// (from 1) `strides[i - 1]` elements apart, copied in boxes of `boxes`. Elements of a box
/// outside the view are filled with zeros, which is how a kernel reading through the map
/// handles tails of M, N and K for free. [`TensorMap::matrix`] is the common 2-D map over a
/// row-major matrix; higher ranks let a kernel split a dimension (fast.cu views a row of K
/// elements as K / 64 rows of 64, so that one box spans several 128-byte swizzle rows).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct TensorMap {
    pub buf: Buf,
    /// Dimensions in use, 1 to [`MAX_RANK`]; the entries past it are 1 (strides 0).
    pub rank: usize,
    pub dims: [usize; MAX_RANK],
    pub strides: [usize; MAX_RANK - 1],
    pub boxes: [u32; MAX_RANK],
    pub swizzle: TmaSwizzle,
}

/// The arguments of `cuTensorMapEncodeTiled`, innermost dimension first; entries past
/// `rank` are unused.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TiledEncoding {
    /// `CUtensorMapDataType`.
    pub data_type: u32,
    pub rank: u32,
    pub global_dim: [u64; MAX_RANK],
    /// Bytes between consecutive indices of dimensions 1.. (one fewer than dimensions).
    pub global_strides: [u64; MAX_RANK - 1],
    pub box_dim: [u32; MAX_RANK],
    pub element_strides: [u32; MAX_RANK],
    /// `CUtensorMapSwizzle`.
    pub swizzle: u32,
}

/// "KLTMAP02": the first word of the simulator's tensor maps.
const SIM_TENSOR_MAP_MAGIC: u64 = 0x4b4c_544d_4150_3032;

/// `CUtensorMapDataType` codes (cuda.h).
const UINT8: u32 = 0;
const INT32: u32 = 3;
const FLOAT16: u32 = 6;
const FLOAT32: u32 = 7;
const BFLOAT16: u32 = 9;

impl TensorMap {
    /// A 2-D map over a row-major `rows` x `cols` matrix, copied in boxes of `box_rows` x
    /// `box_cols`.
    pub fn matrix(
        buf: Buf,
        rows: usize,
        cols: usize,
        box_rows: u32,
        box_cols: u32,
        swizzle: TmaSwizzle,
    ) -> Self {
        Self {
            buf,
            rank: 2,
            dims: [cols, rows, 1, 1, 1],
            strides: [cols, 0, 0, 0],
            boxes: [box_cols, box_rows, 1, 1, 1],
            swizzle,
        }
    }

    /// The encoding arguments for a buffer of `dtype` elements, or the driver constraint the
    /// map breaks: 1 to 5 dimensions, strides a multiple of 16 bytes, box edges 1..=256
    /// elements, the inner box edge a multiple of 16 bytes and within the swizzle span.
    pub fn encoding(&self, dtype: Dtype) -> Result<TiledEncoding, Unsupported> {
        let bytes = dtype.bytes();
        let err = |what: String| Err(Unsupported(format!("TMA tensor map: {what}")));
        let rank = self.rank;
        if !(1..=MAX_RANK).contains(&rank) {
            return err(format!("{rank} dimensions; the TMA takes 1 to {MAX_RANK}"));
        }
        let dims = &self.dims[..rank];
        if dims.contains(&0) {
            return err(format!("empty view {}", self.shape_text()));
        }
        if let Some(d) = dims.iter().find(|&&d| d as u64 > 1 << 32) {
            return err(format!(
                "a dimension of {d} elements; the TMA allows at most 2^32"
            ));
        }
        let mut global_strides = [0u64; MAX_RANK - 1];
        for (i, &s) in self.strides[..rank - 1].iter().enumerate() {
            let stride = s * bytes;
            // Zero is a multiple of 16: a dimension of one element may give any (fast.cu's
            // rank-5 maps give their two trailing ones 0).
            if !stride.is_multiple_of(16) {
                return err(if rank == 2 {
                    format!(
                        "rows of {s} elements are {stride} B apart; the TMA needs a multiple of \
                         16 B (a multiple of {} columns)",
                        16 / bytes
                    )
                } else {
                    format!(
                        "dimension {} is {s} elements ({stride} B) a step; the TMA needs a \
                         multiple of 16 B",
                        i + 1
                    )
                });
            }
            if stride as u64 >= 1 << 40 {
                return err(format!(
                    "a stride of {stride} B; the TMA allows less than 2^40"
                ));
            }
            global_strides[i] = stride as u64;
        }
        let names = ["columns", "rows", "planes", "dimension 3", "dimension 4"];
        for (i, &edge) in self.boxes[..rank].iter().enumerate() {
            if !(1..=256).contains(&edge) {
                let name = if rank == 1 { "elements" } else { names[i] };
                return err(format!("a box of {edge} {name}; the TMA allows 1 to 256"));
            }
        }
        let inner = self.boxes[0] as usize * bytes;
        if !inner.is_multiple_of(16) {
            return err(format!(
                "the box's rows are {inner} B, not a multiple of 16 B"
            ));
        }
        if let Some(span) = self.swizzle.span().filter(|&s| inner > s) {
            return err(format!(
                "the box's rows are {inner} B, wider than its {span} B swizzle"
            ));
        }
        let mut global_dim = [1u64; MAX_RANK];
        for (g, &d) in global_dim.iter_mut().zip(dims) {
            *g = d as u64;
        }
        Ok(TiledEncoding {
            data_type: match dtype {
                Dtype::F32 => FLOAT32,
                Dtype::F16 => FLOAT16,
                Dtype::Bf16 => BFLOAT16,
                // The TMA moves FP8 as bytes.
                Dtype::E4m3 | Dtype::E5m2 | Dtype::S8 => UINT8,
                Dtype::I32 => INT32,
            },
            rank: rank as u32,
            global_dim,
            global_strides,
            box_dim: self.boxes,
            element_strides: [1; MAX_RANK],
            swizzle: self.swizzle.code(),
        })
    }

    /// `ROWSxCOLS` for a matrix, the dimensions innermost first otherwise.
    fn shape_text(&self) -> String {
        if self.rank == 2 {
            format!("{}x{}", self.dims[1], self.dims[0])
        } else {
            let d: Vec<String> = self.dims[..self.rank.min(MAX_RANK)]
                .iter()
                .map(usize::to_string)
                .collect();
            format!("{{{}}}", d.join(", "))
        }
    }

    /// Whether the view lies inside a buffer of `len` elements: the TMA reads wherever the map
    /// says, so a view larger than its buffer would read past the allocation.
    pub fn fits(&self, len: usize) -> Result<(), Unsupported> {
        let rank = self.rank.clamp(1, MAX_RANK);
        let last = (1..rank).fold(self.dims[0].saturating_sub(1), |acc, i| {
            acc.saturating_add(
                self.dims[i]
                    .saturating_sub(1)
                    .saturating_mul(self.strides[i - 1]),
            )
        });
        if last >= len {
            return Err(Unsupported(format!(
                "TMA tensor map: a {} view (its last element at {last}) over a buffer of {len} \
                 elements",
                self.shape_text()
            )));
        }
        Ok(())
    }

    /// The simulator's 128 bytes for this map over a buffer of `dtype` at host address `addr`:
    /// the `SimTensorMap` of `kernel/sim/include/sim_hopper.h`, field by field (magic, address,
    /// dimensions, strides in bytes, box, element strides, rank, type, swizzle, out-of-bounds
    /// fill (zeros), interleave (none), element size).
    pub fn sim_words(&self, dtype: Dtype, addr: u64) -> Result<[u64; 16], Unsupported> {
        let e = self.encoding(dtype)?;
        let mut b = [0u8; 128];
        let mut put = |at: usize, v: &[u8]| b[at..at + v.len()].copy_from_slice(v);
        put(0, &SIM_TENSOR_MAP_MAGIC.to_le_bytes());
        put(8, &addr.to_le_bytes());
        for (i, d) in e.global_dim.iter().enumerate() {
            put(16 + 8 * i, &d.to_le_bytes());
        }
        for (i, s) in e.global_strides.iter().enumerate() {
            put(56 + 8 * i, &s.to_le_bytes());
        }
        for (i, x) in e.box_dim.iter().enumerate() {
            put(88 + 4 * i, &x.to_le_bytes());
        }
        for (i, x) in e.element_strides.iter().enumerate() {
            put(108 + i, &[*x as u8]);
        }
        put(
            113,
            &[e.rank as u8, e.data_type as u8, e.swizzle as u8, 0, 0],
        );
        put(120, &(dtype.bytes() as u32).to_le_bytes());
        let mut w = [0u64; 16];
        for (word, chunk) in w.iter_mut().zip(b.chunks_exact(8)) {
            *word = u64::from_le_bytes(chunk.try_into().expect("8 bytes"));
        }
        Ok(w)
    }

    /// Bytes one box copy writes to shared memory (out-of-bounds elements included: the TMA
    /// writes their zeros and counts them on the mbarrier).
    pub fn box_bytes(&self, dtype: Dtype) -> usize {
        self.boxes[..self.rank.clamp(1, MAX_RANK)]
            .iter()
            .map(|&x| x as usize)
            .product::<usize>()
            * dtype.bytes()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn map(rows: usize, cols: usize, box_rows: u32, box_cols: u32) -> TensorMap {
        TensorMap::matrix(
            Buf::Input(0),
            rows,
            cols,
            box_rows,
            box_cols,
            TmaSwizzle::B128,
        )
    }

    /// fast.cu's map of a row-major M x K matrix: K split into K / 64 planes of 64 columns,
    /// so that a box of 64 x BM x BK / 64 covers BK columns in 128-byte swizzle rows.
    fn planes(m: usize, k: usize, bm: u32, bk: u32) -> TensorMap {
        TensorMap {
            buf: Buf::Input(0),
            rank: 3,
            dims: [64, m, k / 64, 1, 1],
            strides: [k, 64, 0, 0],
            boxes: [64, bm, bk / 64, 1, 1],
            swizzle: TmaSwizzle::B128,
        }
    }

    #[test]
    fn a_row_major_bf16_matrix_is_encoded_inner_dimension_first() {
        // A[M = 300, K = 72] in BF16, boxes of 128 rows x 64 columns (128 B rows).
        let e = map(300, 72, 128, 64).encoding(Dtype::Bf16).unwrap();
        assert_eq!((e.data_type, e.rank), (9, 2));
        assert_eq!(e.global_dim[..2], [72, 300]);
        assert_eq!(e.global_strides[..1], [144]);
        assert_eq!(e.box_dim[..2], [64, 128]);
        assert_eq!(e.element_strides[..2], [1, 1]);
        assert_eq!(e.swizzle, 3);
        assert_eq!(map(300, 72, 128, 64).box_bytes(Dtype::Bf16), 16384);
        let f = map(8, 4, 8, 4).encoding(Dtype::F32).unwrap();
        assert_eq!((f.data_type, f.global_strides[0]), (7, 16));
        assert_eq!(map(8, 8, 8, 8).encoding(Dtype::F16).unwrap().data_type, 6);
    }

    #[test]
    fn a_3d_map_carries_its_strides_in_bytes() {
        let m = planes(256, 192, 128, 128);
        let e = m.encoding(Dtype::Bf16).unwrap();
        assert_eq!(e.rank, 3);
        assert_eq!(e.global_dim[..3], [64, 256, 3]);
        assert_eq!(e.global_strides[..2], [384, 128]);
        assert_eq!(e.box_dim[..3], [64, 128, 2]);
        assert_eq!(m.box_bytes(Dtype::Bf16), 64 * 128 * 2 * 2);
        // The last element is row 255 of plane 2, column 63: 255 * 192 + 2 * 64 + 63.
        assert!(m.fits(256 * 192).is_ok());
        let why = m.fits(256 * 192 - 1).unwrap_err().0;
        assert!(
            why.contains("{64, 256, 3} view (its last element at 49151)"),
            "{why}"
        );
        let mut odd = m;
        odd.strides[1] = 4;
        let why = odd.encoding(Dtype::Bf16).unwrap_err().0;
        assert!(
            why.contains("dimension 2 is 4 elements (8 B) a step"),
            "{why}"
        );
        let mut six = m;
        six.rank = 6;
        assert!(
            six.encoding(Dtype::Bf16)
                .unwrap_err()
                .0
                .contains("6 dimensions")
        );
    }

    #[test]
    fn the_simulator_encoding_carries_the_driver_fields() {
        let w = map(300, 72, 128, 64)
            .sim_words(Dtype::Bf16, 0x7000_1000)
            .unwrap();
        assert_eq!(w[0], SIM_TENSOR_MAP_MAGIC);
        assert_eq!((w[1], w[2], w[3], w[4]), (0x7000_1000, 72, 300, 1));
        assert_eq!((w[7], w[8]), (144, 0));
        // Box edges at byte 88 (word 11): 64, 128, then 1s.
        assert_eq!(w[11], 64 | 128 << 32);
        assert_eq!(w[12], 1 | 1 << 32);
        // Word 13: the fifth edge, then four element strides of 1 (bytes 108..112).
        assert_eq!(w[13], 1 | 0x0101_0101 << 32);
        // Word 14: the fifth element stride, rank 2, BFLOAT16 (9), 128B swizzle (3), zeros
        // out of bounds, no interleave.
        assert_eq!(w[14], 1 | 2 << 8 | 9 << 16 | 3 << 24);
        assert_eq!(w[15], 2);
        let p = planes(256, 192, 128, 128)
            .sim_words(Dtype::Bf16, 0)
            .unwrap();
        assert_eq!((p[2], p[3], p[4], p[7], p[8]), (64, 256, 3, 384, 128));
        assert!(map(64, 100, 64, 64).sim_words(Dtype::Bf16, 0).is_err());
    }

    #[test]
    fn a_view_must_fit_its_buffer() {
        assert!(map(300, 72, 128, 64).fits(300 * 72).is_ok());
        let why = map(300, 72, 128, 64).fits(300 * 72 - 1).unwrap_err().0;
        assert!(why.contains("300x72 view"), "{why}");
        assert!(why.contains("over a buffer of 21599"), "{why}");
    }

    #[test]
    fn driver_constraints_are_refused_with_the_constraint() {
        let msg = |m: TensorMap| m.encoding(Dtype::Bf16).unwrap_err().0;
        let odd = msg(map(64, 100, 64, 64));
        assert!(
            odd.contains("200 B apart") && odd.contains("multiple of 8 columns"),
            "{odd}"
        );
        assert!(msg(map(64, 64, 512, 64)).contains("512 rows"));
        assert!(msg(map(64, 64, 64, 0)).contains("0 columns"));
        assert!(msg(map(64, 64, 64, 4)).contains("8 B, not a multiple of 16"));
        let wide = msg(map(64, 256, 64, 128));
        assert!(
            wide.contains("256 B, wider than its 128 B swizzle"),
            "{wide}"
        );
        assert!(msg(map(0, 64, 64, 64)).contains("empty"));
        let mut plain = map(64, 256, 64, 128);
        plain.swizzle = TmaSwizzle::None;
        assert!(plain.encoding(Dtype::Bf16).is_ok());
    }
}
