//! Every real transcript in `../shared/data/transcripts` read message by
//! message through the daemon: each `claude/*.jsonl` as a fixture claude
//! agent's transcript, each `codex/*.jsonl` as a fixture codex agent's
//! rollout. Its listing works, every message reads exactly as long as its
//! stat says (and as the listing says), and the daemon is alive and
//! answering afterwards. Skipped, saying so, when the data is absent.
//!
//! Each served message is also compared with what the crate's pure
//! indexer says when fed the whole file in one piece (`chat::Index`): the
//! daemon indexes in `CHAT_WINDOW_BYTES` windows through its ring, the
//! next read ahead while one is indexed, and reads each message
//! back through it, and must serve the same names, sizes and bytes.
//!
//! The files are copied into the scratch home byte for byte. A codex
//! subagent's rollout is never a process's own session (`pick_thread`
//! passes it over), so for those a parent's `session_meta` line is put in
//! front of the real bytes, as a resumed rollout repeats one: it is
//! bookkeeping, no message, and every line of the real file follows.

mod active_fakes;
mod chat_fakes;
mod common;

use std::fs;
use std::path::PathBuf;
use std::time::Instant;

use chat_fakes::*;
use common::*;
use nineagents::chat::{Format, Index};

const DATA: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../shared/data/transcripts");

fn files(sub: &str) -> Option<Vec<PathBuf>> {
    let dir = PathBuf::from(DATA).join(sub);
    let Ok(rd) = fs::read_dir(&dir) else {
        eprintln!("chat_real: skipped: {} is absent", dir.display());
        return None;
    };
    let mut v: Vec<PathBuf> =
        rd.map(|e| e.unwrap().path()).filter(|p| p.extension().is_some_and(|x| x == "jsonl")).collect();
    v.sort();
    if v.is_empty() {
        eprintln!("chat_real: skipped: no .jsonl in {}", dir.display());
        return None;
    }
    Some(v)
}

/// A session at the connection's largest msize, so a long message is a
/// few reads.
fn big_session(d: &Daemon) -> Conn {
    let mut c = d.connect();
    c.version(1 << 20, "9P2000");
    c.attach_ok(ROOT);
    c
}

/// Whether a rollout's first record says it is a subagent's thread.
fn subagent(first_line: &[u8]) -> bool {
    let Ok(v) = serde_json::from_slice::<serde_json::Value>(first_line) else { return false };
    v.pointer("/payload/thread_source").and_then(|s| s.as_str()) == Some("subagent")
        || v.pointer("/payload/source/subagent").is_some()
}

/// What the pure indexer, fed `body` whole, says each message is: its
/// name and its text.
fn pure(format: Format, body: &[u8]) -> Vec<(String, Vec<u8>)> {
    let mut ix = Index::new(format, nineagents::chat::MAX_MESSAGES_DEFAULT);
    ix.feed(0, body);
    (0..ix.len())
        .map(|id| {
            let mut name = Vec::new();
            assert!(ix.name(id, &mut name));
            let size = ix.info(id).unwrap().size;
            let plan = ix.render_plan(id, 0, size).unwrap();
            let input = &body[plan.file_offset as usize..][..plan.file_len as usize];
            let mut out = Vec::new();
            ix.render(&plan, input, &mut out);
            assert_eq!(out.len() as u64, size, "the pure index renders message {id} to its size");
            (String::from_utf8(name).unwrap(), out)
        })
        .collect()
}

