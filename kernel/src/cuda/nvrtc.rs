//! NVRTC: compiles a kernel source once per architecture to CUBIN with `--ptxas-options=-v`
//! and reads the ptxas report (registers, shared memory, stack, spills) from the log. Works
//! without a GPU, which is how CI checks that every kernel compiles without spilling.
//!
//! The lab's own headers (`lab/*.h`, see [`super::headers`]) are handed to NVRTC from memory,
//! so a release binary carried to another machine needs no source tree beside it.

use super::discovery::{Found, discovery};
use super::headers;
use super::nvrtc_cache;
use super::occupancy::parse_arch;
use crate::contract::Unsupported;
use crate::device::DeviceError;
use crate::plan::{CudaPlan, CudaSource};
use serde::Serialize;
use std::collections::HashMap;
use std::ffi::CString;
use std::sync::{Arc, Mutex, OnceLock};

/// What ptxas reports for one `__global__` function.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
pub struct Resources {
    pub registers: u32,
    /// Static shared memory per block, in bytes.
    pub static_smem: u32,
    pub stack_frame: u32,
    pub spill_stores: u32,
    pub spill_loads: u32,
}

impl Resources {
    pub fn spills(&self) -> bool {
        self.spill_stores > 0 || self.spill_loads > 0
    }
}

/// A source compiled for one architecture.
#[derive(Debug)]
pub struct Compiled {
    pub file: String,
    pub arch: String,
    pub cubin: Vec<u8>,
    /// Per entry point, from the ptxas report, under its symbol and, for the source's
    /// [`CudaSource::cxx_entries`], under the name the plan launches it by as well.
    pub resources: HashMap<String, Resources>,
    pub log: String,
    /// The PTX NVRTC generated on the way (entry parameters and launch bounds, see
    /// [`super::ptx`]).
    pub ptx: String,
    /// The mangled symbol of each of the source's C++ entries, by the name the plan uses.
    pub symbols: HashMap<String, String>,
}

impl Compiled {
    /// The symbol a launch of `entry` loads: the mangled name of a C++ entry, else `entry`.
    pub fn symbol<'a>(&'a self, entry: &'a str) -> &'a str {
        self.symbols.get(entry).map_or(entry, String::as_str)
    }

    /// What ptxas says costs `entry` speed (see [`advisories`]), with those naming a function
    /// that is no entry of this module (a device function a wrapper inlines), which may be
    /// any entry's. ptxas's lines about `setmaxnreg` name no function either: they are those
    /// of the entries that use it.
    pub fn advisories(&self, entry: &str) -> Vec<String> {
        let symbol = self.symbol(entry);
        let uses = |needle: &str| {
            super::ptx_entry::body(&self.ptx, symbol).is_none_or(|b| b.contains(needle))
                || super::ptx_entry::functions(&self.ptx).any(|f| f.contains(needle))
        };
        self.log
            .lines()
            .flat_map(|l| {
                let named = named_function(l);
                let other_entry = named.is_some_and(|f| self.resources.contains_key(f));
                advisories(l, named.filter(|_| !other_entry).unwrap_or(symbol))
            })
            .filter(|a| !a.contains("'setmaxnreg'") || uses("setmaxnreg."))
            .collect()
    }
}

/// The performance advisories ptxas prints for `function` (or for no function in particular),
/// such as `(C7510) Potential Performance Loss: wgmma.mma_async instructions are serialized
/// due to wgmma pipeline crossing function boundary at a function call in the function 'f'`.
/// ptxas prints them as info, not warnings, and compiles the code anyway: the report is the
/// only place they appear.
pub fn advisories(log: &str, function: &str) -> Vec<String> {
    log.lines()
        .filter(|l| l.contains("Performance Loss"))
        .map(|l| l.split_once(": ").map_or(l, |(_, m)| m).trim())
        // Only advisories naming this function, or none.
        .filter(|m| named_function(m).is_none_or(|f| f == function))
        .map(str::to_string)
        .collect()
}

/// The function an advisory names: `... in the function 'name'`.
fn named_function(line: &str) -> Option<&str> {
    line.split_once("function '")?.1.split('\'').next()
}

