//! A chat index made fresh in bounded slices: a job of the daemon's own,
//! one per transcript at a time, which every request that needs the index
//! (a listing of `chat/`, a walk to a message, its stat or open) waits on.
//!
//! It opens the transcript with the mirror's probe and finds its pool
//! entry by (dev, ino, birth time) — an inode born again starts over, as
//! does a file that shrank. It reads the bytes at both ends of what was
//! indexed (a file rewritten in place starts over), then indexes what the
//! file grew by, in place: a window of `CHAT_MAP_BYTES` is mapped
//! (`mapped::Mapped`) and a kernel worker brings its pages in through the
//! ring; once they are in, the index is fed `CHAT_WINDOW_BYTES` of it a
//! turn, each turn yielded, so a slice is fed only after every other
//! completion of the turn has been handled and its replies submitted.
//! Another client's request waits behind at most one slice.
//!
//! The next window is mapped while this one is indexed: when a window's
//! pages are in, the one after it is mapped from its last newline — where
//! the index will stand once the window is fed, since a feed takes whole
//! lines — and its pages come in meanwhile. A guess that turns out wrong
//! (the index stopped short: full, or the chat moved branch) is dropped
//! and the window mapped again from where the index stands; a window with
//! no newline (a line longer than it) maps nothing ahead.
//!
//! A slice is fed where the index stands, never elsewhere; the entry is
//! marked with its refresher while one runs, so two refreshes never feed
//! one index. Only complete lines are indexed: a record being written
//! waits for its newline. A line longer than a slice doubles the slice,
//! one longer than the window doubles the window, up to
//! `CHAT_LINE_BYTES_MAX`, past which the index stops there and its listing
//! answers an error. A file cut short while a window is read (the mapping's
//! guard reports it torn) is indexed again from the start.
//!
//! A compressed transcript (`zst::is_compressed`) is first decoded into a
//! copy in memory, a slice a turn (`inflate`), and the copy is the file
//! its index reads: its entry's fd is the copy's.

use std::os::fd::{AsRawFd, OwnedFd};
use std::rc::Rc;

use crate::chat::digest::{FileId, Seen};
use crate::chat::pool::ChatRef;
use crate::chat::Format;
use crate::errors::Error;
use crate::facts::Root;
use crate::harness::Harness;
use crate::mapped::{Mapped, Torn};
use crate::meta::Meta;
use crate::ring::Sub;
use crate::tree::{Backing, Loc, Part};

use super::super::probe::{Batch, Kind, Probe, Target};
use super::super::world::{release_file, World};
use super::cx::{drive, ChatOf, Cx, Event, Step, Wake};
use super::inflate::{Inflate, Progress};

/// Bytes of transcript one turn of the loop feeds the index: the longest
/// another client's request waits behind indexing (about 0.1 ms at the
/// indexer's speed), yet large enough that a turn per slice is noise.
pub(crate) const CHAT_WINDOW_BYTES: usize = 256 << 10;
/// Bytes of transcript one window maps, its pages brought in by one
/// kernel worker's populate: large enough that the map, the populate and
/// the unmap cost little per byte (1 MiB windows indexed at ~89% of the
/// in-memory speed, 4 MiB at 92–98%, 16 MiB at 95–98%: bench/README,
/// "Mapped windows and deferred task work"),
/// small enough that two per refresh are a few megabytes of page tables
/// and resident pages.
pub(crate) const CHAT_MAP_BYTES: usize = 4 << 20;
/// The longest line (record) a transcript may have; a window grows to hold
/// one. Past it the index stops there and its listing answers an error.
pub(crate) const CHAT_LINE_BYTES_MAX: usize = 256 << 20;
const _: () = assert!(
    CHAT_WINDOW_BYTES <= CHAT_MAP_BYTES && CHAT_MAP_BYTES <= CHAT_LINE_BYTES_MAX,
    "a slice is fed from a window, and a window grows to the longest line"
);

/// A transcript a refresh reads: its harness and path beneath the base.
pub(crate) type TranscriptKey = (Harness, Vec<u8>);

