//! What a repeater checks at start about its files (issue 19): a second
//! repeater on the same state file or checkpoint is refused naming the
//! holder, an unusable `--ca-file` for an `mqtts://` sink is a usage error,
//! temp files a killed repeater left are removed, and an empty checkpoint
//! is refused saying what to do.

use crate::common;

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Duration;

use common::process::Proc;
use common::repeater::{run_to_exit, Repeater};
use common::sse_source::ScriptedSource;
use common::{plugin_bin, wait_for, Sandbox};

/// Issue 19 item 6, first case: `--name a` and `--name b` with one
/// `--state` both answered PUTs, and the file then held only b's routes.
/// Now b is refused at start (exit 1) naming a's pid; a's routes stay.
#[test]
fn a_second_repeater_on_the_same_state_file_is_refused_naming_the_holder() {
    let sb = Sandbox::new();
    let state = sb.path().join("shared/r.routes.json");
    let state_arg = state.to_str().expect("a UTF-8 path");
    let mut a = Repeater::builder(&sb, "a")
        .no_source()
        .sinkprotocol("stderr")
        .args(["--state", state_arg])
        .start();
    let route = r#"[{"sourcetopic":"x","sinktopic":"y"}]"#;
    let (status, body) = a.send_json("POST", "/events", route);
    assert_eq!(status, 201, "{body}");
    let no_source = sb.runtime_dir().join("no-source.sock");
    let no_source = no_source.to_str().expect("a UTF-8 path");
    let b = |state: &str| {
        let args = [
            "--name",
            "b",
            "--sinkprotocol",
            "stderr",
            "--source",
            no_source,
        ];
        run_to_exit(&sb, &[&args[..], &["--state", state]].concat(), &[])
    };
    let (code, err) = b(state_arg);
    assert_eq!(code, Some(1), "{err}");
    let held_by_a = format!(
        "is in use by another event repeater (pid {}, named \"a\"",
        a.pid()
    );
    assert!(
        err.contains(&format!("the state file {} {held_by_a}", state.display()))
            && err.contains("its own --state"),
        "{err}"
    );
    let saved = std::fs::read_to_string(&state).unwrap();
    assert!(saved.contains("\"sourcetopic\": \"x\""), "{saved}");
    // `shared/r` is another state file with the same checkpoint
    // (`shared/r.checkpoint`): refused for the checkpoint.
    let (code, err) = b(sb.path().join("shared/r").to_str().unwrap());
    assert_eq!(code, Some(1), "{err}");
    let checkpoint = sb.path().join("shared/r.checkpoint");
    assert!(
        err.contains(&format!(
            "the checkpoint file {} {held_by_a}",
            checkpoint.display()
        )),
        "{err}"
    );

    // Positive controls: another state file starts …
    let own = sb.path().join("own/b.json");
    let mut b_own = Repeater::builder(&sb, "b")
        .no_source()
        .sinkprotocol("stderr")
        .args(["--state", own.to_str().unwrap()])
        .start();
    b_own.signal(libc::SIGTERM);
    // … and so does the shared one once a is gone, even by kill -9: the
    // lock dies with its process.
    a.kill9();
    let mut b_shared = Repeater::builder(&sb, "b")
        .no_source()
        .sinkprotocol("stderr")
        .args(["--state", state_arg])
        .start();
    let (_, routes) = b_shared.get("/events");
    assert!(routes.contains("\"x\""), "{routes}");
    b_shared.signal(libc::SIGTERM);
}

/// Issue 19 item 6, second case: one name under two runtime directories
/// (so the socket check does not see the other) and one data directory.
#[test]
fn one_name_under_two_runtime_dirs_and_one_data_dir_is_refused_naming_the_holder() {
    let sb = Sandbox::new();
    let mut first = Repeater::builder(&sb, "r")
        .no_source()
        .sinkprotocol("stderr")
        .start();
    let other_run = sb.path().join("run2");
    std::fs::create_dir_all(&other_run).unwrap();
    let args = [
        "--name",
        "r",
        "--sinkprotocol",
        "stderr",
        "--source",
        "/nonexistent/none.sock",
    ];
    let (code, err) = run_to_exit(&sb, &args, &[("APP_RUNTIME_DIR", &other_run)]);
    let state = sb.data_dir().join("event-repeater/r.routes.json");
    assert_eq!(code, Some(1), "{err}");
    assert!(
        err.contains(&format!(
            "the state file {} is in use by another event repeater (pid {}, named \"r\"",
            state.display(),
            first.pid()
        )),
        "{err}"
    );
    // Nothing was left in the second runtime directory.
    let left = walk(&other_run);
    assert!(left.iter().all(|p| p.is_dir()), "{left:?}");

    // Positive control: with the first one stopped, the same command starts.
    first.signal(libc::SIGTERM);
    let mut second = Proc::spawn(
        "app-event-repeater",
        sb.command(plugin_bin("app-event-repeater"))
            .arg("run")
            .args(args)
            .env("APP_RUNTIME_DIR", &other_run)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null()),
    );
    let socket = other_run.join("plugins/r.sock");
    let up = wait_for(Duration::from_secs(15), || socket.exists().then_some(()));
    assert!(
        up.is_some(),
        "the second never started: {:?}",
        second.exited()
    );
    second.signal(libc::SIGTERM);
    assert!(second.wait_exit(Duration::from_secs(20)).is_some());
}

