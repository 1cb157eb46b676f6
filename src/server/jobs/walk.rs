//! A Twalk, name by name (walk(5)).
//!
//! A walk stands somewhere (`cur`) and takes its names one at a time.
//! Through the skeleton a step is answered from the tables; onto the disk
//! it is a look (a probe, O_PATH beneath the base); under `/active/<h>` a
//! pid the table lacks waits for one rescan; into `chat/` a name waits for
//! the index to be fresh; onto a derived file (an agent's field, a
//! subagent, its model) it waits for the derivation that says whether the
//! file is there and what its text's version is. A missing name ends the
//! walk short (the qids so far, newfid unmade); a look that failed for a
//! reason other than absence (out of fds, out of memory) answers that
//! error, never not-found.

use crate::active::{derive as active, Field};
use crate::chat::pool::ChatRef;
use crate::errors::Error;
use crate::exclude;
use crate::meta::Meta;
use crate::proto::Qid;
use crate::sessions::{SField, SessionKey};
use crate::tree::{Loc, Part, Presence, SPart};

use super::super::probe::{means_absent, Batch, Kind, Probe, Target};
use super::chat;
use super::cx::drive_look;
use super::cx::{ChatOf, Cx, Event, Need, Reply, Step};
use super::gather::{Gather, Ran};

pub(crate) struct Walk {
    fid: u32,
    newfid: u32,
    names: Vec<Vec<u8>>,
    cur: Loc,
    cur_is_dir: bool,
    qids: Vec<Qid>,
    /// Whether this walk already waited for a rescan, and how it ended.
    scanned: bool,
    scan_error: Option<Error>,
    /// The chat refresh this walk waited for, once it has, and whether it
    /// asked for a fresh one (a name a recent index lacks may be new).
    chat: Option<Result<ChatRef, Error>>,
    chat_forced: bool,
    /// What the look at the place it stands on saw, when that is a file
    /// on disk or a harness directory's base (handed to the connection with
    /// the answer: `LOOK_REUSE_FOR`).
    look: Option<Meta>,
    stage: Stage,
}

enum Stage {
    /// Between names: nothing in flight.
    Stepping,
    /// Looking at the next place on disk.
    Look { next: Loc, batch: Batch },
    /// Deriving whether the next (derived) place is there.
    Derive { pending: Pending, g: Gather },
}

/// A step onto a derived node, while it is derived.
#[derive(Clone)]
enum Pending {
    Field(u32, u32, Field),
    /// `/sessions/<h>/<id>`: there when a listing finds it.
    Session(crate::harness::Harness, Vec<u8>),
    /// A session's field: there when its derivation says so.
    SessionField(std::rc::Rc<SessionKey>, SField),
    /// A session's `agents/<name>`.
    SessionSub(std::rc::Rc<SessionKey>, Vec<u8>),
}

/// What the walk's next name names.
enum Next {
    To(Loc),
    Missing,
    Derive(Pending),
    /// The walk must wait, or answer now.
    Stop(Step),
    /// The step was taken here (a chat message: its qid came from the index).
    Took,
}

impl Walk {
    pub(crate) fn new(fid: u32, newfid: u32, names: &[&[u8]], cur: Loc, cur_is_dir: bool) -> Walk {
        Walk {
            fid,
            newfid,
            names: names.iter().map(|n| n.to_vec()).collect(),
            cur,
            cur_is_dir,
            qids: Vec::with_capacity(names.len()),
            scanned: false,
            scan_error: None,
            chat: None,
            chat_forced: false,
            look: None,
            stage: Stage::Stepping,
        }
    }

    /// A walk to another fid makes one when it lands.
    pub(crate) fn makes_fid(&self) -> bool {
        self.newfid != self.fid
    }

