//! Acting on a checked [`Config`]: read and check the value, find the
//! repeaters, send, print. One host is talked to directly; several go
//! through [`crate::fleet`].

use std::io::{Read, Write};
use std::path::Path;
use std::sync::Arc;

use crate::apply::{diff, Summary};
use crate::cli::{Action, Call, Config, Method};
use crate::error::Error;
use crate::files::read_small;
use crate::fleet;
use crate::hosts::{self, Defaults};
use crate::http::{Client, Failure, Reply};
use crate::output;
use crate::routes::{self, Route};
use crate::target::{self, Endpoint, HostWord, Origin, Target};
use crate::value::ValueSpec;

/// Largest CA file read.
const MAX_CA_FILE: u64 = 1 << 20;

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
    /// `app`'s config file (named hosts and groups).
    pub config_file: &'a Path,
}

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
            let targets = targets(config, io)?;
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
            let targets = targets(config, io)?;
            match targets.as_slice() {
                [one] => apply(one, &desired, *dry_run, io),
                many => fleet::apply(many, &desired, *dry_run, io),
            }
        }
        Action::Status { watch, interval } => {
            let targets = targets(config, io)?;
            crate::status::run(&targets, config.output, *watch, *interval, io)
        }
    }
}

/// The repeaters the command is for: `--host` values, else the global `-H`
/// hosts, else the one named `--name` on this machine.
pub fn targets(config: &Config, io: &Io<'_>) -> Result<Vec<Target>, Error> {
    let conn = &config.conn;
    let defaults = Defaults {
        name: &conn.name,
        token: conn.token.as_deref(),
        ca_file: conn.ca_file.as_deref(),
        timeout: conn.timeout,
        config_file: io.config_file,
    };
    if !conn.hosts.is_empty() {
        return hosts::resolve(&conn.hosts, &defaults);
    }
    if !io.global_hosts.is_empty() {
        let words = io
            .global_hosts
            .iter()
            .map(|h| {
                HostWord::parse(h)
                    .map_err(|e| Error::Usage(format!("the global -H/--host value {e}")))
            })
            .collect::<Result<Vec<_>, _>>()?;
        return hosts::resolve(&words, &defaults);
    }
    Ok(vec![target::find_local(
        &conn.name,
        conn.token.clone(),
        conn.ca_file.clone(),
        conn.timeout,
        io.plugin_dir,
    )?])
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

/// Writes `text` to stdout; a closed pipe is not an error.
pub fn print(io: &mut Io<'_>, text: &str) -> Result<(), Error> {
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
}

impl Remote {
    /// A client for `target`. Refuses to send a token in clear text over the
    /// network, and reads the CA file of an https:// address.
    pub fn new(target: &Target) -> Result<Remote, Error> {
        let roots = match &target.endpoint {
            Endpoint::Http(_) if target.token.is_some() && !target.endpoint.is_local() => {
                return Err(Error::Insecure {
                    target: target.described(),
                })
            }
            Endpoint::Https(_) => target.ca_file.as_deref().map(load_ca).transpose()?,
            _ => None,
        };
        let client = Client::with_roots(
            &target.endpoint,
            target.token.clone(),
            target.timeout,
            roots,
        );
        Ok(Remote {
            target: target.clone(),
            client,
        })
    }

    /// The target this talks to.
    pub fn target(&self) -> &Target {
        &self.target
    }

    /// Sends a request; any non-2xx status is an error carrying the server's message.
    pub fn request(&self, method: Method, path: &str, body: Option<&str>) -> Result<Reply, Error> {
        let reply = self
            .client
            .send(method.as_str(), path, body)
            .map_err(|f| self.failure(f))?;
        if (200..300).contains(&reply.status) {
            return self.api_answer(method, path, reply);
        }
        Err(Error::Refused {
            request: format!("{} {}", method.as_str(), path),
            status: reply.status,
            message: server_message(&reply.body),
        })
    }

    /// A success answer, if it is one the repeater's API gives: JSON, or the
    /// text of `/metrics`. Anything else (a web server's HTML page answering
    /// 200 at that address) is not the repeater, and printing it as the
    /// answer would hide that: it is an error, with the start of the body.
    fn api_answer(&self, method: Method, path: &str, reply: Reply) -> Result<Reply, Error> {
        let route = path.split('?').next().unwrap_or(path);
        let body = reply.body.trim();
        if route == "/metrics"
            || body.is_empty()
            || serde_json::from_str::<serde_json::Value>(body).is_ok()
        {
            return Ok(reply);
        }
        Err(Error::Failed(format!(
            "{} answered {} {path} with status {} but not JSON, so it is not an event repeater's API; check the address (the answer starts: {})",
            self.target.described(),
            method.as_str(),
            reply.status,
            app_plugin::text::shorten_for_terminal(&body.split_whitespace().collect::<Vec<_>>().join(" ")),
        )))
    }

    /// Makes the routes exactly `routes` (`PUT /events?replace=true`).
    pub fn replace_routes(&self, routes: &[Route]) -> Result<Reply, Error> {
        let body = serde_json::to_string(routes)
            .map_err(|e| Error::Failed(format!("cannot encode the routes: {e}")))?;
        self.request(Method::Put, "/events?replace=true", Some(&body))
    }

    /// The current routes (`GET /events`).
    pub fn routes(&self) -> Result<Vec<Route>, Error> {
        let reply = self.request(Method::Get, "/events", None)?;
        let value: serde_json::Value = serde_json::from_str(&reply.body).map_err(|e| {
            Error::Failed(format!(
                "the event repeater at {} answered GET /events with something that is not JSON ({e}); is it an event repeater?",
                self.target.described()
            ))
        })?;
        routes::from_server(&value).map_err(|e| {
            Error::Failed(format!(
                "unexpected answer to GET /events from {}: {e}",
                self.target.described()
            ))
        })
    }

    fn failure(&self, failure: Failure) -> Error {
        let t = &self.target;
        let name = t.name.clone();
        let target = t.described();
        let tls = matches!(t.endpoint, Endpoint::Https(_));
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
                reason: format!("no connection within {}s", t.timeout.as_secs_f64()),
            },
            (Failure::Timeout, _) => Error::Timeout {
                target,
                seconds: t.timeout.as_secs_f64(),
            },
            (Failure::Tls(detail), _) => Error::Tls {
                target,
                reason: format!(
                    "{detail}; check that --ca-file (or the host's ca_file) holds the CA that signed the repeater's certificate and that the certificate names this host (if the repeater serves plain HTTP, use http://)"
                ),
            },
            (Failure::Closed, _) if tls => Error::Tls {
                target,
                reason: "the connection closed during the TLS handshake; does it serve plain http://?".into(),
            },
            (Failure::Insecure, _) => Error::Insecure { target },
            (Failure::NotHttp(detail), _) => Error::Failed(format!(
                "the answer from {target} is not HTTP ({detail}); if it serves HTTPS (--tls-cert), use https://"
            )),
            (Failure::Closed, _) => Error::Failed(format!(
                "the event repeater at {target} closed the connection without an answer; if it serves HTTPS (--tls-cert), use https://"
            )),
            (Failure::Other(detail), _) => Error::Failed(format!(
                "the request to the event repeater at {target} failed: {detail}"
            )),
        }
    }
}

