//! One HTTP request to the source, at the [`Peer`] its kind gives: over a
//! Unix socket, TCP, or TLS (an `https://` feed); connecting, the TLS
//! handshake and the answer's head each within 5 s. What is not a 2xx
//! event stream comes back as a [`Refused`] the reader acts on: a 204
//! stops it (the SSE standard), a 429 or 503 with `Retry-After` is waited
//! out, anything else is reported with the status and the start of the
//! body (escaped).

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use http_body_util::{BodyExt, Empty};
use hyper::body::Incoming;
use hyper::header::{HeaderName, HeaderValue};
use hyper::Request;
use hyper_util::rt::TokioIo;
use tokio::net::{TcpStream, UnixStream};

use app_plugin::address::join_host_port;

use crate::basic_auth::BasicAuth;

/// Where a kind's requests go and what each one carries.
pub struct Peer<'a> {
    pub via: Via<'a>,
    /// Sent as `Authorization: Basic …`.
    pub auth: Option<&'a BasicAuth>,
    /// Sent with every request, after the reader's own.
    pub headers: &'a [(HeaderName, HeaderValue)],
}

/// How a source is reached.
pub enum Via<'a> {
    /// A Unix socket (an event plugin's).
    Unix(&'a Path),
    /// TCP, with TLS when given a client configuration (an `https://` feed).
    Tcp {
        host: &'a str,
        port: u16,
        tls: Option<&'a Arc<rustls::ClientConfig>>,
    },
}

/// How long connecting, the TLS handshake and the answer's head may take.
pub const CONNECT_TIMEOUT: Duration = Duration::from_secs(5);

/// How much of a refusal's body is shown.
pub const MAX_SHOWN_BODY: usize = 512;

/// Why a request got no event stream.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Refused {
    /// No connection, or no answer.
    #[error("{0}")]
    Unreachable(String),
    /// `204 No Content`: the source asks not to reconnect.
    #[error("the source answered 204 No Content, which asks clients not to reconnect")]
    NoContent,
    /// Another status, with `Retry-After` (seconds) if it gave one, and
    /// the start of its body (escaped).
    #[error("the source answered {status} {}{}{body}", reason(*status), if body.is_empty() { "" } else { ": " })]
    Status {
        status: u16,
        retry_after: Option<Duration>,
        body: String,
    },
    /// A 200 that is not `text/event-stream`.
    #[error("the source answered 200 with Content-Type {0}, not text/event-stream (is --source the stream's URL?)")]
    NotEventStream(String),
}

/// The reason phrase of `status` (`Not Found`), or nothing.
fn reason(status: u16) -> &'static str {
    hyper::StatusCode::from_u16(status)
        .ok()
        .and_then(|s| s.canonical_reason())
        .unwrap_or("")
}

