//! Past each cap of the server core: a connection's byte budget, the fid
//! caps (walks in flight counted, and all connections together), the
//! directory-entry cap, the Tversion deadline, and the rate limit on the
//! refusals the log gets. Each test pushes a client past one cap and reads
//! what the daemon holds from its SIGUSR1 status line.

mod common;

use std::collections::{BTreeMap, HashSet};
use std::fs;
use std::io::Write;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{mpsc, Arc};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use common::*;

const MIB: u32 = 1 << 20;
/// What a connection may hold: its budget (one msize) and the one message
/// that may overshoot it, with room for the small replies queued beside.
const HELD_BOUND: u64 = 2 * MIB as u64 + 64 * 1024;
/// The mirrored file the readers read: sparse, so it costs no disk.
const BIG: &str = "/hermes/big.bin";
const BIG_BYTES: u64 = 64 << 20;
/// `src/server/limits.rs`'s `REFUSALS_PER_SEC_MAX`: refusal lines a second.
const REFUSALS_PER_SEC_MAX: usize = 5;

/// A scratch home with the big file, and a daemon on it (no /proc agents).
fn daemon_with_big_file(args: &[&str]) -> Daemon {
    let s = Scratch::new();
    let path = s.home_file(".hermes/big.bin", b"");
    fs::File::options().write(true).open(&path).unwrap().set_len(BIG_BYTES).unwrap();
    start(&s, args)
}

fn start(s: &Arc<Scratch>, args: &[&str]) -> Daemon {
    let proc_dir = s.empty_proc();
    let mut all = vec!["--proc", proc_dir.as_str()];
    all.extend_from_slice(args);
    Daemon::start_in(s, &all)
}

/// A connection at msize 1 MiB with the big file open as fid 1.
fn big_reader(d: &Daemon) -> Conn {
    let mut c = d.connect();
    c.version(MIB, "9P2000");
    assert_eq!(c.msize, MIB, "the daemon's default msize is 1 MiB");
    c.attach_ok(ROOT);
    c.open_path(BIG, 1);
    c
}

/// Write `bytes` on `c`'s socket from a thread of its own, so the test
/// goes on when the daemon stops reading; true if every byte went.
fn write_behind(c: &Conn, bytes: Vec<u8>) -> JoinHandle<bool> {
    let mut w = c.unix_stream().try_clone().unwrap();
    std::thread::spawn(move || w.write_all(&bytes).is_ok())
}

/// Another client's stat of the big file, answered.
fn stat_from_another_client(d: &Daemon) {
    let mut other = d.session(Dialect::P2000);
    other.walk_ok(ROOT, 1, &["hermes", "big.bin"]);
    assert_eq!(other.stat_ok(1).length, BIG_BYTES);
}

#[test]
fn a_client_that_pipelines_megabyte_reads_and_reads_nothing_holds_at_most_two_msizes() {
    const TREADS: u64 = 2_000;
    let d = daemon_with_big_file(&[]);
    let hog = big_reader(&d);
    let count = hog.msize - IOHDRSZ;
    let mut flood = Vec::new();
    for i in 0..TREADS {
        let offset = (i * u64::from(count)) % (BIG_BYTES - u64::from(count));
        flood.extend(hog.encode(i as u16 + 1, &Tmsg::Read { fid: 1, offset, count }));
    }
    let writer = write_behind(&hog, flood);

    let held = d.settled_status(&["held_bytes", "parked", "reqs"], 20);
    assert!(held.get("held_bytes") <= HELD_BOUND, "past the budget: {}", held.line);
    assert!(held.get("held_bytes") >= u64::from(count), "the daemon is not holding the hog's replies: {}", held.line);
    stat_from_another_client(&d);
    let after = d.status_line();
    assert!(after.get("held_bytes") <= HELD_BOUND, "past the budget: {}", after.line);
    drop(d);
    let _ = writer.join();
}

/// Count the replies on `c` by type until `rflushes` Rflush have come (or
/// the connection ends): (Rflush, Rread, anything else).
fn count_replies(mut c: Conn, rflushes: usize) -> JoinHandle<(usize, usize, usize)> {
    std::thread::spawn(move || {
        let (mut flushed, mut read, mut other) = (0, 0, 0);
        while flushed < rflushes {
            match c.next() {
                Ok(r) if r.ty() == msg::RFLUSH => flushed += 1,
                Ok(r) if r.ty() == msg::RREAD => read += 1,
                Ok(_) => other += 1,
                Err(_) => break,
            }
        }
        (flushed, read, other)
    })
}

