//! Parked requests: a request that needs the disk is a `Req` record that
//! its completions resume, answered exactly once when its job ends.
//!
//! Parking is one mechanism for everything that waits: the request's tag
//! goes into its connection's `parked` table, and `answer` sends the reply
//! only if that tag still names this record. A Tflush, a Tversion or a
//! hang-up removes the tag, and the record simply finishes its operations
//! (they own their buffers and fds) and is dropped without a reply.

use std::ffi::CString;
use std::os::fd::{AsRawFd, OwnedFd};
use std::rc::Rc;

use crate::errors::Error;
use crate::proto::{self, Qid, Rmsg, WalkQids};
use crate::ring::{Completion, Sub};
use crate::tree::{exclude, Attr, Field, Loc, Meta, Part, Presence};

use super::gather::Gathering;

use super::conn::{DirEntry, Fid, Opened};
use super::probe::{Kind, Probe, Target};
use super::{Server, Token};

/// A walk in progress: the names left, where it stands, the qids so far.
pub struct WalkState {
    pub fid: u32,
    pub newfid: u32,
    pub names: Vec<Vec<u8>>,
    pub cur: Loc,
    pub cur_is_dir: bool,
    pub qids: Vec<Qid>,
    /// The place the probe in flight looks at.
    pub next: Option<Loc>,
    /// Whether this walk already waited for a rescan of /proc.
    pub scanned: bool,
    /// Whether this walk already waited for a chat refresh.
    pub chat_waited: bool,
    /// The agent field the walk is deriving (its presence and its qid's
    /// version are its text's), and the facts gathered for it.
    pub field: Option<(u32, u32, Pending)>,
    pub g: Gathering,
}

pub enum Job {
    Walk(WalkState),
    Stat {
        loc: Loc,
    },
    Open {
        fid: u32,
        loc: Loc,
        stage: OpenStage,
        /// The qid Ropen answers (the directory's or the file's).
        qid: Qid,
        /// The places a listing's probes look at, in probe order, and the
        /// entries already known without the disk.
        pending: Vec<Loc>,
        entries: Vec<DirEntry>,
        /// Whether the agents were scanned for this listing (`/active`).
        scanned: bool,
    },
    Read {
        fid: u32,
        file: Rc<OwnedFd>,
    },
    /// A derivation over facts gathered through the ring (`gather`).
    Gather {
        d: Derivation,
        g: Gathering,
    },
    /// A move of an agent into a zmx session (`moves`).
    Move(Box<super::moves::Move>),
    /// A refresh of an agent's chat index (internal; `chat`).
    Chat(Box<super::chat::Refresh>),
    /// A read of one chat message: the plan, once the index made one, and
    /// the transcript's fd, held until the read is back (a refresh may
    /// replace the entry's meanwhile).
    ChatRead {
        entry: (usize, u32),
        plan: Option<crate::chat::ReadPlan>,
        file: Option<Rc<OwnedFd>>,
    },
}

/// A walk's step onto a derived node: which, while it is derived.
#[derive(Clone, Debug)]
pub enum Pending {
    Field(Field),
    /// `agents/<name>`: there when the session lists that subagent.
    Sub(Vec<u8>),
    /// `agents/<name>/model`: there when its transcript names a model.
    SubModel(u32),
}

/// What a gathering derives, and for whom.
#[derive(Clone, Copy)]
pub enum Derivation {
    /// The scan of the agents (an internal request: no client waits on
    /// it directly; requests that need it wait in `scan_waiters`).
    Scan,
    /// One agent's fields, for a stat, an open, or a listing of its
    /// directory.
    Fields { slot: u32, gen: u32, purpose: Purpose },
    /// A claude session's subagents (`agents/`).
    Sub { slot: u32, gen: u32, purpose: SubPurpose },
}

#[derive(Clone, Copy)]
pub enum SubPurpose {
    ListAgents { fid: u32 },
    ListSub { fid: u32, i: u32 },
    OpenModel { fid: u32, i: u32 },
    StatModel(u32),
}

#[derive(Clone, Copy)]
pub enum Purpose {
    Stat(Field),
    Open { fid: u32, field: Field },
    List { fid: u32 },
}

#[derive(Clone, Copy, PartialEq, Eq)]
pub enum OpenStage {
    /// Looking (O_PATH) at what the fid names.
    Look,
    /// Opening a regular file or a directory for reading.
    Open,
    /// Stat'ing a listing's entries.
    List,
}

