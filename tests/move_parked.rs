//! A move is a parked request (issue 6): while it waits for the agent to
//! die and for zmx to post, the daemon serves everyone else; a Tflush of
//! the write answers Rflush at once and the move still lands; a client
//! that hangs up mid-move does not stop it; a second move of the same
//! agent meanwhile is refused. Each test uses an agent that ignores
//! SIGTERM, so the move is certainly still waiting (for the kill timer)
//! while the test acts, and checks that the daemon holds a pidfd on the
//! agent first: the move is under way.

mod common;
mod move_fakes;

use std::time::{Duration, Instant};

use common::*;
use move_fakes::*;

/// Long enough that everything a test does while the move waits is done
/// well before it, short enough to keep the suite quick.
const KILL_AFTER: &str = "1500";

#[test]
fn while_a_move_waits_another_client_is_answered_at_once() {
    let w = World::new(Zmx::Post);
    let mut agent = w.stubborn_claude();
    let d = w.daemon(&["--move-kill-after", KILL_AFTER]);
    let mut mover = d.session(Dialect::P2000);
    let mut other = d.session(Dialect::P2000);
    let dir = agent_dir("claude", &agent);
    other.walk_ok(ROOT, 7, &tree_names(&format!("{dir}/session")));

    open_zmx(&mut mover, "claude", &agent, 1);
    let write_sent = Instant::now();
    let tag = send_write(&mut mover, 1, b"mine\n");
    wait_move_waiting(&d, &agent);

    let mut slowest = Duration::ZERO;
    for _ in 0..20 {
        let asked = Instant::now();
        let e = other.stat_ok(7);
        slowest = slowest.max(asked.elapsed());
        assert_eq!(e.name, "session");
    }
    let asked = Instant::now();
    assert_eq!(other.cat(&format!("{dir}/session"), 8), format!("{SESSION_ID}\n").as_bytes());
    assert!(names(&other.list(&dir, 9, 8192)).contains(&"zmx".to_owned()));
    let listing = asked.elapsed();
    eprintln!("while a move waits: slowest of 20 stats {slowest:?}, a cat and a listing {listing:?}");

    // All of that was answered while the move still waited: its answer has
    // not come, and the agent has not been killed.
    mover.set_read_timeout(Duration::from_millis(1));
    assert!(matches!(mover.next(), Err(End::Timeout)), "the move answered before the other client's requests");
    assert_eq!(agent.try_status(), None, "the kill timer fired before the other client was answered");
    assert!(slowest < Duration::from_millis(1500), "a stat took {slowest:?}: it waited for the move");

    mover.set_read_timeout(MOVE_DEADLINE);
    let r = mover.recv();
    assert_eq!(r.tag(), tag);
    assert_written(&r, 5);
    eprintln!("the move answered after {:?}", write_sent.elapsed());
    assert_eq!(agent.wait_killed_by(), libc::SIGKILL);
    assert_no_zombie(&d);
}

#[test]
fn a_flushed_move_answers_rflush_at_once_and_still_lands() {
    let w = World::new(Zmx::Post);
    let mut agent = w.stubborn_claude();
    let d = w.daemon(&["--move-kill-after", KILL_AFTER]);
    let mut c = d.session(Dialect::P2000);

    open_zmx(&mut c, "claude", &agent, 1);
    let tag = send_write(&mut c, 1, b"mine\n");
    wait_move_waiting(&d, &agent);
    let flush = c.tag();
    let asked = Instant::now();
    c.send(flush, &Tmsg::Flush { oldtag: tag });
    let r = c.recv();
    let took = asked.elapsed();
    assert_eq!((r.tag(), r.msg()), (flush, Rmsg::Flush), "{r:?}");
    eprintln!("Rflush of a waiting move after {took:?}");
    assert_eq!(agent.try_status(), None, "Rflush waited for the move");

    // The move lands anyway.
    assert_eq!(agent.wait_killed_by(), libc::SIGKILL);
    assert_eq!(w.wait_zmx_record().argv, ["run", "mine", "-d", "claude", "--resume", SESSION_ID]);
    w.wait_posted("mine");
    assert_no_zombie(&d);

    // The flushed write is never answered: the next reply on this
    // connection is for the next request, on the reused tag.
    c.send(tag, &Tmsg::Stat { fid: ROOT });
    let r = c.recv();
    assert_eq!(r.tag(), tag);
    assert!(matches!(r.msg(), Rmsg::Stat { .. }), "expected the Rstat, got {r:?}");
}

