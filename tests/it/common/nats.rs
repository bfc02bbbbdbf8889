//! A real `nats-server` for the tests, with JetStream, credentials or as a
//! cluster on loopback (see [`NatsServer`]).

use std::fs;
use std::path::{Path, PathBuf};

use super::server::Server;
use super::{free_port, require_tool};

/// A real `nats-server` with JetStream (`-js`), its store in a temp dir,
/// on a free port on 127.0.0.1; optionally one node of a cluster whose
/// routes are on loopback. Controllable like [`super::broker::Broker`]; killed on drop.
/// `None` (after the skip line naming the `nats-server` package) when it is
/// not installed, a failure under `APP_TEST_REQUIRE_ALL=1`.
pub struct NatsServer {
    server: Server,
    pub port: u16,
    // Dropped after the server (fields drop in order): its files outlive it.
    dir: tempfile::TempDir,
}

impl NatsServer {
    /// One server with JetStream.
    pub fn start() -> Option<NatsServer> {
        let exe = require_tool("nats-server", "nats-server")?;
        Some(NatsServer::with_config(exe, free_port(), |_| String::new()))
    }

    /// One server without JetStream (core NATS only) on `port`.
    pub fn start_without_jetstream(port: u16) -> Option<NatsServer> {
        let exe = require_tool("nats-server", "nats-server")?;
        Some(NatsServer::with_config_js(exe, port, false, |_| {
            String::new()
        }))
    }

    /// One server with JetStream in operator mode: it takes only clients
    /// with a user JWT signed by its account, as `nsc` would set it up. The
    /// operator, account and user keys and JWTs are made here; returns the
    /// server and a `.creds` file for the user.
    pub fn start_with_creds() -> Option<(NatsServer, PathBuf)> {
        let exe = require_tool("nats-server", "nats-server")?;
        let operator = nkeys::KeyPair::new_operator();
        let account = nkeys::KeyPair::new_account();
        let system = nkeys::KeyPair::new_account();
        let user = nkeys::KeyPair::new_user();
        let unlimited = serde_json::json!({
            "subs": -1, "data": -1, "payload": -1, "imports": -1, "exports": -1,
            "wildcards": true, "conn": -1, "leaf": -1,
            "mem_storage": -1, "disk_storage": -1, "streams": -1, "consumer": -1
        });
        let operator_jwt = nats_jwt(
            &operator,
            &operator.public_key(),
            "operator",
            serde_json::json!({}),
        );
        let account_jwt = nats_jwt(
            &operator,
            &account.public_key(),
            "account",
            serde_json::json!({ "limits": unlimited }),
        );
        let system_jwt = nats_jwt(
            &operator,
            &system.public_key(),
            "account",
            serde_json::json!({}),
        );
        let user_jwt = nats_jwt(
            &account,
            &user.public_key(),
            "user",
            serde_json::json!({ "pub": {}, "sub": {}, "subs": -1, "data": -1, "payload": -1 }),
        );
        let seed = user.seed().expect("a user seed");
        let server = NatsServer::with_config(exe, free_port(), |_| {
            format!(
                "operator: \"{operator_jwt}\"\nresolver: MEMORY\nsystem_account: {sys}\nresolver_preload: {{\n  {acc}: \"{account_jwt}\"\n  {sys}: \"{system_jwt}\"\n}}\n",
                acc = account.public_key(),
                sys = system.public_key(),
            )
        });
        let creds = server.dir.path().join("user.creds");
        fs::write(
            &creds,
            format!(
                "-----BEGIN NATS USER JWT-----\n{user_jwt}\n------END NATS USER JWT------\n\n\
                 -----BEGIN USER NKEY SEED-----\n{seed}\n------END USER NKEY SEED------\n"
            ),
        )
        .expect("write user.creds");
        // Private, as nsc writes it (one others can read is warned about).
        use std::os::unix::fs::PermissionsExt;
        fs::set_permissions(&creds, fs::Permissions::from_mode(0o600)).expect("chmod user.creds");
        Some((server, creds))
    }

