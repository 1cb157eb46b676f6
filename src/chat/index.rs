//! `Index`: one transcript's messages, fed complete lines by the caller.
//!
//! ```
//! use nineagents::chat::{Format, Index};
//! let file = br#"{"type":"user","message":{"content":"hi"}}
//! {"type":"assistant","message":{"content":[{"type":"text","text":"hel"#;
//! let mut ix = Index::new(Format::Claude, 1 << 20);
//! let used = ix.feed(0, file);
//! assert_eq!((ix.len(), used), (1, 43)); // the second line is not complete
//! let mut name = Vec::new();
//! ix.name(0, &mut name);
//! assert_eq!(name, b"00000000-user");
//! assert_eq!(ix.lookup(b"00000000-user"), Some(0));
//! let plan = ix.render_plan(0, 0, 100).unwrap();
//! let input = &file[plan.file_offset as usize..][..plan.file_len as usize];
//! let mut out = Vec::new();
//! ix.render(&plan, input, &mut out);
//! assert_eq!(out, b"hi\n");
//! ```
//!
//! Memory: 16 bytes per message and 16 per span (most messages are one
//! span, a tool call two), plus the tool names (255 × 49 bytes at most),
//! the last 256 calls (4 KB, from its first tool call) and the walk's
//! buffers for the longest line.

use super::claude;
use super::codex;
use super::conv::Conv;
use super::cursor::Cursor;
use super::dsh;
use super::pi;
use super::scan::{Simd, Visit};
use super::store::{Full, Msg, Store};
use super::usage::Usage;
use super::walk::{Rec, Walker};
use super::{Format, Kind, ID_DIGITS, MAX_MESSAGES_LIMIT};

/// Bytes at each end of what an index covers that tell a rewrite: a file
/// truncated and rewritten to the same size or longer keeps its inode, and
/// only its bytes can say it is no longer the file that was indexed.
pub(super) const PROBE_LEN: usize = 64;

/// Spans an index may hold per message it may hold: most messages are
/// one span, a tool call two, a long codex prompt a handful.
const SPANS_PER_MESSAGE: usize = 4;

/// The index of one transcript.
pub struct Index {
    format: Format,
    simd: Simd,
    /// Bytes indexed: always the end of a complete line.
    covered: u64,
    full: bool,
    pub(crate) store: Store,
    conv: Conv,
    walker: Walker,
    /// Where the head `probe` starts: past omp's title slot, which is
    /// rewritten in place on a rename.
    head_at: u64,
    head: [u8; PROBE_LEN],
    head_len: usize,
    tail: [u8; PROBE_LEN],
    tail_len: usize,
    pub(crate) cursor: Cursor,
}

/// The opening of omp's title slot: a fixed-width first line the harness
/// rewrites in place when the session is renamed.
const TITLE_SLOT: &[u8] = br#"{"type":"title""#;

/// What a stat of a message says.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Info {
    pub kind: Kind,
    /// Unix seconds the record says it was written.
    pub time: u32,
    /// The bytes a read of the whole message returns.
    pub size: u64,
}

/// The byte ranges of the file `Index::unchanged` compares, as offsets
/// and lengths: read them afresh and pass them in.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Probe {
    pub head: (u64, usize),
    pub tail: (u64, usize),
}

/// The ends of what an index covered: where they are, and their bytes, so
/// a file can be checked after the index is gone (`chat::digest`) as
/// `Index::unchanged` checks it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Ends {
    pub probe: Probe,
    head: [u8; PROBE_LEN],
    tail: [u8; PROBE_LEN],
}

impl Ends {
    /// Whether `head` and `tail`, read afresh at `probe`, are the bytes
    /// that were indexed.
    pub(crate) fn hold(&self, head: &[u8], tail: &[u8]) -> bool {
        head == &self.head[..self.probe.head.1] && tail == &self.tail[..self.probe.tail.1]
    }
}

impl Index {
    /// An empty index of a transcript in `format` that holds at most
    /// `max_messages` messages (capped at `MAX_MESSAGES_LIMIT`).
    pub fn new(format: Format, max_messages: usize) -> Index {
        Index::with_simd(format, max_messages, Simd::detect())
    }

    /// As `new`, with the classifier `scan_paths` names `path`; `None`
    /// when this CPU does not run it (for benches that compare them).
    pub fn with_scan_path(format: Format, max_messages: usize, path: &str) -> Option<Index> {
        let simd = Simd::available().into_iter().find(|s| s.name() == path)?;
        Some(Index::with_simd(format, max_messages, simd))
    }

