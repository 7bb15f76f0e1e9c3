//! Finding the CUDA pieces at run time: the driver, NVRTC with its builtins library, the CUDA
//! headers and cuBLAS. cudarc opens libraries by bare name through the system loader (and
//! panics when the driver is missing), so each library found by path here is preloaded by
//! absolute path first; cudarc's later open by name then finds the loaded copy.
//!
//! Search order: `$CUDA_HOME`/`$CUDA_PATH`, `/usr/local/cuda`, the toolkit holding `nvcc` on
//! `PATH`, pip-installed `nvidia/cu13` folders, the project-local `.cuda-tools` (from
//! `tools/install-cuda-tools.sh`), then the loader path.

use std::path::{Path, PathBuf};
use std::sync::OnceLock;

/// Where one component was found, or why not.
#[derive(Clone, Debug)]
pub enum Found {
    /// At this path, preloaded.
    Path(PathBuf),
    /// Through the system loader path (`LD_LIBRARY_PATH`, ld.so.cache).
    LoaderPath,
    Missing(String),
}

impl Found {
    pub fn is_found(&self) -> bool {
        !matches!(self, Self::Missing(_))
    }

    pub fn describe(&self) -> String {
        match self {
            Self::Path(p) => p.display().to_string(),
            Self::LoaderPath => "found on the loader path".to_string(),
            Self::Missing(why) => format!("missing: {why}"),
        }
    }
}

/// What discovery found. Computed once per process.
#[derive(Debug)]
pub struct Discovery {
    pub driver: Found,
    pub nvrtc: Found,
    pub nvrtc_builtins: Found,
    /// The folder holding `cuda_fp16.h` and `mma.h` (passed to NVRTC as an include path).
    pub headers: Found,
    pub cublas: Found,
    /// Candidate roots that were looked at, in order.
    pub searched: Vec<PathBuf>,
    /// Settings that named a CUDA installation the search could not use (`CUDA_HOME` set to
    /// a folder that does not exist, or to one without NVRTC while NVRTC came from
    /// elsewhere), so that a typo is shown rather than silently passed over.
    pub ignored: Vec<String>,
    // Keeps the preloaded libraries open for the life of the process.
    _libs: Vec<libloading::Library>,
}

/// Finds and preloads everything, once.
pub fn discovery() -> &'static Discovery {
    static D: OnceLock<Discovery> = OnceLock::new();
    D.get_or_init(Discovery::run)
}

// Versioned names first, the bindings' CUDA 13 before 12: an unversioned `libnvrtc.so` is a
// development symlink that may belong to any toolkit on the machine.
const NVRTC_NAMES: [&str; 3] = ["libnvrtc.so.13", "libnvrtc.so.12", "libnvrtc.so"];
const NVRTC: &str = NVRTC_NAMES[0];
const NVRTC_BUILTINS: &str = "libnvrtc-builtins.so.13.0";
const CUBLAS_NAMES: [&str; 3] = ["libcublas.so.13", "libcublas.so.12", "libcublas.so"];
const DRIVER: &str = "libcuda.so.1";

