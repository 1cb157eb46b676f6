//! A Topen of a file or a directory on disk (a mirror, an agent's
//! transcript).
//!
//! First a look (O_PATH: never blocks, never runs a device's open) says
//! what the file is — or the look of the walk that just reached it, within
//! `conn::LOOK_REUSE_FOR` — and only a regular file or a directory is then
//! opened for reading (O_RDONLY|O_NONBLOCK|O_NOFOLLOW), and the opened fd
//! is checked again. A file keeps its fd for the fid (`OPEN_FILES_MAX` across all
//! connections). A directory is listed in bounded steps: one getdents64
//! buffer a turn of the loop, each name's statx relative to the open
//! directory through the ring, at most `--max-dir-entries` entries (past
//! which the open fails: never a shorter listing), and the snapshot kept
//! in name order as it comes so a listing read in several reads is stable.

use std::collections::BTreeMap;
use std::ffi::CString;
use std::os::fd::{AsRawFd, OwnedFd};
use std::rc::Rc;

use crate::errors::Error;
use crate::exclude;
use crate::meta::Meta;
use crate::proto::Qid;
use crate::tree::{self, Entry, Loc, Presence};

use super::super::dirents::Dirents;
use super::super::fids::Opened;
use super::super::probe::{means_absent, Batch, Kind, Probe, Target};
use super::super::world::OPEN_FILES_MAX;
use super::cx::{drive, drive_look, fail, Cx, Event, Reply, Step};

pub(crate) struct Open {
    fid: u32,
    loc: Loc,
    /// A look said the file is regular or a directory — this open's, or
    /// the walk's moments ago (`conn::LOOK_REUSE_FOR`): its probe opens it,
    /// and what was opened is checked as always. Else its probe looks.
    looked: bool,
    stage: Stage,
}

enum Stage {
    /// A look, or an open once `looked`.
    Probe(Batch),
    List(Box<DirRead>),
}

/// A directory being listed: its names a getdents64 buffer at a time, the
/// statx of that buffer's names in flight, the entries so far.
struct DirRead {
    qid: Qid,
    dirents: Dirents<OwnedFd>,
    names: Vec<Box<[u8]>>,
    batch: Batch,
    /// Each entry by name, with what its statx saw (kept for the walks
    /// that follow): ordered as they come, a buffer a turn, where a sort of
    /// 10,000 at the end was one turn of 4-8 ms.
    entries: BTreeMap<Box<[u8]>, (Entry, Meta)>,
    /// The listing read to its end, moved into the answer's shape
    /// `FINISH_SLICE` entries a turn.
    out: Option<Box<Out>>,
}

struct Out {
    values: std::collections::btree_map::IntoValues<Box<[u8]>, (Entry, Meta)>,
    entries: Vec<Entry>,
    metas: Vec<Meta>,
}

/// Entries of a listing read to its end moved into its answer a turn: all
/// 10,000 of a large directory at once (and their keys freed) was a turn
/// of 3-4 ms for every other client.
const FINISH_SLICE: usize = 2048;

impl Open {
    pub(crate) fn new(fid: u32, loc: Loc) -> Open {
        Open { fid, loc, looked: false, stage: Stage::Probe(Batch::default()) }
    }

    /// An open of a file a fresh look already saw is regular or a directory.
    pub(crate) fn after_look(fid: u32, loc: Loc) -> Open {
        Open { fid, loc, looked: true, stage: Stage::Probe(Batch::default()) }
    }

    pub(crate) fn step(&mut self, ev: Event, cx: &mut Cx) -> Step {
        if let Event::Start = ev {
            let Presence::Probe(b) = cx.tree.presence(&self.loc, cx.agents) else { return fail(Error::NotFound) };
            let kind = if self.looked { Kind::Read } else { Kind::Look };
            let batch = Batch::one(Probe::new(Target::Beneath(b), kind, cx.cfg.allow_hard_links));
            self.stage = Stage::Probe(batch);
        }
        // The stage is the job's own while it steps: each arm gives it
        // back, or hands what it carried on.
        match std::mem::replace(&mut self.stage, Stage::Probe(Batch::default())) {
            Stage::Probe(mut batch) => match drive_look(&mut batch, &mut cx.ops, ev) {
                Err(step) => {
                    self.stage = Stage::Probe(batch);
                    step
                }
                Ok(()) => match (batch.into_one(&mut cx.ops), self.looked) {
                    ((found, fd), true) => self.opened(cx, found, fd),
                    ((found, _), false) => self.looked(cx, found),
                },
            },
            Stage::List(mut l) => match l.step(ev, cx) {
                Err(step) => {
                    self.stage = Stage::List(l);
                    step
                }
                Ok((entries, metas)) => {
                    // The directory goes with its listing: a stat of a name
                    // in it is a statx of one name beneath this fd (`Listed`).
                    let (qid, entries) = (l.qid, Rc::new(entries));
                    l.batch.release(&mut cx.ops);
                    let dir = Some(l.dirents.into_fd());
                    Step::Answer(Ok(Reply::Listed { fid: self.fid, qid, entries, metas, dir }))
                }
            },
        }
    }

