//! What the lab's two caches on disk share (NVRTC's outputs, [`crate::cuda::nvrtc_cache`], and
//! the simulator's built modules, [`crate::sim`]): a size limit. A hit marks its file used now,
//! and a store that leaves the folder over its limit deletes the files used longest ago, down
//! to three quarters of it, so that a folder in the temporary directory stops growing however
//! many programs pass through it. Files whose name starts with `.` and folders (what a writer
//! has not renamed into place yet) are neither counted nor deleted.

use std::path::Path;
use std::time::SystemTime;

/// Marks `path` used now, so that trimming keeps it longest. A failure (a file of another
/// user, say) only makes it an earlier candidate.
pub fn touch(path: &Path) {
    if let Ok(file) = std::fs::File::open(path) {
        let _ = file.set_modified(SystemTime::now());
    }
}

/// The kept files of `dir`: name, bytes and when last used.
fn entries(dir: &Path) -> Vec<(std::path::PathBuf, u64, SystemTime)> {
    let Ok(read) = std::fs::read_dir(dir) else {
        return Vec::new();
    };
    read.filter_map(Result::ok)
        .filter(|e| !e.file_name().to_string_lossy().starts_with('.'))
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
        for i in 0..10u64 {
            let path = dir.join(format!("f{i}"));
            std::fs::write(&path, [0u8; 100]).unwrap();
            let file = std::fs::File::open(&path).unwrap();
            file.set_modified(start + Duration::from_secs(60 * i))
                .unwrap();
        }
        std::fs::write(dir.join(".f10.tmp"), [0u8; 5000]).unwrap();
        assert_eq!(
            contents(&dir),
            (10, 1000),
            "hidden files and folders are not kept files"
        );

        // At the limit nothing goes.
        assert_eq!(trim(&dir, 1000), 0);
        // The oldest, once used again, is the newest.
        touch(&dir.join("f0"));
        // Over a limit of 800: down to 600, so the four used longest ago go (f1 to f4).
        assert_eq!(trim(&dir, 800), 4);
        let mut left: Vec<String> = entries(&dir)
            .iter()
            .map(|(p, _, _)| p.file_name().unwrap().to_string_lossy().into_owned())
            .collect();
        left.sort();
        assert_eq!(left, ["f0", "f5", "f6", "f7", "f8", "f9"]);
        assert!(dir.join(".f10.tmp").exists() && dir.join("build-in-progress").is_dir());
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