pub(crate) use super::super::fresh::CHAT_FRESH_FOR;

/// The job's ops: the open's probe is op 0 (the batch's index), the ends'
/// reads `OP_HEAD` and `OP_TAIL`; windows are numbered from `OP_WINDOW`
/// on, each populate its own, so a window given up is known when its
/// populate comes back.
const OP_HEAD: u32 = 1;
const OP_TAIL: u32 = 2;
const OP_WINDOW: u32 = 3;
/// A read of a compressed transcript being decoded.
const OP_INFLATE: u32 = u32::MAX;

/// Windows mapped at once: the one being fed and the one after it.
const WINDOWS_IN_FLIGHT: usize = 2;

/// A window mapped: where in the file it starts (a line's start), its
/// length, its populate's op, and the mapping once its pages are in.
struct Window {
    op: u32,
    offset: u64,
    len: usize,
    map: Option<Mapped>,
}

pub(crate) struct Refresh {
    key: TranscriptKey,
    backing: Backing,
    format: Format,
    stage: Stage,
    entry: Option<ChatRef>,
    size: u64,
    /// Bytes a window maps (`CHAT_MAP_BYTES`, wider for a longer line).
    map_len: usize,
    /// Bytes a turn feeds (`CHAT_WINDOW_BYTES`, wider for a longer line).
    slice: usize,
    head: Option<Vec<u8>>,
    tail: Option<Vec<u8>>,
    /// Windows mapped and not yet wholly fed, in file order
    /// (`WINDOWS_IN_FLIGHT`).
    windows: std::collections::VecDeque<Window>,
    next_op: u32,
    /// The entry this job marked as its own (`Entry::refresher`).
    marked: Option<usize>,
    /// For a `wait` reader: its entry may be made past the pool's cap.
    watched: bool,
    /// Joined, after the file was sized, by a request that needs it as it
    /// is now: once done, look at the file again (`again`).
    again: bool,
    /// Its name says it is compressed: it is read through a decoded copy.
    compressed: bool,
    /// It holds a chat slot (`server::slots`), given back when it finishes.
    slotted: bool,
    /// Every request waiting on it wants only the usage: a file as its
    /// digest says it was indexed needs no index (`Event::Counted`).
    usage_only: bool,
    /// The file as this refresh's open saw it, for its digest, and
    /// whether it had settled by then (`Digest::settled`).
    seen: Option<(Seen, bool)>,
    /// It looked at the file instead of opening it (its path's digest was
    /// settled) and the look did not do: it opens it now.
    looked: bool,
}

enum Stage {
    /// Made, waiting for a chat slot: started by the first event it gets.
    Queued,
    Open(Batch),
    /// The ends its digest names being read afresh: as they were, its
    /// usage is the digest's and nothing is indexed.
    Digest(Box<Checking>),
    Inflate(Box<Inflate>),
    Verify,
    Index,
}

/// A file a digest may hold for, open, while its ends are read.
struct Checking {
    file: FileId,
    fd: OwnedFd,
    meta: Meta,
}

impl Refresh {
    /// The refresh of an agent's or a session's transcript, if it has one
    /// with a chat; `watched` for a `wait` reader's (`Pool::entry`).
    pub(crate) fn for_chat(w: &World, of: &ChatOf, watched: bool) -> Option<Refresh> {
        let (format, key, backing) = match of {
            ChatOf::Agent(slot, gen) => {
                let (slot, gen) = (*slot, *gen);
                let format = crate::tree::chat_format(&w.agents, slot, gen)?;
                let a = w.agents.get(slot, gen)?;
                let rel = a.session.as_ref()?.transcript.clone()?;
                let backing = w.tree.backing(&Loc::Agent { slot, gen, part: Part::Transcript }, &w.agents)?;
                (format, (a.found.harness, rel), backing)
            }
            ChatOf::Session(k) => {
                let format = crate::sessions::chat_format(k)?;
                let backing = w.tree.beneath(k.harness, k.own_rel().to_vec())?;
                (format, (k.harness, k.own_rel().to_vec()), backing)
            }
        };
        let compressed = crate::zst::is_compressed(&key.1);
        Some(Refresh {
            key,
            backing,
            format,
            stage: Stage::Queued,
            entry: None,
            size: 0,
            map_len: CHAT_MAP_BYTES,
            slice: CHAT_WINDOW_BYTES,
            head: None,
            tail: None,
            windows: std::collections::VecDeque::new(),
            next_op: OP_WINDOW,
            marked: None,
            watched,
            again: false,
            compressed,
            slotted: false,
            usage_only: true,
            seen: None,
            looked: false,
        })
    }