impl Discovery {
    fn run() -> Self {
        let roots = candidate_roots();
        let mut ignored = missing_env_roots();
        let lib_dirs: Vec<PathBuf> = roots.iter().flat_map(|r| lib_dirs_of(r)).collect();
        let include_dirs: Vec<PathBuf> = roots.iter().flat_map(|r| include_dirs_of(r)).collect();
        let mut libs = Vec::new();

        // NVRTC loads its builtins itself by bare name: load that one first from the same folder.
        let (nvrtc, nvrtc_builtins) = match find_first(&lib_dirs, &NVRTC_NAMES) {
            Some(path) => {
                let dir = path.parent().unwrap_or(Path::new("/")).to_path_buf();
                let builtins = match find_builtins(&dir, &path) {
                    Some(b) => preload(&b, &mut libs),
                    None => Found::Missing(format!(
                        "{NVRTC_BUILTINS} is not beside {} (NVRTC needs it)",
                        path.display()
                    )),
                };
                (preload(&path, &mut libs), builtins)
            }
            None => {
                let loader = first_on_loader_path(&NVRTC_NAMES);
                (
                    loader.clone(),
                    match loader {
                        Found::LoaderPath => Found::LoaderPath,
                        _ => Found::Missing("NVRTC was not found".into()),
                    },
                )
            }
        };
        let nvrtc = match nvrtc {
            Found::Missing(_) => Found::Missing(format!(
                "no {} in {} or on the loader path{}; run tools/install-cuda-tools.sh or set CUDA_HOME",
                NVRTC_NAMES.join(", "),
                describe_roots(&roots),
                ignored.iter().map(|i| format!("; {i}")).collect::<String>()
            )),
            other => other,
        };
        if let Found::Path(found) = &nvrtc {
            for (var, root) in env_roots() {
                if root.is_dir() && !found.starts_with(&root) {
                    ignored.push(format!(
                        "{var}={} has no {NVRTC}; NVRTC comes from {}",
                        root.display(),
                        found.display()
                    ));
                }
            }
        }

        let headers = include_dirs
            .iter()
            .find(|d| {
                d.join("cuda_fp16.h").is_file()
                    && (d.join("mma.h").is_file() || d.join("crt/mma.h").is_file())
            })
            .map(|d| Found::Path(d.clone()))
            .unwrap_or_else(|| {
                Found::Missing(format!(
                    "no folder with cuda_fp16.h and mma.h in {}; WMMA and half kernels cannot compile",
                    describe_roots(&roots)
                ))
            });

        // The driver lives with the system (or /usr/local/nvidia in containers), not the toolkit.
        let driver_dirs = [
            "/usr/local/nvidia/lib64",
            "/usr/local/nvidia/lib",
            "/usr/lib/x86_64-linux-gnu",
            "/usr/lib64",
            "/usr/lib/wsl/lib",
        ]
        .map(PathBuf::from);
        let driver = match find_file(&driver_dirs, DRIVER) {
            Some(p) => preload(&p, &mut libs),
            None => on_loader_path(DRIVER),
        };
        let driver = match driver {
            Found::Missing(_) => Found::Missing(
                "libcuda.so.1, the NVIDIA driver's library, is not on this machine".to_string(),
            ),
            other => other,
        };

        let cublas = match find_first(&lib_dirs, &CUBLAS_NAMES) {
            Some(p) => {
                // cublasLt of the same version, beside it: libcublas.so.13 -> libcublasLt.so.13.
                let lt_name = p
                    .file_name()
                    .and_then(|n| n.to_str())
                    .map(|n| n.replacen("libcublas", "libcublasLt", 1));
                if let Some(lt) = lt_name
                    .and_then(|n| p.parent().map(|d| d.join(n)))
                    .filter(|p| p.is_file())
                {
                    preload(&lt, &mut libs);
                }
                preload(&p, &mut libs)
            }
            None => match first_on_loader_path(&CUBLAS_NAMES) {
                Found::Missing(_) => Found::Missing(format!(
                    "no {} in {} or on the loader path; cuBLAS reference rows are skipped",
                    CUBLAS_NAMES.join(", "),
                    describe_roots(&roots)
                )),
                f => f,
            },
        };

        Self {
            driver,
            nvrtc,
            nvrtc_builtins,
            headers,
            cublas,
            searched: roots,
            ignored,
            _libs: libs,
        }
    }

    /// One line per setting the search could not use ([`Discovery::ignored`]).
    pub fn notes(&self) -> Vec<String> {
        self.ignored.iter().map(|i| format!("note: {i}")).collect()
    }

    pub fn include_dir(&self) -> Option<&Path> {
        match &self.headers {
            Found::Path(p) => Some(p),
            _ => None,
        }
    }
}

