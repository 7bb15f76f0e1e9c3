//! A user's file and the local headers it includes (`#include "util.cuh"`), each prepared as
//! the file itself is: host code blanked, lines kept, and for the simulator `extern
//! __shared__` rewritten. The prepared copies go to a folder of their own, named by their
//! contents, which comes first on the include path; each local `#include` is pointed at its
//! copy, and a `#line` directive in each copy keeps compile errors on the user's file and line.

use super::scan::{self, KernelDecl};
use super::source::{self, blank_host_code};
use std::path::{Path, PathBuf};

/// The prepared copies of a user's file and its local headers.
#[derive(Clone, Debug)]
pub struct LocalFiles {
    /// The folder holding the copies.
    pub dir: PathBuf,
    /// The folder of the forwarders that the files' `#include_next`s reach past the user's
    /// own folders through; on the include path after them, before the lab's stand-ins.
    pub next_dir: Option<PathBuf>,
    /// The copy of the user's file, as an `#include` names it.
    pub main: String,
    /// The `__global__` functions of the file and its local headers.
    pub kernels: Vec<KernelDecl>,
    /// The `__constant__` variables they declare; `None` when a macro declares some.
    pub constants: Option<Vec<String>>,
    /// Each copy's name and the path of the file it was made from, as messages show it.
    pub names: Vec<(String, String)>,
    /// Why the simulator cannot run these files: inline PTX its front end cannot read (an
    /// `asm` at file scope, operands it cannot parse), named with its file and line. (A GPU
    /// runs them.) An instruction it reads but does not run fails only a launch reaching it.
    pub sim_refusal: Option<String>,
    /// Whether the files use instructions of Hopper alone (wgmma, setmaxnreg, TMA, mbarrier
    /// transaction counts, clusters' barriers), which NVRTC compiles for `sm_90a` only.
    pub hopper: bool,
    /// Whether each of those stands behind a `__CUDA_ARCH__` conditional, so that other
    /// GPUs compile the files too.
    pub hopper_guarded: bool,
    /// A digest of the files as written (FNV-1a of each file's text, in the order they were
    /// read): a run records it, so that its report knows whether the files changed since.
    pub digest: String,
    /// The `#define`s outside every conditional but an include guard, which replace a `-D`
    /// of the same name ([`source::unconditional_defines`]): each name, with where it is
    /// (`file.cu:12`) and the directive.
    pub fixed_macros: Vec<(String, String, String)>,
    /// Each comparison of `__CUDA_ARCH__` with a number below 100 ([`arch_slips`]), with
    /// where it is: ``k.cu:4: `__CUDA_ARCH__ >= 90` ``.
    pub arch_slips: Vec<String>,
}

/// The subfolder of the copies' folder that holds the forwarders of `#include_next`
/// ([`LocalFiles::next_dir`]), and the folder name under it that an `#include` names them by.
const NEXT_DIR: &str = "next";
const NEXT_PREFIX: &str = "kernel_lab_next";

/// What only the sm_90 family runs, as inline PTX spells it and as libcu++ names it
/// (`cuda::device::barrier_arrive_tx`, `cp_async_bulk_tensor_2d_global_to_shared`).
const HOPPER_ONLY: &[&str] = &[
    "wgmma.",
    "setmaxnreg.",
    "cp.async.bulk",
    "mbarrier.try_wait",
    "expect_tx",
    "barrier.cluster",
    "mapa.",
    "fence.proxy.async",
    "stmatrix.",
    "elect.sync",
    "cp_async_bulk",
    "barrier_arrive_tx",
    // The cluster's special registers (%cluster_ctarank, %clusterid, ...) and their API.
    "%cluster",
    "this_cluster(",
    "__cluster_dims__",
];

