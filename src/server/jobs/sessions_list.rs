//! `/sessions/<h>`: a listing of a harness's sessions.
//!
//! It runs the harness's derivation (`sessions::candidates_from`) over
//! facts gathered through the ring — the directories of its store, a slice
//! of them a turn, and for codex each rollout's first record — and then
//! looks at every transcript found (one probe each, at most
//! `BATCH_IN_FLIGHT_MAX` in flight, through the ring) for the mtime its
//! directory carries. Past `--max-dir-entries` sessions the open answers an
//! error, never a shorter listing. What it found is left as the harness's
//! hints (`tree::sessions`), so the walks that follow a listing look at one
//! file each.

use std::collections::BTreeSet;
use std::rc::Rc;

use crate::errors::Error;
use crate::facts::{Facts, Want};
use crate::harness::Harness;
use crate::sessions::{self, SessionKey};
use crate::tree::{Attr, Entry, Loc, SPart};

use super::super::fids::Opened;
use super::super::probe::{Batch, Kind, Probe, Target};
use super::cx::{drive, fail, Cx, Event, Reply, Step};
use super::gather::{Gather, Ran};

/// An open of `/sessions/<h>`.
pub(crate) struct SessionsList {
    fid: u32,
    h: Harness,
    /// The listed directory's skeleton node.
    dir: u16,
    g: Gather,
    /// Its looks at its transcripts, once the candidates are known.
    looks: Option<Box<Looks>>,
    /// The sessions found so far, and the directory the next slice starts
    /// at (`sessions::candidates_from`). In the listing's order as they
    /// come: a sort of 10,000 in the last turn was a millisecond of it.
    collected: BTreeSet<sessions::Found>,
    next_dir: usize,
}

/// Sessions a listing looks at, a slice at a time. What the derivation
/// found becomes keys (and the harness's hints) a slice at a time too:
/// ten thousand of them at once were a turn of ~10 ms.
struct Looks {
    h: Harness,
    /// The listed directory's skeleton node.
    dir: u16,
    /// In the listing's order.
    found: Vec<sessions::Found>,
    /// The listing's number in the session table's hints.
    hints: u32,
    keys: Vec<Rc<SessionKey>>,
    /// The next key whose look has not started, and the first of the
    /// slice in flight.
    next: usize,
    batch_start: usize,
    batch: Batch,
    entries: Vec<Entry>,
}

/// Transcripts a listing looks at in one slice, and turns into entries in
/// one turn of the loop: ten thousand sessions are 40 slices, so another
/// client's request waits behind one slice's work, not the listing's.
const LOOK_SLICE: usize = 256;

impl SessionsList {
    pub(crate) fn new(fid: u32, h: Harness, dir: u16) -> SessionsList {
        SessionsList { fid, h, dir, g: Gather::default(), looks: None, collected: BTreeSet::new(), next_dir: 0 }
    }

    pub(crate) fn step(&mut self, ev: Event, cx: &mut Cx) -> Step {
        if let Some(l) = &mut self.looks {
            if l.next > 0 || !l.batch.is_empty() {
                if let Err(step) = drive(&mut l.batch, &mut cx.ops, ev) {
                    return step;
                }
                l.absorb(cx);
                if l.next < l.found.len() {
                    l.start_slice(cx);
                    // One slice a turn: the next starts after this turn's replies.
                    return Step::Yield;
                }
                return self.listed(cx);
            }
            l.start_slice(cx);
            return self.step(Event::Resume, cx);
        }
        if let Err(step) = self.g.on_event(cx, ev) {
            return step;
        }
        // The derivation is the job's own method: the gathering is taken
        // out of it while it runs.
        let mut g = std::mem::take(&mut self.g);
        let (h, dir) = (self.h, self.dir);
        let ran = g.run(cx, |cx, facts, needs| self.derive_list(cx, facts, (h, dir), needs));
        self.g = g;
        match ran {
            Ran::Done(step) | Ran::Wait(step) => step,
            Ran::Failed(e) => fail(e),
        }
    }

    pub(crate) fn release(self, cx: &mut Cx) {
        if let Some(l) = self.looks {
            l.batch.release(&mut cx.ops);
        }
        self.g.release(cx);
    }

