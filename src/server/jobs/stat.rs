//! A Tstat of a file on disk: one look (O_PATH beneath the base, statx of
//! the fd), its entry built from what the statx says. A harness directory
//! (`/claude`) is the skeleton's while its base is a directory.

use crate::errors::Error;
use crate::tree::{Attr, Loc, Presence};

use super::super::probe::{means_absent, Batch, Kind, Probe, Target};
use super::cx::{drive, fail, Cx, Event, Reply, Step};

pub(crate) struct Stat {
    loc: Loc,
    batch: Batch,
}

impl Stat {
    pub(crate) fn new(loc: Loc) -> Stat {
        Stat { loc, batch: Batch::default() }
    }

    pub(crate) fn step(&mut self, ev: Event, cx: &mut Cx) -> Step {
        if let Event::Start = ev {
            match cx.tree.presence(&self.loc, cx.agents) {
                Presence::Always => return self.answer(cx, Attr::Skeleton),
                Presence::Absent => return fail(Error::NotFound),
                Presence::Probe(b) => {
                    self.batch = Batch::one(Probe::new(Target::Beneath(b), Kind::Look, cx.cfg.allow_hard_links))
                }
            }
        }
        if let Err(step) = drive(&mut self.batch, &mut cx.ops, ev) {
            return step;
        }
        let harness = cx.tree.is_harness_dir(&self.loc);
        match self.batch.probes[0].found() {
            Ok(m) if harness && m.is_dir() => self.answer(cx, Attr::Skeleton),
            Ok(m) if !harness => self.answer(cx, Attr::Disk(m)),
            Ok(_) => fail(Error::NotFound),
            Err(e) if means_absent(e) => fail(Error::NotFound),
            Err(e) => fail(Error::from_errno(e)),
        }
    }

    fn answer(&self, cx: &mut Cx, attr: Attr) -> Step {
        let meta = match attr {
            Attr::Disk(m) => Some(Box::new(m)),
            _ => None,
        };
        Step::Answer(Ok(Reply::Stat(cx.tree.entry(&self.loc, &attr, cx.agents), meta)))
    }

    pub(crate) fn release(self, cx: &mut Cx) {
        self.batch.release(&mut cx.ops);
    }
}
