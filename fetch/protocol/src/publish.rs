//! `app plugin index init` and `publish`, which `app_fetch` carries out
//! (the signing and packing crates live there, not in `app`): `app` runs
//! `app_fetch --publish JSON` with the terminal's stdin, stdout and stderr
//! (the secret key's password is asked on the terminal, as `minisign`
//! asks it), and ends with its exit code.

use std::path::PathBuf;

use serde::{Deserialize, Serialize};

/// The first argument that makes `app_fetch` publish instead of fetch.
pub const FLAG: &str = "--publish";

/// What to publish.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub enum Request {
    /// A new, empty, signed index in `dir`.
    Init {
        dir: PathBuf,
        /// Where the secret key is or goes (`None`: minisign's usual place).
        secret_key: Option<PathBuf>,
        /// A new secret key is written without a password.
        no_password: bool,
        /// The index's name for itself (its `index` field).
        id: Option<String>,
    },
    /// A plugin's build added to (or replaced in) the index in `dir`.
    Publish {
        dir: PathBuf,
        /// The executable `app-NAME`, or a folder holding it (and
        /// `completions/`, `man/`, `share/`).
        plugin: PathBuf,
        version: String,
        os: String,
        arch: String,
        secret_key: Option<PathBuf>,
        description: Option<String>,
        homepage: Option<String>,
    },
}

/// The arguments of `app_fetch` for `request`.
pub fn args(request: &Request) -> Vec<String> {
    vec![
        FLAG.to_string(),
        serde_json::to_string(request).unwrap_or_default(),
    ]
}

/// The request in `app_fetch`'s arguments (after [`FLAG`]).
pub fn parse(json: &str) -> Option<Request> {
    serde_json::from_str(json).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_request_round_trips() {
        let request = Request::Publish {
            dir: "/srv/index".into(),
            plugin: "./app-hello".into(),
            version: "1.1.0".into(),
            os: "linux".into(),
            arch: "x86_64".into(),
            secret_key: None,
            description: Some("Says hello".into()),
            homepage: None,
        };
        let argv = args(&request);
        assert_eq!(argv[0], FLAG);
        assert_eq!(parse(&argv[1]), Some(request));
    }
}
