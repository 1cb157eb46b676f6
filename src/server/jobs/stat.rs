//! A Tstat of a file on disk: one look (O_PATH beneath the base, statx of
//! the fd), its entry built from what the statx says. A harness directory
//! (`/claude`) is the skeleton's while its base is a directory.

use std::ffi::CString;
use std::os::fd::{AsRawFd, OwnedFd};
use std::rc::Rc;

use crate::errors::Error;
use crate::tree::{Attr, Loc, Presence};

use super::super::world::release_file;

use super::super::probe::{means_absent, Batch, Kind, Probe, Target};
use super::cx::{drive_look, fail, Cx, Event, Reply, Step};

pub(crate) struct Stat {
    loc: Loc,
    batch: Batch,
    /// A listing's open directory the file is a name of
    /// (`dispatch::listed_dir`), held until the statx beneath it is back.
    dir: Option<(Rc<OwnedFd>, CString)>,
}

impl Stat {
    pub(crate) fn new(loc: Loc) -> Stat {
        Stat { loc, batch: Batch::default(), dir: None }
    }

    /// A stat of `name` in a listed directory, open as `dir`: one statx of
    /// that name beneath it, not a look from the harness base.
    pub(crate) fn in_dir(loc: Loc, dir: Rc<OwnedFd>, name: CString) -> Stat {
        Stat { loc, batch: Batch::default(), dir: Some((dir, name)) }
    }

    pub(crate) fn step(&mut self, ev: Event, cx: &mut Cx) -> Step {
        if let Event::Start = ev {
            let target = match (&self.dir, cx.tree.presence(&self.loc, cx.agents)) {
                (_, Presence::Always) => return self.answer(cx, Attr::Skeleton),
                (_, Presence::Absent) => return fail(Error::NotFound),
                (Some((dir, name)), Presence::Probe(_)) => Target::At { dirfd: dir.as_raw_fd(), name: name.clone() },
                (None, Presence::Probe(b)) => Target::Beneath(b),
            };
            self.batch = Batch::one(Probe::new(target, Kind::Look, cx.cfg.allow_hard_links));
        }
        if let Err(step) = drive_look(&mut self.batch, &mut cx.ops, ev) {
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
        if let Some((dir, _)) = self.dir {
            release_file(cx.ops.ring, cx.held, dir);
        }
    }
}
