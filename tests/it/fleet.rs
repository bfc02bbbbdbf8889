//! `manage` on several repeaters at once: three real `app-event-repeater run`
//! processes with TCP APIs, reached with `--host`, the global `-H`, named
//! hosts and groups from the config file; a host that is down; `status`,
//! and `status --watch` in a real terminal (tmux).

use crate::common;

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use common::repeater::{status_rows, Repeater, RepeaterBuilder};
use common::run::Ran;
use common::tools::require_tool;
use common::{free_port, plugin_bin, wait_for, Sandbox};
use serde_json::{json, Value};

const PROGRAM: &str = "app-event-repeater-manage: ";

/// Runs `cmd` with no stdin, killing it (and failing) when it hangs.
fn run_bounded(cmd: Command) -> Ran {
    common::run::Run::new(cmd).assert()
}

fn manage(sb: &Sandbox, args: &[&str]) -> Ran {
    let mut cmd = sb.command(plugin_bin("app-event-repeater-manage"));
    cmd.args(args);
    run_bounded(cmd)
}

/// `app ARGS…`: the dispatcher passes `-H` to the plugin in its context.
fn app(sb: &Sandbox, args: &[&str]) -> Ran {
    let mut cmd = sb.app();
    cmd.args(args);
    run_bounded(cmd)
}

fn repeater<'a>(sb: &'a Sandbox, name: &str) -> RepeaterBuilder<'a> {
    Repeater::builder(sb, name)
        .sinkprotocol("stderr")
        .no_source()
        .args(["--listen", "127.0.0.1:0"])
}

/// The routes of a repeater, read on its own unix socket (not through the
/// command under test), as sorted (source, sink) pairs.
fn routes_of(r: &Repeater) -> Vec<(String, String)> {
    let (status, body) = r.get("/events");
    assert_eq!(status, 200, "{body}");
    let v: Value = serde_json::from_str(&body).expect("routes JSON");
    let mut out: Vec<(String, String)> = v
        .as_array()
        .expect("array")
        .iter()
        .map(|r| {
            (
                r["sourcetopic"].as_str().unwrap_or_default().to_string(),
                r["sinktopic"].as_str().unwrap_or_default().to_string(),
            )
        })
        .collect();
    out.sort();
    out
}

fn write(dir: &Path, name: &str, text: &str) -> String {
    let path = dir.join(name);
    std::fs::write(&path, text).expect("write");
    path.to_string_lossy().into_owned()
}

const ROUTES: &str =
    r#"[{"sourcetopic":"timer/sec/1","sinktopic":"/time/1s"},{"sourcetopic":"timer/min/"}]"#;

fn want() -> Vec<(String, String)> {
    vec![
        ("timer/min/".to_string(), String::new()),
        ("timer/sec/1".to_string(), "/time/1s".to_string()),
    ]
}

