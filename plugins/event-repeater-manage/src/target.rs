//! Finding the repeater to talk to: `--host`, else the global `-H` host, else
//! the files a repeater named `--name` writes in `APP_RUNTIME_DIR/plugins/`
//! (its unix socket `<name>.sock`, or the TCP URL in `<name>.listen`).

use std::fmt;
use std::path::{Path, PathBuf};

use crate::error::Error;

/// An address of the repeater's API.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Endpoint {
    /// A unix socket.
    Unix(PathBuf),
    /// A base URL, `http://host:port` (no trailing `/`).
    Http(String),
}

impl Endpoint {
    /// Parses `unix:///path.sock`, an absolute socket path, `http://host:port`,
    /// or `tcp://host:port` (the original repeater's listen files).
    pub fn parse(url: &str) -> Result<Endpoint, String> {
        let url = url.trim();
        if let Some(path) = url.strip_prefix("unix://") {
            if !path.starts_with('/') {
                return Err(format!(
                    "'{url}' has a relative socket path; write unix:///absolute/path.sock"
                ));
            }
            return Ok(Endpoint::Unix(PathBuf::from(path)));
        }
        if url.starts_with('/') {
            return Ok(Endpoint::Unix(PathBuf::from(url)));
        }
        let rest = if let Some(rest) = url.strip_prefix("http://") {
            rest
        } else if let Some(rest) = url.strip_prefix("tcp://") {
            rest
        } else if url.starts_with("https://") {
            return Err(format!(
                "'{url}' uses https, which the repeater's API does not serve; use http:// on a loopback or trusted address"
            ));
        } else {
            return Err(format!(
                "'{url}' is not an API address; use unix:///path/to.sock or http://127.0.0.1:PORT"
            ));
        };
        let rest = rest.trim_end_matches('/');
        let authority = rest.split('/').next().unwrap_or_default();
        if authority.is_empty() || authority.contains(['?', '#', ' ']) {
            return Err(format!("'{url}' has no host; use http://127.0.0.1:PORT"));
        }
        Ok(Endpoint::Http(format!("http://{rest}")))
    }
}

impl fmt::Display for Endpoint {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Endpoint::Unix(path) => write!(f, "unix://{}", path.display()),
            Endpoint::Http(url) => write!(f, "{url}"),
        }
    }
}

/// Where the address came from, which decides what a failure to connect means.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Origin {
    /// `--host`.
    HostFlag,
    /// The global `app -H` flag, through the context.
    GlobalHost,
    /// The socket `<name>.sock` in the runtime directory.
    Socket,
    /// The URL in this `<name>.listen` file.
    ListenFile(PathBuf),
}

/// The repeater to talk to and how it was found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Target {
    /// Its address.
    pub endpoint: Endpoint,
    /// How we learnt it.
    pub origin: Origin,
    /// The `--name` in force (for messages).
    pub name: String,
}

/// Chooses the repeater: `host` (from `--host`) first, then the first global
/// host, then the runtime files of `name` in `plugin_dir`.
pub fn find(
    name: &str,
    host: Option<&Endpoint>,
    global_hosts: &[String],
    plugin_dir: &Path,
) -> Result<Target, Error> {
    let target = |endpoint, origin| Target {
        endpoint,
        origin,
        name: name.to_string(),
    };
    if let Some(endpoint) = host {
        return Ok(target(endpoint.clone(), Origin::HostFlag));
    }
    if let Some(global) = global_hosts.first() {
        let endpoint = Endpoint::parse(global)
            .map_err(|e| Error::Usage(format!("the global -H/--host value {e}")))?;
        return Ok(target(endpoint, Origin::GlobalHost));
    }
    let socket = plugin_dir.join(format!("{name}.sock"));
    // symlink_metadata: a socket file is there even when nobody listens on it,
    // and then we want to say "stale", not "not running".
    if socket.symlink_metadata().is_ok() {
        return Ok(target(Endpoint::Unix(socket), Origin::Socket));
    }
    let listen = plugin_dir.join(format!("{name}.listen"));
    if let Ok(text) = std::fs::read_to_string(&listen) {
        let endpoint = Endpoint::parse(&text).map_err(|e| {
            Error::Failed(format!(
                "the listen file {} does not hold an API address: {e}; remove it or restart the repeater",
                listen.display()
            ))
        })?;
        return Ok(target(endpoint, Origin::ListenFile(listen)));
    }
    Err(Error::NotRunning {
        name: name.to_string(),
        socket,
    })
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
        for bad in [
            "unix://rel.sock",
            "ftp://x",
            "https://h:1",
            "http://",
            "localhost:80",
        ] {
            assert!(Endpoint::parse(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn host_flag_wins_over_everything() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("r.sock"), "").unwrap();
        let flag = Endpoint::Http("http://127.0.0.1:1".into());
        let t = find("r", Some(&flag), &["unix:///g.sock".into()], dir.path()).unwrap();
        assert_eq!((t.endpoint, t.origin), (flag, Origin::HostFlag));
    }

    #[test]
    fn global_host_wins_over_files() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("r.sock"), "").unwrap();
        let t = find(
            "r",
            None,
            &["unix:///g.sock".into(), "http://127.0.0.1:2".into()],
            dir.path(),
        )
        .unwrap();
        assert_eq!(t.endpoint, Endpoint::Unix("/g.sock".into()));
        assert_eq!(t.origin, Origin::GlobalHost);
        let err = find("r", None, &["bogus".into()], dir.path()).unwrap_err();
        assert_eq!(err.exit_code(), 2);
        assert!(err.to_string().contains("-H"), "{err}");
    }

    #[test]
    fn socket_then_listen_file() {
        let dir = tempfile::tempdir().unwrap();
        let listen = dir.path().join("r.listen");
        std::fs::write(&listen, "http://127.0.0.1:4567\n").unwrap();
        let t = find("r", None, &[], dir.path()).unwrap();
        assert_eq!(t.endpoint, Endpoint::Http("http://127.0.0.1:4567".into()));
        assert_eq!(t.origin, Origin::ListenFile(listen));

        let socket = dir.path().join("r.sock");
        std::fs::write(&socket, "").unwrap();
        let t = find("r", None, &[], dir.path()).unwrap();
        assert_eq!(t.endpoint, Endpoint::Unix(socket));
        assert_eq!(t.origin, Origin::Socket);
    }

    #[test]
    fn nothing_there_is_not_running() {
        let dir = tempfile::tempdir().unwrap();
        let err = find("r1", None, &[], dir.path()).unwrap_err();
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
        let err = find("r", None, &[], dir.path()).unwrap_err();
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
