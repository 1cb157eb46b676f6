//! Values that fids hold, each held once however many fids hold it: a
//! slot with a reference count and a generation, so a fid's node is two
//! numbers and a slot reused after its last reference names nothing of the
//! old value (`get` of a stale generation is `None`). The mirror's places
//! (`paths`), the sessions (`sessions`) and the search queries are kept
//! so.

use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hash};

use slab::Slab;
use wyhash::WyHash;

struct Slot<K> {
    key: K,
    refs: u32,
    gen: u32,
}

pub(crate) struct Interned<K> {
    slots: Slab<Slot<K>>,
    index: HashMap<K, usize, BuildHasherDefault<WyHash>>,
    next_gen: u32,
}

impl<K> Default for Interned<K> {
    fn default() -> Interned<K> {
        Interned { slots: Slab::new(), index: HashMap::default(), next_gen: 0 }
    }
}

impl<K: Hash + Eq + Clone> Interned<K> {
    /// Take a reference on `key`, interning it: its (slot, generation).
    pub(crate) fn acquire_key(&mut self, key: &K) -> (u32, u32) {
        if let Some(&slot) = self.index.get(key) {
            let e = &mut self.slots[slot];
            e.refs += 1;
            return (slot as u32, e.gen);
        }
        self.next_gen = self.next_gen.wrapping_add(1);
        let gen = self.next_gen;
        let slot = self.slots.insert(Slot { key: key.clone(), refs: 1, gen });
        self.index.insert(key.clone(), slot);
        (slot as u32, gen)
    }

    pub(crate) fn get(&self, slot: u32, gen: u32) -> Option<&K> {
        self.slots.get(slot as usize).filter(|e| e.gen == gen).map(|e| &e.key)
    }

    /// Another reference on a live slot.
    pub(crate) fn acquire(&mut self, slot: u32, gen: u32) {
        if let Some(e) = self.slots.get_mut(slot as usize).filter(|e| e.gen == gen) {
            e.refs += 1;
        }
    }

    /// Drop a reference; the last one frees the slot.
    pub(crate) fn release(&mut self, slot: u32, gen: u32) {
        let Some(e) = self.slots.get_mut(slot as usize).filter(|e| e.gen == gen) else { return };
        e.refs -= 1;
        if e.refs == 0 {
            let e = self.slots.remove(slot as usize);
            self.index.remove(&e.key);
        }
    }

    pub(crate) fn len(&self) -> usize {
        self.slots.len()
    }

    #[cfg(test)]
    pub(crate) fn is_empty(&self) -> bool {
        self.slots.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_value_held_twice_is_one_slot_until_both_let_go_and_a_stale_slot_names_nothing() {
        let mut t: Interned<Vec<u8>> = Interned::default();
        let n = b"cargo build".to_vec();
        let a = t.acquire_key(&n);
        assert_eq!(t.acquire_key(&n), a);
        t.release(a.0, a.1);
        assert_eq!(t.get(a.0, a.1), Some(&n));
        t.release(a.0, a.1);
        assert!(t.get(a.0, a.1).is_none() && t.is_empty());
        let b = t.acquire_key(&b"other".to_vec());
        assert_eq!(b.0, a.0, "the slot is reused");
        assert!(t.get(a.0, a.1).is_none(), "under another generation");
    }
}
