//! Whether this process's memory lies at the same addresses on every run. ptxas, inside NVRTC,
//! compiles some programs differently depending on where its memory lies: with the addresses
//! randomized (Linux's default), fusion's five linear-layer rungs compiled afresh in 70
//! processes came out in a second form in 6 of them (`linear_fused` on sm_90 at 127 registers
//! instead of 125, `linear_fused_warptile` on sm_80 at 121 instead of 119), and a hot loop of
//! GEMM rung 06 or 07 with one more LDS; with randomization off, 70 of 70 gave the common form,
//! with or without other compiles running beside them. The SASS, registers and occupancy the
//! lab reports and its walkthroughs quote must be what the source gives, so the `harness`
//! binary starts itself again with randomization off ([`start_fixed`]) and the workspace's
//! cargo runner (`tools/fixed-layout`) runs the tests and benchmarks the same way. Where the
//! system forbids it (a container's seccomp filter may), the process goes on randomized and
//! `harness doctor` says so.

/// The personality flag that turns address-space randomization off for the next program.
#[cfg(target_os = "linux")]
const ADDR_NO_RANDOMIZE: libc::c_ulong = 0x0040000;

/// Set on the program started again, so that it never tries twice (and by `tools/gpu-check.sh`,
/// which starts every harness with the layout it could set).
const STARTED_AGAIN: &str = "KERNEL_LAB_LAYOUT_TRIED";

/// How this process's addresses are laid out.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Layout {
    /// The same on every run: randomization off for this process, or for the whole system.
    Fixed,
    /// Randomized on every run.
    Randomized,
}

/// This process's layout.
pub fn current() -> Layout {
    #[cfg(target_os = "linux")]
    {
        // SAFETY: 0xffffffff queries the persona without changing it.
        let persona = unsafe { libc::personality(0xffff_ffff) };
        let off_here = persona >= 0 && (persona as libc::c_ulong) & ADDR_NO_RANDOMIZE != 0;
        let off_everywhere = std::fs::read_to_string("/proc/sys/kernel/randomize_va_space")
            .is_ok_and(|s| s.trim() == "0");
        if off_here || off_everywhere {
            return Layout::Fixed;
        }
    }
    Layout::Randomized
}

/// Starts this program again, with the same arguments and environment, with address-space
/// randomization off, and never returns if it could. Returns where the layout is already
/// fixed, where this program was already started again, under a CUDA tool (compute-sanitizer
/// or Nsight Compute, which attach through `CUDA_INJECTION64_PATH` to the process they start:
/// it is left as it is), or with why it could not (the system forbids the change, or the
/// executable cannot be started): the caller goes on as it is.
pub fn start_fixed() -> Result<(), String> {
    if current() == Layout::Fixed
        || std::env::var_os(STARTED_AGAIN).is_some()
        || std::env::var_os("CUDA_INJECTION64_PATH").is_some()
    {
        return Ok(());
    }
    exec_fixed()
}

#[cfg(target_os = "linux")]
fn exec_fixed() -> Result<(), String> {
    use std::os::unix::process::CommandExt;
    // SAFETY: reads the persona, then sets it with one more flag; only the next exec reads it.
    let persona = unsafe { libc::personality(0xffff_ffff) };
    if persona < 0 || unsafe { libc::personality(persona as libc::c_ulong | ADDR_NO_RANDOMIZE) } < 0
    {
        return Err(format!(
            "the system does not let a process turn address randomization off ({})",
            std::io::Error::last_os_error()
        ));
    }
    let mut args = std::env::args_os();
    let argv0 = args.next().unwrap_or_default();
    let err = std::process::Command::new("/proc/self/exe")
        .arg0(argv0)
        .args(args)
        .env(STARTED_AGAIN, "1")
        .exec();
    // Still this program: the persona as it was, so that its children are as before.
    // SAFETY: restores the value read above.
    unsafe { libc::personality(persona as libc::c_ulong) };
    Err(format!("cannot start itself again: {err}"))
}

#[cfg(not(target_os = "linux"))]
fn exec_fixed() -> Result<(), String> {
    Err("address randomization is turned off on Linux only".into())
}

/// One line for `harness doctor`: the layout and what it means for NVRTC's output.
pub fn describe() -> String {
    match current() {
        Layout::Fixed => "fixed (address randomization off: NVRTC compiles a program to the same \
                          code in every process)"
            .into(),
        Layout::Randomized => "randomized (this system does not let the harness turn address \
                               randomization off: now and then NVRTC compiles a program to a \
                               register or an instruction more than in another process)"
            .into(),
    }
}
