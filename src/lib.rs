//! 9agents: every AI coding agent on a Linux machine, served as a read-only
//! 9P2000 file tree. See docs/DESIGN.md for the architecture.

pub mod active;
pub mod chat;
pub mod client;
pub mod errors;
pub mod facts;
pub mod json;
pub mod moves;
pub mod post;
pub mod proto;
pub mod ring;
pub mod server;
pub(crate) mod sys;
pub mod tree;
