//! Plugin indexes for the tests: a minisign key pair made by the real
//! `minisign` tool, a sandbox and a local HTTP server to publish signed
//! indexes and plugin archives on ([`World`]), used by `plugin_index` and
//! `plugin_index_install`.

use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use super::http_server::Server;
use super::run::Ran;
use super::{snapshot, Sandbox};
use serde_json::{json, Value};
use sha2::{Digest, Sha256};

pub fn sha256(bytes: &[u8]) -> String {
    Sha256::digest(bytes)
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

/// A `.tar.gz` holding `app-NAME`, a script that answers `__app_metadata`
/// with `version` and prints "NAME VERSION".
pub fn archive(name: &str, version: &str) -> Vec<u8> {
    let script = format!(
        "#!/bin/sh\nif [ \"${{1-}}\" = __app_metadata ]; then echo '{{\"apiVersion\":\"app.plugin/v1\",\"version\":\"{version}\"}}'; exit 0; fi\necho \"{name} {version}\"\n"
    );
    let gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
    let mut builder = tar::Builder::new(gz);
    let mut header = tar::Header::new_gnu();
    header.set_size(script.len() as u64);
    header.set_mode(0o755);
    header.set_cksum();
    builder
        .append_data(
            &mut header,
            format!("{name}-{version}/app-{name}"),
            script.as_bytes(),
        )
        .unwrap();
    builder.into_inner().unwrap().finish().unwrap()
}

/// A minisign key pair made by the real tool.
pub struct Key {
    pub public: PathBuf,
    pub secret: PathBuf,
}

impl Key {
    pub fn new(dir: &Path, name: &str) -> Key {
        let key = Key {
            public: dir.join(format!("{name}.pub")),
            secret: dir.join(format!("{name}.key")),
        };
        let out = Command::new("minisign")
            .args(["-G", "-W", "-p"])
            .arg(&key.public)
            .arg("-s")
            .arg(&key.secret)
            .stdin(Stdio::null())
            .output()
            .expect("run minisign -G");
        assert!(out.status.success(), "minisign -G: {out:?}");
        key
    }

    /// The `.minisig` of `bytes`, made by `minisign -S`.
    pub fn sign(&self, bytes: &[u8]) -> Vec<u8> {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("index.json");
        fs::write(&file, bytes).unwrap();
        let out = Command::new("minisign")
            .arg("-S")
            .arg("-s")
            .arg(&self.secret)
            .arg("-m")
            .arg(&file)
            .stdin(Stdio::null())
            .output()
            .expect("run minisign -S");
        assert!(out.status.success(), "minisign -S: {out:?}");
        fs::read(dir.path().join("index.json.minisig")).unwrap()
    }
}

/// A sandbox, an HTTP server, and a key to sign indexes with.
pub struct World {
    pub sb: Sandbox,
    pub server: Server,
    pub key: Key,
}

pub const FUTURE: &str = "2999-01-01T00:00:00Z";

/// Now plus `secs` (negative: ago), as RFC 3339 in UTC, by `date`.
pub fn utc(secs: i64) -> String {
    let out = Command::new("date")
        .args([
            "-u",
            "-d",
            &format!("{secs} seconds"),
            "+%Y-%m-%dT%H:%M:%SZ",
        ])
        .output()
        .expect("run date");
    assert!(out.status.success(), "{out:?}");
    String::from_utf8_lossy(&out.stdout).trim().to_string()
}

pub fn here() -> (&'static str, &'static str) {
    (std::env::consts::OS, std::env::consts::ARCH)
}

impl World {
    /// `None` (after one line naming the package) where minisign is missing.
    pub fn new() -> Option<World> {
        super::require_tool("minisign", "minisign")?;
        let sb = Sandbox::new();
        let key = Key::new(sb.path(), "publisher");
        Some(World {
            sb,
            server: Server::start(),
            key,
        })
    }

    pub fn app(&self, args: &[&str]) -> Ran {
        let mut cmd = self.sb.app_without_proxy();
        cmd.args(args);
        super::run::Run::new(cmd).assert()
    }

    pub fn plugin_dir(&self) -> PathBuf {
        self.sb.data_dir().join("plugins")
    }

    pub fn cache_dir(&self) -> PathBuf {
        self.sb.path().join("cache")
    }

    /// Serves `name`'s archive of `version` at `/NAME-VERSION.tar.gz` and
    /// returns its index entry (a build for this machine).
    pub fn plugin(&self, name: &str, version: &str) -> Value {
        let bytes = archive(name, version);
        let file = format!("{name}-{version}.tar.gz");
        self.server.serve(&format!("/{file}"), &bytes);
        let (os, arch) = here();
        json!({"name": name, "version": version, "description": format!("the {name} plugin"),
               "homepage": format!("https://example.org/{name}"),
               "platforms": [{"os": os, "arch": arch, "url": file, "sha256": sha256(&bytes)}]})
    }

    /// Serves each `(name, version)` and returns their index entries.
    pub fn plugins(&self, list: &[(&str, &str)]) -> Vec<Value> {
        list.iter().map(|(n, v)| self.plugin(n, v)).collect()
    }

    /// The usual index: `/index.json` with `serial`, signed by the world's
    /// key, valid until [`FUTURE`]; its URL.
    pub fn signed_index(&self, serial: u64, plugins: &[(&str, &str)]) -> String {
        let plugins = self.plugins(plugins);
        self.publish("index.json", serial, FUTURE, plugins, &self.key)
    }

    /// [`World::signed_index`], added as the index `main`; its URL.
    pub fn main_index(&self, serial: u64, plugins: &[(&str, &str)]) -> String {
        let url = self.signed_index(serial, plugins);
        self.add("main", &url).code(0);
        url
    }

    /// Two signed indexes at serial 1, `/main.json` and `/extra.json`,
    /// added as `main` and then `extra`.
    pub fn main_and_extra(&self, main: &[(&str, &str)], extra: &[(&str, &str)]) {
        for (name, plugins) in [("main", main), ("extra", extra)] {
            let plugins = self.plugins(plugins);
            let url = self.publish(&format!("{name}.json"), 1, FUTURE, plugins, &self.key);
            self.add(name, &url).code(0);
        }
    }

    /// Publishes an index at `/PATH` with its signature by `key` beside it.
    pub fn publish(
        &self,
        path: &str,
        serial: u64,
        expires: &str,
        plugins: Vec<Value>,
        key: &Key,
    ) -> String {
        // Named by its URL, as docs/plugin-index.md asks of publishers.
        let url = self.server.url(&format!("/{path}"));
        let bytes = serde_json::to_vec_pretty(&json!({
            "apiVersion": "app.index/v1", "index": url, "serial": serial, "expires": expires,
            "plugins": plugins
        }))
        .unwrap();
        self.publish_bytes(path, &bytes, key);
        self.server.url(&format!("/{path}"))
    }

    pub fn publish_bytes(&self, path: &str, bytes: &[u8], key: &Key) {
        self.server.serve(&format!("/{path}"), bytes);
        self.server
            .serve(&format!("/{path}.minisig"), &key.sign(bytes));
    }

    pub fn add(&self, name: &str, url: &str) -> Ran {
        self.app(&[
            "plugin",
            "index",
            "add",
            name,
            url,
            "--key-file",
            self.key.public.to_str().unwrap(),
        ])
    }

    /// Runs `args`, expecting exit `code` and `needles` on stderr, with the
    /// plugin directory, the cached indexes and the index list unchanged.
    #[track_caller]
    pub fn refused(&self, args: &[&str], code: i32, needles: &[&str]) -> Ran {
        let dirs = [self.plugin_dir(), self.cache_dir(), self.sb.config_dir()];
        let before: Vec<_> = dirs.iter().map(|d| snapshot(d)).collect();
        let ran = self.app(args).code(code);
        for needle in needles {
            assert!(
                ran.stderr.contains(needle),
                "expected {needle:?} in stderr: {ran:?}"
            );
        }
        let after: Vec<_> = dirs.iter().map(|d| snapshot(d)).collect();
        assert!(before == after, "{args:?} changed a file: {ran:?}");
        ran
    }
}

/// `app __complete WORDS…`: the candidates' values, without descriptions,
/// and the directive line.
pub fn complete(w: &World, words: &[&str]) -> (Vec<String>, String) {
    let mut args = vec!["__complete"];
    args.extend_from_slice(words);
    let ran = w.app(&args).code(0);
    let mut lines: Vec<String> = ran
        .stdout
        .lines()
        .map(|l| l.split('\t').next().unwrap_or("").to_string())
        .collect();
    let directive = lines.pop().unwrap_or_default();
    (lines, directive)
}
