//! Flush and tags: flush(5), CONFORMANCE items 8, 31, 32 and 33.
//!
//! The skeleton's requests (`/`, `/README`, `/pid`, `/uptime`) are answered
//! at once, so with them a tag is never in flight when the next request is
//! read: they test that tags are echoed, reusable once answered, and that
//! an unknown tag flushes cleanly. Requests that wait on the ring — a read
//! of a mirrored file — test the rest: a duplicate tag in flight, a flush
//! that finds its request waiting, a Tversion or a clunk that overtakes one.

mod common;

use common::*;

#[test]
fn tflush_of_an_unknown_tag_answers_rflush() {
    let d = Daemon::start(&[]);
    let mut c = d.session(Dialect::P2000);
    let r = c.rpc(&Tmsg::Flush { oldtag: 4242 });
    assert_eq!(r.msg(), Rmsg::Flush);
}

#[test]
fn tflush_of_notag_answers_rflush() {
    let d = Daemon::start(&[]);
    let mut c = d.session(Dialect::P2000);
    let r = c.rpc(&Tmsg::Flush { oldtag: NOTAG });
    assert_eq!(r.msg(), Rmsg::Flush);
}

#[test]
fn tflush_of_an_answered_tag_answers_rflush() {
    let d = Daemon::start(&[]);
    let mut c = d.session(Dialect::P2000);
    c.send(7, &Tmsg::Stat { fid: ROOT });
    assert_eq!(c.recv().tag(), 7);
    c.send(8, &Tmsg::Flush { oldtag: 7 });
    let r = c.recv();
    assert_eq!((r.tag(), r.msg()), (8, Rmsg::Flush));
}

#[test]
fn a_tag_may_be_reused_after_its_reply() {
    let d = Daemon::start(&[]);
    let mut c = d.session(Dialect::P2000);
    for _ in 0..3 {
        c.send(5, &Tmsg::Walk { fid: ROOT, newfid: 1, names: WalkNames::new(&[b"README"]).unwrap() });
        let r = c.recv();
        assert_eq!(r.tag(), 5);
        assert_eq!(r.qids().len(), 1);
        c.send(5, &Tmsg::Clunk { fid: 1 });
        let r = c.recv();
        assert_eq!((r.tag(), r.msg()), (5, Rmsg::Clunk));
    }
}

#[test]
fn every_reply_carries_its_requests_tag() {
    let d = Daemon::start(&[]);
    let mut c = d.session(Dialect::P2000);
    let tags = [0u16, 1, 0x7fff, 0xfffe, 3];
    let mut batch = Vec::new();
    for t in tags {
        batch.extend(c.encode(t, &Tmsg::Stat { fid: ROOT }));
    }
    c.send_raw(&batch);
    let got: Vec<u16> = tags.iter().map(|_| c.recv().tag()).collect();
    assert_eq!(got, tags);
}

#[test]
fn an_error_reply_carries_its_requests_tag() {
    let d = Daemon::start(&[]);
    let mut c = d.session(Dialect::P2000);
    c.send(0x1234, &Tmsg::Clunk { fid: 99 });
    let r = c.recv();
    assert_eq!(r.tag(), 0x1234);
    r.expect_error();
}

#[test]
fn a_flushed_requests_reply_comes_before_the_rflush() {
    let d = Daemon::start(&[]);
    let mut c = d.session(Dialect::P2000);
    c.open_path("/README", 1);
    let mut batch = c.encode(10, &Tmsg::Read { fid: 1, offset: 0, count: 100 });
    batch.extend(c.encode(11, &Tmsg::Flush { oldtag: 10 }));
    c.send_raw(&batch);
    let first = c.recv();
    // flush(5): if the request's reply is sent at all, it goes first.
    if first.tag() == 10 {
        assert_eq!(first.data(), &readme()[..100]);
        let second = c.recv();
        assert_eq!((second.tag(), second.msg()), (11, Rmsg::Flush));
    } else {
        assert_eq!((first.tag(), first.msg()), (11, Rmsg::Flush));
    }
    // And nothing for tag 10 may follow the Rflush.
    let probe = c.rpc(&Tmsg::Stat { fid: ROOT });
    assert_ne!(probe.tag(), 10);
}

#[test]
fn several_flushes_of_one_tag_are_answered_in_order() {
    let d = Daemon::start(&[]);
    let mut c = d.session(Dialect::P2000);
    let mut batch = Vec::new();
    for t in [20u16, 21, 22] {
        batch.extend(c.encode(t, &Tmsg::Flush { oldtag: 9 }));
    }
    c.send_raw(&batch);
    let got: Vec<u16> = (0..3).map(|_| c.recv().tag()).collect();
    assert_eq!(got, [20, 21, 22]);
}

#[test]
fn a_flush_leaves_the_session_working() {
    let d = Daemon::start(&[]);
    let mut c = d.session(Dialect::P2000);
    c.rpc(&Tmsg::Flush { oldtag: 1 });
    assert_eq!(c.cat("/pid", 1), format!("{}\n", d.pid).into_bytes());
}

#[test]
fn tflush_before_attach_answers_rflush() {
    let d = Daemon::start(&[]);
    let mut c = d.connect();
    c.version(8192, "9P2000");
    let r = c.rpc(&Tmsg::Flush { oldtag: 1 });
    assert_eq!(r.msg(), Rmsg::Flush);
}

