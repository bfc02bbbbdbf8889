//! Downloading a plugin: one HTTP(S) GET into memory, with a size cap and,
//! on a terminal, a progress line once the download takes more than a moment.
//!
//! Nothing here touches the plugin directory: the bytes are checked by the
//! caller before anything is written (see [`crate::acquire`]).

use std::io::{self, IsTerminal, Read, Write};
use std::time::{Duration, Instant};

use app_fetch_protocol::{url, MAX_BYTES_VAR};

/// A download quicker than this shows no progress at all.
pub const PROGRESS_AFTER: Duration = Duration::from_millis(500);
/// Connecting gives up after this long.
pub const CONNECT_TIMEOUT: Duration = Duration::from_secs(15);
/// Silence from the server for this long ends the download: no answer, or
/// no byte of the body. A download that keeps progressing is not cut by it.
pub const READ_TIMEOUT: Duration = Duration::from_secs(60);
/// Redirects followed (each to an http(s) URL) before giving up.
pub const MAX_REDIRECTS: usize = 5;
/// The whole of a raw download (an index of up to 32 MiB, a signature)
/// must take no longer: about 1 Mbit/s for the largest index.
pub const RAW_TOTAL_TIMEOUT: Duration = Duration::from_secs(300);
/// The whole of a plugin download must take no longer: a plugin of the
/// 256 MiB cap at about 600 kbit/s.
pub const PLUGIN_TOTAL_TIMEOUT: Duration = Duration::from_secs(3600);

/// Environment variable replacing the 60 s of silence of [`READ_TIMEOUT`]
/// (and [`CONNECT_TIMEOUT`] when lower): whole seconds, 1 to 3600. For a
/// slow link, or a test that cannot wait a minute.
pub const TIMEOUT_VAR: &str = "APP_FETCH_TIMEOUT";
/// Environment variable replacing the total limits, [`RAW_TOTAL_TIMEOUT`]
/// and [`PLUGIN_TOTAL_TIMEOUT`]: whole seconds, 1 to 86400.
pub const TOTAL_TIMEOUT_VAR: &str = "APP_FETCH_TOTAL_TIMEOUT";

/// The value of `var`, when set: whole seconds from 1 to `max`.
fn seconds_var(var: &str, max: u64) -> Result<Option<Duration>, FetchError> {
    let Some(value) = std::env::var_os(var) else {
        return Ok(None);
    };
    value
        .to_str()
        .and_then(|v| v.parse::<u64>().ok())
        .filter(|s| (1..=max).contains(s))
        .map(|s| Some(Duration::from_secs(s)))
        .ok_or_else(|| {
            FetchError::Transport(format!(
                "{var}={value:?} is not a whole number of seconds from 1 to {max}; fix or unset it"
            ))
        })
}

/// How to download.
pub struct Options<'a> {
    /// Refuse more bytes than this.
    pub limit: u64,
    /// A bearer token for the origin (scheme, host, port) of the URL asked
    /// for; never sent to another origin, redirects included.
    pub bearer: Option<&'a str>,
    /// The limit on the whole download (unless [`TOTAL_TIMEOUT_VAR`] says
    /// otherwise).
    pub total: Duration,
}

/// Why a download failed.
#[derive(Debug)]
pub enum FetchError {
    /// The server answered with a status other than 2xx.
    Status(u16),
    /// The body is larger than the cap.
    TooLarge(u64),
    /// A redirect to something other than an http(s) URL (shown redacted).
    Redirect { location: String, scheme: String },
    /// More than [`MAX_REDIRECTS`] redirects.
    TooManyRedirects,
    /// Connection, TLS, protocol or read error.
    Transport(String),
}

impl std::fmt::Display for FetchError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            FetchError::Status(code) => write!(f, "the server answered HTTP {code}"),
            FetchError::TooLarge(limit) => write!(
                f,
                "it is larger than {limit} bytes (raise {MAX_BYTES_VAR} if that is expected)"
            ),
            FetchError::Redirect { location, scheme } => write!(
                f,
                "the server redirected to {location}, a {scheme}: URL; only redirects to http:// and https:// URLs are followed (download that file yourself and install it from its path)"
            ),
            FetchError::TooManyRedirects => write!(
                f,
                "the server redirected more than {MAX_REDIRECTS} times; use the final URL"
            ),
            FetchError::Transport(e) => f.write_str(e),
        }
    }
}

