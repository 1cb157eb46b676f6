//! pi and omp sessions: each entry type's decision (docs/CHAT.md), the
//! current branch as the chat, on the real files and on written ones, the
//! title slot, and a branch move after the chat was listed.

use super::real::DIR;
use super::*;
use crate::chat::scan::tests::all_simd;
use crate::chat::Kind;
use serde_json::Value;

/// The names (less the id) and texts `ls` reads as, as a pi session.
fn said(ls: &[&str]) -> Vec<(String, String)> {
    let file = lines(ls);
    let mut ix = index(Format::Pi, &file);
    assert_reads_agree(&mut ix, &file);
    (0..ix.len())
        .map(|id| {
            let mut n = Vec::new();
            ix.name(id, &mut n);
            (String::from_utf8(n[9..].to_vec()).unwrap(), text(&mut ix, &file, id))
        })
        .collect()
}

fn pairs(p: &[(&str, &str)]) -> Vec<(String, String)> {
    p.iter().map(|(a, b)| (a.to_string(), b.to_string())).collect()
}

const HEADER: &str = r#"{"type":"session","version":3,"id":"s1","timestamp":"2026-05-11T05:28:32.443Z","cwd":"/x"}"#;

#[test]
fn pi_messages_are_said_block_by_block_and_tool_results_follow_their_calls() {
    let got = said(&[
        HEADER,
        r#"{"type":"model_change","id":"a1","parentId":null,"timestamp":"2026-05-11T05:28:32.452Z","provider":"deepseek","modelId":"v4"}"#,
        r#"{"type":"message","id":"a2","parentId":"a1","timestamp":"2026-05-11T05:29:02.173Z","message":{"role":"user","content":[{"type":"text","text":"hey"},{"type":"image","data":"AAAA","mimeType":"image/png"}]}}"#,
        r#"{"type":"message","id":"a3","parentId":"a2","message":{"role":"assistant","content":[{"type":"thinking","thinking":"greet","thinkingSignature":"reasoning_content"},{"type":"thinking","thinking":"","redacted":true},{"type":"text","text":"Hi!"},{"type":"toolCall","id":"call_1","name":"Bash","arguments":{"command":"ls"}}],"model":"v4","usage":{"input":1,"output":2}}}"#,
        r#"{"type":"message","id":"a4","parentId":"a3","message":{"role":"toolResult","toolCallId":"call_1","toolName":"bash","content":[{"type":"text","text":"a\nb"},{"type":"image","data":"AAAA"}],"isError":false}}"#,
        r#"{"type":"message","id":"a5","parentId":"a4","message":{"role":"toolResult","toolCallId":"unknown","content":[]}}"#,
        r#"{"type":"message","id":"a6","parentId":"a5","message":{"role":"user","content":"plain string"}}"#,
    ]);
    let want = [
        ("user", "hey\n"),
        ("user", "[image]\n"),
        ("thinking", "greet\n"),
        ("assistant", "Hi!\n"),
        ("bash", "Bash\n{\"command\":\"ls\"}\n"),
        ("bash-result", "a\nb\n[image]\n"),
        ("tool-result", ""),
        ("user", "plain string\n"),
    ];
    assert_eq!(got, pairs(&want));
}

