//! Walk: walk(5) and CONFORMANCE items 12–19.

mod common;

use common::*;

const UNKNOWN_FID: &str = "Bad file descriptor";

#[test]
fn walking_no_names_clones_the_fid_to_a_new_fid() {
    let d = Daemon::start(&[]);
    let mut c = d.session(Dialect::P2000);
    let root = c.stat_ok(ROOT);
    let r = c.walk(ROOT, 1, &[]);
    assert!(r.qids().is_empty(), "{r:?}");
    assert_eq!(c.stat_ok(1), root);
}

#[test]
fn a_clone_is_independent_of_its_original() {
    let d = Daemon::start(&[]);
    let mut c = d.session(Dialect::P2000);
    c.walk_ok(ROOT, 1, &[]);
    c.clunk_ok(ROOT);
    c.walk_ok(1, 2, &["README"]);
}

#[test]
fn walking_no_names_onto_the_same_fid_is_allowed_and_changes_nothing() {
    let d = Daemon::start(&[]);
    let mut c = d.session(Dialect::P2000);
    let root = c.stat_ok(ROOT);
    let r = c.walk(ROOT, ROOT, &[]);
    assert!(r.qids().is_empty(), "{r:?}");
    assert_eq!(c.stat_ok(ROOT), root);
}

#[test]
fn walking_a_fid_onto_itself_moves_it() {
    let d = Daemon::start(&[]);
    let mut c = d.session(Dialect::P2000);
    c.walk_ok(ROOT, 1, &[]);
    c.walk_ok(1, 1, &["README"]);
    assert_eq!(c.stat_ok(1).name, "README");
}

#[test]
fn sixteen_names_are_allowed() {
    let d = Daemon::start(&[]);
    let mut c = d.session(Dialect::P2000);
    let mut names = vec![".."; 15];
    names.push("README");
    let qids = c.walk_ok(ROOT, 1, &names);
    assert_eq!(qids.len(), 16);
}

#[test]
fn more_than_sixteen_names_are_refused() {
    let d = Daemon::start(&[]);
    let mut c = d.session(Dialect::P2000);
    let names: Vec<&[u8]> = vec![b".."; 17];
    let r = c.walk_bytes(ROOT, 1, &names);
    r.expect_error();
}

#[test]
fn a_refused_long_walk_leaves_newfid_unmade() {
    let d = Daemon::start(&[]);
    let mut c = d.session(Dialect::P2000);
    let names: Vec<&[u8]> = vec![b".."; 17];
    c.walk_bytes(ROOT, 1, &names).expect_error();
    c.clunk(1).assert_error(UNKNOWN_FID);
}

#[test]
fn a_missing_first_name_is_an_error_with_the_enoent_text() {
    let d = Daemon::start(&[]);
    let mut c = d.session(Dialect::P2000);
    c.walk(ROOT, 1, &["nosuch"]).assert_error("file does not exist");
}

#[test]
fn a_missing_first_name_leaves_newfid_unmade() {
    let d = Daemon::start(&[]);
    let mut c = d.session(Dialect::P2000);
    c.walk(ROOT, 1, &["nosuch"]).expect_error();
    c.clunk(1).assert_error(UNKNOWN_FID);
}

#[test]
fn walk_past_a_missing_name_returns_the_qids_so_far() {
    let d = Daemon::start(&[]);
    let mut c = d.session(Dialect::P2000);
    let root_qid = c.stat_ok(ROOT).qid;
    let r = c.walk(ROOT, 1, &["..", "nosuch", "README"]);
    assert_eq!(r.qids(), vec![root_qid]);
}

#[test]
fn walk_past_a_missing_name_leaves_newfid_unmade() {
    let d = Daemon::start(&[]);
    let mut c = d.session(Dialect::P2000);
    c.walk(ROOT, 1, &["..", "nosuch"]).qids();
    c.clunk(1).assert_error(UNKNOWN_FID);
}

#[test]
fn walk_past_a_missing_name_leaves_fid_where_it_was() {
    let d = Daemon::start(&[]);
    let mut c = d.session(Dialect::P2000);
    c.walk_ok(ROOT, 1, &[]);
    let r = c.walk(1, 1, &["..", "nosuch"]);
    assert_eq!(r.qids().len(), 1);
    assert_eq!(c.stat_ok(1).name, c.stat_ok(ROOT).name);
    c.walk_ok(1, 2, &["pid"]);
}

#[test]
fn walk_through_a_file_stops_at_the_file() {
    let d = Daemon::start(&[]);
    let mut c = d.session(Dialect::P2000);
    let readme = c.walk_ok(ROOT, 9, &["README"])[0];
    let r = c.walk(ROOT, 1, &["README", "x"]);
    assert_eq!(r.qids(), vec![readme]);
    c.clunk(1).assert_error(UNKNOWN_FID);
}

#[test]
fn newfid_in_use_is_refused_and_nothing_changes() {
    let d = Daemon::start(&[]);
    let mut c = d.session(Dialect::P2000);
    c.walk_ok(ROOT, 1, &["README"]);
    c.walk(ROOT, 1, &["pid"]).assert_error("Bad file descriptor");
    assert_eq!(c.stat_ok(1).name, "README");
}

#[test]
fn walking_names_from_a_file_is_refused_with_the_enotdir_text() {
    let d = Daemon::start(&[]);
    let mut c = d.session(Dialect::P2000);
    c.walk_ok(ROOT, 1, &["README"]);
    c.walk(1, 2, &["x"]).assert_error("not a directory");
    c.clunk(2).assert_error(UNKNOWN_FID);
}

