//! The swap race (CONFORMANCE 20; issue 3, "Opening"): a directory, or a
//! file, swapped for a symlink to outside the root over and over by one
//! thread while clients walk, stat, open, list and read through it in a
//! loop. Whatever the interleaving, no byte, name or size from outside the
//! root is ever served: openat2 with RESOLVE_BENEATH|RESOLVE_NO_SYMLINKS
//! refuses the symlink atomically at every open, and a read goes through
//! the fd its open made.
//!
//! The swapper alternates two kinds of swap: `renameat2(RENAME_EXCHANGE)`,
//! after which the name is the directory or the symlink and never missing,
//! and rename-aside / symlink / unlink / rename-back, which also passes
//! through "missing". The test asserts the race was live (both served reads
//! and refusals happened) so a quiet run cannot pass for a safe one.

mod common;

use std::ffi::CString;
use std::fs;
use std::io;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use common::*;

/// How long the clients read through the swapping directory.
const RACE_FOR: Duration = Duration::from_secs(3);
/// How long the file-swap variant runs.
const FILE_RACE_FOR: Duration = Duration::from_millis(1500);

/// The bytes of the real file inside the root.
const INSIDE: &[u8] = b"inside the root: a real log line\nand another\n";

/// A marker no other test uses, so finding it means this test leaked.
fn outside_marker() -> Vec<u8> {
    let nanos = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_nanos();
    let mut m = format!("OUTSIDE-THE-ROOT-{}-{nanos}:", std::process::id()).into_bytes();
    m.extend_from_slice(SECRET);
    // A size no inside file has, so a stat that followed the link shows.
    m.extend_from_slice(&[b'!'; 300]);
    m
}

fn cpath(p: &Path) -> CString {
    CString::new(p.as_os_str().as_bytes()).unwrap()
}

/// Swap the two names atomically.
fn exchange(a: &Path, b: &Path) -> io::Result<()> {
    let (a, b) = (cpath(a), cpath(b));
    // SAFETY: renameat2(2) on two NUL-terminated paths we own.
    let rc = unsafe { libc::renameat2(libc::AT_FDCWD, a.as_ptr(), libc::AT_FDCWD, b.as_ptr(), libc::RENAME_EXCHANGE) };
    if rc == 0 {
        Ok(())
    } else {
        Err(io::Error::last_os_error())
    }
}

/// A thread that swaps `victim` for a symlink to `outside` until stopped,
/// and leaves `victim` as it found it.
struct Swapper {
    stop: Arc<AtomicBool>,
    swaps: Arc<AtomicUsize>,
    handle: Option<JoinHandle<io::Result<()>>>,
}

impl Swapper {
    fn start(victim: PathBuf, outside: PathBuf, spare: PathBuf) -> Swapper {
        let stop = Arc::new(AtomicBool::new(false));
        let swaps = Arc::new(AtomicUsize::new(0));
        let link = spare.join("link");
        let aside = spare.join("aside");
        fs::create_dir_all(&spare).unwrap();
        std::os::unix::fs::symlink(&outside, &link).unwrap();
        let (stop2, swaps2) = (stop.clone(), swaps.clone());
        let handle = std::thread::spawn(move || -> io::Result<()> {
            while !stop2.load(Ordering::Relaxed) {
                exchange(&victim, &link)?;
                exchange(&victim, &link)?;
                fs::rename(&victim, &aside)?;
                std::os::unix::fs::symlink(&outside, &victim)?;
                fs::remove_file(&victim)?;
                fs::rename(&aside, &victim)?;
                swaps2.fetch_add(2, Ordering::Relaxed);
                // Let the clients run while the victim is real, so reads
                // get through too and the race stays two-sided.
                std::thread::yield_now();
            }
            Ok(())
        });
        Swapper { stop, swaps, handle: Some(handle) }
    }

    /// Stop, join, and say how many times the victim became a symlink.
    fn finish(mut self) -> usize {
        self.stop.store(true, Ordering::Relaxed);
        self.handle.take().unwrap().join().expect("the swapper panicked").expect("a swap failed");
        self.swaps.load(Ordering::Relaxed)
    }
}

impl Drop for Swapper {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(h) = self.handle.take() {
            let _ = h.join();
        }
    }
}

