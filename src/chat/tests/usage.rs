//! Usage against totals computed here from the raw records, for every real
//! transcript, by the rules of docs/CHAT.md written again here the plain
//! way: Claude's records once per `uuid` and each reply once per
//! `message.id` and `requestId` at its largest counts; codex's running
//! totals by their growth (a fall is a new series); every pi and omp
//! assistant message's own counts, glued lines' included.

use super::real::{transcripts, DIR};
use super::*;
use crate::chat::usage::Counts;
use serde_json::Value;
use std::collections::HashMap;

/// The JSON values of each complete line: one, or a glued line's several
/// (each marked `true`).
fn values(file: &[u8]) -> Vec<(Value, bool)> {
    let complete = file.iter().rposition(|&c| c == b'\n').map_or(0, |i| i + 1);
    let mut out = Vec::new();
    for l in file[..complete].split(|&c| c == b'\n') {
        let objs: Vec<Value> =
            serde_json::Deserializer::from_slice(l).into_iter::<Value>().map_while(Result::ok).collect();
        let glued = objs.len() > 1;
        out.extend(objs.into_iter().map(|v| (v, glued)));
    }
    out
}

fn n(v: &Value, k: &str) -> u64 {
    v[k].as_u64().unwrap_or(0)
}

/// Totals and per-model counts, as the raw records say them.
/// (Longer than most: the test's own reading of every harness's rules,
/// written apart from the indexer's and kept in one place to compare.)
fn expected(format: Format, vals: &[(Value, bool)]) -> (Counts, HashMap<String, Counts>) {
    let mut models: HashMap<String, Counts> = HashMap::new();
    let mut add = |m: &str, c: Counts| {
        let e = models.entry(if m.is_empty() { "unknown".into() } else { m.into() }).or_default();
        e.iter_mut().zip(c).for_each(|(a, b)| *a += b);
    };
    match format {
        Format::Claude | Format::ClaudeAgent => {
            // A record once per uuid (a glued one is no record, but paid
            // for); a reply once per id and request, each count its
            // largest; a reply without an id each time.
            let mut uuids = std::collections::HashSet::new();
            let mut best: HashMap<String, (String, Counts)> = HashMap::new();
            let mut order = Vec::new();
            for (i, (v, glued)) in vals.iter().enumerate().filter(|(_, (v, _))| v["type"] == "assistant") {
                if let (Some(u), false) = (v["uuid"].as_str(), glued) {
                    if !uuids.insert(u.to_string()) {
                        continue;
                    }
                }
                let (m, u) = (&v["message"], &v["message"]["usage"]);
                if !u.is_object() {
                    continue;
                }
                let c = [
                    n(u, "input_tokens"),
                    n(u, "output_tokens"),
                    n(u, "cache_read_input_tokens"),
                    n(u, "cache_creation_input_tokens"),
                    0,
                ];
                let id = match m["id"].as_str() {
                    Some(id) => format!("{id} {}", v["requestId"].as_str().unwrap_or("")),
                    None => format!("line {i}"),
                };
                let model = m["model"].as_str().unwrap_or("").to_string();
                match best.get_mut(&id) {
                    Some((_, old)) => old.iter_mut().zip(c).for_each(|(o, n)| *o = (*o).max(n)),
                    None => {
                        best.insert(id.clone(), (model, c));
                        order.push(id);
                    }
                }
            }
            for id in order {
                let (m, c) = &best[&id];
                add(m, *c);
            }
        }
        Format::Codex => {
            let (mut model, mut last) = (String::new(), [0u64; 5]);
            for (v, _) in vals {
                if v["type"] == "turn_context" {
                    if let Some(m) = v["payload"]["model"].as_str().filter(|m| !m.is_empty()) {
                        model = m.to_string();
                    }
                }
                let info = &v["payload"]["info"];
                if v["type"] != "event_msg" || v["payload"]["type"] != "token_count" || info.is_null() {
                    continue;
                }
                let t = &info["total_token_usage"];
                let now = [
                    n(t, "input_tokens"),
                    n(t, "output_tokens"),
                    n(t, "cached_input_tokens"),
                    n(t, "cache_write_input_tokens"),
                    n(t, "reasoning_output_tokens"),
                ];
                let fell = now.iter().zip(&last).any(|(a, b)| a < b);
                let grew: Counts = if fell { now } else { std::array::from_fn(|k| now[k] - last[k]) };
                last = now;
                add(&model, grew);
            }
        }
        // No dsh record counts tokens (chat/dsh.rs).
        Format::Dsh => {}
        Format::Pi => {
            for m in vals.iter().filter(|(v, _)| v["type"] == "message").map(|(v, _)| &v["message"]) {
                let u = &m["usage"];
                if m["role"] == "assistant" && u.is_object() {
                    let r = u["reasoningTokens"].as_u64().unwrap_or(n(u, "reasoning"));
                    add(
                        m["model"].as_str().unwrap_or(""),
                        [n(u, "input"), n(u, "output"), n(u, "cacheRead"), n(u, "cacheWrite"), r],
                    );
                }
            }
        }
    }
    let mut total = [0; 5];
    for c in models.values() {
        total.iter_mut().zip(c).for_each(|(a, b)| *a += b);
    }
    (total, models)
}

