//! Ports on the machine: a free one for a broker to bind, and a wait until
//! something listens.

use std::time::{Duration, Instant};

/// A free TCP port on 127.0.0.1 (free now; the server binds it next).
pub fn free_port() -> Result<u16, String> {
    std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .map_err(|e| format!("no free port: {e}"))
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
