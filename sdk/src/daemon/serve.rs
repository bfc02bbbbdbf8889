//! [`serve`]: one accept loop for a daemon's HTTP service on one listener
//! (the unix socket, or TCP with or without TLS), with limits a plain
//! `axum::serve` does not have:
//!
//! - at most [`Limits::max_connections`] at once: past that the listener
//!   stops accepting until one closes, so a flood on TCP cannot take the
//!   file descriptors the unix socket needs;
//! - a request head must arrive within the request timeout of the
//!   connection opening or of the previous answer (hyper's header-read
//!   timeout, which also bounds how long a kept-alive connection sits
//!   idle); a TLS handshake gets as long;
//! - optionally, an answer the client takes nothing of for a while ends the
//!   connection ([`WriteTimeout`]);
//! - a request hyper cannot parse gets a JSON error
//!   ([`crate::http::JsonParseErrors`]), not hyper's empty one;
//! - when the [`Shutdown`] fires, no more connections are accepted and open
//!   ones get a grace period to finish their answer.

use std::io;
use std::sync::Arc;
use std::time::Duration;

use hyper::body::{Body, Incoming};
use hyper::server::conn::http1;
use hyper::{Request, Response};
use hyper_util::rt::{TokioIo, TokioTimer};
use hyper_util::service::TowerToHyperService;
use tokio::io::{AsyncRead, AsyncWrite};
use tokio::sync::Semaphore;

use super::{Shutdown, WriteTimeout};
use crate::http::JsonParseErrors;
use crate::log::{DEBUG, WARN};

type BoxError = Box<dyn std::error::Error + Send + Sync>;

/// What [`serve`] asks of the service, named once for the private
/// functions it hands connections to (the blanket impl makes it an alias).
trait HttpService<B>:
    tower_service::Service<
        Request<Incoming>,
        Response = Response<B>,
        Future: Send + 'static,
        Error: Into<BoxError>,
    > + Clone
    + Send
    + 'static
{
}

impl<S, B> HttpService<B> for S
where
    S: tower_service::Service<Request<Incoming>, Response = Response<B>> + Clone + Send + 'static,
    S::Future: Send + 'static,
    S::Error: Into<BoxError>,
{
}

/// What [`serve`] asks of a response body; an alias like [`HttpService`].
trait HttpBody: Body<Data: Send, Error: Into<BoxError>> + Send + 'static {}

impl<B> HttpBody for B
where
    B: Body + Send + 'static,
    B::Data: Send,
    B::Error: Into<BoxError>,
{
}

/// A listener the loop accepts from: tokio's TCP and unix listeners.
pub trait Accept: Send + 'static {
    /// A connection.
    type Io: AsyncRead + AsyncWrite + Unpin + Send + 'static;
    /// The next connection.
    fn accept(&self) -> impl std::future::Future<Output = io::Result<Self::Io>> + Send;
}

impl Accept for tokio::net::TcpListener {
    type Io = tokio::net::TcpStream;
    async fn accept(&self) -> io::Result<Self::Io> {
        let (s, _) = tokio::net::TcpListener::accept(self).await?;
        // Answers and events are small writes: send them at once.
        let _ = s.set_nodelay(true);
        Ok(s)
    }
}

impl Accept for tokio::net::UnixListener {
    type Io = tokio::net::UnixStream;
    async fn accept(&self) -> io::Result<Self::Io> {
        tokio::net::UnixListener::accept(self).await.map(|(s, _)| s)
    }
}

/// The limits of one [`serve`] loop.
///
/// ```
/// use std::time::Duration;
/// use app_plugin::daemon::Limits;
/// let limits = Limits::new(Duration::from_secs(30))
///     .max_connections(256)
///     .write_timeout(Duration::from_secs(30));
/// # drop(limits);
/// ```
#[derive(Clone)]
pub struct Limits {
    request_timeout: Duration,
    max_connections: Option<usize>,
    write_timeout: Option<Duration>,
    max_buf_size: Option<usize>,
    shutdown_grace: Duration,
    #[cfg(feature = "tls")]
    tls: Option<tokio_rustls::TlsAcceptor>,
}