/// The CUDA libraries (driver, NVRTC, cuBLAS) mapped into this process now, by path, as the
/// dynamic loader lists them: what was actually loaded, whichever name opened it.
pub fn loaded_libraries() -> Vec<PathBuf> {
    unsafe extern "C" fn each(
        info: *mut libc::dl_phdr_info,
        _size: libc::size_t,
        data: *mut libc::c_void,
    ) -> libc::c_int {
        // SAFETY: the loader passes a valid `dl_phdr_info` for the call's duration, and
        // `data` is the `Vec` below, borrowed mutably by this iteration alone.
        let (info, found) = unsafe { (&*info, &mut *(data as *mut Vec<PathBuf>)) };
        if !info.dlpi_name.is_null() {
            // SAFETY: dlpi_name is a NUL-terminated string owned by the loader.
            let name = unsafe { std::ffi::CStr::from_ptr(info.dlpi_name) };
            let path = PathBuf::from(name.to_string_lossy().into_owned());
            let file = path.file_name().and_then(|n| n.to_str()).unwrap_or("");
            if ["libcuda.so", "libnvrtc", "libcublas"]
                .iter()
                .any(|p| file.starts_with(p))
            {
                found.push(path);
            }
        }
        0
    }
    let mut found: Vec<PathBuf> = Vec::new();
    // SAFETY: `each` only reads the loader's entries and pushes to `found`, which outlives
    // the call.
    unsafe {
        libc::dl_iterate_phdr(
            Some(each),
            &mut found as *mut Vec<PathBuf> as *mut libc::c_void,
        )
    };
    found
}

/// Libraries loaded twice from different files (`libnvrtc.so.13` preloaded by path and an
/// older `libnvrtc.so` opened by bare name, say), as `(library, paths)`.
pub fn conflicting(loaded: &[PathBuf]) -> Vec<(String, Vec<PathBuf>)> {
    let stem = |p: &Path| {
        let name = p.file_name().and_then(|n| n.to_str()).unwrap_or("");
        name.split(".so").next().unwrap_or(name).to_string()
    };
    let mut by_stem: Vec<(String, Vec<PathBuf>)> = Vec::new();
    for p in loaded {
        let real = std::fs::canonicalize(p).unwrap_or_else(|_| p.clone());
        let s = stem(p);
        match by_stem.iter_mut().find(|(k, _)| *k == s) {
            Some((_, paths)) if !paths.contains(&real) => paths.push(real),
            Some(_) => {}
            None => by_stem.push((s, vec![real])),
        }
    }
    by_stem.retain(|(_, paths)| paths.len() > 1);
    by_stem
}

fn describe_roots(roots: &[PathBuf]) -> String {
    if roots.is_empty() {
        "(no CUDA folders exist here)".to_string()
    } else {
        roots
            .iter()
            .map(|p| p.display().to_string())
            .collect::<Vec<_>>()
            .join(", ")
    }
}

fn preload(path: &Path, libs: &mut Vec<libloading::Library>) -> Found {
    // SAFETY: loading a CUDA library runs its initializers, which have no preconditions.
    match unsafe { libloading::Library::new(path) } {
        Ok(lib) => {
            libs.push(lib);
            Found::Path(path.to_path_buf())
        }
        Err(e) => Found::Missing(format!("{} exists but did not load: {e}", path.display())),
    }
}

fn on_loader_path(name: &str) -> Found {
    // SAFETY: as in `preload`; the handle is dropped at once, cudarc reopens it by name.
    match unsafe { libloading::Library::new(name) } {
        Ok(_) => Found::LoaderPath,
        Err(_) => Found::Missing(format!("{name} is not on the loader path")),
    }
}

fn find_file(dirs: &[PathBuf], name: &str) -> Option<PathBuf> {
    dirs.iter().map(|d| d.join(name)).find(|p| p.is_file())
}

