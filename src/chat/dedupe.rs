//! The one place a transcript's duplicates are recognised: what each
//! harness writes more than once, and how each copy is told from the first.
//!
//! - `Seen`: ids already indexed in this file. Claude Code's second
//!   `/compact` in one process re-appends earlier records with their own
//!   `uuid`s (its loader keeps the first of each); a Codex
//!   `token_usage_record` is one response's, once per `response_id`.
//! - `Replies`: a reply's usage, once per reply id over the whole file,
//!   each token field at the largest value any copy of it carried (Claude
//!   Code writes a reply as one record per content block, each with the
//!   reply's usage; the output grows while it streams).
//!
//! Both hold hashes (`store::hash`, never 0), so their memory is a few
//! words an id, and both are capped: past the cap the caller is told
//! (`Full`), and the index answers an error rather than count anything
//! twice. docs/CHAT.md ("Usage", "Duplicates") has the rules and the
//! harness versions they were established for.

use std::collections::{HashMap, HashSet};
use std::hash::{BuildHasherDefault, Hasher};

use super::store::Full;
use super::usage::{Counts, Usage};

/// Keys are already hashes: the table uses them as they are.
#[derive(Default)]
pub(crate) struct IdHasher(u64);

impl Hasher for IdHasher {
    fn finish(&self) -> u64 {
        self.0
    }

    fn write(&mut self, bytes: &[u8]) {
        // Only `write_u64` is used; anything else still hashes.
        for &b in bytes {
            self.0 = self.0.rotate_left(8) ^ u64::from(b);
        }
    }

    fn write_u64(&mut self, n: u64) {
        self.0 = n;
    }
}

/// A table whose keys are already hashes.
pub(crate) type Ids = BuildHasherDefault<IdHasher>;

/// Ids already indexed in one file, at most `cap`.
pub(crate) struct Seen {
    ids: HashSet<u64, Ids>,
    cap: usize,
}

impl Seen {
    pub(super) fn new(cap: usize) -> Seen {
        Seen { ids: HashSet::default(), cap }
    }

    /// Whether `id` (a hash; 0 for none) is new: true the first time, and
    /// always for 0. `Full` past the cap.
    pub(super) fn first(&mut self, id: u64) -> Result<bool, Full> {
        if id == 0 {
            return Ok(true);
        }
        if self.ids.contains(&id) {
            return Ok(false);
        }
        if self.ids.len() >= self.cap {
            return Err(Full);
        }
        self.ids.insert(id);
        Ok(true)
    }

    #[cfg(test)]
    pub(super) fn len(&self) -> usize {
        self.ids.len()
    }
}

/// Replies counted so far: each reply's charge (`Usage::charge`), whose
/// counts are the largest of each field among its copies.
pub(crate) struct Replies {
    counted: HashMap<u64, usize, Ids>,
    cap: usize,
}

impl Replies {
    pub(super) fn new(cap: usize) -> Replies {
        Replies { counted: HashMap::default(), cap }
    }

    /// A copy of reply `id` (a hash; 0 for a reply without one, counted
    /// each time) at `time` says `c` for `model`, `write_1h` of its cache
    /// writes for an hour: what any field grew by past the largest earlier
    /// copy is counted, for the model its first copy named.
    pub(super) fn copy(
        &mut self,
        usage: &mut Usage,
        id: u64,
        model: &[u8],
        time: u32,
        c: &Counts,
        write_1h: u64,
    ) -> Result<(), Full> {
        if id == 0 {
            let slot = usage.slot(model);
            usage.charge(slot, 0, time, c, write_1h);
            return Ok(());
        }
        if let Some(&at) = self.counted.get(&id) {
            usage.grow(at, c, write_1h);
            return Ok(());
        }
        if self.counted.len() >= self.cap {
            return Err(Full);
        }
        let slot = usage.slot(model);
        let at = usage.charge(slot, id, time, c, write_1h);
        self.counted.insert(id, at);
        Ok(())
    }
}

/// The hash of a reply's id and the request it answered (`requestId`,
/// where the record has one): a reply is one per pair. 0 without an id.
pub(crate) fn reply_key(id: &[u8], request: &[u8]) -> u64 {
    if id.is_empty() {
        return 0;
    }
    super::store::hash(id) ^ super::store::hash(request).rotate_left(17)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_id_is_new_once_and_none_is_always_new() {
        let mut s = Seen::new(2);
        assert_eq!(s.first(7), Ok(true));
        assert_eq!(s.first(7), Ok(false));
        assert_eq!(s.first(0), Ok(true));
        assert_eq!(s.first(0), Ok(true));
        assert_eq!(s.first(8), Ok(true));
        assert_eq!(s.first(9), Err(Full), "past the cap: loud");
        assert_eq!(s.first(8), Ok(false), "what it holds it still knows");
        assert_eq!(s.len(), 2);
    }

    #[test]
    fn a_reply_counts_each_field_at_its_largest_copy_wherever_the_copies_are() {
        let (mut u, mut r) = (Usage::new(), Replies::new(16));
        r.copy(&mut u, 7, b"m", 100, &[5, 1, 100, 10, 0], 4).unwrap();
        r.copy(&mut u, 8, b"m", 101, &[2, 2, 0, 0, 0], 0).unwrap();
        r.copy(&mut u, 7, b"m", 102, &[5, 9, 100, 10, 0], 6).unwrap();
        r.copy(&mut u, 7, b"other", 103, &[5, 4, 100, 10, 0], 0).unwrap();
        r.copy(&mut u, 0, b"m", 104, &[1, 1, 0, 0, 0], 0).unwrap();
        r.copy(&mut u, 0, b"m", 105, &[1, 1, 0, 0, 0], 0).unwrap();
        assert_eq!(u.total(), [9, 13, 100, 10, 0], "7 at its largest, 8 once, no id each time");
        assert_eq!(u.model(b"other"), None, "a copy counts for the model its first copy named");
        let charges: Vec<_> = u.charges().iter().map(|c| (c.key, c.time, c.counts, c.write_1h)).collect();
        let want = vec![(7, 100, [5, 9, 100, 10, 0], 6), (8, 101, [2, 2, 0, 0, 0], 0), (0, 104, [2, 2, 0, 0, 0], 0)];
        assert_eq!(charges, want, "a reply is one charge at its first copy's time; key-less ones of a minute merge");
    }

    #[test]
    fn replies_past_the_cap_are_loud() {
        let (mut u, mut r) = (Usage::new(), Replies::new(1));
        r.copy(&mut u, 1, b"m", 0, &[1, 0, 0, 0, 0], 0).unwrap();
        assert_eq!(r.copy(&mut u, 2, b"m", 0, &[1, 0, 0, 0, 0], 0), Err(Full));
        assert_eq!(r.copy(&mut u, 1, b"m", 0, &[3, 0, 0, 0, 0], 0), Ok(()), "a reply it holds still grows");
        assert_eq!(u.total(), [3, 0, 0, 0, 0]);
    }

    #[test]
    fn the_request_tells_two_replies_of_one_id_apart() {
        assert_ne!(reply_key(b"msg_1", b"req_1"), reply_key(b"msg_1", b"req_2"));
        assert_eq!(reply_key(b"msg_1", b""), reply_key(b"msg_1", b""));
        assert_eq!(reply_key(b"", b"req_1"), 0);
    }
}
