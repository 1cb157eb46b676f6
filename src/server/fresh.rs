//! The one rule for what is kept because it was seen a moment ago — a
//! walk's look (`conn::Look`), a connection's last listing and the
//! directories its walks looked at (`conn::Listed`, `conn::DirLook`), the
//! harness bases kept open (`ops::Bases`), the refreshes just done and the
//! looks of a moment ago (`recent::Recent`): it stands for a fresh one
//! while less than its window has passed since it was seen, and a window
//! of zero never lets it stand. Each window is named where it is chosen
//! (`LOOK_REUSE_FOR`, `--listing-window`, `CHAT_FRESH_FOR`), with the
//! trade it makes.

use std::time::{Duration, Instant};

/// How long a refresh's index counts as fresh for what it already holds
/// (`Step::WaitChat`'s `recent`): long enough that a kernel mount's stat of
/// every message of a 40,000-message chat shares a few refreshes, short
/// enough that nobody sees a rewritten transcript's old messages for long.
pub(crate) const CHAT_FRESH_FOR: Duration = Duration::from_secs(1);

/// When something was seen.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Seen(Instant);

impl Seen {
    pub(crate) fn now() -> Seen {
        Seen(Instant::now())
    }

    pub(crate) fn at(at: Instant) -> Seen {
        Seen(at)
    }

    /// Whether it still stands at `now`, kept for `window`.
    pub(crate) fn stands_at(self, window: Duration, now: Instant) -> bool {
        now.saturating_duration_since(self.0) < window
    }

    /// Whether it still stands now, kept for `window`.
    pub(crate) fn stands(self, window: Duration) -> bool {
        self.stands_at(window, Instant::now())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn what_was_seen_stands_for_its_window_and_a_zero_window_never() {
        let t0 = Instant::now();
        let s = Seen::at(t0);
        let w = Duration::from_millis(10);
        assert!(s.stands_at(w, t0) && s.stands_at(w, t0 + Duration::from_millis(9)));
        assert!(!s.stands_at(w, t0 + w));
        assert!(!s.stands_at(Duration::ZERO, t0));
        assert!(s.stands_at(w, t0 - Duration::from_millis(1)), "a clock read before it was seen");
    }
}
