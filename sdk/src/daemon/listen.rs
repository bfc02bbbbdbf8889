//! From a name to bound listeners: [`claim`] the instance's place, then
//! [`Claimed::listen`] on TCP (optional) and the unix socket, writing the
//! runtime files in the order clients rely on.

use std::net::SocketAddr;
use std::path::Path;

use tokio::net::{TcpListener, UnixListener};

use super::Error;
use crate::instance::InstanceFiles;
use crate::log::INFO;

/// The instance's place, claimed: no other instance of the name runs, and
/// nothing is bound yet. A daemon opens what must be exclusive to it (its
/// state, its locks) now, then calls [`listen`](Claimed::listen).
///
/// ```no_run
/// # async fn run() -> Result<(), app_plugin::daemon::Error> {
/// let dir = std::path::Path::new("/run/user/1000/app/plugins");
/// let claimed = app_plugin::daemon::claim(dir, "r1", "event repeater named \"r1\"")?;
/// // … read the state file that only this instance may write …
/// let listeners = claimed.listen(None).await?;
/// # drop(listeners); Ok(()) }
/// ```
#[derive(Debug)]
pub struct Claimed {
    files: InstanceFiles,
}

/// Claims the place of instance `name` in `dir`
/// ([`InstanceFiles::claim`]); `noun` names the other instance in the
/// refusal ("another `noun` is already running …"). A stale socket that is
/// replaced is logged.
///
/// ```
/// let tmp = tempfile::tempdir().unwrap();
/// let claimed = app_plugin::daemon::claim::<()>(tmp.path(), "demo", "instance").unwrap();
/// assert_eq!(claimed.files().socket(), tmp.path().join("demo.sock"));
/// ```
pub fn claim<E>(dir: &Path, name: &str, noun: &str) -> Result<Claimed, Error<E>> {
    let files = InstanceFiles::claim(dir, name).map_err(|e| Error::Instance(e.describe(noun)))?;
    if files.replaced_stale() {
        crate::log!(
            INFO,
            "replaced the stale socket {} left by a process that is gone",
            files.socket().display()
        );
    }
    Ok(Claimed { files })
}

/// The TCP listener to open beside the unix socket.
///
/// ```
/// let tcp = app_plugin::daemon::Tcp::new("127.0.0.1:0");
/// assert_eq!(tcp.addr(), "127.0.0.1:0");
/// ```
#[derive(Clone)]
pub struct Tcp {
    addr: String,
    #[cfg(feature = "tls")]
    tls: Option<tokio_rustls::TlsAcceptor>,
}

impl Tcp {
    /// `addr` as the user gave it: `HOST:PORT`, where `HOST` may be a name
    /// (`localhost`), which the listen URL keeps.
    ///
    /// ```
    /// let tcp = app_plugin::daemon::Tcp::new("localhost:8080");
    /// # drop(tcp);
    /// ```
    pub fn new(addr: impl Into<String>) -> Tcp {
        Tcp {
            addr: addr.into(),
            #[cfg(feature = "tls")]
            tls: None,
        }
    }

    /// Serves HTTPS with `acceptor` (see [`crate::daemon::tls::acceptor`]);
    /// the listen URL is `https://…`.
    ///
    /// ```no_run
    /// # fn f() -> Result<(), String> {
    /// use std::path::Path;
    /// let acceptor = app_plugin::daemon::tls::acceptor(Path::new("cert.pem"), Path::new("key.pem"))?;
    /// let tcp = app_plugin::daemon::Tcp::new("0.0.0.0:8443").tls(Some(acceptor));
    /// # drop(tcp); Ok(()) }
    /// ```
    #[cfg(feature = "tls")]
    pub fn tls(mut self, acceptor: Option<tokio_rustls::TlsAcceptor>) -> Tcp {
        self.tls = acceptor;
        self
    }

    /// The address as given.
    ///
    /// ```
    /// assert_eq!(app_plugin::daemon::Tcp::new(":80").addr(), ":80");
    /// ```
    pub fn addr(&self) -> &str {
        &self.addr
    }

    fn scheme(&self) -> &'static str {
        #[cfg(feature = "tls")]
        if self.tls.is_some() {
            return "https";
        }
        "http"
    }
}

impl std::fmt::Debug for Tcp {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Tcp")
            .field("addr", &self.addr)
            .field("scheme", &self.scheme())
            .finish()
    }
}

/// A bound TCP listener, with the URL written to the `.listen` file.
pub struct TcpBound {
    /// The listener.
    pub listener: TcpListener,
    /// The address it is bound to (the port chosen for port 0).
    pub local: SocketAddr,
    /// `http://HOST:PORT` or `https://…`, `HOST` as the user gave it.
    pub url: String,
    /// The TLS settings, when the listener serves HTTPS.
    #[cfg(feature = "tls")]
    pub tls: Option<tokio_rustls::TlsAcceptor>,
}

