//! Reading the words before the one being typed: which (sub)command they
//! reached, which flags and values they gave, and what is still pending.

use ::clap::{Arg, Command};

/// Where the words before the one being typed leave the command line.
pub(super) struct Line<'a> {
    /// The (sub)command the words reached.
    pub(super) at: &'a Command,
    /// A flag still waiting for its value.
    pub(super) pending: Option<&'a Arg>,
    pub(super) used: Vec<&'a str>,
    pub(super) given: Vec<(String, String)>,
    /// A subcommand may follow only global flags (and other subcommands).
    pub(super) subcommand_allowed: bool,
    /// Positional words given to the current (sub)command.
    pub(super) positionals: usize,
}

impl<'a> Line<'a> {
    pub(super) fn new(root: &'a Command) -> Self {
        Line {
            at: root,
            pending: None,
            used: Vec::new(),
            given: Vec::new(),
            subcommand_allowed: true,
            positionals: 0,
        }
    }

    pub(super) fn read(&mut self, word: &str) {
        if let Some(arg) = self.pending.take() {
            self.given
                .push((arg.get_id().to_string(), word.to_string()));
        } else if let Some(flag) = word.strip_prefix("--").filter(|f| !f.is_empty()) {
            self.read_long(flag);
        } else if let Some(shorts) = word.strip_prefix('-').filter(|s| !s.is_empty()) {
            self.read_shorts(shorts);
        } else {
            self.read_word(word);
        }
    }

    /// `--name` or `--name=value`.
    fn read_long(&mut self, flag: &str) {
        let (name, value) = match flag.split_once('=') {
            Some((n, v)) => (n, Some(v)),
            None => (flag, None),
        };
        let Some(arg) = find_long(self.at, name) else {
            return;
        };
        self.note_used(arg);
        match value {
            Some(v) => self.given.push((arg.get_id().to_string(), v.to_string())),
            None if takes_value(arg) => self.pending = Some(arg),
            None => {}
        }
    }

    /// `-abc`, `-ovalue`, `-o=value`: flags up to the first that takes a
    /// value, which takes the rest of the word (or the next word).
    fn read_shorts(&mut self, shorts: &str) {
        let at = self.at;
        for (i, c) in shorts.char_indices() {
            let Some(arg) = at.get_arguments().find(|a| a.get_short() == Some(c)) else {
                return;
            };
            self.note_used(arg);
            if takes_value(arg) {
                let rest = &shorts[i + c.len_utf8()..];
                let rest = rest.strip_prefix('=').unwrap_or(rest);
                if rest.is_empty() {
                    self.pending = Some(arg);
                } else {
                    self.given
                        .push((arg.get_id().to_string(), rest.to_string()));
                }
                return;
            }
        }
    }

    /// A subcommand where one may come, else a positional value.
    fn read_word(&mut self, word: &str) {
        let at = self.at;
        match self
            .subcommand_allowed
            .then(|| find_subcommand(at, word))
            .flatten()
        {
            Some(sub) => {
                self.at = sub;
                self.positionals = 0;
            }
            None => {
                self.subcommand_allowed = false;
                let id = positional_id(at, self.positionals);
                self.given.push((id, word.to_string()));
                self.positionals += 1;
            }
        }
    }

    fn note_used(&mut self, arg: &'a Arg) {
        self.used.push(arg.get_id().as_str());
        if !arg.is_global_set() {
            self.subcommand_allowed = false;
        }
    }
}

/// The positional argument that takes the `n`th positional word (the last
/// one when it takes several).
pub(super) fn nth_positional(cmd: &Command, n: usize) -> Option<&Arg> {
    let all: Vec<&Arg> = cmd.get_positionals().collect();
    all.get(n).copied().or_else(|| {
        all.last()
            .copied()
            .filter(|a| a.get_num_args().is_some_and(|r| r.max_values() > 1))
    })
}

fn positional_id(cmd: &Command, n: usize) -> String {
    nth_positional(cmd, n).map_or_else(String::new, |a| a.get_id().to_string())
}

pub(super) fn takes_value(arg: &Arg) -> bool {
    arg.get_num_args().is_some_and(|n| n.takes_values())
}

pub(super) fn find_long<'a>(cmd: &'a Command, name: &str) -> Option<&'a Arg> {
    cmd.get_arguments().find(|a| {
        a.get_long() == Some(name)
            || a.get_all_aliases()
                .is_some_and(|aliases| aliases.contains(&name))
    })
}

fn find_subcommand<'a>(cmd: &'a Command, name: &str) -> Option<&'a Command> {
    cmd.get_subcommands()
        .find(|s| s.get_name() == name || s.get_all_aliases().any(|a| a == name))
}
