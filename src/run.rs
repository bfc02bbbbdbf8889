//! The dispatcher's top level: parse → expand aliases → resolve → build the
//! context → run. Returns the exit code instead of exiting, so tests can call it.

use std::ffi::OsString;

use clap::Parser;

use crate::alias;
use crate::cli::{Cli, Cmd};
use crate::commands;
use crate::error::{Error, Result};
use crate::exec;
use crate::lifecycle;
use crate::session::{ConfigUse, Session};

/// Runs `app` with `argv` (program name first) and returns its exit code.
pub fn run(argv: Vec<OsString>) -> i32 {
    match dispatch(argv) {
        Ok(code) => code,
        Err(Error::Printed(code)) => code,
        Err(e) => {
            eprintln!("app: {}", printable(&e.to_string()));
            e.exit_code()
        }
    }
}

/// An error message as the terminal may show it: every line escaped (a
/// peer's text inside one, from serde, an archive or an index, cannot send
/// terminal codes), the line breaks of a message of several lines kept.
/// The one escaper every error passes on its way out; parts that could
/// hold a line break of their own are escaped where they are quoted.
fn printable(message: &str) -> String {
    message
        .split('\n')
        .map(app_plugin::text::escape_for_terminal)
        .collect::<Vec<_>>()
        .join("\n")
}

fn dispatch(argv: Vec<OsString>) -> Result<i32> {
    let argv = crate::cli::without_separator(argv);
    let mut cli = parse(&argv)?;
    let global_args = global_args(&argv, &cli);
    let config_use = ConfigUse::of(&cli);
    let mut session = Session::new(
        argv.clone(),
        cli.global.clone(),
        global_args.clone(),
        config_use,
    )?;
    let mut seen = Vec::new();
    // Aliases may expand to another alias or to a built-in, so parse again
    // after each expansion; `seen` stops loops.
    while let Some(Cmd::External(args)) = &cli.command {
        let Some(expanded) = alias::expand(&session.config, args, &mut seen)? else {
            break;
        };
        session.alias = Some(crate::context::AliasExpansion {
            name: seen.last().cloned().unwrap_or_default(),
            expansion: expanded[..expanded.len() - (args.len() - 1)]
                .iter()
                .map(|a| a.to_string_lossy().into_owned())
                .collect(),
        });
        let mut new_argv: Vec<OsString> = vec![argv[0].clone()];
        new_argv.extend(global_args.iter().map(OsString::from));
        new_argv.extend(expanded);
        cli = parse(&new_argv)?;
        session.global = cli.global.clone();
    }
    if session.global.help {
        return run_builtin(&session, Cmd::Help { topic: Vec::new() });
    }
    if session.global.version {
        return run_builtin(&session, Cmd::Version);
    }
    match cli.command {
        Some(Cmd::External(args)) => crate::external::run(&session, args),
        None => run_builtin(&session, Cmd::Help { topic: Vec::new() }),
        Some(builtin) => run_builtin(&session, builtin),
    }
}

/// Runs a built-in command, told to listeners when there are any.
fn run_builtin(session: &Session, cmd: Cmd) -> Result<i32> {
    if session.config.listeners.is_empty() {
        return commands::run(cmd, session);
    }
    let args: Vec<OsString> = session.argv[1 + session.global_args.len()..].to_vec();
    let name = builtin_name(&args);
    let context = session.context(&name, None, &args);
    let subject = lifecycle::Subject {
        context: &context,
        plugin: None,
        builtin: Some(name),
        args: lifecycle::arg_strings(&args),
        secrets: Vec::new(),
    };
    lifecycle::observe(session, subject, || {
        commands::run(cmd, session).map(exec::Outcome::Exited)
    })
}

/// `plugin list` for `app --log 3 plugin list`: the words of the built-in.
fn builtin_name(args: &[OsString]) -> String {
    let words: Vec<String> = args
        .iter()
        .map(|a| a.to_string_lossy().into_owned())
        .take_while(|w| !w.starts_with('-'))
        .take(2)
        .collect();
    if words.is_empty() {
        "help".to_string()
    } else {
        words.join(" ")
    }
}

fn parse(argv: &[OsString]) -> Result<Cli> {
    if let Some(cli) = crate::cli::parse_plain_external(argv) {
        return Ok(cli);
    }
    match Cli::try_parse_from(argv) {
        Ok(cli) => Ok(cli),
        // `app --help` (no command before the flag) is app's own help, with
        // the plugins; `app plugin install --help` is clap's.
        Err(e) if e.kind() == clap::error::ErrorKind::DisplayHelp => {
            if crate::cli::command_index(argv) < argv.len() {
                print!("{}", e.render());
                return Err(Error::Printed(0));
            }
            let rest: Vec<OsString> = argv
                .iter()
                .filter(|a| *a != "-h" && *a != "--help")
                .cloned()
                .collect();
            let mut cli = Cli::try_parse_from(rest).map_err(|e| Error::Usage(clap_message(&e)))?;
            cli.global.help = true;
            Ok(cli)
        }
        // `app plugin` alone: the usage of `plugin`, as is.
        Err(e) if e.kind() == clap::error::ErrorKind::DisplayHelpOnMissingArgumentOrSubcommand => {
            eprint!("{}", e.render());
            Err(Error::Printed(crate::error::code::USAGE))
        }
        Err(e) => Err(Error::Usage(clap_message(&e))),
    }
}

/// clap's message without its own `error: ` prefix (we add `app: `).
fn clap_message(e: &clap::Error) -> String {
    let text = e.render().to_string();
    text.strip_prefix("error: ").unwrap_or(&text).to_string()
}

/// The global flags as typed: everything between the program name and the command.
fn global_args(argv: &[OsString], cli: &Cli) -> Vec<String> {
    let end = match &cli.command {
        // clap knows exactly where an external command starts.
        Some(Cmd::External(args)) => argv.len() - args.len(),
        _ => crate::cli::command_index(argv),
    };
    argv[1..end]
        .iter()
        .map(|a| a.to_string_lossy().into_owned())
        .collect()
}

#[cfg(test)]
mod tests {
    #[test]
    fn every_line_of_an_error_is_escaped_and_its_line_breaks_kept() {
        let shown = super::printable("a\x1b[2J\u{9b}x\u{202e}\nnext\x07 line\r");
        assert_eq!(shown, "a\\x1b[2J\\u{9b}x\\u{202e}\nnext\\x07 line\\r");
    }
}
