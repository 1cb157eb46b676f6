//! `wait` files: a read that answers when an agent changes (issue
//! "Notifications"). Real agents (copies of /bin/sleep named after their
//! harness, as tests/active_live.rs runs them), their registry records and
//! transcripts changed on disk while a read is parked.

mod active_fakes;
mod chat_fakes;
mod common;

use std::fs;
use std::io::Write;
use std::time::Duration;

use active_fakes::*;
use common::*;

/// How long a change may take to reach a parked read. Generous: the
/// latency itself is measured in bench/.
const WAKE_DEADLINE: Duration = Duration::from_secs(10);

/// Open `path` on `fid` for reading.
fn open_wait(c: &mut Conn, path: &str, fid: u32) {
    c.walk_path(path, fid);
    c.open_ok(fid, OREAD);
}

/// Send a read of a wait file on a fresh tag; the tag.
fn send_read(c: &mut Conn, fid: u32) -> u16 {
    let tag = c.tag();
    c.send(tag, &Tmsg::Read { fid, offset: 0, count: 8192 });
    tag
}

/// The answer to the read on `tag`, as text.
fn answer(c: &mut Conn, tag: u16) -> String {
    c.set_read_timeout(WAKE_DEADLINE);
    let r = c.recv();
    c.set_read_timeout(REPLY_DEADLINE);
    assert_eq!(r.tag(), tag, "{r:?}");
    String::from_utf8(r.data().to_vec()).unwrap()
}

/// Assert nothing arrives on `c` for a moment (a parked read stays parked).
fn assert_parked(c: &mut Conn) {
    c.set_read_timeout(Duration::from_millis(300));
    if let Ok(r) = c.next() {
        panic!("a parked read answered with nothing changed: {r:?}");
    }
    c.set_read_timeout(REPLY_DEADLINE);
}

fn append(transcript: &std::path::Path, line: &str) {
    let mut f = fs::OpenOptions::new().append(true).open(transcript).unwrap();
    writeln!(f, "{line}").unwrap();
}

#[test]
fn a_parked_read_answers_the_status_change_then_each_new_message() {
    let w = Live::new();
    let (agent, transcript) = w.claude();
    let d = w.daemon();
    let mut c = d.session(Dialect::P2000u);
    let dir = format!("/active/claude/{}", agent.pid);
    let listed = c.list(&dir, 3, 8192);
    let wait = listed.iter().find(|e| e.name == "wait").expect("an agent's directory lists wait");
    assert_eq!((wait.length, wait.mode & DMDIR), (0, 0));
    let before = c.list(&format!("{dir}/chat"), 4, 8192).len();

    open_wait(&mut c, &format!("{dir}/wait"), 1);
    let tag = send_read(&mut c, 1);
    assert_parked(&mut c);
    set_status(&w, agent.pid, "busy");
    assert_eq!(answer(&mut c, tag), "status busy\n");

    let tag = send_read(&mut c, 1);
    assert_parked(&mut c);
    append(&transcript, &chat_fakes::claude_user("are you there?", 500));
    assert_eq!(answer(&mut c, tag), format!("message {before:08}-user\n"));
}

#[test]
fn changes_made_while_no_read_is_parked_come_with_the_next_read_oldest_first() {
    let w = Live::new();
    let (agent, transcript) = w.claude();
    let d = w.daemon();
    let mut c = d.session(Dialect::P2000);
    let dir = format!("/active/claude/{}", agent.pid);
    let before = c.list(&format!("{dir}/chat"), 4, 8192).len();
    open_wait(&mut c, &format!("{dir}/wait"), 1);
    set_status(&w, agent.pid, "busy");
    append(&transcript, &chat_fakes::claude_user("one", 500));
    append(&transcript, &chat_fakes::claude_assistant("two", 501));
    let tag = send_read(&mut c, 1);
    let got = answer(&mut c, tag);
    let want = format!("status busy\nmessage {:08}-user\nmessage {:08}-assistant\n", before, before + 1);
    assert_eq!(got, want);
}

