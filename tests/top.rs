//! `9agents top` (issue 24): a snapshot when standard output is not a
//! terminal, and live under tmux (`send-keys`, `capture-pane`): an agent
//! made to wait moves to the top once its registry changes, and `q` quits.

mod active_fakes;
mod chat_fakes;
mod common;

use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

use active_fakes::*;
use common::*;

#[test]
fn a_snapshot_of_the_demo_lists_its_agents_the_waiting_one_first() {
    let d = Daemon::start(&["--demo"]);
    let addr = format!("unix!{}", d.socket.as_ref().unwrap().display());
    let out = d.client(&["top", "-a", &addr]);
    assert!(out.status.success(), "{out:?}");
    let text = String::from_utf8(out.stdout).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    assert!(lines[0].contains("STATE") && lines[0].contains("TITLE"), "{text}");
    assert_eq!(lines.len(), 3, "the demo's two agents: {text}");
    assert!(lines[1].trim_start().starts_with("waiting: "), "the waiting one first: {text}");
    assert!(lines[2].trim_start().starts_with("busy"), "{text}");
}

/// An agent's tokens today are its replies' since local midnight: one
/// written now counts (its input and output), the fixture's of 2025 not.
#[test]
fn a_snapshot_shows_each_agents_tokens_today() {
    let w = Live::new();
    let (_a, transcript) = w.claude();
    let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_secs();
    let (y, m, d) = nineagents::localtime::civil_from_days((now / 86_400) as i64);
    let stamp = format!("{y:04}-{m:02}-{d:02}T{:02}:{:02}:{:02}.000Z", now % 86_400 / 3600, now % 3600 / 60, now % 60);
    let reply = format!(
        r#"{{"type":"assistant","uuid":"today-1","timestamp":"{stamp}","requestId":"req_today","message":{{"id":"msg_today","model":"claude-opus-4-5","role":"assistant","content":[{{"type":"text","text":"done"}}],"usage":{{"input_tokens":7,"output_tokens":30,"cache_creation_input_tokens":0,"cache_read_input_tokens":0}}}}}}"#
    );
    let mut body = std::fs::read(&transcript).unwrap();
    body.extend_from_slice(format!("{reply}\n").as_bytes());
    std::fs::write(&transcript, body).unwrap();
    let d = w.daemon();
    let addr = format!("unix!{}", d.socket.as_ref().unwrap().display());
    let out = d.client(&["top", "-a", &addr]);
    assert!(out.status.success(), "{out:?}");
    let text = String::from_utf8(out.stdout).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    let col = lines[0].find("TODAY").expect("a TODAY column");
    let row = lines.iter().find(|l| l.contains("claude")).unwrap_or_else(|| panic!("no claude row: {text}"));
    let today = row.get(col..).and_then(|r| r.split_whitespace().next());
    assert_eq!(today, Some("37"), "input 7 and output 30 today:\n{text}");
}

/// tmux on a server of the test's own (`-S`), never the user's.
fn tmux(sock: &Path, args: &[&str]) -> std::process::Output {
    Command::new("tmux").arg("-S").arg(sock).args(args).output().unwrap()
}

fn screen(sock: &Path) -> String {
    String::from_utf8_lossy(&tmux(sock, &["capture-pane", "-p", "-t", "top"]).stdout).into_owned()
}