/// Downloads `url` into memory, as `options` say.
pub fn download(url: &str, options: &Options) -> Result<Vec<u8>, FetchError> {
    let limits = Limits::new(options)?;
    let response = get(&limits.agent(), url, options.bearer).map_err(|e| limits.name_timeout(e))?;
    let status = response.status().as_u16();
    if !(200..300).contains(&status) {
        return Err(FetchError::Status(status));
    }
    read_body(response, &url::redact(url), options.limit, limits.silence)
        .map_err(|e| limits.name_timeout(e))
}

/// The timeouts in force: the defaults, or what the variables say.
struct Limits {
    connect: Duration,
    silence: Duration,
    total: Duration,
}

impl Limits {
    fn new(options: &Options) -> Result<Limits, FetchError> {
        let silence = seconds_var(TIMEOUT_VAR, 3600)?;
        let total = seconds_var(TOTAL_TIMEOUT_VAR, 86_400)?;
        Ok(Limits {
            connect: silence.map_or(CONNECT_TIMEOUT, |t| CONNECT_TIMEOUT.min(t)),
            silence: silence.unwrap_or(READ_TIMEOUT),
            total: total.unwrap_or(options.total),
        })
    }

    /// An HTTP client with these timeouts, following no redirect itself.
    /// The silence of the body is watched in [`read_body`]: ureq's body
    /// timeout bounds the whole body, not the time between bytes.
    fn agent(&self) -> ureq::Agent {
        ureq::Agent::config_builder()
            .timeout_global(Some(self.total))
            .http_status_as_error(false)
            .timeout_connect(Some(self.connect))
            .timeout_recv_response(Some(self.silence))
            // app_fetch ships with `app`, under the same version.
            .user_agent(format!("app/{}", env!("CARGO_PKG_VERSION")))
            // Redirects are followed in `get`, so that each target is checked.
            .max_redirects(0)
            .build()
            .into()
    }

    /// ureq's "timeout: connect" says which limit ran out but not how long
    /// it was nor how to change it: both are added.
    fn name_timeout(&self, e: FetchError) -> FetchError {
        match e {
            FetchError::Transport(why) if why.starts_with("timeout: ") => {
                FetchError::Transport(format!(
                    "{why} (limits: {} s to connect, {} s of silence, {} s in all; see {TIMEOUT_VAR} and {TOTAL_TIMEOUT_VAR})",
                    self.connect.as_secs(),
                    self.silence.as_secs(),
                    self.total.as_secs(),
                ))
            }
            e => e,
        }
    }
}

/// GETs `url`, following at most [`MAX_REDIRECTS`] redirects, each to an
/// http(s) URL; the bearer token goes to `url`'s own origin only.
fn get(
    agent: &ureq::Agent,
    url: &str,
    bearer: Option<&str>,
) -> Result<ureq::http::Response<ureq::Body>, FetchError> {
    let token_origin = url::origin(url);
    let mut current = url.to_string();
    let mut redirects = 0;
    loop {
        let mut request = agent.get(&current);
        if let (Some(token), Some(origin)) = (bearer, &token_origin) {
            // The token is for the index's own server: a redirect to
            // another one (a CDN, an attacker's) does not get it.
            if url::origin(&current).as_ref() == Some(origin) {
                request = request.header("Authorization", format!("Bearer {token}"));
            }
        }
        let response = request
            .call()
            .map_err(|e| FetchError::Transport(e.to_string()))?;
        let status = response.status().as_u16();
        let location = response
            .headers()
            .get("location")
            .and_then(|v| v.to_str().ok());
        match location {
            Some(location) if (300..400).contains(&status) => {
                if redirects == MAX_REDIRECTS {
                    return Err(FetchError::TooManyRedirects);
                }
                redirects += 1;
                current =
                    url::follow(&current, location).map_err(|scheme| FetchError::Redirect {
                        location: url::redact(location),
                        scheme,
                    })?;
            }
            _ => return Ok(response),
        }
    }
}

