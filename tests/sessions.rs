//! `/sessions`: every session on disk, running or not. Each real transcript
//! in `../shared/data/transcripts` installed in a fixture home is listed
//! under `/sessions/<h>/`, its fields say what its records say, and its
//! chat is the very chat `/active` serves for the same file (a fixture
//! agent holds it). Subagents' chats, `resume` per harness, the listing
//! cap pushed past, and hostile file names. Real data absent: skipped,
//! saying so.

mod active_fakes;
mod chat_fakes;
mod common;

use std::fs;
use std::path::PathBuf;

use chat_fakes::*;
use common::*;

const DATA: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../shared/data/transcripts");

fn files(sub: &str) -> Option<Vec<PathBuf>> {
    let dir = PathBuf::from(DATA).join(sub);
    let Ok(rd) = fs::read_dir(&dir) else {
        eprintln!("sessions: skipped: {} is absent", dir.display());
        return None;
    };
    let mut v: Vec<PathBuf> =
        rd.map(|e| e.unwrap().path()).filter(|p| p.extension().is_some_and(|x| x == "jsonl")).collect();
    v.sort();
    Some(v).filter(|v| !v.is_empty())
}

fn big(d: &Daemon) -> Conn {
    let mut c = d.connect();
    c.version(1 << 20, "9P2000");
    c.attach_ok(ROOT);
    c
}

fn listed(c: &mut Conn, dir: &str) -> Vec<String> {
    names(&c.try_list(dir, LIST_FID, c.msize - IOHDRSZ).unwrap_or_else(|e| panic!("list {dir}: {e}")))
}

/// Every message of a chat, as text: name and bytes.
fn chat(c: &mut Conn, dir: &str) -> Vec<(String, Vec<u8>)> {
    read_chat(c, dir).into_iter().map(|(e, b)| (e.name.clone(), b)).collect()
}

#[test]
fn every_real_claude_transcript_is_a_session_whose_chat_is_the_active_ones() {
    let Some(files) = files("claude") else { return eprintln!("sessions: skipped: no claude transcripts") };
    let w = ChatWorld::new();
    let mut agents = Vec::new();
    for (i, f) in files.iter().enumerate() {
        let pid = 1000 + i as u32;
        let body = fs::read(f).unwrap();
        w.claude(pid, &uuid(pid), &body);
        agents.push((pid, f.file_name().unwrap().to_string_lossy().into_owned(), body.len()));
    }
    let d = w.daemon(&[]);
    let mut c = big(&d);
    let all = listed(&mut c, "/sessions/claude");
    for (pid, name, len) in &agents {
        let sid = uuid(*pid);
        assert!(all.contains(&sid), "{name}: not listed under /sessions/claude");
        let dir = format!("/sessions/claude/{sid}");
        assert_eq!(c.cat(&format!("{dir}/session"), MSG_FID), format!("{sid}\n").as_bytes(), "{name}");
        assert_eq!(c.cat(&format!("{dir}/resume"), MSG_FID), format!("claude --resume {sid}\n").as_bytes(), "{name}");
        assert_eq!(c.cat(&format!("{dir}/transcript"), MSG_FID).len(), *len, "{name}: the transcript's bytes");
        let mine = chat(&mut c, &format!("{dir}/chat"));
        let active = chat(&mut c, &chat_dir("claude", *pid));
        assert!(mine == active, "{name}: the session's chat is not the running agent's");
    }
    eprintln!("sessions: {} claude sessions, each chat the same as /active's", agents.len());
}

