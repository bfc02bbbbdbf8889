//! Relaying feeds nobody here wrote (issue 29): `--source` as any http(s)
//! URL, read as a plain SSE stream with the headers, token and CA the
//! flags give, topics from a JSON pointer or the event name, text payloads,
//! and the statuses servers answer with. The feeds are served by
//! `feed_server.py` (python3's own http.server and ssl), started per test
//! on a free port of 127.0.0.1; its certificate comes from a CA made at
//! test time.

use crate::common;

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Duration;

use common::process::Proc;
use common::{free_port, require_tool, wait_for};
use serde_json::Value;

mod plain;
mod starlette;
mod templates;
mod wikimedia;

const SERVER: &str = include_str!("feed_server.py");

/// A running `feed_server.py`.
pub(crate) struct Feed {
    _proc: Proc,
    pub port: u16,
    log: PathBuf,
}

impl Feed {
    /// `MODE` over plain HTTP (`tls`: None) or HTTPS with `(cert, key,
    /// token)`; `None` where python3 is missing.
    pub(crate) fn start(
        dir: &Path,
        mode: &str,
        count: u64,
        tls: Option<(&Path, &Path, &str)>,
    ) -> Option<Feed> {
        let python = require_tool("python3", "python3")?;
        let script = dir.join("feed_server.py");
        std::fs::write(&script, SERVER).unwrap();
        let port = free_port();
        let log = dir.join(format!("feed-{mode}.log"));
        let mut cmd = Command::new(python);
        cmd.arg(&script)
            .args([mode, &port.to_string()])
            .arg(&log)
            .arg(count.to_string())
            .stdout(Stdio::null())
            .stderr(Stdio::inherit());
        if let Some((cert, key, token)) = tls {
            cmd.arg(cert).arg(key).arg(token);
        }
        let proc = Proc::spawn("feed_server.py", &mut cmd);
        let up = wait_for(Duration::from_secs(10), || {
            std::net::TcpStream::connect(("127.0.0.1", port)).ok()
        });
        assert!(up.is_some(), "feed_server.py did not listen on {port}");
        Some(Feed {
            _proc: proc,
            port,
            log,
        })
    }

    /// Every request it answered, oldest first.
    pub(crate) fn requests(&self) -> Vec<Value> {
        std::fs::read_to_string(&self.log)
            .unwrap_or_default()
            .lines()
            .filter_map(|l| serde_json::from_str(l).ok())
            .collect()
    }
}

/// A CA and a certificate for 127.0.0.1 it signs, written to `dir`:
/// (ca, cert, key).
pub(crate) fn pki(dir: &Path) -> (PathBuf, PathBuf, PathBuf) {
    let mut params = rcgen::CertificateParams::new(Vec::<String>::new()).expect("params");
    params.is_ca = rcgen::IsCa::Ca(rcgen::BasicConstraints::Unconstrained);
    params
        .distinguished_name
        .push(rcgen::DnType::CommonName, "feed test CA");
    let ca_key = rcgen::KeyPair::generate().expect("CA key");
    let ca = rcgen::CertifiedIssuer::self_signed(params, ca_key).expect("CA certificate");
    let params = rcgen::CertificateParams::new(vec!["127.0.0.1".to_string()]).expect("params");
    let key = rcgen::KeyPair::generate().expect("key");
    let cert = params.signed_by(&key, &ca).expect("sign");
    let paths = (
        dir.join("ca.pem"),
        dir.join("feed.crt"),
        dir.join("feed.key"),
    );
    std::fs::write(&paths.0, ca.pem()).unwrap();
    std::fs::write(&paths.1, cert.pem()).unwrap();
    std::fs::write(&paths.2, key.serialize_pem()).unwrap();
    paths
}
