//! One HTTP request to the repeater's API, over its unix socket, TCP or TLS,
//! with connect and overall timeouts, and failures sorted into what the user
//! can act on.

use std::sync::Arc;
use std::time::Duration;

use ureq::tls::{Certificate, RootCerts, TlsConfig, TlsProvider};
use ureq::Agent;

use super::unix::{NoResolver, UnixConnector};
use crate::address::Endpoint;

/// Largest reply body read (the API's own request limit is 1 MiB).
const MAX_REPLY: u64 = 16 * 1024 * 1024;

/// A client for one repeater.
pub struct Client {
    agent: Agent,
    base: String,
    token: Option<String>,
    /// A token would travel in clear text over the network: never send.
    insecure: bool,
}

/// The server's answer, whatever its status.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Reply {
    /// HTTP status code.
    pub status: u16,
    /// The body as text.
    pub body: String,
}

/// The answer of [`Client::stream`].
pub enum Streamed {
    /// 2xx: the body, to read as it comes.
    Open(Box<dyn std::io::Read + Send>),
    /// Any other status, read whole.
    Answer(Reply),
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
    /// The TLS handshake failed.
    Tls(String),
    /// The peer closed the connection without an HTTP answer.
    Closed,
    /// Not sent: the token would cross the network in clear text.
    Insecure,
    /// The answer was not HTTP (a TLS server answering plain HTTP, say).
    NotHttp(String),
    /// Anything else.
    Other(String),
}

impl Client {
    /// A client for `endpoint` that gives up after `timeout` (connecting and
    /// the whole exchange alike) and sends `token` as a bearer token.
    pub fn new(endpoint: &Endpoint, token: Option<String>, timeout: Duration) -> Client {
        Client::with_roots(endpoint, token, timeout, None)
    }

    /// [`Client::new`], verifying an https:// address against `roots` (else
    /// Mozilla's roots).
    pub fn with_roots(
        endpoint: &Endpoint,
        token: Option<String>,
        timeout: Duration,
        roots: Option<Arc<Vec<Certificate<'static>>>>,
    ) -> Client {
        Client::build(endpoint, token, timeout, roots, None)
    }

    /// A client for a long answer read as it comes (`GET /tap`): connecting,
    /// sending and the answer's head within `timeout`, then no limit on the
    /// whole, only on each read, which must bring something within `idle`.
    pub fn streaming(
        endpoint: &Endpoint,
        token: Option<String>,
        timeout: Duration,
        roots: Option<Arc<Vec<Certificate<'static>>>>,
        idle: Duration,
    ) -> Client {
        Client::build(endpoint, token, timeout, roots, Some(idle))
    }

    fn build(
        endpoint: &Endpoint,
        token: Option<String>,
        timeout: Duration,
        roots: Option<Arc<Vec<Certificate<'static>>>>,
        idle: Option<Duration>,
    ) -> Client {
        let tls = TlsConfig::builder()
            .provider(TlsProvider::Rustls)
            .root_certs(roots.map_or(RootCerts::WebPki, RootCerts::Specific))
            .build();
        let mut config = Agent::config_builder()
            .tls_config(tls)
            .http_status_as_error(false)
            // The repeater is local: never send its traffic to an HTTP_PROXY.
            .proxy(None)
            .max_redirects(0)
            .timeout_global(Some(timeout))
            .timeout_connect(Some(timeout))
            .user_agent(format!("app-event-repeater-manage/{}", crate::VERSION));
        if let Some(idle) = idle {
            config = config
                .timeout_global(None)
                .timeout_send_request(Some(timeout))
                .timeout_recv_response(Some(timeout))
                .timeout_per_read(Some(idle));
        }
        let config = config.build();
        match endpoint {
            Endpoint::Unix(path) => Client {
                agent: Agent::with_parts(config, UnixConnector::new(path.clone()), NoResolver),
                base: "http://localhost".to_string(),
                token,
                insecure: false,
            },
            Endpoint::Http(base) | Endpoint::Https(base) => Client {
                agent: Agent::new_with_config(config),
                base: base.clone(),
                insecure: token.is_some()
                    && matches!(endpoint, Endpoint::Http(_))
                    && !endpoint.is_local(),
                token,
            },
        }
    }

    /// Sends `GET path` and, on a 2xx answer, returns its body to read as
    /// it comes; any other answer is read whole.
    pub fn stream(&self, path: &str) -> Result<Streamed, Failure> {
        if self.insecure {
            return Err(Failure::Insecure);
        }
        let mut request = ureq::http::Request::builder()
            .method("GET")
            .uri(format!("{}{}", self.base, path))
            .header("Accept", "text/event-stream");
        if let Some(token) = &self.token {
            request = request.header("Authorization", format!("Bearer {token}"));
        }
        let response = request
            .body(())
            .map(|r| self.agent.run(r))
            .map_err(|e| Failure::Other(format!("cannot build the request: {e}")))?
            .map_err(failure)?;
        let status = response.status().as_u16();
        if (200..300).contains(&status) {
            return Ok(Streamed::Open(Box::new(response.into_body().into_reader())));
        }
        let body = response
            .into_body()
            .with_config()
            .limit(MAX_REPLY)
            .read_to_string()
            .map_err(failure)?;
        Ok(Streamed::Answer(Reply { status, body }))
    }

    /// Sends `method path` with an optional JSON body and returns the reply.
    pub fn send(&self, method: &str, path: &str, body: Option<&str>) -> Result<Reply, Failure> {
        if self.insecure {
            return Err(Failure::Insecure);
        }
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

/// What went wrong, from an error of ureq (also one met reading a body).
pub fn failure(e: ureq::Error) -> Failure {
    use std::io::ErrorKind;
    match e {
        ureq::Error::Io(io) => match io.kind() {
            ErrorKind::ConnectionRefused => Failure::Refused,
            ErrorKind::NotFound => Failure::NoSocket,
            ErrorKind::PermissionDenied => Failure::Denied(io.to_string()),
            ErrorKind::TimedOut | ErrorKind::WouldBlock => Failure::Timeout,
            ErrorKind::UnexpectedEof | ErrorKind::ConnectionReset | ErrorKind::BrokenPipe => {
                Failure::Closed
            }
            // rustls reports handshake failures as I/O errors carrying its own.
            _ if looks_like_tls(&io.to_string()) => Failure::Tls(io.to_string()),
            _ => Failure::Other(io.to_string()),
        },
        ureq::Error::Timeout(ureq::Timeout::Connect) => Failure::ConnectTimeout,
        ureq::Error::Timeout(_) => Failure::Timeout,
        ureq::Error::Tls(detail) => Failure::Tls(detail.to_string()),
        ureq::Error::Rustls(e) => Failure::Tls(e.to_string()),
        ureq::Error::Protocol(p) => Failure::NotHttp(p.to_string()),
        other => Failure::Other(other.to_string()),
    }
}

fn looks_like_tls(text: &str) -> bool {
    let t = text.to_ascii_lowercase();
    [
        "certificate",
        "handshake",
        "tls",
        "alert",
        "corrupt message",
        "invalid message",
    ]
    .iter()
    .any(|w| t.contains(w))
}
