//! Logging to stderr at the level of `--log` (or `APP_LOG`).
//!
//! The level is the one piece of global state: it is set once at start-up,
//! before any task runs, and read everywhere, so passing it around would only
//! add noise.

use std::sync::atomic::{AtomicU8, Ordering};
use std::time::SystemTime;

/// Level 0: nothing is logged.
pub const SILENT: u8 = 0;
/// Level 1: errors.
pub const ERROR: u8 = 1;
/// Level 2 (the default): warnings.
pub const WARN: u8 = 2;
/// Level 3: start-up, shutdown, subscribers coming and going.
pub const INFO: u8 = 3;
/// Level 4: every request.
pub const DEBUG: u8 = 4;
/// Level 5: every event published.
pub const TRACE: u8 = 5;

static LEVEL: AtomicU8 = AtomicU8::new(WARN);

/// Sets the level (0..5).
pub fn set_level(level: u8) {
    LEVEL.store(level, Ordering::Relaxed);
}

/// Whether messages of `level` are written.
pub fn enabled(level: u8) -> bool {
    level != SILENT && level <= LEVEL.load(Ordering::Relaxed)
}

/// Writes one log line; use the [`log!`](crate::log!) macro instead.
pub fn write(level: u8, message: std::fmt::Arguments<'_>) {
    let label = match level {
        ERROR => "ERROR",
        WARN => "WARN",
        INFO => "INFO",
        DEBUG => "DEBUG",
        _ => "TRACE",
    };
    let now = crate::event::rfc3339_millis(SystemTime::now());
    eprintln!("{now} {label} app-event-time: {message}");
}

/// `log!(level, "format", args…)`: logs when `level` is enabled.
#[macro_export]
macro_rules! log {
    ($level:expr, $($arg:tt)*) => {
        if $crate::log::enabled($level) {
            $crate::log::write($level, format_args!($($arg)*));
        }
    };
}
