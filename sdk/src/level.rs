//! Log levels and formats, their names and how `--log`, `APP_LOG` and
//! `APP_LOG_FORMAT` are parsed: shared by [`context`](crate::context)
//! (whose document carries them) and [`log`](crate::log) (which re-exports
//! all of it), so that neither depends on the other for them.

use std::fmt;
use std::str::FromStr;

/// How much a plugin logs: `app --log N`, passed as `APP_LOG` and the
/// context's `log`. On the wire it is the number `0`..`5`; the levels are
/// ordered, so `level >= Level::Debug` asks "at least debug".
///
/// ```
/// use app_plugin::log::Level;
/// assert_eq!("debug".parse::<Level>(), Ok(Level::Debug));
/// assert_eq!(Level::from_number(9), Level::Trace);
/// assert_eq!(u8::from(Level::Warn), 2);
/// assert!(Level::Trace > Level::Info && Level::default() == Level::Warn);
/// assert_eq!(Level::Warn.to_string(), "warn");
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub enum Level {
    /// 0: nothing is logged.
    Off = 0,
    /// 1: errors.
    Error = 1,
    /// 2 (the default): warnings.
    #[default]
    Warn = 2,
    /// 3: start-up, shutdown and other rare events.
    Info = 3,
    /// 4: every request.
    Debug = 4,
    /// 5: every event.
    Trace = 5,
}

/// Level 0: nothing is logged.
pub const OFF: Level = Level::Off;
/// Level 1: errors.
pub const ERROR: Level = Level::Error;
/// Level 2 (the default): warnings.
pub const WARN: Level = Level::Warn;
/// Level 3: start-up, shutdown and other rare events.
pub const INFO: Level = Level::Info;
/// Level 4: every request.
pub const DEBUG: Level = Level::Debug;
/// Level 5: every event.
pub const TRACE: Level = Level::Trace;

const ALL: [Level; 6] = [OFF, ERROR, WARN, INFO, DEBUG, TRACE];
pub(crate) const NAMES: [&str; 6] = ["off", "error", "warn", "info", "debug", "trace"];

impl Level {
    /// The level of number `n`; above 5 is trace (the most there is).
    ///
    /// ```
    /// use app_plugin::log::Level;
    /// assert_eq!(Level::from_number(0), Level::Off);
    /// assert_eq!(Level::from_number(6), Level::Trace);
    /// ```
    pub fn from_number(n: u8) -> Level {
        ALL[usize::from(n.min(5))]
    }

    /// Its name, as JSON log lines write it: `warn` for 2.
    ///
    /// ```
    /// assert_eq!(app_plugin::log::Level::Warn.name(), "warn");
    /// ```
    pub fn name(self) -> &'static str {
        NAMES[self as usize]
    }
}

impl From<Level> for u8 {
    fn from(level: Level) -> u8 {
        level as u8
    }
}

impl fmt::Display for Level {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for Level {
    type Err = LevelError;

    fn from_str(text: &str) -> Result<Level, LevelError> {
        parse_level(text)
    }
}

/// The number, as the context document and `APP_LOG` carry it.
impl serde::Serialize for Level {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_u8(u8::from(*self))
    }
}

/// A number (above 5 is trace) or a level name.
impl<'de> serde::Deserialize<'de> for Level {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Level, D::Error> {
        #[derive(serde::Deserialize)]
        #[serde(untagged)]
        enum Wire {
            Number(u64),
            Name(String),
        }
        match Wire::deserialize(d)? {
            Wire::Number(n) => Ok(Level::from_number(u8::try_from(n).unwrap_or(u8::MAX))),
            Wire::Name(name) => parse_level(&name).map_err(serde::de::Error::custom),
        }
    }
}

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
pub fn parse_level(text: &str) -> Result<Level, LevelError> {
    let word = text.trim().to_ascii_lowercase();
    if let Ok(n) = word.parse::<u8>() {
        if n <= 5 {
            return Ok(Level::from_number(n));
        }
    }
    match word.as_str() {
        "warning" => Ok(WARN),
        "silent" | "none" => Ok(OFF),
        _ => NAMES
            .iter()
            .position(|n| *n == word)
            .map(|i| ALL[i])
            .ok_or_else(|| LevelError(text.to_string())),
    }
}