pub struct Req {
    /// A pinned request runs to its end even when no client wants its
    /// reply any more (a move).
    pub pinned: bool,
    /// An internal request (the scan) answers no client; it is wanted
    /// until it has finished.
    pub internal: bool,
    /// Whether this request already waited for a chat refresh.
    pub chat_waited: bool,
    pub finished: bool,
    pub conn: usize,
    pub conn_gen: u32,
    pub tag: u16,
    pub gen: u32,
    pub job: Job,
    pub probes: Vec<Probe>,
    /// Operations submitted for this record and not yet completed.
    pub in_flight: usize,
    /// A directory held open while its entries are stat'd.
    pub dir: Option<OwnedFd>,
}

/// A job's answer, or that it is waiting on more operations.
pub(super) enum Step {
    /// An internal request is done (it answers no client).
    Finished,
    /// A walk reached an agent's field: derive it (`Server::walk_field`).
    WalkField,
    Wait,
    /// Wait for the next scan of the agents.
    Scan,
    /// Wait for a refresh of this agent's chat index.
    Chat(u32, u32),
    Answer(Result<Reply, Error>),
}

pub(super) enum Reply {
    Walk { newfid: u32, fid: u32, qids: Vec<Qid>, bind: Option<(Loc, bool)> },
    Stat { loc: Loc, attr: Attr },
    Open { fid: u32, qid: Qid, opened: Opened },
    Read { bytes: Vec<u8> },
    Write { count: u32 },
}

impl Req {
    /// A request of the daemon's own, answering no client (the scan).
    pub(super) fn internal(gen: u32, job: Job) -> Req {
        Req {
            chat_waited: false,
            pinned: false,
            internal: true,
            finished: false,
            conn: usize::MAX,
            conn_gen: 0,
            tag: crate::proto::NOTAG,
            gen,
            job,
            probes: Vec::new(),
            in_flight: 0,
            dir: None,
        }
    }
}

impl Server {
    /// Park `job` for the request `tag` on connection `idx` and start it.
    pub(super) fn park(&mut self, idx: usize, tag: u16, job: Job) {
        let key = self.insert_parked(idx, tag, job, false);
        let step = self.kick(key);
        self.settle(key, step);
    }

    /// The one way a request is parked: a record in the slab, and its tag
    /// in the connection's table. `pinned` runs it to its end whatever the
    /// client does (a move).
    pub(super) fn insert_parked(&mut self, idx: usize, tag: u16, job: Job, pinned: bool) -> usize {
        self.next_req_gen = self.next_req_gen.wrapping_add(1);
        let conn = &mut self.conns[idx];
        let mut req = Req::internal(self.next_req_gen, job);
        (req.pinned, req.internal, req.conn, req.conn_gen, req.tag) = (pinned, false, idx, conn.gen, tag);
        let key = self.reqs.insert(req);
        conn.parked.insert(tag, key);
        key
    }

    /// Start (or continue) whatever the job needs next.
    pub(super) fn kick(&mut self, key: usize) -> Step {
        let req = &mut self.reqs[key];
        match &mut req.job {
            Job::Walk(w) => {
                let step = walk_next(&self.tree, w, &mut req.probes);
                self.walk_on(key, step)
            }
            Job::Stat { loc: Loc::Agent { slot, gen, part: Part::ChatMsg(id) } } => {
                let (slot, gen, id) = (*slot, *gen, *id);
                if !req.chat_waited {
                    return Step::Chat(slot, gen);
                }
                self.chat_msg_stat(slot, gen, id)
            }
            Job::Stat { loc: Loc::Agent { slot, gen, part: Part::SubModel(i) } } => {
                let d = Derivation::Sub { slot: *slot, gen: *gen, purpose: SubPurpose::StatModel(*i) };
                req.job = Job::Gather { d, g: Gathering::default() };
                self.gather_step(key)
            }
            Job::Stat { loc: Loc::Agent { slot, gen, part: Part::Field(field) } } => {
                let d = Derivation::Fields { slot: *slot, gen: *gen, purpose: Purpose::Stat(*field) };
                req.job = Job::Gather { d, g: Gathering::default() };
                self.gather_step(key)
            }
            Job::Stat { loc } => match self.tree.presence(loc) {
                Presence::Always => Step::Answer(Ok(Reply::Stat { loc: loc.clone(), attr: Attr::Skeleton })),
                Presence::Absent => Step::Answer(Err(Error::NotFound)),
                Presence::Probe(b) => {
                    req.probes.push(Probe::new(Target::Beneath(b), Kind::Look));
                    Step::Wait
                }
            },
            Job::Open { fid, loc: Loc::Agent { slot, gen, part: part @ (Part::Chat | Part::ChatMsg(_)) }, .. } => {
                let (fid, slot, gen, part) = (*fid, *slot, *gen, *part);
                if !req.chat_waited {
                    return Step::Chat(slot, gen);
                }
                self.chat_open(fid, slot, gen, part)
            }
            Job::Open {
                fid,
                loc: Loc::Agent { slot, gen, part: part @ (Part::Agents | Part::Sub(_) | Part::SubModel(_)) },
                ..
            } => {
                let purpose = match *part {
                    Part::Agents => SubPurpose::ListAgents { fid: *fid },
                    Part::Sub(i) => SubPurpose::ListSub { fid: *fid, i },
                    Part::SubModel(i) => SubPurpose::OpenModel { fid: *fid, i },
                    _ => unreachable!(),
                };
                let d = Derivation::Sub { slot: *slot, gen: *gen, purpose };
                req.job = Job::Gather { d, g: Gathering::default() };
                self.gather_step(key)
            }
            Job::Open { fid, loc: Loc::Agent { slot, gen, part }, .. }
                if matches!(part, Part::Dir | Part::Field(_)) =>
            {
                if self.tree.agents.get(*slot, *gen).is_none() {
                    return Step::Answer(Err(Error::NotFound));
                }
                let purpose = match part {
                    Part::Field(field) => Purpose::Open { fid: *fid, field: *field },
                    _ => Purpose::List { fid: *fid },
                };
                let d = Derivation::Fields { slot: *slot, gen: *gen, purpose };
                req.job = Job::Gather { d, g: Gathering::default() };
                self.gather_step(key)
            }
            Job::Open { loc, .. } => match self.tree.presence(loc) {
                Presence::Absent => Step::Answer(Err(Error::NotFound)),
                Presence::Always => self.open_static(key),
                Presence::Probe(b) => {
                    req.probes.push(Probe::new(Target::Beneath(b), Kind::Look));
                    Step::Wait
                }
            },
            // These submit their own operations when parked.
            Job::Read { .. } | Job::Move(_) | Job::Chat(_) | Job::ChatRead { .. } => Step::Wait,
            Job::Gather { .. } => self.gather_step(key),
        }
    }