#[test]
fn pi_harness_entries_are_system_and_bookkeeping_entries_say_nothing() {
    let got = said(&[
        r#"{"type":"title","v":1,"title":"","updatedAt":"2026-09-16T02:10:53.162Z","pad":"   "}"#,
        HEADER,
        r#"{"type":"thinking_level_change","id":"b1","parentId":null,"thinkingLevel":"high"}"#,
        r#"{"type":"label","id":"b2","parentId":"b1","targetId":"b1","label":"start"}"#,
        r#"{"type":"session_info","id":"b3","parentId":"b2","name":"My session"}"#,
        r#"{"type":"custom","id":"b4","parentId":"b3","customType":"session_exit","data":{"reason":"x"}}"#,
        r#"{"type":"compaction","id":"b5","parentId":"b4","summary":"So far: tests.","firstKeptEntryId":"b1","tokensBefore":5}"#,
        r#"{"type":"branch_summary","id":"b6","parentId":"b5","fromId":"b4","summary":"Tried x."}"#,
        r#"{"type":"custom_message","id":"b7","parentId":"b6","customType":"subagent-slash-result","content":"Subagent result: done","display":true}"#,
        r#"{"type":"message","id":"b8","parentId":"b7","message":{"role":"custom","customType":"note","content":[{"type":"text","text":"from a hook"}],"display":true}}"#,
        r#"{"type":"message","id":"b9","parentId":"b8","message":{"role":"developer","content":"be brief"}}"#,
        r#"{"type":"message","id":"c1","parentId":"b9","message":{"role":"bashExecution","command":"ls -a","output":"x\n","exitCode":0}}"#,
        r#"{"type":"message","id":"c2","parentId":"c1","message":{"role":"bashExecution","command":"true","output":"","exitCode":0}}"#,
        r#"{"type":"message","id":"c3","parentId":"c2","message":{"role":"assistant","content":[],"stopReason":"error","errorMessage":"402 Insufficient Balance"}}"#,
        r#"{"type":"message","id":"c4","parentId":"c3","message":{"role":"fileMention","files":["a.rs"]}}"#,
        r#"{"type":"mode_change","id":"c5","parentId":"c4","mode":"plan"}"#,
    ]);
    let want = [
        ("system", "So far: tests.\n"),
        ("system", "Tried x.\n"),
        ("system", "Subagent result: done\n"),
        ("system", "from a hook\n"),
        ("system", "be brief\n"),
        ("user", "ls -a\n"),
        ("system", "x\n"),
        ("user", "true\n"),
        ("system", "402 Insufficient Balance\n"),
        ("system", "{\"role\":\"fileMention\",\"files\":[\"a.rs\"]}\n"),
    ];
    assert_eq!(got, pairs(&want));
}

#[test]
fn a_v1_file_without_ids_is_one_line_after_another() {
    let got = said(&[
        r#"{"type":"session","id":"v1","timestamp":"2025-12-17T19:39:21.535Z","cwd":"/x","provider":"anthropic","modelId":"opus"}"#,
        r#"{"type":"message","timestamp":"2025-12-17T19:40:00.000Z","message":{"role":"user","content":"one"}}"#,
        r#"{"type":"message","timestamp":"2025-12-17T19:40:01.000Z","message":{"role":"assistant","content":[{"type":"text","text":"two"}]}}"#,
        r#"{"type":"compaction","timestamp":"2025-12-17T19:41:00.000Z","summary":"sum","firstKeptEntryIndex":1}"#,
        r#"{"type":"message","timestamp":"2025-12-17T19:42:00.000Z","message":{"role":"user","content":"three"}}"#,
    ]);
    assert_eq!(got, pairs(&[("user", "one\n"), ("assistant", "two\n"), ("system", "sum\n"), ("user", "three\n")]));
}

/// A session that goes back to its first prompt and starts again, then
/// back to the first branch's reply and on from there.
const BRANCHED: &[&str] = &[
    HEADER,
    r#"{"type":"message","id":"u1","parentId":null,"message":{"role":"user","content":"first"}}"#,
    r#"{"type":"message","id":"r1","parentId":"u1","message":{"role":"assistant","content":[{"type":"text","text":"reply one"}]}}"#,
    r#"{"type":"message","id":"u2","parentId":"u1","message":{"role":"assistant","content":[{"type":"text","text":"reply two"}]}}"#,
    r#"{"type":"branch_summary","id":"s1","parentId":"u2","summary":"left"}"#,
    r#"{"type":"message","id":"u3","parentId":"r1","message":{"role":"user","content":"back on one"}}"#,
];

#[test]
fn the_chat_is_the_branch_of_the_last_entry_whatever_came_between() {
    let texts = |ls: &[&str]| said(ls).into_iter().map(|(_, t)| t).collect::<Vec<_>>().join("");
    assert_eq!(texts(&BRANCHED[..3]), "first\nreply one\n");
    assert_eq!(texts(&BRANCHED[..4]), "first\nreply two\n", "a second child of u1: the first reply is left");
    assert_eq!(texts(&BRANCHED[..5]), "first\nreply two\nleft\n");
    assert_eq!(texts(BRANCHED), "first\nreply one\nback on one\n", "back to a left branch: its messages return");
    let root_again = [
        HEADER,
        BRANCHED[1],
        r#"{"type":"message","id":"x","parentId":null,"message":{"role":"user","content":"anew"}}"#,
    ];
    assert_eq!(texts(&root_again), "anew\n", "a new root starts the chat over");
    let dangling = [
        HEADER,
        BRANCHED[1],
        r#"{"type":"message","id":"x","parentId":"gone","message":{"role":"user","content":"orphan"}}"#,
    ];
    assert_eq!(texts(&dangling), "orphan\n", "a parent the file does not hold ends the chain, as pi's walk does");
}

