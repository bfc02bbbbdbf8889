//! What binds a signature to the index the user added: the index's own
//! name (`index`), checked against the one recorded by `index add`; the
//! user's freeze bound (`--max-age` against `signed_at`); and the honest
//! refusals around them (same serial with other bytes, an edited trusted
//! comment, a stalled signature, an index URL with a query).

use crate::common;

use std::io::{BufRead, BufReader, Write};
use std::net::TcpListener;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use common::index::{utc, World, FUTURE};
use serde_json::{json, Value};

/// An index document with `serial`, `plugins` and the `extra` fields.
fn doc(serial: u64, plugins: Vec<Value>, extra: Value) -> Vec<u8> {
    let mut doc = json!({"apiVersion": "app.index/v1", "serial": serial, "expires": FUTURE,
        "plugins": plugins});
    for (k, v) in extra.as_object().unwrap() {
        doc[k] = v.clone();
    }
    serde_json::to_vec_pretty(&doc).unwrap()
}

fn key_args(w: &World) -> [&str; 2] {
    ["--key-file", w.key.public.to_str().unwrap()]
}

#[test]
fn another_index_signed_by_the_same_key_is_refused_and_the_right_one_still_updates() {
    let Some(w) = World::new() else { return };
    let main_url = w.server.url("/main.json");
    let beta_url = w.server.url("/beta.json");
    let main9 = doc(
        9,
        vec![w.plugin("hello", "1.0.0")],
        json!({"index": main_url}),
    );
    let beta50 = doc(
        50,
        vec![w.plugin("hello", "2.0.0")],
        json!({"index": beta_url}),
    );
    w.publish_bytes("main.json", &main9, &w.key);
    w.publish_bytes("beta.json", &beta50, &w.key);
    w.add("main", &main_url)
        .code(0)
        .stdout_has(format!("index 'main' names itself \"{main_url}\""));
    w.add("beta", &beta_url).code(0);
    w.app(&["plugin", "install", "main/hello"]).code(0);

    // Beta's file and signature served at main's URL: refused, nothing changed.
    w.publish_bytes("main.json", &beta50, &w.key);
    w.refused(
        &["plugin", "index", "update", "main"],
        5,
        &[&format!("index 'main' ({main_url}) is signed, but names itself \"{beta_url}\", not \"{main_url}\" as when it was added, so it is refused")],
    );
    // Nor is a copy with the name taken out.
    let unnamed = doc(51, vec![w.plugin("hello", "2.0.0")], json!({}));
    w.publish_bytes("main.json", &unnamed, &w.key);
    w.refused(
        &["plugin", "index", "update", "main"],
        5,
        &["is signed, but does not name itself (no \"index\" field)"],
    );
    w.app(&["plugin", "upgrade", "--all"])
        .ok()
        .stdout_is("hello 1.0.0: up to date");

    // Main's real next serial still updates (the floor is still 9), and
    // upgrades from it.
    let main10 = doc(
        10,
        vec![w.plugin("hello", "1.1.0")],
        json!({"index": main_url}),
    );
    w.publish_bytes("main.json", &main10, &w.key);
    w.app(&["plugin", "index", "update", "main"])
        .ok()
        .stdout_is("main: serial 9 → 10, 1 plugin versions");
    w.app(&["plugin", "upgrade", "--all"])
        .ok()
        .stdout_is("hello 1.0.0 → 1.1.0");
}

#[test]
fn an_index_that_does_not_name_itself_is_taken_with_a_warning_until_it_does() {
    let Some(w) = World::new() else { return };
    let url = w.server.url("/old.json");
    w.publish_bytes("old.json", &doc(1, vec![], json!({})), &w.key);
    let warning = "warning: index 'old' does not name itself (no \"index\" field)";
    w.add("old", &url).code(0).stderr_has(warning);
    w.publish_bytes("old.json", &doc(2, vec![], json!({})), &w.key);
    w.app(&["plugin", "index", "update"])
        .code(0)
        .stdout_is("main: serial 1 → 2, 0 plugin versions".replace("main", "old"))
        .stderr_has(warning);
    // The first copy that names itself sets the name, checked from then on.
    w.publish_bytes(
        "old.json",
        &doc(3, vec![], json!({"index": "example.org/old"})),
        &w.key,
    );
    w.app(&["plugin", "index", "update"]).ok().stdout_has(
        "old: names itself \"example.org/old\" from now on: every update must carry the same name",
    );
    let config = std::fs::read_to_string(w.sb.config_dir().join("indexes.json")).unwrap();
    assert!(config.contains("\"id\": \"example.org/old\""), "{config}");
    w.publish_bytes(
        "old.json",
        &doc(4, vec![], json!({"index": "example.org/beta"})),
        &w.key,
    );
    w.refused(
        &["plugin", "index", "update"],
        5,
        &["names itself \"example.org/beta\", not \"example.org/old\""],
    );
    w.publish_bytes(
        "old.json",
        &doc(4, vec![], json!({"index": "example.org/old"})),
        &w.key,
    );
    w.app(&["plugin", "index", "update"])
        .ok()
        .stdout_is("old: serial 3 → 4, 0 plugin versions");
}

