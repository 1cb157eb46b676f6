//! Chat slots: how many chat refreshes may hold an index of the pool at
//! once (`--max-chats`), and the refreshes waiting for one.
//!
//! A refresh takes a slot before it opens its transcript and gives it back
//! when it finishes; one that finds none taken queues, and the slot a
//! finishing refresh gives back goes straight to the first in the queue,
//! so nobody who came later overtakes it. A busy pool is a wait, never an
//! error: only a queue past `SLOT_QUEUE_MAX` refuses (`ChatsBusy`).
//!
//! Refreshes for a `wait` reader's count of messages take no slot: their
//! entries are made past the cap and pinned by their watch (`Pool::entry`),
//! which `--max-watches` bounds.
//!
//! The counts are checked: a slot given back that was not taken, or a
//! queue that lost a refresh, fails loudly rather than wrap.

use std::collections::VecDeque;

use super::ops::Id;

/// Refreshes that may wait for a slot at once. Each is a record and the
/// requests waiting on it; past this a reader is answered `ChatsBusy`.
pub(crate) const SLOT_QUEUE_MAX: usize = 4096;

/// The queue is full: the refresh is refused.
#[derive(Debug, PartialEq, Eq)]
pub(crate) struct QueueFull;

pub(crate) struct Slots {
    /// Slots no refresh holds.
    free: usize,
    /// Slots refreshes hold: `free + held` is the cap, always.
    held: usize,
    queue: VecDeque<Id>,
}

impl Slots {
    pub(crate) fn new(cap: usize) -> Slots {
        Slots { free: cap.max(1), held: 0, queue: VecDeque::new() }
    }

    /// Take a slot if one is free (and nobody queues for one).
    pub(crate) fn take(&mut self) -> bool {
        if self.free == 0 || !self.queue.is_empty() {
            return false;
        }
        self.free -= 1;
        self.held += 1;
        true
    }

    /// Queue refresh `id` for the next slot given back.
    pub(crate) fn enqueue(&mut self, id: Id) -> Result<(), QueueFull> {
        if self.queue.len() >= SLOT_QUEUE_MAX {
            return Err(QueueFull);
        }
        self.queue.push_back(id);
        Ok(())
    }

    /// A refresh that held a slot finished: the first queued refresh
    /// `alive` says still matters takes it over; the ones before it that
    /// no longer matter are handed back too (to be finished unheard).
    /// With none, the slot is free.
    pub(crate) fn give_back(&mut self, mut alive: impl FnMut(Id) -> bool) -> (Option<Id>, Vec<Id>) {
        assert!(self.held > 0, "a slot given back was taken");
        let mut dropped = Vec::new();
        while let Some(next) = self.queue.pop_front() {
            if alive(next) {
                return (Some(next), dropped);
            }
            dropped.push(next);
        }
        self.held -= 1;
        self.free += 1;
        (None, dropped)
    }

    /// Refreshes waiting for a slot.
    pub(crate) fn queued(&self) -> usize {
        self.queue.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn id(key: usize) -> Id {
        Id { key, gen: 1 }
    }

    #[test]
    fn slots_are_taken_up_to_the_cap_then_queued_in_order_and_handed_on() {
        let mut s = Slots::new(2);
        assert!(s.take() && s.take());
        assert!(!s.take(), "past the cap");
        s.enqueue(id(7)).unwrap();
        s.enqueue(id(8)).unwrap();
        assert_eq!(s.give_back(|_| true), (Some(id(7)), vec![]), "the first queued takes it over");
        assert!(!s.take(), "the slot went to the queue, not to a newcomer");
        assert_eq!(s.give_back(|i| i != id(8)), (None, vec![id(8)]), "an abandoned refresh is passed over");
        assert!(s.take(), "and the slot is free");
        assert_eq!(s.queued(), 0);
    }

    #[test]
    fn a_newcomer_queues_behind_those_already_waiting() {
        let mut s = Slots::new(1);
        assert!(s.take());
        s.enqueue(id(1)).unwrap();
        assert_eq!(s.give_back(|_| true).0, Some(id(1)));
        // The slot is held by 1 now; one freed later must not go to a
        // newcomer while 2 waits.
        s.enqueue(id(2)).unwrap();
        assert!(!s.take());
    }

    #[test]
    fn past_the_queue_cap_a_refresh_is_refused() {
        let mut s = Slots::new(1);
        assert!(s.take());
        for k in 0..SLOT_QUEUE_MAX {
            s.enqueue(id(k)).unwrap();
        }
        assert_eq!(s.enqueue(id(0)), Err(QueueFull));
    }

    #[test]
    #[should_panic(expected = "a slot given back was taken")]
    fn a_slot_given_back_that_was_never_taken_fails_loudly() {
        Slots::new(1).give_back(|_| true);
    }
}
