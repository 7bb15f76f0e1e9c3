//! The source line of the access a simulator failure stopped at. The runtime's message
//! carries `{{site 0xOFFSET}}`, the access's offset in its module (`fail` in sim_runtime.h);
//! binutils' `addr2line` reads the module's line tables (it is built with `-g1`) for the file
//! and line, which the `#line` directives of the kernel's source make the kernel file's.

use std::path::{Path, PathBuf};
use std::process::Command;

use super::compile;

/// What starts a site in a message (the runtime writes it after the message, before the
/// thread's name).
const TOKEN: &str = " {{site 0x";
/// What starts the site of the other access of a race, where the message names that thread.
const OTHER: &str = " {{other 0x";

/// The kernel's own code: its file, and the headers of its own, beside it or in the folders
/// its `#include "..."` searches (a user's `include=` folders).
#[derive(Clone, Copy)]
pub struct Own<'a> {
    pub file: &'a str,
    pub dirs: &'a [PathBuf],
}

/// `message` with each site token replaced by "; this thread's access is at FILE:LINE" (and
/// the other access of a race by " (at FILE:LINE)" after the thread that made it), or
/// dropped where no line is known (no `addr2line`, or code without a line). The line is the
/// kernel's own ([`own_site`]) where the access is in a function of the simulator or the lab
/// inlined into it, and the innermost line known otherwise.
pub fn name_lines(message: &str, module: &Path, own: Own) -> String {
    let message = replace_sites(message, OTHER, module, own, |line| format!(" (at {line})"));
    replace_sites(&message, TOKEN, module, own, |line| {
        format!("; this thread's access is at {line}")
    })
}

/// `message` with each site that starts with `token` replaced by `words` of its line, or
/// dropped where no line is known.
fn replace_sites(
    message: &str,
    token: &str,
    module: &Path,
    own: Own,
    words: impl Fn(&str) -> String,
) -> String {
    let mut out = String::with_capacity(message.len());
    let mut rest = message;
    while let Some(at) = rest.find(token) {
        out.push_str(&rest[..at]);
        let after = &rest[at + token.len()..];
        let Some(end) = after.find("}}") else {
            rest = after;
            break;
        };
        let frames = u64::from_str_radix(&after[..end], 16)
            .map(|offset| frames(module, offset))
            .unwrap_or_default();
        if let Some(line) = own_site(&frames, own).or(frames.first().cloned()) {
            out.push_str(&words(&line));
        }
        rest = &after[end + 2..];
    }
    out.push_str(rest);
    out
}

/// `file.cu:37`, the line of the instruction the simulator was emulating when a fault
/// stopped it (`{{at FILE:LINE}}`, written by the runtime's fault handler), when that line is
/// the kernel's own: the fault itself lies in the runtime (a `cp.async`'s copy).
pub fn emulated_at(message: &str, own: Own) -> Option<String> {
    let after = &message[message.find(" {{at ")? + " {{at ".len()..];
    let at = &after[..after.find("}}")?];
    own_site(&[at.to_string()], own)
}

/// `file.cu:37` for the first site token of `message`, when the code is the kernel's own
/// ([`own_site`]): a fault's instruction may be the simulator's runtime.
pub fn line_in(message: &str, module: &Path, own: Own) -> Option<String> {
    let after = &message[message.find(TOKEN)? + TOKEN.len()..];
    let offset = u64::from_str_radix(&after[..after.find("}}")?], 16).ok()?;
    own_site(&frames(module, offset), own)
}

/// The first of `frames` in the kernel's own code ([`Own`]): not a header the simulator or
/// the lab provides, nor a system header (a name outside the file's folder and its include
/// folders). A header's line is followed by the line of the file that calls it:
/// `util.cuh:3, called at k.cu:7`.
fn own_site(frames: &[String], own: Own) -> Option<String> {
    let file = own.file;
    let folder = Path::new(file).parent().unwrap_or(Path::new(""));
    let in_file = |at: &str| at == file || at.ends_with(&format!("/{file}"));
    let under = |at: &str, dir: &Path| {
        Path::new(at).is_absolute() == dir.is_absolute() && Path::new(at).starts_with(dir)
    };
    let own = |at: &str| {
        in_file(at)
            || (!compile::provided_header(at)
                && std::iter::once(folder)
                    .chain(own.dirs.iter().map(PathBuf::as_path))
                    .any(|dir| under(at, dir)))
    };
    fn at(frame: &str) -> &str {
        frame.rsplit_once(':').map_or("", |(at, _)| at)
    }
    let first = frames.iter().find(|f| own(at(f)))?;
    // The first line of `file` is the caller's when `first` is not in it.
    Some(match frames.iter().find(|f| in_file(at(f))) {
        Some(caller) if caller != first => format!("{first}, called at {caller}"),
        _ => first.clone(),
    })
}

