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
