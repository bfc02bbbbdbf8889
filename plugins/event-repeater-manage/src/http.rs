//! One HTTP request to the repeater's API, over its unix socket or TCP, with
//! connect and overall timeouts, and failures sorted into what the user can
//! act on.

use std::time::Duration;

use ureq::Agent;

use crate::target::Endpoint;
use crate::unix::{NoResolver, UnixConnector};

/// Largest reply body read (the API's own request limit is 1 MiB).
const MAX_REPLY: u64 = 16 * 1024 * 1024;

/// A client for one repeater.
pub struct Client {
    agent: Agent,
    base: String,
    token: Option<String>,
}

/// The server's answer, whatever its status.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Reply {
    /// HTTP status code.
    pub status: u16,
    /// The body as text.
    pub body: String,
}

/// Why no answer came back.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Failure {
    /// Nobody accepts connections there.
    Refused,
    /// The socket file is gone.
    NoSocket,
    /// Not allowed to connect (another user's socket).
    Denied(String),
    /// The connection was not made in time.
    ConnectTimeout,
    /// Connected, but the answer did not come in time.
    Timeout,
    /// Anything else.
    Other(String),
}

impl Client {
    /// A client for `endpoint` that gives up after `timeout` (connecting and
    /// the whole exchange alike) and sends `token` as a bearer token.
    pub fn new(endpoint: &Endpoint, token: Option<String>, timeout: Duration) -> Client {
        let config = Agent::config_builder()
            .http_status_as_error(false)
            // The repeater is local: never send its traffic to an HTTP_PROXY.
            .proxy(None)
            .max_redirects(0)
            .timeout_global(Some(timeout))
            .timeout_connect(Some(timeout))
            .user_agent(format!("app-event-repeater-manage/{}", crate::VERSION))
            .build();
        match endpoint {
            Endpoint::Unix(path) => Client {
                agent: Agent::with_parts(config, UnixConnector::new(path.clone()), NoResolver),
                base: "http://localhost".to_string(),
                token,
            },
            Endpoint::Http(base) => Client {
                agent: Agent::new_with_config(config),
                base: base.clone(),
                token,
            },
        }
    }

    /// Sends `method path` with an optional JSON body and returns the reply.
    pub fn send(&self, method: &str, path: &str, body: Option<&str>) -> Result<Reply, Failure> {
        let mut request = ureq::http::Request::builder()
            .method(method)
            .uri(format!("{}{}", self.base, path))
            .header("Accept", "application/json");
        if let Some(token) = &self.token {
            request = request.header("Authorization", format!("Bearer {token}"));
        }
        let sent = match body {
            Some(body) => request
                .header("Content-Type", "application/json")
                .body(body.as_bytes())
                .map(|r| self.agent.run(r)),
            None => request.body(()).map(|r| self.agent.run(r)),
        };
        let mut response = sent
            .map_err(|e| Failure::Other(format!("cannot build the request: {e}")))?
            .map_err(failure)?;
        let status = response.status().as_u16();
        let body = response
            .body_mut()
            .with_config()
            .limit(MAX_REPLY)
            .read_to_string()
            .map_err(failure)?;
        Ok(Reply { status, body })
    }
}

fn failure(e: ureq::Error) -> Failure {
    use std::io::ErrorKind;
    match e {
        ureq::Error::Io(io) => match io.kind() {
            ErrorKind::ConnectionRefused => Failure::Refused,
            ErrorKind::NotFound => Failure::NoSocket,
            ErrorKind::PermissionDenied => Failure::Denied(io.to_string()),
            ErrorKind::TimedOut | ErrorKind::WouldBlock => Failure::Timeout,
            _ => Failure::Other(io.to_string()),
        },
        ureq::Error::Timeout(ureq::Timeout::Connect) => Failure::ConnectTimeout,
        ureq::Error::Timeout(_) => Failure::Timeout,
        other => Failure::Other(other.to_string()),
    }
}
