//! TLS and tokens between real network namespaces: a CA made at test time,
//! repeaters in namespaces of their own, `manage` reaching them over veth.

use crate::common;

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use common::pki::Pki;
use common::repeater::{status_rows, Repeater};
use common::run::Ran;
use common::Sandbox;
use serde_json::json;

use super::{app, manage, routes_of, want, write, ROUTES};

/// Network namespaces joined to the test's own by veth pairs; removed on drop.
struct Netns {
    names: Vec<String>,
}

impl Netns {
    /// `None` (after one line saying why) where namespaces cannot be made,
    /// unless `APP_TEST_REQUIRE_NETNS=1`, which makes that a failure.
    fn require() -> Option<PathBuf> {
        let probe = format!("appfleet-probe-{}", std::process::id());
        let ip = common::tools::netns_add(&probe)?;
        let _ = Command::new(&ip).args(["netns", "del", &probe]).status();
        Some(ip)
    }

    /// A namespace `name` reachable at `10.<net>.<sub>.2` from the test,
    /// which gets `.1`.
    fn add(&mut self, ip: &Path, name: &str, net: u8, sub: u8) -> String {
        let run = |args: &[&str]| {
            let out = Command::new(ip).args(args).output().expect("run ip");
            assert!(out.status.success(), "ip {args:?}: {out:?}");
        };
        run(&["netns", "add", name]);
        self.names.push(name.to_string());
        let (outer, inner) = (format!("{name}-o"), format!("{name}-i"));
        // Interface names are at most 15 bytes.
        let (outer, inner) = (
            &outer[outer.len().saturating_sub(15)..],
            &inner[inner.len().saturating_sub(15)..],
        );
        run(&["link", "add", outer, "type", "veth", "peer", "name", inner]);
        run(&["link", "set", inner, "netns", name]);
        run(&["addr", "add", &format!("10.{net}.{sub}.1/24"), "dev", outer]);
        run(&["link", "set", outer, "up"]);
        run(&[
            "-n",
            name,
            "addr",
            "add",
            &format!("10.{net}.{sub}.2/24"),
            "dev",
            inner,
        ]);
        run(&["-n", name, "link", "set", inner, "up"]);
        run(&["-n", name, "link", "set", "lo", "up"]);
        format!("10.{net}.{sub}.2")
    }
}

impl Drop for Netns {
    fn drop(&mut self) {
        // Deleting a namespace deletes its end of the veth pair, and with it
        // ours.
        for n in &self.names {
            let _ = Command::new("ip")
                .args(["netns", "del", n])
                .stderr(Stdio::null())
                .status();
        }
    }
}

#[test]
fn tls_and_tokens_across_network_namespaces() {
    let Some(ip) = Netns::require() else {
        return;
    };
    let sb = Sandbox::new();
    let mut netns = Netns { names: Vec::new() };
    let sub = (std::process::id() % 250) as u8 + 1;
    let tag = std::process::id() % 100_000;
    let pki = Pki::new("fleet test CA");
    let other = Pki::new("some other CA");
    let ca = pki.write_ca(sb.path(), "ca.pem");
    let wrong_ca = other.write_ca(sb.path(), "other-ca.pem");
    let mut repeaters = Vec::new();
    let mut urls = Vec::new();
    for (i, net) in [(1, 231u8), (2, 232u8)] {
        let ns = format!("af{tag}e{i}");
        let addr = netns.add(&ip, &ns, net, sub);
        let (cert, key) = pki.server(&addr, sb.path(), &format!("edge{i}"));
        let r = Repeater::builder(&sb, &format!("edge{i}"))
            .sinkprotocol("stderr")
            .no_source()
            .wrapped_in([ip.to_string_lossy().as_ref(), "netns", "exec", &ns])
            .args([
                "--listen",
                &format!("{addr}:7443"),
                "--tls-cert",
                &cert,
                "--tls-key",
                &key,
            ])
            .env("APP_TOKEN", &format!("token-{i}"))
            .start();
        urls.push(r.url());
        write(
            &sb.config_dir(),
            &format!("edge{i}.token"),
            &format!("token-{i}\n"),
        );
        repeaters.push(r);
    }
    assert_eq!(urls[0], format!("https://10.231.{sub}.2:7443"));
    sb.write_config(
        &json!({
            "hosts": {
                "edge1": {"url": urls[0], "token_file": "edge1.token", "ca_file": ca},
                "edge2": {"url": urls[1], "token_file": "edge2.token", "ca_file": ca}
            },
            "groups": {"edges": ["edge1", "edge2"]}
        })
        .to_string(),
    );
    // Managed from outside, over HTTPS with each host's token and the CA.
    let file = write(sb.path(), "routes.json", ROUTES);
    let run = app(
        &sb,
        &[
            "-H",
            "@edges",
            "event-repeater",
            "manage",
            "apply",
            "-f",
            &file,
        ],
    )
    .ok();
    assert!(
        run.stdout.contains("edge1: applied") && run.stdout.contains("edge2: applied"),
        "{run:?}"
    );
    for r in &repeaters {
        assert_eq!(routes_of(r), want());
    }
    let rows = status_rows(&sb, &["@edges"]);
    assert_eq!(rows.as_array().map(Vec::len), Some(2), "{rows}");
    assert_eq!(rows[0]["host"], "edge1");
    assert_eq!(rows[1]["routes"], 2);

    let u = urls[0].as_str();
    let one_line = |run: &Ran, code: i32, text: &str| {
        assert_eq!(run.exit(), code, "{run:?}");
        assert_eq!(run.stderr.lines().count(), 1, "{run:?}");
        assert!(run.stderr.contains(text), "want {text:?}: {run:?}");
    };
    // The right CA and token work with flags too.
    manage(
        &sb,
        &["get", "--host", u, "--ca-file", &ca, "--token", "token-1"],
    )
    .ok();
    // Wrong token, no token.
    let run = manage(
        &sb,
        &["get", "--host", u, "--ca-file", &ca, "--token", "token-2"],
    );
    one_line(&run, 1, "GET /events refused (401 Unauthorized)");
    let run = manage(&sb, &["get", "--host", u, "--ca-file", &ca]);
    one_line(&run, 1, "missing or wrong bearer token");
    // A certificate from a CA we do not trust; no CA given (Mozilla's roots).
    let run = manage(
        &sb,
        &[
            "get",
            "--host",
            u,
            "--ca-file",
            &wrong_ca,
            "--token",
            "token-1",
        ],
    );
    one_line(&run, 1, &format!("no secure connection to {u}"));
    assert!(run.stderr.contains("--ca-file"), "{run:?}");
    let run = manage(&sb, &["get", "--host", u, "--token", "token-1"]);
    one_line(&run, 1, &format!("no secure connection to {u}"));
    // Plain HTTP to the TLS port: never with a token; without one, a clear answer.
    let plain = u.replace("https://", "http://");
    let run = manage(&sb, &["get", "--host", &plain, "--token", "token-1"]);
    one_line(&run, 2, "refusing to send the API token in clear text");
    let run = manage(&sb, &["get", "--host", &plain]);
    one_line(&run, 1, "if it serves HTTPS (--tls-cert), use https://");
    // The repeaters kept their routes through all of it.
    for r in &repeaters {
        assert_eq!(routes_of(r), want());
    }
    drop(repeaters);
    drop(netns);
}