impl std::fmt::Debug for TcpBound {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TcpBound")
            .field("listener", &self.listener)
            .field("local", &self.local)
            .field("url", &self.url)
            .finish_non_exhaustive()
    }
}

/// A daemon's listeners and runtime files, bound and written; the files are
/// removed when [`files`](Listeners::files) drops.
#[derive(Debug)]
pub struct Listeners {
    /// The instance files (socket, pid, listen).
    pub files: InstanceFiles,
    /// The instance socket.
    pub unix: UnixListener,
    /// The TCP listener, if one was asked for.
    pub tcp: Option<TcpBound>,
}

impl Claimed {
    /// The instance files claimed.
    ///
    /// ```
    /// let tmp = tempfile::tempdir().unwrap();
    /// let claimed = app_plugin::daemon::claim::<()>(tmp.path(), "demo", "instance").unwrap();
    /// assert!(!claimed.files().socket().exists());
    /// ```
    pub fn files(&self) -> &InstanceFiles {
        &self.files
    }

    /// Binds `tcp` (and writes its URL to the `.listen` file), writes the
    /// pid file, and binds the unix socket last: whoever sees the socket
    /// finds the other files in place. Must be called inside a tokio
    /// runtime.
    ///
    /// ```
    /// # tokio::runtime::Builder::new_current_thread().enable_io().build().unwrap().block_on(async {
    /// use app_plugin::daemon::{claim, Tcp};
    /// let tmp = tempfile::tempdir().unwrap();
    /// let claimed = claim::<()>(tmp.path(), "demo", "instance").unwrap();
    /// let l = claimed.listen::<()>(Some(Tcp::new("127.0.0.1:0"))).await.unwrap();
    /// let url = std::fs::read_to_string(l.files.listen_path()).unwrap();
    /// assert_eq!(url.trim_end(), l.tcp.as_ref().unwrap().url);
    /// assert!(url.starts_with("http://127.0.0.1:"));
    /// assert!(l.files.socket().exists() && l.files.pid_path().exists());
    /// # });
    /// ```
    pub async fn listen<E>(self, tcp: Option<Tcp>) -> Result<Listeners, Error<E>> {
        let Claimed { mut files } = self;
        let tcp = match tcp {
            Some(tcp) => Some(bind_tcp(tcp, &mut files).await?),
            None => None,
        };
        files
            .write_pid()
            .map_err(|e| Error::Instance(e.to_string()))?;
        let unix = files.bind().map_err(|e| Error::Instance(e.to_string()))?;
        let unix = unix
            .set_nonblocking(true)
            .and_then(|()| UnixListener::from_std(unix))
            .map_err(|source| Error::Listen {
                what: files.socket().display().to_string(),
                source,
            })?;
        Ok(Listeners { files, unix, tcp })
    }
}

async fn bind_tcp<E>(tcp: Tcp, files: &mut InstanceFiles) -> Result<TcpBound, Error<E>> {
    let bind_error = |source| Error::Bind {
        addr: tcp.addr.clone(),
        source,
    };
    let listener = TcpListener::bind(&tcp.addr).await.map_err(bind_error)?;
    let local = listener.local_addr().map_err(bind_error)?;
    let url = format!("{}://{}", tcp.scheme(), url_host_port(&tcp.addr, local));
    files
        .write_listen(&url)
        .map_err(|e| Error::Instance(e.to_string()))?;
    Ok(TcpBound {
        listener,
        local,
        url,
        #[cfg(feature = "tls")]
        tls: tcp.tls,
    })
}

/// `HOST:PORT` for the listen URL: the host as the user wrote it (a name
/// stays a name), the port as bound (port 0 becomes the one chosen).
fn url_host_port(typed: &str, local: SocketAddr) -> String {
    if typed.parse::<SocketAddr>().is_ok() {
        return local.to_string();
    }
    match typed.rsplit_once(':') {
        Some((host, _)) if !host.is_empty() => format!("{host}:{}", local.port()),
        _ => local.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_url_keeps_a_host_name_and_takes_the_bound_port() {
        let local: SocketAddr = "127.0.0.1:4321".parse().unwrap();
        assert_eq!(url_host_port("localhost:0", local), "localhost:4321");
        assert_eq!(url_host_port("127.0.0.1:0", local), "127.0.0.1:4321");
        let v6: SocketAddr = "[::1]:4321".parse().unwrap();
        assert_eq!(url_host_port("[::1]:0", v6), "[::1]:4321");
        assert_eq!(url_host_port("ip6-localhost:0", v6), "ip6-localhost:4321");
    }
}
