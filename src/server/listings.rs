//! Harness directories' listings, kept and checked: a directory listed
//! once is served again after a statx says it is as it was when it was
//! listed, so a whole-home pass (every session's `usage`, each deriving
//! from its project's listing) costs a look at each directory, not a
//! getdents of it per session.
//!
//! A directory is "as it was" when its dev, inode, size, mtime and ctime
//! are the same. Any entry added, removed or renamed moves its mtime and
//! ctime — but to the kernel's coarse clock, so an entry added in the same
//! tick as the listing could leave them as they were. A listing is
//! therefore kept only when it was taken `meta::SETTLED_NS` after the
//! directory last changed (`Meta::settled_by`): any change after it then
//! stamps a later time.
//!
//! Only harness directories: /proc's times say nothing of its entries.
//! Bounded by `LISTINGS_MAX`; past it the half used longest ago goes (a
//! listing lost costs a getdents, never a wrong answer).
//!
//! Beside them, what every look beneath a harness base found a moment ago
//! (`saw`, `seen`): a file's statx, or that it is not there. A request
//! that may be answered from what was true a moment ago — a `usage`, which
//! an index `CHAT_FRESH_FOR` old already answers — takes a look that
//! recent instead of its own (`Gather::recent`, a refresh's look):
//! the walk to `/sessions/<h>/<id>/usage` looked at the transcript, the
//! session before it at the project's directory, so a second pass over a
//! home costs a statx per session, not four. Nothing else takes them.

use std::collections::HashMap;
use std::rc::Rc;

use crate::facts::{Name, Root};
use crate::meta::Meta;

use super::recent::Recent;

/// Listings kept: a home's project and session directories.
pub(crate) const LISTINGS_MAX: usize = 4096;

/// A directory as a statx saw it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Stamp {
    dev: u64,
    ino: u64,
    size: u64,
    mtime_ns: i128,
    ctime_ns: i128,
}

impl Stamp {
    fn of(m: &Meta) -> Stamp {
        Stamp { dev: m.dev, ino: m.ino, size: m.size, mtime_ns: m.mtime_ns(), ctime_ns: m.ctime_ns() }
    }
}

struct Kept {
    stamp: Stamp,
    names: Rc<Vec<Name>>,
    used: u64,
}

/// A path beneath a harness base.
type Path = (Root, Vec<u8>);

pub(crate) struct Listings {
    map: HashMap<Path, Kept>,
    tick: u64,
    /// What looks beneath a harness base found, for a moment.
    looks: Recent<Path, Result<Meta, i32>>,
}

impl Listings {
    /// Listings kept; looks kept for `fresh_for`.
    pub(crate) fn new(fresh_for: std::time::Duration) -> Listings {
        Listings { map: HashMap::new(), tick: 0, looks: Recent::new(fresh_for) }
    }

    /// A look at `rel` beneath harness root `root` found `found` (a
    /// statx, or an errno saying it is not there; anything else — out of
    /// fds, an i/o error — says nothing and is not kept).
    pub(crate) fn saw(&mut self, root: Root, rel: &[u8], found: Result<Meta, i32>) {
        if !matches!(root, Root::Harness(_)) || found.is_err_and(|e| !super::probe::means_absent(e)) {
            return;
        }
        self.looks.put((root, rel.to_vec()), found, std::time::Instant::now());
    }

    /// What a look at `rel` found a moment ago, if one did.
    pub(crate) fn seen(&self, root: Root, rel: &[u8]) -> Option<Result<Meta, i32>> {
        self.looks.get(&(root, rel.to_vec()), std::time::Instant::now()).copied()
    }

    /// Whether a listing of the directory is kept (to be checked with a
    /// statx rather than read again).
    pub(crate) fn kept(&self, root: Root, rel: &[u8]) -> bool {
        matches!(root, Root::Harness(_)) && self.map.contains_key(&(root, rel.to_vec()))
    }