    /// A request that needs the index as the file is now joined this
    /// refresh: if the file was sized already, what was written since is
    /// not in what this refresh reads, so it looks at the file once more
    /// before it wakes anyone. One flag, however many join: the second
    /// look starts after all of them.
    pub(crate) fn again(&mut self) {
        if !matches!(self.stage, Stage::Queued | Stage::Open(_)) {
            self.again = true;
        }
    }

    /// A request that reads the index itself waits on it: no digest will
    /// do in its place.
    pub(crate) fn needs_index(&mut self) {
        self.usage_only = false;
    }

    /// It takes (or is handed) a chat slot.
    pub(crate) fn take_slot(&mut self) {
        debug_assert!(!self.slotted, "a refresh takes one slot");
        self.slotted = true;
    }

    /// Whether it holds a chat slot, to be handed on when it finishes.
    pub(crate) fn slotted(&self) -> bool {
        self.slotted
    }

    /// The transcript it refreshes: one refresh per key at a time.
    pub(crate) fn key(&self) -> &TranscriptKey {
        &self.key
    }

    pub(crate) fn step(&mut self, ev: Event, cx: &mut Cx) -> Step {
        // A queued refresh is started by the turn its slot came (`Resume`).
        let ev = if matches!(self.stage, Stage::Queued) { Event::Start } else { ev };
        if let Event::Start = ev {
            // (Again, too: what the last look read is not this one's.)
            (self.head, self.tail) = (None, None);
            // Reads still in flight come back to no window, and are dropped.
            self.windows.clear();
            // Only a usage is wanted and its path's digest is settled: a look
            // (a statx, no open) may be all it needs.
            let look = self.usage_only && !self.looked && cx.chats.digests.settled_at(&self.key);
            if let Some(found) = look.then(|| cx.listings.seen(Root::Harness(self.key.0), &self.key.1)).flatten() {
                // A look a moment ago will do, as an index that old would.
                return self.found(cx, found, None);
            }
            let kind = if look { Kind::Look } else { Kind::Read };
            let probe = Probe::new(Target::Beneath(self.backing.clone()), kind, cx.cfg.allow_hard_links);
            self.stage = Stage::Open(Batch::one(probe));
        }
        // The stage is the job's own while it steps: each arm gives it back,
        // or hands on what it carried.
        match (std::mem::replace(&mut self.stage, Stage::Verify), ev) {
            (Stage::Open(mut batch), ev) => match drive(&mut batch, &mut cx.ops, ev) {
                Err(step) => {
                    self.stage = Stage::Open(batch);
                    step
                }
                Ok(()) => {
                    let (found, fd) = batch.into_one(&mut cx.ops);
                    cx.listings.saw(Root::Harness(self.key.0), &self.key.1, found);
                    self.found(cx, found, fd)
                }
            },
            (Stage::Inflate(mut inf), Event::Done(OP_INFLATE, c)) => match inf.landed(c.fd, c.result, c.buf) {
                Ok(()) => {
                    self.stage = Stage::Inflate(inf);
                    Step::Yield
                }
                Err(e) => self.inflate_failed(cx, *inf, e),
            },
            (Stage::Inflate(inf), Event::Resume) => self.inflate_step(cx, inf),
            (Stage::Digest(c), Event::Done(op, done)) if op == OP_HEAD || op == OP_TAIL => {
                self.end_read(op, done.result, done.buf);
                self.digest_checked(cx, c)
            }
            (Stage::Verify, Event::Done(op, done)) if op == OP_HEAD || op == OP_TAIL => {
                self.end_read(op, done.result, done.buf);
                self.verified(cx)
            }
            (Stage::Index, Event::Done(op, c)) => {
                self.stage = Stage::Index;
                self.landed(cx, op, c.result, c.map)
            }
            (Stage::Index, Event::Resume) => {
                self.stage = Stage::Index;
                self.feed(cx)
            }
            // (A completion of a stage given up: dropped.)
            (stage, _) => {
                self.stage = stage;
                Step::Wait
            }
        }
    }