#[test]
fn every_real_codex_rollout_is_listed_and_its_chat_is_the_active_ones() {
    let Some(files) = files("codex") else { return eprintln!("sessions: skipped: no codex rollouts") };
    let w = ChatWorld::new();
    let mut ids = Vec::new();
    for (i, f) in files.iter().enumerate() {
        let pid = 2000 + i as u32;
        let id = uuid(pid);
        let mut body = fs::read(f).unwrap();
        // As in chat_real: a subagent's rollout is never a process's own
        // session, so a parent's session_meta goes first.
        let first = &body[..memchr::memchr(b'\n', &body).unwrap_or(body.len())];
        if first.windows(8).any(|w| w == b"subagent") {
            let mut parent = lines(&[codex_meta(&id, 0)]);
            parent.append(&mut body);
            body = parent;
        }
        w.codex(pid, &id, &body);
        ids.push((pid, id, f.file_name().unwrap().to_string_lossy().into_owned(), body));
    }
    let d = w.daemon(&[]);
    let mut c = big(&d);
    let all = listed(&mut c, "/sessions/codex");
    for (pid, id, name, body) in &ids {
        assert!(all.contains(id), "{name}: not listed");
        let dir = format!("/sessions/codex/{id}");
        assert_eq!(c.cat(&format!("{dir}/resume"), MSG_FID), format!("codex resume {id}\n").as_bytes(), "{name}");
        let mine = chat(&mut c, &format!("{dir}/chat"));
        assert!(mine == chat(&mut c, &chat_dir("codex", *pid)), "{name}: the chat is not /active's");
        assert_own_usage(&mut c, &dir, nineagents::chat::Format::Codex, body, name);
    }
}

#[test]
fn every_real_pi_and_omp_file_is_a_session_that_resumes_by_its_path() {
    let Some(files) = files("omp") else { return eprintln!("sessions: skipped: no omp/pi transcripts") };
    let s = Scratch::new();
    let mut want = Vec::new();
    for (i, f) in files.iter().enumerate() {
        let name = f.file_name().unwrap().to_string_lossy().into_owned();
        let h = if name.starts_with("omp") { "omp" } else { "pi" };
        let id = uuid(3000 + i as u32);
        let rel = format!(".{h}/agent/sessions/--work--/2026-01-01T00-00-00-000Z_{id}.jsonl");
        let path = s.home_file(&rel, &fs::read(f).unwrap());
        want.push((h, id, path, name));
    }
    let d = Daemon::start_in(&s, &[]);
    let mut c = big(&d);
    for (h, id, path, name) in &want {
        assert!(listed(&mut c, &format!("/sessions/{h}")).contains(id), "{name}: not listed");
        let dir = format!("/sessions/{h}/{id}");
        let verb = if *h == "omp" { "omp --resume" } else { "pi --session" };
        let resume = c.cat(&format!("{dir}/resume"), MSG_FID);
        assert_eq!(resume, format!("{verb} {}\n", path.display()).as_bytes(), "{name}");
        assert_eq!(c.cat(&format!("{dir}/session"), MSG_FID), format!("{id}\n").as_bytes(), "{name}");
        assert!(listed(&mut c, &dir).contains(&"transcript".to_string()), "{name}");
        let body = fs::read(path).unwrap();
        assert_own_usage(&mut c, &dir, nineagents::chat::Format::Pi, &body, name);
        // Its chat reads: the current branch's messages, as the indexer
        // makes them in-process.
        let mut ix = nineagents::chat::Index::new(nineagents::chat::Format::Pi, 1 << 20);
        ix.feed(0, &body);
        assert_eq!(chat(&mut c, &format!("{dir}/chat")).len(), ix.len(), "{name}: its chat");
    }
}

/// `dir/usage` answers, and where the session has no subagents it is the
/// count the indexer makes of `body` in-process.
fn assert_own_usage(c: &mut Conn, dir: &str, format: nineagents::chat::Format, body: &[u8], name: &str) {
    let got = c.cat(&format!("{dir}/usage"), MSG_FID);
    assert!(got.starts_with(b"input "), "{name}: usage reads {}", String::from_utf8_lossy(&got));
    let subs = c.try_list(&format!("{dir}/agents"), LIST_FID, c.msize - IOHDRSZ).map(|e| e.len()).unwrap_or(0);
    if subs == 0 {
        let mut ix = nineagents::chat::Index::new(format, 1 << 20);
        ix.feed(0, body);
        assert_eq!(usage_totals(&got), ix.usage().render(), "{name}: usage is not the transcript's count");
    }
}