#[test]
fn walking_no_names_from_a_file_clones_it() {
    let d = Daemon::start(&[]);
    let mut c = d.session(Dialect::P2000);
    c.walk_ok(ROOT, 1, &["pid"]);
    c.walk_ok(1, 2, &[]);
    assert_eq!(c.stat_ok(2).name, "pid");
}

#[test]
fn walking_from_an_open_fid_to_a_new_fid_is_allowed() {
    let d = Daemon::start(&[]);
    let mut c = d.session(Dialect::P2000);
    c.open_path("/", 1);
    c.walk_ok(1, 2, &["README"]);
    c.open_ok(2, OREAD);
}

#[test]
fn cloning_an_open_fid_gives_an_unopened_fid() {
    let d = Daemon::start(&[]);
    let mut c = d.session(Dialect::P2000);
    c.open_path("/pid", 1);
    c.walk_ok(1, 2, &[]);
    c.read(2, 0, 100).assert_error("Bad file descriptor");
    c.open_ok(2, OREAD);
}

#[test]
fn walking_an_open_fid_onto_itself_is_refused() {
    let d = Daemon::start(&[]);
    let mut c = d.session(Dialect::P2000);
    c.open_path("/", 1);
    c.walk(1, 1, &["README"]).expect_error();
    // Still the open directory.
    assert!(!c.read_ok(1, 0, 4096).is_empty());
}

#[test]
fn walking_from_an_unknown_fid_is_refused() {
    let d = Daemon::start(&[]);
    let mut c = d.session(Dialect::P2000);
    c.walk(42, 43, &["README"]).assert_error(UNKNOWN_FID);
}

#[test]
fn an_empty_name_is_refused() {
    let d = Daemon::start(&[]);
    let mut c = d.session(Dialect::P2000);
    c.walk_bytes(ROOT, 1, &[b""]).assert_error("Invalid argument");
}

#[test]
fn dot_is_refused() {
    let d = Daemon::start(&[]);
    let mut c = d.session(Dialect::P2000);
    c.walk_bytes(ROOT, 1, &[b"."]).assert_error("Invalid argument");
}

#[test]
fn a_name_holding_a_slash_is_refused() {
    let d = Daemon::start(&[]);
    let mut c = d.session(Dialect::P2000);
    c.walk_bytes(ROOT, 1, &[b"/"]).expect_error();
    c.walk_bytes(ROOT, 1, &[b"../README"]).expect_error();
    c.clunk(1).assert_error(UNKNOWN_FID);
}

#[test]
fn a_name_holding_nul_is_refused() {
    let d = Daemon::start(&[]);
    let mut c = d.session(Dialect::P2000);
    c.walk_bytes(ROOT, 1, &[b"README\0"]).expect_error();
    c.clunk(1).assert_error(UNKNOWN_FID);
}

#[test]
fn a_name_of_256_bytes_is_refused_as_too_long() {
    let d = Daemon::start(&[]);
    let mut c = d.session(Dialect::P2000);
    let name = vec![b'x'; 256];
    c.walk_bytes(ROOT, 1, &[&name]).assert_error("File name too long");
}

#[test]
fn a_name_of_255_bytes_is_looked_up() {
    let d = Daemon::start(&[]);
    let mut c = d.session(Dialect::P2000);
    let name = vec![b'x'; 255];
    c.walk_bytes(ROOT, 1, &[&name]).assert_error("file does not exist");
}

#[test]
fn a_bad_name_after_good_ones_refuses_the_whole_walk() {
    let d = Daemon::start(&[]);
    let mut c = d.session(Dialect::P2000);
    // Checked before any lookup: an Rerror, not a partial Rwalk.
    c.walk_bytes(ROOT, 1, &[b"..", b"."]).expect_error();
    c.walk_bytes(ROOT, 1, &[b"..", b""]).expect_error();
    c.walk_bytes(ROOT, 1, &[b"..", b"a/b"]).expect_error();
}

#[test]
fn dot_dot_at_the_root_stays_at_the_root() {
    let d = Daemon::start(&[]);
    let mut c = d.session(Dialect::P2000);
    let root = c.stat_ok(ROOT).qid;
    assert_eq!(c.walk_ok(ROOT, 1, &[".."]), vec![root]);
    assert_eq!(c.stat_ok(1).qid, root);
}

#[test]
fn dot_dot_past_the_root_many_times_never_leaves_the_tree() {
    let d = Daemon::start(&[]);
    let mut c = d.session(Dialect::P2000);
    let readme_qid = c.walk_ok(ROOT, 9, &["README"])[0];
    let qids = c.walk_ok(ROOT, 1, &["..", "..", "..", "README"]);
    assert_eq!(qids[3], readme_qid);
    assert_eq!(c.cat_fid(1), readme());
}

#[test]
fn dot_dot_from_a_file_is_not_walked() {
    let d = Daemon::start(&[]);
    let mut c = d.session(Dialect::P2000);
    let r = c.walk(ROOT, 1, &["README", ".."]);
    assert_eq!(r.qids().len(), 1, "walk(5): every name but the last is walked from a directory");
}

#[test]
fn each_qid_of_a_walk_is_the_qid_of_that_step() {
    let d = Daemon::start(&[]);
    let mut c = d.session(Dialect::P2000);
    let root = c.stat_ok(ROOT).qid;
    let qids = c.walk_ok(ROOT, 1, &["..", "pid"]);
    assert_eq!(qids[0], root);
    assert_eq!(qids[1], c.stat_ok(1).qid);
    assert_eq!(qids[1].ty, QTFILE);
}

#[test]
fn names_are_case_sensitive() {
    let d = Daemon::start(&[]);
    let mut c = d.session(Dialect::P2000);
    c.walk(ROOT, 1, &["readme"]).assert_error("file does not exist");
}
