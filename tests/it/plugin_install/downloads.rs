//! What a download shows and keeps: progress on a terminal only, no password
//! or token from the URL printed or recorded, a plugin's metadata printed
//! with its control characters escaped.

use crate::common;

use std::fs;
use std::process::Stdio;

use common::http_server::Server;

use super::{ok, script_plugin, sha256, stdout, T};

/// A slow download shows a progress line on a terminal (here a pseudo-terminal
/// from util-linux `script`), and none when stderr is not a terminal.
#[test]
fn slow_downloads_show_progress_on_a_terminal_only() {
    if common::require_tool("script", "bsdutils").is_none() {
        return;
    }
    let t = T::new();
    let server = Server::start();
    let mut body = script_plugin("1.0.0", "slow").into_bytes();
    body.extend(vec![b'#'; 40 * 1024]);
    // 11 chunks, 100 ms apart: about a second.
    server.serve_slowly("/app-slow", &body, std::time::Duration::from_millis(100));
    let url = server.url("/app-slow");
    let sum = sha256(&body);

    let plain = t.app(&[
        "plugin", "install", &url, "--sha256", &sum, "--name", "slow1",
    ]);
    assert!(plain.status.success());
    assert!(!String::from_utf8_lossy(&plain.stderr).contains("downloading"));

    let line = format!(
        "{} plugin install {url} --sha256 {sum} --name slow2",
        common::app_bin().display()
    );
    let tty =
        t.sb.command("script")
            .args(["-qec", &line, "/dev/null"])
            .stdin(Stdio::null())
            .output()
            .expect("script (util-linux) runs a command on a pseudo-terminal");
    let screen = String::from_utf8_lossy(&tty.stdout);
    assert!(tty.status.success(), "{screen}");
    assert!(screen.contains(&format!("downloading {url}:")), "{screen}");
    assert!(screen.contains('%'), "{screen}");
    assert!(screen.contains("installed plugin 'slow2'"), "{screen}");
}

#[test]
fn a_password_in_the_url_is_never_printed_nor_recorded() {
    let t = T::new();
    let server = Server::start();
    let body = script_plugin("2.0.0", "web").into_bytes();
    server.serve("/dl/app-web", &body);
    let url = server
        .url("/dl/app-web")
        .replacen("http://", "http://user:s3cret@", 1);
    let out = t.app(&["plugin", "install", &url, "--sha256", &sha256(&body)]);
    let all = format!("{}{}", stdout(&out), String::from_utf8_lossy(&out.stderr));
    assert!(out.status.success(), "{all}");
    assert!(!all.contains("s3cret") && all.contains("***:***@"), "{all}");
    let index = fs::read_to_string(t.plugin_dir().join(".receipts.json")).unwrap();
    assert!(
        !index.contains("s3cret") && index.contains("***:***@"),
        "{index}"
    );
    let list = ok(t.app(&["plugin", "list"]));
    assert!(!list.contains("s3cret"), "{list}");
    // A failed download does not show it either.
    let missing = url.replace("/dl/app-web", "/dl/app-gone");
    t.refused(
        &["plugin", "install", &missing, "--sha256", &sha256(&body)],
        3,
        "***:***@",
    );
    // Upgrading cannot use a password it does not have: it says so.
    t.refused(
        &["plugin", "upgrade", "web", "--sha256", &sha256(&body)],
        2,
        "not recorded; install it again with the whole URL",
    );
}

#[test]
fn a_token_in_the_url_query_is_never_printed_nor_recorded() {
    let t = T::new();
    let server = Server::start();
    let body = script_plugin("2.0.0", "tok").into_bytes();
    // The server sees the token (the download needs it); nothing else does.
    server.serve("/dl/app-tok?token=hunter7&v=2", &body);
    let url = server.url("/dl/app-tok?token=hunter7&v=2");
    let out = t.app(&["plugin", "install", &url, "--sha256", &sha256(&body)]);
    let all = format!("{}{}", stdout(&out), String::from_utf8_lossy(&out.stderr));
    // Positive control: the install worked and names the URL, token masked.
    assert!(out.status.success(), "{all}");
    assert!(
        !all.contains("hunter7") && all.contains("?token=***&v=***"),
        "{all}"
    );
    let index = fs::read_to_string(t.plugin_dir().join(".receipts.json")).unwrap();
    assert!(
        !index.contains("hunter7") && index.contains("?token=***&v=***"),
        "{index}"
    );
    let list = ok(t.app(&["plugin", "list"]));
    assert!(!list.contains("hunter7"), "{list}");
    t.refused(
        &["plugin", "upgrade", "tok", "--sha256", &sha256(&body)],
        2,
        "not recorded; install it again with the whole URL",
    );
}

#[test]
fn control_characters_in_a_plugins_metadata_are_printed_escaped() {
    let t = T::new();
    let src = t.src("app-evil");
    common::write_executable(
        &src,
        "#!/bin/sh\nif [ \"$1\" = __app_metadata ]; then\n  printf '%s\\n' '{\"apiVersion\":\"app.plugin/v1\",\"version\":\"1\\u001b[31m\",\"description\":\"hi\\u001b]0;owned\\u0007\\nforged\\r\\u009b2K\"}'\nfi\n",
    );
    let out = ok(t.app(&["plugin", "install", src.to_str().unwrap()]));
    assert!(
        out.contains(r"installed plugin 'evil' 1\x1b[31m"),
        "{out:?}"
    );
    let help = ok(t.app(&["help"]));
    let list = ok(t.app(&["plugin", "list"]));
    for text in [&help, &list, &out] {
        assert!(
            !text.contains(['\x1b', '\x07', '\r', '\u{9b}']),
            "raw control characters in {text:?}"
        );
    }
    assert!(
        help.contains(r"hi\x1b]0;owned\x07\nforged\r\u{9b}2K"),
        "{help}"
    );
    assert!(
        list.contains(r"hi\x1b]0;owned\x07\nforged\r\u{9b}2K"),
        "{list}"
    );
    assert!(list.contains(r"[installed 1\x1b[31m from"), "{list}");
}