/// `file.cu:37` for the code at `offset` of `module` and each function it is inlined into,
/// innermost first; none where no line is known.
fn frames(module: &Path, offset: u64) -> Vec<String> {
    let Ok(out) = Command::new("addr2line")
        .args(["-i", "-e"])
        .arg(module)
        .arg(format!("0x{offset:x}"))
        .output()
    else {
        return Vec::new();
    };
    let text = String::from_utf8_lossy(&out.stdout);
    text.lines()
        .filter_map(|line| {
            let line = line.split(" (discriminator").next()?.trim();
            let known = !line.starts_with("??") && !line.ends_with(":0") && !line.ends_with(":?");
            // addr2line puts the compiler's working folder before a relative `#line` name,
            // and the module records that folder as `.` (`WORKING_FOLDER_MAP` in
            // compile.rs): the name as the source gives it.
            let mut line = line;
            while let Some(rest) = line.strip_prefix("./") {
                line = rest;
            }
            known.then(|| line.to_string())
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_token_without_a_line_is_dropped_and_the_rest_kept() {
        let m =
            "k: race on shared memory: ... order) {{site 0x10}} (thread (1,0,0) of block (0,0,0))";
        assert_eq!(
            name_lines(m, Path::new("/nonexistent.so"), own("k.cu")),
            "k: race on shared memory: ... order) (thread (1,0,0) of block (0,0,0))"
        );
        assert_eq!(
            name_lines("no token", Path::new("/x"), own("k.cu")),
            "no token"
        );
    }

    #[test]
    fn the_site_is_the_first_line_of_the_kernels_own_code() {
        let site = |frames: &[&str], file| {
            let frames: Vec<String> = frames.iter().map(|f| f.to_string()).collect();
            own_site(&frames, own(file))
        };
        let stl = "/usr/include/c++/12/bits/stl_algobase.h:238";
        // The lab's and the simulator's headers, and system ones, are passed over.
        assert_eq!(
            site(&["sim_mma.h:90", "lab/ptx.h:199", "ex/k.cu:12"], "ex/k.cu"),
            Some("ex/k.cu:12".into())
        );
        assert_eq!(
            site(&[stl, "ex/k.cu:12"], "ex/k.cu"),
            Some("ex/k.cu:12".into())
        );
        assert_eq!(
            site(&["mma.h:40", "lab/ptx.h:199", "k.cu:12"], "k.cu"),
            Some("k.cu:12".into())
        );
        // A header of its own, with the kernel's line that calls it.
        assert_eq!(
            site(&["ex/inc/util.cuh:3", "ex/k.cu:7"], "ex/k.cu"),
            Some("ex/inc/util.cuh:3, called at ex/k.cu:7".into())
        );
        assert_eq!(
            site(&["/p/util.cuh:3", "/p/k.cu:7"], "/p/k.cu"),
            Some("/p/util.cuh:3, called at /p/k.cu:7".into())
        );
        // Outside the kernel's folder, or none of its own.
        assert_eq!(site(&["/q/util.cuh:3"], "/p/k.cu"), None);
        assert_eq!(site(&["sim_runtime.h:700", stl], "k.cu"), None);
        // A header found through an include folder elsewhere is the kernel's own.
        let dirs = [PathBuf::from("/q"), PathBuf::from("inc")];
        let with_dirs = |frames: &[&str]| {
            let frames: Vec<String> = frames.iter().map(|f| f.to_string()).collect();
            own_site(
                &frames,
                Own {
                    file: "/p/k.cu",
                    dirs: &dirs,
                },
            )
        };
        assert_eq!(
            with_dirs(&["/q/util.cuh:3", "/p/k.cu:7"]),
            Some("/q/util.cuh:3, called at /p/k.cu:7".into())
        );
        assert_eq!(with_dirs(&["inc/u.h:5"]), Some("inc/u.h:5".into()));
        assert_eq!(with_dirs(&[stl]), None);
    }

    fn own(file: &str) -> Own<'_> {
        Own { file, dirs: &[] }
    }
}
