//! An agent's derived files: its fields and its claude subagents, for a
//! stat, an open, or a listing of its directory, of `agents/` or of
//! `agents/<name>/`.
//!
//! Each runs a derivation of `active::derive` over facts gathered through
//! the ring (`gather`). A field's text is derived again on every stat and
//! open: a stat's size is what a read of a fresh open returns, and an open
//! snapshots the text so its reads are exact and consistent.

use std::collections::BTreeMap;
use std::rc::Rc;

use crate::active::agents::{Found, Session};
use crate::active::{derive as active, Field};
use crate::errors::Error;
use crate::facts::{Facts, Root, Want};
use crate::meta::Meta;
use crate::tree::{text_version, Attr, Entry, Loc, Part};

use super::super::fids::Opened;
use super::cx::{fail, Cx, Event, Reply, Step};
use super::gather::{Gather, Ran};
use super::usage::UsageSum;

pub(crate) struct Derive {
    slot: u32,
    gen: u32,
    part: Part,
    /// The fid an open binds, or `None` for a stat.
    open: Option<u32>,
    g: Gather,
    /// A listing of the agent's directory summing its session's usage,
    /// with the rest of its entries and where `usage` is.
    sum: Option<Box<ListingToSum>>,
}

/// A listing waiting on its `usage`: the sum, the other entries, where
/// `usage` is, and which directory is listed.
type ListingToSum = (UsageSum, Vec<Entry>, Loc, Part);

impl Derive {
    pub(crate) fn stat(slot: u32, gen: u32, part: Part) -> Derive {
        Derive { slot, gen, part, open: None, g: Gather::default(), sum: None }
    }

    pub(crate) fn open(fid: u32, slot: u32, gen: u32, part: Part) -> Derive {
        Derive { slot, gen, part, open: Some(fid), g: Gather::default(), sum: None }
    }

    pub(crate) fn step(&mut self, ev: Event, cx: &mut Cx) -> Step {
        if let Some(sum) = &mut self.sum {
            match sum.0.landed(cx, ev) {
                None => return Step::Wait,
                Some(Err(e)) => return fail(e),
                Some(Ok(())) => return self.summed(cx),
            }
        }
        if let Err(step) = self.g.on_event(cx, ev) {
            return step;
        }
        // The derivation is the job's own method: the gathering is taken
        // out of it while it runs.
        let mut g = std::mem::take(&mut self.g);
        let (slot, gen) = (self.slot, self.gen);
        let ran = g.run(cx, |cx, facts, needs| {
            let Some(agent) = cx.agents.get(slot, gen) else { return Some(Err(Error::NotFound)) };
            let (found, session) = (agent.found, agent.session.clone());
            self.derive(cx, facts, &found, session.as_ref(), needs)
        });
        self.g = g;
        match ran {
            Ran::Done(_) if self.sum.is_some() => self.summed(cx),
            Ran::Done(answer) => Step::Answer(answer),
            Ran::Wait(step) => step,
            Ran::Failed(e) => fail(e),
        }
    }

    pub(crate) fn release(self, cx: &mut Cx) {
        self.g.release(cx);
    }

    /// Run the derivation for what was asked: `None` while facts are
    /// missing.
    fn derive(
        &mut self,
        cx: &mut Cx,
        facts: &Facts,
        found: &Found,
        session: Option<&Session>,
        needs: &mut Vec<Want>,
    ) -> Option<Result<Reply, Error>> {
        Some(match self.part {
            Part::Field(field) => {
                let fields = active::fields(found, session, facts, needs)?;
                let text = fields.and_then(|mut f| f.remove(&field)).ok_or(Error::NotFound);
                text.map(|t| self.text_reply(cx, found, Part::Field(field), t))
            }
            Part::Dir => {
                let fields = active::fields(found, session, facts, needs);
                // A listing shows the transcript with its real size and time.
                let transcript = match session.and_then(|s| s.transcript.as_deref()) {
                    Some(rel) => facts.meta(Root::Harness(found.harness), rel, needs)?,
                    None => None,
                };
                // Its session's `usage` is listed with its length: summed first.
                // (Only where its transcript is there to read, as `chat/`.)
                let usage = match (self.open, crate::tree::chat_format(cx.agents, self.slot, self.gen), transcript) {
                    (Some(_), Some(_), Some(_)) => super::session::agent_key(cx, self.slot, self.gen).map(Rc::new),
                    _ => None,
                };
                let chats = match &usage {
                    Some(key) => {
                        Some(super::session::usage_chats(key, facts, &cx.tree.session_table().parents(), needs)?)
                    }
                    None => None,
                };
                let Some(fields) = fields? else { return Some(Err(Error::NotFound)) };
                let entries = self.list_dir(cx, fields, transcript);
                match (usage, chats) {
                    (Some(key), Some(Ok(chats))) => {
                        let at = Loc::Session { key, part: crate::tree::SPart::Usage };
                        self.sum = Some(Box::new((UsageSum::new(chats), entries, at, Part::Dir)));
                        // (`step` sums before it answers.)
                        Err(Error::NotFound)
                    }
                    (_, Some(Err(e))) => Err(e),
                    _ => Ok(self.dir_reply(cx, Part::Dir, entries)),
                }
            }
            _ => Err(Error::NotFound),
        })
    }