#[test]
fn apply_get_and_status_across_three_repeaters() {
    let sb = Sandbox::new();
    let rs: Vec<Repeater> = ["r1", "r2", "r3"]
        .iter()
        .map(|n| repeater(&sb, n).start())
        .collect();
    let urls: Vec<String> = rs.iter().map(Repeater::url).collect();
    let mut hosts: Vec<&str> = Vec::new();
    for u in &urls {
        hosts.extend(["--host", u.as_str()]);
    }
    // r2 already has one of the routes, with another sink topic.
    let (status, _) = rs[1].send_json(
        "POST",
        "/events",
        r#"{"sourcetopic":"timer/sec/1","sinktopic":"/old"}"#,
    );
    assert_eq!(status, 201);
    let file = write(sb.path(), "routes.json", ROUTES);

    // --dry-run: every host's difference, nothing changed.
    let args: Vec<&str> = [&["apply", "-f", &file, "--dry-run"][..], &hosts].concat();
    let dry = manage(&sb, &args).ok();
    assert!(
        dry.stdout
            .contains(&format!("{}: + timer/min/ -> .\n", urls[0])),
        "{dry:?}"
    );
    assert!(
        dry.stdout
            .contains(&format!("{}: ~ timer/sec/1 -> /old => /time/1s\n", urls[1])),
        "{dry:?}"
    );
    assert_eq!(dry.stdout.matches("dry run, nothing changed").count(), 3);
    assert!(routes_of(&rs[0]).is_empty());

    let args: Vec<&str> = [&["apply", "-f", &file][..], &hosts].concat();
    let applied = manage(&sb, &args).ok();
    for u in &urls {
        assert!(
            applied.stdout.contains(&format!("{u}: applied: ")),
            "{applied:?}"
        );
    }
    for r in &rs {
        assert_eq!(routes_of(r), want(), "{}", r.name());
    }
    // Applying again changes nothing anywhere.
    let again = manage(&sb, &args).ok();
    assert_eq!(
        again.stdout.matches(": no changes\n").count(),
        3,
        "{again:?}"
    );

    // get -o json: one object keyed by host.
    let args: Vec<&str> = [&["get"][..], &hosts].concat();
    let got = manage(&sb, &args).ok().json();
    let obj = got.as_object().expect("an object keyed by host");
    assert_eq!(obj.len(), 3);
    for u in &urls {
        assert_eq!(obj[u.as_str()].as_array().map(Vec::len), Some(2), "{got}");
    }
    // get -o table: a HOST column.
    let args: Vec<&str> = [&["get", "-o", "table"][..], &hosts].concat();
    let table = manage(&sb, &args).ok().stdout;
    let lines: Vec<&str> = table.lines().collect();
    assert!(lines[0].starts_with("HOST "), "{table}");
    assert!(lines[0].contains("SOURCE TOPIC") && lines[0].contains("SINK TOPIC"));
    assert_eq!(lines.len(), 1 + 3 * 2, "{table}");
    for u in &urls {
        assert_eq!(
            lines.iter().filter(|l| l.starts_with(u.as_str())).count(),
            2
        );
    }
    // put and delete by topic, on all three.
    let args: Vec<&str> = [&["put", "timer/sec/5", "/time/5s"][..], &hosts].concat();
    manage(&sb, &args).ok();
    let args: Vec<&str> = [&["delete", "timer/min/"][..], &hosts].concat();
    manage(&sb, &args).ok();
    for r in &rs {
        assert_eq!(
            routes_of(r),
            vec![
                ("timer/sec/1".to_string(), "/time/1s".to_string()),
                ("timer/sec/5".to_string(), "/time/5s".to_string()),
            ]
        );
    }

    // status: one row per host, from /healthz and /metrics.
    let urls_str: Vec<&str> = urls.iter().map(String::as_str).collect();
    let rows = status_rows(&sb, &urls_str);
    let rows = rows.as_array().expect("array of rows");
    assert_eq!(rows.len(), 3);
    for (row, (u, r)) in rows.iter().zip(urls.iter().zip(&rs)) {
        assert_eq!(row["host"], u.as_str());
        assert_eq!(row["name"], r.name());
        // No source runs: the repeater is up but degraded.
        assert_eq!(row["state"], "degraded", "{row}");
        assert_eq!(row["routes"], 2);
        assert_eq!(row["source_connected"], false);
        assert_eq!(row["sink"], "stderr");
        assert_eq!(row["sink_connected"], true);
        assert_eq!(row["received_per_sec"], 0.0);
        assert_eq!(row["buffered"], 0);
        assert_eq!(row["dropped"], 0);
        assert!(row["version"].as_str().is_some_and(|v| !v.is_empty()));
        assert!(row["uptime_secs"].as_u64().is_some());
    }
    let args: Vec<&str> = [&["status", "--interval", "0.2"][..], &hosts].concat();
    let table = manage(&sb, &args).ok().stdout;
    let lines: Vec<&str> = table.lines().collect();
    assert!(lines[0].starts_with("HOST "), "{table}");
    for h in [
        "STATE", "VERSION", "ROUTES", "SOURCE", "SINK", "IN/S", "ACKED/S", "BUFFERED", "DROPPED",
        "UPTIME",
    ] {
        assert!(lines[0].contains(h), "{h}: {table}");
    }
    assert_eq!(lines.len(), 4, "{table}");
    assert!(
        lines[1].contains("degraded") && lines[1].contains("ok stderr"),
        "{table}"
    );
}

#[test]
fn a_host_that_is_down_does_not_stop_the_others() {
    let sb = Sandbox::new();
    let r1 = repeater(&sb, "r1").start();
    let r3 = repeater(&sb, "r3").start();
    let down = format!("http://127.0.0.1:{}", free_port());
    let (u1, u3) = (r1.url(), r3.url());
    let file = write(sb.path(), "routes.json", ROUTES);
    let run = manage(
        &sb,
        &[
            "apply", "-f", &file, "--host", &u1, "--host", &down, "--host", &u3,
        ],
    );
    assert_eq!(run.exit(), 4, "{run:?}");
    assert_eq!(routes_of(&r1), want());
    assert_eq!(routes_of(&r3), want());
    assert!(run.stdout.contains(&format!("{u1}: applied")), "{run:?}");
    assert!(run.stdout.contains(&format!("{u3}: applied")), "{run:?}");
    // One line per host, in order, then the count.
    let lines: Vec<&str> = run.stderr.lines().collect();
    assert_eq!(lines.len(), 4, "{run:?}");
    assert!(lines.iter().all(|l| l.starts_with(PROGRAM)), "{run:?}");
    assert_eq!(lines[0], format!("{PROGRAM}{u1}: ok"));
    assert!(
        lines[1].starts_with(&format!("{PROGRAM}{down}: ")),
        "{run:?}"
    );
    assert!(lines[1].contains("connection refused"), "{run:?}");
    assert_eq!(lines[2], format!("{PROGRAM}{u3}: ok"));
    assert_eq!(lines[3], format!("{PROGRAM}1 of 3 hosts failed"));

    // get: the answers of the hosts that answered, and the report.
    let run = manage(&sb, &["get", "--host", &u1, "--host", &down]);
    assert_eq!(run.exit(), 4, "{run:?}");
    assert_eq!(run.json().as_object().map(|o| o.len()), Some(1));
    // status: the host is a "down" row with its reason.
    let run = manage(
        &sb,
        &[
            "status",
            "--interval",
            "0.2",
            "--host",
            &u1,
            "--host",
            &down,
        ],
    );
    assert_eq!(run.exit(), 4, "{run:?}");
    let row = run
        .stdout
        .lines()
        .find(|l| l.starts_with(&down))
        .unwrap_or_else(|| panic!("no row for {down}: {run:?}"));
    assert!(
        row.contains("down") && row.contains("connection refused"),
        "{row}"
    );
}

