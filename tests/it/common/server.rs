//! A server process the tests control (mosquitto in [`super::broker`],
//! nats-server in [`super::nats`]): started, waited for until it listens,
//! signalled, restarted on the same port and config, killed on drop.

use std::fs;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use super::wait_for;

/// A server process a test controls: started as `EXE -c CONF`, waited for
/// until it listens on its port, signalled, restarted on the same port and
/// config, killed on drop. Shared by [`super::broker::Broker`] and [`super::nats::NatsServer`].
pub struct Server {
    pub name: &'static str,
    pub exe: PathBuf,
    pub conf: PathBuf,
    pub log: PathBuf,
    pub port: u16,
    pub child: Option<Child>,
    pub paused: bool,
}

impl Server {
    pub fn spawn(&mut self) {
        let child = Command::new(&self.exe)
            .arg("-c")
            .arg(&self.conf)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap_or_else(|e| panic!("start {}: {e}", self.name));
        self.child = Some(child);
        let port = self.port;
        let up = wait_for(Duration::from_secs(15), || {
            std::net::TcpStream::connect(("127.0.0.1", port)).ok()
        });
        assert!(
            up.is_some(),
            "{} did not listen on {port}: {}",
            self.name,
            self.log()
        );
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
