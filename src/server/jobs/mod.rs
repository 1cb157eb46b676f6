//! The jobs: every kind of request that waits, one state machine each.
//!
//! A parked request (`park`) owns one `Job`. A job is driven by events —
//! its start, the completion of one of its ring operations, a turn of the
//! loop it asked for, the end of a scan or a chat refresh it waited on —
//! and each event is one call of its `step`, which answers what the
//! request does next (`Step`): wait for its operations, yield a turn,
//! wait for a scan or a refresh, answer, or (a job of the daemon's own)
//! finish and wake whoever waited on it.
//!
//! A job touches the world only through its `Cx`: the ring (each operation
//! submitted under the job's own token, counted so the record outlives
//! it), the namespace, the agents table, the chat pool, the open-file
//! counts, the configuration. It never sees a connection: what its answer
//! does to fids and reply queues is `reply::deliver`'s, in one place.
//!
//! | file | job | answers |
//! |---|---|---|
//! | `walk.rs` | a Twalk, name by name | Rwalk |
//! | `stat.rs` | a stat of a file on disk | Rstat |
//! | `open.rs` | a Topen of a file or directory on disk (a directory is listed) | Ropen |
//! | `listing.rs` | a Topen of a skeleton directory or of `/active/<h>` | Ropen |
//! | `read.rs` | a Tread of an open file on disk | Rread |
//! | `derive.rs` | an agent's fields or subagents, derived over facts | Rstat, Ropen |
//! | `scan.rs` | the scan of the agents (the daemon's own) | wakes its waiters |
//! | `refresh.rs` | a chat index made fresh in slices (the daemon's own) | wakes its waiters |
//! | `chat.rs` | a stat or open of `chat/` or a message, the index fresh | Rstat, Ropen |
//! | `chat_read.rs` | a Tread of a chat message | Rread |
//! | `moves.rs` | a Twrite to `zmx`: the move | Rwrite |

pub(crate) mod chat;
pub(crate) mod chat_read;
pub(crate) mod derive;
pub(crate) mod gather;
pub(crate) mod listing;
pub(crate) mod moves;
pub(crate) mod open;
pub(crate) mod read;
pub(crate) mod refresh;
pub(crate) mod scan;
pub(crate) mod stat;
pub(crate) mod walk;

use std::os::fd::OwnedFd;

use crate::active::agents::Agents;
use crate::chat::pool::{ChatRef, Pool};
use crate::errors::Error;
use crate::proto::Qid;
use crate::ring::{Completion, Ring, Sub};
use crate::tree::{Entry, Loc, Tree};

use super::conn::Opened;
use super::{Config, Held, RealPaths, Token};

/// Ring operations all jobs together may have in flight. A Topen of a
/// 65,536-entry directory wants a statx per entry; past this, a job's
/// next operations wait for a turn of the loop (`Step::Yield`) instead of
/// piling into the kernel. Connections' own receives and sends are not
/// counted: they are bounded by the connection cap.
pub(crate) const JOB_OPS_MAX: usize = 4096;
/// Bytes of file reads jobs may start in one turn of the loop. A burst of
/// clients each asking a megabyte would otherwise put a hundred megabytes
/// of copying and page faults in flight at once, and every other client's
/// next step would wait behind it; past this, a read waits for the next
/// turn, so a burst is spread over turns and a stat slips in between.
pub(crate) const TURN_READ_BYTES_MAX: usize = 1 << 20;

/// What happened to a job.
pub(crate) enum Event {
    /// It was just parked.
    Start,
    /// One of its operations completed: the op number it chose, and what
    /// the ring handed back.
    Done(u32, Completion<Token>),
    /// The turn of the loop it yielded for has come.
    Resume,
    /// The scan of the agents it waited for has landed (or failed).
    Scanned(Result<(), Error>),
    /// The chat refresh it waited for is over: the entry, or why not.
    Refreshed(Result<ChatRef, Error>),
}

/// What a job does next.
pub(crate) enum Step {
    /// Its operations are in flight; the next completion steps it.
    Wait,
    /// Run it again next turn of the loop (`Event::Resume`): a bounded
    /// slice of work is done, or the ring is at `JOB_OPS_MAX`.
    Yield,
    /// Park it until the next scan of the agents has landed.
    WaitScan,
    /// Park it until the agent's chat index is fresh. With `recent`, an
    /// index refreshed less than `refresh::CHAT_FRESH_FOR` ago will do: a
    /// message, once whole, never changes, so what the index already
    /// holds needs no new look (a kernel mount's `ls -l` asks once per
    /// message); what it lacks, and every listing, asks afresh.
    WaitChat { slot: u32, gen: u32, recent: bool },
    /// The request's answer.
    Answer(Result<Reply, Error>),
    /// A job of the daemon's own is over; its waiters are woken with this.
    Finished(Wake),
}

/// The outcome of a job of the daemon's own, as each of its waiters gets it.
#[derive(Clone, Copy, Debug)]
pub(crate) enum Wake {
    Scanned(Result<(), Error>),
    Refreshed(Result<ChatRef, Error>),
}

impl From<Wake> for Event {
    fn from(w: Wake) -> Event {
        match w {
            Wake::Scanned(r) => Event::Scanned(r),
            Wake::Refreshed(r) => Event::Refreshed(r),
        }
    }
}

/// A job's answer, before it meets the connection (`reply::deliver`).
pub(crate) enum Reply {
    /// Bind newfid to `bind` when every name was walked.
    Walk {
        fid: u32,
        newfid: u32,
        qids: Vec<Qid>,
        bind: Option<(Loc, bool)>,
    },
    Stat(Entry),
    Open {
        fid: u32,
        qid: Qid,
        opened: Opened,
    },
    /// A whole Rread message, encoded (its tag already in place).
    Read(Vec<u8>),
    Write {
        count: u32,
    },
}

