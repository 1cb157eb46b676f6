//! Codex rollouts: which records are the conversation, and how each
//! becomes a message.
//!
//! The conversation is the `response_item`s: what codex sends the model
//! and what the model sends back. Every other record — `session_meta`
//! (repeated on every resume), `turn_context`, `world_state`, `event_msg`
//! (the UI's copies of the items, token counts) and a compaction's
//! replacement history — is bookkeeping. A compaction's own summary text,
//! when it has one, is the harness speaking. Rollouts written before the
//! `{timestamp, type, payload}` envelope (September 2025) hold the items
//! bare, one per line, and are read the same way. docs/CHAT.md has the
//! whole table. The usage is the last `token_count` event's running total
//! (the only event walked past its type), by the model `turn_context`
//! names.

use super::conv::{self, Call, Conv, PartKeys};
use super::store::{hash, Full, Store};
use super::walk::{Node, Rec, Schema, Val, LEAF};
use super::Kind;

const ROOT: u8 = 1;
const TYPE: u8 = 2;
const TIMESTAMP: u8 = 3;
const PAYLOAD: u8 = 4;
const ROLE: u8 = 5;
const CONTENT: u8 = 6;
const SUMMARY: u8 = 7;
const NAME: u8 = 8;
const ARGUMENTS: u8 = 9;
const INPUT: u8 = 10;
const CALL_ID: u8 = 11;
const OUTPUT: u8 = 12;
const ACTION: u8 = 13;
const AUTHOR: u8 = 14;
const MESSAGE: u8 = 15;
const PART: u8 = 16;
const PART_TYPE: u8 = 17;
const PART_TEXT: u8 = 18;
/// `turn_context`'s model; a `token_count`'s running total.
const MODEL: u8 = 19;
const INFO: u8 = 20;
const TOTAL: u8 = 21;
const INPUT_TOKENS: u8 = 22;
const CACHED_INPUT: u8 = 23;
const OUTPUT_TOKENS: u8 = 24;
const REASONING: u8 = 25;

/// The keys of an item, wrapped in a payload or (legacy) bare.
macro_rules! item_keys {
    ($($extra:tt)*) => {
        &[
            $($extra)*
            (b"type", TYPE),
            (b"role", ROLE),
            (b"content", CONTENT),
            (b"summary", SUMMARY),
            (b"name", NAME),
            (b"arguments", ARGUMENTS),
            (b"input", INPUT),
            (b"call_id", CALL_ID),
            (b"output", OUTPUT),
            (b"action", ACTION),
            (b"author", AUTHOR),
            (b"message", MESSAGE),
        ]
    };
}

/// The schema of a codex record.
pub(crate) static SCHEMA: Schema = Schema::new(&NODES, TYPE, walked, nested);

/// The record types that can hold a message: items, wrapped or bare, and
/// a compaction's summary.
fn wanted(ty: &[u8]) -> bool {
    matches!(ty, b"response_item" | b"compacted") || is_item(ty)
}

/// The records worth walking: those that hold messages, and those that
/// count tokens (the turn's model, the running total).
fn walked(ty: &[u8]) -> bool {
    wanted(ty) || matches!(ty, b"event_msg" | b"turn_context")
}

/// Of the UI's events, only the token counts are read.
fn nested(record: &[u8], ty: &[u8]) -> bool {
    record != b"event_msg" || ty == b"token_count"
}

