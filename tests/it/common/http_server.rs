//! A tiny HTTP/1.1 server on 127.0.0.1 for tests: serves fixed bodies by
//! path, anything else is a 404. Routes can be changed while it runs; a 3xx
//! route's body is its `Location`. It keeps the path and `Authorization`
//! header of every request ([`Server::requests`]). Stops (and joins its
//! thread) on drop.

use std::collections::HashMap;
use std::io::{BufRead, BufReader, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::Duration;

/// Status, body, and a pause between 4 KiB chunks of the body (a slow server).
type Routes = Arc<Mutex<HashMap<String, (u16, Vec<u8>, Duration)>>>;

/// Path and `Authorization` header of each request, in order.
type Log = Arc<Mutex<Vec<(String, Option<String>)>>>;

pub struct Server {
    addr: SocketAddr,
    routes: Routes,
    log: Log,
    stop: Arc<AtomicBool>,
    thread: Option<JoinHandle<()>>,
}

impl Server {
    pub fn start() -> Server {
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind test HTTP server");
        let addr = listener.local_addr().expect("local addr");
        let routes: Routes = Arc::default();
        let log: Log = Arc::default();
        let stop = Arc::new(AtomicBool::new(false));
        let thread = {
            let (routes, stop, log) = (routes.clone(), stop.clone(), log.clone());
            std::thread::spawn(move || {
                for stream in listener.incoming() {
                    if stop.load(Ordering::SeqCst) {
                        break;
                    }
                    if let Ok(stream) = stream {
                        serve(stream, &routes, &log);
                    }
                }
            })
        };
        Server {
            addr,
            routes,
            log,
            stop,
            thread: Some(thread),
        }
    }

    /// Serves `body` with status 200 at `path` (which starts with `/`).
    pub fn serve(&self, path: &str, body: &[u8]) {
        self.serve_status(path, 200, body);
    }

    pub fn serve_status(&self, path: &str, status: u16, body: &[u8]) {
        self.routes
            .lock()
            .unwrap()
            .insert(path.to_string(), (status, body.to_vec(), Duration::ZERO));
    }

    /// Serves `body` in 4 KiB chunks with `pause` after each.
    pub fn serve_slowly(&self, path: &str, body: &[u8], pause: Duration) {
        self.routes
            .lock()
            .unwrap()
            .insert(path.to_string(), (200, body.to_vec(), pause));
    }

    /// Answers `path` with `302 Found` to `location`.
    pub fn redirect(&self, path: &str, location: &str) {
        self.serve_status(path, 302, location.as_bytes());
    }

    /// Every request so far: its path and `Authorization` header.
    pub fn requests(&self) -> Vec<(String, Option<String>)> {
        self.log.lock().unwrap().clone()
    }

    pub fn url(&self, path: &str) -> String {
        format!("http://{}{path}", self.addr)
    }
}

fn serve(stream: TcpStream, routes: &Routes, log: &Log) {
    stream.set_read_timeout(Some(Duration::from_secs(5))).ok();
    let mut reader = BufReader::new(&stream);
    let mut request_line = String::new();
    if reader.read_line(&mut request_line).is_err() {
        return;
    }
    let mut authorization = None;
    let mut line = String::new();
    while reader.read_line(&mut line).map(|n| n > 2).unwrap_or(false) {
        if let Some((name, value)) = line.split_once(':') {
            if name.eq_ignore_ascii_case("authorization") {
                authorization = Some(value.trim().to_string());
            }
        }
        line.clear();
    }
    let path = request_line
        .split_whitespace()
        .nth(1)
        .unwrap_or("/")
        .to_string();
    log.lock().unwrap().push((path.clone(), authorization));
    let (status, body, pause) = routes.lock().unwrap().get(&path).cloned().unwrap_or((
        404,
        b"<html>not found</html>".to_vec(),
        Duration::ZERO,
    ));
    let mut out = &stream;
    if (300..400).contains(&status) {
        let _ = write!(
            out,
            "HTTP/1.1 {status} X\r\nLocation: {}\r\nContent-Length: 0\r\nConnection: close\r\n\r\n",
            String::from_utf8_lossy(&body)
        );
        return;
    }
    let _ = write!(
        out,
        "HTTP/1.1 {status} X\r\nContent-Length: {}\r\nContent-Type: application/octet-stream\r\nConnection: close\r\n\r\n",
        body.len()
    );
    for chunk in body.chunks(4096) {
        if out.write_all(chunk).and_then(|()| out.flush()).is_err() {
            return;
        }
        std::thread::sleep(pause);
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        // Wake the accept loop so it sees the flag.
        let _ = TcpStream::connect_timeout(&self.addr, Duration::from_secs(1));
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}
