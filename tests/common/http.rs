//! A tiny HTTP/1.1 client over a unix socket or TCP, with a Server-Sent
//! Events reader, so tests can talk to the plugins' servers without extra
//! dependencies. It understands exactly what the tests need: a status line,
//! headers, and a body that is `Content-Length`, chunked, or read to EOF.

use std::io::{self, BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::os::unix::net::UnixStream;
use std::path::PathBuf;
use std::time::{Duration, Instant};

/// Where a server listens.
#[derive(Debug, Clone)]
pub enum Addr {
    Unix(PathBuf),
    Tcp(SocketAddr),
}

impl Addr {
    /// From an `http://HOST:PORT` URL (as in a `.listen` file).
    pub fn from_url(url: &str) -> Addr {
        let hostport = url
            .trim()
            .trim_start_matches("http://")
            .trim_end_matches('/');
        Addr::Tcp(hostport.parse().expect("a HOST:PORT url"))
    }
}

/// One connection.
pub enum Conn {
    Unix(UnixStream),
    Tcp(TcpStream),
}

impl Conn {
    pub fn connect(addr: &Addr) -> io::Result<Conn> {
        let conn = match addr {
            Addr::Unix(path) => Conn::Unix(UnixStream::connect(path)?),
            Addr::Tcp(a) => Conn::Tcp(TcpStream::connect_timeout(a, Duration::from_secs(5))?),
        };
        conn.set_read_timeout(Some(Duration::from_secs(10)))?;
        Ok(conn)
    }

    pub fn set_read_timeout(&self, t: Option<Duration>) -> io::Result<()> {
        match self {
            Conn::Unix(s) => s.set_read_timeout(t),
            Conn::Tcp(s) => s.set_read_timeout(t),
        }
    }
}

impl Read for Conn {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        match self {
            Conn::Unix(s) => s.read(buf),
            Conn::Tcp(s) => s.read(buf),
        }
    }
}

impl Write for Conn {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        match self {
            Conn::Unix(s) => s.write(buf),
            Conn::Tcp(s) => s.write(buf),
        }
    }
    fn flush(&mut self) -> io::Result<()> {
        match self {
            Conn::Unix(s) => s.flush(),
            Conn::Tcp(s) => s.flush(),
        }
    }
}

/// A complete response.
#[derive(Debug)]
pub struct Response {
    pub status: u16,
    pub headers: Vec<(String, String)>,
    pub body: String,
}

impl Response {
    pub fn header(&self, name: &str) -> Option<&str> {
        header(&self.headers, name)
    }

    pub fn json(&self) -> serde_json::Value {
        serde_json::from_str(&self.body)
            .unwrap_or_else(|e| panic!("body is not JSON ({e}): {}", self.body))
    }
}

fn header<'a>(headers: &'a [(String, String)], name: &str) -> Option<&'a str> {
    headers
        .iter()
        .find(|(k, _)| k.eq_ignore_ascii_case(name))
        .map(|(_, v)| v.as_str())
}

/// Sends `method path` with `headers` (and `Connection: close`), returns the
/// whole response.
pub fn request(addr: &Addr, method: &str, path: &str, headers: &[(&str, &str)]) -> Response {
    let mut conn = Conn::connect(addr).expect("connect");
    send_head(&mut conn, method, path, headers, true);
    read_response(conn, method)
}

/// Sends `bytes` as they are and returns the answer. A failed write is
/// ignored: a server may answer and close before it has read them all.
pub fn send_raw(addr: &Addr, bytes: &[u8]) -> Response {
    let mut conn = Conn::connect(addr).expect("connect");
    let _ = conn.write_all(bytes);
    read_response(conn, "GET")
}

fn read_response(conn: Conn, method: &str) -> Response {
    let mut reader = BufReader::new(conn);
    let (status, headers) = read_head(&mut reader);
    let mut body = Vec::new();
    if method != "HEAD" {
        if header(&headers, "transfer-encoding").is_some_and(|v| v.contains("chunked")) {
            let mut chunked = Chunked::new(reader);
            chunked.read_to_end(&mut body).expect("read chunked body");
        } else if let Some(len) = header(&headers, "content-length") {
            body.resize(len.parse().expect("content-length"), 0);
            reader.read_exact(&mut body).expect("read body");
        } else {
            reader.read_to_end(&mut body).expect("read body");
        }
    }
    Response {
        status,
        headers,
        body: String::from_utf8(body).expect("utf-8 body"),
    }
}

/// `GET path`.
pub fn get(addr: &Addr, path: &str) -> Response {
    request(addr, "GET", path, &[])
}

fn send_head(conn: &mut Conn, method: &str, path: &str, headers: &[(&str, &str)], close: bool) {
    let mut head = format!("{method} {path} HTTP/1.1\r\nHost: localhost\r\n");
    for (k, v) in headers {
        head.push_str(&format!("{k}: {v}\r\n"));
    }
    if close {
        head.push_str("Connection: close\r\n");
    }
    head.push_str("\r\n");
    conn.write_all(head.as_bytes()).expect("send request");
}

