//! The chaos run's numbered source (`loadgen sse --sent-file`) cannot fool
//! the chaos checker: restarted, it goes on numbering where the clock says
//! instead of replaying from event 1 to a reader that did not ask (which
//! hid a loss as duplicates), and it records what it really sent.

use std::io::{BufRead, BufReader, Write};
use std::net::TcpStream;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use crate::common::free_port;
use crate::common::process::Proc;

use super::{loadgen, wait_port};

fn source(port: u16, sent_file: Option<&std::path::Path>) -> Proc {
    let mut cmd = Command::new(loadgen());
    cmd.args(["sse", "--listen", &format!("127.0.0.1:{port}")])
        .args(["--rate", "200", "--count", "1000000", "--warmup", "0"])
        .stdout(Stdio::null())
        .stderr(Stdio::null());
    if let Some(f) = sent_file {
        cmd.arg("--sent-file").arg(f);
    }
    let p = Proc::spawn("loadgen sse", &mut cmd);
    wait_port(port);
    p
}

/// Reads events from a fresh connection (no `Last-Event-ID`) until `n`
/// ids arrived or 10 s passed; the ids.
fn read_ids(port: u16, n: usize) -> Vec<u64> {
    let mut s = TcpStream::connect(("127.0.0.1", port)).expect("connect to the source");
    s.set_read_timeout(Some(Duration::from_secs(10)))
        .expect("read timeout");
    s.write_all(b"GET /events?topic=. HTTP/1.1\r\nHost: x\r\n\r\n")
        .expect("request");
    let deadline = Instant::now() + Duration::from_secs(10);
    let mut ids = Vec::new();
    for line in BufReader::new(s).lines() {
        let Ok(line) = line else { break };
        if let Some(id) = line.strip_prefix("id: ").and_then(|v| v.parse().ok()) {
            ids.push(id);
        }
        if ids.len() >= n || Instant::now() > deadline {
            break;
        }
    }
    ids
}

#[test]
fn a_restarted_chaos_source_goes_on_numbering_and_records_what_it_sent() {
    let dir = tempfile::tempdir().expect("temp dir");
    let sent = dir.path().join("source.sent");
    let port = free_port();

    let mut first = source(port, Some(&sent));
    let before = read_ids(port, 40);
    assert_eq!(
        before.first(),
        Some(&1),
        "a fresh source starts at 1: {before:?}"
    );
    let last_before = *before.last().expect("events before the kill");
    first.kill9();
    std::thread::sleep(Duration::from_secs(1));

    let _second = source(port, Some(&sent));
    let after = read_ids(port, 5);
    let first_after = *after.first().expect("events after the restart");
    // Down for at least 1 s at 200/s: the numbers due meanwhile are skipped
    // for a reader that did not ask for them by Last-Event-ID.
    assert!(
        first_after > last_before + 150,
        "after the restart a live reader got {first_after}, after {last_before} before the kill"
    );

    // What was sent: one `FIRST LAST` line per run, after the start line;
    // every number read is in a run, and the skipped ones are not.
    let text = std::fs::read_to_string(&sent).expect("the sent file");
    let runs: Vec<(u64, u64)> = text
        .lines()
        .filter(|l| !l.starts_with("start "))
        .filter_map(|l| {
            let (a, b) = l.split_once(' ')?;
            Some((a.parse().ok()?, b.parse().ok()?))
        })
        .collect();
    assert!(text.starts_with("start "), "{text}");
    let covered = |n: u64| runs.iter().any(|&(a, b)| a <= n && n <= b);
    for id in before.iter().chain(&after) {
        assert!(covered(*id), "{id} read but not recorded: {runs:?}");
    }
    assert!(
        !covered(last_before + 100),
        "a skipped number recorded: {runs:?}"
    );

    // Positive control: the same restart without --sent-file starts at 1
    // again, which is what hid a loss from the checker.
    let port2 = free_port();
    let mut plain = source(port2, None);
    assert_eq!(read_ids(port2, 40).first(), Some(&1));
    plain.kill9();
    let _plain2 = source(port2, None);
    assert_eq!(read_ids(port2, 5).first(), Some(&1));
}
