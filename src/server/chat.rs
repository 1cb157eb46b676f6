//! `chat/` on the loop: making an agent's chat index fresh in bounded
//! slices, and reading a message through the ring.
//!
//! A request that needs an agent's index (a listing of `chat/`, a walk to
//! a message, its stat or open) parks until a **refresh** of that index
//! has run: an internal request that opens the transcript (the same probe
//! as the mirror), finds its pool entry by (dev, ino, birth time), checks
//! the bytes at both ends of what was indexed (a file rewritten in place
//! starts over), and then indexes what the file grew by, one window at a
//! time: read `CHAT_WINDOW_BYTES` through the ring, feed it, submit the
//! next read. Between two windows every other completion is handled, so a
//! first read of a 228 MB rollout never holds up anyone else's stat.
//! Requests for one agent's chat share one refresh.
//!
//! A read of a message asks the index which stretch of the file renders
//! the bytes wanted (`render_plan`), reads that stretch through the ring
//! with the fd the index was built from, and renders it.

use std::os::fd::{AsRawFd, OwnedFd};
use std::rc::Rc;

use crate::chat::{Format, ReadPlan};
use crate::errors::Error;
use crate::proto;
use crate::ring::{Completion, Sub};
use crate::tree::{Backing, Meta};

use super::job::{Job, Req, Step};
use super::probe::{Kind, Probe, Target};
use super::{Server, Token};

/// Bytes of transcript one indexing slice reads and feeds: a slice is the
/// longest another client's request can wait behind indexing (the loop
/// runs one slice per turn, after everything else of the turn), so it is
/// small — about 0.1 ms at the indexer's speed — yet large enough that a
/// ring round trip per slice is noise.
pub const CHAT_WINDOW_BYTES: usize = 256 << 10;
/// The longest line (record) a transcript may have; a window grows to hold
/// one. Past it the index stops there and its listing answers an error.
pub const CHAT_LINE_BYTES_MAX: usize = 256 << 20;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Stage {
    Open,
    Verify,
    Index,
}

/// A refresh of one agent's chat index.
pub struct Refresh {
    agent: (u32, u32),
    format: Format,
    stage: Stage,
    entry: Option<(usize, u32)>,
    size: u64,
    window: usize,
    head: Option<Vec<u8>>,
    tail: Option<Vec<u8>>,
}

/// What a chat read completion was for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ChatOp {
    Head,
    Tail,
    Window,
}

impl Server {
    /// Park `key` until the agent's chat index is fresh, starting a
    /// refresh unless one runs.
    pub(super) fn wait_for_chat(&mut self, key: usize, slot: u32, gen: u32) {
        let req = &mut self.reqs[key];
        req.chat_waited = true;
        let waiter = (key, req.gen);
        if let Some(waiters) = self.chat_waiters.get_mut(&(slot, gen)) {
            waiters.push(waiter);
            return;
        }
        self.chat_waiters.insert((slot, gen), vec![waiter]);
        // What the last refresh found holds only until this one says again.
        if let Some(a) = self.tree.agents.get_mut(slot, gen) {
            a.chat = None;
            a.chat_error = None;
        }
        let (Some(format), Some(backing)) = (self.tree.chat_format(slot, gen), self.transcript_backing(slot, gen))
        else {
            return self.chat_refreshed((slot, gen));
        };
        let refresh = Refresh {
            agent: (slot, gen),
            format,
            stage: Stage::Open,
            entry: None,
            size: 0,
            window: CHAT_WINDOW_BYTES,
            head: None,
            tail: None,
        };
        self.next_req_gen = self.next_req_gen.wrapping_add(1);
        let rkey = self.reqs.insert(Req::internal(self.next_req_gen, Job::Chat(Box::new(refresh))));
        let req = &mut self.reqs[rkey];
        req.probes = vec![Probe::new(Target::Beneath(backing), Kind::Read)];
        let g = req.gen;
        req.probes[0].start(&mut self.ring, Token::Probe(rkey, g, 0));
        req.in_flight += 1;
    }

    fn transcript_backing(&self, slot: u32, gen: u32) -> Option<Backing> {
        self.tree.backing(&crate::tree::Loc::Agent { slot, gen, part: crate::tree::Part::Transcript })
    }

