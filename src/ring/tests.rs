//! The ring's own bookkeeping, on a real io_uring: what is in flight when
//! the ring goes away, and what happens when more is asked than its queues
//! hold.

use std::cell::Cell;
use std::collections::HashSet;
use std::io::{Read, Write};
use std::os::fd::AsRawFd;
use std::os::unix::net::UnixStream;
use std::time::{Duration, Instant};

use super::*;

/// Longer than any test runs: a timeout that only a cancellation ends.
const HOUR_NANOS: u64 = 3_600_000_000_000;
/// How long a test polls for completions before it fails instead of hanging.
const DEADLINE: Duration = Duration::from_secs(20);

thread_local! {
    /// Completions a dropped ring waited for on this thread (each test runs
    /// on its own thread).
    pub(super) static WAITED_ON_DROP: Cell<usize> = const { Cell::new(0) };
}

/// A Recv on `ours` and a timeout of an hour, both handed to the kernel.
fn ring_with_recv_and_timeout(ours: &UnixStream) -> Ring<u32> {
    let mut ring = Ring::new(8).unwrap();
    ring.submit(1, Sub::Recv { fd: ours.as_raw_fd(), buf: vec![0; 64], start: 0 });
    ring.submit(2, Sub::Timeout { nanos: HOUR_NANOS });
    ring.flush();
    assert_eq!(ring.in_flight(), 2);
    ring
}

/// Bytes written to the peer are all still there for `ours`: no recv of a
/// dropped ring was left armed to take them into freed memory.
fn assert_bytes_written_now_are_still_unread(ours: &UnixStream, mut peer: &UnixStream) {
    peer.write_all(b"after the ring").unwrap();
    ours.set_nonblocking(true).unwrap();
    let mut got = [0u8; 64];
    let n = (&*ours).read(&mut got).expect("the bytes are waiting, untaken");
    assert_eq!(&got[..n], b"after the ring");
}

/// Poll the ring (without blocking) until `n` completions are back or the
/// deadline passes; returns their tokens.
fn collect(ring: &mut Ring<usize>, n: usize) -> Vec<usize> {
    let deadline = Instant::now() + DEADLINE;
    let (mut tokens, mut done) = (Vec::new(), Vec::new());
    while tokens.len() < n {
        assert!(Instant::now() < deadline, "only {} of {n} completions came back", tokens.len());
        ring.wait_for(&mut done, 0).unwrap();
        tokens.extend(done.drain(..).map(|c| c.token));
    }
    tokens
}

fn assert_each_once(tokens: &[usize], n: usize) {
    let distinct: HashSet<usize> = tokens.iter().copied().collect();
    assert_eq!((tokens.len(), distinct.len()), (n, n));
    assert!(distinct.iter().all(|&t| t < n));
}

#[test]
fn a_dropped_ring_has_cancelled_its_recv_and_timeout_before_drop_returns() {
    let (ours, peer) = UnixStream::pair().unwrap();
    drop(ring_with_recv_and_timeout(&ours));
    assert_eq!(WAITED_ON_DROP.get(), 2);
    assert_bytes_written_now_are_still_unread(&ours, &peer);
}

#[test]
fn a_panic_unwinding_past_a_ring_cancels_and_waits_for_what_it_had_in_flight() {
    let (ours, peer) = UnixStream::pair().unwrap();
    let unwound = std::panic::catch_unwind(|| {
        let _ring = ring_with_recv_and_timeout(&ours);
        panic!("a handler fails with operations in flight");
    });
    assert!(unwound.is_err());
    assert_eq!(WAITED_ON_DROP.get(), 2);
    assert_bytes_written_now_are_still_unread(&ours, &peer);
}

#[test]
fn cancel_all_hands_back_every_token_once_and_leaves_nothing_in_flight() {
    let (ours, peer) = UnixStream::pair().unwrap();
    let mut ring = ring_with_recv_and_timeout(&ours);
    let mut left = ring.cancel_all().unwrap();
    left.sort();
    assert_eq!((left, ring.in_flight()), (vec![1, 2], 0));
    drop(ring);
    assert_eq!(WAITED_ON_DROP.get(), 0, "nothing was left for the drop");
    assert_bytes_written_now_are_still_unread(&ours, &peer);
}

#[test]
fn ten_rings_worth_of_entries_submitted_without_waiting_all_complete_once() {
    let mut ring = Ring::new(RING_ENTRIES).unwrap();
    let n = 10 * RING_ENTRIES as usize;
    for i in 0..n {
        ring.submit(i, Sub::Nop);
    }
    assert_each_once(&collect(&mut ring, n), n);
    assert_eq!(ring.in_flight(), 0);
}

#[test]
fn a_tiny_ring_whose_completion_queue_overflows_loses_no_completion() {
    // Two entries: a completion queue of four, overflowing a hundredfold.
    let mut ring = Ring::new(2).unwrap();
    let n = 400;
    for i in 0..n {
        ring.submit(i, if i % 2 == 0 { Sub::Nop } else { Sub::Timeout { nanos: 1 } });
    }
    assert_each_once(&collect(&mut ring, n), n);
    assert_eq!(ring.in_flight(), 0);
}

#[test]
fn completions_taken_to_make_room_come_out_of_the_next_wait_first_without_blocking() {
    let mut ring = Ring::new(2).unwrap();
    for i in 0..4 {
        ring.submit(i, Sub::Nop);
        ring.flush();
    }
    ring.submit(9, Sub::Timeout { nanos: HOUR_NANOS });
    assert_eq!(ring.make_room().unwrap(), 4);
    assert_eq!(ring.in_flight(), 1, "the four taken are finished; the timeout is not");
    let mut done = Vec::new();
    // Blocking would last an hour: what was taken counts toward the wait.
    ring.wait(&mut done).unwrap();
    assert_eq!(done.iter().map(|c| c.token).collect::<Vec<_>>(), [0, 1, 2, 3]);
}

