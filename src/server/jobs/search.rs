//! A read of a search (`/search/<query>`, `/search/query`): the search
//! goes on from where its last read left it until it has a result line
//! to answer, or has searched everything.
//!
//! The first read lists every session on disk (`AllSessions`, of the
//! harnesses the query names), looks at their transcripts together and
//! orders them newest first by mtime. Then, session by session, chat by
//! chat (its own transcript, then its subagents'), it waits for the chat's
//! index as a listing of `chat/` would (`Need::Recent`), maps its file a
//! window at a time (`SEARCH_MAP_BYTES`, its pages brought in by a kernel
//! worker, as a refresh maps them) and looks at each message: the
//! filters, then the bytes its spans hold (`Matcher::could`), and only
//! for a message that could match, its rendered text (`Matcher::find`).
//! Each turn looks at `SEARCH_SLICE_BYTES` of transcript at most and
//! yields; a turn that found something answers.
//!
//! A result line is the message's path under `/sessions`, a tab, and the
//! context (`matcher::context`). A session that cannot be searched (its
//! transcript unreadable, its chat past a cap) is a line `error`, its
//! path and why; past `max:` the last line is `more`. The end is a read
//! that answers nothing.

use std::rc::Rc;

use std::os::fd::AsRawFd;

use crate::chat::digest::Seen;
use crate::chat::pool::ChatRef;
use crate::chat::store::{Enc, Span};
use crate::chat::Index;
use crate::errors::Error;
use crate::facts::{Facts, Root, Want};
use crate::mapped::Mapped;
use crate::proto;
use crate::ring::Sub;
use crate::search::Hits;
use crate::sessions::SessionKey;

use super::super::probe::{Batch, Kind, Probe, Target};
use super::super::searches::{AtChat, Search, SearchRef};
use super::all_sessions::{AllSessions, Listed};
use super::cx::{drive, fail, ChatOf, Cx, Event, Need, Reply, Step};
use super::gather::{Gather, Ran};
use super::raw_look::{self, Looked, RawLook};

/// Bytes of a transcript a window maps, as a refresh's.
const SEARCH_MAP_BYTES: usize = 1 << 20;
/// Bytes of transcript a turn looks at before it yields.
const SEARCH_SLICE_BYTES: u64 = 1 << 20;
/// Transcripts looked at together for their mtimes.
const LOOK_SLICE: usize = 256;
/// The op number of a window's populate (nothing else is in flight then).
const OP_WINDOW: u32 = u32::MAX - 1;
/// What a message its transcript's hits rule out counts against
/// `SEARCH_SLICE_BYTES`: a turn passes over at most 16,384 of them.
const SKIPPED_COST: u64 = 64;

pub(crate) struct SearchRead {
    tag: u16,
    search: SearchRef,
    offset: u64,
    count: u32,
    g: Gather,
    /// The listing, while the first read makes it.
    all: Option<Box<AllSessions>>,
    /// The looks at the listed transcripts in flight, the first they
    /// cover, and each one's mtime so far.
    looks: Option<(Batch, usize)>,
    mtimes: Vec<i128>,
    /// Every session is listed (the looks at them follow).
    listed: bool,
    /// The raw look at a chat's transcript before its index is asked
    /// for, and its reads numbered so far.
    pre: Option<RawLook>,
    seq: u32,
    /// The chat being searched, and its window.
    entry: Option<ChatRef>,
    window: Option<Mapped>,
    populating: bool,
    text: Vec<u8>,
    scratch: Vec<u8>,
    name: Vec<u8>,
    spans: Vec<Span>,
}

impl SearchRead {
    pub(crate) fn new(tag: u16, search: SearchRef, offset: u64, count: u32) -> SearchRead {
        SearchRead {
            tag,
            search,
            offset,
            count,
            g: Gather::recent(),
            all: None,
            looks: None,
            mtimes: Vec::new(),
            listed: false,
            pre: None,
            seq: 0,
            entry: None,
            window: None,
            populating: false,
            text: Vec::new(),
            scratch: Vec::new(),
            name: Vec::new(),
            spans: Vec::new(),
        }
    }

