//! /active against real processes, as the seed's e2e does: copies of
//! `/bin/sleep` named `claude` and `codex`, started by the test, found by
//! the daemon in the real `/proc` and resolved through their harness's own
//! records — the registry record written for the claude's pid, the rollout
//! the codex holds open as stdin, the writer lock a codex holds. Checked
//! through the built-in client and raw connections: the listing, every
//! field's text, `via`, the transcript byte for byte as it grows, stat
//! lengths and qids against reads and walks, and the entry gone once the
//! process is.
//!
//! Other agents may be running on the machine; every check is about the
//! pids the test started.

mod active_fakes;
mod common;

use std::ffi::CString;
use std::fs;
use std::io::Write;
use std::os::unix::process::CommandExt;
use std::process::{Command, Stdio};

use active_fakes::*;
use common::*;

/// Fids the tests walk with, apart from `ROOT`.
const F: u32 = 1;
const G: u32 = 2;

fn lines(text: &str) -> Vec<&str> {
    text.lines().collect()
}

#[test]
fn ls_lists_the_claude_agent_and_cat_serves_every_field_from_proc_and_its_registry() {
    let w = Live::new();
    let (agent, transcript) = w.claude();
    let d = w.daemon();
    let dir = format!("/active/claude/{}", agent.pid);
    assert_eq!(lines(&w.client_ok(&d, "ls", "/active")), ["claude", "codex", "dsh", "hermes", "omp", "pi", "wait"]);
    assert!(lines(&w.client_ok(&d, "ls", "/active/claude")).contains(&agent.pid.to_string().as_str()));
    assert_eq!(lines(&w.client_ok(&d, "ls", &dir)), CLAUDE_ENTRIES);
    let cat = |field: &str| w.client_ok(&d, "cat", &format!("{dir}/{field}"));
    assert_eq!(cat("pid"), format!("{}\n", agent.pid));
    assert_eq!(cat("ppid"), format!("{}\n", std::process::id()));
    let started: u64 = cat("started").trim().parse().unwrap();
    assert_eq!(started, started_of(agent.pid));
    assert!(started.abs_diff(unix_now()) < 120, "started {started} is not about now");
    assert_eq!(cat("cwd"), format!("{}\n", arg(&w.work)));
    assert_eq!(cat("name"), format!("{CLAUDE_NAME}\n"));
    assert_eq!(cat("title"), format!("{CLAUDE_TITLE}\n"));
    assert_eq!(cat("session"), format!("{CLAUDE_SID}\n"));
    assert_eq!(cat("model"), format!("{CLAUDE_MODEL}\n"));
    assert_eq!(cat("via"), "registry\n");
    assert_eq!(cat("zmx"), format!("{ZMX}\n"));
    assert_eq!(cat("status"), format!("{CLAUDE_STATUS}\n"));
    assert_eq!(cat("transcript").as_bytes(), fs::read(&transcript).unwrap());
}