/// The first of `names` (in that order) found in any of `dirs`.
fn find_first(dirs: &[PathBuf], names: &[&str]) -> Option<PathBuf> {
    names.iter().find_map(|n| find_file(dirs, n))
}

/// The first of `names` the loader finds.
fn first_on_loader_path(names: &[&str]) -> Found {
    names
        .iter()
        .map(|n| on_loader_path(n))
        .find(Found::is_found)
        .unwrap_or_else(|| {
            Found::Missing(format!(
                "none of {} is on the loader path",
                names.join(", ")
            ))
        })
}

/// The builtins library of the NVRTC at `nvrtc`, in `dir`: the same major version
/// (`libnvrtc.so.13` -> `libnvrtc-builtins.so.13.*`), the newest for an unversioned name.
fn find_builtins(dir: &Path, nvrtc: &Path) -> Option<PathBuf> {
    let exact = dir.join(NVRTC_BUILTINS);
    if nvrtc.file_name().and_then(|n| n.to_str()) == Some(NVRTC) && exact.is_file() {
        return Some(exact);
    }
    let major = nvrtc
        .file_name()
        .and_then(|n| n.to_str())
        .and_then(|n| n.strip_prefix("libnvrtc.so."))
        .unwrap_or("");
    let prefix = format!("libnvrtc-builtins.so.{major}");
    let mut entries: Vec<PathBuf> = std::fs::read_dir(dir)
        .ok()?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| {
            p.file_name()
                .and_then(|n| n.to_str())
                .is_some_and(|n| n.starts_with(&prefix) && !n.contains("alt"))
        })
        .collect();
    entries.sort();
    entries.pop()
}

fn lib_dirs_of(root: &Path) -> Vec<PathBuf> {
    [
        "lib64",
        "lib",
        "targets/x86_64-linux/lib",
        "targets/sbsa-linux/lib",
    ]
    .iter()
    .map(|d| root.join(d))
    .filter(|d| d.is_dir())
    .collect()
}

fn include_dirs_of(root: &Path) -> Vec<PathBuf> {
    [
        "include",
        "targets/x86_64-linux/include",
        "targets/sbsa-linux/include",
    ]
    .iter()
    .map(|d| root.join(d))
    .filter(|d| d.is_dir())
    .collect()
}

/// The variables that name a CUDA installation, with their folders, in search order.
fn env_roots() -> Vec<(&'static str, PathBuf)> {
    ["CUDA_HOME", "CUDA_PATH", "CUDA_ROOT", "LAB_CUDA_TOOLS"]
        .into_iter()
        .filter_map(|var| {
            std::env::var_os(var)
                .filter(|v| !v.is_empty())
                .map(|v| (var, PathBuf::from(v)))
        })
        .collect()
}

/// `CUDA_HOME=/x is not a folder; it is ignored`, per variable naming no folder.
fn missing_env_roots() -> Vec<String> {
    env_roots()
        .into_iter()
        .filter(|(_, root)| !root.is_dir())
        .map(|(var, root)| format!("{var}={} is not a folder; it is ignored", root.display()))
        .collect()
}

/// The folders that may hold a CUDA installation, in search order, existing ones only.
fn candidate_roots() -> Vec<PathBuf> {
    let mut roots: Vec<PathBuf> = Vec::new();
    for (var, root) in env_roots() {
        if var != "LAB_CUDA_TOOLS" {
            roots.push(root);
        }
    }
    roots.push(PathBuf::from("/usr/local/cuda"));
    roots.extend(glob_dir(Path::new("/usr/local"), "cuda-13"));
    if let Some(nvcc) = which("nvcc")
        && let Some(root) = nvcc.parent().and_then(Path::parent)
    {
        roots.push(root.to_path_buf());
    }
    for site in python_site_dirs() {
        roots.push(site.join("nvidia/cu13"));
    }
    roots.extend(project_tools_dirs());
    // A toolkit whose libraries are on the loader path (`LD_LIBRARY_PATH=ROOT/lib`): its
    // headers lie beside them, in ROOT/include.
    for dir in std::env::var("LD_LIBRARY_PATH")
        .unwrap_or_default()
        .split(':')
    {
        if let Some(root) = Path::new(dir).parent().filter(|_| !dir.is_empty()) {
            roots.push(root.to_path_buf());
        }
    }
    let mut seen = Vec::new();
    roots.retain(|r| {
        let keep = r.is_dir() && !seen.contains(r);
        seen.push(r.clone());
        keep
    });
    roots
}

