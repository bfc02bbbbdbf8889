//! The JetStream stream the sink publishes into: looked up, created or
//! extended so that it captures every subject (see the module docs of
//! [`crate::sink::nats`]).

use app_plugin::log::info;
use std::time::Duration;

use async_nats::jetstream::{self, stream};

use crate::sink::nats::subject::{first_token, matches};
use crate::sink::nats::NatsSink;

/// The description of a stream the repeater created (and may extend).
pub const OWN_STREAM: &str = "created by app event-repeater";

/// What the repeater knows of its stream.
pub struct StreamBook {
    /// The stream's subjects (as last read or set).
    pub subjects: Vec<String>,
    /// The last subject found captured by them (events of one subject come
    /// in runs; matching every pattern again cost more per event than the
    /// rest of the sink's own work).
    pub last_captured: String,
    /// Created by a repeater: first tokens may be added.
    pub own: bool,
    /// Whether the stream has been looked up at all.
    pub known: bool,
}

impl StreamBook {
    fn captures(&mut self, subject: &str) -> bool {
        if !subject.is_empty() && self.last_captured == subject {
            return true;
        }
        let yes = self.subjects.iter().any(|p| matches(p, subject));
        if yes {
            self.last_captured.clear();
            self.last_captured.push_str(subject);
        }
        yes
    }

    fn set_subjects(&mut self, subjects: Vec<String>) {
        self.subjects = subjects;
        self.last_captured.clear();
    }
}

pub enum Ready {
    Go,
    /// Not captured by a stream the repeater may not change.
    Refuse(String),
    /// The stream could not be read or changed now.
    Later(String),
}

impl NatsSink {
    /// Makes sure the stream captures `subject` (creating or extending the
    /// repeater's own stream).
    pub(super) async fn ready(
        &self,
        js: &jetstream::Context,
        book: &mut StreamBook,
        subject: &str,
    ) -> Ready {
        if book.known && book.captures(subject) {
            return Ready::Go;
        }
        let name = &self.cfg.stream;
        let token = first_token(subject);
        let wanted = [token.to_string(), format!("{token}.>")];
        match js.get_stream(name).await {
            Ok(s) => self.extend(js, book, s, subject, wanted).await,
            Err(e) if is_not_found(&e) => self.create(js, book, wanted).await,
            Err(e) => Ready::Later(format!("cannot look up the stream {name}: {e}")),
        }
    }

    /// The stream exists: reads its subjects, and adds `wanted` if it is
    /// the repeater's own and does not capture `subject`.
    async fn extend(
        &self,
        js: &jetstream::Context,
        book: &mut StreamBook,
        mut s: stream::Stream,
        subject: &str,
        wanted: [String; 2],
    ) -> Ready {
        let name = &self.cfg.stream;
        let info = s.cached_info().clone();
        book.set_subjects(info.config.subjects.clone());
        book.own = info.config.description.as_deref() == Some(OWN_STREAM);
        book.known = true;
        if book.captures(subject) {
            return Ready::Go;
        }
        if !book.own {
            return Ready::Refuse(format!(
                "the stream {name} (not created by the repeater, used as it is) does not capture the subject {subject} (its subjects: {})",
                book.subjects.join(" ")
            ));
        }
        let mut config = info.config;
        for w in wanted {
            if !config.subjects.contains(&w) {
                config.subjects.push(w);
            }
        }
        match js.update_stream(&config).await {
            Ok(info) => {
                info!(
                    "stream {name} now captures {}",
                    info.config.subjects.join(" ")
                );
                book.set_subjects(info.config.subjects);
                let _ = s.info().await;
                Ready::Go
            }
            Err(e) => {
                book.known = false;
                let token = first_token(subject);
                Ready::Later(format!("cannot add {token} to the stream {name}: {e}"))
            }
        }
    }

    /// No stream yet: creates the repeater's own, capturing `wanted`.
    async fn create(
        &self,
        js: &jetstream::Context,
        book: &mut StreamBook,
        wanted: [String; 2],
    ) -> Ready {
        let name = &self.cfg.stream;
        let config = stream::Config {
            name: name.clone(),
            description: Some(OWN_STREAM.to_string()),
            subjects: wanted.to_vec(),
            retention: stream::RetentionPolicy::Limits,
            storage: stream::StorageType::File,
            max_age: self.cfg.stream_max_age,
            duplicate_window: Duration::from_secs(120),
            num_replicas: self.cfg.stream_replicas,
            ..Default::default()
        };
        match js.create_stream(config).await {
            Ok(s) => {
                let info = s.cached_info();
                info!(
                    "created the stream {name} capturing {}",
                    info.config.subjects.join(" ")
                );
                book.set_subjects(info.config.subjects.clone());
                book.own = true;
                book.known = true;
                Ready::Go
            }
            // Another repeater may have created it just now.
            Err(e) => Ready::Later(format!("cannot create the stream {name}: {e}")),
        }
    }
}

fn is_not_found(e: &async_nats::jetstream::context::GetStreamError) -> bool {
    use async_nats::jetstream::context::GetStreamErrorKind;
    use async_nats::jetstream::ErrorCode;
    matches!(e.kind(), GetStreamErrorKind::JetStream(j) if j.error_code() == ErrorCode::STREAM_NOT_FOUND)
}
