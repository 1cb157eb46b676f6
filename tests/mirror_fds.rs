//! The daemon's file descriptors stay bounded whatever clients do (issue 3,
//! "Opening"): walks, stats and listings hold none once answered; an open
//! fid holds one until its clunk or its connection's end; past the cap an
//! open is refused loudly and everyone else goes on being served.
//!
//! Closes go through the ring, so "back to where it was" is polled against
//! a deadline, never slept for.

mod common;

use std::time::Duration;

use common::*;

/// How long closes submitted through the ring may take to land.
const SETTLE: Duration = Duration::from_secs(5);
/// More opens than any sane cap allows: the cap must show before this.
const OPENS_TRIED_MAX: u32 = 20_000;

fn world() -> std::sync::Arc<Scratch> {
    let s = Scratch::new();
    for i in 0..20 {
        s.home_file(&format!(".claude/projects/-home-glenda/{i:02}.jsonl"), format!("{i}\n").as_bytes());
    }
    s.home_file(".hermes/SOUL.md", b"soul\n");
    s
}

/// Poll until the daemon holds `fds` descriptors; panics with the count
/// it holds instead.
fn settles_to(d: &Daemon, fds: usize) {
    if poll(SETTLE, || (d.fd_count() == fds).then_some(())).is_none() {
        panic!("the daemon holds {} fds, expected {fds} back", d.fd_count());
    }
}

#[test]
fn walks_stats_and_listings_leave_no_descriptor_behind() {
    let s = world();
    let d = Daemon::start_in(&s, &[]);
    let mut c = d.session(Dialect::P2000);
    let before = d.fd_count();
    for round in 0..20 {
        let entries = c.list("/claude/projects/-home-glenda", 1, 4096);
        assert_eq!(entries.len(), 20);
        for e in &entries {
            c.walk_path(&format!("/claude/projects/-home-glenda/{}", e.name), 2).qids();
            c.stat_ok(2);
            c.clunk_ok(2);
        }
        assert!(!c.reaches("/claude/projects/-home-glenda/missing", 3), "round {round}");
    }
    settles_to(&d, before);
}

#[test]
fn open_fids_hold_at_most_one_descriptor_each_until_clunked() {
    let s = world();
    // No window: the harness base a look keeps for it is counted apart
    // (`a_kept_base_is_closed_once_its_window_has_passed`).
    let d = Daemon::start_in(&s, &["--listing-window", "0"]);
    let mut c = d.session(Dialect::P2000);
    let before = d.fd_count();
    for fid in 1..=100 {
        c.open_path(&format!("/claude/projects/-home-glenda/{:02}.jsonl", fid % 20), fid);
    }
    let held = d.fd_count();
    assert!(held > before && held <= before + 100, "100 open fids hold {} fds", held - before);
    for fid in 1..=100 {
        c.clunk_ok(fid);
    }
    settles_to(&d, before);
}

/// A harness base opened for a look is kept for `--listing-window` (the
/// looks that follow open beneath it), and closed once the window has
/// passed with no look meanwhile: one descriptor a base, none while idle.
#[test]
fn a_kept_base_is_closed_once_its_window_has_passed() {
    let s = world();
    let d = Daemon::start_in(&s, &["--listing-window", "300"]);
    let mut c = d.session(Dialect::P2000);
    let before = d.fd_count();
    for i in 0..20 {
        c.walk_path(&format!("/claude/projects/-home-glenda/{i:02}.jsonl"), 2).qids();
        c.stat_ok(2);
        c.clunk_ok(2);
    }
    assert!(c.reaches("/hermes/SOUL.md", 2));
    let kept = d.fd_count() - before;
    assert!((1..=2).contains(&kept), "claude's and hermes' bases kept, {kept} fds held");
    settles_to(&d, before);
}

#[test]
fn a_connection_that_ends_with_open_fids_gives_their_descriptors_back() {
    let s = world();
    let d = Daemon::start_in(&s, &[]);
    let mut keep = d.session(Dialect::P2000);
    let before = d.fd_count();
    let mut c = d.session(Dialect::P2000);
    for fid in 1..=50 {
        c.open_path("/hermes/SOUL.md", fid);
    }
    c.open_path("/claude/projects/-home-glenda", 51);
    drop(c);
    settles_to(&d, before);
    assert_eq!(keep.cat("/hermes/SOUL.md", 1), b"soul\n");
}

#[test]
fn past_the_open_files_cap_an_open_is_refused_and_everyone_else_is_served() {
    let s = world();
    let mut d = Daemon::start_in(&s, &[]);
    let mut other = d.session(Dialect::P2000);
    other.open_path("/hermes/SOUL.md", 1);
    let mut c = d.session(Dialect::P2000u);
    let mut refused = None;
    for fid in 1..OPENS_TRIED_MAX {
        c.walk_path("/claude/projects/-home-glenda/00.jsonl", fid).qids();
        let r = c.open(fid, OREAD);
        if let Some(e) = r.error() {
            refused = Some((fid, e));
            break;
        }
    }
    let (fid, (text, errno)) = refused.expect("no cap on open files: the daemon's descriptors are unbounded");
    assert_eq!((text.as_str(), errno), ("Too many open files in system", libc::ENFILE as u32));
    assert!(d.is_running());
    assert_eq!(other.read_all(1), b"soul\n", "an fid opened before the cap still reads");
    assert!(other.reaches("/hermes/SOUL.md", 2), "walks still answer past the cap");
    c.clunk_ok(1);
    c.open_ok(fid, OREAD);
    assert_eq!(c.read_all(fid), b"0\n", "a clunk makes room for one more");
}

/// Directory snapshots held by open fids are bounded too
/// (`--max-listed-entries`): a client opening fid after fid on a large
/// directory is refused loudly, not allowed to grow the daemon without end.
#[test]
fn past_the_listed_entries_cap_a_directory_open_is_refused_until_one_is_clunked() {
    let s = world();
    let d = Daemon::start_in(&s, &["--max-listed-entries", "45"]);
    let mut c = d.session(Dialect::P2000u);
    let dir = "/claude/projects/-home-glenda";
    for fid in 1..=2 {
        c.walk_path(dir, fid).qids();
        c.open_ok(fid, OREAD);
    }
    c.walk_path(dir, 3).qids();
    let (text, errno) = c.open(3, OREAD).error().expect("a third 20-entry listing passes the cap of 45");
    assert_eq!((text.as_str(), errno), ("Too many open files in system", libc::ENFILE as u32));
    c.walk_path("/hermes/SOUL.md", 4).qids();
    c.open_ok(4, OREAD);
    assert_eq!(c.read_all(4), b"soul\n", "files still open past the listing cap");
    c.clunk_ok(1);
    c.open_ok(3, OREAD);
    let listing = c.read_ok(3, 0, c.msize - proto::IOHDRSZ);
    assert!(!listing.is_empty(), "a clunk frees its listing's entries, and the refused open now lists");
}