    pub(crate) fn step(&mut self, ev: Event, cx: &mut Cx) -> Step {
        let Some(s) = cx.searches.get_mut(self.search) else { return fail(Error::FidNotOpen) };
        if matches!(ev, Event::Start) {
            if let (None, Some(why)) = (&s.query, &s.error) {
                // Said once, as the search's one line; then its end.
                if !s.done {
                    s.pending.extend_from_slice(format!("error\t{why}\n").as_bytes());
                    s.done = true;
                }
                return self.answer(cx);
            }
            // Nothing written yet: nothing to read (a crawl, `grep -r`,
            // reads it as an empty file).
            if s.query.is_none() {
                s.done = true;
                return self.answer(cx);
            }
            // A continuation of the answer just given (Linux filling one
            // read(2)) answers what is there now, maybe nothing: never waits.
            if s.left == Some((self.offset, self.count)) || !s.pending.is_empty() || s.done {
                return self.answer(cx);
            }
        }
        if let Some(pre) = &mut self.pre {
            let Some(q) = s.query.clone() else { return fail(Error::BadQuery) };
            return match pre.step(cx, ev, &q.1) {
                Looked::Step(step) => step,
                Looked::Over { passed } => self.pre_done(cx, passed),
            };
        }
        match ev {
            // A read of a raw look that is over comes back to nobody.
            Event::Done(op, _) if raw_look::is_read(op) => return Step::Wait,
            Event::Done(OP_WINDOW, c) if self.populating => return self.window_back(cx, c),
            _ if self.populating => return Step::Wait,
            _ => {}
        }
        if let Event::Refreshed(r) = ev {
            return match r {
                Ok(r) => {
                    self.entry = Some(r);
                    self.scan(cx)
                }
                Err(Error::NotFound) => {
                    s.next_chat();
                    self.scan(cx)
                }
                Err(e) => self.chat_failed(cx, e),
            };
        }
        if s.sessions.is_none() {
            return self.list(cx, ev);
        }
        if let Err(step) = self.g.on_event(cx, ev) {
            return step;
        }
        self.scan(cx)
    }

    /// The messages' window asked for is in (`OP_WINDOW`).
    fn window_back(&mut self, cx: &mut Cx, c: crate::ring::Completion<crate::server::ops::Token>) -> Step {
        self.populating = false;
        if c.result < 0 {
            log::debug!("search: populating a window: {}", std::io::Error::from_raw_os_error(-c.result));
        }
        self.window = c.map;
        if self.window.is_none() {
            return self.chat_failed(cx, Error::Io);
        }
        self.scan(cx)
    }

    pub(crate) fn release(self, cx: &mut Cx) {
        if let Some((batch, _)) = self.looks {
            batch.release(&mut cx.ops);
        }
        if let Some(pre) = self.pre {
            pre.release(cx);
        }
        self.g.release(cx);
    }

    /// Answer the lines pending that fit the count (none: the end, or
    /// nothing yet for a continuation).
    fn answer(&mut self, cx: &mut Cx) -> Step {
        let Some(s) = cx.searches.get_mut(self.search) else { return fail(Error::FidNotOpen) };
        let mut take = 0;
        while let Some(nl) = memchr::memchr(b'\n', &s.pending[take..]) {
            if take + nl + 1 > self.count as usize {
                break;
            }
            take += nl + 1;
        }
        if take == 0 && !s.pending.is_empty() && s.left != Some((self.offset, self.count)) {
            return fail(Error::ReadTooSmall);
        }
        let lines: Vec<u8> = s.pending.drain(..take).collect();
        s.left =
            (take > 0 && take < self.count as usize).then(|| (self.offset + take as u64, self.count - take as u32));
        let mut bytes = Vec::with_capacity(lines.len() + super::read::RREAD_HEADER_BYTES);
        proto::rread_begin(&mut bytes, self.tag);
        bytes.extend_from_slice(&lines);
        proto::rread_finish(&mut bytes, 0);
        Step::Answer(Ok(Reply::Read(bytes)))
    }

