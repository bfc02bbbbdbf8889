//! Dead letters (issue 33): events refused or dropped for a reason of their
//! own are kept one JSON line each (`--dead-letter`), listed, replayed and
//! purged with `manage dead-letters`, bounded by `--dead-letter-max`.

use crate::common;

use std::path::PathBuf;
use std::process::Command;

use common::repeater::Repeater;
use common::run::Ran;
use common::{plugin_bin, Sandbox};
use serde_json::Value;

mod kept_and_replayed;
mod limits;
mod nats_replay;
mod overflow_replay_killed;
mod rabbitmq_replay;

/// `app-event-repeater-manage ARGS` in `sb`.
fn manage(sb: &Sandbox, args: &[&str]) -> Ran {
    let mut cmd: Command = sb.command(plugin_bin("app-event-repeater-manage"));
    cmd.args(args);
    common::run::Run::new(cmd).assert()
}

/// The repeater's dead-letter file (the default place).
fn file(sb: &Sandbox, rep: &Repeater) -> PathBuf {
    sb.data_dir()
        .join(format!("event-repeater/{}.dead-letters", rep.name()))
}

/// The letters in `path` (and its `.1`), oldest first.
fn letters(path: &std::path::Path) -> Vec<Value> {
    let mut rotated = path.as_os_str().to_owned();
    rotated.push(".1");
    [PathBuf::from(rotated), path.to_path_buf()]
        .iter()
        .filter_map(|p| std::fs::read_to_string(p).ok())
        .flat_map(|t| {
            t.lines()
                .map(|l| serde_json::from_str(l).expect("a letter is JSON"))
                .collect::<Vec<Value>>()
        })
        .collect()
}

/// The JetStream stream `loadgen nats-read` read holds subjects
/// `PREFIX.1` … `PREFIX.N`, each once, and nothing else.
fn stored_once_each(stored: &Value, prefix: &str, n: u64) {
    let subjects = stored["subjects"].as_object().expect("subjects");
    for i in 1..=n {
        let subject = format!("{prefix}.{i}");
        assert_eq!(
            subjects.get(&subject),
            Some(&1.into()),
            "{subject}: {stored}"
        );
    }
    assert_eq!(stored["stream_messages"], n, "{stored}");
}