fn socket_path(t: &Target) -> std::path::PathBuf {
    match &t.endpoint {
        crate::target::Endpoint::Unix(p) => p.clone(),
        Endpoint::Http(_) | Endpoint::Https(_) => std::path::PathBuf::new(),
    }
}

/// Reads the PEM certificates of a CA file.
fn load_ca(path: &Path) -> Result<Arc<Vec<ureq::tls::Certificate<'static>>>, Error> {
    let text = read_small(path, MAX_CA_FILE, "the CA file")?;
    let mut certs = Vec::new();
    for item in ureq::tls::parse_pem(text.as_bytes()) {
        match item {
            Ok(ureq::tls::PemItem::Certificate(c)) => certs.push(c),
            Ok(_) => {}
            Err(e) => {
                return Err(Error::Usage(format!(
                    "the CA file {} is not PEM: {e}",
                    path.display()
                )))
            }
        }
    }
    if certs.is_empty() {
        return Err(Error::Usage(format!(
            "the CA file {} holds no PEM certificate (-----BEGIN CERTIFICATE-----)",
            path.display()
        )));
    }
    Ok(Arc::new(certs))
}

/// The server's error message: the `error` field of its JSON, or its text
/// with its white space runs made single spaces.
fn server_text(body: &str) -> String {
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

/// [`server_text`], shortened and escaped: the form to print.
pub fn server_message(body: &str) -> String {
    app_plugin::text::shorten_for_terminal(&server_text(body))
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
