//! A plain SSE feed (`--source https://host/path?query`, `--source-kind
//! sse`): one `GET` of that URL, with the headers, token and CA its own
//! flags give, read as a plain event stream (no `/topics`, no `?topic=`).
//! It claims `https://` URLs and `http://` ones with a path or a query;
//! the event-plugin dialect takes the rest.
//!
//! Header values may be secrets: they are kept as header values only and
//! never shown (`Debug` and `Display` name the headers, not their values);
//! the URL is shown with its userinfo and every query value masked.

mod headers;

use std::path::PathBuf;
use std::sync::Arc;

use app_plugin::address::{Rules, Scheme};
use app_plugin::daemon::Shutdown;
use futures_util::future::BoxFuture;
use futures_util::FutureExt;
use hyper::header::{HeaderName, HeaderValue};

use crate::basic_auth::BasicAuth;
use crate::source::reader::{self, Dialect, Peer, Via};
use crate::source::{Runtime, Setup, SourceConfig, SourceKind};

pub use headers::{MAX_HEADERS, MAX_HEADER_BYTES};

/// A feed's own flags.
#[derive(Debug, Clone, clap::Args)]
#[command(next_help_heading = "SSE feed source (--source-kind sse)")]
#[group(skip)]
pub struct FeedArgs {
    /// A header sent to an SSE feed, 'Name: value' (repeatable; never shown).
    #[arg(long, value_name = "HEADER")]
    pub source_header: Vec<String>,

    /// A file holding a token sent to the feed as 'Authorization: Bearer TOKEN'.
    #[arg(long, value_name = "FILE")]
    pub source_token_file: Option<PathBuf>,

    /// CA certificates (PEM) to trust for an https:// feed instead of the system's.
    #[arg(long, value_name = "FILE")]
    pub source_ca_file: Option<PathBuf>,
}

impl SourceKind for Feed {
    const NAME: &'static str = "sse";
    const ABOUT: &'static str = "Any SSE feed: one `GET` of the URL as given";
    const BRIEF: &'static str = "any feed, the URL as given";
    const WHAT: &'static str = "a plain SSE feed";
    const CHOSEN_BY: &'static str = "an http(s):// URL with a path";
    const CLAIMED: &'static str = "for https:// and for http:// URLs with a path or query";
    type Args = FeedArgs;

    /// `https://`, or `http://` with a path or a query: the event plugin's
    /// `http://HOST:PORT` has neither.
    fn claims(source: &str) -> bool {
        if source.starts_with("https://") {
            return true;
        }
        match url::Url::parse(source) {
            Ok(u) if u.scheme() == "http" => u.path() != "/" || u.query().is_some(),
            _ => false,
        }
    }

    fn configure(args: FeedArgs, setup: &Setup) -> Result<Arc<dyn SourceConfig>, String> {
        Ok(Arc::new(Feed::new(setup.source, &args)?))
    }
}

impl std::fmt::Display for Feed {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.shown)
    }
}

impl SourceConfig for Feed {
    fn run(self: Arc<Self>, rt: Runtime, cancel: Shutdown) -> BoxFuture<'static, ()> {
        reader::run(self, rt, cancel).boxed()
    }

    fn topics(&self) -> BoxFuture<'_, Result<Vec<String>, String>> {
        async { Err("a plain SSE feed (--source-kind sse) has no topic list".to_string()) }.boxed()
    }
}

impl Dialect for Feed {
    fn peer(&self) -> Peer<'_> {
        Peer {
            via: Via::Tcp {
                host: &self.host,
                port: self.port,
                tls: self.tls.as_ref(),
            },
            auth: self.auth.as_ref(),
            headers: &self.headers,
        }
    }

    fn stream_target(&self) -> &str {
        &self.target
    }
}

/// A plain SSE feed, checked.
#[derive(Clone)]
pub struct Feed {
    /// The URL as shown: userinfo and query values masked.
    pub shown: String,
    pub tls: Option<Arc<rustls::ClientConfig>>,
    pub host: String,
    pub port: u16,
    /// The request target: path and query, as given.
    pub target: String,
    pub auth: Option<BasicAuth>,
    /// Sent with every request: `--source-header`s, the token, the
    /// default `User-Agent`.
    pub headers: Vec<(HeaderName, HeaderValue)>,
}

impl std::fmt::Debug for Feed {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let names: Vec<&str> = self.headers.iter().map(|(n, _)| n.as_str()).collect();
        write!(f, "Feed({}, headers {names:?})", self.shown)
    }
}

