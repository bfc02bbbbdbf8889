//! The fetch's 15 s connect timeout. Nothing on 127.0.0.1 leaves a connect
//! pending (a closed port refuses at once), so the test makes a network
//! namespace of its own in which a SYN to one address goes out on a veth
//! and is dropped (a static neighbour entry to a MAC nobody has), and runs
//! `app` in it with `ip netns exec`. No packet leaves the namespace.

use crate::common;

use std::fs::File;
use std::io;
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::os::fd::AsRawFd;
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use common::index::World;
use common::run::{Ran, Run};

/// An address in the namespace's subnet whose SYNs go nowhere.
const BLACKHOLE: &str = "10.251.0.2";

/// A network namespace made by the test; deleted on drop, failure or not.
struct Namespace {
    ip: PathBuf,
    name: String,
}

impl Namespace {
    /// The namespace, wired; `None` (after one line saying why) where it
    /// cannot be made, unless `APP_TEST_REQUIRE_NETNS=1`, which makes that
    /// a failure.
    fn make() -> Option<Namespace> {
        let name = format!("appct{}", std::process::id());
        let ip = common::tools::netns_add(&name)?;
        let ns = Namespace { ip, name };
        ns.wire();
        Some(ns)
    }

    /// Loopback up; a veth pair with both ends inside, `10.251.0.1/24` on
    /// one, and [`BLACKHOLE`] mapped to a MAC no interface has, so its
    /// SYNs are sent and dropped and the connect stays pending (without
    /// the entry, ARP would fail and the connect end at once).
    fn wire(&self) {
        for args in [
            &["link", "set", "lo", "up"][..],
            &["link", "add", "ct0", "type", "veth", "peer", "name", "ct1"],
            &["addr", "add", "10.251.0.1/24", "dev", "ct0"],
            &["link", "set", "ct0", "up"],
            &["link", "set", "ct1", "up"],
            &[
                "neigh",
                "add",
                BLACKHOLE,
                "lladdr",
                "02:00:00:00:00:02",
                "dev",
                "ct0",
                "nud",
                "permanent",
            ],
        ] {
            let out = Command::new(&self.ip)
                .args(["-n", &self.name])
                .args(args)
                .output()
                .expect("run ip");
            assert!(out.status.success(), "ip {args:?}: {out:?}");
        }
    }

    /// Forwards `addr` on the namespace's loopback to `addr` on the test's
    /// own (where the test's server is), for 90 s at most.
    fn forward(&self, addr: SocketAddr) {
        let path = format!("/var/run/netns/{}", self.name);
        // A socket stays in the namespace it was made in: only the listener
        // is made in a thread that joined the namespace.
        let listener = std::thread::spawn(move || -> io::Result<TcpListener> {
            let ns = File::open(&path)?;
            // SAFETY: setns with an open namespace file; it changes this
            // short-lived thread's network namespace only.
            if unsafe { libc::setns(ns.as_raw_fd(), libc::CLONE_NEWNET) } != 0 {
                return Err(io::Error::last_os_error());
            }
            TcpListener::bind(addr)
        })
        .join()
        .expect("setns thread")
        .expect("listen inside the namespace");
        listener.set_nonblocking(true).expect("nonblocking");
        std::thread::spawn(move || {
            let end = Instant::now() + Duration::from_secs(90);
            while Instant::now() < end {
                match listener.accept() {
                    Ok((inside, _)) => splice(inside, addr),
                    Err(_) => std::thread::sleep(Duration::from_millis(10)),
                }
            }
        });
    }

    /// `app ARGS` run inside the namespace (with `APP_FETCH_TIMEOUT=SECS`
    /// when given), and how long it took.
    fn app(&self, w: &World, secs: Option<&str>, args: &[&str]) -> (Ran, Duration) {
        let app = w.sb.app_without_proxy();
        let mut cmd = Command::new(&self.ip);
        cmd.args(["netns", "exec", &self.name])
            .arg(app.get_program())
            .args(args);
        for (key, value) in app.get_envs() {
            match value {
                Some(value) => cmd.env(key, value),
                None => cmd.env_remove(key),
            };
        }
        if let Some(secs) = secs {
            cmd.env("APP_FETCH_TIMEOUT", secs);
        }
        let start = Instant::now();
        let ran = Run::new(cmd).timeout(Duration::from_secs(60)).assert();
        (ran, start.elapsed())
    }
}

