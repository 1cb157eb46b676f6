//! An open or a stat of one of `/usage`'s reports, or a listing of
//! `/usage` (each report listed with its length): every session of every harness
//! that keeps them on disk, each one's chats (its own transcript and its
//! subagents'), each chat's usage as its index or its digest counts it
//! (`Step::WaitChat` with `Need::Usage`: a file as its digest says it was
//! indexed costs a look), gathered into a `reports::Book` and settled
//! into the report's text, which the fid then reads.
//!
//! It runs as the listings and `usage` files do, through the loop in
//! slices: a listing's directories a slice a turn, a session's chats one
//! after another (each shares a transcript's refresh with anyone else
//! reading it), so another client's requests are served in between.

use std::rc::Rc;

use crate::errors::Error;
use crate::facts::{Facts, Root, Want};
use crate::harness::Harness;
use crate::proto;
use crate::proto::Qid;
use crate::reports::book::{BlockLine, Clock, Settling, SETTLE_SLICE};
use crate::reports::{Book, Report};
use crate::sessions::SessionKey;
use crate::tree::{Attr, Loc};

use super::super::fids::Opened;
use super::super::probe::{Batch, Kind, Probe, Target};
use super::super::watch::{On, Reader, ReaderRef, WatchPath};
use super::all_sessions::{AllSessions, Listed};
use super::cx::{drive, fail, ChatOf, Cursor, Cx, Event, Need, Reply, Step};
use super::gather::{Gather, Ran};

/// What the summing is for.
#[derive(Clone, Copy)]
pub(crate) enum For {
    /// An open of a report: the fid reads its text.
    Open(u32, Report),
    /// A stat of a report: its length is its text's.
    Stat(u16, Report),
    /// An open of `/usage`: every report listed with its length.
    List(u32),
    /// A read of `/usage/wait`: answered with the block's line when it is
    /// not the one its reader last had, else parked until it may be.
    Wait { tag: u16, reader: ReaderRef, count: u32 },
}

pub(crate) struct UsageReport {
    what: For,
    qid: Qid,
    g: Gather,
    all: AllSessions,
    listed: bool,
    /// The session whose chats are being counted, and those chats.
    session: usize,
    chats: Option<(Vec<ChatOf>, usize)>,
    book: Book,
    /// Every session counted: the book being settled, a slice a turn.
    settling: Option<Box<Settling>>,
    /// The looks at the next sessions' transcripts in flight, and the first
    /// session past them: what they find is a look of a moment ago, which
    /// the refresh of a settled digest takes for its own
    /// (`Listings::seen`), so a second report looks at `LOOK_SLICE` files
    /// at once, not one after another.
    looks: Option<Batch>,
    looked_to: usize,
    /// Sessions counted since the job last yielded.
    since_yield: usize,
    /// The fingerprint of the home being settled.
    print: Option<u64>,
    /// For a `/usage/wait` read: the usage watch's sequence number when
    /// this evaluation began, and the directories of Claude Code's
    /// transcripts it is to watch (`usage_watch`).
    seq: u64,
    dirs: std::collections::BTreeSet<Box<[u8]>>,
}

/// Transcripts looked at together, at most `BATCH_IN_FLIGHT_MAX` in flight.
const LOOK_SLICE: usize = 256;

/// Sessions counted in one turn of the loop before the job yields.
const SESSIONS_PER_TURN: usize = 64;

impl UsageReport {
    /// Sums for `what`; `qid` is the node's (the report's, or `/usage`'s).
    pub(crate) fn new(what: For, qid: Qid) -> UsageReport {
        UsageReport {
            what,
            qid,
            g: Gather::recent(),
            all: AllSessions::default(),
            listed: false,
            session: 0,
            chats: None,
            book: Book::default(),
            settling: None,
            looks: None,
            looked_to: 0,
            since_yield: 0,
            print: None,
            seq: 0,
            dirs: std::collections::BTreeSet::new(),
        }
    }

    /// Whether it is a read of `/usage/wait` (`Job::is_wait`).
    pub(crate) fn is_wait(&self) -> bool {
        matches!(self.what, For::Wait { .. })
    }