#[test]
fn named_hosts_and_groups_from_the_config_file() {
    let sb = Sandbox::new();
    let r1 = repeater(&sb, "r1").env("APP_TOKEN", "token-one").start();
    let r2 = repeater(&sb, "r2").env("APP_TOKEN", "token-two").start();
    write(&sb.config_dir(), "edge1.token", "token-one\n");
    write(&sb.config_dir(), "edge2.token", "token-two\n");
    sb.write_config(
        &json!({
            "hosts": {
                "edge1": {"url": r1.url(), "token_file": "edge1.token"},
                "edge2": {"url": r2.url(), "token_file": "~/config/edge2.token"}
            },
            "groups": {"edges": ["edge1", "edge2"]}
        })
        .to_string(),
    );
    // Through app: the global -H reaches the plugin in its context.
    app(
        &sb,
        &[
            "-H",
            "@edges",
            "event-repeater",
            "manage",
            "put",
            "timer/sec/1",
            "/t",
        ],
    )
    .ok();
    for r in [&r1, &r2] {
        assert_eq!(
            routes_of(r),
            vec![("timer/sec/1".to_string(), "/t".to_string())]
        );
    }
    let table = app(
        &sb,
        &[
            "-H",
            "edge1",
            "-H",
            "edge2",
            "event-repeater",
            "manage",
            "get",
            "-o",
            "table",
        ],
    )
    .ok()
    .stdout;
    assert!(
        table
            .lines()
            .nth(1)
            .is_some_and(|l| l.starts_with("edge1  ")),
        "{table}"
    );
    assert!(
        table
            .lines()
            .nth(2)
            .is_some_and(|l| l.starts_with("edge2  ")),
        "{table}"
    );
    // One named host prints what one host always printed.
    let got = manage(&sb, &["get", "--host", "edge2"]).ok().json();
    assert_eq!(got, json!([{"sourcetopic":"timer/sec/1","sinktopic":"/t"}]));
    // An unknown name is a usage error naming the known ones; nothing is sent.
    let run = manage(&sb, &["get", "--host", "edge9"]);
    assert_eq!(run.exit(), 2, "{run:?}");
    assert!(
        run.stderr.contains("no host 'edge9'") && run.stderr.contains("known: edge1, edge2"),
        "{run:?}"
    );
}

#[test]
fn a_token_never_goes_over_plain_http_to_another_machine() {
    let sb = Sandbox::new();
    // 192.0.2.0/24 is TEST-NET-1: nothing is sent, so nothing needs to listen.
    let run = manage(
        &sb,
        &["get", "--host", "http://192.0.2.7:7070", "--token", "t"],
    );
    assert_eq!(run.exit(), 2, "{run:?}");
    assert!(
        run.stderr
            .contains("refusing to send the API token in clear text to http://192.0.2.7:7070"),
        "{run:?}"
    );
    // 127.1 is loopback: allowed (and refused by nobody listening).
    let port = free_port();
    let run = manage(
        &sb,
        &[
            "get",
            "--host",
            &format!("http://127.1:{port}"),
            "--token",
            "t",
        ],
    );
    assert_eq!(run.exit(), 3, "{run:?}");
    assert!(run.stderr.contains("connection refused"), "{run:?}");
}

