//! Mirrored requests wait on the ring, so they are the ones a flush, a
//! hang-up or a pipeline catches in flight (CONFORMANCE 33, 35, 37; issue
//! 3, "Opening"). A flushed walk binds its newfid exactly when its Rwalk
//! went out; a flushed open leaves its fid unopened and its descriptor
//! closed; a hang-up mid-request leaves nothing held.

mod common;

use std::time::Duration;

use common::*;

const FILE: &str = "/claude/projects/-home-glenda/s.jsonl";
const BYTES: &[u8] = b"{\"type\":\"user\"}\n";
/// How many times each race is run.
const ROUNDS: usize = 200;
/// How long closes submitted through the ring may take to land.
const SETTLE: Duration = Duration::from_secs(5);

fn world() -> std::sync::Arc<Scratch> {
    let s = Scratch::new();
    s.home_file(".claude/projects/-home-glenda/s.jsonl", BYTES);
    s
}

/// Send `msg` on tag 10 and a flush of it on tag 11 — after a round trip
/// of `delay`'s, if given, so the request sometimes finishes first — and
/// read the replies up to the Rflush, which must be the last: the request's
/// own reply, if it came.
fn flushed(c: &mut Conn, msg: &Tmsg<'_>, delay: Option<&mut Conn>) -> Option<Reply> {
    c.send(10, msg);
    if let Some(other) = delay {
        other.walk_path(FILE, 1).qids();
        other.clunk_ok(1);
    }
    c.send(11, &Tmsg::Flush { oldtag: 10 });
    let first = c.recv();
    if first.tag() == 11 {
        assert_eq!(first.msg(), Rmsg::Flush);
        return None;
    }
    assert_eq!(first.tag(), 10, "{first:?}");
    let flush = c.recv();
    assert_eq!((flush.tag(), flush.msg()), (11, Rmsg::Flush), "the Rflush follows the flushed request's reply");
    Some(first)
}

#[test]
fn a_flushed_walk_binds_its_newfid_exactly_when_its_rwalk_was_sent() {
    let s = world();
    let d = Daemon::start_in(&s, &[]);
    let mut c = d.session(Dialect::P2000);
    let mut other = d.session(Dialect::P2000);
    let names: Vec<&[u8]> = tree_names(FILE).into_iter().map(str::as_bytes).collect();
    let mut answered = 0;
    for round in 0..ROUNDS {
        let delay = (round % 2 == 1).then_some(&mut other);
        let reply =
            flushed(&mut c, &Tmsg::Walk { fid: ROOT, newfid: 5, names: WalkNames::new(&names).unwrap() }, delay);
        match reply {
            Some(r) => {
                assert_eq!(r.qids().len(), names.len());
                c.clunk_ok(5);
                answered += 1;
            }
            None => c.clunk(5).assert_error("Bad file descriptor"),
        }
    }
    println!("{answered} of {ROUNDS} walks answered before their flush");
}

#[test]
fn a_flushed_open_leaves_its_fid_unopened_or_opened_and_no_descriptor_astray() {
    let s = world();
    let d = Daemon::start_in(&s, &[]);
    let mut c = d.session(Dialect::P2000);
    let mut other = d.session(Dialect::P2000);
    let before = d.fd_count();
    let mut answered = 0;
    for round in 0..ROUNDS {
        c.walk_path(FILE, 5).qids();
        let delay = (round % 2 == 1).then_some(&mut other);
        match flushed(&mut c, &Tmsg::Open { fid: 5, mode: OREAD }, delay) {
            Some(r) => {
                assert!(matches!(r.msg(), Rmsg::Open { .. }), "{r:?}");
                assert_eq!(c.read_all(5), BYTES);
                answered += 1;
            }
            None => {
                c.read(5, 0, 100).assert_error("Bad file descriptor");
                assert_eq!(c.cat_fid(5), BYTES, "the fid opens once the flush is over");
            }
        }
        c.clunk_ok(5);
    }
    println!("{answered} of {ROUNDS} opens answered before their flush");
    if poll(SETTLE, || (d.fd_count() == before).then_some(())).is_none() {
        panic!("{} fds held after every fid was clunked, {before} before", d.fd_count());
    }
}

#[test]
fn a_flushed_listing_open_leaves_the_fid_listable() {
    let s = world();
    for i in 0..50 {
        s.home_file(&format!(".claude/projects/-home-glenda/{i:02}.jsonl"), b"x\n");
    }
    let d = Daemon::start_in(&s, &[]);
    let mut c = d.session(Dialect::P2000);
    let mut other = d.session(Dialect::P2000);
    for round in 0..ROUNDS / 4 {
        c.walk_path("/claude/projects/-home-glenda", 5).qids();
        let delay = (round % 2 == 1).then_some(&mut other);
        if flushed(&mut c, &Tmsg::Open { fid: 5, mode: OREAD }, delay).is_none() {
            c.open_ok(5, OREAD);
        }
        let data = c.read_ok(5, 0, SESSION_MSIZE - IOHDRSZ);
        assert_eq!(entries_of(&data, Dialect::P2000).len(), 51);
        c.clunk_ok(5);
    }
}

#[test]
fn pipelined_mirrored_requests_are_each_answered_once() {
    let s = world();
    let d = Daemon::start_in(&s, &[]);
    let mut c = d.session(Dialect::P2000);
    let names: Vec<&[u8]> = tree_names(FILE).into_iter().map(str::as_bytes).collect();
    let walk = |fid| Tmsg::Walk { fid: ROOT, newfid: fid, names: WalkNames::new(&names).unwrap() };
    // A client may not use a fid before the Rwalk that made it, so the
    // stats wait for the walks' replies; within each batch, anything goes.
    let mut seen = std::collections::BTreeSet::new();
    for fid in 1..=100u32 {
        c.send(fid as u16, &walk(fid));
    }
    for _ in 0..100 {
        let r = c.recv();
        assert_eq!(r.qids().len(), 4, "{r:?}");
        assert!(seen.insert(r.tag()), "tag {} answered twice", r.tag());
    }
    for fid in 1..=100u32 {
        c.send(1000 + fid as u16, &Tmsg::Stat { fid });
    }
    for _ in 0..100 {
        let r = c.recv();
        assert!(matches!(r.msg(), Rmsg::Stat { .. }), "{r:?}");
        assert!(seen.insert(r.tag()), "tag {} answered twice", r.tag());
    }
    c.set_read_timeout(Duration::from_millis(200));
    assert!(matches!(c.next(), Err(End::Timeout)), "a reply nobody asked for");
}

#[test]
fn a_hang_up_with_mirrored_requests_in_flight_leaves_nothing_held() {
    let s = world();
    let d = Daemon::start_in(&s, &[]);
    let mut other = d.session(Dialect::P2000);
    let before = d.fd_count();
    for _ in 0..20 {
        let mut c = d.session(Dialect::P2000);
        for fid in 1..=30u32 {
            c.walk_path(FILE, fid).qids();
        }
        for fid in 1..=30u32 {
            c.send(fid as u16, &Tmsg::Open { fid, mode: OREAD });
        }
        c.send(99, &Tmsg::Walk { fid: ROOT, newfid: 99, names: WalkNames::new(&[b"claude", b"projects"]).unwrap() });
        drop(c);
    }
    if poll(SETTLE, || (d.fd_count() == before).then_some(())).is_none() {
        panic!("{} fds held after every connection hung up, {before} before", d.fd_count());
    }
    assert_eq!(other.cat(FILE, 1), BYTES);
}