    pub(crate) fn step(&mut self, ev: Event, cx: &mut Cx) -> Step {
        match ev {
            Event::Start if self.is_wait() => self.seq = cx.waits.seq(On::Usage),
            // A parked wait woken: everything is summed again (what did not
            // change costs a look).
            Event::Changed => return self.again(cx),
            _ => {}
        }
        if self.settling.is_some() {
            return self.settle(cx);
        }
        if let Some(batch) = &mut self.looks {
            if let Err(step) = drive(batch, &mut cx.ops, ev) {
                return step;
            }
            let batch = self.looks.take().expect("just driven");
            let end = (self.session + LOOK_SLICE).min(self.all.found.len());
            for (key, p) in self.all.found[self.session..end].iter().zip(&batch.probes) {
                cx.listings.saw(Root::Harness(key.harness), &key.transcript, p.found());
            }
            batch.release(&mut cx.ops);
            self.looked_to = end;
            return self.step(Event::Resume, cx);
        }
        if self.all.take_regather() {
            std::mem::replace(&mut self.g, Gather::recent()).release(cx);
        }
        // (Between sessions: never with an event a gathering waits for.)
        let between = matches!(ev, Event::Start | Event::Resume);
        if between
            && self.listed
            && self.chats.is_none()
            && self.session >= self.looked_to
            && self.session < self.all.found.len()
        {
            return self.look_ahead(cx);
        }
        if self.chats.is_some() {
            return match self.landed(cx, ev) {
                None => Step::Wait,
                Some(Err(e)) => fail(e),
                Some(Ok(())) => self.next_chat(cx),
            };
        }
        if let Err(step) = self.g.on_event(cx, ev) {
            return step;
        }
        let mut g = std::mem::take(&mut self.g);
        let ran = g.run(cx, |cx, facts, needs| self.derive(cx, facts, needs));
        self.g = g;
        match ran {
            Ran::Done(step) | Ran::Wait(step) => step,
            Ran::Failed(e) => fail(e),
        }
    }

    pub(crate) fn release(self, cx: &mut Cx) {
        if let Some(batch) = self.looks {
            batch.release(&mut cx.ops);
        }
        self.g.release(cx);
    }

    /// Begin again from nothing, at the usage watch's sequence now.
    fn again(&mut self, cx: &mut Cx) -> Step {
        let old = std::mem::replace(self, UsageReport::new(self.what, self.qid));
        old.release(cx);
        self.seq = cx.waits.seq(On::Usage);
        self.step(Event::Resume, cx)
    }

    /// List the harnesses' sessions, a slice at a time; then derive each
    /// session's chats.
    fn derive(&mut self, cx: &mut Cx, facts: &Facts, needs: &mut Vec<Want>) -> Option<Step> {
        if !self.listed {
            match self.all.list(cx, facts, needs, |_| true)? {
                Err(e) => return Some(fail(e)),
                Ok(Listed::Slice) => return Some(Step::Yield),
                Ok(Listed::All) => {
                    // The first sessions are looked at together first.
                    self.listed = true;
                    return Some(Step::Yield);
                }
            }
        }
        let Some(key) = self.all.found.get(self.session).cloned() else {
            let book = std::mem::take(&mut self.book);
            // The home as it was when last settled: those reports hold.
            let print = book.fingerprint();
            if let Some((_, settled)) = cx.last_report.as_ref().filter(|(p, _)| Some(*p) == print) {
                return Some(self.answer(cx, settled.clone()));
            }
            self.print = print;
            self.settling = Some(Box::new(book.settle(&cx.cfg.prices, &cx.cfg.zone, now())));
            return Some(self.settle(cx));
        };
        let chats = match self.all.chats(cx, &key, facts, needs)? {
            Ok(chats) => chats,
            Err(e) => return Some(fail(e)),
        };
        self.chats = Some((chats, 0));
        Some(self.next_chat(cx))
    }

    /// Look at the next `LOOK_SLICE` sessions' transcripts, together.
    fn look_ahead(&mut self, cx: &mut Cx) -> Step {
        let end = (self.session + LOOK_SLICE).min(self.all.found.len());
        let mut batch = Batch::default();
        for k in &self.all.found[self.session..end] {
            let Some(b) = cx.tree.beneath(k.harness, k.transcript.to_vec()) else { continue };
            batch.push(Probe::new(Target::Beneath(b), Kind::Look, cx.cfg.allow_hard_links));
        }
        if batch.probes.len() != end - self.session {
            // A harness without a base: nothing to look ahead at.
            batch.release(&mut cx.ops);
            self.looked_to = end;
            return self.step(Event::Resume, cx);
        }
        self.looks = Some(batch);
        self.step(Event::Resume, cx)
    }

