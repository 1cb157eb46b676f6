//! Search: which messages of every session on disk hold some text. Pure:
//! the query (`query`) and the test of a message (`matcher`); the server
//! walks the sessions and their chats (`server/jobs/search.rs`).

pub(crate) mod kept;
pub mod matcher;
pub mod query;

pub use matcher::{Hits, Matcher};
pub use query::Query;