#[test]
fn a_branch_move_after_the_chat_was_listed_starts_the_index_over() {
    let file = lines(BRANCHED);
    let mut ix = index(Format::Pi, &lines(&BRANCHED[..3]));
    let listed = names(&ix);
    let p = ix.probe();
    let at = |(o, n): (u64, usize)| &file[o as usize..o as usize + n];
    assert!(ix.unchanged(at(p.head), at(p.tail)), "the chat as listed: two messages handed out");
    // u2 follows u1: the reply listed as message 1 would be another one.
    let rest = &file[ix.covered() as usize..];
    assert_eq!(ix.feed(ix.covered(), rest), rest.len(), "every complete line is passed over");
    assert_eq!(names(&ix), listed, "what was listed stays as it was");
    let p = ix.probe();
    assert!(!ix.unchanged(at(p.head), at(p.tail)), "and the caller is told to start over");
    ix.reset();
    ix.feed(0, &file);
    assert_eq!(names(&ix), names(&index(Format::Pi, &file)));
    assert_eq!(ix.len(), 3);
    // A move that keeps what was listed is made in place.
    let mut ix = index(Format::Pi, &lines(&BRANCHED[..2]));
    let p = ix.probe();
    assert!(ix.unchanged(at(p.head), at(p.tail)));
    let rest = &file[ix.covered() as usize..];
    ix.feed(ix.covered(), rest);
    let p = ix.probe();
    assert!(ix.unchanged(at(p.head), at(p.tail)), "only message 0 was listed, and it stays");
    assert_eq!(names(&ix), names(&index(Format::Pi, &file)));
}

