//! `systemctl start` returns once the API answers, `systemctl status` shows
//! what the repeater does, the journal has its priorities, the hardening
//! (with the score the docs give) and directory modes are in force, and a
//! restart keeps the routes.

use std::time::Duration;

use super::{installed, relay_numbered_events, show, wait_received};

const HEALTHZ: &str =
    "curl -s -o /dev/null -w '%{http_code}' --unix-socket /run/app/plugins/edge1.sock http://x/healthz";

#[test]
fn started_the_repeater_answers_shows_its_status_logs_by_priority_and_keeps_routes_over_a_restart()
{
    let Some(guest) = installed() else { return };
    // The check sees a repeater that is not there (the control)...
    let (_, before) = guest.sh_status(HEALTHZ);
    assert_eq!(before.trim(), "000", "{before}");
    relay_numbered_events(&guest, 5, "");
    // ...and the API answers as soon as `systemctl start` has returned
    // (Type=notify: READY=1 once it listens), with nothing in between.
    let restarted_answer = guest.sh(&format!(
        "systemctl restart app-event-repeater@edge1 && {HEALTHZ}"
    ));
    assert_eq!(restarted_answer.trim(), "200");
    let got = wait_received(&guest, Duration::from_secs(20), 1);
    assert!(
        got.is_some(),
        "nothing relayed:\n{}",
        guest.sh("journalctl -u app-event-repeater@edge1 --no-pager")
    );

    // STATUS= in `systemctl status`, refreshed while it changes.
    let status = guest.wait(
        Duration::from_secs(15),
        "systemctl status app-event-repeater@edge1 --no-pager | grep 'Status: \"relaying to mqtt://127.0.0.1:1883: '",
    );
    assert!(
        status.is_some(),
        "{}",
        guest.sh("systemctl status app-event-repeater@edge1 --no-pager || true")
    );

    // Journal priorities: the broker's loss is a warning, the STATUS says
    // so; the start-up lines are not warnings (the control: they are there
    // without -p).
    guest.sh("systemctl stop mosquitto");
    let lost = guest.wait(
        Duration::from_secs(20),
        "journalctl -u app-event-repeater@edge1 -p warning --no-pager -o cat | grep -i 'mqtt://127.0.0.1:1883'",
    );
    assert!(
        lost.is_some(),
        "{}",
        guest.sh("journalctl -u app-event-repeater@edge1 --no-pager")
    );
    let waiting = guest.wait(
        Duration::from_secs(15),
        "systemctl show -p StatusText --value app-event-repeater@edge1 | grep 'waiting for the sink'",
    );
    assert!(
        waiting.is_some(),
        "{}",
        show(&guest, "app-event-repeater@edge1", "StatusText")
    );
    let all = guest.sh("journalctl -u app-event-repeater@edge1 --no-pager -o cat");
    let warnings = guest.sh("journalctl -u app-event-repeater@edge1 -p warning --no-pager -o cat");
    let startup = all
        .lines()
        .find(|l| l.contains("event repeater \"edge1\" running: "))
        .unwrap_or_else(|| panic!("no start-up line:\n{all}"));
    assert!(
        !warnings.contains(startup),
        "{startup:?} is a warning:\n{warnings}"
    );
    guest.sh("systemctl start mosquitto");

    // A bad --sink: an error in the journal, exit 2 shown by systemd, and
    // not restarted.
    guest.sh(
        "install -m 0600 /etc/app/event-repeater/example.env /etc/app/event-repeater/bad.env
        echo 'REPEATER_OPTIONS=--sink ftp://127.0.0.1:21' >> /etc/app/event-repeater/bad.env
        systemctl start app-event-repeater@bad || true",
    );
    let bad_status = guest.sh("systemctl status app-event-repeater@bad --no-pager || true");
    assert!(
        bad_status.contains("status=2/INVALIDARGUMENT"),
        "{bad_status}"
    );
    let errors = guest.sh("journalctl -u app-event-repeater@bad -p err --no-pager -o cat");
    assert!(errors.contains("ftp://"), "{errors}");

    // The sandbox in force: no capabilities, no new privileges; systemd's
    // directories with the modes the unit asks for, the cache's files too.
    let pid = show(&guest, "app-event-repeater@edge1", "MainPID");
    let proc_status = guest.sh(&format!("cat /proc/{pid}/status"));
    assert!(
        proc_status.contains("CapEff:\t0000000000000000"),
        "{proc_status}"
    );
    assert!(proc_status.contains("NoNewPrivs:\t1"), "{proc_status}");
    // The score docs/operations.md gives for a running systemd, from the
    // running one.
    let security = guest.sh("systemd-analyze security --no-pager app-event-repeater@edge1");
    let score = security
        .lines()
        .find_map(|l| {
            l.split("Overall exposure level for app-event-repeater@edge1.service: ")
                .nth(1)
        })
        .and_then(|rest| rest.split_whitespace().next())
        .unwrap_or_else(|| panic!("no exposure in:\n{security}"));
    let docs = std::fs::read_to_string(
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("docs/operations.md"),
    )
    .expect("read docs/operations.md");
    let said = format!("exposure {score} \"OK\" on a running systemd");
    assert!(
        docs.replace('\n', " ").contains(&said),
        "docs/operations.md does not say {said}"
    );
    let modes = guest.sh("stat -c '%a %U:%G %n' /var/lib/app /var/cache/app /run/app");
    assert_eq!(
        modes.trim(),
        "750 app:app /var/lib/app\n750 app:app /var/cache/app\n750 app:app /run/app",
        "{modes}"
    );
    let cached = guest.sh("find /var/cache/app -type f -printf '%m %p\\n'");
    assert!(!cached.trim().is_empty(), "nothing in the cache");
    assert!(cached.lines().all(|l| l.starts_with("640 ")), "{cached}");

    // Routes kept over `systemctl restart`, and relayed under afterwards.
    let routes = guest.sh("app event-repeater manage --name edge1 get");
    assert!(routes.contains("out/seq"), "{routes}");
    guest.sh("systemctl restart app-event-repeater@edge1");
    let after = guest.sh("app event-repeater manage --name edge1 get");
    assert_eq!(after, routes);
    let last = super::received(&guest).into_iter().max().unwrap_or(0);
    let more = wait_received(&guest, Duration::from_secs(20), last + 5);
    assert!(more.is_some(), "nothing relayed after the restart");
}