/// Issue 21, defect 7: a read whose count fits no whole pending line was
/// never answered. It is answered at once, `Invalid argument` (as inotify
/// answers a read too small for its next event), and loses nothing: the
/// next read of room enough says the change.
#[test]
fn a_read_too_small_for_the_next_line_is_answered_at_once_and_loses_nothing() {
    let w = Live::new();
    let (agent, _) = w.claude();
    let d = w.daemon();
    let mut c = d.session(Dialect::P2000);
    let dir = format!("/active/claude/{}", agent.pid);
    open_wait(&mut c, &format!("{dir}/wait"), 1);
    set_status(&w, agent.pid, "busy");
    // Seen before the read or while it is parked, the change's line does
    // not fit 5 bytes: the answer comes either way.
    let tag = c.tag();
    c.send(tag, &Tmsg::Read { fid: 1, offset: 0, count: 5 });
    let r = answer_reply(&mut c, tag);
    assert_eq!(r.error().map(|(text, _)| text), Some("Invalid argument".to_string()), "{r:?}");
    let tag = send_read(&mut c, 1);
    assert_eq!(answer(&mut c, tag), "status busy\n");
}

/// The reply to `tag`, whatever it is, within `WAKE_DEADLINE`.
fn answer_reply(c: &mut Conn, tag: u16) -> Reply {
    c.set_read_timeout(WAKE_DEADLINE);
    let r = c.recv();
    c.set_read_timeout(REPLY_DEADLINE);
    assert_eq!(r.tag(), tag, "{r:?}");
    r
}

#[test]
fn every_reader_of_one_file_gets_every_change() {
    let w = Live::new();
    let (agent, _) = w.claude();
    let d = w.daemon();
    let path = format!("/active/claude/{}/wait", agent.pid);
    let mut readers: Vec<Conn> = (0..3).map(|_| d.session(Dialect::P2000)).collect();
    let mut same = d.session(Dialect::P2000);
    for c in &mut readers {
        open_wait(c, &path, 1);
    }
    // Two opens on one connection are two readers too.
    open_wait(&mut same, &path, 1);
    open_wait(&mut same, &path, 2);
    let tags: Vec<u16> = readers.iter_mut().map(|c| send_read(c, 1)).collect();
    let (t1, t2) = (send_read(&mut same, 1), send_read(&mut same, 2));
    set_status(&w, agent.pid, "waiting");
    for (c, tag) in readers.iter_mut().zip(tags) {
        assert_eq!(answer(c, tag), "status waiting\n");
    }
    same.set_read_timeout(WAKE_DEADLINE);
    let (a, b) = (same.recv(), same.recv());
    let mut tags = [a.tag(), b.tag()];
    tags.sort();
    assert_eq!(tags, [t1.min(t2), t1.max(t2)], "both reads on one connection answered");
    assert_eq!((a.data(), b.data()), (b"status waiting\n".to_vec(), b"status waiting\n".to_vec()));
}

#[test]
fn an_agent_that_exits_answers_gone_and_then_every_read_is_empty() {
    let w = Live::new();
    let (mut agent, _) = w.claude();
    let d = w.daemon();
    let mut c = d.session(Dialect::P2000u);
    open_wait(&mut c, &format!("/active/claude/{}/wait", agent.pid), 1);
    let tag = send_read(&mut c, 1);
    assert_parked(&mut c);
    agent.kill();
    assert_eq!(answer(&mut c, tag), "gone\n");
    assert!(c.read_ok(1, 0, 100).is_empty(), "after gone a read is the end of the file");
}

#[test]
fn a_flushed_read_sends_nothing_but_rflush_and_its_change_comes_with_the_next() {
    let w = Live::new();
    let (agent, _) = w.claude();
    let d = w.daemon();
    let mut c = d.session(Dialect::P2000);
    open_wait(&mut c, &format!("/active/claude/{}/wait", agent.pid), 1);
    let tag = send_read(&mut c, 1);
    assert_parked(&mut c);
    let flush = c.tag();
    c.send(flush, &Tmsg::Flush { oldtag: tag });
    let r = c.recv();
    assert_eq!((r.tag(), r.msg()), (flush, Rmsg::Flush));
    set_status(&w, agent.pid, "busy");
    assert_parked(&mut c);
    let tag = send_read(&mut c, 1);
    assert_eq!(answer(&mut c, tag), "status busy\n", "the change was not lost with the flush");
}

#[test]
fn a_hang_up_with_reads_parked_gives_back_every_watch() {
    let w = Live::new();
    let (agent, _) = w.claude();
    let d = w.daemon();
    {
        let mut c = d.session(Dialect::P2000);
        for fid in 1..=20 {
            open_wait(&mut c, &format!("/active/claude/{}/wait", agent.pid), fid);
            send_read(&mut c, fid);
        }
        assert_parked(&mut c);
        let st = d.status_line();
        assert_eq!((st.get("waits"), st.get("watches")), (20, 2), "{st:?}");
    }
    let settled = d.settled_status(&["waits", "watches", "reqs"], 3);
    assert_eq!((settled.get("waits"), settled.get("watches"), settled.get("reqs")), (0, 0, 0));
}

