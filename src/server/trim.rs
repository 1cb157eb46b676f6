//! Giving memory back after a burst.
//!
//! A thousand clients that came and went, or ten thousand `wait` reads
//! woken at once (each reading its agent's facts), leave the allocator
//! holding their buffers' worth of free heap, and the slabs their peak's
//! room. When a burst of connections or of ring operations has fallen by
//! half, the server shrinks its slabs and returns the allocator's free
//! pages (`malloc_trim`) — at most once every `TRIM_EVERY_MIN`, so a kernel
//! mount's fan-out, one burst after another, does not pay for a trim each
//! turn: a trim due sooner waits on a timer (`Token::Trim`).

use std::time::{Duration, Instant};

/// Connections past which a burst is worth giving memory back after.
const TRIM_AFTER_CONNS: usize = 64;
/// Ring operations in flight at once past which a burst is worth it.
const TRIM_AFTER_OPS: usize = 1024;
/// The least time between two trims.
pub(crate) const TRIM_EVERY_MIN: Duration = Duration::from_secs(1);

/// What the server does about a turn's counts.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Trim {
    Nothing,
    /// Shrink the slabs and trim the heap now.
    Now,
    /// A trim is due too soon after the last: arm the timer for this long.
    Later(Duration),
}

pub(crate) struct Bursts {
    conns_peak: usize,
    ops_peak: usize,
    last: Option<Instant>,
    /// The timer of a trim that was due too soon is in flight.
    timer_armed: bool,
}

impl Bursts {
    pub(crate) fn new() -> Bursts {
        Bursts { conns_peak: 0, ops_peak: 0, last: None, timer_armed: false }
    }

    /// The counts at the end of a turn of the loop.
    pub(crate) fn after_turn(&mut self, conns: usize, ops: usize, now: Instant) -> Trim {
        self.conns_peak = self.conns_peak.max(conns);
        self.ops_peak = self.ops_peak.max(ops);
        let conns_fell = self.conns_peak >= TRIM_AFTER_CONNS && (conns * 2 <= self.conns_peak || conns <= 2);
        let ops_fell = self.ops_peak >= TRIM_AFTER_OPS && ops * 2 <= self.ops_peak;
        if !(conns_fell || ops_fell) || self.timer_armed {
            return Trim::Nothing;
        }
        log::debug!("a burst fell: {} conns, {} ops at the peak; {conns}, {ops} now", self.conns_peak, self.ops_peak);
        (self.conns_peak, self.ops_peak) = (conns, ops);
        match self.last.map(|t| now.saturating_duration_since(t)) {
            Some(since) if since < TRIM_EVERY_MIN => {
                self.timer_armed = true;
                Trim::Later(TRIM_EVERY_MIN - since)
            }
            _ => {
                self.last = Some(now);
                Trim::Now
            }
        }
    }

    /// The timer of a trim that was due is back: trim now.
    pub(crate) fn timer_fired(&mut self, now: Instant) {
        self.timer_armed = false;
        self.last = Some(now);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_burst_of_ops_that_falls_by_half_trims_once() {
        let (mut b, t) = (Bursts::new(), Instant::now());
        assert_eq!(b.after_turn(1, 2000, t), Trim::Nothing, "still at its peak");
        assert_eq!(b.after_turn(1, 1500, t), Trim::Nothing, "not yet half");
        assert_eq!(b.after_turn(1, 900, t), Trim::Now);
        assert_eq!(b.after_turn(1, 10, t), Trim::Nothing, "the peak is where the trim left it");
    }

    #[test]
    fn small_swings_never_trim() {
        let (mut b, t) = (Bursts::new(), Instant::now());
        for ops in [1000, 3, 1000, 3] {
            assert_eq!(b.after_turn(1, ops, t), Trim::Nothing);
        }
        assert_eq!(b.after_turn(2, 0, t), Trim::Nothing, "two connections are no burst");
    }

    #[test]
    fn a_trim_due_within_a_second_of_the_last_waits_for_the_timer() {
        let (mut b, t) = (Bursts::new(), Instant::now());
        b.after_turn(100, 0, t);
        assert_eq!(b.after_turn(10, 0, t), Trim::Now, "a hundred connections, ninety gone");
        b.after_turn(1, 4000, t);
        let soon = t + Duration::from_millis(300);
        assert_eq!(b.after_turn(1, 0, soon), Trim::Later(Duration::from_millis(700)));
        b.after_turn(1, 4000, soon);
        assert_eq!(b.after_turn(1, 0, soon), Trim::Nothing, "the timer is armed already");
        b.timer_fired(t + TRIM_EVERY_MIN);
        b.after_turn(1, 4000, t + TRIM_EVERY_MIN);
        assert_eq!(b.after_turn(1, 0, t + TRIM_EVERY_MIN * 3), Trim::Now);
    }
}