    /// One of the ends (`OP_HEAD`, `OP_TAIL`) is read: its bytes, or none.
    fn end_read(&mut self, op: u32, result: i32, buf: Vec<u8>) {
        let bytes = if result < 0 { Vec::new() } else { buf };
        *if op == OP_HEAD { &mut self.head } else { &mut self.tail } = Some(bytes);
    }

    /// The file was found (opened as `fd`, or only looked at): counted by
    /// its digest, or its index refreshed.
    fn found(&mut self, cx: &mut Cx, found: Result<Meta, i32>, fd: Option<OwnedFd>) -> Step {
        let meta = match found {
            Ok(m) if m.is_regular() => m,
            _ => {
                fd.into_iter().for_each(|fd| cx.ops.close(fd));
                return self.done(cx, Err(Error::NotFound));
            }
        };
        let file = (meta.dev, meta.ino, meta.btime);
        let seen = Seen::of(&meta, self.format);
        self.seen = Some((seen, meta.settled_by(crate::meta::wall_ns())));
        let digest = cx.chats.digests.get(file, seen).filter(|_| self.usage_only);
        // Settled when it was indexed: its times say it is as it was. (A
        // compressed file's size and mtime are its check: its copy's ends
        // went with the copy.)
        let (holds, probe) = match digest {
            Some(d) => (d.settled || self.compressed, Some(d.ends.probe)),
            None => (false, None),
        };
        let fd = match (fd, holds) {
            (None, true) => return self.counted(file, "a look"),
            (Some(fd), true) => {
                cx.ops.close(fd);
                return self.counted(file, "its times");
            }
            (Some(fd), false) => fd,
            // Looked, and it needs opening after all.
            (None, false) => {
                self.looked = true;
                return self.step(Event::Start, cx);
            }
        };
        match probe {
            Some(probe) => {
                let raw = fd.as_raw_fd();
                self.stage = Stage::Digest(Box::new(Checking { file, fd, meta }));
                self.read_from(cx, raw, OP_HEAD, probe.head.0, probe.head.1);
                self.read_from(cx, raw, OP_TAIL, probe.tail.0, probe.tail.1);
                Step::Wait
            }
            None => self.take_entry(cx, fd, meta),
        }
    }

    /// An end its digest names is back; once both are: as they were (and
    /// nobody who joined since reads the index itself), its usage is the
    /// digest's; else it is indexed as any other.
    fn digest_checked(&mut self, cx: &mut Cx, c: Box<Checking>) -> Step {
        let (Some(head), Some(tail)) = (&self.head, &self.tail) else {
            self.stage = Stage::Digest(c);
            return Step::Wait;
        };
        let holds = cx.chats.digests.of(c.file).is_some_and(|d| d.ends.hold(head, tail));
        (self.head, self.tail) = (None, None);
        if holds && self.usage_only {
            cx.ops.close(c.fd);
            return self.counted(c.file, "its ends");
        }
        let Checking { fd, meta, .. } = *c;
        self.take_entry(cx, fd, meta)
    }

    /// As it was indexed: its usage is its digest's.
    fn counted(&mut self, file: FileId, how: &str) -> Step {
        log::debug!("usage of {}: its digest ({how})", self.key.1.escape_ascii());
        Step::Finished(Wake::Counted(file))
    }