    pub(crate) fn with_simd(format: Format, max_messages: usize, simd: Simd) -> Index {
        let max_messages = max_messages.min(MAX_MESSAGES_LIMIT);
        let schema = match format {
            Format::Claude | Format::ClaudeAgent => &claude::SCHEMA,
            Format::Codex => &codex::SCHEMA,
            Format::Pi => &pi::SCHEMA,
            Format::Dsh => &dsh::SCHEMA,
        };
        Index {
            format,
            simd,
            covered: 0,
            full: false,
            store: Store::new(max_messages, max_messages.saturating_mul(SPANS_PER_MESSAGE)),
            conv: Conv::new(max_messages.saturating_mul(SPANS_PER_MESSAGE)),
            walker: Walker::new(schema),
            head_at: 0,
            head: [0; PROBE_LEN],
            head_len: 0,
            tail: [0; PROBE_LEN],
            tail_len: 0,
            cursor: Cursor::default(),
        }
    }

    /// Empties the index: the file is another one now.
    pub fn reset(&mut self) {
        *self = Index::with_simd(self.format, self.store.max_messages, self.simd);
    }

    /// What a search keeps of it (`search::kept`): its messages, their
    /// spans, the tool names and the branch they are named and read by,
    /// its working directory and its ends; nothing it needs to index on
    /// (the records and replies seen, the usage). A copy is read, never
    /// fed: a file that changed is indexed anew.
    pub(crate) fn kept_copy(&self) -> Index {
        let mut k = Index::with_simd(self.format, self.store.max_messages, self.simd);
        k.store.msgs = self.store.msgs.clone();
        k.store.spans = self.store.spans.clone();
        k.conv.tools = self.conv.tools.clone();
        k.conv.tree = self.conv.tree.clone();
        k.conv.cwd = self.conv.cwd.clone();
        (k.covered, k.full) = (self.covered, self.full);
        (k.head_at, k.head, k.head_len, k.tail, k.tail_len) =
            (self.head_at, self.head, self.head_len, self.tail, self.tail_len);
        k
    }

    /// Bytes a `kept_copy` holds apart from its fixed size: its messages,
    /// spans, branch and working directory.
    pub(crate) fn kept_bytes(&self) -> usize {
        self.store.msgs.len() * std::mem::size_of::<super::store::Msg>()
            + self.store.spans.len() * std::mem::size_of::<super::store::Span>()
            + self.conv.tree.heap_bytes()
            + self.conv.tools.heap_bytes()
            + self.conv.cwd.len()
            + std::mem::size_of::<Index>()
    }

    pub fn format(&self) -> Format {
        self.format
    }

    /// Bytes of the file indexed so far: the next `feed` starts here.
    pub fn covered(&self) -> u64 {
        self.covered
    }