    pub(crate) fn step(&mut self, ev: Event, cx: &mut Cx) -> Step {
        match ev {
            Event::Scanned(r) => self.scan_error = r.err(),
            // (A derivation's is its compressed transcript decoded: `gather`.)
            Event::Refreshed(r) if !matches!(self.stage, Stage::Derive { .. }) => self.chat = Some(r),
            // The stage is the walk's own while it steps: each arm gives it
            // back, or hands on what it carried.
            ev => match std::mem::replace(&mut self.stage, Stage::Stepping) {
                Stage::Look { next, mut batch } => {
                    if let Err(step) = drive_look(&mut batch, &mut cx.ops, ev) {
                        self.stage = Stage::Look { next, batch };
                        return step;
                    }
                    let (found, _) = batch.into_one(&mut cx.ops);
                    return self.looked(cx, next, found);
                }
                Stage::Derive { pending, mut g } => {
                    if let Err(step) = g.on_event(cx, ev) {
                        self.stage = Stage::Derive { pending, g };
                        return step;
                    }
                    return self.derive(cx, pending, g);
                }
                Stage::Stepping => {}
            },
        }
        self.advance(cx)
    }

    pub(crate) fn release(self, cx: &mut Cx) {
        match self.stage {
            Stage::Look { batch, .. } => batch.release(&mut cx.ops),
            Stage::Derive { g, .. } => g.release(cx),
            Stage::Stepping => {}
        }
    }

    /// Walk on from where it stands: skeleton steps at once, a step onto
    /// the disk or a derived file starts what says whether it is there.
    fn advance(&mut self, cx: &mut Cx) -> Step {
        while self.qids.len() < self.names.len() && self.cur_is_dir {
            let next = match self.next_place(cx) {
                Next::To(l) => l,
                Next::Missing => break,
                Next::Derive(pending) => return self.start_derive(cx, pending),
                Next::Stop(step) => return step,
                Next::Took => continue,
            };
            match next {
                Loc::Agent { slot, gen, part: Part::Field(f) } => {
                    return self.start_derive(cx, Pending::Field(slot, gen, f));
                }
                Loc::Session { key, part: SPart::Field(f) } => {
                    return self.start_derive(cx, Pending::SessionField(key, f));
                }
                _ => {}
            }
            match cx.tree.presence(&next, cx.agents) {
                Presence::Absent => break,
                Presence::Probe(b) => {
                    let mut batch = Batch::one(Probe::new(Target::Beneath(b), Kind::Look, cx.cfg.allow_hard_links));
                    if let Err(step) = drive_look(&mut batch, &mut cx.ops, Event::Start) {
                        self.stage = Stage::Look { next, batch };
                        return step;
                    }
                    let (found, _) = batch.into_one(&mut cx.ops);
                    return self.looked(cx, next, found);
                }
                Presence::Always => {
                    self.look = None;
                    self.qids.push(cx.tree.skeleton_qid(&next, cx.agents));
                    self.cur_is_dir = unlooked_is_dir(cx, &next);
                    self.cur = next;
                }
            }
        }
        self.end()
    }

