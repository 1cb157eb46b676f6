//! zmx is the daemon's child for as long as it runs, whatever the move is
//! doing by then (defect 4 of issue "The server core"): a zmx that posts
//! the session and stays in the foreground past the move's reply is
//! reaped when it exits, not left a zombie of the daemon. Every child is
//! reaped on SIGCHLD.

mod common;
mod move_fakes;

use common::*;
use move_fakes::*;

#[test]
fn a_zmx_that_exits_after_the_moves_reply_is_reaped_not_left_a_zombie() {
    let w = World::new(Zmx::Foreground);
    let mut agent = w.claude();
    let d = w.daemon(&[]);
    let mut c = d.session(Dialect::P2000);

    assert_written(&move_agent(&mut c, "claude", &agent, b"mine\n"), 5);
    assert_eq!(agent.wait_killed_by(), libc::SIGTERM);
    let zmx = w.zmx_pid();
    // The case this pins: the move has answered, and its zmx is still
    // running, the daemon's child.
    let fields = stat_fields(zmx).expect("zmx exited before it was released");
    assert_eq!(fields[1], d.pid.to_string(), "zmx is not the daemon's child: {fields:?}");
    assert_ne!(fields[0], "Z", "zmx exited before it was released");
    let started = fields[19].clone();

    w.release_zmx();
    // Gone entirely: no /proc/<pid> of it at all, not a zombie kept there.
    let gone = poll(EFFECT_DEADLINE, || match stat_fields(zmx) {
        Some(f) if f[19] == started => None,
        _ => Some(()),
    });
    if gone.is_none() {
        let state = stat_fields(zmx).map(|f| f[0].clone());
        panic!("zmx (pid {zmx}) exited but is still in /proc as {state:?}: the daemon never reaped it");
    }
    assert_no_zombie(&d);
    // And the daemon goes on: the next request is answered.
    assert_eq!(c.cat("/pid", 2), format!("{}\n", d.pid).as_bytes());
}
