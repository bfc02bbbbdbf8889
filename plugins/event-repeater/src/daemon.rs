//! `run`: wires the tasks together and owns the lifecycle.
//!
//! SSE reader → router → bounded buffer → sink task, plus the API servers;
//! joined by the buffer and cancellation tokens. SIGTERM or SIGINT stops
//! the reader (no more events are taken), lets the sink drain for at most
//! `--drain-timeout`, reports what could not be delivered, removes the
//! runtime files and returns. Under systemd it says so (`READY=1` once the
//! API listens, `STATUS=`, `STOPPING=1`; see [`crate::status`]) and the
//! sink loop pings the watchdog (see [`crate::sink`]).

use std::sync::atomic::Ordering;
use std::sync::{Arc, RwLock};
use std::time::Duration;

use app_plugin::instance::InstanceFiles;
use tokio::signal::unix::{signal, SignalKind};
use tokio_util::sync::CancellationToken;

use crate::addr::{join_host_port, split_host_port};
use crate::api::{self, ApiState};
use crate::buffer::Buffer;
use crate::config::Config;
use crate::error::Error;
use crate::metrics::Metrics;
use crate::relay::{Relay, SharedTable};
use crate::routes::Table;
use crate::sink::{Drain, Rules};
use crate::source::Source;

/// Runs the repeater; `Err` is a start-up failure (exit 1).
pub fn run(cfg: Config) -> Result<(), Error> {
    app_plugin::log::set_level(cfg.log);
    app_plugin::instance::unblock_stop_signals();
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .map_err(|source| Error::Runtime {
            what: "start the async runtime",
            source,
        })?;
    runtime.block_on(run_async(cfg))
}

