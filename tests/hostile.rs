//! A hostile client: random, half-valid 9P messages on many connections —
//! walks of random names (excluded, `..`, too long, too many), opens with
//! every mode, reads at absurd offsets and counts, flushes of random tags,
//! clunks, random bytes as bodies and random type numbers — against the
//! demo tree with /active and chat/. The daemon must survive every one,
//! answer a clean session afterwards, and hold the fds it held before.
//! Deterministic (a fixed xorshift), bounded in count.

mod common;

use std::time::Duration;

use common::*;
use nineagents::proto::{self, msg, Dialect};

/// Connections of random traffic, and messages on each.
const CONNECTIONS: usize = 60;
const MESSAGES_PER_CONNECTION: usize = 60;

struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
    fn pick<'a>(&mut self, xs: &'a [&'a [u8]]) -> &'a [u8] {
        xs[self.below(xs.len() as u64) as usize]
    }
}

const NAMES: &[&[u8]] = &[
    b"claude",
    b"projects",
    b"-home-demo-src-9agents",
    b"active",
    b"48213",
    b"chat",
    b"00000000-user",
    b"agents",
    b"zmx",
    b"status",
    b"transcript",
    b"..",
    b".",
    b"",
    b"a/b",
    b"a\0b",
    b".credentials.json",
    b"passwd.jsonl",
    b"home",
    b"README",
    b"pid",
    b"hermes",
    b".env",
    b"skills",
    b"omp",
    b"codex",
];

fn string(out: &mut Vec<u8>, s: &[u8]) {
    out.extend_from_slice(&(s.len() as u16).to_le_bytes());
    out.extend_from_slice(s);
}

/// One random request's bytes, framed.
fn random_request(r: &mut Rng) -> Vec<u8> {
    let tag = r.below(8) as u16;
    let fid = r.below(6) as u32;
    let newfid = r.below(6) as u32;
    let mut body = Vec::new();
    let ty = match r.below(10) {
        0..=3 => {
            body.extend_from_slice(&fid.to_le_bytes());
            body.extend_from_slice(&newfid.to_le_bytes());
            let n = r.below(19) as u16;
            body.extend_from_slice(&n.to_le_bytes());
            for _ in 0..n {
                if r.below(20) == 0 {
                    string(&mut body, &[b'x'; 300]);
                } else {
                    string(&mut body, r.pick(NAMES));
                }
            }
            msg::TWALK
        }
        4 => {
            body.extend_from_slice(&fid.to_le_bytes());
            body.push([0u8, 1, 2, 3, 0x10, 0x40, 0xff][r.below(7) as usize]);
            msg::TOPEN
        }
        5 => {
            body.extend_from_slice(&fid.to_le_bytes());
            body.extend_from_slice(&[0u64, 1, 100, 1 << 63, u64::MAX][r.below(5) as usize].to_le_bytes());
            body.extend_from_slice(&[0u32, 1, 8192, u32::MAX][r.below(4) as usize].to_le_bytes());
            msg::TREAD
        }
        6 => {
            body.extend_from_slice(&(r.below(10) as u16).to_le_bytes());
            msg::TFLUSH
        }
        7 => {
            body.extend_from_slice(&fid.to_le_bytes());
            [msg::TCLUNK, msg::TSTAT, msg::TREMOVE][r.below(3) as usize]
        }
        _ => {
            for _ in 0..r.below(40) {
                body.push(r.next() as u8);
            }
            (r.next() as u8).max(1)
        }
    };
    let mut out = Vec::with_capacity(7 + body.len());
    out.extend_from_slice(&((7 + body.len()) as u32).to_le_bytes());
    out.push(ty);
    out.extend_from_slice(&tag.to_le_bytes());
    out.extend_from_slice(&body);
    out
}

#[test]
fn random_half_valid_traffic_never_takes_the_daemon_down_or_leaks_fds() {
    let s = Scratch::new();
    // No listing window: the harness bases it keeps come and go with time,
    // not traffic (tests/mirror_fds.rs counts them), and would move the
    // count this test holds exactly.
    let mut d = Daemon::start_in(&s, &["--demo", "--listing-window", "0"]);
    // The baseline is the daemon serving a client that has read a chat: the
    // chat pool keeps that transcript's fd (one of at most --max-chats), and
    // the connection the harness probed readiness with has gone.
    let mut warm = d.session(Dialect::P2000u);
    assert!(!warm.list("/active/claude/48213/chat", 2, warm.msize - proto::IOHDRSZ).is_empty());
    drop(warm);
    let baseline = settled_fds(&d);
    let mut r = Rng(0x9a9e_2000_dead_beef);
    for _ in 0..CONNECTIONS {
        let mut c = d.connect();
        let dialect = if r.below(2) == 0 { Dialect::P2000 } else { Dialect::P2000u };
        c.handshake(dialect);
        for _ in 0..MESSAGES_PER_CONNECTION {
            if c.try_send_raw(&random_request(&mut r)).is_err() {
                break;
            }
        }
        // Drain what it answered, then hang up mid-whatever.
        c.set_read_timeout(Duration::from_millis(50));
        while c.next().is_ok() {}
    }
    assert!(d.is_running(), "the daemon died under random traffic:\n{}", d.stderr());
    let mut clean = d.session(Dialect::P2000u);
    assert_eq!(clean.cat("/pid", 1), format!("{}\n", d.pid).as_bytes());
    let listed = clean.list("/active/claude/48213/chat", 2, clean.msize - proto::IOHDRSZ);
    assert!(!listed.is_empty(), "chat/ still lists");
    drop(clean);
    let settled = poll(Duration::from_secs(5), || (d.fd_count() == baseline).then_some(()));
    assert!(settled.is_some(), "the daemon holds {} fds, {baseline} before the traffic", d.fd_count());
}

/// The daemon's fd count once it has stopped changing: polled until two
/// readings a few milliseconds apart agree.
fn settled_fds(d: &Daemon) -> usize {
    let mut last = d.fd_count();
    poll(Duration::from_secs(5), || {
        std::thread::yield_now();
        let now = d.fd_count();
        let stable = now == last;
        last = now;
        stable.then_some(now)
    })
    .expect("the daemon's fd count never settled")
}
