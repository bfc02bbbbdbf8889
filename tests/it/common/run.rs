//! A run of `app` in a sandbox, written as one chain (in the style of just's
//! test `Test`):
//!
//! ```ignore
//! sb.run(["hello", "x"]).env("APP_PLUGIN_PATH", &dir).stdin("line\n")
//!     .assert().code(0).stdout_is("hello x").no_stderr();
//! ```
//!
//! Every check names the command and shows its whole output when it fails,
//! at the line of the test that made it.
//! The run is bounded: a command that has not exited after [`RUN_TIMEOUT`] is
//! killed and the test fails.

use std::ffi::OsStr;
use std::io::Write;
use std::os::unix::process::ExitStatusExt;
use std::process::{Command, ExitStatus, Stdio};
use std::sync::mpsc;
use std::time::Duration;

use super::Sandbox;

/// How long one run may take before it counts as hung.
pub const RUN_TIMEOUT: Duration = Duration::from_secs(30);

/// A command to run: `app` with arguments, set up with [`Run::env`] and
/// [`Run::stdin`], started by [`Run::assert`].
pub struct Run {
    cmd: Command,
    stdin: Option<Vec<u8>>,
    timeout: Duration,
}

impl Run {
    /// Any command (a plugin run directly, `app` from elsewhere), no stdin
    /// unless given.
    pub fn new(cmd: Command) -> Run {
        Run {
            cmd,
            stdin: None,
            timeout: RUN_TIMEOUT,
        }
    }
}

impl Sandbox {
    /// `app args…` with the sandbox environment and no stdin unless given.
    pub fn run<I, S>(&self, args: I) -> Run
    where
        I: IntoIterator<Item = S>,
        S: AsRef<OsStr>,
    {
        let mut cmd = self.app();
        cmd.args(args);
        Run::new(cmd)
    }
}

impl Run {
    pub fn env(mut self, key: impl AsRef<OsStr>, value: impl AsRef<OsStr>) -> Run {
        self.cmd.env(key, value);
        self
    }

    /// Bytes written to the command's stdin, which is then closed.
    pub fn stdin(mut self, data: impl Into<Vec<u8>>) -> Run {
        self.stdin = Some(data.into());
        self
    }

    /// A longer bound than [`RUN_TIMEOUT`], for a command that compiles
    /// (`plugin install --git` runs cargo: minutes on a loaded 2-core machine).
    pub fn timeout(mut self, limit: Duration) -> Run {
        self.timeout = limit;
        self
    }

    /// Runs the command to its end and returns what it gave, to check.
    #[track_caller]
    pub fn assert(mut self) -> Ran {
        let what = std::iter::once(self.cmd.get_program())
            .chain(self.cmd.get_args())
            .map(|a| format!("{:?}", a.to_string_lossy()))
            .collect::<Vec<_>>()
            .join(" ");
        // Killed with the test too: a test binary killed without unwinding
        // would leave a command still running behind.
        let mut child = super::process::dies_with_test(&mut self.cmd)
            .stdin(if self.stdin.is_some() {
                Stdio::piped()
            } else {
                Stdio::null()
            })
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap_or_else(|e| panic!("cannot start {what}: {e}"));
        if let (Some(mut pipe), Some(data)) = (child.stdin.take(), self.stdin) {
            // A command that does not read its stdin closes the pipe: not an error here.
            std::thread::spawn(move || pipe.write_all(&data));
        }
        let pid = child.id() as i32;
        let (tx, rx) = mpsc::channel();
        std::thread::spawn(move || tx.send(child.wait_with_output()));
        let limit = self.timeout;
        let out = match rx.recv_timeout(limit) {
            Ok(out) => out.unwrap_or_else(|e| panic!("waiting for {what}: {e}")),
            Err(_) => {
                // SAFETY: kill with the pid of our child, not reaped yet (its
                // waiter has not returned), and a valid signal number.
                unsafe { libc::kill(pid, libc::SIGKILL) };
                panic!("{what} did not exit within {limit:?}");
            }
        };
        Ran {
            what,
            status: out.status,
            stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
            stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
        }
    }
}

/// What a finished run gave. Each check panics with the whole run when it
/// fails and otherwise hands the run on, so checks chain.
pub struct Ran {
    what: String,
    pub status: ExitStatus,
    pub stdout: String,
    pub stderr: String,
}

impl std::fmt::Debug for Ran {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{}\n  exit: {}\n  stdout: {:?}\n  stderr: {:?}",
            self.what, self.status, self.stdout, self.stderr
        )
    }
}

impl Ran {
    /// The exit code is `code` (a death by signal is none: see [`Ran::signal`]).
    #[track_caller]
    pub fn code(self, code: i32) -> Ran {
        assert_eq!(self.status.code(), Some(code), "exit code: {self:?}");
        self
    }

    /// The command died of signal `sig`.
    #[track_caller]
    pub fn signal(self, sig: i32) -> Ran {
        assert_eq!(self.status.signal(), Some(sig), "signal: {self:?}");
        self
    }

    /// stdout, without leading and trailing white space, is `want`.
    #[track_caller]
    pub fn stdout_is(self, want: impl AsRef<str>) -> Ran {
        assert_eq!(self.stdout.trim(), want.as_ref(), "stdout: {self:?}");
        self
    }

    #[track_caller]
    pub fn stdout_has(self, part: impl AsRef<str>) -> Ran {
        let part = part.as_ref();
        assert!(
            self.stdout.contains(part),
            "stdout lacks {part:?}: {self:?}"
        );
        self
    }

    /// Nothing at all on stderr.
    #[track_caller]
    pub fn no_stderr(self) -> Ran {
        assert!(self.stderr.is_empty(), "stderr: {self:?}");
        self
    }

    #[track_caller]
    pub fn stderr_has(self, part: impl AsRef<str>) -> Ran {
        let part = part.as_ref();
        assert!(
            self.stderr.contains(part),
            "stderr lacks {part:?}: {self:?}"
        );
        self
    }

    #[track_caller]
    pub fn stderr_lacks(self, part: impl AsRef<str>) -> Ran {
        let part = part.as_ref();
        assert!(!self.stderr.contains(part), "stderr has {part:?}: {self:?}");
        self
    }

    /// Exit code 0 and nothing on stderr.
    #[track_caller]
    pub fn ok(self) -> Ran {
        self.code(0).no_stderr()
    }

    /// The exit code, or -1 for a death by signal.
    pub fn exit(&self) -> i32 {
        self.status.code().unwrap_or(-1)
    }

    /// stdout as JSON.
    #[track_caller]
    pub fn json(&self) -> serde_json::Value {
        serde_json::from_str(&self.stdout)
            .unwrap_or_else(|e| panic!("stdout is not JSON ({e}): {self:?}"))
    }

    /// stdout's lines.
    pub fn lines(&self) -> Vec<&str> {
        self.stdout.lines().collect()
    }
}
