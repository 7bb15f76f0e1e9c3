//! `harness doctor` says which glibc the binary needs and which CUDA libraries were loaded
//! from where.

use std::process::Command;

fn harness(args: &[&str]) -> (bool, String) {
    let o = Command::new(env!("CARGO_BIN_EXE_harness"))
        .args(args)
        .output()
        .unwrap();
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    );
    (o.status.success(), text)
}

#[test]
fn doctor_names_the_glibc_the_binary_needs_and_the_loaded_libraries() {
    let (ok, version) = harness(&["doctor", "--print", "glibc"]);
    assert!(ok, "{version}");
    let version = version.trim();
    let (major, minor) = version.split_once('.').expect(version);
    assert_eq!(major, "2", "{version}");
    assert!(minor.parse::<u32>().is_ok(), "{version}");

    let (ok, text) = harness(&["doctor"]);
    assert!(ok, "{text}");
    assert!(
        text.contains(&format!("this binary needs:  glibc {version} or newer")),
        "{text}"
    );
    // With NVRTC, its ptxas report is read: the tables' registers and occupancy come from it,
    // and the folder its outputs are kept in is named with its limit.
    if text.contains("NVRTC version:      1") {
        assert!(text.contains("ptxas report:       read ("), "{text}");
        assert!(text.contains(" MB of at most 537; deleting it"), "{text}");
    }
    // The simulator's compiler, and where its builds are kept.
    assert!(text.contains("CUDA simulator:     "), "{text}");
    assert!(text.contains(" MB of at most 268; deleting it"), "{text}");
    // NVRTC, when found by path, is the library the process has loaded, and only one copy.
    if let Some(line) = text.lines().find(|l| l.starts_with("NVRTC: ")) {
        let path = line.trim_start_matches("NVRTC:").trim();
        if path.starts_with('/') {
            assert!(
                text.contains(&format!("loaded:             {path}")),
                "{text}"
            );
        }
    }
}

/// The commit a run records is the code that ran: inside the checkout the binary was built
/// from, its HEAD (and whether edits are uncommitted); a binary carried into another checkout
/// (a copy of the tree with a different history, as on a GPU machine) records its build.
#[test]
fn a_carried_binary_records_the_commit_it_was_built_from() {
    let here = |dir: &std::path::Path| {
        let o = Command::new(env!("CARGO_BIN_EXE_harness"))
            .args(["doctor", "--print", "commit"])
            .current_dir(dir)
            .output()
            .unwrap();
        assert!(o.status.success());
        String::from_utf8_lossy(&o.stdout).trim().to_string()
    };
    let git = |dir: &std::path::Path, args: &[&str]| {
        let o = Command::new("git")
            .args(args)
            .current_dir(dir)
            .output()
            .expect("git runs");
        String::from_utf8_lossy(&o.stdout).trim().to_string()
    };
    let repo = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
    let head = git(repo, &["rev-parse", "--short=12", "HEAD"]);
    if head.is_empty() {
        return; // built outside a git checkout: there is no HEAD to compare with
    }
    assert!(here(repo).starts_with(&head), "{} vs {head}", here(repo));

    let other = std::env::temp_dir().join(format!("lab-commit-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&other);
    std::fs::create_dir_all(&other).unwrap();
    for args in [
        &["init", "-q"][..],
        &[
            "-c",
            "user.name=t",
            "-c",
            "user.email=t@t",
            "commit",
            "-q",
            "--allow-empty",
            "-m",
            "x",
        ],
    ] {
        git(&other, args);
    }
    let foreign = git(&other, &["rev-parse", "--short=12", "HEAD"]);
    let recorded = here(&other);
    assert!(!foreign.is_empty());
    assert!(
        !recorded.contains(&foreign),
        "{recorded} names the other checkout's HEAD"
    );
    assert!(recorded.ends_with(" (build)"), "{recorded}");
    let _ = std::fs::remove_dir_all(&other);
}

/// NVRTC's output depends on where its memory lies, so the harness runs with the addresses
/// fixed: started with randomization on, it starts itself again with it off, where the system
/// allows a process that change; under a CUDA tool, which attached to the process it started,
/// it stays that process.
#[test]
fn the_harness_turns_address_randomization_off_for_itself() {
    use std::os::unix::process::CommandExt;
    const ADDR_NO_RANDOMIZE: libc::c_ulong = 0x0040000;
    let layout = |under_a_tool: bool| {
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_harness"));
        cmd.args(["doctor", "--print", "layout"])
            .env_remove("KERNEL_LAB_LAYOUT_TRIED")
            .env_remove("CUDA_INJECTION64_PATH");
        if under_a_tool {
            cmd.env("CUDA_INJECTION64_PATH", "/nonexistent/libinjection.so");
        }
        // SAFETY: between fork and exec, only the personality call (async-signal-safe): this
        // test runs with randomization off (the workspace's runner), the child starts with it
        // on.
        unsafe {
            cmd.pre_exec(|| {
                let persona = libc::personality(0xffff_ffff);
                if persona >= 0 {
                    libc::personality(persona as libc::c_ulong & !ADDR_NO_RANDOMIZE);
                }
                Ok(())
            });
        }
        let o = cmd.output().unwrap();
        assert!(o.status.success(), "{o:?}");
        String::from_utf8_lossy(&o.stdout).trim().to_string()
    };
    // Whether this system lets a process turn randomization off: a child that tries.
    let mut probe = Command::new("true");
    // SAFETY: between fork and exec, only the personality calls (async-signal-safe).
    unsafe {
        probe.pre_exec(|| {
            let persona = libc::personality(0xffff_ffff);
            if persona < 0 || libc::personality(persona as libc::c_ulong | ADDR_NO_RANDOMIZE) < 0 {
                return Err(std::io::Error::last_os_error());
            }
            Ok(())
        });
    }
    let allowed = probe.status().is_ok_and(|s| s.success());
    let system_wide_off = std::fs::read_to_string("/proc/sys/kernel/randomize_va_space")
        .is_ok_and(|s| s.trim() == "0");
    let fixed_or_not = |fixed: bool| if fixed { "fixed" } else { "randomized" };
    assert_eq!(layout(false), fixed_or_not(allowed || system_wide_off));
    assert_eq!(layout(true), fixed_or_not(system_wide_off));
}
