//! The dead-letter file's bounds: past `--dead-letter-max` the file
//! rotates to one `.1` and what is cut is counted; a full disk under the
//! file never stalls delivery (the letters that cannot be written are
//! counted as lost, and warned about).

use crate::common;

use std::time::Duration;

use common::repeater::Repeater;
use common::sse_source::ScriptedSource;
use common::tmpfs::Tmpfs;
use common::{wait_for, Sandbox};

use super::{file, letters};

/// `n` events that are not JSON (each a dead letter of about `size`
/// bytes), with a relayed event after each; ids from `first`.
fn push_pairs(source: &ScriptedSource, first: u64, n: u64, size: usize) {
    for i in first..first + n {
        source.push(
            &format!("{}", 2 * i),
            &format!("not json {i} {}", "x".repeat(size)),
        );
        source.push_topic(2 * i + 1, &format!("ok/{i}"));
    }
}

fn wait_metric(rep: &Repeater, name: &str, at_least: f64) {
    let ok = wait_for(Duration::from_secs(20), || {
        (rep.metric(name) >= at_least).then_some(())
    });
    assert!(
        ok.is_some(),
        "{name} < {at_least}: {}\n{}",
        rep.metric(name),
        rep.log()
    );
}

#[test]
fn past_the_limit_the_file_rotates_and_the_cut_letters_are_counted() {
    let sb = Sandbox::new();
    let source = ScriptedSource::start();
    let rep = Repeater::builder(&sb, "rot")
        .source(&source.url())
        .sinkprotocol("stderr")
        .args(["--allowall", "--dead-letter-max", "64KiB"])
        .start();
    // 200 letters of about 1.2 KiB: 240 KiB kept in a 64 KiB budget.
    push_pairs(&source, 0, 200, 1000);
    wait_metric(&rep, "events_acked_total", 200.0);
    wait_metric(&rep, "dead_letters_total{reason=\"invalid\"}", 200.0);
    let path = file(&sb, &rep);
    let mut rotated = path.clone().into_os_string();
    rotated.push(".1");
    let sizes = [&path, &std::path::PathBuf::from(&rotated)]
        .map(|p| std::fs::metadata(p).map_or(0, |m| m.len()));
    assert!(sizes[1] > 0, "never rotated: {sizes:?}");
    assert!(
        sizes.iter().all(|&s| s <= 32 << 10),
        "over half each: {sizes:?}"
    );
    let kept = letters(&path).len() as f64;
    let cut = rep.metric("dead_letters_cut_total");
    assert!(cut > 0.0, "nothing counted as cut");
    // Every letter is either kept or counted as cut; the newest are kept.
    assert_eq!(kept + cut, 200.0, "kept {kept}, cut {cut}");
    let newest = letters(&path).last().cloned().expect("a letter");
    assert!(newest["data"]
        .as_str()
        .unwrap_or("")
        .starts_with("not json 199 "));
    assert_eq!(
        rep.metric("dead_letter_bytes"),
        (sizes[0] + sizes[1]) as f64
    );
}

#[test]
fn a_full_disk_under_the_dead_letters_never_stalls_delivery() {
    let sb = Sandbox::new();
    let Some(disk) = Tmpfs::mount(&sb.path().join("letters"), "64k") else {
        return;
    };
    let source = ScriptedSource::start();
    let path = sb.path().join("letters/dl");
    let rep = Repeater::builder(&sb, "full")
        .source(&source.url())
        .sinkprotocol("stderr")
        .args(["--allowall", "--dead-letter"])
        .args([path.to_str().expect("utf-8 path")])
        .start();
    // The positive control: with room, a letter is written.
    push_pairs(&source, 0, 1, 100);
    wait_metric(&rep, "dead_letters_total{reason=\"invalid\"}", 1.0);
    assert_eq!(letters(&path).len(), 1);
    disk.fill("filler");
    push_pairs(&source, 1, 100, 2000);
    // Every relayed event is delivered; the letters that found no room
    // are counted as lost, and said so.
    wait_metric(&rep, "events_acked_total", 101.0);
    wait_metric(&rep, "dead_letters_lost_total", 1.0);
    let counts = || {
        let written = rep.metric("dead_letters_total{reason=\"invalid\"}");
        (written, rep.metric("dead_letters_lost_total"))
    };
    let settled = wait_for(Duration::from_secs(10), || {
        let (w, l) = counts();
        (w + l == 101.0).then_some(w)
    });
    let written = settled.unwrap_or_else(|| panic!("written and lost: {:?}", counts()));
    assert!(
        rep.log().contains("could not keep a dead letter"),
        "{}",
        rep.log()
    );
    // No half line was left: every line of the file is a letter.
    assert_eq!(letters(&path).len() as f64, written);
    assert_eq!(rep.healthz()["buffered"], 0);
}
