//! A directory's listing answers the walks into it that follow on its
//! connection, and a walk's look at a directory the walks to it, for
//! `--listing-window` (1 s by default): a walk of one name answered so, and
//! the lookup's Tgetattr after it, cost no look. What the listing left out
//! (excluded, a symlink, hard-linked, new) is looked at as always, so its
//! refusals hold inside the window; the Tgetattr of a `stat(2)` and every
//! open still look afresh, so a file that gained a link or a directory that
//! became a symlink is refused there; after the window a walk looks again.

mod common;

use std::time::Duration;

use common::*;
use nineagents::proto::*;

const DIR: &str = "/claude/projects/-src-app";
const A: &[u8] = b"{\"type\":\"user\",\"message\":\"hello\"}\n";
/// A window no test outlasts, for the tests inside it; a short one, and
/// how long the test after it waits.
const LONG_WINDOW: &str = "600000";
const SHORT_WINDOW: &str = "50";
const PAST_SHORT_WINDOW: Duration = Duration::from_millis(300);
const DIR_FID: u32 = 1;
const OPEN_FID: u32 = 2;
const FID: u32 = 3;

fn world(window_ms: &str) -> (std::sync::Arc<Scratch>, Daemon) {
    let s = Scratch::new();
    s.home_file(".claude/projects/-src-app/a.jsonl", A);
    s.home_file(".claude/projects/-src-app/b.jsonl", A);
    s.home_file(".claude/projects/-src-app/my-token.txt", A);
    let outside = s.outside_file("elsewhere.txt", A);
    s.home_symlink(".claude/projects/-src-app/link.jsonl", &outside);
    let linked = s.home_file(".claude/projects/-src-app/linked.jsonl", A);
    std::fs::hard_link(linked, s.root.join("linked-again.jsonl")).unwrap();
    let d = Daemon::start_in(&s, &["--proc", &s.empty_proc(), "--listing-window", window_ms]);
    (s, d)
}

/// List `DIR` as Linux does (walk, clone, Tlopen, Treaddir until empty),
/// keeping the directory's fid for the walks that follow.
fn list(c: &mut Conn) -> Vec<String> {
    let names = list_open(c);
    c.clunk_ok(OPEN_FID);
    names
}

/// `list`, the opened fid left open, as `ls -lR` leaves it while it stats
/// each name.
fn list_open(c: &mut Conn) -> Vec<String> {
    assert!(matches!(c.walk_path(DIR, DIR_FID).msg(), Rmsg::Walk { .. }));
    c.walk_ok(DIR_FID, OPEN_FID, &[]);
    assert!(matches!(
        c.rpc(&Tmsg::Lopen { fid: OPEN_FID, flags: DOTL_RDONLY | DOTL_DIRECTORY }).msg(),
        Rmsg::Lopen { .. }
    ));
    let (mut names, mut offset) = (Vec::new(), 0);
    loop {
        let r = c.rpc(&Tmsg::Readdir { fid: OPEN_FID, offset, count: 8192 });
        let Rmsg::Readdir { data } = r.msg() else { panic!("Treaddir: {:?}", r.msg()) };
        if data.is_empty() {
            return names;
        }
        for e in decode_dirents(data) {
            let e = e.expect("whole entries");
            names.push(String::from_utf8_lossy(e.name).into_owned());
            offset = e.offset;
        }
    }
}

/// The errno of an Rlerror.
fn lerror(r: &Reply) -> u32 {
    match r.msg() {
        Rmsg::Lerror { ecode } => ecode,
        other => panic!("expected Rlerror, got {other:?}"),
    }
}

fn getattr(c: &mut Conn, fid: u32) -> Result<Getattr, u32> {
    match c.rpc(&Tmsg::Getattr { fid, mask: GETATTR_ALL }).msg() {
        Rmsg::Getattr(a) => Ok(a),
        Rmsg::Lerror { ecode } => Err(ecode),
        other => panic!("Tgetattr: {other:?}"),
    }
}

