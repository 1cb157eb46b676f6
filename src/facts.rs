//! Facts: what a derived view knows about the disk, and what it still needs.
//!
//! The derived views (`/active`, later `chat/`) must never block the loop,
//! but their logic — find the agents, resolve a session through a ladder of
//! routes, derive a field — is a chain of "read this, then depending on it
//! read that". Writing each chain as a hand-rolled state machine would bury
//! the logic in plumbing, so it is written sans-I/O instead: a pure function
//! takes the `Facts` gathered so far and either answers or lists the
//! `Want`s it is missing. The server fetches every missing want through the
//! ring at once, adds them to the facts, and calls the function again; a
//! test calls it with facts read synchronously from a fixture directory.
//! Re-running a cheap pure function a few times is the price of logic that
//! reads like the design and is tested without a ring.

use std::collections::HashMap;
use std::hash::BuildHasherDefault;

use wyhash::WyHash;

use crate::harness::Harness;
use crate::meta::Meta;

/// The bytes a `Want::Bytes` reads at most. Every file the derived views
/// read whole (a /proc file, a registry record, a transcript's head) is
/// small; one that is larger is read only this far, and the caller treats
/// a full buffer as "too large" where a whole file was needed.
pub(crate) const SLURP_BYTES_MAX: u32 = 128 * 1024;

/// The errno a `Want::List` holds for a directory with more entries than
/// a listing takes (`dirents`' bound): an error of its own, apart from
/// any the disk gives (a directory that fails with EIO is not one too
/// large to list).
pub(crate) const TOO_MANY_ENTRIES: i32 = libc::E2BIG;

/// Where a wanted path lives: the `--proc` directory, or a harness's base.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub(crate) enum Root {
    Proc,
    Harness(Harness),
}

/// One thing a derived view needs from the disk. Paths are relative to the
/// root, composed by the view from fixed parts and checked names.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub(crate) enum Want {
    /// The first `max` bytes of a regular file (at most `SLURP_BYTES_MAX`).
    Bytes { root: Root, rel: Vec<u8>, max: u32 },
    /// The last `max` bytes of a regular file (all of it when shorter).
    Tail { root: Root, rel: Vec<u8>, max: u32 },
    /// A directory's names (without `.`, `..`), with inode and d_type.
    List { root: Root, rel: Vec<u8> },
    /// A symlink's target (readlink, inline: /proc's fd links and cwd).
    Link { root: Root, rel: Vec<u8> },
    /// A file's meta (statx, no symlinks followed).
    Meta { root: Root, rel: Vec<u8> },
}

/// One directory entry of a `Want::List`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Name {
    pub name: Vec<u8>,
    pub ino: u64,
    pub d_type: u8,
}

/// What the disk answered.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Fact {
    Bytes(Vec<u8>),
    /// Shared: a listing kept (`server::listings`) is served again.
    Names(std::rc::Rc<Vec<Name>>),
    Link(Vec<u8>),
    Meta(Meta),
}

/// The facts gathered so far; a want that failed holds its errno.
#[derive(Default, Debug)]
pub(crate) struct Facts {
    map: HashMap<Want, Result<Fact, i32>, BuildHasherDefault<WyHash>>,
}

impl Facts {
    pub(crate) fn insert(&mut self, want: Want, fact: Result<Fact, i32>) {
        self.map.insert(want, fact);
    }

    /// The errno `want` failed with, if it is known to have failed.
    pub(crate) fn error(&self, want: &Want) -> Option<i32> {
        self.map.get(want)?.as_ref().err().copied()
    }

    /// Is `want` answered already?
    pub(crate) fn contains(&self, want: &Want) -> bool {
        self.map.contains_key(want)
    }

