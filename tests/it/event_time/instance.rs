//! One instance per name: a stale socket replaced, a live one refused;
//! SIGTERM and SIGINT remove the files.

use crate::common;

use std::fs;
use std::os::unix::net::UnixListener;

use common::event_time::EventTime;
use common::http::{self, SseStream};
use common::{plugin_bin, Sandbox};

use super::run_to_end;

#[test]
fn a_stale_socket_is_replaced() {
    let sb = Sandbox::new();
    let dir = sb.plugin_runtime_dir();
    fs::create_dir_all(&dir).unwrap();
    // A socket nothing listens on, as a killed process leaves it.
    drop(UnixListener::bind(dir.join("event-time.sock")).unwrap());
    fs::write(dir.join("event-time.pid"), "999999\n").unwrap();
    let source = EventTime::start(&sb, &[]);
    assert_eq!(http::get(&source.unix(), "/topics").status, 200);
    assert_eq!(
        fs::read_to_string(source.file("pid")).unwrap().trim(),
        source.pid().to_string()
    );
}

#[test]
fn a_live_instance_is_refused_and_left_running() {
    let sb = Sandbox::new();
    let source = EventTime::start(&sb, &[]);
    let (code, _, err) = run_to_end(&mut sb.command(plugin_bin("app-event-time")));
    assert_eq!(code, 1, "{err}");
    assert!(err.contains("already running"), "{err}");
    assert!(err.contains(&format!("pid {}", source.pid())), "{err}");
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(source.socket().exists());
    assert!(source.file("pid").exists());
    assert_eq!(http::get(&source.unix(), "/topics").status, 200);
    // Another name is another instance.
    let other = EventTime::start(&sb, &["--name", "event-time-2"]);
    assert_eq!(http::get(&other.unix(), "/topics").status, 200);
}

#[test]
fn sigterm_and_sigint_remove_the_files_and_exit_0() {
    let sb = Sandbox::new();
    for (signal, name) in [(libc::SIGTERM, "term"), (libc::SIGINT, "int")] {
        let mut source = EventTime::start(&sb, &["--name", name, "--listen", "127.0.0.1:0"]);
        let _ = source.tcp();
        // A connected subscriber must not hold up the exit.
        let _stream = SseStream::open(&source.unix(), "/events", &[]);
        for ext in ["sock", "pid", "listen"] {
            assert!(source.file(ext).exists(), "{name}.{ext}");
        }
        let status = source.signal(signal);
        assert_eq!(status.code(), Some(0), "{name}: {}", source.log());
        for ext in ["sock", "pid", "listen"] {
            assert!(!source.file(ext).exists(), "{name}.{ext} removed");
        }
    }
}

/// The signal mask survives exec: started by `app`, which execs it with
/// SIGTERM blocked, it still stops on SIGTERM.
#[test]
fn sigterm_stops_it_even_when_started_with_the_signal_blocked() {
    let sb = Sandbox::new();
    let socket = sb.plugin_runtime_dir().join("blocked.sock");
    let status = common::process::stopped_by_sigterm_through_app(
        &sb,
        &["event-time", "--name", "blocked"],
        socket,
    );
    assert!(status.is_some_and(|s| s.success()), "{status:?}");
}
