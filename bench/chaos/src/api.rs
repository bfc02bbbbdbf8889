//! The repeater's REST API on its unix socket: one request per connection,
//! 2 s to connect, send and read, 4 MiB at most.

use std::collections::BTreeMap;
use std::io::{Read, Write};
use std::os::unix::net::UnixStream;
use std::path::Path;
use std::time::Duration;

use app_event_repeater_api::metric::Metric;
use app_event_repeater_api::path;

const TIMEOUT: Duration = Duration::from_secs(2);
const MAX_ANSWER: u64 = 4 << 20;

/// `METHOD path` with an optional JSON body; the status and the body.
pub fn request(
    socket: &Path,
    method: &str,
    path: &str,
    body: Option<&str>,
) -> Result<(u16, String), String> {
    let mut s = UnixStream::connect(socket).map_err(|e| format!("{}: {e}", socket.display()))?;
    s.set_read_timeout(Some(TIMEOUT))
        .map_err(|e| e.to_string())?;
    s.set_write_timeout(Some(TIMEOUT))
        .map_err(|e| e.to_string())?;
    let body = body.unwrap_or("");
    let head = format!(
        "{method} {path} HTTP/1.1\r\nHost: x\r\nConnection: close\r\ncontent-type: application/json\r\ncontent-length: {}\r\n\r\n",
        body.len()
    );
    s.write_all(head.as_bytes())
        .and_then(|()| s.write_all(body.as_bytes()))
        .map_err(|e| format!("{method} {path}: {e}"))?;
    let mut answer = Vec::new();
    s.take(MAX_ANSWER)
        .read_to_end(&mut answer)
        .map_err(|e| format!("{method} {path}: {e}"))?;
    let text = String::from_utf8_lossy(&answer);
    let status = text
        .strip_prefix("HTTP/1.1 ")
        .and_then(|r| r.get(..3))
        .and_then(|c| c.parse().ok())
        .ok_or_else(|| format!("{method} {path}: not an HTTP answer"))?;
    let (head, body) = text.split_once("\r\n\r\n").unwrap_or((&text, ""));
    let chunked = head
        .to_ascii_lowercase()
        .contains("transfer-encoding: chunked");
    let body = if chunked {
        dechunk(body)
    } else {
        body.to_string()
    };
    Ok((status, body))
}

/// The body of a chunked answer.
fn dechunk(mut rest: &str) -> String {
    let mut out = String::new();
    while let Some((size, after)) = rest.split_once("\r\n") {
        let Ok(n) = usize::from_str_radix(size.trim(), 16) else {
            break;
        };
        if n == 0 || after.len() < n {
            break;
        }
        out.push_str(&after[..n]);
        rest = after[n..].trim_start_matches("\r\n");
    }
    out
}

/// `GET /metrics` as `sample name{labels}` → value.
pub fn metrics(socket: &Path) -> Result<BTreeMap<String, f64>, String> {
    let (status, body) = request(socket, "GET", path::METRICS, None)?;
    if status != 200 {
        return Err(format!("GET {}: {status}", path::METRICS));
    }
    Ok(body
        .lines()
        .filter(|l| !l.starts_with('#'))
        .filter_map(|l| l.rsplit_once(' '))
        .filter_map(|(k, v)| Some((k.to_string(), v.parse().ok()?)))
        .collect())
}

/// The sum of every series of `family` (all label sets).
pub fn sum(m: &BTreeMap<String, f64>, family: Metric) -> f64 {
    let name = family.sample();
    let name = name.as_str();
    m.iter()
        .filter(|(k, _)| *k == name || k.strip_prefix(name).is_some_and(|r| r.starts_with('{')))
        .map(|(_, v)| v)
        .sum()
}

#[cfg(test)]
mod tests {
    use super::*;
    use app_event_repeater_api::metric;

    #[test]
    fn chunked_bodies_and_label_sums() {
        assert_eq!(dechunk("3\r\nabc\r\n2\r\nde\r\n0\r\n\r\n"), "abcde");
        let m: BTreeMap<String, f64> = [
            ("app_event_repeater_events_failed_total{reason=\"a\"}", 2.0),
            ("app_event_repeater_events_failed_total{reason=\"b\"}", 3.0),
            ("app_event_repeater_events_failed_totalx", 100.0),
            ("app_event_repeater_events_acked_total", 7.0),
        ]
        .into_iter()
        .map(|(k, v)| (k.to_string(), v))
        .collect();
        assert_eq!(sum(&m, metric::EVENTS_FAILED), 5.0);
        assert_eq!(sum(&m, metric::EVENTS_ACKED), 7.0);
        assert_eq!(sum(&m, metric::EVENTS_DROPPED), 0.0);
    }
}
