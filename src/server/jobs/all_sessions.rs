//! Every session on disk of the harnesses that keep them there, listed as
//! `/sessions/<h>` lists them — a slice of directories a turn — each once
//! (a codex rollout kept both in `sessions/` and `archived_sessions/` is
//! one session), and codex's subagents found once for all of them
//! (`sessions::codex_children`), not by listing every rollout again per
//! session. What `/usage` sums and `/search` searches.

use std::collections::{HashMap, HashSet};
use std::rc::Rc;

use crate::errors::Error;
use crate::facts::{Facts, Want};
use crate::harness::Harness;
use crate::sessions::{self, SessionKey, Sub};

use super::cx::Cx;

/// The harnesses that keep their sessions on disk, in order: hermes keeps
/// them in a database, as `/sessions` leaves it out.
pub(crate) const HARNESSES: [Harness; 5] = [Harness::Claude, Harness::Codex, Harness::Dsh, Harness::Omp, Harness::Pi];

#[derive(Default)]
pub(crate) struct AllSessions {
    /// The harness being listed (an index into `HARNESSES`), and the
    /// directory its next slice starts at.
    harness: usize,
    next_dir: usize,
    /// The sessions found so far, in the order found.
    pub found: Vec<Rc<SessionKey>>,
    ids: HashSet<(Harness, Box<[u8]>)>,
    /// Codex's subagents by their parent, once every session is listed.
    pub codex_children: Option<HashMap<Box<[u8]>, Vec<Sub>>>,
    /// What the listing gathered is no session's: the job gathers afresh
    /// before its next step (`take_regather`).
    regather: bool,
}

/// Where a listing stands after a step.
pub(crate) enum Listed {
    /// A slice is done: yield, and call again.
    Slice,
    /// Every session is found.
    All,
}

impl AllSessions {
    /// List a slice more of the harnesses `want` passes. `None` while
    /// facts are gathered (`needs`).
    pub(crate) fn list(
        &mut self,
        cx: &mut Cx,
        facts: &Facts,
        needs: &mut Vec<Want>,
        want: impl Fn(Harness) -> bool,
    ) -> Option<Result<Listed, Error>> {
        let parents = cx.tree.session_table().parents();
        while let Some(&h) = HARNESSES.get(self.harness) {
            if cx.tree.harness_base(h).is_none() || !want(h) {
                (self.harness, self.next_dir) = (self.harness + 1, 0);
                continue;
            }
            let sessions::Slice { found, next } =
                match sessions::candidates_from(h, self.next_dir, facts, &parents, needs)? {
                    Ok(got) => got,
                    Err(e) => return Some(Err(e)),
                };
            // A session listed twice is one session, as its directory under
            // `/sessions` is one: from the first found.
            for f in found {
                if self.ids.insert((h, f.id.clone().into_boxed_slice())) {
                    let key =
                        SessionKey { harness: h, id: f.id.into(), transcript: f.rel.into(), sub: None, agent: None };
                    self.found.push(Rc::new(key));
                }
            }
            if self.found.len() > cx.cfg.max_dir_entries * HARNESSES.len() {
                return Some(Err(Error::DirTooLarge));
            }
            match next {
                Some(n) => {
                    self.next_dir = n;
                    return Some(Ok(Listed::Slice));
                }
                None => (self.harness, self.next_dir) = (self.harness + 1, 0),
            }
        }
        if self.codex_children.is_none() && self.found.iter().any(|k| k.harness == Harness::Codex) {
            // Every codex session's subagents at once: one listing of the
            // rollouts, not one per session.
            self.codex_children = Some(match sessions::codex_sessions(facts, &parents, needs)? {
                Ok(all) => sessions::codex_children(all),
                Err(e) => return Some(Err(e)),
            });
            // What the listings gathered (every rollout's head among it) is
            // no session's: the sessions gather afresh.
            self.regather = true;
            return Some(Ok(Listed::Slice));
        }
        Some(Ok(Listed::All))
    }

    /// Whether the job is to let go of what it gathered for the listing.
    pub(crate) fn take_regather(&mut self) -> bool {
        std::mem::take(&mut self.regather)
    }

    /// The chats of session `key` (its own and its subagents'), codex's from
    /// the children found with the listing. `None` while facts are
    /// gathered.
    pub(crate) fn chats(
        &mut self,
        cx: &mut Cx,
        key: &Rc<SessionKey>,
        facts: &Facts,
        needs: &mut Vec<Want>,
    ) -> Option<Result<Vec<super::cx::ChatOf>, Error>> {
        chats(cx, &mut self.codex_children, key, facts, needs)
    }
}

/// `AllSessions::chats`, with the codex children found by a listing kept
/// elsewhere (a search keeps them between its reads).
pub(crate) fn chats(
    cx: &mut Cx,
    codex_children: &mut Option<HashMap<Box<[u8]>, Vec<Sub>>>,
    key: &Rc<SessionKey>,
    facts: &Facts,
    needs: &mut Vec<Want>,
) -> Option<Result<Vec<super::cx::ChatOf>, Error>> {
    match (key.harness, codex_children) {
        (Harness::Codex, Some(children)) => {
            Some(Ok(super::session::chats_of(key, children.remove(&key.id).unwrap_or_default())))
        }
        _ => super::session::usage_chats(key, facts, &cx.tree.session_table().parents(), needs),
    }
}