/// Every path under `dir`.
fn walk(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    for entry in std::fs::read_dir(dir).into_iter().flatten().flatten() {
        let p = entry.path();
        if p.is_dir() {
            out.extend(walk(&p));
        }
        out.push(p);
    }
    out
}

/// Issue 19 item 11: `--ca-file` with an `mqtts://` sink was read only by
/// the sink when it connected, so a FIFO, `/dev/zero` or a missing file
/// started a repeater that never connected. Now it exits 2 at once, as
/// with a NATS sink; a file without a certificate too.
#[test]
fn an_unusable_ca_file_for_an_mqtts_sink_is_a_usage_error_at_once() {
    let sb = Sandbox::new();
    let fifo = sb.path().join("ca.fifo");
    common::mkfifo(&fifo);
    let missing = sb.path().join("missing.pem");
    let empty = sb.path().join("empty.pem");
    std::fs::write(&empty, "not a certificate\n").unwrap();
    let cases = [
        (fifo.to_str().unwrap(), "is a FIFO, not a regular file"),
        ("/dev/zero", "is a character device, not a regular file"),
        (missing.to_str().unwrap(), "does not exist"),
        (empty.to_str().unwrap(), "holds no PEM certificate"),
    ];
    for (ca, says) in cases {
        let started = std::time::Instant::now();
        let argv = [
            "--name",
            "tls",
            "--sink",
            "mqtts://127.0.0.1:1",
            "--source",
            "/nonexistent/none.sock",
            "--ca-file",
            ca,
        ];
        let (code, err) = run_to_exit(&sb, &argv, &[]);
        assert_eq!(code, Some(2), "{ca}: {err}");
        assert!(err.contains(&format!("--ca-file {ca} {says}")), "{err}");
        assert!(started.elapsed() < Duration::from_secs(5), "{ca}: slow");
    }
    // Positive control: a real CA certificate starts (the broker need not
    // be there: the sink keeps retrying it).
    let mut params = rcgen::CertificateParams::new(Vec::<String>::new()).expect("params");
    params.is_ca = rcgen::IsCa::Ca(rcgen::BasicConstraints::Unconstrained);
    let key = rcgen::KeyPair::generate().expect("a key");
    let ca = params.self_signed(&key).expect("a CA certificate");
    let good = sb.path().join("ca.pem");
    std::fs::write(&good, ca.pem()).unwrap();
    let mut rep = Repeater::builder(&sb, "tls")
        .no_source()
        .sink("mqtts://127.0.0.1:1")
        .args(["--ca-file", good.to_str().unwrap()])
        .start();
    rep.signal(libc::SIGTERM);
}

/// Issue 19 item 11: `.NAME.routes.json.tmp-PID` files were left behind by
/// a repeater killed while writing, forever. At start, holding the lock,
/// the repeater removes its own files' temp files whose writer is gone (or
/// is not a repeater); another repeater's files, and a temp file whose pid
/// runs a repeater, stay.
#[test]
fn temp_files_left_by_a_killed_repeater_are_removed_at_start() {
    let sb = Sandbox::new();
    let dir = sb.data_dir().join("event-repeater");
    std::fs::create_dir_all(&dir).unwrap();
    let mut gone = Command::new("true").spawn().expect("run true");
    let dead = gone.id();
    gone.wait().unwrap();
    let other = Repeater::builder(&sb, "other")
        .no_source()
        .sinkprotocol("stderr")
        .start();
    let stale = [
        format!(".r.routes.json.tmp-{dead}"),
        format!(".r.checkpoint.tmp-{dead}"),
    ];
    let kept = [
        format!(".other.routes.json.tmp-{dead}"),
        format!(".r.routes.json.tmp-{}", other.pid()),
    ];
    for f in stale.iter().chain(&kept) {
        std::fs::write(dir.join(f), "{\"version\":1,\"rou").unwrap();
    }
    let _r = Repeater::builder(&sb, "r")
        .no_source()
        .sinkprotocol("stderr")
        .start();
    for f in &stale {
        assert!(!dir.join(f).exists(), "{f} is still there");
    }
    for f in &kept {
        assert!(dir.join(f).exists(), "{f} was removed");
    }
}