    /// The place the walk's next name names, from where it stands.
    fn next_place(&mut self, cx: &mut Cx) -> Next {
        let name = self.names[self.qids.len()].clone();
        if name == b".." {
            return Next::To(cx.tree.parent(&self.cur, cx.agents));
        }
        let found = match self.cur.clone() {
            Loc::Static(d) if cx.tree.sessions_harness(d).is_some() => {
                let h = cx.tree.sessions_harness(d).expect("checked");
                return Next::Derive(Pending::Session(h, name));
            }
            // Any name under /search that is not its `query` file is a
            // query (`/search/<query>`).
            Loc::Static(crate::tree::SEARCH) => {
                cx.tree.static_child(crate::tree::SEARCH, &name).or_else(|| Some(Loc::Search(name.clone().into())))
            }
            Loc::Static(d) => match cx.tree.active_harness(d) {
                None => cx.tree.static_child(d, &name),
                Some(h) => match parse_pid(&name).and_then(|pid| cx.agents.find(h, pid)) {
                    Some((slot, gen)) => Some(Loc::Agent { slot, gen, part: Part::Dir }),
                    // A walk that misses under /active rescans once.
                    None if !self.scanned => {
                        self.scanned = true;
                        return Next::Stop(Step::WaitScan);
                    }
                    None => match self.scan_error {
                        Some(e) if self.qids.is_empty() => return Next::Stop(Step::Answer(Err(e))),
                        _ => None,
                    },
                },
            },
            Loc::Mirror(_) if exclude::excluded(&name) => None,
            Loc::Mirror(p) => Some(Loc::Mirror(p.child(&name))),
            // Its session's `usage` and `agents/`, the same files as under
            // /sessions (whose `..` leads back here).
            Loc::Agent { slot, gen, part: Part::Dir } if name == b"usage" || name == b"agents" => {
                let part = if name == b"usage" { SPart::Usage } else { SPart::Agents };
                crate::tree::chat_format(cx.agents, slot, gen)
                    .and_then(|_| super::session::agent_key(cx, slot, gen))
                    .map(|key| Loc::Session { key: std::rc::Rc::new(key), part })
            }
            Loc::Agent { slot, gen, part: Part::Dir } => Part::child(&name).map(|part| Loc::Agent { slot, gen, part }),
            Loc::Agent { slot, gen, part: Part::Chat } => {
                return self.next_message(cx, ChatOf::Agent(slot, gen), &name)
            }
            Loc::Agent { .. } => None,
            Loc::Session { key, part: SPart::Dir } => {
                SPart::child(&name, key.sub.is_some()).map(|part| Loc::Session { key, part })
            }
            Loc::Session { key, part: SPart::Agents } => return Next::Derive(Pending::SessionSub(key, name)),
            Loc::Session { key, part: SPart::Chat } => return self.next_message(cx, ChatOf::Session(key), &name),
            Loc::Session { .. } | Loc::Search(_) => None,
        };
        found.map_or(Next::Missing, Next::To)
    }

    /// A name in `chat/`: the index (made fresh first) says which message.
    fn next_message(&mut self, cx: &mut Cx, of: ChatOf, name: &[u8]) -> Next {
        let entry = match self.chat {
            None => {
                let need = if self.chat_forced { Need::Now } else { Need::Recent };
                return Next::Stop(Step::WaitChat { of, need });
            }
            Some(Err(e)) if self.qids.is_empty() => return Next::Stop(Step::Answer(Err(e))),
            Some(Err(_)) => return Next::Missing,
            Some(Ok(r)) => r,
        };
        let Some(id) = cx.chats.get(entry).and_then(|e| e.index.lookup(name)) else {
            if self.chat_forced {
                return Next::Missing;
            }
            // A recent index lacks it: it may be new, so look afresh.
            (self.chat, self.chat_forced) = (None, true);
            return Next::Stop(Step::WaitChat { of, need: Need::Now });
        };
        let Some(e) = cx.chats.get(entry) else { return Next::Missing };
        let Some(qid) = chat::msg_qid(cx, &of, e, id as u32) else { return Next::Missing };
        self.qids.push(qid);
        self.look = None;
        self.cur = chat::chat_loc(&of, Some(id as u32));
        self.cur_is_dir = false;
        Next::Took
    }

    /// The look at `next` is back, `found`: step onto the place, or end
    /// the walk.
    fn looked(&mut self, cx: &mut Cx, next: Loc, found: Result<Meta, i32>) -> Step {
        let harness = cx.tree.is_harness_dir(&next);
        match found {
            Ok(m) if harness && !m.is_dir() => self.end(),
            Ok(m) => {
                let qid = match &next {
                    Loc::Static(i) if harness => cx.tree.static_qid(*i),
                    _ => m.qid(),
                };
                self.qids.push(qid);
                // A harness directory's look says only that its base is
                // a directory: its Tgetattr answers the skeleton's entry.
                self.look = Some(m);
                self.cur_is_dir = harness || m.is_dir();
                self.cur = next;
                self.advance(cx)
            }
            Err(e) if means_absent(e) => self.end(),
            Err(e) => Step::Answer(Err(Error::from_errno(e))),
        }
    }