impl std::fmt::Debug for Limits {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let mut d = f.debug_struct("Limits");
        d.field("request_timeout", &self.request_timeout)
            .field("max_connections", &self.max_connections)
            .field("write_timeout", &self.write_timeout)
            .field("max_buf_size", &self.max_buf_size)
            .field("shutdown_grace", &self.shutdown_grace);
        #[cfg(feature = "tls")]
        d.field("tls", &self.tls.is_some());
        d.finish()
    }
}

impl Limits {
    /// A request head (and a TLS handshake) must arrive within
    /// `request_timeout`; no connection cap, no write timeout, hyper's
    /// buffer, one second of grace at shutdown.
    ///
    /// ```
    /// let limits = app_plugin::daemon::Limits::new(std::time::Duration::from_secs(30));
    /// # drop(limits);
    /// ```
    pub fn new(request_timeout: Duration) -> Limits {
        Limits {
            request_timeout,
            max_connections: None,
            write_timeout: None,
            max_buf_size: None,
            shutdown_grace: Duration::from_secs(1),
            #[cfg(feature = "tls")]
            tls: None,
        }
    }

    /// At most `n` connections at once; more wait in the kernel's backlog.
    ///
    /// ```
    /// # let limits = app_plugin::daemon::Limits::new(std::time::Duration::from_secs(30));
    /// let limits = limits.max_connections(256);
    /// # drop(limits);
    /// ```
    pub fn max_connections(mut self, n: usize) -> Limits {
        self.max_connections = Some(n);
        self
    }

    /// A write (or flush) that makes no progress for `timeout` ends the
    /// connection, freeing its slot ([`WriteTimeout`]).
    ///
    /// ```
    /// # let limits = app_plugin::daemon::Limits::new(std::time::Duration::from_secs(30));
    /// let limits = limits.write_timeout(std::time::Duration::from_secs(30));
    /// # drop(limits);
    /// ```
    pub fn write_timeout(mut self, timeout: Duration) -> Limits {
        self.write_timeout = Some(timeout);
        self
    }

    /// hyper's buffer per connection, in bytes (at least 8 KiB): how much a
    /// client that stops reading holds queued.
    ///
    /// ```
    /// # let limits = app_plugin::daemon::Limits::new(std::time::Duration::from_secs(30));
    /// let limits = limits.max_buf_size(16 * 1024);
    /// # drop(limits);
    /// ```
    pub fn max_buf_size(mut self, bytes: usize) -> Limits {
        self.max_buf_size = Some(bytes);
        self
    }

    /// Serves HTTPS through `acceptor` (a [`super::TcpBound`]'s `tls`).
    ///
    /// ```no_run
    /// # fn f(bound: app_plugin::daemon::TcpBound) {
    /// let limits = app_plugin::daemon::Limits::new(std::time::Duration::from_secs(30))
    ///     .tls(bound.tls.clone());
    /// # drop(limits); }
    /// ```
    #[cfg(feature = "tls")]
    pub fn tls(mut self, acceptor: Option<tokio_rustls::TlsAcceptor>) -> Limits {
        self.tls = acceptor;
        self
    }
}

