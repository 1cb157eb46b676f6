//! Lazy and live (issue 3; CONFORMANCE 27): the tree is the disk as it is
//! at each request. An append shows on the next request, a new directory in
//! the next listing, a deleted file answers not-found; a fid opened before
//! a change keeps the file it opened.
//!
//! Each change is made by the test before it sends the next request, so no
//! poll is needed: the daemon holds no cache to go stale.

mod common;

use std::fs::{self, OpenOptions};
use std::io::Write;

use common::*;

const FIRST: &[u8] = b"{\"type\":\"user\",\"n\":1}\n";
const MORE: &[u8] = b"{\"type\":\"assistant\",\"n\":2}\n";
const PATH: &str = "/claude/projects/-home-glenda-src/s.jsonl";
const REL: &str = ".claude/projects/-home-glenda-src/s.jsonl";

fn append(s: &Scratch, rel: &str, data: &[u8]) {
    OpenOptions::new().append(true).open(s.home.join(rel)).unwrap().write_all(data).unwrap();
}

/// A stat of `path` through a fresh walk (fid 90, clunked after).
fn fresh_stat(c: &mut Conn, path: &str) -> Entry {
    c.walk_path(path, 90).qids();
    let st = c.stat_ok(90);
    c.clunk_ok(90);
    st
}

#[test]
fn an_append_is_read_through_the_open_fid_at_the_next_offset_without_reopening() {
    let s = Scratch::new();
    s.home_file(REL, FIRST);
    let d = Daemon::start_in(&s, &[]);
    let mut c = d.session(Dialect::P2000);
    c.open_path(PATH, 1);
    assert_eq!(c.read_all(1), FIRST);
    append(&s, REL, MORE);
    assert_eq!(c.read_ok(1, FIRST.len() as u64, 4096), MORE);
    assert_eq!(c.read_all(1), [FIRST, MORE].concat());
}

#[test]
fn an_append_shows_its_new_size_on_a_fresh_stat_and_in_the_next_listing() {
    let s = Scratch::new();
    s.home_file(REL, FIRST);
    let d = Daemon::start_in(&s, &[]);
    let mut c = d.session(Dialect::P2000);
    assert_eq!(fresh_stat(&mut c, PATH).length, FIRST.len() as u64);
    c.walk_path(PATH, 1).qids();
    append(&s, REL, MORE);
    let grown = (FIRST.len() + MORE.len()) as u64;
    assert_eq!(fresh_stat(&mut c, PATH).length, grown);
    assert_eq!(c.stat_ok(1).length, grown, "a fid walked before the append stats the file as it is now");
    let listed = c.list("/claude/projects/-home-glenda-src", 2, 4096);
    assert_eq!(listed[0].length, grown);
}

#[test]
fn the_qid_version_changes_on_append_and_the_path_does_not() {
    let s = Scratch::new();
    s.home_file(REL, FIRST);
    let d = Daemon::start_in(&s, &[]);
    let mut c = d.session(Dialect::P2000);
    let before = fresh_stat(&mut c, PATH).qid;
    append(&s, REL, b"x");
    let after = fresh_stat(&mut c, PATH).qid;
    assert_ne!(before.version, after.version, "one byte appended in the same second must move qid.vers");
    assert_eq!((before.path, before.ty), (after.path, after.ty));
    let walked = *c.walk_path(PATH, 1).qids().last().unwrap();
    assert_eq!(walked, after, "walk reports the new version too");
}

#[test]
fn the_qid_version_is_mtime_xor_size_shifted() {
    let s = Scratch::new();
    let disk = s.home_file(REL, FIRST);
    let d = Daemon::start_in(&s, &[]);
    let mut c = d.session(Dialect::P2000);
    let st = fresh_stat(&mut c, PATH);
    let m = fs::metadata(&disk).unwrap();
    let expected = ((std::os::unix::fs::MetadataExt::mtime(&m) as u64) ^ (m.len() << 8)) as u32;
    assert_eq!(st.qid.version, expected);
    assert_eq!(st.mtime as i64, std::os::unix::fs::MetadataExt::mtime(&m));
}

#[test]
fn a_new_directory_is_listed_on_the_next_open_of_its_parent() {
    let s = Scratch::new();
    s.home_file(".claude/projects/-home-glenda-a/s.jsonl", FIRST);
    let d = Daemon::start_in(&s, &[]);
    let mut c = d.session(Dialect::P2000);
    assert_eq!(names(&c.list("/claude/projects", 1, 4096)), ["-home-glenda-a"]);
    s.home_file(".claude/projects/-home-glenda-b/t.jsonl", MORE);
    assert_eq!(names(&c.list("/claude/projects", 1, 4096)), ["-home-glenda-a", "-home-glenda-b"]);
    assert_eq!(c.cat("/claude/projects/-home-glenda-b/t.jsonl", 2), MORE);
}

