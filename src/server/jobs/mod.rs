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
//! | `wait.rs` | an open or read of an agent's `wait`: parks until the agent changes | Ropen, Rread |
//! | `wait_all.rs` | the same for `/active/wait` | Ropen, Rread |
//! | `session.rs` | a listing of `/sessions/<h>`, a session's directory, fields, `agents/` | Rstat, Ropen |

pub(crate) mod all_sessions;
pub(crate) mod chat;
pub(crate) mod chat_read;
pub(crate) mod cx;
pub(crate) mod derive;
pub(crate) mod gather;
pub(crate) mod inflate;
pub(crate) mod listing;
pub(crate) mod moves;
pub(crate) mod observe;
pub(crate) mod open;
pub(crate) mod raw_look;
pub(crate) mod read;
pub(crate) mod refresh;
pub(crate) mod report;
pub(crate) mod scan;
pub(crate) mod search;
pub(crate) mod session;
pub(crate) mod sessions_list;
pub(crate) mod stat;
pub(crate) mod usage;
pub(crate) mod wait;
pub(crate) mod wait_all;
pub(crate) mod walk;

pub(crate) use cx::{ChatOf, Cx, Event, Need, Reply, Step, Wake};

/// What a check step decided (`dispatch`, `dotl`): answered already
/// (`None`), a job to park, or a refusal.
pub(crate) type Decided = Result<Option<Job>, crate::errors::Error>;

/// Every kind of parked request.
pub(crate) enum Job {
    Walk(Box<walk::Walk>),
    Stat(Box<stat::Stat>),
    Open(Box<open::Open>),
    Listing(Box<listing::Listing>),
    Read(read::Read),
    Derive(Box<derive::Derive>),
    Scan(Box<scan::Scan>),
    Refresh(Box<refresh::Refresh>),
    Chat(chat::ChatView),
    ChatRead(Box<chat_read::ChatRead>),
    Move(Box<moves::Move>),
    Wait(wait::Wait),
    Observe(Box<observe::Observe>),
    WaitAll(Box<wait_all::WaitAll>),
    Session(Box<session::Session>),
    SessionsList(Box<sessions_list::SessionsList>),
    Report(Box<report::UsageReport>),
    Search(Box<search::SearchRead>),
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
            Job::Wait(j) => j.step(ev, cx),
            Job::Observe(j) => j.step(ev, cx),
            Job::WaitAll(j) => j.step(ev, cx),
            Job::Session(j) => j.step(ev, cx),
            Job::SessionsList(j) => j.step(ev, cx),
            Job::Report(j) => j.step(ev, cx),
            Job::Search(j) => j.step(ev, cx),
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
            Job::Wait(j) => j.release(cx),
            Job::Observe(j) => j.release(cx),
            Job::WaitAll(j) => j.release(cx),
            Job::Session(j) => j.release(cx),
            Job::SessionsList(j) => j.release(cx),
            Job::Report(j) => j.release(cx),
            Job::Search(j) => j.release(cx),
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

    /// A read of a `wait` file parks for as long as nothing changes; it
    /// holds no buffer, and does not count against a connection's cap on
    /// ordinary parked requests (`--max-waits` bounds them instead).
    pub(crate) fn is_wait(&self) -> bool {
        match self {
            Job::Wait(_) | Job::WaitAll(_) => true,
            Job::Report(r) => r.is_wait(),
            _ => false,
        }
    }

    /// A move pins its record: it runs to its end when nobody wants its
    /// reply any more (a Tflush, a hang-up), because it has started to
    /// destroy and must finish creating.
    pub(crate) fn pinned(&self) -> bool {
        matches!(self, Job::Move(_))
    }
}
