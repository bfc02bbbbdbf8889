//! The original design's form, `--op 1|2|3|4 --resource event --value JSON`:
//! kept for old scripts, listed after the commands in the help.

use clap::{Args, ValueEnum};

use super::Action;
use crate::error::Error;
use crate::request::{check_path, is_collection, Call, Method};
use crate::value::ValueSpec;

/// The help section of the original design's `--op` form, listed after
/// the commands' flags: kept for old scripts, not what to learn first.
const LEGACY: &str = "Old form (use the commands above instead)";

/// The old form's flags, given without a command.
#[derive(Debug, Args)]
pub(super) struct LegacyArgs {
    /// Old numeric form: 1 add (post), 2 delete, 3 update (put), 4 read (get)
    #[arg(long, help_heading = LEGACY, value_enum, value_name = "1-4")]
    op: Option<Op>,

    /// Old form: the resource; `event` means /events
    #[arg(long, help_heading = LEGACY, value_enum, value_name = "event")]
    resource: Option<Resource>,

    /// With --op: the API path (default /events)
    #[arg(long, help_heading = LEGACY, value_name = "PATH")]
    path: Option<String>,

    /// With --op: JSON inline, @file.json, or - for stdin
    #[arg(long, help_heading = LEGACY, value_name = "VALUE", allow_hyphen_values = true)]
    value: Option<String>,
}

impl LegacyArgs {
    /// Whether any of the old form's flags was given.
    pub(super) fn given(&self) -> bool {
        self.op.is_some() || self.resource.is_some() || self.path.is_some() || self.value.is_some()
    }
}

/// The original design's numbered operations (`--op`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
enum Op {
    #[value(name = "1", help = "add (post)")]
    Post,
    #[value(name = "2", help = "delete")]
    Delete,
    #[value(name = "3", help = "update (put)")]
    Put,
    #[value(name = "4", help = "read (get)")]
    Get,
}

impl Op {
    fn method(self) -> Method {
        match self {
            Op::Post => Method::Post,
            Op::Delete => Method::Delete,
            Op::Put => Method::Put,
            Op::Get => Method::Get,
        }
    }
}

/// The original design's `--resource`: only the routes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
enum Resource {
    #[value(help = "the routes, /events", alias = "events")]
    Event,
}

/// The original design's `--op N --resource event --value JSON`, given
/// without a command.
pub(super) fn action(args: LegacyArgs) -> Result<Action, Error> {
    let LegacyArgs {
        op,
        resource,
        path,
        value,
    } = args;
    let Some(op) = op else {
        let hint = if resource.is_some() || path.is_some() || value.is_some() {
            " (--resource, --path and --value need a command or --op)"
        } else {
            ""
        };
        return Err(Error::Usage(format!(
            "no command given{hint}; use get, post, put, delete, apply or status, see: app event-repeater manage --help"
        )));
    };
    let path = match (resource, path) {
        (Some(_), Some(_)) => {
            return Err(Error::Usage("give --resource or --path, not both".into()))
        }
        (Some(Resource::Event), None) => "/events".to_string(),
        (None, path) => path.unwrap_or_else(|| "/events".to_string()),
    };
    let method = op.method();
    let op = op
        .to_possible_value()
        .map_or_else(String::new, |v| v.get_name().to_string());
    match (method, &value) {
        (Method::Get, Some(_)) => {
            return Err(Error::Usage("--op 4 (get) takes no --value".into()))
        }
        (Method::Post | Method::Put, None) => {
            return Err(Error::Usage(format!(
                "--op {op} needs --value with the routes as JSON"
            )))
        }
        (Method::Delete, None) if is_collection(&path) => {
            return Err(Error::Usage(
                "--op 2 (delete) needs --value '[{\"sourcetopic\":\"…\"}]', or --path /events/<sourcetopic>".into(),
            ))
        }
        _ => {}
    }
    Ok(Action::Send(Call {
        method,
        path: check_path(&path)?,
        value: value.as_deref().map(ValueSpec::parse),
    }))
}