#[test]
fn renaming_an_omp_session_rewrites_its_title_slot_and_changes_nothing_indexed() {
    let title =
        r#"{"type":"title","v":1,"title":"","updatedAt":"2026-09-16T02:10:53.162Z","pad":"                    "}"#;
    let renamed =
        r#"{"type":"title","v":1,"title":"Fix it","updatedAt":"2026-09-16T03:00:00.000Z","pad":"              "}"#;
    assert_eq!(title.len(), renamed.len());
    let body = [HEADER, r#"{"type":"message","id":"u1","parentId":null,"message":{"role":"user","content":"hi"}}"#];
    let file = lines(&[&[title][..], &body].concat());
    let ix = index(Format::Pi, &file);
    let p = ix.probe();
    assert_eq!(p.head.0 as usize, title.len() + 1, "the head is read past the slot");
    let mut after = lines(&[&[renamed][..], &body].concat());
    let at = |f: &[u8], (o, n): (u64, usize)| f[o as usize..o as usize + n].to_vec();
    assert!(ix.unchanged(&at(&after, p.head), &at(&after, p.tail)));
    after[title.len() + 5] ^= 1; // the session header is not the file's any more
    assert!(!ix.unchanged(&at(&after, p.head), &at(&after, p.tail)));
}

/// Every record of a real file, as a strict parser (pi's loader) reads it:
/// each line's value, none for a line of glued objects, with its span.
fn records(file: &[u8]) -> Vec<(std::ops::Range<usize>, Option<Value>)> {
    let mut out = Vec::new();
    let mut at = 0;
    for line in file.split_inclusive(|&c| c == b'\n') {
        let v = serde_json::from_slice::<Value>(line).ok();
        if line.ends_with(b"\n") {
            out.push((at..at + line.len(), v));
        }
        at += line.len();
    }
    out
}

/// The lines of the entries on the chain of the file's last entry, found
/// from the raw records (v1: every line).
fn chain_lines(recs: &[(std::ops::Range<usize>, Option<Value>)]) -> Vec<bool> {
    let entries: Vec<(usize, &Value)> = recs
        .iter()
        .enumerate()
        .filter_map(|(i, (_, v))| v.as_ref().filter(|v| v["type"] != "session" && v["type"] != "title").map(|v| (i, v)))
        .collect();
    let mut on = vec![false; recs.len()];
    if entries.iter().all(|(_, v)| v.get("parentId").is_none()) {
        entries.iter().for_each(|&(i, _)| on[i] = true);
        return on;
    }
    let mut at = entries.last().map(|&(i, _)| i);
    while let Some(i) = at {
        on[i] = true;
        let v = recs[i].1.as_ref().unwrap();
        let parent = v["parentId"].as_str();
        at = parent.and_then(|p| entries.iter().rev().find(|(j, e)| *j < i && e["id"] == p).map(|&(j, _)| j));
    }
    on
}

fn pi_files() -> Vec<std::path::PathBuf> {
    let Ok(dir) = std::fs::read_dir(format!("{DIR}/omp")) else { return vec![] };
    let mut v: Vec<_> =
        dir.filter_map(|e| e.ok().map(|e| e.path())).filter(|p| p.extension().is_some_and(|e| e == "jsonl")).collect();
    v.sort();
    v
}

#[test]
fn every_real_pi_and_omp_chat_is_its_current_branch_and_says_every_message_on_it() {
    let files = pi_files();
    if files.is_empty() {
        println!("skipped: no pi or omp sessions at {DIR}/omp");
        return;
    }
    for path in files {
        let file = std::fs::read(&path).unwrap();
        let ix = index(Format::Pi, &file);
        let recs = records(&file);
        let on = chain_lines(&recs);
        let line_of = |off: u64| recs.iter().position(|(r, _)| r.contains(&(off as usize))).unwrap();
        let mut said = vec![0; recs.len()];
        for id in 0..ix.len() {
            let slot = ix.slot(id).unwrap();
            let m = ix.store.msgs[slot];
            let span = ix.store.spans[m.first as usize];
            if span.enc() != crate::chat::store::Enc::Lit {
                said[line_of(span.off())] += 1;
            }
        }
        for (i, (_, v)) in recs.iter().enumerate() {
            let name = path.file_name().unwrap().to_string_lossy();
            assert!(on[i] || said[i] == 0, "{name}: line {} is off the branch but said", i + 1);
            let Some(v) = v else { continue };
            let role = v["message"]["role"].as_str().unwrap_or("");
            let content = &v["message"]["content"];
            let says = v["type"] == "message"
                && (content.is_string()
                    || role == "bashExecution"
                    || content.as_array().is_some_and(|c| c.iter().any(|b| b["type"] == "text")));
            if on[i] && says {
                assert!(said[i] > 0, "{name}: line {} is on the branch and says nothing", i + 1);
            }
        }
        println!(
            "{:>5} of {:>5} lines on the branch  {}",
            on.iter().filter(|&&b| b).count(),
            recs.len(),
            path.display()
        );
    }
}

#[test]
fn real_branched_sessions_read_their_last_branch() {
    let Ok(file) = std::fs::read(format!("{DIR}/omp/pi-v3-2026-03__sdk-branch-summary-user-leaf__pi-demo.jsonl"))
    else {
        println!("skipped: no pi sessions at {DIR}/omp");
        return;
    };
    let mut ix = index(Format::Pi, &file);
    assert_eq!(names(&ix), "00000000-user 00000001-assistant 00000002-system 00000003-user");
    assert_eq!(text(&mut ix, &file, 0), "我叫李四\n", "the first branch (张三) was left");
    assert_eq!(text(&mut ix, &file, 2), "用户讨论了名字问题\n");
    assert_eq!(text(&mut ix, &file, 3), "我叫王五\n");
    let file = std::fs::read(format!("{DIR}/omp/pi-v3-2026-05__tree-branch-summary__frinfo702.jsonl")).unwrap();
    let mut ix = index(Format::Pi, &file);
    let kinds: Vec<Kind> = (0..ix.len()).map(|id| ix.info(id).unwrap().kind).collect();
    use Kind::*;
    assert_eq!(kinds, [User, Thinking, Assistant, System, User, Thinking, Assistant]);
    assert_eq!(text(&mut ix, &file, 3), "No content to summarize\n");
}

#[test]
fn a_glued_line_says_nothing_counts_its_reply_and_every_other_line_still_reads() {
    let name = "omp/pi-v1-2025-12__header-model-thinking-compaction-glued-line__pi-mono.jsonl";
    let Ok(file) = std::fs::read(format!("{DIR}/{name}")) else {
        println!("skipped: no pi sessions at {DIR}/omp");
        return;
    };
    let ix = index(Format::Pi, &file);
    assert_eq!(ix.covered() as usize, file.len());
    // 440 is the glued line (an assistant's reply, then a user prompt):
    // pi's loader drops it whole, so neither object is said.
    let recs = records(&file);
    assert!(recs[439].1.is_none(), "a strict parser takes nothing from it");
    let glued = recs[439].0.clone();
    let said_there = (0..ix.len())
        .map(|id| ix.store.spans[ix.store.msgs[ix.slot(id).unwrap()].first as usize])
        .any(|s| s.enc() != crate::chat::store::Enc::Lit && glued.contains(&(s.off() as usize)));
    assert!(!said_there);
    assert_eq!(ix.drift().glued_lines, 1);
    // Its reply was still paid for.
    let reply: Value =
        serde_json::Deserializer::from_slice(&file[glued.clone()]).into_iter::<Value>().next().unwrap().unwrap();
    assert_eq!(reply["message"]["role"], "assistant");
    let out = reply["message"]["usage"]["output"].as_u64().unwrap();
    let without = index(Format::Pi, &[&file[..glued.start], &file[glued.end..]].concat());
    assert_eq!(ix.usage().total()[1], without.usage().total()[1] + out, "the glued reply's output counts");
    assert!(recs[440..].iter().all(|(_, v)| v.is_some()), "the lines after it are records");
    let next = recs[440].0.start as u64;
    let first_after =
        (0..ix.len()).find(|&id| ix.store.spans[ix.store.msgs[ix.slot(id).unwrap()].first as usize].off() >= next);
    assert!(first_after.is_some_and(|id| id + 20 < ix.len()), "and are said");
}

#[test]
fn small_windows_and_every_classifier_give_the_one_window_index() {
    let mut files: Vec<Vec<u8>> = vec![lines(BRANCHED)];
    files.extend(pi_files().into_iter().filter_map(|p| std::fs::read(p).ok()).filter(|f| f.len() < 300_000));
    for file in files {
        let whole = index(Format::Pi, &file);
        for simd in all_simd() {
            for w in [1, 7, 64, 1000] {
                let ix = index_in_windows(Format::Pi, &file, w, simd);
                assert_eq!(names(&ix), names(&whole), "{simd:?} {w}");
                assert_eq!(ix.usage(), whole.usage());
                let slots =
                    |ix: &Index| (0..ix.len()).map(|id| ix.store.msgs[ix.slot(id).unwrap()]).collect::<Vec<_>>();
                assert_eq!(slots(&ix), slots(&whole));
                assert!(ix.store.spans == whole.store.spans);
            }
        }
    }
}

/// A `synthetic` user message is the harness speaking; a `redacted`
/// thinking block is skipped, whatever placeholder it holds; an entry type
/// no rule knows is counted (under `/health`).
#[test]
fn synthetic_prompts_are_the_harness_and_redacted_thinking_says_nothing() {
    let file = lines(&[
        HEADER,
        r#"{"type":"message","id":"a","parentId":null,"message":{"role":"user","content":[{"type":"text","text":"Continue where you left off."}],"synthetic":true}}"#,
        r#"{"type":"message","id":"b","parentId":"a","message":{"role":"assistant","content":[{"type":"thinking","thinking":"[redacted]","redacted":true},{"type":"text","text":"ok"}]}}"#,
        r#"{"type":"brand_new_entry","id":"c","parentId":"b","summary":"words"}"#,
        r#"{"type":"message","id":"d","parentId":"c","message":{"role":"user","content":"next"}}"#,
    ]);
    let mut ix = index(Format::Pi, &file);
    assert_eq!(names(&ix), "00000000-system 00000001-assistant 00000002-user");
    assert_eq!(text(&mut ix, &file, 0), "Continue where you left off.\n");
    assert_eq!(ix.drift().unknown.len(), 1);
    assert_eq!(ix.drift().version.map(|v| v.to_string()).as_deref(), Some("3.0.0"));
}
