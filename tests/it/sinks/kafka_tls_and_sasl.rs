//! `kafka+tls://` with `--ca-file`, and SASL SCRAM, end to end. TLS: librdkafka's TLS (the
//! sink's settings) through a TLS front (`socat`, Debian's package) to a
//! tansu broker that tells clients to come through it. The certificate's
//! CA given, every event arrives; another CA given, nothing is delivered
//! and the log says why (the positive and the negative in one test).
//! tansu 0.6.0 serves no TLS of its own that works (its `--cert` and
//! `--key` exclude each other), hence the front.

use crate::common;

use std::process::{Command, Stdio};
use std::time::Duration;

use common::kafka::Tansu;
use common::pki::Pki;
use common::process::Proc;
use common::{free_port, require_tool, wait_for, Sandbox};

use super::kafka::{assert_each_once_by_key, relay};
use super::nats::{loadgen, start_source};
use super::rabbitmq_stream::wait_metric;

#[test]
fn a_tls_broker_is_reached_with_its_ca_and_refused_with_another() {
    let Some(socat) = require_tool("socat", "socat") else {
        return;
    };
    let tls_port = free_port();
    let Some(broker) = Tansu::start_advertising(free_port(), tls_port) else {
        return;
    };
    let sb = Sandbox::new();
    let pki = Pki::new("kafka test CA");
    let ca = pki.write_ca(sb.path(), "ca.pem");
    let other = Pki::new("another CA").write_ca(sb.path(), "other.pem");
    let (cert, key) = pki.server("127.0.0.1", sb.path(), "broker");
    let _front = Proc::spawn(
        "socat",
        Command::new(socat)
            .arg(format!(
                "OPENSSL-LISTEN:{tls_port},bind=127.0.0.1,reuseaddr,fork,cert={cert},key={key},verify=0"
            ))
            .arg(format!("TCP:127.0.0.1:{}", broker.port))
            .stdout(Stdio::null())
            .stderr(Stdio::null()),
    );
    let up = wait_for(Duration::from_secs(10), || {
        std::net::TcpStream::connect(("127.0.0.1", tls_port)).ok()
    });
    assert!(up.is_some(), "socat did not listen on {tls_port}");
    let n = 500;
    let port = free_port();
    let ready = sb.path().join("go");
    let _src = start_source(port, 500, n, Some(&ready));
    let url = format!("kafka+tls://127.0.0.1:{tls_port}");
    let with_ca = |name, ca: &str| {
        let extra = ["--allowall", "--ca-file", ca, "--ack-timeout", "5s"];
        relay(&sb, name, port, &url, &extra)
    };
    let trusted = with_ca("trusted", &ca);
    let untrusted = with_ca("untrusted", &other);
    for r in [&trusted, &untrusted] {
        wait_metric(r, "source_connected", 1, Duration::from_secs(20));
    }
    std::fs::write(&ready, "go").unwrap();
    wait_metric(&trusted, "events_acked_total", n, Duration::from_secs(60));
    let out = Command::new(loadgen())
        .args(["kafka-read", "--brokers", &format!("127.0.0.1:{tls_port}")])
        .args(["--topic", "bench.seq", "--expect", &n.to_string()])
        .args(["--ca-file", &ca, "--timeout", "60"])
        .output()
        .expect("run loadgen kafka-read");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).expect("JSON");
    assert_each_once_by_key(&v, n, &trusted.log());
    // The other CA: nothing delivered, and the log names the certificate.
    assert_eq!(untrusted.metric("events_acked_total") as u64, 0);
    let said = wait_for(Duration::from_secs(20), || {
        untrusted
            .log()
            .to_lowercase()
            .contains("certificate")
            .then_some(())
    });
    assert!(said.is_some(), "{}", untrusted.log());
    assert_eq!(
        untrusted.metric("sink_connected") as u64,
        0,
        "{}",
        untrusted.log()
    );
}

#[test]
fn sasl_scram_signs_in_with_the_password_file_and_a_wrong_password_is_refused() {
    let Some(mut broker) = Tansu::start() else {
        return;
    };
    broker.require_user("relay", "s3cret-kafka");
    let sb = Sandbox::new();
    let secret = |name: &str, text: &str| {
        let p = sb.path().join(name);
        std::fs::write(&p, text).unwrap();
        std::fs::set_permissions(&p, std::os::unix::fs::PermissionsExt::from_mode(0o600)).unwrap();
        p.to_string_lossy().into_owned()
    };
    let right = secret("right", "s3cret-kafka\n");
    let wrong = secret("wrong", "not-it-4711\n");
    let n = 300;
    let port = free_port();
    let ready = sb.path().join("go");
    let _src = start_source(port, 300, n, Some(&ready));
    let with_password = |name, file: &str| {
        let extra = [
            "--allowall",
            "--username",
            "relay",
            "--password-file",
            file,
            "--kafka-sasl-mechanism",
            "scram-sha-512",
            "--ack-timeout",
            "5s",
        ];
        relay(&sb, name, port, &broker.url(), &extra)
    };
    let good = with_password("good", &right);
    let bad = with_password("bad", &wrong);
    for r in [&good, &bad] {
        wait_metric(r, "source_connected", 1, Duration::from_secs(20));
    }
    std::fs::write(&ready, "go").unwrap();
    wait_metric(&good, "events_acked_total", n, Duration::from_secs(60));
    assert_eq!(bad.metric("events_acked_total") as u64, 0, "{}", bad.log());
    let said = wait_for(Duration::from_secs(20), || {
        bad.log().contains("uthentication").then_some(())
    });
    assert!(said.is_some(), "{}", bad.log());
    for (r, pw) in [(&good, "s3cret-kafka"), (&bad, "not-it-4711")] {
        assert!(
            !r.log().contains(pw),
            "the password is in the log:\n{}",
            r.log()
        );
    }
}
