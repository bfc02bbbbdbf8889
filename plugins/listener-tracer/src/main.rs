//! `app-listener-tracer`: a lifecycle listener that appends one line per `app`
//! event to a log file, so a user can see every `app` command that ran.
//!
//! `app` writes events to our stdin, one JSON object per line, and closes it
//! when the command is over. Each becomes a line like
//! `2026-11-29T21:56:27.123Z command.end 7f3a… "app event-time" exit=0 12ms`.
//! The file is `$APP_DATA_DIR/tracer.log`, or `APP_TRACER_LOG`, or `--file`.
//!
//! Command lines carry secrets (`--token T`, `-H http://u:pw@host`,
//! `?token=` in an install URL), so the line shows the command through
//! `app_plugin::redact` (the one rule of `app`), with the plugin's declared
//! secret config keys the event carries (`--pin` when it declares `pin`);
//! the context, which holds the plugin's config, is never written. The file is made
//! 0600 (only its owner reads it), whatever the umask, new or not.

use std::fs::OpenOptions;
use std::io::{self, BufRead, Write};
use std::os::unix::fs::{OpenOptionsExt, PermissionsExt};
use std::path::PathBuf;
use std::process::ExitCode;

use app_plugin::listener::Event;
use app_plugin::metadata::Metadata;
use app_plugin::plugin::Call;

fn main() -> ExitCode {
    let meta = Metadata::new(
        "listener-tracer",
        env!("CARGO_PKG_VERSION"),
        "Log every app command to a file (a lifecycle listener)",
    );
    // `__app_metadata`, the logger and the context, then the events.
    app_plugin::run(meta, trace_call)
}

fn trace_call(call: Call) -> ExitCode {
    let args = call.words();
    if matches!(args.as_slice(), [a] if a == "--help" || a == "-h") {
        print!("{HELP}");
        return ExitCode::SUCCESS;
    }
    let file = match log_file(&args) {
        Ok(f) => f,
        Err(msg) => {
            app_plugin::log::fatal(format_args!("{msg}"));
            return ExitCode::from(2);
        }
    };
    match trace(io::stdin().lock(), &file) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            app_plugin::log::fatal(format_args!("cannot write {}: {e}", file.display()));
            ExitCode::FAILURE
        }
    }
}

/// `--help`: what it is, how to turn it on, where the log goes.
const HELP: &str = "\
Log every app command to a file (a lifecycle listener)

Usage: app-listener-tracer [--file PATH] < events

