//! The flags of a registered kind (a sink's, a source's), which `run`
//! declares for every kind and only the chosen one reads: none
//! ([`NoFlags`]), and which of another kind's were given
//! ([`first_given`]), so that such a flag is refused naming its kind
//! without a hand-kept list. A leaf: `sink` and `source` both use it.

/// A kind without flags of its own.
#[derive(Debug, Clone, Copy, clap::Args)]
#[group(skip)]
pub struct NoFlags {}

/// The first of the flags `flags` adds that `matches` got from the command
/// line (`--creds`) or from its environment variable
/// (`APP_NATS_TOKEN (--creds)`); a default is not a flag given.
pub fn first_given(
    matches: &clap::ArgMatches,
    flags: fn(clap::Command) -> clap::Command,
) -> Option<String> {
    let cmd = flags(clap::Command::new("kind"));
    let given = cmd.get_arguments().find_map(|arg| {
        let long = arg.get_long()?;
        match matches.value_source(arg.get_id().as_str())? {
            clap::parser::ValueSource::CommandLine => Some(format!("--{long}")),
            clap::parser::ValueSource::EnvVariable => {
                let env = arg
                    .get_env()
                    .map(|e| e.to_string_lossy().into_owned())
                    .unwrap_or_default();
                Some(format!("{env} (--{long})"))
            }
            _ => None,
        }
    });
    given
}