/// NVRTC's version, `(major, minor)`, or why NVRTC is unusable.
pub fn version() -> Result<(i32, i32), DeviceError> {
    ensure_loaded()?;
    let (mut major, mut minor) = (0, 0);
    // SAFETY: plain out-parameters; the library is loaded (checked above).
    unsafe { cudarc::nvrtc::sys::nvrtcVersion(&mut major, &mut minor) }
        .result()
        .map_err(|e| DeviceError::Unavailable(format!("nvrtcVersion failed: {e:?}")))?;
    Ok((major, minor))
}

/// The real architectures this NVRTC compiles for (`75` for sm_75), lowest first.
pub fn supported_archs() -> Result<Vec<i32>, DeviceError> {
    ensure_loaded()?;
    let failed = |e| DeviceError::Unavailable(format!("nvrtcGetSupportedArchs failed: {e:?}"));
    let mut n = 0;
    // SAFETY: a plain out-parameter; the library is loaded (checked above).
    unsafe { cudarc::nvrtc::sys::nvrtcGetNumSupportedArchs(&mut n) }
        .result()
        .map_err(failed)?;
    let mut archs = vec![0; usize::try_from(n).unwrap_or(0)];
    // SAFETY: the buffer holds the `n` entries NVRTC said it would write.
    unsafe { cudarc::nvrtc::sys::nvrtcGetSupportedArchs(archs.as_mut_ptr()) }
        .result()
        .map_err(failed)?;
    Ok(archs)
}

/// Whether `arch` names a GPU this NVRTC makes machine code for (`sm_90`, `sm_90a`): a
/// virtual architecture (`compute_90`) has PTX only, so no registers and no SASS.
pub fn check_arch(arch: &str) -> Result<(), String> {
    let number = arch
        .strip_prefix("sm_")
        .map(|n| n.trim_end_matches(['a', 'f']))
        .and_then(|n| n.parse::<i32>().ok());
    let Some(number) = number else {
        return Err(match arch.strip_prefix("compute_") {
            Some(n) => format!(
                "{arch} is a virtual architecture: NVRTC makes PTX for it and no machine code, \
                 so there are no registers or SASS to show; give sm_{n}"
            ),
            None => format!("{arch:?} is not a GPU architecture; write it as sm_90 or sm_90a"),
        });
    };
    let supported = supported_archs().map_err(|e| e.to_string())?;
    if supported.contains(&number) {
        return Ok(());
    }
    let (major, minor) = version().map_err(|e| e.to_string())?;
    let list: Vec<String> = supported.iter().map(|n| format!("sm_{n}")).collect();
    Err(format!(
        "NVRTC {major}.{minor} does not compile for {arch}; it compiles for {}",
        list.join(", ")
    ))
}

fn ensure_loaded() -> Result<(), DeviceError> {
    let d = discovery();
    if let Found::Missing(why) = &d.nvrtc {
        return Err(DeviceError::Unavailable(format!(
            "NVRTC unavailable: {why}"
        )));
    }
    // SAFETY: only probes whether the library can be opened; never panics.
    if !unsafe { cudarc::nvrtc::sys::is_culib_present() } {
        return Err(DeviceError::Unavailable(
            "NVRTC was found but cudarc cannot open it".into(),
        ));
    }
    Ok(())
}

/// The architecture `source` is compiled for when `arch` is asked: `arch` itself, or the
/// source's architecture-specific target ([`CudaSource::arch`], `sm_90a`) when `arch` is of
/// that family (`sm_90`). Another family cannot run the source, declined with the reason,
/// unless the source guards what only that family has ([`CudaSource::other_archs`]).
pub fn target(source: &CudaSource, arch: &str) -> Result<String, Unsupported> {
    match source.arch.as_deref() {
        None => Ok(arch.to_string()),
        Some(only) if parse_arch(only).is_some() && parse_arch(only) == parse_arch(arch) => {
            Ok(only.to_string())
        }
        Some(_) if source.other_archs => Ok(arch.to_string()),
        Some(only) => Err(Unsupported(format!(
            "{} is compiled for {only} only (it uses instructions of that GPU family alone), \
             not for {arch}",
            source.label()
        ))),
    }
}

/// Whether every source of `plan` can be compiled for `arch` ([`target`]).
pub fn check_target(plan: &CudaPlan, arch: &str) -> Result<(), Unsupported> {
    plan.sources()
        .into_iter()
        .try_for_each(|s| target(s, arch).map(drop))
}

