//! What the repeater keeps: routes across a restart and kill -9, the
//! runtime files, their modes, a live instance and the TCP token.

use crate::common;

use std::fs;
use std::os::unix::fs::PermissionsExt;

use common::http::Addr;
use common::repeater::Repeater;
use common::{plugin_bin, Sandbox};
use serde_json::json;

use super::{call, call_with, repeater};

#[test]
fn routes_survive_restart_and_kill_9() {
    let sb = Sandbox::new();
    let args = ["--sinkprotocol", "stderr", "--source", "/nonexistent.sock"];
    let mut rep = repeater(&sb, &args);
    let routes = json!([
        {"sourcetopic":"a/","sinktopic":"A/{suffix}"},
        {"sourcetopic":"b","sinktopic":""},
        {"sourcetopic":"timer/sec/1","sinktopic":"/time/1s"}
    ]);
    assert_eq!(
        call(&rep, "POST", "/events", Some(&routes.to_string())).0,
        201
    );
    assert_eq!(rep.signal(libc::SIGTERM).code(), Some(0));
    let mut rep = repeater(&sb, &args);
    assert_eq!(call(&rep, "GET", "/events", None).1, routes);
    // A change, then kill -9 right after the reply: it is on disk.
    assert_eq!(call(&rep, "DELETE", "/events/b", None).0, 200);
    assert_eq!(call(&rep, "PUT", "/events/c", Some("{}")).0, 201);
    rep.kill9();
    // The socket is stale now; the next start replaces it.
    assert!(rep.socket().exists());
    let rep = repeater(&sb, &args);
    let now = call(&rep, "GET", "/events", None).1;
    assert_eq!(
        now,
        json!([
            {"sourcetopic":"a/","sinktopic":"A/{suffix}"},
            {"sourcetopic":"c","sinktopic":""},
            {"sourcetopic":"timer/sec/1","sinktopic":"/time/1s"}
        ])
    );
}

#[test]
fn runtime_files_modes_live_instance_and_tcp_token() {
    let sb = Sandbox::new();
    let dir = sb.plugin_runtime_dir();
    let port = common::free_port().to_string();
    let listen = format!("127.0.0.1:{port}");
    let mut rep = Repeater::builder(&sb, "r1")
        .args(["--log", "3", "--sinkprotocol", "stderr"])
        .args(["--source", "/nonexistent.sock"])
        .args(["--listen", &listen, "--token", "s3cret"])
        .start();
    assert_eq!(
        fs::metadata(&dir).unwrap().permissions().mode() & 0o777,
        0o700
    );
    assert_eq!(
        fs::metadata(rep.socket()).unwrap().permissions().mode() & 0o777,
        0o600
    );
    let pid: u32 = fs::read_to_string(dir.join("r1.pid"))
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    assert_eq!(pid, rep.pid() as u32);
    let url = fs::read_to_string(dir.join("r1.listen")).unwrap();
    assert_eq!(url.trim(), format!("http://{listen}"));
    let tcp = Addr::from_url(url.trim());
    for (headers, status) in [
        ("", 401),
        ("Authorization: Bearer nope\r\n", 401),
        ("Authorization: Bearer s3cret\r\n", 200),
    ] {
        let got = call_with(&tcp, "GET", "/events", None, headers).0;
        assert_eq!(got, status, "GET /events with {headers:?}");
    }
    // A second instance with the same name is refused, naming the first.
    let out = sb
        .command(plugin_bin("app-event-repeater"))
        .args(["run", "--sinkprotocol", "stderr", "--name", "r1"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("already running") && err.contains(&pid.to_string()),
        "{err}"
    );
    assert!(
        rep.socket().exists(),
        "the refused start must not touch the live socket"
    );
    assert_eq!(rep.signal(libc::SIGINT).code(), Some(0));
    for f in ["r1.sock", "r1.pid", "r1.listen"] {
        assert!(!dir.join(f).exists(), "{f} left behind");
    }
}