    /// `n` servers with JetStream, clustered over routes on loopback; every
    /// one is up when this returns (the cluster may still elect its leader).
    pub fn cluster(n: usize) -> Option<Vec<NatsServer>> {
        let exe = require_tool("nats-server", "nats-server")?;
        let ports: Vec<(u16, u16)> = (0..n).map(|_| (free_port(), free_port())).collect();
        let routes: Vec<String> = ports
            .iter()
            .map(|(_, r)| format!("nats-route://127.0.0.1:{r}"))
            .collect();
        let servers = ports
            .iter()
            .map(|&(port, route)| {
                NatsServer::with_config(exe.clone(), port, |_| {
                    format!(
                        "cluster {{\n  name: app-test\n  listen: 127.0.0.1:{route}\n  routes: [{}]\n}}\n",
                        routes.join(", ")
                    )
                })
            })
            .collect();
        Some(servers)
    }

    fn with_config(exe: PathBuf, port: u16, extra: impl Fn(&Path) -> String) -> NatsServer {
        NatsServer::with_config_js(exe, port, true, extra)
    }

    fn with_config_js(
        exe: PathBuf,
        port: u16,
        jetstream: bool,
        extra: impl Fn(&Path) -> String,
    ) -> NatsServer {
        let dir = tempfile::Builder::new()
            .prefix("app-nats-")
            .tempdir()
            .expect("temp dir");
        let js = if jetstream {
            format!(
                "jetstream {{\n  store_dir: \"{}\"\n}}\n",
                dir.path().join("js").display()
            )
        } else {
            String::new()
        };
        let conf = format!(
            "server_name: n{port}\nlisten: 127.0.0.1:{port}\nlog_file: \"{}\"\n{js}{}",
            dir.path().join("nats.log").display(),
            extra(dir.path())
        );
        fs::write(dir.path().join("nats.conf"), conf).expect("write nats.conf");
        let mut server = Server::with_conf(
            "nats-server",
            exe,
            dir.path().join("nats.conf"),
            dir.path().join("nats.log"),
            port,
        );
        server.spawn();
        NatsServer { server, port, dir }
    }

    /// `nats://127.0.0.1:PORT`.
    pub fn url(&self) -> String {
        format!("nats://127.0.0.1:{}", self.port)
    }

    /// Hard stop (SIGKILL); the store stays for [`NatsServer::restart`].
    pub fn kill(&mut self) {
        self.server.kill();
    }

    /// Freezes the server (SIGSTOP): connections stay open, nothing answers.
    pub fn pause(&mut self) {
        self.server.pause();
    }

    pub fn resume(&mut self) {
        self.server.resume();
    }

    /// Starts again on the same port with the same store (after kill).
    pub fn restart(&mut self) {
        self.server.restart();
    }
}

/// A NATS JWT (v2) of `kind` for `subject`, signed by `issuer`.
fn nats_jwt(
    issuer: &nkeys::KeyPair,
    subject: &str,
    kind: &str,
    mut nats: serde_json::Value,
) -> String {
    use base64::Engine;
    let b64 = |bytes: &[u8]| base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(bytes);
    nats["type"] = kind.into();
    nats["version"] = 2.into();
    let claims = serde_json::json!({
        "jti": format!("{kind}-{subject}"),
        "iat": 1_700_000_000u64,
        "iss": issuer.public_key(),
        "name": kind,
        "sub": subject,
        "nats": nats,
    });
    let signed = format!(
        "{}.{}",
        b64(br#"{"typ":"JWT","alg":"ed25519-nkey"}"#),
        b64(claims.to_string().as_bytes())
    );
    let signature = issuer.sign(signed.as_bytes()).expect("sign a JWT");
    format!("{signed}.{}", b64(&signature))
}