#[test]
fn claude_subagents_of_both_layouts_have_their_own_chats_here_and_under_active() {
    let w = ChatWorld::new();
    let sid = uuid(7);
    let main = w.claude(7, &sid, &lines(&[claude_user("go", 1)]));
    let stem = main.with_extension("");
    let project = main.parent().unwrap().to_path_buf();
    fs::create_dir_all(stem.join("subagents")).unwrap();
    let mine = format!(
        r#"{{"type":"user","sessionId":"{sid}","message":{{"role":"user","content":"sub"}},"timestamp":"{}"}}"#,
        ts(2)
    );
    fs::write(stem.join("subagents/agent-a1.jsonl"), lines(std::slice::from_ref(&mine))).unwrap();
    fs::write(project.join("agent-b2.jsonl"), lines(&[mine.replace("sub", "old")])).unwrap();
    let other = mine.replace(&sid, &uuid(8));
    fs::write(project.join("agent-c3.jsonl"), lines(&[other])).unwrap();
    let d = w.daemon(&[]);
    let mut c = big(&d);
    let dir = format!("/sessions/claude/{sid}/agents");
    assert_eq!(listed(&mut c, &dir), ["a1", "b2"], "a sibling naming another session is not this one's");
    let a1 = chat(&mut c, &format!("{dir}/a1/chat"));
    assert_eq!(a1.len(), 1);
    assert_eq!(a1[0].1, b"sub\n");
    assert_eq!(chat(&mut c, &format!("{dir}/b2/chat"))[0].1, b"old\n");
    assert!(!listed(&mut c, "/sessions/claude").iter().any(|n| n.starts_with("agent-")));
    assert!(chat(&mut c, "/active/claude/7/agents/a1/chat") == a1, "the running agent's subagent chat is the same");
    let usage = c.cat(&format!("{dir}/a1/usage"), MSG_FID);
    assert_eq!(c.cat("/active/claude/7/agents/a1/usage", MSG_FID), usage, "and its usage");
    let entries = c.try_list("/active/claude/7/agents/a1", LIST_FID, c.msize - IOHDRSZ).unwrap();
    let listed_usage = entries.iter().find(|e| e.name == "usage").expect("agents/a1 lists usage");
    assert_eq!(listed_usage.length, usage.len() as u64);
}

/// Claude Code 2.1.170 on: a workflow's subagents live one level deeper,
/// `<session>/subagents/workflows/<run>/agent-<id>.jsonl`, beside the
/// run's journal (no transcript). Each is a subagent (`<run>-<id>`), with
/// its model (its records are all sidechain), its `type` and
/// `description` from `agent-<id>.meta.json`, and its tokens in the
/// session's usage; the running agent's `agents/` is the same directory,
/// and `..` leads back to where the walk came from.
#[test]
fn claude_workflow_subagents_are_the_sessions_with_their_model_type_and_tokens() {
    let w = ChatWorld::new();
    let sid = uuid(9);
    let main = w.claude(9, &sid, &lines(&[claude_user("run the workflow", 1)]));
    let run = main.with_extension("").join("subagents/workflows/wf_d66113ec-b09");
    fs::create_dir_all(&run).unwrap();
    let sub = [
        format!(
            r#"{{"parentUuid":null,"isSidechain":true,"agentId":"aae96141ee410d14d","type":"user","uuid":"w1","sessionId":"{sid}","message":{{"role":"user","content":"check the formulas"}},"timestamp":"{}"}}"#,
            ts(2)
        ),
        format!(
            r#"{{"parentUuid":"w1","isSidechain":true,"agentId":"aae96141ee410d14d","type":"assistant","uuid":"w2","requestId":"req_w","sessionId":"{sid}","message":{{"id":"msg_w","model":"claude-sonnet-4-6","role":"assistant","content":[{{"type":"text","text":"All correct."}}],"usage":{{"input_tokens":40,"output_tokens":7,"cache_read_input_tokens":0,"cache_creation_input_tokens":0}}}},"timestamp":"{}"}}"#,
            ts(3)
        ),
    ];
    fs::write(run.join("agent-aae96141ee410d14d.jsonl"), lines(&sub)).unwrap();
    fs::write(
        run.join("agent-aae96141ee410d14d.meta.json"),
        r#"{"agentType":"self-critic","description":"Check every\nformula"}"#,
    )
    .unwrap();
    fs::write(run.join("journal.jsonl"), "{\"type\":\"started\",\"key\":\"v2:x\",\"agentId\":\"aae96141ee410d14d\"}\n")
        .unwrap();
    let d = w.daemon(&[]);
    let mut c = big(&d);
    let dir = format!("/sessions/claude/{sid}/agents");
    let name = "wf_d66113ec-b09-aae96141ee410d14d";
    assert_eq!(listed(&mut c, &dir), [name]);
    let sub_dir = format!("{dir}/{name}");
    assert_eq!(listed(&mut c, &sub_dir), ["chat", "description", "model", "transcript", "type", "usage"]);
    assert_eq!(c.cat(&format!("{sub_dir}/model"), MSG_FID), b"claude-sonnet-4-6\n");
    assert_eq!(c.cat(&format!("{sub_dir}/type"), MSG_FID), b"self-critic\n");
    assert_eq!(c.cat(&format!("{sub_dir}/description"), MSG_FID), b"Check every formula\n", "one line");
    assert_eq!(chat(&mut c, &format!("{sub_dir}/chat")).len(), 2);
    let usage = String::from_utf8(c.cat(&format!("/sessions/claude/{sid}/usage"), MSG_FID)).unwrap();
    assert!(usage.starts_with("input 40\noutput 7\n"), "the session's usage counts its workflow's: {usage}");
    // The running agent's agents/ is the session's, and `..` leads back.
    assert_eq!(listed(&mut c, "/active/claude/9/agents"), [name]);
    let q = c.walk_ok(ROOT, MSG_FID, &["active", "claude", "9", "agents", name, "..", ".."]);
    assert_eq!(q.last(), c.walk_ok(ROOT, LIST_FID, &["active", "claude", "9"]).last());
    c.clunk_ok(MSG_FID);
    c.clunk_ok(LIST_FID);
}