#[test]
fn every_real_transcripts_usage_is_what_its_raw_records_add_up_to() {
    let all = transcripts();
    if all.is_empty() {
        println!("skipped: no transcripts at {DIR}");
        return;
    }
    let mut counted = 0;
    for (format, path) in all {
        let file = std::fs::read(&path).unwrap();
        let ix = index_in_windows(format, &file, 64 * 1024, crate::chat::scan::Simd::detect());
        let (total, models) = expected(format, &values(&file));
        let name = path.file_name().unwrap().to_string_lossy();
        assert_eq!(ix.usage().total(), total, "{format:?} {name}");
        // Codex: one model per real rollout, so its total is its model's.
        let got: HashMap<String, Counts> = ix
            .usage()
            .models()
            .map(|(m, c)| (String::from_utf8_lossy(m).into_owned(), c))
            .filter(|(_, c)| *c != [0; 5])
            .collect();
        let want: HashMap<String, Counts> = models.into_iter().filter(|(_, c)| *c != [0; 5]).collect();
        assert_eq!(got, want, "{format:?} {name}");
        charges_add_up(ix.usage(), &name);
        if total != [0; 5] {
            counted += 1;
            println!(
                "{format:?} {name}\n{}",
                String::from_utf8_lossy(&ix.usage().render()).lines().take(5).collect::<Vec<_>>().join(" ")
            );
        }
    }
    println!("{counted} transcripts with usage");
}

/// The charges of a usage add up to its counts, model by model: what a
/// report sums by period is what `usage` says.
fn charges_add_up(u: &crate::chat::usage::Usage, name: &str) {
    let mut by_model: HashMap<Vec<u8>, Counts> = HashMap::new();
    for ch in u.charges() {
        let e = by_model.entry(u.model_name(ch.slot).to_vec()).or_default();
        e.iter_mut().zip(ch.counts).for_each(|(a, b)| *a += b);
        assert!(ch.write_1h <= ch.counts[3], "{name}: an hour's writes are part of the writes");
    }
    for (m, c) in u.models() {
        assert_eq!(by_model.get(m).copied().unwrap_or_default(), c, "{name}: {}", String::from_utf8_lossy(m));
    }
}

