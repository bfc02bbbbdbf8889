//! Running an external command: resolve the plugin, build its context, then
//! exec it (or supervise it, for listeners or a stdin context). Its own module
//! so that the built-ins that run plugins (`help NAME`) do not depend on
//! [`crate::run`], which depends on them.

use std::ffi::OsString;

use crate::cli::BUILTINS;
use crate::context::vars;
use crate::error::{Error, Result};
use crate::exec::{self, Invocation};
use crate::inventory::Inventory;
use crate::lifecycle;
use crate::resolve::{resolve, Resolution};
use crate::session::Session;
use crate::suggest;

/// Resolves and runs an external command (a plugin).
pub fn run(session: &Session, args: Vec<OsString>) -> Result<i32> {
    let resolved = match resolve(&session.search, &args) {
        Resolution::Found(r) => r,
        Resolution::NotExecutable(path) => {
            return Err(exec::cannot_run(
                &path,
                std::io::Error::from_raw_os_error(libc::EACCES),
            ))
        }
        Resolution::NotFound => return Err(unknown_command(session, &args)),
    };
    let plugin_args = args[resolved.consumed..].to_vec();
    let metadata = session.metadata_for(&resolved.name, &resolved.found);
    let stdin_context = metadata.as_ref().is_some_and(|m| m.wants_stdin_context());
    let context = session.plugin_context(&resolved, &plugin_args);
    let mut env = context.to_env();
    env.push((
        vars::CONTEXT,
        if stdin_context { "stdin" } else { "env" }.into(),
    ));
    let invocation = Invocation {
        program: resolved.found.path.clone(),
        args: plugin_args,
        env,
    };
    let prelude = stdin_context.then(|| context.to_json_line() + "\n");
    if !session.config.listeners.is_empty() {
        // Listeners need command.end, so app stays as the plugin's parent.
        let subject = lifecycle::Subject {
            context: &context,
            plugin: Some(invocation.program.clone()),
            builtin: None,
            args: lifecycle::arg_strings(&invocation.args),
            secrets: metadata.map(|m| m.secrets).unwrap_or_default(),
        };
        return lifecycle::observe(session, subject, || {
            exec::spawn(&invocation, prelude)?.wait()
        });
    }
    if let Some(prelude) = prelude {
        return Ok(exec::spawn(&invocation, Some(prelude))?.wait()?.exit_code());
    }
    Err(exec::exec(&invocation))
}

fn unknown_command(session: &Session, args: &[OsString]) -> Error {
    let name = args
        .first()
        .map(|a| a.to_string_lossy().into_owned())
        .unwrap_or_default();
    if name.is_empty() || name.contains('/') {
        return Error::InvalidName(name);
    }
    // Enumerating is fine here: this is the error path.
    let inventory = Inventory::scan(session, false);
    let plugin_names: Vec<String> = inventory.plugins.iter().map(|p| p.command_name()).collect();
    let candidates = BUILTINS
        .iter()
        .filter(|b| !b.starts_with("__"))
        .copied()
        .chain(plugin_names.iter().map(String::as_str))
        .chain(session.config.aliases.keys().map(String::as_str));
    let suggestion = suggest::closest(&name, candidates).map(String::from);
    Error::UnknownCommand { name, suggestion }
}
