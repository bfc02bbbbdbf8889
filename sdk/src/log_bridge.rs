//! The SDK's logger as the backend of the `log` facade (and, through
//! `tracing`'s `log` feature, of `tracing` when no subscriber is set), so
//! that what the libraries a plugin uses say (rustls, rumqttc, async-nats …)
//! is written like every other line, with its target, instead of being lost.
//!
//! Libraries are not the plugin: a broker client's "error" is often a retry
//! the plugin already reports in its own words. So every record that comes
//! through the facade is shown only when the user asked for detail: `log`'s
//! error, warn and info records at `--log 4` (debug), its debug and trace
//! records at `--log 5` (trace), and never at the default level.
//!
//! ```
//! use app_plugin::log::{self, Format};
//!
//! log::init("demo", log::TRACE, Format::Text);
//! app_plugin::log_bridge::install();
//! ::log::debug!(target: "rustls::client", "sending ClientHello");
//! // written as `app-demo: trace: rustls::client: sending ClientHello`
//! assert_eq!(app_plugin::log_bridge::level_of(::log::Level::Warn), log::DEBUG);
//! ```

use crate::log::{self, Level, DEBUG, TRACE};

/// The SDK level at which a library's record of `level` is shown.
///
/// ```
/// use app_plugin::log_bridge::level_of;
/// use app_plugin::log::{DEBUG, TRACE};
/// assert_eq!(level_of(::log::Level::Error), DEBUG);
/// assert_eq!(level_of(::log::Level::Debug), TRACE);
/// ```
pub fn level_of(level: ::log::Level) -> Level {
    match level {
        ::log::Level::Error | ::log::Level::Warn | ::log::Level::Info => DEBUG,
        ::log::Level::Debug | ::log::Level::Trace => TRACE,
    }
}

/// The facade's filter for an SDK level: what [`level_of`] would show.
/// Libraries check it before formatting anything, so at the default level
/// a chatty library costs one comparison per call.
fn max_level(level: Level) -> ::log::LevelFilter {
    match level {
        Level::Trace => ::log::LevelFilter::Trace,
        Level::Debug => ::log::LevelFilter::Info,
        Level::Off | Level::Error | Level::Warn | Level::Info => ::log::LevelFilter::Off,
    }
}

struct Bridge;

impl ::log::Log for Bridge {
    fn enabled(&self, metadata: &::log::Metadata<'_>) -> bool {
        log::enabled(level_of(metadata.level()))
    }

    fn log(&self, record: &::log::Record<'_>) {
        let level = level_of(record.level());
        if log::enabled(level) {
            log::write_target(level, record.target(), *record.args());
        }
    }

    fn flush(&self) {}
}

static BRIDGE: Bridge = Bridge;

/// Installs the SDK's logger as the `log` facade's backend, filtered by the
/// level in force (later [`log::set_level`] calls move the filter too).
/// Call it once after [`log::init`] or [`log::init_from_env`]; a second
/// call, or one after another logger was installed, changes nothing.
///
/// ```
/// app_plugin::log::set_level(app_plugin::log::WARN);
/// app_plugin::log_bridge::install();
/// assert_eq!(::log::max_level(), ::log::LevelFilter::Off);
/// app_plugin::log::set_level(app_plugin::log::DEBUG);
/// assert_eq!(::log::max_level(), ::log::LevelFilter::Info);
/// ```
pub fn install() {
    if ::log::set_logger(&BRIDGE).is_ok() {
        log::on_level_change(|level| ::log::set_max_level(max_level(level)));
        ::log::set_max_level(max_level(log::level()));
    }
}