fn glob_dir(dir: &Path, prefix: &str) -> Vec<PathBuf> {
    let mut out: Vec<PathBuf> = std::fs::read_dir(dir)
        .into_iter()
        .flatten()
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| {
            p.file_name()
                .and_then(|n| n.to_str())
                .is_some_and(|n| n.starts_with(prefix))
        })
        .collect();
    out.sort();
    out
}

fn which(program: &str) -> Option<PathBuf> {
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .map(|d| d.join(program))
        .find(|p| p.is_file())
}

/// The `lib` folders of the installation a Python interpreter belongs to: its own prefix (a
/// virtual environment's, when it is one) and, through symlinks, the base interpreter's.
fn python_lib_dirs(python: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let resolved = std::fs::canonicalize(python).ok();
    for p in std::iter::once(python.to_path_buf()).chain(resolved) {
        if let Some(prefix) = p.parent().and_then(Path::parent) {
            let lib = prefix.join("lib");
            if !out.contains(&lib) {
                out.push(lib);
            }
        }
    }
    out
}

/// Site-packages folders where pip may have put `nvidia/cu13`, without starting Python: the
/// active virtual environment, the `python3` on `PATH`, user and system installs.
fn python_site_dirs() -> Vec<PathBuf> {
    let mut bases: Vec<PathBuf> = Vec::new();
    if let Some(v) = std::env::var_os("VIRTUAL_ENV") {
        bases.push(PathBuf::from(v).join("lib"));
    }
    for name in ["python3", "python"] {
        if let Some(py) = which(name) {
            bases.extend(python_lib_dirs(&py));
        }
    }
    if let Some(home) = std::env::var_os("HOME") {
        let home = PathBuf::from(home);
        bases.push(home.join(".local/lib"));
        bases.extend(
            glob_dir(&home.join(".pyenv/versions"), "3")
                .into_iter()
                .map(|v| v.join("lib")),
        );
    }
    bases.extend(["/usr/local/lib", "/usr/lib", "/opt/conda/lib"].map(PathBuf::from));
    let mut out = Vec::new();
    if let Some(pp) = std::env::var_os("PYTHONPATH") {
        out.extend(std::env::split_paths(&pp));
    }
    for base in bases {
        for py in glob_dir(&base, "python3") {
            out.push(py.join("site-packages"));
            out.push(py.join("dist-packages"));
        }
    }
    out.push(PathBuf::from("/usr/lib/python3/dist-packages"));
    out
}