/// Compiles `source` for `arch` (`sm_90`), memoized for the life of the process. The memo
/// is keyed by the whole source (its text, defines and include folders) and the architecture:
/// two different texts under one file name are two programs. A source with an
/// architecture-specific target is compiled for that target ([`target`]).
pub fn compile(source: &CudaSource, arch: &str) -> Result<Arc<Compiled>, DeviceError> {
    compile_memo(source, arch, true)
}

/// `compile`, the NVRTC call itself `serial` (one at a time in the process) or not. NVRTC
/// may be called from several threads on distinct programs, but what ptxas makes depends on
/// where its memory lies ([`super::address_layout`]), and threads allocate in memory of their
/// own: of six concurrent compiles of `linear_fused` for sm_90, one came out as 3857
/// instructions with 34 LDS, every sequential one as 3851 with 32. The SASS the lab reports,
/// compares and quotes must be what the source gives, so compiles are serial but for
/// [`precompile`], which a run uses for speed before running what it compiled.
fn compile_memo(
    source: &CudaSource,
    arch: &str,
    serial: bool,
) -> Result<Arc<Compiled>, DeviceError> {
    static ONE_AT_A_TIME: Mutex<()> = Mutex::new(());
    let arch = &target(source, arch)?;
    type Cache = Mutex<HashMap<(CudaSource, String), Arc<Compiled>>>;
    static CACHE: OnceLock<Cache> = OnceLock::new();
    let cache = CACHE.get_or_init(Default::default);
    let key = (source.clone(), arch.to_string());
    if let Some(hit) = cache.lock().unwrap_or_else(|p| p.into_inner()).get(&key) {
        return Ok(hit.clone());
    }
    // What another process compiled is read from disk. A serial compile's output serves
    // every compile; a concurrent one's (a run's precompile) only concurrent ones, so the SASS
    // the lab reports stays a serial compile's.
    let disk = disk_key(source, arch);
    let compile = |serial: bool| -> Result<Arc<Compiled>, DeviceError> {
        let dir = nvrtc_cache::dir();
        let mut names: Vec<String> = disk.iter().cloned().collect();
        if !serial {
            names.extend(disk.iter().map(|k| format!("{k}-concurrent")));
        }
        if let Some(out) = names.iter().find_map(|n| nvrtc_cache::load(&dir, n)) {
            return Ok(Arc::new(compiled_from(source, arch, out)));
        }
        let out = match super::nvrtc_child::program().filter(|_| source.from_user) {
            Some(child) => super::nvrtc_child::compile(child, source, arch, &compiler_name())?,
            None => run_nvrtc(source, arch)?,
        };
        if let Some(name) = names.last()
            && !parse_ptxas_log(&out.log).is_empty()
        {
            nvrtc_cache::store(&dir, name, &out);
        }
        Ok(Arc::new(compiled_from(source, arch, out)))
    };
    let compiled = if serial {
        let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|p| p.into_inner());
        // Another thread may have compiled it while this one waited.
        if let Some(hit) = cache.lock().unwrap_or_else(|p| p.into_inner()).get(&key) {
            return Ok(hit.clone());
        }
        compile(true)?
    } else {
        compile(false)?
    };
    // A compile whose ptxas report names no entry is not kept: every kernel is reported, so
    // the next call compiles again rather than serve empty resources for the life of the
    // process (as a compile served from the driver's cache did, see [`no_cache_option`]).
    if !compiled.resources.is_empty() {
        cache
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .insert(key, compiled.clone());
    }
    Ok(compiled)
}

/// Compiles `sources` for `arch` on all cores, filling [`compile`]'s memo before the rows that
/// load them run one after another (NVRTC spends up to seconds on one source). The code may
/// differ in scheduling from a serial compile's (see [`compile_memo`]); the run loads, and
/// reports the resources of, what was compiled here, or a serial compile's output kept on
/// disk, or this kind of compile's by an earlier process (each step of a GPU check is one).
/// Failures are left for the row that loads the source to report.
pub fn precompile(sources: &[&CudaSource], arch: &str) {
    use rayon::prelude::*;
    sources.par_iter().for_each(|s| {
        let _ = compile_memo(s, arch, false);
    });
}

