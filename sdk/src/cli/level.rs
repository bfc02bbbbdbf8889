//! [`LogLevel`]: clap's value parser for `--log`.

use ::clap::builder::{PossibleValue, TypedValueParser};
use ::clap::{Arg, Command};

use crate::log::Level;

/// clap's value parser for a `--log` flag: `0`..`5` or a level name
/// ([`crate::log::parse_level`]). Completion offers the numbers, each with
/// its name.
///
/// With clap's derive: `#[arg(long, value_parser = app_plugin::cli::LogLevel)] log: Option<Level>`.
///
/// ```
/// use app_plugin::log::Level;
/// let cmd = clap::Command::new("x")
///     .arg(clap::Arg::new("log").long("log").value_parser(app_plugin::cli::LogLevel));
/// let level = |args: &[&str]| cmd.clone().try_get_matches_from(args).map(|m| m.get_one::<Level>("log").copied());
/// assert_eq!(level(&["x", "--log", "debug"]).unwrap(), Some(Level::Debug));
/// assert_eq!(level(&["x", "--log=2"]).unwrap(), Some(Level::Warn));
/// assert!(level(&["x", "--log", "loud"]).is_err());
/// ```
#[derive(Debug, Clone, Copy)]
pub struct LogLevel;

impl TypedValueParser for LogLevel {
    type Value = Level;

    fn parse_ref(
        &self,
        cmd: &Command,
        arg: Option<&Arg>,
        value: &std::ffi::OsStr,
    ) -> Result<Level, ::clap::Error> {
        let text = value.to_string_lossy();
        crate::log::parse_level(&text).map_err(|e| {
            let flag = arg
                .and_then(Arg::get_long)
                .map_or_else(String::new, |l| format!(" for '--{l}'"));
            ::clap::Error::raw(
                ::clap::error::ErrorKind::InvalidValue,
                format!("invalid value '{text}'{flag}: {e}\n"),
            )
            .with_cmd(cmd)
        })
    }

    fn possible_values(&self) -> Option<Box<dyn Iterator<Item = PossibleValue> + '_>> {
        let levels = [
            ("0", "silent"),
            ("1", "errors"),
            ("2", "warnings"),
            ("3", "info"),
            ("4", "debug"),
            ("5", "trace"),
        ];
        Some(Box::new(
            levels
                .into_iter()
                .map(|(n, help)| PossibleValue::new(n).help(help)),
        ))
    }
}