#[test]
fn many_parked_waits_on_one_connection_do_not_stop_it_taking_requests() {
    let w = Live::new();
    let (agent, _) = w.claude();
    let d = w.daemon();
    let mut c = d.session(Dialect::P2000);
    // Past REQS_PARKED_MAX (64): waits are not ordinary parked requests.
    for fid in 1..=200 {
        open_wait(&mut c, &format!("/active/claude/{}/wait", agent.pid), fid);
        send_read(&mut c, fid);
    }
    assert_eq!(c.cat("/pid", 500), format!("{}\n", d.pid).as_bytes(), "the connection still answers");
    set_status(&w, agent.pid, "busy");
    c.set_read_timeout(WAKE_DEADLINE);
    for _ in 0..200 {
        assert_eq!(c.recv().data(), b"status busy\n");
    }
}

/// The machine wait's next `n` lines about `pid`, read as they come: the
/// daemon reads the real /proc, so other tests' agents come and go in the
/// same answers.
fn machine_lines_about(c: &mut Conn, fid: u32, pid: u32, n: usize) -> Vec<String> {
    let mut got = Vec::new();
    let deadline = std::time::Instant::now() + WAKE_DEADLINE;
    while got.len() < n {
        assert!(std::time::Instant::now() < deadline, "only {got:?} about {pid} came");
        let tag = send_read(c, fid);
        let text = answer(c, tag);
        let about = text.lines().filter(|l| l.split(' ').nth(2) == Some(&pid.to_string()));
        got.extend(about.map(str::to_owned));
    }
    got
}

#[test]
fn the_machine_wait_reports_an_agent_that_starts_and_one_that_exits() {
    let w = Live::new();
    let d = w.daemon_with(&["--rescan-interval", "100"]);
    let mut c = d.session(Dialect::P2000u);
    open_wait(&mut c, "/active/wait", 1);
    let (mut agent, _) = w.claude();
    let pid = agent.pid;
    let want = [format!("new claude {pid}"), format!("status claude {pid} {CLAUDE_STATUS}")];
    assert_eq!(machine_lines_about(&mut c, 1, pid, 2), want);
    set_status(&w, agent.pid, "busy");
    assert_eq!(machine_lines_about(&mut c, 1, pid, 1), [format!("status claude {pid} busy")]);
    agent.kill();
    assert_eq!(machine_lines_about(&mut c, 1, pid, 1), [format!("gone claude {pid}")]);
}

#[test]
fn past_the_watch_cap_an_open_of_wait_is_refused_no_space_left_on_device() {
    let w = Live::new();
    let (a, _) = w.claude();
    let (b, _) = w.claude();
    let d = w.daemon_with(&["--max-watches", "2"]);
    let mut c = d.session(Dialect::P2000u);
    open_wait(&mut c, &format!("/active/claude/{}/wait", a.pid), 1);
    c.walk_path(&format!("/active/claude/{}/wait", b.pid), 2);
    let (text, errno) = c.open(2, OREAD).expect_error();
    // 9P2000.u: the errno's text, then which limit (issue 21, defect 6).
    assert_eq!(
        (text.as_str(), errno),
        ("No space left on device: as many agents watched as --max-watches", libc::ENOSPC as u32)
    );
    c.clunk_ok(1);
    c.open_ok(2, OREAD);
}

#[test]
fn the_built_in_client_prints_the_lines_as_they_come() {
    let w = Live::new();
    let (mut agent, _) = w.claude();
    let d = w.daemon();
    let addr = format!("unix!{}", arg(d.socket.as_ref().unwrap()));
    let path = format!("/active/claude/{}/wait", agent.pid);
    let mut cmd = w.scratch.command();
    cmd.args(["wait", "-a", &addr, &path]).stdout(std::process::Stdio::piped());
    let child = cmd.spawn().unwrap();
    // Its open is in place once the daemon holds its watch.
    poll(WAKE_DEADLINE, || (d.status_line().get("watches") > 0).then_some(())).expect("the client opened wait");
    set_status(&w, agent.pid, "busy");
    poll(WAKE_DEADLINE, || (d.status_line().get("waits") > 0).then_some(()));
    agent.kill();
    let out = child.wait_with_output().unwrap();
    assert_eq!(String::from_utf8_lossy(&out.stdout), "status busy\ngone\n");
    assert!(out.status.success());
}

