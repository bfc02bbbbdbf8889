//! `app`'s own lifecycle, published to listener plugins: `command.start`
//! before a command runs, `command.end` after it, as one JSON line each.
//!
//! Only used when the config registers listeners; with none, nothing here
//! runs and a plugin call is still a plain `exec`.

use std::ffi::OsString;
use std::path::PathBuf;
use std::time::{Instant, SystemTime, UNIX_EPOCH};

use app_plugin::listener::{CommandEnd, CommandStart, Event};
use app_plugin::log::Level;

use crate::context::{vars, Context};
use crate::error::{Error, Result};
use crate::exec::Outcome;
use crate::listeners::Listener;
use crate::session::Session;

/// What is being run, for the `command.start` event.
pub struct Subject<'a> {
    /// The context document (the plugin's, or the one a built-in would give).
    pub context: &'a Context,
    /// The plugin executable; `None` for a built-in command.
    pub plugin: Option<PathBuf>,
    /// The built-in command, e.g. `plugin list`; `None` for a plugin.
    pub builtin: Option<String>,
    /// The arguments the plugin (or built-in) receives.
    pub args: Vec<String>,
    /// The plugin's declared secret config keys (its trusted metadata's
    /// `secrets`), told to listeners so that one showing the command masks
    /// `--KEY` flags named after them; empty for a built-in.
    pub secrets: Vec<String>,
}

/// Runs `body` between `command.start` and `command.end`, told to every
/// configured listener. A listener registered with `can_abort` may veto the
/// command on `command.start`; then `body` never runs.
pub fn observe(
    session: &Session,
    subject: Subject<'_>,
    body: impl FnOnce() -> Result<Outcome>,
) -> Result<i32> {
    // Before the listener threads start, so they inherit the signal mask: a
    // signal while app waits for a listener ends app at once, listeners
    // killed (see crate::signals).
    crate::signals::install();
    let log = session.log_level();
    let id = invocation_id();
    let started = Instant::now();
    let declared: Vec<&str> = subject.secrets.iter().map(String::as_str).collect();
    // What a listener outside the trusted places is told (APP_COMMAND and
    // the JSON alike): the command line's secrets masked.
    let masked = environment_only(subject.context, &declared);
    let [mut env, mut masked_env] = [subject.context, &masked].map(Context::to_env);
    // A listener's stdin carries events: an APP_CONTEXT=stdin inherited
    // from an outer plugin must not make it read one as its context.
    env.push((vars::CONTEXT, "env".into()));
    masked_env.push((vars::CONTEXT, "env".into()));
    let mut listeners = Vec::new();
    for settings in &session.config.listeners {
        if let (_, Some(warning)) = crate::listeners::timeout(settings) {
            warn(log, &warning);
        }
        let file = format!("app-listener-{}", settings.name);
        let Some(found) = session.search.find_executable(&file) else {
            warn(
                log,
                &format!(
                    "listener '{}' not found: no executable {file} on the search path",
                    settings.name
                ),
            );
            continue;
        };
        let trusted = found.origin.is_trusted()
            || session
                .config
                .is_trusted(&format!("listener-{}", settings.name));
        let env = if trusted { &env } else { &masked_env };
        match Listener::start(settings, found.path.clone(), env, log >= Level::Debug) {
            Ok(mut l) => {
                l.trusted = trusted;
                listeners.push(l)
            }
            Err(e) => warn(
                log,
                &format!(
                    "listener '{}' ({}) cannot start: {e}",
                    settings.name,
                    found.path.display()
                ),
            ),
        }
    }

    let mut start = CommandStart::new(id.as_str(), subject.context.clone());
    start.plugin = subject.plugin.clone();
    start.builtin = subject.builtin.clone();
    start.args = subject.args.clone();
    start.secrets = subject.secrets.clone();
    let mut env_only = start.clone();
    env_only.context = masked;
    env_only.command = app_plugin::redact::command_line(&start.command, &declared);
    env_only.args = app_plugin::redact::args(&start.args, &declared);
    let (trusted, untrusted): (Vec<&Listener>, Vec<&Listener>) =
        listeners.iter().partition(|l| l.trusted);
    broadcast(trusted, &Event::Start(start));
    broadcast(untrusted, &Event::Start(env_only));

    let vetoes = listeners
        .iter()
        .filter(|l| l.can_abort && l.wants("command.start"))
        .find_map(|l| l.abort_reason(started).map(|r| (l.name.clone(), r)));
    if let Some((listener, reason)) = vetoes {
        let end = end_event(&id, &subject, started, None, true);
        tell_end(&listeners, end, &declared);
        finish(listeners, log);
        // Both come from the listener; printed as data, not terminal codes.
        return Err(Error::Aborted {
            listener: app_plugin::text::escape_for_terminal(&listener).into_owned(),
            reason: app_plugin::text::escape_for_terminal(&reason).into_owned(),
        });
    }

    let result = body();
    let outcome = match &result {
        Ok(o) => *o,
        Err(e) => Outcome::Exited(e.exit_code()),
    };
    let end = end_event(&id, &subject, started, Some(outcome), false);
    tell_end(&listeners, end, &declared);
    finish(listeners, log);
    result.map(Outcome::exit_code)
}