/// `.cuda-tools` in the current folder or any parent, or beside the running binary or any of
/// its parents (so a carried `target/release/harness` finds the repository's tools).
fn project_tools_dirs() -> Vec<PathBuf> {
    let mut out = Vec::new();
    if let Some(v) = std::env::var_os("LAB_CUDA_TOOLS") {
        out.push(PathBuf::from(v));
    }
    let starts = [
        std::env::current_dir().ok(),
        std::env::current_exe()
            .ok()
            .and_then(|e| e.parent().map(Path::to_path_buf)),
    ];
    for start in starts.into_iter().flatten() {
        for dir in start.ancestors() {
            out.push(dir.join(".cuda-tools"));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_virtual_environments_python_leads_to_its_site_packages() {
        let root = std::env::temp_dir().join(format!("lab-venv-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&root);
        let site = root.join("venv/lib/python3.12/site-packages/nvidia/cu13/lib");
        std::fs::create_dir_all(&site).unwrap();
        std::fs::create_dir_all(root.join("venv/bin")).unwrap();
        std::fs::create_dir_all(root.join("base/bin")).unwrap();
        std::fs::write(root.join("base/bin/python3.12"), "").unwrap();
        std::os::unix::fs::symlink(
            root.join("base/bin/python3.12"),
            root.join("venv/bin/python3"),
        )
        .unwrap();
        let libs = python_lib_dirs(&root.join("venv/bin/python3"));
        assert!(libs.contains(&root.join("venv/lib")), "{libs:?}");
        assert!(
            libs.iter().any(|l| l.ends_with("base/lib")),
            "the base interpreter's prefix too: {libs:?}"
        );
        let sites: Vec<PathBuf> = glob_dir(&root.join("venv/lib"), "python3")
            .into_iter()
            .map(|p| p.join("site-packages/nvidia/cu13"))
            .collect();
        assert!(sites.iter().any(|s| s.is_dir()), "{sites:?}");
        std::fs::remove_dir_all(&root).unwrap();
    }

    #[test]
    fn a_library_loaded_from_two_files_is_a_conflict() {
        let paths: Vec<PathBuf> = [
            "/opt/cu13/lib/libnvrtc.so.13",
            "/opt/cu12/lib/libnvrtc.so",
            "/opt/cu13/lib/libnvrtc-builtins.so.13.0",
            "/opt/cu13/lib/libcublas.so.13",
            "/opt/cu13/lib/libcublasLt.so.13",
            "/opt/cu13/lib/libcublas.so.13",
        ]
        .map(PathBuf::from)
        .to_vec();
        let c = conflicting(&paths);
        assert_eq!(c.len(), 1, "{c:?}");
        assert_eq!(c[0].0, "libnvrtc");
        assert_eq!(c[0].1.len(), 2);
    }

    #[test]
    fn builtins_follow_the_major_version_of_nvrtc() {
        let dir = std::env::temp_dir().join(format!("builtins-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        for f in ["libnvrtc-builtins.so.12.8", "libnvrtc-builtins.so.13.0"] {
            std::fs::write(dir.join(f), b"").unwrap();
        }
        let of = |nvrtc: &str| find_builtins(&dir, &dir.join(nvrtc)).unwrap();
        assert!(of("libnvrtc.so.12").ends_with("libnvrtc-builtins.so.12.8"));
        assert!(of("libnvrtc.so.13").ends_with("libnvrtc-builtins.so.13.0"));
        // Unversioned: the newest.
        assert!(of("libnvrtc.so").ends_with("libnvrtc-builtins.so.13.0"));
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn every_root_is_searched_in_lib64_and_the_target_folders() {
        let root = std::env::temp_dir().join(format!("lab-cuda-root-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&root);
        std::fs::create_dir_all(root.join("lib64")).unwrap();
        std::fs::create_dir_all(root.join("targets/x86_64-linux/lib")).unwrap();
        std::fs::write(root.join("lib64").join(CUBLAS_NAMES[0]), "not a library").unwrap();
        let dirs = lib_dirs_of(&root);
        assert_eq!(dirs[0], root.join("lib64"));
        assert!(dirs.contains(&root.join("targets/x86_64-linux/lib")));
        let found = find_file(&dirs, CUBLAS_NAMES[0]).unwrap();
        // A file that is there but does not load is reported as such, with its path.
        let mut libs = Vec::new();
        match preload(&found, &mut libs) {
            Found::Missing(why) => assert!(why.contains("did not load"), "{why}"),
            other => panic!("a text file loaded as a library: {other:?}"),
        }
        std::fs::remove_dir_all(&root).unwrap();
    }
}