#[test]
fn flushed_reads_still_in_flight_count_against_the_budget() {
    const PAIRS: u64 = 2_000;
    /// Small enough that a budget holds sixteen reads in flight, so the
    /// flushes land on reads still parked.
    const COUNT: u32 = 64 * 1024;
    let d = daemon_with_big_file(&[]);
    let c = big_reader(&d);
    let mut flood = Vec::new();
    for i in 0..PAIRS {
        let (tag, offset) = (2 * i as u16 + 1, (i * u64::from(COUNT)) % (BIG_BYTES - u64::from(COUNT)));
        flood.extend(c.encode(tag, &Tmsg::Read { fid: 1, offset, count: COUNT }));
        flood.extend(c.encode(tag + 1, &Tmsg::Flush { oldtag: tag }));
    }
    let writer = write_behind(&c, flood);
    let counter = count_replies(c, PAIRS as usize);

    // Sampled while the replies come (at least once), and checked each time.
    let mut samples = 0;
    loop {
        let s = d.status_line();
        assert!(s.get("held_bytes") <= HELD_BOUND, "past the budget after {samples} samples: {}", s.line);
        samples += 1;
        if counter.is_finished() {
            break;
        }
    }
    let (flushed, read, other) = counter.join().unwrap();
    assert_eq!((flushed, other), (PAIRS as usize, 0), "every Tflush answered Rflush, nothing else came");
    assert!(read < PAIRS as usize, "no flush landed on a read in flight ({read} Rreads)");
    assert!(writer.join().unwrap());
    let idle = d.settled_status(&["held_bytes", "reqs"], 5);
    assert_eq!(
        (idle.get("held_bytes"), idle.get("parked"), idle.get("reqs")),
        (0, 0, 0),
        "what the flushed reads charged is given back: {}",
        idle.line
    );
}

// ---------------------------------------------------------------------------
// The fid caps.

const EMFILE_TEXT: &str = "Too many open files";
const ENFILE_TEXT: &str = "Too many open files in system";

#[test]
fn max_fids_counts_walks_still_in_flight() {
    const WALKS: u16 = 64;
    let s = Scratch::new();
    s.home_file(".hermes/f.txt", b"hello\n");
    let d = start(&s, &["--max-fids", "10"]);
    let mut c = d.session(Dialect::P2000);
    let mut flood = Vec::new();
    for i in 0..WALKS {
        flood.extend(twalk_bytes(i + 1, ROOT, 100 + u32::from(i), &[b"hermes", b"f.txt"]));
    }
    c.send_raw(&flood);
    let mut answers: BTreeMap<u16, Reply> = BTreeMap::new();
    for _ in 0..WALKS {
        let r = c.recv();
        assert!(answers.insert(r.tag(), r).is_none(), "a tag answered twice");
    }
    let (walked, refused): (Vec<_>, Vec<_>) = answers.values().partition(|r| !r.is_error());
    for r in &walked {
        assert_eq!(r.qids().len(), 2, "{r:?}");
    }
    for r in &refused {
        r.assert_error(EMFILE_TEXT);
    }
    assert_eq!((walked.len(), refused.len()), (9, 55), "the root and nine walks make ten fids");
    let st = d.status_line();
    assert_eq!((st.get("fids"), st.get("fids_total")), (10, 10), "{}", st.line);
}

/// A 9P2000.u session on `d` with the root as fid 0 and `clones` more.
fn session_with_fids(d: &Daemon, clones: u32) -> Conn {
    let mut c = d.session(Dialect::P2000u);
    for fid in 1..=clones {
        c.walk_ok(ROOT, fid, &[]);
    }
    c
}

fn assert_enfile(r: &Reply) {
    let (text, errno) = r.expect_error();
    assert_eq!((text.as_str(), errno), (ENFILE_TEXT, libc::ENFILE as u32), "{r:?}");
}

