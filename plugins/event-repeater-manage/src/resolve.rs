//! Which repeaters a command is for: the `--host`/`-H` words (addresses,
//! names and `@groups` of the config file, see [`crate::hosts`]) turned
//! into [`Target`]s, else the repeater named `--name` on this machine.
//!
//! A named host's `token_file` and `ca_file` apply to it; `--token`
//! (`APP_TOKEN`) and `--ca-file` apply to the hosts that have none.

use std::path::Path;

use crate::address::{Endpoint, HostWord};
use crate::cli::Conn;
use crate::error::Error;
use crate::hosts::Inventory;
use crate::io::Io;
use crate::target::{find_local, Origin, Target};

/// Largest token file read.
const MAX_TOKEN: u64 = 64 * 1024;

/// The repeaters the command is for: `--host` values, else the global `-H`
/// hosts, else the one named `--name` on this machine.
pub fn targets(conn: &Conn, io: &Io<'_>) -> Result<Vec<Target>, Error> {
    let defaults = Defaults {
        name: &conn.name,
        token: conn.token.as_deref(),
        ca_file: conn.ca_file.as_deref(),
        timeout: conn.timeout,
        config_file: io.config_file,
    };
    if !conn.hosts.is_empty() {
        return resolve(&conn.hosts, &defaults);
    }
    if !io.global_hosts.is_empty() {
        let words = io
            .global_hosts
            .iter()
            .map(|h| {
                HostWord::parse(h)
                    .map_err(|e| Error::Usage(format!("the global -H/--host value {e}")))
            })
            .collect::<Result<Vec<_>, _>>()?;
        return resolve(&words, &defaults);
    }
    Ok(vec![find_local(
        &conn.name,
        conn.token.clone(),
        conn.ca_file.clone(),
        conn.timeout,
        io.plugin_dir,
    )?])
}

/// What resolving needs besides the words.
pub struct Defaults<'a> {
    /// `--name`.
    pub name: &'a str,
    /// `--token` or `APP_TOKEN`.
    pub token: Option<&'a str>,
    /// `--ca-file`.
    pub ca_file: Option<&'a Path>,
    /// `--timeout`.
    pub timeout: std::time::Duration,
    /// The config file, read only when a name or group is used.
    pub config_file: &'a Path,
}

/// The targets the words name, in order, each once. The config file is read
/// only when a word is a name or a group.
pub fn resolve(words: &[HostWord], d: &Defaults<'_>) -> Result<Vec<Target>, Error> {
    let needs_config = words.iter().any(|w| !matches!(w, HostWord::Url(_)));
    let inv = if needs_config {
        Inventory::load(d.config_file)?
    } else {
        Inventory::default()
    };
    let mut out: Vec<Target> = Vec::new();
    let mut push = |t: Target| {
        if !out
            .iter()
            .any(|o| o.endpoint == t.endpoint && o.host_name == t.host_name)
        {
            out.push(t);
        }
    };
    for word in words {
        match word {
            HostWord::Url(e) => push(given(e.clone(), None, d)),
            HostWord::Name(n) => push(named(&inv, n, d)?),
            HostWord::Group(g) => {
                let members = inv
                    .groups
                    .get(g)
                    .ok_or_else(|| inv.unknown("group", g, inv.groups.keys().collect()))?;
                if members.is_empty() {
                    return Err(Error::Usage(format!(
                        "the group '{g}' in {} is empty",
                        inv.path.display()
                    )));
                }
                for m in members {
                    match HostWord::parse(m) {
                        Ok(HostWord::Url(e)) => push(given(e, None, d)),
                        Ok(HostWord::Name(n)) => push(named(&inv, &n, d)?),
                        _ => {
                            return Err(Error::Usage(format!(
                                "groups.{g} in {}: '{m}' is not a host name or an address (groups do not nest)",
                                inv.path.display()
                            )))
                        }
                    }
                }
            }
        }
    }
    Ok(out)
}

fn given(endpoint: Endpoint, host_name: Option<String>, d: &Defaults<'_>) -> Target {
    Target {
        endpoint,
        origin: Origin::Given,
        name: d.name.to_string(),
        host_name,
        token: d.token.map(String::from),
        ca_file: d.ca_file.map(Path::to_path_buf),
        timeout: d.timeout,
    }
}