    /// Ask for the session's next chat; past its last, the next session.
    fn next_chat(&mut self, cx: &mut Cx) -> Step {
        if let Some((chats, next)) = &self.chats {
            if let Some(of) = chats.get(*next) {
                return Step::WaitChat { of: of.clone(), need: Need::Usage };
            }
        }
        self.chats = None;
        self.session += 1;
        // A few sessions a turn: others' requests go in between.
        self.since_yield += 1;
        if self.since_yield < SESSIONS_PER_TURN {
            return self.step(Event::Resume, cx);
        }
        self.since_yield = 0;
        Step::Yield
    }

    /// The chat asked for is back: add what its index or digest counted.
    fn landed(&mut self, cx: &mut Cx, ev: Event) -> Option<Result<(), Error>> {
        let file = match ev {
            Event::Refreshed(Ok(r)) => cx.chats.get(r).map(|e| (e.dev, e.ino, e.btime)),
            Event::Counted(file) => Some(file),
            // A chat whose transcript went counts nothing.
            Event::Refreshed(Err(Error::NotFound)) => None,
            Event::Refreshed(Err(e)) => return Some(Err(e)),
            _ => return None,
        };
        let key = self.all.found[self.session].clone();
        let chat = match &mut self.chats {
            Some((chats, next)) => {
                *next += 1;
                chats.get(*next - 1).cloned()
            }
            None => None,
        };
        let Some(file) = file else { return Some(Ok(())) };
        let Some(d) = cx.chats.digests.of(file) else {
            // Indexed but not yet kept as a digest (a live file): its index.
            if let Event::Refreshed(Ok(r)) = ev {
                if let Some(e) = cx.chats.get(r) {
                    let last = e.index.usage().charges().iter().map(|c| c.time).max().unwrap_or(0);
                    let usage = Rc::new(e.index.usage().clone());
                    self.book.add(key.harness, &key.id, e.index.cwd(), last, usage, None);
                }
            }
            // A file indexed and not yet settled is being written now.
            self.watch_dirs(&key, chat.as_ref(), u32::MAX);
            return Some(Ok(()));
        };
        let mtime = u32::try_from(d.seen.mtime_ns.div_euclid(1_000_000_000)).unwrap_or(0);
        self.watch_dirs(&key, chat.as_ref(), mtime);
        self.book.add(key.harness, &key.id, &d.cwd, mtime, d.usage.clone(), Some((file, d.seen)));
        Some(Ok(()))
    }

    /// For a `/usage/wait` read, a Claude Code chat written at `when`
    /// whose session is active lately has its directories watched: its
    /// own, and the session's where subagents' transcripts appear
    /// (`<sid>/`, `<sid>/subagents/`; a workflow's are below, in
    /// directories its chats name). `projects/` and each project's
    /// directory are watched whatever their age.
    fn watch_dirs(&mut self, key: &SessionKey, chat: Option<&ChatOf>, when: u32) {
        if !self.is_wait() || key.harness != Harness::Claude || when < now().saturating_sub(BLOCK_WATCH_SECS) {
            return;
        }
        let stem = key.transcript.strip_suffix(b".jsonl").unwrap_or(&key.transcript);
        self.dirs.insert(stem.into());
        self.dirs.insert([stem, b"/subagents"].concat().into());
        if let Some(ChatOf::Session(k)) = chat {
            self.dirs.insert(parent(k.own_rel()).into());
        }
    }

    /// Settle a slice of the book; once it is all settled, answer.
    fn settle(&mut self, cx: &mut Cx) -> Step {
        let Some(settling) = &mut self.settling else { return fail(Error::NotFound) };
        if settling.step(SETTLE_SLICE).is_none() {
            return Step::Yield;
        }
        let settled = std::rc::Rc::new(self.settling.take().expect("just stepped").into_settled());
        log::debug!("usage report: {} charges were copies of replies counted in another file", settled.copies);
        if let Some(p) = self.print {
            *cx.last_report = Some((p, settled.clone()));
        }
        self.answer(cx, settled)
    }

