//! `/usage`'s reports: every session's charges (`chat::usage::Charge`),
//! summed by day, week, month, session, working directory and the current
//! 5-hour block, each reply once across the whole home, priced by the
//! price table. Pure: the server hands in what the transcripts' indexes
//! and digests said, and gets text back. docs/USAGE.md has the rules.

pub(crate) mod book;
pub mod filter;
pub mod prices;
pub(crate) mod table;

pub(crate) use book::Book;
pub use prices::Prices;

/// The reports `/usage` serves, in the order it lists them.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Report {
    Daily,
    Weekly,
    Monthly,
    Sessions,
    Projects,
    Block,
    Prices,
}

impl Report {
    pub const ALL: [Report; 7] = [
        Report::Daily,
        Report::Weekly,
        Report::Monthly,
        Report::Sessions,
        Report::Projects,
        Report::Block,
        Report::Prices,
    ];

    pub fn name(self) -> &'static str {
        match self {
            Report::Daily => "daily",
            Report::Weekly => "weekly",
            Report::Monthly => "monthly",
            Report::Sessions => "sessions",
            Report::Projects => "projects",
            Report::Block => "block",
            Report::Prices => "prices",
        }
    }

    pub fn from_name(name: &[u8]) -> Option<Report> {
        Report::ALL.into_iter().find(|r| r.name().as_bytes() == name)
    }
}

#[cfg(test)]
mod tests;
