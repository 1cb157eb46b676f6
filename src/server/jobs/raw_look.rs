//! A search's raw look at one transcript (`Matcher::seen_in`): its open,
//! then its bytes read a stretch at a time, until every term it must hold
//! is seen and the anchor's places are noted (its messages are searched)
//! or its end is (nothing in it can match: it is passed over, never
//! indexed).
//!
//! The stretches are mapped (`LOOK_MAP_BYTES`) and their pages brought in
//! by a kernel worker (`Sub::Populate`), `LOOK_MAPS` of them in flight,
//! so the next stretch's pages come in on another CPU while the loop
//! looks at one. They overlap by the longest term less a byte, so no term
//! is cut in two. (Read into buffers instead, by the same worker, the
//! look was slower: the 1.4 GB home of `cargo bench --bench search`,
//! nothing to find, took 0.64–0.78 s against 0.47 s mapped: the worker's
//! copy ran at about 4 GB/s, slower than its mapping.)

use std::collections::VecDeque;
use std::os::fd::{AsRawFd, OwnedFd};

use crate::chat::Format;
use crate::mapped::Mapped;
use crate::meta::Meta;
use crate::ring::Sub;
use crate::search::{Hits, Matcher};

use super::super::probe::Batch;
use super::cx::{drive, Cx, Event, Step};

/// Bytes of a stretch mapped.
pub(crate) const LOOK_MAP_BYTES: usize = 2 << 20;
/// Stretches mapped at once, ahead of the one looked at.
const LOOK_MAPS: usize = 2;
/// Bytes looked at before the look yields (the loop serves others).
const LOOK_SLICE_BYTES: usize = 4 << 20;
/// The op numbers of the stretches' populates: one of `READ_OPS` a
/// stretch, so that one a look no longer wants is told apart when it
/// comes back.
pub(crate) const OP_READ: u32 = u32::MAX - 4096;
const READ_OPS: u32 = 1024;

/// Whether op `op` is one of a look's stretches.
pub(crate) fn is_read(op: u32) -> bool {
    (OP_READ..OP_READ + READ_OPS).contains(&op)
}

struct Read {
    op: u32,
    at: u64,
    len: u32,
    /// Its pages, once back (none: they could not be mapped).
    back: Option<Option<Mapped>>,
}

pub(crate) struct RawLook {
    /// The chat it is of: (session, chat).
    pub here: (usize, usize),
    batch: Option<Batch>,
    pub fd: Option<OwnedFd>,
    size: u64,
    /// Bytes looked at, and asked for.
    at: u64,
    asked: u64,
    need: u32,
    pub format: Format,
    /// The file as the open found it, and when.
    pub meta: Option<(Meta, i128)>,
    /// Where it holds the query's anchor (when the query has one).
    pub hits: Option<Hits>,
    reads: VecDeque<Read>,
    scratch: Vec<u8>,
    /// The next read to number.
    seq: u32,
}

/// How the look stands.
pub(crate) enum Looked {
    /// Its open or reads are in flight, or it yields.
    Step(Step),
    /// Over: whether every term was seen (the chat's messages are to be
    /// searched).
    Over { passed: bool },
}

impl RawLook {
    /// A look at the file `batch` opens, for the terms `need`, noting the
    /// anchor's places in `hits`; `seq` numbers its reads apart from any
    /// look before it.
    pub(crate) fn new(
        here: (usize, usize),
        batch: Batch,
        need: u32,
        format: Format,
        hits: Option<Hits>,
        seq: u32,
    ) -> RawLook {
        RawLook {
            here,
            batch: Some(batch),
            fd: None,
            size: 0,
            at: 0,
            asked: 0,
            need,
            format,
            meta: None,
            hits,
            reads: VecDeque::new(),
            scratch: Vec::new(),
            seq,
        }
    }

    /// Reads numbered so far (the next look numbers its own from here).
    pub(crate) fn seq(&self) -> u32 {
        self.seq
    }

