//! Finding the repeater to talk to: `--host`, else the global `-H` host, else
//! the files a repeater named `--name` writes in `APP_RUNTIME_DIR/plugins/`
//! (its unix socket `<name>.sock`, or the TCP URL in `<name>.listen`).

use std::fmt;
use std::path::{Path, PathBuf};
use std::time::Duration;

use crate::error::Error;

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
        let shown = app_plugin::text::mask_url(url);
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
        let (tls, rest) = if let Some(rest) = url.strip_prefix("http://") {
            (false, rest)
        } else if let Some(rest) = url.strip_prefix("tcp://") {
            (false, rest)
        } else if let Some(rest) = url.strip_prefix("https://") {
            (true, rest)
        } else {
            return Err(format!(
                "'{shown}' is not an API address; use unix:///path/to.sock, http://127.0.0.1:PORT or https://HOST:PORT"
            ));
        };
        let rest = rest.trim_end_matches('/');
        let authority = rest.split('/').next().unwrap_or_default();
        if authority.contains('@') {
            return Err(format!(
                "'{shown}': a user or password in the address is not supported; give the repeater's token with --token, APP_TOKEN or the host's token_file"
            ));
        }
        if authority.is_empty() || authority.contains(['?', '#', ' ']) {
            return Err(format!("'{shown}' has no host; use http://127.0.0.1:PORT"));
        }
        Ok(if tls {
            Endpoint::Https(format!("https://{rest}"))
        } else {
            Endpoint::Http(format!("http://{rest}"))
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

pub use app_plugin::net::is_loopback_host;

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
                "'{word}' is neither an API address (unix:///path/to.sock, http://127.0.0.1:PORT, https://HOST:PORT) nor a host name or @group from the config file"
            ));
        }
        Ok(if group {
            HostWord::Group(name.to_string())
        } else {
            HostWord::Name(name.to_string())
        })
    }
}

/// Where the address came from, which decides what a failure to connect means.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Origin {
    /// `--host` or the global `app -H` flag.
    Given,
    /// The socket `<name>.sock` in the runtime directory.
    Socket,
    /// The URL in this `<name>.listen` file.
    ListenFile(PathBuf),
}

/// A repeater to talk to, how it was found, and how to talk to it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Target {
    /// Its address.
    pub endpoint: Endpoint,
    /// How we learnt it.
    pub origin: Origin,
    /// The `--name` in force (for messages).
    pub name: String,
    /// The config file's name for it, when it came from there.
    pub host_name: Option<String>,
    /// The bearer token to send.
    pub token: Option<String>,
    /// CA certificates (PEM file) for an https:// address.
    pub ca_file: Option<PathBuf>,
    /// `--timeout`: connecting and the whole exchange.
    pub timeout: Duration,
}

impl Target {
    /// How reports and output name it: the host name, else the address.
    pub fn label(&self) -> String {
        self.host_name
            .clone()
            .unwrap_or_else(|| self.endpoint.to_string())
    }

    /// How messages name it: `edge1 (https://…)`, or the address.
    pub fn described(&self) -> String {
        match &self.host_name {
            Some(n) => format!("{n} ({})", self.endpoint),
            None => self.endpoint.to_string(),
        }
    }
}

/// The repeater named `name` on this machine: the runtime files of `name` in
/// `plugin_dir` (its socket, else its listen file), else in the system
/// instances' directory ([`local_dirs`]).
pub fn find_local(
    name: &str,
    token: Option<String>,
    ca_file: Option<PathBuf>,
    timeout: Duration,
    plugin_dir: &Path,
) -> Result<Target, Error> {
    let target = |endpoint, origin| Target {
        endpoint,
        origin,
        name: name.to_string(),
        host_name: None,
        token: token.clone(),
        ca_file: ca_file.clone(),
        timeout,
    };
    for dir in local_dirs(plugin_dir) {
        let socket = dir.join(format!("{name}.sock"));
        // symlink_metadata: a socket file is there even when nobody listens on it,
        // and then we want to say "stale", not "not running".
        if socket.symlink_metadata().is_ok() {
            return Ok(target(Endpoint::Unix(socket), Origin::Socket));
        }
        let listen = dir.join(format!("{name}.listen"));
        // An address is short: a listen file over 4 KiB is not ours.
        if let Ok(text) = crate::files::read_small(&listen, 4096, "the listen file") {
            let endpoint = Endpoint::parse(&text).map_err(|e| {
                Error::Failed(format!(
                    "the listen file {} does not hold an API address: {e}; remove it or restart the repeater",
                    listen.display()
                ))
            })?;
            return Ok(target(endpoint, Origin::ListenFile(listen)));
        }
    }
    Err(Error::NotRunning {
        name: name.to_string(),
        socket: plugin_dir.join(format!("{name}.sock")),
    })
}