    /// The file is open and needs its index: find its entry, then verify
    /// its ends or index.
    fn take_entry(&mut self, cx: &mut Cx, fd: OwnedFd, meta: Meta) -> Step {
        let (r, old) = match cx.chats.entry(meta.dev, meta.ino, meta.btime, self.format, self.watched) {
            Ok(got) => got,
            Err(_) => {
                cx.ops.close(fd);
                return self.done(cx, Err(Error::ChatsBusy));
            }
        };
        if let Some(old) = old {
            release_file(cx.ops.ring, cx.held, old);
        }
        let me = (cx.ops.key, cx.ops.gen);
        if cx.chats.at(r.i).refresher.is_some_and(|other| other != me) {
            // Another path to the same file is being refreshed: its index
            // is the one to read, and it is on its way.
            cx.ops.close(fd);
            self.entry = Some(r);
            return self.done(cx, Ok(()));
        }
        cx.chats.at(r.i).refresher = Some(me);
        self.marked = Some(r.i);
        if self.compressed {
            return self.inflate(cx, r, fd, meta);
        }
        self.hold(cx, r, Rc::new(fd));
        self.adopt(cx, r, meta.size)
    }

    /// The entry holds `fd`, the file its index reads, and lets go of the
    /// one it held before.
    fn hold(&mut self, cx: &mut Cx, r: ChatRef, fd: Rc<OwnedFd>) {
        let e = cx.chats.at(r.i);
        if e.fd.as_ref().is_some_and(|held| Rc::ptr_eq(held, &fd)) {
            return;
        }
        cx.held.files.take(1);
        if let Some(old) = e.fd.replace(fd) {
            release_file(cx.ops.ring, cx.held, old);
        }
    }

    /// The entry's file is `size` bytes: start over if it shrank; then
    /// check its ends, or index on.
    fn adopt(&mut self, cx: &mut Cx, mut r: ChatRef, size: u64) -> Step {
        if size < cx.chats.at(r.i).index.covered() {
            r = cx.chats.restart(r.i);
        }
        self.entry = Some(r);
        self.size = size;
        let e = cx.chats.at(r.i);
        if e.index.covered() == 0 {
            self.stage = Stage::Index;
            return self.next_window(cx);
        }
        let probe = e.index.probe();
        self.stage = Stage::Verify;
        self.read_at(cx, OP_HEAD, probe.head.0, probe.head.1);
        self.read_at(cx, OP_TAIL, probe.tail.0, probe.tail.1);
        Step::Wait
    }

    /// A compressed transcript, as `meta` says it is now: its copy is as
    /// it was decoded (index it), or it grew (decode on from its last whole
    /// frame), or it is another file (decode it whole, the index anew).
    fn inflate(&mut self, cx: &mut Cx, mut r: ChatRef, fd: OwnedFd, meta: Meta) -> Step {
        let e = cx.chats.at(r.i);
        let held = e.fd.clone().filter(|_| e.inflated.is_some());
        let (from, copy, mine) = match (&e.inflated, held) {
            (Some(c), Some(_)) if c.source == (meta.size, meta.mtime_ns()) => {
                let len = c.len;
                cx.ops.close(fd);
                return self.adopt(cx, r, len);
            }
            (Some(c), Some(copy)) if meta.size > c.source.0 => (c.frame_end, Some(copy), c.len),
            _ => {
                r = cx.chats.restart(r.i);
                cx.chats.at(r.i).inflated = None;
                ((0, 0), None, 0)
            }
        };
        self.entry = Some(r);
        let room = cx.cfg.max_inflated.saturating_sub(cx.chats.inflated_bytes() - mine);
        match Inflate::new(&meta, copy, from, room) {
            Ok(mut inf) => {
                inf.src = Some(fd);
                self.inflate_step(cx, Box::new(inf))
            }
            Err(e) => {
                cx.ops.close(fd);
                self.done(cx, Err(e))
            }
        }
    }

