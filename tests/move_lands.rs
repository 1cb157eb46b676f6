//! The move that lands (issue 6): a name written into
//! `/active/claude/<pid>/zmx` ends the agent (SIGTERM, or SIGKILL when it
//! ignores that), runs `zmx run <name> -d claude --resume <sid>` in the
//! agent's cwd without `ZMX_SESSION`, answers the write once the session's
//! socket is posted, reaps zmx, and the old entry is gone — and the seed's
//! four-line replacement for zmxify works through the built-in client.

mod common;
mod move_fakes;

use std::time::{Duration, Instant};

use common::*;
use move_fakes::*;

#[test]
fn a_move_runs_zmx_with_the_fixed_argv_in_the_agents_cwd_without_zmx_session() {
    let w = World::new(Zmx::Post);
    let mut agent = w.claude();
    let d = w.daemon(&[]);
    let mut c = d.session(Dialect::P2000);
    assert!(listed(&mut c, "claude").contains(&agent.pid.to_string()));

    let fds = d.fd_count();

    let data = b"Mine.2_b-x\n";
    let r = move_agent(&mut c, "claude", &agent, data);
    assert_written(&r, data.len());

    let rec = w.wait_zmx_record();
    assert_eq!(rec.argv, ["run", "Mine.2_b-x", "-d", "claude", "--resume", SESSION_ID]);
    assert_eq!(rec.cwd, arg(&w.work));
    // The daemon runs with a ZMX_SESSION of its own; an inherited one
    // would move the wrong session.
    assert_eq!(rec.env("ZMX_SESSION"), None, "zmx was given ZMX_SESSION: {rec:?}");
    assert_eq!(rec.env("XDG_RUNTIME_DIR"), Some(arg(&w.scratch.runtime)), "zmx must find its registry");
    assert!(is_socket(&w.session_socket("Mine.2_b-x")), "answered before the session was posted");
    assert_eq!(agent.wait_killed_by(), libc::SIGTERM);
    assert_no_zombie(&d);
    // Nothing of the move is held once zmx is reaped: no pidfd, no socket.
    poll(EFFECT_DEADLINE, || (d.fd_count() == fds).then_some(()))
        .unwrap_or_else(|| panic!("the daemon holds {} descriptors after the move, {fds} before", d.fd_count()));
}

/// Issue 21, defect 1: the daemon blocks SIGINT, SIGTERM, SIGUSR1 and
/// SIGCHLD (its signalfd) and ignores SIGPIPE; what it starts must begin
/// with nothing blocked and those at their defaults, or the resumed agent
/// never sees a SIGTERM and a write to a closed pipe does not end it.
#[test]
fn zmx_starts_with_no_signal_blocked_and_the_daemons_at_their_defaults() {
    let w = World::new(Zmx::Post);
    let agent = w.claude();
    let d = w.daemon(&[]);
    let mut c = d.session(Dialect::P2000);
    assert_written(&move_agent(&mut c, "claude", &agent, b"clean\n"), 6);
    let (blocked, ignored) = w.zmx_signals();
    assert_eq!(blocked, 0, "zmx started with signals blocked: {blocked:#x}");
    let bit = |sig: i32| 1u64 << (sig - 1);
    for sig in [libc::SIGPIPE, libc::SIGINT, libc::SIGTERM, libc::SIGUSR1, libc::SIGCHLD] {
        assert_eq!(ignored & bit(sig), 0, "zmx started ignoring signal {sig} (SigIgn {ignored:#x})");
    }
}

#[test]
fn after_a_move_the_old_entry_is_gone_and_the_resumed_agent_reads_the_new_name() {
    let w = World::new(Zmx::Resume);
    let mut agent = w.claude();
    let d = w.daemon(&[]);
    let mut c = d.session(Dialect::P2000);
    let old = agent.pid.to_string();
    assert!(listed(&mut c, "claude").contains(&old));
    assert_eq!(c.cat(&format!("{}/zmx", agent_dir("claude", &agent)), 2), format!("{OLD_ZMX}\n").as_bytes());

    let r = move_agent(&mut c, "claude", &agent, b"mine\n");
    assert_written(&r, 5);
    assert_eq!(agent.wait_killed_by(), libc::SIGTERM);

    let new = w.resumed_pid().to_string();
    let now = listed(&mut c, "claude");
    assert!(!now.contains(&old), "the moved agent's old entry is still listed: {now:?}");
    assert!(now.contains(&new), "the resumed agent (pid {new}) is not listed: {now:?}");
    assert_eq!(c.cat(&format!("/active/claude/{new}/zmx"), 2), b"mine\n");
    assert!(!c.reaches(&format!("/active/claude/{old}"), 3), "the old entry still walks");
    assert_no_zombie(&d);
}