    /// `None` and the want pushed to `needs` when not yet known; `Some`
    /// of the answer (which may be an errno) once it is.
    pub(crate) fn get(&self, want: Want, needs: &mut Vec<Want>) -> Option<&Result<Fact, i32>> {
        match self.map.get(&want) {
            Some(f) => Some(f),
            None => {
                // Duplicates are dropped when the wants are planned: a
                // search here would make a derivation asking for thousands
                // of facts quadratic.
                needs.push(want);
                None
            }
        }
    }

    /// A file's bytes once known (`None` while unknown). A file that could
    /// not be read answers empty; `Facts::error` tells why.
    pub(crate) fn bytes(&self, root: Root, rel: &[u8], needs: &mut Vec<Want>) -> Option<&[u8]> {
        self.bytes_upto(root, rel, SLURP_BYTES_MAX, needs)
    }

    /// `bytes`, reading at most `max` bytes (a command line, a head).
    pub(crate) fn bytes_upto(&self, root: Root, rel: &[u8], max: u32, needs: &mut Vec<Want>) -> Option<&[u8]> {
        let max = max.min(SLURP_BYTES_MAX);
        match self.get(Want::Bytes { root, rel: rel.to_vec(), max }, needs)? {
            Ok(Fact::Bytes(b)) => Some(b),
            _ => Some(&[]),
        }
    }

    /// The last `max` bytes of a file once known; empty when unreadable.
    pub(crate) fn tail(&self, root: Root, rel: &[u8], max: u32, needs: &mut Vec<Want>) -> Option<&[u8]> {
        let max = max.min(SLURP_BYTES_MAX);
        match self.get(Want::Tail { root, rel: rel.to_vec(), max }, needs)? {
            Ok(Fact::Bytes(b)) => Some(b),
            _ => Some(&[]),
        }
    }

    /// A directory's names; an unreadable directory lists nothing.
    pub(crate) fn names(&self, root: Root, rel: &[u8], needs: &mut Vec<Want>) -> Option<&[Name]> {
        match self.get(Want::List { root, rel: rel.to_vec() }, needs)? {
            Ok(Fact::Names(n)) => Some(n.as_slice()),
            _ => Some(&[]),
        }
    }

    /// A link's target; `Some(None)` when there is none.
    pub(crate) fn link(&self, root: Root, rel: &[u8], needs: &mut Vec<Want>) -> Option<Option<&[u8]>> {
        match self.get(Want::Link { root, rel: rel.to_vec() }, needs)? {
            Ok(Fact::Link(l)) => Some(Some(l)),
            _ => Some(None),
        }
    }

    /// A file's meta; `Some(None)` when it is not there.
    pub(crate) fn meta(&self, root: Root, rel: &[u8], needs: &mut Vec<Want>) -> Option<Option<Meta>> {
        match self.get(Want::Meta { root, rel: rel.to_vec() }, needs)? {
            Ok(Fact::Meta(m)) => Some(Some(*m)),
            _ => Some(None),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_unknown_fact_is_wanted_and_answers_nothing_until_known() {
        let facts = Facts::default();
        let mut needs = Vec::new();
        assert!(facts.names(Root::Harness(Harness::Codex), b"sessions", &mut needs).is_none());
        assert_eq!(needs, vec![Want::List { root: Root::Harness(Harness::Codex), rel: b"sessions".to_vec() }]);
    }

    #[test]
    fn a_failed_want_is_known_and_answers_empty() {
        let mut facts = Facts::default();
        let want = Want::Bytes { root: Root::Proc, rel: b"9/environ".to_vec(), max: SLURP_BYTES_MAX };
        facts.insert(want, Err(libc::EACCES));
        let mut needs = Vec::new();
        assert_eq!(facts.bytes(Root::Proc, b"9/environ", &mut needs), Some(&[][..]));
        assert_eq!(
            facts.error(&Want::Bytes { root: Root::Proc, rel: b"9/environ".to_vec(), max: SLURP_BYTES_MAX }),
            Some(libc::EACCES)
        );
        assert!(needs.is_empty());
    }
}