/// Claude Code 2.1.x: a reply is one charge, at the time of its first
/// record, at its largest counts, its hour-long cache writes apart; the
/// session's working directory is its first record's.
#[test]
fn a_claude_reply_is_one_charge_at_its_first_copys_time_with_its_hour_long_writes() {
    let file = lines(&[
        r#"{"type":"user","timestamp":"2026-11-30T23:59:58.000Z","cwd":"/home/u/shop","uuid":"u1","message":{"content":"hi"}}"#,
        r#"{"type":"assistant","timestamp":"2026-11-30T23:59:59.000Z","cwd":"/home/u/other","uuid":"a1","requestId":"req_1","message":{"id":"m1","model":"claude-opus-4-5","content":[{"type":"thinking","thinking":"x"}],"usage":{"input_tokens":3,"cache_creation_input_tokens":100,"cache_read_input_tokens":1000,"output_tokens":1,"cache_creation":{"ephemeral_5m_input_tokens":40,"ephemeral_1h_input_tokens":60}}}}"#,
        r#"{"type":"assistant","timestamp":"2026-12-01T00:00:04.000Z","uuid":"a2","requestId":"req_1","message":{"id":"m1","model":"claude-opus-4-5","content":[{"type":"text","text":"y"}],"usage":{"input_tokens":3,"cache_creation_input_tokens":100,"cache_read_input_tokens":1000,"output_tokens":250,"cache_creation":{"ephemeral_5m_input_tokens":40,"ephemeral_1h_input_tokens":60}}}}"#,
        r#"{"type":"assistant","timestamp":"2026-12-01T00:10:00.000Z","uuid":"a3","requestId":"req_2","message":{"id":"m2","model":"claude-opus-4-5","content":[],"usage":{"input_tokens":5,"output_tokens":6}}}"#,
    ]);
    let ix = index(Format::Claude, &file);
    let got: Vec<_> = ix.usage().charges().iter().map(|c| (c.time, c.counts, c.write_1h)).collect();
    let t = crate::chat::parse_time(b"2026-11-30T23:59:59.000Z").unwrap();
    assert_eq!(got, vec![(t, [3, 250, 1000, 100, 0], 60), (t + 601, [5, 6, 0, 0, 0], 0)]);
    let keys: Vec<u64> = ix.usage().charges().iter().map(|c| c.key).collect();
    assert!(keys[0] != 0 && keys[1] != 0 && keys[0] != keys[1], "each reply has its own key: {keys:?}");
    assert_eq!(ix.cwd(), b"/home/u/shop");
    charges_add_up(ix.usage(), "fixture");
}

/// Codex 0.17x: a response's key is its id with its thread's, so the same
/// response id in another thread is another reply; a fork's copied totals
/// are taken back as charges too.
#[test]
fn a_codex_records_key_is_its_thread_and_response_and_a_forks_copied_totals_charge_nothing() {
    let fork = |thread: &str| {
        lines(&[
            &format!(
                r#"{{"timestamp":"2026-11-01T12:00:00.000Z","type":"session_meta","payload":{{"id":"{thread}","forked_from_id":"parent","cli_version":"0.176.0","cwd":"/w/{thread}"}}}}"#
            ),
            r#"{"timestamp":"2026-11-01T12:00:00.000Z","type":"turn_context","payload":{"model":"gpt-5.5"}}"#,
            r#"{"timestamp":"2026-11-01T12:00:00.900Z","type":"event_msg","payload":{"type":"token_count","info":{"total_token_usage":{"input_tokens":5000,"output_tokens":500}}}}"#,
            r#"{"timestamp":"2026-11-01T12:00:01.300Z","type":"event_msg","payload":{"type":"token_count","info":{"total_token_usage":{"input_tokens":6000,"output_tokens":600}}}}"#,
            &format!(
                r#"{{"timestamp":"2026-11-01T12:00:07.000Z","type":"token_usage_record","payload":{{"thread_id":"{thread}","response_id":"r1","usage":{{"input_tokens":700,"output_tokens":30}}}}}}"#
            ),
        ])
    };
    let (a, b) = (index(Format::Codex, &fork("a")), index(Format::Codex, &fork("b")));
    let live = |ix: &Index| -> Vec<(u64, Counts)> {
        ix.usage().charges().iter().filter(|c| c.counts != [0; 5]).map(|c| (c.key, c.counts)).collect()
    };
    let (la, lb) = (live(&a), live(&b));
    assert_eq!(la.len(), 1, "{la:?}");
    assert_eq!(la[0].1, [700, 30, 0, 0, 0]);
    assert_ne!(la[0].0, lb[0].0, "one response id in two threads is two replies");
    assert_eq!((a.cwd(), b.cwd()), (&b"/w/a"[..], &b"/w/b"[..]));
    charges_add_up(a.usage(), "fork a");
}

