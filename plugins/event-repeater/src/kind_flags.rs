//! The flags of a registered kind (a sink's, a source's), which `run`
//! declares for every kind and only the chosen one reads: none
//! ([`NoFlags`]), and which of another kind's were given
//! ([`first_given`]), so that such a flag is refused naming its kind
//! without a hand-kept list; and [`KindArgs`], one side's flags as `run`
//! holds them. A leaf: `sink` and `source` both use it.

use std::marker::PhantomData;

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

/// A list of registered kinds (the sinks', the sources'), as
/// [`KindArgs`] needs it: each kind's flags.
pub trait Registry {
    /// Adds every kind's own flags, in the list's order.
    fn add_flags(cmd: clap::Command) -> clap::Command;
}

/// One side's flags: those every kind of it reads (`C`), and every kind's
/// own as clap matched them, kept until the chosen kind reads its own.
#[derive(Debug, Clone)]
pub struct KindArgs<C, R> {
    pub common: C,
    /// `run`'s matches, for the chosen kind's flags.
    pub(crate) matches: clap::ArgMatches,
    registry: PhantomData<R>,
}

impl<C, R> std::ops::Deref for KindArgs<C, R> {
    type Target = C;

    fn deref(&self) -> &C {
        &self.common
    }
}

impl<C: clap::FromArgMatches, R> clap::FromArgMatches for KindArgs<C, R> {
    fn from_arg_matches(matches: &clap::ArgMatches) -> Result<Self, clap::Error> {
        Ok(KindArgs {
            common: C::from_arg_matches(matches)?,
            matches: matches.clone(),
            registry: PhantomData,
        })
    }

    fn update_from_arg_matches(&mut self, matches: &clap::ArgMatches) -> Result<(), clap::Error> {
        self.common.update_from_arg_matches(matches)?;
        self.matches = matches.clone();
        Ok(())
    }
}

impl<C: clap::Args, R: Registry> clap::Args for KindArgs<C, R> {
    fn augment_args(cmd: clap::Command) -> clap::Command {
        // Each part sets its own heading; flags added after these are
        // under the default one again.
        R::add_flags(C::augment_args(cmd)).next_help_heading(None::<&'static str>)
    }

    fn augment_args_for_update(cmd: clap::Command) -> clap::Command {
        Self::augment_args(cmd)
    }
}
