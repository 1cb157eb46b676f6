//! pi and omp (oh-my-pi) sessions: which entries are the conversation, how
//! each becomes messages, and which of the session's branches is the chat.
//!
//! A session file is a header (`session`; omp 18 puts a fixed-width
//! `title` slot before it), then entries, each with an `id` and the
//! `parentId` of the entry it follows: a tree. The conversation is the
//! chain from the file's last entry back to a root; other paths are
//! branches the person left (pi's `/tree`). `message` entries carry the
//! conversation — `user`, `assistant` (text, thinking and tool-call
//! blocks), `toolResult`, `bashExecution` (a `!` command), `custom` — and
//! `compaction`, `branch_summary` and `custom_message` entries are the
//! harness speaking to the model; everything else (`model_change`,
//! `thinking_level_change`, `label`, `session_info`, `custom`, …) is
//! bookkeeping. v1 files have no ids: each entry follows the one before.
//! docs/CHAT.md has the whole table.
//!
//! **The branch** (`branch::Tree`): every entry's messages are indexed where the
//! entry stands in the file, on every branch, and the chat is a view of
//! them: the messages of the entries on the current chain, in file order.
//! While each entry follows the last (the common case, and every linear
//! file) the view is every message and costs nothing. An entry that
//! follows an older one moves the chat to another branch: the view is
//! rebuilt from the tree. Ids are positions in the view, so such a move
//! renumbers what came after the branch point; when that would take back
//! ids already handed out (`Tree::handed`), the index stops there instead
//! and says the file is no longer the one indexed (`Index::unchanged`),
//! and the caller starts over with a new generation.
//!
//! Per entry the tree keeps 16 bytes (its id's hash, its parent, where its
//! messages end); the view is 4 bytes per message, and only exists once a
//! file has branched.

use super::conv::{self, Call, Conv, PartKeys};
use super::store::{hash, Full, Span, Store, LIT_IMAGE};
use super::walk::{any_nested, Node, Rec, Schema, Val, LEAF};
use super::Kind;

const ROOT: u8 = 1;
const TYPE: u8 = 2;
const TIMESTAMP: u8 = 3;
const ID: u8 = 4;
const PARENT: u8 = 5;
const MESSAGE: u8 = 6;
/// `compaction` and `branch_summary`: what the model continues from.
const SUMMARY: u8 = 7;
/// `custom_message`: an extension speaking to the model.
const ENTRY_CONTENT: u8 = 8;
const ROLE: u8 = 9;
const CONTENT: u8 = 10;
const TOOL_CALL_ID: u8 = 11;
const COMMAND: u8 = 12;
const CODE: u8 = 13;
const OUTPUT: u8 = 14;
const MODEL: u8 = 15;
const USAGE: u8 = 16;
const ERROR: u8 = 17;
const BLOCK: u8 = 18;
const BLOCK_TYPE: u8 = 19;
const TEXT: u8 = 20;
const THINKING: u8 = 21;
const BLOCK_ID: u8 = 22;
const NAME: u8 = 23;
const ARGUMENTS: u8 = 24;
const INPUT: u8 = 25;
const OUTPUT_TOKENS: u8 = 26;
const CACHE_READ: u8 = 27;
const CACHE_WRITE: u8 = 28;
const REASONING: u8 = 29;
const REASONING_TOKENS: u8 = 30;
/// The header's format version; a user message the harness made itself;
/// a thinking block whose text was withheld.
const VERSION: u8 = 31;
const SYNTHETIC: u8 = 32;
const REDACTED: u8 = 33;
/// The session header's working directory.
const CWD: u8 = 34;

/// The schema of a pi or omp entry.
pub(crate) static SCHEMA: Schema = Schema::new(&NODES, TYPE, entry, any_nested);

/// Every entry is walked: even bookkeeping entries stand in the tree, and
/// their `id` and `parentId` come after their `type`. So is the header,
/// for its version.
fn entry(ty: &[u8]) -> bool {
    ty != b"title"
}

/// The entry types pi and omp write that are no message: settings, names,
/// marks, extension state (docs/CHAT.md).
fn bookkeeping(ty: &[u8]) -> bool {
    matches!(
        ty,
        b"model_change"
            | b"thinking_level_change"
            | b"label"
            | b"session_info"
            | b"custom"
            | b"service_tier_change"
            | b"session_init"
            | b"mode_change"
            | b"ttsr_injection"
            | b"reset_boundary"
            | b"title_change"
            | b"credential_pin"
    )
}

