//! A session's `usage`: its tokens and its subagents', summed from their
//! chat indexes, which count them in the pass that indexes each chat
//! (`chat::usage`), so the file costs no scan of its own.
//!
//! `UsageSum` is what a job holds while it sums: the chats left to ask
//! for, one `Step::WaitChat` at a time (each shares the transcript's
//! refresh with anyone else reading it), and the total so far. A chat
//! whose transcript went (a subagent's file removed since the listing)
//! counts nothing; any other failure is the answer, never a short count.
//!
//! After the totals and the models, the file says what was spent today
//! (`today.<kind>`): the replies written since local midnight (the
//! daemon's zone, `--tz`), from each chat's charges as it lands — what
//! `9agents top` shows as an agent's tokens today.

use crate::chat::usage::{Counts, Usage, KINDS};
use crate::errors::Error;

use super::cx::{ChatOf, Cx, Event, Need, Step};

pub(crate) struct UsageSum {
    chats: Vec<ChatOf>,
    next: usize,
    total: Usage,
    /// Spent today, and the day (local, days since the epoch) it is of.
    today: Counts,
    day: Option<i64>,
}

impl UsageSum {
    /// The sum of `chats`' usage, the first its own transcript's.
    pub(crate) fn new(chats: Vec<ChatOf>) -> UsageSum {
        UsageSum { chats, next: 0, total: Usage::default(), today: [0; 5], day: None }
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
            let zone = &cx.cfg.zone;
            let local_day = |t: i64| (t + i64::from(zone.offset_at(t))).div_euclid(86_400);
            let now = (crate::meta::wall_ns() / 1_000_000_000) as i64;
            let day = *self.day.get_or_insert_with(|| local_day(now));
            for c in u.charges().iter().filter(|c| local_day(i64::from(c.time)) == day) {
                for (t, n) in self.today.iter_mut().zip(c.counts) {
                    *t += n;
                }
            }
        }
        Some(Ok(()))
    }

    /// The file's text: the totals, the models', then today's.
    pub(crate) fn text(&self) -> Vec<u8> {
        let mut out = self.total.render();
        for (k, v) in KINDS.iter().zip(self.today) {
            out.extend_from_slice(format!("today.{k} {v}\n").as_bytes());
        }
        out
    }
}
