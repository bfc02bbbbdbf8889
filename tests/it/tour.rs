//! The README's whole tour ("A five-minute tour"), run as written: every
//! `sh` block of that section, top to bottom, in one bash (so `$!`, `jobs`
//! and exported variables carry over), on an empty home, with what the
//! transcripts (`$ command` then its output) show compared to what they
//! print. The tour stops what it started (`kill $!`, `kill $(jobs -p)`);
//! the test checks that nothing of it is left running.
//!
//! What the test changes, and only this (see [`SUBSTITUTIONS`]): the fixed
//! ports the tour uses become free ones, so that tests running at once and
//! a broker already on the machine do not collide, and the MQTT broker the
//! tour expects on localhost:1883 is one the test starts. Blocks that name
//! `example.org`, the README's stand-in for a server of yours, are not run
//! (no traffic leaves the machine). The NATS block is skipped, with one
//! line, when nats-server is missing.

use crate::common;
use crate::first_run::{
    assert_printed_as_shown, printed_by_step, readme, section, sh_blocks, transcript, FreshAccount,
    Step,
};

use std::fs;
use std::os::unix::process::CommandExt;
use std::process::Stdio;
use std::time::{Duration, Instant};

use common::broker::Broker;

/// The tour's fixed addresses and what the test puts in their place
/// (`{mqtt}` and the others are free ports picked at the start).
const SUBSTITUTIONS: &[(&str, &str)] = &[
    ("127.0.0.1:8080", "127.0.0.1:{time}"),
    ("tcp://localhost:1883", "tcp://127.0.0.1:{mqtt}"),
    ("mosquitto_sub ", "mosquitto_sub -h 127.0.0.1 -p {mqtt} "),
    ("127.0.0.1:7443", "127.0.0.1:{edge1}"),
    ("127.0.0.1:7444", "127.0.0.1:{edge2}"),
    ("-p 4222", "-a 127.0.0.1 -p {nats}"),
    ("127.0.0.1:4222", "127.0.0.1:{nats}"),
    ("-m 8222", "-m {monitor}"),
    ("127.0.0.1:8222", "127.0.0.1:{monitor}"),
];

/// The longest the whole tour may take.
const TOUR_TIMEOUT: Duration = Duration::from_secs(240);

/// Lines the tour's background daemons log to the terminal whenever they
/// like; they are not part of any command's output.
fn is_background_log(line: &str) -> bool {
    line.starts_with("app-event-repeater: ") || line.starts_with("app-event-time: ")
}

#[test]
fn the_whole_tour_runs_top_to_bottom_as_written() {
    if !common::require_tools(&[
        ("bash", "bash"),
        ("curl", "curl"),
        ("openssl", "openssl"),
        ("mosquitto_sub", "mosquitto-clients"),
    ]) {
        return;
    }
    let Some(broker) = Broker::start() else {
        return;
    };
    let ports: Vec<(&str, String)> = ["time", "edge1", "edge2", "nats", "monitor"]
        .into_iter()
        .map(|k| (k, quiet_free_port().to_string()))
        .chain([("mqtt", broker.port.to_string())])
        .collect();
    let substitute = |block: &str| {
        let mut out = block.to_string();
        for (from, to) in SUBSTITUTIONS {
            let mut to = to.to_string();
            for (k, v) in &ports {
                to = to.replace(&format!("{{{k}}}"), v);
            }
            out = out.replace(from, &to);
        }
        out
    };
    let nats = common::require_tool("nats-server", "nats-server").is_some();
    let readme = readme();
    let tour = section(&readme, "A five-minute tour");
    let mut steps: Vec<Step> = Vec::new();
    for block in sh_blocks(&tour) {
        if block.contains("example.org") {
            continue;
        }
        if block.contains("nats-server") && !nats {
            continue; // require_tool said so, in one line
        }
        let block = substitute(&block);
        if block.lines().any(|l| l.starts_with("$ ")) {
            steps.extend(transcript(&block));
        } else {
            steps.push(Step {
                command: block,
                shown: Vec::new(),
            });
        }
    }
    assert!(steps.len() > 20, "{steps:?}");
    let account = FreshAccount::new();
    let printed = run_in_one_bash(&account, &steps);
    for (step, printed) in steps.iter().zip(&printed) {
        let printed = printed
            .iter()
            .filter(|l| !is_background_log(l))
            .cloned()
            .collect();
        assert_printed_as_shown(step, printed, "");
    }
    // Nothing went wrong on the way, even where the README shows no output
    // (a second `app event-time` while the first still ran said "error: …
    // already running" and the tour went on).
    // (The step that stops everything at once is left out: the repeaters
    // may say they lost their source or NATS on the way out.)
    let stop = steps
        .iter()
        .position(|s| s.command.trim() == "kill $(jobs -p); wait")
        .expect("the tour stops what it started");
    let troubles: Vec<&String> = printed
        .iter()
        .enumerate()
        .filter(|(i, _)| *i != stop)
        .flat_map(|(_, lines)| lines)
        .filter(|l| l.contains("error:") || l.contains("warning:") || l.contains("already running"))
        // The dead-letter step makes the repeater refuse events on purpose.
        .filter(|l| !l.contains("the event has no string or number at /data/room"))
        .collect();
    assert!(troubles.is_empty(), "{troubles:#?}\n{printed:#?}");
    let output_of = |needle: &str| -> Vec<String> {
        let i = steps
            .iter()
            .position(|s| s.command.contains(needle))
            .unwrap_or_else(|| panic!("no step runs {needle}"));
        printed[i].clone()
    };
    // The event source: ids and events like the README's sample.
    let sample_id = tour
        .lines()
        .find_map(|l| l.strip_prefix("# id: "))
        .expect("the README shows an event id");
    let events = output_of("curl -sN");
    let ids: Vec<&str> = events
        .iter()
        .filter_map(|l| l.strip_prefix("id: "))
        .collect();
    assert!(!ids.is_empty(), "{events:?}");
    for id in &ids {
        assert!(
            id.len() == sample_id.len() && id.bytes().all(|b| b.is_ascii_digit()),
            "the source sent id {id}, the README shows {sample_id}"
        );
    }
    // MQTT: the events each subscription says it shows, under the routes
    // the tour posted, like the README's sample lines.
    for (step, prefix, count) in [
        ("-t '/time/#'", "/time/1s ", 2),
        ("-t 'site1/#'", "site1/", 3),
    ] {
        let printed = output_of(step);
        let mqtt: Vec<&String> = printed.iter().filter(|l| l.starts_with(prefix)).collect();
        assert_eq!(mqtt.len(), count, "{step}: {printed:?}");
        let sample = tour
            .lines()
            .find(|l| l.starts_with(&format!("# {prefix}")))
            .unwrap_or_else(|| panic!("the README shows no {prefix} line"));
        let topic = |l: &str| -> Option<String> {
            let json = l.trim_start_matches("# ").split_once(' ')?.1;
            let v: serde_json::Value = serde_json::from_str(json).ok()?;
            Some(
                v["topic"]
                    .as_str()?
                    .split('/')
                    .take(2)
                    .collect::<Vec<_>>()
                    .join("/"),
            )
        };
        assert!(topic(sample).is_some(), "{sample}");
        assert!(
            mqtt.iter().all(|l| topic(l) == topic(sample)),
            "{mqtt:?} vs {sample}"
        );
    }
    // Dead letters: some were kept, and the replay delivered every one.
    let kept = output_of("dead-letters list");
    assert!(
        kept.iter()
            .any(|l| l.ends_with(" in the file") && !l.starts_with("0 shown")),
        "{kept:?}"
    );
    let replayed = output_of("dead-letters replay");
    let replayed: serde_json::Value = replayed
        .iter()
        .find(|l| l.starts_with("{\"matched\""))
        .and_then(|l| serde_json::from_str(l).ok())
        .unwrap_or_else(|| panic!("no replay's answer: {replayed:?}"));
    assert!(replayed["matched"].as_u64() > Some(0), "{replayed}");
    assert_eq!(replayed["delivered"], replayed["matched"], "{replayed}");
    // NATS: the stream holds events.
    if nats {
        let jsz = output_of("/jsz");
        let messages: u64 = jsz
            .iter()
            .find_map(|l| {
                l.trim()
                    .strip_prefix("\"messages\":")
                    .map(|n| n.trim().trim_end_matches(',').parse().unwrap_or(0))
            })
            .unwrap_or_else(|| panic!("{jsz:?}"));
        assert!(messages > 0, "{jsz:?}");
    }
}