    fn answer(&mut self, cx: &mut Cx, settled: std::rc::Rc<crate::reports::book::Settled>) -> Step {
        let clock = Clock { zone: &cx.cfg.zone, now: now().max(settled.now) };
        if let For::Wait { tag, reader, count } = self.what {
            return self.answer_wait(cx, &settled.block_line(&clock), (tag, reader, count));
        }
        let entry = |cx: &Cx, i: u16, text: &[u8]| {
            let attr = Attr::Text { len: text.len() as u64, version: 0, mtime: cx.tree.started_unix() };
            cx.tree.entry(&Loc::Static(i), &attr, cx.agents)
        };
        let reply = match self.what {
            For::Open(fid, r) => {
                Reply::Open { fid, qid: self.qid, opened: Opened::Text(Rc::new(settled.render(r, &clock))) }
            }
            For::Stat(i, r) => Reply::Stat(entry(cx, i, &settled.render(r, &clock)), None),
            For::List(fid) => {
                let reports: Vec<(u16, Report)> = cx.tree.reports().collect();
                let mut entries: Vec<_> =
                    reports.into_iter().map(|(i, r)| (i, entry(cx, i, &settled.render(r, &clock)))).collect();
                entries.extend(cx.tree.usage_wait().map(|i| (i, entry(cx, i, b""))));
                // In the skeleton's order, which is by name.
                entries.sort_by_key(|(i, _)| *i);
                let entries = entries.into_iter().map(|(_, e)| e).collect();
                Reply::Open { fid, qid: self.qid, opened: Opened::Dir(Rc::new(entries)) }
            }
            For::Wait { .. } => unreachable!("answered above"),
        };
        Step::Answer(Ok(reply))
    }

    /// A `/usage/wait` read: the directories watched are this
    /// evaluation's; the block's line is the answer when its reader had
    /// another (or none), else the read parks on the usage watch — at
    /// once again if it moved while this evaluation ran.
    fn answer_wait(&mut self, cx: &mut Cx, block: &BlockLine, (tag, reader, count): (u16, ReaderRef, u32)) -> Step {
        // Each project's directory: where its sessions' transcripts grow and
        // new ones appear.
        let claude = self.all.found.iter().filter(|k| k.harness == Harness::Claude);
        let projects: Vec<Box<[u8]>> = claude.map(|k| parent(&k.transcript).into()).collect();
        self.dirs.extend(projects);
        let mut paths = vec![];
        for d in std::iter::once(&b"projects"[..]).chain(self.dirs.iter().map(|d| &d[..])) {
            paths.extend(cx.tree.beneath(Harness::Claude, d.to_vec()).map(WatchPath::dir));
        }
        if let Err(e) = cx.waits.watch_usage(&paths) {
            return fail(e);
        }
        let Some(Reader::Usage { cursor }) = cx.waits.reader(reader) else { return fail(Error::FidNotOpen) };
        if cursor.as_deref() != Some(&block.key[..]) {
            if block.line.len() > count as usize {
                return fail(Error::ReadTooSmall);
            }
            let mut bytes = Vec::with_capacity(block.line.len() + super::read::RREAD_HEADER_BYTES);
            proto::rread_begin(&mut bytes, tag);
            bytes.extend_from_slice(&block.line);
            proto::rread_finish(&mut bytes, 0);
            return Step::Answer(Ok(Reply::Wait { reader, bytes, cursor: Some(Cursor::Usage(block.key.clone())) }));
        }
        cx.waits.usage.ends = block.ends;
        if cx.waits.seq(On::Usage) != self.seq {
            return self.again(cx);
        }
        // Parked, it holds nothing of this evaluation's.
        std::mem::take(&mut self.g).release(cx);
        Step::WaitWatch(On::Usage)
    }
}

/// How long ago a Claude Code chat may have been written for its
/// session's directories to be watched by `/usage/wait`: as long as
/// `reports::book` keeps its recent hours for the block.
const BLOCK_WATCH_SECS: u32 = crate::reports::book::RECENT_SECS;

/// The directory part of `rel` (`.` for none).
fn parent(rel: &[u8]) -> &[u8] {
    rel.iter().rposition(|&b| b == b'/').map_or(b".", |i| &rel[..i])
}

/// Now, Unix seconds (the wall clock the digests' settling reads).
fn now() -> u32 {
    u32::try_from(crate::meta::wall_ns().div_euclid(1_000_000_000)).unwrap_or(0)
}
