//! A session's `usage`: its tokens and its subagents', summed from their
//! chat indexes, which count them in the pass that indexes each chat
//! (`chat::usage`), so the file costs no scan of its own.
//!
//! `UsageSum` is what a job holds while it sums: the chats left to ask
//! for, one `Step::WaitChat` at a time (each shares the transcript's
//! refresh with anyone else reading it), and the total so far. A chat
//! whose transcript went (a subagent's file removed since the listing)
//! counts nothing; any other failure is the answer, never a short count.

use crate::chat::pool::ChatRef;
use crate::chat::usage::Usage;
use crate::errors::Error;

use super::cx::{ChatOf, Cx, Need, Step};

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
        // An index a moment old will do: what it counted was written.
        self.chats.get(self.next).map(|of| Step::WaitChat { of: of.clone(), need: Need::Recent })
    }

    /// The chat asked for is back: add what its index counted.
    pub(crate) fn refreshed(&mut self, cx: &Cx, r: Result<ChatRef, Error>) -> Result<(), Error> {
        self.next += 1;
        match r {
            Ok(r) => {
                let e = cx.chats.get(r).ok_or(Error::NotFound)?;
                self.total.add(e.index.usage());
                Ok(())
            }
            Err(Error::NotFound) => Ok(()),
            Err(e) => Err(e),
        }
    }

    /// The file's text.
    pub(crate) fn text(&self) -> Vec<u8> {
        self.total.render()
    }
}