    /// The kept listing, if the directory is as `now` says it was when it
    /// was listed; else the listing is dropped (read it again).
    pub(crate) fn check(&mut self, root: Root, rel: &[u8], now: &Meta) -> Option<Rc<Vec<Name>>> {
        let key = (root, rel.to_vec());
        self.tick += 1;
        match self.map.get_mut(&key) {
            Some(k) if now.is_dir() && k.stamp == Stamp::of(now) => {
                k.used = self.tick;
                Some(k.names.clone())
            }
            Some(_) => {
                self.map.remove(&key);
                None
            }
            None => None,
        }
    }

    /// The directory, as `meta` saw it, was listed `names` at `taken_ns`
    /// (wall clock): kept if it had settled by then.
    pub(crate) fn keep(&mut self, root: Root, rel: &[u8], meta: &Meta, names: Rc<Vec<Name>>, taken_ns: i128) {
        if !matches!(root, Root::Harness(_)) || !meta.settled_by(taken_ns) {
            return;
        }
        let stamp = Stamp::of(meta);
        if self.map.len() >= LISTINGS_MAX {
            crate::lru::drop_half_used_longest_ago(&mut self.map, |k| k.used);
        }
        self.tick += 1;
        self.map.insert((root, rel.to_vec()), Kept { stamp, names, used: self.tick });
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::harness::Harness;

    fn dir(mtime: i64, size: u64) -> Meta {
        Meta { mode: (libc::S_IFDIR | 0o755) as u16, dev: 1, ino: 2, size, mtime, ctime: mtime, ..Default::default() }
    }

    const H: Root = Root::Harness(Harness::Claude);
    const SEC: i128 = 1_000_000_000;

    fn names() -> Rc<Vec<Name>> {
        Rc::new(vec![Name { name: b"a.jsonl".to_vec(), ino: 9, d_type: libc::DT_REG }])
    }

    #[test]
    fn a_listing_is_served_while_its_directory_is_as_listed() {
        let mut l = Listings::new(std::time::Duration::from_secs(1));
        l.keep(H, b"p", &dir(100, 4096), names(), 101 * SEC);
        assert!(l.kept(H, b"p"));
        assert_eq!(l.check(H, b"p", &dir(100, 4096)), Some(names()));
        assert_eq!(l.check(H, b"p", &dir(102, 4096)), None, "an entry added since");
        assert!(!l.kept(H, b"p"), "a stale listing is dropped");
    }

    #[test]
    fn a_listing_taken_in_the_tick_its_directory_changed_is_not_kept() {
        let mut l = Listings::new(std::time::Duration::from_secs(1));
        l.keep(H, b"p", &dir(100, 4096), names(), 100 * SEC + crate::meta::SETTLED_NS - 1);
        assert!(!l.kept(H, b"p"));
        l.keep(Root::Proc, b"", &dir(100, 0), names(), 200 * SEC);
        assert!(!l.kept(Root::Proc, b""), "never /proc");
    }

    #[test]
    fn a_look_counts_for_its_moment_and_only_when_it_said_something() {
        let mut l = Listings::new(std::time::Duration::from_secs(60));
        l.saw(H, b"p/a.jsonl", Ok(dir(100, 1)));
        l.saw(H, b"p/gone", Err(libc::ENOENT));
        l.saw(H, b"p/unread", Err(libc::EMFILE));
        l.saw(Root::Proc, b"1/stat", Ok(dir(100, 1)));
        assert_eq!(l.seen(H, b"p/a.jsonl"), Some(Ok(dir(100, 1))));
        assert_eq!(l.seen(H, b"p/gone"), Some(Err(libc::ENOENT)));
        assert_eq!(l.seen(H, b"p/unread"), None, "out of fds says nothing of the file");
        assert_eq!(l.seen(Root::Proc, b"1/stat"), None, "never /proc");
        let mut brief = Listings::new(std::time::Duration::ZERO);
        brief.saw(H, b"p/a.jsonl", Ok(dir(100, 1)));
        assert_eq!(brief.seen(H, b"p/a.jsonl"), None, "past its moment");
    }
}