#[test]
fn status_watch_redraws_in_place_and_stops_on_ctrl_c() {
    let Some(tmux) = require_tool("tmux", "tmux") else {
        return;
    };
    let sb = Sandbox::new();
    let r = repeater(&sb, "w1").start();
    let socket = sb.path().join("tmux.sock");
    let tmux_cmd = |args: &[&str]| {
        let mut cmd = sb.command(&tmux);
        cmd.arg("-S")
            .arg(&socket)
            .arg("-f")
            .arg("/dev/null")
            .args(args);
        let out = cmd.output().expect("run tmux");
        assert!(out.status.success(), "tmux {args:?}: {out:?}");
        String::from_utf8_lossy(&out.stdout).into_owned()
    };
    // The tmux server goes when the test ends, passed or not.
    struct KillServer(Command);
    impl Drop for KillServer {
        fn drop(&mut self) {
            let _ = self.0.stdout(Stdio::null()).stderr(Stdio::null()).status();
        }
    }
    let mut kill = sb.command(&tmux);
    kill.arg("-S").arg(&socket).arg("kill-server");
    let _server = KillServer(kill);
    let done = sb.path().join("done");
    let line = format!(
        "{} status --watch --interval 0.3 --host {}; echo exit=$? > {}",
        plugin_bin("app-event-repeater-manage").display(),
        r.url(),
        done.display()
    );
    tmux_cmd(&[
        "new-session",
        "-d",
        "-x",
        "200",
        "-y",
        "30",
        "bash",
        "-c",
        &line,
    ]);
    let screen = || tmux_cmd(&["capture-pane", "-p"]);
    let first = wait_for(Duration::from_secs(10), || {
        let s = screen();
        s.contains("Ctrl-C to stop").then_some(s)
    })
    .unwrap_or_else(|| panic!("no status screen: {}", screen()));
    assert!(
        first.lines().next().is_some_and(|l| l.starts_with("HOST ")),
        "{first}"
    );
    // Change the routes: the same screen shows the new count after a redraw,
    // with one header and one row (redrawn in place, not scrolled).
    let (status, _) = r.send_json("POST", "/events", r#"{"sourcetopic":"a"}"#);
    assert_eq!(status, 201);
    let redrawn = wait_for(Duration::from_secs(10), || {
        let s = screen();
        let row = s.lines().nth(1)?.to_string();
        let cells: Vec<&str> = row.split_whitespace().collect();
        (cells.get(4) == Some(&"1")).then_some(s)
    })
    .unwrap_or_else(|| panic!("the row did not show 1 route: {}", screen()));
    assert_eq!(redrawn.matches("HOST ").count(), 1, "{redrawn}");
    assert_eq!(redrawn.matches("Ctrl-C to stop").count(), 1, "{redrawn}");
    tmux_cmd(&["send-keys", "C-c"]);
    let code = wait_for(Duration::from_secs(10), || {
        std::fs::read_to_string(&done).ok()
    })
    .unwrap_or_else(|| panic!("no exit after Ctrl-C: {}", screen()));
    assert_eq!(code.trim(), "exit=0");
}

/// A CA and certificates it signs, made for the test (no key is committed).
struct Pki {
    ca: rcgen::CertifiedIssuer<'static, rcgen::KeyPair>,
}

impl Pki {
    fn new(name: &str) -> Pki {
        let mut params = rcgen::CertificateParams::new(Vec::<String>::new()).expect("params");
        params.is_ca = rcgen::IsCa::Ca(rcgen::BasicConstraints::Unconstrained);
        params
            .distinguished_name
            .push(rcgen::DnType::CommonName, name);
        let key = rcgen::KeyPair::generate().expect("CA key");
        Pki {
            ca: rcgen::CertifiedIssuer::self_signed(params, key).expect("CA certificate"),
        }
    }

    /// Writes the CA certificate to `dir/file`; returns its path.
    fn write_ca(&self, dir: &Path, file: &str) -> String {
        write(dir, file, &self.ca.pem())
    }

    /// A server certificate for `host` (an IP address or a name): writes
    /// `dir/<stem>.crt` and `dir/<stem>.key`, returns their paths.
    fn server(&self, host: &str, dir: &Path, stem: &str) -> (String, String) {
        let params = rcgen::CertificateParams::new(vec![host.to_string()]).expect("params");
        let key = rcgen::KeyPair::generate().expect("key");
        let cert = params.signed_by(&key, &self.ca).expect("sign");
        (
            write(dir, &format!("{stem}.crt"), &cert.pem()),
            write(dir, &format!("{stem}.key"), &key.serialize_pem()),
        )
    }
}

/// Network namespaces joined to the test's own by veth pairs; removed on drop.
struct Netns {
    names: Vec<String>,
}

impl Netns {
    /// `None` (after one line saying why) where namespaces cannot be made,
    /// unless `APP_TEST_REQUIRE_NETNS=1`, which makes that a failure.
    fn require() -> Option<PathBuf> {
        let why = match common::broker::find_program("ip") {
            None => "ip is not installed (apt-get install iproute2)".to_string(),
            Some(ip) => {
                let probe = format!("appfleet-probe-{}", std::process::id());
                let made = Command::new(&ip)
                    .args(["netns", "add", &probe])
                    .stderr(Stdio::piped())
                    .output();
                match made {
                    Ok(out) if out.status.success() => {
                        let _ = Command::new(&ip).args(["netns", "del", &probe]).status();
                        return Some(ip);
                    }
                    Ok(out) => format!(
                        "cannot make a network namespace (needs root): {}",
                        String::from_utf8_lossy(&out.stderr).trim()
                    ),
                    Err(e) => format!("cannot run ip: {e}"),
                }
            }
        };
        if std::env::var("APP_TEST_REQUIRE_NETNS").as_deref() == Ok("1") {
            panic!("APP_TEST_REQUIRE_NETNS=1 but {why}");
        }
        common::tools::skip(&why);
        None
    }

    /// A namespace `name` reachable at `10.<net>.<sub>.2` from the test,
    /// which gets `.1`.
    fn add(&mut self, ip: &Path, name: &str, net: u8, sub: u8) -> String {
        let run = |args: &[&str]| {
            let out = Command::new(ip).args(args).output().expect("run ip");
            assert!(out.status.success(), "ip {args:?}: {out:?}");
        };
        run(&["netns", "add", name]);
        self.names.push(name.to_string());
        let (outer, inner) = (format!("{name}-o"), format!("{name}-i"));
        // Interface names are at most 15 bytes.
        let (outer, inner) = (
            &outer[outer.len().saturating_sub(15)..],
            &inner[inner.len().saturating_sub(15)..],
        );
        run(&["link", "add", outer, "type", "veth", "peer", "name", inner]);
        run(&["link", "set", inner, "netns", name]);
        run(&["addr", "add", &format!("10.{net}.{sub}.1/24"), "dev", outer]);
        run(&["link", "set", outer, "up"]);
        run(&[
            "-n",
            name,
            "addr",
            "add",
            &format!("10.{net}.{sub}.2/24"),
            "dev",
            inner,
        ]);
        run(&["-n", name, "link", "set", inner, "up"]);
        run(&["-n", name, "link", "set", "lo", "up"]);
        format!("10.{net}.{sub}.2")
    }
}

impl Drop for Netns {
    fn drop(&mut self) {
        // Deleting a namespace deletes its end of the veth pair, and with it
        // ours.
        for n in &self.names {
            let _ = Command::new("ip")
                .args(["netns", "del", n])
                .stderr(Stdio::null())
                .status();
        }
    }
}

#[test]
fn tls_and_tokens_across_network_namespaces() {
    let Some(ip) = Netns::require() else {
        return;
    };
    let sb = Sandbox::new();
    let mut netns = Netns { names: Vec::new() };
    let sub = (std::process::id() % 250) as u8 + 1;
    let tag = std::process::id() % 100_000;
    let pki = Pki::new("fleet test CA");
    let other = Pki::new("some other CA");
    let ca = pki.write_ca(sb.path(), "ca.pem");
    let wrong_ca = other.write_ca(sb.path(), "other-ca.pem");
    let mut repeaters = Vec::new();
    let mut urls = Vec::new();
    for (i, net) in [(1, 231u8), (2, 232u8)] {
        let ns = format!("af{tag}e{i}");
        let addr = netns.add(&ip, &ns, net, sub);
        let (cert, key) = pki.server(&addr, sb.path(), &format!("edge{i}"));
        let r = Repeater::builder(&sb, &format!("edge{i}"))
            .sinkprotocol("stderr")
            .no_source()
            .wrapped_in([ip.to_string_lossy().as_ref(), "netns", "exec", &ns])
            .args([
                "--listen",
                &format!("{addr}:7443"),
                "--tls-cert",
                &cert,
                "--tls-key",
                &key,
            ])
            .env("APP_TOKEN", &format!("token-{i}"))
            .start();
        urls.push(r.url());
        write(
            &sb.config_dir(),
            &format!("edge{i}.token"),
            &format!("token-{i}\n"),
        );
        repeaters.push(r);
    }
    assert_eq!(urls[0], format!("https://10.231.{sub}.2:7443"));
    sb.write_config(
        &json!({
            "hosts": {
                "edge1": {"url": urls[0], "token_file": "edge1.token", "ca_file": ca},
                "edge2": {"url": urls[1], "token_file": "edge2.token", "ca_file": ca}
            },
            "groups": {"edges": ["edge1", "edge2"]}
        })
        .to_string(),
    );
    // Managed from outside, over HTTPS with each host's token and the CA.
    let file = write(sb.path(), "routes.json", ROUTES);
    let run = app(
        &sb,
        &[
            "-H",
            "@edges",
            "event-repeater",
            "manage",
            "apply",
            "-f",
            &file,
        ],
    )
    .ok();
    assert!(
        run.stdout.contains("edge1: applied") && run.stdout.contains("edge2: applied"),
        "{run:?}"
    );
    for r in &repeaters {
        assert_eq!(routes_of(r), want());
    }
    let rows = status_rows(&sb, &["@edges"]);
    assert_eq!(rows.as_array().map(Vec::len), Some(2), "{rows}");
    assert_eq!(rows[0]["host"], "edge1");
    assert_eq!(rows[1]["routes"], 2);

    let u = urls[0].as_str();
    let one_line = |run: &Ran, code: i32, text: &str| {
        assert_eq!(run.exit(), code, "{run:?}");
        assert_eq!(run.stderr.lines().count(), 1, "{run:?}");
        assert!(run.stderr.contains(text), "want {text:?}: {run:?}");
    };
    // The right CA and token work with flags too.
    manage(
        &sb,
        &["get", "--host", u, "--ca-file", &ca, "--token", "token-1"],
    )
    .ok();
    // Wrong token, no token.
    let run = manage(
        &sb,
        &["get", "--host", u, "--ca-file", &ca, "--token", "token-2"],
    );
    one_line(&run, 1, "GET /events refused (401 Unauthorized)");
    let run = manage(&sb, &["get", "--host", u, "--ca-file", &ca]);
    one_line(&run, 1, "missing or wrong bearer token");
    // A certificate from a CA we do not trust; no CA given (Mozilla's roots).
    let run = manage(
        &sb,
        &[
            "get",
            "--host",
            u,
            "--ca-file",
            &wrong_ca,
            "--token",
            "token-1",
        ],
    );
    one_line(&run, 1, &format!("no secure connection to {u}"));
    assert!(run.stderr.contains("--ca-file"), "{run:?}");
    let run = manage(&sb, &["get", "--host", u, "--token", "token-1"]);
    one_line(&run, 1, &format!("no secure connection to {u}"));
    // Plain HTTP to the TLS port: never with a token; without one, a clear answer.
    let plain = u.replace("https://", "http://");
    let run = manage(&sb, &["get", "--host", &plain, "--token", "token-1"]);
    one_line(&run, 2, "refusing to send the API token in clear text");
    let run = manage(&sb, &["get", "--host", &plain]);
    one_line(&run, 1, "if it serves HTTPS (--tls-cert), use https://");
    // The repeaters kept their routes through all of it.
    for r in &repeaters {
        assert_eq!(routes_of(r), want());
    }
    drop(repeaters);
    drop(netns);
}

#[test]
fn idle_connections_cannot_starve_the_api() {
    use std::io::{Read, Write};
    use std::net::TcpStream;
    let sb = Sandbox::new();
    let r = repeater(&sb, "idle")
        .args(["--max-connections", "16"])
        .start();
    let addr = r.url().trim_start_matches("http://").to_string();
    // First, before the flood below fills the kernel's queue (a connection
    // made then may sit unaccepted, its clock not started): a kept-alive
    // connection that sits idle after an answer is closed on the 30 s
    // header-read clock, and so is one that never sends a request head.
    // Both are measured in threads while the rest of the test runs.
    let mut kept = TcpStream::connect(&addr).expect("connect");
    kept.write_all(b"GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n")
        .expect("send");
    kept.set_read_timeout(Some(Duration::from_secs(45)))
        .expect("timeout");
    let idle_close = std::thread::spawn(move || {
        let mut reader = std::io::BufReader::new(kept);
        let mut head = String::new();
        let mut len = 0usize;
        loop {
            let mut line = String::new();
            if std::io::BufRead::read_line(&mut reader, &mut line).unwrap_or(0) == 0 {
                return Err(format!("closed before the answer: {head}"));
            }
            if let Some(v) = line.to_ascii_lowercase().strip_prefix("content-length:") {
                len = v.trim().parse().unwrap_or(0);
            }
            head.push_str(&line);
            if line == "\r\n" {
                break;
            }
        }
        let mut body = vec![0u8; len];
        reader.read_exact(&mut body).map_err(|e| e.to_string())?;
        if !head.starts_with("HTTP/1.1 200")
            || head.to_ascii_lowercase().contains("connection: close")
        {
            return Err(format!("not a kept-alive answer: {head}"));
        }
        let idle_from = Instant::now();
        let mut rest = Vec::new();
        let _ = reader.read_to_end(&mut rest);
        Ok((idle_from.elapsed(), rest.len()))
    });

    let mut s = TcpStream::connect(&addr).expect("connect");
    s.set_read_timeout(Some(Duration::from_secs(45)))
        .expect("timeout");
    let no_head_close = std::thread::spawn(move || {
        let t = Instant::now();
        let mut buf = [0u8; 64];
        let read = s.read(&mut buf);
        let waited = t.elapsed();
        match read {
            Ok(0) => Ok(waited),
            Ok(n) => Err(format!("expected the server to close, got {:?}", &buf[..n])),
            Err(e) => Err(format!("read failed after {waited:?}: {e}")),
        }
    });

    // Far more idle connections than the cap: the kernel queues the rest
    // (until its backlog is full; then connecting times out).
    let sock: std::net::SocketAddr = addr.parse().expect("address");
    let idle: Vec<TcpStream> = (0..100)
        .filter_map(|_| TcpStream::connect_timeout(&sock, Duration::from_millis(500)).ok())
        .collect();
    assert!(idle.len() >= 16, "only {} connections", idle.len());
    let full = wait_for(Duration::from_secs(10), || {
        r.log().contains("16 connections open").then_some(())
    });
    assert!(full.is_some(), "{}", r.log());
    // The unix socket has its own slots: it answers at once.
    let t = Instant::now();
    let (status, body) = r.get("/healthz");
    assert_eq!(status, 200, "{body}");
    assert!(t.elapsed() < Duration::from_secs(2), "{:?}", t.elapsed());
    assert!(r.log().contains("16 connections open"), "{}", r.log());
    drop(idle);
    // Once they are gone, TCP answers again.
    let answered = wait_for(Duration::from_secs(10), || {
        let mut s = TcpStream::connect(&addr).ok()?;
        s.set_read_timeout(Some(Duration::from_secs(2))).ok()?;
        s.write_all(b"GET /healthz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
            .ok()?;
        let mut text = String::new();
        let _ = s.read_to_string(&mut text);
        text.starts_with("HTTP/1.1 200").then_some(())
    });
    assert!(
        answered.is_some(),
        "TCP did not answer after the idle connections closed"
    );

    let waited = no_head_close
        .join()
        .expect("no-head thread")
        .unwrap_or_else(|e| panic!("{e}"));
    assert!(
        waited >= Duration::from_secs(25) && waited < Duration::from_secs(44),
        "a connection without a request head closed after {waited:?}"
    );
    let (idle, extra) = idle_close
        .join()
        .expect("idle thread")
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(extra, 0, "the idle connection got more bytes");
    assert!(
        idle >= Duration::from_secs(25) && idle < Duration::from_secs(44),
        "idle kept-alive connection closed after {idle:?}"
    );
}

/// The source topics in the repeater's state file, sorted.
fn state_file_topics(sb: &Sandbox, name: &str) -> Vec<String> {
    let path = sb
        .data_dir()
        .join("event-repeater")
        .join(format!("{name}.routes.json"));
    let text = std::fs::read_to_string(&path).unwrap_or_default();
    let doc: Value = serde_json::from_str(&text).unwrap_or(json!({"routes": []}));
    let mut topics: Vec<String> = doc["routes"]
        .as_array()
        .map(|a| {
            a.iter()
                .filter_map(|r| r["sourcetopic"].as_str().map(String::from))
                .collect()
        })
        .unwrap_or_default();
    topics.sort();
    topics
}

#[test]
fn a_change_completes_even_when_the_client_hangs_up_at_once() {
    use std::io::Write;
    use std::os::unix::net::UnixStream;
    let sb = Sandbox::new();
    let r = repeater(&sb, "hangup").start();
    let send_and_close = |method: &str, path: &str, body: &str| {
        let mut s = UnixStream::connect(r.socket()).expect("connect");
        let req = format!(
            "{method} {path} HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n{body}",
            body.len()
        );
        s.write_all(req.as_bytes()).expect("send");
        // Gone before any answer.
        drop(s);
    };
    // A change happens whole or not at all: after each hang-up the live
    // table and the state file agree.
    let live = || -> Vec<String> { routes_of(&r).into_iter().map(|(s, _)| s).collect() };
    for i in 0..30 {
        send_and_close(
            "POST",
            "/events",
            &format!(r#"{{"sourcetopic":"t/{i:02}"}}"#),
        );
        if i % 3 == 2 {
            send_and_close("DELETE", &format!("/events/t/{:02}", i - 1), "");
        }
        std::thread::sleep(Duration::from_millis(30));
        let agreed = wait_for(Duration::from_secs(5), || {
            let now = live();
            (state_file_topics(&sb, "hangup") == now).then_some(())
        });
        assert!(
            agreed.is_some(),
            "after request {i}: live {:?}, file {:?}",
            live(),
            state_file_topics(&sb, "hangup")
        );
    }
}

#[test]
fn api_answers_odd_requests_with_json() {
    let sb = Sandbox::new();
    let r = repeater(&sb, "odd").env("APP_TOKEN", "tok").start();
    // A path that is not UTF-8 once decoded.
    let (status, body) = r.get("/events/%ff%fe");
    assert_eq!(status, 400, "{body}");
    let v: Value = serde_json::from_str(&body).unwrap_or_else(|e| panic!("not JSON ({e}): {body}"));
    assert_eq!(v["status"], 400);
    assert!(
        v["error"]
            .as_str()
            .is_some_and(|e| e.contains("source topic")),
        "{v}"
    );
    // The bearer scheme is case-insensitive.
    let url = r.url();
    let addr = common::http::Addr::from_url(&url);
    // A URL over hyper's 64 KiB limit, and a head over its buffer: hyper
    // answers those itself, and still in JSON.
    let long_url = format!(
        "GET /events/{} HTTP/1.1\r\nHost: x\r\n\r\n",
        "a".repeat(70_000)
    );
    let big_head = format!(
        "GET /events HTTP/1.1\r\nHost: x\r\nX-Big: {}\r\n\r\n",
        "b".repeat(1 << 20)
    );
    for (request, status, says) in [
        (long_url, 414, "URL is too long"),
        (big_head, 431, "too large"),
    ] {
        let resp = common::http::send_raw(&addr, request.as_bytes());
        assert_eq!(resp.status, status, "{resp:?}");
        assert_eq!(resp.header("content-type"), Some("application/json"));
        let v = resp.json();
        assert_eq!(v["status"], status);
        assert!(v["error"].as_str().is_some_and(|e| e.contains(says)), "{v}");
    }
    for scheme in ["Bearer", "bearer", "BEARER"] {
        let resp = common::http::request(
            &addr,
            "GET",
            "/events",
            &[("Authorization", &format!("{scheme} tok"))],
        );
        assert_eq!(resp.status, 200, "{scheme}: {resp:?}");
    }
    let resp = common::http::request(&addr, "GET", "/events", &[("Authorization", "bearer nope")]);
    assert_eq!(resp.status, 401);
}

#[test]
fn max_routes_and_a_bounded_metrics_page() {
    let sb = Sandbox::new();
    let r = repeater(&sb, "cap").args(["--max-routes", "1100"]).start();
    let many = |n: usize| {
        let items: Vec<Value> = (0..n)
            .map(|i| json!({"sourcetopic": format!("t/{i:05}"), "sinktopic": "/x"}))
            .collect();
        Value::Array(items).to_string()
    };
    let (status, body) = r.send_json("PUT", "/events?replace=true", &many(1050));
    assert_eq!(status, 200, "{body}");
    // Past the limit: refused whole, with a JSON error naming the flag.
    let (status, body) = r.send_json("PUT", "/events?replace=true", &many(1101));
    assert_eq!(status, 422, "{body}");
    let v: Value = serde_json::from_str(&body).expect("JSON error");
    assert!(
        v["error"]
            .as_str()
            .is_some_and(|e| e.contains("--max-routes")),
        "{v}"
    );
    let (status, _) = r.send_json(
        "POST",
        "/events",
        r#"[{"sourcetopic":"a"},{"sourcetopic":"b"}]"#,
    );
    assert_eq!(status, 201);
    let (status, _) = r.send_json("POST", "/events", &many(1101).replace("t/", "u/"));
    assert_eq!(status, 422);
    assert_eq!(routes_of(&r).len(), 1052);
    // /metrics: at most 1000 per-route series, and how many were left out.
    let m = r.metrics();
    let series = m
        .keys()
        .filter(|k| k.starts_with("app_event_repeater_route_events_total{"))
        .count();
    assert_eq!(series, 1000);
    assert_eq!(
        m.get("app_event_repeater_route_series_omitted"),
        Some(&52.0)
    );
}

#[test]
fn a_route_for_a_topic_the_source_does_not_serve_is_kept_with_a_warning() {
    let sb = Sandbox::new();
    let _source = common::event_time::EventTime::start(&sb, &[]);
    // The default source: the event-time running in this sandbox.
    let r = Repeater::builder(&sb, "w").sinkprotocol("stderr").start();
    let run = manage(&sb, &["put", "timer/sec/7", "/x", "--name", "w"]);
    assert_eq!(run.exit(), 0, "{run:?}");
    assert_eq!(run.stderr.lines().count(), 1, "{run:?}");
    assert!(
        run.stderr.contains("warning")
            && run.stderr.contains("'timer/sec/7'")
            && run.stderr.contains("does not serve")
            && run.stderr.contains("timer/sec/1"),
        "{run:?}"
    );
    assert_eq!(
        routes_of(&r),
        vec![("timer/sec/7".to_string(), "/x".to_string())]
    );
    // Served topics and prefixes: no word.
    manage(&sb, &["put", "timer/sec/1", "/y", "--name", "w"]).ok();
    let file = write(
        sb.path(),
        "r.json",
        r#"[{"sourcetopic":"timer/"},{"sourcetopic":"timer/sec/1"}]"#,
    );
    manage(&sb, &["apply", "-f", &file, "--name", "w"]).ok();
}

/// The check above for several hosts, each maybe on another machine: the
/// manager asks each repeater's `GET /source/topics` (the repeater asks its
/// source), and names the host in each warning. A repeater whose source is
/// down answers that endpoint 502 with a JSON error, and gets no warning.
#[test]
fn unserved_topics_are_warned_about_on_every_host() {
    let sb = Sandbox::new();
    let _source = common::event_time::EventTime::start(&sb, &[]);
    let rs: Vec<Repeater> = ["u1", "u2"]
        .iter()
        .map(|n| {
            Repeater::builder(&sb, n)
                .sinkprotocol("stderr")
                .args(["--listen", "127.0.0.1:0"])
                .start()
        })
        .collect();
    let lonely = repeater(&sb, "u3").start();
    let urls: Vec<String> = rs.iter().map(Repeater::url).collect();
    let hosts: Vec<String> = urls
        .iter()
        .cloned()
        .chain(std::iter::once(lonely.url()))
        .flat_map(|u| ["--host".to_string(), u])
        .collect();
    let with_hosts = |args: &[&str]| -> Vec<String> {
        args.iter()
            .map(|a| a.to_string())
            .chain(hosts.iter().cloned())
            .collect()
    };

    let (status, body) = rs[0].get("/source/topics");
    assert_eq!(status, 200, "{body}");
    let topics: Vec<String> = serde_json::from_str(&body).expect("a JSON array");
    assert!(topics.iter().any(|t| t == "timer/sec/1"), "{topics:?}");
    let (status, body) = lonely.get("/source/topics");
    assert_eq!(status, 502, "{body}");
    let v: Value = serde_json::from_str(&body).expect("a JSON error");
    assert!(
        v["error"]
            .as_str()
            .is_some_and(|e| e.contains("cannot ask the source")),
        "{v}"
    );

    let args = with_hosts(&["put", "timer/sec/7", "/x"]);
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let run = manage(&sb, &args);
    assert_eq!(run.exit(), 0, "{run:?}");
    assert_eq!(run.stderr.lines().count(), 2, "{run:?}");
    for u in &urls {
        assert!(
            run.stderr
                .lines()
                .any(|l| l.contains(&format!("{u}: the route for 'timer/sec/7'"))
                    && l.contains("does not serve")
                    && l.contains("timer/sec/1")),
            "{u}: {run:?}"
        );
    }

    let file = write(
        sb.path(),
        "routes.json",
        r#"[{"sourcetopic":"nope/"},{"sourcetopic":"timer/sec/1"}]"#,
    );
    let args = with_hosts(&["apply", "-f", &file]);
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let run = manage(&sb, &args);
    assert_eq!(run.exit(), 0, "{run:?}");
    assert_eq!(run.stderr.lines().count(), 2, "{run:?}");
    assert!(run.stderr.lines().all(|l| l.contains("'nope/'")), "{run:?}");
}

#[test]
fn a_source_topic_list_too_large_or_too_slow_is_not_used_and_the_route_still_added() {
    let sb = Sandbox::new();
    let source = common::sse_source::ScriptedSource::start();
    let r = Repeater::builder(&sb, "lim")
        .sinkprotocol("stderr")
        .source(&source.url())
        .args(["--listen", "127.0.0.1:0"])
        .start();
    let put = |topic: &str| manage(&sb, &["put", topic, "/x", "--host", &r.url()]);
    let added = |topic: &str| r.get(&format!("/events/{topic}")).0 == 200;
    // Positive control: a small list in time, without 'a/b': warned.
    let small = serde_json::to_vec(&json!(["timer/sec/1"])).unwrap();
    source.serve_topics(&small, Duration::ZERO);
    let run = put("a/b");
    assert_eq!(run.exit(), 0, "{run:?}");
    assert!(
        run.stderr.contains("the route for 'a/b'") && run.stderr.contains("does not serve"),
        "{run:?}"
    );
    assert!(added("a/b"));
    // Over 256 KiB: the repeater refuses the list, no warning, route added.
    let many: Vec<String> = (0..20_000).map(|i| format!("t/{i:010}")).collect();
    let big = serde_json::to_vec(&many).unwrap();
    assert!(big.len() > 256 * 1024);
    source.serve_topics(&big, Duration::ZERO);
    let (status, body) = r.get("/source/topics");
    assert_eq!(status, 502, "{body}");
    let run = put("a/c");
    assert_eq!(run.exit(), 0, "{run:?}");
    assert!(!run.stderr.contains("does not serve"), "{run:?}");
    assert!(added("a/c"));
    // The small list sent 3 s after its head: past the 2 s, the same.
    source.serve_topics(&small, Duration::from_secs(3));
    let start = Instant::now();
    let (status, body) = r.get("/source/topics");
    assert_eq!(status, 502, "{body}");
    assert!(body.contains("did not finish within 2s"), "{body}");
    assert!(
        start.elapsed() < Duration::from_secs(3),
        "{:?}",
        start.elapsed()
    );
    let run = put("a/d");
    assert_eq!(run.exit(), 0, "{run:?}");
    assert!(!run.stderr.contains("does not serve"), "{run:?}");
    assert!(added("a/d"));
}