#[test]
fn a_codex_subagent_thread_is_under_its_parent_not_a_session_of_its_own() {
    let w = ChatWorld::new();
    let (parent, child) = (uuid(1), uuid(2));
    w.codex(11, &parent, &lines(&[codex_meta(&parent, 0), codex_message("user", "hi", 1)]));
    let meta = format!(
        r#"{{"timestamp":"{}","type":"session_meta","payload":{{"id":"{child}","source":{{"subagent":{{"thread_spawn":{{"parent_thread_id":"{parent}","depth":1}}}}}}}}}}"#,
        ts(2)
    );
    let rel = format!(".codex/sessions/{}/rollout-2025-11-28T10-00-01-{child}.jsonl", active_fakes::CODEX_DAY);
    w.scratch.home_file(&rel, &lines(&[meta, codex_message("user", "child task", 3)]));
    let d = w.daemon(&[]);
    let mut c = big(&d);
    assert_eq!(listed(&mut c, "/sessions/codex"), [parent.as_str()]);
    let dir = format!("/sessions/codex/{parent}/agents");
    assert_eq!(listed(&mut c, &dir), [child.as_str()]);
    assert_eq!(chat(&mut c, &format!("{dir}/{child}/chat"))[0].1, b"child task\n");
    // The running parent's agents/ is its session's: the same thread.
    assert!(listed(&mut c, "/active/codex/11").contains(&"agents".to_string()));
    assert_eq!(listed(&mut c, "/active/codex/11/agents"), [child.as_str()]);
    let mine = chat(&mut c, &format!("/active/codex/11/agents/{child}/chat"));
    assert!(mine == chat(&mut c, &format!("{dir}/{child}/chat")), "/active's thread chat is the session's");
    assert_eq!(
        c.cat(&format!("/active/codex/11/agents/{child}/usage"), MSG_FID),
        c.cat(&format!("{dir}/{child}/usage"), MSG_FID)
    );
}

#[test]
fn a_listing_past_the_entry_cap_is_an_error_not_a_shorter_list() {
    let w = ChatWorld::new();
    for n in 0..4 {
        w.claude(100 + n, &uuid(100 + n), &lines(&[claude_user("x", 1)]));
    }
    let d = w.daemon(&["--max-dir-entries", "3"]);
    let mut c = big(&d);
    let r = c.try_list("/sessions/claude", LIST_FID, c.msize - IOHDRSZ);
    assert!(r.is_err(), "4 sessions past a cap of 3 listed as {r:?}");
    drop((c, d));
    let d = w.daemon(&["--max-dir-entries", "4"]);
    let mut c = big(&d);
    assert_eq!(listed(&mut c, "/sessions/claude").len(), 4);
}

