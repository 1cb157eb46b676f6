//! Claude Code transcripts: which records are the conversation, and how
//! each becomes messages.
//!
//! `user` and `assistant` records carry the conversation, one message per
//! content block (Claude Code writes each block of a reply as a record of
//! its own). `system` records that carry text are the harness speaking; a
//! prompt typed while the model worked arrives as a `queued_command`
//! attachment or only in the `queue-operation` records (`Queue`); hooks
//! speak through two attachment types. Everything else — progress, titles,
//! snapshots, modes, reminders, listings — is bookkeeping and no message.
//! docs/CHAT.md has the whole table.
//!
//! A main session's chat is the main thread: every record marked
//! `"isSidechain": true` — a subagent's, written inline by 1.0.x — is
//! skipped, wherever it stands, even before the main thread's first
//! record. Its tokens still count in the usage (`count`), once per reply.
//! A subagent's own file (`Format::ClaudeAgent`: `<sid>/subagents/agent-*`
//! and the pre-2.1 sibling `agent-*.jsonl`) is all sidechain, and its
//! records are its chat.

use super::conv::{self, Call, Conv, PartKeys, Pending};
use super::dedupe::reply_key;
use super::store::{hash, Full, Span, Spans, Store, LIT_DOCUMENT, LIT_IMAGE};
use super::walk::{any_nested, Node, Rec, Schema, Val, LEAF};
use super::Kind;

const ROOT: u8 = 1;
const TYPE: u8 = 2;
const TIMESTAMP: u8 = 3;
const SIDECHAIN: u8 = 4;
const META: u8 = 5;
const COMPACT_SUMMARY: u8 = 6;
const MESSAGE: u8 = 7;
/// `content` of a `system` or `queue-operation` record.
const RECORD_CONTENT: u8 = 8;
const ATTACHMENT: u8 = 9;
const OPERATION: u8 = 10;
/// `message.content`, and its blocks.
const CONTENT: u8 = 11;
const BLOCK: u8 = 12;
const BLOCK_TYPE: u8 = 13;
const TEXT: u8 = 14;
const THINKING: u8 = 15;
const NAME: u8 = 16;
const ID: u8 = 17;
const INPUT: u8 = 18;
const TOOL_USE_ID: u8 = 19;
/// A tool result's `content`, and its parts.
const RESULT: u8 = 20;
const TITLE: u8 = 21;
const SOURCE: u8 = 22;
const PART: u8 = 23;
const PART_TYPE: u8 = 24;
const PART_TEXT: u8 = 25;
const SOURCE_TYPE: u8 = 26;
const SOURCE_DATA: u8 = 27;
const ATTACHMENT_TYPE: u8 = 28;
const PROMPT: u8 = 29;
const COMMAND_MODE: u8 = 30;
const ORIGIN: u8 = 31;
const ATTACHMENT_CONTENT: u8 = 32;
const ORIGIN_KIND: u8 = 33;
/// `message.id`, `message.model`, `message.usage` and its counts.
const MESSAGE_ID: u8 = 34;
const MODEL: u8 = 35;
const USAGE: u8 = 36;
const INPUT_TOKENS: u8 = 37;
const OUTPUT_TOKENS: u8 = 38;
const CACHE_READ: u8 = 39;
const CACHE_WRITE: u8 = 40;
/// The record's `uuid`, `requestId`, `version` and `subtype`.
const UUID: u8 = 41;
const REQUEST_ID: u8 = 42;
const VERSION: u8 = 43;
const SUBTYPE: u8 = 44;
/// `message.usage.cache_creation` and its hour-long writes; the record's `cwd`.
const CACHE_CREATION: u8 = 45;
const WRITE_1H: u8 = 46;
const CWD: u8 = 47;

/// The schema of a Claude Code record.
pub(crate) static SCHEMA: Schema = Schema::new(&NODES, TYPE, wanted, any_nested);

/// The record types that can hold a message, and any type no rule knows
/// (walked so that `/health` can say whether it held text).
fn wanted(ty: &[u8]) -> bool {
    !bookkeeping(ty)
}

/// The record types Claude Code writes that are no message (docs/CHAT.md
/// has why, type by type), as of 2.1.33x.
fn bookkeeping(ty: &[u8]) -> bool {
    matches!(
        ty,
        b"progress"
            | b"summary"
            | b"ai-title"
            | b"custom-title"
            | b"agent-name"
            | b"agent-color"
            | b"agent-setting"
            | b"last-prompt"
            | b"tag"
            | b"relocated"
            | b"worktree-state"
            | b"mode"
            | b"permission-mode"
            | b"repl-mode"
            | b"memory-mode"
            | b"isolation-latch"
            | b"atis-latch"
            | b"session-owner"
            | b"cost-state"
            | b"pr-link"
            | b"bridge-session"
            | b"frame-link"
            | b"observer-ref"
            | b"file-history-snapshot"
            | b"file-history-delta"
            | b"attribution-snapshot"
            | b"content-replacement"
            | b"fork-context-ref"
            | b"derived-from"
            | b"ended-by-model"
    )
}