    /// Messages in the chat (for pi and omp, on the current branch).
    pub fn len(&self) -> usize {
        self.conv.tree.len(self.store.msgs.len())
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The store's message that is the chat's message `id`.
    pub(crate) fn slot(&self, id: usize) -> Option<usize> {
        self.conv.tree.slot(id, self.store.msgs.len())
    }

    /// The session's tokens, as far as it is indexed.
    pub fn usage(&self) -> &Usage {
        &self.conv.usage
    }

    /// The working directory its first record that names one names
    /// (empty if none has yet).
    pub fn cwd(&self) -> &[u8] {
        &self.conv.cwd
    }

    /// What the transcript held that no rule knows, as far as it is
    /// indexed (`/health`).
    pub fn drift(&self) -> &super::drift::Drift {
        &self.conv.drift
    }

    /// The transcript has more messages than the index holds: nothing past
    /// `covered()` is indexed, and a listing is to answer an error.
    pub fn full(&self) -> bool {
        self.full
    }

    /// Indexes the complete lines of `bytes`, which are the file's from
    /// `file_offset` on; `file_offset` must be `covered()`. Returns the
    /// bytes used: up to the end of the last complete line. A line without
    /// its newline is still being written; pass it again, with more, next
    /// time. A line longer than the caller's buffer needs a larger buffer.
    /// Nothing is used once the index is `full`, or from the wrong offset.
    pub fn feed(&mut self, file_offset: u64, bytes: &[u8]) -> usize {
        if self.full || file_offset != self.covered {
            return 0;
        }
        if self.conv.tree.moved {
            return self.skip(bytes);
        }
        if self.covered == 0 && self.format == Format::Pi && bytes.starts_with(TITLE_SLOT) {
            self.head_at = memchr::memchr(b'\n', bytes).map_or(0, |n| n as u64 + 1);
        }
        let mut feed = Feed {
            bytes,
            at: file_offset,
            line: 0,
            obj: 0,
            format: self.format,
            walker: &mut self.walker,
            store: &mut self.store,
            conv: &mut self.conv,
            full: false,
        };
        feed.walker.reset(0);
        self.simd.scan(bytes, &mut feed);
        let (used, full) = (feed.line, feed.full);
        self.full = full;
        self.remember_ends(&bytes[..used]);
        self.covered += used as u64;
        if self.conv.tree.moved {
            return used + self.skip(&bytes[used..]);
        }
        used
    }

    /// The chat moved to another branch and would renumber what was
    /// listed: complete lines are passed over, unread, until the caller
    /// sees `unchanged` fail and starts over.
    fn skip(&mut self, bytes: &[u8]) -> usize {
        let used = memchr::memrchr(b'\n', bytes).map_or(0, |n| n + 1);
        self.remember_ends(&bytes[..used]);
        self.covered += used as u64;
        used
    }

    /// Keeps the first and last `PROBE_LEN` bytes covered, given the bytes
    /// just added.
    fn remember_ends(&mut self, added: &[u8]) {
        let skip = self.head_at.saturating_sub(self.covered).min(added.len() as u64) as usize;
        let take = (added.len() - skip).min(PROBE_LEN - self.head_len);
        self.head[self.head_len..self.head_len + take].copy_from_slice(&added[skip..skip + take]);
        self.head_len += take;
        if added.len() >= PROBE_LEN {
            self.tail.copy_from_slice(&added[added.len() - PROBE_LEN..]);
            self.tail_len = PROBE_LEN;
            return;
        }
        let keep = self.tail_len.min(PROBE_LEN - added.len());
        self.tail.copy_within(self.tail_len - keep..self.tail_len, 0);
        self.tail[keep..keep + added.len()].copy_from_slice(added);
        self.tail_len = keep + added.len();
    }

    /// Where the bytes `unchanged` compares are.
    pub fn probe(&self) -> Probe {
        Probe { head: (self.head_at, self.head_len), tail: (self.covered - self.tail_len as u64, self.tail_len) }
    }

    /// The ends `unchanged` compares, bytes and all.
    pub(crate) fn ends(&self) -> Ends {
        Ends { probe: self.probe(), head: self.head, tail: self.tail }
    }

    /// Whether the file still holds what was indexed, given the bytes at
    /// `probe()`'s ranges read afresh. A file that grew and kept them is
    /// indexed on from `covered()`; one that shrank, was born again under
    /// the same inode, or fails this is another file: start over. So is a
    /// pi or omp session whose chat moved to another branch in a way that
    /// renumbers messages already listed. A true answer means the chat as
    /// it stands may have been listed: a later branch move keeps its ids.
    pub fn unchanged(&self, head: &[u8], tail: &[u8]) -> bool {
        let same = head == &self.head[..self.head_len] && tail == &self.tail[..self.tail_len];
        if same && !self.conv.tree.moved {
            self.conv.tree.handed.set(self.len());
        }
        same && !self.conv.tree.moved
    }

    fn msg(&self, id: usize) -> Option<&Msg> {
        self.store.msgs.get(self.slot(id)?)
    }

    /// Kind, time and size of message `id`.
    pub fn info(&self, id: usize) -> Option<Info> {
        self.msg(id).map(|m| Info { kind: m.kind, time: m.time, size: u64::from(m.size) })
    }

    /// What a message's name says after its id: its kind, or its tool's
    /// name (and `-result` for the tool's answer).
    fn label(&self, m: &Msg) -> (&[u8], &'static [u8]) {
        match self.conv.tools.name(m.tool) {
            Some(t) if m.kind == Kind::ToolResult => (t, b"-result"),
            Some(t) => (t, b""),
            None => (m.kind.label().as_bytes(), b""),
        }
    }

    /// Appends `<id>-<label>` to `out`, the id as exactly `ID_DIGITS`
    /// digits. False when there is no message `id`.
    pub fn name(&self, id: usize, out: &mut Vec<u8>) -> bool {
        let Some(m) = self.msg(id) else { return false };
        let (label, suffix) = self.label(m);
        out.extend_from_slice(format!("{id:0width$}-", width = ID_DIGITS).as_bytes());
        out.extend_from_slice(label);
        out.extend_from_slice(suffix);
        true
    }

    /// The message a file name names. Every message answers to exactly one
    /// name: the id in its one spelling and the label it really has.
    pub fn lookup(&self, name: &[u8]) -> Option<usize> {
        let (digits, rest) = name.split_at_checked(ID_DIGITS)?;
        let label = rest.strip_prefix(b"-")?;
        if !digits.iter().all(u8::is_ascii_digit) {
            return None;
        }
        let id = digits.iter().fold(0usize, |v, &d| v * 10 + usize::from(d - b'0'));
        let (want, suffix) = self.label(self.msg(id)?);
        (label.strip_suffix(suffix)? == want).then_some(id)
    }
}

/// One `feed`: the scan's events go to the walk; a newline hands the
/// walked line to its format.
struct Feed<'a> {
    bytes: &'a [u8],
    at: u64,
    /// Start of the line being walked.
    line: usize,
    /// Start of the object being walked: the line's, or where an object
    /// glued onto the one before it begins.
    obj: usize,
    format: Format,
    walker: &'a mut Walker,
    store: &'a mut Store,
    conv: &'a mut Conv,
    full: bool,
}

