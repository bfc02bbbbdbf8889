//! `--overflow`: what the buffer does when it is full. A leaf, so that the
//! command line, the configuration and the buffer share one type.

/// What to do when the buffer is full.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Overflow {
    /// Wait for room: stop reading the source (the default).
    Block,
    /// Drop the oldest waiting events to make room.
    DropOldest,
    /// Drop the event that does not fit.
    DropNewest,
}

impl Overflow {
    /// The name `--overflow` takes.
    pub fn name(self) -> &'static str {
        match self {
            Overflow::DropOldest => "drop-oldest",
            Overflow::DropNewest => "drop-newest",
            Overflow::Block => "block",
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::ValueEnum;

    #[test]
    fn the_name_is_the_flag_value() {
        for o in Overflow::value_variants() {
            let value = o.to_possible_value().expect("no variant is skipped");
            assert_eq!(o.name(), value.get_name());
        }
    }
}
