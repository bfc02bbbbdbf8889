//! `loadgen sse`: an event source serving numbered events over SSE, on TCP
//! and/or a unix socket, at a rate or as fast as the reader takes them.
//!
//! Any event can be produced again from its number, so this source "holds"
//! every event: a reader that reconnects with `Last-Event-ID: n` gets `n+1`
//! onwards, even from a restarted source. A reader without `Last-Event-ID`
//! gets live events only (in rate mode, those due from now on).

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use serde_json::json;
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use tokio::net::{TcpListener, UnixListener};
use tokio::time::Instant;

use crate::cli::SseArgs;
use crate::payload::{event_json, min_fixed_size, now_ns};
use crate::sent::{Recorder, Sent};

/// A chunk of events is written once it reaches this size (saturation mode).
const CHUNK: usize = 32 * 1024;
/// Largest request head read.
const MAX_HEAD: usize = 16 * 1024;

struct Source {
    topic: String,
    /// `--event-name`: an `event: TOPIC` line on every event.
    event_name: bool,
    rate: u64,
    count: u64,
    size: usize,
    warmup: u64,
    ready_file: Option<std::path::PathBuf>,
    /// When event 1 was (or would have been) due: set by the first reader to
    /// finish the warm-up, or from its `Last-Event-ID`.
    start: OnceLock<Instant>,
    /// One more than the highest number sent to any reader.
    next: AtomicU64,
    /// `--sent-file`: what was sent, across restarts.
    recorder: Option<Recorder>,
}

impl Source {
    /// When event 1 is due: set once, by `at` if not yet (and recorded).
    fn start_at(&self, at: impl FnOnce() -> Instant) -> std::io::Result<Instant> {
        let mut fresh = false;
        let start = *self.start.get_or_init(|| {
            fresh = true;
            at()
        });
        if let (true, Some(r)) = (fresh, &self.recorder) {
            r.start(start.elapsed()).map_err(std::io::Error::other)?;
        }
        Ok(start)
    }
}

pub async fn run(args: SseArgs) -> Result<(), String> {
    if args.listen.is_none() && args.unix.is_none() {
        return Err("give --listen HOST:PORT and/or --unix PATH".into());
    }
    let gen = args.gen;
    let size = if gen.size == 0 {
        min_fixed_size(&gen.topic, 10_000_000)
    } else {
        gen.size
    };
    let (recorder, start, next) = match &args.sent_file {
        None => (None, OnceLock::new(), 1),
        Some(path) => {
            let sent = Sent::read(path)?;
            let start = OnceLock::new();
            if let Some(ago) = sent.since_start() {
                let _ = start.set(Instant::now().checked_sub(ago).unwrap_or_else(Instant::now));
                eprintln!(
                    "loadgen sse: numbering from {} (event 1 was due {:.1} s ago)",
                    sent.next(),
                    ago.as_secs_f64()
                );
            }
            (Some(Recorder::open(path)?), start, sent.next())
        }
    };
    let source = Arc::new(Source {
        event_name: args.event_name,
        topic: gen.topic,
        rate: gen.rate,
        count: gen.count,
        size,
        warmup: gen.warmup,
        ready_file: gen.ready_file,
        start,
        next: AtomicU64::new(next),
        recorder,
    });
    let mut tasks = Vec::new();
    if let Some(addr) = &args.listen {
        let listener = TcpListener::bind(addr)
            .await
            .map_err(|e| format!("cannot listen on {addr}: {e}"))?;
        let local = listener.local_addr().map_err(|e| e.to_string())?;
        let url = format!("http://{local}");
        if let Some(file) = &args.url_file {
            std::fs::write(file, format!("{url}\n"))
                .map_err(|e| format!("cannot write {}: {e}", file.display()))?;
        }
        eprintln!("loadgen sse: listening on {url}");
        let source = Arc::clone(&source);
        tasks.push(tokio::spawn(async move {
            loop {
                if let Ok((stream, _)) = listener.accept().await {
                    let _ = stream.set_nodelay(true);
                    tokio::spawn(serve(stream, Arc::clone(&source)));
                }
            }
        }));
    }
    if let Some(path) = &args.unix {
        let _ = std::fs::remove_file(path);
        let listener = UnixListener::bind(path)
            .map_err(|e| format!("cannot listen on {}: {e}", path.display()))?;
        eprintln!("loadgen sse: listening on {}", path.display());
        let source = Arc::clone(&source);
        tasks.push(tokio::spawn(async move {
            loop {
                if let Ok((stream, _)) = listener.accept().await {
                    tokio::spawn(serve(stream, Arc::clone(&source)));
                }
            }
        }));
    }
    let mut term = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate())
        .map_err(|e| e.to_string())?;
    tokio::select! {
        _ = term.recv() => {}
        _ = tokio::signal::ctrl_c() => {}
    }
    if let Some(path) = &args.unix {
        let _ = std::fs::remove_file(path);
    }
    println!(
        "{}",
        json!({"mode": "sse", "payload_bytes": size, "sent_up_to": source.next.load(Ordering::Relaxed) - 1})
    );
    Ok(())
}