/// A daemon on `fx`'s fixture `/proc`, rescanning it often.
fn fixture_daemon(fx: &Fixture) -> Daemon {
    Daemon::start_in(&fx.scratch, &["--proc", arg(&fx.proc.dir), "--rescan-interval", "100"])
}

#[test]
fn on_a_fixture_proc_the_machine_wait_reports_a_process_that_starts_and_one_that_exits() {
    let fx = Fixture::new();
    fx.claude(100, CLAUDE_SID);
    let d = fixture_daemon(&fx);
    let mut c = d.session(Dialect::P2000u);
    open_wait(&mut c, "/active/wait", 1);
    let tag = send_read(&mut c, 1);
    assert_parked(&mut c);
    fx.claude(110, "5b1c3f0e-0000-4000-8000-000000000110");
    assert_eq!(answer(&mut c, tag), "new claude 110\nstatus claude 110 waiting\n");
    let tag = send_read(&mut c, 1);
    fs::remove_dir_all(fx.proc.dir.join("100")).unwrap();
    assert_eq!(answer(&mut c, tag), "gone claude 100\n");
}

#[test]
fn on_a_fixture_proc_an_agent_whose_process_directory_goes_answers_gone() {
    let fx = Fixture::new();
    fx.claude(100, CLAUDE_SID);
    let d = fixture_daemon(&fx);
    let mut c = d.session(Dialect::P2000u);
    open_wait(&mut c, "/active/claude/100/wait", 1);
    let tag = send_read(&mut c, 1);
    assert_parked(&mut c);
    fs::remove_dir_all(fx.proc.dir.join("100")).unwrap();
    assert_eq!(answer(&mut c, tag), "gone\n");
}

#[test]
fn codex_status_follows_its_turn_events_and_its_wait_reports_it() {
    let w = Live::new();
    let (agent, rollout) = w.codex();
    let d = w.daemon();
    let mut c = d.session(Dialect::P2000u);
    let dir = format!("/active/codex/{}", agent.pid);
    let names: Vec<String> = c.list(&dir, 3, 8192).into_iter().map(|e| e.name.clone()).collect();
    assert!(!names.contains(&"status".to_owned()), "no turn recorded yet, no status: {names:?}");
    open_wait(&mut c, &format!("{dir}/wait"), 1);
    let tag = send_read(&mut c, 1);
    assert_parked(&mut c);
    let event = |ty: &str| {
        format!(
            r#"{{"timestamp":"2025-11-28T10:00:02.000Z","type":"event_msg","payload":{{"type":"{ty}","turn_id":"1"}}}}"#
        )
    };
    append(&rollout, &event("task_started"));
    assert_eq!(answer(&mut c, tag), "status busy\n");
    assert_eq!(c.cat(&format!("{dir}/status"), 2), b"busy\n");
    let tag = send_read(&mut c, 1);
    append(&rollout, &event("turn_aborted"));
    assert_eq!(answer(&mut c, tag), "status idle\n");
    let tag = send_read(&mut c, 1);
    append(&rollout, &event("task_started"));
    append(&rollout, &event("task_complete"));
    // Both may land before the read evaluates: then the status is as it was.
    c.set_read_timeout(Duration::from_millis(500));
    if let Ok(r) = c.next() {
        assert_eq!((r.tag(), r.data()), (tag, b"status busy\n".to_vec()));
        let tag = send_read(&mut c, 1);
        assert_eq!(answer(&mut c, tag), "status idle\n");
    }
    assert_eq!(c.cat(&format!("{dir}/status"), 2), b"idle\n");
}

