//! `/sessions`: a listing of a harness's sessions, and a session's own
//! files (its directory, fields and `agents/`), for a stat or an open.
//!
//! A listing of `/sessions/<h>` runs the harness's derivation
//! (`sessions::candidates`) over facts gathered through the ring — the
//! directories of its store, and for codex each rollout's first record —
//! and then looks at every transcript found (one probe each, at most
//! `BATCH_IN_FLIGHT_MAX` in flight, through the ring) for the mtime its
//! directory carries. Past `--max-dir-entries` sessions the open answers an
//! error, never a shorter listing. What it found is left as the harness's
//! hints (`tree::sessions`), so the walks that follow a listing look at one
//! file each. A session's fields are derived from its transcript when
//! asked, as an agent's are.

use std::collections::BTreeSet;
use std::rc::Rc;

use crate::errors::Error;
use crate::facts::{Facts, Root, Want};
use crate::harness::Harness;
use crate::proto::{Qid, QTFILE};
use crate::sessions::{self, SField, SessionKey, Sub};
use crate::tree::{sessions::qid_path, text_version, Attr, Entry, Loc, SPart};

use super::super::conn::Opened;
use super::super::probe::{Batch, Kind, Probe, Target};
use super::cx::{drive, fail, ChatOf, Cx, Event, Reply, Step as JobStep};
use super::gather::{Gather, Ran};
use super::usage::UsageSum;

