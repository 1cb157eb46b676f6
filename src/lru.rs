//! The one eviction of the caches that keep what they learned past its use
//! (chat digests, harness directories' listings): each entry carries the
//! tick it was last used at, and past the cache's cap the half used
//! longest ago goes. What goes costs a read again, never a wrong answer.

use std::collections::HashMap;
use std::hash::Hash;

/// Drop the half of `map` used longest ago (`used`: an entry's last tick).
pub(crate) fn drop_half_used_longest_ago<K: Eq + Hash, V>(map: &mut HashMap<K, V>, used: impl Fn(&V) -> u64) {
    let mut ticks: Vec<u64> = map.values().map(&used).collect();
    if ticks.is_empty() {
        return;
    }
    let mid = ticks.len() / 2;
    let cut = *ticks.select_nth_unstable(mid).1;
    map.retain(|_, v| used(v) >= cut);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_half_used_longest_ago_goes() {
        let mut m: HashMap<u32, u64> = (0..100).map(|i| (i, u64::from(i))).collect();
        drop_half_used_longest_ago(&mut m, |t| *t);
        assert_eq!(m.len(), 50);
        assert!(m.keys().all(|&k| k >= 50));
        let mut empty: HashMap<u32, u64> = HashMap::new();
        drop_half_used_longest_ago(&mut empty, |t| *t);
    }
}
