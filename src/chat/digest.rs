//! Digests: what an index learned of a transcript that is small — its
//! usage, its message count, how far it read — kept after its pool entry
//! is reused, so a second pass over a whole home (every session's `usage`
//! read again) costs a look at each file, not an index of it.
//!
//! A digest is keyed as the pool keys an entry — the file's (dev, ino) and
//! its birth time — and holds only while the file is as it was when it was
//! indexed: the same size and mtime, read in the same format, and the same
//! bytes at the ends of what was indexed (read afresh, as a live index's
//! are checked). Anything else
//! (the file grew, was rewritten, is another file on the same inode) is
//! indexed again. A compressed transcript's digest is of the compressed
//! file as it was when decoded.
//!
//! Bounded by `DIGESTS_MAX`: past it the half used longest ago goes (a
//! digest lost costs an index, never a wrong answer).

use std::collections::HashMap;

use super::index::Ends;
use super::usage::Usage;
use super::Format;

/// Digests kept: a home of this many transcripts reads its `usage` again
/// for a look at each file. About 200 bytes each (a few models' counts).
pub(crate) const DIGESTS_MAX: usize = 1 << 16;

/// A transcript file: (dev, ino, birth time), as the pool keys entries.
pub(crate) type FileId = (u64, u64, i64);

/// The file as it was indexed: its size, mtime and ctime (ns), and its
/// format.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Seen {
    pub size: u64,
    pub mtime_ns: i128,
    pub ctime_ns: i128,
    pub format: Format,
}

impl Seen {
    pub(crate) fn of(m: &crate::meta::Meta, format: Format) -> Seen {
        Seen { size: m.size, mtime_ns: m.mtime_ns(), ctime_ns: m.ctime_ns(), format }
    }
}

/// What an index of the file said.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Digest {
    pub seen: Seen,
    /// Shared with whoever sums it (a report keeps it while it settles).
    pub usage: std::rc::Rc<Usage>,
    pub messages: usize,
    /// Bytes indexed (its complete lines).
    pub covered: u64,
    /// The ends of what was indexed, to be read afresh and compared, as a
    /// live index's are: a file rewritten in place within the clock's tick
    /// keeps its size and mtime, not its bytes. (A compressed transcript's
    /// are its copy's, which is not kept: its size and mtime are its
    /// check, as its copy's are.)
    pub ends: Ends,
    /// It was indexed `meta::SETTLED_NS` after the file last changed: its
    /// times alone say whether it still holds, no ends need reading
    /// (`Meta::settled_by`).
    pub settled: bool,
    /// The session's working directory, as its records name it.
    pub cwd: Box<[u8]>,
}

/// Where a transcript is: its harness and its path beneath the base.
pub(crate) type PathKey = (crate::harness::Harness, Vec<u8>);

#[derive(Default)]
pub(crate) struct Digests {
    map: HashMap<FileId, (Digest, u64)>,
    /// The file each path was last indexed as: a refresh of a path whose
    /// digest is settled may start with a statx alone.
    paths: HashMap<PathKey, FileId>,
    tick: u64,
}

impl Digests {
    /// The index of `file`, at `path`, said `digest`.
    pub(crate) fn put(&mut self, path: PathKey, file: FileId, digest: Digest) {
        if self.map.len() >= DIGESTS_MAX && !self.map.contains_key(&file) {
            self.drop_oldest_half();
        }
        self.tick += 1;
        self.map.insert(file, (digest, self.tick));
        self.paths.insert(path, file);
    }

    /// Whether `path`'s last digest is settled: a statx can say it holds.
    pub(crate) fn settled_at(&self, path: &PathKey) -> bool {
        self.paths.get(path).and_then(|f| self.map.get(f)).is_some_and(|(d, _)| d.settled)
    }

    /// The digest of `file` if it is still as `seen`.
    pub(crate) fn get(&mut self, file: FileId, seen: Seen) -> Option<&Digest> {
        self.tick += 1;
        let (d, used) = self.map.get_mut(&file).filter(|(d, _)| d.seen == seen)?;
        *used = self.tick;
        Some(d)
    }

    /// The digest of `file`, whatever it was seen as (for a job that was
    /// just told it holds).
    pub(crate) fn of(&self, file: FileId) -> Option<&Digest> {
        self.map.get(&file).map(|(d, _)| d)
    }

    fn drop_oldest_half(&mut self) {
        crate::lru::drop_half_used_longest_ago(&mut self.map, |(_, t)| *t);
        let map = &self.map;
        self.paths.retain(|_, f| map.contains_key(f));
    }

    #[cfg(test)]
    fn len(&self) -> usize {
        self.map.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn seen(size: u64) -> Seen {
        Seen { size, mtime_ns: 7, ctime_ns: 7, format: Format::Claude }
    }

    fn digest(size: u64) -> Digest {
        let ends = crate::chat::Index::new(Format::Claude, 1).ends();
        Digest {
            seen: seen(size),
            usage: Default::default(),
            messages: 3,
            covered: size,
            ends,
            settled: true,
            cwd: Box::default(),
        }
    }

    fn path(n: u64) -> PathKey {
        (crate::harness::Harness::Claude, n.to_string().into_bytes())
    }

    #[test]
    fn a_digest_holds_only_while_the_file_is_as_it_was_indexed() {
        let mut d = Digests::default();
        d.put(path(1), (1, 2, 3), digest(100));
        assert!(d.settled_at(&path(1)) && !d.settled_at(&path(2)));
        assert_eq!(d.get((1, 2, 3), seen(100)).map(|d| d.messages), Some(3));
        assert!(d.get((1, 2, 3), seen(101)).is_none(), "grown");
        assert!(d.get((1, 2, 3), Seen { mtime_ns: 8, ..seen(100) }).is_none(), "rewritten");
        assert!(d.get((1, 2, 3), Seen { ctime_ns: 8, ..seen(100) }).is_none(), "touched back to its old mtime");
        assert!(d.get((1, 2, 3), Seen { format: Format::Codex, ..seen(100) }).is_none(), "read otherwise");
        assert!(d.get((1, 2, 4), seen(100)).is_none(), "another file on the inode");
    }

    #[test]
    fn past_the_cap_the_half_used_longest_ago_goes() {
        let mut d = Digests::default();
        for i in 0..DIGESTS_MAX as u64 {
            d.put(path(i), (0, i, 0), digest(1));
        }
        assert!(d.get((0, 0, 0), seen(1)).is_some(), "used again: now the newest");
        d.put(path(u64::MAX), (0, u64::MAX, 0), digest(1));
        assert!(d.len() <= DIGESTS_MAX / 2 + 2, "{}", d.len());
        assert!(d.get((0, 0, 0), seen(1)).is_some(), "the one used lately stays");
        assert!(d.get((0, 1, 0), seen(1)).is_none(), "one used long ago went");
        assert!(!d.settled_at(&path(1)), "and its path's hint with it");
    }
}