#[test]
fn hostile_session_file_names_are_neither_listed_nor_walked_to() {
    let s = Scratch::new();
    let good = uuid(1);
    let dir = ".claude/projects/-p";
    s.home_file(&format!("{dir}/{good}.jsonl"), &lines(&[claude_user("hi", 1)]));
    for bad in ["a b.jsonl", "auth-1.jsonl", "x\\y.jsonl", ".jsonl", "..jsonl", "agent-z.jsonl"] {
        s.home_file(&format!("{dir}/{bad}"), &lines(&[claude_user("no", 1)]));
    }
    let target = s.home_file("elsewhere.jsonl", &lines(&[claude_user("no", 1)]));
    std::os::unix::fs::symlink(&target, s.home_dir(dir).join(format!("{}.jsonl", uuid(2)))).unwrap();
    let d = Daemon::start_in(&s, &[]);
    let mut c = big(&d);
    assert_eq!(listed(&mut c, "/sessions/claude"), [good]);
    for name in ["a b", "auth-1", "x\\y", "..", uuid(2).as_str()] {
        assert!(!resolves(&mut c, &format!("/sessions/claude/{name}/session")), "{name} resolved");
    }
}

/// zstd frames of `parts`, one frame each, as dsh appends them.
fn frames(parts: &[&[u8]]) -> Vec<u8> {
    parts.iter().flat_map(|p| zstd::bulk::compress(p, 3).unwrap()).collect()
}

