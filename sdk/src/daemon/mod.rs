//! The scaffold of a plugin daemon that serves HTTP on its instance socket
//! and, optionally, TCP (feature `daemon`; HTTPS with feature `tls`).
//!
//! Every such daemon starts and stops the same way, so the steps live here
//! once, in the order they happen:
//!
//! 1. [`runtime`]: the async runtime, with the stop signals unblocked;
//! 2. [`Shutdown::on_stop_signals`]: SIGTERM and SIGINT handlers first, so
//!    that a signal during start-up still ends in a clean stop;
//! 3. [`claim`]: the instance's place ([`crate::instance::InstanceFiles`]),
//!    refused if another instance of that name runs; the daemon then opens
//!    whatever must be exclusive to it;
//! 4. [`Claimed::listen`]: the TCP listener and its `.listen` file, the pid
//!    file, and the unix socket last, so that whoever sees the socket finds
//!    the other files in place;
//! 5. [`serve`]: one accept loop per listener, with a connection cap, a
//!    request-head (and TLS handshake) timeout, a write timeout, JSON
//!    answers for what hyper rejects ([`crate::http::JsonParseErrors`]) and
//!    a graceful stop when its [`Shutdown`] fires;
//! 6. the daemon's own work, until [`Shutdown::recv`] says why to stop.
//!
//! Failures have one shape, [`Error`], with one mapping to exit codes
//! ([`code`]): usage errors exit 2, everything else 1; a daemon adds its
//! own failures as the type parameter.
//!
//! ```no_run
//! use app_plugin::daemon::{self, Limits, Shutdown};
//! use std::time::Duration;
//!
//! # async fn app() -> Result<(), daemon::Error> {
//! # let service = tower_service_fn();
//! let shutdown = Shutdown::on_stop_signals()?;
//! let dir = std::path::Path::new("/run/user/1000/app/plugins");
//! let listeners = daemon::claim(dir, "demo", "instance")?.listen(None).await?;
//! let limits = Limits::new(Duration::from_secs(30)).max_connections(256);
//! let api = shutdown.clone();
//! tokio::spawn(daemon::serve(listeners.unix, service, limits, api));
//! let why = shutdown.recv().await;
//! app_plugin::info!("{why}: stopping");
//! # Ok(()) }
//! # fn tower_service_fn() -> Svc { Svc }
//! # #[derive(Clone)] struct Svc;
//! # impl tower_service::Service<hyper::Request<hyper::body::Incoming>> for Svc {
//! #     type Response = hyper::Response<String>;
//! #     type Error = std::convert::Infallible;
//! #     type Future = std::future::Ready<Result<Self::Response, Self::Error>>;
//! #     fn poll_ready(&mut self, _: &mut std::task::Context<'_>) -> std::task::Poll<Result<(), Self::Error>> { std::task::Poll::Ready(Ok(())) }
//! #     fn call(&mut self, _: hyper::Request<hyper::body::Incoming>) -> Self::Future { std::future::ready(Ok(hyper::Response::new(String::new()))) }
//! # }
//! ```

mod error;
mod listen;
mod serve;
mod shutdown;
#[cfg(feature = "tls")]
pub mod tls;
mod write_timeout;

pub use error::{code, Error};
pub use listen::{claim, Claimed, Listeners, Tcp, TcpBound};
pub use serve::{serve, Accept, Limits};
pub use shutdown::{Reason, Shutdown};
pub use write_timeout::WriteTimeout;

/// The async runtime of a daemon: two worker threads, IO and timers on,
/// after unblocking SIGTERM and SIGINT
/// ([`crate::instance::unblock_stop_signals`]) so that the runtime's threads
/// inherit an open mask.
///
/// ```no_run
/// let runtime = app_plugin::daemon::runtime::<std::convert::Infallible>()?;
/// runtime.block_on(async { /* the daemon */ });
/// # Ok::<(), app_plugin::daemon::Error>(())
/// ```
pub fn runtime<E>() -> Result<tokio::runtime::Runtime, Error<E>> {
    crate::instance::unblock_stop_signals();
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .map_err(|source| Error::Runtime {
            what: "start the async runtime",
            source,
        })
}
