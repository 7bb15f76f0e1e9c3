//! The lab's own CUDA headers (`kernel/cuda/include/lab/*.h`), embedded in the binary. Kernel
//! files include them as `#include "lab/NAME.h"`; NVRTC receives them from memory and the
//! simulator writes them beside each translation unit, so both compile the same text.
//!
//! A header here has one body for NVRTC and, where it uses instructions only a GPU has (inline
//! PTX), an exact emulation for the simulator, chosen by `KERNEL_LAB_SIM` (defined by the
//! simulator's compiler flags, never by NVRTC).

/// One embedded header: the name `#include` spells, and its text.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Header {
    pub name: &'static str,
    pub text: &'static str,
}

macro_rules! lab_header {
    ($name:literal) => {
        Header {
            name: concat!("lab/", $name),
            text: include_str!(concat!("../../cuda/include/lab/", $name)),
        }
    };
}

/// Every lab header.
pub fn all() -> &'static [Header] {
    const ALL: &[Header] = &[
        lab_header!("index.h"),
        lab_header!("ptx.h"),
        lab_header!("hopper.h"),
    ];
    ALL
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn headers_are_named_as_included_and_self_contained() {
        for h in all() {
            assert!(
                h.name.starts_with("lab/") && h.name.ends_with(".h"),
                "{}",
                h.name
            );
            assert!(
                h.text.contains("#pragma once"),
                "{} lacks #pragma once",
                h.name
            );
        }
    }
}
