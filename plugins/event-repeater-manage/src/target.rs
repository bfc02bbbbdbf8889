//! Finding the repeater to talk to: `--host`, else the global `-H` host, else
//! the files a repeater named `--name` writes in `APP_RUNTIME_DIR/plugins/`
//! (its unix socket `<name>.sock`, or the TCP URL in `<name>.listen`).

use std::path::{Path, PathBuf};
use std::time::Duration;

use crate::address::Endpoint;
use crate::error::Error;

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
    let mut closed = None;
    for dir in local_dirs(plugin_dir) {
        let socket = dir.join(format!("{name}.sock"));
        // symlink_metadata: a socket file is there even when nobody listens on it,
        // and then we want to say "stale", not "not running".
        match socket.symlink_metadata() {
            Ok(_) => return Ok(target(Endpoint::Unix(socket), Origin::Socket)),
            Err(e) if e.kind() == std::io::ErrorKind::PermissionDenied => {
                closed.get_or_insert(socket.clone());
            }
            Err(_) => {}
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
    if let Some(socket) = closed {
        return Err(Error::NoAccess {
            name: name.to_string(),
            group: crate::access::group_of_closed(&socket),
            socket,
        });
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
/// (what shell completion looks up; commands use [`crate::resolve::targets`]).
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
