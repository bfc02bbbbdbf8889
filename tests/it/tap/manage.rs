//! `manage tap` against a real repeater: over the unix socket (a line per
//! event, escaped; `-o json`; `--topic`), over TCP with TLS and a token,
//! Ctrl-C (exit 0) and the repeater stopping (a message, exit 3).

use std::io::{BufRead, BufReader, Read};
use std::process::{ExitStatus, Stdio};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::{json, Value};

use crate::common;
use common::pki::Pki;
use common::process::Proc;
use common::repeater::Repeater;
use common::run::Run;
use common::sse_source::ScriptedSource;
use common::{free_port, plugin_bin, wait_for, Sandbox};

/// A running `manage tap`, its stdout lines collected as they come.
struct Tapping {
    proc: Proc,
    lines: Arc<Mutex<Vec<String>>>,
    stderr: Arc<Mutex<String>>,
}

impl Tapping {
    fn start(sb: &Sandbox, args: &[&str]) -> Tapping {
        let mut cmd = sb.command(plugin_bin("app-event-repeater-manage"));
        cmd.args(args)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        let mut proc = Proc::spawn("manage tap", &mut cmd);
        let out = proc.child().stdout.take().expect("stdout");
        let mut err = proc.child().stderr.take().expect("stderr");
        let lines = Arc::new(Mutex::new(Vec::new()));
        let stderr = Arc::new(Mutex::new(String::new()));
        let l = lines.clone();
        std::thread::spawn(move || {
            for line in BufReader::new(out).lines().map_while(Result::ok) {
                l.lock().unwrap().push(line);
            }
        });
        let e = stderr.clone();
        std::thread::spawn(move || {
            let mut text = String::new();
            let _ = err.read_to_string(&mut text);
            e.lock().unwrap().push_str(&text);
        });
        Tapping {
            proc,
            lines,
            stderr,
        }
    }

    /// The first `n` lines, once they came.
    fn lines(&self, n: usize) -> Vec<String> {
        let got = wait_for(Duration::from_secs(15), || {
            let l = self.lines.lock().unwrap();
            (l.len() >= n).then(|| l.clone())
        });
        got.unwrap_or_else(|| {
            panic!(
                "fewer than {n} lines: {:?}; stderr: {}",
                self.lines.lock().unwrap(),
                self.stderr()
            )
        })
    }

    fn exit(&mut self) -> ExitStatus {
        self.proc
            .wait_exit(Duration::from_secs(15))
            .unwrap_or_else(|| panic!("manage tap did not end; stderr: {}", self.stderr()))
    }

    fn stderr(&self) -> String {
        // The reader thread has it all once the process ended.
        std::thread::sleep(Duration::from_millis(100));
        self.stderr.lock().unwrap().clone()
    }
}

/// Waits until `n` taps are open on `rep`.
fn taps_open(rep: &Repeater, n: f64) {
    let open = wait_for(Duration::from_secs(10), || {
        (rep.metric("tap_clients") == n).then_some(())
    });
    assert!(open.is_some(), "{n} taps never opened:\n{}", rep.log());
}

