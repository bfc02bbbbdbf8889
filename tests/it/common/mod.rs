//! Shared test support: locating the built binaries and giving each test its
//! own isolated `app` world (config, data and runtime dirs, a PATH of its own).
//!
//! Every test module does `use crate::common;` and uses what it needs.
//! To run `app` and check what it did: `sb.run([..]).assert().code(0)…`
//! ([`run`]); to wait for something: [`wait_for`], never a bare sleep.

use std::fs;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::Command;

/// The `app` binary under test.
pub fn app_bin() -> PathBuf {
    PathBuf::from(env!("CARGO_BIN_EXE_app"))
}

/// A shipped plugin binary (`app-event-time`, …), built beside `app` by
/// `cargo test --workspace`.
pub fn plugin_bin(name: &str) -> PathBuf {
    let path = app_bin().with_file_name(name);
    assert!(
        path.exists(),
        "{} is not built; run the tests with `cargo test --workspace`",
        path.display()
    );
    path
}

/// An isolated environment: its own config, data and runtime directories, and
/// a `bin/` directory first on PATH for third-party plugins.
pub struct Sandbox {
    pub dir: tempfile::TempDir,
}

impl Sandbox {
    pub fn new() -> Sandbox {
        let dir = tempfile::Builder::new()
            .prefix("app-test-")
            .tempdir()
            .expect("create temp dir");
        let sb = Sandbox { dir };
        for d in ["config", "data", "run", "bin", "cache"] {
            fs::create_dir_all(sb.path().join(d)).expect("create sandbox dir");
        }
        sb
    }

    pub fn path(&self) -> &Path {
        self.dir.path()
    }

    /// Directory for third-party plugins, first on the sandbox PATH.
    pub fn bin_dir(&self) -> PathBuf {
        self.path().join("bin")
    }

    pub fn config_dir(&self) -> PathBuf {
        self.path().join("config")
    }

    pub fn data_dir(&self) -> PathBuf {
        self.path().join("data")
    }

    pub fn runtime_dir(&self) -> PathBuf {
        self.path().join("run")
    }

    /// `APP_RUNTIME_DIR/plugins`, where sockets and pid files go.
    pub fn plugin_runtime_dir(&self) -> PathBuf {
        self.runtime_dir().join("plugins")
    }

    /// The PATH the sandbox gives commands: its `bin/`, then the system's.
    pub fn path_var(&self) -> String {
        format!("{}:/usr/local/bin:/usr/bin:/bin", self.bin_dir().display())
    }

    /// Writes `config.json` in the sandbox config dir.
    pub fn write_config(&self, json: &str) {
        fs::write(self.config_dir().join("config.json"), json).expect("write config");
    }

    /// Writes an executable script `bin/<file_name>`.
    pub fn script(&self, file_name: &str, body: &str) -> PathBuf {
        write_executable(&self.bin_dir().join(file_name), body)
    }

    /// A command with the sandbox environment and no inherited `APP_*` variables.
    pub fn command(&self, program: impl AsRef<std::ffi::OsStr>) -> Command {
        let mut cmd = Command::new(program);
        for (key, _) in std::env::vars_os() {
            if key.to_string_lossy().starts_with("APP_") {
                cmd.env_remove(&key);
            }
        }
        cmd.env("PATH", self.path_var())
            .env("HOME", self.path())
            .env("APP_CONFIG_DIR", self.config_dir())
            .env("APP_DATA_DIR", self.data_dir())
            .env("APP_RUNTIME_DIR", self.runtime_dir())
            .env("APP_CACHE_DIR", self.path().join("cache"))
            // Not the host's /run/app: manage looks for system instances there.
            .env("APP_SYSTEM_RUNTIME_DIR", self.path().join("system-run"))
            .env_remove("XDG_RUNTIME_DIR")
            .current_dir(self.path());
        cmd
    }

    /// `app` with the sandbox environment, for a test that drives the process
    /// itself (signals, a terminal); otherwise [`Sandbox::run`].
    pub fn app(&self) -> Command {
        self.command(app_bin())
    }

