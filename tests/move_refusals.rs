//! The refusals of a move (issue 6): every write to `zmx` that must not
//! move the agent is answered with its errno's text and logged with its own
//! reason, and the agent is left
//! exactly as it was — running, no signal on its way, zmx never run.
//! Without `--allow-move`, `zmx` is 0444 and a write is the read-only
//! refusal; with it, `zmx` is the tree's one writable file.

mod common;
mod move_fakes;

use std::fs;
use std::os::fd::OwnedFd;
use std::os::unix::net::UnixListener;

use common::*;
use move_fakes::*;

/// Refused, for the reason given, and nothing happened: the agent runs, zmx
/// never ran.
fn assert_refused(w: &World, d: &Daemon, agent: &mut Agent, r: &Reply, refusal: &Refusal) {
    assert_move_error(d, r, refusal);
    agent.assert_untouched();
    assert!(w.zmx_record().is_none(), "zmx ran after a refusal: {:?}", w.zmx_record());
}

#[test]
fn without_allow_move_zmx_is_read_only_and_a_write_is_refused_with_the_read_only_text() {
    let w = World::new(Zmx::Post);
    let mut agent = w.claude();
    let d = w.daemon_read_only();
    let mut c = d.session(Dialect::P2000);
    let zmx = format!("{}/zmx", agent_dir("claude", &agent));

    c.walk_ok(ROOT, 1, &tree_names(&zmx));
    assert_eq!(c.stat_ok(1).mode, 0o444);
    for mode in [OWRITE, ORDWR, OWRITE | OTRUNC] {
        c.open(1, mode).assert_error(READ_ONLY);
    }
    agent.assert_untouched();

    let addr = format!("unix!{}", arg(d.socket.as_ref().unwrap()));
    let long = d.client(&["ls", "-l", "-a", &addr, &agent_dir("claude", &agent)]);
    let long = String::from_utf8(long.stdout).unwrap();
    let line = long.lines().find(|l| l.ends_with(" zmx")).unwrap_or_else(|| panic!("no zmx in {long}"));
    assert!(line.starts_with("--r--r--r-- "), "zmx is writable without --allow-move: {line}");

    let out = d.client_with_stdin(&["write", "-a", &addr, &zmx], b"mine\n");
    assert!(!out.status.success(), "the write succeeded");
    let err = String::from_utf8_lossy(&out.stderr);
    // The built-in client speaks 9P2000.u, where the text says why too.
    assert!(
        err.contains(&format!("{READ_ONLY}: moves are off: the daemon runs without --allow-move")),
        "the client said: {err}"
    );
    agent.assert_untouched();
    assert!(w.zmx_record().is_none(), "zmx ran without --allow-move");
    assert!(!w.session_socket("mine").exists());
    assert_eq!(c.cat(&zmx, 2), format!("{OLD_ZMX}\n").as_bytes());
}

#[test]
fn with_allow_move_zmx_is_the_only_writable_file() {
    let w = World::new(Zmx::Post);
    let mut agent = w.claude();
    let d = w.daemon(&[]);
    let mut c = d.session(Dialect::P2000);
    let dir = agent_dir("claude", &agent);

    let entries = c.list(&dir, 1, 8192);
    let zmx = entries.iter().find(|e| e.name == "zmx").expect("zmx listed");
    assert_eq!(zmx.mode, 0o644);
    for e in entries.iter().filter(|e| e.name != "zmx") {
        assert_eq!(e.mode & 0o222, 0, "{} is writable", e.name);
    }
    for other in ["session", "pid", "cwd", "status"] {
        c.walk_ok(ROOT, 2, &tree_names(&format!("{dir}/{other}")));
        c.open(2, OWRITE).assert_error(READ_ONLY);
        c.clunk_ok(2);
    }
    c.walk_ok(ROOT, 2, &["README"]);
    c.open(2, OWRITE).assert_error(READ_ONLY);
    agent.assert_untouched();
}

#[test]
fn an_illegal_name_is_refused_and_the_agent_untouched() {
    let w = World::new(Zmx::Post);
    let mut agent = w.claude();
    let d = w.daemon(&[]);
    let mut c = d.session(Dialect::P2000);
    let long = "a".repeat(65);
    let bad: [&[u8]; 12] = [
        b"",
        b"\n",
        b"mine\n\n",
        b"a b",
        b"a/b",
        b".",
        b"..",
        b"x\0y",
        b"caf\xc3\xa9",
        b"$(reboot)",
        b"mine\r\n",
        long.as_bytes(),
    ];
    open_zmx(&mut c, "claude", &agent, 1);
    for data in bad {
        let r = c.rpc(&Tmsg::Write { fid: 1, offset: 0, data });
        assert_eq!(
            r.expect_error().0,
            ILLEGAL_NAME.text,
            "{:?} was not refused as illegal",
            String::from_utf8_lossy(data)
        );
    }
    c.clunk_ok(1);
    let r = move_agent(&mut c, "claude", &agent, b"-/");
    assert_refused(&w, &d, &mut agent, &r, &ILLEGAL_NAME);
    assert!(fs::read_dir(&w.zmx_dir).unwrap().next().is_none(), "something was posted");
}

#[test]
fn a_name_a_live_session_holds_is_refused_and_the_agent_untouched() {
    let w = World::new(Zmx::Post);
    let _live = UnixListener::bind(w.session_socket("taken")).unwrap();
    let mut agent = w.claude();
    let d = w.daemon(&[]);
    let mut c = d.session(Dialect::P2000);
    let r = move_agent(&mut c, "claude", &agent, b"taken\n");
    assert_refused(&w, &d, &mut agent, &r, &NAME_TAKEN);
}

