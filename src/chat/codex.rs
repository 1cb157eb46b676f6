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
use super::walk::{Jump, Node, Peek, Rec, Schema, Val, LEAF};
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
/// `session_meta`'s thread id, its fork's parent and the harness's
/// version; a `token_usage_record`'s thread, response and usage; the
/// cache writes of a total or a record.
const ID: u8 = 26;
const FORKED_FROM: u8 = 27;
const CLI_VERSION: u8 = 28;
const THREAD_ID: u8 = 29;
const RESPONSE_ID: u8 = 30;
const CACHE_WRITE: u8 = 31;
/// `session_meta`'s working directory.
const CWD: u8 = 32;

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
pub(crate) static SCHEMA: Schema =
    Schema::new(&NODES, TYPE, walked, nested).enough_after(&[TOTAL], enough).peeking(peek);

/// Of codex's `event_msg`s (a third of a rollout's lines) only the token
/// counts are read, and codex writes every one the same way: its type
/// right after the record's. So the bytes after the record's type say,
/// without walking them, whether the rest matters, and a token count's
/// walk starts inside its running total. Anything written otherwise is
/// walked as any record is.
fn peek(record: &[u8], after: &[u8]) -> Peek {
    const EVENT: &[u8] = br#","payload":{"type":""#;
    static TOKEN_COUNT: Jump =
        Jump::new(br#","payload":{"type":"token_count","info":{"total_token_usage":{"#, &[PAYLOAD, INFO, TOTAL]);
    if record != b"event_msg" {
        return Peek::Walk;
    }
    if after.starts_with(TOKEN_COUNT.template()) {
        return Peek::Jump(&TOKEN_COUNT);
    }
    match after.strip_prefix(EVENT) {
        Some(ty) if !ty.starts_with(b"token_count\"") => Peek::Stop,
        _ => Peek::Walk,
    }
}

/// A token count needs its running total and nothing after it (its last
/// usage, its rate limits); a response's record needs more (its ids may
/// come after its usage), so only the event stops there.
fn enough(record: &[u8], sid: u8) -> bool {
    sid == TOTAL && record == b"event_msg"
}

/// The record types that can hold a message: items, wrapped or bare, a
/// compaction's summary, and another agent's words.
fn wanted(ty: &[u8]) -> bool {
    matches!(ty, b"response_item" | b"compacted" | b"inter_agent_communication") || is_item(ty)
}

/// The records worth walking: those that hold messages, those that count
/// tokens (the turn's model, the running total, a response's record), the
/// thread's own (`session_meta`), and any type no rule knows (so that
/// `/health` can say whether it held text).
fn walked(ty: &[u8]) -> bool {
    wanted(ty) || matches!(ty, b"event_msg" | b"turn_context" | b"session_meta" | b"token_usage_record") || !known(ty)
}

/// Every top-level type codex writes, as of 0.17x (docs/CHAT.md says what
/// each is); a legacy rollout's bare items and header too.
fn known(ty: &[u8]) -> bool {
    matches!(
        ty,
        b"session_meta"
            | b"response_item"
            | b"event_msg"
            | b"turn_context"
            | b"compacted"
            | b"world_state"
            | b"token_usage_record"
            | b"inter_agent_communication"
            | b"inter_agent_communication_metadata"
            | b"dynamic_tools_updated"
            | b"retained_context"
            | b"security_risk_score"
            | b"realtime_item"
    ) || is_item(ty)
}

/// Of the UI's events, only the token counts are read.
fn nested(record: &[u8], ty: &[u8]) -> bool {
    record != b"event_msg" || ty == b"token_count"
}

static NODES: [Node; 33] = {
    let mut s = [LEAF; 33];
    s[ROOT as usize] = Node { keys: item_keys!((b"timestamp", TIMESTAMP), (b"payload", PAYLOAD),), elem: 0 };
    s[PAYLOAD as usize] = Node {
        keys: item_keys!(
            (b"model", MODEL),
            (b"info", INFO),
            (b"id", ID),
            (b"forked_from_id", FORKED_FROM),
            (b"cli_version", CLI_VERSION),
            (b"thread_id", THREAD_ID),
            (b"response_id", RESPONSE_ID),
            (b"usage", TOTAL),
            (b"cwd", CWD),
        ),
        elem: 0,
    };
    s[INFO as usize] = Node { keys: &[(b"total_token_usage", TOTAL)], elem: 0 };
    s[TOTAL as usize] = Node {
        keys: &[
            (b"input_tokens", INPUT_TOKENS),
            (b"cached_input_tokens", CACHED_INPUT),
            (b"output_tokens", OUTPUT_TOKENS),
            (b"reasoning_output_tokens", REASONING),
            (b"cache_write_input_tokens", CACHE_WRITE),
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
    if let Some(p) = payload {
        count(rec, ty, p, conv)?;
    }
    if rec.glued || !wanted(ty) {
        if !known(ty) && rec.child(root, TIMESTAMP).is_some() {
            // A wrapped record of a type no rule knows.
            let text = payload.is_some_and(|p| [CONTENT, MESSAGE].iter().any(|&k| rec.child(p, k).is_some()));
            conv.drift.unknown(ty, text);
        }
        return Ok(());
    }
    let time = conv.time();
    let item = match (ty, payload) {
        (b"response_item", Some(p)) => p,
        (b"compacted", Some(p)) => {
            let summary = rec.child(p, MESSAGE).filter(|&m| rec.entries[m].out > 0);
            return store.one(Kind::System, time, summary.and_then(|m| rec.value_span(m)));
        }
        (b"inter_agent_communication", Some(p)) => {
            // Another agent's words, persisted as this record alone (codex
            // records no response item for it): docs/CHAT.md.
            store.open(Kind::Agent, time, 0)?;
            conv::put(store, rec.child(p, AUTHOR).and_then(|a| rec.value_span(a)))?;
            conv::parts(rec, rec.child(p, CONTENT), PARTS, store)?;
            store.close();
            return Ok(());
        }
        (_, None) if is_item(ty) => root,
        _ => return Ok(()),
    };
    item_line(rec, item, time, store, conv)
}

/// Tokens (`usage::Running`): the thread's id and whether it is a fork; a
/// turn's model; a `token_count`'s running total; a response's own record.
fn count(rec: &Rec, ty: &[u8], payload: usize, conv: &mut Conv) -> Result<(), Full> {
    let counts = |t: usize| {
        rec.uints(t, [INPUT_TOKENS, OUTPUT_TOKENS, CACHED_INPUT, CACHE_WRITE, REASONING]).map(|n| n.unwrap_or(0))
    };
    match ty {
        b"session_meta" => {
            conv.drift.version(rec.word(payload, CLI_VERSION));
            let forked = !rec.word(payload, FORKED_FROM).is_empty();
            let time = conv.time();
            conv.running.meta(hash(rec.word(payload, ID)), forked, time);
            conv.cwd(rec.word(payload, CWD));
        }
        b"turn_context" => conv.running.set_model(rec.word(payload, MODEL)),
        b"event_msg" => {
            let info = rec.child(payload, INFO).filter(|&i| rec.val(i) == Val::Obj);
            let Some(t) = info.and_then(|i| rec.child(i, TOTAL)).filter(|&t| rec.val(t) == Val::Obj) else {
                return Ok(());
            };
            let time = conv.time();
            conv.running.total(&mut conv.usage, &counts(t), time);
        }
        b"token_usage_record" => {
            let Some(u) = rec.child(payload, TOTAL).filter(|&u| rec.val(u) == Val::Obj) else { return Ok(()) };
            // A response once (`dedupe::Seen`), and only the thread's own.
            let thread = hash(rec.word(payload, THREAD_ID));
            let response = rec.word(payload, RESPONSE_ID);
            if conv.running.owns(thread) && conv.seen.first(hash(response))? {
                let own = conv.running.own.unwrap_or(thread);
                let key = if response.is_empty() { 0 } else { hash(response) ^ own.rotate_left(17) };
                let time = conv.time();
                conv.running.record(&mut conv.usage, key, time, &counts(u));
            }
        }
        _ => {}
    }
    Ok(())
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
