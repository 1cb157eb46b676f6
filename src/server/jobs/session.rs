//! A session's own files under `/sessions` — its directory, fields,
//! `usage` and `agents/` — for a stat or an open, and the walks onto them
//! (`walk_to`). (A listing of `/sessions/<h>` is `sessions_list`.) A
//! session's fields are derived from its transcript when asked, as an
//! agent's are.

use std::rc::Rc;

use crate::errors::Error;
use crate::facts::{Facts, Root, Want};
use crate::harness::Harness;
use crate::proto::{Qid, QTFILE};
use crate::sessions::{self, SField, SessionKey, Sub};
use crate::tree::{sessions::qid_path, text_version, Attr, Entry, Loc, SPart};

use super::super::fids::Opened;
use super::cx::{fail, ChatOf, Cx, Event, Reply, Step};
use super::gather::{Gather, Ran};
use super::usage::UsageSum;

/// A step of a walk under `/sessions` (`walk::Pending`).
pub(crate) enum SessionStep<'a> {
    Session(Harness, &'a [u8]),
    Field(&'a Rc<SessionKey>, SField),
    Sub(&'a Rc<SessionKey>, &'a [u8]),
}

/// Whether the walk's next place is there, and its qid: `None` while facts
/// are missing, `Some(None)` when it is not.
pub(crate) fn walk_to(
    cx: &mut Cx,
    step: SessionStep,
    facts: &Facts,
    needs: &mut Vec<Want>,
) -> Option<Option<(Loc, Qid)>> {
    let dir = |key: Rc<SessionKey>, cx: &Cx| {
        let loc = Loc::Session { key, part: SPart::Dir };
        let qid = cx.tree.skeleton_qid(&loc, cx.agents);
        (loc, qid)
    };
    match step {
        SessionStep::Session(h, name) => {
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
        SessionStep::Field(key, f) => {
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
        SessionStep::Sub(key, name) => {
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
    if key.sub.is_some() {
        return Some(Ok(vec![ChatOf::Session(key.clone())]));
    }
    Some(sessions::subagents(key, facts, parents, needs)?.map(|subs| chats_of(key, subs)))
}

/// The chats of session `key` and its subagents `subs`.
pub(crate) fn chats_of(key: &Rc<SessionKey>, subs: Vec<Sub>) -> Vec<ChatOf> {
    let mut chats = vec![ChatOf::Session(key.clone())];
    chats.extend(subs.into_iter().map(|s| ChatOf::Session(Rc::new(sub_key(key, s)))));
    chats
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

/// A stat or open of a session's own file or directory.
pub(crate) struct Session {
    key: Rc<SessionKey>,
    part: SPart,
    /// The fid an open binds, or `None` for a stat.
    open: Option<u32>,
    g: Gather,
    /// The usage being summed, for `usage` itself or for the directory
    /// listing it (with the rest of that listing's entries).
    sum: Option<Box<Sum>>,
}

/// A session's usage being summed, and, when it is for the session's
/// directory, the rest of that listing's entries.
struct Sum {
    key: Rc<SessionKey>,
    usage: UsageSum,
    entries: Option<Vec<Entry>>,
}

impl Session {
    pub(crate) fn node(open: Option<u32>, key: Rc<SessionKey>, part: SPart) -> Session {
        // A `usage` is what was written a moment ago (`UsageSum`): so may
        // the looks be that say which chats it sums.
        let g = if matches!(part, SPart::Usage) { Gather::recent() } else { Gather::default() };
        Session { key, part, open, g, sum: None }
    }

    pub(crate) fn step(&mut self, ev: Event, cx: &mut Cx) -> Step {
        if let Some(sum) = &mut self.sum {
            match sum.usage.landed(cx, ev) {
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
        let ran = g.run(cx, |cx, facts, needs| self.derive(cx, facts, needs));
        self.g = g;
        match ran {
            Ran::Done(step) | Ran::Wait(step) => step,
            Ran::Failed(e) => fail(e),
        }
    }

    pub(crate) fn release(self, cx: &mut Cx) {
        self.g.release(cx);
    }

    fn derive(&mut self, cx: &mut Cx, facts: &Facts, needs: &mut Vec<Want>) -> Option<Step> {
        let (key, part) = (self.key.clone(), self.part);
        self.derive_node(cx, facts, key, part, needs)
    }

    /// A session's own file or directory.
    fn derive_node(
        &mut self,
        cx: &mut Cx,
        facts: &Facts,
        key: Rc<SessionKey>,
        part: SPart,
        needs: &mut Vec<Want>,
    ) -> Option<Step> {
        let base = cx.tree.harness_base(key.harness).map(|b| b.to_bytes().to_vec()).unwrap_or_default();
        Some(match part {
            SPart::Field(f) => match sessions::fields(&key, &base, facts, needs)?.remove(&f) {
                Some(text) => Step::Answer(Ok(self.text_reply(cx, &key, part, text))),
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
    ) -> Option<Step> {
        let fields = sessions::fields(&key, base, facts, needs);
        let meta = facts.meta(Root::Harness(key.harness), key.own_rel(), needs)?;
        let Some(meta) = meta.filter(|m| m.is_regular()) else { return Some(fail(Error::NotFound)) };
        let fields = fields?;
        let mtime = meta.mtime.clamp(0, u32::MAX as i64) as u32;
        let loc = Loc::Session { key: key.clone(), part: SPart::Dir };
        if self.open.is_none() {
            return Some(Step::Answer(Ok(Reply::Stat(cx.tree.entry(&loc, &Attr::Dated(mtime), cx.agents), None))));
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
    ) -> Option<Step> {
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

    fn dir_reply(&self, cx: &Cx, loc: &Loc, mut entries: Vec<Entry>) -> Step {
        entries.sort_by(|a, b| a.name.cmp(&b.name));
        let qid = cx.tree.skeleton_qid(loc, cx.agents);
        Step::Answer(Ok(Reply::Open { fid: self.open.unwrap_or_default(), qid, opened: Opened::Dir(Rc::new(entries)) }))
    }

    /// The usage summed so far: ask for the next chat, or answer.
    fn summed(&mut self, cx: &Cx) -> Step {
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
            None => Step::Answer(Ok(self.text_reply(cx, &key, SPart::Usage, text))),
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
