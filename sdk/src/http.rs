//! JSON answers for requests an HTTP server could not even parse (feature
//! `tokio`).
//!
//! A plugin that serves an API on its instance socket promises a JSON error
//! for every error. hyper, though, answers a request it cannot parse (a URL
//! over its limit, headers over its buffer, a broken request line) itself,
//! with an empty body and no hook to change it. [`JsonParseErrors`] wraps
//! the connection and rewrites exactly those answers: an error status with
//! `content-length: 0`, `connection: close` and no `content-type`, which no
//! handler of ours writes. Everything else passes through untouched.
//!
//! An HTTP/2 client that speaks without asking (the connection preface
//! `PRI * HTTP/2.0`) is the one case hyper closes without any answer. The
//! wrapper holds back the first bytes of a connection until they cannot be
//! that preface; when they are, hyper sees an empty connection (which it
//! closes quietly) and the client gets the same JSON 400 as any other
//! request that is not HTTP/1.1.
//!
//! ```
//! # async fn serve(stream: tokio::net::TcpStream) {
//! use app_plugin::http::JsonParseErrors;
//! let io = JsonParseErrors::new(stream);
//! // hand `io` to hyper's `serve_connection` as usual
//! # drop(io);
//! # }
//! ```

use std::io;
use std::pin::Pin;
use std::task::{ready, Context, Poll};

use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};

/// A connection whose bare error answers (hyper's own) are rewritten as
/// `{"error":"…","status":N}` with `connection: close`.
#[derive(Debug)]
pub struct JsonParseErrors<I> {
    inner: I,
    state: State,
    reading: Reading,
}

/// The start of the HTTP/2 connection preface (RFC 9113 section 3.4): no
/// HTTP/1.1 request line starts so.
const H2_PREFACE: &[u8] = b"PRI * HTTP/2.0\r\n";

/// The read side: the first bytes are held until they cannot be the HTTP/2
/// preface.
#[derive(Debug)]
enum Reading {
    /// The bytes so far, all a prefix of [`H2_PREFACE`].
    Sniffing(Vec<u8>),
    /// Not HTTP/2: the held bytes go to the server first, from `usize`.
    Replaying(Vec<u8>, usize),
    /// Passing bytes through.
    Open,
    /// HTTP/2: our answer goes out (`usize` bytes are out), then the
    /// server reads an end of file.
    Refusing(Vec<u8>, usize),
}

#[derive(Debug)]
enum State {
    /// Passing bytes through.
    Open,
    /// Writing our answer in place of hyper's; `usize` bytes are out.
    Replacing(Vec<u8>, usize),
    /// Our answer is out: the server closes after an error answer, so
    /// anything it still writes is swallowed rather than sent after a
    /// complete, length-delimited response.
    Answered,
}

impl<I> JsonParseErrors<I> {
    /// Wraps a connection.
    ///
    /// ```
    /// let (a, _b) = tokio::io::duplex(64);
    /// let _io = app_plugin::http::JsonParseErrors::new(a);
    /// ```
    pub fn new(inner: I) -> JsonParseErrors<I> {
        JsonParseErrors {
            inner,
            state: State::Open,
            reading: Reading::Sniffing(Vec::new()),
        }
    }

    /// The wrapped connection.
    ///
    /// ```
    /// let (a, _b) = tokio::io::duplex(64);
    /// let io = app_plugin::http::JsonParseErrors::new(a);
    /// let _a: &tokio::io::DuplexStream = io.get_ref();
    /// ```
    pub fn get_ref(&self) -> &I {
        &self.inner
    }
}

