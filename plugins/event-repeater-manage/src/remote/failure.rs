//! What went wrong, as the user reads it: a transport [`Failure`] becomes
//! an [`Error`] that says whether the repeater is not running, stale,
//! unreachable or not speaking HTTP/TLS; a refusal carries the server's
//! own message.

use std::path::PathBuf;

use super::http::Failure;
use crate::address::Endpoint;
use crate::error::Error;
use crate::target::{Origin, Target};

/// The error for `failure` in talking to `t`.
pub fn error(t: &Target, failure: Failure) -> Error {
    let name = t.name.clone();
    let target = t.described();
    let tls = matches!(t.endpoint, Endpoint::Https(_));
    match (failure, &t.origin) {
        (Failure::Refused, Origin::Socket) => Error::StaleSocket {
            name,
            socket: socket_path(t),
        },
        // Gone between looking and connecting: it just stopped.
        (Failure::NoSocket, Origin::Socket) => Error::NotRunning {
            name,
            socket: socket_path(t),
        },
        (Failure::Refused, Origin::ListenFile(file)) => Error::StaleListen {
            name,
            file: file.clone(),
            url: target,
        },
        (Failure::Refused, _) => Error::Unreachable {
            target,
            reason: "connection refused (nothing listens there)".into(),
        },
        (Failure::NoSocket, _) => Error::Unreachable {
            target,
            reason: "no such socket".into(),
        },
        (Failure::Denied(detail), _) => Error::Unreachable {
            target,
            reason: format!("{detail} (the socket belongs to another user?)"),
        },
        (Failure::ConnectTimeout, _) => Error::Unreachable {
            target,
            reason: format!("no connection within {}s", t.timeout.as_secs_f64()),
        },
        (Failure::Timeout, _) => Error::Timeout {
            target,
            seconds: t.timeout.as_secs_f64(),
        },
        (Failure::Tls(detail), _) => Error::Tls {
            target,
            reason: format!(
                "{detail}; check that --ca-file (or the host's ca_file) holds the CA that signed the repeater's certificate and that the certificate names this host (if the repeater serves plain HTTP, use http://)"
            ),
        },
        (Failure::Closed, _) if tls => Error::Tls {
            target,
            reason: "the connection closed during the TLS handshake; does it serve plain http://?".into(),
        },
        (Failure::Insecure, _) => Error::Insecure { target },
        (Failure::NotHttp(detail), _) => Error::Failed(format!(
            "the answer from {target} is not HTTP ({detail}); if it serves HTTPS (--tls-cert), use https://"
        )),
        (Failure::Closed, _) => Error::Failed(format!(
            "the event repeater at {target} closed the connection without an answer; if it serves HTTPS (--tls-cert), use https://"
        )),
        (Failure::Other(detail), _) => Error::Failed(format!(
            "the request to the event repeater at {target} failed: {detail}"
        )),
    }
}

fn socket_path(t: &Target) -> PathBuf {
    match &t.endpoint {
        Endpoint::Unix(p) => p.clone(),
        Endpoint::Http(_) | Endpoint::Https(_) => PathBuf::new(),
    }
}

/// The server's error message: the `error` field of its JSON, or its text
/// with its white space runs made single spaces.
fn server_text(body: &str) -> String {
    if let Ok(answer) = serde_json::from_str::<app_event_repeater_api::ErrorBody>(body) {
        return answer.error;
    }
    let text = body.split_whitespace().collect::<Vec<_>>().join(" ");
    if text.is_empty() {
        "(no message)".to_string()
    } else {
        text
    }
}

/// `server_text`, shortened and escaped: the form to print.
pub fn server_message(body: &str) -> String {
    app_plugin::text::shorten_for_terminal(&server_text(body))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn server_message_prefers_the_error_field() {
        assert_eq!(
            server_message(r#"{"error":"route timer/sec/1 exists","sourcetopic":"timer/sec/1"}"#),
            "route timer/sec/1 exists"
        );
        assert_eq!(server_message("Not Found\n"), "Not Found");
        assert_eq!(server_message(""), "(no message)");
    }
}