/// Each comparison of `__CUDA_ARCH__` with a number below 100 in a comment-free `code`, with
/// its line (from 1): `__CUDA_ARCH__ >= 90` where `900` was meant. The macro's values have
/// three or four digits (800 on sm_80, 900 on sm_90), so such a test holds on every GPU alike.
fn arch_slips(code: &str) -> Vec<(usize, String)> {
    let mut out = Vec::new();
    for (at, line) in code.lines().enumerate() {
        for (start, _) in line.match_indices("__CUDA_ARCH__") {
            let rest = &line[start + "__CUDA_ARCH__".len()..];
            let after_op = rest.trim_start();
            let Some(op) = [">=", "<=", "==", "!=", ">", "<"]
                .into_iter()
                .find(|op| after_op.starts_with(op))
            else {
                continue;
            };
            let number = after_op[op.len()..].trim_start();
            let digits = number.bytes().take_while(u8::is_ascii_digit).count();
            let next = number.as_bytes().get(digits);
            if digits == 0 || next.is_some_and(|b| b.is_ascii_alphanumeric() || *b == b'_') {
                continue;
            }
            if number[..digits].parse::<u32>().is_ok_and(|n| n < 100) {
                out.push((at + 1, format!("__CUDA_ARCH__ {op} {}", &number[..digits])));
            }
        }
    }
    out
}

/// For each line of a comment-free `code` that uses an instruction of Hopper alone, whether
/// it stands inside a conditional on the architecture (`#if __CUDA_ARCH__ >= 900`, any branch
/// of it, or `__CUDA_ARCH_FEAT_SM90_ALL`), which compiles it for that GPU alone. A macro's
/// instruction is used where the macro is: its `#define` counts for nothing, a line naming it
/// for the instruction.
fn hopper_lines(code: &str) -> Vec<bool> {
    let has = |text: &str| HOPPER_ONLY.iter().any(|p| text.contains(p));
    // The macros whose expansion holds such an instruction, through other macros too.
    let defines: Vec<String> = source::defines(code).collect();
    let mut macros: Vec<&str> = Vec::new();
    loop {
        let before = macros.len();
        for d in &defines {
            let d = d.trim_start();
            let end = d
                .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
                .unwrap_or(d.len());
            let (name, body) = d.split_at(end);
            if name.is_empty() {
                continue;
            }
            if !macros.contains(&name)
                && (has(body) || macros.iter().any(|m| source::has_word(body, m)))
            {
                macros.push(name);
            }
        }
        if macros.len() == before {
            break;
        }
    }
    // One entry per open conditional: whether it, or an #elif of it, tests the architecture.
    let mut open: Vec<bool> = Vec::new();
    let mut found = Vec::new();
    // Lines continued with a backslash are read as one.
    let mut lines = code.lines();
    while let Some(first) = lines.next() {
        let mut line = first.to_string();
        while line.trim_end().ends_with('\\') {
            line = format!(
                "{} {}",
                line.trim_end().trim_end_matches('\\'),
                lines.next().unwrap_or("")
            );
        }
        let directive = line.trim_start().strip_prefix('#').map(str::trim_start);
        let word = directive.map(|d| d.split(|c: char| !c.is_ascii_alphabetic()).next());
        let on_arch = line.contains("__CUDA_ARCH");
        match word.flatten() {
            Some("if" | "ifdef" | "ifndef") => open.push(on_arch),
            Some("elif") => {
                if let Some(top) = open.last_mut() {
                    *top |= on_arch;
                }
            }
            Some("endif") => {
                open.pop();
            }
            Some(_) => {}
            None if has(&line) || macros.iter().any(|m| source::has_word(&line, m)) => {
                found.push(open.iter().any(|&a| a));
            }
            None => {}
        }
    }
    found
}

/// A file's text with Windows line ends made plain: a backslash before `\r\n` continues a
/// line for a C preprocessor, and the lab's readers of macros and `asm` statements see it so.
fn read_source(path: &Path) -> std::io::Result<String> {
    Ok(std::fs::read_to_string(path)?.replace("\r\n", "\n"))
}

/// Why the files could not be prepared.
#[derive(Debug)]
pub struct ReadError {
    pub file: String,
    pub error: String,
}

struct Copy {
    name: String,
    display: String,
    text: String,
    /// The file as written.
    original: String,
}

/// `"a\"b"` for `#line` and `#include`.
fn quoted(path: &str) -> String {
    format!("\"{}\"", path.replace('\\', "\\\\").replace('"', "\\\""))
}

/// The name of an `#include_next <name>` (or `"name"`) line, and the byte offset of its `#`.
fn include_next(line: &str) -> Option<(String, usize)> {
    let hash = line.len() - line.trim_start().len();
    let rest = line[hash..]
        .strip_prefix('#')?
        .trim_start()
        .strip_prefix("include_next")?
        .trim_start();
    let close = match rest.chars().next()? {
        '"' => '"',
        '<' => '>',
        _ => return None,
    };
    let name = &rest[1..1 + rest[1..].find(close)?];
    Some((name.to_string(), hash))
}

