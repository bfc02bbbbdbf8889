//! What the clap definitions do not say and an operator opens a man page
//! for: how `app` dispatches, its files, its environment, exit codes where
//! a command's help gives none, and the pages to read next. The texts
//! follow README.md and docs/*.md (plugin-protocol.md, operations.md),
//! which remain the full reference; a host has only these pages.

/// Sections added to one page.
#[derive(Default)]
pub struct Extra {
    /// Paragraphs after the command's own description.
    pub description: &'static [&'static str],
    pub files: &'static [(&'static str, &'static str)],
    pub environment: &'static [(&'static str, &'static str)],
    /// Its exit codes, one line each, where its help gives none.
    pub exit: &'static [&'static str],
    /// Pages to add to SEE ALSO, `name(section)`.
    pub see_also: &'static [&'static str],
    /// Commands it runs that are not its clap subcommands:
    /// (name as typed, page, about).
    pub commands: &'static [(&'static str, &'static str, &'static str)],
}

/// The units' page (see `units.rs`).
pub const UNITS_PAGE: &str = "app-event-repeater@.service(8)";

pub fn extra(page: &str) -> Extra {
    match page {
        "app" => APP,
        "app-event-repeater" => Extra {
            commands: &[(
                "manage",
                "app-event-repeater-manage",
                "Change a running repeater's routes, or see its status",
            )],
            see_also: &[UNITS_PAGE, "app-event-time(1)"],
            ..Extra::default()
        },
        "app-event-repeater-run" => Extra {
            environment: &[
                ("APP_TOKEN", "The bearer token the TCP API requires (--token)."),
                ("APP_NATS_TOKEN", "NATS token authentication (--nats-token)."),
                ("APP_MQTT_PASSWORD", "The MQTT or NATS password for --username."),
                ("APP_OPTIONS_FILE", "Set by app-event-repeater@.service: the instance's options file; when it names a file that does not exist, the repeater says which file to create and exits 2."),
                ("APP_DATA_DIR, APP_RUNTIME_DIR", "Where the routes and checkpoint, and the socket and pid file, go (under a unit: STATE_DIRECTORY and RUNTIME_DIRECTORY); see app(1)."),
                ("APP_LOG, APP_LOG_FORMAT", "The log level and format when --log and --log-format are not given."),
            ],
            files: &[
                ("APP_DATA_DIR/event-repeater/NAME.routes.json, NAME.checkpoint", "The routes and the checkpoint of the repeater named NAME (/var/lib/app/event-repeater/ for a system instance)."),
                ("APP_RUNTIME_DIR/plugins/NAME.sock, NAME.pid, NAME.listen", "Its API socket and runtime files (/run/app/plugins/ for a system instance)."),
            ],
            see_also: &[UNITS_PAGE],
            ..Extra::default()
        },
        "app-event-repeater-manage" => Extra {
            environment: &[
                ("APP_TOKEN", "The bearer token sent to a repeater's TCP API (--token)."),
                ("APP_SYSTEM_RUNTIME_DIR", "Where system instances are looked for instead of /run/app (their sockets are in its plugins/ directory)."),
                ("APP_HOSTS", "The hosts of app's -H, which manage talks to when no --host is given."),
            ],
            files: &[
                ("APP_RUNTIME_DIR/plugins/NAME.sock", "The repeater named NAME run by this user (found by --name)."),
                ("/run/app/plugins/NAME.sock", "A system instance (app-event-repeater@NAME.service), open to the members of the group app; a user outside it is told to join it (exit 3)."),
                ("APP_CONFIG_DIR/hosts.json", "Named hosts: address, token_file, ca_file (see --help)."),
            ],
            see_also: &[UNITS_PAGE],
            ..Extra::default()
        },
        "app-event-time" => Extra {
            files: &[
                ("APP_RUNTIME_DIR/plugins/NAME.sock", "Its SSE socket (/run/app/plugins/event-time.sock under app-event-time.service), which repeaters read by default."),
                ("/etc/app/event-time.env", "EVENT_TIME_OPTIONS for app-event-time.service (optional)."),
            ],
            see_also: &[UNITS_PAGE, "app-event-repeater(1)"],
            ..Extra::default()
        },
        "app-listener-tracer" => Extra {
            description: &[
                "app runs it for each command once the config file lists it: {\"listeners\": [{\"name\": \"tracer\"}]}. app writes command.start and command.end events to its stdin, one JSON object per line, and closes it when the command is over; each event becomes one line of the log, e.g. 2026-11-29T21:56:27.123Z command.end 7f3a… \"app event-time\" exit=0 12ms.",
            ],
            files: &[("APP_DATA_DIR/tracer.log", "The log, by default (~/.local/share/app/tracer.log).")],
            environment: &[
                ("APP_TRACER_LOG", "The log file instead of APP_DATA_DIR/tracer.log (--file wins over both)."),
                ("APP_DATA_DIR", "See app(1)."),
            ],
            exit: &[
                "0 every event was logged (stdin closed)",
                "1 the log could not be written",
                "2 usage error (an unknown argument)",
            ],
            ..Extra::default()
        },
        _ => Extra::default(),
    }
}

