//! The names of `/search/<query>` that fids hold: each a slot with a
//! reference count and a generation, as the session table keeps sessions,
//! so a fid's node is two numbers and a name held twice is held once.

use std::collections::HashMap;
use std::rc::Rc;

use slab::Slab;

struct Slot {
    name: Rc<[u8]>,
    refs: u32,
    gen: u32,
}

#[derive(Default)]
pub(crate) struct QueryTable {
    slots: Slab<Slot>,
    index: HashMap<Rc<[u8]>, usize>,
    next_gen: u32,
}

impl QueryTable {
    /// Hold `name` (one more reference): its slot and generation.
    pub(crate) fn acquire_name(&mut self, name: &Rc<[u8]>) -> (u32, u32) {
        if let Some(&slot) = self.index.get(name) {
            let e = &mut self.slots[slot];
            e.refs += 1;
            return (slot as u32, e.gen);
        }
        self.next_gen = self.next_gen.wrapping_add(1);
        let gen = self.next_gen;
        let slot = self.slots.insert(Slot { name: name.clone(), refs: 1, gen });
        self.index.insert(name.clone(), slot);
        (slot as u32, gen)
    }

    pub(crate) fn get(&self, slot: u32, gen: u32) -> Option<&Rc<[u8]>> {
        self.slots.get(slot as usize).filter(|e| e.gen == gen).map(|e| &e.name)
    }

    pub(crate) fn acquire(&mut self, slot: u32, gen: u32) {
        if let Some(e) = self.slots.get_mut(slot as usize).filter(|e| e.gen == gen) {
            e.refs += 1;
        }
    }

    pub(crate) fn release(&mut self, slot: u32, gen: u32) {
        let Some(e) = self.slots.get_mut(slot as usize).filter(|e| e.gen == gen) else { return };
        e.refs -= 1;
        if e.refs == 0 {
            let e = self.slots.remove(slot as usize);
            self.index.remove(&e.name);
        }
    }

    pub(crate) fn len(&self) -> usize {
        self.slots.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_name_held_twice_is_one_slot_until_both_let_go() {
        let mut t = QueryTable::default();
        let n: Rc<[u8]> = Rc::from(&b"cargo build"[..]);
        let a = t.acquire_name(&n);
        assert_eq!(t.acquire_name(&n), a);
        t.release(a.0, a.1);
        assert_eq!(t.get(a.0, a.1).map(|n| &n[..]), Some(&b"cargo build"[..]));
        t.release(a.0, a.1);
        assert!(t.get(a.0, a.1).is_none() && t.len() == 0);
    }
}