    /// An event of the look's: its open's, a read back, or its turn.
    pub(crate) fn step(&mut self, cx: &mut Cx, ev: Event, m: &Matcher) -> Looked {
        if let Some(batch) = &mut self.batch {
            if let Err(step) = drive(batch, &mut cx.ops, ev) {
                return Looked::Step(step);
            }
            return self.opened(cx, m);
        }
        if let Event::Done(op, c) = ev {
            let Some(r) = self.reads.iter_mut().find(|r| r.op == op) else { return Looked::Step(Step::Wait) };
            if c.result < 0 {
                log::debug!("search: a stretch's pages: {}", std::io::Error::from_raw_os_error(-c.result));
            }
            r.back = Some(c.map);
            // Waited for: the one looked at next.
            if self.reads.front().is_some_and(|r| r.op == op) {
                return self.look(cx, m);
            }
            return Looked::Step(Step::Wait);
        }
        self.look(cx, m)
    }

    /// Its fd is closed through the ring, its open let go of. (Reads in
    /// flight come back to nobody, and their buffers go.)
    pub(crate) fn release(self, cx: &mut Cx) {
        if let Some(batch) = self.batch {
            batch.release(&mut cx.ops);
        }
        if let Some(fd) = self.fd {
            cx.ops.close(fd);
        }
    }

    /// The file is open (or could not be: its index says why; or is not
    /// there: over, not passed, with no meta).
    fn opened(&mut self, cx: &mut Cx, m: &Matcher) -> Looked {
        let (found, fd) = self.batch.take().expect("driven").into_one(&mut cx.ops);
        match (found, fd) {
            (Ok(meta), Some(fd)) => {
                (self.fd, self.size) = (Some(fd), meta.size);
                self.meta = Some((meta, crate::meta::wall_ns()));
                self.look(cx, m)
            }
            (Err(libc::ENOENT), _) => Looked::Over { passed: false },
            (_, fd) => {
                if let Some(fd) = fd {
                    cx.ops.close(fd);
                }
                Looked::Over { passed: true }
            }
        }
    }

    /// Whether the rest of the file is still to be looked at: a term not
    /// yet seen, or the anchor's places still noted.
    fn wants_more(&self) -> bool {
        self.at < self.size && (self.need != 0 || self.hits.as_ref().is_some_and(|h| !h.over()))
    }

    /// Look at the stretches that are back, in order, a slice a turn; ask
    /// for the next ones; wait for the one due.
    fn look(&mut self, cx: &mut Cx, m: &Matcher) -> Looked {
        let mut looked = 0;
        loop {
            if !self.wants_more() {
                return Looked::Over { passed: self.need == 0 };
            }
            self.ask(cx, m);
            let Some(r) = self.reads.front() else { return Looked::Step(Step::Yield) };
            let Some(back) = &r.back else { return Looked::Step(Step::Wait) };
            if back.is_none() || looked >= LOOK_SLICE_BYTES {
                // Not mapped: its index sorts it out.
                return if back.is_none() { Looked::Over { passed: true } } else { Looked::Step(Step::Yield) };
            }
            let r = self.reads.pop_front().expect("just looked at");
            let map = r.back.flatten().expect("mapped");
            let hits = self.hits.as_mut().map(|h| (h, r.at));
            let (need, scratch) = (&mut self.need, &mut self.scratch);
            if map.read(|b| m.seen_in(b, need, hits, scratch)).is_err() {
                // Cut short under the look: its index sorts it out.
                return Looked::Over { passed: true };
            }
            looked += map.len();
            self.at = (r.at + u64::from(r.len)).min(self.size);
        }
    }

    /// Ask for stretches up to `LOOK_MAPS` in flight.
    fn ask(&mut self, cx: &mut Cx, m: &Matcher) {
        let Some(fd) = self.fd.as_ref().map(AsRawFd::as_raw_fd) else { return };
        let overlap = m.longest().saturating_sub(1) as u64;
        while self.reads.len() < LOOK_MAPS && self.asked < self.size {
            let len = (self.size - self.asked).min(LOOK_MAP_BYTES as u64) as u32;
            if !cx.admit_read(len as usize) {
                return;
            }
            let at = self.asked;
            self.seq = self.seq.wrapping_add(1);
            let op = OP_READ + self.seq % READ_OPS;
            let back = match Mapped::new(fd, at, len as usize) {
                Ok(map) => {
                    cx.ops.submit(op, Sub::Populate { map });
                    None
                }
                // Not mapped (the look ends there, passed).
                Err(_) => Some(None),
            };
            self.reads.push_back(Read { op, at, len, back });
            let end = at + u64::from(len);
            self.asked = if end >= self.size { self.size } else { end - overlap.min(u64::from(len) - 1) };
        }
    }
}