    fn start_derive(&mut self, cx: &mut Cx, pending: Pending) -> Step {
        self.derive(cx, pending, Gather::default())
    }

    /// Derive whether the `pending` place is there, over what `g` has
    /// gathered; step onto it if so.
    fn derive(&mut self, cx: &mut Cx, pending: Pending, mut g: Gather) -> Step {
        let got = match g.run(cx, |cx, facts, needs| derive_pending(cx, &pending, facts, needs)) {
            Ran::Done(got) => got,
            Ran::Wait(step) => {
                self.stage = Stage::Derive { pending, g };
                return step;
            }
            // Out of rounds: not there. Out of fds or memory: that.
            Ran::Failed(Error::Io) => None,
            Ran::Failed(e) => {
                g.release(cx);
                return Step::Answer(Err(e));
            }
        };
        g.release(cx);
        let Some((loc, qid)) = got else { return self.end() };
        self.qids.push(qid);
        self.look = None;
        self.cur_is_dir = unlooked_is_dir(cx, &loc);
        self.cur = loc;
        self.advance(cx)
    }

    /// walk(5)'s answer: all names walked binds newfid; none is an error;
    /// some is a partial Rwalk and newfid stays unmade.
    fn end(&mut self) -> Step {
        if self.qids.is_empty() && !self.names.is_empty() {
            return Step::Answer(Err(Error::NotFound));
        }
        let bind = (self.qids.len() == self.names.len()).then(|| (self.cur.clone(), self.cur_is_dir));
        let look = bind.as_ref().and(self.look.take()).map(Box::new);
        let qids = std::mem::take(&mut self.qids);
        Step::Answer(Ok(Reply::Walk { fid: self.fid, newfid: self.newfid, qids, bind, look }))
    }
}

/// Run the derivation of a pending step over the facts: `None` while facts
/// are missing, `Some(None)` when the place is not there.
fn derive_pending(
    cx: &mut Cx,
    pending: &Pending,
    facts: &crate::facts::Facts,
    needs: &mut Vec<crate::facts::Want>,
) -> Option<Option<(Loc, Qid)>> {
    use super::session::{walk_to, SessionStep as S};
    let (slot, gen, field) = match pending {
        Pending::Field(s, g, f) => (*s, *g, *f),
        Pending::Session(h, name) => return walk_to(cx, S::Session(*h, name), facts, needs),
        Pending::SessionField(key, f) => return walk_to(cx, S::Field(key, *f), facts, needs),
        Pending::SessionSub(key, name) => return walk_to(cx, S::Sub(key, name), facts, needs),
    };
    let Some(agent) = cx.agents.get(slot, gen) else { return Some(None) };
    let (found, session) = (agent.found, agent.session.clone());
    let text = active::fields(&found, session.as_ref(), facts, needs)?.and_then(|mut f| f.remove(&field));
    let part = Part::Field(field);
    Some(text.map(|t| (Loc::Agent { slot, gen, part }, cx.tree.text_qid(Some(&found), part, &t))))
}

/// Whether a place stepped onto without a look (a skeleton node, an
/// agent's or a session's part, a derived file) is a directory. A
/// mirrored place is always looked at (`Presence::Probe`), and its look
/// says; reached otherwise it is taken for a file.
fn unlooked_is_dir(cx: &Cx, loc: &Loc) -> bool {
    match loc {
        Loc::Static(i) => cx.tree.static_is_dir(*i),
        Loc::Agent { part, .. } => part.is_dir(),
        Loc::Session { part, .. } => part.is_dir(),
        Loc::Mirror(_) | Loc::Search(_) => false,
    }
}

/// A pid as /proc spells it: decimal, no sign, no leading zero.
fn parse_pid(name: &[u8]) -> Option<u32> {
    if name.is_empty() || name.len() > 10 || (name[0] == b'0') || !name.iter().all(u8::is_ascii_digit) {
        return None;
    }
    std::str::from_utf8(name).ok()?.parse().ok()
}
