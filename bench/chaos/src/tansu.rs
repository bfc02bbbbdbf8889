//! The Kafka-protocol broker for `CHAOS_SINK=kafka`: one `tansu` (crates.io;
//! it runs as a single node, no cluster), the run's own, never a shared
//! service: a free port, its SQLite storage and its log under the work
//! dir, so a `SIGKILL`ed broker starts again on the same port with what it
//! acknowledged. It listens on, and advertises, the brokers' address: a
//! Kafka client connects to the address the broker advertises, which the
//! repeaters (in their namespaces) and the checker (on the host) both
//! reach; 127.0.0.1 without namespaces.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use crate::port::free_port;
use crate::proc::{tail, Proc, Spec};

/// How long the broker may take to listen (well under a second alone).
const START_WITHIN: Duration = Duration::from_secs(30);

/// How tansu is installed (its default features hold no storage engine).
pub const INSTALL: &str = "cargo install tansu --locked --features dynostore,libsql";

/// `tansu` on PATH, or in cargo's bin directory.
fn program() -> Result<PathBuf, String> {
    let path = std::env::var("PATH").unwrap_or_default();
    let cargo_home = std::env::var_os("CARGO_HOME")
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".cargo")));
    path.split(':')
        .filter(|d| !d.is_empty())
        .map(PathBuf::from)
        .chain(cargo_home.map(|d| d.join("bin")))
        .map(|d| d.join("tansu"))
        .find(|p| p.is_file())
        .ok_or_else(|| format!("tansu is not installed ({INSTALL})"))
}

/// Starts the broker on `host` and waits until it listens; returns it and
/// its port.
pub fn start(host: &str, work: &Path) -> Result<(Proc, u16), String> {
    let exe = program()?;
    let dir = work.join("tansu");
    // An absolute path: tansu takes what follows `sqlite://` less its first
    // `/` as relative to its working directory, so `sqlite:////abs/path`.
    let db = std::fs::create_dir_all(&dir)
        .and_then(|()| std::fs::canonicalize(&dir))
        .map_err(|e| format!("{}: {e}", dir.display()))?
        .join("tansu.db");
    let port = free_port()?;
    let url = format!("tcp://{host}:{port}");
    let mut args = vec![
        "broker".to_string(),
        "--listener-url".into(),
        url.clone(),
        "--advertised-listener-url".into(),
        url,
        "--storage-engine".into(),
        format!("sqlite:///{}", db.display()),
    ];
    if metrics_flag(&exe) {
        // A later tansu serves metrics: on a port of its own, never its
        // default (0.6.0 has no such endpoint, nor the flag).
        args.push("--prometheus-listener-url".into());
        args.push(format!("tcp://127.0.0.1:{}", free_port()?));
    }
    let mut node = Proc::start(
        Spec {
            name: "tansu".into(),
            program: exe,
            args,
            env: Vec::new(),
            // What it says on stdout (its start, its errors, why it exits),
            // every start's in one file.
            stdout: Some(work.join("logs/tansu.stdout.log")),
        },
        &work.join("logs"),
    )?;
    wait_up(&mut node, host, port)?;
    Ok((node, port))
}

/// Whether `tansu broker` takes `--prometheus-listener-url`.
fn metrics_flag(exe: &Path) -> bool {
    std::process::Command::new(exe)
        .args(["broker", "--help"])
        .stdin(std::process::Stdio::null())
        .output()
        .is_ok_and(|o| String::from_utf8_lossy(&o.stdout).contains("--prometheus-listener-url"))
}

/// The first panic in the broker's logs (every start's), if any: tansu
/// then goes on listening but answers nothing more.
pub fn panicked(logs: &Path) -> Option<String> {
    let mut names: Vec<PathBuf> = std::fs::read_dir(logs)
        .ok()?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| {
            p.file_name()
                .and_then(|n| n.to_str())
                .is_some_and(|n| n.starts_with("tansu."))
        })
        .collect();
    names.sort();
    names.into_iter().find_map(|p| {
        let text = std::fs::read_to_string(&p).ok()?;
        let at = text.find("panicked at")?;
        // The broker's own words, but they may quote what a client sent.
        let what: String = text[at..]
            .lines()
            .take(2)
            .collect::<Vec<_>>()
            .join(" ")
            .chars()
            .map(|c| if c.is_control() { '?' } else { c })
            .collect();
        Some(format!("{}: {what}", p.display()))
    })
}

/// Waits until the broker accepts connections on `host:port`; an error,
/// with its log's last lines, when it exits or takes longer than
/// [`START_WITHIN`].
pub fn wait_up(node: &mut Proc, host: &str, port: u16) -> Result<(), String> {
    let deadline = Instant::now() + START_WITHIN;
    while Instant::now() < deadline {
        if let Some(status) = node.exited() {
            let stdout = node.spec.stdout.as_deref().map(tail).unwrap_or_default();
            return Err(format!(
                "tansu exited with {status}: {}\n{stdout}",
                tail(&node.log_path())
            ));
        }
        if std::net::TcpStream::connect((host, port)).is_ok() {
            return Ok(());
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    Err(format!(
        "tansu did not listen on {host}:{port} within {START_WITHIN:?}: {}",
        tail(&node.log_path())
    ))
}