/// The name of an `#include "name"` (or `<name>`) line, with the byte range of the name
/// and whether it is quoted.
fn local_include(line: &str) -> Option<(usize, usize, bool)> {
    let t = line.trim_start();
    let rest = t.strip_prefix('#')?.trim_start().strip_prefix("include")?;
    let name = rest.trim_start();
    let (open_c, close_c) = match name.chars().next()? {
        '"' => ('"', '"'),
        '<' => ('<', '>'),
        _ => return None,
    };
    let open = line.len() - name.len();
    debug_assert!(line[open..].starts_with(open_c));
    let close = open + 1 + line[open + 1..].find(close_c)?;
    Some((open + 1, close, open_c == '"'))
}

struct Reader {
    main_dir: PathBuf,
    /// Folders a project's headers lie in (`include=`, nvcc's `-I`), searched after the
    /// including file's folder and the main file's.
    include_dirs: Vec<PathBuf>,
    copies: Vec<Copy>,
    /// Canonical paths already copied, with the copy's name.
    seen: Vec<(PathBuf, String)>,
    kernels: Vec<KernelDecl>,
    constants: Option<Vec<String>>,
    sim_refusal: Option<String>,
    /// Whether the simulator's copies give each block of a cluster its own static
    /// `__shared__` variables (kernel::sim's `per_block_shared`): the files run in clusters.
    per_block: bool,
    /// Whether the files declare static `__shared__` variables, and whether a kernel of theirs
    /// declares `__cluster_dims__`.
    static_shared: bool,
    cluster_dims: bool,
    hopper: bool,
    /// Whether an instruction of Hopper alone stands outside every `__CUDA_ARCH__` conditional.
    hopper_unguarded: bool,
    arch_slips: Vec<String>,
    /// The macros of these files that blanking must know ([`Reader::macros`]).
    macros: source::Macros,
    /// The headers an `#include_next` of these files reaches past the user's folders: the
    /// lab's stand-in or the system's ([`NEXT_DIR`]).
    next_headers: Vec<String>,
}

impl Reader {
    /// The local file an `#include` in a file of `dir` names: a quoted name from that folder,
    /// the main file's or an include= folder; one in angle brackets from an include= folder
    /// only (the others are the system's and the toolkit's).
    fn resolve(&self, dir: &Path, wanted: &str, quoted: bool) -> Option<PathBuf> {
        [dir.join(wanted), self.main_dir.join(wanted)]
            .into_iter()
            .filter(|_| quoted)
            .chain(self.include_dirs.iter().map(|d| d.join(wanted)))
            .find(|p| p.is_file())
    }

    /// The macros of `path` and the local files it includes that mark device code
    /// (`#define DEVICE_INLINE __device__ inline`) or whose call is host code, and their host
    /// member functions: a header may define one that the file uses, so all are read before
    /// any is prepared. A file that does not read is left to [`Reader::add`] to report.
    fn macros(&self, path: &Path) -> source::Macros {
        let mut seen: Vec<PathBuf> = Vec::new();
        let mut todo = vec![path.to_path_buf()];
        let mut defines = Vec::new();
        let mut codes = Vec::new();
        while let Some(path) = todo.pop() {
            let key = std::fs::canonicalize(&path).unwrap_or_else(|_| path.clone());
            if seen.contains(&key) {
                continue;
            }
            seen.push(key);
            let Ok(code) = read_source(&path) else {
                continue;
            };
            let code = kernel::sim::compile::strip_comments(&code);
            let dir = path.parent().unwrap_or(Path::new("."));
            for line in code.lines() {
                if let Some((from, to, quoted)) = local_include(line) {
                    todo.extend(self.resolve(dir, &line[from..to], quoted));
                }
            }
            defines.extend(source::defines(&code));
            codes.push(code);
        }
        source::Macros::of(&defines, &codes)
    }