    /// A turn of the decoding: a slice, or a read of what comes next.
    fn inflate_step(&mut self, cx: &mut Cx, mut inf: Box<Inflate>) -> Step {
        match inf.step() {
            Ok(Progress::Yield) => {
                self.stage = Stage::Inflate(inf);
                Step::Yield
            }
            Ok(Progress::Read { offset, len }) => {
                if !cx.admit_read(len) {
                    self.stage = Stage::Inflate(inf);
                    return Step::Yield;
                }
                let Some(fd) = inf.src.take() else { return self.inflate_failed(cx, *inf, Error::Io) };
                let raw = fd.as_raw_fd();
                let buf = Vec::with_capacity(len);
                let (len, expect) = (len as u32, len as u32);
                cx.ops.submit(OP_INFLATE, Sub::Read { fd: raw, owned: Some(fd), buf, len, offset, expect });
                self.stage = Stage::Inflate(inf);
                Step::Wait
            }
            Ok(Progress::Done) => self.inflated(cx, *inf),
            Err(e) => self.inflate_failed(cx, *inf, e),
        }
    }

    /// The copy is whole: the entry holds it, and its index reads it.
    fn inflated(&mut self, cx: &mut Cx, mut inf: Inflate) -> Step {
        if let Some(fd) = inf.src.take() {
            cx.ops.close(fd);
        }
        let Some(r) = self.entry else { return self.done(cx, Err(Error::NotFound)) };
        let (copy, inflated) = match inf.finish() {
            Ok(got) => got,
            Err(e) => return self.done(cx, Err(e)),
        };
        let len = inflated.len;
        cx.chats.at(r.i).inflated = Some(inflated);
        self.hold(cx, r, copy);
        self.adopt(cx, r, len)
    }

    /// The decoding failed: the compressed file is let go, and so is a
    /// copy no entry holds.
    fn inflate_failed(&mut self, cx: &mut Cx, inf: Inflate, e: Error) -> Step {
        release_inflate(cx, inf);
        self.done(cx, Err(e))
    }

    /// Start a read of `len` bytes at `offset` as op `op` (a check of the
    /// indexed bytes' ends).
    fn read_at(&mut self, cx: &mut Cx, op: u32, offset: u64, len: usize) {
        if let Some(fd) = self.fd(cx) {
            self.read_from(cx, fd, op, offset, len);
        }
    }

    /// `read_at` of the open file `fd`.
    fn read_from(&mut self, cx: &mut Cx, fd: std::os::fd::RawFd, op: u32, offset: u64, len: usize) {
        let buf = Vec::with_capacity(len);
        cx.ops.submit(op, Sub::Read { fd, owned: None, buf, len: len as u32, offset, expect: len as u32 });
    }

    /// The transcript's fd, held by its entry.
    fn fd(&self, cx: &mut Cx) -> Option<std::os::fd::RawFd> {
        self.entry.and_then(|r| cx.chats.get(r)).and_then(|e| e.fd.as_ref()).map(|f| f.as_raw_fd())
    }

    /// Map the window of `len` bytes at `offset`, after those in flight,
    /// and have a kernel worker bring its pages in.
    fn map_window(&mut self, cx: &mut Cx, offset: u64, len: usize) -> Result<(), Error> {
        let fd = self.fd(cx).ok_or(Error::NotFound)?;
        let map = Mapped::new(fd, offset, len).map_err(|e| {
            log::warn!("chat: mapping {len} bytes of a transcript: {e}");
            Error::from_errno(e.raw_os_error().unwrap_or(libc::EIO))
        })?;
        let op = self.next_op;
        self.next_op = self.next_op.checked_add(1).unwrap_or(OP_WINDOW);
        cx.ops.submit(op, Sub::Populate { map });
        self.windows.push_back(Window { op, offset, len, map: None });
        Ok(())
    }