/// The parts of a request the source looks at.
#[derive(Debug, PartialEq, Eq)]
pub struct Request {
    pub method: String,
    pub path: String,
    pub topic: Option<String>,
    pub last_event_id: Option<u64>,
}

/// Parses a request head (up to the blank line).
pub fn parse_head(head: &str) -> Option<Request> {
    let mut lines = head.split("\r\n");
    let mut first = lines.next()?.split(' ');
    let method = first.next()?.to_string();
    let target = first.next()?;
    let (path, query) = target.split_once('?').unwrap_or((target, ""));
    let topic = query
        .split('&')
        .filter_map(|kv| kv.split_once('='))
        .find(|(k, _)| *k == "topic")
        .map(|(_, v)| percent_decode(v));
    let last_event_id = lines
        .filter_map(|l| l.split_once(':'))
        .find(|(k, _)| k.trim().eq_ignore_ascii_case("last-event-id"))
        .and_then(|(_, v)| v.trim().parse().ok());
    Some(Request {
        method,
        path: path.to_string(),
        topic,
        last_event_id,
    })
}

/// A query value decoded as a form does: `+` is a space, `%XX` a byte
/// (`%2B` a plus); a malformed escape is kept, invalid UTF-8 replaced.
fn percent_decode(s: &str) -> String {
    percent_encoding::percent_decode_str(&s.replace('+', " "))
        .decode_utf8_lossy()
        .into_owned()
}

/// Whether a reader subscribing to `wanted` gets events on `topic`.
fn matches(wanted: Option<&str>, topic: &str) -> bool {
    match wanted {
        None | Some("" | ".") => true,
        Some(w) if w.ends_with('/') => topic.starts_with(w),
        Some(w) => w == topic,
    }
}

