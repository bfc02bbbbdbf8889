//! The plugin's side of the contract in one call, in the manner of docker's
//! cli-plugins `plugin.Run`: [`Plugin::run`] answers `__app_metadata` and
//! `__complete`, sets up the logger from `APP_LOG` and `APP_LOG_FORMAT`,
//! reads the context ([`Context::load`]) and then runs the plugin's body
//! with it; what the body returns becomes the exit code ([`Outcome`]).
//!
//! ```no_run
//! use app_plugin::{metadata::Metadata, Plugin};
//!
//! fn main() -> std::process::ExitCode {
//!     Plugin::new(Metadata::new("hello", env!("CARGO_PKG_VERSION"), "Says hello"))
//!         .run(|call| println!("hello from {}", call.context.plugin_name))
//! }
//! ```
//!
//! In order, before the body runs:
//!
//! 1. `__app_metadata` is answered with the metadata, and `__complete WORDS`
//!    with the completion when the metadata says `"completion": true`
//!    (otherwise `__complete` is an argument like any other); exit 0.
//! 2. The logger follows `APP_LOG` and `APP_LOG_FORMAT`, so that even an
//!    unreadable context is reported as `--log-format` asks.
//! 3. The context is read; when it cannot be (a bad first line of stdin
//!    under `APP_CONTEXT=stdin`), the error is written as
//!    `app-NAME: <why>` and the plugin exits 2
//!    ([`context_error_code`](Plugin::context_error_code) changes it).
//! 4. The logger follows the context (the same values, or the JSON
//!    document's).

use std::ffi::OsString;
use std::fmt::Display;
use std::process::ExitCode;

use crate::complete::{Completion, COMPLETE_ARG};
use crate::context::Context;
use crate::log;
use crate::metadata::Metadata;

/// What `app` asked of the plugin, handed to its body by [`Plugin::run`].
///
/// ```
/// use app_plugin::{metadata::Metadata, Plugin};
/// let code = Plugin::new(Metadata::new("demo", "1.0.0", "Demo"))
///     .run_with(vec!["greet".into(), "world".into()], |call| {
///         assert_eq!(call.words(), ["greet", "world"]);
///         assert_eq!(call.argv("app-demo")[0], "app-demo");
///         assert!(!call.context.plugin_name.is_empty());
///     });
/// assert_eq!(code, std::process::ExitCode::SUCCESS);
/// ```
#[derive(Debug)]
#[non_exhaustive]
pub struct Call {
    /// The plugin's arguments, without the program name.
    pub args: Vec<OsString>,
    /// What `app` said ([`Context::load`]).
    pub context: Context,
}

impl Call {
    /// The arguments as text (anything not UTF-8 replaced by `�`).
    ///
    /// ```
    /// # use app_plugin::{metadata::Metadata, Plugin};
    /// # Plugin::new(Metadata::new("demo", "1", "Demo")).run_with(vec!["a".into()], |call| {
    /// assert_eq!(call.words(), ["a"]);
    /// # });
    /// ```
    pub fn words(&self) -> Vec<String> {
        lossy(&self.args)
    }

    /// `program` then the arguments: what a parser such as clap's
    /// `try_parse_from` expects.
    ///
    /// ```
    /// # use app_plugin::{metadata::Metadata, Plugin};
    /// # Plugin::new(Metadata::new("demo", "1", "Demo")).run_with(vec!["-v".into()], |call| {
    /// assert_eq!(call.argv("app-demo"), ["app-demo", "-v"]);
    /// # });
    /// ```
    pub fn argv(&self, program: &str) -> Vec<OsString> {
        std::iter::once(OsString::from(program))
            .chain(self.args.iter().cloned())
            .collect()
    }
}

/// What a plugin's body returns, as an exit code: an [`ExitCode`], a `u8`,
/// `()` (success), or a `Result` whose error is written with
/// [`log::fatal`] (exit 1).
///
/// ```
/// use std::process::ExitCode;
/// use app_plugin::Outcome;
/// assert_eq!(().exit_code(), ExitCode::SUCCESS);
/// assert_eq!(3u8.exit_code(), ExitCode::from(3));
/// assert_eq!(Err::<(), _>("disk full").exit_code(), ExitCode::FAILURE);
/// ```
pub trait Outcome {
    /// The exit code (and, for an error, its message on stderr).
    fn exit_code(self) -> ExitCode;
}

impl Outcome for ExitCode {
    fn exit_code(self) -> ExitCode {
        self
    }
}

impl Outcome for u8 {
    fn exit_code(self) -> ExitCode {
        ExitCode::from(self)
    }
}

impl Outcome for () {
    fn exit_code(self) -> ExitCode {
        ExitCode::SUCCESS
    }
}

impl<T: Outcome, E: Display> Outcome for Result<T, E> {
    fn exit_code(self) -> ExitCode {
        match self {
            Ok(done) => done.exit_code(),
            Err(e) => {
                log::fatal(format_args!("{e}"));
                ExitCode::FAILURE
            }
        }
    }
}

type Complete = Box<dyn FnOnce(&[String]) -> Completion>;

