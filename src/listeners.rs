//! Listener processes: `app-listener-<name>` executables that hear `app`'s
//! lifecycle events, one JSON line each, on their stdin.
//!
//! A listener can never block or break a command: events are written by a
//! thread of its own, it gets a bounded time to answer and to finish (at
//! most [`MAX_TIMEOUT`]), and then it and all it started are killed. A
//! signal that ends `app` does that at once (see [`crate::signals`]), and so
//! does `app`'s death, SIGKILL included (see [`crate::keeper`]).

use std::io::{BufRead, BufReader, Write};
use std::path::PathBuf;
use std::process::Stdio;
use std::sync::mpsc;
use std::time::{Duration, Instant};

use crate::config::ListenerSettings;
use crate::exec::OwnChild;

/// Default time a listener gets to answer `command.start` and to finish after `command.end`.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(1);
/// The most a listener can get (`timeout_ms` above it is lowered to it, with
/// a warning): every command waits for its listeners, so none may hold one
/// for long.
pub const MAX_TIMEOUT: Duration = Duration::from_secs(10);

/// The time a listener gets, and a warning when its `timeout_ms` was above
/// [`MAX_TIMEOUT`].
pub fn timeout(settings: &ListenerSettings) -> (Duration, Option<String>) {
    match settings.timeout_ms.map(Duration::from_millis) {
        None => (DEFAULT_TIMEOUT, None),
        Some(t) if t > MAX_TIMEOUT => (
            MAX_TIMEOUT,
            Some(format!(
                "listener '{}': \"timeout_ms\": {} is above the maximum of {} ms, so it gets {} ms; lower it in the config file",
                app_plugin::text::escape_for_terminal(&settings.name),
                t.as_millis(),
                MAX_TIMEOUT.as_millis(),
                MAX_TIMEOUT.as_millis()
            )),
        ),
        Some(t) => (t, None),
    }
}

/// A running listener.
pub struct Listener {
    pub name: String,
    pub path: PathBuf,
    patterns: Vec<String>,
    pub can_abort: bool,
    pub timeout: Duration,
    /// Found in a trusted place (or trusted by the config): it hears the
    /// whole JSON context; any other only what the environment carries.
    pub trusted: bool,
    child: OwnChild,
    lines: Option<mpsc::Sender<String>>,
    answers: Option<mpsc::Receiver<String>>,
}

impl Listener {
    /// Starts the listener at `path`, with `env` added to its environment.
    pub fn start(
        settings: &ListenerSettings,
        path: PathBuf,
        env: &[(&'static str, std::ffi::OsString)],
        show_stderr: bool,
    ) -> std::io::Result<Listener> {
        let mut cmd = crate::keeper::command(&path);
        cmd.stdin(Stdio::piped())
            .stdout(if settings.can_abort {
                Stdio::piped()
            } else {
                Stdio::null()
            })
            .stderr(if show_stderr {
                Stdio::inherit()
            } else {
                Stdio::null()
            });
        for (k, v) in env {
            cmd.env(k, v);
        }
        // Its own process group, out of the terminal's reach; its keeper
        // kills what it started.
        let mut child = OwnChild::spawn(&mut cmd, true)?;
        let (tx, rx) = mpsc::channel::<String>();
        if let Some(mut stdin) = child.child().stdin.take() {
            std::thread::spawn(move || {
                for line in rx {
                    if stdin.write_all(line.as_bytes()).is_err() {
                        return;
                    }
                }
                // Dropping stdin closes it: the listener sees EOF after command.end.
            });
        }
        let answers = child.child().stdout.take().map(|stdout| {
            let (atx, arx) = mpsc::channel();
            std::thread::spawn(move || {
                for line in BufReader::new(stdout).lines().map_while(Result::ok) {
                    if atx.send(line).is_err() {
                        return;
                    }
                }
            });
            arx
        });
        Ok(Listener {
            name: settings.name.clone(),
            path,
            patterns: settings.events.clone(),
            can_abort: settings.can_abort,
            timeout: timeout(settings).0,
            trusted: false,
            child,
            lines: Some(tx),
            answers,
        })
    }

    /// Whether this listener subscribed to `event`.
    pub fn wants(&self, event: &str) -> bool {
        self.patterns.iter().any(|p| matches_event(p, event))
    }

    /// Queues one event line; never blocks.
    pub fn send(&self, line: &str) {
        if let Some(tx) = &self.lines {
            let _ = tx.send(format!("{line}\n"));
        }
    }

    /// Waits up to the listener's time for a veto answer to `command.start`.
    /// Returns the reason when it answered `{"abort": "reason"}`.
    /// Its time counts from `since`, when the event was sent.
    pub fn abort_reason(&self, since: Instant) -> Option<String> {
        let answers = self.answers.as_ref()?;
        let deadline = since + self.timeout;
        loop {
            let left = deadline.checked_duration_since(Instant::now())?;
            let line = answers.recv_timeout(left).ok()?;
            if line.trim().is_empty() {
                continue;
            }
            let value: serde_json::Value = serde_json::from_str(&line).ok()?;
            return value.get("abort").map(|r| match r.as_str() {
                Some(s) => s.to_string(),
                None => r.to_string(),
            });
        }
    }

    /// Closes the listener's stdin and gives it its time to exit; then kills
    /// its process group. Returns a warning when it had to be killed or failed.
    pub fn finish(mut self) -> Option<String> {
        drop(self.lines.take());
        let exited = self.child.exited_within(self.timeout);
        // The group goes in every case: a listener that exited may have left
        // children behind.
        let status = self.child.finish().ok();
        let name = app_plugin::text::escape_for_terminal(&self.name);
        match (exited, status) {
            (true, Some(s)) if s.success() => None,
            (true, Some(s)) => Some(format!("listener '{name}' failed ({s})")),
            _ => Some(format!(
                "listener '{name}' did not finish within {} ms and was killed",
                self.timeout.as_millis()
            )),
        }
    }
}

/// `command.*` matches `command.start`; `*` matches everything.
pub fn matches_event(pattern: &str, event: &str) -> bool {
    match pattern.strip_suffix('*') {
        Some(prefix) => event.starts_with(prefix),
        None => pattern == event,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn timeouts_are_capped_at_the_maximum() {
        let settings = |ms: Option<u64>| ListenerSettings {
            name: "x".into(),
            events: vec!["*".into()],
            can_abort: false,
            timeout_ms: ms,
        };
        assert_eq!(timeout(&settings(None)), (DEFAULT_TIMEOUT, None));
        assert_eq!(timeout(&settings(Some(10_000))), (MAX_TIMEOUT, None));
        let (t, warning) = timeout(&settings(Some(u64::MAX)));
        assert_eq!(t, MAX_TIMEOUT);
        assert!(warning.is_some_and(|w| w.contains("above the maximum of 10000 ms")));
    }

    #[test]
    fn event_patterns() {
        assert!(matches_event("command.*", "command.start"));
        assert!(matches_event("*", "command.end"));
        assert!(matches_event("command.end", "command.end"));
        assert!(!matches_event("command.end", "command.start"));
    }
}
