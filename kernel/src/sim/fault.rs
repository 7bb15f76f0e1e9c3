//! Turning a kernel's bad memory access into an error instead of a crash. One process-wide
//! handler for SIGSEGV, SIGBUS and SIGFPE runs on the alternate signal stack; when the
//! faulting OS thread is inside a simulated block it hands the fault to that kernel module's
//! `sim_fault`, which unwinds to the block's start. Any other fault goes to the handler that
//! was there before (Rust's stack-overflow report, or the default crash).

use super::ffi::FaultHook;
use std::cell::Cell;
use std::sync::OnceLock;

const SIGNALS: [libc::c_int; 3] = [libc::SIGSEGV, libc::SIGBUS, libc::SIGFPE];

/// What the launch's watchdog sends a worker thread still running a block past its limit: the
/// thread's hook unwinds the block as for a fault, with this signal recorded.
pub const WATCHDOG: libc::c_int = libc::SIGUSR2;

thread_local! {
    static HOOK: Cell<Option<FaultHook>> = const { Cell::new(None) };
}

/// The handlers that were installed before ours, by signal.
static PREVIOUS: OnceLock<Vec<(libc::c_int, libc::sigaction)>> = OnceLock::new();

/// The address of the faulting instruction (x86-64's RIP), 0 where unknown.
fn faulting_pc(ctx: *mut libc::c_void) -> u64 {
    #[cfg(target_arch = "x86_64")]
    {
        if ctx.is_null() {
            return 0;
        }
        // SAFETY: the kernel passes a ucontext_t as the third handler argument.
        let uc = unsafe { &*ctx.cast::<libc::ucontext_t>() };
        uc.uc_mcontext.gregs[libc::REG_RIP as usize] as u64
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        let _ = ctx;
        0
    }
}

/// Whether the fault was a write (x86-64: bit 1 of the page-fault error code).
fn is_write(ctx: *mut libc::c_void) -> i32 {
    #[cfg(target_arch = "x86_64")]
    {
        if ctx.is_null() {
            return 0;
        }
        // SAFETY: the kernel passes a ucontext_t as the third handler argument.
        let uc = unsafe { &*ctx.cast::<libc::ucontext_t>() };
        ((uc.uc_mcontext.gregs[libc::REG_ERR as usize] >> 1) & 1) as i32
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        let _ = ctx;
        0
    }
}

extern "C" fn on_fault(sig: libc::c_int, info: *mut libc::siginfo_t, ctx: *mut libc::c_void) {
    if let Some(hook) = HOOK.with(Cell::get) {
        // SAFETY: `info` comes from the kernel; the hook never returns (it longjmps).
        unsafe {
            // A general-protection fault (an address outside the address space, or an
            // aligned vector move off its alignment) has no address and no error code: the
            // access is unknown (-1), not a read.
            let gp = sig == libc::SIGSEGV && (*info).si_code == libc::SI_KERNEL;
            let addr = if gp { 0 } else { (*info).si_addr() as u64 };
            let write = if gp { -1 } else { is_write(ctx) };
            hook(sig, addr, write, faulting_pc(ctx));
        }
    }
    // Not ours: restore the previous handler and return, so the access faults again there.
    if let Some(prev) = PREVIOUS.get()
        && let Some((_, act)) = prev.iter().find(|(s, _)| *s == sig)
    {
        // SAFETY: reinstalls a handler that was installed before.
        unsafe { libc::sigaction(sig, act, std::ptr::null_mut()) };
    }
}

extern "C" fn on_watchdog(sig: libc::c_int, _: *mut libc::siginfo_t, _: *mut libc::c_void) {
    // Outside a block (between two, or leaving) the signal is simply dropped.
    if let Some(hook) = HOOK.with(Cell::get) {
        // SAFETY: the hook unwinds to the block's start, or returns when no block runs.
        unsafe { hook(sig, 0, 0, 0) };
    }
}

