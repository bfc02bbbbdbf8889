//! Reaching the repeater: TCP through the listen file, `--host` and `-H`, a
//! bearer token, and what is said when it is not running, stale, unreachable
//! or silent.

use crate::common;

use std::os::unix::net::UnixListener;
use std::time::{Duration, Instant};

use common::Sandbox;
use serde_json::json;

use super::{manage, manage_cmd, manage_in, repeater, routes, run_bounded, Fails};

#[test]
fn tcp_through_the_listen_file_the_host_flag_and_the_global_host() {
    let sb = Sandbox::new();
    let r = repeater(&sb, "tcp")
        .args(["--listen", "127.0.0.1:0"])
        .start();
    let url = r.url();
    assert!(url.starts_with("http://127.0.0.1:"), "{url}");

    // --host URL.
    manage(
        &sb,
        &[
            "post",
            "--host",
            &url,
            "--value",
            r#"{"sourcetopic":"timer/sec/1","sinktopic":"/tcp"}"#,
        ],
    )
    .ok();

    // Discovery through a listen file: a name that has only `<name>.listen`.
    std::fs::copy(
        sb.plugin_runtime_dir().join("tcp.listen"),
        sb.plugin_runtime_dir().join("tcponly.listen"),
    )
    .expect("copy listen file");
    let got = manage(&sb, &["get", "--name", "tcponly"]).ok().json();
    assert_eq!(
        got,
        json!([{"sourcetopic":"timer/sec/1","sinktopic":"/tcp"}])
    );

    // The global -H host, as the dispatcher passes it in the context.
    let mut cmd = manage_cmd(&sb);
    cmd.args(["delete", "--path", "/events/timer/sec/1"])
        .env("APP_CONTEXT_VERSION", "1")
        .env("APP_HOSTS", &url);
    run_bounded(cmd, "").ok();
    assert_eq!(routes(&sb, "tcp"), vec![]);

    // --host unix:// works as well.
    let unix = format!("unix://{}", r.socket().display());
    assert_eq!(
        manage(&sb, &["get", "--host", &unix]).ok().json(),
        json!([])
    );
}

#[test]
fn token_is_sent_as_a_bearer_token() {
    let sb = Sandbox::new();
    let r = repeater(&sb, "tok")
        .args(["--listen", "127.0.0.1:0"])
        .env("APP_TOKEN", "s3cret")
        .start();
    let url = r.url();
    manage(&sb, &["get", "--host", &url]).fails(1, "(401 Unauthorized)");
    let wrong =
        manage(&sb, &["get", "--host", &url, "--token", "wrong"]).fails(1, "(401 Unauthorized)");
    assert!(
        wrong.stderr.contains("APP_TOKEN"),
        "says how to give the token: {wrong:?}"
    );
    manage(&sb, &["get", "--host", &url, "--token", "s3cret"]).ok();
    let mut cmd = manage_cmd(&sb);
    cmd.args(["get", "--host", &url]).env("APP_TOKEN", "s3cret");
    run_bounded(cmd, "").ok();
}

#[test]
fn not_running_says_how_to_start_it() {
    let sb = Sandbox::new();
    let socket = sb.plugin_runtime_dir().join("r1.sock");
    manage(&sb, &["get", "--name", "r1"]).fails(
        3,
        &format!(
            "no event repeater named 'r1' is running (no socket at {}); start one with: app event-repeater run --name r1",
            socket.display()
        ),
    );
    manage_in(&sb, &["apply", "--name", "r1", "-f", "-"], "[]")
        .fails(3, "no event repeater named 'r1'");
}

#[test]
fn stale_socket_says_how_to_clean_up() {
    let sb = Sandbox::new();
    std::fs::create_dir_all(sb.plugin_runtime_dir()).unwrap();
    let socket = sb.plugin_runtime_dir().join("gone.sock");
    // A socket file whose listener is gone: connections are refused.
    drop(UnixListener::bind(&socket).unwrap());
    let run = manage(&sb, &["get", "--name", "gone"]).fails(3, "stale socket");
    assert!(
        run.stderr.contains(&format!("rm {}", socket.display())),
        "{run:?}"
    );
    assert!(
        run.stderr.contains("app event-repeater run --name gone"),
        "{run:?}"
    );
}

#[test]
fn stale_listen_file_and_unreachable_host() {
    let sb = Sandbox::new();
    std::fs::create_dir_all(sb.plugin_runtime_dir()).unwrap();
    let port = common::free_port();
    let url = format!("http://127.0.0.1:{port}");
    std::fs::write(
        sb.plugin_runtime_dir().join("old.listen"),
        format!("{url}\n"),
    )
    .unwrap();
    manage(&sb, &["get", "--name", "old"]).fails(3, "stale file");
    manage(&sb, &["get", "--host", &url]).fails(3, "connection refused");
}

#[test]
fn a_silent_server_times_out() {
    let sb = Sandbox::new();
    std::fs::create_dir_all(sb.plugin_runtime_dir()).unwrap();
    let socket = sb.plugin_runtime_dir().join("mute.sock");
    let listener = UnixListener::bind(&socket).unwrap();
    // Accept and hold a connection without ever answering, until told to stop.
    let (stop, stopped) = std::sync::mpsc::channel::<()>();
    let holder = std::thread::spawn(move || {
        if let Ok((conn, _)) = listener.accept() {
            let _ = stopped.recv_timeout(Duration::from_secs(10));
            drop(conn);
        }
    });
    let started = Instant::now();
    manage(&sb, &["get", "--name", "mute", "--timeout", "0.5"])
        .fails(1, "did not answer within 0.5s");
    let took = started.elapsed();
    assert!(took < Duration::from_secs(2), "took {took:?}");
    stop.send(()).unwrap();
    holder.join().unwrap();
}
