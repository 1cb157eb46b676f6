//! What a chat carries from line to line, and the shapes the formats
//! share: a tool call, its result, and content made of parts.

use super::branch::Tree;
use super::dedupe::{Replies, Seen};
use super::drift::Drift;
use super::store::{hash, Calls, Full, Span, Spans, Store, Tools, LIT_EMPTY, LIT_IMAGE};
use super::time::parse_time;
use super::usage::{Running, Usage};
use super::walk::{Rec, Val};
use super::Kind;

/// The conversation's state between lines.
pub(crate) struct Conv {
    pub tools: Tools,
    pub calls: Calls,
    /// The last timestamp a record carried, as written: a record without
    /// one (codex's legacy items, Claude's bookkeeping) was written after
    /// it. Parsed only when a message needs it: most records are
    /// bookkeeping.
    stamp: [u8; STAMP_MAX],
    stamp_len: usize,
    /// `stamp` parsed, once asked for.
    time: Option<u32>,
    /// The last time parsed from a stamp.
    last: u32,
    /// Claude: prompts typed while the model worked.
    pub queue: Queue,
    /// The session's tokens so far, and what counting them needs: each
    /// harness's duplicates (`dedupe`), codex's running total.
    pub usage: Usage,
    /// Claude: the records indexed, by `uuid`; codex: the responses
    /// counted, by `response_id`.
    pub seen: Seen,
    /// Claude: each reply's usage, by `message.id` and `requestId`.
    pub replies: Replies,
    pub running: Running,
    /// What no rule knows (`/health`).
    pub drift: Drift,
    /// pi and omp: the entries' tree and the current branch.
    pub tree: Tree,
    /// The working directory the session's first record that names one
    /// names (empty before): where `/usage/projects` files it.
    pub cwd: Vec<u8>,
}

/// Longest working directory kept, in bytes (a path's limit).
pub(crate) const CWD_MAX: usize = 4096;

/// Longest timestamp kept (`2026-09-24T12:51:26.691123456+02:00` is 35).
const STAMP_MAX: usize = 40;

impl Conv {
    /// A conversation that remembers at most `ids` record and reply ids
    /// (past it the index is full: `Seen`, `Replies`).
    pub(super) fn new(ids: usize) -> Conv {
        Conv {
            tools: Tools::new(),
            calls: Calls::new(),
            stamp: [0; STAMP_MAX],
            stamp_len: 0,
            time: Some(0),
            last: 0,
            queue: Queue::default(),
            usage: Usage::new(),
            seen: Seen::new(ids),
            replies: Replies::new(ids),
            running: Running::default(),
            drift: Drift::default(),
            tree: Tree::default(),
            cwd: Vec::new(),
        }
    }

    /// A record names working directory `cwd`: the session's, if it is
    /// the first that does (cut at `CWD_MAX`).
    pub(super) fn cwd(&mut self, cwd: &[u8]) {
        if self.cwd.is_empty() && !cwd.is_empty() {
            self.cwd = cwd[..cwd.len().min(CWD_MAX)].to_vec();
        }
    }

    /// A record carries timestamp `ts` (possibly empty: then it keeps the
    /// last). Only what has a timestamp's shape replaces the last one.
    pub(super) fn stamp(&mut self, ts: &[u8]) {
        let shaped = ts.len() >= 19 && ts.len() <= STAMP_MAX && ts[4] == b'-' && ts[13] == b':';
        if shaped && ts != &self.stamp[..self.stamp_len] {
            self.stamp[..ts.len()].copy_from_slice(ts);
            self.stamp_len = ts.len();
            self.time = None;
        }
    }

    /// A record carries its time as Unix seconds (dsh writes milliseconds):
    /// it is the last time from here on.
    pub(super) fn at_unix(&mut self, secs: u64) {
        let t = u32::try_from(secs).unwrap_or(u32::MAX);
        self.stamp_len = 0;
        self.last = t;
        self.time = Some(t);
    }

    /// Unix seconds of the last timestamp carried (0 before any).
    pub(super) fn time(&mut self) -> u32 {
        if self.time.is_none() {
            if let Some(t) = parse_time(&self.stamp[..self.stamp_len]) {
                self.last = t;
            }
            self.time = Some(self.last);
        }
        self.last
    }
}

/// Where a content part's text and type are, in a format's schema.
#[derive(Clone, Copy)]
pub(crate) struct PartKeys {
    pub ty: u8,
    pub text: u8,
}

/// Content as parts of one message: a string is its text; an array is its
/// elements in order — a string, a block's `text`, `[image]` for an image,
/// nothing for encrypted content, and any other block as its JSON;
/// anything else is its JSON.
pub(crate) fn parts(rec: &Rec, at: Option<usize>, keys: PartKeys, out: &mut impl Spans) -> Result<(), Full> {
    let Some(at) = at else { return Ok(()) };
    match rec.val(at) {
        Val::Str => put(out, rec.str_span(at)),
        Val::Arr => {
            for el in rec.items(at) {
                put(out, part(rec, el, keys))?;
            }
            Ok(())
        }
        _ => put(out, rec.raw_span(at)),
    }
}

