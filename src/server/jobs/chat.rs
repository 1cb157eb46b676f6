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
use crate::chat::pool::{ChatRef, Entry as ChatEntry};
use crate::errors::Error;
use crate::meta::QID_PATH_SYNTHETIC;
use crate::proto::{Qid, QTFILE};
use crate::tree::{agent_qid_path, Attr, Entry, Loc, Part};

use super::super::conn::Opened;
use super::cx::{fail, Cx, Event, Reply, Step};

pub(crate) struct ChatView {
    slot: u32,
    gen: u32,
    what: What,
}

enum What {
    Stat(u32),
    OpenList(u32),
    OpenMsg(u32, u32),
}

impl ChatView {
    pub(crate) fn stat(slot: u32, gen: u32, id: u32) -> ChatView {
        ChatView { slot, gen, what: What::Stat(id) }
    }

    pub(crate) fn open(fid: u32, slot: u32, gen: u32, part: Part) -> ChatView {
        let what = match part {
            Part::ChatMsg(id) => What::OpenMsg(fid, id),
            _ => What::OpenList(fid),
        };
        ChatView { slot, gen, what }
    }

    pub(crate) fn step(&mut self, ev: Event, cx: &mut Cx) -> Step {
        let r = match ev {
            Event::Refreshed(Ok(r)) => r,
            Event::Refreshed(Err(e)) => return fail(e),
            _ => {
                let recent = !matches!(self.what, What::OpenList(_));
                return Step::WaitChat { slot: self.slot, gen: self.gen, recent };
            }
        };
        let found = cx.agents.get(self.slot, self.gen).map(|a| a.found);
        let (Some(found), Some(e)) = (found, cx.chats.get(r)) else { return fail(Error::NotFound) };
        Step::Answer(match self.what {
            What::Stat(id) => {
                msg_entry(cx, self.slot, self.gen, e, id).map(|e| Reply::Stat(e, None)).ok_or(Error::NotFound)
            }
            What::OpenMsg(fid, id) => msg_qid(Some(&found), e, id)
                .map(|qid| Reply::Open { fid, qid, opened: Opened::Chat { entry: r, id } })
                .ok_or(Error::NotFound),
            What::OpenList(_) if e.index.full() => Err(Error::ChatTooLong),
            What::OpenList(_) if e.stuck => Err(Error::ChatLineTooLong),
            What::OpenList(fid) => Ok(self.listing(cx, fid, r)),
        })
    }

    fn listing(&self, cx: &Cx, fid: u32, r: ChatRef) -> Reply {
        let e = cx.chats.get(r).expect("looked up by the caller");
        let entries: Vec<Entry> =
            (0..e.index.len() as u32).filter_map(|id| msg_entry(cx, self.slot, self.gen, e, id)).collect();
        let qid = cx.tree.skeleton_qid(&Loc::Agent { slot: self.slot, gen: self.gen, part: Part::Chat }, cx.agents);
        Reply::Open { fid, qid, opened: Opened::Dir(Rc::new(entries)) }
    }
}

/// A message's qid: a file of the agent's; messages never change once
/// whole, so its version is a hash of what identifies its text (its size
/// and time).
pub(crate) fn msg_qid(found: Option<&Found>, e: &ChatEntry, id: u32) -> Option<Qid> {
    let info = e.index.info(id as usize)?;
    let mut key = [0u8; 12];
    key[..8].copy_from_slice(&info.size.to_le_bytes());
    key[8..].copy_from_slice(&info.time.to_le_bytes());
    let version = wyhash::wyhash(&key, 0xc4a7) as u32;
    let path = agent_qid_path(found, Part::ChatMsg(id));
    debug_assert!(path & QID_PATH_SYNTHETIC != 0);
    Some(Qid { ty: QTFILE, version, path })
}

/// A message's stat entry: its name, size and time from the index.
fn msg_entry(cx: &Cx, slot: u32, gen: u32, e: &ChatEntry, id: u32) -> Option<Entry> {
    let info = e.index.info(id as usize)?;
    let found = cx.agents.get(slot, gen).map(|a| a.found);
    let qid = msg_qid(found.as_ref(), e, id)?;
    let mut name = Vec::new();
    e.index.name(id as usize, &mut name);
    let attr = Attr::Text { len: info.size, version: qid.version, mtime: info.time };
    let loc = Loc::Agent { slot, gen, part: Part::ChatMsg(id) };
    Some(cx.tree.entry_named(name.into_boxed_slice(), &loc, &attr, cx.agents))
}
