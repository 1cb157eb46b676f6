//! Agents with a `chat/` for the chat end-to-end tests (`tests/chat_*.rs`),
//! on a fixture `<proc>` (`--proc DIR`) so nothing depends on the
//! machine's processes: a claude found through its registry record, a
//! codex through the rollout its fd 3 links to (a fixture `fd/` is
//! symlinks, which the daemon reads as `/proc` would show them).
//!
//! Transcript lines are built with serde_json, so every string in them is
//! escaped as a harness would write it, and the tests can say what each
//! message must render to.

#![allow(dead_code)]

use std::fs;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use serde_json::json;

use crate::active_fakes::*;
use crate::common::*;

/// The transcript timestamps the builders write: 2025-11-28T12:51:26Z
/// plus `i` seconds, and the Unix seconds that must be each message's
/// mtime.
pub(crate) const T0: u64 = 1_764_334_286;

pub(crate) fn ts(i: u64) -> String {
    let s = T0 + i;
    let (h, m, sec) = (s % 86_400 / 3600, s % 3600 / 60, s % 60);
    format!("2025-11-28T{h:02}:{m:02}:{sec:02}.{:03}Z", i % 1000)
}

// ---------------------------------------------------------------------------
// Claude Code records.

/// A uuid no other record of the test run has: Claude Code gives every
/// record its own, and a record whose uuid was seen is a copy.
pub(crate) fn record_uuid() -> String {
    static NEXT: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(1);
    format!("00000000-0000-4000-8000-{:012x}", NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed))
}

pub(crate) fn claude_user(text: &str, t: u64) -> String {
    json!({"type":"user","message":{"role":"user","content":text},"timestamp":ts(t),"uuid":record_uuid()}).to_string()
}

pub(crate) fn claude_assistant(text: &str, t: u64) -> String {
    json!({"type":"assistant","message":{"role":"assistant","model":CLAUDE_MODEL,"content":[{"type":"text","text":text}]},"timestamp":ts(t)})
        .to_string()
}

pub(crate) fn claude_thinking(text: &str, t: u64) -> String {
    json!({"type":"assistant","message":{"role":"assistant","content":[{"type":"thinking","thinking":text,"signature":"c2ln"}]},"timestamp":ts(t)})
        .to_string()
}

pub(crate) fn claude_tool_use(id: &str, tool: &str, input: serde_json::Value, t: u64) -> String {
    json!({"type":"assistant","message":{"role":"assistant","content":[{"type":"tool_use","id":id,"name":tool,"input":input}]},"timestamp":ts(t)})
        .to_string()
}

pub(crate) fn claude_tool_result(id: &str, content: &str, t: u64) -> String {
    json!({"type":"user","message":{"role":"user","content":[{"type":"tool_result","tool_use_id":id,"content":content}]},"timestamp":ts(t)})
        .to_string()
}

/// Bookkeeping: no message.
pub(crate) fn claude_title(title: &str) -> String {
    json!({"type":"ai-title","aiTitle":title}).to_string()
}

// ---------------------------------------------------------------------------
// Codex rollout records.

pub(crate) fn codex_meta(id: &str, t: u64) -> String {
    json!({"timestamp":ts(t),"type":"session_meta","payload":{"id":id,"timestamp":ts(t),"originator":"codex_cli_rs","cli_version":"0.146.0"}})
        .to_string()
}

pub(crate) fn codex_message(role: &str, text: &str, t: u64) -> String {
    let part = if role == "assistant" { "output_text" } else { "input_text" };
    json!({"timestamp":ts(t),"type":"response_item","payload":{"type":"message","role":role,"content":[{"type":part,"text":text}]}})
        .to_string()
}

pub(crate) fn codex_call(call_id: &str, tool: &str, arguments: &str, t: u64) -> String {
    json!({"timestamp":ts(t),"type":"response_item","payload":{"type":"function_call","name":tool,"arguments":arguments,"call_id":call_id}})
        .to_string()
}

pub(crate) fn codex_output(call_id: &str, output: &str, t: u64) -> String {
    json!({"timestamp":ts(t),"type":"response_item","payload":{"type":"function_call_output","call_id":call_id,"output":output}})
        .to_string()
}

pub(crate) fn codex_event(text: &str, t: u64) -> String {
    json!({"timestamp":ts(t),"type":"event_msg","payload":{"type":"agent_message","message":text}}).to_string()
}

/// Lines joined, each ending in a newline.
pub(crate) fn lines(ls: &[String]) -> Vec<u8> {
    let mut out = Vec::new();
    for l in ls {
        out.extend_from_slice(l.as_bytes());
        out.push(b'\n');
    }
    out
}