static NODES: [Node; 26] = {
    let mut s = [LEAF; 26];
    s[ROOT as usize] = Node { keys: item_keys!((b"timestamp", TIMESTAMP), (b"payload", PAYLOAD),), elem: 0 };
    s[PAYLOAD as usize] = Node { keys: item_keys!((b"model", MODEL), (b"info", INFO),), elem: 0 };
    s[INFO as usize] = Node { keys: &[(b"total_token_usage", TOTAL)], elem: 0 };
    s[TOTAL as usize] = Node {
        keys: &[
            (b"input_tokens", INPUT_TOKENS),
            (b"cached_input_tokens", CACHED_INPUT),
            (b"output_tokens", OUTPUT_TOKENS),
            (b"reasoning_output_tokens", REASONING),
        ],
        elem: 0,
    };
    s[CONTENT as usize] = Node { keys: &[], elem: PART };
    s[SUMMARY as usize] = Node { keys: &[], elem: PART };
    s[OUTPUT as usize] = Node { keys: &[], elem: PART };
    s[PART as usize] = Node { keys: &[(b"type", PART_TYPE), (b"text", PART_TEXT)], elem: 0 };
    s
};

const PARTS: PartKeys = PartKeys { ty: PART_TYPE, text: PART_TEXT };

/// The openings codex gives what it writes in the user's role: the
/// AGENTS.md it loaded, the environment, plugin lists, notices that a
/// subagent finished or a turn was interrupted, a review's findings.
const INJECTED: [&[u8]; 8] = [
    b"# AGENTS.md instructions",
    b"<environment_context>",
    b"<user_instructions>",
    b"<codex_internal_context",
    b"<recommended_plugins>",
    b"<subagent_notification>",
    b"<turn_aborted>",
    b"<user_action>",
];

/// The messages of one record.
pub(crate) fn line(rec: &Rec, store: &mut Store, conv: &mut Conv) -> Result<(), Full> {
    let Some(root) = rec.root() else { return Ok(()) };
    conv.stamp(rec.word(root, TIMESTAMP));
    let ty = rec.word(root, TYPE);
    let payload = rec.child(root, PAYLOAD).filter(|&p| rec.val(p) == Val::Obj);
    if let (b"turn_context" | b"event_msg", Some(p)) = (ty, payload) {
        count(rec, ty, p, conv);
    }
    if !wanted(ty) {
        return Ok(());
    }
    let time = conv.time();
    let item = match (ty, payload) {
        (b"response_item", Some(p)) => p,
        (b"compacted", Some(p)) => {
            let summary = rec.child(p, MESSAGE).filter(|&m| rec.entries[m].out > 0);
            return store.one(Kind::System, time, summary.and_then(|m| rec.value_span(m)));
        }
        (_, None) if is_item(ty) => root,
        _ => return Ok(()),
    };
    item_line(rec, item, time, store, conv)
}

/// Tokens: a turn names its model; a `token_count` whose `info` is not
/// null carries the session's running total, and the last one is the
/// session's usage (what it grew by goes to the turn's model).
fn count(rec: &Rec, ty: &[u8], payload: usize, conv: &mut Conv) {
    if ty == b"turn_context" {
        let model = rec.word(payload, MODEL);
        if !model.is_empty() {
            conv.tally.model = model.to_vec();
        }
        return;
    }
    let info = rec.child(payload, INFO).filter(|&i| rec.val(i) == Val::Obj);
    let Some(t) = info.and_then(|i| rec.child(i, TOTAL)).filter(|&t| rec.val(t) == Val::Obj) else { return };
    let n = |k: u8| rec.uint(t, k).unwrap_or(0);
    let c = [n(INPUT_TOKENS), n(OUTPUT_TOKENS), n(CACHED_INPUT), 0, n(REASONING)];
    let slot = conv.usage.slot(&conv.tally.model);
    conv.usage.set_total(slot, &c);
}

/// Whether a bare record of this type is an item (a legacy rollout's).
fn is_item(ty: &[u8]) -> bool {
    matches!(ty, b"message" | b"reasoning" | b"agent_message") || ty.ends_with(b"_call") || ty.ends_with(b"_output")
}

