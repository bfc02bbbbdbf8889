//! A plain SSE feed (`--source https://host/path?query`): one `GET` of that
//! URL, with the headers, token and CA the flags give, read as a plain
//! event stream (no `/topics`, no `?topic=`). The event-plugin dialect
//! (`app event-time`: a plugin name, a socket, a bare `http://HOST:PORT`)
//! is the other kind; `--source-kind` overrides the guess.
//!
//! Header values may be secrets: they are kept as header values only and
//! never shown (`Debug` and `Display` name the headers, not their values);
//! the URL is shown with its userinfo and every query value masked.

use std::path::Path;
use std::sync::Arc;

use app_plugin::address::{Rules, Scheme};
use hyper::header::{HeaderName, HeaderValue};

use crate::basic_auth::BasicAuth;
use crate::source::flags::{SourceArgs, SourceKind};

/// Most `--source-header` flags.
pub const MAX_HEADERS: usize = 64;
/// Largest `--source-header` (name and value), and token file.
pub const MAX_HEADER_BYTES: usize = 8 * 1024;

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

impl PartialEq for Feed {
    fn eq(&self, other: &Feed) -> bool {
        self.shown == other.shown && self.target == other.target
    }
}

impl Eq for Feed {}

/// What `--source` takes for a plain feed: `http://` or `https://`, with a
/// path and query, and a user and password sent as HTTP Basic.
const FEED_URLS: Rules = Rules {
    schemes: &[Scheme::plain("http", 80), Scheme::tls("https", 443)],
    bare: None,
    path: true,
    credentials: None,
};

/// Whether `--source` names a plain feed, by `--source-kind` or by its
/// shape: `https://`, or `http://` with a path or a query.
pub fn is_feed(source: &str, kind: Option<SourceKind>) -> bool {
    if let Some(kind) = kind {
        return kind == SourceKind::Sse;
    }
    if source.starts_with("https://") {
        return true;
    }
    match url::Url::parse(source) {
        Ok(u) if u.scheme() == "http" => u.path() != "/" || u.query().is_some(),
        _ => false,
    }
}

impl Feed {
    /// The feed `source` names, with the flags of `args`; an `Err` is a
    /// usage error that shows no secret.
    pub fn new(source: &str, args: &SourceArgs) -> Result<Feed, String> {
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
            headers: headers(args)?,
        })
    }
}

/// The headers of every request: `User-Agent: app-event-repeater/VERSION`
/// unless a `--source-header` sets one, the token, then the flags'.
fn headers(args: &SourceArgs) -> Result<Vec<(HeaderName, HeaderValue)>, String> {
    if args.source_header.len() > MAX_HEADERS {
        return Err(format!("more than {MAX_HEADERS} --source-header flags"));
    }
    let mut out = Vec::new();
    for (i, h) in args.source_header.iter().enumerate() {
        // The value may be a secret: messages name the flag's position
        // and the header's name, never the value.
        let n = i + 1;
        if h.len() > MAX_HEADER_BYTES {
            return Err(format!(
                "--source-header number {n} is over {MAX_HEADER_BYTES} bytes"
            ));
        }
        let (name, value) = h
            .split_once(':')
            .ok_or_else(|| format!("--source-header number {n} is not 'Name: value' (no ':')"))?;
        let name = HeaderName::from_bytes(name.trim().as_bytes()).map_err(|_| {
            format!(
                "--source-header number {n}: {} is not a header name",
                app_plugin::text::escape_for_terminal(name.trim())
            )
        })?;
        let mut value = HeaderValue::from_str(value.trim()).map_err(|_| {
            format!("--source-header {name}: the value holds a character no header may hold")
        })?;
        value.set_sensitive(true);
        out.push((name, value));
    }
    if let Some(file) = &args.source_token_file {
        let token = read_token(file)?;
        let mut value = HeaderValue::from_str(&format!("Bearer {token}")).map_err(|_| {
            format!(
                "--source-token-file {}: the token holds a character no header may hold",
                file.display()
            )
        })?;
        value.set_sensitive(true);
        out.push((hyper::header::AUTHORIZATION, value));
    }
    if !out.iter().any(|(n, _)| n == hyper::header::USER_AGENT) {
        let agent = concat!("app-event-repeater/", env!("CARGO_PKG_VERSION"));
        out.push((hyper::header::USER_AGENT, HeaderValue::from_static(agent)));
    }
    Ok(out)
}

/// The token in `file`: a regular file of at most 8 KiB, one line.
fn read_token(file: &Path) -> Result<String, String> {
    // A secret: warned about once when others can read it, like --password-file.
    let bytes =
        crate::files::read_secret_file(file, "--source-token-file", MAX_HEADER_BYTES as u64)?;
    let text = String::from_utf8(bytes)
        .map_err(|_| format!("--source-token-file {} is not UTF-8", file.display()))?;
    let token = text.trim();
    if token.is_empty() {
        return Err(format!("--source-token-file {} is empty", file.display()));
    }
    Ok(token.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(extra: &[&str]) -> SourceArgs {
        crate::sink::run_args(extra).source
    }

    #[test]
    fn the_kind_follows_the_url_unless_told() {
        assert!(is_feed("https://stream.example/v2/stream/x", None));
        assert!(is_feed(
            "http://127.0.0.1:8080/.well-known/mercure?topic=a",
            None
        ));
        assert!(!is_feed("http://127.0.0.1:8080", None));
        assert!(!is_feed("http://127.0.0.1:8080/", None));
        assert!(!is_feed("event-time", None));
        assert!(is_feed("http://127.0.0.1:8080", Some(SourceKind::Sse)));
        assert!(!is_feed("http://h/x", Some(SourceKind::Plugin)));
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