    /// After a step: submit new probes, or answer.
    pub(super) fn settle(&mut self, key: usize, step: Step) {
        match step {
            Step::WalkField => unreachable!("walk_on resolves it"),
            Step::Finished => self.reqs[key].finished = true,
            Step::Wait => self.start_probes(key),
            Step::Scan => self.wait_for_scan(key),
            Step::Chat(slot, gen) => self.wait_for_chat(key, slot, gen),
            Step::Answer(result) => self.answer(key, result),
        }
        self.reap(key);
    }

    fn start_probes(&mut self, key: usize) {
        let req = &mut self.reqs[key];
        let gen = req.gen;
        for (i, p) in req.probes.iter_mut().enumerate() {
            if !p.started {
                p.start(&mut self.ring, Token::Probe(key, gen, i as u32));
                req.in_flight += 1;
            }
        }
    }

    /// A probe's operation completed.
    pub(super) fn on_probe(&mut self, key: usize, gen: u32, i: u32, c: Completion<Token>) {
        let Some(req) = self.reqs.get_mut(key).filter(|r| r.gen == gen) else { return };
        req.in_flight -= 1;
        let token = Token::Probe(key, gen, i);
        let probe = &mut req.probes[i as usize];
        if !probe.step(&mut self.ring, token, c) {
            req.in_flight += 1;
            return;
        }
        if !self.wanted(key) && !self.reqs[key].pinned {
            // Flushed or hung up: let the rest come back, then drop it.
            return self.reap(key);
        }
        let req = &self.reqs[key];
        if req.probes.iter().all(|p| p.done()) {
            let step = self.resume(key);
            self.settle(key, step);
        }
    }

