//! Flush and tags: flush(5), CONFORMANCE items 8, 32 and 33.
//!
//! Every request this tree answers is answered at once, so a tag is never
//! in flight when the next request is read, and a flush never finds its
//! request still waiting: what can be tested here is that tags are echoed,
//! reusable once answered, that an unknown tag flushes cleanly, and that a
//! reply never overtakes the Rflush that follows it.

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
        batch.extend(c.encode(2 * i + 1, &Tmsg::Walk { fid: ROOT, newfid: fid, names: WalkNames::new(&[b"pid"]).unwrap() }));
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
