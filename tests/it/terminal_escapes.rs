//! Text from a file name, an archive or an index never reaches the terminal
//! as terminal codes: ESC, an OSC sequence ended by BEL, a C1 control and a
//! bidirectional override are shown escaped (`\x1b`, `\x07`, `\u{9b}`,
//! `\u{202e}`) in every message that can quote them, an index's keys quoted
//! by serde's "unknown field" included. (Every error passes
//! `run::printable`: `run` unit tests.)

use crate::common;

use std::fs;

use common::Sandbox;

/// ESC, an OSC title ended by BEL, a C1 CSI and a right-to-left override.
const HOSTILE: &str = "\x1b]0;pwned\x07\u{9b}2J\u{202e}";
/// How [`HOSTILE`] must be shown.
const SHOWN: &str = "\\x1b]0;pwned\\x07\\u{9b}2J\\u{202e}";

fn raw(text: &str) -> bool {
    text.chars()
        .any(|c| app_plugin::text::is_dangerous(c) && c != '\n')
}

#[test]
fn an_archive_member_name_is_shown_escaped_in_cannot_be_a_plugin_name() {
    let sb = Sandbox::new();
    let member = format!("app-x{HOSTILE}y");
    let gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
    let mut tar = tar::Builder::new(gz);
    let body = b"#!/bin/sh\necho hi\n";
    let mut header = tar::Header::new_gnu();
    header.set_size(body.len() as u64);
    header.set_mode(0o755);
    header.set_cksum();
    tar.append_data(&mut header, &member, &body[..]).unwrap();
    let archive = sb.path().join("evil.tar.gz");
    fs::write(&archive, tar.into_inner().unwrap().finish().unwrap()).unwrap();
    let ran = sb
        .run(["plugin", "install", archive.to_str().unwrap()])
        .assert()
        .code(2)
        .stderr_has("cannot be a plugin name")
        .stderr_has(format!("x{SHOWN}y"));
    assert!(!raw(&ran.stderr), "{:?}", ran.stderr);
    assert!(fs::read_dir(sb.data_dir().join("plugins"))
        .map(|d| d.count() == 0)
        .unwrap_or(true));
}

#[test]
fn app_help_shows_a_file_names_bidi_and_c1_characters_escaped() {
    let sb = Sandbox::new();
    sb.script(&format!("app-report{}gpj.exe", '\u{202e}'), "#!/bin/sh\n");
    sb.script(&format!("app-c1{}x", '\u{9b}'), "#!/bin/sh\n");
    sb.script("app-plain", "#!/bin/sh\n");
    let ran = sb.run(["help"]).assert().code(0);
    assert!(!raw(&ran.stdout), "{:?}", ran.stdout);
    // Listed, escaped: the file was seen (a name with a C0 or C1 control is
    // left out, as `plugin list` warns).
    ran.stdout_has("report\\u{202e}gpj.exe").stdout_has("plain");
    let list = sb.run(["plugin", "list"]).assert();
    assert!(!raw(&list.stdout) && !raw(&list.stderr), "{list:?}");
    assert!(list.stdout.contains("report\\u{202e}gpj.exe"), "{list:?}");
}

#[test]
fn an_index_key_quoted_by_the_parser_is_shown_escaped() {
    let Some(w) = common::index::World::new() else {
        return;
    };
    let publish = |path: &str, entry: serde_json::Value| {
        let url = w.server.url(&format!("/{path}"));
        let doc = serde_json::json!({"apiVersion": "app.index/v1", "serial": 1,
            "expires": common::index::FUTURE, "index": url, "plugins": [entry]});
        w.publish_bytes(path, &serde_json::to_vec(&doc).unwrap(), &w.key);
        url
    };
    // Positive control: an entry with the keys the format knows is taken.
    let url = publish("good.json", w.plugin("hello", "1.0.0"));
    w.add("good", &url).code(0);
    // serde's "unknown field" quotes the publisher's key as it is.
    let mut entry = w.plugin("hello", "1.0.0");
    entry[format!("note{HOSTILE}")] = "x".into();
    let url = publish("bad.json", entry);
    let key_file = w.key.public.to_str().unwrap();
    let args = [
        "plugin",
        "index",
        "add",
        "bad",
        &url,
        "--key-file",
        key_file,
    ];
    let ran = w.refused(&args, 5, &["unknown field", &format!("note{SHOWN}")]);
    assert!(!raw(&ran.stderr) && !raw(&ran.stdout), "{ran:?}");
}
