//! Log levels, their names and how `--log` and `APP_LOG` are parsed: shared
//! by [`context`](crate::context) (which reads `APP_LOG`) and
//! [`log`](crate::log) (which re-exports all of it), so that neither
//! depends on the other for them.

use std::fmt;

/// Level 0: nothing is logged.
pub const OFF: u8 = 0;
/// Level 1: errors.
pub const ERROR: u8 = 1;
/// Level 2 (the default): warnings.
pub const WARN: u8 = 2;
/// Level 3: start-up, shutdown and other rare events.
pub const INFO: u8 = 3;
/// Level 4: every request.
pub const DEBUG: u8 = 4;
/// Level 5: every event.
pub const TRACE: u8 = 5;

pub(crate) const NAMES: [&str; 6] = ["off", "error", "warn", "info", "debug", "trace"];

/// A log level that is neither `0`..`5` nor a level name.
///
/// ```
/// let err = app_plugin::log::parse_level("loud").unwrap_err();
/// assert_eq!(err.to_string(), "invalid log level 'loud'; use 0..5 or off, error, warn, info, debug, trace");
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LevelError(String);

impl fmt::Display for LevelError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "invalid log level '{}'; use 0..5 or off, error, warn, info, debug, trace",
            self.0
        )
    }
}

impl std::error::Error for LevelError {}

/// Parses a level as `--log` and `APP_LOG` take it: `0`..`5`, or a name
/// (`off`, `error`, `warn` or `warning`, `info`, `debug`, `trace`; any case).
/// It fits clap's `value_parser` as is.
///
/// ```
/// use app_plugin::log::{parse_level, DEBUG, OFF, WARN};
/// assert_eq!(parse_level("4"), Ok(DEBUG));
/// assert_eq!(parse_level("debug"), Ok(DEBUG));
/// assert_eq!(parse_level("Warning"), Ok(WARN));
/// assert_eq!(parse_level("off"), Ok(OFF));
/// assert!(parse_level("6").is_err() && parse_level("").is_err());
/// ```
pub fn parse_level(text: &str) -> Result<u8, LevelError> {
    let word = text.trim().to_ascii_lowercase();
    if let Ok(n) = word.parse::<u8>() {
        if n <= TRACE {
            return Ok(n);
        }
    }
    match word.as_str() {
        "warning" => Ok(WARN),
        "silent" | "none" => Ok(OFF),
        _ => NAMES
            .iter()
            .position(|n| *n == word)
            .map(|i| i as u8)
            .ok_or_else(|| LevelError(text.to_string())),
    }
}

/// The name of a level, as the JSON lines write it (`warn` for 2).
///
/// ```
/// assert_eq!(app_plugin::log::level_name(app_plugin::log::WARN), "warn");
/// assert_eq!(app_plugin::log::level_name(9), "trace");
/// ```
pub fn level_name(level: u8) -> &'static str {
    NAMES[usize::from(level.min(TRACE))]
}
