//! Usage against totals computed here from the raw records, for every real
//! transcript: Claude's last record of each `message.id`, codex's last
//! running total, every pi and omp assistant message's own counts.

use super::real::{transcripts, DIR};
use super::*;
use crate::chat::usage::Counts;
use serde_json::Value;
use std::collections::HashMap;

/// The first JSON value of each complete line.
fn values(file: &[u8]) -> Vec<Value> {
    let complete = file.iter().rposition(|&c| c == b'\n').map_or(0, |i| i + 1);
    let first = |l: &[u8]| serde_json::Deserializer::from_slice(l).into_iter::<Value>().next().and_then(Result::ok);
    file[..complete].split(|&c| c == b'\n').filter_map(first).collect()
}

fn n(v: &Value, k: &str) -> u64 {
    v[k].as_u64().unwrap_or(0)
}

/// Totals and per-model counts, as the raw records say them.
fn expected(format: Format, vals: &[Value]) -> (Counts, HashMap<String, Counts>) {
    let mut models: HashMap<String, Counts> = HashMap::new();
    let mut add = |m: &str, c: Counts| {
        let e = models.entry(if m.is_empty() { "unknown".into() } else { m.into() }).or_default();
        e.iter_mut().zip(c).for_each(|(a, b)| *a += b);
    };
    match format {
        Format::Claude | Format::ClaudeAgent => {
            // Every id once, its last record; a reply without an id each time.
            let mut last: HashMap<String, (String, Counts)> = HashMap::new();
            let mut order = Vec::new();
            for (i, v) in vals.iter().enumerate().filter(|(_, v)| v["type"] == "assistant") {
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
                let id = m["id"].as_str().map_or(format!("line {i}"), str::to_string);
                let model = m["model"].as_str().unwrap_or("").to_string();
                if last.insert(id.clone(), (model, c)).is_none() {
                    order.push(id);
                }
            }
            for id in order {
                let (m, c) = &last[&id];
                add(m, *c);
            }
        }
        Format::Codex => {
            let last = vals.iter().rev().find(|v| {
                v["type"] == "event_msg" && v["payload"]["type"] == "token_count" && !v["payload"]["info"].is_null()
            });
            let model =
                vals.iter().rev().find(|v| v["type"] == "turn_context").and_then(|v| v["payload"]["model"].as_str());
            if let Some(t) = last.map(|v| &v["payload"]["info"]["total_token_usage"]) {
                let c = [
                    n(t, "input_tokens"),
                    n(t, "output_tokens"),
                    n(t, "cached_input_tokens"),
                    0,
                    n(t, "reasoning_output_tokens"),
                ];
                add(model.unwrap_or(""), c);
            }
        }
        Format::Pi => {
            for m in vals.iter().filter(|v| v["type"] == "message").map(|v| &v["message"]) {
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
