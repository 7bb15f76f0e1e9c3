//! The source line of the access a simulator failure stopped at. The runtime's message
//! carries `{{site 0xOFFSET}}`, the access's offset in its module (`fail` in sim_runtime.h);
//! binutils' `addr2line` reads the module's line tables (it is built with `-g1`) for the file
//! and line, which the `#line` directives of the kernel's source make the kernel file's.

use std::path::Path;
use std::process::Command;

/// What starts a site in a message (the runtime writes it after the message, before the
/// thread's name).
const TOKEN: &str = " {{site 0x";

/// `message` with each site token replaced by "; this thread's access is at FILE:LINE", or
/// dropped where no line is known (no `addr2line`, or code without a line).
pub fn name_lines(message: &str, module: &Path) -> String {
    let mut out = String::with_capacity(message.len());
    let mut rest = message;
    while let Some(at) = rest.find(TOKEN) {
        out.push_str(&rest[..at]);
        let after = &rest[at + TOKEN.len()..];
        let Some(end) = after.find("}}") else {
            rest = after;
            break;
        };
        let line = u64::from_str_radix(&after[..end], 16)
            .ok()
            .and_then(|offset| line_of(module, offset));
        if let Some(line) = line {
            out.push_str(&format!("; this thread's access is at {line}"));
        }
        rest = &after[end + 2..];
    }
    out.push_str(rest);
    out
}

/// `file.cu:37` for the first site token of `message`, when that line is in `file` (a fault's
/// instruction may be the runtime's, in a header of the simulator).
pub fn line_in(message: &str, module: &Path, file: &str) -> Option<String> {
    let after = &message[message.find(TOKEN)? + TOKEN.len()..];
    let offset = u64::from_str_radix(&after[..after.find("}}")?], 16).ok()?;
    let line = line_of(module, offset)?;
    let (at, _) = line.rsplit_once(':')?;
    (at == file || at.ends_with(&format!("/{file}"))).then_some(line)
}

/// `file.cu:37` for the code at `offset` of `module`.
fn line_of(module: &Path, offset: u64) -> Option<String> {
    let out = Command::new("addr2line")
        .arg("-e")
        .arg(module)
        .arg(format!("0x{offset:x}"))
        .output()
        .ok()?;
    let text = String::from_utf8_lossy(&out.stdout);
    let line = text.lines().next()?.split(" (discriminator").next()?.trim();
    let known = !line.starts_with("??") && !line.ends_with(":0") && !line.ends_with(":?");
    // addr2line puts the compiler's working folder before a relative `#line` name, and the
    // module records that folder as `.` (`WORKING_FOLDER_MAP` in compile.rs): the name as the
    // source gives it.
    let mut line = line;
    while let Some(rest) = line.strip_prefix("./") {
        line = rest;
    }
    known.then(|| line.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_token_without_a_line_is_dropped_and_the_rest_kept() {
        let m =
            "k: race on shared memory: ... order) {{site 0x10}} (thread (1,0,0) of block (0,0,0))";
        assert_eq!(
            name_lines(m, Path::new("/nonexistent.so")),
            "k: race on shared memory: ... order) (thread (1,0,0) of block (0,0,0))"
        );
        assert_eq!(name_lines("no token", Path::new("/x")), "no token");
    }
}