#[test]
fn an_agent_whose_session_did_not_resolve_is_not_moved() {
    // A claude with no registry record: nothing to come back to.
    let w = World::new(Zmx::Post);
    let mut agent = w.agent("claude", false);
    let d = w.daemon(&[]);
    let mut c = d.session(Dialect::P2000);
    let dir = agent_dir("claude", &agent);
    assert!(!c.reaches(&format!("{dir}/session"), 2), "no session: no file");
    let r = move_agent(&mut c, "claude", &agent, b"mine\n");
    assert_refused(&w, &d, &mut agent, &r, &NO_SESSION);
    // Issue 21, defect 6: where the dialect carries the errno (9P2000.u),
    // the text names which of the four EPERM refusals it was.
    let mut u = d.session(Dialect::P2000u);
    let r = move_agent(&mut u, "claude", &agent, b"mine\n");
    let (text, errno) = r.error().expect("refused");
    assert_eq!((text.as_str(), errno), (format!("{}: {}", NO_SESSION.text, NO_SESSION.logged).as_str(), 1));
}

#[test]
fn a_registry_record_of_another_process_resolves_nothing_and_the_agent_is_not_moved() {
    // The record's procStart is not this process's: a reused pid's record.
    let w = World::new(Zmx::Post);
    let mut agent = w.agent("claude", false);
    let cwd = arg(&w.work);
    let record = format!(
        r#"{{"pid":{},"sessionId":"{SESSION_ID}","cwd":"{cwd}","procStart":"{}","status":"idle"}}"#,
        agent.pid,
        agent.starttime() + 1
    );
    w.scratch.home_file(&format!(".claude/sessions/{}.json", agent.pid), record.as_bytes());
    w.transcript();
    let d = w.daemon(&[]);
    let mut c = d.session(Dialect::P2000);
    let r = move_agent(&mut c, "claude", &agent, b"mine\n");
    assert_refused(&w, &d, &mut agent, &r, &NO_SESSION);
}

#[test]
fn dsh_has_no_resume_form_and_is_not_moved() {
    let w = World::new(Zmx::Post);
    let file = w.scratch.home_file(".dsh/sessions/session-d1/session.jsonl.zstd", b"\x28\xb5\x2f\xfd");
    let held: OwnedFd = fs::File::open(&file).unwrap().into();
    let mut agent = w.agent_with("dsh", false, Some(held));
    let d = w.daemon(&[]);
    let mut c = d.session(Dialect::P2000);
    let dir = agent_dir("dsh", &agent);
    // The session did resolve: the refusal is for the harness, not for it.
    assert_eq!(c.cat(&format!("{dir}/session"), 2), b"d1\n");
    assert_eq!(c.cat(&format!("{dir}/via"), 2), b"fd\n");
    let r = move_agent(&mut c, "dsh", &agent, b"mine\n");
    assert_refused(&w, &d, &mut agent, &r, &NO_RESUME_FORM);
}

#[test]
fn hermes_with_no_session_id_has_nothing_to_resume_and_is_not_moved() {
    let w = World::new(Zmx::Post);
    let mut agent = w.agent("hermes", false);
    let d = w.daemon(&[]);
    let mut c = d.session(Dialect::P2000);
    let dir = agent_dir("hermes", &agent);
    assert_eq!(c.cat(&format!("{dir}/via"), 2), b"none\n");
    assert!(!c.reaches(&format!("{dir}/session"), 2), "no session: no file");
    let r = move_agent(&mut c, "hermes", &agent, b"mine\n");
    assert_refused(&w, &d, &mut agent, &r, &NOTHING_TO_RESUME);
}

#[test]
fn an_agent_whose_cwd_cannot_be_read_is_not_moved() {
    // A /proc whose <pid>/cwd is not a link (as when the kernel refuses to
    // show it): the one process in it is the real fake agent, with its
    // real stat, so its session resolves but its cwd is unknown.
    let w = World::new(Zmx::Post);
    let mut agent = w.claude();
    let proc_dir = w.scratch.root.join("proc");
    let pid_dir = proc_dir.join(agent.pid.to_string());
    fs::create_dir_all(pid_dir.join("cwd")).unwrap();
    fs::write(pid_dir.join("cmdline"), b"claude\x00600\x00").unwrap();
    fs::write(pid_dir.join("stat"), fs::read(format!("/proc/{}/stat", agent.pid)).unwrap()).unwrap();
    fs::write(pid_dir.join("environ"), b"ZMX_SESSION=old\x00").unwrap();
    fs::write(proc_dir.join("stat"), fs::read("/proc/stat").unwrap()).unwrap();
    let d = Daemon::start_in_env(
        &w.scratch,
        &["--proc", arg(&proc_dir), "--allow-move", "--zmx", arg(&w.zmx)],
        &[("ZMX_SESSION", DAEMON_ZMX)],
    );
    let mut c = d.session(Dialect::P2000);
    let dir = agent_dir("claude", &agent);
    assert_eq!(c.cat(&format!("{dir}/session"), 2), format!("{SESSION_ID}\n").as_bytes());
    let r = move_agent(&mut c, "claude", &agent, b"mine\n");
    assert_refused(&w, &d, &mut agent, &r, &NO_CWD);
}
