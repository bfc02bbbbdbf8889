//! HTTP over a unix socket for ureq: a connector that ignores the URL's host
//! and connects to a socket path instead, and the transport around the
//! stream. ureq does the HTTP/1.1 (framing, chunked bodies, timeouts).
//!
//! ureq's transport traits are not covered by semver yet, which is why
//! Cargo.toml pins ureq's minor version.

use std::io::{self, Read, Write};
use std::os::unix::net::UnixStream;
use std::path::PathBuf;
use std::sync::mpsc;
use std::time::Duration;

use ureq::unversioned::resolver::{ResolvedSocketAddrs, Resolver};
use ureq::unversioned::transport::{
    Buffers, ConnectionDetails, Connector, LazyBuffers, NextTimeout, Transport,
};
use ureq::Error;

/// Connects every request to one unix socket.
#[derive(Debug)]
pub struct UnixConnector {
    path: PathBuf,
}

impl UnixConnector {
    /// A connector for the socket at `path`.
    pub fn new(path: PathBuf) -> UnixConnector {
        UnixConnector { path }
    }
}

impl Connector for UnixConnector {
    type Out = UnixTransport;

    fn connect(
        &self,
        details: &ConnectionDetails,
        _chained: Option<()>,
    ) -> Result<Option<UnixTransport>, Error> {
        let limit = details.timeout.not_zero().map(|d| *d);
        let stream = connect(&self.path, limit)?;
        let config = details.config;
        Ok(Some(UnixTransport {
            stream,
            buffers: LazyBuffers::new(config.input_buffer_size(), config.output_buffer_size()),
            read_timeout: None,
            write_timeout: None,
        }))
    }
}

/// `UnixStream::connect` has no timeout, and a listener whose backlog is full
/// makes it wait; so connect on a helper thread and stop waiting at the
/// deadline (the process ends soon after, taking the thread with it).
fn connect(path: &std::path::Path, limit: Option<Duration>) -> Result<UnixStream, Error> {
    let Some(limit) = limit else {
        return Ok(UnixStream::connect(path)?);
    };
    let (tx, rx) = mpsc::channel();
    let path = path.to_path_buf();
    std::thread::spawn(move || {
        // The receiver may be gone after a timeout; nothing to do then.
        let _ = tx.send(UnixStream::connect(path));
    });
    match rx.recv_timeout(limit) {
        Ok(result) => Ok(result?),
        Err(_) => Err(Error::Timeout(ureq::Timeout::Connect)),
    }
}

/// Skips name resolution: the host in the URL is only for the `Host` header.
#[derive(Debug)]
pub struct NoResolver;

impl Resolver for NoResolver {
    fn resolve(
        &self,
        _uri: &ureq::http::Uri,
        _config: &ureq::config::Config,
        _timeout: NextTimeout,
    ) -> Result<ResolvedSocketAddrs, Error> {
        let mut addrs = self.empty();
        addrs.push(std::net::SocketAddr::from(([127, 0, 0, 1], 80)));
        Ok(addrs)
    }
}

/// A connected unix socket with ureq's buffers.
#[derive(Debug)]
pub struct UnixTransport {
    stream: UnixStream,
    buffers: LazyBuffers,
    read_timeout: Option<Duration>,
    write_timeout: Option<Duration>,
}

/// The time left, or ureq's timeout error when there is none.
fn time_left(timeout: NextTimeout) -> Result<Option<Duration>, Error> {
    if timeout.after.is_zero() {
        return Err(Error::Timeout(timeout.reason));
    }
    Ok(timeout.not_zero().map(|d| *d))
}

fn timed_out(e: &io::Error) -> bool {
    matches!(
        e.kind(),
        io::ErrorKind::TimedOut | io::ErrorKind::WouldBlock
    )
}

impl Transport for UnixTransport {
    fn buffers(&mut self) -> &mut dyn Buffers {
        &mut self.buffers
    }

    fn transmit_output(&mut self, amount: usize, timeout: NextTimeout) -> Result<(), Error> {
        let timeout = timeout.for_write();
        let left = time_left(timeout)?;
        if left != self.write_timeout {
            self.stream.set_write_timeout(left)?;
            self.write_timeout = left;
        }
        let output = &self.buffers.output()[..amount];
        match self.stream.write_all(output) {
            Ok(()) => Ok(()),
            Err(e) if timed_out(&e) => Err(Error::Timeout(timeout.reason)),
            Err(e) => Err(e.into()),
        }
    }

    fn await_input(&mut self, timeout: NextTimeout) -> Result<bool, Error> {
        let timeout = timeout.for_read();
        let left = time_left(timeout)?;
        if left != self.read_timeout {
            self.stream.set_read_timeout(left)?;
            self.read_timeout = left;
        }
        let input = self.buffers.input_append_buf();
        let amount = loop {
            match self.stream.read(input) {
                Ok(n) => break n,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(e) if timed_out(&e) => return Err(Error::Timeout(timeout.reason)),
                Err(e) => return Err(e.into()),
            }
        };
        self.buffers.input_appended(amount);
        Ok(amount > 0)
    }

    fn is_open(&mut self) -> bool {
        // Open means: no bytes and no EOF waiting, so a read would block.
        if self.stream.set_nonblocking(true).is_err() {
            return false;
        }
        let mut byte = [0u8; 1];
        let open =
            matches!(self.stream.read(&mut byte), Err(e) if e.kind() == io::ErrorKind::WouldBlock);
        open && self.stream.set_nonblocking(false).is_ok()
    }
}