    /// What an `#include_next` of `wanted` in `path` (of folder `dir`) becomes in its copy.
    /// The copy lies in the copies' folder, and the original's folder stays on the path, so
    /// the directive as written would find the original again: it names the header of a
    /// later `include=` folder (prepared), or else a forwarder in [`NEXT_DIR`], which comes
    /// after the user's folders on the path and whose own `#include_next` reaches the lab's
    /// stand-in or the system's header.
    fn include_next(&mut self, path: &Path, dir: &Path, wanted: &str) -> Result<String, ReadError> {
        let canonical = |p: &Path| std::fs::canonicalize(p).unwrap_or_else(|_| p.to_path_buf());
        let here = canonical(dir);
        let after = self
            .include_dirs
            .iter()
            .position(|d| canonical(d) == here)
            .map_or(0, |k| k + 1);
        let me = canonical(path);
        let later = self.include_dirs[after..]
            .iter()
            .map(|d| d.join(wanted))
            .find(|p| p.is_file() && canonical(p) != me);
        Ok(match later {
            Some(found) => {
                let copy = self.add(&found, found.display().to_string())?;
                format!("#include \"{copy}\"")
            }
            None => {
                if !self.next_headers.iter().any(|h| h == wanted) {
                    self.next_headers.push(wanted.to_string());
                }
                format!("#include <{NEXT_PREFIX}/{wanted}>")
            }
        })
    }

    /// Prepares `path` (shown as `display`) and what it includes; returns its copy's name.
    fn add(&mut self, path: &Path, display: String) -> Result<String, ReadError> {
        let key = std::fs::canonicalize(path).unwrap_or_else(|_| path.to_path_buf());
        if let Some((_, name)) = self.seen.iter().find(|(p, _)| *p == key) {
            return Ok(name.clone());
        }
        let code = read_source(path).map_err(|e| ReadError {
            file: display.clone(),
            error: e.to_string(),
        })?;
        let base: String = path
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default()
            .chars()
            .map(|c| {
                if c.is_ascii_alphanumeric() || c == '.' {
                    c
                } else {
                    '_'
                }
            })
            .collect();
        let name = format!("kl_{}_{base}", self.copies.len());
        self.seen.push((key, name.clone()));
        let slot = self.copies.len();
        self.copies.push(Copy {
            name: name.clone(),
            display: display.clone(),
            text: String::new(),
            original: code.clone(),
        });
        for decl in scan::kernels(&code, &display) {
            scan::add(&mut self.kernels, decl);
        }
        self.constants = match (self.constants.take(), scan::constants(&code)) {
            (Some(mut all), Some(these)) => {
                all.extend(these);
                Some(all)
            }
            _ => None,
        };
        let dir = path.parent().unwrap_or(Path::new("."));
        let mut lines = Vec::new();
        let code_for_device =
            source::constant_abs_in_static_asserts(&source::register_keyword_blanked(
                &source::lambda_annotations_blanked(&blank_host_code(&code, &self.macros)),
            ));
        for line in code_for_device.split('\n') {
            let mut line = line.to_string();
            if let Some((wanted, hash)) = include_next(&line) {
                line.replace_range(hash.., &self.include_next(path, dir, &wanted)?);
            }
            if let Some((from, to, quoted)) = local_include(&line) {
                let wanted = line[from..to].to_string();
                if let Some(found) = self.resolve(dir, &wanted, quoted) {
                    // Beside the including file: named from it, as its `#include` reads.
                    let shown = match Path::new(&display).parent() {
                        Some(d) if found == dir.join(&wanted) => d.join(&wanted),
                        _ => found.clone(),
                    };
                    let copy = self.add(&found, shown.display().to_string())?;
                    line.replace_range(from - 1..to + 1, &format!("\"{copy}\""));
                }
            }
            lines.push(line);
        }
        let nvrtc = lines.join("\n");
        // The simulator's `__shared__` declarations: `alignas` where `static thread_local`
        // accepts it, a redzone after each variable, `extern` arrays.
        let sim = if nvrtc.contains("__shared__") {
            let rewrite =
                |per_block| kernel::sim::compile::rewrite_shared(&nvrtc, &display, per_block);
            let plain = || {
                rewrite(false).map_err(|error| ReadError {
                    file: display.clone(),
                    error,
                })
            };
            match self.per_block {
                // A declaration the per-block rewrite cannot read costs the simulator's rows,
                // not the GPU's.
                true => rewrite(true).or_else(|why| {
                    self.sim_refusal.get_or_insert(why);
                    plain()
                })?,
                false => plain()?,
            }
        } else {
            nvrtc.clone()
        };
        // g++ needs the `template` keyword that nvcc lets a call leave out.
        let mut sim = super::template_keyword::insert(&sim);
        // Inline PTX: the simulator's copy calls the emulation of each `asm` statement (the
        // same as lab/ptx.h's); one it cannot read makes the file GPU-only, said on its row.
        let mut sim_head = String::new();
        let stripped = kernel::sim::compile::strip_comments(&sim);
        for guarded in hopper_lines(&stripped) {
            self.hopper = true;
            self.hopper_unguarded |= !guarded;
        }
        for (line, test) in arch_slips(&stripped) {
            self.arch_slips.push(format!("{display}:{line}: `{test}`"));
        }
        match kernel::sim::inline_asm::rewrite(&stripped, &display) {
            Ok(Some(rewritten)) => {
                sim = rewritten;
                sim_head = "#include \"sim_asm.h\"\n".into();
            }
            Ok(None) => {}
            Err(refusal) => {
                self.sim_refusal.get_or_insert(refusal.to_string());
            }
        }
        self.static_shared |= kernel::sim::compile::has_static_shared(&stripped);
        self.cluster_dims |= stripped.contains("__cluster_dims__");
        let line = format!("#line 1 {}\n", quoted(&display));
        self.copies[slot].text = if sim == nvrtc {
            format!("{line}{nvrtc}\n")
        } else {
            format!("#ifdef KERNEL_LAB_SIM\n{sim_head}{line}{sim}\n#else\n{line}{nvrtc}\n#endif\n")
        };
        Ok(name)
    }
}