#[test]
fn an_agent_that_ignores_sigterm_is_killed_with_sigkill_at_the_kill_timer() {
    let w = World::new(Zmx::Post);
    let mut agent = w.stubborn_claude();
    let d = w.daemon(&["--move-kill-after", "300"]);
    let mut c = d.session(Dialect::P2000);

    let started = Instant::now();
    let r = move_agent(&mut c, "claude", &agent, b"mine");
    let took = started.elapsed();
    assert_written(&r, 4);
    assert_eq!(agent.wait_killed_by(), libc::SIGKILL);
    assert!(took >= Duration::from_millis(300), "the move landed after {took:?}, before the kill timer");
    assert_eq!(w.wait_zmx_record().argv, ["run", "mine", "-d", "claude", "--resume", SESSION_ID]);
    assert_no_zombie(&d);
}

#[test]
fn an_agent_that_outlives_the_give_up_deadline_is_left_running_and_zmx_never_runs() {
    let w = World::new(Zmx::Post);
    let mut agent = w.stubborn_claude();
    let d = w.daemon(&["--move-kill-after", "10000", "--move-give-up", "300"]);
    let mut c = d.session(Dialect::P2000);

    let started = Instant::now();
    assert_move_error(&d, &move_agent(&mut c, "claude", &agent, b"mine\n"), &NOT_GONE);
    let took = started.elapsed();
    assert!(took >= Duration::from_millis(300), "gave up after {took:?}, before the deadline");
    assert!(took < Duration::from_secs(10), "gave up after {took:?}, past the kill timer");
    agent.assert_untouched();
    assert!(w.zmx_record().is_none(), "zmx ran although the agent never exited");
    assert!(!w.session_socket("mine").exists());
    poll(EFFECT_DEADLINE, || (!holds_pidfd_on(&d, agent.pid)).then_some(()))
        .expect("the daemon still holds a pidfd on the agent it gave up on");

    // The failed move is over: the agent may be moved again (it is not
    // "already in progress"), and fails the same way.
    assert_move_error(&d, &move_agent(&mut c, "claude", &agent, b"mine\n"), &NOT_GONE);
    agent.assert_untouched();
}

#[test]
fn a_zmx_that_never_posts_fails_the_move_at_the_post_deadline() {
    let w = World::new(Zmx::Never);
    let mut agent = w.claude();
    let d = w.daemon(&["--move-post-deadline", "300"]);
    let mut c = d.session(Dialect::P2000);

    let started = Instant::now();
    assert_move_error(&d, &move_agent(&mut c, "claude", &agent, b"mine\n"), &NO_POST);
    let took = started.elapsed();
    assert!(took >= Duration::from_millis(300), "failed after {took:?}, before the post deadline");
    // By then the agent was ended and zmx ran: this is the window the
    // design names (the kill comes before the spawn).
    assert_eq!(agent.wait_killed_by(), libc::SIGTERM);
    assert_eq!(w.wait_zmx_record().argv[..2], ["run", "mine"]);
    assert_no_zombie(&d);
}

#[test]
fn a_stale_socket_at_the_name_is_not_taken_for_the_post() {
    // A socket file nothing listens on: zmx left it behind. It does not
    // hold the name (step 1 asks with a connect), and neither is it the new
    // session: a zmx that never posts still fails at the deadline.
    let w = World::new(Zmx::Never);
    let stale = w.session_socket("mine");
    drop(std::os::unix::net::UnixListener::bind(&stale).unwrap());
    assert!(is_socket(&stale));
    let mut agent = w.claude();
    let d = w.daemon(&["--move-post-deadline", "300"]);
    let mut c = d.session(Dialect::P2000);

    let r = move_agent(&mut c, "claude", &agent, b"mine\n");
    assert_eq!(agent.wait_killed_by(), libc::SIGTERM, "a stale socket refused the move");
    assert!(w.wait_zmx_record().argv.starts_with(&["run".to_owned(), "mine".to_owned()]));
    assert!(
        std::os::unix::net::UnixStream::connect(&stale).is_err() && r.is_error(),
        "the move answered {r:?} while nothing listens at {}: the stale socket was taken for zmx's post",
        stale.display()
    );
    assert_move_error(&d, &r, &NO_POST);
    assert_no_zombie(&d);
}

#[test]
fn a_zmx_that_cannot_be_started_fails_the_move_with_its_own_text() {
    let w = World::new(Zmx::Post);
    let mut agent = w.claude();
    let missing = w.scratch.root.join("no-such-zmx");
    let d = Daemon::start_in_env(
        &w.scratch,
        &["--proc", "/proc", "--allow-move", "--zmx", arg(&missing)],
        &[("ZMX_SESSION", DAEMON_ZMX)],
    );
    let mut c = d.session(Dialect::P2000);
    assert_move_error(&d, &move_agent(&mut c, "claude", &agent, b"mine\n"), &NO_SPAWN);
    assert_eq!(agent.wait_killed_by(), libc::SIGTERM);
    assert_no_zombie(&d);
}

