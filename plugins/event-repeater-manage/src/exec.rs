//! Acting on a checked [`Config`]: read and check the value, find the
//! repeater, send, print.

use std::io::{Read, Write};
use std::path::Path;

use crate::apply::{diff, Summary};
use crate::cli::{Action, Call, Config, Conn, Method};
use crate::error::Error;
use crate::http::{Client, Failure, Reply};
use crate::output;
use crate::routes::{self, Route};
use crate::target::{self, Origin, Target};
use crate::value::ValueSpec;

/// Where a command reads and writes, and what it knows of its surroundings.
pub struct Io<'a> {
    /// For `--value -` and `apply -f -`.
    pub stdin: &'a mut dyn Read,
    /// Answers and diffs.
    pub stdout: &'a mut dyn Write,
    /// Pretty-print JSON (stdout is a terminal).
    pub pretty: bool,
    /// Hosts from the global `app -H` flag.
    pub global_hosts: &'a [String],
    /// `APP_RUNTIME_DIR/plugins`.
    pub plugin_dir: &'a Path,
}

/// Runs the command.
pub fn execute(config: &Config, io: &mut Io<'_>) -> Result<(), Error> {
    match &config.action {
        Action::Send(call) => send(config, call, io),
        Action::Apply { file, dry_run } => apply(&config.conn, file, *dry_run, io),
    }
}

fn send(config: &Config, call: &Call, io: &mut Io<'_>) -> Result<(), Error> {
    // Checked before looking for the repeater: bad JSON never goes out.
    let body = call
        .value
        .as_ref()
        .map(|v| v.load(&mut *io.stdin))
        .transpose()?;
    let remote = Remote::connect(&config.conn, io)?;
    let reply = remote.request(call.method, &call.path, body.as_deref())?;
    print(io, &output::render(&reply.body, config.output, io.pretty))
}

fn apply(conn: &Conn, file: &ValueSpec, dry_run: bool, io: &mut Io<'_>) -> Result<(), Error> {
    let origin = match file {
        ValueSpec::File(path) => path.display().to_string(),
        _ => "the routes on stdin".to_string(),
    };
    let text = file.read(&mut *io.stdin)?;
    let desired = routes::from_file_text(&text, &origin)?;
    let remote = Remote::connect(conn, io)?;
    let current = remote.routes()?;
    let changes = diff(&current, &desired);
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
    let body = serde_json::to_string(&desired)
        .map_err(|e| Error::Failed(format!("cannot encode the routes: {e}")))?;
    remote.request(Method::Put, "/events?replace=true", Some(&body))?;
    print(io, &format!("applied: {summary}\n"))
}

fn print(io: &mut Io<'_>, text: &str) -> Result<(), Error> {
    match io
        .stdout
        .write_all(text.as_bytes())
        .and_then(|()| io.stdout.flush())
    {
        Ok(()) => Ok(()),
        // A closed pipe (`| head`) is the reader's choice, not our failure.
        Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => Ok(()),
        Err(e) => Err(Error::Failed(format!("cannot write the answer: {e}"))),
    }
}

/// A found repeater and a client for it.
pub struct Remote {
    target: Target,
    client: Client,
    timeout: std::time::Duration,
}

impl Remote {
    /// Finds the repeater `conn` names.
    pub fn connect(conn: &Conn, io: &Io<'_>) -> Result<Remote, Error> {
        let target = target::find(
            &conn.name,
            conn.host.as_ref(),
            io.global_hosts,
            io.plugin_dir,
        )?;
        let client = Client::new(&target.endpoint, conn.token.clone(), conn.timeout);
        Ok(Remote {
            target,
            client,
            timeout: conn.timeout,
        })
    }

    /// Sends a request; any non-2xx status is an error carrying the server's message.
    pub fn request(&self, method: Method, path: &str, body: Option<&str>) -> Result<Reply, Error> {
        let reply = self
            .client
            .send(method.as_str(), path, body)
            .map_err(|f| self.failure(f))?;
        if (200..300).contains(&reply.status) {
            return Ok(reply);
        }
        Err(Error::Refused {
            request: format!("{} {}", method.as_str(), path),
            status: reply.status,
            message: server_message(&reply.body),
        })
    }

    /// The current routes (`GET /events`).
    pub fn routes(&self) -> Result<Vec<Route>, Error> {
        let reply = self.request(Method::Get, "/events", None)?;
        let value: serde_json::Value = serde_json::from_str(&reply.body).map_err(|e| {
            Error::Failed(format!(
                "the event repeater at {} answered GET /events with something that is not JSON ({e}); is it an event repeater?",
                self.target.endpoint
            ))
        })?;
        routes::from_server(&value).map_err(|e| {
            Error::Failed(format!(
                "unexpected answer to GET /events from {}: {e}",
                self.target.endpoint
            ))
        })
    }

    fn failure(&self, failure: Failure) -> Error {
        let t = &self.target;
        let name = t.name.clone();
        let target = t.endpoint.to_string();
        match (failure, &t.origin) {
            (Failure::Refused, Origin::Socket) => Error::StaleSocket {
                name,
                socket: socket_path(t),
            },
            // Gone between looking and connecting: it just stopped.
            (Failure::NoSocket, Origin::Socket) => Error::NotRunning {
                name,
                socket: socket_path(t),
            },
            (Failure::Refused, Origin::ListenFile(file)) => Error::StaleListen {
                name,
                file: file.clone(),
                url: target,
            },
            (Failure::Refused, _) => Error::Unreachable {
                target,
                reason: "connection refused (nothing listens there)".into(),
            },
            (Failure::NoSocket, _) => Error::Unreachable {
                target,
                reason: "no such socket".into(),
            },
            (Failure::Denied(detail), _) => Error::Unreachable {
                target,
                reason: format!("{detail} (the socket belongs to another user?)"),
            },
            (Failure::ConnectTimeout, _) => Error::Unreachable {
                target,
                reason: format!("no connection within {}s", self.timeout.as_secs_f64()),
            },
            (Failure::Timeout, _) => Error::Timeout {
                target,
                seconds: self.timeout.as_secs_f64(),
            },
            (Failure::Other(detail), _) => Error::Failed(format!(
                "the request to the event repeater at {target} failed: {detail}"
            )),
        }
    }
}

fn socket_path(t: &Target) -> std::path::PathBuf {
    match &t.endpoint {
        crate::target::Endpoint::Unix(p) => p.clone(),
        crate::target::Endpoint::Http(_) => std::path::PathBuf::new(),
    }
}

/// The server's error message: the `error` field of its JSON, or its text.
pub fn server_message(body: &str) -> String {
    if let Ok(value) = serde_json::from_str::<serde_json::Value>(body) {
        if let Some(msg) = value.get("error").and_then(|e| e.as_str()) {
            return msg.to_string();
        }
    }
    let text = body.split_whitespace().collect::<Vec<_>>().join(" ");
    if text.is_empty() {
        "(no message)".to_string()
    } else {
        text
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn server_message_prefers_the_error_field() {
        assert_eq!(
            server_message(r#"{"error":"route timer/sec/1 exists","sourcetopic":"timer/sec/1"}"#),
            "route timer/sec/1 exists"
        );
        assert_eq!(server_message("Not Found\n"), "Not Found");
        assert_eq!(server_message(""), "(no message)");
    }
}
