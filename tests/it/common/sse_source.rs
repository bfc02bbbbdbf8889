//! A scripted event source on 127.0.0.1 for the tests: `GET /events` serves
//! the events the test pushed (`id:`, or none, and `data:`), in order, as they are
//! pushed, after the `Last-Event-ID` the reader sent (like a source that
//! keeps its whole history; an unknown id replays everything), and records
//! every `Last-Event-ID` it was asked for; `GET /topics` answers what
//! [`ScriptedSource::serve_topics`] set. Anything else is a 404. Each
//! connection has its own thread; all stop on drop.

use std::io::{BufRead, BufReader, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

#[derive(Default)]
struct Shared {
    /// (id, data) in the order pushed; `None`: no `id:` line.
    events: Mutex<Vec<(Option<String>, String)>>,
    /// The `Last-Event-ID` of every subscription, `None` without one.
    asked: Mutex<Vec<Option<String>>>,
    /// The `Authorization` header of every subscription, `None` without one.
    auth: Mutex<Vec<Option<String>>>,
    stop: AtomicBool,
    /// The answer to `GET /topics` (a JSON body) and how long to wait
    /// after its head before sending it; `None`: a 404.
    topics: Mutex<Option<(Vec<u8>, Duration)>>,
}

pub struct ScriptedSource {
    addr: SocketAddr,
    shared: Arc<Shared>,
    thread: Option<JoinHandle<()>>,
}

impl ScriptedSource {
    pub fn start() -> ScriptedSource {
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind the scripted source");
        let addr = listener.local_addr().expect("local addr");
        let shared = Arc::new(Shared::default());
        let s = shared.clone();
        let thread = std::thread::spawn(move || {
            let mut conns = Vec::new();
            for stream in listener.incoming() {
                if s.stop.load(Ordering::SeqCst) {
                    break;
                }
                if let Ok(stream) = stream {
                    let s = s.clone();
                    conns.push(std::thread::spawn(move || serve(stream, &s)));
                }
            }
            for c in conns {
                let _ = c.join();
            }
        });
        ScriptedSource {
            addr,
            shared,
            thread: Some(thread),
        }
    }

    /// `http://127.0.0.1:PORT`, for `--source`.
    pub fn url(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// Adds an event (sent at once to connected readers).
    pub fn push(&self, id: &str, data: &str) {
        self.push_event(Some(id), data);
    }

    /// Adds an event with an `id:` line (`Some("")`: an empty `id:`, which
    /// clears the reader's last id) or without one (`None`: it carries the
    /// last id, as the SSE standard says). A resume after an id replays
    /// every event after the one that has it, those without ids included.
    pub fn push_event(&self, id: Option<&str>, data: &str) {
        self.shared
            .events
            .lock()
            .unwrap()
            .push((id.map(str::to_string), data.to_string()));
    }

    /// Adds `{"topic":TOPIC,"n":ID}` under the id `id`.
    pub fn push_topic(&self, id: u64, topic: &str) {
        let data = serde_json::json!({"topic": topic, "n": id}).to_string();
        self.push(&id.to_string(), &data);
    }

    /// Answers `GET /topics` with `body`, sent `pause` after the head.
    pub fn serve_topics(&self, body: &[u8], pause: Duration) {
        *self.shared.topics.lock().unwrap() = Some((body.to_vec(), pause));
    }

    /// The `Last-Event-ID` of every subscription so far.
    pub fn asked(&self) -> Vec<Option<String>> {
        self.shared.asked.lock().unwrap().clone()
    }

    /// The `Authorization` header of every subscription so far.
    pub fn authorizations(&self) -> Vec<Option<String>> {
        self.shared.auth.lock().unwrap().clone()
    }
}

fn serve(stream: TcpStream, shared: &Shared) {
    stream.set_read_timeout(Some(Duration::from_secs(5))).ok();
    stream.set_write_timeout(Some(Duration::from_secs(5))).ok();
    let mut reader = BufReader::new(&stream);
    let mut request_line = String::new();
    if reader.read_line(&mut request_line).is_err() {
        return;
    }
    let mut last_id = None;
    let mut auth = None;
    loop {
        let mut line = String::new();
        match reader.read_line(&mut line) {
            Ok(n) if n > 2 => {}
            _ => break,
        }
        if let Some((name, value)) = line.split_once(':') {
            if name.eq_ignore_ascii_case("last-event-id") {
                last_id = Some(value.trim().to_string());
            }
            if name.eq_ignore_ascii_case("authorization") {
                auth = Some(value.trim().to_string());
            }
        }
    }
    let mut out = &stream;
    let topics = shared.topics.lock().unwrap().clone();
    if let (true, Some((body, pause))) = (request_line.starts_with("GET /topics "), topics) {
        let head = format!(
            "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
            body.len()
        );
        if out.write_all(head.as_bytes()).is_ok() {
            std::thread::sleep(pause);
            let _ = out.write_all(&body);
        }
        return;
    }
    if !request_line.starts_with("GET /events") {
        let _ = out
            .write_all(b"HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\nConnection: close\r\n\r\n");
        return;
    }
    shared.asked.lock().unwrap().push(last_id.clone());
    shared.auth.lock().unwrap().push(auth);
    // No length and no chunking: the body ends when the connection does.
    if out
        .write_all(b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nCache-Control: no-cache\r\nConnection: close\r\n\r\n")
        .is_err()
    {
        return;
    }
    let mut next = {
        let events = shared.events.lock().unwrap();
        last_id
            .and_then(|id| {
                events
                    .iter()
                    .position(|(i, _)| i.as_deref() == Some(id.as_str()))
                    .map(|p| p + 1)
            })
            .unwrap_or(0)
    };
    let mut quiet_since = Instant::now();
    while !shared.stop.load(Ordering::SeqCst) {
        let batch: Vec<(Option<String>, String)> = shared.events.lock().unwrap()[next..].to_vec();
        next += batch.len();
        let mut text = Vec::new();
        for (id, data) in &batch {
            match id.as_deref() {
                Some("") => text.extend_from_slice(b"id\n"),
                Some(id) => text.extend_from_slice(format!("id: {id}\n").as_bytes()),
                None => {}
            }
            for line in data.split('\n') {
                text.extend_from_slice(format!("data: {line}\n").as_bytes());
            }
            text.push(b'\n');
        }
        // A keep-alive now and then notices a reader that went away.
        if text.is_empty() && quiet_since.elapsed() > Duration::from_secs(1) {
            text.extend_from_slice(b": keep-alive\n\n");
        }
        if !text.is_empty() {
            quiet_since = Instant::now();
            if out.write_all(&text).and_then(|()| out.flush()).is_err() {
                return;
            }
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

impl Drop for ScriptedSource {
    fn drop(&mut self) {
        self.shared.stop.store(true, Ordering::SeqCst);
        // Wake the accept loop so it sees the flag.
        let _ = TcpStream::connect_timeout(&self.addr, Duration::from_secs(1));
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}
