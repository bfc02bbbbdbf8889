//! `run`: wires the tasks together and owns the lifecycle.
//!
//! SSE reader → router → bounded buffer → sink task, plus the API servers;
//! joined by the buffer and one stop type, the SDK's [`Shutdown`]. The start-up steps shared
//! with every plugin daemon (instance files, listeners, the serve loop, the
//! stop signals) are the SDK's [`app_plugin::daemon`]. SIGTERM or SIGINT
//! stops the reader (no more events are taken), lets the sink drain for at
//! most `--drain-timeout`, reports what could not be delivered, removes the
//! runtime files and returns. Under systemd it says so (`READY=1` once the
//! API listens, `STATUS=`, `STOPPING=1`; see [`crate::status`]) and the
//! sink loop pings the watchdog (see [`crate::sink`]).

use app_plugin::log::{error, info, notice, warn};
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Duration;

use app_plugin::daemon::{self, Limits, Listeners, Reason, Shutdown, Tcp, TcpBound};
use app_plugin::instance::InstanceFiles;
use tokio::net::UnixListener;
use tokio::task::JoinHandle;

use crate::api::{self, ApiState};
use crate::api_dead_letters::DeadLetterApi;
use crate::buffer::Buffer;
use crate::config::Config;
use crate::dead_letter::DeadLetters;
use crate::error::{Error, Failure};
use crate::lock::FileLock;
use crate::metrics::Metrics;
use crate::relay::Relay;
use crate::replay::Replayer;
use crate::resume::Start;
use crate::routes::{RouteStore, Routes};
use crate::sink::{Drain, Rules, Sink};

/// Runs the repeater; `Err` is a start-up failure (exit 1).
pub fn run(cfg: Config) -> Result<(), Error> {
    app_plugin::log::set_level(cfg.log);
    daemon::runtime()?.block_on(run_async(cfg))
}

async fn run_async(cfg: Config) -> Result<(), Error> {
    // Handlers first, so that a signal during start-up still cleans up.
    let shutdown = Shutdown::on_stop_signals()?;
    let Opened {
        listeners,
        locks,
        routes,
        start,
    } = open(&cfg).await?;
    let core = Core::new(&cfg, routes, &start)?;
    // A sink that can never work refuses the start before anything serves.
    let sink = cfg
        .sink
        .build(core.buffer.clone(), core.metrics.clone())
        .await
        .map_err(Failure::Sink)?;
    let state = api_state(&cfg, &core, cfg.sink.url());
    let Listeners { files, unix, tcp } = listeners;
    let api = Api::serve(&cfg, &state, unix, tcp);
    let tasks = Tasks::spawn(&cfg, &core, start, sink);
    announce(&cfg, &state, &files, &api).await;
    let status = Stage::spawn(|stop| {
        crate::status::report(
            tasks.sink_url.clone(),
            core.metrics.clone(),
            core.buffer.clone(),
            stop,
        )
    });

    let stall = Stage::spawn(|stop| {
        crate::sink::stall::watch(core.metrics.clone(), core.buffer.clone(), stop)
    });

    let why = shutdown.recv().await;
    stall.stop(why).await;
    status.stop(why).await;
    tasks.drain(&cfg, &core, why).await;
    core.flush_dead_letters().await;
    // The taps saw the drain; now their streams end, before the API's
    // grace period would cut them.
    core.buffer.taps().close();
    api.stop(why).await;
    drop(files);
    drop(locks);
    Ok(())
}

/// What only this instance may hold: its place, locks, routes and
/// checkpoint, then its listeners.
struct Opened {
    listeners: Listeners,
    locks: Vec<FileLock>,
    routes: Routes,
    start: Start,
}

async fn open(cfg: &Config) -> Result<Opened, Error> {
    // Refuse before touching anything if another instance runs under this name.
    let noun = format!("event repeater named {:?}", cfg.name);
    let claimed = daemon::claim(&cfg.runtime_dir, &cfg.name, &noun)?;
    // Then the state and checkpoint, held until the end: read only once no
    // other repeater can write them.
    let locks = crate::lock::hold(cfg).map_err(Error::Instance)?;
    let routes = crate::routes::state::load(&cfg.state_file).map_err(Failure::State)?;
    let start = crate::resume::open(cfg).map_err(Failure::Checkpoint)?;
    // Certificate problems are start-up errors, before anything is bound.
    let tls = match &cfg.api_tls {
        Some((cert, key)) => Some(daemon::tls::acceptor(cert, key).map_err(Error::Tls)?),
        None => None,
    };
    let tcp = cfg.listen.as_ref().map(|l| Tcp::new(l.clone()).tls(tls));
    let listeners = claimed.listen(tcp).await?;
    Ok(Opened {
        listeners,
        locks,
        routes,
        start,
    })
}

/// What the reader, the sink and the API share.
struct Core {
    metrics: Arc<Metrics>,
    buffer: Arc<Buffer>,
    routes: Arc<RouteStore>,
    letters: Option<Arc<DeadLetters>>,
}

