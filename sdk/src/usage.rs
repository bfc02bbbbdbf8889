//! A clap usage error as one line for a plugin's log: clap renders several
//! paragraphs (the error with its details, a tip, the usage), and the first
//! line alone loses the point ("the following required arguments were not
//! provided:" without the argument; "invalid value '3'" without the valid
//! ones). This keeps the whole first paragraph, joined into one line.
//!
//! [`parse`] is the whole glue between clap and a plugin's exit code:
//! `--help` and `--version` on stdout with 0, a usage error as one log
//! line with 2, the command alone (a subcommand missing) as clap's usage
//! on stderr with 2.

use std::ffi::OsString;

/// The exit code of a usage error (as every plugin's: see the protocol).
pub const USAGE: u8 = 2;

/// What a command line became instead of the plugin's arguments.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Early {
    /// `--help` or `--version`: clap's text, for stdout; exit 0.
    Info(String),
    /// The command alone, without its subcommand: clap's usage, for
    /// stderr as it is; exit [`USAGE`].
    Missing(String),
    /// Any other error, as [`one_line`] makes it; exit [`USAGE`].
    Usage(String),
}

impl Early {
    /// What clap's error `e` is to a plugin.
    ///
    /// ```
    /// use app_plugin::usage::Early;
    /// let cmd = || clap::Command::new("x").version("1").arg(clap::Arg::new("n").long("n"));
    /// let help = cmd().try_get_matches_from(["x", "--help"]).unwrap_err();
    /// assert!(matches!(Early::from_clap(&help), Early::Info(_)));
    /// let bad = cmd().try_get_matches_from(["x", "--m"]).unwrap_err();
    /// let early = Early::from_clap(&bad);
    /// assert_eq!(early.exit_code(), 2);
    /// assert!(matches!(early, Early::Usage(line) if line.starts_with("unexpected argument '--m'")));
    /// ```
    pub fn from_clap(e: &clap::Error) -> Early {
        use clap::error::ErrorKind;
        match e.kind() {
            ErrorKind::DisplayHelpOnMissingArgumentOrSubcommand => {
                Early::Missing(e.render().to_string())
            }
            _ if !e.use_stderr() => Early::Info(e.render().to_string()),
            _ => Early::Usage(one_line(e)),
        }
    }

    /// 0 for [`Early::Info`], else [`USAGE`].
    pub fn exit_code(&self) -> u8 {
        match self {
            Early::Info(_) => 0,
            Early::Missing(_) | Early::Usage(_) => USAGE,
        }
    }

    /// Says it as plugins do: the information on stdout, the usage on
    /// stderr, a usage error through [`crate::log::fatal`] with `; see
    /// {help}`; returns the exit code.
    pub fn report(&self, help: &str) -> u8 {
        use std::io::Write;
        match self {
            Early::Info(text) => {
                let _ = std::io::stdout().write_all(text.as_bytes());
            }
            Early::Missing(text) => {
                let _ = std::io::stderr().write_all(text.as_bytes());
            }
            Early::Usage(line) => crate::log::fatal(format_args!("{line}; see {help}")),
        }
        self.exit_code()
    }
}

/// Parses `argv` (the program name first) into `P`; anything else is
/// reported ([`Early::report`], pointing at `help`) and its exit code
/// returned.
///
/// ```
/// #[derive(clap::Parser)]
/// struct Args {
///     #[arg(long)]
///     n: u8,
/// }
/// let args: Args = app_plugin::usage::parse(["x", "--n", "7"], "x --help").unwrap();
/// assert_eq!(args.n, 7);
/// let code = app_plugin::usage::parse::<Args>(["x", "--n", "many"], "x --help").err();
/// assert_eq!(code, Some(2));
/// ```
pub fn parse<P: clap::Parser>(
    argv: impl IntoIterator<Item = impl Into<OsString> + Clone>,
    help: &str,
) -> Result<P, u8> {
    P::try_parse_from(argv).map_err(|e| Early::from_clap(&e).report(help))
}

/// The first paragraph of clap's message, on one line, without clap's
/// `error: ` tag (the logger adds the program's name and level).
///
/// ```
/// let cmd = clap::Command::new("x")
///     .arg(clap::Arg::new("cert").long("cert").requires("key"))
///     .arg(clap::Arg::new("key").long("key"));
/// let e = cmd.try_get_matches_from(["x", "--cert", "c.pem"]).unwrap_err();
/// let line = app_plugin::usage::one_line(&e);
/// assert!(line.starts_with("the following required arguments were not provided: --key"), "{line}");
/// ```
pub fn one_line(e: &clap::Error) -> String {
    let rendered = e.render().to_string();
    let first: Vec<&str> = rendered
        .lines()
        .map(str::trim)
        .skip_while(|l| l.is_empty())
        .take_while(|l| !l.is_empty())
        .collect();
    let mut first = first.join(" ");
    // clap's "did you mean" is a tip paragraph of its own: kept, in brackets.
    let tips: Vec<&str> = rendered
        .lines()
        .map(str::trim)
        .filter(|l| l.starts_with("tip: "))
        .collect();
    if !tips.is_empty() {
        first = format!("{first} ({})", tips.join("; "));
    }
    match first.strip_prefix("error: ") {
        Some(rest) => rest.to_string(),
        None if first.is_empty() => "bad arguments".to_string(),
        None => first,
    }
}

#[cfg(test)]
mod tests {
    use super::one_line;
    use clap::{Arg, Command};

    #[test]
    fn a_similar_flag_is_suggested() {
        let cmd = Command::new("x").arg(Arg::new("listen").long("listen"));
        let e = cmd.try_get_matches_from(["x", "--lisen", "1"]).unwrap_err();
        assert_eq!(
            one_line(&e),
            "unexpected argument '--lisen' found (tip: a similar argument exists: '--listen')"
        );
    }

    #[test]
    fn the_valid_values_stay_with_an_invalid_one() {
        let cmd = Command::new("x").arg(Arg::new("qos").long("qos").value_parser(["0", "1", "2"]));
        let e = cmd.try_get_matches_from(["x", "--qos", "3"]).unwrap_err();
        assert_eq!(
            one_line(&e),
            "invalid value '3' for '--qos <qos>' [possible values: 0, 1, 2]"
        );
    }
}