/// A free port below the kernel's ephemeral range (32768 and up on Linux).
/// The tour binds its ports seconds after they are picked; a port from
/// `free_port()` (the ephemeral range, where every test's port-0 bind and
/// every outgoing connection on the machine take theirs) was taken by
/// something else in between often enough to fail the test.
fn quiet_free_port() -> u16 {
    let seed = std::process::id() as u64
        ^ std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos() as u64);
    let mut x = seed | 1;
    for _ in 0..1000 {
        // xorshift: spread the candidates over 20000..32000.
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        let port = 20_000 + (x % 12_000) as u16;
        if std::net::TcpListener::bind(("127.0.0.1", port)).is_ok() {
            return port;
        }
    }
    panic!("no free port in 20000..32000");
}

/// Runs `steps` one after the other in one bash, each with stderr into
/// stdout and a marker before it, in a process group of its own; returns
/// what each step printed. Whatever the tour leaves running fails the test
/// (and is killed).
fn run_in_one_bash(account: &FreshAccount, steps: &[Step]) -> Vec<Vec<String>> {
    let mut script = String::new();
    for (i, step) in steps.iter().enumerate() {
        script.push_str(&format!(
            "printf '@@step {i}\\n'\n{{ {}\n}} 2>&1\n",
            step.command
        ));
    }
    script.push_str("printf '@@end\\n'\n");
    let out_file = account.home().join("../tour.out");
    let mut bash = account.command("bash");
    // Debian puts nats-server in /usr/sbin.
    bash.env(
        "PATH",
        format!(
            "{}:/usr/bin:/bin:/usr/sbin",
            account.home().join("../installed").display()
        ),
    )
    .arg("-c")
    .arg(&script)
    .stdin(Stdio::null())
    .stdout(fs::File::create(&out_file).unwrap())
    .stderr(Stdio::inherit())
    .process_group(0);
    let mut proc = common::process::Proc::spawn("the tour", &mut bash);
    let pgid = proc.pid();
    let status = proc.wait_exit(TOUR_TIMEOUT);
    let text = fs::read_to_string(&out_file).unwrap_or_default();
    // What the tour started and did not stop is still in its group.
    let deadline = Instant::now() + Duration::from_secs(10);
    let mut left = true;
    while Instant::now() < deadline {
        // SAFETY: kill(2) with signal 0 only asks whether the group exists.
        left = unsafe { libc::kill(-pgid, 0) } == 0;
        if !left {
            break;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    if left {
        // SAFETY: the group is the one this test made for the tour.
        unsafe { libc::kill(-pgid, libc::SIGKILL) };
    }
    assert!(
        status.is_some(),
        "the tour did not end within {TOUR_TIMEOUT:?}:\n{text}"
    );
    assert!(text.contains("@@end"), "the tour stopped early:\n{text}");
    assert!(!left, "the tour left processes running:\n{text}");
    printed_by_step(&text, steps.len())
}