    /// The refresh's open is back: find the entry, then verify or index.
    pub(super) fn chat_opened(&mut self, key: usize, mut probes: Vec<Probe>) -> Step {
        let result = probes[0].result.unwrap_or(Err(libc::ENOENT));
        let fd = probes[0].fd.take();
        let (meta, fd) = match (result, fd) {
            (Ok(m), Some(fd)) if m.is_regular() => (m, fd),
            (_, fd) => {
                if let Some(fd) = fd {
                    self.ring.submit(Token::Discard, Sub::Close { fd });
                }
                return self.chat_done(key);
            }
        };
        let Job::Chat(r) = &mut self.reqs[key].job else { unreachable!() };
        let format = r.format;
        let (i, old) = match self.tree.chats.entry(meta.dev, meta.ino, meta.btime, format) {
            Ok(got) => got,
            Err(_) => {
                self.ring.submit(Token::Discard, Sub::Close { fd });
                let Job::Chat(r) = &self.reqs[key].job else { unreachable!() };
                if let Some(a) = self.tree.agents.get_mut(r.agent.0, r.agent.1) {
                    a.chat_error = Some(Error::ChatsBusy);
                }
                return self.chat_done(key);
            }
        };
        if let Some(old) = old {
            super::job::release_opened(&mut self.ring, &mut self.held, Some(super::conn::Opened::File(old)));
        }
        self.chat_adopt(key, i, fd, meta)
    }

    /// The entry is the transcript's: hold its fd, and start over if it
    /// shrank; then check its ends, or index on.
    fn chat_adopt(&mut self, key: usize, i: usize, fd: OwnedFd, meta: Meta) -> Step {
        let e = self.tree.chats.at(i);
        if meta.size < e.index.covered() {
            self.tree.chats.restart(i);
        }
        let e = self.tree.chats.at(i);
        e.busy = true;
        self.held.files += 1;
        if let Some(old) = e.fd.replace(Rc::new(fd)) {
            super::job::release_opened(&mut self.ring, &mut self.held, Some(super::conn::Opened::File(old)));
        }
        let gen = e.gen;
        let covered = e.index.covered();
        let probe = e.index.probe();
        let Job::Chat(r) = &mut self.reqs[key].job else { unreachable!() };
        r.entry = Some((i, gen));
        r.size = meta.size;
        if covered == 0 {
            r.stage = Stage::Index;
            return self.chat_next_window(key);
        }
        r.stage = Stage::Verify;
        self.chat_read(key, ChatOp::Head, probe.head.0, probe.head.1);
        self.chat_read(key, ChatOp::Tail, probe.tail.0, probe.tail.1);
        Step::Wait
    }

    fn chat_read(&mut self, key: usize, op: ChatOp, offset: u64, len: usize) {
        let Job::Chat(r) = &self.reqs[key].job else { unreachable!() };
        let Some((i, gen)) = r.entry else { return };
        let Some(fd) = self.tree.chats.get(i, gen).and_then(|e| e.fd.as_ref()).map(|f| f.as_raw_fd()) else { return };
        let req = &mut self.reqs[key];
        req.in_flight += 1;
        let buf = Vec::with_capacity(len);
        self.ring.submit(Token::Chat(key, req.gen, op), Sub::Read { fd, owned: None, buf, len: len as u32, offset });
    }

    /// One of a refresh's reads is back.
    pub(super) fn on_chat(&mut self, key: usize, gen: u32, op: ChatOp, c: Completion<Token>) {
        let Some(req) = self.reqs.get_mut(key).filter(|r| r.gen == gen) else { return };
        req.in_flight -= 1;
        let Job::Chat(r) = &mut req.job else { return };
        let bytes = if c.result < 0 { Vec::new() } else { c.buf };
        let step = match op {
            ChatOp::Head => {
                r.head = Some(bytes);
                self.chat_verified(key)
            }
            ChatOp::Tail => {
                r.tail = Some(bytes);
                self.chat_verified(key)
            }
            ChatOp::Window => self.chat_fed(key, c.result, &bytes),
        };
        self.settle(key, step);
    }