#[test]
fn inside_the_window_a_walk_still_refuses_every_name_the_listing_left_out() {
    let (s, d) = world(LONG_WINDOW);
    let mut c = d.session(Dialect::L);
    let mut names = list(&mut c);
    names.sort();
    assert_eq!(names, ["a.jsonl", "b.jsonl"], "the listing applied the rules");
    for name in ["my-token.txt", "link.jsonl", "linked.jsonl", "missing.jsonl"] {
        let r = c.walk(DIR_FID, FID, &[name]);
        assert_eq!(lerror(&r), libc::ENOENT as u32, "{name}: refused as without a listing");
    }
    let qids = c.walk_ok(DIR_FID, FID, &["a.jsonl"]);
    assert_eq!(qids.len(), 1);
    assert!(getattr(&mut c, FID).is_ok());
    c.clunk_ok(FID);
    // The trade inside the window: a name removed since the listing is
    // still walked to (and its stat then finds it gone).
    std::fs::remove_file(s.home.join(".claude/projects/-src-app/b.jsonl")).unwrap();
    c.walk_ok(DIR_FID, FID, &["b.jsonl"]);
    let _lookup = getattr(&mut c, FID);
    assert_eq!(getattr(&mut c, FID).err(), Some(libc::ENOENT as u32), "the stat of a removed file");
}

#[test]
fn inside_the_window_the_stat_and_the_open_still_look_afresh() {
    let (s, d) = world(LONG_WINDOW);
    let mut c = d.session(Dialect::L);
    list(&mut c);
    let path = s.home.join(".claude/projects/-src-app/a.jsonl");
    std::fs::write(&path, [A, A].concat()).unwrap();
    c.walk_ok(DIR_FID, FID, &["a.jsonl"]);
    let _lookup = getattr(&mut c, FID);
    assert_eq!(getattr(&mut c, FID).map(|a| a.size), Ok(2 * A.len() as u64), "the stat's Tgetattr looked");
    c.clunk_ok(FID);
    // A file that gained a name since the listing: walked to from the
    // listing, but its stat and its open refuse it.
    std::fs::hard_link(s.home.join(".claude/projects/-src-app/b.jsonl"), s.root.join("b-again.jsonl")).unwrap();
    c.walk_ok(DIR_FID, FID, &["b.jsonl"]);
    let _lookup = getattr(&mut c, FID);
    assert_eq!(getattr(&mut c, FID).err(), Some(libc::ENOENT as u32), "a hard-linked file's stat");
    let r = c.rpc(&Tmsg::Lopen { fid: FID, flags: DOTL_RDONLY });
    assert_eq!(lerror(&r), libc::ENOENT as u32, "a hard-linked file's open");
}

/// The stat of a name walked from the listing, while the listed directory
/// is still open, is a statx of that name beneath the directory the
/// listing read: the name afresh, the path to it as the listing found it
/// (the walk's trade). An open resolves the whole path again, so a
/// directory that became a symlink still refuses what is below it; and
/// once the listed directory's fid is clunked, its stat does too.
#[test]
fn inside_the_window_a_listed_names_stat_is_looked_at_beneath_the_listed_directory() {
    let (s, d) = world(LONG_WINDOW);
    let mut c = d.session(Dialect::L);
    list_open(&mut c);
    let dir = s.home.join(".claude/projects/-src-app");
    let moved = s.home.join(".claude/projects/-src-app-moved");
    std::fs::rename(&dir, &moved).unwrap();
    std::os::unix::fs::symlink(&moved, &dir).unwrap();
    std::fs::write(moved.join("a.jsonl"), [A, A, A].concat()).unwrap();
    c.walk_ok(DIR_FID, FID, &["a.jsonl"]);
    let _lookup = getattr(&mut c, FID);
    assert_eq!(getattr(&mut c, FID).map(|a| a.size), Ok(3 * A.len() as u64), "the stat looked at the name now");
    let r = c.rpc(&Tmsg::Lopen { fid: FID, flags: DOTL_RDONLY });
    assert_eq!(lerror(&r), libc::ENOENT as u32, "the open refuses what is below a symlink");
    c.clunk_ok(OPEN_FID);
    let _lookup = getattr(&mut c, FID);
    assert_eq!(getattr(&mut c, FID).err(), Some(libc::ENOENT as u32), "the listed directory let go: a look");
}

#[test]
fn after_the_window_a_walk_and_its_lookup_see_the_file_as_it_is_now() {
    let (s, d) = world(SHORT_WINDOW);
    let mut c = d.session(Dialect::L);
    list(&mut c);
    std::fs::write(s.home.join(".claude/projects/-src-app/a.jsonl"), [A, A, A].concat()).unwrap();
    std::fs::remove_file(s.home.join(".claude/projects/-src-app/b.jsonl")).unwrap();
    // Waiting out the window is the point of the test, not a synchronisation.
    std::thread::sleep(PAST_SHORT_WINDOW);
    c.walk_ok(DIR_FID, FID, &["a.jsonl"]);
    assert_eq!(getattr(&mut c, FID).map(|a| a.size), Ok(3 * A.len() as u64), "the lookup's Tgetattr");
    let r = c.walk(DIR_FID, 4, &["b.jsonl"]);
    assert_eq!(lerror(&r), libc::ENOENT as u32, "a file removed since the listing is gone");
}