#[test]
fn a_claude_reply_counts_once_with_its_last_records_output() {
    let file = lines(&[
        r#"{"type":"assistant","message":{"id":"m1","model":"opus","content":[{"type":"thinking","thinking":"x"}],"usage":{"input_tokens":3,"cache_creation_input_tokens":100,"cache_read_input_tokens":1000,"output_tokens":1}}}"#,
        r#"{"type":"assistant","message":{"id":"m1","model":"opus","content":[{"type":"text","text":"y"}],"usage":{"input_tokens":3,"cache_creation_input_tokens":100,"cache_read_input_tokens":1000,"output_tokens":250}}}"#,
        r#"{"type":"assistant","isSidechain":true,"message":{"id":"m2","model":"haiku","content":[],"usage":{"input_tokens":5,"output_tokens":6}}}"#,
        r#"{"type":"user","message":{"content":"not counted","usage":{"input_tokens":999}}}"#,
    ]);
    let ix = index(Format::Claude, &file);
    assert_eq!(ix.usage().total(), [8, 256, 1000, 100, 0]);
    assert_eq!(ix.usage().model(b"haiku"), Some([5, 6, 0, 0, 0]), "a sidechain's tokens were spent too");
}

#[test]
fn codex_usage_is_its_last_running_total_and_the_null_ones_say_nothing() {
    let file = lines(&[
        r#"{"timestamp":"2026-02-23T18:22:41.351Z","type":"turn_context","payload":{"cwd":"/x","model":"gpt-5","sandbox_policy":{"type":"workspace-write"}}}"#,
        r#"{"timestamp":"2026-02-23T18:22:42.966Z","type":"event_msg","payload":{"type":"token_count","info":null}}"#,
        r#"{"timestamp":"2026-02-23T18:24:23.800Z","type":"event_msg","payload":{"type":"token_count","info":{"total_token_usage":{"input_tokens":90,"cached_input_tokens":30,"output_tokens":9,"reasoning_output_tokens":4,"total_tokens":99}}}}"#,
        r#"{"timestamp":"2026-02-23T18:24:24.000Z","type":"event_msg","payload":{"type":"agent_message","message":"not a count","info":{"total_token_usage":{"input_tokens":1}}}}"#,
        r#"{"timestamp":"2026-02-23T18:25:00.000Z","type":"event_msg","payload":{"type":"token_count","info":{"total_token_usage":{"input_tokens":190,"cached_input_tokens":130,"output_tokens":19,"reasoning_output_tokens":8}}}}"#,
        r#"{"timestamp":"2026-02-23T18:25:01.000Z","type":"event_msg","payload":{"type":"token_count","info":null}}"#,
    ]);
    let ix = index(Format::Codex, &file);
    assert_eq!(ix.usage().total(), [190, 19, 130, 0, 8]);
    assert_eq!(ix.usage().model(b"gpt-5"), Some([190, 19, 130, 0, 8]));
    assert_eq!(ix.len(), 0, "token counts are no messages");
}

#[test]
fn pi_usage_counts_every_reply_on_every_branch() {
    let file = lines(&[
        r#"{"type":"session","version":3,"id":"s","timestamp":"2026-03-25T13:02:32.145Z","cwd":"/x"}"#,
        r#"{"type":"message","id":"a","parentId":null,"message":{"role":"assistant","content":[],"model":"qwen","usage":{"input":10,"output":1,"cacheRead":5,"cacheWrite":2,"totalTokens":18,"cost":{"input":0.1}}}}"#,
        r#"{"type":"message","id":"b","parentId":null,"message":{"role":"assistant","content":[],"model":"k2","usage":{"input":20,"output":2,"cacheRead":0,"cacheWrite":0,"reasoningTokens":7}}}"#,
    ]);
    let ix = index(Format::Pi, &file);
    assert_eq!(ix.usage().total(), [30, 3, 5, 2, 7], "the left branch's reply was paid for");
    assert_eq!(ix.usage().models().map(|(m, _)| m.to_vec()).collect::<Vec<_>>(), [b"qwen".to_vec(), b"k2".to_vec()]);
}