/// What plan9port's `9p -a ADDR read PATH` sends (src/cmd/9p.c `xread`,
/// lib9pclient `fsamount`, `fsopen`, `fsread`): Tversion "9P2000" msize
/// 8192, Tauth (refused) then Tattach with no afid, one Twalk of the whole
/// path, Topen OREAD, then Treads of 4096 at the offset the bytes so far
/// make, writing each answer out, until one answers 0 bytes. plan9port is
/// not packaged for this machine's Debian, so its sequence is replayed.
#[test]
fn plan9ports_9p_read_sequence_prints_changes_as_they_come_and_ends_at_gone() {
    let w = Live::new();
    let (mut agent, transcript) = w.claude();
    let d = w.daemon();
    let mut c = d.connect();
    c.version(8192, "9P2000");
    assert!(c.auth(99).is_error(), "no auth: 9p falls back to attach");
    assert!(!c.attach(ROOT).is_error());
    let pid = agent.pid.to_string();
    let names = ["active", "claude", &pid, "wait"];
    assert_eq!(c.walk(ROOT, 1, &names).qids().len(), 4);
    c.open_ok(1, OREAD);
    let before = c.list(&format!("/active/claude/{pid}/chat"), 4, 8192).len();
    let mut offset = 0u64;
    let mut printed = String::new();
    let mut read = |c: &mut Conn| {
        let tag = c.tag();
        c.send(tag, &Tmsg::Read { fid: 1, offset, count: 4096 });
        let text = answer(c, tag);
        offset += text.len() as u64;
        printed.push_str(&text);
        text
    };
    set_status(&w, agent.pid, "busy");
    assert_eq!(read(&mut c), "status busy\n");
    append(&transcript, &chat_fakes::claude_user("and now?", 502));
    assert_eq!(read(&mut c), format!("message {before:08}-user\n"), "the offset is ignored: a stream");
    agent.kill();
    assert_eq!(read(&mut c), "gone\n");
    assert_eq!(read(&mut c), "", "9p read stops at the 0-byte answer after gone");
    assert_eq!(printed, format!("status busy\nmessage {before:08}-user\ngone\n"));
}

#[test]
fn more_agents_watched_than_chats_kept_each_reports_only_its_new_messages() {
    // Past --max-chats, every watched agent's chat index is pinned by its
    // watch: opened together, none is counted as empty (which would report
    // its old messages as new), and a change indexes only what it added.
    let fx = Fixture::new();
    let pids: Vec<u32> = (100..112).collect();
    let transcripts: Vec<_> =
        pids.iter().map(|&p| fx.claude(p, &format!("5b1c3f0e-0000-4000-8000-000000000{p}"))).collect();
    let d = Daemon::start_in(&fx.scratch, &["--proc", arg(&fx.proc.dir), "--max-chats", "2"]);
    let mut c = d.session(Dialect::P2000u);
    let before = c.list("/active/claude/100/chat", 1, 8192).len();
    let fids: Vec<u32> = (10..10 + pids.len() as u32).collect();
    for (&pid, &fid) in pids.iter().zip(&fids) {
        c.walk_path(&format!("/active/claude/{pid}/wait"), fid);
    }
    // The opens all at once: their chats are counted together.
    let tags: Vec<u16> = fids
        .iter()
        .map(|&fid| {
            let tag = c.tag();
            c.send(tag, &Tmsg::Open { fid, mode: OREAD });
            tag
        })
        .collect();
    for _ in &tags {
        let r = c.recv();
        assert!(!r.is_error(), "{r:?}");
    }
    for round in 0..2usize {
        let reads: Vec<u16> = fids.iter().map(|&fid| send_read(&mut c, fid)).collect();
        for t in &transcripts {
            append(t, &chat_fakes::claude_user(&format!("round {round}"), 600 + round as u64));
        }
        let mut answered = std::collections::HashMap::new();
        c.set_read_timeout(WAKE_DEADLINE);
        for _ in &reads {
            let r = c.recv();
            answered.insert(r.tag(), String::from_utf8(r.data()).unwrap());
        }
        c.set_read_timeout(REPLY_DEADLINE);
        for tag in reads {
            assert_eq!(answered[&tag], format!("message {:08}-user\n", before + round), "round {round}");
        }
    }
}

#[test]
fn a_transcript_replaced_by_a_new_file_is_watched_at_its_path() {
    let w = Live::new();
    let (agent, transcript) = w.claude();
    let d = w.daemon();
    let mut c = d.session(Dialect::P2000);
    let dir = format!("/active/claude/{}", agent.pid);
    let before = c.list(&format!("{dir}/chat"), 4, 8192).len();
    open_wait(&mut c, &format!("{dir}/wait"), 1);
    // Rewritten whole and renamed into place: a new inode at the path.
    let mut text = fs::read_to_string(&transcript).unwrap();
    text.push_str(&chat_fakes::claude_user("in the new file", 700));
    text.push('\n');
    let tmp = transcript.with_extension("tmp");
    fs::write(&tmp, text).unwrap();
    fs::rename(&tmp, &transcript).unwrap();
    let tag = send_read(&mut c, 1);
    assert_eq!(answer(&mut c, tag), format!("message {before:08}-user\n"));
    // Its appends are seen: the watch is on the new file, not the old inode.
    let tag = send_read(&mut c, 1);
    assert_parked(&mut c);
    append(&transcript, &chat_fakes::claude_user("appended to it", 701));
    assert_eq!(answer(&mut c, tag), format!("message {:08}-user\n", before + 1));
}