#[test]
fn manage_tap_prints_each_event_as_it_comes_until_the_repeater_stops() {
    let sb = Sandbox::new();
    let source = ScriptedSource::start();
    let mut rep = Repeater::builder(&sb, "event-repeater")
        .source(&source.url())
        .sinkprotocol("stderr")
        .args(["--allowall"])
        .start();
    let mut plain = Tapping::start(&sb, &["tap"]);
    let mut json_a = Tapping::start(&sb, &["tap", "--topic", "a/", "-o", "json"]);
    taps_open(&rep, 2.0);
    source.push("1", &json!({"topic": "a/\u{1b}[2J", "n": 1}).to_string());
    source.push("2", "not json");
    source.push("3", &json!({"topic": "a/b", "n": 3}).to_string());

    let lines = plain.lines(3);
    assert!(
        lines.iter().all(|l| !l.contains('\u{1b}')),
        "an escape reached the terminal: {lines:?}"
    );
    let line = |part: &str| {
        lines
            .iter()
            .find(|l| l.contains(part))
            .unwrap_or_else(|| panic!("no line with {part:?}: {lines:?}"))
    };
    // A topic with a control character: shown escaped, and refused by
    // the sink for it.
    let esc = line("a/\\x1b[2J -> a/\\x1b[2J id=1 ");
    assert!(esc.contains(" refused invalid_topic "), "{esc}");
    assert!(line("not json").contains(" refused invalid "));
    assert!(line(" a/b -> a/b id=3 ").contains(" delivered "));

    // -o json: one object per line, only the topics asked for.
    let objects: Vec<Value> = json_a
        .lines(2)
        .iter()
        .map(|l| serde_json::from_str(l).expect("a JSON line"))
        .collect();
    let topics: Vec<&str> = objects
        .iter()
        .map(|o| o["source_topic"].as_str().unwrap_or(""))
        .collect();
    assert_eq!(topics, ["a/\u{1b}[2J", "a/b"], "{objects:?}");
    let outcomes: Vec<&Value> = objects.iter().map(|o| &o["outcome"]).collect();
    assert_eq!(outcomes, ["refused", "delivered"], "{objects:?}");

    // Ctrl-C ends one quietly; the repeater stopping ends the other, said.
    plain.proc.signal(libc::SIGINT);
    assert_eq!(plain.exit().code(), Some(0), "{}", plain.stderr());
    taps_open(&rep, 1.0);
    rep.signal(libc::SIGTERM);
    assert_eq!(json_a.exit().code(), Some(3));
    let said = json_a.stderr();
    assert!(said.contains("is stopping; the tap ended"), "{said}");
    assert_eq!(said.lines().count(), 1, "{said}");
}

#[test]
fn manage_tap_works_over_tls_with_the_token_and_not_without_it() {
    let sb = Sandbox::new();
    let source = ScriptedSource::start();
    let pki = Pki::new("tap test CA");
    let ca = pki.write_ca(sb.path(), "ca.pem");
    let (cert, key) = pki.server("127.0.0.1", sb.path(), "api");
    let port = free_port();
    let listen = format!("127.0.0.1:{port}");
    let rep = Repeater::builder(&sb, "event-repeater")
        .source(&source.url())
        .sinkprotocol("stderr")
        .args(["--allowall", "--listen", &listen, "--tls-cert", &cert])
        .args(["--tls-key", &key])
        .env("APP_TOKEN", "s3cret-token")
        .start();
    let host = format!("https://{listen}");
    let base = ["-H", host.as_str(), "--ca-file", ca.as_str()];

    // The wrong token is refused before any stream opens.
    let mut cmd = sb.command(plugin_bin("app-event-repeater-manage"));
    cmd.args(base).args(["--token", "wrong", "tap"]);
    let ran = Run::new(cmd).assert();
    assert_eq!(ran.exit(), 1, "{ran:?}");
    assert!(ran.stderr.contains("401"), "{ran:?}");
    assert!(!ran.stderr.contains("s3cret"), "{ran:?}");

    let mut args = base.to_vec();
    args.extend(["--token", "s3cret-token", "tap", "-o", "json"]);
    let mut tapping = Tapping::start(&sb, &args);
    taps_open(&rep, 1.0);
    source.push("7", &json!({"topic": "over/tls"}).to_string());
    let got: Value = serde_json::from_str(&tapping.lines(1)[0]).expect("JSON");
    assert_eq!(got["source_topic"], "over/tls");
    assert_eq!(got["outcome"], "delivered");
    assert_eq!(got["id"], "7");
    tapping.proc.signal(libc::SIGINT);
    assert_eq!(tapping.exit().code(), Some(0), "{}", tapping.stderr());
}
