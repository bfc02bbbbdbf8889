//! The dispatcher against real third-party plugins: shell and Python scripts
//! and a compiled binary, made in a temp dir and put on the sandbox PATH.

use crate::common;

use std::fs;

use common::{write_executable, Sandbox};

mod resolve;
mod running;
mod shipped_names;

/// A plugin that prints its arguments one per line, then selected context variables.
const ECHO_PLUGIN: &str = r#"#!/bin/sh
for a in "$@"; do printf 'arg=%s\n' "$a"; done
printf 'name=%s\n' "$APP_PLUGIN_NAME"
printf 'log=%s\n' "$APP_LOG"
printf 'hosts=%s\n' "$APP_HOSTS"
printf 'command=%s\n' "$APP_COMMAND"
printf 'context=%s\n' "$APP_CONTEXT"
printf 'version=%s\n' "$APP_CONTEXT_VERSION"
printf 'exe=%s\n' "$APP_PLUGIN_EXE"
printf 'bin=%s\n' "$APP_BIN"
printf 'runtime=%s\n' "$APP_RUNTIME_DIR"
printf 'plugin_path=%s\n' "$APP_PLUGIN_PATH"
"#;

/// A trusted plugin (on APP_PLUGIN_PATH) that asks for the JSON context on stdin.
fn stdin_context_plugin(sb: &Sandbox, body: &str) -> std::path::PathBuf {
    let dir = sb.path().join("trusted");
    fs::create_dir_all(&dir).unwrap();
    write_executable(
        &dir.join("app-ctx"),
        &format!(
            "#!/bin/sh\nif [ \"$1\" = __app_metadata ]; then\n  echo '{{\"apiVersion\":\"app.plugin/v1\",\"description\":\"needs context\",\"context\":\"stdin\"}}'\n  exit 0\nfi\n{body}"
        ),
    );
    dir
}
