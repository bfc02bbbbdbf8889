//! Serving the API on one listener (the unix socket, or TCP with or without
//! TLS) with limits that `axum::serve` does not have:
//!
//! - at most `max_connections` connections at once per listener: past that
//!   the listener stops accepting until one closes, so a flood on TCP cannot
//!   take the file descriptors the unix socket needs;
//! - a request head must arrive within `--request-timeout` (default
//!   [`DEFAULT_REQUEST_TIMEOUT`]) of the connection opening or of the
//!   previous answer (hyper's header-read timeout, which also bounds how
//!   long a kept-alive connection may sit idle); the body then gets as long
//!   again (see [`crate::api`]'s body extractor);
//! - a TLS handshake must finish within that time too, and an answer the
//!   client takes nothing of for that long ends the connection
//!   ([`WriteTimeout`]);
//! - a request hyper cannot parse (a URL over 64 KiB, a head over its
//!   buffer) gets the JSON error every other answer has, not hyper's empty
//!   one ([`app_plugin::http::JsonParseErrors`]).

use std::sync::Arc;
use std::time::Duration;

use app_plugin::http::JsonParseErrors;
use axum::Router;
use hyper::server::conn::http1;
use hyper_util::rt::{TokioIo, TokioTimer};
use hyper_util::service::TowerToHyperService;
use tokio::io::{AsyncRead, AsyncWrite};
use tokio::sync::Semaphore;
use tokio_util::sync::CancellationToken;

use crate::write_timeout::WriteTimeout;

/// The default of `--request-timeout`: how long a client may take to send
/// a request head (or a TLS handshake), counted from the connection's start
/// or the end of the previous answer, and then its body.
pub const DEFAULT_REQUEST_TIMEOUT: Duration = Duration::from_secs(30);

/// How long open connections get to finish at shutdown.
const SHUTDOWN_GRACE: Duration = Duration::from_secs(1);

/// The default of `--max-connections`, per listener.
pub const DEFAULT_MAX_CONNECTIONS: usize = 256;

/// A listener the loop can accept from.
pub trait Accept: Send + 'static {
    type Io: AsyncRead + AsyncWrite + Unpin + Send + 'static;
    fn accept(&self) -> impl std::future::Future<Output = std::io::Result<Self::Io>> + Send;
}

impl Accept for tokio::net::TcpListener {
    type Io = tokio::net::TcpStream;
    async fn accept(&self) -> std::io::Result<Self::Io> {
        let (s, _) = tokio::net::TcpListener::accept(self).await?;
        // Answers are small: send them at once.
        let _ = s.set_nodelay(true);
        Ok(s)
    }
}

impl Accept for tokio::net::UnixListener {
    type Io = tokio::net::UnixStream;
    async fn accept(&self) -> std::io::Result<Self::Io> {
        tokio::net::UnixListener::accept(self).await.map(|(s, _)| s)
    }
}

/// Serves `app` on `listener` until `stop`, through TLS when `tls` is set.
pub async fn serve<L: Accept>(
    listener: L,
    tls: Option<tokio_rustls::TlsAcceptor>,
    app: Router,
    max_connections: usize,
    timeout: Duration,
    stop: CancellationToken,
) {
    let slots = Arc::new(Semaphore::new(max_connections));
    let mut warned = false;
    loop {
        // A slot first: at the cap, stop accepting (clients wait in the
        // kernel's backlog) instead of taking more descriptors.
        let permit = tokio::select! {
            p = slots.clone().acquire_owned() => match p {
                Ok(p) => p,
                Err(_) => return,
            },
            _ = stop.cancelled() => return,
        };
        if slots.available_permits() == 0 && !warned {
            warned = true;
            warn!("the API has {max_connections} connections open on one listener (--max-connections); new ones wait");
        }
        let io = tokio::select! {
            r = listener.accept() => r,
            _ = stop.cancelled() => return,
        };
        let io = match io {
            Ok(io) => io,
            Err(e) => {
                // Out of descriptors and the like: pause rather than spin.
                debug!("API accept failed: {e}");
                tokio::time::sleep(Duration::from_millis(50)).await;
                continue;
            }
        };
        let app = app.clone();
        let stop = stop.clone();
        let tls = tls.clone();
        tokio::spawn(async move {
            match tls {
                None => connection(io, app, timeout, stop).await,
                Some(acceptor) => match tokio::time::timeout(timeout, acceptor.accept(io)).await {
                    Ok(Ok(tls)) => connection(tls, app, timeout, stop).await,
                    Ok(Err(e)) => debug!("API TLS handshake failed: {e}"),
                    Err(_) => debug!("API TLS handshake timed out"),
                },
            }
            drop(permit);
        });
    }
}

async fn connection<I>(io: I, app: Router, timeout: Duration, stop: CancellationToken)
where
    I: AsyncRead + AsyncWrite + Unpin + Send + 'static,
{
    let service = TowerToHyperService::new(app);
    let conn = http1::Builder::new()
        .timer(TokioTimer::new())
        .header_read_timeout(timeout)
        .serve_connection(
            TokioIo::new(JsonParseErrors::new(WriteTimeout::new(io, timeout))),
            service,
        );
    tokio::pin!(conn);
    tokio::select! {
        r = conn.as_mut() => {
            if let Err(e) = r {
                debug!("API connection ended: {e}");
            }
        }
        _ = stop.cancelled() => {
            conn.as_mut().graceful_shutdown();
            let _ = tokio::time::timeout(SHUTDOWN_GRACE, conn).await;
        }
    }
}

/// The TLS settings of `--tls-cert` and `--tls-key` (PEM files).
pub fn tls_acceptor(
    cert: &std::path::Path,
    key: &std::path::Path,
) -> Result<tokio_rustls::TlsAcceptor, String> {
    // PEM files: regular files of at most 1 MiB.
    let cert_text = crate::files::read_file(cert, "--tls-cert", 1 << 20)?;
    let key_text = crate::files::read_file(key, "--tls-key", 1 << 20)?;
    let certs: Vec<_> = rustls_pemfile::certs(&mut cert_text.as_slice())
        .collect::<Result<_, _>>()
        .map_err(|e| format!("--tls-cert {}: not PEM: {e}", cert.display()))?;
    if certs.is_empty() {
        return Err(format!(
            "--tls-cert {} holds no certificate (-----BEGIN CERTIFICATE-----)",
            cert.display()
        ));
    }
    let key = rustls_pemfile::private_key(&mut key_text.as_slice())
        .map_err(|e| format!("--tls-key {}: not PEM: {e}", key.display()))?
        .ok_or_else(|| {
            format!(
                "--tls-key {} holds no private key (-----BEGIN PRIVATE KEY-----)",
                key.display()
            )
        })?;
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let config = rustls::ServerConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(|e| format!("cannot set up TLS: {e}"))?
        .with_no_client_auth()
        .with_single_cert(certs, key)
        .map_err(|e| format!("--tls-cert and --tls-key do not make a usable pair: {e}"))?;
    Ok(tokio_rustls::TlsAcceptor::from(Arc::new(config)))
}
