//! `chat/` through the daemon on fixture agents: a claude found by its
//! registry record and a codex by the rollout its fd holds. One file per
//! message with the right name, each read exactly as long as its stat at
//! every offset and read size, one spelling per name, and each message's
//! mtime its record's timestamp.

mod active_fakes;
mod chat_fakes;
mod common;

use chat_fakes::*;
use common::*;

const SID: &str = "5f1c7a52-3b4e-4d61-9a0b-2c8e7f6d1a90";

/// A claude transcript of every kind of message, with bookkeeping lines
/// between them, and the names and texts it must be served as.
fn claude_fixture() -> (Vec<u8>, Vec<(&'static str, String)>) {
    let said = "two files:\n- a.rs\n- b \"quoted\" \\ path\ttab é ✓ 🎨";
    let body = lines(&[
        claude_user("list the files", 0),
        claude_title("Listing files"),
        claude_assistant(said, 1),
        claude_thinking("they want ls", 2),
        claude_tool_use("toolu_1", "Bash", serde_json::json!({"command":"ls -la"}), 3),
        claude_tool_result("toolu_1", "a.rs\nb.rs\n", 4),
        claude_tool_result("toolu_unknown", "an answer to nothing we saw", 5),
        r#"{"type":"progress","data":{"type":"hook_progress"},"timestamp":"2025-11-28T12:51:32.000Z"}"#.to_string(),
        claude_user("thanks", 7),
    ]);
    let want = vec![
        ("00000000-user", "list the files\n".to_string()),
        ("00000001-assistant", format!("{said}\n")),
        ("00000002-thinking", "they want ls\n".to_string()),
        ("00000003-bash", "Bash\n{\"command\":\"ls -la\"}\n".to_string()),
        ("00000004-bash-result", "a.rs\nb.rs\n".to_string()),
        ("00000005-tool-result", "an answer to nothing we saw\n".to_string()),
        ("00000006-user", "thanks\n".to_string()),
    ];
    (body, want)
}

fn codex_fixture(id: &str) -> (Vec<u8>, Vec<(&'static str, String)>) {
    let body = lines(&[
        codex_meta(id, 0),
        codex_message("user", "fix the \"scanner\"", 1),
        codex_event("working on it", 2),
        codex_message("assistant", "Done.\nIt was the escapes: \\n and \\u00e9 é", 3),
        codex_call("call_1", "shell", r#"{"command":["rg","--json","fn main"]}"#, 4),
        codex_output("call_1", "{\"output\":\"src/main.rs:1:fn main\\n\",\"metadata\":{\"exit_code\":0}}", 5),
        codex_message("user", "thanks", 6),
    ]);
    let want = vec![
        ("00000000-user", "fix the \"scanner\"\n".to_string()),
        ("00000001-assistant", "Done.\nIt was the escapes: \\n and \\u00e9 é\n".to_string()),
        ("00000002-shell", "shell\n{\"command\":[\"rg\",\"--json\",\"fn main\"]}\n".to_string()),
        (
            "00000003-shell-result",
            "{\"output\":\"src/main.rs:1:fn main\\n\",\"metadata\":{\"exit_code\":0}}\n".to_string(),
        ),
        ("00000004-user", "thanks\n".to_string()),
    ];
    (body, want)
}

fn owned(want: &[(&str, String)]) -> Vec<(String, String)> {
    want.iter().map(|(n, t)| (n.to_string(), t.clone())).collect()
}

#[test]
fn a_claude_chat_lists_one_file_per_message_named_by_id_and_kind() {
    let w = ChatWorld::new();
    let (body, want) = claude_fixture();
    w.claude(100, SID, &body);
    let d = w.daemon(&[]);
    let mut c = d.session(Dialect::P2000);
    assert_eq!(chat_text(&mut c, &chat_dir("claude", 100)), owned(&want));
    // The same through the built-in client: `ls` and `cat`.
    let addr = format!("unix!{}", arg(d.socket.as_ref().unwrap()));
    let ls = run_client(&d.scratch, &["ls", "-a", &addr, "/active/claude/100/chat"], b"");
    assert!(ls.status.success(), "{}", String::from_utf8_lossy(&ls.stderr));
    let listed: Vec<&str> = std::str::from_utf8(&ls.stdout).unwrap().lines().collect();
    assert_eq!(listed, want.iter().map(|w| w.0).collect::<Vec<_>>());
    let cat = run_client(&d.scratch, &["cat", "-a", &addr, "/active/claude/100/chat/00000001-assistant"], b"");
    assert!(cat.status.success(), "{}", String::from_utf8_lossy(&cat.stderr));
    assert_eq!(String::from_utf8(cat.stdout).unwrap(), want[1].1);
}

#[test]
fn a_codex_chat_names_tool_calls_after_their_tool_and_results_after_their_call() {
    let w = ChatWorld::new();
    let id = uuid(7);
    let (body, want) = codex_fixture(&id);
    w.codex(200, &id, &body);
    let d = w.daemon(&[]);
    let mut c = d.session(Dialect::P2000);
    assert_eq!(c.cat("/active/codex/200/via", MSG_FID), b"fd\n");
    assert_eq!(chat_text(&mut c, &chat_dir("codex", 200)), owned(&want));
}

#[test]
fn every_read_at_every_offset_and_size_is_exactly_what_stat_says_is_there() {
    let w = ChatWorld::new();
    let (claude, _) = claude_fixture();
    w.claude(100, SID, &claude);
    let id = uuid(7);
    let (codex, _) = codex_fixture(&id);
    w.codex(200, &id, &codex);
    let d = w.daemon(&[]);
    for dialect in [Dialect::P2000, Dialect::P2000u] {
        let mut c = d.session(dialect);
        let counts = [1, 7, 100, c.msize - IOHDRSZ];
        for dir in [chat_dir("claude", 100), chat_dir("codex", 200)] {
            let msgs = read_chat(&mut c, &dir);
            assert!(!msgs.is_empty(), "{dir}");
            for (e, whole) in msgs {
                check_every_offset(&mut c, &format!("{dir}/{}", e.name), &whole, &counts);
            }
        }
    }
}

#[test]
fn a_long_message_read_in_small_pieces_is_the_whole_message() {
    // A message far longer than a read, with escapes everywhere, read
    // front to back in 7-byte reads and back to front in 100-byte reads.
    let w = ChatWorld::new();
    let mut text = String::new();
    for i in 0..3000 {
        text.push_str(&format!("line {i}: \"q\" \\ tab\t é ✓ {{\"json\":[{i}]}}\n"));
    }
    let body = lines(&[
        claude_user("go", 0),
        claude_tool_use("t1", "Read", serde_json::json!({"file_path":"/a"}), 1),
        claude_tool_result("t1", &text, 2),
    ]);
    w.claude(100, SID, &body);
    let d = w.daemon(&[]);
    let mut c = d.session(Dialect::P2000);
    let path = format!("{}/00000002-read-result", chat_dir("claude", 100));
    let (st, whole) = read_msg(&mut c, &path);
    assert_eq!(whole, text.as_bytes(), "the result renders as its text");
    assert_eq!(st.length, whole.len() as u64);
    walk_whole(&mut c, &path, MSG_FID);
    c.open_ok(MSG_FID, OREAD);
    let mut forward = Vec::new();
    loop {
        let piece = c.read_ok(MSG_FID, forward.len() as u64, 7);
        if piece.is_empty() {
            break;
        }
        forward.extend_from_slice(&piece);
    }
    assert_eq!(forward, whole);
    let mut end = whole.len() as u64;
    let mut backward = Vec::new();
    while end > 0 {
        let off = end.saturating_sub(100);
        let mut piece = c.read_ok(MSG_FID, off, (end - off) as u32);
        assert_eq!(piece.len() as u64, end - off, "read at {off}");
        piece.extend_from_slice(&backward);
        backward = piece;
        end = off;
    }
    assert_eq!(backward, whole);
    c.clunk_ok(MSG_FID);
}

#[test]
fn every_message_has_exactly_one_name() {
    let w = ChatWorld::new();
    let (body, _) = claude_fixture();
    w.claude(100, SID, &body);
    let d = w.daemon(&[]);
    let mut c = d.session(Dialect::P2000);
    let dir = chat_dir("claude", 100);
    assert!(resolves(&mut c, &format!("{dir}/00000000-user")));
    assert!(resolves(&mut c, &format!("{dir}/00000003-bash")));
    assert!(resolves(&mut c, &format!("{dir}/00000004-bash-result")));
    for bad in [
        "1-user",
        "0-user",
        "000000001-user",
        "0000000-user",
        "00000001-user",
        "00000000-assistant",
        "00000000-User",
        "00000000-user ",
        "00000000user",
        "00000000-",
        "00000000",
        "+0000000-user",
        "00000003-tool-call",
        "00000004-tool-result",
        "00000004-bash",
        "00000007-user",
        "99999999-user",
    ] {
        assert!(!resolves(&mut c, &format!("{dir}/{bad}")), "{bad} resolved");
    }
    // A name with a slash in it is no name at all: refused whole.
    let names: Vec<&[u8]> = vec![b"active", b"claude", b"100", b"chat", b"00000000-user/"];
    let r = c.walk_bytes(ROOT, MSG_FID, &names);
    assert!(r.is_error() || r.qids().len() < names.len(), "00000000-user/ resolved: {r:?}");
    if !r.is_error() {
        assert!(c.clunk(MSG_FID).is_error(), "a walk that stopped short left a fid");
    }
    // The daemon still answers.
    assert_eq!(c.cat("/pid", MSG_FID), format!("{}\n", d.pid).as_bytes());
}

#[test]
fn a_message_mtime_is_its_record_timestamp() {
    let w = ChatWorld::new();
    let body = lines(&[
        claude_user("first", 0),
        claude_assistant("a minute later", 60),
        // No timestamp of its own: the last one seen.
        r#"{"type":"user","message":{"role":"user","content":"untimed"}}"#.to_string(),
        claude_user("an hour later", 3600),
        // An offset timestamp: 14:51:26+02:00 is 12:51:26Z.
        r#"{"type":"user","message":{"role":"user","content":"offset"},"timestamp":"2025-11-28T14:51:26.5+02:00"}"#
            .to_string(),
    ]);
    w.claude(100, SID, &body);
    let id = uuid(9);
    let rollout =
        lines(&[codex_meta(&id, 0), codex_message("user", "hi", 5), codex_message("assistant", "hello", 125)]);
    w.codex(200, &id, &rollout);
    let d = w.daemon(&[]);
    let mut c = d.session(Dialect::P2000u);
    let claude: Vec<(String, u32)> =
        list_chat(&mut c, &chat_dir("claude", 100)).into_iter().map(|e| (e.name.clone(), e.mtime)).collect();
    let t = |s: u64| (T0 + s) as u32;
    assert_eq!(
        claude,
        [
            ("00000000-user".to_string(), t(0)),
            ("00000001-assistant".to_string(), t(60)),
            ("00000002-user".to_string(), t(60)),
            ("00000003-user".to_string(), t(3600)),
            ("00000004-user".to_string(), t(0)),
        ]
    );
    let (st, _) = read_msg(&mut c, &format!("{}/00000001-assistant", chat_dir("claude", 100)));
    assert_eq!(st.mtime, t(60), "a stat says what the listing says");
    let codex: Vec<u32> = list_chat(&mut c, &chat_dir("codex", 200)).into_iter().map(|e| e.mtime).collect();
    assert_eq!(codex, [t(5), t(125)]);
}

#[test]
fn chat_is_a_directory_and_its_messages_are_read_only_files() {
    let w = ChatWorld::new();
    let (body, _) = claude_fixture();
    w.claude(100, SID, &body);
    let d = w.daemon(&[]);
    let mut c = d.session(Dialect::P2000);
    let dir = chat_dir("claude", 100);
    walk_whole(&mut c, &dir, MSG_FID);
    let st = c.stat_ok(MSG_FID);
    assert_ne!(st.mode & DMDIR, 0, "{st:?}");
    assert_eq!(st.qid.ty & QTDIR, QTDIR);
    c.clunk_ok(MSG_FID);
    for e in list_chat(&mut c, &dir) {
        assert_eq!(e.mode & DMDIR, 0, "{e:?}");
        assert_eq!(e.qid.ty, QTFILE, "{e:?}");
        assert_eq!(e.mode & 0o222, 0, "{e:?} is writable");
        let path = format!("{dir}/{}", e.name);
        walk_whole(&mut c, &path, MSG_FID);
        let r = c.open(MSG_FID, OWRITE);
        assert!(r.is_error(), "{path} opened for writing");
        c.clunk_ok(MSG_FID);
    }
}

/// The seed's e2e transcript (`test/e2e.sh`), and what it expects.
#[test]
fn the_seeds_e2e_transcript_reads_as_the_seed_says() {
    let w = ChatWorld::new();
    let path = w.claude(
        100,
        SID,
        br#"{"type":"user","message":{"role":"user","content":"list the files"},"timestamp":"2026-09-24T12:51:26.691Z"}
{"type":"assistant","message":{"content":[{"type":"tool_use","id":"t1","name":"Bash","input":{"command":"ls"}}]}}
{"type":"user","message":{"content":[{"type":"tool_result","tool_use_id":"t1","content":"a\nb"}]}}
{"type":"attachment","attachment":{"type":"reminder"}}
{"type":"assistant","message":{"content":[{"type":"text","text":"two files: \"a\" and \"b\""}]}}
"#,
    );
    let d = w.daemon(&[]);
    let mut c = d.session(Dialect::P2000);
    let dir = chat_dir("claude", 100);
    let got = chat_text(&mut c, &dir);
    let want = [
        ("00000000-user", "list the files\n"),
        ("00000001-bash", "Bash\n{\"command\":\"ls\"}\n"),
        ("00000002-bash-result", "a\nb\n"),
        ("00000003-assistant", "two files: \"a\" and \"b\"\n"),
    ];
    assert_eq!(got, want.map(|(n, t)| (n.to_string(), t.to_string())));
    assert_eq!(list_chat(&mut c, &dir)[0].mtime, 1_790_254_286);
    assert!(!resolves(&mut c, &format!("{dir}/00000000-assistant")));
    append(&path, b"{\"type\":\"user\",\"message\":{\"content\":\"thanks\"}}\n");
    assert_eq!(chat_names(&mut c, &dir).last().unwrap(), "00000004-user");
    assert_eq!(read_msg(&mut c, &format!("{dir}/00000004-user")).1, b"thanks\n");
}
