//! What the lab's two caches on disk share (NVRTC's outputs, [`crate::cuda::nvrtc_cache`], and
//! the simulator's built modules, [`crate::sim`]): a size limit. A hit marks its file used now,
//! and a store that leaves the folder over its limit deletes the files used longest ago, down
//! to three quarters of it, so that a folder in the temporary directory stops growing however
//! many programs pass through it. Only the caches' own files are counted or deleted, known by
//! their names ([`is_entry`]): a folder named by `KERNEL_LAB_NVRTC_CACHE` may hold other files,
//! and hidden files and folders (what a writer has not renamed into place yet) are not entries.

use std::path::Path;
use std::time::SystemTime;

/// Marks `path` used now, so that trimming keeps it longest. A failure (a file of another
/// user, say) only makes it an earlier candidate.
pub fn touch(path: &Path) {
    if let Ok(file) = std::fs::File::open(path) {
        let _ = file.set_modified(SystemTime::now());
    }
}

/// Whether a file name is one the caches write: a hash of 16 or 32 hex digits, with the
/// prefix and suffix of its kind (`sass-…`, `hooks-….o`, `….so`, `…-concurrent`).
pub fn is_entry(name: &str) -> bool {
    let name = name
        .strip_prefix("sass-")
        .or_else(|| name.strip_prefix("hooks-"))
        .unwrap_or(name);
    let hash = [".so", ".o", "-concurrent"]
        .iter()
        .find_map(|suffix| name.strip_suffix(suffix))
        .unwrap_or(name);
    matches!(hash.len(), 16 | 32) && hash.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f'))
}

/// The environment variable `name` as a folder, if it is set and not empty.
pub fn folder_from_env(name: &str) -> Option<std::path::PathBuf> {
    std::env::var_os(name)
        .filter(|v| !v.is_empty())
        .map(std::path::PathBuf::from)
}

/// Whether files can be written into `dir` (created if missing): a hidden probe file is
/// made and removed.
pub fn check_writable(dir: &Path) -> std::io::Result<()> {
    static NEXT: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    std::fs::create_dir_all(dir)?;
    // A name of this call's own: threads of one process probe the folder at once.
    let n = NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let probe = dir.join(format!(".probe-{}-{n}", std::process::id()));
    std::fs::write(&probe, b"")?;
    std::fs::remove_file(&probe)
}

/// The kept files of `dir`: name, bytes and when last used.
fn entries(dir: &Path) -> Vec<(std::path::PathBuf, u64, SystemTime)> {
    let Ok(read) = std::fs::read_dir(dir) else {
        return Vec::new();
    };
    read.filter_map(Result::ok)
        .filter(|e| is_entry(&e.file_name().to_string_lossy()))
        .filter_map(|e| {
            let meta = e.metadata().ok()?;
            let used = meta.modified().ok()?;
            meta.is_file().then(|| (e.path(), meta.len(), used))
        })
        .collect()
}

/// How many files `dir` keeps and their bytes.
pub fn contents(dir: &Path) -> (usize, u64) {
    let all = entries(dir);
    (all.len(), all.iter().map(|(_, bytes, _)| bytes).sum())
}

/// When the files of `dir` take more than `limit` bytes, deletes those used longest ago until
/// they take at most three quarters of it. Returns how many were deleted.
pub fn trim(dir: &Path, limit: u64) -> usize {
    let mut all = entries(dir);
    let mut total: u64 = all.iter().map(|(_, bytes, _)| bytes).sum();
    if total <= limit {
        return 0;
    }
    all.sort_by_key(|(_, _, used)| *used);
    let mut deleted = 0;
    for (path, bytes, _) in all {
        if total <= limit / 4 * 3 {
            break;
        }
        // Another process may have deleted it first: its bytes are gone either way.
        if std::fs::remove_file(&path).is_ok() {
            deleted += 1;
        }
        total -= bytes;
    }
    deleted
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn a_folder_over_its_limit_loses_the_files_used_longest_ago() {
        let dir = std::env::temp_dir().join(format!("lab-disk-cache-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(dir.join("build-in-progress")).unwrap();
        let start = SystemTime::now() - Duration::from_secs(3600);
        // Ten files of 100 bytes, file i last used i minutes after `start`.
        let f = |i: u64| format!("{i:016x}.so");
        for i in 0..10u64 {
            let path = dir.join(f(i));
            std::fs::write(&path, [0u8; 100]).unwrap();
            let file = std::fs::File::open(&path).unwrap();
            file.set_modified(start + Duration::from_secs(60 * i))
                .unwrap();
        }
        std::fs::write(dir.join(".f10.tmp"), [0u8; 5000]).unwrap();
        // A file of the user's own, older and larger than every entry.
        let theirs = dir.join("thesis.txt");
        std::fs::write(&theirs, [0u8; 5000]).unwrap();
        std::fs::File::open(&theirs)
            .unwrap()
            .set_modified(start - Duration::from_secs(3600))
            .unwrap();
        assert_eq!(
            contents(&dir),
            (10, 1000),
            "hidden files, folders and files the caches did not write are not kept files"
        );

        // At the limit nothing goes.
        assert_eq!(trim(&dir, 1000), 0);
        // The oldest, once used again, is the newest.
        touch(&dir.join(f(0)));
        // Over a limit of 800: down to 600, so the four used longest ago go (f1 to f4).
        assert_eq!(trim(&dir, 800), 4);
        let mut left: Vec<String> = entries(&dir)
            .iter()
            .map(|(p, _, _)| p.file_name().unwrap().to_string_lossy().into_owned())
            .collect();
        left.sort();
        assert_eq!(left, [0, 5, 6, 7, 8, 9].map(f));
        assert!(dir.join(".f10.tmp").exists() && dir.join("build-in-progress").is_dir());
        assert!(theirs.exists());
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn entries_are_known_by_the_names_the_caches_give_them() {
        let h16 = "0123456789abcdef";
        let h32 = "0123456789abcdef0123456789abcdef";
        for name in [
            format!("{h16}.so"),
            format!("hooks-{h16}.o"),
            h32.to_string(),
            format!("{h32}-concurrent"),
            format!("sass-{h32}"),
        ] {
            assert!(is_entry(&name), "{name}");
        }
        for name in [
            "thesis.txt",
            "video.mkv",
            "0123456789ABCDEF.so",
            "abc.so",
            ".x.tmp",
        ] {
            assert!(!is_entry(name), "{name}");
        }
    }
}