/// Attachments that are no message: copies of files, listings and
/// reminders the harness re-injects every turn (docs/CHAT.md).
fn quiet_attachment(ty: &[u8]) -> bool {
    matches!(
        ty,
        b"skill_listing"
            | b"todo_reminder"
            | b"task_reminder"
            | b"nested_memory"
            | b"file"
            | b"edited_text_file"
            | b"invoked_skills"
            | b"plan_mode"
            | b"plan_mode_exit"
            | b"date_change"
            | b"deferred_tools_delta"
            | b"mcp_instructions_delta"
            | b"command_permissions"
            | b"auto_mode"
            | b"auto_mode_exit"
            | b"compact_file_reference"
            | b"hook_success"
    )
}

/// `system` records without text: retries, timings, hook runs.
fn quiet_system(subtype: &[u8]) -> bool {
    matches!(subtype, b"api_error" | b"turn_duration" | b"stop_hook_summary")
}

static NODES: [Node; 48] = {
    let mut s = [LEAF; 48];
    s[ROOT as usize] = Node {
        keys: &[
            (b"type", TYPE),
            (b"timestamp", TIMESTAMP),
            (b"isSidechain", SIDECHAIN),
            (b"isMeta", META),
            (b"isCompactSummary", COMPACT_SUMMARY),
            (b"message", MESSAGE),
            (b"content", RECORD_CONTENT),
            (b"attachment", ATTACHMENT),
            (b"operation", OPERATION),
            (b"uuid", UUID),
            (b"requestId", REQUEST_ID),
            (b"version", VERSION),
            (b"subtype", SUBTYPE),
            (b"cwd", CWD),
        ],
        elem: 0,
    };
    s[MESSAGE as usize] =
        Node { keys: &[(b"content", CONTENT), (b"id", MESSAGE_ID), (b"model", MODEL), (b"usage", USAGE)], elem: 0 };
    s[USAGE as usize] = Node {
        keys: &[
            (b"input_tokens", INPUT_TOKENS),
            (b"output_tokens", OUTPUT_TOKENS),
            (b"cache_read_input_tokens", CACHE_READ),
            (b"cache_creation_input_tokens", CACHE_WRITE),
            (b"cache_creation", CACHE_CREATION),
        ],
        elem: 0,
    };
    s[CACHE_CREATION as usize] = Node { keys: &[(b"ephemeral_1h_input_tokens", WRITE_1H)], elem: 0 };
    s[CONTENT as usize] = Node { keys: &[], elem: BLOCK };
    s[BLOCK as usize] = Node {
        keys: &[
            (b"type", BLOCK_TYPE),
            (b"text", TEXT),
            (b"thinking", THINKING),
            (b"name", NAME),
            (b"id", ID),
            (b"input", INPUT),
            (b"tool_use_id", TOOL_USE_ID),
            (b"content", RESULT),
            (b"title", TITLE),
            (b"source", SOURCE),
        ],
        elem: 0,
    };
    s[RESULT as usize] = Node { keys: &[], elem: PART };
    s[RECORD_CONTENT as usize] = Node { keys: &[], elem: PART };
    s[ATTACHMENT_CONTENT as usize] = Node { keys: &[], elem: PART };
    s[PART as usize] = Node { keys: &[(b"type", PART_TYPE), (b"text", PART_TEXT)], elem: 0 };
    s[SOURCE as usize] = Node { keys: &[(b"type", SOURCE_TYPE), (b"data", SOURCE_DATA)], elem: 0 };
    s[ATTACHMENT as usize] = Node {
        keys: &[
            (b"type", ATTACHMENT_TYPE),
            (b"prompt", PROMPT),
            (b"commandMode", COMMAND_MODE),
            (b"origin", ORIGIN),
            (b"content", ATTACHMENT_CONTENT),
        ],
        elem: 0,
    };
    s[ORIGIN as usize] = Node { keys: &[(b"kind", ORIGIN_KIND)], elem: 0 };
    s
};

const PARTS: PartKeys = PartKeys { ty: PART_TYPE, text: PART_TEXT };