/// The name NVRTC's serial output for `source` on `arch` is kept under on disk (a
/// concurrent compile's adds `-concurrent`): a hash of everything the output depends on, down
/// to the NVRTC library file. `None` where it cannot be kept (see [`nvrtc_cache`]) or NVRTC is
/// unavailable.
pub fn disk_key(source: &CudaSource, arch: &str) -> Option<String> {
    let Found::Path(lib) = &discovery().nvrtc else {
        return None;
    };
    let meta = std::fs::metadata(lib).ok()?;
    let modified = meta
        .modified()
        .ok()?
        .duration_since(std::time::UNIX_EPOCH)
        .ok()?;
    let library = format!(
        "{} {} {} {:?}",
        lib.display(),
        meta.len(),
        modified.as_nanos(),
        version().ok()?
    );
    let options = options(source, arch);
    // A randomized process's output is kept apart: it may be a rarer form of the program.
    let layout = format!("{:?}", super::address_layout::current());
    let mut parts: Vec<&str> = vec![&library, &layout, arch, &source.file, &source.code];
    parts.extend(options.iter().map(String::as_str));
    for h in headers::all() {
        parts.extend([h.name, h.text]);
    }
    parts.extend(source.cxx_entries.iter().map(|(_, e)| e.as_ref()));
    nvrtc_cache::key(&parts, &source.include_dirs)
}

/// A [`Compiled`] from what NVRTC returned: the ptxas report read from its log, each C++
/// entry's resources under the name the plan launches it by as well.
fn compiled_from(source: &CudaSource, arch: &str, out: nvrtc_cache::Output) -> Compiled {
    let mut resources = parse_ptxas_log(&out.log);
    let symbols: HashMap<String, String> = out.symbols.into_iter().collect();
    for (name, symbol) in &symbols {
        if let Some(r) = resources.get(symbol).copied() {
            resources.insert(name.clone(), r);
        }
    }
    Compiled {
        file: source.label(),
        arch: arch.to_string(),
        resources,
        cubin: out.cubin,
        log: out.log,
        ptx: out.ptx,
        symbols,
    }
}

/// `NVRTC 13.0`, as compile errors name it.
fn compiler_name() -> String {
    version()
        .map(|(a, b)| format!("NVRTC {a}.{b}"))
        .unwrap_or_else(|_| "NVRTC".into())
}

