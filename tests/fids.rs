//! Fids: clunk(5), CONFORMANCE items 29 and 35, and `--max-fids`.

mod common;

use common::*;

const UNKNOWN_FID: &str = "Bad file descriptor";
const TOO_MANY: &str = "Too many open files";

#[test]
fn clunk_of_an_unknown_fid_is_an_error() {
    let d = Daemon::start(&[]);
    let mut c = d.session(Dialect::P2000);
    c.clunk(77).assert_error(UNKNOWN_FID);
}

#[test]
fn clunk_of_an_unknown_fid_leaves_the_session_working() {
    // Linux clunks fids a partial walk never made; that must be harmless.
    let d = Daemon::start(&[]);
    let mut c = d.session(Dialect::P2000);
    c.clunk(77).expect_error();
    assert_eq!(c.cat("/README", 1), readme());
}

#[test]
fn clunk_of_an_unknown_fid_is_ebadf_in_nine_p_2000_u() {
    let d = Daemon::start(&[]);
    let mut c = d.session(Dialect::P2000u);
    let (_, errno) = c.clunk(77).expect_error();
    assert_eq!(errno, libc::EBADF as u32);
}

#[test]
fn a_clunked_fid_is_gone() {
    let d = Daemon::start(&[]);
    let mut c = d.session(Dialect::P2000);
    c.walk_ok(ROOT, 1, &["README"]);
    c.clunk_ok(1);
    c.stat(1).assert_error(UNKNOWN_FID);
    c.clunk(1).assert_error(UNKNOWN_FID);
}

#[test]
fn after_a_clunk_the_fid_number_is_free_again() {
    let d = Daemon::start(&[]);
    let mut c = d.session(Dialect::P2000);
    c.walk_ok(ROOT, 1, &["README"]);
    c.clunk_ok(1);
    c.walk_ok(ROOT, 1, &["pid"]);
    assert_eq!(c.stat_ok(1).name, "pid");
}

#[test]
fn clunk_of_an_open_fid_closes_it() {
    let d = Daemon::start(&[]);
    let mut c = d.session(Dialect::P2000);
    c.open_path("/README", 1);
    c.clunk_ok(1);
    c.read(1, 0, 10).assert_error(UNKNOWN_FID);
}

#[test]
fn clunk_of_the_root_fid_leaves_other_fids_working() {
    let d = Daemon::start(&[]);
    let mut c = d.session(Dialect::P2000);
    c.walk_ok(ROOT, 1, &["README"]);
    c.clunk_ok(ROOT);
    c.open_ok(1, OREAD);
    assert_eq!(c.read_all(1), readme());
}

#[test]
fn fids_belong_to_their_connection() {
    let d = Daemon::start(&[]);
    let mut a = d.session(Dialect::P2000);
    let mut b = d.session(Dialect::P2000);
    a.walk_ok(ROOT, 5, &["README"]);
    b.clunk(5).assert_error(UNKNOWN_FID);
    assert_eq!(a.stat_ok(5).name, "README");
}

#[test]
fn past_max_fids_a_walk_is_refused_with_too_many_open_files() {
    let d = Daemon::start(&["--max-fids", "4"]);
    let mut c = d.session(Dialect::P2000);
    for fid in 1..4 {
        c.walk_ok(ROOT, fid, &["README"]);
    }
    c.walk(ROOT, 4, &["README"]).assert_error(TOO_MANY);
    c.clunk(4).assert_error(UNKNOWN_FID);
}

#[test]
fn past_max_fids_an_attach_is_refused_with_too_many_open_files() {
    let d = Daemon::start(&["--max-fids", "2"]);
    let mut c = d.session(Dialect::P2000);
    c.attach_ok(1);
    c.attach(2).assert_error(TOO_MANY);
}

#[test]
fn too_many_open_files_is_emfile_in_nine_p_2000_u() {
    let d = Daemon::start(&["--max-fids", "1"]);
    let mut c = d.session(Dialect::P2000u);
    let (text, errno) = c.walk(ROOT, 1, &[]).expect_error();
    assert_eq!((text.as_str(), errno), (TOO_MANY, libc::EMFILE as u32));
}

#[test]
fn at_max_fids_a_walk_onto_the_same_fid_still_works() {
    let d = Daemon::start(&["--max-fids", "1"]);
    let mut c = d.session(Dialect::P2000);
    c.walk_ok(ROOT, ROOT, &["README"]);
    c.open_ok(ROOT, OREAD);
    assert_eq!(c.read_all(ROOT), readme());
}

#[test]
fn after_a_clunk_at_max_fids_a_new_fid_is_allowed() {
    let d = Daemon::start(&["--max-fids", "2"]);
    let mut c = d.session(Dialect::P2000);
    c.walk_ok(ROOT, 1, &["README"]);
    c.walk(ROOT, 2, &["pid"]).assert_error(TOO_MANY);
    c.clunk_ok(1);
    c.walk_ok(ROOT, 2, &["pid"]);
}

#[test]
fn max_fids_counts_per_connection() {
    let d = Daemon::start(&["--max-fids", "2"]);
    let mut a = d.session(Dialect::P2000);
    a.walk_ok(ROOT, 1, &["README"]);
    let mut b = d.session(Dialect::P2000);
    b.walk_ok(ROOT, 1, &["README"]);
    b.walk(ROOT, 2, &["README"]).assert_error(TOO_MANY);
}
