//! Out of file descriptors, the daemon says so (defect 10 of issue "The
//! server core"): a walk to a file that exists, its stat, its open, and
//! the open of its directory each answer `Too many open files` (EMFILE,
//! or ENFILE's text), the errno beside it in 9P2000.u — never `file does
//! not exist`, which would tell a client (and a kernel's dentry cache) that
//! the file is gone. Once descriptors are back, the same requests succeed.

mod active_fakes;
mod common;

use common::*;

/// The daemon's fd limit, soft and hard: a few for itself, the rest for
/// the files the test holds open.
const NOFILE: u64 = 64;
/// The first fid the exhausting opens use.
const FILL_FID: u32 = 1000;
/// What the mirrored files hold.
const A: &[u8] = b"{\"type\":\"user\",\"message\":\"a\"}\n";
const B: &[u8] = b"{\"type\":\"user\",\"message\":\"b\"}\n";
const DIR: &str = "/claude/projects/-src-app";
const FILE: &str = "/claude/projects/-src-app/a.jsonl";

/// Fids each connection walks before the descriptors run out: the file
/// (to stat and open), its directory (to open), and the file again (to
/// clone for the exhausting opens).
const FILE_FID: u32 = 10;
const DIR_FID: u32 = 11;
const WALK_FID: u32 = 12;

fn assert_out_of_fds(r: &Reply, what: &str, dialect: Dialect) {
    let (text, errno) = r.error().unwrap_or_else(|| panic!("{what} out of fds ({dialect:?}) succeeded: {r:?}"));
    assert!(
        is_out_of_fds(&text, errno, dialect),
        "{what} out of fds ({dialect:?}) answered {text:?} (errno {errno}), not EMFILE's or ENFILE's"
    );
}

/// Walk the fids every check uses, while descriptors are there.
fn prepare(c: &mut Conn) {
    walk_to(c, FILE, FILE_FID);
    walk_to(c, DIR, DIR_FID);
}

fn walk_to(c: &mut Conn, path: &str, fid: u32) {
    let r = c.walk_path(path, fid);
    assert_eq!(r.qids().len(), tree_names(path).len(), "walk to {path}: {r:?}");
}

/// Every request that needs a descriptor, out of them.
fn check_refused(c: &mut Conn) {
    let d = c.dialect;
    assert_out_of_fds(&c.walk_path(FILE, 20), &format!("a walk to {FILE}"), d);
    assert_out_of_fds(&c.walk(DIR_FID, 20, &["a.jsonl"]), &format!("a walk from {DIR} to a.jsonl"), d);
    assert_out_of_fds(&c.stat(FILE_FID), &format!("a stat of {FILE}"), d);
    assert_out_of_fds(&c.open(FILE_FID, OREAD), &format!("an open of {FILE}"), d);
    assert_out_of_fds(&c.open(DIR_FID, OREAD), &format!("an open of {DIR}"), d);
}

/// The same requests, with descriptors back.
fn check_served(c: &mut Conn) {
    walk_to(c, FILE, 20);
    c.clunk_ok(20);
    c.walk_ok(DIR_FID, 20, &["a.jsonl"]);
    c.clunk_ok(20);
    assert_eq!(c.stat_ok(FILE_FID).length, A.len() as u64);
    assert_eq!(c.cat_fid(FILE_FID), A);
    c.open_ok(DIR_FID, OREAD);
    let listed = entries_of(&c.read_ok(DIR_FID, 0, c.msize - IOHDRSZ), c.dialect);
    assert_eq!(names(&listed), ["a.jsonl", "b.jsonl"]);
}

#[test]
fn out_of_fds_an_existing_file_answers_too_many_open_files_never_not_found() {
    let s = Scratch::new();
    s.home_file(".claude/projects/-src-app/a.jsonl", A);
    s.home_file(".claude/projects/-src-app/b.jsonl", B);
    let d = Daemon::start_in_limited(&s, &["--proc", &s.empty_proc()], &[], Some(NOFILE));
    let mut conns = [d.session(Dialect::P2000), d.session(Dialect::P2000u)];
    for c in &mut conns {
        prepare(c);
    }

    // Every descriptor taken by files open on fids.
    let c = &mut conns[1];
    walk_to(c, FILE, WALK_FID);
    let (files, refused) = c.open_until_refused(WALK_FID, FILL_FID, NOFILE as u32);
    assert_out_of_fds(&refused, &format!("open number {} of {FILE}", files.len() + 1), Dialect::P2000u);
    let fillers = d.take_every_fd(NOFILE);

    for c in &mut conns {
        check_refused(c);
    }

    conns[1].clunk_all(&files);
    drop(fillers);
    for c in &mut conns {
        check_served(c);
    }
}

/// A daemon on a fixture /proc holding one claude agent (pid 100), with
/// its fd limit lowered.
fn agent_daemon() -> (active_fakes::Fixture, Daemon) {
    let f = active_fakes::Fixture::new();
    f.claude(100, "5f1c7a52-3b4e-4d61-9a0b-2c8e7f6d1a90");
    f.scratch.home_file(".claude/projects/-src-app/a.jsonl", A);
    let d = Daemon::start_in_limited(&f.scratch, &["--proc", arg(&f.proc.dir)], &[], Some(NOFILE));
    (f, d)
}

#[test]
fn out_of_fds_a_scan_answers_too_many_open_files_and_never_lists_the_agents_as_gone() {
    let (_f, d) = agent_daemon();
    let mut c = d.session(Dialect::P2000u);
    assert_eq!(names(&c.list("/active/claude", 1, 8192)), ["100"], "the agent lists while fds are there");
    walk_to(&mut c, FILE, WALK_FID);
    let (files, _) = c.open_until_refused(WALK_FID, FILL_FID, NOFILE as u32);
    let fillers = d.take_every_fd(NOFILE);

    // A listing rescans first: a scan that could not read /proc is not an
    // empty machine.
    walk_to(&mut c, "/active/claude", 2);
    assert_out_of_fds(&c.open(2, OREAD), "a listing of /active/claude", Dialect::P2000u);
    assert_out_of_fds(&c.walk_path("/active/claude/100/session", 3), "a walk to an agent's session", Dialect::P2000u);

    c.clunk_all(&files);
    drop(fillers);
    assert_eq!(names(&c.list("/active/claude", 4, 8192)), ["100"], "the agent lists again, never dropped");
    assert_eq!(c.walk_path("/active/claude/100/session", 5).qids().len(), 4);
}

#[test]
fn out_of_fds_an_agents_field_answers_too_many_open_files_never_not_found() {
    let (_f, d) = agent_daemon();
    let mut c = d.session(Dialect::P2000u);
    walk_to(&mut c, "/active/claude/100/session", 2);
    walk_to(&mut c, FILE, WALK_FID);
    let (files, _) = c.open_until_refused(WALK_FID, FILL_FID, NOFILE as u32);
    let fillers = d.take_every_fd(NOFILE);

    assert_out_of_fds(&c.stat(2), "a stat of an agent's session", Dialect::P2000u);
    assert_out_of_fds(&c.open(2, OREAD), "an open of an agent's session", Dialect::P2000u);

    c.clunk_all(&files);
    drop(fillers);
    assert_eq!(c.cat_fid(2), b"5f1c7a52-3b4e-4d61-9a0b-2c8e7f6d1a90\n");
}