static NODES: [Node; 35] = {
    let mut s = [LEAF; 35];
    s[ROOT as usize] = Node {
        keys: &[
            (b"type", TYPE),
            (b"id", ID),
            (b"parentId", PARENT),
            (b"timestamp", TIMESTAMP),
            (b"message", MESSAGE),
            (b"summary", SUMMARY),
            (b"content", ENTRY_CONTENT),
            (b"version", VERSION),
            (b"cwd", CWD),
        ],
        elem: 0,
    };
    s[MESSAGE as usize] = Node {
        keys: &[
            (b"role", ROLE),
            (b"content", CONTENT),
            (b"toolCallId", TOOL_CALL_ID),
            (b"command", COMMAND),
            (b"code", CODE),
            (b"output", OUTPUT),
            (b"model", MODEL),
            (b"usage", USAGE),
            (b"errorMessage", ERROR),
            (b"synthetic", SYNTHETIC),
        ],
        elem: 0,
    };
    s[CONTENT as usize] = Node { keys: &[], elem: BLOCK };
    s[ENTRY_CONTENT as usize] = Node { keys: &[], elem: BLOCK };
    s[BLOCK as usize] = Node {
        keys: &[
            (b"type", BLOCK_TYPE),
            (b"text", TEXT),
            (b"thinking", THINKING),
            (b"id", BLOCK_ID),
            (b"name", NAME),
            (b"arguments", ARGUMENTS),
            (b"redacted", REDACTED),
        ],
        elem: 0,
    };
    s[USAGE as usize] = Node {
        keys: &[
            (b"input", INPUT),
            (b"output", OUTPUT_TOKENS),
            (b"cacheRead", CACHE_READ),
            (b"cacheWrite", CACHE_WRITE),
            (b"reasoning", REASONING),
            (b"reasoningTokens", REASONING_TOKENS),
        ],
        elem: 0,
    };
    s
};

const PARTS: PartKeys = PartKeys { ty: BLOCK_TYPE, text: TEXT };

/// The messages of one line.
pub(crate) fn line(rec: &Rec, store: &mut Store, conv: &mut Conv) -> Result<(), Full> {
    let Some(root) = rec.root() else { return Ok(()) };
    let ty = rec.word(root, TYPE);
    if ty == b"session" {
        // pi's session format version: a number.
        if let Some(v) = rec.uint(root, VERSION) {
            conv.drift.version(v.to_string().as_bytes());
        }
        conv.cwd(rec.word(root, CWD));
        return Ok(());
    }
    if rec.glued {
        // pi's loader drops a line of glued objects whole: no entry, no
        // message; a reply on it was still paid for.
        if let Some(m) = rec.child(root, MESSAGE).filter(|&m| ty == b"message" && rec.val(m) == Val::Obj) {
            if rec.word(m, ROLE) == b"assistant" {
                count(rec, m, conv);
            }
        }
        return Ok(());
    }
    if ty.is_empty() || !entry(ty) || conv.tree.moved {
        return Ok(());
    }
    let parent = conv.tree.parent(parent_id(rec, root));
    if !conv.tree.branch(parent, store.msgs.len()) {
        conv.tree.moved = true;
        return Ok(());
    }
    conv.stamp(rec.word(root, TIMESTAMP));
    let time = conv.time();
    match ty {
        b"message" => message(rec, root, time, store, conv)?,
        b"compaction" | b"branch_summary" => {
            let summary = rec.child(root, SUMMARY).filter(|&s| rec.entries[s].out > 0);
            store.one(Kind::System, time, summary.and_then(|s| rec.value_span(s)))?;
        }
        b"custom_message" => said(rec, rec.child(root, ENTRY_CONTENT), Kind::System, time, store)?,
        t if bookkeeping(t) => {}
        t => {
            let text = [MESSAGE, SUMMARY, ENTRY_CONTENT].iter().any(|&k| rec.child(root, k).is_some());
            conv.drift.unknown(t, text);
        }
    }
    conv.tree.push(hash(rec.word(root, ID)), parent, store.msgs.len());
    Ok(())
}

/// The hash of the entry's `parentId`: `None` without one, 0 for null.
fn parent_id(rec: &Rec, root: usize) -> Option<u64> {
    let p = rec.child(root, PARENT)?;
    Some(if rec.val(p) == Val::Str { hash(rec.body(p)) } else { 0 })
}

/// Content as one message of `kind`, if it says anything.
fn said(rec: &Rec, content: Option<usize>, kind: Kind, time: u32, store: &mut Store) -> Result<(), Full> {
    store.open(kind, time, 0)?;
    conv::parts(rec, content, PARTS, store)?;
    store.close();
    Ok(())
}

