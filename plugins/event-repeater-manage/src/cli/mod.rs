//! The command line: clap's view of the flags ([`Cli`]), turned into a
//! checked [`Config`] before anything is read or sent.
//!
//! - `args`: the clap definitions (flags, commands, help text)
//! - `legacy`: the original design's `--op` form
//! - `usage`: usage errors made one line, with a pointer to the help

mod args;
mod legacy;
mod usage;

use std::ffi::OsString;
use std::path::PathBuf;
use std::time::Duration;

use clap::Parser;

pub use args::{command, Cli, DEFAULT_TIMEOUT};
pub use usage::ParseOutcome;

use crate::address::HostWord;
use crate::error::Error;
use crate::output::Format;
use crate::request::{check_path, is_collection, tap_path, topic_path, Call, Method};
use crate::target::check_name;
use crate::value::ValueSpec;
use args::{Command, DeadLetterCommand, LetterFilter, OutputArg};

/// How to reach the repeater.
#[derive(Debug, Clone, PartialEq)]
pub struct Conn {
    /// `--name`.
    pub name: String,
    /// `--host` values, checked (empty: the global hosts, else the local files).
    pub hosts: Vec<HostWord>,
    /// `--token` or `APP_TOKEN`.
    pub token: Option<String>,
    /// `--ca-file`.
    pub ca_file: Option<PathBuf>,
    /// `--timeout`.
    pub timeout: Duration,
}

/// What the command does.
#[derive(Debug, Clone, PartialEq)]
pub enum Action {
    /// get, post, put, delete (or an `--op`).
    Send(Call),
    /// apply -f FILE [--dry-run].
    Apply {
        /// Where the routes come from (`-` is stdin).
        file: ValueSpec,
        /// Change nothing.
        dry_run: bool,
    },
    /// status [--watch].
    Status {
        /// Redraw until interrupted.
        watch: bool,
        /// Between two samples.
        interval: Duration,
    },
    /// top.
    Top {
        /// Between two samples of a host.
        interval: Duration,
    },
    /// tap [--route R | --topic T].
    Tap {
        /// `/tap` with its query.
        path: String,
    },
}

/// A checked command line.
#[derive(Debug, Clone, PartialEq)]
pub struct Config {
    /// How to reach the repeater.
    pub conn: Conn,
    /// `-o`.
    pub output: Format,
    /// What to do.
    pub action: Action,
}

impl Config {
    /// Parses `args` (without the program name) and checks them. `env_token`
    /// is `APP_TOKEN`, used when `--token` is not given.
    pub fn from_args<I, T>(args: I, env_token: Option<String>) -> Result<Config, ParseOutcome>
    where
        I: IntoIterator<Item = T>,
        T: Into<OsString> + Clone,
    {
        let argv: Vec<OsString> = std::iter::once(OsString::from("app-event-repeater-manage"))
            .chain(args.into_iter().map(Into::into))
            .collect();
        // Usage errors point at the help of the command typed, if any.
        let help = usage::help_command(&argv);
        let cli = Cli::try_parse_from(&argv).map_err(|e| ParseOutcome::from_clap(e, &help))?;
        Config::from_cli(cli, env_token).map_err(|e| usage::with_help(e, &help))
    }

    fn from_cli(cli: Cli, env_token: Option<String>) -> Result<Config, Error> {
        let conn = &cli.conn;
        check_name(&conn.name)?;
        let hosts = conn
            .host
            .iter()
            .map(|h| HostWord::parse(h).map_err(|e| Error::Usage(format!("--host {e}"))))
            .collect::<Result<Vec<_>, _>>()?;
        let token = conn.token.clone().or(env_token).filter(|t| !t.is_empty());
        // A replay answers once the broker took the letters: its wait,
        // and the usual timeout on top.
        let timeout = match &cli.command {
            Some(Command::DeadLetters(DeadLetterCommand::Replay { wait, .. })) => {
                conn.timeout + Duration::from_secs(u64::from(*wait))
            }
            _ => conn.timeout,
        };
        let letters = matches!(
            cli.command,
            Some(Command::DeadLetters(DeadLetterCommand::List { .. }))
        );
        let action = match cli.command {
            Some(command) => {
                if cli.legacy.given() {
                    return Err(Error::Usage(
                        "--op, --resource, --path and --value go after the command (or use the old --op form without a command)".into(),
                    ));
                }
                from_command(command)?
            }
            None => legacy::action(cli.legacy)?,
        };
        Ok(Config {
            conn: Conn {
                name: conn.name.clone(),
                hosts,
                token,
                ca_file: conn.ca_file.clone(),
                timeout,
            },
            output: match conn.output {
                Some(OutputArg::Table) => Format::Table,
                Some(OutputArg::Json) => Format::Json,
                // A status is read by eyes unless JSON is asked for.
                None if letters
                    || matches!(
                        action,
                        Action::Status { .. } | Action::Top { .. } | Action::Tap { .. }
                    ) =>
                {
                    Format::Table
                }
                None => Format::Json,
            },
            action,
        })
    }
}

