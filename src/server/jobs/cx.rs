//! What every job shares: the context it may touch (`Cx`), the events
//! that step it, the steps it answers, its reply before it meets the
//! connection, and the helper that drives a batch of probes.

use crate::active::agents::Agents;
use crate::chat::digest::FileId;
use crate::chat::pool::{ChatRef, Pool};
use crate::errors::Error;
use crate::proto::Qid;
use crate::ring::Completion;
use crate::tree::{Entry, Loc, Tree};

use super::super::config::Config;
use super::super::fids::Opened;
use super::super::listings::Listings;
use super::super::ops::{Ops, Token};
use super::super::probe::{Batch, Progress};
use super::super::watch::{AgentCursor, AgentKey, MachineCursor, On, ReaderRef, Waits};
use super::super::world::{Held, RealPaths, World};

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
    /// The refresh of a `usage` found the file as its digest says it was
    /// indexed (`chat::digest`): the digest's file.
    Counted(FileId),
    /// The watch it parked on moved: what it reports may have changed.
    Changed,
    /// The observation of an agent it waited for is over: what it found is
    /// on the agent's watch (`Waits::seen`), or why not.
    Observed(Result<(), Error>),
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
    /// Park it until the agent's chat index is as fresh as it `need`s.
    WaitChat { of: ChatOf, need: Need },
    /// Park it until an observation of the agent (its status, whether it
    /// lives) has landed on its watch, sharing one with every other reader.
    WaitObserve(AgentKey),
    /// Park it on an agent's watch (or the machine's, or `/usage/wait`'s) until
    /// something there changes (`Event::Changed`).
    WaitWatch(On),
    /// The request's answer.
    Answer(Result<Reply, Error>),
    /// A job of the daemon's own is over; its waiters are woken with this.
    Finished(Wake),
}

/// Whose chat a job waits for: a running agent's, or a session's (or a
/// subagent's) on disk. Both name a transcript, and the pool keys its
/// index by the file, so the two share one index.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum ChatOf {
    Agent(u32, u32),
    Session(std::rc::Rc<crate::sessions::SessionKey>),
}

/// How fresh a chat index a job needs (`Step::WaitChat`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Need {
    /// An index refreshed less than `refresh::CHAT_FRESH_FOR` ago will do:
    /// a message, once whole, never changes, so what the index already
    /// holds needs no new look (a kernel mount's `ls -l` asks once per
    /// message); what it lacks, and every listing, asks afresh.
    Recent,
    /// Refreshed now.
    Now,
    /// Refreshed now, for a `wait` reader's count of messages: its pool
    /// entry may be made past `--max-chats` (its watch pins it).
    Watched,
    /// For a `usage`: as `Recent`, and a file that is as its digest says
    /// it was indexed needs no index at all (`Event::Counted`).
    Usage,
}

/// The outcome of a job of the daemon's own, as each of its waiters gets it.
#[derive(Clone, Copy, Debug)]
pub(crate) enum Wake {
    Scanned(Result<(), Error>),
    Refreshed(Result<ChatRef, Error>),
    Counted(FileId),
    Observed(Result<(), Error>),
}