    /// The first read: every session of the harnesses asked for, a slice
    /// of directories a turn; then their transcripts looked at.
    fn list(&mut self, cx: &mut Cx, ev: Event) -> Step {
        if let Some((batch, _)) = &mut self.looks {
            if let Err(step) = drive(batch, &mut cx.ops, ev) {
                return step;
            }
            let (batch, from) = self.looks.take().expect("just driven");
            let all = self.all.as_ref().expect("listed before looked at");
            for (key, p) in all.found[from..].iter().zip(&batch.probes) {
                cx.listings.saw(Root::Harness(key.harness), &key.transcript, p.found());
                self.mtimes.push(p.found().map_or(0, |m| m.mtime_ns()));
            }
            batch.release(&mut cx.ops);
            return self.look(cx);
        }
        if self.listed {
            return self.look(cx);
        }
        let mut all = self.all.take().unwrap_or_default();
        if all.take_regather() {
            std::mem::replace(&mut self.g, Gather::recent()).release(cx);
        }
        if let Err(step) = self.g.on_event(cx, ev) {
            self.all = Some(all);
            return step;
        }
        let Some(q) = cx.searches.get_mut(self.search).and_then(|s| s.query.clone()) else {
            return fail(Error::FidNotOpen);
        };
        let mut g = std::mem::take(&mut self.g);
        let ran = g.run(cx, |cx, facts, needs| all.list(cx, facts, needs, |h| q.0.harness_ok(h)));
        self.g = g;
        self.all = Some(all);
        match ran {
            Ran::Wait(step) => step,
            Ran::Done(Err(e)) | Ran::Failed(e) => fail(e),
            Ran::Done(Ok(Listed::Slice)) => Step::Yield,
            Ran::Done(Ok(Listed::All)) => {
                self.listed = true;
                self.look(cx)
            }
        }
    }

    /// Look at the next `LOOK_SLICE` transcripts; once all are, order the
    /// sessions by their mtimes, newest first.
    fn look(&mut self, cx: &mut Cx) -> Step {
        let all = self.all.as_mut().expect("listed");
        let from = self.mtimes.len();
        if from < all.found.len() {
            let end = (from + LOOK_SLICE).min(all.found.len());
            let mut batch = Batch::default();
            for k in &all.found[from..end] {
                match cx.tree.beneath(k.harness, k.transcript.to_vec()) {
                    Some(b) => batch.push(Probe::new(Target::Beneath(b), Kind::Look, cx.cfg.allow_hard_links)),
                    None => return fail(Error::NotFound),
                }
            }
            self.looks = Some((batch, from));
            return self.list(cx, Event::Resume);
        }
        let mut order: Vec<(i128, Rc<SessionKey>)> =
            self.mtimes.iter().copied().zip(all.found.iter().cloned()).collect();
        order.sort_by(|a, b| b.0.cmp(&a.0).then_with(|| a.1.id.cmp(&b.1.id)));
        let sessions = Rc::new(order.into_iter().map(|(_, k)| k).collect::<Vec<_>>());
        // The listing's facts are no session's.
        std::mem::replace(&mut self.g, Gather::recent()).release(cx);
        let children = self.all.take().and_then(|mut a| a.codex_children.take());
        let Some(s) = cx.searches.get_mut(self.search) else { return fail(Error::FidNotOpen) };
        s.sessions = Some(sessions);
        s.children = children;
        Step::Yield
    }

    /// The chat being searched could not be: an `error` line, and on.
    fn chat_failed(&mut self, cx: &mut Cx, e: Error) -> Step {
        (self.entry, self.window) = (None, None);
        let Some(s) = cx.searches.get_mut(self.search) else { return fail(Error::FidNotOpen) };
        error_line(s, &e);
        s.next_chat();
        self.scan(cx)
    }

    /// Search on: the next session's chats, the next chat's index, the
    /// next window; a slice of messages a turn.
    fn scan(&mut self, cx: &mut Cx) -> Step {
        let Some(s) = cx.searches.get_mut(self.search) else { return fail(Error::FidNotOpen) };
        if !s.pending.is_empty() || s.done {
            return self.answer(cx);
        }
        let Some(sessions) = s.sessions.clone() else { return fail(Error::NotFound) };
        let Some(key) = sessions.get(s.session).cloned() else {
            s.done = true;
            return self.answer(cx);
        };
        let Some(chats) = s.chats.clone() else { return self.chats_of(cx, &key) };
        let Some(of) = chats.get(s.chat).cloned().map(ChatOf::Session) else {
            s.next_session();
            (self.entry, self.window) = (None, None);
            return Step::Yield;
        };
        let here = (s.session, s.chat);
        if s.at.as_ref().is_some_and(|a| a.here != here) {
            // Moved on: the chat before is done with.
            let mut at = s.at.take();
            cx.searches.leave(&mut at, cx.ops.ring, &mut cx.held.files);
            (self.entry, self.window) = (None, None);
            return self.scan(cx);
        }
        if self.pre.is_some() {
            return self.step(Event::Resume, cx);
        }
        let Some(at) = &mut s.at else { return self.prefilter(cx, &of, here) };
        if at.own.is_some() {
            return self.slice(cx, &key, &of, None);
        }
        let Some(r) = self.entry.filter(|r| cx.chats.get(*r).is_some()) else {
            if at.made.is_none() {
                at.made = Some(at.file.is_some_and(|((dev, ino, _), ..)| !cx.chats.has(dev, ino)));
            }
            self.window = None;
            return Step::WaitChat { of, need: Need::Recent };
        };
        self.slice(cx, &key, &of, Some(r))
    }

