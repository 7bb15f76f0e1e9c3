//! Everything CUDA: finding the libraries, compiling with NVRTC, occupancy, and the device.

pub mod address_layout;
pub mod device;
pub mod discovery;
pub mod headers;
pub mod nvrtc;
pub mod nvrtc_cache;
pub mod nvrtc_child;
pub mod occupancy;
pub mod pinned;
pub mod ptx_entry;

pub use device::CudaDevice;