    /// [`Sandbox::app`] without the proxy variables: downloads go straight
    /// to the test's server on 127.0.0.1.
    pub fn app_without_proxy(&self) -> Command {
        let mut cmd = self.app();
        for var in [
            "http_proxy",
            "HTTP_PROXY",
            "https_proxy",
            "HTTPS_PROXY",
            "ALL_PROXY",
            "all_proxy",
        ] {
            cmd.env_remove(var);
        }
        cmd
    }
}

/// Writes `body` to `path` with mode 0755.
pub fn write_executable(path: &Path, body: &str) -> PathBuf {
    fs::write(path, body).expect("write executable");
    fs::set_permissions(path, fs::Permissions::from_mode(0o755)).expect("chmod");
    path.to_path_buf()
}

/// Every file and directory below `dir` with its mode and contents (empty
/// for a directory); `None` when `dir` does not exist. Two snapshots
/// compare equal when nothing below `dir` changed.
pub fn snapshot(dir: &Path) -> Option<std::collections::BTreeMap<PathBuf, (u32, Vec<u8>)>> {
    fn walk(
        dir: &Path,
        root: &Path,
        out: &mut std::collections::BTreeMap<PathBuf, (u32, Vec<u8>)>,
    ) {
        for entry in fs::read_dir(dir).expect("read dir") {
            let path = entry.expect("dir entry").path();
            let meta = fs::symlink_metadata(&path).expect("stat");
            let rel = path.strip_prefix(root).expect("below root").to_path_buf();
            if meta.is_dir() {
                out.insert(rel, (meta.permissions().mode(), Vec::new()));
                walk(&path, root, out);
            } else {
                out.insert(
                    rel,
                    (
                        meta.permissions().mode(),
                        fs::read(&path).unwrap_or_default(),
                    ),
                );
            }
        }
    }
    dir.exists().then(|| {
        let mut out = std::collections::BTreeMap::new();
        walk(dir, dir, &mut out);
        out
    })
}

/// A free TCP port on 127.0.0.1 (bound, then released).
pub fn free_port() -> u16 {
    // Never one handed out before in this test binary: once the probe
    // socket is closed the kernel may give the same port again, and two
    // servers told to bind it collide (seen in the chaos run: a RabbitMQ
    // node's AMQP and distribution ports).
    static GIVEN: std::sync::Mutex<std::collections::BTreeSet<u16>> =
        std::sync::Mutex::new(std::collections::BTreeSet::new());
    for _ in 0..100 {
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .and_then(|l| l.local_addr())
            .map(|a| a.port())
            .expect("find a free port");
        if GIVEN.lock().unwrap_or_else(|e| e.into_inner()).insert(port) {
            return port;
        }
    }
    panic!("no free port not handed out already, in 100 tries");
}

/// Polls `check` every 20 ms until it returns `Some` or `timeout` passes.
/// `None` is a wait that ran out: say what that means (`expect`, assert).
#[must_use = "a wait that timed out is a failure or a finding: check it"]
pub fn wait_for<T>(
    timeout: std::time::Duration,
    mut check: impl FnMut() -> Option<T>,
) -> Option<T> {
    let deadline = std::time::Instant::now() + timeout;
    loop {
        if let Some(v) = check() {
            return Some(v);
        }
        if std::time::Instant::now() >= deadline {
            return None;
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
}
pub mod broker;
pub mod completion;
pub mod event_time;
pub mod http;
pub mod http_server;
pub mod index;
pub mod kafka;
pub mod nats;
pub mod pki;
pub mod process;
pub mod rabbitmq;
pub mod repeater;
pub mod run;
pub mod server;
pub mod sse_source;
pub mod tmpfs;
pub mod tools;

pub use tools::{require_tool, require_tools};

/// Makes a FIFO at `path`: a special file a reader would block on.
pub fn mkfifo(path: &Path) {
    use std::os::unix::ffi::OsStrExt;
    let c = std::ffi::CString::new(path.as_os_str().as_bytes()).unwrap();
    // SAFETY: a valid NUL-terminated path and mode.
    assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0, "mkfifo");
}