impl Core {
    fn new(cfg: &Config, routes: Routes, start: &Start) -> Result<Core, Error> {
        let metrics = Arc::new(Metrics::default());
        let letters = match &cfg.dead_letter {
            Some((path, max)) => Some(Arc::new(
                DeadLetters::open(path, *max, metrics.clone()).map_err(|e| {
                    Failure::DeadLetter(format!(
                        "--dead-letter {}: {e}; fix it, name another file, or run with --dead-letter off",
                        path.display()
                    ))
                })?,
            )),
            None => None,
        };
        crate::metrics::set_problem(&metrics.source_start, &start.how);
        let buffer = Arc::new(
            Buffer::resuming(
                cfg.buffer_events,
                cfg.buffer_bytes,
                cfg.overflow,
                metrics.clone(),
                // A first event to relay again is not done: nothing is before it.
                start
                    .resume_after
                    .clone()
                    .filter(|_| start.replay.is_none()),
            )
            .with_dead_letters(letters.clone()),
        );
        let routes = RouteStore::new(routes, cfg.allowall, cfg.max_routes, cfg.state_file.clone());
        Ok(Core {
            metrics,
            buffer,
            routes: Arc::new(routes),
            letters,
        })
    }

    /// A router of the API's own, over the source's table, buffer and rules.
    fn relay(&self, cfg: &Config) -> Relay {
        Relay::new(
            self.routes.table(),
            self.buffer.clone(),
            self.metrics.clone(),
            Rules::new(cfg.sink.rules()),
        )
        .with_decoder(cfg.source.decoder.clone())
    }

    /// The letters kept until now, written before the process ends.
    async fn flush_dead_letters(&self) {
        if let Some(letters) = &self.letters {
            let flushed = tokio::time::timeout(Duration::from_secs(5), letters.flush()).await;
            if !matches!(flushed, Ok(Ok(()))) {
                warn!("the dead-letter file may miss the last letters: its writer did not answer within 5s");
            }
        }
    }
}

fn api_state(cfg: &Config, core: &Core, sink_url: String) -> Arc<ApiState> {
    Arc::new(ApiState {
        name: cfg.name.clone(),
        routes: core.routes.clone(),
        metrics: core.metrics.clone(),
        buffer: core.buffer.clone(),
        source: cfg.source.config.to_string(),
        source_config: cfg.source.config.clone(),
        sink: sink_url,
        started: api::Started::now(),
        body_timeout: cfg.request_timeout,
        dead_letters: core.letters.clone().map(|letters| {
            Arc::new(DeadLetterApi {
                replayer: Replayer {
                    relay: core.relay(cfg),
                    buffer: core.buffer.clone(),
                    letters: letters.clone(),
                    metrics: core.metrics.clone(),
                    busy: tokio::sync::Mutex::new(()),
                },
                letters,
            })
        }),
    })
}

/// The API servers: the unix socket, and TCP (with the token, maybe TLS).
struct Api {
    stop: Shutdown,
    servers: Vec<JoinHandle<()>>,
    tcp_url: Option<String>,
}

impl Api {
    fn serve(
        cfg: &Config,
        state: &Arc<ApiState>,
        unix: UnixListener,
        tcp: Option<TcpBound>,
    ) -> Api {
        let stop = Shutdown::new();
        let limits = Limits::new(cfg.request_timeout)
            .max_connections(cfg.max_connections)
            .write_timeout(cfg.request_timeout);
        let unix_app = api::router(state.clone());
        let mut servers = vec![spawn_server(
            "the unix socket",
            unix,
            unix_app,
            limits.clone(),
            &stop,
        )];
        let tcp_url = tcp.as_ref().map(|t| t.url.clone());
        if let Some(TcpBound {
            listener, url, tls, ..
        }) = tcp
        {
            let mut app = api::router(state.clone());
            if let Some(token) = &cfg.token {
                app = api::with_token(app, token.clone());
            }
            info!("API also on {url}");
            servers.push(spawn_server("TCP", listener, app, limits.tls(tls), &stop));
        }
        Api {
            stop,
            servers,
            tcp_url,
        }
    }

    /// Last, so that the API answers while the sink drains.
    async fn stop(self, why: Reason) {
        self.stop.trigger(why);
        for server in self.servers {
            let _ = tokio::time::timeout(Duration::from_secs(1), server).await;
        }
    }
}

fn spawn_server<L: daemon::Accept>(
    what: &'static str,
    listener: L,
    app: axum::Router,
    limits: Limits,
    stop: &Shutdown,
) -> JoinHandle<()> {
    let serving = daemon::serve(listener, app, limits, stop.clone());
    tokio::spawn(async move {
        if let Err(e) = serving.await {
            error!("the API on {what} stopped: {e}");
        }
    })
}