    /// A window's pages are in. The first in line is fed from the next
    /// turn on, and the window after it is mapped now, so its pages come
    /// in while this one is indexed. A populate that failed (a kernel
    /// without it, a file cut short) still hands its mapping back: the
    /// loop then takes the page faults itself, and a read past a new end
    /// is caught by the guard (`Mapped::read`).
    fn landed(&mut self, cx: &mut Cx, op: u32, result: i32, map: Option<Mapped>) -> Step {
        let Some(at) = self.windows.iter().position(|w| w.op == op) else {
            // A window given up (a wrong guess, a restart): dropped.
            return Step::Wait;
        };
        if result < 0 {
            log::debug!("chat: populating a window: {}", std::io::Error::from_raw_os_error(-result));
        }
        let Some(map) = map else { return self.done(cx, Err(Error::Io)) };
        self.windows[at].map = Some(map);
        if at > 0 {
            return Step::Wait;
        }
        self.read_ahead(cx);
        Step::Yield
    }

    /// Map the window after the last one mapped, from its last newline:
    /// where the index will stand once it is fed.
    fn read_ahead(&mut self, cx: &mut Cx) {
        if self.windows.len() >= WINDOWS_IN_FLIGHT {
            return;
        }
        let Some(Window { map: Some(map), .. }) = self.windows.back() else { return };
        let Ok(Some(nl)) = map.read(|b| memchr::memrchr(b'\n', b)) else { return };
        let at = map.offset() + nl as u64 + 1;
        if at >= self.size {
            return;
        }
        let len = (self.size - at).min(self.map_len as u64) as usize;
        if cx.admit_read(len) {
            // (A failure shows again, and is answered, when the index
            // reaches this window and maps it itself.)
            let _ = self.map_window(cx, at, len);
        }
    }

    /// Both ends are back: the same file grew, or it is another one now.
    fn verified(&mut self, cx: &mut Cx) -> Step {
        let (Some(head), Some(tail), Some(r)) = (&self.head, &self.tail, self.entry) else { return Step::Wait };
        if !cx.chats.get(r).is_some_and(|e| e.index.unchanged(head, tail)) {
            self.entry = Some(cx.chats.restart(r.i));
        }
        self.stage = Stage::Index;
        self.next_window(cx)
    }

    /// Map the next window, or finish when the index covers the file.
    fn next_window(&mut self, cx: &mut Cx) -> Step {
        let Some(e) = self.entry.and_then(|r| cx.chats.get(r)) else { return self.done(cx, Err(Error::NotFound)) };
        let covered = e.index.covered();
        if covered >= self.size || e.index.full() {
            return self.done(cx, Ok(()));
        }
        let len = (self.size - covered).min(self.map_len as u64) as usize;
        if !cx.admit_read(len) {
            return Step::Yield;
        }
        match self.map_window(cx, covered, len) {
            Ok(()) => Step::Wait,
            Err(e) => self.done(cx, Err(e)),
        }
    }

    /// A turn: feed one slice of the first window, where the index stands.
    fn feed(&mut self, cx: &mut Cx) -> Step {
        let Some(r) = self.entry else { return self.done(cx, Err(Error::NotFound)) };
        let Some(covered) = cx.chats.get(r).map(|e| e.index.covered()) else {
            return self.done(cx, Err(Error::NotFound));
        };
        // A window the index has reached the next one of is done with; one
        // that does not hold where the index stands was a wrong guess.
        while self.windows.len() > 1 && self.windows[1].offset <= covered {
            self.windows.pop_front();
        }
        match self.windows.front() {
            None => return self.next_window(cx),
            Some(w) if w.offset > covered || covered >= w.offset + w.len as u64 => {
                self.windows.clear();
                return self.next_window(cx);
            }
            Some(Window { map: None, .. }) => return Step::Wait,
            Some(_) => {}
        }
        self.read_ahead(cx);
        // (Read-ahead adds windows behind this one, never before it.)
        let Some(Window { map: Some(map), .. }) = self.windows.front() else { return self.next_window(cx) };
        let from = (covered - map.offset()) as usize;
        let to = (from + self.slice).min(map.len());
        let at_end = to == map.len();
        let Some(e) = cx.chats.get_mut(r) else { return self.done(cx, Err(Error::NotFound)) };
        match map.read(|b| e.index.feed(covered, &b[from..to])) {
            Err(Torn) => {
                log::info!("chat: a transcript shrank while it was indexed; indexing it again");
                self.entry = Some(cx.chats.restart(r.i));
                self.step(Event::Start, cx)
            }
            Ok(0) => self.stalled(cx, covered, at_end),
            Ok(_) if e.index.full() => self.done(cx, Ok(())),
            Ok(_) => {
                self.slice = CHAT_WINDOW_BYTES;
                Step::Yield
            }
        }
    }