/// The body of `response`, at most `limit` bytes, with progress on a
/// terminal (`shown` is the URL as the user may see it), ended by
/// `silence` without a byte. A thread reads, so that the wait for each
/// chunk is bounded; one left blocked ends with the process (`app_fetch`
/// does one download), or at ureq's total limit.
fn read_body(
    response: ureq::http::Response<ureq::Body>,
    shown: &str,
    limit: u64,
    silence: Duration,
) -> Result<Vec<u8>, FetchError> {
    use std::sync::mpsc::{sync_channel, RecvTimeoutError};
    let total = response.body().content_length();
    if total.is_some_and(|t| t > limit) {
        return Err(FetchError::TooLarge(limit));
    }
    let mut reader = response.into_body().into_reader();
    let (send, chunks) = sync_channel::<io::Result<Vec<u8>>>(4);
    std::thread::spawn(move || {
        let mut buf = vec![0u8; 64 * 1024];
        loop {
            let read = match reader.read(&mut buf) {
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Ok(n) => Ok(buf[..n].to_vec()),
                Err(e) => Err(e),
            };
            let last = !matches!(&read, Ok(chunk) if !chunk.is_empty());
            if send.send(read).is_err() || last {
                return;
            }
        }
    });
    let mut progress = Progress::new(shown, total);
    let capacity = total.unwrap_or(0).min(limit) as usize;
    let mut bytes = Vec::with_capacity(capacity);
    let result = loop {
        let chunk = match chunks.recv_timeout(silence) {
            Ok(Ok(chunk)) if chunk.is_empty() => break Ok(()),
            Ok(Ok(chunk)) => chunk,
            Ok(Err(e)) => break Err(FetchError::Transport(e.to_string())),
            Err(RecvTimeoutError::Timeout) => {
                break Err(FetchError::Transport(format!(
                    "timeout: no byte for {} s while reading the body",
                    silence.as_secs()
                )))
            }
            Err(RecvTimeoutError::Disconnected) => {
                break Err(FetchError::Transport("the body's reader ended".into()))
            }
        };
        if bytes.len() as u64 + chunk.len() as u64 > limit {
            break Err(FetchError::TooLarge(limit));
        }
        bytes.extend_from_slice(&chunk);
        progress.update(bytes.len() as u64);
    };
    progress.finish();
    result.map(|()| bytes)
}

/// A one-line progress display on stderr, shown only on a terminal and only
/// once [`PROGRESS_AFTER`] has passed.
struct Progress<'a> {
    url: &'a str,
    total: Option<u64>,
    start: Instant,
    last: Option<Instant>,
    enabled: bool,
}

impl<'a> Progress<'a> {
    fn new(url: &'a str, total: Option<u64>) -> Progress<'a> {
        Progress {
            url,
            total,
            start: Instant::now(),
            last: None,
            enabled: io::stderr().is_terminal(),
        }
    }

    fn update(&mut self, done: u64) {
        if !self.enabled || self.start.elapsed() < PROGRESS_AFTER {
            return;
        }
        let now = Instant::now();
        if self
            .last
            .is_some_and(|l| now - l < Duration::from_millis(100))
        {
            return;
        }
        self.last = Some(now);
        let line = match self.total {
            Some(t) if t > 0 => format!(
                "downloading {}: {} / {} ({}%)",
                self.url,
                human(done),
                human(t),
                done * 100 / t
            ),
            _ => format!("downloading {}: {}", self.url, human(done)),
        };
        // \r and "clear to end of line": the line is redrawn in place.
        let _ = write!(io::stderr(), "\r{line}\x1b[K");
    }

    fn finish(&mut self) {
        if self.last.take().is_some() {
            let _ = write!(io::stderr(), "\r\x1b[K");
        }
    }
}

/// Bytes for people: `512 B`, `3.4 MiB`.
fn human(bytes: u64) -> String {
    const UNITS: [&str; 4] = ["KiB", "MiB", "GiB", "TiB"];
    if bytes < 1024 {
        return format!("{bytes} B");
    }
    let mut value = bytes as f64 / 1024.0;
    let mut unit = 0;
    while value >= 1024.0 && unit < UNITS.len() - 1 {
        value /= 1024.0;
        unit += 1;
    }
    format!("{value:.1} {}", UNITS[unit])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_read_well() {
        assert_eq!(human(512), "512 B");
        assert_eq!(human(1536), "1.5 KiB");
        assert_eq!(human(3 * 1024 * 1024), "3.0 MiB");
    }
}
