//! `app-event-time`, the example event source, as a real process: its
//! stderr in a log file, started once its socket accepts connections, and
//! stopped on drop (see [`Proc`]).

use std::fs;
use std::os::unix::net::UnixStream;
use std::path::PathBuf;
use std::process::{ExitStatus, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use super::http::Addr;
use super::process::Proc;
use super::{plugin_bin, wait_for, Sandbox};

/// A running `app-event-time`.
pub struct EventTime {
    proc: Proc,
    name: String,
    dir: PathBuf,
    stderr: PathBuf,
}

impl EventTime {
    /// `app-event-time ARGS…`; returns once its socket accepts connections
    /// (within 15 s), and panics, with its log, if it exits first. The name
    /// is the `--name` in `args`, or `event-time`.
    pub fn start(sb: &Sandbox, args: &[&str]) -> EventTime {
        let name = args
            .windows(2)
            .find(|w| w[0] == "--name")
            .map_or("event-time", |w| w[1])
            .to_string();
        let stderr = sb.path().join(format!("{name}.{}.stderr", unique()));
        let proc = Proc::spawn(
            "app-event-time",
            sb.command(plugin_bin("app-event-time"))
                .args(args)
                .stdin(Stdio::null())
                .stdout(Stdio::null())
                .stderr(fs::File::create(&stderr).expect("create the log")),
        );
        let mut source = EventTime {
            proc,
            name,
            dir: sb.plugin_runtime_dir(),
            stderr,
        };
        let sock = source.socket();
        let ready = wait_for(Duration::from_secs(15), || {
            if let Some(status) = source.proc.exited() {
                panic!("app-event-time exited with {status}: {}", source.log());
            }
            UnixStream::connect(&sock).ok()
        });
        assert!(
            ready.is_some(),
            "no socket {} after 15 s: {}",
            sock.display(),
            source.log()
        );
        source
    }

    pub fn socket(&self) -> PathBuf {
        self.file("sock")
    }

    /// `<runtime>/plugins/NAME.EXT`.
    pub fn file(&self, ext: &str) -> PathBuf {
        self.dir.join(format!("{}.{ext}", self.name))
    }

    pub fn unix(&self) -> Addr {
        Addr::Unix(self.socket())
    }

    /// The TCP address from the `.listen` file (waiting up to 5 s for it).
    pub fn tcp(&self) -> Addr {
        let listen = self.file("listen");
        let url = wait_for(Duration::from_secs(5), || fs::read_to_string(&listen).ok())
            .expect("a .listen file");
        Addr::from_url(&url)
    }

    pub fn log(&self) -> String {
        fs::read_to_string(&self.stderr).unwrap_or_default()
    }

    pub fn pid(&self) -> i32 {
        self.proc.pid()
    }

    pub fn alive(&mut self) -> bool {
        self.proc.alive()
    }

    /// Sends `sig` and waits up to 20 s for the exit.
    pub fn signal(&mut self, sig: i32) -> ExitStatus {
        self.proc.signal(sig);
        let status = self.proc.wait_exit(Duration::from_secs(20));
        status.unwrap_or_else(|| {
            panic!(
                "app-event-time did not exit within 20 s of signal {sig}: {}",
                self.log()
            )
        })
    }
}

/// A suffix that keeps log file names apart across starts.
fn unique() -> usize {
    static STARTS: AtomicUsize = AtomicUsize::new(0);
    STARTS.fetch_add(1, Ordering::SeqCst)
}