impl Visit for Feed<'_> {
    #[inline(always)]
    fn quote(&mut self, pos: usize, open: bool, saved: u64) -> bool {
        self.walker.quote(self.bytes, pos, open, saved)
    }

    #[inline(always)]
    fn structural(&mut self, pos: usize, byte: u8) -> bool {
        self.walker.structural(self.bytes, pos, byte) || self.stopped(pos)
    }

    fn newline(&mut self, pos: usize) -> bool {
        if self.full {
            // A glued object met a cap: the line stays unindexed.
            return false;
        }
        let glued = self.obj != self.line;
        if glued {
            self.conv.drift.glued_lines += 1;
        } else if self.walker.bad(&self.bytes[self.obj..pos]) {
            // Still read for what it says before it stopped making sense
            // (docs/CHAT.md), and counted: a strict parser takes nothing.
            self.conv.drift.bad_lines += 1;
        }
        self.interpret(pos, glued);
        if self.full {
            return false;
        }
        if self.conv.tree.moved {
            // The rest is passed over (`Index::skip`).
            return false;
        }
        self.line = pos + 1;
        self.obj = pos + 1;
        self.walker.reset(pos + 1);
        true
    }
}

impl Feed<'_> {
    /// The walk stopped at `pos`. If the record's object closed there and
    /// another object follows on the same line, the first is handed to its
    /// format as one of a glued line's, and the walk starts again on the
    /// next. (Out of line: once a line at most.)
    #[inline(never)]
    fn stopped(&mut self, pos: usize) -> bool {
        if !self.walker.closed() || self.full {
            return false;
        }
        let rest = &self.bytes[pos + 1..];
        let Some(next) = rest.iter().position(|c| !matches!(c, b' ' | b'\t' | b'\r')) else { return false };
        if rest[next] != b'{' {
            return false;
        }
        self.interpret(pos + 1, true);
        if self.full {
            return false;
        }
        self.obj = pos + 1 + next;
        self.walker.reset(self.obj);
        true
    }

    /// Hand the object walked, which ends at `end`, to its format; a cap
    /// reached leaves the line whole for nobody (`full`).
    fn interpret(&mut self, end: usize, glued: bool) {
        let line = &self.bytes[self.obj..end];
        self.walker.finish(line.len());
        let rec = Rec { line, at: self.at + self.obj as u64, entries: &self.walker.entries, glued };
        let (msgs, spans) = (self.store.msgs.len(), self.store.spans.len());
        let done = match self.format {
            Format::Claude => claude::line(&rec, self.store, self.conv, false),
            Format::ClaudeAgent => claude::line(&rec, self.store, self.conv, true),
            Format::Codex => codex::line(&rec, self.store, self.conv),
            Format::Pi => pi::line(&rec, self.store, self.conv),
            Format::Dsh => dsh::line(&rec, self.store, self.conv),
        };
        if done == Err(Full) {
            // A cap: this line is left whole for nobody, and the listing
            // says so instead of ending early.
            self.store.truncate(msgs, spans);
            self.full = true;
        }
    }
}
