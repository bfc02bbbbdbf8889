//! An instance started without its options file fails at once, says in the
//! journal which file to create, and stays failed (exit 2,
//! `RestartPreventExitStatus=2`) instead of restarting every 2 s forever;
//! a failure of another kind is still restarted.

use std::time::Duration;

use super::{installed, show};

#[test]
fn an_instance_without_its_options_file_fails_naming_it_and_stays_failed() {
    let Some(guest) = installed() else { return };
    let (code, said) = guest.sh_status("systemctl start app-event-repeater@nosuch");
    assert_ne!(code, Some(0), "started without its options file: {said}");
    // The control, side by side: an instance whose routes file is of a newer
    // format exits 1 at start, which Restart=on-failure restarts.
    guest.sh("set -e
        install -m 0600 /etc/app/event-repeater/example.env /etc/app/event-repeater/newer.env
        install -d -o app -g app -m 0750 /var/lib/app/event-repeater
        echo '{\"version\": 99, \"routes\": []}' > /var/lib/app/event-repeater/newer.routes.json
        systemctl start app-event-repeater@newer || true");
    let restarted = guest.wait(
        Duration::from_secs(15),
        "[ \"$(systemctl show -p NRestarts --value app-event-repeater@newer)\" -ge 2 ]",
    );
    let newer = guest.sh("journalctl -u app-event-repeater@newer --no-pager -o cat");
    assert!(
        restarted.is_some(),
        "the control was not restarted:\n{newer}"
    );
    guest.sh("systemctl stop app-event-repeater@newer");

    // By now (over 6 s, three RestartSec) the one without a file has not
    // been restarted once.
    let unit = "app-event-repeater@nosuch";
    assert_eq!(show(&guest, unit, "NRestarts"), "0");
    assert_eq!(show(&guest, unit, "ActiveState"), "failed");
    assert_eq!(show(&guest, unit, "ExecMainStatus"), "2");
    let errors = guest.sh(&format!("journalctl -u {unit} -p err --no-pager -o cat"));
    assert!(
        errors.contains(
            "the options file /etc/app/event-repeater/nosuch.env (APP_OPTIONS_FILE) does not exist: create it, e.g. cp /etc/app/event-repeater/example.env /etc/app/event-repeater/nosuch.env"
        ),
        "{errors}"
    );
    // One start, one failure.
    assert_eq!(errors.matches("does not exist").count(), 1, "{errors}");
}