/// Every kind of parked request.
pub(crate) enum Job {
    Walk(walk::Walk),
    Stat(stat::Stat),
    Open(open::Open),
    Listing(listing::Listing),
    Read(read::Read),
    Derive(derive::Derive),
    Scan(scan::Scan),
    Refresh(Box<refresh::Refresh>),
    Chat(chat::ChatView),
    ChatRead(chat_read::ChatRead),
    Move(Box<moves::Move>),
}

impl Job {
    pub(crate) fn step(&mut self, ev: Event, cx: &mut Cx) -> Step {
        match self {
            Job::Walk(j) => j.step(ev, cx),
            Job::Stat(j) => j.step(ev, cx),
            Job::Open(j) => j.step(ev, cx),
            Job::Listing(j) => j.step(ev, cx),
            Job::Read(j) => j.step(ev, cx),
            Job::Derive(j) => j.step(ev, cx),
            Job::Scan(j) => j.step(ev, cx),
            Job::Refresh(j) => j.step(ev, cx),
            Job::Chat(j) => j.step(ev, cx),
            Job::ChatRead(j) => j.step(ev, cx),
            Job::Move(j) => j.step(ev, cx),
        }
    }

    /// The record is being dropped: hand back what it holds (fds to close
    /// through the ring, counts to give back). Called once, when its last
    /// operation is back.
    pub(crate) fn release(self, cx: &mut Cx) {
        match self {
            Job::Walk(j) => j.release(cx),
            Job::Stat(j) => j.release(cx),
            Job::Open(j) => j.release(cx),
            Job::Listing(j) => j.release(cx),
            Job::Read(j) => j.release(cx),
            Job::Derive(j) => j.release(cx),
            Job::Scan(j) => j.release(cx),
            Job::Refresh(j) => j.release(cx),
            Job::Chat(_) => {}
            Job::ChatRead(j) => j.release(cx),
            Job::Move(j) => j.release(cx),
        }
    }

    /// Bytes the job holds for its connection until it is reaped: a read's
    /// reply buffer (`conn::Conn::charged`).
    pub(crate) fn charge(&self) -> usize {
        match self {
            Job::Read(j) => j.charge(),
            Job::ChatRead(j) => j.charge(),
            _ => 0,
        }
    }

    /// Whether the job will make a new fid if it lands (a walk to another
    /// newfid): it counts against the fid caps while in flight.
    pub(crate) fn reserves_fid(&self) -> bool {
        matches!(self, Job::Walk(w) if w.makes_fid())
    }

    /// A move pins its record: it runs to its end when nobody wants its
    /// reply any more (a Tflush, a hang-up), because it has started to
    /// destroy and must finish creating.
    pub(crate) fn pinned(&self) -> bool {
        matches!(self, Job::Move(_))
    }
}

/// What a job may touch.
pub(crate) struct Cx<'a> {
    pub ops: Ops<'a>,
    pub tree: &'a mut Tree,
    pub agents: &'a mut Agents,
    pub chats: &'a mut Pool,
    pub held: &'a mut Held,
    pub cfg: &'a Config,
    pub real: &'a mut RealPaths,
    /// Agents a move is under way for (a second move of one is refused).
    pub moving: &'a mut std::collections::HashSet<(u32, u32)>,
    /// Bytes of file reads started this turn (`TURN_READ_BYTES_MAX`).
    pub turn_read_bytes: &'a mut usize,
}

impl Cx<'_> {
    /// May a read of `len` bytes start this turn? The first read of a turn
    /// always may, so one larger than the budget still runs.
    pub(crate) fn admit_read(&mut self, len: usize) -> bool {
        let admitted = *self.turn_read_bytes == 0 || *self.turn_read_bytes + len <= TURN_READ_BYTES_MAX;
        if admitted {
            *self.turn_read_bytes += len;
        }
        admitted
    }
}

/// The ring as a job sees it: every operation carries the job's token and
/// is counted, so the record is kept until the kernel is done with it.
pub(crate) struct Ops<'a> {
    pub(crate) ring: &'a mut Ring<Token>,
    pub(crate) key: usize,
    pub(crate) gen: u32,
    pub(crate) in_flight: &'a mut u32,
    pub(crate) job_ops: &'a mut usize,
}

impl Ops<'_> {
    /// Submit `sub` as this job's operation `op`; returns the ring's key
    /// (for a `Sub::Cancel`).
    pub(crate) fn submit(&mut self, op: u32, sub: Sub) -> usize {
        *self.in_flight += 1;
        *self.job_ops += 1;
        self.ring.submit(Token::Req { key: self.key, gen: self.gen, op }, sub)
    }

    /// Close `fd` through the ring; nobody waits on it.
    pub(crate) fn close(&mut self, fd: OwnedFd) {
        self.ring.submit(Token::Discard, Sub::Close { fd });
    }

    /// Cancel an operation of this job (its completion still comes back).
    pub(crate) fn cancel(&mut self, ring_key: usize) {
        self.ring.submit(Token::Discard, Sub::Cancel { key: ring_key });
    }

    /// How many more operations jobs may put in flight now.
    pub(crate) fn room(&self) -> usize {
        JOB_OPS_MAX.saturating_sub(*self.job_ops)
    }
}

/// A `Step::Answer` of an error.
pub(crate) fn fail(e: Error) -> Step {
    Step::Answer(Err(e))
}