#[test]
fn max_age_refuses_an_index_signed_too_long_ago_and_a_far_expiry_is_pointed_out() {
    let Some(w) = World::new() else { return };
    let url = w.server.url("/m.json");
    let add = |extra: &[&str]| {
        let mut args = vec!["plugin", "index", "add", "m", url.as_str()];
        args.extend(key_args(&w));
        args.extend_from_slice(extra);
        args.iter().map(|s| s.to_string()).collect::<Vec<_>>()
    };
    let run = |args: &[String]| w.app(&args.iter().map(String::as_str).collect::<Vec<_>>());
    let publish = |signed_at: Option<String>| {
        let extra = match signed_at {
            Some(t) => json!({"index": url, "signed_at": t}),
            None => json!({"index": url}),
        };
        w.publish_bytes("m.json", &doc(1, vec![], extra), &w.key);
    };
    // Signed 40 days ago: refused under --max-age 30d.
    let old = utc(-40 * 86_400);
    publish(Some(old.clone()));
    let args = add(&["--max-age", "30d"]);
    // (The first command makes the cache directory, for its lock.)
    run(&args).code(6).stderr_has(format!("index 'm' ({url}) was signed on {old}, longer ago than the --max-age of 30d it was added with, so it is refused"));
    assert!(!w.cache_dir().join("indexes/m.json").exists());
    // No signed_at: the bound cannot be checked, refused.
    publish(None);
    w.refused(
        &args.iter().map(String::as_str).collect::<Vec<_>>(),
        6,
        &["has no \"signed_at\", so the --max-age of 30d it was added with cannot be checked"],
    );
    // Dated two days ahead: refused, naming the clock.
    publish(Some(utc(2 * 86_400)));
    w.refused(
        &args.iter().map(String::as_str).collect::<Vec<_>>(),
        5,
        &["is more than 3600 s ahead of this machine's clock"],
    );
    // A duration that is not one.
    w.refused(
        &add(&["--max-age", "30x"])
            .iter()
            .map(String::as_str)
            .collect::<Vec<_>>(),
        2,
        &["--max-age '30x' is not a duration like 30d, 12h, 90m or 45s"],
    );
    // Signed a day ago: taken, with no warning about its far expiry.
    publish(Some(utc(-86_400)));
    let ran = run(&args).code(0).stdout_has("added index 'm'");
    assert!(!ran.stderr.contains("expires only on"), "{ran:?}");
    // Updates are held to the bound too: the same copy, 40 days old.
    publish(Some(old.clone()));
    w.refused(
        &["plugin", "index", "update", "m"],
        6,
        &["longer ago than the --max-age of 30d"],
    );
    // Without --max-age, an expiry centuries away gets a warning that
    // says how to bound it.
    w.app(&["plugin", "index", "remove", "m"]).ok();
    run(&add(&[])).code(0).stderr_has(format!(
        "warning: index 'm' expires only on {FUTURE}, so a server frozen at this copy would be believed until then"
    ));
}

#[test]
fn same_serial_with_other_contents_is_refused_not_unchanged() {
    let Some(w) = World::new() else { return };
    let url = w.main_index(5, &[("hello", "1.0.0")]);
    let cached = w.cache_dir().join("indexes/main.json");
    let before = std::fs::read(&cached).unwrap();
    w.publish(
        "index.json",
        5,
        FUTURE,
        vec![w.plugin("evil", "1.0.0")],
        &w.key,
    );
    w.refused(
        &["plugin", "index", "update"],
        6,
        &[&format!("index 'main' ({url}) has serial 5, the same as the copy already verified, but other contents, so it is refused")],
    );
    assert_eq!(std::fs::read(&cached).unwrap(), before);
    // The same bytes again are "unchanged"; a raised serial is taken.
    w.publish_bytes("index.json", &before, &w.key);
    w.app(&["plugin", "index", "update"])
        .ok()
        .stdout_is("main: serial 5, unchanged, 1 plugin versions");
    w.publish(
        "index.json",
        6,
        FUTURE,
        vec![w.plugin("evil", "1.0.0")],
        &w.key,
    );
    w.app(&["plugin", "index", "update"])
        .ok()
        .stdout_is("main: serial 5 → 6, 1 plugin versions");
}

