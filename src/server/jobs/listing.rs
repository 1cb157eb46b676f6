//! A Topen of a skeleton directory: `/`, `/skills`, a harness directory
//! (`/claude`, there while its base is a directory), `/active` and
//! `/active/<harness>`.
//!
//! Its children are the skeleton's; those that live on disk (a mount, a
//! harness directory) are listed only when a look finds them. A listing of
//! `/active` or of a harness under it rescans the processes first, and a
//! scan that failed answers its error rather than a listing that is not
//! the machine's.

use std::rc::Rc;

use crate::errors::Error;
use crate::tree::{Attr, Loc, Part, Presence, ACTIVE};

use super::super::fids::Opened;
use super::super::probe::{means_absent, Batch, Kind, Probe, Target};
use super::cx::{drive, fail, Cx, Event, Reply, Step};

pub(crate) struct Listing {
    fid: u32,
    dir: u16,
    stage: Stage,
}

enum Stage {
    Start,
    /// A harness directory: is its base there, and a directory?
    SelfLook(Batch),
    /// Waiting for the scan of the agents.
    Scan,
    /// Looking at the children that live on disk.
    Children {
        batch: Batch,
        pending: Vec<Loc>,
    },
}

impl Listing {
    pub(crate) fn new(fid: u32, dir: u16) -> Listing {
        Listing { fid, dir, stage: Stage::Start }
    }

    pub(crate) fn step(&mut self, ev: Event, cx: &mut Cx) -> Step {
        let here = Loc::Static(self.dir);
        match (&mut self.stage, ev) {
            (Stage::Start, _) if cx.tree.is_harness_dir(&here) => {
                let Presence::Probe(b) = cx.tree.presence(&here, cx.agents) else { return fail(Error::NotFound) };
                self.stage = Stage::SelfLook(Batch::one(Probe::new(Target::Beneath(b), Kind::Look, true)));
                self.step(Event::Resume, cx)
            }
            (Stage::Start, _) if self.dir == ACTIVE || cx.tree.active_harness(self.dir).is_some() => {
                self.stage = Stage::Scan;
                Step::WaitScan
            }
            (Stage::Start, _) => self.children(cx),
            (Stage::SelfLook(batch), ev) => {
                if let Err(step) = drive(batch, &mut cx.ops, ev) {
                    return step;
                }
                match batch.probes[0].found() {
                    Ok(m) if m.is_dir() => self.children(cx),
                    Err(e) if !means_absent(e) => fail(Error::from_errno(e)),
                    _ => fail(Error::NotFound),
                }
            }
            (Stage::Scan, Event::Scanned(Err(e))) => fail(e),
            (Stage::Scan, Event::Scanned(Ok(()))) => self.children(cx),
            (Stage::Scan, _) => Step::WaitScan,
            (Stage::Children { batch, pending }, ev) => {
                if let Err(step) = drive(batch, &mut cx.ops, ev) {
                    return step;
                }
                let entries = listed(cx, batch, pending);
                self.answer(cx, entries)
            }
        }
    }

    /// The entries: the agents of `/active/<h>`, or the skeleton's children
    /// with a look at those on disk.
    fn children(&mut self, cx: &mut Cx) -> Step {
        if let Some(h) = cx.tree.active_harness(self.dir) {
            let entries = cx
                .agents
                .of_harness(h)
                .into_iter()
                .map(|(_, slot, gen)| {
                    cx.tree.entry(&Loc::Agent { slot, gen, part: Part::Dir }, &Attr::Skeleton, cx.agents)
                })
                .collect();
            return self.answer(cx, entries);
        }
        let (mut batch, mut pending) = (Batch::default(), Vec::new());
        for child in cx.tree.static_children(self.dir) {
            if let Presence::Probe(b) = cx.tree.presence(&child, cx.agents) {
                batch.push(Probe::new(Target::Beneath(b), Kind::Look, cx.cfg.allow_hard_links));
            }
            pending.push(child);
        }
        let old = std::mem::replace(&mut self.stage, Stage::Children { batch, pending });
        old.release(cx);
        self.step(Event::Resume, cx)
    }

    fn answer(&self, cx: &mut Cx, entries: Vec<crate::tree::Entry>) -> Step {
        let qid = cx.tree.static_qid(self.dir);
        Step::Answer(Ok(Reply::Open { fid: self.fid, qid, opened: Opened::Dir(Rc::new(entries)) }))
    }

    pub(crate) fn release(self, cx: &mut Cx) {
        self.stage.release(cx);
    }
}

/// Every look of `batch` is back: of the children `pending`, those there,
/// in skeleton order (sorted).
fn listed(cx: &mut Cx, batch: &Batch, pending: &[Loc]) -> Vec<crate::tree::Entry> {
    let mut probes = batch.probes.iter();
    let mut entries = Vec::new();
    for loc in pending {
        let attr = match cx.tree.presence(loc, cx.agents) {
            Presence::Always => Attr::Skeleton,
            Presence::Absent => continue,
            Presence::Probe(_) => match probes.next().map(|p| p.found()) {
                Some(Ok(m)) if cx.tree.is_harness_dir(loc) && m.is_dir() => Attr::Skeleton,
                Some(Ok(m)) if !cx.tree.is_harness_dir(loc) && !m.is_symlink() => Attr::Disk(m),
                _ => continue,
            },
        };
        entries.push(cx.tree.entry(loc, &attr, cx.agents));
    }
    entries
}

impl Stage {
    fn release(self, cx: &mut Cx) {
        match self {
            Stage::SelfLook(b) | Stage::Children { batch: b, .. } => b.release(&mut cx.ops),
            Stage::Start | Stage::Scan => {}
        }
    }
}
