//! The daemons under systemd, without systemd: the `sd_notify` messages they
//! send to a `NOTIFY_SOCKET` the test binds (READY only once the API answers,
//! STATUS, WATCHDOG at half of `WATCHDOG_USEC` and none once the relay is
//! wedged, STOPPING on SIGTERM), and the `<N>` priority prefix on log lines
//! when `JOURNAL_STREAM` names their stderr.

use std::fs;
use std::path::Path;
use std::time::Duration;

use crate::common::repeater::raw_request;

mod cache_mode;
mod journal;
mod notify;
mod options_file;
mod system_instance;

fn healthz(socket: &Path) -> Option<u16> {
    raw_request(
        socket,
        b"GET /healthz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n",
        Duration::from_secs(2),
    )
    .map(|(status, _)| status)
}

fn append(path: &Path) -> fs::File {
    fs::File::options()
        .create(true)
        .append(true)
        .open(path)
        .expect("open the log")
}