    /// Both ends are back: the same file grew, or it is another one now.
    fn chat_verified(&mut self, key: usize) -> Step {
        let Job::Chat(r) = &mut self.reqs[key].job else { unreachable!() };
        let (Some(head), Some(tail), Some((i, gen))) = (&r.head, &r.tail, r.entry) else { return Step::Wait };
        let same = self.tree.chats.get(i, gen).is_some_and(|e| e.index.unchanged(head, tail));
        if !same {
            self.tree.chats.restart(i);
            let Job::Chat(r) = &mut self.reqs[key].job else { unreachable!() };
            r.entry = Some((i, self.tree.chats.at(i).gen));
        }
        let Job::Chat(r) = &mut self.reqs[key].job else { unreachable!() };
        r.stage = Stage::Index;
        self.chat_next_window(key)
    }

    /// Read the next window, or finish when the index covers the file.
    fn chat_next_window(&mut self, key: usize) -> Step {
        let Job::Chat(r) = &self.reqs[key].job else { unreachable!() };
        let Some((i, gen)) = r.entry else { return self.chat_done(key) };
        let (size, window) = (r.size, r.window);
        let Some(e) = self.tree.chats.get(i, gen) else { return self.chat_done(key) };
        let covered = e.index.covered();
        if covered >= size || e.index.full() {
            return self.chat_done(key);
        }
        let len = (size - covered).min(window as u64) as usize;
        self.chat_read(key, ChatOp::Window, covered, len);
        Step::Wait
    }

    /// A window is back: feed it, then the next.
    fn chat_fed(&mut self, key: usize, result: i32, bytes: &[u8]) -> Step {
        let Job::Chat(r) = &mut self.reqs[key].job else { unreachable!() };
        let Some((i, gen)) = r.entry else { return self.chat_done(key) };
        if result <= 0 {
            return self.chat_done(key);
        }
        let Some(e) = self.tree.chats.get_mut(i, gen) else { return self.chat_done(key) };
        let covered = e.index.covered();
        let used = e.index.feed(covered, bytes);
        if used == 0 {
            if bytes.len() as u64 >= r.size - covered {
                // The rest of the file is a line still being written: it
                // waits for its newline.
                return self.chat_done(key);
            }
            if r.window >= CHAT_LINE_BYTES_MAX {
                log::warn!("chat: a record longer than {CHAT_LINE_BYTES_MAX} bytes; indexing stops there");
                e.stuck = true;
                return self.chat_done(key);
            }
            r.window *= 2;
        }
        self.chat_next_window(key)
    }

    /// The refresh is over: unpin the entry, tell the agent where its chat
    /// is, and resume every request that waited.
    fn chat_done(&mut self, key: usize) -> Step {
        let Job::Chat(r) = &mut self.reqs[key].job else { unreachable!() };
        let agent = r.agent;
        if let Some((i, gen)) = r.entry {
            if let Some(e) = self.tree.chats.get_mut(i, gen) {
                e.busy = false;
            }
            let cgen = self.tree.chats.at(i).gen;
            if let Some(a) = self.tree.agents.get_mut(agent.0, agent.1) {
                a.chat = Some((i, cgen));
                a.chat_error = None;
            }
        }
        self.chat_refreshed(agent);
        Step::Finished
    }

    fn chat_refreshed(&mut self, agent: (u32, u32)) {
        for (key, gen) in self.chat_waiters.remove(&agent).unwrap_or_default() {
            if self.reqs.get(key).is_some_and(|r| r.gen == gen) {
                let step = self.kick(key);
                self.settle(key, step);
            }
        }
    }

    /// A read of an open message: plan, read through the ring, render.
    pub(super) fn park_chat_read(
        &mut self,
        idx: usize,
        tag: u16,
        entry: (usize, u32),
        id: u32,
        offset: u64,
        count: u32,
    ) {
        let key = self.insert_parked(idx, tag, Job::ChatRead { entry, plan: None, file: None }, false);
        let Some(e) = self.tree.chats.get(entry.0, entry.1) else {
            return self.answer_and_reap(key, Err(Error::NotFound));
        };
        let Some(plan) = e.index.render_plan(id as usize, offset, u64::from(count)) else {
            return self.answer_and_reap(key, Err(Error::NotFound));
        };
        if plan.file_len == 0 {
            return self.chat_render(key, entry, plan, &[]);
        }
        let Some(file) = e.fd.clone() else {
            return self.answer_and_reap(key, Err(Error::Io));
        };
        let fd = file.as_raw_fd();
        let req = &mut self.reqs[key];
        req.job = Job::ChatRead { entry, plan: Some(plan), file: Some(file) };
        req.in_flight += 1;
        let len = plan.file_len as u32;
        let buf = Vec::with_capacity(len as usize);
        self.ring
            .submit(Token::ChatMsg(key, req.gen), Sub::Read { fd, owned: None, buf, len, offset: plan.file_offset });
    }

