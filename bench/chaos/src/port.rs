//! Ports on the machine: a free one for a broker to bind, and a wait until
//! something listens.

use std::time::{Duration, Instant};

/// A free TCP port on 127.0.0.1 (free now; the server binds it next),
/// never one this run handed out before: once its probe socket is closed
/// the kernel may give the same port again, and two servers told to bind
/// it collide (seen in CI: a RabbitMQ node's AMQP and distribution ports).
pub fn free_port() -> Result<u16, String> {
    static GIVEN: std::sync::Mutex<std::collections::BTreeSet<u16>> =
        std::sync::Mutex::new(std::collections::BTreeSet::new());
    for _ in 0..100 {
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .and_then(|l| l.local_addr())
            .map(|a| a.port())
            .map_err(|e| format!("no free port: {e}"))?;
        if GIVEN.lock().unwrap_or_else(|e| e.into_inner()).insert(port) {
            return Ok(port);
        }
    }
    Err("no free port that this run has not handed out already, in 100 tries".into())
}

/// Waits (15 s at most) until `host:port` accepts a connection.
pub fn wait_port(host: &str, port: u16) -> Result<(), String> {
    let deadline = Instant::now() + Duration::from_secs(15);
    let addr = format!("{host}:{port}");
    while Instant::now() < deadline {
        if std::net::TcpStream::connect(&addr).is_ok() {
            return Ok(());
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    Err(format!("nothing listens on {addr} after 15 s"))
}
