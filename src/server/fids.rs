//! A connection's fids: each names a node of the tree and, once open,
//! what it reads. A fid is made, opened, replaced and clunked only here,
//! and each of those changes the counts here with it — the fids of this
//! connection, those its walks in flight will make (`reserve`), and every
//! connection's together (a `Count` the caller holds) — so a fid's life and
//! what it is counted as cannot come apart.

use std::os::fd::OwnedFd;
use std::rc::Rc;

use crate::chat::pool::ChatRef;
use crate::tree::{Entry, NodeId};

use super::count::Count;
use super::keymap::{key_map, KeyMap};

/// What an open fid reads.
#[derive(Clone, Debug)]
pub(crate) enum Opened {
    /// A fact of the skeleton, computed at each read.
    Fact(u16),
    /// A file on disk, through the fd opened at Topen (so a file unlinked
    /// while open stays readable, and no path is resolved again), and its
    /// size then: what a read is expected to copy (`jobs::read`).
    File { fd: Rc<OwnedFd>, size: u64 },
    /// A directory, listed at Topen; a 9P2000 read walks this snapshot.
    Dir(Rc<Vec<Entry>>),
    /// Derived text (an /active field), computed at Topen.
    Text(Rc<Vec<u8>>),
    /// An agent's `zmx`, opened for writing (only with `--allow-move`).
    Zmx { slot: u32, gen: u32 },
    /// A chat message: the pool entry as it was, and the message's id.
    Chat { entry: ChatRef, id: u32 },
    /// A file's extended attributes (9P2000.L's Txattrwalk): none.
    Xattrs,
    /// A `wait` file's reader (`watch`).
    Wait(crate::server::watch::ReaderRef),
    /// A search (`/search/<query>`, `/search/query`): where it stands.
    Search(SearchRef),
}

/// A search's handle (`server::searches`): its slot and generation (a slot
/// is reused once its fid is clunked; a read still in flight must not
/// touch another's).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct SearchRef {
    pub key: u32,
    pub gen: u32,
}

/// An open fid: what it reads, and a directory read's cursor (read(5):
/// offset 0 or the previous read's end, and the entry that starts there).
#[derive(Clone, Debug)]
pub(crate) struct FidOpen {
    pub what: Opened,
    pub dir_offset: u64,
    pub dir_index: u32,
}

impl FidOpen {
    pub(crate) fn new(what: Opened) -> Self {
        FidOpen { what, dir_offset: 0, dir_index: 0 }
    }
}

/// A fid: the node it names, whether that is a directory, and once open
/// what it reads. Small, because a kernel mount keeps a million.
#[derive(Clone, Debug)]
pub(crate) struct Fid {
    pub node: NodeId,
    pub is_dir: bool,
    pub open: Option<Box<FidOpen>>,
}

impl Fid {
    pub(crate) fn new(node: NodeId, is_dir: bool) -> Self {
        Fid { node, is_dir, open: None }
    }

    pub(crate) fn opened(&self) -> Option<&Opened> {
        self.open.as_ref().map(|o| &o.what)
    }
}

#[derive(Debug)]
pub(crate) struct Fids {
    map: KeyMap<u32, Fid>,
    /// Walks in flight that will make a new fid: they count against the
    /// fid caps before they land.
    reserved: Count,
}

impl Default for Fids {
    fn default() -> Fids {
        Fids { map: key_map(), reserved: Count::default() }
    }
}

impl Fids {
    pub(crate) fn get(&self, fid: &u32) -> Option<&Fid> {
        self.map.get(fid)
    }

    pub(crate) fn contains_key(&self, fid: &u32) -> bool {
        self.map.contains_key(fid)
    }

    pub(crate) fn len(&self) -> usize {
        self.map.len()
    }

    /// Fids it holds and will hold once its walks in flight land.
    pub(crate) fn counted(&self) -> usize {
        self.map.len() + self.reserved.get()
    }

    /// `fid` names `f` now. A new fid counts in `total`; one that named
    /// something already (a walk of a fid to itself) is replaced, and what
    /// it was is handed back for its holdings to be released.
    pub(crate) fn bind(&mut self, total: &mut Count, fid: u32, f: Fid) -> Option<Fid> {
        let old = self.map.insert(fid, f);
        if old.is_none() {
            total.take(1);
        }
        old
    }

