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

/// A 2-D tiled tensor map over a row-major view of a buffer: `rows` x `cols` elements of the
/// buffer's type, `cols` contiguous, copied in boxes of `box_rows` x `box_cols`. Elements of
/// a box outside the view are filled with zeros, which is how a kernel reading through the
/// map handles tails of M, N and K for free.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct TensorMap {
    pub buf: Buf,
    pub rows: usize,
    pub cols: usize,
    pub box_rows: u32,
    pub box_cols: u32,
    pub swizzle: TmaSwizzle,
}

/// The arguments of `cuTensorMapEncodeTiled` for a rank-2 map, innermost dimension first.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TiledEncoding {
    /// `CUtensorMapDataType`.
    pub data_type: u32,
    pub global_dim: [u64; 2],
    /// Bytes between rows (one fewer stride than dimensions; the innermost is the element).
    pub global_strides: [u64; 1],
    pub box_dim: [u32; 2],
    pub element_strides: [u32; 2],
    /// `CUtensorMapSwizzle`.
    pub swizzle: u32,
}

/// "KLTMAP01": the first word of the simulator's tensor maps.
const SIM_TENSOR_MAP_MAGIC: u64 = 0x4b4c_544d_4150_3031;

/// `CUtensorMapDataType` codes (cuda.h).
const FLOAT16: u32 = 6;
const FLOAT32: u32 = 7;
const BFLOAT16: u32 = 9;

impl TensorMap {
    /// The encoding arguments for a buffer of `dtype` elements, or the driver constraint the
    /// map breaks: row strides a multiple of 16 bytes, box edges 1..=256 elements, the inner
    /// box edge a multiple of 16 bytes and within the swizzle span.
    pub fn encoding(&self, dtype: Dtype) -> Result<TiledEncoding, Unsupported> {
        let bytes = dtype.bytes();
        let err = |what: String| Err(Unsupported(format!("TMA tensor map: {what}")));
        if self.rows == 0 || self.cols == 0 {
            return err(format!("empty view {}x{}", self.rows, self.cols));
        }
        let stride = self.cols * bytes;
        if !stride.is_multiple_of(16) {
            return err(format!(
                "rows of {} elements are {stride} B apart; the TMA needs a multiple of 16 B \
                 (a multiple of {} columns)",
                self.cols,
                16 / bytes
            ));
        }
        for (edge, name) in [(self.box_rows, "rows"), (self.box_cols, "columns")] {
            if !(1..=256).contains(&edge) {
                return err(format!("a box of {edge} {name}; the TMA allows 1 to 256"));
            }
        }
        let inner = self.box_cols as usize * bytes;
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
        Ok(TiledEncoding {
            data_type: match dtype {
                Dtype::F32 => FLOAT32,
                Dtype::F16 => FLOAT16,
                Dtype::Bf16 => BFLOAT16,
            },
            global_dim: [self.cols as u64, self.rows as u64],
            global_strides: [stride as u64],
            box_dim: [self.box_cols, self.box_rows],
            element_strides: [1, 1],
            swizzle: self.swizzle.code(),
        })
    }

    /// Whether the view lies inside a buffer of `len` elements: the TMA reads wherever the map
    /// says, so a view larger than its buffer would read past the allocation.
    pub fn fits(&self, len: usize) -> Result<(), Unsupported> {
        let need = self.rows.saturating_mul(self.cols);
        if need > len {
            return Err(Unsupported(format!(
                "TMA tensor map: a {}x{} view over a buffer of {len} elements",
                self.rows, self.cols
            )));
        }
        Ok(())
    }

    /// The simulator's 128 bytes for this map over a buffer of `dtype` at host address `addr`:
    /// the `SimTensorMap` of `kernel/sim/include/sim_hopper.h`, word by word (magic, address,
    /// dimensions, row stride, box, element strides, then type, swizzle, out-of-bounds fill
    /// (zeros), interleave (none) and element size packed in one word).
    pub fn sim_words(&self, dtype: Dtype, addr: u64) -> Result<[u64; 16], Unsupported> {
        let e = self.encoding(dtype)?;
        let mut w = [0u64; 16];
        w[0] = SIM_TENSOR_MAP_MAGIC;
        w[1] = addr;
        w[2] = e.global_dim[0];
        w[3] = e.global_dim[1];
        w[4] = e.global_strides[0];
        w[5] = u64::from(e.box_dim[0]) | u64::from(e.box_dim[1]) << 32;
        w[6] = u64::from(e.element_strides[0]) | u64::from(e.element_strides[1]) << 32;
        w[7] = u64::from(e.data_type) | u64::from(e.swizzle) << 8 | (dtype.bytes() as u64) << 32;
        Ok(w)
    }

    /// Bytes one box copy writes to shared memory (out-of-bounds elements included: the TMA
    /// writes their zeros and counts them on the mbarrier).
    pub fn box_bytes(&self, dtype: Dtype) -> usize {
        self.box_rows as usize * self.box_cols as usize * dtype.bytes()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn map(rows: usize, cols: usize, box_rows: u32, box_cols: u32) -> TensorMap {
        TensorMap {
            buf: Buf::Input(0),
            rows,
            cols,
            box_rows,
            box_cols,
            swizzle: TmaSwizzle::B128,
        }
    }

    #[test]
    fn a_row_major_bf16_matrix_is_encoded_inner_dimension_first() {
        // A[M = 300, K = 72] in BF16, boxes of 128 rows x 64 columns (128 B rows).
        let e = map(300, 72, 128, 64).encoding(Dtype::Bf16).unwrap();
        assert_eq!(e.data_type, 9);
        assert_eq!(e.global_dim, [72, 300]);
        assert_eq!(e.global_strides, [144]);
        assert_eq!(e.box_dim, [64, 128]);
        assert_eq!(e.element_strides, [1, 1]);
        assert_eq!(e.swizzle, 3);
        assert_eq!(map(300, 72, 128, 64).box_bytes(Dtype::Bf16), 16384);
        let f = map(8, 4, 8, 4).encoding(Dtype::F32).unwrap();
        assert_eq!((f.data_type, f.global_strides), (7, [16]));
        assert_eq!(map(8, 8, 8, 8).encoding(Dtype::F16).unwrap().data_type, 6);
    }

    #[test]
    fn the_simulator_encoding_carries_the_driver_fields() {
        let w = map(300, 72, 128, 64)
            .sim_words(Dtype::Bf16, 0x7000_1000)
            .unwrap();
        assert_eq!(w[0], SIM_TENSOR_MAP_MAGIC);
        assert_eq!((w[1], w[2], w[3], w[4]), (0x7000_1000, 72, 300, 144));
        assert_eq!(w[5], 64 | 128 << 32);
        assert_eq!(w[6], 1 | 1 << 32);
        // BFLOAT16 (9), 128B swizzle (3), zeros out of bounds, no interleave, 2-byte elements.
        assert_eq!(w[7], 9 | 3 << 8 | 2 << 32);
        assert!(w[8..].iter().all(|&x| x == 0));
        assert!(map(64, 100, 64, 64).sim_words(Dtype::Bf16, 0).is_err());
    }

    #[test]
    fn a_view_must_fit_its_buffer() {
        assert!(map(300, 72, 128, 64).fits(300 * 72).is_ok());
        let why = map(300, 72, 128, 64).fits(300 * 72 - 1).unwrap_err().0;
        assert!(why.contains("300x72 view over a buffer of 21599"), "{why}");
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