#[test]
fn under_tmux_an_agent_made_to_wait_moves_to_the_top_and_q_quits() {
    if Command::new("tmux").arg("-V").output().is_err() {
        assert!(std::env::var_os("CI").is_none(), "CI has no tmux (.ci/run installs it)");
        eprintln!("top: skipped: no tmux (apt install tmux)");
        return;
    }
    let w = Live::new();
    let (a, _) = w.claude();
    let d = w.daemon();
    let addr = format!("unix!{}", d.socket.as_ref().unwrap().display());
    let sock = w.scratch.root.join("tmux.sock");
    let cmd = format!(
        "env -i HOME={} XDG_RUNTIME_DIR={} PATH=/usr/bin:/bin TERM=screen {BIN} top -a {addr}",
        w.scratch.home.display(),
        w.scratch.runtime.display()
    );
    let st = tmux(&sock, &["new-session", "-d", "-s", "top", "-x", "150", "-y", "20", &cmd]);
    assert!(st.status.success(), "{st:?}");
    let pid = a.pid.to_string();
    let shown = poll(Duration::from_secs(15), || {
        screen(&sock)
            .contains("e2e")
            .then_some(())
            .or_else(|| screen(&sock).lines().any(|l| l.contains("claude") && l.contains("idle")).then_some(()))
    });
    assert!(shown.is_some(), "the agent never showed:\n{}", screen(&sock));
    let t = Instant::now();
    set_status(&w, a.pid, "waiting");
    let moved = poll(Duration::from_secs(15), || {
        let s = screen(&sock);
        let first = s.lines().nth(2).unwrap_or("").trim_start_matches(['>', ' ']).to_string();
        first.starts_with("waiting").then_some(())
    });
    let took = t.elapsed();
    assert!(moved.is_some(), "the waiting agent is not at the top:\n{}", screen(&sock));
    eprintln!("top: agent {pid} at the top {} ms after its registry changed", took.as_millis());
    tmux(&sock, &["send-keys", "-t", "top", "q"]);
    let quit =
        poll(Duration::from_secs(10), || (!tmux(&sock, &["has-session", "-t", "top"]).status.success()).then_some(()));
    let _ = tmux(&sock, &["kill-server"]);
    assert!(quit.is_some(), "q did not quit");
}

#[test]
fn under_tmux_top_on_the_demo_follows_demo_change() {
    if Command::new("tmux").arg("-V").output().is_err() {
        eprintln!("top: skipped: no tmux (apt install tmux)");
        return;
    }
    let s = Scratch::new();
    let d = Daemon::start_in(&s, &["--demo"]);
    let addr = format!("unix!{}", d.socket.as_ref().unwrap().display());
    let sock = s.root.join("tmux.sock");
    let cmd = format!(
        "env -i HOME={} XDG_RUNTIME_DIR={} PATH=/usr/bin:/bin TERM=screen {BIN} top -a {addr}",
        s.home.display(),
        s.runtime.display()
    );
    assert!(tmux(&sock, &["new-session", "-d", "-s", "top", "-x", "150", "-y", "20", &cmd]).status.success());
    // The demo's live agent (48213), by its title.
    let row = |state: &str| {
        let s = screen(&sock);
        s.lines().any(|l| l.contains("listings skip symlinks") && l.trim_start_matches(['>', ' ']).starts_with(state))
    };
    let busy = poll(Duration::from_secs(15), || row("busy").then_some(()));
    assert!(busy.is_some(), "the demo's busy agent never showed:\n{}", screen(&sock));
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("demo/change");
    let out = s.command_of(&script).args(["status", "idle"]).output().unwrap();
    assert!(out.status.success(), "{out:?}");
    let idle = poll(Duration::from_secs(15), || row("idle").then_some(()));
    let shown = screen(&sock);
    if idle.is_none() {
        let _ = tmux(&sock, &["kill-server"]);
        panic!("demo/change status idle never showed:\n{shown}");
    }
    // Enter: the selected agent's last messages; any key: back.
    tmux(&sock, &["send-keys", "-t", "top", "Enter"]);
    let last = poll(Duration::from_secs(15), || screen(&sock).contains("its last messages").then_some(()));
    let shown = screen(&sock);
    tmux(&sock, &["send-keys", "-t", "top", "x"]);
    let back = poll(Duration::from_secs(15), || screen(&sock).contains("STATE").then_some(()));
    let _ = tmux(&sock, &["kill-server"]);
    assert!(last.is_some(), "Enter showed no messages:\n{shown}");
    assert!(shown.lines().any(|l| l.starts_with("0000")), "a message's name: {shown}");
    assert!(back.is_some(), "a key did not go back");
}
