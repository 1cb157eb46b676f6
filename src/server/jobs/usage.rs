//! A session's `usage`: its tokens and its subagents', summed from their
//! chat indexes, which count them in the pass that indexes each chat
//! (`chat::usage`), so the file costs no scan of its own.
//!
//! `UsageSum` is what a job holds while it sums: the chats left to ask
//! for, one `Step::WaitChat` at a time (each shares the transcript's
//! refresh with anyone else reading it), and the total so far. A chat
//! whose transcript went (a subagent's file removed since the listing)
//! counts nothing; any other failure is the answer, never a short count.

use crate::chat::usage::Usage;
use crate::errors::Error;

use super::cx::{ChatOf, Cx, Event, Need, Step};

pub(crate) struct UsageSum {
    chats: Vec<ChatOf>,
    next: usize,
    total: Usage,
}

impl UsageSum {
    /// The sum of `chats`' usage, the first its own transcript's.
    pub(crate) fn new(chats: Vec<ChatOf>) -> UsageSum {
        UsageSum { chats, next: 0, total: Usage::default() }
    }

    /// The next chat to wait for, or `None` when every one is counted.
    pub(crate) fn ask(&self) -> Option<Step> {
        // An index a moment old will do: what it counted was written; and
        // a file as its digest says it was indexed needs none at all.
        self.chats.get(self.next).map(|of| Step::WaitChat { of: of.clone(), need: Need::Usage })
    }

    /// The chat asked for is back, `ev`: add what its index, or its
    /// digest, counted. `None` for an event that is not its answer.
    pub(crate) fn landed(&mut self, cx: &Cx, ev: Event) -> Option<Result<(), Error>> {
        let usage = match ev {
            Event::Refreshed(Ok(r)) => cx.chats.get(r).map(|e| e.index.usage()),
            Event::Counted(file) => cx.chats.digests.of(file).map(|d| &*d.usage),
            // A chat whose transcript went counts nothing.
            Event::Refreshed(Err(Error::NotFound)) => None,
            Event::Refreshed(Err(e)) => return Some(Err(e)),
            _ => return None,
        };
        self.next += 1;
        if let Some(u) = usage {
            self.total.add(u);
        }
        Some(Ok(()))
    }

    /// The file's text.
    pub(crate) fn text(&self) -> Vec<u8> {
        self.total.render()
    }
}
