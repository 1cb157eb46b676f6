//! The path table: node ids for mirrored files.
//!
//! A mirrored file is named by its mount (the static node it hangs under,
//! e.g. `/claude/projects`) and the relative path below it (`sub`), made
//! only of names that passed the walk's name check and the exclusions.
//! A fid that holds such a file holds a slot of this table; two walks to
//! the same place find the same slot, so they hold the same node. A slot
//! lives while fids hold it (a reference count) and comes back from its
//! last release with a new generation, so a node id kept past its slot's
//! life never resolves to whatever takes the slot next.
//!
//! Only fids pin slots: a walk carries places as values and interns only
//! the place it binds to a fid, and listings intern nothing, so the table
//! holds exactly the places some fid names. Its size is therefore bounded
//! by the fid caps (`--max-fids` × `--max-conns`).

/// A place in a mirror: the mount's static index and the path below it.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub(crate) struct Place {
    pub mount: u16,
    pub sub: Vec<u8>,
}

impl Place {
    /// The place one name further down.
    pub(crate) fn child(&self, name: &[u8]) -> Place {
        let mut sub = Vec::with_capacity(self.sub.len() + 1 + name.len());
        sub.extend_from_slice(&self.sub);
        if !sub.is_empty() {
            sub.push(b'/');
        }
        sub.extend_from_slice(name);
        Place { mount: self.mount, sub }
    }

    /// The place one name up, or `None` at the mount itself.
    pub(crate) fn parent(&self) -> Option<Place> {
        if self.sub.is_empty() {
            return None;
        }
        let cut = memchr::memrchr(b'/', &self.sub).unwrap_or(0);
        Some(Place { mount: self.mount, sub: self.sub[..cut].to_vec() })
    }

    /// The last name of the place (empty at the mount).
    pub(crate) fn name(&self) -> &[u8] {
        let start = memchr::memrchr(b'/', &self.sub).map_or(0, |i| i + 1);
        &self.sub[start..]
    }
}

/// The places fids hold (`interned`).
#[derive(Default)]
pub(crate) struct PathTable(super::interned::Interned<Place>);

impl PathTable {
    /// Take a reference on `place`, interning it: returns (slot, generation).
    pub(crate) fn acquire_place(&mut self, place: &Place) -> (u32, u32) {
        self.0.acquire_key(place)
    }

    /// Another reference on a live slot.
    pub(crate) fn acquire(&mut self, slot: u32, gen: u32) {
        self.0.acquire(slot, gen)
    }

    /// Drop a reference; the last one frees the slot.
    pub(crate) fn release(&mut self, slot: u32, gen: u32) {
        self.0.release(slot, gen)
    }

    pub(crate) fn get(&self, slot: u32, gen: u32) -> Option<&Place> {
        self.0.get(slot, gen)
    }

    pub(crate) fn len(&self) -> usize {
        self.0.len()
    }

    #[cfg(test)]
    pub(crate) fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn place(sub: &str) -> Place {
        Place { mount: 3, sub: sub.as_bytes().to_vec() }
    }

    #[test]
    fn two_acquires_of_one_place_share_a_slot() {
        let mut t = PathTable::default();
        let a = t.acquire_place(&place("a/b"));
        let b = t.acquire_place(&place("a/b"));
        assert_eq!(a, b);
        assert_ne!(a, t.acquire_place(&place("a/c")));
    }

    #[test]
    fn a_slot_freed_by_its_last_release_comes_back_with_a_new_generation() {
        let mut t = PathTable::default();
        let (slot, gen) = t.acquire_place(&place("x"));
        t.release(slot, gen);
        assert!(t.get(slot, gen).is_none());
        let (slot2, gen2) = t.acquire_place(&place("y"));
        assert_eq!(slot2, slot, "the slab reuses the slot");
        assert_ne!(gen2, gen);
        assert!(t.get(slot, gen).is_none(), "the stale id must not resolve to the new place");
        assert_eq!(t.get(slot2, gen2), Some(&place("y")));
    }

    #[test]
    fn references_count_until_the_last_release() {
        let mut t = PathTable::default();
        let (slot, gen) = t.acquire_place(&place("x"));
        t.acquire(slot, gen);
        t.release(slot, gen);
        assert!(t.get(slot, gen).is_some());
        t.release(slot, gen);
        assert!(t.get(slot, gen).is_none());
        assert!(t.is_empty());
    }

    #[test]
    fn places_walk_up_and_down_by_one_name() {
        let p = place("").child(b"a").child(b"b");
        assert_eq!(p, place("a/b"));
        assert_eq!(p.name(), b"b");
        assert_eq!(p.parent(), Some(place("a")));
        assert_eq!(place("a").parent(), Some(place("")));
        assert_eq!(place("").parent(), None);
    }
}
