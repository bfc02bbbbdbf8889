//! A connection whose writes give up when the peer takes nothing for a
//! while.
//!
//! hyper bounds how long it waits for a request, never how long it waits to
//! write an answer. A client that sends `GET /events` (an answer of
//! hundreds of KiB with a large route table) and then stops reading keeps
//! the write pending, and its connection slot taken, for ever; enough such
//! clients fill `--max-connections`. [`WriteTimeout`] fails a write (or
//! flush) that has made no progress for its timeout, which ends the
//! connection and frees the slot. [`super::serve`] uses it when
//! [`super::Limits::write_timeout`] is set; the message names the flag a
//! daemon sets it with, `--request-timeout`.

use std::future::Future;
use std::io;
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Duration;

use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::time::Sleep;

/// `inner` whose writes fail with `TimedOut` after `timeout` without
/// progress (with no timeout, `inner` as it is).
///
/// ```
/// # tokio::runtime::Builder::new_current_thread().enable_time().build().unwrap().block_on(async {
/// use std::time::Duration;
/// use tokio::io::AsyncWriteExt;
/// use app_plugin::daemon::WriteTimeout;
///
/// let (a, _nobody_reads) = tokio::io::duplex(16);
/// let mut io = WriteTimeout::new(a, Some(Duration::from_millis(50)));
/// let err = io.write_all(&[0u8; 64]).await.unwrap_err();
/// assert_eq!(err.kind(), std::io::ErrorKind::TimedOut);
/// # });
/// ```
#[derive(Debug)]
pub struct WriteTimeout<I> {
    inner: I,
    timeout: Option<Duration>,
    /// Armed while a write is pending; reset by any progress.
    stalled: Option<Pin<Box<Sleep>>>,
}

impl<I> WriteTimeout<I> {
    /// Wraps `inner`; `None` never times out.
    ///
    /// ```
    /// let (a, _b) = tokio::io::duplex(16);
    /// let _io = app_plugin::daemon::WriteTimeout::new(a, None);
    /// ```
    pub fn new(inner: I, timeout: Option<Duration>) -> WriteTimeout<I> {
        WriteTimeout {
            inner,
            timeout,
            stalled: None,
        }
    }

    /// Passes `r` on, and turns a write pending for `timeout` into an error.
    fn watch<T>(&mut self, cx: &mut Context<'_>, r: Poll<io::Result<T>>) -> Poll<io::Result<T>> {
        let Some(timeout) = self.timeout else {
            return r;
        };
        if r.is_ready() {
            self.stalled = None;
            return r;
        }
        let sleep = self
            .stalled
            .get_or_insert_with(|| Box::pin(tokio::time::sleep(timeout)));
        match sleep.as_mut().poll(cx) {
            Poll::Ready(()) => Poll::Ready(Err(io::Error::new(
                io::ErrorKind::TimedOut,
                format!(
                    "the client took none of the answer for {} (--request-timeout)",
                    humantime::format_duration(timeout)
                ),
            ))),
            Poll::Pending => Poll::Pending,
        }
    }
}

impl<I: AsyncRead + Unpin> AsyncRead for WriteTimeout<I> {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        Pin::new(&mut self.inner).poll_read(cx, buf)
    }
}

impl<I: AsyncWrite + Unpin> AsyncWrite for WriteTimeout<I> {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        let r = Pin::new(&mut self.inner).poll_write(cx, buf);
        self.watch(cx, r)
    }

    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        let r = Pin::new(&mut self.inner).poll_write_vectored(cx, bufs);
        self.watch(cx, r)
    }

    fn is_write_vectored(&self) -> bool {
        self.inner.is_write_vectored()
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        let r = Pin::new(&mut self.inner).poll_flush(cx);
        self.watch(cx, r)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        let r = Pin::new(&mut self.inner).poll_shutdown(cx);
        self.watch(cx, r)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tokio::io::{AsyncReadExt, AsyncWriteExt};

    #[tokio::test]
    async fn a_write_nobody_reads_fails_after_the_timeout_one_that_is_read_does_not() {
        let (a, mut b) = tokio::io::duplex(1024);
        let mut io = WriteTimeout::new(a, Some(Duration::from_millis(300)));
        let err = io.write_all(&[0u8; 4096]).await.unwrap_err();
        assert_eq!(err.kind(), io::ErrorKind::TimedOut);
        assert!(err.to_string().contains("--request-timeout"), "{err}");

        // A reader slower than the timeout in total, but never stalled
        // that long, gets everything.
        let (a, mut b2) = tokio::io::duplex(1024);
        let mut io = WriteTimeout::new(a, Some(Duration::from_millis(300)));
        let reader = tokio::spawn(async move {
            let mut got = Vec::new();
            let mut chunk = [0u8; 512];
            loop {
                tokio::time::sleep(Duration::from_millis(100)).await;
                match b2.read(&mut chunk).await.unwrap() {
                    0 => return got.len(),
                    n => got.extend_from_slice(&chunk[..n]),
                }
            }
        });
        io.write_all(&[1u8; 8192]).await.unwrap();
        io.shutdown().await.unwrap();
        drop(io);
        assert_eq!(reader.await.unwrap(), 8192);
        drop(b.read(&mut [0u8; 1]).await);
    }
}
