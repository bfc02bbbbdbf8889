//! `top` on a fleet of two real repeaters, each relaying a real event
//! source at its own rate, plus a host that accepts connections and never
//! answers: in a real terminal (tmux) it shows both with their rates, the
//! busiest first, marks the hanging host while the others keep refreshing,
//! quits on `q` and leaves the terminal as it found it; piped, it prints
//! plain tables without a single escape byte, a peer's control characters
//! escaped, and a repeater's dead letters by reason.

use crate::common;

use std::net::TcpListener;
use std::time::Duration;

use common::completion::{Completer, Interactive};
use common::event_time::EventTime;
use common::http_server::Server;
use common::repeater::Repeater;
use common::sse_source::ScriptedSource;
use common::{plugin_bin, Sandbox};

use super::{manage, MANAGE};

/// A repeater reading the event source `source`, its API also on TCP, with
/// the route test/seq -> `sink`.
fn relaying<'a>(sb: &'a Sandbox, name: &str, source: &str, sink: &str) -> Repeater<'a> {
    let r = Repeater::builder(sb, name)
        .source(source)
        .sinkprotocol("stderr")
        .args(["--listen", "127.0.0.1:0"])
        .start();
    let route = format!(r#"{{"sourcetopic":"test/seq","sinktopic":"{sink}"}}"#);
    let (status, body) = r.send_json("POST", "/events", &route);
    assert_eq!(status, 201, "{body}");
    r
}

/// A TCP address that takes connections and never answers: the kernel
/// completes each handshake into the listen backlog (128, far more than the
/// test makes), and nothing ever reads. Closed on drop.
fn hanging() -> (TcpListener, String) {
    let l = TcpListener::bind("127.0.0.1:0").expect("bind");
    let url = format!("http://{}", l.local_addr().expect("address"));
    (l, url)
}

/// The cells of the row of the boxed table on `screen` that starts with
/// `host` (`│HOST  NAME …│`).
fn row(screen: &str, host: &str) -> Option<Vec<String>> {
    screen
        .lines()
        .map(|l| l.trim_matches(|c: char| c == '│' || c.is_whitespace()))
        .find(|l| l.starts_with(&format!("{host} ")))
        .map(|l| l.split_whitespace().map(String::from).collect())
}

/// `IN/S` of `host` in the hosts table, once it is a number.
fn rate_in(screen: &str, host: &str) -> Option<f64> {
    row(screen, host)?.get(3)?.parse().ok()
}

/// The `EVENTS` column of `host`'s route in the routes table.
fn route_events(screen: &str, host: &str, sink: &str) -> Option<u64> {
    screen
        .lines()
        .map(|l| l.trim_matches(|c: char| c == '│' || c.is_whitespace()))
        .map(|l| l.split_whitespace().collect::<Vec<_>>())
        .find(|c| c.first() == Some(&host) && c.get(4) == Some(&sink))?
        .get(2)?
        .parse()
        .ok()
}