fn item_line(rec: &Rec, item: usize, time: u32, store: &mut Store, conv: &mut Conv) -> Result<(), Full> {
    let ty = rec.word(item, TYPE);
    let call = |name: Option<usize>, input: Option<usize>, tool: &[u8]| Call {
        tool: tool.to_vec(),
        id: hash(rec.word(item, CALL_ID)),
        name,
        input,
        whole: Some(item),
    };
    match ty {
        b"message" => message(rec, item, time, store),
        b"reasoning" => {
            // The summary, where codex wrote one, and reasoning in the
            // clear; the encrypted reasoning is nothing a reader could use.
            store.open(Kind::Thinking, time, 0)?;
            for k in [SUMMARY, CONTENT] {
                let parts = rec.child(item, k).filter(|&p| rec.val(p) == Val::Arr);
                for el in parts.into_iter().flat_map(|p| rec.items(p)) {
                    let text = rec.child(el, PART_TEXT).filter(|&t| rec.val(t) == Val::Str);
                    conv::put(store, text.and_then(|t| rec.str_span(t)))?;
                }
            }
            store.close();
            Ok(())
        }
        b"agent_message" => {
            store.open(Kind::Agent, time, 0)?;
            conv::put(store, rec.child(item, AUTHOR).and_then(|a| rec.value_span(a)))?;
            conv::parts(rec, rec.child(item, CONTENT), PARTS, store)?;
            store.close();
            Ok(())
        }
        // Snapshots, encrypted compactions and request settings: nothing
        // anyone said.
        b"ghost_snapshot"
        | b"compaction"
        | b"context_compaction"
        | b"compaction_trigger"
        | b"configuration_update"
        | b"additional_tools" => Ok(()),
        b"function_call" => {
            let c = call(rec.child(item, NAME), rec.child(item, ARGUMENTS), rec.word(item, NAME));
            conv::call(rec, c, time, store, conv)
        }
        b"custom_tool_call" => {
            let c = call(rec.child(item, NAME), rec.child(item, INPUT), rec.word(item, NAME));
            conv::call(rec, c, time, store, conv)
        }
        t if t.ends_with(b"_output") => {
            let (id, output) = (rec.word(item, CALL_ID), rec.child(item, OUTPUT));
            conv::result(rec, id, output.or(Some(item)), PARTS, time, store, conv)
        }
        t if t.ends_with(b"_call") => {
            // web_search_call, local_shell_call, tool_search_call, ...: no
            // name of their own, so the type names the tool, and the
            // action (or arguments, or input) is what it was asked.
            let input = [ACTION, ARGUMENTS, INPUT].into_iter().find_map(|k| rec.child(item, k));
            let c = call(rec.child(item, TYPE), input, &t[..t.len() - b"_call".len()]);
            conv::call(rec, c, time, store, conv)
        }
        // An item this does not know is still something said to or by the
        // model: served as its JSON rather than dropped.
        _ => store.one(Kind::System, time, rec.raw_span(item)),
    }
}

/// A message: user (unless codex wrote it), assistant (whatever its
/// `phase`), or developer and system.
fn message(rec: &Rec, item: usize, time: u32, store: &mut Store) -> Result<(), Full> {
    let content = rec.child(item, CONTENT);
    let kind = match rec.word(item, ROLE) {
        b"user" if injected(rec, content) => Kind::System,
        b"user" => Kind::User,
        b"assistant" => Kind::Assistant,
        _ => Kind::System,
    };
    store.open(kind, time, 0)?;
    conv::parts(rec, content, PARTS, store)?;
    store.close();
    Ok(())
}

/// Whether a user-role message is codex speaking: its first text opens
/// with one of codex's own wrappers.
fn injected(rec: &Rec, content: Option<usize>) -> bool {
    let Some(first) = content.filter(|&c| rec.val(c) == Val::Arr).and_then(|c| rec.items(c).next()) else {
        return false;
    };
    let text = if rec.val(first) == Val::Str { rec.body(first) } else { rec.word(first, PART_TEXT) };
    INJECTED.iter().any(|m| text.starts_with(m))
}