    /// Every probe of the batch is done: move the job on.
    fn resume(&mut self, key: usize) -> Step {
        let req = &mut self.reqs[key];
        let probes = std::mem::take(&mut req.probes);
        match &mut req.job {
            Job::Walk(w) if w.field.is_some() => {
                let mut g = std::mem::take(&mut w.g);
                let close = self.absorb(&mut g, probes);
                for fd in close {
                    self.ring.submit(Token::Discard, Sub::Close { fd });
                }
                if let Job::Walk(w) = &mut self.reqs[key].job {
                    w.g = g;
                }
                self.walk_on(key, Step::WalkField)
            }
            Job::Walk(w) => {
                let next = w.next.take().expect("a walk probes only its next place");
                let found = probes[0].result.unwrap_or(Err(libc::ENOENT));
                match found {
                    Ok(m) if self.tree.is_harness_dir(&next) && !m.is_dir() => {}
                    Ok(m) => {
                        let harness = self.tree.is_harness_dir(&next);
                        let qid = match &next {
                            Loc::Static(i) if harness => self.tree.static_qid(*i),
                            _ => m.qid(),
                        };
                        w.qids.push(qid);
                        w.cur_is_dir = harness || m.is_dir();
                        w.cur = next;
                        let step = walk_next(&self.tree, w, &mut req.probes);
                        return self.walk_on(key, step);
                    }
                    Err(_) => {}
                }
                walk_end(w)
            }
            Job::Stat { loc } => match probes[0].result.unwrap_or(Err(libc::ENOENT)) {
                Ok(m) if self.tree.is_harness_dir(loc) && m.is_dir() => {
                    Step::Answer(Ok(Reply::Stat { loc: loc.clone(), attr: Attr::Skeleton }))
                }
                Ok(m) if !self.tree.is_harness_dir(loc) => {
                    Step::Answer(Ok(Reply::Stat { loc: loc.clone(), attr: Attr::Disk(m) }))
                }
                _ => Step::Answer(Err(Error::NotFound)),
            },
            Job::Open { .. } => self.open_resumed(key, probes),
            Job::Read { .. } => Step::Wait,
            // A move's one probe reads the agent's stat.
            Job::Move(_) => self.move_identity_read(key, &probes[0].data),
            // A chat refresh's one probe opens the transcript.
            Job::Chat(_) => self.chat_opened(key, probes),
            Job::ChatRead { .. } => Step::Wait,
            Job::Gather { g, .. } => {
                let mut g = std::mem::take(g);
                let close = self.absorb(&mut g, probes);
                for fd in close {
                    self.ring.submit(Token::Discard, Sub::Close { fd });
                }
                if let Job::Gather { g: slot, .. } = &mut self.reqs[key].job {
                    *slot = g;
                }
                self.gather_step(key)
            }
        }
    }
}

impl Server {
    /// Park a read of an open file: one pread through the ring, straight
    /// into the reply's buffer.
    pub(super) fn park_read(&mut self, idx: usize, tag: u16, fid: u32, file: Rc<OwnedFd>, offset: u64, count: u32) {
        let fd = file.as_raw_fd();
        let mut buf = Vec::with_capacity(count as usize + 11);
        proto::rread_begin(&mut buf, tag);
        let key = self.insert_parked(idx, tag, Job::Read { fid, file }, false);
        let req = &mut self.reqs[key];
        req.in_flight = 1;
        self.ring.submit(Token::Read(key, req.gen), Sub::Read { fd, owned: None, buf, len: count, offset });
    }

    pub(super) fn on_read(&mut self, key: usize, gen: u32, c: Completion<Token>) {
        let Some(req) = self.reqs.get_mut(key).filter(|r| r.gen == gen) else { return };
        req.in_flight -= 1;
        let result = if c.result < 0 {
            Err(io_error(-c.result))
        } else {
            let mut bytes = c.buf;
            proto::rread_finish(&mut bytes, 0);
            Ok(Reply::Read { bytes })
        };
        self.answer(key, result);
        self.reap(key);
    }

    /// Is the request still wanted: does its tag still name this record on
    /// a live connection?
    fn wanted(&self, key: usize) -> bool {
        let req = &self.reqs[key];
        if req.internal {
            return !req.finished;
        }
        self.conns.get(req.conn).is_some_and(|c| c.gen == req.conn_gen && c.parked.get(&req.tag) == Some(&key))
    }