#[test]
fn top_shows_a_fleet_live_marks_a_hanging_host_and_puts_the_terminal_back() {
    if !Interactive::Bash.available() {
        return;
    }
    let sb = Sandbox::new();
    let _slow = EventTime::start(&sb, &["--name", "slow", "--rate", "20"]);
    let _fast = EventTime::start(&sb, &["--name", "fast", "--rate", "100"]);
    let r1 = relaying(&sb, "r1", "slow", "/slow");
    let r2 = relaying(&sb, "r2", "fast", "/fast");
    let (_listener, hang) = hanging();
    let (u1, u2) = (r1.url(), r2.url());

    let tmux = Completer::new(&sb).tmux(Interactive::Bash);
    tmux.type_line("echo before top");
    let before = tmux.wait_screen("the echo", |s| s.trim_end().ends_with("before top\n$"));
    // Everything the command prints goes to files, and the line typed is
    // short (a script on the sandbox's PATH): after `q` the screen must be
    // what it was, plus that line and a new prompt.
    let file = |f: &str| sb.path().join(f).display().to_string();
    sb.script(
        "top-run",
        &format!(
            "#!/bin/sh\nstty -g > {}\n{} top --interval 0.5 --timeout 2 -H {u1} -H {u2} -H {hang} 2>{}\necho $? > {}\nstty -g > {}\n",
            file("stty.before"),
            plugin_bin(MANAGE).display(),
            file("top.stderr"),
            file("done"),
            file("stty.after"),
        ),
    );
    tmux.type_line("top-run");

    // Both repeaters with their rates, the busiest first, and the hanging
    // host marked as such.
    let live = tmux.wait_screen("both rates and the hanging host", |s| {
        let (Some(slow), Some(fast)) = (rate_in(s, &u1), rate_in(s, &u2)) else {
            return false;
        };
        slow > 0.0 && fast > slow && s.contains("timed out after 2s")
    });
    assert_eq!(tmux.pane("#{alternate_on}"), "1", "{live}");
    let order: Vec<usize> = [&u2, &u1, &hang]
        .iter()
        .map(|h| {
            live.find(&format!("│{h} "))
                .unwrap_or_else(|| panic!("no row for {h}:\n{live}"))
        })
        .collect();
    assert!(
        order[0] < order[1] && order[1] < order[2],
        "busiest first: {live}"
    );
    let hung = row(&live, &hang).expect("the hanging host's row");
    assert_eq!(hung[2..4], ["timed", "out"], "{live}");
    let fast = row(&live, &u2).expect("r2's row");
    assert_eq!((fast[1].as_str(), fast[2].as_str()), ("r2", "up"), "{live}");
    assert!(
        route_events(&live, &u2, "/fast").is_some() && route_events(&live, &u1, "/slow").is_some(),
        "the routes with their counts: {live}"
    );

    // While the hanging host holds its sampler for 2 s at a time, the others
    // refresh every 0.5 s: within 2 s the screen shows r1's route at three
    // or more counts (a screen held up by the hang would show at most two).
    let mut seen = std::collections::BTreeSet::new();
    let start = std::time::Instant::now();
    while start.elapsed() < Duration::from_secs(2) {
        let s = tmux.screen();
        if let Some(n) = route_events(&s, &u1, "/slow") {
            seen.insert(n);
        }
        assert!(s.contains("timed out after 2s"), "still marked: {s}");
        std::thread::sleep(Duration::from_millis(100));
    }
    assert!(seen.len() >= 3, "refreshes in 2 s: {seen:?}");

    tmux.key("q");
    let code = common::wait_for(Duration::from_secs(10), || {
        std::fs::read_to_string(file("done"))
            .ok()
            .filter(|c| c.ends_with('\n'))
    })
    .unwrap_or_else(|| panic!("top did not quit on q: {}", tmux.screen()));
    assert_eq!(code.trim(), "0");
    let after = tmux.wait_screen("the prompt back", |s| s.trim_end().ends_with("\n$"));
    // The screen as it was: the same lines, the prompt now holding the line
    // typed, then a new prompt; nothing of top's left on it.
    let lines = |s: &str| -> Vec<String> {
        s.lines()
            .map(|l| l.trim_end().to_string())
            .filter(|l| !l.is_empty())
            .collect()
    };
    let (was, now) = (lines(&before), lines(&after));
    assert_eq!(
        now.len(),
        was.len() + 1,
        "before:\n{before}\nafter:\n{after}"
    );
    assert_eq!(now[..was.len() - 1], was[..was.len() - 1], "{after}");
    assert_eq!(now[was.len() - 1], "$ top-run", "{after}");
    assert_eq!(now[was.len()], "$", "{after}");
    assert!(!after.contains("IN/S") && !after.contains('│'), "{after}");
    assert_eq!(
        tmux.pane("#{alternate_on}"),
        "0",
        "the alternate screen is left"
    );
    assert_eq!(
        tmux.pane("#{cursor_flag}"),
        "1",
        "the cursor is shown again"
    );
    let read = |f: &str| std::fs::read_to_string(file(f)).expect("stty -g");
    assert_eq!(
        read("stty.before"),
        read("stty.after"),
        "terminal modes restored"
    );
    let stderr = std::fs::read_to_string(file("top.stderr")).unwrap_or_default();
    assert_eq!(stderr, "", "nothing on stderr");
}