    /// `fid`, known and not open, is open now on `open`; else `open` is
    /// handed back.
    pub(crate) fn open(&mut self, fid: u32, open: FidOpen) -> Result<(), Box<FidOpen>> {
        match self.map.get_mut(&fid) {
            Some(f) if f.open.is_none() => {
                f.open = Some(Box::new(open));
                Ok(())
            }
            _ => Err(Box::new(open)),
        }
    }

    /// An open fid's state, to move its directory cursor.
    pub(crate) fn open_mut(&mut self, fid: u32) -> Option<&mut FidOpen> {
        self.map.get_mut(&fid).and_then(|f| f.open.as_deref_mut())
    }

    /// `fid` is clunked: it goes from the counts, and what it was is
    /// handed back for its holdings to be released.
    pub(crate) fn clunk(&mut self, total: &mut Count, fid: u32) -> Option<Fid> {
        let f = self.map.remove(&fid)?;
        total.give(1);
        self.shrink();
        Some(f)
    }

    /// Every fid goes (a Tversion, a hang-up): what they were, for their
    /// holdings to be released.
    pub(crate) fn clear(&mut self, total: &mut Count) -> Vec<Fid> {
        total.give(self.map.len());
        let all = self.map.drain().map(|(_, f)| f).collect();
        self.shrink();
        all
    }

    /// A walk that will make a fid is in flight: counted now.
    pub(crate) fn reserve(&mut self, total: &mut Count) {
        self.reserved.take(1);
        total.take(1);
    }

    /// That walk is over (its fid, if it made one, is counted by `bind`).
    pub(crate) fn unreserve(&mut self, total: &mut Count) {
        self.reserved.give(1);
        total.give(1);
    }

    /// Give back the table's memory once most of it is free: a million
    /// clunked fids must not keep a million fids' worth of table.
    fn shrink(&mut self) {
        if self.map.capacity() > 64 && self.map.len() < self.map.capacity() / 4 {
            self.map.shrink_to(self.map.len() * 2);
        }
    }

    #[cfg(test)]
    pub(crate) fn capacity(&self) -> usize {
        self.map.capacity()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fid() -> Fid {
        Fid::new(NodeId::Static(0), false)
    }

    #[test]
    fn every_fid_made_is_counted_once_and_given_back_once() {
        let (mut a, mut b, mut total) = (Fids::default(), Fids::default(), Count::default());
        assert!(a.bind(&mut total, 1, fid()).is_none());
        assert!(a.bind(&mut total, 1, fid()).is_some(), "a walk to itself replaces");
        b.bind(&mut total, 1, fid());
        b.reserve(&mut total);
        assert_eq!((total.get(), a.counted(), b.counted()), (3, 1, 2));
        b.unreserve(&mut total);
        assert!(a.clunk(&mut total, 1).is_some() && a.clunk(&mut total, 1).is_none());
        assert_eq!(b.clear(&mut total).len(), 1);
        assert_eq!(total.get(), 0);
    }

    #[test]
    fn an_open_fid_is_not_opened_again_nor_an_unknown_one_opened() {
        let (mut f, mut total) = (Fids::default(), Count::default());
        f.bind(&mut total, 1, fid());
        let open = || FidOpen::new(Opened::Xattrs);
        assert!(f.open(1, open()).is_ok());
        assert!(f.open(1, open()).is_err());
        assert!(f.open(2, open()).is_err());
    }

    /// A million clunked fids must not keep a million fids' worth of table.
    #[test]
    fn clunking_most_of_a_hundred_thousand_fids_gives_the_table_back() {
        const FIDS: u32 = 100_000;
        const KEPT: u32 = 10;
        let (mut f, mut total) = (Fids::default(), Count::default());
        for n in 0..FIDS {
            f.bind(&mut total, n, fid());
        }
        assert!(f.capacity() >= FIDS as usize);
        for n in KEPT..FIDS {
            f.clunk(&mut total, n);
        }
        assert_eq!(f.len(), KEPT as usize);
        assert!(f.capacity() <= 64, "{} fids keep a table of {}", KEPT, f.capacity());
    }
}