    /// Send the job's answer, if the request is still wanted: its tag must
    /// still name this record on a live connection.
    pub(super) fn answer(&mut self, key: usize, result: Result<Reply, Error>) {
        if !self.wanted(key) {
            return;
        }
        let (idx, tag) = (self.reqs[key].conn, self.reqs[key].tag);
        let trace = self.cfg.trace;
        let conn = &mut self.conns[idx];
        conn.parked.remove(&tag);
        let reply = match result {
            Ok(r) => r,
            Err(e) => {
                let (text, errno) = e.entry();
                conn.reply(tag, &Rmsg::Error { ename: text.as_bytes(), errno }, trace);
                return self.dirty.push(idx);
            }
        };
        match reply {
            Reply::Walk { newfid, fid, bind: Some(_), .. } if newfid != fid && conn.fids.contains_key(&newfid) => {
                // Another request took newfid while this walk was parked.
                let (text, errno) = Error::FidInUse.entry();
                conn.reply(tag, &Rmsg::Error { ename: text.as_bytes(), errno }, trace);
            }
            Reply::Walk { newfid, fid, qids, bind } => {
                if let Some((loc, is_dir)) = bind {
                    let node = self.tree.bind(&loc);
                    if let Some(old) = conn.fids.insert(newfid, Fid::new(node, is_dir)) {
                        debug_assert_eq!(fid, newfid);
                        self.tree.release(old.node);
                        release_opened(&mut self.ring, &mut self.held, old.open);
                    }
                }
                let qids = WalkQids::new(&qids).expect("at most MAXWELEM names");
                conn.reply(tag, &Rmsg::Walk { qids }, trace);
            }
            Reply::Stat { loc, attr } => {
                self.tree.with_stat(&loc, &attr, |st| conn.reply(tag, &Rmsg::Stat { stat: *st }, trace));
            }
            Reply::Open { opened: Opened::Dir(entries), .. }
                if self.held.entries + entries.len() > self.cfg.max_listed_entries =>
            {
                let (text, errno) = Error::TooManyOpenFiles.entry();
                conn.reply(tag, &Rmsg::Error { ename: text.as_bytes(), errno }, trace);
            }
            Reply::Open { fid, qid, opened } => match conn.fids.get_mut(&fid) {
                Some(f) if f.open.is_none() => {
                    if let Opened::Dir(entries) = &opened {
                        self.held.entries += entries.len();
                    }
                    f.open = Some(opened);
                    f.dir_offset = 0;
                    f.dir_index = 0;
                    let iounit = conn.msize - proto::IOHDRSZ;
                    conn.reply(tag, &Rmsg::Open { qid, iounit }, trace);
                }
                _ => {
                    // Only an fd was counted before binding; entries are
                    // counted when a fid takes them.
                    if let Opened::File(_) = opened {
                        release_opened(&mut self.ring, &mut self.held, Some(opened));
                    }
                    let (text, errno) = Error::UnknownFid.entry();
                    conn.reply(tag, &Rmsg::Error { ename: text.as_bytes(), errno }, trace);
                }
            },
            Reply::Write { count } => conn.reply(tag, &Rmsg::Write { count }, trace),
            Reply::Read { bytes } => {
                if trace {
                    eprintln!("-{}-> Rread tag {tag} count {}", conn.id, bytes.len() - 11);
                }
                conn.outq.extend_from_slice(&bytes);
            }
        }
        self.dirty.push(idx);
    }

    /// Drop a record whose job has answered and whose operations are all
    /// back, closing what it held through the ring.
    pub(super) fn reap(&mut self, key: usize) {
        if self.reqs[key].in_flight > 0 || self.reqs[key].pinned || self.wanted(key) {
            return;
        }
        let req = self.reqs.remove(key);
        if let Some(fd) = req.dir {
            self.ring.submit(Token::Discard, Sub::Close { fd });
        }
        for p in req.probes {
            if let Some(fd) = p.fd {
                self.ring.submit(Token::Discard, Sub::Close { fd });
            }
        }
        if let Job::Read { file, .. } | Job::ChatRead { file: Some(file), .. } = req.job {
            release_opened(&mut self.ring, &mut self.held, Some(Opened::File(file)));
        }
    }
}

/// Close a fid's open file through the ring once nothing else holds it.
pub(super) fn release_opened(ring: &mut crate::ring::Ring<Token>, held: &mut Held, opened: Option<Opened>) {
    match opened {
        Some(Opened::File(rc)) => {
            if let Ok(fd) = Rc::try_unwrap(rc) {
                held.files -= 1;
                ring.submit(Token::Discard, Sub::Close { fd });
            }
        }
        Some(Opened::Dir(rc)) if Rc::strong_count(&rc) == 1 => held.entries -= rc.len(),
        _ => {}
    }
}

/// What open fids hold, across all connections: fds (`OPEN_FILES_MAX`)
/// and directory entries snapshotted at Topen (`LISTED_ENTRIES_MAX`).
#[derive(Default, Debug)]
pub struct Held {
    pub files: usize,
    pub entries: usize,
}

/// The default of `--max-listed-entries`: directory entries held by open
/// directory fids, across all connections. A snapshot costs about 120 bytes
/// an entry, so this bounds them near 128 MB however many fids clients open
/// on large directories; past it a directory's Topen answers `Too many
/// open files in system`.
pub const LISTED_ENTRIES_MAX: usize = 1 << 20;

/// The error a failed read of a file on disk answers.
fn io_error(errno: i32) -> Error {
    match errno {
        libc::EISDIR => Error::IsDir,
        _ => Error::Io,
    }
}

/// What the next name of a walk names.
enum Next {
    To(Loc),
    Missing,
    /// The walk must wait (a rescan, a chat refresh, a derivation) or
    /// answer now.
    Stop(Step),
    /// The step was taken here (a chat message: its qid came from the index).
    Took,
}

