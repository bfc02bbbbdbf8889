//! [`Shutdown`]: the one stop signal of a daemon's tasks, in the manner of
//! mini-redis: cheap to clone, fired once, and it says why.

use std::fmt;
use std::sync::Arc;

use tokio::signal::unix::{signal, SignalKind};
use tokio::sync::watch;

use super::Error;

/// Why a daemon stops.
///
/// ```
/// use app_plugin::daemon::Reason;
/// assert_eq!(Reason::Terminate.to_string(), "SIGTERM");
/// assert_eq!(Reason::Interrupt.to_string(), "SIGINT");
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum Reason {
    /// SIGTERM: a service manager or `kill` asked.
    Terminate,
    /// SIGINT: Ctrl-C.
    Interrupt,
}

impl fmt::Display for Reason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Reason::Terminate => "SIGTERM",
            Reason::Interrupt => "SIGINT",
        })
    }
}

/// A stop that tasks await: every clone sees the same one, the first
/// [`trigger`](Shutdown::trigger) fires it, and [`recv`](Shutdown::recv)
/// returns its reason (at once if it has fired already).
///
/// ```
/// use app_plugin::daemon::{Reason, Shutdown};
///
/// # tokio::runtime::Builder::new_current_thread().build().unwrap().block_on(async {
/// let shutdown = Shutdown::new();
/// let task = tokio::spawn({
///     let shutdown = shutdown.clone();
///     async move { shutdown.recv().await }
/// });
/// assert!(!shutdown.is_shutdown());
/// shutdown.trigger(Reason::Terminate);
/// shutdown.trigger(Reason::Interrupt); // the first reason stays
/// assert_eq!(task.await.unwrap(), Reason::Terminate);
/// assert_eq!(shutdown.reason(), Some(Reason::Terminate));
/// # });
/// ```
#[derive(Debug, Clone)]
pub struct Shutdown {
    // A watch rather than a broadcast: a task that starts waiting after the
    // stop still sees it.
    tx: Arc<watch::Sender<Option<Reason>>>,
}

impl Default for Shutdown {
    fn default() -> Shutdown {
        Shutdown::new()
    }
}

impl Shutdown {
    /// A stop that has not fired.
    ///
    /// ```
    /// assert!(!app_plugin::daemon::Shutdown::new().is_shutdown());
    /// ```
    pub fn new() -> Shutdown {
        Shutdown {
            tx: Arc::new(watch::Sender::new(None)),
        }
    }

    /// A stop fired by the first SIGTERM or SIGINT. The handlers are in
    /// place when this returns, so call it first: a signal during start-up
    /// is kept, and the daemon stops cleanly once it awaits the stop.
    /// Must be called inside a tokio runtime.
    ///
    /// ```no_run
    /// # async fn run() -> Result<(), app_plugin::daemon::Error> {
    /// let shutdown = app_plugin::daemon::Shutdown::on_stop_signals()?;
    /// let why = shutdown.recv().await;
    /// app_plugin::info!("{why}: stopping");
    /// # Ok(()) }
    /// ```
    pub fn on_stop_signals<E>() -> Result<Shutdown, Error<E>> {
        let handler = |kind, what| signal(kind).map_err(|source| Error::Runtime { what, source });
        let mut term = handler(SignalKind::terminate(), "handle SIGTERM")?;
        let mut int = handler(SignalKind::interrupt(), "handle SIGINT")?;
        let shutdown = Shutdown::new();
        let fire = shutdown.clone();
        tokio::spawn(async move {
            let why = tokio::select! {
                _ = term.recv() => Reason::Terminate,
                _ = int.recv() => Reason::Interrupt,
            };
            fire.trigger(why);
        });
        Ok(shutdown)
    }

    /// Fires the stop; a stop that has fired keeps its first reason.
    ///
    /// ```
    /// use app_plugin::daemon::{Reason, Shutdown};
    /// let shutdown = Shutdown::new();
    /// shutdown.trigger(Reason::Interrupt);
    /// assert!(shutdown.is_shutdown());
    /// ```
    pub fn trigger(&self, reason: Reason) {
        self.tx.send_if_modified(|now| {
            let first = now.is_none();
            if first {
                *now = Some(reason);
            }
            first
        });
    }

    /// Whether the stop has fired.
    ///
    /// ```
    /// # use app_plugin::daemon::Shutdown;
    /// assert!(!Shutdown::new().is_shutdown());
    /// ```
    pub fn is_shutdown(&self) -> bool {
        self.tx.borrow().is_some()
    }

    /// Why the stop fired, if it has.
    ///
    /// ```
    /// # use app_plugin::daemon::Shutdown;
    /// assert_eq!(Shutdown::new().reason(), None);
    /// ```
    pub fn reason(&self) -> Option<Reason> {
        *self.tx.borrow()
    }

    /// Waits for the stop and returns its reason.
    ///
    /// ```
    /// use app_plugin::daemon::{Reason, Shutdown};
    /// # tokio::runtime::Builder::new_current_thread().build().unwrap().block_on(async {
    /// let shutdown = Shutdown::new();
    /// shutdown.trigger(Reason::Terminate);
    /// assert_eq!(shutdown.recv().await, Reason::Terminate);
    /// # });
    /// ```
    pub async fn recv(&self) -> Reason {
        let mut rx = self.tx.subscribe();
        // `wait_for` fails only once the sender is gone, and `self` holds it.
        let reason = match rx.wait_for(Option::is_some).await {
            Ok(reason) => *reason,
            Err(_) => None,
        };
        match reason {
            Some(reason) => reason,
            None => std::future::pending().await,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_clone_made_before_and_a_waiter_started_after_both_see_the_stop() {
        let shutdown = Shutdown::new();
        let early = shutdown.clone();
        let waiting = tokio::spawn(async move { early.recv().await });
        tokio::task::yield_now().await;
        assert!(!waiting.is_finished());
        shutdown.trigger(Reason::Interrupt);
        assert_eq!(waiting.await.unwrap(), Reason::Interrupt);
        let late = shutdown.clone();
        assert_eq!(late.recv().await, Reason::Interrupt);
    }
}
