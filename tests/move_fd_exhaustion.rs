//! A move out of file descriptors (defect 3 of issue "The server core"):
//! a move whose first socket cannot be made is answered with an error and
//! is over — its tag free, the agent no longer "moving" — so once the
//! daemon has descriptors again the next move of the agent lands, instead
//! of every later move answering busy for good.

mod common;
mod move_fakes;

use common::*;
use move_fakes::*;

/// The daemon's fd limit, soft and hard. Not lower: the scan of the real
/// `/proc` that finds the agent has up to 256 fds in flight (128 reads,
/// each its base directory and its file), and a scan short of fds does
/// not list every agent.
const NOFILE: u64 = 512;
/// The first fid the exhausting opens use.
const FILL_FID: u32 = 1000;

#[test]
fn a_move_that_cannot_make_its_socket_is_over_and_the_next_move_lands() {
    let w = World::new(Zmx::Post);
    let mut agent = w.claude();
    w.scratch.home_file(".claude/history.jsonl", b"{\"display\":\"hi\"}\n");
    let d = w.daemon_limited(&[], NOFILE);
    let mut c = d.session(Dialect::P2000);
    assert!(listed(&mut c, "claude").contains(&agent.pid.to_string()), "the agent is not listed");

    // zmx open for writing, then every descriptor taken.
    open_zmx(&mut c, "claude", &agent, 1);
    c.walk_ok(ROOT, 2, &["claude", "history"]);
    let (files, refused) = c.open_until_refused(2, FILL_FID, NOFILE as u32);
    eprintln!("{} files open; the next open: {:?}", files.len(), refused.error());
    let fillers = d.take_every_fd(NOFILE);

    // The move cannot make its socket: it is answered, with an error.
    let tag = send_write(&mut c, 1, b"mine\n");
    let r = c.recv();
    assert_eq!(r.tag(), tag, "{r:?}");
    let (text, _) = r.expect_error();
    eprintln!("the move out of fds: {text}");
    assert_ne!(text, MOVE_BUSY.text, "the first move was refused as busy");
    agent.assert_untouched();
    assert!(w.zmx_record().is_none(), "zmx ran although the move failed");

    // Descriptors back: the failed move is over, so the next one lands.
    c.clunk_all(&files);
    c.clunk_ok(1);
    drop(fillers);
    let r = move_agent(&mut c, "claude", &agent, b"mine\n");
    assert!(
        r.error().is_none_or(|(text, _)| text != MOVE_BUSY.text),
        "the move after fds came back answered busy: the failed move still holds the agent: {r:?}"
    );
    assert_written(&r, 5);
    assert_eq!(agent.wait_killed_by(), libc::SIGTERM);
    assert_eq!(w.wait_zmx_record().argv, ["run", "mine", "-d", "claude", "--resume", SESSION_ID]);
    w.wait_posted("mine");
    assert_no_zombie(&d);

    // And the failed move's tag is free: a request on it is answered.
    c.send(tag, &Tmsg::Stat { fid: ROOT });
    let r = c.recv();
    assert_eq!(r.tag(), tag);
    assert!(matches!(r.msg(), Rmsg::Stat { .. }), "a request on the failed move's tag: {r:?}");
}