    /// No whole line in the slice at `covered`: widen the slice, map from
    /// the line, or wait for its newline.
    fn stalled(&mut self, cx: &mut Cx, covered: u64, at_end: bool) -> Step {
        if !at_end {
            // A line longer than the slice: a slice twice as wide, next turn.
            self.slice *= 2;
            return Step::Yield;
        }
        let Some(w) = self.windows.front() else { return self.next_window(cx) };
        if w.offset + w.len as u64 >= self.size {
            // The rest of the file is a line still being written: it waits
            // for its newline.
            return self.done(cx, Ok(()));
        }
        if w.offset == covered {
            // A line longer than the window: map it again, twice as wide.
            if self.map_len >= CHAT_LINE_BYTES_MAX {
                log::warn!("chat: a record longer than {CHAT_LINE_BYTES_MAX} bytes; indexing stops there");
                if let Some(e) = self.entry.and_then(|r| cx.chats.get_mut(r)) {
                    e.stuck = true;
                }
                return self.done(cx, Ok(()));
            }
            self.map_len *= 2;
        }
        self.windows.clear();
        self.next_window(cx)
    }

    /// The refresh is over: unmark the entry and wake every waiter — or,
    /// when a request that needs the file as it is now joined it late,
    /// look at the file again first.
    fn done(&mut self, cx: &mut Cx, result: Result<(), Error>) -> Step {
        // What this refresh indexed, its digest keeps past the entry.
        if let (Ok(()), Some(i), Some((seen, settled))) = (&result, self.marked, self.seen) {
            cx.chats.remember(i, self.key.clone(), seen, settled);
        }
        self.unmark(cx);
        self.windows.clear();
        if std::mem::take(&mut self.again) && result.is_ok() {
            return self.step(Event::Start, cx);
        }
        let result = result.and_then(|()| {
            let r = self.entry.ok_or(Error::NotFound)?;
            self.report(cx, r.i);
            Ok(ChatRef { i: r.i, gen: cx.chats.at(r.i).gen })
        });
        Step::Finished(Wake::Refreshed(result))
    }

    /// Tell `/health` what the index met since the last refresh.
    fn report(&self, cx: &mut Cx, i: usize) {
        let e = cx.chats.at(i);
        let drift = e.index.drift();
        if *drift == e.reported {
            return;
        }
        let (since, id) = (drift.since(&e.reported), (e.dev, e.ino));
        e.reported = drift.clone();
        cx.tree.health_mut().add(self.key.0, &self.key.1, id, &since);
    }

    fn unmark(&mut self, cx: &mut Cx) {
        if let Some(i) = self.marked.take() {
            let me = (cx.ops.key, cx.ops.gen);
            let e = cx.chats.at(i);
            if e.refresher == Some(me) {
                e.refresher = None;
            }
        }
    }

    pub(crate) fn release(mut self, cx: &mut Cx) {
        self.unmark(cx);
        match self.stage {
            Stage::Open(batch) => batch.release(&mut cx.ops),
            Stage::Digest(c) => cx.ops.close(c.fd),
            Stage::Inflate(inf) => release_inflate(cx, *inf),
            _ => {}
        }
    }
}

/// A decoding given up: its compressed file closed through the ring, and
/// its copy too unless an entry holds it.
fn release_inflate(cx: &mut Cx, mut inf: Inflate) {
    if let Some(fd) = inf.src.take() {
        cx.ops.close(fd);
    }
    let copy = inf.copy.clone();
    drop(inf);
    if let Ok(fd) = Rc::try_unwrap(copy) {
        cx.ops.close(fd);
    }
}