/// One line at the default level, so that a running repeater does not look
/// dead; and `READY=1`: the API tasks run and their listeners are bound.
async fn announce(cfg: &Config, state: &ApiState, files: &InstanceFiles, api: &Api) {
    let routes = state.routes.len().await;
    let plural = if routes == 1 { "" } else { "s" };
    notice!(
        "event repeater {:?} running: reads {}, publishes to {} ({routes} route{plural}{}); API on {}{}",
        cfg.name,
        cfg.source.config,
        state.sink,
        if cfg.allowall { ", --allowall" } else { "" },
        files.socket().display(),
        api.tcp_url.as_ref().map(|u| format!(" and {u}")).unwrap_or_default()
    );
    if routes == 0 && !cfg.allowall {
        notice!(
            "no routes and no --allowall: nothing is relayed until a route is added (see `app event-repeater manage --help`), or run with --allowall to relay every topic"
        );
    }
    app_plugin::notify::ready(&format!(
        "relaying from {} to {} ({routes} route{plural}); API on {}",
        cfg.source.config,
        state.sink,
        files.socket().display()
    ));
}

/// A background task with its own stop (the status line, the checkpoint).
struct Stage {
    stop: Shutdown,
    task: JoinHandle<()>,
}

impl Stage {
    fn spawn<F: std::future::Future<Output = ()> + Send + 'static>(
        start: impl FnOnce(Shutdown) -> F,
    ) -> Stage {
        let stop = Shutdown::new();
        let task = tokio::spawn(start(stop.clone()));
        Stage { stop, task }
    }

    /// Stops the task and waits for it to end.
    async fn stop(self, why: Reason) {
        self.stop.trigger(why);
        let _ = self.task.await;
    }
}

/// The relay's tasks: the reader, the sink, the checkpoint keeper.
struct Tasks {
    /// Stops the reader and starts the sink's drain.
    stop: Shutdown,
    source: JoinHandle<()>,
    sink: JoinHandle<usize>,
    sink_url: String,
    checkpoint: Option<Stage>,
}

impl Tasks {
    fn spawn(cfg: &Config, core: &Core, start: Start, sink: Box<dyn Sink>) -> Tasks {
        let mut relay = core.relay(cfg);
        if let (true, Some(file)) = (start.is_fresh(), &start.file) {
            relay = relay
                .with_first_checkpoint(crate::first_checkpoint::FirstCheckpoint::new(file.clone()));
        }
        let rt = crate::source::Runtime {
            relay: Arc::new(relay),
            metrics: core.metrics.clone(),
            max_event: cfg.max_source_event(),
            idle_timeout: cfg.source.idle_timeout,
            resume_after: start.resume_after,
            replay: start.replay,
        };
        let stop = Shutdown::new();
        let source = tokio::spawn(cfg.source.config.clone().run(rt, stop.clone()));
        let checkpoint = start.file.map(|file| {
            let b = core.buffer.clone();
            let on_disk = b.checkpoint().0;
            Stage::spawn(|stop| {
                crate::checkpoint::keep(file, on_disk, move || b.checkpoint(), stop)
            })
        });
        let drain = Drain {
            stop: stop.clone(),
            timeout: cfg.drain_timeout,
            watchdog: app_plugin::notify::Watchdog::from_env(),
        };
        let sink_url = cfg.sink.url();
        let sink = tokio::spawn(sink.run(drain));
        Tasks {
            stop,
            source,
            sink,
            sink_url,
            checkpoint,
        }
    }

    /// Stops taking events, lets the sink drain, keeps the last checkpoint
    /// and says what was not delivered.
    async fn drain(self, cfg: &Config, core: &Core, why: Reason) {
        // With the sink down nothing can drain: the sinks stop at once.
        let sink_down = !cfg.sink.connected(&core.metrics);
        if sink_down {
            info!("{why}: no longer taking events; the sink is down, so stopping at once");
        } else {
            info!(
                "{why}: no longer taking events; waiting up to {:?} for the sink",
                cfg.drain_timeout
            );
        }
        let held = core.buffer.stats();
        app_plugin::notify::stopping(&format!(
            "{why}: draining {} buffered events (at most {:?})",
            held.queued + held.inflight,
            cfg.drain_timeout
        ));
        self.stop.trigger(why);
        let _ = self.source.await;
        let undelivered = self.sink.await.unwrap_or_else(|_| {
            let stats = core.buffer.stats();
            stats.queued + stats.inflight
        });
        core.metrics
            .dropped_shutdown
            .fetch_add(undelivered as u64, Ordering::Relaxed);
        // Last checkpoint, synced; undelivered events stay after it.
        if let Some(checkpoint) = self.checkpoint {
            let _ = tokio::time::timeout(Duration::from_secs(5), checkpoint.stop(why)).await;
        }
        report(cfg, &core.metrics, &self.sink_url, undelivered, sink_down);
    }
}

/// What became of the accepted events, at stop.
fn report(cfg: &Config, metrics: &Metrics, sink_url: &str, undelivered: usize, sink_down: bool) {
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
}