impl From<Wake> for Event {
    fn from(w: Wake) -> Event {
        match w {
            Wake::Scanned(r) => Event::Scanned(r),
            Wake::Refreshed(r) => Event::Refreshed(r),
            Wake::Counted(f) => Event::Counted(f),
            Wake::Observed(r) => Event::Observed(r),
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
        /// What the look at the last name saw, when it was a file on disk.
        look: Option<Box<crate::meta::Meta>>,
    },
    /// A stat's entry, and the file's meta where it is on disk (9P2000.L's
    /// Rgetattr says more than 9P2000's stat holds).
    Stat(Entry, Option<Box<crate::meta::Meta>>),
    Open {
        fid: u32,
        qid: Qid,
        opened: Opened,
    },
    /// A disk directory's open: its snapshot, and each entry's statx,
    /// kept on the connection for the walks that follow (`LISTING_REUSE_FOR_MS`).
    Listed {
        fid: u32,
        qid: Qid,
        entries: std::rc::Rc<Vec<Entry>>,
        metas: Vec<crate::meta::Meta>,
        /// The directory, open (`conn::Listed::dir_fd`).
        dir: Option<std::os::fd::OwnedFd>,
    },
    /// A whole Rread message, encoded (its tag already in place).
    Read(Vec<u8>),
    Write {
        count: u32,
    },
    /// A `wait` read's lines (a whole Rread), and the cursor its reader
    /// takes once they are delivered (`None`: it stays).
    Wait {
        reader: ReaderRef,
        bytes: Vec<u8>,
        cursor: Option<Cursor>,
    },
}

/// Where a `wait` reader's cursor moves when its lines are delivered.
pub(crate) enum Cursor {
    Agent(AgentCursor),
    Machine(Box<MachineCursor>),
    /// `/usage/wait`'s: the block reported (`BlockLine::key`).
    Usage(std::rc::Rc<[u8]>),
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
    /// The `wait` readers and the watches that wake them.
    pub waits: &'a mut Waits,
    /// Harness directories' listings, kept and checked.
    pub listings: &'a mut Listings,
    /// The last `/usage` reports settled, and their home's fingerprint.
    pub last_report: &'a mut Option<(u64, std::rc::Rc<crate::reports::book::Settled>)>,
    /// The searches open now, each with where it stands.
    pub searches: &'a mut super::super::searches::Searches,
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

impl<'a> Cx<'a> {
    /// The context of the job in record `key`.
    pub(crate) fn of(w: &'a mut World, key: usize, gen: u32, in_flight: &'a mut u32) -> Cx<'a> {
        Cx {
            ops: Ops { ring: &mut w.ring, key, gen, in_flight, job_ops: &mut w.job_ops, bases: &mut w.bases },
            tree: &mut w.tree,
            agents: &mut w.agents,
            chats: &mut w.chats,
            held: &mut w.held,
            cfg: &w.cfg,
            real: &mut w.real,
            moving: &mut w.moving,
            turn_read_bytes: &mut w.turn_read_bytes,
            waits: &mut w.waits,
            listings: &mut w.listings,
            last_report: &mut w.last_report,
            searches: &mut w.searches,
        }
    }
}

/// A `Step::Answer` of an error.
pub(crate) fn fail(e: Error) -> Step {
    Step::Answer(Err(e))
}

/// Drive `batch` on `ev`: `Ok` once every probe is done, else the step the
/// job returns meanwhile (wait for completions, or yield a turn).
///
/// The completion that finishes a batch only records it: the job goes on
/// from a `Yield`, after the loop has sent the replies this turn's
/// completions made, so the work a batch unblocks (a thousand entries
/// made, a listing sorted) never delays another client's cheap answer.
pub(crate) fn drive(batch: &mut Batch, ops: &mut Ops, ev: Event) -> Result<(), Step> {
    drive_then(batch, ops, ev, true)
}

/// `drive` for one look whose outcome is a few lines of work — an entry
/// and an answer, or the next name's look, or the open the look allowed:
/// the job goes on at once from the completion that finished it. A yield
/// there bought no fairness (there is nothing large to put after other
/// clients' answers) and cost a submit of its own: the look's close went
/// to the kernel before the answer did, one `io_uring_enter` more a look
/// (bench/README, "Fewer operations a look").
pub(crate) fn drive_look(batch: &mut Batch, ops: &mut Ops, ev: Event) -> Result<(), Step> {
    debug_assert_eq!(batch.probes.len(), 1, "a look is one probe");
    drive_then(batch, ops, ev, false)
}

fn drive_then(batch: &mut Batch, ops: &mut Ops, ev: Event, yield_after: bool) -> Result<(), Step> {
    let (progress, landed) = match ev {
        Event::Done(op, c) => (batch.on_done(ops, op, c), true),
        _ => (batch.pump(ops), false),
    };
    match progress {
        Progress::Complete if landed && yield_after => Err(Step::Yield),
        Progress::Complete => Ok(()),
        Progress::Running => Err(Step::Wait),
        Progress::Stalled => Err(Step::Yield),
    }
}
