//! Attach and auth: attach(5) and CONFORMANCE items 9–11.

mod common;

use common::*;

#[test]
fn tauth_is_answered_with_an_error() {
    let d = Daemon::start(&[]);
    let mut c = d.connect();
    c.version(8192, "9P2000");
    c.auth(7).expect_error();
}

#[test]
fn after_a_refused_tauth_attach_with_nofid_works() {
    // plan9port's `9p` (without -n) and py9p send Tauth first and fall back.
    let d = Daemon::start(&[]);
    let mut c = d.connect();
    c.version(8192, "9P2000.u");
    let (_, errno) = c.auth(7).expect_error();
    assert_ne!(errno, 0, "in .u an Rerror carries its errno");
    let qid = c.attach_ok(ROOT);
    assert_eq!(qid.ty, QTDIR);
}

#[test]
fn a_refused_tauth_makes_no_fid_of_its_afid() {
    let d = Daemon::start(&[]);
    let mut c = d.connect();
    c.version(8192, "9P2000");
    c.auth(7).expect_error();
    c.clunk(7).assert_error("Bad file descriptor");
}

#[test]
fn attach_gives_the_root_a_directory_qid() {
    let d = Daemon::start(&[]);
    let mut c = d.connect();
    c.version(8192, "9P2000");
    let qid = c.attach_ok(ROOT);
    assert_eq!(qid.ty, QTDIR);
    assert_eq!(c.stat_ok(ROOT).qid, qid);
}

#[test]
fn attach_with_an_afid_is_refused() {
    let d = Daemon::start(&[]);
    let mut c = d.connect();
    c.version(8192, "9P2000");
    c.attach_with(ROOT, 7, "").expect_error();
}

#[test]
fn a_refused_attach_leaves_its_fid_unmade() {
    let d = Daemon::start(&[]);
    let mut c = d.connect();
    c.version(8192, "9P2000");
    c.attach_with(ROOT, 7, "").expect_error();
    c.clunk(ROOT).assert_error("Bad file descriptor");
    c.attach_ok(ROOT);
}

#[test]
fn attach_with_an_aname_we_do_not_serve_is_refused() {
    let d = Daemon::start(&[]);
    let mut c = d.connect();
    c.version(8192, "9P2000");
    c.attach_with(ROOT, NOFID, "/etc").expect_error();
    c.attach_with(ROOT, NOFID, "agents").expect_error();
    c.clunk(ROOT).assert_error("Bad file descriptor");
}

#[test]
fn attach_on_a_fid_in_use_is_refused_and_the_fid_is_unchanged() {
    let d = Daemon::start(&[]);
    let mut c = d.session(Dialect::P2000);
    c.walk_ok(ROOT, 1, &["README"]);
    c.attach(1).assert_error("Bad file descriptor");
    assert_eq!(c.stat_ok(1).name, "README");
}

#[test]
fn any_uname_attaches_the_same_tree() {
    let d = Daemon::start(&[]);
    let mut c = d.connect();
    c.version(8192, "9P2000");
    let a = c.rpc(&Tmsg::Attach { fid: 1, afid: NOFID, uname: b"root", aname: b"", n_uname: NONUNAME });
    let b = c.rpc(&Tmsg::Attach { fid: 2, afid: NOFID, uname: b"nobody", aname: b"", n_uname: NONUNAME });
    assert_eq!(a.msg(), b.msg());
}

#[test]
fn one_connection_may_attach_several_fids() {
    let d = Daemon::start(&[]);
    let mut c = d.session(Dialect::P2000);
    let again = c.attach_ok(1);
    assert_eq!(c.stat_ok(ROOT).qid, again);
}