/// The place the walk's next name names, from where it stands.
fn next_place(tree: &crate::tree::Tree, w: &mut WalkState) -> Next {
    let name = w.names[w.qids.len()].clone();
    if name == b".." {
        return Next::To(tree.parent(&w.cur));
    }
    let found = match w.cur.clone() {
        Loc::Static(d) => match tree.active_harness(d) {
            None => tree.static_child(d, &name),
            Some(h) => match parse_pid(&name).and_then(|pid| tree.agents.find(h, pid)) {
                Some((slot, gen)) => Some(Loc::Agent { slot, gen, part: Part::Dir }),
                // A walk that misses under /active rescans once.
                None if !w.scanned => {
                    w.scanned = true;
                    return Next::Stop(Step::Scan);
                }
                None => match tree.agents.scan_error {
                    Some(e) if w.qids.is_empty() => return Next::Stop(Step::Answer(Err(e))),
                    _ => None,
                },
            },
        },
        Loc::Mirror(_) if exclude::excluded(&name) => None,
        Loc::Mirror(p) => Some(Loc::Mirror(p.child(&name))),
        Loc::Agent { slot, gen, part: Part::Dir } => Part::child(&name).map(|part| Loc::Agent { slot, gen, part }),
        Loc::Agent { slot, gen, part: Part::Agents } => {
            w.field = Some((slot, gen, Pending::Sub(name)));
            w.next = Some(w.cur.clone());
            return Next::Stop(Step::WalkField);
        }
        Loc::Agent { slot, gen, part: Part::Sub(i) } => match name.as_slice() {
            b"model" => Some(Loc::Agent { slot, gen, part: Part::SubModel(i) }),
            b"transcript" => Some(Loc::Agent { slot, gen, part: Part::SubTranscript(i) }),
            _ => None,
        },
        Loc::Agent { slot, gen, part: Part::Chat } => return next_message(tree, w, slot, gen, &name),
        Loc::Agent { .. } => None,
    };
    found.map_or(Next::Missing, Next::To)
}

/// A name in `chat/`: the index (made fresh first) says which message.
fn next_message(tree: &crate::tree::Tree, w: &mut WalkState, slot: u32, gen: u32, name: &[u8]) -> Next {
    if !w.chat_waited {
        w.chat_waited = true;
        return Next::Stop(Step::Chat(slot, gen));
    }
    if let Some(e) = tree.agents.get(slot, gen).and_then(|a| a.chat_error) {
        return if w.qids.is_empty() { Next::Stop(Step::Answer(Err(e))) } else { Next::Missing };
    }
    let id = tree.chat_of(slot, gen).and_then(|e| e.index.lookup(name));
    match id.and_then(|id| Some((id as u32, tree.chat_msg_qid(slot, gen, id as u32)?))) {
        Some((id, qid)) => {
            w.qids.push(qid);
            w.cur = Loc::Agent { slot, gen, part: Part::ChatMsg(id) };
            w.cur_is_dir = false;
            Next::Took
        }
        None => Next::Missing,
    }
}

/// Walk on from where `w` stands: skeleton steps are answered at once, a
/// step onto the disk pushes a probe and waits.
pub(super) fn walk_next(tree: &crate::tree::Tree, w: &mut WalkState, probes: &mut Vec<Probe>) -> Step {
    while w.qids.len() < w.names.len() && w.cur_is_dir {
        let next = match next_place(tree, w) {
            Next::To(l) => l,
            Next::Missing => break,
            Next::Stop(step) => return step,
            Next::Took => continue,
        };
        if let Loc::Agent { slot, gen, part: Part::Field(f) } = next {
            w.field = Some((slot, gen, Pending::Field(f)));
            w.next = Some(next);
            return Step::WalkField;
        }
        if let Loc::Agent { slot, gen, part: Part::SubModel(i) } = next {
            w.field = Some((slot, gen, Pending::SubModel(i)));
            w.next = Some(next);
            return Step::WalkField;
        }
        match tree.presence(&next) {
            Presence::Absent => break,
            Presence::Probe(b) => {
                probes.push(Probe::new(Target::Beneath(b), Kind::Look));
                w.next = Some(next);
                return Step::Wait;
            }
            Presence::Always => {
                w.qids.push(tree.skeleton_qid(&next));
                w.cur_is_dir = match next {
                    Loc::Static(i) => tree.static_is_dir(i),
                    Loc::Agent { part, .. } => part.is_dir(),
                    Loc::Mirror(_) => unreachable!("a mirror is probed"),
                };
                w.cur = next;
            }
        }
    }
    walk_end(w)
}

/// A pid as /proc spells it: decimal, no sign, no leading zero.
fn parse_pid(name: &[u8]) -> Option<u32> {
    if name.is_empty() || name.len() > 10 || (name[0] == b'0') || !name.iter().all(u8::is_ascii_digit) {
        return None;
    }
    std::str::from_utf8(name).ok()?.parse().ok()
}

