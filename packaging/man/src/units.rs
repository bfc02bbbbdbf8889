//! app-event-repeater@.service(8): the package's systemd units, which have
//! no clap definition. What it states is what packaging/debian/*.service
//! and docs/operations.md say.

use roff::{bold, roman, Roff};

use crate::render::{lines, list};

/// The page's file name (section 8).
pub const FILE: &str = "app-event-repeater@.service.8";

pub fn page(version: &str) -> String {
    let mut r = Roff::new();
    r.control(
        "TH",
        [
            "app-event-repeater@.service",
            "8",
            "",
            &format!("app {version}"),
            "",
        ],
    );
    r.control("SH", ["NAME"]);
    r.text([roman(
        "app-event-repeater@.service, app-event-time.service - the event repeater and event source as system services",
    )]);
    r.control("SH", ["SYNOPSIS"]);
    r.text([bold("app-event-repeater@"), roman("NAME"), bold(".service")]);
    r.control("br", []);
    r.text([bold("app-event-time.service")]);
    r.control("SH", ["DESCRIPTION"]);
    for p in [
        "app-event-repeater@NAME.service runs app event-repeater run --name NAME $REPEATER_OPTIONS as the system user app, with REPEATER_OPTIONS (and APP_TOKEN, APP_NATS_TOKEN, APP_MQTT_PASSWORD) from /etc/app/event-repeater/NAME.env. That file must exist: systemd reads it as optional and the unit names it in APP_OPTIONS_FILE, so that without it the repeater logs which file to create and exits 2, and the unit stays failed. Make it from the example, readable by root only (it may hold a token): sudo install -m 0600 /etc/app/event-repeater/example.env /etc/app/event-repeater/NAME.env, edit it, then sudo systemctl enable --now app-event-repeater@NAME.",
        "app-event-time.service runs app event-time --name event-time $EVENT_TIME_OPTIONS, EVENT_TIME_OPTIONS from /etc/app/event-time.env when that file exists. Its socket, /run/app/plugins/event-time.sock, is a repeater's default source.",
        "Both are Type=notify: systemctl start returns once the API answers, and systemctl status shows what the daemon does (relaying to mqtt://...: 1.2k events/s, 0 buffered). Restart=on-failure, 2 s apart, except after exit 2, a usage error (a bad option, a missing options file), which a restart would not fix (RestartPreventExitStatus=2). WatchdogSec=30s: a relay loop stuck for 30 s is killed and restarted, resuming from its checkpoint. TimeoutStopSec=60s covers the repeater's --drain-timeout (5 s by default) and its last checkpoint: raise both together.",
        "Members of the group app manage the instances on the host: app event-repeater manage --name NAME status. /run/app and /run/app/plugins are 0750 and the sockets 0660, group app; a user outside the group is told to join it.",
        "The units are hardened (NoNewPrivileges, ProtectSystem=strict, ProtectHome, PrivateTmp, PrivateDevices, a system call filter, no capabilities, UMask=0027); systemd-analyze security app-event-repeater@NAME rates them OK.",
    ] {
        r.control("PP", []);
        r.text([roman(p)]);
    }
    list(
        &mut r,
        "FILES",
        &[
            ("/etc/app/event-repeater/NAME.env", "The options of instance NAME (you make it, mode 0600)."),
            ("/etc/app/event-repeater/example.env", "A commented example (a conffile)."),
            ("/etc/app/event-time.env", "EVENT_TIME_OPTIONS for app-event-time.service (optional)."),
            ("/var/lib/app/event-repeater/", "Each instance's routes and checkpoint (StateDirectory=app, 0750)."),
            ("/var/cache/app/", "app's caches (CacheDirectory=app, 0750; its files 0640)."),
            ("/run/app/plugins/", "The sockets and runtime files (RuntimeDirectory=app, 0750, group app, kept while any instance runs)."),
        ],
    );
    list(
        &mut r,
        "ENVIRONMENT",
        &[
            (
                "REPEATER_OPTIONS",
                "The options of app event-repeater run, from NAME.env.",
            ),
            (
                "EVENT_TIME_OPTIONS",
                "The options of app event-time, from /etc/app/event-time.env.",
            ),
            (
                "APP_TOKEN, APP_NATS_TOKEN, APP_MQTT_PASSWORD",
                "Secrets for the repeater, from NAME.env.",
            ),
            (
                "APP_OPTIONS_FILE",
                "Set by the unit: /etc/app/event-repeater/NAME.env.",
            ),
            (
                "APP_CONFIG_DIR, APP_CACHE_DIR",
                "Set by the units: /etc/app and /var/cache/app.",
            ),
        ],
    );
    r.control("SH", ["EXIT STATUS"]);
    lines(
        &mut r,
        &[
            "The programs' codes, as systemctl status shows them (status=N):".to_string(),
            "0 stopped cleanly".to_string(),
            "1 a start-up failure (another instance, a socket or state file that cannot be used): restarted".to_string(),
            "2 usage error (a bad option, a missing options file): not restarted, the unit stays failed".to_string(),
        ],
    );
    r.control("SH", ["SEE ALSO"]);
    r.text([roman(
        "app(1), app-event-repeater-run(1), app-event-repeater-manage(1), app-event-time(1), systemctl(1), journalctl(1), systemd.exec(5)",
    )]);
    r.render()
}
