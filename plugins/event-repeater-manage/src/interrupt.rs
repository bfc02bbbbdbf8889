//! Signals that ask a long-running command (`status --watch`, `top`) to
//! stop: the handler only sets a flag, which the command checks between
//! redraws, so that it can leave the terminal tidy before exiting.

use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

/// Set by the handler; read by [`requested`].
static REQUESTED: AtomicBool = AtomicBool::new(false);

extern "C" fn on_signal(_: libc::c_int) {
    REQUESTED.store(true, Ordering::SeqCst);
}

/// Catches `signals` (SIGINT, SIGTERM, …): from now on they set the flag
/// instead of killing the process.
pub fn catch(signals: &[libc::c_int]) {
    for &signal in signals {
        // SAFETY: the handler only stores to an atomic, which is
        // async-signal-safe.
        unsafe {
            libc::signal(
                signal,
                on_signal as extern "C" fn(libc::c_int) as libc::sighandler_t,
            );
        }
    }
}

/// Whether a caught signal came.
pub fn requested() -> bool {
    REQUESTED.load(Ordering::SeqCst)
}

/// Sleeps `d`, waking early for a caught signal; false when one came.
pub fn pause(d: Duration) -> bool {
    let end = Instant::now() + d;
    while Instant::now() < end {
        if requested() {
            return false;
        }
        std::thread::sleep(Duration::from_millis(50).min(end - Instant::now()));
    }
    !requested()
}