/// Read every agent's chat through `c`, each message checked against the
/// pure indexer's; print a line per file.
fn read_all(d: &Daemon, harness: &str, agents: &[(u32, String, Vec<u8>)]) {
    let format = if harness == "claude" { Format::Claude } else { Format::Codex };
    let mut c = big_session(d);
    let mut total = (0usize, 0u64);
    for (pid, name, body) in agents {
        let want = pure(format, body);
        let t = Instant::now();
        let dir = chat_dir(harness, *pid);
        let msgs = c.try_list(&dir, LIST_FID, c.msize - IOHDRSZ).unwrap_or_else(|e| panic!("{name}: list {dir}: {e}"));
        let listed: Vec<&str> = msgs.iter().map(|e| e.name.as_str()).collect();
        let names: Vec<&str> = want.iter().map(|w| w.0.as_str()).collect();
        assert_eq!(listed, names, "{name}: the daemon's names are not the pure indexer's");
        let mut bytes = 0u64;
        for (e, (_, text)) in msgs.iter().zip(&want) {
            let path = format!("{dir}/{}", e.name);
            let data = c.try_cat(&path, MSG_FID).unwrap_or_else(|err| panic!("{name}: {path}: {err}"));
            assert_eq!(data.len() as u64, e.length, "{name}: {path}: read length != listed size");
            assert!(data == *text, "{name}: {path}: the daemon served other bytes than the pure indexer renders");
            walk_whole(&mut c, &path, MSG_FID);
            let st = c.stat_ok(MSG_FID);
            c.clunk_ok(MSG_FID);
            assert_eq!(st.length, e.length, "{name}: {path}: stat size != listed size");
            bytes += data.len() as u64;
        }
        eprintln!("chat_real: {harness} {name}: {} messages, {bytes} bytes rendered, {:?}", msgs.len(), t.elapsed());
        total.0 += msgs.len();
        total.1 += bytes;
    }
    eprintln!("chat_real: {harness}: {} files, {} messages, {} bytes rendered", agents.len(), total.0, total.1);
}

fn alive(d: &mut Daemon) {
    assert!(d.is_running(), "the daemon died:\n{}", d.stderr());
    let mut c = d.session(Dialect::P2000);
    assert_eq!(c.cat("/pid", MSG_FID), format!("{}\n", d.pid).as_bytes());
    assert!(!d.stderr().contains("panicked"), "{}", d.stderr());
}

#[test]
fn every_real_claude_transcript_reads_message_by_message() {
    let Some(files) = files("claude") else { return };
    let w = ChatWorld::new();
    let mut agents = Vec::new();
    for (i, f) in files.iter().enumerate() {
        let pid = 1000 + i as u32;
        let body = fs::read(f).unwrap();
        w.claude(pid, &uuid(pid), &body);
        agents.push((pid, f.file_name().unwrap().to_string_lossy().into_owned(), body));
    }
    let mut d = w.daemon(&[]);
    let mut c = d.session(Dialect::P2000);
    let listed = names(&c.list("/active/claude", LIST_FID, c.msize - IOHDRSZ));
    for (pid, name, _) in &agents {
        assert!(listed.contains(&pid.to_string()), "{name}: claude {pid} is not listed");
    }
    read_all(&d, "claude", &agents);
    alive(&mut d);
}

#[test]
fn every_real_codex_rollout_reads_message_by_message() {
    let Some(files) = files("codex") else { return };
    let w = ChatWorld::new();
    let mut agents = Vec::new();
    for (i, f) in files.iter().enumerate() {
        let pid = 2000 + i as u32;
        let id = uuid(pid);
        let mut body = fs::read(f).unwrap();
        let first = &body[..memchr::memchr(b'\n', &body).unwrap_or(body.len())];
        if subagent(first) {
            let mut parent = lines(&[codex_meta(&id, 0)]);
            parent.append(&mut body);
            body = parent;
        }
        w.codex(pid, &id, &body);
        agents.push((pid, f.file_name().unwrap().to_string_lossy().into_owned(), body));
    }
    let mut d = w.daemon(&[]);
    let mut c = d.session(Dialect::P2000);
    for (pid, name, _) in &agents {
        assert_eq!(c.cat(&format!("/active/codex/{pid}/via"), MSG_FID), b"fd\n", "{name}");
    }
    read_all(&d, "codex", &agents);
    alive(&mut d);
}