async fn run_async(cfg: Config) -> Result<(), Error> {
    // Handlers first, so that a signal during start-up still cleans up.
    let mut sigterm = signal(SignalKind::terminate()).map_err(|source| Error::Runtime {
        what: "handle SIGTERM",
        source,
    })?;
    let mut sigint = signal(SignalKind::interrupt()).map_err(|source| Error::Runtime {
        what: "handle SIGINT",
        source,
    })?;

    // Refuse before touching anything if another instance runs under this name.
    let mut files = InstanceFiles::claim(&cfg.runtime_dir, &cfg.name).map_err(|e| {
        Error::Instance(e.describe(&format!("event repeater named {:?}", cfg.name)))
    })?;
    if files.replaced_stale() {
        info!("replaced the stale socket {}", files.socket().display());
    }
    // Then the state and checkpoint, held until the end: read only once no
    // other repeater can write them.
    let _locks = crate::lock::hold(&cfg).map_err(Error::Instance)?;
    let routes = crate::state::load(&cfg.state_file).map_err(Error::State)?;
    let start = crate::checkpoint::open(&cfg).map_err(Error::Checkpoint)?;

    // Certificate problems are start-up errors, before anything is bound.
    let tls = match &cfg.api_tls {
        Some((cert, key)) => Some(crate::serve::tls_acceptor(cert, key).map_err(Error::Tls)?),
        None => None,
    };
    let tcp = match &cfg.listen {
        Some(listen) => {
            let l = tokio::net::TcpListener::bind(listen)
                .await
                .map_err(|source| Error::Listen {
                    what: listen.clone(),
                    source,
                })?;
            let addr = l.local_addr().map_err(|source| Error::Listen {
                what: listen.clone(),
                source,
            })?;
            let host = split_host_port(listen)
                .map(|(h, _)| h)
                .unwrap_or_else(|| addr.ip().to_string());
            let scheme = if cfg.api_tls.is_some() {
                "https"
            } else {
                "http"
            };
            let url = format!("{scheme}://{}", join_host_port(&host, addr.port()));
            files
                .write_listen(&url)
                .map_err(|e| Error::Instance(e.to_string()))?;
            Some((l, url))
        }
        None => None,
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

    let metrics = Arc::new(Metrics::default());
    let buffer = Arc::new(Buffer::resuming(
        cfg.buffer_events,
        cfg.buffer_bytes,
        cfg.overflow,
        metrics.clone(),
        // A first event to relay again is not done: nothing is before it.
        start
            .resume_after
            .clone()
            .filter(|_| start.replay.is_none()),
    ));
    let table: SharedTable = Arc::new(RwLock::new(Arc::new(Table::build(
        &routes,
        cfg.allowall,
        None,
    ))));
    // A sink that can never work refuses the start before anything serves.
    let sink = cfg
        .sink
        .build(buffer.clone(), metrics.clone())
        .await
        .map_err(Error::Sink)?;
    let sink_url = cfg.sink.url();
    let state = Arc::new(ApiState {
        name: cfg.name.clone(),
        routes: tokio::sync::Mutex::new(routes.clone()),
        table: table.clone(),
        allowall: cfg.allowall,
        state_file: cfg.state_file.clone(),
        metrics: metrics.clone(),
        buffer: buffer.clone(),
        source: cfg.source.to_string(),
        source_addr: cfg.source.clone(),
        sink: sink_url.clone(),
        started: api::Started::now(),
        max_routes: cfg.max_routes,
        body_timeout: cfg.request_timeout,
    });

    let api_stop = CancellationToken::new();
    let mut servers = Vec::new();
    {
        let app = api::router(state.clone());
        let stop = api_stop.clone();
        let max = cfg.max_connections;
        servers.push(tokio::spawn(crate::serve::serve(
            unix,
            None,
            app,
            max,
            cfg.request_timeout,
            stop,
        )));
    }
    let tcp_url = tcp.as_ref().map(|(_, url)| url.clone());
    if let Some((listener, url)) = tcp {
        let mut app = api::router(state.clone());
        if let Some(token) = &cfg.token {
            app = api::with_token(app, token.clone());
        }
        let stop = api_stop.clone();
        info!("API also on {url}");
        servers.push(tokio::spawn(crate::serve::serve(
            listener,
            tls.clone(),
            app,
            cfg.max_connections,
            cfg.request_timeout,
            stop,
        )));
    }

    let stop = CancellationToken::new();
    let mut relay = Relay::new(
        table,
        buffer.clone(),
        metrics.clone(),
        Rules::new(cfg.sink.rules()),
    );
    if let (true, Some(file)) = (start.is_fresh(), &start.file) {
        relay = relay
            .with_first_checkpoint(crate::first_checkpoint::FirstCheckpoint::new(file.clone()));
    }
    let relay = Arc::new(relay);
    let source = Source {
        addr: cfg.source.clone(),
        relay,
        metrics: metrics.clone(),
        max_event: cfg.max_source_event(),
        resume_after: start.resume_after,
        replay: start.replay,
        idle_timeout: cfg.source_idle_timeout,
    };
    let source_task = tokio::spawn(source.run(stop.clone()));
    let checkpoint_stop = CancellationToken::new();
    let checkpoint_task = start.file.map(|file| {
        let b = buffer.clone();
        tokio::spawn(crate::checkpoint::keep(
            file,
            move || b.checkpoint(),
            checkpoint_stop.clone(),
        ))
    });
    let drain = Drain {
        stop: stop.clone(),
        timeout: cfg.drain_timeout,
        watchdog: app_plugin::notify::Watchdog::from_env(),
    };
    let sink_task = tokio::spawn(sink.run(drain));
    let routes = state.routes.lock().await.len();
    // One line at the default level, so that a running repeater does not look dead.
    notice!(
        "event repeater {:?} running: reads {}, publishes to {} ({routes} route{}{}); API on {}{}",
        cfg.name,
        cfg.source,
        sink_url,
        if routes == 1 { "" } else { "s" },
        if cfg.allowall { ", --allowall" } else { "" },
        files.socket().display(),
        tcp_url.map(|u| format!(" and {u}")).unwrap_or_default()
    );
    if routes == 0 && !cfg.allowall {
        notice!(
            "no routes and no --allowall: nothing is relayed until a route is added (see `app event-repeater manage --help`), or run with --allowall to relay every topic"
        );
    }
    // The API tasks run and their listeners are bound: requests are answered.
    app_plugin::notify::ready(&format!(
        "relaying from {} to {sink_url} ({routes} route{}); API on {}",
        cfg.source,
        if routes == 1 { "" } else { "s" },
        files.socket().display()
    ));
    let status_stop = CancellationToken::new();
    let status_task = tokio::spawn(crate::status::report(
        sink_url.clone(),
        metrics.clone(),
        buffer.clone(),
        status_stop.clone(),
    ));

    let why = tokio::select! {
        _ = sigterm.recv() => "SIGTERM",
        _ = sigint.recv() => "SIGINT",
    };
    // With the sink down nothing can drain: the sinks stop at once.
    let sink_down = !cfg.sink.connected(&metrics);
    if sink_down {
        info!("{why}: no longer taking events; the sink is down, so stopping at once");
    } else {
        info!(
            "{why}: no longer taking events; waiting up to {:?} for the sink",
            cfg.drain_timeout
        );
    }
    status_stop.cancel();
    let _ = status_task.await;
    let held = buffer.stats();
    app_plugin::notify::stopping(&format!(
        "{why}: draining {} buffered events (at most {:?})",
        held.queued + held.inflight,
        cfg.drain_timeout
    ));
    stop.cancel();
    let _ = source_task.await;
    let undelivered = sink_task
        .await
        .unwrap_or_else(|_| buffer.stats().queued + buffer.stats().inflight);
    metrics
        .dropped_shutdown
        .fetch_add(undelivered as u64, Ordering::Relaxed);
    // Last checkpoint, synced; undelivered events stay after it.
    checkpoint_stop.cancel();
    if let Some(task) = checkpoint_task {
        let _ = tokio::time::timeout(Duration::from_secs(5), task).await;
    }
    let accepted = metrics.accepted.load(Ordering::Relaxed);
    app_plugin::notify::status(&format!(
        "stopped: {} of {accepted} accepted events delivered",
        accepted.saturating_sub(undelivered as u64)
    ));
    if undelivered > 0 && sink_down {
        warn!(
            "stopped at once: the sink {sink_url} is down, so nothing could drain; {undelivered} of {accepted} accepted events were not delivered{}",
            if cfg.checkpoint {
                " and stay after the checkpoint: the next start asks the source for them again"
            } else {
                " (with --checkpoint off they are lost)"
            }
        );
    } else if undelivered > 0 {
        warn!(
            "stopped; {undelivered} of {accepted} accepted events were not delivered (not acknowledged within --drain-timeout {:?})",
            cfg.drain_timeout
        );
    } else {
        info!("stopped; all {accepted} accepted events were delivered");
    }
    api_stop.cancel();
    for server in servers {
        let _ = tokio::time::timeout(Duration::from_secs(1), server).await;
    }
    drop(files);
    Ok(())
}
