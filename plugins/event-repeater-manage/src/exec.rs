//! Acting on a checked [`Config`]: read and check the value, find the
//! repeaters, send, print. One host is talked to directly; several go
//! through [`crate::fleet`].

use crate::apply::{diff, Summary};
use crate::cli::{Action, Config};
use crate::error::Error;
use crate::fleet;
use crate::io::{print, Io};
use crate::output;
use crate::remote::Remote;
use crate::request::{Call, Method};
use crate::resolve;
use crate::routes::{self, Route};
use crate::target::Target;
use crate::value::ValueSpec;

/// Runs the command.
pub fn execute(config: &Config, io: &mut Io<'_>) -> Result<(), Error> {
    match &config.action {
        Action::Send(call) => {
            // Checked before looking for the repeaters: bad JSON never goes out.
            let body = call
                .value
                .as_ref()
                .map(|v| v.load(&mut *io.stdin))
                .transpose()?;
            if let (Some(text), Some(value)) = (&body, &call.value) {
                if matches!(call.method, Method::Post | Method::Put)
                    && crate::request::is_collection(&call.path)
                {
                    routes::check_body(text, &value.origin())?;
                }
            }
            let targets = resolve::targets(&config.conn, io)?;
            match targets.as_slice() {
                [one] => send(config, call, body.as_deref(), one, io),
                many => fleet::send(config, call, body.as_deref(), many, io),
            }
        }
        Action::Apply { file, dry_run } => {
            let origin = match file {
                ValueSpec::File(path) => path.display().to_string(),
                _ => "the routes on stdin".to_string(),
            };
            let text = file.read(&mut *io.stdin, "-f")?;
            let desired = routes::from_file_text(&text, &origin)?;
            let targets = resolve::targets(&config.conn, io)?;
            match targets.as_slice() {
                [one] => apply(one, &desired, *dry_run, io),
                many => fleet::apply(many, &desired, *dry_run, io),
            }
        }
        Action::Status { watch, interval } => {
            let targets = resolve::targets(&config.conn, io)?;
            crate::status::run(&targets, config.output, *watch, *interval, io)
        }
        Action::Top { interval } => {
            let targets = resolve::targets(&config.conn, io)?;
            crate::top::run(&targets, config.output, *interval, io)
        }
        Action::Tap { path } => {
            let targets = resolve::targets(&config.conn, io)?;
            crate::tap::run(&targets, path, config.output, io)
        }
    }
}

fn send(
    config: &Config,
    call: &Call,
    body: Option<&str>,
    target: &Target,
    io: &mut Io<'_>,
) -> Result<(), Error> {
    let remote = Remote::new(target)?;
    let reply = remote.request(call.method, &call.path, body)?;
    print(io, &output::render(&reply.body, config.output, io.pretty))?;
    if matches!(call.method, Method::Post | Method::Put) {
        crate::topics::warn_unserved(&remote, &crate::topics::named(&call.path, body), None);
    }
    Ok(())
}

fn apply(target: &Target, desired: &[Route], dry_run: bool, io: &mut Io<'_>) -> Result<(), Error> {
    let remote = Remote::new(target)?;
    let current = remote.routes()?;
    let changes = diff(&current, desired);
    if changes.is_empty() {
        return print(io, "no changes\n");
    }
    let mut text: String = changes.iter().map(|c| format!("{c}\n")).collect();
    let summary = Summary::of(&changes);
    if dry_run {
        text.push_str(&format!("dry run, nothing changed: would be {summary}\n"));
        return print(io, &text);
    }
    print(io, &text)?;
    remote.replace_routes(desired)?;
    print(io, &format!("applied: {summary}\n"))?;
    let added = crate::apply::added(&changes);
    crate::topics::warn_unserved(&remote, &added, None);
    Ok(())
}