/// One NVRTC compile of `source` for `arch`, in this process.
pub(super) fn run_nvrtc(
    source: &CudaSource,
    arch: &str,
) -> Result<nvrtc_cache::Output, DeviceError> {
    use cudarc::nvrtc::{result, sys};
    ensure_loaded()?;
    let compiler = compiler_name();
    let fail = |log: String| DeviceError::Compile {
        compiler: compiler.clone(),
        file: source.label(),
        arch: arch.to_string(),
        log,
    };
    let nul = |what: &str| fail(format!("{what} contains a NUL byte"));
    let src = CString::new(source.code.as_bytes()).map_err(|_| nul("the source"))?;
    let name = CString::new(source.file.as_bytes()).map_err(|_| nul("the file name"))?;
    let options = options(source, arch);
    // The lab's headers, from memory: names as `#include` spells them, and their texts.
    let lab = headers::all();
    let header_names = lab
        .iter()
        .map(|h| CString::new(h.name).map_err(|_| nul(h.name)))
        .collect::<Result<Vec<_>, _>>()?;
    let header_texts = lab
        .iter()
        .map(|h| CString::new(h.text).map_err(|_| nul(h.name)))
        .collect::<Result<Vec<_>, _>>()?;
    let expressions = source
        .cxx_entries
        .iter()
        .map(|(_, e)| CString::new(e.as_bytes()).map_err(|_| nul("an entry name")))
        .collect::<Result<Vec<_>, _>>()?;
    let name_ptrs: Vec<_> = header_names.iter().map(|c| c.as_ptr()).collect();
    let text_ptrs: Vec<_> = header_texts.iter().map(|c| c.as_ptr()).collect();
    let mut prog = std::mem::MaybeUninit::uninit();
    // SAFETY: every pointer is a live NUL-terminated string for the duration of the call;
    // NVRTC copies what it keeps.
    unsafe {
        sys::nvrtcCreateProgram(
            prog.as_mut_ptr(),
            src.as_ptr(),
            name.as_ptr(),
            lab.len() as i32,
            text_ptrs.as_ptr(),
            name_ptrs.as_ptr(),
        )
    }
    .result()
    .map_err(|e| fail(format!("nvrtcCreateProgram: {e:?}")))?;
    // SAFETY: initialized by the successful call above.
    let prog = unsafe { prog.assume_init() };
    for e in &expressions {
        // SAFETY: `prog` is live; NVRTC copies the expression. Instantiates the entry and
        // keeps its mangled name for after the compile.
        unsafe { sys::nvrtcAddNameExpression(prog, e.as_ptr()) }
            .result()
            .map_err(|err| fail(format!("nvrtcAddNameExpression: {err:?}")))?;
    }
    // SAFETY: `prog` is live until the destroy below; `src` and `name` outlive it.
    let outcome = unsafe { result::compile_program(prog, &options) };
    // SAFETY: as above.
    let log = unsafe { result::get_program_log(prog) }
        .map(|raw| c_chars_to_string(&raw))
        .unwrap_or_default();
    let mut symbols = HashMap::new();
    if outcome.is_ok() {
        for ((name, _), e) in source.cxx_entries.iter().zip(&expressions) {
            let mut lowered = std::ptr::null();
            // SAFETY: `prog` compiled; NVRTC owns the returned string until destroy, so it is
            // copied at once.
            let status = unsafe { sys::nvrtcGetLoweredName(prog, e.as_ptr(), &mut lowered) };
            if status == sys::nvrtcResult::NVRTC_SUCCESS && !lowered.is_null() {
                // SAFETY: a NUL-terminated string from NVRTC, live until destroy.
                let text = unsafe { std::ffi::CStr::from_ptr(lowered) };
                symbols.insert(name.to_string(), text.to_string_lossy().into_owned());
            }
        }
    }
    let ptx = if outcome.is_ok() {
        // SAFETY: `prog` compiled; NVRTC keeps the PTX of a CUBIN compile.
        unsafe { result::get_ptx(prog) }
            .map(|raw| c_chars_to_string(&raw))
            .unwrap_or_default()
    } else {
        String::new()
    };
    let cubin = outcome
        // A compile error is its log; any other failure is named before it.
        .map_err(|e| match e.0 {
            sys::nvrtcResult::NVRTC_ERROR_COMPILATION => fail(log.clone()),
            code => fail(format!("nvrtcCompileProgram: {code:?}\n{log}")),
        })
        .and_then(|()| {
            let mut size = 0usize;
            // SAFETY: `prog` compiled successfully; the buffer has the size NVRTC reports.
            unsafe {
                sys::nvrtcGetCUBINSize(prog, &mut size)
                    .result()
                    .map_err(|e| fail(format!("nvrtcGetCUBINSize: {e:?}")))?;
                let mut buf = vec![0u8; size];
                sys::nvrtcGetCUBIN(prog, buf.as_mut_ptr().cast())
                    .result()
                    .map_err(|e| fail(format!("nvrtcGetCUBIN: {e:?}")))?;
                Ok(buf)
            }
        });
    // SAFETY: destroyed once, after its last use.
    let _ = unsafe { result::destroy_program(prog) };
    Ok(nvrtc_cache::Output {
        cubin: cubin?,
        log,
        ptx,
        symbols: symbols.into_iter().collect(),
    })
}

/// NVRTC's options for `source` on `arch`: the architecture, the ptxas report, the CUDA
/// headers' folder, the source's own include folders and defines.
pub fn options(source: &CudaSource, arch: &str) -> Vec<String> {
    let mut options = vec![
        format!("--gpu-architecture={arch}"),
        "--ptxas-options=-v".to_string(),
        "--std=c++20".to_string(),
        "-lineinfo".to_string(),
    ];
    if source.from_user {
        // A user's file keeps the functions without an execution space that its host code
        // was blanked around (`constexpr bool is_pow2(int)`, which a launcher's assert calls,
        // or device code calls as nvcc's --expt-relaxed-constexpr allows): NVRTC refuses
        // every host function, and this makes them device functions instead.
        options.push("-default-device".to_string());
    }
    if discovery().driver.is_found() {
        options.extend(version().ok().and_then(no_cache_option).map(String::from));
    }
    for dir in &source.include_dirs {
        options.push(format!("--include-path={}", dir.display()));
    }
    if let Some(dir) = discovery().include_dir() {
        options.push(format!("--include-path={}", dir.display()));
        // CUDA 13 keeps libcu++ (`<cuda/pipeline>`, `<cuda/std/...>`, `<nv/target>`) apart.
        let cccl = dir.join("cccl");
        if cccl.is_dir() {
            options.push(format!("--include-path={}", cccl.display()));
        }
    }
    for (name, value) in &source.defines {
        options.push(format!("--define-macro={name}={value}"));
    }
    options
}

