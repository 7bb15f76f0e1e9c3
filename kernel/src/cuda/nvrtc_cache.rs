//! NVRTC's output for a program, kept on disk so that another process compiling the same
//! program (the same text, headers, options, architecture, NVRTC and address layout, see
//! [`super::address_layout`]) reads it instead of
//! spending up to seconds in NVRTC again: `harness explain` of one rung after another, the test
//! binaries one after another. What is kept is what NVRTC returned (CUBIN, log, PTX, lowered
//! names), so a change to how the lab reads a log never meets a stale reading. Beside them,
//! under names of their own, texts made from them ([`store_text`]: the disassembler's SASS).
//!
//! Kept only: compiles whose log has a ptxas report, of sources without include folders (a
//! user's headers could change under an unchanged key). Compiles made one at a time (the form
//! the lab reports, see [`super::nvrtc::compile`]) and those a run makes concurrently are kept
//! under different names: a concurrent compile may come out scheduled differently, and only
//! another run's concurrent compile reads it. The folder is
//! `$KERNEL_LAB_NVRTC_CACHE`, else `kernel-lab-nvrtc` in the temporary folder, kept under
//! [`LIMIT_BYTES`] (the outputs used longest ago go first, [`crate::disk_cache`]); deleting it
//! costs only time.

use crate::disk_cache;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

/// What NVRTC made of a program.
#[derive(Debug, PartialEq)]
pub struct Output {
    pub cubin: Vec<u8>,
    pub log: String,
    pub ptx: String,
    /// Each C++ entry's name (as the plan launches it) and its lowered symbol.
    pub symbols: Vec<(String, String)>,
}

const MAGIC: &[u8] = b"kernel-lab nvrtc output 1\n";

/// The most the folder keeps: the whole test suite leaves about 80 MB.
pub const LIMIT_BYTES: u64 = 512 << 20;

/// The name of a program's file: a hash of everything NVRTC's output depends on. `None`
/// where the program reads files the key cannot see (`include_dirs` not empty).
pub fn key<P: AsRef<[u8]>>(parts: &[P], include_dirs: &[PathBuf]) -> Option<String> {
    if !include_dirs.is_empty() {
        return None;
    }
    // Two FNV-1a hashes from different seeds: 128 bits, so that distinct programs never meet.
    let hash = |seed: u64| {
        let mut h = seed;
        for p in parts {
            for &b in p.as_ref().iter().chain([0xffu8].iter()) {
                h ^= u64::from(b);
                h = h.wrapping_mul(0x0100_0000_01b3);
            }
        }
        h
    };
    Some(format!(
        "{:016x}{:016x}",
        hash(0xcbf2_9ce4_8422_2325),
        hash(0x6c62_272e_07bb_0142)
    ))
}

/// The environment variable that names the folder of kept outputs.
pub const DIR_VARIABLE: &str = "KERNEL_LAB_NVRTC_CACHE";

/// Where kept outputs are.
pub fn dir() -> PathBuf {
    crate::disk_cache::folder_from_env(DIR_VARIABLE)
        .unwrap_or_else(|| std::env::temp_dir().join("kernel-lab-nvrtc"))
}

/// The kept output under `key`, if there is a whole one.
pub fn load(dir: &Path, key: &str) -> Option<Output> {
    let path = dir.join(key);
    let out = decode(&std::fs::read(&path).ok()?)?;
    disk_cache::touch(&path);
    Some(out)
}

/// Keeps `out` under `key`; a failure to write only means the next process compiles again.
pub fn store(dir: &Path, key: &str, out: &Output) {
    store_bytes(dir, key, &encode(out));
}

/// What a tool made of a kept output (the disassembler's text of a CUBIN), kept beside it
/// under `name` (see [`key`]) with the same limit.
pub fn load_text(dir: &Path, name: &str) -> Option<String> {
    let path = dir.join(name);
    let bytes = std::fs::read(&path).ok()?;
    let text = String::from_utf8(bytes.strip_prefix(TEXT_MAGIC)?.to_vec()).ok()?;
    disk_cache::touch(&path);
    Some(text)
}

/// Keeps `text` under `name`, as [`store`] keeps NVRTC's output.
pub fn store_text(dir: &Path, name: &str, text: &str) {
    store_bytes(dir, name, &[TEXT_MAGIC, text.as_bytes()].concat());
}

const TEXT_MAGIC: &[u8] = b"kernel-lab kept text 1\n";