/// Where repeaters on this machine are looked for: the user's own
/// `plugin_dir`, then the system instances' (`/run/app/plugins`, made by
/// the packaged units and open to the `app` group).
pub fn local_dirs(plugin_dir: &Path) -> Vec<PathBuf> {
    let system = app_plugin::paths::system_plugin_runtime_dir();
    let mut dirs = vec![plugin_dir.to_path_buf()];
    if system != plugin_dir {
        dirs.push(system);
    }
    dirs
}

/// The first of: `host`, the first global host, the runtime files of `name`
/// (what shell completion looks up; commands use [`crate::exec::targets`]).
pub fn find(
    name: &str,
    host: Option<&Endpoint>,
    global_hosts: &[String],
    plugin_dir: &Path,
) -> Result<Target, Error> {
    let given = |endpoint| Target {
        endpoint,
        origin: Origin::Given,
        name: name.to_string(),
        host_name: None,
        token: None,
        ca_file: None,
        timeout: Duration::from_secs(5),
    };
    if let Some(endpoint) = host {
        return Ok(given(endpoint.clone()));
    }
    if let Some(global) = global_hosts.first() {
        let endpoint = Endpoint::parse(global)
            .map_err(|e| Error::Usage(format!("the global -H/--host value {e}")))?;
        return Ok(given(endpoint));
    }
    find_local(name, None, None, Duration::from_secs(5), plugin_dir)
}

/// Checks a `--name` by the SDK's one rule for instance names.
pub fn check_name(name: &str) -> Result<(), Error> {
    if app_plugin::instance::check_name(name).is_err() {
        return Err(Error::Usage(format!(
            "--name '{name}' is not a repeater name; use the name given to app event-repeater run --name (default event-repeater)"
        )));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn credentials_in_an_address_are_refused_masked() {
        let err = Endpoint::parse("http://u:hunter9@127.0.0.1:1").unwrap_err();
        assert!(err.contains("u:***@") && err.contains("--token"), "{err}");
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

    #[test]
    fn socket_then_listen_file() {
        let dir = tempfile::tempdir().unwrap();
        let listen = dir.path().join("r.listen");
        std::fs::write(&listen, "http://127.0.0.1:4567\n").unwrap();
        let t = find_local("r", None, None, Duration::from_secs(1), dir.path()).unwrap();
        assert_eq!(t.endpoint, Endpoint::Http("http://127.0.0.1:4567".into()));
        assert_eq!(t.origin, Origin::ListenFile(listen));

        let socket = dir.path().join("r.sock");
        std::fs::write(&socket, "").unwrap();
        let t = find_local("r", None, None, Duration::from_secs(1), dir.path()).unwrap();
        assert_eq!(t.endpoint, Endpoint::Unix(socket));
        assert_eq!(t.origin, Origin::Socket);
    }

    #[test]
    fn nothing_there_is_not_running() {
        let dir = tempfile::tempdir().unwrap();
        let err = find_local("r1", None, None, Duration::from_secs(1), dir.path()).unwrap_err();
        assert_eq!(
            err,
            Error::NotRunning {
                name: "r1".into(),
                socket: dir.path().join("r1.sock")
            }
        );
    }

    #[test]
    fn garbage_listen_file_is_reported() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("r.listen"), "nonsense").unwrap();
        let err = find_local("r", None, None, Duration::from_secs(1), dir.path()).unwrap_err();
        assert!(err.to_string().contains("r.listen"), "{err}");
    }

    #[test]
    fn names_are_file_names() {
        assert!(check_name("r1").is_ok());
        for bad in ["", "a/b", "..", "."] {
            assert_eq!(check_name(bad).unwrap_err().exit_code(), 2, "{bad}");
        }
    }
}