    /// A listing of harness `h`'s sessions (skeleton directory `dir`): a
    /// slice of its directories a turn (`DIRS_PER_SLICE`), then a look at
    /// each transcript found.
    fn derive_list(
        &mut self,
        cx: &mut Cx,
        facts: &Facts,
        (h, dir): (Harness, u16),
        needs: &mut Vec<Want>,
    ) -> Option<Step> {
        // A harness with no root has no sessions (nothing to read).
        if cx.tree.harness_base(h).is_none() {
            return Some(answer_list(cx, self.fid, dir, Vec::new()));
        }
        let parents = cx.tree.session_table().parents();
        let sessions::Slice { found, next } = match sessions::candidates_from(h, self.next_dir, facts, &parents, needs)?
        {
            Ok(got) => got,
            Err(e) => return Some(fail(e)),
        };
        self.collected.extend(found);
        if self.collected.len() > cx.cfg.max_dir_entries {
            return Some(fail(Error::DirTooLarge));
        }
        if let Some(n) = next {
            self.next_dir = n;
            return Some(Step::Yield);
        }
        let found = std::mem::take(&mut self.collected).into_iter().collect();
        Some(self.look(cx, h, dir, found))
    }

    /// The candidates are known: look at each transcript, through the ring.
    fn look(&mut self, cx: &mut Cx, h: Harness, dir: u16, found: Vec<sessions::Found>) -> Step {
        if cx.tree.harness_base(h).is_none() {
            return answer_list(cx, self.fid, dir, Vec::new());
        }
        if found.is_empty() {
            cx.tree.session_table().set_hints(h, std::iter::empty());
            return answer_list(cx, self.fid, dir, Vec::new());
        }
        let hints = cx.tree.session_table().begin_hints(h);
        let (keys, entries) = (Vec::with_capacity(found.len()), Vec::with_capacity(found.len()));
        self.looks = Some(Box::new(Looks {
            h,
            dir,
            found,
            hints,
            keys,
            next: 0,
            batch_start: 0,
            batch: Batch::default(),
            entries,
        }));
        // The first slice starts next turn: the derivation had this one.
        Step::Yield
    }

    /// Every look is back: a directory per transcript still there.
    fn listed(&mut self, cx: &mut Cx) -> Step {
        let Some(l) = self.looks.take() else { return fail(Error::NotFound) };
        cx.tree.session_table().end_hints(l.h, l.hints);
        let Looks { dir, entries, batch, .. } = *l;
        batch.release(&mut cx.ops);
        answer_list(cx, self.fid, dir, entries)
    }
}

/// A listing of the sessions of skeleton directory `dir` is `entries`.
fn answer_list(cx: &Cx, fid: u32, dir: u16, mut entries: Vec<Entry>) -> Step {
    entries.sort_by(|a, b| a.name.cmp(&b.name));
    entries.dedup_by(|a, b| a.name == b.name);
    let qid = cx.tree.static_qid(dir);
    Step::Answer(Ok(Reply::Open { fid, qid, opened: Opened::Dir(Rc::new(entries)) }))
}

impl Looks {
    /// Start the looks of the next slice of keys.
    fn start_slice(&mut self, cx: &mut Cx) {
        let end = (self.next + LOOK_SLICE).min(self.found.len());
        let h = self.h;
        let slice = self.found[self.next..end].iter_mut().map(|f| {
            let (id, rel) = (std::mem::take(&mut f.id), std::mem::take(&mut f.rel));
            Rc::new(SessionKey { harness: h, id: id.into(), transcript: rel.into(), sub: None, agent: None })
        });
        self.keys.extend(slice);
        cx.tree.session_table().add_hints(h, self.hints, self.keys[self.next..end].iter().cloned());
        let mut batch = Batch::default();
        for k in &self.keys[self.next..end] {
            // The base is there (checked before): every key has a backing.
            if let Some(b) = cx.tree.beneath(k.harness, k.transcript.to_vec()) {
                batch.push(Probe::new(Target::Beneath(b), Kind::Look, cx.cfg.allow_hard_links));
            }
        }
        std::mem::replace(&mut self.batch, batch).release(&mut cx.ops);
        self.batch_start = self.next;
        self.next = end;
    }

    /// A slice's looks are back: an entry per transcript still there.
    fn absorb(&mut self, cx: &mut Cx) {
        let batch = std::mem::take(&mut self.batch);
        for (key, p) in self.keys[self.batch_start..self.next].iter().zip(&batch.probes) {
            let Ok(m) = p.found() else { continue };
            if !m.is_regular() || (m.is_hard_linked() && !cx.cfg.allow_hard_links) {
                continue;
            }
            let mtime = m.mtime.clamp(0, u32::MAX as i64) as u32;
            let loc = Loc::Session { key: key.clone(), part: SPart::Dir };
            self.entries.push(cx.tree.entry(&loc, &Attr::Dated(mtime), cx.agents));
        }
        batch.release(&mut cx.ops);
    }
}