    /// Look at chat `of`'s transcript raw before asking for its index: a
    /// file that lacks a term every match must hold as it is costs a read
    /// of its bytes, not an index (a compressed one, or a query with no
    /// such term, is indexed at once).
    fn prefilter(&mut self, cx: &mut Cx, of: &ChatOf, here: (usize, usize)) -> Step {
        let Some(s) = cx.searches.get_mut(self.search) else { return fail(Error::FidNotOpen) };
        let (need, anchored) = s.query.as_ref().map_or((0, false), |q| (q.1.needed(), q.1.anchored()));
        let backing = match of {
            ChatOf::Session(k) if need != 0 && !crate::zst::is_compressed(k.own_rel()) => {
                crate::sessions::chat_format(k).zip(cx.tree.beneath(k.harness, k.own_rel().to_vec()))
            }
            _ => None,
        };
        let Some((format, b)) = backing else {
            s.at = Some(AtChat { here, hits: None, file: None, own: None, made: None });
            return self.scan(cx);
        };
        let batch = Batch::one(Probe::new(Target::Beneath(b), Kind::Read, cx.cfg.allow_hard_links));
        let hits = anchored.then(Hits::default);
        self.pre = Some(RawLook::new(here, batch, need, format, hits, self.seq));
        self.step(Event::Resume, cx)
    }

    /// The raw look is over: the chat is searched (`passed`), from the
    /// positions a search before kept of the file as it is, or from its
    /// index; or it is passed over.
    fn pre_done(&mut self, cx: &mut Cx, passed: bool) -> Step {
        let Some(mut pre) = self.pre.take() else { return Step::Wait };
        self.seq = pre.seq();
        let Some((s, kept)) = cx.searches.with_kept(self.search) else {
            pre.release(cx);
            return fail(Error::FidNotOpen);
        };
        if !passed {
            s.next_chat();
            pre.release(cx);
            return Step::Yield;
        }
        let file = pre.meta.map(|(m, taken)| ((m.dev, m.ino, m.btime), Seen::of(&m, pre.format), m.settled_by(taken)));
        let own = match (file, pre.fd.take()) {
            (Some((id, seen, _)), Some(fd)) => match kept.take(id, seen) {
                Some(index) => {
                    // Held past this read: counted as an open file's is.
                    cx.held.files.take(1);
                    Some((index, fd))
                }
                None => {
                    cx.ops.close(fd);
                    None
                }
            },
            (_, fd) => {
                fd.into_iter().for_each(|fd| cx.ops.close(fd));
                None
            }
        };
        s.at = Some(AtChat { here: pre.here, hits: pre.hits.take(), file, own, made: None });
        pre.release(cx);
        Step::Yield
    }

    /// The chats of session `key`, derived as its `usage` derives them.
    fn chats_of(&mut self, cx: &mut Cx, key: &Rc<SessionKey>) -> Step {
        let Some(mut children) = cx.searches.get_mut(self.search).map(|s| s.children.take()) else {
            return fail(Error::FidNotOpen);
        };
        let mut g = std::mem::take(&mut self.g);
        let ran = g.run(cx, |cx, facts: &Facts, needs: &mut Vec<Want>| {
            super::all_sessions::chats(cx, &mut children, key, facts, needs)
        });
        self.g = g;
        let Some(s) = cx.searches.get_mut(self.search) else { return fail(Error::FidNotOpen) };
        s.children = children;
        let chats = match ran {
            Ran::Wait(step) => return step,
            Ran::Done(Ok(chats)) => chats,
            Ran::Done(Err(e)) | Ran::Failed(e) => {
                error_line(s, &e);
                s.next_session();
                Vec::new()
            }
        };
        if !chats.is_empty() {
            let keys = chats.into_iter().filter_map(|c| match c {
                ChatOf::Session(k) => Some(k),
                ChatOf::Agent(..) => None,
            });
            s.chats = Some(Rc::new(keys.collect()));
        }
        std::mem::replace(&mut self.g, Gather::recent()).release(cx);
        Step::Yield
    }

