//! `tree`: what the daemon serves, named by node ids.
//!
//! A node id (`NodeId`) is the server's handle on a file: fids hold one,
//! walks produce them, and `..` is answered from the tree's own parent
//! links, never the kernel's. The static skeleton — `/`, `/README`, `/pid`,
//! `/uptime` — is a fixed table (`STATIC`); the mirrors and the derived
//! views hang further node kinds off it.
//!
//! Qid paths are identities, not bookkeeping (intro(5)): a node's qid path
//! is the same on every walk, listing and stat. The space is split by the
//! top bit so the two kinds can never collide: files on disk get a mix of
//! their (dev, ino) with bit 63 clear; static and derived nodes get paths
//! with bit 63 set. A derived file's qid version is a hash of its text, so
//! a change of content moves it even when the size stays put.

pub mod exclude;

use std::time::{Instant, SystemTime, UNIX_EPOCH};

use crate::errors::Error;
use crate::proto::{Qid, Stat, DMDIR, QTDIR, QTFILE};

/// Bit 63 of a qid path marks a node the daemon makes up itself (the
/// skeleton, the facts, later the /active fields), so no mix of a real
/// (dev, ino) — which always has it clear — can equal one.
pub const QID_PATH_SYNTHETIC: u64 = 1 << 63;

/// A node: a fid's handle on what it names.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum NodeId {
    /// An entry of `STATIC`, by index.
    Static(u16),
}

/// A fact computed when it is read.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Fact {
    Readme,
    Pid,
    Uptime,
}

#[derive(Clone, Copy, Debug)]
enum What {
    Dir,
    Fact(Fact),
}

struct StaticNode {
    name: &'static str,
    parent: u16,
    what: What,
}

/// The skeleton. Index 0 is `/`, its own parent. Children appear in the
/// order listed, which is sorted by name so a listing is stable.
const STATIC: &[StaticNode] = &[
    StaticNode { name: "/", parent: 0, what: What::Dir },
    StaticNode { name: "README", parent: 0, what: What::Fact(Fact::Readme) },
    StaticNode { name: "pid", parent: 0, what: What::Fact(Fact::Pid) },
    StaticNode { name: "uptime", parent: 0, what: What::Fact(Fact::Uptime) },
];

const ROOT: u16 = 0;

/// `/README`: the tree explained in place.
pub const README: &str = include_str!("README.txt");

/// The answer to a one-name lookup.
#[derive(Debug, PartialEq, Eq)]
pub enum Lookup {
    Found(NodeId),
    Missing,
}

/// The owner fields every stat carries: the user the daemon runs as.
pub struct Owner {
    pub name: Vec<u8>,
    pub uid: u32,
    pub gid: u32,
}

pub struct Tree {
    started: Instant,
    started_unix: u32,
    pid: u32,
    owner: Owner,
}

impl Tree {
    pub fn new(owner: Owner) -> Self {
        let started_unix = unix_now();
        Tree { started: Instant::now(), started_unix, pid: std::process::id(), owner }
    }

    pub fn root(&self) -> NodeId {
        NodeId::Static(ROOT)
    }

    /// A fid has come to hold `node`. Static nodes need no count; nodes
    /// that name remembered paths will keep one, freeing on the last
    /// `release`.
    pub fn acquire(&mut self, node: NodeId) {
        match node {
            NodeId::Static(_) => {}
        }
    }

    /// A fid holding `node` was clunked or re-pointed.
    pub fn release(&mut self, node: NodeId) {
        match node {
            NodeId::Static(_) => {}
        }
    }

    /// `..` of a node, clamped at `/`.
    pub fn parent(&self, node: NodeId) -> NodeId {
        match node {
            NodeId::Static(i) => NodeId::Static(STATIC[i as usize].parent),
        }
    }

    pub fn is_dir(&self, node: NodeId) -> bool {
        match node {
            NodeId::Static(i) => matches!(STATIC[i as usize].what, What::Dir),
        }
    }

    /// Find `name` in the directory `dir`. The name has passed the walk's
    /// name check already; `..` is the caller's (`parent`).
    pub fn lookup(&self, dir: NodeId, name: &[u8]) -> Lookup {
        match dir {
            NodeId::Static(d) => STATIC
                .iter()
                .enumerate()
                .skip(1)
                .find(|(_, n)| n.parent == d && n.name.as_bytes() == name)
                .map_or(Lookup::Missing, |(i, _)| Lookup::Found(NodeId::Static(i as u16))),
        }
    }

    /// The entries of directory `dir`, in listing order.
    pub fn children(&self, dir: NodeId) -> Vec<NodeId> {
        match dir {
            NodeId::Static(d) => (1..STATIC.len())
                .filter(|&i| STATIC[i].parent == d)
                .map(|i| NodeId::Static(i as u16))
                .collect(),
        }
    }