/// walk(5)'s answer: all names walked binds newfid; none is an error;
/// some is a partial Rwalk and newfid stays unmade.
pub(super) fn walk_end(w: &mut WalkState) -> Step {
    if w.qids.is_empty() && !w.names.is_empty() {
        return Step::Answer(Err(Error::NotFound));
    }
    let bind = (w.qids.len() == w.names.len()).then(|| (w.cur.clone(), w.cur_is_dir));
    Step::Answer(Ok(Reply::Walk { newfid: w.newfid, fid: w.fid, qids: std::mem::take(&mut w.qids), bind }))
}

/// Files held open for open fids, across all connections. A fid opened on
/// a file keeps its fd, so a file unlinked while open stays readable and a
/// read resolves no path; past this many the Topen is refused, so what
/// clients do never runs the daemon out of descriptors.
pub const OPEN_FILES_MAX: usize = 4096;

impl Server {
    /// Topen of a skeleton node: a fact opens at once; a directory lists its
    /// skeleton children, asking the disk about those that live there.
    fn open_static(&mut self, key: usize) -> Step {
        let Job::Open { fid, loc: Loc::Static(i), scanned, .. } = &mut self.reqs[key].job else { unreachable!() };
        let (fid, i) = (*fid, *i);
        if !self.tree.static_is_dir(i) {
            let qid = self.tree.static_qid(i);
            return Step::Answer(Ok(Reply::Open { fid, qid, opened: Opened::Fact }));
        }
        // A listing of /active or of a harness under it rescans first.
        let active = i == crate::tree::ACTIVE || self.tree.active_harness(i).is_some();
        if active && !*scanned {
            *scanned = true;
            return Step::Scan;
        }
        if let Some(e) = self.tree.agents.scan_error.filter(|_| active) {
            return Step::Answer(Err(e));
        }
        if let Some(h) = self.tree.active_harness(i) {
            let entries = self
                .tree
                .agents
                .of_harness(h)
                .into_iter()
                .map(|(_, slot, gen)| DirEntry { loc: Loc::Agent { slot, gen, part: Part::Dir }, attr: Attr::Skeleton })
                .collect();
            let qid = self.tree.static_qid(i);
            return Step::Answer(Ok(Reply::Open { fid, qid, opened: Opened::Dir(Rc::new(entries)) }));
        }
        self.list_static(key, i)
    }

    fn list_static(&mut self, key: usize, d: u16) -> Step {
        let qid_dir = self.tree.static_qid(d);
        let children = self.tree.static_children(d);
        let req = &mut self.reqs[key];
        let Job::Open { fid, stage, qid, pending, entries, .. } = &mut req.job else { unreachable!() };
        *qid = qid_dir;
        *stage = OpenStage::List;
        for child in children {
            match self.tree.presence(&child) {
                Presence::Always => entries.push(DirEntry { loc: child, attr: Attr::Skeleton }),
                Presence::Absent => {}
                Presence::Probe(b) => {
                    req.probes.push(Probe::new(Target::Beneath(b), Kind::Look));
                    pending.push(child);
                }
            }
        }
        if req.probes.is_empty() {
            let opened = Opened::Dir(Rc::new(std::mem::take(entries)));
            return Step::Answer(Ok(Reply::Open { fid: *fid, qid: qid_dir, opened }));
        }
        Step::Wait
    }

    /// A batch of an open's probes is back.
    fn open_resumed(&mut self, key: usize, mut probes: Vec<Probe>) -> Step {
        let Job::Open { stage, loc, .. } = &self.reqs[key].job else { unreachable!() };
        let (stage, loc) = (*stage, loc.clone());
        match stage {
            OpenStage::Look => match probes[0].result.unwrap_or(Err(libc::ENOENT)) {
                Err(_) => Step::Answer(Err(Error::NotFound)),
                Ok(m) if self.tree.is_harness_dir(&loc) => {
                    let Loc::Static(d) = loc else { unreachable!() };
                    if m.is_dir() {
                        self.list_static(key, d)
                    } else {
                        Step::Answer(Err(Error::NotFound))
                    }
                }
                Ok(m) if m.is_dir() || m.is_regular() => {
                    let Some(b) = self.tree.backing(&loc) else { return Step::Answer(Err(Error::NotFound)) };
                    let req = &mut self.reqs[key];
                    if let Job::Open { stage, .. } = &mut req.job {
                        *stage = OpenStage::Open;
                    }
                    req.probes.push(Probe::new(Target::Beneath(b), Kind::Read));
                    Step::Wait
                }
                Ok(_) => Step::Answer(Err(Error::NotRegular)),
            },
            OpenStage::Open => {
                let result = probes[0].result.unwrap_or(Err(libc::ENOENT));
                let fd = probes[0].fd.take();
                match (result, fd) {
                    (Ok(m), Some(fd)) if m.is_regular() => {
                        if self.held.files >= OPEN_FILES_MAX {
                            self.ring.submit(Token::Discard, Sub::Close { fd });
                            return Step::Answer(Err(Error::TooManyOpenFiles));
                        }
                        self.held.files += 1;
                        let Job::Open { fid, .. } = &self.reqs[key].job else { unreachable!() };
                        Step::Answer(Ok(Reply::Open { fid: *fid, qid: m.qid(), opened: Opened::File(Rc::new(fd)) }))
                    }
                    (Ok(m), Some(fd)) if m.is_dir() => self.list_dir(key, fd, m),
                    (Ok(_), Some(fd)) => {
                        self.ring.submit(Token::Discard, Sub::Close { fd });
                        Step::Answer(Err(Error::NotRegular))
                    }
                    _ => Step::Answer(Err(Error::NotFound)),
                }
            }
            OpenStage::List => self.list_done(key, probes),
        }
    }