fn from_command(command: Command) -> Result<Action, Error> {
    let call = |method, path: &str, value: Option<String>| {
        Ok(Action::Send(Call {
            method,
            path: check_path(path)?,
            value: value.as_deref().map(ValueSpec::parse),
        }))
    };
    let one = |method, topic: &str, value: Option<ValueSpec>| {
        if topic.is_empty() {
            return Err(Error::Usage(
                "SOURCETOPIC must not be empty (use . for every topic)".into(),
            ));
        }
        Ok(Action::Send(Call {
            method,
            path: topic_path(topic),
            value,
        }))
    };
    match command {
        Command::Get(a) => match a.sourcetopic {
            Some(topic) => one(Method::Get, &topic, None),
            None => call(Method::Get, &a.path, None),
        },
        Command::Post(a) => call(Method::Post, &a.path, Some(a.value)),
        Command::Put(a) => match (a.sourcetopic, a.sinktopic, a.value) {
            (Some(source), Some(sink), _) => {
                let body = serde_json::json!({ "sinktopic": sink }).to_string();
                one(Method::Put, &source, Some(ValueSpec::Inline(body)))
            }
            (Some(source), None, _) => Err(Error::Usage(format!(
                "put {source} needs a SINKTOPIC too: put SOURCETOPIC SINKTOPIC (. for the event's own topic)"
            ))),
            (None, _, Some(value)) => call(Method::Put, &a.path, Some(value)),
            (None, _, None) => Err(Error::Usage(
                "put needs SOURCETOPIC SINKTOPIC, or the routes as --value JSON".into(),
            )),
        },
        Command::Delete(a) => {
            if let Some(topic) = a.sourcetopic {
                return one(Method::Delete, &topic, None);
            }
            if a.value.is_none() && is_collection(&a.path) {
                return Err(Error::Usage(
                    "delete needs the route to remove: delete SOURCETOPIC, or --value '[{\"sourcetopic\":\"…\"}]'".into(),
                ));
            }
            call(Method::Delete, &a.path, a.value)
        }
        Command::Status(a) => Ok(Action::Status {
            watch: a.watch,
            interval: a.interval,
        }),
        Command::DeadLetters(c) => dead_letters(c),
        Command::Top(a) => Ok(Action::Top {
            interval: a.interval,
        }),
        Command::Tap(a) => {
            if a.route.as_deref().or(a.topic.as_deref()) == Some("") {
                return Err(Error::Usage(
                    "--route and --topic must not be empty (use --topic . for every topic, or neither)".into(),
                ));
            }
            Ok(Action::Tap {
                path: tap_path(a.route.as_deref(), a.topic.as_deref()),
            })
        }
        Command::Apply(a) => Ok(Action::Apply {
            file: if a.file.as_os_str() == "-" {
                ValueSpec::Stdin
            } else {
                ValueSpec::File(a.file)
            },
            dry_run: a.dry_run,
        }),
    }
}

/// `dead-letters list|replay|purge`: a request to `/dead-letters`.
fn dead_letters(command: DeadLetterCommand) -> Result<Action, Error> {
    use app_event_repeater_api::dead_letter::query;
    use app_event_repeater_api::path::{DEAD_LETTERS, DEAD_LETTERS_REPLAY};
    let (method, path, filter, extra) = match command {
        DeadLetterCommand::List { filter, limit } => (
            Method::Get,
            DEAD_LETTERS,
            filter,
            Some((query::LIMIT, limit)),
        ),
        DeadLetterCommand::Replay { filter, wait } => (
            Method::Post,
            DEAD_LETTERS_REPLAY,
            filter,
            Some((query::TIMEOUT, wait)),
        ),
        DeadLetterCommand::Purge { filter, all } => {
            if !all && filter.is_empty() {
                return Err(Error::Usage(
                    "purge removes dead letters for good: name them (--reason, --topic, --since, --until) or give --all".into(),
                ));
            }
            (Method::Delete, DEAD_LETTERS, filter, None)
        }
    };
    let mut pairs = filter.pairs();
    if let Some((k, n)) = extra {
        pairs.push((k, n.to_string()));
    }
    let query: Vec<String> = pairs
        .iter()
        .map(|(k, v)| format!("{k}={}", crate::request::query_value(v)))
        .collect();
    let path = if query.is_empty() {
        path.to_string()
    } else {
        format!("{path}?{}", query.join("&"))
    };
    Ok(Action::Send(Call {
        method,
        path,
        value: None,
    }))
}

impl LetterFilter {
    fn is_empty(&self) -> bool {
        self.pairs().is_empty()
    }

    fn pairs(&self) -> Vec<(&'static str, String)> {
        use app_event_repeater_api::dead_letter::query;
        [
            (query::REASON, &self.reason),
            (query::TOPIC, &self.topic),
            (query::SINCE, &self.since),
            (query::UNTIL, &self.until),
        ]
        .into_iter()
        .filter_map(|(k, v)| v.clone().map(|v| (k, v)))
        .collect()
    }
}

#[cfg(test)]
mod tests;
