//! 9agents: every AI coding agent on a Linux machine, served as a read-only
//! 9P file tree. See docs/DESIGN.md for the architecture.
//!
//! The library is the daemon's and its built-in client's; what it exports
//! is what the binary, the integration tests and the benches use: the
//! protocol codec, the client, the server's entry point, the chat indexer
//! (benched on its own), the harness names and the error table.

pub(crate) mod active;
pub mod chat;
pub mod client;
pub mod demo;
pub mod errors;
pub(crate) mod exclude;
pub(crate) mod facts;
pub mod harness;
pub(crate) mod health;
pub(crate) mod json;
pub mod localtime;
pub(crate) mod lru;
pub(crate) mod mapped;
pub(crate) mod meta;
pub(crate) mod moves;
pub mod post;
pub mod proto;
pub mod reports;
pub(crate) mod ring;
pub mod search;
pub mod server;
pub(crate) mod sessions;
pub mod stdio;
pub(crate) mod sys;
pub mod tree;
pub mod zst;