fn read_head(reader: &mut impl BufRead) -> (u16, Vec<(String, String)>) {
    let mut line = String::new();
    reader.read_line(&mut line).expect("read status line");
    let status = line
        .split_whitespace()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| panic!("bad status line {line:?}"));
    let mut headers = Vec::new();
    loop {
        line.clear();
        reader.read_line(&mut line).expect("read header");
        let l = line.trim_end();
        if l.is_empty() {
            break;
        }
        let (k, v) = l.split_once(':').expect("header line");
        headers.push((k.trim().to_string(), v.trim().to_string()));
    }
    (status, headers)
}

/// A reader that undoes chunked transfer encoding. It keeps a partly read
/// chunk-size line across read timeouts, so a timed-out read loses nothing.
pub struct Chunked<R> {
    inner: R,
    left: usize,
    size_line: String,
    done: bool,
}

impl<R: BufRead> Chunked<R> {
    pub fn new(inner: R) -> Chunked<R> {
        Chunked {
            inner,
            left: 0,
            size_line: String::new(),
            done: false,
        }
    }
}

impl<R: BufRead> Read for Chunked<R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        while self.left == 0 {
            if self.done {
                return Ok(0);
            }
            if self.inner.read_line(&mut self.size_line)? == 0 {
                return Ok(0);
            }
            if !self.size_line.ends_with('\n') {
                continue;
            }
            let line = std::mem::take(&mut self.size_line);
            // The CRLF that ends the previous chunk's data.
            if line.trim().is_empty() {
                continue;
            }
            let size = line.trim().split(';').next().unwrap_or("");
            self.left = usize::from_str_radix(size, 16).map_err(|_| {
                io::Error::new(io::ErrorKind::InvalidData, format!("chunk size {line:?}"))
            })?;
            if self.left == 0 {
                self.done = true;
            }
        }
        let n = buf.len().min(self.left);
        let n = self.inner.read(&mut buf[..n])?;
        self.left -= n;
        Ok(n)
    }
}

/// What an SSE stream delivers.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SseItem {
    Event { id: Option<String>, data: String },
    Comment(String),
}

/// An open `text/event-stream` response.
pub struct SseStream {
    pub status: u16,
    pub headers: Vec<(String, String)>,
    reader: BufReader<Chunked<BufReader<Conn>>>,
    line: String,
}

impl SseStream {
    /// Sends `GET path` with `Accept: text/event-stream` and `headers`, and
    /// reads the response head. Panics unless the answer is a 200 stream.
    pub fn open(addr: &Addr, path: &str, headers: &[(&str, &str)]) -> SseStream {
        let mut conn = Conn::connect(addr).expect("connect");
        let mut all = vec![("Accept", "text/event-stream")];
        all.extend_from_slice(headers);
        send_head(&mut conn, "GET", path, &all, false);
        let mut reader = BufReader::new(conn);
        let (status, head) = read_head(&mut reader);
        assert_eq!(status, 200, "GET {path}: {head:?}");
        assert_eq!(header(&head, "content-type"), Some("text/event-stream"));
        SseStream {
            status,
            headers: head,
            reader: BufReader::new(Chunked::new(reader)),
            line: String::new(),
        }
    }

    /// The next event or comment, or `None` if none comes within `timeout`
    /// or the stream ends.
    pub fn next_item(&mut self, timeout: Duration) -> Option<SseItem> {
        let deadline = Instant::now() + timeout;
        let mut id = None;
        let mut data: Option<String> = None;
        loop {
            let left = deadline.checked_duration_since(Instant::now())?;
            self.conn()
                .set_read_timeout(Some(left.max(Duration::from_millis(1))))
                .ok()?;
            // A timed-out read_line keeps what it read in `self.line`.
            match self.reader.read_line(&mut self.line) {
                Ok(0) => return None,
                Ok(_) if !self.line.ends_with('\n') => continue,
                Ok(_) => {}
                Err(e)
                    if matches!(
                        e.kind(),
                        io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut
                    ) =>
                {
                    return None
                }
                Err(e) => panic!("reading the event stream: {e}"),
            }
            let line = std::mem::take(&mut self.line);
            let line = line.trim_end_matches('\n');
            if line.is_empty() {
                if let Some(data) = data.take() {
                    return Some(SseItem::Event {
                        id: id.take(),
                        data,
                    });
                }
                continue;
            }
            if let Some(comment) = line.strip_prefix(':') {
                return Some(SseItem::Comment(comment.trim_start().to_string()));
            }
            let (field, value) = line.split_once(':').unwrap_or((line, ""));
            let value = value.strip_prefix(' ').unwrap_or(value);
            match field {
                "id" => id = Some(value.to_string()),
                "data" => {
                    let d = data.get_or_insert_with(String::new);
                    if !d.is_empty() {
                        d.push('\n');
                    }
                    d.push_str(value);
                }
                _ => {}
            }
        }
    }

    /// The next event (skipping comments) as (id, parsed JSON data).
    pub fn next_event(&mut self, timeout: Duration) -> Option<(u64, serde_json::Value)> {
        let deadline = Instant::now() + timeout;
        loop {
            let left = deadline.checked_duration_since(Instant::now())?;
            if let SseItem::Event { id, data } = self.next_item(left)? {
                let id = id
                    .expect("every event has an id")
                    .parse()
                    .expect("numeric id");
                let json = serde_json::from_str(&data).expect("event data is JSON");
                return Some((id, json));
            }
        }
    }

    fn conn(&self) -> &Conn {
        self.reader.get_ref().inner.get_ref()
    }
}
