//! What a plugin says about itself: its answer to `app-<name> __app_metadata`.
//!
//! `app` asks trusted plugins (those in trusted places, or named trusted in
//! the config) for one JSON object on stdout; this module defines that
//! document once, for both sides. A plugin that answers:
//!
//! ```
//! use app_plugin::metadata::Metadata;
//!
//! let meta = Metadata::new("demo", "1.0.0", "Says hello").stdin_context().completion();
//! let text = meta.to_json();
//! assert_eq!(Metadata::parse(&text), Some(meta));
//! ```

use serde::{Deserialize, Serialize};

/// The argument that asks a plugin for its metadata.
///
/// A plugin answers it before anything else, with its [`Metadata`] on stdout:
///
/// ```
/// use app_plugin::metadata::{Metadata, METADATA_ARG};
/// let args = ["__app_metadata".to_string()]; // as `app` runs the plugin
/// if args.first().map(String::as_str) == Some(METADATA_ARG) {
///     let answer = Metadata::new("demo", "1.0.0", "Says hello").to_json();
///     assert_eq!(Metadata::parse(&answer).unwrap().name.as_deref(), Some("demo"));
///     println!("{answer}");
/// }
/// ```
pub const METADATA_ARG: &str = "__app_metadata";

/// The prefix of every plugin's executable: `app <name>` runs `app-<name>`.
///
/// ```
/// use app_plugin::metadata::PLUGIN_PREFIX;
/// assert_eq!(format!("{PLUGIN_PREFIX}event-time"), "app-event-time");
/// ```
pub const PLUGIN_PREFIX: &str = "app-";

/// The `apiVersion` of this version of the document.
///
/// Every answer [`Metadata::new`] builds carries it, and [`Metadata::parse`]
/// takes only documents of this family:
///
/// ```
/// use app_plugin::metadata::{Metadata, API_VERSION};
/// assert_eq!(Metadata::new("demo", "1.0.0", "A demo").api_version, API_VERSION);
/// assert!(Metadata::parse(r#"{"apiVersion":"other/v1"}"#).is_none());
/// ```
pub const API_VERSION: &str = "app.plugin/v1";

/// A plugin's answer to `__app_metadata`.
///
/// ```
/// use app_plugin::metadata::Metadata;
/// let meta = Metadata::parse(r#"{"apiVersion":"app.plugin/v1","completion":true}"#).unwrap();
/// assert!(meta.completion && !meta.wants_stdin_context());
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct Metadata {
    /// `app.plugin/v1` ([`API_VERSION`]); anything not starting with
    /// `app.plugin/` is not an answer.
    #[serde(rename = "apiVersion")]
    pub api_version: String,
    /// The plugin's name, without `app-`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// The plugin's version, shown by `app plugin list`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub version: Option<String>,
    /// One line for `app help` and completion.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// `"stdin"` when the plugin wants the JSON context on stdin.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub context: Option<String>,
    /// Whether the plugin answers `__complete`.
    #[serde(default)]
    pub completion: bool,
    /// Keys of the plugin's config (`plugins.<name>.config`) whose values
    /// are secrets, beyond those [named like one](crate::redact::is_secret_name):
    /// masked wherever the config or a `--KEY` flag is shown
    /// ([`crate::redact::config`], [`crate::redact::args`]).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub secrets: Vec<String>,
}

impl Metadata {
    /// A v1 document with a name, a version and a description; the context
    /// comes through the environment and there is no completion until
    /// [`stdin_context`](Metadata::stdin_context) and
    /// [`completion`](Metadata::completion) say otherwise.
    ///
    /// ```
    /// let meta = app_plugin::metadata::Metadata::new("demo", "0.1.0", "A demo");
    /// assert_eq!(meta.name.as_deref(), Some("demo"));
    /// assert!(!meta.completion);
    /// ```
    pub fn new(name: &str, version: &str, description: &str) -> Metadata {
        Metadata {
            api_version: API_VERSION.to_string(),
            name: Some(name.to_string()),
            version: Some(version.to_string()),
            description: Some(description.to_string()),
            context: None,
            completion: false,
            secrets: Vec::new(),
        }
    }

