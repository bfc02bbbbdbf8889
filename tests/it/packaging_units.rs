//! The package's systemd units as files (packaging/debian/*.service): the
//! settings an operator relies on, and their `systemd-analyze security`
//! score, which docs/operations.md states.

use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;

use crate::common::require_tool;
use crate::packaging::{run, text};

const UNITS: [&str; 2] = ["app-event-repeater@.service", "app-event-time.service"];

fn unit_file(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("packaging/debian")
        .join(name)
}

/// The `[Service]` assignments of a unit, `KEY=VALUE` per line.
fn settings(name: &str) -> Vec<String> {
    let unit = fs::read_to_string(unit_file(name)).expect("read the unit");
    unit.lines()
        .map(str::trim)
        .filter(|l| !l.starts_with('#') && l.contains('='))
        .map(String::from)
        .collect()
}

#[test]
fn the_units_keep_their_directories_closed_and_do_not_restart_usage_errors() {
    for unit in UNITS {
        let set = settings(unit);
        for want in [
            "StateDirectoryMode=0750",
            "CacheDirectoryMode=0750",
            "RuntimeDirectoryMode=0750",
            "UMask=0027",
            "Restart=on-failure",
            "RestartPreventExitStatus=2",
        ] {
            assert!(
                set.iter().any(|s| s == want),
                "{unit} lacks {want}: {set:?}"
            );
        }
    }
    // The repeater's options file: optional to systemd, named to the
    // repeater, which refuses to start without it (tests/it/systemd/options_file.rs).
    let set = settings("app-event-repeater@.service");
    assert!(
        set.iter()
            .any(|s| s == "EnvironmentFile=-/etc/app/event-repeater/%i.env"),
        "{set:?}"
    );
    let env = set
        .iter()
        .find(|s| s.starts_with("Environment="))
        .expect("an Environment= line");
    assert!(
        env.split_whitespace()
            .any(|kv| kv == "APP_OPTIONS_FILE=/etc/app/event-repeater/%i.env"),
        "{env}"
    );
}

/// `systemd-analyze security --offline` of `unit` (an instance name for
/// the template) among the files in `root`: its overall exposure, e.g. "1.4".
fn exposure(analyze: &Path, root: &Path, unit: &str) -> String {
    let out = run(Command::new(analyze)
        .args(["security", "--offline=yes", "--no-pager"])
        .arg(format!("--root={}", root.display()))
        .arg(unit));
    let all = text(&out);
    let prefix = format!("Overall exposure level for {unit}: ");
    all.lines()
        .find_map(|l| {
            l.trim_start_matches(['→', ' '])
                .strip_prefix(prefix.as_str())
        })
        .and_then(|rest| rest.split_whitespace().next())
        .map(String::from)
        .unwrap_or_else(|| panic!("no exposure for {unit} in:\n{all}"))
}

#[test]
fn the_security_score_in_the_docs_is_the_one_systemd_analyze_gives() {
    let Some(analyze) = require_tool("systemd-analyze", "systemd") else {
        return;
    };
    let tmp = tempfile::tempdir().expect("temp dir");
    let units = tmp.path().join("etc/systemd/system");
    fs::create_dir_all(&units).expect("mkdir");
    for unit in UNITS {
        fs::copy(unit_file(unit), units.join(unit)).expect("copy the unit");
    }
    let repeater = exposure(&analyze, tmp.path(), "app-event-repeater@edge1.service");
    let time = exposure(&analyze, tmp.path(), "app-event-time.service");
    assert_eq!(repeater, time, "the two units are hardened alike");
    let docs = fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("docs/operations.md"))
        .expect("read docs/operations.md");
    let said = format!("{repeater} \"OK\" from the unit files alone");
    assert!(
        docs.replace('\n', " ").contains(&said),
        "docs/operations.md does not say {said}"
    );
    // The control: the same unit without its hardening scores worse, so
    // the figure above is the unit's own.
    let bare: String = fs::read_to_string(unit_file("app-event-time.service"))
        .expect("read the unit")
        .lines()
        .filter(|l| {
            !l.starts_with("Protect") && !l.starts_with("Private") && !l.starts_with("SystemCall")
        })
        .map(|l| format!("{l}\n"))
        .collect();
    fs::write(units.join("app-bare.service"), bare).expect("write the bare unit");
    let worse = exposure(&analyze, tmp.path(), "app-bare.service");
    let parse = |s: &str| s.parse::<f64>().expect("a number");
    assert!(parse(&worse) > parse(&time), "{worse} is not above {time}");
}