#[test]
fn a_listing_is_a_snapshot_taken_at_open() {
    let s = Scratch::new();
    s.home_file(".hermes/logs/a.log", b"a");
    let d = Daemon::start_in(&s, &[]);
    let mut c = d.session(Dialect::P2000);
    c.open_path("/hermes/logs", 1);
    s.home_file(".hermes/logs/b.log", b"b");
    let data = c.read_ok(1, 0, 4096);
    let more = c.read_ok(1, data.len() as u64, 4096);
    assert!(more.is_empty());
    assert_eq!(
        names(&entries_of(&data, Dialect::P2000)),
        ["a.log"],
        "an open listing does not change under its reader"
    );
    assert_eq!(names(&c.list("/hermes/logs", 2, 4096)), ["a.log", "b.log"]);
}

#[test]
fn a_deleted_file_is_not_found_by_walk_stat_or_open() {
    let s = Scratch::new();
    s.home_file(REL, FIRST);
    s.home_file(".claude/projects/-home-glenda-src/other.jsonl", MORE);
    let d = Daemon::start_in(&s, &[]);
    let mut c = d.session(Dialect::P2000);
    c.walk_path(PATH, 1).qids();
    fs::remove_file(s.home.join(REL)).unwrap();
    assert_eq!(c.walk_path(PATH, 2).qids().len(), 3, "the walk stops at the file's directory");
    c.stat(1).assert_error("file does not exist");
    c.open(1, OREAD).assert_error("file does not exist");
    assert_eq!(names(&c.list("/claude/projects/-home-glenda-src", 3, 4096)), ["other.jsonl"]);
}

#[test]
fn a_deleted_directory_is_not_found_and_not_listed() {
    let s = Scratch::new();
    s.home_file(".claude/projects/-home-glenda-a/s.jsonl", FIRST);
    s.home_file(".claude/projects/-home-glenda-b/s.jsonl", FIRST);
    let d = Daemon::start_in(&s, &[]);
    let mut c = d.session(Dialect::P2000);
    c.walk_path("/claude/projects/-home-glenda-a", 1).qids();
    fs::remove_dir_all(s.home.join(".claude/projects/-home-glenda-a")).unwrap();
    c.stat(1).assert_error("file does not exist");
    c.open(1, OREAD).assert_error("file does not exist");
    c.walk(1, 2, &["s.jsonl"]).assert_error("file does not exist");
    assert_eq!(names(&c.list("/claude/projects", 3, 4096)), ["-home-glenda-b"]);
}

#[test]
fn a_file_deleted_and_created_again_is_found_again() {
    let s = Scratch::new();
    s.home_file(REL, FIRST);
    let d = Daemon::start_in(&s, &[]);
    let mut c = d.session(Dialect::P2000);
    fs::remove_file(s.home.join(REL)).unwrap();
    assert!(!c.reaches(PATH, 1));
    s.home_file(REL, MORE);
    assert_eq!(c.cat(PATH, 1), MORE);
}

#[test]
fn a_file_unlinked_with_an_open_fid_stays_readable() {
    let s = Scratch::new();
    s.home_file(REL, FIRST);
    let d = Daemon::start_in(&s, &[]);
    let mut c = d.session(Dialect::P2000);
    c.open_path(PATH, 1);
    fs::remove_file(s.home.join(REL)).unwrap();
    assert_eq!(c.read_all(1), FIRST);
    assert!(!c.reaches(PATH, 2), "while a fresh walk finds nothing");
}

#[test]
fn a_file_replaced_by_rename_while_open_reads_only_the_file_that_was_opened() {
    let s = Scratch::new();
    s.home_file(REL, FIRST);
    let d = Daemon::start_in(&s, &[]);
    let mut c = d.session(Dialect::P2000);
    c.open_path(PATH, 1);
    let replacement = s.home_file(".claude/projects/-home-glenda-src/.s.jsonl.tmp", b"an entirely different file\n");
    fs::rename(&replacement, s.home.join(REL)).unwrap();
    assert_eq!(c.read_all(1), FIRST, "the open fid keeps its file");
    assert_eq!(c.cat(PATH, 2), b"an entirely different file\n", "a fresh open finds the new one");
}

#[test]
fn a_file_truncated_while_open_reads_what_is_left_and_never_old_bytes() {
    let s = Scratch::new();
    let long: Vec<u8> = (0..5000u32).flat_map(|i| format!("{i:05}\n").into_bytes()).collect();
    let disk = s.home_file(REL, &long);
    let d = Daemon::start_in(&s, &[]);
    let mut c = d.session(Dialect::P2000);
    c.open_path(PATH, 1);
    assert_eq!(c.read_ok(1, 0, 12), &long[..12]);
    OpenOptions::new().write(true).open(&disk).unwrap().set_len(6).unwrap();
    assert!(c.read_ok(1, 12, 4096).is_empty(), "past the new end: nothing");
    assert_eq!(c.read_all(1), &long[..6]);
    assert_eq!(fresh_stat(&mut c, PATH).length, 6);
}

#[test]
fn two_connections_reading_one_file_both_see_an_append() {
    let s = Scratch::new();
    s.home_file(REL, FIRST);
    let d = Daemon::start_in(&s, &[]);
    let mut a = d.session(Dialect::P2000);
    let mut b = d.session(Dialect::P2000u);
    a.open_path(PATH, 1);
    b.open_path(PATH, 1);
    append(&s, REL, MORE);
    let both = [FIRST, MORE].concat();
    assert_eq!(a.read_all(1), both);
    assert_eq!(b.read_all(1), both);
}
