//! A user's kernel as a run recorded it: enough to load it again, from its file, for the run's
//! report (the kernel's page beside the rungs'), and to tell whether the file changed since.

use super::{UserKernel, UserKernelSpec};
use kernel::Workload;
use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};

/// One `--kernel` (or `[[kernel]]`) of a run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct KernelRecord {
    /// The row's id.
    pub id: String,
    pub workload: Workload,
    /// The file: relative to the folder the run ran in where it lies inside it (a published
    /// run names no folder of the machine it ran on), else absolute.
    pub file: PathBuf,
    pub entry: String,
    /// The options as written, in order (`block`, `256`).
    pub options: Vec<(String, String)>,
    /// The digest of the file and its local headers as the run read them.
    pub digest: String,
}

impl KernelRecord {
    pub fn of(k: &UserKernel) -> Self {
        Self {
            id: k.id.clone(),
            workload: k.workload,
            file: recorded_path(&k.spec.file),
            entry: k.spec.entry.clone(),
            options: k.spec.options.clone(),
            digest: k.files.digest.clone(),
        }
    }

    /// The rung its `against=` sets it beside, if any.
    pub fn against(&self) -> Option<&str> {
        self.options
            .iter()
            .rev()
            .find(|(k, _)| k == "against")
            .map(|(_, v)| v.as_str())
    }

    /// The `--kernel` option that runs it again.
    pub fn option(&self) -> String {
        let mut s = format!("{}:{}", self.file.display(), self.entry);
        for (k, v) in &self.options {
            s.push_str(&format!(",{k}={v}"));
        }
        s
    }

    /// A command line that explains it (`harness explain --kernel '...'`), quoted for a shell.
    pub fn explain_command(&self) -> String {
        format!(
            "harness explain --kernel '{}'",
            self.option().replace('\'', r"'\''")
        )
    }

    /// The kernel loaded again from its file as a GPU of `sms` SMs launches it, and
    /// compile-checked where NVRTC is installed (which picks its launch, as a run does); why
    /// not, where the file is gone or no longer what the run ran.
    pub fn load(&self, sms: usize) -> Result<UserKernel, String> {
        let spec = UserKernelSpec::from_pairs(self.file.clone(), &self.entry, &self.options)
            .map_err(|(key, m)| format!("its option {key} no longer reads: {m}"))?;
        let mut k = UserKernel::load(&spec, Some(self.workload), 1, sms).map_err(|e| {
            let hint = match self.file.is_relative() {
                true => {
                    " (a relative path is looked for from the folder the report is \
                             written from: write it from the folder the run ran in)"
                }
                false => "",
            };
            format!("{} no longer loads{hint}: {e}", self.file.display())
        })?;
        if k.files.digest != self.digest {
            return Err(format!(
                "{} (or a header it includes) changed since the run, so the page would \
                 describe another kernel than the one measured",
                self.file.display()
            ));
        }
        k.preflight(false).map_err(|e| e.to_string())?;
        Ok(k)
    }
}

/// `file` relative to the working folder where it lies inside it, else absolute.
fn recorded_path(file: &Path) -> PathBuf {
    let abs = std::path::absolute(file).unwrap_or_else(|_| file.to_path_buf());
    std::env::current_dir()
        .ok()
        .and_then(|cwd| abs.strip_prefix(cwd).ok().map(Path::to_path_buf))
        .unwrap_or(abs)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_record_loads_its_kernel_again_until_the_file_changes() {
        let dir = std::env::temp_dir().join(format!("lab-kernel-record-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(dir.join("inc")).unwrap();
        let header = dir.join("inc/scale.cuh");
        std::fs::write(&header, "#define SCALE 1.0f\n").unwrap();
        let file = dir.join("copy.cu");
        std::fs::write(
            &file,
            "#include \"inc/scale.cuh\"\n__global__ void k(const float* A, const float* B, \
             float* C, int M, int N, int K) {}\n",
        )
        .unwrap();
        let text = format!(
            "{}:k,workload=gemm,block=16x16,grid=tile:16x16,dtype=A:f32,B:f32,id=mine",
            file.display()
        );
        let spec = UserKernelSpec::parse(&text).unwrap();
        let k = UserKernel::load(&spec, None, 1, 8).unwrap();
        let record = KernelRecord::of(&k);
        assert_eq!(record.id, "mine");
        assert_eq!(record.workload, Workload::Gemm);
        // The option reads back as the same spec.
        assert_eq!(record.option(), text);
        assert_eq!(
            UserKernelSpec::parse(&record.option()).unwrap().options,
            spec.options
        );
        let json = serde_json::to_string(&record).unwrap();
        let back: KernelRecord = serde_json::from_str(&json).unwrap();
        assert_eq!(back, record);
        let again = back.load(132).unwrap();
        assert_eq!(again.id(), "mine");
        assert_eq!(again.sms, 132);
        // A header that changed is a different kernel.
        std::fs::write(&header, "#define SCALE 2.0f\n").unwrap();
        let why = back.load(132).unwrap_err();
        assert!(why.contains("changed since the run"), "{why}");
        std::fs::remove_file(&file).unwrap();
        let why = back.load(132).unwrap_err();
        assert!(why.contains("no longer loads"), "{why}");
        assert!(
            record
                .explain_command()
                .starts_with("harness explain --kernel '/"),
            "{}",
            record.explain_command()
        );
        // Inside the working folder the path is recorded relative to it.
        let cwd = std::env::current_dir().unwrap();
        assert_eq!(recorded_path(&cwd.join("a/b.cu")), Path::new("a/b.cu"));
        assert_eq!(recorded_path(Path::new("a/b.cu")), Path::new("a/b.cu"));
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
