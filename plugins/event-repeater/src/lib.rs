//! `app-event-repeater`: relays events from an event source (SSE) to an MQTT
//! broker, NATS (JetStream or core) or stderr, with routes managed over a
//! REST API.
//!
//! Data flows through one module per step:
//! [`source`] (one trait; the event plugin or a plain SSE feed, chosen
//! once from [`source::KINDS`], read with [`sse`] parsing and [`event`]
//! decoding) →
//! [`relay`] (routing by [`routes`]) → [`buffer`] (bounded, with an
//! [`overflow`] policy) → [`sink`] (one trait; [`sink::mqtt`], [`sink::nats`]
//! or [`sink::stderr`], chosen once from [`sink::KINDS`]); the buffer's
//! [`ledger`] computes the checkpoint, which [`checkpoint`] keeps on disk to
//! resume from after a restart. `docs/repeater-design.md` describes the
//! pipeline and how to add a sink or a source (one trait each,
//! [`sink::KINDS`] and [`source::KINDS`]).
//! Around it: [`api`] (REST: the types, paths and metric names both it and
//! the manager use are the [`app_event_repeater_api`] crate's; bodies read
//! by [`api_body`], errors in [`api_error`]), [`state`] (the routes
//! file), [`metrics`], [`app_plugin::daemon`] (socket, pid, listen files, listeners, the serve
//! loop, the stop signals),
//! [`daemon`] (lifecycle and shutdown), and the command line in [`cli`],
//! [`config`] and [`complete`]; [`files`] reads and writes the repeater's
//! files for all of them.

pub mod api;
pub mod api_body;
pub mod api_dead_letters;
pub mod api_error;
pub mod api_tap;
pub mod backoff;
pub mod basic_auth;
pub mod buffer;
pub mod checkpoint;
pub mod cli;
pub mod complete;
pub mod config;
pub mod daemon;
pub mod dead_letter;
pub mod decode;
#[cfg(test)]
mod doc_quotes;
pub mod error;
pub mod event;
pub mod event_key;
pub mod files;
pub mod first_checkpoint;
pub mod flag_values;
pub mod kind_flags;
pub mod ledger;
pub mod lock;
pub mod metrics;
pub mod options_file;
pub mod overflow;
pub mod reason;
pub mod relay;
pub mod replay;
pub mod resume;
pub mod routes;
pub mod sink;
pub mod source;
pub mod sse;
pub mod status;
pub mod tap;
pub mod tls_client;

use std::ffi::OsString;
use std::process::ExitCode;

/// The name used in messages.
pub const BIN_NAME: &str = "app-event-repeater";

/// This plugin's version: `--version`, `/healthz` and `/metrics`.
pub const VERSION: &str = env!("CARGO_PKG_VERSION");

/// The plugin's `__app_metadata` answer.
pub fn metadata() -> app_plugin::metadata::Metadata {
    app_plugin::metadata::Metadata::new(
        "event-repeater",
        env!("CARGO_PKG_VERSION"),
        "Relay events from an event source to MQTT, NATS, Kafka, RabbitMQ Streams or stderr",
    )
    .completion()
}

/// The whole program; `args` are the arguments after the program name.
pub fn main_with_args(args: Vec<OsString>) -> ExitCode {
    run(args)
}

/// Runs the command and returns the exit code: 0 ok, 1 runtime failure,
/// 2 usage error.
pub fn run(args: Vec<OsString>) -> ExitCode {
    // The protocol's answers, the logger and the context, then the command.
    app_plugin::Plugin::new(metadata())
        .complete(complete::completion)
        .run_with(args, command)
}

/// The command line, then `run` until a signal.
fn command(call: app_plugin::plugin::Call) -> u8 {
    // rustls, rumqttc and async-nats speak through `log` and `tracing`:
    // their lines at --log 4 and 5, with their target.
    app_plugin::log_bridge::install();
    // `app event-repeater` alone: the subcommands, on stderr with exit 2,
    // as `app plugin` alone does (a usage error with its usage).
    let cli: cli::Cli =
        match app_plugin::usage::parse(call.argv(BIN_NAME), "`app event-repeater run --help`") {
            Ok(c) => c,
            Err(code) => return code,
        };
    let cli::Command::Run(run_args) = cli.command;
    match start(&run_args, &call.context) {
        Ok(()) => error::code::OK,
        Err(e) => {
            app_plugin::log::fatal(format_args!("{e}"));
            e.exit_code()
        }
    }
}

/// `run`: the configuration, then the daemon until a signal.
fn start(run_args: &cli::RunArgs, ctx: &app_plugin::context::Context) -> Result<(), error::Error> {
    options_file::check(std::env::var_os(options_file::VAR).as_deref()).map_err(error::usage)?;
    let password = std::env::var("APP_MQTT_PASSWORD").ok();
    let cfg = config::Config::new(run_args, ctx, password).map_err(error::usage)?;
    daemon::run(cfg)
}