async fn serve<S: AsyncRead + AsyncWrite + Unpin>(mut stream: S, source: Arc<Source>) {
    let Some(head) = read_head(&mut stream).await else {
        return;
    };
    let Some(req) = parse_head(&head) else {
        let _ = respond(&mut stream, "400 Bad Request", r#"{"error":"bad request"}"#).await;
        return;
    };
    if req.method != "GET" {
        let _ = respond(
            &mut stream,
            "405 Method Not Allowed",
            r#"{"error":"use GET"}"#,
        )
        .await;
        return;
    }
    match req.path.as_str() {
        "/topics" => {
            let body = json!([source.topic]).to_string();
            let _ = respond(&mut stream, "200 OK", &body).await;
        }
        "/events" if matches(req.topic.as_deref(), &source.topic) => {
            let _ = stream_events(&mut stream, &source, req.last_event_id).await;
        }
        "/events" => {
            let body = json!({"error": format!("unknown topic '{}'; GET /topics lists them", req.topic.unwrap_or_default())});
            let _ = respond(&mut stream, "404 Not Found", &body.to_string()).await;
        }
        _ => {
            let _ = respond(&mut stream, "404 Not Found", r#"{"error":"unknown path"}"#).await;
        }
    }
}

async fn read_head<S: AsyncRead + Unpin>(stream: &mut S) -> Option<String> {
    let mut buf = Vec::with_capacity(1024);
    let mut chunk = [0u8; 1024];
    let deadline = Instant::now() + Duration::from_secs(10);
    while !buf.windows(4).any(|w| w == b"\r\n\r\n") {
        if buf.len() > MAX_HEAD {
            return None;
        }
        let n = tokio::time::timeout_at(deadline, stream.read(&mut chunk))
            .await
            .ok()?
            .ok()?;
        if n == 0 {
            return None;
        }
        buf.extend_from_slice(&chunk[..n]);
    }
    String::from_utf8(buf).ok()
}

async fn respond<S: AsyncWrite + Unpin>(
    stream: &mut S,
    status: &str,
    body: &str,
) -> std::io::Result<()> {
    let msg = format!(
        "HTTP/1.1 {status}\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
        body.len()
    );
    stream.write_all(msg.as_bytes()).await?;
    stream.shutdown().await
}

/// Appends SSE event `seq` to `buf`.
fn push_event(buf: &mut Vec<u8>, source: &Source, seq: u64) {
    let json = event_json(&source.topic, seq, now_ns(), source.size);
    if source.event_name {
        buf.extend_from_slice(format!("event: {}\n", source.topic).as_bytes());
    }
    buf.extend_from_slice(format!("id: {seq}\ndata: {json}\n\n").as_bytes());
}

/// Writes `data` as one HTTP chunk.
async fn write_chunk<S: AsyncWrite + Unpin>(stream: &mut S, data: &[u8]) -> std::io::Result<()> {
    if data.is_empty() {
        return Ok(());
    }
    let mut out = Vec::with_capacity(data.len() + 16);
    out.extend_from_slice(format!("{:x}\r\n", data.len()).as_bytes());
    out.extend_from_slice(data);
    out.extend_from_slice(b"\r\n");
    stream.write_all(&out).await
}

async fn stream_events<S: AsyncWrite + Unpin>(
    stream: &mut S,
    source: &Source,
    last_event_id: Option<u64>,
) -> std::io::Result<()> {
    stream
        .write_all(
            b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ncache-control: no-cache\r\ntransfer-encoding: chunked\r\n\r\n",
        )
        .await?;
    let rate = source.rate;
    let mut seq = match last_event_id {
        Some(id) if id >= 1 => {
            // Resume: if nothing started yet (a restarted source), event `id+1`
            // is due now.
            let behind = Duration::from_nanos(
                id.saturating_mul(1_000_000_000)
                    .checked_div(rate)
                    .unwrap_or(0),
            );
            source.start_at(|| {
                Instant::now()
                    .checked_sub(behind)
                    .unwrap_or_else(Instant::now)
            })?;
            id + 1
        }
        _ => match source.start.get() {
            Some(start) if rate > 0 => {
                let elapsed = start.elapsed().as_nanos();
                let due = u64::try_from(elapsed * u128::from(rate) / 1_000_000_000)
                    .unwrap_or(u64::MAX)
                    + 1;
                due.max(1)
            }
            Some(_) => source.next.load(Ordering::Relaxed),
            None => {
                warm_up(stream, source).await?;
                source.start_at(Instant::now)?;
                source.next.load(Ordering::Relaxed)
            }
        },
    };
    let start = source.start_at(Instant::now)?;
    let mut buf = Vec::with_capacity(CHUNK + 1024);
    loop {
        if source.count > 0 && seq > source.count {
            // All sent: keep the stream open, with a comment now and then.
            loop {
                write_chunk(stream, b": keep-alive\n\n").await?;
                tokio::time::sleep(Duration::from_secs(5)).await;
            }
        }
        buf.clear();
        let first = seq;
        if rate > 0 {
            let due_at =
                |n: u64| start + Duration::from_nanos((n - 1).saturating_mul(1_000_000_000) / rate);
            let next_due = due_at(seq);
            if next_due > Instant::now() {
                tokio::time::sleep_until(next_due).await;
            }
            let now = Instant::now();
            while (source.count == 0 || seq <= source.count)
                && due_at(seq) <= now
                && buf.len() < CHUNK
            {
                push_event(&mut buf, source, seq);
                seq += 1;
            }
        } else {
            while (source.count == 0 || seq <= source.count) && buf.len() < CHUNK {
                push_event(&mut buf, source, seq);
                seq += 1;
            }
        }
        if let (Some(r), true) = (&source.recorder, seq > first) {
            r.sent(first, seq - 1).map_err(std::io::Error::other)?;
        }
        write_chunk(stream, &buf).await?;
        stream.flush().await?;
        source.next.fetch_max(seq, Ordering::Relaxed);
    }
}

/// Before the numbered events: an event numbered 0 every 10 ms until the
/// ready file exists (60 s at most), then `warmup` more.
async fn warm_up<S: AsyncWrite + Unpin>(stream: &mut S, source: &Source) -> std::io::Result<()> {
    let mut buf = Vec::new();
    if let Some(file) = &source.ready_file {
        let deadline = Instant::now() + Duration::from_secs(60);
        while !file.exists() && Instant::now() < deadline {
            buf.clear();
            push_event(&mut buf, source, 0);
            write_chunk(stream, &buf).await?;
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    }
    let mut left = source.warmup;
    while left > 0 {
        buf.clear();
        while left > 0 && buf.len() < CHUNK {
            push_event(&mut buf, source, 0);
            left -= 1;
        }
        write_chunk(stream, &buf).await?;
        if source.rate > 0 {
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn request_heads() {
        let r = parse_head(
            "GET /events?topic=bench%2Fseq HTTP/1.1\r\nHost: x\r\nlast-event-id: 42\r\n\r\n",
        )
        .unwrap();
        assert_eq!(r.method, "GET");
        assert_eq!(r.path, "/events");
        assert_eq!(r.topic.as_deref(), Some("bench/seq"));
        assert_eq!(r.last_event_id, Some(42));
        let r = parse_head("GET /topics HTTP/1.1\r\n\r\n").unwrap();
        assert_eq!((r.topic, r.last_event_id), (None, None));
        assert_eq!(percent_decode("a%2"), "a%2");
        assert_eq!(percent_decode("%41%zz"), "A%zz");
    }

    #[test]
    fn topic_matching() {
        assert!(matches(None, "bench/seq"));
        assert!(matches(Some("."), "bench/seq"));
        assert!(matches(Some("bench/"), "bench/seq"));
        assert!(matches(Some("bench/seq"), "bench/seq"));
        assert!(!matches(Some("bench/se"), "bench/seq"));
        assert!(!matches(Some("timer/"), "bench/seq"));
    }
}