impl LocalFiles {
    /// The folders a compile searches, in order: the copies', the user's file's own, the
    /// user's `include` folders, the forwarders of `#include_next` and the lab's stand-ins.
    pub fn include_dirs(
        &self,
        file: &Path,
        includes: &[PathBuf],
        standins: PathBuf,
    ) -> Vec<PathBuf> {
        [
            vec![self.dir.clone(), super::folder_of(file)],
            includes.to_vec(),
            self.next_dir.iter().cloned().collect(),
            vec![standins],
        ]
        .concat()
    }

    /// Prepares `file` (and its local includes, found in its folder and `include_dirs`) and
    /// writes the copies; `clusters`: the lab launches its kernels in clusters (`cluster=`),
    /// which a kernel's own `__cluster_dims__` does too.
    pub fn read(file: &Path, include_dirs: &[PathBuf], clusters: bool) -> Result<Self, ReadError> {
        let main_dir = file
            .parent()
            .filter(|d| !d.as_os_str().is_empty())
            .unwrap_or(Path::new("."))
            .to_path_buf();
        let mut reader = Reader {
            main_dir,
            include_dirs: include_dirs.to_vec(),
            copies: Vec::new(),
            seen: Vec::new(),
            kernels: Vec::new(),
            constants: Some(Vec::new()),
            sim_refusal: None,
            per_block: clusters,
            static_shared: false,
            cluster_dims: false,
            hopper: false,
            hopper_unguarded: false,
            arch_slips: Vec::new(),
            macros: source::Macros::default(),
            next_headers: Vec::new(),
        };
        reader.macros = reader.macros(file);
        let main = reader.add(file, file.display().to_string())?;
        // Known once every file is read: a kernel of an included file may run in clusters.
        if !clusters && reader.cluster_dims && reader.static_shared {
            return Self::read(file, include_dirs, true);
        }
        let fnv = |texts: &mut dyn Iterator<Item = &str>| {
            let mut h = 0xcbf2_9ce4_8422_2325u64;
            for t in texts {
                for &b in t.as_bytes() {
                    h ^= u64::from(b);
                    h = h.wrapping_mul(0x0100_0000_01b3);
                }
            }
            h
        };
        let h = fnv(&mut reader.copies.iter().flat_map(|c| [&*c.name, &*c.text]));
        let digest = format!(
            "{:016x}",
            fnv(&mut reader.copies.iter().flat_map(|c| ["\0", &*c.original]))
        );
        let dir = std::env::temp_dir().join(format!("kernel-lab-user-src-{h:016x}"));
        let fail = |path: &Path, e: String| ReadError {
            file: path.display().to_string(),
            error: format!("writing its prepared copy: {e}"),
        };
        std::fs::create_dir_all(&dir).map_err(|e| fail(&dir, e.to_string()))?;
        for c in &reader.copies {
            let path = dir.join(&c.name);
            if std::fs::read_to_string(&path).is_ok_and(|t| t == c.text) {
                continue;
            }
            // Another process or thread may be reading (or writing) the same folder.
            crate::output::write_atomic(&path, &c.text)
                .map_err(|e| fail(&path, format!("{e:#}")))?;
        }
        for wanted in &reader.next_headers {
            let path = dir.join(NEXT_DIR).join(NEXT_PREFIX).join(wanted);
            let text = format!("#include_next <{wanted}>\n");
            if std::fs::read_to_string(&path).is_ok_and(|t| t == text) {
                continue;
            }
            crate::output::write_atomic(&path, &text).map_err(|e| fail(&path, format!("{e:#}")))?;
        }
        Ok(Self {
            next_dir: (!reader.next_headers.is_empty()).then(|| dir.join(NEXT_DIR)),
            dir,
            main,
            kernels: reader.kernels,
            constants: reader.constants,
            sim_refusal: reader.sim_refusal,
            hopper: reader.hopper,
            hopper_guarded: reader.hopper && !reader.hopper_unguarded,
            arch_slips: reader.arch_slips,
            digest,
            fixed_macros: reader
                .copies
                .iter()
                .flat_map(|c| {
                    source::unconditional_defines(&c.original)
                        .into_iter()
                        .map(|(name, line, text)| (name, format!("{}:{line}", c.display), text))
                })
                .collect(),
            names: reader
                .copies
                .into_iter()
                .map(|c| (c.name, c.display))
                .collect(),
        })
    }

