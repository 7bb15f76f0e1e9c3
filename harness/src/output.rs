//! Where results go: checked before a run computes anything, and written atomically, so a
//! run that cannot save its results fails at once and an interrupted run never leaves a
//! truncated file behind.

use anyhow::{Context, Result, bail};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

/// Fails unless `root` is (or can be made) a folder this process can create files in;
/// `named` says where the user gave it (`--out`, `--to`, `LAB_DIR`).
pub fn ensure_writable(root: &Path, named: &str) -> Result<()> {
    // The folder, or the first of the folders above it that is a file.
    if let Some(file) = root
        .ancestors()
        .find(|p| p.exists() && !p.is_dir() && !p.as_os_str().is_empty())
    {
        bail!(
            "{named} {}: {} is a file, not a folder; results need a folder",
            root.display(),
            if file == root {
                "this".to_string()
            } else {
                file.display().to_string()
            }
        );
    }
    std::fs::create_dir_all(root).with_context(|| {
        format!(
            "{named} {}: cannot create the results folder",
            root.display()
        )
    })?;
    kernel::disk_cache::check_writable(root)
        .with_context(|| format!("{named} {}: cannot write in this folder", root.display()))
}

/// A hidden name beside `path` with the same extension (a chart backend picks its format from
/// it): `dir/.gemm.md.tmp-1234-0.md`. Unique to the call, not just the process: two threads
/// may write the same file at once (tests preparing the same user kernel do).
fn temp_sibling(path: &Path) -> PathBuf {
    static NEXT: AtomicU64 = AtomicU64::new(0);
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let ext = path
        .extension()
        .map(|e| format!(".{}", e.to_string_lossy()))
        .unwrap_or_default();
    let call = NEXT.fetch_add(1, Ordering::Relaxed);
    path.with_file_name(format!(".{name}.tmp-{}-{call}{ext}", std::process::id()))
}

/// Has `write` produce the file at a temporary path beside `path`, then renames it into place
/// (atomic on one file system). On failure the temporary file is removed and `path` is left
/// as it was.
pub fn replace_with(path: &Path, write: impl FnOnce(&Path) -> Result<()>) -> Result<()> {
    if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
        std::fs::create_dir_all(dir).with_context(|| format!("cannot create {}", dir.display()))?;
    }
    let tmp = temp_sibling(path);
    let result = write(&tmp).and_then(|()| {
        std::fs::rename(&tmp, path)
            .with_context(|| format!("cannot move {} into place", path.display()))
    });
    if result.is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
    result
}

/// Reads a JSON file of one of the lab's schemas (`what`: "calibration", "peers"), refusing
/// other versions with `advice` on what to do.
pub fn read_versioned<T: serde::de::DeserializeOwned>(
    path: &Path,
    what: &str,
    version: u32,
    advice: &str,
) -> Result<T> {
    let text = std::fs::read_to_string(path)
        .with_context(|| format!("cannot read {what} file {}", path.display()))?;
    let probe: serde_json::Value =
        serde_json::from_str(&text).with_context(|| format!("{} is not JSON", path.display()))?;
    match schema_version(&probe, path)? {
        Some(v) if v == u64::from(version) => {}
        Some(v) => bail!(
            "{} has {what} schema version {v}; this harness reads version {version}: {advice}",
            path.display()
        ),
        None => bail!("{} is not a {what} file", path.display()),
    }
    // From the text again, not the parsed value: its errors then say the line and column.
    serde_json::from_str(&text)
        .with_context(|| format!("{} does not match the {what} schema", path.display()))
}

/// The `schema_version` of a JSON file's top object: `None` when it has none, an error naming
/// the value when it is not a whole number (a version written as `"1"`).
pub fn schema_version(probe: &serde_json::Value, path: &Path) -> Result<Option<u64>> {
    match probe.get("schema_version") {
        None => Ok(None),
        Some(v) => match v.as_u64() {
            Some(n) => Ok(Some(n)),
            None => bail!(
                "{}: schema_version is {v}, not a whole number (as the harness writes it, \
                 `\"schema_version\": 1`)",
                path.display()
            ),
        },
    }
}

/// Writes `contents` to `path` atomically.
pub fn write_atomic(path: &Path, contents: impl AsRef<[u8]>) -> Result<()> {
    replace_with(path, |tmp| {
        std::fs::write(tmp, contents.as_ref())
            .with_context(|| format!("cannot write {}", path.display()))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn dir(name: &str) -> PathBuf {
        let d = std::env::temp_dir().join(format!("lab-output-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        std::fs::create_dir_all(&d).unwrap();
        d
    }

    #[test]
    fn a_file_where_the_folder_should_be_is_refused() {
        let d = dir("file");
        let f = d.join("results");
        std::fs::write(&f, "not a folder").unwrap();
        let e = ensure_writable(&f, "--out").unwrap_err().to_string();
        assert!(e.contains("is a file"), "{e}");
        // A file further up is named, not the folder that could not be made under it.
        let e = ensure_writable(&f.join("sub/deeper"), "--out")
            .unwrap_err()
            .to_string();
        assert!(
            e.contains(&format!("{} is a file, not a folder", f.display())),
            "{e}"
        );
        assert!(ensure_writable(&d.join("new/nested"), "--out").is_ok());
        std::fs::remove_dir_all(&d).unwrap();
    }

    #[test]
    fn a_read_only_folder_is_refused_before_any_work() {
        use std::os::unix::fs::PermissionsExt;
        let d = dir("ro");
        let ro = d.join("ro");
        std::fs::create_dir(&ro).unwrap();
        std::fs::set_permissions(&ro, std::fs::Permissions::from_mode(0o555)).unwrap();
        // Root may write anywhere; the check is only meaningful for other users.
        let writable_anyway = std::fs::write(ro.join("x"), b"").is_ok();
        let r = ensure_writable(&ro, "--out");
        if writable_anyway {
            assert!(r.is_ok());
        } else {
            let e = r.unwrap_err();
            assert!(format!("{e:#}").contains("cannot write"), "{e:#}");
        }
        std::fs::set_permissions(&ro, std::fs::Permissions::from_mode(0o755)).unwrap();
        std::fs::remove_dir_all(&d).unwrap();
    }

    #[test]
    fn a_failed_write_leaves_the_old_file_and_no_temporary() {
        let d = dir("atomic");
        let p = d.join("gemm.json");
        write_atomic(&p, "old").unwrap();
        let r = replace_with(&p, |tmp| {
            std::fs::write(tmp, "half of the new")?;
            anyhow::bail!("interrupted")
        });
        assert!(r.is_err());
        assert_eq!(std::fs::read_to_string(&p).unwrap(), "old");
        let names: Vec<_> = std::fs::read_dir(&d)
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect();
        assert_eq!(names, vec![std::ffi::OsString::from("gemm.json")]);
        write_atomic(&p, "new").unwrap();
        assert_eq!(std::fs::read_to_string(&p).unwrap(), "new");
        std::fs::remove_dir_all(&d).unwrap();
    }
}