    fn loc(&self, part: Part) -> Loc {
        Loc::Agent { slot: self.slot, gen: self.gen, part }
    }

    /// A derived file's stat, or its open with the text snapshotted.
    fn text_reply(&self, cx: &Cx, found: &Found, part: Part, text: Vec<u8>) -> Reply {
        match self.open {
            None => Reply::Stat(cx.tree.entry(&self.loc(part), &text_attr(cx, &text), cx.agents), None),
            Some(fid) => {
                let qid = cx.tree.text_qid(Some(found), part, &text);
                Reply::Open { fid, qid, opened: Opened::Text(Rc::new(text)) }
            }
        }
    }

    fn dir_reply(&self, cx: &Cx, part: Part, mut entries: Vec<Entry>) -> Reply {
        entries.sort_by(|a, b| a.name.cmp(&b.name));
        let qid = cx.tree.skeleton_qid(&self.loc(part), cx.agents);
        Reply::Open { fid: self.open.unwrap_or_default(), qid, opened: Opened::Dir(Rc::new(entries)) }
    }

    /// The session's usage summed so far: ask for the next chat, or list.
    fn summed(&mut self, cx: &Cx) -> Step {
        let Some(sum) = &mut self.sum else { return fail(Error::NotFound) };
        if let Some(step) = sum.0.ask() {
            return step;
        }
        let text = sum.0.text();
        let (_, mut entries, at, part) = *self.sum.take().expect("checked above");
        entries.push(cx.tree.entry(&at, &super::session::usage_attr(cx, &text), cx.agents));
        Step::Answer(Ok(self.dir_reply(cx, part, entries)))
    }

    /// An agent's directory: its fields, its transcript, and `chat/` and
    /// `agents/` where the transcript is there to read. (Its `usage` is
    /// added once summed.)
    fn list_dir(&self, cx: &Cx, fields: BTreeMap<Field, Vec<u8>>, transcript: Option<Meta>) -> Vec<Entry> {
        let mut entries: Vec<Entry> = fields
            .iter()
            .map(|(f, text)| cx.tree.entry(&self.loc(Part::Field(*f)), &text_attr(cx, text), cx.agents))
            .collect();
        // `wait` answers when the agent changes: a stream, length 0.
        let wait = Attr::Text { len: 0, version: 0, mtime: cx.tree.started_unix() };
        entries.push(cx.tree.entry(&self.loc(Part::Wait), &wait, cx.agents));
        if let Some(m) = transcript {
            entries.push(cx.tree.entry(&self.loc(Part::Transcript), &Attr::Disk(m), cx.agents));
            let format = crate::tree::chat_format(cx.agents, self.slot, self.gen);
            if format.is_some() {
                entries.push(cx.tree.entry(&self.loc(Part::Chat), &Attr::Skeleton, cx.agents));
            }
            if let Some(key) = format.and_then(|_| super::session::agent_key(cx, self.slot, self.gen)) {
                // Its session's `agents/`: claude's subagents, codex's
                // threads, omp's and pi's files.
                let loc = Loc::Session { key: Rc::new(key), part: crate::tree::SPart::Agents };
                if !matches!(cx.tree.presence(&loc, cx.agents), crate::tree::Presence::Absent) {
                    entries.push(cx.tree.entry(&loc, &Attr::Skeleton, cx.agents));
                }
            }
        }
        entries
    }
}

/// A derived text's stat: its length, its hash, the daemon's start time.
fn text_attr(cx: &Cx, text: &[u8]) -> Attr {
    Attr::Text { len: text.len() as u64, version: text_version(text), mtime: cx.tree.started_unix() }
}