/// The name of a level, as the JSON lines write it (`warn` for 2):
/// [`Level::name`].
///
/// ```
/// assert_eq!(app_plugin::log::level_name(app_plugin::log::WARN), "warn");
/// ```
pub fn level_name(level: Level) -> &'static str {
    level.name()
}

/// How log lines look: `APP_LOG_FORMAT`.
///
/// ```
/// use app_plugin::log::Format;
/// assert_eq!("json".parse::<Format>(), Ok(Format::Json));
/// assert!("xml".parse::<Format>().is_err());
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
#[non_exhaustive]
pub enum Format {
    /// `app-NAME: warning: message`.
    #[default]
    Text,
    /// One JSON object per line.
    Json,
}

/// A format that is neither `text` nor `json`.
///
/// ```
/// let err = "xml".parse::<app_plugin::log::Format>().unwrap_err();
/// assert!(err.to_string().contains("use text or json"));
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FormatError(String);

impl fmt::Display for FormatError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "invalid log format '{}'; use text or json", self.0)
    }
}

impl std::error::Error for FormatError {}

impl FromStr for Format {
    type Err = FormatError;

    fn from_str(s: &str) -> Result<Format, FormatError> {
        match s.trim().to_ascii_lowercase().as_str() {
            "text" => Ok(Format::Text),
            "json" => Ok(Format::Json),
            _ => Err(FormatError(s.to_string())),
        }
    }
}

impl Format {
    /// Its name in `APP_LOG_FORMAT` and the context document.
    ///
    /// ```
    /// assert_eq!(app_plugin::log::Format::Json.as_str(), "json");
    /// ```
    pub fn as_str(self) -> &'static str {
        match self {
            Format::Text => "text",
            Format::Json => "json",
        }
    }
}

impl fmt::Display for Format {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl serde::Serialize for Format {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.as_str())
    }
}

/// A format this SDK does not know (a newer `app`'s) is text, as a plugin
/// would write it anyway: the context stays readable.
impl<'de> serde::Deserialize<'de> for Format {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Format, D::Error> {
        let name = String::deserialize(d)?;
        Ok(name.parse().unwrap_or_default())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_level_name_and_number_parses() {
        for (n, name) in NAMES.iter().enumerate() {
            let level = ALL[n];
            assert_eq!(parse_level(name), Ok(level));
            assert_eq!(parse_level(&n.to_string()), Ok(level));
            assert_eq!(parse_level(&name.to_uppercase()), Ok(level));
            assert_eq!(u8::from(level) as usize, n);
        }
        for bad in ["6", "-1", "", "verbose", "2.0"] {
            assert!(parse_level(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn formats_read_leniently() {
        let read = |json: &str| serde_json::from_str::<Format>(json).unwrap();
        assert_eq!(read("\"json\""), Format::Json);
        assert_eq!(read("\"logfmt\""), Format::Text);
        assert_eq!(serde_json::to_string(&Format::Json).unwrap(), "\"json\"");
    }

    #[test]
    fn the_wire_form_is_the_number_and_names_are_read_too() {
        assert_eq!(serde_json::to_string(&Level::Info).unwrap(), "3");
        let read = |json: &str| serde_json::from_str::<Level>(json);
        assert_eq!(read("4").unwrap(), Level::Debug);
        assert_eq!(read("300").unwrap(), Level::Trace);
        assert_eq!(read("\"warning\"").unwrap(), Level::Warn);
        assert!(read("\"loud\"").is_err() && read("-1").is_err());
    }
}
