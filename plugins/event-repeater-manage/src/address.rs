//! Addresses of a repeater's API as the user writes them: [`Endpoint`]
//! (`unix:///x.sock`, `http://…`, `https://…`) and [`HostWord`], a
//! `--host`/`-H` word that is an address, a host name or an `@group`.

use std::fmt;
use std::path::PathBuf;

use app_plugin::address::{AddressError, Rules, Scheme};

/// What an API address over TCP may be: `http://`, `https://`, or `tcp://`
/// (the original repeater's listen files), a path prefix allowed, no
/// credentials (the token comes from the flags).
const API_URLS: Rules = Rules {
    schemes: &[
        Scheme::plain("http", 80),
        Scheme::tls("https", 443),
        Scheme::plain("tcp", 80),
    ],
    bare: None,
    path: true,
    credentials: Some("--token"),
};

fn credentials(shown: &str) -> String {
    format!(
        "'{shown}': a user, password or query in the address is not supported (either can hold a token); give the repeater's token with --token, APP_TOKEN or the host's token_file"
    )
}

/// An address of the repeater's API.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Endpoint {
    /// A unix socket.
    Unix(PathBuf),
    /// A base URL, `http://host:port` (no trailing `/`).
    Http(String),
    /// A base URL, `https://host:port` (no trailing `/`).
    Https(String),
}

impl Endpoint {
    /// Parses `unix:///path.sock`, an absolute socket path, `http://host:port`,
    /// `https://host:port`, or `tcp://host:port` (the original repeater's
    /// listen files).
    pub fn parse(url: &str) -> Result<Endpoint, String> {
        let url = url.trim();
        // Messages quote the address; never with a password in it.
        let shown = app_plugin::redact::url(url);
        if let Some(path) = url.strip_prefix("unix://") {
            if !path.starts_with('/') {
                return Err(format!(
                    "'{shown}' has a relative socket path; write unix:///absolute/path.sock"
                ));
            }
            return Ok(Endpoint::Unix(PathBuf::from(path)));
        }
        if url.starts_with('/') {
            return Ok(Endpoint::Unix(PathBuf::from(url)));
        }
        if !url.contains("://") {
            return Err(format!(
                "'{shown}' is not an API address; use unix:///path/to.sock, http://127.0.0.1:PORT or https://HOST:PORT"
            ));
        }
        // `redact` finds user info a '/' or '?' in a password cuts short too.
        if app_plugin::redact::has_secret(url) {
            return Err(credentials(&shown));
        }
        let a = API_URLS.parse(url).map_err(|e| match e {
            AddressError::Credentials { .. } => credentials(&shown),
            AddressError::NoHost { .. } => {
                format!("'{shown}' has no host; use http://127.0.0.1:PORT")
            }
            AddressError::Scheme { .. } => format!(
                "'{shown}' is not an API address; use unix:///path/to.sock, http://127.0.0.1:PORT or https://HOST:PORT"
            ),
            other => other.to_string(),
        })?;
        // The base URL: the port only when given, a path prefix (a proxy's)
        // without its trailing '/'.
        let host = app_plugin::address::join_host_port(&a.host, a.port);
        let host = if a.port_given {
            host
        } else if a.host.contains(':') {
            format!("[{}]", a.host)
        } else {
            a.host.clone()
        };
        let path = a.target.trim_end_matches('/');
        Ok(if a.scheme.tls {
            Endpoint::Https(format!("https://{host}{path}"))
        } else {
            Endpoint::Http(format!("http://{host}{path}"))
        })
    }

    /// Whether the address stays on this machine: a unix socket, or a TCP
    /// host that is `localhost` or a loopback IP (`127.0.0.0/8`, `::1`).
    pub fn is_local(&self) -> bool {
        let url = match self {
            Endpoint::Unix(_) => return true,
            Endpoint::Http(u) | Endpoint::Https(u) => u,
        };
        let authority = url
            .split_once("://")
            .map_or("", |(_, rest)| rest.split('/').next().unwrap_or_default());
        is_loopback_host(host_of(authority))
    }
}

/// The host of `host:port`, `[v6]:port`, or `host`.
fn host_of(authority: &str) -> &str {
    if let Some(rest) = authority.strip_prefix('[') {
        return rest.split(']').next().unwrap_or_default();
    }
    match authority.rsplit_once(':') {
        Some((host, port)) if port.bytes().all(|b| b.is_ascii_digit()) => host,
        _ => authority,
    }
}

