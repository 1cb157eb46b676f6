//! The generated home the usage and search benches read: Claude Code
//! sessions whose sizes follow a real home's (most small, a long tail:
//! eleven in twelve of 40–400 KB, one in twelve 0.4–4 MB, one in 200 of
//! 20–90 MB), each with its own reply ids, spread over thirty days and
//! three models, 100 to a project; one more session resumes the first (its
//! history copied, replies and all, as Claude Code's `--resume` writes it);
//! and codex rollouts as codex 0.17x writes them (a running total growing
//! by each turn's `last_token_usage`). Every user prompt is `step K: go on`.

use std::io::{self, Write};
use std::path::Path;

use super::gen_rollout;

const PER_PROJECT: usize = 100;
/// 2026-11-01T00:00:00Z: the first day of the home's thirty.
const DAY0: u64 = 1_793_491_200;

/// A session's size, by its number: a real home's shape, deterministic.
fn size_of(i: usize, r: &mut gen_rollout::Rng) -> usize {
    match (i % 200, i % 50) {
        (0, _) => r.range(20_000, 90_000) * 1000,
        (_, 1..=4) => r.range(400, 4000) * 1000,
        _ => r.range(40, 400) * 1000,
    }
}

/// A Claude Code transcript of about `bytes`, session `n`: prompts and
/// replies, each reply its own `message.id` and `requestId`, one record a
/// content block (the usage repeated, the output growing, as Claude Code
/// streams), at times over thirty days.
fn claude_transcript(n: usize, sid: &str, bytes: usize, out: &mut Vec<u8>) {
    let mut r = gen_rollout::Rng::new(0x5e55_1075 ^ n as u64);
    let models = ["claude-opus-4-5-20251101", "claude-sonnet-4-5-20250929", "claude-haiku-4-5-20251001"];
    let model = models[n % 3];
    let start = DAY0 + (n as u64 * 7919) % (30 * 86_400);
    let mut k = 0u64;
    while out.len() < bytes {
        let t = stamp(start + k * 37);
        writeln!(
            out,
            r#"{{"type":"user","sessionId":"{sid}","uuid":"u-{n}-{k}","cwd":"/home/u/src/p{}","timestamp":"{t}","message":{{"role":"user","content":"step {k}: go on"}}}}"#,
            n % 40
        )
        .unwrap();
        let text: String =
            (0..r.range(200, 1600)).map(|i| if i % 7 == 6 { ' ' } else { (b'a' + (i % 26) as u8) as char }).collect();
        let (input, output, read, write) = (r.range(1, 50), r.range(1, 3000), r.range(1000, 90_000), r.range(0, 5000));
        for (b, out_so_far) in [(0, 1), (1, output)] {
            writeln!(
                out,
                r#"{{"type":"assistant","sessionId":"{sid}","uuid":"a-{n}-{k}-{b}","requestId":"req_{n}_{k}","cwd":"/home/u/src/p{}","timestamp":"{t}","message":{{"id":"msg_{n}_{k}","role":"assistant","model":"{model}","content":[{{"type":"text","text":"{text}"}}],"usage":{{"input_tokens":{input},"output_tokens":{out_so_far},"cache_creation_input_tokens":{write},"cache_read_input_tokens":{read}}}}}}}"#,
                n % 40
            )
            .unwrap();
        }
        k += 1;
    }
}

fn stamp(t: u64) -> String {
    let (day, secs) = ((t / 86_400) as i64, t % 86_400);
    let (y, m, d) = nineagents::localtime::civil_from_days(day);
    format!("{y:04}-{m:02}-{d:02}T{:02}:{:02}:{:02}.000Z", secs / 3600, secs % 3600 / 60, secs % 60)
}

