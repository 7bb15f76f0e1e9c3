//! Users' files compiled by NVRTC in a child process. NVRTC is a library inside this process,
//! and a crash inside it ends the whole program with no message, taking every row and report
//! after it: NVRTC 13.0 dies of SIGSEGV compiling, for sm_90, an `ldmatrix` whose shared
//! address is the constant 0. The lab's own sources are compiled in the process (the tests
//! compile every one of them, and the SASS the lab reports is that of the process's compile,
//! see [`super::address_layout`]); a user's file ([`CudaSource::from_user`]) is compiled by
//! the program itself, started again with a hidden subcommand ([`set_program`]) that reads the
//! request as JSON on stdin and writes NVRTC's output on stdout ([`serve`]). A crash there is
//! that file's compile error for that architecture, and the program goes on.

use super::nvrtc_cache::{self, Output};
use crate::device::DeviceError;
use crate::plan::CudaSource;
use serde::{Deserialize, Serialize};
use std::io::{Read, Write};
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::sync::OnceLock;

/// How to start the compiling child: a program and its arguments.
#[derive(Clone, Debug)]
pub struct Program {
    pub exe: PathBuf,
    pub args: Vec<String>,
}

static PROGRAM: OnceLock<Program> = OnceLock::new();

/// Compiles users' files in children of `program` for the rest of the process. A program
/// that never calls it (a test binary, the benchmark) compiles them in the process.
pub fn set_program(program: Program) {
    let _ = PROGRAM.set(program);
}

/// The child program, where users' files are compiled in one.
pub(super) fn program() -> Option<&'static Program> {
    PROGRAM.get()
}

/// What the parent sends: the source and the architecture it is compiled for.
#[derive(Serialize, Deserialize)]
struct Request {
    file: String,
    code: String,
    defines: Vec<(String, String)>,
    include_dirs: Vec<PathBuf>,
    only_arch: Option<String>,
    other_archs: bool,
    cxx_entries: Vec<(String, String)>,
    arch: String,
}

impl Request {
    fn new(source: &CudaSource, arch: &str) -> Self {
        let owned =
            |(a, b): &(crate::plan::Text, crate::plan::Text)| (a.to_string(), b.to_string());
        Self {
            file: source.file.to_string(),
            code: source.code.to_string(),
            defines: source
                .defines
                .iter()
                .map(|(k, v)| (k.to_string(), v.clone()))
                .collect(),
            include_dirs: source.include_dirs.clone(),
            only_arch: source.arch.as_ref().map(|a| a.to_string()),
            other_archs: source.other_archs,
            cxx_entries: source.cxx_entries.iter().map(owned).collect(),
            arch: arch.to_string(),
        }
    }

    fn source(self) -> (CudaSource, String) {
        let source = CudaSource {
            file: self.file.into(),
            code: self.code.into(),
            defines: self
                .defines
                .into_iter()
                .map(|(k, v)| (k.into(), v))
                .collect(),
            include_dirs: self.include_dirs,
            arch: self.only_arch.map(Into::into),
            other_archs: self.other_archs,
            cxx_entries: self
                .cxx_entries
                .into_iter()
                .map(|(a, b)| (a.into(), b.into()))
                .collect(),
            // Only a user's file is sent to a child: its options are a user file's, and
            // `serve` compiles it in this process.
            from_user: true,
        };
        (source, self.arch)
    }
}

/// What starts each kind of answer on the child's stdout.
const OUTPUT: &[u8] = b"nvrtc-child output\n";
const COMPILE_ERROR: &[u8] = b"nvrtc-child compile error\n";
const UNAVAILABLE: &[u8] = b"nvrtc-child unavailable\n";