#[test]
fn an_edited_trusted_comment_is_named_as_such() {
    let Some(w) = World::new() else { return };
    w.main_index(1, &[]);
    let url = w.server.url("/index.json");
    let bytes = doc(2, vec![], json!({"index": url}));
    let signature = String::from_utf8(w.key.sign(&bytes)).unwrap();
    let edited: String = signature
        .lines()
        .map(|l| match l.starts_with("trusted comment: ") {
            true => "trusted comment: timestamp:1\tfile:other.json\n".to_string(),
            false => format!("{l}\n"),
        })
        .collect();
    assert_ne!(edited, signature);
    w.server.serve("/index.json", &bytes);
    w.server.serve("/index.json.minisig", edited.as_bytes());
    w.refused(
        &["plugin", "index", "update"],
        5,
        &[
            "failed signature verification",
            "the trusted comment of its .minisig",
        ],
    );
    w.server.serve("/index.json.minisig", signature.as_bytes());
    w.app(&["plugin", "index", "update"])
        .ok()
        .stdout_is("main: serial 1 → 2, 0 plugin versions");
}

#[test]
fn an_index_url_with_a_query_is_refused_without_showing_it_and_the_plain_url_adds() {
    // Item 8: `…?private_token=T` fetched `…?private_token=T.minisig` and
    // printed T. Every query value may be a token and would be stored in
    // clear in indexes.json, so a query is refused (the token goes in
    // --token-file); the signature URL is built beside the path anyway.
    let Some(w) = World::new() else { return };
    let bytes = doc(1, vec![], json!({"index": "q"}));
    w.server.serve("/q.json", &bytes);
    w.server.serve("/q.json.minisig", &w.key.sign(&bytes));
    let url = w.server.url("/q.json?private_token=T0KEN-SECRET");
    let out = w.add("q", &url).code(2);
    let text = format!("{}{}", out.stdout, out.stderr);
    assert!(text.contains("--token-file"), "{text}");
    assert!(!text.contains("T0KEN-SECRET"), "{text}");
    // The positive control: the same index without the query is added,
    // its signature fetched beside its path.
    w.add("q", &w.server.url("/q.json"))
        .code(0)
        .stdout_has("added index 'q'");
    let paths: Vec<String> = w.server.requests().into_iter().map(|(p, _)| p).collect();
    assert!(paths.contains(&"/q.json.minisig".to_string()), "{paths:?}");
    assert!(!paths.iter().any(|p| p.contains("T0KEN")), "{paths:?}");
}

/// A server that answers `/index.json` with `bytes` and, while `stall` is
/// set, `/index.json.minisig` with headers and then silence (until the
/// client goes, 30 s at most); else with `signature`.
fn stalling_server(bytes: Vec<u8>, signature: Vec<u8>, stall: Arc<AtomicBool>) -> String {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}/index.json", listener.local_addr().unwrap());
    listener.set_nonblocking(true).unwrap();
    std::thread::spawn(move || {
        let end = Instant::now() + Duration::from_secs(60);
        while Instant::now() < end {
            let Ok((stream, _)) = listener.accept() else {
                std::thread::sleep(Duration::from_millis(20));
                continue;
            };
            let (bytes, signature, stall) = (bytes.clone(), signature.clone(), stall.clone());
            std::thread::spawn(move || {
                stream.set_nonblocking(false).ok();
                stream.set_read_timeout(Some(Duration::from_secs(5))).ok();
                let mut line = String::new();
                let mut reader = BufReader::new(&stream);
                reader.read_line(&mut line).ok();
                let mut header = String::new();
                while reader
                    .read_line(&mut header)
                    .map(|n| n > 2)
                    .unwrap_or(false)
                {
                    header.clear();
                }
                let signing = line.contains(".minisig");
                let body = if signing { &signature } else { &bytes };
                let mut out = &stream;
                let _ = write!(
                    out,
                    "HTTP/1.1 200 OK\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
                    body.len()
                );
                if signing && stall.load(Ordering::SeqCst) {
                    let _ = out.write_all(&body[..10]).and_then(|()| out.flush());
                    std::thread::sleep(Duration::from_secs(30));
                    return;
                }
                let _ = out.write_all(body);
            });
        }
    });
    url
}

#[test]
fn a_stalled_signature_says_it_stalled_and_never_advises_going_unsigned() {
    let Some(w) = World::new() else { return };
    let bytes = doc(1, vec![], json!({"index": "s"}));
    let stall = Arc::new(AtomicBool::new(true));
    let url = stalling_server(bytes.clone(), w.key.sign(&bytes), stall.clone());
    let mut args = vec!["plugin", "index", "add", "s", url.as_str()];
    args.extend(key_args(&w));
    let mut cmd = w.sb.app_without_proxy();
    cmd.env("APP_FETCH_TIMEOUT", "2").args(&args);
    let ran = common::run::Run::new(cmd).assert().code(3);
    for part in [
        &format!("index 's' ({url}) has a signature whose download stalled: "),
        "timeout: no byte for 2 s while reading the body",
        "try again later",
    ] {
        assert!(ran.stderr.contains(part), "{part:?}: {ran:?}");
    }
    assert!(!ran.stderr.contains("insecure"), "{ran:?}");
    assert!(!w.cache_dir().join("indexes/s.json").exists());
    // Once the signature comes, the same index is added.
    stall.store(false, Ordering::SeqCst);
    w.app(&args).code(0).stdout_has("added index 's'");
}