impl Drop for Namespace {
    fn drop(&mut self) {
        // Deleting the namespace deletes the veth pair in it.
        let _ = Command::new(&self.ip)
            .args(["netns", "del", &self.name])
            .stderr(Stdio::null())
            .status();
    }
}

/// Copies both ways between `inside` and a new connection to `to`, each
/// direction ending at 10 s of silence.
fn splice(inside: TcpStream, to: SocketAddr) {
    let Ok(outside) = TcpStream::connect_timeout(&to, Duration::from_secs(2)) else {
        return;
    };
    for s in [&inside, &outside] {
        let _ = s.set_nonblocking(false);
        let _ = s.set_read_timeout(Some(Duration::from_secs(10)));
    }
    let pairs = [
        (inside.try_clone(), outside.try_clone()),
        (outside.try_clone(), inside.try_clone()),
    ];
    for pair in pairs {
        if let (Ok(mut from), Ok(mut to)) = pair {
            std::thread::spawn(move || {
                let _ = io::copy(&mut from, &mut to);
                let _ = to.shutdown(std::net::Shutdown::Write);
            });
        }
    }
}

#[test]
fn a_connect_that_stays_pending_is_given_up_after_15_s_and_changes_nothing() {
    let Some(w) = World::new() else { return };
    let Some(ns) = Namespace::make() else { return };
    let url = w.signed_index(1, &[("hello", "1.0.0")]);
    let addr: SocketAddr = url
        .trim_start_matches("http://")
        .split('/')
        .next()
        .and_then(|a| a.parse().ok())
        .expect("the server's address");
    ns.forward(addr);
    // Positive control: inside the namespace the same command reaches a
    // server (on the namespace's loopback) and adds the index.
    let key = w.key.public.to_str().expect("key path");
    let (ran, _) = ns.app(
        &w,
        None,
        &["plugin", "index", "add", "main", &url, "--key-file", key],
    );
    ran.code(0).stdout_has("added index 'main'");
    let dirs = [w.plugin_dir(), w.cache_dir(), w.sb.config_dir()];
    let before: Vec<_> = dirs.iter().map(|d| common::snapshot(d)).collect();

    // An index whose connect stays pending: refused with exit 3 naming the
    // index and the connect timeout, after 15 s by default and after
    // APP_FETCH_TIMEOUT when that is lower; nothing changes.
    let far = format!("http://{BLACKHOLE}/index.json");
    let add_far = ["plugin", "index", "add", "far", &far, "--key-file", key];
    for (secs, limit, below) in [(None, 15, 30), (Some("3"), 3, 12)] {
        let (ran, took) = ns.app(&w, secs, &add_far);
        let ran = ran.code(3);
        assert!(
            ran.stderr
                .contains(&format!("index 'far' ({far}) cannot be fetched")),
            "{ran:?}"
        );
        // The default names the connect; at 3 s every limit ends at once
        // and ureq names the whole ("timeout: global").
        let named = if secs.is_none() { "connect" } else { "" };
        assert!(
            ran.stderr.contains(&format!("timeout: {named}"))
                && ran
                    .stderr
                    .contains(&format!("(limits: {limit} s to connect")),
            "{ran:?}"
        );
        assert!(
            took >= Duration::from_secs(limit - 1) && took < Duration::from_secs(below),
            "APP_FETCH_TIMEOUT={secs:?}: {took:?} {ran:?}"
        );
        let after: Vec<_> = dirs.iter().map(|d| common::snapshot(d)).collect();
        assert!(before == after, "a refused add changed a file: {ran:?}");
    }
    ns.app(&w, None, &["plugin", "index", "list"])
        .0
        .ok()
        .stdout_has("main");
}
