//! Negotiation: version(5) and CONFORMANCE items 1–4.

mod common;

use common::*;

#[test]
fn msize_is_the_clients_when_it_is_under_the_cap() {
    let d = Daemon::start(&["--msize", "65536"]);
    let mut c = d.connect();
    let r = c.version(8192, "9P2000");
    assert_eq!(r.msg(), Rmsg::Version { msize: 8192, version: b"9P2000" });
}

#[test]
fn msize_is_the_cap_when_the_client_asks_for_more() {
    let d = Daemon::start(&["--msize", "65536"]);
    let mut c = d.connect();
    let r = c.version(1 << 24, "9P2000");
    assert_eq!(r.msg(), Rmsg::Version { msize: 65536, version: b"9P2000" });
}

#[test]
fn the_default_msize_cap_is_one_mebibyte() {
    let d = Daemon::start(&[]);
    let mut c = d.connect();
    let r = c.version(u32::MAX, "9P2000");
    assert_eq!(r.msg(), Rmsg::Version { msize: 1 << 20, version: b"9P2000" });
}

#[test]
fn an_msize_of_exactly_4096_is_accepted() {
    let d = Daemon::start(&[]);
    let mut c = d.connect();
    let r = c.version(4096, "9P2000");
    assert_eq!(r.msg(), Rmsg::Version { msize: 4096, version: b"9P2000" });
}

#[test]
fn an_msize_under_4096_is_refused() {
    let d = Daemon::start(&[]);
    let mut c = d.connect();
    c.send(NOTAG, &Tmsg::Version { msize: 4095, version: b"9P2000" });
    // Refused means: no Rversion. An Rerror or a hang-up are both refusals.
    match c.next() {
        Ok(r) => assert!(r.is_error(), "Tversion msize 4095 was answered {r:?}"),
        Err(End::Closed) => {}
        Err(e) => panic!("Tversion msize 4095: {e:?}"),
    }
}

#[test]
fn a_refused_msize_leaves_the_session_unopened() {
    let d = Daemon::start(&[]);
    let mut c = d.connect();
    c.send(NOTAG, &Tmsg::Version { msize: 1024, version: b"9P2000" });
    if c.next().is_ok() {
        c.send(1, &Tmsg::Attach { fid: ROOT, afid: NOFID, uname: b"glenda", aname: b"", n_uname: NONUNAME });
        c.expect_closed();
    }
}

#[test]
fn an_unknown_version_answers_unknown() {
    let d = Daemon::start(&[]);
    let mut c = d.connect();
    let r = c.version(8192, "9P1999");
    let Rmsg::Version { version, .. } = r.msg() else { panic!("{r:?}") };
    assert_eq!(version, b"unknown");
}

#[test]
fn after_unknown_the_session_is_not_open() {
    let d = Daemon::start(&[]);
    let mut c = d.connect();
    c.version(8192, "Styx");
    c.send(1, &Tmsg::Attach { fid: ROOT, afid: NOFID, uname: b"glenda", aname: b"", n_uname: NONUNAME });
    c.expect_closed();
}

#[test]
fn after_unknown_a_second_tversion_can_still_agree() {
    let d = Daemon::start(&[]);
    let mut c = d.connect();
    c.version(8192, "Styx");
    let r = c.version(8192, "9P2000");
    assert_eq!(r.msg(), Rmsg::Version { msize: 8192, version: b"9P2000" });
    c.attach_ok(ROOT);
}

#[test]
fn nine_p_2000_answers_nine_p_2000() {
    let d = Daemon::start(&[]);
    let mut c = d.connect();
    let r = c.version(8192, "9P2000");
    assert_eq!(r.msg(), Rmsg::Version { msize: 8192, version: b"9P2000" });
}

#[test]
fn nine_p_2000_u_answers_nine_p_2000_u() {
    let d = Daemon::start(&[]);
    let mut c = d.connect();
    let r = c.version(8192, "9P2000.u");
    assert_eq!(r.msg(), Rmsg::Version { msize: 8192, version: b"9P2000.u" });
}

#[test]
fn an_unspoken_nine_p_2000_dialect_answers_plain_nine_p_2000() {
    let d = Daemon::start(&[]);
    let mut c = d.connect();
    let r = c.version(8192, "9P2000.foo");
    assert_eq!(r.msg(), Rmsg::Version { msize: 8192, version: b"9P2000" });
}

#[test]
fn nine_p_2000_l_is_answered_with_nine_p_2000_l() {
    let d = Daemon::start(&[]);
    let mut c = d.connect();
    let r = c.version(8192, "9P2000.L");
    assert_eq!(r.msg(), Rmsg::Version { msize: 8192, version: b"9P2000.L" });
}

#[test]
fn rversion_answers_on_notag() {
    let d = Daemon::start(&[]);
    let mut c = d.connect();
    let r = c.version(8192, "9P2000");
    assert_eq!(r.tag(), NOTAG);
}

#[test]
fn a_first_message_that_is_not_tversion_closes_the_connection() {
    let d = Daemon::start(&[]);
    let mut c = d.connect();
    c.send(1, &Tmsg::Attach { fid: ROOT, afid: NOFID, uname: b"glenda", aname: b"", n_uname: NONUNAME });
    c.expect_closed();
}

#[test]
fn a_first_message_of_a_known_size_but_unknown_type_closes_the_connection() {
    let d = Daemon::start(&[]);
    let mut c = d.connect();
    c.send_raw(&message(200, 1, b"abc"));
    c.expect_closed();
}

#[test]
fn a_tversion_mid_session_clunks_every_fid() {
    let d = Daemon::start(&[]);
    let mut c = d.session(Dialect::P2000);
    c.walk_ok(ROOT, 1, &["README"]);
    c.open_path("/pid", 2);
    c.version(8192, "9P2000");
    c.clunk(1).assert_error("Bad file descriptor");
    c.clunk(2).assert_error("Bad file descriptor");
    c.clunk(ROOT).assert_error("Bad file descriptor");
}

#[test]
fn after_a_mid_session_tversion_the_old_fid_numbers_attach_again() {
    let d = Daemon::start(&[]);
    let mut c = d.session(Dialect::P2000);
    c.walk_ok(ROOT, 1, &["README"]);
    c.version(8192, "9P2000");
    c.attach_ok(ROOT);
    c.attach_ok(1);
}

#[test]
fn a_mid_session_tversion_may_change_the_dialect() {
    let d = Daemon::start(&[]);
    let mut c = d.session(Dialect::P2000);
    let r = c.version(8192, "9P2000.u");
    assert_eq!(r.msg(), Rmsg::Version { msize: 8192, version: b"9P2000.u" });
    c.attach_ok(ROOT);
    c.walk(ROOT, 1, &["nosuch"]).expect_error();
    // The reply decodes strictly as .u (the errno travels): the switch took.
    let (_, errno) = c.walk(ROOT, 1, &["nosuch"]).expect_error();
    assert_eq!(errno, libc::ENOENT as u32);
}

#[test]
fn the_msize_flag_below_4096_is_a_usage_error() {
    let scratch = Scratch::new();
    let mut d = Daemon::spawn(&scratch, &["--no-post", "--unix", arg(&scratch.root.join("s")), "--msize", "4095"]);
    let status = d.wait_exit(EXIT_DEADLINE);
    assert_eq!(status.code(), Some(2), "stderr:\n{}", d.stderr());
}
