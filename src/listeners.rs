//! Listener processes: `app-listener-<name>` executables that hear `app`'s
//! lifecycle events, one JSON line each, on their stdin.
//!
//! A listener can never block or break a command: events are written by a
//! thread of its own, it gets a bounded time to answer and to finish, and
//! then its whole process group is killed. It also gets SIGKILL if `app`
//! itself dies (`PR_SET_PDEATHSIG`).

use std::io::{BufRead, BufReader, Write};
use std::os::unix::process::CommandExt;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use crate::config::ListenerSettings;

/// Default time a listener gets to answer `command.start` and to finish after `command.end`.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(1);

/// A running listener.
pub struct Listener {
    pub name: String,
    pub path: PathBuf,
    patterns: Vec<String>,
    pub can_abort: bool,
    pub timeout: Duration,
    child: Child,
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
        let mut cmd = Command::new(&path);
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
            })
            // Its own process group, so killing it also kills what it started.
            .process_group(0);
        for (k, v) in env {
            cmd.env(k, v);
        }
        crate::exec::die_with_app(&mut cmd, libc::SIGKILL);
        let mut child = cmd.spawn()?;
        let (tx, rx) = mpsc::channel::<String>();
        if let Some(mut stdin) = child.stdin.take() {
            std::thread::spawn(move || {
                for line in rx {
                    if stdin.write_all(line.as_bytes()).is_err() {
                        return;
                    }
                }
                // Dropping stdin closes it: the listener sees EOF after command.end.
            });
        }
        let answers = child.stdout.take().map(|stdout| {
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
            timeout: settings
                .timeout_ms
                .map(Duration::from_millis)
                .unwrap_or(DEFAULT_TIMEOUT),
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
        let exited = exited_within(self.child.id(), self.timeout);
        // The group goes in every case: a listener that exited may have left
        // children behind. Its zombie still holds the group id, so this
        // cannot hit another process's group.
        self.kill_group();
        let status = self.child.wait().ok();
        match (exited, status) {
            (true, Some(s)) if s.success() => None,
            (true, Some(s)) => Some(format!("listener '{}' failed ({s})", self.name)),
            _ => Some(format!(
                "listener '{}' did not finish within {} ms and was killed",
                self.name,
                self.timeout.as_millis()
            )),
        }
    }

    fn kill_group(&mut self) {
        let pgid = self.child.id() as libc::pid_t;
        // SAFETY: killpg has no memory-safety preconditions; the group is the
        // listener's own (process_group(0) above).
        unsafe { libc::killpg(pgid, libc::SIGKILL) };
    }
}

impl Drop for Listener {
    fn drop(&mut self) {
        // Any path that did not call finish (an error, a panic): no listener
        // process may outlive app.
        if let Ok(None) = self.child.try_wait() {
            self.kill_group();
            let _ = self.child.wait();
        }
    }
}

/// Whether process `pid` (our child) exits within `timeout`. It is left
/// unreaped (`WNOWAIT`), so its process group stays valid for `killpg`.
fn exited_within(pid: u32, timeout: Duration) -> bool {
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        // SAFETY: siginfo_t is plain data that waitid fills in.
        let mut info: libc::siginfo_t = unsafe { std::mem::zeroed() };
        let flags = libc::WEXITED | libc::WNOWAIT;
        loop {
            // SAFETY: waiting on our own child; `info` is a valid out-pointer.
            let rc = unsafe { libc::waitid(libc::P_PID, pid as libc::id_t, &mut info, flags) };
            if rc == 0 || std::io::Error::last_os_error().kind() != std::io::ErrorKind::Interrupted
            {
                break;
            }
        }
        let _ = tx.send(());
    });
    rx.recv_timeout(timeout).is_ok()
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
    fn event_patterns() {
        assert!(matches_event("command.*", "command.start"));
        assert!(matches_event("*", "command.end"));
        assert!(matches_event("command.end", "command.end"));
        assert!(!matches_event("command.end", "command.start"));
    }
}