    pub(super) fn on_chat_msg(&mut self, key: usize, gen: u32, c: Completion<Token>) {
        let Some(req) = self.reqs.get_mut(key).filter(|r| r.gen == gen) else { return };
        req.in_flight -= 1;
        let Job::ChatRead { entry, plan: Some(plan), .. } = req.job else { return self.reap(key) };
        if c.result < 0 {
            return self.answer_and_reap(key, Err(Error::Io));
        }
        self.chat_render(key, entry, plan, &c.buf);
    }

    fn chat_render(&mut self, key: usize, entry: (usize, u32), plan: ReadPlan, input: &[u8]) {
        let tag = self.reqs[key].tag;
        let Some(e) = self.tree.chats.get_mut(entry.0, entry.1) else {
            // The index started over under the read: the message is gone.
            return self.answer_and_reap(key, Err(Error::NotFound));
        };
        let mut bytes = Vec::with_capacity(plan.count() as usize + 11);
        proto::rread_begin(&mut bytes, tag);
        e.index.render(&plan, input, &mut bytes);
        proto::rread_finish(&mut bytes, 0);
        self.answer_and_reap(key, Ok(super::job::Reply::Read { bytes }));
    }

    fn answer_and_reap(&mut self, key: usize, result: Result<super::job::Reply, Error>) {
        self.answer(key, result);
        self.reap(key);
    }
}

impl Server {
    /// A stat of a message, the index fresh.
    pub(super) fn chat_msg_stat(&self, slot: u32, gen: u32, id: u32) -> Step {
        let Some(e) = self.tree.chat_of(slot, gen) else { return Step::Answer(Err(Error::NotFound)) };
        let Some(info) = e.index.info(id as usize) else { return Step::Answer(Err(Error::NotFound)) };
        let qid = self.tree.chat_msg_qid(slot, gen, id).expect("the message exists");
        let attr = crate::tree::Attr::Text { len: info.size, version: qid.version, mtime: info.time };
        let loc = crate::tree::Loc::Agent { slot, gen, part: crate::tree::Part::ChatMsg(id) };
        Step::Answer(Ok(super::job::Reply::Stat { loc, attr }))
    }

    /// An open of `chat/` (its listing) or of one message, the index fresh.
    pub(super) fn chat_open(&self, fid: u32, slot: u32, gen: u32, part: crate::tree::Part) -> Step {
        use crate::tree::{Attr, Loc, Part};
        let agent = self.tree.agents.get(slot, gen);
        if let Some(e) = agent.and_then(|a| a.chat_error) {
            return Step::Answer(Err(e));
        }
        let Some((i, cgen)) = agent.and_then(|a| a.chat) else {
            return Step::Answer(Err(Error::NotFound));
        };
        let Some(e) = self.tree.chats.get(i, cgen) else { return Step::Answer(Err(Error::NotFound)) };
        let reply = match part {
            Part::ChatMsg(id) => match self.tree.chat_msg_qid(slot, gen, id) {
                Some(qid) => {
                    super::job::Reply::Open { fid, qid, opened: super::conn::Opened::Chat { entry: (i, cgen), id } }
                }
                None => return Step::Answer(Err(Error::NotFound)),
            },
            _ if e.index.full() => return Step::Answer(Err(Error::ChatTooLong)),
            _ if e.stuck => return Step::Answer(Err(Error::ChatLineTooLong)),
            _ => {
                let entries = (0..e.index.len())
                    .filter_map(|id| {
                        let info = e.index.info(id)?;
                        let qid = self.tree.chat_msg_qid(slot, gen, id as u32)?;
                        let attr = Attr::Text { len: info.size, version: qid.version, mtime: info.time };
                        Some(super::conn::DirEntry {
                            loc: Loc::Agent { slot, gen, part: Part::ChatMsg(id as u32) },
                            attr,
                        })
                    })
                    .collect();
                let qid = self.tree.skeleton_qid(&Loc::Agent { slot, gen, part: Part::Chat });
                super::job::Reply::Open { fid, qid, opened: super::conn::Opened::Dir(Rc::new(entries)) }
            }
        };
        Step::Answer(Ok(reply))
    }
}
