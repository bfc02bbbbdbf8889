//! `app-event-time`, the example event source of `app`: timer events (and an
//! optional numbered test stream) served as Server-Sent Events over a unix
//! socket and, optionally, TCP. `docs/event-time.md` is the user's guide.
//!
//! The modules, in the order data flows:
//! [`cli`] (flags → [`cli::Config`]) → [`app_plugin::instance`] (socket, pid and
//! listen files) → [`sources`] (timers and `--rate` publish) → [`hub`] (numbering,
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
use app_plugin::instance::InstanceFiles;
use app_plugin::plugin::Call;
use app_plugin::Plugin;
use clap::Parser;
use tokio::signal::unix::{signal, SignalKind};

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
    let cli = match Cli::try_parse_from(argv) {
        Ok(cli) => cli,
        Err(e) if e.use_stderr() => {
            log::fatal(format_args!(
                "{}; see app-event-time --help",
                app_plugin::usage::one_line(&e)
            ));
            return ExitCode::from(EXIT_USAGE);
        }
        Err(e) => {
            // --help and --version.
            let _ = e.print();
            return ExitCode::SUCCESS;
        }
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
        Config::new(cli, ctx.dirs().plugin_runtime_dir(), ctx.log).map_err(Error::Usage)?;
    log::set_level(config.log);
    app_plugin::instance::unblock_stop_signals();
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .map_err(|source| Error::Runtime {
            what: "start the async runtime",
            source,
        })?;
    let result = runtime.block_on(serve(config));
    // Open streams never end by themselves; drop them rather than wait.
    runtime.shutdown_timeout(Duration::from_millis(200));
    result
}

/// Takes the instance's place, publishes and serves until SIGTERM or SIGINT,
/// then removes the runtime files.
pub async fn serve(config: Config) -> Result<(), Error> {
    // Handlers first, so that a signal during start-up still cleans up.
    let mut term = signal(SignalKind::terminate()).map_err(|source| Error::Runtime {
        what: "handle SIGTERM",
        source,
    })?;
    let mut int = signal(SignalKind::interrupt()).map_err(|source| Error::Runtime {
        what: "handle SIGINT",
        source,
    })?;

    // Refuse before touching anything if another instance runs under this name.
    let mut files = InstanceFiles::claim(&config.runtime_dir, &config.name)
        .map_err(|e| Error::Instance(e.to_string()))?;
    if files.replaced_stale() {
        app_plugin::log!(
            INFO,
            "replaced the stale socket {} left by a process that is gone",
            files.socket().display()
        );
    }
    let tcp = match config.listen {
        None => None,
        Some(addr) => {
            let listener = tokio::net::TcpListener::bind(addr)
                .await
                .map_err(|source| Error::Listen {
                    what: addr.to_string(),
                    source,
                })?;
            let local = listener.local_addr().map_err(|source| Error::Listen {
                what: addr.to_string(),
                source,
            })?;
            files
                .write_listen(&format!("http://{local}"))
                .map_err(|e| Error::Instance(e.to_string()))?;
            if !local.ip().is_loopback() {
                app_plugin::log!(WARN, "serving on {local}, which is not a loopback address: anyone who can reach it can read the events");
            }
            Some((listener, local))
        }
    };
    files
        .write_pid()
        .map_err(|e| Error::Instance(e.to_string()))?;
    // The socket comes last: whoever sees it finds the other files in place.
    let unix = files.bind().map_err(|e| Error::Instance(e.to_string()))?;
    let unix = unix
        .set_nonblocking(true)
        .and_then(|()| tokio::net::UnixListener::from_std(unix))
        .map_err(|source| Error::Listen {
            what: files.socket().display().to_string(),
            source,
        })?;

    let catalogue = Arc::new(Catalogue::new(config.rate.is_some()));
    let hub = Arc::new(Hub::new(config.history));
    sources::spawn_timers(&hub, &catalogue, &app_plugin::notify::Watchdog::from_env());
    if let Some(rate) = config.rate {
        sources::spawn_numbered(&hub, &catalogue, rate, config.count);
    }
    let app = server::router(AppState {
        hub,
        catalogue,
        keep_alive: config.keep_alive,
    });
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
            .map(|(_, local)| format!(" and http://{local}"))
            .unwrap_or_default(),
        std::process::id()
    );

    let unix_server = server::serve(
        || async { unix.accept().await.map(|(s, _)| s) },
        app.clone(),
    );
    let tcp_server = async move {
        match tcp {
            Some((l, _)) => {
                let accept = || async {
                    let (s, _) = l.accept().await?;
                    // Events are small writes; don't let Nagle hold them back.
                    let _ = s.set_nodelay(true);
                    Ok(s)
                };
                server::serve(accept, app).await
            }
            None => std::future::pending().await,
        }
    };
    // Bound, and served from the select below on its first poll.
    app_plugin::notify::ready(&format!(
        "serving timer events on {}",
        files.socket().display()
    ));
    let outcome = tokio::select! {
        _ = term.recv() => { app_plugin::log!(INFO, "SIGTERM: stopping"); Ok(()) }
        _ = int.recv() => { app_plugin::log!(INFO, "SIGINT: stopping"); Ok(()) }
        source = unix_server => Err(Error::Stopped { what: "unix socket", source }),
        source = tcp_server => Err(Error::Stopped { what: "TCP", source }),
    };
    app_plugin::notify::stopping("stopping: closing the streams");
    drop(files);
    outcome
}
