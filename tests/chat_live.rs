//! `chat/` of real processes found in the real `/proc`, as the seed's
//! e2e does: a copy of `sleep` named `codex` holding its rollout open as
//! stdin (the fd route as the kernel shows it, not a fixture's symlinks),
//! and one named `claude` with its registry record. Their chats list, read
//! at their stat length, and grow as the files do while the process runs.
//!
//! Other agents may be running on the machine; every check is about the
//! pids the test started.

mod active_fakes;
mod chat_fakes;
mod common;

use std::fs;
use std::process::Stdio;

use active_fakes::*;
use chat_fakes::*;
use common::*;

#[test]
fn a_real_codex_holding_its_rollout_as_stdin_serves_its_chat_as_it_grows() {
    let w = Live::new();
    let rollout = w.codex_rollout(CODEX_ID);
    append(
        &rollout,
        &lines(&[
            codex_message("user", "port the scanner", 1),
            codex_call("c1", "exec_command", r#"{"cmd":"cargo test"}"#, 2),
            codex_output("c1", "test result: ok", 3),
        ]),
    );
    let agent = w.spawn("codex", &[], Stdio::from(fs::File::open(&rollout).unwrap()));
    let d = w.daemon();
    let mut c = d.session(Dialect::P2000);
    let dir = chat_dir("codex", agent.pid);
    assert_eq!(c.cat(&format!("/active/codex/{}/via", agent.pid), MSG_FID), b"fd\n");
    let want = |extra: &[(&str, &str)]| {
        let mut v: Vec<(String, String)> = [
            ("00000000-user", "port the scanner\n"),
            ("00000001-exec_command", "exec_command\n{\"cmd\":\"cargo test\"}\n"),
            ("00000002-exec_command-result", "test result: ok\n"),
        ]
        .iter()
        .chain(extra)
        .map(|(n, t)| (n.to_string(), t.to_string()))
        .collect();
        v.dedup();
        v
    };
    assert_eq!(chat_text(&mut c, &dir), want(&[]));
    append(&rollout, &lines(&[codex_event("done", 4), codex_message("assistant", "all green", 5)]));
    assert_eq!(chat_text(&mut c, &dir), want(&[("00000003-assistant", "all green\n")]));
    // The client lists it too.
    let ls = w.client_ok(&d, "ls", &dir);
    assert_eq!(ls.lines().count(), 4, "{ls}");
}

#[test]
fn a_real_claude_found_by_its_registry_record_serves_its_chat() {
    let w = Live::new();
    let (agent, transcript) = w.claude();
    let d = w.daemon();
    let mut c = d.session(Dialect::P2000);
    let dir = chat_dir("claude", agent.pid);
    assert_eq!(
        chat_text(&mut c, &dir),
        [
            ("00000000-user".to_string(), "list the files\n".to_string()),
            ("00000001-assistant".into(), "two files\n".into())
        ]
    );
    append(&transcript, &lines(&[claude_user("and now?", 10)]));
    let names = chat_names(&mut c, &dir);
    assert_eq!(names, ["00000000-user", "00000001-assistant", "00000002-user"]);
    assert_eq!(w.client_ok(&d, "cat", &format!("{dir}/00000002-user")), "and now?\n");
}