/// What `--source` takes for a plain feed: `http://` or `https://`, with a
/// path and query, and a user and password sent as HTTP Basic.
const FEED_URLS: Rules = Rules {
    schemes: &[Scheme::plain("http", 80), Scheme::tls("https", 443)],
    bare: None,
    path: true,
    credentials: None,
};

impl Feed {
    /// The feed `source` names, with the flags of `args`; an `Err` is a
    /// usage error that shows no secret.
    pub fn new(source: &str, args: &FeedArgs) -> Result<Feed, String> {
        let shown = app_plugin::text::mask_url(source);
        let a = FEED_URLS
            .parse(source)
            .map_err(|e| format!("--source {e}"))?;
        let https = a.scheme.tls;
        let auth = match &a.user {
            None => None,
            Some(user) => Some(BasicAuth::new(user, a.password.as_deref().unwrap_or(""))),
        };
        let (host, port) = (a.host, a.port);
        let target = match a.target.as_str() {
            "" => "/".to_string(),
            t => t.to_string(),
        };
        let tls = match (https, &args.source_ca_file) {
            (true, ca) => Some(crate::tls_client::config(
                ca.as_deref(),
                "--source-ca-file",
                "the https:// feed",
            )?),
            (false, Some(_)) => {
                return Err(format!(
                    "--source-ca-file is for an https:// feed; --source {shown:?} is http://"
                ))
            }
            (false, None) => None,
        };
        Ok(Feed {
            shown,
            tls,
            host,
            port,
            target,
            auth,
            headers: headers::headers(args)?,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(extra: &[&str]) -> FeedArgs {
        let run = crate::sink::run_args(extra);
        <FeedArgs as clap::FromArgMatches>::from_arg_matches(&run.source.matches).unwrap()
    }

    /// Given `--source-kind`, the claim is not asked: `source::tests`.
    #[test]
    fn it_claims_https_and_http_with_a_path_or_query() {
        assert!(Feed::claims("https://stream.example/v2/stream/x"));
        assert!(Feed::claims(
            "http://127.0.0.1:8080/.well-known/mercure?topic=a"
        ));
        assert!(!Feed::claims("http://127.0.0.1:8080"));
        assert!(!Feed::claims("http://127.0.0.1:8080/"));
        assert!(!Feed::claims("event-time"));
    }

    #[test]
    fn a_feed_keeps_its_path_query_and_headers_and_shows_no_secret() {
        let a = args(&[
            "--source-header",
            "Api-User-Agent: me@example.org",
            "--source-header",
            "hue-application-key: SECRETKEY",
        ]);
        let f = Feed::new(
            "http://u:PASSWORD@127.0.0.1:9/v2/stream/a,b?since=1&token=SECRETQ",
            &a,
        )
        .unwrap();
        assert_eq!((f.host.as_str(), f.port), ("127.0.0.1", 9));
        assert_eq!(f.target, "/v2/stream/a,b?since=1&token=SECRETQ");
        assert!(f.auth.is_some());
        let names: Vec<&str> = f.headers.iter().map(|(n, _)| n.as_str()).collect();
        assert_eq!(
            names,
            ["api-user-agent", "hue-application-key", "user-agent"]
        );
        let shown = format!("{f:?} {}", f.shown);
        for secret in ["PASSWORD", "SECRETKEY", "SECRETQ"] {
            assert!(!shown.contains(secret), "{shown}");
        }
        assert!(shown.contains("127.0.0.1:9"), "{shown}");
        // A User-Agent of one's own replaces the default.
        let f = Feed::new(
            "http://h/x",
            &args(&["--source-header", "User-Agent: bot/1"]),
        )
        .unwrap();
        assert_eq!(f.headers.len(), 1);
    }

    #[test]
    fn bad_headers_are_refused_without_their_value() {
        for (h, want) in [
            ("no colon SECRET", "no ':'"),
            ("Bad Name: SECRET", "not a header name"),
            ("X-Key: SEC\u{1}RET", "no header may hold"),
        ] {
            let e = Feed::new("http://h/x", &args(&["--source-header", h])).unwrap_err();
            assert!(e.contains(want) && !e.contains("SECRET"), "{e}");
        }
        let e = Feed::new("ftp://h/x", &args(&[])).unwrap_err();
        assert!(e.contains("unsupported scheme ftp://"), "{e}");
        let e = Feed::new("http://h/x", &args(&["--source-ca-file", "/nonexistent"])).unwrap_err();
        assert!(e.contains("for an https:// feed"), "{e}");
    }
}