/// `GET target` with `headers`; `Ok` is a 2xx answer (and, with
/// `event_stream`, one whose `Content-Type` is `text/event-stream`).
pub async fn get(
    peer: &Peer<'_>,
    target: &str,
    headers: &[(&str, &str)],
    event_stream: bool,
) -> Result<hyper::Response<Incoming>, Refused> {
    let unreachable = |e: &dyn std::fmt::Display| Refused::Unreachable(e.to_string());
    let timed_out = |what: &str| Refused::Unreachable(format!("{what} timed out"));
    let (host, io): (String, Box<dyn IoStream>) = match peer.via {
        Via::Unix(path) => {
            let s = tokio::time::timeout(CONNECT_TIMEOUT, UnixStream::connect(path))
                .await
                .map_err(|_| timed_out("connect"))?
                .map_err(|e| unreachable(&e))?;
            ("localhost".into(), Box::new(s))
        }
        Via::Tcp { host, port, tls } => {
            let s = tcp(host, port).await?;
            let shown = join_host_port(host, port);
            match tls {
                None => (shown, Box::new(s)),
                Some(config) => {
                    let name = rustls::pki_types::ServerName::try_from(host.to_string())
                        .map_err(|e| unreachable(&e))?;
                    let tls = tokio_rustls::TlsConnector::from(config.clone());
                    let s = tokio::time::timeout(CONNECT_TIMEOUT, tls.connect(name, s))
                        .await
                        .map_err(|_| timed_out("the TLS handshake"))?
                        .map_err(|e| Refused::Unreachable(format!("TLS: {e}")))?;
                    (shown, Box::new(s))
                }
            }
        }
    };
    let (mut sender, conn) = hyper::client::conn::http1::handshake(TokioIo::new(io))
        .await
        .map_err(|e| unreachable(&e))?;
    tokio::spawn(async move {
        // Errors surface through the response body as well.
        let _ = conn.await;
    });
    let mut req = Request::get(target).header("host", host);
    if let Some(auth) = peer.auth {
        req = req.header("authorization", auth.header());
    }
    for (name, value) in headers {
        req = req.header(*name, *value);
    }
    for (name, value) in peer.headers {
        req = req.header(name, value);
    }
    let req = req
        .body(Empty::<Bytes>::new())
        .map_err(|e| unreachable(&e))?;
    let resp = tokio::time::timeout(CONNECT_TIMEOUT, sender.send_request(req))
        .await
        .map_err(|_| Refused::Unreachable("no response within 5s".into()))?
        .map_err(|e| unreachable(&e))?;
    let status = resp.status();
    if status == hyper::StatusCode::NO_CONTENT {
        return Err(Refused::NoContent);
    }
    if !status.is_success() {
        let retry_after = resp
            .headers()
            .get(hyper::header::RETRY_AFTER)
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.trim().parse::<u64>().ok())
            .map(Duration::from_secs);
        return Err(Refused::Status {
            status: status.as_u16(),
            retry_after,
            body: body_start(resp).await,
        });
    }
    if event_stream {
        let served = resp
            .headers()
            .get(hyper::header::CONTENT_TYPE)
            .map(|v| String::from_utf8_lossy(v.as_bytes()).into_owned())
            .unwrap_or_default();
        let essence = served.split(';').next().unwrap_or("").trim();
        if !essence.eq_ignore_ascii_case("text/event-stream") {
            let shown = if served.is_empty() {
                "(none)".to_string()
            } else {
                app_plugin::text::escape_for_terminal(&served).into_owned()
            };
            return Err(Refused::NotEventStream(shown));
        }
    }
    Ok(resp)
}

async fn tcp(host: &str, port: u16) -> Result<TcpStream, Refused> {
    let s = tokio::time::timeout(CONNECT_TIMEOUT, TcpStream::connect((host, port)))
        .await
        .map_err(|_| Refused::Unreachable("connect timed out".into()))?
        .map_err(|e| Refused::Unreachable(e.to_string()))?;
    let _ = s.set_nodelay(true);
    Ok(s)
}

/// The first [`MAX_SHOWN_BODY`] bytes of a refusal's body, within 1 s,
/// trimmed and escaped for the terminal.
async fn body_start(resp: hyper::Response<Incoming>) -> String {
    let limited = http_body_util::Limited::new(resp.into_body(), 64 * 1024);
    let bytes = tokio::time::timeout(Duration::from_secs(1), limited.collect())
        .await
        .ok()
        .and_then(|r| r.ok())
        .map(|c| c.to_bytes())
        .unwrap_or_default();
    let cut = &bytes[..bytes.len().min(MAX_SHOWN_BODY)];
    let text = String::from_utf8_lossy(cut);
    app_plugin::text::escape_for_terminal(text.trim()).into_owned()
}

trait IoStream: tokio::io::AsyncRead + tokio::io::AsyncWrite + Send + Unpin {}
impl<T: tokio::io::AsyncRead + tokio::io::AsyncWrite + Send + Unpin> IoStream for T {}
