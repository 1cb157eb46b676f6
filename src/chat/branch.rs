//! The branch of a pi or omp session that is its chat: the entries' tree
//! (each entry's id, parent, and where its messages end in the store) and
//! the view of the store's messages on the current chain. `pi` says which
//! entry a record follows; this keeps the rest. Apart from `pi` so that the
//! conversation's state (`conv`) can hold it without importing `pi` back.

/// No entry: a root's parent, or the tree before its first entry.
const NONE: u32 = u32::MAX;

/// The entries' tree and the chat's view of it.
#[derive(Default, Clone)]
pub(crate) struct Tree {
    entries: Vec<Keyed>,
    /// The store's messages on the current chain, in order; `None` while
    /// they are all of them.
    view: Option<Vec<u32>>,
    /// Messages of the chat someone may have listed: a branch move may not
    /// renumber these.
    pub handed: std::cell::Cell<usize>,
    /// A move would have: the index stops, and the caller starts over.
    pub moved: bool,
}

/// One entry: 16 bytes.
#[derive(Clone, Copy)]
struct Keyed {
    /// Its id's hash (0 when it has none).
    id: u64,
    parent: u32,
    /// The store's message count after its messages: they start where the
    /// entry before it ends.
    end: u32,
}

/// Which entry a new one follows.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Parent {
    /// The last entry (v1 files, entries without a `parentId`).
    Leaf,
    /// None: a root (`parentId` null, or naming no entry of the file).
    Root,
    /// An older entry.
    At(u32),
}

impl Tree {
    /// Messages in the chat.
    /// Bytes its entries and view take.
    pub(super) fn heap_bytes(&self) -> usize {
        self.entries.capacity() * std::mem::size_of::<Keyed>() + self.view.as_ref().map_or(0, |v| v.capacity() * 4)
    }

    pub(super) fn len(&self, all: usize) -> usize {
        self.view.as_ref().map_or(all, Vec::len)
    }

    /// The store's message that is the chat's `id`.
    pub(super) fn slot(&self, id: usize, all: usize) -> Option<usize> {
        match &self.view {
            Some(v) => v.get(id).map(|&s| s as usize),
            None => (id < all).then_some(id),
        }
    }

    fn leaf(&self) -> u32 {
        self.entries.len().checked_sub(1).map_or(NONE, |i| i as u32)
    }

    /// The entry a record follows. Usually the last; an older one is
    /// looked for from the newest back (a branch point is mostly recent).
    /// `parent` is the hash of its `parentId`: `None` without one, 0 for
    /// null.
    pub(super) fn parent(&self, parent: Option<u64>) -> Parent {
        let Some(id) = parent else { return Parent::Leaf };
        if id == 0 {
            return if self.entries.is_empty() { Parent::Leaf } else { Parent::Root };
        }
        if self.entries.last().is_some_and(|e| e.id == id) {
            return Parent::Leaf;
        }
        match self.entries.iter().rposition(|e| e.id == id) {
            Some(i) => Parent::At(i as u32),
            None => Parent::Root,
        }
    }

    /// An entry following `parent` is about to be indexed: the chat moves
    /// to its branch. False when that would renumber handed-out messages.
    pub(super) fn branch(&mut self, parent: Parent, all: usize) -> bool {
        let upto = match parent {
            Parent::Leaf => return true,
            Parent::Root => NONE,
            Parent::At(i) => i,
        };
        let chain = self.chain(upto);
        let now = |i: usize| self.slot(i, all).map(|s| s as u32);
        let handed = self.handed.get();
        if chain.len() < handed || (0..handed).any(|i| Some(chain[i]) != now(i)) {
            return false;
        }
        let whole = chain.len() == all && chain.iter().enumerate().all(|(i, &s)| s as usize == i);
        self.view = if whole { None } else { Some(chain) };
        true
    }

    /// The messages of the chain that ends at entry `upto`, in order.
    fn chain(&self, upto: u32) -> Vec<u32> {
        let mut path = Vec::new();
        let mut at = upto;
        // Parents are always older entries: the walk ends.
        while let Some(e) = self.entries.get(at as usize) {
            path.push(at);
            at = e.parent;
        }
        let mut msgs = Vec::new();
        for &i in path.iter().rev() {
            msgs.extend(self.start(i)..self.entries[i as usize].end);
        }
        msgs
    }

    fn start(&self, i: u32) -> u32 {
        i.checked_sub(1).map_or(0, |p| self.entries[p as usize].end)
    }

    /// The entry is indexed: its messages are the store's up to `end`.
    pub(super) fn push(&mut self, id: u64, parent: Parent, end: usize) {
        let parent = match parent {
            Parent::Leaf => self.leaf(),
            Parent::Root => NONE,
            Parent::At(i) => i,
        };
        let start = self.entries.last().map_or(0, |e| e.end);
        let end = end as u32;
        self.entries.push(Keyed { id, parent, end });
        if let Some(v) = &mut self.view {
            v.extend(start..end);
        }
    }
}