/// The JSON answer that replaces `head` when `head` is a bare error answer
/// (the whole of it, as a server hands it to the connection), else `None`.
///
/// ```
/// let bare = b"HTTP/1.1 414 URI Too Long\r\nconnection: close\r\ncontent-length: 0\r\n\r\n";
/// let json = app_plugin::http::json_answer(bare).unwrap();
/// let text = String::from_utf8(json).unwrap();
/// assert!(text.starts_with("HTTP/1.1 414 URI Too Long\r\n"));
/// assert!(text.ends_with(r#""status":414}"#));
///
/// let ours = b"HTTP/1.1 404 Not Found\r\ncontent-type: application/json\r\ncontent-length: 2\r\n\r\n{}";
/// assert!(app_plugin::http::json_answer(ours).is_none());
/// ```
pub fn json_answer(head: &[u8]) -> Option<Vec<u8>> {
    let rest = head.strip_prefix(b"HTTP/1.")?;
    let end = find(head, b"\r\n\r\n")?;
    // Only the head: a body would mean the answer is not bare.
    if end + 4 != head.len() {
        return None;
    }
    let status = std::str::from_utf8(rest.get(2..5)?).ok()?;
    let code: u16 = status.parse().ok()?;
    if !(400..600).contains(&code) {
        return None;
    }
    let lower = head[..end].to_ascii_lowercase();
    let has = |header: &[u8]| {
        let line = [b"\r\n", header].concat();
        find(&lower, &[line.as_slice(), b"\r\n"].concat()).is_some() || lower.ends_with(&line)
    };
    // hyper's own answer closes the connection; an empty answer of a
    // handler on a kept-alive connection is left alone, so nothing after it
    // is ever swallowed.
    if !has(b"content-length: 0")
        || !has(b"connection: close")
        || find(&lower, b"\r\ncontent-type:").is_some()
    {
        return None;
    }
    let line_end = find(head, b"\r\n")?;
    let status_line = String::from_utf8_lossy(&head[..line_end]);
    Some(json_error(&status_line, code, message_for(code)))
}

/// What a bare answer of status `code` means to the client.
fn message_for(code: u16) -> &'static str {
    match code {
        400 => "the request is not valid HTTP/1.1; check the request line and the headers",
        414 => "the URL is too long; send a shorter path and query",
        431 => {
            "the request's headers are too large; send fewer or smaller headers, or a shorter URL"
        }
        505 => "this HTTP version is not served; use HTTP/1.1",
        _ => "the request could not be read; check it is HTTP/1.1",
    }
}

/// A whole closing answer: `status_line`, then `{"error":…,"status":…}`.
fn json_error(status_line: &str, code: u16, message: &str) -> Vec<u8> {
    let body = serde_json::json!({ "error": message, "status": code }).to_string();
    format!(
        "{status_line}\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
        body.len()
    )
    .into_bytes()
}

/// The answer to an HTTP/2 connection preface.
fn h2_answer() -> Vec<u8> {
    json_error(
        "HTTP/1.1 400 Bad Request",
        400,
        "HTTP/2 is not served here (the connection started with the HTTP/2 preface); use HTTP/1.1",
    )
}

fn find(haystack: &[u8], needle: &[u8]) -> Option<usize> {
    haystack.windows(needle.len()).position(|w| w == needle)
}

impl<I: AsyncWrite + Unpin> JsonParseErrors<I> {
    /// Sends our answer once `buf` (hyper's bytes) has been recognised;
    /// reports hyper's bytes as written when ours are out.
    fn poll_answer(&mut self, cx: &mut Context<'_>, taken: usize) -> Poll<io::Result<usize>> {
        loop {
            match &mut self.state {
                State::Replacing(answer, sent) => {
                    if *sent == answer.len() {
                        self.state = State::Answered;
                        continue;
                    }
                    let n = ready!(Pin::new(&mut self.inner).poll_write(cx, &answer[*sent..]))?;
                    if n == 0 {
                        return Poll::Ready(Err(io::ErrorKind::WriteZero.into()));
                    }
                    *sent += n;
                }
                State::Answered => return Poll::Ready(Ok(taken)),
                State::Open => unreachable!("poll_answer is called only after a rewrite"),
            }
        }
    }
}

