//! The server stepped by hand: a client's requests put where its
//! connection's receive would put them, the ring's operations completed by
//! the test (the ring is never entered, so the kernel runs none of them),
//! and the replies read back from the sends the server queued. What the
//! integration tests can only see from outside — a request answered
//! exactly once, a flushed one never, its record reaped only once its last
//! operation is back, a connection that stops taking requests at its cap
//! of parked ones — checked here with no client, no disk and no timing.

use std::os::fd::OwnedFd;
use std::os::unix::net::UnixStream;

use super::*;
use crate::harness::Harness;
use crate::proto::{Dialect, Rmsg, Tmsg, WalkNames, NOTAG};
use crate::tree::README;

struct Rig {
    s: Server,
    idx: usize,
    _peer: UnixStream,
    dir: std::path::PathBuf,
}

impl Drop for Rig {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

impl Rig {
    /// A server with one harness (claude, its base a scratch directory
    /// the tests never let it look at) and one connection, versioned and
    /// attached (fid 0 the root).
    fn new() -> Rig {
        static N: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
        let n = N.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let dir = std::env::temp_dir().join(format!("9a-server-unit-{}-{n}", std::process::id()));
        std::fs::create_dir_all(dir.join(".claude")).unwrap();
        let owner = crate::tree::Owner { name: b"u".to_vec(), uid: 1, gid: 1 };
        let tree = Tree::new(owner, &[(Harness::Claude, dir.join(".claude"))], &dir.join("proc"), false);
        let signal = OwnedFd::from(std::fs::File::open("/dev/null").unwrap());
        let mut s = Server::new(config(), tree, Vec::new(), signal).unwrap();
        let (ours, peer) = UnixStream::pair().unwrap();
        let idx = s.add_conn(OwnedFd::from(ours));
        let mut rig = Rig { s, idx, _peer: peer, dir };
        rig.send(&[(NOTAG, Tmsg::Version { msize: 65_536, version: b"9P2000" })]);
        let attach = Tmsg::Attach { fid: 0, afid: u32::MAX, uname: b"u", aname: b"", n_uname: u32::MAX };
        rig.send(&[(1, attach)]);
        assert_eq!(rig.replies(), [(NOTAG, "Version".to_string()), (1, "Attach".to_string())]);
        rig
    }

    /// The client sends `msgs` in one write: they are what the pending
    /// receive got.
    fn send(&mut self, msgs: &[(u16, Tmsg)]) {
        let mut bytes = Vec::new();
        for (tag, msg) in msgs {
            crate::proto::encode_t(&mut bytes, *tag, msg, Dialect::P2000);
        }
        let recv = self.pending(|t| matches!(t, Token::Recv(i, _) if *i == self.idx));
        let key = *recv.first().expect("the connection has a receive armed");
        let start = self.s.conns[self.idx].rlen;
        self.s.world.ring.pending_buf(key)[start..start + bytes.len()].copy_from_slice(&bytes);
        self.complete(key, bytes.len() as i32);
    }

    /// Operation `key` came back with `result`, and the turn ends as the
    /// loop's does.
    fn complete(&mut self, key: usize, result: i32) {
        let c = self.s.world.ring.complete_by_hand(key, result).expect("an operation in flight");
        self.s.complete(c);
        self.s.pump_dirty();
        self.s.run_ready();
        self.s.pump_dirty();
    }

    /// The keys of the operations in flight whose token `is`.
    fn pending(&self, is: impl Fn(&Token) -> bool) -> Vec<usize> {
        self.s.world.ring.pending().into_iter().filter(|(_, t)| is(t)).map(|(k, _)| k).collect()
    }

    /// The operations parked requests have in flight.
    fn job_ops(&self) -> Vec<usize> {
        self.pending(|t| matches!(t, Token::Req { .. }))
    }