/// Claude Code 2.1.33x: a second `/compact` in one process re-appends
/// earlier records with their own uuid, parent and time. Each is said and
/// counted once, as Claude Code's own loader keeps the first of each.
#[test]
fn a_claude_session_compacted_twice_says_and_counts_each_record_once() {
    let u1 = r#"{"type":"user","uuid":"u1","parentUuid":null,"timestamp":"2026-11-20T10:00:00.000Z","message":{"role":"user","content":"fix the build"}}"#;
    let a1 = r#"{"type":"assistant","uuid":"a1","parentUuid":"u1","requestId":"req_1","timestamp":"2026-11-20T10:00:05.000Z","message":{"id":"msg_1","model":"claude-opus-4-6","content":[{"type":"text","text":"Done."}],"usage":{"input_tokens":10,"output_tokens":50,"cache_read_input_tokens":1000,"cache_creation_input_tokens":200}}}"#;
    let file = lines(&[
        u1,
        a1,
        r#"{"type":"system","subtype":"compact_boundary","uuid":"c1","content":"Conversation compacted","compactMetadata":{"trigger":"manual"}}"#,
        r#"{"type":"user","uuid":"s1","isCompactSummary":true,"message":{"role":"user","content":"Summary one"}}"#,
        r#"{"type":"system","subtype":"compact_boundary","uuid":"c2","content":"Conversation compacted","compactMetadata":{"trigger":"manual"}}"#,
        // The second compaction re-appends what came before, as it was.
        u1,
        a1,
        r#"{"type":"user","uuid":"s2","isCompactSummary":true,"message":{"role":"user","content":"Summary two"}}"#,
        r#"{"type":"user","uuid":"u2","timestamp":"2026-11-20T11:00:00.000Z","message":{"role":"user","content":"thanks"}}"#,
    ]);
    let mut ix = index(Format::Claude, &file);
    assert_eq!(
        names(&ix),
        "00000000-user 00000001-assistant 00000002-system 00000003-system 00000004-system 00000005-system 00000006-user"
    );
    assert_eq!(text(&mut ix, &file, 5), "Summary two\n");
    assert_eq!(ix.usage().total(), [10, 50, 1000, 200, 0], "the reply once");
}

/// A reply's records need not be adjacent: streamed copies of one reply
/// interleaved with another's, and a copy in another place of the file,
/// count once each at their largest counts.
#[test]
fn a_claude_reply_counts_once_wherever_its_copies_are() {
    let rec = |uuid: &str, id: &str, req: &str, out: u32| {
        format!(
            r#"{{"type":"assistant","uuid":"{uuid}","requestId":"{req}","message":{{"id":"{id}","model":"m","content":[],"usage":{{"input_tokens":5,"output_tokens":{out},"cache_read_input_tokens":0,"cache_creation_input_tokens":0}}}}}}"#
        )
    };
    let recs = [
        rec("1", "msg_a", "req_a", 1),
        rec("2", "msg_b", "req_b", 1),
        rec("3", "msg_a", "req_a", 40),
        rec("4", "msg_b", "req_b", 7),
        rec("5", "msg_a", "req_a", 12),
        // The same message id answering another request is another reply.
        rec("6", "msg_a", "req_c", 3),
    ];
    let file = lines(&recs.iter().map(String::as_str).collect::<Vec<_>>());
    let ix = index(Format::Claude, &file);
    assert_eq!(ix.usage().total(), [15, 50, 0, 0, 0]);
}

/// Codex 0.17x `cache_write_input_tokens`, in a running total and in a
/// response's record.
#[test]
fn codex_cache_writes_are_counted() {
    let file = lines(&[
        r#"{"timestamp":"2026-11-01T10:00:00.000Z","type":"turn_context","payload":{"model":"gpt-5.5"}}"#,
        r#"{"timestamp":"2026-11-01T10:00:01.000Z","type":"event_msg","payload":{"type":"token_count","info":{"total_token_usage":{"input_tokens":300,"cached_input_tokens":100,"cache_write_input_tokens":20,"output_tokens":10,"reasoning_output_tokens":2,"total_tokens":310}}}}"#,
    ]);
    assert_eq!(index(Format::Codex, &file).usage().total(), [300, 10, 100, 20, 2]);
}

