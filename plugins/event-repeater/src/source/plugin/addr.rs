//! An event plugin's address as `--source` gives it: its instance name,
//! a socket, or `http://[USER:PASSWORD@]HOST:PORT`, with the HTTP Basic
//! credentials masked wherever it is shown.

use std::path::{Path, PathBuf};

use app_plugin::address::{join_host_port, Rules, Scheme};

pub use crate::basic_auth::BasicAuth;

/// Where an event plugin is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SourceAddr {
    Unix(PathBuf),
    Tcp {
        host: String,
        port: u16,
        /// From `http://USER:PASSWORD@…`: sent as HTTP Basic authentication.
        auth: Option<BasicAuth>,
    },
}

impl std::fmt::Display for SourceAddr {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            SourceAddr::Unix(p) => write!(f, "unix:{}", p.display()),
            SourceAddr::Tcp { host, port, auth } => {
                let user = auth.as_ref().map(|a| format!("{a:?}@")).unwrap_or_default();
                write!(f, "http://{user}{}", join_host_port(host, *port))
            }
        }
    }
}

/// `event-time` → its socket; `/path/x.sock` or `./x.sock` → that socket;
/// `unix:///path` → that socket; `http://[USER:PASSWORD@]host:port` → TCP,
/// the credentials (percent-decoded) sent as HTTP Basic authentication.
/// Messages show the text with its password masked.
pub fn parse_source(text: &str, plugin_dir: &Path) -> Result<SourceAddr, String> {
    let shown = app_plugin::redact::url(text);
    if text.starts_with("http://") {
        // The event plugin's dialect asks its own paths: a path given is ignored.
        let a = PLUGIN_URLS
            .parse(text)
            .map_err(|e| format!("--source {e}"))?;
        let auth = match (a.user, a.password) {
            (None, None) => None,
            (Some(user), password) if !user.is_empty() => {
                Some(BasicAuth::new(&user, &password.unwrap_or_default()))
            }
            _ => {
                return Err(format!(
                    "--source {shown:?}: the user name before '@' is empty; use http://USER:PASSWORD@HOST:PORT"
                ))
            }
        };
        return Ok(SourceAddr::Tcp {
            host: a.host,
            port: a.port,
            auth,
        });
    }
    if let Some(path) = text.strip_prefix("unix://") {
        if !path.starts_with('/') {
            return Err(format!(
                "--source {shown:?}: a unix:// source is unix:///absolute/path.sock (no user, no relative path)"
            ));
        }
        return Ok(SourceAddr::Unix(PathBuf::from(path)));
    }
    if text.contains("://") {
        return Err(format!(
            "--source {shown:?}: unsupported scheme; use a plugin name, a socket path, http://HOST:PORT, or an SSE feed's http(s):// URL"
        ));
    }
    if text.is_empty() {
        return Err("--source must not be empty".into());
    }
    if text.contains('/') {
        return Ok(SourceAddr::Unix(PathBuf::from(text)));
    }
    // A plugin's instance name; `u:pw@host:port` or `host:port` without a
    // scheme is none, and would otherwise be shown as a socket name.
    if app_plugin::instance::check_name(text).is_err() {
        return Err(format!(
            "--source {shown:?} is neither a plugin instance name (letters, digits, '-', '_', '.') nor a path nor a URL; for a TCP source use http://HOST:PORT (credentials as http://USER:PASSWORD@HOST:PORT)"
        ));
    }
    Ok(SourceAddr::Unix(plugin_dir.join(format!("{text}.sock"))))
}

/// An event plugin over TCP: `http://[USER:PASSWORD@]HOST[:PORT]`, the
/// credentials sent as HTTP Basic authentication.
const PLUGIN_URLS: Rules = Rules {
    schemes: &[Scheme::plain("http", 80)],
    bare: None,
    path: true,
    credentials: None,
};

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sources() {
        let d = Path::new("/p");
        assert_eq!(
            parse_source("ev", d),
            Ok(SourceAddr::Unix("/p/ev.sock".into()))
        );
        assert_eq!(
            parse_source("./x.sock", d),
            Ok(SourceAddr::Unix("./x.sock".into()))
        );
        assert_eq!(
            parse_source("unix:///a/b", d),
            Ok(SourceAddr::Unix("/a/b".into()))
        );
        assert_eq!(
            parse_source("http://127.0.0.1:99/", d),
            Ok(SourceAddr::Tcp {
                host: "127.0.0.1".into(),
                port: 99,
                auth: None
            })
        );
        // Credentials: parsed (percent-decoded), sent as Basic, never shown.
        let with = parse_source("http://u:hun%40ter5@127.0.0.1:1/events", d).unwrap();
        let SourceAddr::Tcp { host, port, auth } = &with else {
            panic!("{with:?}")
        };
        assert_eq!((host.as_str(), *port), ("127.0.0.1", 1));
        // base64("u:hun@ter5")
        assert_eq!(
            auth.as_ref().map(BasicAuth::header),
            Some("Basic dTpodW5AdGVyNQ==")
        );
        assert_eq!(with.to_string(), "http://***:***@127.0.0.1:1");
        assert!(!format!("{with:?}").contains("hun"));
        let err = parse_source("http://:hunter5@h:1", d).unwrap_err();
        assert!(
            err.contains("user name") && !err.contains("hunter5"),
            "{err}"
        );
        assert!(parse_source("https://x", d).is_err());
    }
}