#[test]
fn on_a_fixture_proc_a_parked_read_answers_a_message_appended_to_the_transcript() {
    // The kernel test's light world: a fixture agent whose chat was read
    // before its wait is opened.
    let fx = Fixture::new();
    let transcript = fx.claude(100, CLAUDE_SID);
    let d = fixture_daemon(&fx);
    let mut c = d.session(Dialect::P2000u);
    let before = c.list("/active/claude/100/chat", 4, 8192).len();
    open_wait(&mut c, "/active/claude/100/wait", 1);
    let tag = send_read(&mut c, 1);
    assert_parked(&mut c);
    append(&transcript, &chat_fakes::claude_user("are you there?", 500));
    assert_eq!(answer(&mut c, tag), format!("message {before:08}-user\n"));
}

#[test]
fn a_parked_read_woken_while_another_clients_listing_refreshes_the_chat_still_answers() {
    // The kernel guest's race: the append's wake joined a refresh another
    // request had started, which had sized the file before the append.
    let fx = Fixture::new();
    let transcript = fx.claude(100, CLAUDE_SID);
    let d = fixture_daemon(&fx);
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let mut other = d.session(Dialect::P2000u);
    let lister = {
        let stop = stop.clone();
        std::thread::spawn(move || {
            let c = &mut other;
            while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                c.list("/active/claude/100/chat", 4, 8192);
            }
        })
    };
    let mut c = d.session(Dialect::P2000u);
    let mut count = c.list("/active/claude/100/chat", 4, 8192).len();
    open_wait(&mut c, "/active/claude/100/wait", 1);
    for round in 0..40 {
        let tag = send_read(&mut c, 1);
        std::thread::sleep(Duration::from_millis(5));
        append(&transcript, &chat_fakes::claude_user(&format!("round {round}"), 500 + round));
        let got = answer(&mut c, tag);
        let want: String =
            (count..).take(got.lines().count().max(1)).map(|i| format!("message {i:08}-user\n")).collect();
        assert_eq!(got, want, "round {round}");
        count += got.lines().count();
    }
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    lister.join().unwrap();
}

#[test]
fn linux_filling_the_rest_of_one_read_gets_0_bytes_at_once_and_its_next_read_parks() {
    // Linux's p9_client_read loops until a read comes back empty: after a
    // wait answered 22 of a 4,096-byte read(2), it asks for the 4,074 left
    // at offset 22. That continuation must answer 0 bytes at once (or the
    // read(2), and `head -n 1 wait`, would never return); the next read(2)
    // parks as any read does.
    let fx = Fixture::new();
    let transcript = fx.claude(100, CLAUDE_SID);
    let d = fixture_daemon(&fx);
    let before = d.session(Dialect::P2000u).list("/active/claude/100/chat", 4, 8192).len();
    let mut c = d.session(Dialect::L);
    c.walk_path("/active/claude/100/wait", 1);
    assert!(matches!(c.rpc(&Tmsg::Lopen { fid: 1, flags: 0 }).msg(), Rmsg::Lopen { .. }));
    let tag = c.tag();
    c.send(tag, &Tmsg::Read { fid: 1, offset: 0, count: 4096 });
    assert_parked(&mut c);
    append(&transcript, &chat_fakes::claude_user("are you there?", 500));
    let line = format!("message {before:08}-user\n");
    assert_eq!(answer(&mut c, tag), line);
    let n = line.len() as u64;
    let r = c.rpc(&Tmsg::Read { fid: 1, offset: n, count: 4096 - n as u32 });
    assert_eq!(r.data(), b"", "the continuation of the read(2) answers 0 bytes");
    let tag = c.tag();
    c.send(tag, &Tmsg::Read { fid: 1, offset: n, count: 4096 });
    assert_parked(&mut c);
    append(&transcript, &chat_fakes::claude_user("still there?", 501));
    assert_eq!(answer(&mut c, tag), format!("message {:08}-user\n", before + 1));
}
