//! Device buffers with guard zones. Each buffer has its own mapping: 64 MiB of inaccessible
//! pages on either side of its data pages, so an overrun faults in its own buffer's guard
//! and is reported against that buffer. A run places the data against the rear guard (any read or
//! write past the end faults) and then against the front guard (any access before the start
//! faults), so both overruns and underruns are caught. Against the rear guard the data start
//! is kept 16-byte aligned (float4 loads need it, as on cudaMalloc's memory); the few padding
//! bytes this leaves after the data hold a canary that is checked after each launch.

use crate::device::DeviceError;
use crate::plan::Dtype;

fn page_size() -> usize {
    // SAFETY: sysconf has no preconditions.
    let p = unsafe { libc::sysconf(libc::_SC_PAGESIZE) };
    if p > 0 { p as usize } else { 4096 }
}

/// Inaccessible bytes on each side of a buffer: far more than any plausible overrun, so that
/// one faults in its own buffer's guard, never silently in a neighbour (address space only;
/// nothing is allocated).
const GUARD: usize = 64 << 20;

/// Alignment of the data start, and so the most padding a buffer can have after its data.
const ALIGN: usize = 16;
/// What the padding holds: NaN as f32 and f16, so reading it also shows.
const CANARY: u8 = 0xFF;

/// Which guard the data touches.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Placement {
    AgainstEnd,
    AgainstStart,
}

pub struct GuardedBuf {
    pub name: String,
    pub dtype: Dtype,
    /// Data bytes.
    pub bytes: usize,
    map: *mut u8,
    map_len: usize,
    /// Bytes of each guard: [`GUARD`] rounded to whole pages.
    guard: usize,
    /// Start of the data in the current placement.
    data: *mut u8,
}

// SAFETY: the mapping is owned by this value; the pointers are only addresses.
unsafe impl Send for GuardedBuf {}
unsafe impl Sync for GuardedBuf {}

impl GuardedBuf {
    pub fn new(name: &str, dtype: Dtype, elements: usize) -> Result<Self, DeviceError> {
        let page = page_size();
        let bytes = elements * dtype.bytes();
        let body = bytes.div_ceil(page).max(1) * page;
        let guard = GUARD.next_multiple_of(page);
        let map_len = body + 2 * guard;
        // SAFETY: a fresh anonymous mapping; checked below.
        let map = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                map_len,
                libc::PROT_NONE,
                libc::MAP_PRIVATE | libc::MAP_ANONYMOUS | libc::MAP_NORESERVE,
                -1,
                0,
            )
        };
        if map == libc::MAP_FAILED {
            return Err(DeviceError::Sim(format!(
                "cannot map {bytes} bytes for buffer '{name}'"
            )));
        }
        let map = map.cast::<u8>();
        // SAFETY: the body pages lie inside the mapping just made.
        let rc = unsafe {
            libc::mprotect(
                map.add(guard).cast(),
                body,
                libc::PROT_READ | libc::PROT_WRITE,
            )
        };
        let mut buf = Self {
            name: name.to_string(),
            dtype,
            bytes,
            map,
            map_len,
            guard,
            data: map,
        };
        if rc != 0 {
            return Err(DeviceError::Sim(format!(
                "cannot unprotect buffer '{name}'"
            )));
        }
        buf.place(Placement::AgainstEnd);
        Ok(buf)
    }

    pub fn place(&mut self, p: Placement) {
        let body = self.map_len - 2 * self.guard;
        let offset = match p {
            Placement::AgainstStart => 0,
            Placement::AgainstEnd => body - self.bytes.next_multiple_of(ALIGN),
        };
        // SAFETY: offset <= body, inside the mapping.
        self.data = unsafe { self.map.add(self.guard + offset) };
        let pad = self.padding();
        pad.fill(CANARY);
    }

    /// The bytes between the data's end and the next 16-byte boundary (all of them
    /// inaccessible only in the `AgainstEnd` placement, where they end at the guard).
    fn padding(&mut self) -> &mut [u8] {
        let len = self.bytes.next_multiple_of(ALIGN) - self.bytes;
        // SAFETY: the padding lies inside the body pages in every placement.
        unsafe { std::slice::from_raw_parts_mut(self.data.add(self.bytes), len) }
    }

    /// Whether a kernel wrote into the padding after the data.
    pub fn padding_written(&mut self) -> bool {
        self.padding().iter().any(|&b| b != CANARY)
    }

    pub fn ptr(&self) -> *mut u8 {
        self.data
    }

    fn slice_mut(&mut self) -> &mut [u8] {
        // SAFETY: `data..data+bytes` is readable and writable in every placement.
        unsafe { std::slice::from_raw_parts_mut(self.data, self.bytes) }
    }

    pub fn write(&mut self, src: &[u8]) {
        let n = src.len().min(self.bytes);
        self.slice_mut()[..n].copy_from_slice(&src[..n]);
    }

    pub fn fill(&mut self, byte: u8) {
        self.slice_mut().fill(byte);
    }

    pub fn read(&self) -> Vec<u8> {
        // SAFETY: as in `slice_mut`.
        unsafe { std::slice::from_raw_parts(self.data, self.bytes) }.to_vec()
    }

    /// The byte offset of `addr` from the data start, when `addr` lies in this mapping.
    pub fn offset_of(&self, addr: u64) -> Option<i64> {
        let start = self.map as u64;
        (addr >= start && addr < start + self.map_len as u64)
            .then(|| addr as i64 - self.data as i64)
    }
}

impl Drop for GuardedBuf {
    fn drop(&mut self) {
        // SAFETY: unmaps exactly the mapping made in `new`.
        unsafe { libc::munmap(self.map.cast(), self.map_len) };
    }
}
