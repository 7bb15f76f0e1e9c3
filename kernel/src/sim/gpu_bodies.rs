//! The lab's headers with the bodies a GPU gets. `lab/ptx.h` and `lab/hopper.h` give each
//! instruction two bodies: the inline PTX NVRTC compiles and, under `KERNEL_LAB_SIM`, a call of
//! the simulator's emulation. The simulator compiles the second, so the PTX text itself
//! (operand order, immediates, scale and transpose flags, state spaces) is never run before a
//! GPU runs it. [`gpu_bodies`] pastes the headers into a source with their PTX bodies, which
//! the simulator then reads through its inline-PTX front end ([`super::inline_asm`]) into the
//! same emulation: a kernel that gives the same output both ways was given PTX that means what
//! the simulator checked.

use crate::cuda::headers;
use crate::plan::CudaSource;

/// The headers whose bodies differ between NVRTC and the simulator.
const TWO_BODIED: [&str; 2] = ["lab/ptx.h", "lab/hopper.h"];

/// `src` with each `#include` of a two-bodied lab header replaced by the header's text, its
/// GPU bodies selected; `None` when it includes none.
pub fn gpu_bodies(src: &CudaSource) -> Option<CudaSource> {
    let mut pasted = Vec::new();
    let code = paste(&src.code, &src.file, &mut pasted);
    (!pasted.is_empty()).then(|| CudaSource {
        code: code.into(),
        ..src.clone()
    })
}

/// `code` with its two-bodied includes pasted (each once, as `#pragma once` would).
fn paste(code: &str, file: &str, pasted: &mut Vec<&'static str>) -> String {
    let mut out = String::with_capacity(code.len());
    for (n, line) in code.lines().enumerate() {
        let included = line
            .trim_start()
            .strip_prefix('#')
            .map(str::trim_start)
            .and_then(|r| r.strip_prefix("include"))
            .map(|r| r.trim().trim_matches('"'));
        let header = included.and_then(|name| {
            TWO_BODIED
                .contains(&name)
                .then(|| headers::all().iter().find(|h| h.name == name))
                .flatten()
        });
        let Some(h) = header else {
            out.push_str(line);
            out.push('\n');
            continue;
        };
        if !pasted.contains(&h.name) {
            pasted.push(h.name);
            out.push_str(&format!("#line 1 \"{}\"\n", h.name));
            out.push_str(&paste(&gpu_text(h.text), h.name, pasted));
        }
        out.push_str(&format!("#line {} \"{file}\"\n", n + 2));
    }
    out
}

/// A header's text with its NVRTC branches taken: `#ifdef KERNEL_LAB_SIM` is false,
/// `#ifndef` true. Its own `CUtensorMap` stays out (the simulator's headers define theirs).
fn gpu_text(text: &str) -> String {
    let body: Vec<String> = text
        .lines()
        .map(|l| match l.trim() {
            "#ifdef KERNEL_LAB_SIM" => "#if 0".to_string(),
            "#ifndef KERNEL_LAB_SIM" => "#if 1".to_string(),
            _ => l.to_string(),
        })
        .collect();
    format!(
        "#ifndef __cuda_cuda_h__\n#define __cuda_cuda_h__\n#endif\n{}\n",
        body.join("\n")
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn includes_of_two_bodied_headers_become_their_gpu_text_once() {
        let src = CudaSource::embedded(
            "k.cu",
            "#include \"lab/hopper.h\"\n#include \"lab/index.h\"\n#include \"lab/hopper.h\"\nint x;\n",
        );
        let out = gpu_bodies(&src).unwrap();
        assert_eq!(out.code.matches("namespace hopper {").count(), 1);
        assert!(out.code.contains("#include \"lab/index.h\""));
        assert!(!out.code.contains("#ifdef KERNEL_LAB_SIM"));
        assert!(out.code.contains("mbarrier.try_wait.parity"));
        // Lines after an include keep their numbers.
        assert!(
            out.code.contains("#line 4 \"k.cu\"\nint x;"),
            "{}",
            out.code
        );
        let plain = CudaSource::embedded("k.cu", "#include \"lab/index.h\"\n");
        assert!(gpu_bodies(&plain).is_none());
    }
}