/// A rollout whose last `token_count` is a reset (zeros after earlier
/// counts): what was spent before it stays, and the totals are the sum of
/// the per-model lines.
#[test]
fn a_codex_reset_erases_nothing_and_the_totals_agree_with_the_models() {
    let file = lines(&[
        r#"{"timestamp":"2026-11-01T10:00:00.000Z","type":"turn_context","payload":{"model":"gpt-5.5"}}"#,
        r#"{"timestamp":"2026-11-01T10:00:01.000Z","type":"event_msg","payload":{"type":"token_count","info":{"total_token_usage":{"input_tokens":16341,"cached_input_tokens":9000,"output_tokens":400,"reasoning_output_tokens":30}}}}"#,
        r#"{"timestamp":"2026-11-01T10:00:02.000Z","type":"event_msg","payload":{"type":"token_count","info":{"total_token_usage":{"input_tokens":0,"cached_input_tokens":0,"output_tokens":0,"reasoning_output_tokens":0}}}}"#,
    ]);
    let ix = index(Format::Codex, &file);
    assert_eq!(ix.usage().total(), [16341, 400, 9000, 0, 30]);
    assert_eq!(ix.usage().model(b"gpt-5.5"), Some(ix.usage().total()));
}

/// Codex 0.17x: a thread counts its own `token_usage_record`s, once per
/// response; a parent's copied into a fork or a child's forwarded to its
/// parent are another thread's; the running totals written beside them
/// count nothing more.
#[test]
fn codex_records_count_a_threads_own_responses_once() {
    let file = lines(&[
        r#"{"timestamp":"2026-11-01T10:00:00.000Z","ordinal":0,"type":"session_meta","payload":{"id":"019a0000-0000-7000-8000-00000000000a","cli_version":"0.176.0","cwd":"/w"}}"#,
        r#"{"timestamp":"2026-11-01T10:00:00.100Z","ordinal":1,"type":"turn_context","payload":{"model":"gpt-5.5"}}"#,
        r#"{"timestamp":"2026-11-01T10:00:03.000Z","ordinal":2,"type":"token_usage_record","payload":{"thread_id":"019a0000-0000-7000-8000-00000000000a","turn_id":"t1","response_id":"resp_1","usage":{"input_tokens":1000,"cached_input_tokens":800,"cache_write_input_tokens":0,"output_tokens":50,"reasoning_output_tokens":10,"total_tokens":1050}}}"#,
        r#"{"timestamp":"2026-11-01T10:00:03.001Z","ordinal":3,"type":"event_msg","payload":{"type":"token_count","info":{"total_token_usage":{"input_tokens":1000,"cached_input_tokens":800,"output_tokens":50,"reasoning_output_tokens":10,"total_tokens":1050}}}}"#,
        r#"{"timestamp":"2026-11-01T10:00:04.000Z","ordinal":4,"type":"token_usage_record","payload":{"thread_id":"019a0000-0000-7000-8000-00000000000a","turn_id":"t1","response_id":"resp_1","usage":{"input_tokens":1000,"cached_input_tokens":800,"cache_write_input_tokens":0,"output_tokens":50,"reasoning_output_tokens":10,"total_tokens":1050}}}"#,
        r#"{"timestamp":"2026-11-01T10:00:05.000Z","ordinal":5,"type":"token_usage_record","payload":{"thread_id":"019a0000-0000-7000-8000-00000000000c","parent_thread_id":"019a0000-0000-7000-8000-00000000000a","response_id":"resp_child","usage":{"input_tokens":99999,"output_tokens":9999}}}"#,
        r#"{"timestamp":"2026-11-01T10:00:09.000Z","ordinal":6,"type":"token_usage_record","payload":{"thread_id":"019a0000-0000-7000-8000-00000000000a","turn_id":"t2","response_id":"resp_2","usage":{"input_tokens":1200,"cached_input_tokens":1000,"cache_write_input_tokens":100,"output_tokens":20,"reasoning_output_tokens":0}}}"#,
        r#"{"timestamp":"2026-11-01T10:00:09.001Z","ordinal":7,"type":"event_msg","payload":{"type":"token_count","info":{"total_token_usage":{"input_tokens":2200,"cached_input_tokens":1800,"cache_write_input_tokens":100,"output_tokens":70,"reasoning_output_tokens":10}}}}"#,
    ]);
    let ix = index(Format::Codex, &file);
    assert_eq!(ix.usage().total(), [2200, 70, 1800, 100, 10]);
    assert_eq!(ix.drift().version.map(|v| v.to_string()).as_deref(), Some("0.176.0"));
}

