//! `app-event-time`, the example event source of `app`: timer events (and an
//! optional numbered test stream) served as Server-Sent Events over a unix
//! socket and, optionally, TCP. `docs/event-time.md` is the user's guide.
//!
//! The modules, in the order data flows:
//! [`cli`] (flags → [`cli::Config`]) → [`app_plugin::daemon`] (socket, pid and
//! listen files, the listeners, the serve loop, the stop) → [`sources`] (timers and `--rate` publish) → [`hub`] (numbering,
//! history, fan-out) → [`sse`] (one subscriber's stream) → [`server`] (routes).
//! [`topics`] holds the catalogue and the matching rules, [`event`] the event
//! format, [`complete`] the plugin protocol answers; logging is the SDK's
//! ([`app_plugin::log`]).

pub mod cli;
pub mod complete;
pub mod error;
pub mod event;
pub mod hub;
pub mod server;
pub mod sources;
pub mod sse;
pub mod topics;

use std::ffi::OsString;
use std::process::ExitCode;
use std::sync::Arc;
use std::time::Duration;

use app_plugin::context::Context;
use app_plugin::daemon::{self, Limits, Listeners, Shutdown, Tcp};
use app_plugin::plugin::Call;
use app_plugin::Plugin;

use crate::cli::{Cli, Config};
use crate::hub::Hub;
use crate::server::AppState;
use crate::topics::Catalogue;
use app_plugin::log::{self, INFO, WARN};

pub use crate::error::code::{FAILURE as EXIT_FAILURE, USAGE as EXIT_USAGE};
use crate::error::Error;

/// Runs the command line `args` (program name first); returns the exit code.
pub fn run(mut args: Vec<OsString>) -> ExitCode {
    let program = if args.is_empty() {
        OsString::from("app-event-time")
    } else {
        args.remove(0)
    };
    // The protocol's answers, the logger and the context, then the server.
    Plugin::new(complete::metadata())
        .complete(complete::completion)
        .run_with(args, |call| serve_call(program, call))
}

/// The command line, then the server until a signal.
fn serve_call(program: OsString, call: Call) -> ExitCode {
    let argv: Vec<OsString> = std::iter::once(program).chain(call.args).collect();
    let cli: Cli = match app_plugin::usage::parse(argv, "app-event-time --help") {
        Ok(cli) => cli,
        Err(code) => return ExitCode::from(code),
    };
    match start(cli, &call.context) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            // The error that ends the program, at any level.
            log::fatal(format_args!("{e}"));
            ExitCode::from(e.exit_code())
        }
    }
}

/// The configuration, then the server until a signal.
fn start(cli: Cli, ctx: &Context) -> Result<(), Error> {
    let config =
        Config::new(cli, ctx.dirs().plugin_runtime_dir(), ctx.log).map_err(error::usage)?;
    log::set_level(config.log);
    let runtime = daemon::runtime()?;
    let result = runtime.block_on(serve(config));
    // Open streams never end by themselves; drop them rather than wait.
    runtime.shutdown_timeout(Duration::from_millis(200));
    result
}

/// Takes the instance's place, publishes and serves until SIGTERM or SIGINT,
/// then removes the runtime files.
pub async fn serve(config: Config) -> Result<(), Error> {
    // Handlers first, so that a signal during start-up still cleans up.
    let shutdown = Shutdown::on_stop_signals()?;
    let tcp = config.listen.map(|addr| Tcp::new(addr.to_string()));
    let Listeners { files, unix, tcp } =
        daemon::claim(&config.runtime_dir, &config.name, "instance")?
            .listen(tcp)
            .await?;
    if let Some(local) = tcp
        .as_ref()
        .map(|t| t.local)
        .filter(|l| !l.ip().is_loopback())
    {
        app_plugin::log!(WARN, "serving on {local}, which is not a loopback address: anyone who can reach it can read the events");
    }
    let app = start_sources(&config);
    // One line at the default level, so that a running source does not look dead.
    app_plugin::notice!(
        "event-time {:?} serving timer events{} on {}{} (pid {})",
        config.name,
        if config.rate.is_some() {
            " and test/seq"
        } else {
            ""
        },
        files.socket().display(),
        tcp.as_ref()
            .map(|t| format!(" and {}", t.url))
            .unwrap_or_default(),
        std::process::id()
    );

    let limits = Limits::new(server::REQUEST_TIMEOUT).max_buf_size(server::MAX_CONN_BUFFER);
    let unix_server = daemon::serve(unix, app.clone(), limits.clone(), shutdown.clone());
    let tcp_server = async {
        match tcp {
            Some(t) => daemon::serve(t.listener, app, limits, shutdown.clone()).await,
            None => std::future::pending().await,
        }
    };
    // Bound, and served from the select below on its first poll.
    app_plugin::notify::ready(&format!(
        "serving timer events on {}",
        files.socket().display()
    ));
    let outcome = tokio::select! {
        biased;
        _ = shutdown.recv() => Ok(()),
        r = unix_server => r.map_err(|source| Error::Stopped { what: "unix socket", source }),
        r = tcp_server => r.map_err(|source| Error::Stopped { what: "TCP", source }),
    };
    // Said after the select, not in its first arm: the signal can fire
    // between that arm's poll and a server's, which then returns first.
    if let Some(why) = shutdown.reason() {
        app_plugin::log!(INFO, "{why}: stopping");
    }
    app_plugin::notify::stopping("stopping: closing the streams");
    drop(files);
    outcome
}

/// The hub, its timers (and `--rate`'s numbered stream), and the routes
/// that serve them.
fn start_sources(config: &Config) -> axum::Router {
    let catalogue = Arc::new(Catalogue::new(config.rate.is_some()));
    let hub = Arc::new(Hub::new(config.history));
    sources::spawn_timers(&hub, &catalogue, &app_plugin::notify::Watchdog::from_env());
    if let Some(rate) = config.rate {
        sources::spawn_numbered(&hub, &catalogue, rate, config.count);
    }
    server::router(AppState {
        hub,
        catalogue,
        keep_alive: config.keep_alive,
    })
}