#[test]
fn top_piped_prints_plain_tables_once_without_escape_bytes() {
    let sb = Sandbox::new();
    let _source = EventTime::start(&sb, &["--name", "src", "--rate", "50"]);
    let r1 = relaying(&sb, "r1", "src", "/one");
    // A repeater whose source sends data that is not JSON: each one is a
    // dead letter, reason `invalid`.
    let scripted = ScriptedSource::start();
    let r3 = relaying(&sb, "r3", &scripted.url(), "/three");
    for id in 1..=3 {
        scripted.push(&id.to_string(), "not json");
    }
    let invalid = r#"dead_letters_total{reason="invalid"}"#;
    common::wait_for(Duration::from_secs(10), || {
        (r3.metrics().get(&format!("app_event_repeater_{invalid}")) == Some(&3.0)).then_some(())
    })
    .unwrap_or_else(|| panic!("no 3 dead letters: {:?}", r3.metrics()));
    // A "repeater" whose texts carry terminal codes: the table shows them
    // escaped. /healthz and /metrics are what a repeater sends.
    let evil = Server::start();
    evil.serve(
        "/healthz",
        br#"{"status":"degraded","name":"ev\u001b[2Jil","source":{"url":"x","connected":true,"problem":"p\u001b]0;title\u0007"},"sink":{"url":"stderr","connected":true}}"#,
    );
    evil.serve(
        "/metrics",
        b"app_event_repeater_events_received_total 7\napp_event_repeater_route_events_total{sourcetopic=\"t\x1b[31m\",sinktopic=\"\"} 3\napp_event_repeater_events_dropped_total{reason=\"overflow\"} 2\n# EOF\n",
    );
    let (_listener, hang) = hanging();
    let (u1, ue, u3) = (r1.url(), evil.url(""), r3.url());
    let started = std::time::Instant::now();
    let run = manage(
        &sb,
        &[
            "top",
            "--interval",
            "0.5",
            "--timeout",
            "1",
            "-H",
            &u1,
            "-H",
            &ue,
            "-H",
            &hang,
            "-H",
            &u3,
        ],
    );
    // The hanging host costs its own timeout, twice, and nothing more.
    assert!(started.elapsed() < Duration::from_secs(6), "{run:?}");
    assert_eq!(run.exit(), 4, "a host is down: {run:?}");
    let out = &run.stdout;
    assert!(
        !out.bytes().any(|b| b == 0x1b || b == 0x07 || b == 0x9b),
        "{out:?}"
    );
    let lines: Vec<&str> = out.lines().collect();
    assert!(
        lines[0].starts_with("HOST ") && lines[0].contains("IN/S"),
        "{out}"
    );
    let cells: Vec<&str> = lines[1].split_whitespace().collect();
    assert_eq!(
        (cells[0], cells[1], cells[2]),
        (u1.as_str(), "r1", "up"),
        "{out}"
    );
    assert!(cells[3].parse::<f64>().is_ok_and(|r| r > 0.0), "{out}");
    assert!(
        out.contains(r"ev\x1b[2Jil") && out.contains(r"source: p\x1b]0;title\x07"),
        "{out}"
    );
    assert!(out.contains(r"t\x1b[31m"), "{out}");
    let hung = lines
        .iter()
        .find(|l| l.starts_with(&hang))
        .expect("hang row");
    let cells: Vec<&str> = hung.split_whitespace().collect();
    assert_eq!(cells[2..4], ["timed", "out"], "{out}");
    assert!(hung.ends_with("timed out after 1s"), "{out}");
    assert!(
        lines.iter().any(|l| l.starts_with(&format!("{u1} "))
            && l.contains("test/seq")
            && l.ends_with("/one")),
        "{out}"
    );
    assert!(
        lines
            .iter()
            .any(|l| l.starts_with(&ue) && l.contains("dropped") && l.contains("overflow")),
        "{out}"
    );
    let dead = lines
        .iter()
        .find(|l| l.starts_with(&format!("{u3} ")) && l.contains("dead-lettered"))
        .unwrap_or_else(|| panic!("no dead letters of r3: {out}"));
    let dead: Vec<&str> = dead.split_whitespace().collect();
    assert_eq!((dead[2], dead[4]), ("invalid", "3"), "{out}");
    let host: Vec<&str> = lines
        .iter()
        .find(|l| l.starts_with(&format!("{u3} ")))
        .expect("r3's row")
        .split_whitespace()
        .collect();
    // BUFFER is two words, CKPT LAG one value: DEAD is the thirteenth,
    // and the checkpoint is past every event (a number, 0 once idle).
    assert_eq!(host[12], "3", "DEAD: {out}");
    assert!(host[7].parse::<u64>().is_ok(), "CKPT LAG: {out}");
    assert!(run.stderr.contains("1 of 4 hosts are down"), "{run:?}");
}
