//! What was seen a moment ago, kept only for that moment: a map whose
//! entries count for `fresh_for` after they were put, and are dropped once
//! they no longer count. Nothing in it outlives its use, so it is bounded
//! by what is put in one `fresh_for`, not by everything ever put.
//!
//! Pruning is amortised: a put that finds the map at twice its size after
//! the last prune (and at least `PRUNE_FLOOR`) drops every stale entry.

use std::collections::HashMap;
use std::hash::Hash;
use std::time::{Duration, Instant};

use super::fresh::Seen;

/// Entries a map may hold before its first prune.
const PRUNE_FLOOR: usize = 64;

pub(crate) struct Recent<K, V> {
    map: HashMap<K, (V, Seen)>,
    fresh_for: Duration,
    prune_at: usize,
}

impl<K: Hash + Eq, V> Recent<K, V> {
    pub(crate) fn new(fresh_for: Duration) -> Recent<K, V> {
        Recent { map: HashMap::new(), fresh_for, prune_at: PRUNE_FLOOR }
    }

    /// `value` was seen for `key` at `now`.
    pub(crate) fn put(&mut self, key: K, value: V, now: Instant) {
        if self.map.len() >= self.prune_at {
            let fresh_for = self.fresh_for;
            self.map.retain(|_, (_, at)| at.stands_at(fresh_for, now));
            self.prune_at = (self.map.len() * 2).max(PRUNE_FLOOR);
        }
        self.map.insert(key, (value, Seen::at(now)));
    }

    /// What was seen for `key` less than `fresh_for` before `now`.
    pub(crate) fn get(&self, key: &K, now: Instant) -> Option<&V> {
        let (v, at) = self.map.get(key)?;
        at.stands_at(self.fresh_for, now).then_some(v)
    }

    /// Forget `key` (what was seen no longer holds).
    pub(crate) fn forget(&mut self, key: &K) {
        self.map.remove(key);
    }

    /// Entries held, stale ones not yet pruned included.
    #[cfg(test)]
    fn len(&self) -> usize {
        self.map.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_entry_counts_for_its_moment_only() {
        let t0 = Instant::now();
        let mut r = Recent::new(Duration::from_secs(1));
        r.put("a", 1, t0);
        assert_eq!(r.get(&"a", t0 + Duration::from_millis(999)), Some(&1));
        assert_eq!(r.get(&"a", t0 + Duration::from_secs(1)), None);
        r.forget(&"a");
        assert_eq!(r.get(&"a", t0), None);
    }

    /// Issue 21, defect 5: the table of refreshes only grew, one entry per
    /// transcript ever refreshed.
    #[test]
    fn a_map_of_many_keys_seen_over_time_holds_only_about_one_moments_worth() {
        let t0 = Instant::now();
        let mut r = Recent::new(Duration::from_secs(1));
        // 100 keys a second for 100 seconds: 10,000 keys ever seen.
        for i in 0..10_000u32 {
            r.put(i, (), t0 + Duration::from_millis(u64::from(i) * 10));
        }
        assert!(r.len() <= 4 * 100 + PRUNE_FLOOR, "{} entries held", r.len());
        assert!(r.get(&9_999, t0 + Duration::from_millis(99_990)).is_some());
    }
}