/// The home; its bytes.
pub(crate) fn world(claude: usize, codex: usize, codex_bytes: u64, home: &Path) -> io::Result<u64> {
    let mut r = gen_rollout::Rng::new(0x0b5e_55ed);
    let (mut bytes, mut buf, mut first) = (0u64, Vec::new(), Vec::new());
    for i in 0..claude {
        let dir = home.join(format!(".claude/projects/-home-u-src-p{:03}", i / PER_PROJECT));
        if i % PER_PROJECT == 0 {
            std::fs::create_dir_all(&dir)?;
        }
        let sid = format!("{:08x}-0000-4000-8000-{:012x}", i, i);
        buf.clear();
        claude_transcript(i, &sid, size_of(i, &mut r), &mut buf);
        std::fs::write(dir.join(format!("{sid}.jsonl")), &buf)?;
        bytes += buf.len() as u64;
        if i == 0 {
            first = buf.clone();
        }
    }
    // A resumed session: the first one's history copied, then its own.
    let sid = "ffffffff-0000-4000-8000-00000000ffff";
    let mut resumed = first;
    claude_transcript(claude + 1, sid, resumed.len() + 100_000, &mut resumed);
    let dir = home.join(".claude/projects/-home-u-src-p000");
    std::fs::write(dir.join(format!("{sid}.jsonl")), &resumed)?;
    bytes += resumed.len() as u64;
    for i in 0..codex {
        let day = home.join(format!(".codex/sessions/2026/11/{:02}", 1 + i % 28));
        std::fs::create_dir_all(&day)?;
        let own = format!("019cad1a-0000-7000-8000-{i:012x}");
        buf.clear();
        codex_rollout(i, &own, codex_bytes as usize, &mut buf);
        std::fs::write(day.join(format!("rollout-2026-11-{:02}T08-00-00-{own}.jsonl", 1 + i % 28)), &buf)?;
        bytes += buf.len() as u64;
    }
    Ok(bytes)
}

/// A codex rollout of about `bytes`, thread `id`, as codex 0.17x writes
/// one: its `session_meta`, a `turn_context`, then turns of a prompt, a
/// reply and a `token_count` whose running total grows by the turn's
/// `last_token_usage` (its cached input within its input).
fn codex_rollout(n: usize, id: &str, bytes: usize, out: &mut Vec<u8>) {
    let mut r = gen_rollout::Rng::new(0xc0de_0000 ^ n as u64);
    let start = DAY0 + (n as u64 * 6133) % (30 * 86_400);
    let t0 = stamp(start);
    writeln!(
        out,
        r#"{{"timestamp":"{t0}","type":"session_meta","payload":{{"id":"{id}","timestamp":"{t0}","cwd":"/home/u/src/c{}","originator":"codex_cli_rs","cli_version":"0.170.0"}}}}"#,
        n % 10
    )
    .unwrap();
    writeln!(
        out,
        r#"{{"timestamp":"{t0}","type":"turn_context","payload":{{"cwd":"/home/u/src/c","model":"gpt-5-codex"}}}}"#
    )
    .unwrap();
    let mut total = [0u64; 4];
    let mut k = 0u64;
    while out.len() < bytes {
        let t = stamp(start + k * 41);
        let text: String =
            (0..r.range(200, 1600)).map(|i| if i % 7 == 6 { ' ' } else { (b'a' + (i % 26) as u8) as char }).collect();
        writeln!(out, r#"{{"timestamp":"{t}","type":"response_item","payload":{{"type":"message","role":"user","content":[{{"type":"input_text","text":"step {k}"}}]}}}}"#).unwrap();
        writeln!(out, r#"{{"timestamp":"{t}","type":"response_item","payload":{{"type":"message","role":"assistant","content":[{{"type":"output_text","text":"{text}"}}]}}}}"#).unwrap();
        let input = r.range(2000, 60_000);
        let last = [input, input * 4 / 5, r.range(10, 4000), r.range(0, 1000)].map(|v| v as u64);
        for (a, b) in total.iter_mut().zip(last) {
            *a += b;
        }
        let usage = |u: [u64; 4]| {
            format!(
                r#"{{"input_tokens":{},"cached_input_tokens":{},"output_tokens":{},"reasoning_output_tokens":{},"total_tokens":{}}}"#,
                u[0],
                u[1],
                u[2],
                u[3],
                u[0] + u[2]
            )
        };
        writeln!(
            out,
            r#"{{"timestamp":"{t}","type":"event_msg","payload":{{"type":"token_count","info":{{"total_token_usage":{},"last_token_usage":{},"model_context_window":258400}}}}}}"#,
            usage(total),
            usage(last)
        )
        .unwrap();
        k += 1;
    }
}