/// A forked child (`spawn_agent` with `fork_turns`, or `/fork`) starts with
/// its parent's history, token counts included, and its totals continue
/// from the parent's: only what it spent past the fork is its own.
#[test]
fn a_codex_fork_counts_only_what_it_spent_past_the_fork() {
    let parent_count = |t: &str, input: u32, output: u32| {
        format!(
            r#"{{"timestamp":"{t}","type":"event_msg","payload":{{"type":"token_count","info":{{"total_token_usage":{{"input_tokens":{input},"cached_input_tokens":0,"output_tokens":{output},"reasoning_output_tokens":0}}}}}}}}"#
        )
    };
    let head = [
        r#"{"timestamp":"2026-10-01T12:00:00.000Z","type":"session_meta","payload":{"id":"child","forked_from_id":"parent","timestamp":"2026-10-01T12:00:00.000Z","cli_version":"0.146.0"}}"#.to_string(),
        // The parent's history, copied with its own times.
        r#"{"timestamp":"2026-10-01T09:00:00.000Z","type":"session_meta","payload":{"id":"parent","cli_version":"0.146.0"}}"#.to_string(),
        r#"{"timestamp":"2026-10-01T09:00:01.000Z","type":"turn_context","payload":{"model":"gpt-5.5"}}"#.to_string(),
        parent_count("2026-10-01T09:00:02.000Z", 1000, 100),
        parent_count("2026-10-01T09:30:00.000Z", 3000, 300),
    ];
    let own = [
        r#"{"timestamp":"2026-10-01T12:00:05.000Z","type":"turn_context","payload":{"model":"gpt-5.5"}}"#.to_string(),
        parent_count("2026-10-01T12:00:09.000Z", 3500, 320),
        parent_count("2026-10-01T12:01:00.000Z", 4200, 350),
    ];
    let all: Vec<&str> = head.iter().chain(&own).map(String::as_str).collect();
    let ix = index(Format::Codex, &lines(&all));
    assert_eq!(ix.usage().total(), [1200, 50, 0, 0, 0], "the growth past the parent's 3000/300");
    // The same when the copied history was stamped with the fork's own time.
    let restamped: Vec<String> = head
        .iter()
        .map(|l| {
            ["09:00:00", "09:00:01", "09:00:02", "09:30:00"].iter().fold(l.clone(), |l, t| l.replace(t, "12:00:00"))
        })
        .collect();
    let all: Vec<&str> = restamped.iter().chain(&own).map(String::as_str).collect();
    assert_eq!(index(Format::Codex, &lines(&all)).usage().total(), [1200, 50, 0, 0, 0]);
}

