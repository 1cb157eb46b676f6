//! `harness`: the one name for each agent harness the daemon knows.
//!
//! The mirror (`/claude`, …, and `--root NAME=PATH`), `/active/<harness>`,
//! the derivations, the facts' roots and the move all name harnesses by this
//! type, so there is one list and one spelling.

/// An agent harness: whose home is mirrored, whose processes are agents.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Harness {
    Claude,
    Codex,
    Omp,
    Hermes,
    Dsh,
    /// pi (`~/.pi`), the harness omp forked: the same store, `agent/`.
    Pi,
}

impl Harness {
    /// Every harness, in `--root` order; `index` is the position here.
    pub const ALL: [Harness; 6] =
        [Harness::Claude, Harness::Codex, Harness::Omp, Harness::Hermes, Harness::Dsh, Harness::Pi];

    /// How many harnesses there are: the length of tables indexed by one.
    pub const COUNT: usize = Harness::ALL.len();

    /// The harness's name: its directory under `/` and `/active`, its
    /// `--root` name, and the `argv[0]` basename that identifies it.
    pub fn name(self) -> &'static str {
        match self {
            Harness::Claude => "claude",
            Harness::Codex => "codex",
            Harness::Omp => "omp",
            Harness::Hermes => "hermes",
            Harness::Dsh => "dsh",
            Harness::Pi => "pi",
        }
    }

    /// The harness named `name`, if any.
    pub fn from_name(name: &[u8]) -> Option<Harness> {
        Harness::ALL.into_iter().find(|h| h.name().as_bytes() == name)
    }

    /// The position in `ALL`, for tables indexed by harness.
    pub fn index(self) -> usize {
        self as usize
    }

    /// The home directory a harness keeps under `$HOME` (`.claude`, …).
    pub fn home_dir(self) -> String {
        format!(".{}", self.name())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn index_is_the_position_in_all_and_names_round_trip() {
        for (i, h) in Harness::ALL.into_iter().enumerate() {
            assert_eq!(h.index(), i);
            assert_eq!(Harness::from_name(h.name().as_bytes()), Some(h));
        }
        assert_eq!(Harness::from_name(b"vim"), None);
    }
}
