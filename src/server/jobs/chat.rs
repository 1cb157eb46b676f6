//! A stat or open of `chat/` or of one message, once the index is fresh.
//!
//! The job waits for a refresh of the agent's transcript (`refresh`; one
//! per transcript, shared by everyone reading it), then answers from the
//! index it names. A listing snapshots every message's name and stat at
//! the open, so a later read of the listing never depends on an index that
//! has moved on — started over, or been reused for another transcript.
//! A listing past `--max-chat-messages`, or stopped by a record longer
//! than the daemon reads, answers an error, never a shorter list.

use std::rc::Rc;

use crate::active::agents::Found;
use crate::chat::pool::{ChatEntry, ChatRef};
use crate::errors::Error;
use crate::meta::QID_PATH_SYNTHETIC;
use crate::proto::{Qid, QTFILE};
use crate::tree::{agent_qid_path, Attr, Entry, Loc, Part, SPart};

use super::super::fids::Opened;
use super::cx::{fail, ChatOf, Cx, Event, Need, Reply, Step};

pub(crate) struct ChatView {
    of: ChatOf,
    what: What,
}

enum What {
    Stat(u32),
    OpenList(u32),
    OpenMsg(u32, u32),
}

impl ChatView {
    pub(crate) fn stat(of: ChatOf, id: u32) -> ChatView {
        ChatView { of, what: What::Stat(id) }
    }

    /// An open of `chat/` (`msg` `None`) or of message `msg`.
    pub(crate) fn open(fid: u32, of: ChatOf, msg: Option<u32>) -> ChatView {
        let what = match msg {
            Some(id) => What::OpenMsg(fid, id),
            None => What::OpenList(fid),
        };
        ChatView { of, what }
    }

    pub(crate) fn step(&mut self, ev: Event, cx: &mut Cx) -> Step {
        let r = match ev {
            Event::Refreshed(Ok(r)) => r,
            Event::Refreshed(Err(e)) => return fail(e),
            _ => {
                let need = if matches!(self.what, What::OpenList(_)) { Need::Now } else { Need::Recent };
                return Step::WaitChat { of: self.of.clone(), need };
            }
        };
        if let ChatOf::Agent(slot, gen) = self.of {
            if cx.agents.get(slot, gen).is_none() {
                return fail(Error::NotFound);
            }
        }
        let Some(e) = cx.chats.get(r) else { return fail(Error::NotFound) };
        Step::Answer(match self.what {
            What::Stat(id) => msg_entry(cx, &self.of, e, id).map(|e| Reply::Stat(e, None)).ok_or(Error::NotFound),
            What::OpenMsg(fid, id) => msg_qid(cx, &self.of, e, id)
                .map(|qid| Reply::Open { fid, qid, opened: Opened::Chat { entry: r, id } })
                .ok_or(Error::NotFound),
            What::OpenList(_) if e.index.full() => Err(Error::ChatTooLong),
            What::OpenList(_) if e.stuck => Err(Error::ChatLineTooLong),
            What::OpenList(fid) => Ok(self.listing(cx, fid, r)),
        })
    }

    fn listing(&self, cx: &Cx, fid: u32, r: ChatRef) -> Reply {
        let e = cx.chats.get(r).expect("looked up by the caller");
        let entries: Vec<Entry> = (0..e.index.len() as u32).filter_map(|id| msg_entry(cx, &self.of, e, id)).collect();
        let qid = cx.tree.skeleton_qid(&chat_loc(&self.of, None), cx.agents);
        Reply::Open { fid, qid, opened: Opened::Dir(Rc::new(entries)) }
    }
}

/// The node of `chat/` (`msg` `None`) or of one of its messages.
pub(crate) fn chat_loc(of: &ChatOf, msg: Option<u32>) -> Loc {
    match (of, msg) {
        (ChatOf::Agent(slot, gen), None) => Loc::Agent { slot: *slot, gen: *gen, part: Part::Chat },
        (ChatOf::Agent(slot, gen), Some(id)) => Loc::Agent { slot: *slot, gen: *gen, part: Part::ChatMsg(id) },
        (ChatOf::Session(key), None) => Loc::Session { key: key.clone(), part: SPart::Chat },
        (ChatOf::Session(key), Some(id)) => Loc::Session { key: key.clone(), part: SPart::ChatMsg(id) },
    }
}

/// A message's qid: a file of the agent's or the session's; messages never
/// change once whole, so its version is a hash of what identifies its text
/// (its size and time).
pub(crate) fn msg_qid(cx: &Cx, of: &ChatOf, e: &ChatEntry, id: u32) -> Option<Qid> {
    let info = e.index.info(id as usize)?;
    let mut key = [0u8; 12];
    key[..8].copy_from_slice(&info.size.to_le_bytes());
    key[8..].copy_from_slice(&info.time.to_le_bytes());
    let version = wyhash::wyhash(&key, 0xc4a7) as u32;
    let path = match of {
        ChatOf::Agent(slot, gen) => {
            let found: Option<Found> = cx.agents.get(*slot, *gen).map(|a| a.found);
            agent_qid_path(found.as_ref(), Part::ChatMsg(id))
        }
        ChatOf::Session(key) => crate::tree::sessions::qid_path(key, SPart::ChatMsg(id)),
    };
    debug_assert!(path & QID_PATH_SYNTHETIC != 0);
    Some(Qid { ty: QTFILE, version, path })
}

/// A message's stat entry: its name, size and time from the index.
fn msg_entry(cx: &Cx, of: &ChatOf, e: &ChatEntry, id: u32) -> Option<Entry> {
    let info = e.index.info(id as usize)?;
    let qid = msg_qid(cx, of, e, id)?;
    let mut name = Vec::new();
    e.index.name(id as usize, &mut name);
    let attr = Attr::Text { len: info.size, version: qid.version, mtime: info.time };
    Some(cx.tree.entry_named(name.into_boxed_slice(), &chat_loc(of, Some(id)), &attr, cx.agents))
}