#[test]
fn max_fids_total_refuses_the_next_fid_on_every_connection_until_one_hangs_up() {
    let d = start(&Scratch::new(), &["--max-fids-total", "20"]);
    let mut a = session_with_fids(&d, 9);
    let mut b = session_with_fids(&d, 9);
    assert_enfile(&b.walk(ROOT, 10, &[]));
    assert_enfile(&a.walk(ROOT, 10, &[]));
    let mut third = d.connect();
    third.version(SESSION_MSIZE, "9P2000.u");
    assert_enfile(&third.attach(ROOT));
    let st = d.status_line();
    assert_eq!((st.get("fids"), st.get("fids_total")), (20, 20), "{}", st.line);
    b.clunk(10).assert_error("Bad file descriptor");

    drop(a);
    // The hang-up is the daemon's to notice: poll until b may make a fid.
    let made = poll(REPLY_DEADLINE, || (!b.walk(ROOT, 10, &[]).is_error()).then_some(()));
    assert!(made.is_some(), "a hang-up did not give back its ten fids: {}", d.status_line().line);
    b.walk_ok(ROOT, 11, &[]);
    let st = d.status_line();
    assert_eq!(st.get("fids_total"), 12, "b's twelve fids: {}", st.line);
}

// ---------------------------------------------------------------------------
// --max-dir-entries.

const ENTRIES: usize = 20_000;

/// A scratch home with `/hermes/many`, a directory of `ENTRIES` files, and
/// `/hermes/f.txt`.
fn many_entries() -> (Arc<Scratch>, Vec<String>) {
    let s = Scratch::new();
    s.home_file(".hermes/f.txt", b"hello\n");
    let dir = s.home_dir(".hermes/many");
    let names: Vec<String> = (0..ENTRIES).map(|i| format!("entry-{i:05}")).collect();
    for n in &names {
        fs::File::create(dir.join(n)).unwrap();
    }
    (s, names)
}

#[test]
fn a_directory_of_exactly_max_dir_entries_lists_every_name_once() {
    let (s, names) = many_entries();
    let d = start(&s, &["--max-dir-entries", "20000"]);
    let mut c = d.session(Dialect::P2000);
    let listed: Vec<String> =
        c.list("/hermes/many", 1, SESSION_MSIZE - IOHDRSZ).iter().map(|e| e.name.clone()).collect();
    assert_eq!(listed.len(), ENTRIES);
    assert_eq!(listed.iter().collect::<HashSet<_>>().len(), ENTRIES, "a name listed twice");
    assert_eq!(listed, names, "every name, in order");
}

#[test]
fn a_directory_past_max_dir_entries_is_refused_not_shortened() {
    let (s, _) = many_entries();
    let d = start(&s, &["--max-dir-entries", "19999"]);
    let mut c = d.session(Dialect::P2000);
    c.walk_ok(ROOT, 1, &["hermes", "many"]);
    c.open(1, OREAD).assert_error("No buffer space available");
    c.read(1, 0, 4096).assert_error("Bad file descriptor");
    let st = d.settled_status(&["entries", "job_ops"], 3);
    assert_eq!((st.get("entries"), st.get("job_ops")), (0, 0), "{}", st.line);
}

#[test]
fn another_clients_stat_is_answered_while_a_large_directory_is_listed() {
    const OPENS: u32 = 3;
    let (s, _) = many_entries();
    let d = start(&s, &["--max-dir-entries", "20000"]);
    let mut lister = d.session(Dialect::P2000);
    let mut statter = d.session(Dialect::P2000);
    statter.walk_ok(ROOT, 1, &["hermes", "f.txt"]);
    // Each open is timed from its send to its reply; the stats in between
    // were answered while the listing ran.
    let (tx, rx) = mpsc::channel();
    let listing_done = Arc::new(AtomicBool::new(false));
    let done = listing_done.clone();
    let lister = std::thread::spawn(move || {
        for fid in 1..=OPENS {
            lister.walk_ok(ROOT, fid, &["hermes", "many"]);
            let sent = Instant::now();
            let r = lister.open(fid, OREAD);
            assert!(!r.is_error(), "{r:?}");
            tx.send((sent, Instant::now())).unwrap();
            lister.clunk_ok(fid);
        }
        done.store(true, Ordering::Release);
    });
    let mut answered = Vec::new();
    while !listing_done.load(Ordering::Acquire) {
        let sent = Instant::now();
        assert_eq!(statter.stat_ok(1).length, 6);
        answered.push((sent, Instant::now()));
    }
    lister.join().unwrap();
    let windows: Vec<(Instant, Instant)> = rx.iter().collect();
    let inside = answered.iter().filter(|(sent, got)| windows.iter().any(|(a, b)| a < sent && got < b)).count();
    assert!(inside > 0, "no stat was answered while one of {OPENS} listings ran ({} stats in all)", answered.len());
}

