//! The watch behind `/usage/wait`: when the block open now may have
//! changed.
//!
//! Two things change it. A Claude Code transcript grows, or a new one
//! appears: inotify watches on the directories they live in (`projects/`,
//! every project's directory, and the session and subagent directories of
//! the sessions active lately), kept in `Waits` beside the agents' and
//! chosen anew by every evaluation (`jobs::report`). And time: the block
//! ends `BLOCK_SECS` after it began, with no event to say so.
//!
//! A change is not acted on at once. A report may take what a look at a
//! transcript found less than `CHAT_FRESH_FOR` ago (`Gather::recent`, the
//! pool's recent refreshes); an evaluation begun sooner than that after a
//! write could take a look from before it, find nothing new and park,
//! and the write would wait for the next one. So the reads parked here
//! step `SETTLE` after the first change not yet covered — an evaluation
//! then looks afresh at everything written before that — and at most
//! once per `SETTLE` while a session streams.

use std::time::{Duration, Instant};

use super::fresh::CHAT_FRESH_FOR;
use super::ops::Id;

/// How long after a change the reads parked on it step: every look a
/// report may take as fresh was taken after the change.
pub(crate) const SETTLE: Duration = CHAT_FRESH_FOR.saturating_add(Duration::from_millis(50));

#[derive(Default)]
pub(crate) struct UsageWatch {
    /// Readers of `/usage/wait` open now.
    pub readers: usize,
    /// Its inotify watch descriptors.
    pub wds: Vec<i32>,
    pub seq: u64,
    pub waiting: Vec<Id>,
    /// The first change no evaluation has covered yet, and the last change.
    dirty_since: Option<Instant>,
    last_change: Option<Instant>,
    /// Whether the settle timer is in flight (`Token::UsageSettle`).
    pub settle_armed: bool,
    /// When the block open now ends, Unix seconds (`Token::UsageEnd`).
    pub ends: Option<u32>,
    pub end_armed: bool,
}

impl UsageWatch {
    /// An inotify event on one of its directories, at `now`.
    pub(crate) fn hit(&mut self, now: Instant) {
        self.dirty_since.get_or_insert(now);
        self.last_change = Some(now);
    }

    /// How long until the reads should step for the changes so far, while
    /// some are parked: the settle timer's length.
    pub(crate) fn settle_in(&self, now: Instant) -> Option<Duration> {
        let since = self.dirty_since.filter(|_| !self.waiting.is_empty())?;
        Some((since + SETTLE).saturating_duration_since(now))
    }

    /// The settle timer fired at `now`: the parked reads to step, if the
    /// first uncovered change is `SETTLE` old. A change made less than
    /// `SETTLE` ago is not covered by the evaluation they make now: the
    /// next one is due `SETTLE` after the last change.
    pub(crate) fn settled(&mut self, now: Instant) -> Vec<Id> {
        self.settle_armed = false;
        match self.dirty_since {
            Some(since) if since + SETTLE <= now => {
                self.dirty_since = self.last_change.filter(|&t| t + SETTLE > now);
                self.wake()
            }
            _ => Vec::new(),
        }
    }

    /// The block's end came (or any other reason to look again).
    pub(crate) fn wake(&mut self) -> Vec<Id> {
        self.seq += 1;
        std::mem::take(&mut self.waiting)
    }

    /// The last reader went: nothing is pending for anyone.
    pub(crate) fn clear(&mut self) {
        (self.dirty_since, self.last_change, self.ends) = (None, None, None);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parked() -> UsageWatch {
        UsageWatch { waiting: vec![Id { key: 1, gen: 1 }], ..UsageWatch::default() }
    }

    #[test]
    fn a_change_steps_the_parked_reads_a_settle_later_and_not_sooner() {
        let t0 = Instant::now();
        let mut u = parked();
        assert_eq!(u.settle_in(t0), None, "nothing changed");
        u.hit(t0);
        assert_eq!(u.settle_in(t0), Some(SETTLE));
        assert!(u.settled(t0 + SETTLE / 2).is_empty(), "too soon: a look from before the change could be taken");
        let seq = u.seq;
        assert_eq!(u.settled(t0 + SETTLE).len(), 1);
        assert_eq!(u.seq, seq + 1);
        assert_eq!(u.settle_in(t0 + SETTLE), None, "covered");
    }

    #[test]
    fn a_change_during_the_settle_is_covered_by_the_next_evaluation() {
        let t0 = Instant::now();
        let mut u = parked();
        u.hit(t0);
        let late = t0 + SETTLE - Duration::from_millis(10);
        u.hit(late);
        assert_eq!(u.settled(t0 + SETTLE).len(), 1);
        u.waiting.push(Id { key: 2, gen: 1 });
        assert_eq!(u.settle_in(t0 + SETTLE), Some(late + SETTLE - (t0 + SETTLE)), "the late change is still due");
        assert!(u.settled(t0 + SETTLE + Duration::from_millis(5)).is_empty());
        assert_eq!(u.settled(late + SETTLE).len(), 1);
    }

    #[test]
    fn with_no_read_parked_no_timer_is_asked_for() {
        let mut u = UsageWatch::default();
        u.hit(Instant::now());
        assert_eq!(u.settle_in(Instant::now()), None);
    }
}