app runs it for each command once the config file lists it:
  {\"listeners\": [{\"name\": \"tracer\"}]}
and writes command.start and command.end to its stdin, one JSON object per
line; each becomes one line of the log.

Options:
      --file PATH  the log (default: $APP_TRACER_LOG, else $APP_DATA_DIR/tracer.log,
                   e.g. ~/.local/share/app/tracer.log)
  -h, --help       Print help

Exit codes: 0 every event logged (stdin closed); 1 the log cannot be written;
2 usage error.

See man app-listener-tracer, and app's docs/plugin-protocol.md (Listeners).
";

fn log_file(args: &[String]) -> Result<PathBuf, String> {
    match args {
        [] => Ok(std::env::var_os("APP_TRACER_LOG")
            .map(PathBuf::from)
            .unwrap_or_else(|| {
                app_plugin::paths::Dirs::from_env()
                    .data_dir
                    .join("tracer.log")
            })),
        [flag, path] if flag == "--file" => Ok(PathBuf::from(path)),
        _ => Err(format!(
            "unexpected arguments {args:?}; usage: app-listener-tracer [--file PATH] < events (see --help)"
        )),
    }
}

fn trace(input: impl BufRead, file: &PathBuf) -> io::Result<()> {
    if let Some(dir) = file.parent() {
        std::fs::create_dir_all(dir)?;
    }
    let mut out = OpenOptions::new()
        .create(true)
        .append(true)
        .mode(0o600)
        .open(file)?;
    // A log an older release made 0644 (or that someone widened) is
    // narrowed: its past lines were written unmasked.
    let mode = out.metadata()?.permissions().mode();
    if mode & 0o077 != 0 {
        out.set_permissions(std::fs::Permissions::from_mode(mode & 0o700))?;
    }
    for line in input.lines() {
        let line = line?;
        if line.trim().is_empty() {
            continue;
        }
        // One write per event, so lines of concurrent `app` commands never interleave.
        out.write_all(format_event(&line).as_bytes())?;
    }
    Ok(())
}

/// Turns one event into one log line; an event we cannot read (not one of
/// the SDK's [`Event`]s) is logged as is rather than dropped.
fn format_event(line: &str) -> String {
    let Ok(event) = serde_json::from_str::<Event>(line) else {
        return format!("unparsed {}\n", app_plugin::redact::words(line));
    };
    // The plugin's declared secret config keys mask `--KEY` flags too.
    let shown = |command: &str, secrets: &[String]| {
        let declared: Vec<&str> = secrets.iter().map(String::as_str).collect();
        app_plugin::redact::command_line(command, &declared)
    };
    let mut out = match &event {
        Event::Start(s) => format!(
            "{} {} {} {:?}",
            s.timestamp,
            event.name(),
            s.id,
            shown(&s.command, &s.secrets)
        ),
        Event::End(e) => format!(
            "{} {} {} {:?}",
            e.timestamp,
            event.name(),
            e.id,
            shown(&e.command, &e.secrets)
        ),
        // A kind of event newer than this SDK: its name at least.
        other => format!("- {} - \"-\"", other.name()),
    };
    if let Event::End(end) = &event {
        out.push_str(&format!(" exit={}", end.exit_code));
        if let Some(signal) = end.signal {
            out.push_str(&format!(" signal={signal}"));
        }
        if end.aborted {
            out.push_str(" aborted");
        }
        out.push_str(&format!(" {:.1}ms", end.duration_ms));
    }
    out.push('\n');
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn end_event_line_has_code_and_duration() {
        let line = format_event(
            r#"{"event":"command.end","id":"abc","timestamp":"T","command":"app x","exit_code":3,"duration_ms":1.25}"#,
        );
        assert_eq!(line, "T command.end abc \"app x\" exit=3 1.2ms\n");
    }

    #[test]
    fn garbage_is_kept_not_dropped() {
        assert_eq!(format_event("not json"), "unparsed not json\n");
        assert_eq!(format_event("x http://T@h"), "unparsed x http://***@h\n");
    }

    #[test]
    fn flags_named_after_declared_secret_keys_are_masked() {
        let event = |secrets: &str| {
            format_event(&format!(
                r#"{{"event":"command.end","id":"a","timestamp":"T","command":"app db --pin S1 --db-dsn=S2 --name n","exit_code":0,"duration_ms":1{secrets}}}"#
            ))
        };
        let line = event(r#","secrets":["pin","db_dsn"]"#);
        assert!(!line.contains("S1") && !line.contains("S2"), "{line}");
        assert!(
            line.contains("--pin '***' '--db-dsn=***' --name n"),
            "{line}"
        );
        // Undeclared, they are plain flags: the values would have been seen.
        let line = event("");
        assert!(line.contains("--pin S1 '--db-dsn=S2'"), "{line}");
    }

    #[test]
    fn secrets_in_the_command_are_masked() {
        let line = format_event(
            r#"{"event":"command.end","id":"a","timestamp":"T","command":"app -H http://u:S1@h x --token S2 --sink=mqtt://S3@b:1","exit_code":0,"duration_ms":1}"#,
        );
        assert!(
            !["S1", "S2", "S3"].iter().any(|s| line.contains(s)),
            "{line}"
        );
        assert!(
            line.contains("http://***:***@h")
                && line.contains("--token '***'")
                && line.contains("mqtt://***@b:1"),
            "{line}"
        );
    }
}