#[test]
fn the_status_is_derived_again_at_every_read() {
    let w = Live::new();
    let (agent, _) = w.claude();
    let d = w.daemon();
    let mut c = d.session(Dialect::P2000);
    let path = format!("/active/claude/{}/status", agent.pid);
    assert_eq!(c.cat(&path, F), format!("{CLAUDE_STATUS}\n").as_bytes());
    let record = w.scratch.home.join(format!(".claude/sessions/{}.json", agent.pid));
    let busy = fs::read_to_string(&record).unwrap().replace(r#""status":"idle""#, r#""status":"busy""#);
    fs::write(&record, busy).unwrap();
    assert_eq!(c.cat(&path, F), b"busy\n");
}

#[test]
fn the_transcript_reads_byte_identical_to_the_file_and_grows_after_an_append() {
    let w = Live::new();
    let (agent, transcript) = w.claude();
    let d = w.daemon();
    let mut c = d.session(Dialect::P2000);
    let path = format!("/active/claude/{}/transcript", agent.pid);
    assert_eq!(c.cat(&path, F), fs::read(&transcript).unwrap());
    // A reader holding it open sees what is appended after it opened.
    c.open_path(&path, G);
    let before = c.read_all(G);
    let line = b"{\"type\":\"user\",\"message\":{\"role\":\"user\",\"content\":\"and now?\"}}\n";
    fs::OpenOptions::new().append(true).open(&transcript).unwrap().write_all(line).unwrap();
    let after = c.read_all(G);
    c.clunk_ok(G);
    assert_eq!(after, [before, line.to_vec()].concat());
    assert_eq!(after, fs::read(&transcript).unwrap());
    c.walk_path(&path, F);
    assert_eq!(c.stat_ok(F).length, after.len() as u64);
    c.clunk_ok(F);
    assert_eq!(c.cat(&path, F), after);
}

#[test]
fn every_entry_of_an_agent_stats_as_listed_with_the_length_its_read_returns() {
    let w = Live::new();
    let (agent, transcript) = w.claude();
    let d = w.daemon();
    let mut c = d.session(Dialect::P2000);
    let dir = format!("/active/claude/{}", agent.pid);
    let listed = c.list(&dir, F, c.msize - IOHDRSZ);
    assert_eq!(names(&listed), CLAUDE_ENTRIES);
    // chat/ and agents/ are directories; wait is a stream whose reads park.
    for e in listed.iter().filter(|e| !["chat", "agents", "wait"].contains(&e.name.as_str())) {
        let path = format!("{dir}/{}", e.name);
        c.walk_path(&path, G).qids();
        let stat = c.stat_ok(G);
        c.clunk_ok(G);
        let data = c.cat(&path, G);
        assert_eq!((stat.qid, stat.length, stat.mode, &stat.name), (e.qid, e.length, e.mode, &e.name), "{path}");
        assert_eq!(data.len() as u64, e.length, "{path}: a read returns the length stat gives");
        assert_eq!((e.qid.ty, e.mode & DMDIR), (QTFILE, 0), "{path}");
    }
    let t = listed.iter().find(|e| e.name == "transcript").unwrap();
    assert_eq!(t.length, fs::metadata(&transcript).unwrap().len());
    c.walk_path(&dir, G);
    let dir_stat = c.stat_ok(G);
    c.clunk_ok(G);
    assert_eq!(
        (dir_stat.name.clone(), dir_stat.qid.ty, dir_stat.mode & DMDIR != 0),
        (agent.pid.to_string(), QTDIR, true)
    );
}

/// CONFORMANCE 26: the qid a listing reports is the qid a walk reports
/// is the qid stat reports, QTDIR exactly for directories.
#[test]
fn a_walk_to_each_entry_of_an_agent_reports_the_qid_its_listing_and_stat_report() {
    let w = Live::new();
    let (agent, _) = w.claude();
    let d = w.daemon();
    let mut c = d.session(Dialect::P2000);
    let dir = format!("/active/claude/{}", agent.pid);
    let listed = c.list(&dir, F, c.msize - IOHDRSZ);
    let mut wrong = Vec::new();
    let pid = agent.pid.to_string();
    let harness = c.list("/active/claude", F, c.msize - IOHDRSZ);
    let entry = harness.iter().find(|e| e.name == pid).expect("the agent is listed");
    let walked = *c.walk_path(&dir, G).qids().last().unwrap();
    let stat = c.stat_ok(G);
    c.clunk_ok(G);
    if walked != entry.qid || stat.qid != entry.qid || entry.qid.ty != QTDIR {
        wrong.push(format!("{pid}: listed {:?}, walked {walked:?}, stat {:?}", entry.qid, stat.qid));
    }
    for e in &listed {
        let path = format!("{dir}/{}", e.name);
        let walked = *c.walk_path(&path, G).qids().last().unwrap();
        let opened = c.open_ok(G, OREAD);
        c.clunk_ok(G);
        if walked != e.qid || opened != e.qid {
            wrong.push(format!("{}: listed {:?}, walked {walked:?}, opened {opened:?}", e.name, e.qid));
        }
    }
    assert!(wrong.is_empty(), "walk and listing disagree:\n{}", wrong.join("\n"));
}

#[test]
fn a_codex_agent_holding_its_rollout_as_stdin_resolves_via_fd_and_titles_from_the_session_index() {
    let w = Live::new();
    let (agent, rollout) = w.codex();
    let d = w.daemon();
    let dir = format!("/active/codex/{}", agent.pid);
    assert!(lines(&w.client_ok(&d, "ls", "/active/codex")).contains(&agent.pid.to_string().as_str()));
    let want = [
        "agents",
        "chat",
        "cwd",
        "model",
        "pid",
        "ppid",
        "session",
        "started",
        "title",
        "transcript",
        "usage",
        "via",
        "wait",
        "zmx",
    ];
    assert_eq!(lines(&w.client_ok(&d, "ls", &dir)), want, "a rollout without a turn event has no status");
    let cat = |field: &str| w.client_ok(&d, "cat", &format!("{dir}/{field}"));
    assert_eq!(cat("pid"), format!("{}\n", agent.pid));
    assert_eq!(cat("ppid"), format!("{}\n", std::process::id()));
    assert_eq!(cat("started").trim().parse::<u64>().unwrap(), started_of(agent.pid));
    assert_eq!(cat("cwd"), format!("{}\n", arg(&w.work)));
    assert_eq!(cat("session"), format!("{CODEX_ID}\n"));
    assert_eq!(cat("via"), "fd\n");
    assert_eq!(cat("model"), format!("{CODEX_MODEL}\n"));
    assert_eq!(cat("title"), format!("{CODEX_TITLE}\n"));
    assert!(!w.client(&d, "cat", &format!("{dir}/name")).status.success(), "a codex agent has no name: no file");
    assert_eq!(cat("zmx"), "", "outside zmx, zmx is empty");
    assert_eq!(cat("transcript").as_bytes(), fs::read(&rollout).unwrap());
}

#[test]
fn a_harness_that_publishes_no_status_has_no_status_file() {
    let w = Live::new();
    let (agent, _) = w.codex();
    let d = w.daemon();
    let mut c = d.session(Dialect::P2000);
    let dir = format!("/active/codex/{}", agent.pid);
    assert!(!names(&c.list(&dir, F, c.msize - IOHDRSZ)).contains(&"status".to_string()));
    assert!(c.try_cat(&format!("{dir}/status"), F).is_err());
    assert!(!c.reaches(&format!("{dir}/status"), F), "a walk reaches a status the harness never published");
}

#[test]
fn a_codex_agent_that_holds_only_its_thread_writer_lock_resolves_via_lock() {
    let w = Live::new();
    let rollout = w.codex_rollout(CODEX_ID);
    let lock = w.scratch.home_file(&format!(".codex/thread-writer-locks/{CODEX_ID}.lock"), b"");
    let lock_path = CString::new(arg(&lock)).unwrap();
    let mut cmd = Command::new(w.bin.join("codex"));
    cmd.arg("600").current_dir(&w.work).env_clear().stdin(Stdio::null()).stdout(Stdio::null()).stderr(Stdio::null());
    // SAFETY: between fork and exec only open(2) and flock(2) run, on a
    // path allocated before the fork. The fd is opened without
    // O_CLOEXEC so the lock is the exec'd process's, as codex's is.
    unsafe {
        cmd.pre_exec(move || {
            let fd = libc::open(lock_path.as_ptr(), libc::O_RDWR);
            if fd < 0 || libc::flock(fd, libc::LOCK_EX) < 0 {
                return Err(std::io::Error::last_os_error());
            }
            Ok(())
        });
    }
    let agent = Agent::spawn(cmd);
    let held = fs::read_to_string("/proc/locks").unwrap();
    assert!(
        held.lines().any(|l| l.contains("FLOCK") && l.split_whitespace().nth(4) == Some(&agent.pid.to_string())),
        "{held}"
    );
    let d = w.daemon();
    let mut c = d.session(Dialect::P2000);
    assert!(listed(&mut c, "codex", F).contains(&agent.pid.to_string()));
    let dir = format!("/active/codex/{}", agent.pid);
    assert_eq!(c.cat(&format!("{dir}/via"), F), b"lock\n");
    assert_eq!(c.cat(&format!("{dir}/session"), F), format!("{CODEX_ID}\n").as_bytes());
    assert_eq!(c.cat(&format!("{dir}/transcript"), F), fs::read(&rollout).unwrap());
}

#[test]
fn a_killed_agent_is_gone_from_the_next_listing_and_a_new_one_appears_in_it() {
    let w = Live::new();
    let (mut first, _) = w.claude();
    let d = w.daemon();
    let mut c = d.session(Dialect::P2000);
    let first_pid = first.pid.to_string();
    assert!(listed(&mut c, "claude", F).contains(&first_pid));
    first.kill();
    let now = listed(&mut c, "claude", F);
    assert!(!now.contains(&first_pid), "the killed agent {first_pid} is still listed: {now:?}");
    assert!(!c.reaches(&format!("/active/claude/{first_pid}"), F), "the killed agent still walks");
    let (second, _) = w.claude();
    let now = listed(&mut c, "claude", F);
    assert!(now.contains(&second.pid.to_string()), "the new agent {} is not listed: {now:?}", second.pid);
    assert_eq!(c.cat(&format!("/active/claude/{}/via", second.pid), F), b"registry\n");
}

#[test]
fn a_field_of_a_killed_agent_is_never_served_stale() {
    let w = Live::new();
    let (mut agent, _) = w.claude();
    let d = w.daemon();
    let mut c = d.session(Dialect::P2000);
    let dir = format!("/active/claude/{}", agent.pid);
    assert!(listed(&mut c, "claude", F).contains(&agent.pid.to_string()));
    c.walk_ok(ROOT, G, &tree_names(&format!("{dir}/status")));
    agent.kill();
    assert!(c.open(G, OREAD).is_error(), "a field of a dead agent opened");
    assert!(c.stat(G).is_error(), "a field of a dead agent stat'd");
    c.clunk_ok(G);
    assert!(c.try_cat(&format!("{dir}/pid"), F).is_err());
}

#[test]
fn a_killed_agent_not_yet_reaped_is_a_zombie_and_is_not_listed() {
    let w = Live::new();
    let (mut agent, _) = w.claude();
    let d = w.daemon();
    let mut c = d.session(Dialect::P2000);
    assert!(listed(&mut c, "claude", F).contains(&agent.pid.to_string()));
    agent.kill_leaving_a_zombie();
    assert!(!listed(&mut c, "claude", F).contains(&agent.pid.to_string()), "a zombie is listed");
}

#[test]
fn a_walk_to_a_pid_that_is_not_an_agent_fails() {
    let w = Live::new();
    let (claude, _) = w.claude();
    let (codex, _) = w.codex();
    let d = w.daemon();
    let mut c = d.session(Dialect::P2000);
    assert!(c.reaches(&format!("/active/claude/{}", claude.pid), F));
    let not_agents = [
        format!("/active/claude/{}", std::process::id()),
        format!("/active/claude/{}", d.pid),
        "/active/claude/1".to_string(),
        format!("/active/claude/{}", codex.pid),
        format!("/active/codex/{}", claude.pid),
        format!("/active/claude/0{}", claude.pid),
        format!("/active/claude/+{}", claude.pid),
        "/active/claude/self".to_string(),
        "/active/claude/4294967296".to_string(),
    ];
    for path in not_agents {
        assert!(!c.reaches(&path, F), "{path} walks");
    }
}

#[test]
fn an_agent_whose_record_appears_later_resolves_on_a_later_scan() {
    let w = Live::new();
    let agent = w.spawn("claude", &[], Stdio::null());
    let d = w.daemon();
    let mut c = d.session(Dialect::P2000);
    let dir = format!("/active/claude/{}", agent.pid);
    assert!(listed(&mut c, "claude", F).contains(&agent.pid.to_string()));
    assert_eq!(c.cat(&format!("{dir}/via"), F), b"none\n");
    assert!(!c.reaches(&format!("{dir}/session"), F), "not resolved: no session file");
    assert!(!c.reaches(&format!("{dir}/transcript"), F), "an unresolved agent has no transcript");
    let record = format!(
        r#"{{"pid":{},"sessionId":"{CLAUDE_SID}","cwd":"{}","procStart":"{}","status":"busy"}}"#,
        agent.pid,
        arg(&w.work),
        agent.starttime()
    );
    w.scratch.home_file(&format!(".claude/sessions/{}.json", agent.pid), record.as_bytes());
    assert!(listed(&mut c, "claude", F).contains(&agent.pid.to_string()));
    assert_eq!(c.cat(&format!("{dir}/via"), F), b"registry\n");
    assert_eq!(c.cat(&format!("{dir}/session"), F), format!("{CLAUDE_SID}\n").as_bytes());
}

#[test]
fn a_record_written_for_another_process_at_the_pid_is_not_believed() {
    let w = Live::new();
    let (agent, _) = w.claude();
    let record = w.scratch.home.join(format!(".claude/sessions/{}.json", agent.pid));
    let text = fs::read_to_string(&record).unwrap();
    let stale = text.replace(&format!(r#""procStart":"{}""#, agent.starttime()), r#""procStart":"1""#);
    assert_ne!(text, stale);
    fs::write(&record, stale).unwrap();
    let d = w.daemon();
    let mut c = d.session(Dialect::P2000);
    let dir = format!("/active/claude/{}", agent.pid);
    assert!(listed(&mut c, "claude", F).contains(&agent.pid.to_string()));
    assert_eq!(c.cat(&format!("{dir}/via"), F), b"none\n");
    assert!(c.try_cat(&format!("{dir}/status"), F).is_err(), "a refused record's status is served");
}