fn end_event(
    id: &str,
    subject: &Subject<'_>,
    started: Instant,
    outcome: Option<Outcome>,
    aborted: bool,
) -> Event {
    let mut end = CommandEnd::new(id, subject.context.command.as_str());
    end.plugin = subject.plugin.clone();
    end.builtin = subject.builtin.clone();
    end.duration_ms = started.elapsed().as_secs_f64() * 1000.0;
    end.aborted = aborted;
    end.secrets = subject.secrets.clone();
    match outcome {
        Some(Outcome::Exited(code)) => end.exit_code = code,
        Some(o @ Outcome::Signaled(sig)) => {
            end.signal = Some(sig);
            end.exit_code = o.exit_code();
        }
        None => end.exit_code = crate::error::code::FAILURE,
    }
    Event::End(end)
}

fn broadcast<'a>(listeners: impl IntoIterator<Item = &'a Listener>, event: &Event) {
    let line = event.to_json_line();
    for l in listeners.into_iter().filter(|l| l.wants(event.name())) {
        l.send(&line);
    }
}

/// `end` to every listener: the trusted ones as it is, the others with the
/// command line masked.
fn tell_end(listeners: &[Listener], end: Event, declared: &[&str]) {
    let (trusted, untrusted): (Vec<&Listener>, Vec<&Listener>) =
        listeners.iter().partition(|l| l.trusted);
    broadcast(trusted, &end);
    let masked = match end {
        Event::End(mut e) => {
            e.command = app_plugin::redact::command_line(&e.command, declared);
            Event::End(e)
        }
        other => other,
    };
    broadcast(untrusted, &masked);
}

/// What a listener outside the trusted places hears of the context: what
/// the environment already tells it (like any untrusted plugin), without the
/// JSON-only parts, the plugin's config (which may hold secrets) and the
/// alias, and with the command line's secrets masked (the one redaction of
/// the SDK: secret flags' values, URL userinfo, query values, the plugin's
/// declared keys).
fn environment_only(context: &Context, declared: &[&str]) -> Context {
    let mut context = context.clone();
    context.plugin_config = None;
    context.alias = None;
    context.command = app_plugin::redact::command_line(&context.command, declared);
    context.args = app_plugin::redact::args(&context.args, declared);
    context
}

fn finish(listeners: Vec<Listener>, log: Level) {
    // Finish them side by side, so a slow one costs its own time, not the sum.
    let handles: Vec<_> = listeners
        .into_iter()
        .map(|l| std::thread::spawn(move || l.finish()))
        .collect();
    for h in handles {
        if let Ok(Some(warning)) = h.join() {
            warn(log, &warning);
        }
    }
}

/// A listener's trouble is a warning: shown at the default level (2), like
/// every other warning of `app`, and hidden by `--log 1`.
fn warn(log: Level, message: &str) {
    if log >= Level::Warn {
        crate::warn::warn(message);
    }
}

/// 32 hex digits from the kernel's random source (time and pid if that fails).
fn invocation_id() -> String {
    use std::io::Read;
    let mut bytes = [0u8; 16];
    let random = std::fs::File::open("/dev/urandom").and_then(|mut f| f.read_exact(&mut bytes));
    if random.is_err() {
        let nanos = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map(|d| d.as_nanos())
            .unwrap_or_default();
        bytes = (nanos ^ (u128::from(std::process::id()) << 96)).to_be_bytes();
    }
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// The arguments as strings, for events.
pub fn arg_strings(args: &[OsString]) -> Vec<String> {
    args.iter()
        .map(|a| a.to_string_lossy().into_owned())
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_are_unique_hex() {
        let (a, b) = (invocation_id(), invocation_id());
        assert_eq!(a.len(), 32);
        assert_ne!(a, b);
        assert!(a.chars().all(|c| c.is_ascii_hexdigit()));
    }
}