impl<I: AsyncRead + AsyncWrite + Unpin> AsyncRead for JsonParseErrors<I> {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let this = &mut *self;
        loop {
            match &mut this.reading {
                Reading::Open => return Pin::new(&mut this.inner).poll_read(cx, buf),
                Reading::Replaying(held, from) => {
                    let n = (held.len() - *from).min(buf.remaining());
                    buf.put_slice(&held[*from..*from + n]);
                    *from += n;
                    if *from == held.len() {
                        this.reading = Reading::Open;
                    }
                    return Poll::Ready(Ok(()));
                }
                Reading::Sniffing(held) => {
                    let mut chunk = [0u8; H2_PREFACE.len()];
                    let want = H2_PREFACE.len() - held.len();
                    let mut rb = ReadBuf::new(&mut chunk[..want]);
                    ready!(Pin::new(&mut this.inner).poll_read(cx, &mut rb))?;
                    let got = rb.filled();
                    if got.is_empty() {
                        // The end before a whole preface: hand over what
                        // came, then the end.
                        let held = std::mem::take(held);
                        if held.is_empty() {
                            this.reading = Reading::Open;
                            return Poll::Ready(Ok(()));
                        }
                        this.reading = Reading::Replaying(held, 0);
                        continue;
                    }
                    held.extend_from_slice(got);
                    if held.as_slice() == H2_PREFACE {
                        this.reading = Reading::Refusing(h2_answer(), 0);
                    } else if !H2_PREFACE.starts_with(held) {
                        let held = std::mem::take(held);
                        this.reading = Reading::Replaying(held, 0);
                    }
                }
                Reading::Refusing(answer, sent) => {
                    while *sent < answer.len() {
                        let n = ready!(Pin::new(&mut this.inner).poll_write(cx, &answer[*sent..]))?;
                        if n == 0 {
                            return Poll::Ready(Err(io::ErrorKind::WriteZero.into()));
                        }
                        *sent += n;
                    }
                    ready!(Pin::new(&mut this.inner).poll_flush(cx))?;
                    // Nothing for the server: it closes an empty connection
                    // without an answer of its own.
                    return Poll::Ready(Ok(()));
                }
            }
        }
    }
}