/// A step of a walk under `/sessions` (`walk::Pending`).
pub(crate) enum Step<'a> {
    Session(Harness, &'a [u8]),
    Field(&'a Rc<SessionKey>, SField),
    Sub(&'a Rc<SessionKey>, &'a [u8]),
}

/// Whether the walk's next place is there, and its qid: `None` while facts
/// are missing, `Some(None)` when it is not.
pub(crate) fn walk_to(cx: &mut Cx, step: Step, facts: &Facts, needs: &mut Vec<Want>) -> Option<Option<(Loc, Qid)>> {
    let dir = |key: Rc<SessionKey>, cx: &Cx| {
        let loc = Loc::Session { key, part: SPart::Dir };
        let qid = cx.tree.skeleton_qid(&loc, cx.agents);
        (loc, qid)
    };
    match step {
        Step::Session(h, name) => {
            if !crate::active::paths::is_session_id(name) || cx.tree.harness_base(h).is_none() {
                return Some(None);
            }
            if let Some(key) = cx.tree.session_table().hint(h, name) {
                if let Some(m) = facts.meta(Root::Harness(h), &key.transcript, needs)? {
                    if m.is_regular() {
                        return Some(Some(dir(key, cx)));
                    }
                }
            }
            let parents = cx.tree.session_table().parents();
            let Ok(found) = sessions::candidates(h, facts, &parents, needs)? else { return Some(None) };
            let keys = remember(cx, h, found);
            Some(keys.into_iter().find(|k| &k.id[..] == name).map(|k| dir(k, cx)))
        }
        Step::Field(key, f) => {
            let base = cx.tree.harness_base(key.harness).map(|b| b.to_bytes().to_vec()).unwrap_or_default();
            let text = sessions::fields(key, &base, facts, needs)?.remove(&f);
            Some(text.map(|t| {
                let part = SPart::Field(f);
                (
                    Loc::Session { key: key.clone(), part },
                    Qid { ty: QTFILE, version: text_version(&t), path: qid_path(key, part) },
                )
            }))
        }
        Step::Sub(key, name) => {
            let parents = cx.tree.session_table().parents();
            let Ok(subs) = sessions::subagents(key, facts, &parents, needs)? else { return Some(None) };
            let sub = subs.into_iter().find(|s| &s.name[..] == name)?;
            Some(Some(dir(Rc::new(sub_key(key, sub)), cx)))
        }
    }
}

/// Leave what a listing found as the harness's hints; the keys, one per id
/// (of two transcripts with one id, the one listed last).
fn remember(cx: &mut Cx, h: Harness, found: Vec<sessions::Found>) -> Vec<Rc<SessionKey>> {
    let keys: Vec<Rc<SessionKey>> = found
        .into_iter()
        .map(|f| Rc::new(SessionKey { harness: h, id: f.id.into(), transcript: f.rel.into(), sub: None, agent: None }))
        .collect();
    cx.tree.session_table().set_hints(h, keys.iter().cloned());
    keys
}

/// A derived text's qid version is its text's hash, so a walk must derive
/// it; `usage`'s is 0, because knowing it means indexing every chat it
/// sums, which a walk does not do. Its length says when it grew.
fn usage_or_text_version(part: SPart, text: &[u8]) -> u32 {
    if part == SPart::Usage {
        0
    } else {
        text_version(text)
    }
}

/// How `usage` is listed and stat'ed: its length, version 0 (walks and
/// opens agree), the daemon's start as its time, as derived text has.
pub(crate) fn usage_attr(cx: &Cx, text: &[u8]) -> Attr {
    Attr::Text { len: text.len() as u64, version: 0, mtime: cx.tree.started_unix() }
}

/// The chats a session's `usage` sums: its own, and each subagent's (a
/// subagent's own `usage` is its alone).
pub(crate) fn usage_chats(
    key: &Rc<SessionKey>,
    facts: &Facts,
    parents: &sessions::Parents,
    needs: &mut Vec<Want>,
) -> Option<Result<Vec<ChatOf>, Error>> {
    let mut chats = vec![ChatOf::Session(key.clone())];
    if key.sub.is_none() {
        match sessions::subagents(key, facts, parents, needs)? {
            Ok(subs) => chats.extend(subs.into_iter().map(|s| ChatOf::Session(Rc::new(sub_key(key, s))))),
            Err(e) => return Some(Err(e)),
        }
    }
    Some(Ok(chats))
}

/// A subagent's key: its session's, and the running agent it was reached
/// from, if any (so that its `..` leads back there: `tree::session_parent`).
fn sub_key(key: &SessionKey, sub: Sub) -> SessionKey {
    SessionKey { sub: Some(sub), agent: key.agent, ..key.main() }
}

/// The key of a running agent's own session (`/active/<h>/<pid>/usage` is
/// that session's): the same transcript, so the same chat and counts.
pub(crate) fn agent_key(cx: &Cx, slot: u32, gen: u32) -> Option<SessionKey> {
    let a = cx.agents.get(slot, gen)?;
    let s = a.session.as_ref()?;
    let main = s.transcript.as_deref()?;
    Some(SessionKey {
        harness: a.found.harness,
        id: s.id.clone().into(),
        transcript: main.into(),
        sub: None,
        agent: Some((slot, gen, u32::MAX)),
    })
}

/// A stat or open of something under `/sessions`.
pub(crate) struct Session {
    what: What,
    /// The fid an open binds, or `None` for a stat.
    open: Option<u32>,
    g: Gather,
    /// A listing's looks at its transcripts, once the candidates are known.
    looks: Option<Box<Looks>>,
    /// The usage being summed, for `usage` itself or for the directory
    /// listing it (with the rest of that listing's entries).
    sum: Option<Box<Sum>>,
    /// A listing's sessions found so far, and the directory its next
    /// slice starts at (`sessions::candidates_from`).
    /// In the listing's order as they come: a sort of 10,000 in the last
    /// turn was a millisecond of it.
    collected: BTreeSet<sessions::Found>,
    next_dir: usize,
}

/// A session's usage being summed, and, when it is for the session's
/// directory, the rest of that listing's entries.
struct Sum {
    key: Rc<SessionKey>,
    usage: UsageSum,
    entries: Option<Vec<Entry>>,
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

enum What {
    List(Harness, u16),
    Node(Rc<SessionKey>, SPart),
}

impl Session {
    pub(crate) fn list(fid: u32, h: Harness, dir: u16) -> Session {
        Session {
            what: What::List(h, dir),
            open: Some(fid),
            g: Gather::default(),
            looks: None,
            sum: None,
            collected: BTreeSet::new(),
            next_dir: 0,
        }
    }

    pub(crate) fn node(open: Option<u32>, key: Rc<SessionKey>, part: SPart) -> Session {
        // A `usage` is what was written a moment ago (`UsageSum`): so may
        // the looks be that say which chats it sums.
        let g = if matches!(part, SPart::Usage) { Gather::recent() } else { Gather::default() };
        Session {
            what: What::Node(key, part),
            open,
            g,
            looks: None,
            sum: None,
            collected: BTreeSet::new(),
            next_dir: 0,
        }
    }

    pub(crate) fn step(&mut self, ev: Event, cx: &mut Cx) -> JobStep {
        if let Some(sum) = &mut self.sum {
            match sum.usage.landed(cx, ev) {
                None => return JobStep::Wait,
                Some(Err(e)) => return fail(e),
                Some(Ok(())) => return self.summed(cx),
            }
        }
        if let Some(l) = &mut self.looks {
            if l.next > 0 || !l.batch.is_empty() {
                if let Err(step) = drive(&mut l.batch, &mut cx.ops, ev) {
                    return step;
                }
                l.absorb(cx);
                if l.next < l.found.len() {
                    l.start_slice(cx);
                    // One slice a turn: the next starts after this turn's replies.
                    return JobStep::Yield;
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
        let ran = g.run(cx, |cx, facts, needs| self.derive(cx, facts, needs));
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

    fn derive(&mut self, cx: &mut Cx, facts: &Facts, needs: &mut Vec<Want>) -> Option<JobStep> {
        match &self.what {
            What::List(h, dir) => {
                let (h, dir) = (*h, *dir);
                self.derive_list(cx, facts, (h, dir), needs)
            }
            What::Node(key, part) => {
                let (key, part) = (key.clone(), *part);
                self.derive_node(cx, facts, key, part, needs)
            }
        }
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
    ) -> Option<JobStep> {
        // A harness with no root has no sessions (nothing to read).
        if cx.tree.harness_base(h).is_none() {
            return Some(answer_list(cx, self.open, dir, Vec::new()));
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
            return Some(JobStep::Yield);
        }
        let found = std::mem::take(&mut self.collected).into_iter().collect();
        Some(self.look(cx, h, dir, found))
    }

    /// A session's own file or directory.
    fn derive_node(
        &mut self,
        cx: &mut Cx,
        facts: &Facts,
        key: Rc<SessionKey>,
        part: SPart,
        needs: &mut Vec<Want>,
    ) -> Option<JobStep> {
        let base = cx.tree.harness_base(key.harness).map(|b| b.to_bytes().to_vec()).unwrap_or_default();
        Some(match part {
            SPart::Field(f) => match sessions::fields(&key, &base, facts, needs)?.remove(&f) {
                Some(text) => JobStep::Answer(Ok(self.text_reply(cx, &key, part, text))),
                None => fail(Error::NotFound),
            },
            SPart::Dir => return self.derive_dir(cx, facts, key, &base, needs),
            SPart::Usage => {
                let chats = match usage_chats(&key, facts, &cx.tree.session_table().parents(), needs)? {
                    Ok(chats) => chats,
                    Err(e) => return Some(fail(e)),
                };
                self.sum = Some(Box::new(Sum { key, usage: UsageSum::new(chats), entries: None }));
                self.summed(cx)
            }
            SPart::Agents => return self.derive_agents(cx, facts, key, needs),
            _ => fail(Error::NotFound),
        })
    }

    /// A session's directory: a stat of it, or its listing (its `usage`
    /// summed first, where it has a chat, for the length it is listed at).
    fn derive_dir(
        &mut self,
        cx: &mut Cx,
        facts: &Facts,
        key: Rc<SessionKey>,
        base: &[u8],
        needs: &mut Vec<Want>,
    ) -> Option<JobStep> {
        let fields = sessions::fields(&key, base, facts, needs);
        let meta = facts.meta(Root::Harness(key.harness), key.own_rel(), needs)?;
        let Some(meta) = meta.filter(|m| m.is_regular()) else { return Some(fail(Error::NotFound)) };
        let fields = fields?;
        let mtime = meta.mtime.clamp(0, u32::MAX as i64) as u32;
        let loc = Loc::Session { key: key.clone(), part: SPart::Dir };
        if self.open.is_none() {
            return Some(JobStep::Answer(Ok(Reply::Stat(cx.tree.entry(&loc, &Attr::Dated(mtime), cx.agents), None))));
        }
        let chats = match sessions::chat_format(&key) {
            Some(_) => match usage_chats(&key, facts, &cx.tree.session_table().parents(), needs)? {
                Ok(chats) => Some(chats),
                Err(e) => return Some(fail(e)),
            },
            None => None,
        };
        let entries = self.list_dir(cx, &key, fields, meta);
        Some(match chats {
            // Its `usage` is listed with its length: summed first.
            Some(chats) => {
                self.sum = Some(Box::new(Sum { key, usage: UsageSum::new(chats), entries: Some(entries) }));
                self.summed(cx)
            }
            None => self.dir_reply(cx, &loc, entries),
        })
    }

    /// A session's `agents/`: a directory per subagent, dated by its
    /// transcript.
    fn derive_agents(
        &mut self,
        cx: &mut Cx,
        facts: &Facts,
        key: Rc<SessionKey>,
        needs: &mut Vec<Want>,
    ) -> Option<JobStep> {
        let subs = match sessions::subagents(&key, facts, &cx.tree.session_table().parents(), needs)? {
            Ok(s) => s,
            Err(e) => return Some(fail(e)),
        };
        let root = Root::Harness(key.harness);
        let metas: Vec<_> = subs.iter().map(|s| facts.meta(root, &s.rel, needs)).collect();
        let metas: Vec<_> = metas.into_iter().collect::<Option<_>>()?;
        let entries = subs
            .into_iter()
            .zip(metas)
            .filter_map(|(s, m)| {
                let mtime = m?.mtime.clamp(0, u32::MAX as i64) as u32;
                let loc = Loc::Session { key: Rc::new(sub_key(&key, s)), part: SPart::Dir };
                Some(cx.tree.entry(&loc, &Attr::Dated(mtime), cx.agents))
            })
            .collect();
        Some(self.dir_reply(cx, &Loc::Session { key, part: SPart::Agents }, entries))
    }

    /// The candidates are known: look at each transcript, through the ring.
    fn look(&mut self, cx: &mut Cx, h: Harness, dir: u16, found: Vec<sessions::Found>) -> JobStep {
        if cx.tree.harness_base(h).is_none() {
            return answer_list(cx, self.open, dir, Vec::new());
        }
        if found.is_empty() {
            cx.tree.session_table().set_hints(h, std::iter::empty());
            return answer_list(cx, self.open, dir, Vec::new());
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
        JobStep::Yield
    }

    /// Every look is back: a directory per transcript still there.
    fn listed(&mut self, cx: &mut Cx) -> JobStep {
        let Some(l) = self.looks.take() else { return fail(Error::NotFound) };
        cx.tree.session_table().end_hints(l.h, l.hints);
        let Looks { dir, entries, batch, .. } = *l;
        batch.release(&mut cx.ops);
        answer_list(cx, self.open, dir, entries)
    }

    fn text_reply(&self, cx: &Cx, key: &Rc<SessionKey>, part: SPart, text: Vec<u8>) -> Reply {
        let qid = Qid { ty: QTFILE, version: usage_or_text_version(part, &text), path: qid_path(key, part) };
        match self.open {
            None => {
                let attr = Attr::Text { len: text.len() as u64, version: qid.version, mtime: cx.tree.started_unix() };
                Reply::Stat(cx.tree.entry(&Loc::Session { key: key.clone(), part }, &attr, cx.agents), None)
            }
            Some(fid) => Reply::Open { fid, qid, opened: Opened::Text(Rc::new(text)) },
        }
    }

    fn dir_reply(&self, cx: &Cx, loc: &Loc, mut entries: Vec<Entry>) -> JobStep {
        entries.sort_by(|a, b| a.name.cmp(&b.name));
        let qid = cx.tree.skeleton_qid(loc, cx.agents);
        JobStep::Answer(Ok(Reply::Open {
            fid: self.open.unwrap_or_default(),
            qid,
            opened: Opened::Dir(Rc::new(entries)),
        }))
    }

    /// The usage summed so far: ask for the next chat, or answer.
    fn summed(&mut self, cx: &Cx) -> JobStep {
        let Some(sum) = &mut self.sum else { return fail(Error::NotFound) };
        if let Some(step) = sum.usage.ask() {
            return step;
        }
        let (text, key) = (sum.usage.text(), sum.key.clone());
        match sum.entries.take() {
            Some(mut entries) => {
                entries.push(cx.tree.entry(
                    &Loc::Session { key: key.clone(), part: SPart::Usage },
                    &usage_attr(cx, &text),
                    cx.agents,
                ));
                self.dir_reply(cx, &Loc::Session { key, part: SPart::Dir }, entries)
            }
            None => JobStep::Answer(Ok(self.text_reply(cx, &key, SPart::Usage, text))),
        }
    }

    /// A session's directory: its fields, its transcript, `chat/` where the
    /// harness's transcripts render as one, and `agents/` (not a subagent's).
    /// (Its `usage`, where it has a chat, is added once summed.)
    fn list_dir(
        &self,
        cx: &Cx,
        key: &Rc<SessionKey>,
        fields: std::collections::BTreeMap<SField, Vec<u8>>,
        meta: crate::meta::Meta,
    ) -> Vec<Entry> {
        let at = |part| Loc::Session { key: key.clone(), part };
        let mut entries: Vec<Entry> = fields
            .iter()
            .map(|(f, text)| {
                let part = SPart::Field(*f);
                let attr =
                    Attr::Text { len: text.len() as u64, version: text_version(text), mtime: cx.tree.started_unix() };
                cx.tree.entry(&at(part), &attr, cx.agents)
            })
            .collect();
        entries.push(cx.tree.entry(&at(SPart::Transcript), &Attr::Disk(meta), cx.agents));
        for part in [SPart::Chat, SPart::Agents] {
            let there = cx.tree.presence(&at(part), cx.agents) == crate::tree::Presence::Always;
            if there && !(part == SPart::Agents && key.sub.is_some()) {
                entries.push(cx.tree.entry(&at(part), &Attr::Skeleton, cx.agents));
            }
        }
        entries
    }
}

/// A listing of the sessions of skeleton directory `dir` is `entries`.
fn answer_list(cx: &Cx, open: Option<u32>, dir: u16, mut entries: Vec<Entry>) -> JobStep {
    entries.sort_by(|a, b| a.name.cmp(&b.name));
    entries.dedup_by(|a, b| a.name == b.name);
    let qid = cx.tree.static_qid(dir);
    JobStep::Answer(Ok(Reply::Open { fid: open.unwrap_or_default(), qid, opened: Opened::Dir(Rc::new(entries)) }))
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