    /// The look is back, `found`: open what can be read.
    fn looked(&mut self, cx: &mut Cx, found: Result<Meta, i32>) -> Step {
        match found {
            Err(e) if means_absent(e) => fail(Error::NotFound),
            Err(e) => fail(Error::from_errno(e)),
            Ok(m) if m.is_dir() || m.is_regular() => {
                let Some(b) = cx.tree.backing(&self.loc, cx.agents) else { return fail(Error::NotFound) };
                let batch = Batch::one(Probe::new(Target::Beneath(b), Kind::Read, cx.cfg.allow_hard_links));
                self.looked = true;
                std::mem::replace(&mut self.stage, Stage::Probe(batch)).release(cx);
                self.step(Event::Resume, cx)
            }
            Ok(_) => fail(Error::NotRegular),
        }
    }

    /// The open is back, `found` and opened as `fd`: a file keeps its fd,
    /// a directory is listed.
    fn opened(&mut self, cx: &mut Cx, found: Result<Meta, i32>, fd: Option<OwnedFd>) -> Step {
        match (found, fd) {
            (Ok(m), Some(fd)) if m.is_regular() => {
                if cx.held.files.get() >= OPEN_FILES_MAX {
                    cx.ops.close(fd);
                    return fail(Error::TooManyOpenFiles);
                }
                cx.held.files.take(1);
                Step::Answer(Ok(Reply::Open {
                    fid: self.fid,
                    qid: m.qid(),
                    opened: Opened::File { fd: Rc::new(fd), size: m.size },
                }))
            }
            (Ok(m), Some(fd)) if m.is_dir() => {
                let listing = DirRead {
                    qid: m.qid(),
                    dirents: Dirents::new(fd),
                    names: Vec::new(),
                    batch: Batch::default(),
                    entries: BTreeMap::new(),
                    out: None,
                };
                std::mem::replace(&mut self.stage, Stage::List(Box::new(listing))).release(cx);
                self.step(Event::Resume, cx)
            }
            (Ok(_), Some(fd)) => {
                cx.ops.close(fd);
                fail(Error::NotRegular)
            }
            (Err(e), _) if !means_absent(e) => fail(Error::from_errno(e)),
            _ => fail(Error::NotFound),
        }
    }

    pub(crate) fn release(self, cx: &mut Cx) {
        self.stage.release(cx);
    }
}

impl Stage {
    fn release(self, cx: &mut Cx) {
        match self {
            Stage::Probe(b) => b.release(&mut cx.ops),
            Stage::List(l) => {
                l.batch.release(&mut cx.ops);
                cx.ops.close(l.dirents.into_fd());
            }
        }
    }
}

impl DirRead {
    /// One round: the statx of the last buffer's names, then the next
    /// buffer a turn later, then the answer a slice a turn. `Ok` with the
    /// entries in name order, and their metadata, at the end.
    fn step(&mut self, ev: Event, cx: &mut Cx) -> Result<(Vec<Entry>, Vec<Meta>), Step> {
        if self.out.is_some() {
            return self.finish();
        }
        if !self.batch.is_empty() {
            drive(&mut self.batch, &mut cx.ops, ev)?;
            self.absorb(cx);
            // One buffer's work a turn: the next waits for the loop.
            return Err(Step::Yield);
        }
        let names = match self.dirents.next_batch(cx.cfg.max_dir_entries) {
            Err(e) => return Err(fail(e)),
            Ok(None) => {
                let n = self.entries.len();
                let values = std::mem::take(&mut self.entries).into_values();
                self.out = Some(Box::new(Out { values, entries: Vec::with_capacity(n), metas: Vec::with_capacity(n) }));
                return self.finish();
            }
            Ok(Some(names)) => names,
        };
        let dirfd = self.dirents.fd().as_raw_fd();
        for n in names {
            if n.d_type == libc::DT_LNK || exclude::excluded(&n.name) {
                continue;
            }
            let Ok(c) = CString::new(n.name.clone()) else { continue };
            self.batch.push(Probe::new(Target::At { dirfd, name: c }, Kind::Look, cx.cfg.allow_hard_links));
            self.names.push(n.name.into_boxed_slice());
        }
        if self.batch.is_empty() {
            return Err(Step::Yield);
        }
        self.step(Event::Resume, cx)
    }

    /// A slice of the answer made; `Ok` with all of it at the end.
    fn finish(&mut self) -> Result<(Vec<Entry>, Vec<Meta>), Step> {
        let out = self.out.as_mut().expect("finishing");
        for (e, m) in out.values.by_ref().take(FINISH_SLICE) {
            out.entries.push(e);
            out.metas.push(m);
        }
        if out.values.len() > 0 {
            return Err(Step::Yield);
        }
        let out = self.out.take().expect("finishing");
        Ok((out.entries, out.metas))
    }

    /// A buffer's statx are back: keep the entries still there that are
    /// neither symlinks nor hard-linked files (unless allowed).
    fn absorb(&mut self, cx: &mut Cx) {
        let batch = std::mem::take(&mut self.batch);
        for (name, p) in std::mem::take(&mut self.names).into_iter().zip(batch.probes) {
            let Ok(m) = p.found() else { continue };
            if m.is_symlink() || (m.is_hard_linked() && !cx.cfg.allow_hard_links) {
                continue;
            }
            self.entries.insert(name.clone(), (tree::disk_entry(name, &m), m));
        }
    }
}