impl<I: AsyncWrite + Unpin> AsyncWrite for JsonParseErrors<I> {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        if let State::Open = self.state {
            match json_answer(buf) {
                Some(answer) => self.state = State::Replacing(answer, 0),
                None => return Pin::new(&mut self.inner).poll_write(cx, buf),
            }
        }
        self.poll_answer(cx, buf.len())
    }

    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        if let State::Open = self.state {
            // A bare answer is a head alone, so it is one slice.
            let mut full = bufs.iter().filter(|b| !b.is_empty());
            let answer = match (full.next(), full.next()) {
                (Some(only), None) => json_answer(only),
                _ => None,
            };
            match answer {
                Some(answer) => self.state = State::Replacing(answer, 0),
                None => return Pin::new(&mut self.inner).poll_write_vectored(cx, bufs),
            }
        }
        let taken = bufs.iter().map(|b| b.len()).sum();
        self.poll_answer(cx, taken)
    }

    fn is_write_vectored(&self) -> bool {
        self.inner.is_write_vectored()
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.inner).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.inner).poll_shutdown(cx)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tokio::io::{AsyncReadExt, AsyncWriteExt};

    #[test]
    fn only_bare_error_answers_are_rewritten() {
        let bare = b"HTTP/1.1 431 Request Header Fields Too Large\r\nconnection: close\r\ncontent-length: 0\r\ndate: x\r\n\r\n";
        let text = String::from_utf8(json_answer(bare).unwrap()).unwrap();
        let (head, body) = text.split_once("\r\n\r\n").unwrap();
        assert!(head.starts_with("HTTP/1.1 431 Request Header Fields Too Large"));
        assert!(head.contains("content-type: application/json"));
        assert!(head.contains(&format!("content-length: {}", body.len())));
        let v: serde_json::Value = serde_json::from_str(body).unwrap();
        assert_eq!(v["status"], 431);
        assert!(v["error"]
            .as_str()
            .unwrap()
            .contains("headers are too large"));

        for other in [
            &b"HTTP/1.1 204 No Content\r\nconnection: close\r\ncontent-length: 0\r\n\r\n"[..],
            // A handler's empty error on a kept-alive connection.
            b"HTTP/1.1 404 Not Found\r\ncontent-length: 0\r\n\r\n",
            b"HTTP/1.1 200 OK\r\ncontent-length: 0\r\n\r\n",
            b"HTTP/1.1 404 Not Found\r\ncontent-type: application/json\r\ncontent-length: 0\r\n\r\n",
            b"HTTP/1.1 400 Bad Request\r\ncontent-length: 10\r\n\r\n",
            b"HTTP/1.1 400 Bad Request\r\ncontent-length: 0\r\n",
            b"HTTP/1.1 400 Bad Request\r\ncontent-length: 0\r\n\r\n{}",
            b"{\"error\":\"HTTP/1.1 400\"}",
            b"",
        ] {
            assert!(json_answer(other).is_none(), "{}", String::from_utf8_lossy(other));
        }
    }

    /// What a server reading `sent` through the wrapper reads, and what
    /// the client gets back.
    async fn through(sent: Vec<u8>) -> (Vec<u8>, String) {
        let (a, mut b) = tokio::io::duplex(64);
        let mut io = JsonParseErrors::new(a);
        let client = tokio::spawn(async move {
            // In small pieces, as a slow client would send them.
            for piece in sent.chunks(5) {
                b.write_all(piece).await.unwrap();
            }
            b.shutdown().await.unwrap();
            let mut got = String::new();
            b.read_to_string(&mut got).await.unwrap();
            got
        });
        let mut read = Vec::new();
        io.read_to_end(&mut read).await.unwrap();
        io.shutdown().await.unwrap();
        drop(io);
        (read, client.await.unwrap())
    }

    #[tokio::test]
    async fn an_http2_preface_gets_a_json_400_and_the_server_an_empty_connection() {
        let (read, answer) = through(b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n".to_vec()).await;
        assert!(read.is_empty(), "{:?}", String::from_utf8_lossy(&read));
        assert!(
            answer.starts_with("HTTP/1.1 400 Bad Request\r\n"),
            "{answer}"
        );
        let body: serde_json::Value =
            serde_json::from_str(answer.split_once("\r\n\r\n").unwrap().1).unwrap();
        assert_eq!(body["status"], 400);
        assert!(body["error"].as_str().unwrap().contains("HTTP/2"), "{body}");

        // Anything else reaches the server unchanged, whether or not it
        // starts like the preface, however short.
        for other in [
            &b"GET / HTTP/1.1\r\nHost: x\r\n\r\n"[..],
            b"PRI * HTTP/1.1\r\n\r\n",
            b"PR",
            b"",
        ] {
            let (read, answer) = through(other.to_vec()).await;
            assert_eq!(read, other);
            assert_eq!(answer, "");
        }
    }

    #[tokio::test]
    async fn the_answer_goes_out_in_place_of_the_bare_one_and_nothing_after() {
        let (a, mut b) = tokio::io::duplex(16);
        let mut io = JsonParseErrors::new(a);
        let writer = tokio::spawn(async move {
            io.write_all(
                b"HTTP/1.1 414 URI Too Long\r\nconnection: close\r\ncontent-length: 0\r\n\r\n",
            )
            .await
            .unwrap();
            io.write_all(b"garbage").await.unwrap();
            io.shutdown().await.unwrap();
        });
        let mut got = String::new();
        b.read_to_string(&mut got).await.unwrap();
        writer.await.unwrap();
        assert!(got.starts_with("HTTP/1.1 414 URI Too Long\r\n"), "{got}");
        assert!(got.ends_with(r#""status":414}"#), "{got}");

        let (a, mut b) = tokio::io::duplex(64);
        let mut io = JsonParseErrors::new(a);
        io.write_all(b"HTTP/1.1 200 OK\r\ncontent-length: 2\r\n\r\nok")
            .await
            .unwrap();
        io.shutdown().await.unwrap();
        let mut got = String::new();
        b.read_to_string(&mut got).await.unwrap();
        assert_eq!(got, "HTTP/1.1 200 OK\r\ncontent-length: 2\r\n\r\nok");
    }
}