    /// Every reply sent since the last call: each send completed whole,
    /// its messages decoded (tag, and the message's kind).
    fn replies(&mut self) -> Vec<(u16, String)> {
        let mut bytes = Vec::new();
        while let Some(&key) = self.pending(|t| matches!(t, Token::Send(i, _) if *i == self.idx)).first() {
            let sent = self.s.world.ring.pending_buf(key).clone();
            bytes.extend_from_slice(&sent);
            self.complete(key, sent.len() as i32);
        }
        let mut out = Vec::new();
        let mut at = 0;
        while at < bytes.len() {
            let size = u32::from_le_bytes(bytes[at..at + 4].try_into().unwrap()) as usize;
            let (tag, msg) = crate::proto::decode_r(&bytes[at..at + size], Dialect::P2000).unwrap();
            let kind = match msg {
                Rmsg::Error { ename, .. } => format!("Error {}", String::from_utf8_lossy(ename)),
                m => format!("{m:?}").split([' ', '{', '(']).next().unwrap_or_default().to_string(),
            };
            out.push((tag, kind));
            at += size;
        }
        out
    }

    /// The bytes of the Tread that test sends.
    fn read_bytes() -> usize {
        let mut b = Vec::new();
        crate::proto::encode_t(&mut b, 0, &Tmsg::Read { fid: 1, offset: 0, count: 60_000 }, Dialect::P2000);
        b.len()
    }

    /// A walk from the root to `/claude`, on `tag`: a look at the
    /// harness's base, through the ring.
    fn walk_msg(newfid: u32) -> Tmsg<'static> {
        Tmsg::Walk { fid: 0, newfid, names: WalkNames::new(&[b"claude"]).unwrap() }
    }
}

#[test]
fn a_parked_walk_is_answered_exactly_once_when_its_look_comes_back() {
    let mut r = Rig::new();
    r.send(&[(2, Rig::walk_msg(1))]);
    assert_eq!(r.replies(), [], "parked on its look");
    let ops = r.job_ops();
    assert_eq!(ops.len(), 1, "one operation in flight");
    r.complete(ops[0], -libc::ENOENT);
    assert_eq!(r.replies(), [(2, "Error file does not exist".to_string())]);
    assert_eq!(r.s.reqs.len(), 0, "its record is reaped");
    assert!(r.s.conns[r.idx].parked.is_empty());
}

#[test]
fn a_flushed_walk_is_never_answered_and_its_record_goes_once_its_operation_is_back() {
    let mut r = Rig::new();
    r.send(&[(2, Rig::walk_msg(1)), (3, Tmsg::Flush { oldtag: 2 })]);
    assert_eq!(r.replies(), [(3, "Flush".to_string())]);
    assert_eq!(r.s.reqs.len(), 1, "kept while the kernel may still write into it");
    let ops = r.job_ops();
    r.complete(ops[0], -libc::ENOENT);
    assert_eq!(r.replies(), [], "a flushed request is not answered");
    assert_eq!(r.s.reqs.len(), 0, "reaped once its operation came back");
    assert!(r.job_ops().is_empty());
}

#[test]
fn a_tag_reused_in_flight_is_refused_and_the_first_request_still_answered_once() {
    let mut r = Rig::new();
    r.send(&[(2, Rig::walk_msg(1)), (2, Tmsg::Clunk { fid: 0 })]);
    let refused = r.replies();
    assert_eq!(refused.len(), 1);
    assert_eq!(refused[0].0, 2);
    assert!(refused[0].1.starts_with("Error"), "{refused:?}");
    let ops = r.job_ops();
    r.complete(ops[0], -libc::ENOENT);
    assert_eq!(r.replies(), [(2, "Error file does not exist".to_string())]);
    assert_eq!(r.s.reqs.len(), 0);
}

