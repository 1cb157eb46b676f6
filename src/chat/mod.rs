//! `chat`: a harness transcript read as numbered messages, one file each,
//! and the session's token usage.
//!
//! ```text
//! chat/00000000-user  00000001-assistant  00000002-bash  00000003-bash-result ...
//! ```
//!
//! A message is named `<id>-<kind>`: the id is its position in the
//! transcript from 0, written as exactly 8 digits so a plain sort is the
//! order things were said in; the kind says who spoke (`Kind`), and a tool
//! call is named after its tool and its result after the call. The file is
//! the message as text: JSON strings unescaped, each part on its own line,
//! a newline added where the text lacks one, an image as `[image]`, a tool
//! call its name and then its input (which stays JSON). docs/CHAT.md says,
//! record type by record type, what is conversation and what is the
//! harness's bookkeeping.
//!
//! This module is pure: no I/O, no threads. The server reads the transcript
//! through its ring and hands the bytes over; the module says what to read.
//!
//! **The index** (`Index`) holds, per message, the spans of the file that
//! render it — positions, never bytes — so every read still reads the file,
//! and a 228 MB rollout costs its messages' positions, not its text. It is
//! fed complete lines in windows the caller reads (`Index::feed`), in
//! bounded time per window and resumable at any line boundary; a line the
//! harness is still writing waits for its newline, which is what keeps ids
//! from being handed out twice. Transcripts only grow, so an id never
//! moves; `Index::probe` and `Index::unchanged` let the caller see a file
//! that shrank or was rewritten in place and start over.
//!
//! **The scan** (`scan`) is where the time goes: most of a transcript's
//! bytes are inside JSON strings (tool output, encrypted reasoning), so the
//! indexer classifies 64 bytes at a time into bitmasks — quotes, backslash
//! runs, which bytes are inside strings (a prefix XOR), structure outside
//! them — with AVX-512 BW, AVX2 or SSE2 when the CPU has them, and a
//! scalar path that gives the same masks. Only the few structural positions
//! reach the walk (`walk`), which follows a fixed schema per format and
//! records where the values that matter start and end, and how long each
//! string renders; a record whose type says it is bookkeeping is not walked
//! past its type.
//!
//! **Rendering** (`Index::render_plan`, `Index::render`) turns a byte range
//! of a message into the file range to read and then into the bytes. A
//! string's output offset does not map onto its input offset, so each
//! index remembers where its last reads of a few messages stopped
//! (`Cursor`): reading a long message front to back is linear.
//!
//! **pi and omp** (`Format::Pi`, `pi`) write a tree of entries: the chat
//! is its current branch, the chain from the file's last entry back to a
//! root. Every branch's messages are indexed where they stand and the chat
//! is a view of them; a branch move that would renumber messages already
//! listed stops the index and makes `Index::unchanged` fail, so the caller
//! starts over (docs/CHAT.md, "Ids, as the file grows").
//!
//! **Usage** (`usage::Usage`, `Index::usage`) is counted in the same pass,
//! from the harness's own records: Claude's `message.usage` once per reply,
//! codex's last running total, pi's per reply; a few counters per model,
//! nothing per message.
//!
//! The caps are loud: past `max_messages` the index is `full`, and the
//! listing is to answer an error rather than a shorter list.

mod branch;
mod claude;
mod codex;
mod conv;
mod cursor;
pub(crate) mod dedupe;
pub(crate) mod digest;
pub mod drift;
mod dsh;
mod escape;
mod index;
mod pi;
pub(crate) mod pool;
mod render;
mod scan;
pub(crate) mod store;
mod time;
pub mod usage;
mod walk;

#[cfg(test)]
mod tests;

pub use index::{Index, Info, Probe};
pub use pool::MAX_CHATS_DEFAULT;
pub use render::ReadPlan;
pub use time::parse_time;

/// Which classifier `Index::new` uses on this CPU: `avx512` (AVX-512 BW),
/// `avx2`, `sse2` or `scalar`. Every one gives the same index.
pub fn scan_path() -> &'static str {
    scan::Simd::detect().name()
}

/// Every classifier this CPU runs, best first (`scan_path` is the first).
pub fn scan_paths() -> Vec<&'static str> {
    scan::Simd::available().into_iter().map(scan::Simd::name).collect()
}