/// A self-signed certificate for 127.0.0.1 valid over `dates` (rcgen's
/// defaults, 1975 to 4096, when `None`): writes `dir/<stem>.crt` and
/// `.key`, returns their paths.
fn certificate(dir: &Path, stem: &str, dates: Option<((i32, u8), (i32, u8))>) -> [String; 2] {
    let mut params = rcgen::CertificateParams::new(vec!["127.0.0.1".into()]).expect("params");
    if let Some(((from, from_month), (until, until_month))) = dates {
        params.not_before = rcgen::date_time_ymd(from, from_month, 1);
        params.not_after = rcgen::date_time_ymd(until, until_month, 1);
    }
    let key = rcgen::KeyPair::generate().expect("a key");
    let cert = params.self_signed(&key).expect("a certificate");
    let (crt, pem) = (
        dir.join(format!("{stem}.crt")),
        dir.join(format!("{stem}.key")),
    );
    std::fs::write(&crt, cert.pem()).unwrap();
    std::fs::write(&pem, key.serialize_pem()).unwrap();
    [crt, pem].map(|p| p.display().to_string())
}

/// Issue 31: a repeater given an expired `--tls-cert` started silently and
/// then failed every client's handshake. Now an expired or not yet valid
/// certificate is refused at start with its dates; one valid now serves.
#[test]
fn a_tls_cert_outside_its_dates_is_refused_at_start_with_them() {
    let sb = Sandbox::new();
    let listen = format!("127.0.0.1:{}", common::free_port());
    let cases = [
        (
            ((2020, 1), (2021, 6)),
            "is out of date: its certificate expired on 2021-06-01T00:00:00Z (valid from 2020-01-01T00:00:00Z until 2021-06-01T00:00:00Z); renew it",
        ),
        (
            ((2090, 3), (2091, 1)),
            "is not valid yet: its certificate is valid from 2090-03-01T00:00:00Z",
        ),
    ];
    for (i, (dates, says)) in cases.into_iter().enumerate() {
        let [cert, key] = certificate(sb.path(), &format!("c{i}"), Some(dates));
        let argv = [
            "--name",
            "tls",
            "--sinkprotocol",
            "stderr",
            "--source",
            "none",
            "--listen",
            &listen,
            "--tls-cert",
            &cert,
            "--tls-key",
            &key,
        ];
        let started = std::time::Instant::now();
        let (code, err) = run_to_exit(&sb, &argv, &[]);
        assert_eq!(code, Some(1), "{dates:?}: {err}");
        assert!(err.contains(&format!("--tls-cert {cert} {says}")), "{err}");
        assert!(
            started.elapsed() < Duration::from_secs(5),
            "{dates:?}: slow"
        );
    }
    // Positive control: the same flags with a certificate valid now serve
    // HTTPS on that address.
    let [cert, key] = certificate(sb.path(), "now", None);
    let rep = Repeater::builder(&sb, "tls")
        .no_source()
        .sinkprotocol("stderr")
        .args(["--listen", &listen, "--tls-cert", &cert, "--tls-key", &key])
        .start();
    assert_eq!(rep.url(), format!("https://{listen}"));
}

/// Issue 19 item 2: a checkpoint truncated to 0 bytes while the repeater
/// was down read as "no checkpoint": it started from the source's live
/// events and the ones sent meanwhile were lost without a word. Now the
/// start is refused (exit 1, the code for an unusable state or checkpoint
/// file), saying what to do; nothing is read from the source.
#[test]
fn an_empty_checkpoint_is_refused_at_start_with_what_to_do() {
    let sb = Sandbox::new();
    let source = ScriptedSource::start();
    for id in 1..=3 {
        source.push_topic(id, "t/a");
    }
    let stderr_sink = |sb| {
        Repeater::builder(sb, "event-repeater")
            .source(&source.url())
            .sinkprotocol("stderr")
            .args(["--allowall"])
    };
    let mut rep = stderr_sink(&sb).start();
    rep.wait_checkpoint("3");
    rep.kill9();
    let checkpoint = sb
        .data_dir()
        .join("event-repeater/event-repeater.checkpoint");
    std::fs::write(&checkpoint, "").unwrap();
    source.push_topic(4, "t/a");

    let (code, err) = run_to_exit(
        &sb,
        &[
            "--name",
            "event-repeater",
            "--source",
            &source.url(),
            "--sinkprotocol",
            "stderr",
            "--allowall",
        ],
        &[],
    );
    assert_eq!(code, Some(1), "{err}");
    assert!(
        err.contains(&format!(
            "the checkpoint file {} is empty",
            checkpoint.display()
        )) && err.contains("remove it to start from the source's live events"),
        "{err}"
    );
    assert_eq!(std::fs::metadata(&checkpoint).unwrap().len(), 0);
    assert_eq!(source.asked(), vec![None], "it subscribed to the source");

    // What the message says to do works: without the file it starts.
    std::fs::remove_file(&checkpoint).unwrap();
    rep.restart();
    let seen = wait_for(Duration::from_secs(10), || {
        (source.asked().len() == 2).then_some(())
    });
    assert!(seen.is_some(), "{}", rep.log());
}