    /// `GemmParams (params.cu:3): { const float *A; int M; }`: where the files define
    /// struct `name`, and its body.
    pub fn struct_definition(&self, name: &str) -> Option<String> {
        self.names.iter().find_map(|(copy, display)| {
            let code = std::fs::read_to_string(self.dir.join(copy)).ok()?;
            let (line, body) = super::scan::struct_body(&code, name)?;
            Some(format!("{name} ({display}:{line}): {body}"))
        })
    }

    /// The template libraries the files include (`#include <cub/cub.cuh>`: "CUB"), by the
    /// names [`super::compile_hints`] gives them.
    pub fn template_libraries(&self) -> Vec<&'static str> {
        let mut out = Vec::new();
        for (copy, _) in &self.names {
            let Ok(text) = std::fs::read_to_string(self.dir.join(copy)) else {
                continue;
            };
            for line in text.lines() {
                let Some(rest) = line.trim_start().strip_prefix('#') else {
                    continue;
                };
                let Some(header) = rest.trim_start().strip_prefix("include") else {
                    continue;
                };
                let header = header.trim_start().trim_start_matches(['<', '"']);
                if let Some((_, name)) = super::TEMPLATE_LIBRARIES
                    .iter()
                    .find(|(dir, _)| header.starts_with(dir))
                    .filter(|(_, name)| !out.contains(name))
                {
                    out.push(*name);
                }
            }
        }
        out
    }

    /// A compiler's message with the copies' names turned back into the user's paths, and the
    /// lab's stand-ins named as `#include` spells them.
    pub fn translate(&self, log: &str) -> String {
        let mut out = log.replace(&format!("{}/", self.dir.display()), "");
        for (name, display) in &self.names {
            out = out.replace(name, display);
        }
        if let Ok(dir) = super::source::standin_dir() {
            out = out.replace(&format!("{}/", dir.display()), "");
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A comparison of `__CUDA_ARCH__` with a two-digit number is found with its line; one
    /// with a real value, another macro or a longer number is not.
    #[test]
    fn architecture_tests_against_two_digit_numbers_are_found() {
        let code = "#if __CUDA_ARCH__ >= 90\n#endif\n#if __CUDA_ARCH__>=900 || __CUDA_ARCH__ < 80\n\
                    #if __CUDA_ARCH__ >= SM90\n#if __CUDA_ARCH__ == 90a\n#if (__CUDA_ARCH__ >= 1000)\n";
        assert_eq!(
            arch_slips(code),
            [
                (1, "__CUDA_ARCH__ >= 90".to_string()),
                (3, "__CUDA_ARCH__ < 80".to_string())
            ]
        );
    }

    /// Hopper's instructions behind an architecture conditional leave the file for other GPUs;
    /// a macro counts where it is used, not where it is defined.
    #[test]
    fn hopper_instructions_are_placed_where_they_are_used() {
        let fence = "asm volatile(\"wgmma.fence.sync.aligned;\");";
        let plain = format!("__device__ void f() {{ {fence} }}\n");
        assert_eq!(hopper_lines(&plain), [false]);
        let guarded = format!(
            "#if defined(__CUDA_ARCH__) && \\\n    (__CUDA_ARCH__ >= 900)\n{plain}#else\n\
             __device__ void f() {{}}\n#endif\n"
        );
        assert_eq!(hopper_lines(&guarded), [true]);
        let other = format!("#ifdef USE_TMA\n{plain}#endif\n");
        assert_eq!(hopper_lines(&other), [false]);
        let unused = format!("#define FENCE() \\\n  {fence}\n#define FENCE2() FENCE()\n");
        assert!(hopper_lines(&unused).is_empty());
        let used = format!(
            "{unused}#if __CUDA_ARCH__ >= 900\n__device__ void g() {{ FENCE2(); }}\n#endif\n"
        );
        assert_eq!(hopper_lines(&used), [true]);
        let bare = format!("{unused}__device__ void g() {{ FENCE2(); }}\n");
        assert_eq!(hopper_lines(&bare), [false]);
        // A cluster's special registers and launch attribute need sm_90 (ptxas and NVRTC
        // refuse them for sm_80).
        let rank = "__device__ unsigned r() { unsigned x; asm(\"mov.u32 %0, %%cluster_ctarank;\" : \"=r\"(x)); return x; }\n";
        assert_eq!(hopper_lines(rank), [false]);
        let dims = "__global__ void __cluster_dims__(2, 1, 1) k(float *y) {}\n";
        assert_eq!(hopper_lines(dims), [false]);
    }

    #[test]
    fn threads_preparing_the_same_file_at_once_all_get_their_copy() {
        let dir = std::env::temp_dir().join(format!("lab-files-race-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        // A new text each round makes a new folder of copies, which every thread finds empty.
        for round in 0..20 {
            let file = dir.join(format!("k{round}.cu"));
            std::fs::write(
                &file,
                format!("__global__ void k(float *x) {{ x[0] = {round}.0f; }}\n"),
            )
            .unwrap();
            let copies: Vec<_> = std::thread::scope(|s| {
                let handles: Vec<_> = (0..8)
                    .map(|_| s.spawn(|| LocalFiles::read(&file, &[], false)))
                    .collect();
                handles.into_iter().map(|h| h.join().unwrap()).collect()
            });
            let copies: Vec<LocalFiles> = copies
                .into_iter()
                .map(|c| c.unwrap_or_else(|e| panic!("round {round}: {e:?}")))
                .collect();
            for copy in &copies {
                let text = std::fs::read_to_string(copy.dir.join(&copy.main)).unwrap();
                assert!(text.contains(&format!("x[0] = {round}.0f")), "{text}");
            }
            let _ = std::fs::remove_dir_all(&copies[0].dir);
        }
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn a_kernel_a_header_declares_and_the_file_defines_is_one_kernel() {
        let dir = std::env::temp_dir().join(format!("lab-files-proto-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(
            dir.join("ops.cuh"),
            "#pragma once\n__global__ void k(const float *x, float *y, int n);\n\
             __global__ void elsewhere(float *y);\n",
        )
        .unwrap();
        std::fs::write(
            dir.join("ops.cu"),
            "#include \"ops.cuh\"\n\
             __global__ void k(const float *x, float *y, int n) { y[0] = x[0] + n; }\n",
        )
        .unwrap();
        let f = LocalFiles::read(&dir.join("ops.cu"), &[], false).unwrap();
        let found: Vec<(&str, bool)> = f
            .kernels
            .iter()
            .map(|k| (k.name.as_str(), k.defined))
            .collect();
        assert_eq!(found, vec![("k", true), ("elsewhere", false)]);
        assert!(
            f.kernels[0].file.ends_with("ops.cu"),
            "{}",
            f.kernels[0].file
        );
        let _ = std::fs::remove_dir_all(&f.dir);
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn local_headers_are_prepared_like_the_file_and_included_once() {
        let dir = std::env::temp_dir().join(format!("lab-files-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(dir.join("inc")).unwrap();
        std::fs::write(
            dir.join("main.cu"),
            "#include \"inc/util.cuh\"\n#include <cstdio>\n#include \"inc/util.cuh\"\n\
             __global__ void k(float *x) { x[0] = twice(1.0f); }\n\
             int main() { printf(\"hi\"); }\n",
        )
        .unwrap();
        std::fs::write(
            dir.join("inc/util.cuh"),
            "#pragma once\n#include \"more.h\"\n__device__ float twice(float a) { return 2 * a; }\n\
             void host_helper() { cudaDeviceSynchronize(); }\n\
             __global__ void dyn(float *o) {\n  extern __shared__ float s[];\n  o[0] = s[0];\n}\n",
        )
        .unwrap();
        std::fs::write(dir.join("inc/more.h"), "#define MORE 1\n").unwrap();
        let f = LocalFiles::read(&dir.join("main.cu"), &[], false).unwrap();
        assert_eq!(f.names.len(), 3, "{:?}", f.names);
        let text = |i: usize| std::fs::read_to_string(f.dir.join(&f.names[i].0)).unwrap();
        let main = text(0);
        assert_eq!(
            main.matches("#include \"kl_1_util.cuh\"").count(),
            2,
            "{main}"
        );
        assert!(
            main.contains("#include <cstdio>") && !main.contains("printf"),
            "{main}"
        );
        let util = text(1);
        assert!(util.contains("#include \"kl_2_more.h\""), "{util}");
        assert!(!util.contains("cudaDeviceSynchronize"), "{util}");
        assert!(
            util.contains("#line 1 \"") && util.contains("inc/util.cuh\""),
            "{util}"
        );
        // The simulator's branch has the dynamic shared memory rewritten, NVRTC's not.
        assert!(util.contains("#ifdef KERNEL_LAB_SIM") && util.contains("::sim::dynamic_smem()"));
        assert!(util.contains("extern __shared__ float s[];"), "{util}");
        let names: Vec<&str> = f.kernels.iter().map(|k| k.name.as_str()).collect();
        assert_eq!(names, vec!["k", "dyn"]);
        assert!(f.kernels[1].file.ends_with("inc/util.cuh"));
        assert_eq!(
            f.translate(&format!("{}/kl_1_util.cuh(3): error", f.dir.display())),
            format!("{}(3): error", f.kernels[1].file)
        );
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn headers_of_an_include_folder_are_found_quoted_or_in_angle_brackets() {
        // A project's layout: src/gemm.cu includes headers of include/, as `nvcc -I include`
        // finds them.
        let dir = std::env::temp_dir().join(format!("lab-files-inc-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(dir.join("src")).unwrap();
        std::fs::create_dir_all(dir.join("include")).unwrap();
        std::fs::write(
            dir.join("src/gemm.cu"),
            "#include \"cuda_gemm.hpp\"\n#include <cuda_gemm_utils.hpp>\n#include <cstdio>\n\
             __global__ void k(float *x) { x[0] = twice(1.0f) + THREE; }\n",
        )
        .unwrap();
        std::fs::write(
            dir.join("include/cuda_gemm.hpp"),
            "#pragma once\n__device__ float twice(float a) { return 2 * a; }\n\
             void launch_k(float *x);\n",
        )
        .unwrap();
        std::fs::write(dir.join("include/cuda_gemm_utils.hpp"), "#define THREE 3\n").unwrap();
        let without = LocalFiles::read(&dir.join("src/gemm.cu"), &[], false).unwrap();
        assert_eq!(without.names.len(), 1, "{:?}", without.names);
        let f = LocalFiles::read(&dir.join("src/gemm.cu"), &[dir.join("include")], false).unwrap();
        assert_eq!(f.names.len(), 3, "{:?}", f.names);
        let main = std::fs::read_to_string(f.dir.join(&f.main)).unwrap();
        for want in [
            "#include \"kl_1_cuda_gemm.hpp\"",
            "#include \"kl_2_cuda_gemm_utils.hpp\"",
            "#include <cstdio>",
        ] {
            assert!(main.contains(want), "{want} not in:\n{main}");
        }
        let header = std::fs::read_to_string(f.dir.join(&f.names[1].0)).unwrap();
        assert!(!header.contains("launch_k"), "{header}");
        assert!(
            f.names[1].1.ends_with("include/cuda_gemm.hpp"),
            "{:?}",
            f.names
        );
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