/// A plugin: its metadata and completion, and how it reports a context it
/// cannot read. [`run`](Plugin::run) does the rest.
///
/// ```no_run
/// use app_plugin::complete::{Candidate, Completion};
/// use app_plugin::{metadata::Metadata, Plugin};
///
/// fn main() -> std::process::ExitCode {
///     let meta = Metadata::new("hello", env!("CARGO_PKG_VERSION"), "Says hello").completion();
///     Plugin::new(meta)
///         .complete(|words| {
///             let typed = words.last().map_or("", String::as_str);
///             Completion::matching(typed, [Candidate::new("world")])
///         })
///         .run(|call| -> Result<(), String> {
///             let who = call.words().first().cloned().unwrap_or_else(|| "world".into());
///             app_plugin::info!("greeting {who}");
///             println!("hello {who}");
///             Ok(())
///         })
/// }
/// ```
pub struct Plugin {
    metadata: Metadata,
    complete: Complete,
    context_error_code: u8,
}

impl Plugin {
    /// A plugin answering `__app_metadata` with `metadata`; it offers no
    /// completions until [`complete`](Plugin::complete) says which.
    ///
    /// ```
    /// use app_plugin::{metadata::Metadata, Plugin};
    /// let plugin = Plugin::new(Metadata::new("demo", "1.0.0", "Demo"));
    /// assert_eq!(plugin.metadata().name.as_deref(), Some("demo"));
    /// ```
    pub fn new(metadata: Metadata) -> Plugin {
        Plugin {
            metadata,
            complete: Box::new(|_| Completion::nothing()),
            context_error_code: 2,
        }
    }

    /// The answer to `__complete WORDS…` (the words after the plugin's
    /// name, the last being the one typed); asked only when the metadata
    /// says [`completion`](Metadata::completion). A panic in it is an
    /// empty answer ([`crate::protocol::completion_text`]).
    ///
    /// ```
    /// use app_plugin::complete::{Candidate, Completion};
    /// use app_plugin::{metadata::Metadata, Plugin};
    /// let _plugin = Plugin::new(Metadata::new("demo", "1", "Demo").completion())
    ///     .complete(|words| Completion::matching(words.last().map_or("", String::as_str), [Candidate::new("run")]));
    /// ```
    pub fn complete(mut self, complete: impl FnOnce(&[String]) -> Completion + 'static) -> Plugin {
        self.complete = Box::new(complete);
        self
    }

    /// The exit code when the context cannot be read (2 unless set).
    ///
    /// ```
    /// use app_plugin::{metadata::Metadata, Plugin};
    /// let _plugin = Plugin::new(Metadata::new("demo", "1", "Demo")).context_error_code(1);
    /// ```
    pub fn context_error_code(mut self, code: u8) -> Plugin {
        self.context_error_code = code;
        self
    }

    /// The metadata `__app_metadata` is answered with.
    ///
    /// ```
    /// use app_plugin::{metadata::Metadata, Plugin};
    /// assert!(!Plugin::new(Metadata::new("d", "1", "D")).metadata().completion);
    /// ```
    pub fn metadata(&self) -> &Metadata {
        &self.metadata
    }

    /// Runs the plugin with the process's arguments: see the
    /// [module](crate::plugin) for what happens before `body`.
    pub fn run<O: Outcome>(self, body: impl FnOnce(Call) -> O) -> ExitCode {
        self.run_with(std::env::args_os().skip(1).collect(), body)
    }

    /// [`run`](Plugin::run) with these arguments (without the program
    /// name): for a plugin whose `main` lives in a library, and for tests.
    ///
    /// ```
    /// use app_plugin::{metadata::Metadata, Plugin};
    /// let plugin = Plugin::new(Metadata::new("demo", "1", "Demo"));
    /// // Answered on stdout; the body does not run.
    /// let code = plugin.run_with(vec!["__app_metadata".into()], |_| -> u8 { unreachable!() });
    /// assert_eq!(code, std::process::ExitCode::SUCCESS);
    /// ```
    pub fn run_with<O: Outcome>(
        self,
        args: Vec<OsString>,
        body: impl FnOnce(Call) -> O,
    ) -> ExitCode {
        let words = lossy(&args);
        let asks_completion = words.first().map(String::as_str) == Some(COMPLETE_ARG);
        if (self.metadata.completion || !asks_completion)
            && crate::protocol::answer(&words, &self.metadata, self.complete)
        {
            return ExitCode::SUCCESS;
        }
        // Before anything can fail, so that every line follows --log-format.
        log::init_from_env();
        let context = match Context::load() {
            Ok(context) => context,
            Err(e) => {
                log::fatal(format_args!("{e}"));
                return ExitCode::from(self.context_error_code);
            }
        };
        log::init_from_context(&context);
        body(Call { args, context }).exit_code()
    }
}

/// Runs a plugin with no completion: [`Plugin::new`]`(metadata).run(body)`.
///
/// ```no_run
/// use app_plugin::metadata::Metadata;
/// fn main() -> std::process::ExitCode {
///     app_plugin::run(Metadata::new("hello", "0.1.0", "Says hello"), |call| {
///         println!("hello from {}", call.context.plugin_name);
///     })
/// }
/// ```
pub fn run<O: Outcome>(metadata: Metadata, body: impl FnOnce(Call) -> O) -> ExitCode {
    Plugin::new(metadata).run(body)
}

fn lossy(args: &[OsString]) -> Vec<String> {
    args.iter()
        .map(|a| a.to_string_lossy().into_owned())
        .collect()
}
