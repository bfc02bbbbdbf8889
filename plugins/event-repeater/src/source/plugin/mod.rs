//! The event-plugin dialect (`app event-time`'s): `--source` is a plugin
//! instance name (its socket in `APP_RUNTIME_DIR/plugins/`), a socket path
//! or a bare `http://HOST:PORT`; the stream is `GET /events?topic=.` (every
//! topic) and the topic list `GET /topics`. It claims no `--source` text:
//! it is the kind a text no other kind claims is.

mod addr;

use std::sync::Arc;
use std::time::Duration;

use app_plugin::daemon::Shutdown;
use futures_util::future::BoxFuture;
use futures_util::FutureExt;
use http_body_util::BodyExt;

use crate::source::reader::{self, get, Dialect, Peer, Via};
use crate::source::{NoFlags, Runtime, Setup, SourceConfig, SourceKind};

pub use addr::{parse_source, BasicAuth, SourceAddr};

/// An event plugin, by its address.
#[derive(Debug)]
pub struct Plugin {
    addr: SourceAddr,
}

impl SourceKind for Plugin {
    const NAME: &'static str = "plugin";
    const ABOUT: &'static str =
        "An event plugin (`app event-time`'s dialect): `GET /events?topic=.`";
    const BRIEF: &'static str = "event-time's dialect";
    const WHAT: &'static str = "an event plugin";
    const CHOSEN_BY: &'static str = "a plugin name, a socket path or a bare http://HOST:PORT";
    type Args = NoFlags;

    fn configure(_: NoFlags, setup: &Setup) -> Result<Arc<dyn SourceConfig>, String> {
        Ok(Arc::new(Plugin {
            addr: parse_source(setup.source, setup.plugin_dir)?,
        }))
    }
}

impl std::fmt::Display for Plugin {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.addr.fmt(f)
    }
}

impl SourceConfig for Plugin {
    fn run(self: Arc<Self>, rt: Runtime, cancel: Shutdown) -> BoxFuture<'static, ()> {
        reader::run(self, rt, cancel).boxed()
    }

    fn topics(&self) -> BoxFuture<'_, Result<Vec<String>, String>> {
        topics(self.peer()).boxed()
    }
}

impl Dialect for Plugin {
    fn peer(&self) -> Peer<'_> {
        let (via, auth) = match &self.addr {
            SourceAddr::Unix(path) => (Via::Unix(path), None),
            SourceAddr::Tcp { host, port, auth } => (
                Via::Tcp {
                    host,
                    port: *port,
                    tls: None,
                },
                auth.as_ref(),
            ),
        };
        Peer {
            via,
            auth,
            headers: &[],
        }
    }

    fn stream_target(&self) -> &str {
        "/events?topic=."
    }

    fn unreachable_hint(&self) -> &'static str {
        " (start it with `app event-time`, or see --source)"
    }
}

/// The longest `GET /topics` answer read from a source.
const MAX_TOPICS_BODY: usize = 256 * 1024;

/// The plugin's `GET /topics`: the topics it serves now. For the API's
/// `GET /source/topics`, so that a manager on another machine can check a
/// route against the source only the repeater can reach.
async fn topics(peer: Peer<'_>) -> Result<Vec<String>, String> {
    let body = get(&peer, "/topics", &[("accept", "application/json")], false)
        .await
        .map_err(|e| e.to_string())?
        .into_body();
    let limited = http_body_util::Limited::new(body, MAX_TOPICS_BODY);
    let bytes = tokio::time::timeout(Duration::from_secs(2), limited.collect())
        .await
        .map_err(|_| "the source's GET /topics did not finish within 2s".to_string())?
        .map_err(|e| format!("cannot read the source's GET /topics: {e}"))?
        .to_bytes();
    serde_json::from_slice(&bytes)
        .map_err(|e| format!("the source's GET /topics is not a JSON array of strings: {e}"))
}