fn message(rec: &Rec, root: usize, time: u32, store: &mut Store, conv: &mut Conv) -> Result<(), Full> {
    let Some(m) = rec.child(root, MESSAGE).filter(|&m| rec.val(m) == Val::Obj) else { return Ok(()) };
    let content = rec.child(m, CONTENT);
    match rec.word(m, ROLE) {
        // A user message the harness made itself is the harness speaking.
        b"user" if rec.flag(m, SYNTHETIC) == Some(true) => blocks(rec, content, Kind::System, time, store, conv),
        b"user" => blocks(rec, content, Kind::User, time, store, conv),
        b"assistant" => {
            count(rec, m, conv);
            blocks(rec, content, Kind::Assistant, time, store, conv)?;
            // A turn that failed (or was aborted) says so only here.
            let error = rec.child(m, ERROR).filter(|&e| rec.val(e) == Val::Str && rec.entries[e].out > 0);
            store.one(Kind::System, time, error.and_then(|e| rec.str_span(e)))
        }
        b"toolResult" => conv::result(rec, rec.word(m, TOOL_CALL_ID), content, PARTS, time, store, conv),
        // A command the person ran (`!`, omp's python too): what they
        // typed, then what the harness answered.
        b"bashExecution" | b"pythonExecution" => {
            let typed = rec.child(m, COMMAND).or_else(|| rec.child(m, CODE));
            store.one(Kind::User, time, typed.and_then(|c| rec.value_span(c)))?;
            let output = rec.child(m, OUTPUT).filter(|&o| rec.entries[o].out > 0 || rec.val(o) != Val::Str);
            store.one(Kind::System, time, output.and_then(|o| rec.value_span(o)))
        }
        b"custom" | b"hookMessage" | b"developer" | b"branchSummary" | b"compactionSummary" => {
            said(rec, content, Kind::System, time, store)
        }
        // A role this does not know (omp's fileMention among them) is
        // still something said to the model: shown as its JSON.
        role => {
            if role != b"fileMention" {
                conv.drift.unknown(&[b"message/", role].concat(), true);
            }
            store.one(Kind::System, time, rec.raw_span(m))
        }
    }
}

/// A user's or assistant's content: a string is one message; each block
/// of an array is one.
fn blocks(
    rec: &Rec,
    content: Option<usize>,
    said: Kind,
    time: u32,
    store: &mut Store,
    conv: &mut Conv,
) -> Result<(), Full> {
    let Some(c) = content else { return Ok(()) };
    if rec.val(c) != Val::Arr {
        return store.one(said, time, rec.value_span(c));
    }
    for b in rec.items(c) {
        block(rec, b, said, time, store, conv)?;
    }
    Ok(())
}

fn block(rec: &Rec, b: usize, said: Kind, time: u32, store: &mut Store, conv: &mut Conv) -> Result<(), Full> {
    if rec.val(b) != Val::Obj {
        return store.one(said, time, rec.value_span(b));
    }
    let text = |k: u8| rec.child(b, k).filter(|&t| rec.val(t) == Val::Str);
    match rec.word(b, BLOCK_TYPE) {
        b"text" if text(TEXT).is_some() => store.one(said, time, text(TEXT).and_then(|t| rec.str_span(t))),
        // Redacted thinking keeps no text (or a placeholder for it):
        // nothing to show.
        b"thinking" if rec.flag(b, REDACTED) == Some(true) => Ok(()),
        b"thinking" if text(THINKING).is_some() => {
            let t = text(THINKING).filter(|&t| rec.entries[t].out > 0);
            store.one(Kind::Thinking, time, t.and_then(|t| rec.str_span(t)))
        }
        b"redactedThinking" => Ok(()),
        b"toolCall" => {
            let c = Call {
                tool: rec.word(b, NAME).to_vec(),
                id: hash(rec.word(b, BLOCK_ID)),
                name: rec.child(b, NAME),
                input: rec.child(b, ARGUMENTS),
                whole: Some(b),
            };
            conv::call(rec, c, time, store, conv)
        }
        b"image" => store.one(said, time, Some(Span::lit(LIT_IMAGE))),
        _ => store.one(said, time, rec.raw_span(b)),
    }
}

/// An assistant message's `usage`, on whatever branch: every reply was
/// paid for.
fn count(rec: &Rec, m: usize, conv: &mut Conv) {
    let Some(u) = rec.child(m, USAGE).filter(|&u| rec.val(u) == Val::Obj) else { return };
    let [i, o, r, w, rt, rs] =
        rec.uints(u, [INPUT, OUTPUT_TOKENS, CACHE_READ, CACHE_WRITE, REASONING_TOKENS, REASONING]);
    let reasoning = rt.or(rs).unwrap_or(0);
    let [i, o, r, w] = [i, o, r, w].map(|v| v.unwrap_or(0));
    let slot = conv.usage.slot(rec.word(m, MODEL));
    let time = conv.time();
    conv.usage.charge(slot, 0, time, &[i, o, r, w, reasoning], 0);
}