/// The messages of one record; `subagent` when the file is a subagent's
/// own, whose sidechain records are its conversation.
///
/// A record whose `uuid` was indexed before in this file is a copy (Claude
/// Code's second `/compact` re-appends earlier records as they were, and
/// its own loader keeps the first of each): it says and counts nothing.
pub(crate) fn line(rec: &Rec, store: &mut Store, conv: &mut Conv, subagent: bool) -> Result<(), Full> {
    let Some(root) = rec.root() else { return Ok(()) };
    conv.stamp(rec.word(root, TIMESTAMP));
    if conv.cwd.is_empty() {
        conv.cwd(rec.word(root, CWD));
    }
    let ty = rec.word(root, TYPE);
    if bookkeeping(ty) {
        return Ok(());
    }
    if rec.glued {
        // No record for the harness's loader, but a reply it holds was
        // still paid for.
        if ty == b"assistant" {
            count(rec, root, conv)?;
        }
        return Ok(());
    }
    if !conv.seen.first(hash(rec.word(root, UUID)))? {
        return Ok(());
    }
    conv.drift.version(rec.word(root, VERSION));
    if ty == b"assistant" {
        count(rec, root, conv)?;
    }
    if !subagent && rec.flag(root, SIDECHAIN) == Some(true) {
        return Ok(());
    }
    let time = conv.time();
    match ty {
        b"user" | b"assistant" => message(rec, root, ty == b"user", time, store, conv),
        b"system" => {
            let content = rec.child(root, RECORD_CONTENT);
            if content.is_none() && !quiet_system(rec.word(root, SUBTYPE)) {
                conv.drift.unknown(&[b"system/", rec.word(root, SUBTYPE)].concat(), false);
            }
            store.open(Kind::System, time, 0)?;
            conv::parts(rec, content, PARTS, store)?;
            store.close();
            Ok(())
        }
        b"attachment" => attachment(rec, root, time, store, conv),
        b"queue-operation" => queue(rec, root, time, store, conv),
        _ => {
            // A type no rule knows: counted, and whether it held text.
            let text = rec.child(root, MESSAGE).is_some() || rec.child(root, RECORD_CONTENT).is_some();
            conv.drift.unknown(ty, text);
            Ok(())
        }
    }
}

/// A reply's `message.usage`, counted once per reply (`message.id` and
/// `requestId`) over the whole file, each field at its largest among the
/// reply's records (`dedupe::Replies`). Sidechain records count: they are
/// the tokens of subagents written inline, and a subagent's own file is
/// all sidechain.
fn count(rec: &Rec, root: usize, conv: &mut Conv) -> Result<(), Full> {
    let Some(m) = rec.child(root, MESSAGE).filter(|&m| rec.val(m) == Val::Obj) else { return Ok(()) };
    let Some(u) = rec.child(m, USAGE).filter(|&u| rec.val(u) == Val::Obj) else { return Ok(()) };
    let [i, o, r, w] = rec.uints(u, [INPUT_TOKENS, OUTPUT_TOKENS, CACHE_READ, CACHE_WRITE]).map(|n| n.unwrap_or(0));
    let c = [i, o, r, w, 0];
    let split = rec.child(u, CACHE_CREATION).filter(|&s| rec.val(s) == Val::Obj);
    let write_1h = split.and_then(|s| rec.uints(s, [WRITE_1H])[0]).unwrap_or(0).min(w);
    let id = reply_key(rec.word(m, MESSAGE_ID), rec.word(root, REQUEST_ID));
    let time = conv.time();
    conv.replies.copy(&mut conv.usage, id, rec.word(m, MODEL), time, &c, write_1h)
}

fn message(rec: &Rec, root: usize, user: bool, time: u32, store: &mut Store, conv: &mut Conv) -> Result<(), Full> {
    let injected = rec.flag(root, META) == Some(true) || rec.flag(root, COMPACT_SUMMARY) == Some(true);
    let said = match (user, injected) {
        (true, false) => Kind::User,
        (true, true) => Kind::System,
        (false, _) => Kind::Assistant,
    };
    let Some(content) = rec.child(root, MESSAGE).and_then(|m| rec.child(m, CONTENT)) else {
        return Ok(());
    };
    match rec.val(content) {
        Val::Str => store.one(said, time, rec.str_span(content)),
        Val::Arr => {
            for b in rec.items(content) {
                block(rec, b, said, time, store, conv)?;
            }
            Ok(())
        }
        _ => store.one(said, time, rec.raw_span(content)),
    }
}