/// dsh's transcript is zstd (`session.jsonl.zstd`, a frame at a time while
/// the session runs): read decoded, it has a chat, a usage, its cwd and
/// when it started (no resume form, as before); a frame appended is seen.
#[test]
fn a_dsh_session_is_read_decoded_with_its_chat_and_fields_and_grows_by_frames() {
    let s = Scratch::new();
    let id = uuid(5);
    let header = format!(
        r#"{{"type":"session","version":0,"id":"{id}","createdAt":1795886444051,"cwd":"/home/u/src/webshop","delegationDepth":0,"time":1795886444051}}"#
    );
    let step = lines(&[
        r#"{"type":"step/start","seq":1,"time":1795886444951}"#.to_string(),
        r#"{"type":"message","seq":2,"time":1795886444952,"role":"user","text":"Summarise the week."}"#.to_string(),
        r#"{"type":"message","seq":3,"time":1795886451471,"role":"assistant","text":"Two fixes."}"#.to_string(),
        r#"{"type":"step/end","seq":4,"time":1795886451484}"#.to_string(),
    ]);
    let rel = format!(".dsh/sessions/session-{id}/session.jsonl.zstd");
    let path = s.home_file(&rel, &frames(&[&lines(&[header]), &step]));
    let d = Daemon::start_in(&s, &[]);
    let mut c = big(&d);
    let dir = format!("/sessions/dsh/{id}");
    assert_eq!(listed(&mut c, "/sessions/dsh"), [id.as_str()]);
    assert_eq!(listed(&mut c, &dir), ["chat", "cwd", "session", "started", "transcript", "usage"]);
    assert_eq!(c.cat(&format!("{dir}/cwd"), MSG_FID), b"/home/u/src/webshop\n");
    assert_eq!(c.cat(&format!("{dir}/started"), MSG_FID), b"1795886444\n");
    let said = chat(&mut c, &format!("{dir}/chat"));
    let names: Vec<&str> = said.iter().map(|(n, _)| n.as_str()).collect();
    assert_eq!(names, ["00000000-user", "00000001-assistant"]);
    assert_eq!(said[1].1, b"Two fixes.\n");
    assert!(c.cat(&format!("{dir}/usage"), MSG_FID).starts_with(b"input 0\n"), "no record counts tokens");
    assert_eq!(c.cat(&format!("{dir}/transcript"), MSG_FID), fs::read(&path).unwrap(), "the file as it is");
    // The session goes on: dsh appends a frame.
    let more =
        lines(&[r#"{"type":"message","seq":5,"time":1795886460000,"role":"user","text":"And CI?"}"#.to_string()]);
    let mut f = fs::OpenOptions::new().append(true).open(&path).unwrap();
    std::io::Write::write_all(&mut f, &frames(&[&more])).unwrap();
    drop(f);
    let said = chat(&mut c, &format!("{dir}/chat"));
    assert_eq!(said.len(), 3);
    assert_eq!(said[2], ("00000002-user".to_string(), b"And CI?\n".to_vec()));
}

/// Codex 0.17x compresses cold rollouts to `rollout-<time>-<id>.jsonl.zst`:
/// such a session is listed with every field, its chat and its usage, the
/// same as its plain form's; a plain rollout beside a compressed one of
/// the same name wins (codex reads it first); `archived_sessions/` holds
/// sessions too.
#[test]
fn a_compressed_codex_rollout_is_a_session_like_its_plain_form() {
    let s = Scratch::new();
    let (zst_id, both_id, archived_id) = (uuid(21), uuid(22), uuid(23));
    let body = |id: &str, text: &str| {
        lines(&[
            codex_meta(id, 0),
            r#"{"timestamp":"2025-11-28T12:51:27.000Z","type":"turn_context","payload":{"cwd":"/w","model":"gpt-5.5"}}"#.to_string(),
            codex_message("user", text, 2),
            codex_message("assistant", "done", 3),
            r#"{"timestamp":"2025-11-28T12:51:30.000Z","type":"event_msg","payload":{"type":"token_count","info":{"total_token_usage":{"input_tokens":900,"cached_input_tokens":800,"cache_write_input_tokens":50,"output_tokens":40,"reasoning_output_tokens":5}}}}"#.to_string(),
        ])
    };
    let day = format!(".codex/sessions/{}", active_fakes::CODEX_DAY);
    let plain = body(&zst_id, "compressed one");
    s.home_file(
        &format!("{day}/rollout-2025-11-28T10-00-00-{zst_id}.jsonl.zst"),
        &zstd::bulk::compress(&plain, 3).unwrap(),
    );
    s.home_file(&format!("{day}/rollout-2025-11-28T10-00-01-{both_id}.jsonl"), &body(&both_id, "the plain one"));
    s.home_file(
        &format!("{day}/rollout-2025-11-28T10-00-01-{both_id}.jsonl.zst"),
        &zstd::bulk::compress(&body(&both_id, "the old compressed one"), 3).unwrap(),
    );
    s.home_file(
        &format!(".codex/archived_sessions/rollout-2025-11-27T09-00-00-{archived_id}.jsonl.zst"),
        &zstd::bulk::compress(&body(&archived_id, "archived"), 3).unwrap(),
    );
    let d = Daemon::start_in(&s, &[]);
    let mut c = big(&d);
    let mut want = vec![zst_id.clone(), both_id.clone(), archived_id.clone()];
    want.sort();
    assert_eq!(listed(&mut c, "/sessions/codex"), want);
    let dir = format!("/sessions/codex/{zst_id}");
    assert_eq!(
        listed(&mut c, &dir),
        ["agents", "chat", "model", "resume", "session", "started", "transcript", "usage"]
    );
    assert_eq!(c.cat(&format!("{dir}/model"), MSG_FID), b"gpt-5.5\n");
    assert_eq!(c.cat(&format!("{dir}/resume"), MSG_FID), format!("codex resume {zst_id}\n").as_bytes());
    let said = chat(&mut c, &format!("{dir}/chat"));
    assert_eq!(said[0], ("00000000-user".to_string(), b"compressed one\n".to_vec()));
    let mut ix = nineagents::chat::Index::new(nineagents::chat::Format::Codex, 1 << 20);
    ix.feed(0, &plain);
    assert_eq!(usage_totals(&c.cat(&format!("{dir}/usage"), MSG_FID)), ix.usage().render(), "the plain form's usage");
    assert!(ix.usage().render().starts_with(b"input 900\noutput 40\ncache_read 800\ncache_write 50\n"));
    assert_eq!(chat(&mut c, &format!("/sessions/codex/{both_id}/chat"))[0].1, b"the plain one\n");
    assert_eq!(chat(&mut c, &format!("/sessions/codex/{archived_id}/chat"))[0].1, b"archived\n");
}

/// The decoded copies of compressed transcripts are capped, all together
/// (`--max-inflated`): past it a chat is an error, never a shorter chat.
#[test]
fn past_the_cap_on_decoded_copies_a_compressed_chat_is_file_too_large() {
    let s = Scratch::new();
    let id = uuid(31);
    let long: Vec<String> =
        (0..200).map(|i| codex_message("user", &format!("message {i} {}", "x".repeat(40)), i)).collect();
    let body = lines(&[vec![codex_meta(&id, 0)], long].concat());
    let rel = format!(".codex/sessions/{}/rollout-2025-11-28T10-00-00-{id}.jsonl.zst", active_fakes::CODEX_DAY);
    s.home_file(&rel, &zstd::bulk::compress(&body, 3).unwrap());
    let d = Daemon::start_in(&s, &["--max-inflated", "4096"]);
    let mut c = big(&d);
    let err = c.try_list(&format!("/sessions/codex/{id}/chat"), LIST_FID, c.msize - IOHDRSZ).unwrap_err();
    assert!(err.contains("File too large"), "{err}");
}

#[test]
fn every_real_claude_sessions_usage_is_its_transcripts_count() {
    let Some(files) = files("claude") else { return eprintln!("sessions: skipped: no claude transcripts") };
    let w = ChatWorld::new();
    let mut sessions = Vec::new();
    for (i, f) in files.iter().enumerate() {
        let pid = 3000 + i as u32;
        let body = fs::read(f).unwrap();
        w.claude(pid, &uuid(pid), &body);
        sessions.push((uuid(pid), body));
    }
    let d = w.daemon(&[]);
    let mut c = big(&d);
    let mut counted = 0;
    for (sid, body) in &sessions {
        let mut ix = nineagents::chat::Index::new(nineagents::chat::Format::Claude, 1 << 20);
        ix.feed(0, body);
        let want = ix.usage().render();
        let dir = format!("/sessions/claude/{sid}");
        let got = c.cat(&format!("{dir}/usage"), MSG_FID);
        assert_eq!(usage_totals(&got), want, "{sid}");
        let entries = c.try_list(&dir, LIST_FID, c.msize - IOHDRSZ).unwrap();
        let usage = entries.iter().find(|e| e.name == "usage").expect("a session with a chat lists usage");
        assert_eq!(usage.length, got.len() as u64, "{sid}: the listed length");
        counted += usize::from(!want.starts_with(b"input 0\noutput 0\n"));
    }
    eprintln!("sessions: usage of {} claude sessions, {counted} with tokens", sessions.len());
}

#[test]
fn a_sessions_usage_counts_each_reply_once_by_its_last_record_and_includes_its_subagents() {
    // Claude Code writes a reply's usage on every content block's record;
    // the output grows while it streams, so the last record's count is
    // the reply's. The subagent's tokens are in the session's total and in
    // its own `usage`.
    let w = ChatWorld::new();
    let sid = uuid(9);
    let reply = |id: &str, block: &str, out: u64, sidechain: bool| {
        format!(
            r#"{{"type":"assistant","sessionId":"{sid}","isSidechain":{sidechain},"timestamp":"{}","message":{{"id":"{id}","model":"claude-x","role":"assistant","content":[{{"type":"text","text":"{block}"}}],"usage":{{"input_tokens":10,"output_tokens":{out},"cache_creation_input_tokens":3,"cache_read_input_tokens":100}}}}}}"#,
            ts(2)
        )
    };
    let main =
        w.claude(9, &sid, &lines(&[claude_user("go", 1), reply("m1", "a", 5, false), reply("m1", "b", 9, false)]));
    let stem = main.with_extension("");
    fs::create_dir_all(stem.join("subagents")).unwrap();
    fs::write(stem.join("subagents/agent-s1.jsonl"), lines(&[reply("m2", "sub", 7, true)])).unwrap();
    let d = w.daemon(&[]);
    let mut c = big(&d);
    let get = |text: &[u8], name: &str| -> u64 {
        let text = std::str::from_utf8(text).unwrap();
        let line =
            text.lines().find(|l| l.split(' ').next() == Some(name)).unwrap_or_else(|| panic!("{name} in {text}"));
        line.rsplit(' ').next().unwrap().parse().unwrap()
    };
    let total = c.cat(&format!("/sessions/claude/{sid}/usage"), MSG_FID);
    assert_eq!(get(&total, "input"), 20, "one reply's input, and the subagent's: {}", String::from_utf8_lossy(&total));
    assert_eq!(get(&total, "output"), 9 + 7, "the last record of m1, and the subagent's");
    assert_eq!(get(&total, "cache_read"), 200);
    assert_eq!(get(&total, "cache_write"), 6);
    assert_eq!(get(&total, "output.claude-x"), 16);
    let sub = c.cat(&format!("/sessions/claude/{sid}/agents/s1/usage"), MSG_FID);
    assert_eq!((get(&sub, "input"), get(&sub, "output")), (10, 7), "{}", String::from_utf8_lossy(&sub));
    // The running agent's `usage` is its session's.
    assert_eq!(c.cat("/active/claude/9/usage", MSG_FID), total, "/active's usage is the session's");
    let entries = c.try_list("/active/claude/9", LIST_FID, c.msize - IOHDRSZ).unwrap();
    let usage = entries.iter().find(|e| e.name == "usage").expect("/active/claude/9 lists usage");
    assert_eq!(usage.length, total.len() as u64);
}

#[test]
fn ten_thousand_sessions_in_a_hundred_projects_list_whole_in_order_with_their_times() {
    // The bench's home (bench/sessions.rs times it); here, that the
    // listing is whole, ordered, and each entry carries its transcript's
    // mtime, across the slices it is looked at in.
    let s = Scratch::new();
    let mut want = Vec::new();
    for p in 0..100 {
        for i in 0..100 {
            let n = p * 100 + i;
            let sid = uuid(50_000 + n);
            let rel = format!(".claude/projects/-p{p}/{sid}.jsonl");
            let path = s.home_file(&rel, lines(&[claude_user("x", 1)]).as_slice());
            let t = filetime_of(&path, 1_700_000_000 + u64::from(n));
            want.push((sid, t));
        }
    }
    want.sort();
    let d = Daemon::start_in(&s, &[]);
    let mut c = big(&d);
    let got = c.try_list("/sessions/claude", LIST_FID, c.msize - IOHDRSZ).unwrap();
    let got: Vec<(String, u64)> = got.iter().map(|e| (e.name.clone(), u64::from(e.mtime))).collect();
    assert_eq!(got.len(), 10_000);
    assert!(got == want, "the listing is not every session in order with its transcript's mtime");
}

/// Set `path`'s mtime to `t` (Unix seconds); `t`.
fn filetime_of(path: &std::path::Path, t: u64) -> u64 {
    let f = fs::File::options().write(true).open(path).unwrap();
    f.set_modified(std::time::UNIX_EPOCH + std::time::Duration::from_secs(t)).unwrap();
    t
}

/// `/health` says, per harness, what was read and what no rule knows: a
/// record type nobody has seen is counted with the first file it was met
/// in, a version newer than the rules' is marked, and nothing else changes
/// what the chat says.
#[test]
fn health_shows_every_harness_and_the_drift_met_in_what_was_read() {
    let w = ChatWorld::new();
    let sid = uuid(41);
    let body = lines(&[
        claude_user("hi", 1),
        r#"{"type":"brand-new-record","uuid":"b1","message":{"role":"user","content":"words"},"version":"2.1.400"}"#
            .to_string(),
        r#"{"type":"user","uuid":"b2","version":"2.1.400","message":{"role":"user","content":"again"}}"#.to_string(),
    ]);
    let main = w.claude(41, &sid, &body);
    let d = w.daemon(&[]);
    let mut c = big(&d);
    let before = String::from_utf8(c.cat("/health", MSG_FID)).unwrap();
    for h in ["claude", "codex", "dsh", "hermes", "omp", "pi"] {
        assert!(before.lines().any(|l| l.starts_with(&format!("harness {h} read 0 "))), "{h} in {before}");
    }
    assert_eq!(chat(&mut c, &format!("/sessions/claude/{sid}/chat")).len(), 2);
    let after = String::from_utf8(c.cat("/health", MSG_FID)).unwrap();
    let claude = after.lines().find(|l| l.starts_with("harness claude ")).unwrap();
    assert_eq!(claude, "harness claude read 1 bad_lines 0 glued_lines 0 newest 2.1.400 rules 2.1.339 newer");
    let rel = main.strip_prefix(w.scratch.home.join(".claude")).unwrap().to_string_lossy().into_owned();
    assert!(after.contains(&format!("unknown claude brand-new-record count 1 with_text 1 first {rel}\n")), "{after}");
    // Read again: nothing is counted twice.
    assert_eq!(chat(&mut c, &format!("/sessions/claude/{sid}/chat")).len(), 2);
    assert_eq!(String::from_utf8(c.cat("/health", MSG_FID)).unwrap(), after);
}