#[test]
fn with_nothing_to_take_making_room_waits_for_one_completion_instead_of_spinning() {
    let mut ring = Ring::new(2).unwrap();
    ring.submit(5, Sub::Timeout { nanos: 1_000_000 });
    ring.flush();
    assert_eq!(ring.make_room().unwrap(), 1);
    let mut done = Vec::new();
    ring.drain(&mut done);
    assert_eq!((done.len(), done[0].token, done[0].result), (1, 5, -libc::ETIME));
}

/// This thread's minor page faults so far (`/proc/thread-self/stat`).
fn minor_faults() -> u64 {
    let stat = std::fs::read_to_string("/proc/thread-self/stat").unwrap();
    let after_name = stat.rsplit(')').next().unwrap();
    after_name.split_whitespace().nth(7).unwrap().parse().unwrap()
}

#[test]
fn a_populate_brings_a_mappings_pages_in_so_reading_it_takes_no_faults() {
    const PAGES: usize = 256;
    let dir = std::env::temp_dir().join(format!("9agents-ring-populate-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("file");
    std::fs::write(&path, vec![b'x'; PAGES * 4096]).unwrap();
    let file = std::fs::File::open(&path).unwrap();
    let map = Mapped::new(file.as_raw_fd(), 0, PAGES * 4096).unwrap();
    let mut ring: Ring<u32> = Ring::new(8).unwrap();
    ring.submit(1, Sub::Populate { map });
    let mut done = Vec::new();
    let deadline = Instant::now() + DEADLINE;
    while done.is_empty() {
        assert!(Instant::now() < deadline, "the populate never came back");
        ring.wait(&mut done).unwrap();
    }
    let c = done.pop().unwrap();
    assert_eq!(c.result, 0, "populate: {}", io::Error::from_raw_os_error(-c.result));
    let map = c.map.expect("the mapping comes back");
    let before = minor_faults();
    let xs = map.read(|b| b.iter().filter(|&&c| c == b'x').count()).unwrap();
    let faults = minor_faults() - before;
    assert_eq!(xs, PAGES * 4096);
    // Without the populate each 16-page fault-around would fault: 16 here.
    assert!(faults < 4, "{faults} faults reading {PAGES} populated pages");
    std::fs::remove_dir_all(dir).unwrap();
}

/// The ring's kernel workers alive now: threads of this process named
/// `iou-wrk-<tid>` after the thread that made the ring (this test's).
fn workers_of_this_thread() -> usize {
    // SAFETY: gettid has no preconditions and cannot fail.
    let name = format!("iou-wrk-{}", unsafe { libc::gettid() });
    let tasks = std::fs::read_dir("/proc/self/task").unwrap();
    tasks
        .filter_map(|t| std::fs::read_to_string(t.ok()?.path().join("comm")).ok())
        .filter(|comm| comm.trim_end() == name)
        .count()
}

/// Reads of `READS` × `READ_BYTES` from one file, submitted at once: each is
/// a kernel worker's copy, long enough that an uncapped ring often runs
/// several workers side by side.
const READS: usize = 48;
const READ_BYTES: usize = 4 << 20;

/// The most kernel workers seen at once while the reads ran.
fn most_workers_during_reads(cap: u32) -> Option<usize> {
    let dir = std::env::temp_dir().join(format!("9agents-ring-workers-{}-{cap}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("file");
    std::fs::write(&path, vec![7u8; READ_BYTES]).unwrap();
    let file = std::fs::File::open(&path).unwrap();
    let mut ring = Ring::new(RING_ENTRIES).unwrap();
    if let Err(e) = ring.limit_workers(cap) {
        eprintln!("skipped: this kernel cannot cap a ring's workers ({e}; Linux 5.15 can)");
        return None;
    }
    assert_eq!(ring.worker_limits().unwrap(), [cap, cap]);
    for i in 0..READS {
        let buf = Vec::with_capacity(READ_BYTES);
        ring.submit(
            i,
            Sub::Read {
                fd: file.as_raw_fd(),
                owned: None,
                buf,
                len: READ_BYTES as u32,
                offset: 0,
                expect: READ_BYTES as u32,
            },
        );
    }
    ring.flush();
    let (mut done, mut most) = (0, 0);
    let deadline = Instant::now() + DEADLINE;
    while done < READS {
        assert!(Instant::now() < deadline, "{done} of {READS} reads came back");
        most = most.max(workers_of_this_thread());
        let mut batch = Vec::new();
        ring.wait_for(&mut batch, 1).unwrap();
        for c in batch {
            assert_eq!(c.result, READ_BYTES as i32, "read");
            done += 1;
        }
    }
    std::fs::remove_dir_all(&dir).unwrap();
    Some(most)
}

/// The kernel takes the cap (it reports it back), every read of more than
/// one worker's worth still completes under it, and no second worker is
/// seen meanwhile. (Uncapped, this machine often shows one worker too, so
/// the count alone would not tell a cap from none: the reported cap does.)
#[test]
fn a_ring_capped_at_one_worker_reports_the_cap_and_completes_every_read() {
    let Some(most) = most_workers_during_reads(1) else { return };
    assert!(most <= 1, "{most} kernel workers at once under a cap of one");
}