    /// Declares config keys whose values are secrets (`"secrets": [...]`).
    ///
    /// ```
    /// let meta = app_plugin::metadata::Metadata::new("d", "1", "x").secrets(["db_pass"]);
    /// assert!(meta.to_json().contains(r#""secrets":["db_pass"]"#));
    /// ```
    pub fn secrets<S: Into<String>>(mut self, keys: impl IntoIterator<Item = S>) -> Metadata {
        self.secrets = keys.into_iter().map(Into::into).collect();
        self
    }

    /// Asks for the JSON context document on the first line of stdin
    /// (`"context": "stdin"`).
    ///
    /// ```
    /// let meta = app_plugin::metadata::Metadata::new("d", "1", "x").stdin_context();
    /// assert!(meta.wants_stdin_context());
    /// ```
    pub fn stdin_context(mut self) -> Metadata {
        self.context = Some("stdin".to_string());
        self
    }

    /// Says the plugin answers `__complete` (`"completion": true`).
    ///
    /// ```
    /// let meta = app_plugin::metadata::Metadata::new("d", "1", "x").completion();
    /// assert!(meta.completion);
    /// ```
    pub fn completion(mut self) -> Metadata {
        self.completion = true;
        self
    }

    /// Whether the plugin asked for the JSON context on stdin.
    ///
    /// ```
    /// let meta = app_plugin::metadata::Metadata::new("d", "1", "x");
    /// assert!(!meta.wants_stdin_context());
    /// ```
    pub fn wants_stdin_context(&self) -> bool {
        self.context.as_deref() == Some("stdin")
    }

    /// Parses an answer; anything but one JSON object with an `app.plugin/…`
    /// apiVersion is no answer.
    ///
    /// ```
    /// use app_plugin::metadata::Metadata;
    /// assert!(Metadata::parse(r#"{"name":"x"}"#).is_none());
    /// assert!(Metadata::parse("hello").is_none());
    /// assert!(Metadata::parse(r#"{"apiVersion":"app.plugin/v1"}"#).is_some());
    /// ```
    pub fn parse(text: &str) -> Option<Metadata> {
        let meta: Metadata = serde_json::from_str(text.trim()).ok()?;
        meta.api_version.starts_with("app.plugin/").then_some(meta)
    }

    /// The document as one line of JSON, as a plugin prints it.
    ///
    /// ```
    /// let line = app_plugin::metadata::Metadata::new("d", "1", "x").to_json();
    /// assert!(line.starts_with(r#"{"apiVersion":"app.plugin/v1""#) && !line.contains('\n'));
    /// ```
    pub fn to_json(&self) -> String {
        // Strings and a bool always serialise.
        serde_json::to_string(self).expect("metadata always serialises")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parse_requires_the_api_version() {
        assert!(Metadata::parse(r#"{"name":"x"}"#).is_none());
        assert!(Metadata::parse("hello").is_none());
        let m = Metadata::parse(
            r#"{"apiVersion":"app.plugin/v1","description":"d","context":"stdin","completion":true}"#,
        )
        .unwrap();
        assert!(m.wants_stdin_context());
        assert!(m.completion);
    }

    #[test]
    fn the_document_round_trips_with_the_protocol_names() {
        let m = Metadata::new("demo", "1.2.3", "Demo")
            .stdin_context()
            .completion();
        let v: serde_json::Value = serde_json::from_str(&m.to_json()).unwrap();
        assert_eq!(
            v,
            serde_json::json!({
                "apiVersion": "app.plugin/v1", "name": "demo", "version": "1.2.3",
                "description": "Demo", "context": "stdin", "completion": true
            })
        );
    }
}