/// Serves `service` on `listener` until `shutdown` fires; then open
/// connections get a second to finish. Accept errors that pass (out of file
/// descriptors, an aborted connection) are logged and waited out; any other
/// is returned.
///
/// ```no_run
/// # async fn f(listener: tokio::net::UnixListener, app: axum_like::Router) -> std::io::Result<()> {
/// use app_plugin::daemon::{serve, Limits, Shutdown};
/// let shutdown = Shutdown::new();
/// serve(listener, app, Limits::new(std::time::Duration::from_secs(30)), shutdown).await
/// # }
/// # mod axum_like {
/// #     #[derive(Clone)] pub struct Router;
/// #     impl tower_service::Service<hyper::Request<hyper::body::Incoming>> for Router {
/// #         type Response = hyper::Response<String>;
/// #         type Error = std::convert::Infallible;
/// #         type Future = std::future::Ready<Result<Self::Response, Self::Error>>;
/// #         fn poll_ready(&mut self, _: &mut std::task::Context<'_>) -> std::task::Poll<Result<(), Self::Error>> { std::task::Poll::Ready(Ok(())) }
/// #         fn call(&mut self, _: hyper::Request<hyper::body::Incoming>) -> Self::Future { std::future::ready(Ok(hyper::Response::new(String::new()))) }
/// #     }
/// # }
/// ```
pub async fn serve<L, S, B>(
    listener: L,
    service: S,
    limits: Limits,
    shutdown: Shutdown,
) -> io::Result<()>
where
    L: Accept,
    S: tower_service::Service<Request<Incoming>, Response = Response<B>> + Clone + Send + 'static,
    S::Future: Send + 'static,
    S::Error: Into<BoxError>,
    B: Body + Send + 'static,
    B::Data: Send,
    B::Error: Into<BoxError>,
{
    let max = limits.max_connections.unwrap_or(Semaphore::MAX_PERMITS);
    let slots = Arc::new(Semaphore::new(max));
    let limits = Arc::new(limits);
    let mut warned = false;
    let mut failing = false;
    loop {
        // A slot first: at the cap, stop accepting (clients wait in the
        // kernel's backlog) instead of taking more descriptors.
        let permit = tokio::select! {
            p = slots.clone().acquire_owned() => match p {
                Ok(p) => p,
                Err(_) => return Ok(()),
            },
            _ = shutdown.recv() => return Ok(()),
        };
        if slots.available_permits() == 0 && !warned {
            warned = true;
            crate::log!(WARN, "the API has {max} connections open on one listener (--max-connections); new ones wait");
        }
        let io = tokio::select! {
            r = listener.accept() => r,
            _ = shutdown.recv() => return Ok(()),
        };
        let io = match io {
            Ok(io) => {
                failing = false;
                io
            }
            Err(e) if is_transient(&e) => {
                // Once per run of failures: out of descriptors repeats fast.
                if !failing {
                    crate::log!(WARN, "cannot accept a connection: {e}; retrying");
                }
                failing = true;
                tokio::time::sleep(Duration::from_millis(100)).await;
                continue;
            }
            Err(e) => return Err(e),
        };
        tokio::spawn(connection(
            io,
            service.clone(),
            limits.clone(),
            shutdown.clone(),
            permit,
        ));
    }
}

/// One connection: the TLS handshake if any, then HTTP/1.1 until either
/// side closes or the stop's grace runs out.
async fn connection<I, S, B>(
    io: I,
    service: S,
    limits: Arc<Limits>,
    shutdown: Shutdown,
    _slot: tokio::sync::OwnedSemaphorePermit,
) where
    I: AsyncRead + AsyncWrite + Unpin + Send + 'static,
    S: HttpService<B>,
    B: HttpBody,
{
    #[cfg(feature = "tls")]
    if let Some(acceptor) = &limits.tls {
        match tokio::time::timeout(limits.request_timeout, acceptor.accept(io)).await {
            Ok(Ok(tls)) => http(tls, service, &limits, shutdown).await,
            Ok(Err(e)) => crate::log!(DEBUG, "TLS handshake failed: {e}"),
            Err(_) => crate::log!(DEBUG, "TLS handshake timed out"),
        }
        return;
    }
    http(io, service, &limits, shutdown).await;
}

async fn http<I, S, B>(io: I, service: S, limits: &Limits, shutdown: Shutdown)
where
    I: AsyncRead + AsyncWrite + Unpin + Send + 'static,
    S: HttpService<B>,
    B: HttpBody,
{
    let mut builder = http1::Builder::new();
    builder
        .timer(TokioTimer::new())
        .header_read_timeout(limits.request_timeout);
    if let Some(bytes) = limits.max_buf_size {
        builder.max_buf_size(bytes);
    }
    let io = TokioIo::new(JsonParseErrors::new(WriteTimeout::new(
        io,
        limits.write_timeout,
    )));
    let conn = builder.serve_connection(io, TowerToHyperService::new(service));
    tokio::pin!(conn);
    tokio::select! {
        r = conn.as_mut() => {
            if let Err(e) = r {
                crate::log!(DEBUG, "connection ended: {e}");
            }
        }
        _ = shutdown.recv() => {
            conn.as_mut().graceful_shutdown();
            let _ = tokio::time::timeout(limits.shutdown_grace, conn).await;
        }
    }
}

/// Accept errors that pass: all but those saying the listener itself is
/// unusable. Out of descriptors or memory is waited out, and Linux reports
/// a new connection's pending network error (`ECONNABORTED`, `EPROTO`,
/// `ENETDOWN` …) on `accept`.
fn is_transient(e: &io::Error) -> bool {
    !matches!(
        e.raw_os_error(),
        Some(libc::EBADF | libc::EINVAL | libc::ENOTSOCK | libc::EFAULT)
    )
}