#[test]
fn a_client_that_hangs_up_mid_move_does_not_stop_it() {
    let w = World::new(Zmx::Post);
    let mut agent = w.stubborn_claude();
    let mut d = w.daemon(&["--move-kill-after", KILL_AFTER]);
    let mut c = d.session(Dialect::P2000);
    open_zmx(&mut c, "claude", &agent, 1);
    send_write(&mut c, 1, b"mine\n");
    wait_move_waiting(&d, &agent);
    drop(c);

    assert_eq!(agent.wait_killed_by(), libc::SIGKILL);
    assert_eq!(w.wait_zmx_record().argv, ["run", "mine", "-d", "claude", "--resume", SESSION_ID]);
    w.wait_posted("mine");
    assert_no_zombie(&d);
    // And the daemon is as it was: it serves a new client, which no longer
    // finds the old entry.
    assert!(d.is_running(), "the daemon exited");
    let mut c = d.session(Dialect::P2000);
    assert!(!listed(&mut c, "claude").contains(&agent.pid.to_string()));
}

#[test]
fn a_client_that_hangs_up_at_once_after_writing_does_not_stop_the_move() {
    // The seed's own check: hang up immediately after sending the write
    // (no wait for the move to start), with an agent that honours SIGTERM.
    let w = World::new(Zmx::Post);
    let mut agent = w.claude();
    let mut d = w.daemon(&[]);
    let mut c = d.session(Dialect::P2000);
    open_zmx(&mut c, "claude", &agent, 1);
    send_write(&mut c, 1, b"mine\n");
    drop(c);

    assert_eq!(agent.wait_killed_by(), libc::SIGTERM);
    assert_eq!(w.wait_zmx_record().argv, ["run", "mine", "-d", "claude", "--resume", SESSION_ID]);
    w.wait_posted("mine");
    assert_no_zombie(&d);
    assert!(d.is_running(), "the daemon exited");
}

#[test]
fn a_second_move_of_the_same_agent_while_one_runs_is_refused() {
    let w = World::new(Zmx::Post);
    let mut agent = w.stubborn_claude();
    let d = w.daemon(&["--move-kill-after", KILL_AFTER]);
    let mut first = d.session(Dialect::P2000);
    let mut second = d.session(Dialect::P2000);

    open_zmx(&mut first, "claude", &agent, 1);
    let tag = send_write(&mut first, 1, b"one\n");
    wait_move_waiting(&d, &agent);

    // From another connection, and from the same one on another fid.
    open_zmx(&mut second, "claude", &agent, 1);
    assert_move_error(&d, &second.rpc(&Tmsg::Write { fid: 1, offset: 0, data: b"two\n" }), &MOVE_BUSY);
    open_zmx(&mut first, "claude", &agent, 2);
    let again = first.tag();
    first.send(again, &Tmsg::Write { fid: 2, offset: 0, data: b"three\n" });
    let r = first.recv();
    assert_eq!(r.tag(), again, "the first move answered before the busy refusal: {r:?}");
    assert_move_error(&d, &r, &MOVE_BUSY);
    assert_eq!(agent.try_status(), None);

    // The first move lands, once, with its own name.
    first.set_read_timeout(MOVE_DEADLINE);
    let r = first.recv();
    assert_eq!(r.tag(), tag);
    assert_written(&r, 4);
    assert_eq!(agent.wait_killed_by(), libc::SIGKILL);
    assert_eq!(w.wait_zmx_record().argv, ["run", "one", "-d", "claude", "--resume", SESSION_ID]);
    assert!(!w.session_socket("two").exists() && !w.session_socket("three").exists());
    assert_no_zombie(&d);
}