const APP: Extra = Extra {
    description: &[
        "app is a dispatcher in the style of git and kubectl. app NAME ARGS... runs the built-in command NAME (help, version, plugin, completion), else an alias from the config file, else the plugin app-NAME: an executable of that name. A plugin's arguments pass through unchanged, its exit code becomes app's, and it gets the global flags as environment variables (APP_LOG, APP_HOSTS, ...) and, when it asks for it, a JSON context on stdin. The longest match over the command's words wins: app event-repeater run runs app-event-repeater with the argument run, and app event-repeater manage status runs app-event-repeater-manage status. Flags before the command are app's global flags; flags after it belong to the plugin.",
        "Plugins are looked for, in this order: the directories in APP_PLUGIN_PATH; the shipped plugin directory beside app, PREFIX/libexec/app for PREFIX/bin/app (/usr/libexec/app in the package); the user plugin directory, APP_DATA_DIR/plugins, where app plugin install puts them; then PATH. The first match wins; app plugin list shows the others as shadowed. Plugins in the first three places are trusted: app may ask them for their metadata and completions; one found only through PATH runs only when typed, unless the config marks it trusted.",
        "Shipped with app: event-repeater (relays Server-Sent Events to MQTT or NATS; app-event-repeater(1)), event-time (an example event source; app-event-time(1)) and listener-tracer (logs every command; app-listener-tracer(1)). Listeners named in the config file are told when each command starts and ends.",
    ],
    files: &[
        ("APP_CONFIG_DIR/config.json", "The config file: aliases, listeners, plugin settings (~/.config/app/config.json; /etc/app/config.json for the system services; --config or APP_CONFIG names another). Optional."),
        ("APP_PLUGIN_PATH, PREFIX/libexec/app, APP_DATA_DIR/plugins, PATH", "Where plugins are found, in that order (see DESCRIPTION); /usr/libexec/app holds the shipped ones."),
        ("APP_RUNTIME_DIR/plugins/", "The sockets, pid and listen files of running daemons, by instance name ($XDG_RUNTIME_DIR/app/plugins, else /tmp/app-UID/plugins)."),
        ("/run/app/plugins/", "The same for the system instances (app-event-repeater@.service(8)), open to the group app."),
        ("APP_DATA_DIR/", "State: installed plugins, each repeater's routes and checkpoint (~/.local/share/app; /var/lib/app for the system instances)."),
        ("APP_CACHE_DIR/", "Caches: verified plugin indexes and plugin metadata (~/.cache/app; /var/cache/app for the system instances)."),
        ("/usr/share/app/sdk/", "The plugin SDK's source, which app plugin new --lang rust skeletons build against."),
    ],
    environment: &[
        ("APP_CONFIG", "The config file (like --config)."),
        ("APP_CONFIG_DIR", "The config directory (default ~/.config/app)."),
        ("APP_DATA_DIR", "The data directory: plugins, routes, checkpoints (default ~/.local/share/app)."),
        ("APP_CACHE_DIR", "The cache directory (default ~/.cache/app)."),
        ("APP_RUNTIME_DIR", "The runtime directory; sockets go in its plugins/ (default $XDG_RUNTIME_DIR/app)."),
        ("APP_SYSTEM_RUNTIME_DIR", "Where app event-repeater manage looks for system instances instead of /run/app."),
        ("APP_PLUGIN_PATH", "Colon-separated directories searched for plugins first; passed on to plugins unchanged."),
        ("APP_LOG", "The log level, 0 (silent) to 5 (trace) or off, error, warn, info, debug, trace (like --log); given to plugins."),
        ("APP_LOG_FORMAT", "text or json (like --log-format); given to plugins."),
        ("APP_TOKEN", "The bearer token of an event repeater's TCP API, for app event-repeater run and manage."),
        ("APP_NATS_TOKEN", "NATS token authentication for the event repeater."),
        ("APP_MQTT_PASSWORD", "The MQTT or NATS password for the event repeater's --username."),
        ("APP_OPTIONS_FILE", "Set by app-event-repeater@.service to the instance's options file, which the repeater requires."),
        ("APP_FETCH_TIMEOUT", "Seconds, 1 to 3600: lowers the download limits of app plugin install and index updates."),
        ("APP_FETCH_TOTAL_TIMEOUT", "Seconds, 1 to 86400: the total time a download may take, however steadily it moves (default 300 s for an index, 1 h for a plugin)."),
        ("APP_USER_PLUGINS", "0 leaves the user plugin directory out of the search path (the units set it: the daemon user can write that directory)."),
        ("APP_INSTALL_MAX_BYTES", "The largest download app plugin install accepts (default 256 MiB)."),
        ("APP_BUILD_TIMEOUT", "Seconds, 1 to 86400: lowers the git and cargo time limits of app plugin install --git."),
        ("APP_TRACER_LOG", "The log file of app-listener-tracer."),
        ("APP_BIN, APP_VERSION, APP_PLUGIN_NAME, APP_PLUGIN_EXE", "Given to a plugin: the app that ran it, its version, the plugin's name and executable."),
        ("APP_COMMAND, APP_COMMAND_OMITTED", "Given to a plugin: the command line, shell-quoted, at most 16 KiB; how many words were left out when it was cut."),
        ("APP_CONTEXT, APP_CONTEXT_VERSION", "Given to a plugin: stdin when the JSON context is the first line of stdin, else env; the context's version (1)."),
        ("APP_HOSTS", "Given to a plugin: the hosts of -H/--host, comma-separated."),
        ("APP_PLUGIN_SHARE", "Given to a plugin installed from an archive with a share/ folder: that folder (APP_DATA_DIR/plugins/.files/NAME/share); empty for every other plugin."),
        ("APP_COMPLETION_SHELL", "Set by the completion scripts app completion prints (bash, zsh or fish), so that app knows which shell asks."),
    ],
    exit: &[
        "A plugin's exit code passes through unchanged.",
        "0 a built-in command succeeded",
        "1 a built-in failed (an I/O error), the config file is broken, app plugin list found problems, or a listener vetoed the command",
        "2 usage error: a bad global flag, bad arguments to a built-in, an alias loop",
        "3 to 10 app plugin install, upgrade, outdated (9: something is outdated), apply (10: --locked and the lock disagrees) and index: see app-plugin-install(1) and app-plugin-index(1)",
        "126 the plugin exists but cannot be started",
        "127 no built-in, alias or plugin has that name",
        "128+N the plugin died of signal N",
    ],
    see_also: &["app-event-repeater(1)", "app-event-time(1)", "app-listener-tracer(1)", UNITS_PAGE],
    commands: &[],
};