/// What a client loop saw.
#[derive(Debug, Default)]
struct Seen {
    served: usize,
    refused: usize,
}

/// Walk, stat, open and read `path` (a file) until `until`; every byte and
/// size served must be the inside file's.
fn read_loop(c: &mut Conn, path: &str, until: Instant, marker: &[u8]) -> Seen {
    let mut seen = Seen::default();
    while Instant::now() < until {
        let r = c.walk_path(path, 1);
        if r.is_error() || r.qids().len() != tree_names(path).len() {
            seen.refused += 1;
            continue;
        }
        let st = c.stat(1);
        if let Rmsg::Stat { stat } = st.msg() {
            assert_eq!(stat.length, INSIDE.len() as u64, "a stat of {path} reported another file's size");
        }
        if c.open(1, OREAD).is_error() {
            seen.refused += 1;
        } else {
            let data = c.read_all(1);
            assert!(!contains(&data, marker) && !contains(&data, SECRET), "{path} served bytes from outside the root");
            assert_eq!(data, INSIDE, "{path} served bytes that are not the file's");
            seen.served += 1;
        }
        c.clunk_ok(1);
    }
    seen
}

/// List `dir` until `until`; a listing may lack `app.log` (caught while it
/// was a symlink, or missing) but may hold nothing else, and never another
/// file's size.
fn list_loop(c: &mut Conn, dir: &str, until: Instant) -> Seen {
    let mut seen = Seen::default();
    let inside = ("app.log".to_string(), INSIDE.len() as u64);
    while Instant::now() < until {
        let got: Vec<(String, u64)> = match c.try_list(dir, 2, 4096) {
            Ok(entries) => entries.into_iter().map(|e| (e.name.clone(), e.length)).collect(),
            Err(_) => Vec::new(),
        };
        assert!(got.iter().all(|e| *e == inside), "{dir} listed something from outside: {got:?}");
        if got.is_empty() {
            seen.refused += 1;
        } else {
            seen.served += 1;
        }
    }
    seen
}

#[test]
fn a_directory_swapped_for_a_symlink_to_outside_in_a_loop_never_serves_a_byte_from_outside() {
    let s = Scratch::new();
    let marker = outside_marker();
    let victim = s.home_file(".hermes/logs/app.log", INSIDE).parent().unwrap().to_path_buf();
    let outside = s.outside_file("logs/app.log", &marker).parent().unwrap().to_path_buf();
    fs::write(outside.join("only-outside.txt"), &marker).unwrap();
    let d = Daemon::start_in(&s, &[]);
    let mut held = d.session(Dialect::P2000);
    held.open_path("/hermes/logs/app.log", 7);

    let swapper = Swapper::start(victim.clone(), outside, s.root.join("spare"));
    let until = Instant::now() + RACE_FOR;
    let mut lister = d.session(Dialect::P2000u);
    let listing = std::thread::spawn(move || list_loop(&mut lister, "/hermes/logs", until));
    let mut reader = d.session(Dialect::P2000);
    let reads = read_loop(&mut reader, "/hermes/logs/app.log", until, &marker);
    let lists = listing.join().expect("the listing client failed");
    let swaps = swapper.finish();

    assert_eq!(held.read_all(7), INSIDE, "a fid opened before the swaps reads the file it opened");
    assert!(victim.is_dir() && !victim.is_symlink(), "the swapper left the directory in place");
    assert_eq!(reader.cat("/hermes/logs/app.log", 1), INSIDE, "served again once the swapping stops");
    println!("swaps {swaps}, reads {reads:?}, listings {lists:?}");
    assert!(swaps > 100, "only {swaps} swaps: the race was not run");
    assert!(reads.served > 0 && reads.refused > 0, "the read race was not live: {reads:?}");
    assert!(lists.served > 0 && lists.refused > 0, "the listing race was not live: {lists:?}");
}