/// Walk `names` from the root one name a Twalk, as Linux's lookups do,
/// onto fids `first`, `first + 1`, …; the errno of the first refused.
fn walk_one_by_one(c: &mut Conn, names: &[&str], first: u32) -> Result<(), u32> {
    let mut from = ROOT;
    for (i, name) in names.iter().enumerate() {
        let r = c.walk(from, first + i as u32, &[name]);
        if let Rmsg::Lerror { ecode } = r.msg() {
            return Err(ecode);
        }
        from = first + i as u32;
    }
    Ok(())
}

fn clunk_range(c: &mut Conn, first: u32, n: usize) {
    for i in 0..n as u32 {
        c.clunk_ok(first + i);
    }
}

const PATH: [&str; 3] = ["claude", "projects", "-src-app"];

#[test]
fn inside_the_window_a_directory_that_became_a_symlink_still_refuses_what_is_below_it() {
    let (s, d) = world(LONG_WINDOW);
    let mut c = d.session(Dialect::L);
    assert_eq!(walk_one_by_one(&mut c, &PATH, 10), Ok(()));
    clunk_range(&mut c, 10, PATH.len());
    let dir = s.home.join(".claude/projects/-src-app");
    std::fs::rename(&dir, s.home.join(".claude/projects/-src-app-moved")).unwrap();
    std::os::unix::fs::symlink(s.home.join(".claude/projects/-src-app-moved"), &dir).unwrap();
    // The trade: the directory's walk is answered from its look...
    assert_eq!(walk_one_by_one(&mut c, &PATH, 10), Ok(()), "walked from the look");
    // ...and nothing below it is reached through the symlink.
    let r = c.walk(12, 20, &["a.jsonl"]);
    assert_eq!(lerror(&r), libc::ENOENT as u32, "a file below a directory that became a symlink");
    assert_eq!(getattr(&mut c, 12).err(), None, "the lookup's Tgetattr answers from the look");
    assert_eq!(getattr(&mut c, 12).err(), Some(libc::ENOENT as u32), "the stat's Tgetattr looks");
}

#[test]
fn inside_the_window_an_excluded_directory_is_still_refused() {
    let (s, d) = world(LONG_WINDOW);
    s.home_file(".claude/projects/secrets/x.jsonl", A);
    let mut c = d.session(Dialect::L);
    assert_eq!(walk_one_by_one(&mut c, &PATH, 10), Ok(()));
    assert_eq!(walk_one_by_one(&mut c, &["claude", "projects", "secrets"], 20), Err(libc::ENOENT as u32));
}

#[test]
fn after_the_window_a_removed_directory_is_not_found() {
    let (s, d) = world(SHORT_WINDOW);
    let mut c = d.session(Dialect::L);
    assert_eq!(walk_one_by_one(&mut c, &PATH, 10), Ok(()));
    clunk_range(&mut c, 10, PATH.len());
    std::fs::remove_dir_all(s.home.join(".claude/projects/-src-app")).unwrap();
    // Waiting out the window is the point of the test, not a synchronisation.
    std::thread::sleep(PAST_SHORT_WINDOW);
    assert_eq!(walk_one_by_one(&mut c, &PATH, 10), Err(libc::ENOENT as u32));
}

/// `DIR_LOOKS_KEPT` (8): past it the oldest look is let go, and its
/// directory is looked at again; the newest still answers.
#[test]
fn past_the_kept_looks_the_oldest_directory_is_looked_at_again() {
    const DIRS: usize = 9;
    let (s, d) = world(LONG_WINDOW);
    for i in 0..DIRS {
        s.home_file(&format!(".claude/projects/p{i}/x.jsonl"), A);
    }
    let mut c = d.session(Dialect::L);
    assert_eq!(walk_one_by_one(&mut c, &PATH[..2], 10), Ok(()));
    for i in 0..DIRS {
        c.walk_ok(11, 20, &[&format!("p{i}")]);
        c.clunk_ok(20);
    }
    std::fs::remove_dir_all(s.home.join(".claude/projects/p0")).unwrap();
    std::fs::remove_dir_all(s.home.join(".claude/projects/p8")).unwrap();
    assert_eq!(lerror(&c.walk(11, 20, &["p0"])), libc::ENOENT as u32, "the oldest, let go, is looked at");
    c.walk_ok(11, 20, &["p8"]);
}