fn part(rec: &Rec, el: usize, keys: PartKeys) -> Option<Span> {
    if rec.val(el) != Val::Obj {
        return rec.value_span(el);
    }
    if let Some(t) = rec.child(el, keys.text).filter(|&t| rec.val(t) == Val::Str) {
        return rec.str_span(t);
    }
    match rec.word(el, keys.ty) {
        t if t.ends_with(b"image") => Some(Span::lit(LIT_IMAGE)),
        // Encrypted content is nothing a reader could use.
        b"encrypted_content" => None,
        _ => rec.raw_span(el),
    }
}

pub(crate) fn put(out: &mut impl Spans, s: Option<Span>) -> Result<(), Full> {
    match s {
        Some(s) => out.put(s),
        None => Ok(()),
    }
}

/// A tool call: named after `tool` (the raw name), shown as its name
/// value, then its input. A call with neither is shown as `whole`.
pub(crate) struct Call {
    pub tool: Vec<u8>,
    pub id: u64,
    pub name: Option<usize>,
    pub input: Option<usize>,
    pub whole: Option<usize>,
}

pub(crate) fn call(rec: &Rec, c: Call, time: u32, store: &mut Store, conv: &mut Conv) -> Result<(), Full> {
    let tool = conv.tools.intern(&c.tool);
    store.open(Kind::ToolCall, time, tool)?;
    put(store, c.name.and_then(|n| rec.value_span(n)))?;
    put(store, c.input.and_then(|i| rec.value_span(i)))?;
    if store.is_empty() {
        put(store, c.whole.and_then(|w| rec.raw_span(w)))?;
    }
    if store.close() {
        conv.calls.remember(c.id, tool);
    }
    Ok(())
}

/// A tool's answer, named after the call it answers when that is known. A
/// result that says nothing is still an answer: an empty file.
pub(crate) fn result(
    rec: &Rec,
    id: &[u8],
    content: Option<usize>,
    keys: PartKeys,
    time: u32,
    store: &mut Store,
    conv: &mut Conv,
) -> Result<(), Full> {
    store.open(Kind::ToolResult, time, conv.calls.tool_of(hash(id)))?;
    parts(rec, content, keys, store)?;
    if store.is_empty() {
        store.put(Span::lit(LIT_EMPTY))?;
    }
    store.close();
    Ok(())
}

/// Claude Code's prompt queue, as its `queue-operation` records tell it.
///
/// A prompt typed while the model works is written when it is typed
/// (`enqueue`) and again when it is delivered: as a user record after the
/// turn (`dequeue`), or mid-turn as a `queued_command` attachment, before
/// or after its `remove`. Some versions (2.1.92) deliver mid-turn and write
/// nothing but the `remove`. So a prompt is a message where it is
/// delivered: a `remove` whose prompt no attachment delivered says it
/// itself (from the enqueued text), and an attachment whose prompt a
/// `remove` already said is not said twice.
#[derive(Default)]
pub(crate) struct Queue {
    pending: std::collections::VecDeque<Pending>,
    /// Prompts said at their `remove`, by hash: their attachment may follow.
    said: Vec<u64>,
}

/// A queued prompt: the hash of its text as written (0 for content that
/// is not a string), and its spans, computed when it was enqueued.
pub(crate) struct Pending {
    pub hash: u64,
    pub spans: Vec<Span>,
    pub delivered: bool,
}

/// Prompts one queue holds; a queue longer than this is not one a person
/// typed, and its oldest are forgotten.
const QUEUE_MAX: usize = 64;

impl Queue {
    pub(super) fn enqueue(&mut self, p: Pending) {
        if self.pending.len() == QUEUE_MAX {
            self.pending.pop_front();
        }
        self.pending.push_back(p);
    }

    /// The oldest prompt leaves the queue.
    pub(super) fn pop(&mut self) -> Option<Pending> {
        self.pending.pop_front()
    }

    pub(super) fn clear(&mut self) {
        self.pending.clear();
    }

    /// A `remove` said this prompt.
    pub(super) fn said_at_remove(&mut self, hash: u64) {
        if hash != 0 {
            if self.said.len() == QUEUE_MAX {
                self.said.remove(0);
            }
            self.said.push(hash);
        }
    }

    /// An attachment delivers the prompt with this hash: false when a
    /// `remove` already said it (and it is not to be said again).
    pub(super) fn deliver(&mut self, hash: u64) -> bool {
        if hash == 0 {
            return true;
        }
        if let Some(i) = self.said.iter().position(|&h| h == hash) {
            self.said.remove(i);
            return false;
        }
        if let Some(p) = self.pending.iter_mut().find(|p| p.hash == hash && !p.delivered) {
            p.delivered = true;
        }
        true
    }
}
