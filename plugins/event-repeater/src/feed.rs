//! A plain SSE feed (`--source https://host/path?query`): one `GET` of that
//! URL, with the headers, token and CA the flags give, read as a plain
//! event stream (no `/topics`, no `?topic=`). The event-plugin dialect
//! (`app event-time`: a plugin name, a socket, a bare `http://HOST:PORT`)
//! is the other kind; `--source-kind` overrides the guess.
//!
//! Header values may be secrets: they are kept as header values only and
//! never shown (`Debug` and `Display` name the headers, not their values);
//! the URL is shown with its userinfo and every query value masked.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use hyper::header::{HeaderName, HeaderValue};

use crate::basic_auth::BasicAuth;

/// Most `--source-header` flags.
pub const MAX_HEADERS: usize = 64;
/// Largest `--source-header` (name and value), and token file.
pub const MAX_HEADER_BYTES: usize = 8 * 1024;

/// What kind of source `--source` names.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum SourceKind {
    /// An event plugin (`app event-time`'s dialect): `GET /events?topic=.`.
    Plugin,
    /// Any SSE feed: one `GET` of the URL as given.
    Sse,
}

/// The source's own flags (`run --help` shows them under "Source").
#[derive(Debug, Clone, clap::Args)]
#[command(next_help_heading = "Source")]
pub struct SourceArgs {
    /// What --source is: plugin (event-time's dialect) or sse (any feed, the URL as given); default: sse for https:// and for http:// URLs with a path or query.
    #[arg(long, value_enum, value_name = "KIND")]
    pub source_kind: Option<SourceKind>,

    /// A header sent to an SSE feed, 'Name: value' (repeatable; never shown).
    #[arg(long, value_name = "HEADER")]
    pub source_header: Vec<String>,

    /// A file holding a token sent to the feed as 'Authorization: Bearer TOKEN'.
    #[arg(long, value_name = "FILE")]
    pub source_token_file: Option<PathBuf>,

    /// CA certificates (PEM) to trust for an https:// feed instead of the system's.
    #[arg(long, value_name = "FILE")]
    pub source_ca_file: Option<PathBuf>,

    /// Where an event's topic comes from: field:/json/pointer, event (the SSE event name) or const:NAME.
    #[arg(long, value_name = "SPEC", default_value = "field:/topic")]
    pub topic_from: String,

    /// The events' data: json (checked, relayed on one line) or text (relayed as it came).
    #[arg(long, value_enum, value_name = "KIND", default_value = "json")]
    pub payload: PayloadKind,
}

/// `--payload`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum PayloadKind {
    Json,
    Text,
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

impl PartialEq for Feed {
    fn eq(&self, other: &Feed) -> bool {
        self.shown == other.shown && self.target == other.target
    }
}

impl Eq for Feed {}

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
        let url = url::Url::parse(source).map_err(|e| {
            format!("--source {shown:?} is not a URL ({e}); use https://HOST[:PORT]/PATH?QUERY")
        })?;
        let https = match url.scheme() {
            "https" => true,
            "http" => false,
            other => {
                return Err(format!(
                    "--source {shown:?}: an SSE feed is http:// or https://, not {other}://"
                ))
            }
        };
        let host = url
            .host_str()
            .filter(|h| !h.is_empty())
            .ok_or_else(|| format!("--source {shown:?} has no host"))?;
        // The url crate keeps IPv6 in brackets; the connection wants it bare.
        let host = host
            .trim_start_matches('[')
            .trim_end_matches(']')
            .to_string();
        let port = url
            .port_or_known_default()
            .unwrap_or(if https { 443 } else { 80 });
        let mut target = url.path().to_string();
        if let Some(q) = url.query() {
            target.push('?');
            target.push_str(q);
        }
        let auth = if url.username().is_empty() {
            None
        } else {
            let decode = |s: &str| {
                percent_encoding::percent_decode_str(s)
                    .decode_utf8()
                    .map(|t| t.into_owned())
                    .map_err(|_| format!("--source {shown:?}: the user or password is not UTF-8"))
            };
            let password = url.password().map(decode).transpose()?.unwrap_or_default();
            Some(BasicAuth::new(&decode(url.username())?, &password))
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
    use clap::Parser;

    #[derive(Parser)]
    struct T {
        #[command(flatten)]
        a: SourceArgs,
    }

    fn args(extra: &[&str]) -> SourceArgs {
        T::parse_from(std::iter::once("t").chain(extra.iter().copied())).a
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
        assert!(e.contains("http:// or https://"), "{e}");
        let e = Feed::new("http://h/x", &args(&["--source-ca-file", "/nonexistent"])).unwrap_err();
        assert!(e.contains("for an https:// feed"), "{e}");
    }
}