/// `line` with a `"pad"` field grown so that the line is exactly `len`
/// bytes (it must be a JSON object shorter than that by 10 or more).
pub(crate) fn padded(line: &str, len: usize) -> String {
    let base = line.strip_suffix('}').expect("an object");
    let fill = len.checked_sub(base.len() + r#","pad":""}"#.len()).expect("line too long to pad");
    let out = format!(r#"{base},"pad":"{}"}}"#, "x".repeat(fill));
    assert_eq!(out.len(), len);
    out
}

// ---------------------------------------------------------------------------
// The world.

/// A scratch world with a fixture `<proc>`; each agent a pid of it.
pub(crate) struct ChatWorld {
    pub scratch: Arc<Scratch>,
    pub proc: FakeProc,
    pub cwd: PathBuf,
}

impl ChatWorld {
    pub(crate) fn new() -> ChatWorld {
        let scratch = Scratch::new();
        let proc = FakeProc::new(&scratch);
        let cwd = scratch.home_dir("src/app");
        ChatWorld { scratch, proc, cwd }
    }

    pub(crate) fn daemon(&self, extra: &[&str]) -> Daemon {
        let mut args = vec!["--proc", arg(&self.proc.dir)];
        args.extend_from_slice(extra);
        Daemon::start_in(&self.scratch, &args)
    }

    /// A claude at `pid` in session `sid` (its registry record names it),
    /// whose transcript holds `body`; the transcript's path. The process
    /// has no readable cwd, so a transcript recording any cwd at all is
    /// believed (real transcripts record their authors' cwds).
    pub(crate) fn claude(&self, pid: u32, sid: &str, body: &[u8]) -> PathBuf {
        self.proc.add(pid, &["claude"], &self.cwd, b"", &[]);
        fs::remove_file(self.proc.dir.join(pid.to_string()).join("cwd")).unwrap();
        let record = format!(
            r#"{{"pid":{pid},"sessionId":"{sid}","cwd":"{}","procStart":"{}","status":"busy","name":"chat"}}"#,
            arg(&self.cwd),
            fake_start(pid)
        );
        self.scratch.home_file(&format!(".claude/sessions/{pid}.json"), record.as_bytes());
        let rel = format!(".claude/projects/{}/{sid}.jsonl", claude_project_dir(&self.cwd));
        self.scratch.home_file(&rel, body)
    }

    /// A codex at `pid` whose fd 3 is the rollout of thread `id` holding
    /// `body`; the rollout's path. No readable cwd, as for `claude`.
    pub(crate) fn codex(&self, pid: u32, id: &str, body: &[u8]) -> PathBuf {
        let rel = format!(".codex/sessions/{CODEX_DAY}/rollout-2025-11-28T10-00-00-{id}.jsonl");
        let rollout = self.scratch.home_file(&rel, body);
        self.proc.add(pid, &["codex"], &self.cwd, b"", &[&rollout]);
        fs::remove_file(self.proc.dir.join(pid.to_string()).join("cwd")).unwrap();
        rollout
    }
}

/// A session id for agent number `n`: a UUID (v7-shaped, for codex).
pub(crate) fn uuid(n: u32) -> String {
    format!("019ac9a0-5653-7cc0-aa36-{n:012x}")
}

/// Append `bytes` to `path` (one write, as a harness appends a record).
pub(crate) fn append(path: &Path, bytes: &[u8]) {
    let mut f = fs::OpenOptions::new().append(true).open(path).unwrap();
    f.write_all(bytes).unwrap();
}

/// Rewrite `path` in place: the same inode, truncated and written again.
pub(crate) fn rewrite_in_place(path: &Path, bytes: &[u8]) {
    let ino = std::os::unix::fs::MetadataExt::ino(&fs::metadata(path).unwrap());
    let mut f = fs::OpenOptions::new().write(true).truncate(true).open(path).unwrap();
    f.write_all(bytes).unwrap();
    drop(f);
    assert_eq!(std::os::unix::fs::MetadataExt::ino(&fs::metadata(path).unwrap()), ino);
}

// ---------------------------------------------------------------------------
// Reading a chat through a connection.

/// The fids the chat helpers walk to (clunked after each use).
pub(crate) const LIST_FID: u32 = 0xC4A7_0001;
pub(crate) const MSG_FID: u32 = 0xC4A7_0002;

/// `/active/<harness>/<pid>/chat`.
pub(crate) fn chat_dir(harness: &str, pid: u32) -> String {
    format!("/active/{harness}/{pid}/chat")
}

/// The listing of a chat, in listing order (which must be the name order).
pub(crate) fn list_chat(c: &mut Conn, dir: &str) -> Vec<Entry> {
    let count = c.msize - IOHDRSZ;
    let entries = c.list(dir, LIST_FID, count);
    let names: Vec<&str> = entries.iter().map(|e| e.name.as_str()).collect();
    let mut sorted = names.clone();
    sorted.sort();
    assert_eq!(names, sorted, "{dir} is listed in name order");
    entries
}

pub(crate) fn chat_names(c: &mut Conn, dir: &str) -> Vec<String> {
    list_chat(c, dir).into_iter().map(|e| e.name.clone()).collect()
}

/// A message's stat (through a walk of its own) and its bytes read whole
/// at the connection's msize.
pub(crate) fn read_msg(c: &mut Conn, path: &str) -> (Entry, Vec<u8>) {
    walk_whole(c, path, MSG_FID);
    let st = c.stat_ok(MSG_FID);
    c.open_ok(MSG_FID, OREAD);
    let data = c.read_all(MSG_FID);
    c.clunk_ok(MSG_FID);
    (st, data)
}

/// Every message of `dir`: its listing entry, stat and bytes, each read's
/// length checked against both.
pub(crate) fn read_chat(c: &mut Conn, dir: &str) -> Vec<(Entry, Vec<u8>)> {
    let listed = list_chat(c, dir);
    let mut out = Vec::new();
    for e in listed {
        let path = format!("{dir}/{}", e.name);
        let (st, data) = read_msg(c, &path);
        assert_eq!(st.name, e.name, "{path}: stat's name");
        assert_eq!(st.length, e.length, "{path}: stat and listing disagree on the size");
        assert_eq!(data.len() as u64, st.length, "{path}: a whole read returned another length than stat says");
        assert_eq!(st.qid, e.qid, "{path}: stat and listing disagree on the qid");
        out.push((e, data));
    }
    out
}

/// The names and bytes of a chat.
pub(crate) fn chat_text(c: &mut Conn, dir: &str) -> Vec<(String, String)> {
    read_chat(c, dir).into_iter().map(|(e, d)| (e.name.clone(), String::from_utf8(d).expect("UTF-8"))).collect()
}

/// Reads of `path` (size `size`, bytes `whole`) at every offset from 0 to
/// past its end, of each of `counts` bytes, through one open fid: each
/// returns exactly what is there, no more, no less.
pub(crate) fn check_every_offset(c: &mut Conn, path: &str, whole: &[u8], counts: &[u32]) {
    walk_whole(c, path, MSG_FID);
    c.open_ok(MSG_FID, OREAD);
    let size = whole.len() as u64;
    for &count in counts {
        for off in 0..=size + 1 {
            let data = c.read_ok(MSG_FID, off, count);
            let want = size.saturating_sub(off).min(u64::from(count));
            assert_eq!(data.len() as u64, want, "{path}: read of {count} at {off} (size {size})");
            if want > 0 {
                assert_eq!(data, whole[off as usize..][..want as usize], "{path}: read of {count} at {off}");
            }
        }
    }
    c.clunk_ok(MSG_FID);
}

/// Does a walk from the root to `path` reach it whole?
pub(crate) fn resolves(c: &mut Conn, path: &str) -> bool {
    c.reaches(path, MSG_FID)
}

// ---------------------------------------------------------------------------
// Large transcripts, made in the test (never committed).

/// A claude transcript of about `target` bytes: a first prompt
/// (`00000000-user`), then turns of a tool call and its long result (text
/// full of escapes: quotes, backslashes, newlines, tabs, non-ASCII), and a
/// reply. Twenty distinct turns, repeated until `target` is reached.
pub(crate) fn big_claude(target: usize) -> Vec<u8> {
    let mut turns = Vec::new();
    for k in 0..20u64 {
        let mut out = String::new();
        let mut i = 0;
        while out.len() < 60_000 + 5_000 * k as usize {
            out.push_str(&format!("src/lib.rs:{i}: let s = \"{{\\\"k\\\": {k}}}\"; // é ✓ \\\\ tab\there\n"));
            i += 1;
        }
        let id = format!("toolu_{k}");
        turns.push(lines(&[
            claude_tool_use(&id, "Bash", serde_json::json!({"command": format!("rg -n k{k}")}), 2 * k + 1),
            claude_tool_result(&id, &out, 2 * k + 2),
            claude_assistant(&format!("found {k}"), 2 * k + 2),
        ]));
    }
    let mut body = lines(&[claude_user("index me", 0)]);
    let mut k = 0;
    while body.len() < target {
        body.extend_from_slice(&turns[k % turns.len()]);
        k += 1;
    }
    body
}

/// Latency quantiles of `v` (sorted in place), for printing.
pub(crate) fn quantiles(v: &mut [std::time::Duration]) -> String {
    if v.is_empty() {
        return "no samples".into();
    }
    v.sort();
    let q = |p: f64| v[((v.len() as f64 * p) as usize).min(v.len() - 1)];
    format!("n {} p50 {:?} p99 {:?} max {:?}", v.len(), q(0.50), q(0.99), v[v.len() - 1])
}

/// Walk from the root to all of `path` as `fid`, or fail saying where the
/// walk stopped.
pub(crate) fn walk_whole(c: &mut Conn, path: &str, fid: u32) {
    let r = c.walk_path(path, fid);
    if let Some((text, _)) = r.error() {
        panic!("walk to {path}: {text}");
    }
    let (got, want) = (r.qids().len(), tree_names(path).len());
    assert_eq!(got, want, "the walk to {path} stopped after {got} of {want} names");
}