/// Digits in a message id: every id has the same width, so a plain sort of
/// the names is the order the messages were said in.
pub const ID_DIGITS: usize = 8;

/// The default for `--max-chat-messages`. The longest codex rollout seen
/// (49k records) is 32k messages; a million leaves room for years of a
/// session and costs nothing until used (the tables grow as they fill).
pub const MAX_MESSAGES_DEFAULT: usize = 1 << 20;

/// The most messages any index may hold: every id must fit `ID_DIGITS`.
pub const MAX_MESSAGES_LIMIT: usize = 100_000_000;

const _: () = assert!(MAX_MESSAGES_DEFAULT <= MAX_MESSAGES_LIMIT);
const _: () = assert!(MAX_MESSAGES_LIMIT <= 10usize.pow(ID_DIGITS as u32));

/// Distinct tool names one chat names its calls by. Past this, a call is
/// named `tool-call`, as one whose tool has no usable name is.
pub const TOOLS_MAX: usize = 255;

/// Longest tool name kept for a file name, in bytes.
pub const TOOL_NAME_MAX: usize = 48;

/// Calls remembered for naming their results: results follow their calls
/// closely, a few dozen apart at most when a model runs calls in parallel.
pub const CALLS_REMEMBERED: usize = 256;

/// The transcript formats this module reads.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Format {
    /// Claude Code's `~/.claude/projects/<dir>/<session>.jsonl`.
    Claude,
    /// Codex's `~/.codex/sessions/YYYY/MM/DD/rollout-*.jsonl`, wrapped
    /// (`{timestamp, type, payload}`) or legacy (bare items).
    Codex,
    /// pi's `~/.pi/agent/sessions/<dir>/<time>_<id>.jsonl` and omp's
    /// `~/.omp/agent/sessions/...`: one format, a tree of entries whose
    /// current branch is the chat.
    Pi,
    /// A Claude Code subagent's own transcript: Claude's records, all of
    /// them sidechain, which here are the conversation.
    ClaudeAgent,
    /// dsh's `sessions/session-<id>/session.jsonl.zstd`, read inflated.
    Dsh,
}

impl Format {
    /// The format of a harness's transcripts (`subagent`: a subagent's own
    /// file); none for a harness whose transcripts have no chat (hermes
    /// keeps a database).
    pub fn of(h: crate::harness::Harness, subagent: bool) -> Option<Format> {
        use crate::harness::Harness as H;
        match h {
            H::Claude if subagent => Some(Format::ClaudeAgent),
            H::Claude => Some(Format::Claude),
            H::Codex => Some(Format::Codex),
            H::Omp | H::Pi => Some(Format::Pi),
            H::Dsh => Some(Format::Dsh),
            H::Hermes => None,
        }
    }
}

/// Who spoke. A message's name ends in `Kind::label`, or in its tool's
/// name for a call and a result whose tool is known.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u8)]
pub enum Kind {
    /// A person's prompt.
    User,
    /// The model's reply text.
    Assistant,
    /// The model's reasoning, where the harness writes it in the clear.
    Thinking,
    /// A tool the model called: its name, then its input.
    ToolCall,
    /// What a tool answered.
    ToolResult,
    /// The harness speaking: instructions, injected context, command
    /// output, compaction summaries.
    System,
    /// Another agent of a team (codex): its name, then what it said.
    Agent,
}

impl Kind {
    /// Every kind, for looking one up by its label.
    pub const ALL: [Kind; 7] =
        [Kind::User, Kind::Assistant, Kind::Thinking, Kind::ToolCall, Kind::ToolResult, Kind::System, Kind::Agent];

    /// The kind as a name says it.
    pub fn label(self) -> &'static str {
        match self {
            Kind::User => "user",
            Kind::Assistant => "assistant",
            Kind::Thinking => "thinking",
            Kind::ToolCall => "tool-call",
            Kind::ToolResult => "tool-result",
            Kind::System => "system",
            Kind::Agent => "agent",
        }
    }

    /// The kind whose label is `s`, if any.
    pub fn from_label(s: &[u8]) -> Option<Kind> {
        Kind::ALL.into_iter().find(|k| k.label().as_bytes() == s)
    }
}