/// One content block: one message.
fn block(rec: &Rec, b: usize, said: Kind, time: u32, store: &mut Store, conv: &mut Conv) -> Result<(), Full> {
    if rec.val(b) != Val::Obj {
        return store.one(said, time, rec.value_span(b));
    }
    let text = |k: u8| rec.child(b, k).filter(|&t| rec.val(t) == Val::Str);
    match rec.word(b, BLOCK_TYPE) {
        b"text" if text(TEXT).is_some() => store.one(said, time, text(TEXT).and_then(|t| rec.str_span(t))),
        // Claude Code keeps only the signature of redacted thinking: an
        // empty text, or an encrypted block, is nothing to show.
        b"thinking" if text(THINKING).is_some() => {
            let t = text(THINKING).filter(|&t| rec.entries[t].out > 0);
            store.one(Kind::Thinking, time, t.and_then(|t| rec.str_span(t)))
        }
        b"redacted_thinking" => Ok(()),
        t if t.ends_with(b"tool_use") => {
            let c = Call {
                tool: rec.word(b, NAME).to_vec(),
                id: hash(rec.word(b, ID)),
                name: rec.child(b, NAME),
                input: rec.child(b, INPUT),
                whole: Some(b),
            };
            conv::call(rec, c, time, store, conv)
        }
        t if t.ends_with(b"tool_result") => {
            conv::result(rec, rec.word(b, TOOL_USE_ID), rec.child(b, RESULT), PARTS, time, store, conv)
        }
        t if t.ends_with(b"image") => store.one(said, time, Some(Span::lit(LIT_IMAGE))),
        b"document" => document(rec, b, said, time, store),
        _ => store.one(said, time, rec.raw_span(b)),
    }
}

/// A document the person attached: its title, then its text when it is
/// text, else `[document]`.
fn document(rec: &Rec, b: usize, said: Kind, time: u32, store: &mut Store) -> Result<(), Full> {
    store.open(said, time, 0)?;
    conv::put(store, rec.child(b, TITLE).and_then(|t| rec.value_span(t)))?;
    let source = rec.child(b, SOURCE).filter(|&s| rec.val(s) == Val::Obj);
    let data = source.filter(|&s| rec.word(s, SOURCE_TYPE) == b"text").and_then(|s| rec.child(s, SOURCE_DATA));
    match data {
        Some(d) => conv::put(store, rec.value_span(d))?,
        None => store.put(Span::lit(LIT_DOCUMENT))?,
    }
    store.close();
    Ok(())
}

fn attachment(rec: &Rec, root: usize, time: u32, store: &mut Store, conv: &mut Conv) -> Result<(), Full> {
    let Some(a) = rec.child(root, ATTACHMENT).filter(|&a| rec.val(a) == Val::Obj) else {
        return Ok(());
    };
    match rec.word(a, ATTACHMENT_TYPE) {
        b"queued_command" => queued(rec, root, a, time, store, conv),
        b"hook_system_message" | b"hook_additional_context" => {
            store.open(Kind::System, time, 0)?;
            conv::parts(rec, rec.child(a, ATTACHMENT_CONTENT), PARTS, store)?;
            store.close();
            Ok(())
        }
        t if quiet_attachment(t) => Ok(()),
        t => {
            let text = rec.child(a, ATTACHMENT_CONTENT).is_some() || rec.child(a, PROMPT).is_some();
            conv.drift.unknown(&[b"attachment/", t].concat(), text);
            Ok(())
        }
    }
}

/// A prompt delivered while the model worked. A person's, unless the
/// record says it came from elsewhere (a peer, a task finishing); versions
/// that do not say typed prompts in `prompt` mode.
fn queued(rec: &Rec, root: usize, a: usize, time: u32, store: &mut Store, conv: &mut Conv) -> Result<(), Full> {
    let Some(prompt) = rec.child(a, PROMPT) else { return Ok(()) };
    let human = match rec.child(a, ORIGIN) {
        Some(o) => rec.word(o, ORIGIN_KIND) == b"human",
        None => matches!(rec.word(a, COMMAND_MODE), b"" | b"prompt"),
    };
    let kind = if human && rec.flag(root, META) != Some(true) { Kind::User } else { Kind::System };
    if !conv.queue.deliver(hash(rec.body(prompt))) {
        return Ok(());
    }
    store.open(kind, time, 0)?;
    conv::parts(rec, Some(prompt), PARTS, store)?;
    store.close();
    Ok(())
}

fn queue(rec: &Rec, root: usize, time: u32, store: &mut Store, conv: &mut Conv) -> Result<(), Full> {
    match rec.word(root, OPERATION) {
        b"enqueue" => {
            let content = rec.child(root, RECORD_CONTENT);
            let mut spans = Vec::new();
            conv::parts(rec, content, PARTS, &mut spans)?;
            let hash = content.map_or(0, |c| hash(rec.body(c)));
            conv.queue.enqueue(Pending { hash, spans, delivered: false });
        }
        b"remove" => {
            let Some(p) = conv.queue.pop() else { return Ok(()) };
            if p.delivered || p.spans.is_empty() {
                return Ok(());
            }
            store.open(Kind::User, time, 0)?;
            for s in p.spans {
                store.put(s)?;
            }
            store.close();
            conv.queue.said_at_remove(p.hash);
        }
        b"dequeue" => drop(conv.queue.pop()),
        b"popAll" => conv.queue.clear(),
        _ => {}
    }
    Ok(())
}
