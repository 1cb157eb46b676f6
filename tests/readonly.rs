//! The tree is a view, not a store: CONFORMANCE items 22 and 30, and the
//! issue's one text for every refused write.

mod common;

use common::*;

/// Open `/README` as fid 1 with `mode`; the reply.
fn open_readme(mode: u8) -> (Daemon, Conn, Reply) {
    let d = Daemon::start(&[]);
    let mut c = d.session(Dialect::P2000);
    c.walk_ok(ROOT, 1, &["README"]);
    let r = c.open(1, mode);
    (d, c, r)
}

#[test]
fn open_for_writing_is_refused_with_the_read_only_text() {
    let (_d, _c, r) = open_readme(OWRITE);
    r.assert_error(READ_ONLY);
}

#[test]
fn open_for_reading_and_writing_is_refused_with_the_read_only_text() {
    let (_d, _c, r) = open_readme(ORDWR);
    r.assert_error(READ_ONLY);
}

#[test]
fn open_for_exec_is_refused_with_the_read_only_text() {
    let (_d, _c, r) = open_readme(OEXEC);
    r.assert_error(READ_ONLY);
}

#[test]
fn open_with_truncate_is_refused_with_the_read_only_text() {
    let (_d, _c, r) = open_readme(OREAD | OTRUNC);
    r.assert_error(READ_ONLY);
}

#[test]
fn open_with_remove_on_close_is_refused_with_the_read_only_text() {
    let (_d, _c, r) = open_readme(OREAD | ORCLOSE);
    r.assert_error(READ_ONLY);
}

#[test]
fn open_of_a_directory_for_writing_is_refused_with_the_read_only_text() {
    let d = Daemon::start(&[]);
    let mut c = d.session(Dialect::P2000);
    c.walk_ok(ROOT, 1, &[]);
    c.open(1, OWRITE).assert_error(READ_ONLY);
}

#[test]
fn a_refused_open_leaves_the_fid_unopened_and_usable() {
    let (_d, mut c, r) = open_readme(OWRITE);
    r.expect_error();
    c.read(1, 0, 10).expect_error();
    c.open_ok(1, OREAD);
    assert_eq!(c.read_all(1), readme());
}

#[test]
fn the_read_only_refusal_is_eperm_in_nine_p_2000_u() {
    let d = Daemon::start(&[]);
    let mut c = d.session(Dialect::P2000u);
    c.walk_ok(ROOT, 1, &["README"]);
    let (text, errno) = c.open(1, OWRITE).expect_error();
    assert_eq!((text.as_str(), errno), (READ_ONLY, libc::EROFS as u32));
}

#[test]
fn opening_an_open_fid_again_is_refused() {
    let d = Daemon::start(&[]);
    let mut c = d.session(Dialect::P2000);
    c.open_path("/README", 1);
    c.open(1, OREAD).expect_error();
}

#[test]
fn tcreate_is_refused_with_the_read_only_text() {
    let d = Daemon::start(&[]);
    let mut c = d.session(Dialect::P2000);
    c.walk_ok(ROOT, 1, &[]);
    let r = c.rpc(&Tmsg::Create { fid: 1, name: b"new", perm: 0o644, mode: OWRITE, extension: b"" });
    r.assert_error(READ_ONLY);
    c.walk(ROOT, 2, &["new"]).assert_error("file does not exist");
}

#[test]
fn tcreate_in_nine_p_2000_u_is_refused_with_the_read_only_text() {
    let d = Daemon::start(&[]);
    let mut c = d.session(Dialect::P2000u);
    c.walk_ok(ROOT, 1, &[]);
    let r = c.rpc(&Tmsg::Create {
        fid: 1,
        name: b"link",
        perm: proto::DMSYMLINK | 0o777,
        mode: OREAD,
        extension: b"/etc/passwd",
    });
    let (text, errno) = r.expect_error();
    assert_eq!((text.as_str(), errno), (READ_ONLY, libc::EROFS as u32));
}

#[test]
fn twrite_is_refused_with_the_read_only_text() {
    let d = Daemon::start(&[]);
    let mut c = d.session(Dialect::P2000);
    c.open_path("/README", 1);
    c.rpc(&Tmsg::Write { fid: 1, offset: 0, data: b"scribble" }).assert_error(READ_ONLY);
    assert_eq!(c.read_all(1), readme());
}

#[test]
fn twrite_on_an_unopened_fid_is_refused() {
    let d = Daemon::start(&[]);
    let mut c = d.session(Dialect::P2000);
    c.walk_ok(ROOT, 1, &["pid"]);
    c.rpc(&Tmsg::Write { fid: 1, offset: 0, data: b"1\n" }).expect_error();
}

#[test]
fn twstat_is_refused_with_the_read_only_text() {
    let d = Daemon::start(&[]);
    let mut c = d.session(Dialect::P2000);
    c.walk_ok(ROOT, 1, &["README"]);
    let before = c.stat_ok(1);
    let stat = Stat {
        ty: 0,
        dev: 0,
        qid: before.qid,
        mode: 0o666,
        atime: 0,
        mtime: 0,
        length: 0,
        name: b"README",
        uid: b"",
        gid: b"",
        muid: b"",
        extension: b"",
        n_uid: NONUNAME,
        n_gid: NONUNAME,
        n_muid: NONUNAME,
    };
    c.rpc(&Tmsg::Wstat { fid: 1, stat }).assert_error(READ_ONLY);
    assert_eq!(c.stat_ok(1).mode, before.mode);
}

#[test]
fn tremove_is_refused_with_the_read_only_text() {
    let d = Daemon::start(&[]);
    let mut c = d.session(Dialect::P2000);
    c.walk_ok(ROOT, 1, &["README"]);
    c.rpc(&Tmsg::Remove { fid: 1 }).assert_error(READ_ONLY);
}

#[test]
fn tremove_clunks_the_fid_anyway() {
    let d = Daemon::start(&[]);
    let mut c = d.session(Dialect::P2000);
    c.walk_ok(ROOT, 1, &["README"]);
    c.rpc(&Tmsg::Remove { fid: 1 }).expect_error();
    c.clunk(1).assert_error("Bad file descriptor");
}

#[test]
fn tremove_removes_nothing() {
    let d = Daemon::start(&[]);
    let mut c = d.session(Dialect::P2000);
    c.walk_ok(ROOT, 1, &["README"]);
    c.rpc(&Tmsg::Remove { fid: 1 }).expect_error();
    assert_eq!(c.cat("/README", 2), readme());
}

#[test]
fn tremove_of_the_root_clunks_it_too() {
    let d = Daemon::start(&[]);
    let mut c = d.session(Dialect::P2000);
    c.rpc(&Tmsg::Remove { fid: ROOT }).expect_error();
    c.walk(ROOT, 1, &["README"]).assert_error("Bad file descriptor");
}