/// The option that keeps NVRTC from serving a compile from the CUDA driver's compute cache,
/// for the NVRTC versions that have one (12.9 and later; older ones reject the option). A
/// cached compile skips ptxas, so its log has no report: on a machine with a driver the
/// cache outlives the process, and rows of the first GPU runs whose programs an earlier
/// process had compiled came out without registers, shared memory or occupancy. [`options`]
/// passes it only where a driver was found: without one there is no cache to skip.
pub fn no_cache_option((major, minor): (i32, i32)) -> Option<&'static str> {
    (major > 12 || (major == 12 && minor >= 9)).then_some("--no-cache")
}

fn c_chars_to_string(raw: &[std::ffi::c_char]) -> String {
    let bytes: Vec<u8> = raw
        .iter()
        .map(|&c| c as u8)
        .take_while(|&b| b != 0)
        .collect();
    String::from_utf8_lossy(&bytes).into_owned()
}

/// Parses ptxas' `-v` report:
/// ```text
/// ptxas info    : Compiling entry function 'gemm_naive' for 'sm_90'
/// ptxas info    : Function properties for gemm_naive
///     0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads
/// ptxas info    : Used 32 registers, used 0 barriers, 1024 bytes smem, 400 bytes cmem[0]
/// ```
pub fn parse_ptxas_log(log: &str) -> HashMap<String, Resources> {
    let mut out: HashMap<String, Resources> = HashMap::new();
    let mut current: Option<String> = None;
    for line in log.lines() {
        let line = line.trim();
        if let Some(rest) = line
            .split_once("Compiling entry function '")
            .map(|(_, r)| r)
            .or_else(|| line.split_once("Function properties for ").map(|(_, r)| r))
        {
            let name = rest.split('\'').next().unwrap_or(rest).trim().to_string();
            out.entry(name.clone()).or_default();
            current = Some(name);
            continue;
        }
        let Some(entry) = current.as_ref().and_then(|n| out.get_mut(n)) else {
            continue;
        };
        // Each comma-separated part is `N words...`, after a prefix that varies between
        // versions (`ptxas info    :`, NVRTC 13's `ptxas         .`), so the number is found
        // by the words that follow it rather than by its position.
        for part in line.split(',') {
            let words: Vec<&str> = part.split_whitespace().collect();
            let value = |key: &[&str]| {
                words
                    .windows(key.len() + 1)
                    .find(|w| w[1..] == *key)
                    .and_then(|w| w[0].parse::<u32>().ok())
            };
            let fields: [(&[&str], &mut u32); 5] = [
                (&["registers"], &mut entry.registers),
                (&["bytes", "smem"], &mut entry.static_smem),
                (&["bytes", "stack", "frame"], &mut entry.stack_frame),
                (&["bytes", "spill", "stores"], &mut entry.spill_stores),
                (&["bytes", "spill", "loads"], &mut entry.spill_loads),
            ];
            for (key, field) in fields {
                if let Some(v) = value(key) {
                    *field = v;
                }
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nvrtc_is_kept_from_its_cache_from_the_version_that_has_one() {
        assert_eq!(no_cache_option((12, 8)), None, "12.8 rejects the option");
        assert_eq!(no_cache_option((11, 8)), None);
        assert_eq!(no_cache_option((12, 9)), Some("--no-cache"));
        assert_eq!(no_cache_option((13, 0)), Some("--no-cache"));
    }

    #[test]
    fn an_arch_specific_source_compiles_for_its_family_alone() {
        let any = CudaSource::embedded("k.cu", "");
        assert_eq!(target(&any, "sm_80").unwrap(), "sm_80");
        let hopper = any.clone().for_arch("sm_90a");
        assert_ne!(hopper, any, "the target is part of the program");
        assert_eq!(target(&hopper, "sm_90").unwrap(), "sm_90a");
        assert_eq!(target(&hopper, "sm_90a").unwrap(), "sm_90a");
        for other in ["sm_80", "sm_100", "sm_120"] {
            let why = target(&hopper, other).unwrap_err().0;
            assert!(
                why.contains("k.cu is compiled for sm_90a only") && why.contains(other),
                "{why}"
            );
        }
        // Its Hopper instructions behind `#if __CUDA_ARCH__ >= 900`: other families as asked.
        let guarded = CudaSource {
            other_archs: true,
            ..hopper
        };
        assert_eq!(target(&guarded, "sm_90").unwrap(), "sm_90a");
        assert_eq!(target(&guarded, "sm_80").unwrap(), "sm_80");
    }

    /// ptxas 13.0's advisory on a kernel with a printf call and wgmma (rung 23 as it was),
    /// verbatim; another function's advisory is not this one's.
    #[test]
    fn reads_ptxas_performance_advisories() {
        let log = "ptxas info    : (C7510) Potential Performance Loss: wgmma.mma_async \
            instructions are serialized due to wgmma pipeline crossing function boundary at a \
            function call in the function 'gemm_wgmma_l2_order'\n\
            ptxas info    : 105 bytes gmem\n\
            ptxas info    : Compiling entry function 'gemm_wgmma_l2_order' for 'sm_90a'\n";
        let a = advisories(log, "gemm_wgmma_l2_order");
        assert_eq!(a.len(), 1);
        assert!(
            a[0].starts_with("(C7510) Potential Performance Loss: wgmma.mma_async")
                && a[0].ends_with("in the function 'gemm_wgmma_l2_order'"),
            "{a:?}"
        );
        assert!(advisories(log, "other_kernel").is_empty());
        assert!(advisories("ptxas info    : 0 bytes gmem\n", "k").is_empty());
    }

    #[test]
    fn parses_a_ptxas_report() {
        let log = "ptxas info    : 0 bytes gmem\n\
            ptxas info    : Compiling entry function 'gemm_tiled' for 'sm_90'\n\
            ptxas info    : Function properties for gemm_tiled\n\
            \x20   8 bytes stack frame, 4 bytes spill stores, 12 bytes spill loads\n\
            ptxas info    : Used 40 registers, used 1 barriers, 2048 bytes smem, 384 bytes cmem[0]\n\
            ptxas info    : Compiling entry function 'other' for 'sm_90'\n\
            ptxas info    : Function properties for other\n\
            \x20   0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads\n\
            ptxas info    : Used 8 registers, used 0 barriers, 380 bytes cmem[0]\n";
        let r = parse_ptxas_log(log);
        assert_eq!(
            r["gemm_tiled"],
            Resources {
                registers: 40,
                static_smem: 2048,
                stack_frame: 8,
                spill_stores: 4,
                spill_loads: 12
            }
        );
        assert_eq!(r["other"].registers, 8);
        assert!(!r["other"].spills());
        assert!(r["gemm_tiled"].spills());
    }

    /// NVRTC 13 prints the stack line with a `ptxas         .` prefix and adds a cumulative
    /// stack size, which is not the frame (rung 05 on sm_90, verbatim).
    #[test]
    fn parses_nvrtc_13s_stack_frame_line() {
        let log = "ptxas info    : 0 bytes gmem\n\
            ptxas info    : Compiling entry function 'gemm_regblock_2d' for 'sm_90'\n\
            ptxas info    : Function properties for gemm_regblock_2d\n\
            ptxas         .     16 bytes stack frame, 12 bytes spill stores, 12 bytes spill loads\n\
            ptxas info    : Used 128 registers, used 1 barriers, 16 bytes cumulative stack size, 8192 bytes smem\n\
            ptxas info    : Compile time = 112.763 ms\n";
        assert_eq!(
            parse_ptxas_log(log)["gemm_regblock_2d"],
            Resources {
                registers: 128,
                static_smem: 8192,
                stack_frame: 16,
                spill_stores: 12,
                spill_loads: 12
            }
        );
    }
}
