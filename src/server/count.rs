//! A count of something held — fids, open files, listed entries, parked
//! reads — changed only by taking and giving back, so an accounting bug
//! cannot drift silently: giving back more than was taken, or taking past
//! `usize::MAX`, panics in a debug build (every test runs one) and, in a
//! release build, is logged once and the count held at its bound, never
//! wrapped to a number that would refuse (or admit) everything after.

use std::sync::atomic::{AtomicBool, Ordering};

#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) struct Count(usize);

/// Whether a release build has logged an accounting bug already.
static LOGGED: AtomicBool = AtomicBool::new(false);

impl Count {
    /// How many are held.
    pub(crate) fn get(self) -> usize {
        self.0
    }

    /// `n` more are held.
    pub(crate) fn take(&mut self, n: usize) {
        self.0 = self.0.checked_add(n).unwrap_or_else(|| bug("taken past usize::MAX", usize::MAX));
    }

    /// `n` of those held are given back.
    pub(crate) fn give(&mut self, n: usize) {
        self.0 = self.0.checked_sub(n).unwrap_or_else(|| bug("more given back than taken", 0));
    }
}

impl std::fmt::Display for Count {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.0.fmt(f)
    }
}

fn bug(what: &str, bound: usize) -> usize {
    debug_assert!(false, "an accounting bug: {what}");
    if !LOGGED.swap(true, Ordering::Relaxed) {
        log::error!("an accounting bug: {what}; the count is held at {bound}");
    }
    bound
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_count_is_what_was_taken_less_what_was_given_back() {
        let mut c = Count::default();
        c.take(3);
        c.give(2);
        c.take(1);
        assert_eq!(c.get(), 2);
    }

    #[test]
    #[cfg(debug_assertions)]
    #[should_panic(expected = "more given back than taken")]
    fn giving_back_more_than_was_taken_fails_loudly() {
        let mut c = Count::default();
        c.take(1);
        c.give(2);
    }

    #[test]
    #[cfg(debug_assertions)]
    #[should_panic(expected = "taken past usize::MAX")]
    fn taking_past_the_bound_fails_loudly() {
        let mut c = Count(usize::MAX);
        c.take(1);
    }
}
