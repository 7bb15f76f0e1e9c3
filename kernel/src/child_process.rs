//! What ended a child process, in words.

/// A signal by number and name: `signal 11 (SIGSEGV, a segmentation fault)`.
pub fn signal_name(sig: i32) -> String {
    let name = match sig {
        libc::SIGSEGV => "SIGSEGV, a segmentation fault",
        libc::SIGBUS => "SIGBUS, a bus error",
        libc::SIGABRT => "SIGABRT, aborted",
        libc::SIGFPE => "SIGFPE, an arithmetic fault",
        libc::SIGILL => "SIGILL, an illegal instruction",
        libc::SIGKILL => "SIGKILL, killed",
        _ => "",
    };
    match name {
        "" => format!("signal {sig}"),
        n => format!("signal {sig} ({n})"),
    }
}
