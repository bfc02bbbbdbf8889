//! A child process the run controls: started again with the same command
//! after a kill, signalled, and killed when the run ends however it ends
//! (drop, panic unwind; `PR_SET_PDEATHSIG` covers the driver's own death).

use std::fs::File;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};

/// The command line of a process, kept to start it again.
#[derive(Clone, Debug)]
pub struct Spec {
    pub name: String,
    pub program: PathBuf,
    pub args: Vec<String>,
    pub env: Vec<(String, String)>,
    /// stdout goes here when set (the checker's summary line), appended
    /// to across restarts; else nowhere.
    pub stdout: Option<PathBuf>,
}

pub struct Proc {
    pub spec: Spec,
    logs: PathBuf,
    starts: u32,
    child: Option<Child>,
    paused: bool,
}

impl Proc {
    /// Starts `spec`; its stderr goes to `LOGS/NAME.N.log`.
    pub fn start(spec: Spec, logs: &Path) -> Result<Proc, String> {
        let mut p = Proc {
            spec,
            logs: logs.to_path_buf(),
            starts: 0,
            child: None,
            paused: false,
        };
        p.spawn()?;
        Ok(p)
    }

    /// Starts the process again (after [`Proc::kill`]).
    pub fn spawn(&mut self) -> Result<(), String> {
        let log = self.log_path();
        self.starts += 1;
        let stderr = File::create(&log).map_err(|e| format!("{}: {e}", log.display()))?;
        let stdout = match &self.spec.stdout {
            Some(path) => Stdio::from(
                std::fs::OpenOptions::new()
                    .create(true)
                    .append(true)
                    .open(path)
                    .map_err(|e| format!("{}: {e}", path.display()))?,
            ),
            None => Stdio::null(),
        };
        let mut cmd = Command::new(&self.spec.program);
        cmd.args(&self.spec.args)
            .envs(self.spec.env.iter().map(|(k, v)| (k, v)))
            .stdin(Stdio::null())
            .stdout(stdout)
            .stderr(stderr);
        // SAFETY: only async-signal-safe calls between fork and exec.
        unsafe {
            cmd.pre_exec(|| {
                // Dies with the driver even when the driver is SIGKILLed; a
                // process group of its own keeps a terminal's ^C for the
                // driver, which then stops everything in order.
                libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL);
                libc::setpgid(0, 0);
                Ok(())
            });
        }
        let child = cmd
            .spawn()
            .map_err(|e| format!("cannot start {}: {e}", self.spec.program.display()))?;
        self.child = Some(child);
        self.paused = false;
        Ok(())
    }

    /// The log of the current (or last) start.
    pub fn log_path(&self) -> PathBuf {
        self.logs
            .join(format!("{}.{}.log", self.spec.name, self.starts))
    }

    pub fn pid(&self) -> Option<u32> {
        self.child.as_ref().map(Child::id)
    }

    pub fn running(&self) -> bool {
        self.child.is_some()
    }

    pub fn paused(&self) -> bool {
        self.paused
    }

    /// The exit status, if the process ended by itself.
    pub fn exited(&mut self) -> Option<std::process::ExitStatus> {
        self.child.as_mut()?.try_wait().ok()?
    }

    pub fn signal(&self, sig: i32) {
        if let Some(pid) = self.pid() {
            // SAFETY: kill() with the pid of a child not yet reaped.
            unsafe { libc::kill(pid as i32, sig) };
        }
    }

    pub fn pause(&mut self) {
        self.signal(libc::SIGSTOP);
        self.paused = true;
    }

    pub fn resume(&mut self) {
        self.signal(libc::SIGCONT);
        self.paused = false;
    }

    /// SIGKILL, and reap.
    pub fn kill(&mut self) {
        self.resume();
        self.signal(libc::SIGKILL);
        if let Some(mut c) = self.child.take() {
            let _ = c.wait();
        }
    }

    /// SIGTERM, then SIGKILL after `grace` if still running; reaps.
    pub fn stop(&mut self, grace: std::time::Duration) {
        self.resume();
        self.signal(libc::SIGTERM);
        let deadline = std::time::Instant::now() + grace;
        while std::time::Instant::now() < deadline {
            if self.exited().is_some() {
                self.child = None;
                return;
            }
            std::thread::sleep(std::time::Duration::from_millis(20));
        }
        self.kill();
    }

    /// Resident set size in KiB, from /proc.
    pub fn rss_kib(&self) -> Option<u64> {
        let status = std::fs::read_to_string(format!("/proc/{}/status", self.pid()?)).ok()?;
        status
            .lines()
            .find_map(|l| l.strip_prefix("VmRSS:"))?
            .split_whitespace()
            .next()?
            .parse()
            .ok()
    }
}

impl Drop for Proc {
    fn drop(&mut self) {
        self.kill();
    }
}

/// The last lines of a log, for an error message.
pub fn tail(path: &Path) -> String {
    let text = std::fs::read_to_string(path).unwrap_or_default();
    let lines: Vec<&str> = text.lines().collect();
    let from = lines.len().saturating_sub(8);
    // Our own children's logs, but they quote what peers sent.
    let shown: String = lines[from..]
        .join("\n")
        .chars()
        .map(|c| if c.is_control() && c != '\n' { '?' } else { c })
        .collect();
    format!("last lines of {}:\n{shown}", path.display())
}
