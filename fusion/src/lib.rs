//! Fused kernels: GEMM epilogues (linear + bias + activation) and the unroll-GEMM-permute convolution.
//!
//! This stage's rungs arrive with their own issues; until then the crate holds its place in
//! the ladder and contributes no kernels.

use kernel::Kernel;

/// Every kernel of this crate, in ladder order.
pub fn kernels() -> Vec<Box<dyn Kernel>> {
    Vec::new()
}