// ---------------------------------------------------------------------------
// The Tversion deadline.

#[test]
fn silent_connections_hold_their_slots_only_until_the_version_deadline() {
    const DEADLINE: Duration = Duration::from_millis(300);
    let d = start(&Scratch::new(), &["--version-deadline", "300", "--max-conns", "2"]);
    let connected = Instant::now();
    // Accepted in the order they connect: the third finds both slots taken.
    let mut silent = [d.connect(), d.connect()];
    let mut third = d.connect();
    let _ = third.try_send_raw(&third.encode(NOTAG, &Tmsg::Version { msize: 8192, version: b"9P2000" }));
    third.expect_closed();

    for s in &mut silent {
        s.set_read_timeout(Duration::from_secs(5));
        s.expect_closed();
    }
    assert!(connected.elapsed() >= DEADLINE, "closed before the deadline: {:?}", connected.elapsed());
    let mut c = d.session(Dialect::P2000);

    // A silent connection made after the session: its closing proves the
    // deadline passed for the session too.
    let mut clock = d.connect();
    clock.set_read_timeout(Duration::from_secs(5));
    clock.expect_closed();
    c.stat_ok(ROOT);
    assert_eq!(c.cat("/pid", 1), format!("{}\n", d.pid).into_bytes());
}

// ---------------------------------------------------------------------------
// The refusals' log.

/// Lines of `stderr` holding `needle`.
fn lines_with<'a>(stderr: &'a str, needle: &'a str) -> impl Iterator<Item = &'a str> {
    stderr.lines().filter(move |l| l.contains(needle))
}

/// The refusals the log accounts for: lines logged, plus those it says it
/// left out.
fn refusals_accounted(stderr: &str) -> (usize, u64) {
    let logged = lines_with(stderr, "refusing a connection").count();
    let left_out = lines_with(stderr, "not logged")
        .map(|l| {
            let n = l.split(" more refusal").next().unwrap().rsplit(' ').next().unwrap();
            n.parse::<u64>().unwrap_or_else(|_| panic!("no count in {l:?}"))
        })
        .sum();
    (logged, left_out)
}

#[test]
fn a_connect_flood_past_max_conns_logs_a_few_lines_a_second_and_counts_the_rest() {
    const FLOOD: usize = 500;
    let d = start(&Scratch::new(), &["--max-conns", "1"]);
    let mut held = d.session(Dialect::P2000);
    let started = Instant::now();
    let refused = || d.connect().expect_closed();
    (0..FLOOD).for_each(|_| refused());
    let flood_secs = started.elapsed().as_secs() as usize + 1;
    let logged = lines_with(&d.stderr(), "refusing a connection").count();
    assert!(
        logged <= REFUSALS_PER_SEC_MAX * (flood_secs + 1),
        "{logged} refusal lines in {flood_secs} s of flood:\n{}",
        d.stderr()
    );
    // What a second left out is told when a later second's first refusal
    // comes: refuse one now and then until every refusal is accounted for,
    // logged or told of (the capture of stderr may lag, never lead).
    let mut total = FLOOD as u64;
    let accounted = poll(Duration::from_secs(10), || {
        refused();
        total += 1;
        let (logged, left_out) = refusals_accounted(&d.stderr());
        (logged as u64 + left_out == total).then_some(left_out)
    });
    let left_out = accounted.unwrap_or_else(|| {
        panic!("{:?} of {total} refusals accounted for:\n{}", refusals_accounted(&d.stderr()), d.stderr())
    });
    assert!(left_out > 0, "nothing was left out of the log:\n{}", d.stderr());
    assert_eq!(held.cat("/pid", 1), format!("{}\n", d.pid).into_bytes(), "the one inside the cap is served");
}