/// Compiles `source` for `arch` (already the target, see [`super::nvrtc::target`]) in a child
/// of `program`: NVRTC's output, its compile error, or what ended the child.
pub(super) fn compile(
    program: &Program,
    source: &CudaSource,
    arch: &str,
    compiler: &str,
) -> Result<Output, DeviceError> {
    let fail = |log: String| DeviceError::Compile {
        compiler: compiler.to_string(),
        file: source.label(),
        arch: arch.to_string(),
        log,
    };
    let unavailable = |why: String| {
        DeviceError::Unavailable(format!(
            "cannot compile {} for {arch} in a child process ({}): {why}",
            source.label(),
            program.exe.display()
        ))
    };
    let request =
        serde_json::to_vec(&Request::new(source, arch)).map_err(|e| unavailable(e.to_string()))?;
    let mut child = Command::new(&program.exe)
        .args(&program.args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .map_err(|e| unavailable(e.to_string()))?;
    // The child reads all of its stdin before it writes: writing first cannot deadlock.
    if let Some(mut stdin) = child.stdin.take() {
        stdin
            .write_all(&request)
            .map_err(|e| unavailable(e.to_string()))?;
    }
    let out = child
        .wait_with_output()
        .map_err(|e| unavailable(e.to_string()))?;
    let answer = &out.stdout;
    if let Some(bytes) = answer.strip_prefix(OUTPUT) {
        return nvrtc_cache::decode(bytes)
            .ok_or_else(|| unavailable("its answer was cut short".into()));
    }
    if let Some(log) = answer.strip_prefix(COMPILE_ERROR) {
        return Err(fail(String::from_utf8_lossy(log).into_owned()));
    }
    if let Some(why) = answer.strip_prefix(UNAVAILABLE) {
        return Err(DeviceError::Unavailable(
            String::from_utf8_lossy(why).into_owned(),
        ));
    }
    #[cfg(unix)]
    {
        use std::os::unix::process::ExitStatusExt;
        if let Some(sig) = out.status.signal() {
            return Err(fail(format!(
                "{compiler} crashed with {} while compiling this file for {arch}: a fault \
                 inside NVRTC, not an error it found in the code. It ran in a process of its \
                 own, so nothing else was lost. The same file may compile for another \
                 architecture; to find what NVRTC trips on, take code out until it compiles \
                 (NVRTC 13.0 crashes this way on an `ldmatrix` from the constant shared \
                 address 0, compiled for sm_90).",
                crate::child_process::signal_name(sig)
            )));
        }
    }
    Err(unavailable(format!(
        "it ended with {} and no answer",
        out.status
    )))
}

/// The child: reads a request on stdin, compiles it with NVRTC in this process, writes the
/// answer on stdout. Returns whether it could answer.
pub fn serve() -> bool {
    let mut text = String::new();
    let request: Request = match std::io::stdin()
        .read_to_string(&mut text)
        .map_err(|e| e.to_string())
        .and_then(|_| serde_json::from_str(&text).map_err(|e| e.to_string()))
    {
        Ok(r) => r,
        Err(e) => {
            eprintln!(
                "this subcommand is the harness's own: it compiles one user's file for \
                 another harness process ({e})"
            );
            return false;
        }
    };
    let (source, arch) = request.source();
    let answer = match super::nvrtc::run_nvrtc(&source, &arch) {
        Ok(out) => [OUTPUT, &nvrtc_cache::encode(&out)].concat(),
        Err(DeviceError::Compile { log, .. }) => [COMPILE_ERROR, log.as_bytes()].concat(),
        Err(other) => [UNAVAILABLE, other.to_string().as_bytes()].concat(),
    };
    let mut stdout = std::io::stdout().lock();
    stdout
        .write_all(&answer)
        .and_then(|()| stdout.flush())
        .is_ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_request_carries_every_field_of_the_source() {
        let source = CudaSource {
            defines: vec![("TILE".into(), "16".into())],
            include_dirs: vec![PathBuf::from("/x/include")],
            other_archs: true,
            cxx_entries: vec![("k16".into(), "k<16>".into())],
            from_user: true,
            ..CudaSource::embedded("k.cu", "__global__ void k() {}").for_arch("sm_90a")
        };
        let text = serde_json::to_string(&Request::new(&source, "sm_90a")).unwrap();
        let (back, arch) = serde_json::from_str::<Request>(&text).unwrap().source();
        assert_eq!(arch, "sm_90a");
        assert_eq!(back, source);
    }
}