/// Codex 0.17x forks: the parent's copied token counts come before the
/// child's first record of its own, however they were stamped; from that
/// record on the child counts its records alone, and what the copied
/// counts seemed to add is taken back.
#[test]
fn a_codex_fork_that_writes_records_counts_its_records_alone() {
    let file = lines(&[
        r#"{"timestamp":"2026-11-01T12:00:00.000Z","type":"session_meta","payload":{"id":"child","forked_from_id":"parent","cli_version":"0.176.0"}}"#,
        r#"{"timestamp":"2026-11-01T12:00:00.000Z","type":"session_meta","payload":{"id":"parent","cli_version":"0.176.0"}}"#,
        r#"{"timestamp":"2026-11-01T12:00:00.000Z","type":"turn_context","payload":{"model":"gpt-5.5"}}"#,
        r#"{"timestamp":"2026-11-01T12:00:00.900Z","type":"event_msg","payload":{"type":"token_count","info":{"total_token_usage":{"input_tokens":5000,"output_tokens":500}}}}"#,
        // The copy took more than a second: a copied count stamped later.
        r#"{"timestamp":"2026-11-01T12:00:01.300Z","type":"event_msg","payload":{"type":"token_count","info":{"total_token_usage":{"input_tokens":6000,"output_tokens":600}}}}"#,
        r#"{"timestamp":"2026-11-01T12:00:07.000Z","type":"token_usage_record","payload":{"thread_id":"child","response_id":"r1","usage":{"input_tokens":700,"output_tokens":30}}}"#,
        r#"{"timestamp":"2026-11-01T12:00:07.001Z","type":"event_msg","payload":{"type":"token_count","info":{"total_token_usage":{"input_tokens":6700,"output_tokens":630}}}}"#,
    ]);
    assert_eq!(index(Format::Codex, &file).usage().total(), [700, 30, 0, 0, 0]);
}

#[test]
fn a_token_count_read_from_inside_its_total_says_what_walking_it_says() {
    // Codex's own spelling is read from inside the running total without
    // walking what leads to it; any other spelling is walked. Both must
    // say the same, and what is not a token count must not be taken for one.
    let compact = r#"{"timestamp":"2026-11-01T10:00:01.000Z","type":"event_msg","payload":{"type":"token_count","info":{"total_token_usage":{"input_tokens":16341,"cached_input_tokens":9000,"output_tokens":400,"reasoning_output_tokens":30},"last_token_usage":{"input_tokens":1,"output_tokens":1}}}}"#;
    let spaced = compact.replace(r#""payload":{"#, r#""payload": {"#).replace(r#""info":{"#, r#""info": {"#);
    let reordered = r#"{"timestamp":"2026-11-01T10:00:01.000Z","type":"event_msg","payload":{"info":{"last_token_usage":{"input_tokens":1},"total_token_usage":{"input_tokens":16341,"cached_input_tokens":9000,"output_tokens":400,"reasoning_output_tokens":30}},"type":"token_count"}}"#;
    // Past the jump, a total that is not flat digits is walked too.
    let inner = |from: &str, to: &str| compact.replacen(from, to, 1);
    let walked_inside = [
        inner(r#""input_tokens":16341"#, r#""input_tokens": 16341"#),
        inner(r#""output_tokens":400"#, r#""output_tokens":400,"detail":{"a":1}"#),
        inner(r#""output_tokens":400"#, r#""output_tokens":400,"note":"x""#),
        inner(r#""output_tokens":400"#, r#""output_tokens":400,"output_tokens":7"#),
        inner(r#""output_tokens":400"#, r#""output_tokens":400,"ratio":0.5"#),
        inner(r#""output_tokens":400"#, r#""output_tokens":400,"out\u0070ut":7"#),
    ];
    let all = [compact.to_string(), spaced, reordered.to_string()].into_iter().chain(walked_inside);
    for line in all {
        let file = lines(&[&line]);
        assert_eq!(index(Format::Codex, &file).usage().total(), [16341, 400, 9000, 0, 30], "{line}");
    }
    let not_counts = [
        r#"{"timestamp":"2026-11-01T10:00:01.000Z","type":"event_msg","payload":{"type":"token_count","info":null,"rate_limits":{"total_token_usage":{"input_tokens":5}}}}"#,
        r#"{"timestamp":"2026-11-01T10:00:01.000Z","type":"event_msg","payload":{"type":"token_counts","info":{"total_token_usage":{"input_tokens":5}}}}"#,
        r#"{"timestamp":"2026-11-01T10:00:01.000Z","type":"event_msg","payload":{"type":"agent_message","message":"{\"total_token_usage\":{\"input_tokens\":5}}"}}"#,
    ];
    for line in not_counts {
        let file = lines(&[line]);
        assert_eq!(index(Format::Codex, &file).usage().total(), [0; 5], "{line}");
    }
}