    /// Look at the messages of chat `of` (pool entry `r`, or the positions
    /// a search before kept) from where the search stands,
    /// `SEARCH_SLICE_BYTES` of them at most.
    fn slice(&mut self, cx: &mut Cx, key: &SessionKey, of: &ChatOf, r: Option<ChatRef>) -> Step {
        let Some((s, kept)) = cx.searches.with_kept(self.search) else { return fail(Error::FidNotOpen) };
        let Some(q) = s.query.clone() else { return fail(Error::BadQuery) };
        let Some(at) = s.at.as_mut() else { return Step::Yield };
        let AtChat { hits, file, own, made, .. } = at;
        // The index read, its file, and (from the pool) the file it is of.
        let (ix, fd, pooled): (&mut Index, i32, _) = match (own.as_mut(), r.and_then(|r| cx.chats.get_mut(r))) {
            (Some((index, fd)), _) => (&mut **index, fd.as_raw_fd(), None),
            (None, Some(e)) => match e.fd.as_ref() {
                Some(fd) => (&mut e.index, fd.as_raw_fd(), Some((e.dev, e.ino, e.btime))),
                None => return self.chat_failed(cx, Error::NotFound),
            },
            (None, None) => return Step::Yield,
        };
        let (query, matcher) = (&q.0, &q.1);
        if s.chat == 0 && s.msg == 0 {
            s.cwd = ix.cwd().to_vec();
        }
        if !query.cwd_ok(&s.cwd) {
            s.next_session();
            (self.entry, self.window) = (None, None);
            return Step::Yield;
        }
        let prefix = result_prefix(key, of);
        let zone = &cx.cfg.zone;
        let mut looked = 0u64;
        while s.msg < ix.len() && looked < SEARCH_SLICE_BYTES && !s.done {
            let id = s.msg;
            let (Some(info), Some((spans, range))) = (ix.info(id), ix.spans_of(id)) else { break };
            let t = i64::from(info.time);
            let day = (t + i64::from(zone.offset_at(t))).div_euclid(86_400);
            let skip = !could_hold(hits.as_ref(), spans) || !query.day_ok(day) || {
                self.name.clear();
                ix.name(id, &mut self.name);
                !query.kind_ok(&self.name[crate::chat::ID_DIGITS + 1..])
            };
            if skip {
                s.msg += 1;
                looked += SKIPPED_COST;
                continue;
            }
            let Some(plan) = ix.render_plan(id, 0, info.size) else { break };
            self.spans.clear();
            self.spans.extend_from_slice(spans);
            let need = if plan.file_len == 0 {
                range.clone()
            } else {
                range.start.min(plan.file_offset)..range.end.max(plan.file_offset + plan.file_len)
            };
            let held = self
                .window
                .as_ref()
                .is_some_and(|w| w.offset() <= need.start && need.end <= w.offset() + w.len() as u64);
            if !held && need.end > need.start {
                let covered = ix.covered();
                let len = (need.end - need.start).max(SEARCH_MAP_BYTES as u64).min(covered.saturating_sub(need.start));
                let len = len.max(need.end - need.start) as usize;
                if !cx.admit_read(len) {
                    return Step::Yield;
                }
                return match Mapped::new(fd, need.start, len) {
                    Ok(map) => {
                        self.window = None;
                        cx.ops.submit(OP_WINDOW, Sub::Populate { map });
                        self.populating = true;
                        Step::Wait
                    }
                    Err(err) => {
                        log::warn!("search: mapping {len} bytes of a transcript: {err}");
                        self.chat_failed(cx, Error::from_errno(err.raw_os_error().unwrap_or(libc::EIO)))
                    }
                };
            }
            looked += (need.end - need.start) + 1;
            let (spans, text, scratch) = (&self.spans, &mut self.text, &mut self.scratch);
            let found = match &self.window {
                Some(w) if need.end > need.start => {
                    let base = w.offset();
                    w.read(|bytes| {
                        let at = |sp: &Span| match sp.enc() {
                            Enc::Lit => sp.literal(),
                            _ => &bytes[(sp.off() - base) as usize..][..sp.len() as usize],
                        };
                        if !matcher.could(spans.iter().map(at), scratch) {
                            return None;
                        }
                        let input = &bytes[(plan.file_offset.max(base) - base) as usize..][..plan.file_len as usize];
                        text.clear();
                        ix.render(&plan, input, text);
                        matcher.find(text, scratch).map(|at| crate::search::matcher::context(text, at))
                    })
                }
                _ => {
                    // Literals only: nothing of the file to read.
                    text.clear();
                    ix.render(&plan, &[], text);
                    Ok(matcher.find(text, scratch).map(|at| crate::search::matcher::context(text, at)))
                }
            };
            let Ok(found) = found else {
                // The file was cut short under the window: its index
                // starts over, and so does this chat's search (what was
                // kept of it, and its hits, are of the file it was).
                (self.entry, self.window) = (None, None);
                s.msg = 0;
                *hits = None;
                if let Some((_, fd)) = own.take() {
                    crate::server::searches::close_held(cx.ops.ring, &mut cx.held.files, fd);
                }
                return Step::Yield;
            };
            s.msg += 1;
            if let Some(context) = found {
                if s.found == query.max {
                    let more =
                        format!("more\tthe first {} results are listed; more messages match (max:N)\n", query.max);
                    s.pending.extend_from_slice(more.as_bytes());
                    s.done = true;
                    break;
                }
                s.found += 1;
                s.pending.extend_from_slice(prefix.as_bytes());
                s.pending.extend_from_slice(&self.name);
                s.pending.push(b'\t');
                s.pending.extend_from_slice(&context);
                s.pending.push(b'\n');
            }
        }
        if s.msg >= ix.len() && !s.done {
            // Searched whole from the pool's index of the file as it was
            // looked at, settled: its positions are kept for the next.
            if let (Some(pooled), Some((id, seen, true))) = (pooled, *file) {
                if pooled == id && ix.covered() == seen.size && !ix.full() {
                    kept.put(id, seen, Box::new(ix.kept_copy()));
                }
            }
            // An index only this search asked for goes with it.
            if let (Some(r), Some(true), Some(_)) = (r, *made, pooled) {
                if let Some(fd) = cx.chats.forget(r) {
                    crate::server::world::release_file(cx.ops.ring, cx.held, fd);
                }
            }
            s.next_chat();
            (self.entry, self.window) = (None, None);
        }
        if s.pending.is_empty() {
            Step::Yield
        } else {
            self.answer(cx)
        }
    }
}