    /// List a directory on disk: its names inline (getdents64 has no ring
    /// operation; bounded by `--max-dir-entries`), then a statx of each
    /// through the ring, relative to the open directory.
    fn list_dir(&mut self, key: usize, fd: OwnedFd, m: Meta) -> Step {
        let names = match read_names(&fd, self.cfg.max_dir_entries) {
            Ok(n) => n,
            Err(e) => {
                self.ring.submit(Token::Discard, Sub::Close { fd });
                return Step::Answer(Err(e));
            }
        };
        let dirfd = fd.as_raw_fd();
        let req = &mut self.reqs[key];
        req.dir = Some(fd);
        let Job::Open { fid, loc: Loc::Mirror(place), stage, qid, pending, entries, .. } = &mut req.job else {
            unreachable!("only a mirror lists a directory on disk")
        };
        *qid = m.qid();
        *stage = OpenStage::List;
        for name in names {
            pending.push(Loc::Mirror(place.child(name.as_bytes())));
            req.probes.push(Probe::new(Target::At { dirfd, name }, Kind::Look));
        }
        if req.probes.is_empty() {
            let opened = Opened::Dir(Rc::new(std::mem::take(entries)));
            return Step::Answer(Ok(Reply::Open { fid: *fid, qid: *qid, opened }));
        }
        Step::Wait
    }

    /// Every entry of a listing is stat'd: keep those still there and not
    /// symlinks, sorted by name.
    fn list_done(&mut self, key: usize, probes: Vec<Probe>) -> Step {
        let req = &mut self.reqs[key];
        if let Some(fd) = req.dir.take() {
            self.ring.submit(Token::Discard, Sub::Close { fd });
        }
        let Job::Open { fid, qid, pending, entries, .. } = &mut req.job else { unreachable!() };
        for (loc, p) in pending.drain(..).zip(probes) {
            let Some(Ok(m)) = p.result else { continue };
            if m.is_symlink() {
                continue;
            }
            if self.tree.is_harness_dir(&loc) {
                if m.is_dir() {
                    entries.push(DirEntry { loc, attr: Attr::Skeleton });
                }
            } else {
                entries.push(DirEntry { loc, attr: Attr::Disk(m) });
            }
        }
        let tree = &self.tree;
        entries.sort_by(|a, b| tree.name(&a.loc).cmp(&tree.name(&b.loc)));
        let opened = Opened::Dir(Rc::new(std::mem::take(entries)));
        Step::Answer(Ok(Reply::Open { fid: *fid, qid: *qid, opened }))
    }
}

/// The names in an open directory, skipping `.`, `..`, symlinks and
/// excluded names; more than `max` is an error, never a shorter list.
fn read_names(fd: &OwnedFd, max: usize) -> Result<Vec<CString>, Error> {
    let mut names = Vec::new();
    for d in super::dirents::read(fd, usize::MAX)? {
        if d.d_type == libc::DT_LNK || exclude::excluded(&d.name) {
            continue;
        }
        if names.len() == max {
            return Err(Error::DirTooLarge);
        }
        names.push(CString::new(d.name).map_err(|_| Error::Io)?);
    }
    Ok(names)
}

impl Server {
    /// Park `key` until the next scan of the agents completes, starting one
    /// if none is running.
    fn wait_for_scan(&mut self, key: usize) {
        let gen = self.reqs[key].gen;
        self.scan_waiters.push((key, gen));
        self.start_scan();
    }

    /// The scan answered: resume every request that waited for it.
    pub(super) fn wake_scan_waiters(&mut self) {
        for (key, gen) in std::mem::take(&mut self.scan_waiters) {
            if self.reqs.get(key).is_some_and(|r| r.gen == gen) {
                let step = self.kick(key);
                self.settle(key, step);
            }
        }
    }
}