#[test]
fn pipelined_requests_are_answered_in_order_with_their_tags() {
    let d = Daemon::start(&[]);
    let mut c = d.session(Dialect::P2000);
    let mut batch = Vec::new();
    for i in 0..50u16 {
        let fid = 100 + u32::from(i);
        batch.extend(
            c.encode(2 * i + 1, &Tmsg::Walk { fid: ROOT, newfid: fid, names: WalkNames::new(&[b"pid"]).unwrap() }),
        );
        batch.extend(c.encode(2 * i + 2, &Tmsg::Clunk { fid }));
    }
    c.send_raw(&batch);
    for i in 0..50u16 {
        let w = c.recv();
        assert_eq!((w.tag(), w.qids().len()), (2 * i + 1, 1));
        let k = c.recv();
        assert_eq!((k.tag(), k.msg()), (2 * i + 2, Rmsg::Clunk));
    }
}

// --- Requests that wait ----------------------------------------------------
//
// A file under a mirror is read through the ring: its Tread is parked until
// the kernel answers, so a second request sent in the same write finds it
// still in flight.

/// A daemon whose home holds `~/.dsh/notes.md`, served as `/dsh/notes.md`;
/// a session with that file open as fid 1. The file's text.
fn parked_file() -> (Daemon, Conn, Vec<u8>) {
    let scratch = Scratch::new();
    let text: Vec<u8> = (0..20_000u32).flat_map(|i| format!("line {i}\n").into_bytes()).collect();
    scratch.home_file(".dsh/notes.md", &text);
    let d = Daemon::start_in(&scratch, &[]);
    let mut c = d.session(Dialect::P2000);
    c.open_path("/dsh/notes.md", 1);
    (d, c, text)
}

#[test]
fn a_mirrored_file_reads_back_exactly() {
    let (_d, mut c, text) = parked_file();
    assert_eq!(c.read_all(1), text);
}

#[test]
fn a_tag_reused_while_its_request_is_in_flight_is_refused_and_the_first_is_unaffected() {
    let (_d, mut c, text) = parked_file();
    let mut batch = c.encode(5, &Tmsg::Read { fid: 1, offset: 0, count: 4000 });
    batch.extend(c.encode(5, &Tmsg::Read { fid: 1, offset: 100, count: 10 }));
    c.send_raw(&batch);
    let (a, b) = (c.recv(), c.recv());
    let (error, read) = if a.is_error() { (a, b) } else { (b, a) };
    assert_eq!((error.tag(), read.tag()), (5, 5));
    error.assert_error("Invalid argument");
    assert_eq!(read.data(), &text[..4000]);
}

#[test]
fn a_flushed_requests_reply_never_follows_its_rflush() {
    let (_d, mut c, _) = parked_file();
    let mut batch = c.encode(5, &Tmsg::Read { fid: 1, offset: 0, count: 4000 });
    batch.extend(c.encode(6, &Tmsg::Flush { oldtag: 5 }));
    c.send_raw(&batch);
    let mut before_rflush = Vec::new();
    loop {
        let r = c.recv();
        if r.tag() == 6 {
            assert_eq!(r.msg(), Rmsg::Flush);
            break;
        }
        before_rflush.push(r.tag());
    }
    assert!(before_rflush.iter().all(|&t| t == 5), "unexpected replies {before_rflush:?}");
    let probe = c.rpc(&Tmsg::Stat { fid: ROOT });
    assert!(matches!(probe.msg(), Rmsg::Stat { .. }), "after Rflush came {probe:?}");
}

#[test]
fn after_a_flush_the_flushed_tag_is_free_again() {
    let (_d, mut c, text) = parked_file();
    let mut batch = c.encode(5, &Tmsg::Read { fid: 1, offset: 0, count: 4000 });
    batch.extend(c.encode(6, &Tmsg::Flush { oldtag: 5 }));
    c.send_raw(&batch);
    while c.recv().tag() != 6 {}
    c.send(5, &Tmsg::Read { fid: 1, offset: 10, count: 10 });
    let r = c.recv();
    assert_eq!((r.tag(), r.data()), (5, text[10..20].to_vec()));
}

#[test]
fn a_tversion_mid_session_aborts_a_request_in_flight() {
    let (_d, mut c, _) = parked_file();
    let mut batch = c.encode(5, &Tmsg::Read { fid: 1, offset: 0, count: 4000 });
    batch.extend(c.encode(NOTAG, &Tmsg::Version { msize: 8192, version: b"9P2000" }));
    c.send_raw(&batch);
    let mut before = Vec::new();
    loop {
        let r = c.recv();
        if r.tag() == NOTAG {
            assert!(matches!(r.msg(), Rmsg::Version { .. }), "{r:?}");
            break;
        }
        before.push(r.tag());
    }
    assert!(before.iter().all(|&t| t == 5), "unexpected replies {before:?}");
    c.attach_ok(ROOT);
    let probe = c.rpc(&Tmsg::Stat { fid: ROOT });
    assert!(matches!(probe.msg(), Rmsg::Stat { .. }), "after Rversion came {probe:?}");
}

#[test]
fn a_connection_closed_with_a_request_in_flight_leaves_the_daemon_serving() {
    let (d, mut c, text) = parked_file();
    c.send(5, &Tmsg::Read { fid: 1, offset: 0, count: 4000 });
    drop(c);
    let mut other = d.session(Dialect::P2000);
    assert_eq!(other.cat("/dsh/notes.md", 1), text);
}

#[test]
fn a_clunk_racing_a_read_in_flight_lets_the_read_finish_on_its_file() {
    let (_d, mut c, text) = parked_file();
    let mut batch = c.encode(5, &Tmsg::Read { fid: 1, offset: 0, count: 4000 });
    batch.extend(c.encode(6, &Tmsg::Clunk { fid: 1 }));
    c.send_raw(&batch);
    let (a, b) = (c.recv(), c.recv());
    let (read, clunk) = if a.tag() == 5 { (a, b) } else { (b, a) };
    assert_eq!((clunk.tag(), clunk.msg()), (6, Rmsg::Clunk));
    assert_eq!((read.tag(), read.data()), (5, text[..4000].to_vec()));
}
