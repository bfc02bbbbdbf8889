//! A server process the tests control (mosquitto in [`super::broker`],
//! nats-server in [`super::nats`], tansu in [`super::kafka`]): started,
//! waited for until it listens, signalled, restarted on the same port and
//! arguments, killed on drop.

use std::ffi::OsString;
use std::fs;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use super::wait_for;

/// A server process a test controls: started as `EXE ARGS…`, waited for
/// until it listens on its port, signalled, restarted on the same port and
/// arguments, killed on drop.
pub struct Server {
    pub name: &'static str,
    pub exe: PathBuf,
    pub args: Vec<OsString>,
    /// Its working directory (the test's own directory for it), if not ours.
    pub cwd: Option<PathBuf>,
    /// Its log: written by the server itself (a config file names it), or
    /// its stdout and stderr appended there when `capture` is set.
    pub log: PathBuf,
    pub capture: bool,
    pub port: u16,
    /// How long the last start took, until it listened.
    pub started_in: Duration,
    child: Option<Child>,
    paused: bool,
}

impl Server {
    /// `EXE -c CONF`, which writes `log` itself (mosquitto, nats-server).
    pub fn with_conf(
        name: &'static str,
        exe: PathBuf,
        conf: PathBuf,
        log: PathBuf,
        port: u16,
    ) -> Server {
        Server::new(name, exe, vec!["-c".into(), conf.into()], log, port)
    }

    /// `EXE ARGS…`, not started yet.
    pub fn new(
        name: &'static str,
        exe: PathBuf,
        args: Vec<OsString>,
        log: PathBuf,
        port: u16,
    ) -> Server {
        Server {
            name,
            exe,
            args,
            cwd: None,
            log,
            capture: false,
            port,
            started_in: Duration::ZERO,
            child: None,
            paused: false,
        }
    }

    pub fn spawn(&mut self) {
        let (stdout, stderr) = if self.capture {
            let log = fs::OpenOptions::new()
                .create(true)
                .append(true)
                .open(&self.log)
                .unwrap_or_else(|e| panic!("open {}: {e}", self.log.display()));
            (
                Stdio::from(log.try_clone().expect("dup log")),
                Stdio::from(log),
            )
        } else {
            (Stdio::null(), Stdio::null())
        };
        let mut cmd = Command::new(&self.exe);
        cmd.args(&self.args)
            .stdin(Stdio::null())
            .stdout(stdout)
            .stderr(stderr);
        if let Some(dir) = &self.cwd {
            cmd.current_dir(dir);
        }
        let started = Instant::now();
        let child = super::process::dies_with_test(&mut cmd)
            .spawn()
            .unwrap_or_else(|e| panic!("start {}: {e}", self.name));
        self.child = Some(child);
        let port = self.port;
        let up = wait_for(Duration::from_secs(30), || {
            std::net::TcpStream::connect(("127.0.0.1", port)).ok()
        });
        assert!(
            up.is_some(),
            "{} did not listen on {port}: {}",
            self.name,
            self.log()
        );
        self.started_in = started.elapsed();
    }

    pub fn log(&self) -> String {
        fs::read_to_string(&self.log).unwrap_or_default()
    }

    pub fn signal(&self, sig: i32) {
        if let Some(c) = &self.child {
            // SAFETY: kill with a pid we spawned and a valid signal number.
            unsafe { libc::kill(c.id() as i32, sig) };
        }
    }

    pub fn reap(&mut self) {
        if let Some(mut c) = self.child.take() {
            let _ = c.wait();
        }
    }

    pub fn stop(&mut self) {
        self.resume();
        self.signal(libc::SIGTERM);
        self.reap();
    }

    pub fn kill(&mut self) {
        self.signal(libc::SIGKILL);
        self.reap();
        self.paused = false;
    }

    pub fn pause(&mut self) {
        self.signal(libc::SIGSTOP);
        self.paused = true;
    }

    pub fn resume(&mut self) {
        if self.paused {
            self.signal(libc::SIGCONT);
            self.paused = false;
        }
    }

    pub fn restart(&mut self) {
        assert!(
            self.child.is_none(),
            "restart() needs stop() or kill() first"
        );
        self.spawn();
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        self.resume();
        self.signal(libc::SIGKILL);
        self.reap();
    }
}