#[test]
fn at_its_cap_of_parked_requests_a_connection_takes_no_more_until_one_is_answered() {
    let mut r = Rig::new();
    let n = conn::REQS_PARKED_MAX + 2;
    let walks: Vec<(u16, Tmsg)> = (0..n).map(|i| (10 + i as u16, Rig::walk_msg(100 + i as u32))).collect();
    r.send(&walks);
    assert_eq!(r.s.conns[r.idx].parked.len(), conn::REQS_PARKED_MAX);
    let waiting = |r: &Rig| r.s.conns[r.idx].rlen - r.s.conns[r.idx].rstart;
    assert!(waiting(&r) > 0, "the rest wait in the buffer, undecoded");
    let ops = r.job_ops();
    assert_eq!(ops.len(), conn::REQS_PARKED_MAX);
    r.complete(ops[0], -libc::ENOENT);
    assert_eq!(r.replies().len(), 1);
    assert_eq!(r.s.conns[r.idx].parked.len(), conn::REQS_PARKED_MAX, "one answered, one more taken");
    assert!(waiting(&r) > 0, "and one still waits");
    for key in r.job_ops() {
        r.complete(key, -libc::ENOENT);
    }
    for key in r.job_ops() {
        r.complete(key, -libc::ENOENT);
    }
    let replies = r.replies();
    assert_eq!(replies.len(), n - 1, "every request answered once");
    let mut tags: Vec<u16> = replies.iter().map(|(t, _)| *t).collect();
    tags.sort();
    tags.dedup();
    assert_eq!(tags.len(), n - 1);
    assert_eq!((r.s.reqs.len(), waiting(&r)), (0, 0));
}

#[test]
fn a_client_that_reads_no_replies_stops_being_read_at_its_budget_and_is_read_again_once_they_go() {
    let mut r = Rig::new();
    let names = WalkNames::new(&[b"README"]).unwrap();
    r.send(&[(2, Tmsg::Walk { fid: 0, newfid: 1, names }), (3, Tmsg::Open { fid: 1, mode: crate::proto::OREAD })]);
    assert_eq!(r.replies().len(), 2);
    let recv_armed = |r: &Rig| !r.pending(|t| matches!(t, Token::Recv(i, _) if *i == r.idx)).is_empty();
    // Reads of the whole README, ten a write; none of the sends completes.
    let mut sent = 0;
    while recv_armed(&r) && sent < 10_000 {
        let reads: Vec<(u16, Tmsg)> =
            (0..10).map(|k| (100 + k, Tmsg::Read { fid: 1, offset: 0, count: 60_000 })).collect();
        r.send(&reads);
        sent += 10;
    }
    let conn = &r.s.conns[r.idx];
    assert!(!recv_armed(&r), "still read after {sent} requests");
    assert!(conn.held_bytes() >= conn.budget(), "{} held, budget {}", conn.held_bytes(), conn.budget());
    assert!(conn.held_bytes() < conn.budget() + 2 * README.len() + 64, "went past its budget by more than a reply");
    // The client reads: the replies go, and it is read again.
    let answered = r.replies().len();
    assert!(recv_armed(&r), "not read again once its replies went");
    let left = r.s.conns[r.idx].rlen - r.s.conns[r.idx].rstart;
    assert_eq!(answered + left / Rig::read_bytes(), sent, "every request answered once, or still to be taken");
}

/// The defaults `main` gives.
fn config() -> Config {
    Config {
        msize: 64 * 1024,
        max_fids: 1 << 20,
        max_fids_total: 1 << 21,
        max_conns: 256,
        version_deadline: std::time::Duration::from_secs(5),
        trace: false,
        max_dir_entries: 65_536,
        max_listed_entries: world::LISTED_ENTRIES_MAX,
        listing_window: std::time::Duration::from_millis(conn::LISTING_REUSE_FOR_MS),
        allow_hard_links: false,
        allow_move: false,
        zmx: "zmx".into(),
        zmx_dir: "/nonexistent".into(),
        move_kill_after: std::time::Duration::from_secs(5),
        move_give_up: std::time::Duration::from_secs(12),
        move_post_deadline: std::time::Duration::from_secs(10),
        max_watches: 8192,
        max_waits: 65_536,
        rescan_interval: std::time::Duration::from_secs(1),
        kernel_workers: 1,
        max_chats: 8,
        max_chat_messages: 1 << 20,
        max_inflated: 1 << 30,
        prices: crate::reports::Prices::built_in(),
        zone: crate::localtime::Zone::utc(),
    }
}