/// Whether a message of `spans` could hold the query's anchor, as the
/// transcript's `hits` say (none noted: it could). A literal's text is in
/// no file's bytes: a message with one is looked at.
fn could_hold(hits: Option<&Hits>, spans: &[Span]) -> bool {
    let Some(h) = hits else { return true };
    let raw = |sp: &&Span| sp.enc() != Enc::Lit;
    spans.iter().any(|sp| sp.enc() == Enc::Lit && sp.out() > 0)
        || h.could(spans.iter().filter(raw).map(|sp| sp.off()..sp.off() + sp.len()))
}

/// The path of a message of chat `of`, up to its name.
fn result_prefix(key: &SessionKey, of: &ChatOf) -> String {
    let mut p = format!("/sessions/{}/{}/", key.harness.name(), String::from_utf8_lossy(&key.id));
    if let ChatOf::Session(k) = of {
        if let Some(sub) = &k.sub {
            p.push_str(&format!("agents/{}/", String::from_utf8_lossy(&sub.name)));
        }
    }
    p.push_str("chat/");
    p
}

/// An `error` line: the session that could not be searched, and why.
fn error_line(s: &mut Search, e: &Error) {
    let Some(key) = s.sessions.as_ref().and_then(|v| v.get(s.session)) else { return };
    let line = format!("error\t/sessions/{}/{}\t{}\n", key.harness.name(), String::from_utf8_lossy(&key.id), e.text());
    s.pending.extend_from_slice(line.as_bytes());
}