/// Installs the handlers once per process.
pub fn install() {
    PREVIOUS.get_or_init(|| {
        // SAFETY: as below; the watchdog's signal has no previous handler worth keeping.
        unsafe {
            let mut act: libc::sigaction = std::mem::zeroed();
            act.sa_sigaction = on_watchdog as *const () as usize;
            act.sa_flags = libc::SA_SIGINFO | libc::SA_ONSTACK;
            libc::sigemptyset(&mut act.sa_mask);
            libc::sigaction(WATCHDOG, &act, std::ptr::null_mut());
        }
        let mut prev = Vec::new();
        for sig in SIGNALS {
            // SAFETY: plain sigaction calls with zeroed, then filled, structures.
            unsafe {
                let mut act: libc::sigaction = std::mem::zeroed();
                act.sa_sigaction = on_fault as *const () as usize;
                act.sa_flags = libc::SA_SIGINFO | libc::SA_ONSTACK | libc::SA_NODEFER;
                libc::sigemptyset(&mut act.sa_mask);
                let mut old: libc::sigaction = std::mem::zeroed();
                libc::sigaction(sig, &act, &mut old);
                prev.push((sig, old));
            }
        }
        prev
    });
}

/// While alive, faults of this OS thread go to `hook`, on an alternate signal stack of its own
/// (fibers' stacks are small and a fault may be their overflow). Its own, not the one Rust's
/// runtime gives each thread: that one is sized for a stack-overflow message (SIGSTKSZ), and
/// where the CPU's signal frame is large (AVX-512's register state takes 3 KB of it) the
/// hook's naming of a fault would overflow it and fault again, reported as a wild write.
pub struct Armed {
    /// Our stack, and the thread's alternate stack before it, given back on drop.
    own_stack: Option<(*mut libc::c_void, usize, libc::stack_t)>,
}

impl Armed {
    pub fn new(hook: FaultHook) -> Self {
        const ALT: usize = 64 * 1024;
        let mut own_stack = None;
        // SAFETY: queries the thread's alternate stack and installs one of our own mapping
        // in its place, unless a signal handler is running on it now.
        unsafe {
            let mut before: libc::stack_t = std::mem::zeroed();
            libc::sigaltstack(std::ptr::null(), &mut before);
            let big_enough = before.ss_flags & libc::SS_DISABLE == 0 && before.ss_size >= ALT;
            if before.ss_flags & libc::SS_ONSTACK == 0 && !big_enough {
                let mem = libc::mmap(
                    std::ptr::null_mut(),
                    ALT,
                    libc::PROT_READ | libc::PROT_WRITE,
                    libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
                    -1,
                    0,
                );
                if mem != libc::MAP_FAILED {
                    let st = libc::stack_t {
                        ss_sp: mem,
                        ss_flags: 0,
                        ss_size: ALT,
                    };
                    libc::sigaltstack(&st, std::ptr::null_mut());
                    own_stack = Some((mem, ALT, before));
                }
            }
        }
        HOOK.with(|h| h.set(Some(hook)));
        Self { own_stack }
    }
}

impl Drop for Armed {
    fn drop(&mut self) {
        HOOK.with(|h| h.set(None));
        if let Some((mem, len, before)) = self.own_stack {
            // SAFETY: puts back the thread's alternate stack from before `new` (or none) and
            // frees the one `new` installed.
            unsafe {
                libc::sigaltstack(&before, std::ptr::null_mut());
                libc::munmap(mem, len);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn alt_stack() -> libc::stack_t {
        // SAFETY: a query of the calling thread's alternate stack.
        unsafe {
            let mut st: libc::stack_t = std::mem::zeroed();
            libc::sigaltstack(std::ptr::null(), &mut st);
            st
        }
    }

    unsafe extern "C" fn ignore(_: i32, _: u64, _: i32, _: u64) {}

    /// A thread Rust started has Rust's small alternate stack; armed, it has 64 KB of ours
    /// (a fault named on an AVX-512 machine overflowed Rust's), and Rust's again after.
    #[test]
    fn armed_threads_handle_faults_on_a_stack_of_their_own() {
        std::thread::spawn(|| {
            let rusts = alt_stack();
            let armed = Armed::new(ignore);
            let ours = alt_stack();
            assert!(ours.ss_size >= 64 * 1024, "{}", ours.ss_size);
            assert_ne!(ours.ss_sp, rusts.ss_sp);
            drop(armed);
            let after = alt_stack();
            assert_eq!(
                (after.ss_sp, after.ss_size, after.ss_flags),
                (rusts.ss_sp, rusts.ss_size, rusts.ss_flags)
            );
        })
        .join()
        .unwrap();
    }
}