fn named(inv: &Inventory, name: &str, d: &Defaults<'_>) -> Result<Target, Error> {
    let host = inv.hosts.get(name).ok_or_else(|| {
        if inv.groups.contains_key(name) {
            // `-H edges` for the group `edges`: a group needs its `@`.
            return Error::Usage(format!(
                "'{name}' is a group in the config file {}, not a host; write it with an @: -H @{name}",
                inv.path.display()
            ));
        }
        inv.unknown("host", name, inv.hosts.keys().collect())
    })?;
    let mut t = given(host.endpoint.clone(), Some(name.to_string()), d);
    if let Some(file) = &host.token_file {
        let what = format!("the token file of host '{name}'");
        let text = crate::files::read_secret(file, MAX_TOKEN, &what)?;
        let token = text.lines().next().unwrap_or_default().trim().to_string();
        if token.is_empty() {
            return Err(Error::Usage(format!(
                "the token file {} of host '{name}' is empty; put the token on its first line",
                file.display()
            )));
        }
        t.token = Some(token);
    }
    if let Some(ca) = &host.ca_file {
        t.ca_file = Some(ca.clone());
    }
    Ok(t)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn defaults<'a>(config: &'a Path) -> Defaults<'a> {
        Defaults {
            name: "event-repeater",
            token: Some("flag"),
            ca_file: None,
            timeout: std::time::Duration::from_secs(1),
            config_file: config,
        }
    }

    #[test]
    fn names_groups_and_addresses_resolve_in_order_once() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("e1.token"), "secret1\nignored\n").unwrap();
        let config = dir.path().join("config.json");
        std::fs::write(
            &config,
            r#"{"aliases": {}, "hosts": {
                 "e1": {"url": "https://e1.example.org:7070", "token_file": "e1.token", "ca_file": "/ca.pem"},
                 "e2": {"url": "http://127.0.0.1:2"}},
               "groups": {"edges": ["e1", "e2", "http://127.0.0.1:3"]}}"#,
        )
        .unwrap();
        let words: Vec<HostWord> = ["@edges", "e1", "http://127.0.0.1:4"]
            .iter()
            .map(|w| HostWord::parse(w).unwrap())
            .collect();
        let t = resolve(&words, &defaults(&config)).unwrap();
        let labels: Vec<String> = t.iter().map(Target::label).collect();
        assert_eq!(
            labels,
            ["e1", "e2", "http://127.0.0.1:3", "http://127.0.0.1:4"]
        );
        assert_eq!(t[0].token.as_deref(), Some("secret1"));
        assert_eq!(t[0].ca_file.as_deref(), Some(Path::new("/ca.pem")));
        assert_eq!(t[0].described(), "e1 (https://e1.example.org:7070)");
        assert_eq!(t[1].token.as_deref(), Some("flag"));
    }

    #[test]
    fn unknown_names_list_the_known_ones() {
        let dir = tempfile::tempdir().unwrap();
        let config = dir.path().join("config.json");
        std::fs::write(
            &config,
            r#"{"hosts": {"e1": {"url": "http://127.0.0.1:1"}}}"#,
        )
        .unwrap();
        let err = resolve(&[HostWord::Name("e9".into())], &defaults(&config)).unwrap_err();
        assert_eq!(err.exit_code(), 2);
        assert!(err.to_string().contains("no host 'e9'"), "{err}");
        assert!(err.to_string().contains("known: e1"), "{err}");
        let err = resolve(&[HostWord::Group("g".into())], &defaults(&config)).unwrap_err();
        assert!(err.to_string().contains("none are defined"), "{err}");
        // A group's name without its @ says how to write it.
        std::fs::write(
            &config,
            r#"{"hosts": {"e1": {"url": "http://127.0.0.1:1"}}, "groups": {"edges": ["e1"]}}"#,
        )
        .unwrap();
        let err = resolve(&[HostWord::Name("edges".into())], &defaults(&config)).unwrap_err();
        assert_eq!(err.exit_code(), 2);
        assert!(
            err.to_string().contains("write it with an @: -H @edges"),
            "{err}"
        );
        assert!(resolve(&[HostWord::Group("edges".into())], &defaults(&config)).is_ok());
    }

    #[test]
    fn addresses_alone_never_read_the_config() {
        let words = [HostWord::Url(Endpoint::Http("http://127.0.0.1:1".into()))];
        let t = resolve(&words, &defaults(Path::new("/dev/zero"))).unwrap();
        assert_eq!(t.len(), 1);
    }

    #[test]
    fn bad_config_files_are_refused() {
        let dir = tempfile::tempdir().unwrap();
        let config = dir.path().join("config.json");
        let word = [HostWord::Name("e1".into())];
        for (text, want) in [
            ("{", "not valid JSON"),
            (r#"{"hosts": []}"#, "must be an object"),
            (r#"{"hosts": {"e1": {}}}"#, "no \"url\""),
            (r#"{"hosts": {"e1": {"url": "ftp://x"}}}"#, "hosts.e1.url"),
            (
                r#"{"hosts": {"e1": {"url": "http://h:1", "tok": 1}}}"#,
                "hosts.e1.tok is unknown",
            ),
            (
                r#"{"hosts": {"e1": {"url": "http://h:1", "token_file": "none"}}}"#,
                "token file of host 'e1'",
            ),
        ] {
            std::fs::write(&config, text).unwrap();
            let err = resolve(&word, &defaults(&config)).unwrap_err();
            assert_eq!(err.exit_code(), 2, "{text}");
            assert!(err.to_string().contains(want), "{text}: {err}");
        }
        let err = resolve(&word, &defaults(dir.path())).unwrap_err();
        assert!(err.to_string().contains("not a regular file"), "{err}");
    }
}