use app_plugin::net::is_loopback_host;

impl fmt::Display for Endpoint {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Endpoint::Unix(path) => write!(f, "unix://{}", path.display()),
            Endpoint::Http(url) | Endpoint::Https(url) => write!(f, "{url}"),
        }
    }
}

/// A `--host`/`-H` word before the config file is read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum HostWord {
    /// An address.
    Url(Endpoint),
    /// A name from the config file's `hosts`.
    Name(String),
    /// `@group`: every member of the config file's `groups.<group>`.
    Group(String),
}

impl HostWord {
    /// An address (anything with `://`, or an absolute socket path), `@group`,
    /// or a host name (letters, digits, `-`, `_`, `.`).
    pub fn parse(word: &str) -> Result<HostWord, String> {
        let word = word.trim();
        if word.contains("://") || word.starts_with('/') {
            return Endpoint::parse(word).map(HostWord::Url);
        }
        let (group, name) = match word.strip_prefix('@') {
            Some(g) => (true, g),
            None => (false, word),
        };
        if name.is_empty()
            || !name
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'))
        {
            return Err(format!(
                "'{}' is neither an API address (unix:///path/to.sock, http://127.0.0.1:PORT, https://HOST:PORT) nor a host name or @group from the config file",
                app_plugin::redact::url(word)
            ));
        }
        Ok(if group {
            HostWord::Group(name.to_string())
        } else {
            HostWord::Name(name.to_string())
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn credentials_in_an_address_are_refused_masked() {
        let err = Endpoint::parse("http://u:hunter9@127.0.0.1:1").unwrap_err();
        assert!(err.contains("***:***@") && err.contains("--token"), "{err}");
        assert!(!err.contains("hunter9"), "{err}");
    }

    #[test]
    fn endpoint_forms() {
        assert_eq!(
            Endpoint::parse("unix:///run/r.sock").unwrap(),
            Endpoint::Unix("/run/r.sock".into())
        );
        assert_eq!(
            Endpoint::parse("/run/r.sock").unwrap(),
            Endpoint::Unix("/run/r.sock".into())
        );
        assert_eq!(
            Endpoint::parse("http://127.0.0.1:8080/").unwrap(),
            Endpoint::Http("http://127.0.0.1:8080".into())
        );
        assert_eq!(
            Endpoint::parse("tcp://127.0.0.1:9\n").unwrap(),
            Endpoint::Http("http://127.0.0.1:9".into())
        );
        assert_eq!(
            Endpoint::parse("http://[::1]:7").unwrap().to_string(),
            "http://[::1]:7"
        );
        assert_eq!(
            Endpoint::parse("unix:///a.sock").unwrap().to_string(),
            "unix:///a.sock"
        );
        assert_eq!(
            Endpoint::parse("https://edge1.example.org:7070/").unwrap(),
            Endpoint::Https("https://edge1.example.org:7070".into())
        );
        for bad in [
            "unix://rel.sock",
            "ftp://x",
            "https://",
            "http://u:p@h:1",
            "http://",
            "localhost:80",
        ] {
            assert!(Endpoint::parse(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn local_addresses() {
        for local in [
            "unix:///a.sock",
            "http://127.0.0.1:1",
            "http://127.1:1",
            "https://localhost:1",
            "http://[::1]:7",
            "http://127.0.0.9",
        ] {
            assert!(Endpoint::parse(local).unwrap().is_local(), "{local}");
        }
        for remote in [
            "http://10.0.0.1:1",
            "https://example.org:1",
            "http://[fe80::1]:7",
            "http://128.0.0.1",
        ] {
            assert!(!Endpoint::parse(remote).unwrap().is_local(), "{remote}");
        }
    }

    #[test]
    fn host_words() {
        assert_eq!(
            HostWord::parse("http://127.0.0.1:1").unwrap(),
            HostWord::Url(Endpoint::Http("http://127.0.0.1:1".into()))
        );
        assert_eq!(
            HostWord::parse("edge-1").unwrap(),
            HostWord::Name("edge-1".into())
        );
        assert_eq!(
            HostWord::parse("@edges").unwrap(),
            HostWord::Group("edges".into())
        );
        for bad in ["@", "a b", "localhost:80", "ftp://x", ""] {
            assert!(HostWord::parse(bad).is_err(), "{bad}");
        }
    }
}
