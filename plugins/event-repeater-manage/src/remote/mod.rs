//! Talking to one repeater's API: [`Remote`] sends a request to a found
//! [`Target`] over its unix socket, TCP or TLS, and turns what went wrong
//! into an [`Error`] that names the repeater and what to check.
//!
//! - [`http`]: one request with timeouts, failures sorted ([`http::Failure`])
//! - [`unix`]: the unix socket transport under [`http`]
//! - [`failure`]: those failures, and refusals, as the user reads them

pub mod failure;
pub mod http;
pub mod unix;

use std::io::Read;
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use app_event_repeater_api::path as api_path;

use crate::address::Endpoint;
use crate::error::Error;
use crate::files::read_small;
use crate::request::Method;
use crate::routes::{self, Route};
use crate::target::Target;
use http::{Client, Reply, Streamed};

/// Largest CA file read.
const MAX_CA_FILE: u64 = 1 << 20;

/// A found repeater and a client for it.
pub struct Remote {
    target: Target,
    client: Client,
    /// The CA certificates of an https:// address, for [`Remote::stream`].
    roots: Option<Arc<Vec<ureq::tls::Certificate<'static>>>>,
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
            roots.clone(),
        );
        Ok(Remote {
            target: target.clone(),
            client,
            roots,
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
            .map_err(|f| failure::error(&self.target, f))?;
        if (200..300).contains(&reply.status) {
            return self.api_answer(method, path, reply);
        }
        Err(Error::Refused {
            request: format!("{} {}", method.as_str(), path),
            status: reply.status,
            message: failure::server_message(&reply.body),
        })
    }

    /// A success answer, if it is one the repeater's API gives: JSON, or the
    /// text of `/metrics`. Anything else (a web server's HTML page answering
    /// 200 at that address) is not the repeater, and printing it as the
    /// answer would hide that: it is an error, with the start of the body.
    fn api_answer(&self, method: Method, path: &str, reply: Reply) -> Result<Reply, Error> {
        let route = path.split('?').next().unwrap_or(path);
        let body = reply.body.trim();
        if route == api_path::METRICS
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

    /// Opens `GET path` as a stream (`/tap`): the body to read as it comes,
    /// each read bringing something within `idle`; a non-2xx answer is an
    /// error carrying the server's message, as for [`Remote::request`].
    pub fn stream(&self, path: &str, idle: Duration) -> Result<Box<dyn Read + Send>, Error> {
        let t = &self.target;
        let client = Client::streaming(
            &t.endpoint,
            t.token.clone(),
            t.timeout,
            self.roots.clone(),
            idle,
        );
        match client.stream(path).map_err(|f| failure::error(t, f))? {
            Streamed::Open(body) => Ok(body),
            Streamed::Answer(reply) => Err(Error::Refused {
                request: format!("GET {path}"),
                status: reply.status,
                message: failure::server_message(&reply.body),
            }),
        }
    }

    /// Makes the routes exactly `routes` (`PUT /events?replace=true`).
    pub fn replace_routes(&self, routes: &[Route]) -> Result<Reply, Error> {
        let body = serde_json::to_string(routes)
            .map_err(|e| Error::Failed(format!("cannot encode the routes: {e}")))?;
        self.request(Method::Put, &api_path::events_replace(), Some(&body))
    }

    /// The current routes (`GET /events`).
    pub fn routes(&self) -> Result<Vec<Route>, Error> {
        let reply = self.request(Method::Get, api_path::EVENTS, None)?;
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
