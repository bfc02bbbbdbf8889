//! The stop signals' mask, reset at start.

/// Unblocks SIGTERM and SIGINT for this thread and the threads it starts:
/// the signal mask survives exec, and a parent that blocked them (as `app`
/// does while it waits for listeners) would otherwise leave the stop signal
/// pending forever. Call before the async runtime starts its threads.
pub fn unblock_stop_signals() {
    // SAFETY: sigset_t is plain data initialised by sigemptyset before use;
    // pthread_sigmask only changes this thread's mask.
    unsafe {
        let mut set: libc::sigset_t = std::mem::zeroed();
        libc::sigemptyset(&mut set);
        libc::sigaddset(&mut set, libc::SIGTERM);
        libc::sigaddset(&mut set, libc::SIGINT);
        libc::pthread_sigmask(libc::SIG_UNBLOCK, &set, std::ptr::null_mut());
    }
}