    pub fn qid(&self, node: NodeId) -> Qid {
        match node {
            NodeId::Static(i) => match STATIC[i as usize].what {
                What::Dir => Qid { ty: QTDIR, version: 0, path: QID_PATH_SYNTHETIC | i as u64 },
                What::Fact(f) => Qid {
                    ty: QTFILE,
                    version: text_version(&self.fact(f)),
                    path: QID_PATH_SYNTHETIC | i as u64,
                },
            },
        }
    }

    /// Build the stat of `node` and hand it to `f` (the stat borrows names
    /// that live only for this call).
    pub fn with_stat<R>(&self, node: NodeId, f: impl FnOnce(&Stat<'_>) -> R) -> R {
        let NodeId::Static(i) = node;
        let entry = &STATIC[i as usize];
        let (mode, length) = match entry.what {
            What::Dir => (DMDIR | 0o555, 0),
            What::Fact(fact) => (0o444, self.fact(fact).len() as u64),
        };
        let stat = Stat {
            ty: 0,
            dev: 0,
            qid: self.qid(node),
            mode,
            atime: self.started_unix,
            mtime: self.started_unix,
            length,
            name: entry.name.as_bytes(),
            uid: &self.owner.name,
            gid: &self.owner.name,
            muid: &self.owner.name,
            extension: b"",
            n_uid: self.owner.uid,
            n_gid: self.owner.gid,
            n_muid: self.owner.uid,
        };
        f(&stat)
    }

    /// Append at most `count` bytes of file `node` from `offset` to `out`.
    pub fn read(&self, node: NodeId, offset: u64, count: u32, out: &mut Vec<u8>) -> Result<(), Error> {
        let NodeId::Static(i) = node;
        let What::Fact(fact) = STATIC[i as usize].what else {
            return Err(Error::IsDir);
        };
        let text = self.fact(fact);
        let start = usize::try_from(offset).unwrap_or(usize::MAX).min(text.len());
        let end = start.saturating_add(count as usize).min(text.len());
        out.extend_from_slice(&text.as_bytes()[start..end]);
        Ok(())
    }

    fn fact(&self, fact: Fact) -> std::borrow::Cow<'static, str> {
        match fact {
            Fact::Readme => README.into(),
            Fact::Pid => format!("{}\n", self.pid).into(),
            Fact::Uptime => format!("{}\n", self.started.elapsed().as_secs()).into(),
        }
    }
}

/// A derived file's qid version: a hash of its text, so content that
/// changes at the same size still moves it.
pub fn text_version(text: &str) -> u32 {
    wyhash::wyhash(text.as_bytes(), 0x9a9e_2000) as u32
}

fn unix_now() -> u32 {
    SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |d| d.as_secs() as u32)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tree() -> Tree {
        Tree::new(Owner { name: b"u".to_vec(), uid: 1, gid: 1 })
    }

    #[test]
    fn static_qid_paths_have_the_synthetic_bit_and_differ() {
        let t = tree();
        let mut paths: Vec<u64> = (0..STATIC.len()).map(|i| t.qid(NodeId::Static(i as u16)).path).collect();
        assert!(paths.iter().all(|p| p & QID_PATH_SYNTHETIC != 0));
        paths.dedup();
        assert_eq!(paths.len(), STATIC.len());
    }

    #[test]
    fn dot_dot_of_the_root_is_the_root() {
        let t = tree();
        assert_eq!(t.parent(t.root()), t.root());
    }

    #[test]
    fn lookup_finds_children_and_only_them() {
        let t = tree();
        assert!(matches!(t.lookup(t.root(), b"README"), Lookup::Found(_)));
        assert_eq!(t.lookup(t.root(), b"/"), Lookup::Missing);
        assert_eq!(t.lookup(t.root(), b"readme"), Lookup::Missing);
    }

    #[test]
    fn reads_past_the_end_are_empty() {
        let t = tree();
        let Lookup::Found(pid) = t.lookup(t.root(), b"pid") else { panic!() };
        let mut out = Vec::new();
        t.read(pid, 1 << 40, 100, &mut out).unwrap();
        assert!(out.is_empty());
        t.read(pid, 0, 100, &mut out).unwrap();
        assert_eq!(out, format!("{}\n", std::process::id()).as_bytes());
    }

    #[test]
    fn static_children_are_sorted_by_name() {
        let t = tree();
        let names: Vec<&str> = t.children(t.root()).iter().map(|n| {
            let NodeId::Static(i) = n;
            STATIC[*i as usize].name
        }).collect();
        let mut sorted = names.clone();
        sorted.sort();
        assert_eq!(names, sorted);
    }
}