fn store_bytes(dir: &Path, name: &str, bytes: &[u8]) {
    static NEXT: AtomicU64 = AtomicU64::new(0);
    if std::fs::create_dir_all(dir).is_err() {
        return;
    }
    // Written beside and renamed: a reader sees the whole file or none.
    let tmp = dir.join(format!(
        ".{name}.{}-{}",
        std::process::id(),
        NEXT.fetch_add(1, Ordering::Relaxed)
    ));
    if std::fs::write(&tmp, bytes).is_err() || std::fs::rename(&tmp, dir.join(name)).is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
    disk_cache::trim(dir, LIMIT_BYTES);
}

pub(super) fn encode(out: &Output) -> Vec<u8> {
    let symbols: String = out
        .symbols
        .iter()
        .map(|(name, symbol)| format!("{name}\t{symbol}\n"))
        .collect();
    let mut bytes = MAGIC.to_vec();
    for field in [
        &out.cubin[..],
        out.log.as_bytes(),
        out.ptx.as_bytes(),
        symbols.as_bytes(),
    ] {
        bytes.extend((field.len() as u64).to_le_bytes());
        bytes.extend(field);
    }
    bytes
}

pub(super) fn decode(bytes: &[u8]) -> Option<Output> {
    let mut rest = bytes.strip_prefix(MAGIC)?;
    let mut field = || -> Option<&[u8]> {
        let (len, tail) = rest.split_first_chunk::<8>()?;
        let len = usize::try_from(u64::from_le_bytes(*len)).ok()?;
        let (field, tail) = (tail.get(..len)?, tail.get(len..)?);
        rest = tail;
        Some(field)
    };
    let cubin = field()?.to_vec();
    let log = String::from_utf8(field()?.to_vec()).ok()?;
    let ptx = String::from_utf8(field()?.to_vec()).ok()?;
    let symbols = std::str::from_utf8(field()?).ok()?;
    let symbols = symbols
        .lines()
        .map(|l| {
            l.split_once('\t')
                .map(|(n, s)| (n.to_string(), s.to_string()))
        })
        .collect::<Option<Vec<_>>>()?;
    // Nothing may follow the last field: a longer file is not one this code wrote.
    rest.is_empty().then_some(Output {
        cubin,
        log,
        ptx,
        symbols,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn output() -> Output {
        Output {
            cubin: vec![0x7f, b'E', b'L', b'F', 0, 1, 2],
            log: "ptxas info    : Used 32 registers".into(),
            ptx: ".visible .entry k(\n)".into(),
            symbols: vec![("sgemm_128".into(), "_Z5sgemmILi128EEvPf".into())],
        }
    }

    #[test]
    fn an_output_reads_back_whole_and_a_damaged_file_reads_as_none() {
        let bytes = encode(&output());
        assert_eq!(decode(&bytes), Some(output()));
        // Cut short anywhere, or with bytes after the end, it is no output.
        for cut in [0, MAGIC.len(), MAGIC.len() + 3, bytes.len() - 1] {
            assert_eq!(decode(&bytes[..cut]), None, "cut at {cut}");
        }
        let mut longer = bytes.clone();
        longer.push(0);
        assert_eq!(decode(&longer), None);
    }

    #[test]
    fn the_key_changes_with_every_part_and_include_folders_keep_nothing() {
        let parts = [
            "13.0",
            "sm_90",
            "--std=c++20",
            "k.cu",
            "__global__ void k() {}",
        ];
        let base = key(&parts, &[]).unwrap();
        assert_eq!(base.len(), 32);
        for i in 0..parts.len() {
            let mut changed = parts;
            let edited = format!("{} ", parts[i]);
            changed[i] = &edited;
            assert_ne!(key(&changed, &[]).unwrap(), base, "part {i}");
        }
        // A part's end is marked: moving a byte from one part to the next is another program.
        assert_ne!(
            key(&["ab", "c"], &[]).unwrap(),
            key(&["a", "bc"], &[]).unwrap()
        );
        assert_eq!(key(&parts, &[PathBuf::from("/inc")]), None);
    }

    #[test]
    fn a_stored_output_is_found_by_its_key_only() {
        let dir = std::env::temp_dir().join(format!("lab-nvrtc-cache-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        // Names as `key` gives them, which the size limit counts.
        let (k1, k2) = ("1".repeat(32), "2".repeat(32));
        store(&dir, &k1, &output());
        assert_eq!(load(&dir, &k1), Some(output()));
        assert_eq!(load(&dir, &k2), None);
        // No temporary file is left beside it.
        assert_eq!(std::fs::read_dir(&dir).unwrap().count(), 1);
        assert_eq!(
            disk_cache::contents(&dir),
            (1, encode(&output()).len() as u64)
        );
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