#[test]
fn the_seeds_four_lines_replace_zmxify_through_the_built_in_client() {
    let w = World::new(Zmx::Resume);
    let mut agent = w.claude();
    let d = w.daemon(&[]);
    let addr = format!("unix!{}", arg(d.socket.as_ref().unwrap()));
    let client = |args: &[&str], stdin: &[u8]| {
        let mut all = vec![args[0], "-a", addr.as_str()];
        all.extend_from_slice(&args[1..]);
        let out = d.client_with_stdin(&all, stdin);
        assert!(out.status.success(), "9agents {all:?}: {}", String::from_utf8_lossy(&out.stderr));
        String::from_utf8(out.stdout).unwrap()
    };
    let pid = agent.pid.to_string();
    let dir = format!("/active/claude/{pid}");

    // ls /mnt/9p/agents/active/*/*: what is running.
    assert!(client(&["ls", "/active"], b"").lines().any(|l| l == "claude"));
    assert!(client(&["ls", "/active/claude"], b"").lines().any(|l| l == pid));
    let fields = client(&["ls", &dir], b"");
    for f in ["cwd", "pid", "session", "via", "zmx"] {
        assert!(fields.lines().any(|l| l == f), "{dir} lists no {f}: {fields}");
    }
    let long = client(&["ls", "-l", &dir], b"");
    let zmx_line = long.lines().find(|l| l.ends_with(" zmx")).unwrap_or_else(|| panic!("no zmx in {long}"));
    assert!(zmx_line.starts_with("--rw-r--r-- "), "zmx is not 0644 with --allow-move: {zmx_line}");
    // cat .../session: what it is.
    assert_eq!(client(&["cat", &format!("{dir}/session")], b""), format!("{SESSION_ID}\n"));
    assert_eq!(client(&["cat", &format!("{dir}/via")], b""), "registry\n");
    // echo mine > .../zmx
    assert_eq!(client(&["write", &format!("{dir}/zmx")], b"mine\n"), "");
    // (zmx attach mine: the session is posted.)
    assert!(is_socket(&w.session_socket("mine")), "the write returned before the session was posted");
    assert_eq!(agent.wait_killed_by(), libc::SIGTERM);
    let rec = w.wait_zmx_record();
    assert_eq!(rec.argv, ["run", "mine", "-d", "claude", "--resume", SESSION_ID]);

    let now = client(&["ls", "/active/claude"], b"");
    assert!(!now.lines().any(|l| l == pid), "the old pid is still listed: {now}");
    let new = w.resumed_pid().to_string();
    assert!(now.lines().any(|l| l == new), "the resumed agent is not listed: {now}");
    assert_eq!(client(&["cat", &format!("/active/claude/{new}/zmx")], b""), "mine\n");
    assert_no_zombie(&d);
}

#[test]
fn a_move_lands_through_9p2000_l_as_a_kernel_mounts_echo_sends_it() {
    // `echo mine > zmx` on a default (9P2000.L) Linux mount, as the kernel
    // test's guest saw v9fs send it: Tlopen with O_WRONLY|O_CREAT|
    // O_LARGEFILE (0100101: the VFS strips O_CREAT only after the open,
    // and v9fs does not pass O_TRUNC), a Tsetattr of size 0 (the truncate
    // is part of the write, not a refusal), then the Twrite.
    let w = World::new(Zmx::Post);
    let mut agent = w.claude();
    let d = w.daemon(&[]);
    let mut c = d.session(Dialect::L);
    let path = format!("{}/zmx", agent_dir("claude", &agent));
    c.walk_ok(ROOT, 1, &tree_names(&path));
    let flags = proto::DOTL_WRONLY | proto::DOTL_CREATE | proto::DOTL_LARGEFILE;
    assert_eq!(flags, 0o100101, "the flags the guest's kernel sent");
    let r = c.rpc(&Tmsg::Lopen { fid: 1, flags });
    assert!(matches!(r.msg(), Rmsg::Lopen { .. }), "Tlopen for writing: {r:?}");
    let valid = proto::SETATTR_SIZE | proto::SETATTR_MTIME | proto::SETATTR_CTIME;
    let truncate = Tmsg::Setattr {
        fid: 1,
        valid,
        mode: 0,
        uid: 0,
        gid: 0,
        size: 0,
        atime_sec: 0,
        atime_nsec: 0,
        mtime_sec: 0,
        mtime_nsec: 0,
    };
    assert_eq!(c.rpc(&truncate).msg(), Rmsg::Setattr);
    let tag = send_write(&mut c, 1, b"mine\n");
    c.set_read_timeout(MOVE_DEADLINE);
    let r = c.recv();
    assert_eq!(r.tag(), tag);
    assert_written(&r, 5);
    assert_eq!(agent.wait_killed_by(), libc::SIGTERM);
    assert_eq!(w.wait_zmx_record().argv, ["run", "mine", "-d", "claude", "--resume", SESSION_ID]);
}