#[test]
fn a_file_swapped_for_a_symlink_to_outside_in_a_loop_never_serves_a_byte_from_outside() {
    let s = Scratch::new();
    let marker = outside_marker();
    let victim = s.home_file(".claude/projects/-home-glenda/app.log", INSIDE);
    let outside = s.outside_file("app.log", &marker);
    let d = Daemon::start_in(&s, &[]);

    let swapper = Swapper::start(victim.clone(), outside, s.root.join("spare"));
    let until = Instant::now() + FILE_RACE_FOR;
    let mut lister = d.session(Dialect::P2000);
    let listing = std::thread::spawn(move || list_loop(&mut lister, "/claude/projects/-home-glenda", until));
    let mut reader = d.session(Dialect::P2000);
    let reads = read_loop(&mut reader, "/claude/projects/-home-glenda/app.log", until, &marker);
    let lists = listing.join().expect("the listing client failed");
    let swaps = swapper.finish();

    println!("swaps {swaps}, reads {reads:?}, listings {lists:?}");
    assert!(victim.is_file() && !victim.is_symlink());
    assert!(swaps > 100, "only {swaps} swaps: the race was not run");
    assert!(reads.served > 0 && reads.refused > 0, "the read race was not live: {reads:?}");
}

// ---------------------------------------------------------------------------
// The same swaps, one step at a time: between a walk and what follows it.

/// A home with ~/.hermes/logs/app.log, an outside directory holding an
/// app.log of its own, and a daemon serving it; returns the logs directory
/// and the outside one.
fn swap_world() -> (std::sync::Arc<Scratch>, PathBuf, PathBuf, Vec<u8>) {
    let s = Scratch::new();
    let marker = outside_marker();
    let logs = s.home_file(".hermes/logs/app.log", INSIDE).parent().unwrap().to_path_buf();
    let outside = s.outside_file("logs/app.log", &marker).parent().unwrap().to_path_buf();
    (s, logs, outside, marker)
}

/// Put a symlink to `outside` where the directory `dir` was.
fn swap_for_link(dir: &Path, outside: &Path) {
    fs::rename(dir, dir.with_extension("aside")).unwrap();
    std::os::unix::fs::symlink(outside, dir).unwrap();
}

#[test]
fn a_directory_swapped_for_a_symlink_after_a_walk_fails_the_open_stat_and_listing() {
    let (s, logs, outside, _) = swap_world();
    let d = Daemon::start_in(&s, &[]);
    let mut c = d.session(Dialect::P2000);
    c.walk_path("/hermes/logs/app.log", 1).qids();
    c.walk_path("/hermes/logs", 2).qids();
    swap_for_link(&logs, &outside);
    c.stat(1).assert_error("file does not exist");
    c.open(1, OREAD).assert_error("file does not exist");
    c.stat(2).assert_error("file does not exist");
    c.open(2, OREAD).assert_error("file does not exist");
    c.walk(2, 3, &["app.log"]).assert_error("file does not exist");
    assert!(!names(&c.list("/hermes", 4, 4096)).contains(&"logs".to_string()));
}

#[test]
fn a_file_swapped_for_a_symlink_after_a_walk_fails_the_open_and_stat() {
    let (s, logs, outside, _) = swap_world();
    let d = Daemon::start_in(&s, &[]);
    let mut c = d.session(Dialect::P2000);
    c.walk_path("/hermes/logs/app.log", 1).qids();
    let file = logs.join("app.log");
    fs::remove_file(&file).unwrap();
    std::os::unix::fs::symlink(outside.join("app.log"), &file).unwrap();
    c.stat(1).assert_error("file does not exist");
    c.open(1, OREAD).assert_error("file does not exist");
    assert!(c.list("/hermes/logs", 2, 4096).is_empty());
}

#[test]
fn a_directory_swapped_for_a_symlink_after_its_open_lists_and_reads_only_what_was_opened() {
    let (s, logs, outside, marker) = swap_world();
    let d = Daemon::start_in(&s, &[]);
    let mut c = d.session(Dialect::P2000);
    c.open_path("/hermes/logs", 1);
    c.open_path("/hermes/logs/app.log", 2);
    swap_for_link(&logs, &outside);
    let listed = entries_of(&c.read_ok(1, 0, 4096), Dialect::P2000);
    assert_eq!(
        listed.iter().map(|e| (e.name.as_str(), e.length)).collect::<Vec<_>>(),
        [("app.log", INSIDE.len() as u64)]
    );
    let data = c.read_all(2);
    assert!(!contains(&data, &marker));
    assert_eq!(data, INSIDE);
}
